//! Server-managed statements: what a client may not set.

use arca_rdf::vocab::{FEDORA_CREATED, LDP_CONTAINS, RDF_TYPE};
use arca_rdf::{
    describe_statements, parse, split_server_managed, IdMapper, ParseLimits, RdfFormat,
};
use oxrdf::{Literal, NamedNode, Triple};

fn triple(p: &str, o: impl Into<oxrdf::Term>) -> Triple {
    Triple::new(
        NamedNode::new_unchecked("info:fedora/a"),
        NamedNode::new_unchecked(p),
        o,
    )
}

fn iri(s: &str) -> NamedNode {
    NamedNode::new_unchecked(s)
}

#[test]
fn splits_server_managed_statements() {
    let kept_expected = vec![
        triple(RDF_TYPE, iri("http://example.org/ns#Book")),
        triple(RDF_TYPE, iri("http://www.w3.org/ns/ldpx#NotLdp")),
        triple("http://www.w3.org/ns/ldp#member", iri("info:fedora/b")),
        triple(
            "http://www.w3.org/ns/ldp#hasMemberRelation",
            iri("http://purl.org/dc/terms/hasPart"),
        ),
        triple(
            "http://purl.org/dc/terms/title",
            Literal::new_simple_literal("t"),
        ),
        // The Fedora namespace as an object of a client predicate is fine.
        triple(
            "http://example.org/ns#see",
            iri("http://fedora.info/definitions/v4/repository#Resource"),
        ),
    ];
    let rejected_expected = vec![
        triple(
            FEDORA_CREATED,
            Literal::new_simple_literal("2020-01-01T00:00:00Z"),
        ),
        triple(
            "http://fedora.info/definitions/v4/repository#hasParent",
            iri("info:fedora"),
        ),
        triple(LDP_CONTAINS, iri("info:fedora/a/b")),
        triple(RDF_TYPE, iri("http://www.w3.org/ns/ldp#Container")),
        triple(RDF_TYPE, iri("http://www.w3.org/ns/ldp#NonRDFSource")),
        triple(
            RDF_TYPE,
            iri("http://fedora.info/definitions/v4/repository#Binary"),
        ),
        triple(RDF_TYPE, iri("http://mementoweb.org/ns#Memento")),
    ];
    // Interleave them to check that both lists keep the input order.
    let mut input = Vec::new();
    for i in 0..kept_expected.len().max(rejected_expected.len()) {
        input.extend(kept_expected.get(i).cloned());
        input.extend(rejected_expected.get(i).cloned());
    }
    let (kept, rejected) = split_server_managed(input);
    assert_eq!(kept, kept_expected);
    assert_eq!(rejected, rejected_expected);
}

#[test]
fn parsed_body_with_server_managed_triples() {
    let mapper = IdMapper::new("http://localhost:8080/rest");
    let body = br#"@prefix ldp: <http://www.w3.org/ns/ldp#> .
@prefix fedora: <http://fedora.info/definitions/v4/repository#> .
<> a ldp:Container , <http://example.org/ns#Thing> ;
   fedora:created "2020-01-01T00:00:00Z" ;
   ldp:contains <child> ; # relative to .../rest/a, so .../rest/child
   <http://purl.org/dc/terms/title> "kept" ."#;
    let triples = parse(
        body,
        RdfFormat::Turtle,
        "http://localhost:8080/rest/a",
        &mapper,
        &ParseLimits::default(),
    )
    .unwrap();
    let (kept, rejected) = split_server_managed(triples);
    assert_eq!(kept.len(), 2);
    assert_eq!(rejected.len(), 3);

    let message = describe_statements(&rejected, &mapper);
    assert!(message.contains(
        "<http://localhost:8080/rest/a> <http://www.w3.org/ns/ldp#contains> <http://localhost:8080/rest/child> .\n"
    ), "{message}");
    assert!(
        message.contains("<http://fedora.info/definitions/v4/repository#created>"),
        "{message}"
    );
    assert!(!message.contains("info:fedora"), "{message}");
    assert_eq!(message.lines().count(), 4, "{message}");
}
