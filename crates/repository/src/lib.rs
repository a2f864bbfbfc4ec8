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
#![warn(missing_docs)]

mod acl;
mod adopt;
mod changes;
mod content;
mod derived;
mod described;
mod direct;
mod error;
mod external;
mod fixity;
mod follow;
mod index;
mod journaled;
pub mod membership;
mod publisher;
mod references;
mod stored;
mod subjects;
mod transactions;
mod versions;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arca_catalog::{Catalog, CatalogOp, ChangeKind, MementoRow, ResourceRecord};
use arca_model::{
    format_instant, now, DigestAlgorithm, DigestValue, FedoraId, InteractionModel, MultiHasher,
    ResourceHeaders, Timestamp, OCFL_USER_ADDRESS, OCFL_USER_NAME,
};
use arca_ocfl::{Change, Content, HeadMode, ObjectState, OcflRoot, Staged, VersionInfo};
use arca_storage::JournalStats;
use changes::log;
use direct::Direct;
use journaled::Journaled;
use oxrdf::Triple;

pub use arca_catalog::TxEnd;
pub use changes::{types_of, with_agent};
pub use content::{BinaryData, ReceivedBinary, Upload};
pub use error::{Constraint, Error, Result};
pub use external::{AllowList, CheckedUrl, ExternalHandling, ExternalLocation};
pub use fixity::{digest_file, digest_reader, FixityCheck, FixityReport};
pub use index::{rows_from_object, ObjectRows, RebuildStats};
pub use stored::{LocalContent, StoredContent};
pub use transactions::{
    TxInfo, COMMIT_PAGE_OBJECTS, DEFAULT_TIMEOUT as DEFAULT_TRANSACTION_TIMEOUT,
};

/// Header logical path of an object's root resource.
const ROOT_HEADER: &str = ".fcrepo/fcr-root.json";
/// Content logical path of a container that is an object root.
const CONTAINER_CONTENT: &str = "fcr-container.nt";
/// The content file of a container's ACL (Fedora 6's name).
const ACL_CONTAINER_CONTENT: &str = "fcr-container~fcr-acl.nt";

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

/// The kernel. Cheap to share behind an `Arc`.
pub struct Repository {
    ocfl: Arc<OcflRoot>,
    catalog: Arc<dyn Catalog>,
    durability: Durability,
    version_message: String,
    auto_versioning: AtomicBool,
    txs: transactions::Transactions,
    watchers: Arc<parking_lot::RwLock<Vec<ChangeWatcher>>>,
    /// Where write time goes.
    pub phases: PhaseTimes,
}

/// How a change reaches storage durably, which depends on where the root is.
enum Durability {
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

/// One resource to (re)write inside an object in a planned change.
struct ResourcePlan {
    headers: ResourceHeaders,
    parent: Option<FedoraId>,
    content_logical: Option<String>,
    rdf: Option<Vec<u8>>,
}

/// All changes to one OCFL object in a planned change.
struct ObjectPlan {
    ocfl_id: String,
    /// The change must become an immutable version even with auto-versioning off
    /// (deletes, as in Fedora 6, and `POST fcr:versions`).
    new_version: bool,
    current: Option<ObjectState>,
    /// The object's digest algorithm: its inventory's, or for a new object the root's.
    /// Header digests and staged uploads use it.
    algorithm: DigestAlgorithm,
    changes: Vec<Change>,
    resources: Vec<ResourcePlan>,
    /// `current` was read after the changes stopped nodes left on the object were
    /// recovered (without a journal; see `direct`).
    recovered: bool,
}

/// Planned changes prepared in memory ([`Repository::stage_all`]).
struct Staging {
    /// Each object's new version (or mutable-HEAD revision), with the resources it writes.
    staged: Vec<(Staged, Vec<ResourcePlan>)>,
    /// Objects whose mutable HEAD the change commits into a version.
    head_commits: Vec<String>,
}

impl Staging {
    /// The catalog records of every resource written, and the mementos their headers make:
    /// every header written in an immutable version makes one (Fedora 6's rule; a
    /// tombstone is not one), dated `created`.
    fn records(&self, created: arca_model::Timestamp) -> (Vec<ResourceRecord>, Vec<CatalogOp>) {
        let mut records = Vec::new();
        let mut mementos = Vec::new();
        for (s, resources) in &self.staged {
            let dir = s.object_prefix();
            let version = s.new_version();
            for r in resources {
                let record = r.to_record(&s.inventory, dir);
                if let Some(version) = version.filter(|_| !record.is_deleted()) {
                    let (header, _) = logical_paths(&s.inventory.id, &record.id, false);
                    if let Some(file) = s.inventory.resolve_head(&header) {
                        mementos.push(CatalogOp::CurrentMemento(MementoRow {
                            id: record.id.clone(),
                            datetime: created.unix_timestamp(),
                            version: version.to_string(),
                            header_file: format!("{dir}/{file}"),
                            content_file: record.content_file.clone(),
                        }));
                    }
                }
                records.push(record);
            }
        }
        (records, mementos)
    }
}

impl Repository {
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
            ocfl,
            catalog,
            durability,
            version_message,
            auto_versioning: AtomicBool::new(true),
            txs: transactions::Transactions::default(),
            watchers: Default::default(),
            phases,
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

    /// A live resource; [`Error::Gone`] for a tombstone, [`Error::NotFound`] otherwise.
    pub async fn get(&self, id: &FedoraId) -> Result<ResourceRecord> {
        match self.record(id).await? {
            Some(r) if r.is_deleted() => Err(Error::Gone(id.clone())),
            Some(r) => Ok(r),
            None => Err(Error::NotFound(id.clone())),
        }
    }

    /// A resource, live or tombstone.
    pub async fn lookup(&self, id: &FedoraId) -> Result<Option<ResourceRecord>> {
        self.record(id).await
    }

