//! Archival Groups end to end: a group and its parts over HTTP (type and `archival-group`
//! links), the one OCFL object that holds them all with Fedora 6's relative paths (compared
//! version by version with the object Fedora 6.1 wrote for the same requests), part
//! headers, TimeMaps and mementos of the group and of its parts, nesting refused, delete and
//! purge of a part, and a catalog rebuilt from storage that answers the same. Every object
//! is validated with ocfl-py after every step.

use std::collections::BTreeSet;
use std::path::Path;

use crate::common::*;
use arca_testkit::{next_second, TestServer};
use http::Method;

const TITLE: &str = "http://purl.org/dc/terms/title";

fn titled(t: &str) -> String {
    format!("<> <{TITLE}> \"{t}\" .")
}

/// The state (logical paths) of each version of the object Fedora 6.1 wrote for
/// `info:fedora/ag` (/tmp/fedora-probe/ANSWERS.md §B.4): v1 PUT ag (Archival Group), v2 PUT
/// ag/x, v3 PUT ag/x/f (binary), v4 PUT ag/x again, v5 POST ag/fcr:versions, v6 PUT ag (with
/// the ArchivalGroup link again), v7 DELETE ag/x, v8 DELETE ag/x/fcr:tombstone, v9 PUT ag/x.
const FEDORA_STATES: [&[&str]; 9] = [
    &[".fcrepo/fcr-root.json", "fcr-container.nt"],
    &[
        ".fcrepo/fcr-root.json",
        ".fcrepo/x.json",
        "fcr-container.nt",
        "x/fcr-container.nt",
    ],
    ALL_PARTS,
    ALL_PARTS,
    ALL_PARTS,
    ALL_PARTS,
    &[
        ".fcrepo/fcr-root.json",
        ".fcrepo/x.json",
        ".fcrepo/x/f.json",
        ".fcrepo/x/f~fcr-desc.json",
        "fcr-container.nt",
    ],
    &[".fcrepo/fcr-root.json", "fcr-container.nt"],
    &[
        ".fcrepo/fcr-root.json",
        ".fcrepo/x.json",
        "fcr-container.nt",
        "x/fcr-container.nt",
    ],
];

const ALL_PARTS: &[&str] = &[
    ".fcrepo/fcr-root.json",
    ".fcrepo/x.json",
    ".fcrepo/x/f.json",
    ".fcrepo/x/f~fcr-desc.json",
    "fcr-container.nt",
    "x/f",
    "x/fcr-container.nt",
    "x/f~fcr-desc.nt",
];

/// The files below `vN/content/` of the same Fedora-written object (what each version
/// wrote; unchanged content is deduplicated against earlier versions).
const FEDORA_CONTENT: [&[&str]; 9] = [
    &[".fcrepo/fcr-root.json", "fcr-container.nt"],
    &[
        ".fcrepo/fcr-root.json",
        ".fcrepo/x.json",
        "x/fcr-container.nt",
    ],
    &[
        ".fcrepo/fcr-root.json",
        ".fcrepo/x/f.json",
        ".fcrepo/x/f~fcr-desc.json",
        "x/f",
        "x/f~fcr-desc.nt",
    ],
    &[
        ".fcrepo/fcr-root.json",
        ".fcrepo/x.json",
        "x/fcr-container.nt",
    ],
    &[".fcrepo/fcr-root.json"],
    &[".fcrepo/fcr-root.json"],
    &[
        ".fcrepo/fcr-root.json",
        ".fcrepo/x.json",
        ".fcrepo/x/f.json",
        ".fcrepo/x/f~fcr-desc.json",
    ],
    &[],
    &[
        ".fcrepo/fcr-root.json",
        ".fcrepo/x.json",
        "x/fcr-container.nt",
    ],
];

/// The files below `v<version>/content/` of an object.
fn content_files(object: &Path, version: usize) -> BTreeSet<String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                walk(base, &e.path(), out);
            } else {
                let rel = e.path().strip_prefix(base).unwrap().to_owned();
                out.insert(rel.to_string_lossy().into_owned());
            }
        }
    }
    let base = object.join(format!("v{version}/content"));
    let mut out = BTreeSet::new();
    walk(&base, &base, &mut out);
    out
}

