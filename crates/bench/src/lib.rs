//! `arca bench`: the Fedora sizing studies, reproducible by anyone, against arca or any Fedora
//! API server — with the physical limit (a plain program writing one file per object; the
//! same program writing arca's files for each object, [`layout`]; and one hashing what it
//! writes) measured in the same run, so that every figure carries its "% of raw".
//!
//! - [`BenchArgs`] is the command line (`arca bench …` and the standalone `arca-bench`).
//! - [`run`] resolves it into phases ([`args::Phase`]), optionally spawns a fresh arca
//!   ([`spawn`]), runs every phase ([`scenarios`], load loops in [`driver`], baselines in
//!   [`raw`]), samples the server from `/proc` ([`procfs`]) and writes `report.json`,
//!   `report.md` and `chart.svg` ([`report`], [`svg`]) — also after Ctrl-C.
//!
//! ```no_run
//! # async fn f() -> anyhow::Result<()> {
//! use clap::Parser;
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     bench: arca_bench::BenchArgs,
//! }
//! let cli = Cli::parse_from(["arca-bench", "ingest-small", "--spawn", "--quick", "--out", "/tmp/b"]);
//! let code = arca_bench::run(cli.bench).await?;
//! let report = arca_bench::report::Report::load("/tmp/b/report.json".as_ref())?;
//! println!("{} ({code:?})", report.summary);
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

pub mod args;
pub mod audit;
pub mod cleanup;
pub mod corpus;
pub mod driver;
pub mod fanout;
pub mod http;
pub mod layout;
pub mod lucene;
pub mod payload;
pub mod procfs;
pub mod progress;
pub mod raw;
pub mod recorder;
pub mod report;
pub mod scenarios;
pub mod search;
pub mod sizing;
pub mod spawn;
pub mod svg;
pub mod versions;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use anyhow::Context as _;
pub use args::{BenchArgs, Scenario};

use crate::args::{Phase, Work};
use crate::driver::Ctx;
use crate::http::Target;
use crate::payload::Payload;
use crate::report::{Report, TargetInfo};
use crate::spawn::{find_arca_bin, Interrupt, SpawnedServer};

/// The base URL used when neither `--url` nor `--spawn` is given (arca's and Fedora's default).
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080/rest/";
/// User (and password) of the quick-start admin, used when no `--user` is given.
pub(crate) const QUICK_START_USER: &str = "fedoraAdmin";

/// Exit status when any transaction failed or a scenario was aborted.
pub const EXIT_ERRORS: u8 = 1;
/// Exit status after Ctrl-C (the partial report is written).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Runs `arca bench` (inside a tokio multi-thread runtime): every phase, the report printed as
/// Markdown on stdout and, with `--out`, saved as `report.json`, `report.md` and `chart.svg`.
///
/// Returns exit status 0 when everything succeeded, [`EXIT_ERRORS`] when a transaction failed
/// or a scenario gave up (the errors are in the report), [`EXIT_INTERRUPTED`] after Ctrl-C;
/// `Err` only for bad arguments or a server that could not be started.
pub async fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    args.validate()?;
    let phases = args.phases();
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    }
    let (interrupt, signals) = Interrupt::install();
    let result = if args.scenarios == [Scenario::Audit] {
        audit::run(&args, interrupt).await
    } else if args.scenarios == [Scenario::Sizing] {
        sizing::run(&args, interrupt).await
    } else {
        run_with(&args, &phases, interrupt).await
    };
    signals.abort();
    result
}

fn needs_server(phases: &[Phase]) -> bool {
    phases.iter().any(|p| {
        matches!(
            p.work,
            Work::Ingest { .. }
                | Work::Access { .. }
                | Work::BurnIn
                | Work::FanIn(_)
                | Work::Versions
                | Work::Search
        )
    })
}

/// The PDF directory a spawned arca must accept as external content: the corpus's, when a
/// search phase sends its PDFs as proxied links.
fn external_content_dir(phases: &[Phase]) -> Option<PathBuf> {
    phases
        .iter()
        .filter_map(|p| p.search.as_ref())
        .find(|s| s.pdf_mode == args::PdfMode::Proxy)
        .and_then(|s| std::fs::canonicalize(s.corpus.join("pdf")).ok())
}

