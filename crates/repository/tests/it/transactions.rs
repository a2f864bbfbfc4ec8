//! Transactions at the kernel's level: a request still running inside a transaction when it
//! is committed or rolled back keeps nothing and is told so; a commit of many pages writes
//! every object once; one found wanting before its decision leaves nothing and names the
//! object; one interrupted after its decision is completed at the next start (its binary
//! uploads kept for it), objects it wrote before the interruption are not written again,
//! one interrupted before is failed; one commit runs at a time, and
//! on a catalog that nodes share, no node rolls forward a commit that a live node runs.

use std::sync::Arc;

use arca_catalog::{ChangeKind, SqliteCatalog, TxEnd, TxStatus};
use arca_model::{DigestAlgorithm, FedoraId, InteractionModel};
use arca_ocfl::{Change, Content, HeadMode, VersionInfo};
use arca_repository::{Error, NewContent, ReceivedBinary, Repository};

async fn open(dir: &std::path::Path) -> Repository {
    let ocfl = crate::local_root(&dir.join("ocfl-root"), &dir.join("staging"));
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
    let entered = repo.in_transaction(&tx.id).await.unwrap();
    repo.commit_transaction(&tx.id).await.unwrap();
    let entered = entered
        .create(
            id.clone(),
            InteractionModel::BasicContainer,
            false,
            empty(),
            "u",
        )
        .await;
    assert!(
        matches!(entered, Err(Error::TransactionEnded(_))),
        "{entered:?}"
    );
    assert!(repo.lookup(&id).await.unwrap().is_none());
    assert!(repo.ocfl().read_object(id.as_str()).unwrap().is_none());
    repo.shutdown().await.unwrap();
}

fn binary(bytes: &'static [u8]) -> NewContent {
    NewContent::Binary {
        binary: ReceivedBinary::from_memory(
            bytes::Bytes::from_static(bytes),
            &[DigestAlgorithm::Sha512],
        ),
        mime: "text/plain".into(),
        filename: None,
        expected: Vec::new(),
    }
}

fn id(path: &str) -> FedoraId {
    FedoraId::from_path(path).unwrap()
}

/// How many OCFL versions object `path` has (0: none).
fn versions(repo: &Repository, path: &str) -> usize {
    repo.ocfl()
        .read_object(id(path).as_str())
        .unwrap()
        .map(|o| o.inventory.versions.len())
        .unwrap_or(0)
}

