//! JSON-LD in its three forms, against Fedora 7.0.0's own answers
//! (`../shared/ocfl-fedora7-sample/answers/jsonld-*.txt`): the same triples give the same
//! documents (member and array order aside), and every form reads back, through oxjsonld's
//! JSON-LD 1.1 parser, to the triples it was written from.

use std::collections::HashSet;
use std::path::PathBuf;

use arca_rdf::{
    parse, serialize, serialize_as, IdMapper, JsonLdProfile, ParseLimits, RdfFormat, RdfOutput,
};
use oxrdf::{BlankNode, Literal, NamedNode, Triple};
use serde_json::Value;

/// A mapper for an unrelated base: every IRI stays as it is.
fn mapper() -> IdMapper {
    IdMapper::new("urn:arca-test:none")
}

const RESOURCE: &str = "http://127.0.0.1:19701/rest/sample/books/b1";

/// One of Fedora 7's recorded answers: its `Content-Type` and body.
fn answer(name: &str) -> (String, Vec<u8>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/ocfl-fedora7-sample/answers")
        .join(name);
    let raw = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let (head, body) = raw
        .split_once("\n\n")
        .expect("headers, a blank line, a body");
    let content_type = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Type: "))
        .expect("a Content-Type")
        .to_string();
    (content_type, body.as_bytes().to_vec())
}

fn read(body: &[u8]) -> HashSet<Triple> {
    parse(
        body,
        RdfFormat::JsonLd,
        RESOURCE,
        &mapper(),
        &ParseLimits::default(),
    )
    .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)))
    .into_iter()
    .collect()
}

fn output(profile: JsonLdProfile) -> RdfOutput {
    RdfOutput {
        format: RdfFormat::JsonLd,
        profile,
        profile_named: true,
    }
}

/// A JSON value with every array sorted, so that documents compare without regard to order
/// (objects already compare without it).
fn unordered(v: Value) -> Value {
    match v {
        Value::Array(items) => {
            let mut items: Vec<Value> = items.into_iter().map(unordered).collect();
            items.sort_by_key(|i| i.to_string());
            Value::Array(items)
        }
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, unordered(v))).collect()),
        other => other,
    }
}

fn json(body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)))
}

#[test]
fn fedora_7_answers_are_reproduced_from_their_triples() {
    let (ct, expanded) = answer("jsonld-expanded.txt");
    assert_eq!(ct, "application/ld+json");
    let triples: Vec<Triple> = read(&expanded).into_iter().collect();
    assert_eq!(triples.len(), 19);
    for (name, profile, content_type) in [
        (
            "jsonld-expanded.txt",
            JsonLdProfile::Expanded,
            "application/ld+json",
        ),
        (
            "jsonld-compacted.txt",
            JsonLdProfile::Compacted,
            "application/ld+json;profile=\"http://www.w3.org/ns/json-ld#compacted\"",
        ),
        (
            "jsonld-flattened.txt",
            JsonLdProfile::Flattened,
            "application/ld+json;profile=\"http://www.w3.org/ns/json-ld#flattened\"",
        ),
    ] {
        let (fedora_ct, fedora) = answer(name);
        assert_eq!(fedora_ct, content_type, "{name}");
        // Fedora's answer holds the same triples in each form.
        assert_eq!(read(&fedora), read(&expanded), "{name}");
        let ours = serialize_as(&triples, output(profile), &mapper()).unwrap();
        assert_eq!(
            unordered(json(&ours)),
            unordered(json(&fedora)),
            "{name}: ours\n{}\nFedora's\n{}",
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&fedora)
        );
        assert_eq!(read(&ours), read(&expanded), "{name}");
    }
    // Plain JSON-LD is the expanded form.
    assert_eq!(
        serialize(&triples, RdfFormat::JsonLd, &mapper()).unwrap(),
        serialize_as(&triples, output(JsonLdProfile::Expanded), &mapper()).unwrap()
    );
}

