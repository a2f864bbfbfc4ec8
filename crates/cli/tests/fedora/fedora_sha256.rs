//! sha256 objects between arca and the real Fedora 6.1, both ways, in one Fedora run.
//!
//! arca writes a mixed root: sha512 objects, then (restarted with
//! `digest_algorithm = "sha256"`) sha256 objects: containers with triples and references, a
//! binary description, a binary large enough to be streamed, an Archival Group with a part,
//! a tombstone, and a new version of a sha512 object. Fedora, configured with
//! `fcrepo.persistence.defaultDigestAlgorithm=sha256`, opens a copy of that root (it rebuilds
//! its index from it) and must serve every resource as arca did: same statuses, same bytes
//! and `Digest`s, same triples, and a successful `fcr:fixity`. Fedora then writes: a new
//! version of an arca-written sha512 binary (which must stay sha512: ocfl-java keeps an
//! object's algorithm, whatever its setting), a new version of a sha256 one, and new
//! sha256 objects of its own, whose files must have the shape of arca's sha256 objects.
//! Every object is validated with ocfl-py, and arca, opening Fedora's root in turn, serves
//! what Fedora wrote and adds a version to a Fedora-created sha256 object.
//!
//! Fedora 6.1.0's ocfl-java (1.x) knows OCFL 1.0 only and refuses to open a root declared
//! `0=ocfl_1.1` ("Unable to map string 'ocfl_1.1' to a known OCFL version"), which is what
//! arca writes (as Fedora ≥ 6.3 does). Its copy of arca's root is therefore declared 1.0
//! first ([`declare_ocfl_1_0`]: root and object declarations, inventory `type`, sidecars);
//! nothing else changes, so everything about digests is still arca's.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use bytes::Bytes;
use hyper::{Method, StatusCode};
use serde_json::Value;

use crate::common;
use crate::common::fedora::{declare_ocfl_1_0, Fedora, AUTHORIZATION};
use crate::common::{digest_hex, object_dir, Arca, Http};

const NT: &str = "application/n-triples";
const DC: &str = "http://purl.org/dc/terms/";
const LINK_BINARY: &str = "<http://www.w3.org/ns/ldp#NonRDFSource>; rel=\"type\"";
const LINK_AG: &str = "<http://fedora.info/definitions/v4/repository#ArchivalGroup>; rel=\"type\"";
/// Larger than what arca keeps in memory while receiving it.
const LARGE: usize = (1 << 20) + 12_345;

/// One write of arca's: (run, method, path, content type, extra header, body).
type Write = (
    u8,
    Method,
    &'static str,
    &'static str,
    Option<(&'static str, &'static str)>,
    Vec<u8>,
);

/// What arca writes, in two runs. `{B}` in a body stands for the server's base URL.
fn writes() -> Vec<Write> {
    let ttl = "text/turtle";
    let large: Vec<u8> = (0..LARGE as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    vec![
        // Run 1: sha512 objects.
        (
            1,
            Method::PUT,
            "/old",
            ttl,
            None,
            format!("<> <{DC}title> \"old\" .").into_bytes(),
        ),
        (
            1,
            Method::PUT,
            "/old/bin",
            "text/plain",
            Some(("link", LINK_BINARY)),
            b"old bytes".to_vec(),
        ),
        // Run 2: sha256 objects, and changes of sha512 ones.
        (
            2,
            Method::PUT,
            "/c",
            ttl,
            None,
            format!("<> <{DC}title> \"c\" ; <{DC}relation> <{{B}}/old> .").into_bytes(),
        ),
        (
            2,
            Method::PUT,
            "/c/small",
            "text/plain",
            Some(("link", LINK_BINARY)),
            b"small bytes".to_vec(),
        ),
        (
            2,
            Method::PUT,
            "/c/large",
            "application/octet-stream",
            Some(("link", LINK_BINARY)),
            large,
        ),
        (
            2,
            Method::PATCH,
            "/c/small/fcr:metadata",
            "application/sparql-update",
            None,
            format!("INSERT DATA {{ <> <{DC}title> \"small\" }}").into_bytes(),
        ),
        (2, Method::PUT, "/c/gone", ttl, None, Vec::new()),
        (2, Method::DELETE, "/c/gone", "", None, Vec::new()),
        (
            2,
            Method::PUT,
            "/ag",
            ttl,
            Some(("link", LINK_AG)),
            format!("<> <{DC}title> \"ag\" .").into_bytes(),
        ),
        (
            2,
            Method::PUT,
            "/ag/part",
            "text/plain",
            Some(("link", LINK_BINARY)),
            b"part bytes".to_vec(),
        ),
        (
            2,
            Method::PATCH,
            "/old",
            "application/sparql-update",
            None,
            format!("INSERT DATA {{ <> <{DC}description> \"still sha512\" }}").into_bytes(),
        ),
    ]
}

/// The resources compared, and whether each is a binary.
const READS: &[(&str, bool)] = &[
    ("/old", false),
    ("/old/bin", true),
    ("/old/bin/fcr:metadata", false),
    ("/c", false),
    ("/c/small", true),
    ("/c/small/fcr:metadata", false),
    ("/c/large", true),
    ("/c/gone", false),
    ("/ag", false),
    ("/ag/part", true),
    ("/ag/part/fcr:metadata", false),
];

/// A server: its base URL and whether it wants Fedora's credentials.
struct Server<'a> {
    base: &'a str,
    auth: bool,
    http: &'a Http,
}

