//! Parsing client bodies and serializing responses, in every format.

use std::collections::HashSet;

use arca_rdf::{
    parse, parse_ntriples, serialize, to_ntriples, IdMapper, ParseLimits, RdfError, RdfFormat,
};
use oxrdf::{BlankNode, Literal, NamedNode, Term, Triple};

const BASE: &str = "http://localhost:8080/rest";
const RESOURCE: &str = "http://localhost:8080/rest/coll/obj";

fn mapper() -> IdMapper {
    IdMapper::new(BASE)
}

fn set(triples: &[Triple]) -> HashSet<String> {
    triples.iter().map(ToString::to_string).collect()
}

/// Equality up to blank node labels: every blank node is replaced by the same placeholder.
/// Good enough for graphs with at most one blank node per (predicate, object) shape.
fn shape(triples: &[Triple]) -> HashSet<String> {
    triples
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if t.subject.is_blank_node() {
                t.subject = BlankNode::new_unchecked("b").into();
            }
            if let Term::BlankNode(_) = t.object {
                t.object = BlankNode::new_unchecked("b").into();
            }
            t.to_string()
        })
        .collect()
}

const TURTLE: &str = r#"
@prefix dcterms: <http://purl.org/dc/terms/> .
@prefix ex: <http://example.org/ns#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .

<> a ex:Book ;
   dcterms:title "Le titre"@fr , "The title"@en ;
   dcterms:created "2020-01-02T03:04:05Z"^^xsd:dateTime ;
   ex:pages 42 ;
   dcterms:hasPart <child> , <../sibling> , <#chapter1> , </rest/other> ;
   ex:related <http://example.org/elsewhere> ;
   ex:author [ ex:name "Ann \"Quoted\" Author\nsecond line" ] .
<#chapter1> dcterms:title "One" .
"#;

fn sample() -> Vec<Triple> {
    parse(
        TURTLE.as_bytes(),
        RdfFormat::Turtle,
        RESOURCE,
        &mapper(),
        &ParseLimits::default(),
    )
    .unwrap()
}

#[test]
fn turtle_resolves_relative_iris_to_internal_ids() {
    let triples = sample();
    assert_eq!(triples.len(), 13);
    let strings = set(&triples);
    for expected in [
        "<info:fedora/coll/obj> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/ns#Book>",
        "<info:fedora/coll/obj> <http://purl.org/dc/terms/title> \"Le titre\"@fr",
        "<info:fedora/coll/obj> <http://purl.org/dc/terms/title> \"The title\"@en",
        "<info:fedora/coll/obj> <http://purl.org/dc/terms/created> \"2020-01-02T03:04:05Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime>",
        "<info:fedora/coll/obj> <http://example.org/ns#pages> \"42\"^^<http://www.w3.org/2001/XMLSchema#integer>",
        "<info:fedora/coll/obj> <http://purl.org/dc/terms/hasPart> <info:fedora/coll/child>",
        "<info:fedora/coll/obj> <http://purl.org/dc/terms/hasPart> <info:fedora/sibling>",
        "<info:fedora/coll/obj> <http://purl.org/dc/terms/hasPart> <info:fedora/coll/obj#chapter1>",
        "<info:fedora/coll/obj> <http://purl.org/dc/terms/hasPart> <info:fedora/other>",
        "<info:fedora/coll/obj> <http://example.org/ns#related> <http://example.org/elsewhere>",
        "<info:fedora/coll/obj#chapter1> <http://purl.org/dc/terms/title> \"One\"",
    ] {
        assert!(strings.contains(expected), "missing {expected}\nin {strings:#?}");
    }
    let author = triples
        .iter()
        .find(|t| t.predicate.as_str() == "http://example.org/ns#author")
        .unwrap();
    let Term::BlankNode(b) = &author.object else {
        panic!("author should be a blank node: {author}");
    };
    let name = triples
        .iter()
        .find(|t| t.subject == b.clone().into())
        .unwrap();
    assert_eq!(
        name.object,
        Literal::new_simple_literal("Ann \"Quoted\" Author\nsecond line").into()
    );
}

#[test]
fn root_and_trailing_slash_map_to_internal_ids() {
    let body = b"<> <http://example.org/p> <http://localhost:8080/rest/> , <http://localhost:8080/rest/a/> .";
    let triples = parse(
        body,
        RdfFormat::Turtle,
        BASE,
        &mapper(),
        &ParseLimits::default(),
    )
    .unwrap();
    let strings = set(&triples);
    assert!(strings.contains("<info:fedora> <http://example.org/p> <info:fedora>"));
    assert!(strings.contains("<info:fedora> <http://example.org/p> <info:fedora/a>"));
}

