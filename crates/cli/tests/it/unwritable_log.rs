//! A log that cannot be written — stderr on a full disk — must not stop the server. The real
//! `arca serve` runs with stdout and stderr on `/dev/full` (every write fails with ENOSPC):
//! it must start, take concurrent writes (its journal and checkpoint threads log too), serve
//! them back, and stop cleanly on SIGTERM.

use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use hyper::{Method, StatusCode};

use crate::common::{scrub_env, Http};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full exists on Linux")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_on_a_full_disk_does_not_stop_the_server() {
    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arca"));
    cmd.arg("serve")
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--data")
        .arg(data.path())
        // Info level: start-up and shutdown always log something.
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(dev_full())
        .stderr(dev_full());
    scrub_env(&mut cmd);
    let mut child = cmd.spawn().expect("arca starts");
    let base = format!("http://127.0.0.1:{port}/rest");
    let http = Http::new();

    let mut up = false;
    for _ in 0..600 {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("arca exited with {status} while starting with its log on a full disk");
        }
        if let Ok(r) = http
            .try_request(Method::GET, &format!("{base}/"), &[], Bytes::new())
            .await
        {
            if r.status == StatusCode::OK {
                up = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(up, "arca did not answer within 60 s");

    // Concurrent writes go through the journal's threads; each one is read back.
    let mut tasks = Vec::new();
    for i in 0..16 {
        let http = Http::new();
        let url = format!("{base}/c{i}/file");
        tasks.push(tokio::spawn(async move {
            let body = format!("bytes of {i}");
            let put = http
                .request(
                    Method::PUT,
                    &url,
                    &[("Content-Type", "text/plain")],
                    body.clone(),
                )
                .await;
            assert_eq!(put.status, StatusCode::CREATED, "{}", put.text());
            let got = http.get(&url, &[]).await;
            assert_eq!(got.status, StatusCode::OK);
            assert_eq!(got.text(), body);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // An error answer is logged, too.
    let missing = http.get(&format!("{base}/no/such/thing"), &[]).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);

    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    for _ in 0..600 {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "arca exited with {status}");
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    panic!("arca did not stop on SIGTERM");
}
