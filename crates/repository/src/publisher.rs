//! Publishing behind the acknowledgement.
//!
//! A write is acknowledged once its journal record is durable and its catalog rows are in;
//! writing its files into the OCFL root happens after that, on a few publisher threads, so
//! concurrent writes no longer wait for each other's file creation. What keeps that correct:
//!
//! - **Durability** is the journal's: an acknowledged record is replayed after a crash, and
//!   a checkpoint waits for every record's publication (each job holds its journal
//!   [`Ticket`]) before it trims the journal.
//! - **Reads** of an object whose files are not yet published wait for them
//!   ([`Publisher::settled`]); the object is registered as pending *before* its catalog
//!   rows become visible, so no reader can find the rows without the registration. So
//!   reads never see a state that a crash could lose (it is journaled) nor a half-written
//!   one.
//! - **The next write of the same object** settles it first too, before it reads the
//!   object's inventory.
//! - **Failures** after the acknowledgement are never undone: the publisher keeps redoing
//!   the change (idempotently, as journal replay does) until it succeeds. While it fails,
//!   new writes are refused (503, or 507 when the disk is full), and a free-space reserve
//!   ([`FreeSpaceGuard`]) refuses writes before a full disk could make publishing fail.
//! - **Memory** is bounded: at most [`BACKLOG`] writes wait to be published; more writers
//!   wait for a slot before they start.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arca_ocfl::{OcflRoot, Staged};
use arca_storage::{FreeSpaceGuard, Ticket};
use parking_lot::{Condvar, Mutex};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use crate::{Error, Result};

/// Threads writing acknowledged changes into the root. File creation mostly waits on the
/// file system's locks and journal, so a few threads keep the CPUs busy.
const PUBLISH_THREADS: usize = 3;
/// Writes that may wait to be published before new writes wait for a slot.
pub(crate) const BACKLOG: usize = 1024;
/// The longest pause between two attempts to publish a failing change.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(5);
/// How long a reader waits for a failing publication before it is told so (503).
const STALLED_READ_WAIT: Duration = Duration::from_secs(2);
/// Fault injection for tests: publishing waits this many milliseconds before each change,
/// so a test can read, or kill the server, while publishing is behind. Never set in use.
pub(crate) const DELAY_ENV: &str = "ARCA_TEST_PUBLISH_DELAY_MS";

/// Publishes acknowledged changes in the background; see the module documentation.
pub(crate) struct Publisher {
    inner: Arc<Inner>,
}

struct Inner {
    ocfl: Arc<OcflRoot>,
    state: Mutex<State>,
    wake: Condvar,
    idle: Condvar,
    slots: Arc<Semaphore>,
    space: FreeSpaceGuard,
    /// Jobs whose last attempt failed.
    failing: AtomicUsize,
    /// The last failure, for the answers refusing writes meanwhile.
    last_failure: Mutex<Option<Failure>>,
    /// Time spent publishing, in nanoseconds.
    busy_nanos: Arc<AtomicU64>,
    /// See [`DELAY_ENV`].
    delay: Duration,
}

#[derive(Clone)]
struct Failure {
    message: String,
    storage_full: bool,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    /// Objects with a change acknowledged and not yet published.
    pending: HashMap<String, Pending>,
    /// Jobs taken from the queue and not yet done.
    running: usize,
    shutdown: bool,
}

/// Marks one object pending until its job is done.
#[derive(Clone)]
struct Pending {
    done: watch::Receiver<bool>,
    job: u64,
}

/// The right to add one write to the backlog, taken before the write starts.
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
}

/// The objects of one write, registered as pending.
pub(crate) struct Registration {
    job: u64,
    objects: Vec<String>,
    done: watch::Sender<bool>,
}

struct Job {
    staged: Vec<Staged>,
    registration: Registration,
    _ticket: Ticket,
    _slot: Slot,
}

impl Publisher {
    /// Starts the publisher threads for `ocfl`, keeping a free-space reserve on the file
    /// system of `data_dir`.
    pub(crate) fn start(
        ocfl: Arc<OcflRoot>,
        data_dir: &Path,
        busy_nanos: Arc<AtomicU64>,
    ) -> Result<Self> {
        let inner = Arc::new(Inner {
            ocfl,
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            idle: Condvar::new(),
            slots: Arc::new(Semaphore::new(BACKLOG)),
            space: FreeSpaceGuard::new(data_dir),
            failing: AtomicUsize::new(0),
            last_failure: Mutex::new(None),
            busy_nanos,
            delay: Duration::from_millis(
                std::env::var(DELAY_ENV)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
            ),
        });
        if !inner.delay.is_zero() {
            tracing::warn!(delay = ?inner.delay, "{DELAY_ENV} is set: publishing is slowed down for a test");
        }
        for _ in 0..PUBLISH_THREADS {
            let worker = inner.clone();
            std::thread::Builder::new()
                .name("arca-publish".into())
                .spawn(move || worker.run())?;
        }
        Ok(Self { inner })
    }

