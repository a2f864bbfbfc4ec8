//! What a finding does to the running repository: the damaged file is marked, so that its
//! binary answers with the damage instead of serving wrong bytes, and a PREMIS fixity event
//! (outcome failure, or success for a repair) goes into the change log, so the broker and
//! `fcr:events` carry it to existing consumers.

use std::sync::Arc;

use arca_catalog::FixityOutcome;
use arca_model::{format_instant, now};
use arca_repository::{DamagedFile, Repository};

use crate::audit::FindingHook;
use crate::report::{Finding, FindingKind, Report};

/// The name reports give the primary root (the one the damaged set is about).
pub const PRIMARY: &str = "primary";

/// The hook an audit of the primary root calls for each confirmed finding (`runtime` runs
/// the repository's async calls from the audit's blocking threads; called from inside a
/// runtime, the event is recorded by a task instead of waited for).
///
/// A finding about a content file marks that file damaged in [`Repository::damage`] (or
/// clears it when the finding says it was repaired); every finding but a file no manifest
/// names records a PREMIS fixity event about the resource concerned (the binary whose
/// content file it is, else the object's root resource) with [`Repository::record_fixity`].
pub fn announcer(repository: Arc<Repository>, runtime: tokio::runtime::Handle) -> FindingHook {
    Arc::new(move |finding| {
        tracing::warn!(
            object = %finding.object,
            kind = ?finding.kind,
            content_path = finding.content_path.as_deref().unwrap_or(""),
            repaired = finding.repaired,
            "{}",
            finding.message
        );
        let key = storage_key(&repository, finding);
        if let Some(key) = &key {
            if finding.repaired {
                repository.damage().clear(key);
            } else {
                repository.damage().mark(damaged_file(finding, key));
            }
        }
        if finding.kind == FindingKind::UnexpectedFile {
            // A stray file damages no resource.
            return;
        }
        let event = record_event(repository.clone(), finding.clone(), key);
        if tokio::runtime::Handle::try_current().is_ok() {
            runtime.spawn(event);
        } else {
            runtime.block_on(event);
        }
    })
}

/// Marks the unrepaired content-file findings of `report` (the latest audit's of the
/// primary root, at server start; a replica's report marks nothing) in the damaged set of `repository`; returns how many were marked. Their events
/// were recorded when they were found.
pub fn load_damage(repository: &Repository, report: &Report) -> usize {
    if report.root != PRIMARY {
        return 0;
    }
    let mut marked = 0;
    for finding in report.findings.iter().filter(|f| !f.repaired) {
        if let Some(key) = storage_key(repository, finding) {
            repository.damage().mark(damaged_file(finding, &key));
            marked += 1;
        }
    }
    marked
}

/// After a complete audit of the whole primary root: the damaged set becomes exactly the
/// unrepaired content findings of `report`, so a file fixed by other means (restored by
/// hand, a finding that was wrong) is served again without a restart. A partial run
/// (stopped, or limited to some objects) changes nothing: call it only for complete ones.
pub fn settle_damage(repository: &Repository, report: &Report) {
    if !report.complete || report.root != PRIMARY {
        return;
    }
    let found = report.findings.iter().filter(|f| !f.repaired);
    let files: Vec<DamagedFile> = found
        .filter_map(|f| storage_key(repository, f).map(|key| damaged_file(f, &key)))
        .collect();
    repository.damage().replace_all(files);
}

/// Whether a finding is about the bytes of one content file (what reads of its binary
/// must refuse).
pub fn is_content_damage(kind: FindingKind) -> bool {
    matches!(
        kind,
        FindingKind::ContentDigest
            | FindingKind::FixityDigest
            | FindingKind::ContentMissing
            | FindingKind::ContentUnreadable
    )
}

