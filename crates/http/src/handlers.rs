//! One function per operation. Each turns a parsed request into kernel calls and builds the
//! response headers the Fedora API requires.

use std::sync::Arc;

use arca_catalog::ResourceRecord;
use arca_model::{DigestAlgorithm, DigestValue, FedoraId, InteractionModel};
use arca_rdf::{vocab, IdMapper, Prefer, RdfFormat, ReturnPref};
use arca_repository::{Error, NewContent, Precondition, Repository, StoredContent};
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use oxrdf::{Literal, NamedNode, NamedOrBlankNode, Term, Triple};

use crate::error::ApiError;
use crate::headers::{self, Condition, DigestError, LinkError, RangeRequest};
use crate::limits::{read_body, BodyBudget};
use crate::listing;
use crate::upload;

/// Per-request context.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub repo: Arc<Repository>,
    pub base_url: String,
    pub user: String,
    pub config: Arc<crate::HttpConfig>,
    pub budget: BodyBudget,
    /// The memento (datetime, seconds since the epoch) this request reads, if any.
    pub memento: Option<i64>,
    /// Access control, for listings and ACL writes.
    pub access: Arc<crate::access::Access>,
    /// Who sent the request.
    pub caller: Arc<crate::access::Caller>,
    /// What the caller's access allows a PATCH to do.
    pub grant: crate::access::Grant,
    /// The Fedora 3 facade's cache of datastream descriptions (when the facade is on).
    pub fedora3: Option<Arc<arca_fedora3::view::DescriptionCache>>,
}

type HandlerResult = Result<Response, ApiError>;

/// Media types accepted as RDF request bodies.
const ACCEPT_POST: &str =
    "text/turtle, application/n-triples, application/ld+json, application/rdf+xml, */*";
const ACCEPT_PATCH: &str = "application/sparql-update";
/// `Vary` of an RDF source's representation.
const RDF_VARY: &str = "Accept, Prefer, Range, Accept-Encoding, Accept-Datetime";
/// `Vary` of a binary's representation.
const BINARY_VARY: &str = "Range, Accept-Datetime";
/// RDF bodies up to this size are parsed on the request's own task.
const INLINE_PARSE: usize = 64 << 10;

impl Ctx {
    pub(crate) fn err(&self, e: Error) -> ApiError {
        ApiError::from_kernel(e, &self.base_url)
    }

    /// The resource this request reads: the current state, or the memento it names.
    pub(crate) async fn record(&self, id: &FedoraId) -> Result<ResourceRecord, Error> {
        match self.memento {
            Some(datetime) => self.repo.memento(id, datetime).await,
            None => self.repo.get(id).await,
        }
    }

    pub(crate) fn url(&self, id: &FedoraId) -> String {
        url_of(&self.base_url, id)
    }

    /// Whether the caller may read `id` (listings show nothing else).
    pub(crate) async fn can_read(&self, id: &FedoraId) -> bool {
        self.access.can_read(&self.repo, &self.caller, id).await
    }

    pub(crate) fn mapper(&self) -> IdMapper {
        IdMapper::new(&self.base_url)
    }
}

/// The external URL of `id` below the REST root `base_url`.
pub(crate) fn url_of(base_url: &str, id: &FedoraId) -> String {
    if id.is_root() {
        // As Fedora 6: the root's URL ends with a slash.
        format!("{base_url}/")
    } else {
        format!("{base_url}/{}", id.encoded_path())
    }
}

pub(crate) fn model_of(record: &ResourceRecord) -> InteractionModel {
    record
        .headers
        .model()
        .unwrap_or(InteractionModel::BasicContainer)
}

fn allow_for(record: &ResourceRecord) -> &'static str {
    match model_of(record) {
        InteractionModel::Acl => crate::acl::ALLOW,
        m if m.is_container() && record.id.is_root() => "GET, HEAD, OPTIONS, POST, PUT, PATCH",
        m if m.is_container() => "GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE",
        InteractionModel::NonRdfSource => "GET, HEAD, OPTIONS, PUT, DELETE",
        _ => "GET, HEAD, OPTIONS, PUT, PATCH",
    }
}

pub(crate) fn set(h: &mut HeaderMap, name: header::HeaderName, value: &str) {
    h.insert(name, header_value(value));
}

pub(crate) fn add_link(h: &mut HeaderMap, value: String) {
    h.append(header::LINK, header_value(&value));
}

/// A binary's `Content-Disposition`, as Fedora 6 sends it: `attachment; filename="…";
/// size=N; creation-date="…"; modification-date="…"`, the filename only when one was given
/// (with an RFC 6266 `filename*` for names that are not ASCII), the dates in HTTP form.
fn content_disposition(record: &ResourceRecord) -> String {
    let h = &record.headers;
    let mut out = match h.filename.as_deref().filter(|f| !f.is_empty()) {
        Some(f) => format!("attachment; {}", filename_params(f)),
        None => "attachment".to_string(),
    };
    if let Some(size) = h.content_size.filter(|s| *s >= 0) {
        out.push_str(&format!("; size={size}"));
    }
    for (param, date) in [
        ("creation-date", &h.created_date),
        ("modification-date", &h.last_modified_date),
    ] {
        if let Some(t) = date.as_deref().and_then(arca_model::parse_instant) {
            let t = std::time::UNIX_EPOCH
                + std::time::Duration::from_secs(t.unix_timestamp().max(0) as u64);
            out.push_str(&format!("; {param}=\"{}\"", httpdate::fmt_http_date(t)));
        }
    }
    out
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

/// A header value for `value`. URLs of resources are IRIs and may hold non-ASCII letters;
/// a header carries them as a URI, so every byte a header cannot hold is percent-encoded
/// (the IRI-to-URI mapping of RFC 3987 §3.1).
fn header_value(value: &str) -> HeaderValue {
    if value.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        if let Ok(v) = HeaderValue::from_str(value) {
            return v;
        }
    }
    let mut ascii = String::with_capacity(value.len() * 3);
    for b in value.bytes() {
        if b.is_ascii() && !b.is_ascii_control() {
            ascii.push(b as char);
        } else {
            ascii.push_str(&format!("%{b:02X}"));
        }
    }
    HeaderValue::from_str(&ascii).expect("printable ASCII is a valid header value")
}

