//! The audit of a whole OCFL root: every object, walked lazily in layout order, each
//! content file of each version (and of a mutable HEAD) read and hashed against its
//! manifest digest (and the `fixity` block's md5/sha1 where present), each inventory
//! against its sidecar; with a repository, the catalog's view of each object against
//! storage and every object the catalog knows found in storage. Findings are repaired from
//! the replicas when asked. Memory is bounded by the objects in flight, not by the root.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arca_model::FedoraId;
use arca_ocfl::ObjectStorage;
use arca_repository::Repository;
use parking_lot::Mutex;
use serde::Serialize;

use crate::checkpoint::{Checkpoint, CheckpointState};
use crate::rate::RateLimiter;
use crate::repair::{repair_in, RepairOutcome, Source};
use crate::replica::Replica;
use crate::report::{report_id, Finding, FindingKind, Report};
use crate::walk::Walker;
use crate::{catalog, object, Error, Result};

/// How an audit runs.
#[derive(Debug, Clone)]
pub struct AuditSettings {
    /// Objects checked at once.
    pub threads: usize,
    /// The most bytes read per second; `None`: as fast as the disk and the hash go.
    pub max_bytes_per_second: Option<u64>,
    /// Only objects whose id starts with one of these (`info:fedora/a`); empty: all.
    pub objects: Vec<String>,
    /// Repair what is found from the replicas (see [`crate::repair`]).
    pub repair: bool,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            threads: 1,
            max_bytes_per_second: None,
            objects: Vec::new(),
            repair: true,
        }
    }
}

/// Where a running audit stands (shared with whoever shows it).
#[derive(Debug, Default)]
pub struct AuditProgress {
    /// A run is going on.
    pub running: AtomicBool,
    /// Objects checked in this run (a resumed run counts from its checkpoint).
    pub objects: AtomicU64,
    /// Files read and hashed.
    pub files: AtomicU64,
    /// Bytes read and hashed.
    pub bytes: AtomicU64,
    /// Findings so far.
    pub findings: AtomicU64,
    /// Findings repaired so far.
    pub repaired: AtomicU64,
}

/// [`AuditProgress`] at one moment, as JSON.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProgressSnapshot {
    /// A run is going on.
    pub running: bool,
    /// Objects checked.
    pub objects: u64,
    /// Files read and hashed.
    pub files: u64,
    /// Bytes read and hashed.
    pub bytes: u64,
    /// Findings so far.
    pub findings: u64,
    /// Findings repaired so far.
    pub repaired: u64,
}

impl AuditProgress {
    /// The counters now.
    pub fn snapshot(&self) -> ProgressSnapshot {
        ProgressSnapshot {
            running: self.running.load(Ordering::Relaxed),
            objects: self.objects.load(Ordering::Relaxed),
            files: self.files.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            findings: self.findings.load(Ordering::Relaxed),
            repaired: self.repaired.load(Ordering::Relaxed),
        }
    }

    /// Sets the counters to those of `report` (a run starting, or resuming from it).
    fn start_from(&self, report: &Report) {
        self.objects.store(report.objects, Ordering::Relaxed);
        self.files.store(report.files, Ordering::Relaxed);
        self.bytes.store(report.bytes, Ordering::Relaxed);
        self.findings
            .store(report.findings.len() as u64, Ordering::Relaxed);
        self.repaired.store(report.repaired, Ordering::Relaxed);
    }
}

/// What the audit of one object found.
#[derive(Debug, Clone, Default)]
pub struct ObjectAudit {
    /// The object's id, when its inventory could be read.
    pub object_id: Option<String>,
    /// Files read and hashed.
    pub files: u64,
    /// Bytes read and hashed.
    pub bytes: u64,
    /// What is wrong.
    pub findings: Vec<Finding>,
}

