//! The digest algorithm of each object, at the kernel's level: which algorithm a body
//! written at an id is hashed with while it streams in, and a body hashed with another one
//! (a guess gone wrong) still lands with its object's digest.

use std::sync::Arc;

use arca_catalog::SqliteCatalog;
use arca_model::{DigestAlgorithm, FedoraId, InteractionModel, MultiHasher};
use arca_repository::{BinaryData, NewContent, ReceivedBinary, Repository, Upload};
use bytes::Bytes;

async fn open(dir: &std::path::Path, algorithm: DigestAlgorithm) -> Repository {
    let ocfl = crate::local_root(&dir.join("ocfl-root"), &dir.join("staging"))
        .with_digest_algorithm(algorithm)
        .unwrap();
    let catalog = Arc::new(SqliteCatalog::open(&dir.join("catalog.sqlite")).unwrap());
    Repository::open(ocfl, catalog, &dir.join("journal"), "test".into(), true)
        .await
        .unwrap()
}

fn id(path: &str) -> FedoraId {
    FedoraId::from_path(path).unwrap()
}

fn rdf() -> NewContent {
    NewContent::Rdf {
        triples: Vec::new(),
        lenient: false,
    }
}

fn binary(received: ReceivedBinary) -> NewContent {
    NewContent::Binary {
        binary: received,
        mime: "application/octet-stream".into(),
        filename: None,
        expected: Vec::new(),
    }
}

/// A body received into an upload file, hashed with `algorithms`.
fn uploaded(repo: &Repository, bytes: &[u8], algorithms: &[DigestAlgorithm]) -> ReceivedBinary {
    let upload = Upload::new_in(&repo.uploads_dir());
    std::fs::write(upload.path(), bytes).unwrap();
    let mut h = MultiHasher::new(algorithms);
    h.update(bytes);
    ReceivedBinary {
        data: BinaryData::File(upload),
        size: bytes.len() as u64,
        digests: h.finish(),
    }
}

fn urn(algorithm: DigestAlgorithm, bytes: &[u8]) -> String {
    format!(
        "{}{}",
        algorithm.urn_prefix(),
        MultiHasher::digest(algorithm, bytes)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_are_hashed_with_the_algorithm_of_the_object_they_land_in() {
    let dir = tempfile::tempdir().unwrap();
    let repo = open(dir.path(), DigestAlgorithm::Sha512).await;
    let create = |path: &str, group: bool| {
        repo.create(
            id(path),
            InteractionModel::BasicContainer,
            group,
            rdf(),
            "u",
        )
    };
    create("c", false).await.unwrap();
    create("ag", true).await.unwrap();
    create("ag/sub", false).await.unwrap();
    repo.shutdown().await.unwrap();
    drop(repo);

    let repo = open(dir.path(), DigestAlgorithm::Sha256).await;
    for (path, expected) in [
        // existing objects
        ("c", DigestAlgorithm::Sha512),
        ("ag/sub", DigestAlgorithm::Sha512),
        // new parts of an existing Archival Group, however deep
        ("ag/new", DigestAlgorithm::Sha512),
        ("ag/sub/a/b", DigestAlgorithm::Sha512),
        // new objects
        ("c/new", DigestAlgorithm::Sha256),
        ("new/deeper", DigestAlgorithm::Sha256),
    ] {
        // A body received for it is hashed with its object's algorithm alone.
        let body = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(
            Bytes::from_static(b"bytes"),
        )]);
        let received = repo
            .receive_binary(&id(path), body, &[], |_| true)
            .await
            .unwrap();
        let algorithms: Vec<_> = received.digests.iter().map(|d| d.algorithm).collect();
        assert_eq!(algorithms, [expected], "{path}");
    }
    repo.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_hashed_with_another_algorithm_gets_its_objects_digest() {
    let dir = tempfile::tempdir().unwrap();
    let repo = open(dir.path(), DigestAlgorithm::Sha256).await;
    repo.create(id("c"), InteractionModel::BasicContainer, false, rdf(), "u")
        .await
        .unwrap();
    // In memory, and as an upload file, each hashed with sha512 only.
    let small =
        ReceivedBinary::from_memory(Bytes::from_static(b"small"), &[DigestAlgorithm::Sha512]);
    let file = uploaded(&repo, b"uploaded", &[DigestAlgorithm::Sha512]);
    for (path, received, bytes) in [
        ("c/small", small, &b"small"[..]),
        ("c/file", file, &b"uploaded"[..]),
    ] {
        let record = repo
            .create(
                id(path),
                InteractionModel::NonRdfSource,
                false,
                binary(received),
                "u",
            )
            .await
            .unwrap();
        assert_eq!(
            record.headers.digests,
            Some(vec![
                urn(DigestAlgorithm::Sha256, bytes),
                urn(DigestAlgorithm::Sha512, bytes)
            ]),
            "{path}"
        );
        // The root is written behind the answer.
        repo.published().await;
        let object = repo.ocfl().read_object(id(path).as_str()).unwrap().unwrap();
        assert_eq!(object.inventory.digest_algorithm, "sha256");
        assert_eq!(
            object
                .inventory
                .head_state()
                .get(path.rsplit('/').next().unwrap()),
            Some(&MultiHasher::digest(DigestAlgorithm::Sha256, bytes))
        );
        assert_eq!(
            std::fs::read(
                repo.content(&record)
                    .await
                    .unwrap()
                    .unwrap()
                    .local_path()
                    .unwrap()
            )
            .unwrap(),
            bytes
        );
    }
    repo.shutdown().await.unwrap();
}
