//! Deriving catalog rows from storage: one object at a time (recovery) or the whole root
//! in parallel (rebuild, resumable).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use arca_catalog::{CatalogOp, ChangeKind, MementoRow, ResourceRecord};
use arca_model::{FedoraId, InteractionModel, ResourceHeaders};
use arca_ocfl::{walk_order, ObjectState, OcflRoot};
use rayon::prelude::*;

use crate::{Error, Repository, Result};

/// Meta key holding the rebuild state.
pub(crate) const REBUILD_STATE: &str = "rebuild.state";
/// Meta key holding the last object directory a rebuild committed.
const REBUILD_CURSOR: &str = "rebuild.cursor";
/// Rebuild state: in progress (resumable).
pub(crate) const RUNNING: &str = "running";
/// Rebuild state: done.
pub(crate) const COMPLETE: &str = "complete";
/// Objects read and committed per catalog transaction during a rebuild: the larger, the
/// fewer times a B-tree page is written again (a 200,000-object root: 2,048 wrote a quarter
/// less than 512).
const CHUNK: usize = 2048;
/// Threads listing and reading storage during a rebuild, whatever the cores: reading a cold
/// root waits on the disk, one directory or small file at a time per thread, so the depth of
/// the disk's queue is what sets the pace.
const READ_THREADS: usize = 32;
/// Channel depth of the listing: batches of first-level directories listed ahead of the
/// reading (each batch, [`READ_THREADS`] directories).
const LISTED_AHEAD: usize = 2;

/// The objects of the storage root in [`walk_order`], for a rebuild: its first-level
/// directories are listed a batch at a time on the rebuild's thread pool, in the
/// background, while the objects already listed are read. (A cold walk of a million
/// objects' layout reads about three million directories: minutes on its own.)
struct ObjectListing {
    batches: tokio::sync::mpsc::Receiver<Result<Vec<String>>>,
    /// Listed, not yet handed out.
    listed: std::collections::VecDeque<String>,
    /// The channel closed: everything was listed (or the listing failed, said before).
    finished: bool,
    groups: usize,
    groups_listed: Arc<AtomicUsize>,
    found: Arc<AtomicU64>,
}

impl ObjectListing {
    /// Starts listing `groups` (the root's [`object_groups`](OcflRoot::object_groups)) in
    /// order on `pool`; with `after`, only the objects after that one.
    fn start(
        ocfl: Arc<OcflRoot>,
        pool: Arc<rayon::ThreadPool>,
        mut groups: Vec<String>,
        after: Option<String>,
    ) -> Self {
        if let Some(after) = &after {
            let first = after.split('/').next().unwrap_or_default();
            groups.retain(|g| walk_order(g, first).is_ge());
        }
        let (sender, batches) = tokio::sync::mpsc::channel(LISTED_AHEAD);
        let groups_listed = Arc::new(AtomicUsize::new(0));
        let found = Arc::new(AtomicU64::new(0));
        let listing = Self {
            batches,
            listed: Default::default(),
            finished: false,
            groups: groups.len(),
            groups_listed: groups_listed.clone(),
            found: found.clone(),
        };
        tokio::task::spawn_blocking(move || {
            pool.install(|| {
                for batch in groups.chunks(READ_THREADS) {
                    let objects = batch
                        .par_iter()
                        .map(|g| ocfl.objects_in_group(g))
                        .collect::<arca_ocfl::Result<Vec<_>>>()
                        .map(|lists| {
                            lists
                                .into_iter()
                                .flatten()
                                .filter(|o| after.as_ref().is_none_or(|a| walk_order(o, a).is_gt()))
                                .collect::<Vec<_>>()
                        })
                        .map_err(Error::from);
                    let failed = objects.is_err();
                    if let Ok(objects) = &objects {
                        found.fetch_add(objects.len() as u64, Ordering::Relaxed);
                    }
                    groups_listed.fetch_add(batch.len(), Ordering::Relaxed);
                    // A closed channel: the rebuild stopped.
                    if sender.blocking_send(objects).is_err() || failed {
                        return;
                    }
                }
            })
        });
        listing
    }

