//! What the machine says: CPU, memory and I/O of a process from `/proc`, disk usage of a
//! directory, free space, and a description of the machine for the report.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::recorder::MB;

/// Clock ticks per second of the CPU times in `/proc`.
pub fn clock_ticks() -> u64 {
    procfs::ticks_per_second()
}

/// `(VmRSS, VmHWM)` in KiB of process `pid`; `None` when it cannot be read (the process
/// is gone).
pub fn memory_kb(pid: u32) -> Option<(Option<u64>, Option<u64>)> {
    let status = procfs::process::Process::new(i32::try_from(pid).ok()?)
        .and_then(|p| p.status())
        .ok()?;
    Some((status.vmrss, status.vmhwm))
}

/// One reading of a process.
#[derive(Clone, Copy, Debug)]
pub struct ProcSnapshot {
    /// When it was taken.
    pub at: Instant,
    /// utime + stime, clock ticks.
    pub cpu_ticks: u64,
    /// Resident set size, KiB.
    pub rss_kb: Option<u64>,
    /// Peak resident set size, KiB.
    pub hwm_kb: Option<u64>,
    /// `(read_bytes, write_bytes)` (absent when `/proc/PID/io` is not readable).
    pub io: Option<(u64, u64)>,
}

/// Reads process `pid`, or this process when `None`. Fails when the process is gone.
pub fn snapshot(pid: Option<u32>) -> std::io::Result<ProcSnapshot> {
    let process = match pid {
        Some(p) => {
            let p = i32::try_from(p).map_err(std::io::Error::other)?;
            procfs::process::Process::new(p)
        }
        None => procfs::process::Process::myself(),
    }
    .map_err(std::io::Error::other)?;
    let at = Instant::now();
    let stat = process.stat().map_err(std::io::Error::other)?;
    let (rss_kb, hwm_kb) = process
        .status()
        .map_or((None, None), |s| (s.vmrss, s.vmhwm));
    let io = process.io().ok().map(|io| (io.read_bytes, io.write_bytes));
    Ok(ProcSnapshot {
        at,
        cpu_ticks: stat.utime + stat.stime,
        rss_kb,
        hwm_kb,
        io,
    })
}

/// CPU use between two snapshots, percent of one core.
pub fn cpu_percent(a: &ProcSnapshot, b: &ProcSnapshot) -> f64 {
    let secs = b.at.saturating_duration_since(a.at).as_secs_f64();
    if secs <= 0.0 {
        return 0.0;
    }
    let ticks = b.cpu_ticks.saturating_sub(a.cpu_ticks) as f64;
    // Over short intervals the tick granularity (10 ms) inflates the figure: never report more
    // than the machine has.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    (ticks / clock_ticks() as f64 / secs * 100.0).min(cpus * 100.0)
}

/// One per-second sample of the server (or of this process, for raw rows).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the phase started (end of the sampled interval).
    pub t: f64,
    /// CPU use over the interval, percent of one core (can exceed 100).
    pub cpu_pct: f64,
    /// Resident set size, MB.
    pub rss_mb: Option<f64>,
    /// Storage reads over the interval, MB/s.
    pub read_mb_s: Option<f64>,
    /// Storage writes over the interval, MB/s.
    pub write_mb_s: Option<f64>,
}

/// What the samples of one phase add up to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcStats {
    /// The PID sampled.
    pub pid: Option<u32>,
    /// Highest per-second CPU use, percent of one core.
    pub max_cpu_pct: f64,
    /// Mean CPU use over the phase, percent of one core.
    pub mean_cpu_pct: f64,
    /// Highest sampled resident set size, MB.
    pub peak_rss_mb: Option<f64>,
    /// The kernel's peak RSS (VmHWM) of the process's whole life, MB.
    pub hwm_mb: Option<f64>,
    /// Highest per-second storage I/O (read + write), MB/s.
    pub max_io_mb_s: Option<f64>,
    /// Bytes the process caused to be read from storage during the phase.
    pub read_bytes: Option<u64>,
    /// Bytes the process caused to be written to storage during the phase.
    pub write_bytes: Option<u64>,
    /// CPU seconds the process used over the phase.
    #[serde(default)]
    pub cpu_s: f64,
    /// Its CPU time per transaction of the phase, ms (what one request costs the server).
    #[serde(default)]
    pub cpu_ms_per_tx: Option<f64>,
    /// The per-second samples.
    pub samples: Vec<Sample>,
}

