//! `arca fixity`: the offline audit of the OCFL root (see `arca_fixity::audit`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use arca_fixity::checkpoint::Checkpoint;
use arca_fixity::{AuditSettings, Auditor, FindingKind, Report, Reports};
use clap::Args;

use crate::{init_logging, load_config, CommonArgs};

/// `arca fixity` arguments.
#[derive(Args)]
pub struct FixityArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Continue the run a stop or crash cut short (from its checkpoint).
    #[arg(long)]
    pub resume: bool,
    /// Only objects whose id starts with one of these (`info:fedora/a/b`, or a path `a/b`).
    #[arg(long, num_args = 1..)]
    pub objects: Vec<String>,
    /// Also write the report (JSON) here (it is always kept in <data>/fixity/reports/).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Objects checked at once [default: twice the number of CPUs, so that one object's
    /// catalog queries and small reads overlap another's hashing]
    #[arg(long)]
    pub threads: Option<usize>,
    /// The most it reads, in MB (10^6 bytes) per second [default: no limit; the server's
    /// background audit uses [fixity] max_mb_per_s]
    #[arg(long)]
    pub max_mb_per_s: Option<f64>,
    /// Only report what is wrong; repair nothing, even with replicas configured.
    #[arg(long)]
    pub no_repair: bool,
    /// Check storage only: leave out the comparison with the catalog and the search for
    /// objects the catalog knows that storage lacks.
    #[arg(long)]
    pub storage_only: bool,
}

/// Runs the audit; the exit status says what it found (0 intact or repaired, 1 damage
/// remains, 2 could not run).
pub async fn run(args: FixityArgs) -> ExitCode {
    match audit(args).await {
        Ok(report) if report.unrepaired() == 0 => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("arca fixity: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// An object id as given on the command line (`a/b`, `/a/b`, `info:fedora/a/b`) in the
/// form inventories name it.
fn object_id(given: &str) -> String {
    if given.starts_with("info:fedora") {
        given.to_string()
    } else {
        format!("info:fedora/{}", given.trim_start_matches('/'))
    }
}

async fn audit(args: FixityArgs) -> anyhow::Result<Report> {
    let config = load_config(&args.common)?;
    init_logging(&config.log);
    if let Some(rate) = args.max_mb_per_s {
        anyhow::ensure!(
            rate.is_finite() && rate >= 0.0,
            "--max-mb-per-s must be 0 (no limit) or more (got {rate})"
        );
    }
    anyhow::ensure!(args.threads != Some(0), "--threads must be 1 or more");
    let (repo, _catalog) = arca_server::open_repository(&config, false).await?;
    // Repairs write through a store that syncs every write.
    let store: Arc<dyn arca_ocfl::ObjectStorage> = match &config.storage.s3 {
        None => Arc::new(
            arca_storage::FsStorage::open(&config.ocfl_root())
                .context("cannot open the OCFL root")?,
        ),
        Some(_) => repo.ocfl().store().clone(),
    };
    let replicas = arca_server::open_replicas(&config, store.as_ref())?;
    let dir = config.data.join("fixity");
    let reports = Reports::open(&dir.join("reports"))?;
    let checkpoint = Checkpoint::at(&dir.join("checkpoint-primary.json"));
    let staging = dir.join("staging");
    std::fs::create_dir_all(&staging)
        .with_context(|| format!("cannot create {}", staging.display()))?;
    let settings = AuditSettings {
        threads: args
            .threads
            .unwrap_or_else(|| 2 * std::thread::available_parallelism().map_or(1, |n| n.get())),
        max_bytes_per_second: args
            .max_mb_per_s
            .filter(|r| *r > 0.0)
            .map(|r| (r * 1e6) as u64),
        objects: args.objects.iter().map(|o| object_id(o)).collect(),
        repair: !args.no_repair,
    };
    let runtime = tokio::runtime::Handle::current();
    let mut auditor = Auditor::new(store, "primary", settings);
    if !args.storage_only {
        auditor = auditor.with_repository(repo.clone(), runtime.clone());
    }
    let auditor = auditor
        .with_replicas(replicas)
        .with_staging(&staging)
        .on_finding(arca_fixity::announce::announcer(repo.clone(), runtime));
    let progress = auditor.progress();
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("arca fixity: stopping after the objects in hand");
                stop.store(true, Ordering::Relaxed);
            }
        });
    }
    // The catalog's count of objects is the bar's length (a spinner for a part of them).
    let total = match args.objects.is_empty() {
        true => repo.catalog().totals().await.ok().map(|t| t.objects),
        false => None,
    };
    let bar = match total {
        Some(total) => {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:40}] {pos}/{len} objects (eta {eta}) {msg}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar
        }
        None => {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("{elapsed_precise} {spinner} {msg}")
                    .expect("valid template"),
            );
            bar
        }
    };
    let started = Instant::now();
    let ticker = {
        let bar = bar.clone();
        let progress = progress.clone();
        tokio::spawn(async move {
            loop {
                let p = progress.snapshot();
                let secs = started.elapsed().as_secs_f64().max(1e-9);
                bar.set_position(p.objects);
                bar.set_message(format!(
                    "{} files, {:.1} MB ({:.1} MB/s), {} findings, {} repaired",
                    p.files,
                    p.bytes as f64 / 1e6,
                    p.bytes as f64 / 1e6 / secs,
                    p.findings,
                    p.repaired
                ));
                bar.tick();
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };
    let resume = args.resume;
    let run_stop = stop.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        let result = auditor.run(&checkpoint, resume, &run_stop);
        (result, checkpoint)
    })
    .await
    .context("the audit failed")?;
    ticker.abort();
    bar.finish_and_clear();
    let report = match outcome.0 {
        Ok(report) => report,
        Err(arca_fixity::Error::Stopped) => {
            anyhow::bail!("stopped; `arca fixity --resume` continues the run")
        }
        Err(e) => {
            return Err(e).context(format!(
                "the audit of {} could not finish (`--resume` continues it)",
                arca_server::root_description(&config)
            ))
        }
    };
    reports.save(&report)?;
    if let Some(path) = &args.report {
        let bytes = serde_json::to_vec_pretty(&report).expect("a report serializes");
        std::fs::write(path, bytes)
            .with_context(|| format!("cannot write the report to {}", path.display()))?;
    }
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    println!(
        "audited {}: {} objects, {} files, {:.1} MB in {:.1} s ({:.1} MB/s, {:.0} objects/s); {} findings, {} repaired, {} remain",
        arca_server::root_description(&config),
        report.objects,
        report.files,
        report.bytes as f64 / 1e6,
        secs,
        report.bytes as f64 / 1e6 / secs,
        report.objects as f64 / secs,
        report.findings.len(),
        report.repaired,
        report.unrepaired()
    );
    for finding in &report.findings {
        let state = if finding.repaired {
            "repaired"
        } else {
            "DAMAGED"
        };
        println!("  {state} {}: {}", kind_name(finding.kind), finding.message);
    }
    println!("report: {}", reports.path_of(&report.id).display());
    Ok(report)
}

/// A finding's kind as the report writes it.
fn kind_name(kind: FindingKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}
