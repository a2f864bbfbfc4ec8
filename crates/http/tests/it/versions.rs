//! Resource versioning (Fedora API §4, Memento / RFC 7089): every resource is its own
//! TimeGate, its TimeMap is `<resource>/fcr:versions` and its mementos are
//! `<resource>/fcr:versions/YYYYMMDDHHMMSS`, read-only. Each test names the requirements it
//! checks; the expected headers and statuses are those the real Fedora 6.1 gives.
//!
//! Memento datetimes are whole seconds: where a test needs two distinct mementos it sleeps
//! just over a second between the writes (once per scenario).

use std::time::{Duration, SystemTime};

use crate::common::*;
use arca_testkit::{next_second, Reply, TestServer};
use http::Method;
use sha2::{Digest, Sha256};

const MEMENTO: &str = "http://mementoweb.org/ns#";
const LINK_FORMAT: (&str, &str) = ("accept", "application/link-format");

fn memento(name: &str) -> String {
    format!("{MEMENTO}{name}")
}

/// One `rel="memento"` entry of a link-format TimeMap.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    url: String,
    datetime: String,
}

/// The lines of a link-format body as (target, params).
fn link_format_lines(body: &str) -> Vec<(String, String)> {
    assert!(body.ends_with('\n'), "{body:?}");
    body.lines()
        .map(|l| {
            let l = l.trim().trim_end_matches(',');
            let (target, params) = l
                .strip_prefix('<')
                .and_then(|l| l.split_once('>'))
                .unwrap_or_else(|| panic!("not a link-format line: {l:?}"));
            (target.to_string(), params.to_string())
        })
        .collect()
}

/// A parameter of a link-format line (`; name="value"`).
fn param(params: &str, name: &str) -> Option<String> {
    params.split(';').find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        (k == name).then(|| v.trim_matches('"').to_string())
    })
}

/// The mementos a link-format TimeMap lists, in its order.
async fn mementos(s: &TestServer, path: &str) -> Vec<Entry> {
    let r = s.get(&format!("{path}/fcr:versions"), &[LINK_FORMAT]).await;
    assert_eq!(r.status, 200, "TimeMap of {path}: {}", r.text());
    link_format_lines(&r.text())
        .into_iter()
        .filter(|(_, p)| param(p, "rel").as_deref() == Some("memento"))
        .map(|(url, p)| Entry {
            url,
            datetime: param(&p, "datetime").expect("a memento has a datetime"),
        })
        .collect()
}

/// The newest memento of `path`.
async fn last_memento(s: &TestServer, path: &str) -> Entry {
    mementos(s, path)
        .await
        .pop()
        .unwrap_or_else(|| panic!("{path} has no memento"))
}

/// A memento URL as a path below the REST root.
fn rel<'a>(s: &TestServer, url: &'a str) -> &'a str {
    url.strip_prefix(&format!("{}/", s.base))
        .unwrap_or_else(|| panic!("{url} is not below {}", s.base))
}

/// An RFC 1123 date `secs` seconds after `date`.
fn shift(date: &str, secs: i64) -> String {
    let t = httpdate::parse_http_date(date).unwrap_or_else(|e| panic!("{date}: {e}"));
    let t = if secs >= 0 {
        t + Duration::from_secs(secs as u64)
    } else {
        t - Duration::from_secs((-secs) as u64)
    };
    httpdate::fmt_http_date(t)
}

fn vary_has_accept_datetime(r: &Reply) -> bool {
    header_items(r, "vary")
        .iter()
        .any(|v| v.eq_ignore_ascii_case("accept-datetime"))
}

/// Asserts the links every answer about `path` carries: original and timegate the resource,
/// timemap its `fcr:versions`.
fn assert_memento_links(s: &TestServer, r: &Reply, path: &str) {
    let url = s.url(path);
    assert_eq!(
        links(r, "original"),
        vec![url.clone()],
        "original of {path}"
    );
    assert_eq!(
        links(r, "timegate"),
        vec![url.clone()],
        "timegate of {path}"
    );
    assert_eq!(
        links(r, "timemap"),
        vec![format!("{url}/fcr:versions")],
        "timemap of {path}"
    );
}

fn allow(r: &Reply) -> Vec<String> {
    let mut a: Vec<String> = header_items(r, "allow")
        .into_iter()
        .map(|m| m.to_ascii_uppercase())
        .collect();
    a.sort();
    a
}

