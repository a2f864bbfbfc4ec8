//! `arca bench audit`: how fast the fixity audit reads the archive and what it costs the
//! service, against the physical limit measured in the same run (issue 41, point 5).
//!
//! 1. [`root`]: a data directory of `--objects` small objects (a container and a `--size`
//!    binary each) and `--large-gb` GiB of `--large-size` binaries, ingested through a
//!    spawned arca — or one reused as it is with `--root-data` — and the server stopped.
//! 2. [`read`]: the root's content files read and hashed (sha512) by the simplest program, a
//!    thread per core (the baseline); `arca fixity` on the same root without a rate limit;
//!    `rocfl validate` and ocfl-py's validator, both checking digests. Each cold (page cache
//!    dropped) and warm; seconds, MB/s and objects/s of the root, % of the baseline.
//! 3. [`serving`]: ingest and GETs against a server with the background audit on
//!    (`ARCA_FIXITY_SCHEDULE=1s`, its default rate limit) and off, in the order on, off, off,
//!    on; replica lag under ingest with a `[[replica]]`, sampled from `GET fcr:audit`, the time
//!    to drain, and `arca replica verify`.
//!
//! The audit and the replicas are reached only through their command lines and HTTP
//! (`arca fixity --data DIR --report FILE`, `arca replica verify`, `GET fcr:audit`), so the
//! scenario measures any arca that has them and says clearly which part is missing.

pub mod faults;
mod markdown;
pub mod read;
pub mod root;
pub mod serving;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
pub use markdown::markdown;
use serde::{Deserialize, Serialize};

use crate::args::{AuditStep, BenchArgs, CacheMode, Phase, Scenario, Work};
use crate::driver::Ctx;
use crate::http::Target;
use crate::payload::Payload;
use crate::report::{Kind, PhaseConfig, Report, ScenarioReport, Status, TargetInfo};
use crate::spawn::{find_arca_bin, Interrupt, SpawnedServer};

const MIB: f64 = (1u64 << 20) as f64;

/// Objects per ingest row of the serving and replica steps unless `--count` says otherwise:
/// a release arca ingests ~1,000 small objects a second, and the serving rows add theirs to
/// the audited root (about 130 KiB on disk each).
pub const SERVING_CAP: u64 = 10_000;

/// What a row of the audit scenario measured (the rows that are not ingest or GET rows).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum AuditDetail {
    /// One program reading (and hashing, or validating) the whole root once.
    Read(ReadRun),
    /// Serving with the background audit on against off.
    Serving(ServingRatio),
    /// A replica's lag under ingest.
    Lag(ReplicaLag),
    /// Faults injected, found and repaired.
    Faults(faults::FaultRun),
}

/// One program over the whole root.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadRun {
    /// `baseline`, `arca-fixity`, `rocfl`, `ocfl-py`, `arca-replica-verify`.
    pub tool: String,
    /// `cold` (page cache dropped before) or `warm`.
    pub cache: String,
    /// The command run (none for the baseline, which is this program).
    pub command: Option<String>,
    /// Wall-clock seconds, start to exit.
    pub seconds: f64,
    /// Objects in the root (as the baseline's walk counts them).
    pub root_objects: u64,
    /// Content files in the root.
    pub root_files: u64,
    /// Bytes of content files in the root.
    pub root_bytes: u64,
    /// The root's content MiB per second of this run.
    pub mb_per_s: f64,
    /// The root's objects per second of this run.
    pub objects_per_s: f64,
    /// The root's content files per second of this run.
    pub files_per_s: f64,
    /// 100 × the baseline's seconds ÷ this run's, same cache state (≥ 90 is the target for
    /// `arca fixity`).
    pub pct_of_baseline: Option<f64>,
    /// Objects, files and bytes the program says it checked (`arca fixity`'s report; the
    /// baseline's own counts).
    pub checked_objects: Option<u64>,
    /// Files it says it checked.
    pub checked_files: Option<u64>,
    /// Bytes it says it checked.
    pub checked_bytes: Option<u64>,
    /// Findings it reported (`arca fixity`).
    pub findings: Option<u64>,
    /// Whether it judged the root valid (validators: exit status 0).
    pub valid: Option<bool>,
    /// Its exit status.
    pub exit_code: Option<i32>,
    /// Its peak resident memory, MB (sampled from /proc).
    pub peak_rss_mb: Option<f64>,
    /// Its mean CPU use, percent of one core.
    pub mean_cpu_pct: Option<f64>,
    /// Where its output went.
    pub log: Option<String>,
}

