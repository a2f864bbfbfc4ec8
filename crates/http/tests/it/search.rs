//! Built-in search (issue 12) end to end over HTTP: writes become hits, deletes, purges and
//! transactions behave, the Dublin Core mapping, Lucene semantics on a fixture with known
//! answers, Fedora's `condition=` parameters, the GSearch interface, bad input, ACLs, and
//! a rebuild that equals the live index.

use std::time::{Duration, Instant};

use crate::common::*;
use arca_testkit::TestServer;
use http::Method;
use serde_json::Value;

const DC: &str = "@prefix dc: <http://purl.org/dc/elements/1.1/> .\n@prefix dcterms: <http://purl.org/dc/terms/> .\n";

/// Waits until the index has every committed change and every pending text.
pub(crate) async fn indexed(s: &TestServer) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = s.get("fcr:search/status", &[]).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        let caught_up =
            v["lag"] == 0 && v["extraction"]["pending"] == 0 && v["reindex"]["running"] != true;
        if caught_up {
            return v;
        }
        assert!(Instant::now() < deadline, "the index did not catch up: {v}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The paths (below /rest/) of the hits of `query`, sorted, and the total.
async fn hits(s: &TestServer, query: &str) -> (Vec<String>, u64) {
    let v = search(s, &[("q", query), ("limit", "1000")]).await;
    let mut paths: Vec<String> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let url = i["fedora_id"].as_str().unwrap();
            url.split("/rest")
                .nth(1)
                .unwrap()
                .trim_start_matches('/')
                .to_string()
        })
        .collect();
    paths.sort();
    (paths, v["pagination"]["totalResults"].as_u64().unwrap())
}

async fn paths(s: &TestServer, query: &str) -> Vec<String> {
    hits(s, query).await.0
}

pub(crate) fn query_string(params: &[(&str, &str)]) -> String {
    params
        .iter()
        .map(|(k, v)| {
            format!(
                "{k}={}",
                percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC)
            )
        })
        .collect::<Vec<_>>()
        .join("&")
}

