//! External content (Fedora API §3.9), as Fedora 6 answers it.
//!
//! A write names its content with `Link: <URL>; rel="http://fedora.info/definitions/fcrepo#ExternalContent";
//! handling="copy|redirect|proxy"; type="media/type"` instead of a body:
//!
//! - `copy` fetches the URL and stores the bytes exactly like an upload (streamed to
//!   `staging/uploads`, hashed on the way, the client's `Digest` checked);
//! - `redirect` and `proxy` store the URL; the remote size and media type are taken from the
//!   location when the link has no `type`. GET and HEAD then answer `307` with `Location` (redirect)
//!   or stream the location's bytes, byte ranges included (proxy), both with
//!   `Content-Location: URL`; `Want-Digest` is answered by hashing the remote bytes.
//!
//! URLs must be under a prefix of the configured allow-list ([`arca_repository::AllowList`]);
//! `file:`, `http:` and `https:` URLs work. `https:` goes through rustls ([`ExternalClient`]),
//! trusting the system's roots and the setting `external_content_ca_file`; remote redirects
//! are not followed (a 3xx answer is an error, so a redirect cannot leave the allow-list).
//! Every refusal is 400 with a constrainedBy link, as Fedora 6 answers; nothing is stored.
//! A stored location that fails when read is 502.

use std::sync::Arc;
use std::time::Duration;

use arca_catalog::ResourceRecord;
use arca_model::{DigestAlgorithm, DigestValue, FedoraId, MultiHasher};
use arca_repository::{
    CheckedUrl, Constraint, Error, ExternalHandling, ExternalLocation, NewContent, ReceivedBinary,
};
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::StreamExt;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use http_body_util::Empty;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::context::Ctx;
use crate::error::ApiError;
use crate::handlers;
use crate::headers::{self, RangeRequest};
use crate::response::set;

/// What `Accept-External-Content-Handling` announces.
const HANDLINGS: &str = "copy,redirect,proxy";
/// Longest wait for a remote server to answer with its status and headers.
const REMOTE_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for a connection to a remote server, TLS handshake included.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A write's external content, checked against the allow-list.
#[derive(Debug)]
pub(crate) struct ExternalRequest {
    url: CheckedUrl,
    handling: ExternalHandling,
    /// The link's `type` attribute.
    mime: Option<String>,
}

fn refused(ctx: &Ctx, message: impl Into<String>) -> ApiError {
    ctx.err(Error::constraint(Constraint::ExternalContent, message))
}

/// The external content a POST or PUT names, if any. More than one ExternalContent link, a
/// missing or unknown `handling`, no allow-list, or a URL it does not allow: 400 with
/// constrainedBy, before anything else is done.
pub(crate) async fn from_headers(
    ctx: &Ctx,
    h: &HeaderMap,
) -> Result<Option<ExternalRequest>, ApiError> {
    let mut found = headers::external_content_links(h);
    let (url, params) = match found.len() {
        0 => return Ok(None),
        1 => found.pop().expect("one link"),
        n => {
            return Err(refused(
                ctx,
                format!("the request has {n} ExternalContent links; at most one is allowed"),
            ))
        }
    };
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
    };
    let handling = match param("handling") {
        None => {
            return Err(refused(
                ctx,
                format!("the ExternalContent link <{url}> has no handling attribute; use handling=\"copy\", \"redirect\" or \"proxy\""),
            ))
        }
        Some(v) => ExternalHandling::parse(&v).ok_or_else(|| {
            refused(
                ctx,
                format!("handling=\"{}\" is not supported; arca supports copy, redirect and proxy", arca_model::excerpt(&v, 40)),
            )
        })?,
    };
    let mime = match param("type").filter(|t| !t.is_empty()) {
        Some(t) if t.parse::<HeaderValue>().is_ok() && t.contains('/') => Some(t),
        Some(t) => {
            return Err(refused(
                ctx,
                format!(
                    "type=\"{}\" is not a media type",
                    arca_model::excerpt(&t, 60)
                ),
            ))
        }
        None => None,
    };
    let Some(list) = ctx.config.external_allowed.clone() else {
        return Err(refused(
            ctx,
            "external content is disabled on this server: no allow-list is configured (setting external_content_allowed)",
        ));
    };
    let checked = tokio::task::spawn_blocking(move || list.check(&url))
        .await
        .map_err(|e| ctx.err(Error::Internal(format!("allow-list check: {e}"))))?
        .map_err(|e| ctx.err(e))?;
    Ok(Some(ExternalRequest {
        url: checked,
        handling,
        mime,
    }))
}

