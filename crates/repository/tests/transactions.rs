//! Transactions at the kernel's level: a request still running inside a transaction when it
//! is committed or rolled back keeps nothing and is told so.

use std::sync::Arc;

use arca_catalog::SqliteCatalog;
use arca_model::{FedoraId, InteractionModel};
use arca_ocfl::OcflRoot;
use arca_repository::{Error, NewContent, Repository};

async fn open(dir: &std::path::Path) -> Repository {
    let ocfl = OcflRoot::open_or_create(&dir.join("ocfl-root"), &dir.join("staging")).unwrap();
    let catalog = Arc::new(SqliteCatalog::open(&dir.join("catalog.sqlite")).unwrap());
    Repository::open(ocfl, catalog, &dir.join("journal"), "test".into(), true)
        .await
        .unwrap()
}

fn empty() -> NewContent {
    NewContent::Rdf {
        triples: Vec::new(),
        lenient: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_lands_after_the_end_is_refused_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Arc::new(open(dir.path()).await);
    let tx = repo.begin_transaction(None).await.unwrap();
    let id = FedoraId::from_path("late").unwrap();
    // The request enters the transaction, then the transaction is committed before it
    // writes (another client's PUT on the transaction).
    let entered = repo
        .in_transaction(&tx.id, {
            let repo = repo.clone();
            let tx_id = tx.id.clone();
            let id = id.clone();
            async move {
                repo.commit_transaction(&tx_id).await.unwrap();
                repo.create(id, InteractionModel::BasicContainer, false, empty(), "u")
                    .await
            }
        })
        .await
        .unwrap();
    assert!(
        matches!(entered, Err(Error::TransactionEnded(_))),
        "{entered:?}"
    );
    assert!(repo.lookup(&id).await.unwrap().is_none());
    assert!(repo.ocfl().read_object(id.as_str()).unwrap().is_none());
    repo.shutdown().await.unwrap();
}
