//! One suite every store must pass: each case below runs against [`FsStorage`] on a
//! temporary directory (`fs::…`) and against [`S3Storage`] on a real MinIO (`s3::…`, under a
//! key prefix of its own in the process's shared server; `NOT RUN` without MinIO unless
//! `ARCA_REQUIRE_S3=1`). The failures only S3 has (credentials, bucket, a stopped
//! service) are in `s3_faults.rs`.

use std::io::{Read, Write};
use std::sync::{Arc, Barrier};

use arca_storage::{
    ETag, FsStorage, ObjectStorage, Precondition, S3Credentials, S3Settings, S3Storage, StoreError,
};
use arca_testkit::s3::{Minio, REGION, ROOT_PASSWORD, ROOT_USER};
use sha2::{Digest, Sha256};

/// The bucket of the S3 cases: without versioning, see `Backend::s3`.
const CONFORMANCE_BUCKET: &str = "arca-conformance";

/// A store of each kind for one test, with what must live as long as it.
struct Backend {
    store: Arc<dyn ObjectStorage>,
    _dir: Option<tempfile::TempDir>,
}

impl Backend {
    fn fs() -> Backend {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = FsStorage::open(&dir.path().join("root")).expect("the filesystem store");
        Backend {
            store: Arc::new(store),
            _dir: Some(dir),
        }
    }

    /// The filesystem store in deferred mode (the journaled write path's): the same
    /// answers, without syncs.
    fn fs_deferred() -> Backend {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store =
            FsStorage::open_deferred(&dir.path().join("root")).expect("the filesystem store");
        Backend {
            store: Arc::new(store),
            _dir: Some(dir),
        }
    }

    /// An S3 store under the prefix `<case>` of a bucket of the shared MinIO without
    /// versioning. (In a versioned MinIO bucket a directory whose files were all deleted
    /// still lists, its delete markers being objects to MinIO's listing; Amazon S3 lists
    /// current objects only. arca's walks tell objects by their files, so they do not
    /// depend on it; the cases below assert the plain semantics.)
    fn s3(case: &str) -> Option<Backend> {
        static BUCKET_MADE: std::sync::Once = std::sync::Once::new();
        let minio = Minio::shared()?;
        BUCKET_MADE.call_once(|| minio.create_bucket(CONFORMANCE_BUCKET, false));
        let store = S3Storage::open_with_credentials(
            S3Settings {
                endpoint: Some(minio.endpoint()),
                bucket: CONFORMANCE_BUCKET.to_string(),
                prefix: case.to_string(),
                region: REGION.to_string(),
                allow_http: true,
            },
            S3Credentials {
                access_key_id: ROOT_USER.to_string(),
                secret_access_key: ROOT_PASSWORD.to_string(),
                session_token: None,
            },
        )
        .expect("the S3 store opens on MinIO");
        Some(Backend {
            store: Arc::new(store),
            _dir: None,
        })
    }
}

/// One `#[test]` per case and backend: `fs::<case>`, `fs_deferred::<case>` and
/// `s3::<case>`.
macro_rules! on_every_store {
    ($($case:ident),* $(,)?) => {
        mod fs {
            $(
                #[test]
                fn $case() {
                    let backend = super::Backend::fs();
                    super::$case(&backend.store);
                }
            )*
        }
        mod fs_deferred {
            $(
                #[test]
                fn $case() {
                    let backend = super::Backend::fs_deferred();
                    super::$case(&backend.store);
                }
            )*
        }
        mod s3 {
            $(
                #[test]
                fn $case() {
                    let Some(backend) = super::Backend::s3(stringify!($case)) else {
                        return;
                    };
                    super::$case(&backend.store);
                }
            )*
        }
    };
}

