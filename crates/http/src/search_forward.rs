//! Search on a node without an index of its own (`search.enabled = false`): `fcr:search`,
//! `fcr:search/status` and `/fedoragsearch/rest` are forwarded to the nodes that index
//! (`search.forward_to`), so that a cluster indexes each change on as many nodes as its
//! operator chooses.
//!
//! - **Failover.** The nodes are tried in order. One that refuses the connection, does not
//!   connect within [`CONNECT_TIMEOUT`], does not answer within [`ANSWER_TIMEOUT`] or
//!   answers 5xx is skipped for [`DOWN_FOR`] and the next one tried; when none answers, the
//!   caller gets 503 with `Retry-After` (until the first skipped node is tried again) and a
//!   message naming each node and why it was not used.
//! - **Identity.** The caller's `Authorization` (and `On-Behalf-Of`) go along as they came:
//!   the indexing node identifies the caller itself and filters the hits by the same WebAC
//!   rules, so the answer is the one the caller would get from that node directly. Every
//!   node of a cluster has the same `[auth]` settings (they serve one repository); no
//!   node-to-node secret exists that could widen anyone's access.
//! - **Links.** `fedora_id` values (full URLs, as in Fedora 7's answers) that start with the
//!   indexing node's REST root are rewritten to this node's, so results name the URL the
//!   caller used. Everything else — paging, `fields=`, the content type, status codes and
//!   error bodies below 500 — passes through unchanged. A browser asking for HTML gets the
//!   search page rendered here from the JSON answer.
//! - A forwarded request carries `Via: 1.1 arca-search-forward`; a node without an index
//!   that receives one answers 502 instead of forwarding it again (a loop in the settings).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arca_observe::health::PeerAnswers;
use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use http_body_util::{BodyExt, Empty, Limited};
use parking_lot::Mutex;
use serde_json::Value;

use crate::context::Ctx;
use crate::error::ApiError;
use crate::external::ExternalClient;

/// How long a node that failed is skipped.
pub const DOWN_FOR: Duration = Duration::from_secs(5);
/// Longest wait for a connection to a search node (TCP and TLS handshake).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest wait for a search node's whole answer.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for a node's answer to a readiness probe (under the readiness check's 2 s).
const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);
/// Largest answer accepted from a search node.
const MAX_ANSWER_BYTES: usize = 64 << 20;
/// What a forwarded request's `Via` holds.
const VIA: &str = "1.1 arca-search-forward";
/// The request headers that go along: who asks, and what answer they want.
const FORWARDED_HEADERS: [HeaderName; 5] = [
    header::AUTHORIZATION,
    header::ACCEPT,
    header::ACCEPT_LANGUAGE,
    header::USER_AGENT,
    HeaderName::from_static("on-behalf-of"),
];
/// The answer headers that come back.
const ANSWER_HEADERS: [HeaderName; 6] = [
    header::CONTENT_TYPE,
    header::WWW_AUTHENTICATE,
    header::LINK,
    header::ALLOW,
    header::RETRY_AFTER,
    header::VARY,
];

/// The nodes that index, in the order they are tried, and which of them failed lately.
pub struct SearchForwarder {
    client: ExternalClient,
    targets: Vec<Target>,
}

impl std::fmt::Debug for SearchForwarder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.targets.iter().map(|t| &t.base))
            .finish()
    }
}

/// One node that indexes.
struct Target {
    /// Its REST root, without a trailing slash (`http://index-1:8080/rest`).
    base: String,
    /// Its scheme and authority (`http://index-1:8080`), where `/fedoragsearch/rest` is.
    origin: String,
    /// Until when it is skipped, and why.
    down: Mutex<Option<(Instant, String)>>,
}

impl Target {
    fn skipped_until(&self, now: Instant) -> Option<(Instant, String)> {
        self.down.lock().clone().filter(|(until, _)| *until > now)
    }

    fn failed(&self, why: &str) {
        let was_down = self
            .down
            .lock()
            .replace((Instant::now() + DOWN_FOR, why.to_string()))
            .is_some();
        if !was_down {
            tracing::warn!(node = %self.base, %why, "search node skipped for {} s at a time until it answers", DOWN_FOR.as_secs());
        }
    }

