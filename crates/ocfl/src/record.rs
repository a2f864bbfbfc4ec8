//! Redo records for the journal: what a committed change wrote into which objects, so that
//! a crash between "durable in the journal" and "durable in the root" can be repaired by
//! writing the same files again.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use arca_model::{DigestAlgorithm, DigestValue, MultiHasher};
use arca_storage::{ObjectStorage, StoreError};

use crate::{Error, OcflRoot, Result, Staged};

const KIND_VERSIONS: u8 = 1;
const KIND_PURGE: u8 = 2;
const KIND_CANCEL: u8 = 3;
const FILE_INLINE: u8 = 1;
/// An upload with its SHA-512 (hex): how every upload was journaled before objects could
/// use sha256, and still how a sha512 object's are.
const FILE_EXTERNAL: u8 = 2;
/// A move with the moved file's SHA-512 (hex), likewise.
const FILE_MOVE: u8 = 3;
const FILE_REMOVE: u8 = 4;
/// An upload with its digest in another algorithm (its OCFL name, then the hex).
const FILE_EXTERNAL_DIGEST: u8 = 5;
/// A move with the moved file's digest in another algorithm.
const FILE_MOVE_DIGEST: u8 = 6;
/// Content copied from elsewhere in the store, with its digest (algorithm named).
const FILE_STORED: u8 = 7;
/// A change under way in a store without a journal (see [`pending_record`]).
const KIND_PENDING: u8 = 4;

/// One file of a recorded version, relative to its object directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RecordFile {
    /// Small content kept in the record itself.
    Inline {
        /// Path below the object directory.
        rel: String,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// A large file, durable on its own before the record was written, moved in from a
    /// local upload file (the last of `locations`).
    External {
        /// Path below the object directory.
        rel: String,
        /// Local files where it may be after a crash, the upload last. (Records written
        /// before the root went through the store name the target's own path first.)
        locations: Vec<PathBuf>,
        /// Its digest, in its object's algorithm.
        digest: DigestValue,
    },
    /// A file already in the object that moves to `rel` (a mutable HEAD's content going
    /// into its new version directory).
    Move {
        /// Path below the object directory where it ends up.
        rel: String,
        /// Path below the object directory where it was.
        from: String,
        /// Its digest, in its object's algorithm, to recognize it after a crash.
        digest: DigestValue,
    },
    /// Content already in the store, outside the object (a transaction's staged upload,
    /// which another node may have received), copied to `rel`.
    Stored {
        /// Path below the object directory.
        rel: String,
        /// Its key in the store (relative to the storage root).
        from: String,
        /// Its digest, in its object's algorithm.
        digest: DigestValue,
    },
    /// A file or directory (with everything in it) that leaves the object; directories left
    /// empty above it go too, up to the object directory.
    Remove {
        /// Path below the object directory.
        rel: String,
    },
}

impl RecordFile {
    pub(crate) fn inline(rel: &str, bytes: Vec<u8>) -> Self {
        Self::Inline {
            rel: rel.to_string(),
            bytes,
        }
    }
}

