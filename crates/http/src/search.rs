//! Search over HTTP: `fcr:search` in the shape of Fedora 6's (Lucene syntax in `q`, Fedora's
//! `condition=` parameters), its status and rebuild for admins, and a GSearch-compatible
//! `/fedoragsearch/rest` (`gfindObjects`, `updateIndex`), so clients and load plans written
//! for GSearch keep working. A caller sees the resources it may read (admins all).

use std::sync::Arc;

use arca_model::FedoraId;
use arca_search::{Condition, Indexer, SearchRequest, Sort, StoredHit};
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{header, StatusCode};
use serde_json::{json, Map, Value};

use crate::context::Ctx;
use crate::error::ApiError;

/// Methods on `fcr:search`.
pub(crate) const ALLOW: &str = "GET, HEAD, OPTIONS";

/// Hits per page when the request names none (Fedora's default `max_results`).
const DEFAULT_LIMIT: usize = 100;
/// Matches a caller who is not an admin can page through (each is checked against ACLs).
const FILTERED_CAP: usize = 10_000;
/// Longest query accepted (the parser has its own bounds too).
const MAX_QUERY_BYTES: usize = 8 << 10;

/// Fields a hit shows when the request names none (Fedora 6's).
const DEFAULT_FIELDS: &[&str] = &[
    "fedora_id",
    "created",
    "modified",
    "content_size",
    "mime_type",
    "rdf_type",
];

/// A search and the page of it a client asks for, from `fcr:search`'s or GSearch's
/// parameters.
struct PagedSearch {
    request: SearchRequest,
    offset: usize,
    limit: usize,
}

/// One page of visible hits.
struct Hits {
    total: usize,
    items: Vec<StoredHit>,
}

fn indexer(ctx: &Ctx) -> Result<&Arc<Indexer>, ApiError> {
    ctx.config.search.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "search is switched off on this server (search.enabled = false)",
        )
    })
}

fn search_error(e: arca_search::Error) -> ApiError {
    match e {
        arca_search::Error::Query(q) => ApiError::bad_request(format!("invalid query {q}")),
        arca_search::Error::BadRequest(m) => ApiError::bad_request(m),
        e @ arca_search::Error::Unavailable(_) => {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
        }
        e => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// The query's parameters, percent-decoded (`+` is a space, as in forms).
pub(crate) fn params(req: &Request) -> Result<Vec<(String, String)>, ApiError> {
    let raw = req.uri().query().unwrap_or_default();
    let mut out = Vec::new();
    for pair in raw.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(&s.replace('+', " "))
                .decode_utf8()
                .map(|c| c.into_owned())
                .map_err(|_| ApiError::bad_request(format!("parameter {name:?} is not UTF-8")))
        };
        out.push((decode(name)?, decode(value)?));
    }
    Ok(out)
}

/// The first value of parameter `name`.
pub(crate) fn first<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

fn number(name: &str, value: &str) -> Result<usize, ApiError> {
    value.trim().parse().map_err(|_| {
        ApiError::bad_request(format!("{name} must be a whole number ≥ 0, not {value:?}"))
    })
}

/// A resource's path from a `fedora_id` value: a URL under the REST root, an internal id
/// or a path.
fn path_of(ctx: &Ctx, value: &str) -> String {
    let v = value.trim();
    let v = v
        .strip_prefix(ctx.base_url.as_str())
        .or_else(|| v.strip_prefix("info:fedora"))
        .unwrap_or(v);
    v.trim_start_matches('/').to_string()
}

/// Fedora's `condition=`, with a `fedora_id` value (a URL, an internal id or a path)
/// taken as the resource's path.
fn condition(ctx: &Ctx, text: &str) -> Result<Condition, ApiError> {
    let mut c = Condition::parse(text).map_err(search_error)?;
    if c.field.eq_ignore_ascii_case("fedora_id") {
        c.value = path_of(ctx, &c.value);
    }
    Ok(c)
}

