//! The HTML pages a browser gets: what people wrote shows as text (never as markup), errors
//! are pages with their status, RDF clients get RDF as before, actions show only to callers
//! allowed to take them, and a large container's children are paged.

use std::path::PathBuf;

use crate::common::*;
use arca_testkit::{Reply, TestServer};
use base64::Engine as _;
use http::Method;
use sha1::Digest as _;

/// A browser's `Accept`.
pub(crate) const BROWSER: (&str, &str) = (
    "accept",
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8",
);

pub(crate) fn basic(user: &str) -> String {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{user}-pw"));
    format!("Basic {token}")
}

/// A server whose users are `reader` (may read `open` only, by its ACL) and the admin `root`.
pub(crate) async fn server() -> (TestServer, tempfile::TempDir) {
    server_with(|_| {}).await
}

/// [`server`] with settings changed by `edit`.
pub(crate) async fn server_with(
    edit: impl FnOnce(&mut arca_config::Config),
) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("htpasswd");
    let mut text = String::new();
    for u in ["reader", "root"] {
        let digest = sha1::Sha1::digest(format!("{u}-pw").as_bytes());
        text.push_str(&format!(
            "{u}:{{SHA}}{}\n",
            base64::engine::general_purpose::STANDARD.encode(digest)
        ));
    }
    std::fs::write(&file, text).unwrap();
    let s = TestServer::start_with(None, |c| {
        c.auth.htpasswd = Some(file);
        c.auth.admins = vec!["root".into()];
        c.auth.user_base_uri = Some("http://users.example/".into());
        edit(c);
    })
    .await;
    (s, dir)
}

pub(crate) async fn as_user(
    s: &TestServer,
    user: Option<&str>,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<bytes::Bytes>,
) -> Reply {
    let auth = user.map(basic);
    let mut all: Vec<(&str, &str)> = headers.to_vec();
    if let Some(a) = &auth {
        all.push(("authorization", a));
    }
    s.request_anonymous(method, &s.url(path), &all, body.into())
        .await
}

async fn root(
    s: &TestServer,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    as_user(s, Some("root"), method, path, headers, body.to_string()).await
}

/// The page of `path` as `user`.
pub(crate) async fn page(s: &TestServer, user: Option<&str>, path: &str) -> Reply {
    as_user(s, user, Method::GET, path, &[BROWSER], "").await
}

pub(crate) fn assert_page(r: &Reply) -> String {
    assert!(
        r.header("content-type")
            .unwrap_or("")
            .starts_with("text/html"),
        "{:?}: {}",
        r.headers,
        r.text()
    );
    let text = r.text();
    assert!(text.starts_with("<!doctype html>"), "{text}");
    assert!(text.contains("<html lang=\"en\">"));
    text
}

