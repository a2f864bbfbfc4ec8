//! `arca fixity` on a root a real `arca serve` wrote: a few thousand objects audit clean;
//! a flipped bit, a truncated file, a deleted file, a replaced sidecar and a deleted object
//! are each found exactly, reported (exit status 1 without a copy) and repaired from a
//! replica (exit status 0), after which ocfl-py finds every object valid; a SIGKILL in the
//! middle of an audit and of a repair; the background audit of `arca serve`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use serde_json::Value;

use crate::common::{self, Arca, Http};

/// `arca fixity --data DATA ARGS…` with `env`.
fn fixity(data: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    fixity_command(data, args, env)
        .output()
        .expect("arca fixity runs")
}

fn fixity_command(data: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arca"));
    cmd.arg("fixity").arg("--data").arg(data).args(args);
    common::scrub_env(&mut cmd);
    cmd.env("ARCA_LOG", "warn").envs(env.iter().copied());
    cmd
}

fn describe(out: &Output) -> String {
    format!(
        "{}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The report a run wrote with `--report`.
fn read_report(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).expect("the report")).expect("JSON")
}

/// The findings of a report as (kind, object, content_path, repaired), sorted.
fn findings(report: &Value) -> Vec<(String, String, Option<String>, bool)> {
    let mut out: Vec<_> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_string(),
                f["object"].as_str().unwrap().to_string(),
                f["content_path"].as_str().map(str::to_string),
                f["repaired"].as_bool().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

async fn put(http: &Http, arca: &Arca, path: &str, content_type: &str, body: Vec<u8>) {
    let r = http
        .request(
            Method::PUT,
            &arca.url(path),
            &[("content-type", content_type)],
            body,
        )
        .await;
    assert!(
        r.status == StatusCode::CREATED || r.status == StatusCode::NO_CONTENT,
        "PUT {path}: {} {}",
        r.status,
        r.text()
    );
}

/// Writes `count` binaries below `/bulk` (each its own object), 16 at a time.
async fn bulk(arca: &Arca, count: usize) {
    let http = Http::new();
    put(&http, arca, "/bulk", "text/turtle", Vec::new()).await;
    let semaphore = std::sync::Arc::new(tokio::sync::Semaphore::new(16));
    let mut tasks = Vec::new();
    for i in 0..count {
        let permit = semaphore.clone().acquire_owned().await.unwrap();
        let http = http.clone();
        let url = arca.url(&format!("/bulk/b{i}"));
        tasks.push(tokio::spawn(async move {
            let body = format!("binary {i}\n").repeat(1 + i % 7).into_bytes();
            let r = http
                .request(
                    Method::PUT,
                    &url,
                    &[("content-type", "application/octet-stream")],
                    body,
                )
                .await;
            assert_eq!(r.status, StatusCode::CREATED, "{url}: {}", r.text());
            drop(permit);
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// Objects of several shapes: binaries with several versions, containers, a large file.
async fn shapes(arca: &Arca) {
    let http = Http::new();
    put(&http, arca, "/c", "text/turtle", Vec::new()).await;
    put(
        &http,
        arca,
        "/c/child",
        "text/turtle",
        b"<> <http://purl.org/dc/terms/title> \"a child\" .".to_vec(),
    )
    .await;
    for (name, versions) in [
        ("flip", 2),
        ("cut", 1),
        ("gone", 3),
        ("side", 1),
        ("whole", 2),
    ] {
        for v in 0..versions {
            let body = format!("{name} version {v}\n").repeat(200).into_bytes();
            put(
                &http,
                arca,
                &format!("/c/{name}"),
                "application/octet-stream",
                body,
            )
            .await;
        }
    }
    let large: Vec<u8> = (0..12u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    put(&http, arca, "/c/large", "application/octet-stream", large).await;
}

/// The object directory and root inventory of the resource at `path` (below /rest).
fn object(root: &Path, path: &str) -> (PathBuf, Value) {
    let dir = common::object_dir(root, &format!("info:fedora{path}"));
    let inventory = serde_json::from_slice(&fs::read(dir.join("inventory.json")).unwrap()).unwrap();
    (dir, inventory)
}

/// The content paths (relative to the object) of the binary at `path`'s bytes, one per
/// version that changed them, oldest first.
fn content_paths(root: &Path, path: &str) -> Vec<String> {
    let (_, inventory) = object(root, path);
    let mut paths: Vec<String> = inventory["manifest"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|v| v.as_array().unwrap().iter())
        .map(|p| p.as_str().unwrap().to_string())
        .filter(|p| !p.contains("/.fcrepo/") && !p.contains("~fcr-"))
        .collect();
    paths.sort();
    paths
}

fn flip_bit(path: &Path) {
    let mut bytes = fs::read(path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    fs::write(path, bytes).unwrap();
}

fn truncate(path: &Path) {
    let len = fs::metadata(path).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
}

fn copy_root(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

fn write_replica_config(data: &Path, replica: &Path) -> PathBuf {
    let config = data.join("fixity-test.toml");
    fs::write(
        &config,
        format!(
            "data = {:?}\n\n[[replica]]\nname = \"copy\"\npath = {:?}\n",
            data.display().to_string(),
            replica.display().to_string()
        ),
    )
    .unwrap();
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_is_found_reported_and_repaired_from_a_replica() {
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve(data.path());
    shapes(&arca).await;
    bulk(&arca, 2000).await;
    arca.stop();
    let root = data.path().join("ocfl-root");
    let objects = common::object_dirs(&root).len();
    assert!(objects > 2000, "{objects} objects");

    // An undamaged root: no finding, exit status 0.
    let report_file = data.path().join("report.json");
    let report_arg = report_file.to_str().unwrap();
    let out = fixity(data.path(), &["--report", report_arg], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let report = read_report(&report_file);
    assert_eq!(findings(&report), vec![], "no false positives");
    assert_eq!(report["objects"], objects as u64);
    assert_eq!(report["complete"], true);
    assert!(report["bytes"].as_u64().unwrap() > 12 << 20);

    // A replica: a copy of the undamaged root, in the same layout.
    let replica = data.path().join("replica");
    copy_root(&root, &replica);

    // The damage.
    let id = |path: &str| format!("info:fedora{path}");
    let mut expected = BTreeSet::new();
    let (flip_dir, _) = object(&root, "/c/flip");
    let flip = content_paths(&root, "/c/flip");
    let newest = flip.last().unwrap().clone();
    flip_bit(&flip_dir.join(&newest));
    expected.insert(("content_digest", id("/c/flip"), Some(newest)));
    let (cut_dir, _) = object(&root, "/c/cut");
    let cut = content_paths(&root, "/c/cut");
    truncate(&cut_dir.join(&cut[0]));
    expected.insert(("content_digest", id("/c/cut"), Some(cut[0].clone())));
    let (gone_dir, _) = object(&root, "/c/gone");
    let gone = content_paths(&root, "/c/gone");
    assert_eq!(gone.len(), 3, "three versions, three contents: {gone:?}");
    fs::remove_file(gone_dir.join(&gone[1])).unwrap();
    expected.insert(("content_missing", id("/c/gone"), Some(gone[1].clone())));
    let (side_dir, _) = object(&root, "/c/side");
    // Replaced (a new file renamed over it: arca links the head version's sidecar to the
    // root's, and writing into the shared file would damage both).
    let replacement = side_dir.join("sidecar.new");
    fs::write(
        &replacement,
        format!("{}  inventory.json\n", "ab".repeat(64)),
    )
    .unwrap();
    fs::rename(&replacement, side_dir.join("inventory.json.sha512")).unwrap();
    expected.insert((
        "inventory_sidecar",
        id("/c/side"),
        Some("inventory.json".into()),
    ));
    let (whole_dir, _) = object(&root, "/c/whole");
    fs::remove_dir_all(&whole_dir).unwrap();
    expected.insert(("object_missing", id("/c/whole"), None));
    let (large_dir, _) = object(&root, "/c/large");
    let large = content_paths(&root, "/c/large");
    flip_bit(&large_dir.join(&large[0]));
    expected.insert(("content_digest", id("/c/large"), Some(large[0].clone())));
    let expected: Vec<(String, String, Option<String>)> = expected
        .into_iter()
        .map(|(k, o, p)| (k.to_string(), o, p))
        .collect();
    let without_repair = |report: &Value| -> Vec<(String, String, Option<String>)> {
        findings(report)
            .into_iter()
            .map(|(k, o, p, _)| (k, o, p))
            .collect()
    };

    // Without a replica: every fault found exactly, nothing repaired, exit status 1.
    let out = fixity(data.path(), &["--report", report_arg], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let report = read_report(&report_file);
    assert_eq!(without_repair(&report), expected, "{report:#}");
    assert_eq!(report["repaired"], 0);
    assert!(!whole_dir.exists());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("DAMAGED content_digest"), "{stdout}");

    // With the replica: each one repaired, exit status 0.
    let config = write_replica_config(data.path(), &replica);
    let config_arg = config.to_str().unwrap();
    let out = fixity(
        data.path(),
        &["--config", config_arg, "--report", report_arg],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let report = read_report(&report_file);
    assert_eq!(without_repair(&report), expected, "{report:#}");
    assert!(
        findings(&report).iter().all(|f| f.3),
        "every finding repaired: {report:#}"
    );
    assert_eq!(report["repaired"], expected.len() as u64);
    assert!(whole_dir.join("inventory.json").is_file());

    // The root audits clean, its reports are kept, and ocfl-py finds every object valid.
    let out = fixity(data.path(), &["--report", report_arg], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(findings(&read_report(&report_file)), vec![]);
    let history = fs::read_dir(data.path().join("fixity/reports"))
        .unwrap()
        .count();
    assert_eq!(history, 4, "one report per run");
    common::validate_with_ocfl_py(&root);
    common::validate_with_ocfl_py(&replica);

    // The repaired repository serves the repaired bytes.
    let arca = Arca::serve(data.path());
    let http = Http::new();
    let r = http.get(&arca.url("/c/flip"), &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.text(), "flip version 1\n".repeat(200));
    let r = http.get(&arca.url("/c/whole"), &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.text(), "whole version 1\n".repeat(200));
    arca.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_and_objects_asked_for() {
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve(data.path());
    shapes(&arca).await;
    arca.stop();
    let root = data.path().join("ocfl-root");
    let (dir, _) = object(&root, "/c/flip");
    flip_bit(&dir.join(&content_paths(&root, "/c/flip")[0]));
    // Only the objects asked for (by path or id).
    let report_file = data.path().join("report.json");
    let report_arg = report_file.to_str().unwrap();
    let out = fixity(
        data.path(),
        &[
            "--objects",
            "c/cut",
            "info:fedora/c/side",
            "--report",
            report_arg,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(read_report(&report_file)["objects"], 2);
    let out = fixity(
        data.path(),
        &["--objects", "/c/flip", "--report", report_arg],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_eq!(read_report(&report_file)["objects"], 1);
    // Bad input: exit status 2 and a message, nothing written.
    let out = fixity(data.path(), &["--threads", "0"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--threads"));
    let missing = data.path().join("no-such.toml");
    let out = fixity(data.path(), &["--config", missing.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_holding_another_root_is_refused() {
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve(data.path());
    shapes(&arca).await;
    arca.stop();
    let elsewhere = data.path().join("other-root");
    fs::create_dir_all(elsewhere.join("somewhere")).unwrap();
    fs::write(elsewhere.join("0=ocfl_1.0"), "ocfl_1.0\n").unwrap();
    let config = write_replica_config(data.path(), &elsewhere);
    let out = fixity(data.path(), &["--config", config.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        !data.path().join("fixity/reports").exists()
            || fs::read_dir(data.path().join("fixity/reports"))
                .unwrap()
                .count()
                == 0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_audit_resumes_and_counts_every_object_once() {
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve(data.path());
    shapes(&arca).await;
    bulk(&arca, 300).await;
    arca.stop();
    let root = data.path().join("ocfl-root");
    let objects = common::object_dirs(&root).len() as u64;
    // Slow (1 MB/s: the root holds ~14 MB), so that it is killed in the middle.
    let mut child = fixity_command(data.path(), &["--max-mb-per-s", "1", "--threads", "2"], &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let checkpoint = data.path().join("fixity/checkpoint-primary.json");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !checkpoint.exists() {
        assert!(Instant::now() < deadline, "no checkpoint written");
        assert!(child.try_wait().unwrap().is_none(), "the audit ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    let saved: Value = serde_json::from_slice(&fs::read(&checkpoint).unwrap()).unwrap();
    let done = saved["report"]["objects"].as_u64().unwrap();
    assert!(done < objects, "killed in the middle: {done} of {objects}");
    let report_file = data.path().join("report.json");
    let out = fixity(
        data.path(),
        &["--resume", "--report", report_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let report = read_report(&report_file);
    assert_eq!(report["objects"], objects, "every object counted once");
    assert_eq!(
        report["id"], saved["report"]["id"],
        "the same run, continued"
    );
    assert_eq!(findings(&report), vec![]);
    assert!(!checkpoint.exists());
    // A corrupt checkpoint is set aside and the run starts over.
    fs::write(&checkpoint, b"{\"report\": tru").unwrap();
    let out = fixity(
        data.path(),
        &["--resume", "--report", report_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(read_report(&report_file)["objects"], objects);
    assert!(data
        .path()
        .join("fixity/checkpoint-primary.json.corrupt")
        .exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repair_killed_half_way_leaves_no_half_written_file() {
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve(data.path());
    shapes(&arca).await;
    arca.stop();
    let root = data.path().join("ocfl-root");
    let replica = data.path().join("replica");
    copy_root(&root, &replica);
    let (dir, _) = object(&root, "/c/large");
    let file = dir.join(&content_paths(&root, "/c/large")[0]);
    let good = fs::read(&file).unwrap();
    flip_bit(&file);
    let damaged = fs::read(&file).unwrap();
    let config = write_replica_config(data.path(), &replica);
    let config_arg = config.to_str().unwrap();
    let mut child = fixity_command(
        data.path(),
        &["--config", config_arg],
        &[("ARCA_TEST_REPAIR_DELAY_MS", "60000")],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    // The good copy is staged (12 MiB, read and checked) and the repair waits before
    // moving it in: killed there.
    let staging = data.path().join("fixity/staging");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let staged = fs::read_dir(&staging)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.metadata().is_ok_and(|m| m.len() == good.len() as u64));
        if staged {
            break;
        }
        assert!(Instant::now() < deadline, "no repair staged");
        assert!(child.try_wait().unwrap().is_none(), "the audit ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(fs::read(&file).unwrap(), damaged, "the file is untouched");
    let leftovers: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The next run repairs it and clears the staging directory.
    let out = fixity(data.path(), &["--config", config_arg], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(fs::read(&file).unwrap(), good);
    assert_eq!(fs::read_dir(&staging).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_background_audit_reports_damage_found_while_it_runs() {
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve_with(data.path(), &[("ARCA_FIXITY_SCHEDULE", "1s")]);
    shapes(&arca).await;
    let reports = data.path().join("fixity/reports");
    let read_reports = || -> Vec<Value> {
        let mut names: Vec<PathBuf> = fs::read_dir(&reports)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        names.sort();
        names
            .iter()
            .filter_map(|p| serde_json::from_slice(&fs::read(p).ok()?).ok())
            .collect()
    };
    let wait_for = |what: &str, done: &dyn Fn(&[Value]) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let all = read_reports();
            if done(&all) {
                return all;
            }
            assert!(
                Instant::now() < deadline,
                "no report {what}: {all:#?}\n{}",
                arca.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    // A run that started after the writes finds nothing.
    let written = arca_model::now();
    let after_writes =
        |r: &Value| arca_model::parse_instant(r["started"].as_str().unwrap()).unwrap() > written;
    let clean = wait_for("of the undamaged root", &|all| all.iter().any(after_writes));
    let clean = clean.iter().find(|r| after_writes(r)).unwrap();
    assert_eq!(findings(clean), vec![], "{clean:#}");
    assert!(clean["objects"].as_u64().unwrap() >= 9);
    // Damage while it runs is found by a later run.
    let root = data.path().join("ocfl-root");
    let (dir, _) = object(&root, "/c/flip");
    let rel = content_paths(&root, "/c/flip")[0].clone();
    flip_bit(&dir.join(&rel));
    let all = wait_for("with the damage", &|all| {
        all.iter().any(|r| {
            findings(r)
                .iter()
                .any(|f| f.2.as_deref() == Some(rel.as_str()))
        })
    });
    let found = all
        .iter()
        .find(|r| {
            findings(r)
                .iter()
                .any(|f| f.2.as_deref() == Some(rel.as_str()))
        })
        .unwrap();
    assert_eq!(
        findings(found),
        vec![(
            "content_digest".to_string(),
            "info:fedora/c/flip".to_string(),
            Some(rel.clone()),
            false
        )]
    );
    arca.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutable_heads_are_audited_too() {
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve_with(data.path(), &[("ARCA_AUTO_VERSIONING", "false")]);
    shapes(&arca).await;
    arca.stop();
    let root = data.path().join("ocfl-root");
    let (dir, _) = object(&root, "/c/flip");
    assert!(dir
        .join("extensions/0005-mutable-head/head/inventory.json")
        .is_file());
    let report_file = data.path().join("report.json");
    let report_arg = report_file.to_str().unwrap();
    let out = fixity(data.path(), &["--report", report_arg], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(findings(&read_report(&report_file)), vec![]);
    // The head's content is in the head inventory's manifest only.
    let head: Value = serde_json::from_slice(
        &fs::read(dir.join("extensions/0005-mutable-head/head/inventory.json")).unwrap(),
    )
    .unwrap();
    let rel = head["manifest"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|v| v.as_array().unwrap().iter())
        .map(|p| p.as_str().unwrap().to_string())
        .find(|p| p.starts_with("extensions/") && p.ends_with("/flip"))
        .expect("head content");
    flip_bit(&dir.join(&rel));
    let out = fixity(data.path(), &["--report", report_arg], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let report = read_report(&report_file);
    assert_eq!(
        findings(&report),
        vec![(
            "content_digest".to_string(),
            "info:fedora/c/flip".to_string(),
            Some(rel),
            false
        )]
    );
    assert_eq!(report["findings"][0]["logical_path"], "flip");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_that_disagrees_with_storage_is_reported() {
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve(data.path());
    shapes(&arca).await;
    arca.stop();
    let catalog = rusqlite::Connection::open(data.path().join("catalog.sqlite")).unwrap();
    let changed = catalog
        .execute(
            "UPDATE resources SET content_file = 'elsewhere' WHERE id = 'info:fedora/c/cut'",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(catalog);
    let report_file = data.path().join("report.json");
    let out = fixity(
        data.path(),
        &["--report", report_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let report = read_report(&report_file);
    assert_eq!(
        findings(&report),
        vec![(
            "catalog_mismatch".to_string(),
            "info:fedora/c/cut".to_string(),
            None,
            false
        )]
    );
    let finding = &report["findings"][0];
    assert_eq!(finding["logical_path"], "info:fedora/c/cut");
    assert!(
        finding["actual"].as_str().unwrap().contains("elsewhere"),
        "{finding:#}"
    );
    assert!(finding["message"]
        .as_str()
        .unwrap()
        .contains("arca rebuild"));
}
