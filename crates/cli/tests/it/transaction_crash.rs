//! Transactions survive a crash all or nothing: clients run transactions that each create
//! several resources (containers, a binary, an Archival Group with a part) and commit them,
//! while the real `arca serve` is SIGKILLed at varied moments. After each restart, every
//! transaction's resources are either all there or all absent; every acknowledged commit
//! is complete, bytes included; an uncommitted one left nothing; the objects are valid
//! (ocfl-py) and nothing is left in staging.
//!
//! A large commit goes through the write path in pages: `arca serve` is SIGKILLed in the
//! middle of one (some pages in the root, the rest not; pages of 16 objects and publishing
//! slowed down, so that the kill lands there), or right after the commit was sent. After a
//! restart the transaction is all there — every resource, the binaries' bytes, the
//! existing resource it changed with one new version only, one change-log entry per
//! resource — or, killed before its decision, not at all.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::{Method, StatusCode};
use rand::{Rng, RngCore, SeedableRng};

use crate::common;
use crate::common::{object_dir, sha512_hex, Arca, Http};

const WRITERS: u64 = 8;
const AG_LINK: &str = "<http://fedora.info/definitions/v4/repository#ArchivalGroup>; rel=\"type\"";
const BINARY_LINK: &str = "<http://www.w3.org/ns/ldp#NonRDFSource>; rel=\"type\"";

/// How far a transaction got when the server died.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Never committed (the server died before the commit was sent): nothing may exist.
    NotCommitted,
    /// The commit was sent but not answered: all or nothing.
    CommitSent,
    /// The commit was answered 204: everything must exist.
    Committed,
}

#[derive(Debug, Clone)]
struct Tx {
    /// The container every resource of the transaction lives in (`/t<writer>-<n>`).
    top: String,
    /// SHA-512 of the binary's bytes.
    sha512: String,
    outcome: Outcome,
}

impl Tx {
    /// The resources the transaction creates, below the REST root.
    fn paths(&self) -> Vec<String> {
        let t = &self.top;
        vec![
            t.clone(),
            format!("{t}/a"),
            format!("{t}/a/b"),
            format!("{t}/bin"),
            format!("{t}/g"),
            format!("{t}/g/part"),
        ]
    }

    /// The OCFL objects it creates (the part lives in the group's).
    fn objects(&self) -> Vec<String> {
        let t = &self.top;
        ["", "/a", "/a/b", "/bin", "/g"]
            .iter()
            .map(|s| format!("info:fedora{t}{s}"))
            .collect()
    }
}

/// A PUT inside a transaction: path, headers, body.
type Put<'a> = (String, Vec<(&'a str, &'a str)>, Vec<u8>);

#[derive(Default)]
struct Log {
    txs: Vec<Tx>,
    /// Answers that were neither the expected success nor a transport error.
    bad: Vec<String>,
}

/// Until `stop` or the server goes away: begin a transaction, create its resources inside
/// it, commit.
async fn writer(
    http: Http,
    base: String,
    round: u64,
    seed: u64,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Log>>,
) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(round * 1000 + seed);
    let mut n = 0;
    let bad = |m: String| log.lock().unwrap().bad.push(m);
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let mut bytes = vec![0u8; rng.random_range(1..=256 * 1024)];
        rng.fill_bytes(&mut bytes);
        let top = format!("/r{round}-w{seed}-{n}");
        let index = {
            let mut l = log.lock().unwrap();
            l.txs.push(Tx {
                top: top.clone(),
                sha512: sha512_hex(&bytes),
                outcome: Outcome::NotCommitted,
            });
            l.txs.len() - 1
        };
        let Ok(r) = http
            .try_request(Method::POST, &format!("{base}/fcr:tx"), &[], "")
            .await
        else {
            return;
        };
        if r.status != StatusCode::CREATED {
            return bad(format!("begin: {} {}", r.status, r.text()));
        }
        let tx = r.header("location").unwrap_or_default().to_string();
        let turtle = ("content-type", "text/turtle");
        let atomic = ("atomic-id", tx.as_str());
        let title = "<> <http://purl.org/dc/terms/title> \"tx crash\" .";
        let requests: Vec<Put> = vec![
            (top.clone(), vec![turtle, atomic], title.into()),
            (format!("{top}/a"), vec![turtle, atomic], title.into()),
            (format!("{top}/a/b"), vec![turtle, atomic], Vec::new()),
            (
                format!("{top}/bin"),
                vec![
                    ("content-type", "application/octet-stream"),
                    ("link", BINARY_LINK),
                    atomic,
                ],
                bytes,
            ),
            (
                format!("{top}/g"),
                vec![turtle, ("link", AG_LINK), atomic],
                title.into(),
            ),
            (format!("{top}/g/part"), vec![turtle, atomic], title.into()),
        ];
        for (path, headers, body) in requests {
            let Ok(r) = http
                .try_request(Method::PUT, &format!("{base}{path}"), &headers, body)
                .await
            else {
                return;
            };
            if r.status != StatusCode::CREATED {
                return bad(format!("PUT {path} in {tx}: {} {}", r.status, r.text()));
            }
        }
        log.lock().unwrap().txs[index].outcome = Outcome::CommitSent;
        let Ok(r) = http.try_request(Method::PUT, &tx, &[], "").await else {
            return;
        };
        if r.status != StatusCode::NO_CONTENT {
            return bad(format!("commit {tx}: {} {}", r.status, r.text()));
        }
        log.lock().unwrap().txs[index].outcome = Outcome::Committed;
    }
}

