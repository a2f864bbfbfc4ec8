//! The write path of a storage root in a store without a journal (S3), shared by several
//! nodes: a change is written into storage before the catalog records it and the client
//! is answered, so a 2xx means every file of it is stored.
//!
//! 1. The catalog records the change as under way ([`PendingWrite`], one row per object,
//!    with the object's pending record: its commit point and what follows, and what undoes
//!    the rest): durable before the first file is written.
//! 2. Every file before the commit point is written (content, headers, the version's
//!    inventory); nothing is visible yet.
//! 3. A change of several objects is then decided in the catalog (all commit points are
//!    to be written), so that all or none take effect.
//! 4. The commit points (the root inventory replaced only if it is still the one the change
//!    was planned from) and what follows them.
//! 5. The catalog records the change and forgets the pending rows in one transaction.
//!
//! A node that stops in the middle leaves pending rows behind. Whoever next holds such an
//! object's lock — the next writer of the object (it recovers before it plans), the
//! background recovery of any node ([`Repository::spawn_recovery`]), or a node starting —
//! finishes the change if it took effect (decided, or its commit point holds what the change
//! put there) or removes what it wrote, re-derives the object's catalog rows from storage
//! with change-log entries for what differs, and forgets the row. The object lock is held by
//! a writer from before step 1 to after step 5, so a lock that can be taken means the
//! change's writer is gone.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arca_catalog::{CatalogOp, ObjectLockGuard, PendingWrite, ResourceRecord, WriteSnapshot};
use arca_ocfl::{Recovered, Staged};
use arca_storage::StoreError;

use crate::plan::Staging;
use crate::{discard_uploads, Error, ObjectPlan, Repository, Result, VersionInfo};

/// How often the background recovery looks for changes stopped nodes left.
const RECOVERY_INTERVAL: Duration = Duration::from_secs(10);
/// How old a change under way must be before the background recovery looks at it (a live
/// writer holds its objects' locks anyway; this only spares it the lock attempts).
const RECOVERY_MIN_AGE: Duration = Duration::from_secs(30);
/// Changes under way looked at per round.
const RECOVERY_BATCH: usize = 256;

/// Fault injection for tests: a change waits this many milliseconds after its files
/// before the commit points, and again after the commit points before the catalog records
/// it, so that a test can kill the server in either window. Never set in use.
pub(crate) const DELAY_ENV: &str = "ARCA_TEST_DIRECT_DELAY_MS";

/// The state of the direct write path: whether its background recovery should stop.
pub(crate) struct Direct {
    stopped: Arc<AtomicBool>,
    /// See [`DELAY_ENV`].
    delay: Duration,
}

impl Default for Direct {
    fn default() -> Self {
        let delay = std::env::var(DELAY_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
            .unwrap_or_default();
        Self {
            stopped: Arc::default(),
            delay,
        }
    }
}

impl Direct {
    /// Stops the background recovery.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

/// Now, in milliseconds since the epoch.
pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A new operation's id (of its rows in the catalog's changes under way).
pub(crate) fn new_op() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Runs blocking storage work on the blocking pool.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Io(std::io::Error::other(e)))?
}

impl Repository {
    /// [`execute`](Repository::execute) on a store without a journal (see the module
    /// documentation). The caller holds the locks of every object of `plans`, or hands
    /// them over as `locks`, which then go with the catalog's record of the change.
    pub(crate) async fn execute_direct(
        &self,
        direct: &Direct,
        plans: Vec<ObjectPlan>,
        extra: Vec<CatalogOp>,
        info: VersionInfo,
        created: arca_model::Timestamp,
        locks: Option<ObjectLockGuard>,
    ) -> Result<Vec<ResourceRecord>> {
        // A change a stopped node left on one of these objects goes first; a plan made
        // before it was finished may be stale, and is not used. (Plans of existing objects
        // usually read them after recovering them already.)
        let objects: Vec<String> = plans
            .iter()
            .filter(|p| !p.recovered)
            .map(|p| p.ocfl_id.clone())
            .collect();
        if self.recover_objects(&objects).await? {
            discard_uploads(plans);
            return Err(Error::Unavailable(
                "an interrupted earlier change of the same object was just completed or undone; \
                 nothing of this request was stored: send it again"
                    .into(),
            ));
        }
        let staging = self.stage_all(plans, &info)?;
        // What the catalog will record, worked out before storage changes (the catalog is
        // read for it): once a commit point is passed, only recording it remains.
        let (records, mementos) = staging.records(created);
        let ops = match self.catalog_ops(&records, mementos, extra).await {
            Ok(ops) => ops,
            Err(e) => {
                self.abort_all(staging);
                return Err(e);
            }
        };
        let op = new_op();
        let begin: Vec<CatalogOp> = Self::pending_rows(&staging, &op)
            .into_iter()
            .map(CatalogOp::BeginWrite)
            .collect();
        if let Err(e) = self.catalog.apply(begin).await {
            self.abort_all(staging);
            return Err(e.into());
        }
        self.write_begun(direct, staging, records, ops, op, locks)
            .await
    }

