//! Removing what a run wrote (raw rows' files, a spawned server's data directory): hundreds of
//! thousands to millions of files, which this machine unlinks at about 50,000 per second
//! however the work is split. So a run does not wait for it: at its end the directories are
//! renamed into a trash directory beside them ([`set_aside`], instant) and a low-priority
//! background process deletes them ([`remove_in_background`]); the next run first removes
//! whatever is still there ([`clear_trash`], with progress), so that no deletion overlaps a
//! measurement. Removal here uses several threads (whole directories, and batches of the
//! files of a large one), and reports progress every [`PROGRESS_EVERY`] once it has taken
//! that long.

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
    with_progress(
        || {
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
        },
        |elapsed| {
            let n = shared.removed.load(Ordering::Relaxed);
            let secs = elapsed.as_secs_f64();
            eprintln!(
                "    removing {label}: {n} files and directories in {secs:.0} s ({:.0}/s)",
                n as f64 / secs
            );
        },
    );
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

/// Runs `work` on a thread of its own and returns its result; while it runs, calls
/// `report` with the time elapsed every [`PROGRESS_EVERY`] (first after that long), so that
/// a wait of more than a moment is never silent.
pub fn with_progress<T: Send>(
    work: impl FnOnce() -> T + Send,
    mut report: impl FnMut(Duration),
) -> T {
    let start = Instant::now();
    std::thread::scope(|s| {
        let worker = s.spawn(work);
        let mut next_report = start + PROGRESS_EVERY;
        while !worker.is_finished() {
            std::thread::sleep(Duration::from_millis(20));
            if Instant::now() >= next_report {
                report(start.elapsed());
                next_report += PROGRESS_EVERY;
            }
        }
        match worker.join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// Flushes every file system's dirty pages ([`crate::procfs::sync_all`]), saying so every
/// [`PROGRESS_EVERY`] while it takes longer than that.
pub fn sync_reporting() -> Duration {
    let start = Instant::now();
    with_progress(crate::procfs::sync_all, |elapsed| {
        eprintln!("    writing back to disk: {:.0} s", elapsed.as_secs_f64())
    });
    start.elapsed()
}

/// Prefix of the name a set-aside directory takes (beside where it was).
pub const TRASH: &str = ".arca-bench-trash";

/// Renames each of `paths` (skipping those inside another one) to a unique
/// [`TRASH`]-prefixed name in its own parent: no new directory is needed, so this works on a
/// full disk too. Returns the new paths and those that could not be renamed (to be removed
/// in place).
pub fn set_aside(paths: Vec<PathBuf>) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let outer: Vec<PathBuf> = paths
        .iter()
        .filter(|p| !paths.iter().any(|q| q != *p && p.starts_with(q)))
        .filter(|p| p.exists())
        .cloned()
        .collect();
    let mut moved = Vec::new();
    let mut failed = Vec::new();
    for (n, path) in outer.into_iter().enumerate() {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            failed.push(path);
            continue;
        };
        let target = parent.join(format!(
            "{TRASH}-{}-{}-{n}",
            name.to_string_lossy(),
            std::process::id()
        ));
        match std::fs::rename(&path, &target) {
            Ok(()) => moved.push(target),
            Err(_) => failed.push(path),
        }
    }
    (moved, failed)
}

/// Starts a detached, low-priority (`nice -n 19`, idle I/O class) `rm -rf` of `dirs` that
/// outlives this process; its output goes nowhere.
pub fn remove_in_background(dirs: &[PathBuf]) -> std::io::Result<()> {
    if dirs.is_empty() {
        return Ok(());
    }
    let mut cmd = std::process::Command::new("nice");
    cmd.args(["-n", "19", "ionice", "-c", "3", "rm", "-rf", "--"])
        .args(dirs)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // Its own session: a Ctrl-C in the terminal after the run does not reach it.
    // SAFETY: setsid is async-signal-safe and touches only the child.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            let _ = rustix::process::setsid();
            Ok(())
        });
    }
    cmd.spawn().map(|_| ())
}

/// Removes what earlier runs set aside in `parents` ([`TRASH`]-prefixed entries) and is
/// still there (a background removal that has not finished, or was killed), with progress,
/// then writes back; returns how many entries it removed.
pub fn clear_trash(parents: &[PathBuf]) -> u64 {
    let mut trash: Vec<PathBuf> = parents
        .iter()
        .filter_map(|p| std::fs::read_dir(p).ok())
        .flat_map(|d| d.flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with(TRASH))
        .map(|e| e.path())
        .collect();
    trash.sort();
    trash.dedup();
    if trash.is_empty() {
        return 0;
    }
    eprintln!(
        "==> removing what earlier runs left ({}) before measuring",
        trash
            .iter()
            .map(|t| t.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let r = remove_trees(trash, "earlier runs' files");
    sync_reporting();
    r.entries
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
    fn set_aside_renames_outer_directories_and_clear_trash_removes_them() {
        let base = tempfile::tempdir().unwrap();
        let server = base.path().join("server");
        let raw = server.join("raw");
        std::fs::create_dir_all(&raw).unwrap();
        std::fs::write(raw.join("f"), b"x").unwrap();
        let other = base.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        let kept = base.path().join("kept");
        std::fs::write(&kept, b"stays").unwrap();
        let (moved, failed) = set_aside(vec![raw.clone(), server.clone(), other.clone()]);
        assert!(failed.is_empty());
        assert_eq!(
            moved.len(),
            2,
            "the inner raw directory moved with the server's"
        );
        assert!(!server.exists() && !other.exists());
        assert!(moved.iter().all(|m| m.parent() == Some(base.path())
            && m.file_name().unwrap().to_string_lossy().starts_with(TRASH)));
        let removed = clear_trash(&[base.path().to_path_buf()]);
        assert_eq!(removed, 4, "two set-aside directories, raw and its file");
        assert!(moved.iter().all(|m| !m.exists()));
        assert!(kept.exists(), "nothing else goes");
        assert_eq!(clear_trash(&[base.path().to_path_buf()]), 0);
    }

    #[test]
    fn a_missing_root_is_not_an_error() {
        let base = tempfile::tempdir().unwrap();
        let r = remove_tree(&base.path().join("never-made"), "test");
        assert_eq!(r.entries, 0);
    }
}
