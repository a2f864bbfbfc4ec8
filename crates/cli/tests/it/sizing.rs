//! `arca bench sizing` end to end at a small size: the same code path as the 10^6-object
//! study, asserting what it did (every object created and read back, every step and every
//! measurement on the grown root present and successful, the root valid), never how fast.

use std::path::Path;
use std::process::Command;

use arca_bench::sizing::SizingReport;

use crate::common;

fn run_sizing(root_data: &Path, out: &Path) -> (std::process::Output, SizingReport) {
    let output = Command::new(env!("CARGO_BIN_EXE_arca"))
        .args(["bench", "sizing", "--count", "2000", "--step", "1000"])
        .args(["--clients", "4", "--no-progress", "--root-data"])
        .arg(root_data)
        .arg("--out")
        .arg(out)
        .env_remove("ARCA_BIN")
        .output()
        .expect("arca runs");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(
        !stderr.contains("panicked"),
        "arca bench panicked:\n{stderr}"
    );
    let json = std::fs::read(out.join("sizing.json"))
        .unwrap_or_else(|e| panic!("no sizing.json ({e}); stderr:\n{stderr}"));
    (
        output,
        serde_json::from_slice(&json).expect("the report parses"),
    )
}

#[test]
fn sizing_grows_a_root_step_by_step_and_measures_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = dir.path().join("out");
    let (output, r) = run_sizing(&data, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "exit {:?}:\n{stderr}",
        output.status
    );
    assert_eq!(r.stopped, None, "{stderr}");
    assert_eq!((r.target_objects, r.step), (2000, 1000));

    // Two steps, every object created, both samples of GETs answered.
    let objects: Vec<u64> = r.steps.iter().map(|s| s.objects).collect();
    assert_eq!(objects, [1000, 2000]);
    for s in &r.steps {
        assert_eq!((s.created, s.errors), (1000, 0), "{:?}", s.first_error);
        assert!(s.requests > s.created, "some objects take several requests");
        for sample in [&s.get_old, &s.get_new] {
            assert_eq!(sample.errors, 0);
            assert!(sample.ok > 0 && sample.p50_ms > 0.0 && sample.p99_ms >= sample.p50_ms);
        }
        assert!(s.rss_mb.is_some_and(|mb| mb > 1.0));
        assert!(s.catalog_bytes > 0 && s.index_bytes > 0);
        assert!(s.fs_inodes.is_some() && s.bytes_per_object.is_some());
    }

    // Every measurement on the grown root ran and succeeded.
    let after: Vec<&str> = r.after.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        after,
        [
            "wide-page-html",
            "wide-page-turtle-limit-100",
            "wide-turtle-all-children",
            // The history is written once a second while the ingest runs.
            r.after[3].name.as_str(),
            "clean-stop",
            "start-after-clean-stop",
            "start-after-sigkill",
            "rebuild-cold",
            "rebuild-warm",
            "reindex",
            "fixity",
        ]
    );
    for a in &r.after {
        assert!(a.ok, "{}: {}", a.name, a.note);
        assert!(a.seconds.is_some_and(|s| s > 0.0), "{}", a.name);
    }
    let row = |name: &str| r.after.iter().find(|a| a.name == name).unwrap();
    let mementos: usize = r.after[3]
        .name
        .strip_prefix("timemap-")
        .and_then(|n| n.strip_suffix("-mementos"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", r.after[3].name));
    assert!(mementos >= 2, "{mementos} mementos");
    assert_eq!(
        row("start-after-sigkill").value,
        Some(0.0),
        "acknowledged writes lost"
    );
    assert!(row("rebuild-warm").value.is_some_and(|v| v > 0.0));
    assert!(row("reindex").note.contains("documents"));
    assert!(
        row("fixity").note.contains("0 findings"),
        "{}",
        row("fixity").note
    );
    // The wide container holds the tenth of the objects (200), and the whole Turtle lists them.
    assert!(row("wide-turtle-all-children").value > row("wide-page-turtle-limit-100").value);

    // The report's files, and a valid root of the population's kinds.
    for file in ["sizing.md", "sizing.svg"] {
        assert!(out.join(file).is_file(), "{file}");
    }
    let md = std::fs::read_to_string(out.join("sizing.md")).unwrap();
    assert!(md.contains("| 2000 |"), "{md}");
    let root = data.join("ocfl-root");
    common::check_storage(&root);
    common::validate_with_ocfl_py(&root);
}

#[test]
fn sizing_refuses_a_root_it_did_not_grow() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("ocfl-root")).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_arca"))
        .args(["bench", "sizing", "--count", "10", "--root-data"])
        .arg(&data)
        .env_remove("ARCA_BIN")
        .output()
        .expect("arca runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("already holds a root"), "{stderr}");
}
