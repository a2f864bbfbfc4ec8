//! `digest_algorithm = "sha256"`: new OCFL objects use sha256 for their manifest, sidecars
//! and header digests (as Fedora 6 with `fcrepo.persistence.defaultDigestAlgorithm=sha256`);
//! an object keeps the algorithm it was created with after a restart with another setting;
//! `Want-Digest`, `Digest` and `fcr:fixity` answer for any algorithm a client names.

use std::path::{Path, PathBuf};

use crate::common::*;
use arca_config::DigestAlgorithm as Setting;
use arca_model::{DigestAlgorithm, MultiHasher};
use arca_testkit::TestServer;
use http::Method;

/// Larger than what the HTTP layer keeps in memory: streamed to a file while hashed.
const LARGE: usize = (1 << 20) + 4096;

async fn start(data: Option<&Path>, setting: Setting) -> TestServer {
    TestServer::start_with(data, |c| c.digest_algorithm = setting).await
}

fn hex(algorithm: DigestAlgorithm, bytes: &[u8]) -> String {
    MultiHasher::digest(algorithm, bytes)
}

fn urn(algorithm: DigestAlgorithm, bytes: &[u8]) -> String {
    format!("{}{}", algorithm.urn_prefix(), hex(algorithm, bytes))
}

/// The head inventory of the object of `ocfl_id`, as JSON.
fn inventory(s: &TestServer, ocfl_id: &str) -> serde_json::Value {
    let dir = object_dir(&s.ocfl_root(), ocfl_id);
    serde_json::from_slice(&std::fs::read(dir.join("inventory.json")).unwrap()).unwrap()
}

/// The header (`.fcrepo/…json`) a resource has in its object's head version, as JSON.
fn header(s: &TestServer, ocfl_id: &str, logical: &str) -> serde_json::Value {
    let dir = object_dir(&s.ocfl_root(), ocfl_id);
    let inv = inventory(s, ocfl_id);
    let head = inv["head"].as_str().unwrap();
    let (digest, _) = inv["versions"][head]["state"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, paths)| paths.as_array().unwrap().iter().any(|p| p == logical))
        .unwrap_or_else(|| panic!("{logical} not in {ocfl_id}"));
    let file = inv["manifest"][digest][0].as_str().unwrap();
    serde_json::from_slice(&std::fs::read(dir.join(file)).unwrap()).unwrap()
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
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

