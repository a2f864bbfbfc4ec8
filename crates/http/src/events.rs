//! The replayable event log (`/rest/fcr:events`), for consumers without a broker: the
//! change log as Fedora-shaped events, after a sequence number, as JSON-LD pages or as a
//! live Server-Sent Events stream that resumes from `Last-Event-ID`. A caller sees the
//! events of the resources it may read (admins all).

use std::sync::Arc;
use std::time::Duration;

use arca_catalog::ChangeEntry;
use arca_events::event::{self, EventNames, DEFAULT_USER_BASE_URI};
use axum::body::Body;
use axum::extract::Request;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use http::{header, HeaderMap, HeaderValue, StatusCode};
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::error::ApiError;

/// Methods on `fcr:events`.
pub(crate) const ALLOW: &str = "GET, HEAD, OPTIONS";

/// Events per page when the request names no `limit`, and the most it may name.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1_000;

/// Events a stream keeps for a client that does not read; when they are not taken within
/// [`STALL_LIMIT`], the stream is cut off (the client resumes with `Last-Event-ID`).
const STREAM_BUFFER: usize = 256;
const STALL_LIMIT: Duration = Duration::from_secs(10);

/// A comment line (`: keep-alive`) is sent on a stream idle this long, so that dead clients
/// are noticed.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long a client waits before reconnecting (the stream's first frame, `retry: 1000`).
const RETRY: Duration = Duration::from_secs(1);

/// Where a read of the log starts and how much it takes.
struct Window {
    since: i64,
    limit: usize,
}

/// Parses `since` and `limit` from the query: `since` a sequence number ≥ 0 (0: from the
/// start of the log) no later than the last change; `limit` 1..=1000.
fn window(query: Option<&str>, last: i64) -> Result<Window, ApiError> {
    let mut w = Window {
        since: 0,
        limit: DEFAULT_LIMIT,
    };
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        match name {
            "since" => w.since = sequence_number(value)?,
            "limit" => {
                w.limit = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| {
                        ApiError::bad_request(format!(
                            "limit must be a whole number from 1 to {MAX_LIMIT}, not {value:?}"
                        ))
                    })?
            }
            _ => {}
        }
    }
    if w.since > last {
        return Err(ApiError::bad_request(format!(
            "since={} is beyond the end of the event log (the last event is {last})",
            w.since
        )));
    }
    Ok(w)
}

/// A sequence number from a query or `Last-Event-ID`: a whole number ≥ 0.
fn sequence_number(value: &str) -> Result<i64, ApiError> {
    value
        .parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| {
            ApiError::bad_request(format!(
            "since must be an event's sequence number (a whole number, 0 or more), not {value:?}"
        ))
        })
}

fn names(ctx: &Ctx) -> EventNames {
    EventNames {
        base_url: ctx.base_url.clone(),
        user_base_uri: DEFAULT_USER_BASE_URI.to_string(),
    }
}

/// The events of `entries` the caller may read, each with its `seq`.
async fn visible(ctx: &Ctx, names: &EventNames, entries: Vec<ChangeEntry>) -> Vec<(i64, Value)> {
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        if !ctx
            .access
            .can_read(&ctx.repo, &ctx.caller, &entry.change.id)
            .await
        {
            continue;
        }
        let mut body = event::Event::new(&entry, names).body();
        body["seq"] = json!(entry.seq);
        out.push((entry.seq, body));
    }
    out
}

/// `GET`/`HEAD /rest/fcr:events`: a page of events (JSON-LD), or a live stream when the
/// client accepts `text/event-stream`.
pub(crate) async fn read(ctx: &Ctx, head: bool, req: Request) -> Result<Response, ApiError> {
    let catalog = ctx.repo.catalog().clone();
    let last = *catalog.last_change().borrow();
    let kernel = |e: arca_catalog::Error| {
        ApiError::from_kernel(arca_repository::Error::from(e), &ctx.base_url)
    };
    if wants_stream(req.headers()) {
        let since = match req.headers().get("last-event-id") {
            Some(v) => sequence_number(v.to_str().unwrap_or("-"))?,
            None => match req.uri().query() {
                Some(q) if q.contains("since=") => window(Some(q), last)?.since,
                _ => last,
            },
        };
        if head {
            return Ok(stream_headers(Response::new(Body::empty())));
        }
        return Ok(stream(ctx, since));
    }
    let w = window(req.uri().query(), last)?;
    let first = catalog.first_change().await.map_err(kernel)?;
    if first > 0 && w.since + 1 < first {
        return Err(ApiError::new(
            StatusCode::GONE,
            format!(
                "the events after {} are no longer kept; the log starts at {first} (since={})",
                w.since,
                first - 1
            ),
        ));
    }
    let entries = catalog
        .changes_since(w.since, w.limit)
        .await
        .map_err(kernel)?;
    let next_since = entries.last().map_or(w.since, |e| e.seq);
    let events = visible(ctx, &names(ctx), entries).await;
    let next = format!(
        "{}/fcr:events?since={next_since}&limit={}",
        ctx.base_url, w.limit
    );
    let mut page = json!({
        "@context": "https://www.w3.org/ns/activitystreams",
        "id": format!("{}/fcr:events?since={}&limit={}", ctx.base_url, w.since, w.limit),
        "type": "OrderedCollectionPage",
        "last": last,
        "next": next,
        "orderedItems": events.into_iter().map(|(_, e)| e).collect::<Vec<_>>(),
    });
    if ctx.caller.is_admin() {
        page["destinations"] = destinations(ctx, last);
    }
    let body = serde_json::to_vec_pretty(&page)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let mut response = if head {
        Response::new(Body::empty())
    } else {
        Response::new(Body::from(body))
    };
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/ld+json"),
    );
    if let Ok(link) = HeaderValue::from_str(&format!("<{next}>; rel=\"next\"")) {
        h.insert(header::LINK, link);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// How far delivery to each broker has got (for operators): the last event it
/// delivered, how many committed events it is behind, for how long, and why it fails.
fn destinations(ctx: &Ctx, last: i64) -> Value {
    ctx.config
        .deliveries
        .iter()
        .map(|d| {
            let delivered = d.delivered();
            json!({
                "name": d.name,
                "delivered": delivered,
                "behind": (last - delivered).max(0),
                "waitingSeconds": d.waiting_for().as_secs_f64(),
                "connected": d.connected(),
                "leading": d.leading(),
                "error": d.last_error(),
            })
        })
        .collect()
}

/// `OPTIONS /rest/fcr:events`.
pub(crate) fn options() -> Response {
    let mut r = StatusCode::OK.into_response();
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(ALLOW));
    r
}

