//! A real PostgreSQL server as a private child process on 127.0.0.1, for tests of the
//! PostgreSQL catalog.
//!
//! It runs the binaries of Debian's `postgresql` package (`/usr/lib/postgresql/<version>/bin`,
//! the newest there, or `$ARCA_POSTGRES_BIN`): `initdb` makes a throwaway cluster in a
//! temporary directory (superuser `arca`, `trust` authentication, UTF-8, C locale) and
//! `postgres` serves it on a free port of 127.0.0.1, with its Unix socket in the same
//! directory and `fsync` on, as a production server runs. PostgreSQL refuses to run as
//! root: when the tests run as root (as they do in CI) the cluster belongs to the `postgres`
//! system user the package creates, and both programs switch to it before they start. When
//! the binaries or that user are missing, [`Postgres::start`] prints why (`NOT RUN`) and
//! returns `None`, unless `ARCA_REQUIRE_POSTGRES=1` (which `scripts/test` sets), which turns
//! the skip into a failure.
//!
//! Each test gets a database of its own ([`Postgres::create_database`]) in one cluster per
//! test process ([`Postgres::shared`]), or a cluster of its own ([`Postgres::start`]). All
//! methods block the calling thread. The server is stopped when the [`Postgres`] is dropped
//! (the shared one when the process exits), and, on Linux, killed when the test process
//! ends in any other way.

