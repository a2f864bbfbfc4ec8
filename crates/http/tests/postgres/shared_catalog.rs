//! Nodes sharing one PostgreSQL catalog (scale-out) keep one repository's promises: two
//! nodes writing the same resource at once leave one winner (the per-object locks are
//! PostgreSQL's, not each process's), and an ACL changed on one node takes effect on the
//! other at once (each node's ACL cache follows the shared change log). Each node here has
//! its own data directory; reads that need the OCFL root of the other node's writes wait
//! for the S3 storage of the scale-out. Not run without PostgreSQL unless
//! `ARCA_REQUIRE_POSTGRES=1`.

use std::path::Path;

use arca_testkit::postgres::Postgres;
use arca_testkit::{Reply, TestServer};
use base64::Engine as _;
use http::{Method, StatusCode};
use sha1::Digest as _;

/// A new database on the shared test PostgreSQL, or `None` without PostgreSQL.
pub(crate) async fn database() -> Option<String> {
    let pg = tokio::task::spawn_blocking(Postgres::shared)
        .await
        .unwrap()?;
    Some(
        tokio::task::spawn_blocking(|| pg.create_database())
            .await
            .unwrap(),
    )
}

/// An htpasswd file with users alice, bob and the admin root (password `<name>-pw`).
pub(crate) fn users(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("htpasswd");
    let mut text = String::new();
    for user in ["alice", "bob", "root"] {
        let digest = sha1::Sha1::digest(format!("{user}-pw").as_bytes());
        let encoded = base64::engine::general_purpose::STANDARD.encode(digest);
        text.push_str(&format!("{user}:{{SHA}}{encoded}\n"));
    }
    std::fs::write(&file, text).unwrap();
    file
}

/// A node of the repository whose catalog is at `url`.
async fn node(url: &str, htpasswd: Option<&Path>) -> TestServer {
    TestServer::start_with(None, |c| {
        c.catalog.url = Some(url.to_string());
        if let Some(file) = htpasswd {
            c.auth.htpasswd = Some(file.to_path_buf());
            c.auth.admins = vec!["root".into()];
            c.auth.user_base_uri = Some("http://users.example/".into());
        }
    })
    .await
}

/// `method` on `path` of `s` as `user` (Basic, password `<user>-pw`).
pub(crate) async fn send(
    s: &TestServer,
    user: &str,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{user}-pw"));
    let auth = format!("Basic {token}");
    let mut all = headers.to_vec();
    all.push(("authorization", &auth));
    s.request_anonymous(method, &s.url(path), &all, body.to_string())
        .await
}

/// The same new path created on two nodes at once with `If-None-Match: *`: one 201 and
/// one 412 or 409 every time, never two creations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_creating_one_resource_leave_one_winner() {
    let Some(url) = database().await else { return };
    let a = node(&url, None).await;
    let b = node(&url, None).await;
    for i in 0..20 {
        let path = format!("race-{i}");
        let headers = [("if-none-match", "*"), ("content-type", "text/turtle")];
        let body = format!("<> <http://purl.org/dc/terms/title> \"{i}\" .");
        let (url_a, url_b) = (a.url(&path), b.url(&path));
        let (ra, rb) = tokio::join!(
            a.request(Method::PUT, &url_a, &headers, body.clone()),
            b.request(Method::PUT, &url_b, &headers, body.clone()),
        );
        let mut statuses = [ra.status, rb.status];
        statuses.sort();
        // The loser is refused by the precondition (412) or, when it checked that before
        // the winner's creation and waited for the lock, by the creation itself (409).
        assert!(
            statuses[0] == StatusCode::CREATED
                && [StatusCode::CONFLICT, StatusCode::PRECONDITION_FAILED].contains(&statuses[1]),
            "{path}: {statuses:?} {} {}",
            String::from_utf8_lossy(&ra.body),
            String::from_utf8_lossy(&rb.body)
        );
        // Both nodes see the one resource, with one ETag.
        let (ga, gb) = tokio::join!(
            a.request(Method::HEAD, &url_a, &[], ""),
            b.request(Method::HEAD, &url_b, &[], ""),
        );
        assert_eq!((ga.status, gb.status), (StatusCode::OK, StatusCode::OK));
        assert_eq!(ga.headers.get("etag"), gb.headers.get("etag"));
    }
}

