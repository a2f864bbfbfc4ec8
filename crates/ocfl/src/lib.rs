//! OCFL 1.1 for arca, written once, in the exact layout Fedora 6 uses (see OCFL-FEDORA.md).
//!
//! * [`Inventory`]: `inventory.json` as ocfl-java writes it (compact JSON, `fixity:{}`), with
//!   the object's digest algorithm (sha512, Fedora's default, or sha256) for its manifest and
//!   sidecar; an object keeps its algorithm, new objects get the root's
//!   ([`OcflRoot::with_digest_algorithm`]).
//! * [`layout`]: the storage layout extension 0004 (hashed n-tuple) and the root files.
//! * [`OcflRoot`]: open or create a root, read objects, and commit versions:
//!   [`OcflRoot::stage`] prepares the change in memory (a new immutable version, or a
//!   revision of the extension 0005 mutable HEAD, see [`HeadMode`];
//!   [`OcflRoot::stage_commit_head`] commits a mutable HEAD); the caller makes
//!   [`versions_record`] durable in its journal; [`OcflRoot::publish`] writes the version
//!   into the root (undoing itself on failure; the caller then journals
//!   [`cancel_record`]). After a crash, [`OcflRoot::replay_all`] writes every journaled
//!   version again (idempotently) and [`OcflRoot::clear_staging`] discards temporaries.
//! * [`copy_object`] and [`OcflRoot::copy_in`]: whole objects copied out of and into a root
//!   (`arca export`, `arca import`), every content digest and sidecar checked on the way.
#![warn(missing_docs)]

mod build;
mod error;
mod head;
mod history;
mod inventory;
pub mod layout;
mod mapper;
mod record;
mod root;
mod transfer;

pub use arca_storage::{ByteReader, ObjectStorage};
pub use build::{BuiltObject, NewVersion};
pub use error::{Error, Result};
pub use head::{AUTO_V1_MESSAGE, AUTO_V1_USER_ADDRESS, AUTO_V1_USER_NAME};
pub use history::PathChange;
pub use inventory::{Inventory, User, Version, VersionNum, INVENTORY_TYPE_1_1};
pub use mapper::encode_logical_path;
pub use record::{
    cancel_record, pending_purge_record, pending_record, purge_record, versions_record, Recovered,
};
pub use root::{
    check_sidecar_in, list_objects_in, read_object_in, walk_order, Change, Content, HeadMode,
    ObjectState, OcflRoot, Staged, VersionInfo,
};
pub use transfer::{copy_object, moved_id, ROOT_FILES};
