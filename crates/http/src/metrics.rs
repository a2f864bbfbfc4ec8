//! `/metrics` (Prometheus) and the recording of every request into the observer's metrics.
//!
//! Requests the Fedora API dispatches are recorded around [`dispatch`](crate::dispatch),
//! which knows their [`Operation`]; the routes beside it (constraint documents, `/metrics`,
//! the health checks, the HTML pages) by a route layer that classifies them by their
//! prefix. Nothing is recorded while `metrics.enabled` is off, and `/metrics` is then 404.

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Instant;

use arca_observe::metrics::{RequestKind, RouteClass, Uploads, WriteKind};
use arca_observe::Observer;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::{Method, StatusCode};
use hyper::body::{Body as HttpBody, Frame, SizeHint};

use crate::{acl, ApiError, AppState, Operation};

/// What a dispatched request turned out to be, set once it is parsed (a request refused
/// before that is `other`).
#[derive(Default)]
pub(crate) struct Tag(OnceLock<RequestKind>);

impl Tag {
    pub(crate) fn set(&self, op: &Operation) {
        let _ = self.0.set(kind_of(op));
    }

    fn kind(&self) -> RequestKind {
        self.0
            .get()
            .copied()
            .unwrap_or(RequestKind::of(RouteClass::Other))
    }
}

/// The observer, when it records requests now.
pub(crate) fn recording(state: &AppState) -> Option<&Arc<Observer>> {
    state
        .config
        .observer
        .as_ref()
        .filter(|o| o.metrics().enabled())
}

/// Runs `answer` for a dispatched request and records it (method, what `tag` says it was,
/// status, time to the answer's head).
pub(crate) async fn recorded(
    observer: &Observer,
    method: Method,
    tag: &Tag,
    answer: impl std::future::Future<Output = Response>,
) -> Response {
    let started = Instant::now();
    let response = answer.await;
    observer
        .metrics()
        .record(&method, tag.kind(), response.status(), started.elapsed());
    response
}

/// `req` with its body counted into the uploaded bytes as a handler reads it (writes only).
pub(crate) fn count_upload(observer: &Observer, req: Request) -> Request {
    if !matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH) {
        return req;
    }
    let uploads = observer.metrics().uploads();
    req.map(|inner| Body::new(Counted { inner, uploads }))
}

/// A request body that counts its bytes as they are read.
struct Counted {
    inner: Body,
    uploads: Uploads,
}

impl HttpBody for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                self.uploads.add(data.len() as u64);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The class and write kind of an operation.
fn kind_of(op: &Operation) -> RequestKind {
    use RouteClass as C;
    use WriteKind as W;
    match op {
        Operation::Read { .. } | Operation::Options(_) => RequestKind::of(C::Read),
        Operation::Create(_) => RequestKind::write(C::Write, W::Create),
        Operation::Put(_) => RequestKind::write(C::Write, W::Replace),
        Operation::Patch(_) => RequestKind::write(C::Write, W::Update),
        Operation::Delete(_) => RequestKind::write(C::Write, W::Delete),
        Operation::Purge(_) => RequestKind::write(C::Write, W::Purge),
        Operation::Acl(_, acl::AclMethod::Put | acl::AclMethod::Patch | acl::AclMethod::Delete) => {
            RequestKind::write(C::Acl, W::Acl)
        }
        Operation::Acl(..) => RequestKind::of(C::Acl),
        Operation::Fixity(_) | Operation::MementoFixity { .. } | Operation::FixityOptions => {
            RequestKind::of(C::Fixity)
        }
        Operation::CreateVersion(_) => RequestKind::write(C::Versions, W::Version),
        Operation::TimeMap { .. }
        | Operation::TimeMapOptions(_)
        | Operation::Memento { .. }
        | Operation::MementoOptions { .. } => RequestKind::of(C::Versions),
        Operation::TxCommit(_) => RequestKind::write(C::Transactions, W::Commit),
        Operation::BeginTx
        | Operation::TxStatus(_)
        | Operation::TxRefresh(_)
        | Operation::TxRollback(_) => RequestKind::of(C::Transactions),
        Operation::Events { .. } | Operation::EventsOptions => RequestKind::of(C::Events),
        Operation::Search { .. }
        | Operation::SearchOptions
        | Operation::SearchStatus
        | Operation::SearchReindex
        | Operation::GSearch => RequestKind::of(C::Search),
        Operation::ImportFedora3 => RequestKind::write(C::Import, W::Import),
        Operation::Fedora3(_) => RequestKind::of(C::Fedora3),
        Operation::AuditStatus
        | Operation::AuditRun
        | Operation::AuditReports
        | Operation::AuditReport(_) => RequestKind::of(C::Fixity),
        Operation::Tombstone | Operation::NotSupported(_) | Operation::MethodNotAllowed(_) => {
            RequestKind::of(C::Other)
        }
    }
}

