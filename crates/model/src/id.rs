use std::fmt;

/// The internal id of the repository root.
pub const ROOT_ID: &str = "info:fedora";

/// Longest internal id (`info:fedora/` + path), in UTF-16 code units as Fedora 6 counts
/// them: its catalog keeps ids in a 503-character column and refuses longer ones, so a root
/// with a longer id could not be opened by Fedora.
pub const MAX_ID_CHARS: usize = 503;

/// Longest path segment, in bytes once stored: ocfl-java's Linux path mapper percent-encodes
/// some characters (see [`stored_segment_bytes`]), and Fedora's layout appends at most 14 bytes
/// (`~fcr-desc.json`) to a segment to name a file; Linux file names hold 255 bytes.
pub const MAX_SEGMENT_BYTES: usize = 255 - "~fcr-desc.json".len();

const DESCRIPTION_SUFFIX: &str = "fcr:metadata";
const ACL_SUFFIX: &str = "fcr:acl";

/// Why a path cannot name a resource.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The path has an empty segment (`a//b`).
    #[error("path {0:?} has an empty segment")]
    EmptySegment(String),
    /// The path contains `.` or `..`.
    #[error("path {0:?} contains a relative segment ('.' or '..')")]
    RelativeSegment(String),
    /// The path uses a name Fedora reserves for its own files or endpoints.
    #[error("path {path:?} uses the reserved name {segment:?}")]
    Reserved {
        /// The whole path.
        path: String,
        /// The offending segment.
        segment: String,
    },
    /// The path contains a control character.
    #[error("path {0:?} contains a control character")]
    ControlCharacter(String),
    /// A segment is too long to become a file name in Fedora's layout.
    #[error("the path segment {segment:?} takes {bytes} bytes as a file name; at most {MAX_SEGMENT_BYTES} are allowed")]
    SegmentTooLong {
        /// The start of the offending segment.
        segment: String,
        /// Its length in bytes once stored.
        bytes: usize,
    },
    /// The whole id is longer than Fedora can hold.
    #[error("the id {id:?} is {chars} characters long; at most {MAX_ID_CHARS} are allowed (info:fedora/ and the path)")]
    TooLong {
        /// The start of the id.
        id: String,
        /// Its length in UTF-16 code units.
        chars: usize,
    },
}

