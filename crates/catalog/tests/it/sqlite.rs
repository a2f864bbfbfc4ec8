//! Behaviour only the SQLite catalog has: how it opens files of older schema versions.

use crate::common::{record, sha256, stage, top};
use arca_catalog::{
    Catalog, CatalogOp, Change, ChangeKind, MembershipRow, SqliteCatalog, TransactionStore,
    TxContent,
};
use arca_model::{DigestAlgorithm, DigestValue, FedoraId};

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

/// A catalog of schema version 7 (before the change log kept agents and types) keeps its
/// change log when opened: the columns are added, older entries have none.
#[tokio::test]
async fn a_version_7_catalog_keeps_its_change_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.db");
    {
        let cat = SqliteCatalog::open(&path).unwrap();
        cat.apply(vec![CatalogOp::Log(Change {
            id: FedoraId::from_path("a").unwrap(),
            kind: ChangeKind::Create,
            at: "2026-01-01T00:00:00Z".into(),
            user: "u".into(),
            agent: Some("x".into()),
            types: vec!["urn:t".into()],
        })])
        .await
        .unwrap();
    }
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "ALTER TABLE changes DROP COLUMN agent; ALTER TABLE changes DROP COLUMN types;
             ALTER TABLE tx_ops DROP COLUMN agent; ALTER TABLE tx_ops DROP COLUMN types;
             ALTER TABLE transactions DROP COLUMN user;
             PRAGMA user_version = 7;",
        )
        .unwrap();
    }
    let cat = SqliteCatalog::open(&path).unwrap();
    let log = cat.changes_since(0, 10).await.unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].change.user, "u");
    assert_eq!(log[0].change.agent, None);
    assert!(log[0].change.types.is_empty());
    assert_eq!(*cat.last_change().borrow(), log[0].seq);
}

/// A schema-6 catalog (before objects could use sha256) keeps its rows when opened: only
/// the staged uploads' digest column is renamed, and its bare SHA-512 values still read.
#[tokio::test]
async fn a_schema_6_catalog_keeps_its_rows_and_its_staged_sha512_digests() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.db");
    {
        let cat = SqliteCatalog::open(&path).unwrap();
        cat.apply(vec![CatalogOp::Put(top("", false))])
            .await
            .unwrap();
        cat.set_meta("rebuild", "complete").await.unwrap();
        cat.tx_begin("t1", i64::MAX, None).await.unwrap();
        cat.tx_stage("t1", stage("new", false, "/u/1"))
            .await
            .unwrap()
            .unwrap();
    }
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "ALTER TABLE tx_files RENAME COLUMN digest TO sha512;
             UPDATE tx_files SET sha512 = 'AB' WHERE upload IS NOT NULL;
             ALTER TABLE changes DROP COLUMN agent; ALTER TABLE changes DROP COLUMN types;
             ALTER TABLE tx_ops DROP COLUMN agent; ALTER TABLE tx_ops DROP COLUMN types;
             ALTER TABLE transactions DROP COLUMN user;
             PRAGMA user_version = 6;",
        )
        .unwrap();
    }
    let cat = SqliteCatalog::open(&path).unwrap();
    assert_eq!(cat.count().await.unwrap(), 1);
    assert_eq!(
        cat.meta("rebuild").await.unwrap().as_deref(),
        Some("complete")
    );
    let files = cat.tx_files("t1", "info:fedora/new").await.unwrap();
    assert_eq!(
        files[1].content,
        Some(TxContent::Upload {
            path: "/u/1".into(),
            digest: DigestValue {
                algorithm: DigestAlgorithm::Sha512,
                hex: "ab".into()
            }
        })
    );
    // Staging goes on in the renamed column.
    cat.tx_stage("t1", stage("new", false, "/u/2"))
        .await
        .unwrap()
        .unwrap();
    let files = cat.tx_files("t1", "info:fedora/new").await.unwrap();
    assert_eq!(
        files[1].content,
        Some(TxContent::Upload {
            path: "/u/2".into(),
            digest: sha256("00")
        })
    );
}

