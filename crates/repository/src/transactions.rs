//! Transactions (Fedora 6's `fcr:tx`): requests that carry a transaction's id plan their
//! changes as usual, but instead of committing them the kernel keeps them with the
//! transaction — the new files of every OCFL object it touches (binaries as staged upload
//! files, never in memory), the records that reads inside the transaction see, and the
//! change-log entries. Commit runs them all through the ordinary write path at once: one
//! journal record, so the commit is atomic across every object and survives a crash at any
//! instant; one new OCFL version per object. Rollback and expiry delete the staged files.
//! While a transaction is open, the objects it changed belong to it: any other write to
//! them is refused (409).
//!
//! The transaction a request works in is a task-local ([`Repository::in_transaction`]),
//! so that the resource operations need no extra parameter.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arca_catalog::{CatalogOp, ResourceRecord};
use arca_model::FedoraId;
use arca_ocfl::{Change, Content, ObjectState};
use parking_lot::Mutex;
use sha2::{Digest, Sha512};

use crate::{Error, ObjectPlan, Repository, ResourcePlan, Result};

/// How long a transaction lives without being used or refreshed (Fedora's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(180);

tokio::task_local! {
    static CURRENT: Arc<Transaction>;
}

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxEnd {
    /// Committed.
    Committed,
    /// Rolled back by its client.
    RolledBack,
    /// Rolled back because it expired.
    Expired,
}

impl TxEnd {
    fn describe(self) -> &'static str {
        match self {
            TxEnd::Committed => "has already been committed",
            TxEnd::RolledBack => "has already been rolled back",
            TxEnd::Expired => "has expired and was rolled back",
        }
    }
}

/// What a client learns about an open transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxInfo {
    /// The transaction's id (a UUID).
    pub id: String,
    /// When it expires unless used or refreshed.
    pub expires: SystemTime,
}

/// An open transaction.
pub(crate) struct Transaction {
    id: String,
    expires: Mutex<SystemTime>,
    work: Mutex<TxWork>,
}

/// What an open transaction holds.
#[derive(Default)]
struct TxWork {
    /// Changes per OCFL object, in request order.
    objects: BTreeMap<String, PendingObject>,
    /// The latest record of every resource written in the transaction.
    records: HashMap<FedoraId, ResourceRecord>,
    /// Catalog operations to apply at commit (change log, listing clocks).
    extra: Vec<CatalogOp>,
    /// Committed or rolled back: a request still running inside it may add nothing more.
    ended: bool,
}

/// One object's changes in a transaction.
struct PendingObject {
    current: Option<ObjectState>,
    new_version: bool,
    changes: Vec<Change>,
    resources: Vec<ResourcePlan>,
}

/// The transactions of one repository: open ones, and how recently finished ones ended.
#[derive(Default)]
pub(crate) struct Transactions {
    open: Mutex<HashMap<String, Arc<Transaction>>>,
    finished: Mutex<HashMap<String, TxEnd>>,
    /// Which open transaction changed each object.
    owners: Mutex<HashMap<String, String>>,
    timeout: Mutex<Option<Duration>>,
}

impl Transactions {
    fn timeout(&self) -> Duration {
        self.timeout.lock().unwrap_or(DEFAULT_TIMEOUT)
    }

    fn open(&self, id: &str) -> Result<Arc<Transaction>> {
        if let Some(tx) = self.open.lock().get(id).cloned() {
            return Ok(tx);
        }
        match self.finished.lock().get(id) {
            Some(end) => Err(Error::TransactionEnded(format!(
                "transaction {id} {}",
                end.describe()
            ))),
            None => Err(Error::TransactionNotFound(id.to_string())),
        }
    }

    /// Takes a transaction out of the open ones, releasing its objects.
    fn close(&self, id: &str, end: TxEnd) -> Option<Arc<Transaction>> {
        let tx = self.open.lock().remove(id)?;
        self.owners.lock().retain(|_, owner| owner != id);
        self.finished.lock().insert(id.to_string(), end);
        Some(tx)
    }
}

