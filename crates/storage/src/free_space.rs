//! A reserve of free space and inodes kept on the data's file system.
//!
//! A write is acknowledged once its journal record is durable; its files are written into
//! the root after that. Those files must then find room: a full disk at that point could
//! only stall the write, not refuse it. So new writes are refused (the caller answers 507,
//! nothing stored) while less than a reserve is free, and the reserve is far larger than
//! what the writes already acknowledged can still need.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

/// At most this much is kept in reserve (a twentieth of a smaller file system).
const RESERVE_BYTES: u64 = 64 << 20;
/// At most this many inodes are kept in reserve (a twentieth of fewer).
const RESERVE_INODES: u64 = 16_384;
/// How long one measurement of the file system is trusted.
const REFRESH_NANOS: u64 = 50_000_000;

/// What a file system has and has free (`statvfs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Bytes free to unprivileged users.
    pub free_bytes: u64,
    /// Size of the file system in bytes.
    pub total_bytes: u64,
    /// Inodes free to unprivileged users (0 and total 0 where the file system has no
    /// fixed number).
    pub free_inodes: u64,
    /// Inodes of the file system.
    pub total_inodes: u64,
}

/// Measures the file system holding `path`.
pub fn usage(path: &Path) -> io::Result<Usage> {
    let st = rustix::fs::statvfs(path)?;
    Ok(Usage {
        free_bytes: st.f_bavail * st.f_frsize,
        total_bytes: st.f_blocks * st.f_frsize,
        free_inodes: st.f_favail,
        total_inodes: st.f_files,
    })
}

/// Keeps a reserve free: [`check`](Self::check) says whether a new write may start.
/// Measures at most every 50 ms, so the check costs a clock read per write.
pub struct FreeSpaceGuard {
    dir: std::path::PathBuf,
    started: Instant,
    /// When the last measurement was taken (nanoseconds since `started`), 0 for never.
    measured_at: AtomicU64,
    last: Mutex<Option<Result<(), String>>>,
    reserve: Mutex<Option<(u64, u64)>>,
}

impl FreeSpaceGuard {
    /// A guard for the file system holding `dir`.
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            started: Instant::now(),
            measured_at: AtomicU64::new(0),
            last: Mutex::new(None),
            reserve: Mutex::new(None),
        }
    }

    /// The reserve for a file system: 64 MiB and 16,384 inodes, or a twentieth of a
    /// smaller one.
    pub fn reserve_for(usage: &Usage) -> (u64, u64) {
        (
            RESERVE_BYTES.min(usage.total_bytes / 20),
            RESERVE_INODES.min(usage.total_inodes / 20),
        )
    }

    /// `Ok` when more than the reserve is free; otherwise a message saying what is short.
    /// A file system that cannot be measured is not held against the write.
    pub fn check(&self) -> Result<(), String> {
        let now = self.started.elapsed().as_nanos() as u64 + 1;
        let at = self.measured_at.load(Ordering::Relaxed);
        if is_fresh(now, at) {
            if let Some(last) = self.last.lock().clone() {
                return last;
            }
        }
        let verdict = match usage(&self.dir) {
            Ok(u) => {
                let (bytes, inodes) = *self
                    .reserve
                    .lock()
                    .get_or_insert_with(|| Self::reserve_for(&u));
                if u.free_bytes <= bytes {
                    Err(format!(
                        "only {} bytes are free on the data's file system; arca keeps {bytes} in reserve",
                        u.free_bytes
                    ))
                } else if u.total_inodes > 0 && u.free_inodes <= inodes {
                    Err(format!(
                        "only {} inodes are free on the data's file system; arca keeps {inodes} in reserve",
                        u.free_inodes
                    ))
                } else {
                    Ok(())
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "cannot measure the data's file system");
                Ok(())
            }
        };
        *self.last.lock() = Some(verdict.clone());
        self.measured_at.store(now, Ordering::Relaxed);
        verdict
    }
}

/// Whether a measurement taken at `at` (0: never) is still trusted at `now`. Another write's
/// check may have measured after this one read the clock, so `at` can be later than `now`:
/// that measurement is as fresh as any.
fn is_fresh(now: u64, at: u64) -> bool {
    at != 0 && now.saturating_sub(at) < REFRESH_NANOS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measurement taken by a concurrent check after this one read the clock is fresh (it
    /// was an overflow panic in debug builds, seen in a CI run), one never taken is not, an
    /// old one is not.
    #[test]
    fn freshness_holds_for_measurements_taken_after_the_clock_was_read() {
        assert!(is_fresh(1_000, 2_000));
        assert!(is_fresh(REFRESH_NANOS, 1));
        assert!(!is_fresh(1_000, 0));
        assert!(!is_fresh(REFRESH_NANOS + 1, 1));
    }

    #[test]
    fn usage_of_this_file_system_is_plausible() {
        let dir = tempfile::tempdir().unwrap();
        let u = usage(dir.path()).unwrap();
        assert!(u.total_bytes > 0 && u.free_bytes <= u.total_bytes, "{u:?}");
        assert!(u.free_inodes <= u.total_inodes, "{u:?}");
    }

    #[test]
    fn the_reserve_is_a_twentieth_of_a_small_file_system() {
        let small = Usage {
            free_bytes: 0,
            total_bytes: 100 << 20,
            free_inodes: 0,
            total_inodes: 25_600,
        };
        assert_eq!(FreeSpaceGuard::reserve_for(&small), (5 << 20, 1_280));
        let big = Usage {
            total_bytes: 1 << 40,
            total_inodes: 1 << 30,
            ..small
        };
        assert_eq!(
            FreeSpaceGuard::reserve_for(&big),
            (RESERVE_BYTES, RESERVE_INODES)
        );
    }

    #[test]
    fn a_missing_directory_does_not_refuse_writes() {
        let guard = FreeSpaceGuard::new(Path::new("/nonexistent/arca-free-space"));
        assert_eq!(guard.check(), Ok(()));
    }
}
