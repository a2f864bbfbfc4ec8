//! A mixed cluster (issue 43): node A indexes; node B has no index of its own
//! (`search.enabled = false`) and forwards `fcr:search`, its status and GSearch to A
//! (`search.forward_to`). Both share one PostgreSQL catalog and one OCFL root on the file
//! system (B's `ocfl-root` is a link to A's; each has its own journal and staging). A write
//! through B is found through B, with B's URLs; the caller's access decides what it sees,
//! as on A; A stopped: 503 with `Retry-After`; a dead node first: the next one answers.
//! Not run without PostgreSQL unless `ARCA_REQUIRE_POSTGRES=1`.

use std::path::Path;
use std::time::{Duration, Instant};

use arca_testkit::TestServer;
use base64::Engine as _;
use http::{Method, StatusCode};
use serde_json::Value;

use crate::shared_catalog::{database, send, users};

const TURTLE: (&str, &str) = ("content-type", "text/turtle");
const DC: &str = "@prefix dcterms: <http://purl.org/dc/terms/> .\n";

/// A node on the catalog at `url` and the data directory `data`, with users alice, bob
/// and the admin root; `forward_to`: a node without an index that forwards to these.
async fn node(url: &str, data: &Path, users: &Path, forward_to: Option<Vec<String>>) -> TestServer {
    TestServer::start_with(Some(data), |c| {
        c.catalog.url = Some(url.to_string());
        c.auth.htpasswd = Some(users.to_path_buf());
        c.auth.admins = vec!["root".into()];
        c.auth.user_base_uri = Some("http://users.example/".into());
        if let Some(targets) = forward_to {
            c.search.enabled = false;
            c.search.forward_to = targets;
        }
    })
    .await
}