/// The new content of binary `id`: the fetched bytes (copy, hashed with the digest
/// algorithm of the object it lands in) or the URL with the remote size (redirect, proxy).
/// The remote location must answer; its failure is 400.
pub(crate) async fn content(
    ctx: &Ctx,
    id: &FedoraId,
    ext: ExternalRequest,
    h: &HeaderMap,
) -> Result<NewContent, ApiError> {
    let expected = handlers::client_digests(ctx, h)?;
    let filename = headers::content_disposition_filename(h);
    let url = ext.url.url().to_string();
    match ext.handling {
        ExternalHandling::Copy => {
            let (body, remote_type) = open(&ctx.config.external_client, &ext.url, None)
                .await
                .map_err(|m| refused(ctx, m))?;
            let binary = ctx
                .repo
                .receive_binary(
                    id,
                    ctx.config.limits.timed(body.body).into_data_stream(),
                    &expected,
                    ctx.budget.memory_gate(),
                )
                .await
                .map_err(|e| match e {
                    Error::Body(m) => refused(ctx, format!("reading {url} failed: {m}")),
                    e => ctx.err(e),
                })?;
            Ok(NewContent::Binary {
                binary,
                mime: media_type(ext.mime, remote_type),
                filename,
                expected,
            })
        }
        handling => {
            let (size, remote_type) = probe(&ctx.config.external_client, &ext.url)
                .await
                .map_err(|m| refused(ctx, m))?;
            if !expected.is_empty() {
                // The client's digests are checked against the remote bytes now; they are
                // not stored (Fedora records no digests for content it does not hold).
                let algs: Vec<DigestAlgorithm> = expected.iter().map(|d| d.algorithm).collect();
                let (_, computed) = remote_digests(ctx, &ext.url, &algs)
                    .await
                    .map_err(|m| refused(ctx, m))?;
                let got = ReceivedBinary {
                    data: arca_repository::BinaryData::Memory(Bytes::new()),
                    size,
                    digests: computed,
                };
                got.verify(&expected).map_err(|e| ctx.err(e))?;
            }
            Ok(NewContent::Binary {
                binary: ReceivedBinary::external(ExternalLocation { url, handling }, size),
                mime: media_type(ext.mime, remote_type),
                filename,
                expected: Vec::new(),
            })
        }
    }
}

/// The link's `type`, else the remote `Content-Type`, else `application/octet-stream`
/// (Fedora 6's choice for files).
fn media_type(given: Option<String>, remote: Option<String>) -> String {
    given
        .or(remote)
        .unwrap_or_else(|| "application/octet-stream".into())
}

/// Whether a record is a binary kept as a URL.
pub(crate) fn location(record: &ResourceRecord) -> Option<(&str, ExternalHandling)> {
    let url = record.headers.external_url.as_deref()?;
    let handling = ExternalHandling::parse(record.headers.external_handling.as_deref()?)?;
    Some((url, handling))
}

/// `Content-Location: URL` on answers about a binary kept as a URL (201, 204, GET, HEAD),
/// as Fedora 6 sends it.
pub(crate) fn content_location(record: &ResourceRecord, h: &mut HeaderMap) {
    if let Some((url, _)) = location(record) {
        set(h, header::CONTENT_LOCATION, url);
    }
}

