//! Repairs: a damaged or missing file replaced from a copy whose digest is the one the
//! inventory records. Never the other way round (no copy without a good digest), never
//! over a file whose digest is right, atomically (a temporary key renamed, or an S3 PUT),
//! verified again after.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use arca_model::{DigestAlgorithm, MultiHasher};
use arca_ocfl::{Inventory, ObjectStorage, VersionNum};

use crate::object::{
    hash_key, read_inventories, sidecar_digest, sidecar_name, HashError, INVENTORY, MUTABLE_HEAD,
    NEVER,
};
use crate::object::{join, read_opt};
use crate::rate::RateLimiter;
use crate::report::{Finding, FindingKind};
use crate::{Error, Result};

/// A copy a repair may take files from.
pub struct Source<'a> {
    /// Its name, for the report (`primary`, a replica's name).
    pub name: &'a str,
    /// Its store.
    pub store: &'a dyn ObjectStorage,
}

/// What a repair did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepairOutcome {
    /// Replaced from the named copy, and verified again.
    Repaired {
        /// The copy the good bytes came from.
        from: String,
    },
    /// No copy holds bytes with the recorded digest; nothing was changed.
    NoGoodCopy(String),
    /// A finding a repair cannot address (a catalog mismatch); nothing was changed.
    NotRepairable(String),
}