/// A decoded journal record.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Record {
    /// Versions published together by operation `op`.
    Versions {
        op: String,
        objects: Vec<(String, Vec<RecordFile>)>,
    },
    Purge(Vec<String>),
    /// Operation `op` failed after it was journaled and was undone: do not replay it.
    Cancel(String),
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    /// A file kind that carries a digest, then the digest: SHA-512 as it always was
    /// written (`sha512_kind`, the hex), any other algorithm as `other_kind` with its OCFL
    /// name before the hex.
    fn kind_with_digest(&mut self, sha512_kind: u8, other_kind: u8, digest: &DigestValue) {
        if digest.algorithm == DigestAlgorithm::Sha512 {
            self.u8(sha512_kind);
        } else {
            self.u8(other_kind);
        }
    }
    fn digest(&mut self, digest: &DigestValue) {
        if digest.algorithm != DigestAlgorithm::Sha512 {
            self.str(digest.algorithm.ocfl_name());
        }
        self.str(&digest.hex);
    }
    fn files(&mut self, files: &[RecordFile]) {
        self.u32(files.len() as u32);
        for f in files {
            match f {
                RecordFile::Inline { rel, bytes } => {
                    self.u8(FILE_INLINE);
                    self.str(rel);
                    self.bytes(bytes);
                }
                RecordFile::External {
                    rel,
                    locations,
                    digest,
                } => {
                    self.kind_with_digest(FILE_EXTERNAL, FILE_EXTERNAL_DIGEST, digest);
                    self.str(rel);
                    self.digest(digest);
                    self.u32(locations.len() as u32);
                    for l in locations {
                        self.str(&l.to_string_lossy());
                    }
                }
                RecordFile::Move { rel, from, digest } => {
                    self.kind_with_digest(FILE_MOVE, FILE_MOVE_DIGEST, digest);
                    self.str(rel);
                    self.str(from);
                    self.digest(digest);
                }
                RecordFile::Stored { rel, from, digest } => {
                    self.u8(FILE_STORED);
                    self.str(rel);
                    self.str(from);
                    self.str(digest.algorithm.ocfl_name());
                    self.str(&digest.hex);
                }
                RecordFile::Remove { rel } => {
                    self.u8(FILE_REMOVE);
                    self.str(rel);
                }
            }
        }
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(Error::Invalid("truncated journal record".into()));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn string(&mut self) -> Result<String> {
        String::from_utf8(self.bytes()?.to_vec())
            .map_err(|_| Error::Invalid("journal record holds invalid UTF-8".into()))
    }
    /// A digest written by [`Writer::digest`]: SHA-512 hex for the old file kinds, else
    /// an algorithm name and hex.
    fn digest(&mut self, sha512: bool) -> Result<DigestValue> {
        let algorithm = if sha512 {
            DigestAlgorithm::Sha512
        } else {
            let name = self.string()?;
            DigestAlgorithm::from_ocfl_name(&name).ok_or_else(|| {
                Error::Invalid(format!(
                    "unknown digest algorithm {name:?} in journal record"
                ))
            })?
        };
        Ok(DigestValue {
            algorithm,
            hex: self.string()?,
        })
    }
    fn files(&mut self) -> Result<Vec<RecordFile>> {
        let n = self.u32()?;
        let mut files = Vec::new();
        for _ in 0..n {
            files.push(match self.u8()? {
                FILE_INLINE => RecordFile::Inline {
                    rel: self.string()?,
                    bytes: self.bytes()?.to_vec(),
                },
                kind @ (FILE_EXTERNAL | FILE_EXTERNAL_DIGEST) => {
                    let rel = self.string()?;
                    let digest = self.digest(kind == FILE_EXTERNAL)?;
                    let nl = self.u32()?;
                    let mut locations = Vec::new();
                    for _ in 0..nl {
                        locations.push(PathBuf::from(self.string()?));
                    }
                    RecordFile::External {
                        rel,
                        locations,
                        digest,
                    }
                }
                kind @ (FILE_MOVE | FILE_MOVE_DIGEST) => RecordFile::Move {
                    rel: self.string()?,
                    from: self.string()?,
                    digest: self.digest(kind == FILE_MOVE)?,
                },
                FILE_STORED => RecordFile::Stored {
                    rel: self.string()?,
                    from: self.string()?,
                    digest: self.digest(false)?,
                },
                FILE_REMOVE => RecordFile::Remove {
                    rel: self.string()?,
                },
                other => {
                    return Err(Error::Invalid(format!(
                        "unknown file kind {other} in journal record"
                    )))
                }
            });
        }
        Ok(files)
    }
}

