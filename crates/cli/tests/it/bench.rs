//! `arca bench` end to end: every scenario in a tiny mode against a spawned arca (the real
//! `arca` binary), checking the counting and the report — correctness, not speed.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use arca_bench::http::Target;
use arca_bench::layout::{self, LayoutWriter};
use arca_bench::payload::Payload;
use arca_bench::report::{Kind, Report, ScenarioReport, Status};
use arca_bench::scenarios::ingest_object;

use crate::common;

/// Tiny mode: 2 clients, 5 objects of 1 KiB per scenario.
const TINY: &[&str] = &["--clients", "2", "--count", "5", "--size", "1024"];

fn bench(args: &[&str], out: &Path) -> (Output, Report) {
    let output = Command::new(env!("CARGO_BIN_EXE_arca"))
        .arg("bench")
        .args(args)
        .arg("--out")
        .arg(out)
        .arg("--no-progress")
        .env_remove("ARCA_BIN")
        .output()
        .expect("arca runs");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(
        !stderr.contains("panicked"),
        "arca bench panicked:\n{stderr}"
    );
    let report = Report::load(&out.join("report.json"))
        .unwrap_or_else(|e| panic!("no report ({e:#}); stderr:\n{stderr}"));
    assert!(out.join("report.md").is_file());
    assert!(out.join("chart.svg").is_file());
    (output, report)
}

fn spawned(scenarios: &[&str], extra: &[&str], out: &Path) -> (Output, Report) {
    let mut args: Vec<&str> = scenarios.to_vec();
    args.push("--spawn");
    args.extend_from_slice(TINY);
    args.extend_from_slice(extra);
    bench(&args, out)
}

/// The invariants every row must satisfy.
fn check_counting(r: &Report) {
    for s in &r.scenarios {
        let m = &s.summary;
        assert_eq!(m.transactions, m.ok + m.errors, "{}: transactions", s.name);
        assert_eq!(
            m.status_codes.values().sum::<u64>(),
            m.requests,
            "{}: status histogram",
            s.name
        );
        assert_eq!(
            m.timeline.iter().map(|p| p.transactions).sum::<u64>(),
            m.transactions,
            "{}: timeline",
            s.name
        );
        assert!(
            m.p50_ms <= m.p99_ms && m.p99_ms <= m.max_ms + 0.01,
            "{}",
            s.name
        );
    }
    let errors: u64 = r.scenarios.iter().map(ScenarioReport::errors_total).sum();
    assert_eq!(r.errors, errors);
}

fn assert_clean(output: &Output, r: &Report) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "exit {:?}; summary: {}\nstderr:\n{}",
        output.status.code(),
        r.summary,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(r.summary.starts_with("No errors"), "{}", r.summary);
    assert!(stdout.starts_with("**No errors"), "{stdout}");
    assert!(!r.interrupted);
}

fn row<'a>(r: &'a Report, name: &str) -> &'a ScenarioReport {
    r.row(name)
        .unwrap_or_else(|| panic!("no row {name} in {:?}", names(r)))
}

fn names(r: &Report) -> Vec<&str> {
    r.scenarios.iter().map(|s| s.name.as_str()).collect()
}

fn check_raw_write_rows(r: &Report, size: &str, threads: usize) {
    for mode in ["fsync", "nofsync"] {
        let raw = row(r, &format!("raw-{mode}-{size}-{threads}t"));
        assert_eq!(raw.kind, Kind::Raw);
        assert_eq!(raw.summary.ok, 5, "{}", raw.name);
        assert_eq!(raw.objects_created, 5, "{}", raw.name);
        assert_eq!(raw.summary.status_codes["ok"], 5);
        assert_eq!(
            raw.disk.as_ref().expect("raw disk").files_after,
            5,
            "{}",
            raw.name
        );
        assert_eq!(raw.config.fsync, Some(mode == "fsync"));
    }
}

fn check_raw_layout_row(r: &Report, name: &str, names_per_object: u64) {
    let raw = row(r, name);
    assert_eq!(raw.kind, Kind::Raw);
    assert_eq!(raw.status, Status::Completed, "{name}: {:?}", raw.note);
    assert_eq!(raw.summary.ok, 5, "{name}");
    assert_eq!(raw.objects_created, 5, "{name}");
    let disk = raw.disk.as_ref().expect("raw disk");
    assert_eq!(disk.files_after, 5 * names_per_object, "{name}");
    assert_eq!(raw.config.syncfs_every_s, Some(5.0), "{name}");
    assert!(
        raw.note
            .as_deref()
            .is_some_and(|n| n.contains("one after the last object")),
        "{name}: {:?}",
        raw.note
    );
}

