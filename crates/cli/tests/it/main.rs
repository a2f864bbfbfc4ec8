//! The `arca` binary's integration tests, one binary. The tests that need an external service
//! are in binaries of their own: `fedora` (the real Fedora 6.1), `activemq`, `postgres`, `s3`.
//! A few tests here compare with the real Fedora 6.1 and skip when it is missing.

#[path = "../common/mod.rs"]
mod common;

mod auth;
mod bench;
mod crash;
mod disk_full;
mod export_import;
mod external_content;
mod fedora3_facade;
mod fedora3_import;
mod fedora7_sample;
mod fedora_sample;
mod fixity;
mod health;
mod hostile;
mod ocfl_validation;
mod publish_behind;
mod rebuild;
mod replica;
mod round_trip;
mod search;
mod search_bench;
mod sizing;
mod transaction_crash;
mod unwritable_log;
