//! Search over HTTP: `fcr:search` in the shape of Fedora 6's (Lucene syntax in `q`, Fedora's
//! `condition=` parameters), its status and rebuild for admins, and a GSearch-compatible
//! `/fedoragsearch/rest` (`gfindObjects`, `updateIndex`), so clients and load plans written
//! for GSearch keep working. A caller sees the resources it may read (admins all).

use std::ops::Bound;
use std::sync::Arc;

use arca_model::FedoraId;
use arca_search::{Indexer, Sort, StoredHit};
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{header, StatusCode};
use serde_json::{json, Map, Value};
use tantivy::query::{BooleanQuery, Occur, Query};
use tantivy::schema::Field;
use tantivy::{DocAddress, Searcher};

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

/// What a search asks for, from `fcr:search`'s or GSearch's parameters.
struct SearchRequest {
    query: Box<dyn Query>,
    sort: Option<Sort>,
    offset: usize,
    limit: usize,
    fields: Vec<(String, Field)>,
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
        e => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// The query's parameters, percent-decoded (`+` is a space, as in forms).
fn params(req: &Request) -> Result<Vec<(String, String)>, ApiError> {
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
fn first<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
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

/// Fedora's `condition=` (`field<op>value`, ops `=`, `<`, `>`, `<=`, `>=`; `*` in an `=`
/// value is a wildcard) as a query.
fn condition(ctx: &Ctx, indexer: &Indexer, text: &str) -> Result<Box<dyn Query>, ApiError> {
    let at = text.find(['<', '>', '=']).ok_or_else(|| {
        ApiError::bad_request(format!(
            "condition {text:?} has no operator (=, <, >, <=, >=)"
        ))
    })?;
    let (field, rest) = text.split_at(at);
    let (op, value) = if rest.starts_with("<=") || rest.starts_with(">=") {
        rest.split_at(2)
    } else {
        rest.split_at(1)
    };
    let field = field.trim();
    let value = if field.eq_ignore_ascii_case("fedora_id") {
        path_of(ctx, value)
    } else {
        value.trim().to_string()
    };
    let p = indexer.index().parser();
    let q = match op {
        "=" if value.contains(['*', '?']) => p.wildcard(field, &value),
        "=" => p.term(field, &value),
        "<" => p.range(field, Bound::Unbounded, Bound::Excluded(&value)),
        "<=" => p.range(field, Bound::Unbounded, Bound::Included(&value)),
        ">" => p.range(field, Bound::Excluded(&value), Bound::Unbounded),
        _ => p.range(field, Bound::Included(&value), Bound::Unbounded),
    };
    q.map_err(|e| ApiError::bad_request(format!("invalid condition {text:?}: {}", e.message)))
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
                "sort order must be asc or desc, not {d:?}"
            )))
        }
    };
    Ok(Sort {
        field: field.to_string(),
        descending,
    })
}

