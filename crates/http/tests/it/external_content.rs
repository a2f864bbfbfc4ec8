//! External content (Fedora API §3.9): `Link: <URL>; rel="…#ExternalContent"; handling=…`
//! on POST and PUT, with `copy`, `redirect` and `proxy`, against a real HTTP server started
//! in the test and real files, under an allow-list. Answers and storage follow what Fedora
//! 6.1 does (captured from a running Fedora; see the comments).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::common::*;
use arca_testkit::{Reply, TestServer};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::Method;
use sha2::{Digest, Sha256, Sha512};

const EXT: &str = "http://fedora.info/definitions/fcrepo#ExternalContent";
const DATA: &[u8] = b"hello external world\n";

/// A tiny remote server: `/data.txt` (text/plain, byte ranges), `/norange.bin` (ignores
/// ranges, no media type), `/missing` (404), `/error` (500), `/moved` (302 to a host outside
/// the allow-list).
fn remote_app() -> axum::Router {
    fn ranged(h: &HeaderMap, bytes: &'static [u8], honour: bool) -> Response {
        let range = h
            .get("range")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("bytes="))
            .and_then(|v| v.split_once('-'))
            .and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?)));
        match range {
            Some((a, b)) if honour => (
                StatusCode::PARTIAL_CONTENT,
                [
                    ("content-type", "text/plain".to_string()),
                    ("content-range", format!("bytes {a}-{b}/{}", bytes.len())),
                ],
                &bytes[a..=b],
            )
                .into_response(),
            _ if honour => ([("content-type", "text/plain")], bytes).into_response(),
            _ => {
                let mut r = bytes.into_response();
                r.headers_mut().remove("content-type");
                r
            }
        }
    }
    axum::Router::new()
        .route(
            "/data.txt",
            get(|h: HeaderMap| async move { ranged(&h, DATA, true) }),
        )
        .route(
            "/norange.bin",
            get(|h: HeaderMap| async move { ranged(&h, DATA, false) }),
        )
        .route("/missing", get(|| async { StatusCode::NOT_FOUND }))
        .route(
            "/error",
            get(|| async { StatusCode::INTERNAL_SERVER_ERROR }),
        )
        .route(
            "/moved",
            get(|| async { (StatusCode::FOUND, [("location", OUTSIDE)]) }),
        )
}

/// A host no allow-list in these tests admits.
const OUTSIDE: &str = "http://127.0.0.2:9/data.txt";

/// [`remote_app`] over plain http.
async fn remote() -> SocketAddr {
    let app = remote_app();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// A port nobody listens on.
async fn closed_port() -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap().port()
}

struct Setup {
    s: TestServer,
    remote: SocketAddr,
    /// Allowed directory of files (`file://…/allowed/`).
    files: PathBuf,
    /// A directory outside the allow-list.
    outside: PathBuf,
    _dir: tempfile::TempDir,
}

impl Setup {
    fn http(&self, path: &str) -> String {
        format!("http://{}/{path}", self.remote)
    }

    fn file(&self, name: &str) -> String {
        format!("file://{}/{name}", self.files.display())
    }

    /// How a `file:` URL is stored and answered (`Content-Location`), as Fedora 6 does:
    /// `file:/abs/path`.
    fn stored_file(&self, name: &str) -> String {
        format!("file:{}/{name}", self.files.display())
    }
}

/// A server whose allow-list admits the remote server, a closed port and one directory.
async fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("allowed");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(files.join("hello.txt"), DATA).unwrap();
    std::fs::write(outside.join("secret.txt"), b"secret").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), files.join("escape.txt")).unwrap();
    let remote = remote().await;
    let closed = closed_port().await;
    let list = dir.path().join("allowed.txt");
    std::fs::write(
        &list,
        format!(
            "# test allow-list\nhttp://{remote}/\nhttp://127.0.0.1:{closed}/\nfile://{}/\nhttps://{remote}/\n",
            files.display()
        ),
    )
    .unwrap();
    let s = TestServer::start_with(None, |c| c.external_content_allowed = Some(list)).await;
    Setup {
        s,
        remote,
        files,
        outside,
        _dir: dir,
    }
}

