use md5::{Digest as _, Md5};
use serde::{Deserialize, Serialize};

use crate::{format_instant, InteractionModel, Timestamp};

/// The value Fedora 6 writes in `headersVersion`.
pub const HEADERS_VERSION: &str = "1.0";

/// One `.fcrepo/*.json` resource header, field for field and in the order Fedora 6 writes
/// them (compact JSON, `null` fields left out). See OCFL-FEDORA.md §2.5.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceHeaders {
    /// Internal id of the resource.
    pub id: String,
    /// Internal id of the parent (the root is its own parent).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub parent: Option<String>,
    /// The Archival Group the resource belongs to, if any.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub archival_group_id: Option<String>,
    /// Uppercase MD5 hex of the last-modified epoch millis.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub state_token: Option<String>,
    /// Interaction model IRI.
    pub interaction_model: String,
    /// Media type of a binary.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mime_type: Option<String>,
    /// File name of a binary.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub filename: Option<String>,
    /// Content size in bytes, -1 when there is no content.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub content_size: Option<i64>,
    /// Digests as `urn:<alg>:<hex>`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub digests: Option<Vec<String>>,
    /// External content URL.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub external_url: Option<String>,
    /// External content handling (`proxy` or `redirect`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub external_handling: Option<String>,
    /// Creation instant.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub created_date: Option<String>,
    /// Creating user.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub created_by: Option<String>,
    /// Last modification instant.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub last_modified_date: Option<String>,
    /// Last modifying user.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub last_modified_by: Option<String>,
    /// Instant of the memento this header belongs to.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub memento_created_date: Option<String>,
    /// True only on an Archival Group's root resource.
    #[serde(default)]
    pub archival_group: bool,
    /// True on the root resource of an OCFL object.
    #[serde(default)]
    pub object_root: bool,
    /// True once the resource is deleted (a tombstone).
    #[serde(default)]
    pub deleted: bool,
    /// Logical path of the content file inside the object.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub content_path: Option<String>,
    /// Always [`HEADERS_VERSION`].
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub headers_version: Option<String>,
}

impl ResourceHeaders {
    /// The header of a new resource: its id, parent and interaction model, Fedora's
    /// `headersVersion`, and nothing else yet (no dates, no binary fields, not an object
    /// root, not deleted).
    pub fn new(id: impl Into<String>, parent: Option<String>, model: InteractionModel) -> Self {
        Self {
            id: id.into(),
            parent,
            archival_group_id: None,
            state_token: None,
            interaction_model: model.iri().to_string(),
            mime_type: None,
            filename: None,
            content_size: None,
            digests: None,
            external_url: None,
            external_handling: None,
            created_date: None,
            created_by: None,
            last_modified_date: None,
            last_modified_by: None,
            memento_created_date: None,
            archival_group: false,
            object_root: false,
            deleted: false,
            content_path: None,
            headers_version: Some(HEADERS_VERSION.to_string()),
        }
    }

    /// The parsed interaction model, if known.
    pub fn model(&self) -> Option<InteractionModel> {
        self.interaction_model.parse().ok()
    }

    /// The recorded digests of a binary that parse as `urn:<alg>:<hex>` of a known algorithm.
    pub fn digest_values(&self) -> Vec<crate::DigestValue> {
        self.digests
            .iter()
            .flatten()
            .filter_map(|u| crate::DigestAlgorithm::parse_urn(u))
            .collect()
    }

    /// Sets last-modified date, user, memento date and the state token together, as
    /// Fedora's `touchModificationHeaders` does.
    pub fn touch(&mut self, at: Timestamp, user: &str) {
        let s = format_instant(at);
        self.last_modified_date = Some(s.clone());
        self.last_modified_by = Some(user.to_string());
        self.memento_created_date = Some(s);
        self.state_token = Some(state_token(at));
    }

