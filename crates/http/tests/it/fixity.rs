//! `GET <binary>/fcr:fixity` (Fedora API 3.5 and Fedora 6's fixity service): the digests of
//! the stored bytes, recomputed, with Fedora 6's PREMIS triples; failures are reported, never
//! a 500.

use crate::common::*;
use arca_testkit::TestServer;
use http::Method;
use oxrdf::{Literal, NamedNode, Term};
use sha2::{Digest, Sha512};

const CONTENT: &[u8] = b"hello fixity\n";
const PREMIS_NS: &str = "http://www.loc.gov/premis/rdf/v1#";

fn premis(name: &str) -> String {
    format!("{PREMIS_NS}{name}")
}

/// The stored content file of binary `fx/bin` (its own OCFL object, version 1).
fn content_file(s: &TestServer) -> std::path::PathBuf {
    let found: Vec<_> = walk(&s.ocfl_root())
        .into_iter()
        .filter(|p| p.ends_with("v1/content/bin"))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A server with container `fx` and binary `fx/bin` holding [`CONTENT`].
async fn server_with_binary() -> TestServer {
    let s = TestServer::start().await;
    assert_eq!(put(&s, "fx", &[TURTLE], "").await.status, 201);
    let r = put_bytes(&s, "fx/bin", &[("content-type", "text/plain")], CONTENT).await;
    assert_eq!(r.status, 201);
    s
}

/// The fixity node's outcome, digests and size.
fn outcome(s: &TestServer, g: &Graph) -> (String, Vec<String>, Vec<Term>) {
    let bin = s.url("fx/bin");
    let nodes = g.object_iris(&bin, &premis("hasFixity"));
    assert_eq!(nodes.len(), 1, "{:?}", g.0);
    let node = &nodes[0];
    assert!(node.starts_with(&format!("{bin}/#")), "{node}");
    assert!(g.has(node, RDF_TYPE, &premis("Fixity")));
    assert!(g.has(node, RDF_TYPE, &premis("EventOutcomeDetail")));
    let outcome = g.objects(node, &premis("hasEventOutcome"));
    assert_eq!(outcome.len(), 1);
    let Term::Literal(outcome) = &outcome[0] else {
        panic!("{outcome:?}")
    };
    (
        outcome.value().to_string(),
        g.object_iris(node, &premis("hasMessageDigest")),
        g.objects(node, &premis("hasSize")),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixity_recomputes_the_stored_bytes_and_reports_failures() {
    let s = server_with_binary().await;
    let sha = |b: &[u8]| format!("urn:sha-512:{}", hex::encode(Sha512::digest(b)));
    let size = Term::from(Literal::new_typed_literal(
        "13",
        NamedNode::new_unchecked("http://www.w3.org/2001/XMLSchema#long"),
    ));

    for accept in [
        "text/turtle",
        "application/n-triples",
        "application/ld+json",
    ] {
        let r = s.get("fx/bin/fcr:fixity", &[("accept", accept)]).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(r.header("content-type").unwrap().starts_with(accept));
        assert!(r.has_link("http://www.w3.org/ns/ldp#RDFSource", "type"));
    }
    let g = graph(&s, "fx/bin/fcr:fixity", &[]).await;
    assert_eq!(
        outcome(&s, &g),
        ("SUCCESS".into(), vec![sha(CONTENT)], vec![size.clone()])
    );

    // The description points at the service, as in Fedora 6.
    let d = graph(&s, "fx/bin/fcr:metadata", &[]).await;
    assert!(d.has(
        &s.url("fx/bin"),
        &fedora("hasFixityService"),
        &s.url("fx/bin/fcr:fixity")
    ));

    // Bytes changed on disk behind the repository's back: BAD_CHECKSUM with what they hash to.
    let file = content_file(&s);
    std::fs::write(&file, b"hello FIXITY\n").unwrap();
    let g = graph(&s, "fx/bin/fcr:fixity", &[]).await;
    assert_eq!(
        outcome(&s, &g),
        (
            "BAD_CHECKSUM".into(),
            vec![sha(b"hello FIXITY\n")],
            vec![size.clone()]
        )
    );
    std::fs::write(&file, b"").unwrap();
    let g = graph(&s, "fx/bin/fcr:fixity", &[]).await;
    assert_eq!(outcome(&s, &g).0, "BAD_CHECKSUM");
    // Missing content is a failed check, not a 500 (Fedora 6.1 answers 500 here).
    std::fs::remove_file(&file).unwrap();
    let r = s.get("fx/bin/fcr:fixity", &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let g = graph(&s, "fx/bin/fcr:fixity", &[]).await;
    assert_eq!(outcome(&s, &g), ("BAD_CHECKSUM".into(), vec![], vec![size]));
    std::fs::write(&file, CONTENT).unwrap();
    assert_eq!(
        outcome(&s, &graph(&s, "fx/bin/fcr:fixity", &[]).await).0,
        "SUCCESS"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixity_answers_like_fedora_6_for_other_targets_and_methods() {
    let s = server_with_binary().await;
    let r = s.get("fx/fcr:fixity", &[]).await;
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(r.text().contains("not a binary"));
    assert_eq!(s.get("nope/fcr:fixity", &[]).await.status, 404);
    assert_eq!(
        s.get("fx/bin/fcr:metadata/fcr:fixity", &[]).await.status,
        400
    );
    let url = s.url("fx/bin/fcr:fixity");
    for m in [
        Method::PUT,
        Method::POST,
        Method::DELETE,
        Method::PATCH,
        Method::HEAD,
    ] {
        let r = s.request(m.clone(), &url, &[], "").await;
        assert_eq!(r.status, 405, "{m}");
        assert_eq!(r.header("allow"), Some("OPTIONS, GET"), "{m}");
    }
    let r = s.request(Method::OPTIONS, &url, &[], "").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("allow"), Some("OPTIONS, GET"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memento_has_a_fixity_of_its_own() {
    // As Fedora 7 (fcrepo #2299): `<binary>/fcr:versions/<datetime>/fcr:fixity` checks the
    // bytes the binary had then.
    let s = server_with_binary().await;
    let r = post(&s, "fx/bin/fcr:versions", &[], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let memento = r.header("location").unwrap().to_string();
    let segment = memento.rsplit('/').next().unwrap().to_string();
    arca_testkit::next_second().await;
    let later = b"later content, longer\n";
    let r = put_bytes(&s, "fx/bin", &[("content-type", "text/plain")], later).await;
    assert_eq!(r.status, 204, "{}", r.text());

    let sha = |b: &[u8]| format!("urn:sha-512:{}", hex::encode(Sha512::digest(b)));
    let size = |n: usize| {
        Term::from(Literal::new_typed_literal(
            n.to_string(),
            NamedNode::new_unchecked("http://www.w3.org/2001/XMLSchema#long"),
        ))
    };
    let path = format!("fx/bin/fcr:versions/{segment}/fcr:fixity");
    let g = graph(&s, &path, &[]).await;
    assert_eq!(
        outcome(&s, &g),
        (
            "SUCCESS".into(),
            vec![sha(CONTENT)],
            vec![size(CONTENT.len())]
        )
    );
    let g = graph(&s, "fx/bin/fcr:fixity", &[]).await;
    assert_eq!(
        outcome(&s, &g),
        ("SUCCESS".into(), vec![sha(later)], vec![size(later.len())])
    );
    // A memento that does not exist, and a write to a memento's fixity.
    let r = s
        .get("fx/bin/fcr:versions/19990101000000/fcr:fixity", &[])
        .await;
    assert_eq!(r.status, 404, "{}", r.text());
    let r = s
        .request(
            Method::PUT,
            &s.url(&path),
            &[("content-type", "text/turtle")],
            "",
        )
        .await;
    assert_eq!(r.status, 405, "{}", r.text());
    s.stop().await;
}
