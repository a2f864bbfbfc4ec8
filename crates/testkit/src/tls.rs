//! Throwaway certificates for tests of TLS to a private server: a self-signed CA and server
//! certificates it signs, made with the `openssl` program in a temporary directory. When
//! `openssl` cannot run, [`TestCa::new`] prints why (`NOT RUN`) and returns `None`, unless
//! `ARCA_REQUIRE_POSTGRES=1` (whose tests use it), which turns the skip into a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A certificate authority of its own, kept in a temporary directory.
pub struct TestCa {
    dir: tempfile::TempDir,
}

impl TestCa {
    /// A new CA named `name` (its certificate's common name), or `None` as the module says.
    pub fn new(name: &str) -> Option<TestCa> {
        let dir = tempfile::Builder::new()
            .prefix("arca-ca-")
            .tempdir()
            .expect("a temporary directory for certificates");
        let made = openssl(
            dir.path(),
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                "30",
                "-subj",
                &format!("/CN={name}"),
            ],
        );
        if let Err(why) = made {
            if std::env::var("ARCA_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("ARCA_REQUIRE_POSTGRES=1 but openssl cannot make a CA: {why}");
            }
            eprintln!("NOT RUN: tests of TLS: openssl cannot make a CA: {why}");
            return None;
        }
        Some(TestCa { dir })
    }

    /// The CA's certificate (PEM), the file a client trusts.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }

    /// A new server certificate for the DNS name `host`, signed by this CA and valid from
    /// now for `days` days (`-1`: expired since yesterday), and its private key, both PEM.
    pub fn server_certificate(&self, host: &str, days: i32) -> (Vec<u8>, Vec<u8>) {
        let dir = self.dir.path();
        let stem = format!("{host}-{days}");
        let (csr, key, crt, ext) = (
            format!("{stem}.csr"),
            format!("{stem}.key"),
            format!("{stem}.crt"),
            format!("{stem}.ext"),
        );
        std::fs::write(dir.join(&ext), format!("subjectAltName=DNS:{host}\n"))
            .expect("the extension file written");
        let steps: [Vec<&str>; 2] = [
            vec![
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                &key,
                "-out",
                &csr,
                "-subj",
                "/CN=arca test server",
            ],
            vec![
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &crt,
                "-extfile",
                &ext,
                "-days",
            ],
        ];
        let days = days.to_string();
        openssl(dir, &steps[0]).unwrap_or_else(|e| panic!("openssl req: {e}"));
        let mut sign = steps[1].clone();
        sign.push(&days);
        openssl(dir, &sign).unwrap_or_else(|e| panic!("openssl x509: {e}"));
        let read = |name: &str| std::fs::read(dir.join(name)).expect("openssl wrote it");
        (read(&crt), read(&key))
    }
}

/// Runs `openssl args` in `dir`; its output when it fails.
fn openssl(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("openssl does not run: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}
