use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arca_model::{DigestAlgorithm, DigestValue, MultiHasher};
use arca_storage::store::{ByteReader, Contents, ETag, ObjectStorage, Precondition};
use arca_storage::StoreError;

use crate::error::IoContext;
use crate::inventory::{group_state, is_sidecar_of, sidecar_for, sidecar_name};
use crate::layout::{HashedNTuple, EXTENSION_0004, LAYOUT_CONFIG_JSON, OCFL_LAYOUT_JSON};
use crate::mapper::encode_logical_path;
use crate::record::RecordFile;
use crate::{Error, Inventory, Result, User, Version, VersionNum, INVENTORY_TYPE_1_1};

const ROOT_NAMASTE: &str = "0=ocfl_1.1";
const OCFL_LAYOUT_JSON_NAME: &str = "ocfl_layout.json";
const ROOT_NAMASTE_1_0: &str = "0=ocfl_1.0";
pub(crate) const OBJECT_NAMASTE: &str = "0=ocfl_object_1.1";
/// The object declaration Fedora 6.1.0 (ocfl-java 1.x) writes.
const OBJECT_NAMASTE_1_0: &str = "0=ocfl_object_1.0";
pub(crate) const INVENTORY: &str = "inventory.json";
/// The mutable HEAD extension's directory in an object (OCFL extension 0005).
pub(crate) const MUTABLE_HEAD_EXT: &str = "extensions/0005-mutable-head";
/// The mutable HEAD version directory; head content paths start with it.
pub(crate) const MUTABLE_HEAD: &str = "extensions/0005-mutable-head/head";
/// The revision markers' directory.
pub(crate) const REVISIONS: &str = "extensions/0005-mutable-head/revisions";
/// The copy of the root sidecar taken when the mutable HEAD was created is this name plus
/// `.<algorithm>`.
const ROOT_INVENTORY_COPY: &str = "extensions/0005-mutable-head/root-inventory.json";
pub(crate) const HEAD_INVENTORY: &str = "extensions/0005-mutable-head/head/inventory.json";
const UPLOADS: &str = "uploads";

/// The root sidecar of an object whose inventory uses `algorithm`
/// (`inventory.json.sha512`, `inventory.json.sha256`).
pub(crate) fn sidecar(algorithm: DigestAlgorithm) -> String {
    sidecar_name(INVENTORY, algorithm)
}

/// The mutable HEAD's sidecar.
pub(crate) fn head_sidecar(algorithm: DigestAlgorithm) -> String {
    sidecar_name(HEAD_INVENTORY, algorithm)
}

/// The copy of the root sidecar that the mutable HEAD keeps (`root-inventory.json.sha512`).
pub(crate) fn root_sidecar_copy(algorithm: DigestAlgorithm) -> String {
    sidecar_name(ROOT_INVENTORY_COPY, algorithm)
}

/// How a staged change lands in the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadMode {
    /// A new immutable version vN (Fedora's auto-versioning, NEW_VERSION). On an object that
    /// has a mutable HEAD, the changes are staged into the head and the head is then
    /// committed as vN in the same step (as ocfl-java does for a NEW_VERSION commit on such
    /// an object).
    NewVersion,
    /// Into the 0005 mutable HEAD (Fedora's UNVERSIONED commit): a new revision rN of the
    /// head; a new object first gets the auto-created empty v1, as ocfl-java does.
    Mutable,
}

/// Who and when of a new version.
#[derive(Debug, Clone)]
pub struct VersionInfo {
    /// RFC 3339 instant with `Z`.
    pub created: String,
    /// Commit message.
    pub message: String,
    /// User name.
    pub user_name: String,
    /// User address (URI).
    pub user_address: String,
}

/// Bytes for a logical path in a new version.
#[derive(Debug)]
pub enum Content {
    /// Small content held in memory (headers, RDF).
    Bytes(Vec<u8>),
    /// A file already written under the staging area (an upload), with its digest in the
    /// object's algorithm (see [`Inventory::content_digest`]). It is moved, not copied.
    File {
        /// The staged file.
        path: PathBuf,
        /// Its digest.
        digest: DigestValue,
    },
    /// Bytes already in the store outside the object (a transaction's staged upload), by
    /// key, with its digest in the object's algorithm. They are copied (by the store,
    /// without passing through this node); the caller removes the original.
    Stored {
        /// The key.
        key: String,
        /// Its digest.
        digest: DigestValue,
    },
}

/// One change of a version: put content at a logical path, or remove the path.
#[derive(Debug)]
pub struct Change {
    /// Logical path inside the object.
    pub logical_path: String,
    /// New content, or `None` to remove the path from the state.
    pub content: Option<Content>,
}

/// A change prepared in memory, not yet written into the root.
#[derive(Debug)]
pub struct Staged {
    pub(crate) object_id: String,
    /// The object's root in the store (a key prefix).
    pub(crate) object_prefix: String,
    pub(crate) kind: StagedKind,
    /// Every file of the change, in the order publish writes them, for the redo journal.
    pub(crate) files: Vec<RecordFile>,
    /// The inventory readers see once published (the mutable HEAD's for a revision).
    pub inventory: Inventory,
    /// The version of the object's root inventory the change was planned from: the
    /// commit point replaces exactly that one (`None`: not read, written unconditionally).
    pub(crate) root_etag: Option<ETag>,
    /// Likewise for the mutable HEAD's inventory.
    pub(crate) head_etag: Option<ETag>,
}

/// What a staged change writes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum StagedKind {
    /// A new immutable version directory.
    Version {
        version: VersionNum,
        is_new_object: bool,
        /// The object's mutable HEAD becomes this version (its content moves into it and
        /// the extension directory goes).
        from_head: bool,
    },
    /// A new revision of the mutable HEAD.
    Revision {
        revision: u32,
        /// A new object: the empty v1 comes first.
        is_new_object: bool,
        /// The object had no mutable HEAD yet.
        new_head: bool,
    },
}

