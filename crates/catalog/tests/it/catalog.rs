//! Behaviour every catalog must show, run against each implementation (SQLite, and
//! PostgreSQL when it is installed): see `common::on_every_catalog`.

use crate::common::{record, Store};
use arca_catalog::{
    CatalogOp, Change, ChangeKind, FixityOutcome, MembershipRow, MementoRow, PendingWrite,
};
use arca_model::{FedoraId, InteractionModel};

on_every_catalog!(
    stores_and_pages_children,
    descendants_are_path_ranges,
    change_log_is_monotonic_and_children_clock_survives_puts,
    concurrent_writes_are_group_committed_with_unique_sequence_numbers,
    the_change_log_is_regenerated_from_mementos_and_tombstones,
    consumer_positions_survive_a_clear,
    pending_writes_are_kept_until_finished,
    free_object_locks_are_taken_without_waiting,
    totals_count_objects_and_live_resources,
    fixity_entries_keep_their_outcome_and_detail,
    a_read_record_comes_with_its_description_and_what_its_listing_may_find,
);

async fn fixity_entries_keep_their_outcome_and_detail(store: Store) {
    let cat = store.open().await;
    let id = FedoraId::from_path("a/b").unwrap();
    let entry = |outcome, detail: &str| {
        CatalogOp::Log(Change {
            id: id.clone(),
            kind: ChangeKind::Fixity(outcome),
            at: "2026-01-01T00:00:00Z".into(),
            user: "arca-fixity".into(),
            agent: Some(detail.into()),
            types: vec!["http://www.w3.org/ns/ldp#NonRDFSource".into()],
        })
    };
    cat.apply(vec![entry(
        FixityOutcome::Failure,
        "expected sha512:aa, found sha512:bb",
    )])
    .await
    .unwrap();
    cat.apply(vec![entry(FixityOutcome::Success, "repaired from r1")])
        .await
        .unwrap();
    let log = cat.changes_since(0, 10).await.unwrap();
    assert_eq!(
        log.iter().map(|e| e.change.kind).collect::<Vec<_>>(),
        [
            ChangeKind::Fixity(FixityOutcome::Failure),
            ChangeKind::Fixity(FixityOutcome::Success)
        ]
    );
    assert_eq!(
        log[0].change.agent.as_deref(),
        Some("expected sha512:aa, found sha512:bb")
    );
    assert!(!log[0].change.kind.changes_resource());
    assert!(ChangeKind::Update.changes_resource());
    for kind in log.iter().map(|e| e.change.kind) {
        assert_eq!(ChangeKind::parse(kind.as_str()), Some(kind));
    }
}

async fn totals_count_objects_and_live_resources(store: Store) {
    let cat = store.open().await;
    cat.ping().await.unwrap();
    assert_eq!(cat.totals().await.unwrap(), arca_catalog::Totals::default());
    let mut inner = record("a/b", Some("a"), false);
    inner.ocfl_id = record("a", Some(""), false).ocfl_id;
    cat.apply(vec![
        CatalogOp::Put(record("", None, false)),
        CatalogOp::Put(record("a", Some(""), false)),
        CatalogOp::Put(inner),
        CatalogOp::Put(record("gone", Some(""), true)),
    ])
    .await
    .unwrap();
    // Objects: the root, `a` (holding `a/b`) and the tombstone's; resources: live ones.
    assert_eq!(
        cat.totals().await.unwrap(),
        arca_catalog::Totals {
            objects: 3,
            resources: 3
        }
    );
}

