//! Hostile input (issue: no request can crash, hang or exhaust the server): every bound
//! answers a 4xx that names it, nothing is stored, and the server keeps answering.

use crate::common::*;
use arca_testkit::TestServer;
use http::Method;

const RDF_XML: (&str, &str) = ("content-type", "application/rdf+xml");
const JSON_LD: (&str, &str) = ("content-type", "application/ld+json");

/// The server still answers, and `paths` were not created.
async fn alive_and_unchanged(s: &TestServer, paths: &[&str]) {
    assert_eq!(
        s.get("", &[]).await.status,
        200,
        "the server stopped answering"
    );
    for p in paths {
        let r = s.get(p, &[]).await;
        assert_eq!(
            r.status,
            404,
            "{p} exists after a refused request: {}",
            r.text()
        );
    }
}

async fn setup() -> TestServer {
    let s = TestServer::start().await;
    assert_eq!(put(&s, "h", &[TURTLE], "").await.status, 201);
    s
}

fn nested_collection(levels: usize) -> String {
    format!(
        "INSERT DATA {{ <> <http://example.org/p> {}1{} . }}",
        "( ".repeat(levels),
        " )".repeat(levels)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_sparql_is_refused_not_a_stack_overflow() {
    let s = setup().await;
    // ~8 KB: 2,000 nested collections crashed the whole process before.
    let r = patch(&s, "h", &[SPARQL], &nested_collection(2_000)).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("max_nesting"), "{}", r.text());
    // Long operator chains build trees as deep as nesting does.
    for update in [
        format!(
            "DELETE {{ ?s ?p ?o }} WHERE {{ ?s ?p ?o FILTER(1{}) }}",
            "+1".repeat(20_000)
        ),
        format!(
            "DELETE {{ ?s ?p ?o }} WHERE {{ ?s ?p ?o FILTER({}true) }}",
            "!".repeat(20_000)
        ),
        format!(
            "DELETE {{ ?s ?p ?o }} WHERE {{ ?s {} ?o }}",
            vec!["<http://e/p>"; 20_000].join("/")
        ),
    ] {
        let r = patch(&s, "h", &[SPARQL], &update).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(r.text().contains("max_update_operators"), "{}", r.text());
    }
    // Within the bounds, nesting works.
    let r = patch(&s, "h", &[SPARQL], &nested_collection(20)).await;
    assert_eq!(r.status, 204, "{}", r.text());
    alive_and_unchanged(&s, &[]).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_bodies_are_refused_in_every_syntax() {
    let s = setup().await;
    let turtle = format!(
        "<> <http://example.org/p> {}1{} .",
        "( ".repeat(5_000),
        " )".repeat(5_000)
    );
    let blank = format!(
        "<> <http://example.org/p> {}1{} .",
        "[ <http://example.org/q> ".repeat(5_000),
        " ]".repeat(5_000)
    );
    let json = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let xml = format!(
        "<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">{}{}</rdf:RDF>",
        "<rdf:Description>".repeat(5_000),
        "</rdf:Description>".repeat(5_000)
    );
    for (ct, body) in [
        (TURTLE, &turtle),
        (TURTLE, &blank),
        (JSON_LD, &json),
        (RDF_XML, &xml),
    ] {
        let r = post(&s, "h", &[ct, ("slug", "deep")], body).await;
        assert_eq!(r.status, 400, "{}: {}", ct.1, r.text());
        assert!(r.text().contains("max_nesting"), "{}", r.text());
    }
    alive_and_unchanged(&s, &["h/deep"]).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rdf_xml_entity_bomb_is_refused_at_once() {
    let s = setup().await;
    // The 909-byte "billion laughs" that kept a core busy and memory at gigabytes before.
    let mut entities = String::from("<!ENTITY lol \"lol\">");
    for i in 1..10 {
        let prev = if i == 1 {
            "lol".to_string()
        } else {
            format!("lol{}", i - 1)
        };
        entities.push_str(&format!(
            "<!ENTITY lol{i} \"{}\">",
            format!("&{prev};").repeat(10)
        ));
    }
    let bomb = format!(
        "<?xml version=\"1.0\"?><!DOCTYPE rdf:RDF [{entities}]>\
         <rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" xmlns:dc=\"http://purl.org/dc/terms/\">\
         <rdf:Description rdf:about=\"\"><dc:title>&lol9;</dc:title></rdf:Description></rdf:RDF>"
    );
    assert!(bomb.len() < 1_200);
    let r = post(&s, "h", &[RDF_XML, ("slug", "bomb")], &bomb).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("entity"), "{}", r.text());
    // An external entity is refused too; nothing is read from the server's disk.
    let external = "<!DOCTYPE rdf:RDF [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>\
        <rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" xmlns:dc=\"http://purl.org/dc/terms/\">\
        <rdf:Description rdf:about=\"\"><dc:title>&x;</dc:title></rdf:Description></rdf:RDF>";
    let r = post(&s, "h", &[RDF_XML, ("slug", "bomb")], external).await;
    assert_eq!(r.status, 400, "{}", r.text());
    // Plain internal entities, as ontology editors write them, still work (as in Fedora 6).
    let ok = "<!DOCTYPE rdf:RDF [<!ENTITY dc \"http://purl.org/dc/terms/\">]>\
        <rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" xmlns:dc=\"http://purl.org/dc/terms/\">\
        <rdf:Description rdf:about=\"\"><dc:relation rdf:resource=\"&dc;x\"/></rdf:Description></rdf:RDF>";
    let r = post(&s, "h", &[RDF_XML, ("slug", "entities")], ok).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let g = graph(&s, "h/entities", &[]).await;
    assert!(g.has(
        &s.url("h/entities"),
        DC_RELATION,
        "http://purl.org/dc/terms/x"
    ));
    alive_and_unchanged(&s, &["h/bomb"]).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_rdf_is_refused_in_every_syntax() {
    let s = setup().await;
    let head = "<?xml version=\"1.0\"?><rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" xmlns:dc=\"http://purl.org/dc/terms/\">";
    let cases = [
        (
            RDF_XML,
            format!(
                "{head}<rdf:Description rdf:about=\"\"><dc:title>x</dc:title></rdf:Description>"
            ),
        ),
        (
            RDF_XML,
            format!("{head}<rdf:Description rdf:about=\"\"><dc:title>x</dc:ti"),
        ),
        (
            TURTLE,
            "<> <http://purl.org/dc/terms/title> \"x".to_string(),
        ),
        (
            ("content-type", "application/n-triples"),
            "<http://x/a> <http://x/p> ".to_string(),
        ),
        (
            JSON_LD,
            "{\"@id\": \"\", \"http://purl.org/dc/terms/title\": \"x\"".to_string(),
        ),
    ];
    for (ct, body) in &cases {
        let r = post(&s, "h", &[*ct, ("slug", "cut")], body).await;
        assert_eq!(r.status, 400, "{}: {}", ct.1, r.text());
        assert!(!r.text().is_empty());
        let r = put(&s, "h", &[*ct], body).await;
        assert_eq!(r.status, 400, "{}: {}", ct.1, r.text());
    }
    alive_and_unchanged(&s, &["h/cut"]).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_are_bounded_by_what_storage_and_fedora_hold() {
    let s = setup().await;
    // A 4 KB name was a 500 ("File name too long") before.
    let long = "n".repeat(4_096);
    let r = put_bytes(
        &s,
        &format!("h/{long}"),
        &[("content-type", "text/plain")],
        b"x",
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().len() < 400, "the message repeats the whole name");
    // A name the id length allows but a file name cannot hold (with Fedora's suffixes).
    let r = put_bytes(
        &s,
        &format!("h/{}", "n".repeat(242)),
        &[("content-type", "text/plain")],
        b"x",
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("at most 241"), "{}", r.text());
    let r = put(&s, &format!("h/{}", "%25".repeat(81)), &[TURTLE], "").await;
    assert_eq!(
        r.status,
        400,
        "'%' takes three bytes in a file name: {}",
        r.text()
    );
    // A 64 KB Slug: refused, and nothing appears in the parent's listing.
    let slug = "s".repeat(65_536);
    let r = post(&s, "h", &[TURTLE, ("slug", &slug)], "").await;
    assert!(r.status.is_client_error(), "{} {}", r.status, r.text());
    assert!(children(&s, "h").await.is_empty());
    // A name that is fine on its own but makes the id longer than Fedora's 503 characters.
    let deep = vec!["d".repeat(200); 3].join("/");
    let r = put(&s, &format!("h/{deep}"), &[TURTLE], "").await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("503"), "{}", r.text());
    // The longest name that fits is stored and read back.
    let fits = "f".repeat(241);
    let r = put_bytes(
        &s,
        &format!("h/{fits}"),
        &[("content-type", "text/plain")],
        b"x",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(s.get(&format!("h/{fits}"), &[]).await.body.as_ref(), b"x");
    assert_eq!(
        s.get(&format!("h/{fits}/fcr:metadata"), &[]).await.status,
        200
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_and_paths_are_checked_before_anything_runs() {
    let s = setup().await;
    for bad in ["h/a%zz", "h/a%", "h/a%4", "h/%ff%fe"] {
        let url = format!("{}/{bad}", s.base);
        for m in [Method::GET, Method::PUT, Method::DELETE] {
            let r = s.request(m.clone(), &url, &[TURTLE], "").await;
            assert_eq!(r.status, 400, "{m} {bad}: {}", r.text());
        }
    }
    let r = s.get(&format!("h/{}", "u".repeat(9_000)), &[]).await;
    assert_eq!(r.status, 414, "{}", r.text());
    // An encoded slash is a path separator, as in Fedora 6.
    assert_eq!(put(&s, "h%2Fenc", &[TURTLE], "").await.status, 201);
    assert_eq!(s.get("h/enc", &[]).await.status, 200);
    // A head larger than the limit is refused by the HTTP layer (431), nothing more.
    let big = "x".repeat(40_000);
    let r = s
        .request(Method::GET, &s.url("h"), &[("x-big", &big)], "")
        .await;
    assert_eq!(r.status, 431);
    alive_and_unchanged(&s, &["h/a"]).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slug_with_slashes_makes_a_path_as_in_fedora() {
    let s = setup().await;
    let r = post(&s, "h", &[TURTLE, ("slug", "a/b")], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("location"), Some(s.url("h/a/b").as_str()));
    assert_eq!(s.get("h/a", &[]).await.status, 404);
    for (slug, at) in [("/lead", "h/lead"), ("trail/", "h/trail")] {
        let r = post(&s, "h", &[TURTLE, ("slug", slug)], "").await;
        assert_eq!(r.header("location"), Some(s.url(at).as_str()), "{slug}");
    }
    let r = post(&s, "h", &[TURTLE, ("slug", "x//y")], "").await;
    assert_eq!(r.status, 400, "{}", r.text());
    // Percent-encoded and raw UTF-8 name the same resource; Location carries the IRI as a
    // URI (it was missing for non-ASCII names before).
    let r = post(&s, "h", &[TURTLE, ("slug", "%C3%A9t%C3%A9")], "").await;
    assert_eq!(r.status, 201);
    assert_eq!(
        r.header("location"),
        Some(s.url("h/%C3%A9t%C3%A9").as_str())
    );
    assert_eq!(r.text(), s.url("h/été"));
    assert_eq!(s.get("h/%C3%A9t%C3%A9", &[]).await.status, 200);
    // Raw UTF-8 in the header (the test client only sends ASCII, so over a socket).
    let host = s
        .base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let mut raw = format!(
        "POST /rest/h HTTP/1.1\r\nHost: {host}\r\nAuthorization: Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4=\r\nContent-Type: text/turtle\r\nContent-Length: 0\r\nConnection: close\r\nSlug: "
    )
    .into_bytes();
    raw.extend_from_slice("hiver é\r\n\r\n".as_bytes());
    let answer = {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut socket = tokio::net::TcpStream::connect(&host).await.unwrap();
        socket.write_all(&raw).await.unwrap();
        let mut out = Vec::new();
        socket.read_to_end(&mut out).await.unwrap();
        String::from_utf8_lossy(&out).into_owned()
    };
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    let location = format!("Location: {}\r\n", s.url("h/hiver%20%C3%A9"));
    assert!(answer.contains(&location), "{answer}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triples_about_other_subjects_are_refused() {
    let s = setup().await;
    assert_eq!(put(&s, "other", &[TURTLE], "").await.status, 201);
    let other = s.url("other");
    let cases = [
        (format!("<{other}> <{DC_TITLE}> \"x\" ."), 403),
        (format!("<h/child> <{DC_TITLE}> \"x\" ."), 403),
        (
            format!("<http://example.org/outside> <{DC_TITLE}> \"x\" ."),
            400,
        ),
    ];
    for (body, status) in &cases {
        let r = put(&s, "h", &[TURTLE], body).await;
        assert_eq!(r.status, *status, "PUT {body}: {}", r.text());
        let r = post(&s, "", &[TURTLE, ("slug", "subj")], body).await;
        assert_eq!(r.status, *status, "POST {body}: {}", r.text());
    }
    for (subject, status) in [(other.as_str(), 403), ("http://example.org/outside", 400)] {
        let update = format!("INSERT DATA {{ <{subject}> <{DC_TITLE}> \"x\" . }}");
        let r = patch(&s, "h", &[SPARQL], &update).await;
        assert_eq!(r.status, status, "PATCH {subject}: {}", r.text());
    }
    // The resource itself, its hash URIs and blank nodes are its own.
    let own =
        format!("<> <{DC_TITLE}> \"a\" . <#part> <{DC_TITLE}> \"b\" . _:x <{DC_TITLE}> \"c\" .");
    assert_eq!(put(&s, "h", &[TURTLE], &own).await.status, 204);
    let r = patch(
        &s,
        "h",
        &[SPARQL],
        &format!("INSERT DATA {{ <#more> <{DC_TITLE}> \"d\" . }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    // A binary's description speaks about the binary.
    assert_eq!(
        put_bytes(&s, "h/bin", &[("content-type", "text/plain")], b"x")
            .await
            .status,
        201
    );
    let r = put(
        &s,
        "h/bin/fcr:metadata",
        &[TURTLE],
        &format!("<> <{DC_TITLE}> \"d\" ."),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = put(
        &s,
        "h/bin/fcr:metadata",
        &[TURTLE],
        &format!("<{other}> <{DC_TITLE}> \"d\" ."),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text());
    alive_and_unchanged(&s, &["subj"]).await;
    assert!(graph(&s, "other", &[])
        .await
        .with_predicate(DC_TITLE)
        .is_empty());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_body_and_parse_limits_answer_413_and_400() {
    let s = TestServer::start_with_limits(arca_config::Limits {
        rdf_body_bytes: Some(4_096),
        sparql_body_bytes: Some(1_024),
        rdf_triples: Some(50),
        rdf_literal_bytes: Some(100),
        ..Default::default()
    })
    .await;
    assert_eq!(put(&s, "h", &[TURTLE], "").await.status, 201);
    let big = format!("<> <{DC_TITLE}> \"{}\" .", "x".repeat(5_000));
    let r = put(&s, "h", &[TURTLE], &big).await;
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(r.text().contains("max_rdf_body"), "{}", r.text());
    let r = patch(
        &s,
        "h",
        &[SPARQL],
        &format!(
            "INSERT DATA {{ <> <{DC_TITLE}> \"{}\" . }}",
            "x".repeat(2_000)
        ),
    )
    .await;
    assert_eq!(r.status, 413, "{}", r.text());
    let many: String = (0..60)
        .map(|i| format!("<> <{DC_TITLE}> \"{i}\" .\n"))
        .collect();
    let r = put(&s, "h", &[TURTLE], &many).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("max_triples"), "{}", r.text());
    let r = put(
        &s,
        "h",
        &[TURTLE],
        &format!("<> <{DC_TITLE}> \"{}\" .", "y".repeat(200)),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("max_literal_bytes"), "{}", r.text());
    // A PATCH whose result grows past the triple bound is refused too.
    let inserts: String = (0..40)
        .map(|i| format!("<> <{DC_TITLE}> \"{i}\" ."))
        .collect();
    assert_eq!(put(&s, "h", &[TURTLE], &inserts).await.status, 204);
    let more: String = (40..60)
        .map(|i| format!("<> <{DC_TITLE}> \"{i}\" ."))
        .collect();
    let r = patch(&s, "h", &[SPARQL], &format!("INSERT DATA {{ {more} }}")).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(graph(&s, "h", &[]).await.with_predicate(DC_TITLE).len(), 40);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graph_rdf_xml_cannot_express_is_406_not_a_broken_document() {
    // Found by fuzzing: the RDF/XML writer put reserved rdf: names in as element names.
    let s = setup().await;
    let body = "<> a <http://www.w3.org/1999/02/22-rdf-syntax-ns#bagID> .";
    assert_eq!(put(&s, "h", &[TURTLE], body).await.status, 204);
    let r = s.get("h", &[("accept", "application/rdf+xml")]).await;
    assert_eq!(r.status, 406, "{}", r.text());
    assert!(r.text().contains("RDF/XML reserves"), "{}", r.text());
    assert_eq!(s.get("h", &[("accept", "text/turtle")]).await.status, 200);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binaries_go_to_disk_when_the_memory_budget_has_no_room() {
    let s = TestServer::start_with_limits(arca_config::Limits {
        rdf_body_bytes: Some(2_048),
        sparql_body_bytes: Some(1_024),
        buffered_bodies_bytes: Some(4_096),
        ..Default::default()
    })
    .await;
    // 100 KB cannot be held within a 4 KiB budget: it is streamed to a file instead, and
    // stored and served byte for byte.
    let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let r = put_bytes(
        &s,
        "big",
        &[("content-type", "application/octet-stream")],
        &bytes,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(s.get("big", &[]).await.body.as_ref(), bytes.as_slice());
    // RDF bodies within their limit still fit the budget.
    let body = format!("<> <{DC_TITLE}> \"fits\" .");
    assert_eq!(put(&s, "small", &[TURTLE], &body).await.status, 201);
    s.stop().await;
}

/// The head of the answer to `raw`, read off the socket as the server wrote it.
async fn raw_head(s: &TestServer, raw: String) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = s
        .base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap();
    let mut socket = tokio::net::TcpStream::connect(host).await.unwrap();
    socket.write_all(raw.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    socket.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    text.split_once("\r\n\r\n")
        .map_or(text.clone(), |(h, _)| h.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_names_are_written_in_their_conventional_case_as_fedora_does() {
    let s = setup().await;
    let admin = "Authorization: Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4=";
    let created = raw_head(
        &s,
        format!(
            "POST /rest/h HTTP/1.1\r\nHost: x\r\n{admin}\r\nContent-Type: text/turtle\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
    )
    .await;
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    for name in ["Location", "Link", "ETag", "Content-Type"] {
        // hyper can only title-case: `ETag` goes out as `Etag`.
        let written = if name == "ETag" { "Etag" } else { name };
        assert!(
            created.contains(&format!("\r\n{written}: ")),
            "{name}: {created}"
        );
    }
    let read = raw_head(
        &s,
        format!("GET /rest/h HTTP/1.1\r\nHost: x\r\n{admin}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    for name in [
        "Accept-Post",
        "Accept-Patch",
        "Allow",
        "Vary",
        "Last-Modified",
    ] {
        assert!(read.contains(&format!("\r\n{name}: ")), "{name}: {read}");
    }
    let refused = raw_head(
        &s,
        "PUT /rest/h HTTP/1.1\r\nHost: x\r\nContent-Type: text/turtle\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
    )
    .await;
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    assert!(refused.contains("\r\nWww-Authenticate: "), "{refused}");
    for head in [&created, &read, &refused] {
        for line in head.lines().skip(1) {
            assert!(
                line.starts_with(|c: char| c.is_ascii_uppercase()),
                "a header name in lower case: {line}"
            );
        }
    }
    s.stop().await;
}

/// Reads one answer with a `Content-Length` off `socket`: its head and its body.
async fn read_answer(socket: &mut tokio::net::TcpStream) -> (String, String) {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = socket
            .read(&mut chunk)
            .await
            .expect("the answer is readable");
        assert!(
            n > 0,
            "the connection closed before a whole answer: {buf:?}"
        );
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if body.len() >= length {
                return (head.to_string(), body.to_string());
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_upload_is_answered_after_its_body_and_the_connection_stays_usable() {
    use tokio::io::AsyncWriteExt;
    let s = setup().await;
    let host = s
        .base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap();
    let mut socket = tokio::net::TcpStream::connect(host).await.unwrap();
    // A SHA-512 value sent as SHA-1: refused before the body is looked at. The body comes
    // in 64 KiB chunks (2 MiB in all), slowly, as a client streaming a file does.
    let digest = format!("sha={}", "a".repeat(128));
    let head = format!(
        "PUT /rest/h/file HTTP/1.1\r\nHost: {host}\r\nAuthorization: Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4=\r\nContent-Type: application/octet-stream\r\nDigest: {digest}\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    let piece = vec![b'x'; 64 << 10];
    for _ in 0..32 {
        socket
            .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
            .await
            .expect("the server reads the body of a refused request");
        socket.write_all(&piece).await.expect("the body is read");
        socket.write_all(b"\r\n").await.expect("the body is read");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    socket.write_all(b"0\r\n\r\n").await.unwrap();
    let (head, body) = read_answer(&mut socket).await;
    assert!(head.starts_with("HTTP/1.1 409"), "{head}");
    assert!(body.contains("digest"), "the reason is readable: {body}");
    assert!(!head.contains("Connection: close"), "{head}");
    // The same connection answers the next request.
    socket
        .write_all(
            format!("GET /rest/h HTTP/1.1\r\nHost: {host}\r\nAuthorization: Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4=\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    let (head, _) = read_answer(&mut socket).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    alive_and_unchanged(&s, &["h/file"]).await;
    s.stop().await;
}
