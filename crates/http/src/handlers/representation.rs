//! The headers of a resource's representation, as Fedora 6 sends them: `Link` types,
//! `Allow`, `Accept-*`, `ETag`, dates, `Content-Disposition` for binaries.

use arca_catalog::ResourceRecord;
use arca_model::{FedoraId, InteractionModel};
use arca_rdf::vocab;
use axum::body::Body;
use axum::response::Response;
use http::{header, HeaderMap, StatusCode};

use super::{ACCEPT_PATCH, ACCEPT_POST};
use crate::context::Ctx;
use crate::headers;
use crate::response::{add_link, response, set};

/// The interaction model of `record` (a basic container when its headers name none).
pub(crate) fn model_of(record: &ResourceRecord) -> InteractionModel {
    record
        .headers
        .model()
        .unwrap_or(InteractionModel::BasicContainer)
}

pub(super) fn allow_for(record: &ResourceRecord) -> &'static str {
    match model_of(record) {
        InteractionModel::Acl => crate::acl::ALLOW,
        m if m.is_container() && record.id.is_root() => "GET, HEAD, OPTIONS, POST, PUT, PATCH",
        m if m.is_container() => "GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE",
        InteractionModel::NonRdfSource => "GET, HEAD, OPTIONS, PUT, DELETE",
        _ => "GET, HEAD, OPTIONS, PUT, PATCH",
    }
}

/// A binary's `Content-Disposition`, as Fedora 7 sends it: `attachment; filename="…"`, the
/// filename only when one was given (with an RFC 6266 `filename*` for names that are not
/// ASCII). Fedora 6's `size`, `creation-date` and `modification-date` parameters, which RFC
/// 6266 (Appendix B) deprecated, are gone (fcrepo #2291).
pub(super) fn content_disposition(record: &ResourceRecord) -> String {
    match record.headers.filename.as_deref().filter(|f| !f.is_empty()) {
        Some(f) => format!("attachment; {}", filename_params(f)),
        None => "attachment".to_string(),
    }
}

/// `filename="…"`, with an RFC 6266 `filename*` for names that are not ASCII (the plain
/// `filename` then has `_` for each non-ASCII character).
pub(crate) fn filename_params(filename: &str) -> String {
    let plain: String = filename
        .chars()
        .filter(|c| *c != '"')
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '_'
            }
        })
        .collect();
    if filename.is_ascii() {
        return format!("filename=\"{plain}\"");
    }
    // RFC 8187 attr-char: letters, digits and these marks stay as they are.
    const ATTR: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'!')
        .remove(b'#')
        .remove(b'$')
        .remove(b'&')
        .remove(b'+')
        .remove(b'-')
        .remove(b'.')
        .remove(b'^')
        .remove(b'_')
        .remove(b'`')
        .remove(b'|')
        .remove(b'~');
    let encoded = percent_encoding::utf8_percent_encode(filename, ATTR);
    format!("filename=\"{plain}\"; filename*=UTF-8''{encoded}")
}

/// The `fedora:` types Fedora 6 names in `Link: rel="type"` besides the LDP ones.
pub(super) fn fedora_link_types(
    record: &ResourceRecord,
    model: InteractionModel,
) -> Vec<&'static str> {
    let mut types = match model {
        InteractionModel::NonRdfSource => vec!["Binary", "Resource"],
        InteractionModel::NonRdfSourceDescription => vec!["NonRdfSourceDescription", "Resource"],
        m if m.is_typed_container() => vec!["Container", "Resource"],
        _ => vec!["Resource"],
    };
    if record.id.is_root() {
        types.push("RepositoryRoot");
    }
    if record.headers.archival_group {
        types.push("ArchivalGroup");
    }
    types
}

/// Headers every response about a resource carries: type links, ETag, Last-Modified,
/// Allow, Accept-Post/Accept-Patch, describedby/describes.
pub(crate) fn resource_headers(ctx: &Ctx, record: &ResourceRecord, h: &mut HeaderMap) {
    let model = model_of(record);
    for t in model.rdf_types() {
        add_link(h, format!("<{t}>;rel=\"type\""));
    }
    for t in fedora_link_types(record, model) {
        add_link(h, format!("<{}{t}>;rel=\"type\"", vocab::FEDORA_NS));
    }
    crate::versions::add_memento_links(ctx, &record.id, h);
    let memento_types: &[&str] = match ctx.memento {
        Some(_) => &["Memento"],
        None => &["OriginalResource", "TimeGate"],
    };
    for t in memento_types {
        add_link(h, format!("<{}{t}>;rel=\"type\"", vocab::MEMENTO_NS));
    }
    // As Fedora 6: every resource but an ACL and a memento names its ACL (5.3), existing
    // or not; a description names its binary's.
    if !record.id.is_acl() && ctx.memento.is_none() {
        add_link(
            h,
            format!("<{}>;rel=\"acl\"", ctx.url(&record.id.base().acl())),
        );
    }
    // As Fedora: the root names the transaction endpoint.
    if record.id.is_root() && ctx.memento.is_none() {
        add_link(
            h,
            format!(
                "<{}/fcr:tx/>;rel=\"http://fedora.info/definitions/v4/transaction#endpoint\"",
                ctx.base_url
            ),
        );
    }
    if let Some(ag) = record.headers.archival_group_id.as_deref() {
        if let Ok(ag) = FedoraId::from_internal(ag) {
            add_link(h, format!("<{}>;rel=\"archival-group\"", ctx.url(&ag)));
        }
    }
    let token = headers::state_token(record);
    set(h, header::ETAG, &headers::etag_with(record, &token));
    set(h, header::HeaderName::from_static("x-state-token"), &token);
    set(
        h,
        header::LAST_MODIFIED,
        &httpdate::fmt_http_date(headers::last_modified(record)),
    );
    set(h, header::ALLOW, allow_for(record));
    if model.is_container() {
        set(
            h,
            header::HeaderName::from_static("accept-post"),
            ACCEPT_POST,
        );
    }
    if model.is_rdf_source() {
        set(
            h,
            header::HeaderName::from_static("accept-patch"),
            ACCEPT_PATCH,
        );
    }
    match model {
        InteractionModel::NonRdfSource => add_link(
            h,
            format!(
                "<{}>;rel=\"describedby\"",
                ctx.url(&record.id.description())
            ),
        ),
        InteractionModel::NonRdfSourceDescription => add_link(
            h,
            format!("<{}>;rel=\"describes\"", ctx.url(&record.id.base())),
        ),
        _ => {}
    }
    if let Some(datetime) = ctx.memento {
        crate::versions::memento_headers(datetime, h);
    }
}

/// 201 for a resource just created: its URL as `Location` and body, and its headers.
pub(crate) fn created_response(ctx: &Ctx, record: &ResourceRecord) -> Response {
    let url = ctx.url(&record.id);
    let mut out = response(StatusCode::CREATED, Body::from(url.clone()));
    let h = out.headers_mut();
    resource_headers(ctx, record, h);
    crate::external::content_location(record, h);
    set(h, header::LOCATION, &url);
    set(h, header::CONTENT_TYPE, "text/plain; charset=utf-8");
    out
}