/// The storage key (`<object root>/<content path>`) of the content file a finding is
/// about, if it is about one.
fn storage_key(repository: &Repository, finding: &Finding) -> Option<String> {
    if !is_content_damage(finding.kind) {
        return None;
    }
    let path = finding.content_path.as_deref()?;
    Some(format!(
        "{}/{}",
        repository.ocfl().object_key(&finding.object),
        path
    ))
}

/// The registry's record of a finding.
fn damaged_file(finding: &Finding, key: &str) -> DamagedFile {
    DamagedFile {
        key: key.to_string(),
        object: finding.object.clone(),
        kind: kind_name(finding.kind),
        expected: finding.expected.clone(),
        actual: finding.actual.clone(),
        message: finding.message.clone(),
        found: format_instant(now()),
    }
}

/// The finding kind's name as reports write it (`content_digest`).
fn kind_name(kind: FindingKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{kind:?}"))
}

/// What the event says of the check: the finding's words, the digests, the file.
pub fn event_detail(finding: &Finding) -> String {
    let mut detail = format!("{}: {}", kind_name(finding.kind), finding.message);
    if let Some(expected) = &finding.expected {
        detail.push_str(&format!("; expected {expected}"));
        match &finding.actual {
            Some(actual) => detail.push_str(&format!(", found {actual}")),
            None => detail.push_str(", found nothing"),
        }
    }
    if let Some(path) = &finding.content_path {
        detail.push_str(&format!("; file {path}"));
    }
    if let Some(version) = &finding.version {
        detail.push_str(&format!(" ({version})"));
    }
    if finding.repaired {
        detail.push_str("; repaired");
    }
    detail
}

/// Records the finding's PREMIS event about the resource it concerns (logged, not
/// returned, when that fails: the report keeps the finding either way).
async fn record_event(repository: Arc<Repository>, finding: Finding, key: Option<String>) {
    let id = match repository
        .resource_of_file(
            &finding.object,
            key.as_deref().unwrap_or(""),
            finding.logical_path.as_deref(),
        )
        .await
    {
        Ok(Some(id)) => id,
        Ok(None) => {
            tracing::warn!(object = %finding.object, "no resource of the object is known; no fixity event recorded");
            return;
        }
        Err(e) => {
            tracing::error!(object = %finding.object, error = %e, "cannot find the resource of a finding; no fixity event recorded");
            return;
        }
    };
    let outcome = if finding.repaired {
        FixityOutcome::Success
    } else {
        FixityOutcome::Failure
    };
    if let Err(e) = repository
        .record_fixity(&id, outcome, &event_detail(&finding))
        .await
    {
        tracing::error!(%id, error = %e, "cannot record the fixity event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(kind: FindingKind, repaired: bool) -> Finding {
        Finding {
            object: "info:fedora/a".into(),
            version: Some("v2".into()),
            logical_path: Some("b".into()),
            content_path: Some("v2/content/b".into()),
            kind,
            expected: Some("sha512:aa".into()),
            actual: Some("sha512:bb".into()),
            repaired,
            message: "the bytes changed".into(),
        }
    }

    #[test]
    fn only_content_findings_are_damage_to_refuse() {
        assert!(is_content_damage(FindingKind::ContentDigest));
        assert!(is_content_damage(FindingKind::ContentMissing));
        assert!(!is_content_damage(FindingKind::InventorySidecar));
        assert!(!is_content_damage(FindingKind::UnexpectedFile));
        assert!(!is_content_damage(FindingKind::CatalogMismatch));
    }

    #[test]
    fn the_detail_names_kind_digests_and_file() {
        let d = event_detail(&finding(FindingKind::ContentDigest, false));
        assert_eq!(
            d,
            "content_digest: the bytes changed; expected sha512:aa, found sha512:bb; file v2/content/b (v2)"
        );
        let mut missing = finding(FindingKind::ContentMissing, true);
        missing.actual = None;
        let d = event_detail(&missing);
        assert!(
            d.contains("found nothing") && d.ends_with("; repaired"),
            "{d}"
        );
    }
}
