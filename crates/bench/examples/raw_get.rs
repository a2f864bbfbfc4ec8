//! The floor of a GET of a binary (BENCHMARKS.md, issue 42): hyper's HTTP/1.1 connections as
//! arca serves them (`arca_server::serve`: the same builder settings, nodelay, one task per
//! connection, a multi-threaded tokio runtime) and a handler that does only the unavoidable
//! part of a binary GET, reading the file from disk per request and answering it with a few
//! headers. No routing, catalog, access control or Fedora headers. It takes the objects
//! `arca bench`'s access scenarios create (POST of a container, PUT of its `file`), so that
//! the same load measures both:
//!
//! ```sh
//! cargo build --release -p arca-cli -p arca-bench --example raw_get
//! target/release/examples/raw_get /tmp/raw-get 127.0.0.1:8099 &
//! arca bench access-metadata access-small --url http://127.0.0.1:8099/rest/ --pid $! --no-raw
//! ```

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};

/// A container's answer: one line of Turtle.
const CONTAINER: &[u8] = b"<> a <http://www.w3.org/ns/ldp#Container> .";

/// Where the objects live, and the next container's number.
struct Files {
    dir: PathBuf,
    next: AtomicU64,
}

impl Files {
    /// The file or directory of a URL path below `/rest/`; `None` for one outside it or one
    /// that climbs out.
    fn local(&self, path: &str) -> Option<PathBuf> {
        let relative = Path::new(path.strip_prefix("/rest/")?);
        relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
            .then(|| self.dir.join(relative))
    }
}

fn answer(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r
}

fn failed(e: std::io::Error) -> Response<Full<Bytes>> {
    answer(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

async fn handle(
    files: Arc<Files>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    Ok(match (method, path.as_str()) {
        // A new container (a directory), 201 with its Location.
        (Method::POST, "/rest/") => {
            let n = files.next.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = std::fs::create_dir_all(files.dir.join(n.to_string())) {
                return Ok(failed(e));
            }
            let mut r = answer(StatusCode::CREATED, Bytes::new());
            let location = HeaderValue::from_str(&format!("/rest/{n}")).expect("a plain path");
            r.headers_mut().insert(header::LOCATION, location);
            r
        }
        (Method::GET, "/rest/") => answer(StatusCode::OK, CONTAINER),
        // The body as a file.
        (Method::PUT, p) => {
            let Some(target) = files.local(p) else {
                return Ok(answer(StatusCode::BAD_REQUEST, "no such path"));
            };
            let body = req.into_body().collect().await?.to_bytes();
            match std::fs::write(&target, &body) {
                Ok(()) => answer(StatusCode::CREATED, Bytes::new()),
                Err(e) => failed(e),
            }
        }
        // A file's bytes, read now (inline, as arca reads small files), with Content-Type,
        // ETag and Last-Modified; a container's one line of Turtle.
        (Method::GET, p) => {
            let Some(target) = files.local(p) else {
                return Ok(answer(StatusCode::BAD_REQUEST, "no such path"));
            };
            if target.is_dir() {
                let mut r = answer(StatusCode::OK, CONTAINER);
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/turtle"),
                );
                return Ok(r);
            }
            let bytes = match std::fs::read(&target) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok(answer(StatusCode::NOT_FOUND, Bytes::new()))
                }
                Err(e) => return Ok(failed(e)),
            };
            let etag = format!("\"{:x}\"", bytes.len());
            let mut r = answer(StatusCode::OK, bytes);
            let h = r.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            h.insert(header::ETAG, HeaderValue::from_str(&etag).expect("hex"));
            h.insert(
                header::LAST_MODIFIED,
                HeaderValue::from_static("Sun, 29 Nov 2026 00:00:00 GMT"),
            );
            r
        }
        _ => answer(StatusCode::METHOD_NOT_ALLOWED, Bytes::new()),
    })
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "raw-get-data".into()));
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8099".into());
    std::fs::create_dir_all(&dir)?;
    let files = Arc::new(Files {
        dir,
        next: AtomicU64::new(0),
    });
    // arca's runtime: a multi-threaded tokio, one worker per core.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        println!(
            "raw_get: pid {} on http://{}/rest/",
            std::process::id(),
            listener.local_addr()?
        );
        // arca_server::serve's settings.
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(Duration::from_secs(30))
            .max_buf_size(64 << 10)
            .title_case_headers(true);
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            let files = files.clone();
            let connection = builder.serve_connection(
                TokioIo::new(stream),
                service_fn(move |req| handle(files.clone(), req)),
            );
            tokio::spawn(async move {
                let _ = connection.await;
            });
        }
    })
}
