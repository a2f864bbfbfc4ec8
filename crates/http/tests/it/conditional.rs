//! Conditional requests: If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since on
//! reads and writes of containers, binaries and descriptions.

use std::time::{Duration, SystemTime};

use crate::common::*;
use arca_testkit::TestServer;

const TITLE: &str = "<> <http://purl.org/dc/terms/title> \"v1\" .";
const TITLE2: &str = "<> <http://purl.org/dc/terms/title> \"v2\" .";

async fn etag(s: &TestServer, path: &str) -> String {
    s.get(path, &[])
        .await
        .header("etag")
        .expect("ETag")
        .to_string()
}

fn http_date(t: SystemTime) -> String {
    httpdate::fmt_http_date(t)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etags_change_when_the_resource_changes() {
    let s = TestServer::start().await;
    container_with(&s, "c", TITLE).await;
    binary(&s, "b", "text/plain", b"one").await;
    let c1 = etag(&s, "c").await;
    let b1 = etag(&s, "b").await;
    // Unchanged: same ETag.
    assert_eq!(etag(&s, "c").await, c1);
    assert_eq!(etag(&s, "b").await, b1);
    assert_eq!(put(&s, "c", &[TURTLE], TITLE2).await.status, 204);
    let c2 = etag(&s, "c").await;
    assert_ne!(c1, c2);
    // A new child changes the container's representation, and so its ETag.
    container(&s, "c/child").await;
    assert_ne!(etag(&s, "c").await, c2);
    assert_eq!(
        put_bytes(&s, "b", &[("content-type", "text/plain")], b"two")
            .await
            .status,
        204
    );
    assert_ne!(etag(&s, "b").await, b1);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn if_match() {
    let s = TestServer::start().await;
    container_with(&s, "c", TITLE).await;
    binary(&s, "b", "text/plain", b"one").await;
    let url = s.url("c");

    // Mismatch: 412 and nothing changes, for PUT, PATCH and DELETE.
    let wrong = [("if-match", "\"not-the-etag\"")];
    let r = put(&s, "c", &[TURTLE, wrong[0]], TITLE2).await;
    assert_eq!(r.status, 412, "{}", r.text());
    let r = sparql_with(
        &s,
        "c",
        &wrong,
        "INSERT DATA { <> <http://purl.org/dc/terms/title> \"x\" }",
    )
    .await;
    assert_eq!(r.status, 412, "{}", r.text());
    let r = delete(&s, "c", &wrong).await;
    assert_eq!(r.status, 412);
    let r = put_bytes(&s, "b", &[("content-type", "text/plain"), wrong[0]], b"two").await;
    assert_eq!(r.status, 412);
    let g = graph(&s, "c", &[]).await;
    assert_eq!(g.objects(&url, DC_TITLE), vec![lit("v1")]);
    assert_eq!(&s.get("b", &[]).await.body[..], b"one");

    // Match: success.
    let tag = etag(&s, "c").await;
    let r = put(&s, "c", &[TURTLE, ("if-match", &tag)], TITLE2).await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(graph(&s, "c", &[]).await.has_lit(&url, DC_TITLE, "v2"));
    // The old ETag no longer matches.
    let r = put(&s, "c", &[TURTLE, ("if-match", &tag)], TITLE).await;
    assert_eq!(r.status, 412);
    let tag = etag(&s, "c").await;
    let r = sparql_with(
        &s,
        "c",
        &[("if-match", &tag)],
        "INSERT DATA { <> <http://purl.org/dc/terms/subject> \"s\" }",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let btag = etag(&s, "b").await;
    let r = put_bytes(
        &s,
        "b",
        &[("content-type", "text/plain"), ("if-match", &btag)],
        b"two",
    )
    .await;
    assert_eq!(r.status, 204);
    assert_eq!(&s.get("b", &[]).await.body[..], b"two");
    // A list with the right ETag in it, and `*`, match.
    let btag = etag(&s, "b").await;
    let list = format!("\"nope\", {btag}");
    let r = put_bytes(
        &s,
        "b",
        &[("content-type", "text/plain"), ("if-match", &list)],
        b"three",
    )
    .await;
    assert_eq!(r.status, 204);
    let r = put_bytes(
        &s,
        "b",
        &[("content-type", "text/plain"), ("if-match", "*")],
        b"four",
    )
    .await;
    assert_eq!(r.status, 204);
    // DELETE with the right ETag.
    let tag = etag(&s, "c").await;
    assert_eq!(delete(&s, "c", &[("if-match", &tag)]).await.status, 204);
    assert_eq!(s.get("c", &[]).await.status, 410);

    // If-Match on a resource that does not exist: 412, nothing created.
    let r = put(&s, "new", &[TURTLE, ("if-match", "*")], TITLE).await;
    assert_eq!(r.status, 412);
    assert_eq!(s.get("new", &[]).await.status, 404);
    s.stop().await;
}

async fn sparql_with(
    s: &TestServer,
    path: &str,
    extra: &[(&str, &str)],
    update: &str,
) -> arca_testkit::Reply {
    let mut h = vec![SPARQL];
    h.extend_from_slice(extra);
    patch(s, path, &h, update).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn if_none_match() {
    let s = TestServer::start().await;
    container_with(&s, "c", TITLE).await;
    binary(&s, "b", "text/plain", b"bytes").await;
    for path in ["c", "b", "b/fcr:metadata"] {
        let tag = etag(&s, path).await;
        // GET/HEAD with the current ETag: 304 without a body, with the ETag.
        let r = s.get(path, &[("if-none-match", &tag)]).await;
        assert_eq!(r.status, 304, "{path}");
        assert!(r.body.is_empty());
        assert_eq!(r.header("etag"), Some(tag.as_str()));
        let r = head(&s, path, &[("if-none-match", &tag)]).await;
        assert_eq!(r.status, 304, "{path}");
        let r = s.get(path, &[("if-none-match", "*")]).await;
        assert_eq!(r.status, 304, "{path}");
        // Another ETag: 200.
        let r = s.get(path, &[("if-none-match", "\"other\"")]).await;
        assert_eq!(r.status, 200, "{path}");
        assert!(!r.body.is_empty());
    }

    // PUT with If-None-Match: * on an existing resource: 412, unchanged.
    let r = put(&s, "c", &[TURTLE, ("if-none-match", "*")], TITLE2).await;
    assert_eq!(r.status, 412, "{}", r.text());
    assert!(graph(&s, "c", &[])
        .await
        .has_lit(&s.url("c"), DC_TITLE, "v1"));
    let r = put_bytes(
        &s,
        "b",
        &[("content-type", "text/plain"), ("if-none-match", "*")],
        b"x",
    )
    .await;
    assert_eq!(r.status, 412);
    assert_eq!(&s.get("b", &[]).await.body[..], b"bytes");
    // ... and on a new path it creates.
    let r = put(&s, "fresh", &[TURTLE, ("if-none-match", "*")], TITLE).await;
    assert_eq!(r.status, 201, "{}", r.text());
    // If-None-Match with the current ETag on a write: 412.
    let tag = etag(&s, "fresh").await;
    let r = put(&s, "fresh", &[TURTLE, ("if-none-match", &tag)], TITLE2).await;
    assert_eq!(r.status, 412);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn if_modified_since() {
    let s = TestServer::start().await;
    container(&s, "c").await;
    binary(&s, "b", "text/plain", b"bytes").await;
    for path in ["c", "b", "b/fcr:metadata"] {
        let r = s.get(path, &[]).await;
        let lm = r
            .header("last-modified")
            .expect("Last-Modified")
            .to_string();
        let r = s.get(path, &[("if-modified-since", &lm)]).await;
        assert_eq!(r.status, 304, "{path}");
        assert!(r.body.is_empty());
        let later = http_date(SystemTime::now() + Duration::from_secs(3600));
        assert_eq!(
            s.get(path, &[("if-modified-since", &later)]).await.status,
            304
        );
        let earlier = http_date(SystemTime::now() - Duration::from_secs(3600));
        let r = s.get(path, &[("if-modified-since", &earlier)]).await;
        assert_eq!(r.status, 200, "{path}");
        assert!(!r.body.is_empty());
        // If-None-Match takes precedence over If-Modified-Since.
        let r = s
            .get(
                path,
                &[("if-modified-since", &lm), ("if-none-match", "\"other\"")],
            )
            .await;
        assert_eq!(r.status, 200, "{path}");
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn if_unmodified_since() {
    let s = TestServer::start().await;
    container_with(&s, "c", TITLE).await;
    binary(&s, "b", "text/plain", b"bytes").await;
    let earlier = http_date(SystemTime::now() - Duration::from_secs(3600));
    let later = http_date(SystemTime::now() + Duration::from_secs(3600));

    let r = put(
        &s,
        "c",
        &[TURTLE, ("if-unmodified-since", &earlier)],
        TITLE2,
    )
    .await;
    assert_eq!(r.status, 412);
    let r = sparql_with(
        &s,
        "c",
        &[("if-unmodified-since", &earlier)],
        "INSERT DATA { <> <http://purl.org/dc/terms/subject> \"s\" }",
    )
    .await;
    assert_eq!(r.status, 412);
    let r = put_bytes(
        &s,
        "b",
        &[
            ("content-type", "text/plain"),
            ("if-unmodified-since", &earlier),
        ],
        b"x",
    )
    .await;
    assert_eq!(r.status, 412);
    assert_eq!(
        delete(&s, "b", &[("if-unmodified-since", &earlier)])
            .await
            .status,
        412
    );
    let g = graph(&s, "c", &[]).await;
    assert_eq!(g.objects(&s.url("c"), DC_TITLE), vec![lit("v1")]);
    assert_eq!(&s.get("b", &[]).await.body[..], b"bytes");

    let r = put(&s, "c", &[TURTLE, ("if-unmodified-since", &later)], TITLE2).await;
    assert_eq!(r.status, 204, "{}", r.text());
    let lm = s
        .get("b", &[])
        .await
        .header("last-modified")
        .unwrap()
        .to_string();
    let r = put_bytes(
        &s,
        "b",
        &[("content-type", "text/plain"), ("if-unmodified-since", &lm)],
        b"x",
    )
    .await;
    assert_eq!(r.status, 204);
    // If-Match takes precedence over If-Unmodified-Since.
    let tag = etag(&s, "c").await;
    let r = put(
        &s,
        "c",
        &[
            TURTLE,
            ("if-match", &tag),
            ("if-unmodified-since", &earlier),
        ],
        TITLE,
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_tokens_change_with_the_resource_and_guard_writes() {
    // Fedora API 3.10: X-State-Token on GET/HEAD; X-If-State-Token on PUT/PATCH → 412 when
    // it does not match.
    let s = TestServer::start().await;
    assert_eq!(put(&s, "st", &[TURTLE], "").await.status, 201);
    let token = |r: &arca_testkit::Reply| r.header("x-state-token").unwrap_or("").to_string();
    let first = token(&s.get("st", &[]).await);
    assert!(!first.is_empty());
    let head = s.request(http::Method::HEAD, &s.url("st"), &[], "").await;
    assert_eq!(token(&head), first);

    let body = "<> <http://purl.org/dc/terms/title> \"t\" .";
    let r = put(&s, "st", &[TURTLE, ("x-if-state-token", "stale")], body).await;
    assert_eq!(r.status, 412, "{}", r.text());
    let update = "INSERT DATA { <> <http://purl.org/dc/terms/title> \"p\" . }";
    let r = patch(&s, "st", &[SPARQL, ("x-if-state-token", "stale")], update).await;
    assert_eq!(r.status, 412, "{}", r.text());
    assert_eq!(
        token(&s.get("st", &[]).await),
        first,
        "a refused write changed the state"
    );

    let r = put(&s, "st", &[TURTLE, ("x-if-state-token", &first)], body).await;
    assert_eq!(r.status, 204, "{}", r.text());
    let second = token(&s.get("st", &[]).await);
    assert_ne!(second, first);
    // The old token no longer matches; the new one does.
    let r = patch(&s, "st", &[SPARQL, ("x-if-state-token", &first)], update).await;
    assert_eq!(r.status, 412);
    let r = patch(&s, "st", &[SPARQL, ("x-if-state-token", &second)], update).await;
    assert_eq!(r.status, 204, "{}", r.text());
    // A new child changes the container's state as well.
    let third = token(&s.get("st", &[]).await);
    assert_eq!(put(&s, "st/child", &[TURTLE], "").await.status, 201);
    assert_ne!(token(&s.get("st", &[]).await), third);
    // Binaries have one too.
    let r = put_bytes(&s, "st/bin", &[("content-type", "text/plain")], b"x").await;
    assert_eq!(r.status, 201);
    let b = token(&s.get("st/bin", &[]).await);
    let r = put_bytes(
        &s,
        "st/bin",
        &[("content-type", "text/plain"), ("x-if-state-token", "no")],
        b"y",
    )
    .await;
    assert_eq!(r.status, 412);
    let r = put_bytes(
        &s,
        "st/bin",
        &[("content-type", "text/plain"), ("x-if-state-token", &b)],
        b"y",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    s.stop().await;
}
