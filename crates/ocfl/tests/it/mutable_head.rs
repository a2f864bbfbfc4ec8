//! OCFL extension 0005 (mutable HEAD) as ocfl-java writes it for Fedora 6: byte for byte
//! against the Fedora-written sample objects `mh1`/`mh2`, validated with ocfl-py, and
//! written onto the sample's own objects.

use crate::common::{copy_dir, head_file, open, put};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use arca_model::{DigestAlgorithm, DigestValue, MultiHasher};
use arca_ocfl::{Change, Content, HeadMode, VersionInfo};

const MH1: &str = "df1/17d/763/df117d7630469a2e6ca12e6f96061713c398aa78afe3b144e623fe2a5ef9140e";
const MH2: &str = "5a4/07f/e84/5a407fe84d648f90de6c014118ac959c76faceb478a8b23d1d6610db6d75b1bd";

fn sample() -> PathBuf {
    let sample =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/ocfl-fedora-sample/root");
    assert!(sample.exists(), "missing {sample:?}");
    sample
}

fn info(created: &str) -> VersionInfo {
    VersionInfo {
        created: created.into(),
        message: "Authored by Fedora 6.5.1".into(),
        user_name: "fedoraAdmin".into(),
        user_address: "info:fedora/fedoraAdmin".into(),
    }
}

/// Relative path → bytes of every file below `dir` (empty directories as `path/`).
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn rec(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let mut empty = true;
        for e in fs::read_dir(dir).unwrap() {
            empty = false;
            let p = e.unwrap().path();
            if p.is_dir() {
                rec(base, &p, out);
            } else {
                let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
        if empty && dir != base {
            let rel = dir
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.insert(format!("{rel}/"), Vec::new());
        }
    }
    let mut out = BTreeMap::new();
    rec(dir, dir, &mut out);
    out
}

fn paths(dir: &Path) -> Vec<String> {
    tree(dir).into_keys().collect()
}

/// ocfl-py's `ocfl-validate.py`: `$OCFL_VALIDATE`, `PATH`, or the venv in
/// `~/.cache/arca-venv`. `None` (after saying so) if there is none, unless
/// `ARCA_REQUIRE_VALIDATOR=1`.
fn ocfl_validator() -> Option<PathBuf> {
    if let Some(v) = std::env::var_os("OCFL_VALIDATE").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(v));
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("ocfl-validate.py"))
            .find(|p| p.is_file())
    });
    let venv = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache/arca-venv/bin/ocfl-validate.py"))
        .filter(|p| p.is_file());
    let found = on_path.or(venv);
    if found.is_none() {
        let msg = "ocfl-py's ocfl-validate.py is neither in $OCFL_VALIDATE, on PATH nor in \
                   ~/.cache/arca-venv (python3 -m venv ~/.cache/arca-venv && \
                   ~/.cache/arca-venv/bin/pip install ocfl-py)";
        if std::env::var("ARCA_REQUIRE_VALIDATOR").as_deref() == Ok("1") {
            panic!("ARCA_REQUIRE_VALIDATOR=1 but {msg}");
        }
        eprintln!("SKIPPED: independent OCFL validation: {msg}");
    }
    found
}

/// Validates one object with ocfl-py: VALID, no errors, and no warnings except W013 for
/// the mutable HEAD's extension directory (ocfl-py does not know 0005 is registered; it
/// validates the root versions and leaves the head alone) and, for a sha256 object, W004
/// (OCFL prefers sha512).
fn validate(object_dir: &Path) {
    let Some(validator) = ocfl_validator() else {
        return;
    };
    let out = Command::new(&validator).arg(object_dir).output().unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "ocfl-py: {report}");
    assert!(report.contains("is VALID"), "ocfl-py: {report}");
    let sha256 = object_dir.join("inventory.json.sha256").exists();
    for line in report.lines().filter(|l| l.starts_with('[')) {
        let head_extension =
            line.starts_with("[W013]") && line.contains("extensions/0005-mutable-head");
        let sha256_warning = sha256 && line.starts_with("[W004]");
        assert!(head_extension || sha256_warning, "ocfl-py: {report}");
    }
    let has_head = object_dir.join("extensions/0005-mutable-head").exists();
    assert_eq!(report.contains("[W013]"), has_head, "ocfl-py: {report}");
}

