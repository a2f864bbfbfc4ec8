//! Reading what is left of a refused request's body before answering, so that a client
//! still sending it reads the answer instead of a reset connection.
//!
//! A handler that refuses a request early (a precondition, authorization, a digest that
//! cannot match) drops the body unread. Closing a socket with unread bytes makes the kernel
//! reset the connection, and a client still sending loses the answer (a Java client reports
//! "status -1"). So the body a handler drops unfinished comes back here and is read and
//! discarded, bounded by the request limits; what is not drained within them is answered
//! with `Connection: close` as before.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::HeaderValue;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::sync::oneshot;

/// A request body that hands itself back through `unread` when dropped before its end.
struct ReturnedWhenDropped {
    inner: Option<Body>,
    unread: Option<oneshot::Sender<Body>>,
}

impl HttpBody for ReturnedWhenDropped {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        match self.inner.as_mut() {
            Some(inner) => Pin::new(inner).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), HttpBody::size_hint)
    }
}

impl Drop for ReturnedWhenDropped {
    fn drop(&mut self) {
        if let (Some(inner), Some(unread)) = (self.inner.take(), self.unread.take()) {
            if !inner.is_end_stream() {
                let _ = unread.send(inner);
            }
        }
    }
}

/// How much of a refused body is read and discarded at most.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DrainLimits {
    /// Most bytes read.
    pub bytes: usize,
    /// Longest pause between two pieces of the body.
    pub idle: Duration,
}

/// Runs `handle` on a request whose body, if the handler drops it unfinished, is drained
/// within `limits` before the answer goes out.
pub(crate) async fn draining_refused_body<F>(
    req: http::Request<Body>,
    limits: DrainLimits,
    handle: impl FnOnce(http::Request<Body>) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let (parts, body) = req.into_parts();
    // A client that asked `Expect: 100-continue` sends no body until hyper reads it; reading
    // it here would only invite one the answer does not need.
    let awaits_continue = parts
        .headers
        .get(http::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if awaits_continue || HttpBody::is_end_stream(&body) {
        return handle(http::Request::from_parts(parts, body)).await;
    }
    let (tx, mut rx) = oneshot::channel();
    let body = Body::new(ReturnedWhenDropped {
        inner: Some(body),
        unread: Some(tx),
    });
    let mut response = handle(http::Request::from_parts(parts, body)).await;
    let drained = match rx.try_recv() {
        Ok(rest) => drain(rest, limits).await,
        Err(_) => true,
    };
    if !drained {
        response
            .headers_mut()
            .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Reads and discards `body` within `limits`; `true` if it was read to its end.
async fn drain(body: Body, limits: DrainLimits) -> bool {
    use futures_util::StreamExt;
    let mut stream = body.into_data_stream();
    let mut read = 0usize;
    loop {
        match tokio::time::timeout(limits.idle, stream.next()).await {
            Ok(None) => return true,
            Ok(Some(Ok(chunk))) => {
                read += chunk.len();
                if read > limits.bytes {
                    return false;
                }
            }
            Ok(Some(Err(_))) | Err(_) => return false,
        }
    }
}
