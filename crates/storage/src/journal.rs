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
const HEADER: usize = 12;
/// A segment is closed at the next checkpoint once it holds this much.
const SEGMENT_TARGET: u64 = 64 << 20;

/// A write-ahead (redo) journal: the durable record of every write until the files it
/// describes are themselves durable.
///
/// [`append`](Journal::append) returns once the record is on stable storage. Records of all
/// callers waiting at the same moment are written with one `write` and one `fdatasync` of a
/// sequential file, so durability costs one small sequential write per batch of requests
/// instead of a filesystem-wide sync per request.
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
    checkpoints: AtomicU64,
}

struct State {
    segment: u64,
    file: Arc<File>,
    size: u64,
    pending: Vec<(Vec<u8>, oneshot::Sender<io::Result<u64>>)>,
    /// Records appended but not yet applied, per segment.
    unapplied: BTreeMap<u64, usize>,
    shutdown: bool,
}

/// Proof that a record is durable; drop it once the record has been applied.
pub struct Ticket {
    shared: Arc<Shared>,
    segment: u64,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut st = self.shared.state.lock();
        if let Some(n) = st.unapplied.get_mut(&self.segment) {
            *n -= 1;
            if *n == 0 {
                st.unapplied.remove(&self.segment);
            }
        }
        self.shared.applied.notify_all();
    }
}

/// Counters for metrics and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JournalStats {
    /// Records appended.
    pub records: u64,
    /// `fdatasync` calls (batches).
    pub fsyncs: u64,
    /// Checkpoints completed.
    pub checkpoints: u64,
}

fn segment_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:016}.journal"))
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

/// Reads the valid records of one segment; stops at the first torn or corrupt record.
fn read_segment(path: &Path) -> io::Result<Vec<Vec<u8>>> {
    let mut bytes = Vec::new();
    File::open(path)?.read_to_end(&mut bytes)?;
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + HEADER <= bytes.len() {
        let magic = u32::from_le_bytes(bytes[pos..pos + 4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(bytes[pos + 4..pos + 8].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(bytes[pos + 8..pos + 12].try_into().expect("4 bytes"));
        let end = pos + HEADER + len;
        if magic != MAGIC || end > bytes.len() {
            break;
        }
        let payload = &bytes[pos + HEADER..end];
        if crc32fast::hash(payload) != crc {
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
            records.extend(read_segment(&segment_path(dir, *n))?);
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
                shutdown: false,
            }),
            wake: Condvar::new(),
            applied: Condvar::new(),
            appended: AtomicU64::new(0),
            fsyncs: AtomicU64::new(0),
            checkpoints: AtomicU64::new(0),
        });
        let worker = shared.clone();
        thread::Builder::new()
            .name("arca-journal".into())
            .spawn(move || worker.run())?;
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
        st.size >= SEGMENT_TARGET || st.unapplied.keys().any(|s| *s < st.segment)
    }

    /// Starts a new segment, waits until every record of the older ones is applied, runs
    /// `sync` (which must make every applied write durable), then deletes the older
    /// segments. Blocking; run it on its own thread.
    pub fn checkpoint(&self, sync: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        let sealed = {
            let mut st = self.shared.state.lock();
            if st.size == 0
                && st.unapplied.is_empty()
                && list_segments(&self.shared.dir)?.len() <= 1
            {
                return Ok(());
            }
            let next = st.segment + 1;
            st.file = Arc::new(create_segment(&self.shared.dir, next)?);
            st.segment = next;
            st.size = 0;
            while st.unapplied.keys().any(|s| *s < next) {
                self.shared.applied.wait(&mut st);
            }
            next
        };
        sync()?;
        for n in list_segments(&self.shared.dir)? {
            if n < sealed {
                fs::remove_file(segment_path(&self.shared.dir, n))?;
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

fn create_segment(dir: &Path, n: u64) -> io::Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(segment_path(dir, n))?;
    File::open(dir)?.sync_all()?;
    Ok(file)
}

impl Shared {
    fn run(&self) {
        loop {
            let (batch, file, segment) = {
                let mut st = self.state.lock();
                while st.pending.is_empty() && !st.shutdown {
                    self.wake.wait(&mut st);
                }
                if st.pending.is_empty() {
                    return;
                }
                let batch = std::mem::take(&mut st.pending);
                let segment = st.segment;
                // Counted before writing, so a checkpoint never deletes a segment with
                // records still on their way.
                *st.unapplied.entry(segment).or_insert(0) += batch.len();
                st.size += batch
                    .iter()
                    .map(|(r, _)| (r.len() + HEADER) as u64)
                    .sum::<u64>();
                (batch, st.file.clone(), segment)
            };
            let mut buf = Vec::with_capacity(batch.iter().map(|(r, _)| r.len() + HEADER).sum());
            for (record, _) in &batch {
                buf.extend_from_slice(&MAGIC.to_le_bytes());
                buf.extend_from_slice(&(record.len() as u32).to_le_bytes());
                buf.extend_from_slice(&crc32fast::hash(record).to_le_bytes());
                buf.extend_from_slice(record);
            }
            let result = (&*file).write_all(&buf).and_then(|_| file.sync_data());
            self.fsyncs.fetch_add(1, Ordering::Relaxed);
            self.appended
                .fetch_add(batch.len() as u64, Ordering::Relaxed);
            match result {
                Ok(()) => {
                    for (_, tx) in batch {
                        if tx.send(Ok(segment)).is_err() {
                            // The caller went away: its record is durable but will never be
                            // applied by it; it stays for replay, and no ticket holds it.
                            self.release(segment);
                        }
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "journal write failed");
                    let n = batch.len();
                    for (_, tx) in batch {
                        let _ = tx.send(Err(io::Error::new(e.kind(), e.to_string())));
                    }
                    let mut st = self.state.lock();
                    if let Some(c) = st.unapplied.get_mut(&segment) {
                        *c -= n.min(*c);
                        if *c == 0 {
                            st.unapplied.remove(&segment);
                        }
                    }
                    self.applied.notify_all();
                }
            }
        }
    }

    fn release(&self, segment: u64) {
        let mut st = self.state.lock();
        if let Some(n) = st.unapplied.get_mut(&segment) {
            *n -= 1;
            if *n == 0 {
                st.unapplied.remove(&segment);
            }
        }
        self.applied.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        j.checkpoint(|| Ok(())).unwrap();
        drop(j);
        let (_j, replay) = Journal::open(dir.path()).unwrap();
        assert!(replay.is_empty());
    }

    #[test]
    fn torn_tail_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        {
            let (j, _) = Journal::open(dir.path()).unwrap();
            rt.block_on(async {
                drop(j.append(b"one".to_vec()).await.unwrap());
                drop(j.append(b"two".to_vec()).await.unwrap());
            });
        }
        let seg = segment_path(dir.path(), 1);
        let mut bytes = fs::read(&seg).unwrap();
        bytes.truncate(bytes.len() - 1);
        fs::write(&seg, &bytes).unwrap();
        let (_j, replay) = Journal::open(dir.path()).unwrap();
        assert_eq!(replay, vec![b"one".to_vec()]);
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
            j2.checkpoint(|| {
                s2.store(true, Ordering::SeqCst);
                Ok(())
            })
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
