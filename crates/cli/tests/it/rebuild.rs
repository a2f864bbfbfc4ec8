//! The catalog is a cache of storage: with `catalog.sqlite*` deleted, (a) `arca rebuild`
//! recreates it, and (b) `arca serve` recreates it on its own; either way the server then
//! answers every GET as before (status, triples, binary bytes, children, tombstones).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;

use bytes::Bytes;
use hyper::{Method, StatusCode};

use crate::common;
use crate::common::{sha512_hex, Arca, Http};
use arca_testkit::next_second;

/// Resources whose GET results are compared, as paths below the REST root.
const PATHS: &[&str] = &[
    "",
    "/c1",
    "/c2",
    "/c1/child",
    "/c1/a%20b%25.bin",
    "/c1/a%20b%25.bin/fcr:metadata",
    "/c1/large.bin",
    "/c1/large.bin/fcr:metadata",
    "/c1/gone.bin",
    "/c1/gone.bin/fcr:metadata",
    "/t1",
    "/t1/x",
    "/p1",
    "/never",
    "/dc",
    "/dc/m1",
    "/dc/m2",
    "/ic",
    "/ic/proxy",
];

/// Resources whose inbound references are compared too.
const INBOUND_PATHS: &[&str] = &["/c1", "/c2"];

async fn call(
    http: &Http,
    arca: &Arca,
    method: Method,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Bytes>,
    expect: StatusCode,
) {
    let mut headers = vec![];
    if let Some(ct) = content_type {
        headers.push(("content-type", ct));
    }
    let r = http
        .request(method.clone(), &arca.url(path), &headers, body)
        .await;
    assert_eq!(r.status, expect, "{method} {path}: {}", r.text());
}

