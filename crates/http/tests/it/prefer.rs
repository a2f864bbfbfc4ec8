//! `Prefer: return=minimal|representation` with include/omit of `ldp:PreferContainment`,
//! `ldp:PreferMinimalContainer` and `fcrepo:ServerManaged`, and `Preference-Applied`.

use crate::common::*;
use arca_testkit::TestServer;

const TITLE: &str = "<> <http://purl.org/dc/terms/title> \"P\" .";

async fn setup() -> TestServer {
    let s = TestServer::start().await;
    container_with(&s, "p", TITLE).await;
    container(&s, "p/c1").await;
    container(&s, "p/c2").await;
    s
}

fn prefer(value: &str) -> [(&str, &str); 1] {
    [("prefer", value)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_prefer_everything_is_returned_as_return_representation() {
    let s = setup().await;
    let url = s.url("p");
    let r = s.get("p", &[]).await;
    // As Fedora 6.1, which says so without a Prefer too.
    assert_eq!(
        r.header("preference-applied"),
        Some("return=representation")
    );
    let g = Graph::of(&r, &url);
    assert!(g.has_lit(&url, DC_TITLE, "P"));
    assert_eq!(g.with_predicate(LDP_CONTAINS).len(), 2);
    assert!(!g.objects(&url, &fedora("created")).is_empty());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn return_minimal_drops_containment_and_keeps_server_managed() {
    let s = setup().await;
    let url = s.url("p");
    let r = s.get("p", &prefer("return=minimal")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("preference-applied"), Some("return=minimal"));
    let g = Graph::of(&r, &url);
    assert!(g.with_predicate(LDP_CONTAINS).is_empty());
    assert!(g.has_lit(&url, DC_TITLE, "P"));
    assert!(g.has(&url, RDF_TYPE, LDP_BASIC_CONTAINER));
    assert!(!g.objects(&url, &fedora("lastModified")).is_empty());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn omit_and_include_containment() {
    let s = setup().await;
    let url = s.url("p");
    let omit = format!("return=representation; omit=\"{LDP_PREFER_CONTAINMENT}\"");
    let r = s.get("p", &prefer(&omit)).await;
    assert_eq!(r.status, 200);
    // As Fedora 6: the applied preference echoes the omitted category.
    assert_eq!(r.header("preference-applied"), Some(omit.as_str()));
    let g = Graph::of(&r, &url);
    assert!(g.with_predicate(LDP_CONTAINS).is_empty());
    assert!(g.has_lit(&url, DC_TITLE, "P"));
    assert!(!g.objects(&url, &fedora("created")).is_empty());

    let include = format!("return=representation; include=\"{LDP_PREFER_CONTAINMENT}\"");
    let r = s.get("p", &prefer(&include)).await;
    assert_eq!(r.header("preference-applied"), Some(include.as_str()));
    let g = Graph::of(&r, &url);
    let mut contained = g.object_iris(&url, LDP_CONTAINS);
    contained.sort();
    assert_eq!(contained, vec![s.url("p/c1"), s.url("p/c2")]);

    // ldp:PreferMinimalContainer (and its old name PreferEmptyContainer) drop containment.
    for minimal in [
        LDP_PREFER_MINIMAL,
        "http://www.w3.org/ns/ldp#PreferEmptyContainer",
    ] {
        let v = format!("return=representation; include=\"{minimal}\"");
        let r = s.get("p", &prefer(&v)).await;
        // The old name is understood, and answered with the current one.
        assert_eq!(
            r.header("preference-applied"),
            Some(format!("return=representation; include=\"{LDP_PREFER_MINIMAL}\"").as_str())
        );
        let g = Graph::of(&r, &url);
        assert!(g.with_predicate(LDP_CONTAINS).is_empty(), "{minimal}");
        assert!(g.has_lit(&url, DC_TITLE, "P"));
    }
    // ... unless containment is included as well.
    let v =
        format!("return=representation; include=\"{LDP_PREFER_MINIMAL} {LDP_PREFER_CONTAINMENT}\"");
    let g = Graph::of(&s.get("p", &prefer(&v)).await, &url);
    assert_eq!(g.with_predicate(LDP_CONTAINS).len(), 2);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_iri_both_included_and_omitted_counts_as_included() {
    // As Fedora 6 reads it (include first), and its Preference-Applied names only the
    // include.
    let s = setup().await;
    let url = s.url("p");
    let v = format!(
        "return=representation; include=\"{LDP_PREFER_CONTAINMENT}\"; omit=\"{LDP_PREFER_CONTAINMENT}\""
    );
    let r = s.get("p", &prefer(&v)).await;
    assert_eq!(
        r.header("preference-applied"),
        Some(format!("return=representation; include=\"{LDP_PREFER_CONTAINMENT}\"").as_str())
    );
    let g = Graph::of(&r, &url);
    assert_eq!(g.with_predicate(LDP_CONTAINS).len(), 2);
    s.stop().await;
}

const HAS_PART: &str = "http://example.org/hasPart";
const LDP_PREFER_MEMBERSHIP: &str = "http://www.w3.org/ns/ldp#PreferMembership";

/// `p` (a title and a user type) with the children `c1` and `c2` and a direct container
/// `p/members` whose member `m1` makes `p ex:hasPart m1`.
async fn setup_with_members() -> TestServer {
    let s = setup().await;
    sparql(&s, "p", "INSERT DATA { <> a <http://example.org/Thing> }").await;
    let body = format!(
        "<> <{LDP}membershipResource> <{}> ; <{LDP}hasMemberRelation> <{HAS_PART}> .",
        s.url("p")
    );
    let direct = (
        "link",
        "<http://www.w3.org/ns/ldp#DirectContainer>; rel=\"type\"",
    );
    assert_eq!(
        put(&s, "p/members", &[TURTLE, direct], &body).await.status,
        201
    );
    container(&s, "p/members/m1").await;
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn omit_minimal_container_leaves_only_containment_and_membership() {
    // Issue 38.1, as Fedora 6.1 answers: omitting ldp:PreferMinimalContainer drops the
    // resource's own triples, the client's and the server-managed ones alike.
    let s = setup_with_members().await;
    let url = s.url("p");
    let v = format!("return=representation; omit=\"{LDP_PREFER_MINIMAL}\"");
    let r = s.get("p", &prefer(&v)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("preference-applied"), Some(v.as_str()));
    let g = Graph::of(&r, &url);
    let mut contained = g.object_iris(&url, LDP_CONTAINS);
    contained.sort();
    assert_eq!(
        contained,
        vec![s.url("p/c1"), s.url("p/c2"), s.url("p/members")]
    );
    assert_eq!(g.object_iris(&url, HAS_PART), vec![s.url("p/members/m1")]);
    assert_eq!(g.0.len(), 4, "{:?}", g.0);

    // Omitting membership too leaves the containment triples alone.
    let v = format!("return=representation; omit=\"{LDP_PREFER_MINIMAL} {LDP_PREFER_MEMBERSHIP}\"");
    let g = Graph::of(&s.get("p", &prefer(&v)).await, &url);
    assert_eq!(g.with_predicate(LDP_CONTAINS).len(), 3);
    assert_eq!(g.0.len(), 3, "{:?}", g.0);

    // And with the server-managed triples: nothing at all.
    let v = format!("return=representation; omit=\"{LDP_PREFER_MINIMAL} {FCREPO_SERVER_MANAGED}\"");
    let r = s.get("p", &prefer(&v)).await;
    assert_eq!(r.status, 200);
    assert!(Graph::of(&r, &url).0.is_empty());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn omit_server_managed_leaves_out_containment_and_membership_unless_included() {
    // Issue 46.4, as Fedora 6.1 (and 6.5.1) answer: ldp:contains and membership triples are
    // server managed too.
    let s = setup_with_members().await;
    let url = s.url("p");
    let v = format!("return=representation; omit=\"{FCREPO_SERVER_MANAGED}\"");
    let g = Graph::of(&s.get("p", &prefer(&v)).await, &url);
    assert!(g.has_lit(&url, DC_TITLE, "P"));
    assert!(g.has(&url, RDF_TYPE, "http://example.org/Thing"));
    assert!(g.with_predicate(LDP_CONTAINS).is_empty());
    assert!(g.with_predicate(HAS_PART).is_empty());
    assert_eq!(g.0.len(), 2, "{:?}", g.0);

    // Included explicitly, each comes back.
    for (category, predicate) in [
        (LDP_PREFER_CONTAINMENT, LDP_CONTAINS),
        (LDP_PREFER_MEMBERSHIP, HAS_PART),
    ] {
        let v = format!(
            "return=representation; include=\"{category}\"; omit=\"{FCREPO_SERVER_MANAGED}\""
        );
        let g = Graph::of(&s.get("p", &prefer(&v)).await, &url);
        assert!(!g.with_predicate(predicate).is_empty(), "{category}");
        assert!(g.in_namespace(FEDORA).is_empty());
        assert_eq!(
            g.0.len(),
            2 + g.with_predicate(predicate).len(),
            "{:?}",
            g.0
        );
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn omit_server_managed() {
    let s = setup().await;
    let url = s.url("p");
    let v = format!("return=representation; omit=\"{FCREPO_SERVER_MANAGED}\"");
    let r = s.get("p", &prefer(&v)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("preference-applied"), Some(v.as_str()));
    let g = Graph::of(&r, &url);
    assert!(
        g.in_namespace(FEDORA).is_empty(),
        "{:?}",
        g.in_namespace(FEDORA)
    );
    assert!(!g.has(&url, RDF_TYPE, LDP_BASIC_CONTAINER));
    assert!(g.has_lit(&url, DC_TITLE, "P"));

    // Also on a description: the binary's technical metadata goes, the client's stays.
    binary(&s, "p/bin", "text/plain", b"abc").await;
    assert_eq!(
        sparql(
            &s,
            "p/bin/fcr:metadata",
            "INSERT DATA { <> <http://purl.org/dc/terms/title> \"bin\" }"
        )
        .await
        .status,
        204
    );
    let bin = s.url("p/bin");
    let g = graph(&s, "p/bin/fcr:metadata", &prefer(&v)).await;
    assert!(g.in_namespace(FEDORA).is_empty());
    assert!(!g.has(&bin, RDF_TYPE, LDP_NON_RDF_SOURCE));
    assert!(g.has_lit(&bin, DC_TITLE, "bin"));
    let g = graph(&s, "p/bin/fcr:metadata", &[]).await;
    assert!(g.has(&bin, RDF_TYPE, LDP_NON_RDF_SOURCE));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preference_applied_names_the_honoured_preferences() {
    // 3.2.2-A: inbound references are honoured, and the answer says so as Fedora 6 does.
    let s = setup().await;
    let v = format!("return=representation; include=\"{FCREPO_INBOUND}\"");
    let r = s.get("p", &prefer(&v)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("preference-applied"), Some(v.as_str()));
    // Unrelated preferences are not applied: the answer is the default representation.
    let r = s.get("p", &prefer("respond-async")).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("preference-applied"),
        Some("return=representation")
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefer_on_head_matches_get() {
    let s = setup().await;
    let r = head(&s, "p", &prefer("return=minimal")).await;
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    assert_eq!(r.header("preference-applied"), Some("return=minimal"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contained_descriptions_are_embedded_and_applied() {
    // oa:PreferContainedDescriptions (Fedora API 3.2.2): the children's descriptions come
    // with the container, and Preference-Applied names them, as Fedora 6 answers.
    let s = setup().await;
    put(
        &s,
        "p/c1",
        &[TURTLE],
        "<> <http://purl.org/dc/terms/title> \"C1\" .",
    )
    .await;
    binary(&s, "p/bin", "text/plain", b"bytes").await;
    let r = put(
        &s,
        "p/bin/fcr:metadata",
        &[TURTLE],
        "<> <http://purl.org/dc/terms/title> \"B\" .",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let oa = "http://www.w3.org/ns/oa#PreferContainedDescriptions";
    let v = format!("return=representation; include=\"{oa}\"");
    let r = s.get("p", &prefer(&v)).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("preference-applied"),
        Some(format!("return=representation; include=\"{oa}\"").as_str())
    );
    let g = Graph::of(&r, &s.url("p"));
    let (c1, bin) = (s.url("p/c1"), s.url("p/bin"));
    assert!(g.has_lit(&s.url("p"), DC_TITLE, "P"));
    assert!(g.has_lit(&c1, DC_TITLE, "C1"));
    assert!(g.has_lit(&bin, DC_TITLE, "B"));
    assert!(g.has(&bin, RDF_TYPE, LDP_NON_RDF_SOURCE));
    assert!(g.has(&c1, RDF_TYPE, LDP_BASIC_CONTAINER));
    assert!(g.objects(&bin, &fedora("hasFixityService")).is_empty());
    assert_eq!(g.with_predicate(LDP_CONTAINS).len(), 3);
    // Without containment and server-managed triples: the descriptions' own triples only.
    let v = format!(
        "return=representation; include=\"{oa}\"; omit=\"{LDP_PREFER_CONTAINMENT} {FCREPO_SERVER_MANAGED}\""
    );
    let g = Graph::of(&s.get("p", &prefer(&v)).await, &s.url("p"));
    assert!(g.with_predicate(LDP_CONTAINS).is_empty());
    assert!(g.has_lit(&bin, DC_TITLE, "B"));
    assert!(!g.has(&bin, RDF_TYPE, LDP_NON_RDF_SOURCE));
    // Without the preference nothing is embedded.
    let g = Graph::of(&s.get("p", &[]).await, &s.url("p"));
    assert!(!g.has_lit(&c1, DC_TITLE, "C1"));
    s.stop().await;
}
