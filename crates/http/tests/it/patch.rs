//! PATCH with SPARQL Update on containers and on binary descriptions; malformed updates,
//! wrong content types, PATCH on binaries, interaction-model and containment changes.

use std::collections::HashSet;

use crate::common::*;
use arca_testkit::TestServer;

const PREFIX: &str = "PREFIX dc: <http://purl.org/dc/terms/>\n";

fn user(g: &Graph) -> HashSet<oxrdf::Triple> {
    g.user_triples()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_data_delete_data_and_delete_insert_where_on_a_container() {
    let s = TestServer::start().await;
    container_with(&s, "c", "<> <http://purl.org/dc/terms/title> \"old\" .").await;
    let url = s.url("c");

    let r = sparql(
        &s,
        "c",
        &format!(
            "{PREFIX}INSERT DATA {{ <> dc:subject \"a\", \"b\" . <#part> dc:title \"part\" }}"
        ),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(r.header("etag").is_some());
    let part = format!("{url}#part");
    let want: HashSet<_> = [
        triple(&url, DC_TITLE, lit("old")),
        triple(&url, "http://purl.org/dc/terms/subject", lit("a")),
        triple(&url, "http://purl.org/dc/terms/subject", lit("b")),
        triple(&part, DC_TITLE, lit("part")),
    ]
    .into_iter()
    .collect();
    assert_eq!(user(&graph(&s, "c", &[]).await), want);

    let r = sparql(
        &s,
        "c",
        &format!("{PREFIX}DELETE DATA {{ <> dc:subject \"a\" }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let g = graph(&s, "c", &[]).await;
    assert!(!g.has_lit(&url, "http://purl.org/dc/terms/subject", "a"));
    assert!(g.has_lit(&url, "http://purl.org/dc/terms/subject", "b"));

    let r = sparql(
        &s,
        "c",
        &format!("{PREFIX}DELETE {{ <> dc:title ?t }} INSERT {{ <> dc:title \"new\" }} WHERE {{ <> dc:title ?t }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let g = graph(&s, "c", &[]).await;
    assert_eq!(g.objects(&url, DC_TITLE), vec![lit("new")]);

    // Several operations in one request; DELETE WHERE.
    let r = sparql(
        &s,
        "c",
        &format!(
            "{PREFIX}DELETE WHERE {{ <#part> ?p ?o }} ; INSERT DATA {{ <> dc:creator \"me\" }}"
        ),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let want: HashSet<_> = [
        triple(&url, DC_TITLE, lit("new")),
        triple(&url, "http://purl.org/dc/terms/subject", lit("b")),
        triple(&url, "http://purl.org/dc/terms/creator", lit("me")),
    ]
    .into_iter()
    .collect();
    assert_eq!(user(&graph(&s, "c", &[]).await), want);

    // Server-managed triples are still there, and the update shows in lastModified.
    let g = graph(&s, "c", &[]).await;
    assert!(g.has(&url, RDF_TYPE, LDP_BASIC_CONTAINER));
    assert!(!g.objects(&url, &fedora("lastModified")).is_empty());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_with_insert_where_empty() {
    // The suite's 3.7-A/F body.
    let s = TestServer::start().await;
    container(&s, "c").await;
    let r = sparql(
        &s,
        "c",
        "PREFIX dcterms: <http://purl.org/dc/terms/> INSERT { <> dcterms:description \"Patch Updated Description\" . } WHERE { }",
    )
    .await;
    assert!(r.status.is_success(), "{} {}", r.status, r.text());
    let g = graph(&s, "c", &[]).await;
    assert!(g.has_lit(
        &s.url("c"),
        "http://purl.org/dc/terms/description",
        "Patch Updated Description"
    ));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_on_a_description_changes_the_binarys_metadata() {
    let s = TestServer::start().await;
    binary(&s, "bin", "text/plain", b"content").await;
    let bin = s.url("bin");
    let r = sparql(
        &s,
        "bin/fcr:metadata",
        &format!("{PREFIX}INSERT DATA {{ <> dc:title \"the binary\" ; dc:subject \"x\" }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(r.has_link(&bin, "describes"));
    let g = graph(&s, "bin/fcr:metadata", &[]).await;
    assert!(g.has_lit(&bin, DC_TITLE, "the binary"));
    assert!(g.has_lit(&bin, "http://purl.org/dc/terms/subject", "x"));

    // An absolute subject works the same as <>.
    let r = sparql(
        &s,
        "bin/fcr:metadata",
        &format!("{PREFIX}DELETE {{ <{bin}> dc:subject ?s }} INSERT {{ <{bin}> dc:subject \"y\" }} WHERE {{ <{bin}> dc:subject ?s }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let g = graph(&s, "bin/fcr:metadata", &[]).await;
    assert_eq!(
        g.objects(&bin, "http://purl.org/dc/terms/subject"),
        vec![lit("y")]
    );
    let r = sparql(
        &s,
        "bin/fcr:metadata",
        &format!("{PREFIX}DELETE DATA {{ <> dc:title \"the binary\" }}"),
    )
    .await;
    assert_eq!(r.status, 204);
    assert!(graph(&s, "bin/fcr:metadata", &[])
        .await
        .objects(&bin, DC_TITLE)
        .is_empty());

    // The content is untouched.
    let b = s.get("bin", &[]).await;
    assert_eq!(&b.body[..], b"content");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_update_is_400_and_changes_nothing() {
    let s = TestServer::start().await;
    container_with(&s, "c", "<> <http://purl.org/dc/terms/title> \"t\" .").await;
    let before = s.get("c", &[]).await.header("etag").unwrap().to_string();
    for bad in [
        "INSERT DATA { <> <http://purl.org/dc/terms/title> \"unterminated }",
        "this is not SPARQL",
        "INSERT DATA { <> dc:title \"undeclared prefix\" }",
        "SELECT * WHERE { ?s ?p ?o }",
    ] {
        let r = sparql(&s, "c", bad).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
        assert!(!r.body.is_empty());
    }
    let r = sparql(&s, "bin/fcr:metadata", "nonsense").await;
    assert_eq!(r.status, 404);
    assert_eq!(s.get("c", &[]).await.header("etag"), Some(before.as_str()));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_content_type_is_415() {
    let s = TestServer::start().await;
    container(&s, "c").await;
    let update = "INSERT DATA { <> <http://purl.org/dc/terms/title> \"t\" }";
    for ct in ["text/turtle", "application/json", "text/plain"] {
        let r = patch(&s, "c", &[("content-type", ct)], update).await;
        assert_eq!(r.status, 415, "{ct}");
    }
    let r = patch(&s, "c", &[], update).await;
    assert_eq!(r.status, 415, "no Content-Type");
    // Parameters are fine.
    let r = patch(
        &s,
        "c",
        &[("content-type", "application/sparql-update; charset=utf-8")],
        update,
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_on_a_binary_is_405() {
    let s = TestServer::start().await;
    binary(&s, "bin", "text/plain", b"content").await;
    let r = sparql(
        &s,
        "bin",
        "INSERT DATA { <> <http://purl.org/dc/terms/title> \"t\" }",
    )
    .await;
    assert_eq!(r.status, 405);
    let allow = header_items(&r, "allow");
    assert!(!allow.iter().any(|m| m == "PATCH"), "{allow:?}");
    assert!(allow.iter().any(|m| m == "GET"));
    assert_eq!(&s.get("bin", &[]).await.body[..], b"content");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_cannot_change_the_interaction_model_or_containment() {
    let s = TestServer::start().await;
    container(&s, "c").await;
    container(&s, "c/kid").await;
    // 3.7.2
    let r = sparql(
        &s,
        "c",
        "PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> PREFIX ldp: <http://www.w3.org/ns/ldp#> INSERT { <> rdf:type ldp:NonRDFSource . } WHERE { }",
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
    // 3.7.1 (the suite's body)
    let r = sparql(
        &s,
        "c",
        "PREFIX ldp: <http://www.w3.org/ns/ldp#>\n INSERT {   \n  <> ldp:contains \"some-url\" .\n}\n WHERE { }",
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
    // 3.7-C/D/E (the suite's body): 409, the statement named in the body, constrainedBy.
    let r = sparql(
        &s,
        "c",
        "PREFIX fedora: <http://fedora.info/definitions/v4/repository#> INSERT { <> fedora:lastModifiedBy \"User\" . } WHERE { }",
    )
    .await;
    assert_eq!(r.status, 409);
    assert!(r.text().contains("lastModified"), "{}", r.text());
    assert_constrained_by(&s, &r).await;

    let g = graph(&s, "c", &[]).await;
    assert!(g.has(&s.url("c"), RDF_TYPE, LDP_BASIC_CONTAINER));
    assert!(!g.has(&s.url("c"), RDF_TYPE, LDP_NON_RDF_SOURCE));
    assert_eq!(children(&s, "c").await, vec![s.url("c/kid")]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_update_operations_are_refused_with_constrained_by() {
    let s = TestServer::start().await;
    container(&s, "c").await;
    for update in [
        "INSERT DATA { GRAPH <http://example.org/g> { <> <http://purl.org/dc/terms/title> \"t\" } }",
        "CLEAR DEFAULT",
        "LOAD <http://example.org/data.ttl>",
    ] {
        let r = sparql(&s, "c", update).await;
        assert!(r.status.is_client_error(), "{update}: {}", r.status);
        assert_constrained_by(&s, &r).await;
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_on_a_missing_resource_is_404() {
    let s = TestServer::start().await;
    let r = sparql(
        &s,
        "nothing",
        "INSERT DATA { <> <http://purl.org/dc/terms/title> \"t\" }",
    )
    .await;
    assert_eq!(r.status, 404);
    assert_eq!(s.get("nothing", &[]).await.status, 404);
    s.stop().await;
}