fn round_trip(format: RdfFormat) {
    let triples = sample();
    let body = serialize(&triples, format, &mapper()).unwrap();
    let text = String::from_utf8(body.clone()).unwrap();
    assert!(
        !text.contains("info:fedora"),
        "internal ids leaked:\n{text}"
    );
    assert!(text.contains(RESOURCE), "external URLs expected:\n{text}");
    // Parsed against another resource URL: all IRIs in the output must be absolute.
    let again = parse(
        &body,
        format,
        "http://localhost:8080/rest/x",
        &mapper(),
        &ParseLimits::default(),
    )
    .unwrap();
    assert_eq!(shape(&again), shape(&triples), "{format:?} output:\n{text}");
    assert_eq!(again.len(), triples.len());
}

#[test]
fn turtle_round_trip() {
    round_trip(RdfFormat::Turtle);
}

#[test]
fn json_ld_round_trip() {
    round_trip(RdfFormat::JsonLd);
}

#[test]
fn ntriples_round_trip() {
    round_trip(RdfFormat::NTriples);
}

#[test]
fn rdf_xml_round_trip() {
    round_trip(RdfFormat::RdfXml);
}

#[test]
fn rdf_xml_output_parses_with_oxrdfio() {
    let body = serialize(&sample(), RdfFormat::RdfXml, &mapper()).unwrap();
    let quads = oxrdfio::RdfParser::from_format(oxrdfio::RdfFormat::RdfXml)
        .for_slice(&body)
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    assert_eq!(quads.len(), 13);
    assert!(quads
        .iter()
        .any(|q| q.subject == NamedNode::new_unchecked(RESOURCE).into()));
}

#[test]
fn turtle_output_is_pretty_and_uses_prefixes() {
    let triples = vec![
        Triple::new(
            NamedNode::new_unchecked("info:fedora/a"),
            NamedNode::new_unchecked("http://fedora.info/definitions/v4/repository#created"),
            Literal::new_typed_literal(
                "2024-01-01T00:00:00Z",
                NamedNode::new_unchecked("http://www.w3.org/2001/XMLSchema#dateTime"),
            ),
        ),
        Triple::new(
            NamedNode::new_unchecked("info:fedora/a"),
            NamedNode::new_unchecked("http://www.w3.org/ns/ldp#contains"),
            NamedNode::new_unchecked("info:fedora/a/b"),
        ),
        Triple::new(
            NamedNode::new_unchecked("info:fedora/a"),
            NamedNode::new_unchecked("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
            NamedNode::new_unchecked("http://www.w3.org/ns/ldp#BasicContainer"),
        ),
    ];
    let text =
        String::from_utf8(serialize(&triples, RdfFormat::Turtle, &mapper()).unwrap()).unwrap();
    for prefix in [
        "@prefix ldp: <http://www.w3.org/ns/ldp#> .",
        "@prefix fedora: <http://fedora.info/definitions/v4/repository#> .",
    ] {
        assert!(text.contains(prefix), "{text}");
    }
    // One subject block, rdf:type first.
    assert_eq!(
        text.matches("<http://localhost:8080/rest/a>").count(),
        1,
        "{text}"
    );
    assert!(
        text.contains("<http://localhost:8080/rest/a> a ldp:BasicContainer ;"),
        "{text}"
    );
    assert!(
        text.contains("ldp:contains <http://localhost:8080/rest/a/b>"),
        "{text}"
    );
    assert!(
        text.contains("fedora:created \"2024-01-01T00:00:00Z\"^^xsd:dateTime"),
        "{text}"
    );
}

#[test]
fn empty_graph_serializes() {
    for format in [
        RdfFormat::Turtle,
        RdfFormat::NTriples,
        RdfFormat::JsonLd,
        RdfFormat::RdfXml,
    ] {
        let body = serialize(&[], format, &mapper()).unwrap();
        assert!(
            parse(&body, format, RESOURCE, &mapper(), &ParseLimits::default())
                .unwrap()
                .is_empty()
        );
    }
}

#[test]
fn json_ld_input_with_context_and_relative_ids() {
    let body = br#"{
        "@context": {"dc": "http://purl.org/dc/terms/", "ex": "http://example.org/ns#"},
        "@id": "",
        "@type": "ex:Book",
        "dc:title": [{"@value": "Titre", "@language": "fr"}],
        "dc:hasPart": {"@id": "child"},
        "ex:note": {"ex:text": "anonymous"}
    }"#;
    let triples = parse(
        body,
        RdfFormat::JsonLd,
        RESOURCE,
        &mapper(),
        &ParseLimits::default(),
    )
    .unwrap();
    let strings = set(&triples);
    assert!(strings.contains("<info:fedora/coll/obj> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/ns#Book>"));
    assert!(
        strings.contains("<info:fedora/coll/obj> <http://purl.org/dc/terms/title> \"Titre\"@fr")
    );
    assert!(strings.contains(
        "<info:fedora/coll/obj> <http://purl.org/dc/terms/hasPart> <info:fedora/coll/child>"
    ));
    assert_eq!(triples.len(), 5);
}

