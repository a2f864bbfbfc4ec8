//! The load loops: N async clients (HTTP scenarios) or N OS threads (raw), each taking
//! numbered tickets until the time or count limit, recording every transaction.

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::http::Target;
use crate::payload::Payload;
use crate::procfs::{self, ProcSnapshot, ProcStats, Sampler};
use crate::progress::Progress;
use crate::recorder::{Recorder, TxOutcome};
use crate::report::{DiskStats, LoadgenStats};
use crate::spawn::Interrupt;

/// A phase gives up when its first this-many transactions all failed (unreachable server,
/// wrong password): the errors are counted and reported, and the run goes on.
pub const GIVE_UP_AFTER: u64 = 50;

/// Everything a phase needs from the run.
#[derive(Clone)]
pub struct Ctx {
    /// The server (absent for raw-only runs).
    pub target: Option<Arc<Target>>,
    /// The payload generator.
    pub payload: Payload,
    /// Object numbers, unique over the run (payload stamps).
    pub next_object: Arc<AtomicU64>,
    /// Ctrl-C.
    pub interrupt: Interrupt,
    /// Draw progress bars.
    pub bar: bool,
    /// The server's PID, for /proc sampling.
    pub server_pid: Option<u32>,
    /// The server's data directory, for disk usage.
    pub data_dir: Option<PathBuf>,
    /// Where raw baselines put their files (same file system as the data).
    pub raw_parent: PathBuf,
    /// Seed of the access order.
    pub seed: u64,
    /// The server did not even accept a connection before the run: skip the raw baselines of
    /// server scenarios (they would only delay the error report).
    pub server_unreachable: bool,
    /// Raw directories removed when the run ends.
    pub leftovers: crate::raw::Leftovers,
}

#[cfg(test)]
impl Ctx {
    /// A context without a server, raw files below `raw_parent`, no progress bars.
    pub(crate) fn for_tests(raw_parent: &std::path::Path) -> Ctx {
        Ctx {
            target: None,
            payload: crate::payload::Payload::new(1, 1),
            next_object: Arc::new(AtomicU64::new(0)),
            interrupt: crate::spawn::Interrupt::never(),
            bar: false,
            server_pid: None,
            data_dir: None,
            raw_parent: raw_parent.to_path_buf(),
            seed: 1,
            server_unreachable: false,
            leftovers: Default::default(),
        }
    }
}

/// Limits of one phase.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Concurrent clients or threads.
    pub clients: usize,
    /// No new transaction starts after this.
    pub duration: Option<Duration>,
    /// At most this many transactions.
    pub count: Option<u64>,
}

/// How a phase ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Stop {
    /// At its time or count limit.
    Done,
    /// Early, for the reason given.
    Aborted(String),
    /// By Ctrl-C.
    Interrupted,
}

/// Which recorder a transaction of [`drive_lanes`] is counted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// The phase's own transactions ([`Driven::rec`]), which the give-up rule watches.
    Main,
    /// Transactions mixed in (search: updates among queries), counted apart ([`Driven::side`]).
    Side,
}

/// A finished phase: its recorder and the time it took.
pub struct Driven {
    /// The counts.
    pub rec: Recorder,
    /// The counts of the [`Lane::Side`] transactions (empty unless [`drive_lanes`] had some).
    pub side: Recorder,
    /// From start to the last transaction's end.
    pub elapsed: Duration,
    /// How it ended.
    pub stop: Stop,
}

/// A well-mixed 64-bit hash (splitmix64), for the random access order.
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct Shared {
    rec: Arc<Mutex<Recorder>>,
    side: Mutex<Recorder>,
    tickets: AtomicU64,
    stop: AtomicBool,
    abort: Mutex<Option<String>>,
    deadline: Option<Instant>,
    count: Option<u64>,
}

