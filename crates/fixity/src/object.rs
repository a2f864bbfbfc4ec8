//! The check of one OCFL object in a store: its inventories against their sidecars and one
//! another, every manifest file read once and hashed in every algorithm the inventory
//! records for it, and the files of the content directories no manifest names.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};

use arca_model::{DigestAlgorithm, MultiHasher};
use arca_ocfl::{Inventory, ObjectStorage, VersionNum};
use arca_storage::StoreError;

use crate::audit::ObjectAudit;
use crate::rate::{RateLimiter, FILE_COST};
use crate::report::{Finding, FindingKind};
use crate::Result;

/// An inventory's file name.
pub(crate) const INVENTORY: &str = "inventory.json";
/// The directory of an object's mutable HEAD (extension 0005).
pub(crate) const MUTABLE_HEAD_EXT: &str = "extensions/0005-mutable-head";
/// The mutable HEAD's version directory, relative to the object.
pub(crate) const MUTABLE_HEAD: &str = "extensions/0005-mutable-head/head";
/// The object declarations.
const OBJECT_NAMASTES: [&str; 2] = ["0=ocfl_object_1.1", "0=ocfl_object_1.0"];
/// Bytes read at once.
const CHUNK: usize = 1 << 20;

thread_local! {
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Whether a directory listing is that of an object root.
pub(crate) fn is_object_root(files: &[arca_storage::FileInfo]) -> bool {
    files.iter().any(|f| {
        let name = f.key.rsplit('/').next().unwrap_or(&f.key);
        OBJECT_NAMASTES.contains(&name)
    })
}

/// The sidecar name of an inventory in `algorithm`.
pub(crate) fn sidecar_name(algorithm: DigestAlgorithm) -> String {
    format!("{INVENTORY}.{}", algorithm.ocfl_name())
}

/// The digest a sidecar's bytes record (its first word), lowercase.
pub(crate) fn sidecar_digest(bytes: &[u8]) -> Option<String> {
    String::from_utf8_lossy(bytes)
        .split_whitespace()
        .next()
        .map(str::to_ascii_lowercase)
}

/// `dir/name`, or `name` at the object's root (`dir` empty).
pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// The whole file `key` of `store`, `None` when there is none.
pub(crate) fn read_opt(store: &dyn ObjectStorage, key: &str) -> Result<Option<Vec<u8>>> {
    match store.read(key) {
        Ok(contents) => Ok(Some(contents.bytes)),
        Err(arca_storage::StoreError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The content paths of an object with their manifest digest and the other digests its
/// `fixity` blocks record (algorithm, lowercase hex).
#[derive(Debug, Default)]
pub(crate) struct Expected {
    /// Content path → manifest digest (lowercase).
    pub manifest: BTreeMap<String, String>,
    /// Content path → fixity digests.
    pub fixity: BTreeMap<String, Vec<(DigestAlgorithm, String)>>,
}

impl Expected {
    /// Adds what `inventory` records.
    pub fn add(&mut self, inventory: &Inventory) {
        for (digest, paths) in &inventory.manifest {
            for path in paths {
                self.manifest
                    .insert(path.clone(), digest.to_ascii_lowercase());
            }
        }
        for (name, block) in &inventory.fixity {
            // An algorithm arca cannot compute (blake2b, extension 0001's) is not checked.
            let Some(algorithm) = DigestAlgorithm::from_ocfl_name(name) else {
                continue;
            };
            let Some(block) = block.as_object() else {
                continue;
            };
            for (digest, paths) in block {
                for path in paths
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.as_str())
                {
                    let entry = self.fixity.entry(path.to_string()).or_default();
                    if !entry.iter().any(|(a, _)| *a == algorithm) {
                        entry.push((algorithm, digest.to_ascii_lowercase()));
                    }
                }
            }
        }
    }
}

/// An object's inventories, read and checked.
pub(crate) struct Inventories {
    /// The root inventory.
    pub root: Inventory,
    /// The mutable HEAD's, when the object has one not committed yet.
    pub head: Option<Inventory>,
}

impl Inventories {
    /// The object's content algorithm.
    pub fn algorithm(&self) -> Option<DigestAlgorithm> {
        self.root.content_digest().ok()
    }

    /// Every content path with its digests.
    pub fn expected(&self) -> Expected {
        let mut expected = Expected::default();
        expected.add(&self.root);
        if let Some(head) = &self.head {
            expected.add(head);
        }
        expected
    }

    /// The version a content path belongs to (`v3`, or the mutable HEAD's version).
    pub fn version_of(&self, content_path: &str) -> Option<VersionNum> {
        if content_path.starts_with(MUTABLE_HEAD) {
            return self.head.as_ref().map(|h| h.head);
        }
        content_path.split('/').next().and_then(VersionNum::parse)
    }

    /// A logical path the content with `digest` has in `version` (or the head).
    pub fn logical_path(&self, version: Option<VersionNum>, digest: &str) -> Option<String> {
        let inventory = self.head.as_ref().unwrap_or(&self.root);
        let in_version = |inv: &Inventory, v: VersionNum| {
            inv.versions.get(&v).and_then(|ver| {
                ver.state
                    .iter()
                    .find(|(d, _)| d.eq_ignore_ascii_case(digest))
                    .and_then(|(_, paths)| paths.first().cloned())
            })
        };
        version
            .and_then(|v| in_version(inventory, v).or_else(|| in_version(&self.root, v)))
            .or_else(|| in_version(inventory, inventory.head))
    }
}

/// The check of one object.
struct Check<'a> {
    store: &'a dyn ObjectStorage,
    prefix: &'a str,
    limiter: &'a RateLimiter,
    /// Turns true when the run is to stop (a large file is not read to its end then).
    stop: &'a AtomicBool,
    /// Relative path → size of every file of the object.
    files: BTreeMap<String, u64>,
    out: ObjectAudit,
}

/// Checks the object whose root is `prefix`; `None` when `wanted` refuses its id (read
/// from its root inventory). Store failures other than a missing file are errors (the run
/// stops rather than report an outage as damage).
pub(crate) fn check(
    store: &dyn ObjectStorage,
    prefix: &str,
    limiter: &RateLimiter,
    wanted: &dyn Fn(&str) -> bool,
    stop: &AtomicBool,
) -> Result<Option<ObjectAudit>> {
    let files = store
        .list(prefix)?
        .into_iter()
        .map(|f| (f.key[prefix.len() + 1..].to_string(), f.size))
        .collect();
    let mut check = Check {
        store,
        prefix,
        limiter,
        stop,
        files,
        out: ObjectAudit::default(),
    };
    let inventories = check.inventories()?;
    // The id its root inventory gives (or, that one unusable, a version's): an object the
    // settings leave out is dropped before its content is read.
    let id = match &inventories {
        Some(inventories) => Some(inventories.root.id.clone()),
        None => check.peek_id(),
    };
    if !wanted(id.as_deref().unwrap_or(prefix)) {
        return Ok(None);
    }
    if let Some(id) = id {
        check.out.object_id = Some(id.clone());
        for finding in &mut check.out.findings {
            if finding.object != id {
                finding.message = finding.message.replacen(&finding.object, &id, 1);
                finding.object = id.clone();
            }
        }
    }
    if let Some(inventories) = inventories {
        check.content(&inventories)?;
    }
    Ok(Some(check.out))
}

/// Reads the object's inventories (root, versions, head) and checks them; `None` when the
/// root inventory is missing or unusable (then its content cannot be checked).
pub(crate) fn read_inventories(
    store: &dyn ObjectStorage,
    prefix: &str,
) -> Result<Option<Inventories>> {
    let files = store
        .list(prefix)?
        .into_iter()
        .map(|f| (f.key[prefix.len() + 1..].to_string(), f.size))
        .collect();
    let limiter = RateLimiter::new(None);
    let mut check = Check {
        store,
        prefix,
        limiter: &limiter,
        stop: &NEVER,
        files,
        out: ObjectAudit::default(),
    };
    check.out.object_id = check.peek_id();
    check.inventories()
}

impl Check<'_> {
    /// The object id, from the root inventory (or a version's, the root's being unusable).
    fn peek_id(&self) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct Id {
            id: String,
        }
        let mut candidates: Vec<&String> = self
            .files
            .keys()
            .filter(|k| k.ends_with(INVENTORY) && !k.starts_with(MUTABLE_HEAD_EXT))
            .collect();
        candidates.sort_by_key(|k| (k.as_str() != INVENTORY, std::cmp::Reverse(k.len())));
        candidates.into_iter().find_map(|rel| {
            let bytes = self.store.read(&join(self.prefix, rel)).ok()?.bytes;
            serde_json::from_slice::<Id>(&bytes).ok().map(|i| i.id)
        })
    }

    fn object(&self) -> String {
        self.out
            .object_id
            .clone()
            .unwrap_or_else(|| self.prefix.to_string())
    }

    #[allow(clippy::too_many_arguments)]
    fn find(
        &mut self,
        kind: FindingKind,
        version: Option<VersionNum>,
        logical_path: Option<String>,
        content_path: &str,
        expected: Option<String>,
        actual: Option<String>,
        message: String,
    ) {
        let object = self.object();
        self.out.findings.push(Finding {
            message: format!("{object}: {content_path}: {message}"),
            object,
            version: version.map(|v| v.to_string()),
            logical_path,
            content_path: Some(content_path.to_string()),
            kind,
            expected,
            actual,
            repaired: false,
        });
    }

    /// Reads the inventory in `dir` (relative to the object) and checks it against its
    /// sidecar; returns it with the digest of its bytes, `None` (a finding made) when it
    /// is missing or unusable.
    fn inventory(
        &mut self,
        dir: &str,
        version: Option<VersionNum>,
    ) -> Result<Option<(Inventory, String)>> {
        let rel = join(dir, INVENTORY);
        if !self.files.contains_key(&rel) {
            self.find(
                FindingKind::InventoryMissing,
                version,
                None,
                &rel,
                None,
                None,
                "the inventory is missing".into(),
            );
            return Ok(None);
        }
        let Some(bytes) = self.read_small(&rel, version)? else {
            return Ok(None);
        };
        let inventory = match Inventory::from_slice(&bytes) {
            Ok(inventory) => inventory,
            Err(e) => {
                self.find(
                    FindingKind::InventoryInvalid,
                    version,
                    None,
                    &rel,
                    None,
                    None,
                    format!("not an OCFL inventory: {e}"),
                );
                return Ok(None);
            }
        };
        let algorithm = match inventory.content_digest() {
            Ok(algorithm) => algorithm,
            Err(e) => {
                self.find(
                    FindingKind::InventoryInvalid,
                    version,
                    None,
                    &rel,
                    None,
                    None,
                    e.to_string(),
                );
                return Ok(None);
            }
        };
        let digest = MultiHasher::digest(algorithm, &bytes);
        let sidecar = join(dir, &sidecar_name(algorithm));
        if !self.files.contains_key(&sidecar) {
            self.find(
                FindingKind::InventoryMissing,
                version,
                None,
                &sidecar,
                Some(format!("{}:{digest}", algorithm.ocfl_name())),
                None,
                "the inventory's sidecar is missing".into(),
            );
        } else if let Some(recorded) = self.read_small(&sidecar, version)? {
            let recorded = sidecar_digest(&recorded);
            if recorded.as_deref() != Some(digest.as_str()) {
                self.find(
                    FindingKind::InventorySidecar,
                    version,
                    None,
                    &rel,
                    recorded.map(|r| format!("{}:{r}", algorithm.ocfl_name())),
                    Some(format!("{}:{digest}", algorithm.ocfl_name())),
                    "the inventory's digest is not the one its sidecar records".into(),
                );
            }
        }
        self.out.files += 2;
        self.out.bytes += bytes.len() as u64;
        Ok(Some((inventory, digest)))
    }

    /// Whether the head version's inventory in `dir` is byte for byte the root's and its
    /// sidecar records that digest (the usual case, checked without parsing it again).
    fn same_as_root(&mut self, dir: &str, root: &Inventory, root_digest: &str) -> Result<bool> {
        let Ok(algorithm) = root.content_digest() else {
            return Ok(false);
        };
        let rel = join(dir, INVENTORY);
        let sidecar = join(dir, &sidecar_name(algorithm));
        if !self.files.contains_key(&rel) || !self.files.contains_key(&sidecar) {
            return Ok(false);
        }
        let bytes = match self.store.read(&join(self.prefix, &rel)) {
            Ok(contents) => contents.bytes,
            Err(StoreError::NotFound { .. } | StoreError::Io { .. }) => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        self.limiter.take(FILE_COST + bytes.len() as u64);
        if MultiHasher::digest(algorithm, &bytes) != root_digest {
            return Ok(false);
        }
        let recorded = match self.store.read(&join(self.prefix, &sidecar)) {
            Ok(contents) => sidecar_digest(&contents.bytes),
            Err(StoreError::NotFound { .. } | StoreError::Io { .. }) => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        if recorded.as_deref() != Some(root_digest) {
            return Ok(false);
        }
        self.out.files += 2;
        self.out.bytes += bytes.len() as u64;
        Ok(true)
    }

    /// Reads a small file the listing holds; `None` (a finding made) if it vanished or
    /// cannot be read.
    fn read_small(&mut self, rel: &str, version: Option<VersionNum>) -> Result<Option<Vec<u8>>> {
        match self.store.read(&join(self.prefix, rel)) {
            Ok(contents) => {
                self.limiter.take(FILE_COST + contents.bytes.len() as u64);
                Ok(Some(contents.bytes))
            }
            Err(StoreError::NotFound { .. }) => {
                let kind = FindingKind::InventoryMissing;
                self.find(kind, version, None, rel, None, None, "missing".into());
                Ok(None)
            }
            Err(e @ StoreError::Io { .. }) => {
                let kind = FindingKind::ContentUnreadable;
                self.find(kind, version, None, rel, None, None, e.to_string());
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The root inventory, every version's and the mutable HEAD's, checked against their
    /// sidecars and the version inventories against the root's.
    fn inventories(&mut self) -> Result<Option<Inventories>> {
        let Some((root, root_digest)) = self.inventory("", None)? else {
            return Ok(None);
        };
        self.out.object_id = Some(root.id.clone());
        for &num in root.versions.keys() {
            let dir = num.to_string();
            if num == root.head && self.same_as_root(&dir, &root, &root_digest)? {
                continue;
            }
            let Some((version, digest)) = self.inventory(&dir, Some(num))? else {
                continue;
            };
            let rel = join(&dir, INVENTORY);
            let diverges = if num == root.head {
                (digest != root_digest).then(|| "differs from the root inventory".to_string())
            } else if version.id != root.id || version.head != num {
                Some(format!(
                    "names object {} at head {}, the root inventory {} at {num}",
                    version.id, version.head, root.id
                ))
            } else {
                let state = version
                    .versions
                    .iter()
                    .find(|(n, v)| root.versions.get(n).map(|r| &r.state) != Some(&v.state))
                    .map(|(n, _)| format!("its state of {n} differs from the root inventory's"));
                let manifest = || {
                    version
                        .manifest
                        .iter()
                        .find(|(digest, paths)| {
                            root.manifest
                                .get(*digest)
                                .is_none_or(|have| paths.iter().any(|p| !have.contains(p)))
                        })
                        .map(|(digest, _)| {
                            format!("its manifest entry {digest} is not the root inventory's")
                        })
                };
                state.or_else(manifest)
            };
            if let Some(message) = diverges {
                self.find(
                    FindingKind::InventoryDiverges,
                    Some(num),
                    None,
                    &rel,
                    Some(format!("{}:{root_digest}", root.digest_algorithm)),
                    Some(format!("{}:{digest}", version.digest_algorithm)),
                    message,
                );
            }
        }
        let head_rel = join(MUTABLE_HEAD, INVENTORY);
        let head = if self.files.contains_key(&head_rel) {
            self.inventory(MUTABLE_HEAD, None)?
                .map(|(head, _)| head)
                // A head whose version the root holds was committed; only its removal did
                // not finish (recovery removes it): its files are not the object's.
                .filter(|head| head.head > root.head)
        } else {
            None
        };
        Ok(Some(Inventories { root, head }))
    }

    /// Every manifest file read and hashed; the files of the content directories no
    /// manifest names.
    fn content(&mut self, inventories: &Inventories) -> Result<()> {
        let Some(algorithm) = inventories.algorithm() else {
            return Ok(());
        };
        let expected = inventories.expected();
        for (path, digest) in &expected.manifest {
            let version = inventories.version_of(path);
            let logical = || inventories.logical_path(version, digest);
            let fixity = expected.fixity.get(path).map(Vec::as_slice).unwrap_or(&[]);
            let mut algorithms = vec![algorithm];
            algorithms.extend(fixity.iter().map(|(a, _)| *a).filter(|a| *a != algorithm));
            // A file the object's listing lacks is missing without a read.
            let hashed = match self.files.contains_key(path) {
                true => self.hash(path, &algorithms),
                false => Err(HashError::Missing),
            };
            let digests = match hashed {
                Ok(digests) => digests,
                Err(HashError::Missing) => {
                    self.find(
                        FindingKind::ContentMissing,
                        version,
                        logical(),
                        path,
                        Some(format!("{}:{digest}", algorithm.ocfl_name())),
                        None,
                        "in the manifest, but not in storage".into(),
                    );
                    continue;
                }
                Err(HashError::Unreadable(message)) => {
                    self.find(
                        FindingKind::ContentUnreadable,
                        version,
                        logical(),
                        path,
                        Some(format!("{}:{digest}", algorithm.ocfl_name())),
                        None,
                        message,
                    );
                    continue;
                }
                Err(HashError::Store(e)) => return Err(e.into()),
                Err(HashError::Stopped) => return Err(crate::Error::Stopped),
            };
            let actual = &digests[0].1;
            if actual != digest {
                self.find(
                    FindingKind::ContentDigest,
                    version,
                    logical(),
                    path,
                    Some(format!("{}:{digest}", algorithm.ocfl_name())),
                    Some(format!("{}:{actual}", algorithm.ocfl_name())),
                    "the bytes do not have the digest the manifest records".into(),
                );
            }
            for (fixity_algorithm, want) in fixity {
                let got = digests
                    .iter()
                    .find(|(a, _)| a == fixity_algorithm)
                    .map(|(_, d)| d.clone())
                    .unwrap_or_default();
                if &got != want {
                    let name = fixity_algorithm.ocfl_name();
                    self.find(
                        FindingKind::FixityDigest,
                        version,
                        logical(),
                        path,
                        Some(format!("{name}:{want}")),
                        Some(format!("{name}:{got}")),
                        format!("the bytes do not have the {name} digest the fixity block records"),
                    );
                }
            }
        }
        let content_dir = inventories.root.content_dir().to_string();
        let head_content = join(MUTABLE_HEAD, &content_dir) + "/";
        let unexpected: Vec<String> = self
            .files
            .keys()
            .filter(|rel| !expected.manifest.contains_key(*rel))
            .filter(|rel| {
                let mut segments = rel.splitn(3, '/');
                let in_version = matches!(
                    (segments.next().and_then(VersionNum::parse), segments.next(), segments.next()),
                    (Some(_), Some(dir), Some(_)) if dir == content_dir
                );
                in_version || (inventories.head.is_some() && rel.starts_with(&head_content))
            })
            .cloned()
            .collect();
        for rel in unexpected {
            let version = inventories.version_of(&rel);
            let size = self.files.get(&rel).copied().unwrap_or_default();
            self.find(
                FindingKind::UnexpectedFile,
                version,
                None,
                &rel,
                None,
                Some(format!("{size} bytes")),
                "a file in a content directory that no manifest names".into(),
            );
        }
        Ok(())
    }

    /// Reads the content file `rel` once, hashing it in `algorithms`.
    fn hash(
        &mut self,
        rel: &str,
        algorithms: &[DigestAlgorithm],
    ) -> std::result::Result<Vec<(DigestAlgorithm, String)>, HashError> {
        let key = join(self.prefix, rel);
        let (hasher, read) = hash_key(self.store, &key, algorithms, self.limiter, self.stop)?;
        self.out.files += 1;
        self.out.bytes += read;
        Ok(algorithms.iter().copied().zip(hasher).collect())
    }
}

/// Why a file could not be hashed.
#[derive(Debug)]
pub(crate) enum HashError {
    /// It is not there.
    Missing,
    /// Reading it failed (in words).
    Unreadable(String),
    /// The store failed (an outage: not a finding).
    Store(StoreError),
    /// The run is stopping.
    Stopped,
}

/// A stop flag that never turns true.
pub(crate) static NEVER: AtomicBool = AtomicBool::new(false);

/// Reads the file at `key` once, hashing it in `algorithms` at the pace `limiter` allows;
/// the digests (lowercase hex, in the order asked) and the bytes read.
pub(crate) fn hash_key(
    store: &dyn ObjectStorage,
    key: &str,
    algorithms: &[DigestAlgorithm],
    limiter: &RateLimiter,
    stop: &AtomicBool,
) -> std::result::Result<(Vec<String>, u64), HashError> {
    limiter.take_file();
    let mut reader = match store.read_range(key, 0..u64::MAX) {
        Ok(reader) => reader,
        Err(StoreError::NotFound { .. }) => return Err(HashError::Missing),
        Err(e @ StoreError::Io { .. }) => return Err(HashError::Unreadable(e.to_string())),
        Err(e) => return Err(HashError::Store(e)),
    };
    let mut hasher = MultiHasher::new(algorithms);
    BUFFER.with(|buffer| {
        let mut buffer = buffer.borrow_mut();
        if buffer.len() < CHUNK {
            buffer.resize(CHUNK, 0);
        }
        loop {
            match reader.read(&mut buffer[..]) {
                Ok(0) => break Ok(()),
                Ok(_) if stop.load(Ordering::Relaxed) => break Err(HashError::Stopped),
                Ok(n) => {
                    limiter.take(n as u64);
                    hasher.update(&buffer[..n]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let store_error = e
                        .get_ref()
                        .and_then(|inner| inner.downcast_ref::<StoreError>())
                        .filter(|inner| matches!(inner, StoreError::Unavailable { .. }));
                    break Err(match store_error {
                        Some(_) => HashError::Store(StoreError::Io {
                            key: key.to_string(),
                            source: e,
                        }),
                        None if e.kind() == std::io::ErrorKind::NotFound => HashError::Missing,
                        None => HashError::Unreadable(format!("{key}: {e}")),
                    });
                }
            }
        }
    })?;
    let read = hasher.len();
    Ok((hasher.finish().into_iter().map(|d| d.hex).collect(), read))
}
