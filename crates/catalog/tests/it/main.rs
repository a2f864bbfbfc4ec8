//! arca-catalog's integration tests, one binary. The conformance suites (`catalog`, `derived`,
//! `transactions`) run on SQLite and on PostgreSQL, the latter skipped when PostgreSQL is
//! missing; `tests/postgres` holds the tests of the PostgreSQL catalog alone.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod catalog;
mod derived;
mod sqlite;
mod transactions;
