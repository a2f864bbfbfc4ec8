use arca_model::{DigestAlgorithm, FedoraId, IdError};
use oxrdf::Triple;

/// Which server constraint a refused request ran into; the HTTP layer links each to its
/// constraint document (`Link: <…>; rel="http://www.w3.org/ns/ldp#constrainedBy"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Constraint {
    /// A body tried to set server-managed triples.
    ServerManagedTriples,
    /// A request tried to change a resource's interaction model, or asked for one arca
    /// does not offer.
    InteractionModel,
    /// A path names something that cannot be created there (reserved name, child of a
    /// binary, Archival Group part).
    InvalidPath,
    /// A binary's `Digest` did not match the received bytes.
    DigestMismatch,
    /// Membership settings of a direct or indirect container that LDP forbids.
    Membership,
    /// The request needs a feature arca does not have yet.
    Unsupported,
    /// An Archival Group inside another, an Archival Group part versioned on its own, or a
    /// resource moved across an Archival Group's boundary.
    ArchivalGroup,
    /// External content (a `rel="…#ExternalContent"` link) that cannot be used: no
    /// allow-list, a URL outside it, an unreachable or failing location, a malformed link
    /// (400, as Fedora 6 answers).
    ExternalContent,
    /// An access control list that is not a valid WebAC ACL (no mode, unknown mode, no
    /// target, a remote ACL or group listing), or a client-named ACL (`rel="acl"`).
    Acl,
    /// A memento the client would date itself (`Memento-Datetime` on `POST fcr:versions`):
    /// mementos record the current state at the time of the request (400, as Fedora 6
    /// answers).
    Memento,
}

impl Constraint {
    /// Short name used in constraint document URLs.
    pub fn name(self) -> &'static str {
        match self {
            Self::ServerManagedTriples => "server-managed-triples",
            Self::InteractionModel => "interaction-model",
            Self::InvalidPath => "invalid-path",
            Self::DigestMismatch => "digest-mismatch",
            Self::Membership => "membership",
            Self::Unsupported => "unsupported",
            Self::ArchivalGroup => "archival-group",
            Self::ExternalContent => "external-content",
            Self::Acl => "acl",
            Self::Memento => "memento",
        }
    }

    /// Every constraint, for the constraint documents.
    pub const ALL: [Constraint; 10] = [
        Self::ServerManagedTriples,
        Self::InteractionModel,
        Self::InvalidPath,
        Self::DigestMismatch,
        Self::Membership,
        Self::Unsupported,
        Self::ArchivalGroup,
        Self::ExternalContent,
        Self::Acl,
        Self::Memento,
    ];
}

