//! A crash at every file boundary of every kind of mutable-HEAD change, followed by replay,
//! ends exactly where the uninterrupted publish ends; a failure at any file before the
//! commit point, undone, gives back the previous object.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use arca_model::{DigestAlgorithm, DigestValue, MultiHasher};

use crate::record::RecordFile;
use crate::{versions_record, Change, Content, HeadMode, OcflRoot, Staged, VersionInfo};

fn info(n: usize) -> VersionInfo {
    VersionInfo {
        created: format!("2026-11-21T20:23:5{n}.000000000Z"),
        message: "Authored by Fedora 6.5.1".into(),
        user_name: "fedoraAdmin".into(),
        user_address: "info:fedora/fedoraAdmin".into(),
    }
}

fn put(path: &str, bytes: &[u8]) -> Change {
    Change {
        logical_path: path.into(),
        content: Some(Content::Bytes(bytes.to_vec())),
    }
}

fn remove(path: &str) -> Change {
    Change {
        logical_path: path.into(),
        content: None,
    }
}

/// An upload in staging, as the HTTP layer leaves it, hashed with the root's algorithm.
fn upload(root: &OcflRoot, name: &str, path: &str, bytes: &[u8]) -> Change {
    let file = root.uploads_dir().join(name);
    fs::write(&file, bytes).unwrap();
    let algorithm = root.digest_algorithm();
    Change {
        logical_path: path.into(),
        content: Some(Content::File {
            path: file,
            digest: DigestValue {
                algorithm,
                hex: MultiHasher::digest(algorithm, bytes),
            },
        }),
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
    if dir.exists() {
        rec(dir, dir, &mut out);
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// A copied object is a new version of each file (a new tag): the staged change then
/// replaces the copies' versions, as if it had been planned from them.
fn refresh_tags(root: &OcflRoot, staged: &mut Staged) {
    let current = root.read_object(&staged.object_id).unwrap();
    staged.root_etag = current.as_ref().and_then(|c| c.root_etag.clone());
    staged.head_etag = current.and_then(|c| c.head_etag);
}

fn reset(live: &Path, snapshot: &Path) {
    fs::remove_dir_all(live).unwrap();
    copy_dir(snapshot, live);
}

#[test]
fn a_crash_at_any_file_then_replay_ends_like_the_uninterrupted_publish() {
    crash_at_any_file(DigestAlgorithm::Sha512);
}

#[test]
fn a_crash_at_any_file_of_a_sha256_object_then_replay_ends_like_the_uninterrupted_publish() {
    crash_at_any_file(DigestAlgorithm::Sha256);
}

fn crash_at_any_file(algorithm: DigestAlgorithm) {
    let tmp = tempfile::tempdir().unwrap();
    let live = tmp.path().join("live");
    let root = crate::root::local_root(&live.join("root"), &live.join("staging"))
        .unwrap()
        .with_digest_algorithm(algorithm)
        .unwrap();
    let id = "info:fedora/crash";
    let object_dir = root.object_dir(id).unwrap();
    let before = tmp.path().join("before");
    let after = tmp.path().join("after");
    let mut records = Vec::new();
    for step in 0..7 {
        let _ = fs::remove_dir_all(&before);
        // Uploads are in staging before the change is staged.
        let changes = match step {
            0 => vec![
                put("fcr-container.nt", b""),
                put(".fcrepo/fcr-root.json", b"{\"r\":1}"),
                upload(&root, "u0", "big", &[1u8; 70_000]),
            ],
            1 => vec![
                put(".fcrepo/fcr-root.json", b"{\"r\":2}"),
                upload(&root, "u1", "big", &[2u8; 70_000]),
            ],
            2 => vec![
                remove("fcr-container.nt"),
                put(".fcrepo/fcr-root.json", b"{\"r\":3}"),
            ],
            3 => Vec::new(),
            4 => vec![upload(&root, "u4", "big", &[4u8; 70_000])],
            5 => vec![put("fcr-container.nt", b"<a> <b> <c> .\n")],
            _ => vec![put(".fcrepo/fcr-root.json", b"{\"r\":7}")],
        };
        copy_dir(&live, &before);
        let current = root.read_object(id).unwrap();
        let mut staged: Staged = match step {
            0..=2 | 4 => root
                .stage(id, current.as_ref(), changes, info(step), HeadMode::Mutable)
                .unwrap(),
            3 => root
                .stage_commit_head(id, current.as_ref().unwrap(), info(step))
                .unwrap()
                .unwrap(),
            _ => root
                .stage(
                    id,
                    current.as_ref(),
                    changes,
                    info(step),
                    HeadMode::NewVersion,
                )
                .unwrap(),
        };
        records.push(versions_record(&format!("op{step}"), &[&staged]));

        // Uninterrupted.
        root.publish(&staged).unwrap();
        let expected = tree(&object_dir);
        let _ = fs::remove_dir_all(&after);
        copy_dir(&live, &after);
        let published = root.read_object(id).unwrap().unwrap();
        assert_eq!(published.inventory, staged.inventory, "step {step}");
        assert_eq!(
            published.inventory.content_digest().unwrap(),
            algorithm,
            "step {step}"
        );
        let sidecars = expected
            .keys()
            .filter(|f| f.contains("inventory.json."))
            .collect::<Vec<_>>();
        assert!(!sidecars.is_empty());
        assert!(
            sidecars
                .iter()
                .all(|f| f.ends_with(&format!("inventory.json.{}", algorithm.ocfl_name()))),
            "step {step}: {sidecars:?}"
        );

        // A failure after any number of files before the commit point, undone, leaves the
        // object as it was.
        let commit = staged
            .files
            .iter()
            .position(
                |f| matches!(f, RecordFile::Inline { rel, .. } if rel == staged.commit_point()),
            )
            .expect("a commit point");
        for k in 0..=commit {
            reset(&live, &before);
            refresh_tags(&root, &mut staged);
            for f in &staged.files[..k] {
                root.publish_file(&staged, f).unwrap();
            }
            root.undo(&staged).unwrap();
            assert_eq!(
                tree(&object_dir),
                tree(&before.join(object_dir.strip_prefix(&live).unwrap())),
                "step {step}: undo after {k} files"
            );
        }

        // A crash after any number of files, then replay of the whole journal.
        for k in 0..=staged.files.len() {
            reset(&live, &before);
            refresh_tags(&root, &mut staged);
            for f in &staged.files[..k] {
                root.publish_file(&staged, f).unwrap();
            }
            if let Err(e) = root.replay_all(&records) {
                panic!("step {step}: crash after {k} files: {e}");
            }
            root.clear_staging().unwrap();
            assert_eq!(
                tree(&object_dir),
                expected,
                "step {step}: crash after {k} of {} files",
                staged.files.len()
            );
            root.replay_all(&records).unwrap();
            assert_eq!(tree(&object_dir), expected, "step {step}: second replay");
        }
        // Without a journal (a remote store): a node stops after any number of files, and
        // another recovers the change from its pending record — finished if its commit
        // point was written, undone otherwise.
        let pending = crate::pending_record(&staged);
        for k in 0..=staged.files.len() {
            reset(&live, &before);
            refresh_tags(&root, &mut staged);
            for f in &staged.files[..k] {
                root.publish_file(&staged, f).unwrap();
            }
            let recovered = root.recover(&pending, false).unwrap();
            let want = if k > commit {
                (crate::Recovered::Finished, expected.clone())
            } else {
                let before_tree = tree(&before.join(object_dir.strip_prefix(&live).unwrap()));
                (crate::Recovered::Undone, before_tree)
            };
            assert_eq!(
                (recovered, tree(&object_dir)),
                want,
                "step {step}: recovery after {k} of {} files",
                staged.files.len()
            );
            root.recover(&pending, false).unwrap();
            assert_eq!(tree(&object_dir), want.1, "step {step}: second recovery");
        }
        reset(&live, &after);
    }
    let object = root.read_object(id).unwrap().unwrap();
    assert!(!object.mutable_head);
    assert_eq!(object.inventory.head.to_string(), "v4");
    let files: Vec<String> = tree(&object_dir).into_keys().collect();
    assert!(
        files.iter().all(|f| !f.starts_with("extensions")),
        "{files:?}"
    );
}

/// Publishing onto an object whose revision marker is already taken (a concurrent writer)
/// or whose root changed under its mutable HEAD fails before anything is written.
#[test]
fn refuses_conflicting_revisions() {
    let tmp = tempfile::tempdir().unwrap();
    let root = crate::root::local_root(&tmp.path().join("root"), &tmp.path().join("s")).unwrap();
    let id = "info:fedora/conflict";
    let s = root
        .stage(id, None, vec![put("a", b"1")], info(0), HeadMode::Mutable)
        .unwrap();
    root.publish(&s).unwrap();
    let current = root.read_object(id).unwrap().unwrap();
    let dir = root.local_path(&current.prefix).unwrap();
    let s = root
        .stage(
            id,
            Some(&current),
            vec![put("a", b"2")],
            info(1),
            HeadMode::Mutable,
        )
        .unwrap();
    fs::write(dir.join("extensions/0005-mutable-head/revisions/r2"), "r2").unwrap();
    let before = tree(&dir);
    assert!(root.publish(&s).is_err());
    assert_eq!(tree(&dir), before);
    fs::remove_file(dir.join("extensions/0005-mutable-head/revisions/r2")).unwrap();
    fs::write(
        dir.join("extensions/0005-mutable-head/root-inventory.json.sha512"),
        format!("{}  inventory.json\n", "0".repeat(128)),
    )
    .unwrap();
    assert!(root.publish(&s).is_err());
    let _: PathBuf = dir;
}

/// A publish that fails half-way (an upload that vanished) leaves the previous object:
/// for a revision of an existing head, and for a commit with changes.
#[test]
fn failed_publish_restores_the_mutable_head() {
    let tmp = tempfile::tempdir().unwrap();
    let root = crate::root::local_root(&tmp.path().join("root"), &tmp.path().join("s")).unwrap();
    let id = "info:fedora/fail";
    let s = root
        .stage(
            id,
            None,
            vec![put("a", b"1"), put("b", b"1b")],
            info(0),
            HeadMode::Mutable,
        )
        .unwrap();
    root.publish(&s).unwrap();
    let dir = root.object_dir(id).unwrap();
    let vanished = || Change {
        logical_path: "gone".into(),
        content: Some(Content::File {
            path: tmp.path().join("missing"),
            digest: DigestValue {
                algorithm: DigestAlgorithm::Sha512,
                hex: "ab".repeat(64),
            },
        }),
    };
    for mode in [HeadMode::Mutable, HeadMode::NewVersion] {
        let before = tree(&dir);
        let current = root.read_object(id).unwrap().unwrap();
        // replaces a (pruning r1/a in a revision), then fails on the upload
        let s = root
            .stage(
                id,
                Some(&current),
                vec![put("a", b"2"), vanished()],
                info(1),
                mode,
            )
            .unwrap();
        assert!(root.publish(&s).is_err());
        assert_eq!(tree(&dir), before, "{mode:?}");
    }
}
