//! What only the S3 store has: credentials and a bucket checked at open, a service that
//! stops and comes back, multipart uploads, the key layout in the bucket. Against a real
//! MinIO (`NOT RUN` without it unless `ARCA_REQUIRE_S3=1`).

use std::net::TcpListener;
use std::time::{Duration, Instant};

use arca_storage::{ObjectStorage, Precondition, S3Credentials, S3Settings, S3Storage, StoreError};
use arca_testkit::s3::{Minio, BUCKET, REGION, ROOT_PASSWORD, ROOT_USER};

/// How long a failure against a stopped or unreachable service may take at most. The
/// store retries for a little over a second; the rest is slack for a loaded machine.
const FAIL_FAST: Duration = Duration::from_secs(10);

fn settings(endpoint: String, bucket: &str, prefix: &str) -> S3Settings {
    S3Settings {
        endpoint: Some(endpoint),
        bucket: bucket.to_string(),
        prefix: prefix.to_string(),
        region: REGION.to_string(),
        allow_http: true,
    }
}

fn root_credentials() -> S3Credentials {
    S3Credentials {
        access_key_id: ROOT_USER.to_string(),
        secret_access_key: ROOT_PASSWORD.to_string(),
        session_token: None,
    }
}

#[test]
fn wrong_credentials_are_named_at_open() {
    let Some(minio) = Minio::shared() else { return };
    let wrong_secret = S3Credentials {
        secret_access_key: "not-the-secret".to_string(),
        ..root_credentials()
    };
    let opened =
        S3Storage::open_with_credentials(settings(minio.endpoint(), BUCKET, "x"), wrong_secret);
    assert!(
        matches!(opened, Err(StoreError::Credentials { .. })),
        "{opened:?}"
    );
    let store = S3Storage::open_with_credentials(
        settings(minio.endpoint(), BUCKET, "x"),
        root_credentials(),
    )
    .unwrap();
    let shown = format!("{store:?}");
    assert!(
        !shown.contains(ROOT_PASSWORD),
        "the secret stays out of Debug: {shown}"
    );
    assert!(shown.contains(BUCKET), "{shown}");
    let unknown_key = S3Credentials {
        access_key_id: "nobody".to_string(),
        ..root_credentials()
    };
    let opened =
        S3Storage::open_with_credentials(settings(minio.endpoint(), BUCKET, "x"), unknown_key);
    match opened {
        Err(e @ StoreError::Credentials { .. }) => {
            let message = e.to_string();
            assert!(message.contains("credentials"), "{message}");
        }
        other => panic!("expected Credentials, got {other:?}"),
    }
}

#[test]
fn missing_bucket_is_named_at_open() {
    let Some(minio) = Minio::shared() else { return };
    let opened = S3Storage::open_with_credentials(
        settings(minio.endpoint(), "no-such-bucket", ""),
        root_credentials(),
    );
    match opened {
        Err(StoreError::BucketNotFound { bucket, .. }) => assert_eq!(bucket, "no-such-bucket"),
        other => panic!("expected BucketNotFound, got {other:?}"),
    }
}

