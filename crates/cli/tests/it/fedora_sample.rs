//! arca and Fedora 6 agree on storage, in both directions.
//!
//! (a) The operations recorded in the Fedora-written sample root
//! (`../shared/ocfl-fedora-sample`) are replayed through arca's HTTP API, and each object
//! arca writes must have the same files and the same inventory and `.fcrepo` header
//! structure as Fedora's: same keys in the same order, same values except what depends on
//! the clock (timestamps, state tokens, digests of headers) or names the product (the
//! version message).
//!
//! (b) arca opens the Fedora-written root itself and serves what is in it, without
//! changing it just by opening it; and a write into a Fedora-written object yields a valid
//! object.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use arca_testkit::TestServer;
use hyper::{Method, StatusCode};
use serde_json::Value;

use crate::common;
use crate::common::{object_dir, relative_files, sample_root};

/// Header fields whose values depend on the clock.
const CLOCK_FIELDS: [&str; 4] = [
    "createdDate",
    "lastModifiedDate",
    "mementoCreatedDate",
    "stateToken",
];

/// Compares two header files: same keys in the same order, same values except clock
/// fields, which must still be well-formed.
fn compare_headers(what: &str, ours: &Value, theirs: &Value) {
    let (o, t) = (ours.as_object().unwrap(), theirs.as_object().unwrap());
    assert_eq!(
        o.keys().collect::<Vec<_>>(),
        t.keys().collect::<Vec<_>>(),
        "{what}: header keys or their order differ"
    );
    for (k, v) in o {
        if CLOCK_FIELDS.contains(&k.as_str()) {
            let s = v
                .as_str()
                .unwrap_or_else(|| panic!("{what}: {k} is not a string"));
            if k == "stateToken" {
                assert!(
                    s.len() == 32
                        && s.chars()
                            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase()),
                    "{what}: stateToken {s:?} is not 32 uppercase hex digits"
                );
            } else {
                assert!(
                    s.ends_with('Z') && s.contains('T'),
                    "{what}: {k} {s:?} is not a UTC instant"
                );
            }
            continue;
        }
        // The header of a content file in FEDORA_6_1_CONTENT describes those bytes.
        let header = what.rsplit('/').next().unwrap_or("");
        let content = header
            .replace(".json", ".nt")
            .replace("fcr-root", "fcr-container");
        if let Some(bytes) = fedora_6_1_bytes(&content) {
            let described = match k.as_str() {
                "contentSize" => Some(Value::from(bytes.len())),
                "digests" => Some(serde_json::json!([format!(
                    "urn:sha-512:{}",
                    common::sha512_hex(bytes.as_bytes())
                )])),
                _ => None,
            };
            if let Some(described) = described {
                assert_eq!(v, &described, "{what}: {k}");
                continue;
            }
        }
        assert_eq!(v, &t[k], "{what}: header field {k} differs");
    }
}

/// Content files whose bytes differ from the sample's on purpose, with what arca must store
/// instead: the sample's ACL triples were set by hand (its README), without the
/// `acl:accessTo` that Fedora 6.1 adds to an authorization naming no target when it stores
/// an ACL (checked against the running Fedora 6.1 webapp: a PUT of this very body stores
/// these two lines).
/// Keyed by logical path (a content path ends with `/content/<logical path>`).
const FEDORA_6_1_CONTENT: &[(&str, &str)] = &[(
    "fcr-container~fcr-acl.nt",
    "<info:fedora/c1/fcr:acl#auth> <http://www.w3.org/ns/auth/acl#accessTo> <info:fedora/c1> .\n\
     <info:fedora/c1/fcr:acl#auth> <http://www.w3.org/ns/auth/acl#mode> <http://www.w3.org/ns/auth/acl#Read> .\n",
)];

/// What arca must store at `path` (logical or content path) when it is one of
/// [`FEDORA_6_1_CONTENT`].
fn fedora_6_1_bytes(path: &str) -> Option<&'static str> {
    FEDORA_6_1_CONTENT
        .iter()
        .find(|(logical, _)| path == *logical || path.ends_with(&format!("/content/{logical}")))
        .map(|(_, bytes)| *bytes)
}