/// `mh1`: a new object written with auto-versioning off, then updated once. The same
/// object id, content and instants give the sample's files byte for byte: the empty v1,
/// the root inventory, the head inventory and sidecar, `revisions/r2` alone,
/// `root-inventory.json.sha512`, and only `r2` content.
#[test]
fn two_revisions_match_fedoras_mh1_byte_for_byte() {
    let golden = sample().join(MH1);
    let tmp = tempfile::tempdir().unwrap();
    let root = open(tmp.path());
    let id = "info:fedora/mh1";
    let staged = root
        .stage(
            id,
            None,
            vec![
                put("fcr-container.nt", b""),
                put(".fcrepo/fcr-root.json", b"{\"id\":\"info:fedora/mh1\"}"),
            ],
            info("2026-11-21T20:23:50.261504489Z"),
            HeadMode::Mutable,
        )
        .unwrap();
    assert_eq!(staged.new_version(), None);
    assert_eq!(
        staged.inventory.resolve_head("fcr-container.nt"),
        Some("extensions/0005-mutable-head/head/content/r1/fcr-container.nt")
    );
    root.publish(&staged).unwrap();
    let dir = root.object_dir(id).unwrap();
    assert_eq!(
        paths(&dir),
        [
            "0=ocfl_object_1.1",
            "extensions/0005-mutable-head/head/content/r1/.fcrepo/fcr-root.json",
            "extensions/0005-mutable-head/head/content/r1/fcr-container.nt",
            "extensions/0005-mutable-head/head/inventory.json",
            "extensions/0005-mutable-head/head/inventory.json.sha512",
            "extensions/0005-mutable-head/revisions/r1",
            "extensions/0005-mutable-head/root-inventory.json.sha512",
            "inventory.json",
            "inventory.json.sha512",
            "v1/inventory.json",
            "v1/inventory.json.sha512",
        ]
    );
    validate(&dir);

    let current = root.read_object(id).unwrap().unwrap();
    assert!(current.mutable_head);
    assert_eq!(current.revision(), Some(1));
    let content = |p: &str| {
        fs::read(
            golden
                .join("extensions/0005-mutable-head/head/content/r2")
                .join(p),
        )
        .unwrap()
    };
    let staged = root
        .stage(
            id,
            Some(&current),
            vec![
                put("fcr-container.nt", &content("fcr-container.nt")),
                put(".fcrepo/fcr-root.json", &content(".fcrepo/fcr-root.json")),
            ],
            info("2026-11-21T20:23:50.295669782Z"),
            HeadMode::Mutable,
        )
        .unwrap();
    root.publish(&staged).unwrap();
    validate(&dir);
    let ours = tree(&dir);
    let theirs = tree(&golden);
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &theirs {
        assert_eq!(
            String::from_utf8_lossy(&ours[path]),
            String::from_utf8_lossy(bytes),
            "{path}"
        );
    }
    let current = root.read_object(id).unwrap().unwrap();
    assert_eq!(current.inventory, staged.inventory);
    assert_eq!(
        head_file(&root, &current, "fcr-container.nt").unwrap(),
        dir.join("extensions/0005-mutable-head/head/content/r2/fcr-container.nt")
    );
}

/// `mh2`: created, its header updated, then "create version": the head becomes v2 with
/// its content under `v2/content/r1` and `v2/content/r2`, and the extension directory is
/// gone. Byte for byte the sample.
#[test]
fn committed_head_matches_fedoras_mh2_byte_for_byte() {
    let golden = sample().join(MH2);
    let tmp = tempfile::tempdir().unwrap();
    let root = open(tmp.path());
    let id = "info:fedora/mh2";
    let staged = root
        .stage(
            id,
            None,
            vec![
                put("fcr-container.nt", b""),
                put(".fcrepo/fcr-root.json", b"{\"id\":\"info:fedora/mh2\"}"),
            ],
            info("2026-11-21T20:23:50.302302515Z"),
            HeadMode::Mutable,
        )
        .unwrap();
    root.publish(&staged).unwrap();
    let current = root.read_object(id).unwrap().unwrap();
    let header = fs::read(golden.join("v2/content/r2/.fcrepo/fcr-root.json")).unwrap();
    let staged = root
        .stage(
            id,
            Some(&current),
            vec![put(".fcrepo/fcr-root.json", &header)],
            info("2026-11-21T20:23:50.322214236Z"),
            HeadMode::Mutable,
        )
        .unwrap();
    root.publish(&staged).unwrap();
    let dir = root.object_dir(id).unwrap();
    validate(&dir);

    let current = root.read_object(id).unwrap().unwrap();
    let staged = root
        .stage_commit_head(id, &current, info("2026-11-21T20:23:50.337437747Z"))
        .unwrap()
        .unwrap();
    assert_eq!(
        staged.new_version().map(|v| v.to_string()).as_deref(),
        Some("v2")
    );
    root.publish(&staged).unwrap();
    validate(&dir);
    let ours = tree(&dir);
    let theirs = tree(&golden);
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &theirs {
        assert_eq!(
            String::from_utf8_lossy(&ours[path]),
            String::from_utf8_lossy(bytes),
            "{path}"
        );
    }
    let current = root.read_object(id).unwrap().unwrap();
    assert!(!current.mutable_head);
    assert_eq!(current.inventory, staged.inventory);
    // No mutable HEAD: nothing to commit.
    assert!(root
        .stage_commit_head(id, &current, info("2026-11-21T20:23:51Z"))
        .unwrap()
        .is_none());
}

