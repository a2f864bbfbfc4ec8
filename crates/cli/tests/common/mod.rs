//! Helpers shared by the storage-level tests: the independent OCFL validator (ocfl-py),
//! structural checks of a storage root written by arca, the real `arca` binary as a child
//! process, and a small HTTP client for it.
//!
//! Each of the cli crate's test binaries (`it`, `fedora`, `activemq`, `postgres`, `s3`)
//! includes this module, and not every binary uses every helper.
#![allow(dead_code)]

pub mod fedora;
pub mod health;

use std::collections::BTreeSet;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256, Sha512};

/// The storage-root files ocfl-java writes, which arca must write byte for byte.
pub const ROOT_FILES: [&str; 3] = [
    "0=ocfl_1.1",
    "ocfl_layout.json",
    "extensions/0004-hashed-n-tuple-storage-layout/config.json",
];

/// The Fedora-written sample root (`../shared/ocfl-fedora-sample/root`).
pub fn sample_root() -> PathBuf {
    arca_testkit::shared().join("ocfl-fedora-sample/root")
}

/// Lowercase hex SHA-512.
pub fn sha512_hex(bytes: &[u8]) -> String {
    hex::encode(Sha512::digest(bytes))
}

/// Lowercase hex digest with an OCFL content algorithm (`sha512` or `sha256`), computed
/// here independently of arca's code.
pub fn digest_hex(algorithm: &str, bytes: &[u8]) -> String {
    match algorithm {
        "sha512" => sha512_hex(bytes),
        "sha256" => hex::encode(Sha256::digest(bytes)),
        other => panic!("not an OCFL content digest: {other}"),
    }
}

/// Where layout 0004 (sha256, 3 tuples of 3, full object root) puts an object, computed
/// here independently of arca's code.
pub fn object_dir(root: &Path, ocfl_id: &str) -> PathBuf {
    let hex = hex::encode(Sha256::digest(ocfl_id.as_bytes()));
    root.join(&hex[0..3])
        .join(&hex[3..6])
        .join(&hex[6..9])
        .join(&hex)
}

/// How many versions (`vN` directories) the object in `dir` has; 0 when there is none.
pub fn version_count(dir: &Path) -> usize {
    fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.len() > 1
                        && name.starts_with('v')
                        && name[1..].bytes().all(|b| b.is_ascii_digit())
                })
                .count()
        })
        .unwrap_or(0)
}

/// Every object directory (one holding `0=ocfl_object_1.1`) below `root`, sorted.
pub fn object_dirs(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        if dir.join("0=ocfl_object_1.1").is_file() {
            out.push(dir.to_path_buf());
            return;
        }
        for e in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), out);
            }
        }
    }
    let mut out = Vec::new();
    for e in fs::read_dir(root).unwrap_or_else(|e| panic!("{}: {e}", root.display())) {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() && e.file_name() != "extensions" {
            walk(&e.path(), &mut out);
        }
    }
    out.sort();
    out
}

/// Every file below `dir`, as `/`-separated paths relative to it.
pub fn relative_files(dir: &Path) -> BTreeSet<String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for e in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let e = e.unwrap();
            let path = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(base, &path, out);
            } else {
                let rel = path.strip_prefix(base).unwrap();
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.insert(parts.join("/"));
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

/// Every empty directory at or below `dir`.
pub fn empty_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries = 0;
    for e in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let e = e.unwrap();
        entries += 1;
        if e.file_type().unwrap().is_dir() {
            out.extend(empty_dirs(&e.path()));
        }
    }
    if entries == 0 {
        out.push(dir.to_path_buf());
    }
    out
}

