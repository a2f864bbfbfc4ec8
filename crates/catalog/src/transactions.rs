//! What the catalog keeps of open transactions (Fedora 6's `fcr:tx`): their expiry, the
//! OCFL objects each one has claimed, and everything their requests staged — the files of
//! every object's next version (small ones inline, binaries as the path of a staged upload
//! file), the records that reads inside the transaction see, and the catalog operations
//! (change log, listing clocks) to apply at commit. Nothing of it is in process memory, so
//! a transaction of any size costs the server no memory until it commits, and any node
//! sharing the catalog can serve its requests.
//!
//! A commit goes through two states before it ends: [`TxStatus::Closing`] (nothing more
//! can be staged; the kernel checks what was staged; not decided, so a crash fails it) and
//! [`TxStatus::Committing`] (decided, durably: the kernel runs the staged objects through
//! the write path in pages, each page forgetting its staged rows in the catalog
//! transaction that writes its resources ([`CatalogOp::TxObjectsCommitted`]), then the
//! kept change-log entries in pages ([`CatalogOp::TxOpsCommitted`]); a crash is followed by
//! a roll forward, never a roll back). The objects stay claimed until the transaction
//! ends.
//!
//! This state is not derived from storage: a catalog rebuild keeps it, and the kernel rolls
//! back every transaction it finds open when it starts (an acknowledged write inside an
//! open transaction is not a durable promise; its commit is).

use arca_model::{DigestValue, FedoraId};
use async_trait::async_trait;

use crate::{CatalogOp, ResourceRecord, Result};

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxEnd {
    /// Committed.
    Committed,
    /// Rolled back by its client, or because its commit failed.
    RolledBack,
    /// Rolled back because it expired (or the server restarted while it was open).
    Expired,
    /// Its commit failed; nothing of it was kept.
    Failed,
}

impl TxEnd {
    /// The state a transaction ends from this way: open (`None`) for a rollback or an
    /// expiry, [`CLOSING`] for a failed commit, [`COMMITTING`] for a commit.
    pub fn ends_from(self) -> Option<&'static str> {
        match self {
            Self::RolledBack | Self::Expired => None,
            Self::Failed => Some(CLOSING),
            Self::Committed => Some(COMMITTING),
        }
    }

    /// Name stored in the catalog.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Committed => "committed",
            Self::RolledBack => "rolled-back",
            Self::Expired => "expired",
            Self::Failed => "failed",
        }
    }

    /// The end named `s` in the catalog.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "committed" => Self::Committed,
            "rolled-back" => Self::RolledBack,
            "expired" => Self::Expired,
            "failed" => Self::Failed,
            _ => return None,
        })
    }
}

/// What the catalog stores for a transaction whose commit has begun and is not decided.
pub const CLOSING: &str = "closing";
/// What the catalog stores for a transaction whose commit is decided and not finished.
pub const COMMITTING: &str = "committing";

/// Where a transaction stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxStatus {
    /// Open until `expires` (milliseconds since the epoch) unless used or refreshed.
    Open {
        /// Expiry, milliseconds since the epoch.
        expires: i64,
    },
    /// Its commit has begun: nothing more can be staged, and what was staged is being
    /// checked. Not decided: if the commit stops here, it fails and nothing of it stays.
    Closing,
    /// Its commit is decided (durably) and not finished: it completes, after a crash by a
    /// roll forward.
    Committing,
    /// Finished.
    Ended(TxEnd),
}

impl TxStatus {
    /// The status stored as `ended` (NULL while open) with expiry `expires`.
    pub(crate) fn from_stored(tx: &str, expires: i64, ended: Option<&str>) -> crate::Result<Self> {
        Ok(match ended {
            None => Self::Open { expires },
            Some(CLOSING) => Self::Closing,
            Some(COMMITTING) => Self::Committing,
            Some(e) => TxEnd::parse(e)
                .map(Self::Ended)
                .ok_or_else(|| crate::Error::Corrupt {
                    id: tx.to_string(),
                    message: format!("unknown transaction state {e:?}"),
                })?,
        })
    }
}

