//! The read rows: the baseline (the root's content files read and hashed by the simplest
//! program), `arca fixity`, rocfl and ocfl-py over the same root, cold and warm.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::Context as _;
use sha2::{Digest as _, Sha512};

use super::root::ocfl_root;
use super::{add_note, audit_row, mb_per_s, AuditDetail, Plan, ReadRun};
use crate::args::{AuditStep, CacheMode};
use crate::driver::Probe;
use crate::report::{ScenarioReport, Status};
use crate::spawn::Interrupt;

/// The content files of a root, as the baseline finds them.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    /// Object roots found (directories holding a `0=ocfl_object_*` file).
    pub objects: u64,
    /// Their directories.
    pub object_dirs: Vec<PathBuf>,
    /// Every regular file below a `content` directory of an object.
    pub files: Vec<PathBuf>,
    /// Their bytes.
    pub bytes: u64,
}

/// Walks `root` for objects and their content files.
pub fn list(root: &Path) -> std::io::Result<Listing> {
    let mut out = Listing::default();
    walk(root, &mut out)?;
    Ok(out)
}

fn walk(dir: &Path, out: &mut Listing) -> std::io::Result<()> {
    let entries = std::fs::read_dir(dir)?.collect::<Result<Vec<_>, _>>()?;
    let is_object = entries.iter().any(|e| {
        e.file_name()
            .to_str()
            .is_some_and(|n| n.starts_with("0=ocfl_object"))
    });
    if is_object {
        out.objects += 1;
        out.object_dirs.push(dir.to_path_buf());
    }
    for e in entries {
        if e.file_type()?.is_dir() {
            if is_object {
                content(&e.path(), e.file_name() == "content", out)?;
            } else {
                walk(&e.path(), out)?;
            }
        }
    }
    Ok(())
}

fn content(dir: &Path, inside: bool, out: &mut Listing) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let kind = e.file_type()?;
        if kind.is_dir() {
            content(&e.path(), inside || e.file_name() == "content", out)?;
        } else if kind.is_file() && inside {
            out.bytes += e.metadata()?.len();
            out.files.push(e.path());
        }
    }
    Ok(())
}

/// What hashing a list of files did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hashed {
    /// Files read whole.
    pub files: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Files that could not be read.
    pub errors: u64,
    /// The first of those, in words.
    pub first_error: Option<String>,
}

/// Reads every file of `files` whole and hashes it with sha512, `threads` threads taking the
/// next file from one shared index, 1 MiB reads; stops early when `stop` is set.
pub fn hash_files(files: &[PathBuf], threads: usize, stop: &AtomicBool) -> Hashed {
    let next = AtomicUsize::new(0);
    let done = AtomicU64::new(0);
    let bytes = AtomicU64::new(0);
    let errors = AtomicU64::new(0);
    let first_error = std::sync::Mutex::new(None::<String>);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut buf = vec![0u8; 1 << 20];
                loop {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = files.get(i) else { return };
                    match hash_file(path, &mut buf) {
                        Ok((n, digest)) => {
                            std::hint::black_box(digest);
                            done.fetch_add(1, Ordering::Relaxed);
                            bytes.fetch_add(n, Ordering::Relaxed);
                        }
                        Err(e) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                            if let Ok(mut f) = first_error.lock() {
                                f.get_or_insert_with(|| format!("{}: {e}", path.display()));
                            }
                        }
                    }
                }
            });
        }
    });
    Hashed {
        files: done.into_inner(),
        bytes: bytes.into_inner(),
        errors: errors.into_inner(),
        first_error: first_error.into_inner().ok().flatten(),
    }
}

