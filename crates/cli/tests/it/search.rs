//! Search with the real binary (issue 12): text extracted from real PDFs (in the `arca
//! extract-text` child) reaches FULLTEXT and the container's ALL; a corrupt PDF is logged
//! and blocks nothing; after SIGKILL the index resumes where it stopped, with nothing
//! missed and nothing twice; the offline `arca reindex` gives the same answers.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::Arca;
use arca_testkit::Http;
use hyper::Method;
use serde_json::Value;

const DC: &str = "@prefix dc: <http://purl.org/dc/elements/1.1/> .\n@prefix dcterms: <http://purl.org/dc/terms/> .\n";

fn pdfs() -> Vec<PathBuf> {
    let dir = arca_testkit::shared().join("corpus/pdf");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pdf"))
        .collect();
    v.sort();
    assert_eq!(v.len(), 7, "the corpus has 7 PDFs");
    v
}

async fn status(http: &Http, arca: &Arca) -> Value {
    let r = http.get(&arca.url("/fcr:search/status"), &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    serde_json::from_slice(&r.body).unwrap()
}

/// Waits until every change and every pending text is in the index.
async fn indexed(http: &Http, arca: &Arca) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let v = status(http, arca).await;
        if v["lag"] == 0 && v["extraction"]["pending"] == 0 && v["reindex"]["running"] != true {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "the index did not catch up: {v}\n{}",
            arca.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn total(http: &Http, arca: &Arca, q: &str) -> u64 {
    let url = format!(
        "{}?q={}&limit=1",
        arca.url("/fcr:search"),
        percent_encoding::utf8_percent_encode(q, percent_encoding::NON_ALPHANUMERIC)
    );
    let r = http.get(&url, &[]).await;
    assert_eq!(r.status, 200, "{q}: {}", r.text());
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    v["pagination"]["totalResults"].as_u64().unwrap()
}

/// Records 0..n, every fourth without a PDF (the study's 75 %), record 5's PDF corrupt.
async fn load(http: &Http, arca: &Arca, n: usize, pdfs: &[Vec<u8>]) -> (u64, u64) {
    let mut with_pdf = 0;
    for i in 0..n {
        let ttl = format!(
            "{DC}<> dcterms:title \"Record {i}\" ; dcterms:abstract \"About fish number {i}.\" ; dc:creator \"Doe, James\" ."
        );
        let r = http
            .request(
                Method::PUT,
                &arca.url(&format!("/rec{i}")),
                &[("content-type", "text/turtle")],
                ttl,
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text());
        if i % 4 == 3 {
            continue;
        }
        let body = if i == 5 {
            b"%PDF-1.7\nthis is not a PDF at all".to_vec()
        } else {
            with_pdf += 1;
            pdfs[i % pdfs.len()].clone()
        };
        let r = http
            .request(
                Method::PUT,
                &arca.url(&format!("/rec{i}/paper")),
                &[("content-type", "application/pdf")],
                body,
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    (with_pdf, n as u64)
}

/// The server extracts PDFs with its own program, whatever that file is called (a packaged
/// `arca-2.1`, a benchmark's `arca-before`): not with some `arca` found elsewhere, or none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdf_text_is_extracted_by_a_renamed_arca() {
    let pdf = std::fs::read(&pdfs()[0]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Nested, so that no `arca` stands next to it or one level up.
    std::fs::create_dir(dir.path().join("bin")).unwrap();
    let renamed = dir.path().join("bin/arca-renamed");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_arca"), &renamed).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_arca"), &renamed).unwrap();
    }
    let data = dir.path().join("data");
    let http = Http::new();
    // No `arca` on PATH to fall back on.
    let arca = Arca::serve_program(&renamed, &data, &[("PATH", "/usr/bin:/bin")]);
    let r = http
        .request(
            Method::PUT,
            &format!("{}/paper", arca.base),
            &[("content-type", "application/pdf")],
            pdf,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    indexed(&http, &arca).await;
    assert_eq!(
        total(&http, &arca, "FULLTEXT:university").await,
        1,
        "{}",
        arca.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdf_text_is_indexed_and_the_index_resumes_after_sigkill() {
    let pdfs: Vec<Vec<u8>> = pdfs().iter().map(|p| std::fs::read(p).unwrap()).collect();
    let data = tempfile::tempdir().unwrap();
    let http = Http::new();
    let arca = Arca::serve(data.path());
    let (with_pdf, records) = load(&http, &arca, 24, &pdfs).await;
    // Killed right after the last 2xx: indexing and extraction are mid-way.
    let first_log = arca.kill();
    let arca = Arca::serve(data.path());
    let st = indexed(&http, &arca).await;
    let binaries = records - records / 4;
    // Each binary's description is an item of its own, as in Fedora 7.
    assert_eq!(
        total(&http, &arca, "*:*").await,
        1 + records + 2 * binaries,
        "root, records, PDFs and their descriptions: each once"
    );
    assert_eq!(st["documents"], 1 + records + 2 * binaries);
    assert_eq!(total(&http, &arca, "ABSTRACT:fish").await, records);
    // Every real PDF names a university; its text is the binary's FULLTEXT and ALL, and its
    // record's ALL.
    assert_eq!(total(&http, &arca, "FULLTEXT:university").await, with_pdf);
    assert_eq!(total(&http, &arca, "ALL:university").await, 2 * with_pdf);
    assert_eq!(
        total(&http, &arca, "ABSTRACT:fish AND ALL:university").await,
        with_pdf
    );
    assert_eq!(
        total(&http, &arca, "FULLTEXT:fish").await,
        0,
        "no PDF mentions fish"
    );
    // The corrupt PDF failed and was logged, before the kill or after the restart (the
    // counters are the running process's).
    let failed_before = first_log.contains("no text extracted");
    assert!(
        failed_before || st["extraction"]["failed"].as_u64().unwrap() >= 1,
        "{st}"
    );
    assert!(
        (first_log + &arca.log()).contains("no text extracted"),
        "the corrupt PDF is logged"
    );

    // A write after the restart is found too, and a delete leaves.
    let r = http
        .request(Method::DELETE, &arca.url("/rec0"), &[], "")
        .await;
    assert_eq!(r.status, 204);
    indexed(&http, &arca).await;
    assert_eq!(total(&http, &arca, "ABSTRACT:fish").await, records - 1);
    assert_eq!(
        total(&http, &arca, "FULLTEXT:university").await,
        with_pdf - 1
    );
    let live_docs = status(&http, &arca).await["documents"].clone();
    arca.stop();

    // The offline rebuild gives the same index (texts come from the cache).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arca"))
        .arg("reindex")
        .arg("--data")
        .arg(data.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("{live_docs} documents")), "{said}");
    // ... merged into one segment before the command ends (queries cost less on one).
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.path().join("search/index/meta.json")).unwrap())
            .unwrap();
    assert_eq!(meta["segments"].as_array().unwrap().len(), 1, "{meta}");
    let arca = Arca::serve(data.path());
    indexed(&http, &arca).await;
    assert_eq!(total(&http, &arca, "ABSTRACT:fish").await, records - 1);
    assert_eq!(
        total(&http, &arca, "FULLTEXT:university").await,
        with_pdf - 1
    );
    arca.stop();

    // A catalog rebuilt from storage numbers its change log anew: the index notices and is
    // rebuilt rather than trusting a position in another log.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arca"))
        .arg("rebuild")
        .arg("--data")
        .arg(data.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let arca = Arca::serve(data.path());
    indexed(&http, &arca).await;
    assert!(
        arca.log().contains("built from another catalog"),
        "{}",
        arca.log()
    );
    assert_eq!(total(&http, &arca, "ABSTRACT:fish").await, records - 1);
    assert_eq!(
        total(&http, &arca, "FULLTEXT:university").await,
        with_pdf - 1
    );
    let late = format!("{DC}<> dcterms:abstract \"a late fish\" .");
    let r = http
        .request(
            Method::PUT,
            &arca.url("/late"),
            &[("content-type", "text/turtle")],
            late,
        )
        .await;
    assert_eq!(r.status, 201);
    indexed(&http, &arca).await;
    assert_eq!(total(&http, &arca, "ABSTRACT:fish").await, records);
    arca.stop();
}

/// `search.forward_to` that cannot work stops `arca serve` at start with a message naming
/// the setting, before anything is written: with the node's own index on, and a URL that is
/// not a node's REST root.
#[test]
fn search_forwarding_that_cannot_work_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    for (env, why) in [
        (
            vec![("ARCA_SEARCH_FORWARD_TO", "http://127.0.0.1:1/rest")],
            "search.enabled",
        ),
        (
            vec![
                ("ARCA_SEARCH_ENABLED", "false"),
                (
                    "ARCA_SEARCH_FORWARD_TO",
                    "http://127.0.0.1:1/rest,index-2:8080/rest",
                ),
            ],
            "\"index-2:8080/rest\" is not a node's REST root URL",
        ),
    ] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_arca"));
        cmd.arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data")
            .arg(&data)
            .stdin(std::process::Stdio::null());
        crate::common::scrub_env(&mut cmd);
        cmd.envs(env.iter().copied());
        let out = cmd.output().unwrap();
        assert!(!out.status.success(), "{env:?}: arca started");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("search.forward_to") && err.contains(why),
            "{env:?}: {err}"
        );
        assert!(!data.exists(), "{env:?}: the data directory was made");
    }
}
