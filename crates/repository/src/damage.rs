//! The files a fixity audit found damaged and nothing has repaired yet: reads of a binary
//! whose content file is here are refused ([`Error::Damaged`]) instead of serving bytes
//! that are not the ones deposited, and the PREMIS fixity events an audit records
//! ([`Repository::record_fixity`]).
//!
//! Files are keyed by their storage key (`<object root>/<content path>`, what
//! `ResourceRecord::content_file` holds), so a new version of a damaged binary, whose
//! content lands in a new file, is served again at once. The set lives in memory; the
//! server loads the unrepaired findings of the latest audit report at start. An empty set
//! costs a read one atomic load.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use arca_catalog::{CatalogOp, Change, ChangeKind, FixityOutcome, ResourceRecord};
use arca_model::{format_instant, now, FedoraId};
use parking_lot::RwLock;
use serde::Serialize;

use crate::{Error, Repository, Result};

/// The user fixity events are recorded under (no request made them).
pub const FIXITY_USER: &str = "arca-fixity";

/// One damaged file, as an audit found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DamagedFile {
    /// Its storage key: `<object root>/<content path>`.
    pub key: String,
    /// The OCFL object it belongs to (`info:fedora/a/b`).
    pub object: String,
    /// What is wrong (the audit's finding kind, `content_digest`, `content_missing`, …).
    pub kind: String,
    /// What the inventory records (`sha512:ab…`).
    pub expected: Option<String>,
    /// What storage holds instead (`None`: missing or unreadable).
    pub actual: Option<String>,
    /// The audit's words.
    pub message: String,
    /// When it was found (RFC 3339).
    pub found: String,
}

/// The damaged files of a repository ([`Repository::damage`]).
#[derive(Debug, Default)]
pub struct Damage {
    /// Whether `files` holds anything: the read path's only cost while it does not.
    any: AtomicBool,
    files: RwLock<BTreeMap<String, DamagedFile>>,
}

impl Damage {
    /// Marks `file` damaged (replacing what was known of the same key).
    pub fn mark(&self, file: DamagedFile) {
        let mut files = self.files.write();
        files.insert(file.key.clone(), file);
        self.any.store(true, Ordering::Release);
    }

    /// Forgets the damage of `key` (repaired); whether it was marked.
    pub fn clear(&self, key: &str) -> bool {
        let mut files = self.files.write();
        let was = files.remove(key).is_some();
        self.any.store(!files.is_empty(), Ordering::Release);
        was
    }

    /// The damage of `key`, if it is marked.
    pub fn get(&self, key: &str) -> Option<DamagedFile> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.files.read().get(key).cloned()
    }

    /// Whether nothing is marked.
    pub fn is_empty(&self) -> bool {
        !self.any.load(Ordering::Acquire)
    }

    /// Makes `files` the whole set (after a complete audit: what it did not find again is
    /// no longer damaged).
    pub fn replace_all(&self, files: impl IntoIterator<Item = DamagedFile>) {
        let mut set = self.files.write();
        *set = files.into_iter().map(|f| (f.key.clone(), f)).collect();
        self.any.store(!set.is_empty(), Ordering::Release);
    }

    /// How many files are marked.
    pub fn len(&self) -> usize {
        if self.is_empty() {
            return 0;
        }
        self.files.read().len()
    }

    /// Every marked file, by key.
    pub fn list(&self) -> Vec<DamagedFile> {
        if self.is_empty() {
            return Vec::new();
        }
        self.files.read().values().cloned().collect()
    }

    /// Refuses a read of `record`'s content when its content file is marked damaged.
    ///
    /// # Errors
    /// [`Error::Damaged`] naming the damage.
    pub fn check(&self, record: &ResourceRecord) -> Result<()> {
        let Some(key) = record.content_file.as_deref() else {
            return Ok(());
        };
        match self.get(key) {
            None => Ok(()),
            Some(file) => Err(Error::Damaged {
                id: record.id.clone(),
                file: Box::new(file),
            }),
        }
    }
}