on_every_store!(
    bytes_round_trip,
    files_written_together,
    empty_files,
    keys_as_ocfl_spells_them,
    metadata_of_files_and_of_what_is_not_one,
    range_reads,
    missing_files_are_not_found,
    delete_is_idempotent,
    recursive_listing_respects_prefix_boundaries,
    delimiter_listing_gives_one_level,
    copy_and_rename,
    create_only_if_absent,
    update_only_with_the_current_etag,
    racing_updates_from_one_etag_have_one_winner,
    racing_creates_have_one_winner,
    large_file_moves_in_and_streams_back,
    small_file_moves_in,
    invalid_keys_are_refused,
    calls_from_spawn_blocking_threads,
    delete_prefix_removes_a_directory,
    put_copy_stores_the_same_bytes,
    local_paths_hold_the_bytes,
    directories_move_in_whole_or_not_at_all,
);

type Store = Arc<dyn ObjectStorage>;

fn read_all(store: &dyn ObjectStorage, key: &str, range: std::ops::Range<u64>) -> Vec<u8> {
    let mut reader = store.read_range(key, range).expect("the range opens");
    let mut out = Vec::new();
    reader.read_to_end(&mut out).expect("the range reads");
    out
}

fn keys(files: &[arca_storage::FileInfo]) -> Vec<&str> {
    files.iter().map(|f| f.key.as_str()).collect()
}

/// Deterministic bytes that do not repeat with any short period.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 56) as u8
        })
        .collect()
}

fn bytes_round_trip(store: &Store) {
    let key = "obj/v1/content/file.txt";
    let etag = store.put(key, b"hello, world").unwrap();
    let read = store.read(key).unwrap();
    assert_eq!(read.bytes, b"hello, world");
    assert_eq!(read.etag, etag, "read reports the tag the put returned");

    let replaced = store.put(key, b"goodbye").unwrap();
    assert_ne!(replaced, etag, "a new version has a new tag");
    let read = store.read(key).unwrap();
    assert_eq!(read.bytes, b"goodbye");
    assert_eq!(read.etag, replaced);
}

fn files_written_together(store: &Store) {
    store.put("together/v1/content/a", b"old").unwrap();
    let contents: Vec<(String, Vec<u8>)> = (0..6)
        .map(|n| {
            (
                format!("together/v1/content/{n}"),
                pattern(100 + n * 3000, n as u64),
            )
        })
        .chain([("together/v1/content/a".to_string(), b"new".to_vec())])
        .collect();
    let files: Vec<(&str, &[u8])> = contents
        .iter()
        .map(|(key, bytes)| (key.as_str(), bytes.as_slice()))
        .collect();
    let tags = store.put_all(&files).unwrap();
    assert_eq!(tags.len(), files.len(), "one tag per file, in order");
    for ((key, bytes), tag) in files.iter().zip(&tags) {
        let read = store.read(key).unwrap();
        assert_eq!(&read.bytes, bytes, "{key}");
        assert_eq!(&read.etag, tag, "{key}: the tag of the version written");
    }
    assert_eq!(
        store.list("together").unwrap().len(),
        7,
        "a replaced, 0-5 added"
    );
    assert_eq!(store.put_all(&[]).unwrap(), Vec::new(), "nothing to write");

    // A malformed key refuses the whole call before anything is sent on S3; either way
    // the error names the key.
    let refused = store.put_all(&[("together/b", b"x"), ("bad//key", b"y")]);
    assert!(
        matches!(&refused, Err(StoreError::InvalidKey { key, .. }) if key == "bad//key"),
        "{refused:?}"
    );
}

fn empty_files(store: &Store) {
    let key = "obj/0=ocfl_object_1.1-empty";
    store.put(key, b"").unwrap();
    assert_eq!(store.read(key).unwrap().bytes, b"");
    let info = store.metadata(key).unwrap().expect("an empty file exists");
    assert_eq!(info.size, 0);
    assert_eq!(read_all(store.as_ref(), key, 0..10), b"");
    assert_eq!(keys(&store.list("obj").unwrap()), [key]);
}