/// A digest-keyed map (manifest or version state) as path list → digest, with the digests
/// of header files (which hold timestamps) replaced by a placeholder, and those of
/// [`FEDORA_6_1_CONTENT`] by another (their bytes are compared with it).
fn by_paths(map: &Value) -> BTreeMap<Vec<String>, String> {
    map.as_object()
        .unwrap()
        .iter()
        .map(|(digest, paths)| {
            let paths: Vec<String> = paths
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap().to_string())
                .collect();
            let headers = paths
                .iter()
                .all(|p| p.starts_with(".fcrepo/") || p.contains("/content/.fcrepo/"));
            let known = paths.iter().any(|p| fedora_6_1_bytes(p).is_some());
            let d = if headers {
                "<digest of a header>".to_string()
            } else if known {
                "<compared with Fedora 6.1's bytes>".to_string()
            } else {
                digest.to_ascii_lowercase()
            };
            (paths, d)
        })
        .collect()
}

/// Compares two inventories: same keys in the same order at every level; manifest and
/// state equal up to the digests of headers; version `created` and `message` free.
fn compare_inventories(what: &str, ours: &Value, theirs: &Value) {
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(ours), keys(theirs), "{what}: inventory keys or order");
    for k in keys(ours) {
        match k.as_str() {
            "manifest" => assert_eq!(
                by_paths(&ours[&k]),
                by_paths(&theirs[&k]),
                "{what}: manifests differ"
            ),
            "versions" => {
                assert_eq!(keys(&ours[&k]), keys(&theirs[&k]), "{what}: version names");
                for (v, ov) in ours[&k].as_object().unwrap() {
                    let tv = &theirs[&k][v];
                    assert_eq!(keys(ov), keys(tv), "{what} {v}: version keys or order");
                    assert_eq!(ov["user"], tv["user"], "{what} {v}: user");
                    assert_eq!(
                        by_paths(&ov["state"]),
                        by_paths(&tv["state"]),
                        "{what} {v}: states differ"
                    );
                    let created = ov["created"].as_str().unwrap();
                    assert!(
                        created.ends_with('Z'),
                        "{what} {v}: created {created:?} is not UTC"
                    );
                    assert!(ov["message"].is_string(), "{what} {v}: message");
                }
            }
            _ => assert_eq!(ours[&k], theirs[&k], "{what}: inventory field {k}"),
        }
    }
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap_or_else(|e| panic!("{path:?}: {e}")))
        .unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// Compares one object arca wrote with the sample's, restricted to the sample's versions
/// up to `versions`.
fn compare_object(id: &str, ours_root: &Path, versions: u32) {
    let ours = object_dir(ours_root, id);
    let theirs = object_dir(&sample_root(), id);
    let in_scope = |p: &String| match p.split('/').next().unwrap().strip_prefix('v') {
        Some(n) => n.parse::<u32>().map(|n| n <= versions).unwrap_or(true),
        None => true,
    };
    let our_files = relative_files(&ours);
    let their_files: BTreeSet<String> = relative_files(&theirs)
        .into_iter()
        .filter(in_scope)
        .collect();
    assert_eq!(our_files, their_files, "{id}: files differ from Fedora's");

    for f in &our_files {
        let (o, t) = (ours.join(f), theirs.join(f));
        let what = format!("{id} {f}");
        if f.ends_with("inventory.json") {
            // The root inventory is compared with the sample's vN inventory when the
            // sample has more versions than arca wrote.
            let t = if f == "inventory.json" {
                theirs.join(format!("v{versions}/inventory.json"))
            } else {
                t
            };
            compare_inventories(&what, &json(&o), &json(&t));
        } else if f.ends_with("inventory.json.sha512") {
            let sidecar = fs::read_to_string(&o).unwrap();
            let (digest, rest) = sidecar.split_at(128.min(sidecar.len()));
            assert!(
                digest.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
                    && rest == "  inventory.json\n",
                "{what}: sidecar {sidecar:?} is not formatted as ocfl-java's"
            );
        } else if f.contains("/content/.fcrepo/") {
            compare_headers(&what, &json(&o), &json(&t));
            let raw = fs::read_to_string(&o).unwrap();
            assert!(
                !raw.contains('\n') && !raw.contains(": "),
                "{what}: headers are compact JSON without a trailing newline"
            );
        } else if let Some(bytes) = fedora_6_1_bytes(f) {
            assert_eq!(
                fs::read_to_string(&o).unwrap(),
                *bytes,
                "{what}: content differs from what Fedora 6.1 stores"
            );
        } else {
            assert!(
                fs::read(&o).unwrap() == fs::read(&t).unwrap(),
                "{what}: content differs from Fedora's"
            );
        }
    }
}

