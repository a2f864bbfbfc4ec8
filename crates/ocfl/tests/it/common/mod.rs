//! Helpers the OCFL writer's tests share: local paths of what a local root holds.

use std::path::{Path, PathBuf};

use arca_ocfl::{ObjectState, OcflRoot};

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
