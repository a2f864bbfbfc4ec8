//! `/health/live` and `/health/ready`: anonymous JSON answers; while the repository opens the
//! server already answers (live, not ready, 503 elsewhere); a data directory whose file
//! system fills past `health.min_free_bytes` makes it not ready until space returns. The
//! services' own cases (PostgreSQL, MinIO, ActiveMQ stopped and restarted) are in their
//! binaries.

use std::path::{Path, PathBuf};
use std::process::Command;

use arca_testkit::TestServer;
use hyper::StatusCode;

use crate::common::health::{failing, not_ready_for, origin, ready, wait_readiness};
use crate::common::Http;

/// Thresholds no test machine's disk trips: these tests are not about the disk.
fn any_disk(c: &mut arca_config::Config) {
    c.health.min_free_bytes = 0;
    c.health.min_free_percent = 0;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_anonymously_with_every_check() {
    let server = TestServer::start_with(None, any_disk).await;
    let origin = origin(&server.base);
    let reply = wait_readiness(&origin, "readiness", ready).await;
    assert_eq!(
        reply.header("content-type"),
        Some("application/json"),
        "{reply:?}"
    );
    let body: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(body["ready"], true, "{body}");
    let names: Vec<&str> = body["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["catalog", "storage", "disk", "search"], "{body}");
    let live = Http::anonymous()
        .get(&format!("{origin}/health/live"), &[])
        .await;
    assert_eq!(live.status, StatusCode::OK);
    assert_eq!(live.text(), r#"{"status":"live"}"#);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_answers_while_the_repository_opens() {
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = arca_config::Config {
        listen: addr.to_string(),
        data: dir.path().to_path_buf(),
        ..Default::default()
    };
    any_disk(&mut config);
    let (open, gate) = tokio::sync::oneshot::channel::<()>();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(arca_server::run_gated(
        config,
        listener,
        async move {
            let _ = stopped.await;
        },
        async move {
            let _ = gate.await;
        },
        |_| {},
    ));
    let origin = format!("http://{addr}");
    let anonymous = Http::anonymous();

    // The repository is held closed: live, not ready (the catalog), 503 elsewhere.
    let live = anonymous.get(&format!("{origin}/health/live"), &[]).await;
    assert_eq!(live.status, StatusCode::OK, "{}", live.text());
    let starting = anonymous.get(&format!("{origin}/health/ready"), &[]).await;
    assert_eq!(starting.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(failing(&starting), ["catalog"], "{}", starting.text());
    assert!(
        starting.text().contains("rebuilding from storage"),
        "{}",
        starting.text()
    );
    let api = Http::new().get(&format!("{origin}/rest/"), &[]).await;
    assert_eq!(
        api.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        api.text()
    );
    assert!(api.header("retry-after").is_some(), "{:?}", api.headers);

    // Opened: ready, and the API answers (on connections opened while starting too).
    open.send(()).unwrap();
    wait_readiness(&origin, "the repository to open", ready).await;
    let api = Http::new().get(&format!("{origin}/rest/"), &[]).await;
    assert_eq!(api.status, StatusCode::OK, "{}", api.text());
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

/// A tmpfs mounted on a temporary directory, unmounted when dropped.
struct Tmpfs {
    _dir: tempfile::TempDir,
    mount: PathBuf,
}

impl Tmpfs {
    /// `None` (after saying why) where this process may not mount file systems, unless
    /// `ARCA_REQUIRE_MOUNT=1`, which makes that a failure.
    fn mount(mib: u64) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().join("mnt");
        std::fs::create_dir(&mount).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(&mount)
            .output();
        match status {
            Ok(out) if out.status.success() => Some(Self { _dir: dir, mount }),
            other => {
                let why = match other {
                    Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
                    Err(e) => e.to_string(),
                };
                if std::env::var("ARCA_REQUIRE_MOUNT").as_deref() == Ok("1") {
                    panic!("ARCA_REQUIRE_MOUNT=1 but mounting a tmpfs failed: {why}");
                }
                eprintln!(
                    "NOT RUN: the full-disk readiness test needs to mount a tmpfs (root): {why}"
                );
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily: threads of the stopped server may still close their files.
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
    }
}

fn free_bytes(path: &Path) -> u64 {
    arca_storage::free_space::usage(path).unwrap().free_bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_makes_the_server_not_ready_until_space_returns() {
    const MIN_FREE: u64 = 32 << 20;
    let Some(fs) = Tmpfs::mount(160) else {
        return;
    };
    let server = TestServer::start_with(Some(&fs.mount), |c| {
        c.health.min_free_bytes = MIN_FREE;
        c.health.min_free_percent = 0;
    })
    .await;
    let origin = origin(&server.base);
    wait_readiness(&origin, "readiness on an empty disk", ready).await;

    // Fill the file system to 8 MiB under the threshold.
    let free = free_bytes(&fs.mount);
    assert!(free > MIN_FREE, "the server leaves {free} bytes of 160 MiB");
    let ballast = fs.mount.join("ballast");
    let fill = free - (MIN_FREE - (8 << 20));
    std::fs::write(&ballast, vec![0xa5u8; fill as usize]).unwrap();
    let reply = wait_readiness(&origin, "the full disk to show", not_ready_for("disk")).await;
    assert_eq!(failing(&reply), ["disk"], "{}", reply.text());

    std::fs::remove_file(&ballast).unwrap();
    wait_readiness(&origin, "readiness once space returned", ready).await;
    server.stop().await;
}
