//! Prometheus metrics (text exposition format).

/// The metrics registry and the instruments the HTTP layer records into.
pub struct Metrics {}

impl Metrics {
    /// Empty metrics.
    pub fn new() -> Self {
        Self {}
    }

    /// Requests answered so far whose class is a read (`GET`/`HEAD` of resources), for the
    /// status page's read rate.
    pub fn reads_total(&self) -> u64 {
        0
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