#[test]
fn ingest_scenarios_count_objects_and_compare_with_raw() {
    let out = tempfile::tempdir().unwrap();
    let (output, r) = spawned(
        &[
            "ingest-object-only",
            "ingest-small",
            "ingest-medium",
            "ingest-large",
        ],
        &[],
        out.path(),
    );
    check_counting(&r);
    assert_clean(&output, &r);
    assert!(r.target.spawned);
    assert!(r.target.pid.is_some());
    assert_eq!(r.target.probe.as_deref(), Some("200"));
    check_raw_write_rows(&r, "0B", 2);
    check_raw_write_rows(&r, "1KiB", 2);
    for name in [
        "ingest-object-only",
        "ingest-small",
        "ingest-medium",
        "ingest-large",
    ] {
        let s = row(&r, name);
        assert_eq!(s.kind, Kind::Ingest);
        assert_eq!(s.status, Status::Completed);
        assert_eq!(s.summary.transactions, 5, "{name}");
        assert_eq!(s.summary.ok, 5, "{name}");
        assert_eq!(s.objects_created, 5, "{name}");
        let per_object = if name == "ingest-object-only" { 1 } else { 2 };
        assert_eq!(s.summary.requests, 5 * per_object, "{name}");
        assert_eq!(s.summary.status_codes["201"], 5 * per_object, "{name}");
        let size = if name == "ingest-object-only" {
            0
        } else {
            1024
        };
        assert_eq!(s.config.size_bytes, size, "{name}");
        assert_eq!(s.summary.bytes, 5 * size, "{name}");
        assert!(s.summary.tps > 0.0 && s.summary.mean_ms > 0.0, "{name}");
        let raw = s.raw.as_ref().expect("raw comparison");
        assert!(raw.baseline.starts_with("raw-fsync-"), "{name}");
        assert!(raw.pct_of_raw.is_some_and(|p| p > 0.0), "{name}: % of raw");
        let server = s.server.as_ref().expect("server samples from /proc");
        assert!(!server.samples.is_empty(), "{name}");
        assert!(server.peak_rss_mb.is_some_and(|m| m > 0.0), "{name}");
        let disk = s.disk.as_ref().expect("disk growth");
        assert!(disk.bytes_per_object.is_some_and(|b| b > 0.0), "{name}");
        assert!(s.loadgen.is_some(), "{name}");
    }
    // raw-layout: 5 objects of 7 names (container) or 7 + 9 (with its binary)
    check_raw_layout_row(&r, "raw-layout-container-2t", 7);
    check_raw_layout_row(&r, "raw-layout-1KiB-2t", 16);
    for name in ["ingest-object-only", "ingest-small"] {
        let raw = row(&r, name).raw.as_ref().unwrap();
        let layout = if name == "ingest-object-only" {
            "raw-layout-container-2t"
        } else {
            "raw-layout-1KiB-2t"
        };
        assert_eq!(raw.layout_baseline.as_deref(), Some(layout), "{name}");
        assert!(raw.pct_of_raw_layout.is_some_and(|p| p > 0.0), "{name}");
        // 1 KiB objects: no raw-hash row
        assert!(raw.hash_baseline.is_none(), "{name}");
    }
    // the raw baselines were measured once for the shared size and reused
    assert_eq!(r.scenarios.len(), 4 + 6, "{:?}", names(&r));
    let svg = std::fs::read_to_string(out.path().join("chart.svg")).unwrap();
    assert!(svg.contains("ingest-small"));
}