fn hash_file(path: &Path, buf: &mut [u8]) -> std::io::Result<(u64, Vec<u8>)> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha512::new();
    let mut n = 0u64;
    loop {
        match f.read(buf) {
            Ok(0) => break,
            Ok(k) => {
                h.update(&buf[..k]);
                n += k as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((n, h.finalize().to_vec()))
}

/// Writes back what is dirty and drops the page cache, dentries and inodes (needs root).
pub fn drop_caches() -> std::io::Result<()> {
    crate::procfs::sync_all();
    std::fs::write("/proc/sys/vm/drop_caches", "3\n")
}

/// A program run over the root: its time, exit status and /proc samples.
#[derive(Debug, Default)]
pub struct ToolRun {
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Exit status (None: killed by a signal).
    pub exit: Option<i32>,
    /// Peak RSS, MB.
    pub peak_rss_mb: Option<f64>,
    /// Mean CPU, percent of one core.
    pub mean_cpu_pct: Option<f64>,
    /// Interrupted by Ctrl-C (then killed).
    pub interrupted: bool,
}

/// Runs `cmd` with its output appended to `log`, sampling it from /proc; Ctrl-C kills it.
pub async fn run_tool(
    mut cmd: tokio::process::Command,
    log: &Path,
    interrupt: &Interrupt,
) -> anyhow::Result<ToolRun> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    cmd.stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .kill_on_drop(true);
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {:?}", cmd.as_std().get_program()))?;
    let probe = Probe::start(Some(child.id()), None).await;
    let (status, interrupted) = tokio::select! {
        s = child.wait() => (Some(s?), false),
        () = interrupt.wait() => {
            let _ = child.kill().await;
            (None, true)
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    let (stats, _, _) = probe.finish(0, 0).await;
    Ok(ToolRun {
        seconds,
        exit: status.and_then(|s| s.code()),
        // Under 1 MB is no sample at all (a program that ended before the first one).
        peak_rss_mb: stats
            .as_ref()
            .and_then(|s| s.hwm_mb.or(s.peak_rss_mb))
            .filter(|mb| *mb >= 1.0),
        mean_cpu_pct: stats.as_ref().map(|s| s.mean_cpu_pct),
        interrupted,
    })
}

/// The gist of a log, for a row's note: a panic's message when it has one, else its last
/// `lines` lines.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if let Some(i) = all.iter().position(|l| l.contains("panicked at")) {
        return all[i..(i + 2).min(all.len())].join(" ");
    }
    all[all.len().saturating_sub(lines)..].join(" | ")
}

/// A command line for the report.
fn shown(cmd: &tokio::process::Command) -> String {
    let c = cmd.as_std();
    let mut words = vec![c.get_program().to_string_lossy().into_owned()];
    words.extend(c.get_args().map(|a| a.to_string_lossy().into_owned()));
    let env: Vec<String> = c
        .get_envs()
        .filter_map(|(k, v)| Some(format!("{}={}", k.to_string_lossy(), v?.to_string_lossy())))
        .collect();
    if env.is_empty() {
        words.join(" ")
    } else {
        format!("{} {}", env.join(" "), words.join(" "))
    }
}

/// The programs measured over the root, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tool {
    Baseline,
    Fixity,
    Rocfl,
    OcflPy,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Baseline => "baseline",
            Tool::Fixity => "arca-fixity",
            Tool::Rocfl => "rocfl",
            Tool::OcflPy => "ocfl-py",
        }
    }

    fn step(self) -> AuditStep {
        match self {
            Tool::Baseline => AuditStep::Baseline,
            Tool::Fixity => AuditStep::Fixity,
            Tool::Rocfl => AuditStep::Rocfl,
            Tool::OcflPy => AuditStep::OcflPy,
        }
    }
}

