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
use crate::inventory::sidecar_for;
use crate::root::{empty_inventory, sidecar, HEAD_INVENTORY, INVENTORY};
use crate::{check_sidecar_in, Error, Inventory, OcflRoot, Result};

/// The files that make a directory an OCFL storage root in Fedora 6's layout (declaration,
/// layout description, layout extension configuration), copied as they are on export and
/// into a new replica.
pub const ROOT_FILES: [&str; 3] = [
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

/// How a content file is treated when an object moves to another id.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Moved {
    /// Binary content: copied unchanged.
    Unchanged,
    /// A `.fcrepo` header: the ids in its JSON strings are rewritten.
    Header,
    /// An RDF file (N-Triples): the IRIs naming resources of the tree are rewritten.
    Rdf,
}

/// `id` with the tree prefix `from` replaced by `to`, or `None` if `id` is outside the
/// tree (`from` itself, or below it: `from/…`, `from#…`).
pub fn moved_id(id: &str, from: &str, to: &str) -> Option<String> {
    let rest = id.strip_prefix(from)?;
    (rest.is_empty() || rest.starts_with('/') || rest.starts_with('#'))
        .then(|| format!("{to}{rest}"))
}

/// `text` with every occurrence of `open` + `from`, ending at `/`, `#` or `close`, given
/// the prefix `to` instead (an IRI `<info:fedora/a/…>` in N-Triples, a JSON string
/// `"info:fedora/a…"` in a header); anything else (`info:fedora/ab`, literals) is kept.
fn rewrite_prefixed(text: &[u8], open: u8, close: u8, from: &str, to: &str) -> Vec<u8> {
    let mut needle = vec![open];
    needle.extend_from_slice(from.as_bytes());
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with(&needle) {
            let next = text.get(i + needle.len()).copied();
            if matches!(next, Some(b'/' | b'#')) || next == Some(close) {
                out.push(open);
                out.extend_from_slice(to.as_bytes());
                i += needle.len();
                continue;
            }
        }
        out.push(text[i]);
        i += 1;
    }
    out
}

impl Moved {
    /// The new bytes of a file of this kind for the move `from` → `to`.
    fn rewrite(self, bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
        match self {
            Moved::Unchanged => bytes.to_vec(),
            Moved::Header => rewrite_prefixed(bytes, b'"', b'"', from, to),
            Moved::Rdf => rewrite_prefixed(bytes, b'<', b'>', from, to),
        }
    }
}

/// The logical paths of version `state` that hold binary content: the `contentPath` of
/// every header whose interaction model is a NonRDFSource.
fn binary_paths(
    dir: &Path,
    inventory: &Inventory,
    state: &BTreeMap<String, Vec<String>>,
) -> Result<std::collections::BTreeSet<String>> {
    let mut binaries = std::collections::BTreeSet::new();
    for (digest, paths) in state {
        if !paths.iter().any(|p| p.starts_with(".fcrepo/")) {
            continue;
        }
        let content = inventory
            .content_path_for(digest)
            .ok_or_else(|| Error::Invalid(format!("{digest}: not in the manifest")))?;
        let file = dir.join(content);
        let bytes = fs::read(&file).at(&file)?;
        let header: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|source| Error::Json {
                path: file.clone(),
                source,
            })?;
        let model = header["interactionModel"].as_str().unwrap_or_default();
        if model.ends_with("NonRDFSource") {
            if let Some(p) = header["contentPath"].as_str() {
                binaries.insert(p.to_string());
            }
        }
    }
    Ok(binaries)
}