/// `q`'s hits for `user` through `s`: their `fedora_id`s, sorted.
async fn hits(s: &TestServer, user: &str, q: &str) -> Vec<String> {
    let r = send(
        s,
        user,
        Method::GET,
        &format!("fcr:search?q={q}&fields=fedora_id"),
        &[],
        "",
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{q}: {}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    let mut ids: Vec<String> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["fedora_id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

/// Waits until `q` finds `want` hits for `user` through `s` (A indexes behind the writes).
async fn found(s: &TestServer, user: &str, q: &str, want: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ids = hits(s, user, q).await;
        if ids.len() >= want {
            return ids;
        }
        assert!(Instant::now() < deadline, "{q}: only {ids:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The data directory of a node sharing `a`'s OCFL root.
fn sharing_root(dir: &Path, name: &str, a: &TestServer) -> std::path::PathBuf {
    let data = dir.join(name);
    std::fs::create_dir_all(&data).unwrap();
    std::os::unix::fs::symlink(a.ocfl_root(), data.join("ocfl-root")).unwrap();
    data
}

/// A URL where nothing listens (a port bound and let go).
fn dead_node() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/rest")
}

/// A URL where a server answers every request with 500.
async fn failing_node() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0; 8192];
                let _ = socket.read(&mut buf).await;
                let body = "index broken";
                let answer = format!(
                    "HTTP/1.1 500 Internal Server Error\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    format!("http://127.0.0.1:{port}/rest")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_an_index_searches_through_one_that_has_it() {
    let Some(url) = database().await else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = users(dir.path());
    let a = node(&url, &dir.path().join("a"), &file, None).await;
    let b_data = sharing_root(dir.path(), "b", &a);
    let b = node(&url, &b_data, &file, Some(vec![a.base.clone()])).await;
    assert!(
        !b_data.join("search").exists(),
        "a node without an index keeps none"
    );

    // Written through B: an open record, and one only bob may read.
    for (path, title) in [
        ("fw", "forwarded shelf"),
        ("fw/open", "forwarded needle open"),
    ] {
        let body = format!("{DC}<> dcterms:title \"{title}\" .");
        let r = send(&b, "root", Method::PUT, path, &[TURTLE], &body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    }
    let body = format!("{DC}<> dcterms:title \"forwarded needle secret\" .");
    let r = send(&b, "root", Method::PUT, "secret", &[TURTLE], &body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let acl = format!(
        "@prefix acl: <http://www.w3.org/ns/auth/acl#> .\n\
         <#read> a acl:Authorization ; acl:agent <http://users.example/bob> ;\n\
         acl:accessTo <{}> ; acl:mode acl:Read .",
        b.url("secret")
    );
    let r = send(&b, "root", Method::PUT, "secret/fcr:acl", &[TURTLE], &acl).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());

    // Found through B, with B's URLs; the same as A answers with A's.
    let through_b = found(&b, "root", "needle", 2).await;
    assert_eq!(through_b, [b.url("fw/open"), b.url("secret")]);
    assert_eq!(
        hits(&a, "root", "needle").await,
        [a.url("fw/open"), a.url("secret")]
    );
    // Each caller sees what it may read, as on A.
    for (user, want) in [
        ("alice", vec![b.url("fw/open")]),
        ("bob", through_b.clone()),
    ] {
        assert_eq!(hits(&b, user, "needle").await, want, "{user} through B");
        let on_a: Vec<String> = hits(&a, user, "needle")
            .await
            .iter()
            .map(|u| u.replace(&a.base, &b.base))
            .collect();
        assert_eq!(on_a, want, "{user} on A");
    }
    // Refused credentials are refused before anything is forwarded.
    let r = b
        .request_anonymous(
            Method::GET,
            &b.url("fcr:search?q=needle"),
            &[("authorization", "Basic YWxpY2U6d3Jvbmc=")],
            "",
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);

    // Fedora 7's conditions with B's URLs, paging, fields and errors pass through.
    let path = |s: &TestServer| {
        let condition = format!("fedora_id={}*", s.url("fw"));
        let q: String = form_urlencoded::byte_serialize(condition.as_bytes()).collect();
        format!("fcr:search?condition={q}&fields=fedora_id,title&limit=1&offset=1")
    };
    let (ra, rb) = (
        send(&a, "alice", Method::GET, &path(&a), &[], "").await,
        send(&b, "alice", Method::GET, &path(&b), &[], "").await,
    );
    assert_eq!(rb.status, StatusCode::OK, "{}", rb.text());
    let (va, vb): (Value, Value) = (
        serde_json::from_slice(&ra.body).unwrap(),
        serde_json::from_slice(&rb.body).unwrap(),
    );
    assert_eq!(vb["pagination"], va["pagination"]);
    assert_eq!(vb["pagination"]["totalResults"], 2, "{vb}");
    assert_eq!(vb["items"].as_array().unwrap().len(), 1, "{vb}");
    let keys: Vec<&String> = vb["items"][0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["fedora_id", "TITLE"]);
    assert!(vb["items"][0]["fedora_id"]
        .as_str()
        .unwrap()
        .starts_with(&b.base));
    for bad in ["fcr:search?q=TITLE%3A%28", "fcr:search?limit=0"] {
        let (ra, rb) = (
            send(&a, "alice", Method::GET, bad, &[], "").await,
            send(&b, "alice", Method::GET, bad, &[], "").await,
        );
        assert_eq!(rb.status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!((rb.status, rb.text()), (ra.status, ra.text()), "{bad}");
    }
    // HEAD: the length GET has.
    let get = send(&b, "alice", Method::GET, "fcr:search?q=needle", &[], "").await;
    let head = send(&b, "alice", Method::HEAD, "fcr:search?q=needle", &[], "").await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(
        head.header("content-length"),
        Some(get.body.len().to_string().as_str())
    );
    // A browser gets the page, made on B with B's links.
    let r = send(
        &b,
        "alice",
        Method::GET,
        "fcr:search?q=needle",
        &[("accept", "text/html")],
        "",
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    let escaped = |url: String| url.replace('/', "&#x2f;");
    let page = r.text();
    assert!(page.contains(&escaped(b.url("fw/open"))), "{page}");
    assert!(!page.contains(&escaped(a.url(""))), "{page}");

    // GSearch through B, as alice.
    let gsearch = |s: &TestServer| {
        let root = s.base.trim_end_matches("/rest").to_string();
        format!("{root}/fedoragsearch/rest?operation=gfindObjects&query=needle")
    };
    let token = base64::engine::general_purpose::STANDARD.encode("alice:alice-pw");
    let auth = format!("Basic {token}");
    let r = b
        .request_anonymous(Method::GET, &gsearch(&b), &[("authorization", &auth)], "")
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("text/xml; charset=UTF-8"));
    let xml = r.text();
    assert!(
        xml.contains("hitTotal=\"1\"") && xml.contains("<field name=\"PID\">fw/open</field>"),
        "{xml}"
    );
    let on_a = a
        .request_anonymous(Method::GET, &gsearch(&a), &[("authorization", &auth)], "")
        .await;
    assert_eq!(on_a.text(), xml);

    // The index's status for admins, from A; a rebuild is each indexing node's own.
    let r = send(&b, "root", Method::GET, "fcr:search/status", &[], "").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let status: Value = serde_json::from_slice(&r.body).unwrap();
    assert!(status["documents"].as_u64().unwrap() >= 3, "{status}");
    assert_eq!(
        send(&b, "alice", Method::GET, "fcr:search/status", &[], "")
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    let r = send(&b, "root", Method::POST, "fcr:search/reindex", &[], "").await;
    assert_eq!(r.status, StatusCode::NOT_IMPLEMENTED);
    assert!(r.text().contains(&a.base), "{}", r.text());

    // B is ready, and says A answers.
    let ready = health(&b).await;
    assert_eq!(ready["ready"], true, "{ready}");
    assert_eq!(check(&ready, &a.base)["ok"], true, "{ready}");

    // A dead node and one that answers 500 first: the next one answers.
    let c_data = sharing_root(dir.path(), "c", &a);
    let dead = dead_node();
    let failing = failing_node().await;
    let c = node(
        &url,
        &c_data,
        &file,
        Some(vec![dead.clone(), failing.clone(), a.base.clone()]),
    )
    .await;
    assert_eq!(
        hits(&c, "alice", "needle").await,
        [c.url("fw/open")],
        "through C, past the dead and the failing node"
    );
    let ready = health(&c).await;
    assert_eq!(ready["ready"], true, "{ready}");
    for bad in [&dead, &failing] {
        assert_eq!(check(&ready, bad)["warning"], true, "{ready}");
    }
    assert_eq!(check(&ready, &a.base)["ok"], true, "{ready}");
    drop(c);

    // A node forwarding to one that forwards too: a loop in the settings, refused by B.
    let d_data = sharing_root(dir.path(), "d", &a);
    let d = node(&url, &d_data, &file, Some(vec![b.base.clone()])).await;
    let r = send(&d, "alice", Method::GET, "fcr:search?q=needle", &[], "").await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text());
    assert!(
        r.text().contains("502") && r.text().contains("no search index either"),
        "{}",
        r.text()
    );
    drop(d);

    // A stopped: 503 with Retry-After, naming the node tried; B stays ready.
    let a_base = a.base.clone();
    a.stop().await;
    let r = send(&b, "alice", Method::GET, "fcr:search?q=needle", &[], "").await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text());
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=5).contains(&retry), "Retry-After {retry}");
    assert!(r.text().contains(&a_base), "{}", r.text());
    let r = b
        .request_anonymous(Method::GET, &gsearch(&b), &[("authorization", &auth)], "")
        .await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text());
    assert!(r.header("retry-after").is_some());
    // (The last answer is reused for a second.)
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = health(&b).await;
        assert_eq!(ready["ready"], true, "{ready}");
        let a_check = check(&ready, &a_base);
        if a_check["ok"] == false {
            assert_eq!(a_check["warning"], true, "{ready}");
            break;
        }
        assert!(Instant::now() < deadline, "A still answers: {ready}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Everything else still works on B.
    let r = send(&b, "alice", Method::GET, "fw/open", &[], "").await;
    assert_eq!(r.status, StatusCode::OK);
}

/// `/health/ready` of `s`.
async fn health(s: &TestServer) -> Value {
    let url = format!("{}/health/ready", s.base.trim_end_matches("/rest"));
    let r = s.request_anonymous(Method::GET, &url, &[], "").await;
    serde_json::from_slice(&r.body).unwrap_or_else(|_| panic!("{}", r.text()))
}

/// The readiness check of search node `node`.
fn check<'a>(ready: &'a Value, node: &str) -> &'a Value {
    let name = format!("search-forward:{node}");
    ready["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name.as_str())
        .unwrap_or_else(|| panic!("no check {name}: {ready}"))
}
