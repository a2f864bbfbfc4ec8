//! What arca writes is valid OCFL 1.1, checked by an independent validator.
//!
//! A representative set of Fedora API operations (containers with triples, binaries with
//! awkward names, replacement, PATCH, DELETE with tombstones, purge) goes through HTTP;
//! then every object is validated with ocfl-py (`ocfl-validate.py`, found via
//! `$OCFL_VALIDATE` or `PATH`; skipped with a message when missing unless
//! `ARCA_REQUIRE_VALIDATOR=1`), and the root is checked for what a per-object validator
//! cannot see: root files identical to ocfl-java's, no empty directories or stray files in
//! the hierarchy, sidecars and inventory copies, and a clean staging area. Both with
//! sha512 objects (the default) and with `digest_algorithm = "sha256"`.

use std::fs;

use arca_config::DigestAlgorithm as Setting;
use arca_testkit::TestServer;
use bytes::Bytes;
use hyper::{Method, StatusCode};

use crate::common;
use crate::common::{digest_hex, object_dir};

const TTL: &str = "text/turtle";
const OCTETS: &str = "application/octet-stream";
const SPARQL: &str = "application/sparql-update";

/// A name with a space and a percent sign: its content path must be percent-encoded as
/// ocfl-java's Linux mapper does (`a%20b%25c.bin`).
const ODD: &str = "a b%c.bin";
const ODD_URL: &str = "c1/a%20b%25c.bin";
const UNICODE_URL: &str = "c1/%C3%BCn%C3%AF+code~x.txt";

async fn call(
    s: &TestServer,
    method: Method,
    path: &str,
    content_type: Option<&str>,
    extra: &[(&str, &str)],
    body: impl Into<Bytes>,
    expect: StatusCode,
) {
    let mut headers: Vec<(&str, &str)> = extra.to_vec();
    if let Some(ct) = content_type {
        headers.push(("content-type", ct));
    }
    let r = s
        .request(method.clone(), &s.url(path), &headers, body)
        .await;
    assert_eq!(
        r.status,
        expect,
        "{method} {path}: unexpected status; body: {}",
        r.text()
    );
}

fn inventory(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(dir.join("inventory.json")).unwrap()).unwrap()
}

