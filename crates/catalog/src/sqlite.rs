mod read_cache;
mod transactions;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arca_model::{FedoraId, InteractionModel, ResourceHeaders};
use async_trait::async_trait;
use parking_lot::Mutex;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Row};

use self::read_cache::{HeldWriter, ReadCache, WriterLock};
use crate::columns::{alive_at, join_types, parse_id, split_types};
use crate::{
    Catalog, CatalogOp, Change, ChangeEntry, ChangeKind, Coordination, Error, Leadership,
    LocalCoordination, MembershipRow, MementoRow, ObjectLockGuard, PendingWrite, ReadRecord,
    ResourceRecord, Result,
};

/// Indexes of [`SCHEMA`] that no lookup by primary key needs: set aside during a bulk load
/// and created again (by the schema) at its end.
const SECONDARY_INDEXES: [&str; 6] = [
    "resources_by_parent",
    "resources_by_object",
    "tombstones_by_parent",
    "membership_by_subject",
    "membership_by_proxy",
    "refs_by_target",
];

/// The staging tables of a bulk load: rows appended as they come (rowid order).
const STAGING: &str = "
CREATE TABLE IF NOT EXISTS bulk_resources (id TEXT NOT NULL, parent TEXT, ocfl_id TEXT NOT NULL,
    deleted INTEGER NOT NULL, headers BLOB NOT NULL, content_file TEXT, rdf BLOB,
    children_changed INTEGER);
CREATE TABLE IF NOT EXISTS bulk_mementos (id TEXT NOT NULL, datetime INTEGER NOT NULL,
    version TEXT NOT NULL, header_file TEXT NOT NULL, content_file TEXT);
CREATE TABLE IF NOT EXISTS bulk_refs (source TEXT NOT NULL, subject TEXT NOT NULL,
    predicate TEXT NOT NULL, target TEXT NOT NULL);";

/// Moves the staged rows into place in key order (later rows win, as in `apply`) and drops
/// the staging tables.
const UNSTAGE: &str = "
INSERT OR REPLACE INTO resources (id, parent, ocfl_id, deleted, headers, content_file, rdf,
    children_changed)
    SELECT id, parent, ocfl_id, deleted, headers, content_file, rdf, children_changed
    FROM bulk_resources ORDER BY id, rowid;
INSERT OR REPLACE INTO mementos (id, datetime, version, header_file, content_file)
    SELECT id, datetime, version, header_file, content_file
    FROM bulk_mementos ORDER BY id, datetime, rowid;
INSERT OR IGNORE INTO refs (source, subject, predicate, target)
    SELECT source, subject, predicate, target FROM bulk_refs
    ORDER BY source, subject, predicate, target;
DROP TABLE bulk_resources; DROP TABLE bulk_mementos; DROP TABLE bulk_refs;";

/// The writer's page cache during a bulk load, in KiB (512 MiB): it serves the sort of the
/// staged rows and the index builds at the end (a million objects: 1.7 GB peak RSS).
const BULK_CACHE_KIB: u64 = 512 * 1024;

