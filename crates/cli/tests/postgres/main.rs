//! arca as a cluster on a shared PostgreSQL catalog (`arca_testkit::postgres`), with MinIO
//! storage: a binary of its own because every test here starts PostgreSQL.

#[path = "../common/mod.rs"]
mod common;

mod clocks;
mod cluster;
mod commit_kill;
mod failover;
mod health;
mod outage;
mod tls;