    /// The rows of a staged change under way of operation `op`, one per object (see the
    /// module documentation, step 1), recorded as started now.
    pub(crate) fn pending_rows(staging: &Staging, op: &str) -> Vec<PendingWrite> {
        let started = now_millis();
        staging
            .staged
            .iter()
            .map(|(s, _)| PendingWrite {
                op: op.to_string(),
                object: arca_ocfl::OcflRoot::staged_object_id(s).to_string(),
                started,
                decided: false,
                record: arca_ocfl::pending_record(s),
            })
            .collect()
    }

    /// Steps 2 to 5 of a change whose pending rows (of operation `op`) are recorded: its
    /// files, commit points and the catalog's record `ops` of `records`. The caller holds
    /// the locks of every object, or hands them over as `locks`.
    pub(crate) async fn write_begun(
        &self,
        direct: &Direct,
        staging: Staging,
        records: Vec<ResourceRecord>,
        mut ops: Vec<CatalogOp>,
        op: String,
        locks: Option<ObjectLockGuard>,
    ) -> Result<Vec<ResourceRecord>> {
        let head_commits = staging.head_commits;
        let staged: Arc<Vec<Staged>> =
            Arc::new(staging.staged.into_iter().map(|(s, _)| s).collect());
        let forget = || CatalogOp::FinishWrite {
            op: op.clone(),
            object: None,
        };

        // Every file before the commit points, once no object moved on since it was
        // planned: a new object's place claimed by a conditional write of its declaration,
        // an existing object checked. A refusal writes nothing of its object, so only the
        // claims before it are undone; a claim whose outcome is unknown leaves the change
        // to recovery, which never removes what another object holds.
        let claimed = {
            let (ocfl, staged) = (self.ocfl.clone(), staged.clone());
            blocking(move || {
                for (i, s) in staged.iter().enumerate() {
                    if let Err(e) = ocfl.claim(s) {
                        let unknown =
                            s.creates_object() && !matches!(e, arca_ocfl::Error::AlreadyExists(_));
                        let undone = !unknown && undo_all(&ocfl, &staged[..i]);
                        return Ok(Err((e, undone)));
                    }
                }
                Ok(Ok(()))
            })
            .await?
        };
        if let Err((e, undone)) = claimed {
            if undone {
                self.forget_or_leave(forget(), None).await;
            }
            return Err(e.into());
        }
        let prepared = {
            let (ocfl, staged) = (self.ocfl.clone(), staged.clone());
            blocking(move || {
                for (i, s) in staged.iter().enumerate() {
                    if let Err(e) = ocfl.prepare_claimed(s) {
                        return Ok(Err((e, undo_all(&ocfl, &staged[..=i]))));
                    }
                }
                Ok(Ok(()))
            })
            .await?
        };
        if let Err((e, undone)) = prepared {
            // What could not be removed stays named by the pending rows, for recovery.
            if undone {
                self.forget_or_leave(forget(), None).await;
            }
            return Err(e.into());
        }
        if !direct.delay.is_zero() {
            tokio::time::sleep(direct.delay).await;
        }
        if staged.len() > 1 {
            // All or none: from here on the change is finished, whatever happens. (A failure
            // here may hide a decision that was made: recovery reads the catalog.)
            self.catalog
                .apply(vec![CatalogOp::DecideWrite(op.clone())])
                .await?;
        }
        // The commit points and what follows them.
        let committed = {
            let (ocfl, staged) = (self.ocfl.clone(), staged.clone());
            tokio::task::spawn_blocking(move || {
                let mut unfinished = None;
                for (i, s) in staged.iter().enumerate() {
                    match ocfl.commit(s) {
                        Ok(()) => {}
                        Err(e @ arca_ocfl::Error::Unfinished { .. }) => {
                            unfinished.get_or_insert(e);
                        }
                        // The commit point of a change of one object refused its
                        // condition: nothing took effect.
                        Err(e @ arca_ocfl::Error::Store(StoreError::PreconditionFailed { .. }))
                            if i == 0 && staged.len() == 1 =>
                        {
                            return Err(Failure::Refused(e, undo_all(&ocfl, &staged)));
                        }
                        Err(e) => return Err(Failure::Unknown(e)),
                    }
                }
                Ok(unfinished)
            })
            .await
            .map_err(|e| Error::Io(std::io::Error::other(e)))?
        };
        let unfinished = match committed {
            Ok(unfinished) => unfinished,
            Err(Failure::Refused(e, undone)) => {
                if undone {
                    self.forget_or_leave(forget(), None).await;
                }
                return Err(e.into());
            }
            Err(Failure::Unknown(e)) => {
                // Decided, or a commit point whose outcome is unknown: the pending rows
                // stay, and recovery finishes or undoes the change once storage answers.
                tracing::warn!(op, error = %e, "storage failed at a commit point; recovery will finish or undo the change");
                return Err(Error::Unavailable(format!(
                    "storage failed while the change was being committed; nothing was recorded, \
                     and it will be completed or undone when storage answers again: {e}"
                )));
            }
        };
        if !direct.delay.is_zero() {
            tokio::time::sleep(direct.delay).await;
        }
        if unfinished.is_none() {
            ops.push(forget());
        }
        match locks {
            // Nothing left to do under the locks: they go with the record of the change.
            Some(locks) if unfinished.is_none() && head_commits.is_empty() => {
                self.catalog.apply_and_unlock(ops, locks).await?
            }
            _ => self.catalog.apply(ops).await?,
        };
        if let Some(e) = unfinished {
            // Recorded, but a file after a commit point is missing: recovery writes it.
            self.written(records, head_commits).await?;
            return Err(Error::Unavailable(format!(
                "the change is stored and recorded, but storage failed before every file after \
                 its commit point was written; it will be completed: {e}"
            )));
        }
        self.written(records, head_commits).await
    }