fn sample(prev: &ProcSnapshot, cur: &ProcSnapshot, start: Instant) -> Sample {
    let secs = cur.at.saturating_duration_since(prev.at).as_secs_f64();
    let rate = |a: u64, b: u64| {
        if secs > 0.0 {
            b.saturating_sub(a) as f64 / MB / secs
        } else {
            0.0
        }
    };
    let io = match (prev.io, cur.io) {
        (Some(a), Some(b)) => Some((rate(a.0, b.0), rate(a.1, b.1))),
        _ => None,
    };
    Sample {
        t: cur.at.saturating_duration_since(start).as_secs_f64(),
        cpu_pct: cpu_percent(prev, cur),
        rss_mb: cur.rss_kb.map(|k| k as f64 / 1024.0),
        read_mb_s: io.map(|x| x.0),
        write_mb_s: io.map(|x| x.1),
    }
}

/// Sums up the snapshots `first..last` and the samples between them.
pub fn summarize(
    pid: Option<u32>,
    first: &ProcSnapshot,
    last: &ProcSnapshot,
    samples: Vec<Sample>,
) -> ProcStats {
    let max_cpu_pct = samples.iter().map(|s| s.cpu_pct).fold(0.0, f64::max);
    let peak_rss_mb = samples
        .iter()
        .filter_map(|s| s.rss_mb)
        .reduce(f64::max)
        .or(last.rss_kb.map(|k| k as f64 / 1024.0));
    let max_io_mb_s = samples
        .iter()
        .filter_map(|s| Some(s.read_mb_s? + s.write_mb_s?))
        .reduce(f64::max);
    let io = match (first.io, last.io) {
        (Some(a), Some(b)) => Some((b.0.saturating_sub(a.0), b.1.saturating_sub(a.1))),
        _ => None,
    };
    ProcStats {
        pid,
        max_cpu_pct,
        mean_cpu_pct: cpu_percent(first, last),
        peak_rss_mb,
        hwm_mb: last.hwm_kb.map(|k| k as f64 / 1024.0),
        max_io_mb_s,
        read_bytes: io.map(|x| x.0),
        write_bytes: io.map(|x| x.1),
        cpu_s: last.cpu_ticks.saturating_sub(first.cpu_ticks) as f64 / clock_ticks() as f64,
        cpu_ms_per_tx: None,
        samples,
    }
}

/// Samples a process every second in the background until [`Sampler::stop`].
pub struct Sampler {
    pid: Option<u32>,
    first: Option<ProcSnapshot>,
    stop: watch::Sender<bool>,
    task: JoinHandle<(Vec<Sample>, Option<ProcSnapshot>)>,
}

