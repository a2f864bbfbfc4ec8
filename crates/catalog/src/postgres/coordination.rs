//! Per-object write locks and roles shared by every node: PostgreSQL session-level advisory
//! locks, each lock request on a connection of its own taken from a pool kept for locks
//! (so a writer waiting for a lock never holds a connection the catalog's queries need).
//!
//! The lease is the session: the locks go when the connection ends, whether the node let
//! go of them, crashed (the kernel closes a killed process's socket) or vanished from the
//! network (the server's TCP keepalives end the session within
//! [`KEEPALIVE_IDLE_S`] + [`KEEPALIVE_INTERVAL_S`] × [`KEEPALIVE_COUNT`] seconds). A lock
//! not granted within [`LOCK_TIMEOUT`] fails the request as unavailable (503) instead of
//! queueing it forever behind a stuck writer.

use std::sync::Arc;
use std::time::Duration;

use arca_model::FedoraId;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::{Executor, PgPool, Postgres, Row};

use super::failover::Failover;
use crate::{lock_key, lock_order, Leadership, ObjectLockGuard, Result, WriteReads};

/// Connections kept for locks at most: the writes of one node that can hold or wait for
/// locks at once; more wait for a connection (within the acquire timeout).
const LOCK_CONNECTIONS: u32 = 64;

/// How long a write waits for its locks before it is refused as unavailable.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// Seconds of silence after which the server probes a lock holder's connection.
pub const KEEPALIVE_IDLE_S: u32 = 5;
/// Seconds between the server's probes.
pub const KEEPALIVE_INTERVAL_S: u32 = 2;
/// Unanswered probes after which the server ends the session (and its locks).
pub const KEEPALIVE_COUNT: u32 = 3;

/// The advisory-lock side of a [`PostgresCatalog`](crate::PostgresCatalog).
pub(super) struct PgCoordination {
    pool: PgPool,
}

impl PgCoordination {
    /// A lock pool on the database of `options` (connections are made when first needed),
    /// whose connections are checked as the catalog's are (`with_checks`: `outages`, and
    /// `failover` when the catalog has several hosts).
    pub(super) fn new(
        options: &PgConnectOptions,
        failover: Option<&Arc<Failover>>,
        outages: &Arc<super::Outages>,
    ) -> Self {
        let pool = super::with_checks(
            PgPoolOptions::new()
                .max_connections(LOCK_CONNECTIONS)
                .min_connections(0)
                .acquire_timeout(super::ACQUIRE_TIMEOUT),
            failover,
            outages,
        )
        .connect_lazy_with(lock_options(options));
        Self { pool }
    }

    /// The lock pool.
    pub(super) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Takes the locks of `exclusive` and `shared` in the global order, on one connection,
    /// in one round trip (the schema's `arca_lock`).
    pub(super) async fn lock_objects(
        &self,
        exclusive: &[&str],
        shared: &[&str],
    ) -> Result<ObjectLockGuard> {
        let mut held = HeldSession {
            conn: Some(self.pool.acquire().await?),
        };
        let (keys, modes): (Vec<i64>, Vec<bool>) =
            lock_order(exclusive, shared).into_iter().unzip();
        let conn = held.conn.as_mut().expect("held until dropped");
        sqlx::query("SELECT arca_lock($1, $2)")
            .bind(keys)
            .bind(modes)
            .execute(&mut **conn)
            .await?;
        Ok(ObjectLockGuard::new(Box::new(held)))
    }

    /// [`lock_objects`](Self::lock_objects) and then, in the same round trip and under the
    /// locks, what `reads` asks for (the schema's `arca_lock_read`; its rows as it returns
    /// them).
    pub(super) async fn lock_and_read(
        &self,
        exclusive: &[&str],
        shared: &[&str],
        reads: &WriteReads,
    ) -> Result<(ObjectLockGuard, Vec<PgRow>)> {
        let mut held = HeldSession {
            conn: Some(self.pool.acquire().await?),
        };
        let (keys, modes): (Vec<i64>, Vec<bool>) =
            lock_order(exclusive, shared).into_iter().unzip();
        let ids: Vec<&str> = reads.records.iter().map(FedoraId::as_str).collect();
        let (below_lo, below_hi) = reads
            .descendants_of
            .as_ref()
            .map(super::descendant_range)
            .unzip();
        let conn = held.conn.as_mut().expect("held until dropped");
        let begin = reads.begin.as_ref();
        let rows =
            sqlx::query("SELECT * FROM arca_lock_read($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9)")
                .bind(keys)
                .bind(modes)
                .bind(ids)
                .bind(below_lo)
                .bind(below_hi)
                .bind(&reads.objects)
                .bind(begin.map(|b| super::pending_json(&b.writes)))
                .bind(begin.map(|b| b.absent.as_str()))
                .bind(begin.map(|b| b.live.as_str()))
                .fetch_all(&mut **conn)
                .await?;
        Ok((ObjectLockGuard::new(Box::new(held)), rows))
    }