fn sorted(items: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = items.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

/// 4.1.1-B, C, D, E, F, G: GET and HEAD of a container, a binary and a description carry
/// `rel="original"` and `rel="timegate"` to the resource itself, a `rel="timemap"` to its
/// TimeMap, the types OriginalResource and TimeGate, and `Vary: Accept-Datetime`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn original_resources_are_their_own_timegates() {
    let s = TestServer::start().await;
    container(&s, "c").await;
    binary(&s, "c/b", "text/plain", b"bytes").await;
    for path in ["c", "c/b", "c/b/fcr:metadata"] {
        for method in [Method::GET, Method::HEAD] {
            let r = s
                .request(method.clone(), &s.url(path), &[], Vec::new())
                .await;
            assert_eq!(r.status, 200, "{method} {path}");
            assert_memento_links(&s, &r, path);
            let types = links(&r, "type");
            for t in ["OriginalResource", "TimeGate"] {
                assert!(
                    types.contains(&memento(t)),
                    "{method} {path}: no type {t}: {types:?}"
                );
            }
            assert!(!types.contains(&memento("Memento")), "{method} {path}");
            assert!(
                vary_has_accept_datetime(&r),
                "{method} {path}: Vary {:?}",
                r.header_all("vary")
            );
            assert!(r.header("memento-datetime").is_none(), "{method} {path}");
        }
    }
    s.stop().await;
}

/// 4.1.1-A-2: `Accept-Datetime` on a resource → 302 to the memento in force then, with
/// `Location` and `Vary: Accept-Datetime`: after the last → the last; exactly at one → that
/// one; between two → the earlier; before the first → the first (as Fedora 6). HEAD too;
/// the 302 carries the original's type links and Allow, as Fedora 6's does.
/// A malformed date → 400. (4.1.1-A-1, 406 without any memento, cannot happen here: every
/// write of a resource is a version of it; `fedora_sample.rs` checks it on a Fedora
/// mutable-head object.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timegate_redirects_to_the_memento_in_force() {
    let s = TestServer::start().await;
    container_with(&s, "c", "<> <http://purl.org/dc/terms/title> \"one\" .").await;
    // Two seconds apart, so that a whole second lies between the two mementos.
    tokio::time::sleep(Duration::from_millis(2050)).await;
    let r = put(
        &s,
        "c",
        &[TURTLE],
        "<> <http://purl.org/dc/terms/title> \"two\" .",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let m = mementos(&s, "c").await;
    assert_eq!(m.len(), 2, "{m:?}");
    let gap = httpdate::parse_http_date(&m[1].datetime)
        .unwrap()
        .duration_since(httpdate::parse_http_date(&m[0].datetime).unwrap())
        .unwrap();
    assert!(gap >= Duration::from_secs(2), "{m:?}");
    let future = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3600));
    let cases = [
        ("after the last", future, &m[1]),
        ("exactly the last", m[1].datetime.clone(), &m[1]),
        ("exactly the first", m[0].datetime.clone(), &m[0]),
        ("between the two", shift(&m[0].datetime, 1), &m[0]),
        ("before the first", shift(&m[0].datetime, -3600), &m[0]),
        ("long before", "Sat, 01 Jan 2000 00:00:00 GMT".into(), &m[0]),
    ];
    for (what, date, expected) in cases {
        for method in [Method::GET, Method::HEAD] {
            let r = s
                .request(
                    method.clone(),
                    &s.url("c"),
                    &[("accept-datetime", &date)],
                    Vec::new(),
                )
                .await;
            assert_eq!(r.status, 302, "{method} {what} ({date}): {}", r.text());
            assert_eq!(
                r.header("location"),
                Some(expected.url.as_str()),
                "{method} {what} ({date})"
            );
            assert!(vary_has_accept_datetime(&r), "{method} {what}");
            assert_memento_links(&s, &r, "c");
            assert!(r.body.is_empty(), "{method} {what}: a 302 has no body");
            // The original's headers, as Fedora 6 sends them, but not its validators.
            let types = links(&r, "type");
            for t in [
                memento("OriginalResource"),
                memento("TimeGate"),
                LDP_BASIC_CONTAINER.to_string(),
            ] {
                assert!(types.contains(&t), "{method} {what}: no type {t}");
            }
            assert!(allow(&r).contains(&"PUT".to_string()), "{method} {what}");
            assert!(r.header("etag").is_none(), "{method} {what}");
        }
    }
    // The Location is a memento that answers.
    let r = s.get(rel(&s, &m[0].url), &[]).await;
    assert_eq!(r.status, 200);

    // Not an HTTP date: 400.
    for bad in ["garbage", "2026-11-24T10:27:05Z", ""] {
        let r = s.get("c", &[("accept-datetime", bad)]).await;
        assert_eq!(r.status, 400, "Accept-Datetime {bad:?}: {}", r.text());
    }
    // OPTIONS ignores Accept-Datetime, as Fedora 6 does.
    let r = s
        .request(
            Method::OPTIONS,
            &s.url("c"),
            &[("accept-datetime", &m[0].datetime)],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 200);
    s.stop().await;
}

