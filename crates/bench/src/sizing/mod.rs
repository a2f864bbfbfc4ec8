//! `arca bench sizing`: one node grown to `--count` objects (default 1,000,000) of a mixed
//! population (issue 42), measured every `--step` objects, then what an operator does with
//! a root of that size.
//!
//! 1. Ingest, step by step: the step's objects/s, GET latency (p50/p99) of random objects of
//!    the first step ("old") and of this step ("new"), the server's RSS, the catalog's and
//!    the search index's bytes, and the file system's bytes and inodes per object.
//! 2. On the grown root: the page (HTML, Turtle) of the wide container, the TimeMap of a
//!    resource with 1,000 versions, start-up after a clean stop and after SIGKILL, and — with
//!    the server stopped — `arca rebuild` (cold and warm cache), `arca reindex` and
//!    `arca fixity`.
//!
//! The population ([`population`]) follows from each object's number, so nothing is kept per
//! object. The report (`sizing.json`, `sizing.md`, `sizing.svg` in `--out`) is written after
//! every step: a run stopped by Ctrl-C (or killed) leaves one that says where it stopped.

mod markdown;
pub mod population;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use hyper::Method;
use serde::{Deserialize, Serialize};

use crate::args::BenchArgs;
use crate::audit::read::{drop_caches, run_tool};
use crate::driver::{drive, mix, Ctx, Limits};
use crate::http::Target;
use crate::payload::{Payload, PayloadBody};
use crate::procfs;
use crate::recorder::{Code, TxOutcome};
use crate::spawn::{find_arca_bin, Interrupt, Launch, SpawnedServer};
pub use markdown::{chart, markdown};
use population::{Kind, Population, PER_PARENT, TOP, VERSIONED, WIDE};

/// Objects of the full study.
pub const FULL_COUNT: u64 = 1_000_000;
/// Objects per measured step of the full study.
pub const FULL_STEP: u64 = 50_000;
/// Versions of the TimeMap row's resource.
pub const TIMEMAP_VERSIONS: u64 = 1_000;
/// GETs per latency sample (old and new each).
const GETS_PER_SAMPLE: u64 = 2_000;
/// Clients of the latency samples: few, so that the latency is the server's, not a queue's.
const GET_CLIENTS: usize = 4;

/// The whole report of a sizing run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SizingReport {
    /// The command line.
    pub command: String,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// When the report was last written.
    pub finished_at: String,
    /// The machine.
    pub machine: procfs::Machine,
    /// The data directory grown.
    pub data_dir: String,
    /// The file system holding it.
    pub filesystem: Option<String>,
    /// Objects asked for.
    pub target_objects: u64,
    /// Objects per step.
    pub step: u64,
    /// Concurrent ingest clients.
    pub clients: usize,
    /// Where and why the run stopped before its end (`None`: it ran to the end).
    pub stopped: Option<String>,
    /// One row per ingest step.
    pub steps: Vec<StepRow>,
    /// The rows measured on the grown root.
    pub after: Vec<AfterRow>,
    /// How each kind of object was counted.
    pub notes: Vec<String>,
}

/// One ingest step.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StepRow {
    /// Objects created so far (all steps, successes only).
    pub objects: u64,
    /// Objects this step created.
    pub created: u64,
    /// Failed objects in this step.
    pub errors: u64,
    /// HTTP requests this step sent.
    pub requests: u64,
    /// Seconds the step's ingest took.
    pub seconds: f64,
    /// Objects per second of the step.
    pub objects_per_s: f64,
    /// GETs of random objects of the first step.
    pub get_old: Latency,
    /// GETs of random objects of this step.
    pub get_new: Latency,
    /// The server's resident memory after the step, MB.
    pub rss_mb: Option<f64>,
    /// The catalog's files (database and its WAL), bytes.
    pub catalog_bytes: u64,
    /// The search index's files, bytes.
    pub index_bytes: u64,
    /// Bytes the file system holding the data gained since the run began.
    pub fs_bytes: Option<u64>,
    /// Inodes it gained.
    pub fs_inodes: Option<u64>,
    /// `fs_bytes` ÷ objects.
    pub bytes_per_object: Option<f64>,
    /// `fs_inodes` ÷ objects.
    pub inodes_per_object: Option<f64>,
    /// The first error of the step, if any.
    pub first_error: Option<String>,
}