    /// The next `size` objects listed (fewer at the end), waiting for the listing; `None`
    /// when all were handed out.
    async fn next_chunk(&mut self, size: usize) -> Result<Option<Vec<String>>> {
        while self.listed.len() < size && !self.finished {
            match self.batches.recv().await {
                Some(batch) => self.listed.extend(batch?),
                None => self.finished = true,
            }
        }
        if self.listed.is_empty() {
            return Ok(None);
        }
        let n = size.min(self.listed.len());
        Ok(Some(self.listed.drain(..n).collect()))
    }

    /// The objects to rebuild: those found, once the listing is done; until then
    /// extrapolated from the share of directories listed.
    fn total_estimate(&self) -> u64 {
        let found = self.found.load(Ordering::Relaxed);
        let listed = self.groups_listed.load(Ordering::Relaxed);
        if listed >= self.groups || listed == 0 {
            return found;
        }
        found * self.groups as u64 / listed as u64
    }
}

/// What the catalog holds about one object, derived from storage.
#[derive(Debug, Default)]
pub struct ObjectRows {
    /// Every resource of the head state.
    pub records: Vec<ResourceRecord>,
    /// Every memento of those resources (and of resources that are tombstones now).
    pub mementos: Vec<MementoRow>,
}

/// The catalog rows of an object: the records of every resource in its head state, read
/// from its `.fcrepo/*.json` headers (and, for live RDF sources, their N-Triples content),
/// and its mementos: every immutable version in which a resource's header changed, as
/// Fedora 6 lists them (the mutable HEAD is not a memento; tombstone headers are not
/// mementos). Each distinct header file is read once.
pub fn rows_from_object(ocfl: &OcflRoot, object: &ObjectState) -> Result<ObjectRows> {
    let inventory = &object.inventory;
    let is_header = |p: &str| p.starts_with(".fcrepo/") && p.ends_with(".json");
    let mut headers_by_digest: HashMap<String, ResourceHeaders> = HashMap::new();
    let mut read_header = |digest: &str| -> Result<ResourceHeaders> {
        if let Some(h) = headers_by_digest.get(digest) {
            return Ok(h.clone());
        }
        let rel = inventory.content_path_for(digest).ok_or_else(|| {
            Error::Storage(arca_ocfl::Error::Invalid(format!(
                "{}: no manifest entry for {digest}",
                object.prefix
            )))
        })?;
        let file = object.key(rel);
        let bytes = ocfl.read_file(&file)?;
        let headers = ResourceHeaders::from_json(&bytes).map_err(|e| {
            Error::Storage(arca_ocfl::Error::Invalid(format!(
                "{file}: bad resource header: {e}"
            )))
        })?;
        // An object holds its own resource and those below it (descriptions, ACLs, the
        // members of an Archival Group), never another's: a header naming one outside
        // would take over that resource's rows (an imported object, a tampered root).
        if !is_within(&headers.id, &inventory.id) {
            return Err(Error::Storage(arca_ocfl::Error::Invalid(format!(
                "{file}: header of {} in object {}, outside it",
                headers.id, inventory.id
            ))));
        }
        headers_by_digest.insert(digest.to_string(), headers.clone());
        Ok(headers)
    };
    let mut rows = ObjectRows::default();
    for change in inventory.path_changes(is_header, object.mutable_head) {
        let headers = read_header(&change.digest)?;
        if headers.deleted {
            continue;
        }
        let created = &inventory.versions[&change.version].created;
        let datetime = arca_model::parse_instant(created)
            .ok_or_else(|| {
                Error::Storage(arca_ocfl::Error::Invalid(format!(
                    "{}: version {} has an invalid created date {created:?}",
                    object.prefix, change.version
                )))
            })?
            .unix_timestamp();
        let content_file = headers
            .content_path
            .as_deref()
            .and_then(|p| inventory.resolve_in(change.version, p))
            .map(|p| object.key(p));
        let header_file = inventory
            .content_path_for(&change.digest)
            .map(|p| object.key(p))
            .unwrap_or_default();
        rows.mementos.push(MementoRow {
            id: FedoraId::from_internal(&headers.id)?,
            datetime,
            version: change.version.to_string(),
            header_file,
            content_file,
        });
    }
    for (logical, digest) in inventory.head_state() {
        if !is_header(&logical) {
            continue;
        }
        let headers = read_header(&digest)?;
        let id = FedoraId::from_internal(&headers.id)?;
        let model = headers.model();
        let content_rel = headers
            .content_path
            .as_deref()
            .and_then(|p| inventory.resolve_head(p))
            .map(|p| object.key(p));
        let rdf = match (&content_rel, model) {
            (Some(key), Some(m)) if m.is_rdf_source() && !headers.deleted => {
                Some(ocfl.read_file(key)?)
            }
            _ => None,
        };
        let contained = !id.is_root()
            && !matches!(
                model,
                Some(InteractionModel::NonRdfSourceDescription | InteractionModel::Acl)
            );
        let parent = if contained {
            match &headers.parent {
                Some(p) => Some(FedoraId::from_internal(p)?),
                None => {
                    return Err(Error::Storage(arca_ocfl::Error::Invalid(format!(
                        "{}: header {logical} of {id} has no parent",
                        object.prefix
                    ))))
                }
            }
        } else {
            None
        };
        rows.records.push(ResourceRecord {
            id,
            parent,
            ocfl_id: inventory.id.clone(),
            content_file: content_rel,
            rdf,
            headers,
            children_changed: None,
        });
    }
    Ok(rows)
}