    /// [`touch`](Self::touch) for a change of an existing resource: at `at`, or one
    /// millisecond after its previous modification when `at` is not that much later. The
    /// state token, and so the ETag, is a hash of the modification's millisecond: two changes
    /// within one millisecond (or a clock set back) would give the same one, and a
    /// conditional write naming the older state (`If-Match`, `X-If-State-Token`) would pass
    /// against the newer one.
    pub fn touch_after_previous(&mut self, at: Timestamp, user: &str) {
        let earliest = self
            .last_modified_date
            .as_deref()
            .and_then(crate::parse_instant)
            .map(|previous| previous + time::Duration::MILLISECOND);
        let at = match earliest {
            Some(earliest) if at < earliest => earliest,
            _ => at,
        };
        self.touch(at, user);
    }

    /// Compact JSON exactly as Fedora serializes it (no trailing newline).
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("headers always serialize")
    }

    /// Parses a header file.
    pub fn from_json(bytes: &[u8]) -> serde_json::Result<Self> {
        serde_json::from_slice(bytes)
    }
}

/// Fedora's state token: uppercase hex MD5 of the decimal epoch-millis of `at`.
pub fn state_token(at: Timestamp) -> String {
    let millis = at.unix_timestamp_nanos() / 1_000_000;
    hex::encode_upper(Md5::digest(millis.to_string().as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"{"id":"info:fedora/ag1/sub/data file.bin","parent":"info:fedora/ag1/sub","archivalGroupId":"info:fedora/ag1","stateToken":"6A774F59236CFF0DE04179862D6B8336","interactionModel":"http://www.w3.org/ns/ldp#NonRDFSource","mimeType":"application/octet-stream","filename":"data file.bin","contentSize":4,"digests":["urn:sha-512:ba6e18f30a6269248d404687ebddf5a312da939b9442739edb188c2d6b7d74e772593043d25e9204ff1333d88d02bbeece2fd61e770876aa7f984382f71173c9"],"createdDate":"2026-11-21T20:23:50.058929100Z","createdBy":"fedoraAdmin","lastModifiedDate":"2026-11-21T20:23:50.165305662Z","lastModifiedBy":"fedoraAdmin","mementoCreatedDate":"2026-11-21T20:23:50.165305662Z","archivalGroup":false,"objectRoot":false,"deleted":false,"contentPath":"sub/data file.bin","headersVersion":"1.0"}"#;

    #[test]
    fn round_trips_fedora_bytes() {
        let h = ResourceHeaders::from_json(SAMPLE.as_bytes()).unwrap();
        assert_eq!(String::from_utf8(h.to_json()).unwrap(), SAMPLE);
    }

    #[test]
    fn a_change_within_the_same_millisecond_gets_a_new_state_token() {
        let created = crate::parse_instant("2026-11-21T20:23:50.165305662Z").unwrap();
        let mut h = ResourceHeaders::from_json(SAMPLE.as_bytes()).unwrap();
        h.touch(created, "a");
        let first = h.state_token.clone();
        // The same instant, a later one in the same millisecond, and one before it.
        for at in [
            created,
            created + time::Duration::microseconds(500),
            created - time::Duration::seconds(3),
        ] {
            let before = h.clone();
            h.touch_after_previous(at, "b");
            let previous = crate::parse_instant(before.last_modified_date.as_deref().unwrap());
            let now = crate::parse_instant(h.last_modified_date.as_deref().unwrap());
            assert_eq!(now, previous.map(|p| p + time::Duration::MILLISECOND));
            assert_ne!(h.state_token, before.state_token);
            assert_ne!(h.state_token, first);
            assert_eq!(h.last_modified_by.as_deref(), Some("b"));
        }
        // A change a millisecond or more later keeps its own time.
        let later = created + time::Duration::seconds(10);
        h.touch_after_previous(later, "c");
        assert_eq!(h.last_modified_date, Some(crate::format_instant(later)));
        assert_eq!(h.state_token, Some(state_token(later)));
    }

    #[test]
    fn state_token_matches_fedora() {
        // from the sample root: lastModifiedDate 2026-11-21T20:23:50.165305662Z
        let t = crate::parse_instant("2026-11-21T20:23:50.165305662Z").unwrap();
        assert_eq!(state_token(t), "6A774F59236CFF0DE04179862D6B8336");
    }
}
