use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use arca_model::{DigestAlgorithm, DigestValue, MultiHasher};
use arca_storage::fsutil;

use crate::error::IoContext;
use crate::inventory::{group_state, is_sidecar_of, sidecar_for, sidecar_name};
use crate::layout::{HashedNTuple, EXTENSION_0004, LAYOUT_CONFIG_JSON, OCFL_LAYOUT_JSON};
use crate::mapper::encode_logical_path;
use crate::record::RecordFile;
use crate::{Error, Inventory, Result, User, Version, VersionNum, INVENTORY_TYPE_1_1};

const ROOT_NAMASTE: &str = "0=ocfl_1.1";
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

/// Whether a file of an object is replaced by a new one at the same name (atomically, by
/// a rename) when it changes: the root inventory and sidecar and the mutable HEAD's.
pub(crate) fn is_replaced_in_place(rel: &str) -> bool {
    rel == INVENTORY
        || rel == HEAD_INVENTORY
        || is_sidecar_of(rel, INVENTORY)
        || is_sidecar_of(rel, HEAD_INVENTORY)
        || is_sidecar_of(rel, ROOT_INVENTORY_COPY)
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
    pub(crate) object_dir: PathBuf,
    pub(crate) kind: StagedKind,
    /// Every file of the change, in the order publish writes them, for the redo journal.
    pub(crate) files: Vec<RecordFile>,
    /// The inventory readers see once published (the mutable HEAD's for a revision).
    pub inventory: Inventory,
    /// Where publish puts what it removes or replaces, so that undo can put it back:
    /// `(original path, saved path)`, in publish order. The directory goes when the
    /// `Staged` is dropped (or with `clear_staging` after a crash).
    saved: Mutex<Vec<(PathBuf, PathBuf)>>,
    /// The staging directory, where the trash is made when publish first needs it.
    staging: PathBuf,
    trash: std::sync::OnceLock<PathBuf>,
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
        staging: &Path,
        object_id: &str,
        object_dir: PathBuf,
        kind: StagedKind,
        files: Vec<RecordFile>,
        inventory: Inventory,
    ) -> Self {
        Self {
            object_id: object_id.to_string(),
            object_dir,
            kind,
            files,
            inventory,
            saved: Mutex::new(Vec::new()),
            staging: staging.to_path_buf(),
            trash: std::sync::OnceLock::new(),
        }
    }

    /// The object's directory in the root.
    pub fn object_dir(&self) -> &Path {
        &self.object_dir
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

    /// Where the `n`th saved file goes, in a trash directory made on first use (most
    /// publishes save nothing, and pay for no directory).
    fn trash_slot(&self, n: usize) -> Result<PathBuf> {
        let trash = self.trash.get_or_init(|| {
            self.staging
                .join(format!("trash-{}", uuid::Uuid::new_v4().simple()))
        });
        fs::create_dir_all(trash).at(trash)?;
        Ok(trash.join(n.to_string()))
    }

    /// Moves `path` (a file or directory) into the trash, to be put back by undo.
    fn save_away(&self, path: &Path) -> Result<()> {
        let mut saved = self.saved.lock().unwrap_or_else(|e| e.into_inner());
        let to = self.trash_slot(saved.len())?;
        match fs::rename(path, &to) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).at(path),
        }
        saved.push((path.to_path_buf(), to));
        Ok(())
    }

    /// Keeps a copy of the file at `path` (about to be replaced) for undo: a hard link,
    /// or a copy where there are none.
    fn save_copy(&self, path: &Path) -> Result<()> {
        let mut saved = self.saved.lock().unwrap_or_else(|e| e.into_inner());
        let to = self.trash_slot(saved.len())?;
        if fs::hard_link(path, &to).is_err() {
            match fs::copy(path, &to) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e).at(path),
            }
        }
        saved.push((path.to_path_buf(), to));
        Ok(())
    }

    /// Puts back everything publish saved away, newest first.
    fn restore_saved(&self) {
        let mut saved = self.saved.lock().unwrap_or_else(|e| e.into_inner());
        while let Some((original, from)) = saved.pop() {
            if let Some(parent) = original.parent() {
                let _ = fs::create_dir_all(parent);
            }
            if let Err(e) = fs::rename(&from, &original) {
                tracing::error!(object = %self.object_id, path = %original.display(), error = %e, "could not restore a file");
            }
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(trash) = self.trash.get() {
            let _ = fs::remove_dir_all(trash);
        }
    }
}