/// After step `n` (1-based) of Fedora's sequence: the object holds versions v1..vn whose
/// states and written files are Fedora's, and ocfl-py finds it valid.
fn assert_like_fedora(object: &Path, n: usize, step: &str) {
    validate_object(object);
    let states = version_states(object);
    assert_eq!(states.len(), n, "after {step}: versions");
    for (v, state) in states.iter().enumerate() {
        let expected: BTreeSet<String> = FEDORA_STATES[v].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            state,
            &expected,
            "after {step}: the state of v{} differs from Fedora's",
            v + 1
        );
        let expected: BTreeSet<String> = FEDORA_CONTENT[v].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            content_files(object, v + 1),
            expected,
            "after {step}: the files v{} wrote differ from Fedora's",
            v + 1
        );
    }
}

/// Every part header names the group and is not an object root; the root header is the
/// group's.
fn assert_headers(object: &Path) {
    let root = head_header(object, ".fcrepo/fcr-root.json");
    assert_eq!(root["id"], "info:fedora/ag");
    assert_eq!(root["archivalGroup"], true);
    assert_eq!(root["objectRoot"], true);
    assert!(root.get("archivalGroupId").is_none(), "{root}");
    let inv = inventory(object);
    let head = inv["head"].as_str().unwrap().to_string();
    let state = inv["versions"][&head]["state"].as_object().unwrap().clone();
    for path in state.values().flat_map(|p| p.as_array().unwrap().clone()) {
        let path = path.as_str().unwrap();
        if !path.starts_with(".fcrepo/") || path == ".fcrepo/fcr-root.json" {
            continue;
        }
        let h = head_header(object, path);
        assert_eq!(h["archivalGroupId"], "info:fedora/ag", "{path}: {h}");
        assert_eq!(h["objectRoot"], false, "{path}: {h}");
        assert_eq!(h["archivalGroup"], false, "{path}: {h}");
        let id = h["id"].as_str().unwrap();
        let rel = id.strip_prefix("info:fedora/ag/").unwrap();
        let expected = match rel.strip_suffix("/fcr:metadata") {
            Some(binary) => format!(".fcrepo/{binary}~fcr-desc.json"),
            None => format!(".fcrepo/{rel}.json"),
        };
        assert_eq!(path, expected, "{id} is stored under another name");
        if h["deleted"] == false {
            let content = h["contentPath"].as_str().unwrap();
            assert!(state
                .values()
                .any(|p| p.as_array().unwrap().iter().any(|p| p == content)));
        } else {
            assert!(h.get("contentPath").is_none(), "{h}");
            assert_eq!(h["contentSize"], -1);
        }
    }
}