    /// Whether a new resource cannot take path `id`: a resource (or its tombstone) is there,
    /// or resources exist below it (a "ghost node").
    pub async fn is_taken(&self, id: &FedoraId) -> Result<bool> {
        Ok(self.record(id).await?.is_some() || self.catalog.has_descendants(id).await?)
    }

    /// Live children of a container, in id order, paged by key (inside a transaction, as
    /// the transaction sees them).
    pub async fn children(
        &self,
        id: &FedoraId,
        after: Option<&FedoraId>,
        limit: usize,
    ) -> Result<Vec<FedoraId>> {
        Ok(match transactions::current() {
            Some(tx) => self.catalog.tx_children(&tx, id, after, limit).await?,
            None => self.catalog.children(id, after, limit).await?,
        })
    }

    /// The `rdf:type`s a resource's own triples state of it (named classes, not the ones
    /// its interaction model gives it); a binary's are those of its description, and a
    /// description's those it states of its binary, as in Fedora 6, where they show in
    /// `Link: rel="type"` and count for `acl:accessToClass`.
    pub async fn stated_types(&self, record: &ResourceRecord) -> Result<Vec<String>> {
        let described;
        let (record, subject) = if record.headers.model() == Some(InteractionModel::NonRdfSource) {
            match self.lookup(&record.id.description()).await? {
                Some(d) if !d.is_deleted() => {
                    described = d;
                    (&described, record.id.iri())
                }
                _ => return Ok(Vec::new()),
            }
        } else {
            // A description's statements are about its binary.
            (record, record.id.base().iri())
        };
        let mut types = Vec::new();
        for t in self.triples(record)? {
            let about = matches!(&t.subject, oxrdf::NamedOrBlankNode::NamedNode(n) if n.as_str() == subject);
            if about && t.predicate.as_str() == arca_rdf::vocab::RDF_TYPE {
                if let oxrdf::Term::NamedNode(n) = t.object {
                    if !types.iter().any(|known| known == n.as_str()) {
                        types.push(n.into_string());
                    }
                }
            }
        }
        Ok(types)
    }

    /// The stored triples (internal ids) of an RDF source.
    ///
    /// A description's statements are about its binary: Fedora 6 stores `<>` of a
    /// description as the description's own id and names the binary instead when it reads
    /// them, and so does this.
    pub fn triples(&self, record: &ResourceRecord) -> Result<Vec<Triple>> {
        let mut triples = match &record.rdf {
            Some(nt) => arca_rdf::parse_ntriples(nt)?,
            None => Vec::new(),
        };
        if record.id.is_description() {
            let own = record.id.iri();
            let binary = oxrdf::NamedNode::new_unchecked(record.id.base().iri());
            for t in &mut triples {
                if matches!(&t.subject, oxrdf::NamedOrBlankNode::NamedNode(n) if n.as_str() == own)
                {
                    t.subject = binary.clone().into();
                }
            }
        }
        Ok(triples)
    }

    /// Creates a resource at `id` (POST with a minted or Slug id, or PUT to a new path); an
    /// Archival Group when `archival_group` (a container whose descendants all live in its
    /// own OCFL object). Below an Archival Group the resource becomes one of its parts.
    pub async fn create(
        &self,
        id: FedoraId,
        model: InteractionModel,
        archival_group: bool,
        content: NewContent,
        user: &str,
    ) -> Result<ResourceRecord> {
        check_creatable(&id, model, archival_group)?;
        let content = prepare_content(&id, content, model)?;
        let parent_record = self.find_parent(&id).await?;
        let group = archival_group_of(&parent_record)?;
        let parent = parent_record.id;
        if archival_group {
            if let Some(ag) = &group {
                return Err(Error::constraint(
                    Constraint::ArchivalGroup,
                    format!("{id} would be an Archival Group inside Archival Group {ag}; nesting Archival Groups is not permitted"),
                ));
            }
        }
        let object_id = group.clone().unwrap_or_else(|| id.clone());
        let _locks = self
            .catalog
            .lock_objects(&[object_id.as_str()], &[parent.as_str()])
            .await?;
        self.check_owners(&[object_id.as_str()]).await?;
        match self.record(&id).await? {
            Some(r) if r.is_deleted() => return Err(Error::Gone(id)),
            Some(_) => return Err(Error::AlreadyExists(id)),
            None => {}
        }
        // A path with resources below it but none of its own (a "ghost node", left by a
        // Slug or PUT of `a/b`) stays empty, as in Fedora 6.
        if !id.is_root() && self.catalog.has_descendants(&id).await? {
            return Err(Error::constraint(
                Constraint::InvalidPath,
                format!("{id} is an immutable resource: resources exist below it, so it cannot be created"),
            ));
        }
        // The parent may have been deleted while we waited for the locks.
        self.get(&parent).await?;

        let at = now();
        let mut headers = new_headers(&id, Some(&parent), model, at, user);
        let mut plan = match &group {
            Some(ag) => {
                headers.archival_group_id = Some(ag.to_string());
                headers.object_root = false;
                self.plan_for_object(ag.as_str()).await?
            }
            None => {
                headers.archival_group = archival_group;
                self.new_plan(id.to_string(), None)?
            }
        };
        match content {
            NewContent::Rdf { triples, .. } => {
                let (header, content) = plan.paths(&id, false);
                plan.add_rdf(&header, &content, headers, Some(parent.clone()), &triples);
            }
            NewContent::Binary {
                binary,
                mime,
                filename,
                ..
            } => {
                let (_, content) = plan.paths(&id, true);
                // As Fedora 6.1: an empty filename when the request named none.
                headers.filename = Some(filename.unwrap_or_default());
                plan.add_binary(&content, headers, Some(parent.clone()), binary, mime)
                    .await?;
                let desc_id = id.description();
                let mut desc = new_headers(
                    &desc_id,
                    Some(&id),
                    InteractionModel::NonRdfSourceDescription,
                    at,
                    user,
                );
                desc.archival_group_id = group.as_ref().map(|ag| ag.to_string());
                let (header, content) = plan.paths(&desc_id, false);
                plan.add_rdf(&header, &content, desc, None, &[]);
            }
        }
        let extra = vec![
            log(&id, ChangeKind::Create, at, user),
            // Its containment changed (Fedora API 6.1; Fedora 6.1 itself reports none).
            log(&parent, ChangeKind::Update, at, user),
            CatalogOp::ChildrenChanged(parent, nanos(at)),
        ];
        let records = self.execute(vec![plan], extra).await?;
        records
            .into_iter()
            .find(|r| r.id == id)
            .ok_or_else(|| Error::Internal(format!("the write of {id} returned no record for it")))
    }

