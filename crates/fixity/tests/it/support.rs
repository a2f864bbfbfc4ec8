//! A root of the OCFL fixtures' good objects, one object directory each, and ways to
//! damage it.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arca_fixity::checkpoint::Checkpoint;
use arca_fixity::{AuditSettings, Auditor, Finding, FindingKind, Report};
use arca_ocfl::ObjectStorage;
use arca_storage::FsStorage;

/// The fixtures' good objects.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/ocfl-fixtures/1.1/good-objects")
}

/// Copies a directory tree (writable, whatever the originals' modes).
pub fn copy_tree(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755)).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
}

/// A root in a temporary directory: `root/objects/<fixture name>` for each good object.
pub struct Root {
    pub dir: tempfile::TempDir,
}

impl Root {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        copy_tree(&fixtures(), &dir.path().join("root/objects"));
        Self { dir }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// The file of object `object` (a fixture name) at `rel`.
    pub fn file(&self, object: &str, rel: &str) -> PathBuf {
        self.path().join("objects").join(object).join(rel)
    }

    pub fn store(&self) -> Arc<dyn ObjectStorage> {
        Arc::new(FsStorage::open(&self.path()).unwrap())
    }

    /// A copy of this root next to it (a replica in the same layout).
    pub fn replica(&self, name: &str) -> (PathBuf, Arc<dyn ObjectStorage>) {
        let path = self.dir.path().join(name);
        copy_tree(&self.path(), &path);
        let store: Arc<dyn ObjectStorage> = Arc::new(FsStorage::open(&path).unwrap());
        (path, store)
    }

    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint::at(&self.dir.path().join("checkpoint.json"))
    }
}

/// Settings without repairs, `threads` at once.
pub fn settings(threads: usize, repair: bool) -> AuditSettings {
    AuditSettings {
        threads,
        max_bytes_per_second: None,
        objects: Vec::new(),
        repair,
    }
}

/// Runs `auditor` to the end.
pub fn run(auditor: &Auditor, checkpoint: &Checkpoint) -> Report {
    auditor
        .run(checkpoint, false, &AtomicBool::new(false))
        .unwrap()
}

/// Flips one bit of a file.
pub fn flip_bit(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(path, bytes).unwrap();
}

/// Cuts a file to half its size.
pub fn truncate(path: &Path) {
    let len = std::fs::metadata(path).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.set_len(len / 2).unwrap();
}

/// The findings as (kind, object dir name, content path), sorted, for exact comparisons.
pub fn summary(findings: &[Finding]) -> Vec<(FindingKind, String, Option<String>)> {
    let mut out: Vec<_> = findings
        .iter()
        .map(|f| (f.kind, f.object.clone(), f.content_path.clone()))
        .collect();
    out.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    out
}

/// The id of each fixture object (its inventory's).
pub fn id_of(object: &str) -> String {
    let bytes = std::fs::read(fixtures().join(object).join("inventory.json")).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    value["id"].as_str().unwrap().to_string()
}

/// How many of the digests the fixture `object`'s fixity block records for `rel` arca
/// checks (md5, sha1, sha256, sha512; not blake2b).
pub fn fixity_digests(object: &str, rel: &str) -> usize {
    let bytes = std::fs::read(fixtures().join(object).join("inventory.json")).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let Some(fixity) = value["fixity"].as_object() else {
        return 0;
    };
    fixity
        .iter()
        .filter(|(name, _)| ["md5", "sha1", "sha256", "sha512"].contains(&name.as_str()))
        .filter(|(_, block)| {
            block
                .as_object()
                .unwrap()
                .values()
                .flat_map(|paths| paths.as_array().unwrap())
                .any(|p| p == rel)
        })
        .count()
}
