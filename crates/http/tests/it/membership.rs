//! Direct and indirect containers (LDP 5.4, 5.5; Fedora API 3.1.2, 3.1.3): settings and their
//! defaults, generated membership triples on create, update, delete and purge of members and
//! on changes of the settings, `Prefer` include/omit, paging, and refused settings. Expected
//! answers are Fedora 6.1's, observed side by side on this machine.

use crate::common::*;
use arca_testkit::{Reply, TestServer};
use http::Method;

const LINK_DIRECT: (&str, &str) = (
    "link",
    "<http://www.w3.org/ns/ldp#DirectContainer>; rel=\"type\"",
);
const LINK_INDIRECT: (&str, &str) = (
    "link",
    "<http://www.w3.org/ns/ldp#IndirectContainer>; rel=\"type\"",
);
const DC_HAS_PART: &str = "http://purl.org/dc/terms/hasPart";
const DC_IS_PART_OF: &str = "http://purl.org/dc/terms/isPartOf";
const ORE_PROXY_FOR: &str = "http://www.openarchives.org/ore/terms/proxyFor";

fn prefer(v: &str) -> Vec<(&'static str, String)> {
    vec![("prefer", v.to_string())]
}

async fn get_graph(s: &TestServer, path: &str, headers: &[(&str, &str)]) -> Graph {
    let r = s.get(path, headers).await;
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    Graph::of(&r, &s.url(path))
}

async fn created(r: Reply) {
    assert_eq!(r.status, 201, "{}", r.text());
}