/// Ingest or GET throughput with the background audit on and off.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServingRatio {
    /// `ingest` or `get`.
    pub workload: String,
    /// The rows compared, in the order they ran.
    pub rows: Vec<String>,
    /// Transactions per second of each row with the audit on.
    pub on_tps: Vec<f64>,
    /// Transactions per second of each row with the audit off.
    pub off_tps: Vec<f64>,
    /// 100 × mean(on) ÷ mean(off) (≥ 90 is the target).
    pub pct_of_off: Option<f64>,
    /// MB/s the background audit read during the "on" rows, from `GET fcr:audit` (None when
    /// the server does not say).
    pub audit_mb_per_s: Option<f64>,
}

/// A replica's lag behind the primary under sustained ingest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplicaLag {
    /// The replica's name.
    pub replica: String,
    /// Samples of `GET fcr:audit` during the ingest.
    pub samples: u64,
    /// The largest lag sampled (changes not copied yet).
    pub max_lag: Option<i64>,
    /// The median lag sampled.
    pub p50_lag: Option<i64>,
    /// Seconds from the end of the ingest until the lag was 0 (None: not within the wait).
    pub drain_s: Option<f64>,
    /// The ingest's objects per second.
    pub ingest_tps: f64,
    /// (seconds since the ingest started, lag), every sample.
    pub series: Vec<(f64, i64)>,
}

/// The audit scenario's settings, defaults applied.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Small objects in a built root.
    pub objects: u64,
    /// Bytes of each small object's binary.
    pub small_size: u64,
    /// Large binaries in a built root.
    pub large_objects: u64,
    /// Bytes of each.
    pub large_size: u64,
    /// HTTP clients of ingest and GET rows; threads of the baseline and the audit are the
    /// machine's cores.
    pub clients: usize,
    /// Seconds of each serving row and of the ingest under replication.
    pub duration: Duration,
    /// At most this many objects per ingest row of the serving and replica steps (`--count`,
    /// default [`SERVING_CAP`]): the serving rows add their objects to the audited root.
    pub count: Option<u64>,
    /// What runs.
    pub steps: Vec<AuditStep>,
    /// Cold, warm or both.
    pub cache: CacheMode,
    /// The data directory to reuse or build and keep.
    pub root_data: Option<PathBuf>,
    /// Where temporary data directories go.
    pub parent: PathBuf,
    /// rocfl, when found.
    pub rocfl: Option<PathBuf>,
    /// ocfl-py's validator, when found.
    pub ocfl_validate: Option<PathBuf>,
    /// Where logs and reports go (`--out`, else the temporary directory of the run).
    pub out: Option<PathBuf>,
    /// HTTP timeout.
    pub timeout: Duration,
    /// Payload seed.
    pub seed: u64,
    /// Progress bars.
    pub bar: bool,
    /// Threads of the baseline and of `arca fixity`.
    pub threads: usize,
}

