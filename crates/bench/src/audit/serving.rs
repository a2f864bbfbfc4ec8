//! What the audit and the replicas cost the service: ingest and GETs with the background
//! audit on and off, and a replica's lag under ingest.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::root::Manifest;
use super::{add_note, audit_row, ctx_for, AuditDetail, Plan, ReadRun, ReplicaLag, ServingRatio};
use crate::args::Work;
use crate::driver::{drive, mix, Ctx, Limits, Probe};
use crate::http::Target;
use crate::recorder::{Code, TxOutcome};
use crate::report::{ScenarioReport, Status};
use crate::scenarios::{complete, ingest, pid_probe};
use crate::spawn::{Interrupt, Launch, SpawnedServer};

/// The order of the serving rows: counter-balanced, so that a drift over the run (a filling
/// disk, a warming cache) weighs on both sides alike.
pub const ORDER: [bool; 4] = [true, false, false, true];

/// Seconds a server settles after it answers, before a row measures it.
const SETTLE: Duration = Duration::from_secs(2);

/// The longest wait for a replica to catch up after the ingest.
const DRAIN_WAIT: Duration = Duration::from_secs(600);

/// `GET {base}fcr:audit` as JSON: `Ok(None)` when the server has no such resource (404, or
/// not JSON), `Err` when it cannot be asked.
pub async fn audit_status(target: &Target) -> anyhow::Result<Option<serde_json::Value>> {
    let url = format!("{}fcr:audit", target.base());
    let (status, body) = target
        .fetch(
            hyper::Method::GET,
            &url,
            &[("Accept", "application/json")],
            crate::payload::PayloadBody::empty(),
        )
        .await
        .map_err(|f| anyhow::anyhow!("GET {url}: {}", f.message))?;
    if status != 200 {
        return Ok(None);
    }
    Ok(serde_json::from_slice(&body).ok())
}

/// The background audit's bytes read so far in a `fcr:audit` answer (the running run's
/// counter), wherever the answer puts its progress.
pub fn audit_bytes(status: &serde_json::Value) -> Option<u64> {
    [
        "/audit/progress/bytes",
        "/progress/bytes",
        "/status/progress/bytes",
        "/bytes",
    ]
    .iter()
    .find_map(|p| status.pointer(p).and_then(serde_json::Value::as_u64))
}

/// The last finished run's id and bytes in a `fcr:audit` answer.
fn last_run(status: &serde_json::Value) -> Option<(String, u64)> {
    let last = status
        .pointer("/audit/last")
        .or_else(|| status.get("last"))?;
    Some((
        last.get("id")?.as_str()?.to_string(),
        last.get("bytes")?.as_u64()?,
    ))
}

/// Bytes the background audit read between two `fcr:audit` answers: the running run's
/// counter grew, or a run finished in between (its bytes after `before`, plus the new run's).
pub fn audit_read_between(before: &serde_json::Value, after: &serde_json::Value) -> Option<u64> {
    let (b, a) = (audit_bytes(before)?, audit_bytes(after)?);
    match (last_run(before), last_run(after)) {
        (l0, Some((id, bytes))) if l0.as_ref().map(|l| &l.0) != Some(&id) => {
            Some(bytes.saturating_sub(b) + a)
        }
        _ => Some(a.saturating_sub(b)),
    }
}

/// The replicas' names and lags in a `fcr:audit` answer (`{"replicas": [{"name", "lag"}]}`).
pub fn replica_lags(status: &serde_json::Value) -> Option<Vec<(String, i64)>> {
    let list = status
        .get("replicas")
        .or_else(|| status.pointer("/replication/replicas"))?
        .as_array()?;
    Some(
        list.iter()
            .filter_map(|r| {
                Some((
                    r.get("name")?.as_str().unwrap_or("?").to_string(),
                    r.get("lag")?.as_i64()?,
                ))
            })
            .collect(),
    )
}