/// At most the first `max_chars` characters of `s` (then `…`), for messages that quote
/// client input of any length.
pub fn excerpt(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Decodes `%XX` escapes; `None` for a malformed escape or bytes that are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// How much of a hostile path an error message quotes.
const QUOTED_CHARS: usize = 80;

/// The bytes a path segment takes as a file name in Fedora's layout: ocfl-java's Linux
/// mapper writes `%`, space, U+0000–U+001F and U+007F–U+00A0 as `%xx` escapes of their UTF-8
/// bytes and keeps every other character.
pub fn stored_segment_bytes(segment: &str) -> usize {
    if segment.is_ascii() {
        return segment
            .bytes()
            .map(|b| match b {
                b'%' | b' ' | 0..0x20 | 0x7f => 3,
                _ => 1,
            })
            .sum();
    }
    segment
        .chars()
        .map(|ch| {
            let c = ch as u32;
            if ch == '%' || ch == ' ' || c < 0x20 || (0x7f..=0xa0).contains(&c) {
                3 * ch.len_utf8()
            } else {
                ch.len_utf8()
            }
        })
        .sum()
}

/// A Fedora resource identifier in its internal form: `info:fedora` followed by the
/// percent-decoded path below the REST base, e.g. `info:fedora/a/b c`.
///
/// A `FedoraId` is always valid: its segments are non-empty, never `.`/`..`, never one of
/// Fedora's reserved names, and an `fcr:` segment appears only as a final `fcr:metadata`
/// (a binary's description) or `fcr:acl`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FedoraId(String);

impl FedoraId {
    /// The repository root, `info:fedora`.
    pub fn root() -> Self {
        Self(ROOT_ID.to_string())
    }

    /// Builds an id from a decoded path relative to the REST base (`""` is the root).
    /// A trailing `/` is trimmed, as Fedora does.
    pub fn from_path(path: &str) -> Result<Self, IdError> {
        let trimmed = path.trim_start_matches('/');
        let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
        if trimmed.is_empty() {
            return Ok(Self::root());
        }
        let utf16_units = match trimmed.is_ascii() {
            true => trimmed.len(),
            false => trimmed.encode_utf16().count(),
        };
        let chars = ROOT_ID.len() + 1 + utf16_units;
        if chars > MAX_ID_CHARS {
            return Err(IdError::TooLong {
                id: excerpt(&format!("{ROOT_ID}/{trimmed}"), QUOTED_CHARS),
                chars,
            });
        }
        let mut segments = trimmed.split('/').peekable();
        while let Some(seg) = segments.next() {
            validate_segment(trimmed, seg, segments.peek().is_none())?;
        }
        let mut id = String::with_capacity(ROOT_ID.len() + 1 + trimmed.len());
        id.push_str(ROOT_ID);
        id.push('/');
        id.push_str(trimmed);
        Ok(Self(id))
    }

    /// Parses an internal id (`info:fedora/...`), as found in headers and inventories.
    pub fn from_internal(id: &str) -> Result<Self, IdError> {
        if id == ROOT_ID {
            return Ok(Self::root());
        }
        match id.strip_prefix("info:fedora/") {
            Some(path) if !path.is_empty() && !path.ends_with('/') => Self::from_path(path),
            _ => Err(IdError::Reserved {
                path: id.to_string(),
                segment: id.to_string(),
            }),
        }
    }

    /// The resource an IRI in stored RDF names (`info:fedora/a%20b` → path `a b`, the inverse
    /// of [`iri`](Self::iri)); `None` for IRIs outside the repository, hash URIs (parts of a
    /// resource, not resources) and invalid paths.
    pub fn from_iri(iri: &str) -> Option<FedoraId> {
        if iri == ROOT_ID {
            return Some(Self::root());
        }
        let path = iri.strip_prefix("info:fedora/")?;
        if path.contains('#') {
            return None;
        }
        Self::from_path(&percent_decode(path)?).ok()
    }

    /// The internal id string, e.g. `info:fedora/a/b`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path below the REST base, without leading slash (`""` for the root).
    pub fn path(&self) -> &str {
        self.0
            .strip_prefix(ROOT_ID)
            .map(|p| p.trim_start_matches('/'))
            .unwrap_or("")
    }

    /// Whether this is the repository root.
    pub fn is_root(&self) -> bool {
        self.0 == ROOT_ID
    }

    /// Whether this id names a binary's description (`…/fcr:metadata`).
    pub fn is_description(&self) -> bool {
        self.0.ends_with("/fcr:metadata")
    }

    /// Whether this id names an access control list (`…/fcr:acl`).
    pub fn is_acl(&self) -> bool {
        self.0.ends_with("/fcr:acl")
    }

    /// The resource this id belongs to: itself, or the binary/resource behind a
    /// `fcr:metadata`/`fcr:acl` suffix.
    pub fn base(&self) -> FedoraId {
        match self.0.rsplit_once('/') {
            Some((head, DESCRIPTION_SUFFIX | ACL_SUFFIX)) => FedoraId(head.to_string()),
            _ => self.clone(),
        }
    }

    /// The description (`fcr:metadata`) id of this binary id.
    pub fn description(&self) -> FedoraId {
        self.with_suffix(DESCRIPTION_SUFFIX)
    }

    /// The access control list (`fcr:acl`) id of this resource id.
    pub fn acl(&self) -> FedoraId {
        self.with_suffix(ACL_SUFFIX)
    }

    /// This id with `/{suffix}` appended.
    fn with_suffix(&self, suffix: &str) -> FedoraId {
        let mut id = String::with_capacity(self.0.len() + 1 + suffix.len());
        id.push_str(&self.0);
        id.push('/');
        id.push_str(suffix);
        FedoraId(id)
    }

    /// The id one path segment up; `None` for the root.
    pub fn path_parent(&self) -> Option<FedoraId> {
        if self.is_root() {
            return None;
        }
        self.0
            .rsplit_once('/')
            .map(|(head, _)| FedoraId(head.to_string()))
    }

    /// The last path segment (`""` for the root).
    pub fn last_segment(&self) -> &str {
        if self.is_root() {
            return "";
        }
        self.0.rsplit_once('/').map(|(_, s)| s).unwrap_or("")
    }

    /// A child id below this one; `relative` may hold several segments and is validated.
    pub fn child(&self, relative: &str) -> Result<FedoraId, IdError> {
        let path = self.path();
        if path.is_empty() {
            Self::from_path(relative)
        } else {
            Self::from_path(&format!("{path}/{relative}"))
        }
    }

    /// The path percent-encoded for use in a URL or IRI (`a/b c` → `a/b%20c`); characters
    /// IRIs allow, including non-ASCII letters, are kept.
    pub fn encoded_path(&self) -> String {
        let mut out = String::with_capacity(self.path().len());
        self.push_encoded_path(&mut out);
        out
    }

    /// Appends [`encoded_path`](Self::encoded_path) to `out` (one allocation for a URL or
    /// IRI built around it).
    pub fn push_encoded_path(&self, out: &mut String) {
        let path = self.path();
        // Most paths need no escape: copied whole.
        if path.bytes().all(|b| !needs_escape(b)) {
            out.push_str(path);
            return;
        }
        for ch in path.chars() {
            if ch.is_control() || (ch.is_ascii() && needs_escape(ch as u8)) {
                let mut buf = [0u8; 4];
                for b in ch.encode_utf8(&mut buf).bytes() {
                    const HEX: &[u8; 16] = b"0123456789ABCDEF";
                    out.push('%');
                    out.push(HEX[usize::from(b >> 4)] as char);
                    out.push(HEX[usize::from(b & 0xf)] as char);
                }
            } else {
                out.push(ch);
            }
        }
    }

    /// The IRI of this resource inside stored RDF: `info:fedora/` + [`encoded_path`](Self::encoded_path).
    pub fn iri(&self) -> String {
        if self.is_root() {
            return ROOT_ID.to_string();
        }
        let mut out = String::with_capacity(ROOT_ID.len() + 1 + self.path().len());
        out.push_str(ROOT_ID);
        out.push('/');
        self.push_encoded_path(&mut out);
        out
    }

    /// Whether `self` lies strictly below `ancestor` in the path hierarchy.
    pub fn is_descendant_of(&self, ancestor: &FedoraId) -> bool {
        self.0.len() > ancestor.0.len()
            && self.0.starts_with(&ancestor.0)
            && self.0.as_bytes()[ancestor.0.len()] == b'/'
    }
}

/// Whether byte `b` of a path is escaped in its IRI: ASCII controls, the characters IRIs
/// do not allow, and every byte of a non-ASCII character (which then decides by itself:
/// only its control characters are escaped).
fn needs_escape(b: u8) -> bool {
    const ESCAPED: [bool; 256] = {
        let mut table = [false; 256];
        let mut b = 0;
        while b < 256 {
            table[b] = b < 0x20 || b >= 0x7f;
            b += 1;
        }
        let marks = b" %\"<>\\^`{|}#?[]";
        let mut i = 0;
        while i < marks.len() {
            table[marks[i] as usize] = true;
            i += 1;
        }
        table
    };
    ESCAPED[usize::from(b)]
}

fn validate_segment(path: &str, seg: &str, is_last: bool) -> Result<(), IdError> {
    // The path is quoted only in an error.
    let path = || excerpt(path, QUOTED_CHARS);
    let bytes = stored_segment_bytes(seg);
    if bytes > MAX_SEGMENT_BYTES {
        return Err(IdError::SegmentTooLong {
            segment: excerpt(seg, QUOTED_CHARS),
            bytes,
        });
    }
    if seg.is_empty() {
        return Err(IdError::EmptySegment(path()));
    }
    if seg == "." || seg == ".." {
        return Err(IdError::RelativeSegment(path()));
    }
    let control = match seg.is_ascii() {
        true => seg.bytes().any(|b| b < 0x20 || b == 0x7f),
        false => seg.chars().any(|c| c.is_control()),
    };
    if control {
        return Err(IdError::ControlCharacter(path()));
    }
    let reserved = matches!(
        seg,
        "fcr-root" | ".fcrepo" | "fcr-container.nt" | "fcr:tombstone" | "fcr:versions"
    ) || ["~fcr-desc", "~fcr-acl", "~fcr-desc.nt", "~fcr-acl.nt"]
        .iter()
        .any(|suffix| seg.ends_with(suffix))
        || (seg.starts_with("fcr:")
            && !(is_last && (seg == DESCRIPTION_SUFFIX || seg == ACL_SUFFIX)));
    if reserved {
        return Err(IdError::Reserved {
            path: path(),
            segment: seg.to_string(),
        });
    }
    Ok(())
}

impl fmt::Display for FedoraId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for FedoraId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FedoraId({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_internal_ids() {
        assert_eq!(FedoraId::from_path("").unwrap().as_str(), "info:fedora");
        assert_eq!(
            FedoraId::from_path("/a/b c/").unwrap().as_str(),
            "info:fedora/a/b c"
        );
        let d = FedoraId::from_path("a/file/fcr:metadata").unwrap();
        assert!(d.is_description());
        assert_eq!(d.base().as_str(), "info:fedora/a/file");
        assert_eq!(d.base().description(), d);
        assert_eq!(
            FedoraId::from_path("a/b")
                .unwrap()
                .path_parent()
                .unwrap()
                .as_str(),
            "info:fedora/a"
        );
        assert_eq!(
            FedoraId::from_path("a").unwrap().path_parent().unwrap(),
            FedoraId::root()
        );
    }

    #[test]
    fn rejects_bad_paths() {
        for bad in [
            "a//b",
            "a/../b",
            "./a",
            "a/.fcrepo",
            "fcr-root",
            "a/fcr-container.nt",
            "a/fcr:tombstone",
            "a/fcr:versions",
            "a/x~fcr-desc",
            "a/x~fcr-acl.nt",
            "a/fcr:metadata/b",
            "fcr:foo",
            "a/b\u{0}",
        ] {
            assert!(
                FedoraId::from_path(bad).is_err(),
                "{bad} should be rejected"
            );
        }
    }

    #[test]
    fn bounds_lengths_as_storage_and_fedora_do() {
        // A segment fills a file name with Fedora's longest suffix.
        let longest = "x".repeat(MAX_SEGMENT_BYTES);
        assert!(FedoraId::from_path(&longest).is_ok());
        assert!(matches!(
            FedoraId::from_path(&format!("{longest}x")),
            Err(IdError::SegmentTooLong { bytes: 242, .. })
        ));
        // Percent-encoded characters count three times, multi-byte characters by bytes.
        assert_eq!(stored_segment_bytes("a b%é"), 1 + 3 + 1 + 3 + 2);
        assert_eq!(stored_segment_bytes("a b%\t\x7f"), 1 + 3 + 1 + 3 + 3 + 3);
        assert_eq!(stored_segment_bytes("\u{85}\u{a0}\u{a1}"), 6 + 6 + 2);
        // Control characters, ASCII or not, have no place in a path.
        for path in ["a/b\tc", "a\x7f", "a/\u{85}"] {
            assert!(matches!(
                FedoraId::from_path(path),
                Err(IdError::ControlCharacter(_))
            ));
        }
        assert!(FedoraId::from_path(&" ".repeat(81)).is_err());
        assert!(FedoraId::from_path(&"é".repeat(120)).is_ok());
        // The whole id: Fedora's 503 characters, `info:fedora/` included.
        let path: String = (0..7).map(|_| "y".repeat(70)).collect::<Vec<_>>().join("/");
        assert_eq!(path.len(), 496);
        assert!(matches!(
            FedoraId::from_path(&path),
            Err(IdError::TooLong { chars: 508, .. })
        ));
        let fits = &path[..MAX_ID_CHARS - "info:fedora/".len()];
        assert!(FedoraId::from_path(fits).is_ok());
        // Messages about hostile input stay short.
        let e = FedoraId::from_path(&"z".repeat(65_536))
            .unwrap_err()
            .to_string();
        assert!(e.len() < 300, "{e}");
    }

    #[test]
    fn encodes_paths_for_iris() {
        let id = FedoraId::from_path("a/b c/ü%").unwrap();
        assert_eq!(id.encoded_path(), "a/b%20c/ü%25");
        assert_eq!(id.iri(), "info:fedora/a/b%20c/ü%25");
        assert_eq!(FedoraId::root().iri(), "info:fedora");
        // Paths with nothing to escape are copied whole; each character IRIs refuse is
        // escaped, and the IRI reads back as the same id.
        let plain = FedoraId::from_path("a/b-c_d.e~f:g@h!$&'()*+,;=").unwrap();
        assert_eq!(plain.encoded_path(), plain.path());
        let odd = FedoraId::from_path("x\"<>\\^`{|}#?[]é").unwrap();
        assert_eq!(
            odd.encoded_path(),
            "x%22%3C%3E%5C%5E%60%7B%7C%7D%23%3F%5B%5Dé"
        );
        assert_eq!(FedoraId::from_iri(&odd.iri()).as_ref(), Some(&odd));
        let spaced = FedoraId::from_path("ü b/[c]").unwrap();
        assert_eq!(FedoraId::from_iri(&spaced.iri()), Some(spaced));
    }

    #[test]
    fn descendants() {
        let a = FedoraId::from_path("a").unwrap();
        assert!(FedoraId::from_path("a/b").unwrap().is_descendant_of(&a));
        assert!(!FedoraId::from_path("ab").unwrap().is_descendant_of(&a));
        assert!(a.is_descendant_of(&FedoraId::root()));
    }
}
