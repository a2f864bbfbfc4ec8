//! The `sparql` fuzz target; what it checks is `checks::sparql` in `fuzz/checks.rs`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::sparql(data));