/// `Accept-External-Content-Handling` on GET, HEAD and OPTIONS of every resource, as
/// Fedora 6 sends it, when the server has an allow-list.
pub(crate) fn advertise(ctx: &Ctx, h: &mut HeaderMap) {
    if ctx.config.external_allowed.is_some() {
        h.insert(
            header::HeaderName::from_static("accept-external-content-handling"),
            HeaderValue::from_static(HANDLINGS),
        );
    }
}

/// GET or HEAD of a binary kept as a URL: 307 to it (redirect) or its bytes (proxy).
pub(crate) async fn read(
    ctx: &Ctx,
    record: &ResourceRecord,
    head: bool,
    h: &HeaderMap,
    mut out: Response,
) -> Result<Response, ApiError> {
    let (url, handling) = location(record).expect("caller checked");
    let wanted = headers::want_digest(h).map_err(ApiError::bad_request)?;
    let target = stored_target(ctx, url).map_err(|m| bad_gateway(url, m))?;
    content_location(record, out.headers_mut());
    if let Some(algs) = wanted {
        let (_, digests) = remote_digests(ctx, &target, &algs)
            .await
            .map_err(|m| bad_gateway(url, m))?;
        let value: Vec<String> = algs
            .iter()
            .filter_map(|a| digests.iter().find(|d| d.algorithm == *a))
            .map(|d| format!("{}={}", d.algorithm.http_token(), d.hex))
            .collect();
        set(
            out.headers_mut(),
            header::HeaderName::from_static("digest"),
            &value.join(", "),
        );
    }
    if handling == ExternalHandling::Redirect {
        *out.status_mut() = StatusCode::TEMPORARY_REDIRECT;
        set(out.headers_mut(), header::LOCATION, url);
        set(out.headers_mut(), header::CONTENT_LENGTH, "0");
        return Ok(out);
    }
    // Proxy. The length is the file's now, or the size recorded for an http location.
    let len = match &target {
        CheckedUrl::File { path, .. } => std::fs::metadata(path)
            .map_err(|e| bad_gateway(url, e.to_string()))?
            .len(),
        CheckedUrl::Http(_) => match record.headers.content_size {
            Some(n) if n > 0 => n as u64,
            // Not recorded (an imported Fedora 3 E datastream records 0): ask the location.
            _ => {
                probe(&ctx.config.external_client, &target)
                    .await
                    .map_err(|m| bad_gateway(url, m))?
                    .0
            }
        },
    };
    let range = headers::range(h, len);
    let (start, count) = match range {
        RangeRequest::Full => (0, len),
        RangeRequest::Partial { start, end } => {
            *out.status_mut() = StatusCode::PARTIAL_CONTENT;
            set(
                out.headers_mut(),
                header::CONTENT_RANGE,
                &format!("bytes {start}-{end}/{len}"),
            );
            (start, end - start + 1)
        }
        RangeRequest::Unsatisfiable => return Ok(crate::response::range_not_satisfiable(len)),
    };
    set(
        out.headers_mut(),
        header::CONTENT_LENGTH,
        &count.to_string(),
    );
    if head {
        return Ok(out);
    }
    let body = match &target {
        CheckedUrl::File { path, .. } => {
            let opened = std::fs::File::open(path);
            let body = match opened {
                Ok(file) => handlers::file_body(file, start, count).await,
                Err(e) => Err(e),
            };
            body.map_err(|e| bad_gateway(url, e.to_string()))?
        }
        CheckedUrl::Http(_) => {
            let ranged = matches!(range, RangeRequest::Partial { .. });
            let (opened, _) = open(
                &ctx.config.external_client,
                &target,
                ranged.then_some((start, start + count - 1)),
            )
            .await
            .map_err(|m| bad_gateway(url, m))?;
            // A server that ignored the range sends everything: cut it here.
            let skip = if opened.partial { 0 } else { start };
            slice(opened.body, skip, count)
        }
    };
    *out.body_mut() = body;
    Ok(out)
}