/// The transaction the current request works in, if any.
pub(crate) fn current() -> Option<Arc<Transaction>> {
    CURRENT.try_with(Arc::clone).ok()
}

impl Repository {
    /// Sets how long transactions live without use (default 3 minutes).
    pub fn set_transaction_timeout(&self, timeout: Duration) {
        *self.txs.timeout.lock() = Some(timeout);
    }

    /// Begins a transaction.
    pub fn begin_transaction(&self) -> TxInfo {
        let id = uuid::Uuid::new_v4().to_string();
        let expires = SystemTime::now() + self.txs.timeout();
        let tx = Arc::new(Transaction {
            id: id.clone(),
            expires: Mutex::new(expires),
            work: Mutex::new(TxWork::default()),
        });
        self.txs.open.lock().insert(id.clone(), tx);
        TxInfo { id, expires }
    }

    /// An open transaction's state; [`Error::TransactionNotFound`] or
    /// [`Error::TransactionEnded`] otherwise (an expired one is rolled back here).
    pub fn transaction(&self, id: &str) -> Result<TxInfo> {
        self.expire_transactions();
        let tx = self.txs.open(id)?;
        let expires = *tx.expires.lock();
        Ok(TxInfo {
            id: id.to_string(),
            expires,
        })
    }

    /// Extends an open transaction's life by the timeout from now.
    pub fn refresh_transaction(&self, id: &str) -> Result<TxInfo> {
        self.expire_transactions();
        let tx = self.txs.open(id)?;
        let expires = SystemTime::now() + self.txs.timeout();
        *tx.expires.lock() = expires;
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
        self.refresh_transaction(id)?;
        let tx = self.txs.open(id)?;
        Ok(CURRENT.scope(tx, work).await)
    }

    /// Commits a transaction: every change it holds, in one durable step. On failure
    /// nothing of it remains and the error names what conflicted.
    pub async fn commit_transaction(&self, id: &str) -> Result<()> {
        self.expire_transactions();
        self.txs.open(id)?;
        let tx = self
            .txs
            .close(id, TxEnd::Committed)
            .ok_or_else(|| Error::TransactionEnded(format!("transaction {id} ended meanwhile")))?;
        let work = tx.end();
        if work.objects.is_empty() {
            return Ok(());
        }
        let object_ids: Vec<&str> = work.objects.keys().map(String::as_str).collect();
        let _locks = self.locks.lock(&object_ids, &[]).await;
        let mut plans = Vec::with_capacity(work.objects.len());
        let mut failed = None;
        for (ocfl_id, pending) in work.objects {
            if failed.is_some() {
                discard(pending.changes);
                continue;
            }
            // The object as storage has it now (nobody else may have changed it: the
            // transaction owned it).
            let current = match self.ocfl.read_object(&ocfl_id) {
                Ok(c) => c,
                Err(e) => {
                    failed = Some(Error::from(e));
                    discard(pending.changes);
                    continue;
                }
            };
            if current.is_none() != pending.current.is_none() {
                failed = Some(Error::TransactionConflict(format!(
                    "object {ocfl_id} was created or removed outside transaction {id}"
                )));
                discard(pending.changes);
                continue;
            }
            plans.push(ObjectPlan {
                ocfl_id,
                new_version: pending.new_version,
                current,
                changes: last_change_per_path(pending.changes),
                resources: last_record_per_resource(pending.resources),
            });
        }
        if let Some(e) = failed {
            for plan in plans {
                discard(plan.changes);
            }
            return Err(e);
        }
        self.execute(plans, work.extra).await?;
        Ok(())
    }

    /// Rolls a transaction back: nothing of it stays.
    pub fn rollback_transaction(&self, id: &str) -> Result<()> {
        self.expire_transactions();
        self.txs.open(id)?;
        if let Some(tx) = self.txs.close(id, TxEnd::RolledBack) {
            tx.discard();
        }
        Ok(())
    }

