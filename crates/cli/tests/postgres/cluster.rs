//! Three `arca serve` nodes with one PostgreSQL catalog (a private cluster from Debian's
//! package, `arca_testkit::postgres`) and one root in S3 (a private MinIO,
//! `arca_testkit::s3`) are one repository: a client going round the nodes sees every change
//! on every node at once; ETags and conditional requests agree; a transaction's requests
//! may go to different nodes; two nodes writing one resource at once never corrupt it; a
//! node killed in the middle of writes leaves nothing half-done once another node has
//! recovered its changes; each node's search index follows the shared change log. `NOT RUN`
//! without PostgreSQL or MinIO unless `ARCA_REQUIRE_POSTGRES=1` / `ARCA_REQUIRE_S3=1`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::{Arca, Http};
use arca_testkit::postgres::Postgres;
use arca_testkit::s3::{Minio, BUCKET, REGION, ROOT_PASSWORD, ROOT_USER};
use hyper::Method;

pub(crate) const TURTLE: (&str, &str) = ("content-type", "text/turtle");
/// The URL the nodes answer for (a load balancer's, in use).
pub(crate) const PUBLIC_BASE: &str = "http://repository.test/rest";
pub(crate) const TEXT: (&str, &str) = ("content-type", "text/plain");

/// The shared catalog and bucket of one cluster.
pub(crate) struct Cluster {
    /// The environment every node gets.
    pub(crate) env: Vec<(String, String)>,
    pub(crate) dir: tempfile::TempDir,
    /// The cluster's own S3 server (to stop and start again).
    pub(crate) minio: Minio,
    /// The PostgreSQL server holding the catalog, and the catalog's URL.
    pub(crate) pg: &'static Postgres,
    pub(crate) catalog: String,
    /// The key prefix of the root in the bucket.
    prefix: String,
}

impl Cluster {
    pub(crate) async fn new(prefix: &str) -> Option<Cluster> {
        let pg = tokio::task::spawn_blocking(Postgres::shared)
            .await
            .unwrap()?;
        let minio = Minio::start()?;
        let catalog = tokio::task::spawn_blocking(|| pg.create_database())
            .await
            .unwrap();
        let env = vec![
            ("ARCA_CATALOG_URL".to_string(), catalog.clone()),
            // Behind a load balancer every node answers for one URL.
            ("ARCA_BASE_URL".to_string(), PUBLIC_BASE.to_string()),
            ("ARCA_S3_BUCKET".into(), BUCKET.into()),
            ("ARCA_S3_ENDPOINT".into(), minio.endpoint()),
            ("ARCA_S3_PREFIX".into(), prefix.into()),
            ("ARCA_S3_REGION".into(), REGION.into()),
            ("AWS_ACCESS_KEY_ID".into(), ROOT_USER.into()),
            ("AWS_SECRET_ACCESS_KEY".into(), ROOT_PASSWORD.into()),
        ];
        Some(Cluster {
            env,
            dir: tempfile::tempdir().unwrap(),
            minio,
            pg,
            catalog,
            prefix: prefix.to_string(),
        })
    }

    /// A node with a data directory of its own (local caches only: the search index).
    pub(crate) fn node(&self, name: &str) -> Arca {
        self.node_with(name, &[])
    }

    /// [`node`](Self::node) with extra environment variables.
    pub(crate) fn node_with(&self, name: &str, extra: &[(&str, &str)]) -> Arca {
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain(extra.iter().copied())
            .collect();
        Arca::serve_with(&self.dir.path().join(name), &env)
    }

    /// Rows of `sql` on the catalog (see [`Postgres::query`]).
    pub(crate) fn query(&self, sql: &str) -> String {
        self.pg.query(&self.catalog, sql)
    }