async fn put_binary(s: &TestServer, path: &str, bytes: &str) -> u16 {
    put(
        s,
        path,
        &[("content-type", "text/plain"), LINK_BINARY],
        bytes,
    )
    .await
    .status
    .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_object_holds_the_group_with_fedoras_paths_version_by_version() {
    let s = TestServer::start().await;
    let object = object_dir(&s.ocfl_root(), "info:fedora/ag");

    let r = put(&s, "ag", &[TURTLE, LINK_AG], &titled("ag")).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_like_fedora(&object, 1, "PUT ag");

    let r = put(&s, "ag/x", &[TURTLE], &titled("x1")).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_like_fedora(&object, 2, "PUT ag/x");

    assert_eq!(put_binary(&s, "ag/x/f", "file one").await, 201);
    assert_like_fedora(&object, 3, "PUT ag/x/f");
    assert_headers(&object);
    assert_eq!(head_file(&object, "x/f"), b"file one");

    let r = put(&s, "ag/x", &[TURTLE], &titled("x2")).await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_like_fedora(&object, 4, "PUT ag/x again");

    let r = post(&s, "ag/fcr:versions", &[], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_like_fedora(&object, 5, "POST ag/fcr:versions");

    // The ArchivalGroup link on an existing group changes nothing but the version.
    let r = put(&s, "ag", &[TURTLE, LINK_AG], &titled("ag")).await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_like_fedora(&object, 6, "PUT ag with the link again");
    assert_headers(&object);

    let r = delete(&s, "ag/x", &[]).await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_like_fedora(&object, 7, "DELETE ag/x");
    assert_headers(&object);
    for p in ["ag/x", "ag/x/f", "ag/x/f/fcr:metadata"] {
        assert_eq!(s.get(p, &[]).await.status, 410, "{p} after DELETE ag/x");
    }
    assert_eq!(s.get("ag", &[]).await.status, 200);
    assert!(children(&s, "ag").await.is_empty());

    let r = delete(&s, "ag/x/fcr:tombstone", &[]).await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_like_fedora(&object, 8, "purge ag/x");
    for p in ["ag/x", "ag/x/f"] {
        assert_eq!(s.get(p, &[]).await.status, 404, "{p} after the purge");
    }

    let r = put(&s, "ag/x", &[TURTLE], &titled("x3")).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_like_fedora(&object, 9, "PUT ag/x after the purge");
    assert_headers(&object);
    assert_eq!(s.get("ag/x/f", &[]).await.status, 404);
    assert_eq!(children(&s, "ag").await, vec![s.url("ag/x")]);

    // One object for everything: the root's and the group's, nothing else.
    let objects = object_dirs(&s.ocfl_root());
    assert_eq!(
        objects,
        {
            let mut o = vec![object.clone(), object_dir(&s.ocfl_root(), "info:fedora")];
            o.sort();
            o
        },
        "the parts must not have objects of their own"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_and_parts_carry_their_links() {
    let s = TestServer::start().await;
    let r = put(&s, "ag", &[TURTLE, LINK_AG], &titled("ag")).await;
    assert_eq!(r.status, 201, "{}", r.text());
    container_with(&s, "ag/x", &titled("x1")).await;
    assert_eq!(put_binary(&s, "ag/x/f", "file one").await, 201);
    let r = post(&s, "ag", &[TURTLE, ("slug", "p")], "").await;
    assert_eq!(r.status, 201, "{}", r.text());

    let r = head(&s, "ag", &[]).await;
    assert!(r.has_link(ARCHIVAL_GROUP, "type"), "{:?}", r.headers);
    assert!(links(&r, "archival-group").is_empty(), "{:?}", r.headers);
    for p in ["ag/x", "ag/x/f", "ag/x/f/fcr:metadata", "ag/p"] {
        for method in [Method::GET, Method::HEAD] {
            let r = s.request(method.clone(), &s.url(p), &[], Vec::new()).await;
            assert_eq!(r.status, 200, "{method} {p}");
            assert_eq!(
                links(&r, "archival-group"),
                vec![s.url("ag")],
                "{method} {p}: {:?}",
                r.headers
            );
            assert!(!r.has_link(ARCHIVAL_GROUP, "type"), "{p} is no group");
        }
    }
    let r = s.get("ag/x/f", &[]).await;
    assert_eq!(r.body.as_ref(), b"file one");
    // A container outside any group has no such link.
    container(&s, "plain").await;
    let r = head(&s, "plain", &[]).await;
    assert!(links(&r, "archival-group").is_empty());
    assert!(!r.has_link(ARCHIVAL_GROUP, "type"));
    // A group below a plain container is fine (Fedora: 201).
    let r = put(&s, "plain/ag2", &[TURTLE, LINK_AG], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    validate_object(&object_dir(&s.ocfl_root(), "info:fedora/plain/ag2"));
    validate_object(&object_dir(&s.ocfl_root(), "info:fedora/ag"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_group_is_409_and_changes_nothing() {
    let s = TestServer::start().await;
    let r = put(&s, "ag", &[TURTLE, LINK_AG], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    container(&s, "ag/x").await;
    let object = object_dir(&s.ocfl_root(), "info:fedora/ag");
    let before = version_states(&object);

    let r = put(&s, "ag/inner", &[TURTLE, LINK_AG], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
    let r = put(&s, "ag/x/inner", &[TURTLE, LINK_AG], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    let r = post(&s, "ag/x", &[TURTLE, LINK_AG, ("slug", "inner2")], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;

    for p in ["ag/inner", "ag/x/inner", "ag/x/inner2"] {
        assert_eq!(s.get(p, &[]).await.status, 404, "{p}");
    }
    assert_eq!(version_states(&object), before, "a refusal wrote a version");
    validate_object(&object);
    s.stop().await;
}

/// The link-format TimeMaps of every resource of the group, the GET answers (status, ETag,
/// user triples or bytes) and the memento answers.
async fn answers(s: &TestServer, paths: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for p in paths {
        let r = s.get(p, &[("accept", "application/n-triples")]).await;
        let mut lines: Vec<String> = r
            .text()
            .lines()
            .filter(|l| l.contains(TITLE) || !l.starts_with('<'))
            .map(str::to_string)
            .collect();
        lines.sort();
        out.push(format!(
            "GET {p}: {} etag={:?} last-modified={:?} {lines:?} links={:?}",
            r.status,
            r.header("etag"),
            r.header("last-modified"),
            links(&r, "archival-group"),
        ));
        if r.status == 200 {
            let mementos = timemap(s, p).await;
            out.push(format!("TimeMap {p}: {mementos:?}"));
            for m in mementos {
                let r = s
                    .request(
                        Method::GET,
                        &m,
                        &[("accept", "application/n-triples")],
                        Vec::new(),
                    )
                    .await;
                out.push(format!(
                    "memento {m}: {} {:?}",
                    r.status,
                    r.text()
                        .lines()
                        .filter(|l| l.contains(TITLE) || l.contains("ldp#contains"))
                        .collect::<BTreeSet<_>>()
                ));
            }
        }
    }
    // Another start listens on another port.
    out.iter().map(|l| l.replace(&s.base, "BASE")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_timemap_grows_with_every_part_change_and_parts_list_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_at(dir.path()).await;
    let object = object_dir(&s.ocfl_root(), "info:fedora/ag");

    let r = put(&s, "ag", &[TURTLE, LINK_AG], &titled("ag")).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let ag1 = timemap(&s, "ag").await;
    assert_eq!(ag1.len(), 1);

    next_second().await;
    container_with(&s, "ag/x", &titled("x1")).await;
    validate_object(&object);
    let ag2 = timemap(&s, "ag").await;
    assert_eq!(ag2.len(), 2, "{ag2:?}");
    let x2 = timemap(&s, "ag/x").await;
    assert_eq!(x2.len(), 1, "{x2:?}");

    next_second().await;
    assert_eq!(put_binary(&s, "ag/x/f", "file one").await, 201);
    validate_object(&object);
    let ag3 = timemap(&s, "ag").await;
    assert_eq!(ag3.len(), 3, "{ag3:?}");
    assert_eq!(
        timemap(&s, "ag/x").await,
        x2,
        "f's creation is no change of x"
    );
    let f3 = timemap(&s, "ag/x/f").await;
    assert_eq!(f3.len(), 1, "{f3:?}");
    assert_eq!(timemap(&s, "ag/x/f/fcr:metadata").await.len(), 1);

    next_second().await;
    let r = put(&s, "ag/x", &[TURTLE], &titled("x2")).await;
    assert_eq!(r.status, 204, "{}", r.text());
    validate_object(&object);
    let ag4 = timemap(&s, "ag").await;
    assert_eq!(ag4.len(), 4, "{ag4:?}");
    let x4 = timemap(&s, "ag/x").await;
    assert_eq!(x4.len(), 2, "{x4:?}");
    assert_eq!(
        timemap(&s, "ag/x/f").await,
        f3,
        "x's change is no change of f"
    );

    next_second().await;
    assert_eq!(put_binary(&s, "ag/x/f", "file two").await, 204);
    validate_object(&object);
    let ag5 = timemap(&s, "ag").await;
    assert_eq!(ag5.len(), 5, "{ag5:?}");
    assert_eq!(timemap(&s, "ag/x").await, x4);
    let f5 = timemap(&s, "ag/x/f").await;
    assert_eq!(f5.len(), 2, "{f5:?}");

    // Every entry of a part's TimeMap is also one of the group's (same versions).
    let ag_times: BTreeSet<&str> = ag5.iter().map(|m| m.rsplit('/').next().unwrap()).collect();
    for m in x4.iter().chain(&f5) {
        assert!(ag_times.contains(m.rsplit('/').next().unwrap()), "{m}");
    }

    // Mementos: the part's old triples, the binary's old bytes, the group's containment
    // at the time.
    let x_old = s
        .request(
            Method::GET,
            &x4[0],
            &[("accept", "application/n-triples")],
            Vec::new(),
        )
        .await;
    assert_eq!(x_old.status, 200);
    assert!(x_old.text().contains("\"x1\""), "{}", x_old.text());
    let x_new = s
        .request(
            Method::GET,
            &x4[1],
            &[("accept", "application/n-triples")],
            Vec::new(),
        )
        .await;
    assert!(x_new.text().contains("\"x2\""), "{}", x_new.text());
    let f_old = s.request(Method::GET, &f5[0], &[], Vec::new()).await;
    assert_eq!(f_old.status, 200);
    assert_eq!(f_old.body.as_ref(), b"file one");
    let f_new = s.request(Method::GET, &f5[1], &[], Vec::new()).await;
    assert_eq!(f_new.body.as_ref(), b"file two");
    let ag_first = s
        .request(
            Method::GET,
            &ag5[0],
            &[("accept", "application/n-triples")],
            Vec::new(),
        )
        .await;
    assert_eq!(ag_first.status, 200);
    assert!(
        !ag_first.text().contains(LDP_CONTAINS),
        "{}",
        ag_first.text()
    );
    let ag_later = s
        .request(
            Method::GET,
            &ag5[1],
            &[("accept", "application/n-triples")],
            Vec::new(),
        )
        .await;
    assert!(
        ag_later.text().contains(&format!("<{}>", s.url("ag/x"))),
        "{}",
        ag_later.text()
    );
    // A part cannot be versioned alone (Fedora: 409); the group can.
    let r = post(&s, "ag/x/fcr:versions", &[], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    next_second().await;
    let r = post(&s, "ag/fcr:versions", &[], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(timemap(&s, "ag").await.len(), 6);
    assert_eq!(
        timemap(&s, "ag/x").await,
        x4,
        "versioning the group is no change of x"
    );
    validate_object(&object);

    // The same answers from a catalog rebuilt from storage.
    let paths = ["ag", "ag/x", "ag/x/f", "ag/x/f/fcr:metadata"];
    let before = answers(&s, &paths).await;
    s.stop().await;
    let copy = copy_without_catalog(dir.path());
    let s = TestServer::start_at(copy.path()).await;
    let after = answers(&s, &paths).await;
    assert_eq!(
        before, after,
        "answers differ after the catalog was rebuilt"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_and_purged_part_survives_a_rebuild_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_at(dir.path()).await;
    let r = put(&s, "ag", &[TURTLE, LINK_AG], &titled("ag")).await;
    assert_eq!(r.status, 201, "{}", r.text());
    container_with(&s, "ag/x", &titled("x1")).await;
    assert_eq!(put_binary(&s, "ag/x/f", "file one").await, 201);
    container_with(&s, "ag/y", &titled("y")).await;
    assert_eq!(put_binary(&s, "ag/y/g", "gee").await, 201);
    // x and its binary become tombstones; y's binary is deleted and purged.
    assert_eq!(delete(&s, "ag/x", &[]).await.status, 204);
    assert_eq!(delete(&s, "ag/y/g", &[]).await.status, 204);
    assert_eq!(delete(&s, "ag/y/g/fcr:tombstone", &[]).await.status, 204);
    let object = object_dir(&s.ocfl_root(), "info:fedora/ag");
    validate_object(&object);
    assert_headers(&object);
    let state = version_states(&object).pop().unwrap();
    assert!(!state.iter().any(|p| p.contains("y/g")), "{state:?}");
    assert!(state.contains(".fcrepo/x/f.json"), "{state:?}");

    let paths = ["ag", "ag/x", "ag/x/f", "ag/y", "ag/y/g"];
    let before = answers(&s, &paths).await;
    let statuses: Vec<u16> = {
        let mut v = Vec::new();
        for p in paths {
            v.push(s.get(p, &[]).await.status.as_u16());
        }
        v
    };
    assert_eq!(statuses, [200, 410, 410, 200, 404]);
    assert_eq!(children(&s, "ag").await, vec![s.url("ag/y")]);
    assert!(children(&s, "ag/y").await.is_empty());
    s.stop().await;

    let copy = copy_without_catalog(dir.path());
    let s = TestServer::start_at(copy.path()).await;
    // ag/y's ETag covers its last change of children, which a purged child leaves no trace
    // of in storage (a documented limit of the rebuild, crates/repository/src/index.rs).
    let forget_y_etag = |lines: Vec<String>| -> Vec<String> {
        lines
            .into_iter()
            .map(|l| match l.strip_prefix("GET ag/y: ") {
                Some(rest) => format!("GET ag/y: {}", rest.split(" etag=").next().unwrap()),
                None => l,
            })
            .collect()
    };
    assert_eq!(
        forget_y_etag(answers(&s, &paths).await),
        forget_y_etag(before)
    );
    assert_eq!(children(&s, "ag").await, vec![s.url("ag/y")]);
    let object = object_dir(&s.ocfl_root(), "info:fedora/ag");
    // The tombstone still leads to a purge, and the part can be made again.
    assert_eq!(delete(&s, "ag/x/fcr:tombstone", &[]).await.status, 204);
    assert_eq!(s.get("ag/x/f", &[]).await.status, 404);
    container_with(&s, "ag/x", &titled("again")).await;
    validate_object(&object);
    assert_headers(&object);
    s.stop().await;
}
