//! Notifications: every committed change as an ActivityStreams 2.0 event in the shape Fedora 6
//! sends ([`event`]), delivered asynchronously from the catalog's change log to a STOMP broker
//! ([`delivery`], over the small client in [`stomp`]), and replayable over HTTP (the `http`
//! crate's `fcr:events`). The change log is kept for a window ([`spawn_retention`]).

pub mod delivery;
pub mod event;
pub mod stomp;

use std::sync::Arc;
use std::time::Duration;

use arca_catalog::Catalog;
use tokio::sync::watch;

/// How often the retention window is applied.
const RETENTION_EVERY: Duration = Duration::from_secs(3600);

/// Forgets change-log entries older than `keep_days` days, hourly, never one that a
/// destination has not received yet (its recorded position). Stops when `stop` turns true.
pub fn spawn_retention(catalog: Arc<dyn Catalog>, keep_days: u64, mut stop: watch::Receiver<bool>) {
    tokio::spawn(async move {
        loop {
            let cutoff = arca_model::now() - time::Duration::days(keep_days as i64);
            let before = arca_model::format_instant(cutoff);
            let mut up_to = *catalog.last_change().borrow();
            match catalog.consumer_positions().await {
                Ok(positions) => {
                    for (_, p) in positions {
                        up_to = up_to.min(p);
                    }
                    match catalog.forget_changes(&before, up_to).await {
                        Ok(0) => {}
                        Ok(n) => {
                            tracing::info!(entries = n, before = %before, "old events left the change log")
                        }
                        Err(e) => tracing::warn!(error = %e, "the change log's retention failed"),
                    }
                }
                Err(e) => tracing::warn!(error = %e, "the change log's retention failed"),
            }
            let closed = tokio::select! {
                _ = tokio::time::sleep(RETENTION_EVERY) => false,
                r = stop.changed() => r.is_err(),
            };
            if closed || *stop.borrow() {
                return;
            }
        }
    });
}