impl Server<'_> {
    async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> common::Reply {
        let mut h = headers.to_vec();
        if self.auth {
            h.push(("authorization", AUTHORIZATION));
        }
        let url = format!("{}{path}", self.base);
        self.http.request(method, &url, &h, Bytes::from(body)).await
    }

    /// What a client sees of `path`: status, then for a binary its bytes' digest and the
    /// `Digest` answer to `Want-Digest`, for an RDF source its triples (base replaced,
    /// blank nodes and the repository root's own statements aside).
    async fn read(&self, path: &str, binary: bool) -> Vec<String> {
        if binary {
            let r = self
                .send(
                    Method::GET,
                    path,
                    &[("want-digest", "sha-256, sha-512")],
                    Vec::new(),
                )
                .await;
            let mut out = vec![format!("status {}", r.status.as_u16())];
            if r.status.is_success() {
                out.push(format!("bytes {}", digest_hex("sha256", &r.body)));
                let mut digests: Vec<String> = r
                    .header("digest")
                    .unwrap_or_default()
                    .split(',')
                    .map(|d| d.trim().to_ascii_lowercase())
                    .collect();
                digests.sort();
                out.push(format!("digest {}", digests.join(", ")));
            }
            return out;
        }
        let r = self
            .send(Method::GET, path, &[("accept", NT)], Vec::new())
            .await;
        let mut out = vec![format!("status {}", r.status.as_u16())];
        if r.status.is_success() {
            let triples: BTreeSet<String> = r
                .text()
                .lines()
                .map(|l| l.trim().replace(self.base, "B"))
                .filter(|l| !l.is_empty() && !l.contains("_:"))
                // Fedora 7's PREMIS 3 statements on a description: arca's, not Fedora 6.1's.
                .filter(|l| !l.contains("<http://www.loc.gov/premis/rdf/v3/"))
                // Fedora 7's `fedora:hasParent` (fcrepo #2102): arca states it, Fedora 6.1 not.
                .filter(|l| !l.contains("<http://fedora.info/definitions/v4/repository#hasParent>"))
                .collect();
            out.extend(triples);
        }
        out
    }
}

/// ocfl-py finds each object VALID (OCFL 1.0 or 1.1), warning at most W004 (sha256).
fn validate(objects: &[std::path::PathBuf]) {
    let Some(validator) = common::ocfl_validator() else {
        return;
    };
    let out = std::process::Command::new(&validator)
        .args(objects)
        .output()
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "ocfl-py: {report}");
    for dir in objects {
        let valid = |v: &str| format!("OCFL v{v} Object at {} is VALID", dir.display());
        assert!(
            report
                .lines()
                .any(|l| l == valid("1.0") || l == valid("1.1")),
            "ocfl-py: {report}"
        );
    }
    for line in report.lines().filter(|l| l.starts_with('[')) {
        assert!(line.starts_with("[W004]"), "ocfl-py: {report}");
    }
}

/// The inventory of object `id` in `root`.
fn inventory(root: &Path, id: &str) -> Value {
    serde_json::from_slice(&fs::read(object_dir(root, id).join("inventory.json")).unwrap()).unwrap()
}

/// The head header of the object root resource of `id`.
fn root_header(root: &Path, id: &str) -> Value {
    let inv = inventory(root, id);
    let head = inv["head"].as_str().unwrap();
    let (digest, _) = inv["versions"][head]["state"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, p)| {
            p.as_array()
                .unwrap()
                .iter()
                .any(|p| p == ".fcrepo/fcr-root.json")
        })
        .unwrap();
    let file = inv["manifest"][digest][0].as_str().unwrap();
    serde_json::from_slice(&fs::read(object_dir(root, id).join(file)).unwrap()).unwrap()
}