/// Files left in the upload area.
fn uploads(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir.join("staging/uploads"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

/// Stages, in a new transaction, `n` containers `p/c<i>` (below the existing `p`), a binary
/// `p/bin` and a new version of the existing `kept`; returns the transaction's id.
async fn stage_many(repo: &Arc<Repository>, n: usize) -> String {
    let tx = repo.begin_transaction(None).await.unwrap().id;
    // Every write goes through a handle scoped to the transaction.
    let scoped = repo.in_transaction(&tx).await.unwrap();
    {
        for i in 0..n {
            scoped
                .create(
                    id(&format!("p/c{i:03}")),
                    InteractionModel::BasicContainer,
                    false,
                    empty(),
                    "u",
                )
                .await
                .unwrap();
        }
        scoped
            .create(
                id("p/bin"),
                InteractionModel::NonRdfSource,
                false,
                binary(b"the staged bytes"),
                "u",
            )
            .await
            .unwrap();
        scoped
            .replace(&id("kept"), None, empty(), "u", None)
            .await
            .unwrap();
    }
    tx
}

/// A repository with the containers `p` and `kept`.
async fn with_parent(dir: &std::path::Path) -> Arc<Repository> {
    let repo = Arc::new(open(dir).await);
    for path in ["p", "kept"] {
        repo.create(
            id(path),
            InteractionModel::BasicContainer,
            false,
            empty(),
            "u",
        )
        .await
        .unwrap();
    }
    repo
}

/// Everything `stage_many(n)` staged is there: each new object with one version, `kept`
/// with a second, the binary's bytes, the change log's entries, nothing staged or claimed.
async fn assert_all_committed(repo: &Repository, dir: &std::path::Path, tx: &str, n: usize) {
    // The root lags the answers by the publisher's backlog.
    repo.published().await;
    for i in 0..n {
        let path = format!("p/c{i:03}");
        assert!(repo.lookup(&id(&path)).await.unwrap().is_some(), "{path}");
        assert_eq!(versions(repo, &path), 1, "{path}");
    }
    assert_eq!(versions(repo, "kept"), 2);
    let bin = repo.get(&id("p/bin")).await.unwrap();
    let content = repo.content(&bin).await.unwrap().unwrap();
    let path = content.local_path().expect("a local root's file");
    assert_eq!(std::fs::read(path).unwrap(), b"the staged bytes");
    let mut listed = Vec::new();
    let mut after = None;
    loop {
        let page = repo.children(&id("p"), after.as_ref(), 100).await.unwrap();
        let Some(last) = page.last().cloned() else {
            break;
        };
        listed.extend(page);
        after = Some(last);
    }
    assert_eq!(listed.len(), n + 1);
    let catalog = repo.catalog();
    let created: Vec<FedoraId> = catalog
        .changes_since(0, 100_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|c| c.change.kind == ChangeKind::Create && c.change.id.as_str().contains("/p/"))
        .map(|c| c.change.id)
        .collect();
    assert_eq!(created.len(), n + 1, "one create entry per new resource");
    assert!(catalog.tx_commits().await.unwrap().is_empty());
    assert_eq!(
        catalog.tx_status(tx).await.unwrap(),
        Some(TxStatus::Ended(TxEnd::Committed))
    );
    assert!(catalog
        .tx_owners(&[id("kept").as_str(), id("p/c000").as_str()])
        .await
        .unwrap()
        .is_empty());
    assert!(uploads(dir).is_empty(), "{:?}", uploads(dir));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_of_many_pages_writes_every_object_once() {
    let dir = tempfile::tempdir().unwrap();
    let repo = with_parent(dir.path()).await;
    repo.set_transaction_commit_page(4);
    let tx = stage_many(&repo, 21).await;
    assert!(repo.lookup(&id("p/c000")).await.unwrap().is_none());
    repo.commit_transaction(&tx).await.unwrap();
    assert_all_committed(&repo, dir.path(), &tx, 21).await;
    // The objects are free again.
    repo.replace(&id("kept"), None, empty(), "u", None)
        .await
        .unwrap();
    repo.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_found_wanting_before_its_decision_leaves_nothing_and_names_the_object() {
    let dir = tempfile::tempdir().unwrap();
    let repo = with_parent(dir.path()).await;
    repo.set_transaction_commit_page(4);
    let tx = stage_many(&repo, 12).await;
    // The last page's object is created behind the kernel's back.
    let intruder = id("p/c011");
    let staged = repo
        .ocfl()
        .stage(
            intruder.as_str(),
            None,
            vec![Change {
                logical_path: "x".into(),
                content: Some(Content::Bytes(b"x".to_vec())),
            }],
            VersionInfo {
                created: "2026-01-01T00:00:00Z".into(),
                message: "outside".into(),
                user_name: "u".into(),
                user_address: "urn:u".into(),
            },
            HeadMode::NewVersion,
        )
        .unwrap();
    repo.ocfl().publish(&staged).unwrap();
    let result = repo.commit_transaction(&tx).await;
    match &result {
        Err(Error::TransactionConflict(m)) => assert!(m.contains(intruder.as_str()), "{m}"),
        other => panic!("not a conflict: {other:?}"),
    }
    repo.published().await;
    for i in 0..11 {
        let path = format!("p/c{i:03}");
        assert!(repo.lookup(&id(&path)).await.unwrap().is_none(), "{path}");
        assert_eq!(versions(&repo, &path), 0, "{path}");
    }
    assert_eq!(versions(&repo, "p/bin"), 0);
    assert_eq!(versions(&repo, "kept"), 1);
    assert_eq!(
        repo.catalog().tx_status(&tx).await.unwrap(),
        Some(TxStatus::Ended(TxEnd::Failed))
    );
    assert!(uploads(dir.path()).is_empty(), "{:?}", uploads(dir.path()));
    assert!(matches!(
        repo.commit_transaction(&tx).await,
        Err(Error::TransactionEnded(_))
    ));
    repo.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decided_commit_interrupted_is_completed_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let tx = {
        let repo = with_parent(dir.path()).await;
        let tx = stage_many(&repo, 5).await;
        // The commit stops right after its decision (the server dies).
        assert!(repo.catalog().tx_close(&tx).await.unwrap());
        assert!(repo.catalog().tx_decide(&tx).await.unwrap());
        repo.shutdown().await.unwrap();
        tx
    };
    assert!(
        !uploads(dir.path()).is_empty(),
        "the binary is staged as an upload"
    );
    let repo = Arc::new(open(dir.path()).await);
    repo.set_transaction_commit_page(2);
    assert_all_committed(&repo, dir.path(), &tx, 5).await;
    repo.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_interrupted_before_its_decision_fails_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let tx = {
        let repo = with_parent(dir.path()).await;
        let tx = stage_many(&repo, 3).await;
        assert!(repo.catalog().tx_close(&tx).await.unwrap());
        repo.shutdown().await.unwrap();
        tx
    };
    let repo = Arc::new(open(dir.path()).await);
    repo.published().await;
    assert_eq!(
        repo.catalog().tx_status(&tx).await.unwrap(),
        Some(TxStatus::Ended(TxEnd::Failed))
    );
    for path in ["p/c000", "p/c002", "p/bin"] {
        assert!(repo.lookup(&id(path)).await.unwrap().is_none(), "{path}");
        assert_eq!(versions(&repo, path), 0, "{path}");
    }
    assert_eq!(versions(&repo, "kept"), 1);
    assert!(uploads(dir.path()).is_empty(), "{:?}", uploads(dir.path()));
    // Free again.
    repo.replace(&id("kept"), None, empty(), "u", None)
        .await
        .unwrap();
    repo.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_commit_runs_at_a_time_and_a_decided_one_completes_when_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    let repo = with_parent(dir.path()).await;
    let tx = stage_many(&repo, 3).await;
    // Another request runs the commit (it holds the commit's role).
    let held = repo
        .catalog()
        .try_lead(&format!("transaction-commit:{tx}"))
        .await
        .unwrap()
        .expect("nobody holds it yet");
    assert!(matches!(
        repo.commit_transaction(&tx).await,
        Err(Error::TransactionConflict(_))
    ));
    assert!(matches!(
        repo.catalog().tx_status(&tx).await.unwrap(),
        Some(TxStatus::Open { .. })
    ));
    // It decided, then went away.
    assert!(repo.catalog().tx_close(&tx).await.unwrap());
    assert!(repo.catalog().tx_decide(&tx).await.unwrap());
    drop(held);
    // Its status says it is being committed; sent again, it completes.
    assert!(matches!(
        repo.transaction(&tx).await,
        Err(Error::TransactionEnded(m)) if m.contains("being committed")
    ));
    repo.commit_transaction(&tx).await.unwrap();
    assert_all_committed(&repo, dir.path(), &tx, 3).await;
    repo.shutdown().await.unwrap();
}

/// Nodes sharing a PostgreSQL catalog: node A decided a commit and still runs it (it holds
/// the commit's role), so node B, starting, leaves it alone; once A is gone (its catalog
/// sessions end), B completes it when the commit is sent to B.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_never_rolls_forward_a_commit_that_a_live_node_runs() {
    let Some(url) = tokio::task::spawn_blocking(|| {
        arca_testkit::postgres::Postgres::shared().map(|pg| pg.create_database())
    })
    .await
    .unwrap() else {
        return;
    };
    let open_node = |dir: std::path::PathBuf, url: String| async move {
        let ocfl = crate::local_root(&dir.join("ocfl-root"), &dir.join("staging"));
        let catalog = Arc::new(arca_catalog::PostgresCatalog::connect(&url).await.unwrap());
        Arc::new(
            Repository::open(ocfl, catalog, &dir.join("journal"), "test".into(), true)
                .await
                .unwrap(),
        )
    };
    // The nodes share the catalog and, as nodes must, the storage root.
    let shared = tempfile::tempdir().unwrap();
    let a = open_node(shared.path().to_path_buf(), url.clone()).await;
    a.create(
        id("p"),
        InteractionModel::BasicContainer,
        false,
        empty(),
        "u",
    )
    .await
    .unwrap();
    let tx = a.begin_transaction(None).await.unwrap().id;
    {
        let a = a.in_transaction(&tx).await.unwrap();
        for i in 0..3 {
            a.create(
                id(&format!("p/c{i}")),
                InteractionModel::BasicContainer,
                false,
                empty(),
                "u",
            )
            .await
            .unwrap();
        }
    }
    let role = a
        .catalog()
        .try_lead(&format!("transaction-commit:{tx}"))
        .await
        .unwrap()
        .expect("free");
    assert!(a.catalog().tx_close(&tx).await.unwrap());
    assert!(a.catalog().tx_decide(&tx).await.unwrap());

    let b_dir = tempfile::tempdir().unwrap();
    let b = {
        // B's own journal and staging, the shared root.
        let ocfl = crate::local_root(
            &shared.path().join("ocfl-root"),
            &b_dir.path().join("staging"),
        );
        let catalog = Arc::new(arca_catalog::PostgresCatalog::connect(&url).await.unwrap());
        Arc::new(
            Repository::open(
                ocfl,
                catalog,
                &b_dir.path().join("journal"),
                "test".into(),
                true,
            )
            .await
            .unwrap(),
        )
    };
    assert_eq!(
        b.catalog().tx_status(&tx).await.unwrap(),
        Some(TxStatus::Committing),
        "B started and left A's commit alone"
    );
    assert!(matches!(
        b.commit_transaction(&tx).await,
        Err(Error::TransactionConflict(_))
    ));
    assert!(b.lookup(&id("p/c0")).await.unwrap().is_none());
    // A goes away.
    drop(role);
    a.shutdown().await.unwrap();
    drop(a);
    let mut done = false;
    for _ in 0..100 {
        match b.commit_transaction(&tx).await {
            Ok(()) => {
                done = true;
                break;
            }
            // A's session may take a moment to let go of the role.
            Err(Error::TransactionConflict(_)) => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(done, "B never got the commit's role");
    b.published().await;
    for i in 0..3 {
        let path = format!("p/c{i}");
        assert!(b.lookup(&id(&path)).await.unwrap().is_some(), "{path}");
        assert_eq!(versions(&b, &path), 1, "{path}");
    }
    assert_eq!(
        b.catalog().tx_status(&tx).await.unwrap(),
        Some(TxStatus::Ended(TxEnd::Committed))
    );
    b.shutdown().await.unwrap();
}

/// A decided commit whose objects are in storage already — as the journal's replay leaves
/// a page that was journaled before a crash, while the catalog still holds what was staged
/// for it — completes without writing them again: one version each, their rows from
/// storage, one change-log entry per resource.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_written_before_an_interruption_are_not_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let repo = with_parent(dir.path()).await;
    repo.published().await;
    let tx = stage_many(&repo, 3).await;
    let catalog = repo.catalog();
    assert!(catalog.tx_close(&tx).await.unwrap());
    assert!(catalog.tx_decide(&tx).await.unwrap());
    // Every staged object written into storage behind the kernel's back, file for file.
    let staged = catalog.tx_staged(&tx, None, 100).await.unwrap();
    assert_eq!(staged.len(), 5, "3 containers, the binary, kept");
    for object in staged {
        let current = repo.ocfl().read_object(&object.object.ocfl_id).unwrap();
        let changes = object
            .files
            .into_iter()
            .map(|f| Change {
                logical_path: f.logical_path,
                content: f.content.map(|c| match c {
                    arca_catalog::TxContent::Bytes(b) => Content::Bytes(b),
                    arca_catalog::TxContent::Upload { path, digest } => Content::File {
                        path: path.into(),
                        digest,
                    },
                }),
            })
            .collect();
        let version = repo
            .ocfl()
            .stage(
                &object.object.ocfl_id,
                current.as_ref(),
                changes,
                VersionInfo {
                    created: "2026-01-01T00:00:00Z".into(),
                    message: "replayed".into(),
                    user_name: "u".into(),
                    user_address: "urn:u".into(),
                },
                HeadMode::NewVersion,
            )
            .unwrap();
        repo.ocfl().publish(&version).unwrap();
    }
    assert!(repo.lookup(&id("p/c000")).await.unwrap().is_none());
    repo.commit_transaction(&tx).await.unwrap();
    assert_all_committed(&repo, dir.path(), &tx, 3).await;
    repo.shutdown().await.unwrap();
}