/// Runs the read rows `plan` asks for over the root of `data`.
pub async fn read_steps(
    plan: &Plan,
    bin: &Path,
    data: &Path,
    interrupt: &Interrupt,
    emit: &mut impl FnMut(ScenarioReport),
) -> anyhow::Result<()> {
    let tools: Vec<Tool> = [Tool::Baseline, Tool::Fixity, Tool::Rocfl, Tool::OcflPy]
        .into_iter()
        .filter(|t| plan.runs(t.step()))
        .collect();
    if tools.is_empty() {
        return Ok(());
    }
    let root = ocfl_root(data);
    let listed = {
        let walked = root.clone();
        tokio::task::spawn_blocking(move || list(&walked))
            .await?
            .with_context(|| format!("listing {}", root.display()))?
    };
    eprintln!(
        "==> the root holds {} objects, {} content files, {}",
        listed.objects,
        listed.files.len(),
        crate::args::format_size(listed.bytes)
    );
    let listing = std::sync::Arc::new(listed);
    let caches: &[&str] = match plan.cache {
        CacheMode::Cold => &["cold"],
        CacheMode::Warm => &["warm"],
        CacheMode::Both => &["cold", "warm"],
    };
    if plan.cache == CacheMode::Warm {
        eprintln!("==> warming the page cache: one unmeasured baseline pass");
        let l = listing.clone();
        let threads = plan.threads;
        let stop = interrupt.flag();
        tokio::task::spawn_blocking(move || hash_files(&l.files, threads, &stop)).await?;
    }
    let mut baseline: std::collections::HashMap<&str, f64> = Default::default();
    for tool in tools {
        for &cache in caches {
            if interrupt.is_set() {
                return Ok(());
            }
            let name = format!("audit-{}-{cache}", tool.name());
            eprintln!("==> {name}");
            let mut row = audit_row(&name, AuditDetail::Read(ReadRun::default()));
            if cache == "cold" {
                if let Err(e) = tokio::task::spawn_blocking(drop_caches).await? {
                    row.status = Status::NotAvailable;
                    add_note(
                        &mut row,
                        format!(
                            "the page cache could not be dropped ({e}; needs root): no cold \
                             row — use --cache warm"
                        ),
                    );
                    emit(row);
                    continue;
                }
            }
            let mut run = ReadRun {
                tool: tool.name().into(),
                cache: cache.into(),
                root_objects: listing.objects,
                root_files: listing.files.len() as u64,
                root_bytes: listing.bytes,
                ..Default::default()
            };
            match tool {
                Tool::Baseline => {
                    baseline_run(plan, &root, interrupt, &mut run, &mut row).await?;
                }
                Tool::Fixity => fixity_run(plan, bin, data, interrupt, &mut run, &mut row).await?,
                Tool::Rocfl | Tool::OcflPy => {
                    validator_run(plan, tool, &root, interrupt, &mut run, &mut row).await?
                }
            }
            // Rates only of a run that went through (a crashed program's seconds say nothing).
            if row.status == Status::Completed {
                run.mb_per_s = mb_per_s(run.root_bytes, run.seconds);
                if run.seconds > 0.0 {
                    run.objects_per_s = run.root_objects as f64 / run.seconds;
                    run.files_per_s = run.root_files as f64 / run.seconds;
                }
            }
            if tool == Tool::Baseline && row.status == Status::Completed {
                baseline.insert(cache, run.seconds);
            }
            if let Some(b) = baseline.get(cache) {
                if run.seconds > 0.0 && row.status == Status::Completed {
                    run.pct_of_baseline = Some(100.0 * b / run.seconds);
                }
            }
            if interrupt.is_set() {
                row.status = Status::Interrupted;
            }
            row.elapsed_s = run.seconds;
            row.audit = Some(AuditDetail::Read(run));
            emit(row);
        }
    }
    Ok(())
}