#[test]
fn malformed_turtle_is_a_syntax_error_with_position() {
    let err = parse(
        b"<> <http://example.org/p> \"unterminated .",
        RdfFormat::Turtle,
        RESOURCE,
        &mapper(),
        &ParseLimits::default(),
    )
    .unwrap_err();
    let RdfError::Syntax(message) = err else {
        panic!("expected a syntax error, got {err:?}");
    };
    assert!(message.contains("line 1"), "{message}");
}

#[test]
fn malformed_json_ld_is_a_syntax_error() {
    for body in [
        &br#"{"@id": "", "http://example.org/p": "#[..],
        br#"{"@id": 5}"#,
    ] {
        match parse(
            body,
            RdfFormat::JsonLd,
            RESOURCE,
            &mapper(),
            &ParseLimits::default(),
        ) {
            Err(RdfError::Syntax(message)) => assert!(!message.is_empty()),
            other => panic!("expected a syntax error for {body:?}, got {other:?}"),
        }
    }
}

#[test]
fn malformed_ntriples_and_rdf_xml_are_syntax_errors() {
    let cases: [(&[u8], RdfFormat); 2] = [
        (b"<a> <b> <c>", RdfFormat::NTriples),
        (
            b"<rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'><oops",
            RdfFormat::RdfXml,
        ),
    ];
    for (body, format) in cases {
        assert!(
            matches!(parse(body, format, RESOURCE, &mapper(), &ParseLimits::default()), Err(RdfError::Syntax(m)) if !m.is_empty()),
            "{format:?}"
        );
    }
}

#[test]
fn storage_form_matches_oxttl_and_round_trips() {
    let triples = sample();
    let stored = to_ntriples(&triples);
    // Exactly oxttl's N-Triples lines, sorted.
    let mut expected: Vec<String> = triples
        .iter()
        .map(|t| {
            let mut s = oxttl::NTriplesSerializer::new().for_writer(Vec::new());
            s.serialize_triple(t).unwrap();
            String::from_utf8(s.finish()).unwrap()
        })
        .collect();
    expected.sort();
    assert_eq!(
        String::from_utf8(stored.clone()).unwrap(),
        expected.concat()
    );
    assert_eq!(set(&parse_ntriples(&stored).unwrap()), set(&triples));
    // Storing twice is stable and duplicates disappear.
    let doubled: Vec<Triple> = triples.iter().chain(&triples).cloned().collect();
    assert_eq!(to_ntriples(&doubled), stored);
}

#[test]
fn json_ld_remote_contexts_are_not_fetched() {
    let body = br#"{"@context": "http://schema.org/", "@id": "", "name": "x"}"#;
    assert!(matches!(
        parse(body, RdfFormat::JsonLd, RESOURCE, &mapper(), &ParseLimits::default()),
        Err(RdfError::Syntax(m)) if !m.is_empty()
    ));
}

#[test]
fn relative_base_is_refused() {
    assert!(matches!(
        parse(
            b"<> <p> <o> .",
            RdfFormat::Turtle,
            "/rest/a",
            &mapper(),
            &ParseLimits::default()
        ),
        Err(RdfError::BaseIri { .. })
    ));
}

fn turtle(body: &str) -> Result<Vec<Triple>, RdfError> {
    parse(
        body.as_bytes(),
        RdfFormat::Turtle,
        RESOURCE,
        &mapper(),
        &ParseLimits::default(),
    )
}

