use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use arca_model::{DigestAlgorithm, MultiHasher};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Error, Result};

/// The `type` of an OCFL 1.1 inventory.
pub const INVENTORY_TYPE_1_1: &str = "https://ocfl.io/1.1/spec/#inventory";

/// A version name (`v1`, `v2`, … or zero-padded `v001`). Ordered by number.
#[derive(Debug, Clone, Copy, Eq)]
pub struct VersionNum {
    /// The number.
    pub number: u32,
    /// Zero-padded width of the digits (0 = unpadded).
    pub width: u8,
}

impl VersionNum {
    /// `v1`.
    pub fn first() -> Self {
        Self {
            number: 1,
            width: 0,
        }
    }

    /// The next version name, with the same padding.
    pub fn next(self) -> Self {
        Self {
            number: self.number + 1,
            width: self.width,
        }
    }

    /// Parses `vN` or zero-padded `v0NN`.
    pub fn parse(s: &str) -> Option<Self> {
        let digits = s.strip_prefix('v')?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let number: u32 = digits.parse().ok()?;
        let width = if digits.starts_with('0') {
            digits.len() as u8
        } else {
            0
        };
        (number > 0).then_some(Self { number, width })
    }
}

impl PartialEq for VersionNum {
    fn eq(&self, other: &Self) -> bool {
        self.number == other.number
    }
}

impl PartialOrd for VersionNum {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for VersionNum {
    fn cmp(&self, other: &Self) -> Ordering {
        self.number.cmp(&other.number)
    }
}

impl fmt::Display for VersionNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.width == 0 {
            write!(f, "v{}", self.number)
        } else {
            write!(f, "v{:0width$}", self.number, width = self.width as usize)
        }
    }
}

impl Serialize for VersionNum {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for VersionNum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        VersionNum::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("invalid version name {s:?}")))
    }
}

/// The `user` of a version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// Name.
    pub name: String,
    /// Address (a URI).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub address: Option<String>,
}

/// One entry of `versions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Version {
    /// RFC 3339 creation instant.
    pub created: String,
    /// Commit message.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub message: Option<String>,
    /// Author.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub user: Option<User>,
    /// Digest → logical paths.
    pub state: BTreeMap<String, Vec<String>>,
}

/// An OCFL inventory, with keys in the order ocfl-java writes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Inventory {
    /// Object id.
    pub id: String,
    /// Inventory type URI.
    #[serde(rename = "type")]
    pub inventory_type: String,
    /// `sha512` (Fedora's default) or `sha256`: the digest of the manifest, the states and
    /// the sidecar (see [`Inventory::content_digest`]).
    pub digest_algorithm: String,
    /// The newest version.
    pub head: VersionNum,
    /// Content directory name (default `content`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub content_directory: Option<String>,
    /// Fixity block; arca writes `{}` as Fedora does.
    #[serde(default)]
    pub fixity: serde_json::Map<String, serde_json::Value>,
    /// Digest → content paths.
    pub manifest: BTreeMap<String, Vec<String>>,
    /// Version name → version.
    pub versions: BTreeMap<VersionNum, Version>,
}

impl Inventory {
    /// Parses inventory bytes.
    pub fn from_slice(bytes: &[u8]) -> serde_json::Result<Self> {
        serde_json::from_slice(bytes)
    }