/// Checks the object whose root is `prefix` in `store`: every inventory against its sidecar,
/// every version inventory against the root's, every manifest file's bytes against their
/// digests (reading at most as fast as `limiter` lets), files no manifest names.
pub fn audit_object(store: &dyn ObjectStorage, prefix: &str, limiter: &RateLimiter) -> ObjectAudit {
    match crate::object::check(store, prefix, limiter, &|_| true, &object::NEVER) {
        Ok(found) => found.unwrap_or_default(),
        Err(e) => ObjectAudit {
            object_id: None,
            files: 0,
            bytes: 0,
            findings: vec![Finding {
                object: prefix.to_string(),
                version: None,
                logical_path: None,
                content_path: None,
                kind: FindingKind::ContentUnreadable,
                expected: None,
                actual: None,
                repaired: false,
                message: format!("{prefix}: cannot be read: {e}"),
            }],
        },
    }
}

/// A called-back hook for each finding as it is made (events, logs, the damaged set).
pub type FindingHook = Arc<dyn Fn(&Finding) + Send + Sync>;

/// Audits one root.
pub struct Auditor {
    store: Arc<dyn ObjectStorage>,
    root: String,
    settings: AuditSettings,
    repository: Option<(Arc<Repository>, tokio::runtime::Handle)>,
    replicas: Vec<Arc<Replica>>,
    sources: Vec<(String, Arc<dyn ObjectStorage>)>,
    /// Where repairs stage files; `None`: the system's temporary directory (shared with
    /// others: never cleared).
    staging: Option<PathBuf>,
    on_finding: Option<FindingHook>,
    progress: Arc<AuditProgress>,
}

/// How often a running audit saves its checkpoint.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(2);
/// Catalog resources read at once in the pass looking for objects missing in storage.
const CATALOG_PAGE: usize = 500;
/// Objects remembered as checked in that pass (an object's resources are near each other
/// in id order; one found again later is only checked twice).
const RECENT_OBJECTS: usize = 4096;

impl Auditor {
    /// An audit of the root in `store`, named `root` in reports (`primary`, or a replica's
    /// name).
    pub fn new(store: Arc<dyn ObjectStorage>, root: &str, settings: AuditSettings) -> Self {
        Self {
            store,
            root: root.to_string(),
            settings,
            repository: None,
            replicas: Vec::new(),
            sources: Vec::new(),
            staging: None,
            on_finding: None,
            progress: Arc::new(AuditProgress::default()),
        }
    }

    /// Also compares the catalog of `repository` with storage, looks for the objects it
    /// knows, and holds each object's lock (and waits for its pending writes) before
    /// confirming a finding or repairing (`runtime` runs the repository's async calls from
    /// the audit's blocking threads).
    pub fn with_repository(
        mut self,
        repository: Arc<Repository>,
        runtime: tokio::runtime::Handle,
    ) -> Self {
        self.repository = Some((repository, runtime));
        self
    }

    /// Repairs findings from these copies (when the settings ask for repairs).
    pub fn with_replicas(mut self, replicas: Vec<Arc<Replica>>) -> Self {
        self.replicas = replicas;
        self
    }

    /// Repairs findings from these copies too, after the replicas: `("primary", store)`
    /// for the audit of a replica.
    pub fn with_sources(mut self, sources: Vec<(String, Arc<dyn ObjectStorage>)>) -> Self {
        self.sources = sources;
        self
    }

    /// Stages large files and whole objects being repaired in `dir` (default: the system's
    /// temporary directory); what a crash left there is removed when a run starts.
    pub fn with_staging(mut self, dir: &Path) -> Self {
        self.staging = Some(dir.to_path_buf());
        self
    }

    /// Calls `hook` for each finding, once it is confirmed (and repaired, if it was).
    pub fn on_finding(mut self, hook: FindingHook) -> Self {
        self.on_finding = Some(hook);
        self
    }

    /// Shares `progress` with whoever shows it (instead of a counter of its own).
    pub fn with_progress(mut self, progress: Arc<AuditProgress>) -> Self {
        self.progress = progress;
        self
    }

    /// The live counters of this auditor's runs.
    pub fn progress(&self) -> Arc<AuditProgress> {
        self.progress.clone()
    }

