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
use crate::response::{add_link, add_type_link, owned_header_value, response, set, set_static};

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
        add_type_link(h, "", t);
    }
    for t in fedora_link_types(record, model) {
        add_type_link(h, vocab::FEDORA_NS, t);
    }
    crate::versions::add_memento_links(ctx, &record.id, h);
    let memento_types: &[&'static str] = match ctx.memento {
        Some(_) => &["Memento"],
        None => &["OriginalResource", "TimeGate"],
    };
    for t in memento_types {
        add_type_link(h, vocab::MEMENTO_NS, t);
    }
    // As Fedora 6: every resource but an ACL and a memento names its ACL (5.3), existing
    // or not; a description names its binary's.
    if !record.id.is_acl() && ctx.memento.is_none() {
        add_link(h, &ctx.url(&record.id.base().acl()), ";rel=\"acl\"");
    }
    // As Fedora: the root names the transaction endpoint.
    if record.id.is_root() && ctx.memento.is_none() {
        add_link(
            h,
            &format!("{}/fcr:tx/", ctx.base_url),
            ";rel=\"http://fedora.info/definitions/v4/transaction#endpoint\"",
        );
    }
    if let Some(ag) = record.headers.archival_group_id.as_deref() {
        if let Ok(ag) = FedoraId::from_internal(ag) {
            add_link(h, &ctx.url(&ag), ";rel=\"archival-group\"");
        }
    }
    let token = headers::state_token(record);
    h.insert(
        header::ETAG,
        owned_header_value(headers::etag_with(record, &token)),
    );
    h.insert(
        header::HeaderName::from_static("x-state-token"),
        owned_header_value(token),
    );
    set(
        h,
        header::LAST_MODIFIED,
        &httpdate::fmt_http_date(headers::last_modified(record)),
    );
    set_static(h, header::ALLOW, allow_for(record));
    if model.is_container() {
        set_static(
            h,
            header::HeaderName::from_static("accept-post"),
            ACCEPT_POST,
        );
    }
    if model.is_rdf_source() {
        set_static(
            h,
            header::HeaderName::from_static("accept-patch"),
            ACCEPT_PATCH,
        );
    }
    match model {
        InteractionModel::NonRdfSource => add_link(
            h,
            &ctx.url(&record.id.description()),
            ";rel=\"describedby\"",
        ),
        InteractionModel::NonRdfSourceDescription => {
            add_link(h, &ctx.url(&record.id.base()), ";rel=\"describes\"")
        }
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
