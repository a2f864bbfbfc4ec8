//! [`FsStorage`]: the store on a local directory.

use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use super::key::{check_key, check_prefix, join};
use super::{
    ByteReader, Contents, DirListing, ETag, FileInfo, ObjectStorage, Precondition, StoreError,
    StoreResult,
};
use crate::fsutil;

/// Temporary files end with this; listings skip them, so no key may end with it.
const TEMP_SUFFIX: &str = ".arca-tmp";

/// Whether a file name is one of this store's temporary files (`temp_path_for`).
fn is_temporary(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(TEMP_SUFFIX)
}

/// How many locks conditional writes are spread over (by a hash of the key).
const LOCK_STRIPES: usize = 64;

/// How often a write retries creating its directory or temporary file when a concurrent
/// delete removed an emptied directory in between.
const CREATE_ATTEMPTS: u32 = 5;

/// The store on a local directory: key `a/b/c` is the file `<root>/a/b/c`.
///
/// Every write is atomic and durable when it returns: the bytes go to a temporary file in
/// the target's directory (`.<name>.<pid>-<n>.arca-tmp`), which is synced and then renamed
/// over the target, and the directory is synced (so are the directories a write creates).
/// Directories are made as writes need them and removed when a delete or rename empties
/// them, so the tree holds no empty directory (as OCFL wants).
///
/// The ETag of a file is `<size>-<mtime in ns>-<inode>` (hexadecimal), read with one
/// `stat` and no read of the bytes. Files are never written in place, so a new version
/// is a new inode, created while the old one still existed; `put`, `put_if` and `copy`
/// also give the new file a modification time later than the one it replaces (even within
/// one tick of the clock), so a reused inode cannot bring an old tag back. The tag changes
/// with every replacement, including one by the same bytes (where S3's MD5 tag would not).
///
/// Conditional writes ([`put_if`](ObjectStorage::put_if)) check and rename under a lock
/// of this store: they are atomic against each other within one process. The filesystem
/// store is for a single node; several nodes share an [`S3Storage`](super::S3Storage).
///
/// **Deferred mode** ([`open_deferred`](Self::open_deferred)) is for a caller that makes
/// writes durable itself, as arca's journal does (a redo record per change, then one
/// `syncfs` for everything at a checkpoint): nothing is synced; a file at a key that holds
/// nothing is written where it goes (no temporary file: a concurrent reader could see a
/// part of it, so readers must wait until the caller's change is written, as arca's
/// readers wait for a publication); a replacement still goes through a temporary file and
/// a rename, so readers of an existing key always see a whole version; and
/// [`copy`](ObjectStorage::copy) and [`put_copy`](ObjectStorage::put_copy) make hard links
/// (no file is ever written in place, so two names of one file cannot drift apart).
#[derive(Debug)]
pub struct FsStorage {
    root: PathBuf,
    /// A handle of `root` (`O_PATH`): files are read relative to it, so that a read walks
    /// only the key's own path components (a content file's are 7 of the 12 below `/`).
    root_dir: std::os::fd::OwnedFd,
    /// The device and inode of the directory `root_dir` holds: a file missing below it is
    /// looked for at `root` again when `root` is another directory now (a root deleted and
    /// made anew while the store is open).
    root_id: (u64, u64),
    conditional_locks: [Mutex<()>; LOCK_STRIPES],
    temp_counter: AtomicU64,
    /// Whether every write is synced before it returns (not in deferred mode).
    sync: bool,
}

impl FsStorage {
    /// The store on the directory `root`, created if missing.
    ///
    /// # Errors
    /// [`StoreError::Io`] if it cannot be created, [`StoreError::Config`] if `root` is not
    /// a directory.
    pub fn open(root: &Path) -> StoreResult<Self> {
        Self::open_with(root, true)
    }