impl Plan {
    /// The plan of `args` (defaults: 100,000 small objects of 20 KiB, 2 GiB of 256 MiB
    /// binaries, 60 s rows; with --quick 200 objects, 50 MiB of 8 MiB binaries, 3 s rows).
    pub fn from_args(args: &BenchArgs) -> Plan {
        let phase = args
            .phases()
            .into_iter()
            .find(|p| p.work == Work::Audit)
            .expect("an audit phase");
        let large_size = args
            .large_size
            .unwrap_or(if args.quick { 8 << 20 } else { 256 << 20 });
        let large_total = args.large_gb.unwrap_or(if args.quick { 0.05 } else { 2.0 });
        let large_bytes = (large_total * (1u64 << 30) as f64).round() as u64;
        Plan {
            objects: phase.objects,
            small_size: phase.size,
            large_objects: large_bytes.div_ceil(large_size),
            large_size,
            clients: phase.clients,
            duration: phase.duration.unwrap_or(Duration::from_secs(60)),
            count: Some(args.count.unwrap_or(SERVING_CAP)),
            steps: if args.audit_steps.is_empty() {
                AuditStep::ALL.to_vec()
            } else {
                args.audit_steps.clone()
            },
            cache: args.cache,
            root_data: args.root_data.clone(),
            parent: args.data_dir.clone().unwrap_or_else(std::env::temp_dir),
            rocfl: args
                .rocfl
                .clone()
                .or_else(|| find_program("rocfl", &[home().join(".cache/arca-rocfl/bin/rocfl")])),
            ocfl_validate: args.ocfl_validate.clone().or_else(|| {
                find_program(
                    "ocfl-validate.py",
                    &[home().join(".cache/arca-venv/bin/ocfl-validate.py")],
                )
            }),
            out: args.out.clone(),
            timeout: Duration::from_secs_f64(args.timeout),
            seed: args.seed,
            bar: crate::progress::bar_enabled(args.no_progress),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    /// Whether `step` runs.
    pub fn runs(&self, step: AuditStep) -> bool {
        self.steps.contains(&step)
    }

    /// The phase of an ingest or GET row named `name`.
    pub fn phase(&self, name: &str, work: Work) -> Phase {
        Phase {
            scenario: Scenario::Audit,
            name: name.to_string(),
            work,
            clients: self.clients,
            duration: Some(self.duration),
            count: self.count,
            size: self.small_size,
            objects: 0,
            interval: Duration::from_secs(1),
            raw: Vec::new(),
            search: None,
        }
    }

    /// A log file for `name` in the output directory (or the temporary directory).
    pub fn log(&self, name: &str) -> PathBuf {
        self.out
            .clone()
            .unwrap_or_else(std::env::temp_dir)
            .join(name)
    }
}

fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from)
}

/// `name` on PATH, else the first of `fallbacks` that exists.
fn find_program(name: &str, fallbacks: &[PathBuf]) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|c| c.is_file())
    });
    on_path.or_else(|| fallbacks.iter().find(|p| p.is_file()).cloned())
}

/// The context ingest and GET rows run in against `server`.
pub fn ctx_for(plan: &Plan, server: &SpawnedServer, interrupt: &Interrupt) -> anyhow::Result<Ctx> {
    let target = Target::new(
        &server.base,
        Some(crate::QUICK_START_USER),
        Some(crate::QUICK_START_USER),
        plan.timeout,
        plan.clients,
    )?;
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    Ok(Ctx {
        target: Some(Arc::new(target)),
        payload: Payload::new(plan.seed, nonce),
        next_object: Arc::new(AtomicU64::new(0)),
        interrupt: interrupt.clone(),
        bar: plan.bar,
        server_pid: Some(server.pid),
        data_dir: Some(server.data.clone()),
        raw_parent: server.root.clone(),
        seed: plan.seed,
        server_unreachable: false,
        leftovers: crate::raw::Leftovers::default(),
    })
}

/// A row of the audit's own kind.
pub fn audit_row(name: &str, detail: AuditDetail) -> ScenarioReport {
    let mut row = ScenarioReport::new(name, Scenario::Audit, Kind::Audit, PhaseConfig::default());
    row.audit = Some(detail);
    row
}

/// Adds `text` to a row's note.
pub fn add_note(row: &mut ScenarioReport, text: impl Into<String>) {
    let text = text.into();
    row.note = Some(match row.note.take() {
        Some(n) => format!("{n}; {text}"),
        None => text,
    });
}

