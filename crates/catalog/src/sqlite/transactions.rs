//! [`TransactionStore`] on SQLite: the `transactions` and `tx_*` tables. Writes take the
//! catalog's writer connection directly (each its own short SQLite transaction); reads use
//! the reader pool. The two writes that must be durable when they return (a commit's
//! decision and its end) run with `synchronous=FULL`, which syncs the write-ahead log —
//! and with it every earlier write — before the change becomes visible.

use std::sync::atomic::Ordering;

use arca_model::{DigestAlgorithm, DigestValue, FedoraId};
use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension};

use super::{collect_ids, record_from_row, SqliteCatalog};
use crate::columns::{join_types, parse_id, split_types};
use crate::transactions::{
    TransactionStore, TxContent, TxEnd, TxFile, TxObject, TxObjectStage, TxRefusal, TxResource,
    TxStage, TxStatus, CLOSING, COMMITTING,
};
use crate::{CatalogOp, Change, ChangeKind, Error, ResourceRecord, Result};

/// The kind stored for a [`CatalogOp::ChildrenChanged`] kept for a commit.
const CHILDREN_CHANGED: &str = "children-changed";

impl SqliteCatalog {
    /// Runs `f` in a transaction of the writer connection.
    fn tx_write<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let mut conn = self.write_lock();
        let tx = conn.transaction()?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// Runs `f` in a transaction of the writer connection that is durable when this returns
    /// (`durable`: `synchronous=FULL` for it, so its commit syncs the write-ahead log before
    /// it becomes visible). `f` also returns whether to commit (otherwise nothing it did
    /// stays). Afterwards the claims flag is brought up to date.
    fn tx_write_claims<T>(
        &self,
        durable: bool,
        f: impl FnOnce(&Connection) -> Result<(bool, T)>,
    ) -> Result<T> {
        let mut conn = self.write_lock();
        if durable {
            conn.execute_batch("PRAGMA synchronous=FULL;")?;
        }
        let out = (|| {
            let sql_tx = conn.transaction()?;
            let (commit, out) = f(&sql_tx)?;
            if commit {
                let claims: bool =
                    sql_tx
                        .query_row("SELECT EXISTS(SELECT 1 FROM tx_objects)", [], |r| r.get(0))?;
                sql_tx.commit()?;
                // Under the writer lock: no stage can claim an object meanwhile.
                self.tx_claims.store(claims, Ordering::SeqCst);
            }
            Ok(out)
        })();
        if durable {
            conn.execute_batch("PRAGMA synchronous=NORMAL;")?;
        }
        out
    }

    fn stage_rows(conn: &Connection, tx: &str, stage: TxStage) -> Result<TxStaged> {
        let open: Option<Option<String>> = conn
            .prepare_cached("SELECT ended FROM transactions WHERE id = ?1")?
            .query_row(params![tx], |r| r.get(0))
            .optional()?;
        if !matches!(open, Some(None)) {
            return Ok(Err(TxRefusal::NotOpen));
        }
        for object in &stage.objects {
            let owner: Option<String> = conn
                .prepare_cached("SELECT tx FROM tx_objects WHERE ocfl_id = ?1")?
                .query_row(params![object.ocfl_id], |r| r.get(0))
                .optional()?;
            match owner {
                Some(owner) if owner != tx => {
                    return Ok(Err(TxRefusal::Owned {
                        ocfl_id: object.ocfl_id.clone(),
                    }))
                }
                Some(_) => {
                    conn.prepare_cached(
                        "UPDATE tx_objects SET new_version = MAX(new_version, ?2) WHERE ocfl_id = ?1",
                    )?
                    .execute(params![object.ocfl_id, object.new_version])?;
                }
                None => {
                    conn.prepare_cached(
                        "INSERT INTO tx_objects (ocfl_id, tx, existed, new_version)
                         VALUES (?1, ?2, ?3, ?4)",
                    )?
                    .execute(params![
                        object.ocfl_id,
                        tx,
                        object.existed,
                        object.new_version
                    ])?;
                }
            }
        }
        let mut replaced = Vec::new();
        for file in stage.files {
            let earlier: Option<Option<String>> = conn
                .prepare_cached(
                    "SELECT upload FROM tx_files WHERE tx = ?1 AND ocfl_id = ?2 AND logical_path = ?3",
                )?
                .query_row(params![tx, file.ocfl_id, file.logical_path], |r| r.get(0))
                .optional()?;
            replaced.extend(earlier.flatten());
            let (bytes, upload, digest) = match file.content {
                None => (None, None, None),
                Some(TxContent::Bytes(b)) => (Some(b), None, None),
                Some(TxContent::Upload { path, digest }) => (None, Some(path), Some(digest.urn())),
            };
            conn.prepare_cached(
                "INSERT OR REPLACE INTO tx_files (tx, ocfl_id, logical_path, bytes, upload, digest)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                tx,
                file.ocfl_id,
                file.logical_path,
                bytes,
                upload,
                digest
            ])?;
        }
        for r in stage.resources {
            let rec = r.record;
            conn.prepare_cached(
                "INSERT OR REPLACE INTO tx_resources
                 (tx, id, parent, ocfl_id, deleted, headers, content_file, rdf, content_logical)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![
                tx,
                rec.id.as_str(),
                rec.parent.as_ref().map(FedoraId::as_str),
                rec.ocfl_id,
                rec.headers.deleted,
                rec.headers.to_json(),
                rec.content_file,
                rec.rdf,
                r.content_logical,
            ])?;
        }
        for op in stage.ops {
            let (kind, id, at, nanos, user, agent, types) = match op {
                CatalogOp::Log(c) => (
                    c.kind.as_str(),
                    c.id,
                    Some(c.at),
                    None,
                    Some(c.user),
                    c.agent,
                    join_types(&c.types),
                ),
                CatalogOp::ChildrenChanged(id, nanos) => {
                    (CHILDREN_CHANGED, id, None, Some(nanos), None, None, None)
                }
                other => {
                    return Err(Error::Unsupported(format!(
                        "a transaction cannot keep the catalog operation {other:?}"
                    )))
                }
            };
            conn.prepare_cached(
                "INSERT INTO tx_ops (tx, kind, id, at, nanos, user, agent, types)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                tx,
                kind,
                id.as_str(),
                at,
                nanos,
                user,
                agent,
                types
            ])?;
        }
        Ok(Ok(replaced))
    }
}