use std::ffi::CString;
use std::fs;
use std::io::{self, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

use crate::activemq::spawn_bound_to_process;

/// Where Debian's `postgresql-<version>` packages put the server's programs.
const DEBIAN_LIB: &str = "/usr/lib/postgresql";

/// The superuser `initdb` creates; every URL names it.
pub const SUPERUSER: &str = "arca";

/// How long a start may take until the server accepts connections (about 1 s here).
const START_LIMIT: Duration = Duration::from_secs(60);

/// How long a stop waits after SIGINT (fast shutdown) before it sends SIGKILL.
const STOP_LIMIT: Duration = Duration::from_secs(30);

/// How many times a start is repeated with another port when the chosen one was taken
/// meanwhile.
const BIND_ATTEMPTS: u32 = 5;

/// A running (or stopped) private PostgreSQL cluster; the server is stopped when this is
/// dropped, and its directory removed.
pub struct Postgres {
    child: Mutex<Option<Child>>,
    dir: Mutex<Option<tempfile::TempDir>>,
    dir_path: PathBuf,
    bin: PathBuf,
    owner: Option<Owner>,
    port: u16,
    databases: AtomicU32,
}

/// The system user the cluster's programs run as, when the tests run as root.
#[derive(Clone, Copy, Debug)]
struct Owner {
    uid: libc::uid_t,
    gid: libc::gid_t,
}

impl Postgres {
    /// Makes and starts a cluster of its own and waits until it accepts connections. `None`
    /// (after printing why) if PostgreSQL cannot run here and `ARCA_REQUIRE_POSTGRES` is not
    /// `1`; a panic if it is, or if the server does not come up within 60 s (with the end
    /// of its log).
    pub fn start() -> Option<Postgres> {
        Self::start_with(&Setup::default())
    }

    /// [`start`](Self::start) with `setup` applied to the new cluster before its first
    /// start (TLS, a stricter `pg_hba.conf`).
    pub fn start_with(setup: &Setup) -> Option<Postgres> {
        let (bin, owner) = match installation() {
            Ok(found) => found,
            Err(why) => {
                let msg = format!(
                    "{why}. Install Debian's postgresql package (apt-get install postgresql; \
                     scripts/test does)"
                );
                if std::env::var("ARCA_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                    panic!("ARCA_REQUIRE_POSTGRES=1 but {msg}");
                }
                eprintln!("NOT RUN: tests with a real PostgreSQL: {msg}");
                return None;
            }
        };
        let dir = tempfile::Builder::new()
            .prefix("arca-postgres-")
            .tempdir()
            .expect("a temporary directory for PostgreSQL");
        if let Some(owner) = owner {
            std::os::unix::fs::chown(dir.path(), Some(owner.uid), Some(owner.gid))
                .expect("the PostgreSQL directory given to the postgres user");
        }
        let mut pg = Postgres {
            child: Mutex::new(None),
            dir_path: dir.path().to_path_buf(),
            dir: Mutex::new(Some(dir)),
            bin,
            owner,
            port: 0,
            databases: AtomicU32::new(0),
        };
        pg.init();
        pg.apply(setup);
        pg.launch();
        Some(pg)
    }

    /// A streaming standby of this running cluster: `pg_basebackup -R` of it into a cluster
    /// of its own, started on another port in hot standby (it answers reads, refuses
    /// writes). A panic if the copy or the start fails.
    pub fn start_standby(&self) -> Postgres {
        self.start_standby_with(&Setup::default())
    }

    /// [`start_standby`](Self::start_standby) with `setup` applied to the copy before its
    /// start (its `postgresql.conf` is the primary's until then).
    pub fn start_standby_with(&self, setup: &Setup) -> Postgres {
        let dir = tempfile::Builder::new()
            .prefix("arca-postgres-standby-")
            .tempdir()
            .expect("a temporary directory for the standby");
        if let Some(owner) = self.owner {
            std::os::unix::fs::chown(dir.path(), Some(owner.uid), Some(owner.gid))
                .expect("the standby's directory given to the postgres user");
        }
        let mut standby = Postgres {
            child: Mutex::new(None),
            dir_path: dir.path().to_path_buf(),
            dir: Mutex::new(Some(dir)),
            bin: self.bin.clone(),
            owner: self.owner,
            port: 0,
            databases: AtomicU32::new(0),
        };
        succeed(
            standby
                .command("pg_basebackup")
                .arg("-D")
                .arg(standby.data_path())
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
                .args(["-U", SUPERUSER, "-R", "-X", "stream", "-c", "fast"]),
            "pg_basebackup",
        );
        standby.apply(setup);
        standby.launch();
        standby
    }

    /// Promotes this standby to a primary (`pg_ctl promote`) and waits until it takes
    /// writes. A panic if it is not a standby or the promotion fails.
    pub fn promote(&self) {
        succeed(
            self.command("pg_ctl")
                .args(["promote", "-w", "-t", "60", "-D"])
                .arg(self.data_path()),
            "pg_ctl promote",
        );
    }

    /// The cluster every test of this process shares (started by the first caller), or
    /// `None` as [`start`](Self::start) says. It is stopped and removed when the process
    /// exits.
    pub fn shared() -> Option<&'static Postgres> {
        static SHARED: OnceLock<Option<Postgres>> = OnceLock::new();
        extern "C" fn stop_shared() {
            if let Some(Some(pg)) = SHARED.get() {
                pg.stop();
                pg.remove_dir();
            }
        }
        SHARED
            .get_or_init(|| {
                let pg = Postgres::start()?;
                // SAFETY: registers a plain function without arguments, run once at exit.
                unsafe { libc::atexit(stop_shared) };
                Some(pg)
            })
            .as_ref()
    }

    /// The port the server listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The cluster's directory: `data/` (the cluster), `postgres.log`, the Unix socket.
    pub fn dir(&self) -> &Path {
        &self.dir_path
    }

    /// `postgres://arca@127.0.0.1:PORT/DATABASE`.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{database}", self.port)
    }

    /// Creates a new empty database (`test_1`, `test_2`, …) and returns its URL.
    pub fn create_database(&self) -> String {
        let name = format!("test_{}", self.databases.fetch_add(1, Ordering::SeqCst) + 1);
        succeed(
            Command::new(self.bin.join("createdb"))
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
                .args(["-U", SUPERUSER, &name])
                .stdin(Stdio::null()),
            &format!("createdb {name}"),
        );
        self.url(&name)
    }

    /// Runs `sql` with `psql` on the database at `url` (one of this server's) and returns
    /// what it printed: rows one a line, fields separated by `|`, no header. A panic, with
    /// psql's message, if it fails.
    pub fn query(&self, url: &str, sql: &str) -> String {
        let out = succeed(
            Command::new(self.bin.join("psql"))
                .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql, url])
                .stdin(Stdio::null()),
            &format!("psql {sql:?}"),
        );
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    }

    /// Whether the server process is running.
    pub fn is_running(&self) -> bool {
        match self.child.lock().unwrap().as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Stops the server (fast shutdown: SIGINT; SIGKILL after 30 s) and waits until it has
    /// exited. The cluster's files stay for [`start_again`](Self::start_again).
    pub fn stop(&self) {
        let Some(mut child) = self.child.lock().unwrap().take() else {
            return;
        };
        // Our own child, not yet waited for: its id is still its own.
        let _ = kill_process(Pid::from_child(&child), Signal::INT);
        let started = Instant::now();
        while started.elapsed() < STOP_LIMIT {
            if !matches!(child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Kills the server at once (SIGKILL), as a crash would, and waits until it is gone.
    pub fn kill(&self) {
        if let Some(mut child) = self.child.lock().unwrap().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port and cluster (a running one is stopped
    /// first) and waits until it accepts connections.
    pub fn start_again(&mut self) {
        self.stop();
        self.launch_on(self.port, START_LIMIT)
            .unwrap_or_else(|e| panic!("PostgreSQL did not start again: {e}"));
    }

    /// The last lines of the server's log (every start's).
    pub fn log_tail(&self) -> String {
        let log = fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    fn log_path(&self) -> PathBuf {
        self.dir_path.join("postgres.log")
    }

    fn data_path(&self) -> PathBuf {
        self.dir_path.join("data")
    }

    fn remove_dir(&self) {
        drop(self.dir.lock().unwrap().take());
    }

    /// A command running `program` of the installation as the cluster's owner.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bin.join(program));
        command.current_dir(&self.dir_path).stdin(Stdio::null());
        if let Some(owner) = self.owner {
            use std::os::unix::process::CommandExt;
            // SAFETY: only async-signal-safe calls (setgroups, setgid, setuid) between fork
            // and exec.
            unsafe {
                command.pre_exec(move || {
                    if libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setgid(owner.gid) != 0
                        || libc::setuid(owner.uid) != 0
                    {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        command
    }

    /// `initdb`: the cluster in `data/`.
    fn init(&self) {
        succeed(
            self.command("initdb")
                .arg("-D")
                .arg(self.data_path())
                .args(["--auth=trust", "-U", SUPERUSER, "-E", "UTF8", "--locale=C"]),
            "initdb",
        );
    }

    /// Writes `setup`'s files into the cluster (owned by its user, mode 0600), appends its
    /// lines to `postgresql.conf` and replaces `pg_hba.conf` when it gives one.
    fn apply(&self, setup: &Setup) {
        use std::os::unix::fs::PermissionsExt;
        let data = self.data_path();
        let write = |name: &str, contents: &[u8], mode: u32| {
            let path = data.join(name);
            fs::write(&path, contents).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            fs::set_permissions(&path, fs::Permissions::from_mode(mode))
                .expect("the file's mode set");
            if let Some(owner) = self.owner {
                std::os::unix::fs::chown(&path, Some(owner.uid), Some(owner.gid))
                    .expect("the file given to the postgres user");
            }
        };
        for (name, contents) in &setup.files {
            write(name, contents, 0o600);
        }
        if !setup.conf.is_empty() {
            let mut conf = fs::read_to_string(data.join("postgresql.conf"))
                .expect("initdb wrote postgresql.conf");
            for line in &setup.conf {
                conf.push_str(line);
                conf.push('\n');
            }
            write("postgresql.conf", conf.as_bytes(), 0o600);
        }
        if let Some(hba) = &setup.hba {
            write("pg_hba.conf", hba.as_bytes(), 0o600);
        }
    }

    /// Starts the server on a free port, trying another one when it was taken meanwhile.
    fn launch(&mut self) {
        let mut attempt = 1;
        loop {
            let port = free_port();
            match self.launch_on(port, START_LIMIT) {
                Ok(()) => {
                    self.port = port;
                    return;
                }
                Err(Failure::PortTaken) if attempt < BIND_ATTEMPTS => attempt += 1,
                Err(e) => panic!("PostgreSQL did not start: {e}"),
            }
        }
    }

    /// Spawns `postgres` on `port` and waits until it accepts connections.
    fn launch_on(&self, port: u16, limit: Duration) -> Result<(), Failure> {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("the PostgreSQL log opened");
        let _ = writeln!(&log, "==== arca testkit: start on port {port}");
        let log_start = log.metadata().map_or(0, |m| m.len());
        let mut command = self.command("postgres");
        command
            .arg("-D")
            .arg(self.data_path())
            .arg("-k")
            .arg(&self.dir_path)
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .args(["-c", "fsync=on", "-c", "max_connections=200"])
            // Segments in the cluster's directory, not in a container's small /dev/shm.
            .args(["-c", "dynamic_shared_memory_type=mmap"])
            .stdout(log.try_clone().expect("the PostgreSQL log shared"))
            .stderr(log);
        let child = spawn_bound_to_process(command)
            .unwrap_or_else(|e| panic!("postgres cannot start: {e}"));
        *self.child.lock().unwrap() = Some(child);
        let started = Instant::now();
        loop {
            let exited = match self.child.lock().unwrap().as_mut() {
                Some(child) => !matches!(child.try_wait(), Ok(None)),
                None => true,
            };
            if exited {
                self.child.lock().unwrap().take();
                let log = fs::read(self.log_path()).unwrap_or_default();
                let this_start =
                    String::from_utf8_lossy(log.get(log_start as usize..).unwrap_or_default())
                        .into_owned();
                return Err(if this_start.contains("could not bind") {
                    Failure::PortTaken
                } else {
                    Failure::Exited(self.log_tail())
                });
            }
            if self.accepts_connections(port) {
                return Ok(());
            }
            if started.elapsed() > limit {
                self.kill();
                return Err(Failure::TimedOut(self.log_tail()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether the server on `port` accepts connections (`pg_isready`).
    fn accepts_connections(&self, port: u16) -> bool {
        Command::new(self.bin.join("pg_isready"))
            .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
            .args(["-U", SUPERUSER, "-d", "postgres"])
            .stdin(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What a cluster of its own gets beyond `initdb`'s defaults ([`Postgres::start_with`]).
#[derive(Clone, Debug, Default)]
pub struct Setup {
    /// Files written into the data directory, owned by the server's user with mode 0600
    /// (a TLS key and certificate: `ssl_cert_file = 'server.crt'` finds them there).
    pub files: Vec<(String, Vec<u8>)>,
    /// Lines appended to `postgresql.conf` (`ssl = on`).
    pub conf: Vec<String>,
    /// The whole `pg_hba.conf`, instead of `initdb`'s (`trust` for every local and
    /// 127.0.0.1 connection), e.g. `hostssl` lines only.
    pub hba: Option<String>,
}

impl Setup {
    /// A primary whose commits return only once a standby has them
    /// (`synchronous_standby_names = '*'`, `synchronous_commit = on`): a standby promoted
    /// after it failed has every commit it acknowledged. Until a standby streams from it,
    /// its commits wait.
    pub fn synchronous_primary() -> Setup {
        Setup {
            conf: vec![
                "synchronous_standby_names = '*'".into(),
                "synchronous_commit = on".into(),
            ],
            ..Setup::default()
        }
    }

    /// A standby that, once promoted, commits without waiting for a standby of its own
    /// (the copy of a [`synchronous_primary`](Self::synchronous_primary) would otherwise
    /// wait for ever).
    pub fn asynchronous() -> Setup {
        Setup {
            conf: vec!["synchronous_standby_names = ''".into()],
            ..Setup::default()
        }
    }

    /// TLS with `certificate` and `key` (PEM), and connections over TCP accepted only with
    /// TLS (`hostssl`; the Unix socket stays open to the harness's own programs).
    pub fn tls_only(certificate: Vec<u8>, key: Vec<u8>) -> Setup {
        Setup {
            files: vec![
                ("server.crt".into(), certificate),
                ("server.key".into(), key),
            ],
            conf: vec![
                "ssl = on".into(),
                "ssl_cert_file = 'server.crt'".into(),
                "ssl_key_file = 'server.key'".into(),
            ],
            hba: Some(
                "local all all trust\n\
                 local replication all trust\n\
                 hostssl all all 127.0.0.1/32 trust\n\
                 hostssl all all ::1/128 trust\n\
                 hostssl replication all 127.0.0.1/32 trust\n"
                    .into(),
            ),
        }
    }
}

/// Why a start failed.
#[derive(Debug)]
enum Failure {
    PortTaken,
    Exited(String),
    TimedOut(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::PortTaken => write!(f, "its port was taken"),
            Self::Exited(log) => write!(f, "it exited while starting:\n{log}"),
            Self::TimedOut(log) => {
                write!(
                    f,
                    "it did not accept connections within {START_LIMIT:?}:\n{log}"
                )
            }
        }
    }
}

/// The directory of PostgreSQL's programs and the user to run them as (when the tests run
/// as root), or why PostgreSQL cannot run here.
fn installation() -> Result<(PathBuf, Option<Owner>), String> {
    let bin = match std::env::var_os("ARCA_POSTGRES_BIN").filter(|v| !v.is_empty()) {
        Some(bin) => PathBuf::from(bin),
        None => newest_debian_bin()
            .ok_or_else(|| format!("no {DEBIAN_LIB}/<version>/bin/postgres is installed"))?,
    };
    for program in ["initdb", "postgres", "pg_isready", "createdb"] {
        if !bin.join(program).is_file() {
            return Err(format!("{} is missing", bin.join(program).display()));
        }
    }
    if !rustix::process::geteuid().is_root() {
        return Ok((bin, None));
    }
    let name = CString::new("postgres").expect("no NUL");
    // SAFETY: getpwnam with a valid C string; the fields are copied before any other call.
    let owner = unsafe {
        let pw = libc::getpwnam(name.as_ptr());
        (!pw.is_null()).then(|| Owner {
            uid: (*pw).pw_uid,
            gid: (*pw).pw_gid,
        })
    };
    match owner {
        Some(owner) => Ok((bin, Some(owner))),
        None => Err(
            "the tests run as root and there is no `postgres` system user to run \
                     PostgreSQL as (PostgreSQL refuses root)"
                .into(),
        ),
    }
}

/// `/usr/lib/postgresql/<newest version>/bin`, if one has `postgres`.
fn newest_debian_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir(DEBIAN_LIB)
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// A port of 127.0.0.1 that was free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Runs `command` (a PostgreSQL program, `what` in messages) to its end and returns its
/// output; a panic with what it printed if it cannot run or fails.
fn succeed(command: &mut Command, what: &str) -> std::process::Output {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what} cannot run: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
