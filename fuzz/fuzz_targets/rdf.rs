//! The `rdf` fuzz target; what it checks is `checks::rdf` in `fuzz/checks.rs`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::rdf(data));