    /// Replaces the content of an existing resource (PUT). `model` is the interaction model
    /// the client named, if any; it must match the resource's.
    pub async fn replace(
        &self,
        id: &FedoraId,
        model: Option<InteractionModel>,
        content: NewContent,
        user: &str,
        precondition: Option<Precondition>,
    ) -> Result<ResourceRecord> {
        let (_locks, record) = self.lock_existing(id, precondition).await?;
        let current_model = model_of(&record)?;
        if let Some(asked) = model {
            if asked != current_model {
                return Err(Error::constraint(
                    Constraint::InteractionModel,
                    format!(
                        "the interaction model of {id} is <{current_model}> and cannot be changed to <{asked}>"
                    ),
                ));
            }
        }
        let (content, facts) = match content {
            NewContent::Rdf { triples, lenient }
                if current_model == InteractionModel::NonRdfSourceDescription =>
            {
                let (triples, facts) = described::take_binary_facts(id, triples)?;
                (NewContent::Rdf { triples, lenient }, facts)
            }
            other => (other, described::BinaryFacts::default()),
        };
        let content = prepare_content(id, content, current_model)?;
        let at = now();
        let mut plan = self.plan_for(&record).await?;
        match content {
            NewContent::Rdf { triples, .. } => {
                plan.rewrite_rdf(&record, at, user, &triples)?;
                self.apply_binary_facts(&mut plan, id, facts, at, user)
                    .await?;
            }
            NewContent::Binary {
                binary,
                mime,
                filename,
                ..
            } => {
                plan.rewrite_binary(self, &record, at, user, binary, mime, filename)
                    .await?;
            }
        }
        self.commit_update(id, plan, at, user).await
    }

    /// Changes an RDF source's triples with `update` (PATCH with SPARQL Update).
    pub async fn patch(
        &self,
        id: &FedoraId,
        update: TripleUpdate,
        lenient: bool,
        user: &str,
        precondition: Option<Precondition>,
    ) -> Result<ResourceRecord> {
        let (_locks, record) = self.lock_existing(id, precondition).await?;
        let model = model_of(&record)?;
        if !model.is_rdf_source() {
            return Err(Error::constraint(
                Constraint::InteractionModel,
                format!("{id} is a binary; PATCH applies to RDF sources"),
            ));
        }
        let current = self.triples(&record)?;
        let (current, updated) = tokio::task::spawn_blocking(move || {
            let updated = update(current.clone());
            (current, updated)
        })
        .await
        .map_err(|e| Error::Internal(format!("the update did not finish: {e}")))?;
        let (updated, facts) = if model == InteractionModel::NonRdfSourceDescription {
            described::take_binary_facts(id, updated?)?
        } else {
            (updated?, described::BinaryFacts::default())
        };
        let triples = checked_triples(id, model, updated, lenient)?;
        let current: std::collections::HashSet<&Triple> = current.iter().collect();
        subjects::check_subjects(id, triples.iter().filter(|t| !current.contains(t)))?;
        let triples = membership::complete(id, model, triples)?;
        let at = now();
        let mut plan = self.plan_for(&record).await?;
        plan.rewrite_rdf(&record, at, user, &triples)?;
        self.apply_binary_facts(&mut plan, id, facts, at, user)
            .await?;
        self.commit_update(id, plan, at, user).await
    }

    /// Gives the binary described by `description` the filename and media type its new
    /// description states, as Fedora 6 does; nothing when they are unchanged.
    async fn apply_binary_facts(
        &self,
        plan: &mut ObjectPlan,
        description: &FedoraId,
        facts: described::BinaryFacts,
        at: Timestamp,
        user: &str,
    ) -> Result<()> {
        if facts.is_empty() {
            return Ok(());
        }
        let binary = self.get(&description.base()).await?;
        let mut headers = binary.headers.clone();
        if !facts.apply(&mut headers) {
            return Ok(());
        }
        headers.touch_after_previous(at, user);
        plan.rewrite_headers(&binary, headers);
        Ok(())
    }

    /// Locks the object holding live resource `id`, re-reads it under the lock and checks
    /// the request's precondition against that fresh state.
    async fn lock_existing(
        &self,
        id: &FedoraId,
        precondition: Option<Precondition>,
    ) -> Result<(arca_catalog::ObjectLockGuard, ResourceRecord)> {
        let probe = self.get(id).await?;
        let guard = self
            .catalog
            .lock_objects(&[probe.ocfl_id.as_str()], &[])
            .await?;
        self.check_owners(&[probe.ocfl_id.as_str()]).await?;
        let record = self.get(id).await?;
        if let Some(check) = precondition {
            check(&record)?;
        }
        Ok((guard, record))
    }

