//! The Fedora 3 facade over objects laid out as `arca import fedora3` writes them (built
//! here through the Fedora API, following the import's contract in
//! `arca_fedora3::vocab`): current state, histories and `asOfDateTime` from the versions,
//! deleted datastreams and objects answered from before their tombstones, access, writes
//! refused.

use arca_testkit::TestServer;
use http::{Method, StatusCode};

const TURTLE: (&str, &str) = ("Content-Type", "text/turtle");
const AG: (&str, &str) = (
    "Link",
    "<http://fedora.info/definitions/v4/repository#ArchivalGroup>;rel=\"type\"",
);
const PREFIXES: &str = "@prefix model: <info:fedora/fedora-system:def/model#> .\n\
    @prefix view: <info:fedora/fedora-system:def/view#> .\n\
    @prefix foxml: <info:fedora/fedora-system:def/foxml#> .\n\
    @prefix dc: <http://purl.org/dc/elements/1.1/> .\n\
    @prefix dcterms: <http://purl.org/dc/terms/> .\n\
    @prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n";

async fn facade() -> TestServer {
    TestServer::start_with(None, |c| c.fedora3.facade = arca_config::Facade::On).await
}

fn f3(s: &TestServer, path: &str) -> String {
    format!("{}/fedora/{path}", s.base.trim_end_matches("/rest"))
}

async fn get(s: &TestServer, url: &str, headers: &[(&str, &str)]) -> arca_testkit::Reply {
    s.request(Method::GET, url, headers, "").await
}

async fn put(s: &TestServer, path: &str, headers: &[(&str, &str)], body: &str) {
    let r = s
        .request(Method::PUT, &s.url(path), headers, body.to_string())
        .await;
    assert!(
        r.status.is_success(),
        "PUT {path}: {} {}",
        r.status,
        r.text()
    );
}

async fn object(s: &TestServer, pid: &str, label: &str) {
    let body = format!(
        "{PREFIXES}<> model:state \"Active\" ; model:label \"{label}\" ; model:ownerId \"fedoraAdmin\" ;\n\
         model:createdDate \"2020-01-01T00:00:00.000Z\"^^xsd:dateTime ;\n\
         view:lastModifiedDate \"2020-01-02T00:00:00.000Z\"^^xsd:dateTime ;\n\
         model:hasModel <info:fedora/demo:Model> ; dc:title \"{label} title\" ."
    );
    put(s, pid, &[TURTLE, AG], &body).await;
}

/// Writes one datastream version: content, then the description (two OCFL versions, as an
/// import's version holds both; the description's is the one that counts).
async fn version(
    s: &TestServer,
    pid: &str,
    dsid: &str,
    n: u32,
    created: &str,
    content: &str,
    state: &str,
) {
    put(
        s,
        &format!("{pid}/{dsid}"),
        &[("Content-Type", "text/plain")],
        content,
    )
    .await;
    let body = format!(
        "{PREFIXES}<> dcterms:title \"{dsid} label {n}\" ; <http://fedora.info/definitions/1/0/access/objState> \"{state}\" ;\n\
         foxml:CONTROL_GROUP \"M\" ; foxml:VERSIONABLE \"true\" ; foxml:VERSION_ID \"{dsid}.{n}\" ;\n\
         foxml:CREATED \"{created}\"^^xsd:dateTime ; foxml:MIMETYPE \"text/plain\" ;\n\
         foxml:SIZE \"{}\"^^xsd:long ; foxml:LOCATION \"{pid}+{dsid}+{dsid}.{n}\" ; foxml:LOCATION_TYPE \"INTERNAL_ID\" .",
        content.len()
    );
    put(s, &format!("{pid}/{dsid}/fcr:metadata"), &[TURTLE], &body).await;
}

