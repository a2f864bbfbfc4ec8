//! `arca export` and `arca import DIR` (issue 46): a tree with its whole history moves
//! between data directories as OCFL objects in Fedora 6's layout. The tree is made over
//! HTTP on a served arca, exported, imported into a fresh data directory, and served again:
//! every resource, TimeMap and memento answers as before. ocfl-py validates both roots, the
//! real Fedora 6.1 opens the export, bad input (a flipped byte, a resource that exists,
//! an interrupted import) is refused or resumed, and `--at` places the tree under another
//! path with every version's ids and IRIs moved.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use arca_testkit::next_second;
use hyper::{Method, StatusCode};

use crate::common;
use crate::common::fedora::{Fedora, AUTHORIZATION};
use crate::common::{sha512_hex, Arca, Http};

/// The resources of the tree, as paths below the REST root (the binary's description and
/// the ACL too; `/t/gone` is a tombstone).
const PATHS: &[&str] = &[
    "/t",
    "/t/a",
    "/t/a/b",
    "/t/bin",
    "/t/bin/fcr:metadata",
    "/t/dc",
    "/t/dc/m1",
    "/t/fcr:acl",
    "/t/gone",
];

/// Resources with versions whose TimeMaps and mementos are compared.
const VERSIONED: &[&str] = &["/t", "/t/a", "/t/bin", "/t/bin/fcr:metadata", "/t/dc"];

async fn send(http: &Http, url: &str, method: Method, headers: &[(&str, &str)], body: &str) {
    let r = http
        .request(method.clone(), url, headers, body.to_string())
        .await;
    assert!(
        r.status.is_success(),
        "{method} {url}: {} {}",
        r.status,
        r.text()
    );
}

/// Makes the tree on `arca`: nested containers, a non-ASCII literal, a reference, a binary
/// with a filename and a described, versioned description, a direct container with a
/// member, an ACL, versions in several seconds and a tombstone.
async fn create_tree(arca: &Arca) {
    let http = Http::new();
    let ttl = [("content-type", "text/turtle")];
    let sparql = [("content-type", "application/sparql-update")];
    let title = |t: &str| format!("<> <http://purl.org/dc/terms/title> \"{t}\" .");
    next_second().await;
    send(
        &http,
        &arca.url("/t"),
        Method::PUT,
        &ttl,
        &title("Grüße – 日本"),
    )
    .await;
    send(&http, &arca.url("/t/a"), Method::PUT, &ttl, &title("a")).await;
    let reference = format!(
        "<> <http://purl.org/dc/terms/relation> <{}> .",
        arca.url("/t/a")
    );
    send(&http, &arca.url("/t/a/b"), Method::PUT, &ttl, &reference).await;
    send(
        &http,
        &arca.url("/t/bin"),
        Method::PUT,
        &[
            ("content-type", "text/plain"),
            (
                "content-disposition",
                "attachment; filename=\"notes één.txt\"",
            ),
        ],
        "first bytes",
    )
    .await;
    let ldp = "http://www.w3.org/ns/ldp#";
    let dc = format!(
        "<> <{ldp}membershipResource> <{}> ; <{ldp}hasMemberRelation> <http://purl.org/dc/terms/hasPart> .",
        arca.url("/t")
    );
    let link = format!("<{ldp}DirectContainer>; rel=\"type\"");
    send(
        &http,
        &arca.url("/t/dc"),
        Method::PUT,
        &[("content-type", "text/turtle"), ("link", link.as_str())],
        &dc,
    )
    .await;
    send(&http, &arca.url("/t/dc/m1"), Method::PUT, &ttl, "").await;
    let acl = format!(
        "@prefix acl: <http://www.w3.org/ns/auth/acl#> .\n<#read> a acl:Authorization ; acl:agentClass <http://xmlns.com/foaf/0.1/Agent> ; acl:mode acl:Read ; acl:accessTo <{}> .",
        arca.url("/t")
    );
    send(&http, &arca.url("/t/fcr:acl"), Method::PUT, &ttl, &acl).await;
    send(&http, &arca.url("/t/gone"), Method::PUT, &ttl, "").await;
    next_second().await;
    send(
        &http,
        &arca.url("/t"),
        Method::PUT,
        &ttl,
        &title("Grüße, zweite Fassung"),
    )
    .await;
    send(
        &http,
        &arca.url("/t/bin"),
        Method::PUT,
        &[("content-type", "text/plain")],
        "second bytes",
    )
    .await;
    send(
        &http,
        &arca.url("/t/bin/fcr:metadata"),
        Method::PATCH,
        &sparql,
        "INSERT DATA { <> <http://purl.org/dc/terms/description> \"beschrieben\" }",
    )
    .await;
    send(&http, &arca.url("/t/gone"), Method::DELETE, &[], "").await;
    next_second().await;
    send(&http, &arca.url("/t/a/fcr:versions"), Method::POST, &[], "").await;
}

