//! `arca serve` on a PostgreSQL catalog reached over TLS: a private cluster that takes TCP
//! connections only over TLS, with a certificate for `localhost` signed by a CA made in the
//! test. With `sslmode=verify-full` and the CA file in `ARCA_CATALOG_URL` it serves; with a
//! CA that did not sign the certificate, or a host name the certificate does not name, it
//! exits at start with a message naming the settings, without a panic, a hang or a write.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, Arca, Http};
use arca_testkit::postgres::{Postgres, Setup};
use arca_testkit::tls::TestCa;
use hyper::Method;

/// How long a refused start may take at most (it takes well under a second).
const START_LIMIT: Duration = Duration::from_secs(60);

/// Runs `arca serve` on `data` with `env` until it exits; its status and stderr.
fn serve_until_exit(data: &Path, env: &[(&str, &str)]) -> (std::process::ExitStatus, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arca"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    common::scrub_env(&mut cmd);
    cmd.envs(env.iter().copied());
    let child = cmd.spawn().expect("arca starts");
    let pid = child.id();
    let waiter = std::thread::spawn(move || child.wait_with_output().expect("arca's output"));
    let started = Instant::now();
    while !waiter.is_finished() {
        if started.elapsed() > START_LIMIT {
            if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            panic!("arca serve neither served nor exited within {START_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = waiter.join().unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_over_tls_with_verify_full_and_refuse_a_wrong_ca_or_host_at_start() {
    let Some((ca, other_ca, _pg, url)) = tokio::task::spawn_blocking(|| {
        let ca = TestCa::new("arca test CA")?;
        let other_ca = TestCa::new("another CA")?;
        let (certificate, key) = ca.server_certificate("localhost", 30);
        let pg = Postgres::start_with(&Setup::tls_only(certificate, key))?;
        let url = pg.create_database();
        Some((ca, other_ca, pg, url))
    })
    .await
    .unwrap() else {
        return;
    };
    let by_name = url.replace("127.0.0.1", "localhost");

    // A wrong CA given as settings beside the URL (with a password, which the server's
    // `trust` ignores and the message must not show).
    let data = tempfile::tempdir().unwrap();
    let other_ca_file = other_ca.ca_file().display().to_string();
    let (status, log) = tokio::task::spawn_blocking({
        let data = data.path().to_path_buf();
        let by_name = by_name.replace("arca@", "arca:s3cret@");
        move || {
            serve_until_exit(
                &data,
                &[
                    ("ARCA_CATALOG_URL", by_name.as_str()),
                    ("ARCA_CATALOG_SSLMODE", "verify-full"),
                    ("ARCA_CATALOG_SSL_ROOT_CERT", other_ca_file.as_str()),
                ],
            )
        }
    })
    .await
    .unwrap();
    assert!(!status.success(), "arca served with a wrong CA:\n{log}");
    assert!(
        !log.contains("panicked") && !log.contains("s3cret"),
        "{log}"
    );
    for expected in [
        "catalog.ssl_root_cert",
        "ARCA_CATALOG_SSL_ROOT_CERT",
        "sslmode=verify-full",
        "UnknownIssuer",
    ] {
        assert!(log.contains(expected), "{expected:?} missing:\n{log}");
    }
    let root = data.path().join("ocfl-root");
    assert!(
        !root.exists() || common::object_dirs(&root).is_empty(),
        "a refused start wrote objects"
    );

    // The address instead of the name the certificate gives, the settings in the URL.
    let (status, log) = tokio::task::spawn_blocking({
        let data = data.path().to_path_buf();
        let wrong_host = format!(
            "{url}?sslmode=verify-full&sslrootcert={}",
            ca.ca_file().display()
        );
        move || serve_until_exit(&data, &[("ARCA_CATALOG_URL", wrong_host.as_str())])
    })
    .await
    .unwrap();
    assert!(
        !status.success(),
        "arca served with a wrong host name:\n{log}"
    );
    assert!(!log.contains("panicked"), "{log}");
    assert!(
        log.contains("catalog.sslmode") && log.contains("not valid for name \"127.0.0.1\""),
        "{log}"
    );

    // The right CA and host name: served, and a resource written and read back.
    let good = format!(
        "{by_name}?sslmode=verify-full&sslrootcert={}",
        ca.ca_file().display()
    );
    let arca = Arca::serve_with(data.path(), &[("ARCA_CATALOG_URL", good.as_str())]);
    let http = Http::new();
    let body = "<> <http://purl.org/dc/terms/title> \"over TLS\" .";
    let r = http
        .request(
            Method::PUT,
            &arca.url("/tls"),
            &[("content-type", "text/turtle")],
            body.to_string(),
        )
        .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    let r = http
        .request(
            Method::GET,
            &arca.url("/tls"),
            &[("accept", "text/turtle")],
            String::new(),
        )
        .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text());
    assert!(r.text().contains("over TLS"), "{}", r.text());
    arca.stop();
}