/// Latency of a sample of GETs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Latency {
    /// GETs answered 2xx.
    pub ok: u64,
    /// GETs that failed.
    pub errors: u64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Slowest, ms.
    pub max_ms: f64,
}

/// A measurement on the grown root.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct AfterRow {
    /// What was measured.
    pub name: String,
    /// Seconds it took (median of the repetitions where repeated).
    pub seconds: Option<f64>,
    /// A rate or size it came to, in `unit`.
    pub value: Option<f64>,
    /// The unit of `value`.
    pub unit: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// Peak resident memory of the program measured, MB.
    pub peak_rss_mb: Option<f64>,
    /// What else it said.
    pub note: String,
}

/// The settings of a run.
struct Plan {
    count: u64,
    step: u64,
    clients: usize,
    seed: u64,
    timeout: Duration,
    out: Option<PathBuf>,
    bar: bool,
}

impl Plan {
    fn from_args(args: &BenchArgs) -> Plan {
        let count = args
            .count
            .unwrap_or(if args.quick { 3_000 } else { FULL_COUNT });
        let step = args
            .step
            .unwrap_or(if args.quick { 1_000 } else { FULL_STEP })
            .clamp(1, count.max(1));
        Plan {
            count,
            step,
            clients: args.clients,
            seed: args.seed,
            timeout: Duration::from_secs_f64(args.timeout),
            out: args.out.clone(),
            bar: crate::progress::bar_enabled(args.no_progress),
        }
    }
}