fn keys_as_ocfl_spells_them(store: &Store) {
    let names = [
        "0=ocfl_1.1",
        "a1b/2c3/d4e/a1b2c3d4e5/v1/content/.fcrepo/fcr-root.json",
        "a1b/2c3/d4e/a1b2c3d4e5/v1/content/info%3Afedora%2Fbooks%2Fch1",
        "a1b/2c3/d4e/a1b2c3d4e5/v1/content/100%25 done (final) + more=yes~.txt",
        "a1b/2c3/d4e/a1b2c3d4e5/v1/content/ünïcödé/日本語/файл",
        "a1b/2c3/d4e/a1b2c3d4e5/extensions/0005-mutable-head/head/content/r1/a/b/c/d/e/f/g/h/i/j",
        "x/'quoted' & \"double\" #hash ?query *star [br] {cb} ^caret `tick` |pipe\\back",
    ];
    for (n, key) in names.iter().enumerate() {
        store.put(key, format!("content {n}").as_bytes()).unwrap();
    }
    for (n, key) in names.iter().enumerate() {
        assert_eq!(
            store.read(key).unwrap().bytes,
            format!("content {n}").as_bytes(),
            "{key}"
        );
        assert!(store.metadata(key).unwrap().is_some(), "{key}");
    }
    let mut expected: Vec<&str> = names.to_vec();
    expected.sort();
    assert_eq!(keys(&store.list("").unwrap()), expected);
    let content = store.list_dir("a1b/2c3/d4e/a1b2c3d4e5/v1/content").unwrap();
    assert_eq!(
        content.dirs,
        [
            "a1b/2c3/d4e/a1b2c3d4e5/v1/content/.fcrepo",
            "a1b/2c3/d4e/a1b2c3d4e5/v1/content/ünïcödé",
        ]
    );
    assert_eq!(
        keys(&content.files),
        [
            "a1b/2c3/d4e/a1b2c3d4e5/v1/content/100%25 done (final) + more=yes~.txt",
            "a1b/2c3/d4e/a1b2c3d4e5/v1/content/info%3Afedora%2Fbooks%2Fch1",
        ]
    );
}

fn metadata_of_files_and_of_what_is_not_one(store: &Store) {
    let etag = store.put("o/inventory.json", &[7u8; 1234]).unwrap();
    let info = store.metadata("o/inventory.json").unwrap().unwrap();
    assert_eq!(info.key, "o/inventory.json");
    assert_eq!(info.size, 1234);
    assert_eq!(info.etag, etag);
    assert_eq!(info.etag, store.read("o/inventory.json").unwrap().etag);
    assert_eq!(store.metadata("o/missing").unwrap(), None);
    assert_eq!(
        store.metadata("o").unwrap(),
        None,
        "a directory is not a file"
    );
    assert_eq!(store.metadata("o/inventory.json/below").unwrap(), None);
}

fn range_reads(store: &Store) {
    let bytes = pattern(1000, 1);
    store.put("r/file", &bytes).unwrap();
    let s = store.as_ref();
    assert_eq!(read_all(s, "r/file", 0..10), bytes[0..10]);
    assert_eq!(read_all(s, "r/file", 500..600), bytes[500..600]);
    assert_eq!(read_all(s, "r/file", 990..1000), bytes[990..1000]);
    assert_eq!(read_all(s, "r/file", 0..1000), bytes);
    assert_eq!(
        read_all(s, "r/file", 0..u64::MAX),
        bytes,
        "the end is clipped"
    );
    assert_eq!(read_all(s, "r/file", 990..2000), bytes[990..1000]);
    assert_eq!(read_all(s, "r/file", 999..1000), bytes[999..1000]);
    assert_eq!(
        read_all(s, "r/file", 1000..1010),
        b"",
        "at the end: nothing"
    );
    assert_eq!(
        read_all(s, "r/file", 2000..3000),
        b"",
        "past the end: nothing"
    );
    assert_eq!(read_all(s, "r/file", 10..10), b"", "an empty range");
    // A reader hands the bytes out in whatever pieces the caller asks for.
    let mut reader = store.read_range("r/file", 100..900).unwrap();
    let mut small = [0u8; 7];
    let mut collected = Vec::new();
    loop {
        let n = reader.read(&mut small).unwrap();
        if n == 0 {
            break;
        }
        collected.extend_from_slice(&small[..n]);
    }
    assert_eq!(collected, bytes[100..900]);
}

