use std::fmt;

use base64::Engine;
use md5::Md5;
use sha1::Sha1;
use sha2::{Digest as _, Sha256, Sha512, Sha512_256};

/// A digest algorithm arca computes for binaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DigestAlgorithm {
    /// SHA-512, the OCFL content digest.
    Sha512,
    /// SHA-256.
    Sha256,
    /// SHA-1 (`sha` in RFC 3230).
    Sha1,
    /// MD5.
    Md5,
    /// SHA-512/256 (SHA-512 truncated to 256 bits, FIPS 180-4), which Fedora 6 offers too.
    Sha512_256,
}

impl DigestAlgorithm {
    /// Every supported algorithm.
    pub const ALL: [DigestAlgorithm; 5] = [
        Self::Sha512,
        Self::Sha256,
        Self::Sha1,
        Self::Md5,
        Self::Sha512_256,
    ];

    /// Parses an RFC 3230 / Fedora algorithm token (`sha-512`, `sha-256`, `sha`, `sha1`,
    /// `sha-1`, `md5`, `sha-512/256`), case-insensitively.
    pub fn from_token(token: &str) -> Option<Self> {
        match token.trim().to_ascii_lowercase().as_str() {
            "sha-512" | "sha512" => Some(Self::Sha512),
            "sha-256" | "sha256" => Some(Self::Sha256),
            "sha" | "sha1" | "sha-1" => Some(Self::Sha1),
            "md5" => Some(Self::Md5),
            "sha-512/256" | "sha512/256" => Some(Self::Sha512_256),
            _ => None,
        }
    }

    /// The token used in `Digest` response headers, as Fedora writes them.
    pub fn http_token(self) -> &'static str {
        match self {
            Self::Sha512 => "sha-512",
            Self::Sha256 => "sha-256",
            Self::Sha1 => "sha",
            Self::Md5 => "md5",
            Self::Sha512_256 => "sha-512/256",
        }
    }

    /// The URN prefix used in Fedora's `digests` header field, e.g. `urn:sha-512:`.
    pub fn urn_prefix(self) -> &'static str {
        match self {
            Self::Sha512 => "urn:sha-512:",
            Self::Sha256 => "urn:sha-256:",
            Self::Sha1 => "urn:sha1:",
            Self::Md5 => "urn:md5:",
            Self::Sha512_256 => "urn:sha-512/256:",
        }
    }

    /// Length of the digest in bytes.
    pub fn byte_len(self) -> usize {
        match self {
            Self::Sha512 => 64,
            Self::Sha256 | Self::Sha512_256 => 32,
            Self::Sha1 => 20,
            Self::Md5 => 16,
        }
    }

    /// Parses a `urn:<alg>:<hex>` digest from a Fedora header.
    pub fn parse_urn(urn: &str) -> Option<DigestValue> {
        let rest = urn.strip_prefix("urn:")?;
        let (alg, hex) = rest.rsplit_once(':')?;
        Some(DigestValue {
            algorithm: Self::from_token(alg)?,
            hex: hex.to_ascii_lowercase(),
        })
    }
}

impl fmt::Display for DigestAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.http_token())
    }
}

/// A digest value: algorithm plus lowercase hex.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DigestValue {
    /// The algorithm.
    pub algorithm: DigestAlgorithm,
    /// Lowercase hex.
    pub hex: String,
}

impl DigestValue {
    /// Parses a value a client sent in a `Digest` header: hex (as Fedora clients send it)
    /// or RFC 3230 base64. Returns `None` if it is neither of the algorithm's length.
    pub fn from_client(algorithm: DigestAlgorithm, value: &str) -> Option<Self> {
        let value = value.trim();
        let n = algorithm.byte_len();
        if value.len() == n * 2 && value.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Some(Self {
                algorithm,
                hex: value.to_ascii_lowercase(),
            });
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(value)
            .ok()?;
        (bytes.len() == n).then(|| Self {
            algorithm,
            hex: hex::encode(bytes),
        })
    }

    /// The `urn:<alg>:<hex>` form stored in headers.
    pub fn urn(&self) -> String {
        format!("{}{}", self.algorithm.urn_prefix(), self.hex)
    }
}

/// Computes SHA-512 and any other requested digests over a stream in one pass.
pub struct MultiHasher {
    sha512: Sha512,
    sha256: Option<Sha256>,
    sha1: Option<Sha1>,
    md5: Option<Md5>,
    sha512_256: Option<Sha512_256>,
    len: u64,
}

