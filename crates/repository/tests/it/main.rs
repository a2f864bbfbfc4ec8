//! arca-repository's integration tests, one binary.

mod digest_algorithm;
mod rebuild;
mod transactions;

/// The OCFL root in the local directory `root`, created if missing, over the store the
/// server gives a local root.
fn local_root(root: &std::path::Path, staging: &std::path::Path) -> arca_ocfl::OcflRoot {
    let store = arca_storage::FsStorage::open_deferred(root).unwrap();
    arca_ocfl::OcflRoot::open(std::sync::Arc::new(store), staging).unwrap()
}