/// The brief's sequence: three revisions (one removes a path, one replaces an upload), a
/// commit, then a new immutable version, each checked by ocfl-py.
#[test]
fn revisions_commit_and_new_version_validate() {
    revisions_commit_and_new_version(DigestAlgorithm::Sha512);
}

/// The same with a sha256 object: every sidecar (the head's and the root copy too) is
/// named `.sha256`, and ocfl-py finds each version valid.
#[test]
fn sha256_revisions_commit_and_new_version_validate() {
    revisions_commit_and_new_version(DigestAlgorithm::Sha256);
}

fn revisions_commit_and_new_version(algorithm: DigestAlgorithm) {
    let tmp = tempfile::tempdir().unwrap();
    let root = open(tmp.path()).with_digest_algorithm(algorithm).unwrap();
    let alg = algorithm.ocfl_name();
    let id = "info:fedora/seq";
    let dir = root.object_dir(id).unwrap();
    let upload = root.uploads_dir().join("u1");
    fs::write(&upload, vec![9u8; 50_000]).unwrap();
    let sha = DigestValue {
        algorithm,
        hex: MultiHasher::digest(algorithm, &[9u8; 50_000]),
    };
    let staged = root
        .stage(
            id,
            None,
            vec![
                put("fcr-container.nt", b"<a> <b> \"1\" .\n"),
                put(".fcrepo/fcr-root.json", b"{\"v\":1}"),
                Change {
                    logical_path: "data file.bin".into(),
                    content: Some(Content::File {
                        path: upload,
                        digest: sha,
                    }),
                },
            ],
            info("2026-11-21T20:00:01.000000001Z"),
            HeadMode::Mutable,
        )
        .unwrap();
    root.publish(&staged).unwrap();
    validate(&dir);
    let current = root.read_object(id).unwrap().unwrap();
    assert_eq!(
        fs::read(head_file(&root, &current, "data file.bin").unwrap()).unwrap(),
        vec![9u8; 50_000]
    );
    assert!(dir
        .join("extensions/0005-mutable-head/head/content/r1/data%20file.bin")
        .is_file());

    // r2 changes the header and keeps the rest
    let staged = root
        .stage(
            id,
            Some(&current),
            vec![put(".fcrepo/fcr-root.json", b"{\"v\":2}")],
            info("2026-11-21T20:00:02Z"),
            HeadMode::Mutable,
        )
        .unwrap();
    root.publish(&staged).unwrap();
    validate(&dir);
    let current = root.read_object(id).unwrap().unwrap();
    assert_eq!(current.revision(), Some(2));

    // r3 removes a path: its r1 content goes, r1's header went already in r2
    let staged = root
        .stage(
            id,
            Some(&current),
            vec![Change {
                logical_path: "fcr-container.nt".into(),
                content: None,
            }],
            info("2026-11-21T20:00:03Z"),
            HeadMode::Mutable,
        )
        .unwrap();
    root.publish(&staged).unwrap();
    validate(&dir);
    let current = root.read_object(id).unwrap().unwrap();
    assert!(head_file(&root, &current, "fcr-container.nt").is_none());
    let ext: Vec<String> = paths(&dir.join("extensions/0005-mutable-head"));
    assert_eq!(
        ext,
        [
            "head/content/r1/data%20file.bin".to_string(),
            "head/content/r2/.fcrepo/fcr-root.json".into(),
            "head/inventory.json".into(),
            format!("head/inventory.json.{alg}"),
            "revisions/r3".into(),
            format!("root-inventory.json.{alg}"),
        ]
    );
    assert_eq!(current.inventory.head.to_string(), "v2");
    assert_eq!(current.inventory.manifest.len(), 2);

    // commit: v2 keeps the revision segments, the extension directory goes
    let staged = root
        .stage_commit_head(id, &current, info("2026-11-21T20:00:04Z"))
        .unwrap()
        .unwrap();
    root.publish(&staged).unwrap();
    validate(&dir);
    assert_eq!(
        paths(&dir),
        [
            "0=ocfl_object_1.1".to_string(),
            "inventory.json".into(),
            format!("inventory.json.{alg}"),
            "v1/inventory.json".into(),
            format!("v1/inventory.json.{alg}"),
            "v2/content/r1/data%20file.bin".into(),
            "v2/content/r2/.fcrepo/fcr-root.json".into(),
            "v2/inventory.json".into(),
            format!("v2/inventory.json.{alg}"),
        ]
    );
    assert_eq!(root.object_digest_algorithm(id).unwrap(), Some(algorithm));
    assert_eq!(
        fs::read(dir.join("inventory.json")).unwrap(),
        fs::read(dir.join("v2/inventory.json")).unwrap()
    );
    let current = root.read_object(id).unwrap().unwrap();
    assert!(!current.mutable_head);
    assert_eq!(
        head_file(&root, &current, "data file.bin").unwrap(),
        dir.join("v2/content/r1/data%20file.bin")
    );

    // an ordinary new version after it
    let staged = root
        .stage(
            id,
            Some(&current),
            vec![put("fcr-container.nt", b"<a> <b> \"5\" .\n")],
            info("2026-11-21T20:00:05Z"),
            HeadMode::NewVersion,
        )
        .unwrap();
    assert_eq!(
        staged.new_version().map(|v| v.to_string()).as_deref(),
        Some("v3")
    );
    root.publish(&staged).unwrap();
    validate(&dir);
    assert!(dir.join("v3/content/fcr-container.nt").is_file());

    // a mutable HEAD again, then NEW_VERSION on it: one more revision, committed at once
    let current = root.read_object(id).unwrap().unwrap();
    let staged = root
        .stage(
            id,
            Some(&current),
            vec![put("a", b"a")],
            info("2026-11-21T20:00:06Z"),
            HeadMode::Mutable,
        )
        .unwrap();
    root.publish(&staged).unwrap();
    validate(&dir);
    assert_eq!(
        fs::read(dir.join(format!(
            "extensions/0005-mutable-head/root-inventory.json.{alg}"
        )))
        .unwrap(),
        fs::read(dir.join(format!("inventory.json.{alg}"))).unwrap()
    );
    let current = root.read_object(id).unwrap().unwrap();
    assert_eq!(current.inventory.head.to_string(), "v4");
    let staged = root
        .stage(
            id,
            Some(&current),
            vec![put("b", b"b")],
            info("2026-11-21T20:00:07Z"),
            HeadMode::NewVersion,
        )
        .unwrap();
    assert_eq!(
        staged.new_version().map(|v| v.to_string()).as_deref(),
        Some("v4")
    );
    root.publish(&staged).unwrap();
    validate(&dir);
    assert!(dir.join("v4/content/r1/a").is_file());
    assert!(dir.join("v4/content/r2/b").is_file());
    assert!(!dir.join("extensions").exists());
    let current = root.read_object(id).unwrap().unwrap();
    assert_eq!(current.inventory, staged.inventory);
}