/// An object's rebuild ops and the containers whose children it changed (and when).
type ChunkRows = (Vec<CatalogOp>, Vec<(FedoraId, i64)>);

/// The catalog ops that load an object's rows: its mementos, then per resource its
/// references (parsed from its triples) and its record.
fn object_ops(rows: ObjectRows) -> Result<ChunkRows> {
    let ObjectRows { records, mementos } = rows;
    let containment = records.iter().filter_map(containment_change).collect();
    let mut ops: Vec<CatalogOp> = mementos.into_iter().map(CatalogOp::PutMemento).collect();
    for r in records {
        if let Some(rdf) = &r.rdf {
            ops.push(CatalogOp::ReplaceReferences {
                source: r.id.clone(),
                rows: crate::references::references(&r.id, &arca_rdf::parse_ntriples(rdf)?),
            });
        }
        ops.push(CatalogOp::Put(r));
    }
    Ok((ops, containment))
}

/// Whether resource id `id` is object id `object` or below it.
fn is_within(id: &str, object: &str) -> bool {
    object == "info:fedora"
        || id == object
        || id
            .strip_prefix(object)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// A change-log entry for every resource whose row differs between `before` and
/// `after` (the rows of one object): created, updated, deleted (a new tombstone) or
/// purged, by the user its header names.
fn changes_between(before: &[ResourceRecord], after: &[ResourceRecord]) -> Vec<CatalogOp> {
    let at = arca_model::now();
    let old: HashMap<&FedoraId, &ResourceRecord> = before.iter().map(|r| (&r.id, r)).collect();
    let mut ops = Vec::new();
    for r in after {
        let user = r.headers.last_modified_by.as_deref().unwrap_or_default();
        let kind = match old.get(&r.id) {
            None if r.is_deleted() => continue,
            None => ChangeKind::Create,
            Some(o) if o.headers == r.headers && o.rdf == r.rdf => continue,
            Some(o) if r.is_deleted() && !o.is_deleted() => ChangeKind::Delete,
            Some(_) => ChangeKind::Update,
        };
        ops.push(crate::changes::log(&r.id, kind, at, user));
    }
    let now: std::collections::HashSet<&FedoraId> = after.iter().map(|r| &r.id).collect();
    for r in before.iter().filter(|r| !now.contains(&r.id)) {
        ops.push(crate::changes::log(&r.id, ChangeKind::Purge, at, ""));
    }
    ops
}

/// When a contained resource last changed its parent's list of children, as the write
/// path records it (`CatalogOp::ChildrenChanged`): its creation, or its deletion.
fn containment_change(r: &ResourceRecord) -> Option<(FedoraId, i64)> {
    let parent = r.parent.clone()?;
    let date = if r.headers.deleted {
        r.headers.last_modified_date.as_deref()
    } else {
        r.headers.created_date.as_deref()
    }?;
    let at = arca_model::parse_instant(date)?.unix_timestamp_nanos();
    Some((parent, at as i64))
}

/// Outcome of a rebuild.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RebuildStats {
    /// Objects indexed.
    pub objects: u64,
    /// Resources indexed.
    pub resources: u64,
    /// Objects that could not be read (logged; see the server log).
    pub failed: u64,
}