fn missing_files_are_not_found(store: &Store) {
    store.put("m/present", b"x").unwrap();
    let not_found = |result: Result<(), StoreError>, what: &str| match result {
        Err(StoreError::NotFound { key }) => assert_eq!(key, "m/absent", "{what}"),
        other => panic!("{what}: expected NotFound, got {other:?}"),
    };
    not_found(store.read("m/absent").map(drop), "read");
    not_found(store.read_range("m/absent", 0..10).map(drop), "read_range");
    not_found(
        store.read_range("m/absent", 5..5).map(drop),
        "empty read_range",
    );
    not_found(store.copy("m/absent", "m/copy"), "copy");
    not_found(store.rename("m/absent", "m/moved"), "rename");
    assert_eq!(store.metadata("m/copy").unwrap(), None);
    assert_eq!(store.metadata("m/moved").unwrap(), None);
    assert!(
        matches!(store.read("m"), Err(StoreError::NotFound { .. })),
        "a directory"
    );
}

fn delete_is_idempotent(store: &Store) {
    store.put("d/a/b/file", b"x").unwrap();
    store.put("d/keep", b"y").unwrap();
    store.delete("d/a/b/file").unwrap();
    assert_eq!(store.metadata("d/a/b/file").unwrap(), None);
    store.delete("d/a/b/file").unwrap();
    store.delete("d/never/was").unwrap();
    store.delete("d").unwrap();
    assert_eq!(
        store.read("d/keep").unwrap().bytes,
        b"y",
        "deleting a prefix deletes nothing"
    );
    let listing = store.list_dir("d").unwrap();
    assert!(
        listing.dirs.is_empty(),
        "an emptied directory is gone: {:?}",
        listing.dirs
    );
    assert_eq!(keys(&listing.files), ["d/keep"]);
    assert_eq!(keys(&store.list("").unwrap()), ["d/keep"]);
}

fn recursive_listing_respects_prefix_boundaries(store: &Store) {
    let all = [
        "a-b",
        "aa",
        "ab/x",
        "ab/y/z",
        "ab/y/zz/deep",
        "abc",
        "abc/d",
        "b",
    ];
    // "abc" cannot be both a file and a directory on a filesystem; use "abcd" for the file.
    let all: Vec<String> = all
        .iter()
        .map(|k| {
            if *k == "abc" {
                "abcd".to_string()
            } else {
                k.to_string()
            }
        })
        .collect();
    for key in all.iter().rev() {
        store.put(key, key.as_bytes()).unwrap();
    }
    assert_eq!(
        keys(&store.list("ab").unwrap()),
        ["ab/x", "ab/y/z", "ab/y/zz/deep"]
    );
    assert_eq!(
        keys(&store.list("ab/y").unwrap()),
        ["ab/y/z", "ab/y/zz/deep"]
    );
    assert_eq!(keys(&store.list("abc").unwrap()), ["abc/d"]);
    assert_eq!(keys(&store.list("a").unwrap()), Vec::<&str>::new());
    assert_eq!(keys(&store.list("nothing").unwrap()), Vec::<&str>::new());
    assert_eq!(
        keys(&store.list("b").unwrap()),
        Vec::<&str>::new(),
        "a file is no prefix"
    );
    let mut sorted = all.clone();
    sorted.sort();
    let listed = store.list("").unwrap();
    assert_eq!(
        keys(&listed),
        sorted.iter().map(String::as_str).collect::<Vec<_>>()
    );
    for info in &listed {
        assert_eq!(info.size, info.key.len() as u64);
        assert_eq!(info.etag, store.read(&info.key).unwrap().etag);
    }
}

fn delimiter_listing_gives_one_level(store: &Store) {
    for key in [
        "0=ocfl_1.1",
        "ocfl_layout.json",
        "extensions/0004/config.json",
        "ab/x",
        "ab/y/z",
        "abc/d",
        "abcd",
    ] {
        store.put(key, b"-").unwrap();
    }
    let root = store.list_dir("").unwrap();
    assert_eq!(root.dirs, ["ab", "abc", "extensions"]);
    assert_eq!(
        keys(&root.files),
        ["0=ocfl_1.1", "abcd", "ocfl_layout.json"]
    );
    let ab = store.list_dir("ab").unwrap();
    assert_eq!(ab.dirs, ["ab/y"]);
    assert_eq!(keys(&ab.files), ["ab/x"]);
    assert_eq!(ab.files[0].size, 1);
    let abc = store.list_dir("abc").unwrap();
    assert!(abc.dirs.is_empty());
    assert_eq!(keys(&abc.files), ["abc/d"]);
    assert_eq!(store.list_dir("nothing").unwrap(), Default::default());
    assert_eq!(
        store.list_dir("abcd").unwrap(),
        Default::default(),
        "a file is no directory"
    );
}