fn bad_gateway(url: &str, message: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        StatusCode::BAD_GATEWAY,
        format!("the external content at {url} cannot be read: {message}"),
    )
}

/// The location of a stored URL, `file:` URLs checked again against the allow-list (the
/// list, or the files, may have changed since the URL was stored).
fn stored_target(ctx: &Ctx, url: &str) -> Result<CheckedUrl, String> {
    if url
        .get(..5)
        .is_some_and(|s| s.eq_ignore_ascii_case("file:"))
    {
        let list =
            ctx.config.external_allowed.as_ref().ok_or(
                "file: content is only read under an allow-list, and this server has none",
            )?;
        let path = list.recheck_file(url).map_err(|e| e.to_string())?;
        Ok(CheckedUrl::File {
            url: url.to_string(),
            path,
        })
    } else if ["http://", "https://"].iter().any(|scheme| {
        url.get(..scheme.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
    }) {
        Ok(CheckedUrl::Http(url.to_string()))
    } else {
        Err("only file:, http: and https: locations can be read by arca".into())
    }
}

/// An opened location: its body, and whether it is the requested range only.
struct Opened {
    body: Body,
    partial: bool,
}

type Connector = Timed<HttpsConnector<HttpConnector>>;

/// The client that reads `http:` and `https:` external content: rustls with the system's
/// root certificates plus an optional file of extra ones; connecting (TCP and the TLS
/// handshake) is bounded by [`CONNECT_TIMEOUT`]. Redirects are not followed.
#[derive(Clone)]
pub struct ExternalClient(Client<Connector, Empty<Bytes>>);

impl std::fmt::Debug for ExternalClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExternalClient")
    }
}

impl Default for ExternalClient {
    /// A client that trusts the system's root certificates only.
    fn default() -> Self {
        Self::new(None).expect("no CA file to read")
    }
}

impl ExternalClient {
    /// A client trusting the system's roots and the PEM certificates in `extra_ca`; an
    /// unreadable file, or one with no usable certificate, is an error naming it.
    pub fn new(extra_ca: Option<&std::path::Path>) -> Result<Self, String> {
        Self::with_connect_timeout(extra_ca, CONNECT_TIMEOUT)
    }

    /// As [`new`](Self::new), with connections bounded by `connect_timeout` instead.
    pub(crate) fn with_connect_timeout(
        extra_ca: Option<&std::path::Path>,
        connect_timeout: Duration,
    ) -> Result<Self, String> {
        let mut roots = rustls::RootCertStore::empty();
        // Unreadable system certificates are skipped: https then needs `extra_ca`.
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        if let Some(path) = extra_ca {
            let added = read_pem_certificates(path)?
                .into_iter()
                .map(|der| roots.add(der))
                .filter(Result::is_ok)
                .count();
            if added == 0 {
                return Err(format!(
                    "the external content CA file {} holds no usable certificate",
                    path.display()
                ));
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS setup: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        let https = HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let connector = Timed(https, connect_timeout);
        Ok(Self(Client::builder(TokioExecutor::new()).build(connector)))
    }

    /// Sends `req` (without a body) and returns the answer's head and streaming body.
    pub(crate) async fn send(
        &self,
        req: http::Request<Empty<Bytes>>,
    ) -> Result<http::Response<hyper::body::Incoming>, hyper_util::client::legacy::Error> {
        self.0.request(req).await
    }
}

/// The certificates of a PEM file (`-----BEGIN CERTIFICATE-----` blocks).
fn read_pem_certificates(
    path: &std::path::Path,
) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read the external content CA file {}: {e}",
            path.display()
        )
    })?;
    let blocks =
        pem::parse_many(text).map_err(|e| format!("{}: not a PEM file: {e}", path.display()))?;
    Ok(blocks
        .into_iter()
        .filter(|b| b.tag() == "CERTIFICATE")
        .map(|b| b.into_contents().into())
        .collect())
}

