//! Write-to-visible under sustained ingest (issue 12 §1, BENCHMARKS.md "Search"), not a
//! test: it prints figures and asserts nothing about time. Run it in release mode, alone on
//! the machine:
//!
//! ```text
//! cargo test --release -p arca-cli --test it -- --ignored --nocapture search_bench::
//! ```
//!
//! The real `arca serve` takes Dublin Core records from 16 writers for 30 s (as fast as it
//! goes), while a probe writes one record with a unique title every 100 ms and queries
//! `TITLE:<token>` every 5 ms until it is found: the time from the probe's 2xx to the first
//! answer with it is one sample. The same probe runs alone first, for the idle figure.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::Method;

use crate::common::{Arca, Http};

const DC: &str = "@prefix dc: <http://purl.org/dc/elements/1.1/> .\n@prefix dcterms: <http://purl.org/dc/terms/> .\n";
const WRITERS: usize = 16;
const LENGTH: Duration = Duration::from_secs(30);

fn record(title: &str, n: u64) -> String {
    format!(
        "{DC}<> dcterms:title \"{title}\" ; dcterms:abstract \"Record {n} about animals and fish.\" ; dc:creator \"Doe, Jane\" ; dc:date \"2025-03-18\" ."
    )
}

/// Probes until `stop`: the write-to-visible time of each probe, in milliseconds.
async fn probe(arca: &Arca, stop: Arc<AtomicBool>, phase: &str) -> Vec<f64> {
    let http = Http::new();
    let mut samples = Vec::new();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let token = format!("{phase}{n}x{}", std::process::id());
        let r = http
            .request(
                Method::PUT,
                &arca.url(&format!("/probes/{token}")),
                &[("content-type", "text/turtle")],
                record(&token, n),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text());
        let answered = Instant::now();
        let url = arca.url(&format!("/fcr:search?q=TITLE:{token}&limit=1"));
        loop {
            let r = http.get(&url, &[]).await;
            assert_eq!(r.status, 200);
            if r.text().contains(&token) {
                samples.push(answered.elapsed().as_secs_f64() * 1e3);
                break;
            }
            assert!(
                answered.elapsed() < Duration::from_secs(60),
                "never visible"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    samples
}

fn summary(name: &str, mut ms: Vec<f64>) {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{name}: {} samples, p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        ms.len(),
        at(0.5),
        at(0.99),
        ms[ms.len() - 1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a benchmark: run in release mode alone on the machine"]
async fn write_to_visible_under_sustained_ingest() {
    let data = tempfile::tempdir().unwrap();
    let arca = Arc::new(Arca::serve(data.path()));
    let http = Http::new();
    for p in ["/probes", "/load"] {
        let r = http.request(Method::PUT, &arca.url(p), &[], "").await;
        assert_eq!(r.status, 201);
    }
    // Idle: the probe alone for 10 s.
    let stop = Arc::new(AtomicBool::new(false));
    let idle = {
        let (a, s) = (arca.clone(), stop.clone());
        tokio::spawn(async move { probe(&a, s, "idle").await })
    };
    tokio::time::sleep(Duration::from_secs(10)).await;
    stop.store(true, Ordering::Relaxed);
    summary("idle", idle.await.unwrap());

    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (a, s, n) = (arca.clone(), stop.clone(), written.clone());
        writers.push(tokio::spawn(async move {
            let http = Http::new();
            let mut i = 0u64;
            while !s.load(Ordering::Relaxed) {
                i += 1;
                let r = http
                    .request(
                        Method::PUT,
                        &a.url(&format!("/load/w{w}-{i}")),
                        &[("content-type", "text/turtle")],
                        record("Loaded record", i),
                    )
                    .await;
                assert_eq!(r.status, 201, "{}", r.text());
                n.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let busy = {
        let (a, s) = (arca.clone(), stop.clone());
        tokio::spawn(async move { probe(&a, s, "busy").await })
    };
    let started = Instant::now();
    tokio::time::sleep(LENGTH).await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let records = written.load(Ordering::Relaxed);
    println!(
        "ingest: {records} records in {:.1} s ({:.0}/s) by {WRITERS} writers",
        started.elapsed().as_secs_f64(),
        records as f64 / started.elapsed().as_secs_f64()
    );
    summary("under ingest", busy.await.unwrap());
    let caught_up = Instant::now();
    loop {
        let r = http.get(&arca.url("/fcr:search/status"), &[]).await;
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        if v["lag"] == 0 {
            println!(
                "index caught up {:.2} s after the writers stopped; {} documents",
                caught_up.elapsed().as_secs_f64(),
                v["documents"]
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
