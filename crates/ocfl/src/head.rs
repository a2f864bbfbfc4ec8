//! OCFL extension 0005 (mutable HEAD), written as ocfl-java writes it for Fedora 6 with
//! auto-versioning off (see OCFL-FEDORA.md §2.6 and the sample objects `mh1`/`mh2`):
//!
//! * A new object first gets an empty `v1` ("Auto-generated empty object version.", user
//!   `ocfl-java`), then the mutable HEAD `v2`.
//! * Revision `rN` of the head writes the marker `revisions/rN` (content `rN`), its new
//!   content under `head/content/rN/`, then the head inventory and sidecar, whose manifest
//!   paths are relative to the object (`extensions/0005-mutable-head/head/content/rN/…`).
//!   The first revision also copies the root sidecar to `root-inventory.json.<algorithm>`
//!   (`.sha512` or `.sha256`, the object's digest algorithm, as every sidecar is named).
//!   Older markers go, and so does head content the head state no longer references.
//! * The commit moves the head content to `vN/content/rN/…` (the revision segment stays),
//!   writes `vN`'s and the root inventory, and removes the extension directory.

use std::collections::{BTreeMap, HashSet};

use arca_model::{DigestAlgorithm, DigestValue};
use arca_storage::{ObjectStorage, StoreError};

use crate::inventory::sidecar_for;
use crate::record::RecordFile;
use crate::root::{
    apply_changes, empty_inventory, head_sidecar, inventory_instant, new_version_entry,
    push_version_inventories, root_sidecar_copy, sidecar, StagedKind, HEAD_INVENTORY, MUTABLE_HEAD,
    MUTABLE_HEAD_EXT, OBJECT_NAMASTE, REVISIONS,
};
use crate::{
    Change, Error, Inventory, ObjectState, OcflRoot, Result, Staged, User, Version, VersionInfo,
    VersionNum,
};

/// The message of the empty `v1` ocfl-java creates before a new object's mutable HEAD.
pub const AUTO_V1_MESSAGE: &str = "Auto-generated empty object version.";
/// The user of that version.
pub const AUTO_V1_USER_NAME: &str = "ocfl-java";
/// Its address.
pub const AUTO_V1_USER_ADDRESS: &str = "https://github.com/OCFL/ocfl-java";

/// The revision numbers of the markers in the `revisions/` directory of the object whose
/// root is `prefix`, ascending.
pub(crate) fn revision_markers(store: &dyn ObjectStorage, prefix: &str) -> Result<Vec<u32>> {
    let listing = store.list_dir(&format!("{prefix}/{REVISIONS}"))?;
    let mut out: Vec<u32> = listing
        .files
        .iter()
        .filter_map(|f| f.key.rsplit('/').next().and_then(parse_revision))
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// `rN` → N (N > 0).
fn parse_revision(s: &str) -> Option<u32> {
    let digits = s.strip_prefix('r')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|n| *n > 0)
}

/// The content directory of revision `revision` of the mutable HEAD, relative to the
/// object.
pub(crate) fn revision_content_dir(inventory: &Inventory, revision: u32) -> String {
    format!("{MUTABLE_HEAD}/{}/r{revision}", inventory.content_dir())
}

/// The revision after the head's latest: after the newest marker and after every
/// revision directory its manifest names.
fn next_revision(current: &ObjectState) -> u32 {
    let prefix = format!("{MUTABLE_HEAD}/{}/", current.inventory.content_dir());
    let in_manifest = current
        .inventory
        .manifest
        .values()
        .flatten()
        .filter_map(|p| p.strip_prefix(&prefix))
        .filter_map(|rest| rest.split('/').next().and_then(parse_revision))
        .max();
    current.revision().max(in_manifest).unwrap_or(0) + 1
}

