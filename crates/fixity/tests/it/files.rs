//! Reports and checkpoints in the data directory: history, durability, corruption.

use arca_fixity::checkpoint::{Checkpoint, CheckpointState};
use arca_fixity::{Report, Reports};

fn report(id: &str, objects: u64) -> Report {
    Report {
        id: id.into(),
        root: "primary".into(),
        started: "2026-11-29T09:00:00Z".into(),
        objects,
        ..Report::default()
    }
}

#[test]
fn reports_are_kept_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let reports = Reports::open(&dir.path().join("reports")).unwrap();
    assert_eq!(reports.latest().unwrap(), None);
    for (id, objects) in [
        ("20261129T090000.000Z", 1),
        ("20261129T100000.000Z", 2),
        ("20261128T100000.000Z", 3),
    ] {
        reports.save(&report(id, objects)).unwrap();
    }
    let ids: Vec<String> = reports
        .recent(10)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(
        ids,
        [
            "20261129T100000.000Z",
            "20261129T090000.000Z",
            "20261128T100000.000Z"
        ]
    );
    assert_eq!(reports.recent(1).unwrap()[0].objects, 2);
    // Saving again replaces.
    reports.save(&report("20261129T100000.000Z", 5)).unwrap();
    assert_eq!(reports.latest().unwrap().unwrap().objects, 5);
    assert_eq!(reports.recent(10).unwrap().len(), 3);
}

#[test]
fn a_corrupt_report_is_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let reports = Reports::open(dir.path()).unwrap();
    reports.save(&report("20261129T090000.000Z", 1)).unwrap();
    let corrupt = dir.path().join("20261129T100000.000Z.json");
    std::fs::write(&corrupt, b"{\"id\": \"trunc").unwrap();
    let latest = reports.latest().unwrap().unwrap();
    assert_eq!(latest.id, "20261129T090000.000Z");
    assert!(!corrupt.exists());
    assert!(dir
        .path()
        .join("20261129T100000.000Z.json.corrupt")
        .exists());
}

#[test]
fn a_checkpoint_round_trips_and_a_corrupt_one_starts_over() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = Checkpoint::at(&dir.path().join("checkpoint-primary.json"));
    assert_eq!(checkpoint.load().unwrap(), None);
    let state = CheckpointState {
        report: report("20261129T090000.000Z", 7),
        after: Some("0a1/b2c".into()),
        catalog_after: None,
        walked: false,
    };
    checkpoint.save(&state).unwrap();
    assert_eq!(checkpoint.load().unwrap(), Some(state));
    // No temporary file left beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    std::fs::write(checkpoint.path(), b"\0\0garbage").unwrap();
    assert_eq!(checkpoint.load().unwrap(), None);
    assert!(dir.path().join("checkpoint-primary.json.corrupt").exists());
    assert!(!checkpoint.path().exists());
    checkpoint.clear().unwrap();
}
