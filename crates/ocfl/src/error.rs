use std::io;
use std::path::PathBuf;

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