/// The `fedora:` types Fedora 6 names in `Link: rel="type"` besides the LDP ones.
fn fedora_link_types(record: &ResourceRecord, model: InteractionModel) -> Vec<&'static str> {
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

/// The digests the request's `Digest` header asks arca to verify: 400 when malformed or of
/// an unsupported algorithm, 409 when a value cannot match any body.
pub(crate) fn client_digests(ctx: &Ctx, h: &HeaderMap) -> Result<Vec<DigestValue>, ApiError> {
    headers::request_digests(h).map_err(|e| match e {
        DigestError::Malformed(m) => ApiError::bad_request(m),
        DigestError::Unsupported(alg) => ctx.err(Error::UnsupportedDigest(alg)),
        DigestError::Impossible(m) => ctx.err(Error::constraint(
            arca_repository::Constraint::DigestMismatch,
            m,
        )),
    })
}

/// 416 for a range outside a binary of `len` bytes, with `Content-Range: bytes */len`.
pub(crate) fn range_not_satisfiable(len: u64) -> Response {
    let mut e = ApiError::new(
        StatusCode::RANGE_NOT_SATISFIABLE,
        format!("the range is outside the binary's {len} bytes"),
    );
    e.links.clear();
    let mut r = axum::response::IntoResponse::into_response(e);
    set(
        r.headers_mut(),
        header::CONTENT_RANGE,
        &format!("bytes */{len}"),
    );
    r
}

pub(crate) fn response(status: StatusCode, body: Body) -> Response {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r
}

/// Evaluates a write's conditional headers against `record` (412 when they fail).
pub(crate) fn check_write_condition(
    ctx: &Ctx,
    h: &HeaderMap,
    record: &ResourceRecord,
) -> Result<(), ApiError> {
    check_condition(ctx, h, record, false).map(|_| ())
}

