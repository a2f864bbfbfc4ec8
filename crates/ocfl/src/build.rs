//! Whole objects written outside the root and then moved in with one rename: how bulk
//! imports (Fedora 3 migration) add an object with its entire history, all or nothing.

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::PathBuf;

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
        let mut built = BuiltObject {
            object_id: object_id.to_string(),
            dir: dir.clone(),
            inventory: empty_inventory(object_id, self.digest_algorithm()),
            installed: false,
        };
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
            apply_changes(inventory, &mut state, v.changes, &prefix, &dir, &mut files)?;
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
            self.write_file(&dir, file, false)?;
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

    /// Moves a built object to its place in the root with one rename; fails, changing
    /// nothing, if anything is at that place already. Returns the object's directory.
    pub fn install_built(&self, built: &mut BuiltObject) -> Result<PathBuf> {
        let target = self.object_dir(&built.object_id);
        if target.exists() {
            return Err(Error::AlreadyExists(built.object_id.clone()));
        }
        let parent = target.parent().expect("object directories have parents");
        fs::create_dir_all(parent).at(parent)?;
        match fs::rename(&built.dir, &target) {
            Ok(()) => {
                built.installed = true;
                Ok(target)
            }
            Err(e) if e.kind() == ErrorKind::DirectoryNotEmpty => {
                Err(Error::AlreadyExists(built.object_id.clone()))
            }
            Err(e) => Err(e).at(&target),
        }
    }

    /// Takes an installed object out of the root again (its installation could not be
    /// recorded), removing its files and the directories left empty above it.
    pub fn uninstall(&self, object_id: &str) -> Result<()> {
        let target = self.object_dir(object_id);
        match fs::remove_dir_all(&target) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).at(&target),
        }
        self.remove_empty_ancestors(&target);
        Ok(())
    }
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
        let root = OcflRoot::open_or_create(&tmp.path().join("root"), &tmp.path().join("staging"))
            .unwrap();
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
        let dir = root.install_built(&mut built).unwrap();
        let object = root.read_object("info:fedora/x").unwrap().unwrap();
        assert_eq!(object.dir, dir);
        assert_eq!(object.inventory.versions.len(), 3);
        // "one" is stored once (v1) although v3 has it again.
        assert_eq!(object.inventory.manifest.len(), 3);
        assert_eq!(fs::read(object.head_file("a").unwrap()).unwrap(), b"one");
        assert!(
            dir.join("v2/inventory.json").exists() && dir.join("v3/content").metadata().is_err()
        );
        // The root inventory is the last version's, byte for byte.
        assert_eq!(
            fs::read(dir.join("inventory.json")).unwrap(),
            fs::read(dir.join("v3/inventory.json")).unwrap()
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
        assert_eq!(fs::read(object.head_file("a").unwrap()).unwrap(), b"one");
        root.uninstall("info:fedora/x").unwrap();
        assert!(root.read_object("info:fedora/x").unwrap().is_none());
    }
}
