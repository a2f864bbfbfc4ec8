//! External content on disk (Fedora API §3.9): what arca writes for copy, redirect and proxy
//! binaries is valid OCFL (ocfl-py) and comes back unchanged through `arca rebuild`; and
//! external binaries written by Fedora 6.1 (`tests/fixtures/fedora-external-root`, an
//! OCFL root Fedora wrote) are read as Fedora answers them.

use std::fs;
use std::path::Path;
use std::process::Command;

use arca_testkit::TestServer;
use hyper::Method;

use crate::common;

const EXT: &str = "http://fedora.info/definitions/fcrepo#ExternalContent";
const DATA: &[u8] = b"hello external world\n";

fn link(url: &str, handling: &str) -> String {
    format!("<{url}>; rel=\"{EXT}\"; handling=\"{handling}\"")
}

async fn start(data: &Path, list: &Path) -> TestServer {
    let list = list.to_path_buf();
    TestServer::start_with(Some(data), |c| c.external_content_allowed = Some(list)).await
}

/// What GET and HEAD answer about `path`: status, Location, Content-Location,
/// Content-Type, Content-Length and body.
async fn answers(s: &TestServer, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    for m in [Method::GET, Method::HEAD] {
        let r = s.request(m.clone(), &s.url(path), &[], Vec::new()).await;
        out.push(format!(
            "{m} {} loc={:?} cloc={:?} type={:?} len={:?} body={:?}",
            r.status,
            r.header("location"),
            r.header("content-location"),
            r.header("content-type"),
            r.header("content-length"),
            r.text()
        ));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arca_written_external_binaries_are_valid_ocfl_and_survive_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let files = dir.path().join("files");
    fs::create_dir_all(&files).unwrap();
    fs::write(files.join("hello.txt"), DATA).unwrap();
    let list = dir.path().join("allowed.txt");
    fs::write(&list, format!("file://{}/\n", files.display())).unwrap();
    let url = format!("file://{}/hello.txt", files.display());

    let s = start(&data, &list).await;
    let put = |path: &'static str, headers: Vec<(&'static str, String)>, body: &'static [u8]| {
        let s = &s;
        async move {
            let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let r = s
                .request(Method::PUT, &s.url(path), &h, body.to_vec())
                .await;
            assert!(
                r.status.is_success(),
                "PUT {path}: {} {}",
                r.status,
                r.text()
            );
        }
    };
    put("copy", vec![("link", link(&url, "copy"))], b"").await;
    put("redirect", vec![("link", link(&url, "redirect"))], b"").await;
    put("proxy", vec![("link", link(&url, "proxy"))], b"").await;
    // Stored, then external; external, then stored.
    put("to-ext", vec![("content-type", "text/csv".into())], b"a,b").await;
    put("to-ext", vec![("link", link(&url, "proxy"))], b"").await;
    put("from-ext", vec![("link", link(&url, "redirect"))], b"").await;
    put(
        "from-ext",
        vec![("content-type", "text/csv".into())],
        b"x,y",
    )
    .await;
    let paths = ["copy", "redirect", "proxy", "to-ext", "from-ext"];
    let mut before = Vec::new();
    for p in paths {
        before.push(answers(&s, p).await);
    }
    assert!(before[1][0].starts_with("GET 307"), "{:?}", before[1]);
    assert!(
        before[2][0].contains("body=\"hello external world\\n\""),
        "{:?}",
        before[2]
    );
    s.stop().await;

    // Valid OCFL, checked by an independent validator.
    let root = data.join("ocfl-root");
    common::check_storage(&root);
    common::validate_with_ocfl_py(&root);

    // `arca rebuild` on a copy of the root alone gives the same answers (a copy: the
    // stopped in-process server may still hold its catalog files open).
    let data = dir.path().join("rebuilt");
    copy_dir(&root, &data.join("ocfl-root"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arca"));
    cmd.arg("rebuild").arg("--data").arg(&data);
    common::scrub_env(&mut cmd);
    let out = cmd.output().expect("arca rebuild runs");
    assert!(
        out.status.success(),
        "arca rebuild failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = start(&data, &list).await;
    for (p, b) in paths.iter().zip(&before) {
        assert_eq!(&answers(&s, p).await, b, "{p} after rebuild");
    }
    s.stop().await;
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            fs::copy(e.path(), &target).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fedora_written_external_binaries_are_read() {
    // Written by Fedora 6.1 with PUTs of `<http://127.0.0.1:8091/hello.txt>` (21 bytes,
    // text/plain) as redirect (`redirh`), proxy (`proxyh`), copy (`copyh`), a binary replaced
    // by a redirect and then by an upload again (`rep`: v2 is external, with the v1 content
    // file still in the state; v3 stored `x,y,z`) and
    // `<file:///tmp/fcrepo/ext/hello.txt>` as proxy (`proxyf`). No remote is contacted here:
    // redirects and HEAD need none.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fedora-external-root"),
        &data.join("ocfl-root"),
    );
    let list = dir.path().join("allowed.txt");
    fs::write(&list, "http://127.0.0.1:8091/\n").unwrap();
    let s = start(&data, &list).await;
    let remote = "http://127.0.0.1:8091/hello.txt";
    let r = s.get("redirh", &[]).await;
    assert_eq!(r.status, 307, "{}", r.text());
    assert_eq!(r.header("location"), Some(remote));
    assert_eq!(r.header("content-location"), Some(remote));
    assert_eq!(r.header("content-type"), Some("text/plain"));
    let r = s.get("rep", &[]).await;
    assert_eq!((r.status.as_u16(), &r.body[..]), (200, &b"x,y,z"[..]));
    assert!(r.header("content-location").is_none());
    let r = s
        .request(Method::HEAD, &s.url("proxyh"), &[], Vec::new())
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("21"));
    assert_eq!(r.header("content-location"), Some(remote));
    let r = s.get("copyh", &[]).await;
    assert_eq!(&r.body[..], DATA);
    assert!(r.header("content-location").is_none());
    // Fedora's normalized file URL is given back as it stored it.
    let r = s
        .request(Method::OPTIONS, &s.url("proxyf"), &[], Vec::new())
        .await;
    assert_eq!(r.status, 200);
    let d = s.get("proxyf/fcr:metadata", &[]).await;
    assert_eq!(d.status, 200);
    assert!(d.text().contains("\"21\"^^"), "{}", d.text());
    s.stop().await;
}