async fn stores_and_pages_children(store: Store) {
    let cat = store.open().await;
    let mut ops = vec![CatalogOp::Put(record("", None, false))];
    for i in 0..25 {
        ops.push(CatalogOp::Put(record(&format!("c{i:02}"), Some(""), false)));
    }
    ops.push(CatalogOp::Put(record("gone", Some(""), true)));
    cat.apply(ops).await.unwrap();

    let root = FedoraId::root();
    let got = cat
        .get(&FedoraId::from_path("c03").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, record("c03", Some(""), false));
    assert!(cat
        .get(&FedoraId::from_path("nope").unwrap())
        .await
        .unwrap()
        .is_none());

    let page1 = cat.children(&root, None, 10).await.unwrap();
    assert_eq!(page1.len(), 10);
    assert_eq!(page1[0].path(), "c00");
    let page3 = cat
        .children(&root, Some(&FedoraId::from_path("c19").unwrap()), 10)
        .await
        .unwrap();
    assert_eq!(
        page3.iter().map(|i| i.path()).collect::<Vec<_>>(),
        ["c20", "c21", "c22", "c23", "c24"]
    );
    assert!(cat.has_children(&root).await.unwrap());
    assert!(!cat
        .has_children(&FedoraId::from_path("c00").unwrap())
        .await
        .unwrap());
    assert_eq!(cat.count().await.unwrap(), 27);
}

async fn descendants_are_path_ranges(store: Store) {
    let cat = store.open().await;
    cat.apply(vec![
        CatalogOp::Put(record("a", Some(""), false)),
        CatalogOp::Put(record("a/b", Some("a"), false)),
        CatalogOp::Put(record("a/b/c", Some("a/b"), false)),
        CatalogOp::Put(record("ab", Some(""), false)),
        CatalogOp::Put(record("a0", Some(""), false)),
    ])
    .await
    .unwrap();
    let d = cat
        .descendants(&FedoraId::from_path("a").unwrap())
        .await
        .unwrap();
    assert_eq!(
        d.iter().map(|r| r.id.path()).collect::<Vec<_>>(),
        ["a/b", "a/b/c"]
    );
}

async fn change_log_is_monotonic_and_children_clock_survives_puts(store: Store) {
    let cat = store.open().await;
    let a = FedoraId::from_path("a").unwrap();
    let log = |kind| {
        CatalogOp::Log(Change {
            id: a.clone(),
            kind,
            at: "2026-01-01T00:00:00Z".into(),
            user: "u".into(),
            agent: Some("curl/8".into()),
            types: vec![
                "http://www.w3.org/ns/ldp#Container".into(),
                "urn:x:Book".into(),
            ],
        })
    };
    let mut last_change = cat.last_change();
    let before = *last_change.borrow_and_update();
    let s1 = cat
        .apply(vec![
            CatalogOp::Put(record("a", Some(""), false)),
            log(ChangeKind::Create),
        ])
        .await
        .unwrap();
    let s2 = cat
        .apply(vec![
            CatalogOp::ChildrenChanged(a.clone(), 42),
            log(ChangeKind::Update),
        ])
        .await
        .unwrap();
    assert!(s2 > s1);
    assert!(
        last_change.has_changed().unwrap(),
        "the watch woke its receiver"
    );
    assert_eq!(*last_change.borrow(), s2);
    assert_eq!(before, 0);
    // a later Put without a clock keeps the stored one
    cat.apply(vec![CatalogOp::Put(record("a", Some(""), false))])
        .await
        .unwrap();
    assert_eq!(
        cat.get(&a).await.unwrap().unwrap().children_changed,
        Some(42)
    );
    let changes = cat.changes_since(0, 10).await.unwrap();
    assert_eq!(
        changes.iter().map(|c| c.change.kind).collect::<Vec<_>>(),
        [ChangeKind::Create, ChangeKind::Update]
    );
    assert_eq!(changes[0].change.agent.as_deref(), Some("curl/8"));
    assert_eq!(
        changes[0].change.types,
        ["http://www.w3.org/ns/ldp#Container", "urn:x:Book"]
    );
    assert_eq!(changes[0].change.id, a);
    assert_eq!(cat.changes_since(s1, 10).await.unwrap().len(), 1);
    assert_eq!(cat.first_change().await.unwrap(), s1);
    // the retention window never drops past what consumers have (up_to)
    assert_eq!(
        cat.forget_changes("2027-01-01T00:00:00Z", s1)
            .await
            .unwrap(),
        1
    );
    assert_eq!(cat.first_change().await.unwrap(), s2);
    assert_eq!(
        cat.forget_changes("2025-01-01T00:00:00Z", s2)
            .await
            .unwrap(),
        0
    );
    cat.apply(vec![CatalogOp::Remove(a.clone())]).await.unwrap();
    assert!(cat.get(&a).await.unwrap().is_none());
}