/// Errors of the kernel. The HTTP layer maps each variant to a status in one place.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No such resource.
    #[error("{0} not found")]
    NotFound(FedoraId),
    /// The user's access does not allow this change (403), e.g. an update that removes
    /// statements where the user may only append.
    #[error("{0}")]
    NotPermitted(String),
    /// The resource was deleted; its tombstone is there.
    #[error("{0} has been deleted")]
    Gone(FedoraId),
    /// A request broke a server constraint (409 with constrainedBy).
    #[error("{message}")]
    Constraint {
        /// Which constraint.
        constraint: Constraint,
        /// Human-readable explanation.
        message: String,
    },
    /// The body sets server-managed triples (409 listing them).
    #[error("the body sets server-managed triples")]
    ServerManaged(Vec<Triple>),
    /// The resource has no memento at this datetime (seconds since the epoch).
    #[error("{0} has no version with a created date matching {1}")]
    NoMemento(FedoraId, i64),
    /// No transaction has this id.
    #[error("no transaction found with id {0}")]
    TransactionNotFound(String),
    /// The transaction was committed, rolled back or expired.
    #[error("{0}")]
    TransactionEnded(String),
    /// The write conflicts with an open transaction, or a commit with storage.
    #[error("{0}")]
    TransactionConflict(String),
    /// The resource exists already where a new one was to be created.
    #[error("{0} already exists")]
    AlreadyExists(FedoraId),
    /// A conditional request's precondition did not hold.
    #[error("precondition failed: {0}")]
    PreconditionFailed(String),
    /// A write asked for another interaction model than the resource's (decided by
    /// [`check_model_change`](crate::check_model_change)).
    #[error("the interaction model of {id} is <{current}> and cannot be changed to <{asked}>")]
    ModelChange {
        /// The resource.
        id: FedoraId,
        /// Its interaction model.
        current: arca_model::InteractionModel,
        /// The one the request asked for.
        asked: arca_model::InteractionModel,
    },
    /// The request is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// The body has statements about another repository resource (the internal IRI); they
    /// can only be changed through that resource (403).
    #[error(
        "the body has statements about {0}, another resource; change them through that resource"
    )]
    OtherResourceSubject(String),
    /// The body has statements about something outside the repository (400).
    #[error("the body has statements about {0}, which is outside the repository")]
    OutsideSubject(String),
    /// The path is not a valid resource path.
    #[error(transparent)]
    InvalidId(#[from] IdError),
    /// An RDF body or SPARQL update is malformed or unsupported.
    #[error(transparent)]
    Rdf(#[from] arca_rdf::RdfError),
    /// A digest algorithm the client named is not supported.
    #[error("unsupported digest algorithm {0:?}")]
    UnsupportedDigest(String),
    /// A digest the client sent does not match the received bytes.
    #[error("{algorithm} digest mismatch: expected {expected}, computed {actual}")]
    DigestMismatch {
        /// The algorithm.
        algorithm: DigestAlgorithm,
        /// What the client sent (hex).
        expected: String,
        /// What arca computed (hex).
        actual: String,
    },
    /// The client went away or the body could not be read.
    #[error("reading the request body failed: {0}")]
    Body(String),
    /// The storage layer failed.
    #[error(transparent)]
    Storage(#[from] arca_ocfl::Error),
    /// The catalog failed.
    #[error(transparent)]
    Catalog(#[from] arca_catalog::Error),
    /// A file operation failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The data's file system is full (or down to arca's reserve); nothing was stored (507).
    #[error("the repository's storage is full; nothing was stored: {0}")]
    StorageFull(String),
    /// Writing into storage is failing for now; nothing was stored by this request (503).
    #[error("{0}")]
    Unavailable(String),
    /// Storage and catalog disagree, or some other invariant broke.
    #[error("internal inconsistency: {0}")]
    Internal(String),
    /// The resource's stored content is known to be damaged (a fixity audit found it, and
    /// nothing has repaired it yet): its bytes are not served.
    #[error("{id}: {}; its content is not served until it is repaired", file.describe())]
    Damaged {
        /// The resource.
        id: FedoraId,
        /// What the audit found.
        file: Box<crate::damage::DamagedFile>,
    },
}

impl Error {
    /// Shorthand for a constraint error.
    pub fn constraint(constraint: Constraint, message: impl Into<String>) -> Self {
        Self::Constraint {
            constraint,
            message: message.into(),
        }
    }

    /// Whether the storage or the catalog could not be reached for now (a stopped or
    /// overloaded service): the same request may succeed later.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Error::Unavailable(_) => true,
            Error::Storage(e) => e.is_unavailable(),
            Error::Catalog(e) => e.is_unavailable(),
            Error::Io(e) => e.get_ref().is_some_and(|inner| {
                inner
                    .downcast_ref::<arca_ocfl::Error>()
                    .is_some_and(arca_ocfl::Error::is_unavailable)
                    || inner
                        .downcast_ref::<arca_storage::StoreError>()
                        .is_some_and(arca_storage::StoreError::is_unavailable)
            }),
            _ => false,
        }
    }

    /// Whether a change's commit point found its object changed by another writer (the
    /// store's condition did not hold): nothing of the change was stored.
    pub fn is_write_conflict(&self) -> bool {
        matches!(
            self,
            Error::Storage(arca_ocfl::Error::Store(
                arca_storage::StoreError::PreconditionFailed { .. }
            ))
        )
    }

    /// Whether the underlying cause is a file system mounted read-only (`EROFS`: remounted so
    /// by the kernel after an I/O error, or by an operator).
    pub fn is_read_only_storage(&self) -> bool {
        let io = match self {
            Error::Io(e) => Some(e),
            Error::Storage(arca_ocfl::Error::Io { source, .. }) => Some(source),
            _ => None,
        };
        io.is_some_and(|e| {
            e.kind() == std::io::ErrorKind::ReadOnlyFilesystem || e.raw_os_error() == Some(30)
        })
    }

    /// Whether the underlying cause is a full disk.
    pub fn is_storage_full(&self) -> bool {
        if matches!(self, Error::StorageFull(_)) {
            return true;
        }
        let io = match self {
            Error::Io(e) => Some(e),
            Error::Storage(arca_ocfl::Error::Io { source, .. }) => Some(source),
            _ => None,
        };
        io.is_some_and(|e| {
            e.kind() == std::io::ErrorKind::StorageFull || e.raw_os_error() == Some(28)
        })
    }
}

/// Result type of the kernel.
pub type Result<T> = std::result::Result<T, Error>;
