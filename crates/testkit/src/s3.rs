//! A real S3-compatible server, MinIO, as a private child process on 127.0.0.1, for tests
//! of the S3 store.
//!
//! It runs the `minio` binary of `$ARCA_MINIO`, else `~/.cache/arca-minio/minio` (where
//! `scripts/test` builds it from the Go module proxy with `go install`), as
//! `minio server <dir>/data` with its S3 API and its console on free ports of 127.0.0.1,
//! the root user [`ROOT_USER`] / [`ROOT_PASSWORD`], and the bucket [`BUCKET`], made as a
//! top-level directory of the data directory before the first start (MinIO serves such a
//! directory as a bucket). When the binary is missing, [`Minio::start`] prints why
//! (`NOT RUN`) and returns `None`, unless `ARCA_REQUIRE_S3=1` (which `scripts/test` sets),
//! which turns the skip into a failure.
//!
//! Tests share one server per test process ([`Minio::shared`]; give each test a key prefix
//! of its own), or start one of their own ([`Minio::start`]) to stop, kill and start it
//! again on the same port and data. All methods block the calling thread. The server is
//! killed when the [`Minio`] is dropped (the shared one when the process exits), and, on
//! Linux, when the test process ends in any other way.

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

use crate::activemq::spawn_bound_to_process;

/// The root user (the S3 access key id) of every test server.
pub const ROOT_USER: &str = "arca-test-root";

/// The root user's password (the S3 secret access key).
pub const ROOT_PASSWORD: &str = "arca-test-root-secret";

/// The bucket every test server has.
pub const BUCKET: &str = "arca-test";

/// The region MinIO answers for unless configured otherwise.
pub const REGION: &str = "us-east-1";

/// How long a start may take until the server reports itself live (about 1 s here).
const START_LIMIT: Duration = Duration::from_secs(60);

/// How long a stop waits after SIGTERM before it sends SIGKILL.
const STOP_LIMIT: Duration = Duration::from_secs(20);

/// How many times a first start is repeated with other ports when one was taken meanwhile.
const BIND_ATTEMPTS: u32 = 5;

/// A running (or stopped) private MinIO server; it is killed when this is dropped, and its
/// directory removed.
pub struct Minio {
    child: Mutex<Option<Child>>,
    dir: Mutex<Option<tempfile::TempDir>>,
    dir_path: PathBuf,
    binary: PathBuf,
    api_port: u16,
    console_port: u16,
}

impl Minio {
    /// Starts a server of its own over a new data directory holding the bucket
    /// [`BUCKET`], and waits until it is live. `None` (after printing why) if the binary is
    /// missing and `ARCA_REQUIRE_S3` is not `1`; a panic if it is, or if the server does
    /// not come up within 60 s (with the end of its log).
    pub fn start() -> Option<Minio> {
        let binary = match binary() {
            Ok(binary) => binary,
            Err(why) => {
                let msg = format!(
                    "{why}. Build it with `GOBIN=$HOME/.cache/arca-minio go install \
                     github.com/minio/minio@{MINIO_VERSION}` (scripts/test does), or point \
                     ARCA_MINIO at a minio binary"
                );
                if std::env::var("ARCA_REQUIRE_S3").as_deref() == Ok("1") {
                    panic!("ARCA_REQUIRE_S3=1 but {msg}");
                }
                eprintln!("NOT RUN: tests with a real S3 service (MinIO): {msg}");
                return None;
            }
        };
        let dir = tempfile::Builder::new()
            .prefix("arca-minio-")
            .tempdir()
            .expect("a temporary directory for MinIO");
        if let Err(why) = drive_has_room(dir.path()) {
            panic!("MinIO cannot be tested here: {why}");
        }
        let data = dir.path().join("data");
        fs::create_dir_all(data.join(BUCKET)).expect("the MinIO data directory and bucket");
        fs::create_dir_all(dir.path().join("certs")).expect("the MinIO certs directory");
        let mut minio = Minio {
            child: Mutex::new(None),
            dir_path: dir.path().to_path_buf(),
            dir: Mutex::new(Some(dir)),
            binary,
            api_port: 0,
            console_port: 0,
        };
        let mut attempt = 1;
        loop {
            let [api_port, console_port] = free_ports();
            match minio.launch_on(api_port, console_port) {
                Ok(()) => {
                    minio.api_port = api_port;
                    minio.console_port = console_port;
                    // As a bucket for a repository should be (arca refuses one without).
                    minio.enable_versioning(BUCKET);
                    return Some(minio);
                }
                Err(Failure::PortTaken) if attempt < BIND_ATTEMPTS => attempt += 1,
                Err(e) => panic!("MinIO did not start: {e}"),
            }
        }
    }