/// The catalog's tables. `resources` is an ordinary rowid table, unlike the small-row
/// tables: a WITHOUT ROWID table keeps at most about 1 KB of a row in its 4 KiB B-tree pages
/// and moves the rest to an overflow page of its own, and a resource row (headers, paths,
/// often RDF) is mostly larger than that. Measured: 4.7 KB of pages per empty container as
/// WITHOUT ROWID, 1.2 KB as rowid table.
const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS resources (
    id TEXT PRIMARY KEY NOT NULL,
    parent TEXT,
    ocfl_id TEXT NOT NULL,
    deleted INTEGER NOT NULL,
    headers BLOB NOT NULL,
    content_file TEXT,
    rdf BLOB,
    children_changed INTEGER,
    memento_datetime INTEGER,
    memento_version TEXT,
    memento_header TEXT
);
CREATE INDEX IF NOT EXISTS resources_by_parent ON resources(parent, id) WHERE deleted = 0;
CREATE INDEX IF NOT EXISTS resources_by_object ON resources(ocfl_id);
CREATE INDEX IF NOT EXISTS tombstones_by_parent ON resources(parent, id) WHERE deleted = 1;
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    kind TEXT NOT NULL,
    at TEXT NOT NULL,
    user TEXT NOT NULL,
    agent TEXT,
    types TEXT
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS consumers (name TEXT PRIMARY KEY NOT NULL, position INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS membership (
    source TEXT NOT NULL,
    proxy TEXT NOT NULL,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    object TEXT NOT NULL,
    PRIMARY KEY (source, proxy, subject, predicate, object)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS membership_by_subject ON membership(subject, predicate, object);
CREATE INDEX IF NOT EXISTS membership_by_proxy ON membership(proxy);
CREATE TABLE IF NOT EXISTS membership_sources (id TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS refs (
    source TEXT NOT NULL,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    target TEXT NOT NULL,
    PRIMARY KEY (source, subject, predicate, target)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS refs_by_target ON refs(target, subject, predicate);
CREATE TABLE IF NOT EXISTS mementos (
    id TEXT NOT NULL,
    datetime INTEGER NOT NULL,
    version TEXT NOT NULL,
    header_file TEXT NOT NULL,
    content_file TEXT,
    PRIMARY KEY (id, datetime)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS transactions (
    id TEXT PRIMARY KEY NOT NULL,
    expires INTEGER NOT NULL,
    ended TEXT,
    ended_at INTEGER,
    user TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tx_objects (
    ocfl_id TEXT PRIMARY KEY NOT NULL,
    tx TEXT NOT NULL,
    existed INTEGER NOT NULL,
    new_version INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tx_objects_by_tx ON tx_objects(tx, ocfl_id);
CREATE TABLE IF NOT EXISTS tx_files (
    tx TEXT NOT NULL,
    ocfl_id TEXT NOT NULL,
    logical_path TEXT NOT NULL,
    bytes BLOB,
    upload TEXT,
    digest TEXT,
    PRIMARY KEY (tx, ocfl_id, logical_path)
);
CREATE TABLE IF NOT EXISTS tx_resources (
    tx TEXT NOT NULL,
    id TEXT NOT NULL,
    parent TEXT,
    ocfl_id TEXT NOT NULL,
    deleted INTEGER NOT NULL,
    headers BLOB NOT NULL,
    content_file TEXT,
    rdf BLOB,
    content_logical TEXT,
    PRIMARY KEY (tx, id)
);
CREATE INDEX IF NOT EXISTS tx_resources_by_object ON tx_resources(tx, ocfl_id, id);
CREATE INDEX IF NOT EXISTS tx_resources_by_parent ON tx_resources(tx, parent, id);
CREATE TABLE IF NOT EXISTS tx_ops (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tx TEXT NOT NULL,
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    at TEXT,
    nanos INTEGER,
    user TEXT,
    agent TEXT,
    types TEXT
);
CREATE INDEX IF NOT EXISTS tx_ops_by_tx ON tx_ops(tx, seq);
CREATE TABLE IF NOT EXISTS pending_writes (
    op TEXT NOT NULL,
    object TEXT NOT NULL,
    started INTEGER NOT NULL,
    decided INTEGER NOT NULL,
    record BLOB NOT NULL,
    PRIMARY KEY (op, object)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS pending_writes_by_object ON pending_writes(object);
CREATE INDEX IF NOT EXISTS pending_writes_by_start ON pending_writes(started);
"#;

/// Version of the schema above (`PRAGMA user_version`). A catalog written by an older
/// version lacks derived rows; it is emptied on open so that the kernel rebuilds it from
/// storage. Version 6 differs in the name of `tx_files.digest` (`sha512`, bare hex): the
/// column is renamed in place; versions 6 and 7 lack the change log's `agent` and `types`
/// (the agent and rdf:types events report), which are added (empty for older entries);
/// versions 6 to 8 lack `transactions.user` (who began it), added empty.
const SCHEMA_VERSION: i64 = 9;

/// Adds the change log's event columns to a version 6 or 7 catalog.
/// Schema 9's column added to a catalog of version 6 to 8.
const ADD_TX_USER: &str = "ALTER TABLE transactions ADD COLUMN user TEXT;";

const ADD_EVENT_COLUMNS: &str = "ALTER TABLE changes ADD COLUMN agent TEXT;
ALTER TABLE changes ADD COLUMN types TEXT;
ALTER TABLE tx_ops ADD COLUMN agent TEXT;
ALTER TABLE tx_ops ADD COLUMN types TEXT;";

pub(crate) const COLUMNS: &str =
    "id, parent, ocfl_id, headers, content_file, rdf, children_changed";

/// [`Catalog::get_for_read`]'s statement: the record of `?1` ([`COLUMNS`]), the triples of
/// `?2` (its description) if live, and whether `?1` has a live child and whether
/// membership triples name `?3` (its IRI; a description's binary's) as subject. The literal `deleted = 0` lets the
/// probe use the partial index `resources_by_parent`.
const READ_RECORD: &str =
    "SELECT id, parent, ocfl_id, headers, content_file, rdf, children_changed,
    (SELECT d.rdf FROM resources d WHERE d.id = ?2 AND d.deleted = 0),
    EXISTS (SELECT 1 FROM resources c WHERE c.parent = ?1 AND c.deleted = 0),
    EXISTS (SELECT 1 FROM membership m WHERE m.subject = ?3)
    FROM resources WHERE id = ?1";

/// Turns off SQLite's memory statistics before its first connection opens: with them on,
/// every allocation of every connection takes one process-wide mutex, which readers on all
/// cores then queue for (futex waits in profiles of GETs). Later calls, and a call after
/// SQLite started, change nothing.
fn without_memory_statistics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: sqlite3_config is called before any connection of this process is
        // opened by the catalog; if SQLite is already initialized it answers SQLITE_MISUSE
        // and changes nothing.
        let rc = unsafe {
            rusqlite::ffi::sqlite3_config(
                rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS,
                0 as std::ffi::c_int,
            )
        };
        if rc != rusqlite::ffi::SQLITE_OK {
            tracing::debug!(
                rc,
                "SQLite's memory statistics stay on (already initialized)"
            );
        }
    });
}

/// Sets `conn` up so that each statement is prepared (parsed and planned) once, not once per
/// request: a statement cache that holds every statement of the catalog, and SQLite's query
/// planner stability guarantee. Without the latter, a statement whose WHERE clause SQLite
/// compares with a partial index's (`resources_by_parent … WHERE deleted = 0`) is prepared
/// again at every new binding of its parameters: 18 % of the server's CPU on GETs of
/// containers went into `sqlite3Reprepare` (BENCHMARKS.md, issue 42). The plans do not
/// change: the partial index is matched by the literal `deleted = 0` of the queries.
fn prepare_once(conn: &Connection) -> Result<()> {
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

/// Prepared statements kept per connection: every statement of the catalog fits (rusqlite
/// keeps 16 by default, fewer than the catalog has).
const STATEMENT_CACHE: usize = 256;

/// The embedded catalog: one SQLite database in WAL mode, one writer connection and a pool
/// of readers. Statements are short point lookups and run inline on the calling thread.
///
/// Durability: commits use `synchronous=NORMAL`; the kernel's group commit (a filesystem
/// sync after every write batch) makes the WAL durable before a request is acknowledged,
/// which is why the database must live on the same filesystem as the OCFL root.
pub struct SqliteCatalog {
    path: PathBuf,
    /// The one writer connection; its lock counts the writes, for `reads`.
    writer: WriterLock,
    readers: Mutex<Vec<Connection>>,
    /// Recent answers of [`Catalog::get_for_read`], good until the next write.
    reads: ReadCache,
    /// Writes waiting for the writer; whoever holds the writer commits them all in one
    /// transaction (group commit: many requests, one WAL append).
    pending: Mutex<Vec<QueuedWrite>>,
    /// Whether any transaction may own an object (false only when none can): spares
    /// ordinary writes a lookup while no transaction is open.
    tx_claims: AtomicBool,
    /// The last committed change-log sequence number, for [`Catalog::last_change`].
    last_change: tokio::sync::watch::Sender<i64>,
    /// Per-object locks and roles (one node: in process).
    coordination: LocalCoordination,
    /// A bulk load is under way: records, mementos and references go to the staging
    /// tables ([`STAGING`]) and into place, in key order, at its end.
    bulk: AtomicBool,
    /// The background checkpoints wait: a bulk load checkpoints its own WAL of gigabytes
    /// while it holds the writer (a restarting checkpoint of it in the background would
    /// hold the write lock for minutes).
    checkpoints_paused: Arc<AtomicBool>,
}

/// Above this size the WAL is checkpointed with RESTART, so that the next write starts it
/// over, and it is cut back to this size.
const WAL_RESTART_BYTES: u64 = 64 << 20;

/// How long a write waits for the write lock held by a checkpoint (normally a fraction of
/// a second: the WAL copied since the last passive checkpoint, and a sync).
const WRITER_BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The catalog's write-ahead log file.
fn wal_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// The change log's entries derived from the catalog's rows (see
/// [`Catalog::regenerate_changes`]): every memento of a resource (its earlier ones and its
/// current state) in time order, the first one a `create`, and a `delete` for each
/// tombstone at its last modification. Descriptions are created with their binaries, so
/// their first memento is no event of its own.
const REGENERATE_CHANGES: &str = "
INSERT INTO changes (id, kind, at, user)
SELECT id, kind, strftime('%Y-%m-%dT%H:%M:%SZ', t, 'unixepoch'), user FROM (
    SELECT m.id AS id, m.t AS t,
           CASE WHEN m.n = 1 THEN 'create' ELSE 'update' END AS kind,
           COALESCE(json_extract(CAST(r.headers AS TEXT), CASE WHEN m.n = 1 THEN '$.createdBy' ELSE '$.lastModifiedBy' END), '') AS user
    FROM (
        SELECT id, t, ROW_NUMBER() OVER (PARTITION BY id ORDER BY t) AS n FROM (
            SELECT id, datetime AS t FROM mementos
            UNION
            SELECT id, memento_datetime AS t FROM resources WHERE memento_datetime IS NOT NULL
        )
    ) AS m JOIN resources AS r ON r.id = m.id
    WHERE NOT (m.n = 1 AND m.id LIKE '%/fcr:metadata')
    UNION ALL
    SELECT id, CAST(strftime('%s', json_extract(CAST(headers AS TEXT), '$.lastModifiedDate')) AS INTEGER),
           'delete', COALESCE(json_extract(CAST(headers AS TEXT), '$.lastModifiedBy'), '')
    FROM resources WHERE deleted = 1
)
ORDER BY t, id;
";

/// The writer connection held outside the group commit ([`SqliteCatalog::write_lock`]).
pub(crate) struct WriterGuard<'a> {
    conn: Option<HeldWriter<'a>>,
    catalog: &'a SqliteCatalog,
}

impl std::ops::Deref for WriterGuard<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("held until dropped")
    }
}

impl std::ops::DerefMut for WriterGuard<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn.as_mut().expect("held until dropped")
    }
}

impl Drop for WriterGuard<'_> {
    fn drop(&mut self) {
        drop(self.conn.take());
        self.catalog.drain();
    }
}

