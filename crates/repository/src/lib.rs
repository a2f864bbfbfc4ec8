//! The arca kernel: Fedora resource operations over an OCFL root and a catalog.
//!
//! Every write follows the same path ([`Repository::execute`]): prepare the new OCFL
//! version(s) in memory, append a redo record to the journal and wait for its shared
//! `fdatasync` (group commit), record the change in the catalog, answer; the version's files
//! are written into the root behind the answer (`publisher`), and reads of an object wait
//! until its files are complete. A background checkpoint makes the root and catalog durable with one
//! `syncfs` every few seconds and recycles the journal segments that are no longer needed.
//! Reads come from the catalog alone. Storage stays the truth: after a crash,
//! [`Repository::open`] replays the journal into the root and re-derives the catalog rows of
//! every object it touched.
//!
//! This file holds the [`Repository`] type and its life cycle (`open`, checkpoints,
//! shutdown). The operations live beside it: reads (`read`), the five writes (`write`),
//! planning a change per OCFL object (`plan`) and running it (`execute`), with the two
//! durability paths (`journaled`, `direct`), transactions, versions and ACLs in modules of
//! their own.
#![warn(missing_docs)]

mod acl;
mod adopt;
mod changes;
mod content;
pub mod damage;
mod derived;
mod described;
mod direct;
mod error;
mod execute;
mod external;
mod fixity;
mod follow;
mod index;
mod journaled;
pub mod membership;
mod plan;
mod publisher;
mod read;
mod receive;
mod references;
mod stored;
mod subjects;
mod transactions;
mod versions;
mod write;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arca_catalog::{Catalog, ChangeKind, ResourceRecord};
use arca_model::{now, DigestAlgorithm, DigestValue, FedoraId, InteractionModel, OCFL_USER_NAME};
use arca_ocfl::{OcflRoot, VersionInfo};
use arca_storage::JournalStats;
use changes::log;
use direct::Direct;
use journaled::Journaled;
use oxrdf::Triple;
pub(crate) use plan::{
    archival_group_of, discard_uploads, logical_paths, ObjectPlan, ResourcePlan,
};
pub(crate) use write::{checked_triples, forget, model_of, new_headers};

pub use arca_catalog::TxEnd;
pub use changes::types_of;
pub use content::{BinaryData, ReceivedBinary, Upload};
pub use damage::{Damage, DamagedFile};
pub use error::{Constraint, Error, Result};
pub use external::{AllowList, CheckedUrl, ExternalHandling, ExternalLocation};
pub use fixity::{digest_file, digest_reader, FixityCheck, FixityReport};
pub use index::{rows_from_object, ObjectRows, RebuildStats};
pub use read::ReadView;
pub use stored::{LocalContent, StoredContent};
pub use transactions::{
    TxInfo, COMMIT_PAGE_OBJECTS, DEFAULT_TIMEOUT as DEFAULT_TRANSACTION_TIMEOUT,
};
pub use write::check_model_change;

/// Header logical path of an object's root resource.
pub(crate) const ROOT_HEADER: &str = ".fcrepo/fcr-root.json";
/// Content logical path of a container that is an object root.
pub(crate) const CONTAINER_CONTENT: &str = "fcr-container.nt";
/// The content file of a container's ACL (Fedora 6's name).
pub(crate) const ACL_CONTAINER_CONTENT: &str = "fcr-container~fcr-acl.nt";

/// New content for a resource.
#[derive(Debug)]
pub enum NewContent {
    /// Triples for an RDF source (internal ids), and whether server-managed statements
    /// are dropped (`Prefer: handling=lenient`) instead of refused.
    Rdf {
        /// The client's triples.
        triples: Vec<Triple>,
        /// Drop server-managed triples instead of refusing the request.
        lenient: bool,
    },
    /// Bytes for a binary.
    Binary {
        /// The received bytes and their digests.
        binary: ReceivedBinary,
        /// Media type.
        mime: String,
        /// File name from `Content-Disposition`.
        filename: Option<String>,
        /// Digests the client sent, to verify.
        expected: Vec<DigestValue>,
    },
}

/// A check run under the resource's lock before a change (conditional requests).
pub type Precondition = Box<dyn FnOnce(&ResourceRecord) -> Result<()> + Send>;

/// A SPARQL-style change of an RDF source's triples, run under its lock.
pub type TripleUpdate = Box<dyn FnOnce(Vec<Triple>) -> Result<Vec<Triple>> + Send>;

/// The kernel, as one caller uses it: the shared [`Kernel`] and the [`Scope`] of the
/// request at hand (the transaction it works in, the software behind it). Cheap to clone;
/// [`Repository::scoped`] gives a request its own handle.
#[derive(Clone)]
pub struct Repository {
    kernel: Arc<Kernel>,
    scope: Scope,
}