impl Staged {
    pub(crate) fn new(
        object_id: &str,
        object_prefix: String,
        kind: StagedKind,
        files: Vec<RecordFile>,
        inventory: Inventory,
        current: Option<&ObjectState>,
    ) -> Self {
        Self {
            object_id: object_id.to_string(),
            object_prefix,
            kind,
            files,
            inventory,
            root_etag: current.and_then(|c| c.root_etag.clone()),
            head_etag: current.and_then(|c| c.head_etag.clone()),
        }
    }

    /// The object's root in the store (a key prefix, `/`-separated).
    pub fn object_prefix(&self) -> &str {
        &self.object_prefix
    }

    /// The immutable version this creates, `None` when it only changes the mutable HEAD
    /// (the empty `v1` that a new object gets before its first revision is not reported:
    /// it holds no files).
    pub fn new_version(&self) -> Option<VersionNum> {
        match self.kind {
            StagedKind::Version { version, .. } => Some(version),
            StagedKind::Revision { .. } => None,
        }
    }

    /// Whether the change creates its object.
    pub fn creates_object(&self) -> bool {
        self.is_new_object()
    }

    fn is_new_object(&self) -> bool {
        match self.kind {
            StagedKind::Version { is_new_object, .. } => is_new_object,
            StagedKind::Revision { is_new_object, .. } => is_new_object,
        }
    }

    /// The version directory whose inventory the root inventory is a copy of.
    fn root_copy_version(&self) -> VersionNum {
        match self.kind {
            StagedKind::Version { version, .. } => version,
            StagedKind::Revision { .. } => VersionNum::first(),
        }
    }

    /// The file whose write commits the change: the root inventory for a version, the
    /// mutable HEAD's inventory for a revision. Before it nothing is visible to readers of
    /// the object's inventory; after it the change stands.
    pub(crate) fn commit_point(&self) -> &'static str {
        match self.kind {
            StagedKind::Version { .. } => INVENTORY,
            StagedKind::Revision { .. } => HEAD_INVENTORY,
        }
    }

    /// The key of `rel` in this change's object.
    fn key(&self, rel: &str) -> String {
        format!("{}/{rel}", self.object_prefix)
    }

    /// The keys (files, or directories with everything below) whose removal takes back
    /// what the change writes before its commit point: a new object entirely; an
    /// existing object's new version directory; a mutable HEAD's new revision (its marker
    /// and content), or the whole head if it is new. Nothing else changes before it.
    pub(crate) fn undo_keys(&self) -> Vec<String> {
        if self.is_new_object() {
            return vec![self.object_prefix.clone()];
        }
        match self.kind {
            StagedKind::Version { version, .. } => vec![self.key(&version.to_string())],
            StagedKind::Revision { new_head: true, .. } => vec![self.key(MUTABLE_HEAD_EXT)],
            StagedKind::Revision { revision, .. } => vec![
                self.key(&crate::head::revision_content_dir(
                    &self.inventory,
                    revision,
                )),
                self.key(&format!("{REVISIONS}/r{revision}")),
            ],
        }
    }
}

/// What a reader needs of an object: its inventory and where it lives.
#[derive(Debug, Clone)]
pub struct ObjectState {
    /// The object's root in the store (a key prefix, `/`-separated, relative to the
    /// storage root).
    pub prefix: String,
    /// The head inventory (the mutable HEAD's, if the object has one).
    pub inventory: Inventory,
    /// Whether the head is an OCFL 0005 mutable HEAD (written with auto-versioning off).
    pub mutable_head: bool,
    /// The mutable HEAD's revision markers (`revisions/rN`), as numbers, ascending.
    pub(crate) revision_markers: Vec<u32>,
    /// The version of the root inventory read (the commit point of the next version).
    pub(crate) root_etag: Option<ETag>,
    /// The version of the mutable HEAD's inventory read.
    pub(crate) head_etag: Option<ETag>,
}

impl ObjectState {
    /// The key (relative to the storage root) of the content file for a logical path in
    /// the head state.
    pub fn head_key(&self, logical: &str) -> Option<String> {
        self.inventory
            .resolve_head(logical)
            .map(|p| format!("{}/{p}", self.prefix))
    }

    /// The key of a file of the object, given by its path relative to the object's root.
    pub fn key(&self, rel: &str) -> String {
        format!("{}/{rel}", self.prefix)
    }

    /// The mutable HEAD's latest revision number (`None` without a mutable HEAD).
    pub fn revision(&self) -> Option<u32> {
        self.revision_markers.last().copied()
    }
}

/// An OCFL storage root in a store ([`ObjectStorage`]: a local directory or an S3 bucket)
/// plus a local staging area for uploads and objects being built.
///
/// Every file of the root is read and written through the store; the order in which a
/// change writes them makes one write its commit point (see [`OcflRoot::publish`]).
///
/// Each object keeps the digest algorithm its inventory names; new objects get the root's
/// [`digest_algorithm`](Self::digest_algorithm) (sha512 unless set otherwise), as ocfl-java
/// does with its default algorithm. OCFL records no algorithm at the root level.
#[derive(Debug)]
pub struct OcflRoot {
    store: Arc<dyn ObjectStorage>,
    pub(crate) staging: PathBuf,
    layout: HashedNTuple,
    digest_algorithm: DigestAlgorithm,
}