fn copy_and_rename(store: &Store) {
    store.put("c/head/content/r1/file", b"version one").unwrap();
    store
        .copy("c/head/content/r1/file", "c/v2/content/r1/file")
        .unwrap();
    assert_eq!(
        store.read("c/head/content/r1/file").unwrap().bytes,
        b"version one"
    );
    assert_eq!(
        store.read("c/v2/content/r1/file").unwrap().bytes,
        b"version one"
    );

    store.put("c/head/content/r2/other", b"moved").unwrap();
    store
        .rename("c/head/content/r2/other", "c/v2/content/r2/other")
        .unwrap();
    assert_eq!(store.metadata("c/head/content/r2/other").unwrap(), None);
    assert_eq!(store.read("c/v2/content/r2/other").unwrap().bytes, b"moved");
    assert_eq!(
        store.list_dir("c/head/content").unwrap().dirs,
        ["c/head/content/r1"]
    );

    store.put("c/replacement", b"new").unwrap();
    store
        .rename("c/replacement", "c/v2/content/r1/file")
        .unwrap();
    assert_eq!(store.read("c/v2/content/r1/file").unwrap().bytes, b"new");
    store
        .copy("c/head/content/r1/file", "c/v2/content/r1/file")
        .unwrap();
    assert_eq!(
        store.read("c/v2/content/r1/file").unwrap().bytes,
        b"version one"
    );
}

fn create_only_if_absent(store: &Store) {
    let key = "p/inventory.json";
    let etag = store.put_if(key, b"first", Precondition::Absent).unwrap();
    assert_eq!(store.read(key).unwrap().etag, etag);
    match store.put_if(key, b"second", Precondition::Absent) {
        Err(StoreError::PreconditionFailed { key: k }) => assert_eq!(k, key),
        other => panic!("expected PreconditionFailed, got {other:?}"),
    }
    let read = store.read(key).unwrap();
    assert_eq!(read.bytes, b"first");
    assert_eq!(read.etag, etag);
}

fn update_only_with_the_current_etag(store: &Store) {
    let key = "u/inventory.json";
    let first = store.put(key, b"v1").unwrap();
    let second = store
        .put_if(key, b"v2", Precondition::Matches(first.clone()))
        .unwrap();
    assert_ne!(first, second);
    let stale = store.put_if(key, b"v3", Precondition::Matches(first.clone()));
    assert!(
        matches!(stale, Err(StoreError::PreconditionFailed { .. })),
        "{stale:?}"
    );
    assert_eq!(store.read(key).unwrap().bytes, b"v2");
    let third = store
        .put_if(key, b"v3", Precondition::Matches(second.clone()))
        .unwrap();
    assert_eq!(
        store.read(key).unwrap(),
        arca_storage::Contents {
            bytes: b"v3".to_vec(),
            etag: third
        }
    );

    let made_up = store.put_if(
        key,
        b"v4",
        Precondition::Matches(ETag::new("\"no-such-tag\"")),
    );
    assert!(
        matches!(made_up, Err(StoreError::PreconditionFailed { .. })),
        "{made_up:?}"
    );
    let absent = store.put_if("u/absent", b"x", Precondition::Matches(second));
    assert!(
        matches!(absent, Err(StoreError::PreconditionFailed { .. })),
        "{absent:?}"
    );
    assert_eq!(store.metadata("u/absent").unwrap(), None);
    assert_eq!(store.read(key).unwrap().bytes, b"v3");
}

/// How many writers race in each round, and how many rounds.
const RACERS: usize = 8;
const ROUNDS: usize = 5;