/// GETs of `paths` (below the base; binaries of `size` bytes) in random order, for the
/// row's time.
async fn get_row(
    ctx: &Ctx,
    plan: &Plan,
    name: &str,
    paths: Arc<Vec<String>>,
    size: u64,
) -> ScenarioReport {
    let phase = plan.phase(name, Work::Access { metadata: false });
    let mut row = ScenarioReport::new(
        name,
        phase.scenario,
        crate::report::Kind::Access,
        crate::report::PhaseConfig {
            clients: phase.clients,
            duration_s: phase.duration.map(|d| d.as_secs_f64()),
            size_bytes: size,
            objects: Some(paths.len() as u64),
            ..Default::default()
        },
    );
    let target = ctx.target.clone().expect("a target");
    let probe = Probe::start(pid_probe(ctx), None).await;
    let seed = ctx.seed;
    let driven = drive(
        ctx,
        name,
        Limits {
            clients: phase.clients,
            duration: phase.duration,
            count: None,
        },
        move |ticket| {
            let target = target.clone();
            let paths = paths.clone();
            async move {
                let url = format!(
                    "{}{}",
                    target.base(),
                    paths[(mix(seed ^ ticket) % paths.len() as u64) as usize]
                );
                match target.get(&url, None).await {
                    Ok((_, n)) if n != size => TxOutcome::failed(
                        Code::WrongLength,
                        format!("GET {url}: {n} bytes instead of {size}"),
                    ),
                    Ok((code, n)) => TxOutcome::succeeded(code, n),
                    Err(f) => TxOutcome::failed(f.code, f.message),
                }
            }
        },
    )
    .await;
    complete(&mut row, &driven, probe, false).await;
    row
}

