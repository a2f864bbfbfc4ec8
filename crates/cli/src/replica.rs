//! `arca replica sync|verify`: bring the replicas up to date, or audit them.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;
use arca_config::Config;
use arca_fixity::checkpoint::Checkpoint;
use arca_fixity::replica::consumer_name;
use arca_fixity::{AuditSettings, Auditor, Replica, Reports};
use clap::Subcommand;

use crate::{init_logging, load_config, CommonArgs};

/// `arca replica` subcommands.
#[derive(Subcommand)]
pub enum ReplicaCommand {
    /// Make each replica (or the one named) equal to the primary root: copy what it lacks
    /// or holds differently, remove what the primary no longer has.
    Sync {
        #[command(flatten)]
        common: CommonArgs,
        /// Only the replica of this name.
        #[arg(long)]
        name: Option<String>,
    },
    /// Audit each replica (or the one named) as `arca fixity` audits the primary, and
    /// repair its damage from the primary.
    Verify {
        #[command(flatten)]
        common: CommonArgs,
        /// Only the replica of this name.
        #[arg(long)]
        name: Option<String>,
    },
}

/// Runs the subcommand; exit status 0 when every replica is (now) whole, 1 when damage
/// remains, 2 when it could not run.
pub async fn run(command: ReplicaCommand) -> ExitCode {
    let result = match command {
        ReplicaCommand::Sync { common, name } => sync(&common, name.as_deref()).await,
        ReplicaCommand::Verify { common, name } => verify(&common, name.as_deref()).await,
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("arca replica: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The replicas of `config` (only the one called `name`, if given), opened and checked
/// against `primary`.
fn replicas(
    config: &Config,
    primary: &dyn arca_ocfl::ObjectStorage,
    name: Option<&str>,
) -> anyhow::Result<Vec<Arc<Replica>>> {
    let all = arca_server::open_replicas(config, primary)?;
    if all.is_empty() {
        anyhow::bail!("the configuration names no replica ([[replica]] in the config file)");
    }
    let Some(name) = name else {
        return Ok(all);
    };
    let names: Vec<String> = all.iter().map(|r| r.name().to_string()).collect();
    let chosen: Vec<_> = all.into_iter().filter(|r| r.name() == name).collect();
    if chosen.is_empty() {
        anyhow::bail!(
            "no replica is called {name:?} (there are: {})",
            names.join(", ")
        );
    }
    Ok(chosen)
}

/// `arca replica sync`: every replica made equal to the primary, then its position in
/// the change log recorded as the change log's end when its copy began, so that a server
/// started afterwards copies only what changes from then on.
async fn sync(common: &CommonArgs, name: Option<&str>) -> anyhow::Result<ExitCode> {
    let mut config = load_config(common)?;
    config.validate()?;
    init_logging(&config.log);
    let (repo, catalog) = arca_server::open_repository(&config, true).await?;
    let primary = repo.ocfl().store().clone();
    let replicas = replicas(&config, primary.as_ref(), name)?;
    let objects = repo
        .catalog()
        .totals()
        .await
        .map(|t| t.objects)
        .unwrap_or(0);
    for replica in replicas {
        let at = *repo.catalog().last_change().borrow();
        repo.published().await;
        let bar = indicatif::ProgressBar::new(objects);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{prefix} {elapsed_precise} [{bar:40}] {pos}/{len} objects ({per_sec}, eta {eta})",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_prefix(replica.name().to_string());
        let started = std::time::Instant::now();
        let stats = {
            let (copy, primary, bar) = (replica.clone(), primary.clone(), bar.clone());
            tokio::task::spawn_blocking(move || {
                let stop = AtomicBool::new(false);
                copy.sync_root(primary.as_ref(), &stop, &|done| {
                    if done > bar.length().unwrap_or(0) {
                        bar.set_length(done);
                    }
                    bar.set_position(done);
                })
                .map_err(anyhow::Error::from)
            })
            .await
            .context("the copy failed")?
            .with_context(|| format!("cannot bring replica {} up to date", replica.name()))?
        };
        bar.finish_and_clear();
        repo.catalog()
            .set_consumer_position(&consumer_name(replica.name()), at)
            .await
            .context("cannot record the replica's position in the catalog")?;
        let secs = started.elapsed().as_secs_f64();
        println!(
            "replica {}: {} objects looked at, {} files ({:.1} MB) copied, {} removed, {} not copied (damaged in the primary: run arca fixity) in {secs:.1} s",
            replica.name(),
            stats.objects,
            stats.files,
            stats.bytes as f64 / 1e6,
            stats.removed,
            stats.skipped,
        );
    }
    repo.shutdown().await?;
    catalog.checkpoint()?;
    Ok(ExitCode::SUCCESS)
}

/// `arca replica verify`: each replica audited, its damage repaired from the primary.
async fn verify(common: &CommonArgs, name: Option<&str>) -> anyhow::Result<ExitCode> {
    let mut config = load_config(common)?;
    config.validate()?;
    init_logging(&config.log);
    let (repo, catalog) = arca_server::open_repository(&config, true).await?;
    let primary = repo.ocfl().store().clone();
    let replicas = replicas(&config, primary.as_ref(), name)?;
    let reports = Reports::open(&config.data.join("fixity").join("reports"))?;
    let mut damaged = 0;
    for replica in replicas {
        let settings = AuditSettings {
            threads: config.fixity.threads.max(1),
            max_bytes_per_second: None,
            objects: Vec::new(),
            repair: true,
        };
        let auditor =
            Auditor::new(replica.store().clone(), replica.name(), settings).with_replicas(vec![
                Arc::new(Replica::unchecked("primary", primary.clone())),
            ]);
        let checkpoint = Checkpoint::at(&config.data.join("fixity").join(format!(
            "checkpoint-replica-{}.json",
            file_safe(replica.name())
        )));
        let report = tokio::task::spawn_blocking(move || {
            auditor
                .run(&checkpoint, false, &AtomicBool::new(false))
                .map_err(anyhow::Error::from)
        })
        .await
        .context("the audit failed")?
        .with_context(|| format!("cannot audit replica {}", replica.name()))?;
        reports.save(&report)?;
        let unrepaired = report.unrepaired();
        damaged += unrepaired;
        println!(
            "replica {}: {} objects, {} files ({:.1} MB) checked; {} findings, {} repaired from the primary, {unrepaired} remain",
            replica.name(),
            report.objects,
            report.files,
            report.bytes as f64 / 1e6,
            report.findings.len(),
            report.repaired,
        );
        for finding in report.findings.iter().filter(|f| !f.repaired) {
            println!("  {}: {}", finding.object, finding.message);
        }
    }
    repo.shutdown().await?;
    catalog.checkpoint()?;
    Ok(if damaged == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `name` with every character but letters, digits, `-` and `_` replaced by `_`.
fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
