//! Helpers shared by the end-to-end tests: vocabulary IRIs, request shorthands and an RDF
//! graph parsed from a response body, so that tests compare triples as sets.
#![allow(dead_code)]

use std::collections::HashSet;

use arca_rdf::{IdMapper, RdfFormat};
use arca_testkit::{Reply, TestServer};
use http::Method;
use oxrdf::{Literal, NamedNode, NamedOrBlankNode, Term, Triple};

pub const LDP: &str = "http://www.w3.org/ns/ldp#";
pub const LDP_CONTAINS: &str = "http://www.w3.org/ns/ldp#contains";
pub const LDP_RESOURCE: &str = "http://www.w3.org/ns/ldp#Resource";
pub const LDP_RDF_SOURCE: &str = "http://www.w3.org/ns/ldp#RDFSource";
pub const LDP_CONTAINER: &str = "http://www.w3.org/ns/ldp#Container";
pub const LDP_BASIC_CONTAINER: &str = "http://www.w3.org/ns/ldp#BasicContainer";
pub const LDP_NON_RDF_SOURCE: &str = "http://www.w3.org/ns/ldp#NonRDFSource";
pub const LDP_PREFER_CONTAINMENT: &str = "http://www.w3.org/ns/ldp#PreferContainment";
pub const LDP_PREFER_MINIMAL: &str = "http://www.w3.org/ns/ldp#PreferMinimalContainer";
pub const CONSTRAINED_BY: &str = "http://www.w3.org/ns/ldp#constrainedBy";
pub const FEDORA: &str = "http://fedora.info/definitions/v4/repository#";
pub const FCREPO_SERVER_MANAGED: &str = "http://fedora.info/definitions/fcrepo#ServerManaged";
pub const FCREPO_INBOUND: &str = "http://fedora.info/definitions/fcrepo#PreferInboundReferences";
pub const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
pub const DC_TITLE: &str = "http://purl.org/dc/terms/title";
pub const DC_RELATION: &str = "http://purl.org/dc/terms/relation";
pub const XSD_DATETIME: &str = "http://www.w3.org/2001/XMLSchema#dateTime";
pub const EBUCORE: &str = "http://www.ebu.ch/metadata/ontologies/ebucore/ebucore#";
pub const PREMIS: &str = "http://www.loc.gov/premis/rdf/v1#";

pub const TURTLE: (&str, &str) = ("content-type", "text/turtle");
pub const SPARQL: (&str, &str) = ("content-type", "application/sparql-update");
pub const LINK_BINARY: (&str, &str) = (
    "link",
    "<http://www.w3.org/ns/ldp#NonRDFSource>; rel=\"type\"",
);
pub const LINK_BASIC: (&str, &str) = (
    "link",
    "<http://www.w3.org/ns/ldp#BasicContainer>; rel=\"type\"",
);
pub const LENIENT: (&str, &str) = ("prefer", "handling=lenient; received=\"minimal\"");

/// `fedora:<name>`.
pub fn fedora(name: &str) -> String {
    format!("{FEDORA}{name}")
}

/// `ldp:<name>`.
pub fn ldp(name: &str) -> String {
    format!("{LDP}{name}")
}

pub async fn put(s: &TestServer, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    s.request(Method::PUT, &s.url(path), headers, body.to_string())
        .await
}

pub async fn put_bytes(s: &TestServer, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    s.request(Method::PUT, &s.url(path), headers, body.to_vec())
        .await
}

pub async fn post(s: &TestServer, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    s.request(Method::POST, &s.url(path), headers, body.to_string())
        .await
}

pub async fn post_bytes(
    s: &TestServer,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    s.request(Method::POST, &s.url(path), headers, body.to_vec())
        .await
}

pub async fn patch(s: &TestServer, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    s.request(Method::PATCH, &s.url(path), headers, body.to_string())
        .await
}

pub async fn sparql(s: &TestServer, path: &str, update: &str) -> Reply {
    patch(s, path, &[SPARQL], update).await
}