/// A `pending_writes` row selected as `op, object, started, decided, record`.
fn pending_write_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<PendingWrite> {
    Ok(PendingWrite {
        op: r.get(0)?,
        object: r.get(1)?,
        started: r.get(2)?,
        decided: r.get(3)?,
        record: r.get(4)?,
    })
}

/// Moves the last-change watch forward to `seq` (never back), waking its receivers.
fn advance(last_change: &tokio::sync::watch::Sender<i64>, seq: i64) {
    last_change.send_if_modified(|v| {
        let newer = seq > *v;
        if newer {
            *v = seq;
        }
        newer
    });
}

/// Copies the WAL into the database without waiting for anyone (PASSIVE). Under constant
/// reads and writes that never lets the WAL start over, so it would grow without bound
/// (measured: 1.75 GB after 40 s of ingest, and its index in memory with it); once it is
/// larger than [`WAL_RESTART_BYTES`], a RESTART checkpoint waits (briefly: statements are
/// short) until readers have moved past it, so the next write starts the WAL over.
fn checkpoint_wal(conn: &Connection, wal: &Path) -> rusqlite::Result<()> {
    conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE);")?;
    if std::fs::metadata(wal).is_ok_and(|m| m.len() > WAL_RESTART_BYTES) {
        conn.execute_batch("PRAGMA wal_checkpoint(RESTART);")?;
    }
    Ok(())
}

type Reply = tokio::sync::oneshot::Sender<Result<i64>>;
type QueuedWrite = (Vec<CatalogOp>, Reply);

