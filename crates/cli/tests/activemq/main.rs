//! arca's events through a real ActiveMQ broker (`arca_testkit::activemq`): a binary of its own
//! because every test here starts the broker.

#[path = "../common/mod.rs"]
mod common;

mod events_bench;
mod events_broker;
mod health;
