//! The replayable event log (`/rest/fcr:events`, issue 11 §3) and the events every change
//! makes (Fedora API §6): one per changed resource, the parent whose containment changed,
//! every resource of a recursive delete and purge, a transaction's only at its commit.

use std::time::Duration;

use crate::common::*;
use arca_testkit::TestServer;
use http::Method;
use serde_json::Value;

/// `(type, path below /rest)` of every event after `since`, in order.
async fn events(s: &TestServer, since: i64) -> Vec<(String, String)> {
    let page = page(s, &format!("since={since}&limit=1000")).await;
    page["orderedItems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let url = e["object"]["id"].as_str().unwrap();
            let path = url.split("/rest").nth(1).unwrap().to_string();
            (e["type"][0].as_str().unwrap().to_string(), path)
        })
        .collect()
}

async fn page(s: &TestServer, query: &str) -> Value {
    let r = s.get(&format!("fcr:events?{query}"), &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/ld+json"));
    serde_json::from_slice(&r.body).unwrap()
}

async fn last(s: &TestServer) -> i64 {
    page(s, "limit=1").await["last"].as_i64().unwrap()
}

fn ev(kind: &str, path: &str) -> (String, String) {
    (kind.to_string(), path.to_string())
}

/// §6.1: every resource an operation changes gets an event, the parent too; a recursive
/// delete and a purge name each resource; a description's change is also its binary's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_changed_resource_gets_its_event() {
    let s = TestServer::start().await;
    let start = last(&s).await;
    let ua = ("user-agent", "camel-toolbox/6.0");
    assert_eq!(
        put(&s, "c1", &[TURTLE, ua], "<> a <http://example.org/Book> .")
            .await
            .status,
        201
    );
    assert_eq!(
        put_bytes(&s, "c1/b1", &[("content-type", "text/plain")], b"hello")
            .await
            .status,
        201
    );
    let patch = "INSERT DATA { <> <http://purl.org/dc/terms/title> \"t\" }";
    assert_eq!(
        s.request(
            Method::PATCH,
            &s.url("c1/b1/fcr:metadata"),
            &[SPARQL],
            patch
        )
        .await
        .status,
        204
    );
    assert_eq!(
        s.request(Method::DELETE, &s.url("c1"), &[], "")
            .await
            .status,
        204
    );
    assert_eq!(
        s.request(Method::DELETE, &s.url("c1/fcr:tombstone"), &[], "")
            .await
            .status,
        204
    );
    assert_eq!(
        events(&s, start).await,
        [
            ev("Create", "/c1"),
            ev("Update", "/"),
            ev("Create", "/c1/b1"),
            ev("Update", "/c1"),
            ev("Update", "/c1/b1"),
            ev("Update", "/c1/b1/fcr:metadata"),
            ev("Delete", "/c1"),
            ev("Delete", "/c1/b1"),
            ev("Delete", "/c1/b1/fcr:metadata"),
            ev("Update", "/"),
            ev("Purge", "/c1/b1"),
            ev("Purge", "/c1/b1/fcr:metadata"),
            ev("Purge", "/c1"),
        ]
    );
    // The first event in full: Fedora's shape, with the agent and the types.
    let first = &page(&s, &format!("since={start}&limit=1")).await["orderedItems"][0];
    assert_eq!(first["name"], "create resource");
    assert_eq!(first["actor"][0]["type"], "Person");
    assert_eq!(
        first["actor"][0]["id"],
        "info:fedora/local-user#fedoraAdmin"
    );
    assert_eq!(
        first["actor"][1],
        serde_json::json!({"type": "Application", "name": "camel-toolbox/6.0"})
    );
    let types: Vec<&str> = first["object"]["type"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for t in [
        "http://example.org/Book",
        LDP_BASIC_CONTAINER,
        LDP_CONTAINER,
        LDP_RDF_SOURCE,
        "http://fedora.info/definitions/v4/repository#Container",
        "http://mementoweb.org/ns#TimeGate",
        "http://www.w3.org/ns/prov#Entity",
    ] {
        assert!(types.contains(&t), "{t} missing from {types:?}");
    }
    assert_eq!(first["seq"].as_i64(), Some(start + 1));
    assert!(first["published"].as_str().unwrap().ends_with('Z'));
    assert!(
        first.get("content").is_none() && !first.to_string().contains("Book\\\""),
        "no content in events"
    );
}

/// Issue 11 §1: a transaction's changes become events only when it commits; a rolled-back
/// one leaves none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_reports_its_changes_at_commit_only() {
    let s = TestServer::start().await;
    let start = last(&s).await;
    let tx = begin(&s).await;
    let inside = ("atomic-id", tx.as_str());
    assert_eq!(put(&s, "in-tx", &[TURTLE, inside], "").await.status, 201);
    assert_eq!(
        put(&s, "in-tx/child", &[TURTLE, inside], "").await.status,
        201
    );
    assert_eq!(events(&s, start).await, []);
    let rolled = begin(&s).await;
    let other = ("atomic-id", rolled.as_str());
    assert_eq!(put(&s, "never", &[TURTLE, other], "").await.status, 201);
    assert_eq!(
        s.request(Method::DELETE, &rolled, &[], "").await.status,
        204
    );
    assert_eq!(s.request(Method::PUT, &tx, &[], "").await.status, 204);
    let got = events(&s, start).await;
    assert!(got.contains(&ev("Create", "/in-tx")), "{got:?}");
    assert!(got.contains(&ev("Create", "/in-tx/child")), "{got:?}");
    assert!(!got.iter().any(|(_, p)| p == "/never"), "{got:?}");
}