    /// Commits a one-object update of `id` and returns its new record.
    async fn commit_update(
        &self,
        id: &FedoraId,
        plan: ObjectPlan,
        at: Timestamp,
        user: &str,
    ) -> Result<ResourceRecord> {
        let mut extra = vec![log(id, ChangeKind::Update, at, user)];
        if id.is_description() {
            // A description changes its binary too, as Fedora 6 reports it.
            extra.insert(0, log(&id.base(), ChangeKind::Update, at, user));
        }
        let records = self.execute(vec![plan], extra).await?;
        records
            .into_iter()
            .find(|r| &r.id == id)
            .ok_or_else(|| Error::Internal(format!("the write of {id} returned no record for it")))
    }

    /// Deletes a resource and everything it contains, leaving tombstones.
    pub async fn delete(
        &self,
        id: &FedoraId,
        user: &str,
        precondition: Option<Precondition>,
    ) -> Result<()> {
        let probe = self.get(id).await?;
        if id.is_root() {
            return Err(Error::constraint(
                Constraint::InvalidPath,
                "the repository root cannot be deleted",
            ));
        }
        if id.is_description() || id.is_acl() {
            return Err(Error::constraint(
                Constraint::InvalidPath,
                format!("{id} cannot be deleted on its own; delete the resource it belongs to"),
            ));
        }
        let mut affected: Vec<ResourceRecord> = self
            .catalog
            .descendants(id)
            .await?
            .into_iter()
            .filter(|r| !r.is_deleted())
            .collect();
        affected.push(probe);
        let mut object_ids: Vec<&str> = affected.iter().map(|r| r.ocfl_id.as_str()).collect();
        object_ids.sort_unstable();
        object_ids.dedup();
        let _locks = self.catalog.lock_objects(&object_ids, &[]).await?;
        self.check_owners(&object_ids).await?;
        let record = self.get(id).await?;
        if let Some(check) = precondition {
            check(&record)?;
        }

        let at = now();
        let mut by_object: BTreeMap<String, Vec<ResourceRecord>> = BTreeMap::new();
        for r in affected {
            // re-read under the lock
            if let Some(fresh) = self.record(&r.id).await? {
                if !fresh.is_deleted() {
                    by_object
                        .entry(fresh.ocfl_id.clone())
                        .or_default()
                        .push(fresh);
                }
            }
        }
        let mut plans = Vec::new();
        let mut extra = Vec::new();
        for (ocfl_id, resources) in by_object {
            let mut plan = self.plan_for_object(&ocfl_id).await?;
            // As Fedora 6: a delete is a new version, except inside an Archival Group.
            plan.new_version = !resources
                .iter()
                .any(|r| r.headers.archival_group_id.is_some());
            for r in &resources {
                plan.tombstone(r, at, user);
                // As Fedora 6: every resource, descriptions and ACLs too.
                extra.push(log(&r.id, ChangeKind::Delete, at, user));
            }
            plans.push(plan);
        }
        if let Some(parent) = &record.parent {
            extra.push(log(parent, ChangeKind::Update, at, user));
            extra.push(CatalogOp::ChildrenChanged(parent.clone(), nanos(at)));
        }
        self.execute(plans, extra).await?;
        Ok(())
    }

    /// Purges a tombstone (DELETE on `fcr:tombstone`): the resource and the tombstones below
    /// it leave storage and catalog for good.
    pub async fn purge(&self, id: &FedoraId, user: &str) -> Result<()> {
        if transactions::current().is_some() {
            return Err(Error::constraint(
                Constraint::Unsupported,
                "purging (DELETE on fcr:tombstone) inside a transaction is not supported; purge after the commit",
            ));
        }
        let record = match self.catalog.get(id).await? {
            Some(r) if r.is_deleted() => r,
            _ => return Err(Error::NotFound(id.clone())),
        };
        let mut affected = self.catalog.descendants(id).await?;
        affected.push(record);
        if affected.iter().any(|r| !r.is_deleted()) {
            return Err(Error::constraint(
                Constraint::InvalidPath,
                format!("{id} contains live resources and cannot be purged"),
            ));
        }
        let mut object_ids: Vec<&str> = affected.iter().map(|r| r.ocfl_id.as_str()).collect();
        object_ids.sort_unstable();
        object_ids.dedup();
        let _locks = self.catalog.lock_objects(&object_ids, &[]).await?;
        self.check_owners(&object_ids).await?;
        if object_ids
            .iter()
            .any(|o| !affected.iter().any(|r| r.id.as_str() == *o))
        {
            // Parts of an Archival Group whose root stays: a new version of the group's
            // object without their files.
            return self.purge_parts(&affected, user).await;
        }
        for object in &object_ids {
            self.settled(object).await?;
        }
        let at = now();
        let mut ops = forget(affected.iter().map(|r| &r.id));
        ops.extend(purge_log(&affected, at, user));
        match &self.durability {
            Durability::Journaled(j) => {
                let ticket = j.journal_purge(&object_ids).await?;
                self.purge_objects(&object_ids).await?;
                self.catalog.apply(ops).await?;
                drop(ticket);
            }
            Durability::Direct(_) => self.purge_direct(&object_ids, ops).await?,
        }
        self.changed(&affected.iter().map(|r| r.id.clone()).collect::<Vec<_>>());
        Ok(())
    }

    /// Purges tombstones that are parts of an Archival Group (all in one object whose root
    /// is not purged): their headers and content files leave the object's state in a new
    /// version, as Fedora 6 does, and their rows leave the catalog. The caller holds the
    /// object's lock.
    async fn purge_parts(&self, affected: &[ResourceRecord], user: &str) -> Result<()> {
        let ocfl_id = &affected[0].ocfl_id;
        let mut plan = self.plan_for_object(ocfl_id).await?;
        for r in affected {
            let (header, _) = plan.paths(&r.id, false);
            plan.changes.push(Change {
                logical_path: header,
                content: None,
            });
            if let Some(content) = &r.headers.content_path {
                plan.changes.push(Change {
                    logical_path: content.clone(),
                    content: None,
                });
            }
        }
        let at = now();
        let mut extra = forget(affected.iter().map(|r| &r.id));
        extra.extend(purge_log(affected, at, user));
        self.execute(vec![plan], extra).await?;
        Ok(())
    }