/// Runs the sizing scenario of `args`: report on stdout and in `--out`; exit status 0, or
/// [`crate::EXIT_ERRORS`] when an object or a step failed, [`crate::EXIT_INTERRUPTED`]
/// after Ctrl-C.
pub async fn run(args: &BenchArgs, interrupt: Interrupt) -> anyhow::Result<ExitCode> {
    let plan = Plan::from_args(args);
    let bin = find_arca_bin(args.arca_bin.as_deref())?;
    let (data, temporary) = match &args.root_data {
        Some(d) => {
            anyhow::ensure!(
                !d.join("ocfl-root").exists(),
                "{} already holds a root: the sizing run grows a fresh one",
                d.display()
            );
            (d.clone(), None)
        }
        None => {
            let parent = args.data_dir.clone().unwrap_or_else(std::env::temp_dir);
            std::fs::create_dir_all(&parent)
                .with_context(|| format!("creating {}", parent.display()))?;
            let t = tempfile::Builder::new()
                .prefix("arca-bench-sizing-")
                .tempdir_in(&parent)
                .with_context(|| format!("creating a directory in {}", parent.display()))?;
            (t.path().join("data"), Some(t))
        }
    };
    std::fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
    if let Some(out) = &plan.out {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    }
    let mut report = SizingReport {
        command: crate::command_line(),
        started_at: crate::now(),
        machine: procfs::machine(Some(&data)),
        data_dir: data.display().to_string(),
        filesystem: procfs::filesystem_of(&data),
        target_objects: plan.count,
        step: plan.step,
        clients: plan.clients,
        notes: vec![format!(
            "An object is one numbered item of the population: a container, a 20 KiB binary, a \
             container with a second version and a memento, a direct container with one member, \
             a container with its ACL, a container at a deep path (ids near arca's {} \
             characters), or a child of the wide container (every tenth object until it holds \
             {}). Objects live in parent containers of {PER_PARENT}. GETs ask containers for \
             text/turtle and binaries for their content, {GET_CLIENTS} clients, {GETS_PER_SAMPLE} \
             per sample. File system figures are statvfs differences since the start: they are \
             arca's alone only when the data directory has a file system of its own.",
            population::MAX_ID_CHARS,
            Population::new(plan.seed, plan.count).wide_max,
        )],
        ..Default::default()
    };
    let result = grow_and_measure(&plan, &bin, &data, &interrupt, &mut report).await;
    if let Err(e) = &result {
        report
            .stopped
            .get_or_insert_with(|| format!("error: {e:#}"));
    }
    if interrupt.is_set() {
        report.stopped.get_or_insert_with(|| {
            format!(
                "interrupted (Ctrl-C) after {} objects",
                report.steps.last().map_or(0, |s| s.objects)
            )
        });
    }
    save(&plan, &mut report);
    println!("{}", markdown(&report));
    if let Some(t) = temporary {
        let path = t.keep();
        eprintln!("==> removing the grown root ({})", path.display());
        let _ = tokio::task::spawn_blocking(move || {
            crate::cleanup::remove_tree(&path, "the grown root");
        })
        .await;
    }
    result?;
    let failed = report.steps.iter().any(|s| s.errors > 0) || report.after.iter().any(|a| !a.ok);
    Ok(if interrupt.is_set() {
        ExitCode::from(crate::EXIT_INTERRUPTED)
    } else if failed || report.stopped.is_some() {
        ExitCode::from(crate::EXIT_ERRORS)
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes the report files (atomically) into `--out`, when given.
fn save(plan: &Plan, report: &mut SizingReport) {
    report.finished_at = crate::now();
    let Some(dir) = &plan.out else { return };
    let write = |name: &str, bytes: &[u8]| crate::write_atomically(dir, name, bytes);
    let written = serde_json::to_vec_pretty(report)
        .map_err(anyhow::Error::from)
        .and_then(|json| write("sizing.json", &json))
        .and_then(|()| write("sizing.md", markdown(report).as_bytes()))
        .and_then(|()| write("sizing.svg", chart(report).as_bytes()));
    if let Err(e) = written {
        eprintln!("warning: could not write the report: {e:#}");
    }
}

fn target_for(plan: &Plan, server: &SpawnedServer) -> anyhow::Result<Arc<Target>> {
    Ok(Arc::new(Target::new(
        &server.base,
        Some(crate::QUICK_START_USER),
        Some(crate::QUICK_START_USER),
        plan.timeout,
        plan.clients,
    )?))
}

fn ctx_for(
    plan: &Plan,
    server: &SpawnedServer,
    target: &Arc<Target>,
    interrupt: &Interrupt,
) -> Ctx {
    Ctx {
        target: Some(target.clone()),
        payload: Payload::new(plan.seed, 0),
        next_object: Arc::new(std::sync::atomic::AtomicU64::new(0)),
        interrupt: interrupt.clone(),
        bar: plan.bar,
        server_pid: Some(server.pid),
        data_dir: Some(server.data.clone()),
        raw_parent: server.root.clone(),
        seed: plan.seed,
        server_unreachable: false,
        leftovers: crate::raw::Leftovers::default(),
    }
}

async fn start(
    bin: &Path,
    data: &Path,
    log: &Path,
    interrupt: &Interrupt,
) -> anyhow::Result<SpawnedServer> {
    SpawnedServer::launch(
        bin,
        None,
        None,
        None,
        &Launch {
            data: Some(data.to_path_buf()),
            log: Some(log.to_path_buf()),
            ..Default::default()
        },
        interrupt,
    )
    .await
}

fn log_path(plan: &Plan, data: &Path, name: &str) -> PathBuf {
    plan.out
        .clone()
        .unwrap_or_else(|| data.parent().unwrap_or(data).to_path_buf())
        .join(name)
}

async fn grow_and_measure(
    plan: &Plan,
    bin: &Path,
    data: &Path,
    interrupt: &Interrupt,
    report: &mut SizingReport,
) -> anyhow::Result<()> {
    let server_log = log_path(plan, data, "sizing-server.log");
    let fs_start = procfs::fs_used(data);
    let mut server = start(bin, data, &server_log, interrupt).await?;
    let target = target_for(plan, &server)?;
    let ctx = ctx_for(plan, &server, &target, interrupt);
    let population = Population::new(plan.seed, plan.count);
    let mut codes = Vec::new();
    for path in [TOP, WIDE] {
        population::put_container(&target, path, path, &mut codes)
            .await
            .map_err(|e| anyhow::anyhow!("creating the run's containers: {e}"))?;
    }
    // The TimeMap row's history: a memento is named by its second (as in Fedora), so its
    // resource is changed once a second while the ingest runs.
    let history = tokio::spawn(build_history(target.clone()));
    let mut done = 0u64;
    let mut first = 0u64;
    while first < plan.count && !interrupt.is_set() {
        let end = (first + plan.step).min(plan.count);
        eprintln!("==> objects {first}..{end}");
        let grow = Grow {
            ctx: &ctx,
            target: &target,
            population: &population,
            clients: plan.clients,
            old_end: plan.step.min(plan.count),
            fs_start,
            data,
        };
        let row = grow.step(first, end, done).await;
        done = row.objects;
        report.steps.push(row);
        save(plan, report);
        first = end;
    }
    if interrupt.is_set() {
        server.stop().await;
        return Ok(());
    }
    history.abort();
    let history = history.await.unwrap_or_default();
    // On the grown root, with the server up.
    report.after.extend(pages(&target).await);
    save(plan, report);
    report.after.push(timemap(&target, history).await);
    save(plan, report);
    report
        .after
        .extend(startups(plan, bin, data, &mut server, interrupt).await?);
    save(plan, report);
    server.stop().await;
    // Offline.
    for (name, cold) in [("rebuild-cold", true), ("rebuild-warm", false)] {
        if interrupt.is_set() {
            return Ok(());
        }
        let row = offline(plan, bin, data, name, &["rebuild"], cold, interrupt).await?;
        report.after.push(row);
        save(plan, report);
    }
    for (name, words) in [
        ("reindex", &["reindex"][..]),
        ("fixity", &["fixity", "--no-repair"][..]),
    ] {
        if interrupt.is_set() {
            return Ok(());
        }
        let row = offline(plan, bin, data, name, words, false, interrupt).await?;
        report.after.push(row);
        save(plan, report);
    }
    Ok(())
}

/// What every ingest step shares.
struct Grow<'a> {
    ctx: &'a Ctx,
    target: &'a Arc<Target>,
    population: &'a Population,
    clients: usize,
    /// The "old" objects are `0..old_end` (the first step's).
    old_end: u64,
    fs_start: Option<(u64, u64)>,
    data: &'a Path,
}

impl Grow<'_> {
    /// Ingests objects `first..end` (their parents first) and measures what a step row holds.
    async fn step(&self, first: u64, end: u64, done_before: u64) -> StepRow {
        self.parents(first, end).await;
        let started = Instant::now();
        let driven = {
            let target = self.target.clone();
            let payload = self.ctx.payload.clone();
            let population = *self.population;
            drive(
                self.ctx,
                &format!("ingest {first}..{end}"),
                Limits {
                    clients: self.clients,
                    duration: None,
                    count: Some(end - first),
                },
                move |t| {
                    let target = target.clone();
                    let payload = payload.clone();
                    async move {
                        population::create(&target, &payload, &population, first + t).await
                    }
                },
            )
            .await
        };
        let seconds = started.elapsed().as_secs_f64();
        let summary = driven.rec.summary(driven.elapsed);
        let objects = done_before + summary.ok;
        let get_old = self.sample_gets(0, self.old_end.min(end)).await;
        let get_new = self.sample_gets(first, end).await;
        let (catalog_bytes, index_bytes) = data_files(self.data);
        let (fs_bytes, fs_inodes) = match (self.fs_start, procfs::fs_used(self.data)) {
            (Some((b0, i0)), Some((b, i))) => {
                (Some(b.saturating_sub(b0)), Some(i.saturating_sub(i0)))
            }
            _ => (None, None),
        };
        let per = |v: Option<u64>| v.filter(|_| objects > 0).map(|v| v as f64 / objects as f64);
        StepRow {
            objects,
            created: summary.ok,
            errors: summary.errors,
            requests: summary.requests,
            seconds,
            objects_per_s: summary.ok as f64 / seconds.max(1e-9),
            get_old,
            get_new,
            rss_mb: self
                .ctx
                .server_pid
                .and_then(procfs::memory_kb)
                .and_then(|(rss, _)| rss)
                .map(|kb| kb as f64 / 1024.0),
            catalog_bytes,
            index_bytes,
            fs_bytes,
            fs_inodes,
            bytes_per_object: per(fs_bytes),
            inodes_per_object: per(fs_inodes),
            first_error: summary
                .first_error
                .map(|e| format!("{} ({})", e.code, e.message)),
        }
    }

    /// Creates the parent containers of objects `first..end` (one that exists already, at a
    /// step boundary inside a parent, is left as it is).
    async fn parents(&self, first: u64, end: u64) {
        let first_parent = first / PER_PARENT;
        let parents = end.div_ceil(PER_PARENT) - first_parent;
        let target = self.target.clone();
        let population = *self.population;
        drive(
            self.ctx,
            "parents",
            Limits {
                clients: 4,
                duration: None,
                count: Some(parents),
            },
            move |t| {
                let target = target.clone();
                let path = population.parent((first_parent + t) * PER_PARENT);
                async move {
                    let url = format!("{}{path}", target.base());
                    if let Ok((200, _)) = target
                        .fetch(Method::HEAD, &url, &[], PayloadBody::empty())
                        .await
                    {
                        return TxOutcome::succeeded(Code::Status(200), 0);
                    }
                    let mut codes = Vec::new();
                    match population::put_container(&target, &path, &path, &mut codes).await {
                        Ok(()) => TxOutcome::succeeded(codes[0], 0),
                        Err(e) => TxOutcome::failed(codes.last().copied().unwrap_or(Code::Io), e),
                    }
                }
            },
        )
        .await;
    }

    /// GETs of random objects among `first..end`: containers as Turtle, binaries' content.
    async fn sample_gets(&self, first: u64, end: u64) -> Latency {
        if end <= first {
            return Latency::default();
        }
        let target = self.target.clone();
        let population = *self.population;
        let seed = self.ctx.seed ^ first;
        let driven = drive(
            self.ctx,
            &format!("GET {first}..{end}"),
            Limits {
                clients: GET_CLIENTS,
                duration: None,
                count: Some(GETS_PER_SAMPLE),
            },
            move |t| {
                let target = target.clone();
                let i = first + mix(seed ^ t) % (end - first);
                let url = format!("{}{}", target.base(), population.path(i));
                let accept = (population.kind(i) != Kind::Binary).then_some("text/turtle");
                async move {
                    match target.get(&url, accept).await {
                        Ok((code, n)) => TxOutcome::succeeded(code, n),
                        Err(f) => TxOutcome::failed(f.code, f.message),
                    }
                }
            },
        )
        .await;
        let s = driven.rec.summary(driven.elapsed);
        Latency {
            ok: s.ok,
            errors: s.errors,
            p50_ms: s.p50_ms,
            p99_ms: s.p99_ms,
            max_ms: s.max_ms,
        }
    }
}

/// Bytes of the catalog's files (`catalog.sqlite` and its WAL) and of the search index (every
/// other file of the data directory outside the OCFL root and staging).
fn data_files(data: &Path) -> (u64, u64) {
    let mut catalog = 0;
    let mut index = 0;
    for entry in std::fs::read_dir(data).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("catalog") {
            catalog += entry.metadata().map_or(0, |m| m.len());
        } else if name == "search" {
            index += procfs::disk_usage(&entry.path()).0;
        }
    }
    (catalog, index)
}

