//! The read-only Fedora 3 REST facade under `/fedora/`, for objects imported from Fedora 3
//! (`arca import fedora3`): the API-A calls, their API-A-LITE forms and the API-M reads
//! clients use, answering as Fedora 3.8.1 does. Requests are parsed into a [`Request`] here,
//! checked like any other request (`access`: Read on the object or datastream; API-M reads
//! need an authenticated user, as in Fedora 3), then answered from
//! [`arca_fedora3::view`]. Writes are refused with 405 and a pointer to the Fedora API.
//!
//! - `render`: the documents, exactly as Fedora 3 writes them.
//! - `content`: datastream content through arca's binary path.
//! - `search`: findObjects.
//! - `xml`: escaping, URL encoding and dates shared by all of them.

mod content;
mod render;
mod search;
mod xml;

use std::collections::HashMap;

use arca_fedora3::view::{parse_date, DatastreamVersion, ObjectView, Views};
use arca_model::FedoraId;
use axum::body::Body;
use axum::extract::Request as HttpRequest;
use axum::response::Response;
use http::{header, Method, StatusCode};

use self::render::Api;
use crate::context::Ctx;
use crate::error::ApiError;
use crate::response::set;

/// Where Fedora 3 served its REST API, and the facade serves it.
pub(crate) const PATH: &str = "/fedora";

/// Methods the facade answers.
const ALLOW: &str = "GET, HEAD";

/// Whether `path` is the facade's.
pub(crate) fn claims(path: &str) -> bool {
    path == PATH || path.starts_with("/fedora/")
}

/// A Fedora 3 request, parsed.
#[derive(Debug)]
pub(crate) struct Request {
    call: Call,
    params: HashMap<String, String>,
    head: bool,
}

/// What a Fedora 3 request asks for.
#[derive(Debug)]
enum Call {
    /// `describe`.
    Describe,
    /// `objects?…` (findObjects) or API-A-LITE `search?…`.
    FindObjects(Api),
    /// `objects/{pid}`, `get/{pid}`.
    ObjectProfile(Api, String),
    /// `objects/{pid}/datastreams`, `listDatastreams/{pid}`.
    Datastreams(Api, String),
    /// `objects/{pid}/datastreams/{ds}` (API-M).
    DatastreamProfile(String, String),
    /// `objects/{pid}/datastreams/{ds}/history` (API-M).
    DatastreamHistory(String, String),
    /// `objects/{pid}/datastreams/{ds}/content`, `get/{pid}/{ds}[/{dateTime}]`.
    Content {
        api: Api,
        pid: String,
        dsid: String,
        date_time: Option<String>,
    },
    /// `objects/{pid}/versions`, `getObjectHistory/{pid}`.
    ObjectHistory(Api, String),
    /// `objects/{pid}/relationships` (API-M).
    Relationships(String),
    /// A write: the facade is read-only.
    Write,
    /// A Fedora 3 call the facade does not offer.
    NotSupported(&'static str),
    /// Nothing Fedora 3 answered at this path.
    NoSuchPath,
}

/// What a Fedora 3 request needs of its caller.
pub(crate) enum Need {
    /// Nothing (answers filter what the caller may not read).
    Nothing,
    /// Read on the resource.
    Read(FedoraId),
    /// An authenticated user with Read on the resource (Fedora 3's API-M).
    AuthenticatedRead(FedoraId),
}

impl Request {
    /// What the request needs: Read on its object or datastream; API-M reads (datastream
    /// profiles and histories, `profiles=true`, relationships) also an authenticated user.
    pub(crate) fn need(&self) -> Need {
        let object = |pid: &str| Views::object_id(pid);
        let datastream = |pid: &str, dsid: &str| Views::datastream_id(pid, dsid);
        let (id, api_m) = match &self.call {
            Call::ObjectProfile(_, pid) | Call::ObjectHistory(_, pid) => (object(pid), false),
            Call::Datastreams(_, pid) => (object(pid), self.flag("profiles")),
            Call::Relationships(pid) => (object(pid), true),
            Call::Content { pid, dsid, .. } => (datastream(pid, dsid), false),
            Call::DatastreamProfile(pid, dsid) | Call::DatastreamHistory(pid, dsid) => {
                (datastream(pid, dsid), true)
            }
            Call::Describe
            | Call::FindObjects(_)
            | Call::Write
            | Call::NotSupported(_)
            | Call::NoSuchPath => (None, false),
        };
        match (id, api_m) {
            (Some(id), true) => Need::AuthenticatedRead(id),
            (Some(id), false) => Need::Read(id),
            (None, _) => Need::Nothing,
        }
    }