async fn baseline_run(
    plan: &Plan,
    root: &Path,
    interrupt: &Interrupt,
    run: &mut ReadRun,
    row: &mut ScenarioReport,
) -> anyhow::Result<()> {
    let threads = plan.threads;
    let root = root.to_path_buf();
    let stop = interrupt.flag();
    let probe = Probe::start(Some(None), None).await;
    let (listing, list_s, hashed, total_s) = tokio::task::spawn_blocking(move || {
        let t0 = Instant::now();
        let listing = list(&root)?;
        let list_s = t0.elapsed().as_secs_f64();
        let hashed = hash_files(&listing.files, threads, &stop);
        Ok::<_, std::io::Error>((listing, list_s, hashed, t0.elapsed().as_secs_f64()))
    })
    .await??;
    let (stats, _, _) = probe.finish(0, 0).await;
    run.seconds = total_s;
    run.checked_objects = Some(listing.objects);
    run.checked_files = Some(hashed.files);
    run.checked_bytes = Some(hashed.bytes);
    run.peak_rss_mb = stats.as_ref().and_then(|s| s.hwm_mb.or(s.peak_rss_mb));
    run.mean_cpu_pct = stats.as_ref().map(|s| s.mean_cpu_pct);
    add_note(
        row,
        format!(
            "walk {list_s:.2} s, read and hash {:.2} s ({:.1} MB/s of the hashing alone), {} \
             threads",
            total_s - list_s,
            mb_per_s(hashed.bytes, total_s - list_s),
            threads
        ),
    );
    if hashed.errors > 0 {
        row.status = Status::Aborted;
        add_note(
            row,
            format!(
                "{} files could not be read (first: {})",
                hashed.errors,
                hashed.first_error.unwrap_or_default()
            ),
        );
    }
    Ok(())
}

/// What `arca fixity`'s report says (the fields the scenario reads).
#[derive(Debug, Default, serde::Deserialize)]
struct FixityReport {
    #[serde(default)]
    objects: Option<u64>,
    #[serde(default)]
    files: Option<u64>,
    #[serde(default)]
    bytes: Option<u64>,
    #[serde(default)]
    findings: Vec<serde_json::Value>,
}

async fn fixity_run(
    plan: &Plan,
    bin: &Path,
    data: &Path,
    interrupt: &Interrupt,
    run: &mut ReadRun,
    row: &mut ScenarioReport,
) -> anyhow::Result<()> {
    let report = plan.log(&format!("fixity-{}.json", run.cache));
    let log = plan.log(&format!("fixity-{}.log", run.cache));
    let _ = std::fs::remove_file(&report);
    let _ = std::fs::remove_file(&log);
    let mut cmd = tokio::process::Command::new(bin);
    cmd.env("ARCA_FIXITY_MAX_MB_PER_S", "0")
        .env("ARCA_FIXITY_THREADS", plan.threads.to_string())
        .arg("fixity")
        .arg("--data")
        .arg(data)
        .arg("--report")
        .arg(&report);
    run.command = Some(shown(&cmd));
    run.log = Some(log.display().to_string());
    let t = run_tool(cmd, &log, interrupt).await?;
    take(run, &t);
    if t.interrupted {
        row.status = Status::Interrupted;
        return Ok(());
    }
    let parsed: Option<FixityReport> = std::fs::read(&report)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    if let Some(r) = &parsed {
        run.checked_objects = r.objects;
        run.checked_files = r.files;
        run.checked_bytes = r.bytes;
        run.findings = Some(r.findings.len() as u64);
    }
    match (t.exit, &parsed) {
        (Some(0), Some(r)) => {
            if r.objects.is_some_and(|n| n != run.root_objects) {
                add_note(
                    row,
                    format!(
                        "the audit says it checked {} objects; the root holds {}",
                        r.objects.unwrap_or(0),
                        run.root_objects
                    ),
                );
            }
        }
        (Some(0), None) => {
            row.status = Status::Aborted;
            add_note(
                row,
                format!(
                    "arca fixity exited 0 but wrote no readable report at {}",
                    report.display()
                ),
            );
        }
        (Some(1), Some(r)) => {
            row.status = Status::Aborted;
            let first: Vec<String> = r
                .findings
                .iter()
                .take(3)
                .map(|f| {
                    format!(
                        "{} {} {}",
                        f["kind"].as_str().unwrap_or("?"),
                        f["object"].as_str().unwrap_or("?"),
                        f["content_path"].as_str().unwrap_or("")
                    )
                })
                .collect();
            add_note(
                row,
                format!(
                    "arca fixity found {} findings on a root the bench did not damage (false \
                     positives, or a damaged reused root): {}",
                    r.findings.len(),
                    first.join("; ")
                ),
            );
        }
        (code, _) => {
            row.status = Status::Aborted;
            add_note(
                row,
                format!(
                    "arca fixity could not run (exit {}): {}",
                    code.map_or("by a signal".into(), |c| c.to_string()),
                    tail(&log, 4)
                ),
            );
        }
    }
    Ok(())
}

