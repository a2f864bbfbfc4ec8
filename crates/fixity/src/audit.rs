//! The audit of a whole OCFL root: every object, walked lazily in layout order, each
//! content file of each version (and of a mutable HEAD) read and hashed against its
//! manifest digest (and the `fixity` block's md5/sha1 where present), each inventory
//! against its sidecar; with a repository, the catalog's view of each object against
//! storage and every object the catalog knows found in storage. Findings are repaired from
//! the replicas when asked. Memory is bounded by the objects in flight, not by the root.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use arca_ocfl::ObjectStorage;
use arca_repository::Repository;
use serde::Serialize;

use crate::checkpoint::Checkpoint;
use crate::rate::RateLimiter;
use crate::replica::Replica;
use crate::report::{Finding, Report};
use crate::Result;

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
        todo!("H1")
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
    todo!("H1: {store:?} {prefix} {limiter:?}")
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
    on_finding: Option<FindingHook>,
    progress: Arc<AuditProgress>,
}

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

    /// Calls `hook` for each finding, once it is confirmed (and repaired, if it was).
    pub fn on_finding(mut self, hook: FindingHook) -> Self {
        self.on_finding = Some(hook);
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
        let _ = (
            &self.store,
            &self.root,
            &self.settings,
            &self.repository,
            &self.replicas,
            &self.on_finding,
        );
        todo!("H1: {checkpoint:?} {resume} {stop:?}")
    }
}