    fn flag(&self, name: &str) -> bool {
        self.params.get(name).is_some_and(|v| v == "true")
    }

    fn param(&self, name: &str) -> Option<&str> {
        self.params
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// Parses a request below `/fedora`: `path` is the whole (still percent-encoded) path,
/// `query` the query string.
pub(crate) fn parse(method: &Method, path: &str, query: Option<&str>) -> Request {
    let params = query.map(parse_query).unwrap_or_default();
    let head = *method == Method::HEAD;
    let call = if !(*method == Method::GET || head) {
        Call::Write
    } else {
        parse_path(path.strip_prefix(PATH).unwrap_or(path))
    };
    Request { call, params, head }
}

fn parse_path(path: &str) -> Call {
    let raw: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let Some(seg) = raw
        .iter()
        .map(|s| decode(s))
        .collect::<Option<Vec<String>>>()
    else {
        return Call::NoSuchPath;
    };
    // API-A-LITE decodes its path a second time (so a PID holding a %XX escape cannot be
    // reached through it, as in Fedora 3).
    let lite: Vec<String> = seg.iter().map(|s| decode(s).unwrap_or_default()).collect();
    let s: Vec<&str> = seg.iter().map(String::as_str).collect();
    let l: Vec<&str> = lite.iter().map(String::as_str).collect();
    match s.as_slice() {
        ["describe"] => Call::Describe,
        ["objects"] | ["objects", ""] => Call::FindObjects(Api::Rest),
        ["search"] => Call::FindObjects(Api::Lite),
        ["objects", pid] => Call::ObjectProfile(Api::Rest, pid.to_string()),
        ["objects", pid, "datastreams"] => Call::Datastreams(Api::Rest, pid.to_string()),
        ["objects", pid, "datastreams", ds] => {
            Call::DatastreamProfile(pid.to_string(), ds.to_string())
        }
        ["objects", pid, "datastreams", ds, "content"] => Call::Content {
            api: Api::Rest,
            pid: pid.to_string(),
            dsid: ds.to_string(),
            date_time: None,
        },
        ["objects", pid, "datastreams", ds, "history"] => {
            Call::DatastreamHistory(pid.to_string(), ds.to_string())
        }
        ["objects", pid, "versions"] => Call::ObjectHistory(Api::Rest, pid.to_string()),
        ["objects", pid, "relationships"] => Call::Relationships(pid.to_string()),
        ["objects", _, "methods", ..] => {
            Call::NotSupported("methods and disseminations (service definitions are not run)")
        }
        ["objects", _, "objectXML" | "export" | "validate"] => {
            Call::NotSupported("FOXML of imported objects (their content is in the OCFL root)")
        }
        ["get", ..] => match l.as_slice() {
            ["get", pid] => Call::ObjectProfile(Api::Lite, pid.to_string()),
            ["get", _, sdef, _] if sdef.contains(':') => {
                Call::NotSupported("disseminations (service definitions are not run)")
            }
            ["get", pid, ds] | ["get", pid, ds, _] => Call::Content {
                api: Api::Lite,
                pid: pid.to_string(),
                dsid: ds.to_string(),
                date_time: l.get(3).map(|d| d.to_string()),
            },
            _ => Call::NoSuchPath,
        },
        ["listDatastreams", _] => Call::Datastreams(Api::Lite, l[1].to_string()),
        ["getObjectHistory", _] => Call::ObjectHistory(Api::Lite, l[1].to_string()),
        _ => Call::NoSuchPath,
    }
}

/// A percent-decoded path segment; `None` when it is not UTF-8.
fn decode(s: &str) -> Option<String> {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(|c| c.into_owned())
}

/// A query string's parameters (`+` is a space); the first of repeated names wins.
fn parse_query(q: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for pair in q.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let dec = |s: &str| decode(&s.replace('+', " ")).unwrap_or_default();
        out.entry(dec(k)).or_insert_with(|| dec(v));
    }
    out
}

/// The facade's base URL with its trailing slash, `http://host/fedora/` (Fedora 3's
/// `baseURL`): the REST root's origin.
fn base_of(ctx: &Ctx) -> String {
    let rest = ctx.base_url.trim_end_matches('/');
    let origin = rest
        .strip_suffix(ctx.config.base_path.as_str())
        .unwrap_or(rest);
    format!("{origin}{PATH}/")
}

/// Answers a parsed Fedora 3 request (its access already checked).
pub(crate) async fn handle(ctx: &Ctx, r: Request, req: HttpRequest) -> Result<Response, ApiError> {
    let base = base_of(ctx);
    let views = match &ctx.fedora3 {
        Some(cache) => Views::cached(&ctx.repo, cache),
        None => Views::new(&ctx.repo),
    };
    let api_m = matches!(
        r.call,
        Call::DatastreamProfile(..) | Call::DatastreamHistory(..)
    );
    let err = |e| ApiError::from_fedora3(e, api_m, &ctx.base_url);
    let xml = |api: Api| match api {
        Api::Rest => "text/xml",
        Api::Lite => "text/xml; charset=UTF-8",
    };
    let html_type = |api: Api| match api {
        Api::Rest => "text/html",
        Api::Lite => "text/html; charset=UTF-8",
    };
    // REST answers HTML unless `format=xml`; API-A-LITE unless `xml=true`.
    let wants_html = |api: Api| match api {
        Api::Rest => !r
            .param("format")
            .is_some_and(|f| f.eq_ignore_ascii_case("xml")),
        Api::Lite => !r.flag("xml"),
    };
    let as_of = match r.param("asOfDateTime") {
        Some(text) => Some((
            text.to_string(),
            parse_date(text).ok_or_else(|| {
                ApiError::bad_request(format!("asOfDateTime {text:?} is not a date"))
            })?,
        )),
        None => None,
    };
    let (body, content_type) = match &r.call {
        Call::Describe => (render::describe(&base), xml(Api::Lite)),
        Call::FindObjects(api) => {
            let search = search::Search::from_params(&r.params)?;
            let (rows, session) = search.run(ctx).await?;
            let fields: Vec<&str> = search.fields.iter().map(String::as_str).collect();
            let body = render::find_objects(&rows, &fields, session.as_ref(), &base, *api);
            (body, xml(*api))
        }
        Call::ObjectProfile(api, pid) => {
            let object = views.object(pid).await.map_err(err)?;
            if wants_html(*api) {
                (render::object_profile_html(&object, *api), html_type(*api))
            } else {
                (render::object_profile(&object, &base, *api), xml(*api))
            }
        }
        Call::Datastreams(api, pid) => {
            let object = views.object(pid).await.map_err(err)?;
            let list = match &as_of {
                Some((_, t)) => views.datastreams_as_of(&object, *t).await,
                None => views.datastreams(&object).await,
            }
            .map_err(err)?;
            if *api == Api::Rest && r.flag("profiles") {
                (
                    render::datastream_list_profiles(pid, &list, &base),
                    xml(*api),
                )
            } else if wants_html(*api) {
                (render::datastream_list_html(pid, &list), html_type(*api))
            } else {
                (render::datastream_list(pid, &list, &base, *api), xml(*api))
            }
        }
        Call::DatastreamProfile(pid, dsid) => {
            let object = views.object(pid).await.map_err(err)?;
            let ds = datastream(&views, &object, dsid, as_of.as_ref())
                .await
                .map_err(err)?;
            let date_time = as_of.as_ref().map(|(text, _)| text.as_str());
            (
                render::datastream_profile(&ds.profile, date_time, &base),
                xml(Api::Rest),
            )
        }
        Call::DatastreamHistory(pid, dsid) => {
            let object = views.object(pid).await.map_err(err)?;
            let history = views.datastream_history(&object, dsid).await.map_err(err)?;
            (
                render::datastream_history(pid, dsid, &history, &base),
                xml(Api::Rest),
            )
        }
        Call::ObjectHistory(api, pid) => {
            let object = views.object(pid).await.map_err(err)?;
            let dates = views.object_history(&object).await.map_err(err)?;
            (render::object_history(pid, &dates, *api), xml(*api))
        }
        Call::Relationships(pid) => {
            let object = views.object(pid).await.map_err(err)?;
            let triples = relationships(&views, &object, &r).await.map_err(err)?;
            (render::relationships(&triples), "application/rdf+xml")
        }
        Call::Content {
            api,
            pid,
            dsid,
            date_time,
        } => {
            let when = match date_time {
                Some(text) => Some((
                    text.clone(),
                    parse_date(text)
                        .ok_or_else(|| ApiError::bad_request(format!("{text:?} is not a date")))?,
                )),
                None => as_of,
            };
            let ds = match &when {
                // The hot path: the current content, without reading the object.
                None => views.current_datastream(pid, dsid).await,
                Some(_) => match views.object(pid).await {
                    Ok(object) => datastream(&views, &object, dsid, when.as_ref()).await,
                    Err(e) => Err(e),
                },
            }
            .map_err(err)?;
            let download = *api == Api::Rest && r.flag("download");
            return content::serve(ctx, &ds, *api, download, r.head, req.headers(), &base).await;
        }
        Call::Write => {
            let mut e = ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                format!(
                    "the Fedora 3 API of this repository is read-only; change imported objects through the Fedora API at {}/",
                    ctx.base_url.trim_end_matches('/')
                ),
            );
            e.allow = Some(ALLOW);
            return Err(e);
        }
        Call::NotSupported(what) => {
            return Err(ApiError::new(
                StatusCode::NOT_IMPLEMENTED,
                format!("the Fedora 3 facade does not offer {what}"),
            ))
        }
        Call::NoSuchPath => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("no Fedora 3 call at {}", req.uri().path()),
            ))
        }
    };
    let mut out = crate::response::response(StatusCode::OK, Body::empty());
    set(out.headers_mut(), header::CONTENT_TYPE, content_type);
    set(
        out.headers_mut(),
        header::CONTENT_LENGTH,
        &body.len().to_string(),
    );
    if !r.head {
        *out.body_mut() = Body::from(body);
    }
    Ok(out)
}

