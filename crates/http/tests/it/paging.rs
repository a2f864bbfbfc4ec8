//! Wide containers: paging with `?limit=N&after=<child path>` and `Prefer: …
//! max-member-count`, `rel="next"` links, walking every page, and omitting containment.

use std::collections::HashSet;

use crate::common::*;
use arca_testkit::TestServer;
use futures_util::StreamExt;
use http::Method;

const CHILDREN: usize = 1200;

/// A container `wide` with `n` empty child containers `wide/cNNNN`, created a few at a time.
async fn wide(n: usize) -> TestServer {
    let s = TestServer::start().await;
    container(&s, "wide").await;
    let s_ref = &s;
    let statuses: Vec<u16> = futures_util::stream::iter(0..n)
        .map(|i| async move {
            put(s_ref, &format!("wide/c{i:04}"), &[TURTLE], "")
                .await
                .status
                .as_u16()
        })
        .buffer_unordered(64)
        .collect()
        .await;
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    s
}

fn expected(s: &TestServer, n: usize) -> Vec<String> {
    (0..n).map(|i| s.url(&format!("wide/c{i:04}"))).collect()
}

/// Follows `rel="next"` links from `first`, returning the children of every page in order
/// and the number of pages.
async fn walk(s: &TestServer, first: &str, headers: &[(&str, &str)]) -> (Vec<String>, usize) {
    let url = s.url("wide");
    let mut all = Vec::new();
    let mut next = Some(first.to_string());
    let mut pages = 0;
    while let Some(page) = next.take() {
        pages += 1;
        assert!(pages <= CHILDREN + 1, "paging does not end");
        let r = s.request(Method::GET, &page, headers, Vec::new()).await;
        assert_eq!(r.status, 200, "{page}: {}", r.text());
        let g = Graph::of(&r, &url);
        // Each page is the container itself, with its own triples.
        assert!(g.has(&url, RDF_TYPE, LDP_BASIC_CONTAINER));
        let mut children = g.object_iris(&url, LDP_CONTAINS);
        children.sort();
        all.extend(children);
        let nexts = links(&r, "next");
        assert!(nexts.len() <= 1, "{nexts:?}");
        next = nexts.into_iter().next();
    }
    (all, pages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn walking_all_pages_lists_every_child_exactly_once() {
    let s = wide(CHILDREN).await;
    let want = expected(&s, CHILDREN);

    // Without paging: everything at once, no next link.
    let r = s.get("wide", &[]).await;
    assert!(links(&r, "next").is_empty());
    let mut all = Graph::of(&r, &s.url("wide")).object_iris(&s.url("wide"), LDP_CONTAINS);
    all.sort();
    assert_eq!(all, want);

    // ?limit=N pages: 500 + 500 + 200.
    let first = format!("{}?limit=500", s.url("wide"));
    let (got, pages) = walk(&s, &first, &[]).await;
    assert_eq!(pages, 3);
    assert_eq!(got.len(), CHILDREN);
    assert_eq!(
        got.iter().collect::<HashSet<_>>().len(),
        CHILDREN,
        "duplicates"
    );
    assert_eq!(got, want, "id order across pages");

    // A limit that divides the total: the last full page has no next link.
    let first = format!("{}?limit=400", s.url("wide"));
    let (got, pages) = walk(&s, &first, &[]).await;
    assert_eq!(pages, 3);
    assert_eq!(got, want);

    // Prefer max-member-count works the same way.
    let (got, pages) = walk(
        &s,
        &s.url("wide"),
        &[("prefer", "return=representation; max-member-count=\"700\"")],
    )
    .await;
    assert_eq!(pages, 2);
    assert_eq!(got, want);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_have_the_documented_shape() {
    let s = wide(25).await;
    let url = s.url("wide");
    let r = s.get("wide?limit=10", &[]).await;
    assert_eq!(r.status, 200);
    let g = Graph::of(&r, &url);
    assert_eq!(g.object_iris(&url, LDP_CONTAINS).len(), 10);
    let next = links(&r, "next");
    assert_eq!(next.len(), 1);
    let after =
        percent_encoding::utf8_percent_encode("wide/c0009", percent_encoding::NON_ALPHANUMERIC);
    assert_eq!(next[0], format!("{url}?limit=10&after={after}"));

    // `after` given by hand, unencoded.
    let r = s.get("wide?limit=10&after=wide/c0019", &[]).await;
    assert_eq!(r.status, 200);
    let mut got = Graph::of(&r, &url).object_iris(&url, LDP_CONTAINS);
    got.sort();
    assert_eq!(
        got,
        (20..25)
            .map(|i| s.url(&format!("wide/c{i:04}")))
            .collect::<Vec<_>>()
    );
    assert!(links(&r, "next").is_empty());
    // `after` alone pages with the default size: the rest, here.
    let r = s.get("wide?after=wide/c0022", &[]).await;
    assert_eq!(Graph::of(&r, &url).object_iris(&url, LDP_CONTAINS).len(), 2);
    // After the last child: an empty page.
    let r = s.get("wide?limit=10&after=wide/c0024", &[]).await;
    assert_eq!(r.status, 200);
    assert!(Graph::of(&r, &url)
        .object_iris(&url, LDP_CONTAINS)
        .is_empty());
    assert!(links(&r, "next").is_empty());
    // A malformed limit is a bad request.
    assert_eq!(s.get("wide?limit=abc", &[]).await.status, 400);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn omitting_containment_lists_no_children_and_no_next_link() {
    let s = wide(30).await;
    let url = s.url("wide");
    let omit = format!("return=representation; omit=\"{LDP_PREFER_CONTAINMENT}\"");
    for path in ["wide", "wide?limit=10"] {
        let r = s.get(path, &[("prefer", &omit)]).await;
        assert_eq!(r.status, 200);
        let g = Graph::of(&r, &url);
        assert!(g.with_predicate(LDP_CONTAINS).is_empty(), "{path}");
        assert!(links(&r, "next").is_empty(), "{path}");
        assert!(g.has(&url, RDF_TYPE, LDP_BASIC_CONTAINER));
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_children_are_skipped_by_pages() {
    let s = wide(12).await;
    for i in [0, 5, 11] {
        assert_eq!(delete(&s, &format!("wide/c{i:04}"), &[]).await.status, 204);
    }
    let first = format!("{}?limit=4", s.url("wide"));
    let (got, _) = walk(&s, &first, &[]).await;
    let want: Vec<String> = (0..12)
        .filter(|i| ![0, 5, 11].contains(i))
        .map(|i| s.url(&format!("wide/c{i:04}")))
        .collect();
    assert_eq!(got, want);
    s.stop().await;
}
