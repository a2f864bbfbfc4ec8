//! One function per operation on a Fedora resource. Each turns a parsed request into
//! repository calls and builds the response headers the Fedora API requires: reads
//! ([`read`]), writes ([`write`]), their bodies ([`body`]), conditional requests
//! ([`conditions`]) and the headers of a representation ([`representation`]).

mod body;
mod conditions;
mod read;
mod representation;
mod write;

use axum::response::Response;

use crate::error::ApiError;

pub(crate) use body::{client_digests, read_rdf_body};
pub(crate) use conditions::{check_write_condition, write_precondition};
pub(crate) use read::{
    audit_triples, file_body, options, read, read_headers, serve_binary, server_managed_triples,
};
pub(crate) use representation::{created_response, filename_params, model_of, resource_headers};
pub(crate) use write::{create, delete, patch, purge, put};

type HandlerResult = Result<Response, ApiError>;

/// Media types accepted as RDF request bodies.
const ACCEPT_POST: &str =
    "text/turtle, application/n-triples, application/ld+json, application/rdf+xml, */*";
const ACCEPT_PATCH: &str = "application/sparql-update";
/// `Vary` of an RDF source's representation.
const RDF_VARY: &str = "Accept, Prefer, Range, Accept-Encoding, Accept-Datetime";
/// `Vary` of a binary's representation.
const BINARY_VARY: &str = "Range, Accept-Datetime";
/// RDF bodies up to this size are parsed on the request's own task.
const INLINE_PARSE: usize = 64 << 10;
