use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use parking_lot::{Condvar, Mutex};
use tokio::sync::oneshot;

const MAGIC: u32 = 0x4152_4341; // "ARCA"
/// magic, payload length, crc32 (of segment number + payload), segment number.
const HEADER: usize = 20;
/// Size of a preallocated segment; a full segment is sealed and a fresh one started.
const SEGMENT_SIZE: u64 = 32 << 20;
/// Preallocated spare segments kept ready. Writing into blocks that already exist lets
/// `fdatasync` flush data only, without an ext4 journal commit for the grown file.
const SPARES: usize = 2;
/// A segment that took at least this much between two checkpoints is under real load:
/// worth recycling and keeping spares for.
const RECYCLE_THRESHOLD: u64 = 1 << 20;
/// Threads writing and syncing batches. With more than one, a batch's `fdatasync` overlaps
/// the previous one's instead of queueing behind it: disks (and SSDs above all) complete
/// several flushes in parallel at about the latency of one.
const SYNC_THREADS: usize = 3;

/// A write-ahead (redo) journal: the durable record of every write until the files it
/// describes are themselves durable.
///
/// [`append`](Journal::append) returns once the record is on stable storage. Records of all
/// callers waiting at the same moment are written with one `write` and one `fdatasync` of a
/// sequential file, so durability costs one small sequential write per batch of requests
/// instead of a filesystem-wide sync per request. Up to [`SYNC_THREADS`] batches are in
/// flight at once; they are acknowledged strictly in order, so an acknowledged record never
/// sits behind a hole that replay would stop at.
///
/// Segments are preallocated (zero-filled in the background) and recycled, so appends
/// overwrite blocks that already exist and `fdatasync` needs no filesystem-journal commit.
/// Every record carries its segment number, so stale records of a recycled file are never
/// read back.
///
/// Each appended record holds a [`Ticket`] until the caller has applied it (published the
/// files). A [`checkpoint`](Journal::checkpoint) starts a new segment, waits until every
/// record of the older segments is applied, makes the filesystem durable with the given
/// sync, and deletes the older segments. After a crash, [`Journal::open`] returns the
/// records written since the last checkpoint, in order, to be replayed.
pub struct Journal {
    shared: Arc<Shared>,
}

struct Shared {
    dir: PathBuf,
    state: Mutex<State>,
    wake: Condvar,
    applied: Condvar,
    appended: AtomicU64,
    fsyncs: AtomicU64,
    sync_nanos: AtomicU64,
    checkpoints: AtomicU64,
    /// Held for a whole checkpoint: the background one and the last one at shutdown list,
    /// recycle and delete the same old segments, so they must not overlap.
    checkpointing: Mutex<()>,
}

struct State {
    segment: u64,
    file: Arc<File>,
    /// Write offset in the current segment.
    size: u64,
    pending: Vec<(Vec<u8>, Waiter)>,
    /// Records appended but not yet applied, per segment.
    unapplied: BTreeMap<u64, usize>,
    /// Number given to the next batch taken from `pending`.
    next_batch: u64,
    /// The next batch to acknowledge; later ones wait in `finished` until it is done.
    next_ack: u64,
    finished: BTreeMap<u64, Finished>,
    /// A segment whose write failed: batches placed after the failure in it are failed
    /// too (replay stops at the hole), and new batches go to a fresh segment.
    broken_segment: Option<u64>,
    shutdown: bool,
}

type Waiter = oneshot::Sender<io::Result<u64>>;

/// A batch written and synced (or failed), waiting for its turn to be acknowledged.
struct Finished {
    segment: u64,
    waiters: Vec<Waiter>,
    result: io::Result<()>,
}

/// Proof that a record is durable; drop it once the record has been applied.
pub struct Ticket {
    shared: Arc<Shared>,
    segment: u64,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.shared.release(self.segment, 1);
    }
}

/// Counters for metrics and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JournalStats {
    /// Records appended.
    pub records: u64,
    /// `fdatasync` calls (batches).
    pub fsyncs: u64,
    /// Time spent writing and syncing batches, in nanoseconds.
    pub sync_nanos: u64,
    /// Checkpoints completed.
    pub checkpoints: u64,
}

fn segment_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:016}.journal"))
}

fn spare_path(dir: &Path, n: usize) -> PathBuf {
    dir.join(format!("spare-{n}.segment"))
}

fn list_spares(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir)? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "segment") {
            out.push(p);
        }
    }
    Ok(out)
}

