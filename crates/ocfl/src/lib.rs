//! OCFL 1.1 for arca, written once, in the exact layout Fedora 6 uses (see OCFL-FEDORA.md).
//!
//! * [`Inventory`]: `inventory.json` as ocfl-java writes it (compact JSON, sha512, `fixity:{}`).
//! * [`layout`]: the storage layout extension 0004 (hashed n-tuple) and the root files.
//! * [`OcflRoot`]: open or create a root, read objects, and commit versions in three steps:
//!   [`OcflRoot::stage`] writes everything under `staging/`, the caller makes it durable,
//!   [`OcflRoot::publish`] renames it into place (the commit point), the caller makes that
//!   durable, then [`OcflRoot::finish`] drops the staging marker. After a crash,
//!   [`OcflRoot::recover_staging`] rolls forward or discards every operation still in
//!   `staging/` and reports the objects it touched.
#![warn(missing_docs)]

mod error;
mod inventory;
pub mod layout;
mod mapper;
mod root;

pub use error::{Error, Result};
pub use inventory::{Inventory, User, Version, VersionNum, INVENTORY_TYPE_1_1};
pub use mapper::encode_logical_path;
pub use root::{Change, Content, ObjectState, OcflRoot, Staged, VersionInfo};