/// The state every handle of a repository shares: storage, catalog, durability, settings.
pub struct Kernel {
    ocfl: Arc<OcflRoot>,
    catalog: Arc<dyn Catalog>,
    durability: Durability,
    version_message: String,
    auto_versioning: AtomicBool,
    txs: transactions::Transactions,
    watchers: Arc<parking_lot::RwLock<Vec<ChangeWatcher>>>,
    /// The files a fixity audit found damaged, refused to reads.
    damage: damage::Damage,
    /// Where write time goes.
    pub phases: PhaseTimes,
}

/// What one request's work runs under, passed with the handle it works through instead of
/// living in task-local storage.
#[derive(Clone, Default, Debug)]
pub struct Scope {
    /// The open transaction the request's reads see and its writes join.
    transaction: Option<Arc<str>>,
    /// The software making the request (its `User-Agent`), recorded in the change log.
    agent: Option<Arc<str>>,
}

impl std::ops::Deref for Repository {
    type Target = Kernel;

    fn deref(&self) -> &Kernel {
        &self.kernel
    }
}

/// How a change reaches storage durably, which depends on where the root is.
pub(crate) enum Durability {
    /// A local root: a redo journal shared by concurrent writes, the files written into
    /// the root behind the answer, checkpoints (`journaled`).
    Journaled(Journaled),
    /// A store without a journal (S3): each change is in storage, its commit point passed,
    /// before the catalog records it and the client is answered; the catalog keeps a
    /// record of each change under way until then, so that any node can finish or undo one
    /// whose node stopped in the middle (`direct`).
    Direct(Direct),
}

/// Told the ids of the resources every committed change wrote, deleted or purged, before
/// the change is answered (caches of derived state, such as effective ACLs, follow it).
pub type ChangeWatcher = Arc<dyn Fn(&[FedoraId]) + Send + Sync>;

/// Time spent in each phase of the write path, in nanoseconds (for benchmarks).
#[derive(Debug, Default)]
pub struct PhaseTimes {
    /// Writing the new versions under staging.
    pub stage: std::sync::atomic::AtomicU64,
    /// Waiting for the journal's group commit.
    pub journal: std::sync::atomic::AtomicU64,
    /// Writing into the root, behind the acknowledgement (not part of a write's latency).
    pub publish: Arc<std::sync::atomic::AtomicU64>,
    /// The catalog transaction.
    pub catalog: std::sync::atomic::AtomicU64,
    /// Writes executed.
    pub writes: std::sync::atomic::AtomicU64,
}

impl Repository {
    /// This handle with `agent` (a request's `User-Agent`) recorded as the software behind
    /// every change made through it.
    pub fn with_agent(&self, agent: Option<Arc<str>>) -> Repository {
        let mut scoped = self.clone();
        scoped.scope.agent = agent;
        scoped
    }

    /// The software behind the changes made through this handle, if named.
    pub(crate) fn agent(&self) -> Option<&Arc<str>> {
        self.scope.agent.as_ref()
    }