pub(crate) async fn search(s: &TestServer, params: &[(&str, &str)]) -> Value {
    let r = s
        .get(&format!("fcr:search?{}", query_string(params)), &[])
        .await;
    assert_eq!(r.status, 200, "{params:?}: {}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    serde_json::from_slice(&r.body).unwrap()
}

pub(crate) async fn search_status(s: &TestServer, params: &[(&str, &str)]) -> (u16, String) {
    let r = s
        .get(&format!("fcr:search?{}", query_string(params)), &[])
        .await;
    (r.status.as_u16(), r.text())
}

fn v(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Records in the shape of the 2013 study's: a title, an abstract, creators "Last, First",
/// a date; `r3` and `r4` with a text child whose words reach their container's ALL.
async fn fixture(s: &TestServer) {
    let records = [
        (
            "r1",
            "Fish of the deep sea",
            "We count fish in the sea.",
            "Joyce, James",
            "2025-03-18",
        ),
        (
            "r2",
            "Animal minds",
            "Animal cognition at scale.",
            "Austen, Jane",
            "2025-04-01",
        ),
        (
            "r3",
            "Animal farms",
            "An animal study.",
            "Baldwin, James",
            "2025-05-20",
        ),
        (
            "r4",
            "Deep learning",
            "Neural fish detectors.",
            "Woolf, Virginia",
            "2026-01-02",
        ),
        (
            "r5",
            "Graphs",
            "Spectral methods.",
            "Orwell, George",
            "2024-12-31",
        ),
    ];
    for (id, title, abs, creator, date) in records {
        let ttl = format!(
            "{DC}<> dcterms:title \"{title}\" ; dcterms:abstract \"{abs}\" ; dc:creator \"{creator}\" ; dc:date \"{date}\" ; dc:identifier \"arxiv:{id}\" ."
        );
        assert_eq!(put(s, id, &[TURTLE], &ttl).await.status, 201);
    }
    for id in ["r3", "r4"] {
        let text = format!("Department of Computing, University of Somewhere ({id})");
        binary(s, &format!("{id}/paper"), "text/plain", text.as_bytes()).await;
    }
    indexed(s).await;
}

/// The three queries of the 2013 GSearch study, and Lucene's semantics around them, with
/// exact answers; the Dublin Core mapping (FIRSTNAME/LASTNAME from "Last, First", DATE as
/// dates, ALL with the children's text).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lucene_queries_over_the_dublin_core_mapping() {
    let s = TestServer::start().await;
    fixture(&s).await;
    assert_eq!(paths(&s, r#"ABSTRACT:"fish""#).await, v(&["r1", "r4"]));
    // tantivy's own parser answers nothing here (upstream #2317, #1980).
    assert_eq!(
        paths(&s, r#"ABSTRACT:"animal" AND NOT ALL:"university""#).await,
        v(&["r2"])
    );
    assert_eq!(
        paths(
            &s,
            r#"(ABSTRACT:"fish" OR FIRSTNAME:"james") AND ALL:"university""#
        )
        .await,
        v(&["r3", "r4"])
    );
    // The text of a binary is in its FULLTEXT and ALL, and in its container's ALL.
    assert_eq!(
        paths(&s, "FULLTEXT:university").await,
        v(&["r3/paper", "r4/paper"])
    );
    assert_eq!(
        paths(&s, "ALL:university").await,
        v(&["r3", "r3/paper", "r4", "r4/paper"])
    );
    assert_eq!(paths(&s, "LASTNAME:joyce").await, v(&["r1"]));
    assert_eq!(paths(&s, "CREATOR:\"Austen, Jane\"").await, v(&["r2"]));
    assert_eq!(paths(&s, "title:anim*").await, v(&["r2", "r3"]));
    assert_eq!(paths(&s, "TITLE:\"deep sea\"").await, v(&["r1"]));
    assert_eq!(
        paths(&s, "DATE:[2025-01-01 TO 2025-12-31]").await,
        v(&["r1", "r2", "r3"])
    );
    assert_eq!(
        paths(&s, "DATE:{2025-03-18 TO *]").await,
        v(&["r2", "r3", "r4"])
    );
    assert_eq!(paths(&s, "DATE:2024").await, v(&["r5"]));
    assert_eq!(paths(&s, "IDENTIFIER:\"arxiv:r5\"").await, v(&["r5"]));
    assert_eq!(
        paths(&s, "-ALL:animal AND TITLE:*").await,
        v(&["r1", "r4", "r5"])
    );
    assert_eq!(
        paths(&s, "mime_type:text\\/plain").await,
        v(&["r3/paper", "r4/paper"])
    );
    // Default field ALL, default operator OR.
    assert_eq!(paths(&s, "spectral cognition").await, v(&["r2", "r5"]));
    assert_eq!(
        paths(&s, "spectral AND cognition").await,
        Vec::<String>::new()
    );
}

/// Paging, sorting, the fields shown, and Fedora 6's `condition=` parameters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_sorts_fields_and_fedora_conditions() {
    let s = TestServer::start().await;
    fixture(&s).await;
    let all = search(
        &s,
        &[
            ("q", "TITLE:*"),
            ("sort", "DATE asc"),
            ("fields", "fedora_id,TITLE,DATE"),
        ],
    )
    .await;
    assert_eq!(all["pagination"]["totalResults"], 5);
    assert_eq!(all["pagination"]["maxResults"], 100);
    let titles: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["TITLE"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "Graphs",
            "Fish of the deep sea",
            "Animal minds",
            "Animal farms",
            "Deep learning"
        ]
    );
    assert_eq!(all["items"][0]["DATE"], "2024-12-31T00:00:00Z");
    assert!(all["items"][0]["fedora_id"]
        .as_str()
        .unwrap()
        .ends_with("/rest/r5"));
    let page = search(
        &s,
        &[
            ("q", "TITLE:*"),
            ("sort", "DATE"),
            ("order", "desc"),
            ("offset", "1"),
            ("limit", "2"),
            ("fields", "TITLE"),
        ],
    )
    .await;
    assert_eq!(page["pagination"]["totalResults"], 5);
    assert_eq!(page["pagination"]["offset"], 1);
    let titles: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["TITLE"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Animal farms", "Animal minds"]);
    // Default fields: Fedora's.
    let one = search(&s, &[("condition", "fedora_id=r3/paper")]).await;
    let item = &one["items"][0];
    assert!(item["fedora_id"]
        .as_str()
        .unwrap()
        .ends_with("/rest/r3/paper"));
    assert_eq!(item["mime_type"], "text/plain");
    assert_eq!(item["content_size"], 53);
    assert!(item["created"].as_str().unwrap().ends_with('Z'));
    assert!(item["modified"].is_string());
    // Conditions: fedora_id with a wildcard (as a URL or a path), mime_type, content_size.
    let url = s.url("r3*");
    for cond in [format!("fedora_id={url}"), "fedora_id=r3*".to_string()] {
        let v = search(&s, &[("condition", &cond)]).await;
        // r3, r3/paper and, as in Fedora 7, the paper's description.
        assert_eq!(v["pagination"]["totalResults"], 3, "{cond}");
    }
    let v = search(
        &s,
        &[
            ("condition", "mime_type=text/plain"),
            ("condition", "content_size>=53"),
        ],
    )
    .await;
    assert_eq!(v["pagination"]["totalResults"], 2);
    let v = search(
        &s,
        &[
            ("condition", "content_size<53"),
            ("condition", "mime_type=text/plain"),
        ],
    )
    .await;
    assert_eq!(v["pagination"]["totalResults"], 0);
    let v = search(
        &s,
        &[("condition", "created>2000-01-01"), ("q", "LASTNAME:woolf")],
    )
    .await;
    assert_eq!(v["pagination"]["totalResults"], 1);
}

/// Bad input: a clear 400 naming the position or the field, never a silent empty answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_queries_are_refused_with_the_reason() {
    let s = TestServer::start().await;
    indexed(&s).await;
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[("q", "TITLE:(fish")], "at character"),
        (&[("q", "fish AND")], "at character 5"),
        (&[("q", "NOSUCH:fish")], "unknown field 'NOSUCH'"),
        (&[("q", "DATE:[2025-13-01 TO *]")], "at character"),
        (&[("q", "x"), ("limit", "1001")], "1000"),
        (&[("q", "x"), ("limit", "0")], "limit"),
        (&[("q", "x"), ("offset", "-1")], "offset"),
        (&[("q", "x"), ("sort", "TITLE")], "cannot sort by"),
        (&[("q", "x"), ("sort", "NOPE")], "unknown field"),
        (
            &[("q", "x"), ("sort", "created sideways")],
            "valid values are \"asc\" and \"desc\"",
        ),
        (&[("q", "x"), ("fields", "TITLE,ALL")], "\"ALL\""),
        (&[("condition", "fedora_id")], "no operator"),
        (&[("condition", "nosuch=1")], "nosuch"),
    ];
    for (params, expect) in cases {
        let (status, text) = search_status(&s, params).await;
        assert_eq!(status, 400, "{params:?}: {text}");
        assert!(
            text.contains(expect),
            "{params:?}: {text:?} should mention {expect:?}"
        );
    }
    let long = "a ".repeat(5000);
    let (status, _) = search_status(&s, &[("q", &long)]).await;
    assert!(status == 400 || status == 414, "{status}");
    let r = s.request(Method::PUT, &s.url("fcr:search"), &[], "").await;
    assert_eq!(r.status, 405);
    let r = s
        .request(Method::GET, &s.url("x/fcr:search"), &[], "")
        .await;
    assert_eq!(r.status, 400);
}