/// (a) The sample's operations for the root, c1 (v1, its ACL in v2) and c1/file.txt, replayed through
/// arca, give the same files and structures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_files_and_structure_as_fedora() {
    let s = TestServer::start().await;
    let r = s
        .request(
            Method::PUT,
            &s.url("c1"),
            &[("content-type", "text/turtle")],
            "@prefix dcterms: <http://purl.org/dc/terms/> .\n<> dcterms:title \"Hello\" .",
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    // c1's v2: the sample's ACL (an untyped authorization, so it grants nothing; stored with
    // the acl:accessTo Fedora 6.1 adds, see FEDORA_6_1_CONTENT).
    let r = s
        .request(
            Method::PUT,
            &s.url("c1/fcr:acl"),
            &[("content-type", "text/turtle")],
            "<#auth> <http://www.w3.org/ns/auth/acl#mode> <http://www.w3.org/ns/auth/acl#Read> .",
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let r = s
        .request(
            Method::PUT,
            &s.url("c1/file.txt"),
            // The sample's header names the file (Fedora 6.1 stores "" without one).
            &[
                ("content-type", "text/plain"),
                ("content-disposition", "attachment; filename=\"file.txt\""),
            ],
            "hello world\n",
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let r = s
        .request(Method::DELETE, &s.url("c1/file.txt"), &[], "")
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    let root = s.ocfl_root();
    let dir = s.stop().await;

    common::assert_root_files_match_sample(&root);
    compare_object("info:fedora", &root, 1);
    compare_object("info:fedora/c1", &root, 2);
    compare_object("info:fedora/c1/file.txt", &root, 2);
    assert_eq!(
        common::object_dirs(&root).len(),
        3,
        "arca wrote objects the sample does not have"
    );
    drop(dir);
}

/// (b) arca serves a root Fedora wrote: containers with triples, a tombstone, an Archival
/// Group with a percent-encoded binary and its description, mutable-HEAD objects, the
/// root's children; and opening the root does not change it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_the_fedora_written_root() {
    let data = tempfile::tempdir().unwrap();
    let root = data.path().join("ocfl-root");
    common::copy_tree(&sample_root(), &root);
    let s = TestServer::start_at(data.path()).await;
    let nt = [("accept", "application/n-triples")];
    let title = "<http://purl.org/dc/terms/title>";

    let r = s.get("c1", &nt).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.text()
            .contains(&format!("<{}> {title} \"Hello\" .", s.url("c1"))),
        "c1 has its title:\n{}",
        r.text()
    );

    let r = s.get("c1/file.txt", &[]).await;
    assert_eq!(r.status, StatusCode::GONE, "c1/file.txt is a tombstone");

    let r = s.get("ag1", &nt).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.text().contains(&format!(
        "<{}> <http://www.w3.org/ns/ldp#contains> <{}> .",
        s.url("ag1"),
        s.url("ag1/sub")
    )));
    let r = s.get("ag1/sub", &nt).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.text().contains(&format!(
        "<http://www.w3.org/ns/ldp#contains> <{}> .",
        s.url("ag1/sub/data%20file.bin")
    )));

    let r = s.get("ag1/sub/data%20file.bin", &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(&r.body[..], b"BBBB", "the v2 bytes of the AG binary");
    assert_eq!(r.header("content-type"), Some("application/octet-stream"));

    let r = s.get("ag1/sub/data%20file.bin/fcr:metadata", &nt).await;
    assert_eq!(r.status, StatusCode::OK);
    let text = r.text();
    let bin = s.url("ag1/sub/data%20file.bin");
    assert!(
        text.contains(&format!(
            "<{bin}> <http://www.ebu.ch/metadata/ontologies/ebucore/ebucore#filename> \"data file.bin\" ."
        )),
        "the description names the binary:\n{text}"
    );
    assert!(text.contains(&common::sha512_hex(b"BBBB")));

    let r = s.get("mh1", &nt).await;
    assert_eq!(r.status, StatusCode::OK, "mh1 (mutable HEAD) is served");
    assert!(
        r.text()
            .contains(&format!("<{}> {title} \"v\" .", s.url("mh1"))),
        "mh1 shows its mutable-HEAD state:\n{}",
        r.text()
    );
    let r = s.get("mh2", &nt).await;
    assert_eq!(r.status, StatusCode::OK, "mh2 is served");

    let r = s.get("", &nt).await;
    assert_eq!(r.status, StatusCode::OK);
    let contains: BTreeSet<String> = r
        .text()
        .lines()
        .filter(|l| l.contains("<http://www.w3.org/ns/ldp#contains>"))
        .map(|l| l.split(' ').nth(2).unwrap().to_string())
        .collect();
    let expected: BTreeSet<String> = ["ag1", "c1", "mh1", "mh2"]
        .iter()
        .map(|c| format!("<{}>", s.url(c)))
        .collect();
    assert_eq!(contains, expected, "the root lists its live children");

    s.stop().await;
    // Opening and reading a Fedora root changes nothing in it.
    let original = relative_files(&sample_root());
    assert_eq!(relative_files(&root), original);
    for f in &original {
        assert!(
            fs::read(root.join(f)).unwrap() == fs::read(sample_root().join(f)).unwrap(),
            "{f} was changed by opening the root"
        );
    }
    common::assert_staging_clean(data.path());
}

