//! A storage root written by Fedora 7.0.0 (`shared/ocfl-fedora7-sample`): arca opens a copy
//! of it and serves every resource its INDEX.tsv lists with the content, types, user
//! triples and versions Fedora stored, its ACL, tombstone and Archival Group; and answers
//! the repository root, the Archival Group and a binary's description as Fedora 7 did
//! (its recorded answers: triples, dates included, and `Link: rel="type"`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use arca_rdf::RdfFormat;
use arca_testkit::TestServer;
use http::Method;
use serde_json::Value;

use crate::common::*;
use crate::premis3::{fedora7_sample, recorded};

const RECORDED_BASE: &str = "http://127.0.0.1:19701/rest/";

/// Copies a directory tree, making the copy writable (the shared fixtures are read-only).
fn copy_tree(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755)).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
}

/// One line of INDEX.tsv: Fedora id, head version, object directory.
struct Indexed {
    id: String,
    head: String,
    dir: PathBuf,
}

fn index() -> Vec<Indexed> {
    let text = std::fs::read_to_string(fedora7_sample().join("INDEX.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut f = l.split('\t');
            Indexed {
                id: f.next().unwrap().to_string(),
                head: f.next().unwrap().to_string(),
                dir: fedora7_sample().join("root").join(f.next().unwrap()),
            }
        })
        .collect()
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The bytes of logical path `logical` in the object's head version.
fn head_file(dir: &Path, logical: &str) -> Option<Vec<u8>> {
    let inv = json(&dir.join("inventory.json"));
    let head = inv["head"].as_str().unwrap();
    let (digest, _) = inv["versions"][head]["state"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, paths)| paths.as_array().unwrap().iter().any(|p| p == logical))?;
    let file = inv["manifest"][digest][0].as_str().unwrap();
    Some(std::fs::read(dir.join(file)).unwrap())
}

/// The URL path of an internal id (`info:fedora/a b` → `a%20b`).
fn path_of(id: &str) -> String {
    id.strip_prefix("info:fedora")
        .unwrap()
        .trim_start_matches('/')
        .replace(' ', "%20")
}

/// N-Triples stored by Fedora, its internal ids made the server's URLs.
fn stored_graph(s: &TestServer, nt: &[u8]) -> Graph {
    let text = String::from_utf8(nt.to_vec()).unwrap();
    let text = text
        .replace("<info:fedora/", &format!("<{}", s.url("")))
        .replace("<info:fedora>", &format!("<{}>", s.url("")));
    Graph::parse(text.as_bytes(), RdfFormat::NTriples, &s.url(""))
}

