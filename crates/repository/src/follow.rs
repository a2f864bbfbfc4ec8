//! Changes made by other nodes: where several nodes share the catalog, each node's caches of
//! derived state (the effective ACLs the HTTP layer keeps) must drop what another node
//! changed. A task follows the shared change log from the moment the kernel opens and tells
//! the [`ChangeWatcher`]s the ids of every entry, as this node's own commits do before they
//! are answered. The change log names every resource a change wrote, deleted or purged, so
//! a watcher learns of another node's change within one notification of its commit.

use std::sync::{Arc, Weak};

use arca_catalog::Catalog;
use arca_model::FedoraId;
use parking_lot::RwLock;

use crate::ChangeWatcher;

/// Entries read at a time.
const BATCH: usize = 1_000;

/// How long to wait before reading the log again after it failed.
const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Follows the change log after `position`, telling `watchers` of every entry, until the
/// watchers (the kernel) are gone.
pub(crate) fn spawn(
    catalog: Arc<dyn Catalog>,
    watchers: Weak<RwLock<Vec<ChangeWatcher>>>,
    mut position: i64,
) {
    tokio::spawn(async move {
        // This node's own commits told the watchers before they were answered: after a
        // short batch the log is read again only once another node's commit is announced.
        let mut foreign = catalog.last_foreign_change();
        let mut caught_up = false;
        loop {
            let batch = match arca_catalog::changes_if_announced(
                &*catalog, &foreign, caught_up, position, BATCH,
            )
            .await
            {
                Ok(batch) => batch,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot follow other nodes' changes; retrying");
                    tokio::time::sleep(RETRY).await;
                    continue;
                }
            };
            let Some(watchers) = watchers.upgrade() else {
                return;
            };
            caught_up = batch.len() < BATCH;
            if let Some(last) = batch.last() {
                position = last.seq;
                let ids: Vec<FedoraId> = batch.into_iter().map(|e| e.change.id).collect();
                for watcher in watchers.read().iter() {
                    watcher(&ids);
                }
                if !caught_up {
                    continue;
                }
            }
            drop(watchers);
            foreign.borrow_and_update();
            if *foreign.borrow() > position {
                continue;
            }
            if foreign.changed().await.is_err() {
                return;
            }
        }
    });
}
