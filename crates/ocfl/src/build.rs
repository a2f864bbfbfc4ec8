//! Whole objects written outside the root and then moved in (one rename on a local root):
//! how bulk imports (Fedora 3 migration) add an object with its entire history, all or
//! nothing.

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use arca_storage::{Precondition, StoreError};

use crate::error::IoContext;
use crate::inventory::sidecar_for;
use crate::record::RecordFile;
use crate::root::{
    apply_changes, empty_inventory, new_version_entry, sidecar, INVENTORY, OBJECT_NAMASTE,
};
use crate::{Change, Error, Inventory, OcflRoot, Result, VersionInfo, VersionNum};

/// One version of an object built by [`OcflRoot::build_object`].
#[derive(Debug)]
pub struct NewVersion {
    /// Who and when.
    pub info: VersionInfo,
    /// What changes from the previous version (for the first: the whole state).
    pub changes: Vec<Change>,
}

/// An object written in the staging area, complete and valid, not yet in the root.
/// Dropping it without [`OcflRoot::install_built`] removes its files.
#[derive(Debug)]
pub struct BuiltObject {
    /// The OCFL object id.
    pub object_id: String,
    /// Where it was built.
    dir: PathBuf,
    /// Its inventory.
    pub inventory: Inventory,
    installed: bool,
}

impl BuiltObject {
    /// An object (to be) built in `dir`, not installed: its files go when it is dropped.
    pub(crate) fn new(dir: PathBuf, inventory: Inventory) -> Self {
        Self {
            object_id: inventory.id.clone(),
            dir,
            inventory,
            installed: false,
        }
    }