/// Datastream `dsid` now or at an `asOfDateTime`.
async fn datastream(
    views: &Views<'_>,
    object: &ObjectView,
    dsid: &str,
    as_of: Option<&(String, arca_model::Timestamp)>,
) -> arca_fedora3::view::Result<DatastreamVersion> {
    match as_of {
        Some((text, t)) => views.datastream_as_of(object, dsid, *t, text).await,
        None => views.datastream(object, dsid).await,
    }
}

/// The statements `relationships` answers: the object's RELS-EXT, or with `subject` naming
/// one of its datastreams that datastream's RELS-INT; only those with `predicate` when
/// given.
async fn relationships(
    views: &Views<'_>,
    object: &ObjectView,
    r: &Request,
) -> arca_fedora3::view::Result<Vec<oxrdf::Triple>> {
    let own = format!("info:fedora/{}", object.pid);
    let mut triples = match r.param("subject").filter(|s| *s != own) {
        Some(subject) => match subject.strip_prefix(&format!("{own}/")) {
            Some(dsid) => views.datastream(object, dsid).await?.rels_int,
            None => Vec::new(),
        },
        None => views.relationships(object).await?,
    };
    if let Some(p) = r.param("predicate") {
        triples.retain(|t| t.predicate.as_str() == p);
    }
    Ok(triples)
}

#[cfg(test)]
mod tests;
