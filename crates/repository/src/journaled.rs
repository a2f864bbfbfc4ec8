//! The write path of a storage root on the local file system: a redo journal makes a
//! change durable (one `fdatasync` shared by every write waiting at that moment), the
//! catalog records it, the client is answered, and the publisher writes its files into
//! the root behind the answer; a checkpoint every few seconds makes the root durable with
//! one `syncfs` and recycles the journal. After a crash the journal is replayed.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arca_catalog::{CatalogOp, ResourceRecord};
use arca_ocfl::{OcflRoot, Staged};
use arca_storage::{GroupCommit, Journal, JournalStats, SyncStats};

use crate::publisher::Publisher;
use crate::{discard_uploads, Error, ObjectPlan, Repository, Result, VersionInfo};

/// How long shutdown waits for acknowledged changes to be published.
const SHUTDOWN_PUBLISH_WAIT: Duration = Duration::from_secs(30);

/// How often the background checkpoint makes the root durable and trims the journal.
const CHECKPOINT_INTERVAL: Duration = Duration::from_millis(5000);

/// The journal, its checkpoints and the publisher of one local root.
pub(crate) struct Journaled {
    journal: Arc<Journal>,
    commit: Arc<GroupCommit>,
    pub(crate) publisher: Publisher,
    stop_checkpoints: Arc<AtomicBool>,
}

impl Journaled {
    /// Opens the journal in `journal_dir` for the root in the local directory `root_dir`
    /// and starts the publisher; returns the records to replay (those of a crash).
    pub(crate) fn start(
        ocfl: Arc<OcflRoot>,
        root_dir: &Path,
        journal_dir: &Path,
        publish_nanos: Arc<AtomicU64>,
    ) -> Result<(Self, Vec<Vec<u8>>)> {
        let commit = Arc::new(GroupCommit::start(root_dir)?);
        let (journal, records) = Journal::open(journal_dir)?;
        let publisher = Publisher::start(ocfl, root_dir, publish_nanos)?;
        Ok((
            Self {
                journal: Arc::new(journal),
                commit,
                publisher,
                stop_checkpoints: Arc::new(AtomicBool::new(false)),
            },
            records,
        ))
    }

    /// Crash recovery: everything journaled is written again, everything else staged was
    /// never acknowledged and goes (but the uploads `keep` names). Returns the objects the
    /// replay touched.
    pub(crate) fn replay(
        &self,
        ocfl: &OcflRoot,
        records: &[Vec<u8>],
        keep: impl Fn(&std::path::Path) -> bool,
    ) -> Result<Vec<String>> {
        let mut touched = ocfl.replay_all(records)?;
        ocfl.clear_staging_keeping(keep)?;
        if !records.is_empty() {
            tracing::warn!(
                records = records.len(),
                objects = touched.len(),
                "replayed the journal after an unclean shutdown"
            );
        }
        touched.sort();
        touched.dedup();
        Ok(touched)
    }

    /// Filesystem-sync statistics (checkpoints).
    pub(crate) fn sync_stats(&self) -> SyncStats {
        self.commit.stats()
    }

    /// Journal statistics (group commits of writes).
    pub(crate) fn journal_stats(&self) -> JournalStats {
        self.journal.stats()
    }

    /// Makes everything written so far durable with one `syncfs` (a bulk import's files
    /// before and after they move into the root).
    pub(crate) async fn barrier(&self) -> Result<()> {
        Ok(self.commit.barrier().await?)
    }

    /// Makes everything applied so far durable in the root and catalog and trims the
    /// journal.
    pub(crate) async fn checkpoint(&self) -> Result<()> {
        let journal = self.journal.clone();
        let commit = self.commit.clone();
        tokio::task::spawn_blocking(move || {
            journal.checkpoint(|| commit.barrier_blocking(), false)
        })
        .await
        .map_err(|e| Error::Io(std::io::Error::other(e)))??;
        Ok(())
    }

    /// Stops the background checkpoints and runs a last one once everything acknowledged
    /// is published. If publishing keeps failing, the journal keeps those changes for the
    /// next start instead.
    pub(crate) async fn shutdown(&self) -> Result<()> {
        self.stop_checkpoints.store(true, Ordering::Relaxed);
        if !self.publisher.drain(SHUTDOWN_PUBLISH_WAIT).await {
            tracing::warn!("publishing did not finish before shutdown; the journal keeps the rest, and the next start writes it");
            return Ok(());
        }
        self.checkpoint().await
    }

