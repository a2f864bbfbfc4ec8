//! arca-repository's integration tests, one binary.

mod digest_algorithm;
mod transactions;
