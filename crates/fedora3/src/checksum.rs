//! Fedora 3's datastream checksums, verified against the bytes an import carries.

use md5::Md5;
use serde::Serialize;
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha384, Sha512};

use crate::mapping::MapError;
use crate::model::ContentDigest;

/// What Fedora 3 recorded for a datastream version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checksum {
    /// No `contentDigest`.
    NotRecorded,
    /// `TYPE="DISABLED"`.
    Disabled,
    /// An algorithm arca computes, with the recorded hex value.
    Known(Algorithm, String),
    /// An algorithm arca does not know, kept as recorded.
    Unsupported(String, String),
}

/// The algorithms Fedora 3 offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// MD5.
    Md5,
    /// SHA-1.
    Sha1,
    /// SHA-256.
    Sha256,
    /// SHA-384 (which Fedora 6 does not know: kept and verified here).
    Sha384,
    /// SHA-512.
    Sha512,
}

impl Algorithm {
    fn parse(kind: &str) -> Option<Self> {
        Some(match kind.to_ascii_uppercase().as_str() {
            "MD5" => Self::Md5,
            "SHA-1" | "SHA1" => Self::Sha1,
            "SHA-256" | "SHA256" => Self::Sha256,
            "SHA-384" | "SHA384" => Self::Sha384,
            "SHA-512" | "SHA512" => Self::Sha512,
            _ => return None,
        })
    }

    /// Fedora 6's digest URN prefix, for the algorithms Fedora 6 knows.
    fn fedora6_urn_prefix(self) -> Option<&'static str> {
        match self {
            Self::Md5 => Some("urn:md5:"),
            Self::Sha1 => Some("urn:sha1:"),
            Self::Sha256 => Some("urn:sha-256:"),
            Self::Sha512 => Some("urn:sha-512:"),
            Self::Sha384 => None,
        }
    }
}

impl Checksum {
    /// Reads a `contentDigest` (absent, empty or `none` digests count as not recorded).
    pub fn for_digest(digest: Option<&ContentDigest>) -> Self {
        let Some(d) = digest else {
            return Self::NotRecorded;
        };
        if d.kind.eq_ignore_ascii_case("DISABLED") {
            return Self::Disabled;
        }
        let value = d.value.trim();
        if value.is_empty() || value.eq_ignore_ascii_case("none") {
            return Self::NotRecorded;
        }
        match Algorithm::parse(&d.kind) {
            Some(a) => Self::Known(a, value.to_ascii_lowercase()),
            None => Self::Unsupported(d.kind.clone(), value.to_string()),
        }
    }

    /// A hasher computing this checksum's algorithm over the content.
    pub fn hasher(self) -> F3Hasher {
        let state = match &self {
            Self::Known(a, _) => Some(match a {
                Algorithm::Md5 => State::Md5(Md5::new()),
                Algorithm::Sha1 => State::Sha1(Sha1::new()),
                Algorithm::Sha256 => State::Sha256(Sha256::new()),
                Algorithm::Sha384 => State::Sha384(Sha384::new()),
                Algorithm::Sha512 => State::Sha512(Sha512::new()),
            }),
            _ => None,
        };
        F3Hasher {
            checksum: self,
            state,
        }
    }
}

enum State {
    Md5(Md5),
    Sha1(Sha1),
    Sha256(Sha256),
    Sha384(Sha384),
    Sha512(Sha512),
}

/// Computes a recorded checksum's algorithm over content fed in pieces.
pub struct F3Hasher {
    checksum: Checksum,
    state: Option<State>,
}

impl F3Hasher {
    /// Feeds bytes.
    pub fn update(&mut self, data: &[u8]) {
        match &mut self.state {
            Some(State::Md5(h)) => h.update(data),
            Some(State::Sha1(h)) => h.update(data),
            Some(State::Sha256(h)) => h.update(data),
            Some(State::Sha384(h)) => h.update(data),
            Some(State::Sha512(h)) => h.update(data),
            None => {}
        }
    }

