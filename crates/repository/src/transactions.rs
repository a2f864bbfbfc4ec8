//! Transactions (Fedora 6's `fcr:tx`): requests that carry a transaction's id plan their
//! changes as usual, but instead of committing them the kernel stages them in the catalog's
//! [`TransactionStore`] — the new files of every OCFL object the transaction touches (small
//! ones inline, binaries as staged upload files), the records that reads inside the
//! transaction see, and the change-log entries. Nothing of an open transaction is held in
//! memory. Rollback, expiry and a restart delete the staged files. While a transaction is
//! open, and until its commit has ended, the objects it changed belong to it: any other
//! write to them is refused (409).
//!
//! A commit holds a page of objects in memory at a time, whatever the transaction's size:
//!
//! 1. **Close** ([`TxStatus::Closing`]): nothing more can be staged; every object is
//!    checked against storage (one that was created or removed outside the transaction is
//!    a conflict: the commit fails, and nothing of it stays).
//! 2. **Decide** ([`TxStatus::Committing`], durable in the catalog before anything is
//!    published): from here on the commit completes, if need be after a crash.
//! 3. **Pages** of [`COMMIT_PAGE_OBJECTS`] objects go through the ordinary write path
//!    (`execute`: one journal record, one version per object, catalog rows in one catalog
//!    transaction, publishing behind), each page forgetting its staged rows in that same
//!    catalog transaction. An object whose head already holds every staged file (its page
//!    was journaled before a crash, and the journal's replay published it) is not written
//!    again, so redoing a page is harmless.
//! 4. **The change log** gets the transaction's entries (and its listing clocks), a page at
//!    a time, each page forgetting the entries it applied; then the transaction ends as
//!    committed (durable) and its objects are free.
//!
//! A commit that stops after its decision — a crash, an error — is *rolled forward*: at the
//! next start ([`Repository::open`]) or when its commit is sent again. One runner at a
//! time: the commit holds the catalog role `transaction-commit:<id>` (nodes sharing a
//! catalog take roles from it), so no node rolls forward a commit that a live node runs.
//! Other readers see a commit's objects page by page, as each page's catalog transaction
//! commits (each object whole).
//!
//! The transaction a request works in travels with the handle it works through
//! ([`Repository::in_transaction`] gives a request a handle scoped to it), so that the
//! resource operations need no extra parameter and nothing hides in task-local storage.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arca_catalog::{
    CatalogOp, ObjectLockGuard, ResourceRecord, TxContent, TxEnd, TxFile, TxObject, TxObjectStage,
    TxRefusal, TxResource, TxStage, TxStatus, WriteReads, WriteSnapshot,
};
use arca_model::{DigestAlgorithm, DigestValue, FedoraId, MultiHasher};
use arca_ocfl::{Change, Content, ObjectState};
use parking_lot::Mutex;

use crate::{changes, Error, ObjectPlan, Repository, ResourcePlan, Result};

/// How long a transaction lives without being used or refreshed (Fedora's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(180);

/// How long an ended transaction's status is kept (answers 410 rather than 404).
const ENDED_KEPT: Duration = Duration::from_secs(24 * 3600);

/// Objects a commit runs through the write path together (one journal record, one catalog
/// transaction, one publishing job): a commit's memory is a few pages' versions.
pub const COMMIT_PAGE_OBJECTS: usize = 256;

/// Kept catalog operations (change-log entries, listing clocks) a commit applies per
/// catalog transaction.
const COMMIT_PAGE_OPS: usize = 1000;

/// Pages of a commit whose versions may wait to be published while the next one is
/// planned (the commit waits for the oldest beyond that), so that a slow publisher keeps
/// no more than that in memory.
const PAGES_IN_FLIGHT: usize = 4;

/// Test setting: objects per commit page instead of [`COMMIT_PAGE_OBJECTS`], so that tests
/// commit many pages with few resources. Never set in use.
pub(crate) const PAGE_ENV: &str = "ARCA_TEST_TX_PAGE_OBJECTS";

/// Fault injection for tests: a commit waits this many milliseconds (saying so in the log)
/// before its decision and after each page it writes, so that a test can kill the node in
/// either window. Read once, at start. Never set in use.
pub(crate) const COMMIT_DELAY_ENV: &str = "ARCA_TEST_TX_COMMIT_DELAY_MS";