/// Drops from the manifest the head content the head state no longer references (content
/// an earlier revision added and a later one replaced or removed). Returns its paths.
fn prune_head_content(inventory: &mut Inventory, state: &BTreeMap<String, String>) -> Vec<String> {
    let head_prefix = format!("{MUTABLE_HEAD}/");
    let live: HashSet<&str> = state.values().map(String::as_str).collect();
    let mut removed = Vec::new();
    inventory.manifest.retain(|digest, paths| {
        if live.contains(digest.as_str()) {
            return true;
        }
        paths.retain(|p| {
            let in_head = p.starts_with(&head_prefix);
            if in_head {
                removed.push(p.clone());
            }
            !in_head
        });
        !paths.is_empty()
    });
    removed
}

/// Refuses to touch a mutable HEAD whose object root changed since the head was created
/// (the extension's version conflict): its copy of the root sidecar must name the same
/// digest as the root sidecar.
pub(crate) fn check_root_unchanged(
    store: &dyn ObjectStorage,
    prefix: &str,
    object_id: &str,
    algorithm: DigestAlgorithm,
) -> Result<()> {
    let copy = match store.read(&format!("{prefix}/{}", root_sidecar_copy(algorithm))) {
        Ok(c) => c.bytes,
        // Nothing to compare with (not written by ocfl-java or arca).
        Err(StoreError::NotFound { .. }) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let root = store
        .read(&format!("{prefix}/{}", sidecar(algorithm)))?
        .bytes;
    let digest = |s: &[u8]| {
        String::from_utf8_lossy(s)
            .split_whitespace()
            .next()
            .map(str::to_ascii_lowercase)
    };
    if digest(&copy) != digest(&root) {
        return Err(Error::Invalid(format!(
            "object {object_id}: the root inventory changed after its mutable HEAD was created \
             (version conflict)"
        )));
    }
    Ok(())
}

impl OcflRoot {
    /// A new revision of the object's mutable HEAD (creating the head, and for a new
    /// object the empty `v1` before it).
    pub(crate) fn stage_revision(
        &self,
        object_id: &str,
        current: Option<&ObjectState>,
        changes: Vec<Change>,
        info: VersionInfo,
    ) -> Result<Staged> {
        let object_prefix = self.object_key(object_id);
        let mut files = Vec::new();
        let is_new_object = current.is_none();
        let algorithm = match current {
            Some(c) => c.inventory.content_digest()?,
            None => self.digest_algorithm(),
        };
        let (mut inventory, root_sidecar) = match current {
            None => {
                let v1 = VersionNum::first();
                let mut inventory = empty_inventory(object_id, algorithm);
                inventory.versions.insert(
                    v1,
                    Version {
                        created: inventory_instant(&info.created),
                        message: Some(AUTO_V1_MESSAGE.to_string()),
                        user: Some(User {
                            name: AUTO_V1_USER_NAME.to_string(),
                            address: Some(AUTO_V1_USER_ADDRESS.to_string()),
                        }),
                        state: BTreeMap::new(),
                    },
                );
                files.push(RecordFile::inline(
                    OBJECT_NAMASTE,
                    b"ocfl_object_1.1\n".to_vec(),
                ));
                push_version_inventories(&mut files, v1, &inventory)?;
                let sidecar = sidecar_for(algorithm, &inventory.to_bytes()).into_bytes();
                (inventory, Some(sidecar))
            }
            Some(c) if !c.mutable_head => {
                // The copy must be byte for byte the root sidecar as it is stored.
                let key = c.key(&sidecar(algorithm));
                (c.inventory.clone(), Some(self.store().read(&key)?.bytes))
            }
            Some(c) => (c.inventory.clone(), None),
        };
        let new_head = root_sidecar.is_some();
        let (version, revision) = match current {
            Some(c) if c.mutable_head => (c.inventory.head, next_revision(c)),
            _ => (inventory.head.next(), 1),
        };
        inventory.head = version;
        let mut state = current
            .map(|c| c.inventory.head_state())
            .unwrap_or_default();
        files.push(RecordFile::inline(
            &format!("{REVISIONS}/r{revision}"),
            format!("r{revision}").into_bytes(),
        ));
        if let Some(sidecar) = root_sidecar {
            files.push(RecordFile::inline(&root_sidecar_copy(algorithm), sidecar));
        }
        let content_prefix = revision_content_dir(&inventory, revision);
        apply_changes(
            &mut inventory,
            &mut state,
            changes,
            &content_prefix,
            &mut files,
        )?;
        inventory
            .versions
            .insert(version, new_version_entry(info, &state));
        let unreferenced = prune_head_content(&mut inventory, &state);
        let bytes = inventory.to_bytes();
        let sidecar = sidecar_for(algorithm, &bytes);
        files.push(RecordFile::inline(HEAD_INVENTORY, bytes));
        files.push(RecordFile::inline(
            &head_sidecar(algorithm),
            sidecar.into_bytes(),
        ));
        // Only the newest revision marker stays, as ocfl-java (2.x) leaves it.
        for old in current.map(|c| &c.revision_markers[..]).unwrap_or_default() {
            files.push(RecordFile::Remove {
                rel: format!("{REVISIONS}/r{old}"),
            });
        }
        for rel in unreferenced {
            files.push(RecordFile::Remove { rel });
        }
        Ok(Staged::new(
            object_id,
            object_prefix,
            StagedKind::Revision {
                revision,
                is_new_object,
                new_head,
            },
            files,
            inventory,
            current,
        ))
    }

    /// The object's mutable HEAD, with `changes` as one more revision, committed as its
    /// immutable version: what ocfl-java's `stageChanges` then `commitStagedChanges`
    /// leave, written in one step.
    pub(crate) fn stage_head_commit(
        &self,
        object_id: &str,
        current: &ObjectState,
        changes: Vec<Change>,
        info: VersionInfo,
    ) -> Result<Staged> {
        let object_prefix = self.object_key(object_id);
        let version = current.inventory.head;
        let revision = next_revision(current);
        let mut inventory = current.inventory.clone();
        let mut state = current.inventory.head_state();
        let mut new_files = Vec::new();
        let content_prefix = format!("{version}/{}/r{revision}", inventory.content_dir());
        apply_changes(
            &mut inventory,
            &mut state,
            changes,
            &content_prefix,
            &mut new_files,
        )?;
        inventory
            .versions
            .insert(version, new_version_entry(info, &state));
        // Unreferenced head content goes with the extension directory.
        prune_head_content(&mut inventory, &state);
        let head_prefix = format!("{MUTABLE_HEAD}/");
        let algorithm = inventory.content_digest()?;
        let mut files = Vec::new();
        for (digest, paths) in inventory.manifest.iter_mut() {
            for path in paths.iter_mut() {
                if let Some(rest) = path.strip_prefix(&head_prefix) {
                    let moved = format!("{version}/{rest}");
                    files.push(RecordFile::Move {
                        rel: moved.clone(),
                        from: path.clone(),
                        digest: DigestValue {
                            algorithm,
                            hex: digest.to_ascii_lowercase(),
                        },
                    });
                    *path = moved;
                }
            }
        }
        rewrite_fixity(&mut inventory, &head_prefix, version);
        files.extend(new_files);
        push_version_inventories(&mut files, version, &inventory)?;
        files.push(RecordFile::Remove {
            rel: MUTABLE_HEAD_EXT.to_string(),
        });
        Ok(Staged::new(
            object_id,
            object_prefix,
            StagedKind::Version {
                version,
                is_new_object: false,
                from_head: true,
            },
            files,
            inventory,
            Some(current),
        ))
    }
}

/// Fixity entries that name head content paths follow them into the version (Fedora
/// writes `fixity:{}`; ocfl-java rewrites these as well).
fn rewrite_fixity(inventory: &mut Inventory, head_prefix: &str, version: VersionNum) {
    for by_digest in inventory.fixity.values_mut() {
        let Some(by_digest) = by_digest.as_object_mut() else {
            continue;
        };
        for paths in by_digest.values_mut() {
            let Some(paths) = paths.as_array_mut() else {
                continue;
            };
            for p in paths.iter_mut() {
                if let Some(rest) = p.as_str().and_then(|s| s.strip_prefix(head_prefix)) {
                    *p = serde_json::Value::String(format!("{version}/{rest}"));
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "head_tests.rs"]
mod tests;
