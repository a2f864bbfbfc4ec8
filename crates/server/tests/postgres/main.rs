//! The server on a PostgreSQL catalog (`arca_testkit::postgres`): the crate's only integration
//! tests, in a binary named after the service they need.

mod postgres_catalog;
