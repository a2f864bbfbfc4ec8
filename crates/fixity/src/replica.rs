//! Replicas: second copies of the OCFL root in the same layout (a directory or a bucket
//! prefix), each itself a valid root that Fedora 6 and arca open.
//!
//! The [`Replicator`] follows the catalog's change log (the durable queue: a change is in
//! it before it is acknowledged) with one consumer position per replica, copies each
//! changed object once its version is published, and records the position only after the
//! copy is durable, so a crash loses no pending copy. An object is copied file by file
//! (content first, inventories last, the root inventory and sidecar at the very end), what
//! the replica already holds with the same bytes is skipped, and what the primary no
//! longer holds is removed after.
//!
//! What an object copy reads of the primary is fixed first: the root inventory (and a
//! mutable HEAD's), checked against its sidecar. Every content file copied is hashed on
//! the way and compared with the digest that snapshot records, so damage in the primary
//! never travels to a replica: an object with a file whose bytes are wrong keeps its
//! previous state in the replica (the file is counted as `skipped`, the audit reports and
//! repairs it). The snapshot's inventories are written last, so a replica's inventory
//! never names a file the replica lacks, even while the primary moves on during the copy.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arca_catalog::Catalog;
use arca_model::{DigestAlgorithm, FedoraId, MultiHasher};
use arca_ocfl::layout::HashedNTuple;
use arca_ocfl::{Inventory, ObjectStorage, ROOT_FILES};
use arca_repository::Repository;
use arca_storage::StoreError;
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::object::read_opt;
use crate::walk::Walker;
use crate::{Error, Result};

/// The root's declaration: its name says the OCFL version.
const DECLARATION: &str = "0=ocfl_1.1";
/// The layout extension's configuration (which objects go where).
const LAYOUT_CONFIG: &str = "extensions/0004-hashed-n-tuple-storage-layout/config.json";
/// The root inventory of an object.
const INVENTORY: &str = "inventory.json";
/// The directory of the 0005 mutable HEAD within an object.
const MUTABLE_HEAD: &str = "extensions/0005-mutable-head/head";
/// Objects of a non-empty replica compared with the primary when it is opened.
const SAMPLE: usize = 8;
/// Files up to this size are copied in memory; larger ones are streamed through a
/// temporary file.
const IN_MEMORY: u64 = 4 << 20;
/// Files below `extensions/` up to this size may change in place (a mutable HEAD's
/// revision markers): their bytes are compared, not only their size.
const SMALL_MUTABLE: u64 = 64 << 10;
/// How often the snapshot of an object's inventory is read again when it does not match
/// its sidecar (a replacement of the pair caught half-way).
const SNAPSHOT_ATTEMPTS: u32 = 5;

/// One replica root.
#[derive(Debug)]
pub struct Replica {
    name: String,
    store: Arc<dyn ObjectStorage>,
    /// Whether the root it holds was found to be like the primary's (or made so); not
    /// yet when its store was out of reach when it was opened.
    checked: AtomicBool,
}

/// What a copy did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SyncStats {
    /// Objects looked at.
    pub objects: u64,
    /// Files copied.
    pub files: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// Files (or objects) removed because the primary no longer has them.
    pub removed: u64,
    /// Files of the primary not copied because their bytes do not match the digest its
    /// inventory records (or an inventory that does not match its sidecar): damage the
    /// audit repairs. Their objects keep their previous state in the replica.
    pub skipped: u64,
}

impl SyncStats {
    fn add(&mut self, other: SyncStats) {
        self.objects += other.objects;
        self.files += other.files;
        self.bytes += other.bytes;
        self.removed += other.removed;
        self.skipped += other.skipped;
    }
}

impl Replica {
    /// The replica `name` held by `store`. An empty store becomes a root of the primary's
    /// layout (declaration and layout files copied); one holding another root (another
    /// layout, an OCFL version, or objects the primary never had under its layout's keys)
    /// is refused with [`crate::Error::Replica`] saying why.
    pub fn open(
        name: &str,
        store: Arc<dyn ObjectStorage>,
        primary: &dyn ObjectStorage,
    ) -> Result<Self> {
        let replica = Self {
            name: name.to_string(),
            store,
            checked: AtomicBool::new(false),
        };
        match replica.ensure_checked(primary) {
            Ok(()) => {}
            Err(Error::Store(e @ StoreError::Unavailable { .. })) => {
                tracing::warn!(replica = %replica.name, error = %e, "the replica cannot be reached; it is checked and brought up to date once it answers, and writes go on meanwhile");
            }
            Err(e) => return Err(e),
        }
        Ok(replica)
    }

    /// Checks the root the replica holds against the primary's (making an empty store
    /// one), unless that was done.
    ///
    /// # Errors
    /// [`Error::Replica`] for another root; store failures (an unreachable replica).
    pub fn ensure_checked(&self, primary: &dyn ObjectStorage) -> Result<()> {
        if self.checked.load(Ordering::Acquire) {
            return Ok(());
        }
        self.check_root(primary)?;
        self.checked.store(true, Ordering::Release);
        Ok(())
    }