/// What a client learns about an open transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxInfo {
    /// The transaction's id (a UUID).
    pub id: String,
    /// When it expires unless used or refreshed.
    pub expires: SystemTime,
}

/// How often ended transactions are pruned at most.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// The kernel's transaction settings (the state lives in the catalog).
pub(crate) struct Transactions {
    timeout: Mutex<Option<Duration>>,
    /// When ended transactions were last pruned (milliseconds since the epoch).
    pruned: std::sync::atomic::AtomicI64,
    /// Objects per commit page.
    page: std::sync::atomic::AtomicUsize,
    /// See [`COMMIT_DELAY_ENV`].
    commit_delay: Duration,
}

impl Default for Transactions {
    fn default() -> Self {
        let page = std::env::var(PAGE_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|n| *n > 0)
            .unwrap_or(COMMIT_PAGE_OBJECTS);
        if page != COMMIT_PAGE_OBJECTS {
            tracing::warn!(
                page,
                "{PAGE_ENV} is set: transactions commit in pages of this many objects"
            );
        }
        let commit_delay = std::env::var(COMMIT_DELAY_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
            .unwrap_or_default();
        Self {
            timeout: Mutex::default(),
            pruned: Default::default(),
            page: page.into(),
            commit_delay,
        }
    }
}

impl Transactions {
    fn timeout(&self) -> Duration {
        self.timeout.lock().unwrap_or(DEFAULT_TIMEOUT)
    }