    /// Takes objects out of the root, on the blocking pool.
    async fn purge_objects(&self, object_ids: &[&str]) -> Result<()> {
        let ocfl = self.ocfl.clone();
        let ids: Vec<String> = object_ids.iter().map(|s| s.to_string()).collect();
        tokio::task::spawn_blocking(move || ids.iter().try_for_each(|id| ocfl.purge(id).map(drop)))
            .await
            .map_err(|e| Error::Io(std::io::Error::other(e)))??;
        Ok(())
    }

    /// Runs planned object changes through the durable write path and returns the new
    /// catalog records of every resource written (see [`Durability`]): on a local root
    /// through the journal, with the files written behind the answer
    /// (`execute_journaled`); on a store without a journal, written before the answer
    /// (`execute_direct`).
    async fn execute(
        &self,
        mut plans: Vec<ObjectPlan>,
        extra: Vec<CatalogOp>,
    ) -> Result<Vec<ResourceRecord>> {
        let created = now();
        let info = VersionInfo {
            created: format_instant(created),
            message: self.version_message.clone(),
            user_name: OCFL_USER_NAME.to_string(),
            user_address: OCFL_USER_ADDRESS.to_string(),
        };
        for plan in &mut plans {
            plan.touch_group_root(self, created).await?;
        }
        if let Some(tx) = transactions::current() {
            return self.add_to_transaction(&tx, plans, extra).await;
        }
        match &self.durability {
            Durability::Journaled(j) => {
                self.execute_journaled(j, plans, extra, info, created).await
            }
            Durability::Direct(d) => self.execute_direct(d, plans, extra, info, created).await,
        }
    }

    /// Prepares the new versions of planned changes in memory (nothing in storage
    /// changes). On failure the uploads of what was staged are deleted.
    fn stage_all(&self, plans: Vec<ObjectPlan>, info: &VersionInfo) -> Result<Staging> {
        let mut staging = Staging {
            staged: Vec::with_capacity(plans.len()),
            head_commits: Vec::new(),
        };
        let auto_versioning = self.auto_versioning.load(Ordering::Relaxed);
        for plan in plans {
            let mode = if auto_versioning || plan.new_version {
                HeadMode::NewVersion
            } else {
                HeadMode::Mutable
            };
            if mode == HeadMode::NewVersion && plan.current.as_ref().is_some_and(|c| c.mutable_head)
            {
                // Its mutable HEAD becomes an immutable version: every resource changed
                // there gets a memento and new content paths.
                staging.head_commits.push(plan.ocfl_id.clone());
            }
            match self.ocfl.stage(
                &plan.ocfl_id,
                plan.current.as_ref(),
                plan.changes,
                info.clone(),
                mode,
            ) {
                Ok(s) => staging.staged.push((s, plan.resources)),
                Err(e) => {
                    self.abort_all(staging);
                    return Err(e.into());
                }
            }
        }
        Ok(staging)
    }

    /// Gives up staged changes that will not be written (deletes their uploads).
    fn abort_all(&self, staging: Staging) {
        for (s, _) in staging.staged {
            self.ocfl.abort(s);
        }
    }

    /// Every catalog write that records `records` (written at the same instant, with
    /// `mementos`): the rows, the membership and references they change, `extra`, with
    /// the change log's types filled in.
    async fn catalog_ops(
        &self,
        records: &[ResourceRecord],
        mementos: Vec<CatalogOp>,
        extra: Vec<CatalogOp>,
    ) -> Result<Vec<CatalogOp>> {
        let mut ops: Vec<CatalogOp> = records.iter().cloned().map(CatalogOp::Put).collect();
        ops.extend(mementos);
        ops.extend(self.derived_ops(records, false).await?);
        ops.extend(extra);
        changes::fill_types(&mut ops, |id| async move {
            self.catalog.get(&id).await.ok().flatten()
        })
        .await;
        Ok(ops)
    }

    /// After a change is recorded: tells the watchers, and re-derives the rows of objects
    /// whose mutable HEAD became a version (their files moved).
    async fn written(
        &self,
        records: Vec<ResourceRecord>,
        head_commits: Vec<String>,
    ) -> Result<Vec<ResourceRecord>> {
        self.changed(&records.iter().map(|r| r.id.clone()).collect::<Vec<_>>());
        for ocfl_id in head_commits {
            self.reindex_object(&ocfl_id).await?;
        }
        self.phases.writes.fetch_add(1, Ordering::Relaxed);
        Ok(records)
    }

    /// The record of the nearest existing ancestor of a new resource, which must be a live
    /// container.
    async fn find_parent(&self, id: &FedoraId) -> Result<ResourceRecord> {
        let mut cur = id.path_parent();
        while let Some(candidate) = cur {
            if let Some(r) = self.record(&candidate).await? {
                if r.is_deleted() {
                    return Err(Error::Gone(candidate));
                }
                let model = model_of(&r)?;
                if !model.is_container() {
                    return Err(Error::constraint(
                        Constraint::InvalidPath,
                        format!(
                            "{id} cannot be created below {candidate}, which is not a container"
                        ),
                    ));
                }
                return Ok(r);
            }
            cur = candidate.path_parent();
        }
        Err(Error::NotFound(FedoraId::root()))
    }

    /// A plan against the object holding `record` (its current state read from storage).
    /// A change of an Archival Group's part also re-stages the group's root header with a
    /// new memento date, as Fedora 6 does (the group is versioned as a whole).
    async fn plan_for(&self, record: &ResourceRecord) -> Result<ObjectPlan> {
        self.plan_for_object(&record.ocfl_id).await
    }

