//! `fcr:search` as Fedora 7.0.0 answers it (`shared/ocfl-fedora7-sample/answers/search-*`):
//! `=` conditions with `*` wildcards on `fedora_id`, `rdf_type` and `mime_type` (`\*` a
//! literal star), `fields=`, and a binary's description indexed as an item of its own (its
//! own types, dates and size). The sample's resources are built here as Fedora's were, and
//! the items compared as sets (Fedora 7 gives them in the order its database returns rows
//! when no `order_by` is named, arca by id), instants compared for presence (arca indexes
//! whole seconds, Fedora milliseconds).

use arca_testkit::TestServer;
use serde_json::Value;

use crate::common::*;
use crate::premis3::{fedora7_sample, recorded};
use crate::search::{indexed, search, search_status};

const RECORDED_BASE: &str = "http://127.0.0.1:19701/rest";

/// The bytes of a content file of the sample's root.
fn sample_file(object: &str, file: &str) -> Vec<u8> {
    std::fs::read(fedora7_sample().join("root").join(object).join(file)).unwrap()
}

const B1: &str = "2b2/bf6/8e4/2b2bf68e4c4fe4b4d01b1901cbfad14632f06a3c4ce3ffe1cdf49d222782c0b0";
const PAGE: &str = "3e5/dc1/39e/3e5dc139e756018a6c2f9126d730762b68e00f291f3d99c356e618c656ac1868";
const SCAN: &str = "493/ccb/a93/493ccba931413ade737e77eb843bc62ce7cd38f2da2876c2beb6e3e9c81d7aef";

/// Stored N-Triples with Fedora's internal ids as the server's URLs.
fn as_urls(s: &TestServer, nt: &[u8]) -> String {
    String::from_utf8(nt.to_vec())
        .unwrap()
        .replace("<info:fedora/", &format!("<{}", s.url("")))
}

