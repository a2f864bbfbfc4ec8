use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use parking_lot::{Condvar, Mutex};
use tokio::sync::oneshot;

type Waiter = oneshot::Sender<Result<(), String>>;

/// Group commit for one filesystem: every caller of [`GroupCommit::barrier`] is answered
/// once a filesystem-wide sync that *started after the call* has finished, so everything
/// the caller wrote before calling is on stable storage. Callers that arrive while a sync
/// runs share the next one, so N concurrent requests cost about one sync, not N.
///
/// On Linux the sync is `syncfs(2)` on the data directory: it flushes file data, inodes
/// and directory entries of the whole filesystem and waits for the journal commit.
pub struct GroupCommit {
    shared: Arc<Shared>,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    syncs: AtomicU64,
    waiters_served: AtomicU64,
    sync_nanos: AtomicU64,
}

#[derive(Default)]
struct Queue {
    waiters: Vec<Waiter>,
    shutdown: bool,
}

/// Counters for metrics and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncStats {
    /// Number of filesystem syncs performed.
    pub syncs: u64,
    /// Number of barrier calls answered.
    pub waiters_served: u64,
    /// Total time spent in filesystem syncs, in nanoseconds.
    pub sync_nanos: u64,
}

impl GroupCommit {
    /// Starts the sync thread for the filesystem holding `dir`.
    pub fn start(dir: &Path) -> io::Result<Self> {
        let handle = File::open(dir)?;
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            syncs: AtomicU64::new(0),
            waiters_served: AtomicU64::new(0),
            sync_nanos: AtomicU64::new(0),
        });
        let worker = shared.clone();
        thread::Builder::new()
            .name("arca-group-commit".into())
            .spawn(move || worker.run(handle))?;
        Ok(Self { shared })
    }

    /// Waits until everything written before this call is durable.
    pub async fn barrier(&self) -> io::Result<()> {
        let (tx, rx) = oneshot::channel();
        {
            let mut q = self.shared.queue.lock();
            if q.shutdown {
                return Err(io::Error::other("group commit is shut down"));
            }
            q.waiters.push(tx);
        }
        self.shared.wake.notify_one();
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(msg)) => Err(io::Error::other(msg)),
            Err(_) => Err(io::Error::other("group commit thread stopped")),
        }
    }

    /// Blocking form of [`barrier`](Self::barrier) for synchronous callers (rebuild, CLI).
    pub fn barrier_blocking(&self) -> io::Result<()> {
        let (tx, rx) = oneshot::channel();
        self.shared.queue.lock().waiters.push(tx);
        self.shared.wake.notify_one();
        match rx.blocking_recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(msg)) => Err(io::Error::other(msg)),
            Err(_) => Err(io::Error::other("group commit thread stopped")),
        }
    }

    /// Syncs and barrier calls so far.
    pub fn stats(&self) -> SyncStats {
        SyncStats {
            syncs: self.shared.syncs.load(Ordering::Relaxed),
            waiters_served: self.shared.waiters_served.load(Ordering::Relaxed),
            sync_nanos: self.shared.sync_nanos.load(Ordering::Relaxed),
        }
    }
}

impl Drop for GroupCommit {
    fn drop(&mut self) {
        self.shared.queue.lock().shutdown = true;
        self.shared.wake.notify_all();
    }
}

impl Shared {
    fn run(&self, handle: File) {
        loop {
            let batch = {
                let mut q = self.queue.lock();
                while q.waiters.is_empty() && !q.shutdown {
                    self.wake.wait(&mut q);
                }
                if q.waiters.is_empty() && q.shutdown {
                    return;
                }
                std::mem::take(&mut q.waiters)
            };
            let started = std::time::Instant::now();
            let result = sync_filesystem(&handle).map_err(|e| {
                tracing::error!(error = %e, "filesystem sync failed");
                e.to_string()
            });
            self.sync_nanos
                .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
            self.syncs.fetch_add(1, Ordering::Relaxed);
            self.waiters_served
                .fetch_add(batch.len() as u64, Ordering::Relaxed);
            for waiter in batch {
                let _ = waiter.send(result.clone());
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn sync_filesystem(handle: &File) -> io::Result<()> {
    Ok(rustix::fs::syncfs(handle)?)
}

#[cfg(not(target_os = "linux"))]
fn sync_filesystem(_handle: &File) -> io::Result<()> {
    rustix::fs::sync();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_barriers_share_syncs() {
        let dir = tempfile::tempdir().unwrap();
        let gc = Arc::new(GroupCommit::start(dir.path()).unwrap());
        let mut tasks = Vec::new();
        for i in 0..64 {
            let gc = gc.clone();
            let path = dir.path().join(format!("f{i}"));
            tasks.push(tokio::spawn(async move {
                std::fs::write(&path, b"x").unwrap();
                gc.barrier().await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let stats = gc.stats();
        assert_eq!(stats.waiters_served, 64);
        assert!(stats.syncs >= 1 && stats.syncs <= 64);
    }
}