    fn answered(&self) {
        if self.down.lock().take().is_some() {
            tracing::info!(node = %self.base, "search node answers again");
        }
    }
}

/// An answer from a search node, read whole.
struct Answer {
    /// The node's REST root.
    base: String,
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl SearchForwarder {
    /// A forwarder to `targets` (REST root URLs, checked by the settings), trusting the
    /// system's roots and the certificates in `extra_ca` for `https:` nodes.
    pub fn new(targets: &[String], extra_ca: Option<&std::path::Path>) -> Result<Self, String> {
        let targets = targets
            .iter()
            .map(|t| {
                let base = t.trim_end_matches('/').to_string();
                let scheme_end = base.find("://").map_or(0, |i| i + 3);
                let origin_end = base[scheme_end..]
                    .find('/')
                    .map_or(base.len(), |i| scheme_end + i);
                Target {
                    origin: base[..origin_end].to_string(),
                    base,
                    down: Mutex::new(None),
                }
            })
            .collect();
        Ok(Self {
            client: ExternalClient::with_connect_timeout(extra_ca, CONNECT_TIMEOUT)?,
            targets,
        })
    }

    /// The REST roots of the nodes, in order.
    pub fn targets(&self) -> Vec<String> {
        self.targets.iter().map(|t| t.base.clone()).collect()
    }

    /// Sends `method` to the URL `url` makes of each node in turn, until one answers below
    /// 500; 503 when none does.
    async fn send(
        &self,
        method: Method,
        url: impl Fn(&Target) -> String,
        headers: &HeaderMap,
    ) -> Result<Answer, ApiError> {
        if headers
            .get_all(header::VIA)
            .iter()
            .any(|v| v.to_str().is_ok_and(|v| v.contains("arca-search-forward")))
        {
            return Err(ApiError::new(
                StatusCode::BAD_GATEWAY,
                "this node has no search index either (search.enabled = false): search.forward_to must name nodes that index",
            ));
        }
        let mut failures = Vec::new();
        for target in &self.targets {
            if let Some((until, why)) = target.skipped_until(Instant::now()) {
                let left = until.saturating_duration_since(Instant::now()).as_secs() + 1;
                failures.push(format!(
                    "{} (skipped for {left} s more: {why})",
                    target.base
                ));
                continue;
            }
            match self.try_one(target, &method, &url(target), headers).await {
                Ok(answer) if answer.status.is_server_error() => {
                    let why = format!(
                        "answered {}: {}",
                        answer.status,
                        arca_model::excerpt(String::from_utf8_lossy(&answer.body).trim(), 200)
                    );
                    target.failed(&why);
                    failures.push(format!("{} ({why})", target.base));
                }
                Ok(answer) => {
                    target.answered();
                    return Ok(answer);
                }
                Err(why) => {
                    target.failed(&why);
                    failures.push(format!("{} ({why})", target.base));
                }
            }
        }
        Err(self.none_answers(&failures))
    }

    /// 503 naming every node and why it was not used ([`unavailable`] adds the
    /// `Retry-After` of [`retry_after`](Self::retry_after)).
    fn none_answers(&self, failures: &[String]) -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "this node has no search index (search.enabled = false) and none of the nodes it forwards searches to answers (search.forward_to): {}",
                failures.join("; ")
            ),
        )
    }

    /// When the first skipped node is tried again, in whole seconds (at least 1).
    fn retry_after(&self) -> u64 {
        let now = Instant::now();
        self.targets
            .iter()
            .filter_map(|t| t.skipped_until(now))
            .map(|(until, _)| until.saturating_duration_since(now))
            .min()
            .map_or(1, |d| d.as_secs() + u64::from(d.subsec_nanos() > 0))
            .max(1)
    }

    /// One request to one node: its answer read whole, or why there is none.
    async fn try_one(
        &self,
        target: &Target,
        method: &Method,
        url: &str,
        headers: &HeaderMap,
    ) -> Result<Answer, String> {
        let mut req = http::Request::builder().method(method.clone()).uri(url);
        for name in &FORWARDED_HEADERS {
            for value in headers.get_all(name) {
                req = req.header(name, value);
            }
        }
        let req = req
            .header(header::VIA, VIA)
            .body(Empty::new())
            .map_err(|e| format!("{url} is not a usable URL: {e}"))?;
        let exchange = async {
            let resp = self
                .client
                .send(req)
                .await
                .map_err(|e| crate::external::unreachable_message(url, &e))?;
            let (parts, body) = resp.into_parts();
            let body = Limited::new(body, MAX_ANSWER_BYTES)
                .collect()
                .await
                .map_err(|e| format!("{url}: the answer could not be read: {e}"))?
                .to_bytes();
            Ok::<_, String>(Answer {
                base: target.base.clone(),
                status: parts.status,
                headers: parts.headers,
                body,
            })
        };
        tokio::time::timeout(ANSWER_TIMEOUT, exchange)
            .await
            .map_err(|_| format!("no answer within {} s", ANSWER_TIMEOUT.as_secs()))?
    }

    /// Whether each node answers now (`OPTIONS fcr:search`, anything below 500); a node
    /// that does not is skipped by searches, one that does is tried again at once.
    async fn probe_all(&self) -> PeerAnswers {
        let probes = self.targets.iter().map(|t| async move {
            let url = format!("{}/fcr:search", t.base);
            let no_headers = HeaderMap::new();
            let probe = self.try_one(t, &Method::OPTIONS, &url, &no_headers);
            let answer = match tokio::time::timeout(PROBE_TIMEOUT, probe).await {
                Err(_) => Err(format!("no answer within {} ms", PROBE_TIMEOUT.as_millis())),
                Ok(Err(why)) => Err(why),
                Ok(Ok(a)) if a.status.is_server_error() => Err(format!("answered {}", a.status)),
                Ok(Ok(a)) => Ok(format!("answers ({})", a.status)),
            };
            match &answer {
                Ok(_) => t.answered(),
                Err(why) => t.failed(why),
            }
            (t.base.clone(), answer)
        });
        futures_util::future::join_all(probes).await
    }
}

