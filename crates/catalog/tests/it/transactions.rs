//! The catalog's transaction store, against each implementation (`common::on_every_catalog`): staging is all or
//! nothing, an object belongs to one transaction, an ended transaction takes nothing more,
//! later changes replace earlier ones (naming the uploads they replace), reads inside a
//! transaction see its records and listings, ending releases everything, and a commit
//! goes closing → committing → committed, its staged rows forgotten page by page with the
//! catalog writes that apply them.

use crate::common::{sha256, stage, top as record, Store};
use arca_catalog::{CatalogOp, Change, ChangeKind, TxContent, TxEnd, TxRefusal, TxStatus};
use arca_model::FedoraId;

fn id(path: &str) -> FedoraId {
    FedoraId::from_path(path).unwrap()
}

on_every_catalog!(
    staged_changes_are_seen_inside_only_and_replace_earlier_ones,
    an_object_belongs_to_one_transaction_and_a_refused_stage_keeps_nothing,
    an_ended_transaction_takes_nothing_more_and_its_status_stays_until_pruned,
    transactions_survive_a_reopen_and_a_rebuild_clear,
    a_commit_is_closed_decided_applied_in_pages_and_ended,
    a_decided_commit_survives_a_reopen_and_is_never_pruned,
);

async fn staged_changes_are_seen_inside_only_and_replace_earlier_ones(store: Store) {
    let cat = store.open().await;
    cat.apply(vec![
        CatalogOp::Put(record("", false)),
        CatalogOp::Put(record("old", false)),
        CatalogOp::Put(record("gone-in-tx", false)),
    ])
    .await
    .unwrap();
    cat.tx_begin("t1", i64::MAX, None).await.unwrap();
    assert_eq!(
        cat.tx_status("t1").await.unwrap(),
        Some(TxStatus::Open { expires: i64::MAX })
    );
    assert_eq!(
        cat.tx_stage("t1", stage("new", false, "/u/1"))
            .await
            .unwrap(),
        Ok(vec![])
    );
    // The same path again: the first upload is named as replaced.
    assert_eq!(
        cat.tx_stage("t1", stage("new", false, "/u/2"))
            .await
            .unwrap(),
        Ok(vec!["/u/1".to_string()])
    );
    let mut delete = stage("gone-in-tx", true, "/u/3");
    delete.resources[0].record = record("gone-in-tx", true);
    cat.tx_stage("t1", delete).await.unwrap().unwrap();

    assert!(cat.tx_record("t1", &id("new")).await.unwrap().is_some());
    assert!(cat.get(&id("new")).await.unwrap().is_none());
    assert_eq!(
        cat.tx_children("t1", &FedoraId::root(), None, 10)
            .await
            .unwrap(),
        vec![id("new"), id("old")]
    );
    assert_eq!(
        cat.tx_children("t1", &FedoraId::root(), Some(&id("new")), 10)
            .await
            .unwrap(),
        vec![id("old")]
    );
    assert_eq!(
        cat.children(&FedoraId::root(), None, 10).await.unwrap(),
        vec![id("gone-in-tx"), id("old")]
    );
    let files = cat.tx_files("t1", "info:fedora/new").await.unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(
        files[1].content,
        Some(TxContent::Upload {
            path: "/u/2".into(),
            digest: sha256("00")
        })
    );
    let objects = cat.tx_objects("t1", None, 10).await.unwrap();
    assert_eq!(
        objects
            .iter()
            .map(|o| o.ocfl_id.as_str())
            .collect::<Vec<_>>(),
        ["info:fedora/gone-in-tx", "info:fedora/new"]
    );
    assert_eq!(
        cat.tx_objects("t1", Some("info:fedora/gone-in-tx"), 10)
            .await
            .unwrap()
            .len(),
        1
    );
    let kept = cat.tx_ops("t1", 0, 100).await.unwrap();
    assert!(
        kept.windows(2).all(|w| w[0].0 < w[1].0),
        "in sequence order"
    );
    let ops: Vec<CatalogOp> = kept.into_iter().map(|(_, op)| op).collect();
    assert_eq!(ops.len(), 3);
    let logged: Vec<&Change> = ops
        .iter()
        .filter_map(|op| match op {
            CatalogOp::Log(c) => Some(c),
            _ => None,
        })
        .collect();
    assert!(!logged.is_empty());
    assert!(logged
        .iter()
        .all(|c| c.agent.as_deref() == Some("curl/8") && c.types == ["urn:x:T"]));
    assert_eq!(
        cat.tx_resources("t1", "info:fedora/new")
            .await
            .unwrap()
            .len(),
        1
    );
}

