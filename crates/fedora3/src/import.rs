//! `arca import fedora3`: Fedora 3 objects into a repository, in parallel, each object
//! whole or not at all, resumable, with a report of what arrived.
//!
//! Objects are read and mapped on a pool of threads in chunks; each object is written
//! complete (every version) into the staging area ([`arca_ocfl::OcflRoot::build_object`]),
//! and a chunk is then adopted by the repository in one step ([`Repository::adopt`]: one
//! file-system sync, one rename per object, one catalog transaction). While a chunk is
//! adopted the next one is built. Memory holds one chunk of objects, whatever the size of
//! the source.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use arca_repository::Repository;
use rayon::prelude::*;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::mapping::{imported_fingerprint, map_object, object_id, DatastreamReport, MapOptions};
use crate::source::ObjectEntry;

/// How an import runs.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The user recorded as creator of every resource.
    pub user: String,
    /// Worker threads reading and writing objects.
    pub threads: usize,
    /// Objects per adopted chunk.
    pub chunk: usize,
    /// Go on after an object fails (it is reported); otherwise stop after the chunk.
    pub continue_on_error: bool,
    /// Skip objects already imported from the same source; without it they fail.
    pub resume: bool,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            user: "fedoraAdmin".into(),
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            chunk: 64,
            continue_on_error: false,
            resume: false,
        }
    }
}

/// The catalog meta key set once anything was imported (the Fedora 3 facade turns itself
/// on when it is there).
pub const IMPORTED_META: &str = "fedora3.imported";

/// What happened to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Written whole.
    Imported,
    /// Already imported from the same source (`--resume`).
    Skipped,
    /// Not imported (nothing of it was written); see the reason.
    Failed,
}

/// One object of the report.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectReport {
    /// The PID (when the FOXML could be read that far).
    pub pid: Option<String>,
    /// The FOXML file.
    pub source: PathBuf,
    /// What happened.
    pub outcome: Outcome,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// OCFL versions written.
    pub versions: usize,
    /// Bytes of datastream content written.
    pub bytes: u64,
    /// Per datastream: versions, bytes, checksums.
    pub datastreams: Vec<DatastreamReport>,
    /// What Fedora 3 had that arca does not carry (disseminators, XACML policies).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_carried: Vec<String>,
}

impl ObjectReport {
    /// The report of an object not (yet) imported, read from `source`.
    fn new(source: PathBuf) -> Self {
        Self {
            pid: None,
            source,
            outcome: Outcome::Failed,
            reason: None,
            versions: 0,
            bytes: 0,
            datastreams: Vec::new(),
            not_carried: Vec::new(),
        }
    }
}

/// Totals of a run.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Totals {
    /// Objects imported.
    pub imported: u64,
    /// Objects skipped (already there).
    pub skipped: u64,
    /// Objects failed.
    pub failed: u64,
    /// Datastreams imported.
    pub datastreams: u64,
    /// Datastream versions imported.
    pub datastream_versions: u64,
    /// Content bytes imported.
    pub bytes: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// The outcome of a run. Every object's report went to the `Report` sink as it was
/// done; only failures are kept here (memory stays flat whatever the source's size).
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    /// Totals.
    pub totals: Totals,
    /// Whether the run stopped early (an object failed without `continue_on_error`).
    pub stopped_early: bool,
    /// The objects that failed, in source order.
    pub failures: Vec<ObjectReport>,
}

/// Receives every object's report as soon as the object is done.
pub trait Report: Send {
    /// One object.
    fn object(&mut self, report: &ObjectReport) -> std::io::Result<()>;
}

/// A [`Report`] that keeps nothing.
pub struct NoReport;

impl Report for NoReport {
    fn object(&mut self, _: &ObjectReport) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes the report as one JSON document, `{"objects":[…],"totals":{…},…}`, streamed: an
/// object is written when it is done.
pub struct JsonReport {
    out: std::io::BufWriter<std::fs::File>,
    first: bool,
}

impl JsonReport {
    /// Creates `path` and starts the document.
    pub fn create(path: &std::path::Path) -> std::io::Result<Self> {
        use std::io::Write;
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        out.write_all(b"{\"objects\":[\n")?;
        Ok(Self { out, first: true })
    }