    async fn plan_for_object(&self, ocfl_id: &str) -> Result<ObjectPlan> {
        if let Some(current) = self.pending_object(ocfl_id).await? {
            return self.new_plan(ocfl_id.to_string(), current);
        }
        self.settled(ocfl_id).await?;
        // Without a journal, a change a stopped node left on the object is finished or
        // undone before the object is read.
        let recovered = matches!(self.durability, Durability::Direct(_));
        if recovered {
            self.recover_objects(&[ocfl_id.to_string()]).await?;
        }
        let current = {
            let (ocfl, id) = (self.ocfl.clone(), ocfl_id.to_string());
            tokio::task::spawn_blocking(move || ocfl.read_object(&id))
                .await
                .map_err(|e| Error::Io(std::io::Error::other(e)))??
        };
        let current = current.ok_or_else(|| {
            Error::Storage(arca_ocfl::Error::Invalid(format!(
                "the catalog knows object {ocfl_id} but storage does not"
            )))
        })?;
        let mut plan = self.new_plan(ocfl_id.to_string(), Some(current))?;
        plan.recovered = recovered;
        Ok(plan)
    }

    /// An empty plan for object `ocfl_id` in state `current` (`None`: a new object), with
    /// the object's digest algorithm.
    fn new_plan(&self, ocfl_id: String, current: Option<ObjectState>) -> Result<ObjectPlan> {
        let algorithm = match &current {
            Some(c) => c.inventory.content_digest()?,
            None => self.ocfl.digest_algorithm(),
        };
        Ok(ObjectPlan {
            ocfl_id,
            new_version: false,
            current,
            algorithm,
            changes: Vec::new(),
            resources: Vec::new(),
            recovered: false,
        })
    }

