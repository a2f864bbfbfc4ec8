//! arca-ocfl's integration tests, one binary.

mod common;

mod commit;
mod digest_algorithms;
mod mutable_head;
