use std::fmt;

use base64::Engine;
use md5::Md5;
use sha1::Sha1;
use sha2::{Digest as _, Sha256, Sha512, Sha512_256};

/// A digest algorithm arca computes for binaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DigestAlgorithm {
    /// SHA-512, Fedora's default OCFL content digest.
    Sha512,
    /// SHA-256, the other content digest OCFL allows.
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

    /// The name OCFL gives the algorithm (`sha512`, `sha256`, `sha1`, `md5`,
    /// `sha512/256`): an inventory's `digestAlgorithm`, the extension of its sidecar, a key
    /// of its `fixity` block.
    pub fn ocfl_name(self) -> &'static str {
        match self {
            Self::Sha512 => "sha512",
            Self::Sha256 => "sha256",
            Self::Sha1 => "sha1",
            Self::Md5 => "md5",
            Self::Sha512_256 => "sha512/256",
        }
    }

    /// The algorithm an OCFL name denotes, spelled exactly as OCFL spells it.
    pub fn from_ocfl_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.ocfl_name() == name)
    }

    /// Whether OCFL allows the algorithm as an inventory's `digestAlgorithm` (sha512 or
    /// sha256; E025), i.e. for content addressing rather than fixity only.
    pub fn is_ocfl_content_digest(self) -> bool {
        matches!(self, Self::Sha512 | Self::Sha256)
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

/// Computes the digests of a stream in the algorithms it was asked for, in one pass.
pub struct MultiHasher {
    /// The algorithms, each once, in the order first asked for.
    order: Vec<DigestAlgorithm>,
    sha512: Option<Sha512>,
    sha256: Option<Sha256>,
    sha1: Option<Sha1>,
    md5: Option<Md5>,
    sha512_256: Option<Sha512_256>,
    len: u64,
}

impl MultiHasher {
    /// A hasher computing every algorithm in `algorithms` (none at all only counts bytes).
    pub fn new(algorithms: &[DigestAlgorithm]) -> Self {
        let mut order: Vec<DigestAlgorithm> = Vec::with_capacity(algorithms.len());
        for a in algorithms {
            if !order.contains(a) {
                order.push(*a);
            }
        }
        let wants = |a: DigestAlgorithm| order.contains(&a);
        Self {
            sha512: wants(DigestAlgorithm::Sha512).then(Sha512::new),
            sha256: wants(DigestAlgorithm::Sha256).then(Sha256::new),
            sha1: wants(DigestAlgorithm::Sha1).then(Sha1::new),
            md5: wants(DigestAlgorithm::Md5).then(Md5::new),
            sha512_256: wants(DigestAlgorithm::Sha512_256).then(Sha512_256::new),
            order,
            len: 0,
        }
    }

    /// Feeds bytes.
    pub fn update(&mut self, data: &[u8]) {
        self.len += data.len() as u64;
        if let Some(h) = &mut self.sha512 {
            h.update(data);
        }
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

    /// The digests, in the order the algorithms were first named in [`new`](Self::new).
    pub fn finish(mut self) -> Vec<DigestValue> {
        let order = std::mem::take(&mut self.order);
        order
            .into_iter()
            .map(|algorithm| {
                let bytes = match algorithm {
                    DigestAlgorithm::Sha512 => self.sha512.take().map(|h| h.finalize().to_vec()),
                    DigestAlgorithm::Sha256 => self.sha256.take().map(|h| h.finalize().to_vec()),
                    DigestAlgorithm::Sha1 => self.sha1.take().map(|h| h.finalize().to_vec()),
                    DigestAlgorithm::Md5 => self.md5.take().map(|h| h.finalize().to_vec()),
                    DigestAlgorithm::Sha512_256 => {
                        self.sha512_256.take().map(|h| h.finalize().to_vec())
                    }
                };
                DigestValue {
                    algorithm,
                    hex: hex::encode(bytes.expect("a hasher for every algorithm asked for")),
                }
            })
            .collect()
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
        let asked = [
            DigestAlgorithm::Sha256,
            DigestAlgorithm::Md5,
            DigestAlgorithm::Sha256,
        ];
        let mut h = MultiHasher::new(&asked);
        h.update(b"hello ");
        h.update(b"world");
        let d = h.finish();
        let algorithms: Vec<DigestAlgorithm> = d.iter().map(|v| v.algorithm).collect();
        assert_eq!(algorithms, [DigestAlgorithm::Sha256, DigestAlgorithm::Md5]);
        for v in d {
            assert_eq!(v.hex, MultiHasher::digest(v.algorithm, b"hello world"));
        }
        let mut counting = MultiHasher::new(&[]);
        counting.update(b"abc");
        assert_eq!(counting.len(), 3);
        assert!(counting.finish().is_empty());
    }

    #[test]
    fn ocfl_names() {
        for a in DigestAlgorithm::ALL {
            assert_eq!(DigestAlgorithm::from_ocfl_name(a.ocfl_name()), Some(a));
        }
        assert_eq!(DigestAlgorithm::from_ocfl_name("SHA512"), None);
        assert_eq!(DigestAlgorithm::from_ocfl_name("sha-512"), None);
        let content: Vec<_> = DigestAlgorithm::ALL
            .into_iter()
            .filter(|a| a.is_ocfl_content_digest())
            .collect();
        assert_eq!(content, [DigestAlgorithm::Sha512, DigestAlgorithm::Sha256]);
    }

    #[test]
    fn urns_round_trip() {
        let v = DigestAlgorithm::parse_urn("urn:sha1:ABCDEF").unwrap();
        assert_eq!(v.algorithm, DigestAlgorithm::Sha1);
        assert_eq!(v.urn(), "urn:sha1:abcdef");
    }
}
