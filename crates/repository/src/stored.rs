//! Reading a binary's stored bytes, wherever the root is: a local file (a local root, or a
//! transaction's staged upload) is read directly; a file of a remote store (S3) through
//! the store, streamed.

use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arca_catalog::ResourceRecord;
use arca_ocfl::{ByteReader, OcflRoot};

use crate::{Error, Repository, Result};

/// Where a binary's stored bytes are.
#[derive(Debug, Clone)]
pub enum StoredContent {
    /// A local file by path: a transaction's staged upload.
    File(PathBuf),
    /// A file of the root, by key: on a local root a file read through the root's
    /// directory handle, else an object of a remote store (S3).
    Stored {
        /// The root it is in.
        ocfl: Arc<OcflRoot>,
        /// Its key (relative to the storage root).
        key: String,
    },
}

impl StoredContent {
    /// The local file, if the bytes are in one.
    pub fn local_path(&self) -> Option<PathBuf> {
        match self {
            Self::File(path) => Some(path.clone()),
            Self::Stored { ocfl, key } => ocfl.local_path(key),
        }
    }

    /// The local file opened for reading, if the bytes are in one: a root's file through
    /// the storage seam ([`OcflRoot::open_local`]: relative to the root's directory, its
    /// access time left alone). Blocks (an `open`).
    pub fn open_local(&self) -> Option<io::Result<std::fs::File>> {
        match self {
            Self::File(path) => Some(std::fs::File::open(path)),
            Self::Stored { ocfl, key } => ocfl.open_local(key),
        }
    }

    /// Opens a reader over the bytes `range` (the end clipped to the size). Blocks: call it
    /// on a blocking thread.
    pub fn open(&self, range: Range<u64>) -> io::Result<ByteReader> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = match self {
            Self::File(path) => std::fs::File::open(path)?,
            Self::Stored { ocfl, key } => match ocfl.open_local(key) {
                Some(opened) => opened?,
                None => return ocfl.read_range(key, range).map_err(io::Error::other),
            },
        };
        if range.start > 0 {
            file.seek(SeekFrom::Start(range.start))?;
        }
        Ok(Box::new(file.take(range.end.saturating_sub(range.start))))
    }

    /// A name for messages.
    pub fn describe(&self) -> String {
        match self {
            Self::File(path) => path.display().to_string(),
            Self::Stored { key, .. } => key.clone(),
        }
    }
}

/// A local file holding a binary's bytes for a reader that needs a path (a text
/// extractor): the stored file itself, or a temporary copy of a remote one, deleted when
/// this is dropped.
#[derive(Debug)]
pub struct LocalContent {
    path: PathBuf,
    temporary: bool,
}

impl LocalContent {
    /// A file that stays (it is not a copy).
    pub fn existing(path: PathBuf) -> Self {
        Self {
            path,
            temporary: false,
        }
    }
}

impl std::ops::Deref for LocalContent {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for LocalContent {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Drop for LocalContent {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Repository {
    /// Where a resource's content bytes are, once every acknowledged change of its object
    /// is in the root; `None` if it has no content file.
    pub async fn content(&self, record: &ResourceRecord) -> Result<Option<StoredContent>> {
        let Some(file) = record.content_file.as_ref() else {
            return Ok(None);
        };
        if file.starts_with('/') {
            // A transaction's staged upload on this node.
            return Ok(Some(StoredContent::File(PathBuf::from(file))));
        }
        self.settled(&record.ocfl_id).await?;
        Ok(Some(StoredContent::Stored {
            ocfl: self.ocfl.clone(),
            key: file.clone(),
        }))
    }

    /// A local file with a resource's content bytes: the stored file when it is local,
    /// else a temporary copy in the staging area (deleted with the returned value).
    pub async fn local_content(&self, record: &ResourceRecord) -> Result<Option<LocalContent>> {
        let Some(content) = self.content(record).await? else {
            return Ok(None);
        };
        if let Some(path) = content.local_path() {
            return Ok(Some(LocalContent::existing(path.to_path_buf())));
        }
        let copy = LocalContent {
            path: self
                .uploads_dir()
                .join(format!("copy-{}", uuid::Uuid::new_v4().simple())),
            temporary: true,
        };
        let target = copy.path.clone();
        tokio::task::spawn_blocking(move || -> io::Result<()> {
            let mut reader = content.open(0..u64::MAX)?;
            let mut file = std::fs::File::create(&target)?;
            io::copy(&mut reader, &mut file)?;
            Ok(())
        })
        .await
        .map_err(|e| Error::Io(io::Error::other(e)))??;
        Ok(Some(copy))
    }
}