/// What a client sees of the tree, the server's base URL replaced by `BASE`: each
/// resource (status, content type, links, triples or bytes, ETag, Last-Modified), each
/// TimeMap of [`VERSIONED`] and every memento it lists.
async fn snapshot(arca: &Arca) -> BTreeMap<String, Vec<String>> {
    snapshot_at(arca, "/t").await
}

/// [`snapshot`] of the tree moved to `top` (`/t` of [`PATHS`] read as `top`), its URLs
/// written as those of `/t`.
async fn snapshot_at(arca: &Arca, top: &str) -> BTreeMap<String, Vec<String>> {
    let http = Http::new();
    let moved = format!("{}{top}", arca.base);
    let norm = |s: &str| {
        s.replace(&moved, "BASE/t")
            .replace(&moved.replace('/', "%2F"), "BASE%2Ft")
            .replace(&arca.base, "BASE")
    };
    let at = |path: &str| format!("{top}{}", &path["/t".len()..]);
    let sorted_lines = |s: &str| {
        let mut lines: Vec<String> = s.lines().map(norm).collect();
        lines.sort();
        lines
    };
    let mut out = BTreeMap::new();
    for path in PATHS {
        let r = get_nt(&http, &arca.url(&at(path))).await;
        let ct = r.header("content-type").unwrap_or_default().to_string();
        let mut links: Vec<String> = r
            .header_all("link")
            .split(',')
            .map(|l| norm(l.trim()))
            .collect();
        links.sort();
        let mut seen = vec![
            format!("status {}", r.status),
            format!("content-type {ct}"),
            format!("link {}", links.join(", ")),
            format!("etag {}", r.header("etag").unwrap_or_default()),
            format!(
                "content-disposition {}",
                r.header("content-disposition").unwrap_or_default()
            ),
        ];
        if ct.starts_with("application/n-triples") || !r.status.is_success() {
            seen.extend(sorted_lines(&r.text()));
        } else {
            seen.push(format!("sha512 {}", sha512_hex(&r.body)));
        }
        out.insert(path.to_string(), seen);
    }
    for path in VERSIONED {
        let tm = arca.url(&format!("{}/fcr:versions", at(path)));
        let r = http
            .get(&tm, &[("accept", "application/link-format")])
            .await;
        assert_eq!(r.status, StatusCode::OK, "TimeMap of {path}: {}", r.text());
        let link_format = r.text();
        out.insert(format!("timemap {path}"), sorted_lines(&link_format));
        let mementos = common::memento_answers(&http, &link_format, &norm).await;
        assert!(!mementos.is_empty(), "{path} has no memento");
        out.extend(mementos);
    }
    out
}

async fn get_nt(http: &Http, url: &str) -> arca_testkit::Reply {
    http.get(url, &[("accept", "application/n-triples")]).await
}

/// Runs the `arca` binary with `args`; returns its exit status and its output.
fn arca(args: &[&dyn AsRef<std::ffi::OsStr>]) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arca"));
    for a in args {
        cmd.arg(a);
    }
    common::scrub_env(&mut cmd);
    let out = cmd.output().expect("arca runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// `arca export /t --to DIR [--bag]` of `data`; asserts success.
fn export(data: &Path, to: &Path, bag: bool) {
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
        vec![&"export", &"/t", &"--to", &to, &"--data", &data];
    if bag {
        args.push(&"--bag");
    }
    let (code, out) = arca(&args);
    assert_eq!(code, 0, "arca export failed: {out}");
}

/// `arca import DIR --data DATA` with `extra` flags: exit status and output.
fn import(dir: &Path, data: &Path, extra: &[&str]) -> (i32, String) {
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"import", &dir, &"--data", &data];
    for e in extra {
        args.push(e);
    }
    arca(&args)
}

