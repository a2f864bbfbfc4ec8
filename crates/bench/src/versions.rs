//! Versions and transactions (Fedora API §4, Fedora 6's `fcr:tx`):
//! - `versions-update@1` / `versions-update@N`: PUTs of resources that have one version
//!   (each a different resource) against PUTs of one resource that already has `--objects`
//!   versions (default 1,000), one client each, so that the rows differ only in the history
//!   behind the update (OCFL rewrites the whole inventory on every version);
//! - `versions-timemap@N`: GETs of that resource's TimeMap (link-format);
//! - `tx-commit@N`: one transaction of `--objects` new containers, committed (the row times the
//!   commit alone; its peak RSS is the commit's, and its note gives the server's RSS before
//!   the transaction began and with all its resources staged). The `transaction` scenario
//!   runs this row alone (default 10,000 resources).

use std::sync::Arc;
use std::time::Duration;

use hyper::Method;

use crate::args::{Phase, Scenario};
use crate::driver::{drive, Ctx, Limits, Probe};
use crate::http::{Failure, Target};
use crate::recorder::TxOutcome;
use crate::report::{Kind, PhaseConfig, ScenarioReport, Status};
use crate::scenarios::{complete, pid_probe};

/// Updates measured per update row.
const UPDATES: u64 = 200;

fn row(
    phase: &Phase,
    name: &str,
    kind: Kind,
    objects: Option<u64>,
    clients: usize,
) -> ScenarioReport {
    ScenarioReport::new(
        name,
        phase.scenario,
        kind,
        PhaseConfig {
            clients,
            objects,
            ..Default::default()
        },
    )
}

fn aborted(phase: &Phase, name: &str, f: Failure) -> ScenarioReport {
    let mut r = row(phase, name, Kind::Ingest, None, 1);
    r.status = Status::Aborted;
    r.note = Some(format!("setup failed: {}", f.message));
    r
}

fn title(i: u64) -> String {
    format!("<> <http://purl.org/dc/terms/title> \"version {i}\" .")
}

/// Runs the versions scenario and returns its rows.
pub async fn versions(ctx: &Ctx, phase: &Phase, target: Arc<Target>) -> Vec<ScenarioReport> {
    if phase.scenario == Scenario::Transaction {
        return vec![transaction_row(ctx, phase, &target, phase.objects.max(1)).await];
    }
    let history = phase.objects.max(2);
    let updates = phase.count.unwrap_or(UPDATES).max(1);
    let mut rows = Vec::new();

    // One version each: `updates` fresh resources, each updated once.
    let mut fresh = Vec::with_capacity(updates as usize);
    for _ in 0..updates {
        match target.create_container().await {
            Ok((_, url)) => fresh.push(url),
            Err(f) => return vec![aborted(phase, "versions-setup", f)],
        }
    }
    let fresh = Arc::new(fresh);
    rows.push(
        update_row(
            ctx,
            phase,
            &target,
            "versions-update@1",
            1,
            updates,
            move |i| fresh[i as usize % fresh.len()].clone(),
        )
        .await,
    );

    // One resource with `history` versions.
    let deep = match target.create_container().await {
        Ok((_, url)) => Arc::new(url),
        Err(f) => return vec![aborted(phase, "versions-setup", f)],
    };
    let limits = Limits {
        clients: 1,
        duration: None,
        count: Some(history - 1),
    };
    {
        let target = target.clone();
        let deep = deep.clone();
        drive(
            ctx,
            &format!("{} (building history)", phase.name),
            limits,
            move |i| {
                let target = target.clone();
                let deep = deep.clone();
                async move { put(&target, &deep, i).await }
            },
        )
        .await;
    }
    if ctx.interrupt.is_set() {
        return rows;
    }
    let d = deep.clone();
    rows.push(
        update_row(
            ctx,
            phase,
            &target,
            &format!("versions-update@{history}"),
            history,
            updates,
            move |_| d.to_string(),
        )
        .await,
    );
    rows.push(timemap_row(ctx, phase, &target, &deep, history).await);
    if ctx.interrupt.is_set() {
        return rows;
    }
    rows.push(transaction_row(ctx, phase, &target, history).await);
    rows
}

async fn put(target: &Target, url: &str, i: u64) -> TxOutcome {
    match target.send_turtle(Method::PUT, url, &title(i), &[]).await {
        Ok((code, _)) => TxOutcome::succeeded(code, 0),
        Err(f) => TxOutcome::failed(f.code, f.message),
    }
}

/// `count` PUTs by one client, the `i`th to `url(i)`.
async fn update_row(
    ctx: &Ctx,
    phase: &Phase,
    target: &Arc<Target>,
    name: &str,
    versions: u64,
    count: u64,
    url: impl Fn(u64) -> String + Send + Sync + 'static,
) -> ScenarioReport {
    let mut r = row(phase, name, Kind::Ingest, Some(versions), 1);
    let probe = Probe::start(pid_probe(ctx), None).await;
    let limits = Limits {
        clients: 1,
        duration: None,
        count: Some(count),
    };
    let target = target.clone();
    let url = Arc::new(url);
    let d = drive(ctx, name, limits, move |i| {
        let target = target.clone();
        let url = url.clone();
        async move { put(&target, &url(i), i).await }
    })
    .await;
    complete(&mut r, &d, probe, false).await;
    r
}

