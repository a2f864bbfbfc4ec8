//! Version commits, dedup, purge and crash recovery of the OCFL writer.

use crate::common::{check_sidecar, copy_dir, dir_of, head_file, info, open, put};
use std::fs;
use std::path::Path;

use arca_model::{DigestAlgorithm, DigestValue, MultiHasher};
use arca_ocfl::{Change, Content, HeadMode, ObjectState, OcflRoot};

/// Publishes object `id` with one version (file `a` holding `1`) and reads it back.
fn published_v1(root: &OcflRoot, id: &str) -> ObjectState {
    let staged = root
        .stage(id, None, vec![put("a", b"1")], info(), HeadMode::NewVersion)
        .unwrap();
    root.publish(&staged).unwrap();
    root.read_object(id).unwrap().unwrap()
}

#[test]
fn new_root_has_fedora_root_files() {
    let tmp = tempfile::tempdir().unwrap();
    open(tmp.path());
    let root = tmp.path().join("root");
    assert_eq!(fs::read(root.join("0=ocfl_1.1")).unwrap(), b"ocfl_1.1\n");
    assert!(root.join("ocfl_layout.json").is_file());
    assert!(root
        .join("extensions/0004-hashed-n-tuple-storage-layout/config.json")
        .is_file());
    // reopening an existing root works and does not rewrite it
    open(tmp.path());
}

/// Every version keeps its own inventory (head = that version) and sidecar, and the root
/// copy is the newest version's — even though the root copy starts as a hard link to the
/// version's file and is later replaced.
fn assert_inventories_intact(root: &OcflRoot, object_dir: &Path, versions: u32) {
    for v in 1..=versions {
        let dir = object_dir.join(format!("v{v}"));
        let inventory: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.join("inventory.json")).unwrap()).unwrap();
        assert_eq!(inventory["head"], format!("v{v}"));
        assert!(check_sidecar(root, &dir), "sidecar of v{v}");
    }
    assert!(check_sidecar(root, object_dir));
    assert_eq!(
        fs::read(object_dir.join("inventory.json")).unwrap(),
        fs::read(object_dir.join(format!("v{versions}/inventory.json"))).unwrap()
    );
}

#[test]
fn commits_versions_with_dedup_and_sidecars() {
    let tmp = tempfile::tempdir().unwrap();
    let root = open(tmp.path());
    let id = "info:fedora/c1";
    let staged = root
        .stage(
            id,
            None,
            vec![
                put("fcr-container.nt", b""),
                put(".fcrepo/fcr-root.json", b"{}"),
            ],
            info(),
            HeadMode::NewVersion,
        )
        .unwrap();
    root.publish(&staged).unwrap();

    let obj = root.read_object(id).unwrap().unwrap();
    assert_eq!(obj.inventory.head.to_string(), "v1");
    assert!(dir_of(&root, &obj)
        .join("v1/content/fcr-container.nt")
        .is_file());
    assert!(check_sidecar(&root, &dir_of(&root, &obj)));
    assert_eq!(
        fs::read(dir_of(&root, &obj).join("inventory.json")).unwrap(),
        fs::read(dir_of(&root, &obj).join("v1/inventory.json")).unwrap()
    );

    // v2 changes one file and adds one whose bytes are already stored: only one new file
    let staged = root
        .stage(
            id,
            Some(&obj),
            vec![
                put(".fcrepo/fcr-root.json", b"{\"a\":1}"),
                put("other", b""),
            ],
            info(),
            HeadMode::NewVersion,
        )
        .unwrap();
    root.publish(&staged).unwrap();
    let obj = root.read_object(id).unwrap().unwrap();
    assert_eq!(obj.inventory.head.to_string(), "v2");
    assert_inventories_intact(&root, &dir_of(&root, &obj), 2);
    let v2_files: Vec<_> = walk(&dir_of(&root, &obj).join("v2/content"));
    assert_eq!(v2_files, vec![".fcrepo/fcr-root.json".to_string()]);
    assert_eq!(
        head_file(&root, &obj, "other").unwrap(),
        dir_of(&root, &obj).join("v1/content/fcr-container.nt")
    );

    // removing a path drops it from the head state only
    let staged = root
        .stage(
            id,
            Some(&obj),
            vec![Change {
                logical_path: "other".into(),
                content: None,
            }],
            info(),
            HeadMode::NewVersion,
        )
        .unwrap();
    root.publish(&staged).unwrap();
    let obj = root.read_object(id).unwrap().unwrap();
    assert!(head_file(&root, &obj, "other").is_none());
    assert_inventories_intact(&root, &dir_of(&root, &obj), 3);
    assert!(
        !dir_of(&root, &obj).join("v3/content").exists(),
        "a version without new files has no content dir"
    );
    assert!(fs::read_dir(tmp.path().join("staging"))
        .unwrap()
        .all(|e| e.unwrap().file_name() == "uploads"));
}