    /// Ends the document with the run's totals and flushes it to disk.
    pub fn finish(mut self, report: &ImportReport) -> std::io::Result<()> {
        use std::io::Write;
        write!(
            self.out,
            "\n],\"totals\":{},\"stopped_early\":{}}}\n",
            serde_json::to_string(&report.totals)?,
            report.stopped_early
        )?;
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    }
}

impl Report for JsonReport {
    fn object(&mut self, report: &ObjectReport) -> std::io::Result<()> {
        use std::io::Write;
        if !std::mem::take(&mut self.first) {
            self.out.write_all(b",\n")?;
        }
        serde_json::to_writer(&mut self.out, report)?;
        Ok(())
    }
}

/// Told about progress after every chunk.
pub trait Progress: Sync {
    /// `done` of `total` objects handled so far, with the running totals.
    fn update(&self, done: u64, total: u64, totals: &Totals);
}

impl<F: Fn(u64, u64, &Totals) + Sync> Progress for F {
    fn update(&self, done: u64, total: u64, totals: &Totals) {
        self(done, total, totals)
    }
}

/// An object read, mapped and built, waiting to be adopted.
enum Prepared {
    Built(Box<arca_ocfl::BuiltObject>, ObjectReport),
    Done(ObjectReport),
}

/// Imports `objects` into `repo`.
pub async fn import(
    repo: Arc<Repository>,
    objects: Vec<ObjectEntry>,
    options: &ImportOptions,
    progress: &dyn Progress,
    sink: &mut dyn Report,
) -> anyhow::Result<ImportReport> {
    let started = Instant::now();
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(options.threads.max(1))
            .thread_name(|i| format!("f3-import-{i}"))
            .build()?,
    );
    let total = objects.len() as u64;
    let mut report = ImportReport {
        totals: Totals::default(),
        stopped_early: false,
        failures: Vec::new(),
    };
    let mut done = 0u64;
    let size = options.chunk.max(1);
    let mut entries = objects.into_iter();
    let mut chunks = std::iter::from_fn(move || {
        let chunk: Vec<ObjectEntry> = entries.by_ref().take(size).collect();
        (!chunk.is_empty()).then_some(chunk)
    });
    let build = |chunk: Vec<ObjectEntry>| {
        let (repo, pool, options) = (repo.clone(), pool.clone(), options.clone());
        tokio::task::spawn_blocking(move || {
            pool.install(|| {
                chunk
                    .par_iter()
                    .map(|entry| prepare(&repo, entry, &options))
                    .collect::<Vec<Prepared>>()
            })
        })
    };
    let mut next = chunks.next().map(build);
    if total > 0 {
        repo.catalog().set_meta(IMPORTED_META, "true").await?;
    }
    while let Some(pending) = next.take() {
        let prepared = pending.await?;
        next = chunks.next().map(build);
        let mut built = Vec::new();
        let mut reports = Vec::new();
        for p in prepared {
            match p {
                Prepared::Built(object, r) => {
                    built.push(*object);
                    reports.push((Some(built.len() - 1), r));
                }
                Prepared::Done(r) => reports.push((None, r)),
            }
        }
        let adopted = repo.adopt(built, &options.user).await?;
        for (slot, mut r) in reports {
            if let Some(Err(e)) = slot.map(|i| &adopted[i]) {
                r.outcome = Outcome::Failed;
                r.reason = Some(failure_reason(e));
            }
            count(&mut report.totals, &r);
            sink.object(&r)?;
            done += 1;
            if r.outcome == Outcome::Failed {
                report.failures.push(r);
            }
        }
        report.totals.seconds = started.elapsed().as_secs_f64();
        progress.update(done, total, &report.totals);
        if report.totals.failed > 0 && !options.continue_on_error {
            report.stopped_early = done < total;
            if let Some(pending) = next.take() {
                // Built objects of the next chunk are dropped, removing their files.
                drop(pending.await?);
            }
            break;
        }
    }
    report.totals.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

fn count(t: &mut Totals, r: &ObjectReport) {
    match r.outcome {
        Outcome::Imported => {
            t.imported += 1;
            t.datastreams += r.datastreams.len() as u64;
            t.datastream_versions += r.datastreams.iter().map(|d| d.versions as u64).sum::<u64>();
            t.bytes += r.bytes;
        }
        Outcome::Skipped => t.skipped += 1,
        Outcome::Failed => t.failed += 1,
    }
}

/// Reads, maps and builds one object of a source (on a worker thread).
fn prepare(repo: &Repository, entry: &ObjectEntry, options: &ImportOptions) -> Prepared {
    let resolve = |r: &str| entry.resolver.resolve(r).ok();
    match std::fs::read(&entry.foxml) {
        Ok(bytes) => prepare_document(
            repo,
            &bytes,
            entry.foxml.clone(),
            Some(&entry.pid),
            &resolve,
            options,
        ),
        Err(e) => {
            let mut report = ObjectReport::new(entry.foxml.clone());
            report.reason = Some(format!("cannot read the FOXML: {e}"));
            Prepared::Done(report)
        }
    }
}

/// Maps and builds one FOXML document; `source` names it in the report, `expected_pid` is
/// the PID its store's file name gives.
fn prepare_document(
    repo: &Repository,
    bytes: &[u8],
    source: PathBuf,
    expected_pid: Option<&str>,
    resolve: &dyn Fn(&str) -> Option<PathBuf>,
    options: &ImportOptions,
) -> Prepared {
    let mut report = ObjectReport::new(source);
    match build(repo, bytes, expected_pid, resolve, options, &mut report) {
        Ok(Some(built)) => {
            report.outcome = Outcome::Imported;
            Prepared::Built(Box::new(built), report)
        }
        Ok(None) => {
            report.outcome = Outcome::Skipped;
            Prepared::Done(report)
        }
        Err(e) => {
            report.reason = Some(e);
            Prepared::Done(report)
        }
    }
}

/// The built object, or `None` when `--resume` finds it imported from the same source.
fn build(
    repo: &Repository,
    bytes: &[u8],
    expected_pid: Option<&str>,
    resolve: &dyn Fn(&str) -> Option<PathBuf>,
    options: &ImportOptions,
    report: &mut ObjectReport,
) -> Result<Option<arca_ocfl::BuiltObject>, String> {
    let fingerprint = format!("sha256:{}", hex::encode(Sha256::digest(bytes)));
    let object = crate::foxml::parse(bytes).map_err(|e| e.to_string())?;
    report.pid = Some(object.pid.clone());
    if let Some(expected) = expected_pid.filter(|p| *p != object.pid) {
        return Err(format!(
            "the FOXML is of {} but the store names it {expected}",
            object.pid
        ));
    }
    report.not_carried = object.not_carried.clone();
    let ocfl = repo.ocfl();
    let ocfl_id = object_id(&object.pid);
    if options.resume {
        if let Some(existing) = ocfl.read_object(&ocfl_id).map_err(|e| e.to_string())? {
            let same = imported_fingerprint(&existing.inventory) == Some(fingerprint.as_str());
            return if same {
                Ok(None)
            } else {
                Err("already in the repository, not imported from this source".into())
            };
        }
    }
    let map_options = MapOptions {
        user: options.user.clone(),
        staging: repo.uploads_dir(),
        algorithm: ocfl.digest_algorithm(),
        fingerprint,
    };
    let mapped = map_object(&object, resolve, &map_options).map_err(|e| e.to_string())?;
    report.datastreams = mapped.datastreams;
    report.versions = mapped.versions.len();
    report.bytes = report.datastreams.iter().map(|d| d.bytes).sum();
    let built = ocfl
        .build_object(&mapped.ocfl_id, mapped.versions)
        .map_err(|e| format!("cannot write the object: {e}"))?;
    Ok(Some(built))
}

/// Imports one object given as a self-contained FOXML document (managed content inline,
/// as in an archive export) into `repo`, which may be serving: what `POST
/// /rest/fcr:import/fedora3` does.
pub async fn import_document(
    repo: Arc<Repository>,
    foxml: Vec<u8>,
    options: ImportOptions,
) -> anyhow::Result<ObjectReport> {
    let prepared = {
        let (repo, options) = (repo.clone(), options.clone());
        tokio::task::spawn_blocking(move || {
            let nothing = |_: &str| None;
            prepare_document(
                &repo,
                &foxml,
                PathBuf::from("request body"),
                None,
                &nothing,
                &options,
            )
        })
        .await?
    };
    let (built, mut report) = match prepared {
        Prepared::Built(built, report) => (built, report),
        Prepared::Done(report) => return Ok(report),
    };
    repo.catalog().set_meta(IMPORTED_META, "true").await?;
    if let Some(Err(e)) = repo.adopt(vec![*built], &options.user).await?.pop() {
        report.outcome = Outcome::Failed;
        report.reason = Some(failure_reason(&e));
    }
    Ok(report)
}

/// What a failed adoption tells the report.
fn failure_reason(e: &arca_repository::Error) -> String {
    match e {
        arca_repository::Error::AlreadyExists(_) => {
            "already in the repository (use --resume to skip objects imported before)".to_string()
        }
        other => other.to_string(),
    }
}