impl SqliteCatalog {
    /// Children of `parent` in id order after `after`, at most `limit`: live ones only
    /// with `live_only`, tombstones too otherwise.
    fn children_page(
        &self,
        parent: &FedoraId,
        after: Option<&FedoraId>,
        limit: usize,
        live_only: bool,
    ) -> Result<Vec<FedoraId>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(if live_only {
                "SELECT id FROM resources WHERE parent = ?1 AND deleted = 0 AND id > ?2
                 ORDER BY id LIMIT ?3"
            } else {
                // Each half through its partial index: without `deleted` in the condition
                // neither index serves, and the query read the whole table (13.7 s at a
                // million objects, at every start: the Fedora 3 facade's probe).
                "SELECT id FROM (SELECT id FROM resources WHERE parent = ?1 AND deleted = 0
                                 AND id > ?2 ORDER BY id LIMIT ?3)
                 UNION ALL
                 SELECT id FROM (SELECT id FROM resources WHERE parent = ?1 AND deleted = 1
                                 AND id > ?2 ORDER BY id LIMIT ?3)
                 ORDER BY id LIMIT ?3"
            })?;
            collect_ids(
                &mut stmt,
                params![
                    parent.as_str(),
                    after.map(FedoraId::as_str).unwrap_or(""),
                    limit as i64
                ],
            )
        })
    }

    /// Opens (creating if needed) the catalog database at `path`.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, false)
    }

    /// Opens the catalog with every commit synced to disk before it returns (`PRAGMA
    /// synchronous=FULL`): for a root in a store without a journal, where no checkpoint
    /// makes the catalog durable with the root, and a change under way must be recorded
    /// durably before its first file is written.
    pub fn open_durable(path: &Path) -> Result<Self> {
        Self::open_with(path, true)
    }

    fn open_with(path: &Path, durable: bool) -> Result<Self> {
        without_memory_statistics();
        let writer = Connection::open(path)?;
        prepare_once(&writer)?;
        // No automatic checkpoints: they would fsync while the writer lock is held. A
        // background connection checkpoints passively instead (never blocking writers).
        // Temporary tables and statement journals stay in memory: as files they are created
        // and unlinked per transaction, which costs more than the work they hold.
        // The writer's page cache is kept small (4 MiB): when a B-tree split reorders pages,
        // SQLite moves one through a temporary page number at 1 GiB (the pending-byte page),
        // and the end of that transaction then walks the whole cache for pages past the end
        // of the database. With 16 MiB that walk took 7 % of the server's CPU during small
        // ingest, with 4 MiB 2.7 % (BENCHMARKS.md, issue #9).
        writer.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF;
             PRAGMA wal_autocheckpoint=0; PRAGMA cache_size=-4096; PRAGMA temp_store=MEMORY;",
        )?;
        if durable {
            writer.execute_batch("PRAGMA synchronous=FULL;")?;
        }
        let version: i64 = writer.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version == 6 {
            // Staged uploads' digests name their algorithm since objects may use sha256.
            writer.execute_batch("ALTER TABLE tx_files RENAME COLUMN sha512 TO digest;")?;
            writer.execute_batch(ADD_EVENT_COLUMNS)?;
            writer.execute_batch(ADD_TX_USER)?;
        } else if version == 7 {
            writer.execute_batch(ADD_EVENT_COLUMNS)?;
            writer.execute_batch(ADD_TX_USER)?;
        } else if version == 8 {
            writer.execute_batch(ADD_TX_USER)?;
        } else if version != SCHEMA_VERSION {
            let has_resources: bool = writer.query_row(
                "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE name = 'resources')",
                [],
                |r| r.get(0),
            )?;
            if has_resources {
                tracing::warn!(
                    found = version,
                    expected = SCHEMA_VERSION,
                    "catalog schema changed; the catalog will be rebuilt from storage"
                );
                writer
                    .execute_batch("DROP TABLE IF EXISTS resources; DROP TABLE IF EXISTS meta;")?;
            }
        }
        writer.execute_batch(SCHEMA)?;
        writer.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION};"))?;
        let tx_claims: bool =
            writer.query_row("SELECT EXISTS(SELECT 1 FROM tx_objects)", [], |r| r.get(0))?;
        let last_change = Self::last_seq(&writer, None)?;
        // A restarting checkpoint holds the write lock while it copies the WAL: a write
        // meanwhile waits for it instead of failing with "database is locked".
        writer.busy_timeout(WRITER_BUSY_TIMEOUT)?;
        let checkpointer = Connection::open(path)?;
        // A restarting checkpoint waits this long for readers and the writer.
        checkpointer.busy_timeout(std::time::Duration::from_secs(2))?;
        checkpointer.execute_batch(&format!("PRAGMA journal_size_limit = {WAL_RESTART_BYTES};"))?;
        let wal = wal_path(path);
        let checkpoints_paused = Arc::new(AtomicBool::new(false));
        let paused = checkpoints_paused.clone();
        std::thread::Builder::new()
            .name("arca-catalog-checkpoint".into())
            .spawn(move || loop {
                std::thread::sleep(std::time::Duration::from_millis(500));
                if paused.load(Ordering::Relaxed) {
                    continue;
                }
                if let Err(e) = checkpoint_wal(&checkpointer, &wal) {
                    tracing::warn!(error = %e, "catalog checkpoint failed");
                }
            })
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        Ok(Self {
            path: path.to_path_buf(),
            writer: WriterLock::new(writer),
            readers: Mutex::new(Vec::new()),
            reads: ReadCache::default(),
            pending: Mutex::new(Vec::new()),
            tx_claims: AtomicBool::new(tx_claims),
            bulk: AtomicBool::new(false),
            checkpoints_paused,
            last_change: tokio::sync::watch::Sender::new(last_change),
            coordination: LocalCoordination::new(),
        })
    }

    /// The writer connection for a write outside the group commit. When the guard goes,
    /// the writes that queued meanwhile are committed: their callers found the writer busy
    /// and rely on its holder to do it (see [`drain`](Self::drain)).
    pub(crate) fn write_lock(&self) -> WriterGuard<'_> {
        WriterGuard {
            conn: Some(self.writer.lock()),
            catalog: self,
        }
    }

    pub(crate) fn with_reader<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let conn = self.readers.lock().pop();
        let conn = match conn {
            Some(c) => c,
            None => {
                let c = Connection::open_with_flags(
                    &self.path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )?;
                c.execute_batch("PRAGMA cache_size=-2048; PRAGMA temp_store=MEMORY;")?;
                prepare_once(&c)?;
                c
            }
        };
        let result = f(&conn);
        let mut pool = self.readers.lock();
        if pool.len() < 16 {
            pool.push(conn);
        }
        result
    }

    /// [`Catalog::get_for_read`]'s answer from SQLite.
    fn read_record(&self, id: &FedoraId) -> Result<Option<ReadRecord>> {
        let description = id.description();
        // A description lists the membership of its binary.
        let iri = id.base().iri();
        self.with_reader(|c| {
            let row = c
                .prepare_cached(READ_RECORD)?
                .query_row(params![id.as_str(), description.as_str(), iri], |row| {
                    let record = record_from_row(row)?;
                    let description_rdf: Option<Vec<u8>> = row.get(7)?;
                    let children: bool = row.get(8)?;
                    let membership: bool = row.get(9)?;
                    Ok(record.map(|record| {
                        let binary = record.headers.model() == Some(InteractionModel::NonRdfSource);
                        ReadRecord {
                            record,
                            description_rdf: description_rdf.filter(|_| binary),
                            may_have_children: children,
                            may_have_membership: membership,
                            derived: Default::default(),
                        }
                    }))
                })
                .optional()?;
            row.transpose()
        })
    }

    /// Applies ops synchronously in their own transaction.
    pub fn apply_blocking(&self, ops: Vec<CatalogOp>) -> Result<i64> {
        let mut conn = self.write_lock();
        let tx = conn.transaction()?;
        let last = Self::apply_ops(&tx, ops, self.bulk.load(Ordering::Relaxed))?;
        tx.commit()?;
        if let Some(seq) = last {
            advance(&self.last_change, seq);
        }
        Self::last_seq(&conn, last)
    }

    /// Commits every pending write while this caller holds the writer; returns when there
    /// is nothing left or another caller has taken over.
    fn drain(&self) {
        loop {
            let Some(mut conn) = self.writer.try_lock() else {
                return;
            };
            loop {
                let batch = std::mem::take(&mut *self.pending.lock());
                if batch.is_empty() {
                    break;
                }
                let bulk = self.bulk.load(Ordering::Relaxed);
                Self::commit_batch(&mut conn, batch, &self.last_change, bulk);
            }
            drop(conn);
            // A write queued after the last take but before the unlock found the writer
            // busy; pick it up here.
            if self.pending.lock().is_empty() {
                return;
            }
        }
    }

    fn commit_batch(
        conn: &mut Connection,
        batch: Vec<QueuedWrite>,
        last_change: &tokio::sync::watch::Sender<i64>,
        bulk: bool,
    ) {
        let mut outcomes: Vec<(Result<Option<i64>>, Reply)> = Vec::with_capacity(batch.len());
        let committed = (|| -> Result<()> {
            let mut tx = conn.transaction()?;
            for (ops, reply) in batch {
                // Each request in its own savepoint: one failing request leaves the others.
                let sp = tx.savepoint_with_name("w");
                let outcome = match sp {
                    Ok(mut sp) => match Self::apply_ops(&sp, ops, bulk) {
                        Ok(last) => sp.commit().map(|_| last).map_err(Error::from),
                        Err(e) => {
                            let _ = sp.rollback();
                            Err(e)
                        }
                    },
                    Err(e) => Err(e.into()),
                };
                outcomes.push((outcome, reply));
            }
            tx.commit()?;
            Ok(())
        })();
        match committed {
            Ok(()) => {
                if let Some(seq) = outcomes
                    .iter()
                    .filter_map(|(o, _)| o.as_ref().ok().copied().flatten())
                    .max()
                {
                    advance(last_change, seq);
                }
                let mut max_seq = None;
                for (outcome, reply) in outcomes {
                    let result = match outcome {
                        Ok(Some(seq)) => Ok(seq),
                        Ok(None) => match max_seq {
                            Some(m) => Ok(m),
                            None => {
                                let m = Self::last_seq(conn, None);
                                if let Ok(m) = &m {
                                    max_seq = Some(*m);
                                }
                                m
                            }
                        },
                        Err(e) => Err(e),
                    };
                    let _ = reply.send(result);
                }
            }
            Err(e) => {
                let cause = std::sync::Arc::new(e);
                for (_, reply) in outcomes {
                    let _ = reply.send(Err(Error::Batch(cause.clone())));
                }
            }
        }
    }

    fn last_seq(conn: &Connection, last: Option<i64>) -> Result<i64> {
        match last {
            Some(seq) => Ok(seq),
            None => Ok(
                conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM changes", [], |r| {
                    r.get(0)
                })?,
            ),
        }
    }

    /// Applies ops inside an open transaction; returns the last change-log sequence number
    /// it assigned, if any. In a bulk load (`bulk`), records, mementos and references are
    /// appended to the staging tables instead.
    fn apply_ops(tx: &Connection, ops: Vec<CatalogOp>, bulk: bool) -> Result<Option<i64>> {
        let mut last = None;
        for op in ops {
            let op = if bulk { stage_bulk(tx, op)? } else { Some(op) };
            let Some(op) = op else { continue };
            match op {
                CatalogOp::Put(r) => {
                    // The state being replaced stays a memento, among the earlier ones.
                    tx.prepare_cached(
                        "INSERT OR REPLACE INTO mementos (id, datetime, version, header_file, content_file)
                         SELECT id, memento_datetime, memento_version, memento_header, content_file
                         FROM resources WHERE id = ?1 AND memento_datetime IS NOT NULL",
                    )?
                    .execute(params![r.id.as_str()])?;
                    let headers = r.headers_json();
                    tx.prepare_cached(
                        "INSERT OR REPLACE INTO resources (id, parent, ocfl_id, deleted, headers, content_file, rdf, children_changed)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,
                                 COALESCE(?8, (SELECT children_changed FROM resources WHERE id = ?1)))",
                    )?
                    .execute(params![
                        r.id.as_str(),
                        r.parent.as_ref().map(FedoraId::as_str),
                        r.ocfl_id,
                        r.headers.deleted,
                        headers,
                        r.content_file,
                        r.rdf,
                        r.children_changed,
                    ])?;
                    // Interaction models never change: only direct and indirect
                    // containers enter or leave the list (the latter as tombstones).
                    if r.headers.model().is_some_and(|m| m.generates_membership()) {
                        let sql = if r.headers.deleted {
                            "DELETE FROM membership_sources WHERE id = ?1"
                        } else {
                            "INSERT OR IGNORE INTO membership_sources (id) VALUES (?1)"
                        };
                        tx.prepare_cached(sql)?.execute(params![r.id.as_str()])?;
                    }
                }
                CatalogOp::Remove(id) => {
                    tx.prepare_cached("DELETE FROM resources WHERE id = ?1")?
                        .execute(params![id.as_str()])?;
                    tx.prepare_cached("DELETE FROM membership_sources WHERE id = ?1")?
                        .execute(params![id.as_str()])?;
                }
                CatalogOp::ReplaceMembership {
                    source,
                    proxy,
                    rows,
                } => {
                    match &proxy {
                        Some(p) => tx
                            .prepare_cached(
                                "DELETE FROM membership WHERE source = ?1 AND proxy = ?2",
                            )?
                            .execute(params![source.as_str(), p.as_str()])?,
                        None => tx
                            .prepare_cached("DELETE FROM membership WHERE source = ?1")?
                            .execute(params![source.as_str()])?,
                    };
                    let mut insert = tx.prepare_cached(
                        "INSERT OR IGNORE INTO membership (source, proxy, subject, predicate, object)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                    )?;
                    for row in rows {
                        insert.execute(params![
                            source.as_str(),
                            row.proxy.as_str(),
                            row.subject,
                            row.predicate,
                            row.object
                        ])?;
                    }
                }
                CatalogOp::ReplaceReferences { source, rows } => {
                    tx.prepare_cached("DELETE FROM refs WHERE source = ?1")?
                        .execute(params![source.as_str()])?;
                    insert_references(
                        tx,
                        "INSERT OR IGNORE INTO refs (source, subject, predicate, target)
                         VALUES (?1, ?2, ?3, ?4)",
                        &source,
                        rows,
                    )?;
                }
                CatalogOp::ForgetDerived(id) => {
                    for sql in [
                        "DELETE FROM membership WHERE source = ?1",
                        "DELETE FROM membership WHERE proxy = ?1",
                        "DELETE FROM refs WHERE source = ?1",
                    ] {
                        tx.prepare_cached(sql)?.execute(params![id.as_str()])?;
                    }
                }
                CatalogOp::PutMemento(m) => insert_memento(
                    tx,
                    "INSERT OR REPLACE INTO mementos (id, datetime, version, header_file, content_file)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    &m,
                )?,
                CatalogOp::CurrentMemento(m) => {
                    tx.prepare_cached(
                        "UPDATE resources SET memento_datetime = ?2, memento_version = ?3,
                         memento_header = ?4 WHERE id = ?1",
                    )?
                    .execute(params![
                        m.id.as_str(),
                        m.datetime,
                        m.version,
                        m.header_file
                    ])?;
                }
                CatalogOp::ForgetMementos(id) => {
                    tx.prepare_cached("DELETE FROM mementos WHERE id = ?1")?
                        .execute(params![id.as_str()])?;
                }
                CatalogOp::ChildrenChanged(id, at) => {
                    // Never move the clock backwards (concurrent writers, replays).
                    tx.prepare_cached(
                        "UPDATE resources SET children_changed = MAX(COALESCE(children_changed, 0), ?2) WHERE id = ?1",
                    )?
                    .execute(params![id.as_str(), at])?;
                }
                CatalogOp::Log(c) => {
                    tx.prepare_cached(
                        "INSERT INTO changes (id, kind, at, user, agent, types) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    )?
                    .execute(params![
                        c.id.as_str(),
                        c.kind.as_str(),
                        c.at,
                        c.user,
                        c.agent,
                        join_types(&c.types),
                    ])?;
                    last = Some(tx.last_insert_rowid());
                }
                CatalogOp::BeginWrite(w) => {
                    tx.prepare_cached(
                        "INSERT OR REPLACE INTO pending_writes (op, object, started, decided, record)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                    )?
                    .execute(params![w.op, w.object, w.started, w.decided, w.record])?;
                }
                CatalogOp::DecideWrite(op) => {
                    tx.prepare_cached("UPDATE pending_writes SET decided = 1 WHERE op = ?1")?
                        .execute(params![op])?;
                }
                CatalogOp::FinishWrite { op, object } => match object {
                    Some(object) => {
                        tx.prepare_cached(
                            "DELETE FROM pending_writes WHERE op = ?1 AND object = ?2",
                        )?
                        .execute(params![op, object])?;
                    }
                    None => {
                        tx.prepare_cached("DELETE FROM pending_writes WHERE op = ?1")?
                            .execute(params![op])?;
                    }
                },
                CatalogOp::TxObjectsCommitted {
                    tx: transaction,
                    ocfl_ids,
                } => transactions::forget_objects(tx, &transaction, &ocfl_ids)?,
                CatalogOp::TxOpsCommitted {
                    tx: transaction,
                    through,
                } => transactions::forget_ops(tx, &transaction, through)?,
            }
        }
        Ok(last)
    }

    /// Runs a WAL checkpoint (called on clean shutdown).
    pub fn checkpoint(&self) -> Result<()> {
        self.writer
            .lock()
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
        Ok(())
    }
}

impl ResourceRecord {
    fn headers_json(&self) -> Vec<u8> {
        self.headers.to_json()
    }
}

pub(crate) fn record_from_row(row: &Row<'_>) -> rusqlite::Result<Result<ResourceRecord>> {
    let id: String = row.get(0)?;
    let parent: Option<String> = row.get(1)?;
    let ocfl_id: String = row.get(2)?;
    let headers: Vec<u8> = row.get(3)?;
    let content_file: Option<String> = row.get(4)?;
    let rdf: Option<Vec<u8>> = row.get(5)?;
    let children_changed: Option<i64> = row.get(6)?;
    Ok((|| {
        let corrupt = |message: String| Error::Corrupt {
            id: id.clone(),
            message,
        };
        Ok(ResourceRecord {
            id: FedoraId::from_internal(&id).map_err(|e| corrupt(e.to_string()))?,
            parent: parent
                .map(|p| FedoraId::from_internal(&p))
                .transpose()
                .map_err(|e| corrupt(e.to_string()))?,
            ocfl_id,
            headers: ResourceHeaders::from_json(&headers).map_err(|e| corrupt(e.to_string()))?,
            content_file,
            rdf,
            children_changed,
        })
    })())
}

/// The ids a statement selects (its first column).
pub(crate) fn collect_ids(
    stmt: &mut rusqlite::CachedStatement<'_>,
    params: impl rusqlite::Params,
) -> Result<Vec<FedoraId>> {
    let rows = stmt.query_map(params, |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for id in rows {
        out.push(parse_id(&id?)?);
    }
    Ok(out)
}

fn collect_records(
    stmt: &mut rusqlite::CachedStatement<'_>,
    params: impl rusqlite::Params,
) -> Result<Vec<ResourceRecord>> {
    let rows = stmt.query_map(params, record_from_row)?;
    let mut out = Vec::new();
    for r in rows {
        out.push(r??);
    }
    Ok(out)
}

/// The exclusive upper bound of the id range below `prefix/`: `/` + 1 is `0`.
fn descendant_range(id: &FedoraId) -> (String, String) {
    (format!("{}/", id.as_str()), format!("{}0", id.as_str()))
}

#[async_trait]
impl Coordination for SqliteCatalog {
    async fn lock_objects(&self, exclusive: &[&str], shared: &[&str]) -> Result<ObjectLockGuard> {
        self.coordination.lock_objects(exclusive, shared).await
    }

    async fn try_lock_objects(&self, exclusive: &[&str]) -> Result<Option<ObjectLockGuard>> {
        self.coordination.try_lock_objects(exclusive).await
    }

    async fn try_lead(&self, role: &str) -> Result<Option<Leadership>> {
        self.coordination.try_lead(role).await
    }

    fn is_shared(&self) -> bool {
        false
    }
}

#[async_trait]
impl Catalog for SqliteCatalog {
    async fn get(&self, id: &FedoraId) -> Result<Option<ResourceRecord>> {
        self.with_reader(|c| {
            let row = c
                .prepare_cached(&format!("SELECT {COLUMNS} FROM resources WHERE id = ?1"))?
                .query_row(params![id.as_str()], record_from_row)
                .optional()?;
            row.transpose()
        })
    }

    /// One statement: the record, a binary's description's triples, and whether a live
    /// child or a membership triple about the resource exists (each one index probe); the
    /// answer kept until the next write ([`ReadCache`]).
    async fn get_for_read(&self, id: &FedoraId) -> Result<Option<Arc<ReadRecord>>> {
        let generation = self.writer.generation();
        if let Some(answer) = self.reads.get(id.as_str(), generation) {
            return Ok(answer);
        }
        let answer = self.read_record(id)?.map(Arc::new);
        self.reads.put(id.as_str(), generation, &answer);
        Ok(answer)
    }

    async fn children(
        &self,
        parent: &FedoraId,
        after: Option<&FedoraId>,
        limit: usize,
    ) -> Result<Vec<FedoraId>> {
        self.children_page(parent, after, limit, true)
    }

    async fn children_any(
        &self,
        parent: &FedoraId,
        after: Option<&FedoraId>,
        limit: usize,
    ) -> Result<Vec<FedoraId>> {
        self.children_page(parent, after, limit, false)
    }

    async fn children_at(&self, parent: &FedoraId, at: i64) -> Result<Vec<FedoraId>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT id, headers FROM resources WHERE parent = ?1 AND deleted = 0
                 UNION ALL
                 SELECT id, headers FROM resources WHERE parent = ?1 AND deleted = 1
                 ORDER BY id",
            )?;
            let rows = stmt.query_map(params![parent.as_str()], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
            })?;
            alive_at(rows.collect::<rusqlite::Result<Vec<_>>>()?, at)
        })
    }

    async fn has_children(&self, parent: &FedoraId) -> Result<bool> {
        self.with_reader(|c| {
            Ok(c.prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM resources WHERE parent = ?1 AND deleted = 0)",
            )?
            .query_row(params![parent.as_str()], |r| r.get(0))?)
        })
    }

    async fn has_descendants(&self, id: &FedoraId) -> Result<bool> {
        let (lo, hi) = descendant_range(id);
        self.with_reader(|c| {
            Ok(c.prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM resources WHERE id >= ?1 AND id < ?2)",
            )?
            .query_row(params![lo, hi], |r| r.get(0))?)
        })
    }

    async fn descendants(&self, id: &FedoraId) -> Result<Vec<ResourceRecord>> {
        let (lo, hi) = if id.is_root() {
            ("info:fedora/".to_string(), "info:fedora0".to_string())
        } else {
            descendant_range(id)
        };
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM resources WHERE id >= ?1 AND id < ?2 ORDER BY id"
            ))?;
            collect_records(&mut stmt, params![lo, hi])
        })
    }

    async fn in_object(&self, ocfl_id: &str) -> Result<Vec<ResourceRecord>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM resources WHERE ocfl_id = ?1 ORDER BY id"
            ))?;
            collect_records(&mut stmt, params![ocfl_id])
        })
    }

    async fn live_after(
        &self,
        after: Option<&FedoraId>,
        limit: usize,
    ) -> Result<Vec<ResourceRecord>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM resources WHERE id > ?1 AND deleted = 0 ORDER BY id LIMIT ?2"
            ))?;
            collect_records(
                &mut stmt,
                params![after.map(FedoraId::as_str).unwrap_or(""), limit as i64],
            )
        })
    }

    async fn live_count(&self) -> Result<u64> {
        self.with_reader(|c| {
            Ok(c.query_row(
                "SELECT COUNT(*) FROM resources WHERE deleted = 0",
                [],
                |r| r.get::<_, i64>(0),
            )? as u64)
        })
    }

    async fn apply(&self, ops: Vec<CatalogOp>) -> Result<i64> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.pending.lock().push((ops, tx));
        self.drain();
        match rx.await {
            Ok(result) => result,
            // The write is queued and the current holder of the writer will commit it.
            Err(_) => Err(Error::Dropped("the catalog writer dropped a write")),
        }
    }

    async fn changes_since(&self, after: i64, limit: usize) -> Result<Vec<ChangeEntry>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT seq, id, kind, at, user, agent, types FROM changes
                 WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![after, limit as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Option<String>>(5)?,
                    r.get::<_, Option<String>>(6)?,
                ))
            })?;
            let mut out = Vec::new();
            for r in rows {
                let (seq, id, kind, at, user, agent, types) = r?;
                let kind = ChangeKind::parse(&kind).ok_or_else(|| Error::Corrupt {
                    id: id.clone(),
                    message: format!("unknown change kind {kind}"),
                })?;
                out.push(ChangeEntry {
                    seq,
                    change: Change {
                        id: parse_id(&id)?,
                        kind,
                        at,
                        user,
                        agent,
                        types: split_types(types.as_deref()),
                    },
                });
            }
            Ok(out)
        })
    }

    async fn pending_writes_of(&self, object: &str) -> Result<Vec<PendingWrite>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT op, object, started, decided, record FROM pending_writes
                 WHERE object = ?1 ORDER BY started, op",
            )?;
            let rows = stmt.query_map(params![object], pending_write_from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    async fn pending_writes(&self, started_before: i64, limit: usize) -> Result<Vec<PendingWrite>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT op, object, started, decided, record FROM pending_writes
                 WHERE started < ?1 ORDER BY started, op, object LIMIT ?2",
            )?;
            let rows = stmt.query_map(
                params![started_before, limit as i64],
                pending_write_from_row,
            )?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    async fn consumer_position(&self, name: &str) -> Result<Option<i64>> {
        self.with_reader(|c| {
            Ok(
                c.prepare_cached("SELECT position FROM consumers WHERE name = ?1")?
                    .query_row(params![name], |r| r.get(0))
                    .optional()?,
            )
        })
    }

    async fn set_consumer_position(&self, name: &str, position: i64) -> Result<()> {
        let conn = self.write_lock();
        conn.prepare_cached("INSERT OR REPLACE INTO consumers (name, position) VALUES (?1, ?2)")?
            .execute(params![name, position])?;
        Ok(())
    }

    async fn consumer_positions(&self) -> Result<Vec<(String, i64)>> {
        self.with_reader(|c| {
            let mut stmt =
                c.prepare_cached("SELECT name, position FROM consumers ORDER BY name")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn last_change(&self) -> tokio::sync::watch::Receiver<i64> {
        self.last_change.subscribe()
    }

    async fn first_change(&self) -> Result<i64> {
        self.with_reader(|c| {
            Ok(
                c.query_row("SELECT COALESCE(MIN(seq), 0) FROM changes", [], |r| {
                    r.get(0)
                })?,
            )
        })
    }

    async fn forget_changes(&self, before: &str, up_to: i64) -> Result<u64> {
        let conn = self.write_lock();
        let n = conn
            .prepare_cached("DELETE FROM changes WHERE at < ?1 AND seq <= ?2")?
            .execute(params![before, up_to])?;
        Ok(n as u64)
    }

    async fn regenerate_changes(&self) -> Result<u64> {
        let mut conn = self.write_lock();
        let tx = conn.transaction()?;
        let empty: bool =
            tx.query_row("SELECT NOT EXISTS(SELECT 1 FROM changes)", [], |r| r.get(0))?;
        if !empty {
            return Ok(0);
        }
        let n = tx.execute_batch(REGENERATE_CHANGES).map(|_| tx.changes())?;
        let last = Self::last_seq(&tx, None)?;
        tx.commit()?;
        advance(&self.last_change, last);
        Ok(n)
    }

    async fn membership(
        &self,
        subject: &str,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<(String, String)>> {
        let (p, o) = after.unwrap_or(("", ""));
        self.with_reader(|c| {
            // Row-value comparison keeps the (subject, predicate, object) index usable.
            let mut stmt = c.prepare_cached(
                "SELECT DISTINCT predicate, object FROM membership
                 WHERE subject = ?1 AND (predicate, object) > (?2, ?3)
                 ORDER BY predicate, object LIMIT ?4",
            )?;
            let rows = stmt.query_map(params![subject, p, o, limit as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    async fn membership_of_source(&self, source: &FedoraId) -> Result<Vec<MembershipRow>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT proxy, subject, predicate, object FROM membership WHERE source = ?1
                 ORDER BY proxy, subject, predicate, object",
            )?;
            let rows = stmt.query_map(params![source.as_str()], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (proxy, subject, predicate, object) = row?;
                out.push(MembershipRow {
                    proxy: parse_id(&proxy)?,
                    subject,
                    predicate,
                    object,
                });
            }
            Ok(out)
        })
    }

    async fn membership_sources(&self) -> Result<Vec<FedoraId>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached("SELECT id FROM membership_sources ORDER BY id")?;
            collect_ids(&mut stmt, [])
        })
    }

    async fn references_to(
        &self,
        target: &FedoraId,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<(String, String)>> {
        let (s, p) = after.unwrap_or(("", ""));
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT DISTINCT subject, predicate FROM refs
                 WHERE target = ?1 AND (subject, predicate) > (?2, ?3)
                 ORDER BY subject, predicate LIMIT ?4",
            )?;
            let rows = stmt.query_map(params![target.as_str(), s, p, limit as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    async fn references_from(&self, source: &FedoraId) -> Result<Vec<FedoraId>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT DISTINCT target FROM refs WHERE source = ?1 ORDER BY target",
            )?;
            let rows = stmt.query_map(params![source.as_str()], |r| r.get::<_, String>(0))?;
            rows.map(|r| parse_id(&r?)).collect()
        })
    }

    async fn mementos(&self, id: &FedoraId) -> Result<Vec<i64>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT datetime FROM mementos WHERE id = ?1
                 UNION SELECT memento_datetime FROM resources
                 WHERE id = ?1 AND memento_datetime IS NOT NULL
                 ORDER BY 1",
            )?;
            let rows = stmt.query_map(params![id.as_str()], |r| r.get(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<i64>>>()?)
        })
    }

    async fn memento_at_or_before(
        &self,
        id: &FedoraId,
        datetime: i64,
    ) -> Result<Option<MementoRow>> {
        self.with_reader(|c| {
            let row = c
                .prepare_cached(
                    // The current state first when it is the memento asked for.
                    "SELECT datetime, version, header_file, content_file FROM (
                         SELECT memento_datetime AS datetime, memento_version AS version,
                                memento_header AS header_file, content_file, 0 AS rank
                         FROM resources WHERE id = ?1 AND memento_datetime <= ?2
                         UNION ALL
                         SELECT datetime, version, header_file, content_file, 1 AS rank
                         FROM mementos WHERE id = ?1 AND datetime <= ?2)
                     ORDER BY datetime DESC, rank LIMIT 1",
                )?
                .query_row(params![id.as_str(), datetime], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, Option<String>>(3)?,
                    ))
                })
                .optional()?;
            Ok(row.map(
                |(datetime, version, header_file, content_file)| MementoRow {
                    id: id.clone(),
                    datetime,
                    version,
                    header_file,
                    content_file,
                },
            ))
        })
    }

    async fn count(&self) -> Result<u64> {
        self.with_reader(|c| {
            Ok(c.query_row("SELECT COUNT(*) FROM resources", [], |r| r.get::<_, i64>(0))? as u64)
        })
    }

    async fn ping(&self) -> Result<()> {
        self.with_reader(|c| {
            Ok(c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))
                .map(|_| ())?)
        })
    }

    async fn totals(&self) -> Result<crate::Totals> {
        self.with_reader(|c| {
            // Both counts read an index only (`resources_by_object`, the partial
            // `resources_by_parent`).
            let objects =
                c.query_row("SELECT COUNT(DISTINCT ocfl_id) FROM resources", [], |r| {
                    r.get::<_, i64>(0)
                })?;
            let resources = c.query_row(
                "SELECT COUNT(*) FROM resources WHERE deleted = 0",
                [],
                |r| r.get::<_, i64>(0),
            )?;
            Ok(crate::Totals {
                objects: objects as u64,
                resources: resources as u64,
            })
        })
    }

    async fn meta(&self, key: &str) -> Result<Option<String>> {
        self.with_reader(|c| {
            Ok(c.prepare_cached("SELECT value FROM meta WHERE key = ?1")?
                .query_row(params![key], |r| r.get(0))
                .optional()?)
        })
    }

    async fn clear(&self) -> Result<()> {
        self.write_lock().execute_batch(
            "DELETE FROM resources; DELETE FROM meta; DELETE FROM membership;
                 DELETE FROM membership_sources; DELETE FROM refs; DELETE FROM mementos;
                 DROP TABLE IF EXISTS bulk_resources; DROP TABLE IF EXISTS bulk_mementos;
                 DROP TABLE IF EXISTS bulk_refs;",
        )?;
        Ok(())
    }

    async fn bulk_load(&self, on: bool) -> Result<()> {
        let mut conn = self.write_lock();
        if on {
            // Rows land in hash order of their objects: inserted into the B-trees of their
            // keys as they come, nearly every row rewrites a page of each (a million
            // objects: 59 GB written for a 3.1 GB catalog). Appended to staging tables and
            // moved once in key order, each page is written about once; the secondary
            // indexes are dropped and built once, sorted, at the end.
            conn.execute_batch(&format!(
                "PRAGMA cache_size=-{BULK_CACHE_KIB}; {STAGING} {}",
                SECONDARY_INDEXES
                    .iter()
                    .map(|name| format!("DROP INDEX IF EXISTS {name};"))
                    .collect::<String>()
            ))?;
            self.checkpoints_paused.store(true, Ordering::Relaxed);
            self.bulk.store(true, Ordering::Relaxed);
        } else {
            self.bulk.store(false, Ordering::Relaxed);
            let mut unstage = || -> Result<()> {
                // The sort of the staged rows goes to temporary files, not to memory.
                conn.execute_batch("PRAGMA temp_store=FILE;")?;
                let tx = conn.transaction()?;
                tx.execute_batch(&format!("{STAGING} {UNSTAGE}"))?;
                tx.commit()?;
                // The tables' WAL (the size of the catalog) copied while the writer is
                // held, then the indexes': a background checkpoint would hold the write
                // lock for minutes.
                conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
                // The schema creates what is missing; the cache goes back to its size.
                conn.execute_batch(SCHEMA)?;
                conn.execute_batch(
                    "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA temp_store=MEMORY;
                     PRAGMA cache_size=-4096; PRAGMA shrink_memory;",
                )?;
                Ok(())
            };
            let unstaged = unstage();
            self.checkpoints_paused.store(false, Ordering::Relaxed);
            unstaged?;
        }
        Ok(())
    }

    async fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.write_lock().execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
            params![key, value],
        )?;
        Ok(())
    }
}