fn check_condition(
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

// ---------------------------------------------------------------------------- reads

pub(crate) async fn read(ctx: &Ctx, id: FedoraId, head: bool, req: Request) -> HandlerResult {
    let record = ctx.record(&id).await.map_err(|e| ctx.err(e))?;
    let h = req.headers();
    if let Some(r) = check_condition(ctx, h, &record, true)? {
        return Ok(r);
    }
    let mut out = if model_of(&record).is_binary() {
        read_binary(ctx, &record, head, h).await
    } else {
        read_rdf(ctx, &record, head, req).await
    }?;
    crate::external::advertise(ctx, out.headers_mut());
    if ctx.memento.is_none() && !id.is_acl() {
        // As Fedora 6: the classes a resource's triples state are named with its model's
        // (a binary's are its description's).
        let types = ctx
            .repo
            .stated_types(&record)
            .await
            .map_err(|e| ctx.err(e))?;
        for t in types {
            let t = ctx.mapper().to_external(&t);
            add_link(out.headers_mut(), format!("<{t}>;rel=\"type\""));
        }
        link_linked_acl(ctx, &record, out.headers_mut()).await?;
    }
    Ok(out)
}

/// Names, in place of `fcr:acl`, the RDF source a resource's ACL links to (5.4), in the
/// answers that describe the resource (GET, HEAD, OPTIONS, the 201 of its creation).
async fn link_linked_acl(
    ctx: &Ctx,
    record: &ResourceRecord,
    h: &mut HeaderMap,
) -> Result<(), ApiError> {
    let source = ctx
        .access
        .linked_acl_source(&ctx.repo, &record.id)
        .await
        .map_err(|e| ctx.err(e))?;
    let Some(source) = source else {
        return Ok(());
    };
    let own = format!("<{}>;rel=\"acl\"", ctx.url(&record.id.base().acl()));
    let links: Vec<HeaderValue> = h
        .get_all(header::LINK)
        .iter()
        .filter(|v| v.as_bytes() != own.as_bytes() && *v != header_value(&own))
        .cloned()
        .collect();
    h.remove(header::LINK);
    for v in links {
        h.append(header::LINK, v);
    }
    add_link(h, format!("<{}>;rel=\"acl\"", ctx.url(&source)));
    Ok(())
}

async fn read_binary(
    ctx: &Ctx,
    record: &ResourceRecord,
    head: bool,
    h: &HeaderMap,
) -> HandlerResult {
    serve_binary(ctx, record, head, h, binary_response(ctx, record)).await
}

/// Answers a read of binary `record` with its bytes (a range of them, or none for HEAD),
/// Content-Length and Content-Range, and `Digest` for `Want-Digest`, into `out`, which
/// already has the answer's other headers. External content is proxied or redirected to.
/// The Fedora 3 facade serves datastream content through this too.
pub(crate) async fn serve_binary(
    ctx: &Ctx,
    record: &ResourceRecord,
    head: bool,
    h: &HeaderMap,
    mut out: Response,
) -> HandlerResult {
    if crate::external::location(record).is_some() {
        return crate::external::read(ctx, record, head, h, out).await;
    }
    let wanted = headers::want_digest(h).map_err(ApiError::bad_request)?;
    let content = ctx
        .repo
        .content(record)
        .await
        .map_err(|e| ctx.err(e))?
        .ok_or_else(|| {
            ctx.err(Error::Internal(format!(
                "binary {} has no content file",
                record.id
            )))
        })?;
    let len = record.headers.content_size.unwrap_or(0).max(0) as u64;
    let oh = out.headers_mut();
    if let Some(algs) = wanted {
        let digest = digest_header(record, &content, &algs)
            .await
            .map_err(|e| ctx.err(e))?;
        set(oh, header::HeaderName::from_static("digest"), &digest);
    }
    let (status, start, count) = match headers::range(h, len) {
        RangeRequest::Full => (StatusCode::OK, 0, len),
        RangeRequest::Partial { start, end } => {
            set(
                oh,
                header::CONTENT_RANGE,
                &format!("bytes {start}-{end}/{len}"),
            );
            (StatusCode::PARTIAL_CONTENT, start, end - start + 1)
        }
        RangeRequest::Unsatisfiable => return Ok(range_not_satisfiable(len)),
    };
    *out.status_mut() = status;
    set(
        out.headers_mut(),
        header::CONTENT_LENGTH,
        &count.to_string(),
    );
    if head {
        return Ok(out);
    }
    *out.body_mut() = content_body(&content, start, count)
        .await
        .map_err(|e| ctx.err(Error::Io(e)))?;
    Ok(out)
}

/// The answer body of `count` stored bytes from `start`: read from the file when it is
/// local (see [`file_body`]), else streamed from the store in 256 KiB chunks, read on the
/// blocking pool a few chunks ahead of the client.
pub(crate) async fn content_body(
    content: &StoredContent,
    start: u64,
    count: u64,
) -> std::io::Result<Body> {
    if let Some(path) = content.local_path() {
        return file_body(path, start, count).await;
    }
    const CHUNK: usize = 256 << 10;
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<bytes::Bytes>>(4);
    let content = content.clone();
    let mut reader = tokio::task::spawn_blocking(move || content.open(start..start + count))
        .await
        .map_err(std::io::Error::other)??;
    tokio::task::spawn_blocking(move || {
        use std::io::Read;
        loop {
            let mut buf = vec![0u8; CHUNK];
            let mut filled = 0;
            while filled < CHUNK {
                match reader.read(&mut buf[filled..]) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) => {
                        let _ = tx.blocking_send(Err(e));
                        return;
                    }
                }
            }
            if filled == 0 {
                return;
            }
            buf.truncate(filled);
            if tx.blocking_send(Ok(bytes::Bytes::from(buf))).is_err() {
                // The client went away.
                return;
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    Ok(Body::from_stream(stream))
}

/// A 200 answer with the headers every read of `record` carries whatever its content and
/// the request: the resource headers, and a binary's Content-Type, Accept-Ranges and
/// Content-Disposition (the TimeGate's redirect repeats them).
pub(crate) fn read_headers(ctx: &Ctx, record: &ResourceRecord) -> Response {
    let mut out = if model_of(record).is_binary() {
        binary_response(ctx, record)
    } else {
        let mut out = response(StatusCode::OK, Body::empty());
        resource_headers(ctx, record, out.headers_mut());
        set(out.headers_mut(), header::VARY, RDF_VARY);
        out
    };
    crate::external::advertise(ctx, out.headers_mut());
    out
}

/// A 200 answer about a binary with the headers every read of it carries: resource headers,
/// Content-Type, Accept-Ranges and Content-Disposition.
fn binary_response(ctx: &Ctx, record: &ResourceRecord) -> Response {
    let mut out = response(StatusCode::OK, Body::empty());
    let oh = out.headers_mut();
    resource_headers(ctx, record, oh);
    set(
        oh,
        header::CONTENT_TYPE,
        record
            .headers
            .mime_type
            .as_deref()
            .unwrap_or("application/octet-stream"),
    );
    set(oh, header::ACCEPT_RANGES, "bytes");
    set(
        oh,
        header::CONTENT_DISPOSITION,
        &content_disposition(record),
    );
    set(oh, header::VARY, BINARY_VARY);
    out
}

/// Small files are read at once (inline: they come from the page cache, and a hop to the
/// blocking pool costs more than the read); large ones stream in 256 KiB chunks.
pub(crate) async fn file_body(
    path: &std::path::Path,
    start: u64,
    count: u64,
) -> std::io::Result<Body> {
    const INLINE: u64 = 64 << 10;
    const SMALL: u64 = 256 << 10;
    let read = move |path: &std::path::Path| -> std::io::Result<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = std::fs::File::open(path)?;
        if start > 0 {
            f.seek(SeekFrom::Start(start))?;
        }
        let mut buf = Vec::with_capacity(count as usize);
        f.take(count).read_to_end(&mut buf)?;
        Ok(buf)
    };
    if count <= INLINE {
        return Ok(Body::from(read(path)?));
    }
    if count <= SMALL {
        let path = path.to_path_buf();
        let bytes = tokio::task::spawn_blocking(move || read(&path))
            .await
            .map_err(std::io::Error::other)??;
        return Ok(Body::from(bytes));
    }
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let mut f = tokio::fs::File::open(path).await?;
    if start > 0 {
        f.seek(std::io::SeekFrom::Start(start)).await?;
    }
    let stream = tokio_util::io::ReaderStream::with_capacity(f.take(count), 256 << 10);
    Ok(Body::from_stream(stream))
}

/// `Digest` answer for `Want-Digest`, in hex as Fedora writes it. Stored digests are used
/// when present; others are computed from the content.
async fn digest_header(
    record: &ResourceRecord,
    content: &StoredContent,
    algs: &[DigestAlgorithm],
) -> Result<String, Error> {
    let stored = record.headers.digest_values();
    let missing: Vec<DigestAlgorithm> = algs
        .iter()
        .copied()
        .filter(|a| !stored.iter().any(|d| d.algorithm == *a))
        .collect();
    let mut computed = Vec::new();
    if !missing.is_empty() {
        let content = content.clone();
        computed = tokio::task::spawn_blocking(move || {
            arca_repository::digest_reader(&mut content.open(0..u64::MAX)?, &missing)
        })
        .await
        .map_err(std::io::Error::other)??
        .1;
    }
    let parts: Vec<String> = algs
        .iter()
        .filter_map(|a| {
            stored
                .iter()
                .chain(computed.iter())
                .find(|d| d.algorithm == *a)
                .map(|d| format!("{}={}", a.http_token(), d.hex))
        })
        .collect();
    Ok(parts.join(", "))
}

async fn read_rdf(ctx: &Ctx, record: &ResourceRecord, head: bool, req: Request) -> HandlerResult {
    let h = req.headers();
    let accept = h.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = RdfFormat::negotiate(accept).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_ACCEPTABLE,
            "this resource is available as text/turtle, application/ld+json, application/n-triples or application/rdf+xml",
        )
    })?;
    let prefer = Prefer::parse(h.get_all("prefer").iter().filter_map(|v| v.to_str().ok()));
    let query = listing::Paging::from_query(req.uri().query(), prefer.max_member_count)
        .map_err(ApiError::bad_request)?;
    let mut out = response(StatusCode::OK, Body::empty());
    let oh = out.headers_mut();
    resource_headers(ctx, record, oh);
    set(oh, header::CONTENT_TYPE, &rdf_content_type(format));
    set(oh, header::VARY, RDF_VARY);
    let container = model_of(record).is_container();
    let embed = container && prefer.wants(vocab::OA_PREFER_CONTAINED_DESCRIPTIONS);
    // As Fedora 6: `return=representation` is applied (and said so) without a Prefer too.
    let ret = prefer
        .return_representation
        .unwrap_or(ReturnPref::Representation);
    set(
        oh,
        header::HeaderName::from_static("preference-applied"),
        &preference_applied(ret, &prefer, embed),
    );
    // `omit="ldp:PreferMinimalContainer"` leaves out the resource's own triples.
    let own = prefer.wants(vocab::LDP_PREFER_MINIMAL_CONTAINER);
    let mut triples = if own {
        ctx.repo.triples(record).map_err(|e| ctx.err(e))?
    } else {
        Vec::new()
    };
    let managed = prefer.wants(vocab::FEDORA_SERVER_MANAGED);
    if managed {
        server_managed_triples(ctx, record, &mut triples)
            .await
            .map_err(|e| ctx.err(e))?;
    }
    let contains = container && prefer.wants(vocab::LDP_PREFER_CONTAINMENT);
    let wanted = listing::Wanted {
        children: contains || embed,
        contains,
        membership: prefer.wants(vocab::LDP_PREFER_MEMBERSHIP),
        references: prefer.wants(vocab::FEDORA_PREFER_INBOUND_REFERENCES),
    };
    let listed = match ctx.memento {
        // A memento lists the children the container had then (Fedora 6 does too), and
        // no membership or references (the catalog keeps those for the head only).
        Some(datetime) => listing::children_at(ctx, record, &wanted, datetime)
            .await
            .map_err(|e| ctx.err(e))?,
        None => listing::list(ctx, record, &wanted, &query)
            .await
            .map_err(|e| ctx.err(e))?,
    };
    triples.extend(listed.triples);
    if let Some(after) = listed.next {
        let url = ctx.url(&record.id);
        let limit = query.limit.unwrap_or(listing::MAX_PAGE);
        let cursor =
            percent_encoding::utf8_percent_encode(&after, percent_encoding::NON_ALPHANUMERIC);
        add_link(
            out.headers_mut(),
            format!("<{url}?limit={limit}&after={cursor}>;rel=\"next\""),
        );
    }
    if embed {
        contained_descriptions(ctx, &listed.children, own, managed, &mut triples)
            .await
            .map_err(|e| ctx.err(e))?;
    }
    // HEAD serializes too: its headers, Content-Length included, are GET's.
    let body =
        arca_rdf::serialize(&triples, format, &ctx.mapper()).map_err(|e| ctx.err(Error::Rdf(e)))?;
    set(
        out.headers_mut(),
        header::CONTENT_LENGTH,
        &body.len().to_string(),
    );
    if !head {
        *out.body_mut() = Body::from(body);
    }
    Ok(out)
}