impl DamagedFile {
    /// The damage in one sentence, for answers and pages: what, since when, expected and
    /// actual digest.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "a fixity audit found its stored content damaged on {} ({}: {}",
            self.found, self.kind, self.message
        );
        if let Some(expected) = &self.expected {
            text.push_str(&format!("; expected {expected}"));
        }
        match &self.actual {
            Some(actual) => text.push_str(&format!(", found {actual}")),
            None if self.expected.is_some() => text.push_str(", found nothing readable"),
            None => {}
        }
        text.push(')');
        text
    }
}

impl Repository {
    /// The files known to be damaged.
    pub fn damage(&self) -> &Damage {
        &self.kernel.damage
    }

    /// Records a PREMIS fixity event about `id` in the change log (so the brokers and
    /// `fcr:events` carry it): `outcome` and `detail` (what the check found). The entry
    /// carries the resource's current rdf:types, so consumers can filter on them; it
    /// changes nothing else. Returns the entry's sequence number.
    pub async fn record_fixity(
        &self,
        id: &FedoraId,
        outcome: FixityOutcome,
        detail: &str,
    ) -> Result<i64> {
        let types = match self.catalog.get(id).await? {
            Some(record) => crate::changes::types_of(&record),
            None => Vec::new(),
        };
        let seq = self
            .catalog
            .apply(vec![CatalogOp::Log(Change {
                id: id.clone(),
                kind: ChangeKind::Fixity(outcome),
                at: format_instant(now()),
                user: FIXITY_USER.into(),
                agent: Some(detail.to_string()),
                types,
            })])
            .await?;
        Ok(seq)
    }

    /// The resource a file of OCFL object `object` (its storage key `key`, its logical
    /// path in the object's state when known) is about: the resource whose current content
    /// file it is; else the one whose content or header has that logical path (an older
    /// version's file of a resource that still exists); else the object's root resource
    /// (an inventory, a file of a resource gone since). `None` when the catalog knows no
    /// resource of the object.
    pub async fn resource_of_file(
        &self,
        object: &str,
        key: &str,
        logical_path: Option<&str>,
    ) -> Result<Option<FedoraId>> {
        let records = self.catalog.in_object(object).await?;
        if let Some(r) = records
            .iter()
            .find(|r| r.content_file.as_deref() == Some(key))
        {
            return Ok(Some(r.id.clone()));
        }
        if let Some(logical) = logical_path {
            let named = records.iter().find(|r| {
                let binary = r.headers.model().is_some_and(|m| m.is_binary());
                let (header, content) = crate::logical_paths(object, &r.id, binary);
                content == logical || header == logical
            });
            if let Some(r) = named {
                return Ok(Some(r.id.clone()));
            }
        }
        Ok(records
            .iter()
            .filter(|r| !r.id.is_description() && !r.id.is_acl())
            .min_by_key(|r| r.id.as_str().len())
            .map(|r| r.id.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(key: &str) -> DamagedFile {
        DamagedFile {
            key: key.into(),
            object: "info:fedora/a".into(),
            kind: "content_digest".into(),
            expected: Some("sha512:aa".into()),
            actual: Some("sha512:bb".into()),
            message: "bit rot".into(),
            found: "2026-11-29T09:00:00Z".into(),
        }
    }

    #[test]
    fn the_set_is_empty_until_marked_and_again_once_cleared() {
        let d = Damage::default();
        assert!(d.is_empty());
        assert_eq!(d.get("k"), None);
        d.mark(file("k"));
        d.mark(file("j"));
        assert_eq!(d.len(), 2);
        assert_eq!(d.get("k").unwrap().actual.as_deref(), Some("sha512:bb"));
        assert!(d.clear("k"));
        assert!(!d.clear("k"));
        assert!(!d.is_empty());
        assert!(d.clear("j"));
        assert!(d.is_empty());
        assert!(d.list().is_empty());
        d.mark(file("old"));
        d.replace_all([file("a"), file("b")]);
        assert_eq!(d.get("old"), None);
        assert_eq!(d.len(), 2);
        d.replace_all([]);
        assert!(d.is_empty());
    }

    #[test]
    fn the_description_names_the_date_and_both_digests() {
        let text = file("k").describe();
        assert!(text.contains("2026-11-29T09:00:00Z"), "{text}");
        assert!(
            text.contains("expected sha512:aa, found sha512:bb"),
            "{text}"
        );
        let missing = DamagedFile {
            actual: None,
            ..file("k")
        };
        assert!(missing.describe().contains("found nothing readable"));
    }
}
