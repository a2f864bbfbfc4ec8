//! Helpers shared by the end-to-end tests: vocabulary IRIs, request shorthands and an RDF
//! graph parsed from a response body, so that tests compare triples as sets.

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
pub const PREMIS3: &str = "http://www.loc.gov/premis/rdf/v3/";

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
                    || p.starts_with(PREMIS3)
                    || (p == RDF_TYPE
                        && matches!(&t.object, Term::NamedNode(o)
                            if o.as_str().starts_with(LDP) || o.as_str().starts_with(FEDORA)
                                || o.as_str().starts_with(PREMIS3))))
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

pub const ARCHIVAL_GROUP: &str = "http://fedora.info/definitions/v4/repository#ArchivalGroup";
pub const LINK_AG: (&str, &str) = (
    "link",
    "<http://fedora.info/definitions/v4/repository#ArchivalGroup>; rel=\"type\"",
);

/// Where layout 0004 (sha256, 3 tuples of 3) puts object `ocfl_id`, computed here
/// independently of arca's code.
pub fn object_dir(root: &std::path::Path, ocfl_id: &str) -> std::path::PathBuf {
    use sha2::Digest;
    let hex = hex::encode(sha2::Sha256::digest(ocfl_id.as_bytes()));
    root.join(&hex[0..3])
        .join(&hex[3..6])
        .join(&hex[6..9])
        .join(&hex)
}

/// An object's root inventory.
pub fn inventory(object_dir: &std::path::Path) -> serde_json::Value {
    let bytes = std::fs::read(object_dir.join("inventory.json"))
        .unwrap_or_else(|e| panic!("{}: no inventory: {e}", object_dir.display()));
    serde_json::from_slice(&bytes).expect("an inventory is JSON")
}

/// The logical paths of every version's state, v1 first.
pub fn version_states(object_dir: &std::path::Path) -> Vec<std::collections::BTreeSet<String>> {
    let inv = inventory(object_dir);
    let head: usize = inv["head"].as_str().unwrap()[1..].parse().unwrap();
    (1..=head)
        .map(|v| {
            inv["versions"][format!("v{v}")]["state"]
                .as_object()
                .unwrap()
                .values()
                .flat_map(|paths| paths.as_array().unwrap().iter())
                .map(|p| p.as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

/// The bytes of logical path `logical` in the head version of an object.
pub fn head_file(object_dir: &std::path::Path, logical: &str) -> Vec<u8> {
    let inv = inventory(object_dir);
    let head = inv["head"].as_str().unwrap();
    let digest = inv["versions"][head]["state"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, paths)| paths.as_array().unwrap().iter().any(|p| p == logical))
        .map(|(d, _)| d.clone())
        .unwrap_or_else(|| panic!("{logical} is not in the head state"));
    let content = inv["manifest"][&digest][0].as_str().unwrap();
    std::fs::read(object_dir.join(content)).unwrap()
}

/// The `.fcrepo` header at `logical` in an object's head version, parsed.
pub fn head_header(object_dir: &std::path::Path, logical: &str) -> serde_json::Value {
    serde_json::from_slice(&head_file(object_dir, logical)).expect("a header is JSON")
}

pub use arca_testkit::ocfl_validator;

/// Validates one object with ocfl-py: VALID, with no error and no warning except W013 for
/// a mutable HEAD's extension directory (ocfl-py does not know that 0005 is registered).
pub fn validate_object(object_dir: &std::path::Path) {
    validate_objects(std::slice::from_ref(&object_dir.to_path_buf()));
}

/// [`validate_object`] for many objects, with one run of ocfl-py per 200.
pub fn validate_objects(objects: &[std::path::PathBuf]) {
    for chunk in objects.chunks(200) {
        validate_chunk(chunk);
    }
}

fn validate_chunk(objects: &[std::path::PathBuf]) {
    let Some(validator) = ocfl_validator() else {
        return;
    };
    let out = std::process::Command::new(&validator)
        .args(objects)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", validator.display()));
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "ocfl-py finds invalid objects:\n{report}"
    );
    for dir in objects {
        assert!(
            report.contains(&format!("Object at {} is VALID", dir.display())),
            "ocfl-py does not find {} valid:\n{report}",
            dir.display()
        );
    }
    for line in report.lines().filter(|l| l.starts_with('[')) {
        assert!(
            line.starts_with("[W013]") && line.contains("extensions/0005-mutable-head"),
            "ocfl-py complains:\n{report}"
        );
    }
}

/// Every object directory (one holding `0=ocfl_object_1.1`) below `root`, sorted.
pub fn object_dirs(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        if dir.join("0=ocfl_object_1.1").is_file() {
            out.push(dir.to_path_buf());
            return;
        }
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() && e.file_name() != "extensions" {
                walk(&e.path(), out);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &mut out);
    out.sort();
    out
}

/// Files in `staging/` other than the (empty) `uploads/` directory.
pub fn staging_leftovers(data: &std::path::Path) -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), out);
            } else {
                out.push(e.path());
            }
        }
    }
    let mut out = Vec::new();
    walk(&data.join("staging"), &mut out);
    out
}

/// A copy of a stopped server's data directory without its catalog, so that a server
/// started on it rebuilds the catalog from storage. (A copy rather than deleting the
/// catalog in place: the in-process server of the test may still hold SQLite handles for a
/// moment after it stopped, and a late close would remove the new catalog's WAL.)
pub fn copy_without_catalog(data: &std::path::Path) -> tempfile::TempDir {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let name = e.file_name();
            if name.to_string_lossy().starts_with("catalog.sqlite") {
                continue;
            }
            let target = to.join(&name);
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), &target).unwrap();
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    copy(data, dir.path());
    dir
}

/// The memento URLs a link-format TimeMap lists, in order.
pub async fn timemap(s: &TestServer, path: &str) -> Vec<String> {
    let r = s
        .get(
            &format!("{path}/fcr:versions"),
            &[("accept", "application/link-format")],
        )
        .await;
    assert_eq!(r.status, 200, "TimeMap of {path}: {}", r.text());
    r.text()
        .lines()
        .filter(|l| l.contains("rel=\"memento\""))
        .filter_map(|l| {
            l.trim()
                .strip_prefix('<')
                .and_then(|l| l.split_once('>'))
                .map(|(t, _)| t.to_string())
        })
        .collect()
}
