//! The S3 store moves a large file in (and streams it back) with flat memory. A test
//! binary of its own: the peak resident memory it measures (`VmHWM`, reset through
//! `/proc/self/clear_refs`) is the whole process's, so nothing else may run in it. MinIO
//! is a child process and not counted. Linux only; `NOT RUN` without MinIO unless
//! `ARCA_REQUIRE_S3=1`.

use std::io::{Read, Write};

use arca_storage::{ObjectStorage, S3Credentials, S3Settings, S3Storage};
use arca_testkit::s3::{Minio, BUCKET, REGION, ROOT_PASSWORD, ROOT_USER};
use sha2::{Digest, Sha256};

/// 256 MiB: 32 parts of 8 MiB.
const FILE_SIZE: usize = 256 * 1024 * 1024;

/// The most the peak may grow by while the file moves in or streams back: the store holds
/// three 8 MiB parts; the rest is the HTTP client's buffers and slack. Buffering the file
/// would grow it by at least 256 MiB.
const MAX_GROWTH: u64 = 96 * 1024 * 1024;

/// The peak resident set size of this process since the last reset, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("a VmHWM line");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("VmHWM in kB");
    kib * 1024
}

/// Resets the peak to the current resident set size.
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").expect("the peak RSS reset (Linux >= 4.0)");
}

#[test]
fn a_large_file_moves_in_and_streams_back_with_flat_memory() {
    let Some(minio) = Minio::shared() else { return };
    let store = S3Storage::open_with_credentials(
        S3Settings {
            endpoint: Some(minio.endpoint()),
            bucket: BUCKET.to_string(),
            prefix: "memory".to_string(),
            region: REGION.to_string(),
            allow_http: true,
        },
        S3Credentials {
            access_key_id: ROOT_USER.to_string(),
            secret_access_key: ROOT_PASSWORD.to_string(),
            session_token: None,
        },
    )
    .unwrap();
    // Warm the client up (connection, TLS-free HTTP, signing) before measuring.
    store.put("warm-up", b"x").unwrap();

    let dir = tempfile::tempdir().unwrap();
    let upload = dir.path().join("upload");
    let mut hasher = Sha256::new();
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&upload).unwrap());
        let mut chunk = vec![0u8; 1024 * 1024];
        for n in 0..FILE_SIZE / chunk.len() {
            chunk
                .iter_mut()
                .enumerate()
                .for_each(|(i, b)| *b = (i ^ n) as u8);
            hasher.update(&chunk);
            file.write_all(&chunk).unwrap();
        }
        file.flush().unwrap();
    }
    let digest = hex::encode(hasher.finalize());

    reset_peak();
    let before = peak_rss();
    store.move_file(&upload, "v1/content/large").unwrap();
    let upload_growth = peak_rss().saturating_sub(before);

    reset_peak();
    let before = peak_rss();
    let mut reader = store.read_range("v1/content/large", 0..u64::MAX).unwrap();
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0;
    loop {
        let n = reader.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        total += n;
        hasher.update(&buf[..n]);
    }
    let read_growth = peak_rss().saturating_sub(before);

    eprintln!(
        "moving {} MiB in grew the peak RSS by {:.1} MiB, streaming it back by {:.1} MiB",
        FILE_SIZE >> 20,
        upload_growth as f64 / 1048576.0,
        read_growth as f64 / 1048576.0
    );
    assert_eq!(total, FILE_SIZE);
    assert_eq!(hex::encode(hasher.finalize()), digest);
    assert!(
        upload_growth < MAX_GROWTH,
        "upload grew the peak by {upload_growth} bytes"
    );
    assert!(
        read_growth < MAX_GROWTH,
        "reading grew the peak by {read_growth} bytes"
    );
}
