//! Pure domain types shared by every arca crate: Fedora identifiers, interaction models,
//! the `.fcrepo/` resource headers Fedora 6 writes, digests and timestamps. No I/O here.
#![warn(missing_docs)]

mod digest;
mod headers;
mod id;
mod interaction;
mod time_util;

pub use digest::{DigestAlgorithm, DigestValue, MultiHasher};
pub use headers::{state_token, ResourceHeaders, HEADERS_VERSION};
pub use id::{
    excerpt, stored_segment_bytes, FedoraId, IdError, MAX_ID_CHARS, MAX_SEGMENT_BYTES, ROOT_ID,
};
pub use interaction::InteractionModel;
pub use time_util::{format_instant, now, parse_instant, Timestamp};

/// The user Fedora records as the author of every OCFL version it commits.
pub const OCFL_USER_NAME: &str = "fedoraAdmin";
/// The address recorded with [`OCFL_USER_NAME`].
pub const OCFL_USER_ADDRESS: &str = "info:fedora/fedoraAdmin";