/// 4.1.1-A-2 on a binary and a description: the TimeGate redirects them too (Fedora 6.1
/// answers a binary's GET with 500, a bug; arca with the 302 its HEAD gives).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binaries_and_descriptions_are_timegates_too() {
    let s = TestServer::start().await;
    binary(&s, "b", "text/plain", b"v1").await;
    for path in ["b", "b/fcr:metadata"] {
        let m = last_memento(&s, path).await;
        for method in [Method::GET, Method::HEAD] {
            let r = s
                .request(
                    method.clone(),
                    &s.url(path),
                    &[("accept-datetime", "Fri, 01 Jan 2100 00:00:00 GMT")],
                    Vec::new(),
                )
                .await;
            assert_eq!(r.status, 302, "{method} {path}: {}", r.text());
            assert_eq!(
                r.header("location"),
                Some(m.url.as_str()),
                "{method} {path}"
            );
            assert!(vary_has_accept_datetime(&r), "{method} {path}");
            assert!(r.body.is_empty());
        }
    }
    s.stop().await;
}

/// 4.3 / RFC 7089 §5.1.1 and 4.3.1-A, B, C: the link-format TimeMap lists the original, the
/// TimeGate, one `rel="memento"` per version with its RFC 1123 datetime (ascending), and
/// itself (`from`/`until` only with two mementos or more); every line ends with a comma,
/// as Fedora 6 writes it. 4.3.1-D, E, F and 4.3.2: the TimeMap's headers (type TimeMap and
/// LDP container types, Allow POST, HEAD, GET, OPTIONS, Accept-Post) on GET, HEAD and
/// OPTIONS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timemap_in_link_format() {
    let s = TestServer::start().await;
    container(&s, "c").await;
    let url = s.url("c");
    let tm = format!("{url}/fcr:versions");

    // One memento: `self` without from/until.
    let r = s.get("c/fcr:versions", &[LINK_FORMAT]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/link-format"));
    let lines = link_format_lines(&r.text());
    assert!(r.text().lines().all(|l| l.ends_with(',')), "{}", r.text());
    assert_eq!(lines.len(), 4, "{}", r.text());
    assert_eq!(lines[0], (url.clone(), "; rel=\"original\"".into()));
    assert_eq!(lines[1], (url.clone(), "; rel=\"timegate\"".into()));
    assert_eq!(param(&lines[2].1, "rel").as_deref(), Some("memento"));
    let first = param(&lines[2].1, "datetime").unwrap();
    assert!(
        first.ends_with(" GMT") && httpdate::parse_http_date(&first).is_ok(),
        "{first}"
    );
    assert_eq!(
        lines[3],
        (
            tm.clone(),
            "; rel=\"self\"; type=\"application/link-format\"".into()
        )
    );

    next_second().await;
    let r = put(
        &s,
        "c",
        &[TURTLE],
        "<> <http://purl.org/dc/terms/title> \"t\" .",
    )
    .await;
    assert_eq!(r.status, 204);
    let r = s.get("c/fcr:versions", &[LINK_FORMAT]).await;
    let lines = link_format_lines(&r.text());
    assert_eq!(lines.len(), 5, "{}", r.text());
    let m = mementos(&s, "c").await;
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].datetime, first);
    for e in &m {
        // The memento's name is its datetime.
        let t: time::OffsetDateTime = httpdate::parse_http_date(&e.datetime).unwrap().into();
        let name = format!(
            "{:04}{:02}{:02}{:02}{:02}{:02}",
            t.year(),
            t.month() as u8,
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        );
        assert_eq!(e.url, format!("{tm}/{name}"));
    }
    assert!(
        httpdate::parse_http_date(&m[0].datetime).unwrap()
            < httpdate::parse_http_date(&m[1].datetime).unwrap()
    );
    assert_eq!(lines[4].0, tm);
    assert_eq!(
        lines[4].1,
        format!(
            "; rel=\"self\"; from=\"{}\"; until=\"{}\"; type=\"application/link-format\"",
            m[0].datetime, m[1].datetime
        )
    );

    // The TimeMap's headers, on GET, HEAD and OPTIONS.
    for method in [Method::GET, Method::HEAD, Method::OPTIONS] {
        let r = s
            .request(method.clone(), &tm, &[LINK_FORMAT], Vec::new())
            .await;
        assert_eq!(r.status, 200, "{method}");
        let types = links(&r, "type");
        for t in [
            memento("TimeMap"),
            ldp("Resource"),
            ldp("Container"),
            ldp("RDFSource"),
        ] {
            assert!(types.contains(&t), "{method}: no type {t}: {types:?}");
        }
        assert!(!types.contains(&memento("OriginalResource")), "{method}");
        assert_memento_links(&s, &r, "c");
        assert_eq!(
            allow(&r),
            sorted(&["POST", "HEAD", "GET", "OPTIONS"]),
            "{method}"
        );
        assert!(r.header("accept-post").is_some(), "{method}: Accept-Post");
        assert!(r.header("accept-patch").is_none(), "{method}: Accept-Patch");
        if method != Method::OPTIONS {
            let etag = r.header("etag").unwrap_or_default();
            assert!(
                etag.starts_with("W/\""),
                "{method}: a weak ETag, not {etag:?}"
            );
        }
        if method == Method::HEAD {
            assert!(r.body.is_empty());
        }
    }
    s.stop().await;
}