    /// The store on the directory `root` in deferred mode (see the type's documentation):
    /// the caller makes its writes durable.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_deferred(root: &Path) -> StoreResult<Self> {
        Self::open_with(root, false)
    }

    fn open_with(root: &Path, sync: bool) -> StoreResult<Self> {
        fs::create_dir_all(root).map_err(|e| StoreError::io(root.display().to_string(), e))?;
        if !root.is_dir() {
            return Err(StoreError::Config {
                setting: "storage root",
                problem: format!("{} is not a directory", root.display()),
            });
        }
        let root_dir = rustix::fs::open(
            root,
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(|e| StoreError::io(root.display().to_string(), e.into()))?;
        let stat = rustix::fs::fstat(&root_dir)
            .map_err(|e| StoreError::io(root.display().to_string(), e.into()))?;
        Ok(Self {
            root: root.to_path_buf(),
            root_dir,
            root_id: (stat.st_dev, stat.st_ino),
            conditional_locks: std::array::from_fn(|_| Mutex::new(())),
            temp_counter: AtomicU64::new(0),
            sync,
        })
    }

    /// Whether writes are synced before they return (`false` in deferred mode).
    pub fn syncs(&self) -> bool {
        self.sync
    }

    /// Syncs the directory `dir` unless in deferred mode.
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.sync {
            fsutil::sync_dir(dir)
        } else {
            Ok(())
        }
    }

    /// The directory the keys are relative to.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The local path of `key` (checked).
    pub fn path_of(&self, key: &str) -> StoreResult<PathBuf> {
        check_key(key)?;
        Ok(self.root.join(key))
    }

    fn lock_for(&self, key: &str) -> &Mutex<()> {
        let hash = crc32fast::hash(key.as_bytes()) as usize;
        &self.conditional_locks[hash % LOCK_STRIPES]
    }

    /// A fresh temporary path beside `target`.
    fn temp_path_for(&self, target: &Path) -> PathBuf {
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let n = self.temp_counter.fetch_add(1, Ordering::Relaxed);
        target.with_file_name(format!(".{name}.{}-{n}{TEMP_SUFFIX}", std::process::id()))
    }

    /// Makes the directories down to `dir` that are missing, syncing the parent of each
    /// one made so that its entry is durable.
    fn create_dirs(&self, dir: &Path) -> io::Result<()> {
        if dir.is_dir() {
            return Ok(());
        }
        let mut missing = Vec::new();
        let mut current = dir;
        while current != self.root && !current.is_dir() {
            missing.push(current);
            match current.parent() {
                Some(parent) => current = parent,
                None => break,
            }
        }
        for made in missing.into_iter().rev() {
            match fs::create_dir(made) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
            if let Some(parent) = made.parent() {
                self.sync_dir(parent)?;
            }
        }
        Ok(())
    }

    /// Creates a new temporary file beside `target`, making its directory if needed (and
    /// again if a concurrent delete removed it meanwhile).
    fn create_temp(&self, target: &Path) -> io::Result<(File, PathBuf)> {
        let dir = target.parent().unwrap_or(&self.root);
        let mut attempt = 1;
        loop {
            self.create_dirs(dir)?;
            let temp = self.temp_path_for(target);
            match OpenOptions::new().write(true).create_new(true).open(&temp) {
                Ok(file) => return Ok((file, temp)),
                Err(e) if e.kind() == ErrorKind::NotFound && attempt < CREATE_ATTEMPTS => {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes a new version of the file at `key`: `fill` writes the bytes into a temporary
    /// file, `check` decides from the current file's metadata (`None`: no file) whether
    /// the write may happen; the temporary file is then synced and renamed over the
    /// target, and the directory synced. With `precondition`, the check and the rename
    /// happen under the key's lock.
    fn write_version(
        &self,
        key: &str,
        fill: impl FnOnce(&mut File) -> io::Result<()>,
        precondition: Option<&Precondition>,
    ) -> StoreResult<ETag> {
        let target = self.path_of(key)?;
        let (mut file, temp) = self
            .create_temp(&target)
            .map_err(|e| StoreError::io(key, e))?;
        let result = (|| {
            fill(&mut file).map_err(|e| StoreError::io(key, e))?;
            let _guard = precondition.map(|_| self.lock_for(key).lock());
            let current = file_metadata(&target).map_err(|e| StoreError::io(key, e))?;
            if let Some(precondition) = precondition {
                let holds = match (precondition, &current) {
                    (Precondition::Absent, current) => current.is_none(),
                    (Precondition::Matches(expected), Some(current)) => {
                        etag_of(current) == *expected
                    }
                    (Precondition::Matches(_), None) => false,
                };
                if !holds {
                    return Err(StoreError::PreconditionFailed {
                        key: key.to_string(),
                    });
                }
            }
            if self.sync || current.is_some() {
                file.set_modified(later_than(current.as_ref()))
                    .map_err(|e| StoreError::io(key, e))?;
            }
            if self.sync {
                file.sync_all().map_err(|e| StoreError::io(key, e))?;
            }
            fs::rename(&temp, &target).map_err(|e| StoreError::io(key, e))?;
            file.metadata().map_err(|e| StoreError::io(key, e))
        })();
        match result {
            Ok(metadata) => {
                let dir = target.parent().unwrap_or(&self.root);
                self.sync_dir(dir).map_err(|e| StoreError::io(key, e))?;
                Ok(etag_of(&metadata))
            }
            Err(e) => {
                let _ = fs::remove_file(&temp);
                Err(e)
            }
        }
    }

    /// Deferred mode: writes `bytes` straight into a new file at `key` if it holds nothing
    /// (`Ok(None)` if it holds a file).
    fn create_in_place(&self, key: &str, bytes: &[u8]) -> StoreResult<Option<ETag>> {
        let target = self.path_of(key)?;
        let dir = target.parent().unwrap_or(&self.root);
        let mut attempt = 1;
        let mut file = loop {
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&target)
            {
                Ok(file) => break file,
                Err(e) if e.kind() == ErrorKind::AlreadyExists => return Ok(None),
                Err(e) if e.kind() == ErrorKind::NotFound && attempt < CREATE_ATTEMPTS => {
                    attempt += 1;
                    self.create_dirs(dir).map_err(|e| StoreError::io(key, e))?;
                }
                Err(e) => return Err(StoreError::io(key, e)),
            }
        };
        let written = file.write_all(bytes).and_then(|()| file.metadata());
        match written {
            Ok(metadata) => Ok(Some(etag_of(&metadata))),
            Err(e) => {
                let _ = fs::remove_file(&target);
                Err(StoreError::io(key, e))
            }
        }
    }

    /// Deferred mode: `put` and `put_if`.
    fn put_deferred(
        &self,
        key: &str,
        bytes: &[u8],
        precondition: Option<&Precondition>,
    ) -> StoreResult<ETag> {
        if !matches!(precondition, Some(Precondition::Matches(_))) {
            let _guard = precondition.map(|_| self.lock_for(key).lock());
            if let Some(etag) = self.create_in_place(key, bytes)? {
                return Ok(etag);
            }
            if precondition.is_some() {
                return Err(StoreError::PreconditionFailed {
                    key: key.to_string(),
                });
            }
        }
        self.write_version(key, |file| file.write_all(bytes), precondition)
    }

    /// Deferred mode: the file at `key` becomes a hard link to the file at `from` (if
    /// `precondition` holds, checked under the key's lock), atomically replacing what is
    /// there. Falls back to writing `bytes` (when given) or copying where there are no
    /// hard links.
    fn link(
        &self,
        from: &str,
        key: &str,
        bytes: Option<&[u8]>,
        precondition: Option<&Precondition>,
    ) -> StoreResult<ETag> {
        let (source, target) = (self.path_of(from)?, self.path_of(key)?);
        let dir = target.parent().unwrap_or(&self.root);
        let _guard = precondition.map(|_| self.lock_for(key).lock());
        let current = file_metadata(&target).map_err(|e| StoreError::io(key, e))?;
        if let Some(precondition) = precondition {
            let holds = match (precondition, &current) {
                (Precondition::Absent, current) => current.is_none(),
                (Precondition::Matches(expected), Some(current)) => etag_of(current) == *expected,
                (Precondition::Matches(_), None) => false,
            };
            if !holds {
                return Err(StoreError::PreconditionFailed {
                    key: key.to_string(),
                });
            }
        }
        let name = if current.is_some() {
            self.temp_path_for(&target)
        } else {
            target.clone()
        };
        let mut attempt = 1;
        loop {
            match fs::hard_link(&source, &name) {
                Ok(()) => break,
                Err(e) if e.kind() == ErrorKind::NotFound && attempt < CREATE_ATTEMPTS => {
                    if !source.is_file() {
                        return Err(StoreError::NotFound {
                            key: from.to_string(),
                        });
                    }
                    attempt += 1;
                    self.create_dirs(dir).map_err(|e| StoreError::io(key, e))?;
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists && name == target => {
                    // Made meanwhile by a writer that does not take the lock: replace it.
                    return self.link(from, key, bytes, None);
                }
                Err(_) => {
                    // No hard links here (or another file system): write the bytes.
                    drop(_guard);
                    return match bytes {
                        Some(bytes) => {
                            self.write_version(key, |f| f.write_all(bytes), precondition)
                        }
                        None => {
                            let (mut source, _) = self.open_file(from)?;
                            self.write_version(key, |f| io::copy(&mut source, f).map(drop), None)
                        }
                    };
                }
            }
        }
        if name != target {
            if let Err(e) = fs::rename(&name, &target) {
                let _ = fs::remove_file(&name);
                return Err(StoreError::io(key, e));
            }
        }
        let metadata = fs::metadata(&target).map_err(|e| StoreError::io(key, e))?;
        Ok(etag_of(&metadata))
    }

    /// Opens the file at `key` for reading with its metadata; `NotFound` unless it is a
    /// file.
    fn open_file(&self, key: &str) -> StoreResult<(File, fs::Metadata)> {
        check_key(key)?;
        let not_found = || StoreError::NotFound {
            key: key.to_string(),
        };
        let file = match self.open_for_reading(key) {
            Ok(file) => file,
            Err(e) if is_absent(&e) => return Err(not_found()),
            Err(e) => return Err(StoreError::io(key, e)),
        };
        let metadata = file.metadata().map_err(|e| StoreError::io(key, e))?;
        if !metadata.is_file() {
            return Err(not_found());
        }
        Ok((file, metadata))
    }

    /// Removes the empty directories from `dir` upwards (the root stays), and syncs the
    /// directory that lost the last one removed.
    /// Opens the file at (checked) `key` for reading, below the root's handle: by its path
    /// when it is missing there and `root` is no longer the directory the handle holds.
    fn open_for_reading(&self, key: &str) -> io::Result<File> {
        match open_without_atime(&self.root_dir, key) {
            Err(e) if is_absent(&e) && self.root_replaced() => {
                open_without_atime(rustix::fs::CWD, self.root.join(key).as_path())
            }
            opened => opened,
        }
    }

    /// Whether `root` names another directory than the one the store opened.
    fn root_replaced(&self) -> bool {
        fs::metadata(&self.root).map_or(true, |m| (m.dev(), m.ino()) != self.root_id)
    }

    fn remove_empty_dirs(&self, dir: &Path) {
        let mut current = dir;
        while current != self.root && current.starts_with(&self.root) {
            if fs::remove_dir(current).is_err() {
                break;
            }
            match current.parent() {
                Some(parent) => current = parent,
                None => break,
            }
        }
        if current != dir {
            let _ = self.sync_dir(current);
        }
    }

    fn file_info(&self, key: String, path: &Path) -> StoreResult<Option<FileInfo>> {
        match fs::metadata(path) {
            Ok(metadata) if metadata.is_file() => Ok(Some(FileInfo {
                etag: etag_of(&metadata),
                size: metadata.len(),
                key,
            })),
            Ok(_) => Ok(None),
            Err(e) if is_absent(&e) => Ok(None),
            Err(e) => Err(StoreError::io(key, e)),
        }
    }

    /// The entries of the directory of `prefix` as `(name, path, is_dir)`, skipping
    /// temporary files; empty if there is no such directory.
    fn dir_entries(&self, prefix: &str) -> StoreResult<Vec<(String, PathBuf, bool)>> {
        let dir = self.root.join(prefix);
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if is_absent(&e) => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io(prefix, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io(prefix, e))?;
            let Ok(name) = entry.file_name().into_string() else {
                return Err(StoreError::io(
                    prefix,
                    io::Error::new(
                        ErrorKind::InvalidData,
                        format!("a file name that is not UTF-8: {:?}", entry.file_name()),
                    ),
                ));
            };
            if is_temporary(&name) {
                continue;
            }
            let path = entry.path();
            // Symbolic links to files are listed as their targets; links to directories
            // are not walked (no cycles).
            let is_dir = match entry.file_type() {
                Ok(t) => t.is_dir(),
                Err(e) if is_absent(&e) => continue,
                Err(e) => return Err(StoreError::io(prefix, e)),
            };
            out.push((name, path, is_dir));
        }
        Ok(out)
    }
}

impl ObjectStorage for FsStorage {
    fn read(&self, key: &str) -> StoreResult<Contents> {
        let (mut file, metadata) = self.open_file(key)?;
        let mut bytes = Vec::with_capacity(metadata.len() as usize);
        file.read_to_end(&mut bytes)
            .map_err(|e| StoreError::io(key, e))?;
        Ok(Contents {
            bytes,
            etag: etag_of(&metadata),
        })
    }

    fn read_range(&self, key: &str, range: Range<u64>) -> StoreResult<ByteReader> {
        let (mut file, metadata) = self.open_file(key)?;
        let start = range.start.min(metadata.len());
        let end = range.end.clamp(start, metadata.len());
        file.seek(SeekFrom::Start(start))
            .map_err(|e| StoreError::io(key, e))?;
        Ok(Box::new(file.take(end - start)))
    }

    fn metadata(&self, key: &str) -> StoreResult<Option<FileInfo>> {
        let path = self.path_of(key)?;
        self.file_info(key.to_string(), &path)
    }

    fn put(&self, key: &str, bytes: &[u8]) -> StoreResult<ETag> {
        if !self.sync {
            return self.put_deferred(key, bytes, None);
        }
        self.write_version(key, |file| file.write_all(bytes), None)
    }

    fn put_if(&self, key: &str, bytes: &[u8], precondition: Precondition) -> StoreResult<ETag> {
        if !self.sync {
            return self.put_deferred(key, bytes, Some(&precondition));
        }
        self.write_version(key, |file| file.write_all(bytes), Some(&precondition))
    }

    fn put_copy(
        &self,
        key: &str,
        bytes: &[u8],
        same_as: &str,
        precondition: Option<Precondition>,
    ) -> StoreResult<ETag> {
        if !self.sync {
            return self.link(same_as, key, Some(bytes), precondition.as_ref());
        }
        match precondition {
            None => self.put(key, bytes),
            Some(precondition) => self.put_if(key, bytes, precondition),
        }
    }

    fn open_local(&self, key: &str) -> Option<io::Result<File>> {
        Some(match check_key(key) {
            Ok(()) => self.open_for_reading(key),
            Err(e) => Err(io::Error::new(ErrorKind::InvalidInput, e)),
        })
    }

    fn local_path(&self, key: &str) -> Option<PathBuf> {
        if key.is_empty() {
            return Some(self.root.clone());
        }
        self.path_of(key).ok()
    }

    fn move_dir(&self, source: &Path, prefix: &str) -> StoreResult<bool> {
        check_prefix(prefix)?;
        if prefix.is_empty() {
            return Err(StoreError::InvalidKey {
                key: String::new(),
                reason: "a directory cannot replace the whole store",
            });
        }
        let target = self.root.join(prefix);
        let parent = target.parent().unwrap_or(&self.root);
        self.create_dirs(parent)
            .map_err(|e| StoreError::io(prefix, e))?;
        if target.exists() {
            return Err(StoreError::PreconditionFailed {
                key: prefix.to_string(),
            });
        }
        match fs::rename(source, &target) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::CrossesDevices => return Ok(false),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::DirectoryNotEmpty | ErrorKind::AlreadyExists
                ) =>
            {
                return Err(StoreError::PreconditionFailed {
                    key: prefix.to_string(),
                })
            }
            Err(e) => return Err(StoreError::io(source.display().to_string(), e)),
        }
        self.sync_dir(parent)
            .map_err(|e| StoreError::io(prefix, e))?;
        Ok(true)
    }

    fn move_file(&self, source: &Path, key: &str) -> StoreResult<ETag> {
        let target = self.path_of(key)?;
        let source_error = |e| StoreError::io(source.display().to_string(), e);
        if !self.sync {
            let dir = target.parent().unwrap_or(&self.root);
            let mut renamed = fs::rename(source, &target);
            if matches!(&renamed, Err(e) if e.kind() == ErrorKind::NotFound) && source.exists() {
                self.create_dirs(dir).map_err(|e| StoreError::io(key, e))?;
                renamed = fs::rename(source, &target);
            }
            match renamed {
                Ok(()) => {
                    let metadata = fs::metadata(&target).map_err(|e| StoreError::io(key, e))?;
                    return Ok(etag_of(&metadata));
                }
                Err(e) if e.kind() == ErrorKind::CrossesDevices => {}
                Err(e) if e.kind() == ErrorKind::NotFound => return Err(source_error(e)),
                Err(e) => return Err(StoreError::io(key, e)),
            }
        }
        let file = File::open(source).map_err(source_error)?;
        // An upload is usually synced already; then this costs next to nothing.
        file.sync_all().map_err(source_error)?;
        let dir = target.parent().unwrap_or(&self.root);
        self.create_dirs(dir).map_err(|e| StoreError::io(key, e))?;
        match fs::rename(source, &target) {
            Ok(()) => {
                self.sync_dir(dir).map_err(|e| StoreError::io(key, e))?;
                let metadata = file.metadata().map_err(|e| StoreError::io(key, e))?;
                Ok(etag_of(&metadata))
            }
            Err(e) if e.kind() == ErrorKind::CrossesDevices => {
                let mut source_file = file;
                let etag = self.write_version(
                    key,
                    |temp| io::copy(&mut source_file, temp).map(drop),
                    None,
                )?;
                fs::remove_file(source).map_err(source_error)?;
                Ok(etag)
            }
            Err(e) => Err(StoreError::io(key, e)),
        }
    }

    fn copy(&self, from: &str, to: &str) -> StoreResult<()> {
        if !self.sync {
            return self.link(from, to, None, None).map(drop);
        }
        let (mut source, _) = self.open_file(from)?;
        self.write_version(to, |temp| io::copy(&mut source, temp).map(drop), None)?;
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> StoreResult<()> {
        let (source, target) = (self.path_of(from)?, self.path_of(to)?);
        if self.file_info(from.to_string(), &source)?.is_none() {
            return Err(StoreError::NotFound {
                key: from.to_string(),
            });
        }
        let target_dir = target.parent().unwrap_or(&self.root);
        self.create_dirs(target_dir)
            .map_err(|e| StoreError::io(to, e))?;
        match fs::rename(&source, &target) {
            Ok(()) => {}
            Err(e) if is_absent(&e) => {
                return Err(StoreError::NotFound {
                    key: from.to_string(),
                })
            }
            Err(e) => return Err(StoreError::io(from, e)),
        }
        self.sync_dir(target_dir)
            .map_err(|e| StoreError::io(to, e))?;
        let source_dir = source.parent().unwrap_or(&self.root);
        if source_dir != target_dir {
            self.sync_dir(source_dir)
                .map_err(|e| StoreError::io(from, e))?;
            self.remove_empty_dirs(source_dir);
        }
        Ok(())
    }

    fn delete(&self, key: &str) -> StoreResult<()> {
        let path = self.path_of(key)?;
        match fs::remove_file(&path) {
            Ok(()) => {}
            // A directory is not a file: there is no file at this key.
            Err(e) if is_absent(&e) || e.kind() == ErrorKind::IsADirectory => return Ok(()),
            Err(e) => return Err(StoreError::io(key, e)),
        }
        let dir = path.parent().unwrap_or(&self.root);
        self.sync_dir(dir).map_err(|e| StoreError::io(key, e))?;
        self.remove_empty_dirs(dir);
        Ok(())
    }

    fn delete_prefix(&self, prefix: &str) -> StoreResult<()> {
        check_prefix(prefix)?;
        if prefix.is_empty() {
            return Err(StoreError::InvalidKey {
                key: String::new(),
                reason: "the whole store is never deleted by prefix",
            });
        }
        let dir = self.root.join(prefix);
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {
                fs::remove_dir_all(&dir).map_err(|e| StoreError::io(prefix, e))?;
            }
            Ok(_) => return Ok(()),
            Err(e) if is_absent(&e) => return Ok(()),
            Err(e) => return Err(StoreError::io(prefix, e)),
        }
        let parent = dir.parent().unwrap_or(&self.root);
        self.sync_dir(parent)
            .map_err(|e| StoreError::io(prefix, e))?;
        self.remove_empty_dirs(parent);
        Ok(())
    }

    fn remove_leftovers(&self, prefix: &str) -> StoreResult<usize> {
        check_prefix(prefix)?;
        let mut removed = 0;
        let mut dirs = vec![self.root.join(prefix)];
        while let Some(dir) = dirs.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if is_absent(&e) => continue,
                Err(e) => return Err(StoreError::io(prefix, e)),
            };
            let mut removed_here = false;
            for entry in entries {
                let entry = entry.map_err(|e| StoreError::io(prefix, e))?;
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if is_dir {
                    dirs.push(entry.path());
                } else if is_temporary(&name) {
                    match fs::remove_file(entry.path()) {
                        Ok(()) => {}
                        Err(e) if is_absent(&e) => continue,
                        Err(e) => return Err(StoreError::io(prefix, e)),
                    }
                    removed += 1;
                    removed_here = true;
                }
            }
            if removed_here {
                self.sync_dir(&dir).map_err(|e| StoreError::io(prefix, e))?;
                self.remove_empty_dirs(&dir);
            }
        }
        Ok(removed)
    }

    fn list(&self, prefix: &str) -> StoreResult<Vec<FileInfo>> {
        check_prefix(prefix)?;
        let mut files = Vec::new();
        let mut pending = vec![prefix.to_string()];
        while let Some(dir) = pending.pop() {
            for (name, path, is_dir) in self.dir_entries(&dir)? {
                let key = join(&dir, &name);
                if is_dir {
                    pending.push(key);
                } else if let Some(info) = self.file_info(key, &path)? {
                    files.push(info);
                }
            }
        }
        files.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(files)
    }

    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        check_prefix(prefix)?;
        let mut listing = DirListing::default();
        for (name, path, is_dir) in self.dir_entries(prefix)? {
            let key = join(prefix, &name);
            if is_dir {
                listing.dirs.push(key);
            } else if let Some(info) = self.file_info(key, &path)? {
                listing.files.push(info);
            }
        }
        listing.dirs.sort();
        listing.files.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(listing)
    }
}