#[test]
fn the_compacted_form_uses_the_prefixes_of_the_graph() {
    let (_, expanded) = answer("jsonld-expanded.txt");
    let triples: Vec<Triple> = read(&expanded).into_iter().collect();
    let ours = json(&serialize_as(&triples, output(JsonLdProfile::Compacted), &mapper()).unwrap());
    let context = ours["@context"].as_object().unwrap();
    let mut prefixes: Vec<&str> = context.keys().map(String::as_str).collect();
    prefixes.sort_unstable();
    assert_eq!(prefixes, ["dcterms", "fedora", "ldp", "rdf"]);
    assert_eq!(ours["dcterms:title"], "First book, revised");
    assert_eq!(ours["@id"], RESOURCE);
    assert_eq!(
        ours["fedora:created"]["@type"],
        "http://www.w3.org/2001/XMLSchema#dateTime"
    );
    assert!(ours["@type"]
        .as_array()
        .unwrap()
        .contains(&Value::from("ldp:BasicContainer")));
}

fn iri(s: &str) -> NamedNode {
    NamedNode::new(s).unwrap()
}

/// A graph with what the Fedora sample lacks: several subjects (a hash URI), blank nodes,
/// language tags, typed literals, a type and an object under a prefix, a literal typed with
/// a prefix's namespace, a property equal to a prefix's IRI, an IRI whose scheme is a prefix
/// name, and strings that look like JSON-LD keywords.
fn varied() -> Vec<Triple> {
    let s = RESOURCE;
    let hash = format!("{RESOURCE}#part");
    let b = BlankNode::new("x1").unwrap();
    let dct = |l: &str| iri(&format!("http://purl.org/dc/terms/{l}"));
    vec![
        Triple::new(iri(s), dct("title"), Literal::new_simple_literal("Title")),
        Triple::new(
            iri(s),
            dct("title"),
            Literal::new_language_tagged_literal("Titel", "de").unwrap(),
        ),
        Triple::new(
            iri(s),
            iri("http://example.org/count"),
            Literal::new_typed_literal("42", iri("http://www.w3.org/2001/XMLSchema#integer")),
        ),
        Triple::new(
            iri(s),
            iri("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
            iri("http://www.w3.org/ns/ldp#Container"),
        ),
        Triple::new(
            iri(s),
            iri("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
            iri("http://example.org/Thing"),
        ),
        Triple::new(iri(s), dct("hasPart"), iri(&hash)),
        Triple::new(iri(s), dct("relation"), b.clone()),
        Triple::new(
            iri(s),
            dct("subject"),
            iri("http://purl.org/dc/terms/Agent"),
        ),
        Triple::new(
            iri(s),
            iri("http://purl.org/dc/terms/"),
            Literal::new_simple_literal("@id"),
        ),
        Triple::new(
            iri(s),
            dct("date"),
            Literal::new_typed_literal("x", iri("http://purl.org/dc/terms/W3CDTF")),
        ),
        Triple::new(iri(s), dct("source"), iri("ldp:not-a-prefix")),
        Triple::new(
            iri(&hash),
            dct("title"),
            Literal::new_simple_literal("a part"),
        ),
        Triple::new(
            b.clone(),
            dct("title"),
            Literal::new_simple_literal("{\"@value\": 1}"),
        ),
        Triple::new(
            b,
            iri("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
            iri("http://example.org/Thing"),
        ),
    ]
}

/// Equality up to blank node labels (the graphs above have one blank node).
fn shape(triples: &HashSet<Triple>) -> HashSet<String> {
    triples
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if t.subject.is_blank_node() {
                t.subject = BlankNode::new_unchecked("b").into();
            }
            if t.object.is_blank_node() {
                t.object = BlankNode::new_unchecked("b").into();
            }
            t.to_string()
        })
        .collect()
}

#[test]
fn every_form_reads_back_to_the_same_triples() {
    let triples = varied();
    let want: HashSet<Triple> = triples.iter().cloned().collect();
    for profile in [
        JsonLdProfile::Expanded,
        JsonLdProfile::Compacted,
        JsonLdProfile::Flattened,
        JsonLdProfile::FlattenedCompacted,
    ] {
        let body = serialize_as(&triples, output(profile), &mapper()).unwrap();
        assert_eq!(
            shape(&read(&body)),
            shape(&want),
            "{profile:?}: {}",
            String::from_utf8_lossy(&body)
        );
        let doc = json(&body);
        match profile {
            JsonLdProfile::Expanded | JsonLdProfile::Flattened => {
                let nodes = doc.as_array().expect("a top-level array");
                assert_eq!(nodes.len(), 3, "{doc}");
                assert!(nodes.iter().all(|n| n.get("@context").is_none()));
                if profile == JsonLdProfile::Flattened {
                    let ids: Vec<&str> = nodes.iter().map(|n| n["@id"].as_str().unwrap()).collect();
                    let mut sorted = ids.clone();
                    sorted.sort_unstable();
                    assert_eq!(ids, sorted, "nodes sorted by @id");
                    assert_eq!(ids[0], "_:b0", "blank nodes relabelled");
                }
            }
            JsonLdProfile::Compacted | JsonLdProfile::FlattenedCompacted => {
                // Several subjects: a @graph beside the @context.
                assert_eq!(doc["@graph"].as_array().map(Vec::len), Some(3), "{doc}");
                let ctx = doc["@context"].as_object().unwrap();
                // `ldp:` is the scheme of an IRI of the graph, so it cannot be a prefix;
                // `xsd` names only a datatype, which Fedora 7 does not count either.
                assert!(
                    ctx.contains_key("dcterms") && ctx.contains_key("rdf"),
                    "{doc}"
                );
                assert!(
                    !ctx.contains_key("ldp") && !ctx.contains_key("xsd"),
                    "{doc}"
                );
                let text = String::from_utf8_lossy(&body);
                assert!(
                    text.contains("\"http://www.w3.org/ns/ldp#Container\""),
                    "{text}"
                );
                assert!(text.contains("{\"@id\":\"ldp:not-a-prefix\"}"), "{text}");
                assert!(text.contains("\"dcterms:title\""), "{text}");
                assert!(text.contains("{\"@id\":\"dcterms:Agent\"}"), "{text}");
                assert!(text.contains("\"dcterms\":\"@id\""), "{text}");
            }
        }
    }
}

#[test]
fn an_empty_graph_in_every_form() {
    for profile in [
        JsonLdProfile::Expanded,
        JsonLdProfile::Compacted,
        JsonLdProfile::Flattened,
        JsonLdProfile::FlattenedCompacted,
    ] {
        let body = serialize_as(&[], output(profile), &mapper()).unwrap();
        assert!(read(&body).is_empty(), "{profile:?}");
        let want = match profile {
            JsonLdProfile::Expanded | JsonLdProfile::Flattened => "[]",
            _ => "{}",
        };
        assert_eq!(String::from_utf8_lossy(&body), want, "{profile:?}");
    }
}

#[test]
fn negotiation_of_profiles() {
    use JsonLdProfile::*;
    const C: &str = "http://www.w3.org/ns/json-ld#compacted";
    const F: &str = "http://www.w3.org/ns/json-ld#flattened";
    const E: &str = "http://www.w3.org/ns/json-ld#expanded";
    let n = |accept: &str| {
        RdfOutput::negotiate(Some(accept)).map(|o| (o.format, o.profile, o.media_type()))
    };
    let jsonld = |p: JsonLdProfile, ct: &str| Some((RdfFormat::JsonLd, p, ct.to_string()));
    let named = |p: JsonLdProfile| {
        jsonld(
            p,
            &format!("application/ld+json;profile=\"{}\"", p.parameter()),
        )
    };
    // No profile: expanded, and a Content-Type without one (as Fedora 7).
    assert_eq!(
        n("application/ld+json"),
        jsonld(Expanded, "application/ld+json")
    );
    assert_eq!(
        n(&format!("application/ld+json;profile=\"{C}\"")),
        named(Compacted)
    );
    assert_eq!(
        n(&format!("application/ld+json; profile={F}")),
        named(Flattened)
    );
    assert_eq!(
        n(&format!("Application/LD+JSON;PROFILE=\"{E}\"")),
        named(Expanded)
    );
    // Several IRIs in one profile: flattened and compacted.
    assert_eq!(
        n(&format!("application/ld+json;profile=\"{F} {C}\"")),
        named(FlattenedCompacted)
    );
    // Several ranges: q-values, then the more specific, then the first.
    assert_eq!(
        n(&format!(
            "application/ld+json;profile=\"{C}\";q=0.5, application/ld+json;profile=\"{F}\";q=0.9"
        )),
        named(Flattened)
    );
    assert_eq!(
        n(&format!(
            "application/ld+json;profile=\"{C}\", application/ld+json;profile=\"{F}\""
        )),
        named(Compacted)
    );
    assert_eq!(
        n(&format!(
            "application/ld+json;profile=\"{C}\";q=0.1, application/ld+json"
        )),
        jsonld(Expanded, "application/ld+json")
    );
    assert_eq!(
        n(&format!(
            "application/ld+json, application/ld+json;profile=\"{C}\""
        )),
        named(Compacted)
    );
    assert_eq!(
        n(&format!(
            "text/turtle;q=0.9, application/ld+json;profile=\"{C}\""
        )),
        named(Compacted)
    );
    assert_eq!(
        n(&format!(
            "text/turtle, application/ld+json;profile=\"{C}\";q=0.8"
        ))
        .map(|o| o.0),
        Some(RdfFormat::Turtle)
    );
    // Between syntaxes a profile changes nothing: equal q-values go to the range listed first.
    assert_eq!(
        n(&format!("text/turtle, application/ld+json;profile=\"{C}\"")).map(|o| o.0),
        Some(RdfFormat::Turtle)
    );
    assert_eq!(
        n(&format!("application/ld+json;profile=\"{C}\", text/turtle")),
        named(Compacted)
    );
    assert_eq!(
        n(&format!(
            "application/ld+json;profile=\"{C}\";q=0, */*;q=0.1"
        ))
        .map(|o| o.0),
        Some(RdfFormat::Turtle)
    );
    // Unknown and malformed profiles: the default form, named as served.
    for accept in [
        "application/ld+json;profile=\"http://www.w3.org/ns/json-ld#nonsense\"".to_string(),
        "application/ld+json;profile=\"http://www.w3.org/ns/json-ld#frame\"".to_string(),
        "application/ld+json;profile=\"unterminated".to_string(),
        "application/ld+json;profile=".to_string(),
        "application/ld+json;profile=\"a,b;c\"".to_string(),
        format!("application/ld+json;profile=\"{C}x\""),
    ] {
        assert_eq!(n(&accept), named(Expanded), "{accept}");
    }
    // A quoted comma or semicolon does not split the header.
    assert_eq!(
        n("application/ld+json;profile=\"a,b\", text/turtle;q=0.1"),
        named(Expanded)
    );
    // Parameters without a value are ignored; a malformed q-value drops its range.
    assert_eq!(
        n("application/ld+json;;profile"),
        jsonld(Expanded, "application/ld+json")
    );
    assert_eq!(n(&format!("application/ld+json;profile=\"{C}\";q=x")), None);
    assert_eq!(n(&format!("application/ld+json;profile=\"{C}\";q=0")), None);
    // A profile on another type means nothing.
    assert_eq!(
        n(&format!("text/turtle;profile=\"{C}\"")).map(|o| o.2),
        Some("text/turtle".to_string())
    );
    // Browsers still get pages, API clients naming a profile RDF.
    assert!(RdfFormat::prefers_html(Some(
        "text/html, application/ld+json;profile=\"x\";q=0.5"
    )));
    assert!(!RdfFormat::prefers_html(Some(&format!(
        "text/html, application/ld+json;profile=\"{C}\""
    ))));
}