/// 4.3 and 4.3.1-A: the TimeMap as RDF (Turtle by default, N-Triples, JSON-LD): an LDP
/// container of its mementos (`ldp:contains` each) with `memento:original`. 4.3: the
/// resource does not contain its TimeMap (no `ldp:contains` names `fcr:versions`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timemap_as_rdf_and_not_contained() {
    let s = TestServer::start().await;
    container(&s, "c").await;
    container(&s, "c/child").await;
    next_second().await;
    let r = put(
        &s,
        "c",
        &[TURTLE],
        "<> <http://purl.org/dc/terms/title> \"t\" .",
    )
    .await;
    assert_eq!(r.status, 204);
    let m = mementos(&s, "c").await;
    assert_eq!(m.len(), 2, "{m:?}");
    let url = s.url("c");
    let tm = format!("{url}/fcr:versions");
    for (accept, ct) in [
        (None, "text/turtle"),
        (Some("*/*"), "text/turtle"),
        (Some("text/turtle"), "text/turtle"),
        (Some("application/n-triples"), "application/n-triples"),
        (Some("application/ld+json"), "application/ld+json"),
    ] {
        let h: Vec<(&str, &str)> = accept.map(|a| ("accept", a)).into_iter().collect();
        let r = s.get("c/fcr:versions", &h).await;
        assert_eq!(r.status, 200, "{accept:?}: {}", r.text());
        assert!(
            r.header("content-type").unwrap().starts_with(ct),
            "{accept:?}: {:?}",
            r.header("content-type")
        );
        assert!(links(&r, "type").contains(&memento("TimeMap")));
        let g = Graph::of(&r, &tm);
        let mut contained = g.object_iris(&tm, LDP_CONTAINS);
        contained.sort();
        let mut expected: Vec<String> = m.iter().map(|e| e.url.clone()).collect();
        expected.sort();
        assert_eq!(contained, expected, "{accept:?}");
        assert!(g.has(&tm, &memento("original"), &url), "{accept:?}");
        assert!(g.has(&tm, RDF_TYPE, LDP_CONTAINER), "{accept:?}");
    }
    let r = s
        .get("c/fcr:versions", &[("accept", "application/pdf")])
        .await;
    assert_eq!(r.status, 406);

    // Not contained: the resource lists its child only, the root lists the resource only.
    let include = (
        "prefer",
        "return=representation; include=\"http://www.w3.org/ns/ldp#PreferContainment\"",
    );
    let g = graph(&s, "c", &[include]).await;
    assert_eq!(g.object_iris(&url, LDP_CONTAINS), vec![s.url("c/child")]);
    assert!(
        !g.0.iter().any(|t| t.to_string().contains("fcr:versions")),
        "{:?}",
        g.0
    );
    assert_eq!(children(&s, "").await, vec![url.clone()]);
    s.stop().await;
}

/// 4.3.4, 4.3.5, 4.3.6: PUT and PATCH of a TimeMap are refused (405 with Allow), and so is
/// DELETE (a TimeMap goes with its resource, as in Fedora 6); nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timemap_refuses_put_patch_and_delete() {
    let s = TestServer::start().await;
    container(&s, "c").await;
    let before = mementos(&s, "c").await;
    for method in [Method::PUT, Method::PATCH, Method::DELETE] {
        let r = s
            .request(
                method.clone(),
                &s.url("c/fcr:versions"),
                &[TURTLE],
                "<> <http://purl.org/dc/terms/title> \"x\" .",
            )
            .await;
        assert_eq!(r.status, 405, "{method}: {}", r.text());
        assert_eq!(
            allow(&r),
            sorted(&["POST", "HEAD", "GET", "OPTIONS"]),
            "{method}"
        );
    }
    assert_eq!(mementos(&s, "c").await, before);
    assert_eq!(s.get("c", &[]).await.status, 200);
    s.stop().await;
}