/// The index names of the SQLite catalog at `path`.
fn index_names(path: &std::path::Path) -> Vec<String> {
    let c = rusqlite::Connection::open(path).unwrap();
    let mut stmt = c
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// A rebuild's bulk load stages its rows and sets the secondary indexes aside, and puts both
/// in place at its end: the rows loaded are found through them afterwards; a bulk load cut
/// short (the process gone before its end) leaves a catalog whose next opening restores the
/// indexes, and its staged rows for the load that resumes it.
#[tokio::test]
async fn a_bulk_load_builds_the_secondary_indexes_at_its_end_or_at_the_next_opening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.db");
    let all = {
        let _created = SqliteCatalog::open(&path).unwrap();
        index_names(&path)
    };
    assert!(all.iter().any(|n| n == "resources_by_parent"), "{all:?}");

    let cat = SqliteCatalog::open(&path).unwrap();
    cat.bulk_load(true).await.unwrap();
    let during = index_names(&path);
    assert!(during.len() < all.len(), "indexes set aside: {during:?}");
    let mut ops = vec![CatalogOp::Put(top("", false))];
    ops.extend((0..50).map(|i| CatalogOp::Put(top(&format!("c{i:02}"), false))));
    cat.apply(ops).await.unwrap();
    cat.bulk_load(false).await.unwrap();
    assert!(cat
        .get(&FedoraId::from_path("c07").unwrap())
        .await
        .unwrap()
        .is_some());
    assert_eq!(index_names(&path), all);
    let children = cat.children(&FedoraId::root(), None, 100).await.unwrap();
    assert_eq!(children.len(), 50);
    assert_eq!(children[7], FedoraId::from_path("c07").unwrap());

    // Cut short: the next opening has every index again and the rows put in place; what
    // was staged waits for the resumed load and is in place at its end.
    cat.bulk_load(true).await.unwrap();
    cat.apply(vec![CatalogOp::Put(top("later", false))])
        .await
        .unwrap();
    drop(cat);
    assert!(index_names(&path).len() < all.len());
    let cat = SqliteCatalog::open(&path).unwrap();
    assert_eq!(index_names(&path), all);
    let root = FedoraId::root();
    assert_eq!(cat.children(&root, None, 100).await.unwrap().len(), 50);
    cat.bulk_load(true).await.unwrap();
    cat.bulk_load(false).await.unwrap();
    assert_eq!(cat.children(&root, None, 100).await.unwrap().len(), 51);
    // A new rebuild starts from nothing: clear forgets the staged rows too.
    cat.bulk_load(true).await.unwrap();
    cat.apply(vec![CatalogOp::Put(top("staged", false))])
        .await
        .unwrap();
    cat.clear().await.unwrap();
    cat.bulk_load(true).await.unwrap();
    cat.bulk_load(false).await.unwrap();
    assert_eq!(cat.count().await.unwrap(), 0);
}

