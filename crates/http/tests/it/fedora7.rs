//! arca's answers beside Fedora 7.0.0's recorded ones (`../shared/ocfl-fedora7-sample/answers`):
//! the repository root and an Archival Group, built here as they were there, header by
//! header and triple by triple. The differences arca keeps are named below, each with its
//! reason (the README's "Compared with the real Fedora" lists them too).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::common::*;
use arca_rdf::RdfFormat;
use arca_testkit::{Reply, TestServer};
use oxrdf::{Literal, Term};

/// The REST root of the recorded answers.
const FEDORA_BASE: &str = "http://127.0.0.1:19701/rest";

/// A recorded answer: its headers (lowercase names, every value) and its body.
struct Recorded {
    headers: BTreeMap<String, Vec<String>>,
    body: String,
}

fn recorded(name: &str) -> Recorded {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/ocfl-fedora7-sample/answers")
        .join(name);
    let raw = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let (head, body) = raw
        .split_once("\n\n")
        .expect("headers, a blank line, a body");
    let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in head.lines().skip(1) {
        let (name, value) = line.split_once(':').expect("a header line");
        headers
            .entry(name.trim().to_ascii_lowercase())
            .or_default()
            .push(value.trim().to_string());
    }
    Recorded {
        headers,
        body: body.to_string(),
    }
}

/// The items of a comma-separated header, over all its lines, trimmed.
fn items(values: &[String]) -> BTreeSet<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect()
}

fn ours(r: &Reply, name: &str) -> Vec<String> {
    r.headers
        .get_all(name)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect()
}

/// `Link` values as (rel, target) pairs, Fedora's base replaced by `base`.
fn links_of(values: &[String], from: &str, base: &str) -> BTreeSet<(String, String)> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .filter_map(|l| {
            let (target, params) = l.trim().split_once('>')?;
            let rel = params
                .split(';')
                .find_map(|p| p.trim().strip_prefix("rel="))?
                .trim_matches('"');
            Some((
                rel.to_string(),
                target.trim_start_matches('<').replace(from, base),
            ))
        })
        .collect()
}

/// Triples with Fedora's base replaced by `base` and the dates masked.
fn triples(body: &str, format: RdfFormat, from: &str, base: &str) -> BTreeSet<String> {
    let g = Graph::parse(body.replace(from, base).as_bytes(), format, base);
    g.0.into_iter()
        .map(|mut t| {
            if let Term::Literal(l) = &t.object {
                if l.datatype().as_str() == XSD_DATETIME {
                    t.object = Literal::new_simple_literal("<date>").into();
                }
            }
            t.to_string()
        })
        .collect()
}

/// Compares arca's answer `r` with the recorded `fedora`, field by field; `allow_extra`
/// and `fedora_extra` name the `Allow` methods each side lists alone, `arca_triples_extra`
/// the predicates arca alone states.
fn compare(
    s: &TestServer,
    what: &str,
    r: &Reply,
    fedora: &Recorded,
    fedora_allow_extra: &[&str],
    arca_triples_extra: &[&str],
) {
    let f = |name: &str| fedora.headers.get(name).cloned().unwrap_or_default();
    assert_eq!(r.status, 200, "{what}");
    // Links: types, memento relations, the ACL, the root's transaction endpoint.
    assert_eq!(
        links_of(&ours(r, "link"), &s.base, &s.base),
        links_of(&f("link"), FEDORA_BASE, &s.base),
        "{what}: Link"
    );
    for name in ["content-type", "accept-patch", "preference-applied"] {
        assert_eq!(ours(r, name), f(name), "{what}: {name}");
    }
    // Allow: the same methods, but those Fedora lists alone.
    let fedora_allow: BTreeSet<String> = items(&f("allow"))
        .into_iter()
        .filter(|m| !fedora_allow_extra.contains(&m.as_str()))
        .collect();
    assert_eq!(items(&ours(r, "allow")), fedora_allow, "{what}: Allow");
    // Accept-Post: Fedora's syntaxes but N3, which arca does not read; arca adds `*/*`
    // (a POST may create a binary of any type).
    let mut accept_post = items(&f("accept-post"));
    accept_post.retain(|t| t != "text/n3" && t != "text/rdf+n3");
    accept_post.insert("*/*".into());
    assert_eq!(
        items(&ours(r, "accept-post")),
        accept_post,
        "{what}: Accept-Post"
    );
    // Vary: Fedora's, but Accept-Language (no answer of arca depends on it).
    let mut vary: BTreeSet<String> = items(&f("vary"))
        .into_iter()
        .map(|v| v.to_ascii_lowercase())
        .collect();
    vary.remove("accept-language");
    let our_vary: BTreeSet<String> = items(&ours(r, "vary"))
        .into_iter()
        .map(|v| v.to_ascii_lowercase())
        .collect();
    assert_eq!(our_vary, vary, "{what}: Vary");
    // Weak validators on both sides.
    assert!(f("etag")[0].starts_with("W/"), "{what}");
    assert!(ours(r, "etag")[0].starts_with("W/"), "{what}: ETag");
    assert!(
        !ours(r, "x-state-token").is_empty(),
        "{what}: X-State-Token"
    );
    // The triples, dates masked.
    let want = triples(&fedora.body, RdfFormat::Turtle, FEDORA_BASE, &s.base);
    let got: BTreeSet<String> = triples(&r.text(), RdfFormat::Turtle, &s.base, &s.base)
        .into_iter()
        .filter(|t| !arca_triples_extra.iter().any(|p| t.contains(p)))
        .collect();
    assert_eq!(got, want, "{what}: triples");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_root_and_an_archival_group_answer_as_fedora_7() {
    let s = TestServer::start().await;
    container(&s, "sample").await;
    let r = put(
        &s,
        "sample/ag",
        &[
            TURTLE,
            (
                "link",
                "<http://fedora.info/definitions/v4/repository#ArchivalGroup>;rel=\"type\"",
            ),
        ],
        "<> <http://purl.org/dc/terms/title> \"an archival group\" .",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    container(&s, "sample/ag/part").await;

    // The root: arca never deletes it (Fedora lists DELETE and deletes it), and names the
    // user that created it (Fedora 7 writes none into the root's header; issue 38.8).
    let root = s.get("", &[]).await;
    compare(
        &s,
        "root",
        &root,
        &recorded("root.txt"),
        &["DELETE"],
        &["#createdBy>", "#lastModifiedBy>"],
    );
    // The Archival Group: the same in every field compared.
    let ag = s.get("sample/ag", &[]).await;
    compare(
        &s,
        "sample/ag",
        &ag,
        &recorded("ag-container.txt"),
        &[],
        &[],
    );
    s.stop().await;
}