fn fields(indexer: &Indexer, list: Option<&str>) -> Result<Vec<(String, Field)>, ApiError> {
    let schema = indexer.index().schema();
    let names: Vec<&str> = match list {
        Some(l) => l
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .collect(),
        None => DEFAULT_FIELDS.to_vec(),
    };
    names
        .into_iter()
        .map(|n| {
            if n.eq_ignore_ascii_case("fedora_id") {
                return Ok(("fedora_id".to_string(), schema.system.id));
            }
            schema
                .stored_field(n)
                .map(|(name, f)| (name.to_string(), f))
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "unknown or unstored field {n:?} in fields; known: fedora_id, {}",
                        schema
                            .stored
                            .iter()
                            .map(|(n, _)| n.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
        })
        .collect()
}

/// Runs a search as the caller: admins page directly; others see the first matches they
/// may read (of at most [`FILTERED_CAP`]).
async fn run(ctx: &Ctx, indexer: &Indexer, req: &SearchRequest) -> Result<Hits, ApiError> {
    let index = indexer.index();
    let searcher: Searcher = index.searcher();
    let ids_and_fields = |searcher: &Searcher, hits: Vec<DocAddress>| {
        hits.into_iter()
            .map(|a| index.stored(searcher, a, &req.fields))
            .collect::<Result<Vec<_>, _>>()
            .map_err(search_error)
    };
    if ctx.caller.is_admin() {
        let page = index
            .page(
                &searcher,
                &*req.query,
                req.sort.as_ref(),
                req.offset,
                req.limit,
            )
            .map_err(search_error)?;
        let items = ids_and_fields(&searcher, page.hits)?;
        return Ok(Hits {
            total: page.total,
            items,
        });
    }
    let all = index
        .page(&searcher, &*req.query, req.sort.as_ref(), 0, FILTERED_CAP)
        .map_err(search_error)?;
    let mut total = 0;
    let mut items = Vec::new();
    for hit in ids_and_fields(&searcher, all.hits)? {
        let Ok(fid) = FedoraId::from_path(&hit.id) else {
            continue;
        };
        if !ctx.access.can_read(&ctx.repo, &ctx.caller, &fid).await {
            continue;
        }
        if total >= req.offset && items.len() < req.limit {
            items.push(hit);
        }
        total += 1;
    }
    Ok(Hits { total, items })
}

/// `GET`/`HEAD /rest/fcr:search`.
pub(crate) async fn search(ctx: &Ctx, head: bool, req: Request) -> Result<Response, ApiError> {
    let indexer = indexer(ctx)?;
    let params = params(&req)?;
    let get = |name: &str| first(&params, name);
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    if let Some(q) = get("q").filter(|q| !q.trim().is_empty()) {
        if q.len() > MAX_QUERY_BYTES {
            return Err(ApiError::bad_request(format!(
                "the query is longer than {MAX_QUERY_BYTES} bytes"
            )));
        }
        let parsed = indexer
            .index()
            .parser()
            .parse(q)
            .map_err(|e| ApiError::bad_request(format!("invalid query {e}")))?;
        clauses.push((Occur::Must, parsed));
    }
    for (_, c) in params.iter().filter(|(n, _)| n == "condition") {
        clauses.push((Occur::Must, condition(ctx, indexer, c)?));
    }
    let query: Box<dyn Query> = if clauses.is_empty() {
        Box::new(tantivy::query::AllQuery)
    } else {
        Box::new(BooleanQuery::new(clauses))
    };
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
        Some(s) => {
            let sort = parse_sort(s, get("order"))?;
            indexer.index().check_sort(&sort).map_err(search_error)?;
            Some(sort)
        }
        // Without a query there is no relevance: by id, as Fedora orders.
        None if get("q").is_none_or(|q| q.trim().is_empty()) => Some(Sort {
            field: "id".into(),
            descending: false,
        }),
        None => None,
    };
    let request = SearchRequest {
        query,
        sort,
        offset,
        limit,
        fields: fields(indexer, get("fields"))?,
    };
    let hits = run(ctx, indexer, &request).await?;
    let items: Vec<Value> = hits
        .items
        .into_iter()
        .map(|hit| {
            // Every field asked for is there, as in Fedora's answers: rdf_type a sorted
            // list, content_size 0 and others null when the resource has none.
            let mut values = Map::new();
            for ((name, _), value) in request.fields.iter().zip(hit.values) {
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
    // Built by hand: `json!` would copy every item.
    let mut body = Map::new();
    body.insert(
        "pagination".into(),
        json!({"totalResults": hits.total, "offset": offset, "maxResults": limit}),
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
pub(crate) fn status(ctx: &Ctx) -> Result<Response, ApiError> {
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
            let query = indexer
                .index()
                .parser()
                .parse(q)
                .map_err(|e| ApiError::bad_request(format!("invalid query {e}")))?;
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
            let schema = indexer.index().schema();
            let fields: Vec<(String, Field)> = schema
                .stored
                .iter()
                .filter(|(n, _)| n != "id")
                .cloned()
                .collect();
            let request = SearchRequest {
                query,
                sort: None,
                offset: start - 1,
                limit: size,
                fields,
            };
            let hits = run(ctx, indexer, &request).await?;
            let mut out = format!(
                "<gfindObjects hitTotal=\"{}\" resultPageXslt=\"\" hitPageSize=\"{size}\" hitPageStart=\"{start}\" query=\"{}\"><objects>",
                hits.total,
                escape(q)
            );
            for (i, hit) in hits.items.into_iter().enumerate() {
                out.push_str(&format!("<object no=\"{}\">", start + i));
                out.push_str(&format!("<field name=\"PID\">{}</field>", escape(&hit.id)));
                let present = request.fields.iter().zip(hit.values);
                for ((name, _), v) in present.filter_map(|(f, v)| Some((f, v?))) {
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