    /// The directory it was built in.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

impl Drop for BuiltObject {
    fn drop(&mut self) {
        if !self.installed {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

impl OcflRoot {
    /// Writes a new object with every version of `versions` (oldest first) into a fresh
    /// directory under the staging area. Content already stored in an earlier version is
    /// not written again; `Content::File` sources are moved. Nothing is synced: make the
    /// staging area durable (`syncfs`) before [`install_built`](Self::install_built).
    pub fn build_object(&self, object_id: &str, versions: Vec<NewVersion>) -> Result<BuiltObject> {
        if versions.is_empty() {
            return Err(Error::Invalid(format!(
                "{object_id}: an object needs a version"
            )));
        }
        let dir = self
            .staging
            .join(format!("build-{}", uuid::Uuid::new_v4().simple()));
        let mut built = BuiltObject::new(
            dir.clone(),
            empty_inventory(object_id, self.digest_algorithm()),
        );
        let inventory = &mut built.inventory;
        let algorithm = inventory.content_digest()?;
        let mut files = vec![RecordFile::inline(
            OBJECT_NAMASTE,
            b"ocfl_object_1.1\n".to_vec(),
        )];
        let mut state = BTreeMap::new();
        let mut version: Option<VersionNum> = None;
        for v in versions {
            let num = version.map_or(VersionNum::first(), VersionNum::next);
            inventory.head = num;
            let prefix = format!("{num}/{}", inventory.content_dir());
            apply_changes(inventory, &mut state, v.changes, &prefix, &mut files)?;
            inventory
                .versions
                .insert(num, new_version_entry(v.info, &state));
            let bytes = inventory.to_bytes();
            files.push(RecordFile::inline(
                &format!("{num}/{}", sidecar(algorithm)),
                sidecar_for(algorithm, &bytes).into_bytes(),
            ));
            files.push(RecordFile::inline(&format!("{num}/{INVENTORY}"), bytes));
            version = Some(num);
        }
        fs::create_dir_all(&dir).at(&dir)?;
        for file in &files {
            write_local(&dir, file)?;
        }
        // The root inventory and sidecar are the last version's: hard links, as the write
        // path makes them (two inodes fewer per object), or copies.
        let last = version.expect("at least one version");
        for name in [INVENTORY.to_string(), sidecar(algorithm)] {
            let from = dir.join(format!("{last}/{name}"));
            let to = dir.join(&name);
            if fs::hard_link(&from, &to).is_err() {
                fs::copy(&from, &to).at(&to)?;
            }
        }
        Ok(built)
    }

    /// Moves a built object to its place in the root; fails, changing nothing, if an
    /// object is at that place already. On a local root it is one rename; otherwise every
    /// file is moved in, the root inventory last (created only if absent: the commit
    /// point), and a failure before it removes what was moved. Returns the object's root
    /// as a key prefix.
    pub fn install_built(&self, built: &mut BuiltObject) -> Result<String> {
        let prefix = self.object_key(&built.object_id);
        let store = self.store().as_ref();
        if store.metadata(&format!("{prefix}/{INVENTORY}"))?.is_some() {
            return Err(Error::AlreadyExists(built.object_id.clone()));
        }
        match store.move_dir(&built.dir, &prefix) {
            Ok(true) => {
                built.installed = true;
                return Ok(prefix);
            }
            Ok(false) => {}
            Err(StoreError::PreconditionFailed { .. }) => {
                return Err(Error::AlreadyExists(built.object_id.clone()))
            }
            Err(e) => return Err(e.into()),
        }
        let algorithm = built.inventory.content_digest()?;
        let root_files = [INVENTORY.to_string(), sidecar(algorithm)];
        let mut files = Vec::new();
        collect_files(&built.dir, &built.dir, &mut files)?;
        files.retain(|(rel, _)| !root_files.contains(rel));
        let head = built.inventory.head;
        let moved = (|| -> Result<()> {
            for (rel, path) in &files {
                store.move_file(path, &format!("{prefix}/{rel}"))?;
            }
            for name in &root_files {
                let path = built.dir.join(name);
                let bytes = fs::read(&path).at(&path)?;
                let precondition = (name == INVENTORY).then_some(Precondition::Absent);
                store.put_copy(
                    &format!("{prefix}/{name}"),
                    &bytes,
                    &format!("{prefix}/{head}/{name}"),
                    precondition,
                )?;
            }
            Ok(())
        })();
        match moved {
            Ok(()) => {
                built.installed = true;
                Ok(prefix)
            }
            Err(Error::Store(StoreError::PreconditionFailed { .. })) => {
                Err(Error::AlreadyExists(built.object_id.clone()))
            }
            Err(e) => {
                if store.metadata(&format!("{prefix}/{INVENTORY}"))?.is_none() {
                    let _ = store.delete_prefix(&prefix);
                }
                Err(e)
            }
        }
    }

    /// The record of `built`'s installation about to start in a store without a journal,
    /// for [`OcflRoot::recover`]: its root inventory is the commit point; before it, the
    /// whole object is what an undo removes.
    pub fn pending_install_record(&self, built: &BuiltObject) -> Result<Vec<u8>> {
        let algorithm = built.inventory.content_digest()?;
        let mut commit = Vec::new();
        for name in [INVENTORY.to_string(), sidecar(algorithm)] {
            let path = built.dir.join(&name);
            commit.push(RecordFile::inline(&name, fs::read(&path).at(&path)?));
        }
        Ok(crate::record::Pending {
            object_id: built.object_id.clone(),
            commit,
            undo: vec![self.object_key(&built.object_id)],
            purge: false,
            creates: None,
        }
        .encode())
    }

    /// Takes an installed object out of the root again (its installation could not be
    /// recorded), removing its files and the directories left empty above it.
    pub fn uninstall(&self, object_id: &str) -> Result<()> {
        self.purge(object_id).map(drop)
    }
}

/// Writes one file of a built object into its local directory `dir`.
fn write_local(dir: &Path, file: &RecordFile) -> Result<()> {
    let (rel, target) = match file {
        RecordFile::Inline { rel, .. } | RecordFile::External { rel, .. } => (rel, dir.join(rel)),
        RecordFile::Move { .. } | RecordFile::Remove { .. } | RecordFile::Stored { .. } => {
            unreachable!("a built object only has new local files")
        }
    };
    let parent = target.parent().expect("files have parents");
    fs::create_dir_all(parent).at(parent)?;
    match file {
        RecordFile::Inline { bytes, .. } => {
            arca_storage::fsutil::write_new(&target, bytes).at(&target)
        }
        RecordFile::External { locations, .. } => {
            let source = locations.last().expect("an upload location");
            fs::rename(source, &target)
                .or_else(|e| {
                    if e.kind() == ErrorKind::CrossesDevices {
                        fs::copy(source, &target).and_then(|_| fs::remove_file(source))
                    } else {
                        Err(e)
                    }
                })
                .at(Path::new(rel))
        }
        _ => unreachable!(),
    }
}

/// Every file below `dir` as (path relative to `root`, `/`-separated; local path).
fn collect_files(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> Result<()> {
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let path = entry.path();
        if entry.file_type().at(&path)?.is_dir() {
            collect_files(root, &path, out)?;
        } else {
            let rel = path
                .strip_prefix(root)
                .expect("below the root")
                .to_string_lossy()
                .replace(std::path::MAIN_SEPARATOR, "/");
            out.push((rel, path));
        }
    }
    out.sort();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Content;

    fn info(created: &str) -> VersionInfo {
        VersionInfo {
            created: created.into(),
            message: "import".into(),
            user_name: "fedoraAdmin".into(),
            user_address: "info:fedora/fedoraAdmin".into(),
        }
    }

    fn put(path: &str, bytes: &[u8]) -> Change {
        Change {
            logical_path: path.into(),
            content: Some(Content::Bytes(bytes.to_vec())),
        }
    }

    #[test]
    fn a_built_object_reads_back_with_every_version_and_installs_once() {
        let tmp = tempfile::tempdir().unwrap();
        let root =
            crate::root::local_root(&tmp.path().join("root"), &tmp.path().join("staging")).unwrap();
        let versions = vec![
            NewVersion {
                info: info("2020-01-01T00:00:00.100Z"),
                changes: vec![put("a", b"one"), put("b", b"same")],
            },
            NewVersion {
                info: info("2020-01-01T00:00:00.900Z"),
                changes: vec![put("a", b"two")],
            },
            NewVersion {
                info: info("2020-01-02T00:00:00Z"),
                changes: vec![put("a", b"one")],
            },
        ];
        let mut built = root.build_object("info:fedora/x", versions).unwrap();
        let prefix = root.install_built(&mut built).unwrap();
        let object = root.read_object("info:fedora/x").unwrap().unwrap();
        assert_eq!(object.prefix, prefix);
        assert_eq!(object.inventory.versions.len(), 3);
        // "one" is stored once (v1) although v3 has it again.
        assert_eq!(object.inventory.manifest.len(), 3);
        let read = |key: &str| root.read_file(key).unwrap();
        assert_eq!(read(&object.head_key("a").unwrap()), b"one");
        let store = root.store();
        assert!(store
            .metadata(&object.key("v2/inventory.json"))
            .unwrap()
            .is_some());
        assert!(store.list(&object.key("v3/content")).unwrap().is_empty());
        // The root inventory is the last version's, byte for byte.
        assert_eq!(
            read(&object.key("inventory.json")),
            read(&object.key("v3/inventory.json"))
        );
        // A second object with the same id does not replace the first.
        let mut again = root
            .build_object(
                "info:fedora/x",
                vec![NewVersion {
                    info: info("2021-01-01T00:00:00Z"),
                    changes: vec![put("a", b"other")],
                }],
            )
            .unwrap();
        let staged_dir = again.dir().to_path_buf();
        assert!(matches!(
            root.install_built(&mut again),
            Err(Error::AlreadyExists(_))
        ));
        drop(again);
        assert!(!staged_dir.exists());
        assert_eq!(read(&object.head_key("a").unwrap()), b"one");
        root.uninstall("info:fedora/x").unwrap();
        assert!(root.read_object("info:fedora/x").unwrap().is_none());
    }
}
