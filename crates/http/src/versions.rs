//! Memento versioning over HTTP (Fedora API §4, RFC 7089), as Fedora 6 answers it:
//! every resource is its own TimeGate (`Accept-Datetime` → 302 to a memento), its TimeMap is
//! `<resource>/fcr:versions` (link-format or RDF; `POST` records a memento of the current
//! state), and its mementos are `<resource>/fcr:versions/<YYYYMMDDHHMMSS>`, read-only.

use arca_model::FedoraId;
use arca_rdf::vocab;
use arca_repository::Constraint;
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{header, HeaderMap, StatusCode};
use md5::{Digest, Md5};
use oxrdf::{NamedNode, Triple};
use time::macros::format_description;
use time::OffsetDateTime;

use crate::context::Ctx;
use crate::error::ApiError;
use crate::handlers;
use crate::response::{add_link, set};

/// `Allow` of a TimeMap.
pub(crate) const TIMEMAP_ALLOW: &str = "POST, HEAD, GET, OPTIONS";
/// `Allow` of a memento.
pub(crate) const MEMENTO_ALLOW: &str = "GET, HEAD, OPTIONS";
/// `Accept-Post` of a TimeMap (any body is ignored, as Fedora 6 does).
const TIMEMAP_ACCEPT_POST: &str =
    "text/turtle, application/n-triples, application/ld+json, application/rdf+xml";
const LINK_FORMAT: &str = "application/link-format";

/// A memento's path segment: its datetime as `YYYYMMDDHHMMSS` (UTC).
pub(crate) fn memento_segment(datetime: i64) -> String {
    OffsetDateTime::from_unix_timestamp(datetime)
        .ok()
        .and_then(|t| {
            t.format(format_description!(
                "[year][month][day][hour][minute][second]"
            ))
            .ok()
        })
        .unwrap_or_default()
}

/// Parses a memento path segment; `None` unless it is 14 digits naming a valid instant.
pub(crate) fn parse_memento_segment(segment: &str) -> Option<i64> {
    if segment.len() != 14 || !segment.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = |r: std::ops::Range<usize>| segment[r].parse::<u32>().ok();
    let month = time::Month::try_from(n(4..6)? as u8).ok()?;
    let date = time::Date::from_calendar_date(n(0..4)? as i32, month, n(6..8)? as u8).ok()?;
    let t = date
        .with_hms(n(8..10)? as u8, n(10..12)? as u8, n(12..14)? as u8)
        .ok()?;
    Some(t.assume_utc().unix_timestamp())
}

/// The HTTP date of a memento datetime.
fn http_date(datetime: i64) -> String {
    httpdate::fmt_http_date(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(datetime.max(0) as u64),
    )
}

/// The URL of a resource's TimeMap.
pub(crate) fn timemap_url(ctx: &Ctx, id: &FedoraId) -> String {
    timemap_of(&ctx.url(id))
}

/// The URL of the TimeMap of the resource at `url`.
fn timemap_of(url: &str) -> String {
    format!("{}/fcr:versions", url.trim_end_matches('/'))
}

/// The URL of a memento.
pub(crate) fn memento_url(ctx: &Ctx, id: &FedoraId, datetime: i64) -> String {
    format!("{}/{}", timemap_url(ctx, id), memento_segment(datetime))
}

/// The links that name a resource's original, TimeGate and TimeMap (on the resource, its
/// TimeMap and its mementos alike).
pub(crate) fn add_memento_links(ctx: &Ctx, id: &FedoraId, h: &mut HeaderMap) {
    let url = ctx.url(id);
    add_link(h, &url, "; rel=\"timegate\"");
    add_link(h, &url, "; rel=\"original\"");
    add_link(h, &timemap_of(&url), "; rel=\"timemap\"");
}

