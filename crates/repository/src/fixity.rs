//! Fixity: a binary's digests recomputed from the bytes in storage and compared with the
//! digests recorded when it was written.

use std::io::Read;
use std::path::Path;

use arca_catalog::ResourceRecord;
use arca_model::{DigestAlgorithm, DigestValue, MultiHasher};

use crate::{Error, Repository, Result};

/// One recorded digest and what the stored bytes give now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixityCheck {
    /// The digest recorded when the binary was written.
    pub expected: DigestValue,
    /// The digest of the bytes in storage now.
    pub computed: DigestValue,
}

impl FixityCheck {
    /// Whether the stored bytes still have the recorded digest.
    pub fn ok(&self) -> bool {
        self.expected.hex == self.computed.hex
    }
}

/// The outcome of a fixity check of one binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixityReport {
    /// The size recorded when the binary was written.
    pub expected_size: Option<u64>,
    /// Bytes read from storage; `None` when the content could not be read.
    pub size: Option<u64>,
    /// One check per recorded digest.
    pub checks: Vec<FixityCheck>,
    /// Why the content could not be read, if it could not.
    pub unreadable: Option<String>,
    /// The binary is external content kept as a URL (redirect or proxy): as in Fedora 6,
    /// nothing is recorded to check, and the report gives the recorded size only.
    pub external: bool,
}

impl FixityReport {
    /// Whether the content is present, of the recorded size, with every recorded digest.
    pub fn ok(&self) -> bool {
        if self.external {
            return true;
        }
        self.unreadable.is_none()
            && self.expected_size.is_none_or(|e| Some(e) == self.size)
            && !self.checks.is_empty()
            && self.checks.iter().all(FixityCheck::ok)
    }
}

/// Reads the file at `path` once and returns its length and its digests in `algorithms`,
/// in that order.
pub fn digest_file(
    path: &Path,
    algorithms: &[DigestAlgorithm],
) -> std::io::Result<(u64, Vec<DigestValue>)> {
    digest_reader(&mut std::fs::File::open(path)?, algorithms)
}

/// Reads `reader` to its end and returns the length read and its digests in `algorithms`,
/// in that order.
pub fn digest_reader(
    reader: &mut dyn Read,
    algorithms: &[DigestAlgorithm],
) -> std::io::Result<(u64, Vec<DigestValue>)> {
    let mut hasher = MultiHasher::new(algorithms);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let len = hasher.len();
    Ok((len, hasher.finish()))
}

impl Repository {
    /// Recomputes the digests of binary `record` from its stored bytes (on the blocking
    /// pool) and compares them with the recorded ones. Content that is missing or cannot be
    /// read is a failed check, not an error.
    ///
    /// # Errors
    /// [`Error::BadRequest`] if `record` is not a binary.
    pub async fn check_fixity(&self, record: &ResourceRecord) -> Result<FixityReport> {
        if !record.headers.model().is_some_and(|m| m.is_binary()) {
            return Err(Error::BadRequest(format!(
                "{} is not a binary; fixity applies to binaries",
                record.id
            )));
        }
        let expected = record.headers.digest_values();
        let expected_size = record
            .headers
            .content_size
            .and_then(|s| u64::try_from(s).ok());
        if record.headers.external_handling.is_some() {
            return Ok(FixityReport {
                expected_size,
                size: expected_size,
                checks: Vec::new(),
                unreadable: None,
                external: true,
            });
        }
        let Some(content) = self.content(record).await? else {
            return Ok(FixityReport {
                expected_size,
                size: None,
                checks: Vec::new(),
                unreadable: Some("the binary has no content file".into()),
                external: false,
            });
        };
        let algorithms: Vec<DigestAlgorithm> = expected.iter().map(|d| d.algorithm).collect();
        let read = tokio::task::spawn_blocking(move || {
            digest_reader(&mut content.open(0..u64::MAX)?, &algorithms)
        })
        .await
        .map_err(|e| Error::Internal(format!("the fixity check did not finish: {e}")))?;
        Ok(match read {
            Ok((size, computed)) => FixityReport {
                expected_size,
                size: Some(size),
                checks: expected
                    .into_iter()
                    .filter_map(|e| {
                        let c = computed
                            .iter()
                            .find(|c| c.algorithm == e.algorithm)?
                            .clone();
                        Some(FixityCheck {
                            expected: e,
                            computed: c,
                        })
                    })
                    .collect(),
                unreadable: None,
                external: false,
            },
            Err(e) => FixityReport {
                expected_size,
                size: None,
                checks: Vec::new(),
                unreadable: Some(format!("the content cannot be read: {e}")),
                external: false,
            },
        })
    }
}