fn link(url: &str, handling: &str) -> String {
    format!("<{url}>; rel=\"{EXT}\"; handling=\"{handling}\"")
}

fn hex<D: Digest>(bytes: &[u8]) -> String {
    hex::encode(D::digest(bytes))
}

/// Where layout 0004 puts an object (computed here independently of arca's code).
fn object_dir(root: &Path, ocfl_id: &str) -> PathBuf {
    let hex = hex::encode(Sha256::digest(ocfl_id.as_bytes()));
    root.join(&hex[0..3])
        .join(&hex[3..6])
        .join(&hex[6..9])
        .join(&hex)
}

/// The `.fcrepo/fcr-root.json` of the object of resource `id` (head version).
fn root_header(s: &TestServer, id: &str) -> serde_json::Value {
    let dir = object_dir(&s.ocfl_root(), &format!("info:fedora/{id}"));
    serde_json::from_slice(&std::fs::read(dir.join("inventory.json")).unwrap())
        .map(|inv: serde_json::Value| {
            let head = inv["head"].as_str().unwrap().to_string();
            let state = inv["versions"][&head]["state"].as_object().unwrap().clone();
            let digest = state
                .iter()
                .find(|(_, p)| p[0] == ".fcrepo/fcr-root.json")
                .map(|(d, _)| d.clone())
                .unwrap();
            let path = inv["manifest"][&digest][0].as_str().unwrap().to_string();
            serde_json::from_slice(&std::fs::read(dir.join(path)).unwrap()).unwrap()
        })
        .unwrap()
}

/// Logical paths of the head state of resource `id`'s object.
fn head_paths(s: &TestServer, id: &str) -> Vec<String> {
    let dir = object_dir(&s.ocfl_root(), &format!("info:fedora/{id}"));
    let inv: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("inventory.json")).unwrap()).unwrap();
    let head = inv["head"].as_str().unwrap();
    let mut out: Vec<String> = inv["versions"][head]["state"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|p| {
            p.as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
        })
        .collect();
    out.sort();
    out
}

fn object_exists(s: &TestServer, id: &str) -> bool {
    object_dir(&s.ocfl_root(), &format!("info:fedora/{id}")).exists()
}