async fn create_content(arca: &Arca) {
    let http = Http::new();
    let (created, done) = (StatusCode::CREATED, StatusCode::NO_CONTENT);
    let ttl = Some("text/turtle");
    let octets = Some("application/octet-stream");
    let sparql = Some("application/sparql-update");
    // Purged first: gone for good. (A purge leaves no trace in storage, so it must not be
    // the last change of a container's children for Last-Modified to be derivable.)
    call(&http, arca, Method::PUT, "/p1", ttl, "", created).await;
    call(&http, arca, Method::DELETE, "/p1", None, "", done).await;
    call(
        &http,
        arca,
        Method::DELETE,
        "/p1/fcr:tombstone",
        None,
        "",
        done,
    )
    .await;
    call(&http, arca, Method::PUT, "/c2", ttl, "", created).await;
    // A reference to another resource is stored as an internal id and served as a URL.
    call(
        &http,
        arca,
        Method::PUT,
        "/c1",
        ttl,
        "<> <http://purl.org/dc/terms/title> \"One\" ; <http://purl.org/dc/terms/relation> <c2> .",
        created,
    )
    .await;
    call(
        &http,
        arca,
        Method::PATCH,
        "/c1",
        sparql,
        "INSERT DATA { <> <http://purl.org/dc/terms/description> \"patched\" }",
        done,
    )
    .await;
    // From here on, the containers' own headers stay as they are and only their children
    // change, in a later second: their Last-Modified must come from the children.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let r = http
        .request(
            Method::POST,
            &arca.url("/c1"),
            &[("slug", "child"), ("content-type", "text/turtle")],
            "<> <http://purl.org/dc/terms/title> \"Child\" .",
        )
        .await;
    assert_eq!(r.status, created);
    let odd = "/c1/a%20b%25.bin";
    call(
        &http,
        arca,
        Method::PUT,
        odd,
        Some("text/plain"),
        "bytes one",
        created,
    )
    .await;
    call(
        &http,
        arca,
        Method::PUT,
        odd,
        Some("text/plain"),
        "bytes two",
        done,
    )
    .await;
    let large: Vec<u8> = (0..1_500_000u32).map(|i| (i % 251) as u8).collect();
    call(
        &http,
        arca,
        Method::PUT,
        "/c1/large.bin",
        octets,
        large,
        created,
    )
    .await;
    call(
        &http,
        arca,
        Method::PATCH,
        &format!("{odd}/fcr:metadata"),
        sparql,
        "INSERT DATA { <> <http://purl.org/dc/terms/title> \"described\" }",
        done,
    )
    .await;
    // Tombstones: a binary, and a container with a child.
    call(
        &http,
        arca,
        Method::PUT,
        "/c1/gone.bin",
        octets,
        "x",
        created,
    )
    .await;
    call(&http, arca, Method::DELETE, "/c1/gone.bin", None, "", done).await;
    call(&http, arca, Method::PUT, "/t1", ttl, "", created).await;
    call(&http, arca, Method::PUT, "/t1/x", ttl, "", created).await;
    call(&http, arca, Method::DELETE, "/t1", None, "", done).await;
    // A direct container whose members show on /c2, one of them deleted, and an indirect
    // container whose proxy names /c1: membership and references are derived rows.
    let ldp = "http://www.w3.org/ns/ldp#";
    for (path, model, body) in [
        (
            "/dc",
            "DirectContainer",
            format!(
                "<> <{ldp}membershipResource> <{}> ; <{ldp}hasMemberRelation> <http://purl.org/dc/terms/hasPart> .",
                arca.url("/c2")
            ),
        ),
        (
            "/ic",
            "IndirectContainer",
            format!(
                "<> <{ldp}insertedContentRelation> <http://www.openarchives.org/ore/terms/proxyFor> ."
            ),
        ),
    ] {
        let link = format!("<{ldp}{model}>; rel=\"type\"");
        let r = http
            .request(
                Method::PUT,
                &arca.url(path),
                &[("content-type", "text/turtle"), ("link", link.as_str())],
                body,
            )
            .await;
        assert_eq!(r.status, created, "PUT {path}: {}", r.text());
    }
    call(&http, arca, Method::PUT, "/dc/m1", ttl, "", created).await;
    call(&http, arca, Method::PUT, "/dc/m2", octets, "m2", created).await;
    call(&http, arca, Method::PUT, "/dc/gone", ttl, "", created).await;
    call(&http, arca, Method::DELETE, "/dc/gone", None, "", done).await;
    let proxy = format!(
        "<> <http://www.openarchives.org/ore/terms/proxyFor> <{}> .",
        arca.url("/c1")
    );
    call(&http, arca, Method::PUT, "/ic/proxy", ttl, proxy, created).await;
    // A binary proxy: its description names the member (and moves the listing clock).
    call(&http, arca, Method::PUT, "/ic/bp", octets, "bp", created).await;
    let update = format!(
        "INSERT DATA {{ <> <http://www.openarchives.org/ore/terms/proxyFor> <{}> }}",
        arca.url("/c2")
    );
    call(
        &http,
        arca,
        Method::PATCH,
        "/ic/bp/fcr:metadata",
        sparql,
        update,
        done,
    )
    .await;
}

