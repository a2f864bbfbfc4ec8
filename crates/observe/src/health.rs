//! Liveness and readiness.

use serde::Serialize;

/// Thresholds of the readiness checks.
#[derive(Debug, Clone, Default)]
pub struct HealthSettings {}

/// The health checks.
pub struct Health {
    #[allow(dead_code)]
    settings: HealthSettings,
}

impl Health {
    /// Checks with `settings`.
    pub fn new(settings: HealthSettings) -> Self {
        Self { settings }
    }
}

/// Whether the server can serve, and if not, what is not ready.
#[derive(Debug, Clone, Serialize)]
pub struct Readiness {
    /// True when every check passed.
    pub ready: bool,
    /// One entry per check (`catalog`, `storage`, `disk`, `search`, `events:<destination>`).
    pub checks: Vec<Check>,
}

/// One readiness check's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// Whether it passed.
    pub ok: bool,
    /// Why not (or a detail when it passed).
    pub message: Option<String>,
}
