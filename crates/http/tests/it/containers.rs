//! Basic containers: creation by POST (Slug, minted ids) and PUT, replacement by PUT, the
//! interaction model from `Link: rel="type"`, and the headers GET, HEAD and OPTIONS carry.

use crate::common::*;
use arca_testkit::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_with_slug_creates_a_basic_container() {
    let s = TestServer::start().await;
    let r = post(
        &s,
        "",
        &[TURTLE, ("slug", "books")],
        "<> <http://purl.org/dc/terms/title> \"Books\" .",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let url = s.url("books");
    assert_eq!(r.header("location"), Some(url.as_str()));
    assert!(r.has_link(LDP_BASIC_CONTAINER, "type"));
    assert!(r.header("etag").is_some());

    let g = graph(&s, "books", &[]).await;
    assert!(g.has_lit(&url, DC_TITLE, "Books"));
    assert!(g.has(&url, RDF_TYPE, LDP_BASIC_CONTAINER));
    // LDP 5.2.3: the parent now contains the new resource.
    assert_eq!(children(&s, "").await, vec![url]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_without_slug_mints_an_id_below_the_parent() {
    let s = TestServer::start().await;
    container(&s, "parent").await;
    let a = post(&s, "parent", &[TURTLE], "").await;
    let b = post(&s, "parent", &[TURTLE], "").await;
    assert_eq!(a.status, 201, "{}", a.text());
    assert_eq!(b.status, 201, "{}", b.text());
    let (a, b) = (a.header("location").unwrap(), b.header("location").unwrap());
    let prefix = format!("{}/", s.url("parent"));
    for loc in [a, b] {
        let id = loc.strip_prefix(&prefix).expect("minted below the parent");
        assert!(!id.is_empty() && !id.contains('/'), "minted id {id:?}");
        let g = s.request(http::Method::GET, loc, &[], Vec::new()).await;
        assert_eq!(g.status, 200);
    }
    assert_ne!(a, b);
    let mut expected = vec![a.to_string(), b.to_string()];
    expected.sort();
    assert_eq!(children(&s, "parent").await, expected);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_slug_gets_a_minted_id() {
    let s = TestServer::start().await;
    let first = post(&s, "", &[TURTLE, ("slug", "dup")], "").await;
    assert_eq!(first.status, 201);
    assert_eq!(first.header("location"), Some(s.url("dup").as_str()));
    let second = post(
        &s,
        "",
        &[TURTLE, ("slug", "dup")],
        "<> <http://purl.org/dc/terms/title> \"second\" .",
    )
    .await;
    assert_eq!(second.status, 201, "{}", second.text());
    let loc = second.header("location").unwrap().to_string();
    assert_ne!(loc, s.url("dup"));
    assert!(loc.starts_with(&format!("{}/", s.base)));
    // The first resource is untouched, the second lives at its minted id.
    let g = graph(&s, "dup", &[]).await;
    assert!(g.objects(&s.url("dup"), DC_TITLE).is_empty());
    let path = loc.strip_prefix(&format!("{}/", s.base)).unwrap();
    assert!(graph(&s, path, &[]).await.has_lit(&loc, DC_TITLE, "second"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_creates_then_replaces() {
    let s = TestServer::start().await;
    let r = put(
        &s,
        "doc",
        &[TURTLE],
        "<> <http://purl.org/dc/terms/title> \"one\" ; <http://purl.org/dc/terms/relation> <http://example.org/a> .",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("location"), Some(s.url("doc").as_str()));
    assert!(r.has_link(LDP_BASIC_CONTAINER, "type"));

    let r = put(
        &s,
        "doc",
        &[TURTLE],
        "<> <http://purl.org/dc/terms/title> \"two\" .",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(r.body.is_empty());
    let url = s.url("doc");
    let g = graph(&s, "doc", &[]).await;
    // PUT replaces the whole client-managed state (LDP 4.2.4.1).
    assert_eq!(
        g.user_triples(),
        [triple(&url, DC_TITLE, lit("two"))].into_iter().collect()
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_below_a_missing_intermediate_uses_the_nearest_container_as_parent() {
    let s = TestServer::start().await;
    container(&s, "top").await;
    container(&s, "top/a/b").await;
    let g = graph(&s, "top/a/b", &[]).await;
    // The nearest container lists it and is its fedora:hasParent (Fedora 7; 6.x states none).
    assert_eq!(
        g.object_iris(&s.url("top/a/b"), &fedora("hasParent")),
        vec![s.url("top")]
    );
    assert_eq!(children(&s, "top").await, vec![s.url("top/a/b")]);
    // The ghost node `top/a` stays empty, as in Fedora 6: PUT is 409 ("immutable
    // resource"), a POST with Slug `a` gets a minted name.
    let r = put(&s, "top/a", &[TURTLE], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
    let r = post(&s, "top", &[TURTLE, ("slug", "a")], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_ne!(r.header("location"), Some(s.url("top/a").as_str()));
    assert_eq!(s.get("top/a", &[]).await.status, 404);
    assert_eq!(children(&s, "top").await.len(), 2);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interaction_model_comes_from_the_link_header() {
    let s = TestServer::start().await;
    // Explicit basic container.
    let r = post(&s, "", &[TURTLE, LINK_BASIC, ("slug", "c")], "").await;
    assert_eq!(r.status, 201);
    assert!(r.has_link(LDP_BASIC_CONTAINER, "type"));
    // ldp:RDFSource (generic) makes a basic container too.
    let r = post(
        &s,
        "",
        &[
            TURTLE,
            ("slug", "rs"),
            ("link", "<http://www.w3.org/ns/ldp#RDFSource>; rel=\"type\""),
        ],
        "",
    )
    .await;
    assert_eq!(r.status, 201);
    assert!(r.has_link(LDP_BASIC_CONTAINER, "type"));
    assert!(r.has_link(LDP_RDF_SOURCE, "type"));

    // 3.1.4: NonRDFSource with an RDF content type is a binary holding the bytes as sent.
    let ttl = "<> <http://purl.org/dc/terms/title> \"not parsed\" .";
    let r = post(&s, "", &[TURTLE, LINK_BINARY, ("slug", "b")], ttl).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.has_link(LDP_NON_RDF_SOURCE, "type"));
    assert!(!r.has_link(LDP_BASIC_CONTAINER, "type"));
    let g = s.get("b", &[]).await;
    assert_eq!(g.status, 200);
    assert_eq!(g.text(), ttl);
    assert!(g.header("content-type").unwrap().starts_with("text/turtle"));
    assert!(g.has_link(LDP_NON_RDF_SOURCE, "type"));

    // The model is not inferred from rdf:type triples in the body (LDP 5.2.3.4).
    let r = post(
        &s,
        "",
        &[TURTLE, ("slug", "typed")],
        "<> a <http://example.org/Thing> .",
    )
    .await;
    assert_eq!(r.status, 201);
    assert!(r.has_link(LDP_BASIC_CONTAINER, "type"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_rdf_body_sent_as_an_rdf_source_is_refused() {
    // Suite 3.1.4-B: plain text POSTed with an ldp:RDFSource type link.
    let s = TestServer::start().await;
    let r = post(
        &s,
        "",
        &[
            ("content-type", "text/plain"),
            ("slug", "txt"),
            ("link", "<http://www.w3.org/ns/ldp#RDFSource>; rel=\"type\""),
        ],
        "just some words, not RDF",
    )
    .await;
    assert!(r.status.is_client_error(), "{} {}", r.status, r.text());
    assert_eq!(s.get("txt", &[]).await.status, 404);
    assert!(children(&s, "").await.is_empty());
    s.stop().await;
}

fn assert_container_headers(r: &arca_testkit::Reply) {
    for t in [
        LDP_BASIC_CONTAINER,
        LDP_CONTAINER,
        LDP_RDF_SOURCE,
        LDP_RESOURCE,
    ] {
        assert!(
            r.has_link(t, "type"),
            "missing type link {t}: {}",
            r.header_all("link")
        );
    }
    assert!(!r.has_link(LDP_NON_RDF_SOURCE, "type"));
    let allow = header_items(r, "allow");
    for m in ["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"] {
        assert!(allow.iter().any(|a| a == m), "Allow lacks {m}: {allow:?}");
    }
    let accept_post = header_items(r, "accept-post");
    for t in [
        "text/turtle",
        "application/ld+json",
        "application/n-triples",
    ] {
        assert!(
            accept_post.iter().any(|a| a == t),
            "Accept-Post lacks {t}: {accept_post:?}"
        );
    }
    assert!(header_items(r, "accept-patch")
        .iter()
        .any(|a| a == "application/sparql-update"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_head_and_options_on_a_container_carry_the_required_headers() {
    let s = TestServer::start().await;
    container_with(&s, "c", "<> <http://purl.org/dc/terms/title> \"C\" .").await;

    let get = s.get("c", &[]).await;
    assert_eq!(get.status, 200);
    assert_container_headers(&get);
    let etag = get.header("etag").expect("ETag on GET").to_string();
    let last_modified = get.header("last-modified").expect("Last-Modified on GET");
    assert!(httpdate::parse_http_date(last_modified).is_ok());
    assert!(get
        .header("content-type")
        .unwrap()
        .starts_with("text/turtle"));
    assert!(!get.body.is_empty());

    let head = head(&s, "c", &[]).await;
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty(), "HEAD has no body");
    assert_container_headers(&head);
    assert_eq!(head.header("etag"), Some(etag.as_str()));
    assert_eq!(head.header("last-modified"), Some(last_modified));

    let opt = options(&s, "c").await;
    assert_eq!(opt.status, 200);
    assert_container_headers(&opt);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_root_is_a_container_that_cannot_be_deleted() {
    let s = TestServer::start().await;
    let r = s.get("", &[]).await;
    assert_eq!(r.status, 200);
    assert!(r.has_link(LDP_BASIC_CONTAINER, "type"));
    assert!(!header_items(&r, "allow").iter().any(|m| m == "DELETE"));
    let g = Graph::of(&r, &s.base);
    assert!(g.has(&s.url(""), RDF_TYPE, &fedora("RepositoryRoot")));
    let d = delete(&s, "", &[]).await;
    assert_eq!(d.status, 405);
    assert_eq!(s.get("", &[]).await.status, 200);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_root_names_its_transaction_provider_and_its_users_as_fedora_6_does() {
    let s = TestServer::start().await;
    let root = s.url("");
    let g = Graph::of(&s.get("", &[]).await, &s.base);
    assert_eq!(
        g.object_iris(&root, &fedora("hasTransactionProvider")),
        vec![s.url("fcr:tx")]
    );
    // Its header names the user Fedora 6's storage library records (issue 38.8), shown as
    // Fedora 6.5 shows them ...
    assert!(g.has_lit(&root, &fedora("createdBy"), "fedoraAdmin"));
    assert!(g.has_lit(&root, &fedora("lastModifiedBy"), "fedoraAdmin"));
    // ... and a change of it names who made it.
    let r = sparql(
        &s,
        "",
        "INSERT DATA { <> <http://purl.org/dc/terms/title> \"root\" }",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let g = Graph::of(&s.get("", &[]).await, &s.base);
    assert!(g.has_lit(&root, &fedora("lastModifiedBy"), "fedoraAdmin"));
    assert!(g.has_lit(&root, &fedora("createdBy"), "fedoraAdmin"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_to_a_missing_container_is_404_and_creates_nothing() {
    let s = TestServer::start().await;
    let r = post(&s, "nowhere", &[TURTLE, ("slug", "x")], "").await;
    assert_eq!(r.status, 404);
    assert_eq!(s.get("nowhere/x", &[]).await.status, 404);
    assert_eq!(s.get("nowhere", &[]).await.status, 404);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_gives_the_headers_of_get_content_length_included() {
    // Fedora API 3.3: HEAD answers with GET's headers, without a body.
    let s = TestServer::start().await;
    let body = "<> <http://purl.org/dc/terms/title> \"head\" .";
    assert_eq!(put(&s, "hd", &[TURTLE], body).await.status, 201);
    for accept in [
        "text/turtle",
        "application/ld+json",
        "application/n-triples",
    ] {
        let get = s.get("hd", &[("accept", accept)]).await;
        let head = s
            .request(http::Method::HEAD, &s.url("hd"), &[("accept", accept)], "")
            .await;
        assert_eq!(head.status, 200);
        assert!(head.body.is_empty());
        assert_eq!(
            head.header("content-length"),
            Some(get.body.len().to_string().as_str()),
            "{accept}"
        );
        for h in [
            "content-type",
            "etag",
            "last-modified",
            "allow",
            "accept-post",
        ] {
            assert_eq!(head.header(h), get.header(h), "{accept}: {h}");
        }
        assert_eq!(head.header_all("link"), get.header_all("link"));
    }
    s.stop().await;
}
