//! `--spawn`: a fresh arca on a free port and a temporary data directory, stopped and deleted
//! afterwards — on success, on error and on Ctrl-C. Also the Ctrl-C handling itself.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use rustix::process::{kill_process, Pid, Signal};
use tokio::process::Child;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::http::Target;

/// How long a spawned arca may take to answer `GET {base}` with 200.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Servers and directories to remove if the user insists on quitting at once (second Ctrl-C).
/// A server on a data directory the caller keeps has no directory here.
static CLEANUP: Mutex<Vec<(u32, Option<PathBuf>)>> = Mutex::new(Vec::new());

/// Kills every spawned server and removes its directory, without waiting politely.
pub fn emergency_cleanup() {
    let list = CLEANUP.lock().map(|l| l.clone()).unwrap_or_default();
    for (pid, dir) in list {
        if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
            let _ = kill_process(pid, Signal::KILL);
        }
        if let Some(dir) = dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Ctrl-C (or SIGTERM) seen: the run stops, writes its partial report and cleans up.
#[derive(Clone, Debug)]
pub struct Interrupt {
    flag: Arc<AtomicBool>,
    rx: watch::Receiver<bool>,
}

impl Interrupt {
    /// Installs the handler. The first signal sets the flag; a second one kills spawned servers,
    /// removes their data and exits with status 130 at once.
    pub fn install() -> (Interrupt, JoinHandle<()>) {
        let (tx, rx) = watch::channel(false);
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        let task = tokio::spawn(async move {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            let mut seen = 0;
            loop {
                let got = tokio::select! {
                    r = tokio::signal::ctrl_c() => r.is_ok(),
                    Some(()) = async { match term.as_mut() { Some(t) => t.recv().await, None => std::future::pending().await } } => true,
                };
                if !got {
                    // No signal handling possible: never interrupt.
                    std::future::pending::<()>().await;
                }
                seen += 1;
                if seen == 1 {
                    eprintln!(
                        "\narca bench: interrupted — stopping, writing the partial report and \
                         cleaning up (interrupt again to quit at once)"
                    );
                    f.store(true, Ordering::SeqCst);
                    let _ = tx.send(true);
                } else {
                    eprintln!("arca bench: quitting at once");
                    emergency_cleanup();
                    std::process::exit(130);
                }
            }
        });
        (Interrupt { flag, rx }, task)
    }

    /// An interrupt that never fires (tests, library use).
    pub fn never() -> Interrupt {
        let (tx, rx) = watch::channel(false);
        // Keep the sender alive for the life of the program so `wait` stays pending.
        std::mem::forget(tx);
        Interrupt {
            flag: Arc::new(AtomicBool::new(false)),
            rx,
        }
    }

    /// Whether the run was interrupted.
    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The flag, for OS threads.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }

    /// Waits until interrupted (forever if never).
    pub async fn wait(&self) {
        let mut rx = self.rx.clone();
        if rx.wait_for(|v| *v).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Finds the arca binary: `explicit` (--arca-bin or ARCA_BIN), else this program if it is
/// called `arca`, else `arca` next to it or in its parent directory (test binaries live in
/// `target/debug/deps/`), else `arca` on PATH.
pub fn find_arca_bin(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        if p.is_file() {
            return Ok(p.to_path_buf());
        }
        bail!("the arca binary {} does not exist", p.display());
    }
    if let Some(p) = std::env::var_os("ARCA_BIN").map(PathBuf::from) {
        if p.is_file() {
            return Ok(p);
        }
    }
    if let Ok(exe) = std::env::current_exe() {
        if exe.file_name().is_some_and(|n| n == "arca") {
            return Ok(exe);
        }
        let dir = exe.parent();
        for d in [dir, dir.and_then(Path::parent)].into_iter().flatten() {
            let c = d.join("arca");
            if c.is_file() {
                return Ok(c);
            }
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            let c = d.join("arca");
            if c.is_file() {
                return Ok(c);
            }
        }
    }
    bail!("cannot find the arca binary for --spawn: give --arca-bin PATH or set ARCA_BIN")
}

/// A free TCP port on 127.0.0.1 (bound, read, released).
pub fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// What [`SpawnedServer::launch`] changes in how arca is started.
#[derive(Clone, Debug, Default)]
pub struct Launch {
    /// Serve this data directory (created when missing, kept afterwards) instead of a fresh
    /// temporary one.
    pub data: Option<PathBuf>,
    /// Write the server's output here [default: `server.log` in the log directory].
    pub log: Option<PathBuf>,
    /// Environment variables set (`Some`) or removed (`None`) for the server.
    pub env: Vec<(String, Option<String>)>,
    /// `--config FILE`.
    pub config: Option<PathBuf>,
}

/// A running arca started by this run.
#[derive(Debug)]
pub struct SpawnedServer {
    child: Child,
    /// Its PID.
    pub pid: u32,
    /// Its Fedora API base URL.
    pub base: String,
    /// The temporary directory holding `data/` (and the raw baseline's files).
    pub root: PathBuf,
    /// The data directory given to `arca serve --data`.
    pub data: PathBuf,
    /// Where its stdout and stderr go.
    pub log: PathBuf,
    dir: Option<tempfile::TempDir>,
}

impl SpawnedServer {
    /// Starts `bin serve --listen 127.0.0.1:PORT --data ROOT/data`, with ROOT a fresh directory
    /// under `parent` (default: the system temporary directory), its output in `log_dir/server.log`
    /// (default: ROOT/server.log), the files below `external` (if given) allowed as external
    /// content (`ARCA_EXTERNAL_CONTENT_ALLOWED`), and waits until `GET {base}` answers 2xx.
    pub async fn start(
        bin: &Path,
        parent: Option<&Path>,
        log_dir: Option<&Path>,
        external: Option<&Path>,
        interrupt: &Interrupt,
    ) -> anyhow::Result<SpawnedServer> {
        Self::launch(
            bin,
            parent,
            log_dir,
            external,
            &Launch::default(),
            interrupt,
        )
        .await
    }

    /// [`start`](Self::start) with what `launch` adds: an existing data directory (kept
    /// afterwards), a log file of its own, environment variables, a config file.
    pub async fn launch(
        bin: &Path,
        parent: Option<&Path>,
        log_dir: Option<&Path>,
        external: Option<&Path>,
        launch: &Launch,
        interrupt: &Interrupt,
    ) -> anyhow::Result<SpawnedServer> {
        let (dir, root, data) = match &launch.data {
            Some(data) => {
                std::fs::create_dir_all(data)
                    .with_context(|| format!("creating {}", data.display()))?;
                let root = data.parent().unwrap_or(data).to_path_buf();
                (None, root, data.clone())
            }
            None => {
                let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
                std::fs::create_dir_all(&parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
                let dir = tempfile::Builder::new()
                    .prefix("arca-bench-")
                    .tempdir_in(&parent)
                    .with_context(|| {
                        format!("creating a temporary directory in {}", parent.display())
                    })?;
                let root = dir.path().to_path_buf();
                let data = root.join("data");
                std::fs::create_dir(&data)?;
                (Some(dir), root, data)
            }
        };
        let log = match (&launch.log, log_dir) {
            (Some(log), _) => log.clone(),
            (None, Some(d)) => d.join("server.log"),
            (None, None) => root.join("server.log"),
        };
        let log_file =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let port = free_port().context("finding a free port")?;
        let mut cmd = tokio::process::Command::new(bin);
        if let Some(dir) = external {
            let list = root.join("external-content-allowed.txt");
            let prefix = format!(
                "{}/\n",
                crate::search::api::file_url(dir).trim_end_matches('/')
            );
            std::fs::write(&list, prefix).with_context(|| format!("writing {}", list.display()))?;
            cmd.env("ARCA_EXTERNAL_CONTENT_ALLOWED", &list);
        }
        for (key, value) in &launch.env {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        cmd.arg("serve");
        if let Some(config) = &launch.config {
            cmd.arg("--config").arg(config);
        }
        cmd.arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data")
            .arg(&data)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .kill_on_drop(true)
            // Its own process group: Ctrl-C in the terminal reaches only us, and we stop it.
            .process_group(0);
        // SAFETY: prctl is async-signal-safe and touches only the child's own state. If this
        // program dies without cleaning up, the kernel kills the server.
        unsafe {
            cmd.pre_exec(|| {
                let _ = rustix::process::set_parent_process_death_signal(Some(Signal::KILL));
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {} serve", bin.display()))?;
        let pid = child.id().unwrap_or_default();
        if let Ok(mut l) = CLEANUP.lock() {
            l.push((pid, dir.as_ref().map(|_| root.clone())));
        }
        let mut server = SpawnedServer {
            child,
            pid,
            base: format!("http://127.0.0.1:{port}/rest/"),
            root,
            data,
            log,
            dir,
        };
        match server.wait_ready(interrupt).await {
            Ok(()) => Ok(server),
            Err(e) => {
                server.shutdown().await;
                Err(e)
            }
        }
    }

    async fn wait_ready(&mut self, interrupt: &Interrupt) -> anyhow::Result<()> {
        let target = Target::new(&self.base, None, None, Duration::from_secs(5), 1)?;
        let start = Instant::now();
        let mut last = String::from("no answer yet");
        while start.elapsed() < READY_TIMEOUT {
            if interrupt.is_set() {
                bail!("interrupted while waiting for arca to start");
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "arca serve exited with {status} before answering; its output ({}):\n{}",
                    self.log.display(),
                    tail(&self.log)
                );
            }
            match target.probe().await {
                // 401: up, with an ACL that lets anonymous clients read nothing.
                Ok((s, _)) if (200..300).contains(&s) || s == 401 => return Ok(()),
                Ok((s, _)) => last = format!("GET {} answered {s}", self.base),
                Err(f) => last = f.message,
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!(
            "arca did not answer GET {} with 200 or 401 within {:?} ({last}); its output ({}):\n{}",
            self.base,
            READY_TIMEOUT,
            self.log.display(),
            tail(&self.log)
        )
    }

    /// Stops the server (SIGTERM, then SIGKILL after 10 s), waits for it, removes its directory.
    pub async fn shutdown(&mut self) {
        if let Some(path) = self.stop().await {
            let _ = tokio::task::spawn_blocking(move || {
                crate::cleanup::remove_tree(&path, "the server's data");
                // Written back now, the freed inodes are reusable 60 s later rather than 5
                // minutes (see raw::Leftovers): the next run on this file system starts clean
                // sooner.
                crate::cleanup::sync_reporting();
            })
            .await;
        }
    }

    /// Stops the server as [`shutdown`](Self::shutdown) does, but leaves its directory to
    /// the caller: returns it (once).
    pub async fn stop(&mut self) -> Option<PathBuf> {
        if let Ok(None) = self.child.try_wait() {
            if let Some(pid) = i32::try_from(self.pid).ok().and_then(Pid::from_raw) {
                let _ = kill_process(pid, Signal::TERM);
            }
            if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
                .await
                .is_err()
            {
                let _ = self.child.kill().await;
            }
        }
        if let Ok(mut l) = CLEANUP.lock() {
            l.retain(|(p, _)| *p != self.pid);
        }
        self.dir.take().map(|d| d.keep())
    }
}

/// The last lines of a log file.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_binary_must_exist() {
        assert!(find_arca_bin(Some(Path::new("/nonexistent/arca"))).is_err());
        let f = tempfile::NamedTempFile::new().unwrap();
        assert_eq!(find_arca_bin(Some(f.path())).unwrap(), f.path());
    }

    #[test]
    fn free_ports_are_free() {
        let p = free_port().unwrap();
        assert!(p > 0);
        std::net::TcpListener::bind(("127.0.0.1", p)).unwrap();
    }

    #[tokio::test]
    async fn a_server_that_exits_is_reported_and_cleaned_up() {
        let parent = tempfile::tempdir().unwrap();
        // `false serve ...` exits at once with status 1.
        let err = SpawnedServer::start(
            Path::new("/bin/false"),
            Some(parent.path()),
            None,
            None,
            &Interrupt::never(),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("exited"), "{err}");
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn a_server_is_stopped_and_its_directory_removed() {
        let parent = tempfile::tempdir().unwrap();
        // A fake "arca" that ignores its arguments and answers nothing: use sleep via sh.
        let script = parent.path().join("fake-arca");
        std::fs::write(&script, "#!/bin/sh\nexec sleep 1000\n").unwrap();
        let mut perms = std::fs::metadata(&script).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&script, perms).unwrap();
        let data_parent = parent.path().join("runs");
        // Readiness never comes; interrupt to stop waiting quickly.
        let (tx, rx) = watch::channel(false);
        let flag = Arc::new(AtomicBool::new(false));
        let intr = Interrupt {
            flag: flag.clone(),
            rx,
        };
        let f2 = flag.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            f2.store(true, Ordering::SeqCst);
            let _ = tx.send(true);
        });
        let err = SpawnedServer::start(&script, Some(&data_parent), None, None, &intr)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("interrupted"), "{err}");
        assert_eq!(std::fs::read_dir(&data_parent).unwrap().count(), 0);
        assert!(!CLEANUP
            .lock()
            .unwrap()
            .iter()
            .any(|(_, p)| p.as_ref().is_some_and(|p| p.starts_with(&data_parent))));
    }
}
