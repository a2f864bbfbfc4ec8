//! Conditional requests: `If-Match`, `If-None-Match`, `If-Unmodified-Since`,
//! `If-Modified-Since` and `X-If-State-Token`, decided by [`headers::evaluate`].

use arca_catalog::ResourceRecord;
use arca_repository::{Error, Precondition};
use axum::body::Body;
use axum::response::Response;
use http::{header, HeaderMap, StatusCode};

use crate::context::Ctx;
use crate::error::ApiError;
use crate::headers::{self, Condition};
use crate::response::{response, set};

/// Evaluates a write's conditional headers before its body is read (412 when they fail):
/// against `record`, or, for a resource that does not exist yet, `If-Match` fails. The
/// write checks them again under the resource's lock ([`write_precondition`]); both go
/// through [`headers::evaluate`], the one place that decides.
pub(crate) fn check_write_condition(
    ctx: &Ctx,
    h: &HeaderMap,
    record: Option<&ResourceRecord>,
) -> Result<(), ApiError> {
    match record {
        Some(record) => check_condition(ctx, h, record, false).map(|_| ()),
        None if h.contains_key(header::IF_MATCH) => Err(ctx.err(Error::PreconditionFailed(
            "If-Match was sent but the resource does not exist".into(),
        ))),
        None => Ok(()),
    }
}

pub(super) fn check_condition(
    ctx: &Ctx,
    h: &HeaderMap,
    record: &ResourceRecord,
    is_read: bool,
) -> Result<Option<Response>, ApiError> {
    match headers::evaluate(h, Some(record), is_read) {
        Condition::Proceed => Ok(None),
        Condition::NotModified => {
            let mut r = response(StatusCode::NOT_MODIFIED, Body::empty());
            set(r.headers_mut(), header::ETAG, &headers::etag(record));
            set(
                r.headers_mut(),
                header::LAST_MODIFIED,
                &httpdate::fmt_http_date(headers::last_modified(record)),
            );
            Ok(Some(r))
        }
        Condition::Failed => Err(ctx.err(Error::PreconditionFailed(
            "the resource does not match the request's If-Match / If-Unmodified-Since / If-None-Match / X-If-State-Token".into(),
        ))),
    }
}

/// A precondition re-checked under the resource's lock, for writes.
pub(crate) fn write_precondition(h: &HeaderMap) -> Option<Precondition> {
    let relevant = [
        header::IF_MATCH,
        header::IF_NONE_MATCH,
        header::IF_UNMODIFIED_SINCE,
        header::HeaderName::from_static(headers::IF_STATE_TOKEN),
    ];
    if !relevant.iter().any(|n| h.contains_key(n)) {
        return None;
    }
    let h = h.clone();
    Some(Box::new(
        move |record: &ResourceRecord| match headers::evaluate(&h, Some(record), false) {
            Condition::Proceed => Ok(()),
            _ => Err(Error::PreconditionFailed(
                "the resource changed: its ETag, state token or modification date no longer \
                 matches"
                    .into(),
            )),
        },
    ))
}