/// Repairs `finding` about the object whose root is `object_prefix` in `target`, from the
/// first of `sources` that holds a good copy. The caller holds the object's lock when a
/// server runs. Large files are staged in the system's temporary directory (see
/// [`repair_in`]).
pub fn repair(
    target: &dyn ObjectStorage,
    object_prefix: &str,
    finding: &Finding,
    sources: &[Source<'_>],
) -> Result<RepairOutcome> {
    repair_in(
        target,
        object_prefix,
        finding,
        sources,
        &std::env::temp_dir(),
    )
}

/// [`repair`], staging large files and whole objects in the local directory `staging`.
pub fn repair_in(
    target: &dyn ObjectStorage,
    object_prefix: &str,
    finding: &Finding,
    sources: &[Source<'_>],
    staging: &Path,
) -> Result<RepairOutcome> {
    if sources.is_empty() {
        return Ok(RepairOutcome::NoGoodCopy("no copy to repair from".into()));
    }
    let repair = Repair {
        target,
        prefix: object_prefix,
        sources,
        staging,
    };
    // What a repair cut short by a crash left below the object (a filesystem store's
    // temporary files) goes first; the caller holds the object's lock.
    target.remove_leftovers(object_prefix)?;
    match finding.kind {
        FindingKind::ContentDigest
        | FindingKind::FixityDigest
        | FindingKind::ContentMissing
        | FindingKind::ContentUnreadable => repair.content(finding),
        FindingKind::InventorySidecar
        | FindingKind::InventoryMissing
        | FindingKind::InventoryInvalid
        | FindingKind::InventoryDiverges => repair.inventory(finding),
        FindingKind::ObjectMissing => repair.object(finding),
        FindingKind::UnexpectedFile => Ok(RepairOutcome::NotRepairable(
            "a file no manifest names is left for a person to look at".into(),
        )),
        FindingKind::CatalogMismatch => Ok(RepairOutcome::NotRepairable(
            "the catalog is rebuilt from storage: arca rebuild".into(),
        )),
    }
}

/// Files at most this large are read into memory and written in one `put`; larger ones
/// are staged in a local file.
const IN_MEMORY: u64 = 8 << 20;

/// Sleeps `ARCA_TEST_REPAIR_DELAY_MS` milliseconds (tests: a repair caught between
/// reading its good copy and writing it).
fn test_delay() {
    if let Some(ms) = std::env::var("ARCA_TEST_REPAIR_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

struct Repair<'a> {
    target: &'a dyn ObjectStorage,
    prefix: &'a str,
    sources: &'a [Source<'a>],
    staging: &'a Path,
}

/// A staged file, removed when dropped unless it was moved.
struct Staged(PathBuf);

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl Repair<'_> {
    fn key(&self, rel: &str) -> String {
        join(self.prefix, rel)
    }

    /// A content file replaced from a copy with the manifest's digest.
    fn content(&self, finding: &Finding) -> Result<RepairOutcome> {
        let Some(rel) = finding.content_path.as_deref() else {
            return Ok(RepairOutcome::NotRepairable("no file named".into()));
        };
        // The digest to trust is the inventory's, and only an inventory its sidecar vouches
        // for is trusted.
        let head = rel.starts_with(MUTABLE_HEAD);
        if !self.sidecar_matches("")? || (head && !self.sidecar_matches(MUTABLE_HEAD)?) {
            return Ok(RepairOutcome::NotRepairable(
                "the object's inventory does not match its sidecar; repair it first".into(),
            ));
        }
        let Some(inventories) = read_inventories(self.target, self.prefix)? else {
            return Ok(RepairOutcome::NotRepairable(
                "the object's inventory cannot be read".into(),
            ));
        };
        let Some(algorithm) = inventories.algorithm() else {
            return Ok(RepairOutcome::NotRepairable(
                "the object's digest algorithm is not sha512 or sha256".into(),
            ));
        };
        let Some(want) = inventories.expected().manifest.remove(rel) else {
            return Ok(RepairOutcome::NotRepairable(format!(
                "{rel} is not in the object's manifest"
            )));
        };
        let key = self.key(rel);
        let no_limit = RateLimiter::new(None);
        match hash_key(self.target, &key, &[algorithm], &no_limit, &NEVER) {
            Ok((digests, _)) if digests[0] == want => {
                return Ok(RepairOutcome::NotRepairable(format!(
                    "its {} digest is the manifest's: it is not replaced",
                    algorithm.ocfl_name()
                )));
            }
            Ok(_) | Err(HashError::Missing) | Err(HashError::Unreadable(_)) => {}
            Err(HashError::Store(e)) => return Err(e.into()),
            Err(HashError::Stopped) => return Err(Error::Stopped),
        }
        let mut tried = Vec::new();
        for source in self.sources {
            let Some(info) = source.store.metadata(&key)? else {
                tried.push(format!("{} has no copy", source.name));
                continue;
            };
            let good = if info.size <= IN_MEMORY {
                let Some(bytes) = read_opt(source.store, &key)? else {
                    tried.push(format!("{} has no copy", source.name));
                    continue;
                };
                let digest = MultiHasher::digest(algorithm, &bytes);
                if digest != want {
                    tried.push(format!("{}'s copy has digest {digest}", source.name));
                    continue;
                }
                test_delay();
                self.target.put(&key, &bytes)?;
                true
            } else {
                let staged = self.stage(source.store, &key, algorithm)?;
                match staged {
                    (staged, digest) if digest == want => {
                        test_delay();
                        self.target.move_file(&staged.0, &key)?;
                        true
                    }
                    (_, digest) => {
                        tried.push(format!("{}'s copy has digest {digest}", source.name));
                        false
                    }
                }
            };
            if good {
                let (digests, _) = hash_key(self.target, &key, &[algorithm], &no_limit, &NEVER)
                    .map_err(|e| repair_failed(&key, &format!("{e:?}")))?;
                if digests[0] != want {
                    return Err(repair_failed(
                        &key,
                        &format!("read back with digest {}, not {want}", digests[0]),
                    ));
                }
                tracing::info!(file = %key, from = source.name, "repaired");
                return Ok(RepairOutcome::Repaired {
                    from: source.name.to_string(),
                });
            }
        }
        Ok(RepairOutcome::NoGoodCopy(format!(
            "no copy has the {} digest {want}: {}",
            algorithm.ocfl_name(),
            tried.join("; ")
        )))
    }

    /// Streams `key` of `source` into a new staged file, hashing it.
    fn stage(
        &self,
        source: &dyn ObjectStorage,
        key: &str,
        algorithm: DigestAlgorithm,
    ) -> Result<(Staged, String)> {
        std::fs::create_dir_all(self.staging)
            .map_err(|e| Error::Io(self.staging.to_path_buf(), e))?;
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let path = self.staging.join(format!(
            ".arca-repair-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let staged = Staged(path.clone());
        let io = |e| Error::Io(path.clone(), e);
        let mut reader = source.read_range(key, 0..u64::MAX)?;
        let mut out = std::fs::File::create_new(&path).map_err(io)?;
        let mut hasher = MultiHasher::new(&[algorithm]);
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            let n = reader.read(&mut buffer).map_err(io)?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
            out.write_all(&buffer[..n]).map_err(io)?;
        }
        out.sync_all().map_err(io)?;
        let digest = hasher.finish().pop().map(|d| d.hex).unwrap_or_default();
        Ok((staged, digest))
    }

    /// Whether the inventory in `dir` (of the target) has the digest its sidecar records.
    fn sidecar_matches(&self, dir: &str) -> Result<bool> {
        match arca_ocfl::check_sidecar_in(self.target, self.key(dir).trim_end_matches('/')) {
            Ok(ok) => Ok(ok),
            Err(arca_ocfl::Error::Store(e)) if !e.is_not_found() => Err(e.into()),
            Err(_) => Ok(false),
        }
    }

    /// An inventory and its sidecar made consistent again from a copy whose pair is
    /// consistent and vouched for by what is left here: its inventory has our sidecar's
    /// digest, or its sidecar records our inventory's digest, or (a version inventory) it
    /// says of every version what our sound root inventory says.
    fn inventory(&self, finding: &Finding) -> Result<RepairOutcome> {
        let Some(rel) = finding.content_path.as_deref() else {
            return Ok(RepairOutcome::NotRepairable("no file named".into()));
        };
        let dir = match rel.rfind('/') {
            Some(i) => &rel[..i],
            None => "",
        };
        let inventory_rel = join(dir, INVENTORY);
        let ours = read_opt(self.target, &self.key(&inventory_rel))?;
        let root = if dir.is_empty() {
            None
        } else if self.sidecar_matches("")? {
            read_opt(self.target, &self.key(INVENTORY))?
                .and_then(|bytes| Inventory::from_slice(&bytes).ok().map(|i| (i, bytes)))
        } else {
            None
        };
        let mut tried = Vec::new();
        for source in self.sources {
            let Some(theirs) = read_opt(source.store, &join(self.prefix, &inventory_rel))? else {
                tried.push(format!("{} has no copy", source.name));
                continue;
            };
            let Ok(parsed) = Inventory::from_slice(&theirs) else {
                tried.push(format!("{}'s copy is not an inventory", source.name));
                continue;
            };
            let Ok(algorithm) = parsed.content_digest() else {
                tried.push(format!("{}'s copy names an unknown algorithm", source.name));
                continue;
            };
            let sidecar_rel = join(dir, &sidecar_name(algorithm));
            let their_sidecar = read_opt(source.store, &join(self.prefix, &sidecar_rel))?
                .and_then(|b| sidecar_digest(&b));
            let their_digest = MultiHasher::digest(algorithm, &theirs);
            if their_sidecar.as_deref() != Some(their_digest.as_str()) {
                tried.push(format!("{}'s copy does not match its sidecar", source.name));
                continue;
            }
            let our_sidecar =
                read_opt(self.target, &self.key(&sidecar_rel))?.and_then(|b| sidecar_digest(&b));
            let our_digest = ours.as_ref().map(|b| MultiHasher::digest(algorithm, b));
            let vouched = our_sidecar.as_deref() == Some(their_digest.as_str())
                || our_digest.as_deref() == Some(their_digest.as_str())
                || root.as_ref().is_some_and(|(root, root_bytes)| {
                    agrees(root, root_bytes, dir, &parsed, &theirs)
                });
            if !vouched {
                tried.push(format!(
                    "{}'s copy is not the one this object's files record",
                    source.name
                ));
                continue;
            }
            if our_digest.as_deref() == Some(their_digest.as_str())
                && our_sidecar.as_deref() == Some(their_digest.as_str())
                && finding.kind != FindingKind::InventoryDiverges
            {
                return Ok(RepairOutcome::NotRepairable(
                    "the inventory matches its sidecar: it is not replaced".into(),
                ));
            }
            test_delay();
            if our_digest.as_deref() != Some(their_digest.as_str()) {
                self.target.put(&self.key(&inventory_rel), &theirs)?;
            }
            if our_sidecar.as_deref() != Some(their_digest.as_str()) {
                let bytes =
                    read_opt(source.store, &join(self.prefix, &sidecar_rel))?.unwrap_or_default();
                self.target.put(&self.key(&sidecar_rel), &bytes)?;
            }
            if !self.sidecar_matches(dir)? {
                return Err(repair_failed(
                    &self.key(&inventory_rel),
                    "does not match its sidecar after the repair",
                ));
            }
            tracing::info!(file = %self.key(&inventory_rel), from = source.name, "repaired");
            return Ok(RepairOutcome::Repaired {
                from: source.name.to_string(),
            });
        }
        Ok(RepairOutcome::NoGoodCopy(tried.join("; ")))
    }

    /// A whole object copied in from a copy whose every file checks out.
    fn object(&self, finding: &Finding) -> Result<RepairOutcome> {
        if self.target.metadata(&self.key(INVENTORY))?.is_some() {
            return Ok(RepairOutcome::NotRepairable(
                "the object is there: it is not replaced".into(),
            ));
        }
        let mut tried = Vec::new();
        for source in self.sources {
            if source.store.metadata(&self.key(INVENTORY))?.is_none() {
                tried.push(format!("{} has no copy", source.name));
                continue;
            }
            std::fs::create_dir_all(self.staging)
                .map_err(|e| Error::Io(self.staging.to_path_buf(), e))?;
            let dir = tempfile_dir(self.staging)?;
            let copied = match arca_ocfl::copy_object(source.store, self.prefix, &dir.0) {
                Ok(inventory) => inventory,
                Err(e @ (arca_ocfl::Error::Mismatch(_) | arca_ocfl::Error::Json { .. })) => {
                    tried.push(format!("{}'s copy is damaged: {e}", source.name));
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            if copied.id != finding.object {
                tried.push(format!(
                    "{}'s copy at that place is object {}",
                    source.name, copied.id
                ));
                continue;
            }
            test_delay();
            let moved = match self.target.move_dir(&dir.0, self.prefix) {
                Ok(moved) => moved,
                Err(e) if e.is_precondition_failed() => false,
                Err(e) => return Err(e.into()),
            };
            if !moved {
                self.upload(&dir.0)?;
            }
            let check = crate::object::check(
                self.target,
                self.prefix,
                &RateLimiter::new(None),
                &|_| true,
                &NEVER,
            )?;
            if let Some(left) = check.and_then(|c| c.findings.into_iter().next()) {
                return Err(repair_failed(self.prefix, &left.message));
            }
            tracing::info!(object = %finding.object, from = source.name, "object repaired");
            return Ok(RepairOutcome::Repaired {
                from: source.name.to_string(),
            });
        }
        Ok(RepairOutcome::NoGoodCopy(tried.join("; ")))
    }

    /// Moves the files of the local object `dir` in one by one: content first, the version
    /// inventories next, the root inventory and its sidecar last (the object appears with
    /// its root inventory, complete). A file already there with the same bytes stays.
    fn upload(&self, dir: &Path) -> Result<()> {
        let mut files = Vec::new();
        let mut pending = vec![dir.to_path_buf()];
        while let Some(d) = pending.pop() {
            for entry in std::fs::read_dir(&d).map_err(|e| Error::Io(d.clone(), e))? {
                let entry = entry.map_err(|e| Error::Io(d.clone(), e))?;
                let path = entry.path();
                if path.is_dir() {
                    pending.push(path);
                } else {
                    let rel = path
                        .strip_prefix(dir)
                        .expect("below dir")
                        .to_string_lossy()
                        .replace(std::path::MAIN_SEPARATOR, "/");
                    files.push((rel, path));
                }
            }
        }
        let rank = |rel: &str| {
            let name = rel.rsplit('/').next().unwrap_or(rel);
            match (name.starts_with(INVENTORY), rel.contains('/')) {
                (false, _) => 0,
                (true, true) => 1,
                (true, false) => 2,
            }
        };
        files.sort_by(|a, b| (rank(&a.0), &a.0).cmp(&(rank(&b.0), &b.0)));
        for (rel, path) in files {
            let key = self.key(&rel);
            if let Some(bytes) = read_opt(self.target, &key)? {
                let local = std::fs::read(&path).map_err(|e| Error::Io(path.clone(), e))?;
                if local == bytes {
                    continue;
                }
            }
            self.target.move_file(&path, &key)?;
        }
        Ok(())
    }
}

/// Whether `theirs` (a version directory's inventory, `dir`) says what the root inventory
/// says: the same object, and the same state of every version up to its own.
fn agrees(
    root: &Inventory,
    root_bytes: &[u8],
    dir: &str,
    theirs: &Inventory,
    bytes: &[u8],
) -> bool {
    let Some(num) = VersionNum::parse(dir) else {
        return false;
    };
    if num == root.head {
        return bytes == root_bytes;
    }
    theirs.id == root.id
        && theirs.head == num
        && theirs
            .versions
            .iter()
            .all(|(n, v)| root.versions.get(n).is_some_and(|r| r.state == v.state))
}

/// A staged directory, removed when dropped.
struct StagedDir(PathBuf);

impl Drop for StagedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempfile_dir(staging: &Path) -> Result<StagedDir> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let path = staging.join(format!(
        ".arca-repair-object-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&path);
    Ok(StagedDir(path))
}

fn repair_failed(key: &str, why: &str) -> Error {
    Error::Repair(format!("{key}: {why}"))
}
