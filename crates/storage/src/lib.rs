//! Byte-level storage primitives for arca.
//!
//! Today this is the local filesystem: [`Journal`] makes a write durable by appending a redo
//! record to a sequential log, one `fdatasync` shared by every request waiting at that moment;
//! [`GroupCommit`] makes everything written so far durable with one shared `syncfs`, which the
//! journal's checkpoints use; [`FreeSpaceGuard`] keeps a reserve of space and inodes free for
//! the files of writes already acknowledged; [`fsutil`] holds the small file helpers the OCFL layer uses. The S3 backend of the scale-out design will live beside it behind a trait.
#![warn(missing_docs)]

pub mod free_space;
pub mod fsutil;
mod group_commit;
mod journal;

pub use free_space::FreeSpaceGuard;
pub use group_commit::{GroupCommit, SyncStats};
pub use journal::{Journal, JournalStats, Ticket};