    /// Rolls back every open transaction past its expiry.
    pub fn expire_transactions(&self) {
        let now = SystemTime::now();
        let expired: Vec<String> = self
            .txs
            .open
            .lock()
            .values()
            .filter(|tx| *tx.expires.lock() <= now)
            .map(|tx| tx.id.clone())
            .collect();
        for id in expired {
            if let Some(tx) = self.txs.close(&id, TxEnd::Expired) {
                tracing::info!(transaction = %id, "transaction expired; rolled back");
                tx.discard();
            }
        }
    }

    /// Refuses a write to objects that an open transaction other than the current one has
    /// changed (409, as Fedora 6).
    pub(crate) fn check_owners(&self, object_ids: &[&str]) -> Result<()> {
        let owned = {
            let owners = self.txs.owners.lock();
            object_ids.iter().any(|o| owners.contains_key(*o))
        };
        if !owned {
            return Ok(());
        }
        // An expired owner lets go here at the latest.
        self.expire_transactions();
        let mine = current().map(|tx| tx.id.clone());
        let owners = self.txs.owners.lock();
        for object in object_ids {
            if let Some(owner) = owners.get(*object) {
                if Some(owner) != mine.as_ref() {
                    return Err(Error::TransactionConflict(format!(
                        "cannot update {object} because it is being updated by another transaction"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The record of `id` as the current request sees it: the transaction's own version
    /// first, then the catalog's.
    pub(crate) async fn record(&self, id: &FedoraId) -> Result<Option<ResourceRecord>> {
        if let Some(tx) = current() {
            if let Some(r) = tx.work.lock().records.get(id) {
                return Ok(Some(r.clone()));
            }
        }
        Ok(self.catalog.get(id).await?)
    }

    /// In a transaction, the object state its earlier requests planned against (for an
    /// object the transaction creates, none).
    pub(crate) fn pending_object(&self, ocfl_id: &str) -> Option<Option<ObjectState>> {
        let tx = current()?;
        let work = tx.work.lock();
        work.objects.get(ocfl_id).map(|p| p.current.clone())
    }

    /// Keeps planned changes with the current transaction instead of committing them;
    /// returns the records that reads inside it will see. Binary content is staged as
    /// upload files so that nothing large stays in memory.
    pub(crate) fn add_to_transaction(
        &self,
        tx: &Transaction,
        plans: Vec<ObjectPlan>,
        extra: Vec<CatalogOp>,
    ) -> Result<Vec<ResourceRecord>> {
        {
            let mut owners = self.txs.owners.lock();
            for plan in &plans {
                match owners.get(&plan.ocfl_id) {
                    Some(owner) if owner != &tx.id => {
                        return Err(Error::TransactionConflict(format!(
                            "cannot update {} because it is being updated by another transaction",
                            plan.ocfl_id
                        )))
                    }
                    _ => {
                        owners.insert(plan.ocfl_id.clone(), tx.id.clone());
                    }
                }
            }
        }
        let mut records = Vec::new();
        let mut staged = Vec::with_capacity(plans.len());
        for plan in plans {
            let mut changes = Vec::with_capacity(plan.changes.len());
            for change in plan.changes {
                let binary_content = plan.resources.iter().any(|r| {
                    r.rdf.is_none() && r.content_logical.as_deref() == Some(&change.logical_path)
                });
                changes.push(match change.content {
                    Some(Content::Bytes(bytes)) if binary_content => Change {
                        logical_path: change.logical_path,
                        content: Some(self.stage_bytes(&bytes)?),
                    },
                    content => Change {
                        logical_path: change.logical_path,
                        content,
                    },
                });
            }
            for r in &plan.resources {
                let content_file = r.content_logical.as_ref().and_then(|logical| {
                    changes
                        .iter()
                        .rev()
                        .find(|c| &c.logical_path == logical)
                        .and_then(|c| match &c.content {
                            Some(Content::File { path, .. }) => {
                                Some(path.to_string_lossy().into_owned())
                            }
                            _ => None,
                        })
                });
                records.push(ResourceRecord {
                    id: FedoraId::from_internal(&r.headers.id)?,
                    parent: r.parent.clone(),
                    ocfl_id: plan.ocfl_id.clone(),
                    headers: r.headers.clone(),
                    content_file,
                    rdf: r.rdf.clone(),
                    children_changed: None,
                });
            }
            staged.push((
                plan.ocfl_id,
                plan.current,
                plan.new_version,
                changes,
                plan.resources,
            ));
        }
        let mut work = tx.work.lock();
        if work.ended {
            // Committed or rolled back while this request ran: its changes are not part of
            // it, and the client hears so.
            drop(work);
            for (_, _, _, changes, _) in staged {
                discard(changes);
            }
            return Err(Error::TransactionEnded(format!(
                "transaction {} ended while this request ran; its changes were not kept",
                tx.id
            )));
        }
        for (ocfl_id, current, new_version, changes, resources) in staged {
            let pending = work
                .objects
                .entry(ocfl_id)
                .or_insert_with(|| PendingObject {
                    current,
                    new_version: false,
                    changes: Vec::new(),
                    resources: Vec::new(),
                });
            pending.new_version |= new_version;
            pending.changes.extend(changes);
            pending.resources.extend(resources);
        }
        for r in &records {
            work.records.insert(r.id.clone(), r.clone());
        }
        work.extra.extend(extra);
        Ok(records)
    }

    /// Writes bytes to a new upload file (durable before any journal record names it).
    fn stage_bytes(&self, bytes: &[u8]) -> Result<Content> {
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
        Ok(Content::File {
            path,
            sha512: hex::encode(Sha512::digest(bytes)),
        })
    }
}

impl Transaction {
    /// Marks the transaction ended and takes what it holds: no request still running in it
    /// can add anything afterwards.
    fn end(&self) -> TxWork {
        let mut work = self.work.lock();
        let taken = std::mem::take(&mut *work);
        work.ended = true;
        taken
    }

    /// A page of `parent`'s live children as this transaction sees them: the committed
    /// page, without those it deleted, with those it created (in id order, after `after`,
    /// at most `limit`).
    pub(crate) fn children(
        &self,
        parent: &FedoraId,
        after: Option<&FedoraId>,
        limit: usize,
        committed: Vec<FedoraId>,
    ) -> Vec<FedoraId> {
        // A full committed page ends where the page may end; created children beyond it
        // belong to a later page.
        let bound = (committed.len() >= limit)
            .then(|| committed.last().cloned())
            .flatten();
        let work = self.work.lock();
        let mut ids: Vec<FedoraId> = committed
            .into_iter()
            .filter(|c| work.records.get(c).is_none_or(|r| !r.is_deleted()))
            .collect();
        ids.extend(
            work.records
                .values()
                .filter(|r| r.parent.as_ref() == Some(parent) && !r.is_deleted())
                .filter(|r| after.is_none_or(|a| r.id > *a))
                .filter(|r| bound.as_ref().is_none_or(|b| r.id < *b))
                .map(|r| r.id.clone()),
        );
        ids.sort();
        ids.dedup();
        ids.truncate(limit);
        ids
    }

    /// Deletes the staged upload files of a transaction that will not commit.
    fn discard(&self) {
        for (_, pending) in self.end().objects {
            discard(pending.changes);
        }
    }
}

/// Deletes the upload files of changes that will not be published.
fn discard(changes: Vec<Change>) {
    for change in changes {
        if let Some(Content::File { path, .. }) = change.content {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A transaction's changes of one object, the last per logical path (earlier uploads of
/// the same path are deleted): the object's new version holds only what the transaction
/// ends with.
fn last_change_per_path(changes: Vec<Change>) -> Vec<Change> {
    let mut last: BTreeMap<String, Change> = BTreeMap::new();
    for change in changes {
        if let Some(Change {
            content: Some(Content::File { path, .. }),
            ..
        }) = last.insert(change.logical_path.clone(), change)
        {
            let _ = std::fs::remove_file(path);
        }
    }
    last.into_values().collect()
}

/// The last plan of every resource a transaction wrote.
fn last_record_per_resource(resources: Vec<ResourcePlan>) -> Vec<ResourcePlan> {
    let mut last: BTreeMap<String, ResourcePlan> = BTreeMap::new();
    for r in resources {
        last.insert(r.headers.id.clone(), r);
    }
    last.into_values().collect()
}
