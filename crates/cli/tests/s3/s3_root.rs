//! The real `arca` binary with its OCFL root in a real S3 service (a private MinIO on
//! 127.0.0.1, `arca_testkit::s3`): everything a user stores lands in the bucket as Fedora 6
//! lays a root out (ocfl-py validates a copy of it), a server with a fresh data directory
//! rebuilds everything from the bucket alone, a server killed in the middle of writes
//! leaves every acknowledged write whole and nothing half-written after recovery, an outage
//! of the store is a 503 with `Retry-After` that changes nothing, and bad settings fail at
//! start. `NOT RUN` without MinIO unless `ARCA_REQUIRE_S3=1`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common;
use crate::common::{download, s3_store as store, validate_with_ocfl_py, Arca, Http};
use arca_storage::{ObjectStorage, S3Credentials, S3Settings, S3Storage};
use arca_testkit::s3::{Minio, BUCKET, REGION, ROOT_PASSWORD, ROOT_USER};

const TURTLE: (&str, &str) = ("content-type", "text/turtle");
const TEXT: (&str, &str) = ("content-type", "text/plain");
const ARCHIVAL_GROUP: (&str, &str) = (
    "link",
    "<http://fedora.info/definitions/v4/repository#ArchivalGroup>;rel=\"type\"",
);

/// The environment that puts a server's root in `minio` under `prefix`.
fn s3_env(minio: &Minio, prefix: &str) -> Vec<(String, String)> {
    vec![
        ("ARCA_S3_BUCKET".into(), BUCKET.into()),
        ("ARCA_S3_ENDPOINT".into(), minio.endpoint()),
        ("ARCA_S3_PREFIX".into(), prefix.into()),
        ("ARCA_S3_REGION".into(), REGION.into()),
        ("AWS_ACCESS_KEY_ID".into(), ROOT_USER.into()),
        ("AWS_SECRET_ACCESS_KEY".into(), ROOT_PASSWORD.into()),
    ]
}

fn serve(data: &Path, env: &[(String, String)]) -> Arca {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Arca::serve_with(data, &env)
}

async fn put(
    http: &Http,
    arca: &Arca,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> arca_testkit::Reply {
    http.request(hyper::Method::PUT, &arca.url(path), headers, body)
        .await
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Deterministic bytes that do not repeat with any short period.
fn pattern(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 56) as u8
        })
        .collect()
}