/// Runs the writers against `arca` and SIGKILLs it `kill_after` after the first commits.
async fn run_then_kill(arca: Arca, round: u64, kill_after: Duration) -> Log {
    let http = Http::new();
    let stop = Arc::new(AtomicBool::new(false));
    let log = Arc::new(Mutex::new(Log::default()));
    let tasks: Vec<_> = (0..WRITERS)
        .map(|i| {
            tokio::spawn(writer(
                http.clone(),
                arca.base.clone(),
                round,
                i,
                stop.clone(),
                log.clone(),
            ))
        })
        .collect();
    for _ in 0..600 {
        let committed = log
            .lock()
            .unwrap()
            .txs
            .iter()
            .filter(|t| t.outcome == Outcome::Committed)
            .count();
        if committed >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(kill_after).await;
    let server_log = arca.kill_and_join(&stop, tasks).await;
    let out = std::mem::take(&mut *log.lock().unwrap());
    assert!(
        out.bad.is_empty(),
        "arca answered with errors: {:?}\nserver log:\n{server_log}",
        out.bad
    );
    out
}

/// Every transaction is all or nothing, as its outcome allows.
async fn check(arca: &Arca, data: &Path, txs: &[Tx]) -> (usize, usize) {
    let root = data.join("ocfl-root");
    let http = Http::new();
    let (mut all, mut none) = (0, 0);
    for tx in txs {
        let mut present = Vec::new();
        for p in tx.paths() {
            let r = http.get(&arca.url(&p), &[]).await;
            match r.status {
                StatusCode::OK => {
                    if p.ends_with("/bin") {
                        assert_eq!(sha512_hex(&r.body), tx.sha512, "{p}: other bytes");
                    }
                    present.push(true);
                }
                StatusCode::NOT_FOUND => present.push(false),
                other => panic!("{p}: {other} {}", r.text()),
            }
        }
        let objects: Vec<bool> = tx
            .objects()
            .iter()
            .map(|o| object_dir(&root, o).exists())
            .collect();
        let everything = present.iter().all(|p| *p) && objects.iter().all(|o| *o);
        let nothing = !present.iter().any(|p| *p) && !objects.iter().any(|o| *o);
        assert!(
            everything || nothing,
            "transaction {} is half there: resources {present:?}, objects {objects:?} ({:?})",
            tx.top,
            tx.outcome
        );
        match tx.outcome {
            Outcome::Committed => assert!(everything, "acknowledged {} is lost", tx.top),
            Outcome::NotCommitted => assert!(nothing, "uncommitted {} exists", tx.top),
            Outcome::CommitSent => {}
        }
        if everything {
            all += 1;
            // The part lives in the group's object, Fedora's paths.
            let r = http
                .get(&arca.url(&format!("{}/g/part", tx.top)), &[])
                .await;
            let group = arca.url(&format!("{}/g", tx.top));
            assert!(
                r.header_all("link")
                    .contains(&format!("<{group}>;rel=\"archival-group\"")),
                "{}",
                r.header_all("link")
            );
        } else {
            none += 1;
        }
    }
    common::validate_with_ocfl_py(&root);
    (all, none)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn transactions_are_all_or_nothing_across_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let mut txs: Vec<Tx> = Vec::new();
    let mut committed = 0;
    let mut in_doubt = 0;
    for (round, kill_after) in [(1, 0), (2, 150), (3, 400), (4, 900)].into_iter() {
        let arca = Arca::serve(data);
        let log = run_then_kill(arca, round, Duration::from_millis(kill_after)).await;
        committed += log
            .txs
            .iter()
            .filter(|t| t.outcome == Outcome::Committed)
            .count();
        in_doubt += log
            .txs
            .iter()
            .filter(|t| t.outcome == Outcome::CommitSent)
            .count();
        txs.extend(log.txs);
        let arca = Arca::serve(data);
        let (all, none) = check(&arca, data, &txs).await;
        eprintln!(
            "round {round}: {} transactions so far, {all} complete, {none} absent",
            txs.len()
        );
        arca.stop();
        // The root at rest: a commit the restart rolled forward is published behind its
        // answer, and until then its object's directory may exist before its files, and
        // its uploads stay in staging/ (seen once in CI when checked before the stop).
        common::check_storage(&data.join("ocfl-root"));
        common::assert_staging_clean(data);
    }
    assert!(
        committed >= 8,
        "too few commits to mean anything: {committed}"
    );
    eprintln!("{committed} acknowledged commits, {in_doubt} in doubt at a kill");
}

/// Pages of this many objects in the large commits below.
const PAGE: usize = 16;
/// Containers each large transaction creates (beside two binaries and an update).
const LARGE: usize = 160;

/// Creates, in one new transaction, `LARGE` containers and two binaries below the existing
/// `/<top>` and a new title for `/<top>` itself; returns the transaction's URL.
async fn stage_large(http: &Http, arca: &Arca, top: &str) -> String {
    let r = http
        .try_request(Method::POST, &arca.url("/fcr:tx"), &[], "")
        .await
        .unwrap();
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let tx = r.header("location").unwrap().to_string();
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..8 {
        let (http, tx, url) = (http.clone(), tx.clone(), arca.url(&format!("/{top}")));
        tasks.spawn(async move {
            for i in (w..LARGE).step_by(8) {
                let r = http
                    .try_request(
                        Method::PUT,
                        &format!("{url}/c{i:04}"),
                        &[("content-type", "text/turtle"), ("atomic-id", &tx)],
                        format!("<> <http://purl.org/dc/terms/title> \"c{i}\" ."),
                    )
                    .await
                    .unwrap();
                assert_eq!(r.status, StatusCode::CREATED, "c{i}: {}", r.text());
            }
        });
    }
    while let Some(t) = tasks.join_next().await {
        t.unwrap();
    }
    for name in ["bin-a", "bin-z"] {
        let r = http
            .try_request(
                Method::PUT,
                &arca.url(&format!("/{top}/{name}")),
                &[
                    ("content-type", "application/octet-stream"),
                    ("link", BINARY_LINK),
                    ("atomic-id", &tx),
                ],
                large_bytes(name),
            )
            .await
            .unwrap();
        assert_eq!(r.status, StatusCode::CREATED, "{name}: {}", r.text());
    }
    let r = http
        .try_request(
            Method::PUT,
            &arca.url(&format!("/{top}")),
            &[("content-type", "text/turtle"), ("atomic-id", &tx)],
            "<> <http://purl.org/dc/terms/title> \"changed in the tx\" .",
        )
        .await
        .unwrap();
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    tx
}

/// The bytes of binary `name` of a large transaction.
fn large_bytes(name: &str) -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(name.len() as u64 * 7 + 1);
    let mut bytes = vec![0u8; 300 * 1024];
    rng.fill_bytes(&mut bytes);
    bytes.extend_from_slice(name.as_bytes());
    bytes
}

