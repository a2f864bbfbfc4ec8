//! Inbound references (Fedora API 3.2.1): `Prefer: return=representation;
//! include="http://fedora.info/definitions/fcrepo#PreferInboundReferences"` adds the statements
//! of other resources that point at this one, kept right on every write and paged.

use crate::common::*;
use arca_testkit::TestServer;
use http::Method;

fn include_inbound() -> String {
    format!("return=representation; include=\"{FCREPO_INBOUND}\"")
}

async fn inbound(s: &TestServer, path: &str) -> Graph {
    let v = include_inbound();
    let r = s.get(path, &[("prefer", v.as_str())]).await;
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    Graph::of(&r, &s.url(path))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_2_1_inbound_references_follow_every_write() {
    let s = TestServer::start().await;
    container(&s, "b").await;
    let b = s.url("b");
    container_with(&s, "a", &format!("<> <{DC_RELATION}> <{b}> .")).await;
    container_with(&s, "h", &format!("<#part> <{DC_RELATION}> <{b}> .")).await;
    binary(&s, "bin", "text/plain", b"x").await;
    let r = sparql(
        &s,
        "bin/fcr:metadata",
        &format!("INSERT DATA {{ <> <{DC_RELATION}> <{b}> }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());

    let g = inbound(&s, "b").await;
    assert!(g.has(&s.url("a"), DC_RELATION, &b));
    assert!(g.has(&format!("{}#part", s.url("h")), DC_RELATION, &b));
    // A description's references are named as the description, as Fedora 6 lists them.
    assert!(g.has(&s.url("bin/fcr:metadata"), DC_RELATION, &b));
    // Not returned unless asked for.
    let g = Graph::of(&s.get("b", &[]).await, &b);
    assert!(g.with_predicate(DC_RELATION).is_empty());

    // Changing or deleting the referrer updates the answer.
    let r = put(
        &s,
        "a",
        &[TURTLE],
        "<> <http://purl.org/dc/terms/title> \"no ref\" .",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(delete(&s, "h", &[]).await.status, 204);
    let g = inbound(&s, "b").await;
    assert_eq!(g.with_predicate(DC_RELATION).len(), 1, "{g:?}");
    assert!(g.has(&s.url("bin/fcr:metadata"), DC_RELATION, &b));

    // A binary's inbound references are shown on its description.
    container_with(&s, "c", &format!("<> <{DC_RELATION}> <{}> .", s.url("bin"))).await;
    let g = inbound(&s, "bin/fcr:metadata").await;
    assert!(g.has(&s.url("c"), DC_RELATION, &s.url("bin")));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbound_references_page_with_the_listing() {
    let s = TestServer::start().await;
    container(&s, "target").await;
    let target = s.url("target");
    for i in 0..23 {
        container_with(
            &s,
            &format!("r{i:02}"),
            &format!("<> <{DC_RELATION}> <{target}> ."),
        )
        .await;
    }
    let v = include_inbound();
    let mut next = Some(format!("{target}?limit=10"));
    let (mut referrers, mut pages) = (Vec::new(), 0);
    while let Some(page) = next.take() {
        pages += 1;
        assert!(pages < 10, "paging does not end");
        let r = s
            .request(Method::GET, &page, &[("prefer", v.as_str())], Vec::new())
            .await;
        assert_eq!(r.status, 200, "{page}: {}", r.text());
        let g = Graph::of(&r, &target);
        let page_refs: Vec<String> = g
            .with_predicate(DC_RELATION)
            .iter()
            .map(|t| t.subject.to_string())
            .collect();
        assert!(page_refs.len() <= 10);
        referrers.extend(page_refs);
        next = links(&r, "next").into_iter().next();
    }
    assert_eq!(pages, 3);
    referrers.sort();
    referrers.dedup();
    assert_eq!(referrers.len(), 23);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbound_references_name_the_container_as_fedora_7() {
    // Fedora 7 (fcrepo #2106): the containing resource's `ldp:contains` is an inbound
    // reference too; the root has none; a description shows its binary's.
    let s = TestServer::start().await;
    container(&s, "p").await;
    container(&s, "p/c").await;
    binary(&s, "p/b", "text/plain", b"x").await;
    let p = s.url("p");
    for (path, subject) in [("p/c", "p/c"), ("p/b/fcr:metadata", "p/b"), ("p", "p")] {
        let g = inbound(&s, path).await;
        let parent = if path == "p" { s.url("") } else { p.clone() };
        assert!(
            g.has(&parent, LDP_CONTAINS, &s.url(subject)),
            "{path}: {g:?}"
        );
        // Not without the preference.
        let plain = graph(&s, path, &[]).await;
        assert!(!plain.has(&parent, LDP_CONTAINS, &s.url(subject)), "{path}");
    }
    let g = inbound(&s, "").await;
    assert!(
        g.with_predicate(LDP_CONTAINS)
            .iter()
            .all(|t| t.object.to_string() != format!("<{}>", s.url(""))),
        "{g:?}"
    );

    // Paged one statement at a time: the containment, then the references, each once.
    container_with(&s, "r", &format!("<> <{DC_RELATION}> <{}> .", s.url("p/c"))).await;
    let prefer = include_inbound();
    let mut url = format!("{}?limit=1", s.url("p/c"));
    let mut seen: Vec<String> = Vec::new();
    for _ in 0..5 {
        let r = s
            .request(
                Method::GET,
                &url,
                &[("prefer", prefer.as_str())],
                bytes::Bytes::new(),
            )
            .await;
        assert_eq!(r.status, 200, "{url}: {}", r.text());
        let g = Graph::of(&r, &s.url("p/c"));
        for t in &g.0 {
            let object = t.object.to_string();
            if object == format!("<{}>", s.url("p/c")) {
                seen.push(format!("{} {}", t.subject, t.predicate));
            }
        }
        match links(&r, "next").pop() {
            Some(next) => url = next,
            None => break,
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        vec![
            format!("<{p}> <{LDP_CONTAINS}>"),
            format!("<{}> <{DC_RELATION}>", s.url("r")),
        ]
    );
    s.stop().await;
}