/// What a client sees of each resource, with the server's base URL replaced by `BASE`.
async fn snapshot(arca: &Arca) -> BTreeMap<String, Vec<String>> {
    let http = Http::new();
    let mut out = BTreeMap::new();
    for path in PATHS {
        let r = http
            .get(&arca.url(path), &[("accept", "application/n-triples")])
            .await;
        let norm = |s: &str| s.replace(&arca.base, "BASE");
        let mut seen = vec![format!("status {}", r.status)];
        if r.status == StatusCode::OK {
            let ct = r.header("content-type").unwrap_or_default().to_string();
            seen.push(format!("content-type {ct}"));
            let mut links: Vec<String> = r
                .header_all("link")
                .split(',')
                .map(|l| norm(l.trim()))
                .collect();
            links.sort();
            seen.push(format!("link {}", links.join(", ")));
            if ct.starts_with("application/n-triples") {
                let mut lines: Vec<String> = r.text().lines().map(norm).collect();
                lines.sort();
                seen.extend(lines);
            } else {
                seen.push(format!("sha512 {}", sha512_hex(&r.body)));
            }
            // Validators: a client's cached copy must stay valid, and only valid.
            seen.push(format!("etag {}", r.header("etag").unwrap_or_default()));
            seen.push(format!(
                "last-modified {}",
                r.header("last-modified").unwrap_or_default()
            ));
        }
        out.insert(path.to_string(), seen);
    }
    let inbound =
        "return=representation; include=\"http://fedora.info/definitions/fcrepo#PreferInboundReferences\"";
    for path in INBOUND_PATHS {
        let r = http
            .get(
                &arca.url(path),
                &[("accept", "application/n-triples"), ("prefer", inbound)],
            )
            .await;
        let mut lines: Vec<String> = r
            .text()
            .lines()
            .map(|l| l.replace(&arca.base, "BASE"))
            .collect();
        lines.sort();
        out.insert(format!("inbound {path}"), lines);
    }
    out
}

fn delete_catalog(data: &Path) {
    let mut deleted = 0;
    for e in fs::read_dir(data).unwrap() {
        let e = e.unwrap();
        if e.file_name()
            .to_string_lossy()
            .starts_with("catalog.sqlite")
        {
            fs::remove_file(e.path()).unwrap();
            deleted += 1;
        }
    }
    assert!(deleted > 0, "there was no catalog to delete");
}