/// Logical path → digest of the head state.
fn head_state(inv: &serde_json::Value) -> std::collections::BTreeMap<String, String> {
    let head = inv["head"].as_str().unwrap();
    let mut out = std::collections::BTreeMap::new();
    for (digest, paths) in inv["versions"][head]["state"].as_object().unwrap() {
        for p in paths.as_array().unwrap() {
            out.insert(p.as_str().unwrap().to_string(), digest.clone());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_object_arca_writes_is_valid_ocfl() {
    write_and_validate(Setting::Sha512, "sha512").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sha256_object_arca_writes_is_valid_ocfl() {
    write_and_validate(Setting::Sha256, "sha256").await;
}

/// The operations, then the checks, with `setting` for new objects (`algorithm`, its OCFL
/// name: what every inventory must say).
async fn write_and_validate(setting: Setting, algorithm: &str) {
    let s = TestServer::start_with(None, |c| c.digest_algorithm = setting).await;
    let created = StatusCode::CREATED;
    let done = StatusCode::NO_CONTENT;

    // Containers with triples.
    call(
        &s,
        Method::PUT,
        "c1",
        Some(TTL),
        &[],
        "<> <http://purl.org/dc/terms/title> \"Container one\" ;\n   <http://purl.org/dc/terms/subject> <http://example.org/x> .",
        created,
    )
    .await;
    call(
        &s,
        Method::POST,
        "c1",
        Some(TTL),
        &[("slug", "child")],
        "<> <http://purl.org/dc/terms/title> \"A child\" .",
        created,
    )
    .await;

    // Binaries: odd names, unicode, empty, and one large enough to be streamed to a file.
    call(
        &s,
        Method::PUT,
        ODD_URL,
        Some(OCTETS),
        &[],
        "first",
        created,
    )
    .await;
    call(
        &s,
        Method::PUT,
        UNICODE_URL,
        Some("text/plain"),
        &[],
        "unicode name\n",
        created,
    )
    .await;
    call(
        &s,
        Method::PUT,
        "c1/empty.bin",
        Some(OCTETS),
        &[],
        "",
        created,
    )
    .await;
    let large: Vec<u8> = (0..1_572_864u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    call(
        &s,
        Method::PUT,
        "c1/large.bin",
        Some(OCTETS),
        &[],
        large.clone(),
        created,
    )
    .await;

    // Replace a binary twice, back to its first bytes (content is deduplicated).
    call(&s, Method::PUT, ODD_URL, Some(OCTETS), &[], "second", done).await;
    call(&s, Method::PUT, ODD_URL, Some(OCTETS), &[], "first", done).await;

    // PATCH a container and a binary description.
    call(
        &s,
        Method::PATCH,
        "c1",
        Some(SPARQL),
        &[],
        "INSERT DATA { <> <http://purl.org/dc/terms/description> \"patched\" }",
        done,
    )
    .await;
    call(
        &s,
        Method::PATCH,
        &format!("{ODD_URL}/fcr:metadata"),
        Some(SPARQL),
        &[],
        "INSERT DATA { <> <http://purl.org/dc/terms/title> \"odd\" }",
        done,
    )
    .await;

    // DELETE leaves tombstones: a binary, and a container.
    call(&s, Method::DELETE, "c1/empty.bin", None, &[], "", done).await;
    call(&s, Method::DELETE, "c1/child", None, &[], "", done).await;
    let r = s.get("c1/empty.bin", &[]).await;
    assert_eq!(r.status, StatusCode::GONE);

    // A tree that is deleted and then purged: both of its objects must leave no trace.
    call(&s, Method::PUT, "trash", Some(TTL), &[], "", created).await;
    call(
        &s,
        Method::PUT,
        "trash/t.bin",
        Some(OCTETS),
        &[],
        "t",
        created,
    )
    .await;
    call(&s, Method::DELETE, "trash", None, &[], "", done).await;
    call(
        &s,
        Method::DELETE,
        "trash/fcr:tombstone",
        None,
        &[],
        "",
        done,
    )
    .await;
    assert_eq!(s.get("trash", &[]).await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        s.get("trash/t.bin", &[]).await.status,
        StatusCode::NOT_FOUND
    );

    // What is live still reads back.
    let r = s.get(ODD_URL, &[]).await;
    assert_eq!((r.status, &r.body[..]), (StatusCode::OK, &b"first"[..]));
    let r = s.get("c1/large.bin", &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body == large, "large.bin reads back different bytes");

    let data = s.data().to_path_buf();
    let root = s.ocfl_root();
    let dir = s.stop().await.expect("temporary data directory");

    // Root files, hierarchy, sidecars, inventory copies, staging.
    common::assert_root_files_match_sample(&root);
    let objects = common::check_storage(&root);
    common::assert_staging_clean(&data);

    let live = [
        "info:fedora",
        "info:fedora/c1",
        "info:fedora/c1/child",
        "info:fedora/c1/a b%c.bin",
        "info:fedora/c1/ünï+code~x.txt",
        "info:fedora/c1/empty.bin",
        "info:fedora/c1/large.bin",
    ];
    let mut expected: Vec<_> = live.iter().map(|id| object_dir(&root, id)).collect();
    expected.sort();
    assert_eq!(objects, expected, "the objects in the root");
    for purged in ["info:fedora/trash", "info:fedora/trash/t.bin"] {
        let d = object_dir(&root, purged);
        assert!(!d.exists(), "purged object {purged} is still at {d:?}");
        assert!(
            !d.parent().unwrap().exists(),
            "purge left the empty parents of {purged}"
        );
    }

    // The odd name is percent-encoded in content paths, and its replaced bytes are
    // stored once: v3 reuses v1's content.
    let odd = object_dir(&root, "info:fedora/c1/a b%c.bin");
    assert!(odd.join("v1/content/a%20b%25c.bin").is_file());
    assert!(odd.join("v2/content/a%20b%25c.bin").is_file());
    assert!(
        !odd.join("v3/content/a%20b%25c.bin").exists(),
        "re-sent bytes must not be stored twice"
    );
    let inv = inventory(&odd);
    let first = digest_hex(algorithm, b"first");
    assert_eq!(
        inv["manifest"][&first],
        serde_json::json!(["v1/content/a%20b%25c.bin"])
    );
    assert_eq!(
        inv["head"], "v4",
        "create, 2 replacements, description PATCH"
    );
    let state = head_state(&inv);
    assert_eq!(state[ODD], first);
    let header: serde_json::Value = serde_json::from_slice(
        &fs::read(
            odd.join(
                inv["manifest"][&state[".fcrepo/fcr-root.json"]][0]
                    .as_str()
                    .unwrap(),
            ),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(header["contentPath"], ODD, "headers keep the logical path");
    // No Content-Disposition was sent: an empty filename, as Fedora 6.1 stores it.
    assert_eq!(header["filename"], "");

    // A tombstone keeps its header (deleted) and drops the content from the state.
    let empty = inventory(&object_dir(&root, "info:fedora/c1/empty.bin"));
    let state = head_state(&empty);
    assert_eq!(
        state.keys().collect::<Vec<_>>(),
        [".fcrepo/fcr-root.json", ".fcrepo/fcr-root~fcr-desc.json"],
        "a tombstone's state holds its headers only"
    );

    // The large binary's bytes are in the object, unchanged.
    let large_dir = object_dir(&root, "info:fedora/c1/large.bin");
    assert_eq!(
        digest_hex(
            algorithm,
            &fs::read(large_dir.join("v1/content/large.bin")).unwrap()
        ),
        digest_hex(algorithm, &large)
    );
    for dir in &objects {
        assert_eq!(inventory(dir)["digestAlgorithm"], algorithm, "{dir:?}");
    }

    // The independent validator, object by object.
    if let Some(n) = common::validate_with_ocfl_py(&root) {
        assert_eq!(n, live.len());
    }
    drop(dir);
}