impl Sampler {
    /// Starts sampling `pid` (this process when `None`); `start` is the phase's clock.
    pub fn start(pid: Option<u32>, start: Instant) -> Sampler {
        let first = snapshot(pid).ok();
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut samples = Vec::new();
            let Some(mut prev) = first else {
                return (samples, None);
            };
            let mut tick = tokio::time::interval_at(
                tokio::time::Instant::now() + Duration::from_secs(1),
                Duration::from_secs(1),
            );
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stopped.changed() => break,
                }
                match snapshot(pid) {
                    Ok(cur) => {
                        samples.push(sample(&prev, &cur, start));
                        prev = cur;
                    }
                    Err(_) => return (samples, Some(prev)),
                }
            }
            // A last, partial interval, so that short phases get a sample too.
            match snapshot(pid) {
                Ok(cur) => {
                    if cur.at.saturating_duration_since(prev.at) >= Duration::from_millis(200)
                        || samples.is_empty()
                    {
                        samples.push(sample(&prev, &cur, start));
                    }
                    (samples, Some(cur))
                }
                Err(_) => (samples, Some(prev)),
            }
        });
        Sampler {
            pid,
            first,
            stop,
            task,
        }
    }

    /// Stops sampling and sums up; `None` when the process could not be read at all.
    pub async fn stop(self) -> Option<ProcStats> {
        let _ = self.stop.send(true);
        let (samples, last) = self.task.await.ok()?;
        Some(summarize(self.pid, &self.first?, &last?, samples))
    }
}

/// Bytes allocated on disk (st_blocks × 512, once per inode: a file's hard links share its
/// blocks) and number of files (names) under `path`; symbolic links are not followed,
/// unreadable entries are skipped.
pub fn disk_usage(path: &Path) -> (u64, u64) {
    disk_usage_within(path, None).unwrap_or_default()
}

/// [`disk_usage`], given up (`None`) after `budget`: a walk of millions of entries with a
/// cold cache takes many minutes. After [`crate::cleanup::PROGRESS_EVERY`] it says how far
/// it got, every as often.
pub fn disk_usage_within(path: &Path, budget: Option<std::time::Duration>) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    let seen = AtomicU64::new(0);
    let start = std::time::Instant::now();
    let walk = || {
        let mut bytes = 0;
        let mut files = 0;
        let mut linked = std::collections::HashSet::new();
        let mut stack = vec![path.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if budget.is_some_and(|b| start.elapsed() >= b) {
                    return None;
                }
                seen.fetch_add(1, Ordering::Relaxed);
                let Ok(meta) = entry.metadata() else {
                    continue;
                };
                if meta.nlink() < 2 || meta.is_dir() || linked.insert((meta.dev(), meta.ino())) {
                    bytes += meta.blocks() * 512;
                }
                if meta.is_dir() {
                    stack.push(entry.path());
                } else {
                    files += 1;
                }
            }
        }
        Some((bytes, files))
    };
    crate::cleanup::with_progress(walk, |elapsed| {
        eprintln!(
            "    measuring disk use of {}: {} entries in {:.0} s",
            path.display(),
            seen.load(Ordering::Relaxed),
            elapsed.as_secs_f64()
        )
    })
}

/// What `statvfs` says of a file system, in bytes and inodes.
struct FsCounts {
    used_bytes: u64,
    free_bytes: u64,
    used_inodes: u64,
    free_inodes: u64,
}

/// The `statvfs` of the file system holding `path`.
fn statvfs(path: &Path) -> Option<FsCounts> {
    let s = rustix::fs::statvfs(path).ok()?;
    Some(FsCounts {
        used_bytes: s.f_blocks.saturating_sub(s.f_bfree) * s.f_frsize,
        free_bytes: s.f_bavail * s.f_frsize,
        used_inodes: s.f_files.saturating_sub(s.f_ffree),
        free_inodes: s.f_favail,
    })
}

/// Bytes and inodes in use on the file system holding `path` (`statvfs`).
pub fn fs_used(path: &Path) -> Option<(u64, u64)> {
    statvfs(path).map(|s| (s.used_bytes, s.used_inodes))
}

/// Bytes available to this user on the file system holding `path`.
pub fn free_space(path: &Path) -> Option<u64> {
    statvfs(path).map(|s| s.free_bytes)
}

/// Inodes available to this user on the file system holding `path`.
pub fn free_inodes(path: &Path) -> Option<u64> {
    statvfs(path).map(|s| s.free_inodes)
}

