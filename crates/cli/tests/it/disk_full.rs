//! A disk that fills during ingest, and one that runs out of inodes. The real `arca serve` runs on a small ext4 file system
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
    image: PathBuf,
    mount: PathBuf,
}

impl SmallFs {
    /// `None` where this process may not mount file systems.
    fn create() -> Option<Self> {
        Self::create_with(FS_MIB, &[])
    }

    /// A file system of `mib` MiB made with `mkfs.ext4` and `options` (e.g. `-N 4096`).
    fn create_with(mib: u64, options: &[&str]) -> Option<Self> {
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
            .arg(format!("{mib}M"))
            .arg(&image))
            || !ok(Command::new("mkfs.ext4")
                .arg("-q")
                .arg("-F")
                .args(options)
                .arg(&image))
            || !ok(Command::new("mount")
                .arg("-o")
                .arg("loop")
                .arg(&image)
                .arg(&mount))
        {
            return None;
        }
        Some(Self {
            _dir: dir,
            image,
            mount,
        })
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

/// Inodes of the file system of the inode test: a few hundred objects' worth (arca writes
/// about a dozen files and directories per object).
const FEW_INODES: u32 = 6_000;
/// Empty files the inode test holds and frees again later.
const BALLAST_FILES: usize = 1_500;
/// Concurrent writers of the inode test.
const WRITERS: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_out_of_inodes_refuses_writes_cleanly_and_recovers() {
    // Plenty of bytes, few inodes: small objects exhaust the inodes long before the space.
    let inodes = FEW_INODES.to_string();
    let Some(fs) = SmallFs::create_with(256, &["-N", &inodes]) else {
        eprintln!("inode test NOT RUN: this process cannot mount a small file system");
        return;
    };
    let data = fs.mount.join("data");
    let ballast = fs.mount.join("ballast");
    std::fs::create_dir(&ballast).unwrap();
    for n in 0..BALLAST_FILES {
        std::fs::write(ballast.join(n.to_string()), b"").unwrap();
    }
    // Readiness judged by the inodes alone (the bytes threshold would fail on so small a disk).
    let health_env = [("ARCA_HEALTH_MIN_FREE_BYTES", "1")];
    let arca = Arca::serve_with(&data, &health_env);
    let http = Http::new();
    assert!(
        disk_ready(&http, &arca).await,
        "ready before the inodes run out"
    );

    // Several writers create small containers until every one of them is refused.
    let base = arca.url("/inodes");
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let http = http.clone();
        let base = base.clone();
        writers.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            for n in 0.. {
                assert!(n < 2_000, "writer {w}: the inodes never ran out");
                let url = format!("{base}/w{w}-{n}");
                let body = format!("<> <http://purl.org/dc/terms/title> \"w{w} n{n}\" .");
                let r = http
                    .request(Method::PUT, &url, &[("content-type", "text/turtle")], body)
                    .await;
                match r.status {
                    StatusCode::CREATED => acked.push(url),
                    _ => return (acked, r),
                }
            }
            unreachable!()
        }));
    }
    let mut acked = Vec::new();
    let mut refusals = Vec::new();
    for w in writers {
        let (mine, refusal) = w.await.unwrap();
        acked.extend(mine);
        refusals.push(refusal);
    }
    // Each writer is refused with 507 (the reserve of inodes is reached) or, when the
    // writes acknowledged before used up the reserve while they were published, 503 (the
    // root cannot take them yet; they stay in the journal and are retried): either way the
    // refused write stored nothing, and the answer says why.
    for r in &refusals {
        assert!(
            r.status == StatusCode::INSUFFICIENT_STORAGE
                || r.status == StatusCode::SERVICE_UNAVAILABLE,
            "{}: {}",
            r.status,
            r.text()
        );
        let text = r.text();
        assert!(
            text.contains("nothing was stored")
                && (text.contains("inodes") || text.contains("No space left")),
            "{text}"
        );
    }
    assert!(acked.len() >= 50, "only {} objects fit", acked.len());

    // Reads go on: every acknowledged object, the container listing them, the root.
    for url in &acked {
        let r = http.request(Method::GET, url, &[], "").await;
        assert_eq!(r.status, StatusCode::OK, "{url}: {}", r.text());
    }
    let r = http.request(Method::GET, &arca.url("/"), &[], "").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    // Readiness says how many inodes are free (the check fails at or below twice the write
    // reserve; whether it does at this moment depends on what the refused writes' cleanup
    // gave back, so only the answer's content is asserted here).
    disk_ready(&http, &arca).await;

    // Inodes return: writes succeed again without a restart, once the journal's retry has
    // published what it holds (it retries on its own, within seconds).
    std::fs::remove_dir_all(&ballast).unwrap();
    let url = format!("{base}/after");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let r = http
            .request(Method::PUT, &url, &[("content-type", "text/turtle")], "")
            .await;
        if r.status == StatusCode::CREATED {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "after freeing inodes, writes are still refused: {} {}",
            r.status,
            r.text()
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    acked.push(url);

    // A crash afterwards loses nothing that was acknowledged.
    arca.kill();
    let arca = Arca::serve_with(&data, &health_env);
    for url in &acked {
        let url = url.replace(&base, &arca.url("/inodes"));
        let r = http.request(Method::GET, &url, &[], "").await;
        assert_eq!(
            r.status,
            StatusCode::OK,
            "after the restart, {url}: {}",
            r.text()
        );
    }
    eprintln!(
        "inode test: {} objects acknowledged on {FEW_INODES} inodes, then {}: {}",
        acked.len() - 1,
        refusals[0].status,
        refusals[0].text()
    );
    arca.stop();
    let root = data.join("ocfl-root");
    common::check_storage(&root);
    common::validate_with_ocfl_py(&root);
    common::assert_staging_clean(&data);
}

