//! JSON-LD answers in the form the client's `Accept` names, as Fedora 7 gives them
//! (`../shared/ocfl-fedora7-sample/answers/jsonld-*.txt`): expanded by default with a plain
//! `application/ld+json`, `profile="…#compacted"` and `"…#flattened"` named back in the
//! `Content-Type`; each form of each kind of answer (containers, descriptions, mementos,
//! TimeMaps, ACLs) reads back, through a JSON-LD parser, to the triples of its Turtle.

use crate::common::*;
use arca_rdf::RdfFormat;
use arca_testkit::{Reply, TestServer};
use serde_json::Value;

const EXPANDED: &str = "http://www.w3.org/ns/json-ld#expanded";
const COMPACTED: &str = "http://www.w3.org/ns/json-ld#compacted";
const FLATTENED: &str = "http://www.w3.org/ns/json-ld#flattened";

/// `Accept: application/ld+json;profile="<profile>"`.
fn accept(profile: &str) -> String {
    format!("application/ld+json;profile=\"{profile}\"")
}

/// The Content-Type arca answers a request for `profile` with.
fn named(profile: &str) -> String {
    accept(profile)
}

const BOOK: &str = r#"
@prefix dcterms: <http://purl.org/dc/terms/> .
<> dcterms:title "First book" , "Erstes Buch"@de ;
   dcterms:creator "Ada" , "Grace" ;
   dcterms:date "2026-11-28"^^<http://www.w3.org/2001/XMLSchema#date> ;
   dcterms:subject <http://id.loc.gov/authorities/subjects/sh85029552> ;
   dcterms:hasPart <#chapter> , [ dcterms:title "a blank part" ] .
<#chapter> dcterms:title "Chapter one" .
"#;

/// GETs `path` with `accept` and checks the answer: 200, `content_type`, `Vary: Accept`,
/// a JSON document whose triples (read by oxjsonld) are those of the Turtle answer.
async fn check(s: &TestServer, path: &str, accept: &str, content_type: &str) -> Value {
    let url = s.url(path);
    let turtle = graph(s, path, &[("accept", "text/turtle")]).await;
    let r = s.get(path, &[("accept", accept)]).await;
    assert_eq!(r.status, 200, "{path} {accept}: {}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some(content_type),
        "{path} {accept}"
    );
    assert!(
        header_items(&r, "vary")
            .iter()
            .any(|v| v.eq_ignore_ascii_case("accept")),
        "{path}: Vary"
    );
    let g = Graph::parse(&r.body, RdfFormat::JsonLd, &url);
    assert_eq!(shape(&g), shape(&turtle), "{path} {accept}: {}", r.text());
    // HEAD says the same.
    let h = head(s, path, &[("accept", accept)]).await;
    assert_eq!(h.header("content-type"), Some(content_type), "HEAD {path}");
    assert_eq!(
        h.header("content-length").map(str::to_string),
        Some(r.body.len().to_string()),
        "HEAD {path}"
    );
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}: {}", r.text()))
}

/// The triples of a graph with its blank node labels masked (the forms relabel them).
fn shape(g: &Graph) -> std::collections::HashSet<String> {
    g.0.iter()
        .map(|t| {
            let mut t = t.clone();
            if t.subject.is_blank_node() {
                t.subject = oxrdf::BlankNode::new_unchecked("b").into();
            }
            if t.object.is_blank_node() {
                t.object = oxrdf::BlankNode::new_unchecked("b").into();
            }
            t.to_string()
        })
        .collect()
}

