//! The CPU priority of the index's merges. A merge rewrites segments in the background and
//! nobody waits for it, while a query is waited for by its client and takes well under a
//! millisecond: at the same priority, a large merge (after a bulk load or a rebuild) takes the
//! cores that queries and writes need. tantivy offers no hook on its merge threads, but every
//! merge opens its new segment's files through the index's directory, on the merge thread
//! itself: [`LoweringDirectory`] raises the nice value of a thread tantivy named
//! `merge_thread_<n>` the first time it opens a file. Indexing threads and the segment
//! updater, which finishes commits, keep the requests' priority, so a new write is as soon
//! searchable as before.

use std::cell::Cell;
use std::path::Path;
use std::sync::Arc;

use tantivy::directory::error::{DeleteError, OpenDirectoryError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};

/// How tantivy names its merge threads, up to their number.
const MERGE_THREAD_PREFIX: &str = "merge_thread_";

/// The index's directory on disk, lowering merge threads to nice value `nice` (0–19; `0`
/// leaves them at the requests' priority) as they open files.
#[derive(Debug, Clone)]
pub(crate) struct LoweringDirectory {
    inner: MmapDirectory,
    nice: i32,
}

impl LoweringDirectory {
    /// The directory at `path`.
    pub(crate) fn open(path: &Path, nice: i32) -> Result<Self, OpenDirectoryError> {
        Ok(Self {
            inner: MmapDirectory::open(path)?,
            nice,
        })
    }
}

impl Directory for LoweringDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        lower_if_merge_thread(self.nice);
        self.inner.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        self.inner.sync_directory()
    }

    fn acquire_lock(
        &self,
        lock: &Lock,
    ) -> Result<DirectoryLock, tantivy::directory::error::LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

/// Lowers the calling thread to `nice` if it is one of tantivy's merge threads, once per
/// thread (a thread's name is set when it is spawned; a merge thread stays one).
fn lower_if_merge_thread(nice: i32) {
    thread_local! {
        static LOOKED: Cell<bool> = const { Cell::new(false) };
    }
    if nice == 0 || LOOKED.get() {
        return;
    }
    LOOKED.set(true);
    let is_merge = std::thread::current()
        .name()
        .is_some_and(|name| name.starts_with(MERGE_THREAD_PREFIX));
    if is_merge {
        lower_this_thread(nice);
    }
}

/// Sets the calling thread's nice value to `nice`. Only Linux gives each thread a nice value
/// of its own; elsewhere this does nothing.
fn lower_this_thread(nice: i32) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions; setpriority only changes the calling thread's
        // scheduling and touches no memory of ours.
        let done = unsafe {
            let tid = libc::gettid() as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, nice)
        } == 0;
        if !done {
            tracing::warn!(nice, error = %std::io::Error::last_os_error(), "a search index merge runs at the requests' priority: its nice value could not be set");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// The nice values of this process's threads named as tantivy names its merge threads.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn merge_thread_nices() -> Vec<i32> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| {
            let task = task.ok()?;
            let name = std::fs::read_to_string(task.path().join("comm")).ok()?;
            if !name.starts_with(MERGE_THREAD_PREFIX) {
                return None;
            }
            // Field 19 of stat, the 17th after the name (field 2), which is in parentheses.
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            let after_name = stat.get(stat.rfind(')')? + 2..)?;
            after_name.split(' ').nth(16)?.parse().ok()
        })
        .collect()
}
