//! [`TransactionStore`] on PostgreSQL: the `transactions` and `tx_*` tables, as SQLite
//! keeps them. Each write is one PostgreSQL transaction on a pooled connection.
//!
//! Unlike the SQLite catalog, which serialises its writers in process memory (one writer
//! connection) and skips [`tx_owners`](TransactionStore::tx_owners) while no claim exists
//! (an in-process flag), this one is correct across nodes where the database can make it
//! so: a stage locks its transaction's row, so stages of one transaction and its
//! [`tx_end`](TransactionStore::tx_end) never interleave, and claims are unique rows read
//! back under a row lock. `tx_owners` always asks the database. Every commit is durable
//! when it returns (`synchronous_commit` on), the decision and end of a transaction's
//! commit included.

use arca_model::{DigestAlgorithm, DigestValue, FedoraId};
use async_trait::async_trait;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::{record_from_row, PostgresCatalog};
use crate::columns::{join_types, parse_id, split_types};
use crate::transactions::{
    TransactionStore, TxContent, TxEnd, TxFile, TxObject, TxObjectStage, TxRefusal, TxResource,
    TxStage, TxStatus, CLOSING, COMMITTING,
};
use crate::{CatalogOp, Change, ChangeKind, Error, ResourceRecord, Result};

/// The kind stored for a [`CatalogOp::ChildrenChanged`] kept for a commit.
const CHILDREN_CHANGED: &str = "children-changed";

/// The columns of `tx_resources` in the order of the catalog's record columns (a
/// transaction's records have no listing clock), then the content's logical path.
const RESOURCE_COLUMNS: &str =
    "id, parent, ocfl_id, headers, content_file, rdf, NULL::BIGINT AS children_changed, content_logical";

type TxStaged = std::result::Result<Vec<String>, TxRefusal>;

/// A staged upload's digest as `tx_files.digest` holds it (`urn:<algorithm>:<hex>`).
fn staged_digest(stored: Option<&str>) -> DigestValue {
    let stored = stored.unwrap_or_default();
    DigestAlgorithm::parse_urn(stored).unwrap_or_else(|| DigestValue {
        algorithm: DigestAlgorithm::Sha512,
        hex: stored.to_ascii_lowercase(),
    })
}

fn object_from_row(r: &PgRow) -> Result<TxObject> {
    Ok(TxObject {
        ocfl_id: r.try_get(0)?,
        existed: r.try_get(1)?,
        new_version: r.try_get(2)?,
    })
}