    /// The server every test of this process shares (started by the first caller), or
    /// `None` as [`start`](Self::start) says. It is killed and its directory removed when
    /// the process exits.
    pub fn shared() -> Option<&'static Minio> {
        static SHARED: OnceLock<Option<Minio>> = OnceLock::new();
        extern "C" fn stop_shared() {
            if let Some(Some(minio)) = SHARED.get() {
                minio.kill();
                drop(minio.dir.lock().unwrap().take());
            }
        }
        SHARED
            .get_or_init(|| {
                let minio = Minio::start()?;
                // SAFETY: registers a plain function without arguments, run once at exit.
                unsafe { libc::atexit(stop_shared) };
                Some(minio)
            })
            .as_ref()
    }

    /// `http://127.0.0.1:PORT`, the S3 API.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.api_port)
    }

    /// The port of the S3 API.
    pub fn port(&self) -> u16 {
        self.api_port
    }

    /// The port of the web console.
    pub fn console_port(&self) -> u16 {
        self.console_port
    }

    /// The server's directory: `data/` (one directory per bucket), `certs/`, `minio.log`.
    pub fn dir(&self) -> &Path {
        &self.dir_path
    }

    /// Whether the server process is running.
    pub fn is_running(&self) -> bool {
        match self.child.lock().unwrap().as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Stops the server (SIGTERM; SIGKILL after 20 s) and waits until it has exited. The
    /// data stays for [`start_again`](Self::start_again).
    pub fn stop(&self) {
        let Some(mut child) = self.child.lock().unwrap().take() else {
            return;
        };
        // Our own child, not yet waited for: its id is still its own.
        let _ = kill_process(Pid::from_child(&child), Signal::TERM);
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

    /// Starts the server again on the same ports and data (a running one is stopped
    /// first) and waits until it is live.
    pub fn start_again(&self) {
        self.stop();
        let started = Instant::now();
        loop {
            match self.launch_on(self.api_port, self.console_port) {
                Ok(()) => return,
                // The old process's sockets may linger a moment after it exited.
                Err(Failure::PortTaken) if started.elapsed() < START_LIMIT => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => panic!("MinIO did not start again: {e}"),
            }
        }
    }

    /// Creates bucket `name`, keeping the versions of replaced and deleted objects when
    /// `versioned`. A panic if the server refuses.
    pub fn create_bucket(&self, name: &str, versioned: bool) {
        let (status, answer) = self.request("PUT", &format!("/{name}"), "", b"");
        assert_eq!(status, 200, "MinIO did not create bucket {name}: {answer}");
        if versioned {
            self.enable_versioning(name);
        }
    }

    /// Turns versioning on for bucket `name`. A panic if the server refuses.
    pub fn enable_versioning(&self, name: &str) {
        let body = b"<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
                     <Status>Enabled</Status></VersioningConfiguration>";
        let (status, answer) = self.request("PUT", &format!("/{name}"), "versioning=", body);
        assert_eq!(
            status, 200,
            "MinIO did not enable versioning of {name}: {answer}"
        );
    }

    /// One request of the S3 API as the root user, sent again while the server answers 503
    /// (a server just started may be live before it takes requests), for up to
    /// [`START_LIMIT`]: the status and the answer.
    fn request(&self, method: &str, path: &str, query: &str, body: &[u8]) -> (u16, String) {
        let started = Instant::now();
        loop {
            let (status, answer) = self.request_once(method, path, query, body);
            if status != 503 || started.elapsed() > START_LIMIT {
                return (status, answer);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// One request of the S3 API as the root user (SigV4, unsigned payload), on a
    /// connection of its own: the status and the body. `query` is canonical already
    /// (`versioning=`).
    fn request_once(&self, method: &str, path: &str, query: &str, body: &[u8]) -> (u16, String) {
        use hmac::{Hmac, Mac};
        use sha2::{Digest, Sha256};
        use std::io::{Read, Write};
        type HmacSha256 = Hmac<Sha256>;
        let mac = |key: &[u8], data: &str| {
            let mut m = HmacSha256::new_from_slice(key).expect("any key length");
            m.update(data.as_bytes());
            m.finalize().into_bytes().to_vec()
        };
        let host = format!("127.0.0.1:{}", self.api_port);
        let now = time::OffsetDateTime::now_utc();
        let day = format!("{:04}{:02}{:02}", now.year(), now.month() as u8, now.day());
        let stamp = format!(
            "{day}T{:02}{:02}{:02}Z",
            now.hour(),
            now.minute(),
            now.second()
        );
        let signed = "host;x-amz-content-sha256;x-amz-date";
        let canonical = format!(
            "{method}\n{path}\n{query}\nhost:{host}\nx-amz-content-sha256:UNSIGNED-PAYLOAD\n\
             x-amz-date:{stamp}\n\n{signed}\nUNSIGNED-PAYLOAD"
        );
        let scope = format!("{day}/{REGION}/s3/aws4_request");
        let to_sign = format!(
            "AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{}",
            hex::encode(Sha256::digest(canonical.as_bytes()))
        );
        let mut key = mac(format!("AWS4{ROOT_PASSWORD}").as_bytes(), &day);
        for part in [REGION, "s3", "aws4_request"] {
            key = mac(&key, part);
        }
        let signature = hex::encode(mac(&key, &to_sign));
        let target = if query.is_empty() {
            path.to_string()
        } else {
            format!("{path}?{query}")
        };
        let head = format!(
            "{method} {target} HTTP/1.1\r\nHost: {host}\r\nx-amz-date: {stamp}\r\n\
             x-amz-content-sha256: UNSIGNED-PAYLOAD\r\nAuthorization: AWS4-HMAC-SHA256 \
             Credential={ROOT_USER}/{scope}, SignedHeaders={signed}, Signature={signature}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let mut stream = std::net::TcpStream::connect(&host).expect("MinIO accepts a connection");
        stream
            .write_all(head.as_bytes())
            .expect("the request is sent");
        stream.write_all(body).expect("the request body is sent");
        let mut answer = String::new();
        stream
            .read_to_string(&mut answer)
            .expect("MinIO answers the request");
        let status = answer
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, answer)
    }

    /// The last lines of the server's log (every start's).
    pub fn log_tail(&self) -> String {
        let log = fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    fn log_path(&self) -> PathBuf {
        self.dir_path.join("minio.log")
    }

    /// Spawns `minio server` on the ports and waits until it reports itself live.
    fn launch_on(&self, api_port: u16, console_port: u16) -> Result<(), Failure> {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("the MinIO log opened");
        let _ = writeln!(
            &log,
            "==== arca testkit: start on ports {api_port}, {console_port}"
        );
        let log_start = log.metadata().map_or(0, |m| m.len());
        let mut command = Command::new(&self.binary);
        command
            .arg("server")
            .arg(self.dir_path.join("data"))
            .arg("--address")
            .arg(format!("127.0.0.1:{api_port}"))
            .arg("--console-address")
            .arg(format!("127.0.0.1:{console_port}"))
            .arg("--certs-dir")
            .arg(self.dir_path.join("certs"))
            .env("MINIO_ROOT_USER", ROOT_USER)
            .env("MINIO_ROOT_PASSWORD", ROOT_PASSWORD)
            .env("MINIO_UPDATE", "off")
            .current_dir(&self.dir_path)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the MinIO log shared"))
            .stderr(log);
        let child =
            spawn_bound_to_process(command).unwrap_or_else(|e| panic!("minio cannot start: {e}"));
        *self.child.lock().unwrap() = Some(child);
        let address = SocketAddr::from(([127, 0, 0, 1], api_port));
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
                return Err(if this_start.contains("address already in use") {
                    Failure::PortTaken
                } else {
                    Failure::Exited(self.log_tail())
                });
            }
            if is_live(address) {
                return Ok(());
            }
            if started.elapsed() > START_LIMIT {
                self.kill();
                return Err(Failure::TimedOut(self.log_tail()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Minio {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Checks MinIO's own rule for a drive it writes to: it refuses every write
/// (`507 XMinioStorageFull`) once the free space is 1 % or less of the drive's size (the
/// size without the blocks reserved for root), so a test on such a drive would fail with
/// storage errors that are no fault of the code under test. `Err` says how full it is.
fn drive_has_room(dir: &Path) -> Result<(), String> {
    let stat = rustix::fs::statvfs(dir)
        .map_err(|e| format!("statvfs {}: {}", dir.display(), std::io::Error::from(e)))?;
    let block = stat.f_frsize;
    let reserved = stat.f_bfree.saturating_sub(stat.f_bavail);
    let size = block * stat.f_blocks.saturating_sub(reserved);
    let free = block * stat.f_bavail;
    if free <= size / 100 {
        return Err(format!(
            "the drive holding {} has {} MiB free of {} MiB, and MinIO refuses every write \
             on a drive with 1 % or less free (XMinioStorageFull); free some disk space",
            dir.display(),
            free >> 20,
            size >> 20
        ));
    }
    Ok(())
}

/// The MinIO release `scripts/test` builds (a Go pseudo-version of its repository).
pub const MINIO_VERSION: &str = "v0.0.0-20260212201848-7aac2a2c5b7c";

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
                write!(f, "it was not live within {START_LIMIT:?}:\n{log}")
            }
        }
    }
}

/// The `minio` binary, or why there is none.
fn binary() -> Result<PathBuf, String> {
    let binary = match std::env::var_os("ARCA_MINIO").filter(|v| !v.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".cache/arca-minio/minio"))
            .ok_or("neither ARCA_MINIO nor HOME is set")?,
    };
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(format!("{} is missing", binary.display()))
    }
}

/// Two distinct free ports on 127.0.0.1, held until both are chosen.
fn free_ports() -> [u16; 2] {
    let listeners = [0, 1].map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"));
    listeners.map(|l| l.local_addr().expect("a bound port").port())
}

/// Whether MinIO on `address` answers its liveness probe with 200.
fn is_live(address: SocketAddr) -> bool {
    let probe = || -> std::io::Result<bool> {
        let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(1))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        stream.write_all(
            b"GET /minio/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        )?;
        let mut answer = [0u8; 12];
        stream.read_exact(&mut answer)?;
        Ok(answer.starts_with(b"HTTP/1.1 200"))
    };
    probe().unwrap_or(false)
}