/// The three root-level files are byte-identical to those of the Fedora-written sample.
pub fn assert_root_files_match_sample(root: &Path) {
    let sample = sample_root();
    for f in ROOT_FILES {
        let ours = fs::read(root.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        let theirs = fs::read(sample.join(f)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs),
            "{f} differs from the one ocfl-java writes"
        );
    }
    let extensions: Vec<String> = fs::read_dir(root.join("extensions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        extensions,
        ["0004-hashed-n-tuple-storage-layout"],
        "the root must hold no other extension (ocfl-java refuses unknown ones)"
    );
}

/// `staging/` holds nothing but an empty `uploads/`.
pub fn assert_staging_clean(data: &Path) {
    let staging = data.join("staging");
    let entries: Vec<String> = fs::read_dir(&staging)
        .unwrap_or_else(|e| panic!("{}: {e}", staging.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        entries,
        ["uploads"],
        "staging/ must hold nothing but uploads/"
    );
    let uploads: Vec<PathBuf> = fs::read_dir(staging.join("uploads"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        uploads.is_empty(),
        "staging/uploads/ must be empty: {uploads:?}"
    );
}

/// Structural checks of a storage root that ocfl-py cannot make (it validates objects one
/// at a time): no empty directories anywhere, no stray files between the root and the
/// object roots, every object at its layout-0004 path, and per object: version directories
/// v1..vN without gaps, every inventory matching its sidecar (`inventory.json.<algorithm>`
/// holding `<digest>  inventory.json\n`, with the inventory's own `digestAlgorithm`), and
/// the root inventory byte-identical to the newest `vN/inventory.json`.
/// Returns the object directories.
pub fn check_storage(root: &Path) -> Vec<PathBuf> {
    let empty = empty_dirs(root);
    assert!(
        empty.is_empty(),
        "empty directories in the storage root: {empty:?}"
    );
    let objects = object_dirs(root);
    // No stray files in the hierarchy between the root and the objects (E072, E084).
    fn hierarchy_files(dir: &Path, out: &mut Vec<PathBuf>) {
        if dir.join("0=ocfl_object_1.1").is_file() {
            return;
        }
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                hierarchy_files(&e.path(), out);
            } else {
                out.push(e.path());
            }
        }
    }
    let mut stray = Vec::new();
    for e in fs::read_dir(root).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() && e.file_name() != "extensions" {
            hierarchy_files(&e.path(), &mut stray);
        }
    }
    assert!(stray.is_empty(), "stray files in the hierarchy: {stray:?}");
    for dir in &objects {
        check_object(root, dir);
    }
    objects
}

/// The per-object checks of [`check_storage`].
pub fn check_object(root: &Path, dir: &Path) {
    let inv_bytes = fs::read(dir.join("inventory.json"))
        .unwrap_or_else(|e| panic!("{}: no inventory: {e}", dir.display()));
    let inv: serde_json::Value = serde_json::from_slice(&inv_bytes)
        .unwrap_or_else(|e| panic!("{}: bad inventory: {e}", dir.display()));
    let id = inv["id"].as_str().expect("inventory id");
    assert_eq!(
        object_dir(root, id),
        dir,
        "object {id} is not at its layout-0004 path"
    );
    let head = inv["head"].as_str().expect("head");
    let n: u32 = head[1..].parse().expect("unpadded head");
    let mut versions: Vec<u32> = fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_prefix('v').and_then(|v| v.parse().ok())
        })
        .collect();
    versions.sort_unstable();
    assert_eq!(
        versions,
        (1..=n).collect::<Vec<_>>(),
        "{id}: version directories do not run v1..{head}"
    );
    assert_sidecar(dir, &inv_bytes);
    let newest = fs::read(dir.join(head).join("inventory.json"))
        .unwrap_or_else(|e| panic!("{id}: no {head}/inventory.json: {e}"));
    assert!(
        newest == inv_bytes,
        "{id}: the root inventory differs from {head}/inventory.json"
    );
    for v in 1..=n {
        let vdir = dir.join(format!("v{v}"));
        let bytes = fs::read(vdir.join("inventory.json")).unwrap();
        assert_sidecar(&vdir, &bytes);
    }
}

fn assert_sidecar(dir: &Path, inventory: &[u8]) {
    let inv: serde_json::Value = serde_json::from_slice(inventory)
        .unwrap_or_else(|e| panic!("{}: bad inventory: {e}", dir.display()));
    let algorithm = inv["digestAlgorithm"].as_str().expect("digestAlgorithm");
    let name = format!("inventory.json.{algorithm}");
    let sidecar = fs::read_to_string(dir.join(&name))
        .unwrap_or_else(|e| panic!("{}: no {name}: {e}", dir.display()));
    assert_eq!(
        sidecar,
        format!("{}  inventory.json\n", digest_hex(algorithm, inventory)),
        "{}: the sidecar does not match inventory.json",
        dir.display()
    );
    let sidecars: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("inventory.json."))
        .collect();
    assert_eq!(
        sidecars,
        [name],
        "{}: one sidecar, for its algorithm",
        dir.display()
    );
}

pub use arca_testkit::ocfl_validator;

/// Validates every object below `root` with ocfl-py (objects one by one: it does not know
/// layout 0004), requiring each to be VALID without errors or warnings, except W004 for
/// sha256 objects (OCFL prefers sha512). Returns how many objects were validated, or `None`
/// if the validator is missing (see [`ocfl_validator`]).
pub fn validate_with_ocfl_py(root: &Path) -> Option<usize> {
    let objects = object_dirs(root);
    assert!(!objects.is_empty(), "no objects below {}", root.display());
    validate_objects_with_ocfl_py(&objects)
}

