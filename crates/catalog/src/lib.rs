//! The catalog answers "what is this resource, what are its headers, who are its children,
//! which membership triples name it, who refers to it" without touching storage, and records
//! every committed change in a change log with a monotonic sequence number (consumed later by
//! search, notifications and other nodes).
//!
//! Everything in it is derived from the OCFL root and can be rebuilt from it. [`Catalog`]
//! is the trait the kernel uses; [`SqliteCatalog`] is the embedded implementation and
//! [`PostgresCatalog`] the one several nodes can share.
#![warn(missing_docs)]

mod columns;
mod coordination;
mod postgres;
mod sqlite;
mod transactions;

use std::sync::Arc;

use arca_model::{FedoraId, InteractionModel, ResourceHeaders};
use async_trait::async_trait;

pub use coordination::{
    lock_key, lock_order, Coordination, Leadership, LocalCoordination, ObjectLockGuard,
};
pub use postgres::{
    PgTls, PostgresCatalog, SslMode, CHANGES_CHANNEL, CHANGE_LOG_LOCK,
    SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION,
};
pub use sqlite::SqliteCatalog;
pub use transactions::{
    TransactionStore, TxContent, TxEnd, TxFile, TxObject, TxObjectStage, TxRefusal, TxResource,
    TxStage, TxStatus, CLOSING, COMMITTING,
};

/// Errors of the catalog.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The SQLite database failed.
    #[error("catalog database error: {0}")]
    Database(#[from] rusqlite::Error),
    /// The PostgreSQL database failed, or could not be reached.
    #[error("catalog database error (PostgreSQL): {0}")]
    Postgres(#[from] sqlx::Error),
    /// The group transaction this write was part of failed, for the cause shared by every
    /// write of the group (its kind decides the answer: an outage is still an outage).
    #[error("catalog transaction failed: {0}")]
    Batch(std::sync::Arc<Error>),
    /// A write was dropped by the group commit without an answer (its task ended).
    #[error("catalog transaction failed: {0}")]
    Dropped(&'static str),
    /// TLS to PostgreSQL is misconfigured or failed: a CA file that cannot be read, settings
    /// that disagree, a certificate refused, or a server that requires TLS when it is off.
    #[error("TLS to PostgreSQL: {0}")]
    Tls(String),
    /// The PostgreSQL server connected to is a standby, which cannot take writes (or, with
    /// several hosts, none of them takes writes).
    #[error("{0}")]
    Standby(String),
    /// The PostgreSQL URL cannot be used: a malformed host list, a `target_session_attrs`
    /// arca cannot honour.
    #[error("invalid PostgreSQL URL: {0}")]
    InvalidUrl(String),
    /// The operation is not supported here.
    #[error("not supported by the catalog: {0}")]
    Unsupported(String),
    /// A stored row could not be decoded.
    #[error("catalog row for {id} is corrupt: {message}")]
    Corrupt {
        /// The resource.
        id: String,
        /// What is wrong.
        message: String,
    },
}

impl Error {
    /// Whether the failure is expected to pass by itself, so that the request may be tried
    /// again (503 with `Retry-After`): the database cannot be reached or is restarting, no
    /// connection or lock came within its timeout, or PostgreSQL broke a deadlock or a
    /// serialization conflict.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Batch(cause) => cause.is_unavailable(),
            Self::Postgres(sqlx::Error::Database(e)) => e.code().is_some_and(|code| {
                // 08: connection exception; 57P01-57P03: shutting down or starting up;
                // 55P03: lock not available (lock_timeout); 40001/40P01: serialization
                // failure, deadlock; 25006: read-only transaction (a primary demoted under
                // a write, until the catalog follows the failover).
                code.starts_with("08")
                    || matches!(
                        &*code,
                        "57P01" | "57P02" | "57P03" | "55P03" | "40001" | "40P01" | "25006"
                    )
            }),
            Self::Postgres(
                sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed,
            ) => true,
            Self::Database(rusqlite::Error::SqliteFailure(e, _)) => matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ),
            _ => false,
        }
    }
}

/// Result type of the catalog.
pub type Result<T> = std::result::Result<T, Error>;

