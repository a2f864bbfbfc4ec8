//! Redo records for the journal: what a committed change wrote into which objects, so that
//! a crash between "durable in the journal" and "durable in the root" can be repaired by
//! writing the same files again.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use arca_model::{DigestAlgorithm, DigestValue, MultiHasher};
use arca_storage::fsutil;

use crate::error::IoContext;
use crate::root::is_replaced_in_place;
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
    /// A large file, durable on its own before the record was written, found at one of
    /// `locations` (the places it passes through on its way into the object).
    External {
        /// Path below the object directory.
        rel: String,
        /// Where it may be after a crash, most advanced first.
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
                    w.u32(files.len() as u32);
                    for f in files {
                        match f {
                            RecordFile::Inline { rel, bytes } => {
                                w.u8(FILE_INLINE);
                                w.str(rel);
                                w.bytes(bytes);
                            }
                            RecordFile::External {
                                rel,
                                locations,
                                digest,
                            } => {
                                w.kind_with_digest(FILE_EXTERNAL, FILE_EXTERNAL_DIGEST, digest);
                                w.str(rel);
                                w.digest(digest);
                                w.u32(locations.len() as u32);
                                for l in locations {
                                    w.str(&l.to_string_lossy());
                                }
                            }
                            RecordFile::Move { rel, from, digest } => {
                                w.kind_with_digest(FILE_MOVE, FILE_MOVE_DIGEST, digest);
                                w.str(rel);
                                w.str(from);
                                w.digest(digest);
                            }
                            RecordFile::Remove { rel } => {
                                w.u8(FILE_REMOVE);
                                w.str(rel);
                            }
                        }
                    }
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
                    let nf = r.u32()?;
                    let mut files = Vec::new();
                    for _ in 0..nf {
                        files.push(match r.u8()? {
                            FILE_INLINE => RecordFile::Inline {
                                rel: r.string()?,
                                bytes: r.bytes()?.to_vec(),
                            },
                            kind @ (FILE_EXTERNAL | FILE_EXTERNAL_DIGEST) => {
                                let rel = r.string()?;
                                let digest = r.digest(kind == FILE_EXTERNAL)?;
                                let nl = r.u32()?;
                                let mut locations = Vec::new();
                                for _ in 0..nl {
                                    locations.push(PathBuf::from(r.string()?));
                                }
                                RecordFile::External {
                                    rel,
                                    locations,
                                    digest,
                                }
                            }
                            kind @ (FILE_MOVE | FILE_MOVE_DIGEST) => RecordFile::Move {
                                rel: r.string()?,
                                from: r.string()?,
                                digest: r.digest(kind == FILE_MOVE)?,
                            },
                            FILE_REMOVE => RecordFile::Remove { rel: r.string()? },
                            other => {
                                return Err(Error::Invalid(format!(
                                    "unknown file kind {other} in journal record"
                                )))
                            }
                        });
                    }
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

/// Removes everything below `dir` (and `dir` itself once empty) except the files `keep`.
fn remove_all_but(dir: &Path, keep: &[PathBuf]) -> Result<()> {
    for entry in fs::read_dir(dir).at(dir)? {
        let path = entry.at(dir)?.path();
        if keep.contains(&path) {
            continue;
        }
        if fs::symlink_metadata(&path).at(&path)?.is_dir() {
            remove_all_but(&path, keep)?;
        } else {
            fs::remove_file(&path).at(&path)?;
        }
    }
    let _ = fs::remove_dir(dir);
    Ok(())
}

/// Whether the file at `path` exists and has `digest` (compared ignoring case).
fn holds(path: &Path, digest: &DigestValue) -> bool {
    let read = || -> std::io::Result<bool> {
        let mut f = fs::File::open(path)?;
        let mut h = MultiHasher::new(&[digest.algorithm]);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        Ok(h.finish()[0].hex.eq_ignore_ascii_case(&digest.hex))
    };
    read().unwrap_or(false)
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
    /// them alone (a mutable HEAD started after a commit reuses `r1/…` paths).
    fn protected(&self, dir: &Path, rel: &str) -> Vec<PathBuf> {
        let Some(owned) = self.fates.owned.get(self.object) else {
            return Vec::new();
        };
        owned
            .iter()
            .filter(|(i, path, _)| {
                *i > self.record
                    && (*path == rel || path.strip_prefix(rel).is_some_and(|r| r.starts_with('/')))
            })
            .filter(|(_, path, digest)| holds(&dir.join(path), digest))
            .map(|(_, path, _)| dir.join(path))
            .collect()
    }

    /// Whether a later record purges the object, removes `rel`, or moves it to a place
    /// that holds content with this digest.
    fn accounts_for(&self, dir: &Path, rel: &str, digest: &DigestValue) -> bool {
        let after = |i: &usize| *i > self.record;
        if self
            .fates
            .purged
            .get(self.object)
            .is_some_and(|p| p.iter().any(after))
        {
            return true;
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
            return true;
        }
        self.fates.moved.get(&(self.object, rel)).is_some_and(|m| {
            m.iter()
                .any(|(i, to)| after(i) && holds(&dir.join(to), digest))
        })
    }
}

impl OcflRoot {
    /// Applies journal records again, in order: every version file they list is
    /// (re)written into its object unless already there with the same content, purges
    /// remove their objects, and cancelled operations are skipped. Idempotent. Returns the
    /// ids of the objects touched.
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
        for (index, record) in decoded.iter().enumerate() {
            match record {
                Record::Cancel(_) => {}
                Record::Purge(ids) => {
                    for id in ids {
                        if let Some(trash) = self.purge(id)? {
                            self.finish_purge(trash);
                        }
                        touched.push(id.clone());
                    }
                }
                Record::Versions { op, objects } => {
                    if cancelled.contains(op.as_str()) {
                        continue;
                    }
                    for (id, files) in objects {
                        let dir = self.object_dir(id);
                        for f in files {
                            let later = Later {
                                fates: &fates,
                                record: index,
                                object: id,
                            };
                            self.replay_file(&dir, f.clone(), later)?;
                        }
                        touched.push(id.clone());
                    }
                }
            }
        }
        Ok(touched)
    }

    /// Completes a staged change after a failed
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
            self.replay_file(&staged.object_dir, f.clone(), later)?;
        }
        Ok(())
    }

    /// Writes one recorded file again unless it is already there, or unless what later
    /// records do to it (`later`) explains where its content went.
    fn replay_file(&self, dir: &Path, file: RecordFile, later: Later<'_>) -> Result<()> {
        match file {
            RecordFile::Inline { ref rel, ref bytes } => {
                let target = dir.join(rel);
                if fs::read(&target).ok().as_deref() == Some(&bytes[..])
                    || !later.protected(dir, rel).is_empty()
                {
                    return Ok(());
                }
                // A partial file from the crash goes; inventories are replaced atomically.
                if !is_replaced_in_place(rel) {
                    let _ = fs::remove_file(&target);
                }
                self.write_file(dir, &file, true)
            }
            RecordFile::External {
                rel,
                locations,
                digest,
            } => {
                let target = dir.join(&rel);
                if holds(&target, &digest) || !later.protected(dir, &rel).is_empty() {
                    return Ok(());
                }
                for candidate in &locations {
                    if holds(candidate, &digest) {
                        let parent = target.parent().expect("files have parents");
                        fs::create_dir_all(parent).at(parent)?;
                        fs::rename(candidate, &target).at(candidate)?;
                        return Ok(());
                    }
                }
                if later.accounts_for(dir, &rel, &digest) {
                    return Ok(());
                }
                Err(Error::Invalid(format!(
                    "journal replay: content of {} ({} {}) is nowhere to be found",
                    target.display(),
                    digest.algorithm.ocfl_name(),
                    digest.hex
                )))
            }
            RecordFile::Move { rel, from, digest } => {
                let target = dir.join(&rel);
                if holds(&target, &digest) || !later.protected(dir, &rel).is_empty() {
                    return Ok(());
                }
                let source = dir.join(&from);
                if holds(&source, &digest) {
                    let parent = target.parent().expect("files have parents");
                    fs::create_dir_all(parent).at(parent)?;
                    return fs::rename(&source, &target).at(&source);
                }
                if later.accounts_for(dir, &rel, &digest) {
                    return Ok(());
                }
                Err(Error::Invalid(format!(
                    "journal replay: {} ({} {}) is neither there nor at {}",
                    target.display(),
                    digest.algorithm.ocfl_name(),
                    digest.hex,
                    source.display()
                )))
            }
            RecordFile::Remove { rel } => {
                let target = dir.join(&rel);
                let keep = later.protected(dir, &rel);
                match fs::symlink_metadata(&target) {
                    Ok(_) if keep.contains(&target) => return Ok(()),
                    Ok(m) if m.is_dir() && !keep.is_empty() => remove_all_but(&target, &keep)?,
                    Ok(m) if m.is_dir() => fs::remove_dir_all(&target).at(&target)?,
                    Ok(_) => fs::remove_file(&target).at(&target)?,
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) => return Err(e).at(&target),
                }
                fsutil::remove_empty_parents(&target, dir);
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
