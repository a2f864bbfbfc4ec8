//! Two HTTP nodes on one PostgreSQL catalog (`arca_testkit::postgres`), or on a primary and
//! its standby: a binary of its own because every test here starts PostgreSQL.

mod failover;
mod search_forward;
mod shared_catalog;