/// What the catalog knows of one resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceRecord {
    /// The resource id.
    pub id: FedoraId,
    /// The containing resource (`None` for the root, descriptions and ACLs).
    pub parent: Option<FedoraId>,
    /// The OCFL object holding the resource.
    pub ocfl_id: String,
    /// The resource's `.fcrepo` header.
    pub headers: ResourceHeaders,
    /// Content file relative to the storage root, if the resource has content.
    pub content_file: Option<String>,
    /// For RDF sources, the stored N-Triples (internal ids), so reads need no storage access.
    pub rdf: Option<Vec<u8>>,
    /// Nanoseconds since the epoch of the last change to this container's children, if any.
    pub children_changed: Option<i64>,
}

impl ResourceRecord {
    /// Whether the resource is a tombstone.
    pub fn is_deleted(&self) -> bool {
        self.headers.deleted
    }
}

/// A resource's record with what a read of its current state needs beside it
/// ([`Catalog::get_for_read`]): its description's triples, and whether listing its
/// children or its membership triples can find anything.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadRecord {
    /// The resource, live or tombstone.
    pub record: ResourceRecord,
    /// For a binary, the stored N-Triples of its live description (`None` when it has
    /// none, or no triples); `None` for other resources.
    pub description_rdf: Option<Vec<u8>>,
    /// `false` only when the catalog knows the resource has no live children.
    pub may_have_children: bool,
    /// `false` only when the catalog knows no membership triple names the resource (a
    /// description: its binary) as subject (it is no membership resource of anything).
    pub may_have_membership: bool,
    /// What a reader built from this record once, kept with it while the catalog's read
    /// cache shares it (and dropped with it when the resource changes).
    pub derived: Derived,
}

/// A slot for one value a reader derives from a shared [`ReadRecord`] (the HTTP layer keeps
/// a read's headers there), so that every read of the same cached record reuses it.
///
/// The value's type is the reader's: the catalog neither knows nor looks at it. A copy of
/// the record starts empty, and records compare equal whatever their slots hold.
#[derive(Default)]
pub struct Derived(std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>>);

impl Derived {
    /// The value in the slot, made by `make` if the slot is empty; `None` when the slot
    /// holds a value of another type.
    pub fn get_or_init<T: std::any::Any + Send + Sync>(
        &self,
        make: impl FnOnce() -> T,
    ) -> Option<&T> {
        self.0.get_or_init(|| Box::new(make())).downcast_ref()
    }
}

impl Clone for Derived {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for Derived {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "Derived(set)"
        } else {
            "Derived(empty)"
        })
    }
}

/// The kind of a change-log entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// The resource was created.
    Create,
    /// The resource was modified.
    Update,
    /// The resource was deleted (it is a tombstone now).
    Delete,
    /// The resource was purged.
    Purge,
    /// A statement that refers to the resource was added (Fedora's `Follow` event).
    Follow,
    /// A fixity audit checked the resource's stored bytes (a PREMIS fixity event): found
    /// them damaged, or repaired them. Nothing of the resource changed: the search index
    /// and the replicas have nothing to do for it. The entry's `agent` holds what the
    /// check found (expected and actual digest, the file), since no request made it.
    Fixity(FixityOutcome),
}

/// The outcome of a fixity check recorded in the change log (PREMIS `eventOutcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixityOutcome {
    /// The stored bytes do not have the recorded digest, or are missing.
    Failure,
    /// Damage found earlier was repaired: the bytes have the recorded digest again.
    Success,
}

impl ChangeKind {
    /// Name stored in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update => "update",
            Self::Delete => "delete",
            Self::Purge => "purge",
            Self::Follow => "follow",
            Self::Fixity(FixityOutcome::Failure) => "fixity-failure",
            Self::Fixity(FixityOutcome::Success) => "fixity-success",
        }
    }

    /// Whether the entry changed the resource (a fixity check does not): what followers of
    /// the log that copy or index resources act on.
    pub fn changes_resource(self) -> bool {
        !matches!(self, Self::Fixity(_))
    }

    /// The kind stored in the log as `s` ([`as_str`](Self::as_str)).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "create" => Self::Create,
            "update" => Self::Update,
            "delete" => Self::Delete,
            "purge" => Self::Purge,
            "follow" => Self::Follow,
            "fixity-failure" => Self::Fixity(FixityOutcome::Failure),
            "fixity-success" => Self::Fixity(FixityOutcome::Success),
            _ => return None,
        })
    }
}