async fn concurrent_writes_are_group_committed_with_unique_sequence_numbers(store: Store) {
    let cat = store.open().await;
    let cat = std::sync::Arc::new(cat);
    let mut tasks = Vec::new();
    for i in 0..50 {
        let cat = cat.clone();
        tasks.push(tokio::spawn(async move {
            let r = record(&format!("c{i}"), Some(""), false);
            let id = r.id.clone();
            cat.apply(vec![
                CatalogOp::Put(r),
                CatalogOp::Log(Change {
                    id,
                    kind: ChangeKind::Create,
                    at: "2026-01-01T00:00:00Z".into(),
                    user: "u".into(),
                    agent: None,
                    types: Vec::new(),
                }),
            ])
            .await
            .unwrap()
        }));
    }
    let mut seqs = Vec::new();
    for t in tasks {
        seqs.push(t.await.unwrap());
    }
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs.len(), 50, "every write got its own sequence number");
    assert_eq!(cat.count().await.unwrap(), 50);
    assert_eq!(cat.changes_since(0, 100).await.unwrap().len(), 50);
}

/// After a rebuild that found the change log empty, the log is derived from the mementos
/// (create at the first, update at later ones) and tombstones (delete), in time order, with
/// the users of the current headers; a log that has entries is left alone.
async fn the_change_log_is_regenerated_from_mementos_and_tombstones(store: Store) {
    let cat = store.open().await;
    let memento = |path: &str, t: i64| {
        CatalogOp::PutMemento(MementoRow {
            id: FedoraId::from_path(path).unwrap(),
            datetime: t,
            version: format!("v{t}"),
            header_file: format!("{path}/h{t}"),
            content_file: None,
        })
    };
    let current = |path: &str, t: i64| {
        CatalogOp::CurrentMemento(MementoRow {
            id: FedoraId::from_path(path).unwrap(),
            datetime: t,
            version: format!("v{t}"),
            header_file: format!("{path}/h{t}"),
            content_file: None,
        })
    };
    let mut a = record("a", Some(""), false);
    a.headers.created_by = Some("alice".into());
    a.headers.last_modified_by = Some("bob".into());
    let mut gone = record("gone", Some(""), true);
    gone.headers.created_by = Some("carol".into());
    gone.headers.last_modified_by = Some("dave".into());
    gone.headers.last_modified_date = Some("2026-01-01T00:00:30.5Z".into());
    cat.apply(vec![
        CatalogOp::Put(a),
        memento("a", 1_767_225_600),
        current("a", 1_767_225_660),
        CatalogOp::Put(gone),
        memento("gone", 1_767_225_610),
    ])
    .await
    .unwrap();
    let last_change = cat.last_change();
    assert_eq!(cat.regenerate_changes().await.unwrap(), 4);
    let log: Vec<(String, ChangeKind, String, String)> = cat
        .changes_since(0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            let c = e.change;
            (c.id.to_string(), c.kind, c.at, c.user)
        })
        .collect();
    let row = |id: &str, kind, at: &str, user: &str| {
        (
            format!("info:fedora/{id}"),
            kind,
            at.to_string(),
            user.to_string(),
        )
    };
    assert_eq!(
        log,
        [
            row("a", ChangeKind::Create, "2026-01-01T00:00:00Z", "alice"),
            row("gone", ChangeKind::Create, "2026-01-01T00:00:10Z", "carol"),
            row("gone", ChangeKind::Delete, "2026-01-01T00:00:30Z", "dave"),
            row("a", ChangeKind::Update, "2026-01-01T00:01:00Z", "bob"),
        ]
    );
    assert!(last_change.has_changed().unwrap());
    assert_eq!(
        cat.regenerate_changes().await.unwrap(),
        0,
        "the log has entries"
    );
}