impl arca_observe::health::Peers for SearchForwarder {
    fn names(&self) -> Vec<String> {
        self.targets()
    }

    fn probe(&self) -> Pin<Box<dyn Future<Output = PeerAnswers> + Send + '_>> {
        Box::pin(self.probe_all())
    }
}

/// The forwarder, or 501 when this node neither indexes nor forwards.
fn forwarder(ctx: &Ctx) -> Result<&Arc<SearchForwarder>, ApiError> {
    ctx.config.search_forward.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "search is switched off on this server (search.enabled = false, and no search.forward_to names nodes that index)",
        )
    })
}

/// `?query` of `req`, or nothing.
fn query_suffix(req: &Request) -> String {
    req.uri()
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default()
}

/// The 503 of [`SearchForwarder::send`] with its own `Retry-After`.
fn unavailable(forwarder: &SearchForwarder, e: ApiError) -> Response {
    let mut r = e.into_response();
    if r.status() == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut()
            .insert(header::RETRY_AFTER, forwarder.retry_after().into());
    }
    r
}

/// `GET`/`HEAD /rest/fcr:search`, answered by a node that indexes.
pub(crate) async fn search(ctx: &Ctx, head: bool, req: Request) -> Result<Response, ApiError> {
    let forwarder = forwarder(ctx)?;
    let html = crate::html::wanted(req.headers());
    let params = crate::search::params(&req)?;
    let query = crate::search::first(&params, "q").filter(|q| !q.trim().is_empty());
    if html && query.is_none() && !params.iter().any(|(n, _)| n == "condition") {
        // The search page before anything is asked: the query box alone.
        return crate::html::search::page(ctx, None, head);
    }
    let mut headers = req.headers().clone();
    if html {
        // The page is made here, from the JSON answer, with this node's links.
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    }
    let raw_query = req.uri().query().unwrap_or_default();
    // HEAD as GET: the length of the answer with this node's links.
    let answer = match forwarder
        .send(
            Method::GET,
            |t| {
                let q = conditions_for(raw_query, &ctx.base_url, &t.base);
                format!("{}/fcr:search?{q}", t.base)
            },
            &headers,
        )
        .await
    {
        Ok(a) => a,
        Err(e) => return Ok(unavailable(forwarder, e)),
    };
    let json = answer
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if !answer.status.is_success() || !json {
        return Ok(pass_through(answer, head));
    }
    let (body, value) = relink(answer.body, &answer.base, &ctx.base_url);
    if html {
        let value = match value {
            Some(v) => v,
            None => serde_json::from_slice(&body).map_err(|e| {
                ApiError::new(
                    StatusCode::BAD_GATEWAY,
                    format!(
                        "the search node {} answered JSON that is not: {e}",
                        answer.base
                    ),
                )
            })?,
        };
        let number = |name: &str| value["pagination"][name].as_u64().unwrap_or(0) as usize;
        let items = value["items"].as_array().cloned().unwrap_or_default();
        let results = crate::html::search::Results {
            query,
            offset: number("offset"),
            limit: number("maxResults"),
            total: value["pagination"]["totalResults"]
                .as_u64()
                .map_or(items.len(), |t| t as usize),
            items: &items,
        };
        return crate::html::search::page(ctx, Some(results), head);
    }
    Ok(pass_through(Answer { body, ..answer }, head))
}