/// The class of a request to a route beside the Fedora API, by its path.
fn class_of_path(path: &str) -> RouteClass {
    if path.starts_with("/static/") {
        RouteClass::Static
    } else if path == "/metrics" || path == "/health" || path.starts_with("/health/") {
        RouteClass::MetricsHealth
    } else {
        RouteClass::Html
    }
}

/// Records the requests of the routes beside the Fedora API (a route layer).
async fn record_route(State(observer): State<Arc<Observer>>, req: Request, next: Next) -> Response {
    if !observer.metrics().enabled() {
        return next.run(req).await;
    }
    let started = Instant::now();
    let method = req.method().clone();
    let kind = RequestKind::of(class_of_path(req.uri().path()));
    let response = next.run(req).await;
    observer
        .metrics()
        .record(&method, kind, response.status(), started.elapsed());
    response
}

/// `routes` with `/metrics` added and every route's requests recorded (when there is an
/// observer). Routes added to the router after this are not recorded.
pub(crate) fn routes(routes: Router<AppState>, state: &AppState) -> Router<AppState> {
    let routes = routes.route("/metrics", get(admin_metrics));
    match &state.config.observer {
        Some(observer) => routes.route_layer(axum::middleware::from_fn_with_state(
            observer.clone(),
            record_route,
        )),
        None => routes,
    }
}

/// `GET /metrics` on the main listener: admins only (401 with the challenge for anonymous
/// callers, 403 for others).
async fn admin_metrics(State(state): State<AppState>, req: Request) -> Response {
    let Some(observer) = recording(&state) else {
        return off();
    };
    let caller = match state.access.identify(req.headers()).await {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    if !caller.is_admin() {
        return state
            .access
            .refuse(&caller, "the metrics are for administrators".into())
            .into_response();
    }
    exposition(observer, req.headers())
}

fn off() -> Response {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "metrics are off (metrics.enabled = false)",
    )
    .into_response()
}

/// The metrics as OpenMetrics when the client accepts it (Prometheus does), else in the
/// older text format.
fn exposition(observer: &Observer, headers: &http::HeaderMap) -> Response {
    use arca_observe::metrics::{classic, CLASSIC_CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE};
    let text = observer.metrics().exposition(observer.sources());
    let open_metrics = headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    let (content_type, text) = if open_metrics {
        (OPENMETRICS_CONTENT_TYPE, text)
    } else {
        (CLASSIC_CONTENT_TYPE, classic(&text))
    };
    ([(http::header::CONTENT_TYPE, content_type)], text).into_response()
}

/// The router of the separate metrics listener (`metrics_listen`): `/metrics` to anyone
/// who reaches it, nothing else. Bind it where only the monitoring network can.
pub fn metrics_router(observer: Arc<Observer>) -> Router {
    async fn open_metrics(State(observer): State<Arc<Observer>>, req: Request) -> Response {
        if !observer.metrics().enabled() {
            return off();
        }
        exposition(&observer, req.headers())
    }
    Router::new()
        .route("/metrics", get(open_metrics))
        .route_layer(axum::middleware::from_fn_with_state(
            observer.clone(),
            record_route,
        ))
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "this listener serves only /metrics")
                .into_response()
        })
        .with_state(observer)
}
