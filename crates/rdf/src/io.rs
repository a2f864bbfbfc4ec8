use oxrdf::{NamedOrBlankNode, Triple};
use oxrdfio::{RdfParser, RdfSerializer};
use oxttl::NTriplesParser;

use crate::limits::Budget;
use crate::vocab::{PREFIXES, RDF_TYPE};
use crate::{
    jsonld, scan, xml_guard, IdMapper, ParseLimits, RdfError, RdfFormat, RdfOutput, Result,
};

/// Parses a client body into internal-id triples.
///
/// Relative IRIs (including `<>`) resolve against `resource_url`, the external URL of the resource
/// being created or replaced. Every IRI under the mapper's base, in subject, predicate or object
/// position, becomes an internal id; literal datatypes are left alone. Blank nodes are kept.
/// Named graphs (JSON-LD) are refused. JSON-LD remote contexts are not fetched, so a body that
/// needs one fails. The body must be complete: a document cut short is an error in every
/// syntax. Nothing in the body can make the parser exceed `limits` (see [`ParseLimits`]).
///
/// Turtle is read as Fedora 6 (Jena) reads it: a body the grammar refuses only for a missing
/// `.` after an `@prefix`/`@base` directive or after its last statement is read with those
/// dots added; every other error stays the parser's, reported as for the body sent.
///
/// # Errors
/// [`RdfError::Syntax`] with the parser's message (line and column where the parser gives them);
/// [`RdfError::Limit`] naming the bound a body exceeds; [`RdfError::BaseIri`] if `resource_url`
/// is not an absolute IRI.
pub fn parse(
    body: &[u8],
    format: RdfFormat,
    resource_url: &str,
    mapper: &IdMapper,
    limits: &ParseLimits,
) -> Result<Vec<Triple>> {
    match format {
        RdfFormat::Turtle | RdfFormat::NTriples => {
            scan::turtle_like(body, limits, false)?;
        }
        RdfFormat::JsonLd => scan::json(body, limits)?,
        RdfFormat::RdfXml => xml_guard::check(body, limits)?,
    }
    match read(body, format, resource_url, mapper, limits) {
        Err(RdfError::Syntax(message)) if format == RdfFormat::Turtle => {
            match scan::turtle_missing_dots(body) {
                Some(dotted) => read(&dotted, format, resource_url, mapper, limits)
                    .map_err(|_| RdfError::Syntax(message)),
                None => Err(RdfError::Syntax(message)),
            }
        }
        read => read,
    }
}

/// Parses a body already scanned by [`parse`], as it is.
fn read(
    body: &[u8],
    format: RdfFormat,
    resource_url: &str,
    mapper: &IdMapper,
    limits: &ParseLimits,
) -> Result<Vec<Triple>> {
    let mut budget = Budget::new(limits);
    let parser = RdfParser::from_format(format.oxrdfio())
        .with_base_iri(resource_url)
        .map_err(|source| RdfError::BaseIri {
            iri: resource_url.to_string(),
            source,
        })?
        .without_named_graphs()
        .for_slice(body);
    let mut triples = Vec::new();
    for quad in parser {
        let triple: Triple = quad.map_err(|e| RdfError::Syntax(e.to_string()))?.into();
        budget.take(&triple)?;
        triples.push(mapper.triple_to_internal(triple));
    }
    budget.check_time()?;
    Ok(triples)
}

/// The storage form of a graph: one N-Triples line per triple, exactly as `oxttl` writes it,
/// sorted and deduplicated. An empty graph gives an empty byte string.
pub fn to_ntriples(triples: &[Triple]) -> Vec<u8> {
    let mut lines: Vec<String> = triples.iter().map(|t| format!("{t} .\n")).collect();
    lines.sort_unstable();
    lines.dedup();
    lines.concat().into_bytes()
}

/// Reads the storage form written by [`to_ntriples`] (any N-Triples, in fact) back into
/// triples. No id mapping happens: storage holds internal ids.
///
/// # Errors
/// [`RdfError::Syntax`] if `bytes` is not valid N-Triples.
pub fn parse_ntriples(bytes: &[u8]) -> Result<Vec<Triple>> {
    NTriplesParser::new()
        .for_slice(bytes)
        .map(|t| t.map_err(|e| RdfError::Syntax(e.to_string())))
        .collect()
}

/// Writes internal-id triples as a response body: internal ids become external URLs, then the
/// graph is serialized in `format`, grouped by subject (with `rdf:type` first), deduplicated.
/// Turtle and RDF/XML use the prefixes of [`vocab::PREFIXES`](crate::vocab::PREFIXES). JSON-LD
/// is the expanded form (a top-level array of node objects, `@id`, `@type` and full-IRI keys,
/// no `@context`); [`serialize_as`] writes the other JSON-LD forms.
///
/// # Errors
/// [`RdfError::Serialize`] when the graph cannot be expressed in `format` (RDF/XML needs
/// predicates that end with an XML name).
pub fn serialize(triples: &[Triple], format: RdfFormat, mapper: &IdMapper) -> Result<Vec<u8>> {
    serialize_as(triples, RdfOutput::from(format), mapper)
}

