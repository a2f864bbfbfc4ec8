//! The PostgreSQL catalog's own tests, a binary of their own because they need PostgreSQL
//! (`arca_testkit::postgres`).

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod postgres;
mod tls;
