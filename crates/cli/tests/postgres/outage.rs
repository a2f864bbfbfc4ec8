//! The S3 server stopped and started again while two nodes take writes from four clients:
//! every write meanwhile is a prompt 503 with `Retry-After` (never a 500, never a hang),
//! reads of descriptions go on from the catalog, writes resume once the server is back,
//! every acknowledged write is there on every node, and the bucket holds only whole
//! objects that agree with the catalog, with no change left under way.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::Method;

use crate::cluster::{send, title, Cluster, TEXT, TURTLE};
use crate::common::{Arca, Http};

/// Longer than any request may take (a hang shows as a missing answer).
const HANG: Duration = Duration::from_secs(60);

/// What one client request did.
#[derive(Clone, Debug)]
struct Outcome {
    path: String,
    /// The bytes of a binary, or a container's title as its RDF shows it.
    body: String,
    container: bool,
    /// `None`: no answer within [`HANG`], or the connection failed.
    status: Option<u16>,
    retry_after: Option<String>,
    sent: Instant,
    answered: Instant,
}

impl Outcome {
    fn acknowledged(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// Writer `w`'s `i`th request: a new container, a new binary, or a replacement of the
/// writer's own binary `/s/old{w}`, in turns, to the nodes in turns.
async fn write(http: &Http, nodes: &[String], w: usize, i: usize) -> Outcome {
    let (path, body, container) = match i % 3 {
        0 => (
            format!("/s/w{w}-{i}"),
            format!("\"title {}\"", 1000 * w + i),
            true,
        ),
        1 => (
            format!("/s/w{w}-{i}"),
            format!("writer {w} binary {i}"),
            false,
        ),
        _ => (
            format!("/s/old{w}"),
            format!("writer {w} replaces {i}"),
            false,
        ),
    };
    let headers = [if container { TURTLE } else { TEXT }];
    let url = format!("{}{path}", nodes[(w + i) % nodes.len()]);
    let content = if container {
        title(1000 * w + i)
    } else {
        body.clone()
    };
    let sent = Instant::now();
    let reply =
        tokio::time::timeout(HANG, http.try_request(Method::PUT, &url, &headers, content)).await;
    let reply = reply.ok().and_then(Result::ok);
    Outcome {
        path,
        body,
        container,
        status: reply.as_ref().map(|r| r.status.as_u16()),
        retry_after: reply
            .as_ref()
            .and_then(|r| r.header("retry-after").map(str::to_string)),
        sent,
        answered: Instant::now(),
    }
}

/// Waits (a minute at most) until `enough` says yes of the outcomes so far.
async fn wait_for(outcomes: &Mutex<Vec<Outcome>>, what: &str, enough: impl Fn(&[Outcome]) -> bool) {
    let started = Instant::now();
    while !enough(&outcomes.lock().unwrap()) {
        assert!(
            started.elapsed() < HANG,
            "{what}: {:?}",
            outcomes.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_s3_server_stopped_under_writes_loses_nothing_acknowledged() {
    let Some(cluster) = Cluster::new("s3-outage").await else {
        return;
    };
    let nodes = [cluster.node("a"), cluster.node("b")];
    let http = Http::new();
    let r = send(&http, &nodes[0], Method::PUT, "/s", &[TURTLE], &title(0)).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    for w in 0..4 {
        let path = format!("/s/old{w}");
        let r = send(&http, &nodes[1], Method::PUT, &path, &[TEXT], "first").await;
        assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    }

    let stop = Arc::new(AtomicBool::new(false));
    let outcomes = Arc::new(Mutex::new(Vec::<Outcome>::new()));
    let bases: Arc<Vec<String>> = Arc::new(nodes.iter().map(|n| n.base.clone()).collect());
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (stop, outcomes, bases) = (stop.clone(), outcomes.clone(), bases.clone());
            tokio::spawn(async move {
                let http = Http::new();
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let outcome = write(&http, &bases, w, i).await;
                    outcomes.lock().unwrap().push(outcome);
                    i += 1;
                }
            })
        })
        .collect();
    let acknowledged_after = |t: Instant| {
        move |o: &[Outcome]| o.iter().filter(|o| o.sent > t && o.acknowledged()).count()
    };

    wait_for(&outcomes, "writes flow", |o| {
        acknowledged_after(Instant::now() - HANG)(o) >= 8
    })
    .await;
    tokio::task::block_in_place(|| cluster.minio.stop());
    let down = Instant::now();
    // Descriptions are answered from the catalog meanwhile, on every node.
    for node in &nodes {
        for path in ["/s", "/s/old0/fcr:metadata"] {
            let r = send(&http, node, Method::GET, path, &[], "").await;
            assert_eq!(
                r.status.as_u16(),
                200,
                "GET {path} with S3 down: {}",
                r.text()
            );
        }
    }
    // Every writer has had answers for writes sent while the server was down.
    wait_for(&outcomes, "writes answered while S3 is down", |o| {
        (0..4).all(|w| {
            o.iter()
                .filter(|o| o.sent > down && o.path.starts_with(&format!("/s/w{w}-")))
                .count()
                + o.iter()
                    .filter(|o| o.sent > down && o.path == format!("/s/old{w}"))
                    .count()
                >= 2
        })
    })
    .await;
    tokio::task::block_in_place(|| cluster.minio.start_again());
    let up = Instant::now();
    wait_for(&outcomes, "writes resume", |o| {
        acknowledged_after(up)(o) >= 8
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let outcomes = outcomes.lock().unwrap().clone();

    let during: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.sent > down && o.answered < up)
        .collect();
    assert!(!during.is_empty());
    for o in &outcomes {
        assert!(o.status.is_some(), "no answer within {HANG:?}: {o:?}");
        assert!(
            o.acknowledged() || (o.status == Some(503) && o.retry_after.is_some()),
            "every write is stored or refused with 503 and Retry-After, never failed: {o:?}"
        );
    }
    for o in &during {
        assert_eq!(o.status, Some(503), "a write while S3 is down: {o:?}");
    }
    let resumed = outcomes
        .iter()
        .filter(|o| o.sent > up && o.acknowledged())
        .map(|o| o.answered - up)
        .min()
        .unwrap();
    eprintln!(
        "S3 down for {:?}: {} writes answered 503 meanwhile; the first write after its \
         return was acknowledged {resumed:?} later; {} of {} writes acknowledged",
        up - down,
        during.len(),
        outcomes.iter().filter(|o| o.acknowledged()).count(),
        outcomes.len()
    );

    // A node started now finishes or undoes what storage cut short; then every node agrees.
    let newcomer = cluster.node("c");
    eprintln!(
        "changes left under way that the node started afterwards recovered: {}",
        newcomer
            .log()
            .matches("recovered a change a stopped node left under way")
            .count()
    );
    for node in nodes.iter().chain([&newcomer]) {
        check_outcomes(&http, node, &outcomes).await;
    }
    let heads = tokio::task::block_in_place(|| cluster.check_bucket());
    for o in outcomes.iter().filter(|o| o.acknowledged()) {
        let id = format!("info:fedora{}", o.path);
        assert!(heads.contains_key(&id), "{id} in the bucket");
    }
}

/// What `node` serves of the resources the writes named: every acknowledged write's
/// result, or for a write that was refused, its whole result or nothing (a write cut
/// short at its commit point may have taken effect).
async fn check_outcomes(http: &Http, node: &Arca, outcomes: &[Outcome]) {
    let mut paths: Vec<&str> = outcomes.iter().map(|o| o.path.as_str()).collect();
    paths.sort_unstable();
    paths.dedup();
    for path in paths {
        let writes: Vec<&Outcome> = outcomes.iter().filter(|o| o.path == path).collect();
        // Each path has one writer: its writes are in order. What may be there: the last
        // acknowledged write's result, or that of a refused write after it.
        let last = writes.iter().rposition(|o| o.acknowledged());
        let allowed: Vec<&Outcome> = writes[last.unwrap_or(0)..].to_vec();
        let r = send(http, node, Method::GET, path, &[], "").await;
        let status = r.status.as_u16();
        if status == 404 && last.is_none() && !path.contains("/old") {
            continue;
        }
        assert_eq!(status, 200, "{path} on {}: {}", node.base, r.text());
        let text = r.text();
        let found = allowed.iter().any(|o| {
            if o.container {
                text.contains(&o.body)
            } else {
                text == o.body
            }
        });
        let first = path.contains("/old") && last.is_none() && text == "first";
        assert!(
            found || first,
            "{path} on {}: {text:?}, not one of {allowed:?}",
            node.base
        );
    }
}
