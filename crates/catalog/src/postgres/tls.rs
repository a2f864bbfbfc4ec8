//! TLS to PostgreSQL: libpq's `sslmode` and `sslrootcert`, given in the URL's query or
//! beside it ([`PgTls`]), turned into sqlx's options (rustls with the `ring` provider; the
//! system's trust store, plus the CA file when one is given).
//!
//! The CA file is read here, once, so that a missing, unreadable or empty one is refused at
//! connect with its path instead of falling back to the system's store. As in libpq,
//! `require` with a CA file verifies the certificate chain (it behaves like `verify-ca`).

use std::path::{Path, PathBuf};

use sqlx::postgres::{PgConnectOptions, PgSslMode};

use crate::{Error, Result};

/// How connections to PostgreSQL use TLS (libpq's `sslmode`; `allow` is not offered).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// Never TLS.
    Disable,
    /// TLS when the server offers it, without checking its certificate (the default).
    Prefer,
    /// TLS or no connection; the certificate is checked only against a given CA file.
    Require,
    /// TLS, and the server's certificate must chain to a trusted CA.
    VerifyCa,
    /// As `VerifyCa`, and the certificate must name the host connected to.
    VerifyFull,
}

impl SslMode {
    /// Every mode, in order of strength.
    pub const ALL: [SslMode; 5] = [
        Self::Disable,
        Self::Prefer,
        Self::Require,
        Self::VerifyCa,
        Self::VerifyFull,
    ];

    /// Parses libpq's name of a mode (`disable`, `prefer`, `require`, `verify-ca`,
    /// `verify-full`).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == name.trim())
    }

    /// libpq's name of the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }

    fn to_sqlx(self) -> PgSslMode {
        match self {
            Self::Disable => PgSslMode::Disable,
            Self::Prefer => PgSslMode::Prefer,
            Self::Require => PgSslMode::Require,
            Self::VerifyCa => PgSslMode::VerifyCa,
            Self::VerifyFull => PgSslMode::VerifyFull,
        }
    }

    fn verifies(self) -> bool {
        matches!(self, Self::VerifyCa | Self::VerifyFull)
    }
}

impl std::fmt::Display for SslMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// TLS settings given beside the URL. Each may also be in the URL's query (`sslmode=`,
/// `sslrootcert=`); given in both places, they must agree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PgTls {
    /// The mode; unset: the URL's, else `prefer`.
    pub mode: Option<SslMode>,
    /// A PEM file of the CA certificates to trust besides the system's.
    pub root_cert: Option<PathBuf>,
}

/// The connection options of `url` with `tls` applied, and a description of the TLS in use
/// for messages (`sslmode=verify-full, CA file /etc/arca/db-ca.pem`).
pub(super) fn connect_options(url: &str, tls: &PgTls) -> Result<(PgConnectOptions, String)> {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let mut url_mode = None;
    let mut url_root = None;
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match &*key {
            "sslmode" | "ssl-mode" => {
                url_mode = Some(SslMode::parse(&value).ok_or_else(|| {
                    Error::Tls(format!(
                        "sslmode={value} in the URL is not a mode arca offers: {}",
                        modes()
                    ))
                })?);
            }
            "sslrootcert" | "ssl-root-cert" | "ssl-ca" => {
                url_root = Some(PathBuf::from(&*value));
            }
            _ => {}
        }
    }
    let mode = agree("sslmode", tls.mode, url_mode, |m| m.to_string())?.unwrap_or(SslMode::Prefer);
    let root = agree("sslrootcert", tls.root_cert.clone(), url_root, |p| {
        p.display().to_string()
    })?;
    // libpq: `require` with a CA file checks the chain, as `verify-ca` does.
    let mode = match (mode, &root) {
        (SslMode::Require, Some(_)) => SslMode::VerifyCa,
        _ => mode,
    };
    let mut options: PgConnectOptions = url.parse()?;
    options = options.ssl_mode(mode.to_sqlx());
    let mut described = format!("sslmode={mode}");
    if let (true, Some(root)) = (mode.verifies(), root) {
        options = options.ssl_root_cert_from_pem(read_ca_file(&root)?);
        described.push_str(&format!(", CA file {}", root.display()));
    }
    Ok((options, described))
}