/// Ingest and GET rows with the background audit on and off ([`ORDER`]), then a row per
/// workload comparing them.
pub async fn serving(
    plan: &Plan,
    bin: &Path,
    data: &Path,
    manifest: &Manifest,
    interrupt: &Interrupt,
    emit: &mut impl FnMut(ScenarioReport),
) -> anyhow::Result<()> {
    let paths = Arc::new(manifest.small_binaries.clone());
    let mut ingest_rows: Vec<(bool, String, f64)> = Vec::new();
    let mut get_rows: Vec<(bool, String, f64)> = Vec::new();
    let mut audit_read: Vec<(u64, f64)> = Vec::new();
    let mut audit_note: Option<String> = None;
    let mut seen = [0usize; 2];
    for on in ORDER {
        if interrupt.is_set() {
            return Ok(());
        }
        seen[on as usize] += 1;
        let label = format!("{}{}", if on { "on" } else { "off" }, seen[on as usize]);
        eprintln!(
            "==> serving with the background audit {} ({label})",
            if on { "on" } else { "off" }
        );
        let launch = Launch {
            data: Some(data.to_path_buf()),
            log: Some(plan.log(&format!("server-audit-{label}.log"))),
            env: vec![
                (
                    "ARCA_FIXITY_SCHEDULE".into(),
                    Some(if on { "1s" } else { "off" }.into()),
                ),
                ("ARCA_FIXITY_MAX_MB_PER_S".into(), None),
                ("ARCA_FIXITY_THREADS".into(), None),
            ],
            config: None,
        };
        let mut server = SpawnedServer::launch(bin, None, None, None, &launch, interrupt).await?;
        let result = async {
            let ctx = ctx_for(plan, &server, interrupt)?;
            let target = ctx.target.clone().expect("a target");
            tokio::time::sleep(SETTLE).await;
            let t0 = Instant::now();
            let before = audit_status(&target).await.ok().flatten();
            let name = format!("audit-{label}-ingest");
            eprintln!("==> {name}");
            let phase = plan.phase(&name, Work::Ingest { with_binary: true });
            let row = ingest(&ctx, &phase, target.clone(), true).await;
            ingest_rows.push((on, row.name.clone(), row.summary.tps));
            emit(row);
            if paths.is_empty() {
                audit_note.get_or_insert_with(|| {
                    "no GET rows: the root has no list of its small binaries (it was not built \
                     by this scenario)"
                        .into()
                });
            } else if !interrupt.is_set() {
                let name = format!("audit-{label}-get");
                eprintln!("==> {name}");
                let row = get_row(&ctx, plan, &name, paths.clone(), manifest.small_size).await;
                get_rows.push((on, row.name.clone(), row.summary.tps));
                emit(row);
            }
            let after = audit_status(&target).await.ok().flatten();
            if on {
                let read = match (&before, &after) {
                    (Some(b), Some(a)) => audit_read_between(b, a),
                    _ => None,
                };
                match read {
                    Some(n) => audit_read.push((n, t0.elapsed().as_secs_f64())),
                    None => {
                        audit_note.get_or_insert_with(|| {
                            format!(
                                "GET fcr:audit did not tell the background audit's progress \
                                 (answer: {}): whether it ran during the on rows is not shown",
                                after.map_or_else(
                                    || "none or not 200".to_string(),
                                    |a| { a.to_string().chars().take(120).collect::<String>() }
                                )
                            )
                        });
                    }
                }
            }
            Ok::<_, anyhow::Error>(())
        }
        .await;
        server.stop().await;
        result?;
    }
    let audit_mb_per_s = (!audit_read.is_empty()).then(|| {
        let bytes: u64 = audit_read.iter().map(|(b, _)| b).sum();
        let secs: f64 = audit_read.iter().map(|(_, s)| s).sum();
        super::mb_per_s(bytes, secs)
    });
    for (workload, rows) in [("ingest", ingest_rows), ("get", get_rows)] {
        if rows.is_empty() {
            continue;
        }
        let tps =
            |on: bool| -> Vec<f64> { rows.iter().filter(|r| r.0 == on).map(|r| r.2).collect() };
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        let (on_tps, off_tps) = (tps(true), tps(false));
        let pct_of_off = match (mean(&on_tps), mean(&off_tps)) {
            (Some(a), Some(b)) if b > 0.0 => Some(100.0 * a / b),
            _ => None,
        };
        let mut row = audit_row(
            &format!("audit-serving-{workload}"),
            AuditDetail::Serving(ServingRatio {
                workload: workload.into(),
                rows: rows.iter().map(|r| r.1.clone()).collect(),
                on_tps,
                off_tps,
                pct_of_off,
                audit_mb_per_s,
            }),
        );
        if let Some(n) = &audit_note {
            add_note(&mut row, n.clone());
        }
        emit(row);
    }
    Ok(())
}

/// A server with one directory replica, ingest for the row's time while `fcr:audit` is
/// sampled, the time until the replica has caught up; then `arca replica verify` and
/// ocfl-py on the replica.
pub async fn replica(
    plan: &Plan,
    bin: &Path,
    interrupt: &Interrupt,
    emit: &mut impl FnMut(ScenarioReport),
) -> anyhow::Result<()> {
    std::fs::create_dir_all(&plan.parent)
        .with_context(|| format!("creating {}", plan.parent.display()))?;
    let dir = tempfile::Builder::new()
        .prefix("arca-bench-replica-")
        .tempdir_in(&plan.parent)
        .with_context(|| format!("creating a directory in {}", plan.parent.display()))?;
    let data = dir.path().join("data");
    let copy = dir.path().join("replica");
    std::fs::create_dir_all(&copy)?;
    let config = dir.path().join("arca.toml");
    std::fs::write(
        &config,
        format!(
            "[fixity]\nschedule = \"off\"\n\n[[replica]]\nname = \"bench-replica\"\npath = {}\n",
            toml_string(&copy.display().to_string())
        ),
    )
    .with_context(|| format!("writing {}", config.display()))?;
    let result = replica_in(plan, bin, &data, &copy, &config, interrupt, emit).await;
    let path = dir.keep();
    let _ = tokio::task::spawn_blocking(move || {
        crate::cleanup::remove_tree(&path, "the replica run's data");
    })
    .await;
    result
}