/// The tag of a file version: size, modification time in nanoseconds and inode.
fn etag_of(metadata: &fs::Metadata) -> ETag {
    let mtime_ns = i128::from(metadata.mtime()) * 1_000_000_000 + i128::from(metadata.mtime_nsec());
    ETag(format!(
        "{:x}-{:x}-{:x}",
        metadata.size(),
        mtime_ns,
        metadata.ino()
    ))
}

/// A modification time for a new version: now, but at least a nanosecond after the
/// version it replaces.
fn later_than(current: Option<&fs::Metadata>) -> SystemTime {
    let now = SystemTime::now();
    let Some(current) = current else {
        return now;
    };
    let replaced = current.modified().unwrap_or(UNIX_EPOCH);
    now.max(replaced + Duration::from_nanos(1))
}

/// The metadata of the file at `path`, `None` if there is no file.
fn file_metadata(path: &Path) -> io::Result<Option<fs::Metadata>> {
    match fs::metadata(path) {
        Ok(metadata) if metadata.is_file() => Ok(Some(metadata)),
        Ok(_) => Ok(None),
        Err(e) if is_absent(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether an error says the path does not exist (or crosses a file where a directory
/// was expected, which also means no file is there).
fn is_absent(error: &io::Error) -> bool {
    matches!(error.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory)
}

/// Opens `key` below the directory `root` (or a path from the working directory, with
/// `rustix::fs::CWD`) for reading without updating its access time (`O_NOATIME`): with the
/// `relatime` default, the first read of a file after it was written, and any a day after
/// the last, rewrites its inode, so a rebuild or an audit that reads every file of a root
/// once would write inode table and journal blocks for each (about 1.7 KB per file on
/// ext4, BENCHMARKS.md). Only the files' owner (or a process with `CAP_FOWNER`) may ask:
/// where the kernel refuses, files are opened as usual from then on.
fn open_without_atime(
    root: impl std::os::fd::AsFd,
    key: impl rustix::path::Arg + Copy,
) -> io::Result<File> {
    use rustix::fs::{openat, Mode, OFlags};
    use std::sync::atomic::AtomicBool;
    static REFUSED: AtomicBool = AtomicBool::new(false);
    let read = OFlags::RDONLY | OFlags::CLOEXEC;
    if !REFUSED.load(Ordering::Relaxed) {
        match openat(&root, key, read | OFlags::NOATIME, Mode::empty()) {
            Err(rustix::io::Errno::PERM) => REFUSED.store(true, Ordering::Relaxed),
            opened => return Ok(File::from(opened?)),
        }
    }
    Ok(File::from(openat(root, key, read, Mode::empty())?))
}
