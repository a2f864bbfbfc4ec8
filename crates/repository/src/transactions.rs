//! Transactions (Fedora 6's `fcr:tx`): requests that carry a transaction's id plan their
//! changes as usual, but instead of committing them the kernel stages them in the catalog's
//! [`TransactionStore`] — the new files of every OCFL object the transaction touches (small
//! ones inline, binaries as staged upload files), the records that reads inside the
//! transaction see, and the change-log entries. Nothing of an open transaction is held in
//! memory. Commit runs them all through the ordinary write path at once: one journal
//! record, so the commit is atomic across every object and survives a crash at any instant;
//! one new OCFL version per object. Rollback, expiry and a restart delete the staged files.
//! While a transaction is open, the objects it changed belong to it: any other write to
//! them is refused (409).
//!
//! The transaction a request works in is a task-local ([`Repository::in_transaction`]),
//! so that the resource operations need no extra parameter.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arca_catalog::{
    CatalogOp, ResourceRecord, TxContent, TxEnd, TxFile, TxObject, TxRefusal, TxResource, TxStage,
    TxStatus,
};
use arca_model::{DigestAlgorithm, DigestValue, FedoraId, MultiHasher};
use arca_ocfl::{Change, Content, ObjectState};
use parking_lot::Mutex;

use crate::{Error, ObjectPlan, Repository, ResourcePlan, Result};

/// How long a transaction lives without being used or refreshed (Fedora's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(180);

/// How long an ended transaction's status is kept (answers 410 rather than 404).
const ENDED_KEPT: Duration = Duration::from_secs(24 * 3600);

/// Objects read per catalog query when a commit collects its work.
const OBJECTS_PER_PAGE: usize = 1000;

tokio::task_local! {
    static CURRENT: Arc<str>;
}

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
#[derive(Default)]
pub(crate) struct Transactions {
    timeout: Mutex<Option<Duration>>,
    /// When ended transactions were last pruned (milliseconds since the epoch).
    pruned: std::sync::atomic::AtomicI64,
}

impl Transactions {
    fn timeout(&self) -> Duration {
        self.timeout.lock().unwrap_or(DEFAULT_TIMEOUT)
    }
}

/// The id of the transaction the current request works in, if any.
pub(crate) fn current() -> Option<Arc<str>> {
    CURRENT.try_with(Arc::clone).ok()
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

    /// Runs `work` (a request's handling) inside open transaction `id`: its reads see the
    /// transaction's changes and its writes join them. Using a transaction refreshes it.
    pub async fn in_transaction<F: std::future::Future>(
        &self,
        id: &str,
        work: F,
    ) -> Result<F::Output> {
        self.refresh_transaction(id).await?;
        Ok(CURRENT.scope(Arc::from(id), work).await)
    }

    /// Commits a transaction: every change it holds, in one durable step. On failure
    /// nothing of it remains and the error names what conflicted.
    pub async fn commit_transaction(&self, id: &str) -> Result<()> {
        self.expire_transactions().await?;
        // From here on no request can stage anything more in it.
        if !self.catalog.tx_end(id, TxEnd::Committed).await? {
            return Err(self.not_open(id).await);
        }
        let result = self.commit_staged(id).await;
        if result.is_err() {
            self.catalog.tx_end(id, TxEnd::Failed).await?;
        }
        // The staged rows go; the uploads of a failed commit with them. A successful one's
        // local uploads moved into the root (or are being moved: the journal names them);
        // uploads kept in the store were copied, and go.
        let uploads = self.catalog.tx_forget(id).await?;
        if result.is_err() {
            self.delete_uploads(uploads).await;
        } else {
            self.delete_uploads(uploads.into_iter().filter(|u| !u.starts_with('/')))
                .await;
        }
        result
    }

    /// Runs what an ended transaction staged through the write path.
    async fn commit_staged(&self, id: &str) -> Result<()> {
        let mut objects: Vec<TxObject> = Vec::new();
        loop {
            let after = objects.last().map(|o| o.ocfl_id.clone());
            let page = self
                .catalog
                .tx_objects(id, after.as_deref(), OBJECTS_PER_PAGE)
                .await?;
            let done = page.len() < OBJECTS_PER_PAGE;
            objects.extend(page);
            if done {
                break;
            }
        }
        if objects.is_empty() {
            return Ok(());
        }
        let object_ids: Vec<&str> = objects.iter().map(|o| o.ocfl_id.as_str()).collect();
        let _locks = self.catalog.lock_objects(&object_ids, &[]).await?;
        let mut plans = Vec::with_capacity(objects.len());
        for object in &objects {
            // The object as storage has it now (nobody else may have changed it: the
            // transaction owned it).
            self.settled(&object.ocfl_id).await?;
            let current = self.ocfl.read_object(&object.ocfl_id)?;
            if current.is_some() != object.existed {
                return Err(Error::TransactionConflict(format!(
                    "object {} was created or removed outside transaction {id}",
                    object.ocfl_id
                )));
            }
            let changes = self
                .catalog
                .tx_files(id, &object.ocfl_id)
                .await?
                .into_iter()
                .map(|f| Change {
                    logical_path: f.logical_path,
                    content: f.content.map(staged_content),
                })
                .collect();
            let resources = self
                .catalog
                .tx_resources(id, &object.ocfl_id)
                .await?
                .into_iter()
                .map(|r| ResourcePlan {
                    headers: r.record.headers,
                    parent: r.record.parent,
                    content_logical: r.content_logical,
                    rdf: r.record.rdf,
                })
                .collect();
            let mut plan = self.new_plan(object.ocfl_id.clone(), current)?;
            plan.new_version = object.new_version;
            plan.changes = changes;
            plan.resources = resources;
            plans.push(plan);
        }
        let extra = self.catalog.tx_ops(id).await?;
        self.execute(plans, extra).await?;
        Ok(())
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
        if !self.catalog.tx_end(id, end).await? {
            return Err(self.not_open(id).await);
        }
        let uploads = self.catalog.tx_forget(id).await?;
        self.delete_uploads(uploads).await;
        Ok(())
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

    /// Refuses a write to objects that an open transaction other than the current one has
    /// changed (409, as Fedora 6).
    pub(crate) async fn check_owners(&self, object_ids: &[&str]) -> Result<()> {
        if self.catalog.tx_owners(object_ids).await?.is_empty() {
            return Ok(());
        }
        // An expired owner lets go here at the latest.
        self.expire_transactions().await?;
        let mine = current();
        for (object, owner) in self.catalog.tx_owners(object_ids).await? {
            if mine.as_deref() != Some(owner.as_str()) {
                return Err(Error::TransactionConflict(format!(
                    "cannot update {object} because it is being updated by another transaction"
                )));
            }
        }
        Ok(())
    }

    /// The record of `id` as the current request sees it: the transaction's own version
    /// first, then the catalog's.
    pub(crate) async fn record(&self, id: &FedoraId) -> Result<Option<ResourceRecord>> {
        if let Some(tx) = current() {
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
        let Some(tx) = current() else {
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
        let outcome = match staged {
            Ok(()) => self.catalog.tx_stage(tx, stage).await,
            Err(e) => {
                self.delete_uploads(uploads).await;
                return Err(e);
            }
        };
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
