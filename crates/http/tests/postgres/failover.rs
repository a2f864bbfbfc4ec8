//! A PostgreSQL failover under writes: two nodes whose `catalog.url` names a synchronous
//! primary and its streaming standby (`target_session_attrs=read-write`) keep writing
//! through the primary's stop and the standby's promotion, answering 503 with
//! `Retry-After` in between, never 500; nothing they acknowledged is lost, and a node
//! started afterwards with the same URL finds the new primary. Not run without PostgreSQL
//! unless `ARCA_REQUIRE_POSTGRES=1`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arca_testkit::postgres::{Postgres, Setup};
use arca_testkit::TestServer;
use http::{Method, StatusCode};

/// A node of the repository whose catalog is at `url`.
async fn node(url: &str) -> TestServer {
    TestServer::start_with(None, |c| c.catalog.url = Some(url.to_string())).await
}

/// One write's answer: path, status, whether `Retry-After` came, time taken, body.
type Answer = (String, StatusCode, bool, Duration, String);

/// Two clients per node, each creating containers until `stop`.
fn writers(
    nodes: &[Arc<TestServer>],
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<Vec<Answer>>> {
    (0..4)
        .map(|w| {
            let (s, stop) = (nodes[w % nodes.len()].clone(), stop.clone());
            tokio::spawn(async move {
                let turtle = [("content-type", "text/turtle")];
                let mut answers = Vec::new();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let path = format!("w{w}-{n}");
                    let started = Instant::now();
                    let r = s.request(Method::PUT, &s.url(&path), &turtle, "").await;
                    let retry_after = r.headers.get("retry-after").is_some();
                    answers.push((path, r.status, retry_after, started.elapsed(), r.text()));
                    n += 1;
                    if r.status != StatusCode::CREATED {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
                answers
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_promoted_under_writes_takes_over_and_loses_nothing_acknowledged() {
    let Some((primary, standby, url)) = tokio::task::spawn_blocking(|| {
        let primary = Postgres::start_with(&Setup::synchronous_primary())?;
        let standby = primary.start_standby_with(&Setup::asynchronous());
        // Commits wait for the standby from here on (createdb's too).
        let url = primary.create_database();
        Some((primary, standby, url))
    })
    .await
    .unwrap() else {
        return;
    };
    let database = url.rsplit('/').next().unwrap().to_string();
    let hosts = format!(
        "postgres://arca@127.0.0.1:{},127.0.0.1:{}/{database}?target_session_attrs=read-write",
        primary.port(),
        standby.port()
    );
    let nodes = [Arc::new(node(&hosts).await), Arc::new(node(&hosts).await)];
    let stop = Arc::new(AtomicBool::new(false));
    let writers = writers(&nodes, &stop);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (primary, standby) = tokio::task::spawn_blocking(move || {
        primary.stop();
        // Longer than the catalog's wait for a connection (3 s): some writes are refused
        // while no host takes writes.
        std::thread::sleep(Duration::from_millis(3500));
        standby.promote();
        (primary, standby)
    })
    .await
    .unwrap();
    let promoted = Instant::now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    let mut answers = Vec::new();
    for w in writers {
        answers.extend(w.await.unwrap());
    }
    let refused = answers
        .iter()
        .filter(|a| a.1 == StatusCode::SERVICE_UNAVAILABLE)
        .count();
    let created = answers
        .iter()
        .filter(|a| a.1 == StatusCode::CREATED)
        .count();
    eprintln!(
        "{} writes: {created} created, {refused} refused with 503, promotion {:?} before the end",
        answers.len(),
        promoted.elapsed()
    );
    for (path, status, retry_after, took, body) in &answers {
        assert!(
            *status == StatusCode::CREATED
                || (*status == StatusCode::SERVICE_UNAVAILABLE && *retry_after),
            "PUT {path}: {status} after {took:?} (Retry-After: {retry_after}): {body}"
        );
        assert!(
            *took < Duration::from_secs(30),
            "PUT {path} hung for {took:?}"
        );
    }
    assert!(refused > 0, "the failover was seen by no write");
    // Writes resumed on the new primary: the last write of every client went through.
    let mut last: std::collections::BTreeMap<&str, StatusCode> = Default::default();
    for (path, status, ..) in &answers {
        last.insert(path.split('-').next().unwrap(), *status);
    }
    assert!(
        last.values().all(|s| *s == StatusCode::CREATED),
        "the last write of a client failed: {last:?}"
    );
    // Every acknowledged write is in the new primary's catalog, read on both nodes; a
    // refused one left nothing.
    for s in &nodes {
        for (path, status, ..) in &answers {
            let r = s.request(Method::GET, &s.url(path), &[], "").await;
            let expected = if *status == StatusCode::CREATED {
                StatusCode::OK
            } else {
                StatusCode::NOT_FOUND
            };
            assert_eq!(r.status, expected, "GET {path} after the PUT's {status}");
        }
    }
    // A node started now, with the same URL and the old primary down, takes the new one.
    let late = node(&hosts).await;
    let r = late
        .request(
            Method::PUT,
            &late.url("late"),
            &[("content-type", "text/turtle")],
            "",
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let first = &answers
        .iter()
        .find(|a| a.1 == StatusCode::CREATED)
        .unwrap()
        .0;
    let r = late.request(Method::GET, &late.url(first), &[], "").await;
    assert_eq!(r.status, StatusCode::OK, "GET {first} on the late node");
    for s in &nodes {
        let r = s.request(Method::GET, &s.url("late"), &[], "").await;
        assert_eq!(r.status, StatusCode::OK, "the late node's write on another");
    }
    drop((nodes, late));
    tokio::task::spawn_blocking(move || drop((primary, standby)))
        .await
        .unwrap();
}
