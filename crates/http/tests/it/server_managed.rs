//! Server-managed triples: present in GET output with the right values; a body that sets
//! them is refused with 409 and constrainedBy, unless `Prefer: handling=lenient` drops them.

use crate::common::*;
use arca_testkit::TestServer;
use oxrdf::Term;

fn datetime(g: &Graph, s: &str, p: &str) -> String {
    let o = g.objects(s, p);
    assert_eq!(o.len(), 1, "one {p} on {s}: {o:?}");
    match &o[0] {
        Term::Literal(l) => {
            assert_eq!(l.datatype().as_str(), XSD_DATETIME, "{p}");
            l.value().to_string()
        }
        other => panic!("{p} is not a literal: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_managed_triples_are_in_get_output() {
    let s = TestServer::start().await;
    container(&s, "parent").await;
    container(&s, "parent/child").await;
    binary(&s, "parent/bin", "text/plain", b"xyz").await;
    let url = s.url("parent");
    let g = graph(&s, "parent", &[]).await;
    for t in [
        LDP_BASIC_CONTAINER,
        LDP_CONTAINER,
        LDP_RDF_SOURCE,
        LDP_RESOURCE,
    ] {
        assert!(g.has(&url, RDF_TYPE, t), "rdf:type {t}");
    }
    let created = datetime(&g, &url, &fedora("created"));
    let modified = datetime(&g, &url, &fedora("lastModified"));
    assert!(
        time::OffsetDateTime::parse(&created, &time::format_description::well_known::Rfc3339)
            .is_ok(),
        "{created}"
    );
    assert!(modified >= created, "{modified} < {created}");
    assert!(g.has_lit(&url, &fedora("createdBy"), "fedoraAdmin"));
    assert!(g.has_lit(&url, &fedora("lastModifiedBy"), "fedoraAdmin"));
    // As Fedora 7 (6.x states no fedora:hasParent): the containing resource, here the root.
    assert_eq!(g.object_iris(&url, &fedora("hasParent")), vec![s.url("")]);
    let mut contains = g.object_iris(&url, LDP_CONTAINS);
    contains.sort();
    assert_eq!(contains, vec![s.url("parent/bin"), s.url("parent/child")]);

    // The child's parent is the container.
    let child = s.url("parent/child");
    let g = graph(&s, "parent/child", &[]).await;
    assert_eq!(
        g.object_iris(&child, &fedora("hasParent")),
        vec![url.clone()]
    );
    assert!(g.object_iris(&child, LDP_CONTAINS).is_empty());

    // A binary's description carries the binary's server-managed triples.
    let bin = s.url("parent/bin");
    let g = graph(&s, "parent/bin/fcr:metadata", &[]).await;
    assert!(g.has(&bin, RDF_TYPE, LDP_NON_RDF_SOURCE));
    assert_eq!(g.object_iris(&bin, &fedora("hasParent")), vec![url.clone()]);
    datetime(&g, &bin, &fedora("created"));
    datetime(&g, &bin, &fedora("lastModified"));
    assert!(g.has_lit(&bin, &fedora("createdBy"), "fedoraAdmin"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_modified_changes_on_update() {
    let s = TestServer::start().await;
    container(&s, "m").await;
    let url = s.url("m");
    let g1 = graph(&s, "m", &[]).await;
    let created = datetime(&g1, &url, &fedora("created"));
    let m1 = datetime(&g1, &url, &fedora("lastModified"));
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let r = put(
        &s,
        "m",
        &[TURTLE],
        "<> <http://purl.org/dc/terms/title> \"x\" .",
    )
    .await;
    assert_eq!(r.status, 204);
    let g2 = graph(&s, "m", &[]).await;
    assert_eq!(datetime(&g2, &url, &fedora("created")), created);
    let m2 = datetime(&g2, &url, &fedora("lastModified"));
    assert!(m2 > m1, "{m2} <= {m1}");
    s.stop().await;
}

/// Bodies that each set one kind of server-managed statement.
fn forbidden(s: &TestServer) -> Vec<(&'static str, String)> {
    vec![
        ("fedora:created", "<> <http://fedora.info/definitions/v4/repository#created> \"2000-01-01T00:00:00Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime> .".to_string()),
        ("fedora:createdBy", "<> <http://fedora.info/definitions/v4/repository#createdBy> \"mallory\" .".to_string()),
        ("fedora:lastModified", "<> <http://fedora.info/definitions/v4/repository#lastModified> \"2000-01-01T00:00:00Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime> .".to_string()),
        ("fedora:lastModifiedBy", "<> <http://fedora.info/definitions/v4/repository#lastModifiedBy> \"mallory\" .".to_string()),
        ("fedora:hasParent", format!("<> <http://fedora.info/definitions/v4/repository#hasParent> <{}> .", s.url("elsewhere"))),
        ("ldp:contains", format!("<> <http://www.w3.org/ns/ldp#contains> <{}> .", s.url("elsewhere"))),
        ("rdf:type ldp:NonRDFSource", "<> a <http://www.w3.org/ns/ldp#NonRDFSource> .".to_string()),
        ("rdf:type ldp:DirectContainer", "<> a <http://www.w3.org/ns/ldp#DirectContainer> .".to_string()),
        ("rdf:type fedora:Binary", "<> a <http://fedora.info/definitions/v4/repository#Binary> .".to_string()),
    ]
}

const TITLE: &str = "<> <http://purl.org/dc/terms/title> \"kept\" .";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_and_put_that_set_server_managed_triples_are_409() {
    let s = TestServer::start().await;
    container_with(&s, "existing", TITLE).await;
    let etag = s
        .get("existing", &[])
        .await
        .header("etag")
        .unwrap()
        .to_string();
    for (what, stmt) in forbidden(&s) {
        let body = format!("{TITLE}\n{stmt}");
        let r = post(&s, "", &[TURTLE, ("slug", "new")], &body).await;
        assert_eq!(r.status, 409, "POST {what}: {}", r.text());
        assert_constrained_by(&s, &r).await;
        assert_eq!(s.get("new", &[]).await.status, 404, "{what}");

        let r = put(&s, "new", &[TURTLE], &body).await;
        assert_eq!(r.status, 409, "PUT-create {what}: {}", r.text());
        assert_constrained_by(&s, &r).await;
        assert_eq!(s.get("new", &[]).await.status, 404, "{what}");

        // 3.6.1-B/C/D: 409, a body naming the statement, constrainedBy.
        let r = put(&s, "existing", &[TURTLE], &body).await;
        assert_eq!(r.status, 409, "PUT {what}: {}", r.text());
        assert_constrained_by(&s, &r).await;
        let predicate = if what.starts_with("rdf:type") {
            RDF_TYPE.to_string()
        } else if what == "ldp:contains" {
            LDP_CONTAINS.to_string()
        } else {
            fedora(what.trim_start_matches("fedora:"))
        };
        assert!(r.text().contains(&predicate), "{what}: {}", r.text());
        let g = s.get("existing", &[]).await;
        assert_eq!(
            g.header("etag"),
            Some(etag.as_str()),
            "{what} changed the resource"
        );
    }
    assert_eq!(children(&s, "").await, vec![s.url("existing")]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_that_sets_server_managed_triples_is_409() {
    let s = TestServer::start().await;
    container_with(&s, "c", TITLE).await;
    binary(&s, "b", "text/plain", b"b").await;
    let etag = s.get("c", &[]).await.header("etag").unwrap().to_string();
    for (what, stmt) in forbidden(&s) {
        let update = format!("INSERT DATA {{ {} }}", stmt.trim_end_matches(" ."));
        for path in ["c", "b/fcr:metadata"] {
            if path == "b/fcr:metadata" && what == "rdf:type ldp:NonRDFSource" {
                // The binary's own type agrees with its model: accepted, as Fedora does.
                continue;
            }
            let r = sparql(&s, path, &update).await;
            assert_eq!(r.status, 409, "PATCH {path} {what}: {}", r.text());
            assert_constrained_by(&s, &r).await;
        }
    }
    assert_eq!(s.get("c", &[]).await.header("etag"), Some(etag.as_str()));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_that_deletes_server_managed_triples_is_409() {
    // 3.7 / 3.7.1: a PATCH that tries to change statements the server disallows must fail,
    // not be ignored; deleting a real containment triple is such an attempt.
    let s = TestServer::start().await;
    container(&s, "c").await;
    container(&s, "c/child").await;
    let created = graph(&s, "c", &[])
        .await
        .objects(&s.url("c"), &fedora("created"));
    let updates = [
        format!(
            "DELETE DATA {{ <> <http://www.w3.org/ns/ldp#contains> <{}> }}",
            s.url("c/child")
        ),
        format!(
            "DELETE DATA {{ <> <http://fedora.info/definitions/v4/repository#created> {} }}",
            created[0]
        ),
        "DELETE WHERE { <> <http://fedora.info/definitions/v4/repository#lastModifiedBy> ?o }"
            .to_string(),
    ];
    for update in &updates {
        let r = sparql(&s, "c", update).await;
        assert_eq!(r.status, 409, "{update}: {}", r.text());
        assert_constrained_by(&s, &r).await;
    }
    assert_eq!(children(&s, "c").await, vec![s.url("c/child")]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lenient_handling_drops_server_managed_triples() {
    let s = TestServer::start().await;
    let all: String = forbidden(&s)
        .into_iter()
        .map(|(_, stmt)| stmt + "\n")
        .collect();
    let body = format!("{TITLE}\n{all}");

    let check = |g: &Graph, url: &str| {
        assert!(g.has_lit(url, DC_TITLE, "kept"));
        assert!(!g.has_lit(url, &fedora("createdBy"), "mallory"));
        assert!(!g.has_lit(url, &fedora("lastModifiedBy"), "mallory"));
        assert!(g.has_lit(url, &fedora("createdBy"), "fedoraAdmin"));
        assert!(!g.has(url, RDF_TYPE, LDP_NON_RDF_SOURCE));
        assert!(!g.has(url, RDF_TYPE, "http://www.w3.org/ns/ldp#DirectContainer"));
        assert!(!g
            .object_iris(url, LDP_CONTAINS)
            .iter()
            .any(|c| c.ends_with("/elsewhere")));
        let created = g.objects(url, &fedora("created"));
        assert_eq!(created.len(), 1);
        assert!(!created[0].to_string().contains("2000-01-01"));
    };

    // POST.
    let r = post(&s, "", &[TURTLE, LENIENT, ("slug", "l")], &body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.has_link(LDP_BASIC_CONTAINER, "type"));
    let url = s.url("l");
    check(&graph(&s, "l", &[]).await, &url);

    // PUT of what GET returned (server-managed triples included) works when lenient.
    let got = s.get("l", &[("accept", "text/turtle")]).await;
    let r = put(&s, "l", &[TURTLE], &got.text()).await;
    assert_eq!(r.status, 409, "a GET body PUT back strictly: {}", r.text());
    let r = put(&s, "l", &[TURTLE, LENIENT], &got.text()).await;
    assert_eq!(r.status, 204, "{}", r.text());
    check(&graph(&s, "l", &[]).await, &url);

    // PUT-create.
    let r = put(&s, "l2", &[TURTLE, LENIENT], &body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    check(&graph(&s, "l2", &[]).await, &s.url("l2"));

    // PATCH.
    let update = "INSERT DATA { <> <http://fedora.info/definitions/v4/repository#createdBy> \"mallory\" . <> <http://purl.org/dc/terms/description> \"d\" }";
    let r = patch(&s, "l", &[SPARQL, LENIENT], update).await;
    assert_eq!(r.status, 204, "{}", r.text());
    let g = graph(&s, "l", &[]).await;
    check(&g, &url);
    assert!(g.has_lit(&url, "http://purl.org/dc/terms/description", "d"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn description_put_back_leniently_sets_filename_and_media_type_once() {
    // Issue 46.3: Fedora's import-export tool PUTs a description back with its technical
    // triples. Fedora applies ebucore:filename and ebucore:hasMimeType to the binary; arca
    // does too, and stores no computed or server-managed triple as a user triple.
    let s = TestServer::start().await;
    binary(&s, "b", "text/plain", b"bytes").await;
    let url = s.url("b");
    let body = format!(
        "<> <{DC_TITLE}> \"kept\" ;\n\
         <{EBUCORE}filename> \"restored.txt\" ;\n\
         <{EBUCORE}hasMimeType> \"text/markdown\" ;\n\
         <{PREMIS}hasSize> \"99\"^^<http://www.w3.org/2001/XMLSchema#long> ;\n\
         a <http://www.w3.org/ns/ldp#NonRDFSource> , <{FEDORA}Binary> ."
    );
    let r = put(&s, "b/fcr:metadata", &[TURTLE, LENIENT], &body).await;
    assert_eq!(r.status, 204, "{}", r.text());
    let g = graph(&s, "b/fcr:metadata", &[]).await;
    assert!(g.has_lit(&url, DC_TITLE, "kept"));
    assert_eq!(
        g.objects(&url, &format!("{EBUCORE}filename")),
        vec![lit("restored.txt")]
    );
    assert_eq!(
        g.objects(&url, &format!("{EBUCORE}hasMimeType")),
        vec![lit("text/markdown")]
    );
    assert_eq!(g.objects(&url, &format!("{PREMIS}hasSize")).len(), 1);
    let head = s.get("b", &[]).await;
    assert_eq!(head.header("content-type"), Some("text/markdown"));
    assert!(
        head.header("content-disposition")
            .unwrap_or("")
            .contains("restored.txt"),
        "{head:?}"
    );

    // By PATCH as well.
    let update = format!("INSERT DATA {{ <> <{EBUCORE}filename> \"patched.txt\" }}");
    let r = sparql(&s, "b/fcr:metadata", &update).await;
    assert_eq!(r.status, 204, "{}", r.text());
    let g = graph(&s, "b/fcr:metadata", &[]).await;
    assert_eq!(
        g.objects(&url, &format!("{EBUCORE}filename")),
        vec![lit("patched.txt")]
    );

    // Strictly, a computed premis:hasSize is refused and changes nothing.
    let etag = s
        .get("b/fcr:metadata", &[])
        .await
        .header("etag")
        .unwrap()
        .to_string();
    let strict = format!("<> <{PREMIS}hasSize> \"99\"^^<http://www.w3.org/2001/XMLSchema#long> .");
    let r = put(&s, "b/fcr:metadata", &[TURTLE], &strict).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
    assert_eq!(
        s.get("b/fcr:metadata", &[]).await.header("etag"),
        Some(etag.as_str())
    );
    s.stop().await;
}