    /// Runs the audit on the calling thread (and `threads - 1` more), saving `checkpoint`
    /// as objects complete; with `resume`, continues the run the checkpoint holds (a
    /// missing or corrupt checkpoint starts over). Returns the report; [`crate::Error::Stopped`]
    /// when `stop` turned true (the checkpoint stays for a resume).
    pub fn run(&self, checkpoint: &Checkpoint, resume: bool, stop: &AtomicBool) -> Result<Report> {
        let mut state = match resume {
            true => checkpoint.load()?,
            false => None,
        }
        .unwrap_or_else(|| {
            let now = arca_model::now();
            CheckpointState {
                report: Report {
                    id: report_id(now),
                    root: self.root.clone(),
                    started: arca_model::format_instant(now),
                    ..Report::default()
                },
                ..CheckpointState::default()
            }
        });
        state.report.finished = None;
        state.report.complete = false;
        self.clear_staging();
        self.progress.start_from(&state.report);
        self.progress.running.store(true, Ordering::Relaxed);
        let result =
            self.walk(&mut state, checkpoint, stop)
                .and_then(|()| match &self.repository {
                    Some(repository) => self.catalog_pass(repository, &mut state, checkpoint, stop),
                    None => Ok(()),
                });
        self.progress.running.store(false, Ordering::Relaxed);
        if let Err(e) = result {
            state.report.finished = Some(arca_model::format_instant(arca_model::now()));
            checkpoint.save(&state)?;
            return Err(e);
        }
        let mut report = state.report;
        report.finished = Some(arca_model::format_instant(arca_model::now()));
        report.complete = true;
        checkpoint.clear()?;
        Ok(report)
    }