impl Record {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        match self {
            Record::Versions { op, objects } => {
                w.u8(KIND_VERSIONS);
                w.str(op);
                w.u32(objects.len() as u32);
                for (id, files) in objects {
                    w.str(id);
                    w.files(files);
                }
            }
            Record::Purge(ids) => {
                w.u8(KIND_PURGE);
                w.u32(ids.len() as u32);
                for id in ids {
                    w.str(id);
                }
            }
            Record::Cancel(op) => {
                w.u8(KIND_CANCEL);
                w.str(op);
            }
        }
        w.0
    }

    fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader(bytes);
        match r.u8()? {
            KIND_VERSIONS => {
                let op = r.string()?;
                let n = r.u32()?;
                let mut objects = Vec::new();
                for _ in 0..n {
                    let id = r.string()?;
                    let files = r.files()?;
                    objects.push((id, files));
                }
                Ok(Record::Versions { op, objects })
            }
            KIND_PURGE => {
                let n = r.u32()?;
                let mut ids = Vec::new();
                for _ in 0..n {
                    ids.push(r.string()?);
                }
                Ok(Record::Purge(ids))
            }
            KIND_CANCEL => Ok(Record::Cancel(r.string()?)),
            other => Err(Error::Invalid(format!(
                "unknown journal record kind {other}"
            ))),
        }
    }
}

/// The journal record of staged versions published together by operation `op` (any
/// unique string).
pub fn versions_record(op: &str, staged: &[&Staged]) -> Vec<u8> {
    Record::Versions {
        op: op.to_string(),
        objects: staged
            .iter()
            .map(|s| (s.object_id.clone(), s.files.clone()))
            .collect(),
    }
    .encode()
}

/// The journal record saying that operation `op` was undone and must not be replayed.
pub fn cancel_record(op: &str) -> Vec<u8> {
    Record::Cancel(op.to_string()).encode()
}

/// The journal record of objects about to be purged.
pub fn purge_record(object_ids: &[&str]) -> Vec<u8> {
    Record::Purge(object_ids.iter().map(|s| s.to_string()).collect()).encode()
}

/// What [`OcflRoot::recover`] did with a change left under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovered {
    /// The change had taken effect: it is complete now.
    Finished,
    /// It had not: what it wrote is gone, the object is as before.
    Undone,
}

/// How a change of one object under way in a store without a journal is finished or
/// undone by another node (see [`OcflRoot::recover`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    pub(crate) object_id: String,
    /// The commit point and every file after it (empty for a purge).
    pub(crate) commit: Vec<RecordFile>,
    /// Keys (files, or directories with everything below) whose removal undoes what the
    /// change writes before its commit point.
    pub(crate) undo: Vec<String>,
    /// The change takes the whole object out of the root.
    pub(crate) purge: bool,
    /// For a change that creates the object: the root inventory it writes (a new object
    /// with a mutable HEAD gets its empty `v1` before the head's commit point), so that
    /// undoing it still removes the object it made itself.
    pub(crate) creates: Option<Vec<u8>>,
}

impl Pending {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        w.u8(KIND_PENDING);
        w.str(&self.object_id);
        w.u8(u8::from(self.purge));
        w.files(&self.commit);
        w.u32(self.undo.len() as u32);
        for key in &self.undo {
            w.str(key);
        }
        match &self.creates {
            Some(bytes) => {
                w.u8(1);
                w.bytes(bytes);
            }
            None => w.u8(0),
        }
        w.0
    }

    fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader(bytes);
        if r.u8()? != KIND_PENDING {
            return Err(Error::Invalid("not a record of a change under way".into()));
        }
        let object_id = r.string()?;
        let purge = r.u8()? != 0;
        let commit = r.files()?;
        let n = r.u32()?;
        let mut undo = Vec::new();
        for _ in 0..n {
            undo.push(r.string()?);
        }
        let creates = match r.u8()? {
            0 => None,
            _ => Some(r.bytes()?.to_vec()),
        };
        Ok(Self {
            object_id,
            commit,
            undo,
            purge,
            creates,
        })
    }
}

