//! Helpers the OCFL writer's tests share: local paths of what a local root holds.

use std::fs;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use arca_ocfl::{Change, Content, ObjectState, OcflRoot, VersionInfo};
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

/// The root in `dir/root`, with its staging in `dir/staging`.
pub fn open(dir: &Path) -> OcflRoot {
    local_root(&dir.join("root"), &dir.join("staging")).unwrap()
}

/// The version metadata arca writes, at a fixed instant.
pub fn info() -> VersionInfo {
    VersionInfo {
        created: "2026-11-21T20:23:49.759367621Z".into(),
        message: "Authored by arca".into(),
        user_name: "fedoraAdmin".into(),
        user_address: "info:fedora/fedoraAdmin".into(),
    }
}

/// A change writing `bytes` at logical path `path`.
pub fn put(path: &str, bytes: &[u8]) -> Change {
    Change {
        logical_path: path.into(),
        content: Some(Content::Bytes(bytes.to_vec())),
    }
}

/// Copies the directory tree `from` to `to`, the copies writable (fixtures may be
/// read-only).
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            fs::copy(e.path(), &dest).unwrap();
            let mut perm = fs::metadata(&dest).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perm.set_readonly(false);
            fs::set_permissions(&dest, perm).unwrap();
        }
    }
}
