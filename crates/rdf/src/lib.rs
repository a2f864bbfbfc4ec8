//! RDF for arca: turns HTTP request bodies into triples and triples into response bodies.
//!
//! Resources are stored with *internal ids*: the external URL `http://host/rest/a/b` is the
//! internal IRI `info:fedora/a/b` (see [`IdMapper`]). Bodies are parsed into internal-id triples
//! ([`parse`]), stored as sorted N-Triples ([`to_ntriples`]), and written back with external URLs
//! ([`serialize`]). The crate also knows which statements the server manages
//! ([`split_server_managed`]), applies SPARQL Update to one resource ([`apply_sparql_update`]) and
//! reads RFC 7240 `Prefer` headers ([`Prefer`]). No HTTP types and no I/O here.
//!
//! ```
//! use arca_rdf::{parse, serialize, IdMapper, ParseLimits, RdfFormat};
//!
//! let mapper = IdMapper::new("http://localhost:8080/rest");
//! let body = b"<> <http://purl.org/dc/terms/title> \"A\" ; <http://purl.org/dc/terms/hasPart> <b> .";
//! let limits = ParseLimits::default();
//! let triples = parse(body, RdfFormat::Turtle, "http://localhost:8080/rest/a/", &mapper, &limits)?;
//! assert_eq!(triples[0].subject.to_string(), "<info:fedora/a>");
//! assert_eq!(triples[1].object.to_string(), "<info:fedora/a/b>");
//!
//! let turtle = String::from_utf8(serialize(&triples, RdfFormat::Turtle, &mapper)?).unwrap();
//! assert!(turtle.contains("<http://localhost:8080/rest/a> dcterms:hasPart <http://localhost:8080/rest/a/b>"));
//! # Ok::<(), arca_rdf::RdfError>(())
//! ```
#![warn(missing_docs)]

mod format;
mod ids;
mod io;
mod jsonld;
mod limits;
mod managed;
mod prefer;
mod scan;
mod sparql;
pub mod vocab;
mod xml_guard;

pub use format::{RdfFormat, RdfOutput};
pub use ids::IdMapper;
pub use io::{parse, parse_ntriples, serialize, serialize_as, to_ntriples};
pub use jsonld::JsonLdProfile;
pub use limits::ParseLimits;
pub use managed::{describe_statements, split_server_managed};
pub use prefer::{Prefer, ReturnPref};
pub use sparql::{apply_sparql_update, apply_sparql_update_as, UpdateScope};

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum RdfError {
    /// The body (RDF or SPARQL) is not well formed; carries the parser's message, with line and
    /// column where the parser reports them. Maps to 400 Bad Request.
    #[error("{0}")]
    Syntax(String),
    /// The body exceeds one of the [`ParseLimits`]; the message names the bound and its
    /// value. Maps to 400 Bad Request (413 for the triple count).
    #[error("{0}")]
    Limit(String),
    /// Too many SPARQL updates are running; retry later (503).
    #[error("{0}")]
    Busy(String),
    /// The SPARQL update tries to delete statements the server manages (409 in Fedora).
    #[error("{0}")]
    ServerManaged(String),
    /// The SPARQL update is well formed but uses something a single-resource PATCH cannot do
    /// (named graphs, LOAD, CLEAR, CREATE, DROP, COPY/MOVE/ADD, SERVICE).
    #[error("{0}")]
    Unsupported(String),
    /// The SPARQL update deletes, and only insertions were allowed
    /// ([`UpdateScope::InsertOnly`]).
    #[error("{0}")]
    NotInsertOnly(String),
    /// The base URL given by the caller is not an absolute IRI (a caller bug).
    #[error("invalid base IRI {iri:?}")]
    BaseIri {
        /// The rejected IRI.
        iri: String,
        /// Why it was rejected.
        #[source]
        source: oxrdf::IriParseError,
    },
    /// A graph could not be written in the requested format (e.g. an RDF/XML predicate that has
    /// no XML local name).
    #[error("cannot serialize the graph: {0}")]
    Serialize(#[source] std::io::Error),
    /// Evaluating a SPARQL update failed after it was parsed and accepted.
    #[error("SPARQL update failed: {0}")]
    Update(#[from] oxigraph::sparql::UpdateEvaluationError),
    /// The in-memory store used for SPARQL Update failed.
    #[error("in-memory store failed: {0}")]
    Store(#[from] oxigraph::store::StorageError),
}

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, RdfError>;