/// One change to a resource, as the change log keeps it (and events report it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The resource changed.
    pub id: FedoraId,
    /// What happened.
    pub kind: ChangeKind,
    /// When (RFC 3339).
    pub at: String,
    /// Who (the user name).
    pub user: String,
    /// The software that made the request (its `User-Agent`), if known; for a
    /// [`ChangeKind::Fixity`] entry, what the check found (no request made it).
    pub agent: Option<String>,
    /// The resource's rdf:types at the change (server-managed and its own), IRIs; empty for
    /// deletes and purges.
    pub types: Vec<String>,
}

/// One committed change, in commit order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeEntry {
    /// Monotonic sequence number.
    pub seq: i64,
    /// The change.
    pub change: Change,
}

/// One generated membership triple (LDP direct and indirect containers), with the container
/// member (`proxy`) whose existence generates it. Terms are IRIs, internal (`info:fedora/…`)
/// for repository resources.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MembershipRow {
    /// The child of the container that generates the triple.
    pub proxy: FedoraId,
    /// Subject: the membership resource (`ldp:hasMemberRelation`) or the member
    /// (`ldp:isMemberOfRelation`).
    pub subject: String,
    /// The membership predicate.
    pub predicate: String,
    /// Object: the member, or the membership resource.
    pub object: String,
}

/// One statement of a resource that points at a repository resource (an inbound reference
/// of `target`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ReferenceRow {
    /// The statement's subject (the resource, one of its hash URIs, or a binary described).
    pub subject: String,
    /// The predicate.
    pub predicate: String,
    /// The repository resource referred to.
    pub target: FedoraId,
}

/// One memento of a resource: an OCFL version in which its header changed (Fedora 6's
/// rule), at the version's creation instant truncated to seconds. Later versions in the same
/// second replace earlier ones, as the memento's URL can name only one.
#[derive(Debug, Clone, PartialEq)]
pub struct MementoRow {
    /// The original resource.
    pub id: FedoraId,
    /// Memento datetime, seconds since the epoch.
    pub datetime: i64,
    /// The OCFL version (`v3`).
    pub version: String,
    /// Its header file in that version, relative to the storage root.
    pub header_file: String,
    /// Its content file in that version, relative to the storage root.
    pub content_file: Option<String>,
}

/// A change of one OCFL object in a store without a journal (S3) that is under way: the
/// write path records it (durably, [`CatalogOp::BeginWrite`]) before the first file of the
/// change is written, and forgets it ([`CatalogOp::FinishWrite`]) in the catalog
/// transaction that records the change. A row that stays behind is a change whose node
/// stopped in the middle: any node may finish or undo it in storage from `record` (see the
/// kernel's recovery), once it holds the object's lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingWrite {
    /// The operation (unique; one operation may change several objects).
    pub op: String,
    /// The OCFL object.
    pub object: String,
    /// When it started, milliseconds since the epoch.
    pub started: i64,
    /// Whether the operation decided to commit (an operation on several objects decides
    /// before it writes the first commit point, so that all or none take effect).
    pub decided: bool,
    /// How to finish or undo the change in storage (the OCFL layer's, opaque here).
    pub record: Vec<u8>,
}

