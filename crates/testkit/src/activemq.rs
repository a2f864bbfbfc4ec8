//! A real Apache ActiveMQ 5 broker as a private child process on 127.0.0.1, for tests of
//! STOMP delivery.
//!
//! It runs Debian's `activemq` package (`/usr/share/activemq`, or `$ARCA_ACTIVEMQ_HOME`) with
//! `java` from `PATH`, on a temporary directory of its own: an `activemq.xml` with a STOMP
//! and an OpenWire connector on free ports, KahaDB in the directory, no JMX, no web
//! console, and the log in `activemq.log`. When the package or `java` is missing,
//! [`ActiveMq::start`] prints why and returns `None`, unless `ARCA_REQUIRE_ACTIVEMQ=1`
//! (which `scripts/test` sets), which turns the skip into a failure.
//!
//! All methods block the calling thread (a start takes a few seconds). The JVM is killed when
//! the [`ActiveMq`] is dropped, and, on Linux, also when the test process ends in any other
//! way, so that no broker outlives its tests.

use std::fs;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

/// Where Debian's `activemq` package puts the broker.
const DEBIAN_HOME: &str = "/usr/share/activemq";

/// How long a start may take until the broker answers a STOMP `CONNECT` (about 1–5 s here).
const START_LIMIT: Duration = Duration::from_secs(120);

/// How long [`ActiveMq::stop`] waits after SIGTERM before it sends SIGKILL.
const STOP_LIMIT: Duration = Duration::from_secs(20);

/// How many times a start is repeated when the broker exits because its ports are not free
/// yet (right after a stop).
const BIND_ATTEMPTS: u32 = 10;

/// A user the broker accepts (see [`ActiveMq::start_with_users`]).
#[derive(Clone, Debug)]
pub struct BrokerUser {
    /// The STOMP `login`.
    pub login: String,
    /// The STOMP `passcode`.
    pub passcode: String,
}

/// A running (or stopped) private ActiveMQ broker; the JVM is killed when this is dropped,
/// and its directory removed.
pub struct ActiveMq {
    child: Option<Child>,
    home: PathBuf,
    dir: tempfile::TempDir,
    stomp_port: u16,
    openwire_port: u16,
    started_in: Duration,
}

impl ActiveMq {
    /// Starts a broker that accepts every connection and waits until its STOMP port
    /// answers a `CONNECT`. `None` (after printing why) if it cannot run here and
    /// `ARCA_REQUIRE_ACTIVEMQ` is not `1`; a panic if it is, or if the broker does not come
    /// up within 120 s (with the end of its log).
    pub fn start() -> Option<ActiveMq> {
        Self::start_with_users(&[])
    }

    /// [`start`](Self::start) with ActiveMQ's `simpleAuthenticationPlugin`: connections
    /// without a login stay allowed, a login must name one of `users` with its passcode or
    /// the broker refuses the `CONNECT` with an `ERROR` frame.
    pub fn start_with_users(users: &[BrokerUser]) -> Option<ActiveMq> {
        let home = match installation() {
            Ok(home) => home,
            Err(why) => {
                let msg = format!(
                    "{why}. Install Debian's activemq package (apt-get install \
                     --no-install-recommends activemq; scripts/test does) and Java"
                );
                if std::env::var("ARCA_REQUIRE_ACTIVEMQ").as_deref() == Ok("1") {
                    panic!("ARCA_REQUIRE_ACTIVEMQ=1 but {msg}");
                }
                eprintln!("SKIPPED: tests with a real ActiveMQ broker: {msg}");
                return None;
            }
        };
        let dir = tempfile::Builder::new()
            .prefix("arca-activemq-")
            .tempdir()
            .expect("a temporary directory for ActiveMQ");
        let [stomp_port, openwire_port] = free_ports();
        write_config(dir.path(), stomp_port, openwire_port, users)
            .expect("the ActiveMQ configuration written");
        let mut broker = ActiveMq {
            child: None,
            home,
            dir,
            stomp_port,
            openwire_port,
            started_in: Duration::ZERO,
        };
        broker.launch();
        Some(broker)
    }

