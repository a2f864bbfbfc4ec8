//! PREMIS 3 beside PREMIS 1, as Fedora 7.0.0 answers (`shared/ocfl-fedora7-sample/answers`):
//! a binary's description says `a premis3:File` and `premis3:size`, and `fcr:fixity` adds a
//! PREMIS 3 fixity event. The same resource is built here as in the sample (its bytes read
//! from the sample's root) and both answers are parsed into triples and compared, the
//! recorded host mapped to the test server's and the random `#uuid` nodes named by their type.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use arca_rdf::RdfFormat;
use arca_testkit::TestServer;
use oxrdf::{NamedNode, NamedOrBlankNode, Term, Triple};

use crate::common::*;

/// The base URL in the recorded answers.
const RECORDED_BASE: &str = "http://127.0.0.1:19701/rest/";
const XSD: &str = "http://www.w3.org/2001/XMLSchema#";

/// The Fedora 7 sample's directory.
pub fn fedora7_sample() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/ocfl-fedora7-sample")
}

/// A recorded answer: its status line, header lines and body.
pub struct Recorded {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    /// The values of header `name`.
    pub fn header(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// Reads `answers/<name>.txt`.
pub fn recorded(name: &str) -> Recorded {
    let path = fedora7_sample().join(format!("answers/{name}.txt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let (head, body) = text
        .split_once("\n\n")
        .expect("headers, a blank line, a body");
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    Recorded {
        status: status.parse().unwrap(),
        headers,
        body: body.to_string(),
    }
}

/// The bytes of a content file in the sample root's object at `object` (as in INDEX.tsv).
fn sample_content(object: &str, file: &str) -> Vec<u8> {
    std::fs::read(fedora7_sample().join("root").join(object).join(file)).unwrap()
}

/// The IRIs below `<binary>/#` renamed `urn:node:<name>`, the name from the node's types
/// (`premis1`, `premis3`, `event`), so that two answers with random UUIDs compare equal.
fn named_nodes(g: &Graph, binary: &str) -> BTreeSet<String> {
    let prefix = format!("{binary}/#");
    let mut names: HashMap<String, &str> = HashMap::new();
    for t in &g.0 {
        let NamedOrBlankNode::NamedNode(s) = &t.subject else {
            continue;
        };
        if !s.as_str().starts_with(&prefix) || t.predicate.as_str() != RDF_TYPE {
            continue;
        }
        let name = match t.object.to_string().as_str() {
            "<http://www.loc.gov/premis/rdf/v1#Fixity>" => "premis1",
            "<http://www.loc.gov/premis/rdf/v3/Fixity>" => "premis3",
            "<http://www.loc.gov/premis/rdf/v3/Event>" => "event",
            _ => continue,
        };
        let old = names.insert(s.as_str().to_string(), name);
        assert!(old.is_none_or(|o| o == name), "{s} has two roles");
    }
    // A PREMIS 3 fixity node without a digest has no type; it is what the event generated.
    for t in &g.0 {
        if t.predicate.as_str() == "http://www.w3.org/ns/prov#generated" {
            if let Term::NamedNode(o) = &t.object {
                names.entry(o.as_str().to_string()).or_insert("premis3");
            }
        }
    }
    let rename = |iri: &str| match names.get(iri) {
        Some(n) => format!("<urn:node:{n}>"),
        None => {
            assert!(
                !iri.starts_with(&prefix),
                "{iri} is a node of no known role"
            );
            format!("<{iri}>")
        }
    };
    g.0.iter()
        .map(|t| {
            let s = match &t.subject {
                NamedOrBlankNode::NamedNode(n) => rename(n.as_str()),
                b => b.to_string(),
            };
            let o = match &t.object {
                Term::NamedNode(n) => rename(n.as_str()),
                o => o.to_string(),
            };
            format!("{s} <{}> {o}", t.predicate.as_str())
        })
        .collect()
}

/// The recorded answer's body as a graph, its host replaced by the test server's.
fn recorded_graph(s: &TestServer, name: &str) -> Graph {
    let r = recorded(name);
    assert_eq!(r.status, 200);
    let body = r.body.replace(RECORDED_BASE, &s.url(""));
    Graph::parse(body.as_bytes(), RdfFormat::Turtle, &s.url(""))
}

/// The sample's `sample/books/b1/page.txt`: its bytes and media type, and its description
/// patched as the sample's was.
async fn sample_page(s: &TestServer) {
    for c in ["sample", "sample/books", "sample/books/b1"] {
        assert_eq!(put(s, c, &[TURTLE], "").await.status, 201, "{c}");
    }
    let bytes = sample_content(
        "3e5/dc1/39e/3e5dc139e756018a6c2f9126d730762b68e00f291f3d99c356e618c656ac1868",
        "v1/content/page.txt",
    );
    let r = put_bytes(
        s,
        "sample/books/b1/page.txt",
        &[("content-type", "text/plain;charset=utf-8")],
        &bytes,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = sparql(
        s,
        "sample/books/b1/page.txt/fcr:metadata",
        "INSERT DATA { <> <http://purl.org/dc/terms/description> \"the first page\" . \
         <> a <http://example.org/Thesis> }",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
}

/// Triples whose values depend on the clock, and Fedora 7's `fedora:hasParent` on a
/// description (Fedora 7 states it, Fedora 6.1 and arca do not: outside PREMIS).
fn clock_or_parent(line: &str) -> bool {
    ["created>", "lastModified>", "hasParent>"]
        .iter()
        .any(|p| line.contains(&format!("<{FEDORA}{p}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_description_states_premis_3_as_fedora_7() {
    let s = TestServer::start().await;
    sample_page(&s).await;
    let bin = s.url("sample/books/b1/page.txt");
    let ours = graph(&s, "sample/books/b1/page.txt/fcr:metadata", &[]).await;
    let theirs = recorded_graph(&s, "binary-description");
    let keep = |g: &Graph| -> BTreeSet<String> {
        named_nodes(g, &bin)
            .into_iter()
            .filter(|l| !clock_or_parent(l))
            .collect()
    };
    let (o, t) = (keep(&ours), keep(&theirs));
    assert!(t.len() >= 15, "the recorded description parsed: {t:#?}");
    assert_eq!(
        o.difference(&t).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "arca states more than Fedora 7"
    );
    assert_eq!(
        t.difference(&o).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "arca lacks what Fedora 7 states"
    );
    // What this is about, spelled out.
    let size = Term::from(oxrdf::Literal::new_typed_literal(
        "15",
        NamedNode::new_unchecked(format!("{XSD}nonNegativeInteger")),
    ));
    assert!(ours.has(&bin, RDF_TYPE, &format!("{PREMIS3}File")));
    assert_eq!(ours.objects(&bin, &format!("{PREMIS3}size")), vec![size]);
    // premis3:File is a triple, not an rdf:type of the description's Link headers (Fedora 7).
    let r = s.get("sample/books/b1/page.txt/fcr:metadata", &[]).await;
    assert!(recorded("binary-description")
        .header("link")
        .iter()
        .all(|l| !l.contains("premis")));
    assert!(!r.has_link(&format!("{PREMIS3}File"), "type"));
    assert!(!s
        .get("sample/books/b1/page.txt", &[])
        .await
        .has_link(&format!("{PREMIS3}File"), "type"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixity_answers_a_premis_3_event_as_fedora_7() {
    let s = TestServer::start().await;
    sample_page(&s).await;
    let bin = s.url("sample/books/b1/page.txt");
    let ours = graph(&s, "sample/books/b1/page.txt/fcr:fixity", &[]).await;
    let theirs = recorded_graph(&s, "fixity");
    assert_eq!(named_nodes(&ours, &bin), named_nodes(&theirs, &bin));
    // Every format carries the same graph (JSON-LD and N-Triples too).
    for accept in ["application/n-triples", "application/ld+json"] {
        let r = s
            .get("sample/books/b1/page.txt/fcr:fixity", &[("accept", accept)])
            .await;
        assert_eq!(r.status, 200, "{accept}: {}", r.text());
        let g = Graph::of(&r, &bin);
        assert_eq!(
            named_nodes(&g, &bin),
            named_nodes(&theirs, &bin),
            "{accept}"
        );
    }
    s.stop().await;
}

/// The outcome of a failed check is `evOutcome:fai`, with the digest the bytes have now;
/// content gone leaves the PREMIS 3 fixity node without a digest (nothing was computed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_check_is_a_failed_premis_3_event() {
    let s = TestServer::start().await;
    assert_eq!(put(&s, "fx", &[TURTLE], "").await.status, 201);
    let r = put_bytes(&s, "fx/bin", &[("content-type", "text/plain")], b"intact\n").await;
    assert_eq!(r.status, 201);
    let bin = s.url("fx/bin");
    let file = walk_files(&s.ocfl_root())
        .into_iter()
        .find(|p| p.ends_with("v1/content/bin"))
        .expect("the content file");
    std::fs::write(&file, b"broken\n").unwrap();
    let g = graph(&s, "fx/bin/fcr:fixity", &[]).await;
    let lines = named_nodes(&g, &bin);
    let outcome = "<urn:node:event> <http://www.loc.gov/premis/rdf/v3/outcome> \
                   <http://id.loc.gov/vocabulary/preservation/eventOutcome/fai>";
    assert!(lines.contains(outcome), "{lines:#?}");
    let value = {
        use sha2::Digest;
        hex::encode(sha2::Sha512::digest(b"broken\n"))
    };
    let digest = format!(
        "<urn:node:premis3> <http://www.w3.org/1999/02/22-rdf-syntax-ns#value> \"{value}\""
    );
    assert!(lines.contains(&digest), "{lines:#?}");

    std::fs::remove_file(&file).unwrap();
    let g = graph(&s, "fx/bin/fcr:fixity", &[]).await;
    let lines = named_nodes(&g, &bin);
    assert!(lines.contains(outcome), "{lines:#?}");
    assert!(
        !lines.iter().any(|l| l.contains("/v3/fixity>")),
        "no digest, no premis3:fixity: {lines:#?}"
    );
    s.stop().await;
}

/// Statements a client sends back from a description it read: `a premis3:File` is dropped
/// (the server states it), `premis3:size` is refused like `premis:hasSize` (409), dropped
/// under lenient handling; neither is kept as a user triple.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn premis_3_statements_sent_back_are_not_kept() {
    let s = TestServer::start().await;
    assert_eq!(put(&s, "fx", &[TURTLE], "").await.status, 201);
    let r = put_bytes(&s, "fx/bin", &[("content-type", "text/plain")], b"abc").await;
    assert_eq!(r.status, 201);
    let bin = s.url("fx/bin");
    let file_type = format!("<{bin}> a <{PREMIS3}File> .");
    let size = format!("<{bin}> <{PREMIS3}size> \"99\"^^<{XSD}nonNegativeInteger> .");

    let r = put(&s, "fx/bin/fcr:metadata", &[TURTLE], &file_type).await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = put(&s, "fx/bin/fcr:metadata", &[TURTLE], &size).await;
    assert_eq!(r.status, 409, "{}", r.text());
    let r = put(
        &s,
        "fx/bin/fcr:metadata",
        &[TURTLE, LENIENT],
        &format!("{file_type}\n{size}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());

    let g = graph(&s, "fx/bin/fcr:metadata", &[]).await;
    let sizes = g.objects(&bin, &format!("{PREMIS3}size"));
    assert_eq!(sizes.len(), 1, "{sizes:?}");
    assert!(sizes[0].to_string().starts_with("\"3\""), "{sizes:?}");
    assert!(g.has(&bin, RDF_TYPE, &format!("{PREMIS3}File")));
    // Without the server's statements, nothing of PREMIS 3 is left: none was kept.
    let omit = (
        "prefer",
        "return=representation; omit=\"http://fedora.info/definitions/fcrepo#ServerManaged\"",
    );
    let g = graph(&s, "fx/bin/fcr:metadata", &[omit]).await;
    let premis3: Vec<&Triple> =
        g.0.iter()
            .filter(|t| t.to_string().contains(PREMIS3))
            .collect();
    assert_eq!(premis3, Vec::<&Triple>::new());
    s.stop().await;
}

fn walk_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// An object kept with SHA-256: Fedora 7 would give its PREMIS 3 fixity node no digest (it
/// fills it for SHA-512 only); arca gives the recorded algorithm's, named `hashFunc:sha256`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sha256_object_names_its_hash_function() {
    let s = TestServer::start_with(None, |c| {
        c.digest_algorithm = arca_config::DigestAlgorithm::Sha256
    })
    .await;
    let r = put_bytes(&s, "b", &[("content-type", "text/plain")], b"abc").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let bin = s.url("b");
    let lines = named_nodes(&graph(&s, "b/fcr:fixity", &[]).await, &bin);
    let sha256 = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(b"abc"))
    };
    for want in [
        "<urn:node:premis3> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> \
         <http://id.loc.gov/vocabulary/preservation/cryptographicHashFunctions/sha256>"
            .to_string(),
        format!(
            "<urn:node:premis3> <http://www.w3.org/1999/02/22-rdf-syntax-ns#value> \"{sha256}\""
        ),
        format!("<{bin}> <http://www.loc.gov/premis/rdf/v3/fixity> <urn:node:premis3>"),
    ] {
        assert!(lines.contains(&want), "{want} in {lines:#?}");
    }
    s.stop().await;
}