impl BuiltObject {
    /// Moves this copied object (see [`OcflRoot::copy_in`]) from the tree `from` to the
    /// tree `to` (object ids, `info:fedora/…`): its id, and in every version the ids in its
    /// `.fcrepo` headers and the IRIs of its RDF files that name resources of the tree
    /// (subjects and objects, hash URIs included) take the new prefix; binary content is
    /// kept byte for byte. Each rewritten file is stored under its new digest in the
    /// manifest and every version state; versions keep their dates, users and messages;
    /// every version inventory, the root inventory and their sidecars are written anew.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an object outside the tree `from`, one with a mutable HEAD
    /// (unversioned changes), or one whose same bytes are both binary content and a file
    /// to rewrite; I/O failures. The caller drops the object on error.
    pub fn move_tree(&mut self, from: &str, to: &str) -> Result<()> {
        let dir = self.dir().to_path_buf();
        let mut inventory = self.inventory.clone();
        let new_id = moved_id(&inventory.id, from, to)
            .ok_or_else(|| Error::Invalid(format!("{}: not in the tree {from}", inventory.id)))?;
        if dir.join(HEAD_INVENTORY).exists() {
            return Err(Error::Invalid(format!(
                "{}: it has unversioned changes (a mutable HEAD); commit them first",
                inventory.id
            )));
        }
        let algorithm = inventory.content_digest()?;
        // What each stored file is, from the logical paths that name it.
        let mut kinds: BTreeMap<String, Moved> = BTreeMap::new();
        let mut clash = std::collections::BTreeSet::new();
        for version in inventory.versions.values() {
            let binaries = binary_paths(&dir, &inventory, &version.state)?;
            for (digest, paths) in &version.state {
                for p in paths {
                    let kind = if p.starts_with(".fcrepo/") {
                        Moved::Header
                    } else if p.ends_with(".nt") && !binaries.contains(p) {
                        Moved::Rdf
                    } else {
                        Moved::Unchanged
                    };
                    match kinds.insert(digest.clone(), kind) {
                        Some(k) if k != kind => {
                            clash.insert(digest.clone());
                        }
                        _ => {}
                    }
                }
            }
        }
        let mut renamed: BTreeMap<String, String> = BTreeMap::new();
        let mut rewritten_paths = std::collections::BTreeSet::new();
        for (digest, kind) in &kinds {
            if *kind == Moved::Unchanged {
                continue;
            }
            let paths = inventory.manifest.get(digest).cloned().unwrap_or_default();
            let Some(first) = paths.first() else {
                continue;
            };
            let file = dir.join(first);
            let bytes = fs::read(&file).at(&file)?;
            let moved = kind.rewrite(&bytes, from, to);
            if moved == bytes {
                continue;
            }
            if clash.contains(digest) {
                return Err(Error::Invalid(format!(
                    "{}: {first} is both binary content and RDF or a header",
                    inventory.id
                )));
            }
            let mut hasher = MultiHasher::new(&[algorithm]);
            hasher.update(&moved);
            let new = hasher.finish().pop().expect("one algorithm").hex;
            for p in &paths {
                let target = dir.join(p);
                fs::remove_file(&target).at(&target)?;
                arca_storage::fsutil::write_new(&target, &moved).at(&target)?;
                rewritten_paths.insert(p.clone());
            }
            renamed.insert(digest.clone(), new);
        }
        let rename = |map: &mut BTreeMap<String, Vec<String>>| {
            for (old, new) in &renamed {
                if let Some(paths) = map.remove(old) {
                    let entry = map.entry(new.clone()).or_default();
                    entry.extend(paths);
                    entry.sort();
                    entry.dedup();
                }
            }
        };
        rename(&mut inventory.manifest);
        for version in inventory.versions.values_mut() {
            rename(&mut version.state);
        }
        // A fixity entry of a rewritten file would name its old bytes.
        for block in inventory.fixity.values_mut() {
            if let Some(digests) = block.as_object_mut() {
                digests.retain(|_, paths| {
                    !paths.as_array().is_some_and(|ps| {
                        ps.iter()
                            .any(|p| p.as_str().is_some_and(|p| rewritten_paths.contains(p)))
                    })
                });
            }
        }
        inventory.id = new_id.clone();
        self.write_inventories(&inventory, algorithm)?;
        self.inventory = inventory;
        self.object_id = new_id;
        Ok(())
    }

    /// Writes every version's inventory (the root inventory as it was at that version)
    /// and sidecar, and the root inventory and sidecar, replacing those there.
    fn write_inventories(&self, inventory: &Inventory, algorithm: DigestAlgorithm) -> Result<()> {
        let dir = self.dir();
        let nums: Vec<_> = inventory.versions.keys().copied().collect();
        for (i, num) in nums.iter().enumerate() {
            let mut at = inventory.clone();
            at.head = *num;
            at.versions.retain(|n, _| n <= num);
            let dirs: Vec<String> = nums[..=i].iter().map(|n| format!("{n}/")).collect();
            at.manifest = inventory
                .manifest
                .iter()
                .filter_map(|(d, paths)| {
                    let kept: Vec<String> = paths
                        .iter()
                        .filter(|p| dirs.iter().any(|v| p.starts_with(v.as_str())))
                        .cloned()
                        .collect();
                    (!kept.is_empty()).then(|| (d.clone(), kept))
                })
                .collect();
            let mut places = vec![format!("{num}/")];
            if i + 1 == nums.len() {
                places.push(String::new());
            }
            let bytes = at.to_bytes();
            for place in places {
                for (name, content) in [
                    (INVENTORY.to_string(), bytes.clone()),
                    (
                        sidecar(algorithm),
                        sidecar_for(algorithm, &bytes).into_bytes(),
                    ),
                ] {
                    let target = dir.join(format!("{place}{name}"));
                    if target.exists() {
                        fs::remove_file(&target).at(&target)?;
                    }
                    arca_storage::fsutil::write_new(&target, &content).at(&target)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moved_tree_renames_its_own_ids_and_no_other() {
        let (from, to) = ("info:fedora/t", "info:fedora/x/t2");
        assert_eq!(moved_id("info:fedora/t", from, to).as_deref(), Some(to));
        assert_eq!(
            moved_id("info:fedora/t/a#h", from, to).as_deref(),
            Some("info:fedora/x/t2/a#h")
        );
        assert_eq!(moved_id("info:fedora/tx", from, to), None);
        assert_eq!(moved_id("info:fedora/other", from, to), None);
    }

    #[test]
    fn rdf_iris_inside_the_tree_are_rewritten_and_literals_and_outside_iris_kept() {
        let nt = "<info:fedora/t> <p> <info:fedora/t/a> .\n\
                  <info:fedora/t#h> <p> <info:fedora/tx> .\n\
                  <info:fedora/t/a> <p> \"info:fedora/t/a\" .\n";
        let moved = Moved::Rdf.rewrite(nt.as_bytes(), "info:fedora/t", "info:fedora/u");
        assert_eq!(
            String::from_utf8(moved).unwrap(),
            "<info:fedora/u> <p> <info:fedora/u/a> .\n\
             <info:fedora/u#h> <p> <info:fedora/tx> .\n\
             <info:fedora/u/a> <p> \"info:fedora/t/a\" .\n"
        );
        let json = r#"{"id":"info:fedora/t/a","parent":"info:fedora/t","x":"info:fedora/tt"}"#;
        let moved = Moved::Header.rewrite(json.as_bytes(), "info:fedora/t", "info:fedora/u");
        assert_eq!(
            String::from_utf8(moved).unwrap(),
            r#"{"id":"info:fedora/u/a","parent":"info:fedora/u","x":"info:fedora/tt"}"#
        );
    }
}