/// Every sidecar of the object is named for `algorithm`, and the manifest and state
/// digests have its length.
fn assert_object_uses(s: &TestServer, ocfl_id: &str, algorithm: DigestAlgorithm) {
    let inv = inventory(s, ocfl_id);
    assert_eq!(inv["digestAlgorithm"], algorithm.ocfl_name(), "{ocfl_id}");
    for digest in inv["manifest"].as_object().unwrap().keys() {
        assert_eq!(
            digest.len(),
            algorithm.byte_len() * 2,
            "{ocfl_id}: {digest}"
        );
    }
    let sidecars: Vec<String> = walk(&object_dir(&s.ocfl_root(), ocfl_id))
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("inventory.json."))
        .collect();
    assert!(!sidecars.is_empty());
    let expected = format!("inventory.json.{}", algorithm.ocfl_name());
    assert!(
        sidecars.iter().all(|n| *n == expected),
        "{ocfl_id}: {sidecars:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sha256_repository_writes_sha256_objects_and_answers_any_digest() {
    let s = start(None, Setting::Sha256).await;
    container(&s, "c").await;
    binary(&s, "c/small", "text/plain", b"small").await;
    let large = vec![7u8; LARGE];
    binary(&s, "c/large", "application/octet-stream", &large).await;
    for id in [
        "info:fedora",
        "info:fedora/c",
        "info:fedora/c/small",
        "info:fedora/c/large",
    ] {
        assert_object_uses(&s, id, DigestAlgorithm::Sha256);
    }
    // Header digests are the object's algorithm, for RDF sources and binaries alike.
    let c = header(&s, "info:fedora/c", ".fcrepo/fcr-root.json");
    assert!(
        c["digests"][0]
            .as_str()
            .unwrap()
            .starts_with("urn:sha-256:"),
        "{c}"
    );
    let h = header(&s, "info:fedora/c/large", ".fcrepo/fcr-root.json");
    assert_eq!(
        h["digests"],
        serde_json::json!([urn(DigestAlgorithm::Sha256, &large)])
    );
    let h = header(&s, "info:fedora/c/small", ".fcrepo/fcr-root.json");
    assert_eq!(
        h["digests"],
        serde_json::json!([urn(DigestAlgorithm::Sha256, b"small")])
    );

    // Want-Digest: the stored sha256, the others computed.
    let r = s
        .get("c/large", &[("want-digest", "sha-256, sha-512, md5")])
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("digest"),
        Some(
            format!(
                "sha-256={}, sha-512={}, md5={}",
                hex(DigestAlgorithm::Sha256, &large),
                hex(DigestAlgorithm::Sha512, &large),
                hex(DigestAlgorithm::Md5, &large)
            )
            .as_str()
        )
    );
    // fcr:fixity recomputes the stored sha256.
    let r = s
        .get("c/small/fcr:fixity", &[("accept", "application/n-triples")])
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.text().contains(&urn(DigestAlgorithm::Sha256, b"small")),
        "{}",
        r.text()
    );
    assert!(r.text().contains("SUCCESS"), "{}", r.text());

    // A client's sha-512 is verified and kept beside the object's sha256, as Fedora keeps
    // the client's digests and adds its own; a wrong one is refused.
    let body = vec![9u8; LARGE];
    let sent = format!("sha-512={}", hex(DigestAlgorithm::Sha512, &body));
    let r = put_bytes(
        &s,
        "c/checked",
        &[
            ("content-type", "application/octet-stream"),
            LINK_BINARY,
            ("digest", &sent),
        ],
        &body,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let h = header(&s, "info:fedora/c/checked", ".fcrepo/fcr-root.json");
    assert_eq!(
        h["digests"],
        serde_json::json!([
            urn(DigestAlgorithm::Sha256, &body),
            urn(DigestAlgorithm::Sha512, &body)
        ])
    );
    let wrong = format!("sha-256={}", hex(DigestAlgorithm::Sha256, b"other"));
    let r = put_bytes(
        &s,
        "c/wrong",
        &[
            ("content-type", "text/plain"),
            LINK_BINARY,
            ("digest", &wrong),
        ],
        b"bytes",
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(!object_dir(&s.ocfl_root(), "info:fedora/c/wrong").exists());
}

/// A repository started with sha512 and restarted with sha256: its objects keep sha512
/// (new versions, parts of an Archival Group, transactions), new objects get sha256.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn existing_objects_keep_their_algorithm_after_a_restart_with_another() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(Some(dir.path()), Setting::Sha512).await;
    container(&s, "c").await;
    binary(&s, "c/old", "text/plain", b"v1").await;
    let r = put(&s, "ag", &[TURTLE, LINK_AG], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    binary(&s, "ag/part", "text/plain", b"part").await;
    s.stop().await;

    let s = start(Some(dir.path()), Setting::Sha256).await;
    // A new version of an old binary, streamed (hashed with sha512, the object's).
    let large = vec![3u8; LARGE];
    let r = put_bytes(
        &s,
        "c/old",
        &[("content-type", "application/octet-stream")],
        &large,
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let h = header(&s, "info:fedora/c/old", ".fcrepo/fcr-root.json");
    assert_eq!(
        h["digests"],
        serde_json::json!([urn(DigestAlgorithm::Sha512, &large)])
    );
    // A new part of the old Archival Group: inside the group's sha512 object.
    binary(&s, "ag/new-part", "application/octet-stream", &large).await;
    let h = header(&s, "info:fedora/ag", ".fcrepo/new-part.json");
    assert_eq!(
        h["digests"],
        serde_json::json!([urn(DigestAlgorithm::Sha512, &large)])
    );
    // New objects: sha256.
    binary(&s, "c/new", "application/octet-stream", &large).await;
    container(&s, "d").await;
    // A transaction writing into an old object and creating a new one.
    let r = post(&s, "fcr:tx", &[], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let tx = r.header("location").unwrap().to_string();
    let inside = ("atomic-id", tx.as_str());
    let r = put_bytes(
        &s,
        "c/old",
        &[("content-type", "text/plain"), inside],
        b"in tx",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = put_bytes(
        &s,
        "d/in-tx",
        &[("content-type", "text/plain"), LINK_BINARY, inside],
        b"in tx",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = put_bytes(
        &s,
        "d/in-tx-large",
        &[
            ("content-type", "application/octet-stream"),
            LINK_BINARY,
            inside,
        ],
        &large,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = s.request(Method::PUT, &tx, &[], Vec::new()).await;
    assert_eq!(r.status, 204, "commit: {}", r.text());

    for (id, algorithm) in [
        ("info:fedora", DigestAlgorithm::Sha512),
        ("info:fedora/c", DigestAlgorithm::Sha512),
        ("info:fedora/c/old", DigestAlgorithm::Sha512),
        ("info:fedora/ag", DigestAlgorithm::Sha512),
        ("info:fedora/c/new", DigestAlgorithm::Sha256),
        ("info:fedora/d", DigestAlgorithm::Sha256),
        ("info:fedora/d/in-tx", DigestAlgorithm::Sha256),
        ("info:fedora/d/in-tx-large", DigestAlgorithm::Sha256),
    ] {
        assert_object_uses(&s, id, algorithm);
    }
    let h = header(&s, "info:fedora/c/old", ".fcrepo/fcr-root.json");
    assert_eq!(
        h["digests"],
        serde_json::json!([urn(DigestAlgorithm::Sha512, b"in tx")])
    );
    assert_eq!(s.get("c/old", &[]).await.body.as_ref(), b"in tx");
    let h = header(&s, "info:fedora/d/in-tx-large", ".fcrepo/fcr-root.json");
    assert_eq!(
        h["digests"],
        serde_json::json!([urn(DigestAlgorithm::Sha256, &large)])
    );
    // Each answers Want-Digest for both algorithms.
    for path in ["c/old", "c/new", "ag/new-part"] {
        let r = s.get(path, &[("want-digest", "sha-512, sha-256")]).await;
        let body = r.body.to_vec();
        assert_eq!(
            r.header("digest"),
            Some(
                format!(
                    "sha-512={}, sha-256={}",
                    hex(DigestAlgorithm::Sha512, &body),
                    hex(DigestAlgorithm::Sha256, &body)
                )
                .as_str()
            ),
            "{path}"
        );
    }
}
