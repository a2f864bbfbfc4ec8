//! What operators see of a running arca: Prometheus metrics ([`metrics`]), health checks
//! ([`health`]: liveness and readiness) and the status report with an hour of history
//! ([`status`]), all from one [`Observer`] the server builds at start and the HTTP layer
//! serves.
#![warn(missing_docs)]

pub mod health;
pub mod metrics;
pub mod status;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use arca_events::delivery::DeliveryStatus;
use arca_repository::Repository;

/// What the observer looks at: the parts of a running server.
#[derive(Clone)]
pub struct Sources {
    /// The repository kernel (catalog, storage, write counters).
    pub repo: Arc<Repository>,
    /// The search indexer, when search is on.
    pub search: Option<Arc<arca_search::Indexer>>,
    /// Event delivery to each configured broker.
    pub deliveries: Vec<Arc<DeliveryStatus>>,
    /// Where the OCFL root is, for people: a directory or an S3 bucket.
    pub storage: String,
    /// The catalog backend, for people (`SQLite …/catalog.sqlite`, `PostgreSQL host/db`).
    pub catalog: String,
    /// A local directory whose file system's free space matters (the data directory:
    /// root, staging, journal, catalog, index).
    pub data_dir: Option<PathBuf>,
    /// When the server started.
    pub started: Instant,
    /// The background fixity audit, when one is scheduled.
    pub audit: Option<Arc<arca_fixity::schedule::BackgroundAudit>>,
    /// Copies to the replicas, when there are any.
    pub replication: Option<Arc<arca_fixity::Replicator>>,
    /// The nodes searches are forwarded to, when this node has no index of its own
    /// (`search.forward_to`).
    pub search_forward: Option<Arc<dyn health::Peers>>,
}

/// The server's one observer: metrics, health and status over the same [`Sources`].
pub struct Observer {
    sources: Sources,
    metrics: metrics::Metrics,
    history: status::History,
    health: health::Health,
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observer")
            .field("storage", &self.sources.storage)
            .field("catalog", &self.sources.catalog)
            .finish_non_exhaustive()
    }
}

impl Observer {
    /// An observer of `sources`.
    pub fn new(sources: Sources, health: health::HealthSettings) -> Arc<Self> {
        Arc::new(Self {
            metrics: metrics::Metrics::new(),
            history: status::History::new(),
            health: health::Health::new(health),
            sources,
        })
    }

    /// What it looks at.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// The request and operation metrics (recorded by the HTTP layer and the kernel's
    /// counters, read at scrape time).
    pub fn metrics(&self) -> &metrics::Metrics {
        &self.metrics
    }

    /// The last hour, sampled.
    pub fn history(&self) -> &status::History {
        &self.history
    }

    /// The health checks.
    pub fn health(&self) -> &health::Health {
        &self.health
    }
}