/// The Content-Type of an RDF answer, as Fedora 6 sends it: Turtle with `charset=utf-8`, the
/// other syntaxes (UTF-8 by definition) without.
pub(crate) fn rdf_content_type(format: RdfFormat) -> String {
    match format {
        RdfFormat::Turtle => format!("{};charset=utf-8", format.media_type()),
        _ => format.media_type().to_string(),
    }
}

/// The `Preference-Applied` value of an answer honouring `prefer`: the return preference
/// with the include and omit lists Fedora 6 echoes (the embedded descriptions are named
/// when a container embeds them).
fn preference_applied(ret: ReturnPref, prefer: &Prefer, embed: bool) -> String {
    let mut v = match ret {
        ReturnPref::Minimal => return "return=minimal".to_string(),
        ReturnPref::Representation => "return=representation".to_string(),
    };
    let mut include: Vec<&str> = prefer
        .include
        .iter()
        .map(String::as_str)
        .filter(|i| *i != vocab::OA_PREFER_CONTAINED_DESCRIPTIONS || embed)
        .collect();
    include.dedup();
    if !include.is_empty() {
        v.push_str(&format!("; include=\"{}\"", include.join(" ")));
    }
    let omit: Vec<&str> = prefer.omitted().collect();
    if !omit.is_empty() {
        v.push_str(&format!("; omit=\"{}\"", omit.join(" ")));
    }
    v
}

/// Adds the descriptions of `children` (`oa:PreferContainedDescriptions`): an RDF source's
/// own triples, a binary's description (about the binary), when `own`, with their
/// server-managed triples when `managed`. Children deleted meanwhile are skipped.
async fn contained_descriptions(
    ctx: &Ctx,
    children: &[FedoraId],
    own: bool,
    managed: bool,
    out: &mut Vec<Triple>,
) -> Result<(), Error> {
    for child in children {
        let record = match ctx.repo.get(child).await {
            Ok(r) => r,
            Err(Error::NotFound(_) | Error::Gone(_)) => continue,
            Err(e) => return Err(e),
        };
        let described = if model_of(&record).is_binary() {
            ctx.repo.get(&child.description()).await?
        } else {
            record.clone()
        };
        if own {
            out.extend(ctx.repo.triples(&described)?);
        }
        if managed {
            server_managed_triples(ctx, &record, out).await?;
        }
    }
    Ok(())
}

/// The statements of when a resource was created and last modified, and by whom as far as
/// its header says, about `subject` (in Fedora 6's order).
pub(crate) fn audit_triples(
    subject: &NamedOrBlankNode,
    h: &arca_model::ResourceHeaders,
    out: &mut Vec<Triple>,
) {
    let date = |d: &str| -> Term {
        Literal::new_typed_literal(d, NamedNode::new_unchecked(vocab::XSD_DATETIME)).into()
    };
    let plain = |u: &str| -> Term { Literal::new_simple_literal(u).into() };
    let dates = [
        (vocab::FEDORA_CREATED, h.created_date.as_deref().map(date)),
        (
            vocab::FEDORA_LAST_MODIFIED,
            h.last_modified_date.as_deref().map(date),
        ),
    ];
    let by = [
        (vocab::FEDORA_CREATED_BY, h.created_by.as_deref().map(plain)),
        (
            vocab::FEDORA_LAST_MODIFIED_BY,
            h.last_modified_by.as_deref().map(plain),
        ),
    ];
    for (p, o) in dates.into_iter().chain(by) {
        if let Some(o) = o {
            out.push(Triple::new(subject.clone(), NamedNode::new_unchecked(p), o));
        }
    }
}