#[test]
fn access_scenarios_get_what_was_ingested() {
    let out = tempfile::tempdir().unwrap();
    let (output, r) = spawned(
        &["access-small", "access-medium", "access-metadata"],
        &[],
        out.path(),
    );
    check_counting(&r);
    assert_clean(&output, &r);
    for name in ["access-small", "access-medium", "access-metadata"] {
        let s = row(&r, name);
        assert_eq!(s.kind, Kind::Access);
        let setup = s.setup.as_ref().expect("setup");
        assert_eq!(setup.objects_requested, 5, "{name}");
        assert_eq!(setup.objects_created, 5, "{name}");
        assert_eq!(setup.errors, 0, "{name}");
        assert_eq!(s.summary.transactions, 5, "{name}: GET count");
        assert_eq!(s.summary.ok, 5, "{name}");
        assert_eq!(s.summary.status_codes["200"], 5, "{name}");
        if name == "access-metadata" {
            assert!(s.summary.bytes > 0);
            assert!(s.raw.is_none());
        } else {
            assert_eq!(s.summary.bytes, 5 * 1024, "{name}: bytes received");
            let raw = s.raw.as_ref().expect("raw read comparison");
            assert!(raw.baseline.starts_with("raw-read-1KiB-2t"));
            assert!(raw.pct_of_raw.is_some());
        }
    }
    let read = row(&r, "raw-read-1KiB-2t");
    assert_eq!(read.summary.ok, 5);
    assert_eq!(read.config.objects, Some(5));
}

#[test]
fn benchtool_runs_one_client_then_n() {
    let out = tempfile::tempdir().unwrap();
    let (output, r) = spawned(&["benchtool"], &[], out.path());
    check_counting(&r);
    assert_clean(&output, &r);
    for (name, clients) in [("benchtool-1-client", 1), ("benchtool-2-clients", 2)] {
        let s = row(&r, name);
        assert_eq!(s.config.clients, clients);
        assert_eq!(s.objects_created, 5, "{name}");
        assert_eq!(s.summary.status_codes["201"], 10, "{name}");
        assert!(
            s.raw.as_ref().and_then(|x| x.pct_of_raw).is_some(),
            "{name}"
        );
    }
    check_raw_write_rows(&r, "1KiB", 1);
    check_raw_write_rows(&r, "1KiB", 2);
}

#[test]
fn burn_in_reports_intervals() {
    let out = tempfile::tempdir().unwrap();
    let (output, r) = spawned(&["burn-in"], &["--interval", "1"], out.path());
    check_counting(&r);
    assert_clean(&output, &r);
    let s = row(&r, "burn-in");
    assert_eq!(s.kind, Kind::BurnIn);
    assert_eq!(s.objects_created, 5);
    assert_eq!(s.config.interval_s, Some(1.0));
    assert!(!s.intervals.is_empty());
    assert_eq!(s.intervals.iter().map(|i| i.ok).sum::<u64>(), 5);
    assert_eq!(s.intervals.last().unwrap().cumulative_ok, 5);
    assert!(s.summary.first_error.is_none());
}

#[test]
fn fan_in_scenarios_measure_both_ends() {
    // 5 additions per window, 30 members/referrers, GET rows of 0.3 s: the rows exist, count
    // right and every request succeeded (the GETs of the fanned-in resource included).
    let out = tempfile::tempdir().unwrap();
    let (output, r) = spawned(
        &["membership", "references"],
        &["--objects", "30", "--duration", "0.3"],
        out.path(),
    );
    check_counting(&r);
    assert_clean(&output, &r);
    for kind in ["membership", "references"] {
        for (name, rows) in [("add@10", 5), ("add@25", 5)] {
            let s = row(&r, &format!("{kind}-{name}"));
            assert_eq!(s.summary.ok, rows, "{}", s.name);
            assert_eq!(s.objects_created, rows, "{}", s.name);
        }
        for at in [10, 30] {
            for get in ["get-omitted", "get-page", "get-all"] {
                let s = row(&r, &format!("{kind}-{get}@{at}"));
                assert_eq!(s.kind, Kind::Access);
                assert!(s.summary.ok > 0, "{}", s.name);
            }
        }
    }
}

#[test]
fn raw_alone_needs_no_server() {
    let out = tempfile::tempdir().unwrap();
    let mut args = vec!["raw"];
    args.extend_from_slice(TINY);
    let (output, r) = bench(&args, out.path());
    check_counting(&r);
    assert_clean(&output, &r);
    assert!(r.target.url.is_none());
    assert_eq!(names(&r).len(), 3, "{:?}", names(&r));
    check_raw_write_rows(&r, "1KiB", 2);
    check_raw_layout_row(&r, "raw-layout-1KiB-2t", 16);
}

