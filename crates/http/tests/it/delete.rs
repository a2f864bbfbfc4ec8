//! DELETE leaves tombstones (410 with a hasTombstone link), recursively; DELETE on
//! `…/fcr:tombstone` purges, after which the path is free again.

use crate::common::*;
use arca_testkit::TestServer;
use http::Method;

fn assert_gone(s: &TestServer, r: &arca_testkit::Reply, path: &str) {
    assert_eq!(r.status, 410, "{path}: {}", r.text());
    let tomb = format!("{}/fcr:tombstone", s.url(path));
    assert!(
        r.has_link(&tomb, "hasTombstone"),
        "{path}: links {}",
        r.header_all("link")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_leaves_a_tombstone_and_updates_the_parent() {
    let s = TestServer::start().await;
    container(&s, "parent").await;
    container(&s, "parent/keep").await;
    container(&s, "parent/gone").await;
    let etag = s
        .get("parent", &[])
        .await
        .header("etag")
        .unwrap()
        .to_string();

    let r = delete(&s, "parent/gone", &[]).await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_gone(&s, &s.get("parent/gone", &[]).await, "parent/gone");
    assert_gone(&s, &head(&s, "parent/gone", &[]).await, "parent/gone");
    assert_eq!(options(&s, "parent/gone").await.status, 410);
    // LDP 5.2.5: the parent no longer contains it, and its ETag changed.
    assert_eq!(children(&s, "parent").await, vec![s.url("parent/keep")]);
    assert_ne!(
        s.get("parent", &[]).await.header("etag"),
        Some(etag.as_str())
    );

    // Writes to a deleted resource are refused with 410 too.
    assert_gone(
        &s,
        &put(&s, "parent/gone", &[TURTLE], "").await,
        "parent/gone",
    );
    assert_gone(
        &s,
        &sparql(
            &s,
            "parent/gone",
            "INSERT DATA { <> <http://purl.org/dc/terms/title> \"t\" }",
        )
        .await,
        "parent/gone",
    );
    assert_gone(&s, &delete(&s, "parent/gone", &[]).await, "parent/gone");
    assert_eq!(post(&s, "parent/gone", &[TURTLE], "").await.status, 410);
    // A deleted resource's URI is not reused for a Slug.
    let r = post(&s, "parent", &[TURTLE, ("slug", "gone")], "").await;
    assert_eq!(r.status, 201);
    assert_ne!(r.header("location"), Some(s.url("parent/gone").as_str()));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_container_deletes_its_descendants() {
    let s = TestServer::start().await;
    container(&s, "top").await;
    container(&s, "top/a").await;
    container(&s, "top/a/b").await;
    binary(&s, "top/a/file", "text/plain", b"x").await;
    container(&s, "other").await;

    let r = delete(&s, "top", &[]).await;
    assert_eq!(r.status, 204);
    for path in ["top", "top/a", "top/a/b", "top/a/file"] {
        assert_gone(&s, &s.get(path, &[]).await, path);
    }
    assert_eq!(s.get("top/a/file/fcr:metadata", &[]).await.status, 410);
    assert_eq!(children(&s, "").await, vec![s.url("other")]);
    assert_eq!(s.get("other", &[]).await.status, 200);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_binary_deletes_its_description() {
    let s = TestServer::start().await;
    binary(&s, "bin", "text/plain", b"x").await;
    // The description cannot be deleted on its own.
    let r = delete(&s, "bin/fcr:metadata", &[]).await;
    assert_eq!(r.status, 405);
    assert_eq!(s.get("bin/fcr:metadata", &[]).await.status, 200);

    assert_eq!(delete(&s, "bin", &[]).await.status, 204);
    assert_gone(&s, &s.get("bin", &[]).await, "bin");
    // LDP 5.2.5: the description goes with it; its tombstone is the binary's.
    let desc = s.get("bin/fcr:metadata", &[]).await;
    assert_gone(&s, &desc, "bin");
    assert!(children(&s, "").await.is_empty());
    assert_eq!(delete(&s, "bin/fcr:tombstone", &[]).await.status, 204);
    assert_eq!(s.get("bin", &[]).await.status, 404);
    assert_eq!(s.get("bin/fcr:metadata", &[]).await.status, 404);
    binary(&s, "bin", "text/plain", b"again").await;
    assert_eq!(s.get("bin/fcr:metadata", &[]).await.status, 200);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_tombstone_purges_and_frees_the_path() {
    let s = TestServer::start().await;
    container_with(&s, "p", "<> <http://purl.org/dc/terms/title> \"first\" .").await;
    container(&s, "p/child").await;
    assert_eq!(delete(&s, "p", &[]).await.status, 204);

    // The tombstone only answers DELETE.
    let r = s.get("p/fcr:tombstone", &[]).await;
    assert_eq!(r.status, 405);
    assert!(header_items(&r, "allow").iter().any(|m| m == "DELETE"));

    let r = delete(&s, "p/fcr:tombstone", &[]).await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(s.get("p", &[]).await.status, 404);
    assert_eq!(s.get("p/child", &[]).await.status, 404);
    // Purging again: nothing there.
    assert_eq!(delete(&s, "p/fcr:tombstone", &[]).await.status, 404);

    // The path can be created again, as a different kind of resource even.
    let r = put_bytes(
        &s,
        "p",
        &[("content-type", "text/plain"), LINK_BINARY],
        b"new",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(s.get("p", &[]).await.text(), "new");
    assert_eq!(children(&s, "").await, vec![s.url("p")]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_tombstone_can_be_purged_and_recreated() {
    let s = TestServer::start().await;
    container(&s, "a").await;
    container(&s, "a/b").await;
    assert_eq!(delete(&s, "a/b", &[]).await.status, 204);
    assert_eq!(delete(&s, "a/b/fcr:tombstone", &[]).await.status, 204);
    assert_eq!(s.get("a/b", &[]).await.status, 404);
    assert!(children(&s, "a").await.is_empty());
    container(&s, "a/b").await;
    assert_eq!(children(&s, "a").await, vec![s.url("a/b")]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_resource_has_no_tombstone_to_purge() {
    let s = TestServer::start().await;
    container(&s, "live").await;
    let r = delete(&s, "live/fcr:tombstone", &[]).await;
    assert_eq!(r.status, 404);
    assert_eq!(s.get("live", &[]).await.status, 200);
    // Missing paths have nothing to delete or purge.
    assert_eq!(delete(&s, "missing/fcr:tombstone", &[]).await.status, 404);
    assert_eq!(delete(&s, "missing", &[]).await.status, 404);
    let r = s
        .request(Method::DELETE, &s.url("live"), &[], Vec::new())
        .await;
    assert_eq!(r.status, 204);
    s.stop().await;
}
