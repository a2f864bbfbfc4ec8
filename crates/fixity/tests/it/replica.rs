//! Replicas at the library level: opening (an empty store becomes a root like the
//! primary's, another root is refused), whole-root and per-object copies compared byte
//! for byte, damage in the primary never copied, and the replicator following the change
//! log through a failing replica.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arca_fixity::replica::{consumer_name, ReplicaStatus};
use arca_fixity::{Replica, Replicator};
use arca_ocfl::ObjectStorage;
use arca_storage::FsStorage;

use crate::{container, differences, id, open_repository, put_binary, tree};

fn store(dir: &Path) -> Arc<dyn ObjectStorage> {
    std::fs::create_dir_all(dir).unwrap();
    Arc::new(FsStorage::open(dir).unwrap())
}

#[track_caller]
fn refusal(result: arca_fixity::Result<Replica>) -> String {
    match result {
        Ok(_) => panic!("the replica was accepted"),
        Err(e @ arca_fixity::Error::Replica { .. }) => e.to_string(),
        Err(e) => panic!("refused for another reason: {e}"),
    }
}

/// Some resources of every kind: containers, binaries (one over the in-memory copy
/// limit, streamed), an Archival Group with parts, several versions.
async fn populate(repo: &arca_repository::Repository) {
    container(repo, "c", false).await;
    for i in 0..5 {
        put_binary(repo, &format!("c/b{i}"), format!("binary {i}").as_bytes()).await;
    }
    put_binary(repo, "c/b0", b"binary 0, second version").await;
    let large: Vec<u8> = (0..6_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    put_binary(repo, "large", &large).await;
    container(repo, "ag", true).await;
    container(repo, "ag/part", false).await;
    put_binary(repo, "ag/part/file", b"in the group").await;
    repo.published().await;
}

fn assert_same(primary: &Path, replica: &Path) {
    let (a, b) = (tree(primary), tree(replica));
    let diff = differences(&a, &b);
    assert!(diff.is_empty(), "the replica differs:\n{}", diff.join("\n"));
    assert!(a.len() > 10, "the primary holds only {} files", a.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_store_becomes_a_root_like_the_primarys_and_another_root_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let repo = open_repository(&dir.path().join("primary")).await;
    populate(&repo).await;
    let primary = repo.ocfl().store().clone();
    let root = dir.path().join("primary/ocfl-root");

    let fresh = dir.path().join("fresh");
    Replica::open("fresh", store(&fresh), primary.as_ref()).unwrap();
    for name in arca_ocfl::ROOT_FILES {
        assert_eq!(
            std::fs::read(fresh.join(name)).unwrap(),
            std::fs::read(root.join(name)).unwrap(),
            "{name}"
        );
    }
    // Opened again: the same root, accepted.
    Replica::open("fresh", store(&fresh), primary.as_ref()).unwrap();

    // Another layout.
    let other_layout = dir.path().join("other-layout");
    Replica::open("o", store(&other_layout), primary.as_ref()).unwrap();
    std::fs::write(
        other_layout.join("extensions/0004-hashed-n-tuple-storage-layout/config.json"),
        br#"{"digestAlgorithm":"sha256","tupleSize":2,"numberOfTuples":2,"shortObjectRoot":false,"extensionName":"0004-hashed-n-tuple-storage-layout"}"#,
    )
    .unwrap();
    let message = refusal(Replica::open("o", store(&other_layout), primary.as_ref()));
    assert!(
        message.contains("config.json differs") && message.contains("another layout"),
        "{message}"
    );

    // Another OCFL version's declaration.
    let other_version = dir.path().join("other-version");
    std::fs::create_dir_all(&other_version).unwrap();
    std::fs::write(other_version.join("0=ocfl_1.0"), "ocfl_1.0\n").unwrap();
    let message = refusal(Replica::open("v", store(&other_version), primary.as_ref()));
    assert!(message.contains("0=ocfl_1.0"), "{message}");

    // Files, but no root.
    let stray = dir.path().join("stray");
    std::fs::create_dir_all(stray.join("photos")).unwrap();
    std::fs::write(stray.join("photos/cat.jpg"), "meow").unwrap();
    let message = refusal(Replica::open("s", store(&stray), primary.as_ref()));
    assert!(message.contains("no OCFL storage root"), "{message}");
    assert!(
        !stray.join("0=ocfl_1.1").exists(),
        "a refused store was written to"
    );

    // Another repository's root, of the same layout.
    let other = open_repository(&dir.path().join("other")).await;
    container(&other, "elsewhere", false).await;
    put_binary(&other, "elsewhere/x", b"x").await;
    other.published().await;
    other.shutdown().await.unwrap();
    let other_root = dir.path().join("other/ocfl-root");
    let message = refusal(Replica::open("r", store(&other_root), primary.as_ref()));
    assert!(message.contains("another repository's root"), "{message}");
    assert!(message.starts_with("replica r: "), "{message}");
    repo.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_root_sync_copies_every_file_and_removes_what_the_primary_lost() {
    let dir = tempfile::tempdir().unwrap();
    let repo = open_repository(&dir.path().join("primary")).await;
    populate(&repo).await;
    let primary = repo.ocfl().store().clone();
    let root = dir.path().join("primary/ocfl-root");
    let copy = dir.path().join("replica");
    let replica = Replica::open("r", store(&copy), primary.as_ref()).unwrap();
    let stop = AtomicBool::new(false);
    let done = std::sync::Mutex::new(0);
    let stats = replica
        .sync_root(primary.as_ref(), &stop, &|n| {
            let mut d = done.lock().unwrap();
            *d = (*d).max(n);
        })
        .unwrap();
    assert_same(&root, &copy);
    assert!(stats.objects >= 8, "{stats:?}");
    assert_eq!(*done.lock().unwrap(), stats.objects);
    assert!(stats.bytes > 6_000_000, "{stats:?}");
    assert_eq!(stats.skipped, 0);
    assert_eq!(stats.removed, 0);

    // Nothing changed: nothing copied.
    let again = replica.sync_root(primary.as_ref(), &stop, &|_| {}).unwrap();
    assert_eq!(
        (again.files, again.bytes, again.removed),
        (0, 0, 0),
        "{again:?}"
    );

    // A new version, a purge, a new object, a part of the group purged.
    put_binary(&repo, "c/b1", b"binary 1, second version").await;
    repo.delete(&id("c/b2"), "test", None).await.unwrap();
    repo.purge(&id("c/b2"), "test").await.unwrap();
    repo.delete(&id("ag/part/file"), "test", None)
        .await
        .unwrap();
    repo.purge(&id("ag/part/file"), "test").await.unwrap();
    put_binary(&repo, "c/new", b"new").await;
    repo.published().await;
    let b2 = repo.ocfl().object_key("info:fedora/c/b2");
    assert!(copy.join(&b2).exists());
    let stats = replica.sync_root(primary.as_ref(), &stop, &|_| {}).unwrap();
    assert_same(&root, &copy);
    assert!(
        !copy.join(&b2).exists(),
        "the purged object is still in the replica"
    );
    assert!(stats.removed >= 1, "{stats:?}");

    // A stop is honoured.
    let stopped = AtomicBool::new(true);
    assert!(matches!(
        replica.sync_root(primary.as_ref(), &stopped, &|_| {}),
        Err(arca_fixity::Error::Stopped)
    ));
    repo.shutdown().await.unwrap();
}

/// The content file of the latest version of the binary `path`, in `root`.
fn latest_content(
    repo: &arca_repository::Repository,
    root: &Path,
    path: &str,
) -> std::path::PathBuf {
    let prefix = repo.ocfl().object_key(&format!("info:fedora/{path}"));
    let object = root.join(&prefix);
    let inventory: serde_json::Value =
        serde_json::from_slice(&std::fs::read(object.join("inventory.json")).unwrap()).unwrap();
    let head = inventory["head"].as_str().unwrap();
    let content = object.join(head).join("content");
    let file = std::fs::read_dir(&content)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_file() && !p.to_string_lossy().contains("fcr-"))
        .expect("a content file");
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damage_in_the_primary_never_reaches_the_replica() {
    let dir = tempfile::tempdir().unwrap();
    let repo = open_repository(&dir.path().join("primary")).await;
    populate(&repo).await;
    let primary = repo.ocfl().store().clone();
    let root = dir.path().join("primary/ocfl-root");
    let copy = dir.path().join("replica");
    let replica = Replica::open("r", store(&copy), primary.as_ref()).unwrap();
    replica
        .sync_root(primary.as_ref(), &AtomicBool::new(false), &|_| {})
        .unwrap();

    // A file the replica holds already, truncated in the primary: the replica keeps its
    // good copy.
    let good = latest_content(&repo, &root, "c/b3");
    let rel = good.strip_prefix(&root).unwrap().to_path_buf();
    let bytes = std::fs::read(&good).unwrap();
    std::fs::remove_file(&good).unwrap();
    std::fs::write(&good, &bytes[..bytes.len() / 2]).unwrap();
    let prefix = repo.ocfl().object_key("info:fedora/c/b3");
    let stats = replica.sync_object(primary.as_ref(), &prefix).unwrap();
    assert_eq!(stats.skipped, 1, "{stats:?}");
    assert_eq!(std::fs::read(copy.join(&rel)).unwrap(), bytes);

    // A new version whose content is damaged before it is copied: the replica keeps the
    // object's previous version whole.
    put_binary(&repo, "c/b4", b"binary 4, second version").await;
    repo.published().await;
    let prefix = repo.ocfl().object_key("info:fedora/c/b4");
    let damaged = latest_content(&repo, &root, "c/b4");
    let mut bytes = std::fs::read(&damaged).unwrap();
    bytes[3] ^= 0x10;
    std::fs::remove_file(&damaged).unwrap();
    std::fs::write(&damaged, &bytes).unwrap();
    let stats = replica.sync_object(primary.as_ref(), &prefix).unwrap();
    assert_eq!(stats.skipped, 1, "{stats:?}");
    let rel = damaged.strip_prefix(&root).unwrap();
    assert!(!copy.join(rel).exists(), "the damaged file was copied");
    assert!(
        !copy.join(&prefix).join("v2").exists(),
        "a part of the version with the damaged file was left in the replica"
    );
    let b4_before = std::fs::read(copy.join(&prefix).join("inventory.json")).unwrap();
    assert!(
        String::from_utf8_lossy(&b4_before).contains("\"head\":\"v1\""),
        "the replica's inventory moved to a version it cannot hold"
    );

    // The same for a large file (streamed through a temporary file).
    let large: Vec<u8> = (0..5_000_000u32).map(|i| (i * 13 % 251) as u8).collect();
    put_binary(&repo, "large", &large).await;
    repo.published().await;
    let prefix = repo.ocfl().object_key("info:fedora/large");
    let damaged = latest_content(&repo, &root, "large");
    let mut bytes = std::fs::read(&damaged).unwrap();
    bytes[4_000_000] ^= 0x01;
    std::fs::remove_file(&damaged).unwrap();
    std::fs::write(&damaged, &bytes).unwrap();
    let stats = replica.sync_object(primary.as_ref(), &prefix).unwrap();
    assert_eq!(stats.skipped, 1, "{stats:?}");
    assert!(!copy.join(&prefix).join("v2").exists(), "{stats:?}");
    assert_eq!(
        crate::tree(&copy.join(&prefix))
            .keys()
            .filter(|k| k.contains("arca-tmp"))
            .count(),
        0
    );

    // An inventory that does not match its sidecar is not copied either.
    let prefix = repo.ocfl().object_key("info:fedora/c/b1");
    let inventory = root.join(&prefix).join("inventory.json");
    let mut bytes = std::fs::read(&inventory).unwrap();
    std::fs::remove_file(&inventory).unwrap();
    let at = bytes.len() - 5;
    bytes[at] ^= 0x01;
    std::fs::write(&inventory, &bytes).unwrap();
    let good_inventory = std::fs::read(copy.join(&prefix).join("inventory.json")).unwrap();
    let stats = replica.sync_object(primary.as_ref(), &prefix).unwrap();
    assert_eq!(stats.skipped, 1, "{stats:?}");
    assert_eq!(
        std::fs::read(copy.join(&prefix).join("inventory.json")).unwrap(),
        good_inventory
    );
    repo.shutdown().await.unwrap();
}

/// Waits (a minute at most) until `done` holds of the replicator's only status.
async fn wait_for(
    replicator: &Replicator,
    what: &str,
    done: impl Fn(&ReplicaStatus) -> bool,
) -> ReplicaStatus {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = replicator.status().pop().unwrap();
        if done(&status) {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "the replica never got to {what}: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replicator_follows_every_change_through_a_failing_replica() {
    let dir = tempfile::tempdir().unwrap();
    let repo = open_repository(&dir.path().join("primary")).await;
    populate(&repo).await;
    let root = dir.path().join("primary/ocfl-root");
    let copy = dir.path().join("replica");
    let replica = Arc::new(Replica::open("r", store(&copy), repo.ocfl().store().as_ref()).unwrap());
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let (replicator, tasks) = Replicator::start(repo.clone(), vec![replica], stopping);

    // A new replica: the whole root first, then the changes that follow.
    wait_for(&replicator, "lag 0", |s| s.lag == 0 && s.position > 0).await;
    put_binary(&repo, "c/b1", b"binary 1, second version").await;
    container(&repo, "c/d", false).await;
    let status = wait_for(&replicator, "lag 0", |s| s.lag == 0).await;
    repo.published().await;
    assert_same(&root, &copy);
    assert!(status.objects_copied >= 8, "{status:?}");
    assert!(status.copying);
    assert_eq!(status.error, None);
    // The position is recorded once the replica has caught up (right after the status
    // says so).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let recorded = repo
            .catalog()
            .consumer_position(&consumer_name("r"))
            .await
            .unwrap();
        if recorded == Some(status.position) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "recorded {recorded:?}, {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The replica fails (a file where the next object's directory must go): writes go
    // on, the status says why, and the replica catches up once it is fixed.
    let prefix = repo.ocfl().object_key("info:fedora/blocked");
    let top = prefix.split('/').next().unwrap();
    assert!(!copy.join(top).exists(), "pick another id: {top} is taken");
    std::fs::write(copy.join(top), "in the way").unwrap();
    put_binary(&repo, "blocked", b"waits for the replica").await;
    let failing = wait_for(&replicator, "an error", |s| s.error.is_some()).await;
    assert!(failing.lag > 0, "{failing:?}");
    for i in 0..3 {
        put_binary(
            &repo,
            &format!("c/more{i}"),
            b"written while the replica fails",
        )
        .await;
    }
    let behind = replicator.status().pop().unwrap();
    assert!(behind.lag >= failing.lag + 3, "{behind:?}");
    std::fs::remove_file(copy.join(top)).unwrap();
    let back = wait_for(&replicator, "lag 0 without error", |s| {
        s.lag == 0 && s.error.is_none()
    })
    .await;
    repo.published().await;
    assert_same(&root, &copy);
    assert!(
        copy.join(&prefix).join("inventory.json").exists(),
        "{back:?}"
    );

    // A purge removes the object from the replica.
    repo.delete(&id("c/b3"), "test", None).await.unwrap();
    repo.purge(&id("c/b3"), "test").await.unwrap();
    wait_for(&replicator, "lag 0", |s| s.lag == 0).await;
    assert!(!copy
        .join(repo.ocfl().object_key("info:fedora/c/b3"))
        .exists());
    repo.published().await;
    assert_same(&root, &copy);

    stop.send(true).unwrap();
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(10), t)
            .await
            .expect("the replicator stops")
            .unwrap();
    }
    repo.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutable_head_and_an_object_created_again_are_copied_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let repo = open_repository(&dir.path().join("primary")).await;
    populate(&repo).await;
    let primary = repo.ocfl().store().clone();
    let root = dir.path().join("primary/ocfl-root");
    let copy = dir.path().join("replica");
    let replica = Replica::open("r", store(&copy), primary.as_ref()).unwrap();
    let stop = AtomicBool::new(false);
    let sync = || replica.sync_root(primary.as_ref(), &stop, &|_| {}).unwrap();
    sync();

    // Revisions of a mutable HEAD (auto-versioning off), then the HEAD committed.
    repo.set_auto_versioning(false);
    put_binary(&repo, "c/b1", b"revision 1").await;
    put_binary(&repo, "c/b1", b"revision 2 is longer").await;
    repo.published().await;
    let head = root
        .join(repo.ocfl().object_key("info:fedora/c/b1"))
        .join("extensions/0005-mutable-head/head/inventory.json");
    assert!(head.exists(), "the test needs a mutable HEAD");
    sync();
    assert_same(&root, &copy);
    put_binary(&repo, "c/b1", b"revision 3").await;
    repo.published().await;
    sync();
    assert_same(&root, &copy);
    repo.create_version(&id("c/b1"), "test").await.unwrap();
    repo.published().await;
    assert!(!head.exists(), "the HEAD was not committed");
    let stats = sync();
    assert_same(&root, &copy);
    assert!(stats.removed > 0, "{stats:?}");
    repo.set_auto_versioning(true);

    // Purged and created again at the same id, with content of the same size: every file
    // of the new object is copied, none of the old one stays.
    repo.delete(&id("c/b0"), "test", None).await.unwrap();
    repo.purge(&id("c/b0"), "test").await.unwrap();
    put_binary(&repo, "c/b0", b"binary 0, second version").await;
    repo.published().await;
    let prefix = repo.ocfl().object_key("info:fedora/c/b0");
    let stats = replica.sync_object(primary.as_ref(), &prefix).unwrap();
    assert_same(&root, &copy);
    assert!(stats.files >= 3, "{stats:?}");
    repo.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_copier_per_replica_and_a_standby_takes_over() {
    let dir = tempfile::tempdir().unwrap();
    let repo = open_repository(&dir.path().join("primary")).await;
    container(&repo, "n", false).await;
    let root = dir.path().join("primary/ocfl-root");
    let copy = dir.path().join("replica");
    let open = || Arc::new(Replica::open("r", store(&copy), repo.ocfl().store().as_ref()).unwrap());
    // Two copiers of one replica over one catalog, as two nodes sharing it: one copies.
    let (stop_a, stopping_a) = tokio::sync::watch::channel(false);
    let (a, tasks_a) = Replicator::start(repo.clone(), vec![open()], stopping_a);
    wait_for(&a, "copying", |s| s.copying && s.lag == 0 && s.position > 0).await;
    let (stop_b, stopping_b) = tokio::sync::watch::channel(false);
    let (b, tasks_b) = Replicator::start(repo.clone(), vec![open()], stopping_b);
    put_binary(&repo, "n/one", b"one").await;
    wait_for(&a, "lag 0", |s| s.lag == 0).await;
    let standby = wait_for(&b, "the leader's position", |s| s.lag == 0).await;
    assert!(!standby.copying, "two copiers of one replica: {standby:?}");
    assert_eq!(standby.objects_copied, 0, "{standby:?}");

    // The leader stops: the standby takes the role and copies what follows.
    stop_a.send(true).unwrap();
    for t in tasks_a {
        t.await.unwrap();
    }
    put_binary(&repo, "n/two", b"two").await;
    let took_over = wait_for(&b, "copying and lag 0", |s| s.copying && s.lag == 0).await;
    assert!(took_over.objects_copied >= 1, "{took_over:?}");
    repo.published().await;
    assert_same_small(&root, &copy);
    stop_b.send(true).unwrap();
    for t in tasks_b {
        t.await.unwrap();
    }
    repo.shutdown().await.unwrap();
}

fn assert_same_small(primary: &Path, replica: &Path) {
    let diff = differences(&tree(primary), &tree(replica));
    assert!(diff.is_empty(), "the replica differs:\n{}", diff.join("\n"));
}
