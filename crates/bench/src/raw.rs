//! The physical limit, measured in the same run as the server, on the file system of its
//! data. N OS threads each do, per object, one of:
//!
//! - **flat** (`raw-fsync-…`, `raw-nofsync-…`): the studies' "simple file writing program" —
//!   one new file of the scenario's size, once with `fsync` of every file, once without;
//! - **layout** (`raw-layout-…`): exactly the directories and files arca creates for one
//!   object in Fedora's layout ([`crate::layout`]), with arca's durability: no fsync per file
//!   (uploads over 1 MiB excepted, as in arca) but a `syncfs` every 5 s from another thread,
//!   as arca's checkpoint — the file system's floor for this layout;
//! - **hash** (`raw-hash-…`): one flat file, its SHA-512 (or `--digest`) computed over every
//!   byte while it is written, fsynced — the floor for any OCFL writer;
//! - **read** (`raw-read-…`, access scenarios): flat files read back in random order.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest as _, Sha256, Sha512};

use crate::args::{format_size, Baseline, DigestAlg, RawPlan, Scenario};
use crate::driver::{drive_threads, mix, Ctx, Driven, Limits, Probe, Stop};
use crate::layout::LayoutWriter;
use crate::payload::Chunks;
use crate::procfs;
use crate::recorder::{Code, TxOutcome};
use crate::report::{Kind, PhaseConfig, ScenarioReport, Status};

/// How often a raw-layout row syncs the file system (arca's checkpoint interval).
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(5);

/// The mode of a raw row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Write, fsync, close.
    Fsync,
    /// Write, close.
    NoFsync,
    /// Read a file back.
    Read,
    /// Write one object in Fedora's layout, as arca does.
    Layout {
        /// The object has a binary besides its container.
        binary: bool,
    },
    /// Write while hashing, fsync, close.
    Hash,
}

impl Mode {
    fn tag(self) -> &'static str {
        match self {
            Mode::Fsync => "fsync",
            Mode::NoFsync => "nofsync",
            Mode::Read => "read",
            Mode::Layout { .. } => "layout",
            Mode::Hash => "hash",
        }
    }
}

/// The rows a baseline consists of, in the order they run.
pub fn modes(baseline: Baseline) -> Vec<Mode> {
    match baseline {
        Baseline::Flat => vec![Mode::Fsync, Mode::NoFsync],
        Baseline::Read => vec![Mode::Read],
        Baseline::Layout { binary } => vec![Mode::Layout { binary }],
        Baseline::Hash => vec![Mode::Hash],
    }
}

/// The row name: `raw-fsync-20KiB-16t`; a layout row without binary is
/// `raw-layout-container-16t`.
pub fn row_name(mode: Mode, size: u64, threads: usize) -> String {
    let size = match mode {
        Mode::Layout { binary: false } => "container".to_string(),
        _ => format_size(size).replace(' ', ""),
    };
    format!("raw-{}-{size}-{threads}t", mode.tag())
}

/// Writes one file made of `chunks`, with fsync when asked.
pub fn write_file(path: &Path, chunks: Chunks, fsync: bool) -> std::io::Result<()> {
    let mut f = File::create(path)?;
    for c in chunks {
        f.write_all(&c)?;
    }
    if fsync {
        f.sync_all()?;
    }
    Ok(())
}

/// Writes one file made of `chunks` while computing its `alg` digest, fsyncs it, and returns
/// the digest.
pub fn write_hashed(path: &Path, chunks: Chunks, alg: DigestAlg) -> std::io::Result<Vec<u8>> {
    enum Hasher {
        Sha512(Sha512),
        Sha256(Sha256),
    }
    let mut hasher = match alg {
        DigestAlg::Sha512 => Hasher::Sha512(Sha512::new()),
        DigestAlg::Sha256 => Hasher::Sha256(Sha256::new()),
    };
    let mut f = File::create(path)?;
    for c in chunks {
        match &mut hasher {
            Hasher::Sha512(h) => h.update(&c),
            Hasher::Sha256(h) => h.update(&c),
        }
        f.write_all(&c)?;
    }
    f.sync_all()?;
    Ok(match hasher {
        Hasher::Sha512(h) => h.finalize().to_vec(),
        Hasher::Sha256(h) => h.finalize().to_vec(),
    })
}

