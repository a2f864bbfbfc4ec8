//! A replica in a bucket (`[[replica]] endpoint, bucket, prefix, region`) of a private
//! MinIO behind a local root: every acknowledged version lands there as the same root,
//! byte for byte (ocfl-py validates a download of it); a stopped MinIO blocks no write, and
//! the replica catches up once it is back, also when it was down as the server started. `NOT RUN` without MinIO unless
//! `ARCA_REQUIRE_S3=1`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arca_storage::{ObjectStorage, S3Credentials, S3Settings, S3Storage};
use arca_testkit::s3::{Minio, BUCKET, REGION, ROOT_PASSWORD, ROOT_USER};
use hyper::{Method, StatusCode};

use crate::common;
use crate::common::{Arca, Http};

const PREFIX: &str = "replica";

fn bucket_store(minio: &Minio) -> S3Storage {
    S3Storage::open_with_credentials(
        S3Settings {
            endpoint: Some(minio.endpoint()),
            bucket: BUCKET.to_string(),
            prefix: PREFIX.to_string(),
            region: REGION.to_string(),
            allow_http: true,
        },
        S3Credentials {
            access_key_id: ROOT_USER.to_string(),
            secret_access_key: ROOT_PASSWORD.to_string(),
            session_token: None,
        },
    )
    .expect("the bucket opens")
}

fn serve(data: &Path, minio: &Minio) -> Arca {
    let config = data.with_extension("toml");
    std::fs::write(
        &config,
        format!(
            "[[replica]]\nname = \"bucket\"\nendpoint = \"{}\"\nbucket = \"{BUCKET}\"\nprefix = \"{PREFIX}\"\nregion = \"{REGION}\"\n",
            minio.endpoint()
        ),
    )
    .unwrap();
    let config = config.to_string_lossy().to_string();
    Arca::serve_with(
        data,
        &[
            ("ARCA_CONFIG", &config),
            ("AWS_ACCESS_KEY_ID", ROOT_USER),
            ("AWS_SECRET_ACCESS_KEY", ROOT_PASSWORD),
        ],
    )
}

/// Every file below the local root `dir` with its bytes.
fn local_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    common::relative_files(dir)
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(dir.join(&rel)).unwrap_or_default();
            (rel, bytes)
        })
        .collect()
}

/// Every file of the replica root in the bucket with its bytes (empty while MinIO is
/// down).
fn bucket_tree(store: &S3Storage) -> BTreeMap<String, Vec<u8>> {
    try_bucket_tree(store).unwrap_or_default()
}

fn try_bucket_tree(store: &S3Storage) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let files = store
        .list("")
        .map_err(|e| format!("listing the bucket: {e}"))?;
    Ok(files
        .into_iter()
        .filter_map(|f| store.read(&f.key).ok().map(|c| (f.key, c.bytes)))
        .collect())
}

/// Waits (two minutes at most) until the bucket holds exactly the local root's files.
fn wait_until_same(root: &Path, store: &S3Storage, log: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let listed = try_bucket_tree(store);
        let (a, b) = (local_tree(root), listed.clone().unwrap_or_default());
        if a == b {
            assert!(a.len() > 5, "the primary holds only {} files", a.len());
            return;
        }
        if Instant::now() > deadline {
            let only_a: Vec<_> = a.keys().filter(|k| !b.contains_key(*k)).collect();
            let only_b: Vec<_> = b.keys().filter(|k| !a.contains_key(*k)).collect();
            panic!(
                "the bucket never caught up ({}): only in the primary {only_a:?}, only in the bucket {only_b:?}\n{}",
                listed.err().unwrap_or_default(),
                log()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

async fn put(http: &Http, arca: &Arca, path: &str, body: Vec<u8>) -> StatusCode {
    let r = http
        .request(
            Method::PUT,
            &arca.url(path),
            &[("content-type", "application/octet-stream")],
            body,
        )
        .await;
    r.status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_in_a_bucket_gets_every_version_and_catches_up_after_an_outage() {
    let Some(minio) = Minio::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let arca = serve(&data, &minio);
    let http = Http::new();
    for i in 0..5 {
        let status = put(&http, &arca, &format!("/b{i}"), format!("{i}").into_bytes()).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    // Over the S3 store's part size: a multipart upload through a temporary file.
    let large: Vec<u8> = (0..12_000_000u32).map(|i| (i % 241) as u8).collect();
    assert_eq!(
        put(&http, &arca, "/large", large).await,
        StatusCode::CREATED
    );
    let store = bucket_store(&minio);
    let root = data.join("ocfl-root");
    wait_until_same(&root, &store, || arca.log());

    // MinIO stops: writes go on, at once; the replica catches up when it is back.
    minio.stop();
    for i in 0..5 {
        let status = put(&http, &arca, &format!("/during{i}"), b"meanwhile".to_vec()).await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "a write failed while the replica is down"
        );
    }
    put(&http, &arca, "/b0", b"a second version".to_vec()).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !arca.log().contains("cannot copy to the replica") {
        assert!(
            Instant::now() < deadline,
            "no failure logged:\n{}",
            arca.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    minio.start_again();
    wait_until_same(&root, &store, || arca.log());
    // The copier says so right after its copy, which the comparison may see first.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !arca.log().contains("the replica is back") {
        assert!(Instant::now() < deadline, "not logged:\n{}", arca.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    arca.stop();

    // A server started while MinIO is down serves, and copies once it is back.
    minio.stop();
    let arca = serve(&data, &minio);
    assert!(
        arca.log().contains("the replica cannot be reached"),
        "{}",
        arca.log()
    );
    let status = put(&http, &arca, "/while-down", b"written at start".to_vec()).await;
    assert_eq!(status, StatusCode::CREATED);
    minio.start_again();
    wait_until_same(&root, &store, || arca.log());
    arca.stop();

    let copy: PathBuf = dir.path().join("download");
    for (key, bytes) in bucket_tree(&store) {
        let target = copy.join(&key);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, bytes).unwrap();
    }
    common::validate_with_ocfl_py(&copy);
}