    /// Admits a new write: refused while publishing fails or the free-space reserve is
    /// reached (nothing has been written yet), otherwise waits for a backlog slot.
    pub(crate) async fn admit(&self) -> Result<Slot> {
        if self.inner.failing.load(Ordering::Relaxed) > 0 {
            let failure = self.inner.failure();
            return Err(if failure.storage_full {
                Error::StorageFull(failure.message)
            } else {
                Error::Unavailable(format!(
                    "{}; nothing was stored, try again later",
                    failure.message
                ))
            });
        }
        if let Err(message) = self.inner.space.check() {
            return Err(Error::StorageFull(message));
        }
        let permit = self
            .inner
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Error::Internal("the publisher has stopped".into()))?;
        Ok(Slot { _permit: permit })
    }

    /// Marks the objects of a change pending. Call once the journal record is durable and
    /// before the catalog shows the change; then [`submit`](Self::submit) it, or
    /// [`withdraw`](Self::withdraw) it if the change is given up.
    pub(crate) fn register(&self, objects: impl Iterator<Item = String>) -> Registration {
        static JOBS: AtomicU64 = AtomicU64::new(1);
        let job = JOBS.fetch_add(1, Ordering::Relaxed);
        let (done, rx) = watch::channel(false);
        let objects: Vec<String> = objects.collect();
        let mut st = self.inner.state.lock();
        for id in &objects {
            st.pending.insert(
                id.clone(),
                Pending {
                    done: rx.clone(),
                    job,
                },
            );
        }
        Registration { job, objects, done }
    }

    /// Gives up a registered change that will not be published (its catalog write failed
    /// and its journal record is cancelled).
    pub(crate) fn withdraw(&self, registration: Registration) {
        self.inner.finish(&registration);
    }

    /// Queues a registered change; `ticket` keeps its journal record until it is published.
    pub(crate) fn submit(
        &self,
        staged: Vec<Staged>,
        registration: Registration,
        ticket: Ticket,
        slot: Slot,
    ) {
        let mut st = self.inner.state.lock();
        st.queue.push_back(Job {
            staged,
            registration,
            _ticket: ticket,
            _slot: slot,
        });
        drop(st);
        self.inner.wake.notify_one();
    }

    /// Waits until no acknowledged change of object `ocfl_id` waits to be published, so
    /// its files in the root are complete. Fails (503) if publishing it keeps failing.
    pub(crate) async fn settled(&self, ocfl_id: &str) -> Result<()> {
        let Some(mut pending) = self.inner.state.lock().pending.get(ocfl_id).cloned() else {
            return Ok(());
        };
        loop {
            let wait = pending.done.wait_for(|done| *done);
            match tokio::time::timeout(STALLED_READ_WAIT, wait).await {
                Ok(_) => return Ok(()),
                Err(_) if self.inner.failing.load(Ordering::Relaxed) > 0 => {
                    return Err(Error::Unavailable(format!(
                        "{}; the resource cannot be read until it succeeds",
                        self.inner.failure().message
                    )));
                }
                Err(_) => {}
            }
        }
    }

    /// Writes acknowledged and not yet published: queued or being written into the root.
    pub(crate) fn backlog(&self) -> usize {
        let st = self.inner.state.lock();
        st.queue.len() + st.running
    }

    /// Waits up to `limit` until everything acknowledged is published; `false` if that
    /// did not happen in time (publishing keeps failing).
    pub(crate) async fn drain(&self, limit: Duration) -> bool {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let deadline = Instant::now() + limit;
            let mut st = inner.state.lock();
            while !st.queue.is_empty() || st.running > 0 {
                if inner.idle.wait_until(&mut st, deadline).timed_out() {
                    return false;
                }
            }
            true
        })
        .await
        .unwrap_or(false)
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.inner.state.lock().shutdown = true;
        self.inner.wake.notify_all();
    }
}

impl Inner {
    fn run(&self) {
        loop {
            let job = {
                let mut st = self.state.lock();
                loop {
                    if let Some(job) = st.queue.pop_front() {
                        st.running += 1;
                        break job;
                    }
                    if st.shutdown {
                        return;
                    }
                    self.wake.wait(&mut st);
                }
            };
            std::thread::sleep(self.delay);
            let started = Instant::now();
            for staged in &job.staged {
                self.publish(staged);
            }
            self.busy_nanos
                .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
            self.finish(&job.registration);
            let mut st = self.state.lock();
            st.running -= 1;
            drop(st);
            // The ticket and the slot go with the job.
            drop(job);
            self.idle.notify_all();
        }
    }

    /// Publishes one acknowledged change, retrying until it succeeds.
    fn publish(&self, staged: &Staged) {
        let mut result = self.ocfl.publish_acknowledged(staged);
        if result.is_ok() {
            return;
        }
        let mut delay = Duration::from_millis(50);
        let mut counted = false;
        while let Err(e) = result {
            let object = OcflRoot::staged_object_id(staged);
            let message = format!(
                "writing the acknowledged change of {object} into the root is failing (it is kept in the journal and retried): {e}"
            );
            let failure = Failure {
                storage_full: Error::Storage(e).is_storage_full(),
                message,
            };
            tracing::error!(error = %failure.message, "publishing failed");
            *self.last_failure.lock() = Some(failure);
            // Counted once its reason is recorded: a write refused meanwhile says why.
            if !counted {
                self.failing.fetch_add(1, Ordering::Relaxed);
                counted = true;
            }
            std::thread::sleep(delay);
            delay = (delay * 2).min(MAX_RETRY_DELAY);
            result = self.ocfl.redo(staged);
        }
        self.failing.fetch_sub(1, Ordering::Relaxed);
        tracing::info!(
            object = OcflRoot::staged_object_id(staged),
            "an acknowledged change that failed to publish is now published"
        );
    }

    /// Takes a job's objects out of the pending map (unless a later job owns them) and
    /// wakes their readers.
    fn finish(&self, registration: &Registration) {
        let mut st = self.state.lock();
        for id in &registration.objects {
            if st
                .pending
                .get(id)
                .is_some_and(|p| p.job == registration.job)
            {
                st.pending.remove(id);
            }
        }
        drop(st);
        let _ = registration.done.send(true);
    }

    /// The last failure to publish.
    fn failure(&self) -> Failure {
        self.last_failure.lock().clone().unwrap_or(Failure {
            message: "writing acknowledged changes into the root is failing".into(),
            storage_full: false,
        })
    }
}