/// In a bulk load: appends a record, a memento or references to the staging tables and
/// returns `None`; hands every other op back to be applied as usual.
fn stage_bulk(tx: &Connection, op: CatalogOp) -> Result<Option<CatalogOp>> {
    match op {
        CatalogOp::Put(r) => {
            tx.prepare_cached(
                "INSERT INTO bulk_resources (id, parent, ocfl_id, deleted, headers, content_file,
                     rdf, children_changed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                r.id.as_str(),
                r.parent.as_ref().map(FedoraId::as_str),
                r.ocfl_id,
                r.headers.deleted,
                r.headers_json(),
                r.content_file,
                r.rdf,
                r.children_changed,
            ])?;
            if r.headers.model().is_some_and(|m| m.generates_membership()) && !r.headers.deleted {
                tx.prepare_cached("INSERT OR IGNORE INTO membership_sources (id) VALUES (?1)")?
                    .execute(params![r.id.as_str()])?;
            }
            Ok(None)
        }
        CatalogOp::PutMemento(m) => {
            insert_memento(
                tx,
                "INSERT INTO bulk_mementos (id, datetime, version, header_file, content_file)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                &m,
            )?;
            Ok(None)
        }
        CatalogOp::ReplaceReferences { source, rows } => {
            insert_references(
                tx,
                "INSERT INTO bulk_refs (source, subject, predicate, target) VALUES (?1, ?2, ?3, ?4)",
                &source,
                rows,
            )?;
            Ok(None)
        }
        op => Ok(Some(op)),
    }
}