async fn begin(s: &TestServer) -> String {
    let r = s.request(Method::POST, &s.url("fcr:tx"), &[], "").await;
    assert_eq!(r.status, 201);
    r.header("location").unwrap().to_string()
}

/// Issue 11 bad input: `since` beyond the end, negative or not a number, and a bad
/// `limit` are 400; anonymous callers are asked to log in; other methods 405.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_positions_are_refused() {
    let s = TestServer::start().await;
    let end = last(&s).await;
    for q in [
        format!("since={}", end + 1),
        "since=-1".into(),
        "since=x".into(),
        "limit=0".into(),
        "limit=100000".into(),
    ] {
        let r = s.get(&format!("fcr:events?{q}"), &[]).await;
        assert_eq!(r.status, 400, "{q}: {}", r.text());
        assert!(!r.text().is_empty());
    }
    let r = s
        .request_anonymous(Method::GET, &s.url("fcr:events"), &[], "")
        .await;
    assert_eq!(r.status, 401);
    let r = s.request(Method::POST, &s.url("fcr:events"), &[], "").await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, HEAD, OPTIONS"));
}

/// Paging: `limit` bounds a page, `next` continues after its last event, and the pages
/// together are the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_follow_their_next_links() {
    let s = TestServer::start().await;
    let start = last(&s).await;
    for i in 0..7 {
        assert_eq!(put(&s, &format!("p{i}"), &[TURTLE], "").await.status, 201);
    }
    let all = events(&s, start).await;
    assert_eq!(all.len(), 14, "a create and a parent update each: {all:?}");
    let mut seen = Vec::new();
    let mut query = format!("since={start}&limit=3");
    loop {
        let p = page(&s, &query).await;
        let items = p["orderedItems"].as_array().unwrap().clone();
        assert!(items.len() <= 3);
        if items.is_empty() {
            break;
        }
        seen.extend(items.iter().map(|e| e["seq"].as_i64().unwrap()));
        let next = p["next"].as_str().unwrap();
        query = next.split_once('?').unwrap().1.to_string();
    }
    let expected: Vec<i64> = (start + 1..=start + 14).collect();
    assert_eq!(seen, expected);
}