/// A write to the catalog; a list of them is applied atomically by [`Catalog::apply`].
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // short-lived; boxing would only add allocations
pub enum CatalogOp {
    /// Insert or replace a resource.
    Put(ResourceRecord),
    /// Forget a resource (purge).
    Remove(FedoraId),
    /// Note that a container's children, or the membership triples naming a resource,
    /// changed at this instant (nanoseconds); part of the resource's ETag.
    ChildrenChanged(FedoraId, i64),
    /// Replaces the membership triples generated by container `source` (only those of
    /// member `proxy` when given) by `rows`.
    ReplaceMembership {
        /// The direct or indirect container.
        source: FedoraId,
        /// Restrict the replacement to this member's triples.
        proxy: Option<FedoraId>,
        /// The new triples.
        rows: Vec<MembershipRow>,
    },
    /// Replaces the outbound references recorded for resource `source` by `rows`.
    ReplaceReferences {
        /// The resource whose triples hold the references.
        source: FedoraId,
        /// The new references.
        rows: Vec<ReferenceRow>,
    },
    /// Forgets what resource `id` contributes to membership (as container or member) and
    /// its outbound references (it was deleted or purged).
    ForgetDerived(FedoraId),
    /// Records a memento (replacing one of the same resource and second).
    PutMemento(MementoRow),
    /// Records that the resource's current state (the `Put` before it in the same list) is
    /// a memento. It is kept with the resource's own row and moves to the resource's
    /// earlier mementos when a later `Put` replaces that state, so that creating a resource
    /// costs no row of its own (a `Put` without it, e.g. of a change in a mutable HEAD,
    /// makes the current state no memento).
    CurrentMemento(MementoRow),
    /// Forgets every memento of a resource (purge, or before re-deriving them).
    ForgetMementos(FedoraId),
    /// Append to the change log.
    Log(Change),
    /// Records a change of an object that is under way (see [`PendingWrite`]).
    BeginWrite(PendingWrite),
    /// Marks every object of operation `op` decided.
    DecideWrite(String),
    /// Forgets operation `op` (only its row for `object` when given): it is recorded, or
    /// was undone.
    FinishWrite {
        /// The operation.
        op: String,
        /// Only this object's row.
        object: Option<String>,
    },
    /// Forgets what transaction `tx` staged for the OCFL objects `ocfl_ids` (their files and
    /// records; the objects stay claimed until the transaction ends): the part of its
    /// commit that the same list of operations writes.
    TxObjectsCommitted {
        /// The transaction.
        tx: String,
        /// The objects.
        ocfl_ids: Vec<String>,
    },
    /// Forgets the catalog operations transaction `tx` kept, up to sequence number
    /// `through` ([`TransactionStore::tx_ops`]): the same list of operations applies them.
    TxOpsCommitted {
        /// The transaction.
        tx: String,
        /// The last sequence number applied.
        through: i64,
    },
}

/// How much the catalog holds ([`Catalog::totals`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// OCFL objects that hold at least one resource (live or tombstone).
    pub objects: u64,
    /// Live resources.
    pub resources: u64,
}

/// A change-log consumer's next read: [`Catalog::changes_since`]`(after, limit)`, or
/// nothing without asking when nothing can be new — the consumer's last read was short
/// (`caught_up`: it got everything committed then) and `last_change` (the catalog's
/// [`Catalog::last_change`]) announces nothing after `after`. The consumer then waits on
/// `last_change` as after any empty read; a commit announced meanwhile is seen there.
pub async fn changes_if_announced(
    catalog: &dyn Catalog,
    last_change: &tokio::sync::watch::Receiver<i64>,
    caught_up: bool,
    after: i64,
    limit: usize,
) -> Result<Vec<ChangeEntry>> {
    if caught_up && *last_change.borrow() <= after {
        return Ok(Vec::new());
    }
    catalog.changes_since(after, limit).await
}