/// What a reader sees of a few resources: status, and the body's digest (RDF without the
/// lines that name the server, which differs between two servers).
async fn snapshot(http: &Http, arca: &Arca, paths: &[&str]) -> BTreeMap<String, (u16, String)> {
    let mut out = BTreeMap::new();
    for p in paths {
        let r = http
            .request(
                hyper::Method::GET,
                &arca.url(p),
                &[("accept", "application/n-triples")],
                "",
            )
            .await;
        let body = String::from_utf8_lossy(&r.body).replace(&arca.base, "BASE");
        let mut lines: Vec<&str> = body.lines().collect();
        lines.sort_unstable();
        out.insert(
            p.to_string(),
            (r.status.as_u16(), sha256(lines.join("\n").as_bytes())),
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_stored_lands_in_the_bucket_as_a_valid_root_and_rebuilds_from_it() {
    let Some(minio) = Minio::start() else {
        return;
    };
    let env = s3_env(&minio, "repo");
    let dir = tempfile::tempdir().unwrap();
    let arca = serve(&dir.path().join("data"), &env);
    let http = Http::new();
    let ok = |r: &arca_testkit::Reply, what: &str| {
        assert!(r.status.is_success(), "{what}: {} {}", r.status, r.text());
    };

    ok(
        &put(
            &http,
            &arca,
            "/c",
            &[TURTLE],
            b"<> <http://purl.org/dc/terms/title> \"one\" .".to_vec(),
        )
        .await,
        "container",
    );
    ok(
        &put(&http, &arca, "/c/small", &[TEXT], b"small bytes".to_vec()).await,
        "small binary",
    );
    // Larger than one 8 MiB part: a multipart upload.
    let big = pattern(12 << 20);
    ok(
        &put(
            &http,
            &arca,
            "/c/big",
            &[("content-type", "application/octet-stream")],
            big.clone(),
        )
        .await,
        "big binary",
    );
    let patch = http
        .request(
            hyper::Method::PATCH,
            &arca.url("/c"),
            &[("content-type", "application/sparql-update")],
            "PREFIX dc: <http://purl.org/dc/terms/> DELETE { <> dc:title \"one\" } INSERT { <> dc:title \"two\" } WHERE {}",
        )
        .await;
    ok(&patch, "PATCH");
    // Mementos are named by the second: the next one in a later second.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    ok(
        &http
            .request(hyper::Method::POST, &arca.url("/c/fcr:versions"), &[], "")
            .await,
        "version",
    );
    ok(
        &put(&http, &arca, "/c/gone", &[TEXT], b"to be deleted".to_vec()).await,
        "binary to delete",
    );
    ok(
        &http
            .request(hyper::Method::DELETE, &arca.url("/c/gone"), &[], "")
            .await,
        "delete",
    );
    ok(
        &http
            .request(
                hyper::Method::DELETE,
                &arca.url("/c/gone/fcr:tombstone"),
                &[],
                "",
            )
            .await,
        "purge",
    );
    ok(
        &put(&http, &arca, "/ag", &[TURTLE, ARCHIVAL_GROUP], Vec::new()).await,
        "archival group",
    );
    ok(
        &put(
            &http,
            &arca,
            "/ag/part",
            &[TEXT],
            b"part of the group".to_vec(),
        )
        .await,
        "part",
    );
    ok(
        &put(
            &http,
            &arca,
            "/ag/sub",
            &[TURTLE],
            b"<> <http://purl.org/dc/terms/title> \"sub\" .".to_vec(),
        )
        .await,
        "sub container",
    );
    // A transaction with a binary: staged in the bucket until the commit.
    let tx = http
        .request(hyper::Method::POST, &arca.url("/fcr:tx"), &[], "")
        .await;
    assert_eq!(tx.status.as_u16(), 201, "{}", tx.text());
    let tx_url = tx.header("location").unwrap().to_string();
    let atomic = ("atomic-id", tx_url.as_str());
    ok(
        &put(&http, &arca, "/t", &[TURTLE, atomic], Vec::new()).await,
        "tx container",
    );
    ok(
        &put(
            &http,
            &arca,
            "/t/bin",
            &[TEXT, atomic],
            b"in a transaction".to_vec(),
        )
        .await,
        "tx binary",
    );
    let staged_meanwhile = store(&minio, "repo")
        .list("extensions/arca-transactions")
        .unwrap();
    assert_eq!(
        staged_meanwhile.len(),
        1,
        "the staged upload waits in the bucket: {staged_meanwhile:?}"
    );
    assert_eq!(
        http.request(hyper::Method::GET, &arca.url("/t/bin"), &[], "")
            .await
            .status
            .as_u16(),
        404
    );
    ok(
        &http.request(hyper::Method::PUT, &tx_url, &[], "").await,
        "commit",
    );

    let r = http
        .request(hyper::Method::GET, &arca.url("/c/big"), &[], "")
        .await;
    assert_eq!(r.status.as_u16(), 200);
    assert_eq!(
        sha256(&r.body),
        sha256(&big),
        "the big binary streams back from S3"
    );
    let r = http
        .request(
            hyper::Method::GET,
            &arca.url("/c/big"),
            &[("range", "bytes=9000000-9000009")],
            "",
        )
        .await;
    assert_eq!(r.status.as_u16(), 206);
    assert_eq!(&r.body[..], &big[9_000_000..9_000_010]);
    let fixity = http
        .request(hyper::Method::GET, &arca.url("/c/big/fcr:fixity"), &[], "")
        .await;
    assert!(
        fixity.text().contains("SUCCESS"),
        "fixity from S3: {}",
        fixity.text()
    );
    let timemap = http
        .request(
            hyper::Method::GET,
            &arca.url("/c/fcr:versions"),
            &[("accept", "application/link-format")],
            "",
        )
        .await;
    assert!(
        timemap.text().matches("rel=\"memento\"").count() >= 2,
        "{}",
        timemap.text()
    );

    let paths = [
        "/c",
        "/c/small",
        "/c/big/fcr:metadata",
        "/c/gone",
        "/ag",
        "/ag/part",
        "/ag/sub",
        "/t",
        "/t/bin",
    ];
    let before = snapshot(&http, &arca, &paths).await;
    assert_eq!(before["/t/bin"].0, 200);
    assert_eq!(before["/c/gone"].0, 404, "purged");
    arca.stop();

    // The bucket holds a valid OCFL root in Fedora's layout, and nothing else.
    let s3 = store(&minio, "repo");
    let local = dir.path().join("downloaded");
    let keys = download(&s3, &local);
    assert!(
        keys.contains(&"0=ocfl_1.1".to_string()) && keys.contains(&"ocfl_layout.json".to_string())
    );
    assert!(
        !keys
            .iter()
            .any(|k| k.starts_with("extensions/arca-transactions")),
        "a committed transaction's staged uploads are gone"
    );
    let objects = validate_with_ocfl_py(&local);
    if let Some(n) = objects {
        assert_eq!(
            n, 7,
            "the root, c, c/small, c/big, ag (with its parts), t, t/bin: {keys:?}"
        );
    }

    // A node with an empty data directory rebuilds the catalog from the bucket alone.
    let arca = serve(&dir.path().join("fresh"), &env);
    let after = snapshot(&http, &arca, &paths).await;
    assert_eq!(after, before, "what a fresh node rebuilt from the bucket");
    let r = http
        .request(hyper::Method::GET, &arca.url("/c/big"), &[], "")
        .await;
    assert_eq!(sha256(&r.body), sha256(&big));
}

/// Writers keep PUTting (new binaries, and new versions of one container) into a root in
/// S3 while every change pauses after its files and after its commit points
/// (`ARCA_TEST_DIRECT_DELAY_MS`), and the server is SIGKILLed. A restart recovers the
/// changes it left under way: every acknowledged write is there, byte for byte; an
/// unacknowledged one is there whole or not at all; the bucket is a valid root with
/// nothing half-written; and what the recovered node serves is what a fresh node rebuilds
/// from the bucket alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_mid_write_leaves_every_acknowledged_write_whole_and_nothing_half_done() {
    let Some(minio) = Minio::start() else {
        return;
    };
    let mut env = s3_env(&minio, "crash");
    env.push(("ARCA_TEST_DIRECT_DELAY_MS".into(), "150".into()));
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let arca = serve(&data, &env);
    let http = Arc::new(Http::new());
    let r = put(&http, &arca, "/k", &[TURTLE], Vec::new()).await;
    assert!(r.status.is_success(), "{}", r.text());

    let stop = Arc::new(AtomicBool::new(false));
    let outcomes = Arc::new(std::sync::Mutex::new(Vec::<(String, Vec<u8>, bool)>::new()));
    let mut writers = Vec::new();
    for w in 0..6 {
        let (http, stop, outcomes, base) = (
            http.clone(),
            stop.clone(),
            outcomes.clone(),
            arca.base.clone(),
        );
        writers.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                // Writer 0 versions one container; the others create binaries.
                let (path, headers, body) = if w == 0 {
                    let body = format!("<> <http://purl.org/dc/terms/title> \"v{i}\" .");
                    ("/k".to_string(), vec![TURTLE], body.into_bytes())
                } else {
                    (
                        format!("/k/w{w}-{i}"),
                        vec![TEXT],
                        format!("writer {w} write {i}").into_bytes(),
                    )
                };
                let sent = http
                    .try_request(
                        hyper::Method::PUT,
                        &format!("{base}{path}"),
                        &headers,
                        body.clone(),
                    )
                    .await;
                let acknowledged = matches!(&sent, Ok(r) if r.status.is_success());
                outcomes.lock().unwrap().push((path, body, acknowledged));
                if sent.is_err() {
                    return;
                }
                i += 1;
            }
        }));
    }
    // The kill comes once writes flow (a loaded machine may take a while to get there),
    // while every writer is somewhere in its next write.
    let started = std::time::Instant::now();
    while outcomes.lock().unwrap().iter().filter(|o| o.2).count() < 12
        && started.elapsed() < Duration::from_secs(30)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let first_log = arca.kill_and_join(&stop, writers).await;

    let arca = serve(&data, &env);
    let log = first_log + &arca.log();
    let recovered = log
        .matches("recovered a change a stopped node left under way")
        .count();
    assert!(
        recovered >= 1,
        "the kill left changes under way, and they were recovered:\n{log}"
    );
    let outcomes = outcomes.lock().unwrap().clone();
    let acknowledged = outcomes.iter().filter(|o| o.2).count();
    assert!(
        acknowledged >= 6,
        "writes were acknowledged before the kill: {acknowledged}"
    );
    let mut last_title = None;
    for (path, body, ok) in &outcomes {
        if path == "/k" {
            if *ok {
                last_title = Some(String::from_utf8_lossy(body).into_owned());
            }
            continue;
        }
        let r = http
            .request(hyper::Method::GET, &arca.url(path), &[], "")
            .await;
        if *ok {
            assert_eq!(r.status.as_u16(), 200, "acknowledged {path} is there");
        }
        assert!(
            (r.status.as_u16() == 200 && r.body.as_ref() == body.as_slice())
                || r.status.as_u16() == 404,
            "{path} is whole or absent: {} {:?}",
            r.status,
            r.text()
        );
    }
    // The container holds its last acknowledged title, or a later unacknowledged one.
    let k = http
        .request(
            hyper::Method::GET,
            &arca.url("/k"),
            &[("accept", "application/n-triples")],
            "",
        )
        .await
        .text();
    if let Some(title) = last_title {
        let v: u32 = title
            .split("\"v")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let now: u32 = k
            .split("\"v")
            .nth(1)
            .expect("a title")
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(now >= v, "the container went back from v{v} to v{now}");
    }

    // What the recovered node serves is what the bucket holds: a fresh node agrees.
    let paths: Vec<&str> = outcomes.iter().map(|o| o.0.as_str()).collect();
    let recovered_view = snapshot(&http, &arca, &paths).await;
    arca.stop();
    let fresh = serve(&dir.path().join("fresh"), &env);
    assert_eq!(snapshot(&http, &fresh, &paths).await, recovered_view);
    fresh.stop();
    let local = dir.path().join("downloaded");
    download(&store(&minio, "crash"), &local);
    validate_with_ocfl_py(&local);
}

