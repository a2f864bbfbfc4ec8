//! The Fedora API over HTTP.
//!
//! Every request is first parsed into an [`Operation`] (method + target), then dispatched
//! to one handler; every kernel error becomes a response in one place,
//! [`ApiError::from_kernel`]. Paths below the base path (`/rest` by default) name
//! resources; `…/fcr:metadata` is a binary's description and `…/fcr:tombstone` a deleted
//! resource's tombstone.
//!
//! Paging (an arca extension): `GET <container>?limit=N[&after=<child path>]` (or
//! `Prefer: return=representation; max-member-count="N"`) returns at most N `ldp:contains`
//! triples in id order, and a `Link: <…?limit=N&after=…>; rel="next"` header when more
//! children follow.
#![warn(missing_docs)]

mod access;
mod acl;
pub mod audit;
mod context;
mod drain;
mod error;
mod events;
mod external;
mod fedora3;
mod fixity;
mod handlers;
pub mod headers;
pub mod health;
mod html;
mod import;
mod limits;
mod listing;
mod metrics;
mod response;
mod search;
mod search_forward;
mod transactions;
mod versions;
mod xml;

use std::sync::Arc;

use arca_model::FedoraId;
use arca_repository::Repository;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::{Method, StatusCode};

pub use access::AuthConfig;
pub use error::{constrained_by, ApiError};
pub use external::ExternalClient;
pub use limits::{RequestLimits, BUDGET_WAIT};
pub use metrics::metrics_router;
pub use search_forward::SearchForwarder;

/// Settings of the HTTP layer.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Path prefix of the REST API, without trailing slash (`/rest`).
    pub base_path: String,
    /// External URL of the REST root (e.g. `https://repo.example.org/rest`); derived from the
    /// `Host` header when `None`.
    pub base_url: Option<String>,
    /// The user recorded as creator and modifier when access checks are off.
    pub default_user: String,
    /// Authentication and access control (off by default: [`AuthConfig::enabled`]).
    pub auth: AuthConfig,
    /// Bounds on request sizes and parsing.
    pub limits: RequestLimits,
    /// Where external content may come from; `None` refuses every external-content
    /// request (§3.9).
    pub external_allowed: Option<Arc<arca_repository::AllowList>>,
    /// The client that reads `http:` and `https:` external content.
    pub external_client: ExternalClient,
    /// Event delivery to brokers, reported to admins by `fcr:events`.
    pub deliveries: Vec<Arc<arca_events::delivery::DeliveryStatus>>,
    /// The search index (`fcr:search`, `/fedoragsearch/rest`); `None` when search is off.
    pub search: Option<Arc<arca_search::Indexer>>,
    /// The most hits one search page may ask for.
    pub search_max_results: usize,
    /// Where searches go when this node has no index (`search` is `None`) and
    /// `search.forward_to` names nodes that have one.
    pub search_forward: Option<Arc<SearchForwarder>>,
    /// Whether the read-only Fedora 3 REST facade under `/fedora/` (imported objects) is
    /// on now; shared, because under `auto` the first import into the running server turns
    /// it on.
    pub fedora3_facade: Arc<std::sync::atomic::AtomicBool>,
    /// `auto`: an import turns the facade on.
    pub fedora3_facade_auto: bool,
    /// Metrics, health and status (`/metrics`, `/health/*`, the status page); `None` in
    /// tests that build a bare router.
    pub observer: Option<Arc<arca_observe::Observer>>,
    /// The background fixity audit (admins see and start it), when the server runs one.
    pub audit: Option<Arc<arca_fixity::schedule::BackgroundAudit>>,
    /// Copies to the replicas (admins see their lag), when there are any.
    pub replication: Option<Arc<arca_fixity::Replicator>>,
    /// The directory of the fixity audits' reports (`<data>/fixity/reports`), served to
    /// admins by `fcr:audit/reports`; `None`: none kept.
    pub fixity_reports: Option<std::path::PathBuf>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            base_path: "/rest".into(),
            base_url: None,
            default_user: "fedoraAdmin".into(),
            auth: AuthConfig::default(),
            limits: RequestLimits::default(),
            external_allowed: None,
            external_client: ExternalClient::default(),
            deliveries: Vec::new(),
            search: None,
            search_max_results: 1_000,
            search_forward: None,
            fedora3_facade: Default::default(),
            fedora3_facade_auto: false,
            observer: None,
            audit: None,
            replication: None,
            fixity_reports: None,
        }
    }
}

