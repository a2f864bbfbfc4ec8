//! `arca import fedora3 --url`: objects sent one by one to a running arca's
//! `POST fcr:import/fedora3`, each as a self-contained FOXML document (managed content
//! inline), a few at a time.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;
use arca_fedora3::source::ObjectEntry;
use base64::Engine;
use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use super::Fedora3Args;

/// Sends every object; prints a summary and writes the server's reports as one JSON array
/// to `--report`. Exit status 1 if any object failed.
pub async fn run(
    url: &str,
    objects: Vec<ObjectEntry>,
    args: &Fedora3Args,
) -> anyhow::Result<std::process::ExitCode> {
    let endpoint = format!(
        "{}/fcr:import/fedora3{}",
        url.trim_end_matches('/'),
        if args.resume { "?resume=true" } else { "" }
    );
    let authorization = args.auth.as_ref().map(|a| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(a)
        )
    });
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let (imported, skipped, failed) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let total = objects.len();
    let bar = indicatif::ProgressBar::new(total as u64);
    let started = std::time::Instant::now();
    let concurrency = args.threads.unwrap_or(2).max(1);
    let reports: Vec<serde_json::Value> = futures_util::stream::iter(objects)
        .map(|entry| {
            let (client, endpoint, authorization) =
                (client.clone(), endpoint.clone(), authorization.clone());
            async move {
                let result = send(&client, &endpoint, authorization.as_deref(), &entry).await;
                (entry, result)
            }
        })
        .buffered(concurrency)
        .map(|(entry, result)| {
            bar.inc(1);
            let report = match result {
                Ok((status, report)) => {
                    match status {
                        201 => imported.fetch_add(1, Ordering::Relaxed),
                        200 => skipped.fetch_add(1, Ordering::Relaxed),
                        _ => failed.fetch_add(1, Ordering::Relaxed),
                    };
                    report
                }
                Err(e) => {
                    failed.fetch_add(1, Ordering::Relaxed);
                    serde_json::json!({
                        "pid": entry.pid,
                        "source": entry.foxml,
                        "outcome": "failed",
                        "reason": format!("{e:#}"),
                    })
                }
            };
            if report["outcome"] == "failed" {
                bar.suspend(|| {
                    println!(
                        "  FAILED {} ({}): {}",
                        entry.pid,
                        entry.foxml.display(),
                        report["reason"].as_str().unwrap_or("")
                    )
                });
            }
            report
        })
        .collect()
        .await;
    bar.finish();
    let seconds = started.elapsed().as_secs_f64();
    let (imported, skipped, failed) = (
        imported.into_inner(),
        skipped.into_inner(),
        failed.into_inner(),
    );
    println!(
        "imported {imported} objects into {url} in {seconds:.1} s: {:.0} objects/s; {skipped} skipped, {failed} failed",
        imported as f64 / seconds.max(1e-9)
    );
    if let Some(path) = &args.report {
        std::fs::write(path, serde_json::to_vec_pretty(&reports)?)
            .with_context(|| format!("cannot write the report {}", path.display()))?;
    }
    Ok(if failed > 0 {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    })
}

/// One object: read, made self-contained, posted; the status and the server's report.
async fn send(
    client: &Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
    endpoint: &str,
    authorization: Option<&str>,
    entry: &ObjectEntry,
) -> anyhow::Result<(u16, serde_json::Value)> {
    let document = {
        let entry = entry.clone();
        tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<u8>> {
            let stored = std::fs::read(&entry.foxml)
                .with_context(|| format!("cannot read {}", entry.foxml.display()))?;
            let resolve = |r: &str| entry.resolver.resolve(r).ok();
            arca_fedora3::archive::inline_managed_content(&stored, &resolve)
                .map_err(anyhow::Error::msg)
        })
        .await??
    };
    let mut request = hyper::Request::post(endpoint).header("Content-Type", "text/xml");
    if let Some(a) = authorization {
        request = request.header("Authorization", a);
    }
    let response = client
        .request(request.body(Full::new(Bytes::from(document)))?)
        .await
        .with_context(|| format!("POST {endpoint}"))?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await?.to_bytes();
    let mut report: serde_json::Value = serde_json::from_slice(&body).unwrap_or_else(|_| {
        serde_json::json!({
            "outcome": "failed",
            "reason": format!("{status}: {}", String::from_utf8_lossy(&body)),
        })
    });
    if let Some(r) = report.as_object_mut() {
        r.insert("source".into(), serde_json::json!(entry.foxml));
    }
    Ok((status, report))
}