impl Shared {
    fn new(limits: &Limits) -> Arc<Shared> {
        let start = Instant::now();
        Arc::new(Shared {
            rec: Arc::new(Mutex::new(Recorder::new(start))),
            side: Mutex::new(Recorder::new(start)),
            tickets: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            abort: Mutex::new(None),
            deadline: limits.duration.map(|d| start + d),
            count: limits.count,
        })
    }

    /// The next ticket, or `None` when the phase is over.
    fn ticket(&self, interrupted: &AtomicBool) -> Option<u64> {
        if self.stop.load(Ordering::Relaxed) || interrupted.load(Ordering::Relaxed) {
            return None;
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return None;
        }
        let t = self.tickets.fetch_add(1, Ordering::Relaxed);
        if self.count.is_some_and(|n| t >= n) {
            return None;
        }
        Some(t)
    }

    fn record(&self, t0: Instant, out: &TxOutcome) {
        self.record_in(Lane::Main, t0, out);
    }

    fn record_in(&self, lane: Lane, t0: Instant, out: &TxOutcome) {
        let now = Instant::now();
        if lane == Lane::Side {
            if let Ok(mut r) = self.side.lock() {
                r.record(now, now - t0, out);
            }
            return;
        }
        let Ok(mut r) = self.rec.lock() else { return };
        r.record(now, now - t0, out);
        let snap = r.snapshot(now);
        if snap.ok == 0 && snap.errors >= GIVE_UP_AFTER && !self.stop.swap(true, Ordering::SeqCst) {
            let s = r.summary(now - r.start());
            let codes: Vec<String> = s
                .status_codes
                .iter()
                .map(|(c, n)| format!("{c} ×{n}"))
                .collect();
            if let Ok(mut a) = self.abort.lock() {
                *a = Some(format!(
                    "gave up: the first {} transactions all failed ({})",
                    snap.errors,
                    codes.join(", ")
                ));
            }
        }
    }

    fn abort_now(&self, why: String) {
        if !self.stop.swap(true, Ordering::SeqCst) {
            if let Ok(mut a) = self.abort.lock() {
                *a = Some(why);
            }
        }
    }

    fn finish(&self, interrupted: bool, ended: Instant) -> Driven {
        let mut guard = self.rec.lock().unwrap_or_else(|e| e.into_inner());
        let start = guard.start();
        let rec = std::mem::replace(&mut *guard, Recorder::new(start));
        drop(guard);
        let side = self
            .side
            .lock()
            .map(|mut g| std::mem::replace(&mut *g, Recorder::new(start)))
            .unwrap_or_else(|_| Recorder::new(start));
        let abort = self.abort.lock().ok().and_then(|a| a.clone());
        let stop = if interrupted {
            Stop::Interrupted
        } else if let Some(a) = abort {
            Stop::Aborted(a)
        } else {
            Stop::Done
        };
        Driven {
            rec,
            side,
            elapsed: ended.saturating_duration_since(start),
            stop,
        }
    }
}

/// Runs `op(ticket)` from `limits.clients` async clients until a limit, Ctrl-C or the give-up
/// rule. In-flight transactions finish after the time limit; Ctrl-C cancels them.
pub async fn drive<F, Fut>(ctx: &Ctx, label: &str, limits: Limits, op: F) -> Driven
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = TxOutcome> + Send + 'static,
{
    drive_lanes(ctx, label, limits, move |t| {
        let fut = op(t);
        async move { (Lane::Main, fut.await) }
    })
    .await
}