async fn validator_run(
    plan: &Plan,
    tool: Tool,
    root: &Path,
    interrupt: &Interrupt,
    run: &mut ReadRun,
    row: &mut ScenarioReport,
) -> anyhow::Result<()> {
    let program = match tool {
        Tool::Rocfl => plan.rocfl.as_ref(),
        _ => plan.ocfl_validate.as_ref(),
    };
    let Some(program) = program else {
        row.status = Status::NotAvailable;
        add_note(row, format!("{} not found (see the notes)", tool.name()));
        return Ok(());
    };
    let log = plan.log(&format!("{}-{}.log", tool.name(), run.cache));
    let _ = std::fs::remove_file(&log);
    run.log = Some(log.display().to_string());
    let t = if tool == Tool::Rocfl {
        let mut cmd = tokio::process::Command::new(program);
        cmd.arg("-S")
            .arg("-r")
            .arg(root)
            .arg("validate")
            .arg("-l")
            .arg("error");
        run.command = Some(shown(&cmd));
        run_tool(cmd, &log, interrupt).await?
    } else {
        // ocfl-py 2.1 refuses a storage root in layout 0004 (E071, a layout it does not
        // implement): it validates the object directories instead, as the tests do.
        let root = root.to_path_buf();
        let objects = tokio::task::spawn_blocking(move || list(&root))
            .await??
            .object_dirs;
        run.command = Some(format!(
            "{} -q OBJECT_DIR... ({} objects, {OCFL_PY_CHUNK} per invocation)",
            program.display(),
            objects.len()
        ));
        let (t, valid) = ocfl_py(program, &objects, &log, interrupt).await?;
        run.checked_objects = Some(valid);
        t
    };
    take(run, &t);
    if t.interrupted {
        row.status = Status::Interrupted;
        return Ok(());
    }
    run.valid = Some(t.exit == Some(0));
    if t.exit != Some(0) {
        add_note(
            row,
            format!(
                "{} judged the root invalid or failed (exit {}): {}",
                tool.name(),
                t.exit.map_or("by a signal".into(), |c| c.to_string()),
                tail(&log, 3)
            ),
        );
    }
    Ok(())
}

/// Object directories per invocation of ocfl-py's validator.
pub const OCFL_PY_CHUNK: usize = 1000;

/// ocfl-py's validator over `objects`, [`OCFL_PY_CHUNK`] per invocation, one after the
/// other: the summed run (exit 0 when every invocation exited 0) and the objects it called
/// valid.
pub async fn ocfl_py(
    program: &Path,
    objects: &[PathBuf],
    log: &Path,
    interrupt: &Interrupt,
) -> anyhow::Result<(ToolRun, u64)> {
    let mut total = ToolRun {
        exit: Some(0),
        ..Default::default()
    };
    let mut cpu_seconds = 0.0;
    for chunk in objects.chunks(OCFL_PY_CHUNK) {
        let mut cmd = tokio::process::Command::new(program);
        cmd.arg("-q").args(chunk);
        let t = run_tool(cmd, log, interrupt).await?;
        total.seconds += t.seconds;
        cpu_seconds += t.mean_cpu_pct.unwrap_or(0.0) * t.seconds;
        total.peak_rss_mb = match (total.peak_rss_mb, t.peak_rss_mb) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if t.exit != Some(0) && total.exit == Some(0) {
            total.exit = t.exit;
        }
        if t.interrupted {
            total.interrupted = true;
            break;
        }
    }
    if total.seconds > 0.0 {
        total.mean_cpu_pct = Some(cpu_seconds / total.seconds);
    }
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let valid = text.lines().filter(|l| l.ends_with(" is VALID")).count() as u64;
    Ok((total, valid))
}