/// Consumers' positions live apart from the derived data: a rebuild's `clear` keeps them.
async fn consumer_positions_survive_a_clear(store: Store) {
    let cat = store.open().await;
    assert_eq!(
        cat.consumer_position("events:/topic/fedora").await.unwrap(),
        None
    );
    cat.set_consumer_position("events:/topic/fedora", 7)
        .await
        .unwrap();
    cat.set_consumer_position("search", 3).await.unwrap();
    cat.set_consumer_position("events:/topic/fedora", 9)
        .await
        .unwrap();
    cat.clear().await.unwrap();
    assert_eq!(
        cat.consumer_position("events:/topic/fedora").await.unwrap(),
        Some(9)
    );
    assert_eq!(
        cat.consumer_positions().await.unwrap(),
        [
            ("events:/topic/fedora".to_string(), 9),
            ("search".to_string(), 3)
        ]
    );
}

/// A change under way is kept, readable by object and by age, until it is finished (in the
/// same transaction as the rows it records) or forgotten; deciding marks every object of
/// its operation; a reopened catalog still has it (a node that died left it).
async fn pending_writes_are_kept_until_finished(store: Store) {
    let cat = store.open().await;
    let write = |op: &str, object: &str, started: i64| PendingWrite {
        op: op.into(),
        object: object.into(),
        started,
        decided: false,
        record: format!("record of {op} {object}").into_bytes(),
    };
    cat.apply(vec![
        CatalogOp::BeginWrite(write("op1", "info:fedora/a", 1_000)),
        CatalogOp::BeginWrite(write("op1", "info:fedora/b", 1_000)),
        CatalogOp::BeginWrite(write("op2", "info:fedora/a", 2_000)),
    ])
    .await
    .unwrap();
    let of_a = cat.pending_writes_of("info:fedora/a").await.unwrap();
    assert_eq!(
        of_a,
        vec![
            write("op1", "info:fedora/a", 1_000),
            write("op2", "info:fedora/a", 2_000)
        ]
    );
    assert_eq!(
        cat.pending_writes(1_500, 10).await.unwrap().len(),
        2,
        "older than 1.5 s: op1's two"
    );
    assert_eq!(
        cat.pending_writes(3_000, 1).await.unwrap(),
        vec![write("op1", "info:fedora/a", 1_000)]
    );

    cat.apply(vec![CatalogOp::DecideWrite("op1".into())])
        .await
        .unwrap();
    let decided: Vec<bool> = cat
        .pending_writes(3_000, 10)
        .await
        .unwrap()
        .iter()
        .map(|w| w.decided)
        .collect();
    assert_eq!(decided, [true, true, false]);

    // Finished with the rows it recorded: all or nothing.
    cat.apply(vec![
        CatalogOp::Put(record("", None, false)),
        CatalogOp::FinishWrite {
            op: "op1".into(),
            object: Some("info:fedora/a".into()),
        },
    ])
    .await
    .unwrap();
    assert_eq!(
        cat.pending_writes_of("info:fedora/b").await.unwrap().len(),
        1
    );
    assert_eq!(
        cat.pending_writes_of("info:fedora/a").await.unwrap(),
        vec![write("op2", "info:fedora/a", 2_000)]
    );
    drop(cat);
    let cat = store.open().await;
    assert_eq!(
        cat.pending_writes(i64::MAX, 10).await.unwrap().len(),
        2,
        "kept across a restart"
    );
    cat.apply(vec![
        CatalogOp::FinishWrite {
            op: "op1".into(),
            object: None,
        },
        CatalogOp::FinishWrite {
            op: "op2".into(),
            object: None,
        },
    ])
    .await
    .unwrap();
    assert!(cat.pending_writes(i64::MAX, 10).await.unwrap().is_empty());
}

