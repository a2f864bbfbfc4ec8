//! Fedora 3 for arca.
//!
//! - [`model`]: a Fedora 3 object as FOXML 1.1 describes it (properties, datastreams,
//!   their versions), whatever it was read from.
//! - [`foxml`]: the FOXML 1.1 reader (ingest, archive-export and stored forms).
//! - [`source`]: where objects come from: single FOXML files, directories of them, and
//!   whole Fedora 3 object stores (akubra-fs and legacy-fs), with managed content resolved
//!   through its `INTERNAL_ID`.
//! - [`vocab`]: the predicates an imported object is described with in arca.
//! - [`view`]: what the read-only Fedora 3 REST facade answers from, read from the
//!   repository (profiles, listings, histories, field-search rows).

pub mod archive;
pub mod checksum;
pub mod foxml;
pub mod import;
pub mod mapping;
pub mod model;
pub mod source;
pub mod verify;
pub mod view;
pub mod vocab;

pub use model::*;
