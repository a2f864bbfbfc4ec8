//! The search page over `fcr:search`: a query box (the index's Lucene syntax), the hits the
//! caller may read, each linked to its page, and links to the previous and next pages.

use axum::response::Response;
use http::StatusCode;
use serde::Serialize;
use serde_json::Value;

use super::Frame;
use crate::context::Ctx;
use crate::error::ApiError;

#[derive(Serialize)]
struct Hit {
    name: String,
    href: String,
    path: String,
    media_type: Option<String>,
    modified: Option<String>,
}

#[derive(Serialize)]
struct Page {
    page: Frame,
    title: String,
    action: String,
    query: String,
    searched: bool,
    total: usize,
    from: usize,
    to: usize,
    hits: Vec<Hit>,
    previous: Option<String>,
    next: Option<String>,
}

/// One page of search results, as `fcr:search` found them.
pub(crate) struct Results<'a> {
    /// The query (`q`), if any.
    pub query: Option<&'a str>,
    /// Hits before this page.
    pub offset: usize,
    /// Hits per page.
    pub limit: usize,
    /// Matches the caller may see.
    pub total: usize,
    /// This page's hits, as the JSON answer has them (`fedora_id` a URL).
    pub items: &'a [Value],
}

/// The search page; `results` is `None` before anything is asked.
pub(crate) fn page(
    ctx: &Ctx,
    results: Option<Results<'_>>,
    head: bool,
) -> Result<Response, ApiError> {
    let action = format!("{}/fcr:search", ctx.base_url);
    let link = |query: &str, offset: usize, limit: usize| {
        let q: String = form_urlencoded::byte_serialize(query.as_bytes()).collect();
        format!("{action}?q={q}&offset={offset}&limit={limit}")
    };
    let (query, searched, total, from, hits, previous, next) = match &results {
        None => (String::new(), false, 0, 0, Vec::new(), None, None),
        Some(r) => {
            let query = r.query.unwrap_or("").to_string();
            let hits = r.items.iter().filter_map(|item| hit(ctx, item)).collect();
            let previous =
                (r.offset > 0).then(|| link(&query, r.offset.saturating_sub(r.limit), r.limit));
            let next =
                (r.offset + r.limit < r.total).then(|| link(&query, r.offset + r.limit, r.limit));
            (query, true, r.total, r.offset, hits, previous, next)
        }
    };
    let to = from + hits.len();
    let page = Page {
        page: Frame::of(ctx),
        title: if query.is_empty() {
            "Search".into()
        } else {
            format!("Search: {query}")
        },
        action,
        query,
        searched,
        total,
        from: if hits.is_empty() { from } else { from + 1 },
        to,
        hits,
        previous,
        next,
    };
    super::render(StatusCode::OK, "search.html", &page, head)
}

/// A hit as a row: a binary links to its description's page (its own URL downloads it).
fn hit(ctx: &Ctx, item: &Value) -> Option<Hit> {
    let url = item.get("fedora_id")?.as_str()?.to_string();
    let text = |name: &str| item.get(name).and_then(Value::as_str).map(str::to_string);
    let media_type = text("mime_type");
    let path = url
        .strip_prefix(ctx.base_url.as_str())
        .unwrap_or(&url)
        .to_string();
    let name = path
        .rsplit('/')
        .find(|s| !s.is_empty())
        .unwrap_or("/")
        .to_string();
    let href = match media_type {
        Some(_) => format!("{url}/fcr:metadata"),
        None => url.clone(),
    };
    Some(Hit {
        name: percent_encoding::percent_decode_str(&name)
            .decode_utf8_lossy()
            .into_owned(),
        path: percent_encoding::percent_decode_str(&path)
            .decode_utf8_lossy()
            .into_owned(),
        href,
        media_type,
        modified: text("modified"),
    })
}
