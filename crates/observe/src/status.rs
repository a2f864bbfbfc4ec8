//! The status report (the admin status page's data) and the last hour of samples.

use serde::Serialize;

/// What the admin status page shows.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StatusReport {
    /// arca's version.
    pub version: String,
    /// Where the OCFL root is (directory or S3 bucket).
    pub storage: String,
    /// The catalog backend.
    pub catalog: String,
    /// Objects in the root (OCFL objects), when known.
    pub objects: Option<u64>,
    /// Resources (containers, binaries, descriptions, ACLs), when known.
    pub resources: Option<u64>,
    /// Bytes of binary content, when known.
    pub bytes: Option<u64>,
    /// Free bytes on the data directory's file system (local storage).
    pub disk_free: Option<u64>,
    /// Size of that file system.
    pub disk_total: Option<u64>,
    /// Seconds since start.
    pub uptime_seconds: u64,
    /// Transactions open now.
    pub transactions_open: u64,
    /// Writes per second over the last minute.
    pub writes_per_second: f64,
    /// Reads per second over the last minute.
    pub reads_per_second: f64,
    /// The search index, when search is on.
    pub search: Option<SearchLine>,
    /// Event delivery, one per destination.
    pub deliveries: Vec<DeliveryLine>,
    /// The last hour, sampled.
    pub history: Vec<Series>,
}

/// The search index's state.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SearchLine {
    /// Documents in the index.
    pub documents: u64,
    /// Changes not yet indexed.
    pub lag_changes: i64,
}

/// One event destination's state.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DeliveryLine {
    /// The destination.
    pub name: String,
    /// Whether connected to the broker now.
    pub connected: bool,
    /// Events not yet acknowledged by the broker.
    pub pending: i64,
    /// Seconds the oldest undelivered event has waited.
    pub lag_seconds: f64,
    /// The last delivery error.
    pub last_error: Option<String>,
}

/// One sampled quantity over the last hour, oldest first.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Series {
    /// What it is (`writes per second`).
    pub name: String,
    /// Its unit (`/s`, `bytes`, `changes`, `s`).
    pub unit: String,
    /// Seconds between points.
    pub step_seconds: u64,
    /// The points, oldest first (at most an hour's).
    pub points: Vec<f64>,
}

/// The last hour of samples, filled by a background task.
pub struct History {}

impl History {
    /// No samples yet.
    pub fn new() -> Self {
        Self {}
    }
}

impl Default for History {
    fn default() -> Self {
        Self::new()
    }
}

impl crate::Observer {
    /// The status report now.
    pub async fn status_report(&self) -> StatusReport {
        StatusReport {
            version: env!("CARGO_PKG_VERSION").to_string(),
            storage: self.sources().storage.clone(),
            catalog: self.sources().catalog.clone(),
            uptime_seconds: self.sources().started.elapsed().as_secs(),
            ..Default::default()
        }
    }
}