fn wants_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream"))
}

/// A stream's headers (also on `HEAD`): `text/event-stream`, never stored.
fn stream_headers(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// A live stream of the events after `since`: a task reads the log and follows new changes
/// into a bounded buffer, which the response body (axum's [`Sse`], which also sends the
/// keep-alive comments) drains. A client that leaves the buffer full for [`STALL_LIMIT`] is
/// cut off.
fn stream(ctx: &Ctx, since: i64) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Event>(STREAM_BUFFER);
    let ctx = ctx.clone();
    tokio::spawn(follow(Arc::new(ctx), since, tx));
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|event| (Ok::<_, std::convert::Infallible>(event), rx))
    });
    let sse = Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"));
    stream_headers(sse.into_response())
}

/// Feeds a stream: pages of the log after `position`, then new changes as they commit.
async fn follow(ctx: Arc<Ctx>, mut position: i64, tx: tokio::sync::mpsc::Sender<Event>) {
    let catalog = ctx.repo.catalog().clone();
    let mut last_change = catalog.last_change();
    let names = names(&ctx);
    // Tells the client to reconnect after 1 s, and that the stream is open.
    if tx.send(Event::default().retry(RETRY)).await.is_err() {
        return;
    }
    loop {
        let entries = match catalog.changes_since(position, MAX_LIMIT).await {
            Ok(entries) => entries,
            Err(e) => {
                tracing::warn!(error = %e, "the event stream could not read the change log");
                return;
            }
        };
        if entries.is_empty() {
            last_change.borrow_and_update();
            tokio::select! {
                changed = last_change.changed() => if changed.is_err() { return },
                _ = tx.closed() => return,
            }
            continue;
        }
        position = entries.last().map_or(position, |e| e.seq);
        for (seq, body) in visible(&ctx, &names, entries).await {
            // A fixity check's event type is PREMIS's (its AS2 type is a bare Activity).
            let kind = if body.get("premis:eventType").is_some() {
                "Fixity".to_string()
            } else {
                body["type"][0].as_str().unwrap_or("Update").to_string()
            };
            let event = Event::default()
                .id(seq.to_string())
                .event(kind)
                .data(body.to_string());
            if !deliver(&tx, event).await {
                return;
            }
        }
    }
}

/// Hands an event to the response body; false when the client is gone or has not taken
/// anything for [`STALL_LIMIT`] with the buffer full (it is cut off).
async fn deliver(tx: &tokio::sync::mpsc::Sender<Event>, event: Event) -> bool {
    match tx.send_timeout(event, STALL_LIMIT).await {
        Ok(()) => true,
        Err(tokio::sync::mpsc::error::SendTimeoutError::Timeout(_)) => {
            tracing::info!(
                buffered = STREAM_BUFFER,
                "an event stream client did not read for {STALL_LIMIT:?}; it was cut off and may resume with Last-Event-ID"
            );
            false
        }
        Err(tokio::sync::mpsc::error::SendTimeoutError::Closed(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_and_limit_are_checked() {
        let w = window(Some("since=3&limit=10"), 5).unwrap();
        assert_eq!((w.since, w.limit), (3, 10));
        let w = window(None, 0).unwrap();
        assert_eq!((w.since, w.limit), (0, DEFAULT_LIMIT));
        for bad in [
            "since=-1",
            "since=abc",
            "since=",
            "since=6",
            "limit=0",
            "limit=1001",
            "limit=x",
            "since=99999999999999999999",
        ] {
            let e = window(Some(bad), 5)
                .err()
                .unwrap_or_else(|| panic!("{bad} accepted"));
            assert_eq!(e.status, StatusCode::BAD_REQUEST, "{bad}");
        }
    }
}