/// The files of object `id` with version directories named `vN`, the resource's name
/// `name` as `X`, and the object declaration without its OCFL version.
fn shape(root: &Path, id: &str, name: &str) -> BTreeSet<String> {
    common::relative_files(&object_dir(root, id))
        .into_iter()
        .map(|f| {
            if f.starts_with("0=ocfl_object_") {
                return "0=ocfl_object".to_string();
            }
            let mut parts: Vec<String> = f.split('/').map(|p| p.replace(name, "X")).collect();
            if parts[0].starts_with('v') && parts[0][1..].parse::<u32>().is_ok() {
                parts[0] = "vN".into();
            }
            parts.join("/")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fedora_and_arca_read_each_others_sha256_objects() {
    let data = tempfile::tempdir().unwrap();
    let http = Http::new();

    // arca writes the mixed root.
    let mut seen = BTreeMap::new();
    for run in [1u8, 2] {
        let algorithm = if run == 1 { "sha512" } else { "sha256" };
        let arca = Arca::serve_with(data.path(), &[("ARCA_DIGEST_ALGORITHM", algorithm)]);
        let a = Server {
            base: &arca.base,
            auth: false,
            http: &http,
        };
        for (r, method, path, ct, extra, body) in writes().into_iter().filter(|w| w.0 == run) {
            let body = String::from_utf8(body.clone())
                .map(|t| t.replace("{B}", &arca.base).into_bytes())
                .unwrap_or(body);
            let mut h: Vec<(&str, &str)> = extra.into_iter().collect();
            if !ct.is_empty() {
                h.push(("content-type", ct));
            }
            let reply = a.send(method.clone(), path, &h, body).await;
            assert!(
                reply.status.is_success(),
                "run {r}: {method} {path}: {} {}",
                reply.status,
                reply.text()
            );
        }
        if run == 2 {
            for (path, binary) in READS {
                seen.insert(*path, a.read(path, *binary).await);
            }
        }
        arca.stop();
    }
    let root = data.path().join("ocfl-root");
    for (id, algorithm) in [
        ("info:fedora", "sha512"),
        ("info:fedora/old", "sha512"),
        ("info:fedora/old/bin", "sha512"),
        ("info:fedora/c", "sha256"),
        ("info:fedora/c/small", "sha256"),
        ("info:fedora/c/large", "sha256"),
        ("info:fedora/c/gone", "sha256"),
        ("info:fedora/ag", "sha256"),
    ] {
        assert_eq!(inventory(&root, id)["digestAlgorithm"], algorithm, "{id}");
    }

    // Fedora opens a copy of it and serves the same.
    let for_fedora = tempfile::tempdir().unwrap();
    common::copy_tree(&root, for_fedora.path());
    declare_ocfl_1_0(for_fedora.path());
    let Some(mut fedora) = Fedora::start_with(
        Some(for_fedora.path()),
        &[("fcrepo.persistence.defaultDigestAlgorithm", "sha256")],
    )
    .await
    else {
        return;
    };
    eprintln!(
        "Fedora 6 answered on arca's root after {:.1?}",
        fedora.started_in
    );
    let f = Server {
        base: &fedora.base,
        auth: true,
        http: &http,
    };
    let mut diffs = Vec::new();
    for (path, binary) in READS {
        let theirs = f.read(path, *binary).await;
        if theirs != seen[path] {
            diffs.push(format!(
                "{path}:\n  arca:   {:?}\n  Fedora: {theirs:?}",
                seen[path]
            ));
        }
    }
    eprintln!(
        "Fedora serves arca's {} resources alike ({} lines compared), e.g. /c/large: {:?}, /c/small/fcr:metadata: {:?}",
        READS.len(),
        seen.values().map(Vec::len).sum::<usize>(),
        seen["/c/large"],
        seen["/c/small/fcr:metadata"]
    );
    assert!(
        diffs.is_empty(),
        "Fedora serves arca's root differently:\n{}\n{}",
        diffs.join("\n"),
        fedora.log_tail()
    );
    let r = f
        .send(
            Method::GET,
            "/c/large/fcr:fixity",
            &[("accept", NT)],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert!(
        r.text().contains("SUCCESS") && r.text().contains("urn:sha-256:"),
        "{}",
        r.text()
    );

    // Fedora writes into arca's objects and creates its own.
    let fedora_writes: [(&str, &str, Option<&str>, &[u8]); 4] = [
        ("/old/bin", "text/plain", None, b"fedora bytes"),
        ("/c/small", "text/plain", None, b"fedora small"),
        (
            "/c/fedora-bin",
            "text/plain",
            Some(LINK_BINARY),
            b"written by fedora",
        ),
        (
            "/fedora-c",
            "text/turtle",
            None,
            b"<> <http://purl.org/dc/terms/title> \"fedora\" .",
        ),
    ];
    for (path, ct, link, body) in fedora_writes {
        let mut h = vec![("content-type", ct)];
        if let Some(l) = link {
            h.push(("link", l));
        }
        let r = f.send(Method::PUT, path, &h, body.to_vec()).await;
        assert!(
            r.status.is_success(),
            "Fedora PUT {path}: {} {}",
            r.status,
            r.text()
        );
    }
    fedora.stop();
    let theirs = fedora.ocfl_root();
    for (id, algorithm) in [
        ("info:fedora/old/bin", "sha512"),
        ("info:fedora/c/small", "sha256"),
        ("info:fedora/c/fedora-bin", "sha256"),
        ("info:fedora/fedora-c", "sha256"),
    ] {
        assert_eq!(
            inventory(&theirs, id)["digestAlgorithm"],
            algorithm,
            "{id} after Fedora's write"
        );
    }
    assert_eq!(
        inventory(&theirs, "info:fedora/old/bin")["head"],
        "v2",
        "Fedora's version of arca's sha512 object"
    );
    // A binary Fedora created with sha256 has the files and header digests arca's have.
    assert_eq!(
        shape(&theirs, "info:fedora/c/fedora-bin", "fedora-bin"),
        shape(&root, "info:fedora/c/small", "small")
    );
    for (r, id) in [
        (&theirs, "info:fedora/c/fedora-bin"),
        (&root, "info:fedora/c/small"),
    ] {
        let digests = root_header(r, id)["digests"].clone();
        let digests = digests.as_array().unwrap();
        assert_eq!(digests.len(), 1, "{id}: {digests:?}");
        assert!(
            digests[0].as_str().unwrap().starts_with("urn:sha-256:"),
            "{id}: {digests:?}"
        );
    }
    let ids = [
        "info:fedora",
        "info:fedora/old",
        "info:fedora/old/bin",
        "info:fedora/c",
        "info:fedora/c/small",
        "info:fedora/c/large",
        "info:fedora/c/gone",
        "info:fedora/ag",
        "info:fedora/c/fedora-bin",
        "info:fedora/fedora-c",
    ];
    validate(&ids.map(|id| object_dir(&theirs, id)));

    // arca opens Fedora's root, serves what Fedora wrote, and adds to a Fedora-made object.
    let back = tempfile::tempdir().unwrap();
    common::copy_tree(&theirs, &back.path().join("ocfl-root"));
    let arca = Arca::serve(back.path());
    let a = Server {
        base: &arca.base,
        auth: false,
        http: &http,
    };
    for (path, bytes) in [
        ("/old/bin", &b"fedora bytes"[..]),
        ("/c/small", b"fedora small"),
        ("/c/fedora-bin", b"written by fedora"),
    ] {
        let r = a
            .send(Method::GET, path, &[("want-digest", "sha-256")], Vec::new())
            .await;
        assert_eq!((r.status, &r.body[..]), (StatusCode::OK, bytes), "{path}");
        assert_eq!(
            r.header("digest"),
            Some(format!("sha-256={}", digest_hex("sha256", bytes)).as_str())
        );
    }
    let r = a
        .send(Method::GET, "/fedora-c", &[("accept", NT)], Vec::new())
        .await;
    assert!(r.text().contains("\"fedora\""), "{}", r.text());
    let r = a
        .send(
            Method::PUT,
            "/c/fedora-bin",
            &[("content-type", "text/plain")],
            b"arca again".to_vec(),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    arca.stop();
    let ours = back.path().join("ocfl-root");
    assert_eq!(
        inventory(&ours, "info:fedora/c/fedora-bin")["digestAlgorithm"],
        "sha256"
    );
    assert_eq!(
        root_header(&ours, "info:fedora/c/fedora-bin")["digests"],
        serde_json::json!([format!(
            "urn:sha-256:{}",
            digest_hex("sha256", b"arca again")
        )])
    );
    validate(&[object_dir(&ours, "info:fedora/c/fedora-bin")]);
}