    /// Runs a checkpoint every few seconds, or sooner when a journal segment fills.
    pub(crate) fn spawn_checkpointer(&self) {
        let journal = self.journal.clone();
        let commit = self.commit.clone();
        let stop = self.stop_checkpoints.clone();
        let spawned = std::thread::Builder::new()
            .name("arca-checkpoint".into())
            .spawn(move || {
                let tick = Duration::from_millis(50);
                let mut waited = Duration::ZERO;
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(tick);
                    waited += tick;
                    if waited < CHECKPOINT_INTERVAL && !journal.wants_checkpoint() {
                        continue;
                    }
                    waited = Duration::ZERO;
                    if let Err(e) = journal.checkpoint(|| commit.barrier_blocking(), true) {
                        tracing::error!(error = %e, "checkpoint failed; the journal keeps every change until the next one succeeds");
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the checkpoint thread");
        }
    }

    /// Journals that operation `op` failed, so that replay skips its record (best effort:
    /// the journal may be what failed).
    async fn cancel(&self, op: &str) {
        if let Err(e) = self.journal.append(arca_ocfl::cancel_record(op)).await {
            tracing::error!(error = %e, "could not journal the cancellation of a failed write");
        }
    }

    /// Journals a purge of `objects` (durable when it returns); hold the ticket until the
    /// catalog has forgotten them.
    pub(crate) async fn journal_purge(&self, objects: &[&str]) -> Result<arca_storage::Ticket> {
        Ok(self
            .journal
            .append(arca_ocfl::purge_record(objects))
            .await?)
    }
}

impl Repository {
    /// [`execute`](Repository::execute) on a local root: stage the versions, journal them
    /// (group commit), record them in the catalog, answer; the publisher writes them into
    /// the root behind the answer.
    pub(crate) async fn execute_journaled(
        &self,
        j: &Journaled,
        plans: Vec<ObjectPlan>,
        extra: Vec<CatalogOp>,
        info: VersionInfo,
        created: arca_model::Timestamp,
    ) -> Result<Vec<ResourceRecord>> {
        let mut since = std::time::Instant::now();
        let lap = |counter: &AtomicU64, since: &mut std::time::Instant| {
            counter.fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
            *since = std::time::Instant::now();
        };
        // Taken first: a write refused for a full disk or failing storage writes nothing
        // (and keeps none of its uploads).
        let slot = match j.publisher.admit().await {
            Ok(slot) => slot,
            Err(e) => {
                discard_uploads(plans);
                return Err(e);
            }
        };
        let staging = self.stage_all(plans, &info)?;
        let op = uuid::Uuid::new_v4().simple().to_string();
        let record = {
            let refs: Vec<&Staged> = staging.staged.iter().map(|(s, _)| s).collect();
            arca_ocfl::versions_record(&op, &refs)
        };
        lap(&self.phases.stage, &mut since);
        let ticket = match j.journal.append(record).await {
            Ok(t) => t,
            Err(e) => {
                // The record may still reach the disk (a failed fdatasync after a good
                // write); the client hears of a failure, so replay must never apply it.
                j.cancel(&op).await;
                self.abort_all(staging);
                return Err(e.into());
            }
        };
        lap(&self.phases.journal, &mut since);
        let (records, mementos) = staging.records(created);
        // Pending before the catalog shows the change: a reader who finds the rows also
        // finds that the files are still being written, and waits for them.
        let registration = j.publisher.register(
            staging
                .staged
                .iter()
                .map(|(s, _)| OcflRoot::staged_object_id(s).to_string()),
        );
        let applied = match self.catalog_ops(&records, mementos, extra).await {
            Ok(ops) => self.catalog.apply(ops).await.map_err(Error::from),
            Err(e) => Err(e),
        };
        if let Err(e) = applied {
            // Nothing is in the root yet: the change is given up whole.
            j.publisher.withdraw(registration);
            j.cancel(&op).await;
            drop(ticket);
            self.abort_all(staging);
            return Err(e);
        }
        lap(&self.phases.catalog, &mut since);
        let head_commits = staging.head_commits;
        let staged = staging.staged.into_iter().map(|(s, _)| s).collect();
        j.publisher.submit(staged, registration, ticket, slot);
        self.written(records, head_commits).await
    }
}
