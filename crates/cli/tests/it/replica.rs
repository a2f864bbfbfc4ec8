//! Replicas with the real `arca`: a second directory (`[[replica]] path`) receives every
//! acknowledged version behind the writes, byte for byte, and stays a root ocfl-py
//! validates; a SIGKILL with writes in flight loses no copy (the change log is the queue);
//! a replica holding another repository's root is refused at start; a replica that fails
//! never blocks writes and catches up once fixed; `arca replica sync` brings a stale
//! replica up to date (a purge removes the object) and records its position.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};

use crate::common;
use crate::common::{object_dir, scrub_env, Arca, Http};

/// A config file naming one replica, `second`, in `replica`.
fn config_with_replica(dir: &Path, replica: &Path) -> PathBuf {
    let path = dir.join("arca.toml");
    std::fs::write(
        &path,
        format!(
            "[[replica]]\nname = \"second\"\npath = \"{}\"\n",
            replica.display()
        ),
    )
    .unwrap();
    path
}

fn serve(data: &Path, config: &Path, env: &[(&str, &str)]) -> Arca {
    let mut env = env.to_vec();
    let config = config.to_string_lossy().to_string();
    env.push(("ARCA_CONFIG", &config));
    Arca::serve_with(data, &env)
}

/// Every file below `dir` with its bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    common::relative_files(dir)
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(dir.join(&rel)).unwrap_or_default();
            (rel, bytes)
        })
        .collect()
}

