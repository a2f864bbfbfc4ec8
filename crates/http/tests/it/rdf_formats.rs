//! RDF in and out: Turtle, N-Triples and JSON-LD request bodies; Turtle, N-Triples, JSON-LD
//! and RDF/XML responses chosen by `Accept` (a page for a browser, 406 when none fits); relative IRIs and `<>`
//! resolved against the resource's URL.

use std::collections::HashSet;

use crate::common::*;
use arca_rdf::RdfFormat;
use arca_testkit::TestServer;
use oxrdf::{Literal, Triple};

/// The statements every body below says, about the resource at `url`.
fn expected(url: &str) -> HashSet<Triple> {
    [
        triple(url, DC_TITLE, lit("Title")),
        triple(
            url,
            DC_TITLE,
            Literal::new_language_tagged_literal("Titel", "de").unwrap(),
        ),
        triple(
            url,
            "http://example.org/count",
            Literal::new_typed_literal("42", iri("http://www.w3.org/2001/XMLSchema#integer")),
        ),
        triple(url, DC_RELATION, iri("http://example.org/other")),
        triple(url, RDF_TYPE, iri("http://example.org/Thing")),
    ]
    .into_iter()
    .collect()
}

const TURTLE_BODY: &str = r#"
@prefix dc: <http://purl.org/dc/terms/> .
<> a <http://example.org/Thing> ;
   dc:title "Title", "Titel"@de ;
   <http://example.org/count> 42 ;
   dc:relation <http://example.org/other> .
"#;

const JSONLD_BODY: &str = r#"{
  "@id": "",
  "@type": "http://example.org/Thing",
  "http://purl.org/dc/terms/title": ["Title", {"@value": "Titel", "@language": "de"}],
  "http://example.org/count": 42,
  "http://purl.org/dc/terms/relation": {"@id": "http://example.org/other"}
}"#;