/// Validates the given object directories with ocfl-py, as [`validate_with_ocfl_py`].
pub fn validate_objects_with_ocfl_py(objects: &[PathBuf]) -> Option<usize> {
    let validator = ocfl_validator()?;
    for chunk in objects.chunks(200) {
        let out = Command::new(&validator)
            .args(chunk)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", validator.display()));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let report = format!("{stdout}{stderr}");
        assert!(
            out.status.success(),
            "ocfl-py finds invalid objects ({}):\n{report}",
            out.status
        );
        for dir in chunk {
            let line = format!("OCFL v1.1 Object at {} is VALID", dir.display());
            assert!(
                report.lines().any(|l| l == line),
                "ocfl-py did not report {} as a valid OCFL 1.1 object:\n{report}",
                dir.display()
            );
        }
        // ocfl-py names no object in its warnings: W004 may be about any sha256 object.
        let sha256 = chunk
            .iter()
            .any(|d| d.join("inventory.json.sha256").is_file());
        let complaints: Vec<&str> = report
            .lines()
            .filter(|l| l.starts_with("[E") || l.starts_with("[W"))
            .filter(|l| !(sha256 && l.starts_with("[W004]") && l.contains("uses sha256")))
            .collect();
        assert!(
            complaints.is_empty(),
            "ocfl-py reports errors or warnings:\n{report}"
        );
    }
    Some(objects.len())
}

/// The path of a resource below the REST root for an internal id (`info:fedora/a b` →
/// `/a%20b`), percent-encoding everything but unreserved characters.
pub fn url_path(id: &str) -> String {
    let rel = id.strip_prefix("info:fedora").expect("an internal id");
    let mut out = String::new();
    for b in rel.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Copies a directory tree, making the copy writable (the shared fixtures are read-only).
pub fn copy_tree(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(to).unwrap();
    fs::set_permissions(to, fs::Permissions::from_mode(0o755)).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            fs::copy(e.path(), &target).unwrap();
            fs::set_permissions(&target, fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
}

/// The real `arca` binary serving a data directory (`arca serve --listen 127.0.0.1:0`).
/// Killed when dropped.
pub struct Arca {
    child: Child,
    /// `http://127.0.0.1:PORT/rest`.
    pub base: String,
    log: Arc<Mutex<String>>,
}

impl Arca {
    /// Starts `arca serve` on `data` and waits until it listens (which is after recovery
    /// and any catalog rebuild).
    pub fn serve(data: &Path) -> Self {
        Self::serve_with(data, &[])
    }

    /// [`serve`](Self::serve) with extra environment variables (e.g. `ARCA_LIMIT_*`).
    pub fn serve_with(data: &Path, env: &[(&str, &str)]) -> Self {
        Self::serve_program(Path::new(env!("CARGO_BIN_EXE_arca")), data, env)
    }

    /// [`serve_with`](Self::serve_with) running `program` (the arca binary, perhaps under
    /// another name).
    pub fn serve_program(program: &Path, data: &Path, env: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(program);
        cmd.arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data")
            .arg(data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        scrub_env(&mut cmd);
        cmd.envs(env.iter().copied());
        let mut child = cmd.spawn().expect("arca starts");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel::<String>();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("arca listening on ") {
                    let _ = tx.send(url.trim_end_matches('/').to_string());
                }
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(base) => Self { child, base, log },
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                std::thread::sleep(Duration::from_millis(100));
                panic!(
                    "arca serve did not start on {}:\n{}",
                    data.display(),
                    log.lock().unwrap()
                );
            }
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the server wrote to stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// URL of a path below the REST root.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// SIGKILL: no shutdown code runs. Returns the whole log it wrote.
    pub fn kill(mut self) -> String {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
        // The log reader ends (dropping its handle) once it has read the last line.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while Arc::strong_count(&self.log) > 1 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.log()
    }

    /// Reads the server's log, SIGKILLs it, tells the writers to `stop` and waits (30 s at
    /// most) until every writer task has seen the server go; returns the log.
    pub async fn kill_and_join(
        self,
        stop: &std::sync::atomic::AtomicBool,
        writers: Vec<tokio::task::JoinHandle<()>>,
    ) -> String {
        let log = self.log();
        self.kill();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for w in writers {
            tokio::time::timeout(Duration::from_secs(30), w)
                .await
                .expect("writers end once the server is gone")
                .expect("writer task");
        }
        log
    }

    /// SIGTERM, then waits for a clean exit.
    pub fn stop(self) {
        self.stop_within(Duration::from_secs(30));
    }

    /// SIGTERM, then waits at most `limit` for a clean exit; returns how long it took.
    pub fn stop_within(mut self, limit: Duration) -> Duration {
        let started = std::time::Instant::now();
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
        while started.elapsed() < limit {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "arca exited with {status}:\n{}",
                    self.log()
                );
                return started.elapsed();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "arca did not stop within {limit:?} of SIGTERM:\n{}",
            self.log()
        );
    }
}

impl Drop for Arca {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            // A failing test shows what the server said (its stderr is otherwise lost).
            eprintln!(
                "--- arca's log ---\n{}--- end of arca's log ---",
                self.log()
            );
        }
    }
}