/// [`drive`] with each transaction counted in the [`Lane`] `op` names: the side lane's
/// transactions take tickets and time like the others but have their own recorder, so that
/// operations mixed into a phase do not blur its latencies.
pub async fn drive_lanes<F, Fut>(ctx: &Ctx, label: &str, limits: Limits, op: F) -> Driven
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = (Lane, TxOutcome)> + Send + 'static,
{
    let shared = Shared::new(&limits);
    let op = Arc::new(op);
    let interrupted = ctx.interrupt.flag();
    let mut set = JoinSet::new();
    for _ in 0..limits.clients.max(1) {
        let shared = shared.clone();
        let op = op.clone();
        let interrupted = interrupted.clone();
        set.spawn(async move {
            while let Some(t) = shared.ticket(&interrupted) {
                let t0 = Instant::now();
                let (lane, out) = op(t).await;
                shared.record_in(lane, t0, &out);
                if out.codes.iter().any(|c| c.is_transport()) {
                    // Do not spin on a dead server.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        });
    }
    let progress = Progress::start(
        ctx.bar,
        label,
        limits.duration,
        limits.count,
        shared.rec.clone(),
    );
    let mut was_interrupted = false;
    loop {
        tokio::select! {
            r = set.join_next() => match r {
                None => break,
                Some(Err(e)) if e.is_panic() => {
                    shared.abort_now(format!("internal error: a client task panicked: {e}"));
                }
                Some(_) => {}
            },
            _ = ctx.interrupt.wait(), if !was_interrupted => {
                was_interrupted = true;
                shared.stop.store(true, Ordering::SeqCst);
                set.abort_all();
            }
        }
    }
    let ended = Instant::now();
    progress.finish().await;
    shared.finish(was_interrupted, ended)
}

/// What one raw step did: a transaction, or a reason to stop every thread.
pub type RawStep = Result<TxOutcome, String>;

/// Runs `op(ticket, thread)` from `limits.clients` OS threads (blocking file I/O), with the
/// same limits, recording and progress display as [`drive`].
pub async fn drive_threads<F>(ctx: &Ctx, label: &str, limits: Limits, op: F) -> Driven
where
    F: Fn(u64, usize) -> RawStep + Send + Sync + 'static,
{
    let shared = Shared::new(&limits);
    let op = Arc::new(op);
    let interrupted = ctx.interrupt.flag();
    let mut threads = Vec::new();
    for i in 0..limits.clients.max(1) {
        let worker = shared.clone();
        let op = op.clone();
        let interrupted = interrupted.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("raw-{i}"))
            .spawn(move || {
                while let Some(t) = worker.ticket(&interrupted) {
                    let t0 = Instant::now();
                    match op(t, i) {
                        Ok(out) => worker.record(t0, &out),
                        Err(why) => {
                            worker.abort_now(why);
                            break;
                        }
                    }
                }
            });
        match spawned {
            Ok(h) => threads.push(h),
            Err(e) => {
                shared.abort_now(format!("cannot start a thread: {e}"));
                break;
            }
        }
    }
    let progress = Progress::start(
        ctx.bar,
        label,
        limits.duration,
        limits.count,
        shared.rec.clone(),
    );
    let joined = tokio::task::spawn_blocking(move || {
        // Join every thread, even after one panicked.
        let mut all_ok = true;
        for h in threads {
            all_ok &= h.join().is_ok();
        }
        all_ok
    })
    .await
    .unwrap_or(false);
    if !joined {
        shared.abort_now("internal error: a raw thread panicked".into());
    }
    let ended = Instant::now();
    progress.finish().await;
    shared.finish(ctx.interrupt.is_set(), ended)
}

/// How long measuring a directory's disk use may walk it before the file system's own
/// counters are used instead.
const WALK_BUDGET: Duration = Duration::from_secs(20);

/// Disk usage of a directory before a phase, to compute its growth after: by walking the
/// directory, or — when that takes longer than [`WALK_BUDGET`] (millions of files) — from the
/// file system's used bytes and inodes, which count everything written to it meanwhile.
pub struct DiskStatsProbe {
    dir: PathBuf,
    before: Option<u64>,
    fs_before: Option<(u64, u64)>,
}

impl DiskStatsProbe {
    /// Measures `dir` now (blocking).
    pub fn start(dir: PathBuf) -> DiskStatsProbe {
        let fs_before = procfs::fs_used(&dir);
        let before = procfs::disk_usage_within(&dir, Some(WALK_BUDGET)).map(|(b, _)| b);
        DiskStatsProbe {
            dir,
            before,
            fs_before,
        }
    }

    /// Measures again; the growth divided by `objects` is the bytes on disk per object.
    pub fn finish(self, objects: u64) -> DiskStats {
        let fs_after = procfs::fs_used(&self.dir);
        let walked = self.before.and_then(|before| {
            Some((
                before,
                procfs::disk_usage_within(&self.dir, Some(WALK_BUDGET))?,
            ))
        });
        let (before, after, files, method) = match (walked, self.fs_before, fs_after) {
            (Some((before, (after, files))), _, _) => (before, after, files, "walk"),
            (None, Some((b, _)), Some((a, inodes))) => (b, a, inodes, "file system"),
            _ => (0, 0, 0, "none"),
        };
        DiskStats {
            dir: self.dir.display().to_string(),
            bytes_before: before,
            bytes_after: after,
            files_after: files,
            method: method.to_string(),
            // A shrinking directory (a server trimming preallocated files) says nothing about
            // the objects' size.
            bytes_per_object: (objects > 0 && after > before)
                .then(|| (after - before) as f64 / objects as f64),
        }
    }
}

/// Measures around a phase: the server's /proc samples, this process's CPU, disk growth.
pub struct Probe {
    sampler: Option<Sampler>,
    self_before: Option<ProcSnapshot>,
    disk: Option<DiskStatsProbe>,
}

impl Probe {
    /// Starts sampling `pid` (`Some(None)` = this process, `None` = nothing) and, when `dir`
    /// is given, measures its disk usage first.
    pub async fn start(pid: Option<Option<u32>>, dir: Option<PathBuf>) -> Probe {
        let disk = match dir {
            Some(d) => tokio::task::spawn_blocking(move || DiskStatsProbe::start(d))
                .await
                .ok(),
            None => None,
        };
        Probe {
            sampler: pid.map(|p| Sampler::start(p, Instant::now())),
            self_before: procfs::snapshot(None).ok(),
            disk,
        }
    }

    /// Stops: server stats, load generator stats over `transactions`, disk growth divided by
    /// `objects`.
    pub async fn finish(
        self,
        transactions: u64,
        objects: u64,
    ) -> (Option<ProcStats>, LoadgenStats, Option<DiskStats>) {
        let mut server = match self.sampler {
            Some(s) => s.stop().await,
            None => None,
        };
        if let Some(s) = server.as_mut().filter(|_| transactions > 0) {
            s.cpu_ms_per_tx = Some(s.cpu_s * 1000.0 / transactions as f64);
        }
        let loadgen = match (self.self_before, procfs::snapshot(None).ok()) {
            (Some(a), Some(b)) => {
                let cpu_pct = procfs::cpu_percent(&a, &b);
                let cpu_s =
                    b.cpu_ticks.saturating_sub(a.cpu_ticks) as f64 / procfs::clock_ticks() as f64;
                let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
                LoadgenStats {
                    cpu_pct,
                    cpu_ms_per_tx: if transactions > 0 {
                        cpu_s * 1000.0 / transactions as f64
                    } else {
                        0.0
                    },
                    peak_rss_mb: b.hwm_kb.map(|k| k as f64 / 1024.0),
                    warning: (cpu_pct > 80.0 * cpus as f64).then(|| {
                        format!(
                            "the load generator used {cpu_pct:.0} % CPU of {cpus} cores: it may \
                             have been the bottleneck"
                        )
                    }),
                }
            }
            _ => LoadgenStats::default(),
        };
        let disk = match self.disk {
            Some(d) => tokio::task::spawn_blocking(move || d.finish(objects))
                .await
                .ok(),
            None => None,
        };
        (server, loadgen, disk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::Code;

    fn ctx() -> Ctx {
        Ctx::for_tests(&std::env::temp_dir())
    }

    fn ok() -> TxOutcome {
        TxOutcome {
            codes: vec![Code::Status(200)],
            ok: true,
            bytes: 10,
            error: None,
        }
    }

    #[tokio::test]
    async fn count_limit_is_exact() {
        let calls = Arc::new(AtomicU64::new(0));
        let c = calls.clone();
        let d = drive(
            &ctx(),
            "t",
            Limits {
                clients: 7,
                duration: None,
                count: Some(100),
            },
            move |_| {
                c.fetch_add(1, Ordering::SeqCst);
                async { ok() }
            },
        )
        .await;
        assert_eq!(calls.load(Ordering::SeqCst), 100);
        let s = d.rec.summary(d.elapsed);
        assert_eq!(s.transactions, 100);
        assert_eq!(s.ok, 100);
        assert_eq!(s.bytes, 1000);
        assert_eq!(d.stop, Stop::Done);
    }

    #[tokio::test]
    async fn duration_limit_stops() {
        let d = drive(
            &ctx(),
            "t",
            Limits {
                clients: 2,
                duration: Some(Duration::from_millis(300)),
                count: None,
            },
            |_| async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                ok()
            },
        )
        .await;
        assert!(d.elapsed >= Duration::from_millis(300));
        assert!(d.elapsed < Duration::from_secs(2));
        let s = d.rec.summary(d.elapsed);
        assert!(s.ok > 10 && s.ok < 100, "{}", s.ok);
    }

    #[tokio::test]
    async fn all_failing_gives_up() {
        let d = drive(
            &ctx(),
            "t",
            Limits {
                clients: 3,
                duration: Some(Duration::from_secs(60)),
                count: None,
            },
            |_| async { TxOutcome::failed(Code::Status(401), "GET: 401".into()) },
        )
        .await;
        let s = d.rec.summary(d.elapsed);
        assert!(
            matches!(d.stop, Stop::Aborted(ref m) if m.contains("401")),
            "{:?}",
            d.stop
        );
        assert!(s.errors >= GIVE_UP_AFTER && s.errors < GIVE_UP_AFTER + 3);
        assert_eq!(s.status_codes["401"], s.errors);
        assert!(d.elapsed < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn threads_count_and_stop() {
        let d = drive_threads(
            &ctx(),
            "t",
            Limits {
                clients: 4,
                duration: None,
                count: Some(37),
            },
            |t, _| {
                if t == 1000 {
                    Err("never".into())
                } else {
                    Ok(ok())
                }
            },
        )
        .await;
        assert_eq!(d.rec.summary(d.elapsed).ok, 37);
        let d = drive_threads(
            &ctx(),
            "t",
            Limits {
                clients: 4,
                duration: None,
                count: None,
            },
            |t, _| {
                if t >= 20 {
                    Err("budget".into())
                } else {
                    Ok(ok())
                }
            },
        )
        .await;
        assert_eq!(d.stop, Stop::Aborted("budget".into()));
        let s = d.rec.summary(d.elapsed);
        assert!(s.ok >= 20 && s.ok < 24, "{}", s.ok);
    }

    #[tokio::test]
    async fn side_lane_is_counted_apart() {
        let d = drive_lanes(
            &ctx(),
            "t",
            Limits {
                clients: 3,
                duration: None,
                count: Some(100),
            },
            |t| async move {
                if t % 10 == 0 {
                    (Lane::Side, TxOutcome::failed(Code::Status(500), "x".into()))
                } else {
                    (Lane::Main, ok())
                }
            },
        )
        .await;
        let main = d.rec.summary(d.elapsed);
        let side = d.side.summary(d.elapsed);
        assert_eq!((main.ok, main.errors), (90, 0));
        assert_eq!((side.ok, side.errors), (0, 10));
        assert_eq!(d.stop, Stop::Done);
    }

    #[test]
    fn mix_spreads() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..1000 {
            seen.insert(mix(i) % 100);
        }
        assert!(seen.len() > 90);
    }
}