async fn server_managed_triples(
    ctx: &Ctx,
    record: &ResourceRecord,
    out: &mut Vec<Triple>,
) -> Result<(), Error> {
    let model = model_of(record);
    // A description speaks about its binary.
    let (subject_record, subject_model) = if model == InteractionModel::NonRdfSourceDescription {
        let binary_id = record.id.base();
        let binary = match ctx.memento {
            // A description's memento speaks about the binary as it was then; the binary
            // may not have changed in that version, so it need not have a memento there.
            Some(datetime) => ctx.repo.memento_in_force(&binary_id, datetime).await?,
            None => ctx.repo.get(&binary_id).await?,
        };
        (binary, InteractionModel::NonRdfSource)
    } else {
        (record.clone(), model)
    };
    let s: NamedOrBlankNode = NamedNode::new_unchecked(subject_record.id.iri()).into();
    let mut add = |p: &str, o: Term| {
        out.push(Triple::new(s.clone(), NamedNode::new_unchecked(p), o));
    };
    let iri = |i: &str| -> Term { NamedNode::new_unchecked(i).into() };
    for t in subject_model.rdf_types() {
        add(vocab::RDF_TYPE, iri(t));
    }
    let fedora_types: &[&str] = if subject_model.is_binary() {
        &["Binary", "Resource"]
    } else if subject_model.is_typed_container() {
        &["Container", "Resource"]
    } else {
        &["Resource"]
    };
    for t in fedora_types {
        add(vocab::RDF_TYPE, iri(&format!("{}{t}", vocab::FEDORA_NS)));
    }
    if subject_record.id.is_root() {
        add(
            vocab::RDF_TYPE,
            iri(&format!("{}RepositoryRoot", vocab::FEDORA_NS)),
        );
        add(
            vocab::FEDORA_HAS_TRANSACTION_PROVIDER,
            iri(&format!(
                "{}/fcr:tx",
                subject_record.id.iri().trim_end_matches('/')
            )),
        );
    }
    let h = &subject_record.headers;
    audit_triples(&s, h, out);
    let plain = |v: &Option<String>| -> Option<Term> {
        v.as_ref().map(|d| Literal::new_simple_literal(d).into())
    };
    let mut add = |p: &str, o: Term| {
        out.push(Triple::new(s.clone(), NamedNode::new_unchecked(p), o));
    };
    // No fedora:hasParent: Fedora 6.1 states none (containment says it).
    if model == InteractionModel::NonRdfSourceDescription {
        let fixity = format!("{}/fcr:fixity", subject_record.id.iri());
        add(vocab::FEDORA_HAS_FIXITY_SERVICE, iri(&fixity));
    }
    if subject_model.is_binary() {
        if let Some(size) = h.content_size {
            add(
                vocab::PREMIS_HAS_SIZE,
                Literal::new_typed_literal(
                    size.to_string(),
                    NamedNode::new_unchecked(vocab::XSD_LONG),
                )
                .into(),
            );
        }
        if let Some(m) = plain(&h.mime_type) {
            add(vocab::EBUCORE_HAS_MIME_TYPE, m);
        }
        if let Some(f) = plain(&h.filename) {
            add(vocab::EBUCORE_FILENAME, f);
        }
        for d in h.digests.iter().flatten() {
            add(vocab::PREMIS_HAS_MESSAGE_DIGEST, iri(d));
        }
    }
    Ok(())
}

pub(crate) async fn options(ctx: &Ctx, id: FedoraId) -> HandlerResult {
    let record = ctx.record(&id).await.map_err(|e| ctx.err(e))?;
    let mut out = response(StatusCode::OK, Body::empty());
    let h = out.headers_mut();
    resource_headers(ctx, &record, h);
    // As Fedora 6: OPTIONS carries no validators (it has no representation to validate).
    for name in [header::ETAG, header::LAST_MODIFIED] {
        h.remove(name);
    }
    h.remove("x-state-token");
    crate::external::advertise(ctx, h);
    if ctx.memento.is_none() && !id.is_acl() {
        link_linked_acl(ctx, &record, out.headers_mut()).await?;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------- writes

/// How a request body is to be taken.
enum BodyKind {
    Rdf(RdfFormat),
    Binary,
}

/// Decides from Link type, Content-Type and the target model how to read the body.
fn body_kind(
    h: &HeaderMap,
    link: Option<InteractionModel>,
    existing: Option<InteractionModel>,
) -> Result<BodyKind, ApiError> {
    let content_type = h
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let rdf_format = content_type.as_deref().and_then(RdfFormat::from_media_type);
    let model = existing.or(link);
    match model {
        Some(InteractionModel::NonRdfSource) => Ok(BodyKind::Binary),
        Some(_) => match (&content_type, rdf_format) {
            (None, _) => Ok(BodyKind::Rdf(RdfFormat::Turtle)),
            (Some(_), Some(f)) => Ok(BodyKind::Rdf(f)),
            (Some(ct), None) => Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("{ct} is not an RDF media type; RDF sources accept text/turtle, application/n-triples, application/ld+json, application/rdf+xml"),
            )),
        },
        // No model named: RDF media types make a container, anything else a binary.
        // text/plain is N-Triples for RDF sources but, as in Fedora, a binary on creation.
        None => match (content_type.as_deref(), rdf_format) {
            (Some(ct), Some(f)) if !ct.trim().to_ascii_lowercase().starts_with("text/plain") => {
                Ok(BodyKind::Rdf(f))
            }
            (None, _) => Ok(BodyKind::Rdf(RdfFormat::Turtle)),
            _ => Ok(BodyKind::Binary),
        },
    }
}