/// An ACL replaced through node A decides node B's next answer, although B had cached the
/// ACL it replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_changed_on_one_node_decides_on_the_other() {
    let Some(url) = database().await else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = users(dir.path());
    let a = node(&url, Some(&file)).await;
    let b = node(&url, Some(&file)).await;
    let turtle = [("content-type", "text/turtle")];
    let r = send(&a, "root", Method::PUT, "c", &turtle, "").await;
    assert_eq!(r.status, StatusCode::CREATED);
    let acl_for = |user: &str| {
        format!(
            "@prefix acl: <http://www.w3.org/ns/auth/acl#> .\n\
             <#read> a acl:Authorization ; acl:agent <http://users.example/{user}> ;\n\
             acl:accessTo <{}> ; acl:mode acl:Read .",
            a.url("c")
        )
    };
    let r = send(
        &a,
        "root",
        Method::PUT,
        "c/fcr:acl",
        &turtle,
        &acl_for("alice"),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    // B decides (and caches) with alice's ACL.
    assert_eq!(
        send(&b, "alice", Method::GET, "c", &[], "").await.status,
        StatusCode::OK
    );
    assert_eq!(
        send(&b, "bob", Method::GET, "c", &[], "").await.status,
        StatusCode::FORBIDDEN
    );

    let r = send(
        &a,
        "root",
        Method::PUT,
        "c/fcr:acl",
        &turtle,
        &acl_for("bob"),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::NO_CONTENT,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    // The change reaches B with the change log's notification (milliseconds); the bound
    // is generous for a loaded machine.
    let started = std::time::Instant::now();
    loop {
        let bob = send(&b, "bob", Method::GET, "c", &[], "").await.status;
        let alice = send(&b, "alice", Method::GET, "c", &[], "").await.status;
        if (bob, alice) == (StatusCode::OK, StatusCode::FORBIDDEN) {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(15),
            "node B still answers with the old ACL: bob {bob}, alice {alice}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// PostgreSQL stopped under a node: reads and writes are refused with 503 and
/// `Retry-After` (nothing half-written), and the node serves again by itself once
/// PostgreSQL is back, without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_postgresql_is_503_until_it_is_back() {
    let Some(mut pg) = tokio::task::spawn_blocking(Postgres::start).await.unwrap() else {
        return;
    };
    let (pg_back, url) = tokio::task::spawn_blocking(move || {
        let url = pg.create_database();
        (pg, url)
    })
    .await
    .unwrap();
    pg = pg_back;
    let a = node(&url, None).await;
    let turtle = [("content-type", "text/turtle")];
    let r = a.request(Method::PUT, &a.url("kept"), &turtle, "").await;
    assert_eq!(r.status, StatusCode::CREATED);

    let pg = tokio::task::spawn_blocking(move || {
        pg.stop();
        pg
    })
    .await
    .unwrap();
    let started = std::time::Instant::now();
    let write = a.request(Method::PUT, &a.url("lost"), &turtle, "").await;
    let write_took = started.elapsed();
    let read = a.request(Method::GET, &a.url("kept"), &[], "").await;
    for (what, r) in [("write", &write), ("read", &read)] {
        assert_eq!(
            r.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{what}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert!(
            r.headers.get("retry-after").is_some(),
            "{what}: no Retry-After"
        );
    }
    eprintln!("a write with PostgreSQL down was refused after {write_took:?}");

    let mut pg = pg;
    let pg = tokio::task::spawn_blocking(move || {
        pg.start_again();
        pg
    })
    .await
    .unwrap();
    let started = std::time::Instant::now();
    loop {
        let r = a.request(Method::GET, &a.url("kept"), &[], "").await;
        if r.status == StatusCode::OK {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the node did not come back: {} {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The refused write left nothing; a new one goes through.
    let r = a.request(Method::GET, &a.url("lost"), &[], "").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = a.request(Method::PUT, &a.url("lost"), &turtle, "").await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    drop(a);
    tokio::task::spawn_blocking(move || drop(pg)).await.unwrap();
}

/// PostgreSQL restarted while four clients write: every answer is 201 (a write that waited
/// for the restart), or 503 with `Retry-After` (never a 500 or a hang), writes succeed again after the restart, and every
/// write acknowledged with 201, before, during or after, is there afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgresql_restarted_under_writes_loses_nothing_acknowledged() {
    let Some(pg) = tokio::task::spawn_blocking(Postgres::start).await.unwrap() else {
        return;
    };
    let (pg, url) = tokio::task::spawn_blocking(move || {
        let url = pg.create_database();
        (pg, url)
    })
    .await
    .unwrap();
    let a = std::sync::Arc::new(node(&url, None).await);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (a, stop) = (a.clone(), stop.clone());
            tokio::spawn(async move {
                let turtle = [("content-type", "text/turtle")];
                let mut answers = Vec::new();
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let path = format!("w{w}-{n}");
                    let started = std::time::Instant::now();
                    let r = a.request(Method::PUT, &a.url(&path), &turtle, "").await;
                    let retry_after = r.headers.get("retry-after").is_some();
                    answers.push((path, r.status, retry_after, started.elapsed(), r.text()));
                    n += 1;
                    if r.status != StatusCode::CREATED {
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                }
                answers
            })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let pg = tokio::task::spawn_blocking(move || {
        let mut pg = pg;
        pg.stop();
        // Longer than the catalog's wait for a connection (3 s): some writes are refused.
        std::thread::sleep(std::time::Duration::from_secs(6));
        pg.start_again();
        pg
    })
    .await
    .unwrap();
    let restarted = std::time::Instant::now();
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut answers = Vec::new();
    for w in writers {
        answers.extend(w.await.unwrap());
    }
    let refused = answers
        .iter()
        .filter(|a| a.1 == StatusCode::SERVICE_UNAVAILABLE)
        .count();
    eprintln!(
        "{} writes: {} refused with 503, restart done {:?} before the end",
        answers.len(),
        refused,
        restarted.elapsed()
    );
    for (path, status, retry_after, took, body) in &answers {
        assert!(
            *status == StatusCode::CREATED
                || (*status == StatusCode::SERVICE_UNAVAILABLE && *retry_after),
            "PUT {path}: {status} after {took:?} (Retry-After: {retry_after}): {body}"
        );
        assert!(
            *took < std::time::Duration::from_secs(30),
            "PUT {path} hung for {took:?}"
        );
    }
    assert!(refused > 0, "the outage was seen by no write");
    // Writes resumed: the last write of every client went through.
    let mut last: std::collections::BTreeMap<&str, StatusCode> = Default::default();
    for (path, status, ..) in &answers {
        last.insert(path.split('-').next().unwrap(), *status);
    }
    assert!(
        last.values().all(|s| *s == StatusCode::CREATED),
        "the last write of a client failed: {last:?}"
    );
    for (path, status, ..) in &answers {
        let r = a.request(Method::GET, &a.url(path), &[], "").await;
        let expected = if *status == StatusCode::CREATED {
            StatusCode::OK
        } else {
            StatusCode::NOT_FOUND
        };
        assert_eq!(r.status, expected, "GET {path} after the PUT's {status}");
    }
    drop(a);
    tokio::task::spawn_blocking(move || drop(pg)).await.unwrap();
}

/// `fcr:search/status` of `node`, polled until `done` holds for it; panics with the last
/// status after `patience`.
async fn search_status_until(
    node: &TestServer,
    what: &str,
    patience: std::time::Duration,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let started = std::time::Instant::now();
    loop {
        let r = node.get("fcr:search/status", &[]).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        let status: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        if done(&status) {
            return status;
        }
        assert!(
            started.elapsed() < patience,
            "waited {patience:?} for {what}: {status}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// A rebuild of the search index asked for while PostgreSQL is away fails and says why in
/// `fcr:search/status`; the indexer tries again by itself, and once PostgreSQL is back the
/// rebuild finishes, the error is gone and what was indexed before is found again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_rebuild_cut_by_a_postgresql_outage_finishes_once_it_is_back() {
    let Some(pg) = tokio::task::spawn_blocking(Postgres::start).await.unwrap() else {
        return;
    };
    let (pg_back, url) = tokio::task::spawn_blocking(move || {
        let url = pg.create_database();
        (pg, url)
    })
    .await
    .unwrap();
    let a = node(&url, None).await;
    let body = "<> <http://purl.org/dc/elements/1.1/title> \"zebracorn\" .";
    let r = a
        .request(
            Method::PUT,
            &a.url("kept"),
            &[("content-type", "text/turtle")],
            body,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let patience = std::time::Duration::from_secs(90);
    let before = search_status_until(&a, "the index to catch up", patience, |s| {
        s["lag"] == 0 && s["reindex"]["running"] != true
    })
    .await;

    let mut pg = tokio::task::spawn_blocking(move || {
        let pg = pg_back;
        pg.stop();
        pg
    })
    .await
    .unwrap();
    let r = a
        .request(Method::POST, &a.url("fcr:search/reindex"), &[], "")
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text());
    let failing = search_status_until(&a, "the rebuild to fail", patience, |s| {
        s["error"].is_string()
    })
    .await;
    eprintln!("while PostgreSQL is away: {}", failing["error"]);

    pg = tokio::task::spawn_blocking(move || {
        pg.start_again();
        pg
    })
    .await
    .unwrap();
    let done = search_status_until(&a, "the rebuild to finish", patience, |s| {
        s["error"].is_null() && s["reindex"]["running"] == false && s["reindex"]["error"].is_null()
    })
    .await;
    assert_eq!(done["documents"], before["documents"], "{done}");
    let r = a.get("fcr:search?q=zebracorn", &[]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert!(r.text().contains("/kept"), "{}", r.text());
    a.stop().await;
    tokio::task::spawn_blocking(move || drop(pg)).await.unwrap();
}
