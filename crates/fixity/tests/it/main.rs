//! arca-fixity's integration tests, one binary: audits, repairs, checkpoints and reports on
//! real OCFL objects (the official fixtures' good objects, copied into a root and damaged on
//! purpose); replicas of a real repository (local journaled root, SQLite catalog) in a
//! temporary directory, copied into other directories.

mod audit;
mod files;
mod replica;
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arca_catalog::SqliteCatalog;
use arca_model::{DigestAlgorithm, FedoraId, InteractionModel, MultiHasher};
use arca_repository::{BinaryData, NewContent, ReceivedBinary, Repository};

/// A repository over `dir` (`ocfl-root/`, `staging/`, `journal/`, `catalog.sqlite`), as the
/// server opens a local one.
pub async fn open_repository(dir: &Path) -> Arc<Repository> {
    let store = arca_storage::FsStorage::open_deferred(&dir.join("ocfl-root")).unwrap();
    let ocfl = arca_ocfl::OcflRoot::open(Arc::new(store), &dir.join("staging")).unwrap();
    let catalog = Arc::new(SqliteCatalog::open(&dir.join("catalog.sqlite")).unwrap());
    Arc::new(
        Repository::open(ocfl, catalog, &dir.join("journal"), "test".into(), true)
            .await
            .unwrap(),
    )
}

/// The resource at `path`.
pub fn id(path: &str) -> FedoraId {
    FedoraId::from_path(path).unwrap()
}

/// Creates the basic container `path`.
pub async fn container(repo: &Repository, path: &str, group: bool) {
    repo.create(
        id(path),
        InteractionModel::BasicContainer,
        group,
        NewContent::Rdf {
            triples: Vec::new(),
            lenient: false,
        },
        "test",
    )
    .await
    .unwrap();
}

/// The binary content `bytes`, received as the HTTP layer would hand it down.
pub fn binary(bytes: &[u8]) -> NewContent {
    let mut h = MultiHasher::new(&[DigestAlgorithm::Sha512]);
    h.update(bytes);
    NewContent::Binary {
        binary: ReceivedBinary {
            data: BinaryData::Memory(bytes::Bytes::copy_from_slice(bytes)),
            size: bytes.len() as u64,
            digests: h.finish(),
        },
        mime: "application/octet-stream".into(),
        filename: None,
        expected: Vec::new(),
    }
}

/// Creates (or replaces) the binary `path` with `bytes`.
pub async fn put_binary(repo: &Repository, path: &str, bytes: &[u8]) {
    let fid = id(path);
    if repo.catalog().get(&fid).await.unwrap().is_some() {
        repo.replace(&fid, None, binary(bytes), "test", None)
            .await
            .unwrap();
    } else {
        repo.create(
            fid,
            InteractionModel::NonRdfSource,
            false,
            binary(bytes),
            "test",
        )
        .await
        .unwrap();
    }
}

/// Every file below `dir` by relative path, with its bytes.
pub fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let path = e.unwrap().path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                let rel = path
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .to_string();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The differences between two trees, for a message: paths only in one, paths whose
/// bytes differ.
pub fn differences(a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in a {
        match b.get(k) {
            None => out.push(format!("only in the primary: {k}")),
            Some(w) if w != v => out.push(format!("differs: {k}")),
            _ => {}
        }
    }
    for k in b.keys() {
        if !a.contains_key(k) {
            out.push(format!("only in the replica: {k}"));
        }
    }
    out
}