/// An OCFL object a transaction changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxObject {
    /// The OCFL object id.
    pub ocfl_id: String,
    /// Whether the object existed in storage when the transaction first changed it.
    pub existed: bool,
    /// The change must become an immutable version even with auto-versioning off.
    pub new_version: bool,
}

/// The new content of one file of an object's next version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxContent {
    /// Small content (headers, RDF), kept in the catalog.
    Bytes(Vec<u8>),
    /// A staged upload file (durable on its own), with its digest in its object's
    /// algorithm.
    Upload {
        /// The upload file's path.
        path: String,
        /// Its digest (sha512 or sha256, lowercase hex).
        digest: DigestValue,
    },
}

/// One file change of an object in a transaction; a later one for the same path replaces
/// it (the version holds only what the transaction ends with).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxFile {
    /// The OCFL object.
    pub ocfl_id: String,
    /// The logical path inside it.
    pub logical_path: String,
    /// New content, or `None` to remove the path.
    pub content: Option<TxContent>,
}

/// A resource as a transaction last wrote it: the record reads inside the transaction see
/// (a binary's `content_file` names its staged upload), and where its content lives in
/// the object.
#[derive(Debug, Clone, PartialEq)]
pub struct TxResource {
    /// The record.
    pub record: ResourceRecord,
    /// The logical path of its content file in the object, if it has one.
    pub content_logical: Option<String>,
}

/// One object of a transaction with what is staged for it, as a commit reads it (a page
/// at a time).
#[derive(Debug, Clone, PartialEq)]
pub struct TxObjectStage {
    /// The object.
    pub object: TxObject,
    /// Its file changes, in path order (none once its part of the commit is applied).
    pub files: Vec<TxFile>,
    /// Its resources as the transaction last wrote them, in id order (none once its part
    /// of the commit is applied).
    pub resources: Vec<TxResource>,
}

impl TxObjectStage {
    /// Whether nothing is staged for the object any more: its part of the commit is
    /// applied ([`CatalogOp::TxObjectsCommitted`]).
    pub fn is_applied(&self) -> bool {
        self.files.is_empty() && self.resources.is_empty()
    }
}

/// What one request adds to a transaction.
#[derive(Debug, Clone, Default)]
pub struct TxStage {
    /// The objects it changes (claimed for the transaction).
    pub objects: Vec<TxObject>,
    /// Their file changes, in order.
    pub files: Vec<TxFile>,
    /// The resources it wrote.
    pub resources: Vec<TxResource>,
    /// Catalog operations for the commit: only [`CatalogOp::Log`] and
    /// [`CatalogOp::ChildrenChanged`] can be kept.
    pub ops: Vec<CatalogOp>,
}

/// Why a transaction's stage was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxRefusal {
    /// The transaction is not open (unknown or ended).
    NotOpen,
    /// Another open transaction owns this object.
    Owned {
        /// The object.
        ocfl_id: String,
    },
}