impl OcflRoot {
    /// Opens the root held by `store`, creating it (as Fedora 6 would) if the store is
    /// empty. `staging` (local; for uploads and objects being built) is created if needed.
    ///
    /// # Errors
    /// [`Error::Invalid`] if the store holds files but no root declaration;
    /// [`Error::Unsupported`] for a storage layout other than 0004; store failures.
    pub fn open(store: Arc<dyn ObjectStorage>, staging: &Path) -> Result<Self> {
        fs::create_dir_all(staging.join(UPLOADS)).at(staging)?;
        let declared = |name: &str| -> Result<bool> { Ok(store.metadata(name)?.is_some()) };
        let layout = if declared(ROOT_NAMASTE)? || declared(ROOT_NAMASTE_1_0)? {
            Self::read_layout(store.as_ref())?
        } else {
            let listing = store.list_dir("")?;
            if !listing.dirs.is_empty() || !listing.files.is_empty() {
                return Err(Error::Invalid(format!(
                    "{store:?} is not empty and has no {ROOT_NAMASTE} declaration"
                )));
            }
            Self::create_root_files(store.as_ref())?;
            HashedNTuple::default()
        };
        if !declared(ROOT_NAMASTE)? {
            // ocfl-java upgrades a 1.0 root declaration to 1.1 when it opens it for writing.
            store.put(ROOT_NAMASTE, b"ocfl_1.1\n")?;
            store.delete(ROOT_NAMASTE_1_0)?;
        }
        Ok(Self {
            store,
            staging: staging.to_path_buf(),
            layout,
            digest_algorithm: DigestAlgorithm::Sha512,
        })
    }

    /// The root with `algorithm` for the objects it creates from now on (existing objects
    /// keep theirs).
    ///
    /// # Errors
    /// [`Error::Unsupported`] unless `algorithm` is sha512 or sha256, the two OCFL allows
    /// for content.
    pub fn with_digest_algorithm(mut self, algorithm: DigestAlgorithm) -> Result<Self> {
        if !algorithm.is_ocfl_content_digest() {
            return Err(Error::Unsupported(format!(
                "digest algorithm {}; OCFL objects use sha512 or sha256",
                algorithm.ocfl_name()
            )));
        }
        self.digest_algorithm = algorithm;
        Ok(self)
    }

    /// The digest algorithm of the objects this root creates.
    pub fn digest_algorithm(&self) -> DigestAlgorithm {
        self.digest_algorithm
    }

    /// The store holding the root.
    pub fn store(&self) -> &Arc<dyn ObjectStorage> {
        &self.store
    }

    /// The digest algorithm of an existing object, known from the name of its root sidecar
    /// (one or two metadata lookups, no inventory read); `None` if there is no object.
    pub fn object_digest_algorithm(&self, object_id: &str) -> Result<Option<DigestAlgorithm>> {
        let prefix = self.object_key(object_id);
        for algorithm in [DigestAlgorithm::Sha512, DigestAlgorithm::Sha256] {
            if self
                .store
                .metadata(&format!("{prefix}/{}", sidecar(algorithm)))?
                .is_some()
            {
                return Ok(Some(algorithm));
            }
        }
        Ok(None)
    }

    fn create_root_files(store: &dyn ObjectStorage) -> Result<()> {
        store.put(
            &format!("extensions/{EXTENSION_0004}/config.json"),
            LAYOUT_CONFIG_JSON.as_bytes(),
        )?;
        store.put(OCFL_LAYOUT_JSON_NAME, OCFL_LAYOUT_JSON.as_bytes())?;
        store.put(ROOT_NAMASTE, b"ocfl_1.1\n")?;
        Ok(())
    }

    fn read_layout(store: &dyn ObjectStorage) -> Result<HashedNTuple> {
        let json = |key: &str| -> Result<Option<serde_json::Value>> {
            match store.read(key) {
                Ok(contents) => {
                    serde_json::from_slice(&contents.bytes)
                        .map(Some)
                        .map_err(|source| Error::Json {
                            path: PathBuf::from(key),
                            source,
                        })
                }
                Err(StoreError::NotFound { .. }) => Ok(None),
                Err(e) => Err(e.into()),
            }
        };
        let name = match json(OCFL_LAYOUT_JSON_NAME)? {
            Some(v) => v
                .get("extension")
                .and_then(|e| e.as_str())
                .unwrap_or_default()
                .to_string(),
            // ocfl-java falls back to its default layout when the file is missing.
            None => EXTENSION_0004.to_string(),
        };
        if name != EXTENSION_0004 {
            return Err(Error::Unsupported(format!(
                "storage layout {name:?}; arca reads and writes {EXTENSION_0004}"
            )));
        }
        match json(&format!("extensions/{EXTENSION_0004}/config.json"))? {
            Some(v) => HashedNTuple::from_config(&v).map_err(Error::Unsupported),
            None => Ok(HashedNTuple::default()),
        }
    }

    /// The storage root's local directory, when the store is on the local filesystem.
    pub fn local_root(&self) -> Option<PathBuf> {
        self.store.local_path("")
    }

    /// The local file of `key`, when the store is on the local filesystem (see
    /// [`ObjectStorage::local_path`]).
    pub fn local_path(&self, key: &str) -> Option<PathBuf> {
        self.store.local_path(key)
    }

    /// The local file of `key` opened for reading, when the store is on the local
    /// filesystem (see [`ObjectStorage::open_local`]).
    pub fn open_local(&self, key: &str) -> Option<std::io::Result<std::fs::File>> {
        self.store.open_local(key)
    }

    /// The staging directory.
    pub fn staging_path(&self) -> &Path {
        &self.staging
    }

    /// Directory for client uploads in progress (local; on the root's filesystem when the
    /// root is local, so that publishing moves them with a rename).
    pub fn uploads_dir(&self) -> PathBuf {
        self.staging.join(UPLOADS)
    }

    /// The local directory of an object (whether or not it exists), when the root is on
    /// the local filesystem.
    pub fn object_dir(&self, object_id: &str) -> Option<PathBuf> {
        self.store.local_path(&self.object_key(object_id))
    }

    /// An object's root as a key prefix (whether or not it exists).
    pub fn object_key(&self, object_id: &str) -> String {
        self.layout.object_key(object_id)
    }