/// The 2013 search study against a spawned arca: every cell's hit count is the one the
/// loaded records give, every update becomes visible, the reindex covers the index.
#[test]
fn search_study_runs_against_arca() {
    use arca_bench::report::SearchDetail;
    let out = tempfile::tempdir().unwrap();
    let (output, r) = bench(
        &[
            "search",
            "--spawn",
            "--quick",
            "--objects",
            "40",
            "--duration",
            "0.4",
            "--clients",
            "2",
        ],
        out.path(),
    );
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stderr),
        r.to_markdown()
    );
    check_counting(&r);
    assert_eq!(r.errors, 0, "{}", r.summary);
    let mut cells = 0;
    for s in &r.scenarios {
        match s.search.as_ref().expect("every row is a search step") {
            SearchDetail::Cell(c) => {
                cells += 1;
                assert!(s.summary.ok > 0, "{}", s.name);
                assert_eq!(c.hits_min, c.hits_max, "{}: stable hits", s.name);
                if let Some(expected) = c.expected {
                    assert_eq!(c.hits_min, Some(expected), "{}", s.name);
                }
            }
            SearchDetail::Reindex(x) => assert!(x.documents.unwrap_or(0) > 40, "{x:?}"),
            SearchDetail::Load(l) => {
                assert_eq!(l.objects, 40);
                assert!(l.documents.unwrap_or(0) > 40, "{l:?}");
            }
            SearchDetail::Visibility(_) => assert!(s.summary.ok > 0),
        }
    }
    assert_eq!(cells, 27, "3 queries × 3 thread counts × 3 update shares");
}

#[test]
fn unreachable_url_reports_errors_without_panicking() {
    let out = tempfile::tempdir().unwrap();
    let mut args = vec![
        "ingest-small",
        "access-small",
        "--url",
        "http://127.0.0.1:1/rest/",
    ];
    args.extend_from_slice(TINY);
    let (output, r) = bench(&args, out.path());
    check_counting(&r);
    assert!(!output.status.success(), "an all-error run must not exit 0");
    assert!(r.errors > 0);
    assert!(r.summary.starts_with("ERRORS"), "{}", r.summary);
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("**ERRORS"));
    let s = row(&r, "ingest-small");
    assert_eq!(s.summary.ok, 0);
    assert_eq!(s.summary.status_codes["connect-error"], s.summary.errors);
    let a = row(&r, "access-small");
    assert_eq!(a.status, Status::Aborted);
    assert_eq!(a.setup.as_ref().unwrap().objects_created, 0);
}

#[test]
fn spawned_server_and_data_are_removed() {
    let out = tempfile::tempdir().unwrap();
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().display().to_string();
    let (output, r) = spawned(
        &["ingest-small"],
        &["--data-dir", &dir, "--no-raw"],
        out.path(),
    );
    assert_clean(&output, &r);
    assert!(row(&r, "ingest-small").raw.is_none());
    // The data directory was set aside (renamed) at once…
    let names = |p: &Path| -> Vec<String> {
        std::fs::read_dir(p)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let set_aside = names(parent.path());
    assert!(
        set_aside.iter().all(|n| n.starts_with(".arca-bench-trash")),
        "the temporary data directory is set aside: {set_aside:?}"
    );
    // …and a background process deletes it after the run has ended.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !names(parent.path()).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        names(parent.path()).is_empty(),
        "the background deletion did not finish: {:?}",
        names(parent.path())
    );
    // its PID no longer runs
    let pid = r.target.pid.unwrap();
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists() || {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.contains(") Z ")
        }
    );
    assert!(out.path().join("server.log").is_file());
}