fn parse_sort(spec: &str, order: Option<&str>) -> Result<Sort, ApiError> {
    let mut words = spec.split_whitespace();
    let field = words
        .next()
        .ok_or_else(|| ApiError::bad_request("sort names no field"))?;
    let direction = words.next().or(order).unwrap_or("asc");
    let descending = match direction.to_ascii_lowercase().as_str() {
        "asc" => false,
        "desc" => true,
        d => {
            return Err(ApiError::bad_request(format!(
                "The order field is invalid:  valid values are \"asc\" and \"desc\" (not {d:?})"
            )))
        }
    };
    Ok(Sort {
        field: field.to_string(),
        descending,
    })
}

/// Runs a search as the caller: admins page directly; others see the first matches they
/// may read (of at most [`FILTERED_CAP`]). Also returns the names of the fields each hit
/// holds, in order.
async fn run(
    ctx: &Ctx,
    indexer: &Indexer,
    search: &PagedSearch,
) -> Result<(Hits, Vec<String>), ApiError> {
    let (page, names) = {
        let prepared = indexer
            .index()
            .prepare(&search.request)
            .map_err(search_error)?;
        let names = prepared.field_names().map(str::to_string).collect();
        let page = if ctx.caller.is_admin() {
            prepared.page(search.offset, search.limit)
        } else {
            prepared.page(0, FILTERED_CAP)
        };
        (page.map_err(search_error)?, names)
    };
    if ctx.caller.is_admin() {
        let hits = Hits {
            total: page.total,
            items: page.hits,
        };
        return Ok((hits, names));
    }
    let mut total = 0;
    let mut items = Vec::new();
    for hit in page.hits {
        let Ok(fid) = FedoraId::from_path(&hit.id) else {
            continue;
        };
        if !ctx.access.can_read(&ctx.repo, &ctx.caller, &fid).await {
            continue;
        }
        if total >= search.offset && items.len() < search.limit {
            items.push(hit);
        }
        total += 1;
    }
    Ok((Hits { total, items }, names))
}

