//! Full-text search: an embedded tantivy index of every resource, fed from the catalog's
//! change log; Lucene query syntax; text extracted from binaries off the write path.
#![warn(missing_docs)]
pub mod extract;
