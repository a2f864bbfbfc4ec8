//! Refused requests: malformed RDF, unknown or changed interaction models, server-managed
//! triples, invalid paths, unsupported media types, missing resources. In every refused case
//! nothing was created.

use crate::common::*;
use arca_testkit::TestServer;
use http::Method;

/// Asserts that `path` does not exist and that the listings of the root and of `bad` are
/// what they were at the start (only `bad` in the root, nothing in `bad`).
async fn nothing_created(s: &TestServer, paths: &[&str]) {
    for p in paths {
        assert_eq!(s.get(p, &[]).await.status, 404, "{p} exists");
    }
    assert_eq!(children(s, "").await, vec![s.url("bad")]);
    assert!(
        children(s, "bad").await.is_empty(),
        "{:?}",
        children(s, "bad").await
    );
}

async fn setup() -> TestServer {
    let s = TestServer::start().await;
    container(&s, "bad").await;
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_turtle_is_400_with_the_parsers_message() {
    let s = setup().await;
    let body = "<> <http://purl.org/dc/terms/title> \"unterminated .\n";
    let r = post(&s, "bad", &[TURTLE, ("slug", "t")], body).await;
    assert_eq!(r.status, 400);
    let msg = r.text();
    assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    // The parser's own words, with a position, not just a status.
    assert!(
        msg.contains("line 1") && msg.contains("end of file"),
        "{msg}"
    );
    let syntax =
        "@prefix dc: <http://purl.org/dc/terms/> .\n<> dc:title \"a\" ; ex:undeclared \"b\" .";
    let r = put(&s, "bad/t", &[TURTLE], syntax).await;
    assert_eq!(r.status, 400);
    let msg = r.text();
    assert!(
        msg.contains("line 2") && msg.contains("ex:"),
        "names the undeclared prefix: {msg}"
    );
    let r = put(
        &s,
        "bad/t",
        &[("content-type", "application/n-triples")],
        "<a> <b> .",
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(r.text().contains("line 1"), "{}", r.text());
    nothing_created(&s, &["bad/t"]).await;

    // Replacing an existing resource with malformed Turtle leaves it as it was.
    container_with(&s, "bad/ok", "<> <http://purl.org/dc/terms/title> \"ok\" .").await;
    let r = put(&s, "bad/ok", &[TURTLE], body).await;
    assert_eq!(r.status, 400);
    assert!(graph(&s, "bad/ok", &[])
        .await
        .has_lit(&s.url("bad/ok"), DC_TITLE, "ok"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_ld_is_400_with_the_parsers_message() {
    let s = setup().await;
    // Each body with a fragment of the message the JSON(-LD) parser gives for it.
    for (body, says) in [
        (
            "{\"@id\": \"\", \"http://purl.org/dc/terms/title\": ",
            "line 1",
        ),
        ("[1, 2", "line 1"),
        ("{\"@id\": 5}", "@id"),
    ] {
        let r = post(
            &s,
            "bad",
            &[("content-type", "application/ld+json"), ("slug", "j")],
            body,
        )
        .await;
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert!(r.text().contains(says), "{body}: {}", r.text());
    }
    nothing_created(&s, &["bad/j"]).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_interaction_model_is_400_with_constrained_by() {
    // Fedora 6 answers 400 "Invalid interaction model" with a constrainedBy link.
    let s = setup().await;
    for link in [
        "<http://www.w3.org/ns/ldp#Bogus>; rel=\"type\"",
        "<http://example.org/unknown>; rel=\"type\"",
        "<http://example.org/unknown>; rel=type",
    ] {
        let r = post(&s, "bad", &[TURTLE, ("slug", "m"), ("link", link)], "").await;
        assert_eq!(r.status, 400, "{link}: {}", r.text());
        assert!(r.text().contains("interaction model"), "{}", r.text());
        assert_constrained_by(&s, &r).await;
        let r = put(&s, "bad/m", &[TURTLE, ("link", link)], "").await;
        assert_eq!(r.status, 400, "{link}: {}", r.text());
        assert_constrained_by(&s, &r).await;
    }
    nothing_created(&s, &["bad/m"]).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_link_header_is_400_not_a_default() {
    let s = setup().await;
    for link in [
        "garbage",
        "<http://www.w3.org/ns/ldp#BasicContainer>",
        "<http://www.w3.org/ns/ldp#BasicContainer; rel=\"type\"",
        "<http://www.w3.org/ns/ldp#BasicContainer> rel=\"type\"",
        "<http://www.w3.org/ns/ldp#BasicContainer>; rel=\"type",
    ] {
        let r = post(&s, "bad", &[TURTLE, ("slug", "l"), ("link", link)], "").await;
        assert_eq!(r.status, 400, "{link}: {}", r.text());
        assert!(r.text().to_lowercase().contains("link"), "{}", r.text());
        let r = put(&s, "bad/l", &[TURTLE, ("link", link)], "").await;
        assert_eq!(r.status, 400, "{link}: {}", r.text());
    }
    nothing_created(&s, &["bad/l"]).await;
    // Unquoted rel=type is accepted, as Fedora 6 does.
    let r = post(
        &s,
        "bad",
        &[
            TURTLE,
            ("slug", "ok"),
            (
                "link",
                "<http://www.w3.org/ns/ldp#BasicContainer>; rel=type",
            ),
        ],
        "",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archival_group_misuse_is_409_with_constrained_by() {
    let s = setup().await;
    let ag = "<http://fedora.info/definitions/v4/repository#ArchivalGroup>; rel=\"type\"";
    let r = put(&s, "bad/ag", &[TURTLE, ("link", ag)], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    // An Archival Group inside one, by POST and by PUT, at any depth.
    let r = post(&s, "bad/ag", &[TURTLE, ("slug", "m"), ("link", ag)], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
    for path in ["bad/ag/m", "bad/ag/deeper/m"] {
        let r = put(&s, path, &[TURTLE, ("link", ag)], "").await;
        assert_eq!(r.status, 409, "{path}: {}", r.text());
        assert_constrained_by(&s, &r).await;
    }
    // A binary cannot be an Archival Group.
    let r = put(
        &s,
        "bad/agb",
        &[("content-type", "text/plain"), ("link", ag)],
        "bytes",
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
    // A part cannot be versioned on its own.
    let r = put(&s, "bad/ag/part", &[TURTLE], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = raw(&s, Method::POST, "/rest/bad/ag/part/fcr:versions", &[], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
    for p in ["bad/ag/m", "bad/ag/deeper/m", "bad/agb"] {
        assert_eq!(s.get(p, &[]).await.status, 404, "{p} exists");
    }
    assert_eq!(children(&s, "bad").await, vec![s.url("bad/ag")]);
    assert_eq!(children(&s, "bad/ag").await, vec![s.url("bad/ag/part")]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_the_interaction_model_is_409_with_constrained_by() {
    let s = setup().await;
    container_with(&s, "bad/c", "<> <http://purl.org/dc/terms/title> \"c\" .").await;
    binary(&s, "bad/b", "text/plain", b"bytes").await;
    let (c_tag, b_tag) = (
        s.get("bad/c", &[])
            .await
            .header("etag")
            .unwrap()
            .to_string(),
        s.get("bad/b", &[])
            .await
            .header("etag")
            .unwrap()
            .to_string(),
    );
    // 3.6-A: an RDF source PUT as a binary.
    let r = put(
        &s,
        "bad/c",
        &[("content-type", "text/plain"), LINK_BINARY],
        "bytes",
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
    // A binary PUT as a container.
    let r = put(&s, "bad/b", &[TURTLE, LINK_BASIC], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
    assert_eq!(
        s.get("bad/c", &[]).await.header("etag"),
        Some(c_tag.as_str())
    );
    assert_eq!(
        s.get("bad/b", &[]).await.header("etag"),
        Some(b_tag.as_str())
    );
    assert_eq!(&s.get("bad/b", &[]).await.body[..], b"bytes");
    // Naming the model it already has is fine.
    let r = put(&s, "bad/c", &[TURTLE, LINK_BASIC], "").await;
    assert_eq!(r.status, 204, "{}", r.text());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_managed_triple_in_the_body_is_409() {
    let s = setup().await;
    let body = "<> <http://fedora.info/definitions/v4/repository#created> \"2000-01-01T00:00:00Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime> .";
    let r = post(&s, "bad", &[TURTLE, ("slug", "sm")], body).await;
    assert_eq!(r.status, 409);
    assert_constrained_by(&s, &r).await;
    assert!(r.text().contains(&fedora("created")), "{}", r.text());
    let r = put(&s, "bad/sm", &[TURTLE], body).await;
    assert_eq!(r.status, 409);
    nothing_created(&s, &["bad/sm"]).await;
    s.stop().await;
}

/// Sends `method` to a raw path and asserts a 400 or 409 (409 with constrainedBy).
async fn refused(s: &TestServer, method: Method, raw_path: &str, headers: &[(&str, &str)]) {
    let r = raw(s, method.clone(), raw_path, headers, "").await;
    assert!(
        r.status == 400 || r.status == 409,
        "{method} {raw_path}: {} {}",
        r.status,
        r.text()
    );
    if r.status == 409 {
        assert_constrained_by(s, &r).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_paths_are_refused_and_create_nothing() {
    let s = setup().await;
    let paths = [
        "/rest/bad/.fcrepo",
        "/rest/bad/.fcrepo/x",
        "/rest/fcr:foo",
        "/rest/bad/fcr:foo",
        "/rest/bad/x~fcr-desc",
        "/rest/x~fcr-desc",
        "/rest/bad/x~fcr-acl",
        "/rest/bad/fcr-root",
        "/rest/bad/fcr-container.nt",
        "/rest/bad/fcr:metadata/x",
        "/rest/bad//b",
        "/rest/bad/a//b",
        "/rest/bad/../x",
        "/rest/bad/%2E%2E/x",
        "/rest/bad/%2e%2e",
        "/rest/bad/./x",
        "/rest/bad/%2E/x",
        "/rest/bad/a%2F%2Fb",
        "/rest/bad/%2Efcrepo",
    ];
    for p in paths {
        refused(&s, Method::PUT, p, &[TURTLE]).await;
        refused(
            &s,
            Method::PUT,
            p,
            &[("content-type", "text/plain"), LINK_BINARY],
        )
        .await;
    }
    // POST into an invalid path, and invalid Slugs.
    refused(&s, Method::POST, "/rest/bad/.fcrepo", &[TURTLE]).await;
    for slug in [
        ".fcrepo",
        "fcr:foo",
        "x~fcr-desc",
        "..",
        "fcr:tombstone",
        "a//b",
    ] {
        refused(&s, Method::POST, "/rest/bad", &[TURTLE, ("slug", slug)]).await;
    }
    // Nothing was created anywhere: not below `bad`, not at the root, and none of the
    // paths the invalid ones could be normalized to.
    nothing_created(&s, &["x", "bad/x", "bad/b", "bad/a", "bad/a/b", "a", "b"]).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupported_media_type_for_an_rdf_source_is_415() {
    let s = setup().await;
    // Creating an RDF source from a non-RDF body.
    for ct in ["application/pdf", "application/json", "image/png"] {
        let r = post(
            &s,
            "bad",
            &[("content-type", ct), ("slug", "u"), LINK_BASIC],
            "{}",
        )
        .await;
        assert_eq!(r.status, 415, "{ct}: {}", r.text());
        let r = put(&s, "bad/u", &[("content-type", ct), LINK_BASIC], "{}").await;
        assert_eq!(r.status, 415, "{ct}: {}", r.text());
    }
    nothing_created(&s, &["bad/u"]).await;
    // Replacing an RDF source with a non-RDF body.
    container_with(&s, "bad/c", "<> <http://purl.org/dc/terms/title> \"c\" .").await;
    let r = put(
        &s,
        "bad/c",
        &[("content-type", "application/pdf")],
        "%PDF-1.4",
    )
    .await;
    assert_eq!(r.status, 415);
    let r = put(
        &s,
        "bad/c/fcr:metadata",
        &[("content-type", "application/pdf")],
        "x",
    )
    .await;
    assert_eq!(r.status, 404, "{}", r.text());
    binary(&s, "bad/bin", "text/plain", b"x").await;
    let r = put(
        &s,
        "bad/bin/fcr:metadata",
        &[("content-type", "application/pdf")],
        "x",
    )
    .await;
    assert_eq!(r.status, 415);
    assert!(graph(&s, "bad/c", &[])
        .await
        .has_lit(&s.url("bad/c"), DC_TITLE, "c"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_resources_are_404() {
    let s = setup().await;
    assert_eq!(s.get("bad/missing", &[]).await.status, 404);
    assert_eq!(head(&s, "bad/missing", &[]).await.status, 404);
    assert_eq!(options(&s, "bad/missing").await.status, 404);
    assert_eq!(delete(&s, "bad/missing", &[]).await.status, 404);
    assert_eq!(
        sparql(
            &s,
            "bad/missing",
            "INSERT DATA { <> <http://purl.org/dc/terms/title> \"t\" }"
        )
        .await
        .status,
        404
    );
    assert_eq!(post(&s, "bad/missing", &[TURTLE], "").await.status, 404);
    assert_eq!(s.get("bad/missing/fcr:metadata", &[]).await.status, 404);
    // A description of something that is not a binary does not exist either.
    assert_eq!(s.get("bad/fcr:metadata", &[]).await.status, 404);
    // Outside the REST base.
    let r = raw(&s, Method::GET, "/elsewhere", &[], "").await;
    assert_eq!(r.status, 404);
    let r = raw(&s, Method::GET, "/restful", &[], "").await;
    assert_eq!(r.status, 404);
    nothing_created(&s, &["bad/missing"]).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_features_are_refused_with_constrained_by() {
    let s = setup().await;
    // 3.9: without an allow-list (external_content_allowed) external content is refused.
    let r = post(
        &s,
        "bad",
        &[
            ("slug", "ext"),
            ("content-type", "text/plain"),
            (
                "link",
                "<http://example.org/file.txt>; rel=\"http://fedora.info/definitions/fcrepo#ExternalContent\"; handling=\"copy\"; type=\"text/plain\"",
            ),
        ],
        "",
    )
    .await;
    assert!(r.status.is_client_error(), "{}", r.status);
    assert_constrained_by(&s, &r).await;
    // An ACL is not a container: POST to it is 405, naming what it allows.
    let r = raw(&s, Method::POST, "/rest/bad/fcr:acl", &[TURTLE], "").await;
    assert_eq!(r.status, 405, "{}", r.text());
    assert_eq!(
        r.header("allow"),
        Some("GET, HEAD, OPTIONS, PUT, PATCH, DELETE")
    );
    nothing_created(&s, &["bad/ext"]).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_methods_are_405() {
    let s = setup().await;
    let r = raw(
        &s,
        Method::from_bytes(b"MKCOL").unwrap(),
        "/rest/bad",
        &[],
        "",
    )
    .await;
    assert_eq!(r.status, 405);
    assert!(r.header("allow").is_some());
    s.stop().await;
}