const HOSTILE: &str = "<script>alert(\"x\")</script> & 'quotes' — é";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_people_wrote_renders_as_text() {
    let (s, _d) = server().await;
    let turtle = format!(
        "<> <http://purl.org/dc/terms/title> \"{}\" ; <http://purl.org/dc/terms/relation> <http://example.org/a?x=1&y=%22é> .",
        HOSTILE.replace('"', "\\\"")
    );
    let r = root(&s, Method::PUT, "c", &[TURTLE], &turtle).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let text = assert_page(&page(&s, Some("root"), "c").await);
    assert!(!text.contains("<script>alert"), "{text}");
    assert!(
        text.contains(
            "&lt;script&gt;alert(&quot;x&quot;)&lt;&#x2f;script&gt; &amp; &#x27;quotes&#x27; — é"
        ),
        "{text}"
    );
    // The IRI is a link, its `&` escaped.
    assert!(
        text.contains("href=\"http:&#x2f;&#x2f;example.org&#x2f;a?x=1&amp;y=%22é\""),
        "{text}"
    );
    // A slug and a file name with markup.
    let r = as_user(
        &s,
        Some("root"),
        Method::POST,
        "c",
        &[
            ("slug", "x<b>&y\"é"),
            ("content-type", "text/plain"),
            LINK_BINARY,
            (
                "content-disposition",
                "attachment; filename=\"<img src=x onerror=alert(1)>.txt\"",
            ),
        ],
        "hello <em>world</em>",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let location = r.header("location").unwrap().to_string();
    let text = assert_page(&page(&s, Some("root"), "c").await);
    assert!(!text.contains("x<b>"), "{text}");
    assert!(text.contains("x&lt;b&gt;&amp;y&quot;é"), "{text}");
    let path = location.strip_prefix(&s.base).unwrap();
    let text = assert_page(&page(&s, Some("root"), &format!("{path}/fcr:metadata")).await);
    assert!(!text.contains("<img src=x"), "{text}");
    assert!(
        text.contains("&lt;img src=x onerror=alert(1)&gt;.txt"),
        "{text}"
    );
    // The text preview shows the content as text.
    assert!(
        text.contains("hello &lt;em&gt;world&lt;&#x2f;em&gt;"),
        "{text}"
    );
    assert!(!text.contains("<em>world"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_pages_with_their_status() {
    let (s, _d) = server().await;
    root(&s, Method::PUT, "gone", &[TURTLE], "").await;
    root(&s, Method::PUT, "closed", &[TURTLE], "").await;
    let r = root(&s, Method::DELETE, "gone", &[], "").await;
    assert_eq!(r.status, 204);

    let r = page(&s, Some("root"), "missing").await;
    assert_eq!(r.status, 404);
    let text = assert_page(&r);
    assert!(text.contains("<h1>404 Not Found</h1>"), "{text}");
    assert!(text.contains("missing not found"), "{text}");

    let r = page(&s, Some("root"), "gone").await;
    assert_eq!(r.status, 410);
    assert!(assert_page(&r).contains("410 Gone"));
    assert!(r.header_all("link").contains("fcr:tombstone"));

    // Only root may read `closed`.
    let acl = format!("@prefix acl: <http://www.w3.org/ns/auth/acl#> .\n<#a> a acl:Authorization ; acl:agent <http://users.example/root> ; acl:mode acl:Read, acl:Write ; acl:accessTo <{}> .", s.url("closed"));
    let r = root(&s, Method::PUT, "closed/fcr:acl", &[TURTLE], &acl).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = page(&s, Some("reader"), "closed").await;
    assert_eq!(r.status, 403);
    assert!(assert_page(&r).contains("403 Forbidden"));

    // Anonymous: 401 with the challenge, so the browser asks for a login.
    let r = page(&s, None, "closed").await;
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").unwrap().starts_with("Basic"));
    assert!(assert_page(&r).contains("401 Unauthorized"));

    // An API client still gets the plain-text message.
    let r = root(&s, Method::GET, "missing", &[], "").await;
    assert_eq!(r.status, 404);
    assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rdf_clients_get_rdf_as_before() {
    let (s, _d) = server().await;
    root(
        &s,
        Method::PUT,
        "r",
        &[TURTLE],
        "<> <http://purl.org/dc/terms/title> \"t\" .",
    )
    .await;
    for (accept, expected) in [
        ("*/*", "text/turtle"),
        ("", "text/turtle"),
        ("application/ld+json", "application/ld+json"),
        ("text/turtle, text/html", "text/turtle"),
        (
            "text/html;q=0.5, application/n-triples",
            "application/n-triples",
        ),
    ] {
        let headers: Vec<(&str, &str)> = if accept.is_empty() {
            vec![]
        } else {
            vec![("accept", accept)]
        };
        let r = root(&s, Method::GET, "r", &headers, "").await;
        assert_eq!(r.status, 200, "{accept}");
        assert!(
            r.header("content-type").unwrap().starts_with(expected),
            "{accept}: {:?}",
            r.headers
        );
        assert!(r.header("vary").unwrap().contains("Accept"));
    }
    let r = page(&s, Some("root"), "r").await;
    assert_page(&r);
    assert!(r.header("vary").unwrap().contains("Accept"));
    // The page's raw-RDF links name the format in the query.
    let r = as_user(
        &s,
        Some("root"),
        Method::GET,
        "r?format=application%2Fld%2Bjson",
        &[BROWSER],
        "",
    )
    .await;
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("application/ld+json"));
    // A binary's bytes are what a browser gets at its URL (its page is its description's).
    let r = as_user(
        &s,
        Some("root"),
        Method::PUT,
        "r/b",
        &[("content-type", "text/plain"), LINK_BINARY],
        "bytes",
    )
    .await;
    assert_eq!(r.status, 201);
    let r = page(&s, Some("root"), "r/b").await;
    assert_eq!(r.text(), "bytes");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_show_only_to_callers_who_may_take_them() {
    let (s, _d) = server().await;
    root(&s, Method::PUT, "open", &[TURTLE], "").await;
    let acl = format!("@prefix acl: <http://www.w3.org/ns/auth/acl#> .\n<#r> a acl:Authorization ; acl:agent <http://users.example/reader> ; acl:mode acl:Read ; acl:accessTo <{0}> ; acl:default <{0}> .", s.url("open"));
    let r = root(&s, Method::PUT, "open/fcr:acl", &[TURTLE], &acl).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let admin = assert_page(&page(&s, Some("root"), "open").await);
    for form in [
        "data-kind=\"container\"",
        "data-kind=\"upload\"",
        "data-kind=\"patch\"",
        "data-kind=\"version\"",
        "data-kind=\"delete\"",
    ] {
        assert!(admin.contains(form), "{form}: {admin}");
    }
    let r = page(&s, Some("reader"), "open").await;
    assert_eq!(r.status, 200);
    let reader = assert_page(&r);
    assert!(!reader.contains("data-kind="), "{reader}");
    assert!(!reader.contains("Actions"), "{reader}");
    // The status page is the admin's.
    assert!(admin.contains(">Status</a>"));
    assert!(!reader.contains(">Status</a>"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_container_is_paged() {
    let (s, _d) = server().await;
    root(&s, Method::PUT, "big", &[TURTLE], "").await;
    s.set_wait_for_publishing(false);
    for i in 0..250 {
        let r = root(&s, Method::PUT, &format!("big/c{i:03}"), &[TURTLE], "").await;
        assert_eq!(r.status, 201);
    }
    let rows = |text: &str| text.matches("</a></td><td>Container</td>").count();
    let next_of = |text: &str| -> Option<String> {
        let i = text.find("rel=\"next\"")?;
        let start = text[..i].rfind("href=\"")? + 6;
        let end = start + text[start..].find('"')?;
        Some(
            text[start..end]
                .replace("&amp;", "&")
                .replace("&#x2f;", "/"),
        )
    };
    let text = assert_page(&page(&s, Some("root"), "big").await);
    assert_eq!(rows(&text), 100);
    assert!(
        text.contains(">c000</a>") && text.contains(">c099</a>") && !text.contains(">c100</a>")
    );
    let next = next_of(&text).expect("a next link");
    assert!(next.contains("limit=100&after="), "{next}");
    let path = next.strip_prefix(&s.base).unwrap().to_string();
    let text = assert_page(&page(&s, Some("root"), &path).await);
    assert_eq!(rows(&text), 100);
    assert!(text.contains(">c100</a>") && text.contains(">c199</a>"));
    let path = next_of(&text)
        .unwrap()
        .strip_prefix(&s.base)
        .unwrap()
        .to_string();
    let text = assert_page(&page(&s, Some("root"), &path).await);
    assert_eq!(rows(&text), 50);
    assert!(next_of(&text).is_none());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timemap_acl_search_and_status_pages() {
    let (s, _d) = server().await;
    root(&s, Method::PUT, "v", &[TURTLE], "").await;
    let r = root(&s, Method::POST, "v/fcr:versions", &[], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let text = assert_page(&page(&s, Some("root"), "v/fcr:versions").await);
    assert!(text.contains("Versions of v"), "{text}");
    assert!(text.matches("<time datetime=").count() >= 1, "{text}");
    // A memento's page: read-only, with its date.
    let at = text.find("fcr:versions&#x2f;").expect("a memento link") + "fcr:versions&#x2f;".len();
    let segment = &text[at..at + 14];
    let r = page(&s, Some("root"), &format!("v/fcr:versions/{segment}")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let memento = assert_page(&r);
    assert!(memento.contains("(read-only)"), "{memento}");
    assert!(!memento.contains("data-kind="), "{memento}");
    // The root's default ACL and a stored one, as tables.
    let text = assert_page(&page(&s, Some("root"), "fcr:acl").await);
    assert!(text.contains("<table class=\"acl\">"), "{text}");
    let acl = format!("@prefix acl: <http://www.w3.org/ns/auth/acl#> .\n<#r> a acl:Authorization ; acl:agent <http://users.example/reader> ; acl:mode acl:Read ; acl:accessTo <{}> .", s.url("v"));
    let r = root(&s, Method::PUT, "v/fcr:acl", &[TURTLE], &acl).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let text = assert_page(&page(&s, Some("root"), "v/fcr:acl").await);
    assert!(
        text.contains(">http:&#x2f;&#x2f;users.example&#x2f;reader</a>"),
        "{text}"
    );
    assert!(text.contains("acl:Read"), "{text}");
    // Search: the box, then hits (or search is off: its error page).
    let r = page(&s, Some("root"), "fcr:search").await;
    if r.status == 200 {
        let text = assert_page(&r);
        assert!(text.contains("<label for=\"q\">"));
    } else {
        assert_eq!(r.status, 501);
    }
    // Status: JSON for API clients, a page for browsers, refused to others.
    let status = s.base.trim_end_matches("/rest").to_string() + "/status";
    let r = s
        .request_anonymous(
            Method::GET,
            &status,
            &[("authorization", &basic("root"))],
            bytes::Bytes::new(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("application/json"));
    let json: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert!(json.get("version").is_some());
    let r = s
        .request_anonymous(
            Method::GET,
            &status,
            &[("authorization", &basic("root")), BROWSER],
            bytes::Bytes::new(),
        )
        .await;
    let text = assert_page(&r);
    assert!(
        text.contains("<h1>Status</h1>") && text.contains("unknown"),
        "{text}"
    );
    let r = s
        .request_anonymous(
            Method::GET,
            &status,
            &[("authorization", &basic("reader")), BROWSER],
            bytes::Bytes::new(),
        )
        .await;
    assert_eq!(r.status, 403);
    let r = s
        .request_anonymous(Method::GET, &status, &[BROWSER], bytes::Bytes::new())
        .await;
    assert_eq!(r.status, 401);
    assert!(!r.text().contains("Open transactions"));
    // The assets.
    let css = s.base.trim_end_matches("/rest").to_string() + "/static/ui/ui.css";
    let r = s
        .request_anonymous(Method::GET, &css, &[], bytes::Bytes::new())
        .await;
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/css"));
    s.stop().await;
}
