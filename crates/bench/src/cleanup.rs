//! Removing what a run wrote (raw rows' files, a spawned server's data directory): hundreds of
//! thousands to millions of files. One thread unlinking them one by one takes minutes, and a
//! user waiting without output cannot tell a cleanup from a hang. Here several threads share
//! the work (whole directories, and batches of the files of a large one), and the caller's
//! thread reports progress every [`PROGRESS_EVERY`] once removal has taken that long.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Threads unlinking. More than the CPUs: much of an unlink waits on locks and the journal.
const THREADS: usize = 4;
/// Files per work item when a directory is split among threads.
const BATCH: usize = 2048;
/// How often progress is shown (and how long removal runs before the first line).
pub const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// What a removal did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Removed {
    /// Files and directories removed.
    pub entries: u64,
    /// How long it took.
    pub elapsed: Duration,
}

enum Work {
    Dir(PathBuf),
    Files(Vec<PathBuf>),
}

struct Shared {
    queue: Mutex<Vec<Work>>,
    /// Work items taken and not yet finished.
    busy: AtomicUsize,
    /// Every directory met, to remove once its files are gone.
    dirs: Mutex<Vec<PathBuf>>,
    removed: AtomicU64,
}

impl Shared {
    fn take(&self) -> Option<Work> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let w = q.pop();
        if w.is_some() {
            self.busy.fetch_add(1, Ordering::SeqCst);
        }
        w
    }

    fn push(&self, w: Work) {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).push(w);
    }

    fn run(&self, w: Work) {
        match w {
            Work::Files(files) => {
                for f in files {
                    if std::fs::remove_file(&f).is_ok() {
                        self.removed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Work::Dir(dir) => {
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    return;
                };
                let mut files = Vec::new();
                for e in entries.flatten() {
                    let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                    if is_dir {
                        self.push(Work::Dir(e.path()));
                    } else {
                        files.push(e.path());
                        if files.len() == BATCH {
                            self.push(Work::Files(std::mem::take(&mut files)));
                        }
                    }
                }
                if !files.is_empty() {
                    self.push(Work::Files(files));
                }
                self.dirs
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(dir);
            }
        }
    }

    fn worker(&self) {
        loop {
            match self.take() {
                Some(w) => {
                    self.run(w);
                    self.busy.fetch_sub(1, Ordering::SeqCst);
                }
                // Nothing queued: done once nobody can queue more.
                None if self.busy.load(Ordering::SeqCst) == 0 => return,
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }
}

/// Removes `roots` and everything below them, in parallel; prints progress as `label` to
/// stderr while it runs longer than [`PROGRESS_EVERY`]. Errors (a file already gone, no
/// permission) are skipped: this is a cleanup, and a directory left behind is reported.
pub fn remove_trees(roots: Vec<PathBuf>, label: &str) -> Removed {
    let start = Instant::now();
    let shared = Shared {
        queue: Mutex::new(roots.iter().cloned().map(Work::Dir).collect()),
        busy: AtomicUsize::new(0),
        dirs: Mutex::new(Vec::new()),
        removed: AtomicU64::new(0),
    };
    std::thread::scope(|s| {
        let removal = s.spawn(|| {
            // Files first (finding the directories on the way)…
            std::thread::scope(|w| {
                for _ in 0..THREADS {
                    w.spawn(|| shared.worker());
                }
            });
            // …then the directories, deepest first, each depth in parallel batches.
            let mut dirs =
                std::mem::take(&mut *shared.dirs.lock().unwrap_or_else(|e| e.into_inner()));
            dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
            for level in dirs.chunk_by(|a, b| a.components().count() == b.components().count()) {
                let batches = Mutex::new(level.chunks(BATCH).collect::<Vec<_>>());
                std::thread::scope(|w| {
                    for _ in 0..THREADS {
                        w.spawn(|| loop {
                            let Some(batch) =
                                batches.lock().unwrap_or_else(|e| e.into_inner()).pop()
                            else {
                                return;
                            };
                            for d in batch {
                                if std::fs::remove_dir(d).is_ok() {
                                    shared.removed.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        });
                    }
                });
            }
        });
        let mut next_report = start + PROGRESS_EVERY;
        while !removal.is_finished() {
            std::thread::sleep(Duration::from_millis(50));
            if Instant::now() >= next_report {
                let n = shared.removed.load(Ordering::Relaxed);
                let secs = start.elapsed().as_secs_f64();
                eprintln!(
                    "    removing {label}: {n} files and directories in {secs:.0} s ({:.0}/s)",
                    n as f64 / secs
                );
                next_report += PROGRESS_EVERY;
            }
        }
    });
    for root in &roots {
        if root.exists() {
            eprintln!("arca bench: could not remove all of {}", root.display());
        }
    }
    Removed {
        entries: shared.removed.into_inner(),
        elapsed: start.elapsed(),
    }
}

/// Flushes every file system's dirty pages ([`crate::procfs::sync_all`]), saying so every
/// [`PROGRESS_EVERY`] while it takes longer than that.
pub fn sync_reporting() -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        let sync = s.spawn(crate::procfs::sync_all);
        let mut next_report = start + PROGRESS_EVERY;
        while !sync.is_finished() {
            std::thread::sleep(Duration::from_millis(50));
            if Instant::now() >= next_report {
                eprintln!(
                    "    writing back to disk: {:.0} s",
                    start.elapsed().as_secs_f64()
                );
                next_report += PROGRESS_EVERY;
            }
        }
    });
    start.elapsed()
}

/// [`remove_trees`] of one directory.
pub fn remove_tree(root: &Path, label: &str) -> Removed {
    remove_trees(vec![root.to_path_buf()], label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_nested_and_large_flat_directories_entirely() {
        let base = tempfile::tempdir().unwrap();
        let a = base.path().join("a");
        let flat = a.join("flat");
        std::fs::create_dir_all(&flat).unwrap();
        for i in 0..(BATCH * 2 + 7) {
            std::fs::write(flat.join(format!("f{i}")), b"x").unwrap();
        }
        let deep = a.join("x/y/z");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("leaf"), b"").unwrap();
        let b = base.path().join("b");
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(b.join("one"), b"1").unwrap();
        let kept = base.path().join("kept");
        std::fs::write(&kept, b"stays").unwrap();

        let r = remove_trees(vec![a.clone(), b.clone()], "test");
        assert!(!a.exists() && !b.exists());
        assert!(kept.exists(), "only the roots given are removed");
        // Files: 2 × BATCH + 7 + leaf + one; directories: a, flat, x, y, z, b.
        assert_eq!(r.entries, (BATCH * 2 + 7 + 2 + 6) as u64);
    }

    #[test]
    fn a_missing_root_is_not_an_error() {
        let base = tempfile::tempdir().unwrap();
        let r = remove_tree(&base.path().join("never-made"), "test");
        assert_eq!(r.entries, 0);
    }
}