    /// Removes what repairs cut short left in the staging directory.
    fn clear_staging(&self) {
        let Some(Ok(entries)) = self.staging.as_ref().map(std::fs::read_dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.to_string_lossy().starts_with(".arca-repair-") {
                let path = entry.path();
                let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir_all(&path));
            }
        }
    }

    /// Whether the object `id` is one the settings ask for.
    fn wanted(&self, id: &str) -> bool {
        self.settings.objects.is_empty()
            || self.settings.objects.iter().any(|prefix| {
                id.strip_prefix(prefix.as_str()).is_some_and(|rest| {
                    rest.is_empty() || rest.starts_with('/') || prefix.ends_with('/')
                })
            })
    }

    /// The first pass: every object of the store, `threads` at once, in layout order.
    fn walk(
        &self,
        state: &mut CheckpointState,
        checkpoint: &Checkpoint,
        stop: &AtomicBool,
    ) -> Result<()> {
        if state.walked {
            return Ok(());
        }
        let limiter = RateLimiter::new(self.settings.max_bytes_per_second);
        let walker = Mutex::new(Walker::new(self.store.as_ref(), state.after.clone()));
        let shared = Mutex::new(Shared {
            queue: VecDeque::new(),
            state,
            saved: Instant::now(),
            error: None,
        });
        let failed = AtomicBool::new(false);
        let work = || loop {
            if stop.load(Ordering::Relaxed) || failed.load(Ordering::Relaxed) {
                return;
            }
            let prefix = {
                let mut walker = walker.lock();
                match walker.next_object() {
                    Ok(Some(prefix)) => {
                        shared.lock().queue.push_back((prefix.clone(), None));
                        prefix
                    }
                    Ok(None) => return,
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        shared.lock().error.get_or_insert(e);
                        return;
                    }
                }
            };
            let outcome = self.check_object(&prefix, &limiter, stop);
            let mut shared = shared.lock();
            match outcome {
                Ok(done) => {
                    if let Some(entry) = shared.queue.iter_mut().find(|(p, _)| *p == prefix) {
                        entry.1 = Some(done);
                    }
                    shared.advance(&self.progress);
                    if shared.saved.elapsed() >= CHECKPOINT_EVERY {
                        shared.saved = Instant::now();
                        if let Err(e) = checkpoint.save(shared.state) {
                            failed.store(true, Ordering::Relaxed);
                            shared.error.get_or_insert(e);
                        }
                    }
                }
                Err(e) => {
                    failed.store(true, Ordering::Relaxed);
                    shared.error.get_or_insert(e);
                    return;
                }
            }
        };
        std::thread::scope(|scope| {
            for _ in 1..self.settings.threads.max(1) {
                scope.spawn(work);
            }
            work();
        });
        let shared = shared.into_inner();
        if let Some(e) = shared.error {
            return Err(e);
        }
        if stop.load(Ordering::Relaxed) {
            return Err(Error::Stopped);
        }
        shared.state.walked = true;
        checkpoint.save(shared.state)
    }

    /// One object checked, its findings confirmed, repaired and announced; `None` when the
    /// settings leave it out.
    fn check_object(
        &self,
        prefix: &str,
        limiter: &RateLimiter,
        stop: &AtomicBool,
    ) -> Result<Option<ObjectAudit>> {
        let wanted = |id: &str| self.wanted(id);
        let Some(mut found) = object::check(self.store.as_ref(), prefix, limiter, &wanted, stop)?
        else {
            return Ok(None);
        };
        if let (Some((repository, runtime)), Some(id)) = (&self.repository, &found.object_id) {
            if found.findings.is_empty() {
                found.findings =
                    catalog::compare(repository, runtime, self.store.as_ref(), prefix, id)?;
            }
        }
        if !found.findings.is_empty() {
            let id = found.object_id.clone();
            found.findings =
                self.settle_findings(prefix, id.as_deref(), found.findings, limiter, stop)?;
        }
        Ok(Some(found))
    }

    /// Confirms findings under the object's lock (a write or purge racing the audit is no
    /// damage), repairs them when asked and possible, and announces each.
    fn settle_findings(
        &self,
        prefix: &str,
        object_id: Option<&str>,
        findings: Vec<Finding>,
        limiter: &RateLimiter,
        stop: &AtomicBool,
    ) -> Result<Vec<Finding>> {
        let mut _lock = None;
        let mut findings = findings;
        if let (Some((repository, runtime)), Some(id)) = (&self.repository, object_id) {
            _lock = Some(runtime.block_on(async {
                let lock = repository
                    .catalog()
                    .lock_objects(&[id], &[])
                    .await
                    .map_err(arca_repository::Error::from)?;
                repository.settle(id).await?;
                Ok::<_, arca_repository::Error>(lock)
            })?);
            let again = object::check(self.store.as_ref(), prefix, limiter, &|_| true, stop)?
                .map(|found| found.findings)
                .unwrap_or_default();
            let mut again = match findings
                .iter()
                .any(|f| f.kind == FindingKind::CatalogMismatch)
            {
                true => {
                    let mut all = again;
                    all.extend(catalog::compare(
                        repository,
                        runtime,
                        self.store.as_ref(),
                        prefix,
                        id,
                    )?);
                    all
                }
                false => again,
            };
            again.retain(|f| {
                findings.iter().any(|o| {
                    o.kind == f.kind
                        && o.content_path == f.content_path
                        && o.logical_path == f.logical_path
                })
            });
            findings = again;
        }
        self.repair_and_announce(prefix, &mut findings)?;
        Ok(findings)
    }

    /// The copies repairs take files from.
    fn repair_sources(&self) -> Vec<(String, Arc<dyn ObjectStorage>)> {
        self.replicas
            .iter()
            .map(|r| (r.name().to_string(), r.store().clone()))
            .chain(self.sources.iter().cloned())
            .collect()
    }

    /// Repairs what can be (inventories first: content is checked against them), then
    /// logs and announces every finding.
    fn repair_and_announce(&self, prefix: &str, findings: &mut [Finding]) -> Result<()> {
        let sources = self.repair_sources();
        if self.settings.repair && !sources.is_empty() {
            let sources: Vec<Source<'_>> = sources
                .iter()
                .map(|(name, store)| Source {
                    name,
                    store: store.as_ref(),
                })
                .collect();
            let is_inventory = |f: &Finding| {
                matches!(
                    f.kind,
                    FindingKind::InventorySidecar
                        | FindingKind::InventoryMissing
                        | FindingKind::InventoryInvalid
                        | FindingKind::InventoryDiverges
                )
            };
            // Inventories first (content is checked against them), a file's fixity
            // digests after the file.
            findings.sort_by_key(|f| match f.kind {
                _ if is_inventory(f) => 0,
                FindingKind::FixityDigest => 2,
                _ => 1,
            });
            let staging = self.staging.clone().unwrap_or_else(std::env::temp_dir);
            let mut replaced: Vec<(String, String)> = Vec::new();
            for finding in findings.iter_mut() {
                if finding.kind == FindingKind::FixityDigest {
                    if let Some(from) = self.fixity_repaired(prefix, finding, &replaced) {
                        finding.repaired = true;
                        finding
                            .message
                            .push_str(&format!("; repaired from {from} with the file"));
                        continue;
                    }
                }
                let outcome = repair_in(self.store.as_ref(), prefix, finding, &sources, &staging);
                match outcome {
                    Ok(RepairOutcome::Repaired { from }) => {
                        finding.repaired = true;
                        finding.message.push_str(&format!("; repaired from {from}"));
                        if let Some(path) = &finding.content_path {
                            replaced.push((path.clone(), from));
                        }
                    }
                    Ok(RepairOutcome::NoGoodCopy(why) | RepairOutcome::NotRepairable(why)) => {
                        finding.message.push_str(&format!("; not repaired: {why}"));
                    }
                    Err(e @ Error::Store(_)) if is_outage(&e) => return Err(e),
                    Err(e) => finding.message.push_str(&format!("; repair failed: {e}")),
                }
            }
        }
        for finding in findings.iter() {
            tracing::warn!(
                root = %self.root,
                object = %finding.object,
                kind = ?finding.kind,
                repaired = finding.repaired,
                "{}",
                finding.message
            );
            if let Some(hook) = &self.on_finding {
                hook(finding);
            }
        }
        Ok(())
    }

    /// Whether the file a fixity finding is about was replaced by this batch's repairs and
    /// now has the digest the fixity block records: the copy it came from.
    fn fixity_repaired(
        &self,
        prefix: &str,
        finding: &Finding,
        replaced: &[(String, String)],
    ) -> Option<String> {
        let path = finding.content_path.as_deref()?;
        let (_, from) = replaced.iter().find(|(p, _)| p == path)?;
        let (name, want) = finding.expected.as_deref()?.split_once(':')?;
        let algorithm = arca_model::DigestAlgorithm::from_ocfl_name(name)?;
        let key = format!("{prefix}/{path}");
        let unlimited = RateLimiter::new(None);
        let (digests, _) = object::hash_key(
            self.store.as_ref(),
            &key,
            &[algorithm],
            &unlimited,
            &object::NEVER,
        )
        .ok()?;
        digests[0].eq_ignore_ascii_case(want).then(|| from.clone())
    }

    /// The second pass (with a repository): every object the catalog knows, looked for in
    /// storage.
    fn catalog_pass(
        &self,
        (repository, runtime): &(Arc<Repository>, tokio::runtime::Handle),
        state: &mut CheckpointState,
        checkpoint: &Checkpoint,
        stop: &AtomicBool,
    ) -> Result<()> {
        let catalog = repository.catalog();
        let mut after = state
            .catalog_after
            .as_deref()
            .map(FedoraId::from_internal)
            .transpose()
            .map_err(arca_repository::Error::from)?;
        let mut recent: VecDeque<String> = VecDeque::new();
        let mut recent_set: HashSet<String> = HashSet::new();
        let mut saved = Instant::now();
        loop {
            if stop.load(Ordering::Relaxed) {
                return Err(Error::Stopped);
            }
            let page = runtime
                .block_on(catalog.live_after(after.as_ref(), CATALOG_PAGE))
                .map_err(arca_repository::Error::from)?;
            let Some(last) = page.last() else {
                break;
            };
            let last = last.id.clone();
            for record in page {
                let id = record.ocfl_id;
                if !self.wanted(&id) || recent_set.contains(&id) {
                    continue;
                }
                if recent.len() == RECENT_OBJECTS {
                    if let Some(old) = recent.pop_front() {
                        recent_set.remove(&old);
                    }
                }
                recent.push_back(id.clone());
                recent_set.insert(id.clone());
                let prefix = repository.ocfl().object_key(&id);
                if self
                    .store
                    .metadata(&format!("{prefix}/inventory.json"))?
                    .is_some()
                {
                    continue;
                }
                let mut findings = self.missing_object(repository, runtime, &id, &prefix)?;
                self.repair_and_announce(&prefix, &mut findings)?;
                if !findings.is_empty() {
                    state.report.repaired += findings.iter().filter(|f| f.repaired).count() as u64;
                    self.progress
                        .findings
                        .fetch_add(findings.len() as u64, Ordering::Relaxed);
                    self.progress.repaired.fetch_add(
                        findings.iter().filter(|f| f.repaired).count() as u64,
                        Ordering::Relaxed,
                    );
                    state.report.findings.extend(findings);
                }
            }
            state.catalog_after = Some(last.to_string());
            after = Some(last);
            if saved.elapsed() >= CHECKPOINT_EVERY {
                saved = Instant::now();
                checkpoint.save(state)?;
            }
        }
        Ok(())
    }

    /// Confirms, under its lock, that the object `id` the catalog knows is missing from
    /// storage (its repair holds the lock too).
    fn missing_object(
        &self,
        repository: &Repository,
        runtime: &tokio::runtime::Handle,
        id: &str,
        prefix: &str,
    ) -> Result<Vec<Finding>> {
        let _lock = runtime.block_on(async {
            let lock = repository
                .catalog()
                .lock_objects(&[id], &[])
                .await
                .map_err(arca_repository::Error::from)?;
            repository.settle(id).await?;
            Ok::<_, arca_repository::Error>(lock)
        })?;
        let key = format!("{prefix}/inventory.json");
        if self.store.metadata(&key)?.is_some() {
            return Ok(Vec::new());
        }
        let records = runtime
            .block_on(repository.catalog().in_object(id))
            .map_err(arca_repository::Error::from)?;
        if records.iter().all(|r| r.is_deleted()) {
            // Purged meanwhile (or only tombstones left, which need no storage to answer).
            return Ok(Vec::new());
        }
        Ok(vec![Finding {
            object: id.to_string(),
            version: None,
            logical_path: None,
            content_path: None,
            kind: FindingKind::ObjectMissing,
            expected: Some(prefix.to_string()),
            actual: None,
            repaired: false,
            message: format!("{id}: the catalog knows it, but storage has no object at {prefix}"),
        }])
    }
}

