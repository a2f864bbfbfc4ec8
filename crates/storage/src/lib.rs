//! Byte-level storage for arca.
//!
//! [`store`] is the seam every file of the OCFL storage root is to go through: the trait
//! [`ObjectStorage`] (read, ranged read, metadata, put, conditional put, move a local file
//! in, copy, rename, delete, recursive and one-level listings; synchronous, typed
//! [`StoreError`]s) with [`FsStorage`] (a local directory, one node) and [`S3Storage`] (an
//! S3 bucket over `object_store`, feature `s3`, several nodes); both pass one conformance
//! suite (`tests/it/store_conformance.rs`, the S3 half against a real MinIO). The OCFL layer
//! does not use it yet: it still writes the root with the helpers below.
//!
//! On the local filesystem: [`Journal`] makes a write durable by appending a redo
//! record to a sequential log, one `fdatasync` shared by every request waiting at that moment;
//! [`GroupCommit`] makes everything written so far durable with one shared `syncfs`, which the
//! journal's checkpoints use; [`FreeSpaceGuard`] keeps a reserve of space and inodes free for
//! the files of writes already acknowledged; [`fsutil`] holds the small file helpers the OCFL layer uses.
#![warn(missing_docs)]

pub mod free_space;
pub mod fsutil;
mod group_commit;
mod journal;
pub mod store;

pub use free_space::FreeSpaceGuard;
pub use group_commit::{GroupCommit, SyncStats};
pub use journal::{Journal, JournalStats, Ticket};
#[cfg(feature = "s3")]
pub use store::{BucketVersioning, S3Credentials, S3Settings, S3Storage};
pub use store::{
    ByteReader, Contents, DirListing, ETag, FileInfo, FsStorage, ObjectStorage, Precondition,
    StoreError, StoreResult,
};
