//! `arca`: a repository server for digital preservation that speaks the Fedora API and
//! stores OCFL in Fedora 6's layout.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use arca_config::Config;
use clap::{Args, Parser, Subcommand};

mod bag;
mod fixity;
mod import;
mod replica;
mod transfer;

#[derive(Parser)]
#[command(
    name = "arca",
    version,
    about = "A Fedora-compatible repository server for digital preservation"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the Fedora API (LDP REST) over an OCFL root with embedded defaults.
    Serve(ServeArgs),
    /// Recreate the catalog from the OCFL root alone (in parallel, resumable).
    Rebuild(RebuildArgs),
    /// Rebuild the search index from the catalog and the stored content (offline; a running
    /// server rebuilds with `POST /rest/fcr:search/reindex`).
    Reindex(ReindexArgs),
    /// Import a storage root written by `arca export` or Fedora 6 (`arca import DIR`), or
    /// objects from Fedora 3 (`arca import fedora3`).
    Import(Box<ImportArgs>),
    /// Write a resource and everything below it, with all their versions, as a new OCFL
    /// storage root in Fedora 6's layout (offline; every digest verified).
    Export(transfer::ExportArgs),
    /// Audit the OCFL root: every stored file checked against its inventory's digests, the
    /// catalog against storage, damage repaired from the replicas (offline; exit status 0:
    /// intact or repaired, 1: damage remains, 2: the audit could not run).
    Fixity(fixity::FixityArgs),
    /// Work on the replicas of the OCFL root (`[[replica]]` in the config file).
    #[command(subcommand)]
    Replica(replica::ReplicaCommand),
    /// Reproduce the Fedora sizing studies against arca or any Fedora server.
    Bench(Box<arca_bench::BenchArgs>),
    /// Extract one PDF's text to stdout under resource limits (run by the search indexer).
    #[command(hide = true)]
    ExtractText {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

/// `arca import`: a storage root, or a subcommand naming another kind of source.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct ImportArgs {
    #[command(subcommand)]
    from: Option<import::ImportCommand>,
    #[command(flatten)]
    root: transfer::ImportRootArgs,
}

#[derive(Args)]
struct ReindexArgs {
    #[command(flatten)]
    common: CommonArgs,
}

/// Settings shared by commands that open a data directory.
#[derive(Args)]
pub struct CommonArgs {
    /// TOML config file (also ARCA_CONFIG). Values from it are overridden by ARCA_*
    /// variables, which are overridden by flags.
    #[arg(long, env = "ARCA_CONFIG")]
    pub config: Option<PathBuf>,
    /// Data directory holding ocfl-root/, staging/ and catalog.sqlite [default: ./arca-data]
    #[arg(long)]
    pub data: Option<PathBuf>,
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Address to listen on [default: 127.0.0.1:8080]
    #[arg(long)]
    listen: Option<String>,
    /// A second address answering GET /metrics to anyone who reaches it (also
    /// ARCA_METRICS_LISTEN); bind it where only the monitoring network can
    #[arg(long)]
    metrics_listen: Option<String>,
    /// Path prefix of the Fedora API [default: /rest]
    #[arg(long)]
    base_path: Option<String>,
    /// File of URL prefixes external content may come from, one per line (Fedora's
    /// format); without it external content is refused
    #[arg(long)]
    external_content_allowed: Option<PathBuf>,
}

#[derive(Args)]
struct RebuildArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Continue an interrupted rebuild instead of starting over.
    #[arg(long)]
    resume: bool,
}

pub(crate) fn load_config(common: &CommonArgs) -> anyhow::Result<Config> {
    let mut config = Config::load(common.config.as_deref())?;
    if let Some(d) = &common.data {
        config.data = d.clone();
    }
    Ok(config)
}

pub(crate) fn init_logging(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter));
    // A log that cannot be written (its disk is full) must not take the server down:
    // without this, tracing reports the failure with `eprintln!`, which panics the thread
    // that logged — the journal's, the checkpointer's — and leaves every write waiting.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .log_internal_errors(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// mimalloc instead of glibc's allocator: a query's hits and a write's documents are many
