//! Whole objects copied out of one storage root and into another with every version, byte
//! for byte, each content file checked against the digest its inventory records while it is
//! copied, and each inventory against its sidecar (`arca export` / `arca import`).

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::path::Path;

use arca_model::{DigestAlgorithm, MultiHasher};
use arca_storage::ObjectStorage;

use crate::build::BuiltObject;
use crate::error::IoContext;
use crate::root::{empty_inventory, HEAD_INVENTORY, INVENTORY};
use crate::{check_sidecar_in, Error, Inventory, OcflRoot, Result};

/// The files that make a directory an OCFL storage root in Fedora 6's layout (declaration,
/// layout description, layout extension configuration), copied as they are on export.
const ROOT_FILES: [&str; 3] = [
    "0=ocfl_1.1",
    "ocfl_layout.json",
    "extensions/0004-hashed-n-tuple-storage-layout/config.json",
];

/// Copies the object whose root is `prefix` in `source` into the local directory `dest`
/// (created; it must not hold the object yet), every file byte for byte: the content files
/// of every version (and of a mutable HEAD) hashed while copied and compared with the
/// manifest, every inventory compared with its sidecar, every manifest entry required.
/// Returns the object's root inventory.
///
/// # Errors
/// [`Error::Mismatch`] naming the file whose bytes do not match their digest, or the
/// manifest entry that is missing; [`Error::Invalid`] if there is no object at `prefix`;
/// store and I/O failures. Whatever was copied stays in `dest`: the caller removes it.
pub fn copy_object(source: &dyn ObjectStorage, prefix: &str, dest: &Path) -> Result<Inventory> {
    let inventory = read_checked_inventory(source, prefix, INVENTORY)?
        .ok_or_else(|| Error::Invalid(format!("{prefix}: no OCFL object (no {INVENTORY})")))?;
    let algorithm = inventory.content_digest()?;
    let mut expected = manifest_paths(&inventory);
    for version in inventory.versions.keys() {
        read_checked_inventory(source, prefix, &format!("{version}/{INVENTORY}"))?;
    }
    if let Some(head) = read_checked_inventory(source, prefix, HEAD_INVENTORY)? {
        expected.extend(manifest_paths(&head));
    }
    for file in source.list(prefix)? {
        let rel = &file.key[prefix.len() + 1..];
        let target = dest.join(rel);
        let parent = target.parent().expect("a file below dest");
        fs::create_dir_all(parent).at(parent)?;
        let digest = copy_file(source, &file.key, &target, algorithm)?;
        if let Some(want) = expected.remove(rel) {
            if !want.eq_ignore_ascii_case(&digest) {
                return Err(Error::Mismatch(format!(
                    "{}: its {} digest is {digest}, the inventory records {want}",
                    file.key,
                    algorithm.ocfl_name()
                )));
            }
        }
    }
    if let Some(missing) = expected.keys().next() {
        return Err(Error::Mismatch(format!(
            "{prefix}/{missing}: in the manifest, but not in the object"
        )));
    }
    Ok(inventory)
}

/// Every content path of `inventory`'s manifest with its digest.
fn manifest_paths(inventory: &Inventory) -> BTreeMap<String, String> {
    inventory
        .manifest
        .iter()
        .flat_map(|(digest, paths)| paths.iter().map(|p| (p.clone(), digest.clone())))
        .collect()
}

/// Reads and parses the inventory `rel` of the object at `prefix`, after checking it
/// against its sidecar; `None` if there is no such file.
fn read_checked_inventory(
    source: &dyn ObjectStorage,
    prefix: &str,
    rel: &str,
) -> Result<Option<Inventory>> {
    let key = format!("{prefix}/{rel}");
    if source.metadata(&key)?.is_none() {
        return Ok(None);
    }
    let dir = key.strip_suffix(&format!("/{INVENTORY}")).unwrap_or(&key);
    if !check_sidecar_in(source, dir)? {
        return Err(Error::Mismatch(format!(
            "{key}: its digest does not match its sidecar"
        )));
    }
    let bytes = source.read(&key)?.bytes;
    Inventory::from_slice(&bytes)
        .map(Some)
        .map_err(|source| Error::Json {
            path: key.into(),
            source,
        })
}

/// Streams the file `key` of `source` into the new local file `target` and returns its
/// `algorithm` digest (lowercase hex).
fn copy_file(
    source: &dyn ObjectStorage,
    key: &str,
    target: &Path,
    algorithm: DigestAlgorithm,
) -> Result<String> {
    let mut reader = source.read_range(key, 0..u64::MAX)?;
    let mut out = fs::File::create_new(target).at(target)?;
    let mut hasher = MultiHasher::new(&[algorithm]);
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = reader.read(&mut buf).at(Path::new(key))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).at(target)?;
    }
    out.sync_all().at(target)?;
    Ok(hasher
        .finish()
        .pop()
        .map(|d| d.hex)
        .expect("one algorithm asked for"))
}

impl OcflRoot {
    /// Writes the files that declare this root and its layout (as they are here) into the
    /// local directory `dest`, making it an empty storage root of the same layout.
    pub fn copy_root_files(&self, dest: &Path) -> Result<()> {
        for name in ROOT_FILES {
            let bytes = self.read_file(name)?;
            let target = dest.join(name);
            let parent = target.parent().expect("a file below dest");
            fs::create_dir_all(parent).at(parent)?;
            arca_storage::fsutil::write_new(&target, &bytes).at(&target)?;
        }
        Ok(())
    }

    /// Copies the object at `prefix` of another store (see [`copy_object`]: every digest
    /// checked) into a fresh directory of the staging area, ready for
    /// [`install_built`](Self::install_built) under the id its inventory names.
    ///
    /// # Errors
    /// As [`copy_object`]; [`Error::Invalid`] for an inventory whose id is not the id
    /// of a Fedora resource (`info:fedora/…`). Nothing stays in the staging area.
    pub fn copy_in(&self, source: &dyn ObjectStorage, prefix: &str) -> Result<BuiltObject> {
        let mut built = BuiltObject::new(
            self.staging
                .join(format!("copy-{}", uuid::Uuid::new_v4().simple())),
            empty_inventory("", self.digest_algorithm()),
        );
        built.inventory = copy_object(source, prefix, built.dir())?;
        let id = &built.inventory.id;
        if id != "info:fedora" && !id.starts_with("info:fedora/") {
            return Err(Error::Invalid(format!(
                "{prefix}: object id {id:?} is not a Fedora resource id (info:fedora/…)"
            )));
        }
        built.object_id = id.clone();
        Ok(built)
    }

    /// Whether this root holds object `object_id` with exactly the root inventory of the
    /// object at `prefix` in `source` (a copy already imported); `None` if it holds no
    /// object of that id.
    pub fn holds_same(
        &self,
        object_id: &str,
        source: &dyn ObjectStorage,
        prefix: &str,
    ) -> Result<Option<bool>> {
        let key = format!("{}/{INVENTORY}", self.object_key(object_id));
        if self.store().metadata(&key)?.is_none() {
            return Ok(None);
        }
        let here = self.read_file(&key)?;
        let there = source.read(&format!("{prefix}/{INVENTORY}"))?.bytes;
        Ok(Some(here == there))
    }
}