fn racing_updates_from_one_etag_have_one_winner(store: &Store) {
    let key = "race/inventory.json";
    let mut current = store.put(key, b"round 0").unwrap();
    for round in 1..=ROUNDS {
        let barrier = Barrier::new(RACERS);
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..RACERS)
                .map(|racer| {
                    let (barrier, etag) = (&barrier, current.clone());
                    scope.spawn(move || {
                        let bytes = format!("round {round} by {racer}");
                        barrier.wait();
                        (
                            bytes.clone(),
                            store.put_if(key, bytes.as_bytes(), Precondition::Matches(etag)),
                        )
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners: Vec<_> = results.iter().filter(|(_, r)| r.is_ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        for (_, result) in &results {
            if let Err(e) = result {
                assert!(e.is_precondition_failed(), "round {round}: {e:?}");
            }
        }
        let (bytes, result) = winners[0];
        let read = store.read(key).unwrap();
        assert_eq!(
            read.bytes,
            bytes.as_bytes(),
            "round {round}: the winner's bytes are stored"
        );
        current = result.as_ref().unwrap().clone();
        assert_eq!(read.etag, current);
    }
}

fn racing_creates_have_one_winner(store: &Store) {
    for round in 0..ROUNDS {
        let key = format!("create-race/{round}/0=ocfl_object_1.1");
        let barrier = Barrier::new(RACERS);
        let wins = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..RACERS)
                .map(|racer| {
                    let (barrier, key) = (&barrier, &key);
                    scope.spawn(move || {
                        barrier.wait();
                        store.put_if(key, format!("{racer}").as_bytes(), Precondition::Absent)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .filter(|r| match r {
                    Ok(_) => true,
                    Err(e) => {
                        assert!(e.is_precondition_failed(), "{e:?}");
                        false
                    }
                })
                .count()
        });
        assert_eq!(wins, 1, "round {round}");
    }
}

fn sha256_of(reader: &mut dyn Read) -> (String, u64) {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        let n = reader.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        total += n as u64;
        hasher.update(&buf[..n]);
    }
    (hex::encode(hasher.finalize()), total)
}

/// 40 MB and a bit: five 8 MiB parts on S3.
const LARGE: usize = 40 * 1000 * 1000 + 12_345;

fn large_file_moves_in(store: &Store) -> (Vec<u8>, String) {
    let dir = tempfile::tempdir().unwrap();
    let upload = dir.path().join("upload");
    let bytes = pattern(LARGE, 40);
    std::fs::File::create(&upload)
        .unwrap()
        .write_all(&bytes)
        .unwrap();
    let digest = hex::encode(Sha256::digest(&bytes));
    let key = "big/v1/content/large.bin";
    let etag = store.move_file(&upload, key).unwrap();
    assert!(!upload.exists(), "the upload was moved, not copied");
    let info = store.metadata(key).unwrap().unwrap();
    assert_eq!(info.size, LARGE as u64);
    assert_eq!(info.etag, etag);
    (bytes, digest)
}

fn large_file_moves_in_and_streams_back(store: &Store) {
    let (bytes, digest) = large_file_moves_in(store);
    let key = "big/v1/content/large.bin";
    let mut whole = store.read_range(key, 0..u64::MAX).unwrap();
    assert_eq!(sha256_of(&mut whole), (digest, LARGE as u64));
    // Across the boundary of the first two 8 MiB parts.
    let part = 8 * 1024 * 1024u64;
    let across = (part - 1000)..(part + 1000);
    assert_eq!(
        read_all(store.as_ref(), key, across.clone()),
        bytes[across.start as usize..across.end as usize]
    );
    let tail = (LARGE as u64 - 10)..(LARGE as u64 + 10);
    assert_eq!(read_all(store.as_ref(), key, tail), bytes[LARGE - 10..]);
}

fn small_file_moves_in(store: &Store) {
    let dir = tempfile::tempdir().unwrap();
    let upload = dir.path().join("upload");
    std::fs::write(&upload, b"a small upload").unwrap();
    store.put("s/v1/content/file", b"older").unwrap();
    let etag = store.move_file(&upload, "s/v1/content/file").unwrap();
    assert!(!upload.exists());
    assert_eq!(
        store.read("s/v1/content/file").unwrap(),
        arca_storage::Contents {
            bytes: b"a small upload".to_vec(),
            etag
        }
    );
    let missing = store.move_file(&dir.path().join("absent"), "s/other");
    assert!(matches!(missing, Err(StoreError::Io { .. })), "{missing:?}");
    assert_eq!(store.metadata("s/other").unwrap(), None);
}

fn invalid_keys_are_refused(store: &Store) {
    for key in ["", "/abs", "trailing/", "a//b", "a/../b", "./a", "a\nb"] {
        let put = store.put(key, b"x");
        assert!(
            matches!(put, Err(StoreError::InvalidKey { .. })),
            "{key:?}: {put:?}"
        );
        let read = store.read(key);
        assert!(
            matches!(read, Err(StoreError::InvalidKey { .. })),
            "{key:?}: {read:?}"
        );
    }
    assert!(matches!(
        store.list("a/"),
        Err(StoreError::InvalidKey { .. })
    ));
    assert!(matches!(
        store.list_dir("/a"),
        Err(StoreError::InvalidKey { .. })
    ));
    assert_eq!(store.list("").unwrap(), Vec::new(), "nothing was written");
}

fn calls_from_spawn_blocking_threads(store: &Store) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let tasks: Vec<_> = (0..4)
            .map(|n| {
                let store = Arc::clone(store);
                tokio::task::spawn_blocking(move || {
                    let key = format!("blocking/{n}/inventory.json");
                    let etag = store.put_if(&key, b"v1", Precondition::Absent).unwrap();
                    store
                        .put_if(&key, b"v2", Precondition::Matches(etag))
                        .unwrap();
                    assert_eq!(store.read(&key).unwrap().bytes, b"v2");
                    assert_eq!(read_all(store.as_ref(), &key, 1..2), b"2");
                    store.list(&format!("blocking/{n}")).unwrap().len()
                })
            })
            .collect();
        for task in tasks {
            assert_eq!(task.await.unwrap(), 1);
        }
    });
    assert_eq!(store.list("blocking").unwrap().len(), 4);
}

fn delete_prefix_removes_a_directory(store: &Store) {
    store.put("d/obj/v1/content/a", b"a").unwrap();
    store.put("d/obj/v1/inventory.json", b"{}").unwrap();
    store.put("d/obj/inventory.json", b"{}").unwrap();
    store.put("d/objects/x", b"x").unwrap();
    store.delete_prefix("d/obj/v1").unwrap();
    assert_eq!(
        keys(&store.list("d").unwrap()),
        ["d/obj/inventory.json", "d/objects/x"],
        "only what is below d/obj/v1/ goes"
    );
    store.delete_prefix("d/obj").unwrap();
    assert_eq!(keys(&store.list("d").unwrap()), ["d/objects/x"]);
    assert_eq!(
        store.list_dir("d").unwrap().dirs,
        ["d/objects"],
        "no directory is left of the removed prefix"
    );
    store
        .delete_prefix("d/obj")
        .expect("removing what is gone succeeds");
    store
        .delete_prefix("d/objects/x/y")
        .expect("a prefix below a file holds nothing");
    assert!(matches!(
        store.delete_prefix(""),
        Err(StoreError::InvalidKey { .. })
    ));
    assert_eq!(keys(&store.list("d").unwrap()), ["d/objects/x"]);
}

fn put_copy_stores_the_same_bytes(store: &Store) {
    let (version, root) = ("k/v1/inventory.json", "k/inventory.json");
    store.put(version, b"inventory one").unwrap();
    let first = store
        .put_copy(root, b"inventory one", version, Some(Precondition::Absent))
        .unwrap();
    let read = store.read(root).unwrap();
    assert_eq!(read.bytes, b"inventory one");
    assert_eq!(read.etag, first);
    assert!(matches!(
        store.put_copy(root, b"inventory one", version, Some(Precondition::Absent)),
        Err(StoreError::PreconditionFailed { .. })
    ));

    store.put("k/v2/inventory.json", b"inventory two").unwrap();
    let stale = ETag::new("\"not-the-tag\"");
    assert!(matches!(
        store.put_copy(
            root,
            b"inventory two",
            "k/v2/inventory.json",
            Some(Precondition::Matches(stale))
        ),
        Err(StoreError::PreconditionFailed { .. })
    ));
    assert_eq!(store.read(root).unwrap().bytes, b"inventory one");
    let second = store
        .put_copy(
            root,
            b"inventory two",
            "k/v2/inventory.json",
            Some(Precondition::Matches(first)),
        )
        .unwrap();
    assert_eq!(store.read(root).unwrap().etag, second);
    assert_eq!(store.read(root).unwrap().bytes, b"inventory two");
    assert_eq!(
        store.read(version).unwrap().bytes,
        b"inventory one",
        "the earlier version's file is untouched"
    );

    // A copy never changes with the file it was made from.
    store
        .put_copy("k/copy", b"inventory one", version, None)
        .unwrap();
    store.put(version, b"replaced").unwrap();
    assert_eq!(store.read("k/copy").unwrap().bytes, b"inventory one");
    store.delete(version).unwrap();
    assert_eq!(store.read("k/copy").unwrap().bytes, b"inventory one");
}

fn local_paths_hold_the_bytes(store: &Store) {
    store.put("l/a/file", b"local").unwrap();
    match store.local_path("l/a/file") {
        Some(path) => assert_eq!(std::fs::read(path).unwrap(), b"local"),
        None => assert!(
            format!("{store:?}").starts_with("S3Storage"),
            "only a remote store has no local files"
        ),
    }
    // Opened through the store: the same bytes, nothing for a missing file, and no key
    // that leaves the store.
    match store.open_local("l/a/file") {
        Some(opened) => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut opened.unwrap(), &mut bytes).unwrap();
            assert_eq!(bytes, b"local");
            let missing = store.open_local("l/a/none").unwrap().unwrap_err();
            assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
            for key in ["../l/a/file", "l/../l/a/file", "/etc/hostname"] {
                let refused = store.open_local(key).unwrap().unwrap_err();
                assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput, "{key}");
            }
        }
        None => assert!(store.local_path("l/a/file").is_none(), "local files open"),
    }
}