/// Flushes every file system's dirty pages (between phases, so one phase's write-back does not
/// land in the next one's figures).
pub fn sync_all() {
    rustix::fs::sync();
}

/// The machine a run happened on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Host name.
    pub hostname: String,
    /// CPU model.
    pub cpu_model: String,
    /// CPUs available to this process.
    pub cpus: usize,
    /// Memory, GB (2^30 bytes).
    pub memory_gb: f64,
    /// Kernel release.
    pub kernel: String,
    /// File system type and device of the directory holding the data (and raw files).
    pub data_fs: Option<String>,
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Describes this machine; `data` is the directory whose file system is named.
pub fn machine(data: Option<&Path>) -> Machine {
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_string())
        })
        .unwrap_or_default();
    let memory_gb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| (kb / (1024.0 * 1024.0) * 10.0).round() / 10.0);
    Machine {
        hostname: read_trim("/proc/sys/kernel/hostname"),
        cpu_model,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_gb,
        kernel: read_trim("/proc/sys/kernel/osrelease"),
        data_fs: data.and_then(filesystem_of),
    }
}

/// `"ext4 on /dev/vda (mounted at /)"` for the mount holding `path`.
pub fn filesystem_of(path: &Path) -> Option<String> {
    let path = std::fs::canonicalize(path).ok()?;
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let dev = f.next()?;
            let at = f.next()?.replace("\\040", " ");
            let fs = f.next()?;
            path.starts_with(&at)
                .then(|| (at, dev.to_string(), fs.to_string()))
        })
        .max_by_key(|(at, _, _)| at.len())
        .map(|(at, dev, fs)| format!("{fs} on {dev} (mounted at {at})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let a = snapshot(None).unwrap();
        assert!(a.rss_kb.unwrap() > 0);
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = snapshot(None).unwrap();
        assert!(b.cpu_ticks >= a.cpu_ticks);
        let s = sample(&a, &b, a.at);
        assert!(s.cpu_pct >= 0.0);
        let st = summarize(None, &a, &b, vec![s]);
        assert!(st.peak_rss_mb.unwrap() > 0.0);
        assert!(snapshot(Some(u32::MAX - 1)).is_err());
        let (rss, hwm) = memory_kb(std::process::id()).unwrap();
        assert!(rss.unwrap() > 0 && hwm.unwrap() >= rss.unwrap());
        assert!(memory_kb(u32::MAX - 1).is_none());
    }

    #[tokio::test]
    async fn sampler_returns_at_least_one_sample() {
        let s = Sampler::start(None, Instant::now());
        tokio::time::sleep(Duration::from_millis(250)).await;
        let st = s.stop().await.unwrap();
        assert_eq!(st.samples.len(), 1);
    }

    #[test]
    fn disk_usage_counts_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("a")).unwrap();
        std::fs::write(d.path().join("a/x"), vec![1u8; 10_000]).unwrap();
        std::fs::write(d.path().join("y"), b"hi").unwrap();
        let (bytes, files) = disk_usage(d.path());
        assert_eq!(files, 2);
        assert!(bytes >= 10_000, "{bytes}");
        assert!(free_space(d.path()).unwrap() > 0);
        assert_eq!(
            disk_usage_within(d.path(), Some(std::time::Duration::from_secs(60))),
            Some((bytes, files)),
            "a walk within its budget gives the same figures"
        );
        let (used, inodes) = fs_used(d.path()).unwrap();
        assert!(
            used >= bytes && inodes >= 3,
            "{used} bytes, {inodes} inodes"
        );
        assert!(filesystem_of(d.path()).is_some());
        let m = machine(Some(d.path()));
        assert!(m.cpus >= 1);
        // A hard link is one more name, not more blocks.
        std::fs::hard_link(d.path().join("a/x"), d.path().join("z")).unwrap();
        assert_eq!(disk_usage(d.path()), (bytes, 3));
        assert!(free_inodes(d.path()).unwrap() > 0);
    }
}