/// A write into an object Fedora wrote (c1, which also holds an ACL) adds a version that
/// keeps the ACL and leaves the object valid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_into_a_fedora_written_object_keep_it_valid() {
    let data = tempfile::tempdir().unwrap();
    let root = data.path().join("ocfl-root");
    common::copy_tree(&sample_root(), &root);
    let s = TestServer::start_at(data.path()).await;
    let r = s
        .request(
            Method::PATCH,
            &s.url("c1"),
            &[("content-type", "application/sparql-update")],
            "INSERT DATA { <> <http://purl.org/dc/terms/description> \"by arca\" }",
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    let r = s.get("c1", &[("accept", "application/n-triples")]).await;
    assert!(r.text().contains("\"by arca\""));
    s.stop().await;

    let c1 = object_dir(&root, "info:fedora/c1");
    common::check_object(&root, &c1);
    let inv = json(&c1.join("inventory.json"));
    assert_eq!(inv["head"], "v3");
    let state = by_paths(&inv["versions"]["v3"]["state"]);
    let logical: BTreeSet<&str> = state.keys().flatten().map(String::as_str).collect();
    assert_eq!(
        logical,
        BTreeSet::from([
            ".fcrepo/fcr-root.json",
            ".fcrepo/fcr-root~fcr-acl.json",
            "fcr-container.nt",
            "fcr-container~fcr-acl.nt",
        ]),
        "the new version keeps Fedora's ACL files"
    );
    common::assert_staging_clean(data.path());
    // Only c1: the sample's mutable-HEAD objects draw ocfl-py's W013 (unregistered
    // extension 0005), which is Fedora's doing, not arca's.
    if let Some(n) = common::validate_objects_with_ocfl_py(&[c1]) {
        assert_eq!(n, 1);
    }
}