    /// Opens the kernel: on a local root, opens the journal and replays it after a crash;
    /// on a store without a journal, finishes or undoes the changes a stopped node left
    /// under way (see [`spawn_recovery`](Self::spawn_recovery) for the nodes that die
    /// later). Rebuilds the catalog if it is new or an earlier rebuild did not finish (when
    /// `rebuild_if_needed`; the `arca rebuild` command runs its own), and creates the
    /// repository root resource on a new root. `journal_dir` is not used without a journal.
    pub async fn open(
        ocfl: OcflRoot,
        catalog: Arc<dyn Catalog>,
        journal_dir: &Path,
        version_message: String,
        rebuild_if_needed: bool,
    ) -> Result<Self> {
        let ocfl = Arc::new(ocfl);
        let phases = PhaseTimes::default();
        let (durability, records) = match ocfl.local_root() {
            Some(root_dir) => {
                let (journaled, records) =
                    Journaled::start(ocfl.clone(), &root_dir, journal_dir, phases.publish.clone())?;
                (Durability::Journaled(journaled), records)
            }
            None => (Durability::Direct(Direct::default()), Vec::new()),
        };
        let repo = Self {
            kernel: Arc::new(Kernel {
                ocfl,
                catalog,
                durability,
                version_message,
                auto_versioning: AtomicBool::new(true),
                txs: transactions::Transactions::default(),
                watchers: Default::default(),
                damage: Default::default(),
                phases,
            }),
            scope: Scope::default(),
        };
        // Crash recovery: everything journaled is written again, everything else staged
        // was never acknowledged and goes — except the uploads of decided transaction
        // commits, which their roll forward (below) publishes.
        let decided: std::collections::HashSet<PathBuf> = repo
            .catalog
            .tx_decided_uploads()
            .await?
            .into_iter()
            .map(PathBuf::from)
            .collect();
        let keep = |upload: &std::path::Path| decided.contains(upload);
        let touched = match &repo.durability {
            Durability::Journaled(j) => j.replay(&repo.ocfl, &records, keep)?,
            Durability::Direct(_) => {
                repo.ocfl.clear_staging_keeping(keep)?;
                Vec::new()
            }
        };
        drop(decided);
        repo.note_digest_algorithm()?;
        if let Durability::Journaled(j) = &repo.durability {
            j.checkpoint().await?;
            j.spawn_checkpointer();
        }
        if repo.catalog.is_shared() {
            // Other nodes' transactions may be open: they end by commit, rollback or expiry.
            repo.expire_transactions().await?;
            follow::spawn(
                repo.catalog.clone(),
                Arc::downgrade(&repo.watchers),
                *repo.catalog.last_change().borrow(),
            );
        } else {
            repo.roll_back_abandoned_transactions().await?;
        }
        match repo.catalog.meta(index::REBUILD_STATE).await?.as_deref() {
            Some(index::COMPLETE) => {
                for id in &touched {
                    repo.reindex_object(id).await?;
                }
                if matches!(repo.durability, Durability::Direct(_)) {
                    repo.recover_pending(std::time::Duration::ZERO).await?;
                }
            }
            state if rebuild_if_needed => {
                let resume = state == Some(index::RUNNING);
                tracing::info!(
                    resume,
                    "catalog is not complete; rebuilding it from storage"
                );
                let last_logged = std::sync::atomic::AtomicU64::new(0);
                repo.rebuild(resume, &|done, total| {
                    let tenth = done * 10 / total.max(1);
                    if last_logged.swap(tenth, std::sync::atomic::Ordering::Relaxed) != tenth {
                        tracing::info!(done, total, "rebuilding the catalog");
                    }
                })
                .await?;
            }
            _ => return Ok(repo),
        }
        // With storage and catalog agreeing again: decided commits are completed.
        repo.finish_interrupted_commits().await?;
        repo.ensure_root().await?;
        Ok(repo)
    }

    /// Says once, at start-up, when new objects get another digest algorithm than the
    /// repository root's object, the first one written (so the algorithm the repository
    /// started with): every existing object keeps its own, as in Fedora 6.
    fn note_digest_algorithm(&self) -> Result<()> {
        let new_objects = self.ocfl.digest_algorithm();
        let existing = self
            .ocfl
            .object_digest_algorithm(FedoraId::root().as_str())?;
        if let Some(existing) = existing.filter(|e| *e != new_objects) {
            tracing::warn!(
                existing = existing.ocfl_name(),
                new_objects = new_objects.ocfl_name(),
                "objects written so far use {}; they keep it, and objects created from now on \
                 use {} (digest_algorithm)",
                existing.ocfl_name(),
                new_objects.ocfl_name()
            );
        }
        Ok(())
    }

    /// Whether every change makes a new OCFL version (`true`, the default, as Fedora's
    /// auto-versioning) or goes into the object's mutable HEAD until a version is asked for.
    pub fn set_auto_versioning(&self, on: bool) {
        self.auto_versioning.store(on, Ordering::Relaxed);
    }

    /// Calls `watcher` with the ids every committed change touches, from now on.
    pub fn watch_changes(&self, watcher: ChangeWatcher) {
        self.watchers.write().push(watcher);
    }

    fn changed(&self, ids: &[FedoraId]) {
        for watcher in self.watchers.read().iter() {
            watcher(ids);
        }
    }

    /// The OCFL root.
    pub fn ocfl(&self) -> &Arc<OcflRoot> {
        &self.ocfl
    }