/// A connector whose connections (TCP and TLS handshake) must be made within a time.
#[derive(Clone)]
struct Timed<C>(C, Duration);

impl<C> tower_service::Service<http::Uri> for Timed<C>
where
    C: tower_service::Service<http::Uri> + Send,
    C::Future: Send + 'static,
    C::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = C::Response;
    type Error = Box<dyn std::error::Error + Send + Sync>;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<C::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let limit = self.1;
        let connecting = self.0.call(uri);
        Box::pin(async move {
            match tokio::time::timeout(limit, connecting).await {
                Ok(r) => r.map_err(Into::into),
                Err(_) => Err(format!(
                    "no connection (TCP and TLS handshake) within {}s",
                    limit.as_secs()
                )
                .into()),
            }
        })
    }
}

/// Sends `method` to an http location; any answer but 2xx is an error naming its status.
async fn remote(
    client: &ExternalClient,
    url: &str,
    method: http::Method,
    range: Option<(u64, u64)>,
) -> Result<http::Response<hyper::body::Incoming>, String> {
    let mut req = http::Request::builder().method(method).uri(url);
    if let Some((a, b)) = range {
        req = req.header(header::RANGE, format!("bytes={a}-{b}"));
    }
    let req = req
        .body(Empty::new())
        .map_err(|e| format!("{url} is not a usable URL: {e}"))?;
    let resp = tokio::time::timeout(REMOTE_TIMEOUT, client.0.request(req))
        .await
        .map_err(|_| format!("{url} did not answer within {}s", REMOTE_TIMEOUT.as_secs()))?
        .map_err(|e| unreachable_message(url, &e))?;
    if !resp.status().is_success() {
        return Err(format!(
            "{url} answered {} (an external location must answer 2xx)",
            resp.status()
        ));
    }
    Ok(resp)
}