async fn an_object_belongs_to_one_transaction_and_a_refused_stage_keeps_nothing(store: Store) {
    let cat = store.open().await;
    cat.tx_begin("t1", i64::MAX, None).await.unwrap();
    cat.tx_begin("t2", i64::MAX, None).await.unwrap();
    assert!(cat.tx_owners(&["info:fedora/a"]).await.unwrap().is_empty());
    cat.tx_stage("t1", stage("a", false, "/u/a"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        cat.tx_owners(&["info:fedora/a", "info:fedora/b"])
            .await
            .unwrap(),
        vec![("info:fedora/a".to_string(), "t1".to_string())]
    );
    // t2 stages b and a at once: refused for a, and b is not kept either.
    let mut both = stage("b", false, "/u/b");
    let a = stage("a", false, "/u/a2");
    both.objects.extend(a.objects);
    both.files.extend(a.files);
    both.resources.extend(a.resources);
    assert_eq!(
        cat.tx_stage("t2", both).await.unwrap(),
        Err(TxRefusal::Owned {
            ocfl_id: "info:fedora/a".into()
        })
    );
    assert!(cat.tx_objects("t2", None, 10).await.unwrap().is_empty());
    assert!(cat.tx_record("t2", &id("b")).await.unwrap().is_none());
    assert!(cat.tx_owners(&["info:fedora/b"]).await.unwrap().is_empty());

    // Ending t1 releases a and names its uploads.
    assert_eq!(
        cat.tx_end("t1", TxEnd::RolledBack).await.unwrap(),
        Some(vec!["/u/a".to_string()])
    );
    assert!(cat.tx_owners(&["info:fedora/a"]).await.unwrap().is_empty());
    assert!(cat.tx_record("t1", &id("a")).await.unwrap().is_none());
    cat.tx_stage("t2", stage("a", false, "/u/a3"))
        .await
        .unwrap()
        .unwrap();
}

async fn an_ended_transaction_takes_nothing_more_and_its_status_stays_until_pruned(store: Store) {
    let cat = store.open().await;
    assert_eq!(cat.tx_status("nope").await.unwrap(), None);
    assert_eq!(
        cat.tx_stage("nope", stage("x", false, "/u/x"))
            .await
            .unwrap(),
        Err(TxRefusal::NotOpen)
    );
    cat.tx_begin("t1", 1_000, None).await.unwrap();
    cat.tx_begin("t2", 5_000, None).await.unwrap();
    assert_eq!(cat.tx_expired(2_000).await.unwrap(), vec!["t1".to_string()]);
    assert!(cat.tx_set_expiry("t1", 9_000).await.unwrap());
    assert!(cat.tx_expired(2_000).await.unwrap().is_empty());
    let mut open = cat.tx_open().await.unwrap();
    open.sort();
    assert_eq!(open, ["t1", "t2"]);

    // Its commit begins: it is no longer open.
    assert!(cat.tx_close("t1").await.unwrap());
    assert!(!cat.tx_close("t1").await.unwrap());
    assert_eq!(cat.tx_status("t1").await.unwrap(), Some(TxStatus::Closing));
    assert_eq!(cat.tx_end("t1", TxEnd::RolledBack).await.unwrap(), None);
    assert_eq!(cat.tx_end("t1", TxEnd::Expired).await.unwrap(), None);
    // Not decided, so it cannot end committed.
    assert_eq!(cat.tx_end("t1", TxEnd::Committed).await.unwrap(), None);
    assert!(!cat.tx_set_expiry("t1", 9_000).await.unwrap());
    assert_eq!(
        cat.tx_stage("t1", stage("x", false, "/u/x")).await.unwrap(),
        Err(TxRefusal::NotOpen)
    );
    assert!(cat
        .tx_expired(i64::MAX)
        .await
        .unwrap()
        .iter()
        .all(|t| t != "t1"));
    // A commit that fails is recorded as such.
    assert_eq!(cat.tx_end("t1", TxEnd::Failed).await.unwrap(), Some(vec![]));
    assert_eq!(cat.tx_end("t1", TxEnd::Failed).await.unwrap(), None);
    assert!(!cat.tx_decide("t1").await.unwrap());
    assert_eq!(
        cat.tx_status("t1").await.unwrap(),
        Some(TxStatus::Ended(TxEnd::Failed))
    );
    assert_eq!(cat.tx_open().await.unwrap(), ["t2"]);
    cat.tx_prune(0).await.unwrap();
    assert!(cat.tx_status("t1").await.unwrap().is_some());
    cat.tx_prune(i64::MAX).await.unwrap();
    assert_eq!(cat.tx_status("t1").await.unwrap(), None);
    assert!(
        cat.tx_status("t2").await.unwrap().is_some(),
        "open ones stay"
    );
}

async fn transactions_survive_a_reopen_and_a_rebuild_clear(store: Store) {
    {
        let cat = store.open().await;
        cat.tx_begin("t1", i64::MAX, Some("alice")).await.unwrap();
        cat.tx_begin("t2", i64::MAX, None).await.unwrap();
        cat.tx_stage("t1", stage("a", false, "/u/a"))
            .await
            .unwrap()
            .unwrap();
        cat.clear().await.unwrap();
    }
    let cat = store.open().await;
    assert_eq!(cat.tx_open().await.unwrap(), ["t1", "t2"]);
    // Who began each one is kept (the HTTP layer lets nobody else use it).
    assert_eq!(cat.tx_user("t1").await.unwrap().as_deref(), Some("alice"));
    assert_eq!(cat.tx_user("t2").await.unwrap(), None);
    assert_eq!(cat.tx_user("unknown").await.unwrap(), None);
    // The claim is known after a reopen (ordinary writes check it).
    assert_eq!(cat.tx_owners(&["info:fedora/a"]).await.unwrap().len(), 1);
}

/// Two objects, each with a record, an inline file and an upload, and a change-log entry
/// each, staged in `tx`.
async fn stage_two(cat: &dyn arca_catalog::Catalog, tx: &str) {
    cat.tx_begin(tx, i64::MAX, None).await.unwrap();
    for (path, upload) in [("a", "/u/a"), ("b", "/u/b")] {
        cat.tx_stage(tx, stage(path, false, upload))
            .await
            .unwrap()
            .unwrap();
    }
}

async fn a_commit_is_closed_decided_applied_in_pages_and_ended(store: Store) {
    let cat = store.open().await;
    cat.apply(vec![CatalogOp::Put(record("", false))])
        .await
        .unwrap();
    stage_two(&*cat, "t1").await;
    cat.tx_begin("t2", i64::MAX, None).await.unwrap();
    assert!(cat.tx_commits().await.unwrap().is_empty());

    // Closing: not decided, so its uploads are not kept at a start.
    assert!(cat.tx_close("t1").await.unwrap());
    assert_eq!(
        cat.tx_commits().await.unwrap(),
        vec![("t1".to_string(), TxStatus::Closing)]
    );
    assert!(cat.tx_decided_uploads().await.unwrap().is_empty());
    // Decided.
    assert!(cat.tx_decide("t1").await.unwrap());
    assert!(!cat.tx_decide("t1").await.unwrap());
    assert!(!cat.tx_close("t1").await.unwrap());
    assert_eq!(
        cat.tx_status("t1").await.unwrap(),
        Some(TxStatus::Committing)
    );
    assert_eq!(
        cat.tx_commits().await.unwrap(),
        vec![("t1".to_string(), TxStatus::Committing)]
    );
    assert_eq!(cat.tx_end("t1", TxEnd::Failed).await.unwrap(), None);
    assert_eq!(cat.tx_end("t1", TxEnd::RolledBack).await.unwrap(), None);
    assert_eq!(cat.tx_decided_uploads().await.unwrap(), ["/u/a", "/u/b"]);
    assert_eq!(cat.tx_open().await.unwrap(), ["t2"]);

    // Its objects in pages, each with what is staged for it.
    let first = cat.tx_staged("t1", None, 1).await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].object.ocfl_id, "info:fedora/a");
    assert_eq!(
        first[0].files,
        cat.tx_files("t1", "info:fedora/a").await.unwrap()
    );
    assert_eq!(
        first[0].resources,
        cat.tx_resources("t1", "info:fedora/a").await.unwrap()
    );
    assert_eq!(first[0].files.len(), 2);
    assert_eq!(first[0].resources.len(), 1);
    assert!(!first[0].is_applied());
    let rest = cat
        .tx_staged("t1", Some("info:fedora/a"), 10)
        .await
        .unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].object.ocfl_id, "info:fedora/b");
    assert_eq!(rest[0].files.len(), 2);

    // A page applied: a's rows come with the forgetting of what was staged for it.
    cat.apply(vec![
        CatalogOp::Put(record("a", false)),
        CatalogOp::TxObjectsCommitted {
            tx: "t1".into(),
            ocfl_ids: vec!["info:fedora/a".into()],
        },
    ])
    .await
    .unwrap();
    let page = cat.tx_staged("t1", None, 10).await.unwrap();
    assert_eq!(page.len(), 2, "both objects stay claimed");
    assert!(page[0].is_applied());
    assert!(!page[1].is_applied());
    assert!(cat
        .tx_files("t1", "info:fedora/a")
        .await
        .unwrap()
        .is_empty());
    assert!(cat.tx_record("t1", &id("a")).await.unwrap().is_none());
    assert_eq!(cat.tx_decided_uploads().await.unwrap(), ["/u/b"]);
    assert_eq!(
        cat.tx_owners(&["info:fedora/a", "info:fedora/b"])
            .await
            .unwrap()
            .len(),
        2
    );

    // The kept change-log entries, a page at a time.
    let kept = cat.tx_ops("t1", 0, 1).await.unwrap();
    assert_eq!(kept.len(), 1);
    let (through, op) = kept.into_iter().next().unwrap();
    let before = cat.changes_since(0, 100).await.unwrap().len();
    cat.apply(vec![
        op,
        CatalogOp::TxOpsCommitted {
            tx: "t1".into(),
            through,
        },
    ])
    .await
    .unwrap();
    let log = cat.changes_since(0, 100).await.unwrap();
    assert_eq!(log.len(), before + 1);
    assert_eq!(log.last().unwrap().change.kind, ChangeKind::Create);
    assert_eq!(log.last().unwrap().change.id, id("a"));
    let left = cat.tx_ops("t1", 0, 10).await.unwrap();
    assert_eq!(left.len(), 1);
    assert!(left[0].0 > through);
    assert!(cat.tx_ops("t1", left[0].0, 10).await.unwrap().is_empty());

    // Decided commits are never pruned.
    cat.tx_prune(i64::MAX).await.unwrap();
    assert_eq!(
        cat.tx_status("t1").await.unwrap(),
        Some(TxStatus::Committing)
    );

    // Committed: everything left goes, the objects are free, the uploads still named are
    // handed back.
    assert_eq!(
        cat.tx_end("t1", TxEnd::Committed).await.unwrap(),
        Some(vec!["/u/b".to_string()])
    );
    assert_eq!(
        cat.tx_status("t1").await.unwrap(),
        Some(TxStatus::Ended(TxEnd::Committed))
    );
    assert!(cat
        .tx_owners(&["info:fedora/a", "info:fedora/b"])
        .await
        .unwrap()
        .is_empty());
    assert!(cat.tx_staged("t1", None, 10).await.unwrap().is_empty());
    assert!(cat.tx_ops("t1", 0, 10).await.unwrap().is_empty());
    assert!(cat.tx_commits().await.unwrap().is_empty());
    assert!(cat.tx_decided_uploads().await.unwrap().is_empty());
    assert_eq!(cat.tx_end("t1", TxEnd::Committed).await.unwrap(), None);
    // The objects can be claimed again.
    cat.tx_stage("t2", stage("a", true, "/u/a2"))
        .await
        .unwrap()
        .unwrap();
}

async fn a_decided_commit_survives_a_reopen_and_is_never_pruned(store: Store) {
    {
        let cat = store.open().await;
        stage_two(&*cat, "t1").await;
        assert!(cat.tx_close("t1").await.unwrap());
        assert!(cat.tx_decide("t1").await.unwrap());
        // A rebuild keeps transactions.
        cat.clear().await.unwrap();
    }
    let cat = store.open().await;
    assert_eq!(
        cat.tx_status("t1").await.unwrap(),
        Some(TxStatus::Committing)
    );
    assert_eq!(cat.tx_decided_uploads().await.unwrap(), ["/u/a", "/u/b"]);
    assert_eq!(cat.tx_staged("t1", None, 10).await.unwrap().len(), 2);
    cat.tx_prune(i64::MAX).await.unwrap();
    assert_eq!(
        cat.tx_commits().await.unwrap(),
        vec![("t1".to_string(), TxStatus::Committing)]
    );
    assert_eq!(
        cat.tx_owners(&["info:fedora/a"]).await.unwrap(),
        vec![("info:fedora/a".to_string(), "t1".to_string())]
    );
}
