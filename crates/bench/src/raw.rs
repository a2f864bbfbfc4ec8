//! The physical limit: the studies' "simple file writing program". N OS threads each write
//! one new file per object, of the scenario's size, into a fresh directory on the file system
//! of the server's data — once with `fsync` of every file, once without — and, for access
//! scenarios, read such files back in random order. Its rows sit next to the server's in the
//! report, measured in the same run.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::args::{format_size, RawPlan, Scenario};
use crate::driver::{drive_threads, mix, Ctx, Driven, Limits, Probe, Stop};
use crate::payload::Chunks;
use crate::procfs;
use crate::recorder::{Code, TxOutcome};
use crate::report::{Kind, PhaseConfig, ScenarioReport, Status};

/// The mode of a raw row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Write, fsync, close.
    Fsync,
    /// Write, close.
    NoFsync,
    /// Read a file back.
    Read,
}

impl Mode {
    fn tag(self) -> &'static str {
        match self {
            Mode::Fsync => "fsync",
            Mode::NoFsync => "nofsync",
            Mode::Read => "read",
        }
    }
}

/// The row name: `raw-fsync-20KiB-16t`.
pub fn row_name(mode: Mode, size: u64, threads: usize) -> String {
    format!(
        "raw-{}-{}-{}t",
        mode.tag(),
        format_size(size).replace(' ', ""),
        threads
    )
}

/// Writes one file made of `chunks`, with fsync when asked.
pub fn write_file(path: &Path, chunks: Chunks, fsync: bool) -> std::io::Result<()> {
    let mut f = std::fs::File::create(path)?;
    for c in chunks {
        f.write_all(&c)?;
    }
    if fsync {
        f.sync_all()?;
    }
    Ok(())
}

/// Reads a whole file, returning its length.
pub fn read_file(path: &Path, buf: &mut [u8]) -> std::io::Result<u64> {
    let mut f = std::fs::File::open(path)?;
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

fn fresh_dir(parent: &Path) -> anyhow::Result<tempfile::TempDir> {
    std::fs::create_dir_all(parent)?;
    Ok(tempfile::Builder::new()
        .prefix(".arca-bench-raw-")
        .tempdir_in(parent)?)
}

/// Writes files with `threads` threads into `dir/t{i}/{ticket}` within `limits`; stops every
/// thread once the bytes written would exceed `budget`.
async fn write_files(
    ctx: &Ctx,
    label: &str,
    dir: &Path,
    size: u64,
    fsync: bool,
    limits: Limits,
) -> anyhow::Result<Driven> {
    for i in 0..limits.clients.max(1) {
        std::fs::create_dir_all(dir.join(format!("t{i}")))?;
    }
    // Never fill the disk: half of the free space at most.
    let budget = procfs::free_space(dir).map_or(u64::MAX, |f| f / 2);
    let written = Arc::new(AtomicU64::new(0));
    let payload = ctx.payload.clone();
    let next = ctx.next_object.clone();
    let dir = dir.to_path_buf();
    Ok(drive_threads(ctx, label, limits, move |ticket, thread| {
        let total = written.fetch_add(size, Ordering::Relaxed) + size;
        if total > budget {
            return Err(format!(
                "stopped at the disk budget (half the free space, {})",
                crate::report::bytes(budget as f64)
            ));
        }
        let path = dir.join(format!("t{thread}")).join(ticket.to_string());
        let object = next.fetch_add(1, Ordering::Relaxed);
        Ok(
            match write_file(&path, payload.chunks(object, size), fsync) {
                Ok(()) => TxOutcome {
                    codes: vec![Code::FileOk],
                    ok: true,
                    bytes: size,
                    error: None,
                },
                Err(e) => TxOutcome::failed(Code::Fs, format!("writing {}: {e}", path.display())),
            },
        )
    })
    .await)
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
            fsync: (mode != Mode::Read).then_some(mode == Mode::Fsync),
            interval_s: None,
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

/// One raw write row (fsync or not): writes, measures, disposes of the files.
pub async fn write_row(
    ctx: &Ctx,
    scenario: Scenario,
    plan: &RawPlan,
    fsync: bool,
) -> anyhow::Result<ScenarioReport> {
    let mode = if fsync { Mode::Fsync } else { Mode::NoFsync };
    let mut row = base_row(scenario, mode, plan);
    let dir = fresh_dir(&ctx.raw_parent)?;
    eprintln!("==> {}: {}", row.name, describe(plan));
    let probe = Probe::start(Some(None), Some(dir.path().to_path_buf())).await;
    let limits = Limits {
        clients: plan.key.threads,
        duration: plan.duration,
        count: plan.count,
    };
    let driven = write_files(ctx, &row.name, dir.path(), plan.key.size, fsync, limits).await;
    let driven = match driven {
        Ok(d) => d,
        Err(e) => {
            dispose(ctx, dir, plan.key.size).await;
            return Err(e);
        }
    };
    fill_row(&mut row, &driven);
    row.objects_created = row.summary.ok;
    let (server, _, disk) = probe.finish(row.summary.transactions, row.summary.ok).await;
    row.server = server.map(|mut s| {
        s.pid = Some(std::process::id());
        s
    });
    row.disk = disk;
    dispose(ctx, dir, plan.key.size).await;
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
    let setup = write_files(
        ctx,
        &format!("{} (setup)", row.name),
        dir.path(),
        plan.key.size,
        false,
        Limits {
            clients: threads,
            duration: None,
            count: Some(plan.objects.max(1)),
        },
    )
    .await;
    let setup = match setup {
        Ok(d) => d,
        Err(e) => {
            dispose(ctx, dir, plan.key.size).await;
            return Err(e);
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
    let mut s = format!(
        "{} threads, {} per file",
        plan.key.threads,
        format_size(plan.key.size)
    );
    if let Some(d) = plan.duration {
        s.push_str(&format!(", {} s", d.as_secs_f64()));
    }
    if let Some(n) = plan.count {
        s.push_str(&format!(", at most {n} files"));
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

    fn plan(read: bool, count: u64) -> RawPlan {
        RawPlan {
            key: RawKey {
                read,
                size: 3000,
                threads: 3,
            },
            duration: Some(std::time::Duration::from_secs(30)),
            count: Some(count),
            objects: 4,
        }
    }

    #[test]
    fn names() {
        assert_eq!(row_name(Mode::Fsync, 20 << 10, 16), "raw-fsync-20KiB-16t");
        assert_eq!(row_name(Mode::NoFsync, 0, 1), "raw-nofsync-0B-1t");
        assert_eq!(row_name(Mode::Read, 15 << 20, 2), "raw-read-15MiB-2t");
    }

    #[tokio::test]
    async fn writes_counts_and_cleans_up() {
        let parent = tempfile::tempdir().unwrap();
        let c = ctx(parent.path());
        for fsync in [true, false] {
            let row = write_row(&c, Scenario::Raw, &plan(false, 10), fsync)
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
            assert_eq!(row.config.fsync, Some(fsync));
        }
        // Small files stay until the run ends, then nothing is left behind.
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 2);
        c.leftovers.remove_all().await;
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn large_files_are_removed_right_after_their_row() {
        let parent = tempfile::tempdir().unwrap();
        let c = ctx(parent.path());
        let mut p = plan(false, 2);
        p.key.size = KEEP_BELOW;
        let row = write_row(&c, Scenario::Raw, &p, false).await.unwrap();
        assert_eq!(row.summary.ok, 2);
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn reads_back() {
        let parent = tempfile::tempdir().unwrap();
        let c = ctx(parent.path());
        let row = read_row(&c, Scenario::AccessSmall, &plan(true, 25))
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
}