    /// The comparison of the recorded checksum with the content's, for version
    /// `version`. For inline XML (`inline`), which Fedora 3 re-serialises, a difference is
    /// reported but is no failure.
    pub fn check(self, version: &str, inline: bool) -> ChecksumCheck {
        let actual = self.state.map(|s| match s {
            State::Md5(h) => hex::encode(h.finalize()),
            State::Sha1(h) => hex::encode(h.finalize()),
            State::Sha256(h) => hex::encode(h.finalize()),
            State::Sha384(h) => hex::encode(h.finalize()),
            State::Sha512(h) => hex::encode(h.finalize()),
        });
        let (kind, expected, status) = match &self.checksum {
            Checksum::NotRecorded => (None, None, CheckStatus::NotRecorded),
            Checksum::Disabled => (Some("DISABLED".to_string()), None, CheckStatus::Disabled),
            Checksum::Unsupported(k, v) => {
                (Some(k.clone()), Some(v.clone()), CheckStatus::Unsupported)
            }
            Checksum::Known(a, v) => {
                let status = if actual.as_deref() == Some(v.as_str()) {
                    CheckStatus::Match
                } else if inline {
                    CheckStatus::InlineXmlReserialized
                } else {
                    CheckStatus::Mismatch
                };
                (
                    Some(algorithm_name(*a).to_string()),
                    Some(v.clone()),
                    status,
                )
            }
        };
        let fedora6_urn = match (&self.checksum, status) {
            (Checksum::Known(a, v), CheckStatus::Match) => {
                a.fedora6_urn_prefix().map(|p| format!("{p}{v}"))
            }
            _ => None,
        };
        ChecksumCheck {
            version: version.to_string(),
            fedora3_type: kind,
            fedora3_digest: expected,
            imported_digest: actual,
            status,
            fedora6_urn,
        }
    }
}

fn algorithm_name(a: Algorithm) -> &'static str {
    match a {
        Algorithm::Md5 => "MD5",
        Algorithm::Sha1 => "SHA-1",
        Algorithm::Sha256 => "SHA-256",
        Algorithm::Sha384 => "SHA-384",
        Algorithm::Sha512 => "SHA-512",
    }
}

/// How a recorded checksum compared with the imported bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckStatus {
    /// Equal.
    Match,
    /// Different: the object is not imported.
    Mismatch,
    /// Fedora 3 recorded none.
    NotRecorded,
    /// Fedora 3's checksums were disabled for it.
    Disabled,
    /// An algorithm arca does not compute; kept as recorded.
    Unsupported,
    /// Inline XML whose recorded checksum is of Fedora 3's own serialisation.
    InlineXmlReserialized,
    /// E or R content, never fetched.
    External,
}

/// One version's checksum comparison, for the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChecksumCheck {
    /// The datastream version id.
    pub version: String,
    /// Fedora 3's `TYPE`.
    pub fedora3_type: Option<String>,
    /// Fedora 3's `DIGEST`.
    pub fedora3_digest: Option<String>,
    /// The same algorithm over the imported bytes.
    pub imported_digest: Option<String>,
    /// The comparison.
    pub status: CheckStatus,
    #[serde(skip)]
    fedora6_urn: Option<String>,
}

impl ChecksumCheck {
    /// The check of an E or R version, whose content is not fetched.
    pub fn external(version: &str, digest: Option<&ContentDigest>) -> Self {
        Self {
            version: version.to_string(),
            fedora3_type: digest.map(|d| d.kind.clone()),
            fedora3_digest: digest.map(|d| d.value.clone()),
            imported_digest: None,
            status: CheckStatus::External,
            fedora6_urn: None,
        }
    }

    /// `Err` for a mismatch, naming `datastream`.
    pub fn verify(&self, datastream: &str) -> Result<(), MapError> {
        if self.status != CheckStatus::Mismatch {
            return Ok(());
        }
        Err(MapError::ChecksumMismatch {
            datastream: datastream.to_string(),
            algorithm: self.fedora3_type.clone().unwrap_or_default(),
            expected: self.fedora3_digest.clone().unwrap_or_default(),
            actual: self.imported_digest.clone().unwrap_or_default(),
        })
    }

    /// The verified checksum as a Fedora 6 digest URN, when Fedora 6 knows the algorithm.
    pub fn fedora6_urn(&self) -> Option<String> {
        self.fedora6_urn.clone()
    }
}