/// The mementos the sample's storage holds, computed from the root inventories alone:
/// resource id → memento names (`YYYYMMDDHHMMSS`, UTC), oldest first, each with the
/// version that is the memento. A memento is an immutable version in which the resource's
/// `.fcrepo/*.json` header was written (new or changed digest) and is not a tombstone; the
/// name is the version's `created` in whole seconds, and a later version in the same second
/// is the memento of that second (the mutable HEAD, outside the root inventory, is none).
pub(crate) fn expected_mementos(root: &Path) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for dir in common::object_dirs(root) {
        let inv = json(&dir.join("inventory.json"));
        let manifest = inv["manifest"].as_object().unwrap();
        let mut versions: Vec<(&String, &Value)> =
            inv["versions"].as_object().unwrap().iter().collect();
        versions.sort_by_key(|(v, _)| v[1..].parse::<u32>().unwrap());
        let mut previous: BTreeMap<String, String> = BTreeMap::new();
        for (v, version) in versions {
            let mut state = BTreeMap::new();
            for (digest, paths) in version["state"].as_object().unwrap() {
                for p in paths.as_array().unwrap() {
                    state.insert(p.as_str().unwrap().to_string(), digest.clone());
                }
            }
            let created = version["created"].as_str().unwrap();
            let name: String = created[..19].chars().filter(char::is_ascii_digit).collect();
            for (path, digest) in &state {
                let header = path.starts_with(".fcrepo/") && path.ends_with(".json");
                if !header || previous.get(path) == Some(digest) {
                    continue;
                }
                let file = manifest[digest.as_str()][0].as_str().unwrap();
                let h = json(&dir.join(file));
                if h["deleted"].as_bool() == Some(true) {
                    continue;
                }
                out.entry(h["id"].as_str().unwrap().to_string())
                    .or_default()
                    .insert(name.clone(), v.clone());
            }
            previous = state;
        }
    }
    out.into_iter()
        .map(|(id, m)| (id, m.into_iter().collect()))
        .collect()
}

/// The memento URLs a link-format TimeMap lists, in its order.
pub(crate) fn timemap(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.contains("rel=\"memento\""))
        .map(|l| l[1..l.find('>').unwrap()].to_string())
        .collect()
}

