//! arca compared with the real Fedora 6.1 (`common::fedora`, from `ARCA_FEDORA_WAR`): a binary of
//! its own because every test here starts Fedora.

#[path = "../common/mod.rs"]
mod common;

mod fedora_compare;
mod fedora_events;
mod fedora_s3;
mod fedora_search;
mod fedora_sha256;
mod fedora_webac;
