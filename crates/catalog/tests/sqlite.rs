//! Behaviour every catalog must show, run against the SQLite implementation.

mod common;

use arca_catalog::{Catalog, CatalogOp, ChangeKind, SqliteCatalog};
use arca_model::FedoraId;
use common::record;

fn open() -> (tempfile::TempDir, SqliteCatalog) {
    let dir = tempfile::tempdir().unwrap();
    let cat = SqliteCatalog::open(&dir.path().join("catalog.db")).unwrap();
    (dir, cat)
}

#[tokio::test]
async fn stores_and_pages_children() {
    let (_d, cat) = open();
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

#[tokio::test]
async fn descendants_are_path_ranges() {
    let (_d, cat) = open();
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

#[tokio::test]
async fn change_log_is_monotonic_and_children_clock_survives_puts() {
    let (_d, cat) = open();
    let a = FedoraId::from_path("a").unwrap();
    let log = |kind| CatalogOp::Log {
        id: a.clone(),
        kind,
        at: "2026-01-01T00:00:00Z".into(),
        user: "u".into(),
    };
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
        changes.iter().map(|c| c.kind).collect::<Vec<_>>(),
        [ChangeKind::Create, ChangeKind::Update]
    );
    assert_eq!(cat.changes_since(s1, 10).await.unwrap().len(), 1);
    cat.apply(vec![CatalogOp::Remove(a.clone())]).await.unwrap();
    assert!(cat.get(&a).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_are_group_committed_with_unique_sequence_numbers() {
    let (_d, cat) = open();
    let cat = std::sync::Arc::new(cat);
    let mut tasks = Vec::new();
    for i in 0..50 {
        let cat = cat.clone();
        tasks.push(tokio::spawn(async move {
            let r = record(&format!("c{i}"), Some(""), false);
            let id = r.id.clone();
            cat.apply(vec![
                CatalogOp::Put(r),
                CatalogOp::Log {
                    id,
                    kind: ChangeKind::Create,
                    at: "2026-01-01T00:00:00Z".into(),
                    user: "u".into(),
                },
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

/// A catalog written with an older schema is emptied when opened (its resources and its
/// rebuild state are gone), so that the kernel rebuilds it from storage instead of reading
/// rows of the wrong shape.
#[tokio::test]
async fn a_catalog_of_an_older_schema_is_emptied_for_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.db");
    {
        let cat = SqliteCatalog::open(&path).unwrap();
        cat.apply(vec![CatalogOp::Put(record("", None, false))])
            .await
            .unwrap();
        cat.set_meta("rebuild", "complete").await.unwrap();
    }
    let current: i64 = {
        let c = rusqlite::Connection::open(&path).unwrap();
        let v = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        c.execute_batch("PRAGMA user_version = 5;").unwrap();
        v
    };
    assert!(current > 5, "the test must fake an older schema version");

    let cat = SqliteCatalog::open(&path).unwrap();
    assert_eq!(cat.count().await.unwrap(), 0);
    assert_eq!(cat.get(&FedoraId::root()).await.unwrap(), None);
    assert_eq!(cat.meta("rebuild").await.unwrap(), None);
    // The new schema works.
    cat.apply(vec![CatalogOp::Put(record("", None, false))])
        .await
        .unwrap();
    assert_eq!(cat.count().await.unwrap(), 1);
}