/// Median of `runs` GETs of `url` with `accept` (and the body size of the last).
async fn timed_gets(target: &Target, url: &str, accept: &str, runs: usize) -> AfterRow {
    let mut times = Vec::new();
    let mut bytes = 0;
    let mut failure = None;
    for _ in 0..runs {
        let t = Instant::now();
        match target.get(url, Some(accept)).await {
            Ok((_, n)) => {
                times.push(t.elapsed().as_secs_f64());
                bytes = n;
            }
            Err(f) => failure = Some(f.message),
        }
    }
    times.sort_by(f64::total_cmp);
    AfterRow {
        name: String::new(),
        seconds: times.get(times.len() / 2).copied(),
        value: Some(bytes as f64),
        unit: "bytes".into(),
        ok: failure.is_none(),
        peak_rss_mb: None,
        note: failure.unwrap_or_else(|| format!("median of {} GETs, {accept}", times.len())),
    }
}

/// The wide container's page: HTML (its first page of children), Turtle's first page and
/// the whole Turtle.
async fn pages(target: &Target) -> Vec<AfterRow> {
    let url = format!("{}{WIDE}", target.base());
    let mut rows = Vec::new();
    for (name, url, accept, runs) in [
        ("wide-page-html", url.clone(), "text/html", 9),
        (
            "wide-page-turtle-limit-100",
            format!("{url}?limit=100"),
            "text/turtle",
            9,
        ),
        ("wide-turtle-all-children", url.clone(), "text/turtle", 3),
    ] {
        let mut row = timed_gets(target, &url, accept, runs).await;
        row.name = name.into();
        rows.push(row);
    }
    rows
}

