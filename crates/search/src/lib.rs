//! Full-text search: an embedded tantivy index of every resource, fed from the catalog's
//! change log; Lucene query syntax; text extracted from binaries off the write path.
//!
//! - [`mapping`]: which RDF predicates feed which fields (Dublin Core by default);
//! - [`schema`]: the tantivy schema and analyzer;
//! - [`document`]: a resource as a document;
//! - [`query`]: Lucene's query syntax, parsed and built into tantivy queries;
//! - [`index`]: the index on disk, committed with the change-log position it reflects;
//! - [`hit`]: a hit's stored values, read straight into JSON;
//! - `merge`: which segments are merged, and when;
//! - [`indexer`]: the task that follows the change log, and full rebuilds.
#![warn(missing_docs)]

pub mod document;
pub mod extract;
pub mod hit;
pub mod index;
pub mod indexer;
pub mod mapping;
mod merge;
pub mod query;
pub mod request;
pub mod schema;

use std::path::PathBuf;

pub use hit::StoredHit;
pub use index::{Page, SearchIndex, Sort, WriterMode};
pub use indexer::{Indexer, IndexerSettings, SearchStatus};
pub use mapping::{FieldMapping, MappedKind, Mapping};
pub use merge::MOST_LIVE_SEGMENTS;
pub use request::{Comparison, Condition, PreparedSearch, SearchPage, SearchRequest};

/// Errors of the search index.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// tantivy failed.
    #[error("search index: {0}")]
    Index(#[from] tantivy::TantivyError),
    /// Another process holds the index (a running server, when reindexing offline).
    #[error(
        "the search index is in use by another process (stop the server, or reindex through it)"
    )]
    Locked,
    /// A file could not be read or written.
    #[error("{0}: {1}")]
    Io(PathBuf, #[source] std::io::Error),
    /// The field mapping is invalid.
    #[error("invalid search field mapping: {0}")]
    Mapping(String),
    /// A query could not be parsed.
    #[error("invalid query {0}")]
    Query(#[from] query::QueryError),
    /// A request asks for something the index cannot do (an unknown sort field…).
    #[error("{0}")]
    BadRequest(String),
    /// Indexing cannot go on now (its catalog or index failing); the live loop tries again.
    #[error("the search indexer cannot work now: {0}")]
    Unavailable(String),
    /// The catalog failed.
    #[error(transparent)]
    Catalog(#[from] arca_catalog::Error),
    /// The repository failed.
    #[error(transparent)]
    Repository(#[from] arca_repository::Error),
}

/// Result type of the search index.
pub type Result<T> = std::result::Result<T, Error>;
