//! `/health/live` and `/health/ready`: anonymous (load balancers probe without credentials),
//! outside the Fedora API's base path, JSON bodies. Liveness is 200 whenever the process
//! answers; readiness is 200 when every check of [`arca_observe::health`] passed, else 503
//! naming what is not ready.
//!
//! [`Starting`] serves them while the server opens its repository (minutes when the catalog
//! is rebuilt from a large root): liveness 200, readiness 503, every other path 503 with
//! `Retry-After`, until the full application is [`set`](Starting::set).

use std::convert::Infallible;
use std::sync::{Arc, OnceLock};
use std::task::Poll;

use arca_observe::health::{Liveness, Readiness};
use arca_observe::Observer;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::future::{self, Either, Ready};

use crate::{App, AppFuture};

/// Liveness.
pub const LIVE_PATH: &str = "/health/live";
/// Readiness.
pub const READY_PATH: &str = "/health/ready";
/// Seconds a client is told to wait while the server starts.
const RETRY_AFTER_SECONDS: &str = "5";

/// The two routes, answered from `observer`.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>(observer: Arc<Observer>) -> Router<S> {
    Router::new()
        .route(LIVE_PATH, get(|| async { live() }))
        .route(
            READY_PATH,
            get(move || {
                let observer = observer.clone();
                async move { ready(&observer.readiness().await) }
            }),
        )
}

/// `200` and `{"status":"live"}`.
pub fn live() -> Response {
    json(StatusCode::OK, &serde_json::json!(Liveness::now()))
}

/// `200` when `readiness` is ready, else `503`; its checks as JSON either way.
pub fn ready(readiness: &Readiness) -> Response {
    let status = if readiness.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json(status, &serde_json::json!(readiness))
}

fn json(status: StatusCode, body: &serde_json::Value) -> Response {
    let body = body.to_string();
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// The application while the server starts: answers the health routes itself and every
/// other request with 503, until [`set`](Self::set) hands it the full application, to which
/// it then forwards every request (connections opened while starting included). It is the
/// service the server serves.
#[derive(Clone, Default)]
pub struct Starting {
    app: Arc<OnceLock<App>>,
}

impl Starting {
    /// Nothing open yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// From now on, requests go to `app`.
    pub fn set(&self, app: App) {
        let _ = self.app.set(app);
    }
}

impl<B> tower_service::Service<http::Request<B>> for Starting
where
    B: axum::body::HttpBody<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<AppFuture, Ready<Result<Response, Infallible>>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        match self.app.get() {
            Some(app) => Either::Left(app.answer(request)),
            None => Either::Right(future::ready(Ok(starting(request.uri().path())))),
        }
    }
}

/// The answer to a request for `path` while the repository opens.
fn starting(path: &str) -> Response {
    match path {
        LIVE_PATH => live(),
        READY_PATH => ready(&Readiness::starting()),
        _ => (
            StatusCode::SERVICE_UNAVAILABLE,
            [
                (header::RETRY_AFTER, RETRY_AFTER_SECONDS),
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            ],
            "arca is starting: the repository is being opened (see /health/ready)\n",
        )
            .into_response(),
    }
}
