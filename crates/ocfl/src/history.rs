//! An object's history as the inventory records it: in which versions a logical path
//! changed, and what a path held in a given version.

use crate::inventory::invert_state;
use crate::{Inventory, VersionNum};

/// A version in which a logical path got new content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathChange {
    /// The version.
    pub version: VersionNum,
    /// The logical path.
    pub logical: String,
    /// Its digest in that version.
    pub digest: String,
}

impl Inventory {
    /// Every version in which a logical path accepted by `wanted` appeared or changed
    /// content, oldest version first. `immutable_only` leaves out the head version (an
    /// object's mutable HEAD, which is not a version yet).
    pub fn path_changes(
        &self,
        wanted: impl Fn(&str) -> bool,
        immutable_only: bool,
    ) -> Vec<PathChange> {
        let mut previous = std::collections::BTreeMap::new();
        let mut out = Vec::new();
        for (num, version) in &self.versions {
            if immutable_only && *num == self.head {
                break;
            }
            let state = invert_state(&version.state);
            for (logical, digest) in &state {
                if wanted(logical) && previous.get(logical) != Some(digest) {
                    out.push(PathChange {
                        version: *num,
                        logical: logical.clone(),
                        digest: digest.clone(),
                    });
                }
            }
            previous = state;
        }
        out
    }

    /// The content path (relative to the object root) of a logical path in `version`.
    pub fn resolve_in(&self, version: VersionNum, logical: &str) -> Option<&str> {
        let digest = self
            .versions
            .get(&version)?
            .state
            .iter()
            .find(|(_, paths)| paths.iter().any(|p| p == logical))
            .map(|(d, _)| d)?;
        self.content_path_for(digest)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::Version;

    fn version(files: &[(&str, &str)]) -> Version {
        let mut state: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (path, digest) in files {
            state
                .entry(digest.to_string())
                .or_default()
                .push(path.to_string());
        }
        Version {
            created: "2026-01-01T00:00:00Z".into(),
            message: None,
            user: None,
            state,
        }
    }

    #[test]
    fn changes_are_the_versions_where_content_differs() {
        let v = |n| VersionNum::parse(n).unwrap();
        let inventory = Inventory {
            id: "o".into(),
            inventory_type: crate::INVENTORY_TYPE_1_1.into(),
            digest_algorithm: "sha512".into(),
            head: v("v3"),
            content_directory: None,
            fixity: Default::default(),
            manifest: [
                ("a", "v1/content/h"),
                ("b", "v2/content/x"),
                ("c", "v3/content/h"),
            ]
            .into_iter()
            .map(|(d, p)| (d.to_string(), vec![p.to_string()]))
            .collect(),
            versions: [
                (v("v1"), version(&[("h", "a")])),
                (v("v2"), version(&[("h", "a"), ("x", "b")])),
                (v("v3"), version(&[("h", "c"), ("x", "b")])),
            ]
            .into_iter()
            .collect(),
        };
        let all = inventory.path_changes(|_| true, false);
        let seen: Vec<(String, &str)> = all
            .iter()
            .map(|c| (c.version.to_string(), c.logical.as_str()))
            .collect();
        assert_eq!(
            seen,
            [("v1".into(), "h"), ("v2".into(), "x"), ("v3".into(), "h")]
        );
        let immutable = inventory.path_changes(|p| p == "h", true);
        assert_eq!(immutable.len(), 1);
        assert_eq!(inventory.resolve_in(v("v2"), "h"), Some("v1/content/h"));
        assert_eq!(inventory.resolve_in(v("v3"), "h"), Some("v3/content/h"));
        assert_eq!(inventory.resolve_in(v("v1"), "x"), None);
    }
}