/// `GET`/`HEAD /rest/fcr:search`.
pub(crate) async fn search(ctx: &Ctx, head: bool, req: Request) -> Result<Response, ApiError> {
    if ctx.config.search.is_none() {
        return crate::search_forward::search(ctx, head, req).await;
    }
    let indexer = indexer(ctx)?;
    let params = params(&req)?;
    let get = |name: &str| first(&params, name);
    let query = get("q").filter(|q| !q.trim().is_empty());
    if query.is_some_and(|q| q.len() > MAX_QUERY_BYTES) {
        return Err(ApiError::bad_request(format!(
            "the query is longer than {MAX_QUERY_BYTES} bytes"
        )));
    }
    let conditions: Vec<Condition> = params
        .iter()
        .filter(|(n, _)| n == "condition")
        .map(|(_, c)| condition(ctx, c))
        .collect::<Result<_, _>>()?;
    let cap = ctx.config.search_max_results;
    let limit = match get("limit").or(get("max_results")) {
        Some(v) => number("limit", v)?,
        None => DEFAULT_LIMIT,
    };
    if limit == 0 || limit > cap {
        return Err(ApiError::bad_request(format!(
            "limit must be from 1 to {cap} (search.max_results), not {limit}"
        )));
    }
    let offset = get("offset")
        .map(|v| number("offset", v))
        .transpose()?
        .unwrap_or(0);
    let sort = match get("sort").or(get("order_by")) {
        Some(s) => Some(parse_sort(s, get("order"))?),
        // Without a query there is no relevance: by id, as Fedora orders.
        None if query.is_none() => Some(Sort {
            field: "id".into(),
            descending: false,
        }),
        None => None,
    };
    // `fields=*` (or empty) is every field, as in Fedora.
    let fields = match get("fields").filter(|l| !l.trim().is_empty() && l.trim() != "*") {
        Some(l) => l
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect(),
        None => DEFAULT_FIELDS.iter().map(|f| f.to_string()).collect(),
    };
    let html = crate::html::wanted(req.headers());
    if html && query.is_none() && conditions.is_empty() {
        // The search page before anything is asked: the query box alone.
        return crate::html::search::page(ctx, None, head);
    }
    let search = PagedSearch {
        request: SearchRequest {
            query: query.map(str::to_string),
            conditions,
            sort,
            fields,
        },
        offset,
        limit,
    };
    let (hits, names) = run(ctx, indexer, &search).await?;
    // Fedora counts only when asked (`include_total_result_count=true`) and says -1
    // otherwise; arca's index counts for free, so it gives the count unless a client says
    // `false` explicitly.
    let total: i64 = match get("include_total_result_count").map(str::trim) {
        Some(v) if v.eq_ignore_ascii_case("false") => -1,
        _ => hits.total.try_into().unwrap_or(i64::MAX),
    };
    let items: Vec<Value> = hits
        .items
        .into_iter()
        .map(|hit| {
            // Every field asked for is there, as in Fedora's answers: rdf_type a sorted
            // list, content_size 0 and others null when the resource has none.
            let mut values = Map::new();
            for (name, value) in names.iter().zip(hit.values) {
                let value = match (name.as_str(), value) {
                    ("fedora_id", _) => match FedoraId::from_path(&hit.id) {
                        Ok(fid) => crate::response::url_of(&ctx.base_url, &fid).into(),
                        Err(_) => Value::Null,
                    },
                    ("rdf_type", v) => {
                        let mut types: Vec<Value> = match v {
                            Some(Value::Array(a)) => a,
                            Some(v) => vec![v],
                            None => Vec::new(),
                        };
                        types.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                        Value::Array(types)
                    }
                    ("content_size", None) => 0.into(),
                    (_, v) => v.unwrap_or(Value::Null),
                };
                values.insert(name.clone(), value);
            }
            Value::Object(values)
        })
        .collect();
    if html {
        let results = crate::html::search::Results {
            query,
            offset,
            limit,
            total: hits.total,
            items: &items,
        };
        return crate::html::search::page(ctx, Some(results), head);
    }
    // Built by hand: `json!` would copy every item.
    let mut body = Map::new();
    body.insert(
        "pagination".into(),
        json!({"totalResults": total, "offset": offset, "maxResults": limit}),
    );
    body.insert("items".into(), Value::Array(items));
    let bytes = serde_json::to_vec_pretty(&body).expect("JSON serializes");
    let mut r = if head {
        ([(header::CONTENT_LENGTH, bytes.len().to_string())], ()).into_response()
    } else {
        bytes.into_response()
    };
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        "application/json".parse().expect("valid"),
    );
    Ok(r)
}

/// `OPTIONS /rest/fcr:search`.
pub(crate) fn options() -> Response {
    (StatusCode::OK, [(header::ALLOW, ALLOW)]).into_response()
}

/// `GET /rest/fcr:search/status` (admins): where indexing stands.
pub(crate) async fn status(ctx: &Ctx, req: Request) -> Result<Response, ApiError> {
    if ctx.config.search.is_none() {
        return crate::search_forward::status(ctx, req).await;
    }
    let indexer = indexer(ctx)?;
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_vec_pretty(&indexer.status()).expect("JSON serializes"),
    )
        .into_response())
}

/// `POST /rest/fcr:search/reindex` (admins): a full rebuild, in the background; 202, or
/// 409 while one runs.
pub(crate) fn reindex(ctx: &Ctx) -> Result<Response, ApiError> {
    if ctx.config.search.is_none() {
        return crate::search_forward::reindex(ctx);
    }
    let indexer = indexer(ctx)?;
    if !indexer.request_rebuild() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "a rebuild of the search index is running already; see fcr:search/status",
        ));
    }
    let location = format!("{}/fcr:search/status", ctx.base_url);
    Ok((
        StatusCode::ACCEPTED,
        [
            (header::LOCATION, location.as_str()),
            (header::CONTENT_TYPE, "text/plain"),
        ],
        format!("rebuilding the search index; progress at {location}\n"),
    )
        .into_response())
}