/// Changes [`VERSIONED`] once a second (each change a memento of its own second) until it
/// has [`TIMEMAP_VERSIONS`] of them or the task is aborted; returns the first failure.
async fn build_history(target: Arc<Target>) -> Option<String> {
    let mut codes = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(1_010));
    for v in 0..TIMEMAP_VERSIONS {
        tick.tick().await;
        let title = format!("version {v}");
        if let Err(e) = population::put_container(&target, VERSIONED, &title, &mut codes).await {
            return Some(e);
        }
    }
    None
}

/// GETs of the TimeMap of [`VERSIONED`], whose history [`build_history`] wrote; the row is
/// named by the mementos it lists.
async fn timemap(target: &Target, history_failure: Option<String>) -> AfterRow {
    let url = format!("{}{VERSIONED}/fcr:versions", target.base());
    let mementos = match target
        .fetch(
            Method::GET,
            &url,
            &[("accept", "application/link-format")],
            PayloadBody::empty(),
        )
        .await
    {
        Ok((200, body)) => String::from_utf8_lossy(&body)
            .matches("rel=\"memento\"")
            .count(),
        _ => 0,
    };
    let mut row = timed_gets(target, &url, "application/link-format", 9).await;
    row.name = format!("timemap-{mementos}-mementos");
    if let Some(e) = history_failure {
        row.ok = false;
        row.note = format!("building the history failed: {e}");
    }
    row
}

