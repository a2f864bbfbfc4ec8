//! Bounds on what one request may make the server hold: body sizes per kind of body, the
//! memory all buffered bodies may take together, the URL length, and the parser bounds
//! passed on to the RDF layer.

use std::sync::Arc;
use std::time::Duration;

use arca_rdf::ParseLimits;
use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http::{HeaderMap, StatusCode};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

/// Request bounds of the HTTP layer.
#[derive(Debug, Clone)]
pub struct RequestLimits {
    /// Bounds on parsing RDF bodies and SPARQL updates.
    pub rdf: ParseLimits,
    /// Largest RDF body (Turtle, N-Triples, JSON-LD, RDF/XML), in bytes (413 beyond).
    pub max_rdf_body: usize,
    /// Largest SPARQL Update body, in bytes (413 beyond).
    pub max_sparql_body: usize,
    /// Memory all RDF and SPARQL bodies being read or parsed may take together, in bytes;
    /// a request that cannot get its share within [`BUDGET_WAIT`] gets 503. Binary bodies
    /// count while they are received in memory (up to 1 MiB each) and go to disk at once
    /// when the budget has no room.
    pub buffered_bodies: usize,
    /// Longest request target (path and query), in bytes (414 beyond).
    pub max_url: usize,
    /// Most bytes of header names and values in one request (431 beyond). The connection
    /// layer refuses heads four times as large without reading them.
    pub max_header_bytes: usize,
    /// Longest pause while a request body is being received before the request fails
    /// with 408.
    pub body_idle_timeout: Duration,
}

impl Default for RequestLimits {
    fn default() -> Self {
        Self {
            rdf: ParseLimits::default(),
            max_rdf_body: 16 << 20,
            max_sparql_body: 1 << 20,
            buffered_bodies: 256 << 20,
            max_url: 8 << 10,
            max_header_bytes: 16 << 10,
            body_idle_timeout: Duration::from_secs(60),
        }
    }
}

impl RequestLimits {
    /// `body`, failing once the client pauses longer than the body idle timeout. Applied
    /// where a handler reads a body, so that requests without one pay nothing.
    pub(crate) fn timed(&self, body: Body) -> Body {
        Body::new(tower_http::timeout::TimeoutBody::new(
            self.body_idle_timeout,
            body,
        ))
    }

    /// Checks the request target (414) and the headers (431) against their bounds.
    pub(crate) fn check_head(&self, req: &http::Request<Body>) -> Result<(), ApiError> {
        let target = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
        let headers: usize = req
            .headers()
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len())
            .sum();
        for (status, what, size, max) in [
            (
                StatusCode::URI_TOO_LONG,
                "the request target",
                target,
                self.max_url,
            ),
            (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "the request's headers",
                headers,
                self.max_header_bytes,
            ),
        ] {
            if size > max {
                return Err(ApiError::new(
                    status,
                    format!("{what} takes {size} bytes; this server accepts at most {max}"),
                ));
            }
        }
        Ok(())
    }
}

/// How long a request waits for its share of the buffered-body budget before it is
/// refused with 503.
pub const BUDGET_WAIT: Duration = Duration::from_secs(10);

/// The memory budget shared by all buffered request bodies, counted in KiB.
#[derive(Clone)]
pub(crate) struct BodyBudget {
    kib: Arc<Semaphore>,
}

impl BodyBudget {
    pub(crate) fn new(bytes: usize) -> Self {
        Self {
            kib: Arc::new(Semaphore::new(bytes.div_ceil(1024).max(1))),
        }
    }

    /// Grows `share` to cover `bytes`, waiting at most `wait` for room; `false` if the
    /// budget had none by then.
    pub(crate) async fn cover(&self, share: &mut Share, bytes: usize, wait: Duration) -> bool {
        if self.try_cover(share, bytes) {
            return true;
        }
        let need = bytes.div_ceil(1024);
        let Ok(more) = u32::try_from(need - share.kib) else {
            return false;
        };
        match tokio::time::timeout(wait, self.kib.clone().acquire_many_owned(more)).await {
            Ok(Ok(permit)) => {
                share.grow(permit, need);
                true
            }
            _ => false,
        }
    }

    /// Grows `share` to cover `bytes` if the budget has room now; `false` if not.
    fn try_cover(&self, share: &mut Share, bytes: usize) -> bool {
        let need = bytes.div_ceil(1024);
        if need <= share.kib {
            return true;
        }
        let Ok(more) = u32::try_from(need - share.kib) else {
            return false;
        };
        let Ok(permit) = self.kib.clone().try_acquire_many_owned(more) else {
            return false;
        };
        share.grow(permit, need);
        true
    }

    /// The memory gate of a body the repository receives
    /// ([`Repository::receive_binary`](arca_repository::Repository::receive_binary)): one
    /// share of this budget that grows with the body while it stays in memory, given back
    /// when the body goes to a file or is dropped; `false` when the budget has no room now.
    pub(crate) fn memory_gate(&self) -> impl FnMut(usize) -> bool + Send {
        let budget = self.clone();
        let mut share = Share::default();
        move |bytes| budget.try_cover(&mut share, bytes)
    }
}

/// Memory taken from a [`BodyBudget`], given back when dropped.
#[derive(Default)]
pub(crate) struct Share {
    permit: Option<OwnedSemaphorePermit>,
    kib: usize,
}

impl Share {
    /// Adds `permit` to the share, which then covers `kib`.
    fn grow(&mut self, permit: OwnedSemaphorePermit, kib: usize) {
        match &mut self.permit {
            Some(p) => p.merge(permit),
            None => self.permit = Some(permit),
        }
        self.kib = kib;
    }
}

/// A body read into memory; its share of the budget is returned when it is dropped.
pub(crate) struct BufferedBody {
    /// The bytes.
    pub bytes: Bytes,
    share: Share,
}

impl BufferedBody {
    /// The bytes as text, and the share to keep while the text is in use; `what` names the
    /// body in the message when it is not UTF-8.
    pub(crate) fn into_text(self, what: &str) -> Result<(String, Share), ApiError> {
        let text = String::from_utf8(self.bytes.into())
            .map_err(|_| ApiError::bad_request(format!("the {what} is not valid UTF-8")))?;
        Ok((text, self.share))
    }
}

/// Reads a whole body of at most `max` bytes (`what` names the kind of body and the
/// setting in messages), taking its memory from `budget` as it arrives.
pub(crate) async fn read_body(
    headers: &HeaderMap,
    body: Body,
    max: usize,
    what: &str,
    budget: &BodyBudget,
) -> Result<BufferedBody, ApiError> {
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the {what} is larger than this server accepts (at most {max} bytes)"),
        )
    };
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    use futures_util::StreamExt;
    let mut stream = body.into_data_stream();
    let mut buf = BytesMut::with_capacity(declared.unwrap_or(0).min(1 << 20) as usize);
    let mut share = Share::default();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(body_error)?;
        if buf.len() + chunk.len() > max {
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
        if !budget.cover(&mut share, buf.len(), BUDGET_WAIT).await {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is holding too many request bodies in memory; retry later",
            ));
        }
    }
    Ok(BufferedBody {
        bytes: buf.freeze(),
        share,
    })
}

/// The answer to a body that could not be read: 408 when the client paused longer than the
/// idle timeout, 400 otherwise.
pub(crate) fn body_error(e: axum::Error) -> ApiError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(s) = source {
        if s.is::<tower_http::timeout::TimeoutError>() {
            return ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "the request body stopped arriving; the connection waited longer than the body idle timeout",
            );
        }
        source = s.source();
    }
    ApiError::bad_request(format!("reading the request body failed: {e}"))
}