async fn run_with(
    args: &BenchArgs,
    phases: &[Phase],
    interrupt: Interrupt,
) -> anyhow::Result<ExitCode> {
    let started_at = now();
    let trash_parents: Vec<PathBuf> = [
        args.data_dir.clone(),
        args.data_dir
            .as_deref()
            .and_then(Path::parent)
            .map(Path::to_path_buf),
        Some(std::env::temp_dir()),
    ]
    .into_iter()
    .flatten()
    .collect();
    tokio::task::spawn_blocking(move || cleanup::clear_trash(&trash_parents))
        .await
        .context("clearing earlier runs' files")?;
    let mut server = None;
    if args.spawn && needs_server(phases) {
        let bin = find_arca_bin(args.arca_bin.as_deref())?;
        eprintln!("==> starting {} serve", bin.display());
        let s = SpawnedServer::start(
            &bin,
            args.data_dir.as_deref(),
            args.out.as_deref(),
            external_content_dir(phases).as_deref(),
            &interrupt,
        )
        .await?;
        eprintln!("    arca (pid {}) answers at {}", s.pid, s.base);
        server = Some(s);
    }
    let leftovers = raw::Leftovers::default();
    let outcome = measure(
        args,
        phases,
        &interrupt,
        server.as_ref(),
        started_at,
        leftovers.clone(),
    )
    .await;
    // The report is out. What the run wrote (the server's data, the raw rows' files) is set
    // aside at once and deleted by a background process; the next run clears what is left
    // before it measures.
    let mut written = leftovers.take();
    if let Some(mut s) = server {
        eprintln!("==> stopping arca (pid {})", s.pid);
        written.extend(s.stop().await);
    }
    if !written.is_empty() {
        let (moved, unmovable) = cleanup::set_aside(written);
        match cleanup::remove_in_background(&moved) {
            Ok(()) if !moved.is_empty() => eprintln!(
                "==> the run's files are being deleted in the background (nice, idle I/O): {}; \
                 the next arca bench run removes what is left before it measures",
                moved
                    .iter()
                    .map(|t| t.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Ok(()) => {}
            Err(e) => {
                eprintln!("arca bench: no background deletion ({e}); deleting now");
                let _ = tokio::task::spawn_blocking(move || {
                    cleanup::remove_trees(moved, "files");
                })
                .await;
            }
        }
        if !unmovable.is_empty() {
            let _ = tokio::task::spawn_blocking(move || {
                cleanup::remove_trees(unmovable, "files");
            })
            .await;
        }
    }
    outcome
}

async fn measure(
    args: &BenchArgs,
    phases: &[Phase],
    interrupt: &Interrupt,
    server: Option<&SpawnedServer>,
    started_at: String,
    leftovers: raw::Leftovers,
) -> anyhow::Result<ExitCode> {
    let needs_server = needs_server(phases);
    let (url, pid, data_dir) = match server {
        Some(s) => (Some(s.base.clone()), Some(s.pid), Some(s.data.clone())),
        None => (
            needs_server.then(|| args.url.clone().unwrap_or_else(|| DEFAULT_URL.into())),
            args.pid,
            (!args.spawn).then(|| args.data_dir.clone()).flatten(),
        ),
    };
    let raw_parent = raw_parent(args, server);
    if args.user.is_none() && args.password.is_some() {
        anyhow::bail!("--password needs --user");
    }
    let max_clients = phases.iter().map(|p| p.clients).max().unwrap_or(1);
    let target = match &url {
        Some(u) => Some(Arc::new(Target::new(
            u,
            // Without --user: the quick-start admin that arca (on loopback, with no users
            // configured) and a Fedora quick start both have.
            Some(args.user.as_deref().unwrap_or(QUICK_START_USER)),
            match &args.user {
                Some(_) => args.password.as_deref(),
                None => Some(QUICK_START_USER),
            },
            std::time::Duration::from_secs_f64(args.timeout),
            max_clients,
        )?)),
        None => None,
    };
    let mut info = TargetInfo {
        url: url.clone(),
        spawned: server.is_some(),
        pid,
        data_dir: data_dir.as_ref().map(|d| d.display().to_string()),
        ..Default::default()
    };
    let mut server_unreachable = false;
    if let Some(t) = &target {
        match t.probe().await {
            Ok((status, header)) => {
                info.probe = Some(status.to_string());
                info.server_header = header;
                if !(200..300).contains(&status) {
                    eprintln!("warning: GET {} answered {status}", t.base());
                }
            }
            Err(f) => {
                eprintln!("warning: {}", f.message);
                server_unreachable = f.code == recorder::Code::Connect;
                info.probe = Some(format!("{}: {}", f.code, f.message));
            }
        }
    }
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ u64::from(std::process::id()) << 32;
    let ctx = Ctx {
        target,
        payload: Payload::new(args.seed, nonce),
        next_object: Arc::new(AtomicU64::new(0)),
        interrupt: interrupt.clone(),
        bar: progress::bar_enabled(args.no_progress),
        server_pid: pid,
        data_dir: data_dir.clone(),
        raw_parent: raw_parent.clone(),
        seed: args.seed,
        server_unreachable,
        leftovers,
    };
    let machine = procfs::machine(Some(data_dir.as_deref().unwrap_or(&raw_parent)));
    // A search-only run has no objects of the ingest studies and no raw rows.
    let search_only = phases.iter().all(|p| p.work == Work::Search);
    let mut notes = vec![
        "An object is POST of a container plus PUT of one binary in it (object-only: the POST \
         alone); TPS and latencies count successful transactions; MB = 2^20 bytes."
            .to_string(),
        "% of raw = this row's objects/s (MB/s for objects of 1 MiB or more) ÷ the raw fsync row \
         with the same size and thread count, measured in this run (access rows: ÷ the raw read \
         row); % of raw-layout and % of raw-hash likewise ÷ those rows."
            .to_string(),
        "Raw rows: N OS threads each create, write, fsync (raw-fsync) or not (raw-nofsync) and \
         close one new file per object (raw-read: read such files back), in a fresh directory \
         on the data's file system, deleted in the background after the run (objects under \
         1 MiB) or right after the row; their CPU, RSS and I/O columns are the writing \
         program's own. Each raw mode runs the scenario's duration capped at 30 s (3 s with \
         --quick) unless --raw-duration is given; what earlier rows left dirty is synced \
         before each (not measured)."
            .to_string(),
    ];
    if search_only {
        notes.clear();
    }
    let baselines: Vec<_> = phases
        .iter()
        .flat_map(|p| &p.raw)
        .map(|r| r.key.baseline)
        .collect();
    if baselines
        .iter()
        .any(|b| matches!(b, args::Baseline::Layout { .. }))
    {
        notes.push(
            "raw-layout rows: per object exactly the directories and files arca creates in \
             Fedora's layout — the container's OCFL object and, unless object-only, the \
             binary's (a 0004 path from the SHA-256 of a UUID id; 0=ocfl_object_1.1, \
             v1/inventory.json and its sidecar with hard links as the root copies, the .fcrepo \
             headers, the RDF and binary content; 12 inodes per container, 14 per binary, the \
             sizes arca writes) — with arca's durability: no fsync per file (a binary over \
             1 MiB is written to staging/uploads, fsynced with its directory and renamed into \
             place, as arca does) but a syncfs of the file system every 5 s from another thread, \
             as arca's checkpoint, and one after the last object (not timed). Not included: \
             arca's journal record and its group fdatasync per write, the catalog (SQLite), \
             HTTP, digests and JSON (metadata files are filler of the right size)."
                .into(),
        );
    }
    if baselines.contains(&args::Baseline::Hash) {
        notes.push(format!(
            "raw-hash rows (objects of 1 MiB or more): one flat file per object, its {} \
             computed over every byte in the writing thread, fsynced — the floor for any OCFL \
             writer.",
            args.digest.name()
        ));
    }
    if pid.is_none() && needs_server {
        notes.push(
            "Server CPU, RSS and I/O are absent: give --pid (or use --spawn) to sample them."
                .into(),
        );
    }
    if server_unreachable {
        notes.push(
            "The server did not accept a connection before the run: the raw baselines of the \
             server scenarios were skipped."
                .into(),
        );
    }
    if server.is_some() {
        notes.push(format!(
            "The spawned server and the load generator share this machine's {} CPUs.",
            machine.cpus
        ));
    }
    let mut report = Report {
        tool: "arca-bench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        command: command_line(),
        started_at,
        finished_at: String::new(),
        machine,
        target: info,
        interrupted: false,
        errors: 0,
        summary: String::new(),
        scenarios: Vec::new(),
        notes,
    };
    let out = args.out.clone();
    let save = |r: &Report| {
        if let Some(dir) = &out {
            let mut r = r.clone();
            r.finished_at = now();
            r.interrupted = interrupt.is_set();
            r.refresh_summary();
            if let Err(e) = write_outputs(dir, &r) {
                eprintln!("warning: could not write the report: {e:#}");
            }
        }
    };
    let result = scenarios::run_phases(&ctx, phases, &mut report, save).await;
    if let Err(e) = &result {
        report
            .notes
            .push(format!("The run stopped on an error: {e:#}"));
    }
    report.finished_at = now();
    report.interrupted = interrupt.is_set();
    report.refresh_summary();
    if let Some(dir) = &args.out {
        write_outputs(dir, &report)?;
        eprintln!(
            "==> report written to {}/report.json, report.md and chart.svg",
            dir.display()
        );
    }
    println!("{}", report.to_markdown());
    result?;
    Ok(if report.interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if report.has_failures() {
        ExitCode::from(EXIT_ERRORS)
    } else {
        ExitCode::SUCCESS
    })
}

/// Where the raw baseline writes: beside the server's data on the same file system.
fn raw_parent(args: &BenchArgs, server: Option<&SpawnedServer>) -> PathBuf {
    if let Some(s) = server {
        return s.root.clone();
    }
    if args.spawn {
        return args.data_dir.clone().unwrap_or_else(std::env::temp_dir);
    }
    if let Some(d) = &args.data_dir {
        // Prefer the parent (no stray directory inside the server's storage root) when it is
        // on the same device and writable.
        use std::os::unix::fs::MetadataExt;
        if let (Some(parent), Ok(meta)) = (d.parent(), std::fs::metadata(d)) {
            let same = std::fs::metadata(parent).is_ok_and(|p| p.dev() == meta.dev());
            let writable = tempfile::tempdir_in(parent).is_ok();
            if same && writable && !parent.as_os_str().is_empty() {
                return parent.to_path_buf();
            }
        }
        return d.clone();
    }
    args.out.clone().unwrap_or_else(|| PathBuf::from("."))
}

/// Writes `bytes` to `dir/name` through a temporary file renamed over it, so that a reader
/// (or a run killed meanwhile) never sees half a report.
pub(crate) fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, dir.join(name))
        .with_context(|| format!("writing {}", dir.join(name).display()))
}