/// A `tx_files` row selected as `logical_path, bytes, upload, digest` (from column `first`)
/// of object `ocfl_id`.
fn file_from_row(ocfl_id: String, r: &PgRow, first: usize) -> Result<TxFile> {
    let bytes: Option<Vec<u8>> = r.try_get(first + 1)?;
    let upload: Option<String> = r.try_get(first + 2)?;
    let digest: Option<String> = r.try_get(first + 3)?;
    Ok(TxFile {
        ocfl_id,
        logical_path: r.try_get(first)?,
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

/// Applies [`CatalogOp::TxObjectsCommitted`] inside an open transaction.
pub(super) async fn forget_objects(
    conn: &mut PgConnection,
    tx: &str,
    ocfl_ids: &[String],
) -> Result<()> {
    for sql in [
        "DELETE FROM tx_files WHERE tx = $1 AND ocfl_id = ANY($2)",
        "DELETE FROM tx_resources WHERE tx = $1 AND ocfl_id = ANY($2)",
    ] {
        sqlx::query(sql)
            .bind(tx)
            .bind(ocfl_ids)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Applies [`CatalogOp::TxOpsCommitted`] inside an open transaction.
pub(super) async fn forget_ops(conn: &mut PgConnection, tx: &str, through: i64) -> Result<()> {
    sqlx::query("DELETE FROM tx_ops WHERE tx = $1 AND seq <= $2")
        .bind(tx)
        .bind(through)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Deletes everything transaction `tx` staged and its claims; returns the upload files its
/// staged rows still named.
async fn forget_rows(conn: &mut PgConnection, tx: &str) -> Result<Vec<String>> {
    let uploads: Vec<String> = sqlx::query_scalar(
        "SELECT upload FROM tx_files WHERE tx = $1 AND upload IS NOT NULL
         ORDER BY ocfl_id, logical_path",
    )
    .bind(tx)
    .fetch_all(&mut *conn)
    .await?;
    for sql in [
        "DELETE FROM tx_files WHERE tx = $1",
        "DELETE FROM tx_resources WHERE tx = $1",
        "DELETE FROM tx_ops WHERE tx = $1",
        "DELETE FROM tx_objects WHERE tx = $1",
    ] {
        sqlx::query(sql).bind(tx).execute(&mut *conn).await?;
    }
    Ok(uploads)
}

fn resource_from_row(r: &PgRow) -> Result<TxResource> {
    Ok(TxResource {
        record: record_from_row(r)?,
        content_logical: r.try_get(7)?,
    })
}

/// Adds a stage inside an open PostgreSQL transaction; a refusal leaves the caller to roll
/// it back.
async fn stage_rows(conn: &mut PgConnection, tx: &str, stage: TxStage) -> Result<TxStaged> {
    // The row lock keeps this transaction's other stages and its end waiting until this
    // stage is committed or refused, on whatever node they run.
    let open: Option<Option<String>> =
        sqlx::query_scalar("SELECT ended FROM transactions WHERE id = $1 FOR UPDATE")
            .bind(tx)
            .fetch_optional(&mut *conn)
            .await?;
    if !matches!(open, Some(None)) {
        return Ok(Err(TxRefusal::NotOpen));
    }
    // Claims in id order, so that two stages claiming the same objects cannot deadlock.
    let mut objects: Vec<&TxObject> = stage.objects.iter().collect();
    objects.sort_by(|a, b| a.ocfl_id.cmp(&b.ocfl_id));
    for object in objects {
        // Waits for a competing claim in flight, then either inserts or finds the owner.
        let inserted = sqlx::query(
            "INSERT INTO tx_objects (ocfl_id, tx, existed, new_version) VALUES ($1, $2, $3, $4)
             ON CONFLICT (ocfl_id) DO NOTHING",
        )
        .bind(&object.ocfl_id)
        .bind(tx)
        .bind(object.existed)
        .bind(object.new_version)
        .execute(&mut *conn)
        .await?
        .rows_affected()
            == 1;
        if inserted {
            continue;
        }
        let owner: Option<String> =
            sqlx::query_scalar("SELECT tx FROM tx_objects WHERE ocfl_id = $1 FOR UPDATE")
                .bind(&object.ocfl_id)
                .fetch_optional(&mut *conn)
                .await?;
        match owner {
            Some(owner) if owner == tx => {
                sqlx::query(
                    "UPDATE tx_objects SET new_version = new_version OR $2 WHERE ocfl_id = $1",
                )
                .bind(&object.ocfl_id)
                .bind(object.new_version)
                .execute(&mut *conn)
                .await?;
            }
            // Owned by another transaction, or released by it in the meantime (a retry
            // of the request will find it free).
            _ => {
                return Ok(Err(TxRefusal::Owned {
                    ocfl_id: object.ocfl_id.clone(),
                }))
            }
        }
    }
    let mut replaced = Vec::new();
    for file in stage.files {
        let earlier: Option<Option<String>> = sqlx::query_scalar(
            "SELECT upload FROM tx_files WHERE tx = $1 AND ocfl_id = $2 AND logical_path = $3",
        )
        .bind(tx)
        .bind(&file.ocfl_id)
        .bind(&file.logical_path)
        .fetch_optional(&mut *conn)
        .await?;
        replaced.extend(earlier.flatten());
        let (bytes, upload, digest) = match file.content {
            None => (None, None, None),
            Some(TxContent::Bytes(b)) => (Some(b), None, None),
            Some(TxContent::Upload { path, digest }) => (None, Some(path), Some(digest.urn())),
        };
        sqlx::query(
            "INSERT INTO tx_files (tx, ocfl_id, logical_path, bytes, upload, digest)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (tx, ocfl_id, logical_path) DO UPDATE SET bytes = EXCLUDED.bytes,
                 upload = EXCLUDED.upload, digest = EXCLUDED.digest",
        )
        .bind(tx)
        .bind(&file.ocfl_id)
        .bind(&file.logical_path)
        .bind(bytes)
        .bind(upload)
        .bind(digest)
        .execute(&mut *conn)
        .await?;
    }
    for r in stage.resources {
        let rec = r.record;
        sqlx::query(
            "INSERT INTO tx_resources
             (tx, id, parent, ocfl_id, deleted, headers, content_file, rdf, content_logical)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
             ON CONFLICT (tx, id) DO UPDATE SET parent = EXCLUDED.parent,
                 ocfl_id = EXCLUDED.ocfl_id, deleted = EXCLUDED.deleted,
                 headers = EXCLUDED.headers, content_file = EXCLUDED.content_file,
                 rdf = EXCLUDED.rdf, content_logical = EXCLUDED.content_logical",
        )
        .bind(tx)
        .bind(rec.id.as_str())
        .bind(rec.parent.as_ref().map(FedoraId::as_str))
        .bind(&rec.ocfl_id)
        .bind(rec.headers.deleted)
        .bind(rec.headers.to_json())
        .bind(&rec.content_file)
        .bind(&rec.rdf)
        .bind(&r.content_logical)
        .execute(&mut *conn)
        .await?;
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
        sqlx::query(
            r#"INSERT INTO tx_ops (tx, kind, id, at, nanos, "user", agent, types)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"#,
        )
        .bind(tx)
        .bind(kind)
        .bind(id.as_str())
        .bind(at)
        .bind(nanos)
        .bind(user)
        .bind(agent)
        .bind(types)
        .execute(&mut *conn)
        .await?;
    }
    Ok(Ok(replaced))
}

#[async_trait]
impl TransactionStore for PostgresCatalog {
    async fn tx_begin(&self, tx: &str, expires: i64, user: Option<&str>) -> Result<()> {
        sqlx::query(r#"INSERT INTO transactions (id, expires, "user") VALUES ($1, $2, $3)"#)
            .bind(tx)
            .bind(expires)
            .bind(user)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    async fn tx_user(&self, tx: &str) -> Result<Option<String>> {
        let user: Option<Option<String>> =
            sqlx::query_scalar(r#"SELECT "user" FROM transactions WHERE id = $1"#)
                .bind(tx)
                .fetch_optional(self.pool())
                .await?;
        Ok(user.flatten())
    }

    async fn tx_status(&self, tx: &str) -> Result<Option<TxStatus>> {
        let row: Option<(i64, Option<String>)> =
            sqlx::query_as("SELECT expires, ended FROM transactions WHERE id = $1")
                .bind(tx)
                .fetch_optional(self.pool())
                .await?;
        row.map(|(expires, ended)| TxStatus::from_stored(tx, expires, ended.as_deref()))
            .transpose()
    }

    async fn tx_set_expiry(&self, tx: &str, expires: i64) -> Result<bool> {
        Ok(
            sqlx::query("UPDATE transactions SET expires = $2 WHERE id = $1 AND ended IS NULL")
                .bind(tx)
                .bind(expires)
                .execute(self.pool())
                .await?
                .rows_affected()
                == 1,
        )
    }

    async fn tx_expired(&self, now: i64) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM transactions WHERE ended IS NULL AND expires <= $1 ORDER BY id",
        )
        .bind(now)
        .fetch_all(self.pool())
        .await?)
    }

    async fn tx_open(&self) -> Result<Vec<String>> {
        self.tx_expired(i64::MAX).await
    }

    async fn tx_close(&self, tx: &str) -> Result<bool> {
        // The row lock waits for a stage of this transaction in flight on any node.
        Ok(
            sqlx::query("UPDATE transactions SET ended = $2 WHERE id = $1 AND ended IS NULL")
                .bind(tx)
                .bind(CLOSING)
                .execute(self.pool())
                .await?
                .rows_affected()
                == 1,
        )
    }

    async fn tx_decide(&self, tx: &str) -> Result<bool> {
        Ok(
            sqlx::query("UPDATE transactions SET ended = $2 WHERE id = $1 AND ended = $3")
                .bind(tx)
                .bind(COMMITTING)
                .bind(CLOSING)
                .execute(self.pool())
                .await?
                .rows_affected()
                == 1,
        )
    }

    async fn tx_end(&self, tx: &str, end: TxEnd) -> Result<Option<Vec<String>>> {
        let mut sql_tx = self.pool().begin().await?;
        let ended = sqlx::query(
            "UPDATE transactions SET ended = $2, ended_at = $3
             WHERE id = $1 AND ended IS NOT DISTINCT FROM $4",
        )
        .bind(tx)
        .bind(end.as_str())
        .bind(now_millis())
        .bind(end.ends_from())
        .execute(&mut *sql_tx)
        .await?
        .rows_affected()
            == 1;
        if !ended {
            sql_tx.rollback().await?;
            return Ok(None);
        }
        let uploads = forget_rows(&mut sql_tx, tx).await?;
        sql_tx.commit().await?;
        Ok(Some(uploads))
    }

    async fn tx_commits(&self) -> Result<Vec<(String, TxStatus)>> {
        let rows: Vec<(String, i64, String)> = sqlx::query_as(
            "SELECT id, expires, ended FROM transactions WHERE ended IN ($1, $2) ORDER BY id",
        )
        .bind(CLOSING)
        .bind(COMMITTING)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter()
            .map(|(id, expires, ended)| {
                let status = TxStatus::from_stored(&id, expires, Some(&ended))?;
                Ok((id, status))
            })
            .collect()
    }

    async fn tx_decided_uploads(&self) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT f.upload FROM tx_files AS f JOIN transactions AS t ON t.id = f.tx
             WHERE t.ended = $1 AND f.upload IS NOT NULL ORDER BY f.upload",
        )
        .bind(COMMITTING)
        .fetch_all(self.pool())
        .await?)
    }

    async fn tx_stage(&self, tx: &str, stage: TxStage) -> Result<TxStaged> {
        let mut sql_tx = self.pool().begin().await?;
        let outcome = stage_rows(&mut sql_tx, tx, stage).await?;
        if outcome.is_ok() {
            sql_tx.commit().await?;
        } else {
            // A refusal rolls the whole stage back: nothing of it stays.
            sql_tx.rollback().await?;
        }
        Ok(outcome)
    }

    async fn tx_owners(&self, ocfl_ids: &[&str]) -> Result<Vec<(String, String)>> {
        if ocfl_ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = ocfl_ids.iter().map(|s| s.to_string()).collect();
        let found: Vec<(String, String)> =
            sqlx::query_as("SELECT ocfl_id, tx FROM tx_objects WHERE ocfl_id = ANY($1)")
                .bind(&ids)
                .fetch_all(self.pool())
                .await?;
        // In the order asked, as SQLite answers.
        Ok(ocfl_ids
            .iter()
            .filter_map(|id| found.iter().find(|(o, _)| o == id).cloned())
            .collect())
    }

    async fn tx_object(&self, tx: &str, ocfl_id: &str) -> Result<Option<TxObject>> {
        sqlx::query(
            "SELECT ocfl_id, existed, new_version FROM tx_objects WHERE ocfl_id = $1 AND tx = $2",
        )
        .bind(ocfl_id)
        .bind(tx)
        .fetch_optional(self.pool())
        .await?
        .as_ref()
        .map(object_from_row)
        .transpose()
    }

    async fn tx_objects(
        &self,
        tx: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TxObject>> {
        sqlx::query(
            "SELECT ocfl_id, existed, new_version FROM tx_objects
             WHERE tx = $1 AND ocfl_id > $2 ORDER BY ocfl_id LIMIT $3",
        )
        .bind(tx)
        .bind(after.unwrap_or(""))
        .bind(limit as i64)
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(object_from_row)
        .collect()
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
        let files = sqlx::query(
            "SELECT ocfl_id, logical_path, bytes, upload, digest FROM tx_files
             WHERE tx = $1 AND ocfl_id > $2 AND ocfl_id <= $3 ORDER BY ocfl_id, logical_path",
        )
        .bind(tx)
        .bind(after)
        .bind(&last)
        .fetch_all(self.pool())
        .await?;
        for row in &files {
            let file = file_from_row(row.try_get(0)?, row, 1)?;
            if let Some(&i) = at.get(&file.ocfl_id) {
                out[i].files.push(file);
            }
        }
        let resources = sqlx::query(&format!(
            "SELECT {RESOURCE_COLUMNS} FROM tx_resources
             WHERE tx = $1 AND ocfl_id > $2 AND ocfl_id <= $3 ORDER BY ocfl_id, id"
        ))
        .bind(tx)
        .bind(after)
        .bind(&last)
        .fetch_all(self.pool())
        .await?;
        for row in &resources {
            let r = resource_from_row(row)?;
            if let Some(&i) = at.get(&r.record.ocfl_id) {
                out[i].resources.push(r);
            }
        }
        Ok(out)
    }

    async fn tx_files(&self, tx: &str, ocfl_id: &str) -> Result<Vec<TxFile>> {
        sqlx::query(
            "SELECT logical_path, bytes, upload, digest FROM tx_files
             WHERE tx = $1 AND ocfl_id = $2 ORDER BY logical_path",
        )
        .bind(tx)
        .bind(ocfl_id)
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(|r| file_from_row(ocfl_id.to_string(), r, 0))
        .collect()
    }

    async fn tx_resources(&self, tx: &str, ocfl_id: &str) -> Result<Vec<TxResource>> {
        sqlx::query(&format!(
            "SELECT {RESOURCE_COLUMNS} FROM tx_resources WHERE tx = $1 AND ocfl_id = $2
             ORDER BY id"
        ))
        .bind(tx)
        .bind(ocfl_id)
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(resource_from_row)
        .collect()
    }

    async fn tx_record(&self, tx: &str, id: &FedoraId) -> Result<Option<ResourceRecord>> {
        let row = sqlx::query(&format!(
            "SELECT {RESOURCE_COLUMNS} FROM tx_resources WHERE tx = $1 AND id = $2"
        ))
        .bind(tx)
        .bind(id.as_str())
        .fetch_optional(self.pool())
        .await?;
        Ok(row
            .as_ref()
            .map(resource_from_row)
            .transpose()?
            .map(|r| r.record))
    }

    async fn tx_children(
        &self,
        tx: &str,
        parent: &FedoraId,
        after: Option<&FedoraId>,
        limit: usize,
    ) -> Result<Vec<FedoraId>> {
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM resources WHERE parent = $1 AND NOT deleted AND id > $2
               AND id NOT IN (SELECT id FROM tx_resources
                              WHERE tx = $3 AND parent = $1 AND deleted)
             UNION
             SELECT id FROM tx_resources
             WHERE tx = $3 AND parent = $1 AND NOT deleted AND id > $2
             ORDER BY 1 LIMIT $4",
        )
        .bind(parent.as_str())
        .bind(after.map(FedoraId::as_str).unwrap_or(""))
        .bind(tx)
        .bind(limit as i64)
        .fetch_all(self.pool())
        .await?;
        ids.iter().map(|id| parse_id(id)).collect()
    }

    async fn tx_ops(&self, tx: &str, after: i64, limit: usize) -> Result<Vec<(i64, CatalogOp)>> {
        type OpRow = (
            i64,
            String,
            String,
            Option<String>,
            Option<i64>,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let rows: Vec<OpRow> = sqlx::query_as(
            r#"SELECT seq, kind, id, at, nanos, "user", agent, types FROM tx_ops
               WHERE tx = $1 AND seq > $2 ORDER BY seq LIMIT $3"#,
        )
        .bind(tx)
        .bind(after)
        .bind(limit as i64)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter()
            .map(|(seq, kind, id, at, nanos, user, agent, types)| {
                let id = parse_id(&id)?;
                Ok((
                    seq,
                    if kind == CHILDREN_CHANGED {
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
                    },
                ))
            })
            .collect()
    }

    async fn tx_prune(&self, before: i64) -> Result<()> {
        sqlx::query(
            "DELETE FROM transactions WHERE ended IS NOT NULL AND ended NOT IN ($2, $3)
               AND ended_at < $1",
        )
        .bind(before)
        .bind(CLOSING)
        .bind(COMMITTING)
        .execute(self.pool())
        .await?;
        Ok(())
    }
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}
