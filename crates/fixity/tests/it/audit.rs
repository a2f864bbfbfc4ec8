//! Audits and repairs of a root of real objects with every kind of damage.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arca_fixity::repair::{repair, RepairOutcome, Source};
use arca_fixity::{Auditor, Finding, FindingKind};

use crate::support::*;

const OBJECTS: u64 = 12;

#[test]
fn an_undamaged_root_has_no_findings() {
    let root = Root::new();
    for threads in [1, 3] {
        let auditor = Auditor::new(root.store(), "primary", settings(threads, false));
        let report = run(&auditor, &root.checkpoint());
        assert_eq!(report.findings, Vec::<Finding>::new());
        assert_eq!(report.objects, OBJECTS);
        assert!(report.complete);
        // Every content file and inventory of every version was read: the largest
        // fixture alone has 883,160 bytes.
        assert!(report.bytes > 883_160, "{report:?}");
        assert_eq!(auditor.progress().snapshot().objects, OBJECTS);
        assert!(
            !root.checkpoint().path().exists(),
            "a complete run leaves no checkpoint"
        );
    }
}

/// Damages one file of each kind; returns the findings an audit must make, exactly.
fn damage(root: &Root) -> Vec<(FindingKind, String, Option<String>)> {
    let mut expected = Vec::new();
    // A content file's damage also shows in every digest its object's fixity block
    // records for it.
    let mut add = |kind, object: &str, rel: &str| {
        expected.push((kind, id_of(object), Some(rel.to_string())));
        if kind == FindingKind::ContentDigest {
            for _ in 0..fixity_digests(object, rel) {
                expected.push((
                    FindingKind::FixityDigest,
                    id_of(object),
                    Some(rel.to_string()),
                ));
            }
        }
    };
    flip_bit(&root.file("spec-ex-full", "v1/content/image.tiff"));
    add(
        FindingKind::ContentDigest,
        "spec-ex-full",
        "v1/content/image.tiff",
    );
    truncate(&root.file("updates_all_actions", "v1/content/my_content/dracula.txt"));
    add(
        FindingKind::ContentDigest,
        "updates_all_actions",
        "v1/content/my_content/dracula.txt",
    );
    std::fs::remove_file(root.file("updates_three_versions_one_file", "v2/content/a_file.txt"))
        .unwrap();
    add(
        FindingKind::ContentMissing,
        "updates_three_versions_one_file",
        "v2/content/a_file.txt",
    );
    std::fs::write(
        root.file("spec-ex-minimal", "inventory.json.sha512"),
        format!("{} inventory.json\n", "0".repeat(128)),
    )
    .unwrap();
    add(
        FindingKind::InventorySidecar,
        "spec-ex-minimal",
        "inventory.json",
    );
    std::fs::write(
        root.file("minimal_mixed_digests", "v1/content/stray.txt"),
        b"stray",
    )
    .unwrap();
    add(
        FindingKind::UnexpectedFile,
        "minimal_mixed_digests",
        "v1/content/stray.txt",
    );
    // The fixity block's md5 (and sha1, sha256, sha512) are checked in the same read.
    flip_bit(&root.file("ocfl_object_all_fixity_digests", "v1/content/file.txt"));
    add(
        FindingKind::ContentDigest,
        "ocfl_object_all_fixity_digests",
        "v1/content/file.txt",
    );
    assert_eq!(
        fixity_digests("ocfl_object_all_fixity_digests", "v1/content/file.txt"),
        4
    );
    expected.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    expected
}

#[test]
fn every_fault_is_found_exactly() {
    let root = Root::new();
    let expected = damage(&root);
    let auditor = Auditor::new(root.store(), "primary", settings(2, true));
    let report = run(&auditor, &root.checkpoint());
    assert_eq!(
        summary(&report.findings),
        expected,
        "{:#?}",
        report.findings
    );
    assert_eq!(report.objects, OBJECTS);
    assert_eq!(report.repaired, 0, "no copy to repair from");
    assert_eq!(report.unrepaired(), expected.len());
    let fixity: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::FixityDigest)
        .filter_map(|f| f.expected.clone())
        .collect();
    assert!(
        fixity.contains(&"md5:e8f239a71aabe2231faf696d92c92c20".to_string()),
        "{fixity:?}"
    );
    let missing = report
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::ContentMissing)
        .unwrap();
    assert_eq!(missing.version.as_deref(), Some("v2"));
    assert_eq!(missing.logical_path.as_deref(), Some("a_file.txt"));
    assert_eq!(missing.actual, None);
}