/// `/fedoragsearch/rest?operation=…`: GSearch's REST interface.
pub(crate) async fn gsearch(ctx: &Ctx, req: Request) -> Result<Response, ApiError> {
    if ctx.config.search.is_none() {
        return crate::search_forward::gsearch(ctx, req).await;
    }
    let indexer = indexer(ctx)?;
    let params = params(&req)?;
    let get = |name: &str| first(&params, name);
    let xml = match get("operation").unwrap_or("gfindObjects") {
        "gfindObjects" => {
            let q = get("query").unwrap_or_default();
            if q.trim().is_empty() || q.len() > MAX_QUERY_BYTES {
                return Err(ApiError::bad_request(
                    "gfindObjects needs a query of at most 8 KiB",
                ));
            }
            let start = get("hitPageStart")
                .map(|v| number("hitPageStart", v))
                .transpose()?
                .unwrap_or(1)
                .max(1);
            let size = get("hitPageSize")
                .map(|v| number("hitPageSize", v))
                .transpose()?
                .unwrap_or(10);
            let cap = ctx.config.search_max_results;
            if size == 0 || size > cap {
                return Err(ApiError::bad_request(format!(
                    "hitPageSize must be from 1 to {cap}"
                )));
            }
            let mut fields = indexer.index().stored_field_names();
            fields.retain(|n| n != "id");
            let search = PagedSearch {
                request: SearchRequest {
                    query: Some(q.to_string()),
                    fields,
                    ..SearchRequest::default()
                },
                offset: start - 1,
                limit: size,
            };
            let (hits, names) = run(ctx, indexer, &search).await?;
            let mut out = format!(
                "<gfindObjects hitTotal=\"{}\" resultPageXslt=\"\" hitPageSize=\"{size}\" hitPageStart=\"{start}\" query=\"{}\"><objects>",
                hits.total,
                escape(q)
            );
            for (i, hit) in hits.items.into_iter().enumerate() {
                out.push_str(&format!("<object no=\"{}\">", start + i));
                out.push_str(&format!("<field name=\"PID\">{}</field>", escape(&hit.id)));
                let present = names.iter().zip(hit.values);
                for (name, v) in present.filter_map(|(f, v)| Some((f, v?))) {
                    let list = match v {
                        Value::Array(a) => a,
                        v => vec![v],
                    };
                    for v in list {
                        let text = match v {
                            Value::String(s) => s,
                            v => v.to_string(),
                        };
                        out.push_str(&format!(
                            "<field name=\"{}\">{}</field>",
                            escape(name),
                            escape(&text)
                        ));
                    }
                }
                out.push_str("</object>");
            }
            out.push_str("</objects></gfindObjects>");
            out
        }
        "updateIndex" => {
            if !ctx.caller.is_admin() {
                return Err(ApiError::forbidden("updateIndex is for administrators"));
            }
            let action = get("action").unwrap_or_default();
            match action {
                "fromPid" => {
                    let value = get("value").unwrap_or_default();
                    let id = FedoraId::from_path(&path_of(ctx, value))
                        .map_err(|e| ApiError::bad_request(format!("value {value:?}: {e}")))?;
                    indexer.refresh(vec![id]).await.map_err(search_error)?;
                }
                "fromFoxmlFiles" | "createEmpty" => {
                    if !indexer.request_rebuild() {
                        return Err(ApiError::new(
                            StatusCode::CONFLICT,
                            "a rebuild of the search index is running already",
                        ));
                    }
                }
                a => {
                    return Err(ApiError::bad_request(format!(
                        "updateIndex action {a:?} is not known; use fromPid, fromFoxmlFiles or createEmpty"
                    )))
                }
            }
            format!(
                "<updateIndex action=\"{}\" docCount=\"{}\" warnCount=\"0\" indexName=\"arca\"/>",
                escape(action),
                indexer.index().documents()
            )
        }
        op => {
            return Err(ApiError::bad_request(format!(
                "operation {op:?} is not known; use gfindObjects or updateIndex"
            )))
        }
    };
    Ok((
        [(header::CONTENT_TYPE, "text/xml; charset=UTF-8")],
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<resultPage indexName=\"arca\">{xml}</resultPage>\n"),
    )
        .into_response())
}

/// XML text or attribute value, without the control characters XML cannot hold.
fn escape(s: &str) -> String {
    crate::xml::escape(s, true, true)
}
