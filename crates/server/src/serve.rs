//! The HTTP/1.1 connection loop: bounded connections, a deadline for each request head,
//! a bounded head size, and a shutdown that waits for requests in flight only so long.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Connection-level bounds.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// Most connections served at once; further clients wait in the kernel's listen queue.
    pub max_connections: usize,
    /// Largest request head (request line and headers) read at all, in bytes; hyper
    /// answers 431 without a message beyond. At least 8192. The HTTP layer answers heads
    /// above its own, smaller limit with a message.
    pub head_buffer_bytes: usize,
    /// Longest wait for a complete request head; the connection is closed after it.
    pub header_timeout: Duration,
    /// How long shutdown waits for requests in flight before closing their connections.
    pub shutdown_grace: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            head_buffer_bytes: 64 << 10,
            header_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

/// Serves `app` (the application, or an axum router) on `listener` until `shutdown`
/// resolves, then lets requests in flight finish for at most `limits.shutdown_grace`.
pub async fn serve<S>(
    listener: TcpListener,
    app: S,
    limits: &ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) where
    S: tower_service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.head_buffer_bytes.max(8192))
        // `Link`, `Location`, `Content-Type` as Fedora writes them: some Fedora clients match
        // header names case-sensitively. hyper can only title-case, so `ETag` goes out as
        // `Etag` and `WWW-Authenticate` as `Www-Authenticate`.
        .title_case_headers(true);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            _ = &mut shutdown => break,
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
        };
        let (stream, _peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
            drop(slot);
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(limits.shutdown_grace) => {
            tracing::warn!(
                grace_s = limits.shutdown_grace.as_secs_f64(),
                "requests still in flight after the shutdown grace period; closing their connections"
            );
        }
    }
}

/// The server while it starts ([`while_starting`]): aborted when dropped, so that a start
/// that fails closes the listener.
pub(crate) struct Serving(Option<tokio::task::JoinHandle<()>>);

impl Serving {
    /// Waits until serving ends (shutdown, then the grace period).
    pub(crate) async fn finished(mut self) {
        if let Some(task) = self.0.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

/// Starts serving on `listener` at once, before the repository is open: health routes and
/// 503 elsewhere until the application is set on the returned [`Starting`], then the
/// application.
pub(crate) fn while_starting(
    listener: TcpListener,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (arca_http::health::Starting, Serving) {
    let starting = arca_http::health::Starting::new();
    let app = starting.clone();
    let task = tokio::spawn(async move { serve(listener, app, &limits, shutdown).await });
    (starting, Serving(Some(task)))
}