    /// Checks the root in the bucket as a whole, once no node writes: every object valid
    /// (its inventories parse and match their sidecars, versions without gaps; ocfl-py's
    /// validation where it is installed), each object's head the newest version the catalog
    /// records for it, and no change left under way in the catalog. Returns the heads by
    /// object id.
    pub(crate) fn check_bucket(&self) -> BTreeMap<String, u32> {
        assert_eq!(
            self.query("SELECT count(*) FROM pending_writes"),
            "0",
            "changes left under way: {}",
            self.query("SELECT op, object, decided FROM pending_writes")
        );
        let local = self.dir.path().join("bucket");
        common::download(&common::s3_store(&self.minio, &self.prefix), &local);
        let mut heads = BTreeMap::new();
        for dir in common::check_storage(&local) {
            let inventory: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.join("inventory.json")).unwrap())
                    .unwrap();
            let head = inventory["head"].as_str().unwrap()[1..].parse().unwrap();
            heads.insert(inventory["id"].as_str().unwrap().to_string(), head);
        }
        common::validate_with_ocfl_py(&local);
        let mut recorded: BTreeMap<String, u32> = BTreeMap::new();
        let rows = self.query(
            "SELECT ocfl_id, memento_version FROM resources WHERE memento_version IS NOT NULL",
        );
        for row in rows.lines() {
            let (object, version) = row.split_once('|').unwrap();
            let version: u32 = version.trim_start_matches('v').parse().unwrap();
            let newest = recorded.entry(object.to_string()).or_default();
            *newest = (*newest).max(version);
        }
        assert_eq!(
            recorded, heads,
            "the catalog's newest version of each object is its head in the bucket"
        );
        heads
    }
}