/// GETs of a TimeMap in link-format for `--duration` (default 10 s).
async fn timemap_row(
    ctx: &Ctx,
    phase: &Phase,
    target: &Arc<Target>,
    resource: &str,
    versions: u64,
) -> ScenarioReport {
    let name = format!("versions-timemap@{versions}");
    let mut r = row(phase, &name, Kind::Access, Some(versions), phase.clients);
    let probe = Probe::start(pid_probe(ctx), None).await;
    let limits = Limits {
        clients: phase.clients,
        duration: Some(phase.duration.unwrap_or(Duration::from_secs(10))),
        count: None,
    };
    let target = target.clone();
    let url = Arc::new(format!("{resource}/fcr:versions"));
    let d = drive(ctx, &name, limits, move |_| {
        let target = target.clone();
        let url = url.clone();
        async move {
            match target
                .get_with(&url, &[("accept", "application/link-format")])
                .await
            {
                Ok((code, n)) => TxOutcome::succeeded(code, n),
                Err(f) => TxOutcome::failed(f.code, f.message),
            }
        }
    })
    .await;
    complete(&mut r, &d, probe, false).await;
    r
}

/// One transaction creating `n` containers (16 clients), then its commit, measured.
async fn transaction_row(ctx: &Ctx, phase: &Phase, target: &Arc<Target>, n: u64) -> ScenarioReport {
    let name = format!("tx-commit@{n}");
    let rss_before = server_rss_mb(ctx);
    let base = target.base().to_string();
    let begin = format!(
        "{}fcr:tx",
        if base.ends_with('/') {
            base.clone()
        } else {
            format!("{base}/")
        }
    );
    let tx = match target.send_turtle(Method::POST, &begin, "", &[]).await {
        Ok((_, Some(tx))) => Arc::new(tx),
        Ok((code, None)) => {
            return aborted(
                phase,
                &name,
                Failure {
                    code,
                    message: format!("POST {begin}: no Location (transactions unsupported?)"),
                },
            )
        }
        Err(f) => return aborted(phase, &name, f),
    };
    let limits = Limits {
        clients: phase.clients,
        duration: None,
        count: Some(n),
    };
    {
        let target = target.clone();
        let tx = tx.clone();
        let base = Arc::new(base.clone());
        drive(
            ctx,
            &format!("{name} (creating in the transaction)"),
            limits,
            move |i| {
                let target = target.clone();
                let tx = tx.clone();
                let base = base.clone();
                async move {
                    match target
                        .send_turtle(
                            Method::POST,
                            &base,
                            &title(i),
                            &[("atomic-id", tx.as_str())],
                        )
                        .await
                    {
                        Ok((code, _)) => TxOutcome::succeeded(code, 0),
                        Err(f) => TxOutcome::failed(f.code, f.message),
                    }
                }
            },
        )
        .await;
    }
    let rss_open = server_rss_mb(ctx);
    let mut r = row(phase, &name, Kind::Ingest, Some(n), 1);
    if let (Some(before), Some(open)) = (rss_before, rss_open) {
        r.note = Some(format!(
            "server RSS {before:.1} MB before the transaction began, {open:.1} MB with its {n} resources staged"
        ));
    }
    let probe = Probe::start(pid_probe(ctx), ctx.data_dir.clone()).await;
    let limits = Limits {
        clients: 1,
        duration: None,
        count: Some(1),
    };
    let target = target.clone();
    let d = drive(ctx, &name, limits, move |_| {
        let target = target.clone();
        let tx = tx.clone();
        async move {
            match target.send_turtle(Method::PUT, &tx, "", &[]).await {
                Ok((code, _)) => TxOutcome::succeeded(code, 0),
                Err(f) => TxOutcome::failed(f.code, f.message),
            }
        }
    })
    .await;
    complete(&mut r, &d, probe, true).await;
    // The kernel's high-water mark sees the commit's peak, which samples can miss.
    if let (Some(note), Some((_, Some(peak)))) = (r.note.as_mut(), server_memory_mb(ctx)) {
        note.push_str(&format!(
            "; peak RSS of the server's whole life (VmHWM) {peak:.1} MB after the commit"
        ));
    }
    r
}

/// The spawned (or `--pid`) server's resident set, in MB.
fn server_rss_mb(ctx: &Ctx) -> Option<f64> {
    server_memory_mb(ctx)?.0
}

/// The spawned (or `--pid`) server's resident set and its high-water mark, in MB.
fn server_memory_mb(ctx: &Ctx) -> Option<(Option<f64>, Option<f64>)> {
    let (rss, hwm) = crate::procfs::memory_kb(ctx.server_pid?)?;
    let mb = |kb: u64| kb as f64 / 1024.0;
    Some((rss.map(mb), hwm.map(mb)))
}