    /// Reads an object's head inventory; `None` if the object does not exist.
    pub fn read_object(&self, object_id: &str) -> Result<Option<ObjectState>> {
        self.read_object_at(&self.object_key(object_id))
    }

    /// Reads the object whose root is `prefix`; `None` if there is none.
    pub fn read_object_at(&self, prefix: &str) -> Result<Option<ObjectState>> {
        read_object_in(self.store.as_ref(), prefix)
    }

    /// Prepares a change of `object_id` (a new object if `current` is `None`) in memory:
    /// the new inventory and every file to write, the way `mode` says (see [`HeadMode`]).
    /// Content already stored in the object is not written again (dedup by digest).
    /// Nothing in the root changes until [`publish`](Self::publish); a journaled caller
    /// journals [`crate::versions_record`] first.
    pub fn stage(
        &self,
        object_id: &str,
        current: Option<&ObjectState>,
        changes: Vec<Change>,
        info: VersionInfo,
        mode: HeadMode,
    ) -> Result<Staged> {
        match (mode, current) {
            (HeadMode::NewVersion, Some(c)) if c.mutable_head => {
                self.stage_head_commit(object_id, c, changes, info)
            }
            (HeadMode::NewVersion, _) => self.stage_version(object_id, current, changes, info),
            (HeadMode::Mutable, _) => self.stage_revision(object_id, current, changes, info),
        }
    }

    /// Commits an object's mutable HEAD into a new immutable version (POST fcr:versions
    /// with auto-versioning off): its content moves from
    /// `extensions/0005-mutable-head/head/content/rN/…` to `vN/content/rN/…`, the version
    /// gets `info`, and the extension directory goes. `Ok(None)` when the object has no
    /// mutable HEAD.
    pub fn stage_commit_head(
        &self,
        object_id: &str,
        current: &ObjectState,
        info: VersionInfo,
    ) -> Result<Option<Staged>> {
        if !current.mutable_head {
            return Ok(None);
        }
        self.stage_head_commit(object_id, current, Vec::new(), info)
            .map(Some)
    }

    /// A new immutable version of an object without a mutable HEAD.
    fn stage_version(
        &self,
        object_id: &str,
        current: Option<&ObjectState>,
        changes: Vec<Change>,
        info: VersionInfo,
    ) -> Result<Staged> {
        let object_prefix = self.object_key(object_id);
        let (mut inventory, version) = match current {
            Some(c) => {
                let mut inv = c.inventory.clone();
                inv.head = inv.head.next();
                let v = inv.head;
                (inv, v)
            }
            None => (
                empty_inventory(object_id, self.digest_algorithm),
                VersionNum::first(),
            ),
        };
        let is_new_object = current.is_none();
        let mut files = Vec::new();
        let mut state = current
            .map(|c| c.inventory.head_state())
            .unwrap_or_default();
        let content_prefix = format!("{version}/{}", inventory.content_dir());
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
        if is_new_object {
            files.push(RecordFile::inline(
                OBJECT_NAMASTE,
                b"ocfl_object_1.1\n".to_vec(),
            ));
        }
        push_version_inventories(&mut files, version, &inventory)?;
        Ok(Staged::new(
            object_id,
            object_prefix,
            StagedKind::Version {
                version,
                is_new_object,
                from_head: false,
            },
            files,
            inventory,
            current,
        ))
    }

    /// Writes a staged change into the root, all or nothing from its readers' point of
    /// view: every new file first (content, headers, the version's inventory:
    /// [`prepare`](Self::prepare)), then the commit point — the root inventory (or the
    /// mutable HEAD's), replaced only if it is still the version the change was planned
    /// from (created only if absent, for a new object) — then the root sidecar, then what
    /// the change removes ([`commit`](Self::commit)). A failure before the commit point
    /// removes what was written and changes nothing; a failure after it is
    /// [`Error::Unfinished`]: the version stands and [`redo`](Self::redo) completes it.
    pub fn publish(&self, staged: &Staged) -> Result<()> {
        self.check(staged)?;
        if let Err(e) = self.prepare(staged) {
            let _ = self.undo(staged);
            return Err(e);
        }
        match self.commit(staged) {
            Ok(()) => Ok(()),
            Err(e @ Error::Unfinished { .. }) => Err(e),
            Err(e) => {
                // A new object's place taken by another writer meanwhile is theirs.
                let taken = staged.is_new_object()
                    && matches!(e, Error::Store(StoreError::PreconditionFailed { .. }));
                if !taken {
                    let _ = self.undo(staged);
                }
                Err(e)
            }
        }
    }

    /// The first half of [`publish`](Self::publish), after [`check`](Self::check): every
    /// file before the commit point. Nothing is visible to readers of the object yet.
    /// After a failure, [`undo`](Self::undo) removes what was written.
    pub fn prepare(&self, staged: &Staged) -> Result<()> {
        self.publish_before_commit_point(staged, false)
    }

    /// The files of `staged` before its commit point, in order, but a new object's
    /// declaration when `claimed`. Small files written one after the other go to the store
    /// together ([`ObjectStorage::put_all`]: one round of requests on S3): until the commit
    /// point nothing depends on their order.
    fn publish_before_commit_point(&self, staged: &Staged, claimed: bool) -> Result<()> {
        let commit_point = staged.commit_point();
        let claimed = claimed && staged.is_new_object();
        let mut plain: Vec<(String, &[u8])> = Vec::new();
        let flush = |plain: &mut Vec<(String, &[u8])>| -> Result<()> {
            if !plain.is_empty() {
                let files: Vec<(&str, &[u8])> = plain
                    .iter()
                    .map(|(key, bytes)| (key.as_str(), *bytes))
                    .collect();
                self.store.put_all(&files)?;
                plain.clear();
            }
            Ok(())
        };
        for file in &staged.files {
            match file {
                RecordFile::Inline { rel, .. } if rel == commit_point => break,
                RecordFile::Inline { rel, .. } if claimed && rel == OBJECT_NAMASTE => {}
                RecordFile::Inline { rel, bytes } if is_plain_write(rel) => {
                    plain.push((staged.key(rel), bytes));
                }
                _ => {
                    flush(&mut plain)?;
                    self.publish_file(staged, file)?;
                }
            }
        }
        flush(&mut plain)
    }