/// Reads the body as the RDF (in `format`) of resource `id`: `<>` is the resource (a
/// description's statements are about its binary).
pub(crate) async fn read_rdf_body(
    ctx: &Ctx,
    id: &FedoraId,
    format: RdfFormat,
    req: Request,
) -> Result<NewContent, ApiError> {
    let h = req.headers().clone();
    let prefer = Prefer::parse(h.get_all("prefer").iter().filter_map(|v| v.to_str().ok()));
    let limits = &ctx.config.limits;
    let body = read_body(
        &h,
        limits.timed(req.into_body()),
        limits.max_rdf_body,
        "RDF body (limit max_rdf_body)",
        &ctx.budget,
    )
    .await?;
    // A description's statements are about its binary.
    let subject = if id.is_description() {
        id.base()
    } else {
        id.clone()
    };
    let url = ctx.url(&subject);
    let (mapper, rdf_limits) = (ctx.mapper(), limits.rdf.clone());
    let inline = body.bytes.len() <= INLINE_PARSE;
    let parse = move || arca_rdf::parse(&body.bytes, format, &url, &mapper, &rdf_limits);
    // Small bodies parse faster than a hop to the blocking pool; large ones must not
    // hold an async worker.
    let triples = if inline {
        parse()
    } else {
        tokio::task::spawn_blocking(parse)
            .await
            .map_err(|e| ctx.err(Error::Internal(format!("parsing did not finish: {e}"))))?
    }
    .map_err(|e| ctx.err(Error::Rdf(e)))?;
    Ok(NewContent::Rdf {
        triples,
        lenient: prefer.lenient,
    })
}

/// Reads the body as the new content of resource `id`.
async fn read_content(
    ctx: &Ctx,
    id: &FedoraId,
    kind: BodyKind,
    req: Request,
) -> Result<NewContent, ApiError> {
    let h = req.headers().clone();
    match kind {
        BodyKind::Rdf(format) => read_rdf_body(ctx, id, format, req).await,
        BodyKind::Binary => {
            let expected = client_digests(ctx, &h)?;
            let object_digest = ctx
                .repo
                .content_digest_for(id)
                .await
                .map_err(|e| ctx.err(e))?;
            let binary = upload::receive(
                ctx.config.limits.timed(req.into_body()),
                ctx.repo.uploads_dir(),
                upload::algorithms(object_digest, &expected),
                &ctx.budget,
            )
            .await
            .map_err(|e| ctx.err(e))?;
            let mime = h
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/octet-stream")
                .to_string();
            Ok(NewContent::Binary {
                binary,
                mime,
                filename: headers::content_disposition_filename(&h),
                expected,
            })
        }
    }
}

/// The interaction model the `Link` headers name; malformed links and unknown types get
/// 400 as in Fedora 6 (the latter with constrainedBy), models arca cannot create yet 409.
fn link_type(ctx: &Ctx, h: &HeaderMap) -> Result<headers::TypeLinks, ApiError> {
    headers::link_type(h).map_err(|e| match e {
        LinkError::Malformed(m) => ApiError::bad_request(m),
        LinkError::UnknownType(m) => {
            let mut e = ctx.err(Error::constraint(
                arca_repository::Constraint::InteractionModel,
                m,
            ));
            e.status = StatusCode::BAD_REQUEST;
            e
        }
        LinkError::Unsupported(m) => ctx.err(Error::constraint(
            arca_repository::Constraint::Unsupported,
            m,
        )),
    })
}

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

pub(crate) async fn create(ctx: &Ctx, parent: FedoraId, req: Request) -> HandlerResult {
    let h = req.headers().clone();
    let external = crate::external::from_headers(ctx, &h).await?;
    let parent_record = ctx.repo.get(&parent).await.map_err(|e| ctx.err(e))?;
    if model_of(&parent_record).is_binary() {
        // As Fedora 6.1 answers (409 with constrainedBy rather than 405).
        return Err(ctx.err(Error::constraint(
            arca_repository::Constraint::InteractionModel,
            format!(
                "{} is a binary (ldp:NonRDFSource); binaries cannot contain other resources",
                ctx.url(&parent)
            ),
        )));
    }
    if !model_of(&parent_record).is_container() {
        return Err(ApiError::method_not_allowed(allow_for(&parent_record)));
    }
    let link = link_type(ctx, &h)?;
    let id = mint_id(ctx, &parent, &h).await?;
    create_new(ctx, id, link, &h, external, req).await
}

/// Creates a resource at a free `id` (POST and PUT-to-create): the body's kind and the
/// `Link` type decide the interaction model.
async fn create_new(
    ctx: &Ctx,
    id: FedoraId,
    types: headers::TypeLinks,
    h: &HeaderMap,
    external: Option<crate::external::ExternalRequest>,
    req: Request,
) -> HandlerResult {
    let link = types.model;
    // 5.4: an existing RDF source named as the new resource's ACL, checked before anything
    // is read or written.
    let acl_source = acl_link_source(ctx, &id, h).await?;
    // External content is a binary whatever else the request says, as in Fedora 6.
    let kind = match external {
        Some(_) => BodyKind::Binary,
        None => body_kind(h, link, None)?,
    };
    let model = match (&kind, link) {
        (BodyKind::Binary, _) => InteractionModel::NonRdfSource,
        (BodyKind::Rdf(_), Some(m)) => m,
        (BodyKind::Rdf(_), None) => InteractionModel::BasicContainer,
    };
    let content = match external {
        Some(x) => crate::external::content(ctx, &id, x, h).await?,
        None => read_content(ctx, &id, kind, req).await?,
    };
    ctx.access
        .authorize_named_membership(&ctx.repo, &ctx.caller, &id, model, &content, |i| ctx.url(i))
        .await?;
    let record = ctx
        .repo
        .create(id, model, types.archival_group, content, &ctx.user)
        .await
        .map_err(|e| ctx.err(e))?;
    let Some(source) = acl_source else {
        return Ok(created_response(ctx, &record));
    };
    let acl_id = record.id.acl();
    let link = arca_auth::webac::acl_link(acl_id.as_str(), source.as_str());
    ctx.repo
        .put_acl(&record.id, vec![link], false, &ctx.user, None)
        .await
        .map_err(|e| ctx.err(e))?;
    let mut out = created_response(ctx, &record);
    link_linked_acl(ctx, &record, out.headers_mut()).await?;
    Ok(out)
}