/// 4.2.1-A..F, 4.2.2-A/B: a container's memento answers GET, HEAD and OPTIONS with
/// Memento-Datetime, the type Memento (instead of OriginalResource and TimeGate), links to
/// the original and its TimeGate and TimeMap, and `Allow: GET, HEAD, OPTIONS`; its body is
/// the state of then (the title of then, about the original's URL, as Fedora 6 serves it,
/// and the children it had then). A datetime without a memento is 404, a segment that is no
/// datetime 400, a path below a memento 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn container_mementos_show_the_state_of_then() {
    let s = TestServer::start().await;
    let title = "http://purl.org/dc/terms/title";
    container_with(&s, "c", &format!("<> <{title}> \"one\" .")).await;
    let m0 = last_memento(&s, "c").await;
    next_second().await;
    let r = put(&s, "c", &[TURTLE], &format!("<> <{title}> \"two\" .")).await;
    assert_eq!(r.status, 204);
    container(&s, "c/child").await;
    // The child is another resource: the container's memento of its update predates it
    // unless a version is recorded after it.
    let r = post(&s, "c/fcr:versions", &[], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    // The update and the recorded version share a memento when they share a second; on a
    // loaded machine they may straddle one, leaving the update's own memento between them
    // (its children are those at the end of its second, so either may be listed there).
    let m = mementos(&s, "c").await;
    assert!((2..=3).contains(&m.len()), "{m:?}");
    assert_eq!(m[0], m0);
    let url = s.url("c");

    let mut expected = vec![(&m[0], "one", Some(vec![]))];
    if m.len() == 3 {
        expected.push((&m[1], "two", None));
    }
    expected.push((m.last().unwrap(), "two", Some(vec![s.url("c/child")])));
    for (e, expected_title, expected_children) in expected {
        let path = rel(&s, &e.url);
        for method in [Method::GET, Method::HEAD, Method::OPTIONS] {
            let r = s.request(method.clone(), &e.url, &[], Vec::new()).await;
            assert_eq!(r.status, 200, "{method} {path}: {}", r.text());
            assert_eq!(
                r.header("memento-datetime"),
                Some(e.datetime.as_str()),
                "{method} {path}"
            );
            let types = links(&r, "type");
            assert!(types.contains(&memento("Memento")), "{method} {path}");
            assert!(
                !types.contains(&memento("OriginalResource")),
                "{method} {path}"
            );
            assert!(!types.contains(&memento("TimeGate")), "{method} {path}");
            assert!(
                types.contains(&LDP_BASIC_CONTAINER.to_string()),
                "{method} {path}"
            );
            assert_memento_links(&s, &r, "c");
            assert_eq!(
                allow(&r),
                sorted(&["GET", "HEAD", "OPTIONS"]),
                "{method} {path}"
            );
            assert!(r.header("accept-post").is_none(), "{method} {path}");
            assert!(r.header("accept-patch").is_none(), "{method} {path}");
        }
        let g = graph(&s, path, &[]).await;
        let titles = g.objects(&url, title);
        assert_eq!(titles, vec![lit(expected_title)], "{path}");
        if let Some(expected_children) = expected_children {
            assert_eq!(
                g.object_iris(&url, LDP_CONTAINS),
                expected_children,
                "{path}"
            );
        }
    }
    // The resource itself is as it is now.
    let g = graph(&s, "c", &[]).await;
    assert_eq!(g.objects(&url, title), vec![lit("two")]);

    // No memento at that datetime: 404. Not a datetime: 400. Nothing lies below one: 400.
    let r = s.get("c/fcr:versions/20000101000000", &[]).await;
    assert_eq!(r.status, 404, "{}", r.text());
    for bad in ["abc", "2026112410270", "20261324102709", "20261124102709x"] {
        let r = s.get(&format!("c/fcr:versions/{bad}"), &[]).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
    }
    let r = s
        .get(&format!("{}/fcr:metadata", rel(&s, &m[0].url)), &[])
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    s.stop().await;
}

/// 4.2, 4.2.3, 4.2.4, 4.2.5, 4.2.6: a memento is never modified: PUT, PATCH, POST and
/// DELETE are 405 with `Allow: GET, HEAD, OPTIONS` (DELETE is not advertised, so not
/// offered), and neither the memento, the TimeMap nor the resource changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mementos_are_read_only() {
    let s = TestServer::start().await;
    container_with(&s, "c", "<> <http://purl.org/dc/terms/title> \"one\" .").await;
    binary(&s, "b", "text/plain", b"v1").await;
    for path in ["c", "b", "b/fcr:metadata"] {
        let tm_before = mementos(&s, path).await;
        let m = tm_before.last().unwrap().clone();
        let before = s.get(rel(&s, &m.url), &[]).await;
        let current = s.get(path, &[]).await;
        for method in [Method::PUT, Method::PATCH, Method::POST, Method::DELETE] {
            let ct = if method == Method::PATCH {
                SPARQL
            } else {
                TURTLE
            };
            let body = if method == Method::PATCH {
                "INSERT DATA { <> <http://purl.org/dc/terms/title> \"changed\" }"
            } else {
                "<> <http://purl.org/dc/terms/title> \"changed\" ."
            };
            let r = s.request(method.clone(), &m.url, &[ct], body).await;
            assert_eq!(r.status, 405, "{method} {path} memento: {}", r.text());
            assert_eq!(
                allow(&r),
                sorted(&["GET", "HEAD", "OPTIONS"]),
                "{method} {path}"
            );
        }
        let after = s.get(rel(&s, &m.url), &[]).await;
        assert_eq!(after.status, 200);
        assert_eq!(after.body, before.body, "{path}: the memento changed");
        assert_eq!(
            mementos(&s, path).await,
            tm_before,
            "{path}: the TimeMap changed"
        );
        let now = s.get(path, &[]).await;
        assert_eq!(now.body, current.body, "{path} changed");
        assert_eq!(now.header("etag"), current.header("etag"), "{path} changed");
    }
    s.stop().await;
}

