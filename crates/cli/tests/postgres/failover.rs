//! A PostgreSQL failover under writes: two `arca serve` nodes on MinIO whose `catalog.url`
//! names a synchronous primary and its streaming standby (`target_session_attrs=read-write`)
//! keep writing through the primary's stop and the standby's promotion. Writes answer 201,
//! or 503 with `Retry-After` while no host takes writes (never 500, never a hang); they
//! resume on the new primary; every write acknowledged is there afterwards on every node,
//! the others whole or absent; a node started afterwards with the same URL, the old primary
//! down, finds the new one. `NOT RUN` without PostgreSQL or MinIO unless
//! `ARCA_REQUIRE_POSTGRES=1` / `ARCA_REQUIRE_S3=1`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cluster::check_write;
use crate::common::{Arca, Http};
use arca_testkit::postgres::{Postgres, Setup};
use arca_testkit::s3::{Minio, BUCKET, REGION, ROOT_PASSWORD, ROOT_USER};
use hyper::Method;

const TEXT: (&str, &str) = ("content-type", "text/plain");

/// One write: path, body, status, whether `Retry-After` came, time taken, answer's body.
type Outcome = (String, String, u16, bool, Duration, String);

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
    let Some(minio) = Minio::start() else {
        return;
    };
    let database = url.rsplit('/').next().unwrap();
    let hosts = format!(
        "postgres://arca@127.0.0.1:{},127.0.0.1:{}/{database}?target_session_attrs=read-write",
        primary.port(),
        standby.port()
    );
    let endpoint = minio.endpoint();
    let env = [
        ("ARCA_CATALOG_URL", hosts.as_str()),
        ("ARCA_S3_BUCKET", BUCKET),
        ("ARCA_S3_ENDPOINT", &endpoint),
        ("ARCA_S3_PREFIX", "failover"),
        ("ARCA_S3_REGION", REGION),
        ("AWS_ACCESS_KEY_ID", ROOT_USER),
        ("AWS_SECRET_ACCESS_KEY", ROOT_PASSWORD),
    ];
    let dir = tempfile::tempdir().unwrap();
    let nodes = [
        Arca::serve_with(&dir.path().join("a"), &env),
        Arca::serve_with(&dir.path().join("b"), &env),
    ];
    let http = Arc::new(Http::new());

    let stop = Arc::new(AtomicBool::new(false));
    let outcomes = Arc::new(Mutex::new(Vec::<Outcome>::new()));
    let mut writers = Vec::new();
    for w in 0..4 {
        let (http, stop, outcomes) = (http.clone(), stop.clone(), outcomes.clone());
        let base = nodes[w % 2].base.clone();
        writers.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let path = format!("/w{w}-{i}");
                let body = format!("writer {w} write {i}");
                let started = Instant::now();
                let r = http
                    .request(Method::PUT, &format!("{base}{path}"), &[TEXT], body.clone())
                    .await;
                let status = r.status.as_u16();
                let retry_after = r.header("retry-after").is_some();
                let took = started.elapsed();
                outcomes
                    .lock()
                    .unwrap()
                    .push((path, body, status, retry_after, took, r.text()));
                if status != 201 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                i += 1;
            }
        }));
    }
    // The failover comes once writes flow.
    let started = Instant::now();
    while outcomes
        .lock()
        .unwrap()
        .iter()
        .filter(|o| o.2 == 201)
        .count()
        < 8
        && started.elapsed() < Duration::from_secs(30)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
    // Writes resume on the new primary: each writer gets a 201 after the promotion.
    let seen = outcomes.lock().unwrap().len();
    loop {
        let resumed = {
            let outcomes = outcomes.lock().unwrap();
            (0..4).all(|w| {
                outcomes[seen..]
                    .iter()
                    .any(|o| o.0.starts_with(&format!("/w{w}-")) && o.2 == 201)
            })
        };
        if resumed {
            break;
        }
        assert!(
            promoted.elapsed() < Duration::from_secs(20),
            "writes did not resume after the promotion: {:?}",
            &outcomes.lock().unwrap()[seen..]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let resumed = promoted.elapsed();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let outcomes = outcomes.lock().unwrap().clone();
    let refused = outcomes.iter().filter(|o| o.2 == 503).count();
    eprintln!(
        "{} writes: {} created, {refused} refused with 503; every writer wrote again {resumed:?} \
         after the promotion",
        outcomes.len(),
        outcomes.iter().filter(|o| o.2 == 201).count(),
    );
    for (path, _, status, retry_after, took, answer) in &outcomes {
        assert!(
            *status == 201 || (*status == 503 && *retry_after),
            "PUT {path}: {status} after {took:?} (Retry-After: {retry_after}): {answer}"
        );
        assert!(
            *took < Duration::from_secs(30),
            "PUT {path} hung for {took:?}"
        );
    }
    assert!(refused > 0, "the failover was seen by no write");

    // A node started now, with the same URL and the old primary down, takes the new one.
    let late = Arca::serve_with(&dir.path().join("c"), &env);
    let r = http
        .request(Method::PUT, &late.url("/late"), &[TEXT], "late")
        .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    for node in nodes.iter().chain([&late]) {
        for (path, body, status, ..) in &outcomes {
            // A refused write may have committed (its answer was lost with the primary).
            check_write(&http, node, path, body, *status == 201).await;
        }
        let r = http.request(Method::GET, &node.url("/late"), &[], "").await;
        assert_eq!(
            r.status.as_u16(),
            200,
            "the late node's write on {}",
            node.base
        );
    }
    drop((nodes, late));
    tokio::task::spawn_blocking(move || drop((primary, standby)))
        .await
        .unwrap();
}