#[test]
fn damage_is_repaired_from_a_replica_and_the_root_audits_clean() {
    let root = Root::new();
    let (_, replica) = root.replica("replica");
    let expected = damage(&root);
    let image = root.file("spec-ex-full", "v1/content/image.tiff");
    let auditor = Auditor::new(root.store(), "primary", settings(2, true))
        .with_sources(vec![("replica".into(), replica)]);
    let report = run(&auditor, &root.checkpoint());
    assert_eq!(summary(&report.findings), expected);
    let unrepaired: Vec<_> = report
        .findings
        .iter()
        .filter(|f| !f.repaired)
        .map(|f| f.kind)
        .collect();
    // A stray file is left for a person; everything else is repaired (a fixity finding
    // with its file, the replaced file checked in that digest too).
    assert_eq!(
        unrepaired,
        [FindingKind::UnexpectedFile],
        "{:#?}",
        report.findings
    );
    assert_eq!(report.repaired as usize, expected.len() - 1);
    assert_eq!(
        std::fs::read(&image).unwrap(),
        std::fs::read(fixtures().join("spec-ex-full/v1/content/image.tiff")).unwrap()
    );
    // Only the stray file remains.
    let again = run(&auditor, &root.checkpoint());
    assert_eq!(
        summary(&again.findings),
        vec![(
            FindingKind::UnexpectedFile,
            id_of("minimal_mixed_digests"),
            Some("v1/content/stray.txt".into())
        )]
    );
}

#[test]
fn a_copy_without_the_recorded_digest_is_never_used() {
    let root = Root::new();
    let (replica_dir, replica) = root.replica("replica");
    let file = root.file("spec-ex-full", "v1/content/image.tiff");
    flip_bit(&file);
    let damaged = std::fs::read(&file).unwrap();
    // The replica's copy is damaged too, differently.
    truncate(&replica_dir.join("objects/spec-ex-full/v1/content/image.tiff"));
    let auditor = Auditor::new(root.store(), "primary", settings(1, true))
        .with_sources(vec![("replica".into(), replica.clone())]);
    let report = run(&auditor, &root.checkpoint());
    assert_eq!(
        report.findings.len(),
        1 + fixity_digests("spec-ex-full", "v1/content/image.tiff")
    );
    assert!(report.findings.iter().all(|f| !f.repaired));
    assert!(
        report.findings[0].message.contains("not repaired"),
        "{}",
        report.findings[0].message
    );
    assert_eq!(std::fs::read(&file).unwrap(), damaged, "nothing touched");
    // And a file whose digest is right is never overwritten, whatever the finding says.
    let mut finding = report.findings[0].clone();
    finding.content_path = Some("v1/content/foo/bar.xml".into());
    let target = root.store();
    let outcome = repair(
        target.as_ref(),
        "objects/spec-ex-full",
        &finding,
        &[Source {
            name: "replica",
            store: replica.as_ref(),
        }],
    )
    .unwrap();
    assert!(
        matches!(outcome, RepairOutcome::NotRepairable(_)),
        "{outcome:?}"
    );
}

