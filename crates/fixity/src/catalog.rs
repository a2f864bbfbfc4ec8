//! The catalog's view of an object against storage: the resources it records in the
//! object, with their digests, sizes, content files and versions, compared with the rows
//! storage derives (as a rebuild would make them).

use std::collections::BTreeMap;

use arca_catalog::ResourceRecord;
use arca_ocfl::ObjectStorage;
use arca_repository::Repository;

use crate::report::{Finding, FindingKind};
use crate::Result;

/// What of a resource is compared.
#[derive(Debug, PartialEq, Eq)]
struct Essentials {
    model: String,
    deleted: bool,
    size: Option<i64>,
    digests: Vec<String>,
    content_file: Option<String>,
}

impl Essentials {
    fn of(record: &ResourceRecord) -> Self {
        let mut digests = record.headers.digests.clone().unwrap_or_default();
        digests.iter_mut().for_each(|d| d.make_ascii_lowercase());
        digests.sort();
        Self {
            model: record.headers.interaction_model.clone(),
            deleted: record.headers.deleted,
            size: record.headers.content_size,
            digests,
            content_file: record.content_file.clone(),
        }
    }

    fn describe(&self) -> String {
        format!(
            "{}{}, size {}, digests [{}], content {}",
            self.model,
            if self.deleted { " (deleted)" } else { "" },
            self.size.map_or("none".into(), |s| s.to_string()),
            self.digests.join(" "),
            self.content_file.as_deref().unwrap_or("none")
        )
    }
}

/// The differences between the catalog's records of the object `object_id` (root `prefix`
/// in `store`) and what storage holds. An object storage cannot derive rows from (damaged
/// headers, an unusable inventory) is left to the storage findings.
pub(crate) fn compare(
    repository: &Repository,
    runtime: &tokio::runtime::Handle,
    store: &dyn ObjectStorage,
    prefix: &str,
    object_id: &str,
) -> Result<Vec<Finding>> {
    let Some(state) = (match arca_ocfl::read_object_in(store, prefix) {
        Ok(state) => state,
        Err(_) => return Ok(Vec::new()),
    }) else {
        return Ok(Vec::new());
    };
    let rows = match arca_repository::rows_from_object(repository.ocfl(), &state) {
        Ok(rows) => rows,
        Err(e) if e.is_unavailable() => return Err(e.into()),
        Err(_) => return Ok(Vec::new()),
    };
    let catalog = repository.catalog();
    let recorded = runtime
        .block_on(catalog.in_object(object_id))
        .map_err(arca_repository::Error::from)?;
    let stored: BTreeMap<String, &ResourceRecord> =
        rows.records.iter().map(|r| (r.id.to_string(), r)).collect();
    let recorded: BTreeMap<String, &ResourceRecord> =
        recorded.iter().map(|r| (r.id.to_string(), r)).collect();
    let mut findings = Vec::new();
    let mut mismatch = |id: &str, expected: Option<String>, actual: Option<String>, what: &str| {
        findings.push(Finding {
            object: object_id.to_string(),
            version: None,
            logical_path: Some(id.to_string()),
            content_path: None,
            kind: FindingKind::CatalogMismatch,
            message: format!(
                "{object_id}: the catalog's record of {id} {what} (`arca rebuild` recreates \
                 the catalog from storage)"
            ),
            expected,
            actual,
            repaired: false,
        });
    };
    for (id, record) in &stored {
        let want = Essentials::of(record);
        match recorded.get(id) {
            None => mismatch(id, Some(want.describe()), None, "is missing"),
            Some(have) => {
                let have = Essentials::of(have);
                if have != want {
                    mismatch(
                        id,
                        Some(want.describe()),
                        Some(have.describe()),
                        "differs from storage",
                    );
                    continue;
                }
                if want.deleted {
                    continue;
                }
                let mut versions: Vec<i64> = rows
                    .mementos
                    .iter()
                    .filter(|m| m.id == record.id)
                    .map(|m| m.datetime)
                    .collect();
                versions.sort_unstable();
                versions.dedup();
                let mut listed = runtime
                    .block_on(catalog.mementos(&record.id))
                    .map_err(arca_repository::Error::from)?;
                listed.sort_unstable();
                listed.dedup();
                if listed != versions {
                    mismatch(
                        id,
                        Some(format!("versions {versions:?}")),
                        Some(format!("versions {listed:?}")),
                        "lists other versions than storage",
                    );
                }
            }
        }
    }
    for (id, have) in &recorded {
        if !stored.contains_key(id) {
            let have = Essentials::of(have);
            mismatch(
                id,
                None,
                Some(have.describe()),
                "names a resource storage does not hold",
            );
        }
    }
    Ok(findings)
}
