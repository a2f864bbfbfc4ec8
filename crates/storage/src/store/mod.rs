//! The store seam: one byte-level trait, [`ObjectStorage`], through which the files of an
//! OCFL storage root are read and written, with two implementations: [`FsStorage`] (a
//! directory on the local filesystem, for one node) and [`S3Storage`] (a bucket of an
//! S3-compatible object store, for several nodes; feature `s3`).
//!
//! Keys are `/`-separated paths relative to the storage root, exactly the relative paths of
//! the filesystem layout: `0=ocfl_1.1`, `ocfl_layout.json`,
//! `a1b/2c3/d4e/a1b2…/inventory.json`, `…/v2/content/%2Ffoo%20bar`. A key has no leading or
//! trailing `/`, no empty, `.` or `..` segment and no control character
//! ([`StoreError::InvalidKey`] otherwise). There are no directories, only keys: a directory
//! is the set of keys below a prefix, and it exists while one of them does.
//!
//! How the OCFL layer publishes a version through it, in order: content files moved in from
//! local uploads ([`move_file`](ObjectStorage::move_file)), small files
//! ([`put`](ObjectStorage::put)), mutable-HEAD content moved into the version
//! ([`rename`](ObjectStorage::rename)), then the commit point: the root `inventory.json`
//! replaced with [`put_if`](ObjectStorage::put_if) against the ETag it was read with
//! ([`read`](ObjectStorage::read)), so that two nodes can never both replace one inventory;
//! then what the version removes ([`delete`](ObjectStorage::delete)). Rebuild walks the
//! hashed n-tuple layout with [`list_dir`](ObjectStorage::list_dir); HTTP GET streams
//! content with [`read_range`](ObjectStorage::read_range).
//!
//! The trait is synchronous: the OCFL layer runs on blocking threads (tokio's
//! `spawn_blocking` among them). Its methods block the calling thread until the operation
//! is complete; call them from a blocking thread, never from an async task.

mod error;
mod fs;
mod key;
#[cfg(feature = "s3")]
mod s3;

use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

pub use error::{ServiceError, StoreError, StoreResult};
pub use fs::FsStorage;
#[cfg(feature = "s3")]
pub use s3::{BucketVersioning, S3Credentials, S3Settings, S3Storage};

/// An opaque version tag of a stored file. It changes whenever the file's content changes,
/// so a reader can replace exactly the version it read ([`Precondition::Matches`]). What it
/// is made of depends on the store ([`FsStorage`], [`S3Storage`]); compare it only with
/// tags of the same store.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ETag(String);

impl ETag {
    /// A tag from its text, as a store reported it.
    pub fn new(tag: impl Into<String>) -> Self {
        Self(tag.into())
    }

    /// The tag's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ETag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What must hold of a key for [`ObjectStorage::put_if`] to write it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Precondition {
    /// The key holds nothing (S3: `If-None-Match: *`). Creates a file, never replaces one.
    Absent,
    /// The key holds the version with this tag (S3: `If-Match`). Replaces exactly the
    /// version the caller read.
    Matches(ETag),
}

/// A whole small file and the tag of the version read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contents {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// The version these bytes are.
    pub etag: ETag,
}

/// A stored file: its key, size and version tag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    /// The file's key (relative to the storage root).
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its version tag.
    pub etag: ETag,
}

/// One level of the key hierarchy below a prefix (see [`ObjectStorage::list_dir`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirListing {
    /// The keys of the immediate "subdirectories" (prefixes that have keys below them),
    /// without a trailing `/`, in byte order of the key.
    pub dirs: Vec<String>,
    /// The files directly at this level, in byte order of the key.
    pub files: Vec<FileInfo>,
}

/// A reader over stored bytes (a whole file or a range of one). A failure while reading is
/// an [`io::Error`](std::io::Error); from an S3 store its inner error
/// ([`get_ref`](std::io::Error::get_ref)) is the [`StoreError`], `Unavailable` when the
/// service went away.
pub type ByteReader = Box<dyn Read + Send>;