/// `try_lock_objects` takes free locks at once and gives up, holding nothing, when one of
/// them is held.
async fn free_object_locks_are_taken_without_waiting(store: Store) {
    let cat = store.open().await;
    let held = cat.lock_objects(&["info:fedora/x"], &[]).await.unwrap();
    assert!(cat
        .try_lock_objects(&["info:fedora/y", "info:fedora/x"])
        .await
        .unwrap()
        .is_none());
    let y = cat.try_lock_objects(&["info:fedora/y"]).await.unwrap();
    assert!(y.is_some(), "y was left free by the refused request");
    drop(held);
    drop(y);
    // Dropped locks are let go of asynchronously on a shared catalog (on a loaded machine
    // that may take a while).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let mut both = None;
    while std::time::Instant::now() < deadline {
        both = cat
            .try_lock_objects(&["info:fedora/x", "info:fedora/y"])
            .await
            .unwrap();
        if both.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(both.is_some());
}

/// `get_for_read` gives the record `get` gives, a binary's live description's triples (none
/// once the description is a tombstone, none for other resources), and never says "nothing
/// to list" of a resource with children or membership triples.
async fn a_read_record_comes_with_its_description_and_what_its_listing_may_find(store: Store) {
    let cat = store.open().await;
    let id = |p: &str| FedoraId::from_path(p).unwrap();
    let mut binary = record("c/f", Some("c"), false);
    binary.headers.interaction_model = InteractionModel::NonRdfSource.iri().into();
    binary.rdf = None;
    let mut description = record("c/f/fcr:metadata", None, false);
    description.headers.interaction_model = InteractionModel::NonRdfSourceDescription.iri().into();
    description.rdf = Some(b"<info:fedora/c/f/fcr:metadata> <urn:p> <urn:o> .\n".to_vec());
    cat.apply(vec![
        CatalogOp::Put(record("", None, false)),
        CatalogOp::Put(record("c", Some(""), false)),
        CatalogOp::Put(binary.clone()),
        CatalogOp::Put(description.clone()),
        CatalogOp::Put(record("target", Some(""), false)),
    ])
    .await
    .unwrap();
    assert!(cat.get_for_read(&id("nope")).await.unwrap().is_none());

    let read = cat.get_for_read(&id("c/f")).await.unwrap().unwrap();
    assert_eq!(read.record, binary);
    assert_eq!(read.description_rdf, description.rdf);
    let read = cat.get_for_read(&id("c")).await.unwrap().unwrap();
    assert_eq!(read.record, record("c", Some(""), false));
    assert_eq!(read.description_rdf, None, "a container has no description");
    assert!(read.may_have_children, "c has a live child");
    let read = cat
        .get_for_read(&id("c/f/fcr:metadata"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.record, description);
    assert_eq!(read.description_rdf, None);

    // A deleted description leaves its binary without stated triples.
    let mut gone = description.clone();
    gone.headers.deleted = true;
    cat.apply(vec![CatalogOp::Put(gone)]).await.unwrap();
    let read = cat.get_for_read(&id("c/f")).await.unwrap().unwrap();
    assert_eq!(read.description_rdf, None);

    // A membership resource may have membership triples to list.
    let mut dc = record("dc", Some(""), false);
    dc.headers.interaction_model = InteractionModel::DirectContainer.iri().into();
    cat.apply(vec![
        CatalogOp::Put(dc),
        CatalogOp::ReplaceMembership {
            source: id("dc"),
            proxy: None,
            rows: vec![MembershipRow {
                proxy: id("dc/m"),
                subject: id("target").iri(),
                predicate: "urn:x:has".into(),
                object: id("dc/m").iri(),
            }],
        },
    ])
    .await
    .unwrap();
    let read = cat.get_for_read(&id("target")).await.unwrap().unwrap();
    assert!(read.may_have_membership);
    assert_eq!(read.record, record("target", Some(""), false));
}
