//! Builders shared by the catalog's tests.

#![allow(dead_code)] // both test binaries (`it`, `postgres`) include it, each uses some helpers

use arca_catalog::{
    CatalogOp, Change, ChangeKind, ResourceRecord, TxContent, TxFile, TxObject, TxResource, TxStage,
};
use arca_model::{DigestAlgorithm, DigestValue, FedoraId, InteractionModel, ResourceHeaders};

/// A basic container at `path` below `parent` (paths as `FedoraId::from_path` takes them),
/// live or a tombstone, with one stored triple.
pub fn record(path: &str, parent: Option<&str>, deleted: bool) -> ResourceRecord {
    let id = FedoraId::from_path(path).unwrap();
    let mut headers = ResourceHeaders::new(
        id.to_string(),
        parent.map(|p| FedoraId::from_path(p).unwrap().to_string()),
        InteractionModel::BasicContainer,
    );
    headers.object_root = true;
    headers.deleted = deleted;
    ResourceRecord {
        headers,
        ocfl_id: id.to_string(),
        parent: parent.map(|p| FedoraId::from_path(p).unwrap()),
        id,
        content_file: None,
        rdf: Some(b"<a> <b> <c> .\n".to_vec()),
        children_changed: None,
    }
}

/// A place a catalog lives, for the tests every implementation must pass: an SQLite file
/// in a temporary directory, or a database of its own in the test process's private
/// PostgreSQL cluster (arca-testkit). [`open`](Store::open) may be called again for the
/// same catalog (a restart).
pub enum Store {
    /// `catalog.db` in a temporary directory.
    Sqlite(tempfile::TempDir),
    /// A PostgreSQL database's URL.
    Postgres(String),
}

impl Store {
    /// A new SQLite catalog's place.
    pub fn sqlite() -> Store {
        Store::Sqlite(tempfile::tempdir().unwrap())
    }

    /// A new PostgreSQL database, or `None` (the test is not run, and says so) when
    /// PostgreSQL is not installed and `ARCA_REQUIRE_POSTGRES` is not `1`.
    pub async fn postgres() -> Option<Store> {
        tokio::task::spawn_blocking(|| {
            let pg = arca_testkit::postgres::Postgres::shared()?;
            Some(Store::Postgres(pg.create_database()))
        })
        .await
        .unwrap()
    }

    /// Opens (or reopens) the catalog.
    pub async fn open(&self) -> std::sync::Arc<dyn arca_catalog::Catalog> {
        match self {
            Store::Sqlite(dir) => std::sync::Arc::new(
                arca_catalog::SqliteCatalog::open(&dir.path().join("catalog.db")).unwrap(),
            ),
            Store::Postgres(url) => {
                std::sync::Arc::new(arca_catalog::PostgresCatalog::connect(url).await.unwrap())
            }
        }
    }
}

/// Runs each named `async fn(Store)` of the test file as two tests, `sqlite::NAME` and
/// `postgres::NAME` (the latter not run when PostgreSQL is missing, see [`Store::postgres`]).
#[allow(unused_macros)] // the `postgres` binary runs on one catalog only
macro_rules! on_every_catalog {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(crate::common::Store::sqlite()).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(store) = crate::common::Store::postgres().await else {
                        return;
                    };
                    super::$name(store).await
                }
            )*
        }
    };
}

/// A top-level container (or the root), live or a tombstone.
pub fn top(path: &str, deleted: bool) -> ResourceRecord {
    record(path, (!path.is_empty()).then_some(""), deleted)
}

/// A stage writing resource `path` in its own object, with one inline file and one upload.
pub fn stage(path: &str, existed: bool, upload: &str) -> TxStage {
    let r = top(path, false);
    TxStage {
        objects: vec![TxObject {
            ocfl_id: r.ocfl_id.clone(),
            existed,
            new_version: false,
        }],
        files: vec![
            TxFile {
                ocfl_id: r.ocfl_id.clone(),
                logical_path: ".fcrepo/fcr-root.json".into(),
                content: Some(TxContent::Bytes(b"{}".to_vec())),
            },
            TxFile {
                ocfl_id: r.ocfl_id.clone(),
                logical_path: "data".into(),
                content: Some(TxContent::Upload {
                    path: upload.into(),
                    digest: sha256("00"),
                }),
            },
        ],
        ops: vec![CatalogOp::Log(Change {
            id: r.id.clone(),
            kind: ChangeKind::Create,
            at: "2026-11-24T00:00:00Z".into(),
            user: "u".into(),
            agent: Some("curl/8".into()),
            types: vec!["urn:x:T".into()],
        })],
        resources: vec![TxResource {
            record: r,
            content_logical: Some("data".into()),
        }],
    }
}

pub fn sha256(hex: &str) -> DigestValue {
    DigestValue {
        algorithm: DigestAlgorithm::Sha256,
        hex: hex.into(),
    }
}