/// `s` as a TOML basic string.
pub(crate) fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

async fn replica_in(
    plan: &Plan,
    bin: &Path,
    data: &Path,
    copy: &Path,
    config: &Path,
    interrupt: &Interrupt,
    emit: &mut impl FnMut(ScenarioReport),
) -> anyhow::Result<()> {
    eprintln!(
        "==> replica lag: a server with a [[replica]] in {}",
        copy.display()
    );
    let launch = Launch {
        data: Some(data.to_path_buf()),
        log: Some(plan.log("server-replica.log")),
        env: vec![("ARCA_FIXITY_SCHEDULE".into(), Some("off".into()))],
        config: Some(config.to_path_buf()),
    };
    let mut server = SpawnedServer::launch(bin, None, None, None, &launch, interrupt).await?;
    let result = lag_rows(plan, &server, interrupt, emit).await;
    server.stop().await;
    let measured = result?;
    if !measured || interrupt.is_set() {
        return Ok(());
    }
    // `arca replica verify` over the replica the ingest filled.
    eprintln!("==> audit-replica-verify");
    let log = plan.log("replica-verify.log");
    let _ = std::fs::remove_file(&log);
    let mut cmd = tokio::process::Command::new(bin);
    cmd.env("ARCA_FIXITY_MAX_MB_PER_S", "0")
        .env("ARCA_FIXITY_THREADS", plan.threads.to_string())
        .arg("replica")
        .arg("verify")
        .arg("--config")
        .arg(config)
        .arg("--data")
        .arg(data);
    let listing = {
        let copy = copy.to_path_buf();
        tokio::task::spawn_blocking(move || super::read::list(&copy))
            .await?
            .unwrap_or_default()
    };
    let mut run = ReadRun {
        tool: "arca-replica-verify".into(),
        cache: "warm".into(),
        command: Some(format!("{cmd:?}")),
        root_objects: listing.objects,
        root_files: listing.files.len() as u64,
        root_bytes: listing.bytes,
        log: Some(log.display().to_string()),
        ..Default::default()
    };
    let t = super::read::run_tool(cmd, &log, interrupt).await?;
    let mut row = audit_row(
        "audit-replica-verify",
        AuditDetail::Read(ReadRun::default()),
    );
    run.seconds = t.seconds;
    run.exit_code = t.exit;
    run.peak_rss_mb = t.peak_rss_mb;
    run.mean_cpu_pct = t.mean_cpu_pct;
    run.valid = Some(t.exit == Some(0));
    run.mb_per_s = super::mb_per_s(run.root_bytes, run.seconds);
    if run.seconds > 0.0 {
        run.objects_per_s = run.root_objects as f64 / run.seconds;
        run.files_per_s = run.root_files as f64 / run.seconds;
    }
    if listing.objects == 0 {
        add_note(
            &mut row,
            "the replica holds no object: nothing was copied to it during the ingest",
        );
    }
    if t.exit != Some(0) {
        row.status = Status::Aborted;
        add_note(
            &mut row,
            format!(
                "arca replica verify exited {}: {}",
                t.exit.map_or("by a signal".into(), |c| c.to_string()),
                super::read::tail(&log, 4)
            ),
        );
    }
    row.elapsed_s = run.seconds;
    row.audit = Some(AuditDetail::Read(run));
    emit(row);
    // The replica is an OCFL root that others can read.
    if let Some(validator) = &plan.ocfl_validate {
        eprintln!("==> audit-ocfl-py-replica");
        let log = plan.log("ocfl-py-replica.log");
        let _ = std::fs::remove_file(&log);
        let (t, valid) =
            super::read::ocfl_py(validator, &listing.object_dirs, &log, interrupt).await?;
        let mut row = audit_row(
            "audit-ocfl-py-replica",
            AuditDetail::Read(ReadRun {
                tool: "ocfl-py".into(),
                cache: "warm".into(),
                command: Some(format!(
                    "{} -q OBJECT_DIR... (the replica's {} objects)",
                    validator.display(),
                    listing.objects
                )),
                seconds: t.seconds,
                root_objects: listing.objects,
                root_files: listing.files.len() as u64,
                root_bytes: listing.bytes,
                mb_per_s: super::mb_per_s(listing.bytes, t.seconds),
                objects_per_s: if t.seconds > 0.0 {
                    listing.objects as f64 / t.seconds
                } else {
                    0.0
                },
                files_per_s: if t.seconds > 0.0 {
                    listing.files.len() as f64 / t.seconds
                } else {
                    0.0
                },
                peak_rss_mb: t.peak_rss_mb,
                mean_cpu_pct: t.mean_cpu_pct,
                checked_objects: Some(valid),
                valid: Some(t.exit == Some(0) && valid == listing.objects),
                exit_code: t.exit,
                log: Some(log.display().to_string()),
                ..Default::default()
            }),
        );
        row.elapsed_s = t.seconds;
        if listing.objects == 0 {
            row.status = Status::NotAvailable;
            add_note(&mut row, "the replica holds no object to validate");
        } else if t.exit != Some(0) || valid != listing.objects {
            row.status = Status::Aborted;
            add_note(
                &mut row,
                format!(
                    "ocfl-py called {valid} of {} objects of the replica valid (exit {}): {}",
                    listing.objects,
                    t.exit.map_or("by a signal".into(), |c| c.to_string()),
                    super::read::tail(&log, 3)
                ),
            );
        }
        emit(row);
    }
    Ok(())
}