/// What a reader needs of an object: its inventory and where it lives.
#[derive(Debug, Clone)]
pub struct ObjectState {
    /// Absolute object directory.
    pub dir: PathBuf,
    /// The head inventory (the mutable HEAD's, if the object has one).
    pub inventory: Inventory,
    /// Whether the head is an OCFL 0005 mutable HEAD (written with auto-versioning off).
    pub mutable_head: bool,
    /// The mutable HEAD's revision markers (`revisions/rN`), as numbers, ascending.
    pub(crate) revision_markers: Vec<u32>,
}

impl ObjectState {
    /// Absolute path of the content file for a logical path in the head state.
    pub fn head_file(&self, logical: &str) -> Option<PathBuf> {
        self.inventory
            .resolve_head(logical)
            .map(|p| self.dir.join(p))
    }

    /// The mutable HEAD's latest revision number (`None` without a mutable HEAD).
    pub fn revision(&self) -> Option<u32> {
        self.revision_markers.last().copied()
    }
}

/// An OCFL storage root on the local filesystem plus its staging area (which must be on the
/// same filesystem, so that publishing is a rename).
///
/// Each object keeps the digest algorithm its inventory names; new objects get the root's
/// [`digest_algorithm`](Self::digest_algorithm) (sha512 unless set otherwise), as ocfl-java
/// does with its default algorithm. OCFL records no algorithm at the root level.
#[derive(Debug)]
pub struct OcflRoot {
    root: PathBuf,
    pub(crate) staging: PathBuf,
    layout: HashedNTuple,
    digest_algorithm: DigestAlgorithm,
}