#[test]
fn a_damaged_replica_is_repaired_from_the_primary() {
    let root = Root::new();
    let (replica_dir, replica) = root.replica("replica");
    let file = replica_dir.join("objects/updates_all_actions/v4/content/my_content/dunwich.txt");
    flip_bit(&file);
    std::fs::remove_file(replica_dir.join("objects/spec-ex-full/v2/inventory.json.sha512"))
        .unwrap();
    let auditor = Auditor::new(replica, "replica", settings(2, true))
        .with_sources(vec![("primary".into(), root.store())]);
    let report = run(&auditor, &root.checkpoint());
    assert_eq!(
        summary(&report.findings),
        vec![
            (
                FindingKind::ContentDigest,
                id_of("updates_all_actions"),
                Some("v4/content/my_content/dunwich.txt".into())
            ),
            (
                FindingKind::InventoryMissing,
                id_of("spec-ex-full"),
                Some("v2/inventory.json.sha512".into())
            ),
        ]
    );
    assert!(
        report.findings.iter().all(|f| f.repaired),
        "{:#?}",
        report.findings
    );
    assert_eq!(report.root, "replica");
    let again = run(&auditor, &root.checkpoint());
    assert!(again.findings.is_empty(), "{:#?}", again.findings);
}

#[test]
fn a_missing_object_is_copied_whole_from_a_good_copy() {
    let root = Root::new();
    let (replica_dir, replica) = root.replica("replica");
    let object = root.path().join("objects/updates_all_actions");
    std::fs::remove_dir_all(&object).unwrap();
    let finding = Finding {
        object: id_of("updates_all_actions"),
        version: None,
        logical_path: None,
        content_path: None,
        kind: FindingKind::ObjectMissing,
        expected: None,
        actual: None,
        repaired: false,
        message: String::new(),
    };
    let target = root.store();
    // A damaged copy is refused whole.
    flip_bit(
        &replica_dir.join("objects/updates_all_actions/v3/content/my_content/poe-nevermore.txt"),
    );
    let sources = [Source {
        name: "replica",
        store: replica.as_ref(),
    }];
    let outcome = repair(
        target.as_ref(),
        "objects/updates_all_actions",
        &finding,
        &sources,
    )
    .unwrap();
    assert!(
        matches!(outcome, RepairOutcome::NoGoodCopy(_)),
        "{outcome:?}"
    );
    assert!(!object.exists(), "nothing written");
    // A good one is copied.
    flip_bit(
        &replica_dir.join("objects/updates_all_actions/v3/content/my_content/poe-nevermore.txt"),
    );
    let outcome = repair(
        target.as_ref(),
        "objects/updates_all_actions",
        &finding,
        &sources,
    )
    .unwrap();
    assert_eq!(
        outcome,
        RepairOutcome::Repaired {
            from: "replica".into()
        }
    );
    let auditor = Auditor::new(root.store(), "primary", settings(1, false));
    let report = run(&auditor, &root.checkpoint());
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert_eq!(report.objects, OBJECTS);
}

#[test]
fn a_stopped_run_resumes_and_counts_every_object_once() {
    let root = Root::new();
    flip_bit(&root.file("spec-ex-full", "v1/content/image.tiff"));
    let stop = Arc::new(AtomicBool::new(false));
    let hook_stop = stop.clone();
    let auditor = Auditor::new(root.store(), "primary", settings(1, false)).on_finding(Arc::new(
        move |_finding| hook_stop.store(true, Ordering::Relaxed),
    ));
    let checkpoint = root.checkpoint();
    let stopped = auditor.run(&checkpoint, false, &stop);
    assert!(
        matches!(stopped, Err(arca_fixity::Error::Stopped)),
        "{stopped:?}"
    );
    let saved = checkpoint.load().unwrap().expect("a checkpoint");
    let found = 1 + fixity_digests("spec-ex-full", "v1/content/image.tiff");
    assert!(
        saved.report.objects > 0 && saved.report.objects < OBJECTS,
        "{saved:?}"
    );
    assert_eq!(saved.report.findings.len(), found);
    let report = auditor
        .run(&checkpoint, true, &AtomicBool::new(false))
        .unwrap();
    assert_eq!(report.objects, OBJECTS);
    assert_eq!(report.id, saved.report.id, "the same run, continued");
    assert_eq!(report.findings.len(), found, "{:#?}", report.findings);
    assert!(!checkpoint.path().exists());
    // Without --resume a run starts over.
    stop.store(false, Ordering::Relaxed);
    let fresh = auditor.run(&checkpoint, false, &stop);
    assert!(fresh.is_err());
    let restarted = checkpoint.load().unwrap().unwrap();
    assert_ne!(restarted.report.id, report.id);
}