/// The `Accept-Datetime` of a request: `None` when absent, 400 when it is not an HTTP date
/// ([`parse_http_date`](crate::headers::parse_http_date)).
pub(crate) fn accept_datetime(h: &HeaderMap) -> Result<Option<i64>, ApiError> {
    let Some(value) = h.get("accept-datetime") else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or_default();
    let parsed = crate::headers::parse_http_date(text).ok_or_else(|| {
        ApiError::bad_request(format!(
            "invalid Accept-Datetime value {text:?}; use an HTTP date such as 'Tue, 3 Jun 2008 11:05:30 GMT'"
        ))
    })?;
    let secs = match parsed.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    Ok(Some(secs))
}

/// GET or HEAD with `Accept-Datetime` on a resource: 302 to the memento in force then (the
/// first one for an earlier datetime, as Fedora 6), 406 when the resource has none yet.
/// The 302 carries the original's headers as a HEAD of it gives them (as Fedora 6 sends
/// them), without its validators and content type, which describe the original, not the
/// redirect.
pub(crate) async fn timegate(ctx: &Ctx, id: FedoraId, datetime: i64) -> Result<Response, ApiError> {
    let chosen = ctx
        .repo
        .memento_for(&id, datetime)
        .await
        .map_err(|e| ctx.err(e))?;
    let Some(chosen) = chosen else {
        let mut e = ApiError::new(
            StatusCode::NOT_ACCEPTABLE,
            format!("{} has no version yet", ctx.url(&id)),
        );
        e.links
            .push(format!("<{}>; rel=\"timemap\"", timemap_url(ctx, &id)));
        return Err(e);
    };
    // The original's headers, as Fedora 6 sends them on the redirect, without its
    // validators and content type.
    let record = ctx.repo.get(&id).await.map_err(|e| ctx.err(e))?;
    let mut out = handlers::read_headers(ctx, &record);
    *out.status_mut() = StatusCode::FOUND;
    let h = out.headers_mut();
    for name in [
        header::ETAG,
        header::LAST_MODIFIED,
        header::CONTENT_TYPE,
        header::HeaderName::from_static("x-state-token"),
    ] {
        h.remove(name);
    }
    set(
        h,
        header::HeaderName::from_static("preference-applied"),
        "return=representation",
    );
    set(h, header::LOCATION, &memento_url(ctx, &id, chosen));
    set(h, header::CONTENT_LENGTH, "0");
    Ok(out)
}

/// Headers every answer about a TimeMap carries.
fn timemap_headers(ctx: &Ctx, id: &FedoraId, h: &mut HeaderMap) {
    add_memento_links(ctx, id, h);
    // As Fedora 6.1 answers: the TimeMap names an ACL below its own URL (which no request
    // can reach; access to a TimeMap is its resource's).
    add_link(
        h,
        &format!("{}/fcr:acl", timemap_url(ctx, id)),
        "; rel=\"acl\"",
    );
    for t in [
        format!("{}Resource", vocab::LDP_NS),
        format!("{}Container", vocab::LDP_NS),
        format!("{}RDFSource", vocab::LDP_NS),
        format!("{}TimeMap", vocab::MEMENTO_NS),
    ] {
        add_link(h, &t, "; rel=\"type\"");
    }
    set(h, header::ALLOW, TIMEMAP_ALLOW);
    set(
        h,
        header::HeaderName::from_static("accept-post"),
        TIMEMAP_ACCEPT_POST,
    );
}

/// OPTIONS on a TimeMap.
pub(crate) async fn timemap_options(ctx: &Ctx, id: FedoraId) -> Result<Response, ApiError> {
    ctx.repo.get(&id).await.map_err(|e| ctx.err(e))?;
    let mut out = crate::response::response(StatusCode::OK, Body::empty());
    timemap_headers(ctx, &id, out.headers_mut());
    Ok(out)
}