/// Deletes and purges leave the index; a transaction's changes appear at its commit only,
/// and never after a rollback; a description's change reaches its binary's document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_purges_and_transactions() {
    let s = TestServer::start().await;
    fixture(&s).await;
    assert_eq!(delete(&s, "r1", &[]).await.status, 204);
    indexed(&s).await;
    assert_eq!(paths(&s, "LASTNAME:joyce").await, Vec::<String>::new());
    // r3's child leaves r3's ALL with it.
    assert_eq!(delete(&s, "r3/paper", &[]).await.status, 204);
    assert_eq!(delete(&s, "r3/paper/fcr:tombstone", &[]).await.status, 204);
    indexed(&s).await;
    assert_eq!(paths(&s, "FULLTEXT:university").await, v(&["r4/paper"]));
    assert_eq!(paths(&s, "ALL:university").await, v(&["r4", "r4/paper"]));

    let patch = "PREFIX dcterms: <http://purl.org/dc/terms/> INSERT DATA { <> dcterms:title \"Proceedings of the otters\" }";
    assert_eq!(sparql(&s, "r4/paper/fcr:metadata", patch).await.status, 204);
    indexed(&s).await;
    assert_eq!(paths(&s, "TITLE:otters").await, v(&["r4/paper"]));

    for commit in [true, false] {
        let r = s.request(Method::POST, &s.url("fcr:tx"), &[], "").await;
        assert_eq!(r.status, 201);
        let tx = r.header("location").unwrap().to_string();
        let name = if commit { "committed" } else { "rolledback" };
        let ttl = format!("{DC}<> dcterms:title \"{name} walrus\" .");
        let r = s
            .request(
                Method::PUT,
                &s.url(name),
                &[TURTLE, ("atomic-id", &tx)],
                ttl.clone(),
            )
            .await;
        assert_eq!(r.status, 201);
        indexed(&s).await;
        let before: &[&str] = if commit { &[] } else { &["committed"] };
        assert_eq!(
            paths(&s, "TITLE:walrus").await,
            v(before),
            "not before the end"
        );
        let method = if commit { Method::PUT } else { Method::DELETE };
        assert_eq!(s.request(method, &tx, &[], "").await.status, 204);
        indexed(&s).await;
    }
    assert_eq!(paths(&s, "TITLE:walrus").await, v(&["committed"]));
}

