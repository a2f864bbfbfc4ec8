//! A storage root written by Fedora 7.0.0 (`../shared/ocfl-fedora7-sample`): `arca rebuild`
//! builds the catalog of a copy of it; arca then serves it and writes into it (into a
//! Fedora 7 object, into its Archival Group, and new objects), and what arca writes is valid
//! OCFL (ocfl-py) with `.fcrepo` headers shaped as Fedora 7's (same keys in the same order,
//! `headersVersion` 1.0), which is what Fedora 7's storage library reads. The serving itself
//! is checked resource by resource in arca-http's `fedora7_root` tests.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use arca_testkit::TestServer;
use hyper::{Method, StatusCode};
use serde_json::Value;

use crate::common;
use crate::common::object_dir;

/// The Fedora 7 sample's root.
fn fedora7_root() -> PathBuf {
    arca_testkit::shared().join("ocfl-fedora7-sample/root")
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap_or_else(|e| panic!("{path:?}: {e}")))
        .unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// The bytes of logical path `logical` in the head version of the object in `dir`.
fn head_file(dir: &Path, logical: &str) -> Vec<u8> {
    let inv = json(&dir.join("inventory.json"));
    let head = inv["head"].as_str().unwrap();
    let (digest, _) = inv["versions"][head]["state"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, paths)| paths.as_array().unwrap().iter().any(|p| p == logical))
        .unwrap_or_else(|| panic!("{}: no {logical} in {head}", dir.display()));
    fs::read(dir.join(inv["manifest"][digest][0].as_str().unwrap())).unwrap()
}

/// The header of `logical` (`.fcrepo/…json`) in the object's head version.
fn header(dir: &Path, logical: &str) -> Value {
    serde_json::from_slice(&head_file(dir, logical)).unwrap()
}

/// Header keys in order.
fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arca_rebuilds_serves_and_extends_a_fedora_7_root() {
    let data = tempfile::tempdir().unwrap();
    let root = data.path().join("ocfl-root");
    common::copy_tree(&fedora7_root(), &root);
    let objects = common::object_dirs(&root).len();
    assert_eq!(objects, 14, "the sample's objects (INDEX.tsv)");

    // `arca rebuild` builds the catalog from Fedora's root alone.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arca"));
    cmd.arg("rebuild").arg("--data").arg(data.path());
    common::scrub_env(&mut cmd);
    let out = cmd.output().expect("arca rebuild runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "arca rebuild failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains(&format!("{objects} objects, ")) && stdout.contains(" 0 failed"),
        "unexpected rebuild summary:\n{stdout}\n{stderr}"
    );

    let s = TestServer::start_at(data.path()).await;
    let nt = [("accept", "application/n-triples")];
    let r = s.get("sample/books/b1", &nt).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert!(r.text().contains("\"First book, revised\""), "{}", r.text());
    assert_eq!(s.get("sample/gone", &[]).await.status, StatusCode::GONE);

    // Writes: into a Fedora 7 container object, a binary into it (an object of its own),
    // a new binary in the Archival Group (into the AG's object), and a new container.
    let send = |m: Method, path: &str, ct: &'static str, body: &'static [u8]| {
        let url = s.url(path);
        let s = &s;
        async move { s.request(m, &url, &[("content-type", ct)], body).await }
    };
    let r = send(
        Method::PATCH,
        "sample/books/b1",
        "application/sparql-update",
        b"INSERT DATA { <> <http://purl.org/dc/terms/description> \"by arca\" }",
    )
    .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    let r = send(
        Method::PUT,
        "sample/books/b1/arca.txt",
        "text/plain",
        b"from arca\n",
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let r = send(
        Method::PUT,
        "sample/ag/part/arca%20file.bin",
        "application/octet-stream",
        b"AG",
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let r = send(
        Method::PUT,
        "sample/arca",
        "text/turtle",
        b"<> <http://purl.org/dc/terms/title> \"arca\" .",
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let r = s.get("sample/ag/part/arca%20file.bin", &[]).await;
    assert_eq!(&r.body[..], b"AG");
    let r = s.get("sample/ag/part/data%20file.bin", &[]).await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "Fedora's AG binary is still served"
    );
    s.stop().await;

    let b1 = object_dir(&root, "info:fedora/sample/books/b1");
    let ag = object_dir(&root, "info:fedora/sample/ag");
    let new_bin = object_dir(&root, "info:fedora/sample/books/b1/arca.txt");
    let new_c = object_dir(&root, "info:fedora/sample/arca");
    for dir in [&b1, &ag, &new_bin, &new_c] {
        common::check_object(&root, dir);
    }
    assert_eq!(json(&b1.join("inventory.json"))["head"], "v5");
    // The AG's new version keeps Fedora's files.
    let inv = json(&ag.join("inventory.json"));
    assert_eq!(inv["head"], "v4");
    assert_eq!(head_file(&ag, "part/arca file.bin"), b"AG");
    // Content paths percent-encoded as Fedora 7's (ocfl-java's Linux mapper): a space is %20.
    let manifest: Vec<&str> = inv["manifest"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|p| p.as_array().unwrap().iter().map(|p| p.as_str().unwrap()))
        .collect();
    assert!(
        manifest.contains(&"v4/content/part/arca%20file.bin"),
        "{manifest:?}"
    );
    assert!(manifest.contains(&"v3/content/part/data%20file.bin"));
    assert!(!head_file(&ag, "part/data file.bin").is_empty());

    // The headers arca wrote have Fedora 7's keys in Fedora 7's order, for each kind.
    let sample = fedora7_root();
    let theirs_container = header(
        &object_dir(&sample, "info:fedora/sample/books/b2"),
        ".fcrepo/fcr-root.json",
    );
    let theirs_binary = header(
        &object_dir(&sample, "info:fedora/sample/x"),
        ".fcrepo/fcr-root.json",
    );
    let theirs_desc = header(
        &object_dir(&sample, "info:fedora/sample/x"),
        ".fcrepo/fcr-root~fcr-desc.json",
    );
    let theirs_ag_binary = header(
        &object_dir(&sample, "info:fedora/sample/ag"),
        ".fcrepo/part/data file.bin.json",
    );
    for (what, ours, theirs) in [
        (
            "a container",
            header(&new_c, ".fcrepo/fcr-root.json"),
            &theirs_container,
        ),
        (
            "b1, updated",
            header(&b1, ".fcrepo/fcr-root.json"),
            &theirs_container,
        ),
        (
            "a binary",
            header(&new_bin, ".fcrepo/fcr-root.json"),
            &theirs_binary,
        ),
        (
            "a description",
            header(&new_bin, ".fcrepo/fcr-root~fcr-desc.json"),
            &theirs_desc,
        ),
        (
            "a binary in an AG",
            header(&ag, ".fcrepo/part/arca file.bin.json"),
            &theirs_ag_binary,
        ),
    ] {
        assert_eq!(keys(&ours), keys(theirs), "{what}: header keys and order");
        assert_eq!(ours["headersVersion"], "1.0", "{what}");
        assert_eq!(
            ours["interactionModel"], theirs["interactionModel"],
            "{what}"
        );
        assert_eq!(ours["objectRoot"], theirs["objectRoot"], "{what}");
    }
    common::assert_staging_clean(data.path());
    if let Some(n) = common::validate_objects_with_ocfl_py(&[b1, ag, new_bin, new_c]) {
        assert_eq!(n, 4);
    }
}