    /// Forgets the pending rows of a change that took no effect (and lets go of `locks`
    /// with them, if given); if the catalog cannot be reached, they stay for recovery,
    /// which finds nothing to finish.
    pub(crate) async fn forget_or_leave(&self, forget: CatalogOp, locks: Option<ObjectLockGuard>) {
        let forgotten = match locks {
            Some(locks) => self.catalog.apply_and_unlock(vec![forget], locks).await,
            None => self.catalog.apply(vec![forget]).await,
        };
        if let Err(e) = forgotten {
            tracing::warn!(error = %e, "could not forget a change that took no effect; recovery will");
        }
    }

    /// Purges objects from a store without a journal: recorded as under way first (a
    /// purge is always finished once begun), then taken out of storage, then forgotten
    /// with `ops` in one catalog transaction.
    pub(crate) async fn purge_direct(
        &self,
        object_ids: &[&str],
        mut ops: Vec<CatalogOp>,
    ) -> Result<()> {
        let op = new_op();
        let started = now_millis();
        let begin = object_ids
            .iter()
            .map(|id| {
                CatalogOp::BeginWrite(PendingWrite {
                    op: op.clone(),
                    object: id.to_string(),
                    started,
                    decided: true,
                    record: arca_ocfl::pending_purge_record(id),
                })
            })
            .collect();
        self.catalog.apply(begin).await?;
        self.purge_objects(object_ids).await?;
        ops.push(CatalogOp::FinishWrite { op, object: None });
        self.catalog.apply(ops).await?;
        Ok(())
    }

    /// Whether a new plan may skip the recovery of its objects (`ObjectPlan::recovered`),
    /// given what the write read under their locks: without a journal, the changes under
    /// way it found are finished or undone now, before the plan is made; with a journal
    /// there is nothing to recover.
    pub(crate) async fn recovered_in(&self, snapshot: &WriteSnapshot) -> Result<bool> {
        if !matches!(self.durability, crate::Durability::Direct(_)) {
            return Ok(false);
        }
        let mut objects: Vec<String> = snapshot.pending.iter().map(|p| p.object.clone()).collect();
        objects.dedup();
        if !objects.is_empty() {
            self.recover_objects(&objects).await?;
        }
        Ok(true)
    }

    /// Finishes or undoes the changes under way that stopped nodes left on `objects`,
    /// whose locks the caller holds; returns whether there was any.
    pub(crate) async fn recover_objects(&self, objects: &[String]) -> Result<bool> {
        let mut any = false;
        for object in objects {
            for pending in self.catalog.pending_writes_of(object).await? {
                self.recover_one(&pending).await?;
                any = true;
            }
        }
        Ok(any)
    }