fn text(r: &Reply) -> String {
    r.text()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_profile_gets_its_form_and_names_it() {
    let s = TestServer::start().await;
    container_with(&s, "book", BOOK).await;
    container(&s, "book/child").await;
    let url = s.url("book");

    // The default: expanded, a top-level array, no profile in the Content-Type (Fedora 7).
    let doc = check(&s, "book", "application/ld+json", "application/ld+json").await;
    let nodes = doc.as_array().expect("an array");
    let book = nodes.iter().find(|n| n["@id"] == url.as_str()).unwrap();
    assert!(book["@type"]
        .as_array()
        .unwrap()
        .contains(&Value::from(LDP_BASIC_CONTAINER)));
    assert!(book["http://purl.org/dc/terms/title"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!({"@value": "Erstes Buch", "@language": "de"})));
    assert!(nodes.iter().all(|n| n.get("@context").is_none()));

    // Expanded asked by name: the same document, the profile named.
    let named_expanded = check(&s, "book", &accept(EXPANDED), &named(EXPANDED)).await;
    assert_eq!(named_expanded, doc);

    // Compacted: one document with the prefixes the graph uses as its context.
    let doc = check(&s, "book", &accept(COMPACTED), &named(COMPACTED)).await;
    let ctx = doc["@context"].as_object().expect("a @context");
    assert_eq!(ctx["dcterms"], "http://purl.org/dc/terms/");
    assert_eq!(ctx["ldp"], LDP);
    assert_eq!(ctx["fedora"], FEDORA);
    // Several subjects (the hash URI, the blank node): a @graph.
    let graph = doc["@graph"].as_array().expect("a @graph");
    let book = graph.iter().find(|n| n["@id"] == url.as_str()).unwrap();
    assert_eq!(
        book["dcterms:date"]["@type"],
        "http://www.w3.org/2001/XMLSchema#date"
    );
    assert_eq!(book["ldp:contains"]["@id"], s.url("book/child"));
    assert!(book["@type"]
        .as_array()
        .unwrap()
        .contains(&Value::from("ldp:BasicContainer")));
    assert!(book["dcterms:creator"]
        .as_array()
        .unwrap()
        .contains(&Value::from("Ada")));

    // Flattened: a top-level array of node objects sorted by @id, blank nodes relabelled.
    let doc = check(&s, "book", &accept(FLATTENED), &named(FLATTENED)).await;
    let ids: Vec<&str> = doc
        .as_array()
        .expect("an array")
        .iter()
        .map(|n| n["@id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["_:b0", url.as_str(), &format!("{url}#chapter")]);

    // Both: flattened, then compacted.
    let both = format!("{FLATTENED} {COMPACTED}");
    let doc = check(&s, "book", &accept(&both), &named(&both)).await;
    assert_eq!(doc["@graph"].as_array().map(Vec::len), Some(3));

    // A resource with one subject compacts to a single node object.
    let doc = check(&s, "book/child", &accept(COMPACTED), &named(COMPACTED)).await;
    assert_eq!(doc["@id"], s.url("book/child"));
    assert_eq!(doc["fedora:hasParent"]["@id"], url);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_profiles_q_values_and_bad_ones() {
    let s = TestServer::start().await;
    container_with(&s, "n", BOOK).await;
    let ct = |accept: String| {
        let s = &s;
        async move {
            let r = s.get("n", &[("accept", &accept)]).await;
            let ct = r.header("content-type").unwrap_or("").to_string();
            (r.status.as_u16(), ct, text(&r))
        }
    };
    let ok = |form: &str| (200, named(form));
    let check = |got: (u16, String, String), want: (u16, String), accept: &str| {
        assert_eq!((got.0, got.1.clone()), want, "{accept}: {}", got.2);
    };
    for (accept, want) in [
        (
            format!("{};q=0.5, {};q=0.9", accept(COMPACTED), accept(FLATTENED)),
            ok(FLATTENED),
        ),
        (
            format!("{}, {}", accept(COMPACTED), accept(FLATTENED)),
            ok(COMPACTED),
        ),
        (
            format!("{};q=0.1, application/ld+json", accept(COMPACTED)),
            (200, "application/ld+json".to_string()),
        ),
        (
            format!("text/turtle;q=0.9, {}", accept(COMPACTED)),
            ok(COMPACTED),
        ),
        (
            format!("text/turtle, {};q=0.8", accept(COMPACTED)),
            (200, "text/turtle;charset=utf-8".to_string()),
        ),
        // Unknown or malformed profiles: the expanded form, named as served (Fedora 7 would
        // echo the unknown profile).
        (
            accept("http://www.w3.org/ns/json-ld#nonsense"),
            ok(EXPANDED),
        ),
        (
            "application/ld+json;profile=\"unterminated".to_string(),
            ok(EXPANDED),
        ),
        ("application/ld+json;profile=".to_string(), ok(EXPANDED)),
        (
            "application/ld+json;profile=\"a, b; c\"".to_string(),
            ok(EXPANDED),
        ),
        // A malformed q-value drops its range: nothing acceptable is 406.
        (
            format!("{};q=high", accept(COMPACTED)),
            (406, String::new()),
        ),
        (format!("{};q=0", accept(COMPACTED)), (406, String::new())),
    ] {
        let got = ct(accept.clone()).await;
        if want.0 == 406 {
            assert_eq!(got.0, 406, "{accept}: {}", got.2);
        } else {
            check(got, want, &accept);
        }
    }
    // The default form for an unknown profile is the expanded document.
    let r = s
        .get(
            "n",
            &[("accept", &accept("http://www.w3.org/ns/json-ld#frame"))],
        )
        .await;
    let plain = s.get("n", &[("accept", "application/ld+json")]).await;
    let a: Value = serde_json::from_slice(&r.body).unwrap();
    let b: Value = serde_json::from_slice(&plain.body).unwrap();
    assert_eq!(a, b);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptions_mementos_timemaps_and_acls_in_every_form() {
    let s = TestServer::start().await;
    container_with(&s, "c", BOOK).await;
    binary(&s, "c/page.txt", "text/plain", b"a page").await;
    let r = patch(
        &s,
        "c/page.txt/fcr:metadata",
        &[SPARQL],
        "INSERT DATA { <> <http://purl.org/dc/terms/description> \"the page\" }",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = post(&s, "c/fcr:versions", &[], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let memento = r
        .header("location")
        .expect("a memento's Location")
        .strip_prefix(&format!("{}/", s.base))
        .expect("below the REST root")
        .to_string();
    let acl = format!(
        "@prefix acl: <http://www.w3.org/ns/auth/acl#> .\n\
         <#read> a acl:Authorization ; acl:agent <http://users.example/alice> ;\n\
         acl:accessTo <{}> ; acl:mode acl:Read .",
        s.url("c")
    );
    let r = put(&s, "c/fcr:acl", &[TURTLE], &acl).await;
    assert_eq!(r.status, 201, "{}", r.text());

    for path in [
        "c/page.txt/fcr:metadata",
        memento.as_str(),
        "c/fcr:versions",
        "c/fcr:acl",
        "fcr:acl",
    ] {
        check(&s, path, "application/ld+json", "application/ld+json").await;
        for profile in [EXPANDED, COMPACTED, FLATTENED] {
            check(&s, path, &accept(profile), &named(profile)).await;
        }
    }
    // The description compacts with the PREMIS and EBUCore prefixes.
    let doc = check(
        &s,
        "c/page.txt/fcr:metadata",
        &accept(COMPACTED),
        &named(COMPACTED),
    )
    .await;
    // One node object, or several in @graph (whatever else the description states).
    let binary = s.url("c/page.txt");
    let node = match doc["@graph"].as_array() {
        Some(nodes) => nodes
            .iter()
            .find(|n| n["@id"] == binary.as_str())
            .cloned()
            .unwrap_or_else(|| panic!("no node for the binary: {doc}")),
        None => doc.clone(),
    };
    assert_eq!(node["@id"], binary);
    assert_eq!(node["dcterms:description"], "the page");
    assert_eq!(node["ebucore:hasMimeType"], "text/plain");
    assert!(doc["@context"]["premis"].is_string(), "{doc}");
    // An ACL's objects under a prefix compact as document IRIs.
    let doc = check(&s, "c/fcr:acl", &accept(COMPACTED), &named(COMPACTED)).await;
    let text = doc.to_string();
    assert!(
        text.contains("\"acl:mode\":{\"@id\":\"acl:Read\"}"),
        "{text}"
    );
    s.stop().await;
}
