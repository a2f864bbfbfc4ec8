//! Test support: [`TestServer`] runs a real arca server in-process on `127.0.0.1:0` over a
//! temporary data directory; [`TestServer::request`] talks HTTP/1.1 to it (both with the
//! default feature `server`); [`postgres::Postgres`] and [`activemq::ActiveMq`] run private
//! PostgreSQL and ActiveMQ servers, [`s3::Minio`] a private MinIO (an S3-compatible object
//! store) for the S3 store's tests, [`tls::TestCa`] certificates for TLS to them; [`shared`] locates the shared fixtures (`../shared`
//! beside the checkout); [`datefudge_library`] sets a server's clock apart.

pub mod activemq;
pub mod postgres;
pub mod s3;
#[cfg(feature = "server")]
mod server;
pub mod tls;

use std::path::{Path, PathBuf};

#[cfg(feature = "server")]
pub use server::*;

/// ocfl-py's `ocfl-validate.py`, the independent validator the tests run: `$OCFL_VALIDATE`,
/// else the first on `PATH`, else the venv `scripts/test` makes in `~/.cache/arca-venv`.
/// `None` (after printing why) if there is none and `ARCA_REQUIRE_VALIDATOR` is not `1`; a
/// panic if it is.
pub fn ocfl_validator() -> Option<PathBuf> {
    if let Some(v) = std::env::var_os("OCFL_VALIDATE").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(v));
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("ocfl-validate.py"))
            .find(|p| p.is_file())
    });
    let venv = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache/arca-venv/bin/ocfl-validate.py"))
        .filter(|p| p.is_file());
    let found = on_path.or(venv);
    if found.is_none() {
        let msg = "ocfl-py's ocfl-validate.py is neither in $OCFL_VALIDATE, on PATH nor in \
                   ~/.cache/arca-venv (python3 -m venv ~/.cache/arca-venv && \
                   ~/.cache/arca-venv/bin/pip install ocfl-py)";
        if std::env::var("ARCA_REQUIRE_VALIDATOR").as_deref() == Ok("1") {
            panic!("ARCA_REQUIRE_VALIDATOR=1 but {msg}");
        }
        eprintln!("SKIPPED: independent OCFL validation: {msg}");
    }
    found
}

/// The shared fixtures directory (`../shared` beside the checkout). Panics with a clear
/// message if it is missing: the fixtures are part of the test suite.
pub fn shared() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        dir.is_dir(),
        "the shared fixtures are missing: expected {}",
        dir.display()
    );
    dir.canonicalize().expect("canonical shared dir")
}

/// Where Debian's `datefudge` package puts its library.
const DATEFUDGE_LIBRARY: &str = "/usr/lib/x86_64-linux-gnu/datefudge/datefudge.so";

/// Debian's datefudge library, which a test preloads into a server (`LD_PRELOAD`, with
/// `DATEFUDGE` the seconds to take off its clock: `-7` puts it 7 s ahead) to set its clock
/// apart from the others'. (libfaketime crashes arca at start: its constructor frees
/// memory before mimalloc, arca's `malloc`, is ready.) `None` (after printing why) if it
/// is missing and `ARCA_REQUIRE_DATEFUDGE` is not `1`; a panic if it is (`scripts/test`
/// installs the package and sets it).
pub fn datefudge_library() -> Option<PathBuf> {
    let library = PathBuf::from(DATEFUDGE_LIBRARY);
    if library.is_file() {
        return Some(library);
    }
    let msg = format!("{DATEFUDGE_LIBRARY} is missing (apt-get install datefudge)");
    if std::env::var("ARCA_REQUIRE_DATEFUDGE").as_deref() == Ok("1") {
        panic!("ARCA_REQUIRE_DATEFUDGE=1 but {msg}");
    }
    eprintln!("NOT RUN: tests with skewed clocks (datefudge): {msg}");
    None
}
