use std::fs;
use std::path::{Path, PathBuf};

use arca_model::{DigestAlgorithm, DigestValue, MultiHasher};
use bytes::Bytes;

use crate::{Error, Result};

/// Bytes of a binary as received from a client, already hashed.
#[derive(Debug)]
pub enum BinaryData {
    /// A small body kept in memory.
    Memory(Bytes),
    /// A large body streamed into the uploads directory.
    File(Upload),
    /// No bytes: the binary is kept as a URL (external content, `redirect` or `proxy`);
    /// `size` is the remote size and `digests` is empty.
    External(crate::ExternalLocation),
}

/// A received binary: its bytes plus every digest computed while receiving it.
#[derive(Debug)]
pub struct ReceivedBinary {
    /// The bytes.
    pub data: BinaryData,
    /// Size in bytes.
    pub size: u64,
    /// The digest of the OCFL object it lands in first (sha512 or sha256), then those of
    /// the algorithms the client asked to verify.
    pub digests: Vec<DigestValue>,
}

impl ReceivedBinary {
    /// Hashes an in-memory body with each of `algorithms`.
    pub fn from_memory(bytes: Bytes, algorithms: &[DigestAlgorithm]) -> Self {
        let mut h = MultiHasher::new(algorithms);
        h.update(&bytes);
        Self {
            size: bytes.len() as u64,
            digests: h.finish(),
            data: BinaryData::Memory(bytes),
        }
    }

    /// The digest computed with `algorithm`, if it was.
    pub fn digest(&self, algorithm: DigestAlgorithm) -> Option<&DigestValue> {
        self.digests.iter().find(|d| d.algorithm == algorithm)
    }

    /// The binary with its digest in `algorithm` (its OCFL object's) first among its
    /// digests, computed now if it was received with other algorithms only (reading an
    /// upload file again, on the blocking pool). A binary kept as a URL has no digests and
    /// comes back as it is.
    pub async fn with_digest(mut self, algorithm: DigestAlgorithm) -> Result<Self> {
        if let Some(i) = self.digests.iter().position(|d| d.algorithm == algorithm) {
            let digest = self.digests.remove(i);
            self.digests.insert(0, digest);
            return Ok(self);
        }
        let digest = match &self.data {
            BinaryData::External(_) => return Ok(self),
            BinaryData::Memory(bytes) => DigestValue {
                algorithm,
                hex: MultiHasher::digest(algorithm, bytes),
            },
            BinaryData::File(upload) => {
                tracing::debug!(
                    path = %upload.path().display(),
                    %algorithm,
                    "an upload was hashed for another object's algorithm; hashing it again"
                );
                let path = upload.path().to_path_buf();
                let (_, mut digests) = tokio::task::spawn_blocking(move || {
                    crate::fixity::digest_file(&path, &[algorithm])
                })
                .await
                .map_err(|e| Error::Internal(format!("hashing an upload did not finish: {e}")))??;
                digests.remove(0)
            }
        };
        self.digests.insert(0, digest);
        Ok(self)
    }

    /// A binary kept as a URL (`redirect` or `proxy`) whose remote content has `size` bytes.
    pub fn external(location: crate::ExternalLocation, size: u64) -> Self {
        Self {
            data: BinaryData::External(location),
            size,
            digests: Vec::new(),
        }
    }

    /// Checks the client's expected digests; a mismatch is an error and nothing is kept.
    pub fn verify(&self, expected: &[DigestValue]) -> Result<()> {
        for want in expected {
            let got = self
                .digests
                .iter()
                .find(|d| d.algorithm == want.algorithm)
                .ok_or_else(|| {
                    Error::BadRequest(format!(
                        "a {} digest cannot be checked for content kept as a URL",
                        want.algorithm
                    ))
                })?;
            if !got.hex.eq_ignore_ascii_case(&want.hex) {
                return Err(Error::DigestMismatch {
                    algorithm: want.algorithm,
                    expected: want.hex.clone(),
                    actual: got.hex.clone(),
                });
            }
        }
        Ok(())
    }
}

/// A file in the uploads directory, deleted when dropped unless it was moved into a
/// version (so a failed or abandoned request never leaves bytes behind).
#[derive(Debug)]
pub struct Upload {
    path: Option<PathBuf>,
}

impl Upload {
    /// A new, unique upload path in `dir` (the file is created by the caller).
    pub fn new_in(dir: &Path) -> Self {
        Self {
            path: Some(dir.join(uuid::Uuid::new_v4().simple().to_string())),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        self.path.as_deref().expect("upload still owned")
    }

    /// Hands the file over to the OCFL writer, which moves it.
    pub(crate) fn take(mut self) -> PathBuf {
        self.path.take().expect("upload still owned")
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if let Some(p) = self.path.take() {
            let _ = fs::remove_file(p);
        }
    }
}
