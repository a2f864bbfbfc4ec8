//! A disk that fills during ingest. The real `arca serve` runs on a small ext4 file system
//! of its own (a loop-mounted image, which needs root); binaries are written until the disk
//! is full. Then: clear 507 answers that store nothing, every acknowledged write intact,
//! the root valid for ocfl-py, nothing half-written, and writes succeed again once space
//! returns.

use std::path::{Path, PathBuf};
use std::process::Command;

use hyper::{Method, StatusCode};
use rand::{RngCore, SeedableRng};

use crate::common;
use crate::common::{sha512_hex, Arca, Http};

/// Size of the file system the server gets.
const FS_MIB: u64 = 160;
/// A file taking space that the test frees again later.
const BALLAST_MIB: u64 = 24;
/// Size of each binary written.
const BINARY_BYTES: usize = 2 << 20;

/// A loop-mounted ext4 image, unmounted and deleted when dropped.
struct SmallFs {
    _dir: tempfile::TempDir,
    mount: PathBuf,
}

impl SmallFs {
    /// `None` where this process may not mount file systems.
    fn create() -> Option<Self> {
        if !rustix::process::geteuid().is_root() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("fs.img");
        let mount = dir.path().join("mnt");
        std::fs::create_dir(&mount).unwrap();
        let ok = |cmd: &mut Command| cmd.status().is_ok_and(|s| s.success());
        if !ok(Command::new("truncate")
            .arg("-s")
            .arg(format!("{FS_MIB}M"))
            .arg(&image))
            || !ok(Command::new("mkfs.ext4").arg("-q").arg("-F").arg(&image))
            || !ok(Command::new("mount")
                .arg("-o")
                .arg("loop")
                .arg(&image)
                .arg(&mount))
        {
            return None;
        }
        Some(Self { _dir: dir, mount })
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
    }
}

fn fill(path: &Path, mib: u64) {
    let chunk = vec![0xa5u8; 1 << 20];
    let mut bytes = Vec::with_capacity((mib as usize) << 20);
    for _ in 0..mib {
        bytes.extend_from_slice(&chunk);
    }
    std::fs::write(path, bytes).unwrap();
}

async fn put_binary(http: &Http, arca: &Arca, path: &str, bytes: &[u8]) -> common::Reply {
    http.request(
        Method::PUT,
        &arca.url(path),
        &[
            ("content-type", "application/octet-stream"),
            (
                "link",
                "<http://www.w3.org/ns/ldp#NonRDFSource>; rel=\"type\"",
            ),
        ],
        bytes.to_vec(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_cleanly_and_recovers() {
    let Some(fs) = SmallFs::create() else {
        // Loop mounts need root; the CI machine has it. Say so loudly elsewhere.
        eprintln!("disk-full test NOT RUN: this process cannot mount a small file system");
        return;
    };
    let data = fs.mount.join("data");
    let ballast = fs.mount.join("ballast");
    fill(&ballast, BALLAST_MIB);
    let arca = Arca::serve(&data);
    let http = Http::new();
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);

    let mut acked: Vec<(String, String)> = Vec::new();
    let refusal = loop {
        assert!(acked.len() < 200, "the disk never filled");
        let mut bytes = vec![0u8; BINARY_BYTES];
        rng.fill_bytes(&mut bytes);
        let path = format!("/full/b{}", acked.len());
        let r = put_binary(&http, &arca, &path, &bytes).await;
        if r.status == StatusCode::CREATED {
            acked.push((path, sha512_hex(&bytes)));
            continue;
        }
        break r;
    };
    assert_eq!(
        refusal.status,
        StatusCode::INSUFFICIENT_STORAGE,
        "{}",
        refusal.text()
    );
    assert!(
        refusal.text().contains("full") && refusal.text().contains("nothing was stored"),
        "{}",
        refusal.text()
    );
    assert!(acked.len() >= 10, "only {} binaries fit", acked.len());
    // Every kind of write is refused the same way while the disk is full, and stores
    // nothing.
    let r = http
        .request(
            Method::POST,
            &arca.url("/"),
            &[("content-type", "text/turtle")],
            "",
        )
        .await;
    assert_eq!(r.status, StatusCode::INSUFFICIENT_STORAGE, "{}", r.text());
    // A body larger than the space left runs into the real ENOSPC while it is streamed
    // to disk: the same answer, and no partial upload stays behind (checked at the end).
    let mut big = vec![0u8; 12 << 20];
    rng.fill_bytes(&mut big);
    let r = put_binary(&http, &arca, "/full/too-big", &big).await;
    assert_eq!(r.status, StatusCode::INSUFFICIENT_STORAGE, "{}", r.text());
    let refused_path = format!("/full/b{}", acked.len());
    let r = http
        .request(Method::GET, &arca.url(&refused_path), &[], "")
        .await;
    assert_eq!(
        r.status,
        StatusCode::NOT_FOUND,
        "a refused write left {refused_path}"
    );
    // What was acknowledged is all there.
    for (path, digest) in &acked {
        let r = http.request(Method::GET, &arca.url(path), &[], "").await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text());
        assert_eq!(&sha512_hex(&r.body), digest, "{path} differs");
    }

    // Space returns: writes succeed again, without a restart.
    std::fs::remove_file(&ballast).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let mut bytes = vec![0u8; BINARY_BYTES];
    rng.fill_bytes(&mut bytes);
    let r = put_binary(&http, &arca, &refused_path, &bytes).await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "after freeing space: {}",
        r.text()
    );
    let r = http
        .request(Method::GET, &arca.url(&refused_path), &[], "")
        .await;
    assert_eq!(sha512_hex(&r.body), sha512_hex(&bytes));

    eprintln!(
        "disk-full test: {} binaries of {BINARY_BYTES} bytes acknowledged on a {FS_MIB} MiB file system, then 507: {}",
        acked.len(),
        refusal.text()
    );
    arca.stop();
    let root = data.join("ocfl-root");
    let objects = common::check_storage(&root);
    assert!(objects.len() > acked.len(), "{} objects", objects.len());
    common::validate_with_ocfl_py(&root);
    common::assert_staging_clean(&data);
}