    /// The digest algorithm of the OCFL object a binary written at `id` lands in: the
    /// object holding `id` if it exists, the Archival Group it would become part of, else
    /// a new object (the root's algorithm). Cheap (catalog lookups and a `stat` of a
    /// sidecar), so that a body can be hashed with it while it streams in; the write checks
    /// again under its locks and hashes a file again in the rare case it guessed wrong.
    pub async fn content_digest_for(&self, id: &FedoraId) -> Result<DigestAlgorithm> {
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

impl ObjectPlan {
    /// The header and content logical paths of resource `id` in this object.
    fn paths(&self, id: &FedoraId, binary: bool) -> (String, String) {
        logical_paths(&self.ocfl_id, id, binary)
    }

    /// The header logical path of a resource of this object.
    fn header_path(&self, headers: &ResourceHeaders) -> String {
        match FedoraId::from_internal(&headers.id) {
            Ok(id) => self.paths(&id, false).0,
            Err(_) => ROOT_HEADER.to_string(),
        }
    }

    /// When this plan changes parts of an Archival Group but not its root, the root's header
    /// is written again with a new memento date (Fedora 6's `touchRelatedResources`), so
    /// that the group has a memento for every version of its object.
    async fn touch_group_root(&mut self, repo: &Repository, at: Timestamp) -> Result<()> {
        let touches_part = self
            .resources
            .iter()
            .any(|r| r.headers.archival_group_id.is_some());
        if !touches_part || self.resources.iter().any(|r| r.headers.id == self.ocfl_id) {
            return Ok(());
        }
        let root = FedoraId::from_internal(&self.ocfl_id)?;
        if let Some(record) = repo.record(&root).await? {
            if !record.is_deleted() {
                let mut headers = record.headers.clone();
                headers.memento_created_date = Some(format_instant(at));
                self.rewrite_headers(&record, headers);
            }
        }
        Ok(())
    }

    fn add_rdf(
        &mut self,
        header_path: &str,
        content_path: &str,
        mut headers: ResourceHeaders,
        parent: Option<FedoraId>,
        triples: &[Triple],
    ) {
        let nt = arca_rdf::to_ntriples(triples);
        headers.content_size = Some(nt.len() as i64);
        let digest = DigestValue {
            algorithm: self.algorithm,
            hex: MultiHasher::digest(self.algorithm, &nt),
        };
        headers.digests = Some(vec![digest.urn()]);
        headers.content_path = Some(content_path.to_string());
        self.put(header_path, headers.to_json());
        self.put(content_path, nt.clone());
        self.resources.push(ResourcePlan {
            headers,
            parent,
            content_logical: Some(content_path.to_string()),
            rdf: Some(nt),
        });
    }

    /// A binary's bytes and header. Its header digests are those computed while it was
    /// received, the object's algorithm first (computed now if the body was hashed with
    /// another, see [`Repository::content_digest_for`]), as Fedora keeps the client's and
    /// adds the object's.
    async fn add_binary(
        &mut self,
        content_path: &str,
        mut headers: ResourceHeaders,
        parent: Option<FedoraId>,
        binary: ReceivedBinary,
        mime: String,
    ) -> Result<()> {
        let binary = binary.with_digest(self.algorithm).await?;
        headers.mime_type = Some(mime);
        headers.content_size = Some(binary.size as i64);
        headers.digests = Some(binary.digests.iter().map(DigestValue::urn).collect());
        let digest = binary.digests.first().cloned();
        let content = match binary.data {
            BinaryData::External(location) => {
                self.add_external(headers, parent, location);
                return Ok(());
            }
            BinaryData::Memory(bytes) => Content::Bytes(bytes.to_vec()),
            BinaryData::File(upload) => Content::File {
                digest: digest
                    .ok_or_else(|| Error::Internal("an uploaded binary without digests".into()))?,
                path: upload.take(),
            },
        };
        headers.content_path = Some(content_path.to_string());
        headers.external_url = None;
        headers.external_handling = None;
        self.changes.push(Change {
            logical_path: content_path.to_string(),
            content: Some(content),
        });
        self.put(&self.header_path(&headers), headers.to_json());
        self.resources.push(ResourcePlan {
            headers,
            parent,
            content_logical: Some(content_path.to_string()),
            rdf: None,
        });
        Ok(())
    }

    /// New triples for an existing RDF source.
    fn rewrite_rdf(
        &mut self,
        record: &ResourceRecord,
        at: Timestamp,
        user: &str,
        triples: &[Triple],
    ) -> Result<()> {
        let mut headers = record.headers.clone();
        headers.touch_after_previous(at, user);
        let content_path = headers.content_path.clone().ok_or_else(|| {
            Error::Storage(arca_ocfl::Error::Invalid(format!(
                "{} has no content path",
                record.id
            )))
        })?;
        let header_path = self.header_path(&headers);
        self.add_rdf(
            &header_path,
            &content_path,
            headers,
            record.parent.clone(),
            triples,
        );
        Ok(())
    }

    /// New bytes for an existing binary; its description's memento date is touched too, as
    /// Fedora does.
    #[allow(clippy::too_many_arguments)]
    async fn rewrite_binary(
        &mut self,
        repo: &Repository,
        record: &ResourceRecord,
        at: Timestamp,
        user: &str,
        binary: ReceivedBinary,
        mime: String,
        filename: Option<String>,
    ) -> Result<()> {
        let mut headers = record.headers.clone();
        headers.touch_after_previous(at, user);
        if let Some(f) = filename {
            headers.filename = Some(f);
        }
        let content_path = headers
            .content_path
            .clone()
            .unwrap_or_else(|| record.id.last_segment().to_string());
        self.add_binary(&content_path, headers, record.parent.clone(), binary, mime)
            .await?;
        if let Some(mut desc) = repo.record(&record.id.description()).await? {
            desc.headers.memento_created_date = Some(format_instant(at));
            self.put(&self.header_path(&desc.headers), desc.headers.to_json());
            self.resources.push(ResourcePlan {
                content_logical: desc.headers.content_path.clone(),
                headers: desc.headers,
                parent: None,
                rdf: desc.rdf,
            });
        }
        Ok(())
    }

    /// A new header for an unchanged resource (a new memento date, an Archival Group root
    /// touched by a change of one of its parts).
    fn rewrite_headers(&mut self, record: &ResourceRecord, headers: ResourceHeaders) {
        self.put(&self.header_path(&headers), headers.to_json());
        self.resources.push(ResourcePlan {
            content_logical: headers.content_path.clone(),
            headers,
            parent: record.parent.clone(),
            rdf: record.rdf.clone(),
        });
    }

    /// Turns a resource into a tombstone: header `deleted:true`, content out of the state.
    fn tombstone(&mut self, record: &ResourceRecord, at: Timestamp, user: &str) {
        let mut headers = record.headers.clone();
        headers.touch_after_previous(at, user);
        headers.deleted = true;
        headers.content_size = Some(-1);
        headers.digests = Some(Vec::new());
        if let Some(path) = headers.content_path.take() {
            self.changes.push(Change {
                logical_path: path,
                content: None,
            });
        }
        self.put(&self.header_path(&headers), headers.to_json());
        self.resources.push(ResourcePlan {
            headers,
            parent: record.parent.clone(),
            content_logical: None,
            rdf: None,
        });
    }

    fn put(&mut self, logical: &str, bytes: Vec<u8>) {
        self.changes.push(Change {
            logical_path: logical.to_string(),
            content: Some(Content::Bytes(bytes)),
        });
    }
}

impl ResourcePlan {
    fn to_record(&self, inventory: &arca_ocfl::Inventory, object_prefix: &str) -> ResourceRecord {
        let content_file = self.content_logical.as_ref().and_then(|l| {
            inventory
                .resolve_head(l)
                .map(|p| format!("{object_prefix}/{p}"))
        });
        ResourceRecord {
            id: FedoraId::from_internal(&self.headers.id).expect("headers carry valid ids"),
            parent: self.parent.clone(),
            ocfl_id: inventory.id.clone(),
            headers: self.headers.clone(),
            content_file,
            rdf: self.rdf.clone(),
            children_changed: None,
        }
    }
}

/// Deletes the uploaded files of plans that will not be staged.
pub(crate) fn discard_uploads(plans: Vec<ObjectPlan>) {
    for change in plans.into_iter().flat_map(|p| p.changes) {
        if let Some(Content::File { path, .. }) = change.content {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn new_headers(
    id: &FedoraId,
    parent: Option<&FedoraId>,
    model: InteractionModel,
    at: Timestamp,
    user: &str,
) -> ResourceHeaders {
    let mut h = ResourceHeaders::new(id.to_string(), parent.map(|p| p.to_string()), model);
    h.created_date = Some(format_instant(at));
    h.created_by = Some(user.to_string());
    h.object_root = !id.is_description() && !id.is_acl();
    h.touch(at, user);
    h
}

fn model_of(record: &ResourceRecord) -> Result<InteractionModel> {
    record.headers.model().ok_or_else(|| {
        Error::Storage(arca_ocfl::Error::Invalid(format!(
            "{} has an unknown interaction model {}",
            record.id, record.headers.interaction_model
        )))
    })
}

fn check_creatable(id: &FedoraId, model: InteractionModel, archival_group: bool) -> Result<()> {
    if archival_group && !model.is_container() {
        return Err(Error::constraint(
            Constraint::ArchivalGroup,
            format!("{id}: an Archival Group is a container, not <{model}>"),
        ));
    }
    if id.is_acl() {
        return Err(Error::constraint(
            Constraint::Unsupported,
            "access control lists (fcr:acl) are not supported yet",
        ));
    }
    if id.is_description() {
        return Err(Error::NotFound(id.base()));
    }
    match model {
        InteractionModel::BasicContainer
        | InteractionModel::DirectContainer
        | InteractionModel::IndirectContainer
        | InteractionModel::NonRdfSource => Ok(()),
        other => Err(Error::constraint(
            Constraint::InteractionModel,
            format!("resources with interaction model <{other}> cannot be created directly"),
        )),
    }
}

/// Checks the body of resource `id` against the interaction model it will live under.
fn prepare_content(
    id: &FedoraId,
    content: NewContent,
    model: InteractionModel,
) -> Result<NewContent> {
    match content {
        NewContent::Rdf { triples, lenient } if model.is_rdf_source() => {
            let triples = checked_triples(id, model, triples, lenient)?;
            subjects::check_subjects(id, &triples)?;
            let triples = membership::complete(id, model, triples)?;
            Ok(NewContent::Rdf { triples, lenient })
        }
        NewContent::Binary {
            binary,
            mime,
            filename,
            expected,
        } if model.is_binary() => {
            binary.verify(&expected)?;
            Ok(NewContent::Binary {
                binary,
                mime,
                filename,
                expected,
            })
        }
        _ => Err(Error::constraint(
            Constraint::InteractionModel,
            format!("the body does not fit a resource with interaction model <{model}>"),
        )),
    }
}

/// Checks a client's triples for resource `id` with interaction model `model`: drops the
/// `rdf:type` statements about the resource that agree with its interaction model (the
/// server states them itself; Fedora 6 accepts them, as in `<> a ldp:DirectContainer` sent
/// with the same `Link: rel="type"`), then refuses the other server-managed statements
/// (409), or drops them under lenient handling.
fn checked_triples(
    id: &FedoraId,
    model: InteractionModel,
    triples: Vec<Triple>,
    lenient: bool,
) -> Result<Vec<Triple>> {
    // A description's types are those of the binary it describes.
    let types = if model == InteractionModel::NonRdfSourceDescription {
        InteractionModel::NonRdfSource.rdf_types()
    } else {
        model.rdf_types()
    };
    let own = [id.base().iri(), id.iri()];
    let agrees = |t: &Triple| {
        t.predicate.as_str() == arca_rdf::vocab::RDF_TYPE
            && matches!(&t.subject, oxrdf::NamedOrBlankNode::NamedNode(s) if own.iter().any(|o| o == s.as_str()))
            && matches!(&t.object, oxrdf::Term::NamedNode(o) if types.contains(&o.as_str()))
    };
    let triples = triples.into_iter().filter(|t| !agrees(t)).collect();
    let (kept, mut rejected) = arca_rdf::split_server_managed(triples);
    let (kept, computed): (Vec<Triple>, Vec<Triple>) =
        if model == InteractionModel::NonRdfSourceDescription {
            kept.into_iter()
                .partition(|t| !described::is_computed(id, t))
        } else {
            (kept, Vec::new())
        };
    rejected.extend(computed);
    if !rejected.is_empty() && !lenient {
        return Err(Error::ServerManaged(rejected));
    }
    Ok(kept)
}

/// The catalog operations that forget resources entirely: their rows, mementos and derived
/// rows (a purge, or before an object's rows are derived again).
fn forget<'a>(ids: impl Iterator<Item = &'a FedoraId>) -> Vec<CatalogOp> {
    ids.flat_map(|id| {
        [
            CatalogOp::Remove(id.clone()),
            CatalogOp::ForgetMementos(id.clone()),
            CatalogOp::ForgetDerived(id.clone()),
        ]
    })
    .collect()
}

/// The header and content logical paths of resource `id` in object `ocfl_id` (§2.4 of
/// OCFL-FEDORA.md): `fcr-root` names for the object's root (a binary's content named
/// after its last segment, a container's `fcr-container.nt`), paths relative to the
/// root for an Archival Group's parts.
fn logical_paths(ocfl_id: &str, id: &FedoraId, binary: bool) -> (String, String) {
    let base = id.base();
    let rel = base
        .as_str()
        .strip_prefix(ocfl_id)
        .and_then(|r| r.strip_prefix('/'));
    let (header, stem) = match rel {
        Some(rel) if !rel.is_empty() => (format!(".fcrepo/{rel}"), rel.to_string()),
        _ => (
            ".fcrepo/fcr-root".to_string(),
            base.last_segment().to_string(),
        ),
    };
    if id.is_description() {
        return (
            format!("{header}~fcr-desc.json"),
            format!("{stem}~fcr-desc.nt"),
        );
    }
    // An ACL's files are named after its resource's (`binary`: the resource is a binary).
    let (header_end, container_file, binary_end) = if id.is_acl() {
        ("~fcr-acl.json", ACL_CONTAINER_CONTENT, "~fcr-acl.nt")
    } else {
        (".json", CONTAINER_CONTENT, "")
    };
    let content = match (binary, rel.is_some_and(|r| !r.is_empty())) {
        (true, _) => format!("{stem}{binary_end}"),
        (false, true) => format!("{stem}/{container_file}"),
        (false, false) => container_file.to_string(),
    };
    (format!("{header}{header_end}"), content)
}

/// The Archival Group a resource is or belongs to, if any.
fn archival_group_of(record: &ResourceRecord) -> Result<Option<FedoraId>> {
    Ok(match record.headers.archival_group_id.as_deref() {
        Some(ag) => Some(FedoraId::from_internal(ag)?),
        None if record.headers.archival_group => Some(record.id.clone()),
        None => None,
    })
}

/// The change-log entries of a purge: one per resource purged, as Fedora 6 reports them.
fn purge_log(affected: &[ResourceRecord], at: Timestamp, user: &str) -> Vec<CatalogOp> {
    affected
        .iter()
        .map(|r| log(&r.id, ChangeKind::Purge, at, user))
        .collect()
}

fn nanos(at: Timestamp) -> i64 {
    at.unix_timestamp_nanos() as i64
}
