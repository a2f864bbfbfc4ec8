//! arca-rdf's integration tests, one binary.

mod formats;
mod jsonld;
mod prefer;
mod server_managed;
mod sparql_update;