#[test]
fn large_objects_are_compared_with_raw_hash() {
    let out = tempfile::tempdir().unwrap();
    let args = [
        "ingest-medium",
        "--spawn",
        "--clients",
        "2",
        "--count",
        "3",
        "--size",
        "2M",
        "--digest",
        "sha256",
    ];
    let (output, r) = bench(&args, out.path());
    check_counting(&r);
    assert_clean(&output, &r);
    assert_eq!(
        names(&r),
        [
            "raw-fsync-2MiB-2t",
            "raw-nofsync-2MiB-2t",
            "raw-layout-2MiB-2t",
            "raw-hash-2MiB-2t",
            "ingest-medium"
        ]
    );
    let hash = row(&r, "raw-hash-2MiB-2t");
    assert_eq!(hash.summary.ok, 3);
    assert_eq!(hash.summary.bytes, 3 * (2 << 20));
    assert_eq!(hash.config.digest.as_deref(), Some("sha256"));
    assert_eq!(hash.config.fsync, Some(true));
    let raw = row(&r, "ingest-medium").raw.as_ref().unwrap();
    assert_eq!(raw.basis, "MB/s");
    assert_eq!(raw.hash_baseline.as_deref(), Some("raw-hash-2MiB-2t"));
    assert_eq!(raw.layout_baseline.as_deref(), Some("raw-layout-2MiB-2t"));
    for pct in [raw.pct_of_raw, raw.pct_of_raw_layout, raw.pct_of_raw_hash] {
        assert!(pct.is_some_and(|p| p > 0.0), "{raw:?}");
    }
    // The ratios are the ingest row's MB/s over each baseline's, as the table prints them.
    let ingest = row(&r, "ingest-medium").summary.mb_per_s;
    let hash_mb = hash.summary.mb_per_s;
    assert!((raw.pct_of_raw_hash.unwrap() - 100.0 * ingest / hash_mb).abs() < 1e-6);
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(
        md.contains("| % of raw | % of raw-layout | % of raw-hash |"),
        "{md}"
    );
    assert!(
        md.contains("raw-hash rows"),
        "the notes explain raw-hash:\n{md}"
    );
    assert!(md.contains("sha256"), "{md}");
}