/// Runs the audit scenario of `args` (which holds `audit` alone): report on stdout and in
/// `--out`, exit status as [`crate::run`]'s.
pub async fn run(args: &BenchArgs, interrupt: Interrupt) -> anyhow::Result<ExitCode> {
    let plan = Plan::from_args(args);
    let bin = find_arca_bin(args.arca_bin.as_deref())?;
    // The data directory: the one given (kept), or a fresh one deleted afterwards.
    let (data, temporary) = match &plan.root_data {
        Some(d) => (d.clone(), None),
        None => {
            std::fs::create_dir_all(&plan.parent)
                .with_context(|| format!("creating {}", plan.parent.display()))?;
            let t = tempfile::Builder::new()
                .prefix("arca-bench-audit-")
                .tempdir_in(&plan.parent)
                .with_context(|| {
                    format!(
                        "creating a temporary directory in {}",
                        plan.parent.display()
                    )
                })?;
            (t.path().join("data"), Some(t))
        }
    };
    let mut report = Report {
        tool: "arca-bench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        command: crate::command_line(),
        started_at: crate::now(),
        finished_at: String::new(),
        machine: crate::procfs::machine(Some(data.parent().unwrap_or(&plan.parent))),
        target: TargetInfo {
            spawned: true,
            data_dir: Some(data.display().to_string()),
            ..Default::default()
        },
        interrupted: false,
        errors: 0,
        summary: String::new(),
        scenarios: Vec::new(),
        notes: notes(&plan, &bin),
    };
    let out = plan.out.clone();
    let saving = interrupt.clone();
    let save = move |r: &Report| {
        if let Some(dir) = &out {
            let mut r = r.clone();
            r.finished_at = crate::now();
            r.interrupted = saving.is_set();
            r.refresh_summary();
            if let Err(e) = crate::write_outputs(dir, &r) {
                eprintln!("warning: could not write the report: {e:#}");
            }
        }
    };
    let result = steps(&plan, &bin, &data, &interrupt, &mut report, &save).await;
    if let Err(e) = &result {
        report
            .notes
            .push(format!("The run stopped on an error: {e:#}"));
    }
    if let Some(t) = temporary {
        let path = t.keep();
        eprintln!(
            "==> removing the root built for this run ({})",
            path.display()
        );
        let _ = tokio::task::spawn_blocking(move || {
            crate::cleanup::remove_tree(&path, "the audited root");
        })
        .await;
    }
    report.finished_at = crate::now();
    report.interrupted = interrupt.is_set();
    report.refresh_summary();
    if let Some(dir) = &plan.out {
        crate::write_outputs(dir, &report)?;
        eprintln!(
            "==> report written to {}/report.json, report.md and chart.svg",
            dir.display()
        );
    }
    println!("{}", report.to_markdown());
    result?;
    Ok(if report.interrupted {
        ExitCode::from(crate::EXIT_INTERRUPTED)
    } else if report.has_failures() {
        ExitCode::from(crate::EXIT_ERRORS)
    } else {
        ExitCode::SUCCESS
    })
}

async fn steps(
    plan: &Plan,
    bin: &Path,
    data: &Path,
    interrupt: &Interrupt,
    report: &mut Report,
    save: &impl Fn(&Report),
) -> anyhow::Result<()> {
    let mut emit = |row: ScenarioReport| {
        line(&row);
        report.scenarios.push(row);
        save(report);
    };
    let manifest = root::prepare(plan, bin, data, interrupt, &mut emit).await?;
    if interrupt.is_set() {
        return Ok(());
    }
    read::read_steps(plan, bin, data, interrupt, &mut emit).await?;
    if plan.runs(AuditStep::Serving) && !interrupt.is_set() {
        serving::serving(plan, bin, data, &manifest, interrupt, &mut emit).await?;
    }
    if plan.runs(AuditStep::Replica) && !interrupt.is_set() {
        serving::replica(plan, bin, interrupt, &mut emit).await?;
    }
    if plan.runs(AuditStep::Faults) && !interrupt.is_set() {
        faults::faults(plan, bin, interrupt, &mut emit).await?;
    }
    Ok(())
}