/// Why `url` could not be reached; an untrusted certificate says how to trust it.
pub(crate) fn unreachable_message(url: &str, e: &(dyn std::error::Error + 'static)) -> String {
    if let Some(rustls::Error::InvalidCertificate(why)) = tls_error(e) {
        return format!(
            "{url} cannot be reached: its TLS certificate is not accepted ({why:?}); a private certificate authority can be trusted with the setting external_content_ca_file"
        );
    }
    format!("{url} cannot be reached: {}", error_chain(e))
}

/// The rustls error behind `e`, looking through sources and wrapping `io::Error`s (the TLS
/// connector wraps it twice).
fn tls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = e.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    if let Some(inner) = e
        .downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref())
    {
        let inner: &(dyn std::error::Error + 'static) = inner;
        if let Some(tls) = tls_error(inner) {
            return Some(tls);
        }
    }
    e.source().and_then(tls_error)
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

fn content_type(h: &HeaderMap) -> Option<String> {
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Opens a location for reading (from byte `range.0` to `range.1` when given), with the
/// remote media type.
async fn open(
    client: &ExternalClient,
    url: &CheckedUrl,
    range: Option<(u64, u64)>,
) -> Result<(Opened, Option<String>), String> {
    match url {
        CheckedUrl::File { path, url } => {
            let (start, count) = match range {
                Some((a, b)) => (a, b - a + 1),
                None => (0, u64::MAX),
            };
            let mut f = tokio::fs::File::open(path)
                .await
                .map_err(|e| format!("{url} cannot be opened: {e}"))?;
            use tokio::io::{AsyncReadExt, AsyncSeekExt};
            if start > 0 {
                f.seek(std::io::SeekFrom::Start(start))
                    .await
                    .map_err(|e| format!("{url}: {e}"))?;
            }
            let stream = tokio_util::io::ReaderStream::with_capacity(f.take(count), 256 << 10);
            Ok((
                Opened {
                    body: Body::from_stream(stream),
                    partial: range.is_some(),
                },
                None,
            ))
        }
        CheckedUrl::Http(u) => {
            let resp = remote(client, u, http::Method::GET, range).await?;
            let partial = resp.status() == StatusCode::PARTIAL_CONTENT;
            let mime = content_type(resp.headers());
            Ok((
                Opened {
                    body: Body::new(resp.into_body()),
                    partial,
                },
                mime,
            ))
        }
    }
}

/// Size and media type of a location without reading it (HEAD for http; a server that
/// sends no length is read through once).
async fn probe(client: &ExternalClient, url: &CheckedUrl) -> Result<(u64, Option<String>), String> {
    match url {
        CheckedUrl::File { path, url } => {
            let m = tokio::fs::metadata(path)
                .await
                .map_err(|e| format!("{url} cannot be read: {e}"))?;
            Ok((m.len(), None))
        }
        CheckedUrl::Http(u) => {
            let resp = remote(client, u, http::Method::HEAD, None).await?;
            let mime = content_type(resp.headers());
            let len = resp
                .headers()
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            match len {
                Some(len) => Ok((len, mime)),
                None => {
                    let (opened, mime) = open(client, url, None).await?;
                    let mut stream = opened.body.into_data_stream();
                    let mut n = 0u64;
                    while let Some(chunk) = stream.next().await {
                        n += chunk.map_err(|e| format!("reading {u} failed: {e}"))?.len() as u64;
                    }
                    Ok((n, mime))
                }
            }
        }
    }
}

/// Reads a whole location once and returns its length and its digests in `algs`.
async fn remote_digests(
    ctx: &Ctx,
    url: &CheckedUrl,
    algs: &[DigestAlgorithm],
) -> Result<(u64, Vec<DigestValue>), String> {
    if let CheckedUrl::File { path, url } = url {
        let (path, algs) = (path.clone(), algs.to_vec());
        return tokio::task::spawn_blocking(move || arca_repository::digest_file(&path, &algs))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("{url} cannot be read: {e}"));
    }
    let (opened, _) = open(&ctx.config.external_client, url, None).await?;
    let mut stream = ctx.config.limits.timed(opened.body).into_data_stream();
    let mut hasher = MultiHasher::new(algs);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("reading {} failed: {e}", url.url()))?;
        hasher.update(&chunk);
    }
    Ok((hasher.len(), hasher.finish()))
}

/// The `count` bytes of `body` after its first `skip` bytes.
fn slice(body: Body, skip: u64, count: u64) -> Body {
    let end = skip.saturating_add(count);
    let stream = body.into_data_stream().scan(0u64, move |offset, chunk| {
        if *offset >= end {
            return std::future::ready(None);
        }
        let part = chunk.map(|c: Bytes| {
            let (from, to) = (*offset, *offset + c.len() as u64);
            *offset = to;
            let a = skip.clamp(from, to) - from;
            let b = end.clamp(from, to) - from;
            c.slice(a as usize..b as usize)
        });
        std::future::ready(Some(part))
    });
    Body::from_stream(stream)
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[test]
    fn a_ca_file_without_a_certificate_is_refused_with_its_name() {
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("none.pem");
        let e = ExternalClient::new(Some(&missing)).unwrap_err();
        assert!(e.contains("cannot read") && e.contains("none.pem"), "{e}");
        let empty = d.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = ExternalClient::new(Some(&empty)).unwrap_err();
        assert!(e.contains("no usable certificate"), "{e}");
    }

    #[tokio::test]
    async fn slice_cuts_across_chunks() {
        let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from_static(b"hello ")),
            Ok(Bytes::from_static(b"external ")),
            Ok(Bytes::from_static(b"world")),
        ];
        let body = Body::from_stream(futures_util::stream::iter(chunks));
        let got = slice(body, 4, 9).collect().await.unwrap().to_bytes();
        assert_eq!(&got[..], b"o externa");
    }
}