    /// Recovers every change under way older than `min_age` whose objects are free (its
    /// writer is gone): all objects of an operation together. Returns how many objects
    /// were recovered.
    pub(crate) async fn recover_pending(&self, min_age: Duration) -> Result<usize> {
        let before = now_millis() - min_age.as_millis() as i64;
        let pending = self.catalog.pending_writes(before, RECOVERY_BATCH).await?;
        let mut by_op: BTreeMap<String, Vec<PendingWrite>> = BTreeMap::new();
        for p in pending {
            by_op.entry(p.op.clone()).or_default().push(p);
        }
        let mut recovered = 0;
        for (op, writes) in by_op {
            let objects: Vec<&str> = writes.iter().map(|w| w.object.as_str()).collect();
            let Some(_locks) = self.catalog.try_lock_objects(&objects).await? else {
                continue;
            };
            // Read again under the locks: the writer may have finished meanwhile.
            for object in &objects {
                for pending in self.catalog.pending_writes_of(object).await? {
                    if pending.op == op {
                        self.recover_one(&pending).await?;
                        recovered += 1;
                    }
                }
            }
        }
        Ok(recovered)
    }

    /// Finishes or undoes one object's change under way (the caller holds the object's
    /// lock), then re-derives the object's catalog rows from storage, logs what changed,
    /// and forgets the pending row, in one catalog transaction.
    async fn recover_one(&self, pending: &PendingWrite) -> Result<()> {
        let outcome = {
            let (ocfl, record, decided) =
                (self.ocfl.clone(), pending.record.clone(), pending.decided);
            blocking(move || Ok(ocfl.recover(&record, decided)?)).await?
        };
        tracing::warn!(
            object = pending.object,
            op = pending.op,
            outcome = ?outcome,
            "recovered a change a stopped node left under way"
        );
        let mut ops = match outcome {
            Recovered::Finished => self.reindex_ops(&pending.object, true).await?,
            Recovered::Undone => Vec::new(),
        };
        ops.push(CatalogOp::FinishWrite {
            op: pending.op.clone(),
            object: Some(pending.object.clone()),
        });
        let ids: Vec<_> = ops
            .iter()
            .filter_map(|op| match op {
                CatalogOp::Put(r) => Some(r.id.clone()),
                CatalogOp::Remove(id) => Some(id.clone()),
                _ => None,
            })
            .collect();
        self.catalog.apply(ops).await?;
        self.changed(&ids);
        Ok(())
    }

    /// Starts the background recovery of changes that nodes which stopped (or died) left
    /// under way in a store without a journal: every few seconds, those older than half a
    /// minute whose objects no live writer holds, and the transaction commits no live node
    /// runs. Does nothing on a local root (its journal is replayed at start). Stops with
    /// [`shutdown`](Repository::shutdown).
    pub fn spawn_recovery(self: &Arc<Self>) {
        let crate::Durability::Direct(direct) = &self.durability else {
            return;
        };
        let stopped = direct.stopped.clone();
        let repo = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(RECOVERY_INTERVAL).await;
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                let Some(repo) = repo.upgrade() else {
                    return;
                };
                match repo.recover_pending(RECOVERY_MIN_AGE).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(
                        objects = n,
                        "recovered changes that stopped nodes left under way"
                    ),
                    Err(e) => {
                        tracing::warn!(error = %e, "recovering changes left under way failed; trying again later")
                    }
                }
                // Transaction commits whose node died: failed before their decision,
                // completed after it (a commit a live node runs holds its role).
                if let Err(e) = repo.finish_interrupted_commits().await {
                    tracing::warn!(error = %e, "ending interrupted transaction commits failed; trying again later")
                }
            }
        });
    }
}

/// How the commit points of a change failed.
enum Failure {
    /// The commit point of a change of one object refused its condition: nothing took
    /// effect; with whether what was written could be removed.
    Refused(arca_ocfl::Error, bool),
    /// After the change was decided, or at a commit point whose outcome is unknown.
    Unknown(arca_ocfl::Error),
}

/// Removes what `staged` wrote before their commit points; whether all of it went.
fn undo_all(ocfl: &arca_ocfl::OcflRoot, staged: &[Staged]) -> bool {
    // Every one is tried, whatever the others do.
    staged.iter().filter(|s| ocfl.undo(s).is_err()).count() == 0
}