/// With the store stopped, a write is a 503 with `Retry-After` within seconds and leaves
/// nothing behind; reads of what the catalog holds go on; once the store is back, writes
/// succeed without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_of_the_store_is_a_503_that_changes_nothing() {
    let Some(minio) = Minio::start() else {
        return;
    };
    let env = s3_env(&minio, "outage");
    let dir = tempfile::tempdir().unwrap();
    let arca = serve(&dir.path().join("data"), &env);
    let http = Http::new();
    assert!(put(&http, &arca, "/o", &[TURTLE], Vec::new())
        .await
        .status
        .is_success());
    assert!(
        put(&http, &arca, "/o/b", &[TEXT], b"stored before".to_vec())
            .await
            .status
            .is_success()
    );

    minio.stop();
    let started = std::time::Instant::now();
    let r = put(&http, &arca, "/o/during", &[TEXT], b"not stored".to_vec()).await;
    assert_eq!(r.status.as_u16(), 503, "{}", r.text());
    assert_eq!(r.header("retry-after"), Some("5"));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "failed fast: {:?}",
        started.elapsed()
    );
    let r = http
        .request(hyper::Method::GET, &arca.url("/o"), &[], "")
        .await;
    assert_eq!(
        r.status.as_u16(),
        200,
        "the container's description comes from the catalog"
    );
    let r = http
        .request(hyper::Method::GET, &arca.url("/o/b"), &[], "")
        .await;
    assert_eq!(
        r.status.as_u16(),
        503,
        "a binary's bytes are in the store: {}",
        r.text()
    );

    minio.start_again();
    let r = put(&http, &arca, "/o/after", &[TEXT], b"stored after".to_vec()).await;
    assert!(r.status.is_success(), "{} {}", r.status, r.text());
    let r = http
        .request(hyper::Method::GET, &arca.url("/o/b"), &[], "")
        .await;
    assert_eq!(r.body.as_ref(), b"stored before");
    assert_eq!(
        http.request(hyper::Method::GET, &arca.url("/o/during"), &[], "")
            .await
            .status
            .as_u16(),
        404
    );
    arca.stop();
    let local = dir.path().join("downloaded");
    download(&store(&minio, "outage"), &local);
    validate_with_ocfl_py(&local);
}

