//! The real Fedora 6 (`fcrepo-webapp` 6.1.0 on `jetty-runner`, Java 17) as a child process on
//! 127.0.0.1, for tests that compare arca's answers with Fedora's.
//!
//! Where the war, the jetty-runner jar and `java` come from: `$ARCA_FEDORA_WAR`,
//! `$ARCA_JETTY_RUNNER` (`scripts/test` downloads both once into `~/.cache/arca-fedora/` and
//! sets them), else that cache directory, and `java` on `PATH`. When something is missing,
//! [`Fedora::start`] prints why and returns `None`, unless `ARCA_REQUIRE_FEDORA=1`, which
//! turns the skip into a failure (as `ARCA_REQUIRE_VALIDATOR` does for ocfl-py).

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Basic credentials of the realm file written for Fedora.
pub const AUTHORIZATION: &str = "Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4="; // fedoraAdmin:fedoraAdmin

/// How long Fedora may take to answer its first request (about 15–60 s on a 2-core machine).
const START_LIMIT: Duration = Duration::from_secs(240);

/// A running Fedora 6; the JVM is killed when this is dropped (also on a panic).
pub struct Fedora {
    child: Option<Child>,
    dir: tempfile::TempDir,
    /// `http://127.0.0.1:PORT/fcrepo/rest` (no trailing slash).
    pub base: String,
    /// The STOMP port of Fedora's embedded ActiveMQ (`fcrepo.dynamic.stomp.port`), where
    /// its events go to `/topic/fedora`.
    pub stomp_port: u16,
    /// How long the start took, until the first 200 of `GET /fcrepo/rest/`.
    pub started_in: Duration,
}

/// The war and the jetty-runner jar, or why they cannot be used.
fn artifacts() -> Result<(PathBuf, PathBuf), String> {
    let cache = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache/arca-fedora"))
        .unwrap_or_default();
    let pick = |var: &str, file: &str| -> Result<PathBuf, String> {
        let path = match std::env::var_os(var).filter(|v| !v.is_empty()) {
            Some(v) => PathBuf::from(v),
            None => cache.join(file),
        };
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!("{} is missing (set ${var})", path.display()))
        }
    };
    let war = pick("ARCA_FEDORA_WAR", "fcrepo-webapp-6.1.0.war")?;
    let runner = pick("ARCA_JETTY_RUNNER", "jetty-runner-9.4.53.v20231009.jar")?;
    match Command::new("java").arg("-version").output() {
        Ok(out) if out.status.success() => Ok((war, runner)),
        Ok(out) => Err(format!("`java -version` failed: {}", out.status)),
        Err(e) => Err(format!("`java` cannot run: {e}")),
    }
}

/// Three distinct free ports on 127.0.0.1 (HTTP, JMS, STOMP), held until all are chosen.
fn free_ports() -> [u16; 3] {
    let ls: Vec<TcpListener> = (0..3)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    [0, 1, 2].map(|i| ls[i].local_addr().unwrap().port())
}

impl Fedora {
    /// Starts Fedora with an empty `fcrepo.home` and waits until it answers. `None` (after
    /// printing why) if it cannot run here and `ARCA_REQUIRE_FEDORA` is not `1`.
    pub async fn start() -> Option<Self> {
        Self::start_with(None, &[]).await
    }

    /// [`start`](Self::start) with a copy of the OCFL root `ocfl_root` as its storage (an
    /// empty database: Fedora rebuilds its index from the root first) and extra system
    /// properties `(name, value)`, e.g. `fcrepo.persistence.defaultDigestAlgorithm`.
    pub async fn start_with(ocfl_root: Option<&Path>, properties: &[(&str, &str)]) -> Option<Self> {
        Self::start_with_users(ocfl_root, properties, &[]).await
    }