/// One object's directory as a tree: relative path → (directory?, size of a file, links).
fn object_tree(dir: &Path) -> BTreeMap<String, (bool, u64, u64)> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, (bool, u64, u64)>) {
        for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            let rel = e.path().strip_prefix(base).unwrap().display().to_string();
            if m.is_dir() {
                out.insert(rel, (true, 0, 0));
                walk(base, &e.path(), out);
            } else {
                out.insert(rel, (false, m.len(), m.nlink()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// raw-layout writes, per object, what a real arca writes for the bench's own requests: the
/// same directories and files under the same 0004 paths (computed here independently), with
/// the same sizes and hard links — for an object-only container, and for a container with a
/// binary of 20 KiB (held in memory), of 1 MiB + 1 byte (streamed through staging/uploads)
/// and of 0 bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_layout_writes_what_arca_writes_for_an_object() {
    let data = tempfile::tempdir().unwrap();
    let arca = common::Arca::serve(data.path());
    let base = format!("{}/", arca.base);
    let target = Target::new(
        &base,
        Some("fedoraAdmin"),
        Some("fedoraAdmin"),
        Duration::from_secs(60),
        1,
    )
    .unwrap();
    let payload = Payload::new(1, 2);
    let raw = tempfile::tempdir().unwrap();
    let writer = LayoutWriter::create(raw.path()).unwrap();
    let arca_root = data.path().join("ocfl-root");
    let mut compared = Vec::new();
    for (object, size) in [None, Some(20 << 10), Some((1 << 20) + 1), Some(0)]
        .into_iter()
        .enumerate()
    {
        let object = object as u64;
        let (out, url) = ingest_object(&target, &payload, object, size).await;
        assert!(out.ok, "{:?}", out.error);
        let id = format!("info:fedora/{}", url.unwrap().strip_prefix(&base).unwrap());
        writer
            .write_object(object, size.map(|s| payload.chunks(object, s)))
            .unwrap();
        let raw_id = layout::container_id(object);
        assert_eq!(raw_id.len(), id.len(), "{raw_id} is shaped like {id}");
        compared.push((id.clone(), raw_id.clone(), None));
        if size.is_some() {
            compared.push((layout::binary_id(&id), layout::binary_id(&raw_id), size));
        }
    }
    // arca writes into its root behind its answers; a clean stop waits for that.
    arca.stop();
    for (real, ours, size) in compared {
        let real_dir = common::object_dir(&arca_root, &real);
        let raw_dir = common::object_dir(writer.root(), &ours);
        let mut real_tree = object_tree(&real_dir);
        assert!(
            !real_tree.is_empty(),
            "arca wrote {real} at {}",
            real_dir.display()
        );
        let mut raw_tree = object_tree(&raw_dir);
        // An inventory's `created` instant drops trailing zeros of its fraction (as
        // ocfl-java writes it), so arca's inventories are up to 10 bytes shorter than the
        // template's (nine fraction digits and the dot at most); all else must match exactly.
        for (path, real_entry) in real_tree.iter_mut() {
            if path.ends_with("inventory.json") {
                let raw_entry = raw_tree.get_mut(path).expect("an inventory in both");
                assert!(
                    raw_entry.1 >= real_entry.1 && raw_entry.1 - real_entry.1 <= 10,
                    "{path}: {} bytes in raw-layout, {} in arca",
                    raw_entry.1,
                    real_entry.1
                );
                real_entry.1 = raw_entry.1;
            }
        }
        assert_eq!(raw_tree, real_tree, "{ours} against arca's {real}");
        if let Some(size) = size {
            let content = "v1/content/file";
            let bytes = std::fs::read(raw_dir.join(content)).unwrap();
            assert_eq!(bytes.len() as u64, size);
            assert_eq!(bytes, std::fs::read(real_dir.join(content)).unwrap());
        }
    }
    // Uploads were renamed into place, in arca and here.
    for dir in [data.path(), raw.path()] {
        let uploads = dir.join("staging/uploads");
        assert_eq!(
            std::fs::read_dir(&uploads).unwrap().count(),
            0,
            "{}",
            uploads.display()
        );
    }
    // Nothing else in the raw root: the objects written, under their 0004 paths.
    let objects = common::object_dirs(writer.root());
    assert_eq!(objects.len(), 7, "{objects:?}");
}

/// The audit scenario's read or lag or fault detail of a row.
fn audit_read(r: &Report, name: &str) -> arca_bench::audit::ReadRun {
    match &row(r, name).audit {
        Some(arca_bench::audit::AuditDetail::Read(x)) => x.clone(),
        other => panic!("{name}: not a read row: {other:?}"),
    }
}

/// `arca bench audit` at a tiny size: the root built through a spawned arca, the baseline
/// over exactly its content, the validators (when installed) calling it valid, the serving
/// rows in the order on, off, off, on, and the built root removed afterwards.
#[test]
fn audit_scenario_builds_a_root_and_reads_all_of_it() {
    let out = tempfile::tempdir().unwrap();
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().display().to_string();
    let (output, r) = bench(
        &[
            "audit",
            "--objects",
            "10",
            "--size",
            "1024",
            "--large-gb",
            "0.004",
            "--large-size",
            "1M",
            "--clients",
            "2",
            "--duration",
            "1",
            "--count",
            "3",
            "--cache",
            "warm",
            "--audit-steps",
            "baseline,rocfl,ocfl-py,serving",
            "--data-dir",
            &dir,
        ],
        out.path(),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    check_counting(&r);
    // 10 small objects; 0.004 GiB of 1 MiB binaries is 4.096 MiB: 5 binaries.
    assert_eq!(row(&r, "audit-root-small").summary.ok, 10, "{stderr}");
    assert_eq!(row(&r, "audit-root-large").summary.ok, 5, "{stderr}");
    let base = audit_read(&r, "audit-baseline-warm");
    assert_eq!(row(&r, "audit-baseline-warm").status, Status::Completed);
    // A container and a binary per object are OCFL objects of their own, and the root's.
    assert!(base.root_objects > 2 * 15, "{base:?}");
    assert_eq!(base.checked_files, Some(base.root_files));
    assert_eq!(base.checked_bytes, Some(base.root_bytes));
    assert!(base.root_bytes >= 10 * 1024 + 5 * (1 << 20), "{base:?}");
    assert_eq!(base.pct_of_baseline, Some(100.0));
    for tool in ["rocfl", "ocfl-py"] {
        let name = format!("audit-{tool}-warm");
        let x = audit_read(&r, &name);
        match row(&r, &name).status {
            Status::NotAvailable => assert_eq!(x.valid, None),
            _ => assert_eq!(x.valid, Some(true), "{name}: {:?}", row(&r, &name).note),
        }
    }
    // Serving: on, off, off, on, each an ingest (at most --count objects) and a GET row of
    // the built binaries, all answered.
    let serving: Vec<&str> = names(&r)
        .into_iter()
        .filter(|n| n.starts_with("audit-on") || n.starts_with("audit-off"))
        .collect();
    assert_eq!(
        serving,
        [
            "audit-on1-ingest",
            "audit-on1-get",
            "audit-off1-ingest",
            "audit-off1-get",
            "audit-off2-ingest",
            "audit-off2-get",
            "audit-on2-ingest",
            "audit-on2-get"
        ]
    );
    for name in serving {
        let s = row(&r, name);
        assert!(s.summary.ok > 0 && s.summary.errors == 0, "{name}");
        if name.ends_with("ingest") {
            assert!(s.summary.ok <= 3, "{name}: --count caps it");
        }
    }
    for workload in ["ingest", "get"] {
        match &row(&r, &format!("audit-serving-{workload}")).audit {
            Some(arca_bench::audit::AuditDetail::Serving(s)) => {
                assert_eq!((s.on_tps.len(), s.off_tps.len()), (2, 2));
                assert!(s.pct_of_off.is_some_and(|p| p > 0.0));
            }
            other => panic!("{workload}: {other:?}"),
        }
    }
    // The root built for the run is gone.
    let left: Vec<_> = std::fs::read_dir(parent.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The audit against the root the bench built, and the faults it injects: every one found
/// and repaired, no finding on the undamaged root, both roots valid afterwards.
#[test]
fn audit_scenario_finds_and_repairs_every_injected_fault() {
    let out = tempfile::tempdir().unwrap();
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().display().to_string();
    let (output, r) = bench(
        &[
            "audit",
            "--objects",
            "30",
            "--size",
            "2048",
            "--large-gb",
            "0.002",
            "--large-size",
            "1M",
            "--clients",
            "2",
            "--cache",
            "warm",
            "--audit-steps",
            "fixity,faults",
            "--data-dir",
            &dir,
        ],
        out.path(),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let fixity = audit_read(&r, "audit-arca-fixity-warm");
    assert_eq!(
        row(&r, "audit-arca-fixity-warm").status,
        Status::Completed,
        "{:?}\n{stderr}",
        row(&r, "audit-arca-fixity-warm").note
    );
    assert_eq!(fixity.findings, Some(0));
    assert_eq!(fixity.checked_objects, Some(fixity.root_objects));
    let faults = match &row(&r, "audit-faults").audit {
        Some(arca_bench::audit::AuditDetail::Faults(f)) => f.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        row(&r, "audit-faults").status,
        Status::Completed,
        "{:?}",
        row(&r, "audit-faults").note
    );
    assert_eq!(faults.clean_findings, Some(0));
    assert_eq!(faults.faults.len(), 6);
    assert!(faults
        .faults
        .iter()
        .all(|f| f.found && f.repaired && f.restored));
    assert_eq!(faults.unexpected_findings, 0);
    assert_eq!((faults.fixity_exit, faults.verify_exit), (Some(0), Some(0)));
    assert!(output.status.success(), "{stderr}");
}

/// Replica lag under ingest, read from `GET fcr:audit`, drains to 0; the replica verifies
/// and is valid for ocfl-py.
#[test]
fn audit_scenario_measures_replica_lag_until_drained() {
    let out = tempfile::tempdir().unwrap();
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().display().to_string();
    let (output, r) = bench(
        &[
            "audit",
            "--objects",
            "5",
            "--large-gb",
            "0",
            "--clients",
            "2",
            "--duration",
            "2",
            "--audit-steps",
            "replica",
            "--data-dir",
            &dir,
        ],
        out.path(),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lag = match &row(&r, "audit-replica-lag").audit {
        Some(arca_bench::audit::AuditDetail::Lag(l)) => l.clone(),
        other => panic!("{other:?}\n{stderr}"),
    };
    assert_eq!(
        row(&r, "audit-replica-lag").status,
        Status::Completed,
        "{:?}",
        row(&r, "audit-replica-lag").note
    );
    assert!(lag.samples > 0);
    assert!(lag.drain_s.is_some());
    assert!(row(&r, "audit-replica-ingest").summary.ok > 0);
    let verify = audit_read(&r, "audit-replica-verify");
    assert_eq!(verify.exit_code, Some(0), "{stderr}");
    assert!(verify.root_objects > 0, "the replica holds the objects");
    assert!(output.status.success(), "{stderr}");
}