/// Waits (two minutes at most) until the replica holds exactly the primary's files, and the
/// primary more than a root's own few (its writes are published behind their answers: a
/// loaded machine may show both roots alike while the primary's objects are still on the
/// way).
fn wait_until_same(primary: &Path, replica: &Path, log: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (a, b) = (tree(primary), tree(replica));
        if a == b && a.len() > 10 {
            return;
        }
        if Instant::now() > deadline {
            let only_a: Vec<_> = a.keys().filter(|k| !b.contains_key(*k)).collect();
            let only_b: Vec<_> = b.keys().filter(|k| !a.contains_key(*k)).collect();
            let differ: Vec<_> = a
                .iter()
                .filter(|(k, v)| b.get(*k).is_some_and(|w| w != *v))
                .map(|(k, _)| k)
                .collect();
            panic!(
                "the replica never caught up (the primary holds {} files, the replica {}): only in the primary {only_a:?}, only in the replica {only_b:?}, different {differ:?}\n{}",
                a.len(),
                b.len(),
                log()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

async fn put(http: &Http, arca: &Arca, path: &str, body: Vec<u8>) -> StatusCode {
    let (status, _) = try_put(http, &arca.url(path), body).await;
    status
}

async fn try_put(http: &Http, url: &str, body: Vec<u8>) -> (StatusCode, String) {
    let r = http
        .request(
            Method::PUT,
            url,
            &[
                ("content-type", "application/octet-stream"),
                (
                    "link",
                    "<http://www.w3.org/ns/ldp#NonRDFSource>; rel=\"type\"",
                ),
            ],
            body,
        )
        .await;
    (r.status, r.text())
}

async fn container(http: &Http, arca: &Arca, path: &str) {
    let r = http
        .request(
            Method::PUT,
            &arca.url(path),
            &[("content-type", "text/turtle")],
            "<> <http://purl.org/dc/terms/title> \"t\" .",
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_directory_receives_every_acknowledged_version() {
    let dir = tempfile::tempdir().unwrap();
    let (data, replica) = (dir.path().join("data"), dir.path().join("replica"));
    let config = config_with_replica(dir.path(), &replica);
    let arca = serve(&data, &config, &[]);
    let http = Http::new();
    container(&http, &arca, "/r").await;
    for i in 0..8 {
        let body = format!("binary {i}").into_bytes();
        assert_eq!(
            put(&http, &arca, &format!("/r/b{i}"), body).await,
            StatusCode::CREATED
        );
    }
    // New versions of some, a large one (streamed through a temporary file), an
    // Archival Group with a part.
    for i in 0..3 {
        let body = format!("binary {i}, version 2").into_bytes();
        assert_eq!(
            put(&http, &arca, &format!("/r/b{i}"), body).await,
            StatusCode::NO_CONTENT
        );
    }
    let large: Vec<u8> = (0..9_000_000u32).map(|i| (i % 253) as u8).collect();
    assert_eq!(
        put(&http, &arca, "/large", large).await,
        StatusCode::CREATED
    );
    let r = http
        .request(
            Method::PUT,
            &arca.url("/group"),
            &[
                ("content-type", "text/turtle"),
                (
                    "link",
                    "<http://fedora.info/definitions/v4/repository#ArchivalGroup>; rel=\"type\"",
                ),
            ],
            "",
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    assert_eq!(
        put(&http, &arca, "/group/part", b"a part".to_vec()).await,
        StatusCode::CREATED
    );
    let root = data.join("ocfl-root");
    wait_until_same(&root, &replica, || arca.log());
    assert!(
        object_dir(&replica, "info:fedora/large")
            .join("v1/content")
            .exists(),
        "the large binary is not in the replica"
    );
    arca.stop();
    common::validate_with_ocfl_py(&replica);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_with_writes_in_flight_loses_no_copy() {
    let dir = tempfile::tempdir().unwrap();
    let (data, replica) = (dir.path().join("data"), dir.path().join("replica"));
    let config = config_with_replica(dir.path(), &replica);
    // Publishing held back, so that the replica is provably behind at the kill.
    let arca = serve(&data, &config, &[("ARCA_TEST_PUBLISH_DELAY_MS", "400")]);
    let http = Http::new();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (http, base, stop, acked) =
                (http.clone(), arca.base.clone(), stop.clone(), acked.clone());
            tokio::spawn(async move {
                for i in 0.. {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        return;
                    }
                    let path = format!("/w{w}-{i}");
                    let body = format!("writer {w}, write {i}").into_bytes();
                    let Ok(r) = http
                        .try_request(
                            Method::PUT,
                            &format!("{base}{path}"),
                            &[("content-type", "application/octet-stream")],
                            body,
                        )
                        .await
                    else {
                        return;
                    };
                    if r.status == StatusCode::CREATED {
                        acked.lock().unwrap().push(format!("info:fedora{path}"));
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.lock().unwrap().len() < 24 {
        assert!(Instant::now() < deadline, "too few writes acknowledged");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let log = arca.kill_and_join(&stop, writers).await;
    let acked = acked.lock().unwrap().clone();
    let missing = acked
        .iter()
        .filter(|id| !object_dir(&replica, id).join("inventory.json").exists())
        .count();
    assert!(
        missing > 0,
        "every acknowledged write was in the replica at the kill; the test needs it behind\n{log}"
    );

    let arca = serve(&data, &config, &[]);
    let root = data.join("ocfl-root");
    wait_until_same(&root, &replica, || arca.log());
    for id in &acked {
        assert!(
            object_dir(&replica, id).join("inventory.json").exists(),
            "{id} was acknowledged and never reached the replica"
        );
    }
    eprintln!(
        "replica crash test: {} acknowledged, {missing} not in the replica at the kill; all there after the restart",
        acked.len()
    );
    arca.stop();
    common::validate_with_ocfl_py(&replica);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_holding_another_repositorys_root_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other");
    let arca = Arca::serve(&other);
    let http = Http::new();
    container(&http, &arca, "/elsewhere").await;
    container(&http, &arca, "/elsewhere/x").await;
    arca.stop();
    let data = dir.path().join("data");
    let first = Arca::serve(&data);
    container(&http, &first, "/here").await;
    first.stop();

    let config = config_with_replica(dir.path(), &other.join("ocfl-root"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arca"));
    cmd.arg("serve")
        .arg("--listen")
        .arg("127.0.0.1:0")
        .arg("--data")
        .arg(&data);
    scrub_env(&mut cmd);
    cmd.env("ARCA_CONFIG", &config);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "arca started:\n{stderr}");
    assert!(
        stderr.contains("replica second:") && stderr.contains("another repository's root"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_replica_does_not_block_writes_and_catches_up() {
    let dir = tempfile::tempdir().unwrap();
    let (data, replica) = (dir.path().join("data"), dir.path().join("replica"));
    let config = config_with_replica(dir.path(), &replica);
    let arca = serve(&data, &config, &[]);
    let http = Http::new();
    container(&http, &arca, "/f").await;
    let root = data.join("ocfl-root");
    wait_until_same(&root, &replica, || arca.log());

    // A file where the next object's first directory must go.
    let blocked = object_dir(&replica, "info:fedora/f/blocked");
    let top = replica.join(
        blocked
            .strip_prefix(&replica)
            .unwrap()
            .components()
            .next()
            .unwrap(),
    );
    assert!(!top.exists(), "pick another id");
    std::fs::write(&top, "in the way").unwrap();
    assert_eq!(
        put(&http, &arca, "/f/blocked", b"waits".to_vec()).await,
        StatusCode::CREATED
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while !arca.log().contains("cannot copy to the replica") {
        assert!(
            Instant::now() < deadline,
            "no failure logged:\n{}",
            arca.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for i in 0..5 {
        assert_eq!(
            put(&http, &arca, &format!("/f/more{i}"), b"meanwhile".to_vec()).await,
            StatusCode::CREATED,
            "a write waited for the replica"
        );
    }
    std::fs::remove_file(&top).unwrap();
    wait_until_same(&root, &replica, || arca.log());
    // The copier says so right after its copy, which the comparison may see first.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !arca.log().contains("the replica is back") {
        assert!(Instant::now() < deadline, "not logged:\n{}", arca.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    arca.stop();
}

fn replica_command(args: &[&str], data: &Path, config: &Path) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arca"));
    cmd.arg("replica").args(args).arg("--data").arg(data);
    scrub_env(&mut cmd);
    cmd.env("ARCA_CONFIG", config);
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_sync_brings_a_new_or_stale_replica_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let (data, replica) = (dir.path().join("data"), dir.path().join("replica"));
    let config = config_with_replica(dir.path(), &replica);
    let root = data.join("ocfl-root");
    let http = Http::new();

    // Written without the replica configured.
    let arca = Arca::serve(&data);
    container(&http, &arca, "/s").await;
    for i in 0..5 {
        put(
            &http,
            &arca,
            &format!("/s/b{i}"),
            format!("{i}").into_bytes(),
        )
        .await;
    }
    arca.stop();
    let (ok, out) = replica_command(&["sync"], &data, &config);
    assert!(ok, "{out}");
    assert!(out.contains("replica second:"), "{out}");
    assert_eq!(tree(&root), tree(&replica));

    // Stale: a new version and a purge made without the replica.
    let arca = Arca::serve(&data);
    put(&http, &arca, "/s/b0", b"second version".to_vec()).await;
    let r = http
        .request(Method::DELETE, &arca.url("/s/b1"), &[], "")
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    let r = http
        .request(Method::DELETE, &arca.url("/s/b1/fcr:tombstone"), &[], "")
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    arca.stop();
    assert!(object_dir(&replica, "info:fedora/s/b1").exists());
    let (ok, out) = replica_command(&["sync", "--name", "second"], &data, &config);
    assert!(ok, "{out}");
    assert_eq!(tree(&root), tree(&replica));
    assert!(!object_dir(&replica, "info:fedora/s/b1").exists());

    // An unknown name is refused.
    let (ok, out) = replica_command(&["sync", "--name", "third"], &data, &config);
    assert!(
        !ok && out.contains("no replica is called \"third\""),
        "{out}"
    );

    // The position is recorded: a server started now copies only what changes.
    let arca = serve(&data, &config, &[]);
    put(&http, &arca, "/s/after", b"after".to_vec()).await;
    wait_until_same(&root, &replica, || arca.log());
    assert!(
        !arca.log().contains("copying the whole root first"),
        "{}",
        arca.log()
    );
    arca.stop();
    common::validate_with_ocfl_py(&replica);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_verify_repairs_a_damaged_replica_from_the_primary() {
    let dir = tempfile::tempdir().unwrap();
    let (data, replica) = (dir.path().join("data"), dir.path().join("replica"));
    let config = config_with_replica(dir.path(), &replica);
    let arca = serve(&data, &config, &[]);
    let http = Http::new();
    put(&http, &arca, "/v", b"the good bytes".to_vec()).await;
    wait_until_same(&data.join("ocfl-root"), &replica, || arca.log());
    arca.stop();
    let content = object_dir(&replica, "info:fedora/v").join("v1/content/v");
    let good = std::fs::read(&content).unwrap();
    std::fs::write(&content, b"the bad bytes!").unwrap();
    let (ok, out) = replica_command(&["verify"], &data, &config);
    assert!(ok, "{out}");
    assert_eq!(std::fs::read(&content).unwrap(), good);
    assert_eq!(tree(&data.join("ocfl-root")), tree(&replica));
}