/// The record of a staged change about to be written into a store without a journal,
/// for [`OcflRoot::recover`]: its commit point and what follows, and how to undo what
/// comes before.
pub fn pending_record(staged: &Staged) -> Vec<u8> {
    let commit_point = staged.commit_point();
    let start = staged
        .files
        .iter()
        .position(|f| matches!(f, RecordFile::Inline { rel, .. } if rel == commit_point))
        .unwrap_or(staged.files.len());
    let creates = staged.creates_object().then(|| {
        staged.files.iter().find_map(|f| match f {
            RecordFile::Inline { rel, bytes } if rel == crate::root::INVENTORY => {
                Some(bytes.clone())
            }
            _ => None,
        })
    });
    Pending {
        object_id: staged.object_id.clone(),
        commit: staged.files[start..].to_vec(),
        undo: staged.undo_keys(),
        purge: false,
        creates: creates.flatten(),
    }
    .encode()
}

/// The record of a purge of object `object_id` about to start in a store without a
/// journal: [`OcflRoot::recover`] finishes it.
pub fn pending_purge_record(object_id: &str) -> Vec<u8> {
    Pending {
        object_id: object_id.to_string(),
        commit: Vec::new(),
        undo: Vec::new(),
        purge: true,
        creates: None,
    }
    .encode()
}

/// Removes every file below the directory `prefix` except the keys `keep`.
fn remove_all_but(store: &dyn ObjectStorage, prefix: &str, keep: &[String]) -> Result<()> {
    for file in store.list(prefix)? {
        if !keep.contains(&file.key) {
            store.delete(&file.key)?;
        }
    }
    Ok(())
}

/// Whether the file at `key` exists and has `digest` (compared ignoring case).
fn holds(store: &dyn ObjectStorage, key: &str, digest: &DigestValue) -> Result<bool> {
    match store.read_range(key, 0..u64::MAX) {
        Ok(mut reader) => Ok(digest_matches(&mut reader, digest)),
        Err(StoreError::NotFound { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Whether the local file at `path` exists and has `digest`.
fn holds_local(path: &Path, digest: &DigestValue) -> bool {
    std::fs::File::open(path).is_ok_and(|mut f| digest_matches(&mut f, digest))
}

/// Whether what `reader` reads has `digest` (`false` if reading fails).
fn digest_matches(reader: &mut dyn Read, digest: &DigestValue) -> bool {
    let mut h = MultiHasher::new(&[digest.algorithm]);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(_) => return false,
        }
    }
    h.finish()[0].hex.eq_ignore_ascii_case(&digest.hex)
}

/// What the replayed records do to files after writing them, so that replaying an older
/// record whose upload has since moved on (a mutable HEAD committed into a version) or gone
/// (content a later revision pruned, a purged object) is not mistaken for lost content.
struct Fates<'a> {
    /// (object, path) → the records that move a file away from it, with its new path.
    moved: HashMap<(&'a str, &'a str), Vec<(usize, &'a str)>>,
    /// object → the records that remove a path (a file, or a directory with everything
    /// in it).
    removed: HashMap<&'a str, Vec<(usize, &'a str)>>,
    /// object → the records that put content that only they can reproduce (an upload, a
    /// moved file) at a path, with its digest: (record, path, digest).
    owned: HashMap<&'a str, Vec<(usize, &'a str, &'a DigestValue)>>,
    /// object → the records that purge it.
    purged: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Fates<'a> {
    fn of(records: &'a [Record], cancelled: &HashSet<&str>) -> Self {
        let mut fates = Fates {
            moved: HashMap::new(),
            removed: HashMap::new(),
            owned: HashMap::new(),
            purged: HashMap::new(),
        };
        for (index, record) in records.iter().enumerate() {
            match record {
                Record::Versions { op, objects } if !cancelled.contains(op.as_str()) => {
                    for (id, files) in objects {
                        for f in files {
                            match f {
                                RecordFile::External { rel, digest, .. } => fates
                                    .owned
                                    .entry(id.as_str())
                                    .or_default()
                                    .push((index, rel.as_str(), digest)),
                                RecordFile::Move { rel, from, digest } => {
                                    fates
                                        .moved
                                        .entry((id.as_str(), from.as_str()))
                                        .or_default()
                                        .push((index, rel.as_str()));
                                    fates.owned.entry(id.as_str()).or_default().push((
                                        index,
                                        rel.as_str(),
                                        digest,
                                    ));
                                }
                                RecordFile::Stored { rel, digest, .. } => fates
                                    .owned
                                    .entry(id.as_str())
                                    .or_default()
                                    .push((index, rel.as_str(), digest)),
                                RecordFile::Remove { rel } => fates
                                    .removed
                                    .entry(id.as_str())
                                    .or_default()
                                    .push((index, rel.as_str())),
                                _ => {}
                            }
                        }
                    }
                }
                Record::Purge(ids) => {
                    for id in ids {
                        fates.purged.entry(id.as_str()).or_default().push(index);
                    }
                }
                _ => {}
            }
        }
        fates
    }
}

/// The fates of one record's files: those of the records after it.
#[derive(Clone, Copy)]
struct Later<'a> {
    fates: &'a Fates<'a>,
    record: usize,
    object: &'a str,
}

