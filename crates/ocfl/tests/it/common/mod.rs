//! Helpers the OCFL writer's tests share: local paths of what a local root holds.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use arca_ocfl::{ObjectState, OcflRoot};
use arca_storage::FsStorage;

/// The local directory of an object read from a local root.
pub fn dir_of(root: &OcflRoot, object: &ObjectState) -> PathBuf {
    root.local_path(&object.prefix).expect("a local root")
}

/// The local content file of a logical path in an object's head state.
pub fn head_file(root: &OcflRoot, object: &ObjectState, logical: &str) -> Option<PathBuf> {
    object
        .head_key(logical)
        .map(|key| root.local_path(&key).expect("a local root"))
}

/// Whether the inventory in the local directory `dir` of `root` matches its sidecar.
pub fn check_sidecar(root: &OcflRoot, dir: &Path) -> bool {
    let local = root.local_root().expect("a local root");
    let prefix = dir.strip_prefix(&local).expect("inside the root");
    root.check_sidecar(&prefix.to_string_lossy()).unwrap()
}

/// The root in the local directory `root`, created if missing, over the store the server
/// gives a local root (deferred mode: arca's journal makes its writes durable).
pub fn local_root(root: &Path, staging: &Path) -> arca_ocfl::Result<OcflRoot> {
    OcflRoot::open(Arc::new(FsStorage::open_deferred(root)?), staging)
}
