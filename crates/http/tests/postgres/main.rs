//! Two HTTP nodes on one PostgreSQL catalog (`arca_testkit::postgres`): a binary of its own
//! because every test here starts PostgreSQL.

mod search_forward;
mod shared_catalog;