#[test]
fn unreachable_endpoint_is_unavailable_at_open() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let started = Instant::now();
    let opened = S3Storage::open_with_credentials(
        settings(format!("http://127.0.0.1:{port}"), BUCKET, ""),
        root_credentials(),
    );
    assert!(
        matches!(opened, Err(StoreError::Unavailable { .. })),
        "{opened:?}"
    );
    assert!(
        started.elapsed() < FAIL_FAST,
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn missing_credential_variables_are_named() {
    // Only meaningful where the variables are not set (as in the tests).
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_some() {
        return;
    }
    match S3Credentials::from_env() {
        Err(StoreError::Config { setting, .. }) => assert_eq!(setting, "AWS_ACCESS_KEY_ID"),
        other => panic!("expected Config, got {other:?}"),
    }
}

#[test]
fn stopped_service_is_unavailable_and_the_same_store_works_when_it_is_back() {
    let Some(minio) = Minio::start() else { return };
    let store = S3Storage::open_with_credentials(
        settings(minio.endpoint(), BUCKET, "faults"),
        root_credentials(),
    )
    .unwrap();
    let etag = store.put("o/inventory.json", b"v1").unwrap();
    let upload_dir = tempfile::tempdir().unwrap();
    let upload = upload_dir.path().join("upload");
    std::fs::write(&upload, b"content").unwrap();

    minio.stop();
    let unavailable = |what: &str, result: Result<(), StoreError>, started: Instant| {
        assert!(
            matches!(result, Err(StoreError::Unavailable { .. })),
            "{what}: {result:?}"
        );
        let took = started.elapsed();
        eprintln!("{what} against a stopped MinIO: Unavailable after {took:?}");
        assert!(took < FAIL_FAST, "{what} took {took:?}");
    };
    let started = Instant::now();
    unavailable("read", store.read("o/inventory.json").map(drop), started);
    let started = Instant::now();
    unavailable("put", store.put("o/other", b"x").map(drop), started);
    let started = Instant::now();
    let put_if = store.put_if(
        "o/inventory.json",
        b"v2",
        Precondition::Matches(etag.clone()),
    );
    unavailable("put_if", put_if.map(drop), started);
    let started = Instant::now();
    unavailable(
        "metadata",
        store.metadata("o/inventory.json").map(drop),
        started,
    );
    let started = Instant::now();
    unavailable("list_dir", store.list_dir("o").map(drop), started);
    let started = Instant::now();
    unavailable(
        "move_file",
        store.move_file(&upload, "o/content").map(drop),
        started,
    );
    assert!(upload.exists(), "a failed move leaves the local file");

    minio.start_again();
    let read = store.read("o/inventory.json").unwrap();
    assert_eq!(read.bytes, b"v1");
    assert_eq!(read.etag, etag);
    store
        .put_if("o/inventory.json", b"v2", Precondition::Matches(etag))
        .unwrap();
    store.move_file(&upload, "o/content").unwrap();
    let keys: Vec<String> = store
        .list("o")
        .unwrap()
        .into_iter()
        .map(|f| f.key)
        .collect();
    assert_eq!(keys, ["o/content", "o/inventory.json"]);

    // A crash (SIGKILL) rather than a stop: the same.
    minio.kill();
    let started = Instant::now();
    unavailable(
        "read after a kill",
        store.read("o/content").map(drop),
        started,
    );
    minio.start_again();
    assert_eq!(store.read("o/content").unwrap().bytes, b"content");
}

#[test]
fn large_files_are_uploaded_in_parts() {
    let Some(minio) = Minio::shared() else { return };
    let store = S3Storage::open_with_credentials(
        settings(minio.endpoint(), BUCKET, "multipart"),
        root_credentials(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let upload = dir.path().join("upload");
    // 20 MiB: parts of 8, 8 and 4 MiB.
    let bytes: Vec<u8> = (0..20 * 1024 * 1024u32).map(|n| (n % 251) as u8).collect();
    std::fs::write(&upload, &bytes).unwrap();
    let etag = store.move_file(&upload, "v1/content/big").unwrap();
    // S3 (and MinIO) tag a multipart object `"<md5 of the part md5s>-<parts>"`.
    assert!(etag.as_str().ends_with("-3\""), "{etag}");
    assert_eq!(store.read("v1/content/big").unwrap().bytes, bytes);
}

#[test]
fn keys_are_the_prefix_then_the_relative_path() {
    let Some(minio) = Minio::shared() else { return };
    let rooted = S3Storage::open_with_credentials(
        settings(minio.endpoint(), BUCKET, "layout/ocfl-root/"),
        root_credentials(),
    )
    .unwrap();
    rooted.put("0=ocfl_1.1", b"ocfl_1.1\n").unwrap();
    rooted.put("a1b/2c3/inventory.json", b"{}").unwrap();

    let whole_bucket = S3Storage::open_with_credentials(
        settings(minio.endpoint(), BUCKET, ""),
        root_credentials(),
    )
    .unwrap();
    let keys: Vec<String> = whole_bucket
        .list("layout")
        .unwrap()
        .into_iter()
        .map(|f| f.key)
        .collect();
    assert_eq!(
        keys,
        [
            "layout/ocfl-root/0=ocfl_1.1",
            "layout/ocfl-root/a1b/2c3/inventory.json"
        ]
    );
    assert_eq!(
        whole_bucket.list_dir("layout").unwrap().dirs,
        ["layout/ocfl-root"]
    );
    assert_eq!(
        whole_bucket
            .read("layout/ocfl-root/0=ocfl_1.1")
            .unwrap()
            .bytes,
        b"ocfl_1.1\n"
    );
    // MinIO keeps an object as a directory named after its key below the bucket's.
    let on_disk = minio
        .dir()
        .join("data")
        .join(BUCKET)
        .join("layout/ocfl-root/a1b/2c3/inventory.json");
    assert!(on_disk.exists(), "{} is missing", on_disk.display());
}

#[test]
fn a_store_can_be_dropped_inside_async_code() {
    let Some(minio) = Minio::shared() else { return };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = S3Storage::open_with_credentials(
        settings(minio.endpoint(), BUCKET, "dropped"),
        root_credentials(),
    )
    .unwrap();
    runtime.block_on(async move {
        drop(store);
    });
}

/// The bucket's versioning is read from the service: never enabled on a new bucket,
/// enabled on the test bucket (as the testkit makes it) and on one made versioned.
#[test]
fn the_bucket_versioning_is_read_from_the_service() {
    use arca_storage::BucketVersioning;
    let Some(minio) = Minio::shared() else { return };
    minio.create_bucket("unversioned", false);
    let open = |bucket: &str| {
        S3Storage::open_with_credentials(
            settings(minio.endpoint(), bucket, "v"),
            root_credentials(),
        )
        .unwrap()
    };
    assert_eq!(
        open("unversioned").versioning().unwrap(),
        BucketVersioning::Never
    );
    assert_eq!(
        open(BUCKET).versioning().unwrap(),
        BucketVersioning::Enabled
    );
    minio.create_bucket("versioned", true);
    assert_eq!(
        open("versioned").versioning().unwrap(),
        BucketVersioning::Enabled
    );
}