#[test]
fn only_the_objects_asked_for_are_audited() {
    let root = Root::new();
    flip_bit(&root.file("spec-ex-full", "v1/content/image.tiff"));
    flip_bit(&root.file("spec-ex-minimal", "v1/content/file.txt"));
    let mut settings = settings(2, false);
    settings.objects = vec!["ark:/12345".into()];
    let auditor = Auditor::new(root.store(), "primary", settings);
    let report = run(&auditor, &root.checkpoint());
    assert_eq!(report.objects, 1);
    assert!(report
        .findings
        .iter()
        .all(|f| f.object == id_of("spec-ex-full")
            && f.content_path.as_deref() == Some("v1/content/image.tiff")));
    assert_eq!(
        report.findings[0].kind,
        FindingKind::ContentDigest,
        "{:#?}",
        report.findings
    );
}

#[test]
fn a_rate_limit_slows_the_reads() {
    // Not a timing assertion: the limiter is asked for every byte read; here the audit of
    // the ~1 MB root at 100 MB/s finishes, with the same report as unlimited.
    let root = Root::new();
    let mut limited = settings(2, false);
    limited.max_bytes_per_second = Some(100_000_000);
    let report = run(
        &Auditor::new(root.store(), "primary", limited),
        &root.checkpoint(),
    );
    let unlimited = run(
        &Auditor::new(root.store(), "primary", settings(2, false)),
        &root.checkpoint(),
    );
    assert_eq!(report.bytes, unlimited.bytes);
    assert_eq!(report.files, unlimited.files);
}

#[test]
fn a_version_inventory_that_diverges_is_found_and_replaced() {
    let root = Root::new();
    let (_, replica) = root.replica("replica");
    // v1's inventory says another state of v1, with a sidecar that matches it.
    let v1 = root.file("updates_all_actions", "v1/inventory.json");
    let text = std::fs::read_to_string(&v1).unwrap();
    let changed = text.replacen("\"my_content/poe.txt", "\"my_content/poe-renamed.txt", 1);
    assert_ne!(text, changed);
    std::fs::write(&v1, &changed).unwrap();
    let digest =
        arca_model::MultiHasher::digest(arca_model::DigestAlgorithm::Sha512, changed.as_bytes());
    std::fs::write(
        root.file("updates_all_actions", "v1/inventory.json.sha512"),
        format!("{digest}  inventory.json\n"),
    )
    .unwrap();
    let auditor = Auditor::new(root.store(), "primary", settings(1, true))
        .with_sources(vec![("replica".into(), replica)]);
    let report = run(&auditor, &root.checkpoint());
    assert_eq!(
        summary(&report.findings),
        vec![(
            FindingKind::InventoryDiverges,
            id_of("updates_all_actions"),
            Some("v1/inventory.json".into())
        )]
    );
    assert_eq!(report.findings[0].version.as_deref(), Some("v1"));
    assert!(report.findings[0].repaired, "{:#?}", report.findings);
    assert_eq!(std::fs::read_to_string(&v1).unwrap(), text);
    assert!(run(&auditor, &root.checkpoint()).findings.is_empty());
}

#[test]
fn a_missing_root_inventory_is_named_by_the_object_id_and_restored() {
    let root = Root::new();
    let (_, replica) = root.replica("replica");
    std::fs::remove_file(root.file("updates_three_versions_one_file", "inventory.json")).unwrap();
    let auditor = Auditor::new(root.store(), "primary", settings(1, true))
        .with_sources(vec![("replica".into(), replica)]);
    let report = run(&auditor, &root.checkpoint());
    assert_eq!(
        summary(&report.findings),
        vec![(
            FindingKind::InventoryMissing,
            id_of("updates_three_versions_one_file"),
            Some("inventory.json".into())
        )]
    );
    assert!(report.findings[0].repaired, "{:#?}", report.findings);
    assert!(run(&auditor, &root.checkpoint()).findings.is_empty());
}