/// What a revision or a commit removes waits in staging only while its `Staged` lives
/// (undo may need it).
#[test]
fn staging_is_empty_once_the_staged_changes_are_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let root = open(tmp.path());
    let id = "info:fedora/s";
    for (n, mode) in [HeadMode::Mutable, HeadMode::Mutable, HeadMode::NewVersion]
        .into_iter()
        .enumerate()
    {
        let current = root.read_object(id).unwrap();
        let staged = root
            .stage(
                id,
                current.as_ref(),
                vec![put("a", n.to_string().as_bytes())],
                info("2026-11-21T20:00:00Z"),
                mode,
            )
            .unwrap();
        root.publish(&staged).unwrap();
        drop(staged);
        assert!(fs::read_dir(tmp.path().join("staging"))
            .unwrap()
            .all(|e| e.unwrap().file_name() == "uploads"));
    }
    assert_eq!(
        paths(&root.object_dir(id).unwrap()),
        [
            "0=ocfl_object_1.1",
            "inventory.json",
            "inventory.json.sha512",
            "v1/inventory.json",
            "v1/inventory.json.sha512",
            "v2/content/r3/a",
            "v2/inventory.json",
            "v2/inventory.json.sha512",
        ]
    );
}

/// arca writes onto the mutable HEAD Fedora left in the sample: a third revision, then the
/// commit; and the commit straight away on another copy.
#[test]
fn writes_onto_fedoras_mutable_head() {
    let id = "info:fedora/mh1";
    for direct_commit in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        copy_dir(&sample(), &tmp.path().join("root"));
        let root = open(tmp.path());
        let dir = root.object_dir(id).unwrap();
        let mut current = root.read_object(id).unwrap().unwrap();
        assert_eq!(current.revision(), Some(2));
        if !direct_commit {
            let staged = root
                .stage(
                    id,
                    Some(&current),
                    vec![put(
                        "fcr-container.nt",
                        b"<info:fedora/mh1> <http://purl.org/dc/terms/title> \"w\" .\n",
                    )],
                    info("2026-11-21T21:00:00Z"),
                    HeadMode::Mutable,
                )
                .unwrap();
            root.publish(&staged).unwrap();
            validate(&dir);
            assert_eq!(
                paths(&dir.join("extensions/0005-mutable-head")),
                [
                    "head/content/r2/.fcrepo/fcr-root.json",
                    "head/content/r3/fcr-container.nt",
                    "head/inventory.json",
                    "head/inventory.json.sha512",
                    "revisions/r3",
                    "root-inventory.json.sha512",
                ]
            );
            current = root.read_object(id).unwrap().unwrap();
        }
        let staged = root
            .stage_commit_head(id, &current, info("2026-11-21T21:00:01Z"))
            .unwrap()
            .unwrap();
        root.publish(&staged).unwrap();
        validate(&dir);
        let container = if direct_commit { "r2" } else { "r3" };
        assert_eq!(
            paths(&dir),
            [
                "0=ocfl_object_1.1".to_string(),
                "inventory.json".into(),
                "inventory.json.sha512".into(),
                "v1/inventory.json".into(),
                "v1/inventory.json.sha512".into(),
                "v2/content/r2/.fcrepo/fcr-root.json".into(),
                format!("v2/content/{container}/fcr-container.nt"),
                "v2/inventory.json".into(),
                "v2/inventory.json.sha512".into(),
            ]
        );
        let after = root.read_object(id).unwrap().unwrap();
        assert_eq!(after.inventory, staged.inventory);
        assert_eq!(after.inventory.versions.len(), 2);
    }
}

