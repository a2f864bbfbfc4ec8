//! `arca import fedora3`: Fedora 3 objects into arca's OCFL root, with a progress bar, a
//! report, and `--verify`.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use arca_fedora3::import::{ImportOptions, ImportReport, JsonReport, NoReport, Report, Totals};
use arca_fedora3::source::ObjectEntry;
use clap::{Args, Subcommand};

use crate::{init_logging, load_config, CommonArgs};

mod remote;

/// What to import from.
#[derive(Subcommand)]
pub enum ImportCommand {
    /// Fedora 3: FOXML files (ingest, archive or migrate exports), directories of them, and
    /// whole object stores (akubra-fs or legacy-fs, found by scanning).
    Fedora3(Fedora3Args),
}

/// `arca import fedora3`.
#[derive(Args)]
pub struct Fedora3Args {
    #[command(flatten)]
    common: CommonArgs,
    /// FOXML files, directories of FOXML, or Fedora 3 object stores (the directory holding
    /// objectStore/ and datastreamStore/, or objects/ and datastreams/).
    #[arg(required = true)]
    sources: Vec<PathBuf>,
    /// Write the report (JSON: per PID what was imported, every checksum compared, every
    /// failure with its reason) to this file.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Go on after an object fails (it is reported and nothing of it is written).
    #[arg(long)]
    continue_on_error: bool,
    /// Skip objects already imported from the same source.
    #[arg(long)]
    resume: bool,
    /// Do not import: re-read the imported root against the sources and report every
    /// difference.
    #[arg(long)]
    verify: bool,
    /// Worker threads [default: the number of CPUs].
    #[arg(long)]
    threads: Option<usize>,
    /// Objects per adopted chunk (one file-system sync and one catalog transaction each).
    #[arg(long, default_value_t = 64)]
    chunk: usize,
    /// Import into the running arca whose Fedora API is at this URL (e.g.
    /// `http://127.0.0.1:8080/rest`) instead of a data directory: each object is sent whole,
    /// managed content inline, to `POST fcr:import/fedora3` (an administrator's request).
    #[arg(long)]
    url: Option<String>,
    /// `USER:PASSWORD` of an administrator of the server given by `--url`.
    #[arg(long, env = "ARCA_IMPORT_AUTH", hide_env_values = true)]
    auth: Option<String>,
    /// The user recorded as creator of the imported resources.
    #[arg(long, default_value = "fedoraAdmin")]
    user: String,
}

/// Runs an import command.
pub async fn run(command: ImportCommand) -> anyhow::Result<std::process::ExitCode> {
    let ImportCommand::Fedora3(args) = command;
    let config = load_config(&args.common)?;
    init_logging(&config.log);
    let objects = scan(&args.sources)?;
    if let Some(url) = &args.url {
        anyhow::ensure!(
            !args.verify,
            "--verify reads a data directory; it cannot run with --url"
        );
        return remote::run(url, objects, &args).await;
    }
    let (repo, catalog) = arca_server::open_repository(&config, true).await?;
    let threads = args
        .threads
        .unwrap_or_else(|| ImportOptions::default().threads);
    let code = if args.verify {
        verify(repo.clone(), objects, &args, threads).await?
    } else {
        let options = ImportOptions {
            user: args.user.clone(),
            threads,
            continue_on_error: args.continue_on_error,
            resume: args.resume,
            chunk: args.chunk,
        };
        let mut json = match &args.report {
            Some(path) => Some(
                JsonReport::create(path)
                    .with_context(|| format!("cannot write the report {}", path.display()))?,
            ),
            None => None,
        };
        let sink: &mut dyn Report = match json.as_mut() {
            Some(j) => j,
            None => &mut NoReport,
        };
        let report = import(repo.clone(), objects, &options, sink).await?;
        if let Some(j) = json {
            j.finish(&report).context("cannot write the report")?;
        }
        print_summary(&report);
        if report.totals.failed > 0 {
            std::process::ExitCode::FAILURE
        } else {
            std::process::ExitCode::SUCCESS
        }
    };
    repo.shutdown().await?;
    catalog.checkpoint()?;
    Ok(code)
}

/// Every object of the sources, with how its managed content is found.
fn scan(sources: &[PathBuf]) -> anyhow::Result<Vec<ObjectEntry>> {
    let found = arca_fedora3::source::scan(sources).context("cannot read the sources")?;
    for d in &found.duplicates {
        eprintln!(
            "warning: {} is in {} and in {}; importing the first",
            d.pid,
            d.kept.display(),
            d.ignored.display()
        );
    }
    for (path, reason) in &found.skipped {
        eprintln!("warning: skipping {}: {reason}", path.display());
    }
    Ok(found.objects)
}

async fn import(
    repo: Arc<arca_repository::Repository>,
    objects: Vec<ObjectEntry>,
    options: &ImportOptions,
    sink: &mut dyn Report,
) -> anyhow::Result<ImportReport> {
    let bar = indicatif::ProgressBar::new(objects.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} objects ({per_sec}, eta {eta}) {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let progress = |done: u64, _total: u64, t: &Totals| {
        bar.set_position(done);
        bar.set_message(format!(
            "{} datastreams, {:.1} MB, {} errors",
            t.datastreams,
            t.bytes as f64 / 1e6,
            t.failed
        ));
    };
    let report = arca_fedora3::import::import(repo, objects, options, &progress, sink).await?;
    bar.finish();
    Ok(report)
}

fn print_summary(report: &ImportReport) {
    let t = &report.totals;
    println!(
        "imported {} objects ({} datastreams, {} datastream versions, {:.1} MB) in {:.1} s: {:.0} objects/s, {:.1} MB/s; {} skipped, {} failed{}",
        t.imported,
        t.datastreams,
        t.datastream_versions,
        t.bytes as f64 / 1e6,
        t.seconds,
        t.imported as f64 / t.seconds.max(1e-9),
        t.bytes as f64 / 1e6 / t.seconds.max(1e-9),
        t.skipped,
        t.failed,
        if report.stopped_early {
            " (stopped at the first failure; --continue-on-error goes on)"
        } else {
            ""
        }
    );
    for o in &report.failures {
        println!(
            "  FAILED {} ({}): {}",
            o.pid.as_deref().unwrap_or("?"),
            o.source.display(),
            o.reason.as_deref().unwrap_or("")
        );
    }
}

async fn verify(
    repo: Arc<arca_repository::Repository>,
    objects: Vec<ObjectEntry>,
    args: &Fedora3Args,
    threads: usize,
) -> anyhow::Result<std::process::ExitCode> {
    let results = arca_fedora3::verify::verify(repo, objects, args.user.clone(), threads).await?;
    if let Some(path) = &args.report {
        std::fs::write(path, serde_json::to_vec_pretty(&results)?)
            .with_context(|| format!("cannot write the report {}", path.display()))?;
    }
    let differing: Vec<_> = results
        .iter()
        .filter(|r| !r.differences.is_empty())
        .collect();
    println!(
        "verified {} objects: {} as the source says, {} with differences",
        results.len(),
        results.len() - differing.len(),
        differing.len()
    );
    for r in &differing {
        for d in &r.differences {
            println!(
                "  {} ({}): {d}",
                r.pid.as_deref().unwrap_or("?"),
                r.source.display()
            );
        }
    }
    Ok(if differing.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    })
}