/// Asserts a refused request: status, constrainedBy, a message containing `says`, nothing
/// stored.
async fn assert_refused(s: &TestServer, r: &Reply, id: &str, status: u16, says: &str) {
    assert_eq!(r.status, status, "{id}: {}", r.text());
    assert!(
        r.text().contains(says),
        "{id}: message {:?} lacks {says:?}",
        r.text()
    );
    if status == 400 {
        assert_constrained_by(s, r).await;
    }
    assert_eq!(s.get(id, &[]).await.status, 404, "{id} was created");
    assert!(!object_exists(s, id), "{id} has an OCFL object");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_9_without_an_allow_list_every_request_is_refused() {
    let s = TestServer::start().await;
    let l = link("http://127.0.0.1:1/x", "copy");
    let r = put(&s, "x", &[("link", &l)], "").await;
    assert_refused(&s, &r, "x", 400, "no allow-list").await;
    // 3.9.1: no Accept-External-Content-Handling when it is not supported.
    assert!(options(&s, "")
        .await
        .header("accept-external-content-handling")
        .is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_9_1_accept_external_content_handling_on_get_head_options() {
    let t = setup().await;
    let s = &t.s;
    binary(s, "b", "text/plain", b"x").await;
    // Fedora 6 sends it on GET, HEAD and OPTIONS of containers, binaries and descriptions.
    for path in ["", "b", "b/fcr:metadata"] {
        let o = options(s, path).await;
        assert_eq!(
            o.header("accept-external-content-handling"),
            Some("copy,redirect,proxy"),
            "OPTIONS {path}"
        );
        let g = s.get(path, &[]).await;
        assert_eq!(
            g.header("accept-external-content-handling"),
            Some("copy,redirect,proxy"),
            "GET {path}"
        );
        let h = head(s, path, &[]).await;
        assert_eq!(
            h.header("accept-external-content-handling"),
            Some("copy,redirect,proxy"),
            "HEAD {path}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_9_copy_from_http_stores_the_bytes_as_an_upload() {
    let t = setup().await;
    let s = &t.s;
    let l = link(&t.http("data.txt"), "copy");
    // The body is ignored, as Fedora does.
    let r = post(
        s,
        "",
        &[("link", &l), ("slug", "c"), ("content-type", "text/csv")],
        "BODY",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    // No Content-Location: a copy is an ordinary binary.
    assert!(r.header("content-location").is_none());
    let g = s.get("c", &[]).await;
    assert_eq!(g.status, 200);
    assert_eq!(&g.body[..], DATA);
    // Without a type attribute the remote Content-Type is used (the request's is ignored).
    assert_eq!(g.header("content-type"), Some("text/plain"));
    assert!(g.header("content-location").is_none());
    // Stored like any upload: a content file, its SHA-512, no external fields.
    let h = root_header(s, "c");
    assert_eq!(h["contentSize"], DATA.len());
    assert_eq!(
        h["digests"][0],
        format!("urn:sha-512:{}", hex::<Sha512>(DATA))
    );
    assert_eq!(h["contentPath"], "c");
    assert!(h.get("externalUrl").is_none() && h.get("externalHandling").is_none());
    assert!(head_paths(s, "c").contains(&"c".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_9_copy_from_a_file_with_type_and_digest() {
    let t = setup().await;
    let s = &t.s;
    let l = format!("{}; type=\"image/png\"", link(&t.file("hello.txt"), "copy"));
    let want = format!("sha-256={}", hex::<Sha256>(DATA));
    let r = put(
        s,
        "f",
        &[
            ("link", &l),
            ("content-type", "text/plain"),
            ("digest", &want),
        ],
        "",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let g = s.get("f", &[]).await;
    assert_eq!(&g.body[..], DATA);
    // 3.9: the type attribute wins over Content-Type.
    assert_eq!(g.header("content-type"), Some("image/png"));
    // A mismatching Digest: 409 as for an upload (Fedora 6 answers 409 too), nothing stored.
    let bad = format!("sha-256={}", "0".repeat(64));
    let r = put(
        s,
        "f2",
        &[
            ("link", &link(&t.file("hello.txt"), "copy")),
            ("digest", &bad),
        ],
        "",
    )
    .await;
    assert_refused(s, &r, "f2", 409, "mismatch").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_9_3_redirect_answers_307_with_location() {
    let t = setup().await;
    let s = &t.s;
    let url = t.http("data.txt");
    let r = put(s, "r", &[("link", &link(&url, "redirect"))], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    // Fedora 6 sends Content-Location with the URL on the 201.
    assert_eq!(r.header("content-location"), Some(url.as_str()));
    for method in [Method::GET, Method::HEAD] {
        let g = s
            .request(method.clone(), &s.url("r"), &[], Vec::new())
            .await;
        assert_eq!(g.status, 307, "{method}");
        assert_eq!(g.header("location"), Some(url.as_str()));
        assert_eq!(g.header("content-location"), Some(url.as_str()));
        assert_eq!(g.header("content-type"), Some("text/plain"));
        assert_eq!(
            g.header("accept-external-content-handling"),
            Some("copy,redirect,proxy")
        );
        assert!(g.body.is_empty());
    }
    // Stored as Fedora 6 stores it: URL and handling, the remote size, no digests, no
    // content file or content path.
    let h = root_header(s, "r");
    assert_eq!(h["externalUrl"], url);
    assert_eq!(h["externalHandling"], "redirect");
    assert_eq!(h["contentSize"], DATA.len());
    assert_eq!(h["digests"], serde_json::json!([]));
    assert_eq!(h["mimeType"], "text/plain");
    assert!(h.get("contentPath").is_none());
    assert_eq!(
        head_paths(s, "r"),
        [
            ".fcrepo/fcr-root.json",
            ".fcrepo/fcr-root~fcr-desc.json",
            "r~fcr-desc.nt"
        ]
    );
    // The description gives size and media type, no digest (Fedora records none).
    let d = graph(s, "r/fcr:metadata", &[]).await;
    let subject = s.url("r");
    assert_eq!(d.objects(&subject, &format!("{PREMIS}hasSize")).len(), 1);
    assert!(d
        .objects(&subject, &format!("{PREMIS}hasMessageDigest"))
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_9_3_want_digest_is_answered_for_redirect_and_proxy() {
    let t = setup().await;
    let s = &t.s;
    let r = put(
        s,
        "r",
        &[("link", &link(&t.http("data.txt"), "redirect"))],
        "",
    )
    .await;
    assert_eq!(r.status, 201);
    let r = put(
        s,
        "p",
        &[("link", &link(&t.file("hello.txt"), "proxy"))],
        "",
    )
    .await;
    assert_eq!(r.status, 201);
    for path in ["r", "p"] {
        for method in [Method::GET, Method::HEAD] {
            let g = s
                .request(
                    method.clone(),
                    &s.url(path),
                    &[("want-digest", "sha-256, md5")],
                    Vec::new(),
                )
                .await;
            assert_eq!(
                g.header("digest").unwrap(),
                format!(
                    "sha-256={}, md5={}",
                    hex::<Sha256>(DATA),
                    hex::<md5::Md5>(DATA)
                ),
                "{method} {path}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_9_proxy_streams_the_remote_bytes_with_ranges() {
    let t = setup().await;
    let s = &t.s;
    let cases = [
        ("ph", t.http("data.txt"), t.http("data.txt")),
        ("pn", t.http("norange.bin"), t.http("norange.bin")),
        ("pf", t.file("hello.txt"), t.stored_file("hello.txt")),
    ];
    for (id, url, stored) in &cases {
        let r = put(s, id, &[("link", &link(url, "proxy"))], "").await;
        assert_eq!(r.status, 201, "{id}: {}", r.text());
        assert_eq!(r.header("content-location"), Some(stored.as_str()));
        let g = s.get(id, &[]).await;
        assert_eq!(g.status, 200, "{id}");
        assert_eq!(&g.body[..], DATA, "{id}");
        assert_eq!(g.header("content-location"), Some(stored.as_str()));
        let g = s.get(id, &[("range", "bytes=6-13")]).await;
        assert_eq!(g.status, 206, "{id}");
        assert_eq!(&g.body[..], b"external", "{id}");
        assert_eq!(g.header("content-range"), Some("bytes 6-13/21"), "{id}");
        let h = head(s, id, &[]).await;
        assert_eq!(h.header("content-length"), Some("21"), "{id}");
        assert!(h.body.is_empty());
        let g = s.get(id, &[("range", "bytes=50-60")]).await;
        assert_eq!(g.status, 416, "{id}");
    }
    // Media types: remote Content-Type for http, application/octet-stream for files and
    // for remotes that send none (Fedora 6's default).
    assert_eq!(
        s.get("ph", &[]).await.header("content-type"),
        Some("text/plain")
    );
    assert_eq!(
        s.get("pn", &[]).await.header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(
        s.get("pf", &[]).await.header("content-type"),
        Some("application/octet-stream")
    );
    // fcr:fixity on content kept as a URL: as in Fedora 6, SUCCESS with the size, no digest.
    let f = graph(s, "pf/fcr:fixity", &[]).await;
    assert_eq!(
        f.with_predicate(&format!("{PREMIS}hasEventOutcome")).len(),
        1
    );
    assert!(f
        .in_namespace(PREMIS)
        .iter()
        .any(|t| t.object.to_string() == "\"SUCCESS\""));
    assert!(f
        .with_predicate(&format!("{PREMIS}hasMessageDigest"))
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_9_replace_switches_between_stored_and_external_content() {
    let t = setup().await;
    let s = &t.s;
    binary(s, "b", "text/csv", b"a,b").await;
    let url = t.http("data.txt");
    let r = put(s, "b", &[("link", &link(&url, "proxy"))], "").await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(r.header("content-location"), Some(url.as_str()));
    assert_eq!(&s.get("b", &[]).await.body[..], DATA);
    // The old content file left the state (Fedora 6 keeps it there; it is no longer the
    // resource's content).
    assert!(!head_paths(s, "b").contains(&"b".to_string()));
    assert_eq!(root_header(s, "b")["externalHandling"], "proxy");
    // And back to an upload.
    let r = put_bytes(s, "b", &[("content-type", "text/csv")], b"x,y,z").await;
    assert_eq!(r.status, 204);
    let g = s.get("b", &[]).await;
    assert_eq!(&g.body[..], b"x,y,z");
    assert!(g.header("content-location").is_none());
    let h = root_header(s, "b");
    assert!(h.get("externalUrl").is_none() && h.get("externalHandling").is_none());
    assert_eq!(h["contentPath"], "b");
    // External content cannot replace an RDF source.
    container(s, "c").await;
    let r = put(s, "c", &[("link", &link(&url, "copy"))], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_9_malformed_links_are_400_with_constrained_by() {
    let t = setup().await;
    let s = &t.s;
    let url = t.http("data.txt");
    // More than one ExternalContent link (3.9-E), in one header or two.
    let two = format!("{}, {}", link(&url, "copy"), link(&url, "proxy"));
    let r = put(s, "e1", &[("link", &two)], "").await;
    assert_refused(s, &r, "e1", 400, "at most one").await;
    let r = s
        .request(
            Method::PUT,
            &s.url("e1"),
            &[("link", &link(&url, "copy")), ("link", &link(&url, "copy"))],
            Vec::new(),
        )
        .await;
    assert_refused(s, &r, "e1", 400, "at most one").await;
    // Missing and unknown handling.
    let r = put(s, "e2", &[("link", &format!("<{url}>; rel=\"{EXT}\""))], "").await;
    assert_refused(s, &r, "e2", 400, "no handling").await;
    let r = put(s, "e3", &[("link", &link(&url, "bogus"))], "").await;
    assert_refused(s, &r, "e3", 400, "not supported").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_9_bad_locations_are_refused_and_nothing_is_stored() {
    let t = setup().await;
    let s = &t.s;
    let closed = {
        // The allow-list admits this closed port (see setup); find it there.
        let list = std::fs::read_to_string(t._dir.path().join("allowed.txt")).unwrap();
        list.lines().nth(2).unwrap().to_string()
    };
    let outside = format!("file://{}/secret.txt", t.outside.display());
    let escape = format!("file://{}/../outside/secret.txt", t.files.display());
    let cases: Vec<(&str, String, &str, &str)> = vec![
        (
            "off1",
            "http://127.0.0.2:9/x".into(),
            "copy",
            "not under any allowed",
        ),
        ("off2", outside, "proxy", "not under any allowed"),
        ("dots", escape, "proxy", "'..'"),
        ("link", t.file("escape.txt"), "proxy", "outside the allowed"),
        ("nofile", t.file("none.txt"), "copy", "does not exist"),
        ("nofile2", t.file("none.txt"), "redirect", "does not exist"),
        ("e404", t.http("missing"), "copy", "404"),
        ("e404r", t.http("missing"), "redirect", "404"),
        ("e500", t.http("error"), "proxy", "500"),
        ("down", format!("{closed}x"), "copy", "cannot be reached"),
        ("down2", format!("{closed}x"), "proxy", "cannot be reached"),
        (
            "tls",
            format!("https://{}/data.txt", t.remote),
            "copy",
            "cannot be reached",
        ),
        ("ftp", "ftp://example.org/x".into(), "copy", "not an http"),
        ("moved", t.http("moved"), "copy", "302"),
        ("movedr", t.http("moved"), "redirect", "302"),
    ];
    for (id, url, handling, says) in cases {
        let r = put(s, id, &[("link", &link(&url, handling))], "").await;
        assert_refused(s, &r, id, 400, says).await;
    }
    // POST too.
    let r = post(
        s,
        "",
        &[
            ("link", &link(&t.http("missing"), "copy")),
            ("slug", "viapost"),
        ],
        "",
    )
    .await;
    assert_refused(s, &r, "viapost", 400, "404").await;
    // A refused replacement leaves the binary as it was (no new version).
    binary(s, "b", "text/plain", b"kept").await;
    let r = put(s, "b", &[("link", &link(&t.http("error"), "copy"))], "").await;
    assert_eq!(r.status, 400);
    assert_eq!(&s.get("b", &[]).await.body[..], b"kept");
    let dir = object_dir(&s.ocfl_root(), "info:fedora/b");
    assert!(!dir.join("v2").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_9_a_file_changed_into_a_link_out_is_not_proxied() {
    let t = setup().await;
    let s = &t.s;
    let target = t.files.join("later.txt");
    std::fs::write(&target, DATA).unwrap();
    let r = put(
        s,
        "p",
        &[("link", &link(&t.file("later.txt"), "proxy"))],
        "",
    )
    .await;
    assert_eq!(r.status, 201);
    // The file becomes a symbolic link leaving the allowed directory: reads are refused.
    std::fs::remove_file(&target).unwrap();
    std::os::unix::fs::symlink(t.outside.join("secret.txt"), &target).unwrap();
    let g = s.get("p", &[]).await;
    assert_eq!(g.status, 502, "{}", g.text());
    assert!(!g.text().contains("secret"));
}

/// A certificate authority made with the `openssl` CLI, and a certificate it signed for
/// `127.0.0.1`: the CA as PEM (for `external_content_ca_file`), the server's certificate
/// and PKCS#8 key as DER.
struct Pki {
    ca_pem: PathBuf,
    cert: Vec<u8>,
    key: Vec<u8>,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl CLI runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn pki(dir: &Path, name: &str) -> Pki {
    let dir = dir.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let ca_subj = format!("/CN=arca test CA {name}");
    let mut ca = vec!["req", "-x509"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        &ca_subj,
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign",
    ]);
    openssl(&dir, &ca);
    let mut req = vec!["req"];
    req.extend(ec);
    req.extend([
        "-keyout",
        "srv.key",
        "-out",
        "srv.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    openssl(&dir, &req);
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        &dir,
        &[
            "x509",
            "-req",
            "-in",
            "srv.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-outform",
            "DER",
            "-out",
            "srv.der",
        ],
    );
    openssl(
        &dir,
        &[
            "pkcs8",
            "-topk8",
            "-nocrypt",
            "-in",
            "srv.key",
            "-outform",
            "DER",
            "-out",
            "srv.key.der",
        ],
    );
    Pki {
        ca_pem: dir.join("ca.pem"),
        cert: std::fs::read(dir.join("srv.der")).unwrap(),
        key: std::fs::read(dir.join("srv.key.der")).unwrap(),
    }
}

/// [`remote_app`] over https (rustls) with `pki`'s certificate.
async fn tls_remote(pki: &Pki) -> SocketAddr {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(pki.cert.clone())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pki.key.clone())),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = remote_app();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, app) = (acceptor.clone(), app.clone());
            tokio::spawn(async move {
                // A client that refuses the certificate ends the handshake: not an error here.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper_util::service::TowerToHyperService::new(app);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    addr
}

/// A TCP server that accepts connections and never answers (a TLS handshake that hangs).
async fn silent_remote() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((tcp, _)) = listener.accept().await {
            held.push(tcp);
        }
    });
    addr
}

/// An https remote whose CA the server trusts (`external_content_ca_file`), one signed by a
/// CA it does not know, and one that never completes a handshake, all allowed.
struct TlsSetup {
    s: TestServer,
    trusted: SocketAddr,
    untrusted: SocketAddr,
    silent: SocketAddr,
    _dir: tempfile::TempDir,
}

async fn tls_setup() -> TlsSetup {
    let dir = tempfile::tempdir().unwrap();
    let good = pki(dir.path(), "good");
    let rogue = pki(dir.path(), "rogue");
    let trusted = tls_remote(&good).await;
    let untrusted = tls_remote(&rogue).await;
    let silent = silent_remote().await;
    let list = dir.path().join("allowed.txt");
    std::fs::write(
        &list,
        format!("https://{trusted}/\nhttps://{untrusted}/\nhttps://{silent}/\n"),
    )
    .unwrap();
    let ca = good.ca_pem.clone();
    let s = TestServer::start_with(None, move |c| {
        c.external_content_allowed = Some(list);
        c.external_content_ca_file = Some(ca);
    })
    .await;
    TlsSetup {
        s,
        trusted,
        untrusted,
        silent,
        _dir: dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_9_https_copy_proxy_and_redirect_through_a_trusted_ca() {
    let t = tls_setup().await;
    let s = &t.s;
    let url = format!("https://{}/data.txt", t.trusted);
    // copy: the bytes are stored, the remote media type used.
    let r = put(s, "hc", &[("link", &link(&url, "copy"))], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let g = s.get("hc", &[]).await;
    assert_eq!(&g.body[..], DATA);
    assert_eq!(g.header("content-type"), Some("text/plain"));
    assert_eq!(
        root_header(s, "hc")["digests"][0],
        format!("urn:sha-512:{}", hex::<Sha512>(DATA))
    );
    // proxy: the URL is stored, its size read over https; GET streams it, ranges too.
    let r = put(s, "hp", &[("link", &link(&url, "proxy"))], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(root_header(s, "hp")["contentSize"], DATA.len());
    let g = s.get("hp", &[]).await;
    assert_eq!(g.status, 200);
    assert_eq!(&g.body[..], DATA);
    let g = s.get("hp", &[("range", "bytes=6-13")]).await;
    assert_eq!(g.status, 206);
    assert_eq!(&g.body[..], b"external");
    let g = s.get("hp", &[("want-digest", "sha-256")]).await;
    assert_eq!(
        g.header("digest"),
        Some(format!("sha-256={}", hex::<Sha256>(DATA)).as_str())
    );
    // redirect: 307 to the https URL.
    let r = put(s, "hr", &[("link", &link(&url, "redirect"))], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let g = s.get("hr", &[]).await;
    assert_eq!(g.status, 307);
    assert_eq!(g.header("location"), Some(url.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_9_https_untrusted_certificates_redirects_out_and_hung_handshakes_are_refused() {
    let t = tls_setup().await;
    let s = &t.s;
    let cases = [
        (
            "rogue",
            format!("https://{}/data.txt", t.untrusted),
            "copy",
            "TLS certificate is not accepted",
        ),
        (
            "rogue2",
            format!("https://{}/data.txt", t.untrusted),
            "proxy",
            "external_content_ca_file",
        ),
        (
            "moved",
            format!("https://{}/moved", t.trusted),
            "copy",
            "302",
        ),
        (
            "moved2",
            format!("https://{}/moved", t.trusted),
            "proxy",
            "302",
        ),
    ];
    for (id, url, handling, says) in cases {
        let r = put(s, id, &[("link", &link(&url, handling))], "").await;
        assert_refused(s, &r, id, 400, says).await;
    }
    // A handshake that never completes is given up after the connect limit (10s), well
    // within the request's time.
    let started = std::time::Instant::now();
    let url = format!("https://{}/data.txt", t.silent);
    let r = put(s, "hung", &[("link", &link(&url, "copy"))], "").await;
    assert_refused(s, &r, "hung", 400, "TLS handshake").await;
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    // A refused https replacement leaves the binary as it was.
    let good = format!("https://{}/data.txt", t.trusted);
    let r = put(s, "p", &[("link", &link(&good, "proxy"))], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = put(
        s,
        "p",
        &[(
            "link",
            &link(&format!("https://{}/data.txt", t.untrusted), "proxy"),
        )],
        "",
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(&s.get("p", &[]).await.body[..], DATA);
}
