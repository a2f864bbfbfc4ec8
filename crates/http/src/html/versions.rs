//! The page of a TimeMap: a resource's mementos, newest first, each with its date and a
//! link (a memento of an RDF source has its own read-only page; a binary's is its bytes).

use arca_catalog::ResourceRecord;
use axum::response::Response;
use http::StatusCode;
use serde::Serialize;

use super::resource::{crumbs, kind_of, may, Crumb};
use super::Frame;
use crate::context::Ctx;
use crate::error::ApiError;
use crate::handlers::model_of;
use crate::Operation;

#[derive(Serialize)]
struct Memento {
    date: String,
    href: String,
}

#[derive(Serialize)]
struct Page {
    page: Frame,
    title: String,
    kind: &'static str,
    resource: String,
    crumbs: Vec<Crumb>,
    binary: bool,
    mementos: Vec<Memento>,
    /// Where a POST creates a version, when the caller may.
    create: Option<String>,
}

/// The TimeMap page of `record` with its `mementos` (seconds since the epoch).
pub(crate) async fn timemap(
    ctx: &Ctx,
    record: &ResourceRecord,
    mementos: &[i64],
    head: bool,
) -> Result<Response, ApiError> {
    let id = &record.id;
    let mut list: Vec<Memento> = mementos
        .iter()
        .map(|d| Memento {
            date: time::OffsetDateTime::from_unix_timestamp(*d)
                .map(arca_model::format_instant)
                .unwrap_or_else(|_| d.to_string()),
            href: crate::versions::memento_url(ctx, id, *d),
        })
        .collect();
    list.reverse();
    let create = may(ctx, Operation::CreateVersion(id.base()))
        .await
        .then(|| crate::versions::timemap_url(ctx, id));
    let name = match id.base().last_segment() {
        "" => "the repository root".to_string(),
        s => s.to_string(),
    };
    let binary = model_of(record).is_binary();
    let resource = if binary {
        ctx.url(&id.description())
    } else {
        ctx.url(id)
    };
    let page = Page {
        page: Frame::of(ctx),
        title: format!("Versions of {name}"),
        kind: kind_of(record),
        resource,
        crumbs: crumbs(ctx, id),
        binary,
        mementos: list,
        create,
    };
    super::render(StatusCode::OK, "timemap.html", &page, head)
}