/// `setting` given beside the URL and in it: the one given, or an error if both are and
/// they differ.
fn agree<T: PartialEq>(
    setting: &str,
    beside: Option<T>,
    in_url: Option<T>,
    show: impl Fn(&T) -> String,
) -> Result<Option<T>> {
    match (beside, in_url) {
        (Some(a), Some(b)) if a != b => Err(Error::Tls(format!(
            "{setting} is given twice and differently: {} beside the URL, {} in it",
            show(&a),
            show(&b)
        ))),
        (a, b) => Ok(a.or(b)),
    }
}

/// The PEM certificates of the CA file at `path`, or why they cannot be used.
fn read_ca_file(path: &Path) -> Result<Vec<u8>> {
    let pem = std::fs::read(path)
        .map_err(|e| Error::Tls(format!("cannot read the CA file {}: {e}", path.display())))?;
    if !pem
        .windows(CERTIFICATE_PEM.len())
        .any(|w| w == CERTIFICATE_PEM)
    {
        return Err(Error::Tls(format!(
            "the CA file {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            path.display()
        )));
    }
    Ok(pem)
}

const CERTIFICATE_PEM: &[u8] = b"-----BEGIN CERTIFICATE-----";

fn modes() -> String {
    SslMode::ALL.map(SslMode::as_str).join(", ")
}

/// `error`, a failure to connect with `described` TLS, as the catalog's TLS error when TLS
/// is its cause: the handshake failed (certificate refused, no TLS offered) or the server
/// refuses connections without TLS.
pub(super) fn explain(error: Error, described: &str) -> Error {
    match &error {
        Error::Postgres(sqlx::Error::Tls(e)) => Error::Tls(format!("{described}: {e}")),
        // sqlx reports a failed handshake (a refused certificate) as an I/O error.
        Error::Postgres(sqlx::Error::Io(e))
            if e.get_ref()
                .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some()) =>
        {
            Error::Tls(format!("{described}: {e}"))
        }
        Error::Postgres(sqlx::Error::Database(e))
            if e.code().as_deref() == Some("28000") && e.message().contains("no encryption") =>
        {
            Error::Tls(format!(
                "{described}: the server accepts this connection only over TLS ({}); \
                 use sslmode=require or stronger",
                e.message()
            ))
        }
        _ => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_by_libpq_name_and_allow_is_refused() {
        for mode in SslMode::ALL {
            assert_eq!(SslMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(SslMode::parse("allow"), None);
        let e = connect_options("postgres://u@h/d?sslmode=allow", &PgTls::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("sslmode=allow") && e.contains("verify-full"),
            "{e}"
        );
    }

    #[test]
    fn settings_and_url_must_agree() {
        let tls = PgTls {
            mode: Some(SslMode::VerifyFull),
            root_cert: None,
        };
        let e = connect_options("postgres://u:pw@h/d?sslmode=require", &tls)
            .unwrap_err()
            .to_string();
        assert!(e.contains("sslmode is given twice"), "{e}");
        assert!(!e.contains("pw"), "{e}");
        let (options, described) =
            connect_options("postgres://u@h/d?sslmode=verify-full", &tls).unwrap();
        assert!(matches!(options.get_ssl_mode(), PgSslMode::VerifyFull));
        assert_eq!(described, "sslmode=verify-full");
    }

    #[test]
    fn the_default_is_prefer_and_require_with_a_ca_file_verifies_the_chain() {
        let (options, _) = connect_options("postgres://u@h/d", &PgTls::default()).unwrap();
        assert!(matches!(options.get_ssl_mode(), PgSslMode::Prefer));
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(
            &ca,
            "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let url = format!(
            "postgres://u@h/d?sslmode=require&sslrootcert={}",
            ca.display()
        );
        let (options, described) = connect_options(&url, &PgTls::default()).unwrap();
        assert!(matches!(options.get_ssl_mode(), PgSslMode::VerifyCa));
        assert!(described.contains("CA file"), "{described}");
    }

    #[test]
    fn a_missing_or_empty_ca_file_is_refused_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let tls = PgTls {
            mode: Some(SslMode::VerifyCa),
            root_cert: Some(missing.clone()),
        };
        let e = connect_options("postgres://u@h/d", &tls)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&missing.display().to_string()), "{e}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate").unwrap();
        let tls = PgTls {
            mode: Some(SslMode::VerifyFull),
            root_cert: Some(empty),
        };
        let e = connect_options("postgres://u@h/d", &tls)
            .unwrap_err()
            .to_string();
        assert!(e.contains("holds no PEM certificate"), "{e}");
    }
}