/// Whether an error is an outage of a store (the run stops and resumes later) rather than
/// a failure of one repair.
fn is_outage(e: &Error) -> bool {
    matches!(e, Error::Store(s) if s.is_unavailable())
}

/// The state the worker threads of one walk share.
struct Shared<'s> {
    /// The objects handed out, in walk order, with their result once done.
    queue: VecDeque<(String, Option<Option<ObjectAudit>>)>,
    /// The checkpoint's state: the report of the objects up to `after`.
    state: &'s mut CheckpointState,
    saved: Instant,
    error: Option<Error>,
}

impl Shared<'_> {
    /// Moves the objects done at the front of the queue into the report, so that the
    /// checkpoint's position has every object before it counted, and only those.
    fn advance(&mut self, progress: &AuditProgress) {
        while self.queue.front().is_some_and(|(_, done)| done.is_some()) {
            let (prefix, done) = self.queue.pop_front().expect("a front");
            if let Some(found) = done.expect("done") {
                let report = &mut self.state.report;
                report.objects += 1;
                report.files += found.files;
                report.bytes += found.bytes;
                let repaired = found.findings.iter().filter(|f| f.repaired).count() as u64;
                report.repaired += repaired;
                progress.objects.fetch_add(1, Ordering::Relaxed);
                progress.files.fetch_add(found.files, Ordering::Relaxed);
                progress.bytes.fetch_add(found.bytes, Ordering::Relaxed);
                progress
                    .findings
                    .fetch_add(found.findings.len() as u64, Ordering::Relaxed);
                progress.repaired.fetch_add(repaired, Ordering::Relaxed);
                report.findings.extend(found.findings);
            }
            self.state.after = Some(prefix);
        }
    }
}