/// `get_for_read` answers from memory between writes, yet a read after a write was
/// acknowledged sees that write, however the cache was filled meanwhile: readers on other
/// threads read the same resource throughout, before, during and after each write, through
/// the group commit and through the writer taken directly (`clear`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_read_after_an_acknowledged_write_sees_it_while_others_read() {
    let dir = tempfile::tempdir().unwrap();
    let cat = std::sync::Arc::new(SqliteCatalog::open(&dir.path().join("catalog.db")).unwrap());
    let id = FedoraId::from_path("c").unwrap();
    let version = |n: usize| {
        let mut r = record("c", Some(""), false);
        r.rdf = Some(format!("<a> <b> \"{n}\" .\n").into_bytes());
        r
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (cat, id, stop) = (cat.clone(), id.clone(), stop.clone());
            tokio::spawn(async move {
                let mut reads = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    cat.get_for_read(&id).await.unwrap();
                    reads += 1;
                    tokio::task::yield_now().await;
                }
                reads
            })
        })
        .collect();
    cat.apply(vec![CatalogOp::Put(record("", None, false))])
        .await
        .unwrap();
    for n in 0..300 {
        cat.apply(vec![CatalogOp::Put(version(n))]).await.unwrap();
        for _ in 0..3 {
            let read = cat.get_for_read(&id).await.unwrap().expect("written");
            assert_eq!(read.record, version(n), "after write {n}");
        }
        if n % 100 == 99 {
            cat.clear().await.unwrap();
            assert_eq!(cat.get_for_read(&id).await.unwrap(), None, "after clear");
            cat.apply(vec![CatalogOp::Put(record("", None, false))])
                .await
                .unwrap();
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        assert!(r.await.unwrap() > 0, "the readers read meanwhile");
    }
}

/// SQLite's `get_for_read` knows when a resource has no live child and is no membership
/// resource, in step with the rows: a child's creation and deletion, membership rows
/// replaced and forgotten.
#[tokio::test]
async fn a_read_record_knows_when_there_is_nothing_to_list() {
    let dir = tempfile::tempdir().unwrap();
    let cat = SqliteCatalog::open(&dir.path().join("catalog.db")).unwrap();
    let id = |p: &str| FedoraId::from_path(p).unwrap();
    let flags = |r: Option<std::sync::Arc<arca_catalog::ReadRecord>>| {
        let r = r.unwrap();
        (r.may_have_children, r.may_have_membership)
    };
    cat.apply(vec![
        CatalogOp::Put(record("", None, false)),
        CatalogOp::Put(record("c", Some(""), false)),
    ])
    .await
    .unwrap();
    assert_eq!(
        flags(cat.get_for_read(&id("c")).await.unwrap()),
        (false, false)
    );
    cat.apply(vec![CatalogOp::Put(record("c/x", Some("c"), false))])
        .await
        .unwrap();
    assert_eq!(
        flags(cat.get_for_read(&id("c")).await.unwrap()),
        (true, false)
    );
    // A tombstone is no child to list.
    cat.apply(vec![CatalogOp::Put(record("c/x", Some("c"), true))])
        .await
        .unwrap();
    assert_eq!(
        flags(cat.get_for_read(&id("c")).await.unwrap()),
        (false, false)
    );

    let row = MembershipRow {
        proxy: id("dc/m"),
        subject: id("c").iri(),
        predicate: "urn:x:has".into(),
        object: id("dc/m").iri(),
    };
    cat.apply(vec![CatalogOp::ReplaceMembership {
        source: id("dc"),
        proxy: None,
        rows: vec![row],
    }])
    .await
    .unwrap();
    assert_eq!(
        flags(cat.get_for_read(&id("c")).await.unwrap()),
        (false, true)
    );
    cat.apply(vec![CatalogOp::ReplaceMembership {
        source: id("dc"),
        proxy: None,
        rows: Vec::new(),
    }])
    .await
    .unwrap();
    assert_eq!(
        flags(cat.get_for_read(&id("c")).await.unwrap()),
        (false, false)
    );

    // A description lists its binary's membership (an isMemberOfRelation names the binary).
    cat.apply(vec![
        CatalogOp::Put(record("c/f/fcr:metadata", None, false)),
        CatalogOp::ReplaceMembership {
            source: id("dc"),
            proxy: None,
            rows: vec![MembershipRow {
                proxy: id("dc/m"),
                subject: id("c/f").iri(),
                predicate: "urn:x:isPartOf".into(),
                object: id("dc").iri(),
            }],
        },
    ])
    .await
    .unwrap();
    let description = cat.get_for_read(&id("c/f/fcr:metadata")).await.unwrap();
    assert_eq!(flags(description), (false, true));
}