/// The catalog's store of transaction state (a part of every [`crate::Catalog`]). Times are
/// milliseconds since the epoch.
///
/// A transaction's life: [`tx_begin`](Self::tx_begin) (open) → either
/// [`tx_end`](Self::tx_end) with [`TxEnd::RolledBack`] or [`TxEnd::Expired`], or the
/// commit: [`tx_close`](Self::tx_close) (closing) → [`tx_decide`](Self::tx_decide)
/// (committing) → `tx_end(Committed)`; a commit found wanting while closing ends
/// `tx_end(Failed)`.
#[async_trait]
pub trait TransactionStore: Send + Sync {
    /// Records a new open transaction, begun by `user` (`None`: not recorded, as in
    /// catalogs older than schema 9).
    async fn tx_begin(&self, tx: &str, expires: i64, user: Option<&str>) -> Result<()>;
    /// The user who began a transaction, if it is known and recorded.
    async fn tx_user(&self, tx: &str) -> Result<Option<String>>;
    /// A transaction's status; `None` when unknown.
    async fn tx_status(&self, tx: &str) -> Result<Option<TxStatus>>;
    /// Sets an open transaction's expiry; `false` if it is not open.
    async fn tx_set_expiry(&self, tx: &str, expires: i64) -> Result<bool>;
    /// Open transactions whose expiry is at or before `now`.
    async fn tx_expired(&self, now: i64) -> Result<Vec<String>>;
    /// Every open transaction.
    async fn tx_open(&self) -> Result<Vec<String>>;
    /// Begins an open transaction's commit ([`TxStatus::Closing`]): from now on nothing can
    /// be staged in it. `false` if it was not open.
    async fn tx_close(&self, tx: &str) -> Result<bool>;
    /// Decides a closing transaction's commit ([`TxStatus::Committing`]); durable when it
    /// returns (on SQLite the write-ahead log is synced, with everything staged before it).
    /// `false` if it was not closing.
    async fn tx_decide(&self, tx: &str) -> Result<bool>;
    /// Ends a transaction and, in the same catalog transaction, forgets everything it
    /// staged and releases its objects; its status stays until pruned. It must be in the
    /// state [`TxEnd::ends_from`] names: open for a rollback or an expiry, closing for
    /// [`TxEnd::Failed`], committing for [`TxEnd::Committed`] (durable when it returns, as
    /// [`tx_decide`](Self::tx_decide)). Returns the upload files still staged (the caller
    /// deletes them), or `None` if the transaction was not in that state (nothing changed).
    async fn tx_end(&self, tx: &str, end: TxEnd) -> Result<Option<Vec<String>>>;
    /// Transactions whose commit has begun and not ended ([`TxStatus::Closing`] or
    /// [`TxStatus::Committing`]), in id order.
    async fn tx_commits(&self) -> Result<Vec<(String, TxStatus)>>;
    /// The upload files still staged by transactions whose commit is decided (start-up
    /// keeps them: the roll forward publishes them).
    async fn tx_decided_uploads(&self) -> Result<Vec<String>>;
    /// Adds a request's changes to an open transaction, all or nothing; claims its objects.
    /// Returns the upload files that later changes of the same paths replaced (the caller
    /// deletes them), or why it was refused (nothing staged then).
    async fn tx_stage(
        &self,
        tx: &str,
        stage: TxStage,
    ) -> Result<std::result::Result<Vec<String>, TxRefusal>>;
    /// For each of `ocfl_ids` that a transaction owns (until it ends), `(object,
    /// transaction)`.
    async fn tx_owners(&self, ocfl_ids: &[&str]) -> Result<Vec<(String, String)>>;
    /// An object's entry in a transaction, if the transaction changes it.
    async fn tx_object(&self, tx: &str, ocfl_id: &str) -> Result<Option<TxObject>>;
    /// The objects a transaction changes, in id order, after `after`, at most `limit`.
    async fn tx_objects(
        &self,
        tx: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TxObject>>;
    /// A page of a transaction's objects with what is staged for each (a commit's unit of
    /// work): in id order, after `after`, at most `limit` objects.
    async fn tx_staged(
        &self,
        tx: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TxObjectStage>>;
    /// An object's file changes in a transaction, in path order.
    async fn tx_files(&self, tx: &str, ocfl_id: &str) -> Result<Vec<TxFile>>;
    /// The resources of an object as a transaction last wrote them, in id order.
    async fn tx_resources(&self, tx: &str, ocfl_id: &str) -> Result<Vec<TxResource>>;
    /// A resource as the transaction last wrote it.
    async fn tx_record(&self, tx: &str, id: &FedoraId) -> Result<Option<ResourceRecord>>;
    /// A page of `parent`'s live children as the transaction sees them: the committed ones
    /// it did not delete and those it created, in id order, after `after`, at most `limit`.
    async fn tx_children(
        &self,
        tx: &str,
        parent: &FedoraId,
        after: Option<&FedoraId>,
        limit: usize,
    ) -> Result<Vec<FedoraId>>;
    /// The catalog operations a transaction keeps for its commit, in order, each with its
    /// sequence number (increasing): those after `after`, at most `limit`.
    async fn tx_ops(&self, tx: &str, after: i64, limit: usize) -> Result<Vec<(i64, CatalogOp)>>;
    /// Forgets ended transactions that ended before `before` (their status included).
    async fn tx_prune(&self, before: i64) -> Result<()>;
}
