//! The `ids` fuzz target; what it checks is `checks::ids` in `fuzz/checks.rs`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::ids(data));