    /// Runs `statements` (several, separated by semicolons, in PostgreSQL's simple query
    /// protocol: one round trip) on the connection that holds `locks`, then lets go of them
    /// with the connection; the first text value the statements return. Where the
    /// statements fail, the connection is closed, which ends its session: whatever
    /// transaction they left open is rolled back and the locks go. `Err(locks)` if `locks`
    /// were not taken here.
    ///
    /// Boxed: the future holds borrows of a pooled connection, and only a boxed `Send`
    /// future of a named lifetime satisfies the trait's `async fn`.
    pub(super) fn run_and_unlock<'a>(
        &'a self,
        statements: &'a str,
        locks: ObjectLockGuard,
    ) -> super::BoxFuture<'a, std::result::Result<Result<Option<String>>, ObjectLockGuard>> {
        Box::pin(async move {
            let mut held = locks.into_held::<HeldSession>()?;
            let mut conn = held.conn.take().expect("held until dropped");
            let outcome = match (&mut *conn).fetch_all(sqlx::raw_sql(statements)).await {
                Ok(rows) => rows
                    .first()
                    .map(|row| row.try_get::<String, _>(0))
                    .transpose()
                    .map_err(Into::into),
                Err(e) => Err(e.into()),
            };
            if outcome.is_err() {
                drop(conn.detach());
            }
            Ok(outcome)
        })
    }

    /// Takes the write locks of `exclusive` with `pg_try_advisory_lock`, all or none.
    pub(super) async fn try_lock_objects(
        &self,
        exclusive: &[&str],
    ) -> Result<Option<ObjectLockGuard>> {
        let mut held = HeldSession {
            conn: Some(self.pool.acquire().await?),
        };
        for (key, _) in lock_order(exclusive, &[]) {
            let conn = held.conn.as_mut().expect("held until dropped");
            let granted: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
                .bind(key)
                .fetch_one(&mut **conn)
                .await?;
            if !granted {
                // The locks taken so far go before the answer, so that a caller may take
                // them again at once (dropping the session would let go of them later).
                let mut conn = held.conn.take().expect("held until dropped");
                if sqlx::query("SELECT pg_advisory_unlock_all()")
                    .execute(&mut *conn)
                    .await
                    .is_err()
                {
                    drop(conn.detach());
                }
                return Ok(None);
            }
        }
        Ok(Some(ObjectLockGuard::new(Box::new(held))))
    }

    /// Takes `role` with `pg_try_advisory_lock` on a connection kept while it is held.
    pub(super) async fn try_lead(&self, role: &str) -> Result<Option<Leadership>> {
        let mut held = HeldSession {
            conn: Some(self.pool.acquire().await?),
        };
        let conn = held.conn.as_mut().expect("held until dropped");
        let granted: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(lock_key(&format!("role:{role}")))
            .fetch_one(&mut **conn)
            .await?;
        Ok(granted.then(|| Leadership::new(Box::new(held))))
    }

    /// Closes the lock connections.
    pub(super) async fn close(&self) {
        self.pool.close().await;
    }
}

/// The options of a lock connection to the server of `options`: its own application name,
/// the lock timeout and the server's keepalives.
pub(super) fn lock_options(options: &PgConnectOptions) -> PgConnectOptions {
    options.clone().application_name("arca-locks").options([
        ("lock_timeout", format!("{}ms", LOCK_TIMEOUT.as_millis())),
        ("tcp_keepalives_idle", KEEPALIVE_IDLE_S.to_string()),
        ("tcp_keepalives_interval", KEEPALIVE_INTERVAL_S.to_string()),
        ("tcp_keepalives_count", KEEPALIVE_COUNT.to_string()),
    ])
}

/// A connection holding advisory locks. Dropped, it lets go of them and goes back to the
/// pool; where that cannot be done (no runtime, the statement failed) the connection is
/// closed instead, which ends the session and with it its locks.
struct HeldSession {
    conn: Option<PoolConnection<Postgres>>,
}

impl Drop for HeldSession {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let released = sqlx::query("SELECT pg_advisory_unlock_all()")
                        .execute(&mut *conn)
                        .await;
                    if released.is_err() {
                        drop(conn.detach());
                    }
                });
            }
            Err(_) => drop(conn.detach()),
        }
    }
}
