//! The catalog's transaction store, against each implementation (`common::on_every_catalog`): staging is all or
//! nothing, an object belongs to one transaction, an ended transaction takes nothing more,
//! later changes replace earlier ones (naming the uploads they replace), reads inside a
//! transaction see its records and listings, and forgetting releases everything.

#[macro_use]
mod common;

use arca_catalog::{CatalogOp, Change, TxContent, TxEnd, TxRefusal, TxStatus};
use arca_model::FedoraId;
use common::{sha256, stage, top as record, Store};

fn id(path: &str) -> FedoraId {
    FedoraId::from_path(path).unwrap()
}

on_every_catalog!(
    staged_changes_are_seen_inside_only_and_replace_earlier_ones,
    an_object_belongs_to_one_transaction_and_a_refused_stage_keeps_nothing,
    an_ended_transaction_takes_nothing_more_and_its_status_stays_until_pruned,
    transactions_survive_a_reopen_and_a_rebuild_clear,
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
    let ops = cat.tx_ops("t1").await.unwrap();
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

    // Forgetting t1 releases a and names its uploads.
    assert!(cat.tx_end("t1", TxEnd::RolledBack).await.unwrap());
    assert_eq!(cat.tx_forget("t1").await.unwrap(), vec!["/u/a".to_string()]);
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

    assert!(cat.tx_end("t1", TxEnd::Committed).await.unwrap());
    assert!(!cat.tx_end("t1", TxEnd::RolledBack).await.unwrap());
    assert!(!cat.tx_set_expiry("t1", 9_000).await.unwrap());
    assert_eq!(
        cat.tx_stage("t1", stage("x", false, "/u/x")).await.unwrap(),
        Err(TxRefusal::NotOpen)
    );
    // A commit that fails is recorded as such.
    assert!(cat.tx_end("t1", TxEnd::Failed).await.unwrap());
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