/// `GET /rest/fcr:search/status` (admins), answered by the first node that answers.
pub(crate) async fn status(ctx: &Ctx, req: Request) -> Result<Response, ApiError> {
    let forwarder = forwarder(ctx)?;
    match forwarder
        .send(
            Method::GET,
            |t| format!("{}/fcr:search/status", t.base),
            req.headers(),
        )
        .await
    {
        Ok(answer) => Ok(pass_through(answer, false)),
        Err(e) => Ok(unavailable(forwarder, e)),
    }
}

/// `POST /rest/fcr:search/reindex` on a node without an index: 501, naming the nodes whose
/// index can be rebuilt (each one's own, so it is not forwarded to one of them at random).
pub(crate) fn reindex(ctx: &Ctx) -> Result<Response, ApiError> {
    let forwarder = forwarder(ctx)?;
    Err(ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        format!(
            "this node keeps no search index (search.enabled = false); rebuild the index of a node that has one: {}",
            forwarder
                .targets()
                .iter()
                .map(|t| format!("POST {t}/fcr:search/reindex"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

/// `/fedoragsearch/rest`, answered by the first node that answers (its `PID`s are paths,
/// which need no rewriting).
pub(crate) async fn gsearch(ctx: &Ctx, req: Request) -> Result<Response, ApiError> {
    let forwarder = forwarder(ctx)?;
    let suffix = query_suffix(&req);
    let head = req.method() == Method::HEAD;
    // HEAD as GET: the answer's length is that of its body.
    let method = match head {
        true => Method::GET,
        false => req.method().clone(),
    };
    match forwarder
        .send(
            method,
            |t| format!("{}{}{suffix}", t.origin, crate::GSEARCH_PATH),
            req.headers(),
        )
        .await
    {
        Ok(answer) => Ok(pass_through(answer, head)),
        Err(e) => Ok(unavailable(forwarder, e)),
    }
}

/// The query string `query` with this node's REST root (`from`) in `condition` values (a
/// `fedora_id` given as a URL, as Fedora 7's clients do) replaced by the search node's
/// (`to`), which resolves it; every other parameter as it came.
fn conditions_for(query: &str, from: &str, to: &str) -> String {
    query
        .split('&')
        .map(|pair| {
            let Some(("condition", value)) = pair.split_once('=') else {
                return pair.to_string();
            };
            let decoded = percent_encoding::percent_decode_str(&value.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned();
            if !decoded.contains(from) || from == to {
                return pair.to_string();
            }
            let moved = decoded.replace(from, to);
            let encoded: String = form_urlencoded::byte_serialize(moved.as_bytes()).collect();
            format!("condition={encoded}")
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// A search node's answer as this node's: its status, the headers in [`ANSWER_HEADERS`]
/// and its body (none for HEAD, with the length it has).
fn pass_through(answer: Answer, head: bool) -> Response {
    let mut r = if head {
        let mut r = Response::new(Body::empty());
        r.headers_mut()
            .insert(header::CONTENT_LENGTH, answer.body.len().into());
        r
    } else {
        Response::new(Body::from(answer.body))
    };
    *r.status_mut() = answer.status;
    for name in &ANSWER_HEADERS {
        for value in answer.headers.get_all(name) {
            r.headers_mut().append(name, value.clone());
        }
    }
    r
}

/// The search answer `body` with each item's `fedora_id` under `from` (a REST root) moved
/// under `to`, and the parsed answer when it had to be parsed; `body` itself when nothing
/// changes.
fn relink(body: Bytes, from: &str, to: &str) -> (Bytes, Option<Value>) {
    if from == to {
        return (body, None);
    }
    let Ok(mut value) = serde_json::from_slice::<Value>(&body) else {
        return (body, None);
    };
    let mut changed = false;
    for item in value["items"].as_array_mut().into_iter().flatten() {
        let Some(Value::String(id)) = item.get_mut("fedora_id") else {
            continue;
        };
        if let Some(rest) = id
            .strip_prefix(from)
            .filter(|r| r.is_empty() || r.starts_with('/'))
        {
            *id = format!("{to}{rest}");
            changed = true;
        }
    }
    if !changed {
        return (body, Some(value));
    }
    let bytes = serde_json::to_vec_pretty(&value).expect("JSON serializes");
    (bytes.into(), Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_move_to_the_forwarding_node() {
        let body = serde_json::json!({
            "pagination": {"totalResults": 2, "offset": 0, "maxResults": 10},
            "items": [
                {"fedora_id": "http://a:1/rest/x/y", "created": "2024-01-01T00:00:00Z"},
                {"fedora_id": "http://a:1/rest", "created": null},
                {"fedora_id": "http://a:1/restless", "created": null},
                {"created": null},
            ]
        });
        let bytes = Bytes::from(serde_json::to_vec_pretty(&body).unwrap());
        let (out, _) = relink(bytes.clone(), "http://a:1/rest", "http://b:2/rest");
        let out: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(out["items"][0]["fedora_id"], "http://b:2/rest/x/y");
        assert_eq!(out["items"][1]["fedora_id"], "http://b:2/rest");
        assert_eq!(out["items"][2]["fedora_id"], "http://a:1/restless");
        assert_eq!(out["pagination"], body["pagination"]);
        // The same root: the bytes as they came.
        let (same, _) = relink(bytes.clone(), "http://a:1/rest", "http://a:1/rest");
        assert_eq!(same, bytes);
    }

    #[test]
    fn conditions_name_the_search_nodes_urls() {
        let q = "condition=fedora_id%3Dhttp%3A%2F%2Fb%3A2%2Frest%2Fx%2F*&fields=fedora_id,created&condition=modified%3E2020-01-01";
        assert_eq!(
            conditions_for(q, "http://b:2/rest", "http://a:1/rest"),
            "condition=fedora_id%3Dhttp%3A%2F%2Fa%3A1%2Frest%2Fx%2F*&fields=fedora_id,created&condition=modified%3E2020-01-01"
        );
        assert_eq!(conditions_for(q, "http://a:1/rest", "http://a:1/rest"), q);
        assert_eq!(conditions_for("", "http://b:2/rest", "http://a:1/rest"), "");
    }

    #[test]
    fn the_origin_is_the_rest_roots_scheme_and_host() {
        let f = SearchForwarder::new(
            &[
                "http://a:1/rest".into(),
                "https://b.example/repo/rest/".into(),
            ],
            None,
        )
        .unwrap();
        assert_eq!(f.targets[0].origin, "http://a:1");
        assert_eq!(f.targets[1].origin, "https://b.example");
        assert_eq!(f.targets[1].base, "https://b.example/repo/rest");
    }

    #[test]
    fn retry_after_counts_to_the_first_node_tried_again() {
        let f = SearchForwarder::new(&["http://a:1/rest".into(), "http://b:1/rest".into()], None)
            .unwrap();
        assert_eq!(f.retry_after(), 1, "no node skipped");
        f.targets[0].failed("refused");
        assert_eq!(f.retry_after(), DOWN_FOR.as_secs());
        f.targets[0].answered();
        assert_eq!(f.retry_after(), 1);
    }
}
