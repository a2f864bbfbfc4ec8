//! Fixity audits and replicas: what arca holds is proven again, not only at ingest.
//!
//! - [`audit`] reads every file of every OCFL object of a root (any store) and checks it
//!   against its inventory's digests, each inventory against its sidecar, and, with a
//!   running or offline repository, the catalog's view of each object against storage;
//!   resumable through a [`checkpoint`], rate-limited by [`rate`], reporting [`report`]s.
//! - [`replica`] keeps second copies of the root in the same layout: every published
//!   version copied behind the writes (the change log is the durable queue), `sync` and
//!   `verify` for a whole replica.
//! - [`repair`] replaces a damaged or missing file from a copy whose digest is the one the
//!   inventory records, in either direction, never the other way round.
//! - [`schedule`] runs the audit in the background of `arca serve`; [`announce`] tells the
//!   repository of each finding (the damaged set its reads refuse, a PREMIS fixity event in
//!   the change log for the broker and `fcr:events`).

pub mod announce;
pub mod audit;
mod catalog;
pub mod checkpoint;
mod files;
mod object;
pub mod rate;
pub mod repair;
pub mod replica;
pub mod report;
pub mod schedule;
mod walk;

pub use audit::{AuditProgress, AuditSettings, Auditor};
pub use replica::{Replica, Replicator};
pub use report::{Finding, FindingKind, Report, Reports};

/// Errors of audits, replicas and repairs (a finding is not an error: it is reported).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The OCFL layer failed (a store outage, an unreadable root).
    #[error(transparent)]
    Ocfl(#[from] arca_ocfl::Error),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] arca_storage::StoreError),
    /// The repository (catalog) failed.
    #[error(transparent)]
    Repository(#[from] arca_repository::Error),
    /// A file of the data directory (a report, a checkpoint) could not be read or written.
    #[error("{0}: {1}")]
    Io(std::path::PathBuf, #[source] std::io::Error),
    /// A replica cannot be used: it holds another root, another layout, or cannot be
    /// reached at start.
    #[error("replica {name}: {message}")]
    Replica {
        /// The replica's name.
        name: String,
        /// Why.
        message: String,
    },
    /// A repair wrote a file that did not read back right.
    #[error("repair failed: {0}")]
    Repair(String),
    /// The run was stopped (a shutdown); its checkpoint lets the next one resume.
    #[error("stopped")]
    Stopped,
}

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;