/// The live stream: Server-Sent Events from `Last-Event-ID`, then new changes as they
/// commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_resumes_from_last_event_id_and_follows_new_changes() {
    let s = TestServer::start().await;
    assert_eq!(put(&s, "before", &[TURTLE], "").await.status, 201);
    let resume_after = last(&s).await - 2; // before the create of `before`
    let url = s.url("fcr:events");
    let client = sse::Client::new();
    let mut stream = client
        .stream(
            &url,
            &[
                ("accept", "text/event-stream"),
                ("last-event-id", &resume_after.to_string()),
            ],
        )
        .await;
    let first = stream.next_event(Duration::from_secs(10)).await.unwrap();
    assert_eq!(first.id, resume_after + 1);
    assert_eq!(first.kind, "Create");
    assert!(first.data.contains("/rest/before\""), "{}", first.data);
    let _parent = stream.next_event(Duration::from_secs(10)).await.unwrap();
    assert_eq!(put(&s, "after", &[TURTLE], "").await.status, 201);
    let live = stream.next_event(Duration::from_secs(10)).await.unwrap();
    assert_eq!(live.id, resume_after + 3);
    assert!(live.data.contains("/rest/after\""), "{}", live.data);
}

/// A fixity check's PREMIS event (issue 41) streams under the event name `Fixity`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixity_event_streams_as_fixity() {
    let s = TestServer::start().await;
    assert_eq!(put(&s, "checked", &[TURTLE], "").await.status, 201);
    let after = last(&s).await;
    let mut stream = sse::Client::new()
        .stream(
            &s.url("fcr:events"),
            &[
                ("accept", "text/event-stream"),
                ("last-event-id", &after.to_string()),
            ],
        )
        .await;
    let repo = s.repo().unwrap();
    let id = arca_model::FedoraId::from_path("checked").unwrap();
    let seq = repo
        .record_fixity(
            &id,
            arca_catalog::FixityOutcome::Failure,
            "content_missing: gone",
        )
        .await
        .unwrap();
    let e = stream.next_event(Duration::from_secs(10)).await.unwrap();
    assert_eq!((e.id, e.kind.as_str()), (seq, "Fixity"));
    assert!(e.data.contains("eventOutcome/fai"), "{}", e.data);
    assert!(e.data.contains("content_missing: gone"), "{}", e.data);
}

/// A tiny SSE reader over a raw TCP connection (the test client buffers whole bodies).
mod sse {
    use std::time::Duration;

    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::TcpStream;

    pub struct Client;

    pub struct Stream {
        reader: BufReader<TcpStream>,
    }

    #[derive(Debug)]
    pub struct Event {
        pub id: i64,
        pub kind: String,
        pub data: String,
    }

    impl Client {
        pub fn new() -> Self {
            Client
        }

        pub async fn stream(&self, url: &str, headers: &[(&str, &str)]) -> Stream {
            let rest = url.strip_prefix("http://").unwrap();
            let (host, path) = rest.split_once('/').unwrap();
            let mut tcp = TcpStream::connect(host).await.unwrap();
            let mut head = format!(
                "GET /{path} HTTP/1.1\r\nhost: {host}\r\nauthorization: {}\r\n",
                arca_testkit::ADMIN_AUTHORIZATION
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            tcp.write_all(head.as_bytes()).await.unwrap();
            let mut reader = BufReader::new(tcp);
            let mut line = String::new();
            reader.read_line(&mut line).await.unwrap();
            assert!(line.starts_with("HTTP/1.1 200"), "{line}");
            loop {
                line.clear();
                reader.read_line(&mut line).await.unwrap();
                if line == "\r\n" {
                    break;
                }
            }
            Stream { reader }
        }
    }

    impl Stream {
        /// The next event (chunked transfer framing lines are skipped).
        pub async fn next_event(&mut self, limit: Duration) -> Option<Event> {
            tokio::time::timeout(limit, async {
                let (mut id, mut kind) = (None, String::new());
                let mut line = String::new();
                loop {
                    line.clear();
                    if self.reader.read_line(&mut line).await.ok()? == 0 {
                        return None;
                    }
                    let l = line.trim_end_matches(['\r', '\n']);
                    if let Some(v) = l.strip_prefix("id: ") {
                        id = v.parse().ok();
                    } else if let Some(v) = l.strip_prefix("event: ") {
                        kind = v.to_string();
                    } else if let Some(v) = l.strip_prefix("data: ") {
                        if let Some(id) = id {
                            let data = v.to_string();
                            return Some(Event { id, kind, data });
                        }
                    }
                }
            })
            .await
            .ok()
            .flatten()
        }
    }
}