    /// `stomp://127.0.0.1:PORT`.
    pub fn stomp_url(&self) -> String {
        format!("stomp://127.0.0.1:{}", self.stomp_port)
    }

    /// The port of the STOMP connector.
    pub fn stomp_port(&self) -> u16 {
        self.stomp_port
    }

    /// The port of the OpenWire connector (`tcp://127.0.0.1:PORT`).
    pub fn openwire_port(&self) -> u16 {
        self.openwire_port
    }

    /// How long the last (re)start took, until the broker answered a STOMP `CONNECT`.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// The broker's directory: `conf/activemq.xml`, `data/` (KahaDB) and `activemq.log`.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The broker's process id while it runs (to read its CPU time in benchmarks).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the broker process is running.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Stops the broker gracefully (SIGTERM; SIGKILL after 20 s) and waits until it has
    /// exited. Its data directory, with whatever persistent messages it holds, is kept for
    /// [`start_again`](Self::start_again).
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // Our own child, not yet waited for: its id is still its own.
        let _ = kill_process(Pid::from_child(&child), Signal::TERM);
        let started = Instant::now();
        while started.elapsed() < STOP_LIMIT {
            if !matches!(child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Kills the broker at once (SIGKILL), as a crash would, and waits until it is gone. The
    /// data directory is kept.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the broker again on the same ports and data directory, after
    /// [`stop`](Self::stop) or [`kill`](Self::kill) (a running broker is stopped first), and
    /// waits until it answers as [`start`](Self::start) does.
    pub fn start_again(&mut self) {
        self.stop();
        self.launch();
    }

    /// The last lines of the broker's log (its stdout and stderr, of every start).
    pub fn log_tail(&self) -> String {
        let log = fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("activemq.log")
    }

    /// The `java` command that runs this broker.
    fn command(&self) -> Command {
        let dir = self.dir.path();
        let conf = dir.join("conf");
        let mut command = Command::new("java");
        command
            .arg("-Xms64m")
            .arg("-Xmx256m")
            .arg("-XX:+UseSerialGC")
            .arg(format!("-Djava.io.tmpdir={}", dir.join("tmp").display()))
            .arg(format!(
                "-Dlog4j.configuration=file:{}",
                conf.join("log4j.properties").display()
            ))
            .arg(format!(
                "-Dlog4j2.configurationFile={}",
                conf.join("log4j2.properties").display()
            ))
            .arg(format!("-Dactivemq.home={}", self.home.display()))
            .arg(format!("-Dactivemq.base={}", dir.display()))
            .arg(format!("-Dactivemq.conf={}", conf.display()))
            .arg(format!("-Dactivemq.data={}", dir.join("data").display()))
            .arg("-jar")
            .arg(self.home.join("bin/activemq.jar"))
            .arg("start")
            .arg(format!(
                "xbean:file:{}",
                conf.join("activemq.xml").display()
            ))
            .current_dir(dir)
            .stdin(Stdio::null());
        command
    }

    /// Spawns the JVM and waits until it answers a STOMP `CONNECT`; a start that fails
    /// because a port is still taken is repeated.
    fn launch(&mut self) {
        let started = Instant::now();
        let mut attempt = 1;
        loop {
            let log = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.log_path())
                .expect("the ActiveMQ log opened");
            let _ = writeln!(&log, "==== arca testkit: start attempt {attempt}");
            let attempt_log_start = log.metadata().map_or(0, |m| m.len());
            let mut command = self.command();
            command
                .stdout(log.try_clone().expect("the ActiveMQ log shared"))
                .stderr(log);
            let child = spawn_bound_to_process(command)
                .unwrap_or_else(|e| panic!("java cannot start ActiveMQ: {e}"));
            self.child = Some(child);
            match self.await_stomp(started, attempt_log_start) {
                Ready::Yes => break,
                Ready::PortTaken if attempt < BIND_ATTEMPTS => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(500));
                }
                Ready::PortTaken | Ready::Exited => panic!(
                    "ActiveMQ exited while starting (attempt {attempt}):\n{}",
                    self.log_tail()
                ),
                Ready::TimedOut => {
                    self.kill();
                    panic!(
                        "ActiveMQ did not answer STOMP on port {} within {START_LIMIT:?}:\n{}",
                        self.stomp_port,
                        self.log_tail()
                    );
                }
            }
        }
        self.started_in = started.elapsed();
    }

    /// Polls the STOMP port until the broker answers, exits or runs out of time; the log of
    /// this attempt begins at byte `log_start`.
    fn await_stomp(&mut self, started: Instant, log_start: u64) -> Ready {
        let address = SocketAddr::from(([127, 0, 0, 1], self.stomp_port));
        loop {
            if let Some(child) = self.child.as_mut() {
                if !matches!(child.try_wait(), Ok(None)) {
                    self.child = None;
                    let log = fs::read(self.log_path()).unwrap_or_default();
                    let this_attempt = log.get(log_start as usize..).unwrap_or_default();
                    let port_taken =
                        String::from_utf8_lossy(this_attempt).contains("Address already in use");
                    return if port_taken {
                        Ready::PortTaken
                    } else {
                        Ready::Exited
                    };
                }
            }
            if started.elapsed() > START_LIMIT {
                return Ready::TimedOut;
            }
            if stomp_answers(address) {
                return Ready::Yes;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for ActiveMq {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What a start came to.
enum Ready {
    Yes,
    PortTaken,
    Exited,
    TimedOut,
}

/// The ActiveMQ installation, or why there is none that can run.
fn installation() -> Result<PathBuf, String> {
    let home = std::env::var_os("ARCA_ACTIVEMQ_HOME")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(DEBIAN_HOME), PathBuf::from);
    let jar = home.join("bin/activemq.jar");
    if !jar.is_file() {
        return Err(format!("{} is missing", jar.display()));
    }
    match Command::new("java").arg("-version").output() {
        Ok(out) if out.status.success() => Ok(home),
        Ok(out) => Err(format!("`java -version` failed: {}", out.status)),
        Err(e) => Err(format!("`java` cannot run: {e}")),
    }
}

/// Two distinct free ports on 127.0.0.1, held until both are chosen.
fn free_ports() -> [u16; 2] {
    let listeners = [0, 1].map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"));
    listeners.map(|l| l.local_addr().expect("a bound port").port())
}

/// Whether a STOMP `CONNECT` on `address` is answered with `CONNECTED`.
fn stomp_answers(address: SocketAddr) -> bool {
    let attempt = || -> io::Result<bool> {
        let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(1))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        stream.write_all(b"CONNECT\naccept-version:1.2\nhost:127.0.0.1\n\n\0")?;
        let mut answer = Vec::new();
        let mut chunk = [0u8; 512];
        while !answer.contains(&0) && answer.len() < 64 * 1024 {
            match stream.read(&mut chunk)? {
                0 => break,
                n => answer.extend_from_slice(&chunk[..n]),
            }
        }
        let connected = answer.starts_with(b"CONNECTED");
        if connected {
            stream.write_all(b"DISCONNECT\n\n\0")?;
        }
        let _ = stream.shutdown(Shutdown::Both);
        Ok(connected)
    };
    attempt().unwrap_or(false)
}

/// Spawns `command` from a thread that lives as long as the process. On Linux the child is
/// asked (`PR_SET_PDEATHSIG`) to be killed when that thread ends, which is when the test
/// process ends, however it ends: a broker (or database) must not outlive its tests. Code
/// that `command` already runs before `exec` (`pre_exec`) runs first, so a change of user
/// there does not clear the request.
pub(crate) fn spawn_bound_to_process(mut command: Command) -> io::Result<Child> {
    type Request = (Command, mpsc::Sender<io::Result<Child>>);
    static SPAWNER: OnceLock<mpsc::Sender<Request>> = OnceLock::new();

    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let parent = std::process::id();
        // SAFETY: only async-signal-safe calls (prctl, getppid) between fork and exec.
        unsafe {
            command.pre_exec(move || {
                rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
                let ppid = rustix::process::getppid().map(|p| p.as_raw_nonzero().get());
                if ppid.and_then(|p| u32::try_from(p).ok()) != Some(parent) {
                    return Err(io::Error::other("the test process ended during the start"));
                }
                Ok(())
            });
        }
    }

    let spawner = SPAWNER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("testkit-spawner".into())
            .spawn(move || {
                for (mut command, reply) in incoming {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("the testkit spawner thread");
        requests
    });
    let (reply, answer) = mpsc::channel();
    spawner
        .send((command, reply))
        .map_err(|_| io::Error::other("the testkit spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the testkit spawner thread is gone"))?
}

/// Writes `conf/activemq.xml` and the logging configuration, and makes `data/` and `tmp/`.
fn write_config(
    dir: &Path,
    stomp_port: u16,
    openwire_port: u16,
    users: &[BrokerUser],
) -> io::Result<()> {
    let conf = dir.join("conf");
    fs::create_dir_all(&conf)?;
    fs::create_dir_all(dir.join("data"))?;
    fs::create_dir_all(dir.join("tmp"))?;
    let data = xml_escape(&dir.join("data").display().to_string());
    let plugins = if users.is_empty() {
        String::new()
    } else {
        let users: String = users
            .iter()
            .map(|u| {
                format!(
                    "\n          <authenticationUser username=\"{}\" password=\"{}\" groups=\"users\"/>",
                    xml_escape(&u.login),
                    xml_escape(&u.passcode)
                )
            })
            .collect();
        format!(
            r#"
    <plugins>
      <simpleAuthenticationPlugin anonymousAccessAllowed="true">
        <users>{users}
        </users>
      </simpleAuthenticationPlugin>
    </plugins>"#
        )
    };
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!-- A private broker for arca's tests, written by arca-testkit. -->
<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans-2.0.xsd
                           http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="arca-test" useJmx="false"
          persistent="true" dataDirectory="{data}" advisorySupport="false" schedulerSupport="false">{plugins}
    <persistenceAdapter>
      <kahaDB directory="{data}/kahadb"/>
    </persistenceAdapter>
    <systemUsage>
      <systemUsage>
        <memoryUsage><memoryUsage percentOfJvmHeap="50"/></memoryUsage>
        <storeUsage><storeUsage limit="1 gb"/></storeUsage>
        <tempUsage><tempUsage limit="512 mb"/></tempUsage>
      </systemUsage>
    </systemUsage>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:{stomp_port}"/>
      <transportConnector name="openwire" uri="tcp://127.0.0.1:{openwire_port}"/>
    </transportConnectors>
  </broker>
</beans>
"#
    );
    fs::write(conf.join("activemq.xml"), xml)?;
    // Debian's package logs through log4j 1.2, upstream's through log4j 2: configure both
    // to write to the console, which is the log file.
    fs::write(
        conf.join("log4j.properties"),
        "log4j.rootLogger=INFO, console\n\
         log4j.appender.console=org.apache.log4j.ConsoleAppender\n\
         log4j.appender.console.layout=org.apache.log4j.PatternLayout\n\
         log4j.appender.console.layout.ConversionPattern=%d{HH:mm:ss,SSS} %-5p %c{1} - %m%n\n\
         log4j.logger.org.springframework=WARN\n\
         log4j.logger.org.apache.xbean=WARN\n",
    )?;
    fs::write(
        conf.join("log4j2.properties"),
        "rootLogger.level=INFO\n\
         rootLogger.appenderRef.console.ref=Console\n\
         appender.console.type=Console\n\
         appender.console.name=Console\n\
         appender.console.layout.type=PatternLayout\n\
         appender.console.layout.pattern=%d{HH:mm:ss,SSS} %-5p %c{1} - %m%n\n\
         logger.spring.name=org.springframework\n\
         logger.spring.level=WARN\n\
         logger.xbean.name=org.apache.xbean\n\
         logger.xbean.level=WARN\n",
    )?;
    Ok(())
}

/// `text` as an XML attribute value.
fn xml_escape(text: &str) -> String {
    quick_xml::escape::escape(text).into_owned()
}