/// §4 on a root Fedora wrote: every resource's TimeMap lists exactly the versions in which
/// its header changed (none for the mutable HEAD of mh1, v2 for mh2, c1 not for the version
/// that only added its ACL), a deleted resource's versions are gone (410), a resource
/// without a memento has no TimeGate answer (406, 4.1.1-A-1), and a memento of the AG's
/// binary serves the bytes of its version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_the_mementos_of_the_fedora_written_root() {
    let data = tempfile::tempdir().unwrap();
    let root = data.path().join("ocfl-root");
    common::copy_tree(&sample_root(), &root);
    // The sample's two versions of ag1 fall in one second, so one memento stands for both;
    // moving v1 a second earlier (root inventory and its sidecar) makes v1 a memento too.
    let ag1 = object_dir(&root, "info:fedora/ag1");
    let mut inv = json(&ag1.join("inventory.json"));
    let v1_created = inv["versions"]["v1"]["created"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        &v1_created[..19],
        "2026-11-21T20:23:50",
        "the sample changed"
    );
    inv["versions"]["v1"]["created"] = Value::from(v1_created.replace(":50.", ":49."));
    let text = serde_json::to_string_pretty(&inv).unwrap();
    fs::write(ag1.join("inventory.json"), &text).unwrap();
    fs::write(
        ag1.join("inventory.json.sha512"),
        format!("{}  inventory.json\n", common::sha512_hex(text.as_bytes())),
    )
    .unwrap();

    let expected = expected_mementos(&root);
    // What the sample holds, by its README.
    let names = |id: &str| -> Vec<&str> {
        expected
            .get(id)
            .map(|m| m.iter().map(|(_, v)| v.as_str()).collect())
            .unwrap_or_default()
    };
    assert_eq!(names("info:fedora/c1"), ["v1"]);
    assert_eq!(names("info:fedora/ag1"), ["v1", "v2"]);
    assert_eq!(names("info:fedora/ag1/sub/data file.bin"), ["v1", "v2"]);
    assert_eq!(names("info:fedora/mh1"), Vec::<&str>::new());
    assert_eq!(names("info:fedora/mh2"), ["v2"]);
    assert_eq!(names("info:fedora/c1/file.txt"), ["v1"]);

    let s = TestServer::start_at(data.path()).await;
    let lf = [("accept", "application/link-format")];
    let mut checked = 0;
    for (id, mementos) in &expected {
        // (A description's `fcr:metadata` is a path segment, its colon not escaped.)
        let path = common::url_path(id).replace("%3A", ":");
        let r = s.get(&format!("{path}/fcr:versions"), &lf).await;
        if id.starts_with("info:fedora/c1/file.txt") {
            assert_eq!(r.status, StatusCode::GONE, "{id} was deleted");
            continue;
        }
        assert_eq!(r.status, StatusCode::OK, "TimeMap of {id}: {}", r.text());
        let want: Vec<String> = mementos
            .iter()
            .map(|(name, _)| format!("{}{path}/fcr:versions/{name}", s.base))
            .collect();
        assert_eq!(timemap(&r.text()), want, "TimeMap of {id}");
        for url in &want {
            let r = s.request(Method::HEAD, url, &[], "").await;
            assert_eq!(r.status, StatusCode::OK, "{url}");
        }
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} TimeMaps checked");

    // Fedora's ACL of c1 is served. Its authorization has no rdf:type, so the ACL has no
    // authorization at all (5.2) and, by Fedora 6's rule, does not decide: c1 gets the
    // root's (everyone may read; only admins write).
    let r = s
        .get("c1/fcr:acl", &[("accept", "application/n-triples")])
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert!(
        r.text()
            .contains("<http://www.w3.org/ns/auth/acl#mode> <http://www.w3.org/ns/auth/acl#Read>"),
        "{}",
        r.text()
    );
    let r = s
        .request_anonymous(Method::GET, &s.url("c1"), &[], "")
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let r = s
        .request_anonymous(
            Method::PUT,
            &s.url("c1"),
            &[("content-type", "text/turtle")],
            "",
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text());

    // mh1 (mutable HEAD, never versioned): no memento, so no TimeGate answer.
    let r = s.get("mh1/fcr:versions", &lf).await;
    assert_eq!(timemap(&r.text()), Vec::<String>::new());
    let r = s
        .get(
            "mh1",
            &[("accept-datetime", "Sat, 21 Nov 2026 20:23:50 GMT")],
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE, "{}", r.text());
    let r = s
        .get(
            "mh2",
            &[("accept-datetime", "Sat, 21 Nov 2026 20:23:50 GMT")],
        )
        .await;
    assert_eq!(r.status, StatusCode::FOUND, "{}", r.text());

    // The AG binary's mementos serve the bytes of their versions.
    let bin = "ag1/sub/data%20file.bin";
    let bin_mementos = &expected["info:fedora/ag1/sub/data file.bin"];
    let state_bytes = |v: &str| -> Vec<u8> {
        let inv = json(&ag1.join("inventory.json"));
        let digest = inv["versions"][v]["state"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(_, p)| {
                p.as_array()
                    .unwrap()
                    .iter()
                    .any(|p| p == "sub/data file.bin")
            })
            .map(|(d, _)| d.clone())
            .unwrap();
        fs::read(ag1.join(inv["manifest"][&digest][0].as_str().unwrap())).unwrap()
    };
    let (v1_bytes, v2_bytes) = (state_bytes("v1"), state_bytes("v2"));
    assert_ne!(v1_bytes, v2_bytes);
    assert_eq!(v2_bytes, b"BBBB");
    for ((name, v), bytes) in bin_mementos.iter().zip([&v1_bytes, &v2_bytes]) {
        let r = s.get(&format!("{bin}/fcr:versions/{name}"), &[]).await;
        assert_eq!(r.status, StatusCode::OK, "{v}: {}", r.text());
        assert_eq!(&r.body[..], &bytes[..], "the {v} bytes of the AG binary");
    }
    s.stop().await;
}