/// [`serialize`] into a negotiated output: for JSON-LD, in the form of `output.profile`
/// (expanded, compacted with a `@context` of the prefixes the graph uses, flattened, or
/// flattened and compacted).
///
/// # Errors
/// As [`serialize`].
pub fn serialize_as(triples: &[Triple], output: RdfOutput, mapper: &IdMapper) -> Result<Vec<u8>> {
    let format = output.format;
    let mut external: Vec<Triple> = triples
        .iter()
        .map(|t| mapper.triple_to_external(t.clone()))
        .collect();
    // Named subjects (a resource before its `#fragments`), then blank nodes; rdf:type first.
    external.sort_by_cached_key(|t| {
        let subject = match &t.subject {
            NamedOrBlankNode::NamedNode(n) => (false, n.as_str().to_string()),
            NamedOrBlankNode::BlankNode(b) => (true, b.as_str().to_string()),
        };
        let p = t.predicate.as_str();
        (subject, p != RDF_TYPE, p.to_string(), t.object.to_string())
    });
    external.dedup();

    if format == RdfFormat::JsonLd {
        return Ok(jsonld::write(&external, output.profile));
    }
    if format == RdfFormat::RdfXml {
        check_rdf_xml_names(&external)?;
    }
    let mut serializer = RdfSerializer::from_format(format.oxrdfio());
    for (prefix, iri) in PREFIXES {
        serializer = serializer
            .with_prefix(*prefix, *iri)
            .expect("the vocabulary prefixes are valid IRIs");
    }
    let mut writer = serializer.for_writer(Vec::new());
    for triple in &external {
        writer
            .serialize_triple(triple)
            .map_err(RdfError::Serialize)?;
    }
    writer.finish().map_err(RdfError::Serialize)
}

/// Names of the RDF vocabulary that the RDF/XML grammar reserves: the writer would put them
/// in as element names (a property, or a typed node for an `rdf:type`), producing a document
/// no RDF/XML parser reads. Found by fuzzing.
const RDF_XML_RESERVED: [&str; 11] = [
    "RDF",
    "ID",
    "about",
    "bagID",
    "parseType",
    "resource",
    "nodeID",
    "li",
    "aboutEach",
    "aboutEachPrefix",
    "Description",
];

/// Refuses graphs that cannot be written as RDF/XML because they use a reserved name.
fn check_rdf_xml_names(triples: &[Triple]) -> Result<()> {
    let reserved = |iri: &str| {
        iri.strip_prefix(crate::vocab::RDF_NS)
            .is_some_and(|local| RDF_XML_RESERVED.contains(&local))
    };
    for t in triples {
        let typed = t.predicate.as_str() == RDF_TYPE
            && matches!(&t.object, oxrdf::Term::NamedNode(n) if reserved(n.as_str()));
        if reserved(t.predicate.as_str()) || typed {
            return Err(RdfError::Serialize(std::io::Error::other(format!(
                "the graph uses <{}>, a name RDF/XML reserves; ask for Turtle, N-Triples or JSON-LD",
                if typed { t.object.to_string() } else { t.predicate.to_string() }
                    .trim_matches(['<', '>'])
            ))));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_form_is_sorted_and_deduplicated() {
        let nt = b"<info:fedora/b> <http://purl.org/dc/terms/title> \"B\" .\n\
                   <info:fedora/a> <http://purl.org/dc/terms/title> \"A\"@en .\n\
                   <info:fedora/b> <http://purl.org/dc/terms/title> \"B\" .\n";
        let triples = parse_ntriples(nt).unwrap();
        assert_eq!(triples.len(), 3);
        assert_eq!(
            String::from_utf8(to_ntriples(&triples)).unwrap(),
            "<info:fedora/a> <http://purl.org/dc/terms/title> \"A\"@en .\n\
             <info:fedora/b> <http://purl.org/dc/terms/title> \"B\" .\n"
        );
        assert!(to_ntriples(&[]).is_empty());
        assert!(matches!(parse_ntriples(b"<a> <b> ."), Err(RdfError::Syntax(m)) if !m.is_empty()));
    }

    #[test]
    fn rdf_xml_refuses_reserved_names_it_cannot_write() {
        let mapper = IdMapper::new("http://localhost:8080/rest");
        let limits = crate::ParseLimits::default();
        for body in [
            "<http://x/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#aboutEachPrefix> \"v\" .",
            "<http://x/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://www.w3.org/1999/02/22-rdf-syntax-ns#bagID> .",
        ] {
            let triples = parse_ntriples(body.as_bytes()).unwrap();
            let e = serialize(&triples, RdfFormat::RdfXml, &mapper).unwrap_err();
            assert!(e.to_string().contains("RDF/XML reserves"), "{e}");
            // Other formats write it, and it reads back.
            let ttl = serialize(&triples, RdfFormat::Turtle, &mapper).unwrap();
            assert_eq!(parse(&ttl, RdfFormat::Turtle, "http://x/a", &mapper, &limits).unwrap(), triples);
        }
        // Ordinary rdf: properties are fine.
        let ok = parse_ntriples(
            b"<http://x/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#value> \"v\" .",
        )
        .unwrap();
        let xml = serialize(&ok, RdfFormat::RdfXml, &mapper).unwrap();
        assert_eq!(
            parse(&xml, RdfFormat::RdfXml, "http://x/a", &mapper, &limits).unwrap(),
            ok
        );
    }
}
