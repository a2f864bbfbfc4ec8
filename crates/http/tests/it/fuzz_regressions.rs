//! Replays the inputs kept under `fuzz/regressions/<target>/` (crashes, timeouts and other
//! interesting inputs the `cargo fuzz` targets in `fuzz/` found) through `fuzz/checks.rs`,
//! the very code the fuzz targets run, so they stay fixed without a nightly toolchain. Every
//! input must pass the target's checks without panicking. See `fuzz/README.md`.
//!
//! Each file is one raw fuzz input, given whole to the target's check: its first byte chooses
//! the parser, the rest is the input.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

#[path = "../../../../fuzz/checks.rs"]
mod checks;

/// The inputs of one target, sorted by name.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// Runs `check` on every input of `target`; fails naming each input that panicked.
fn replay(target: &str, check: fn(&[u8])) {
    let inputs = inputs(target);
    assert!(
        !inputs.is_empty(),
        "no inputs under fuzz/regressions/{target}/"
    );
    let mut failed = Vec::new();
    for (path, bytes) in &inputs {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(bytes))) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failed.push(format!("{}: {message}", path.display()));
        }
    }
    assert!(
        failed.is_empty(),
        "inputs that panic:\n{}",
        failed.join("\n")
    );
}

#[test]
fn ids_regressions() {
    replay("ids", checks::ids);
}

#[test]
fn headers_regressions() {
    replay("headers", checks::headers);
}

#[test]
fn rdf_regressions() {
    replay("rdf", checks::rdf);
}

#[test]
fn sparql_regressions() {
    replay("sparql", checks::sparql);
}

#[test]
fn storage_regressions() {
    replay("storage", checks::storage);
}