fn assert_same(
    what: &str,
    before: &BTreeMap<String, Vec<String>>,
    after: &BTreeMap<String, Vec<String>>,
) {
    for (path, seen) in before {
        assert_eq!(
            &after[path], seen,
            "{what}: GET {path:?} answers differently after the catalog was rebuilt"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_is_rebuilt_from_storage() {
    rebuild_from_storage("sha512").await;
}

/// The same for a root of sha256 objects; `arca rebuild` is given no setting (it reads
/// each object as its inventory says).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_of_a_sha256_root_is_rebuilt_from_storage() {
    let data = rebuild_from_storage("sha256").await;
    for dir in common::object_dirs(&data.path().join("ocfl-root")) {
        assert!(dir.join("inventory.json.sha256").is_file(), "{dir:?}");
    }
}

/// Content written by a server whose new objects get `algorithm`, snapshot, catalog
/// deleted, rebuilt by `arca rebuild` and by `arca serve`, snapshot again. Returns the
/// data directory.
async fn rebuild_from_storage(algorithm: &str) -> tempfile::TempDir {
    let data = tempfile::tempdir().unwrap();
    let setting = [("ARCA_DIGEST_ALGORITHM", algorithm)];
    let arca = Arca::serve_with(data.path(), &setting);
    create_content(&arca).await;
    let before = snapshot(&arca).await;
    // The snapshot saw what was written.
    assert_eq!(before["/c1/gone.bin"], ["status 410 Gone"]);
    assert_eq!(before["/t1/x"], ["status 410 Gone"]);
    assert_eq!(before["/p1"], ["status 404 Not Found"]);
    assert!(before["/c1/a%20b%25.bin"].contains(&format!("sha512 {}", sha512_hex(b"bytes two"))));
    assert!(before["/c1"]
        .iter()
        .any(|l| l == "<BASE/c1> <http://purl.org/dc/terms/relation> <BASE/c2> ."));
    assert!(before["/c1"]
        .iter()
        .any(|l| l == "<BASE/c1> <http://www.w3.org/ns/ldp#contains> <BASE/c1/child> ."));
    for member in ["m1", "m2"] {
        let line = format!("<BASE/c2> <http://purl.org/dc/terms/hasPart> <BASE/dc/{member}> .");
        assert!(
            before["/c2"].contains(&line),
            "{line} in {:?}",
            before["/c2"]
        );
    }
    assert!(!before["/c2"].iter().any(|l| l.contains("BASE/dc/gone")));
    assert!(before["/ic"]
        .iter()
        .any(|l| l == "<BASE/ic> <http://www.w3.org/ns/ldp#member> <BASE/c1> ."));
    assert!(before["/ic"]
        .iter()
        .any(|l| l == "<BASE/ic> <http://www.w3.org/ns/ldp#member> <BASE/c2> ."));
    let reference = "<BASE/c1> <http://purl.org/dc/terms/relation> <BASE/c2> .".to_string();
    assert!(
        before["inbound /c2"].contains(&reference),
        "{:?}",
        before["inbound /c2"]
    );
    let proxy = "<BASE/ic/proxy> <http://www.openarchives.org/ore/terms/proxyFor> <BASE/c1> .";
    assert!(before["inbound /c1"].iter().any(|l| l == proxy));
    arca.stop();
    let objects = common::object_dirs(&data.path().join("ocfl-root")).len();

    // (a) `arca rebuild`.
    delete_catalog(data.path());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arca"));
    cmd.arg("rebuild").arg("--data").arg(data.path());
    common::scrub_env(&mut cmd);
    let out = cmd.output().expect("arca rebuild runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "arca rebuild failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let summary = format!(
        "rebuilt the catalog from {}: {objects} objects, ",
        data.path().join("ocfl-root").display()
    );
    assert!(
        stdout.contains(&summary) && stdout.contains(" resources, 0 failed"),
        "unexpected rebuild summary (expected {summary:?}…):\n{stdout}\n{stderr}"
    );
    assert!(data.path().join("catalog.sqlite").is_file());

    let arca = Arca::serve_with(data.path(), &setting);
    assert!(
        !arca.log().contains("rebuilding it from storage"),
        "the catalog `arca rebuild` made was not taken as complete:\n{}",
        arca.log()
    );
    assert_same("arca rebuild", &before, &snapshot(&arca).await);
    arca.stop();

    // (b) `arca serve` on a data directory without a catalog rebuilds it by itself.
    delete_catalog(data.path());
    let arca = Arca::serve_with(data.path(), &setting);
    assert!(
        arca.log().contains("rebuilding it from storage"),
        "arca serve did not rebuild the missing catalog:\n{}",
        arca.log()
    );
    assert_same("arca serve", &before, &snapshot(&arca).await);
    arca.stop();
    common::assert_staging_clean(data.path());
    common::check_storage(&data.path().join("ocfl-root"));
    data
}

/// Resources whose versions are compared across a rebuild.
const VERSIONED: &[&str] = &["/v", "/v/child", "/v/bin", "/v/bin/fcr:metadata"];

/// Writes versions: two seconds of updates of a container, a binary and its description, an
/// explicit version (`POST fcr:versions`) after a child was added in a later second.
async fn create_versions(arca: &Arca) {
    let http = Http::new();
    let (created, done) = (StatusCode::CREATED, StatusCode::NO_CONTENT);
    let ttl = Some("text/turtle");
    let title = |t: &str| format!("<> <http://purl.org/dc/terms/title> \"{t}\" .");
    // Start at the beginning of a second, so that the first writes usually share one.
    next_second().await;
    call(&http, arca, Method::PUT, "/v", ttl, title("one"), created).await;
    call(
        &http,
        arca,
        Method::PUT,
        "/v/bin",
        Some("text/plain"),
        "v1",
        created,
    )
    .await;
    next_second().await;
    call(&http, arca, Method::PUT, "/v", ttl, title("two"), done).await;
    call(
        &http,
        arca,
        Method::PUT,
        "/v/bin",
        Some("text/csv"),
        "version two",
        done,
    )
    .await;
    call(
        &http,
        arca,
        Method::PATCH,
        "/v/bin/fcr:metadata",
        Some("application/sparql-update"),
        "INSERT DATA { <> <http://purl.org/dc/terms/title> \"described\" }",
        done,
    )
    .await;
    // The child comes in a later second than the update of /v, whose memento (listing the
    // children at the end of its second) so lists the binary and not the child, however
    // the writes before fell.
    next_second().await;
    call(&http, arca, Method::PUT, "/v/child", ttl, "", created).await;
    call(
        &http,
        arca,
        Method::POST,
        "/v/fcr:versions",
        None,
        "",
        created,
    )
    .await;
}

/// What a client sees of the versions of [`VERSIONED`]: each TimeMap (link-format and
/// N-Triples) and every memento it lists (status, Memento-Datetime, Content-Type, body).
async fn versions_snapshot(arca: &Arca) -> BTreeMap<String, Vec<String>> {
    let http = Http::new();
    let norm = |s: &str| s.replace(&arca.base, "BASE");
    let sorted_lines = |s: &str| {
        let mut lines: Vec<String> = s.lines().map(norm).collect();
        lines.sort();
        lines
    };
    let mut out = BTreeMap::new();
    for path in VERSIONED {
        let tm = arca.url(&format!("{path}/fcr:versions"));
        let r = http
            .get(&tm, &[("accept", "application/link-format")])
            .await;
        assert_eq!(r.status, StatusCode::OK, "TimeMap of {path}: {}", r.text());
        let link_format = r.text();
        out.insert(format!("timemap {path}"), vec![norm(&link_format)]);
        let r = http.get(&tm, &[("accept", "application/n-triples")]).await;
        out.insert(format!("timemap rdf {path}"), sorted_lines(&r.text()));
        out.extend(common::memento_answers(&http, &link_format, &norm).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mementos_are_rebuilt_from_storage() {
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve(data.path());
    create_versions(&arca).await;
    let before = versions_snapshot(&arca).await;
    // The snapshot saw the versions: three mementos of /v (the first without the child, the
    // update's listing the binary and not the child, the last the child too), two of the
    // binary with their own bytes, one of the child.
    let v: Vec<&String> = before
        .keys()
        .filter(|k| k.starts_with("BASE/v/fcr:versions/"))
        .collect();
    assert!(v.len() >= 3, "{before:#?}");
    assert!(before[v[v.len() - 1]]
        .iter()
        .any(|l| l.contains("<http://www.w3.org/ns/ldp#contains> <BASE/v/child>")));
    assert!(!before[v[0]].iter().any(|l| l.contains("<BASE/v/child>")));
    assert!(!before[v[1]].iter().any(|l| l.contains("<BASE/v/child>")));
    assert!(before[v[1]]
        .iter()
        .any(|l| l.contains("<http://www.w3.org/ns/ldp#contains> <BASE/v/bin>")));
    let bins: Vec<&Vec<String>> = before
        .iter()
        .filter(|(k, _)| k.starts_with("BASE/v/bin/fcr:versions/"))
        .map(|(_, s)| s)
        .collect();
    assert!(bins.len() >= 2, "{before:#?}");
    assert!(bins[0].contains(&format!("sha512 {}", sha512_hex(b"v1"))));
    assert!(bins[bins.len() - 1].contains(&format!("sha512 {}", sha512_hex(b"version two"))));
    assert!(before
        .keys()
        .any(|k| k.starts_with("BASE/v/child/fcr:versions/")));
    arca.stop();

    // (a) `arca rebuild`.
    delete_catalog(data.path());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arca"));
    cmd.arg("rebuild").arg("--data").arg(data.path());
    common::scrub_env(&mut cmd);
    let out = cmd.output().expect("arca rebuild runs");
    assert!(
        out.status.success(),
        "arca rebuild failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let arca = Arca::serve(data.path());
    assert_eq!(versions_snapshot(&arca).await, before, "after arca rebuild");
    arca.stop();

    // (b) `arca serve` without a catalog.
    delete_catalog(data.path());
    let arca = Arca::serve(data.path());
    assert_eq!(
        versions_snapshot(&arca).await,
        before,
        "after arca serve rebuilt"
    );
    arca.stop();
}
