//! SPARQL Update (PATCH) against one resource's triples.

use std::collections::BTreeSet;

use arca_rdf::{apply_sparql_update, parse_ntriples, IdMapper, ParseLimits, RdfError};
use oxrdf::Triple;

const RESOURCE: &str = "http://localhost:8080/rest/a";

fn current() -> Vec<Triple> {
    parse_ntriples(
        br#"<info:fedora/a> <http://purl.org/dc/terms/title> "Old title" .
<info:fedora/a> <http://purl.org/dc/terms/hasPart> <info:fedora/a/b> .
<info:fedora/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://www.w3.org/ns/ldp#Container> .
<info:fedora/a#frag> <http://purl.org/dc/terms/title> "Fragment" .
"#,
    )
    .unwrap()
}

fn update(sparql: &str) -> Result<BTreeSet<String>, RdfError> {
    let mapper = IdMapper::new("http://localhost:8080/rest");
    let triples = apply_sparql_update(
        &current(),
        sparql,
        RESOURCE,
        &mapper,
        &ParseLimits::default(),
    )?;
    Ok(triples.iter().map(ToString::to_string).collect())
}

fn has(result: &BTreeSet<String>, triple: &str) -> bool {
    result.contains(triple)
}

const OLD_TITLE: &str = r#"<info:fedora/a> <http://purl.org/dc/terms/title> "Old title""#;

#[test]
fn insert_data_with_relative_iris() {
    let r = update(
        r#"PREFIX dc: <http://purl.org/dc/elements/1.1/>
           INSERT DATA { <> dc:creator "Me" ; dc:relation <a/c> , <http://localhost:8080/rest/x> . }"#,
    )
    .unwrap();
    assert_eq!(r.len(), 7);
    assert!(has(
        &r,
        r#"<info:fedora/a> <http://purl.org/dc/elements/1.1/creator> "Me""#
    ));
    assert!(has(
        &r,
        "<info:fedora/a> <http://purl.org/dc/elements/1.1/relation> <info:fedora/a/c>"
    ));
    assert!(has(
        &r,
        "<info:fedora/a> <http://purl.org/dc/elements/1.1/relation> <info:fedora/x>"
    ));
    assert!(has(&r, OLD_TITLE));
}

#[test]
fn delete_data_matches_external_urls() {
    let r = update(
        r#"DELETE DATA { <http://localhost:8080/rest/a> <http://purl.org/dc/terms/hasPart> <http://localhost:8080/rest/a/b> .
                        <#frag> <http://purl.org/dc/terms/title> "Fragment" . }"#,
    )
    .unwrap();
    assert_eq!(r.len(), 2);
    assert!(has(&r, OLD_TITLE));
    assert!(!r
        .iter()
        .any(|t| t.contains("hasPart") || t.contains("#frag")));
}

#[test]
fn delete_insert_where_with_variable() {
    let r = update(
        r#"PREFIX dcterms: <http://purl.org/dc/terms/>
           DELETE { <> dcterms:title ?t }
           INSERT { <> dcterms:title "New title"@en ; dcterms:alternative ?t }
           WHERE { <> dcterms:title ?t }"#,
    )
    .unwrap();
    assert!(!has(&r, OLD_TITLE));
    assert!(has(
        &r,
        r#"<info:fedora/a> <http://purl.org/dc/terms/title> "New title"@en"#
    ));
    assert!(has(
        &r,
        r#"<info:fedora/a> <http://purl.org/dc/terms/alternative> "Old title""#
    ));
    // The fragment's title did not match `<>`.
    assert!(has(
        &r,
        r#"<info:fedora/a#frag> <http://purl.org/dc/terms/title> "Fragment""#
    ));
}

#[test]
fn delete_where() {
    let r = update("DELETE WHERE { ?s <http://purl.org/dc/terms/title> ?o }").unwrap();
    assert_eq!(r.len(), 2);
    assert!(!r.iter().any(|t| t.contains("dc/terms/title")));
}

#[test]
fn two_operations_separated_by_semicolon() {
    let r = update(
        r#"PREFIX dcterms: <http://purl.org/dc/terms/>
           DELETE DATA { <> dcterms:title "Old title" } ;
           INSERT DATA { <> dcterms:title "Second" }"#,
    )
    .unwrap();
    assert!(!has(&r, OLD_TITLE));
    assert!(has(
        &r,
        r#"<info:fedora/a> <http://purl.org/dc/terms/title> "Second""#
    ));
    assert_eq!(r.len(), 4);
}

#[test]
fn blank_nodes_survive() {
    let r = update(
        r#"INSERT DATA { <> <http://example.org/author> [ <http://example.org/name> "Ann" ] }"#,
    )
    .unwrap();
    assert_eq!(r.len(), 6);
    assert!(r
        .iter()
        .any(|t| t.starts_with("<info:fedora/a> <http://example.org/author> _:")));
    assert!(r
        .iter()
        .any(|t| t.starts_with("_:") && t.ends_with(r#"<http://example.org/name> "Ann""#)));
}

#[test]
fn syntax_error() {
    match update("INSERT DATA { <> <http://example.org/p> ") {
        Err(RdfError::Syntax(message)) => assert!(!message.is_empty()),
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[test]
fn refuses_operations_beyond_the_default_graph() {
    for sparql in [
        "CLEAR ALL",
        "CLEAR DEFAULT",
        "DROP GRAPH <http://example.org/g>",
        "CREATE GRAPH <http://example.org/g>",
        "LOAD <http://example.org/data.ttl>",
        "COPY DEFAULT TO <http://example.org/g>",
        "MOVE <http://example.org/g> TO DEFAULT",
        "ADD <http://example.org/g> TO DEFAULT",
        "INSERT DATA { GRAPH <http://example.org/g> { <> <http://example.org/p> 1 } }",
        "DELETE DATA { GRAPH <http://example.org/g> { <> <http://example.org/p> 1 } }",
        "WITH <http://example.org/g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
        "DELETE { ?s ?p ?o } USING <http://example.org/g> WHERE { ?s ?p ?o }",
        "DELETE { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }",
        "INSERT { <> <http://example.org/p> ?o } WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }",
        "INSERT { <> <http://example.org/p> ?o } WHERE { ?s ?p ?o FILTER EXISTS { SERVICE <http://example.org/sparql> { ?s ?p ?o } } }",
    ] {
        match update(sparql) {
            Err(RdfError::Unsupported(message)) => assert!(!message.is_empty()),
            other => panic!("{sparql}: expected Unsupported, got {other:?}"),
        }
    }
}