/// Whether `/health/ready`'s `disk` check passes (it names the free inodes either way).
async fn disk_ready(http: &Http, arca: &Arca) -> bool {
    let origin = arca.url("").trim_end_matches("/rest").to_string();
    let r = http
        .request(Method::GET, &format!("{origin}/health/ready"), &[], "")
        .await;
    let answer: serde_json::Value = serde_json::from_slice(&r.body).expect("JSON");
    let disk = answer["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "disk"))
        .unwrap_or_else(|| panic!("no disk check: {}", r.text()))
        .clone();
    assert!(
        disk["message"]
            .as_str()
            .is_some_and(|m| m.contains("inodes free")),
        "{disk}"
    );
    disk["ok"] == true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_system_gone_read_only_refuses_writes_with_503() {
    // What the kernel does to ext4 after an I/O error (a failing disk, a full backing store
    // under a loop device): it aborts the journal and remounts the file system read-only
    // under the running server. Writes must be refused with 503 and their reason (not 500),
    // reads go on, and after fsck and a restart everything acknowledged is there.
    let Some(fs) = SmallFs::create() else {
        eprintln!("read-only test NOT RUN: this process cannot mount a small file system");
        return;
    };
    let ok = |cmd: &mut Command| cmd.status().is_ok_and(|s| s.success());
    let data = fs.mount.join("data");
    let arca = Arca::serve(&data);
    let http = Http::new();
    let turtle = [("content-type", "text/turtle")];
    let mut acked = Vec::new();
    for n in 0..5 {
        let url = arca.url(&format!("/ro/before{n}"));
        let r = http.request(Method::PUT, &url, &turtle, "").await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
        acked.push(format!("/ro/before{n}"));
    }

    // Once a checkpoint has made the root and the catalog durable (a fresh root's own files
    // are written back by the first checkpoint, like everything before it).
    let origin = arca.url("").trim_end_matches("/rest").to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let m = http
            .request(Method::GET, &format!("{origin}/metrics"), &[], "")
            .await
            .text();
        let done = m
            .lines()
            .find(|l| l.starts_with("arca_checkpoints"))
            .and_then(|l| l.split_whitespace().last())
            .and_then(|v| v.parse::<f64>().ok())
            .is_some_and(|n| n >= 1.0);
        if done {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint in 60 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // ext4's own switch for an error: /sys/fs/ext4/<device>/trigger_fs_error.
    let device = std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(fs.mount.to_str().unwrap()))
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap();
    let name = device.trim_start_matches("/dev/");
    let trigger = format!("/sys/fs/ext4/{name}/trigger_fs_error");
    let errors_remount = ok(Command::new("mount")
        .args(["-o", "remount,errors=remount-ro"])
        .arg(&fs.mount));
    if !errors_remount || std::fs::write(&trigger, "arca test\n").is_err() {
        eprintln!("read-only test NOT RUN: {trigger} cannot be written");
        arca.stop();
        return;
    }
    // The remount happens at the error; writes must now fail with EROFS.
    let mut refused = None;
    for n in 0..20 {
        let r = http
            .request(
                Method::PUT,
                &arca.url(&format!("/ro/during{n}")),
                &turtle,
                "",
            )
            .await;
        if r.status == StatusCode::CREATED {
            acked.push(format!("/ro/during{n}"));
            continue;
        }
        refused = Some(r);
        break;
    }
    let refused = refused.expect("writes kept succeeding on a read-only file system");
    assert_eq!(
        refused.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        refused.text()
    );
    assert!(
        refused.text().contains("read-only") && refused.text().contains("nothing was stored"),
        "{}",
        refused.text()
    );
    for path in &acked {
        let r = http.request(Method::GET, &arca.url(path), &[], "").await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text());
    }

    // The operator's repair: stop, fsck, mount again, start.
    arca.kill();
    assert!(ok(Command::new("umount").arg(&fs.mount)), "umount");
    // e2fsck exits 1 when it corrected the file system (the error the test caused).
    let fsck = Command::new("e2fsck")
        .args(["-f", "-y"])
        .arg(&fs.image)
        .status()
        .unwrap();
    assert!(matches!(fsck.code(), Some(0 | 1)), "e2fsck: {fsck}");
    assert!(
        ok(Command::new("mount")
            .args(["-o", "loop"])
            .arg(&fs.image)
            .arg(&fs.mount)),
        "mount again"
    );
    let arca = Arca::serve(&data);
    for path in &acked {
        let r = http.request(Method::GET, &arca.url(path), &[], "").await;
        assert_eq!(
            r.status,
            StatusCode::OK,
            "after the repair, {path}: {}",
            r.text()
        );
    }
    let r = http
        .request(Method::PUT, &arca.url("/ro/after"), &turtle, "")
        .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "after the repair: {}",
        r.text()
    );
    arca.stop();
    let root = data.join("ocfl-root");
    common::check_storage(&root);
    common::validate_with_ocfl_py(&root);
}