pub(crate) async fn send(
    http: &Http,
    node: &Arca,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> arca_testkit::Reply {
    http.request(method, &node.url(path), headers, body.to_string())
        .await
}

/// Checks what `node` holds at `path` after a write of `body` there: the body when the write
/// was `acknowledged`; otherwise the body or nothing (whole or absent, never half).
pub(crate) async fn check_write(
    http: &Http,
    node: &Arca,
    path: &str,
    body: &str,
    acknowledged: bool,
) {
    let r = send(http, node, Method::GET, path, &[], "").await;
    if acknowledged {
        assert_eq!(
            r.status.as_u16(),
            200,
            "acknowledged {path} on {}",
            node.base
        );
    }
    assert!(
        (r.status.as_u16() == 200 && r.text() == body) || r.status.as_u16() == 404,
        "{path} whole or absent on {}: {} {}",
        node.base,
        r.status,
        r.text()
    );
}

pub(crate) fn title(n: usize) -> String {
    format!("<> <http://purl.org/dc/terms/title> \"title {n}\" .")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_are_one_repository() {
    let Some(cluster) = Cluster::new("one").await else {
        return;
    };
    let nodes = [cluster.node("a"), cluster.node("b"), cluster.node("c")];
    let http = Http::new();

    // Round robin: each change is seen by the next node at once.
    let r = send(&http, &nodes[0], Method::PUT, "/rr", &[TURTLE], &title(0)).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    for i in 1..=12 {
        let writer = &nodes[i % 3];
        let reader = &nodes[(i + 1) % 3];
        let path = format!("/rr/item{i}");
        let r = send(
            &http,
            writer,
            Method::PUT,
            &path,
            &[TEXT],
            &format!("bytes {i}"),
        )
        .await;
        assert_eq!(r.status.as_u16(), 201, "{}", r.text());
        let r = send(&http, reader, Method::GET, &path, &[], "").await;
        assert_eq!(
            (r.status.as_u16(), r.text()),
            (200, format!("bytes {i}")),
            "{path} on the next node"
        );
        let r = send(
            &http,
            reader,
            Method::GET,
            "/rr",
            &[("accept", "application/n-triples")],
            "",
        )
        .await;
        assert!(
            r.text().contains(&format!("/rr/item{i}>")),
            "the container lists item{i} on every node"
        );
    }

    // ETags agree, and conditions hold across nodes.
    let etags: Vec<String> = etags_on(&http, &nodes, "/rr/item3").await;
    assert!(etags.iter().all(|e| *e == etags[0]), "{etags:?}");
    let r = send(
        &http,
        &nodes[2],
        Method::PUT,
        "/rr/item3",
        &[TEXT, ("if-match", &etags[0])],
        "new bytes",
    )
    .await;
    assert_eq!(r.status.as_u16(), 204, "{}", r.text());
    let r = send(
        &http,
        &nodes[1],
        Method::PUT,
        "/rr/item3",
        &[TEXT, ("if-match", &etags[0])],
        "stale",
    )
    .await;
    assert_eq!(
        r.status.as_u16(),
        412,
        "a stale ETag from another node: {}",
        r.text()
    );
    assert_eq!(
        send(&http, &nodes[0], Method::GET, "/rr/item3", &[], "")
            .await
            .text(),
        "new bytes"
    );

    // A transaction's requests go to three nodes; the commit makes all visible everywhere.
    let tx = send(&http, &nodes[0], Method::POST, "/fcr:tx", &[], "").await;
    assert_eq!(tx.status.as_u16(), 201);
    let tx_url = tx.header("location").unwrap().to_string();
    let atomic = ("atomic-id", tx_url.as_str());
    let r = send(
        &http,
        &nodes[1],
        Method::PUT,
        "/txc",
        &[TURTLE, atomic],
        &title(1),
    )
    .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    let r = send(
        &http,
        &nodes[2],
        Method::PUT,
        "/txc/bin",
        &[TEXT, atomic],
        "staged on c",
    )
    .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    let r = send(&http, &nodes[0], Method::GET, "/txc/bin", &[atomic], "").await;
    assert_eq!(
        (r.status.as_u16(), r.text()),
        (200, "staged on c".to_string()),
        "node a reads node c's staged upload"
    );
    assert_eq!(
        send(&http, &nodes[1], Method::GET, "/txc", &[], "")
            .await
            .status
            .as_u16(),
        404
    );
    assert!(tx_url.starts_with(PUBLIC_BASE), "{tx_url}");
    let r = http
        .request(
            Method::PUT,
            &tx_url.replace(PUBLIC_BASE, &nodes[1].base),
            &[],
            "",
        )
        .await;
    assert!(
        r.status.is_success(),
        "commit on node b: {} {}",
        r.status,
        r.text()
    );
    for node in &nodes {
        let r = send(&http, node, Method::GET, "/txc/bin", &[], "").await;
        assert_eq!(
            (r.status.as_u16(), r.text()),
            (200, "staged on c".to_string())
        );
    }

    // Two nodes write one resource at once: each write wins or is refused cleanly.
    let contended = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for (n, node) in nodes.iter().take(2).enumerate() {
        let (base, contended) = (node.base.clone(), contended.clone());
        tasks.push(tokio::spawn(async move {
            let http = Http::new();
            for i in 0..15 {
                let r = http
                    .request(
                        Method::PUT,
                        &format!("{base}/rr"),
                        &[TURTLE],
                        title(100 * n + i),
                    )
                    .await;
                contended.lock().unwrap().push(r.status.as_u16());
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let statuses = contended.lock().unwrap().clone();
    assert!(
        statuses.iter().all(|s| matches!(s, 204 | 409 | 412)),
        "every concurrent write is applied or refused, never failed: {statuses:?}"
    );
    assert!(statuses.iter().filter(|s| **s == 204).count() >= 15);

    // Each node's search index follows the shared change log.
    let r = send(
        &http,
        &nodes[0],
        Method::PUT,
        "/findme",
        &[TURTLE],
        "<> <http://purl.org/dc/terms/title> \"zyzzyva\" .",
    )
    .await;
    assert_eq!(r.status.as_u16(), 201);
    for node in &nodes {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let r = send(
                &http,
                node,
                Method::GET,
                "/fcr:search?q=TITLE:zyzzyva",
                &[],
                "",
            )
            .await;
            if r.text().contains("findme") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{} never found it: {}",
                node.base,
                r.text()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

async fn etags_on(http: &Http, nodes: &[Arca], path: &str) -> Vec<String> {
    let mut out = Vec::new();
    for node in nodes {
        let r = send(http, node, Method::HEAD, path, &[], "").await;
        out.push(r.header("etag").expect("an ETag").to_string());
    }
    out
}

/// A node SIGKILLed while it writes (each change pausing in its two windows) leaves changes
/// under way; the other nodes go on serving, and a node started afterwards recovers them:
/// every write the dead node acknowledged is there, on every node, the others whole or
/// absent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_leaves_nothing_half_done_for_the_others() {
    let Some(mut cluster) = Cluster::new("kill").await else {
        return;
    };
    let survivor = cluster.node("a");
    cluster
        .env
        .push(("ARCA_TEST_DIRECT_DELAY_MS".into(), "150".into()));
    let victim = cluster.node("b");
    let http = Arc::new(Http::new());
    assert_eq!(
        send(&http, &survivor, Method::PUT, "/k", &[TURTLE], "")
            .await
            .status
            .as_u16(),
        201
    );

    let stop = Arc::new(AtomicBool::new(false));
    let outcomes = Arc::new(std::sync::Mutex::new(Vec::<(String, String, bool)>::new()));
    let mut writers = Vec::new();
    for w in 0..4 {
        let (http, stop, outcomes, base) = (
            http.clone(),
            stop.clone(),
            outcomes.clone(),
            victim.base.clone(),
        );
        writers.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let path = format!("/k/w{w}-{i}");
                let body = format!("writer {w} write {i}");
                let sent = http
                    .try_request(Method::PUT, &format!("{base}{path}"), &[TEXT], body.clone())
                    .await;
                let ok = matches!(&sent, Ok(r) if r.status.is_success());
                outcomes.lock().unwrap().push((path, body, ok));
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
    while outcomes.lock().unwrap().iter().filter(|o| o.2).count() < 4
        && started.elapsed() < Duration::from_secs(30)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    victim.kill_and_join(&stop, writers).await;

    // The survivor goes on.
    let r = send(
        &http,
        &survivor,
        Method::PUT,
        "/k/after",
        &[TEXT],
        "written after the kill",
    )
    .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    // A node started now recovers what the dead one left (its locks went with it).
    cluster
        .env
        .retain(|(k, _)| k != "ARCA_TEST_DIRECT_DELAY_MS");
    let newcomer = cluster.node("c");
    assert!(
        newcomer
            .log()
            .contains("recovered a change a stopped node left under way"),
        "the kill left changes under way:\n{}",
        newcomer.log()
    );
    let outcomes = outcomes.lock().unwrap().clone();
    assert!(
        outcomes.iter().filter(|o| o.2).count() >= 4,
        "writes were acknowledged before the kill"
    );
    for node in [&survivor, &newcomer] {
        for (path, body, ok) in &outcomes {
            check_write(&http, node, path, body, *ok).await;
        }
    }
    let _: &Path = cluster.dir.path();
}

/// The offline commands work on the shared engines: `arca import fedora3` writes a Fedora 3
/// store into the bucket and the PostgreSQL catalog, and `arca rebuild` recreates the
/// catalog from the bucket; a node then serves both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_and_rebuild_work_on_postgresql_and_s3() {
    let Some(cluster) = Cluster::new("tools").await else {
        return;
    };
    let run = |args: &[&str], data: &Path| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_arca"));
        cmd.args(args).arg("--data").arg(data);
        common::scrub_env(&mut cmd);
        cmd.envs(cluster.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let out = cmd.output().expect("arca runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "arca {args:?}:\n{text}");
        text
    };
    let legacy = arca_testkit::shared().join("fedora3/legacy");
    let data = cluster.dir.path().join("offline");
    let mut import = vec!["import", "fedora3"];
    let source = legacy.to_string_lossy().into_owned();
    import.push(&source);
    run(&import, &data);

    let node = cluster.node("a");
    let http = Http::new();
    let r = send(&http, &node, Method::GET, "/demo:5", &[], "").await;
    let imported = r.status.as_u16();
    node.stop();
    let out = run(&["rebuild"], &data);
    assert!(
        out.contains("bucket \"arca-test\", prefix \"tools\""),
        "{out}"
    );
    let node = cluster.node("b");
    let r = send(&http, &node, Method::GET, "/demo:5", &[], "").await;
    assert_eq!(r.status.as_u16(), imported, "{}", r.text());
    assert_eq!(imported, 200);
}