/// The RDF source a creation's `Link: <source>; rel="acl"` names as the ACL of new resource
/// `id` (Fedora API §5.4), once checked: one link, to an existing, live RDF source of this
/// repository (not a binary), from a caller who may set the ACL of `id`. Anything else is
/// refused with 409 and `constrainedBy` (403 for a caller without acl:Control).
async fn acl_link_source(
    ctx: &Ctx,
    id: &FedoraId,
    h: &HeaderMap,
) -> Result<Option<FedoraId>, ApiError> {
    let links = headers::links_with_rel(h, "acl");
    let Some((target, _)) = links.first() else {
        return Ok(None);
    };
    let refuse = |why: String| {
        ctx.err(Error::constraint(
            arca_repository::Constraint::Acl,
            format!("the ACL named with rel=\"acl\" cannot be used: {why}"),
        ))
    };
    if links.len() > 1 {
        return Err(refuse(
            "a resource has one ACL, and the request names several".into(),
        ));
    }
    // A path is taken on this server (`</rest/acls/shared>`).
    let root = ctx.url(&FedoraId::root());
    let absolute = match target.strip_prefix('/') {
        Some(path) => {
            let origin_end = root
                .find("://")
                .and_then(|i| root[i + 3..].find('/').map(|j| i + 3 + j));
            format!("{}/{path}", &root[..origin_end.unwrap_or(root.len())])
        }
        None => target.clone(),
    };
    let source = ctx
        .mapper()
        .to_internal(&absolute)
        .and_then(|internal| FedoraId::from_internal(&internal).ok())
        .ok_or_else(|| refuse(format!("<{target}> is not a resource of this repository")))?;
    match ctx.repo.lookup(&source).await.map_err(|e| ctx.err(e))? {
        None => return Err(refuse(format!("<{target}> does not exist"))),
        Some(r) if r.is_deleted() => return Err(refuse(format!("<{target}> is gone (deleted)"))),
        Some(r) if model_of(&r).is_binary() => {
            return Err(refuse(format!(
                "<{target}> is a binary; an ACL is an RDF source"
            )))
        }
        Some(_) => {}
    }
    ctx.access
        .authorize_acl_link(&ctx.repo, &ctx.caller, id, |i| ctx.url(i))
        .await?;
    Ok(Some(source))
}

/// The id of a POSTed child: the Slug if it is free and valid, a UUID otherwise.
async fn mint_id(ctx: &Ctx, parent: &FedoraId, h: &HeaderMap) -> Result<FedoraId, ApiError> {
    // Raw UTF-8 is taken as UTF-8 (clients send it unencoded), not dropped for a UUID.
    if let Some(slug) = h.get("slug").map(|v| v.as_bytes()) {
        let slug = std::str::from_utf8(slug)
            .map_err(|_| ApiError::bad_request("the Slug is not valid UTF-8"))?;
        let slug = percent_encoding::percent_decode_str(slug.trim())
            .decode_utf8()
            .map_err(|_| ApiError::bad_request("the Slug is not valid UTF-8"))?;
        // As in Fedora 6: slashes at either end are dropped, inner ones make a path below
        // the parent (intermediate containers need not exist).
        let slug = slug.trim_matches('/');
        if !slug.is_empty() {
            let id = parent
                .child(slug)
                .map_err(|e| ctx.err(Error::InvalidId(e)))?;
            // A taken name (a ghost node too) gets a minted id, as in Fedora 6.
            if !ctx.repo.is_taken(&id).await.map_err(|e| ctx.err(e))? {
                return Ok(id);
            }
        }
    }
    parent
        .child(&uuid::Uuid::new_v4().to_string())
        .map_err(|e| ctx.err(Error::InvalidId(e)))
}

pub(crate) async fn put(ctx: &Ctx, id: FedoraId, req: Request) -> HandlerResult {
    let h = req.headers().clone();
    let external = crate::external::from_headers(ctx, &h).await?;
    let types = link_type(ctx, &h)?;
    // The ArchivalGroup type on an existing resource is ignored, as Fedora 6 does.
    let link = types.model;
    let existing = ctx.repo.lookup(&id).await.map_err(|e| ctx.err(e))?;
    match existing {
        Some(r) if r.is_deleted() => Err(ctx.err(Error::Gone(id))),
        Some(record) => {
            check_condition(ctx, &h, &record, false)?;
            // A changed interaction model is refused before the body is read, so that a
            // body that only fits the asked-for model gives 409, not a parse error.
            if let Some(asked) = link.filter(|m| *m != model_of(&record)) {
                return Err(ctx.err(Error::constraint(
                    arca_repository::Constraint::InteractionModel,
                    format!(
                        "the interaction model of {} is <{}> and cannot be changed to <{asked}>",
                        ctx.url(&id),
                        model_of(&record)
                    ),
                )));
            }
            let kind = body_kind(&h, link, Some(model_of(&record)))?;
            let content = match (external, kind) {
                (Some(x), BodyKind::Binary) => crate::external::content(ctx, &id, x, &h).await?,
                (Some(_), BodyKind::Rdf(_)) => {
                    return Err(ctx.err(Error::constraint(
                        arca_repository::Constraint::InteractionModel,
                        format!(
                            "{} is an RDF source; external content can only replace a binary's",
                            ctx.url(&id)
                        ),
                    )))
                }
                (None, kind) => read_content(ctx, &id, kind, req).await?,
            };
            ctx.access
                .authorize_named_membership(
                    &ctx.repo,
                    &ctx.caller,
                    &id,
                    model_of(&record),
                    &content,
                    |i| ctx.url(i),
                )
                .await?;
            let record = ctx
                .repo
                .replace(&id, link, content, &ctx.user, write_precondition(&h))
                .await
                .map_err(|e| ctx.err(e))?;
            let mut out = response(StatusCode::NO_CONTENT, Body::empty());
            resource_headers(ctx, &record, out.headers_mut());
            crate::external::content_location(&record, out.headers_mut());
            Ok(out)
        }
        None => {
            if h.contains_key(header::IF_MATCH) {
                return Err(ctx.err(Error::PreconditionFailed(
                    "If-Match was sent but the resource does not exist".into(),
                )));
            }
            create_new(ctx, id, types, &h, external, req).await
        }
    }
}