/// A served data directory holding the tree, stopped, and what a client saw of it.
async fn source() -> (tempfile::TempDir, BTreeMap<String, Vec<String>>) {
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve(data.path());
    create_tree(&arca).await;
    let before = snapshot(&arca).await;
    arca.stop();
    // The snapshot saw the history: two mementos of /t with their own titles, two of the
    // binary with their own bytes, the tombstone.
    let t: Vec<_> = before
        .keys()
        .filter(|k| k.starts_with("BASE/t/fcr:versions/"))
        .collect();
    assert!(t.len() >= 2, "{before:#?}");
    assert!(before[t[0]].iter().any(|l| l.contains("日本")));
    assert!(before
        .iter()
        .any(|(k, s)| k.starts_with("BASE/t/bin/fcr:versions/")
            && s.contains(&format!("sha512 {}", sha512_hex(b"first bytes")))));
    assert_eq!(before["/t/gone"][0], "status 410 Gone");
    (data, before)
}

/// Serves `data` and asserts that a client sees what it saw of the source.
async fn assert_serves(data: &Path, before: &BTreeMap<String, Vec<String>>) {
    let arca = Arca::serve(data);
    let after = snapshot(&arca).await;
    arca.stop();
    assert_same_answers(before, &after);
}

/// Asserts that `after` holds what `before` does (a container's ETag aside).
fn assert_same_answers(
    before: &BTreeMap<String, Vec<String>>,
    after: &BTreeMap<String, Vec<String>>,
) {
    // A container's ETag also stands for its listing, whose clock is the catalog's: the
    // import is the last change of its children in the new repository.
    let comparable = |seen: &Vec<String>| -> Vec<String> {
        let container = seen
            .iter()
            .any(|l| l.contains("ldp#Container>;rel=\"type\""));
        seen.iter()
            .filter(|l| !(container && l.starts_with("etag ")))
            .cloned()
            .collect()
    };
    for (key, seen) in before {
        assert_eq!(
            after.get(key).map(comparable),
            Some(comparable(seen)),
            "{key} answers differently after the import"
        );
    }
    assert_eq!(after.len(), before.len(), "{after:#?}");
}