fn list_segments(dir: &Path) -> io::Result<Vec<u64>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir)? {
        let name = e?.file_name();
        if let Some(n) = name
            .to_str()
            .and_then(|s| s.strip_suffix(".journal"))
            .and_then(|s| s.parse().ok())
        {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Appends one record (header, then payload) of `segment` to `buf`.
fn encode(buf: &mut Vec<u8>, segment: u64, payload: &[u8]) {
    buf.extend_from_slice(&MAGIC.to_le_bytes());
    buf.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    buf.extend_from_slice(&checksum(segment, payload).to_le_bytes());
    buf.extend_from_slice(&segment.to_le_bytes());
    buf.extend_from_slice(payload);
}

/// An `io::Error` is not `Clone`: the same failure, for each waiter.
fn copy_error(e: &io::Error) -> io::Error {
    io::Error::new(e.kind(), e.to_string())
}

fn checksum(segment: u64, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&segment.to_le_bytes());
    h.update(payload);
    h.finalize()
}

/// Reads the valid records of segment `n`; stops at the first torn, corrupt or stale
/// (older segment's) record.
fn read_segment(path: &Path, n: u64) -> io::Result<Vec<Vec<u8>>> {
    let mut bytes = Vec::new();
    File::open(path)?.read_to_end(&mut bytes)?;
    let mut out = Vec::new();
    let mut pos = 0;
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    while pos + HEADER <= bytes.len() {
        let len = word(pos + 4) as usize;
        let crc = word(pos + 8);
        let seg = u64::from_le_bytes(bytes[pos + 12..pos + 20].try_into().expect("8 bytes"));
        let end = pos + HEADER + len;
        if word(pos) != MAGIC || seg != n || end > bytes.len() {
            break;
        }
        let payload = &bytes[pos + HEADER..end];
        if checksum(seg, payload) != crc {
            break;
        }
        out.push(payload.to_vec());
        pos = end;
    }
    Ok(out)
}

impl Journal {
    /// Opens the journal in `dir` and returns it with the records of every existing segment
    /// (oldest first) to replay. The caller replays them, then calls
    /// [`checkpoint`](Self::checkpoint) so they are not replayed again.
    pub fn open(dir: &Path) -> io::Result<(Self, Vec<Vec<u8>>)> {
        fs::create_dir_all(dir)?;
        let existing = list_segments(dir)?;
        let mut records = Vec::new();
        for n in &existing {
            records.extend(read_segment(&segment_path(dir, *n), *n)?);
        }
        let segment = existing.last().map_or(1, |n| n + 1);
        let file = create_segment(dir, segment)?;
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            state: Mutex::new(State {
                segment,
                file: Arc::new(file),
                size: 0,
                pending: Vec::new(),
                unapplied: BTreeMap::new(),
                next_batch: 0,
                next_ack: 0,
                finished: BTreeMap::new(),
                broken_segment: None,
                shutdown: false,
            }),
            wake: Condvar::new(),
            applied: Condvar::new(),
            appended: AtomicU64::new(0),
            fsyncs: AtomicU64::new(0),
            sync_nanos: AtomicU64::new(0),
            checkpoints: AtomicU64::new(0),
            checkpointing: Mutex::new(()),
        });
        for _ in 0..SYNC_THREADS {
            let worker = shared.clone();
            thread::Builder::new()
                .name("arca-journal".into())
                .spawn(move || worker.run())?;
        }
        Ok((Self { shared }, records))
    }

    /// Appends a record and waits until it is durable.
    pub async fn append(&self, record: Vec<u8>) -> io::Result<Ticket> {
        let (tx, rx) = oneshot::channel();
        {
            let mut st = self.shared.state.lock();
            if st.shutdown {
                return Err(io::Error::other("the journal is shut down"));
            }
            st.pending.push((record, tx));
        }
        self.shared.wake.notify_one();
        let segment = rx
            .await
            .map_err(|_| io::Error::other("the journal thread stopped"))??;
        Ok(Ticket {
            shared: self.shared.clone(),
            segment,
        })
    }

    /// Whether the current segment is large enough to be worth a checkpoint.
    pub fn wants_checkpoint(&self) -> bool {
        let st = self.shared.state.lock();
        st.size >= SEGMENT_SIZE || st.unapplied.keys().any(|s| *s < st.segment)
    }

    /// Starts a new segment, waits until every record of the older ones is applied, runs
    /// `sync` (which must make every applied write durable), then deletes the older
    /// segments. Blocking; run it on its own thread. Checkpoints run one at a time (a call
    /// waits for one under way).
    ///
    /// With `recycle`, retired segments that saw real load are kept (zero-filled spares are
    /// made if needed) so later appends overwrite preallocated blocks; the background
    /// checkpoint passes `true`, start-up and shutdown pass `false`.
    pub fn checkpoint(
        &self,
        sync: impl FnOnce() -> io::Result<()>,
        recycle: bool,
    ) -> io::Result<()> {
        let _one_at_a_time = self.shared.checkpointing.lock();
        let (sealed, busy) = {
            let mut st = self.shared.state.lock();
            if st.size == 0
                && st.unapplied.is_empty()
                && list_segments(&self.shared.dir)?.len() <= 1
            {
                return Ok(());
            }
            let busy = st.size >= RECYCLE_THRESHOLD;
            let next = st.segment + 1;
            st.file = Arc::new(create_segment(&self.shared.dir, next)?);
            st.segment = next;
            st.size = 0;
            while st.unapplied.keys().any(|s| *s < next) {
                self.shared.applied.wait(&mut st);
            }
            (next, busy)
        };
        sync()?;
        let old: Vec<PathBuf> = list_segments(&self.shared.dir)?
            .into_iter()
            .filter(|n| *n < sealed)
            .map(|n| segment_path(&self.shared.dir, n))
            .collect();
        if recycle && busy {
            prepare_spares(&self.shared.dir, old)?;
        } else {
            for path in old {
                fs::remove_file(path)?;
            }
        }
        self.shared.checkpoints.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Counters so far.
    pub fn stats(&self) -> JournalStats {
        JournalStats {
            records: self.shared.appended.load(Ordering::Relaxed),
            fsyncs: self.shared.fsyncs.load(Ordering::Relaxed),
            sync_nanos: self.shared.sync_nanos.load(Ordering::Relaxed),
            checkpoints: self.shared.checkpoints.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.shared.state.lock().shutdown = true;
        self.shared.wake.notify_all();
    }
}

/// Opens segment `n` for writing from offset 0: a preallocated spare renamed into place if
/// one is ready, otherwise a new empty file.
fn create_segment(dir: &Path, n: u64) -> io::Result<File> {
    let path = segment_path(dir, n);
    if let Some(spare) = list_spares(dir)?.into_iter().next() {
        fs::rename(&spare, &path)?;
    }
    let file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(&path)?;
    File::open(dir)?.sync_all()?;
    Ok(file)
}

/// Keeps [`SPARES`] zero-filled segments ready (run from the checkpoint thread).
fn prepare_spares(dir: &Path, recycled: Vec<PathBuf>) -> io::Result<()> {
    let mut have = list_spares(dir)?.len();
    for old in recycled {
        if have < SPARES
            && fs::metadata(&old)
                .map(|m| m.len() >= SEGMENT_SIZE)
                .unwrap_or(false)
        {
            let mut k = 0;
            while spare_path(dir, k).exists() {
                k += 1;
            }
            fs::rename(&old, spare_path(dir, k))?;
            have += 1;
        } else {
            fs::remove_file(&old)?;
        }
    }
    while have < SPARES {
        let mut k = 0;
        while spare_path(dir, k).exists() {
            k += 1;
        }
        let tmp = dir.join(format!("spare-{k}.tmp"));
        {
            let mut f = File::create(&tmp)?;
            let zeros = vec![0u8; 1 << 20];
            for _ in 0..(SEGMENT_SIZE >> 20) {
                f.write_all(&zeros)?;
            }
            f.sync_all()?;
        }
        fs::rename(&tmp, spare_path(dir, k))?;
        have += 1;
    }
    File::open(dir)?.sync_all()
}

impl Shared {
    fn run(&self) {
        loop {
            let (number, batch, file, segment, offset) = {
                let mut st = self.state.lock();
                while st.pending.is_empty() && !st.shutdown {
                    self.wake.wait(&mut st);
                }
                if st.pending.is_empty() {
                    return;
                }
                let batch = std::mem::take(&mut st.pending);
                let bytes = batch
                    .iter()
                    .map(|(r, _)| (r.len() + HEADER) as u64)
                    .sum::<u64>();
                let broken = st.broken_segment == Some(st.segment);
                if broken || (st.size > 0 && st.size + bytes > SEGMENT_SIZE) {
                    // Full (or broken by a failed write): continue in a fresh segment; the
                    // next checkpoint retires this one.
                    match create_segment(&self.dir, st.segment + 1) {
                        Ok(f) => {
                            st.segment += 1;
                            st.file = Arc::new(f);
                            st.size = 0;
                        }
                        Err(e) if broken => {
                            // Nothing may follow the hole in the broken segment: replay would
                            // stop before it. Refuse the batch without writing.
                            drop(st);
                            let e = io::Error::new(
                                e.kind(),
                                format!("the journal cannot start a new segment: {e}"),
                            );
                            for (_, tx) in batch {
                                let _ = tx.send(Err(copy_error(&e)));
                            }
                            continue;
                        }
                        Err(e) => tracing::error!(error = %e, "cannot start a new journal segment"),
                    }
                }
                let segment = st.segment;
                let offset = st.size;
                // Counted before writing, so a checkpoint never retires a segment with
                // records still on their way.
                *st.unapplied.entry(segment).or_insert(0) += batch.len();
                st.size += bytes;
                let number = st.next_batch;
                st.next_batch += 1;
                (number, batch, st.file.clone(), segment, offset)
            };
            let mut buf = Vec::with_capacity(batch.iter().map(|(r, _)| r.len() + HEADER).sum());
            let mut waiters = Vec::with_capacity(batch.len());
            for (record, waiter) in batch {
                encode(&mut buf, segment, &record);
                waiters.push(waiter);
            }
            let started = std::time::Instant::now();
            let result = {
                use std::os::unix::fs::FileExt;
                file.write_all_at(&buf, offset)
                    .and_then(|_| file.sync_data())
            };
            self.sync_nanos
                .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
            self.fsyncs.fetch_add(1, Ordering::Relaxed);
            self.appended
                .fetch_add(waiters.len() as u64, Ordering::Relaxed);
            self.finish(
                number,
                Finished {
                    segment,
                    waiters,
                    result,
                },
            );
        }
    }

    /// Records a finished batch and acknowledges, in batch order, every batch whose
    /// predecessors are all done.
    fn finish(&self, number: u64, batch: Finished) {
        let ready = {
            let mut st = self.state.lock();
            st.finished.insert(number, batch);
            let mut ready = Vec::new();
            loop {
                let next = st.next_ack;
                let Some(b) = st.finished.remove(&next) else {
                    break;
                };
                st.next_ack += 1;
                let result = match (&b.result, st.broken_segment == Some(b.segment)) {
                    (Err(e), _) => {
                        tracing::error!(error = %e, segment = b.segment, "journal write failed");
                        st.broken_segment = Some(b.segment);
                        Err(copy_error(e))
                    }
                    (Ok(()), true) => Err(io::Error::other(
                        "an earlier journal write in the same segment failed",
                    )),
                    (Ok(()), false) => Ok(()),
                };
                ready.push((b.segment, b.waiters, result));
            }
            ready
        };
        for (segment, waiters, result) in ready {
            match result {
                Ok(()) => {
                    for tx in waiters {
                        if tx.send(Ok(segment)).is_err() {
                            // The caller went away: its record is durable but will never be
                            // applied by it; it stays for replay, and no ticket holds it.
                            self.release(segment, 1);
                        }
                    }
                }
                Err(e) => {
                    let n = waiters.len();
                    for tx in waiters {
                        let _ = tx.send(Err(copy_error(&e)));
                    }
                    self.release(segment, n);
                }
            }
        }
    }

    /// Marks `n` records of `segment` as applied (or abandoned) and wakes a waiting
    /// checkpoint.
    fn release(&self, segment: u64, n: usize) {
        let mut st = self.state.lock();
        if let Some(count) = st.unapplied.get_mut(&segment) {
            *count -= n.min(*count);
            if *count == 0 {
                st.unapplied.remove(&segment);
            }
        }
        self.applied.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal in `dir` holding `records`, closed again (nothing checkpointed).
    fn journal_with(dir: &Path, records: &[&[u8]]) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (j, _) = Journal::open(dir).unwrap();
        rt.block_on(async {
            for r in records {
                drop(j.append(r.to_vec()).await.unwrap());
            }
        });
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn records_survive_reopen_until_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (j, replay) = Journal::open(dir.path()).unwrap();
            assert!(replay.is_empty());
            let j = Arc::new(j);
            let mut tasks = Vec::new();
            for i in 0..50u32 {
                let j = j.clone();
                tasks.push(tokio::spawn(async move {
                    j.append(i.to_le_bytes().to_vec()).await.unwrap()
                }));
            }
            for t in tasks {
                drop(t.await.unwrap());
            }
            assert!(j.stats().fsyncs <= 50);
        }
        let (j, replay) = Journal::open(dir.path()).unwrap();
        let mut got: Vec<u32> = replay
            .iter()
            .map(|r| u32::from_le_bytes(r[..4].try_into().unwrap()))
            .collect();
        got.sort_unstable();
        assert_eq!(got, (0..50).collect::<Vec<_>>());
        j.checkpoint(|| Ok(()), true).unwrap();
        drop(j);
        let (_j, replay) = Journal::open(dir.path()).unwrap();
        assert!(replay.is_empty());
    }

    #[test]
    fn torn_tail_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        journal_with(dir.path(), &[b"one", b"two"]);
        let seg = segment_path(dir.path(), 1);
        let mut bytes = fs::read(&seg).unwrap();
        bytes.truncate(bytes.len() - 1);
        fs::write(&seg, &bytes).unwrap();

        let (_j, replay) = Journal::open(dir.path()).unwrap();
        assert_eq!(replay, vec![b"one".to_vec()]);
    }

    #[test]
    fn stale_records_of_a_recycled_segment_are_not_replayed() {
        let dir = tempfile::tempdir().unwrap();
        journal_with(dir.path(), &[b"old-1", b"old-2"]);
        // Segment 1's bytes reused as segment 2 with one new record at its start, as a
        // recycled file would look: the old records after it must not come back.
        let old = fs::read(segment_path(dir.path(), 1)).unwrap();
        fs::remove_file(segment_path(dir.path(), 1)).unwrap();
        let mut recycled = old.clone();
        let new_payload = b"new".to_vec();
        let mut rec = Vec::new();
        encode(&mut rec, 2, &new_payload);
        recycled.splice(0..rec.len(), rec);
        fs::write(segment_path(dir.path(), 2), &recycled).unwrap();
        let (_j, replay) = Journal::open(dir.path()).unwrap();
        assert_eq!(replay, vec![b"new".to_vec()]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_write_moves_later_records_to_a_new_segment() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (j, _) = Journal::open(dir.path()).unwrap();
            drop(j.append(b"before".to_vec()).await.unwrap());
            // The current segment's handle can no longer write: the next batch fails.
            {
                let mut st = j.shared.state.lock();
                let path = segment_path(dir.path(), st.segment);
                st.file = Arc::new(File::open(path).unwrap());
            }
            assert!(j.append(b"lost".to_vec()).await.is_err());
            // Acknowledged records after the failure must be found by replay, so they go
            // to a fresh segment rather than after the hole.
            let t = j.append(b"after".to_vec()).await.unwrap();
            assert_eq!(t.segment, 2);
            drop(t);
        }
        let (_j, replay) = Journal::open(dir.path()).unwrap();
        assert_eq!(replay, vec![b"before".to_vec(), b"after".to_vec()]);
    }

    /// The background checkpoint and the last one at shutdown may be called together; each
    /// lists, recycles and deletes the old segments, and one used to find a file the other
    /// had just moved (ENOENT at shutdown, seen in CI). They now take turns.
    #[test]
    fn concurrent_checkpoints_take_turns() {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (j, _) = Journal::open(dir.path()).unwrap();
        let j = Arc::new(j);
        let big = vec![7u8; 64 << 10];
        for round in 0..100u32 {
            rt.block_on(async {
                // Enough to make the retired segments worth recycling.
                for _ in 0..(RECYCLE_THRESHOLD / big.len() as u64 + 1) {
                    drop(j.append(big.clone()).await.unwrap());
                }
                drop(j.append(round.to_le_bytes().to_vec()).await.unwrap());
            });
            let threads: Vec<_> = [true, false]
                .into_iter()
                .map(|recycle| {
                    let j = j.clone();
                    // A sync that takes a moment, as a real one does: both calls reach the
                    // listing and deleting of old segments together.
                    std::thread::spawn(move || {
                        j.checkpoint(
                            || {
                                std::thread::sleep(std::time::Duration::from_millis(2));
                                Ok(())
                            },
                            recycle,
                        )
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap().unwrap();
            }
        }
        drop(j);
        let (_j, replay) = Journal::open(dir.path()).unwrap();
        assert!(replay.is_empty(), "{} records replayed", replay.len());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn checkpoint_waits_for_unapplied_records() {
        let dir = tempfile::tempdir().unwrap();
        let (j, _) = Journal::open(dir.path()).unwrap();
        let j = Arc::new(j);
        let ticket = j.append(b"pending".to_vec()).await.unwrap();
        let j2 = j.clone();
        let synced = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = synced.clone();
        let cp = std::thread::spawn(move || {
            j2.checkpoint(
                || {
                    s2.store(true, Ordering::SeqCst);
                    Ok(())
                },
                true,
            )
            .unwrap()
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            !synced.load(Ordering::SeqCst),
            "checkpoint ran before the record was applied"
        );
        drop(ticket);
        cp.join().unwrap();
        assert!(synced.load(Ordering::SeqCst));
    }
}