/// GET or HEAD on a TimeMap: RFC 6690 link-format when asked for, else RDF (an LDP
/// container of the mementos, as Fedora 6 describes it).
pub(crate) async fn timemap(
    ctx: &Ctx,
    id: FedoraId,
    head: bool,
    req: Request,
) -> Result<Response, ApiError> {
    let record = ctx.repo.get(&id).await.map_err(|e| ctx.err(e))?;
    let mementos = ctx.repo.mementos(&id).await.map_err(|e| ctx.err(e))?;
    if crate::html::wanted(req.headers()) {
        return crate::html::versions::timemap(ctx, &record, &mementos, head).await;
    }
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let link_format = accept.is_some_and(|a| {
        a.split(',')
            .any(|t| t.split(';').next().unwrap_or("").trim() == LINK_FORMAT)
    });
    let mut out = crate::response::response(StatusCode::OK, Body::empty());
    let h = out.headers_mut();
    timemap_headers(ctx, &id, h);
    set(
        h,
        header::LAST_MODIFIED,
        &httpdate::fmt_http_date(crate::headers::last_modified(&record)),
    );
    set(h, header::VARY, "Accept");
    let body = if link_format {
        set(h, header::CONTENT_TYPE, LINK_FORMAT);
        link_format_body(ctx, &id, &mementos).into_bytes()
    } else {
        let output = arca_rdf::RdfOutput::negotiate(accept).ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_ACCEPTABLE,
                "a TimeMap is available as application/link-format, text/turtle, application/ld+json, application/n-triples or application/rdf+xml",
            )
        })?;
        set(
            h,
            header::CONTENT_TYPE,
            &crate::response::rdf_output_content_type(output),
        );
        set(
            h,
            header::HeaderName::from_static("preference-applied"),
            "return=representation",
        );
        let triples = timemap_triples(ctx, &record, &mementos);
        arca_rdf::serialize_as(&triples, output, &ctx.mapper())
            .map_err(|e| ctx.err(arca_repository::Error::Rdf(e)))?
    };
    let h = out.headers_mut();
    set(h, header::CONTENT_LENGTH, &body.len().to_string());
    // A weak validator of this representation, as Fedora 6 gives one.
    set(
        h,
        header::ETAG,
        &format!("W/\"{}\"", hex::encode_upper(Md5::digest(&body))),
    );
    if !head {
        *out.body_mut() = Body::from(body);
    }
    Ok(out)
}

/// The link-format TimeMap (RFC 7089 §5.1.1), in Fedora 6's form.
fn link_format_body(ctx: &Ctx, id: &FedoraId, mementos: &[i64]) -> String {
    let url = ctx.url(id);
    let mut lines = vec![
        format!("<{url}>; rel=\"original\""),
        format!("<{url}>; rel=\"timegate\""),
    ];
    for m in mementos {
        lines.push(format!(
            "<{}>; rel=\"memento\"; datetime=\"{}\"",
            memento_url(ctx, id, *m),
            http_date(*m)
        ));
    }
    let mut own = format!("<{}>; rel=\"self\"", timemap_url(ctx, id));
    if let (Some(first), Some(last)) = (mementos.first(), mementos.last()) {
        if first != last {
            own.push_str(&format!(
                "; from=\"{}\"; until=\"{}\"",
                http_date(*first),
                http_date(*last)
            ));
        }
    }
    own.push_str(&format!("; type=\"{LINK_FORMAT}\""));
    lines.push(own);
    // As Fedora 6 writes it: every line ends with a comma, the last one too.
    lines.iter().map(|l| format!("{l},\n")).collect()
}