/// small allocations, which cost glibc's `malloc`/`free` a sixth to a quarter of the
/// server's CPU (BENCHMARKS, "Showing hits").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::ExtractText { args } = cli.command {
        // A child of the indexer: no runtime, no logging, just the text or a reason.
        return ExitCode::from(arca_search::extract::run_child(args).clamp(0, 255) as u8);
    }
    // This program is arca whatever its file is called: its own `extract-text` reads PDFs.
    if let Ok(exe) = std::env::current_exe() {
        arca_server::set_arca_executable(exe);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Serve(args) => serve(args).await.map(|_| ExitCode::SUCCESS),
            Command::Rebuild(args) => rebuild(args).await.map(|_| ExitCode::SUCCESS),
            Command::Reindex(args) => reindex(args).await.map(|_| ExitCode::SUCCESS),
            Command::Import(args) => match *args {
                ImportArgs {
                    from: Some(command),
                    ..
                } => import::run(command).await,
                ImportArgs { from: None, root } => Ok(transfer::import(root).await),
            },
            Command::Export(args) => Ok(transfer::export(args).await),
            Command::Fixity(args) => Ok(fixity::run(args).await),
            Command::Replica(command) => Ok(replica::run(command).await),
            Command::Bench(args) => arca_bench::run(*args).await,
            Command::ExtractText { .. } => unreachable!("handled before the runtime starts"),
        }
    });
    // Work still running on blocking threads (a parse near its time limit) must not hold
    // the process after the server has stopped.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("arca: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let mut config = load_config(&args.common)?;
    if let Some(l) = args.listen {
        config.listen = l;
    }
    if let Some(m) = args.metrics_listen {
        config.metrics_listen = Some(m);
    }
    if let Some(b) = args.base_path {
        config.base_path = b;
    }
    if let Some(f) = args.external_content_allowed {
        config.external_content_allowed = Some(f);
    }
    config.validate()?;
    init_logging(&config.log);
    let listener = tokio::net::TcpListener::bind(&config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    arca_server::run(config, listener, shutdown_signal()).await
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}

async fn reindex(args: ReindexArgs) -> anyhow::Result<()> {
    let config = load_config(&args.common)?;
    init_logging(&config.log);
    let (repo, catalog) = arca_server::open_repository(&config, true).await?;
    let indexer = arca_search::Indexer::open(
        repo.clone(),
        arca_server::search_settings(&config, arca_server::external_allow_list(&config)?)?,
    )
    .context("cannot open the search index")?;
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} resources ({per_sec}, eta {eta})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let started = std::time::Instant::now();
    let progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    indexer.rebuild_with(&progress).await?;
    bar.finish();
    let status = indexer.status();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "rebuilt the search index {}: {} documents in {secs:.1} s ({:.0} resources/s); text extracted {}, failed {}, from cache {}",
        config.search_dir().display(),
        status.documents,
        status.reindex.as_ref().map_or(0, |r| r.done) as f64 / secs.max(1e-9),
        status.extraction.extracted,
        status.extraction.failed,
        status.extraction.cached,
    );
    drop(indexer);
    repo.shutdown().await?;
    catalog.checkpoint()?;
    Ok(())
}

async fn rebuild(args: RebuildArgs) -> anyhow::Result<()> {
    let config = load_config(&args.common)?;
    init_logging(&config.log);
    let (repo, _catalog) = arca_server::open_repository(&config, false).await?;
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} objects ({per_sec}, eta {eta})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let stats = repo.rebuild(args.resume, &progress).await?;
    bar.finish();
    println!(
        "rebuilt the catalog from {}: {} objects, {} resources, {} failed",
        arca_server::root_description(&config),
        stats.objects,
        stats.resources,
        stats.failed
    );
    if stats.failed > 0 {
        anyhow::bail!(
            "{} objects could not be indexed; see the log above",
            stats.failed
        );
    }
    Ok(())
}