pub async fn head(s: &TestServer, path: &str, headers: &[(&str, &str)]) -> Reply {
    s.request(Method::HEAD, &s.url(path), headers, Vec::new())
        .await
}

pub async fn options(s: &TestServer, path: &str) -> Reply {
    s.request(Method::OPTIONS, &s.url(path), &[], Vec::new())
        .await
}

pub async fn delete(s: &TestServer, path: &str, headers: &[(&str, &str)]) -> Reply {
    s.request(Method::DELETE, &s.url(path), headers, Vec::new())
        .await
}

/// Sends a request to a raw path on the server (e.g. `/rest/a/%2E%2E/b`), not through
/// [`TestServer::url`], so that nothing normalizes it.
pub async fn raw(
    s: &TestServer,
    method: Method,
    raw_path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let origin = s.base.strip_suffix("/rest").expect("base ends with /rest");
    s.request(
        method,
        &format!("{origin}{raw_path}"),
        headers,
        body.to_string(),
    )
    .await
}

/// Creates an (empty) basic container with PUT and asserts it was created.
pub async fn container(s: &TestServer, path: &str) {
    let r = put(s, path, &[TURTLE], "").await;
    assert_eq!(r.status, 201, "creating container {path}: {}", r.text());
}

/// Creates a container with a Turtle body with PUT and asserts it was created.
pub async fn container_with(s: &TestServer, path: &str, turtle: &str) {
    let r = put(s, path, &[TURTLE], turtle).await;
    assert_eq!(r.status, 201, "creating container {path}: {}", r.text());
}

/// Creates a binary with PUT and asserts it was created.
pub async fn binary(s: &TestServer, path: &str, mime: &str, bytes: &[u8]) {
    let r = put_bytes(s, path, &[("content-type", mime), LINK_BINARY], bytes).await;
    assert_eq!(r.status, 201, "creating binary {path}: {}", r.text());
}

/// Asserts a refusal carries a constrainedBy link to a constraint document that the server
/// serves.
pub async fn assert_constrained_by(s: &TestServer, r: &Reply) {
    let link = r
        .headers
        .get_all("link")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find(|l| l.contains(CONSTRAINED_BY))
        .unwrap_or_else(|| {
            panic!(
                "no constrainedBy link in a {} answer; links: {}",
                r.status,
                r.header_all("link")
            )
        })
        .to_string();
    let target = link
        .trim()
        .strip_prefix('<')
        .and_then(|l| l.split_once('>'))
        .map(|(t, _)| t.to_string())
        .expect("a link target");
    let doc = s.request(Method::GET, &target, &[], Vec::new()).await;
    assert_eq!(doc.status, 200, "constraint document {target}");
    assert!(
        !doc.body.is_empty(),
        "constraint document {target} is empty"
    );
}

/// The link targets of every `Link` header value with relation `rel`.
pub fn links(r: &Reply, rel: &str) -> Vec<String> {
    r.headers
        .get_all("link")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|l| {
            let l = l.trim();
            let (target, params) = l.strip_prefix('<')?.split_once('>')?;
            let matches = params.split(';').any(|p| {
                let p = p.trim();
                p == format!("rel=\"{rel}\"") || p == format!("rel={rel}")
            });
            matches.then(|| target.to_string())
        })
        .collect()
}