fn ntriples_body(url: &str) -> String {
    format!(
        "<{url}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/Thing> .\n\
         <{url}> <http://purl.org/dc/terms/title> \"Title\" .\n\
         <{url}> <http://purl.org/dc/terms/title> \"Titel\"@de .\n\
         <{url}> <http://example.org/count> \"42\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n\
         <{url}> <http://purl.org/dc/terms/relation> <http://example.org/other> .\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_in_every_input_format_are_read() {
    let s = TestServer::start().await;
    let nt = ntriples_body(&s.url("nt"));
    let inputs = [
        ("ttl", "text/turtle", TURTLE_BODY.to_string()),
        ("nt", "application/n-triples", nt),
        ("jsonld", "application/ld+json", JSONLD_BODY.to_string()),
    ];
    for (slug, ct, body) in &inputs {
        let r = post(&s, "", &[("content-type", ct), ("slug", slug)], body).await;
        assert_eq!(r.status, 201, "{ct}: {}", r.text());
        assert!(r.has_link(LDP_BASIC_CONTAINER, "type"));
        let g = graph(&s, slug, &[]).await;
        assert_eq!(g.user_triples(), expected(&s.url(slug)), "{ct}");
    }
    // PUT replaces in each format as well.
    for (_, ct, body) in &inputs {
        let body = body.replace(&s.url("nt"), &s.url("target"));
        let r = put(&s, "target", &[("content-type", ct)], &body).await;
        assert!(
            r.status == 201 || r.status == 204,
            "{ct}: {} {}",
            r.status,
            r.text()
        );
        let g = graph(&s, "target", &[]).await;
        assert_eq!(g.user_triples(), expected(&s.url("target")), "{ct}");
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_output_format_carries_the_same_graph() {
    let s = TestServer::start().await;
    container_with(&s, "res", TURTLE_BODY).await;
    container(&s, "res/child").await;
    let url = s.url("res");

    let reference = graph(&s, "res", &[("accept", "text/turtle")]).await;
    assert_eq!(reference.user_triples(), expected(&url));
    assert!(reference.has(&url, LDP_CONTAINS, &s.url("res/child")));
    assert!(reference.has(&url, RDF_TYPE, LDP_BASIC_CONTAINER));

    for (accept, format) in [
        ("text/turtle", RdfFormat::Turtle),
        ("application/n-triples", RdfFormat::NTriples),
        ("application/ld+json", RdfFormat::JsonLd),
        ("application/rdf+xml", RdfFormat::RdfXml),
    ] {
        let r = s.get("res", &[("accept", accept)]).await;
        assert_eq!(r.status, 200, "{accept}");
        let ct = r.header("content-type").unwrap();
        assert!(ct.starts_with(accept), "asked {accept}, got {ct}");
        let vary = r.header_all("vary").to_ascii_lowercase();
        assert!(vary.contains("accept"), "Vary: {vary}");
        let g = Graph::parse(&r.body, format, &url);
        // Timestamps are the same: nothing changed between the requests.
        assert_eq!(g, reference, "{accept}");
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_negotiation() {
    let s = TestServer::start().await;
    container(&s, "n").await;
    let ct = |accept: &'static str| {
        let s = &s;
        async move {
            let r = s.get("n", &[("accept", accept)]).await;
            (
                r.status.as_u16(),
                r.header("content-type").unwrap_or("").to_string(),
            )
        }
    };
    // Default (LDP 4.3.2): Turtle.
    let r = s.get("n", &[]).await;
    assert!(r.header("content-type").unwrap().starts_with("text/turtle"));
    assert!(ct("*/*").await.1.starts_with("text/turtle"));
    assert!(ct("text/*").await.1.starts_with("text/turtle"));
    assert!(ct("text/turtle;q=0.5, application/ld+json;q=0.9")
        .await
        .1
        .starts_with("application/ld+json"));
    assert!(ct("application/n-triples;q=0.2, text/turtle;q=0.1")
        .await
        .1
        .starts_with("application/n-triples"));
    assert!(ct("text/turtle;q=0, */*")
        .await
        .1
        .starts_with("application/ld+json"));
    // A browser's Accept, and text/html alone, get the resource's page (tests/it/html.rs);
    // an RDF format named as high as text/html wins.
    for accept in [
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        "text/html",
    ] {
        let (status, content_type) = ct(accept).await;
        assert_eq!(status, 200);
        assert!(
            content_type.starts_with("text/html"),
            "{accept}: {content_type}"
        );
    }
    assert!(ct("text/html, text/turtle")
        .await
        .1
        .starts_with("text/turtle"));
    let h = head(&s, "n", &[("accept", "text/html")]).await;
    assert_eq!(h.status, 200);
    assert!(h.header("content-type").unwrap().starts_with("text/html"));
    // Nothing acceptable: 406, for GET and HEAD.
    assert_eq!(ct("application/ld+json;q=0").await.0, 406);
    assert_eq!(ct("image/png, application/pdf").await.0, 406);
    let h = head(&s, "n", &[("accept", "image/png")]).await;
    assert_eq!(h.status, 406);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relative_iris_resolve_against_the_new_resource() {
    let s = TestServer::start().await;
    container(&s, "col").await;
    let body = r#"
        <> <http://purl.org/dc/terms/relation> <#part>, <sibling>, <./sub/x>, <../top> .
        <#part> <http://purl.org/dc/terms/title> "a part" .
    "#;
    // POST: relative to the URL of the resource being created.
    let r = post(&s, "col", &[TURTLE, ("slug", "item")], body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let url = s.url("col/item");
    let g = graph(&s, "col/item", &[]).await;
    let mut rel = g.object_iris(&url, DC_RELATION);
    rel.sort();
    let mut want = vec![
        format!("{url}#part"),
        s.url("col/sibling"),
        s.url("col/sub/x"),
        s.url("top"),
    ];
    want.sort();
    assert_eq!(rel, want);
    assert!(g.has_lit(&format!("{url}#part"), DC_TITLE, "a part"));

    // PUT: relative to the request URL.
    let r = put(&s, "col/other", &[TURTLE], body).await;
    assert_eq!(r.status, 201);
    let url = s.url("col/other");
    let g = graph(&s, "col/other", &[]).await;
    assert!(g.has(&url, DC_RELATION, &format!("{url}#part")));
    assert!(g.has(&url, DC_RELATION, &s.url("col/sibling")));

    // JSON-LD: "@id": "" and relative ids.
    let r = post(
        &s,
        "col",
        &[("content-type", "application/ld+json"), ("slug", "j")],
        r##"{"@id": "", "http://purl.org/dc/terms/relation": {"@id": "#frag"}}"##,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let url = s.url("col/j");
    assert!(graph(&s, "col/j", &[])
        .await
        .has(&url, DC_RELATION, &format!("{url}#frag")));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absolute_iris_of_repository_resources_round_trip() {
    let s = TestServer::start().await;
    container(&s, "a").await;
    let body = format!(
        "<> <http://purl.org/dc/terms/relation> <{}> , <{}#x> .",
        s.url("a"),
        s.base
    );
    container_with(&s, "b", &body).await;
    let g = graph(&s, "b", &[]).await;
    let url = s.url("b");
    assert!(g.has(&url, DC_RELATION, &s.url("a")));
    // The root's hash URIs are named `…/rest/#x`, as Fedora 6 names the root `…/rest/`.
    assert!(g.has(&url, DC_RELATION, &format!("{}#x", s.url(""))));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turtle_without_its_final_dots_is_read_as_fedora_reads_it() {
    // Issue 38.6: Fedora (Jena) accepts an @prefix/@base directive and a last statement
    // without their dots, wherever it reads Turtle; so does arca: PUT, POST, descriptions
    // and ACLs.
    let s = TestServer::start().await;
    let dotless = "@prefix dc: <http://purl.org/dc/terms/>\n<> dc:title \"Title\"";
    let r = put(&s, "put", &[TURTLE], dotless).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = post(&s, "", &[TURTLE, ("slug", "post")], dotless).await;
    assert_eq!(r.status, 201, "{}", r.text());
    binary(&s, "bin", "text/plain", b"bytes").await;
    let r = put(&s, "bin/fcr:metadata", &[TURTLE], dotless).await;
    assert_eq!(r.status, 204, "{}", r.text());
    for (path, subject) in [
        ("put", "put"),
        ("post", "post"),
        ("bin/fcr:metadata", "bin"),
    ] {
        let g = graph(&s, path, &[]).await;
        assert!(g.has_lit(&s.url(subject), DC_TITLE, "Title"), "{path}");
    }
    let acl = format!(
        "@prefix acl: <http://www.w3.org/ns/auth/acl#>\n\
         <#read> a acl:Authorization ; acl:agent <http://users.example/alice> ;\n\
         acl:accessTo <{}> ; acl:mode acl:Read",
        s.url("put")
    );
    let r = put(&s, "put/fcr:acl", &[TURTLE], &acl).await;
    assert_eq!(r.status, 201, "{}", r.text());

    // Everything else malformed keeps its precise 400 and changes nothing.
    for bad in [
        "<> <http://purl.org/dc/terms/title> \"unterminated",
        "<> <http://purl.org/dc/terms/title> <http://example.org/unterminated",
        "<> <http://purl.org/dc/terms/title>",
        "<> <http://purl.org/dc/terms/title> \"a\" <> <http://purl.org/dc/terms/title> \"b\" .",
    ] {
        let r = put(&s, "put", &[TURTLE], bad).await;
        assert_eq!(r.status, 400, "{bad:?}: {}", r.text());
        assert!(r.text().contains("line"), "{}", r.text());
    }
    let g = graph(&s, "put", &[]).await;
    assert!(g.has_lit(&s.url("put"), DC_TITLE, "Title"));
    s.stop().await;
}