    /// [`start_with`](Self::start_with) with more users `(name, password)` in the realm,
    /// beside `fedoraAdmin`: ordinary users (role `fedoraUser`), whom WebAC decides for.
    pub async fn start_with_users(
        ocfl_root: Option<&Path>,
        properties: &[(&str, &str)],
        users: &[(&str, &str)],
    ) -> Option<Self> {
        let (war, runner) = match artifacts() {
            Ok(found) => found,
            Err(why) => {
                let msg = format!(
                    "{why}. `scripts/test` downloads \
                     org.fcrepo:fcrepo-webapp:6.1.0:war and \
                     org.eclipse.jetty:jetty-runner:9.4.53.v20231009 into ~/.cache/arca-fedora \
                     (and needs Java 17)"
                );
                if std::env::var("ARCA_REQUIRE_FEDORA").as_deref() == Ok("1") {
                    panic!("ARCA_REQUIRE_FEDORA=1 but {msg}");
                }
                eprintln!("SKIPPED: comparison with Fedora 6: {msg}");
                return None;
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let realm = dir.path().join("realm.properties");
        let mut realm_users = String::from("fedoraAdmin: fedoraAdmin,fedoraAdmin\n");
        for (name, password) in users {
            realm_users.push_str(&format!("{name}: {password},fedoraUser\n"));
        }
        fs::write(&realm, realm_users).unwrap();
        let jetty = dir.path().join("jetty-realm.xml");
        fs::write(
            &jetty,
            format!(
                r#"<?xml version="1.0"?>
<!DOCTYPE Configure PUBLIC "-//Jetty//Configure//EN" "http://www.eclipse.org/jetty/configure_9_3.dtd">
<Configure id="Server" class="org.eclipse.jetty.server.Server">
  <Call name="addBean">
    <Arg>
      <New class="org.eclipse.jetty.security.HashLoginService">
        <Set name="name">fcrepo</Set>
        <Set name="config">{}</Set>
      </New>
    </Arg>
  </Call>
</Configure>
"#,
                realm.display()
            ),
        )
        .unwrap();
        if let Some(root) = ocfl_root {
            super::copy_tree(root, &dir.path().join("home/data/ocfl-root"));
        }
        let [port, jms, stomp] = free_ports();
        let log = fs::File::create(dir.path().join("fedora.log")).unwrap();
        let started = Instant::now();
        let child = Command::new("java")
            .arg("-Xmx1g")
            .args(properties.iter().map(|(k, v)| format!("-D{k}={v}")))
            .arg(format!(
                "-Dfcrepo.home={}",
                dir.path().join("home").display()
            ))
            .arg("-Dfcrepo.autoversioning.enabled=true")
            .arg(format!("-Dfcrepo.dynamic.jms.port={jms}"))
            .arg(format!("-Dfcrepo.dynamic.stomp.port={stomp}"))
            .arg(format!("-Djava.io.tmpdir={}", dir.path().display()))
            .arg("-jar")
            .arg(&runner)
            .arg("--config")
            .arg(&jetty)
            .arg("--port")
            .arg(port.to_string())
            .arg("--path")
            .arg("/fcrepo")
            .arg(&war)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("java cannot start: {e}"));
        let mut fedora = Self {
            child: Some(child),
            dir,
            base: format!("http://127.0.0.1:{port}/fcrepo/rest"),
            stomp_port: stomp,
            started_in: Duration::ZERO,
        };
        let http = super::Http::new();
        let root = format!("{}/", fedora.base);
        loop {
            if let Some(status) = fedora.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("Fedora exited with {status}:\n{}", fedora.log_tail());
            }
            if started.elapsed() > START_LIMIT {
                panic!(
                    "Fedora did not answer within {START_LIMIT:?}:\n{}",
                    fedora.log_tail()
                );
            }
            let auth = [("authorization", AUTHORIZATION)];
            if let Ok(r) = http
                .try_request(hyper::Method::GET, &root, &auth, bytes::Bytes::new())
                .await
            {
                if r.status == hyper::StatusCode::OK {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        fedora.started_in = started.elapsed();
        Some(fedora)
    }

    /// Fedora's OCFL storage root.
    pub fn ocfl_root(&self) -> PathBuf {
        self.dir.path().join("home/data/ocfl-root")
    }

    /// The last lines of Fedora's log.
    pub fn log_tail(&self) -> String {
        let log = fs::read_to_string(self.dir.path().join("fedora.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }

    /// Stops the JVM (SIGTERM, SIGKILL after 30 s) and keeps its files for
    /// [`ocfl_root`](Self::ocfl_root).
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_child(&child),
            rustix::process::Signal::TERM,
        );
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if child.try_wait().unwrap().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The temporary directory holding `fcrepo.home` and the log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Fedora {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Turns the OCFL 1.1 root at `root` into the OCFL 1.0 root Fedora 6.1 can open: the
/// declarations, and the inventories' `type` with their sidecars (in each inventory's own
/// algorithm).
pub fn declare_ocfl_1_0(root: &Path) {
    fs::remove_file(root.join("0=ocfl_1.1")).unwrap();
    fs::write(root.join("0=ocfl_1.0"), "ocfl_1.0\n").unwrap();
    for dir in super::object_dirs(root) {
        fs::remove_file(dir.join("0=ocfl_object_1.1")).unwrap();
        fs::write(dir.join("0=ocfl_object_1.0"), "ocfl_object_1.0\n").unwrap();
        for file in super::relative_files(&dir) {
            if !file.ends_with("inventory.json") {
                continue;
            }
            let path = dir.join(&file);
            let (text, algorithm, sidecar) =
                inventory_as_ocfl_1_0(&fs::read_to_string(&path).unwrap());
            fs::write(&path, &text).unwrap();
            fs::write(
                path.with_file_name(format!("inventory.json.{algorithm}")),
                sidecar,
            )
            .unwrap();
        }
    }
}

/// An OCFL 1.1 inventory's text as OCFL 1.0 (its `type`), with its digest algorithm and the
/// text of its new sidecar.
pub fn inventory_as_ocfl_1_0(text: &str) -> (String, String, String) {
    let text = text.replace(
        "\"type\":\"https://ocfl.io/1.1/spec/#inventory\"",
        "\"type\":\"https://ocfl.io/1.0/spec/#inventory\"",
    );
    let algorithm = serde_json::from_str::<serde_json::Value>(&text).unwrap()["digestAlgorithm"]
        .as_str()
        .unwrap()
        .to_string();
    let sidecar = format!(
        "{}  inventory.json\n",
        super::digest_hex(&algorithm, text.as_bytes())
    );
    (text, algorithm, sidecar)
}
