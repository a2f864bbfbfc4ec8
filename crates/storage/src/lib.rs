//! Byte-level storage primitives for arca.
//!
//! Today this is the local filesystem: [`GroupCommit`] makes writes durable with one shared
//! sync for many concurrent requests, and [`fsutil`] holds the small file helpers the OCFL
//! layer uses. The S3 backend of the scale-out design will live beside it behind a trait.
#![warn(missing_docs)]

pub mod fsutil;
mod group_commit;

pub use group_commit::{GroupCommit, SyncStats};