/// Inserts memento `m` by `sql` (into the live or the staging table; columns id, datetime,
/// version, header_file, content_file).
fn insert_memento(tx: &Connection, sql: &str, m: &MementoRow) -> Result<()> {
    tx.prepare_cached(sql)?.execute(params![
        m.id.as_str(),
        m.datetime,
        m.version,
        m.header_file,
        m.content_file
    ])?;
    Ok(())
}

/// Inserts the reference rows of `source` by `sql` (into the live or the staging table;
/// columns source, subject, predicate, target).
fn insert_references(
    tx: &Connection,
    sql: &str,
    source: &FedoraId,
    rows: Vec<crate::ReferenceRow>,
) -> Result<()> {
    let mut insert = tx.prepare_cached(sql)?;
    for row in rows {
        insert.execute(params![
            source.as_str(),
            row.subject,
            row.predicate,
            row.target.as_str()
        ])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write that queues while another caller holds the writer outside the group commit
    /// (recording a consumer's position, staging a transaction) is committed when that
    /// caller lets go, not only when a later write comes along. Without it the last writes
    /// of a burst could wait for ever (found by the notification benchmark).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_queued_behind_a_direct_writer_is_committed_when_it_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let cat = std::sync::Arc::new(SqliteCatalog::open(&dir.path().join("c.db")).unwrap());
        let guard = cat.write_lock();
        let queued = {
            let cat = cat.clone();
            tokio::spawn(async move {
                cat.apply_queued().await;
            })
        };
        // The write is queued (the writer was busy) before the guard goes.
        while cat.pending.lock().is_empty() {
            tokio::task::yield_now().await;
        }
        drop(guard);
        tokio::time::timeout(std::time::Duration::from_secs(30), queued)
            .await
            .expect("the queued write was committed")
            .unwrap();
    }

    impl SqliteCatalog {
        async fn apply_queued(&self) {
            let id = FedoraId::from_path("queued").unwrap();
            self.apply(vec![CatalogOp::ChildrenChanged(id, 1)])
                .await
                .unwrap();
        }
    }
}