/// Byte-level storage of the files of one OCFL storage root.
///
/// Every write is durable when it returns: a filesystem store has synced the file and its
/// directory, an S3 store has had every request acknowledged. (The one exception is a
/// filesystem store opened in deferred mode, [`FsStorage::open_deferred`], whose writes
/// the caller makes durable itself.) Errors are [`StoreError`]s;
/// each method says which variants mean what. Any method may also fail with
/// [`StoreError::InvalidKey`] for a malformed key, [`StoreError::Io`] (filesystem) and,
/// for an S3 store, [`StoreError::Unavailable`] (the service could not be reached or
/// answered with a transient error: try again later), [`StoreError::AccessDenied`],
/// [`StoreError::Credentials`] or [`StoreError::Service`].
pub trait ObjectStorage: Send + Sync + std::fmt::Debug {
    /// Reads the whole file at `key` with the tag of the version read. For small files
    /// (inventories, sidecars, headers); stream content with [`read_range`](Self::read_range).
    ///
    /// # Errors
    /// [`StoreError::NotFound`] if there is no file at `key`.
    fn read(&self, key: &str) -> StoreResult<Contents>;

    /// Opens a reader over the bytes `range` of the file at `key`. The end is clipped to
    /// the file's size; a range that starts at or past the end reads nothing. The bytes
    /// arrive as the reader is read (S3: one ranged GET, streamed), never all at once.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] if there is no file at `key` (when opening; a file removed
    /// while it is read may also end the read with an I/O error).
    fn read_range(&self, key: &str, range: Range<u64>) -> StoreResult<ByteReader>;

    /// The size and tag of the file at `key`, `None` if there is none.
    fn metadata(&self, key: &str) -> StoreResult<Option<FileInfo>>;

    /// Stores `bytes` at `key`, replacing what is there, and returns the new version's tag.
    fn put(&self, key: &str, bytes: &[u8]) -> StoreResult<ETag>;

    /// Stores `bytes` at `key` only if `precondition` holds at the moment of the write
    /// (checked and written atomically), and returns the new version's tag. Of two writers
    /// racing from the same tag, exactly one succeeds.
    ///
    /// # Errors
    /// [`StoreError::PreconditionFailed`] if it does not hold; nothing was written. An
    /// [`StoreError::Unavailable`] leaves the outcome unknown (the write may have landed):
    /// read the key to learn it.
    fn put_if(&self, key: &str, bytes: &[u8], precondition: Precondition) -> StoreResult<ETag>;

    /// Stores each `(key, bytes)` of `files`, replacing what is there, as
    /// [`put`](Self::put) would one after the other, and returns their new tags in the same
    /// order. The files are independent of each other: a store may write them concurrently
    /// (an S3 store sends the requests together), so nothing may depend on their order.
    ///
    /// # Errors
    /// The first failure; any of the files, written or not, may then hold its new bytes.
    fn put_all(&self, files: &[(&str, &[u8])]) -> StoreResult<Vec<ETag>> {
        files
            .iter()
            .map(|(key, bytes)| self.put(key, bytes))
            .collect()
    }

    /// Moves the local file `source` into the store at `key` (replacing what is there) and
    /// returns the new version's tag; `source` is gone afterwards. Memory stays flat
    /// whatever the file's size: a filesystem store renames it (or copies it when it is on
    /// another filesystem), an S3 store uploads it in parts.
    ///
    /// # Errors
    /// [`StoreError::Io`] if `source` cannot be read (it is left in place).
    fn move_file(&self, source: &Path, key: &str) -> StoreResult<ETag>;

    /// Copies the file at `from` to `to`, replacing what is at `to`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] if there is no file at `from`.
    fn copy(&self, from: &str, to: &str) -> StoreResult<()>;

    /// Moves the file at `from` to `to`, replacing what is at `to`. Atomic on a filesystem;
    /// on S3 a copy, then a delete of `from` (after a crash in between both exist, never
    /// neither).
    ///
    /// # Errors
    /// [`StoreError::NotFound`] if there is no file at `from`.
    fn rename(&self, from: &str, to: &str) -> StoreResult<()>;