/// The part of the sample the recorded searches see: b1 with its head triples, its three
/// binaries (page.txt with its patched description), b2, and sample/x.
async fn sample(s: &TestServer) {
    let nt = ("content-type", "application/n-triples");
    for c in ["sample", "sample/books"] {
        assert_eq!(put(s, c, &[TURTLE], "").await.status, 201, "{c}");
    }
    assert_eq!(put(s, "sample/books/b2", &[TURTLE], "").await.status, 201);
    let b1 = as_urls(s, &sample_file(B1, "v3/content/fcr-container.nt"));
    let r = put(s, "sample/books/b1", &[nt], &b1).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let page = sample_file(PAGE, "v1/content/page.txt");
    let text = ("content-type", "text/plain;charset=utf-8");
    assert_eq!(
        put_bytes(s, "sample/books/b1/page.txt", &[text], &page)
            .await
            .status,
        201
    );
    let desc = as_urls(s, &sample_file(PAGE, "v3/content/page.txt~fcr-desc.nt"));
    let r = sparql(
        s,
        "sample/books/b1/page.txt/fcr:metadata",
        &format!("INSERT DATA {{ {desc} }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let octets = ("content-type", "application/octet-stream");
    let scan = sample_file(SCAN, "v1/content/scan.bin");
    let named = (
        "content-disposition",
        "attachment; filename=\"scan-0001.tif\"",
    );
    let r = put_bytes(s, "sample/books/b1/scan.bin", &[octets, named], &scan).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = put_bytes(s, "sample/books/b1/empty.dat", &[octets], b"").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = put_bytes(s, "sample/x", &[("content-type", "text/plain")], b"x").await;
    assert_eq!(r.status, 201, "{}", r.text());
    indexed(s).await;
}

/// An answer's items keyed and sorted by `fedora_id`, instants reduced to their presence,
/// and its pagination.
fn normalized(v: &Value) -> (Vec<Value>, Value) {
    let mut items: Vec<Value> = v["items"].as_array().unwrap().clone();
    for item in &mut items {
        for key in ["created", "modified"] {
            if let Some(t) = item.get_mut(key) {
                let instant = t
                    .as_str()
                    .is_some_and(|s| s.ends_with('Z') && s.len() >= 20);
                *t = Value::Bool(instant);
            }
        }
    }
    items.sort_by(|a, b| a["fedora_id"].as_str().cmp(&b["fedora_id"].as_str()));
    (items, v["pagination"].clone())
}

/// A recorded answer with its host made the test server's.
fn recorded_json(s: &TestServer, name: &str) -> Value {
    let r = recorded(name);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), ["application/json"]);
    let base = s.url("");
    serde_json::from_str(&r.body.replace(RECORDED_BASE, base.trim_end_matches('/'))).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fcr_search_answers_as_fedora_7() {
    let s = TestServer::start().await;
    sample(&s).await;
    let exact = ("include_total_result_count", "false");
    for (answer, params) in [
        (
            "search-fedora_id-wildcard",
            vec![("condition", "fedora_id=sample/books/b1*"), exact],
        ),
        (
            "search-rdf_type",
            vec![("condition", "rdf_type=*Thesis"), exact],
        ),
        (
            "search-mime_type",
            vec![
                ("condition", "mime_type=text/plain*"),
                ("fields", "fedora_id,mime_type"),
                exact,
            ],
        ),
    ] {
        let ours = normalized(&search(&s, &params).await);
        let theirs = normalized(&recorded_json(&s, answer));
        assert!(!theirs.0.is_empty(), "{answer}");
        assert_eq!(ours, theirs, "{answer}: (items, pagination)");
    }
    // The same conditions with the URL, the internal id or a path with a slash.
    for value in [
        format!("fedora_id={}*", s.url("sample/books/b1")),
        "fedora_id=info:fedora/sample/books/b1*".to_string(),
        "fedora_id=/sample/books/b1*".to_string(),
    ] {
        let v = search(&s, &[("condition", &value)]).await;
        assert_eq!(v["items"].as_array().unwrap().len(), 7, "{value}: {v}");
        assert_eq!(v["pagination"]["totalResults"], 7, "arca counts by default");
    }
    s.stop().await;
}

/// A description is indexed when it is created (with its binary), follows its changes, and
/// leaves with its binary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptions_are_items_of_their_own() {
    let s = TestServer::start().await;
    assert_eq!(put(&s, "d", &[TURTLE], "").await.status, 201);
    let r = put_bytes(&s, "d/bin", &[("content-type", "text/plain")], b"abc").await;
    assert_eq!(r.status, 201);
    indexed(&s).await;
    let ids = |v: &Value| -> Vec<String> {
        let mut ids: Vec<String> = v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["fedora_id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    };
    let desc = s.url("d/bin/fcr:metadata");
    let v = search(&s, &[("condition", "fedora_id=d/*")]).await;
    assert_eq!(ids(&v), vec![s.url("d/bin"), desc.clone()]);
    let nrds = "rdf_type=http://fedora.info/definitions/v4/repository#NonRdfSourceDescription";
    let v = search(&s, &[("condition", nrds)]).await;
    assert_eq!(ids(&v), vec![desc.clone()]);
    // A type stated in the description is the description's, not the binary's.
    let r = sparql(
        &s,
        "d/bin/fcr:metadata",
        "INSERT DATA { <> a <http://example.org/Page> ; <http://purl.org/dc/terms/title> \"zanzibar\" }",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    indexed(&s).await;
    let v = search(&s, &[("condition", "rdf_type=http://example.org/Page")]).await;
    assert_eq!(ids(&v), vec![desc.clone()]);
    let item = &v["items"][0];
    assert_eq!(item["mime_type"], Value::Null);
    assert!(item["content_size"].as_u64().unwrap() > 0, "{item}");
    // The description's statements are the binary's fields: a query in the Lucene syntax
    // finds the binary, once.
    let v = search(&s, &[("q", "zanzibar")]).await;
    assert_eq!(ids(&v), vec![s.url("d/bin")]);
    // Deleted with its binary.
    assert_eq!(delete(&s, "d/bin", &[]).await.status, 204);
    indexed(&s).await;
    let v = search(&s, &[("condition", "fedora_id=d/*")]).await;
    assert_eq!(ids(&v), Vec::<String>::new());
    s.stop().await;
}

/// `*` is Fedora 7's only wildcard: `\*` is a literal star and `?` a literal question
/// mark; patterns are bounded by the query limits; bad conditions, fields and orders are
/// 400 with Fedora's reasons, never a 500.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wildcards_escapes_and_bad_input_as_fedora_7() {
    let s = TestServer::start().await;
    let r = put(
        &s,
        "star",
        &[TURTLE],
        "<> a <http://example.org/a*b> , <http://example.org/a?c> .",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        put(&s, "plain", &[TURTLE], "<> a <http://example.org/axb> .")
            .await
            .status,
        201
    );
    indexed(&s).await;
    let count = |v: Value| -> Vec<String> {
        let mut ids: Vec<String> = v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                i["fedora_id"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches(&s.url(""))
                    .to_string()
            })
            .collect();
        ids.sort();
        ids
    };
    let cond = |c: &str| vec![("condition".to_string(), c.to_string())];
    let run = |c: Vec<(String, String)>| {
        let s = &s;
        async move {
            let p: Vec<(&str, &str)> = c.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            search(s, &p).await
        }
    };
    assert_eq!(
        count(run(cond("rdf_type=http://example.org/a*b")).await),
        ["plain", "star"]
    );
    assert_eq!(
        count(run(cond("rdf_type=http://example.org/a\\*b")).await),
        ["star"]
    );
    assert_eq!(
        count(run(cond("rdf_type=http://example.org/a\\*")).await),
        Vec::<String>::new()
    );
    assert_eq!(
        count(run(cond("rdf_type=http://example.org/a?b")).await),
        Vec::<String>::new()
    );
    assert_eq!(
        count(run(cond("rdf_type=http://example.org/a?c")).await),
        ["star"]
    );
    let v = run(cond("fedora_id=*")).await;
    assert!(count(v).len() >= 2);

    let too_many = format!("fedora_id={}", "*a".repeat(200));
    for (params, status, says) in [
        (vec![("condition", "bogus=1")], 400, "bogus"),
        (vec![("condition", "no operator")], 400, "operator"),
        (
            vec![("fields", "fedora_id,bogus")],
            400,
            "is not a valid output field",
        ),
        (
            vec![("order_by", "fedora_id"), ("order", "sideways")],
            400,
            "The order field is invalid",
        ),
        (vec![("condition", too_many.as_str())], 400, "wildcard"),
        (vec![("max_results", "-1")], 400, "whole number"),
    ] {
        let (code, text) = search_status(&s, &params).await;
        assert_eq!(code, status, "{params:?}: {text}");
        assert!(text.contains(says), "{params:?}: {text}");
    }
    // `fields=*` is every field.
    let v = search(&s, &[("condition", "fedora_id=star"), ("fields", "*")]).await;
    let item = v["items"][0].as_object().unwrap();
    for f in [
        "fedora_id",
        "created",
        "modified",
        "content_size",
        "mime_type",
        "rdf_type",
    ] {
        assert!(item.contains_key(f), "{f} in {item:?}");
    }
    s.stop().await;
}