/// `POST fcr:search/reindex` rebuilds the index from the catalog and the stored content;
/// the result equals the live index (every document's stored fields, and the hits of the
/// text fields that are not stored).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuild_equals_the_live_index() {
    let s = TestServer::start().await;
    fixture(&s).await;
    assert_eq!(delete(&s, "r2", &[]).await.status, 204);
    let patch =
        "PREFIX dc: <http://purl.org/dc/elements/1.1/> INSERT DATA { <> dc:subject \"cs.CV\" }";
    assert_eq!(sparql(&s, "r5", patch).await.status, 204);
    let before = indexed(&s).await;
    let live = snapshot(&s).await;
    let r = s
        .request(Method::POST, &s.url("fcr:search/reindex"), &[], "")
        .await;
    assert_eq!(r.status, 202, "{}", r.text());
    let after = indexed(&s).await;
    assert_eq!(after["reindex"]["running"], false);
    assert_eq!(after["reindex"]["error"], Value::Null);
    assert_eq!(after["documents"], before["documents"]);
    let rebuilt = snapshot(&s).await;
    assert_eq!(live, rebuilt);
    // The rebuilt index is merged into one segment behind it, and the status says so.
    let deadline = Instant::now() + Duration::from_secs(30);
    let merged = loop {
        let v: Value = serde_json::from_slice(&s.get("fcr:search/status", &[]).await.body).unwrap();
        if v["merging"] == false {
            break v;
        }
        assert!(Instant::now() < deadline, "the merge did not end: {v}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(merged["segments"], 1, "{merged}");
    assert_eq!(
        live.0["pagination"]["totalResults"], 9,
        "root, r1, r3, r4, their papers and the papers' descriptions, r5"
    );
    // The rebuild's writer gave way to the live one: changes are indexed again.
    let patch = "PREFIX dcterms: <http://purl.org/dc/terms/> INSERT DATA { <> dcterms:title \"afterwards\" }";
    assert_eq!(sparql(&s, "r5", patch).await.status, 204);
    indexed(&s).await;
    assert_eq!(paths(&s, "TITLE:afterwards").await, v(&["r5"]));
}

/// The search index of the stopped server whose data is `data`, with the writer a rebuild
/// uses (a commit each, no merges), and the change-log position it reflects.
fn bulk_writer_of_stopped_server(data: &std::path::Path) -> (arca_search::SearchIndex, i64) {
    let mapping = arca_search::Mapping::dublin_core();
    let (index, position) =
        arca_search::SearchIndex::open(&data.join("search/index"), &mapping).unwrap();
    index.set_mode(arca_search::WriterMode::Bulk).unwrap();
    (index, position.expect("the server's index"))
}

/// The index status once the index is one segment and no merge runs (within `within`).
async fn merged_into_one(s: &TestServer, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let v = indexed(s).await;
        if v["segments"] == 1 && v["merging"] == false {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "the index was not merged into one: {v}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A rebuild leaves many segments and merges them into one behind it; a server stopped during
/// that merge left them all, and every query paid for each, until the next rebuild. At the
/// next start the merge runs again. The segments are made here as a rebuild makes them (the
/// bulk writer, a commit each, no merges), on the index of a stopped server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_cut_short_by_a_stop_runs_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_at(dir.path()).await;
    fixture(&s).await;
    let before = indexed(&s).await;
    let found = hits(&s, "ABSTRACT:fish").await;
    s.stop().await;

    let (index, position) = bulk_writer_of_stopped_server(dir.path());
    let id = index.schema().system.id;
    let extra = arca_search::MOST_LIVE_SEGMENTS + 1;
    for n in 0..extra {
        let mut doc = tantivy::TantivyDocument::default();
        doc.add_text(id, format!("segment-{n}"));
        index.upsert(&format!("segment-{n}"), doc).unwrap();
        index.commit(position).unwrap();
    }
    assert!(index.needs_merge(), "{} segments", index.segments());
    drop(index);

    let s = TestServer::start_at(dir.path()).await;
    let merged = merged_into_one(&s, Duration::from_secs(30)).await;
    assert_eq!(
        merged["documents"].as_u64().unwrap(),
        before["documents"].as_u64().unwrap() + extra as u64
    );
    assert_eq!(hits(&s, "ABSTRACT:fish").await, found);
    s.stop().await;
}

/// A merge into one fails when a segment in it loses its last document meanwhile (tantivy
/// drops empty segments at each commit, and then has nowhere to put the merge's result): the
/// segments there are then are merged again. Here the merge at the next start takes many
/// segments, one of them holding only r1's document, and r1 is updated while it runs (the
/// other segments hold enough documents for the merge to outlast the update's commit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_that_loses_a_segment_meanwhile_runs_again() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_at(dir.path()).await;
    fixture(&s).await;
    s.stop().await;

    let (index, position) = bulk_writer_of_stopped_server(dir.path());
    let schema = index.schema();
    let id = schema.system.id;
    let all = schema.system.all;
    for n in 0..arca_search::MOST_LIVE_SEGMENTS {
        for k in 0..2_000 {
            let path = format!("filler-{n}-{k}");
            let mut doc = tantivy::TantivyDocument::default();
            doc.add_text(id, &path);
            doc.add_text(
                all,
                format!("filler text {n} {k} about nothing in particular"),
            );
            index.upsert(&path, doc).unwrap();
        }
        index.commit(position).unwrap();
    }
    let mut alone = tantivy::TantivyDocument::default();
    alone.add_text(id, "r1");
    index.upsert("r1", alone).unwrap();
    index.commit(position).unwrap();
    assert!(index.needs_merge(), "{} segments", index.segments());
    drop(index);

    let s = TestServer::start_at(dir.path()).await;
    let patch = "PREFIX dcterms: <http://purl.org/dc/terms/> INSERT DATA { <> dcterms:title \"meanwhile\" }";
    assert_eq!(sparql(&s, "r1", patch).await.status, 204);
    merged_into_one(&s, Duration::from_secs(120)).await;
    assert_eq!(paths(&s, "TITLE:meanwhile").await, v(&["r1"]));
    s.stop().await;
}

/// Once the index has caught up after a bulk of writes (here at least 20 documents, and half
/// the index), it is merged into one segment behind the live loop; with those merges off, the
/// bulk stays a segment of its own beside the one of a write before it. The bulk is a
/// transaction, so that the live loop reads it whole and commits it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_of_writes_is_merged_into_one_segment_once_indexed() {
    for bulk_merge in [0, 20] {
        let s = TestServer::start_with(None, |c| c.search.bulk_merge_documents = bulk_merge).await;
        let body = format!("{DC}<> dc:title \"before\" .");
        let r = put(&s, "before", &[("content-type", "text/turtle")], &body).await;
        assert_eq!(r.status, 201, "{}", r.text());
        assert_eq!(indexed(&s).await["segments"], 1);
        let r = s.request(Method::POST, &s.url("fcr:tx"), &[], "").await;
        assert_eq!(r.status, 201, "{}", r.text());
        let tx = r.header("location").unwrap().to_string();
        for n in 0..24 {
            let body = format!("{DC}<> dc:title \"bulk {n}\" .");
            let r = s
                .request(
                    Method::PUT,
                    &s.url(&format!("b{n}")),
                    &[("content-type", "text/turtle"), ("atomic-id", &tx)],
                    body,
                )
                .await;
            assert_eq!(r.status, 201, "{}", r.text());
        }
        assert_eq!(s.request(Method::PUT, &tx, &[], "").await.status, 204);
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            let v = indexed(&s).await;
            if v["merging"] == false && (bulk_merge == 0 || v["segments"] == 1) {
                break v;
            }
            assert!(Instant::now() < deadline, "no merge: {v}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let expected = if bulk_merge == 0 { 2 } else { 1 };
        assert_eq!(status["segments"], expected, "{status}");
        assert_eq!(hits(&s, "TITLE:bulk").await.1, 24);
        s.stop().await;
    }
}

/// Every document's stored fields, and the hits of the unstored text fields.
async fn snapshot(s: &TestServer) -> (Value, Vec<(Vec<String>, u64)>) {
    let fields = "fedora_id,parent,interaction_model,mime_type,rdf_type,created,modified,created_by,last_modified_by,content_size,TITLE,ABSTRACT,CREATOR,FIRSTNAME,LASTNAME,SUBJECT,DATE,IDENTIFIER";
    let all = search(
        s,
        &[
            ("q", "*:*"),
            ("sort", "id"),
            ("limit", "1000"),
            ("fields", fields),
        ],
    )
    .await;
    let mut texts = Vec::new();
    for q in [
        "ALL:university",
        "FULLTEXT:computing",
        "ALL:fish",
        "ALL:\"cs.CV\"",
        "ALL:arxiv",
    ] {
        texts.push(hits(s, q).await);
    }
    (all, texts)
}

/// GSearch's REST interface answers the same hits as fcr:search, pages from 1, and its
/// `updateIndex` actions are for admins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gsearch_interface() {
    let s = TestServer::start().await;
    fixture(&s).await;
    let gsearch = |query: &str| {
        let root = s.url("");
        let base = root.trim_end_matches('/').trim_end_matches("/rest");
        format!("{base}/fedoragsearch/rest?{query}")
    };
    let q = query_string(&[
        ("query", "ABSTRACT:\"animal\" AND NOT ALL:\"university\""),
        ("hitPageStart", "1"),
        ("hitPageSize", "10"),
    ]);
    let r = s
        .request(
            Method::GET,
            &gsearch(&format!("operation=gfindObjects&{q}")),
            &[],
            "",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("content-type").unwrap().starts_with("text/xml"));
    let xml = r.text();
    assert!(xml.contains("hitTotal=\"1\""), "{xml}");
    assert!(xml.contains("<field name=\"PID\">r2</field>"), "{xml}");
    assert!(
        xml.contains("<field name=\"TITLE\">Animal minds</field>"),
        "{xml}"
    );
    // Page 2 of size 1 of the fish query is its second hit.
    let q = query_string(&[
        ("query", "ABSTRACT:fish"),
        ("hitPageStart", "2"),
        ("hitPageSize", "1"),
    ]);
    let xml = s
        .request(
            Method::GET,
            &gsearch(&format!("operation=gfindObjects&{q}")),
            &[],
            "",
        )
        .await
        .text();
    assert!(
        xml.contains("hitTotal=\"2\"") && xml.contains("<object no=\"2\">"),
        "{xml}"
    );
    assert_eq!(xml.matches("<object ").count(), 1);
    // updateIndex fromPid indexes one object at once; fromFoxmlFiles rebuilds.
    let r = s
        .request(
            Method::GET,
            &gsearch("operation=updateIndex&action=fromPid&value=r1"),
            &[],
            "",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("docCount=\""));
    let r = s
        .request(
            Method::GET,
            &gsearch("operation=updateIndex&action=fromFoxmlFiles"),
            &[],
            "",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    indexed(&s).await;
    assert_eq!(paths(&s, "ABSTRACT:fish").await, v(&["r1", "r4"]));
    let r = s
        .request(Method::GET, &gsearch("operation=nonsense"), &[], "")
        .await;
    assert_eq!(r.status, 400);
    let r = s
        .request(
            Method::GET,
            &gsearch("operation=gfindObjects&query=TITLE%3A%28"),
            &[],
            "",
        )
        .await;
    assert_eq!(r.status, 400);
    assert!(r.text().contains("at character"));
}

/// An external `file:` binary's text is read through the allow-list, as a proxied read is:
/// indexed while its location is allowed, and not once the list no longer allows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_text_is_read_only_where_the_allow_list_allows() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("allowed");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("note.txt"), "the narwhal report").unwrap();
    let list = dir.path().join("allowed.txt");
    std::fs::write(&list, format!("file://{}/\n", files.display())).unwrap();
    let s = TestServer::start_with(None, |c| c.external_content_allowed = Some(list.clone())).await;
    let link = format!(
        "<file://{}/note.txt>; rel=\"http://fedora.info/definitions/fcrepo#ExternalContent\"; handling=\"proxy\"; type=\"text/plain\"",
        files.display()
    );
    let r = s
        .request(Method::PUT, &s.url("ext"), &[("link", link.as_str())], "")
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    indexed(&s).await;
    // The binary's text, also in its container's ALL (the root here).
    assert_eq!(paths(&s, "FULLTEXT:narwhal").await, v(&["ext"]));
    assert_eq!(paths(&s, "ALL:narwhal").await, v(&["", "ext"]));
    // The list no longer allows the directory (it is read again when it changes); a rebuild
    // then finds no text. A new file name keeps the text cache out of the way.
    std::fs::write(files.join("note.txt"), "the narwhal report, revised").unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    std::fs::write(&list, "# nothing allowed\n").unwrap();
    let r = s
        .request(Method::POST, &s.url("fcr:search/reindex"), &[], "")
        .await;
    assert_eq!(r.status, 202);
    indexed(&s).await;
    assert_eq!(paths(&s, "FULLTEXT:narwhal").await, Vec::<String>::new());
    assert_eq!(
        paths(&s, "id:ext").await,
        v(&["ext"]),
        "still indexed by its metadata"
    );
}

/// A node with search off keeps no index (no `search` directory, no indexer), answers
/// searches with 501 saying so, and is ready without a search check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_search_off_keeps_no_index() {
    let s = TestServer::start_with(None, |c| c.search.enabled = false).await;
    let body = format!("{DC}<> dcterms:title \"never indexed\" .");
    assert_eq!(put(&s, "off", &[TURTLE], &body).await.status, 201);
    let (status, text) = search_status(&s, &[("q", "indexed")]).await;
    assert_eq!(status, 501, "{text}");
    assert!(
        text.contains("search.enabled = false") && text.contains("search.forward_to"),
        "{text}"
    );
    let root = s.url("");
    let base = root.trim_end_matches('/').trim_end_matches("/rest");
    let r = s
        .request(
            Method::GET,
            &format!("{base}/fedoragsearch/rest?operation=gfindObjects&query=x"),
            &[],
            "",
        )
        .await;
    assert_eq!(r.status, 501, "{}", r.text());
    assert!(!s.data().join("search").exists());
    let r = s
        .request(Method::GET, &format!("{base}/health/ready"), &[], "")
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert!(
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["name"] != "search"),
        "{v}"
    );
}