    /// The catalog.
    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        &self.catalog
    }

    /// Filesystem-sync statistics (checkpoints; zero without a journal).
    pub fn sync_stats(&self) -> arca_storage::SyncStats {
        match &self.durability {
            Durability::Journaled(j) => j.sync_stats(),
            Durability::Direct(_) => Default::default(),
        }
    }

    /// Journal statistics (group commits of writes; zero without a journal).
    pub fn journal_stats(&self) -> JournalStats {
        match &self.durability {
            Durability::Journaled(j) => j.journal_stats(),
            Durability::Direct(_) => Default::default(),
        }
    }

    /// Makes everything applied so far durable in the root and catalog and trims the
    /// journal. Runs in the background every few seconds; call it on shutdown too.
    /// (Without a journal every change is durable when it is answered: nothing to do.)
    pub async fn checkpoint(&self) -> Result<()> {
        match &self.durability {
            Durability::Journaled(j) => j.checkpoint().await,
            Durability::Direct(_) => Ok(()),
        }
    }

    /// Stops the background work of the write path: on a local root, the checkpoints,
    /// after a last one once everything acknowledged is published (if publishing keeps
    /// failing, the journal keeps those changes for the next start instead); without a
    /// journal, the recovery of changes stopped nodes left.
    pub async fn shutdown(&self) -> Result<()> {
        match &self.durability {
            Durability::Journaled(j) => j.shutdown().await,
            Durability::Direct(d) => {
                d.stop();
                Ok(())
            }
        }
    }

    /// Directory where large uploads are streamed (same filesystem as the root).
    pub fn uploads_dir(&self) -> PathBuf {
        self.ocfl.uploads_dir()
    }

    /// The bytes of a small file of the root (a header, RDF), once every acknowledged
    /// change of its object is in the root (the caller settles it); an error names it.
    pub(crate) async fn read_stored(&self, key: &str) -> Result<Vec<u8>> {
        let ocfl = self.ocfl.clone();
        let key = key.to_string();
        tokio::task::spawn_blocking(move || ocfl.read_file(&key))
            .await
            .map_err(|e| Error::Io(std::io::Error::other(e)))?
            .map_err(Error::from)
    }

    /// Waits until every change acknowledged so far is written into the root, for tests and
    /// tools that read the root directly while the server runs (the root lags behind the
    /// answers by the publisher's backlog, usually milliseconds).
    pub async fn published(&self) {
        if let Durability::Journaled(j) = &self.durability {
            j.publisher.drain(Duration::from_secs(3600)).await;
        }
    }

    /// Writes acknowledged and not yet written into the root (the publisher's backlog; zero
    /// without a journal), for metrics.
    pub fn publish_backlog(&self) -> usize {
        match &self.durability {
            Durability::Journaled(j) => j.publisher.backlog(),
            Durability::Direct(_) => 0,
        }
    }

    /// Waits until object `ocfl_id`'s acknowledged changes are all written into the root, for
    /// readers of its inventory and version files (the Fedora 3 facade's histories).
    pub async fn settle(&self, ocfl_id: &str) -> Result<()> {
        self.settled(ocfl_id).await
    }

    /// Waits until object `ocfl_id`'s acknowledged changes are all written into the root
    /// (see `publisher`); reads of its files and the next write's plan start from there.
    pub(crate) async fn settled(&self, ocfl_id: &str) -> Result<()> {
        match &self.durability {
            Durability::Journaled(j) => j.publisher.settled(ocfl_id).await,
            // Every answered change is in storage already.
            Durability::Direct(_) => Ok(()),
        }
    }

    /// The digest algorithm of the OCFL object a binary written at `id` lands in: the
    /// object holding `id` if it exists, the Archival Group it would become part of, else
    /// a new object (the root's algorithm). Cheap (catalog lookups and a `stat` of a
    /// sidecar), so that a body can be hashed with it while it streams in; the write checks
    /// again under its locks and hashes a file again in the rare case it guessed wrong.
    pub(crate) async fn content_digest_for(&self, id: &FedoraId) -> Result<DigestAlgorithm> {
        let object = match self.record(id).await? {
            Some(record) => Some(record.ocfl_id),
            None => match self.find_parent(id).await {
                Ok(parent) => archival_group_of(&parent)?.map(|ag| ag.to_string()),
                // The write will refuse it; any algorithm does until then.
                Err(_) => None,
            },
        };
        Ok(match object {
            Some(ocfl_id) => self.ocfl.object_digest_algorithm(&ocfl_id)?,
            None => None,
        }
        .unwrap_or(self.ocfl.digest_algorithm()))
    }

    /// Creates the repository root resource if the catalog has none.
    async fn ensure_root(&self) -> Result<()> {
        let root = FedoraId::root();
        if self.catalog.get(&root).await?.is_some() {
            return Ok(());
        }
        if self.ocfl.read_object(root.as_str())?.is_some() {
            return self.reindex_object(root.as_str()).await;
        }
        let at = now();
        // Named by the user Fedora 6's storage library records for its root (the golden
        // sample's `fcr-root.json`); Fedora 6.5 shows them, 6.1 wrote none.
        let headers = new_headers(
            &root,
            Some(&root),
            InteractionModel::BasicContainer,
            at,
            OCFL_USER_NAME,
        );
        let mut plan = self.new_plan(root.to_string(), None)?;
        plan.add_rdf(ROOT_HEADER, CONTAINER_CONTENT, headers, None, &[]);
        self.execute(
            vec![plan],
            vec![log(&root, ChangeKind::Create, at, OCFL_USER_NAME)],
        )
        .await?;
        Ok(())
    }
}
