use std::io;
use std::path::PathBuf;

use arca_storage::StoreError;

/// Errors of the OCFL layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A filesystem operation failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The store holding the root failed (see [`StoreError`] for which failures are
    /// transient: [`StoreError::Unavailable`]).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A change reached its commit point (the object's inventory names the new version)
    /// but files after it were not all written or removed: the version stands, and
    /// [`OcflRoot::redo`](crate::OcflRoot::redo) completes it.
    #[error(
        "OCFL object {object}: the new version is committed, but finishing it failed: {source}"
    )]
    Unfinished {
        /// The object.
        object: String,
        /// What failed.
        #[source]
        source: Box<Error>,
    },
    /// An inventory or root file is not valid JSON of the expected shape.
    #[error("invalid JSON in {path}: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser error.
        #[source]
        source: serde_json::Error,
    },
    /// The object (or version directory) already exists where a new one was to be placed.
    #[error("OCFL object {0} already exists")]
    AlreadyExists(String),
    /// The storage root or an object breaks a rule arca relies on.
    #[error("invalid OCFL storage: {0}")]
    Invalid(String),
    /// A file's bytes do not match the digest its inventory (or an inventory's its
    /// sidecar) records, or a file the manifest names is missing; the message names it.
    #[error("digest mismatch: {0}")]
    Mismatch(String),
    /// A feature of the root or object that arca does not support (yet).
    #[error("unsupported OCFL feature: {0}")]
    Unsupported(String),
    /// New content came with a digest in another algorithm than the object's: the caller
    /// must hash it with the object's algorithm (see `OcflRoot::object_digest_algorithm`).
    #[error(
        "object {object} uses {expected} digests, but content for it came with a {found} digest"
    )]
    DigestAlgorithm {
        /// The object.
        object: String,
        /// The object's algorithm.
        expected: arca_model::DigestAlgorithm,
        /// The algorithm of the digest given.
        found: arca_model::DigestAlgorithm,
    },
}

impl Error {
    /// Whether the failure is the store's being unreachable or overloaded for now
    /// (`StoreError::Unavailable`): the same request may succeed later.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Error::Store(e) => e.is_unavailable(),
            Error::Unfinished { source, .. } => source.is_unavailable(),
            Error::Io { source, .. } => source
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<StoreError>())
                .is_some_and(StoreError::is_unavailable),
            _ => false,
        }
    }
}

/// Result type of the OCFL layer.
pub type Result<T> = std::result::Result<T, Error>;

/// Attaches a path to an I/O error.
pub(crate) trait IoContext<T> {
    fn at(self, path: &std::path::Path) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, path: &std::path::Path) -> Result<T> {
        self.map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}