fn directories_move_in_whole_or_not_at_all(store: &Store) {
    let dir = tempfile::tempdir().unwrap();
    let built = dir.path().join("built");
    std::fs::create_dir_all(built.join("v1/content")).unwrap();
    std::fs::write(built.join("v1/content/a"), b"a").unwrap();
    std::fs::write(built.join("inventory.json"), b"{}").unwrap();
    let moved = store.move_dir(&built, "m/obj").unwrap();
    if moved {
        assert!(!built.exists(), "the directory moved");
        assert_eq!(
            keys(&store.list("m").unwrap()),
            ["m/obj/inventory.json", "m/obj/v1/content/a"]
        );
        std::fs::create_dir_all(&built).unwrap();
        std::fs::write(built.join("x"), b"x").unwrap();
        assert!(matches!(
            store.move_dir(&built, "m/obj"),
            Err(StoreError::PreconditionFailed { .. })
        ));
        assert!(built.join("x").exists(), "nothing moved");
        assert_eq!(store.list("m").unwrap().len(), 2);
    } else {
        assert!(built.join("v1/content/a").exists(), "nothing moved");
        assert!(store.list("m").unwrap().is_empty());
    }
}

/// The filesystem store reads through a handle of its root directory: a root deleted and
/// made anew while the store is open (a restore, a test's reset) is read where it is now.
#[test]
fn a_filesystem_root_made_anew_is_read_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let store = FsStorage::open(&root).unwrap();
    store.put("a/file", b"old").unwrap();
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::write(root.join("a/file"), b"new").unwrap();
    assert_eq!(store.read("a/file").unwrap().bytes, b"new");
    let mut bytes = Vec::new();
    let mut opened = store.open_local("a/file").unwrap().unwrap();
    std::io::Read::read_to_end(&mut opened, &mut bytes).unwrap();
    assert_eq!(bytes, b"new");
    std::fs::remove_dir_all(&root).unwrap();
    assert!(store.read("a/file").unwrap_err().is_not_found());
}