/// The one-line summary of a finished row on stderr.
fn line(row: &ScenarioReport) {
    let status = match row.status {
        Status::Completed => String::new(),
        s => format!(" [{s:?}]"),
    };
    match &row.audit {
        Some(AuditDetail::Read(r)) => eprintln!(
            "    {}{status}: {:.2} s, {:.1} MB/s, {:.0} objects/s{}",
            row.name,
            r.seconds,
            r.mb_per_s,
            r.objects_per_s,
            r.pct_of_baseline
                .map(|p| format!(", {p:.0} % of the baseline"))
                .unwrap_or_default()
        ),
        Some(AuditDetail::Serving(s)) => eprintln!(
            "    {}{status}: on {:?} / off {:?} per s: {}",
            row.name,
            s.on_tps,
            s.off_tps,
            s.pct_of_off
                .map_or("–".into(), |p| format!("{p:.0} % of off"))
        ),
        Some(AuditDetail::Lag(l)) => eprintln!(
            "    {}{status}: max lag {:?}, p50 {:?}, drained in {:?} s",
            row.name, l.max_lag, l.p50_lag, l.drain_s
        ),
        Some(AuditDetail::Faults(f)) => eprintln!(
            "    {}{status}: {} of {} faults found, repaired and restored; {} unexpected \
             findings; {:?} findings on the undamaged root",
            row.name,
            f.faults
                .iter()
                .filter(|x| x.found && x.repaired && x.restored)
                .count(),
            f.faults.len(),
            f.unexpected_findings,
            f.clean_findings
        ),
        None => eprintln!(
            "    {}{status}: {} ok, {} errors, {:.1}/s, {:.1} ms mean, {:.1} ms p99",
            row.name,
            row.summary.ok,
            row.errors_total(),
            row.summary.tps,
            row.summary.mean_ms,
            row.summary.p99_ms
        ),
    }
    if let Some(n) = &row.note {
        eprintln!("      {n}");
    }
}

fn notes(plan: &Plan, bin: &Path) -> Vec<String> {
    let mut notes = vec![
        format!(
            "arca: {}. Read rows: one program over the whole OCFL root; MB/s, objects/s and \
             files/s are the root's content bytes (MB = 2^20 bytes), objects and content files \
             divided by the row's seconds (start to exit), whatever the program itself counts; \
             % of baseline = 100 × the baseline's seconds ÷ the row's, same cache state.",
            bin.display()
        ),
        format!(
            "baseline: this program walks the root (objects are directories with a \
             0=ocfl_object file), lists the files below their `content` directories, and \
             reads each whole file with 1 MiB reads into sha512 on {} threads (one per core) \
             taking files from one shared list; the walk is in its seconds. It does not read \
             inventories or sidecars, which the audit also checks.",
            plan.threads
        ),
        format!(
            "arca fixity ran as `arca fixity --data DIR --report FILE`: its defaults are a \
             thread per CPU and no rate limit (ARCA_FIXITY_MAX_MB_PER_S=0 and \
             ARCA_FIXITY_THREADS={} are set as well); rocfl as `rocfl -S -r ROOT validate -l \
             error` (the whole root); ocfl-py 2 as `ocfl-validate.py -q OBJECT_DIR...`, {} \
             object directories per invocation, one invocation after the other (it refuses a \
             storage root in layout 0004, E071, which it does not implement). Both check every \
             digest by default: their opt-outs (rocfl's --no-fixity-check, ocfl-py's \
             --no-check-digests) are not given. Both run on one core, as they are.",
            plan.threads,
            read::OCFL_PY_CHUNK
        ),
        "cold rows: `sync` and `echo 3 > /proc/sys/vm/drop_caches` before the run; warm rows: \
         right after the same program's cold row (or, with --cache warm, after one unmeasured \
         baseline pass), the root in the page cache if it fits."
            .into(),
        "Serving rows: a server on the same root with the background audit on \
         (ARCA_FIXITY_SCHEDULE=1s: a new run starts as soon as one ends, at the default rate \
         limit, ARCA_FIXITY_MAX_MB_PER_S and _THREADS unset) or off, in the order on, off, \
         off, on, each after 2 s of settling; ingest rows add objects to the root, GET rows \
         read the small binaries of the built root in random order."
            .into(),
    ];
    if plan.rocfl.is_none() {
        notes.push(
            "rocfl not found (give --rocfl or ARCA_BENCH_ROCFL; install with `cargo install \
             rocfl --locked --no-default-features --root ~/.cache/arca-rocfl`)."
                .into(),
        );
    }
    if plan.ocfl_validate.is_none() {
        notes.push(
            "ocfl-py's ocfl-validate.py not found (give --ocfl-validate or OCFL_VALIDATE; \
             `pip install ocfl-py`)."
                .into(),
        );
    }
    notes
}

/// `bytes` over `seconds` in MiB/s (0 for no time).
pub fn mb_per_s(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 / MIB / seconds
    } else {
        0.0
    }
}