    /// [`check`](Self::check) for a store where asking costs a request (S3): a new
    /// object's place is claimed by writing its declaration only if absent (one conditional
    /// write instead of a look at its root inventory, then the write), which refuses it as
    /// [`Error::AlreadyExists`], writing nothing, when an object (or the remains of one)
    /// holds the place; an existing object is checked as `check` does. Any other failure
    /// of a new object's claim leaves the outcome unknown (the declaration may have
    /// landed). Then [`prepare_claimed`](Self::prepare_claimed).
    pub fn claim(&self, staged: &Staged) -> Result<()> {
        if !staged.is_new_object() {
            return self.check(staged);
        }
        let Some(RecordFile::Inline { rel, bytes }) = staged
            .files
            .iter()
            .find(|f| matches!(f, RecordFile::Inline { rel, .. } if rel == OBJECT_NAMASTE))
        else {
            return self.check(staged);
        };
        match self
            .store
            .put_if(&staged.key(rel), bytes, Precondition::Absent)
        {
            Ok(_) => Ok(()),
            Err(StoreError::PreconditionFailed { .. }) => {
                Err(Error::AlreadyExists(staged.object_id.clone()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// [`prepare`](Self::prepare) after [`claim`](Self::claim): every file before the
    /// commit point but a new object's declaration, which the claim wrote.
    pub fn prepare_claimed(&self, staged: &Staged) -> Result<()> {
        self.publish_before_commit_point(staged, true)
    }

    /// The second half of [`publish`](Self::publish), after [`prepare`](Self::prepare):
    /// the commit point, then what follows it. A failure at the commit point leaves the
    /// change not taken effect — certainly if its condition does not hold
    /// (`PreconditionFailed`), perhaps if the store failed (`Unavailable`: the write may
    /// have landed; [`recover`](Self::recover) reads the commit point to know). A failure
    /// after it is [`Error::Unfinished`].
    pub fn commit(&self, staged: &Staged) -> Result<()> {
        let commit_point = staged.commit_point();
        let Some(start) = staged
            .files
            .iter()
            .position(|f| matches!(f, RecordFile::Inline { rel, .. } if rel == commit_point))
        else {
            return Ok(());
        };
        self.publish_file(staged, &staged.files[start])?;
        for file in &staged.files[start + 1..] {
            if let Err(e) = self.publish_file(staged, file) {
                return Err(Error::Unfinished {
                    object: staged.object_id.clone(),
                    source: Box::new(e),
                });
            }
        }
        Ok(())
    }

    /// Writes a staged change whose journal record is already acknowledged to its client.
    /// Like [`publish`](Self::publish), but an acknowledged change is finished, never
    /// undone: a failure leaves what was written in place for [`redo`](Self::redo) to
    /// complete, as journal replay would after a crash.
    pub fn publish_acknowledged(&self, staged: &Staged) -> Result<()> {
        self.check(staged)?;
        staged
            .files
            .iter()
            .try_for_each(|f| self.publish_file(staged, f))
    }

    /// Writes (or copies, or removes) one file of a staged change.
    pub(crate) fn publish_file(&self, staged: &Staged, file: &RecordFile) -> Result<()> {
        let store = self.store.as_ref();
        match file {
            RecordFile::Inline { rel, bytes }
                if rel == INVENTORY || is_sidecar_of(rel, INVENTORY) =>
            {
                // The root inventory and sidecar are the version's, byte for byte: a store
                // that can keeps one file for both (hard links on a local root).
                let copy_of = staged.key(&format!("{}/{rel}", staged.root_copy_version()));
                let precondition = if rel != INVENTORY {
                    None
                } else if staged.is_new_object() {
                    Some(Precondition::Absent)
                } else {
                    staged.root_etag.clone().map(Precondition::Matches)
                };
                store.put_copy(&staged.key(rel), bytes, &copy_of, precondition)?;
            }
            RecordFile::Inline { rel, bytes } if rel == HEAD_INVENTORY => {
                let precondition = match staged.kind {
                    StagedKind::Revision { new_head: true, .. } => Some(Precondition::Absent),
                    _ => staged.head_etag.clone().map(Precondition::Matches),
                };
                match precondition {
                    Some(p) => store.put_if(&staged.key(rel), bytes, p)?,
                    None => store.put(&staged.key(rel), bytes)?,
                };
            }
            RecordFile::Inline { rel, bytes } => {
                debug_assert!(is_plain_write(rel));
                store.put(&staged.key(rel), bytes)?;
            }
            RecordFile::External { rel, locations, .. } => {
                let upload = locations.last().expect("an upload location");
                store.move_file(upload, &staged.key(rel))?;
            }
            RecordFile::Move { rel, from, .. } => {
                // Copied: the source goes with the removal of the mutable HEAD that follows
                // the commit point, so nothing is lost before it.
                store.copy(&staged.key(from), &staged.key(rel))?;
            }
            RecordFile::Stored { rel, from, .. } => {
                store.copy(from, &staged.key(rel))?;
            }
            RecordFile::Remove { rel } => {
                let key = staged.key(rel);
                store.delete(&key)?;
                store.delete_prefix(&key)?;
            }
        }
        Ok(())
    }

    /// Refuses a change whose object moved on since it was planned (call it before
    /// anything is written): a new object whose place is taken, a version or mutable HEAD
    /// revision that exists already, a mutable HEAD whose object root changed since the
    /// head was created. (Writers of one object are kept apart by the caller's object
    /// locks; this and the commit point's condition catch a plan made from a stale
    /// state, and make sure that undoing a failed change removes nothing of another's.)
    pub fn check(&self, staged: &Staged) -> Result<()> {
        let exists =
            |rel: &str| -> Result<bool> { Ok(self.store.metadata(&staged.key(rel))?.is_some()) };
        if staged.is_new_object() {
            if exists(INVENTORY)? {
                return Err(Error::AlreadyExists(staged.object_id.clone()));
            }
            return Ok(());
        }
        let mutable_head_in_use = match staged.kind {
            StagedKind::Version {
                version, from_head, ..
            } => {
                if exists(&format!("{version}/{INVENTORY}"))? {
                    return Err(Error::AlreadyExists(format!(
                        "{} {version}",
                        staged.object_id
                    )));
                }
                from_head
            }
            StagedKind::Revision {
                revision, new_head, ..
            } => {
                if new_head && exists(HEAD_INVENTORY)? {
                    return Err(Error::AlreadyExists(format!(
                        "{} mutable HEAD",
                        staged.object_id
                    )));
                }
                if !new_head && exists(&format!("{REVISIONS}/r{revision}"))? {
                    return Err(Error::AlreadyExists(format!(
                        "{} mutable HEAD revision r{revision}",
                        staged.object_id
                    )));
                }
                !new_head
            }
        };
        if mutable_head_in_use {
            crate::head::check_root_unchanged(
                self.store.as_ref(),
                &staged.object_prefix,
                &staged.object_id,
                staged.inventory.content_digest()?,
            )?;
        }
        Ok(())
    }

    /// Removes what a failed [`publish`](Self::publish) wrote before its commit point
    /// (the change's undo keys: a new object entirely; an existing object's new version
    /// directory; a mutable HEAD's new revision, or the whole head if it was new). Nothing
    /// else was changed yet. Every key is tried; the first failure is returned (and each
    /// logged): the record of the change under way (`crate::pending_record`) then lets a
    /// later attempt finish the job.
    pub fn undo(&self, staged: &Staged) -> Result<()> {
        let mut failed = None;
        for key in staged.undo_keys() {
            let removed = self
                .store
                .delete(&key)
                .and_then(|()| self.store.delete_prefix(&key));
            if let Err(e) = removed {
                tracing::error!(object = %staged.object_id, key, error = %e, "could not remove what a failed change wrote");
                failed.get_or_insert(e);
            }
        }
        match failed {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Discards a staged version that will not be published (deletes its uploads).
    pub fn abort(&self, staged: Staged) {
        for f in &staged.files {
            if let RecordFile::External { locations, .. } = f {
                if let Some(upload) = locations.last() {
                    let _ = fs::remove_file(upload);
                }
            }
        }
    }

    /// The id of the object a staged version belongs to.
    pub fn staged_object_id(staged: &Staged) -> &str {
        &staged.object_id
    }

    /// Takes an object out of the root: its inventories go first, so that from then on
    /// it reads as absent, then everything else of it. `false` if there was nothing.
    /// Not atomic: after a failure the object may be partly removed, without an
    /// inventory; purging it again (journal replay) finishes the job.
    pub fn purge(&self, object_id: &str) -> Result<bool> {
        let prefix = self.object_key(object_id);
        let existed = self
            .store
            .metadata(&format!("{prefix}/{INVENTORY}"))?
            .is_some();
        self.store.delete(&format!("{prefix}/{HEAD_INVENTORY}"))?;
        self.store.delete(&format!("{prefix}/{INVENTORY}"))?;
        self.store.delete_prefix(&prefix)?;
        Ok(existed)
    }

    /// Deletes everything in `staging/` (keeping an empty `uploads/`). Call at start-up,
    /// after the journal has been replayed: nothing staged was ever acknowledged.
    pub fn clear_staging(&self) -> Result<()> {
        self.clear_staging_keeping(|_| false)
    }

    /// [`clear_staging`](Self::clear_staging), except the upload files for which `keep` is
    /// true (those a decided transaction commit still has to publish).
    pub fn clear_staging_keeping(&self, keep: impl Fn(&Path) -> bool) -> Result<()> {
        for entry in fs::read_dir(&self.staging).at(&self.staging)? {
            let path = entry.at(&self.staging)?.path();
            if path.file_name().is_some_and(|n| n == UPLOADS) {
                for upload in fs::read_dir(&path).at(&path)? {
                    let upload = upload.at(&path)?.path();
                    if keep(&upload) {
                        continue;
                    }
                    let _ = fs::remove_file(&upload).or_else(|_| fs::remove_dir_all(&upload));
                }
            } else if path.is_dir() {
                fs::remove_dir_all(&path).at(&path)?;
            } else {
                fs::remove_file(&path).at(&path)?;
            }
        }
        Ok(())
    }

    /// The root of every object in the storage root, as key prefixes in byte order: see
    /// [`list_objects_in`].
    pub fn list_objects(&self) -> Result<Vec<String>> {
        list_objects_in(self.store.as_ref())
    }

    /// The storage root's first-level directories that may hold objects (all but
    /// `extensions`), in [`walk_order`]: the objects of the root are those of each in turn
    /// ([`objects_in_group`](Self::objects_in_group)), so that a walk of a large root can
    /// use the objects of the first groups while it lists the others.
    pub fn object_groups(&self) -> Result<Vec<String>> {
        let mut groups: Vec<String> = self
            .store
            .list_dir("")?
            .dirs
            .into_iter()
            .filter(|d| d != "extensions")
            .collect();
        groups.sort_by(|a, b| walk_order(a, b));
        Ok(groups)
    }

    /// The object roots at or below `group` (one of [`object_groups`](Self::object_groups)),
    /// as key prefixes in [`walk_order`].
    pub fn objects_in_group(&self, group: &str) -> Result<Vec<String>> {
        let mut out = objects_below(self.store.as_ref(), group)?;
        out.sort_by(|a, b| walk_order(a, b));
        Ok(out)
    }

    /// Verifies the inventory file below `prefix` (an object root or a version directory)
    /// against its sidecar: see [`check_sidecar_in`].
    pub fn check_sidecar(&self, prefix: &str) -> Result<bool> {
        check_sidecar_in(self.store.as_ref(), prefix)
    }

    /// Opens a reader over the bytes `range` of the file at `key` (a key relative to the
    /// storage root, as the catalog keeps them).
    pub fn read_range(&self, key: &str, range: std::ops::Range<u64>) -> Result<ByteReader> {
        Ok(self.store.read_range(key, range)?)
    }

    /// Reads a whole small file of the root (headers, RDF, inventories).
    pub fn read_file(&self, key: &str) -> Result<Vec<u8>> {
        Ok(self.store.read(key)?.bytes)
    }
}

/// The root of every object in the storage root held by `store` (those holding an object
/// declaration), as key prefixes in byte order. The hashed n-tuple layout is walked one
/// directory level at a time (S3: one delimiter listing per directory), the subdirectories
/// of each level in parallel on the current rayon pool: a cold walk waits on one directory
/// read after another, a million objects' layout holds about three million directories, and
/// only many reads in flight keep the disk busy.
pub fn list_objects_in(store: &dyn ObjectStorage) -> Result<Vec<String>> {
    let mut out = objects_below(store, "")?;
    out.sort();
    Ok(out)
}

/// The order of a walk of the root group by group ([`OcflRoot::object_groups`]): key
/// prefixes compared as directories, each with a `/` appended (`a-b` before `a/c`, as `-`
/// sorts before `/`), so that every object of a first-level directory comes before those
/// of the next one. For the hashed layouts, whose directory names at each level have one
/// length, it is byte order.
pub fn walk_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn dir(s: &str) -> impl Iterator<Item = u8> + '_ {
        s.bytes().chain(std::iter::once(b'/'))
    }
    dir(a).cmp(dir(b))
}

/// The object roots at or below directory `prefix` of `store`.
fn objects_below(store: &dyn ObjectStorage, prefix: &str) -> Result<Vec<String>> {
    use rayon::prelude::*;
    let listing = store.list_dir(prefix)?;
    let is_object = listing.files.iter().any(|f| {
        let name = f.key.rsplit('/').next().unwrap_or(&f.key);
        name == OBJECT_NAMASTE || name == OBJECT_NAMASTE_1_0
    });
    if is_object && !prefix.is_empty() {
        return Ok(vec![prefix.to_string()]);
    }
    let below = listing
        .dirs
        .par_iter()
        .filter(|d| !(prefix.is_empty() && *d == "extensions"))
        .map(|d| objects_below(store, d))
        .collect::<Result<Vec<_>>>()?;
    Ok(below.into_iter().flatten().collect())
}

/// Reads the object whose root is `prefix` in `store` (any store, with or without a storage
/// root around it); `None` if there is none.
pub fn read_object_in(store: &dyn ObjectStorage, prefix: &str) -> Result<Option<ObjectState>> {
    let read = |rel: &str| -> Result<Option<Contents>> {
        match store.read(&format!("{prefix}/{rel}")) {
            Ok(contents) => Ok(Some(contents)),
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    };
    let parse = |contents: &Contents, rel: &str| {
        Inventory::from_slice(&contents.bytes).map_err(|source| Error::Json {
            path: PathBuf::from(format!("{prefix}/{rel}")),
            source,
        })
    };
    let root = read(INVENTORY)?;
    if let Some(head) = read(HEAD_INVENTORY)? {
        let head_inventory = parse(&head, HEAD_INVENTORY)?;
        let root_inventory = root.as_ref().map(|r| parse(r, INVENTORY)).transpose()?;
        // A head whose version the root already holds was committed, and only its
        // removal did not finish (a writer stopped after the commit point): the root is
        // the object's state, and the stale head goes with the recovery of that change.
        let committed = root_inventory
            .as_ref()
            .is_some_and(|r| r.head >= head_inventory.head);
        if !committed {
            return Ok(Some(ObjectState {
                prefix: prefix.to_string(),
                inventory: head_inventory,
                mutable_head: true,
                revision_markers: crate::head::revision_markers(store, prefix)?,
                root_etag: root.map(|r| r.etag),
                head_etag: Some(head.etag),
            }));
        }
    }
    let Some(root) = root else {
        return Ok(None);
    };
    Ok(Some(ObjectState {
        prefix: prefix.to_string(),
        inventory: parse(&root, INVENTORY)?,
        mutable_head: false,
        revision_markers: Vec::new(),
        root_etag: Some(root.etag),
        head_etag: None,
    }))
}

/// Verifies the inventory file below `prefix` (an object root or a version directory)
/// against its sidecar: the one named after the inventory's `digestAlgorithm`, whose
/// digest must be that algorithm's digest of the inventory's bytes.
pub fn check_sidecar_in(store: &dyn ObjectStorage, prefix: &str) -> Result<bool> {
    let key = format!("{prefix}/{INVENTORY}");
    let inv = store.read(&key)?.bytes;
    let algorithm = Inventory::from_slice(&inv)
        .map_err(|source| Error::Json {
            path: PathBuf::from(&key),
            source,
        })?
        .content_digest()?;
    let sidecar = store
        .read(&format!("{prefix}/{}", sidecar(algorithm)))?
        .bytes;
    let sidecar = String::from_utf8_lossy(&sidecar);
    Ok(sidecar.split_whitespace().next() == Some(&MultiHasher::digest(algorithm, &inv)[..]))
}

/// The inventory of a new object (with digest algorithm `algorithm`) before its first
/// version.
pub(crate) fn empty_inventory(object_id: &str, algorithm: DigestAlgorithm) -> Inventory {
    Inventory {
        id: object_id.to_string(),
        inventory_type: INVENTORY_TYPE_1_1.to_string(),
        digest_algorithm: algorithm.ocfl_name().to_string(),
        head: VersionNum::first(),
        content_directory: Some("content".to_string()),
        fixity: Default::default(),
        manifest: BTreeMap::new(),
        versions: BTreeMap::new(),
    }
}

/// A `versions` entry with `info` and the state `state` (logical path → digest).
pub(crate) fn new_version_entry(info: VersionInfo, state: &BTreeMap<String, String>) -> Version {
    Version {
        created: inventory_instant(&info.created),
        message: Some(info.message),
        user: Some(User {
            name: info.user_name,
            address: Some(info.user_address),
        }),
        state: group_state(state),
    }
}

/// An RFC 3339 instant as ocfl-java writes a version's `created` (Jackson's
/// `ISO_OFFSET_DATE_TIME`): the fraction of a second without trailing zeros, none if it is
/// zero. Fedora's headers keep groups of three digits (`Instant.toString`), so the same
/// instant is spelled `…51.442474880Z` there and `…51.44247488Z` here; ocfl-java rewrites
/// the root inventory's earlier versions in its own spelling when it adds one, and a version
/// directory's inventory that spells it otherwise is then a W011 warning.
pub(crate) fn inventory_instant(created: &str) -> String {
    let Some(dot) = created.find('.') else {
        return created.to_string();
    };
    let digits = created[dot + 1..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(created.len(), |n| dot + 1 + n);
    let fraction = created[dot + 1..digits].trim_end_matches('0');
    let point = if fraction.is_empty() { "" } else { "." };
    format!("{}{point}{fraction}{}", &created[..dot], &created[digits..])
}

/// Applies `changes` to `state` (logical path → digest): content whose digest the
/// manifest already holds is reused (keeping the manifest's spelling of the digest and
/// dropping an upload), new content goes to `content_prefix/<encoded logical path>` and
/// into `files`. Digests are the inventory's algorithm's.
///
/// # Errors
/// [`Error::DigestAlgorithm`] for an upload whose digest is in another algorithm.
pub(crate) fn apply_changes(
    inventory: &mut Inventory,
    state: &mut BTreeMap<String, String>,
    changes: Vec<Change>,
    content_prefix: &str,
    files: &mut Vec<RecordFile>,
) -> Result<()> {
    let algorithm = inventory.content_digest()?;
    for change in changes {
        let Some(content) = change.content else {
            state.remove(&change.logical_path);
            continue;
        };
        let digest = match &content {
            Content::Bytes(b) => MultiHasher::digest(algorithm, b),
            Content::File { digest, .. } | Content::Stored { digest, .. }
                if digest.algorithm == algorithm =>
            {
                digest.hex.to_ascii_lowercase()
            }
            Content::File { digest, .. } | Content::Stored { digest, .. } => {
                return Err(Error::DigestAlgorithm {
                    object: inventory.id.clone(),
                    expected: algorithm,
                    found: digest.algorithm,
                })
            }
        };
        let known = inventory
            .manifest
            .keys()
            .find(|k| k.eq_ignore_ascii_case(&digest))
            .cloned();
        let digest = match known {
            // Already stored (earlier version, or earlier in this one): reuse it.
            Some(known) => {
                if let Content::File { path, .. } = &content {
                    let _ = fs::remove_file(path);
                }
                known
            }
            None => {
                let encoded = encode_logical_path(&change.logical_path);
                let content_path = format!("{content_prefix}/{encoded}");
                files.push(match content {
                    Content::Bytes(b) => RecordFile::inline(&content_path, b),
                    Content::File { path, .. } => RecordFile::External {
                        locations: vec![path],
                        rel: content_path.clone(),
                        digest: DigestValue {
                            algorithm,
                            hex: digest.clone(),
                        },
                    },
                    Content::Stored { key, .. } => RecordFile::Stored {
                        rel: content_path.clone(),
                        from: key,
                        digest: DigestValue {
                            algorithm,
                            hex: digest.clone(),
                        },
                    },
                });
                inventory
                    .manifest
                    .insert(digest.clone(), vec![content_path]);
                digest
            }
        };
        state.insert(change.logical_path, digest);
    }
    Ok(())
}

/// A version's inventory and sidecar, then the root copies (inventory before sidecar):
/// publish and replay write files in this order.
pub(crate) fn push_version_inventories(
    files: &mut Vec<RecordFile>,
    version: VersionNum,
    inventory: &Inventory,
) -> Result<()> {
    let algorithm = inventory.content_digest()?;
    let bytes = inventory.to_bytes();
    let sidecar_bytes = sidecar_for(algorithm, &bytes);
    let sidecar = sidecar(algorithm);
    files.push(RecordFile::inline(
        &format!("{version}/{INVENTORY}"),
        bytes.clone(),
    ));
    files.push(RecordFile::inline(
        &format!("{version}/{sidecar}"),
        sidecar_bytes.clone().into_bytes(),
    ));
    files.push(RecordFile::inline(INVENTORY, bytes));
    files.push(RecordFile::inline(&sidecar, sidecar_bytes.into_bytes()));
    Ok(())
}

/// The root in the local directory `root` (the store in deferred mode, as the server opens
/// it), created if missing: for this crate's unit tests.
#[cfg(test)]
pub(crate) fn local_root(root: &Path, staging: &Path) -> Result<OcflRoot> {
    let store = arca_storage::FsStorage::open_deferred(root)?;
    OcflRoot::open(Arc::new(store), staging)
}

/// Whether the inline file `rel` of a staged change is written as it is, with no condition
/// and no copy kept: anything but the root inventory, its sidecar and the mutable HEAD's
/// inventory (see [`OcflRoot::publish_file`]).
fn is_plain_write(rel: &str) -> bool {
    rel != INVENTORY && !is_sidecar_of(rel, INVENTORY) && rel != HEAD_INVENTORY
}