/// Writes `report.json`, `report.md` and `chart.svg` into `dir` (each atomically).
pub fn write_outputs(dir: &Path, report: &Report) -> anyhow::Result<()> {
    let write = |name: &str, bytes: &[u8]| write_atomically(dir, name, bytes);
    write("report.json", &serde_json::to_vec_pretty(report)?)?;
    write(
        "report.md",
        format!("# arca bench report\n\n{}", report.to_markdown()).as_bytes(),
    )?;
    write("chart.svg", svg::chart(&report.scenarios).as_bytes())?;
    Ok(())
}

pub(crate) fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The command line as typed (quoted where needed), for the report.
pub(crate) fn command_line() -> String {
    redact(std::env::args())
}

/// Quotes arguments for a shell and hides the value of `--password`.
fn redact(args: impl Iterator<Item = String>) -> String {
    let mut hide_next = false;
    args.map(|a| {
        if std::mem::take(&mut hide_next) {
            return "'***'".to_string();
        }
        if a == "--password" {
            hide_next = true;
        }
        if a.starts_with("--password=") {
            return "--password='***'".to_string();
        }
        if !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c))
        {
            a
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    })
    .collect::<Vec<_>>()
    .join(" ")
}

#[cfg(test)]
mod mock;

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_are_hidden_from_the_report() {
        let args = [
            "arca",
            "bench",
            "--user",
            "u",
            "--password",
            "s3cret",
            "--password=x y",
        ];
        let line = super::redact(args.iter().map(|s| s.to_string()));
        assert_eq!(
            line,
            "arca bench --user u --password '***' --password='***'"
        );
    }
}