impl Later<'_> {
    /// The files at or below `rel` that a later record put there with content only it can
    /// reproduce, and that hold that content now: replaying this older record must leave
    /// them alone (a mutable HEAD started after a commit reuses `r1/…` paths). As keys.
    fn protected(&self, store: &dyn ObjectStorage, prefix: &str, rel: &str) -> Result<Vec<String>> {
        let Some(owned) = self.fates.owned.get(self.object) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (i, path, digest) in owned {
            let below = *path == rel || path.strip_prefix(rel).is_some_and(|r| r.starts_with('/'));
            if *i > self.record && below {
                let key = format!("{prefix}/{path}");
                if holds(store, &key, digest)? {
                    out.push(key);
                }
            }
        }
        Ok(out)
    }

    /// Whether a later record purges the object, removes `rel`, or moves it to a place
    /// that holds content with this digest.
    fn accounts_for(
        &self,
        store: &dyn ObjectStorage,
        prefix: &str,
        rel: &str,
        digest: &DigestValue,
    ) -> Result<bool> {
        let after = |i: &usize| *i > self.record;
        if self
            .fates
            .purged
            .get(self.object)
            .is_some_and(|p| p.iter().any(after))
        {
            return Ok(true);
        }
        let removed = self.fates.removed.get(self.object).is_some_and(|r| {
            r.iter().any(|(i, path)| {
                after(i)
                    && (rel == *path
                        || rel
                            .strip_prefix(path)
                            .is_some_and(|rest| rest.starts_with('/')))
            })
        });
        if removed {
            return Ok(true);
        }
        if let Some(moves) = self.fates.moved.get(&(self.object, rel)) {
            for (i, to) in moves {
                if after(i) && holds(store, &format!("{prefix}/{to}"), digest)? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}

impl OcflRoot {
    /// Applies journal records again, in order: every version file they list is
    /// (re)written into its object unless already there with the same content, purges
    /// remove their objects, and cancelled operations are skipped. The temporary files that
    /// writes cut short left in those objects go first. Idempotent. Returns the ids of the
    /// objects touched.
    pub fn replay_all(&self, records: &[Vec<u8>]) -> Result<Vec<String>> {
        let decoded: Vec<Record> = records
            .iter()
            .map(|r| Record::decode(r))
            .collect::<Result<_>>()?;
        let cancelled: HashSet<&str> = decoded
            .iter()
            .filter_map(|r| match r {
                Record::Cancel(op) => Some(op.as_str()),
                _ => None,
            })
            .collect();
        let fates = Fates::of(&decoded, &cancelled);
        let mut touched = Vec::new();
        let mut cleaned = HashSet::new();
        for (index, record) in decoded.iter().enumerate() {
            match record {
                Record::Cancel(_) => {}
                Record::Purge(ids) => {
                    for id in ids {
                        self.purge(id)?;
                        touched.push(id.clone());
                    }
                }
                Record::Versions { op, objects } => {
                    if cancelled.contains(op.as_str()) {
                        continue;
                    }
                    for (id, files) in objects {
                        let prefix = self.object_key(id);
                        // A temporary file of a write the crash cut short is not part of
                        // any version, and OCFL allows nothing else in an object.
                        if cleaned.insert(prefix.clone()) {
                            self.store().remove_leftovers(&prefix)?;
                        }
                        for f in files {
                            let later = Later {
                                fates: &fates,
                                record: index,
                                object: id,
                            };
                            self.replay_file(&prefix, f, later)?;
                        }
                        touched.push(id.clone());
                    }
                }
            }
        }
        Ok(touched)
    }

    /// Finishes or undoes a change of one object that a node left under way in a store
    /// without a journal, from its [`pending_record`] (see `PendingWrite` in the
    /// catalog). Call it holding the object's lock (so that the change's writer is gone).
    /// The change took effect if `decided` (an operation on several objects decided before
    /// its first commit point) or if its commit point holds what the change put there: then
    /// the commit point and every file after it are written again unless already there,
    /// and what the change removes goes ([`Recovered::Finished`]). Otherwise what it wrote
    /// before its commit point is removed ([`Recovered::Undone`]): the object is as it was.
    /// A purge is always finished. Idempotent.
    pub fn recover(&self, record: &[u8], decided: bool) -> Result<Recovered> {
        let pending = Pending::decode(record)?;
        if pending.purge {
            self.purge(&pending.object_id)?;
            return Ok(Recovered::Finished);
        }
        let store = self.store().as_ref();
        let prefix = self.object_key(&pending.object_id);
        store.remove_leftovers(&prefix)?;
        let committed = decided
            || match pending.commit.first() {
                Some(RecordFile::Inline { rel, bytes }) => {
                    match store.read(&format!("{prefix}/{rel}")) {
                        Ok(current) => current.bytes == *bytes,
                        Err(StoreError::NotFound { .. }) => false,
                        Err(e) => return Err(e.into()),
                    }
                }
                _ => false,
            };
        if !committed {
            // Never remove what the object's current state holds (another change that
            // stands): only what nothing refers to is the stopped change's.
            let current = self.read_object_at(&prefix)?;
            let root = match store.read(&format!("{prefix}/{}", crate::root::INVENTORY)) {
                Ok(root) => Some(root.bytes),
                Err(StoreError::NotFound { .. }) => None,
                Err(e) => return Err(e.into()),
            };
            let made_here = root.is_some() && pending.creates == root;
            let root_versions: Vec<String> = match &root {
                Some(bytes) => crate::Inventory::from_slice(bytes)
                    .map(|inv| inv.versions.keys().map(|v| v.to_string()).collect())
                    .unwrap_or_default(),
                None => Vec::new(),
            };
            for key in &pending.undo {
                let referred = match &current {
                    None => false,
                    // The object this change began to create itself goes whole.
                    Some(_) if made_here => false,
                    Some(_) if *key == prefix => true,
                    Some(state) => {
                        let rel = key.strip_prefix(&format!("{prefix}/")).unwrap_or(key);
                        let below = |p: &str| {
                            p == rel || p.strip_prefix(rel).is_some_and(|r| r.starts_with('/'))
                        };
                        // A committed version, or content the current state holds.
                        root_versions.iter().any(|v| v == rel)
                            || state
                                .inventory
                                .manifest
                                .values()
                                .flatten()
                                .any(|p| below(p))
                    }
                };
                if !referred {
                    store.delete(key)?;
                    store.delete_prefix(key)?;
                }
            }
            return Ok(Recovered::Undone);
        }
        let cancelled = HashSet::new();
        let fates = Fates::of(&[], &cancelled);
        let later = Later {
            fates: &fates,
            record: 0,
            object: &pending.object_id,
        };
        for f in &pending.commit {
            self.replay_file(&prefix, f, later)?;
        }
        Ok(Recovered::Finished)
    }

    /// Completes a staged change after a failed [`publish`](Self::publish) or
    /// [`publish_acknowledged`](Self::publish_acknowledged): every file is written again
    /// unless it is already there, exactly as journal replay does. Idempotent.
    pub fn redo(&self, staged: &Staged) -> Result<()> {
        let cancelled = HashSet::new();
        let fates = Fates::of(&[], &cancelled);
        let later = Later {
            fates: &fates,
            record: 0,
            object: &staged.object_id,
        };
        for f in &staged.files {
            self.replay_file(&staged.object_prefix, f, later)?;
        }
        Ok(())
    }

    /// Writes one recorded file of the object whose root is `prefix` again unless it is
    /// already there, or unless what later records do to it (`later`) explains where its
    /// content went.
    fn replay_file(&self, prefix: &str, file: &RecordFile, later: Later<'_>) -> Result<()> {
        let store = self.store().as_ref();
        match file {
            RecordFile::Inline { rel, bytes } => {
                let key = format!("{prefix}/{rel}");
                let current = match store.read(&key) {
                    Ok(c) => Some(c.bytes),
                    Err(StoreError::NotFound { .. }) => None,
                    Err(e) => return Err(e.into()),
                };
                if current.as_deref() == Some(&bytes[..])
                    || !later.protected(store, prefix, rel)?.is_empty()
                {
                    return Ok(());
                }
                // A partial file from the crash is replaced whole.
                store.put(&key, bytes)?;
                Ok(())
            }
            RecordFile::External {
                rel,
                locations,
                digest,
            } => {
                let key = format!("{prefix}/{rel}");
                if holds(store, &key, digest)? || !later.protected(store, prefix, rel)?.is_empty() {
                    return Ok(());
                }
                let target = store.local_path(&key);
                for candidate in locations {
                    if Some(candidate) != target.as_ref() && holds_local(candidate, digest) {
                        store.move_file(candidate, &key)?;
                        return Ok(());
                    }
                }
                if later.accounts_for(store, prefix, rel, digest)? {
                    return Ok(());
                }
                Err(Error::Invalid(format!(
                    "journal replay: content of {key} ({} {}) is nowhere to be found",
                    digest.algorithm.ocfl_name(),
                    digest.hex
                )))
            }
            RecordFile::Move { rel, from, digest } => {
                let key = format!("{prefix}/{rel}");
                if holds(store, &key, digest)? || !later.protected(store, prefix, rel)?.is_empty() {
                    return Ok(());
                }
                let source = format!("{prefix}/{from}");
                if holds(store, &source, digest)? {
                    store.copy(&source, &key)?;
                    return Ok(());
                }
                if later.accounts_for(store, prefix, rel, digest)? {
                    return Ok(());
                }
                Err(Error::Invalid(format!(
                    "journal replay: {key} ({} {}) is neither there nor at {source}",
                    digest.algorithm.ocfl_name(),
                    digest.hex,
                )))
            }
            RecordFile::Stored { rel, from, digest } => {
                let key = format!("{prefix}/{rel}");
                if holds(store, &key, digest)? || !later.protected(store, prefix, rel)?.is_empty() {
                    return Ok(());
                }
                if holds(store, from, digest)? {
                    store.copy(from, &key)?;
                    return Ok(());
                }
                if later.accounts_for(store, prefix, rel, digest)? {
                    return Ok(());
                }
                Err(Error::Invalid(format!(
                    "replay: {key} ({} {}) is neither there nor at {from}",
                    digest.algorithm.ocfl_name(),
                    digest.hex,
                )))
            }
            RecordFile::Remove { rel } => {
                let key = format!("{prefix}/{rel}");
                let keep = later.protected(store, prefix, rel)?;
                if keep.contains(&key) {
                    return Ok(());
                }
                if keep.is_empty() {
                    store.delete(&key)?;
                    store.delete_prefix(&key)?;
                } else {
                    remove_all_but(store, &key, &keep)?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha512(hex: &str) -> DigestValue {
        DigestValue {
            algorithm: DigestAlgorithm::Sha512,
            hex: hex.into(),
        }
    }

    fn sha256(hex: &str) -> DigestValue {
        DigestValue {
            algorithm: DigestAlgorithm::Sha256,
            hex: hex.into(),
        }
    }

    #[test]
    fn records_round_trip() {
        let r = Record::Versions {
            op: "op1".into(),
            objects: vec![(
                "info:fedora/a".into(),
                vec![
                    RecordFile::inline("v1/content/x", b"abc".to_vec()),
                    RecordFile::External {
                        rel: "v1/content/big".into(),
                        locations: vec!["/a".into(), "/b".into()],
                        digest: sha512("00"),
                    },
                    RecordFile::Move {
                        rel: "v2/content/r1/x".into(),
                        from: "extensions/0005-mutable-head/head/content/r1/x".into(),
                        digest: sha512("01"),
                    },
                    RecordFile::External {
                        rel: "v1/content/big2".into(),
                        locations: vec!["/c".into()],
                        digest: sha256("02"),
                    },
                    RecordFile::Move {
                        rel: "v2/content/r1/y".into(),
                        from: "extensions/0005-mutable-head/head/content/r1/y".into(),
                        digest: sha256("03"),
                    },
                    RecordFile::Remove {
                        rel: "extensions/0005-mutable-head".into(),
                    },
                ],
            )],
        };
        assert_eq!(Record::decode(&r.encode()).unwrap(), r);
        let c = Record::Cancel("op1".into());
        assert_eq!(Record::decode(&c.encode()).unwrap(), c);
        let p = Record::Purge(vec!["info:fedora/x".into()]);
        assert_eq!(Record::decode(&p.encode()).unwrap(), p);
        assert!(Record::decode(&[9]).is_err());
    }

    /// Records of sha512 objects are written as before sha256 objects existed, so a
    /// journal left by an older arca replays, and the other way round.
    #[test]
    fn sha512_files_keep_the_original_encoding() {
        let mut old = Writer(Vec::new());
        old.u8(KIND_VERSIONS);
        old.str("op");
        old.u32(1);
        old.str("info:fedora/a");
        old.u32(2);
        old.u8(FILE_EXTERNAL);
        old.str("v1/content/big");
        old.str("aa");
        old.u32(1);
        old.str("/up");
        old.u8(FILE_MOVE);
        old.str("v2/content/r1/x");
        old.str("extensions/0005-mutable-head/head/content/r1/x");
        old.str("bb");
        let record = Record::Versions {
            op: "op".into(),
            objects: vec![(
                "info:fedora/a".into(),
                vec![
                    RecordFile::External {
                        rel: "v1/content/big".into(),
                        locations: vec!["/up".into()],
                        digest: sha512("aa"),
                    },
                    RecordFile::Move {
                        rel: "v2/content/r1/x".into(),
                        from: "extensions/0005-mutable-head/head/content/r1/x".into(),
                        digest: sha512("bb"),
                    },
                ],
            )],
        };
        assert_eq!(record.encode(), old.0);
        assert_eq!(Record::decode(&old.0).unwrap(), record);
    }
}