async fn setup() -> TestServer {
    let s = TestServer::start().await;
    container(&s, "top").await;
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_1_2_direct_container_defaults_to_itself_and_ldp_member() {
    // 3.1.2-C and 3.1.2-I: membership resource defaults to the container, predicate to
    // ldp:member; the defaults are part of the container's triples, as Fedora stores them.
    let s = setup().await;
    created(put(&s, "top/dc", &[TURTLE, LINK_DIRECT], "").await).await;
    let dc = s.url("top/dc");
    let g = get_graph(&s, "top/dc", &[]).await;
    assert!(g.has(&dc, RDF_TYPE, &ldp("DirectContainer")));
    assert!(g.has(&dc, &ldp("membershipResource"), &dc));
    assert!(g.has(&dc, &ldp("hasMemberRelation"), &ldp("member")));
    let r = s.get("top/dc", &[]).await;
    assert!(r.has_link(&ldp("DirectContainer"), "type"), "{r:?}");

    // LDP 5.4.2: a new member (container or binary) adds the membership triple.
    created(put(&s, "top/dc/m1", &[TURTLE], "").await).await;
    binary(&s, "top/dc/b1", "text/plain", b"bytes").await;
    let g = get_graph(&s, "top/dc", &[]).await;
    assert!(g.has(&dc, &ldp("member"), &s.url("top/dc/m1")));
    assert!(g.has(&dc, &ldp("member"), &s.url("top/dc/b1")));
    assert!(g.has(&dc, LDP_CONTAINS, &s.url("top/dc/m1")));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ldp_5_4_membership_on_another_resource_follows_members() {
    // 3.1.2-A/G: settable membership resource and hasMemberRelation.
    let s = setup().await;
    created(put(&s, "top/mr", &[TURTLE], "").await).await;
    let mr = s.url("top/mr");
    let body =
        format!("<> <{LDP}membershipResource> <{mr}> ; <{LDP}hasMemberRelation> <{DC_HAS_PART}> .");
    created(put(&s, "top/dc", &[TURTLE, LINK_DIRECT], &body).await).await;
    let etag_before = s
        .get("top/mr", &[])
        .await
        .header("etag")
        .unwrap()
        .to_string();
    created(put(&s, "top/dc/a", &[TURTLE], "").await).await;
    created(post(&s, "top/dc", &[TURTLE, ("slug", "b")], "").await).await;
    let g = get_graph(&s, "top/mr", &[]).await;
    let mut parts = g.object_iris(&mr, DC_HAS_PART);
    parts.sort();
    assert_eq!(parts, [s.url("top/dc/a"), s.url("top/dc/b")]);
    // Never stored in the membership resource's own RDF: the container lists nothing.
    let dc = get_graph(&s, "top/dc", &[]).await;
    assert!(dc.with_predicate(DC_HAS_PART).is_empty());
    // The membership resource's ETag follows its membership.
    let etag_after = s
        .get("top/mr", &[])
        .await
        .header("etag")
        .unwrap()
        .to_string();
    assert_ne!(etag_before, etag_after);

    // LDP 5.4.3: deleting a member removes its triple; purging keeps it removed.
    assert_eq!(delete(&s, "top/dc/a", &[]).await.status, 204);
    let g = get_graph(&s, "top/mr", &[]).await;
    assert_eq!(g.object_iris(&mr, DC_HAS_PART), [s.url("top/dc/b")]);
    assert_eq!(delete(&s, "top/dc/a/fcr:tombstone", &[]).await.status, 204);
    let g = get_graph(&s, "top/mr", &[]).await;
    assert_eq!(g.object_iris(&mr, DC_HAS_PART), [s.url("top/dc/b")]);

    // Deleting the container ends all of its membership (3.8.1: deletion follows
    // containment, the membership resource itself stays).
    assert_eq!(delete(&s, "top/dc", &[]).await.status, 204);
    let g = get_graph(&s, "top/mr", &[]).await;
    assert!(g.object_iris(&mr, DC_HAS_PART).is_empty());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ldp_5_4_is_member_of_relation_is_shown_on_members() {
    let s = setup().await;
    created(put(&s, "top/mr", &[TURTLE], "").await).await;
    let mr = s.url("top/mr");
    let body = format!(
        "<> <{LDP}membershipResource> <{mr}> ; <{LDP}isMemberOfRelation> <{DC_IS_PART_OF}> ."
    );
    created(put(&s, "top/dc", &[TURTLE, LINK_DIRECT], &body).await).await;
    // No default hasMemberRelation is added next to an isMemberOfRelation.
    let g = get_graph(&s, "top/dc", &[]).await;
    assert!(g.with_predicate(&ldp("hasMemberRelation")).is_empty());
    created(put(&s, "top/dc/a", &[TURTLE], "").await).await;
    binary(&s, "top/dc/bin", "text/plain", b"x").await;
    let g = get_graph(&s, "top/dc/a", &[]).await;
    assert!(g.has(&s.url("top/dc/a"), DC_IS_PART_OF, &mr));
    // A binary's membership is shown on its description, about the binary (as Fedora).
    let g = get_graph(&s, "top/dc/bin/fcr:metadata", &[]).await;
    assert!(g.has(&s.url("top/dc/bin"), DC_IS_PART_OF, &mr));
    // Nothing on the membership resource.
    let g = get_graph(&s, "top/mr", &[]).await;
    assert!(g.with_predicate(DC_IS_PART_OF).is_empty());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ldp_5_5_indirect_container_members_come_from_inserted_content() {
    // 3.1.3: insertedContentRelation; a proxy lacking the statement, or with a literal,
    // generates nothing; the object may be outside the repository.
    let s = setup().await;
    created(put(&s, "top/mr", &[TURTLE], "").await).await;
    created(put(&s, "top/target", &[TURTLE], "").await).await;
    let (mr, target) = (s.url("top/mr"), s.url("top/target"));
    let body = format!(
        "<> <{LDP}membershipResource> <{mr}> ; <{LDP}hasMemberRelation> <{DC_HAS_PART}> ; <{LDP}insertedContentRelation> <{ORE_PROXY_FOR}> ."
    );
    created(put(&s, "top/ic", &[TURTLE, LINK_INDIRECT], &body).await).await;
    let r = s.get("top/ic", &[]).await;
    assert!(r.has_link(&ldp("IndirectContainer"), "type"));
    let proxy = |o: &str| format!("<> <{ORE_PROXY_FOR}> {o} .");
    created(put(&s, "top/ic/p1", &[TURTLE], &proxy(&format!("<{target}>"))).await).await;
    created(
        put(
            &s,
            "top/ic/p2",
            &[TURTLE],
            "<> <http://purl.org/dc/terms/title> \"none\" .",
        )
        .await,
    )
    .await;
    created(
        put(
            &s,
            "top/ic/p3",
            &[TURTLE],
            &proxy("<http://example.org/ext>"),
        )
        .await,
    )
    .await;
    created(put(&s, "top/ic/p4", &[TURTLE], &proxy("\"literal\"")).await).await;
    let g = get_graph(&s, "top/mr", &[]).await;
    let mut parts = g.object_iris(&mr, DC_HAS_PART);
    parts.sort();
    let mut want = vec!["http://example.org/ext".to_string(), target.clone()];
    want.sort();
    assert_eq!(parts, want);
    // The container still contains every proxy (LDP 5.5).
    let g = get_graph(&s, "top/ic", &[]).await;
    assert_eq!(g.with_predicate(LDP_CONTAINS).len(), 4);

    // Editing a proxy moves its membership.
    let other = s.url("top/mr");
    let r = sparql(
        &s,
        "top/ic/p2",
        &format!("INSERT DATA {{ <> <{ORE_PROXY_FOR}> <{other}> }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let g = get_graph(&s, "top/mr", &[]).await;
    assert!(g.has(&mr, DC_HAS_PART, &other));
    assert_eq!(delete(&s, "top/ic/p1", &[]).await.status, 204);
    let g = get_graph(&s, "top/mr", &[]).await;
    assert!(!g.has(&mr, DC_HAS_PART, &target));

    // A binary proxy: its description's statement decides, and the membership resource's
    // ETag follows a change of it.
    binary(&s, "top/ic/bin", "text/plain", b"x").await;
    let etag = s
        .get("top/mr", &[])
        .await
        .header("etag")
        .unwrap()
        .to_string();
    let r = sparql(
        &s,
        "top/ic/bin/fcr:metadata",
        &format!("INSERT DATA {{ <> <{ORE_PROXY_FOR}> <{target}> }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let after = s.get("top/mr", &[]).await;
    assert_ne!(after.header("etag"), Some(etag.as_str()));
    assert!(Graph::of(&after, &mr).has(&mr, DC_HAS_PART, &target));

    // Without settings: the defaults, ldp:MemberSubject included.
    created(put(&s, "top/ic0", &[TURTLE, LINK_INDIRECT], "").await).await;
    let ic0 = s.url("top/ic0");
    let g = get_graph(&s, "top/ic0", &[]).await;
    assert!(g.has(&ic0, &ldp("insertedContentRelation"), &ldp("MemberSubject")));
    created(put(&s, "top/ic0/m", &[TURTLE], "").await).await;
    let g = get_graph(&s, "top/ic0", &[]).await;
    assert!(g.has(&ic0, &ldp("member"), &s.url("top/ic0/m")));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_the_settings_recomputes_every_member() {
    // Fedora 6 allows changing the settings by PUT and PATCH (3.1.2 MAY); the generated
    // triples follow at once, for members created before the change too.
    let s = setup().await;
    created(put(&s, "top/dc", &[TURTLE, LINK_DIRECT], "").await).await;
    for i in 0..30 {
        created(put(&s, &format!("top/dc/m{i:02}"), &[TURTLE], "").await).await;
    }
    let dc = s.url("top/dc");
    let r = sparql(
        &s,
        "top/dc",
        &format!("DELETE {{ <> <{LDP}hasMemberRelation> ?o }} INSERT {{ <> <{LDP}hasMemberRelation> <{DC_HAS_PART}> }} WHERE {{ <> <{LDP}hasMemberRelation> ?o }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let g = get_graph(&s, "top/dc", &[]).await;
    assert!(g.with_predicate(&ldp("member")).is_empty());
    assert_eq!(g.object_iris(&dc, DC_HAS_PART).len(), 30);

    // PUT without the settings: the defaults come back (as in Fedora), and with them
    // ldp:member.
    let r = put(
        &s,
        "top/dc",
        &[TURTLE],
        "<> <http://purl.org/dc/terms/title> \"t\" .",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let g = get_graph(&s, "top/dc", &[]).await;
    assert!(g.has(&dc, &ldp("membershipResource"), &dc));
    assert_eq!(g.object_iris(&dc, &ldp("member")).len(), 30);
    assert!(g.with_predicate(DC_HAS_PART).is_empty());

    // Moving the membership resource moves the triples.
    created(put(&s, "top/mr", &[TURTLE], "").await).await;
    let mr = s.url("top/mr");
    let r = put(
        &s,
        "top/dc",
        &[TURTLE],
        &format!("<> <{LDP}membershipResource> <{mr}> ."),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(get_graph(&s, "top/dc", &[])
        .await
        .with_predicate(&ldp("member"))
        .is_empty());
    assert_eq!(
        get_graph(&s, "top/mr", &[])
            .await
            .object_iris(&mr, &ldp("member"))
            .len(),
        30
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ldp_7_2_prefer_membership_and_minimal_container() {
    let s = setup().await;
    created(put(&s, "top/dc", &[TURTLE, LINK_DIRECT], "").await).await;
    created(put(&s, "top/dc/m", &[TURTLE], "").await).await;
    let (dc, m) = (s.url("top/dc"), s.url("top/dc/m"));
    let omit = format!("return=representation; omit=\"{LDP}PreferMembership\"");
    let r = s
        .request(Method::GET, &dc, &[("prefer", omit.as_str())], Vec::new())
        .await;
    assert_eq!(r.header("preference-applied"), Some(omit.as_str()));
    let g = Graph::of(&r, &dc);
    assert!(!g.has(&dc, &ldp("member"), &m));
    assert!(g.has(&dc, LDP_CONTAINS, &m));
    let p = prefer(&format!(
        "return=representation; include=\"{LDP_PREFER_MINIMAL}\""
    ));
    let h: Vec<(&str, &str)> = p.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let g = get_graph(&s, "top/dc", &h).await;
    assert!(!g.has(&dc, &ldp("member"), &m));
    assert!(!g.has(&dc, LDP_CONTAINS, &m));
    // The settings are the container's own triples: kept in the minimal container.
    assert!(g.has(&dc, &ldp("membershipResource"), &dc));
    let p = prefer(&format!(
        "return=representation; include=\"{LDP_PREFER_MINIMAL} {LDP}PreferMembership\""
    ));
    let h: Vec<(&str, &str)> = p.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let g = get_graph(&s, "top/dc", &h).await;
    assert!(g.has(&dc, &ldp("member"), &m));
    assert!(!g.has(&dc, LDP_CONTAINS, &m));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn membership_pages_like_containment() {
    // The paging extension walks containment, then membership, with one cursor.
    let s = setup().await;
    created(put(&s, "top/dc", &[TURTLE, LINK_DIRECT], "").await).await;
    for i in 0..25 {
        created(put(&s, &format!("top/dc/m{i:02}"), &[TURTLE], "").await).await;
    }
    let dc = s.url("top/dc");
    let mut next = Some(format!("{dc}?limit=10"));
    let (mut contains, mut members, mut pages) = (Vec::new(), Vec::new(), 0);
    while let Some(page) = next.take() {
        pages += 1;
        assert!(pages < 20, "paging does not end");
        let r = s.request(Method::GET, &page, &[], Vec::new()).await;
        assert_eq!(r.status, 200, "{page}: {}", r.text());
        let g = Graph::of(&r, &dc);
        let (c, m) = (
            g.object_iris(&dc, LDP_CONTAINS),
            g.object_iris(&dc, &ldp("member")),
        );
        assert!(c.len() + m.len() <= 10, "{page}: {} + {}", c.len(), m.len());
        contains.extend(c);
        members.extend(m);
        next = links(&r, "next").into_iter().next();
    }
    assert_eq!(pages, 5, "50 listed triples in pages of 10");
    contains.sort();
    members.sort();
    let want: Vec<String> = (0..25).map(|i| s.url(&format!("top/dc/m{i:02}"))).collect();
    assert_eq!(contains, want);
    assert_eq!(members, want);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_settings_are_409_with_constrained_by_and_change_nothing() {
    let s = setup().await;
    created(put(&s, "top/mr", &[TURTLE], "").await).await;
    let mr = s.url("top/mr");
    for (case, body) in [
        (
            "two membership resources",
            format!("<> <{LDP}membershipResource> <{mr}> , <{}> .", s.url("top")),
        ),
        (
            "ldp:contains as hasMemberRelation",
            format!("<> <{LDP}hasMemberRelation> <{LDP_CONTAINS}> ."),
        ),
        (
            "server-managed isMemberOfRelation",
            format!("<> <{LDP}isMemberOfRelation> <{FEDORA}hasParent> ."),
        ),
        (
            "both relations",
            format!("<> <{LDP}hasMemberRelation> <{DC_HAS_PART}> ; <{LDP}isMemberOfRelation> <{DC_IS_PART_OF}> ."),
        ),
        (
            "literal membership resource",
            format!("<> <{LDP}membershipResource> \"x\" ."),
        ),
    ] {
        let r = put(&s, "top/bad", &[TURTLE, LINK_DIRECT], &body).await;
        assert_eq!(r.status, 409, "{case}: {}", r.text());
        assert_constrained_by(&s, &r).await;
        assert_eq!(s.get("top/bad", &[]).await.status, 404, "{case}");
    }
    let r = put(
        &s,
        "top/bad",
        &[TURTLE, LINK_INDIRECT],
        &format!("<> <{LDP}insertedContentRelation> <{ORE_PROXY_FOR}> , <{DC_HAS_PART}> ."),
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text());

    // An update that would break the settings is refused too, and nothing changes.
    created(put(&s, "top/dc", &[TURTLE, LINK_DIRECT], "").await).await;
    created(put(&s, "top/dc/m", &[TURTLE], "").await).await;
    let before = s.get("top/dc", &[]).await;
    let r = sparql(
        &s,
        "top/dc",
        &format!("INSERT DATA {{ <> <{LDP}membershipResource> <{mr}> }}"),
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
    let after = s.get("top/dc", &[]).await;
    assert_eq!(before.header("etag"), after.header("etag"));
    assert_eq!(
        Graph::of(&before, &s.url("top/dc")),
        Graph::of(&after, &s.url("top/dc"))
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_interaction_model_of_a_container_cannot_change() {
    // As Fedora 6: PUT naming another model is 409, in every direction.
    let s = setup().await;
    created(put(&s, "top/dc", &[TURTLE, LINK_DIRECT], "").await).await;
    created(put(&s, "top/bc", &[TURTLE], "").await).await;
    for (path, link) in [
        ("top/dc", LINK_BASIC),
        ("top/bc", LINK_DIRECT),
        ("top/bc", LINK_INDIRECT),
    ] {
        let r = put(&s, path, &[TURTLE, link], "").await;
        assert_eq!(r.status, 409, "{path} {link:?}: {}", r.text());
        assert_constrained_by(&s, &r).await;
    }
    // Naming the model it has is fine.
    assert_eq!(
        put(&s, "top/dc", &[TURTLE, LINK_DIRECT], "").await.status,
        204
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn type_triple_that_agrees_with_the_interaction_model_is_accepted() {
    // As Fedora 6.1 (issue 46.6): `<> a ldp:DirectContainer` sent with the same
    // `Link: rel="type"` is 201; a type contradicting the model stays 409.
    let s = setup().await;
    created(put(&s, "top/mr", &[TURTLE], "").await).await;
    let mr = s.url("top/mr");
    let body = format!(
        "<> a <{LDP}DirectContainer> ; <{LDP}membershipResource> <{mr}> ; <{LDP}hasMemberRelation> <{DC_HAS_PART}> ."
    );
    created(put(&s, "top/dc", &[TURTLE, LINK_DIRECT], &body).await).await;
    let dc = s.url("top/dc");
    let g = get_graph(&s, "top/dc", &[]).await;
    assert!(g.has(&dc, RDF_TYPE, &ldp("DirectContainer")));
    assert!(g.has(&dc, &ldp("membershipResource"), &mr));
    let r = s
        .get("top/dc", &[("accept", "application/n-triples")])
        .await;
    let line = format!("<{dc}> <{RDF_TYPE}> <{LDP}DirectContainer> .");
    assert_eq!(r.text().matches(&line).count(), 1, "{}", r.text());

    // The same body PUT back on the existing container (a replace) is accepted too.
    let r = put(&s, "top/dc", &[TURTLE], &body).await;
    assert_eq!(r.status, 204, "{}", r.text());

    // A type that contradicts the model is refused and creates nothing.
    let r = put(&s, "top/bc", &[TURTLE], &body).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
    assert_eq!(s.get("top/bc", &[]).await.status, 404);
    s.stop().await;
}

/// 3.1.2/3.1.3 (issue 38.9, a MAY): the other settings change too. `hasMemberRelation` →
/// `isMemberOfRelation` by PATCH moves every triple onto the members; an indirect container's
/// `insertedContentRelation` changed by PUT recomputes its members from the proxies' other
/// statement; a change LDP forbids on an existing container is refused and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ldp_5_4_every_setting_of_an_existing_container_changes_and_refused_changes_keep_it() {
    let s = setup().await;
    created(put(&s, "top/mr", &[TURTLE], "").await).await;
    let mr = s.url("top/mr");
    let body =
        format!("<> <{LDP}membershipResource> <{mr}> ; <{LDP}hasMemberRelation> <{DC_HAS_PART}> .");
    created(put(&s, "top/dc", &[TURTLE, LINK_DIRECT], &body).await).await;
    for m in ["a", "b"] {
        created(put(&s, &format!("top/dc/{m}"), &[TURTLE], "").await).await;
    }
    assert_eq!(
        get_graph(&s, "top/mr", &[])
            .await
            .object_iris(&mr, DC_HAS_PART)
            .len(),
        2
    );

    let r = sparql(
        &s,
        "top/dc",
        &format!("DELETE {{ <> <{LDP}hasMemberRelation> ?o }} INSERT {{ <> <{LDP}isMemberOfRelation> <{DC_IS_PART_OF}> }} WHERE {{ <> <{LDP}hasMemberRelation> ?o }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(get_graph(&s, "top/mr", &[])
        .await
        .with_predicate(DC_HAS_PART)
        .is_empty());
    for m in ["a", "b"] {
        let member = s.url(&format!("top/dc/{m}"));
        let g = get_graph(&s, &format!("top/dc/{m}"), &[]).await;
        assert!(g.has(&member, DC_IS_PART_OF, &mr), "{m}");
    }

    // Refused on an existing container: a second membership resource, both relations.
    let before = get_graph(&s, "top/dc", &[]).await;
    for update in [
        format!(
            "INSERT DATA {{ <> <{LDP}membershipResource> <{}> }}",
            s.url("top")
        ),
        format!("INSERT DATA {{ <> <{LDP}hasMemberRelation> <{DC_HAS_PART}> }}"),
    ] {
        let r = sparql(&s, "top/dc", &update).await;
        assert_eq!(r.status, 409, "{update}: {}", r.text());
        assert_constrained_by(&s, &r).await;
    }
    assert_eq!(get_graph(&s, "top/dc", &[]).await.0, before.0);
    assert!(get_graph(&s, "top/dc/a", &[])
        .await
        .has(&s.url("top/dc/a"), DC_IS_PART_OF, &mr));

    // An indirect container's inserted-content relation, changed by PUT.
    let (t1, t2) = (s.url("top/t1"), s.url("top/t2"));
    for t in ["top/t1", "top/t2"] {
        created(put(&s, t, &[TURTLE], "").await).await;
    }
    let settings = |relation: &str| {
        format!("<> <{LDP}membershipResource> <{mr}> ; <{LDP}hasMemberRelation> <{DC_HAS_PART}> ; <{LDP}insertedContentRelation> <{relation}> .")
    };
    created(
        put(
            &s,
            "top/ic",
            &[TURTLE, LINK_INDIRECT],
            &settings(ORE_PROXY_FOR),
        )
        .await,
    )
    .await;
    let proxy = format!("<> <{ORE_PROXY_FOR}> <{t1}> ; <http://purl.org/dc/terms/source> <{t2}> .");
    created(put(&s, "top/ic/p", &[TURTLE], &proxy).await).await;
    let parts = get_graph(&s, "top/mr", &[])
        .await
        .object_iris(&mr, DC_HAS_PART);
    assert_eq!(parts, vec![t1.clone()]);
    let r = put(
        &s,
        "top/ic",
        &[TURTLE, LINK_INDIRECT],
        &settings("http://purl.org/dc/terms/source"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let parts = get_graph(&s, "top/mr", &[])
        .await
        .object_iris(&mr, DC_HAS_PART);
    assert_eq!(parts, vec![t2]);
    s.stop().await;
}