/// The RDF TimeMap: the mementos as `ldp:contains`, `memento:original`, the resource's
/// dates and users, and its LDP types.
fn timemap_triples(
    ctx: &Ctx,
    record: &arca_catalog::ResourceRecord,
    mementos: &[i64],
) -> Vec<Triple> {
    let s = NamedNode::new_unchecked(timemap_url(ctx, &record.id));
    let iri = |i: String| NamedNode::new_unchecked(i);
    let mut out = Vec::new();
    let contains = iri(vocab::LDP_CONTAINS.to_string());
    for m in mementos.iter().rev() {
        out.push(Triple::new(
            s.clone(),
            contains.clone(),
            iri(memento_url(ctx, &record.id, *m)),
        ));
    }
    out.push(Triple::new(
        s.clone(),
        iri(format!("{}original", vocab::MEMENTO_NS)),
        iri(ctx.url(&record.id)),
    ));
    handlers::audit_triples(&s.clone().into(), &record.headers, &mut out);
    for t in ["Resource", "Container", "RDFSource"] {
        out.push(Triple::new(
            s.clone(),
            iri(vocab::RDF_TYPE.into()),
            iri(format!("{}{t}", vocab::LDP_NS)),
        ));
    }
    out
}

/// `POST <resource>/fcr:versions`: a memento of the current state (any body is ignored);
/// 201 with the memento's Location. A `Memento-Datetime` (a memento the client would date)
/// is refused with 400, as Fedora 6 refuses it.
pub(crate) async fn create(ctx: &Ctx, id: FedoraId, h: &HeaderMap) -> Result<Response, ApiError> {
    if h.contains_key("memento-datetime") {
        return Err(ApiError::refused(
            Constraint::Memento,
            "Memento-Datetime header is no longer supported on versioning: a memento records the current state at the time of the POST",
            &ctx.base_url,
        ));
    }
    let datetime = ctx
        .repo
        .create_version(&id, &ctx.user)
        .await
        .map_err(|e| ctx.err(e))?;
    let url = memento_url(ctx, &id, datetime);
    let mut out = crate::response::response(StatusCode::CREATED, Body::from(url.clone()));
    let h = out.headers_mut();
    add_memento_links(ctx, &id, h);
    add_link(
        h,
        &format!("{}Memento", vocab::MEMENTO_NS),
        "; rel=\"type\"",
    );
    set(
        h,
        header::HeaderName::from_static("memento-datetime"),
        &http_date(datetime),
    );
    set(h, header::LOCATION, &url);
    set(h, header::CONTENT_TYPE, "text/plain");
    Ok(out)
}

/// The headers that make an answer about a resource a memento's: Memento-Datetime and
/// the read-only Allow (the type link is added with the resource's types).
pub(crate) fn memento_headers(datetime: i64, h: &mut HeaderMap) {
    set(
        h,
        header::HeaderName::from_static("memento-datetime"),
        &http_date(datetime),
    );
    set(h, header::ALLOW, MEMENTO_ALLOW);
    h.remove("accept-post");
    h.remove("accept-patch");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memento_segments_round_trip() {
        let t = 1_795_516_029; // 2026-11-24T10:27:09Z
        assert_eq!(memento_segment(t), "20261124102709");
        assert_eq!(parse_memento_segment("20261124102709"), Some(t));
        for bad in [
            "2026112410270",
            "202611241027090",
            "20261324102709",
            "2026112410270x",
            "20261131000000",
        ] {
            assert_eq!(parse_memento_segment(bad), None, "{bad}");
        }
    }

    #[test]
    fn accept_datetime_must_be_an_http_date() {
        let mut h = HeaderMap::new();
        assert_eq!(accept_datetime(&h).unwrap(), None);
        h.insert(
            "accept-datetime",
            "Tue, 24 Nov 2026 10:27:09 GMT".parse().unwrap(),
        );
        assert_eq!(accept_datetime(&h).unwrap(), Some(1_795_516_029));
        h.insert(
            "accept-datetime",
            "Tue, 3 Jun 2008 11:05:30 GMT".parse().unwrap(),
        );
        assert_eq!(accept_datetime(&h).unwrap(), Some(1_212_491_130));
        for bad in ["garbage", "2026-11-24T10:27:05Z"] {
            h.insert("accept-datetime", bad.parse().unwrap());
            assert_eq!(
                accept_datetime(&h).unwrap_err().status,
                StatusCode::BAD_REQUEST
            );
        }
    }
}
