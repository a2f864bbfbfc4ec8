//! `Repository::rebuild`: the catalog recreated from storage, listed while it is read.

use std::sync::Arc;

use arca_catalog::{Catalog, SqliteCatalog};
use arca_model::{FedoraId, InteractionModel};
use arca_repository::{NewContent, RebuildStats, Repository};
use parking_lot::Mutex;

fn id(path: &str) -> FedoraId {
    FedoraId::from_path(path).unwrap()
}

/// Rebuilds `repo`'s catalog; its stats and the last progress it reported (done, total).
async fn rebuild(repo: &Repository, resume: bool) -> (RebuildStats, Option<(u64, u64)>) {
    let last = Mutex::new(None);
    let stats = repo
        .rebuild(resume, &|done, total| *last.lock() = Some((done, total)))
        .await
        .unwrap();
    (stats, last.into_inner())
}

/// A rebuild finds every object while it lists the root (the total it reports ends exact);
/// an interrupted one, resumed, reads only the objects after the last one it committed (the
/// order of their directories), and leaves every resource readable.
#[tokio::test]
async fn a_resumed_rebuild_reads_only_the_objects_after_its_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ocfl-root");
    let staging = dir.path().join("staging");
    let catalog = Arc::new(SqliteCatalog::open(&dir.path().join("catalog.sqlite")).unwrap());
    let repo = Repository::open(
        crate::local_root(&root, &staging),
        catalog.clone(),
        &dir.path().join("journal"),
        "test".into(),
        true,
    )
    .await
    .unwrap();
    for i in 0..40 {
        let rdf = NewContent::Rdf {
            triples: Vec::new(),
            lenient: false,
        };
        repo.create(
            id(&format!("c{i}")),
            InteractionModel::BasicContainer,
            false,
            rdf,
            "u",
        )
        .await
        .unwrap();
    }
    // Every object in the root (the journaled root publishes behind the answers).
    let ids = std::iter::once(FedoraId::root()).chain((0..40).map(|i| id(&format!("c{i}"))));
    for id in ids {
        let record = repo.get(&id).await.unwrap();
        repo.settle(&record.ocfl_id).await.unwrap();
    }
    let objects = crate::local_root(&root, &staging).list_objects().unwrap();
    assert_eq!(objects.len(), 41, "the root's object and one per container");

    let (stats, last_progress) = rebuild(&repo, false).await;
    assert_eq!((stats.objects, stats.failed), (41, 0));
    assert_eq!(last_progress, Some((41, 41)));

    // Stopped after the tenth object's chunk: resumed, the 31 after it are read.
    catalog.set_meta("rebuild.state", "running").await.unwrap();
    catalog
        .set_meta("rebuild.cursor", &objects[9])
        .await
        .unwrap();
    let (stats, last_progress) = rebuild(&repo, true).await;
    assert_eq!((stats.objects, stats.failed), (31, 0));
    assert_eq!(last_progress, Some((31, 31)));
    assert_eq!(
        catalog.meta("rebuild.state").await.unwrap().as_deref(),
        Some("complete")
    );
    for i in 0..40 {
        repo.get(&id(&format!("c{i}"))).await.unwrap();
    }
}