impl OcflRoot {
    /// Opens the root at `root`, creating it (as Fedora 6 would) if the directory is missing
    /// or empty. `staging` is created if needed.
    pub fn open_or_create(root: &Path, staging: &Path) -> Result<Self> {
        fs::create_dir_all(root).at(root)?;
        fs::create_dir_all(staging.join(UPLOADS)).at(staging)?;
        let layout = if root.join(ROOT_NAMASTE).exists() || root.join(ROOT_NAMASTE_1_0).exists() {
            Self::read_layout(root)?
        } else {
            let empty = fs::read_dir(root).at(root)?.next().is_none();
            if !empty {
                return Err(Error::Invalid(format!(
                    "{} is not empty and has no {ROOT_NAMASTE} declaration",
                    root.display()
                )));
            }
            Self::create_root_files(root)?;
            HashedNTuple::default()
        };
        if !root.join(ROOT_NAMASTE).exists() {
            // ocfl-java upgrades a 1.0 root declaration to 1.1 when it opens it for writing.
            fsutil::write_new(&root.join(ROOT_NAMASTE), b"ocfl_1.1\n").at(root)?;
            let _ = fs::remove_file(root.join(ROOT_NAMASTE_1_0));
            fsutil::sync_dir(root).at(root)?;
        }
        Ok(Self {
            root: root.to_path_buf(),
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

    /// The digest algorithm of an existing object, known from the name of its root sidecar
    /// (one or two `stat`s, no inventory read); `None` if there is no object.
    pub fn object_digest_algorithm(&self, object_id: &str) -> Result<Option<DigestAlgorithm>> {
        let dir = self.object_dir(object_id);
        for algorithm in [DigestAlgorithm::Sha512, DigestAlgorithm::Sha256] {
            let path = dir.join(sidecar(algorithm));
            match fs::symlink_metadata(&path) {
                Ok(_) => return Ok(Some(algorithm)),
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(e).at(&path),
            }
        }
        Ok(None)
    }

    fn create_root_files(root: &Path) -> Result<()> {
        let ext = root.join("extensions").join(EXTENSION_0004);
        fs::create_dir_all(&ext).at(&ext)?;
        fsutil::replace_atomically(&ext.join("config.json"), LAYOUT_CONFIG_JSON.as_bytes())
            .at(&ext)?;
        fsutil::replace_atomically(&root.join("ocfl_layout.json"), OCFL_LAYOUT_JSON.as_bytes())
            .at(root)?;
        fsutil::replace_atomically(&root.join(ROOT_NAMASTE), b"ocfl_1.1\n").at(root)?;
        fsutil::sync_dir(&ext).at(&ext)?;
        fsutil::sync_dir(&root.join("extensions")).at(root)?;
        fsutil::sync_dir(root).at(root)
    }

    fn read_layout(root: &Path) -> Result<HashedNTuple> {
        let layout_file = root.join("ocfl_layout.json");
        let name = match fs::read(&layout_file) {
            Ok(bytes) => {
                let v: serde_json::Value =
                    serde_json::from_slice(&bytes).map_err(|source| Error::Json {
                        path: layout_file.clone(),
                        source,
                    })?;
                v.get("extension")
                    .and_then(|e| e.as_str())
                    .unwrap_or_default()
                    .to_string()
            }
            // ocfl-java falls back to its default layout when the file is missing.
            Err(e) if e.kind() == ErrorKind::NotFound => EXTENSION_0004.to_string(),
            Err(e) => return Err(e).at(&layout_file),
        };
        if name != EXTENSION_0004 {
            return Err(Error::Unsupported(format!(
                "storage layout {name:?}; arca reads and writes {EXTENSION_0004}"
            )));
        }
        let config = root
            .join("extensions")
            .join(EXTENSION_0004)
            .join("config.json");
        match fs::read(&config) {
            Ok(bytes) => {
                let v: serde_json::Value =
                    serde_json::from_slice(&bytes).map_err(|source| Error::Json {
                        path: config.clone(),
                        source,
                    })?;
                HashedNTuple::from_config(&v).map_err(Error::Unsupported)
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(HashedNTuple::default()),
            Err(e) => Err(e).at(&config),
        }
    }

    /// The storage root directory.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The staging directory.
    pub fn staging_path(&self) -> &Path {
        &self.staging
    }

    /// Directory for client uploads in progress (same filesystem as the root).
    pub fn uploads_dir(&self) -> PathBuf {
        self.staging.join(UPLOADS)
    }

    /// Absolute directory of an object (whether or not it exists).
    pub fn object_dir(&self, object_id: &str) -> PathBuf {
        self.root.join(self.layout.object_path(object_id))
    }

    /// Reads an object's head inventory; `None` if the object does not exist.
    pub fn read_object(&self, object_id: &str) -> Result<Option<ObjectState>> {
        Self::read_object_at(&self.object_dir(object_id))
    }

    /// Reads the object stored in `dir`; `None` if there is none.
    pub fn read_object_at(dir: &Path) -> Result<Option<ObjectState>> {
        let head = dir.join(MUTABLE_HEAD).join(INVENTORY);
        let (path, mutable_head) = if head.exists() {
            (head, true)
        } else {
            (dir.join(INVENTORY), false)
        };
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).at(&path),
        };
        let inventory =
            Inventory::from_slice(&bytes).map_err(|source| Error::Json { path, source })?;
        let revision_markers = if mutable_head {
            crate::head::revision_markers(dir)?
        } else {
            Vec::new()
        };
        Ok(Some(ObjectState {
            dir: dir.to_path_buf(),
            inventory,
            mutable_head,
            revision_markers,
        }))
    }

    /// Prepares a change of `object_id` (a new object if `current` is `None`) in memory:
    /// the new inventory and every file to write, the way `mode` says (see [`HeadMode`]).
    /// Content already stored in the object is not written again (dedup by digest).
    /// Nothing on disk changes until [`publish`](Self::publish); the caller journals
    /// [`crate::versions_record`] first.
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
        let object_dir = self.object_dir(object_id);
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
            &object_dir,
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
            &self.staging,
            object_id,
            object_dir,
            StagedKind::Version {
                version,
                is_new_object,
                from_head: false,
            },
            files,
            inventory,
        ))
    }

    /// Writes a staged change into the root. Call only once its journal record is
    /// durable. A new object's files are written in place; an existing object gets its new
    /// version directory (or mutable HEAD revision), then its root (or mutable HEAD)
    /// inventory and sidecar are replaced atomically, then what the change removes goes.
    /// On failure the partial change is removed again (see [`undo`](Self::undo)).
    pub fn publish(&self, staged: &Staged) -> Result<()> {
        self.check_publishable(staged)?;
        let result = staged
            .files
            .iter()
            .try_for_each(|f| self.publish_file(staged, f));
        if result.is_err() {
            self.undo(staged);
        }
        result
    }

    /// Writes a staged change whose journal record is already acknowledged to its client.
    /// Like [`publish`](Self::publish), but an acknowledged change is finished, never
    /// undone: a failure leaves what was written in place for [`redo`](Self::redo) to
    /// complete, as journal replay would after a crash.
    pub fn publish_acknowledged(&self, staged: &Staged) -> Result<()> {
        self.check_publishable(staged)?;
        staged
            .files
            .iter()
            .try_for_each(|f| self.publish_file(staged, f))
    }

    /// Writes (or moves, or removes) one file of a staged change.
    pub(crate) fn publish_file(&self, staged: &Staged, file: &RecordFile) -> Result<()> {
        match file {
            RecordFile::Inline { rel, .. } if rel == INVENTORY || is_sidecar_of(rel, INVENTORY) => {
                self.install_root_copy(staged, rel, file)
            }
            RecordFile::Inline { rel, .. } if is_replaced_in_place(rel) => {
                let target = staged.object_dir.join(rel);
                if !staged.is_new_object() {
                    staged.save_copy(&target)?;
                }
                self.write_file(&staged.object_dir, file, true)
            }
            RecordFile::Move { rel, from, .. } => {
                let (source, target) = (staged.object_dir.join(from), staged.object_dir.join(rel));
                let parent = target.parent().expect("files have parents");
                fs::create_dir_all(parent).at(parent)?;
                fs::rename(&source, &target).at(&source)
            }
            RecordFile::Remove { rel } => {
                let target = staged.object_dir.join(rel);
                staged.save_away(&target)?;
                fsutil::remove_empty_parents(&target, &staged.object_dir);
                Ok(())
            }
            _ => self.write_file(&staged.object_dir, file, !staged.is_new_object()),
        }
    }

    /// Refuses to publish over something that is already there (nothing is written yet).
    fn check_publishable(&self, staged: &Staged) -> Result<()> {
        let dir = &staged.object_dir;
        if staged.is_new_object() {
            if dir.exists() {
                return Err(Error::AlreadyExists(staged.object_id.clone()));
            }
            return Ok(());
        }
        match staged.kind {
            StagedKind::Version {
                version, from_head, ..
            } => {
                if dir.join(version.to_string()).exists() {
                    return Err(Error::AlreadyExists(format!(
                        "{} {version}",
                        staged.object_id
                    )));
                }
                if from_head {
                    crate::head::check_root_unchanged(
                        dir,
                        &staged.object_id,
                        staged.inventory.content_digest()?,
                    )?;
                }
            }
            StagedKind::Revision {
                revision, new_head, ..
            } => {
                if new_head {
                    if dir.join(MUTABLE_HEAD_EXT).exists() {
                        return Err(Error::AlreadyExists(format!(
                            "{} mutable HEAD",
                            staged.object_id
                        )));
                    }
                } else {
                    if dir.join(REVISIONS).join(format!("r{revision}")).exists() {
                        return Err(Error::AlreadyExists(format!(
                            "{} mutable HEAD revision r{revision}",
                            staged.object_id
                        )));
                    }
                    crate::head::check_root_unchanged(
                        dir,
                        &staged.object_id,
                        staged.inventory.content_digest()?,
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Installs the root inventory or sidecar as a hard link to the new version's copy
    /// (written just before, byte for byte the same): one inode and one data block less
    /// per object, and the same bytes for every reader. Nothing in arca ever writes into an
    /// existing file (updates rename a new file over the old name), nor does ocfl-java
    /// (it replaces root inventories with a copy that unlinks the old name first), so the
    /// two names cannot drift apart. Falls back to writing the bytes where the file system
    /// has no hard links.
    fn install_root_copy(&self, staged: &Staged, rel: &str, file: &RecordFile) -> Result<()> {
        let copy = staged
            .object_dir
            .join(format!("{}/{rel}", staged.root_copy_version()));
        let target = staged.object_dir.join(rel);
        if staged.is_new_object() {
            if fs::hard_link(&copy, &target).is_ok() {
                return Ok(());
            }
        } else {
            let tmp = self
                .staging
                .join(format!("{}-{rel}", uuid::Uuid::new_v4().simple()));
            if fs::hard_link(&copy, &tmp).is_ok() {
                // Atomic replacement of the old root copy.
                return fs::rename(&tmp, &target).at(&target);
            }
        }
        self.write_file(&staged.object_dir, file, !staged.is_new_object())
    }

    /// Writes one new file of a change below `dir`. With `replace`, the inventories and
    /// sidecars that change in place are replaced atomically (written in staging, then
    /// renamed over the old one). Moves and removals are not written by this.
    pub(crate) fn write_file(&self, dir: &Path, file: &RecordFile, replace: bool) -> Result<()> {
        match file {
            RecordFile::Inline { rel, bytes } => {
                let target = dir.join(rel);
                let parent = target.parent().expect("files have parents");
                if replace && is_replaced_in_place(rel) {
                    let tmp = self.staging.join(format!(
                        "{}-{}",
                        uuid::Uuid::new_v4().simple(),
                        target.file_name().expect("a file name").to_string_lossy()
                    ));
                    fsutil::write_new(&tmp, bytes).at(&tmp)?;
                    if let Err(e) = fs::rename(&tmp, &target) {
                        if e.kind() != ErrorKind::NotFound {
                            return Err(e).at(&target);
                        }
                        fs::create_dir_all(parent).at(parent)?;
                        fs::rename(&tmp, &target).at(&target)?;
                    }
                    return Ok(());
                }
                match fsutil::write_new(&target, bytes) {
                    Err(e) if e.kind() == ErrorKind::NotFound => {
                        fs::create_dir_all(parent).at(parent)?;
                        fsutil::write_new(&target, bytes).at(&target)
                    }
                    other => other.at(&target),
                }
            }
            RecordFile::External { rel, locations, .. } => {
                let target = dir.join(rel);
                let parent = target.parent().expect("files have parents");
                fs::create_dir_all(parent).at(parent)?;
                let source = locations.last().expect("an upload location");
                fs::rename(source, &target).at(source)
            }
            RecordFile::Move { .. } | RecordFile::Remove { .. } => {
                unreachable!("moves and removals are not written as files")
            }
        }
    }

    /// Removes what a failed [`publish`](Self::publish) wrote: a new object entirely; an
    /// existing object's new version directory, with the root inventory set back to the
    /// previous version's and a committed mutable HEAD put back; or a mutable HEAD's new
    /// revision, with the previous revision's inventory and files put back.
    pub fn undo(&self, staged: &Staged) {
        let dir = &staged.object_dir;
        if staged.is_new_object() {
            let _ = fs::remove_dir_all(dir);
            self.remove_empty_ancestors(dir);
            return;
        }
        match staged.kind {
            StagedKind::Version {
                version, from_head, ..
            } => {
                if from_head {
                    staged.restore_saved();
                    for f in staged.files.iter().rev() {
                        if let RecordFile::Move { rel, from, .. } = f {
                            let (moved, back) = (dir.join(rel), dir.join(from));
                            if moved.exists() && !back.exists() {
                                if let Some(parent) = back.parent() {
                                    let _ = fs::create_dir_all(parent);
                                }
                                let _ = fs::rename(&moved, &back);
                            }
                        }
                    }
                }
                let _ = fs::remove_dir_all(dir.join(version.to_string()));
                if let Err(e) = self.roll_forward(dir) {
                    tracing::error!(object = %staged.object_id, error = %e, "could not restore the root inventory");
                }
            }
            StagedKind::Revision {
                revision, new_head, ..
            } => {
                if new_head {
                    let ext = dir.join(MUTABLE_HEAD_EXT);
                    let _ = fs::remove_dir_all(&ext);
                    fsutil::remove_empty_parents(&ext, dir);
                } else {
                    staged.restore_saved();
                    let content = dir.join(crate::head::revision_content_dir(
                        &staged.inventory,
                        revision,
                    ));
                    let _ = fs::remove_dir_all(&content);
                    fsutil::remove_empty_parents(&content, dir);
                    let _ = fs::remove_file(dir.join(REVISIONS).join(format!("r{revision}")));
                }
            }
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

    /// Takes an object out of the root: a staging marker naming the object is written
    /// first, then the object directory is renamed into staging and the empty directories
    /// above it are removed (the hierarchy keeps no empty directories). Returns the trash
    /// directory to hand to [`finish_purge`](Self::finish_purge) once the caller has made
    /// the removal durable; `None` if the object did not exist. A crash in between leaves
    /// the marker, so recovery knows which object went away.
    pub fn purge(&self, object_id: &str) -> Result<Option<PathBuf>> {
        let dir = self.object_dir(object_id);
        if !dir.exists() {
            // Already gone (e.g. a purge replayed after a crash): its parents may still be
            // there, emptied; the hierarchy keeps no empty directories (E073).
            self.remove_empty_ancestors(&dir);
            return Ok(None);
        }
        let trash = self
            .staging
            .join(format!("purge-{}", uuid::Uuid::new_v4().simple()));
        fs::create_dir(&trash).at(&trash)?;
        fs::rename(&dir, trash.join("object")).at(&dir)?;
        fsutil::remove_empty_parents(&dir, &self.root);
        Ok(Some(trash))
    }

    /// Removes the empty directories above a missing object directory, from the deepest
    /// one that exists (a crash may have left only some of them) up to the root.
    pub(crate) fn remove_empty_ancestors(&self, object_dir: &Path) {
        let mut start = object_dir;
        while let Some(parent) = start.parent() {
            if parent == self.root || parent.exists() {
                break;
            }
            start = parent;
        }
        fsutil::remove_empty_parents(start, &self.root);
    }

    /// Deletes the trash left by [`purge`](Self::purge).
    pub fn finish_purge(&self, trash: PathBuf) {
        let _ = fs::remove_dir_all(trash);
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

    /// Makes the root inventory and sidecar equal the highest version directory's.
    fn roll_forward(&self, object_dir: &Path) -> Result<()> {
        let mut highest: Option<VersionNum> = None;
        for entry in fs::read_dir(object_dir).at(object_dir)? {
            let name = entry.at(object_dir)?.file_name();
            if let Some(v) = name.to_str().and_then(VersionNum::parse) {
                if highest.is_none_or(|h| v > h) {
                    highest = Some(v);
                }
            }
        }
        let Some(version) = highest else {
            return Err(Error::Invalid(format!(
                "{} has no version directory",
                object_dir.display()
            )));
        };
        let version_dir = object_dir.join(version.to_string());
        let path = version_dir.join(INVENTORY);
        let inventory = fs::read(&path).at(&version_dir)?;
        let algorithm = Inventory::from_slice(&inventory)
            .map_err(|source| Error::Json { path, source })?
            .content_digest()?;
        let sidecar_bytes = sidecar_for(algorithm, &inventory);
        self.write_file(object_dir, &RecordFile::inline(INVENTORY, inventory), true)?;
        self.write_file(
            object_dir,
            &RecordFile::inline(&sidecar(algorithm), sidecar_bytes.into_bytes()),
            true,
        )
    }

    /// Every object directory under the root (those holding an object declaration).
    /// Directories are visited in sorted order so that a resumed walk sees the same order.
    pub fn list_object_dirs(&self) -> Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let mut children = Vec::new();
            let mut is_object = false;
            for entry in fs::read_dir(&dir).at(&dir)? {
                let entry = entry.at(&dir)?;
                let name = entry.file_name();
                if name == OBJECT_NAMASTE || name == OBJECT_NAMASTE_1_0 {
                    is_object = true;
                    break;
                }
                if dir == self.root && name == "extensions" {
                    continue;
                }
                if entry.file_type().at(&dir)?.is_dir() {
                    children.push(entry.path());
                }
            }
            if is_object {
                out.push(dir);
            } else {
                children.sort();
                stack.extend(children.into_iter().rev());
            }
        }
        out.sort();
        Ok(out)
    }

    /// Verifies the inventory file in `dir` (an object or a version directory) against
    /// its sidecar: the one named after the inventory's `digestAlgorithm`, whose digest
    /// must be that algorithm's digest of the inventory's bytes.
    pub fn check_sidecar(dir: &Path) -> Result<bool> {
        let path = dir.join(INVENTORY);
        let inv = fs::read(&path).at(dir)?;
        let algorithm = Inventory::from_slice(&inv)
            .map_err(|source| Error::Json { path, source })?
            .content_digest()?;
        let sidecar = fs::read_to_string(dir.join(sidecar(algorithm))).at(dir)?;
        Ok(sidecar.split_whitespace().next() == Some(&MultiHasher::digest(algorithm, &inv)[..]))
    }
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
    object_dir: &Path,
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
            Content::File { digest, .. } if digest.algorithm == algorithm => {
                digest.hex.to_ascii_lowercase()
            }
            Content::File { digest, .. } => {
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
                        locations: vec![object_dir.join(&content_path), path],
                        rel: content_path.clone(),
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