impl Repository {
    /// Replaces the catalog rows of one object by what storage holds now (none if the
    /// object is gone).
    pub async fn reindex_object(&self, ocfl_id: &str) -> Result<()> {
        let ops = self.reindex_ops(ocfl_id, false).await?;
        self.catalog.apply(ops).await?;
        Ok(())
    }

    /// The catalog writes that replace object `ocfl_id`'s rows by what storage holds now;
    /// with `logged`, also a change-log entry for every resource whose row differs:
    /// created, updated, deleted (a new tombstone) or purged (gone from storage), as a
    /// change recovered from storage is logged.
    pub(crate) async fn reindex_ops(&self, ocfl_id: &str, logged: bool) -> Result<Vec<CatalogOp>> {
        self.settled(ocfl_id).await?;
        let before = self.catalog.in_object(ocfl_id).await?;
        let mut ops = crate::forget(before.iter().map(|r| &r.id));
        let rows = {
            let (ocfl, id) = (self.ocfl.clone(), ocfl_id.to_string());
            tokio::task::spawn_blocking(move || match ocfl.read_object(&id)? {
                Some(object) => rows_from_object(&ocfl, &object),
                None => Ok(ObjectRows::default()),
            })
            .await
            .map_err(|e| Error::Io(std::io::Error::other(e)))??
        };
        let derived = self.derived_ops(&rows.records, true).await?;
        if logged {
            ops.extend(changes_between(&before, &rows.records));
        }
        // Mementos of resources that are tombstones or gone from the head state too.
        let historic: std::collections::BTreeSet<&FedoraId> =
            rows.mementos.iter().map(|m| &m.id).collect();
        ops.extend(
            historic
                .into_iter()
                .map(|id| CatalogOp::ForgetMementos(id.clone())),
        );
        ops.extend(rows.records.into_iter().map(CatalogOp::Put));
        ops.extend(rows.mementos.into_iter().map(CatalogOp::PutMemento));
        ops.extend(derived);
        Ok(ops)
    }

    /// Starts reading the objects of `chunk` (in parallel, off the async threads): for each,
    /// its catalog ops and the containers whose children it changed, or why it failed.
    fn read_chunk(
        &self,
        readers: &Arc<rayon::ThreadPool>,
        chunk: Vec<String>,
    ) -> tokio::task::JoinHandle<Vec<(String, Result<ChunkRows>)>> {
        let ocfl = self.ocfl.clone();
        let readers = readers.clone();
        tokio::task::spawn_blocking(move || {
            readers.install(|| {
                chunk
                    .par_iter()
                    .map(|prefix| {
                        let rows = ocfl
                            .read_object_at(prefix)
                            .map_err(Error::from)
                            .and_then(|o| match o {
                                Some(o) => rows_from_object(&ocfl, &o),
                                None => Ok(ObjectRows::default()),
                            })
                            .and_then(object_ops);
                        (prefix.clone(), rows)
                    })
                    .collect()
            })
        })
    }