/// The ingest row and the lag row; `false` when the server does not report replica lag.
async fn lag_rows(
    plan: &Plan,
    server: &SpawnedServer,
    interrupt: &Interrupt,
    emit: &mut impl FnMut(ScenarioReport),
) -> anyhow::Result<bool> {
    let ctx = ctx_for(plan, server, interrupt)?;
    let target = ctx.target.clone().expect("a target");
    let first = audit_status(&target).await?;
    let Some(names) = first.as_ref().and_then(replica_lags) else {
        let mut row = audit_row("audit-replica-lag", AuditDetail::Lag(ReplicaLag::default()));
        row.status = Status::NotAvailable;
        add_note(
            &mut row,
            format!(
                "GET {}fcr:audit answered no replica list ({}): this arca does not report \
                 replica lag yet, so lag and drain time cannot be measured",
                target.base(),
                first.map_or_else(
                    || "not 200 or not JSON".to_string(),
                    |v| v.to_string().chars().take(120).collect::<String>()
                )
            ),
        );
        emit(row);
        return Ok(false);
    };
    let replica_name = names
        .first()
        .map_or_else(|| "bench-replica".to_string(), |n| n.0.clone());
    // Sample the lag every 250 ms while the ingest runs.
    let series = Arc::new(Mutex::new(Vec::<(f64, i64)>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let start = Instant::now();
    let sampler = {
        let target = target.clone();
        let series = series.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(Some(v)) = audit_status(&target).await {
                    if let Some(lags) = replica_lags(&v) {
                        let lag = lags.iter().map(|l| l.1).max().unwrap_or(0);
                        if let Ok(mut s) = series.lock() {
                            s.push((start.elapsed().as_secs_f64(), lag));
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let name = "audit-replica-ingest";
    eprintln!("==> {name}");
    let phase = plan.phase(name, Work::Ingest { with_binary: true });
    let row = ingest(&ctx, &phase, target.clone(), true).await;
    let ingest_tps = row.summary.tps;
    emit(row);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = sampler.await;
    // Drain: until every replica's lag is 0.
    let ended = Instant::now();
    let mut drain_s = None;
    let mut last = None;
    while ended.elapsed() < DRAIN_WAIT && !interrupt.is_set() {
        if let Ok(Some(v)) = audit_status(&target).await {
            if let Some(lags) = replica_lags(&v) {
                let lag = lags.iter().map(|l| l.1).max().unwrap_or(0);
                last = Some(lag);
                if lag <= 0 {
                    drain_s = Some(ended.elapsed().as_secs_f64());
                    break;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let series = series.lock().map(|s| s.clone()).unwrap_or_default();
    let mut lags: Vec<i64> = series.iter().map(|s| s.1).collect();
    lags.sort_unstable();
    let mut row = audit_row(
        "audit-replica-lag",
        AuditDetail::Lag(ReplicaLag {
            replica: replica_name,
            samples: series.len() as u64,
            max_lag: lags.last().copied(),
            p50_lag: (!lags.is_empty()).then(|| lags[lags.len() / 2]),
            drain_s,
            ingest_tps,
            series,
        }),
    );
    if drain_s.is_none() {
        row.status = if interrupt.is_set() {
            Status::Interrupted
        } else {
            Status::Aborted
        };
        add_note(
            &mut row,
            format!(
                "the replica had not caught up {} s after the ingest (lag {:?})",
                DRAIN_WAIT.as_secs(),
                last
            ),
        );
    }
    emit(row);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_answers_are_read_where_they_put_their_figures() {
        let v: serde_json::Value = serde_json::json!({
            "audit": {"progress": {"running": true, "bytes": 1234}},
            "replicas": [{"name": "a", "lag": 3, "position": 9}, {"name": "b", "lag": 0}]
        });
        assert_eq!(audit_bytes(&v), Some(1234));
        assert_eq!(
            replica_lags(&v),
            Some(vec![("a".to_string(), 3), ("b".to_string(), 0)])
        );
        let v = serde_json::json!({"progress": {"bytes": 5}});
        assert_eq!(audit_bytes(&v), Some(5));
        assert_eq!(replica_lags(&v), None);
        assert_eq!(audit_bytes(&serde_json::json!({})), None);
        // A run finished between the two answers: its rest plus the new run's bytes.
        let at = |bytes: u64, last: Option<(&str, u64)>| {
            serde_json::json!({"audit": {
                "progress": {"bytes": bytes},
                "last": last.map(|(id, b)| serde_json::json!({"id": id, "bytes": b})),
            }})
        };
        assert_eq!(audit_read_between(&at(10, None), &at(25, None)), Some(15));
        assert_eq!(
            audit_read_between(&at(10, Some(("r1", 5))), &at(25, Some(("r1", 5)))),
            Some(15)
        );
        assert_eq!(
            audit_read_between(&at(80, Some(("r1", 5))), &at(7, Some(("r2", 100)))),
            Some(27)
        );
        assert_eq!(
            audit_read_between(&at(80, None), &serde_json::json!({})),
            None
        );
    }

    #[test]
    fn paths_become_toml_strings() {
        assert_eq!(toml_string("/tmp/a b"), "\"/tmp/a b\"");
        assert_eq!(toml_string("C:\\x\"y"), "\"C:\\\\x\\\"y\"");
        let parsed: std::collections::BTreeMap<String, String> =
            toml_like(&format!("p = {}", toml_string("/x/\"q\"\\z")));
        assert_eq!(parsed["p"], "/x/\"q\"\\z");
    }

    /// The one-line `key = "value"` parse this test needs (no toml dependency here).
    fn toml_like(line: &str) -> std::collections::BTreeMap<String, String> {
        let (k, v) = line.split_once(" = ").unwrap();
        let v: String = serde_json::from_str(v).unwrap();
        [(k.to_string(), v)].into_iter().collect()
    }

    #[test]
    fn the_order_is_counter_balanced() {
        assert_eq!(ORDER.iter().filter(|&&on| on).count(), 2);
        assert_eq!(ORDER[0], ORDER[3]);
        assert_eq!(ORDER[1], ORDER[2]);
    }
}
