//! The `storage` fuzz target; what it checks is `checks::storage` in `fuzz/checks.rs`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::storage(data));