/// 4.2.1 for binaries: a binary's memento serves the bytes of then, with the Content-Type,
/// Content-Disposition file name, `Want-Digest` digest (of the old bytes) and ranges of
/// then; the description's memento holds the triples of then (its title) and the binary's
/// size and media type of then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_and_description_mementos_show_the_state_of_then() {
    let s = TestServer::start().await;
    let title = "http://purl.org/dc/terms/title";
    let v1 = b"v1".as_slice();
    let v2 = b"version two".as_slice();
    let r = put_bytes(
        &s,
        "b",
        &[
            ("content-type", "text/plain"),
            ("content-disposition", "attachment; filename=\"v1.txt\""),
        ],
        v1,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = sparql(
        &s,
        "b/fcr:metadata",
        &format!("INSERT DATA {{ <> <{title}> \"first\" }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let b1 = last_memento(&s, "b").await;
    let d1 = last_memento(&s, "b/fcr:metadata").await;
    next_second().await;
    let r = put_bytes(
        &s,
        "b",
        &[
            ("content-type", "text/csv"),
            ("content-disposition", "attachment; filename=\"v2.csv\""),
        ],
        v2,
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = sparql(
        &s,
        "b/fcr:metadata",
        &format!("DELETE {{ <> <{title}> ?t }} INSERT {{ <> <{title}> \"second\" }} WHERE {{ <> <{title}> ?t }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let b2 = last_memento(&s, "b").await;
    let d2 = last_memento(&s, "b/fcr:metadata").await;
    assert_ne!(b1, b2);
    assert_ne!(d1, d2);
    assert!(mementos(&s, "b").await.contains(&b1));

    for (m, bytes, mime, file) in [
        (&b1, v1, "text/plain", "v1.txt"),
        (&b2, v2, "text/csv", "v2.csv"),
    ] {
        let path = rel(&s, &m.url);
        let r = s.get(path, &[("want-digest", "sha-256")]).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        assert_eq!(&r.body[..], bytes, "{path}");
        assert_eq!(r.header("content-type"), Some(mime), "{path}");
        // The old filename; no size or dates, as Fedora 7 (RFC 6266 deprecated them).
        assert_eq!(
            r.header("content-disposition"),
            Some(format!("attachment; filename=\"{file}\"").as_str()),
            "{path}"
        );
        let digest = r.header("digest").unwrap_or_default().to_ascii_lowercase();
        assert_eq!(
            digest,
            format!("sha-256={}", hex::encode(Sha256::digest(bytes))),
            "{path}"
        );
        assert_eq!(r.header("memento-datetime"), Some(m.datetime.as_str()));
        assert!(links(&r, "type").contains(&memento("Memento")), "{path}");
        assert!(links(&r, "type").contains(&LDP_NON_RDF_SOURCE.to_string()));
        assert_memento_links(&s, &r, "b");
        assert_eq!(allow(&r), sorted(&["GET", "HEAD", "OPTIONS"]), "{path}");

        let h = head(&s, path, &[]).await;
        assert_eq!(h.status, 200);
        assert!(h.body.is_empty());
        assert_eq!(h.header("content-type"), Some(mime), "HEAD {path}");
        assert_eq!(h.header("memento-datetime"), Some(m.datetime.as_str()));

        let r = s.get(path, &[("range", "bytes=1-1")]).await;
        assert_eq!(r.status, 206, "{path}");
        assert_eq!(&r.body[..], &bytes[1..2], "{path}");
        assert_eq!(
            r.header("content-range"),
            Some(format!("bytes 1-1/{}", bytes.len()).as_str())
        );
    }
    let bin = s.url("b");
    for (m, t, size, mime) in [
        (&d1, "first", v1.len(), "text/plain"),
        (&d2, "second", v2.len(), "text/csv"),
    ] {
        let path = rel(&s, &m.url);
        assert!(
            path.starts_with("b/fcr:metadata/fcr:versions/"),
            "a description's mementos are its own: {path}"
        );
        let r = s.get(path, &[]).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        assert_eq!(r.header("memento-datetime"), Some(m.datetime.as_str()));
        assert!(links(&r, "type").contains(&memento("Memento")), "{path}");
        assert_memento_links(&s, &r, "b/fcr:metadata");
        let g = Graph::of(&r, &s.url(path));
        assert_eq!(g.objects(&bin, title), vec![lit(t)], "{path}");
        assert!(
            g.has_lit(&bin, &format!("{EBUCORE}hasMimeType"), mime),
            "{path}: {:?}",
            g.objects(&bin, &format!("{EBUCORE}hasMimeType"))
        );
        let sizes = g.objects(&bin, &format!("{PREMIS}hasSize"));
        assert_eq!(sizes.len(), 1, "{path}");
        assert!(
            sizes[0].to_string().starts_with(&format!("\"{size}\"")),
            "{path}: {sizes:?}"
        );
    }
    // The binary as it is now.
    let r = s.get("b", &[]).await;
    assert_eq!(&r.body[..], v2);
    s.stop().await;
}

/// 4.3.3.1-A..D: POST to a TimeMap records a memento of the current state: 201 with the
/// memento's Location (which then answers 200) and Memento-Datetime; a body is ignored
/// (the title does not change), whatever its Content-Type.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_to_a_timemap_records_a_memento() {
    let s = TestServer::start().await;
    let title = "http://purl.org/dc/terms/title";
    container_with(&s, "c", &format!("<> <{title}> \"kept\" .")).await;
    binary(&s, "b", "text/plain", b"bytes").await;
    next_second().await;
    for path in ["c", "b"] {
        let before = mementos(&s, path).await;
        let r = post(
            &s,
            &format!("{path}/fcr:versions"),
            &[TURTLE],
            &format!("<> <{title}> \"ignored\" ."),
        )
        .await;
        assert_eq!(r.status, 201, "{path}: {}", r.text());
        let location = r.header("location").expect("a Location").to_string();
        assert!(
            location.starts_with(&format!("{}/fcr:versions/", s.url(path))),
            "{location}"
        );
        assert!(r.header("memento-datetime").is_some());
        let after = mementos(&s, path).await;
        assert_eq!(after.len(), before.len() + 1, "{path}: {after:?}");
        let newest = after.last().unwrap();
        assert_eq!(newest.url, location);
        assert_eq!(r.header("memento-datetime"), Some(newest.datetime.as_str()));
        let m = s.get(rel(&s, &location), &[]).await;
        assert_eq!(m.status, 200, "{location}");
        if path == "b" {
            assert_eq!(&m.body[..], b"bytes");
        }
    }
    let url = s.url("c");
    let g = graph(&s, "c", &[]).await;
    assert_eq!(g.objects(&url, title), vec![lit("kept")]);
    let m = last_memento(&s, "c").await;
    let g = graph(&s, rel(&s, &m.url), &[]).await;
    assert_eq!(g.objects(&url, title), vec![lit("kept")]);

    // POST to the TimeMap of nothing: 404.
    let r = post(&s, "nothing/fcr:versions", &[], "").await;
    assert_eq!(r.status, 404);
    s.stop().await;
}

/// Issue 38.2: `Accept-Datetime` is read in every HTTP-date form (RFC 9110 §5.6.7): the
/// IMF-fixdate, a one-digit day as Java's `RFC_1123_DATE_TIME` writes it (Fedora 6 reads it
/// too, and its error message suggests it), the obsolete RFC 850 and asctime forms (Fedora
/// 6.1 answers those 400). A day name that does not fit the date stays a 400, as in Fedora.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_datetime_in_every_http_date_form() {
    let s = TestServer::start().await;
    container(&s, "c").await;
    let m = last_memento(&s, "c").await;
    for date in [
        "Fri, 01 Jan 2100 00:00:00 GMT",
        "Fri, 1 Jan 2100 00:00:00 GMT",
        "Tue, 3 Jun 2008 11:05:30 GMT",
        "Thu, 1 Jan 1970 00:00:00 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
        "Fri Jan  1 00:00:00 2100",
    ] {
        let r = s.get("c", &[("accept-datetime", date)]).await;
        assert_eq!(r.status, 302, "Accept-Datetime {date:?}: {}", r.text());
        assert_eq!(r.header("location"), Some(m.url.as_str()), "{date:?}");
    }
    for bad in [
        "Thu, 01 Jan 2100 00:00:00 GMT",
        "Fri, 1 Jan 100 00:00:00 GMT",
        "Friday, 1 Jan 2100 00:00:00 GMT",
    ] {
        let r = s.get("c", &[("accept-datetime", bad)]).await;
        assert_eq!(r.status, 400, "Accept-Datetime {bad:?}: {}", r.text());
        assert!(
            r.text().contains("Tue, 3 Jun 2008 11:05:30 GMT"),
            "{}",
            r.text()
        );
    }
    s.stop().await;
}

/// Issue 38.3: `POST fcr:versions` with a `Memento-Datetime` (Fedora 5's way of importing
/// a version with a date of its choosing) is refused as Fedora 6.1 refuses it: 400 with a
/// constrainedBy link, whatever the value, and no memento recorded. Without the header the
/// POST the TimeMap's `Allow` names still records a memento.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_to_a_timemap_with_memento_datetime_is_refused() {
    let s = TestServer::start().await;
    container(&s, "c").await;
    let before = mementos(&s, "c").await;
    for value in ["Tue, 3 Jun 2008 11:05:30 GMT", "garbage"] {
        let r = post(&s, "c/fcr:versions", &[("memento-datetime", value)], "").await;
        assert_eq!(r.status, 400, "{value:?}: {}", r.text());
        assert!(r.text().contains("Memento-Datetime"), "{}", r.text());
        assert_constrained_by(&s, &r).await;
    }
    assert_eq!(mementos(&s, "c").await, before);
    assert!(allow(&options(&s, "c/fcr:versions").await).contains(&"POST".to_string()));
    next_second().await;
    assert_eq!(post(&s, "c/fcr:versions", &[], "").await.status, 201);
    assert_eq!(mementos(&s, "c").await.len(), before.len() + 1);
    s.stop().await;
}

/// 3.8 with §4: a deleted resource's TimeMap, its mementos, its TimeGate and a POST to its
/// TimeMap answer 410 (as Fedora 6), with the link to the tombstone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_of_a_deleted_resource_are_gone() {
    let s = TestServer::start().await;
    container(&s, "c").await;
    binary(&s, "b", "text/plain", b"x").await;
    for path in ["c", "b"] {
        let m = last_memento(&s, path).await;
        let r = delete(&s, path, &[]).await;
        assert_eq!(r.status, 204);
        let tm = format!("{path}/fcr:versions");
        for (what, r) in [
            ("TimeMap", s.get(&tm, &[LINK_FORMAT]).await),
            ("TimeMap HEAD", head(&s, &tm, &[]).await),
            ("memento", s.get(rel(&s, &m.url), &[]).await),
            ("POST TimeMap", post(&s, &tm, &[], "").await),
            (
                "TimeGate",
                s.get(path, &[("accept-datetime", &m.datetime)]).await,
            ),
        ] {
            assert_eq!(r.status, 410, "{what} of deleted {path}: {}", r.text());
            if what != "TimeMap HEAD" {
                assert!(
                    r.has_link(&format!("{}/fcr:tombstone", s.url(path)), "hasTombstone"),
                    "{what} {path}: {}",
                    r.header_all("link")
                );
            }
        }
    }
    s.stop().await;
}

/// A description changed in a later second than its binary has a memento the binary lacks;
/// that memento answers 200 and speaks about the binary as it was then (its type and size
/// at the binary's memento in force), not 404 for want of a binary memento at that instant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_description_memento_without_a_binary_memento_of_its_instant() {
    let s = TestServer::start().await;
    let title = "http://purl.org/dc/terms/title";
    let r = put_bytes(&s, "b", &[("content-type", "text/plain")], b"v1").await;
    assert_eq!(r.status, 201, "{}", r.text());
    next_second().await;
    let r = sparql(
        &s,
        "b/fcr:metadata",
        &format!("INSERT DATA {{ <> <{title}> \"described later\" }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let binary = mementos(&s, "b").await;
    let description = mementos(&s, "b/fcr:metadata").await;
    assert_eq!(binary.len(), 1, "{binary:?}");
    assert_eq!(description.len(), 2, "{description:?}");
    let later = description.last().unwrap();
    assert!(
        !binary.iter().any(|m| m.datetime == later.datetime),
        "the binary did not change at {}",
        later.datetime
    );
    let path = rel(&s, &later.url);
    let r = s.get(path, &[]).await;
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    assert_eq!(r.header("memento-datetime"), Some(later.datetime.as_str()));
    let bin = s.url("b");
    let g = Graph::of(&r, &s.url(path));
    assert_eq!(g.objects(&bin, title), vec![lit("described later")]);
    assert!(g.has_lit(&bin, &format!("{EBUCORE}hasMimeType"), "text/plain"));
    let sizes = g.objects(&bin, &format!("{PREMIS}hasSize"));
    assert_eq!(sizes.len(), 1, "{sizes:?}");
    assert!(sizes[0].to_string().starts_with("\"2\""), "{sizes:?}");
    s.stop().await;
}
