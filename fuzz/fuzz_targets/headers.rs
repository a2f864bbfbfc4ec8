//! The `headers` fuzz target; what it checks is `checks::headers` in `fuzz/checks.rs`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::headers(data));