    /// Compact JSON as ocfl-java writes it.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("inventory always serializes")
    }

    /// The algorithm `digestAlgorithm` names. An object keeps it for good: arca writes
    /// every later version of the object with it, as ocfl-java does.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a name OCFL does not allow there (only `sha512` and
    /// `sha256`, E025).
    pub fn content_digest(&self) -> Result<DigestAlgorithm> {
        DigestAlgorithm::from_ocfl_name(&self.digest_algorithm)
            .filter(|a| a.is_ocfl_content_digest())
            .ok_or_else(|| {
                Error::Unsupported(format!(
                    "object {} uses digest algorithm {:?}; OCFL allows sha512 or sha256",
                    self.id, self.digest_algorithm
                ))
            })
    }

    /// The content directory name.
    pub fn content_dir(&self) -> &str {
        self.content_directory.as_deref().unwrap_or("content")
    }

    /// The head version.
    pub fn head_version(&self) -> Option<&Version> {
        self.versions.get(&self.head)
    }

    /// The head state as logical path → digest.
    pub fn head_state(&self) -> BTreeMap<String, String> {
        self.head_version()
            .map(|v| invert_state(&v.state))
            .unwrap_or_default()
    }

    /// The first content path stored for `digest` (compared ignoring case).
    pub fn content_path_for(&self, digest: &str) -> Option<&str> {
        if let Some(paths) = self.manifest.get(digest) {
            return paths.first().map(String::as_str);
        }
        self.manifest
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(digest))
            .and_then(|(_, v)| v.first().map(String::as_str))
    }

    /// The content path (relative to the object root) of a logical path in the head state.
    pub fn resolve_head(&self, logical: &str) -> Option<&str> {
        let version = self.head_version()?;
        let digest = version
            .state
            .iter()
            .find(|(_, paths)| paths.iter().any(|p| p == logical))
            .map(|(d, _)| d)?;
        self.content_path_for(digest)
    }
}

/// Digest → paths becomes path → digest.
pub(crate) fn invert_state(state: &BTreeMap<String, Vec<String>>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (digest, paths) in state {
        for p in paths {
            out.insert(p.clone(), digest.clone());
        }
    }
    out
}

/// Path → digest becomes digest → sorted paths.
pub(crate) fn group_state(by_path: &BTreeMap<String, String>) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, digest) in by_path {
        out.entry(digest.clone()).or_default().push(path.clone());
    }
    out
}

/// The sidecar line `<hex>  inventory.json\n` for inventory bytes, with the inventory's
/// own digest algorithm.
pub(crate) fn sidecar_for(algorithm: DigestAlgorithm, inventory_bytes: &[u8]) -> String {
    format!(
        "{}  inventory.json\n",
        MultiHasher::digest(algorithm, inventory_bytes)
    )
}

/// The name of the sidecar beside an inventory file named `inventory`:
/// `<inventory>.<algorithm>` (E058).
pub(crate) fn sidecar_name(inventory: &str, algorithm: DigestAlgorithm) -> String {
    format!("{inventory}.{}", algorithm.ocfl_name())
}

/// Whether `name` is the sidecar of the inventory file `inventory` for some content
/// digest algorithm (`inventory.json.sha512`, `inventory.json.sha256`).
pub(crate) fn is_sidecar_of(name: &str, inventory: &str) -> bool {
    name.strip_prefix(inventory)
        .and_then(|rest| rest.strip_prefix('.'))
        .and_then(DigestAlgorithm::from_ocfl_name)
        .is_some_and(DigestAlgorithm::is_ocfl_content_digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_instants_are_spelled_as_ocfl_java_spells_them() {
        use crate::root::inventory_instant;
        for (given, written) in [
            (
                "2026-11-24T16:40:51.442474880Z",
                "2026-11-24T16:40:51.44247488Z",
            ),
            (
                "2026-11-24T16:40:51.442474881Z",
                "2026-11-24T16:40:51.442474881Z",
            ),
            ("2026-11-24T16:40:51.500Z", "2026-11-24T16:40:51.5Z"),
            ("2026-11-24T16:40:51.000Z", "2026-11-24T16:40:51Z"),
            ("2026-11-24T16:40:51Z", "2026-11-24T16:40:51Z"),
            (
                "2026-11-24T16:40:51.120+01:00",
                "2026-11-24T16:40:51.12+01:00",
            ),
        ] {
            assert_eq!(inventory_instant(given), written, "{given}");
        }
    }

    #[test]
    fn version_numbers_order_numerically() {
        let v2 = VersionNum::parse("v2").unwrap();
        let v10 = VersionNum::parse("v10").unwrap();
        assert!(v2 < v10);
        assert_eq!(v10.next().to_string(), "v11");
        assert_eq!(
            VersionNum::parse("v007").unwrap().next().to_string(),
            "v008"
        );
        assert!(VersionNum::parse("v0").is_none());
        assert!(VersionNum::parse("x1").is_none());
    }
}