/// Starts arca on a copy of the Fedora 7 root.
async fn serve_copy() -> (TestServer, tempfile::TempDir) {
    let data = tempfile::tempdir().unwrap();
    copy_tree(
        &fedora7_sample().join("root"),
        &data.path().join("ocfl-root"),
    );
    let s = TestServer::start_at(data.path()).await;
    (s, data)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_every_resource_of_a_fedora_7_root() {
    let (s, _data) = serve_copy().await;
    let mut checked = 0;
    for r in index() {
        let path = path_of(&r.id);
        let inv = json(&r.dir.join("inventory.json"));
        assert_eq!(inv["head"], r.head.as_str(), "INDEX.tsv names the head");
        let headers: Value =
            serde_json::from_slice(&head_file(&r.dir, ".fcrepo/fcr-root.json").unwrap()).unwrap();
        assert_eq!(
            headers["id"],
            r.id.as_str(),
            "INDEX.tsv and the header agree"
        );
        let reply = s.get(&path, &[]).await;
        if headers["deleted"] == true {
            assert_eq!(reply.status, 410, "{path} is a tombstone: {}", reply.text());
            checked += 1;
            continue;
        }
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        let model = headers["interactionModel"].as_str().unwrap();
        assert!(reply.has_link(model, "type"), "{path} is a {model}");
        if model.ends_with("#NonRDFSource") {
            let content = headers["contentPath"].as_str().unwrap();
            let bytes = head_file(&r.dir, content).expect("the binary's content file");
            assert_eq!(
                &reply.body[..],
                &bytes[..],
                "{path}: the bytes Fedora stored"
            );
            assert_eq!(
                reply.header("content-type"),
                headers["mimeType"].as_str(),
                "{path}"
            );
            // The description holds the triples Fedora stored, about the binary.
            let d = graph(&s, &format!("{path}/fcr:metadata"), &[]).await;
            if let Some(nt) = head_file(&r.dir, &format!("{content}~fcr-desc.nt")) {
                for t in &stored_graph(&s, &nt).0 {
                    assert!(d.0.contains(t), "{path}/fcr:metadata lacks {t}");
                }
            }
            let sha = headers["digests"][0].as_str().unwrap();
            assert!(d.has(&s.url(&path), &format!("{PREMIS}hasMessageDigest"), sha));
        } else {
            let g = graph(&s, &path, &[]).await;
            let nt = head_file(&r.dir, "fcr-container.nt").expect("the container's triples");
            let stored = stored_graph(&s, &nt);
            // (The root alone has no triples of its own.)
            assert!(!stored.0.is_empty() || path.is_empty(), "{path}");
            for t in &stored.0 {
                assert!(g.0.contains(t), "{path} lacks {t}");
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 14, "every resource of INDEX.tsv");

    // scan.bin's file name (Content-Disposition at creation).
    let r = s.get("sample/books/b1/scan.bin", &[]).await;
    assert!(
        r.header("content-disposition")
            .is_some_and(|d| d.contains("filename=\"scan-0001.tif\"")),
        "{:?}",
        r.header("content-disposition")
    );
    // The direct container's members land on sample/books.
    let books = graph(&s, "sample/books", &[]).await;
    for m in ["m1", "m2"] {
        assert!(books.has(
            &s.url("sample/books"),
            "http://pcdm.org/models#hasMember",
            &s.url(&format!("sample/members/{m}"))
        ));
    }
    assert!(graph(&s, "sample/books/b1", &[]).await.has_lit(
        &s.url("sample/books/b1"),
        "http://purl.org/dc/terms/title",
        "First book, revised"
    ));
    // The Archival Group and its parts (a space in a name).
    let r = s.get("sample/ag", &[]).await;
    assert!(r.has_link(ARCHIVAL_GROUP, "type"));
    assert_eq!(
        children(&s, "sample/ag").await,
        vec![s.url("sample/ag/part")]
    );
    let ag = index()
        .into_iter()
        .find(|r| r.id == "info:fedora/sample/ag")
        .unwrap();
    let r = s.get("sample/ag/part/data%20file.bin", &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        &r.body[..],
        &head_file(&ag.dir, "part/data file.bin").unwrap()[..]
    );
    // The root lists sample; sample lists its live children, not the tombstone.
    assert_eq!(children(&s, "").await, vec![s.url("sample")]);
    let listed = children(&s, "sample").await;
    let want: Vec<String> = ["ag", "books", "members", "x"]
        .iter()
        .map(|c| s.url(&format!("sample/{c}")))
        .collect();
    assert_eq!(listed, want);
    s.stop().await;
}

/// The ACL Fedora 7 stored (an `acl:agent` given as a literal, as Fedora takes it) is served
/// and decides: anonymous callers may not read b2, admins may.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fedora_7_acl_and_versions_are_served() {
    let (s, _data) = serve_copy().await;
    let acl = graph(&s, "sample/books/b2/fcr:acl", &[]).await;
    let auth = format!("{}#read", s.url("sample/books/b2/fcr:acl"));
    assert!(acl.has_lit(&auth, "http://www.w3.org/ns/auth/acl#agent", "fedoraUser"));
    assert!(acl.has(
        &auth,
        "http://www.w3.org/ns/auth/acl#accessTo",
        &s.url("sample/books/b2")
    ));
    let r = s
        .request_anonymous(Method::GET, &s.url("sample/books/b2"), &[], "")
        .await;
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(s.get("sample/books/b2", &[]).await.status, 200);
    // b1: created, versioned, updated, versioned again. Its versions in whole seconds are
    // its mementos (v3 and v4 fall in one second: one memento).
    let r = s
        .get(
            "sample/books/b1/fcr:versions",
            &[("accept", "application/link-format")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    let mementos: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("rel=\"memento\""))
        .map(|l| &l[1..l.find('>').unwrap()])
        .collect();
    assert_eq!(mementos.len(), 3, "{text}");
    let old = graph(&s, mementos[0].trim_start_matches(&s.url("")), &[]).await;
    assert!(
        old.0
            .iter()
            .any(|t| t.predicate.as_str() == DC_TITLE && t.object.to_string() == "\"First book\""),
        "the first memento has the first title: {:?}",
        old.0
    );
    s.stop().await;
}

/// Triples of a recorded answer or of arca's, as comparable lines.
fn lines(g: &Graph, skip: &[&str]) -> BTreeSet<String> {
    g.0.iter()
        .filter(|t| !skip.contains(&t.predicate.as_str()))
        .map(ToString::to_string)
        .collect()
}

/// The root, the Archival Group and page.txt's description, on Fedora's own root, answer
/// as Fedora 7 did: the same triples (dates included: they come from Fedora's headers) and
/// the same `Link: rel="type"`s. Fedora 7's `fedora:hasParent` is left out (not stated by
/// arca, as Fedora 6.1; outside this part of the comparison).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_as_fedora_7_did_on_its_root() {
    let (s, _data) = serve_copy().await;
    let has_parent = format!("{FEDORA}hasParent");
    for (answer, path) in [
        ("root", ""),
        ("ag-container", "sample/ag"),
        (
            "binary-description",
            "sample/books/b1/page.txt/fcr:metadata",
        ),
    ] {
        let rec = recorded(answer);
        let body = rec.body.replace(RECORDED_BASE, &s.url(""));
        let theirs = Graph::parse(body.as_bytes(), RdfFormat::Turtle, &s.url(path));
        let reply = s.get(path, &[]).await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        let ours = Graph::of(&reply, &s.url(path));
        let (o, t) = (lines(&ours, &[&has_parent]), lines(&theirs, &[&has_parent]));
        assert!(t.len() >= 8, "{answer} parsed: {t:#?}");
        assert_eq!(
            (
                o.difference(&t).collect::<Vec<_>>(),
                t.difference(&o).collect::<Vec<_>>()
            ),
            (vec![], vec![]),
            "{answer}: (arca only, Fedora 7 only)"
        );
        let types = |links: Vec<&str>| -> BTreeSet<String> {
            links
                .iter()
                .filter(|l| l.contains("rel=\"type\""))
                .map(|l| l[1..l.find('>').unwrap()].to_string())
                .collect()
        };
        let ours_links: Vec<String> = links(&reply, "type");
        assert_eq!(
            ours_links.into_iter().collect::<BTreeSet<_>>(),
            types(rec.header("link")),
            "{answer}: Link rel=type"
        );
    }
    s.stop().await;
}
