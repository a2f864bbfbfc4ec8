//! The real `arca serve` under a corpus of hostile requests, sent as raw bytes over TCP the
//! way an attacker would: every answer is a 4xx with a message, slow clients are cut off by
//! the header and body timeouts, the process stays alive, SIGTERM stops it within seconds
//! even while a request is still running, and the OCFL root stays valid.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::Arca;

/// One raw HTTP/1.1 exchange: the status and body of the answer, or `None` if the server
/// closed the connection without one.
fn exchange(base: &str, raw: &[u8]) -> Option<(u16, String)> {
    let mut stream = connect(base);
    stream.write_all(raw).ok()?;
    read_answer(&mut stream)
}

fn connect(base: &str) -> TcpStream {
    let addr = base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
}

fn read_answer(stream: &mut TcpStream) -> Option<(u16, String)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if let Some(done) = complete(&buf) {
                    buf.truncate(done);
                    break;
                }
            }
            Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((status, body))
}

/// The length of a complete response with Content-Length in `buf`, if it is all there.
fn complete(buf: &[u8]) -> Option<usize> {
    let text = String::from_utf8_lossy(buf);
    let (head, _) = text.split_once("\r\n\r\n")?;
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse::<usize>().ok())
        })
        .flatten()?;
    let total = head.len() + 4 + length;
    (buf.len() >= total).then_some(total)
}

fn request(method: &str, target: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut raw = format!("{method} {target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4=\r\nConnection: close\r\n");
    for (k, v) in headers {
        raw.push_str(&format!("{k}: {v}\r\n"));
    }
    raw.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut raw = raw.into_bytes();
    raw.extend_from_slice(body);
    raw
}

fn billion_laughs() -> String {
    let mut entities = String::from("<!ENTITY a0 \"lol\">");
    for i in 1..10 {
        entities.push_str(&format!(
            "<!ENTITY a{i} \"{}\">",
            format!("&a{};", i - 1).repeat(10)
        ));
    }
    format!(
        "<?xml version=\"1.0\"?><!DOCTYPE rdf:RDF [{entities}]>\
         <rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" xmlns:dc=\"http://purl.org/dc/terms/\">\
         <rdf:Description rdf:about=\"\"><dc:title>&a9;</dc:title></rdf:Description></rdf:RDF>"
    )
}

/// The hostile corpus: a name, the raw request and the status it must get.
fn corpus() -> Vec<(&'static str, Vec<u8>, u16)> {
    let turtle = ("Content-Type", "text/turtle");
    let nested = format!(
        "INSERT DATA {{ <> <http://example.org/p> {}1{} . }}",
        "( ".repeat(2_000),
        " )".repeat(2_000)
    );
    let rdfxml = ("Content-Type", "application/rdf+xml");
    let long_slug = "s".repeat(60_000);
    let big_header = "x".repeat(30_000);
    vec![
        ("nested SPARQL", request("PATCH", "/rest/h", &[("Content-Type", "application/sparql-update")], nested.as_bytes()), 400),
        ("billion laughs", request("POST", "/rest/h", &[rdfxml], billion_laughs().as_bytes()), 400),
        (
            "truncated RDF/XML",
            request("POST", "/rest/h", &[rdfxml], b"<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\"><rdf:Description rdf:about=\"\">"),
            400,
        ),
        ("4 KB name", request("PUT", &format!("/rest/h/{}", "n".repeat(4_096)), &[("Content-Type", "text/plain")], b"x"), 400),
        ("60 KB Slug", request("POST", "/rest/h", &[turtle, ("Slug", &long_slug)], b""), 431),
        ("5 KB Slug", request("POST", "/rest/h", &[turtle, ("Slug", &long_slug[..5_000])], b""), 400),
        (
            "other subject",
            request("PUT", "/rest/h", &[turtle], b"<http://localhost/rest/other> <http://purl.org/dc/terms/title> \"x\" ."),
            403,
        ),
        ("outside subject", request("PUT", "/rest/h", &[turtle], b"<http://example.org/x> <http://purl.org/dc/terms/title> \"x\" ."), 400),
        ("malformed Link", request("POST", "/rest/h", &[turtle, ("Link", "garbage")], b""), 400),
        ("bad escape", request("GET", "/rest/h/a%zz", &[], b""), 400),
        ("long URL", request("GET", &format!("/rest/{}", "u".repeat(9_000)), &[], b""), 414),
        ("big header", request("GET", "/rest/h", &[("X-Big", &big_header)], b""), 431),
        ("deep JSON-LD", request("POST", "/rest/h", &[("Content-Type", "application/ld+json")], format!("{}{}", "[".repeat(50_000), "]".repeat(50_000)).as_bytes()), 400),
        (
            "declared huge RDF body",
            b"PUT /rest/h HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4=\r\nContent-Type: text/turtle\r\nContent-Length: 999999999999\r\nConnection: close\r\n\r\n".to_vec(),
            413,
        ),
        ("bad chunk", b"PUT /rest/h HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4=\r\nContent-Type: text/turtle\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\nabc\r\n0\r\n\r\n".to_vec(), 400),
    ]
}