    /// Removes the file at `key`. Removing a key that holds nothing succeeds (idempotent).
    fn delete(&self, key: &str) -> StoreResult<()>;

    /// Removes every file below the directory `prefix` (a key is below `ab` if it starts
    /// with `ab/`; the empty prefix is refused as [`StoreError::InvalidKey`]: a whole root
    /// is never removed this way). Removing a prefix that holds nothing succeeds. Not
    /// atomic: after a failure some of the files may be gone.
    fn delete_prefix(&self, prefix: &str) -> StoreResult<()>;

    /// Stores at `key` the bytes `bytes`, which are also, byte for byte, the content of the
    /// file at `same_as` (written before); with `precondition`, only if it holds, as
    /// [`put_if`](Self::put_if). A store may keep one copy of the bytes for both keys: the
    /// filesystem store in deferred mode makes a hard link ([`FsStorage::open_deferred`]).
    /// The default writes the bytes.
    ///
    /// # Errors
    /// As [`put`](Self::put) and [`put_if`](Self::put_if).
    fn put_copy(
        &self,
        key: &str,
        bytes: &[u8],
        same_as: &str,
        precondition: Option<Precondition>,
    ) -> StoreResult<ETag> {
        let _ = same_as;
        match precondition {
            None => self.put(key, bytes),
            Some(precondition) => self.put_if(key, bytes, precondition),
        }
    }

    /// Moves the local directory `source` (a tree of files) into the store below the
    /// directory `prefix`, which must hold nothing, in one step where the store can: the
    /// filesystem store renames the directory, so the whole tree appears at once (`Ok(true)`;
    /// in deferred mode nothing is synced). A store that cannot returns `Ok(false)` and does
    /// nothing: the caller then moves the files one by one.
    ///
    /// # Errors
    /// [`StoreError::PreconditionFailed`] if something is below `prefix` already (nothing
    /// moved); [`StoreError::Io`] if `source` cannot be moved.
    fn move_dir(&self, source: &Path, prefix: &str) -> StoreResult<bool> {
        let _ = (source, prefix);
        Ok(false)
    }

    /// The local file that holds `key`, for a store on the local filesystem (whether or not
    /// the file exists; the empty key is the store's directory); `None` for a remote store. Readers may then use the file directly
    /// (a child process reading a path, an asynchronous file), writers never.
    fn local_path(&self, key: &str) -> Option<PathBuf> {
        let _ = key;
        None
    }

    /// The local file at `key` opened for reading, relative to the store's directory and
    /// without updating its access time where the kernel allows (see
    /// [`local_path`](Self::local_path) for what readers may do with it); `None` for a
    /// remote store.
    ///
    /// # Errors
    /// The `open`'s (`NotFound` if there is no file at `key`); `InvalidInput` for a key
    /// that is not one.
    fn open_local(&self, key: &str) -> Option<std::io::Result<std::fs::File>> {
        let _ = key;
        None
    }

    /// Removes what writes cut short by a crash left below the directory `prefix`: a
    /// filesystem store's temporary files (a remote store's writes leave nothing, the
    /// default). For recovery, while nothing writes below `prefix`. Returns how many files
    /// went.
    fn remove_leftovers(&self, prefix: &str) -> StoreResult<usize> {
        let _ = prefix;
        Ok(0)
    }

    /// Every file below `prefix` (`""`: the whole store), at any depth, in byte order of
    /// the key. `prefix` is a directory: `ab` lists `ab/…`, never `abc`. Collected in
    /// memory: list bounded prefixes (an object), not a whole large root.
    fn list(&self, prefix: &str) -> StoreResult<Vec<FileInfo>>;

    /// The immediate subdirectories and files of the directory `prefix` (`""`: the root),
    /// as S3 lists with the delimiter `/`: what the walk of the hashed n-tuple layout
    /// needs, one level at a time.
    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing>;
}