    fn page(&self) -> usize {
        self.page.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits as [`COMMIT_DELAY_ENV`] says (a test's window) at a point of transaction
    /// `id`'s commit.
    async fn pause(&self, id: &str, point: &str) {
        if !self.commit_delay.is_zero() {
            tracing::warn!(transaction = %id, "{COMMIT_DELAY_ENV}: the commit pauses {point}");
            tokio::time::sleep(self.commit_delay).await;
        }
    }
}

/// The catalog role held by whoever runs transaction `id`'s commit.
fn commit_role(id: &str) -> String {
    format!("transaction-commit:{id}")
}

fn describe(end: TxEnd) -> &'static str {
    match end {
        TxEnd::Committed => "has already been committed",
        TxEnd::RolledBack => "has already been rolled back",
        TxEnd::Expired => "has expired and was rolled back",
        TxEnd::Failed => "failed to commit and was rolled back",
    }
}

fn millis(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

fn instant(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}

/// Where a transaction's staged uploads go in a store without a journal, so that any node
/// can commit it: below the storage root's `extensions` directory (outside every object;
/// OCFL validators list it as an unregistered extension while uploads wait there).
const STORED_UPLOADS: &str = "extensions/arca-transactions";

/// The content a staged file holds: bytes, a local upload file (an absolute path), or an
/// upload kept in the store (a key).
fn staged_content(content: TxContent) -> Content {
    match content {
        TxContent::Bytes(b) => Content::Bytes(b),
        TxContent::Upload { path, digest } if path.starts_with('/') => Content::File {
            path: path.into(),
            digest,
        },
        TxContent::Upload { path, digest } => Content::Stored { key: path, digest },
    }
}

impl Repository {
    /// Sets how long transactions live without use (default 3 minutes).
    pub fn set_transaction_timeout(&self, timeout: Duration) {
        *self.txs.timeout.lock() = Some(timeout);
    }

    /// Sets how many objects a commit writes per page (default [`COMMIT_PAGE_OBJECTS`]):
    /// more is fewer journal records and catalog transactions, less is less memory.
    pub fn set_transaction_commit_page(&self, objects: usize) {
        self.txs
            .page
            .store(objects.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    /// Begins a transaction for `user` (`None` when requests are not authenticated).
    pub async fn begin_transaction(&self, user: Option<&str>) -> Result<TxInfo> {
        let id = uuid::Uuid::new_v4().to_string();
        let expires = SystemTime::now() + self.txs.timeout();
        self.catalog.tx_begin(&id, millis(expires), user).await?;
        Ok(TxInfo { id, expires })
    }

    /// The user who began transaction `id`, when one was recorded.
    pub async fn transaction_user(&self, id: &str) -> Result<Option<String>> {
        Ok(self.catalog.tx_user(id).await?)
    }

    /// The error for a transaction that is not open.
    async fn not_open(&self, id: &str) -> Error {
        match self.catalog.tx_status(id).await {
            Ok(Some(TxStatus::Ended(end))) => {
                Error::TransactionEnded(format!("transaction {id} {}", describe(end)))
            }
            Ok(Some(TxStatus::Closing | TxStatus::Committing)) => {
                Error::TransactionEnded(format!("transaction {id} is being committed"))
            }
            Ok(_) => Error::TransactionNotFound(id.to_string()),
            Err(e) => e.into(),
        }
    }

    /// An open transaction's state; [`Error::TransactionNotFound`] or
    /// [`Error::TransactionEnded`] otherwise (an expired one is rolled back here).
    pub async fn transaction(&self, id: &str) -> Result<TxInfo> {
        self.expire_transactions().await?;
        match self.catalog.tx_status(id).await? {
            Some(TxStatus::Open { expires }) => Ok(TxInfo {
                id: id.to_string(),
                expires: instant(expires),
            }),
            _ => Err(self.not_open(id).await),
        }
    }

    /// Extends an open transaction's life by the timeout from now.
    pub async fn refresh_transaction(&self, id: &str) -> Result<TxInfo> {
        self.expire_transactions().await?;
        let expires = SystemTime::now() + self.txs.timeout();
        if !self.catalog.tx_set_expiry(id, millis(expires)).await? {
            return Err(self.not_open(id).await);
        }
        Ok(TxInfo {
            id: id.to_string(),
            expires,
        })
    }

    /// This repository as a request inside open transaction `id` sees it: reads through
    /// the handle see the transaction's changes and writes join them. Using a transaction
    /// refreshes it.
    pub async fn in_transaction(&self, id: &str) -> Result<Repository> {
        self.refresh_transaction(id).await?;
        let mut scoped = self.clone();
        scoped.scope.transaction = Some(Arc::from(id));
        Ok(scoped)
    }

    /// The id of the transaction this handle works in, if any.
    pub fn current_transaction(&self) -> Option<Arc<str>> {
        self.scope.transaction.clone()
    }

    /// Commits a transaction: every change it holds, all or nothing across every object it
    /// touches, durable when this returns (see the module documentation). A commit that
    /// cannot be made (an object created or removed outside the transaction) fails and
    /// leaves nothing, naming the object. Once decided, a commit that stops on an error
    /// answers [`Error::Unavailable`] and completes when it is sent again (or at the next
    /// start); sent again while it runs, it is a [`Error::TransactionConflict`].
    pub async fn commit_transaction(&self, id: &str) -> Result<()> {
        self.expire_transactions().await?;
        let Some(_lead) = self.catalog.try_lead(&commit_role(id)).await? else {
            return Err(Error::TransactionConflict(format!(
                "transaction {id} is being committed by another request"
            )));
        };
        match self.catalog.tx_status(id).await? {
            Some(TxStatus::Open { .. }) => {
                // From here on no request can stage anything more in it.
                if !self.catalog.tx_close(id).await? {
                    return Err(self.not_open(id).await);
                }
            }
            // An earlier commit stopped before its decision (its request went away): check
            // again.
            Some(TxStatus::Closing) => {}
            Some(TxStatus::Committing) => return self.roll_forward(id).await,
            _ => return Err(self.not_open(id).await),
        }
        if let Err(e) = self.check_staged(id).await {
            // Nothing of it is in storage: it ends failed, its uploads deleted.
            if let Some(uploads) = self.catalog.tx_end(id, TxEnd::Failed).await? {
                self.delete_uploads(uploads).await;
            }
            return Err(e);
        }
        self.txs.pause(id, "before its decision").await;
        if !self.catalog.tx_decide(id).await? {
            return Err(Error::Internal(format!(
                "transaction {id} left the closing state while its commit held it"
            )));
        }
        self.roll_forward(id).await
    }

    /// Checks, a page at a time, that every object the transaction changes exists in
    /// storage exactly when it did when the transaction first changed it.
    async fn check_staged(&self, id: &str) -> Result<()> {
        let size = self.txs.page();
        let mut after: Option<String> = None;
        loop {
            let page = self.catalog.tx_objects(id, after.as_deref(), size).await?;
            for object in &page {
                self.settled(&object.ocfl_id).await?;
                let exists = self
                    .ocfl
                    .object_digest_algorithm(&object.ocfl_id)?
                    .is_some();
                if exists != object.existed {
                    return Err(Error::TransactionConflict(format!(
                        "cannot commit transaction {id}: {} was {} outside it",
                        object.ocfl_id,
                        if exists { "created" } else { "removed" }
                    )));
                }
            }
            if page.len() < size {
                return Ok(());
            }
            after = page.last().map(|o| o.ocfl_id.clone());
        }
    }

    /// Completes a decided commit (its caller holds the commit's role). An error leaves it
    /// decided, to be completed later: [`Error::Unavailable`] says so.
    async fn roll_forward(&self, id: &str) -> Result<()> {
        match self.apply_decided(id).await {
            Ok(()) => Ok(()),
            Err(e @ (Error::Unavailable(_) | Error::StorageFull(_))) => Err(e),
            Err(e) => Err(Error::Unavailable(format!(
                "transaction {id} is committed but not yet complete ({e}); it completes when its commit is sent again or the server starts again"
            ))),
        }
    }

    /// Runs what a decided transaction still has staged through the write path, a page at a
    /// time, then its change-log entries, then ends it.
    async fn apply_decided(&self, id: &str) -> Result<()> {
        let size = self.txs.page();
        let mut after: Option<String> = None;
        // One object of each page whose versions may still wait to be published.
        let mut in_flight: VecDeque<String> = VecDeque::new();
        loop {
            let page = self.catalog.tx_staged(id, after.as_deref(), size).await?;
            let full = page.len() == size;
            let Some(last) = page.last() else { break };
            after = Some(last.object.ocfl_id.clone());
            let todo: Vec<TxObjectStage> = page.into_iter().filter(|o| !o.is_applied()).collect();
            if !todo.is_empty() {
                if let Some(published) = self.commit_page(id, todo).await? {
                    in_flight.push_back(published);
                }
                self.txs.pause(id, "after a page").await;
                while in_flight.len() > PAGES_IN_FLIGHT {
                    let oldest = in_flight.pop_front().expect("not empty");
                    self.settled(&oldest).await?;
                }
            }
            if !full {
                break;
            }
        }
        let mut after = 0;
        loop {
            let kept = self.catalog.tx_ops(id, after, COMMIT_PAGE_OPS).await?;
            let Some(&(through, _)) = kept.last() else {
                break;
            };
            after = through;
            let mut ops: Vec<CatalogOp> = kept.into_iter().map(|(_, op)| op).collect();
            // Entries staged with their types need no lookup (see add_to_transaction).
            changes::fill_types(&mut ops, |rid| async move {
                self.catalog.get(&rid).await.ok().flatten()
            })
            .await;
            ops.push(CatalogOp::TxOpsCommitted {
                tx: id.to_string(),
                through,
            });
            self.catalog.apply(ops).await?;
        }
        match self.catalog.tx_end(id, TxEnd::Committed).await? {
            // Nothing should be left staged; whatever is will never be published.
            Some(uploads) => {
                self.delete_uploads(uploads).await;
                Ok(())
            }
            None => Err(Error::Internal(format!(
                "transaction {id} left the committing state while its commit held it"
            ))),
        }
    }

    /// Writes one page of a decided commit: a plan per object (its files and records as
    /// staged, against the object as storage has it now), all through `execute`, whose
    /// catalog transaction also forgets the page's staged rows. Objects whose head already
    /// holds every staged file (written before a crash) are not written again: their rows
    /// are derived from storage, and what was staged for them forgotten. Returns an object
    /// of the page being published, if any.
    async fn commit_page(&self, id: &str, page: Vec<TxObjectStage>) -> Result<Option<String>> {
        let ocfl_ids: Vec<String> = page.iter().map(|o| o.object.ocfl_id.clone()).collect();
        let refs: Vec<&str> = ocfl_ids.iter().map(String::as_str).collect();
        let _locks = self.catalog.lock_objects(&refs, &[]).await?;
        let mut plans = Vec::with_capacity(page.len());
        let mut written_before = Vec::new();
        // Uploads kept in the store, which the page's versions copy.
        let mut stored = Vec::new();
        let mut skipped = Vec::new();
        for staged in page {
            let ocfl_id = staged.object.ocfl_id;
            // Nobody else may have changed the object: the transaction owns it.
            self.settled(&ocfl_id).await?;
            let current = self.ocfl.read_object(&ocfl_id)?;
            if let Some(state) = &current {
                if holds_staged(state, &staged.files)? {
                    skipped.push(ocfl_id);
                    written_before.extend(staged.files.into_iter().filter_map(
                        |f| match f.content {
                            Some(TxContent::Upload { path, .. }) => Some(path),
                            _ => None,
                        },
                    ));
                    continue;
                }
            }
            let mut plan = self.new_plan(ocfl_id, current)?;
            plan.new_version = staged.object.new_version;
            plan.changes = staged
                .files
                .into_iter()
                .map(|f| Change {
                    logical_path: f.logical_path,
                    content: f.content.map(|c| {
                        if let TxContent::Upload { path, .. } = &c {
                            if !path.starts_with('/') {
                                stored.push(path.clone());
                            }
                        }
                        staged_content(c)
                    }),
                })
                .collect();
            plan.resources = staged
                .resources
                .into_iter()
                .map(|r| ResourcePlan {
                    headers: r.record.headers,
                    parent: r.record.parent,
                    content_logical: r.content_logical,
                    rdf: r.record.rdf,
                })
                .collect();
            plans.push(plan);
        }
        if !skipped.is_empty() {
            tracing::info!(transaction = %id, objects = skipped.len(), "objects of an interrupted commit were in storage already; not written again");
        }
        // Their rows as storage has them (the journal's replay re-derived them already,
        // unless the catalog lost them since), before what was staged for them goes.
        for ocfl_id in &skipped {
            self.reindex_object(ocfl_id).await?;
        }
        let forget = CatalogOp::TxObjectsCommitted {
            tx: id.to_string(),
            ocfl_ids,
        };
        let published = plans.first().map(|p| p.ocfl_id.clone());
        if plans.is_empty() {
            self.catalog.apply(vec![forget]).await?;
        } else {
            self.execute(plans, vec![forget]).await?;
        }
        // Their content is in the root: what is left of the uploads is a spare name (a
        // local upload moved into the root; one kept in the store was copied).
        self.delete_uploads(written_before.into_iter().chain(stored))
            .await;
        Ok(published)
    }

    /// Moves a stage's local upload files into the store (a store without a journal is
    /// shared by nodes, and any of them may commit the transaction), naming them by key in
    /// the stage; `uploads` follows, so that a failure deletes what was moved.
    async fn keep_uploads_in_store(
        &self,
        stage: &mut TxStage,
        uploads: &mut [String],
    ) -> Result<()> {
        let mut moved = std::collections::HashMap::new();
        for upload in uploads.iter_mut() {
            let key = format!("{STORED_UPLOADS}/{}", uuid::Uuid::new_v4().simple());
            let (ocfl, path, k) = (self.ocfl.clone(), upload.clone(), key.clone());
            tokio::task::spawn_blocking(move || {
                ocfl.store().move_file(std::path::Path::new(&path), &k)
            })
            .await
            .map_err(|e| Error::Io(std::io::Error::other(e)))?
            .map_err(arca_ocfl::Error::from)?;
            moved.insert(std::mem::replace(upload, key.clone()), key);
        }
        for file in &mut stage.files {
            if let Some(TxContent::Upload { path, .. }) = &mut file.content {
                if let Some(key) = moved.get(path.as_str()) {
                    *path = key.clone();
                }
            }
        }
        for resource in &mut stage.resources {
            if let Some(file) = &mut resource.record.content_file {
                if let Some(key) = moved.get(file.as_str()) {
                    *file = key.clone();
                }
            }
        }
        Ok(())
    }

    /// Deletes staged uploads that will not be published: local files (absolute paths)
    /// and uploads kept in the store (keys).
    async fn delete_uploads(&self, uploads: impl IntoIterator<Item = String>) {
        let (local, stored): (Vec<String>, Vec<String>) =
            uploads.into_iter().partition(|u| u.starts_with('/'));
        for path in local {
            let _ = std::fs::remove_file(path);
        }
        if stored.is_empty() {
            return;
        }
        let ocfl = self.ocfl.clone();
        let deleted = tokio::task::spawn_blocking(move || {
            stored.iter().try_for_each(|key| ocfl.store().delete(key))
        })
        .await;
        if !matches!(deleted, Ok(Ok(()))) {
            tracing::warn!(
                "some staged uploads of a transaction could not be deleted from the store"
            );
        }
    }

    /// Rolls a transaction back: nothing of it stays.
    pub async fn rollback_transaction(&self, id: &str) -> Result<()> {
        self.expire_transactions().await?;
        self.end_and_discard(id, TxEnd::RolledBack).await?;
        Ok(())
    }

    /// Ends an open transaction without committing it and deletes what it staged; the
    /// error of [`Repository::transaction`] if it was not open.
    async fn end_and_discard(&self, id: &str, end: TxEnd) -> Result<()> {
        match self.catalog.tx_end(id, end).await? {
            Some(uploads) => {
                self.delete_uploads(uploads).await;
                Ok(())
            }
            None => Err(self.not_open(id).await),
        }
    }

    /// Rolls back every open transaction past its expiry, and (at most once a minute)
    /// forgets transactions that ended more than a day ago.
    pub async fn expire_transactions(&self) -> Result<()> {
        let now = SystemTime::now();
        for id in self.catalog.tx_expired(millis(now)).await? {
            match self.end_and_discard(&id, TxEnd::Expired).await {
                Ok(()) => tracing::info!(transaction = %id, "transaction expired; rolled back"),
                // Committed or rolled back meanwhile.
                Err(Error::TransactionEnded(_) | Error::TransactionNotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        let last = self.txs.pruned.load(std::sync::atomic::Ordering::Relaxed);
        if millis(now) - last >= PRUNE_EVERY.as_millis() as i64 {
            self.txs
                .pruned
                .store(millis(now), std::sync::atomic::Ordering::Relaxed);
            self.catalog
                .tx_prune(millis(now.checked_sub(ENDED_KEPT).unwrap_or(UNIX_EPOCH)))
                .await?;
        }
        Ok(())
    }

    /// Rolls back the transactions a previous run left open (at start-up): what their
    /// requests staged was acknowledged but never promised durable, unlike a commit.
    pub(crate) async fn roll_back_abandoned_transactions(&self) -> Result<()> {
        for id in self.catalog.tx_open().await? {
            tracing::info!(transaction = %id, "transaction left open by the previous run; rolled back");
            self.end_and_discard(&id, TxEnd::Expired).await?;
        }
        Ok(())
    }

    /// Ends the commits a previous run (or a node that died) left unfinished, at start-up
    /// and, on a store shared by nodes, from the background recovery (`spawn_recovery`):
    /// one not yet decided fails (nothing of it was published), a decided one is rolled
    /// forward. A commit whose role another node holds is that node's to finish. A roll
    /// forward that fails is logged and left decided, to complete when its commit is sent
    /// again or at the next start.
    pub(crate) async fn finish_interrupted_commits(&self) -> Result<()> {
        for (id, _) in self.catalog.tx_commits().await? {
            let Some(_lead) = self.catalog.try_lead(&commit_role(&id)).await? else {
                continue;
            };
            match self.catalog.tx_status(&id).await? {
                Some(TxStatus::Closing) => {
                    tracing::info!(transaction = %id, "a commit stopped before it was decided; it failed and nothing of it is kept");
                    if let Some(uploads) = self.catalog.tx_end(&id, TxEnd::Failed).await? {
                        self.delete_uploads(uploads).await;
                    }
                }
                Some(TxStatus::Committing) => {
                    tracing::warn!(transaction = %id, "a decided commit was interrupted; completing it");
                    match self.roll_forward(&id).await {
                        Ok(()) => {
                            tracing::info!(transaction = %id, "the interrupted commit is complete")
                        }
                        Err(e) => {
                            tracing::error!(transaction = %id, error = %e, "the interrupted commit could not be completed yet")
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Refuses a write to objects that an open transaction other than the current one has
    /// changed (409, as Fedora 6).
    pub(crate) async fn check_owners(&self, object_ids: &[&str]) -> Result<()> {
        if self.catalog.tx_owners(object_ids).await?.is_empty() {
            return Ok(());
        }
        // An expired owner lets go here at the latest.
        self.expire_transactions().await?;
        let mine = self.current_transaction();
        for (object, owner) in self.catalog.tx_owners(object_ids).await? {
            if mine.as_deref() != Some(owner.as_str()) {
                return Err(Error::TransactionConflict(format!(
                    "cannot update {object} because it is being updated by another transaction"
                )));
            }
        }
        Ok(())
    }

    /// Takes a write's locks and reads what it checks under them in one step
    /// ([`Catalog::lock_and_read`](arca_catalog::Catalog::lock_and_read)), as the current
    /// request sees it: inside a transaction, its own records first. Refuses the write if
    /// another transaction owns one of `reads.objects`.
    pub(crate) async fn lock_reading(
        &self,
        exclusive: &[&str],
        shared: &[&str],
        reads: WriteReads,
    ) -> Result<(ObjectLockGuard, WriteSnapshot)> {
        let (locks, mut snapshot) = self
            .catalog
            .lock_and_read(exclusive, shared, &reads)
            .await?;
        if let Some(tx) = self.current_transaction() {
            for id in &reads.records {
                if let Some(r) = self.catalog.tx_record(&tx, id).await? {
                    snapshot.records.retain(|have| &have.id != id);
                    snapshot.records.push(r);
                }
            }
        }
        if !snapshot.owners.is_empty() {
            let objects: Vec<&str> = reads.objects.iter().map(String::as_str).collect();
            self.check_owners(&objects).await?;
        }
        Ok((locks, snapshot))
    }

    /// The record of `id` as the current request sees it: the transaction's own version
    /// first, then the catalog's.
    pub(crate) async fn record(&self, id: &FedoraId) -> Result<Option<ResourceRecord>> {
        if let Some(tx) = self.current_transaction() {
            if let Some(r) = self.catalog.tx_record(&tx, id).await? {
                return Ok(Some(r));
            }
        }
        Ok(self.catalog.get(id).await?)
    }

    /// In a transaction that already changes object `ocfl_id`, the state its requests plan
    /// against: storage's for an object that existed, none for one the transaction
    /// creates.
    pub(crate) async fn pending_object(
        &self,
        ocfl_id: &str,
    ) -> Result<Option<Option<ObjectState>>> {
        let Some(tx) = self.current_transaction() else {
            return Ok(None);
        };
        match self.catalog.tx_object(&tx, ocfl_id).await? {
            None => Ok(None),
            Some(o) if o.existed => {
                self.settled(ocfl_id).await?;
                Ok(Some(self.ocfl.read_object(ocfl_id)?))
            }
            Some(_) => Ok(Some(None)),
        }
    }

    /// Keeps planned changes with transaction `tx` instead of committing them; returns the
    /// records that reads inside it will see. Binary content is staged as upload files so
    /// that nothing large goes into the catalog.
    pub(crate) async fn add_to_transaction(
        &self,
        tx: &str,
        plans: Vec<ObjectPlan>,
        extra: Vec<CatalogOp>,
    ) -> Result<Vec<ResourceRecord>> {
        let mut stage = TxStage {
            ops: extra,
            ..TxStage::default()
        };
        let mut uploads = Vec::new();
        let mut staged = self.build_stage(plans, &mut stage, &mut uploads);
        if staged.is_ok() && self.ocfl.local_root().is_none() {
            staged = self.keep_uploads_in_store(&mut stage, &mut uploads).await;
        }
        let records: Vec<ResourceRecord> =
            stage.resources.iter().map(|r| r.record.clone()).collect();
        if let Err(e) = staged {
            self.delete_uploads(uploads).await;
            return Err(e);
        }
        // The change-log entries keep the types the resources have now, as an ordinary
        // write's entries do, so that the commit needs no lookups.
        let mut ops: Vec<CatalogOp> = records.iter().cloned().map(CatalogOp::Put).collect();
        ops.append(&mut stage.ops);
        changes::fill_agent(&mut ops, self.agent());
        changes::fill_types(&mut ops, |id| async move {
            self.record(&id).await.ok().flatten()
        })
        .await;
        stage.ops = ops
            .into_iter()
            .filter(|op| !matches!(op, CatalogOp::Put(_)))
            .collect();
        let outcome = self.catalog.tx_stage(tx, stage).await;
        match outcome {
            Ok(Ok(replaced)) => {
                self.delete_uploads(replaced).await;
                Ok(records)
            }
            Ok(Err(refusal)) => {
                self.delete_uploads(uploads).await;
                Err(match refusal {
                    // Committed or rolled back while this request ran: its changes are not
                    // part of it, and the client hears so.
                    TxRefusal::NotOpen => Error::TransactionEnded(format!(
                        "transaction {tx} ended while this request ran; its changes were not kept"
                    )),
                    TxRefusal::Owned { ocfl_id } => Error::TransactionConflict(format!(
                        "cannot update {ocfl_id} because it is being updated by another transaction"
                    )),
                })
            }
            Err(e) => {
                self.delete_uploads(uploads).await;
                Err(e.into())
            }
        }
    }

    /// Turns plans into a transaction stage; the upload files it names are listed in
    /// `uploads` (also on error).
    fn build_stage(
        &self,
        plans: Vec<ObjectPlan>,
        stage: &mut TxStage,
        uploads: &mut Vec<String>,
    ) -> Result<()> {
        for plan in plans {
            stage.objects.push(TxObject {
                ocfl_id: plan.ocfl_id.clone(),
                existed: plan.current.is_some(),
                new_version: plan.new_version,
            });
            let first_file = stage.files.len();
            for change in plan.changes {
                let binary_content = plan.resources.iter().any(|r| {
                    r.rdf.is_none() && r.content_logical.as_deref() == Some(&change.logical_path)
                });
                let content = match change.content {
                    Some(Content::Bytes(bytes)) if binary_content => {
                        let (path, digest) = self.stage_bytes(&bytes, plan.algorithm)?;
                        uploads.push(path.clone());
                        Some(TxContent::Upload { path, digest })
                    }
                    Some(Content::Bytes(bytes)) => Some(TxContent::Bytes(bytes)),
                    Some(Content::File { path, digest }) => {
                        let path = path.to_string_lossy().into_owned();
                        uploads.push(path.clone());
                        Some(TxContent::Upload { path, digest })
                    }
                    Some(Content::Stored { key, digest }) => {
                        Some(TxContent::Upload { path: key, digest })
                    }
                    None => None,
                };
                stage.files.push(TxFile {
                    ocfl_id: plan.ocfl_id.clone(),
                    logical_path: change.logical_path,
                    content,
                });
            }
            let files = &stage.files[first_file..];
            let resources: Vec<TxResource> = plan
                .resources
                .into_iter()
                .map(|r| {
                    let content_file = r.content_logical.as_ref().and_then(|logical| {
                        files
                            .iter()
                            .rev()
                            .find(|f| &f.logical_path == logical)
                            .and_then(|f| match &f.content {
                                Some(TxContent::Upload { path, .. }) => Some(path.clone()),
                                _ => None,
                            })
                    });
                    Ok(TxResource {
                        record: ResourceRecord {
                            id: FedoraId::from_internal(&r.headers.id)?,
                            parent: r.parent,
                            ocfl_id: plan.ocfl_id.clone(),
                            headers: r.headers,
                            content_file,
                            rdf: r.rdf,
                            children_changed: None,
                        },
                        content_logical: r.content_logical,
                    })
                })
                .collect::<Result<_>>()?;
            stage.resources.extend(resources);
        }
        Ok(())
    }

    /// Writes bytes to a new upload file (durable before any journal record names it);
    /// returns its path and its digest in `algorithm` (its object's).
    fn stage_bytes(
        &self,
        bytes: &[u8],
        algorithm: DigestAlgorithm,
    ) -> Result<(String, DigestValue)> {
        let path = self
            .uploads_dir()
            .join(format!("tx-{}", uuid::Uuid::new_v4().simple()));
        {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)?;
            f.write_all(bytes)?;
            f.sync_data()?;
        }
        arca_storage::fsutil::sync_dir(&self.uploads_dir())?;
        Ok((
            path.to_string_lossy().into_owned(),
            DigestValue {
                algorithm,
                hex: MultiHasher::digest(algorithm, bytes),
            },
        ))
    }
}

/// Whether an object's head state holds every staged file change: each staged path with
/// the staged content's digest, each removed path absent.
fn holds_staged(state: &ObjectState, files: &[TxFile]) -> Result<bool> {
    let algorithm = state.inventory.content_digest()?;
    let head = state.inventory.head_state();
    Ok(files
        .iter()
        .all(|f| match (&f.content, head.get(&f.logical_path)) {
            (None, held) => held.is_none(),
            (Some(_), None) => false,
            (Some(TxContent::Bytes(bytes)), Some(held)) => {
                held.eq_ignore_ascii_case(&MultiHasher::digest(algorithm, bytes))
            }
            (Some(TxContent::Upload { digest, .. }), Some(held)) => {
                digest.algorithm == algorithm && held.eq_ignore_ascii_case(&digest.hex)
            }
        }))
}