fn take(run: &mut ReadRun, t: &ToolRun) {
    run.seconds = t.seconds;
    run.exit_code = t.exit;
    run.peak_rss_mb = t.peak_rss_mb;
    run.mean_cpu_pct = t.mean_cpu_pct;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root of two objects in the OCFL shape the walk expects.
    fn sample_root(dir: &Path) {
        std::fs::write(dir.join("0=ocfl_1.1"), "ocfl_1.1\n").unwrap();
        std::fs::create_dir_all(dir.join("extensions/0004-hashed-n-tuple-storage-layout")).unwrap();
        for (obj, files) in [
            ("ab/cd/o1", vec!["v1/content/a", "v2/content/dir/b"]),
            ("ef/o2", vec!["v1/content/.fcrepo/x.json"]),
        ] {
            let o = dir.join(obj);
            std::fs::create_dir_all(&o).unwrap();
            std::fs::write(o.join("0=ocfl_object_1.1"), "ocfl_object_1.1\n").unwrap();
            std::fs::write(o.join("inventory.json"), "{}").unwrap();
            std::fs::write(o.join("inventory.json.sha512"), "x inventory.json").unwrap();
            for f in files {
                let p = o.join(f);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, vec![7u8; 1000]).unwrap();
            }
            std::fs::create_dir_all(o.join("v1")).unwrap();
            std::fs::write(o.join("v1/inventory.json"), "{}").unwrap();
        }
    }

    #[test]
    fn the_walk_finds_objects_and_only_their_content() {
        let d = tempfile::tempdir().unwrap();
        sample_root(d.path());
        let l = list(d.path()).unwrap();
        assert_eq!(l.objects, 2);
        assert_eq!(l.files.len(), 3);
        assert_eq!(l.bytes, 3000);
        assert!(l
            .files
            .iter()
            .all(|f| f.components().any(|c| c.as_os_str() == "content")));
    }

    #[test]
    fn hashing_reads_every_byte_and_counts_failures() {
        let d = tempfile::tempdir().unwrap();
        sample_root(d.path());
        let mut files = list(d.path()).unwrap().files;
        let stop = AtomicBool::new(false);
        let h = hash_files(&files, 3, &stop);
        assert_eq!((h.files, h.bytes, h.errors), (3, 3000, 0));
        // The digest is sha512 of the bytes.
        let mut buf = vec![0; 7];
        let (n, digest) = hash_file(&files[0], &mut buf).unwrap();
        assert_eq!(n, 1000);
        assert_eq!(digest, Sha512::digest(vec![7u8; 1000]).to_vec());
        files.push(d.path().join("gone"));
        let h = hash_files(&files, 2, &stop);
        assert_eq!((h.files, h.errors), (3, 1));
        assert!(h.first_error.unwrap().contains("gone"));
        stop.store(true, Ordering::Relaxed);
        assert_eq!(hash_files(&files, 2, &stop).files, 0);
    }

    #[tokio::test]
    async fn tools_are_timed_with_their_exit_status() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("t.log");
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c").arg("echo first; echo last; exit 3");
        let t = run_tool(cmd, &log, &Interrupt::never()).await.unwrap();
        assert_eq!(t.exit, Some(3));
        assert!(!t.interrupted);
        assert_eq!(tail(&log, 1), "last");
        assert_eq!(tail(&log, 5), "first | last");
        std::fs::write(
            &log,
            "\nthread 'main' panicked at src/x.rs:1:2:\nnot yet implemented: H1\nstack backtrace:\n  0: x\n",
        )
        .unwrap();
        assert_eq!(
            tail(&log, 2),
            "thread 'main' panicked at src/x.rs:1:2: not yet implemented: H1"
        );
    }
}
