//! arca-search's integration tests, one binary.

mod extract;
mod query;