#[derive(Clone)]
struct AppState {
    repo: Arc<Repository>,
    config: Arc<HttpConfig>,
    budget: limits::BodyBudget,
    access: Arc<access::Access>,
    /// The Fedora 3 facade's cache of datastream descriptions (when the facade is or may
    /// become on).
    fedora3: Option<Arc<arca_fedora3::view::DescriptionCache>>,
}

/// Paths the application's axum router has routes for, outside the Fedora API (see
/// [`App`]): a route below the base path must be listed here.
const ROUTED_PREFIXES: [&str; 4] = ["/static/", "/status", "/health/", "/metrics"];

/// The application: the Fedora API below the base path, the constraint documents, UI
/// assets, status page, health and metrics routes beside it.
///
/// A request below the base path (most requests) goes to the API's dispatcher directly;
/// the others through an axum router (its routes, then the dispatcher as its fallback, for
/// GSearch, the Fedora 3 facade and the 404s of paths outside the API). An API request so
/// spares the router's two path matches, the clone of its boxed fallback and the vector of
/// parameters the fallback's wildcard extracts.
#[derive(Clone)]
pub struct App {
    state: AppState,
    routes: Router,
    /// Whether every path below the base path is the API's: the base path is not the root
    /// and no routed path lies below it.
    direct: bool,
}

impl App {
    /// Whether `path` goes to the dispatcher without the router.
    fn is_direct(&self, path: &str) -> bool {
        let base = self.state.config.base_path.as_str();
        self.direct
            && path
                .strip_prefix(base)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }

    /// Answers `req` (the [`Service`](tower_service::Service) call, without `&mut`).
    pub(crate) fn answer<B>(&self, req: http::Request<B>) -> AppFuture
    where
        B: axum::body::HttpBody<Data = bytes::Bytes> + Send + 'static,
        B::Error: Into<axum::BoxError>,
    {
        let req = req.map(axum::body::Body::new);
        if self.is_direct(req.uri().path()) {
            let state = self.state.clone();
            return futures_util::future::Either::Left(Box::pin(async move {
                Ok(dispatch(State(state), req).await)
            }));
        }
        futures_util::future::Either::Right(tower_service::Service::call(
            &mut self.routes.clone(),
            req,
        ))
    }
}

/// The future of an [`App`]'s answer.
pub(crate) type AppFuture = futures_util::future::Either<
    futures_util::future::BoxFuture<'static, Result<Response, std::convert::Infallible>>,
    axum::routing::future::RouteFuture<std::convert::Infallible>,
>;

impl<B> tower_service::Service<http::Request<B>> for App
where
    B: axum::body::HttpBody<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = AppFuture;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        self.answer(req)
    }
}

/// Builds the application for the Fedora API and the routes beside it. Fails when the
/// configured root ACL is not a valid ACL.
pub fn router(repo: Arc<Repository>, config: HttpConfig) -> Result<App, String> {
    let access = Arc::new(access::Access::new(config.auth.clone(), &repo)?);
    let may_serve_fedora3 = config
        .fedora3_facade
        .load(std::sync::atomic::Ordering::Relaxed)
        || config.fedora3_facade_auto;
    let fedora3 = may_serve_fedora3.then(|| arca_fedora3::view::DescriptionCache::new(&repo));
    let state = AppState {
        fedora3,
        repo,
        budget: limits::BodyBudget::new(config.limits.buffered_bodies),
        config: Arc::new(config),
        access,
    };
    let mut routes = Router::new()
        .route("/static/constraints/{name}", get(constraint_document))
        .route("/static/ui/{name}", get(html::assets::serve))
        .route("/status", get(html::status::handler));
    if let Some(observer) = &state.config.observer {
        routes = routes.merge(health::routes(observer.clone()));
    }
    // After every route: the metrics layer records the routes added before it.
    let routes = metrics::routes(routes, &state)
        .fallback(dispatch)
        .with_state(state.clone());
    let base = state.config.base_path.as_str();
    let direct = !base.is_empty() && ROUTED_PREFIXES.iter().all(|p| !p.starts_with(base));
    Ok(App {
        state,
        routes,
        direct,
    })
}