pub(crate) async fn patch(ctx: &Ctx, id: FedoraId, req: Request) -> HandlerResult {
    let h = req.headers().clone();
    let record = ctx.repo.get(&id).await.map_err(|e| ctx.err(e))?;
    if model_of(&record).is_binary() {
        return Err(ApiError::method_not_allowed(allow_for(&record)));
    }
    let ct = h
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case("application/sparql-update")
    {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("PATCH takes application/sparql-update, not {ct:?}"),
        ));
    }
    check_condition(ctx, &h, &record, false)?;
    let limits = &ctx.config.limits;
    let body = read_body(
        &h,
        limits.timed(req.into_body()),
        limits.max_sparql_body,
        "SPARQL update (limit max_sparql_body)",
        &ctx.budget,
    )
    .await?;
    // The share of the memory budget is held until the update has run.
    let (update, share) = body.into_text("SPARQL update")?;
    let rdf_limits = limits.rdf.clone();
    let prefer = Prefer::parse(h.get_all("prefer").iter().filter_map(|v| v.to_str().ok()));
    let subject = if id.is_description() {
        id.base()
    } else {
        id.clone()
    };
    let url = ctx.url(&subject);
    let mapper = ctx.mapper();
    // acl:Append without acl:Write adds triples, never removes one (5.7.1).
    let scope = match ctx.grant {
        crate::access::Grant::AppendOnly => arca_rdf::UpdateScope::InsertOnly,
        crate::access::Grant::Full => arca_rdf::UpdateScope::Any,
    };
    let acl_check = id.is_acl().then(|| (ctx.access.clone(), id.clone()));
    let membership = patch_membership(ctx, &id, &record, &update, &url).await?;
    let apply = Box::new(move |triples: Vec<Triple>| {
        let result =
            arca_rdf::apply_sparql_update_as(&triples, &update, &url, &mapper, &rdf_limits, scope)
                .map_err(Error::Rdf);
        drop(share);
        let mut updated = result?;
        if let Some((access, acl_id)) = &acl_check {
            updated = access.prepare_acl(acl_id, updated)?;
        }
        if let Some(m) = &membership {
            m.check(&updated)?;
        }
        Ok(updated)
    });
    let record = ctx
        .repo
        .patch(
            &id,
            apply,
            prefer.lenient,
            &ctx.user,
            write_precondition(&h),
        )
        .await
        .map_err(|e| match e {
            // A refusal of what the caller may do: 401 for anonymous callers, as every other.
            Error::Rdf(arca_rdf::RdfError::NotInsertOnly(m)) => ctx.access.refuse(&ctx.caller, m),
            e => ctx.err(e),
        })?;
    let mut out = response(StatusCode::NO_CONTENT, Body::empty());
    resource_headers(ctx, &record, out.headers_mut());
    Ok(out)
}

/// The membership resources a non-admin's PATCH of a direct or indirect container may
/// leave it with: its current one, and the one the update names if the caller may write
/// that (checked here, on the update applied to the current triples).
struct PatchMembership {
    id: FedoraId,
    model: InteractionModel,
    allowed: [Option<FedoraId>; 2],
}

impl PatchMembership {
    /// Refuses an updated state naming another membership resource (the container changed
    /// between the check and the update).
    fn check(&self, updated: &[Triple]) -> Result<(), Error> {
        let now = arca_repository::membership::membership_resource(&self.id, self.model, updated);
        if self.allowed.contains(&now) {
            return Ok(());
        }
        Err(Error::NotPermitted(format!(
            "the membership resource of {} changed while this update was checked; send it again",
            self.id
        )))
    }
}

async fn patch_membership(
    ctx: &Ctx,
    id: &FedoraId,
    record: &ResourceRecord,
    update: &str,
    url: &str,
) -> Result<Option<PatchMembership>, ApiError> {
    let model = model_of(record);
    if ctx.caller.is_admin() || !model.generates_membership() {
        return Ok(None);
    }
    let current = ctx.repo.triples(record).map_err(|e| ctx.err(e))?;
    let before = arca_repository::membership::membership_resource(id, model, &current);
    let limits = &ctx.config.limits.rdf;
    // A malformed update fails the same way when it is applied for real.
    let after = arca_rdf::apply_sparql_update(&current, update, url, &ctx.mapper(), limits)
        .ok()
        .and_then(|t| arca_repository::membership::membership_resource(id, model, &t));
    if let Some(named) = after.as_ref().filter(|a| Some(*a) != before.as_ref()) {
        ctx.access
            .authorize_membership(&ctx.repo, &ctx.caller, named, |i| ctx.url(i))
            .await?;
    }
    Ok(Some(PatchMembership {
        id: id.clone(),
        model,
        allowed: [before, after],
    }))
}

pub(crate) async fn delete(ctx: &Ctx, id: FedoraId, req: Request) -> HandlerResult {
    let record = ctx.repo.get(&id).await.map_err(|e| ctx.err(e))?;
    if !allow_for(&record).contains("DELETE") {
        return Err(ApiError::method_not_allowed(allow_for(&record)));
    }
    check_condition(ctx, req.headers(), &record, false)?;
    ctx.repo
        .delete(&id, &ctx.user, write_precondition(req.headers()))
        .await
        .map_err(|e| ctx.err(e))?;
    Ok(response(StatusCode::NO_CONTENT, Body::empty()))
}

pub(crate) async fn purge(ctx: &Ctx, id: FedoraId) -> HandlerResult {
    ctx.repo
        .purge(&id, &ctx.user)
        .await
        .map_err(|e| ctx.err(e))?;
    Ok(response(StatusCode::NO_CONTENT, Body::empty()))
}
