//! Objects whose inventories use sha256 (OCFL allows sha512 or sha256; Fedora 6 writes
//! either, `fcrepo.persistence.defaultDigestAlgorithm`): the official fixtures read and
//! extended, sidecar names, and an object keeping its algorithm whatever the root's is.

use crate::common::{check_sidecar, copy_dir, head_file, info, put};
use std::fs;
use std::path::{Path, PathBuf};

use arca_model::{DigestAlgorithm, DigestValue, MultiHasher};
use arca_ocfl::{Change, Content, Error, HeadMode, Inventory};

fn fixture(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/ocfl-fixtures/1.1/warn-objects")
        .join(name);
    assert!(dir.exists(), "missing {dir:?}");
    dir
}

/// A store over the fixture's directory's parent (only read) and the fixture's prefix in it.
fn fixture_store(dir: &Path) -> (arca_storage::FsStorage, String) {
    let store = arca_storage::FsStorage::open(dir.parent().unwrap()).unwrap();
    let prefix = dir.file_name().unwrap().to_string_lossy().into_owned();
    (store, prefix)
}

fn inventory_at(dir: &Path) -> Inventory {
    Inventory::from_slice(&fs::read(dir.join("inventory.json")).unwrap()).unwrap()
}

/// Every `inventory.json*` name below `dir`, relative to it, sorted.
fn inventory_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("inventory.json")
            {
                out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

#[test]
#[allow(non_snake_case)]
fn W004_uses_sha256_reads_as_a_sha256_object() {
    let dir = fixture("W004_uses_sha256");
    let (store, prefix) = fixture_store(&dir);
    let object = arca_ocfl::read_object_in(&store, &prefix).unwrap().unwrap();
    assert_eq!(
        object.inventory.content_digest().unwrap(),
        DigestAlgorithm::Sha256
    );
    assert!(arca_ocfl::check_sidecar_in(&store, &prefix).unwrap());
    assert!(arca_ocfl::check_sidecar_in(&store, &format!("{prefix}/v1")).unwrap());
    // The manifest's digest is the sha256 of the content file.
    let file = arca_storage::ObjectStorage::read(&store, &object.head_key("a_file.txt").unwrap())
        .unwrap()
        .bytes;
    let digest = MultiHasher::digest(DigestAlgorithm::Sha256, &file);
    assert!(object.inventory.manifest.contains_key(&digest));
}

/// A sha512 object whose v1 was written with sha256: each version directory's sidecar is
/// checked with the algorithm its own inventory names.
#[test]
#[allow(non_snake_case)]
fn W004_versions_diff_digests_checks_each_sidecar_with_its_own_algorithm() {
    let dir = fixture("W004_versions_diff_digests");
    assert_eq!(
        inventory_at(&dir).content_digest().unwrap(),
        DigestAlgorithm::Sha512
    );
    assert_eq!(
        inventory_at(&dir.join("v1")).content_digest().unwrap(),
        DigestAlgorithm::Sha256
    );
    let (store, prefix) = fixture_store(&dir);
    for d in [
        prefix.clone(),
        format!("{prefix}/v1"),
        format!("{prefix}/v2"),
    ] {
        assert!(arca_ocfl::check_sidecar_in(&store, &d).unwrap(), "{d:?}");
    }
}

#[test]
fn inventories_name_only_sha512_or_sha256_for_content() {
    let mut inventory = inventory_at(&fixture("W004_uses_sha256"));
    for (name, ok) in [
        ("sha512", true),
        ("sha256", true),
        ("md5", false),
        ("sha1", false),
        ("SHA256", false),
    ] {
        inventory.digest_algorithm = name.into();
        assert_eq!(inventory.content_digest().is_ok(), ok, "{name}");
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = crate::common::local_root(&tmp.path().join("root"), &tmp.path().join("s")).unwrap();
    assert_eq!(root.digest_algorithm(), DigestAlgorithm::Sha512);
    assert!(root.with_digest_algorithm(DigestAlgorithm::Md5).is_err());
}

/// The fixture's sha256 object, placed into a root whose new objects get sha512, gets a
/// new version in sha256: digests (and so dedup) in sha256, every sidecar `.sha256`. An
/// upload hashed with another algorithm is refused before anything is written.
#[test]
fn a_new_version_of_a_sha256_object_stays_sha256() {
    let tmp = tempfile::tempdir().unwrap();
    let root = crate::common::local_root(&tmp.path().join("root"), &tmp.path().join("s")).unwrap();
    let source = fixture("W004_uses_sha256");
    let id = inventory_at(&source).id;
    let dir = root.object_dir(&id).unwrap();
    copy_dir(&source, &dir);
    assert_eq!(
        root.object_digest_algorithm(&id).unwrap(),
        Some(DigestAlgorithm::Sha256)
    );
    let current = root.read_object(&id).unwrap().unwrap();
    let stored = fs::read(head_file(&root, &current, "a_file.txt").unwrap()).unwrap();

    let upload = root.uploads_dir().join("u1");
    fs::write(&upload, b"uploaded").unwrap();
    let upload_with = |algorithm| Change {
        logical_path: "upload.bin".into(),
        content: Some(Content::File {
            path: upload.clone(),
            digest: DigestValue {
                algorithm,
                hex: MultiHasher::digest(algorithm, b"uploaded"),
            },
        }),
    };
    let refused = root.stage(
        &id,
        Some(&current),
        vec![upload_with(DigestAlgorithm::Sha512)],
        info(),
        HeadMode::NewVersion,
    );
    assert!(matches!(
        refused,
        Err(Error::DigestAlgorithm {
            expected: DigestAlgorithm::Sha256,
            found: DigestAlgorithm::Sha512,
            ..
        })
    ));

    let staged = root
        .stage(
            &id,
            Some(&current),
            vec![
                put("copy.txt", &stored),
                put("new.txt", b"new"),
                upload_with(DigestAlgorithm::Sha256),
            ],
            info(),
            HeadMode::NewVersion,
        )
        .unwrap();
    root.publish(&staged).unwrap();
    let object = root.read_object(&id).unwrap().unwrap();
    assert_eq!(object.inventory.digest_algorithm, "sha256");
    // The copy of stored bytes is deduplicated against the fixture's sha256 manifest.
    assert_eq!(
        head_file(&root, &object, "copy.txt").unwrap(),
        dir.join("v1/content/a_file.txt")
    );
    assert_eq!(
        object
            .inventory
            .head_state()
            .get("new.txt")
            .map(String::as_str),
        Some(MultiHasher::digest(DigestAlgorithm::Sha256, b"new").as_str())
    );
    assert_eq!(
        fs::read(head_file(&root, &object, "upload.bin").unwrap()).unwrap(),
        b"uploaded"
    );
    assert_eq!(
        inventory_files(&dir),
        [
            "inventory.json",
            "inventory.json.sha256",
            "v1/inventory.json",
            "v1/inventory.json.sha256",
            "v2/inventory.json",
            "v2/inventory.json.sha256",
        ]
    );
    for d in [dir.clone(), dir.join("v1"), dir.join("v2")] {
        assert!(check_sidecar(&root, &d), "{d:?}");
    }
}

/// A root whose new objects get sha256 writes them with sha256 sidecars; a sha512 object
/// already in it keeps sha512.
#[test]
fn new_objects_get_the_roots_algorithm_and_old_ones_keep_theirs() {
    let tmp = tempfile::tempdir().unwrap();
    let open = |algorithm| {
        crate::common::local_root(&tmp.path().join("root"), &tmp.path().join("s"))
            .unwrap()
            .with_digest_algorithm(algorithm)
            .unwrap()
    };
    let root = open(DigestAlgorithm::Sha512);
    let old = "info:fedora/old";
    let staged = root
        .stage(
            old,
            None,
            vec![put("a", b"1")],
            info(),
            HeadMode::NewVersion,
        )
        .unwrap();
    root.publish(&staged).unwrap();

    let root = open(DigestAlgorithm::Sha256);
    let new = "info:fedora/new";
    let staged = root
        .stage(
            new,
            None,
            vec![put("a", b"1")],
            info(),
            HeadMode::NewVersion,
        )
        .unwrap();
    root.publish(&staged).unwrap();
    let current = root.read_object(old).unwrap().unwrap();
    let staged = root
        .stage(
            old,
            Some(&current),
            vec![put("a", b"2")],
            info(),
            HeadMode::NewVersion,
        )
        .unwrap();
    root.publish(&staged).unwrap();

    assert_eq!(
        root.object_digest_algorithm(old).unwrap(),
        Some(DigestAlgorithm::Sha512)
    );
    assert_eq!(
        root.object_digest_algorithm(new).unwrap(),
        Some(DigestAlgorithm::Sha256)
    );
    assert_eq!(
        root.object_digest_algorithm("info:fedora/none").unwrap(),
        None
    );
    assert_eq!(
        inventory_files(&root.object_dir(old).unwrap()),
        [
            "inventory.json",
            "inventory.json.sha512",
            "v1/inventory.json",
            "v1/inventory.json.sha512",
            "v2/inventory.json",
            "v2/inventory.json.sha512",
        ]
    );
    assert_eq!(
        inventory_files(&root.object_dir(new).unwrap()),
        [
            "inventory.json",
            "inventory.json.sha256",
            "v1/inventory.json",
            "v1/inventory.json.sha256",
        ]
    );
    let new_inventory = root.read_object(new).unwrap().unwrap().inventory;
    assert_eq!(
        new_inventory.head_state().get("a").map(String::as_str),
        Some(MultiHasher::digest(DigestAlgorithm::Sha256, b"1").as_str())
    );
}