#[test]
fn percent_encodes_content_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let root = open(tmp.path());
    let staged = root
        .stage(
            "info:fedora/ag1",
            None,
            vec![put("sub/data file.bin", b"BBBB")],
            info(),
            HeadMode::NewVersion,
        )
        .unwrap();
    root.publish(&staged).unwrap();
    let obj = root.read_object("info:fedora/ag1").unwrap().unwrap();
    assert!(dir_of(&root, &obj)
        .join("v1/content/sub/data%20file.bin")
        .is_file());
    assert_eq!(
        fs::read(head_file(&root, &obj, "sub/data file.bin").unwrap()).unwrap(),
        b"BBBB"
    );
}

#[test]
fn purge_removes_object_and_empty_parents() {
    let tmp = tempfile::tempdir().unwrap();
    let root = open(tmp.path());
    let staged = root
        .stage(
            "info:fedora/x",
            None,
            vec![put("a", b"1")],
            info(),
            HeadMode::NewVersion,
        )
        .unwrap();
    root.publish(&staged).unwrap();
    assert!(root.purge("info:fedora/x").unwrap());
    assert!(!root.purge("info:fedora/x").unwrap(), "purged already");
    let names: Vec<_> = fs::read_dir(tmp.path().join("root"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let mut names = names;
    names.sort();
    assert_eq!(names, vec!["0=ocfl_1.1", "extensions", "ocfl_layout.json"]);
}

#[test]
fn replay_completes_journaled_versions_and_skips_cancelled_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let root = open(tmp.path());
    let id = "info:fedora/r";
    // crash 1: v1 journaled, never published
    let staged = root
        .stage(id, None, vec![put("a", b"1")], info(), HeadMode::NewVersion)
        .unwrap();
    let record_v1 = arca_ocfl::versions_record("op1", &[&staged]);
    assert!(root.read_object(id).unwrap().is_none());
    assert_eq!(
        root.replay_all(std::slice::from_ref(&record_v1)).unwrap(),
        vec![id.to_string()]
    );
    let obj = root.read_object(id).unwrap().unwrap();
    assert_eq!(
        fs::read(head_file(&root, &obj, "a").unwrap()).unwrap(),
        b"1"
    );
    assert!(check_sidecar(&root, &dir_of(&root, &obj)));

    // crash 2: v2 with a large upload, half published (version files written, root
    // inventory still the old one, the upload already moved)
    let upload = tmp.path().join("staging/uploads/u1");
    fs::write(&upload, vec![7u8; 100_000]).unwrap();
    let sha = DigestValue {
        algorithm: DigestAlgorithm::Sha512,
        hex: MultiHasher::digest(DigestAlgorithm::Sha512, &[7u8; 100_000]),
    };
    let staged = root
        .stage(
            id,
            Some(&obj),
            vec![Change {
                logical_path: "big".into(),
                content: Some(Content::File {
                    path: upload.clone(),
                    digest: sha,
                }),
            }],
            info(),
            HeadMode::NewVersion,
        )
        .unwrap();
    let record_v2 = arca_ocfl::versions_record("op2", &[&staged]);
    fs::create_dir_all(dir_of(&root, &obj).join("v2/content")).unwrap();
    fs::rename(&upload, dir_of(&root, &obj).join("v2/content/big")).unwrap();
    fs::write(dir_of(&root, &obj).join("v2/inventory.json"), b"{\"partial").unwrap();
    // replaying both records in order is idempotent and ends at v2
    root.replay_all(&[record_v1, record_v2]).unwrap();
    root.clear_staging().unwrap();
    let obj = root.read_object(id).unwrap().unwrap();
    assert_eq!(obj.inventory.head.to_string(), "v2");
    assert_inventories_intact(&root, &dir_of(&root, &obj), 2);
    assert!(check_sidecar(&root, &dir_of(&root, &obj)));
    assert_eq!(
        fs::read(head_file(&root, &obj, "big").unwrap()).unwrap(),
        vec![7u8; 100_000]
    );
    assert_eq!(
        fs::read(dir_of(&root, &obj).join("inventory.json")).unwrap(),
        fs::read(dir_of(&root, &obj).join("v2/inventory.json")).unwrap()
    );

    // a cancelled operation is not replayed
    let staged = root
        .stage(
            id,
            Some(&obj),
            vec![put("a", b"3")],
            info(),
            HeadMode::NewVersion,
        )
        .unwrap();
    let record_v3 = arca_ocfl::versions_record("op3", &[&staged]);
    root.replay_all(&[record_v3, arca_ocfl::cancel_record("op3")])
        .unwrap();
    assert_eq!(
        root.read_object(id)
            .unwrap()
            .unwrap()
            .inventory
            .head
            .to_string(),
        "v2"
    );

    // a journaled purge is replayed too
    root.replay_all(&[arca_ocfl::purge_record(&[id])]).unwrap();
    assert!(root.read_object(id).unwrap().is_none());
}

#[test]
fn replay_removes_the_temporary_files_a_crash_left_in_an_object() {
    let tmp = tempfile::tempdir().unwrap();
    let root = open(tmp.path());
    let id = "info:fedora/t";
    let obj = published_v1(&root, id);
    let dir = dir_of(&root, &obj);
    let before = walk(&dir);
    // v2 journaled; the crash came while its writer had temporary files open: a sidecar
    // beside the root inventory, a content file, and one alone in a directory it made.
    let staged = root
        .stage(
            id,
            Some(&obj),
            vec![put("b", b"2")],
            info(),
            HeadMode::NewVersion,
        )
        .unwrap();
    let record = arca_ocfl::versions_record("op", &[&staged]);
    let leftovers = [
        dir.join(".inventory.json.sha512.4242-7.arca-tmp"),
        dir.join("v2/content/.b.4242-8.arca-tmp"),
        dir.join("v2/content/new/.c.4242-9.arca-tmp"),
    ];
    fs::create_dir_all(dir.join("v2/content/new")).unwrap();
    for f in &leftovers {
        fs::write(f, b"cut short").unwrap();
    }
    root.replay_all(&[record]).unwrap();
    let obj = root.read_object(id).unwrap().unwrap();
    assert_eq!(obj.inventory.head.to_string(), "v2");
    for f in &leftovers {
        assert!(!f.exists(), "{} is still there", f.display());
    }
    assert!(
        !dir.join("v2/content/new").exists(),
        "an emptied directory is left"
    );
    let after = walk(&dir);
    assert!(
        before.iter().all(|f| after.contains(f)),
        "a file of v1 went"
    );
    assert!(after.iter().all(|f| !f.ends_with(".arca-tmp")), "{after:?}");
    assert_inventories_intact(&root, &dir, 2);
    assert!(check_sidecar(&root, &dir));
}

#[test]
fn failed_publish_leaves_the_previous_version() {
    let tmp = tempfile::tempdir().unwrap();
    let root = open(tmp.path());
    let id = "info:fedora/f";
    let obj = published_v1(&root, id);
    let before = fs::read(dir_of(&root, &obj).join("inventory.json")).unwrap();
    // an upload that vanished makes publishing v2 fail half-way
    let staged = root
        .stage(
            id,
            Some(&obj),
            vec![
                put("b", b"2"),
                Change {
                    logical_path: "gone".into(),
                    content: Some(Content::File {
                        path: tmp.path().join("missing"),
                        digest: DigestValue {
                            algorithm: DigestAlgorithm::Sha512,
                            hex: "ab".repeat(64),
                        },
                    }),
                },
            ],
            info(),
            HeadMode::NewVersion,
        )
        .unwrap();
    assert!(root.publish(&staged).is_err());
    assert!(!dir_of(&root, &obj).join("v2").exists());
    assert_eq!(
        fs::read(dir_of(&root, &obj).join("inventory.json")).unwrap(),
        before
    );
    assert!(check_sidecar(&root, &dir_of(&root, &obj)));
}

#[test]
fn reads_the_fedora_written_sample_root() {
    let sample =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/ocfl-fedora-sample/root");
    assert!(sample.exists(), "missing {sample:?}");
    let tmp = tempfile::tempdir().unwrap();
    // open read-only copy so the shared sample is never touched
    let copy = tmp.path().join("root");
    copy_dir(&sample, &copy);
    let root = crate::common::local_root(&copy, &tmp.path().join("staging")).unwrap();
    let dirs = root.list_objects().unwrap();
    assert_eq!(dirs.len(), 6);
    // Walked group by group (as a rebuild lists), the same objects in the same order.
    let groups = root.object_groups().unwrap();
    assert!(groups.len() > 1 && !groups.iter().any(|g| g == "extensions"));
    let walked: Vec<String> = groups
        .iter()
        .flat_map(|g| root.objects_in_group(g).unwrap())
        .collect();
    assert_eq!(walked, dirs);
    let ag = root.read_object("info:fedora/ag1").unwrap().unwrap();
    assert_eq!(
        fs::read(head_file(&root, &ag, "sub/data file.bin").unwrap()).unwrap(),
        b"BBBB"
    );
    let mh = root.read_object("info:fedora/mh1").unwrap().unwrap();
    assert!(mh.mutable_head);
    assert_eq!(
        fs::read_to_string(head_file(&root, &mh, "fcr-container.nt").unwrap()).unwrap(),
        "<info:fedora/mh1> <http://purl.org/dc/terms/title> \"v\" .\n"
    );
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    fn rec(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                rec(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    rec(dir, dir, &mut out);
    out.sort();
    out
}

/// A directory's objects stay together in the walk's order, where byte order would put
/// another directory's between them (`a`, `a-b/d`, `a/c`).
#[test]
fn the_walk_order_keeps_a_directorys_objects_together() {
    let mut keys = vec!["a/c", "ab/x", "a-b/d", "a"];
    keys.sort_by(|a, b| arca_ocfl::walk_order(a, b));
    assert_eq!(keys, ["a-b/d", "a", "a/c", "ab/x"]);
}