#[test]
fn hostile_requests_get_4xx_and_leave_the_server_and_the_root_intact() {
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve_with(
        data.path(),
        &[
            ("ARCA_LIMIT_HEADER_TIMEOUT_SECONDS", "2"),
            ("ARCA_LIMIT_BODY_IDLE_TIMEOUT_SECONDS", "2"),
        ],
    );
    let base = arca.base.clone();
    let (status, _) = exchange(
        &base,
        &request(
            "PUT",
            "/rest/h",
            &[("Content-Type", "text/turtle")],
            b"<> <http://purl.org/dc/terms/title> \"h\" .",
        ),
    )
    .unwrap();
    assert_eq!(status, 201);
    let (status, _) = exchange(
        &base,
        &request(
            "PUT",
            "/rest/h/bin",
            &[("Content-Type", "text/plain")],
            b"bytes",
        ),
    )
    .unwrap();
    assert_eq!(status, 201);

    for (name, raw, expected) in corpus() {
        let started = Instant::now();
        let (status, body) = exchange(&base, &raw).unwrap_or_else(|| panic!("{name}: no answer"));
        assert_eq!(status, expected, "{name}: {body}");
        assert!(
            !body.trim().is_empty() || name == "bad chunk",
            "{name}: a {status} without a message"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{name} took {:?}",
            started.elapsed()
        );
    }
    // A garbage request line: the HTTP layer answers 400 (hyper's, without a body) or closes.
    if let Some((status, _)) = exchange(&base, b"HELLO WORLD\r\n\r\n") {
        assert_eq!(status, 400);
    }

    // A client that never finishes its headers is cut off after the header timeout.
    let mut slow = connect(&base);
    slow.write_all(b"GET /rest/h HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4=\r\nX-Slow: ")
        .unwrap();
    let started = Instant::now();
    let answer = read_answer(&mut slow);
    assert!(answer.as_ref().is_none_or(|(s, _)| *s == 408), "{answer:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "header timeout took {:?}",
        started.elapsed()
    );

    // A client that stops sending its body gets 408 after the body idle timeout.
    let mut stalled = connect(&base);
    stalled
        .write_all(b"PUT /rest/h HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4=\r\nContent-Type: text/turtle\r\nContent-Length: 100\r\n\r\n<> <http")
        .unwrap();
    let started = Instant::now();
    let (status, body) = read_answer(&mut stalled).expect("an answer to a stalled body");
    assert_eq!(status, 408, "{body}");
    assert!(started.elapsed() < Duration::from_secs(10));

    // Many idle connections do not keep others out.
    let idle: Vec<TcpStream> = (0..200).map(|_| connect(&base)).collect();
    let (status, body) = exchange(&base, &request("GET", "/rest/h", &[], b"")).unwrap();
    assert_eq!(status, 200, "{body}");
    drop(idle);

    // Nothing of the refused requests was stored; what was acknowledged is intact.
    let (status, body) = exchange(
        &base,
        &request(
            "GET",
            "/rest/h",
            &[("Accept", "application/n-triples")],
            b"",
        ),
    )
    .unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("\"h\""), "{body}");
    assert!(!body.contains("\"x\""), "{body}");
    let (_, bin) = exchange(&base, &request("GET", "/rest/h/bin", &[], b"")).unwrap();
    assert_eq!(bin, "bytes");

    let took = arca.stop_within(Duration::from_secs(10));
    eprintln!("stopped {took:?} after SIGTERM");
    let root = data.path().join("ocfl-root");
    common::check_storage(&root);
    common::validate_with_ocfl_py(&root);
    common::assert_staging_clean(data.path());
}

/// A cross product of 300^4 rows over [`put_300_triples`]: within every size bound, it
/// runs until its time limit.
const HEAVY_UPDATE: &[u8] = b"DELETE { ?a ?b ?c } WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l FILTER(STR(?c) = CONCAT(STR(?f), STR(?i), STR(?l))) }";

/// Creates `/rest/w` with 300 triples.
fn put_300_triples(base: &str) {
    let triples: String = (0..300)
        .map(|i| format!("<> <http://example.org/p{i}> \"{i}\" .\n"))
        .collect();
    let put = request(
        "PUT",
        "/rest/w",
        &[("Content-Type", "text/turtle")],
        triples.as_bytes(),
    );
    assert_eq!(exchange(base, &put).map(|a| a.0), Some(201));
}

#[test]
fn sigterm_stops_the_server_while_a_long_update_runs() {
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve_with(
        data.path(),
        &[
            ("ARCA_LIMIT_PARSE_SECONDS", "60"),
            ("ARCA_LIMIT_SHUTDOWN_GRACE_SECONDS", "2"),
        ],
    );
    let base = arca.base.clone();
    put_300_triples(&base);
    let mut busy = connect(&base);
    busy.write_all(&request(
        "PATCH",
        "/rest/w",
        &[("Content-Type", "application/sparql-update")],
        HEAVY_UPDATE,
    ))
    .unwrap();
    std::thread::sleep(Duration::from_millis(1_500));
    let (status, _) = exchange(&base, &request("GET", "/rest/w", &[], b"")).unwrap();
    assert_eq!(status, 200, "a long update must not stop other requests");
    let took = arca.stop_within(Duration::from_secs(10));
    assert!(took < Duration::from_secs(8), "SIGTERM took {took:?}");
    // The update never completed, so nothing changed; the root is valid.
    let root = data.path().join("ocfl-root");
    common::check_storage(&root);
    common::validate_with_ocfl_py(&root);
}

#[test]
fn an_update_that_runs_too_long_is_cancelled() {
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve_with(data.path(), &[("ARCA_LIMIT_PARSE_SECONDS", "1")]);
    let base = arca.base.clone();
    put_300_triples(&base);
    let started = Instant::now();
    let (status, body) = exchange(
        &base,
        &request(
            "PATCH",
            "/rest/w",
            &[("Content-Type", "application/sparql-update")],
            HEAVY_UPDATE,
        ),
    )
    .unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("max_parse_time"), "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "cancelled after {:?}",
        started.elapsed()
    );
    let (_, body) = exchange(
        &base,
        &request(
            "GET",
            "/rest/w",
            &[("Accept", "application/n-triples")],
            b"",
        ),
    )
    .unwrap();
    assert_eq!(body.matches("http://example.org/p").count(), 300);
    arca.stop();
}