#[tokio::test]
async fn imported_objects_answer_as_fedora_3() {
    let s = facade().await;
    object(&s, "f3:obj", "An object").await;
    version(
        &s,
        "f3:obj",
        "DS1",
        0,
        "2020-01-01T00:00:00.100Z",
        "first",
        "A",
    )
    .await;
    version(
        &s,
        "f3:obj",
        "DS1",
        1,
        "2020-01-01T00:00:00.600Z",
        "second",
        "A",
    )
    .await;
    version(
        &s,
        "f3:obj",
        "GONE",
        0,
        "2020-01-01T00:00:01.000Z",
        "deleted",
        "D",
    )
    .await;
    let r = s
        .request(Method::DELETE, &s.url("f3:obj/GONE"), &[], "")
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);

    let r = get(&s, &f3(&s, "objects/f3:obj?format=xml"), &[]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("text/xml"));
    let t = r.text();
    assert!(t.contains("<objLabel>An object</objLabel>"), "{t}");
    assert!(t.contains("<model>info:fedora/demo:Model</model><model>info:fedora/fedora-system:FedoraObject-3.0</model>"), "{t}");
    assert!(t.contains("<objCreateDate>2020-01-01T00:00:00.000Z</objCreateDate>"));
    assert!(t.contains("<objState>A</objState>"));

    // The list has the deleted datastream too, as it was.
    let t = get(&s, &f3(&s, "objects/f3:obj/datastreams?format=xml"), &[])
        .await
        .text();
    assert!(
        t.contains("<datastream dsid=\"DS1\" label=\"DS1 label 1\" mimeType=\"text/plain\" />"),
        "{t}"
    );
    assert!(
        t.contains("<datastream dsid=\"GONE\" label=\"GONE label 0\""),
        "{t}"
    );

    // Content: now, at a date, and the deleted one.
    let r = get(&s, &f3(&s, "objects/f3:obj/datastreams/DS1/content"), &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.text(), "second");
    assert_eq!(
        r.header("content-disposition"),
        Some("inline; filename=\"DS1 label 1.txt\"")
    );
    assert_eq!(
        r.header("last-modified"),
        Some("Wed, 01 Jan 2020 00:00:00 GMT")
    );
    let r = get(&s, &f3(&s, "objects/f3:obj/datastreams/DS1/content?asOfDateTime=2020-01-01T00:00:00.300Z&download=true"), &[])
        .await;
    assert_eq!(r.text(), "first");
    assert_eq!(
        r.header("content-disposition"),
        Some("attachment; filename=\"DS1 label 0.txt\"")
    );
    let r = get(&s, &f3(&s, "get/f3:obj/DS1/2020-01-01T00:00:00.100Z"), &[]).await;
    assert_eq!(r.text(), "first");
    assert_eq!(r.header("content-disposition"), None);
    let r = get(
        &s,
        &f3(&s, "objects/f3:obj/datastreams/DS1/content"),
        &[("Range", "bytes=1-3")],
    )
    .await;
    assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(r.text(), "eco");
    let r = get(
        &s,
        &f3(
            &s,
            "objects/f3:obj/datastreams/DS1/content?asOfDateTime=2019-01-01T00:00:00.000Z",
        ),
        &[],
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(
        r.text()
            .starts_with("[DefaulAccess] No datastream could be returned."),
        "{}",
        r.text()
    );
    assert_eq!(
        get(&s, &f3(&s, "objects/f3:obj/datastreams/GONE/content"), &[])
            .await
            .text(),
        "deleted"
    );

    // History (API-M: credentials needed), newest first; the object's change dates.
    let anon = s
        .request_anonymous(
            Method::GET,
            &f3(&s, "objects/f3:obj/datastreams/DS1/history?format=xml"),
            &[],
            "",
        )
        .await;
    assert_eq!(anon.status, StatusCode::UNAUTHORIZED);
    let t = get(
        &s,
        &f3(&s, "objects/f3:obj/datastreams/DS1/history?format=xml"),
        &[],
    )
    .await
    .text();
    let first = t.find("<dsVersionID>DS1.1</dsVersionID>").expect("DS1.1");
    let second = t.find("<dsVersionID>DS1.0</dsVersionID>").expect("DS1.0");
    assert!(first < second, "{t}");
    assert!(t.contains("<dsLocationType>INTERNAL_ID</dsLocationType>"));
    let t = get(
        &s,
        &f3(&s, "objects/f3:obj/datastreams/GONE?format=xml"),
        &[],
    )
    .await
    .text();
    assert!(t.contains("<dsState>D</dsState>"), "{t}");
    let t = get(&s, &f3(&s, "objects/f3:obj/versions?format=xml"), &[])
        .await
        .text();
    assert!(t.contains("<objectChangeDate>2020-01-01T00:00:00.100Z</objectChangeDate><objectChangeDate>2020-01-01T00:00:00.600Z</objectChangeDate><objectChangeDate>2020-01-01T00:00:01.000Z</objectChangeDate>"), "{t}");

    // Errors, writes, and what is not an import.
    let r = get(&s, &f3(&s, "objects/nosuch:object?format=xml"), &[]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(
        r.text(),
        "Object not found in low-level storage: nosuch:object"
    );
    let r = s
        .request(Method::DELETE, &f3(&s, "objects/f3:obj"), &[], "")
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(r.text().contains("/rest/"), "{}", r.text());
    put(
        &s,
        "plain",
        &[TURTLE],
        "<> <http://purl.org/dc/terms/title> \"x\" .",
    )
    .await;
    assert_eq!(
        get(&s, &f3(&s, "objects/plain?format=xml"), &[])
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn deleted_objects_and_field_search() {
    let s = facade().await;
    object(&s, "f3:a", "Alpha").await;
    object(&s, "f3:b", "Beta").await;
    version(
        &s,
        "f3:b",
        "DS1",
        0,
        "2020-01-01T00:00:00.100Z",
        "kept",
        "A",
    )
    .await;
    let r = s.request(Method::DELETE, &s.url("f3:b"), &[], "").await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);

    let t = get(&s, &f3(&s, "objects/f3:b?format=xml"), &[])
        .await
        .text();
    assert!(t.contains("<objLabel>Beta</objLabel>"), "{t}");
    assert_eq!(
        get(&s, &f3(&s, "objects/f3:b/datastreams/DS1/content"), &[])
            .await
            .text(),
        "kept"
    );

    let t = get(
        &s,
        &f3(
            &s,
            "objects?query=pid~f3:*&pid=true&label=true&resultFormat=xml",
        ),
        &[],
    )
    .await
    .text();
    assert!(
        t.contains("<pid>f3:a</pid>\n      <label>Alpha</label>"),
        "{t}"
    );
    assert!(t.contains("<pid>f3:b</pid>"), "{t}");
    let t = get(
        &s,
        &f3(&s, "objects?terms=beta&pid=true&resultFormat=xml"),
        &[],
    )
    .await
    .text();
    assert!(
        t.contains("<pid>f3:b</pid>") && !t.contains("<pid>f3:a</pid>"),
        "{t}"
    );
    let page = get(
        &s,
        &f3(
            &s,
            "objects?query=pid~f3:*&pid=true&maxResults=1&resultFormat=xml",
        ),
        &[],
    )
    .await
    .text();
    assert!(
        page.contains("<pid>f3:a</pid>") && page.contains("<token>"),
        "{page}"
    );
    let token = &page[page.find("<token>").unwrap() + 7..page.find("</token>").unwrap()];
    let next = get(
        &s,
        &f3(
            &s,
            &format!("objects?sessionToken={token}&resultFormat=xml"),
        ),
        &[],
    )
    .await
    .text();
    assert!(
        next.contains("<pid>f3:b</pid>") && !next.contains("<token>"),
        "{next}"
    );
    let d = get(&s, &f3(&s, "describe?xml=true"), &[]).await.text();
    assert!(
        d.contains(&format!(
            "<repositoryBaseURL>{}</repositoryBaseURL>",
            f3(&s, "").trim_end_matches('/')
        )),
        "{d}"
    );
}

#[tokio::test]
async fn the_facade_is_off_unless_asked_or_imported() {
    let s = TestServer::start().await;
    let r = get(&s, &f3(&s, "describe"), &[]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn changes_through_the_fedora_api_show_at_once() {
    let s = facade().await;
    object(&s, "f3:c", "Cached").await;
    version(
        &s,
        "f3:c",
        "DS1",
        0,
        "2020-01-01T00:00:00.100Z",
        "first",
        "A",
    )
    .await;
    let url = f3(&s, "objects/f3:c/datastreams/DS1/content");
    for _ in 0..2 {
        let r = get(&s, &url, &[]).await;
        assert_eq!(r.text(), "first");
        assert_eq!(
            r.header("content-disposition"),
            Some("inline; filename=\"DS1 label 0.txt\"")
        );
    }
    version(
        &s,
        "f3:c",
        "DS1",
        1,
        "2020-01-01T00:00:00.900Z",
        "second",
        "A",
    )
    .await;
    let r = get(&s, &url, &[]).await;
    assert_eq!(r.text(), "second");
    assert_eq!(
        r.header("content-disposition"),
        Some("inline; filename=\"DS1 label 1.txt\"")
    );
    let r = s.request(Method::DELETE, &s.url("f3:c/DS1"), &[], "").await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    // Deleted through the Fedora API: served as it was before, as Fedora 3 did.
    assert_eq!(get(&s, &url, &[]).await.text(), "second");
}

/// Describes datastream `dsid` as external content of control group `cg` (E or R).
async fn external(s: &TestServer, pid: &str, dsid: &str, cg: &str, url: &str) {
    let handling = if cg == "E" { "proxy" } else { "redirect" };
    let link = format!(
        "<{url}>; rel=\"http://fedora.info/definitions/fcrepo#ExternalContent\"; handling=\"{handling}\"; type=\"text/plain\""
    );
    let r = s
        .request(
            Method::PUT,
            &s.url(&format!("{pid}/{dsid}")),
            &[("Link", link.as_str())],
            "",
        )
        .await;
    assert!(r.status.is_success(), "{} {}", r.status, r.text());
    let body = format!(
        "{PREFIXES}<> dcterms:title \"{dsid} label\" ; foxml:CONTROL_GROUP \"{cg}\" ; foxml:VERSION_ID \"{dsid}.0\" ;\n\
         foxml:CREATED \"2020-01-01T00:00:00.100Z\"^^xsd:dateTime ; foxml:MIMETYPE \"text/plain\" ;\n\
         foxml:LOCATION \"{url}\" ; foxml:LOCATION_TYPE \"URL\" ."
    );
    put(s, &format!("{pid}/{dsid}/fcr:metadata"), &[TURTLE], &body).await;
}

#[tokio::test]
async fn external_content_is_proxied_and_redirects_are_followed_as_fedora_3_does() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("e.txt"), "proxied bytes").unwrap();
    let list = dir.path().join("allowed.txt");
    std::fs::write(&list, format!("file://{}/\n", files.display())).unwrap();
    let s = TestServer::start_with(None, |c| {
        c.fedora3.facade = arca_config::Facade::On;
        c.external_content_allowed = Some(list);
    })
    .await;
    object(&s, "f3:ext", "External").await;
    let url = format!("file://{}/e.txt", files.display());
    external(&s, "f3:ext", "E1", "E", &url).await;
    external(&s, "f3:ext", "R1", "R", &url).await;

    let r = get(&s, &f3(&s, "objects/f3:ext/datastreams/E1/content"), &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.text(), "proxied bytes");
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(
        r.header("content-disposition"),
        Some("inline; filename=\"E1 label.txt\"")
    );
    let r = get(&s, &f3(&s, "get/f3:ext/E1"), &[("Range", "bytes=0-6")]).await;
    assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(r.text(), "proxied");

    let r = get(&s, &f3(&s, "objects/f3:ext/datastreams/R1/content"), &[]).await;
    assert_eq!(r.status, StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(r.header("location"), Some(url.as_str()));
    let r = get(&s, &f3(&s, "get/f3:ext/R1"), &[]).await;
    assert_eq!(r.status, StatusCode::FOUND);
    assert_eq!(r.header("location"), Some(url.as_str()));

    let t = get(&s, &f3(&s, "objects/f3:ext/datastreams/R1?format=xml"), &[])
        .await
        .text();
    assert!(
        t.contains(&format!("<dsLocation>{url}</dsLocation>")),
        "{t}"
    );
    assert!(t.contains("<dsLocationType>URL</dsLocationType>"), "{t}");
}