    /// A copy opened without any check, as a repair source or target: the primary itself
    /// (named `primary`) when a replica is audited.
    pub fn unchecked(name: &str, store: Arc<dyn ObjectStorage>) -> Self {
        Self {
            name: name.to_string(),
            store,
            checked: AtomicBool::new(true),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its store.
    pub fn store(&self) -> &Arc<dyn ObjectStorage> {
        &self.store
    }

    fn refuse(&self, message: impl Into<String>) -> Error {
        Error::Replica {
            name: self.name.clone(),
            message: message.into(),
        }
    }

    /// Makes an empty store a root like the primary's, or checks that the root it holds
    /// is one: the same declaration and layout files, and objects the primary has, where
    /// its layout puts them.
    fn check_root(&self, primary: &dyn ObjectStorage) -> Result<()> {
        let top = self.store.list_dir("")?;
        let declared = |files: &[arca_storage::FileInfo]| -> BTreeSet<String> {
            files
                .iter()
                .filter(|f| f.key.starts_with("0="))
                .map(|f| f.key.clone())
                .collect()
        };
        let ours = declared(&primary.list_dir("")?.files);
        if let Some(other) = declared(&top.files).difference(&ours).next() {
            return Err(self.refuse(format!(
                "it holds another kind of root (its declaration is {other}, the primary's {}); give the replica an empty directory or bucket prefix",
                ours.iter().next().map_or("is missing", String::as_str)
            )));
        }
        let mut missing = Vec::new();
        for name in ROOT_FILES {
            let want = primary
                .read(name)
                .map_err(|e| self.refuse(format!("cannot read the primary root's {name}: {e}")))?;
            match self.store.read(name) {
                Ok(have) if have.bytes == want.bytes => {}
                Ok(_) => {
                    return Err(self.refuse(format!(
                        "it holds another root: its {name} differs from the primary's (another layout); give the replica an empty directory or bucket prefix"
                    )))
                }
                Err(StoreError::NotFound { .. }) => missing.push((name, want.bytes)),
                Err(e) => return Err(e.into()),
            }
        }
        let layout = layout_of(primary).map_err(|m| self.refuse(m))?;
        let objects: Vec<String> = Walker::new(self.store.as_ref(), None)
            .take(SAMPLE)
            .collect::<Result<_>>()?;
        if !missing.is_empty() {
            let holds_other = !objects.is_empty()
                || top.dirs.iter().any(|d| d != "extensions")
                || top
                    .files
                    .iter()
                    .any(|f| !ROOT_FILES.contains(&f.key.as_str()));
            if holds_other {
                return Err(self.refuse(format!(
                    "it holds files but no OCFL storage root like the primary's (no {}); give the replica an empty directory or bucket prefix",
                    missing[0].0
                )));
            }
            // The declaration last: a root is one once it is there.
            missing.sort_by_key(|(name, _)| *name == DECLARATION);
            for (name, bytes) in missing {
                self.store.put(name, &bytes)?;
            }
            tracing::info!(replica = %self.name, "made an empty replica a storage root like the primary's");
            return Ok(());
        }
        // An object the primary lacks, or holds with another first version, is another
        // repository's (or one purged while the replica fell behind: a few, never most).
        let (mut same, mut foreign) = (0, Vec::new());
        for prefix in &objects {
            let Some(id) = object_id(self.store.as_ref(), prefix)? else {
                continue;
            };
            if layout.object_key(&id) != *prefix {
                return Err(self.refuse(format!(
                    "it holds object {id} at {prefix}, where the primary's layout does not put it (another layout)"
                )));
            }
            if first_created(primary, prefix)? == first_created(self.store.as_ref(), prefix)? {
                same += 1;
            } else {
                foreign.push(id);
            }
        }
        if foreign.len() > same {
            return Err(self.refuse(format!(
                "{} of the {} objects looked at ({}) are not in the primary, or began there at another time: it holds another repository's root; give the replica an empty directory or bucket prefix",
                foreign.len(),
                same + foreign.len(),
                foreign.join(", ")
            )));
        }
        Ok(())
    }

    /// Makes the object at `object_prefix` in the replica equal to the primary's (or gone,
    /// if the primary has none there).
    pub fn sync_object(
        &self,
        primary: &dyn ObjectStorage,
        object_prefix: &str,
    ) -> Result<SyncStats> {
        let mut stats = SyncStats {
            objects: 1,
            ..Default::default()
        };
        let Some(snapshot) = Snapshot::read(primary, object_prefix)? else {
            // A damaged primary inventory is not copied over the replica's.
            stats.skipped += 1;
            tracing::warn!(replica = %self.name, object = object_prefix, "the primary's inventory does not match its sidecar; the object is not copied (the audit reports it)");
            return Ok(stats);
        };
        if snapshot.inventories.is_empty() {
            if object_exists(self.store.as_ref(), object_prefix)?
                || !self.store.list_dir(object_prefix)?.files.is_empty()
            {
                self.remove_object(object_prefix)?;
                stats.removed += 1;
            }
            return Ok(stats);
        }
        let theirs: BTreeMap<String, arca_storage::FileInfo> = self
            .store
            .list(object_prefix)?
            .into_iter()
            .map(|f| (f.key.clone(), f))
            .collect();
        let recreated = self.recreated(object_prefix, &snapshot)?;
        let ours = primary.list(object_prefix)?;
        let inventory_keys: HashSet<String> = snapshot
            .inventories
            .iter()
            .map(|(k, _)| k.clone())
            .collect();
        // The files the inventories name (content, checked on the way) first, then the
        // others (declarations, markers), then the version inventories.
        let mut order: Vec<(u8, &arca_storage::FileInfo)> = ours
            .iter()
            .filter(|f| !inventory_keys.contains(&f.key))
            .map(|f| {
                let rel = &f.key[object_prefix.len() + 1..];
                let rank = if is_inventory_file(&f.key) {
                    2
                } else if snapshot.digests.contains_key(rel) {
                    0
                } else {
                    1
                };
                (rank, f)
            })
            .collect();
        order.sort_by_key(|(rank, _)| *rank);
        // New files of this copy, taken back if a damaged one stops it.
        let mut added = Vec::new();
        for (_, file) in order {
            let rel = &file.key[object_prefix.len() + 1..];
            let expected = snapshot.digests.get(rel);
            if !recreated && self.holds(&theirs, file, rel, expected, primary)? {
                continue;
            }
            match self.copy_file(primary, &file.key, file.size, expected)? {
                Some(bytes) => {
                    stats.files += 1;
                    stats.bytes += bytes;
                    if !theirs.contains_key(&file.key) {
                        added.push(file.key.clone());
                    }
                }
                None => {
                    stats.skipped += 1;
                    tracing::warn!(replica = %self.name, key = %file.key, "the primary's file does not match the digest its inventory records; not copied, the object keeps its previous state in the replica (the audit reports it)");
                    for key in added {
                        self.store.delete(&key)?;
                        self.remove_empty_dirs_of(&key);
                    }
                    return Ok(stats);
                }
            }
        }
        // The inventories of the snapshot at the very end: the mutable HEAD's, then the
        // root's, each before its sidecar.
        for (key, bytes) in &snapshot.inventories {
            let same = match theirs.get(key) {
                Some(f) if f.size == bytes.len() as u64 && !recreated => {
                    read_opt(self.store.as_ref(), key)?.as_deref() == Some(&bytes[..])
                }
                _ => false,
            };
            if !same {
                self.store.put(key, bytes)?;
                stats.files += 1;
                stats.bytes += bytes.len() as u64;
            }
        }
        // What the primary no longer has (a committed mutable HEAD, a purged version's
        // leftovers): inventories first, so none names a file being removed.
        let keep: HashSet<&str> = ours
            .iter()
            .map(|f| f.key.as_str())
            .chain(inventory_keys.iter().map(String::as_str))
            .collect();
        let mut gone: Vec<&String> = theirs
            .keys()
            .filter(|k| !keep.contains(k.as_str()))
            .collect();
        gone.sort_by_key(|k| !is_inventory_file(k));
        for key in gone {
            self.store.delete(key)?;
            stats.removed += 1;
        }
        Ok(stats)
    }

    /// Whether the replica's object is another object than the primary's at the same key
    /// (purged and created again): a version it has that the primary's inventory lacks,
    /// or has with another creation instant.
    fn recreated(&self, prefix: &str, snapshot: &Snapshot) -> Result<bool> {
        let Some(bytes) = read_opt(self.store.as_ref(), &format!("{prefix}/{INVENTORY}"))? else {
            return Ok(false);
        };
        let Ok(theirs) = Inventory::from_slice(&bytes) else {
            return Ok(true);
        };
        let Some(ours) = &snapshot.root else {
            return Ok(true);
        };
        Ok(theirs.id != ours.id
            || theirs.versions.iter().any(|(num, v)| {
                ours.versions
                    .get(num)
                    .is_none_or(|o| o.created != v.created)
            }))
    }

    /// Whether the replica holds `file` of the primary already: content files and version
    /// inventories are immutable per path (the same size means the same bytes, once
    /// [`recreated`](Self::recreated) objects are set apart); small files below
    /// `extensions/` that no inventory names are compared byte for byte.
    fn holds(
        &self,
        theirs: &BTreeMap<String, arca_storage::FileInfo>,
        file: &arca_storage::FileInfo,
        rel: &str,
        expected: Option<&(DigestAlgorithm, String)>,
        primary: &dyn ObjectStorage,
    ) -> Result<bool> {
        let Some(have) = theirs.get(&file.key) else {
            return Ok(false);
        };
        if have.size != file.size {
            return Ok(false);
        }
        if rel.starts_with("extensions/") && file.size <= SMALL_MUTABLE && expected.is_none() {
            let ours = read_opt(primary, &file.key)?;
            let theirs = read_opt(self.store.as_ref(), &file.key)?;
            return Ok(ours.is_some() && ours == theirs);
        }
        Ok(true)
    }

    /// Copies the file `key` of `primary` (of `size` bytes) into the replica, hashing it
    /// on the way when its digest is `expected`; the bytes copied, or `None` (nothing
    /// written) when they do not match it.
    fn copy_file(
        &self,
        primary: &dyn ObjectStorage,
        key: &str,
        size: u64,
        expected: Option<&(DigestAlgorithm, String)>,
    ) -> Result<Option<u64>> {
        let mut hasher = expected.map(|(a, _)| MultiHasher::new(&[*a]));
        let matches = |hasher: Option<MultiHasher>| match (hasher, expected) {
            (Some(h), Some((_, want))) => h
                .finish()
                .pop()
                .is_some_and(|d| d.hex.eq_ignore_ascii_case(want)),
            _ => true,
        };
        if size <= IN_MEMORY {
            let bytes = primary.read(key)?.bytes;
            if let Some(h) = hasher.as_mut() {
                h.update(&bytes);
            }
            if !matches(hasher) {
                return Ok(None);
            }
            self.store.put(key, &bytes)?;
            return Ok(Some(bytes.len() as u64));
        }
        let temp = TempFile::for_key(self.store.as_ref(), key)?;
        let mut reader = primary.read_range(key, 0..u64::MAX)?;
        let mut out = std::fs::File::create(&temp.0).map_err(|e| Error::Io(temp.0.clone(), e))?;
        let mut buf = vec![0u8; 1 << 20];
        let mut copied = 0u64;
        loop {
            let n = reader
                .read(&mut buf)
                .map_err(|e| Error::Io(PathBuf::from(key), e))?;
            if n == 0 {
                break;
            }
            if let Some(h) = hasher.as_mut() {
                h.update(&buf[..n]);
            }
            out.write_all(&buf[..n])
                .map_err(|e| Error::Io(temp.0.clone(), e))?;
            copied += n as u64;
        }
        drop(out);
        if !matches(hasher) {
            drop(temp);
            self.remove_empty_dirs_of(key);
            return Ok(None);
        }
        self.store.move_file(&temp.0, key)?;
        Ok(Some(copied))
    }

    /// Removes the directories of a local replica that a refused copy of `key` made and
    /// left empty (OCFL wants none).
    fn remove_empty_dirs_of(&self, key: &str) {
        let (Some(root), Some(target)) = (self.store.local_path(""), self.store.local_path(key))
        else {
            return;
        };
        let mut dir = target.parent();
        while let Some(d) = dir.filter(|d| d.starts_with(&root) && *d != root) {
            if std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }

    /// Removes the object at `prefix` from the replica: its inventories first, so that it
    /// reads as absent from then on, then everything else.
    fn remove_object(&self, prefix: &str) -> Result<()> {
        self.store
            .delete(&format!("{prefix}/{MUTABLE_HEAD}/{INVENTORY}"))?;
        self.store.delete(&format!("{prefix}/{INVENTORY}"))?;
        self.store.delete_prefix(prefix)?;
        Ok(())
    }

    /// Makes the whole replica equal to the primary (`arca replica sync`): every object
    /// synced, objects the primary does not have removed; `progress` gets the objects done.
    pub fn sync_root(
        &self,
        primary: &dyn ObjectStorage,
        stop: &AtomicBool,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<SyncStats> {
        self.ensure_checked(primary)?;
        // The walk feeds `PARALLEL` copying threads through a short queue: memory stays
        // bounded by the queue and the objects in hand.
        let stats = Mutex::new(SyncStats::default());
        let done = AtomicU64::new(0);
        let failure: Mutex<Option<Error>> = Mutex::new(None);
        let failed = || failure.lock().is_some() || stop.load(Ordering::Relaxed);
        let (queue, objects) = std::sync::mpsc::sync_channel::<String>(PARALLEL * 4);
        let objects = Mutex::new(objects);
        std::thread::scope(|scope| {
            for _ in 0..PARALLEL {
                scope.spawn(|| loop {
                    let next = objects.lock().recv();
                    let Ok(prefix) = next else { break };
                    if failed() {
                        continue;
                    }
                    match self.sync_object(primary, &prefix) {
                        Ok(s) => {
                            stats.lock().add(s);
                            progress(done.fetch_add(1, Ordering::Relaxed) + 1);
                        }
                        Err(e) => {
                            failure.lock().get_or_insert(e);
                        }
                    }
                });
            }
            for prefix in Walker::new(primary, None) {
                if failed() {
                    break;
                }
                match prefix {
                    Ok(p) => {
                        if queue.send(p).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        failure.lock().get_or_insert(e);
                        break;
                    }
                }
            }
            drop(queue);
        });
        if let Some(e) = failure.into_inner() {
            return Err(e);
        }
        if stop.load(Ordering::Relaxed) {
            return Err(Error::Stopped);
        }
        let mut stats = stats.into_inner();
        for prefix in Walker::new(self.store.as_ref(), None) {
            if stop.load(Ordering::Relaxed) {
                return Err(Error::Stopped);
            }
            let prefix = prefix?;
            if !object_exists(primary, &prefix)? && primary.list_dir(&prefix)?.files.is_empty() {
                self.remove_object(&prefix)?;
                stats.removed += 1;
            }
        }
        Ok(stats)
    }
}

/// The layout of the root held by `store`, from its extension configuration.
fn layout_of(store: &dyn ObjectStorage) -> std::result::Result<HashedNTuple, String> {
    let bytes = store
        .read(LAYOUT_CONFIG)
        .map_err(|e| format!("cannot read the primary root's {LAYOUT_CONFIG}: {e}"))?
        .bytes;
    let json: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the primary root's {LAYOUT_CONFIG} is not JSON: {e}"))?;
    HashedNTuple::from_config(&json)
}

/// Whether an object is at `prefix` (its root inventory or a mutable HEAD's).
fn object_exists(store: &dyn ObjectStorage, prefix: &str) -> Result<bool> {
    Ok(store.metadata(&format!("{prefix}/{INVENTORY}"))?.is_some()
        || store
            .metadata(&format!("{prefix}/{MUTABLE_HEAD}/{INVENTORY}"))?
            .is_some())
}

/// The id of the object at `prefix`, from its root (or mutable HEAD's) inventory.
fn object_id(store: &dyn ObjectStorage, prefix: &str) -> Result<Option<String>> {
    for rel in [INVENTORY.to_string(), format!("{MUTABLE_HEAD}/{INVENTORY}")] {
        if let Some(bytes) = read_opt(store, &format!("{prefix}/{rel}"))? {
            return Ok(Inventory::from_slice(&bytes).ok().map(|i| i.id));
        }
    }
    Ok(None)
}

/// When the object at `prefix` got its first version (from its root inventory), `None`
/// when there is none.
fn first_created(store: &dyn ObjectStorage, prefix: &str) -> Result<Option<String>> {
    let Some(bytes) = read_opt(store, &format!("{prefix}/{INVENTORY}"))? else {
        return Ok(None);
    };
    Ok(Inventory::from_slice(&bytes)
        .ok()
        .and_then(|i| i.versions.values().next().map(|v| v.created.clone())))
}

/// Whether `key` is an inventory or its sidecar.
fn is_inventory_file(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    name == INVENTORY || name.starts_with("inventory.json.")
}

/// The inventories of one object as the primary holds them at one moment, each checked
/// against its sidecar, and the digest of every content path they name.
struct Snapshot {
    /// `(key, bytes)` in the order they are written: the mutable HEAD's inventory and
    /// sidecar, then the root's. Empty when the primary has no object there.
    inventories: Vec<(String, Vec<u8>)>,
    /// The root inventory, parsed.
    root: Option<Inventory>,
    /// Content path (relative to the object) → its algorithm and digest.
    digests: BTreeMap<String, (DigestAlgorithm, String)>,
}

impl Snapshot {
    /// `None` when an inventory does not match its sidecar (read again a few times first:
    /// a replacement of the pair may be under way).
    fn read(store: &dyn ObjectStorage, prefix: &str) -> Result<Option<Self>> {
        let mut snapshot = Snapshot {
            inventories: Vec::new(),
            root: None,
            digests: BTreeMap::new(),
        };
        for dir in [format!("{prefix}/{MUTABLE_HEAD}"), prefix.to_string()] {
            let mut attempt = 0;
            let pair = loop {
                match read_pair(store, &dir)? {
                    Pair::Absent => break None,
                    Pair::Good(pair) => break Some(pair),
                    Pair::Mismatch if attempt + 1 < SNAPSHOT_ATTEMPTS => {
                        attempt += 1;
                        std::thread::sleep(Duration::from_millis(20 << attempt));
                    }
                    Pair::Mismatch => return Ok(None),
                }
            };
            let Some((inventory, bytes, sidecar_key, sidecar)) = pair.map(|p| *p) else {
                continue;
            };
            let algorithm = inventory.content_digest()?;
            for (digest, paths) in &inventory.manifest {
                for path in paths {
                    snapshot
                        .digests
                        .insert(path.clone(), (algorithm, digest.to_ascii_lowercase()));
                }
            }
            snapshot
                .inventories
                .push((format!("{dir}/{INVENTORY}"), bytes));
            snapshot.inventories.push((sidecar_key, sidecar));
            if dir == prefix {
                snapshot.root = Some(inventory);
            }
        }
        Ok(Some(snapshot))
    }
}

enum Pair {
    Absent,
    Mismatch,
    Good(Box<(Inventory, Vec<u8>, String, Vec<u8>)>),
}

/// The inventory in `dir`, its bytes, its sidecar's key and bytes.
fn read_pair(store: &dyn ObjectStorage, dir: &str) -> Result<Pair> {
    let key = format!("{dir}/{INVENTORY}");
    let Some(bytes) = read_opt(store, &key)? else {
        return Ok(Pair::Absent);
    };
    let Ok(inventory) = Inventory::from_slice(&bytes) else {
        return Ok(Pair::Mismatch);
    };
    let Ok(algorithm) = inventory.content_digest() else {
        return Ok(Pair::Mismatch);
    };
    let sidecar_key = format!("{key}.{}", algorithm.ocfl_name());
    let Some(sidecar) = read_opt(store, &sidecar_key)? else {
        return Ok(Pair::Mismatch);
    };
    let recorded = String::from_utf8_lossy(&sidecar);
    if recorded.split_whitespace().next() != Some(&MultiHasher::digest(algorithm, &bytes)[..]) {
        return Ok(Pair::Mismatch);
    }
    Ok(Pair::Good(Box::new((
        inventory,
        bytes,
        sidecar_key,
        sidecar,
    ))))
}

/// A temporary file a large copy is streamed into before the store takes it: beside its
/// target for a local replica (a hidden `*.arca-tmp` name its listings skip and a
/// recovery removes, so the move is a rename), in the system's temporary directory for a
/// remote one. Removed when dropped if still there.
struct TempFile(PathBuf);

impl TempFile {
    fn for_key(store: &dyn ObjectStorage, key: &str) -> Result<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = key.rsplit('/').next().unwrap_or(key);
        let unique = format!(".{name}.{}-r{n}.arca-tmp", std::process::id());
        let path = match store.local_path(key) {
            Some(target) => {
                let dir = target.parent().map(PathBuf::from).unwrap_or_default();
                std::fs::create_dir_all(&dir).map_err(|e| Error::Io(dir.clone(), e))?;
                dir.join(unique)
            }
            None => std::env::temp_dir().join(unique),
        };
        Ok(Self(path))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// How a replica is keeping up, for status, metrics and readiness.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReplicaStatus {
    /// The replica's name.
    pub name: String,
    /// The change-log position copied up to.
    pub position: i64,
    /// Changes not copied yet.
    pub lag: i64,
    /// Objects copied since the server started.
    pub objects_copied: u64,
    /// Bytes copied since the server started.
    pub bytes_copied: u64,
    /// Why the last copy failed, while it is being tried again.
    pub error: Option<String>,
    /// Whether this node copies to the replica (with a catalog shared by several nodes,
    /// one of them does; the others stand by).
    pub copying: bool,
    /// Files of the primary not copied because they do not match their inventory's
    /// digest (damage for the audit), since the server started.
    pub files_skipped: u64,
}

/// The live state of one replica's copying.
#[derive(Debug, Default)]
struct ReplicaState {
    position: AtomicI64,
    objects: AtomicU64,
    bytes: AtomicU64,
    skipped: AtomicU64,
    copying: AtomicBool,
    error: Mutex<Option<String>>,
}

/// Copies every published change to every replica, behind the writes.
#[derive(Debug)]
pub struct Replicator {
    replicas: Vec<Arc<Replica>>,
    states: Vec<Arc<ReplicaState>>,
    last_change: Option<watch::Receiver<i64>>,
}

/// Change-log entries read per batch.
const BATCH: usize = 500;
/// Objects copied at once per replica.
const PARALLEL: usize = 16;
/// The pauses while a replica fails: doubling from the first to the last.
const FIRST_RETRY: Duration = Duration::from_secs(1);
const LAST_RETRY: Duration = Duration::from_secs(30);
/// The position is recorded at most this often while copying (and whenever the replica
/// has caught up, and when copying stops); after a crash at most this much is copied
/// again (finding it already there).
const RECORD_EVERY: Duration = Duration::from_secs(1);
/// How often a node on standby asks whether the replica's copier is gone.
const STANDBY_CHECK: Duration = Duration::from_secs(2);

/// The name of a replica's position among the change log's consumers (and of the role a
/// node takes to copy to it).
pub fn consumer_name(replica: &str) -> String {
    format!("replica:{replica}")
}

impl Replicator {
    /// Starts one task per replica following the change log of `repository` from the
    /// replica's recorded position; they stop when `stop` turns true.
    pub fn start(
        repository: Arc<Repository>,
        replicas: Vec<Arc<Replica>>,
        stop: watch::Receiver<bool>,
    ) -> (Arc<Self>, Vec<JoinHandle<()>>) {
        let states: Vec<Arc<ReplicaState>> = replicas
            .iter()
            .map(|_| Arc::new(ReplicaState::default()))
            .collect();
        let tasks = replicas
            .iter()
            .zip(&states)
            .map(|(replica, state)| {
                let copier = Copier {
                    repo: repository.clone(),
                    replica: replica.clone(),
                    state: state.clone(),
                };
                tokio::spawn(copier.run(stop.clone()))
            })
            .collect();
        let this = Self {
            replicas,
            states,
            last_change: Some(repository.catalog().last_change()),
        };
        (Arc::new(this), tasks)
    }

    /// Each replica's status.
    pub fn status(&self) -> Vec<ReplicaStatus> {
        let last = self.last_change.as_ref().map_or(0, |l| *l.borrow());
        self.replicas
            .iter()
            .zip(&self.states)
            .map(|(r, s)| {
                let position = s.position.load(Ordering::Acquire);
                ReplicaStatus {
                    name: r.name.clone(),
                    position,
                    lag: (last - position).max(0),
                    objects_copied: s.objects.load(Ordering::Relaxed),
                    bytes_copied: s.bytes.load(Ordering::Relaxed),
                    error: s.error.lock().clone(),
                    copying: s.copying.load(Ordering::Acquire),
                    files_skipped: s.skipped.load(Ordering::Relaxed),
                }
            })
            .collect()
    }
}

/// The task copying to one replica.
struct Copier {
    repo: Arc<Repository>,
    replica: Arc<Replica>,
    state: Arc<ReplicaState>,
}

/// Why a round of copying failed.
enum Failure {
    Stopped,
    Failed(String),
}

impl Copier {
    async fn run(self, mut stop: watch::Receiver<bool>) {
        let consumer = consumer_name(self.replica.name());
        let catalog = self.repo.catalog().clone();
        let Some(_leadership) = self.lead(&catalog, &consumer, &mut stop).await else {
            return;
        };
        self.state.copying.store(true, Ordering::Release);
        let mut retry = FIRST_RETRY;
        loop {
            let checking = self.blocking(&stop, {
                let replica = self.replica.clone();
                let primary = self.repo.ocfl().store().clone();
                move |_: &AtomicBool| {
                    replica.ensure_checked(primary.as_ref())?;
                    Ok(SyncStats::default())
                }
            });
            match checking.await {
                Ok(_) => break,
                Err(Failure::Stopped) => return,
                Err(Failure::Failed(e)) => {
                    self.failed(&e);
                    if sleep_or_stop(&mut stop, retry).await {
                        return;
                    }
                    retry = (retry * 2).min(LAST_RETRY);
                }
            }
        }
        let mut position = loop {
            match self.start_position(&catalog, &consumer, &stop).await {
                Ok(p) => break p,
                Err(Failure::Stopped) => return,
                Err(Failure::Failed(e)) => {
                    self.failed(&e);
                    if sleep_or_stop(&mut stop, retry).await {
                        return;
                    }
                    retry = (retry * 2).min(LAST_RETRY);
                }
            }
        };
        self.recovered();
        retry = FIRST_RETRY;
        self.state.position.store(position, Ordering::Release);
        tracing::info!(replica = %self.replica.name(), after = position, "copying to the replica");
        let mut last_change = catalog.last_change();
        let mut recorded = position;
        let mut recorded_at = Instant::now();
        let mut caught_up = false;
        loop {
            if *stop.borrow() {
                break;
            }
            // After a short batch the log is read again only once a commit announced more.
            let read = arca_catalog::changes_if_announced(
                &*catalog,
                &last_change,
                caught_up,
                position,
                BATCH,
            );
            let batch = match read.await {
                Ok(b) => b,
                Err(e) => {
                    self.failed(&format!("cannot read the change log: {e}"));
                    if sleep_or_stop(&mut stop, retry).await {
                        break;
                    }
                    retry = (retry * 2).min(LAST_RETRY);
                    continue;
                }
            };
            caught_up = batch.len() < BATCH;
            if batch.is_empty() {
                if recorded != position && record(&catalog, &consumer, position).await {
                    recorded = position;
                    recorded_at = Instant::now();
                }
                last_change.borrow_and_update();
                if *last_change.borrow() > position {
                    continue;
                }
                let closed = tokio::select! {
                    r = last_change.changed() => r.is_err(),
                    r = stop.changed() => r.is_err(),
                };
                if closed {
                    break;
                }
                continue;
            }
            let last = batch.last().map_or(position, |e| e.seq);
            // A fixity event changes no file: nothing to copy for it.
            let ids: BTreeSet<FedoraId> = batch
                .into_iter()
                .filter(|e| e.change.kind.changes_resource())
                .map(|e| e.change.id)
                .collect();
            match self.copy_changed(&catalog, ids, &stop).await {
                Ok(()) => {
                    position = last;
                    self.state.position.store(position, Ordering::Release);
                    self.recovered();
                    retry = FIRST_RETRY;
                    if recorded_at.elapsed() >= RECORD_EVERY
                        && record(&catalog, &consumer, position).await
                    {
                        recorded = position;
                        recorded_at = Instant::now();
                    }
                }
                Err(Failure::Stopped) => break,
                Err(Failure::Failed(e)) => {
                    self.failed(&e);
                    if sleep_or_stop(&mut stop, retry).await {
                        break;
                    }
                    retry = (retry * 2).min(LAST_RETRY);
                }
            }
        }
        if recorded != position {
            record(&catalog, &consumer, position).await;
        }
        tracing::info!(replica = %self.replica.name(), position, "copying to the replica stopped");
    }

    /// Waits until this node holds the replica's role (at once with one node); `None` if
    /// told to stop first.
    async fn lead(
        &self,
        catalog: &Arc<dyn Catalog>,
        consumer: &str,
        stop: &mut watch::Receiver<bool>,
    ) -> Option<arca_catalog::Leadership> {
        let mut said = false;
        loop {
            match catalog.try_lead(consumer).await {
                Ok(Some(l)) => {
                    if said {
                        tracing::info!(replica = %self.replica.name(), "this node now copies to the replica");
                    }
                    return Some(l);
                }
                Ok(None) if !said => {
                    said = true;
                    tracing::info!(replica = %self.replica.name(), "another node copies to the replica; this one stands by");
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(replica = %self.replica.name(), error = %e, "cannot ask who copies to the replica; retrying")
                }
            }
            // On standby, the status shows how far the node that copies has got.
            if let Ok(Some(p)) = catalog.consumer_position(consumer).await {
                self.state.position.store(p, Ordering::Release);
            }
            if sleep_or_stop(stop, STANDBY_CHECK).await {
                return None;
            }
        }
    }

    /// Where copying resumes: the recorded position; for a replica never copied to (or
    /// one whose position the change log no longer reaches), a whole-root sync first,
    /// after which the position is the change log's end when the sync began.
    async fn start_position(
        &self,
        catalog: &Arc<dyn Catalog>,
        consumer: &str,
        stop: &watch::Receiver<bool>,
    ) -> std::result::Result<i64, Failure> {
        let failed = |e: arca_catalog::Error| Failure::Failed(format!("catalog: {e}"));
        let recorded = catalog.consumer_position(consumer).await.map_err(failed)?;
        if let Some(p) = recorded {
            let first = catalog.first_change().await.map_err(failed)?;
            if first == 0 || p + 1 >= first {
                return Ok(p);
            }
        }
        let at = *catalog.last_change().borrow();
        tracing::info!(replica = %self.replica.name(), "the replica has no position in the change log; copying the whole root first");
        self.repo.published().await;
        let stats = self.blocking(stop, {
            let replica = self.replica.clone();
            let primary = self.repo.ocfl().store().clone();
            move |flag: &AtomicBool| replica.sync_root(primary.as_ref(), flag, &|_| {})
        });
        let stats = stats.await?;
        self.count(stats);
        tracing::info!(replica = %self.replica.name(), objects = stats.objects, files = stats.files, bytes = stats.bytes, removed = stats.removed, "the whole root is in the replica");
        catalog
            .set_consumer_position(consumer, at)
            .await
            .map_err(failed)?;
        Ok(at)
    }

    /// Copies the objects of the resources `ids` changed, once their changes are
    /// published.
    async fn copy_changed(
        &self,
        catalog: &Arc<dyn Catalog>,
        ids: BTreeSet<FedoraId>,
        stop: &watch::Receiver<bool>,
    ) -> std::result::Result<(), Failure> {
        let mut objects = BTreeSet::new();
        for id in ids {
            objects.extend(
                objects_of(catalog.as_ref(), &id)
                    .await
                    .map_err(|e| Failure::Failed(format!("catalog: {e}")))?,
            );
        }
        for ocfl_id in &objects {
            self.repo
                .settle(ocfl_id)
                .await
                .map_err(|e| Failure::Failed(format!("waiting for {ocfl_id}: {e}")))?;
        }
        let prefixes: Vec<String> = objects
            .iter()
            .map(|id| self.repo.ocfl().object_key(id))
            .collect();
        let chunk = prefixes.len().div_ceil(PARALLEL).max(1);
        let mut running = Vec::new();
        for part in prefixes.chunks(chunk) {
            let part = part.to_vec();
            let replica = self.replica.clone();
            let primary = self.repo.ocfl().store().clone();
            running.push(self.blocking(stop, move |flag: &AtomicBool| {
                let mut stats = SyncStats::default();
                for prefix in &part {
                    if flag.load(Ordering::Relaxed) {
                        return Err(Error::Stopped);
                    }
                    stats.add(replica.sync_object(primary.as_ref(), prefix)?);
                }
                Ok(stats)
            }));
        }
        let mut first_failure = None;
        for r in running {
            match r.await {
                Ok(stats) => self.count(stats),
                Err(f) => {
                    first_failure.get_or_insert(f);
                }
            }
        }
        match first_failure {
            None => Ok(()),
            Some(f) => Err(f),
        }
    }

    /// Runs `work` on a blocking thread with a flag that turns true when `stop` does.
    fn blocking<F>(
        &self,
        stop: &watch::Receiver<bool>,
        work: F,
    ) -> impl std::future::Future<Output = std::result::Result<SyncStats, Failure>>
    where
        F: FnOnce(&AtomicBool) -> Result<SyncStats> + Send + 'static,
    {
        let flag = Arc::new(AtomicBool::new(*stop.borrow()));
        let mut watcher = stop.clone();
        let raise = flag.clone();
        let watching = tokio::spawn(async move {
            while watcher.changed().await.is_ok() {
                if *watcher.borrow() {
                    raise.store(true, Ordering::Relaxed);
                    return;
                }
            }
        });
        let job = tokio::task::spawn_blocking(move || work(&flag));
        async move {
            let result = job.await;
            watching.abort();
            match result {
                Ok(Ok(stats)) => Ok(stats),
                Ok(Err(Error::Stopped)) => Err(Failure::Stopped),
                Ok(Err(e)) => Err(Failure::Failed(e.to_string())),
                Err(e) => Err(Failure::Failed(format!("the copy failed: {e}"))),
            }
        }
    }

    fn count(&self, stats: SyncStats) {
        self.state
            .objects
            .fetch_add(stats.objects, Ordering::Relaxed);
        self.state.bytes.fetch_add(stats.bytes, Ordering::Relaxed);
        self.state
            .skipped
            .fetch_add(stats.skipped, Ordering::Relaxed);
    }

    /// Logs a failure once (the first of a run of failures, with its reason), and shows it
    /// in the status while copying is tried again.
    fn failed(&self, error: &str) {
        let mut current = self.state.error.lock();
        if current.is_none() {
            tracing::warn!(replica = %self.replica.name(), %error, "cannot copy to the replica; writes go on, and copying is tried again with backoff from where it stopped");
        } else {
            tracing::debug!(replica = %self.replica.name(), %error, "the replica still fails");
        }
        *current = Some(error.to_string());
    }

    fn recovered(&self) {
        if self.state.error.lock().take().is_some() {
            tracing::info!(replica = %self.replica.name(), "the replica is back; copying resumed");
        }
    }
}

/// The OCFL objects a change of `id` may have changed: its record's object, and for a
/// resource that is gone (purged) its own object and the one its nearest remaining
/// ancestor is stored in (an Archival Group it was part of).
async fn objects_of(catalog: &dyn Catalog, id: &FedoraId) -> arca_catalog::Result<Vec<String>> {
    if let Some(record) = catalog.get(id).await? {
        return Ok(vec![record.ocfl_id]);
    }
    let mut out = vec![id.base().as_str().to_string()];
    let mut up = id.base().path_parent();
    while let Some(parent) = up {
        if let Some(record) = catalog.get(&parent).await? {
            out.push(record.ocfl_id);
            break;
        }
        up = parent.path_parent();
    }
    Ok(out)
}

/// Records a replica's position; `false` (logged) when the catalog refused.
async fn record(catalog: &Arc<dyn Catalog>, consumer: &str, position: i64) -> bool {
    match catalog.set_consumer_position(consumer, position).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(%consumer, error = %e, "could not record the replica's position (a restart copies some objects again)");
            false
        }
    }
}

/// Sleeps `pause` unless `stop` turns true first; whether it did.
async fn sleep_or_stop(stop: &mut watch::Receiver<bool>, pause: Duration) -> bool {
    if *stop.borrow() {
        return true;
    }
    tokio::select! {
        _ = tokio::time::sleep(pause) => *stop.borrow(),
        r = stop.changed() => r.is_err() || *stop.borrow(),
    }
}