/// How many of the large transaction's new containers are objects in the root.
fn published(root: &Path, top: &str) -> usize {
    (0..LARGE)
        .filter(|i| object_dir(root, &format!("info:fedora/{top}/c{i:04}")).exists())
        .count()
}

/// Whether the large transaction below `/<top>` is all there (`true`) or not at all
/// (`false`); panics when it is half there, or when an object has more versions than one
/// commit makes.
async fn large_outcome(http: &Http, arca: &Arca, root: &Path, top: &str) -> bool {
    let mut present = 0;
    for i in 0..LARGE {
        let r = http.get(&arca.url(&format!("/{top}/c{i:04}")), &[]).await;
        match r.status {
            StatusCode::OK => present += 1,
            StatusCode::NOT_FOUND => {}
            other => panic!("{top}/c{i:04}: {other} {}", r.text()),
        }
    }
    let mut binaries = 0;
    for name in ["bin-a", "bin-z"] {
        let r = http.get(&arca.url(&format!("/{top}/{name}")), &[]).await;
        match r.status {
            StatusCode::OK => {
                assert_eq!(
                    sha512_hex(&r.body),
                    sha512_hex(&large_bytes(name)),
                    "{name}"
                );
                binaries += 1;
            }
            StatusCode::NOT_FOUND => {}
            other => panic!("{top}/{name}: {other}"),
        }
    }
    let r = http
        .get(
            &arca.url(&format!("/{top}")),
            &[("accept", "application/n-triples")],
        )
        .await;
    let changed = r.text().contains("changed in the tx");
    let all = present == LARGE && binaries == 2 && changed;
    let top_dir = object_dir(root, &format!("info:fedora/{top}"));
    if all {
        // The root lags the answers by the publisher's backlog (the roll forward at the
        // start was answered to nobody).
        for _ in 0..600 {
            if published(root, top) == LARGE && common::version_count(&top_dir) >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let top_versions = common::version_count(&top_dir);
    let none = present == 0 && binaries == 0 && !changed;
    assert!(
        all || none,
        "{top}: half there: {present} of {LARGE} containers, {binaries} binaries, top changed: {changed}"
    );
    assert_eq!(top_versions, if all { 2 } else { 1 }, "{top}'s versions");
    if all {
        for i in 0..LARGE {
            let dir = object_dir(root, &format!("info:fedora/{top}/c{i:04}"));
            assert_eq!(
                common::version_count(&dir),
                1,
                "{top}/c{i:04} written twice"
            );
        }
    }
    all
}

/// The change-log entries creating resources below `/<top>/`, by resource.
async fn creates_logged(
    http: &Http,
    arca: &Arca,
    top: &str,
) -> std::collections::BTreeMap<String, usize> {
    let mut seen = std::collections::BTreeMap::new();
    let mut since = 0;
    loop {
        let page = arca.events_after(http, since).await;
        let Some((last, _)) = page.last() else { break };
        since = *last;
        for (_, e) in &page {
            let id = e["object"]["id"].as_str().unwrap_or_default();
            let created = e["type"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t == "Create"));
            if created && id.contains(&format!("/{top}/")) && !id.contains("fcr:metadata") {
                *seen.entry(id.to_string()).or_insert(0) += 1;
            }
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_large_commit_killed_midway_is_complete_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let root = data.join("ocfl-root");
    let http = Http::new();
    let page = PAGE.to_string();
    // (top, kill once this many containers are in the root; 0: right after the commit
    // was sent).
    for (top, kill_at) in [("first-page", 1), ("half", LARGE / 2), ("at-once", 0)] {
        let arca = Arca::serve_with(
            data,
            &[
                ("ARCA_TEST_TX_PAGE_OBJECTS", page.as_str()),
                ("ARCA_TEST_PUBLISH_DELAY_MS", "100"),
            ],
        );
        let r = http
            .try_request(
                Method::PUT,
                &arca.url(&format!("/{top}")),
                &[("content-type", "text/turtle")],
                "",
            )
            .await
            .unwrap();
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
        let tx = stage_large(&http, &arca, top).await;
        let commit = {
            let (http, tx) = (http.clone(), tx.clone());
            tokio::spawn(async move { http.try_request(Method::PUT, &tx, &[], "").await })
        };
        let mut seen = 0;
        if kill_at > 0 {
            for _ in 0..6000 {
                seen = published(&root, top);
                if seen >= kill_at || commit.is_finished() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        let answered = commit.is_finished();
        let log = arca.log();
        arca.kill();
        let answer = commit.await.unwrap();
        if kill_at > 0 {
            assert!(
                !answered && seen < LARGE,
                "{top}: the commit ended before the kill ({answer:?}, {seen} in the root)\n{log}"
            );
        }
        let arca = Arca::serve(data);
        let all = large_outcome(&http, &arca, &root, top).await;
        eprintln!(
            "{top}: killed with {seen} of {LARGE} in the root; after the restart all: {all}; \
             objects found written already by the roll forward: {}",
            arca.log().contains("were in storage already")
        );
        if kill_at > 0 {
            assert!(all, "{top}: a decided commit was lost\n{}", arca.log());
        }
        let logged = creates_logged(&http, &arca, top).await;
        if all {
            assert_eq!(logged.len(), LARGE + 2, "{top}: {logged:?}");
            assert!(logged.values().all(|n| *n == 1), "{top}: {logged:?}");
        } else {
            assert!(logged.is_empty(), "{top}: {logged:?}");
        }
        // The objects are free again, and the transaction has ended.
        let r = http
            .try_request(
                Method::PUT,
                &arca.url(&format!("/{top}/c0000")),
                &[("content-type", "text/turtle")],
                "",
            )
            .await
            .unwrap();
        assert_eq!(
            r.status,
            if all {
                StatusCode::NO_CONTENT
            } else {
                StatusCode::CREATED
            },
            "{}",
            r.text()
        );
        let tx = arca.url(&format!("/fcr:tx/{}", tx.rsplit('/').next().unwrap()));
        assert_eq!(http.get(&tx, &[]).await.status, StatusCode::GONE);
        common::assert_staging_clean(data);
        common::validate_with_ocfl_py(&root);
        arca.stop();
    }
}