async fn constraint_document(Path(name): Path<String>) -> Response {
    match error::constraint_document(name.trim_end_matches(".txt")) {
        Some(text) => (
            [(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            text,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// What a request asks for, decided before any work is done.
#[derive(Debug)]
enum Operation {
    Read {
        id: FedoraId,
        head: bool,
    },
    Options(FedoraId),
    Create(FedoraId),
    Put(FedoraId),
    Patch(FedoraId),
    Delete(FedoraId),
    Purge(FedoraId),
    Tombstone,
    /// A request on `<id>/fcr:acl`.
    Acl(FedoraId, acl::AclMethod),
    Fixity(FedoraId),
    /// `GET <binary>/fcr:versions/<datetime>/fcr:fixity`: the fixity of one memento's
    /// content (as Fedora 7, fcrepo #2299).
    MementoFixity {
        id: FedoraId,
        datetime: i64,
    },
    FixityOptions,
    TimeMap {
        id: FedoraId,
        head: bool,
    },
    TimeMapOptions(FedoraId),
    CreateVersion(FedoraId),
    BeginTx,
    TxStatus(String),
    TxRefresh(String),
    TxCommit(String),
    TxRollback(String),
    Memento {
        id: FedoraId,
        datetime: i64,
        head: bool,
    },
    MementoOptions {
        id: FedoraId,
        datetime: i64,
    },
    /// `GET`/`HEAD /fcr:events`: the event log.
    Events {
        head: bool,
    },
    EventsOptions,
    /// `GET`/`HEAD /fcr:search`: a query.
    Search {
        head: bool,
    },
    SearchOptions,
    /// `GET /fcr:search/status` (admins).
    SearchStatus,
    /// `POST /fcr:search/reindex` (admins).
    SearchReindex,
    /// `/fedoragsearch/rest` (outside the REST root, as GSearch was).
    GSearch,
    /// `GET /fcr:audit` (admins): the background audit and the replicas.
    AuditStatus,
    /// `POST /fcr:audit` (admins): an audit run now.
    AuditRun,
    /// `GET /fcr:audit/reports` (admins): the recent runs.
    AuditReports,
    /// `GET /fcr:audit/reports/<id>` (admins): one run's report.
    AuditReport(String),
    /// `POST /fcr:import/fedora3` (admins): one Fedora 3 object into the repository.
    ImportFedora3,
    /// `/fedora/…`: the read-only Fedora 3 facade, when it is on.
    Fedora3(fedora3::Request),
    NotSupported(&'static str),
    MethodNotAllowed(&'static str),
}

/// Where GSearch's REST interface was, and arca's compatible one is.
pub(crate) const GSEARCH_PATH: &str = "/fedoragsearch/rest";

/// Decodes a percent-encoded path strictly: every `%` must start a two-digit hex escape and
/// the result must be UTF-8.
fn decode_path(path: &str) -> Result<String, arca_repository::Error> {
    let bytes = path.as_bytes();
    for (i, _) in path.match_indices('%') {
        let hex = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_hexdigit);
        if !(hex(i + 1) && hex(i + 2)) {
            let end = (i + 3).min(path.len());
            return Err(arca_repository::Error::BadRequest(format!(
                "the path has an invalid percent-escape {:?} at byte {i}",
                String::from_utf8_lossy(&bytes[i..end])
            )));
        }
    }
    percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .map(|p| p.into_owned())
        .map_err(|_| arca_repository::Error::BadRequest("the path is not valid UTF-8".into()))
}

/// Parses the method and the path below the base into an operation.
fn parse_operation(method: &Method, path: &str) -> Result<Operation, arca_repository::Error> {
    let decoded = decode_path(path)?;
    // Endpoints and a resource's sub-resources are the segments named `fcr:…`: a path
    // without one names a resource (as most requests do).
    if !decoded.contains("fcr:") {
        return Ok(resource_operation(method, FedoraId::from_path(&decoded)?));
    }
    let segments: Vec<&str> = decoded.trim_matches('/').split('/').collect();
    for (i, seg) in segments.iter().enumerate() {
        match *seg {
            "fcr:versions" => {
                let id = FedoraId::from_path(&segments[..i].join("/"))?;
                return versions_operation(method, id, &segments[i + 1..]);
            }
            "fcr:fixity" if i + 1 == segments.len() => {
                let id = FedoraId::from_path(&segments[..i].join("/"))?;
                if id.is_description() || id.is_acl() {
                    return Err(arca_repository::Error::BadRequest(format!(
                        "{} is not a binary; fcr:fixity follows a binary's path",
                        id.path()
                    )));
                }
                return Ok(match *method {
                    Method::GET => Operation::Fixity(id),
                    Method::OPTIONS => Operation::FixityOptions,
                    _ => Operation::MethodNotAllowed(fixity::ALLOW),
                });
            }
            "fcr:tx" if i == 0 => {
                return Ok(match (&segments[1..], method) {
                    ([] | [""], &Method::POST) => Operation::BeginTx,
                    ([] | [""], _) => Operation::MethodNotAllowed(transactions::ENDPOINT_ALLOW),
                    ([id], &Method::GET | &Method::HEAD) => Operation::TxStatus(id.to_string()),
                    ([id], &Method::POST) => Operation::TxRefresh(id.to_string()),
                    ([id], &Method::PUT) => Operation::TxCommit(id.to_string()),
                    ([id], &Method::DELETE) => Operation::TxRollback(id.to_string()),
                    ([_], _) => Operation::MethodNotAllowed(transactions::TX_ALLOW),
                    _ => {
                        return Err(arca_repository::Error::BadRequest(
                            "a transaction is /fcr:tx/<id>; nothing lies below it".into(),
                        ))
                    }
                });
            }
            "fcr:tx" => {
                return Ok(Operation::NotSupported(
                    "transactions below a resource (fcr:tx)",
                ))
            }
            "fcr:events" if i == 0 && segments.len() == 1 => {
                return Ok(match *method {
                    Method::GET => Operation::Events { head: false },
                    Method::HEAD => Operation::Events { head: true },
                    Method::OPTIONS => Operation::EventsOptions,
                    _ => Operation::MethodNotAllowed(events::ALLOW),
                })
            }
            "fcr:search" if i == 0 => {
                return Ok(match (&segments[1..], method) {
                    ([], &Method::GET) => Operation::Search { head: false },
                    ([], &Method::HEAD) => Operation::Search { head: true },
                    ([], &Method::OPTIONS) => Operation::SearchOptions,
                    ([], _) => Operation::MethodNotAllowed(search::ALLOW),
                    (["status"], &Method::GET) => Operation::SearchStatus,
                    (["status"], _) => Operation::MethodNotAllowed("GET"),
                    (["reindex"], &Method::POST) => Operation::SearchReindex,
                    (["reindex"], _) => Operation::MethodNotAllowed("POST"),
                    _ => {
                        return Err(arca_repository::Error::BadRequest(
                            "below fcr:search are only status and reindex".into(),
                        ))
                    }
                })
            }
            "fcr:search" => {
                return Err(arca_repository::Error::BadRequest(
                    "search is /fcr:search at the repository root".into(),
                ))
            }
            "fcr:audit" if i == 0 => {
                return Ok(match (&segments[1..], method) {
                    ([], &Method::GET) => Operation::AuditStatus,
                    ([], &Method::POST) => Operation::AuditRun,
                    ([], _) => Operation::MethodNotAllowed("GET, POST"),
                    (["reports"], &Method::GET) => Operation::AuditReports,
                    (["reports", id], &Method::GET) => Operation::AuditReport(id.to_string()),
                    (["reports"] | ["reports", _], _) => Operation::MethodNotAllowed("GET"),
                    _ => {
                        return Err(arca_repository::Error::BadRequest(
                            "below fcr:audit are only reports and reports/<id>".into(),
                        ))
                    }
                })
            }
            "fcr:audit" => {
                return Err(arca_repository::Error::BadRequest(
                    "the fixity audit is /fcr:audit at the repository root".into(),
                ))
            }
            "fcr:import" if i == 0 => {
                return match (&segments[1..], method) {
                    (["fedora3"], &Method::POST) => Ok(Operation::ImportFedora3),
                    (["fedora3"], _) => Ok(Operation::MethodNotAllowed("POST")),
                    _ => Err(arca_repository::Error::BadRequest(
                        "imports are POST /fcr:import/fedora3 at the repository root".into(),
                    )),
                }
            }
            "fcr:acl" if i + 1 == segments.len() => {
                let id = FedoraId::from_path(&segments[..i].join("/"))?;
                return Ok(match acl::AclMethod::of(method) {
                    Some(m) => Operation::Acl(id, m),
                    None => Operation::MethodNotAllowed(acl::ALLOW),
                });
            }
            "fcr:tombstone" if i + 1 == segments.len() => {
                let id = FedoraId::from_path(&segments[..i].join("/"))?;
                return Ok(match *method {
                    Method::DELETE => Operation::Purge(id),
                    _ => Operation::Tombstone,
                });
            }
            _ => {}
        }
    }
    Ok(resource_operation(method, FedoraId::from_path(&decoded)?))
}

/// The operation `method` asks of resource `id`.
fn resource_operation(method: &Method, id: FedoraId) -> Operation {
    match *method {
        Method::GET => Operation::Read { id, head: false },
        Method::HEAD => Operation::Read { id, head: true },
        Method::OPTIONS => Operation::Options(id),
        Method::POST => Operation::Create(id),
        Method::PUT => Operation::Put(id),
        Method::PATCH => Operation::Patch(id),
        Method::DELETE => Operation::Delete(id),
        _ => Operation::MethodNotAllowed("GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE"),
    }
}

/// The operation on `<id>/fcr:versions` (the TimeMap) or `<id>/fcr:versions/<datetime>` (a
/// memento); `rest` is what follows `fcr:versions`.
fn versions_operation(
    method: &Method,
    id: FedoraId,
    rest: &[&str],
) -> Result<Operation, arca_repository::Error> {
    match rest {
        [] | [""] => Ok(match *method {
            Method::GET => Operation::TimeMap { id, head: false },
            Method::HEAD => Operation::TimeMap { id, head: true },
            Method::OPTIONS => Operation::TimeMapOptions(id),
            Method::POST => Operation::CreateVersion(id),
            _ => Operation::MethodNotAllowed(versions::TIMEMAP_ALLOW),
        }),
        [segment] => {
            let datetime = versions::parse_memento_segment(segment).ok_or_else(|| {
                arca_repository::Error::BadRequest(format!(
                    "{segment:?} is not a memento datetime; mementos are named YYYYMMDDHHMMSS (UTC)"
                ))
            })?;
            Ok(match *method {
                Method::GET => Operation::Memento { id, datetime, head: false },
                Method::HEAD => Operation::Memento { id, datetime, head: true },
                Method::OPTIONS => Operation::MementoOptions { id, datetime },
                _ => Operation::MethodNotAllowed(versions::MEMENTO_ALLOW),
            })
        }
        [segment, "fcr:fixity"] => {
            let datetime = versions::parse_memento_segment(segment).ok_or_else(|| {
                arca_repository::Error::BadRequest(format!(
                    "{segment:?} is not a memento datetime; mementos are named YYYYMMDDHHMMSS (UTC)"
                ))
            })?;
            Ok(match *method {
                Method::GET => Operation::MementoFixity { id, datetime },
                Method::OPTIONS => Operation::FixityOptions,
                _ => Operation::MethodNotAllowed(fixity::ALLOW),
            })
        }
        _ => Err(arca_repository::Error::BadRequest(format!(
            "nothing lies below a memento but its fcr:fixity ({}); a description's mementos are at <binary>/fcr:metadata/fcr:versions/…",
            rest.join("/")
        ))),
    }
}

async fn dispatch(State(state): State<AppState>, req: Request) -> Response {
    let limits = drain::DrainLimits {
        bytes: state.config.limits.max_rdf_body,
        idle: state.config.limits.body_idle_timeout,
    };
    let tag = metrics::Tag::default();
    // The request's future is boxed here, once: the futures around it (and axum's box of
    // them) then hold a pointer, not its kilobytes of state, each copied on its way in.
    let Some(observer) = metrics::recording(&state).cloned() else {
        return drain::draining_refused_body(req, limits, |req| Box::pin(route(state, req, &tag)))
            .await;
    };
    let method = req.method().clone();
    let answer = drain::draining_refused_body(req, limits, |req| {
        Box::pin(route(state, metrics::count_upload(&observer, req), &tag))
    });
    metrics::recorded(&observer, method, &tag, answer).await
}

/// Decides what `req` asks for and answers it; a browser's GET that fails gets an error
/// page.
async fn route(state: AppState, req: Request, tag: &metrics::Tag) -> Response {
    if !(req.method() == Method::GET && html::wanted(req.headers())) {
        return answer(state, req, tag).await;
    }
    let base_url = base_url(&state.config, req.headers());
    let headers = req.headers().clone();
    let out = answer(state.clone(), req, tag).await;
    html::error::decorate(out, &state, &base_url, &headers).await
}

/// The external URL of the REST root: configured, or from the request's `Host`.
fn base_url(config: &HttpConfig, h: &http::HeaderMap) -> String {
    config.base_url.clone().unwrap_or_else(|| {
        let host = h
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost");
        let mut url = String::with_capacity(7 + host.len() + config.base_path.len());
        url.push_str("http://");
        url.push_str(host);
        url.push_str(&config.base_path);
        url
    })
}

/// Answers `req`.
async fn answer(state: AppState, req: Request, tag: &metrics::Tag) -> Response {
    if let Err(e) = state.config.limits.check_head(&req) {
        return e.into_response();
    }
    let base_path = state.config.base_path.as_str();
    let path = req.uri().path();
    let gsearch = path == GSEARCH_PATH;
    let fedora3 = state
        .config
        .fedora3_facade
        .load(std::sync::atomic::Ordering::Relaxed)
        && fedora3::claims(path);
    let outside = gsearch || fedora3;
    let Some(rest) = path.strip_prefix(base_path).or(outside.then_some("")) else {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no resource at {path}; the Fedora API is under {base_path}/"),
        )
        .into_response();
    };
    if !(rest.is_empty() || rest.starts_with('/')) {
        return ApiError::new(StatusCode::NOT_FOUND, format!("no resource at {path}"))
            .into_response();
    }
    let base_url = base_url(&state.config, req.headers());
    let op = match parse_operation(req.method(), rest) {
        Ok(_) if gsearch => Operation::GSearch,
        Ok(_) if fedora3 => {
            Operation::Fedora3(fedora3::parse(req.method(), path, req.uri().query()))
        }
        Ok(op) => op,
        Err(e) => return ApiError::from_kernel(e, &base_url).into_response(),
    };
    tag.set(&op);
    let caller = match state.access.identify(req.headers()).await {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    let url = |id: &FedoraId| crate::response::url_of(&base_url, id);
    let grant = match state.access.authorize(&state.repo, &caller, &op, url).await {
        Ok(g) => g,
        Err(e) => return e.into_response(),
    };
    let mut ctx = crate::context::Ctx {
        repo: (*state.repo).clone(),
        user: caller.recorded_user(&state.config.default_user),
        base_url,
        config: state.config.clone(),
        budget: state.budget.clone(),
        memento: None,
        access: state.access.clone(),
        caller: Arc::new(caller),
        grant,
        fedora3: state.fedora3.clone(),
    };
    let atomic = match transactions::atomic_id(&ctx, req.headers()) {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    let named_tx = match &op {
        Operation::TxStatus(id)
        | Operation::TxRefresh(id)
        | Operation::TxCommit(id)
        | Operation::TxRollback(id) => Some(id.as_str()),
        _ => atomic.as_deref(),
    };
    if let Some(tx) = named_tx {
        if let Err(e) = transactions::check_user(&ctx, tx).await {
            return e.into_response();
        }
    }
    // The request's work goes through a handle scoped to it: the software behind it, and
    // the transaction it joins.
    ctx.repo = ctx.repo.with_agent(software_agent(req.headers()));
    let result = match atomic {
        Some(tx) => match ctx.repo.in_transaction(&tx).await {
            Ok(scoped) => {
                let echo = transactions::url(&ctx, &tx);
                ctx.repo = scoped;
                run(ctx, op, req).await.map(|mut r| {
                    crate::response::set(
                        r.headers_mut(),
                        http::header::HeaderName::from_static(transactions::ATOMIC_ID),
                        &echo,
                    );
                    r
                })
            }
            Err(e) => Err(transactions::entry_error(&ctx.base_url, e)),
        },
        None => run(ctx, op, req).await,
    };
    result.unwrap_or_else(IntoResponse::into_response)
}

/// The software behind a request (its `User-Agent`, at most 256 bytes), as events report it.
fn software_agent(headers: &http::HeaderMap) -> Option<Arc<str>> {
    let agent = headers.get(http::header::USER_AGENT)?.to_str().ok()?.trim();
    if agent.is_empty() {
        return None;
    }
    let mut end = agent.len().min(256);
    while !agent.is_char_boundary(end) {
        end -= 1;
    }
    Some(Arc::from(&agent[..end]))
}

/// Carries out one operation.
///
/// Each handler's future is boxed: the largest (a write's) hold over 10 KiB of state, and
/// unboxed they would make every future around this one as large, copied several times
/// per request on its way into the connection's task.
async fn run(
    mut ctx: crate::context::Ctx,
    op: Operation,
    req: Request,
) -> Result<Response, ApiError> {
    match op {
        Operation::Read { id, head } => match versions::accept_datetime(req.headers()) {
            Ok(Some(datetime)) => Box::pin(versions::timegate(&ctx, id, datetime)).await,
            Ok(None) => Box::pin(handlers::read(&ctx, id, head, req)).await,
            Err(e) => Err(e),
        },
        Operation::TimeMap { id, head } => Box::pin(versions::timemap(&ctx, id, head, req)).await,
        Operation::TimeMapOptions(id) => Box::pin(versions::timemap_options(&ctx, id)).await,
        Operation::CreateVersion(id) => Box::pin(versions::create(&ctx, id, req.headers())).await,
        Operation::Memento { id, datetime, head } => {
            ctx.memento = Some(datetime);
            Box::pin(handlers::read(&ctx, id, head, req)).await
        }
        Operation::MementoOptions { id, datetime } => {
            ctx.memento = Some(datetime);
            Box::pin(handlers::options(&ctx, id)).await
        }
        Operation::BeginTx => Box::pin(transactions::begin(&ctx)).await,
        Operation::Events { head } => Box::pin(events::read(&ctx, head, req)).await,
        Operation::EventsOptions => Ok(events::options()),
        Operation::Search { head } => Box::pin(search::search(&ctx, head, req)).await,
        Operation::SearchOptions => Ok(search::options()),
        Operation::SearchStatus => Box::pin(search::status(&ctx, req)).await,
        Operation::SearchReindex => search::reindex(&ctx),
        Operation::GSearch => Box::pin(search::gsearch(&ctx, req)).await,
        Operation::AuditStatus => audit::status(&ctx),
        Operation::AuditRun => audit::run(&ctx),
        Operation::AuditReports => audit::reports(&ctx, req.uri().query()),
        Operation::AuditReport(id) => audit::report(&ctx, &id),
        Operation::ImportFedora3 => Box::pin(import::fedora3(&ctx, req)).await,
        Operation::Fedora3(r) => Box::pin(fedora3::handle(&ctx, r, req)).await,
        Operation::TxStatus(id) => Box::pin(transactions::status(&ctx, &id)).await,
        Operation::TxRefresh(id) => Box::pin(transactions::refresh(&ctx, &id)).await,
        Operation::TxCommit(id) => Box::pin(transactions::commit(&ctx, &id)).await,
        Operation::TxRollback(id) => Box::pin(transactions::rollback(&ctx, &id)).await,
        Operation::Options(id) => Box::pin(handlers::options(&ctx, id)).await,
        Operation::Create(id) => Box::pin(handlers::create(&ctx, id, req)).await,
        Operation::Put(id) => Box::pin(handlers::put(&ctx, id, req)).await,
        Operation::Patch(id) => Box::pin(handlers::patch(&ctx, id, req)).await,
        Operation::Delete(id) => Box::pin(handlers::delete(&ctx, id, req)).await,
        Operation::Purge(id) => Box::pin(handlers::purge(&ctx, id)).await,
        Operation::Tombstone => Err(ApiError::method_not_allowed("DELETE")),
        Operation::Acl(id, method) => Box::pin(acl::handle(&ctx, id, method, req)).await,
        Operation::Fixity(id) => Box::pin(fixity::get(&ctx, id, req)).await,
        Operation::MementoFixity { id, datetime } => {
            ctx.memento = Some(datetime);
            Box::pin(fixity::get(&ctx, id, req)).await
        }
        Operation::FixityOptions => Ok(fixity::options()),
        Operation::NotSupported(what) => Err(ApiError::constraint(
            arca_repository::Constraint::Unsupported,
            format!("{what} is not supported by arca yet"),
            &ctx.base_url,
        )),
        Operation::MethodNotAllowed(allow) => Err(ApiError::method_not_allowed(allow)),
    }
}