    /// Recreates the catalog from storage alone, reading objects in parallel and
    /// committing in chunks. With `resume`, continues after the last committed chunk of an
    /// interrupted rebuild instead of starting over. `progress(done, total)` is called after
    /// every chunk.
    pub async fn rebuild(
        &self,
        resume: bool,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<RebuildStats> {
        let readers = Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(READ_THREADS)
                .thread_name(|i| format!("arca-rebuild-{i}"))
                .build()
                .map_err(|e| Error::Io(std::io::Error::other(e)))?,
        );
        let groups = {
            let ocfl = self.ocfl.clone();
            tokio::task::spawn_blocking(move || ocfl.object_groups())
                .await
                .map_err(|e| Error::Io(std::io::Error::other(e)))??
        };
        let cursor = if resume {
            self.catalog.meta(REBUILD_CURSOR).await?
        } else {
            None
        };
        if cursor.is_none() {
            self.catalog.clear().await?;
        }
        self.catalog.set_meta(REBUILD_STATE, RUNNING).await?;
        let mut listing = ObjectListing::start(self.ocfl.clone(), readers.clone(), groups, cursor);
        let mut stats = RebuildStats::default();
        // Containers' last change of children, which only the catalog records: derived
        // again from the children's headers. (A resumed rebuild sees only the objects
        // after its cursor, so it can only under-estimate; a purged child leaves no trace.)
        let mut children_changed: HashMap<FedoraId, i64> = HashMap::new();
        self.catalog.bulk_load(true).await?;
        // Storage is read a chunk ahead: while one chunk is committed, the next is read
        // (and the root listed further meanwhile).
        let mut reading = listing
            .next_chunk(CHUNK)
            .await?
            .map(|c| self.read_chunk(&readers, c));
        while let Some(read) = reading {
            let read = read
                .await
                .map_err(|e| Error::Io(std::io::Error::other(e)))?;
            reading = listing
                .next_chunk(CHUNK)
                .await?
                .map(|c| self.read_chunk(&readers, c));
            let mut ops = Vec::new();
            let mut last = None;
            for (dir, result) in read {
                match result {
                    Ok((object_ops, containment)) => {
                        stats.objects += 1;
                        stats.resources += object_ops
                            .iter()
                            .filter(|op| matches!(op, CatalogOp::Put(_)))
                            .count() as u64;
                        for (parent, at) in containment {
                            let e = children_changed.entry(parent).or_insert(at);
                            *e = (*e).max(at);
                        }
                        ops.extend(object_ops);
                    }
                    Err(e) => {
                        stats.failed += 1;
                        tracing::error!(object = %dir, error = %e, "object could not be indexed");
                    }
                }
                last = Some(dir);
            }
            self.catalog.apply(ops).await?;
            if let Some(last) = last {
                self.catalog.set_meta(REBUILD_CURSOR, &last).await?;
            }
            progress(stats.objects + stats.failed, listing.total_estimate());
        }
        // The loaded rows in place before what reads or updates them.
        self.catalog.bulk_load(false).await?;
        let ops: Vec<CatalogOp> = children_changed
            .into_iter()
            .map(|(parent, at)| CatalogOp::ChildrenChanged(parent, at))
            .collect();
        self.catalog.apply(ops).await?;
        self.recompute_all_membership().await?;
        let regenerated = self.catalog.regenerate_changes().await?;
        if regenerated > 0 {
            tracing::info!(
                entries = regenerated,
                "the change log was empty and was regenerated from the versions in storage"
            );
        }
        self.catalog.set_meta(REBUILD_STATE, COMPLETE).await?;
        tracing::info!(
            objects = stats.objects,
            resources = stats.resources,
            failed = stats.failed,
            "catalog rebuilt from storage"
        );
        Ok(stats)
    }
}