/// Start-up after a clean stop and after SIGKILL: seconds from the process start until it
/// answers. Leaves `server` running (the last one started).
async fn startups(
    plan: &Plan,
    bin: &Path,
    data: &Path,
    server: &mut SpawnedServer,
    interrupt: &Interrupt,
) -> anyhow::Result<Vec<AfterRow>> {
    let mut rows = Vec::new();
    let t = Instant::now();
    server.stop().await;
    rows.push(AfterRow {
        name: "clean-stop".into(),
        seconds: Some(t.elapsed().as_secs_f64()),
        unit: String::new(),
        ok: true,
        note: "SIGTERM until the process exited".into(),
        ..Default::default()
    });
    let t = Instant::now();
    let log = log_path(plan, data, "sizing-server-after-stop.log");
    *server = start(bin, data, &log, interrupt).await?;
    rows.push(AfterRow {
        name: "start-after-clean-stop".into(),
        seconds: Some(t.elapsed().as_secs_f64()),
        ok: true,
        note: "process start until GET of the root answers".into(),
        ..Default::default()
    });
    // Writes in flight when it is killed, as in a real crash.
    let target = target_for(plan, server)?;
    let writer = {
        let target = target.clone();
        tokio::spawn(async move {
            let mut codes = Vec::new();
            for n in 0.. {
                let path = format!("{TOP}/killed/k{n}");
                if population::put_container(&target, &path, "k", &mut codes)
                    .await
                    .is_err()
                {
                    return n;
                }
            }
            0
        })
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    if let Some(pid) = i32::try_from(server.pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
    let acknowledged = writer.await.unwrap_or(0);
    server.stop().await;
    let t = Instant::now();
    let log = log_path(plan, data, "sizing-server-after-kill.log");
    *server = start(bin, data, &log, interrupt).await?;
    let seconds = t.elapsed().as_secs_f64();
    // Every write acknowledged before the kill is there.
    let target = target_for(plan, server)?;
    let mut lost = 0;
    for n in 0..acknowledged {
        let url = format!("{}{TOP}/killed/k{n}", target.base());
        if target.get(&url, Some("text/turtle")).await.is_err() {
            lost += 1;
        }
    }
    rows.push(AfterRow {
        name: "start-after-sigkill".into(),
        seconds: Some(seconds),
        value: Some(lost as f64),
        unit: "acknowledged writes lost".into(),
        ok: lost == 0,
        note: format!(
            "killed with writes in flight ({acknowledged} acknowledged before); process start until GET of the root answers"
        ),
        ..Default::default()
    });
    Ok(rows)
}

/// `arca <words> --data DATA`, its time, memory and what it printed; the page cache dropped
/// before it when `cold` (needs root; otherwise said in the note).
async fn offline(
    plan: &Plan,
    bin: &Path,
    data: &Path,
    name: &str,
    words: &[&str],
    cold: bool,
    interrupt: &Interrupt,
) -> anyhow::Result<AfterRow> {
    let mut note = String::new();
    if cold {
        if let Err(e) = tokio::task::spawn_blocking(drop_caches).await? {
            note = format!("page cache NOT dropped ({e}); ");
        }
    }
    let log = log_path(plan, data, &format!("sizing-{name}.log"));
    let _ = std::fs::remove_file(&log);
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args(words).arg("--data").arg(data);
    if words[0] == "fixity" {
        cmd.arg("--report").arg(log.with_extension("json"));
    }
    eprintln!(
        "==> {name}: arca {} --data {}",
        words.join(" "),
        data.display()
    );
    let run = run_tool(cmd, &log, interrupt).await?;
    let said = summary_line(&log);
    let (value, unit) = rate_said(&said, run.seconds);
    note.push_str(&said);
    Ok(AfterRow {
        name: name.into(),
        seconds: Some(run.seconds),
        value,
        unit,
        ok: run.exit == Some(0),
        peak_rss_mb: run.peak_rss_mb,
        note,
    })
}

/// The summary a command printed (`rebuilt …`, `audited …`), else its last lines.
fn summary_line(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .rev()
        .find(|l| l.starts_with("rebuilt ") || l.starts_with("audited "))
        .map_or_else(|| crate::audit::read::tail(log, 2), str::to_string)
}

/// The rate a command's last line states or implies: `… N resources …` of `arca rebuild`,
/// `(N resources/s)` of `arca reindex`, or the objects of `arca fixity`'s summary, per second.
fn rate_said(line: &str, seconds: f64) -> (Option<f64>, String) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let number_before = |unit: &str| {
        words
            .windows(2)
            .find(|w| w[1].trim_end_matches([',', ')', ';']) == unit)
            .and_then(|w| {
                w[0].trim_start_matches('(')
                    .replace(',', "")
                    .parse::<f64>()
                    .ok()
            })
    };
    if let Some(rate) = number_before("resources/s") {
        return (Some(rate), "resources/s".into());
    }
    if let Some(n) = number_before("resources") {
        return (Some(n / seconds.max(1e-9)), "resources/s".into());
    }
    if let Some(n) = number_before("objects") {
        return (Some(n / seconds.max(1e-9)), "objects/s".into());
    }
    (None, String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_read_from_what_the_commands_print() {
        let (v, u) = rate_said(
            "rebuilt the catalog from /d: 10 objects, 30 resources, 0 failed",
            2.0,
        );
        assert_eq!((v, u.as_str()), (Some(15.0), "resources/s"));
        let (v, u) = rate_said(
            "rebuilt the search index /d: 30 documents in 1.0 s (2500 resources/s); text",
            9.0,
        );
        assert_eq!((v, u.as_str()), (Some(2500.0), "resources/s"));
        assert_eq!(rate_said("nothing here", 1.0).0, None);
    }
}