type TxStaged = std::result::Result<Vec<String>, TxRefusal>;

/// Deletes everything transaction `tx` staged and its claims; returns the upload files its
/// staged rows still named.
fn forget_rows(conn: &Connection, tx: &str) -> Result<Vec<String>> {
    let uploads: Vec<String> = {
        let mut stmt = conn.prepare_cached(
            "SELECT upload FROM tx_files WHERE tx = ?1 AND upload IS NOT NULL
             ORDER BY ocfl_id, logical_path",
        )?;
        let rows = stmt.query_map(params![tx], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for sql in [
        "DELETE FROM tx_files WHERE tx = ?1",
        "DELETE FROM tx_resources WHERE tx = ?1",
        "DELETE FROM tx_ops WHERE tx = ?1",
        "DELETE FROM tx_objects WHERE tx = ?1",
    ] {
        conn.prepare_cached(sql)?.execute(params![tx])?;
    }
    Ok(uploads)
}

/// Applies [`CatalogOp::TxObjectsCommitted`]: forgets the staged files and records of
/// `ocfl_ids` in transaction `tx`.
pub(super) fn forget_objects(conn: &Connection, tx: &str, ocfl_ids: &[String]) -> Result<()> {
    for id in ocfl_ids {
        conn.prepare_cached("DELETE FROM tx_files WHERE tx = ?1 AND ocfl_id = ?2")?
            .execute(params![tx, id])?;
        conn.prepare_cached("DELETE FROM tx_resources WHERE tx = ?1 AND ocfl_id = ?2")?
            .execute(params![tx, id])?;
    }
    Ok(())
}

/// Applies [`CatalogOp::TxOpsCommitted`]: forgets the kept operations of transaction `tx`
/// up to `through`.
pub(super) fn forget_ops(conn: &Connection, tx: &str, through: i64) -> Result<()> {
    conn.prepare_cached("DELETE FROM tx_ops WHERE tx = ?1 AND seq <= ?2")?
        .execute(params![tx, through])?;
    Ok(())
}

/// A `tx_files` row selected as `logical_path, bytes, upload, digest` of object `ocfl_id`.
fn file_from_row(ocfl_id: String, r: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<TxFile> {
    let bytes: Option<Vec<u8>> = r.get(first + 1)?;
    let upload: Option<String> = r.get(first + 2)?;
    let digest: Option<String> = r.get(first + 3)?;
    Ok(TxFile {
        ocfl_id,
        logical_path: r.get(first)?,
        content: match (bytes, upload) {
            (Some(b), _) => Some(TxContent::Bytes(b)),
            (None, Some(path)) => Some(TxContent::Upload {
                path,
                digest: staged_digest(digest.as_deref()),
            }),
            (None, None) => None,
        },
    })
}

/// A kept operation's columns: `kind, id, at, nanos, user, agent, types`.
type OpRow = (
    String,
    String,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// A kept operation selected as [`OpRow`].
fn op_from_row((kind, id, at, nanos, user, agent, types): OpRow) -> Result<CatalogOp> {
    let id = parse_id(&id)?;
    Ok(if kind == CHILDREN_CHANGED {
        CatalogOp::ChildrenChanged(id, nanos.unwrap_or_default())
    } else {
        CatalogOp::Log(Change {
            kind: ChangeKind::parse(&kind).ok_or_else(|| Error::Corrupt {
                id: id.to_string(),
                message: format!("unknown change kind {kind:?}"),
            })?,
            id,
            at: at.unwrap_or_default(),
            user: user.unwrap_or_default(),
            agent,
            types: split_types(types.as_deref()),
        })
    })
}

/// A staged upload's digest as `tx_files.digest` holds it: `urn:<algorithm>:<hex>`, or the
/// bare SHA-512 hex of a row staged before catalogs named the algorithm (schema 6).
fn staged_digest(stored: Option<&str>) -> DigestValue {
    let stored = stored.unwrap_or_default();
    DigestAlgorithm::parse_urn(stored).unwrap_or_else(|| DigestValue {
        algorithm: DigestAlgorithm::Sha512,
        hex: stored.to_ascii_lowercase(),
    })
}

fn object_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TxObject> {
    Ok(TxObject {
        ocfl_id: r.get(0)?,
        existed: r.get(1)?,
        new_version: r.get(2)?,
    })
}

/// A `tx_resources` row selected as [`RESOURCE_COLUMNS`] as a [`TxResource`]: the
/// record's columns as the catalog's own rows have them, then the content's logical path.
fn resource_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<TxResource>> {
    let record = record_from_row(r)?;
    let content_logical: Option<String> = r.get(7)?;
    Ok(record.map(|record| TxResource {
        record,
        content_logical,
    }))
}

/// The columns of `tx_resources` in the order of the catalog's record columns
/// (`sqlite::COLUMNS`, a transaction's records have no listing clock), then the content's
/// logical path.
const RESOURCE_COLUMNS: &str =
    "id, parent, ocfl_id, headers, content_file, rdf, NULL AS children_changed, content_logical";

#[async_trait]
impl TransactionStore for SqliteCatalog {
    async fn tx_begin(&self, tx: &str, expires: i64, user: Option<&str>) -> Result<()> {
        self.tx_write(|c| {
            c.prepare_cached("INSERT INTO transactions (id, expires, user) VALUES (?1, ?2, ?3)")?
                .execute(params![tx, expires, user])?;
            Ok(())
        })
    }

    async fn tx_user(&self, tx: &str) -> Result<Option<String>> {
        self.with_reader(|c| {
            Ok(
                c.prepare_cached("SELECT user FROM transactions WHERE id = ?1")?
                    .query_row(params![tx], |r| r.get::<_, Option<String>>(0))
                    .optional()?
                    .flatten(),
            )
        })
    }

    async fn tx_status(&self, tx: &str) -> Result<Option<TxStatus>> {
        self.with_reader(|c| {
            let row: Option<(i64, Option<String>)> = c
                .prepare_cached("SELECT expires, ended FROM transactions WHERE id = ?1")?
                .query_row(params![tx], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            row.map(|(expires, ended)| TxStatus::from_stored(tx, expires, ended.as_deref()))
                .transpose()
        })
    }

    async fn tx_set_expiry(&self, tx: &str, expires: i64) -> Result<bool> {
        self.tx_write(|c| {
            Ok(c.prepare_cached(
                "UPDATE transactions SET expires = ?2 WHERE id = ?1 AND ended IS NULL",
            )?
            .execute(params![tx, expires])?
                == 1)
        })
    }

    async fn tx_expired(&self, now: i64) -> Result<Vec<String>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT id FROM transactions WHERE ended IS NULL AND expires <= ?1",
            )?;
            let ids = stmt.query_map(params![now], |r| r.get(0))?;
            Ok(ids.collect::<rusqlite::Result<_>>()?)
        })
    }

    async fn tx_open(&self) -> Result<Vec<String>> {
        self.tx_expired(i64::MAX).await
    }

    async fn tx_close(&self, tx: &str) -> Result<bool> {
        self.tx_write(|c| {
            Ok(c.prepare_cached(
                "UPDATE transactions SET ended = ?2 WHERE id = ?1 AND ended IS NULL",
            )?
            .execute(params![tx, CLOSING])?
                == 1)
        })
    }

    async fn tx_decide(&self, tx: &str) -> Result<bool> {
        self.tx_write_claims(true, |c| {
            let decided = c
                .prepare_cached("UPDATE transactions SET ended = ?2 WHERE id = ?1 AND ended = ?3")?
                .execute(params![tx, COMMITTING, CLOSING])?
                == 1;
            Ok((decided, decided))
        })
    }

    async fn tx_end(&self, tx: &str, end: TxEnd) -> Result<Option<Vec<String>>> {
        let now = now_millis();
        self.tx_write_claims(end == TxEnd::Committed, |c| {
            let ended = c
                .prepare_cached(
                    "UPDATE transactions SET ended = ?2, ended_at = ?3 WHERE id = ?1 AND ended IS ?4",
                )?
                .execute(params![tx, end.as_str(), now, end.ends_from()])?
                == 1;
            if !ended {
                return Ok((false, None));
            }
            Ok((true, Some(forget_rows(c, tx)?)))
        })
    }

    async fn tx_commits(&self) -> Result<Vec<(String, TxStatus)>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT id, expires, ended FROM transactions WHERE ended IN (?1, ?2) ORDER BY id",
            )?;
            let rows = stmt.query_map(params![CLOSING, COMMITTING], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (id, expires, ended) = row?;
                let status = TxStatus::from_stored(&id, expires, Some(&ended))?;
                out.push((id, status));
            }
            Ok(out)
        })
    }

    async fn tx_decided_uploads(&self) -> Result<Vec<String>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT f.upload FROM tx_files AS f JOIN transactions AS t ON t.id = f.tx
                 WHERE t.ended = ?1 AND f.upload IS NOT NULL ORDER BY f.upload",
            )?;
            let rows = stmt.query_map(params![COMMITTING], |r| r.get(0))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    async fn tx_stage(&self, tx: &str, stage: TxStage) -> Result<TxStaged> {
        let mut conn = self.write_lock();
        // Set before any claim can be committed, under the writer lock (see tx_write_claims).
        self.tx_claims.store(true, Ordering::SeqCst);
        let sql_tx = conn.transaction()?;
        let outcome = Self::stage_rows(&sql_tx, tx, stage)?;
        if outcome.is_ok() {
            sql_tx.commit()?;
        }
        // A refusal drops the SQLite transaction: nothing of the stage stays.
        Ok(outcome)
    }

    async fn tx_owners(&self, ocfl_ids: &[&str]) -> Result<Vec<(String, String)>> {
        if !self.tx_claims.load(Ordering::SeqCst) {
            return Ok(Vec::new());
        }
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached("SELECT tx FROM tx_objects WHERE ocfl_id = ?1")?;
            let mut out = Vec::new();
            for id in ocfl_ids {
                if let Some(owner) = stmt
                    .query_row(params![id], |r| r.get::<_, String>(0))
                    .optional()?
                {
                    out.push((id.to_string(), owner));
                }
            }
            Ok(out)
        })
    }

    async fn tx_object(&self, tx: &str, ocfl_id: &str) -> Result<Option<TxObject>> {
        self.with_reader(|c| {
            Ok(c.prepare_cached(
                "SELECT ocfl_id, existed, new_version FROM tx_objects WHERE ocfl_id = ?1 AND tx = ?2",
            )?
            .query_row(params![ocfl_id, tx], object_from_row)
            .optional()?)
        })
    }

    async fn tx_objects(
        &self,
        tx: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TxObject>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT ocfl_id, existed, new_version FROM tx_objects
                 WHERE tx = ?1 AND ocfl_id > ?2 ORDER BY ocfl_id LIMIT ?3",
            )?;
            let rows = stmt.query_map(
                params![tx, after.unwrap_or(""), limit as i64],
                object_from_row,
            )?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    async fn tx_staged(
        &self,
        tx: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TxObjectStage>> {
        let objects = self.tx_objects(tx, after, limit).await?;
        let Some(last) = objects.last().map(|o| o.ocfl_id.clone()) else {
            return Ok(Vec::new());
        };
        let after = after.unwrap_or("");
        let mut out: Vec<TxObjectStage> = objects
            .into_iter()
            .map(|object| TxObjectStage {
                object,
                files: Vec::new(),
                resources: Vec::new(),
            })
            .collect();
        let at: std::collections::HashMap<String, usize> = out
            .iter()
            .enumerate()
            .map(|(i, o)| (o.object.ocfl_id.clone(), i))
            .collect();
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT ocfl_id, logical_path, bytes, upload, digest FROM tx_files
                 WHERE tx = ?1 AND ocfl_id > ?2 AND ocfl_id <= ?3 ORDER BY ocfl_id, logical_path",
            )?;
            let rows =
                stmt.query_map(params![tx, after, last], |r| file_from_row(r.get(0)?, r, 1))?;
            for file in rows {
                let file = file?;
                if let Some(&i) = at.get(&file.ocfl_id) {
                    out[i].files.push(file);
                }
            }
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {RESOURCE_COLUMNS} FROM tx_resources
                 WHERE tx = ?1 AND ocfl_id > ?2 AND ocfl_id <= ?3 ORDER BY ocfl_id, id"
            ))?;
            let rows = stmt.query_map(params![tx, after, last], resource_from_row)?;
            for r in rows {
                let r = r??;
                if let Some(&i) = at.get(&r.record.ocfl_id) {
                    out[i].resources.push(r);
                }
            }
            Ok(())
        })?;
        Ok(out)
    }

    async fn tx_files(&self, tx: &str, ocfl_id: &str) -> Result<Vec<TxFile>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT logical_path, bytes, upload, digest FROM tx_files
                 WHERE tx = ?1 AND ocfl_id = ?2 ORDER BY logical_path",
            )?;
            let rows = stmt.query_map(params![tx, ocfl_id], |r| {
                file_from_row(ocfl_id.to_string(), r, 0)
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    async fn tx_resources(&self, tx: &str, ocfl_id: &str) -> Result<Vec<TxResource>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {RESOURCE_COLUMNS} FROM tx_resources WHERE tx = ?1 AND ocfl_id = ?2
                 ORDER BY id"
            ))?;
            let rows = stmt.query_map(params![tx, ocfl_id], resource_from_row)?;
            let mut out = Vec::new();
            for r in rows {
                out.push(r??);
            }
            Ok(out)
        })
    }

    async fn tx_record(&self, tx: &str, id: &FedoraId) -> Result<Option<ResourceRecord>> {
        self.with_reader(|c| {
            let row = c
                .prepare_cached(&format!(
                    "SELECT {RESOURCE_COLUMNS} FROM tx_resources WHERE tx = ?1 AND id = ?2"
                ))?
                .query_row(params![tx, id.as_str()], resource_from_row)
                .optional()?;
            Ok(row.transpose()?.map(|r| r.record))
        })
    }

    async fn tx_children(
        &self,
        tx: &str,
        parent: &FedoraId,
        after: Option<&FedoraId>,
        limit: usize,
    ) -> Result<Vec<FedoraId>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT id FROM resources WHERE parent = ?1 AND deleted = 0 AND id > ?2
                   AND id NOT IN (SELECT id FROM tx_resources
                                  WHERE tx = ?3 AND parent = ?1 AND deleted = 1)
                 UNION
                 SELECT id FROM tx_resources
                 WHERE tx = ?3 AND parent = ?1 AND deleted = 0 AND id > ?2
                 ORDER BY 1 LIMIT ?4",
            )?;
            collect_ids(
                &mut stmt,
                params![
                    parent.as_str(),
                    after.map(FedoraId::as_str).unwrap_or(""),
                    tx,
                    limit as i64
                ],
            )
        })
    }

    async fn tx_ops(&self, tx: &str, after: i64, limit: usize) -> Result<Vec<(i64, CatalogOp)>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT seq, kind, id, at, nanos, user, agent, types FROM tx_ops
                 WHERE tx = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![tx, after, limit as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    (
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, Option<String>>(3)?,
                        r.get::<_, Option<i64>>(4)?,
                        r.get::<_, Option<String>>(5)?,
                        r.get::<_, Option<String>>(6)?,
                        r.get::<_, Option<String>>(7)?,
                    ),
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (seq, row) = row?;
                out.push((seq, op_from_row(row)?));
            }
            Ok(out)
        })
    }

    async fn tx_prune(&self, before: i64) -> Result<()> {
        self.tx_write(|c| {
            c.prepare_cached(
                "DELETE FROM transactions WHERE ended IS NOT NULL AND ended NOT IN (?2, ?3)
                   AND ended_at < ?1",
            )?
            .execute(params![before, CLOSING, COMMITTING])?;
            Ok(())
        })
    }
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}
