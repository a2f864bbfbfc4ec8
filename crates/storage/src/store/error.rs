use std::io;

/// Why a store operation failed. The variants callers branch on: [`NotFound`],
/// [`PreconditionFailed`] and [`Unavailable`] (transient: the HTTP layer answers 503 with
/// `Retry-After`).
///
/// [`NotFound`]: StoreError::NotFound
/// [`PreconditionFailed`]: StoreError::PreconditionFailed
/// [`Unavailable`]: StoreError::Unavailable
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A key (or prefix) that the store does not accept: see the rules in the
    /// [module documentation](super).
    #[error("invalid storage key {key:?}: {reason}")]
    InvalidKey {
        /// The key as given.
        key: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// There is no file at the key (where the method says this matters).
    #[error("{key}: no such file in the store")]
    NotFound {
        /// The key.
        key: String,
    },
    /// A conditional write's precondition did not hold; nothing was written.
    #[error("{key}: precondition failed (the file is not in the state the write expected)")]
    PreconditionFailed {
        /// The key.
        key: String,
    },
    /// The store cannot be reached or answered with a transient error (connection refused
    /// or reset, timeout, 5xx after retries). Worth trying again later.
    #[error("storage unavailable during {operation} of {key:?}: {cause}")]
    Unavailable {
        /// The operation (`get`, `put`, `list`, …).
        operation: &'static str,
        /// The key or prefix.
        key: String,
        /// What the service or the connection said.
        #[source]
        cause: ServiceError,
    },
    /// The S3 service does not accept the credentials (unknown access key, wrong secret,
    /// expired token).
    #[error("the S3 service refused the credentials: {cause}")]
    Credentials {
        /// What the service said.
        #[source]
        cause: ServiceError,
    },
    /// The credentials are valid but not allowed to do this.
    #[error("access denied during {operation} of {key:?}: {cause}")]
    AccessDenied {
        /// The operation.
        operation: &'static str,
        /// The key or prefix.
        key: String,
        /// What the service said.
        #[source]
        cause: ServiceError,
    },
    /// The S3 bucket does not exist.
    #[error("the S3 bucket {bucket:?} does not exist: {cause}")]
    BucketNotFound {
        /// The bucket's name.
        bucket: String,
        /// What the service said.
        #[source]
        cause: ServiceError,
    },
    /// The store's settings cannot work (a missing credential variable, a malformed
    /// endpoint, a root that is not a directory).
    #[error("storage configuration: {setting}: {problem}")]
    Config {
        /// The setting or variable at fault.
        setting: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// A local filesystem operation failed.
    #[error("I/O error on {key:?}: {source}")]
    Io {
        /// The key (or local path) involved.
        key: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// Any other failure reported by the S3 service (a request it rejects, an answer that
    /// cannot be understood).
    #[error("storage service error during {operation} of {key:?}: {cause}")]
    Service {
        /// The operation.
        operation: &'static str,
        /// The key or prefix.
        key: String,
        /// What the service said.
        #[source]
        cause: ServiceError,
    },
}

impl StoreError {
    /// Whether this is a [`StoreError::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// Whether this is a [`StoreError::PreconditionFailed`].
    pub fn is_precondition_failed(&self) -> bool {
        matches!(self, Self::PreconditionFailed { .. })
    }

    /// Whether this is a [`StoreError::Unavailable`] (transient).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }

    pub(crate) fn io(key: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            key: key.into(),
            source,
        }
    }
}

/// Result type of the store seam.
pub type StoreResult<T> = Result<T, StoreError>;

/// The underlying failure of a storage service, as its client library reported it: kept
/// for its message and its source chain.
#[derive(Debug)]
pub struct ServiceError(ServiceErrorKind);

#[derive(Debug)]
enum ServiceErrorKind {
    #[cfg(feature = "s3")]
    ObjectStore(object_store::Error),
}

#[cfg(feature = "s3")]
impl From<object_store::Error> for ServiceError {
    fn from(error: object_store::Error) -> Self {
        Self(ServiceErrorKind::ObjectStore(error))
    }
}

impl std::fmt::Display for ServiceError {
    #[cfg_attr(not(feature = "s3"), allow(unused_variables))]
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            #[cfg(feature = "s3")]
            ServiceErrorKind::ObjectStore(ref e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ServiceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self.0 {
            #[cfg(feature = "s3")]
            ServiceErrorKind::ObjectStore(ref e) => e.source(),
        }
    }
}
