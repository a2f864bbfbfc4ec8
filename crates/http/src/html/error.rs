//! Error answers as pages: a browser asking for a missing (404), deleted (410), forbidden
//! (403) or protected (401) resource gets a readable page with the same status and headers
//! (`WWW-Authenticate` included, so the browser asks for a login).

use axum::body::Body;
use axum::response::Response;
use http::{header, HeaderMap, StatusCode};
use http_body_util::BodyExt;
use serde::Serialize;

use super::Frame;
use crate::AppState;

/// Longest error message read back into a page.
const MAX_MESSAGE: usize = 64 << 10;

#[derive(Serialize)]
struct Page {
    page: Frame,
    title: String,
    status: u16,
    reason: &'static str,
    message: String,
    login: bool,
    explanation: &'static str,
}

/// `out` as a page when it is a plain-text error answer to a browser's GET with `headers`
/// (`base_url`: the REST root); any other answer is returned as it is.
pub(crate) async fn decorate(
    out: Response,
    state: &AppState,
    base_url: &str,
    headers: &HeaderMap,
) -> Response {
    let status = out.status();
    let plain = out
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/plain"));
    if !(status.is_client_error() || status.is_server_error()) || !plain {
        return out;
    }
    // Who is signed in, for the page's frame (no one when the credentials failed).
    let caller = state.access.identify(headers).await.ok();
    let user = caller.as_ref().and_then(|c| c.name());
    let (mut parts, body) = out.into_parts();
    let message = match http_body_util::Limited::new(body, MAX_MESSAGE)
        .collect()
        .await
    {
        Ok(b) => String::from_utf8_lossy(&b.to_bytes()).trim().to_string(),
        Err(_) => String::new(),
    };
    let page = Page {
        page: Frame::new(base_url, user, false),
        title: format!("{} {}", status.as_u16(), reason(status)),
        status: status.as_u16(),
        reason: reason(status),
        message,
        login: status == StatusCode::UNAUTHORIZED,
        explanation: explanation(status),
    };
    match super::render(status, "error.html", &page, false) {
        Ok(r) => {
            let (rendered, body) = r.into_parts();
            for name in [header::CONTENT_TYPE, header::CONTENT_LENGTH, header::VARY] {
                if let Some(v) = rendered.headers.get(&name) {
                    parts.headers.insert(name, v.clone());
                }
            }
            Response::from_parts(parts, body)
        }
        Err(_) => Response::from_parts(parts, Body::empty()),
    }
}

fn reason(status: StatusCode) -> &'static str {
    status.canonical_reason().unwrap_or("Error")
}

fn explanation(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "This resource needs you to sign in. Your browser asks for a user name and password; reload the page to be asked again.",
        403 => "You are signed in, but the access control list in effect does not let you do this.",
        404 => "There is no resource at this address.",
        410 => "The resource that was here has been deleted; its tombstone remains.",
        406 | 415 => "The server cannot answer in the form asked for.",
        409 | 412 => "The request conflicts with the resource's current state.",
        s if s >= 500 => "The server failed to answer; the message below says why.",
        _ => "The request could not be carried out.",
    }
}