/// The comma-separated items of a header (e.g. `Allow`), trimmed.
pub fn header_items(r: &Reply, name: &str) -> Vec<String> {
    r.header_all(name)
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// An RDF graph from a response body, with IRIs exactly as the server wrote them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph(pub HashSet<Triple>);

pub fn iri(i: &str) -> NamedNode {
    NamedNode::new(i).unwrap_or_else(|e| panic!("bad IRI {i}: {e}"))
}

pub fn lit(s: &str) -> Term {
    Literal::new_simple_literal(s).into()
}

pub fn triple(s: &str, p: &str, o: impl Into<Term>) -> Triple {
    Triple::new(iri(s), iri(p), o)
}

impl Graph {
    /// Parses a body in `format`, resolving relative IRIs against `base`.
    pub fn parse(body: &[u8], format: RdfFormat, base: &str) -> Self {
        // A mapper for an unrelated base leaves every IRI as it is.
        let mapper = IdMapper::new("urn:arca-test:none");
        let triples = arca_rdf::parse(
            body,
            format,
            base,
            &mapper,
            &arca_rdf::ParseLimits::default(),
        )
        .unwrap_or_else(|e| {
            panic!(
                "the server's {format:?} does not parse: {e}\n{}",
                String::from_utf8_lossy(body)
            )
        });
        Self(triples.into_iter().collect())
    }

    /// Parses a reply by its Content-Type.
    pub fn of(r: &Reply, base: &str) -> Self {
        let ct = r
            .header("content-type")
            .expect("an RDF reply has a Content-Type");
        let format = RdfFormat::from_media_type(ct)
            .unwrap_or_else(|| panic!("{ct} is not an RDF media type"));
        Self::parse(&r.body, format, base)
    }

    pub fn contains(&self, t: &Triple) -> bool {
        self.0.contains(t)
    }

    /// Whether `<s> <p> <o>` is in the graph.
    pub fn has(&self, s: &str, p: &str, o: &str) -> bool {
        self.0.contains(&triple(s, p, iri(o)))
    }

    /// Whether `<s> <p> "o"` is in the graph.
    pub fn has_lit(&self, s: &str, p: &str, o: &str) -> bool {
        self.0.contains(&triple(s, p, lit(o)))
    }

    /// Objects of `<s> <p> ?o`.
    pub fn objects(&self, s: &str, p: &str) -> Vec<Term> {
        self.0
            .iter()
            .filter(|t| {
                matches!(&t.subject, NamedOrBlankNode::NamedNode(n) if n.as_str() == s)
                    && t.predicate.as_str() == p
            })
            .map(|t| t.object.clone())
            .collect()
    }

    /// IRIs that are objects of `<s> <p> ?o`.
    pub fn object_iris(&self, s: &str, p: &str) -> Vec<String> {
        self.objects(s, p)
            .into_iter()
            .filter_map(|o| match o {
                Term::NamedNode(n) => Some(n.into_string()),
                _ => None,
            })
            .collect()
    }

    /// Triples with predicate `p`, whatever the subject.
    pub fn with_predicate(&self, p: &str) -> Vec<&Triple> {
        self.0
            .iter()
            .filter(|t| t.predicate.as_str() == p)
            .collect()
    }

    /// Triples whose predicate is in the namespace `ns`.
    pub fn in_namespace(&self, ns: &str) -> Vec<&Triple> {
        self.0
            .iter()
            .filter(|t| t.predicate.as_str().starts_with(ns))
            .collect()
    }

    /// The triples that are not server managed (as the client wrote them).
    pub fn user_triples(&self) -> HashSet<Triple> {
        self.0
            .iter()
            .filter(|t| {
                let p = t.predicate.as_str();
                !(p.starts_with(FEDORA)
                    || p == LDP_CONTAINS
                    || p.starts_with(EBUCORE)
                    || p.starts_with(PREMIS)
                    || (p == RDF_TYPE
                        && matches!(&t.object, Term::NamedNode(o)
                            if o.as_str().starts_with(LDP) || o.as_str().starts_with(FEDORA))))
            })
            .cloned()
            .collect()
    }
}

/// GETs a resource (with extra headers) and parses its body, asserting 200.
pub async fn graph(s: &TestServer, path: &str, headers: &[(&str, &str)]) -> Graph {
    let r = s.get(path, headers).await;
    assert_eq!(r.status, 200, "GET {path}: {}", r.text());
    Graph::of(&r, &s.url(path))
}

/// The children a container lists (`ldp:contains` objects), as URLs, sorted.
pub async fn children(s: &TestServer, path: &str) -> Vec<String> {
    let mut c = graph(s, path, &[])
        .await
        .object_iris(&s.url(path), LDP_CONTAINS);
    c.sort();
    c
}