/// The catalog as the kernel sees it, with the state of open transactions
/// ([`TransactionStore`]). Implementations: [`SqliteCatalog`] (embedded) and
/// [`PostgresCatalog`] (shared by several nodes). Lookups of missing resources return `Ok(None)` or an empty list,
/// never an error.
#[async_trait]
pub trait Catalog: TransactionStore + Coordination {
    /// One resource, live or tombstone.
    async fn get(&self, id: &FedoraId) -> Result<Option<ResourceRecord>>;
    /// One resource, live or tombstone, with what a read of it needs beside it
    /// ([`ReadRecord`]), in one round where the implementation can. The default reads the
    /// record and a binary's description apart and knows nothing of children or membership.
    async fn get_for_read(&self, id: &FedoraId) -> Result<Option<Arc<ReadRecord>>> {
        let Some(record) = self.get(id).await? else {
            return Ok(None);
        };
        let description_rdf = if record.headers.model() == Some(InteractionModel::NonRdfSource) {
            self.get(&id.description())
                .await?
                .filter(|d| !d.is_deleted())
                .and_then(|d| d.rdf)
        } else {
            None
        };
        Ok(Some(Arc::new(ReadRecord {
            record,
            description_rdf,
            may_have_children: true,
            may_have_membership: true,
            derived: Derived::default(),
        })))
    }
    /// Live children of `parent` in id order, after `after` (exclusive), at most `limit`.
    async fn children(
        &self,
        parent: &FedoraId,
        after: Option<&FedoraId>,
        limit: usize,
    ) -> Result<Vec<FedoraId>>;
    /// Children of `parent`, live and tombstones, in id order, after `after` (exclusive), at
    /// most `limit` (the Fedora 3 facade lists deleted objects too).
    async fn children_any(
        &self,
        parent: &FedoraId,
        after: Option<&FedoraId>,
        limit: usize,
    ) -> Result<Vec<FedoraId>>;
    /// The children `parent` had at instant `at` (nanoseconds since the epoch): created at
    /// or before it and not yet deleted then (purged children are forgotten), in id order.
    async fn children_at(&self, parent: &FedoraId, at: i64) -> Result<Vec<FedoraId>>;
    /// Whether `parent` has at least one live child.
    async fn has_children(&self, parent: &FedoraId) -> Result<bool>;
    /// Whether any resource (live or not) lies below `id` in the path hierarchy.
    async fn has_descendants(&self, id: &FedoraId) -> Result<bool>;
    /// Every resource whose id lies below `id` in the path hierarchy (live or not).
    async fn descendants(&self, id: &FedoraId) -> Result<Vec<ResourceRecord>>;
    /// Every resource stored in one OCFL object.
    async fn in_object(&self, ocfl_id: &str) -> Result<Vec<ResourceRecord>>;
    /// Live resources (tombstones left out) with ids after `after`, in id order, at most
    /// `limit`: a scan of the whole repository in pages (reindexing the search index).
    async fn live_after(
        &self,
        after: Option<&FedoraId>,
        limit: usize,
    ) -> Result<Vec<ResourceRecord>>;
    /// How many live resources there are.
    async fn live_count(&self) -> Result<u64>;
    /// Applies writes and change-log entries in one transaction; returns the last sequence
    /// number assigned (or the current one if nothing was logged).
    async fn apply(&self, ops: Vec<CatalogOp>) -> Result<i64>;
    /// Change-log entries with `seq > after`, oldest first, at most `limit`.
    async fn changes_since(&self, after: i64, limit: usize) -> Result<Vec<ChangeEntry>>;
    /// How far consumer `name` of the change log (event delivery to a destination, the
    /// search index) has got: the last sequence number it finished. Kept apart from the
    /// derived data, so a rebuild does not forget it.
    async fn consumer_position(&self, name: &str) -> Result<Option<i64>>;
    /// Records how far consumer `name` has got.
    async fn set_consumer_position(&self, name: &str, position: i64) -> Result<()>;
    /// Every consumer and its position, by name.
    async fn consumer_positions(&self) -> Result<Vec<(String, i64)>>;
    /// The sequence number of the last committed change, kept current: a receiver wakes when
    /// changes commit (event delivery and live streams follow it instead of polling).
    fn last_change(&self) -> tokio::sync::watch::Receiver<i64>;
    /// The sequence number of the last change committed by another node sharing the
    /// catalog (or announced while whose it was could not be told), kept current: what a
    /// follower of other nodes' changes waits on, since this node's own commits reach their
    /// watchers before they are answered. The default, for a catalog of one node, is
    /// [`last_change`](Self::last_change).
    fn last_foreign_change(&self) -> tokio::sync::watch::Receiver<i64> {
        self.last_change()
    }
    /// The lowest sequence number still in the change log (0 when empty).
    async fn first_change(&self) -> Result<i64>;
    /// Forgets change-log entries older than `before` (RFC 3339) whose sequence number is at
    /// most `up_to` (a retention window that never drops what a consumer still needs);
    /// returns how many were dropped.
    async fn forget_changes(&self, before: &str, up_to: i64) -> Result<u64>;
    /// Regenerates the change log from the catalog's own rows after a rebuild that found the
    /// log empty (the catalog was lost): per resource, a `create` at its first memento, an
    /// `update` at each later one and a `delete` for a tombstone, all in time order, with
    /// the users the resource's current header names and no types or agent. Returns how
    /// many entries it wrote; writes nothing when the log is not empty.
    async fn regenerate_changes(&self) -> Result<u64>;
    /// Membership triples whose subject is `subject`, as `(predicate, object)` ordered by
    /// predicate then object, after `after` (exclusive), at most `limit`.
    async fn membership(
        &self,
        subject: &str,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<(String, String)>>;
    /// Membership rows generated by members of container `source` (for checks and tests),
    /// in order.
    async fn membership_of_source(&self, source: &FedoraId) -> Result<Vec<MembershipRow>>;
    /// Live direct and indirect containers (those whose members generate membership).
    async fn membership_sources(&self) -> Result<Vec<FedoraId>>;
    /// Statements of other resources pointing at `target`, as `(subject, predicate)`
    /// ordered by subject then predicate, after `after` (exclusive), at most `limit`.
    async fn references_to(
        &self,
        target: &FedoraId,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<(String, String)>>;
    /// The repository resources the statements of `source` refer to, each once, in order.
    async fn references_from(&self, source: &FedoraId) -> Result<Vec<FedoraId>>;
    /// The memento datetimes of `id` (seconds since the epoch), oldest first.
    async fn mementos(&self, id: &FedoraId) -> Result<Vec<i64>>;
    /// The latest memento of `id` at or before `datetime` (seconds since the epoch).
    async fn memento_at_or_before(
        &self,
        id: &FedoraId,
        datetime: i64,
    ) -> Result<Option<MementoRow>>;
    /// Number of resources (live and tombstones).
    async fn count(&self) -> Result<u64>;
    /// Succeeds when the catalog answers a trivial query (the readiness check). Callers
    /// bound it with their own timeout.
    async fn ping(&self) -> Result<()>;
    /// OCFL objects and live resources, for the status page: counts over indexes, not a
    /// scan of the rows (still proportional to their number: call it once a minute, not per
    /// request).
    async fn totals(&self) -> Result<Totals>;
    /// The changes under way of OCFL object `object` (see [`PendingWrite`]).
    async fn pending_writes_of(&self, object: &str) -> Result<Vec<PendingWrite>>;
    /// Changes under way that started before `started_before` (milliseconds since the
    /// epoch), oldest first, at most `limit`.
    async fn pending_writes(&self, started_before: i64, limit: usize) -> Result<Vec<PendingWrite>>;
    /// A value from the catalog's own key/value table.
    async fn meta(&self, key: &str) -> Result<Option<String>>;
    /// Sets a value in the catalog's own key/value table.
    async fn set_meta(&self, key: &str, value: &str) -> Result<()>;
    /// Forgets every resource, memento, membership and reference row and meta value (before a full
    /// rebuild); keeps the change log and the state of transactions (not derived from storage).
    async fn clear(&self) -> Result<()>;
    /// Starts (`true`) or ends (`false`) a rebuild's bulk load, after [`clear`](Self::clear)
    /// or on resuming one. A backend may then stage the records, mementos and references
    /// applied meanwhile and put them in place, in key order, only at the end, with its
    /// secondary indexes built once, sorted: rows loaded are not read back before the end.
    /// A bulk load cut short keeps what it staged for the rebuild that resumes it.
    async fn bulk_load(&self, _on: bool) -> Result<()> {
        Ok(())
    }
    /// Takes the write locks of `exclusive` and `shared` (as
    /// [`Coordination::lock_objects`]) and then, under them, reads what a write checks
    /// before it plans ([`WriteReads`]). PostgreSQL does both in one round trip.
    async fn lock_and_read(
        &self,
        exclusive: &[&str],
        shared: &[&str],
        reads: &WriteReads,
    ) -> Result<(ObjectLockGuard, WriteSnapshot)> {
        let locks = self.lock_objects(exclusive, shared).await?;
        let mut snapshot = WriteSnapshot::default();
        for id in &reads.records {
            if let Some(record) = self.get(id).await? {
                snapshot.records.push(record);
            }
        }
        if let Some(id) = &reads.descendants_of {
            snapshot.has_descendants = self.has_descendants(id).await?;
        }
        let objects: Vec<&str> = reads.objects.iter().map(String::as_str).collect();
        snapshot.owners = self.tx_owners(&objects).await?;
        for object in &objects {
            snapshot
                .pending
                .extend(self.pending_writes_of(object).await?);
        }
        if let Some(begin) = &reads.begin {
            if snapshot.lets_begin(begin) {
                let rows = begin.writes.iter().cloned().map(CatalogOp::BeginWrite);
                self.apply(rows.collect()).await?;
                snapshot.begun = true;
            }
        }
        Ok((locks, snapshot))
    }
    /// Applies `ops` (as [`apply`](Self::apply)) and then lets go of `locks`, those of the
    /// write that `ops` record. PostgreSQL does both in one round trip, on the locks' own
    /// connection; the locks go only once the change is committed.
    async fn apply_and_unlock(&self, ops: Vec<CatalogOp>, locks: ObjectLockGuard) -> Result<i64> {
        let applied = self.apply(ops).await;
        drop(locks);
        applied
    }
}

/// What a write reads under its locks before it plans ([`Catalog::lock_and_read`]).
#[derive(Debug, Clone, Default)]
pub struct WriteReads {
    /// Resources whose records the write needs (live or tombstones).
    pub records: Vec<FedoraId>,
    /// A resource below which the write checks for any other resource.
    pub descendants_of: Option<FedoraId>,
    /// OCFL objects whose transaction owners ([`TransactionStore::tx_owners`]) and changes
    /// under way ([`Catalog::pending_writes_of`]) the write checks.
    pub objects: Vec<String>,
    /// Changes under way to record in the same step if the reads find that the write may
    /// go ahead ([`WriteSnapshot::begun`]).
    pub begin: Option<BeginIf>,
}

/// Changes under way ([`PendingWrite`]) that [`Catalog::lock_and_read`] records once its
/// reads found that a new resource may be written: `absent` does not exist (not even as a
/// tombstone), nothing lies below [`WriteReads::descendants_of`], no transaction owns and
/// no change is under way of any of [`WriteReads::objects`], and `live` exists and is not
/// deleted.
#[derive(Debug, Clone)]
pub struct BeginIf {
    /// The rows to record.
    pub writes: Vec<PendingWrite>,
    /// The resource that must not exist.
    pub absent: FedoraId,
    /// The resource that must exist, live.
    pub live: FedoraId,
}

/// What [`Catalog::lock_and_read`] found for a [`WriteReads`].
#[derive(Debug, Clone, Default)]
pub struct WriteSnapshot {
    /// The records of those asked for that exist.
    pub records: Vec<ResourceRecord>,
    /// Whether a resource exists below `descendants_of`.
    pub has_descendants: bool,
    /// `(object, transaction)` for each object a transaction owns.
    pub owners: Vec<(String, String)>,
    /// The changes under way of the objects (before those recorded here).
    pub pending: Vec<PendingWrite>,
    /// Whether the rows of [`WriteReads::begin`] were recorded.
    pub begun: bool,
}

impl WriteSnapshot {
    /// Whether these reads let `begin`'s rows be recorded (see [`BeginIf`]).
    pub fn lets_begin(&self, begin: &BeginIf) -> bool {
        self.record(&begin.absent).is_none()
            && self.record(&begin.live).is_some_and(|r| !r.is_deleted())
            && !self.has_descendants
            && self.owners.is_empty()
            && self.pending.is_empty()
    }

    /// The record of `id`, if it exists.
    pub fn record(&self, id: &FedoraId) -> Option<&ResourceRecord> {
        self.records.iter().find(|r| &r.id == id)
    }
}