#[test]
fn turtle_directives_and_last_statement_without_a_dot_are_read_as_fedora_reads_them() {
    // Issue 38.6: Jena (Fedora 6) accepts these; each reads as the body with its dots.
    let dotted =
        turtle("@prefix dc: <http://purl.org/dc/terms/> .\n<> dc:title \"a\" ; dc:subject \"b\" .")
            .unwrap();
    for body in [
        "@prefix dc: <http://purl.org/dc/terms/>\n<> dc:title \"a\" ; dc:subject \"b\" .",
        "@prefix dc: <http://purl.org/dc/terms/> .\n<> dc:title \"a\" ; dc:subject \"b\"",
        "@prefix dc: <http://purl.org/dc/terms/>\n<> dc:title \"a\" ; dc:subject \"b\"",
        "@prefix dc: <http://purl.org/dc/terms/> <> dc:title \"a\" ; dc:subject \"b\" .",
        "@prefix dc: <http://purl.org/dc/terms/>#c\n<> dc:title \"a\" ; dc:subject \"b\" ;",
        "@prefix dc: <http://purl.org/dc/terms/>\n<> dc:title \"a\" ; dc:subject \"b\" # done \"\"\"",
        "PREFIX dc: <http://purl.org/dc/terms/>\n<> dc:title \"a\" ; dc:subject \"b\"",
        "@base <http://localhost:8080/rest/coll/>\n@prefix dc: <http://purl.org/dc/terms/>\n<obj> dc:title \"a\" ; dc:subject \"b\"",
    ] {
        let read = turtle(body).unwrap_or_else(|e| panic!("{body:?}: {e}"));
        assert_eq!(set(&read), set(&dotted), "{body:?}");
    }
    // The dot goes after the last token, not into it.
    let read = turtle("<> <http://example.org/p> 4.2").unwrap();
    assert_eq!(
        read[0].object.to_string(),
        "\"4.2\"^^<http://www.w3.org/2001/XMLSchema#decimal>"
    );
    let read = turtle("<> <http://example.org/p> \"\"\"two\nlines\"\"\"@en").unwrap();
    assert_eq!(read[0].object.to_string(), "\"two\\nlines\"@en");
    let read = turtle("@prefix ex: <http://example.org/>\n<> ex:p ex:a.b").unwrap();
    assert_eq!(read[0].object.to_string(), "<http://example.org/a.b>");
}

#[test]
fn turtle_stays_refused_where_a_lenient_reading_would_guess() {
    // Unterminated IRIs and literals, missing terms, dots missing between statements, and
    // every other malformation keep the parser's own error, position included.
    for body in [
        "<> <http://example.org/p> \"unterminated",
        "<> <http://example.org/p> \"unterminated\n",
        "<> <http://example.org/p> \"\"\"unterminated long",
        "<> <http://example.org/p> 'single",
        "<> <http://example.org/p> <http://example.org/unterminated",
        "@prefix dc: <http://purl.org/dc/terms/",
        "@prefix dc <http://purl.org/dc/terms/>\n<> dc:title \"a\" .",
        "@prefix dc: \n<> dc:title \"a\" .",
        "<> <http://example.org/p>",
        "<> <http://example.org/p> .",
        "<> <http://example.org/p> \"a\" ,",
        "<> <http://example.org/p> \"a\"^^",
        "<> <http://example.org/p> [",
        "<> <http://example.org/p> ( \"a\"",
        "<> <http://example.org/p> \"a\" <> <http://example.org/q> \"b\" .",
        "<> <http://example.org/p> \"a\" . .",
        "<> <http://example.org/p> \"a\" ..",
        "<>",
        "PREFIX dc: <http://purl.org/dc/terms/> .\n<> dc:title \"a\" .",
        "@prefix dc: <http://purl.org/dc/terms/>\n@prefix dc: <",
        "<> <http://example.org/p> undeclared:x",
        "<> <http://example.org/p> \"a\"@",
        "{ <> <http://example.org/p> \"a\" }",
    ] {
        match turtle(body) {
            Err(RdfError::Syntax(message)) => {
                assert!(message.contains("line"), "{body:?}: {message}");
            }
            other => panic!("{body:?} was accepted or failed otherwise: {other:?}"),
        }
    }
    // The message is the one for the body as sent.
    let Err(RdfError::Syntax(message)) = turtle("<> <http://example.org/p> \"a\" ,") else {
        panic!("refused");
    };
    let Err(RdfError::Syntax(dotted)) = turtle("<> <http://example.org/p> \"a\" ,\n.") else {
        panic!("refused");
    };
    assert_ne!(message, dotted);
}

#[test]
fn ntriples_without_a_final_dot_stay_refused() {
    assert!(matches!(
        parse(
            b"<http://a/s> <http://a/p> <http://a/o>",
            RdfFormat::NTriples,
            RESOURCE,
            &mapper(),
            &ParseLimits::default()
        ),
        Err(RdfError::Syntax(_))
    ));
}