/// Settings that cannot work stop the server at start with a message that says why.
#[test]
fn wrong_credentials_or_a_missing_bucket_fail_at_start() {
    let Some(minio) = Minio::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let start = |env: Vec<(String, String)>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_arca"));
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--data"])
            .arg(dir.path().join("data"));
        common::scrub_env(&mut cmd);
        cmd.envs(env);
        let out = cmd.output().expect("arca runs");
        assert!(!out.status.success(), "arca refused to start");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let mut env = s3_env(&minio, "start");
    for (k, v) in env.iter_mut() {
        if k == "AWS_SECRET_ACCESS_KEY" {
            *v = "not-the-secret".into();
        }
    }
    let message = start(env);
    assert!(message.contains("credentials"), "{message}");
    assert!(
        !message.contains("not-the-secret"),
        "the secret stays out of messages"
    );
    let mut env = s3_env(&minio, "start");
    for (k, v) in env.iter_mut() {
        if k == "ARCA_S3_BUCKET" {
            *v = "no-such-bucket".into();
        }
    }
    let message = start(env);
    assert!(message.contains("no-such-bucket"), "{message}");
}

/// A bucket that keeps no versions of replaced objects stops the server at start, naming
/// the setting that accepts it, with nothing written into it; with the setting off, the
/// same bucket serves. A prefix holding something that is not a root arca can write into
/// (stray files without a root declaration, a root of another storage layout) is refused
/// too, and left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_without_versioning_or_with_another_root_is_refused() {
    let Some(minio) = Minio::start() else {
        return;
    };
    minio.create_bucket("unversioned", false);
    let dir = tempfile::tempdir().unwrap();
    let mut env = s3_env(&minio, "plain");
    for (k, v) in env.iter_mut() {
        if k == "ARCA_S3_BUCKET" {
            *v = "unversioned".into();
        }
    }
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_arca"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(dir.path().join("refused"));
    common::scrub_env(&mut cmd);
    cmd.envs(env.clone());
    let out = cmd.output().expect("arca runs");
    let message = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "arca refused to start: {message}");
    assert!(message.contains("unversioned"), "{message}");
    assert!(
        message.contains("storage.s3.require_versioning"),
        "{message}"
    );
    let bucket = S3Storage::open_with_credentials(
        S3Settings {
            bucket: "unversioned".into(),
            ..store(&minio, "plain").settings().clone()
        },
        S3Credentials {
            access_key_id: ROOT_USER.to_string(),
            secret_access_key: ROOT_PASSWORD.to_string(),
            session_token: None,
        },
    )
    .unwrap();
    assert_eq!(
        download(&bucket, &dir.path().join("copy")),
        Vec::<String>::new()
    );

    env.push(("ARCA_S3_REQUIRE_VERSIONING".into(), "false".into()));
    let arca = serve(&dir.path().join("accepted"), &env);
    let http = Http::new();
    assert_eq!(
        put(&http, &arca, "/plain", &[TURTLE], Vec::new())
            .await
            .status
            .as_u16(),
        201
    );
    assert!(
        download(&bucket, &dir.path().join("copy2"))
            .iter()
            .any(|k| k.ends_with("inventory.json")),
        "the accepted bucket holds the root"
    );

    let refusal = |prefix: &str, data: &str| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_arca"));
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--data"])
            .arg(dir.path().join(data));
        common::scrub_env(&mut cmd);
        cmd.envs(s3_env(&minio, prefix));
        let out = cmd.output().expect("arca runs");
        let message = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "arca refused to start: {message}");
        message
    };
    let stray = store(&minio, "stray");
    stray.put("notes.txt", b"not an OCFL root").unwrap();
    let message = refusal("stray", "stray-data");
    assert!(message.contains("0=ocfl_1.1"), "{message}");
    assert_eq!(
        download(&stray, &dir.path().join("stray")),
        vec!["notes.txt"]
    );
    let flat = store(&minio, "flat");
    flat.put("0=ocfl_1.1", b"ocfl_1.1\n").unwrap();
    let layout = br#"{"extension":"0002-flat-direct-storage-layout","description":"flat"}"#;
    flat.put("ocfl_layout.json", layout).unwrap();
    let message = refusal("flat", "flat-data");
    assert!(
        message.contains("0002-flat-direct-storage-layout"),
        "{message}"
    );
    assert_eq!(
        download(&flat, &dir.path().join("flat")),
        vec!["0=ocfl_1.1", "ocfl_layout.json"]
    );
}