/// Reads a whole file, returning its length.
pub fn read_file(path: &Path, buf: &mut [u8]) -> std::io::Result<u64> {
    let mut f = File::open(path)?;
    let mut n = 0u64;
    loop {
        match f.read(buf) {
            Ok(0) => return Ok(n),
            Ok(k) => n += k as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// `syncfs(2)`: makes everything written to the file system holding `dir` durable.
pub fn syncfs(dir: &File) -> std::io::Result<()> {
    Ok(rustix::fs::syncfs(dir)?)
}

fn fresh_dir(parent: &Path) -> anyhow::Result<tempfile::TempDir> {
    std::fs::create_dir_all(parent)?;
    Ok(tempfile::Builder::new()
        .prefix(".arca-bench-raw-")
        .tempdir_in(parent)?)
}

/// The `syncfs` calls of a raw-layout row.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SyncTimes {
    /// Calls.
    pub count: u64,
    /// The longest one.
    pub longest: Duration,
}

/// A thread that syncs the file system holding a directory every `every` until stopped, as
/// arca's checkpoint.
struct Checkpoints {
    dir: File,
    stop: Arc<(Mutex<bool>, Condvar)>,
    times: Arc<Mutex<SyncTimes>>,
    thread: std::thread::JoinHandle<std::io::Result<()>>,
}

impl Checkpoints {
    fn start(dir: &Path, every: Duration) -> std::io::Result<Checkpoints> {
        let dir = File::open(dir)?;
        let handle = dir.try_clone()?;
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let times = Arc::new(Mutex::new(SyncTimes::default()));
        let (flag, record) = (stop.clone(), times.clone());
        let thread = std::thread::Builder::new()
            .name("raw-checkpoint".into())
            .spawn(move || {
                let (lock, wake) = &*flag;
                loop {
                    let next = Instant::now() + every;
                    let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
                    while !*stopped && Instant::now() < next {
                        let wait = next.saturating_duration_since(Instant::now());
                        stopped = wake
                            .wait_timeout(stopped, wait)
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                    }
                    if *stopped {
                        return Ok(());
                    }
                    drop(stopped);
                    let t0 = Instant::now();
                    syncfs(&handle)?;
                    let took = t0.elapsed();
                    let mut t = record.lock().unwrap_or_else(|e| e.into_inner());
                    t.count += 1;
                    t.longest = t.longest.max(took);
                }
            })?;
        Ok(Checkpoints {
            dir,
            stop,
            times,
            thread,
        })
    }

    /// The syncs so far.
    #[cfg(test)]
    fn times(&self) -> SyncTimes {
        *self.times.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops the thread (after the sync it may be in); returns its syncs and, for a last
    /// sync, the directory's handle.
    fn stop(self) -> std::io::Result<(SyncTimes, File)> {
        let Checkpoints {
            dir,
            stop,
            times,
            thread,
        } = self;
        let (lock, wake) = &*stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        wake.notify_all();
        thread
            .join()
            .map_err(|_| std::io::Error::other("the checkpoint thread panicked"))??;
        let synced = *times.lock().unwrap_or_else(|e| e.into_inner());
        Ok((synced, dir))
    }
}

/// What one transaction of a raw write row does.
#[derive(Clone)]
enum Writer {
    /// One flat file per object (`dir/t{thread}/{ticket}`), with fsync or not.
    Flat { dir: PathBuf, fsync: bool },
    /// One flat file per object, hashed.
    Hash { dir: PathBuf, alg: DigestAlg },
    /// One object in Fedora's layout.
    Layout { writer: LayoutWriter, binary: bool },
}

impl Writer {
    fn new(mode: Mode, dir: &Path, threads: usize, alg: DigestAlg) -> std::io::Result<Writer> {
        if let Mode::Layout { binary } = mode {
            return Ok(Writer::Layout {
                writer: LayoutWriter::create(dir)?,
                binary,
            });
        }
        for i in 0..threads.max(1) {
            std::fs::create_dir_all(dir.join(format!("t{i}")))?;
        }
        let dir = dir.to_path_buf();
        Ok(match mode {
            Mode::Hash => Writer::Hash { dir, alg },
            _ => Writer::Flat {
                dir,
                fsync: mode == Mode::Fsync,
            },
        })
    }

    /// Bytes and inodes one object takes (for the disk budget).
    fn cost(&self, size: u64) -> (u64, u64) {
        match self {
            Writer::Layout { binary, .. } => crate::layout::cost(binary.then_some(size)),
            _ => (size, 1),
        }
    }

    /// Payload bytes of one object.
    fn payload(&self, size: u64) -> u64 {
        match self {
            Writer::Layout { binary: false, .. } => 0,
            _ => size,
        }
    }

    fn write(&self, thread: usize, ticket: u64, object: u64, chunks: Chunks) -> Result<(), String> {
        match self {
            Writer::Flat { dir, fsync } => {
                let path = dir.join(format!("t{thread}")).join(ticket.to_string());
                write_file(&path, chunks, *fsync)
                    .map_err(|e| format!("writing {}: {e}", path.display()))
            }
            Writer::Hash { dir, alg } => {
                let path = dir.join(format!("t{thread}")).join(ticket.to_string());
                // A writer would store the digest; black_box keeps it (and its computation).
                write_hashed(&path, chunks, *alg)
                    .map(|digest| drop(std::hint::black_box(digest)))
                    .map_err(|e| format!("writing {}: {e}", path.display()))
            }
            Writer::Layout { writer, binary } => writer
                .write_object(object, binary.then_some(chunks))
                .map_err(|e| {
                    format!(
                        "writing object {object} in {}: {e}",
                        writer.root().display()
                    )
                }),
        }
    }
}

/// Writes objects with `limits.clients` threads into `dir` the way `writer` says; stops every
/// thread once the bytes or inodes written would exceed half of what the file system has free.
async fn write_objects(
    ctx: &Ctx,
    label: &str,
    writer: Writer,
    dir: &Path,
    size: u64,
    limits: Limits,
) -> Driven {
    // Never fill the disk: half of the free space and inodes at most.
    let budget = (
        procfs::free_space(dir).map_or(u64::MAX, |f| f / 2),
        procfs::free_inodes(dir).map_or(u64::MAX, |f| f / 2),
    );
    let (bytes, inodes) = writer.cost(size);
    let used = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let payload = ctx.payload.clone();
    let next = ctx.next_object.clone();
    drive_threads(ctx, label, limits, move |ticket, thread| {
        let b = used.0.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let i = used.1.fetch_add(inodes, Ordering::Relaxed) + inodes;
        if b > budget.0 || i > budget.1 {
            return Err(format!(
                "stopped at the disk budget (half the free space, {}, and inodes, {})",
                crate::report::bytes(budget.0 as f64),
                budget.1
            ));
        }
        let object = next.fetch_add(1, Ordering::Relaxed);
        let chunks = payload.chunks(object, size);
        Ok(match writer.write(thread, ticket, object, chunks) {
            Ok(()) => TxOutcome {
                codes: vec![Code::FileOk],
                ok: true,
                bytes: writer.payload(size),
                error: None,
            },
            Err(e) => TxOutcome::failed(Code::Fs, e),
        })
    })
    .await
}

fn base_row(scenario: Scenario, mode: Mode, plan: &RawPlan) -> ScenarioReport {
    let name = row_name(mode, plan.key.size, plan.key.threads);
    ScenarioReport::new(
        &name,
        scenario,
        Kind::Raw,
        PhaseConfig {
            clients: plan.key.threads,
            duration_s: plan.duration.map(|d| d.as_secs_f64()),
            count: plan.count,
            size_bytes: plan.key.size,
            objects: (mode == Mode::Read).then_some(plan.objects),
            fsync: match mode {
                Mode::Fsync | Mode::Hash => Some(true),
                Mode::NoFsync => Some(false),
                Mode::Read | Mode::Layout { .. } => None,
            },
            interval_s: None,
            digest: (mode == Mode::Hash).then(|| plan.digest.name().to_string()),
            with_binary: match mode {
                Mode::Layout { binary } => Some(binary),
                _ => None,
            },
            syncfs_every_s: matches!(mode, Mode::Layout { .. })
                .then(|| CHECKPOINT_EVERY.as_secs_f64()),
        },
    )
}

fn fill_row(row: &mut ScenarioReport, d: &Driven) {
    row.elapsed_s = d.elapsed.as_secs_f64();
    row.summary = d.rec.summary(d.elapsed);
    match &d.stop {
        Stop::Done => {}
        Stop::Aborted(why) => {
            // Hitting the disk budget is a normal end for a raw row.
            if !why.starts_with("stopped at the disk budget") {
                row.status = Status::Aborted;
            }
            row.note = Some(why.clone());
        }
        Stop::Interrupted => row.status = Status::Interrupted,
    }
}

fn add_note(row: &mut ScenarioReport, note: String) {
    row.note = Some(match row.note.take() {
        Some(n) => format!("{n}; {note}"),
        None => note,
    });
}

/// Raw files of small objects are kept until the run ends, then removed together.
///
/// Why: on ext4 without a journal the kernel will not reuse an inode for 60 s after it was
/// freed (5 minutes while its inode-table block is dirty), and every new inode allocation scans
/// past each such inode of its block group. Deleting a raw row's hundreds of thousands of files
/// right before the next scenario would tax every file that scenario creates — and a server
/// creating a dozen inodes per object far more than the one-file raw program.
const KEEP_BELOW: u64 = 1 << 20;

/// Raw directories kept until the end of the run (see [`KEEP_BELOW`]).
#[derive(Clone, Debug, Default)]
pub struct Leftovers(Arc<Mutex<Vec<tempfile::TempDir>>>);

impl Leftovers {
    /// Removes every kept directory and syncs, so that a following run starts clean.
    pub async fn remove_all(&self) {
        let dirs = self.take();
        if !dirs.is_empty() {
            let _ = tokio::task::spawn_blocking(move || {
                crate::cleanup::remove_trees(dirs, "raw files");
                crate::cleanup::sync_reporting();
            })
            .await;
        }
    }

    /// The kept directories, no longer removed by anyone but the caller.
    pub fn take(&self) -> Vec<std::path::PathBuf> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
            .into_iter()
            .map(|d| d.keep())
            .collect()
    }
}

/// Removes a raw directory now (objects of 1 MiB or more: few inodes) or at the end of the
/// run.
async fn dispose(ctx: &Ctx, dir: tempfile::TempDir, size: u64) {
    if size < KEEP_BELOW {
        ctx.leftovers
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(dir);
    } else {
        remove_now(vec![dir]).await;
    }
}

async fn remove_now(dirs: Vec<tempfile::TempDir>) {
    let now = Leftovers(Arc::new(Mutex::new(dirs)));
    now.remove_all().await;
}

/// One raw row of `mode`.
pub async fn row(
    ctx: &Ctx,
    scenario: Scenario,
    plan: &RawPlan,
    mode: Mode,
) -> anyhow::Result<ScenarioReport> {
    match mode {
        Mode::Read => read_row(ctx, scenario, plan).await,
        _ => write_row(ctx, scenario, plan, mode).await,
    }
}

/// One raw write row (flat with or without fsync, layout, hash): flushes what earlier rows
/// left dirty (not measured), writes, measures, disposes of the files. A layout row syncs the
/// file system every [`CHECKPOINT_EVERY`] while it runs and once after its last object (not
/// in its elapsed time); its note says how long those syncs took.
pub async fn write_row(
    ctx: &Ctx,
    scenario: Scenario,
    plan: &RawPlan,
    mode: Mode,
) -> anyhow::Result<ScenarioReport> {
    let mut row = base_row(scenario, mode, plan);
    let dir = fresh_dir(&ctx.raw_parent)?;
    eprintln!("==> {}: {}", row.name, describe(plan));
    let size = plan.key.size;
    let writer = match Writer::new(mode, dir.path(), plan.key.threads, plan.digest) {
        Ok(w) => w,
        Err(e) => {
            dispose(ctx, dir, size).await;
            return Err(e.into());
        }
    };
    // What an earlier row left dirty (a no-fsync row may leave gigabytes) is flushed now, not
    // inside this row — by a layout row's syncfs above all.
    tokio::task::spawn_blocking(procfs::sync_all).await.ok();
    let probe = Probe::start(Some(None), Some(dir.path().to_path_buf())).await;
    let limits = Limits {
        clients: plan.key.threads,
        duration: plan.duration,
        count: plan.count,
    };
    let checkpoints = match matches!(mode, Mode::Layout { .. })
        .then(|| Checkpoints::start(dir.path(), CHECKPOINT_EVERY))
        .transpose()
    {
        Ok(c) => c,
        Err(e) => {
            dispose(ctx, dir, size).await;
            return Err(e.into());
        }
    };
    let driven = write_objects(ctx, &row.name, writer, dir.path(), size, limits).await;
    fill_row(&mut row, &driven);
    if let Some(checkpoints) = checkpoints {
        let synced = tokio::task::spawn_blocking(move || {
            let (during, dir) = checkpoints.stop()?;
            let t0 = Instant::now();
            syncfs(&dir)?;
            Ok::<_, std::io::Error>((during, t0.elapsed()))
        })
        .await
        .map_err(std::io::Error::other)
        .and_then(|r| r);
        match synced {
            Ok((during, last)) => {
                let during = match during.count {
                    0 => "none during the row".to_string(),
                    n => format!(
                        "{n} during the row (longest {:.2} s)",
                        during.longest.as_secs_f64()
                    ),
                };
                add_note(
                    &mut row,
                    format!(
                        "syncfs every {} s: {during}, one after the last object ({:.2} s, not \
                         in the elapsed time)",
                        CHECKPOINT_EVERY.as_secs(),
                        last.as_secs_f64()
                    ),
                );
            }
            Err(e) => {
                row.status = Status::Aborted;
                add_note(&mut row, format!("syncfs failed: {e}"));
            }
        }
    }
    row.objects_created = row.summary.ok;
    let (server, _, disk) = probe.finish(row.summary.transactions, row.summary.ok).await;
    row.server = server.map(|mut s| {
        s.pid = Some(std::process::id());
        s
    });
    row.disk = disk;
    dispose(ctx, dir, size).await;
    Ok(row)
}

/// One raw read row: writes `plan.objects` files (no fsync, not measured), syncs, then reads
/// them back in random order.
pub async fn read_row(
    ctx: &Ctx,
    scenario: Scenario,
    plan: &RawPlan,
) -> anyhow::Result<ScenarioReport> {
    let mut row = base_row(scenario, Mode::Read, plan);
    let dir = fresh_dir(&ctx.raw_parent)?;
    eprintln!("==> {}: {}", row.name, describe(plan));
    let threads = plan.key.threads;
    let setup = match Writer::new(Mode::NoFsync, dir.path(), threads, plan.digest) {
        Ok(writer) => {
            let limits = Limits {
                clients: threads,
                duration: None,
                count: Some(plan.objects.max(1)),
            };
            let label = format!("{} (setup)", row.name);
            write_objects(ctx, &label, writer, dir.path(), plan.key.size, limits).await
        }
        Err(e) => {
            dispose(ctx, dir, plan.key.size).await;
            return Err(e.into());
        }
    };
    // The files each thread wrote, by ticket.
    let mut files: Vec<PathBuf> = Vec::new();
    for i in 0..threads.max(1) {
        if let Ok(rd) = std::fs::read_dir(dir.path().join(format!("t{i}"))) {
            files.extend(rd.flatten().map(|e| e.path()));
        }
    }
    files.sort();
    if files.is_empty() || ctx.interrupt.is_set() {
        fill_row(&mut row, &setup);
        row.summary = Default::default();
        row.status = if ctx.interrupt.is_set() {
            Status::Interrupted
        } else {
            Status::Aborted
        };
        row.note = Some("no file could be written to read back".into());
        dispose(ctx, dir, plan.key.size).await;
        return Ok(row);
    }
    tokio::task::spawn_blocking(procfs::sync_all).await.ok();
    let probe = Probe::start(Some(None), None).await;
    let files = Arc::new(files);
    let size = plan.key.size;
    let seed = ctx.seed;
    let buf_len = (size.clamp(1, 1 << 20) + 1) as usize;
    let driven = drive_threads(
        ctx,
        &row.name,
        Limits {
            clients: threads,
            duration: plan.duration,
            count: plan.count,
        },
        move |ticket, _| {
            let path = &files[(mix(seed ^ ticket) % files.len() as u64) as usize];
            let mut buf = vec![0u8; buf_len];
            Ok(match read_file(path, &mut buf) {
                Ok(n) if n == size => TxOutcome {
                    codes: vec![Code::FileOk],
                    ok: true,
                    bytes: n,
                    error: None,
                },
                Ok(n) => TxOutcome::failed(
                    Code::WrongLength,
                    format!("reading {}: {n} bytes instead of {size}", path.display()),
                ),
                Err(e) => TxOutcome::failed(Code::Fs, format!("reading {}: {e}", path.display())),
            })
        },
    )
    .await;
    fill_row(&mut row, &driven);
    let (server, _, _) = probe.finish(row.summary.transactions, 0).await;
    row.server = server.map(|mut s| {
        s.pid = Some(std::process::id());
        s
    });
    dispose(ctx, dir, plan.key.size).await;
    Ok(row)
}

fn describe(plan: &RawPlan) -> String {
    let what = match plan.key.baseline {
        Baseline::Layout { binary: false } => "a container object in Fedora's layout".into(),
        Baseline::Layout { binary: true } => format!(
            "a container and a {} binary in Fedora's layout",
            format_size(plan.key.size)
        ),
        Baseline::Hash => format!(
            "{} per file, {}",
            format_size(plan.key.size),
            plan.digest.name()
        ),
        Baseline::Flat | Baseline::Read => format!("{} per file", format_size(plan.key.size)),
    };
    let mut s = format!("{} threads, {what}", plan.key.threads);
    if let Some(d) = plan.duration {
        s.push_str(&format!(", {} s", d.as_secs_f64()));
    }
    if let Some(n) = plan.count {
        s.push_str(&format!(", at most {n} objects"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::RawKey;
    use crate::payload::Payload;

    fn ctx(parent: &Path) -> Ctx {
        Ctx::for_tests(parent)
    }

    fn plan(baseline: Baseline, count: u64) -> RawPlan {
        RawPlan {
            key: RawKey {
                baseline,
                size: 3000,
                threads: 3,
            },
            duration: Some(std::time::Duration::from_secs(30)),
            count: Some(count),
            objects: 4,
            digest: DigestAlg::Sha512,
        }
    }

    /// Every file (not directory) below `dir` and its size.
    fn files(dir: &Path) -> Vec<u64> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                out.extend(files(&e.path()));
            } else {
                out.push(e.metadata().unwrap().len());
            }
        }
        out
    }

    #[test]
    fn names() {
        assert_eq!(row_name(Mode::Fsync, 20 << 10, 16), "raw-fsync-20KiB-16t");
        assert_eq!(row_name(Mode::NoFsync, 0, 1), "raw-nofsync-0B-1t");
        assert_eq!(row_name(Mode::Read, 15 << 20, 2), "raw-read-15MiB-2t");
        assert_eq!(row_name(Mode::Hash, 15 << 20, 2), "raw-hash-15MiB-2t");
        assert_eq!(
            row_name(Mode::Layout { binary: true }, 20 << 10, 16),
            "raw-layout-20KiB-16t"
        );
        assert_eq!(
            row_name(Mode::Layout { binary: false }, 0, 16),
            "raw-layout-container-16t"
        );
        assert_eq!(modes(Baseline::Flat), [Mode::Fsync, Mode::NoFsync]);
        assert_eq!(modes(Baseline::Hash), [Mode::Hash]);
    }

    #[tokio::test]
    async fn writes_counts_and_cleans_up() {
        let parent = tempfile::tempdir().unwrap();
        let c = ctx(parent.path());
        for mode in [Mode::Fsync, Mode::NoFsync, Mode::Hash] {
            let baseline = if mode == Mode::Hash {
                Baseline::Hash
            } else {
                Baseline::Flat
            };
            let row = write_row(&c, Scenario::Raw, &plan(baseline, 10), mode)
                .await
                .unwrap();
            assert_eq!(row.status, Status::Completed);
            assert_eq!(row.summary.ok, 10);
            assert_eq!(row.objects_created, 10);
            assert_eq!(row.summary.bytes, 30_000);
            assert_eq!(row.summary.status_codes["ok"], 10);
            let disk = row.disk.as_ref().unwrap();
            assert_eq!(disk.files_after, 10);
            assert!(disk.bytes_per_object.unwrap() >= 3000.0);
            assert!(row.server.is_some());
            assert_eq!(row.config.fsync, Some(mode != Mode::NoFsync));
            assert_eq!(
                row.config.digest.as_deref(),
                (mode == Mode::Hash).then_some("sha512")
            );
        }
        // Small files stay until the run ends, then nothing is left behind.
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 3);
        c.leftovers.remove_all().await;
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn layout_rows_write_whole_objects() {
        let parent = tempfile::tempdir().unwrap();
        let c = ctx(parent.path());
        for binary in [false, true] {
            let p = plan(Baseline::Layout { binary }, 10);
            let row = write_row(&c, Scenario::Raw, &p, Mode::Layout { binary })
                .await
                .unwrap();
            assert_eq!(row.status, Status::Completed, "{:?}", row.note);
            assert_eq!(row.summary.ok, 10);
            assert_eq!(row.objects_created, 10);
            assert_eq!(row.summary.bytes, if binary { 30_000 } else { 0 });
            assert_eq!(row.config.with_binary, Some(binary));
            assert_eq!(row.config.syncfs_every_s, Some(5.0));
            assert_eq!(row.config.fsync, None);
            // Per object 7 names for the container's object, 9 more for the binary's.
            let names = if binary { 16 } else { 7 };
            let disk = row.disk.as_ref().unwrap();
            assert_eq!(disk.files_after, 10 * names, "{}", row.name);
            let note = row.note.as_deref().unwrap_or_default();
            assert!(note.contains("one after the last object"), "{note}");
        }
        // The files are there until the run ends: 10 objects' worth, payload included.
        let kept = c.leftovers.take();
        assert_eq!(kept.len(), 2);
        let sizes: Vec<u64> = kept.iter().flat_map(|d| files(d)).collect();
        assert_eq!(sizes.len(), 10 * (7 + 7 + 9));
        assert_eq!(sizes.iter().filter(|&&s| s == 3000).count(), 10);
        crate::cleanup::remove_trees(kept, "test");
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn large_files_are_removed_right_after_their_row() {
        let parent = tempfile::tempdir().unwrap();
        let c = ctx(parent.path());
        let mut p = plan(Baseline::Flat, 2);
        p.key.size = KEEP_BELOW;
        let row = write_row(&c, Scenario::Raw, &p, Mode::NoFsync)
            .await
            .unwrap();
        assert_eq!(row.summary.ok, 2);
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn reads_back() {
        let parent = tempfile::tempdir().unwrap();
        let c = ctx(parent.path());
        let row = read_row(&c, Scenario::AccessSmall, &plan(Baseline::Read, 25))
            .await
            .unwrap();
        assert_eq!(row.status, Status::Completed, "{:?}", row.note);
        assert_eq!(row.summary.ok, 25);
        assert_eq!(row.summary.bytes, 25 * 3000);
        assert_eq!(row.name, "raw-read-3000B-3t");
        c.leftovers.remove_all().await;
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[test]
    fn file_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let p = Payload::new(3, 4);
        let path = d.path().join("f");
        write_file(&path, p.chunks(1, 2_500_000), true).unwrap();
        let mut buf = vec![0; 1 << 20];
        assert_eq!(read_file(&path, &mut buf).unwrap(), 2_500_000);
        write_file(&d.path().join("empty"), p.chunks(2, 0), true).unwrap();
        assert_eq!(std::fs::metadata(d.path().join("empty")).unwrap().len(), 0);
    }

    #[test]
    fn hashes_every_byte_written() {
        let d = tempfile::tempdir().unwrap();
        let p = Payload::new(3, 4);
        // Several blocks, so that the stamps of every block are covered.
        let len = 2 * crate::payload::BLOCK as u64 + 12_345;
        let bytes: Vec<u8> = p.chunks(5, len).flat_map(|c| c.to_vec()).collect();
        let path = d.path().join("h");
        let digest = write_hashed(&path, p.chunks(5, len), DigestAlg::Sha512).unwrap();
        assert_eq!(digest, Sha512::digest(&bytes).to_vec());
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        let digest = write_hashed(&path, p.chunks(5, len), DigestAlg::Sha256).unwrap();
        assert_eq!(digest, Sha256::digest(&bytes).to_vec());
        // Another object, another digest.
        let other = write_hashed(&path, p.chunks(6, len), DigestAlg::Sha256).unwrap();
        assert_ne!(other, digest);
    }

    #[test]
    fn checkpoints_sync_until_stopped() {
        let d = tempfile::tempdir().unwrap();
        // A long interval: stopping does not wait for it.
        let c = Checkpoints::start(d.path(), Duration::from_secs(3600)).unwrap();
        assert_eq!(c.stop().unwrap().0.count, 0);
        // No interval: it syncs until stopped.
        let c = Checkpoints::start(d.path(), Duration::ZERO).unwrap();
        while c.times().count < 2 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let (times, dir) = c.stop().unwrap();
        assert!(times.count >= 2);
        syncfs(&dir).unwrap();
    }
}