/// Keeps the caller's `ARCA_*` settings away from a spawned `arca`.
pub fn scrub_env(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("ARCA_") {
            cmd.env_remove(&k);
        }
    }
    cmd.env("ARCA_LOG", "info");
}

/// What a client sees of each memento a link-format TimeMap lists, keyed by the memento's
/// URL: status, `Memento-Datetime`, `Content-Type`, and the sorted N-Triples (or the bytes'
/// sha512). `norm` rewrites what differs between servers (their base URLs) in keys and lines.
#[allow(dead_code)]
pub async fn memento_answers(
    http: &Http,
    link_format: &str,
    norm: impl Fn(&str) -> String,
) -> Vec<(String, Vec<String>)> {
    let mementos: Vec<String> = link_format
        .lines()
        .filter(|l| l.contains("rel=\"memento\""))
        .map(|l| l[1..l.find('>').unwrap()].to_string())
        .collect();
    let mut out = Vec::new();
    for m in mementos {
        let r = http.get(&m, &[("accept", "application/n-triples")]).await;
        let ct = r.header("content-type").unwrap_or_default().to_string();
        let mut seen = vec![
            format!("status {}", r.status),
            format!(
                "memento-datetime {}",
                r.header("memento-datetime").unwrap_or_default()
            ),
            format!("content-type {ct}"),
        ];
        if ct.starts_with("application/n-triples") {
            let mut lines: Vec<String> = r.text().lines().map(&norm).collect();
            lines.sort();
            seen.extend(lines);
        } else {
            seen.push(format!("sha512 {}", sha512_hex(&r.body)));
        }
        out.push((norm(&m), seen));
    }
    out
}

/// The shared test HTTP client (not every test file uses it).
#[allow(unused_imports)]
pub use arca_testkit::{Http, Reply};

/// One request of a script sent to arca and to Fedora alike.
pub struct Step {
    /// The method.
    pub method: hyper::Method,
    /// The path below the REST root.
    pub path: &'static str,
    /// Request headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: &'static str,
}

/// A [`Step`].
pub fn step(
    method: hyper::Method,
    path: &'static str,
    headers: &[(&'static str, &str)],
    body: &'static str,
) -> Step {
    Step {
        method,
        path,
        headers: headers.iter().map(|(k, v)| (*k, v.to_string())).collect(),
        body,
    }
}

impl Arca {
    /// The last sequence number of the event log (`fcr:events`).
    pub async fn last_event(&self, http: &Http) -> i64 {
        let r = http.get(&self.url("/fcr:events?limit=1"), &[]).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let page: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        page["last"].as_i64().expect("last")
    }

    /// The events after `since` (at most 1,000): sequence number and body without `seq`.
    pub async fn events_after(&self, http: &Http, since: i64) -> Vec<(i64, serde_json::Value)> {
        let r = http
            .get(
                &self.url(&format!("/fcr:events?since={since}&limit=1000")),
                &[],
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        let page: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        page["orderedItems"]
            .as_array()
            .expect("orderedItems")
            .iter()
            .map(|e| {
                let mut e = e.clone();
                let seq = e["seq"].as_i64().expect("seq");
                e.as_object_mut().unwrap().remove("seq");
                (seq, e)
            })
            .collect()
    }
}

/// The S3 store a server with `minio`'s bucket and key prefix `prefix` uses.
pub fn s3_store(minio: &arca_testkit::s3::Minio, prefix: &str) -> arca_storage::S3Storage {
    use arca_testkit::s3::{BUCKET, REGION, ROOT_PASSWORD, ROOT_USER};
    arca_storage::S3Storage::open_with_credentials(
        arca_storage::S3Settings {
            endpoint: Some(minio.endpoint()),
            bucket: BUCKET.to_string(),
            prefix: prefix.to_string(),
            region: REGION.to_string(),
            allow_http: true,
        },
        arca_storage::S3Credentials {
            access_key_id: ROOT_USER.to_string(),
            secret_access_key: ROOT_PASSWORD.to_string(),
            session_token: None,
        },
    )
    .expect("the bucket opens")
}

/// Copies every file of the root in the bucket into `to`, as a local root (for ocfl-py);
/// returns their keys.
pub fn download(store: &arca_storage::S3Storage, to: &Path) -> Vec<String> {
    use arca_storage::ObjectStorage;
    let files = store.list("").expect("the root lists");
    for f in &files {
        let target = to.join(&f.key);
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::write(&target, store.read(&f.key).unwrap().bytes).unwrap();
    }
    files.into_iter().map(|f| f.key).collect()
}