/// Creations answer on a root in the bucket as on a local root, whichever way they take
/// there (a new object of RDF in its path parent comes in two catalog steps, with the change
/// under way recorded with the checks' reads; every other creation, and every creation
/// that such a check refuses, the long way), and a refused one leaves no change under way
/// behind in the catalog and nothing in the bucket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creations_answer_in_the_bucket_as_on_a_local_root_and_refusals_leave_nothing() {
    let Some(minio) = Minio::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let local = Arca::serve(&dir.path().join("local"));
    let s3_data = dir.path().join("s3");
    let bucket = serve(&s3_data, &s3_env(&minio, "creations"));
    let http = Http::new();
    let title = |t: &str| format!("<> <http://purl.org/dc/terms/title> \"{t}\" .").into_bytes();
    // What, method, path, headers, body.
    type Case<'a> = (
        &'a str,
        hyper::Method,
        &'a str,
        Vec<(&'a str, &'a str)>,
        Vec<u8>,
    );
    let cases: Vec<Case> = vec![
        (
            "container",
            hyper::Method::PUT,
            "/c",
            vec![TURTLE],
            title("c"),
        ),
        (
            "child",
            hyper::Method::PUT,
            "/c/a",
            vec![TURTLE],
            title("a"),
        ),
        (
            "taken",
            hyper::Method::PUT,
            "/c/a",
            vec![TURTLE, ("if-none-match", "*")],
            title("again"),
        ),
        (
            "deep, ghosts between",
            hyper::Method::PUT,
            "/c/g/h/i",
            vec![TURTLE],
            title("i"),
        ),
        (
            "a ghost node",
            hyper::Method::PUT,
            "/c/g",
            vec![TURTLE],
            title("g"),
        ),
        (
            "binary",
            hyper::Method::PUT,
            "/c/b",
            vec![TEXT],
            b"bytes".to_vec(),
        ),
        (
            "below a binary",
            hyper::Method::PUT,
            "/c/b/x",
            vec![TURTLE],
            title("x"),
        ),
        (
            "group",
            hyper::Method::PUT,
            "/ag",
            vec![TURTLE, ARCHIVAL_GROUP],
            title("ag"),
        ),
        (
            "part of the group",
            hyper::Method::PUT,
            "/ag/p",
            vec![TURTLE],
            title("p"),
        ),
        (
            "group in a group",
            hyper::Method::PUT,
            "/ag/q",
            vec![TURTLE, ARCHIVAL_GROUP],
            title("q"),
        ),
        (
            "to delete",
            hyper::Method::PUT,
            "/c/d",
            vec![TURTLE],
            title("d"),
        ),
        ("delete", hyper::Method::DELETE, "/c/d", vec![], Vec::new()),
        (
            "on a tombstone",
            hyper::Method::PUT,
            "/c/d",
            vec![TURTLE],
            title("d2"),
        ),
        (
            "below a tombstone",
            hyper::Method::PUT,
            "/c/d/e",
            vec![TURTLE],
            title("e"),
        ),
        (
            "bad RDF",
            hyper::Method::PUT,
            "/c/bad",
            vec![TURTLE],
            b"<> <broken".to_vec(),
        ),
        (
            "post",
            hyper::Method::POST,
            "/c",
            vec![TURTLE, ("slug", "s")],
            title("s"),
        ),
        (
            "post, same slug",
            hyper::Method::POST,
            "/c",
            vec![TURTLE, ("slug", "s")],
            title("s2"),
        ),
        (
            "post into a binary",
            hyper::Method::POST,
            "/c/b",
            vec![TURTLE],
            title("n"),
        ),
    ];
    for (what, method, path, headers, body) in cases {
        let on_local = http
            .request(method.clone(), &local.url(path), &headers, body.clone())
            .await;
        let on_bucket = http
            .request(method, &bucket.url(path), &headers, body)
            .await;
        assert_eq!(
            on_bucket.status,
            on_local.status,
            "{what}: {} (bucket) vs {} (local)",
            on_bucket.text(),
            on_local.text()
        );
    }
    let paths = [
        "/c", "/c/a", "/c/g/h/i", "/c/g", "/c/b", "/ag", "/ag/p", "/ag/q", "/c/d", "/c/s",
    ];
    // What a reader finds (the bodies differ by their dates).
    let status = |seen: BTreeMap<String, (u16, String)>| -> Vec<(String, u16)> {
        seen.into_iter()
            .map(|(path, (status, _))| (path, status))
            .collect()
    };
    assert_eq!(
        status(snapshot(&http, &bucket, &paths).await),
        status(snapshot(&http, &local, &paths).await)
    );
    bucket.stop();
    let catalog = rusqlite::Connection::open(s3_data.join("catalog.sqlite")).unwrap();
    let pending: i64 = catalog
        .query_row("SELECT COUNT(*) FROM pending_writes", [], |row| row.get(0))
        .unwrap();
    assert_eq!(pending, 0, "a refused creation left a change under way");
    // The same objects as on the local root (the slugged POST's twin has a minted id), and
    // every one valid.
    local.stop();
    let copy = dir.path().join("copy");
    download(&store(&minio, "creations"), &copy);
    let objects = common::object_dirs(&copy).len();
    assert_eq!(
        objects,
        common::object_dirs(&dir.path().join("local").join("ocfl-root")).len()
    );
    if let Some(valid) = validate_with_ocfl_py(&copy) {
        assert_eq!(valid, objects);
    }
}