impl MultiHasher {
    /// A hasher computing SHA-512 plus every algorithm in `extra`.
    pub fn new(extra: &[DigestAlgorithm]) -> Self {
        Self {
            sha512: Sha512::new(),
            sha256: extra.contains(&DigestAlgorithm::Sha256).then(Sha256::new),
            sha1: extra.contains(&DigestAlgorithm::Sha1).then(Sha1::new),
            md5: extra.contains(&DigestAlgorithm::Md5).then(Md5::new),
            sha512_256: extra
                .contains(&DigestAlgorithm::Sha512_256)
                .then(Sha512_256::new),
            len: 0,
        }
    }

    /// Feeds bytes.
    pub fn update(&mut self, data: &[u8]) {
        self.len += data.len() as u64;
        self.sha512.update(data);
        if let Some(h) = &mut self.sha256 {
            h.update(data);
        }
        if let Some(h) = &mut self.sha1 {
            h.update(data);
        }
        if let Some(h) = &mut self.md5 {
            h.update(data);
        }
        if let Some(h) = &mut self.sha512_256 {
            h.update(data);
        }
    }

    /// Number of bytes fed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was fed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The digests, SHA-512 first.
    pub fn finish(self) -> Vec<DigestValue> {
        let mut out = vec![DigestValue {
            algorithm: DigestAlgorithm::Sha512,
            hex: hex::encode(self.sha512.finalize()),
        }];
        if let Some(h) = self.sha256 {
            out.push(DigestValue {
                algorithm: DigestAlgorithm::Sha256,
                hex: hex::encode(h.finalize()),
            });
        }
        if let Some(h) = self.sha1 {
            out.push(DigestValue {
                algorithm: DigestAlgorithm::Sha1,
                hex: hex::encode(h.finalize()),
            });
        }
        if let Some(h) = self.md5 {
            out.push(DigestValue {
                algorithm: DigestAlgorithm::Md5,
                hex: hex::encode(h.finalize()),
            });
        }
        if let Some(h) = self.sha512_256 {
            out.push(DigestValue {
                algorithm: DigestAlgorithm::Sha512_256,
                hex: hex::encode(h.finalize()),
            });
        }
        out
    }

    /// One-shot digest of a byte slice with one algorithm.
    pub fn digest(algorithm: DigestAlgorithm, data: &[u8]) -> String {
        match algorithm {
            DigestAlgorithm::Sha512 => hex::encode(Sha512::digest(data)),
            DigestAlgorithm::Sha256 => hex::encode(Sha256::digest(data)),
            DigestAlgorithm::Sha1 => hex::encode(Sha1::digest(data)),
            DigestAlgorithm::Md5 => hex::encode(Md5::digest(data)),
            DigestAlgorithm::Sha512_256 => hex::encode(Sha512_256::digest(data)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hex_and_base64() {
        let hex = MultiHasher::digest(DigestAlgorithm::Sha1, b"abc");
        let v = DigestValue::from_client(DigestAlgorithm::Sha1, &hex.to_uppercase()).unwrap();
        assert_eq!(v.hex, hex);
        let b64 = base64::engine::general_purpose::STANDARD.encode(hex::decode(&hex).unwrap());
        assert_eq!(
            DigestValue::from_client(DigestAlgorithm::Sha1, &b64)
                .unwrap()
                .hex,
            hex
        );
        assert!(DigestValue::from_client(DigestAlgorithm::Sha1, "abc").is_none());
    }

    #[test]
    fn multi_hasher_matches_one_shot() {
        let mut h = MultiHasher::new(&[DigestAlgorithm::Md5, DigestAlgorithm::Sha256]);
        h.update(b"hello ");
        h.update(b"world");
        let d = h.finish();
        assert_eq!(d.len(), 3);
        for v in d {
            assert_eq!(v.hex, MultiHasher::digest(v.algorithm, b"hello world"));
        }
    }

    #[test]
    fn urns_round_trip() {
        let v = DigestAlgorithm::parse_urn("urn:sha1:ABCDEF").unwrap();
        assert_eq!(v.algorithm, DigestAlgorithm::Sha1);
        assert_eq!(v.urn(), "urn:sha1:abcdef");
    }
}