/// A Fedora-written object without a mutable HEAD gets one: v3 in the extension, with the
/// root sidecar copied as it is on disk.
#[test]
fn starts_a_mutable_head_on_fedoras_immutable_object() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&sample(), &tmp.path().join("root"));
    let root = open(tmp.path());
    let id = "info:fedora/c1";
    let current = root.read_object(id).unwrap().unwrap();
    assert_eq!(current.inventory.head.to_string(), "v2");
    let staged = root
        .stage(
            id,
            Some(&current),
            vec![put("fcr-container.nt", b"")],
            info("2026-11-21T21:00:00Z"),
            HeadMode::Mutable,
        )
        .unwrap();
    root.publish(&staged).unwrap();
    let dir = root.object_dir(id).unwrap();
    validate(&dir);
    let after = root.read_object(id).unwrap().unwrap();
    assert_eq!(after.inventory.head.to_string(), "v3");
    assert_eq!(after.revision(), Some(1));
    assert_eq!(
        fs::read(dir.join("extensions/0005-mutable-head/root-inventory.json.sha512")).unwrap(),
        fs::read(dir.join("inventory.json.sha512")).unwrap()
    );
    // the root itself is untouched
    assert_eq!(
        fs::read(dir.join("inventory.json")).unwrap(),
        fs::read(
            sample()
                .join(dir.strip_prefix(tmp.path().join("root")).unwrap())
                .join("inventory.json")
        )
        .unwrap()
    );
}
