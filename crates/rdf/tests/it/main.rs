//! arca-rdf's integration tests, one binary.

mod formats;
mod prefer;
mod server_managed;
mod sparql_update;