/// The object directories of a storage root.
fn objects(root: &Path) -> Vec<PathBuf> {
    common::object_dirs(root)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exported_tree_is_imported_with_every_version() {
    let (data, before) = source().await;
    let out = tempfile::tempdir().unwrap();
    let to = out.path().join("export");
    export(data.path(), &to, false);
    // Fedora's layout: the root files as arca's root has them, and one object per resource
    // (the description and the ACL in their resource's object), byte for byte.
    let source_root = data.path().join("ocfl-root");
    for name in [
        "0=ocfl_1.1",
        "ocfl_layout.json",
        "extensions/0004-hashed-n-tuple-storage-layout/config.json",
    ] {
        assert_eq!(
            fs::read(to.join(name)).unwrap(),
            fs::read(source_root.join(name)).unwrap(),
            "{name}"
        );
    }
    let exported = objects(&to);
    assert_eq!(exported.len(), 7, "{exported:?}");
    for dir in &exported {
        let rel = dir.strip_prefix(&to).unwrap();
        assert_eq!(
            common::relative_files(dir),
            common::relative_files(&source_root.join(rel)),
            "{rel:?}"
        );
    }
    common::validate_with_ocfl_py(&to);

    let target = tempfile::tempdir().unwrap();
    let (code, text) = import(&to, target.path(), &[]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("imported 7 objects"), "{text}");
    common::validate_with_ocfl_py(&target.path().join("ocfl-root"));
    assert_serves(target.path(), &before).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bag_round_trips_and_a_flipped_byte_is_refused_with_the_file_named() {
    let (data, before) = source().await;
    let out = tempfile::tempdir().unwrap();
    let bag = out.path().join("bag");
    export(data.path(), &bag, true);
    for name in [
        "bagit.txt",
        "bag-info.txt",
        "manifest-sha512.txt",
        "tagmanifest-sha512.txt",
    ] {
        assert!(bag.join(name).is_file(), "{name}");
    }
    assert!(bag.join("data/0=ocfl_1.1").is_file());
    let manifest = fs::read_to_string(bag.join("manifest-sha512.txt")).unwrap();
    assert!(
        manifest.lines().all(|l| l.contains("  data/")),
        "{manifest}"
    );

    // A flipped byte in a binary's content, in the bag: the bag is refused, naming the
    // file, and nothing is imported.
    let corrupt = out.path().join("corrupt");
    common::copy_tree(&bag, &corrupt);
    let content = find_content(&corrupt.join("data"), b"second bytes");
    flip_first_byte(&content);
    let target = tempfile::tempdir().unwrap();
    let (code, text) = import(&corrupt, target.path(), &[]);
    assert_eq!(code, 1, "{text}");
    let rel = content.strip_prefix(&corrupt).unwrap().to_str().unwrap();
    assert!(text.contains(rel), "the refusal names {rel}: {text}");
    assert!(
        fs::read_dir(target.path()).unwrap().next().is_none(),
        "a refused bag writes nothing into the data directory"
    );

    // The same without a bag: the inventory's digest catches it; that object is refused
    // and named, the others are imported.
    let plain = out.path().join("plain");
    common::copy_tree(&corrupt.join("data"), &plain);
    let target = tempfile::tempdir().unwrap();
    let (code, text) = import(&plain, target.path(), &[]);
    assert_eq!(code, 1, "{text}");
    let rel = content
        .strip_prefix(corrupt.join("data"))
        .unwrap()
        .to_str()
        .unwrap();
    assert!(text.contains(rel), "the refusal names {rel}: {text}");
    let object = content
        .ancestors()
        .find(|d| d.join("0=ocfl_object_1.1").is_file())
        .unwrap()
        .strip_prefix(corrupt.join("data"))
        .unwrap()
        .to_path_buf();
    assert!(!target.path().join("ocfl-root").join(&object).exists());
    for dir in objects(&plain) {
        let rel = dir.strip_prefix(&plain).unwrap();
        assert_eq!(
            target.path().join("ocfl-root").join(rel).is_dir(),
            rel != object,
            "{rel:?}: {text}"
        );
    }

    let target = tempfile::tempdir().unwrap();
    let (code, text) = import(&bag, target.path(), &[]);
    assert_eq!(code, 0, "{text}");
    assert_serves(target.path(), &before).await;

    // A flipped byte in the repository itself stops an export, naming the file, and
    // leaves no export behind.
    let stored = find_content(&data.path().join("ocfl-root"), b"second bytes");
    flip_first_byte(&stored);
    let again = out.path().join("again");
    let (code, text) = arca(&[&"export", &"/t", &"--to", &again, &"--data", &data.path()]);
    assert_eq!(code, 1, "{text}");
    let rel = stored.strip_prefix(data.path().join("ocfl-root")).unwrap();
    assert!(
        text.contains(rel.to_str().unwrap()),
        "the export names {rel:?}: {text}"
    );
    assert!(!again.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_resource_is_refused_without_overwrite_and_an_interrupted_import_resumes() {
    let (data, before) = source().await;
    let out = tempfile::tempdir().unwrap();
    let to = out.path().join("export");
    export(data.path(), &to, false);

    // An import that stopped after some objects (it goes in the order of the ids, parents
    // first): a root with only the first three of them.
    let partial = out.path().join("partial");
    common::copy_tree(&to, &partial);
    let mut by_id: Vec<(String, PathBuf)> = objects(&partial)
        .into_iter()
        .map(|d| {
            let inv: serde_json::Value =
                serde_json::from_slice(&fs::read(d.join("inventory.json")).unwrap()).unwrap();
            (inv["id"].as_str().unwrap().to_string(), d)
        })
        .collect();
    by_id.sort();
    for (_, dir) in by_id.into_iter().skip(3) {
        fs::remove_dir_all(dir).unwrap();
    }
    let target = tempfile::tempdir().unwrap();
    let (code, text) = import(&partial, target.path(), &[]);
    assert_eq!(code, 0, "{text}");

    // Run again without --resume: those three exist, so they are refused and named,
    // and the rest is imported; nothing of the three changes.
    let root = target.path().join("ocfl-root");
    let kept: Vec<(PathBuf, Vec<u8>)> = objects(&root)
        .into_iter()
        .map(|d| {
            let inv = fs::read(d.join("inventory.json")).unwrap();
            (d, inv)
        })
        .collect();
    let (code, text) = import(&to, target.path(), &[]);
    assert_eq!(code, 1, "{text}");
    assert_eq!(text.matches("exists already").count(), 3, "{text}");
    assert!(text.contains("info:fedora/t"), "{text}");
    for (dir, inv) in &kept {
        assert_eq!(&fs::read(dir.join("inventory.json")).unwrap(), inv);
    }

    // --resume skips what is there identically.
    let (code, text) = import(&to, target.path(), &["--resume"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("7 already there and skipped"), "{text}");
    assert_serves(target.path(), &before).await;

    // --overwrite replaces them.
    let (code, text) = import(&to, target.path(), &["--overwrite"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("7 replaced"), "{text}");
    common::validate_with_ocfl_py(&root);
    assert_serves(target.path(), &before).await;
}

/// The files of every object of `root`, with their bytes.
fn root_files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    objects(root)
        .into_iter()
        .flat_map(|d| {
            common::relative_files(&d)
                .into_iter()
                .map(move |f| d.join(f))
                .collect::<Vec<_>>()
        })
        .map(|f| {
            let bytes = fs::read(&f).unwrap();
            (f, bytes)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_at_another_path_moves_every_version_with_its_ids_and_iris() {
    let (data, before) = source().await;
    let out = tempfile::tempdir().unwrap();
    let to = out.path().join("export");
    export(data.path(), &to, false);
    let target = tempfile::tempdir().unwrap();
    let root = target.path().join("ocfl-root");

    // A parent that does not exist is refused before anything is written.
    let (code, text) = import(&to, target.path(), &["--at", "/nowhere/t2"]);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("does not exist"), "{text}");
    assert_eq!(
        objects(&root).len(),
        1,
        "only the repository root's object: {text}"
    );

    let (code, text) = import(&to, target.path(), &["--at", "/moved/t2"]);
    assert_ne!(code, 0, "{text}");
    let arca_served = Arca::serve(target.path());
    let http = Http::new();
    send(
        &http,
        &arca_served.url("/moved"),
        Method::PUT,
        &[("content-type", "text/turtle")],
        "",
    )
    .await;
    arca_served.stop();
    let (code, text) = import(&to, target.path(), &["--at", "/moved/t2"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("imported 7 objects"), "{text}");
    common::validate_with_ocfl_py(&root);

    // Binary content is copied unchanged; the ids moved, and nothing names the old tree.
    let files = root_files(&root);
    for bytes in [&b"first bytes"[..], b"second bytes"] {
        assert!(files.values().any(|b| b == bytes));
    }
    for (file, bytes) in &files {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains("info:fedora/t/") && !text.contains("info:fedora/t\""),
            "{file:?} names the old tree: {text}"
        );
    }

    let arca = Arca::serve(target.path());
    let after = snapshot_at(&arca, "/moved/t2").await;
    let old = Http::new().get(&arca.url("/t"), &[]).await;
    arca.stop();
    assert_eq!(old.status, StatusCode::NOT_FOUND);
    assert_same_answers(&before, &after);

    // Onto resources that exist: refused, and nothing changes.
    let (code, text) = import(&to, target.path(), &["--at", "/moved/t2"]);
    assert_eq!(code, 1, "{text}");
    assert_eq!(text.matches("exists already").count(), 7, "{text}");
    assert_eq!(root_files(&root), files);

    // --overwrite replaces them with the same moved objects.
    let (code, text) = import(&to, target.path(), &["--at", "/moved/t2", "--overwrite"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("7 replaced"), "{text}");
    common::validate_with_ocfl_py(&root);
    let arca = Arca::serve(target.path());
    let again = snapshot_at(&arca, "/moved/t2").await;
    arca.stop();
    assert_same_answers(&before, &again);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fedora_6_opens_an_export_and_serves_its_versions() {
    let (data, before) = source().await;
    let out = tempfile::tempdir().unwrap();
    let to = out.path().join("export");
    export(data.path(), &to, false);
    // Fedora 6.1's ocfl-java knows OCFL 1.0 only (6.3 and later open 1.1 roots): a copy of
    // the export declared 1.0, as the other Fedora tests do with arca's roots.
    let for_fedora = out.path().join("for-fedora");
    common::copy_tree(&to, &for_fedora);
    common::fedora::declare_ocfl_1_0(&for_fedora);
    let Some(fedora) = Fedora::start_with(Some(&for_fedora), &[]).await else {
        return;
    };
    let http = Http::anonymous();
    let auth = ("authorization", AUTHORIZATION);
    let r = http
        .get(
            &format!("{}/t", fedora.base),
            &[auth, ("accept", "application/n-triples")],
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "{}\n{}",
        r.text(),
        fedora.log_tail()
    );
    assert!(r.text().contains("zweite Fassung"), "{}", r.text());
    let r = http.get(&format!("{}/t/bin", fedora.base), &[auth]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(&r.body[..], b"second bytes");
    let r = http.get(&format!("{}/t/gone", fedora.base), &[auth]).await;
    assert_eq!(r.status, StatusCode::GONE);
    for path in VERSIONED {
        let tm = format!("{}{path}/fcr:versions", fedora.base);
        let r = http
            .get(&tm, &[auth, ("accept", "application/link-format")])
            .await;
        assert_eq!(r.status, StatusCode::OK, "TimeMap of {path}: {}", r.text());
        let ours = before
            .keys()
            .filter(|k| k.starts_with(&format!("BASE{path}/fcr:versions/")))
            .count();
        // Fedora lists a memento once per version, so twice when two versions share a
        // second (fedora_compare.rs); arca once per second.
        let mementos: std::collections::BTreeSet<String> = r
            .text()
            .lines()
            .filter(|l| l.contains("rel=\"memento\""))
            .map(|l| l[1..l.find('>').unwrap()].to_string())
            .collect();
        assert_eq!(mementos.len(), ours, "mementos of {path}: {}", r.text());
        for m in mementos {
            let r = http.get(&m, &[auth]).await;
            assert_eq!(r.status, StatusCode::OK, "{m}: {}", r.text());
        }
    }
    let bins: Vec<&String> = before
        .keys()
        .filter(|k| k.starts_with("BASE/t/bin/fcr:versions/"))
        .collect();
    let first = bins[0].replace("BASE", &fedora.base);
    let r = http.get(&first, &[auth]).await;
    assert_eq!(&r.body[..], b"first bytes", "{first}");
}

/// The content file below `dir` holding exactly `bytes`.
fn find_content(dir: &Path, bytes: &[u8]) -> PathBuf {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                pending.push(p);
            } else if p.to_string_lossy().contains("/content/") && fs::read(&p).unwrap() == bytes {
                return p;
            }
        }
    }
    panic!("no content file holds {:?}", String::from_utf8_lossy(bytes));
}

fn flip_first_byte(path: &Path) {
    let mut bytes = fs::read(path).unwrap();
    bytes[0] ^= 0x01;
    fs::write(path, bytes).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_whose_header_names_a_resource_outside_it_is_refused() {
    let (data, _) = source().await;
    let out = tempfile::tempdir().unwrap();
    let to = out.path().join("export");
    export(data.path(), &to, false);
    // The object of /t/a/b made to claim /t/a in every version, its inventories and
    // sidecars made to match: only the ids are wrong.
    let dir = objects(&to)
        .into_iter()
        .find(|d| {
            fs::read_to_string(d.join("inventory.json"))
                .unwrap()
                .contains("\"id\":\"info:fedora/t/a/b\"")
        })
        .unwrap();
    let files: Vec<String> = common::relative_files(&dir).into_iter().collect();
    let mut digests = Vec::new();
    for rel in files
        .iter()
        .filter(|f| f.ends_with("content/.fcrepo/fcr-root.json"))
    {
        let path = dir.join(rel);
        let old = fs::read(&path).unwrap();
        let new = String::from_utf8(old.clone())
            .unwrap()
            .replace("\"id\":\"info:fedora/t/a/b\"", "\"id\":\"info:fedora/t/a\"");
        fs::write(&path, &new).unwrap();
        digests.push((sha512_hex(&old), sha512_hex(new.as_bytes())));
    }
    assert!(!digests.is_empty(), "{files:?}");
    for rel in files.iter().filter(|f| f.ends_with("inventory.json")) {
        let path = dir.join(rel);
        let mut text = fs::read_to_string(&path).unwrap();
        for (old, new) in &digests {
            text = text.replace(old.as_str(), new);
        }
        fs::write(&path, &text).unwrap();
        fs::write(
            path.with_file_name("inventory.json.sha512"),
            format!("{}  inventory.json\n", sha512_hex(text.as_bytes())),
        )
        .unwrap();
    }
    let target = tempfile::tempdir().unwrap();
    let (code, text) = import(&to, target.path(), &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("header of info:fedora/t/a in object info:fedora/t/a/b, outside it"),
        "{text}"
    );
    let rel = dir.strip_prefix(&to).unwrap();
    assert!(!target.path().join("ocfl-root").join(rel).exists());
}
