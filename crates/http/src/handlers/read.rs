//! Reads: GET, HEAD and OPTIONS of RDF sources and binaries (ranges, digests, external
//! content), with the server-managed triples and `Prefer` rules Fedora applies.

use arca_catalog::{ReadRecord, ResourceRecord};
use arca_model::{DigestAlgorithm, FedoraId, InteractionModel};
use arca_rdf::{vocab, Prefer, RdfOutput, ReturnPref};
use arca_repository::{Error, StoredContent};
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{header, HeaderMap, StatusCode};
use oxrdf::{Literal, NamedNode, NamedOrBlankNode, Term, Triple};

use super::conditions::check_condition;
use super::representation::content_disposition;
use super::representation::{model_of, resource_headers};
use super::RDF_VARY;
use super::{HandlerResult, BINARY_VARY};
use crate::context::Ctx;
use crate::error::ApiError;
use crate::headers::{self, RangeRequest};
use crate::listing;
use crate::response::{
    add_link, header_value, owned_header_value, range_not_satisfiable, rdf_output_content_type,
    response, set, set_static,
};
use http::HeaderValue;

pub(crate) async fn read(ctx: &Ctx, id: FedoraId, head: bool, req: Request) -> HandlerResult {
    // The current state: the record, its stated types and what its listing can skip, in
    // one catalog round; a memento's from its version.
    let (view, memento_record);
    let (record, types, listable, current) = match ctx.memento {
        None => {
            view = ctx.repo.get_for_read(&id).await.map_err(|e| ctx.err(e))?;
            let listable = listing::Listable {
                children: view.read.may_have_children,
                membership: view.read.may_have_membership,
            };
            let current = Some(&*view.read);
            (
                view.record(),
                view.stated_types.as_slice(),
                listable,
                current,
            )
        }
        Some(_) => {
            memento_record = ctx.record(&id).await.map_err(|e| ctx.err(e))?;
            (&memento_record, &[][..], listing::Listable::ALL, None)
        }
    };
    let h = req.headers();
    if let Some(r) = check_condition(ctx, h, record, true)? {
        return Ok(r);
    }
    let binary = model_of(record).is_binary();
    if !binary
        && crate::html::wanted(h)
        && crate::html::format_override(req.uri().query()).is_none()
    {
        // A browser: the resource's page (a binary's is its description's).
        return crate::html::resource::page(ctx, record, head, req.uri().query()).await;
    }
    let headers = match current {
        Some(current) => current_read_headers(ctx, current),
        None => read_header_set(ctx, record),
    };
    let mut out = if binary {
        serve_binary(ctx, record, head, h, response_with(headers)).await
    } else {
        read_rdf(ctx, record, listable, head, req, headers).await
    }?;
    crate::external::advertise(ctx, out.headers_mut());
    if ctx.memento.is_none() && !id.is_acl() {
        // As Fedora 6: the classes a resource's triples state are named with its model's
        // (a binary's are its description's).
        for t in types {
            let t = ctx.mapper().to_external(t);
            add_link(out.headers_mut(), &t, ";rel=\"type\"");
        }
        link_linked_acl(ctx, record, out.headers_mut()).await?;
    }
    Ok(out)
}

/// Names, in place of `fcr:acl`, the RDF source a resource's ACL links to (5.4), in the
/// answers that describe the resource (GET, HEAD, OPTIONS, the 201 of its creation).
pub(super) async fn link_linked_acl(
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
    add_link(h, &ctx.url(&source), ";rel=\"acl\"");
    Ok(())
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
    // Bytes a fixity audit found damaged are never served as if they were the deposit.
    ctx.repo.damage().check(record).map_err(|e| ctx.err(e))?;
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
    if let Some(opened) = content.open_local() {
        return file_body(opened?, start, count).await;
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
/// the request ([`read_header_set`]) and the external-content advertisement (the
/// TimeGate's redirect repeats them).
pub(crate) fn read_headers(ctx: &Ctx, record: &ResourceRecord) -> Response {
    let mut out = response_with(read_header_set(ctx, record));
    crate::external::advertise(ctx, out.headers_mut());
    out
}

/// An empty 200 answer with `headers`.
fn response_with(headers: HeaderMap) -> Response {
    let mut out = response(StatusCode::OK, Body::empty());
    *out.headers_mut() = headers;
    out
}

/// The headers every 200 read of `record` carries whatever the request: the resource
/// headers, then a binary's Content-Type, Accept-Ranges, Content-Disposition and Vary, or
/// an RDF source's Vary (its Content-Type follows the request's `Accept`).
fn read_header_set(ctx: &Ctx, record: &ResourceRecord) -> HeaderMap {
    let mut h = HeaderMap::new();
    resource_headers(ctx, record, &mut h);
    if !model_of(record).is_binary() {
        set_static(&mut h, header::VARY, RDF_VARY);
        return h;
    }
    set(
        &mut h,
        header::CONTENT_TYPE,
        record
            .headers
            .mime_type
            .as_deref()
            .unwrap_or("application/octet-stream"),
    );
    set_static(&mut h, header::ACCEPT_RANGES, "bytes");
    h.insert(
        header::CONTENT_DISPOSITION,
        owned_header_value(content_disposition(record)),
    );
    set_static(&mut h, header::VARY, BINARY_VARY);
    h
}

/// [`read_header_set`] of a resource's current state as the catalog's read cache shares it:
/// built at the first read of the cached record and copied for the reads after it, until
/// the resource changes and the catalog holds a new record. A request under another base
/// URL than the one they were built for builds its own.
fn current_read_headers(ctx: &Ctx, current: &ReadRecord) -> HeaderMap {
    /// The headers, and the base URL their links were built under.
    struct Built {
        base_url: String,
        headers: HeaderMap,
    }
    let built = current.derived.get_or_init(|| Built {
        base_url: ctx.base_url.clone(),
        headers: read_header_set(ctx, &current.record),
    });
    match built {
        Some(built) if built.base_url == ctx.base_url => built.headers.clone(),
        _ => read_header_set(ctx, &current.record),
    }
}

/// The answer body of `count` bytes of `file` from `start`. Small files are read at once
/// (inline: they come from the page cache, and a hop to the blocking pool costs more than
/// the read); large ones stream in 256 KiB chunks.
pub(crate) async fn file_body(
    file: std::fs::File,
    start: u64,
    count: u64,
) -> std::io::Result<Body> {
    const INLINE: u64 = 64 << 10;
    const SMALL: u64 = 256 << 10;
    let read = move |mut f: std::fs::File| -> std::io::Result<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        if start > 0 {
            f.seek(SeekFrom::Start(start))?;
        }
        let mut buf = Vec::with_capacity(count as usize);
        f.take(count).read_to_end(&mut buf)?;
        Ok(buf)
    };
    if count <= INLINE {
        return Ok(Body::from(read(file)?));
    }
    if count <= SMALL {
        let bytes = tokio::task::spawn_blocking(move || read(file))
            .await
            .map_err(std::io::Error::other)??;
        return Ok(Body::from(bytes));
    }
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let mut f = tokio::fs::File::from_std(file);
    if start > 0 {
        f.seek(std::io::SeekFrom::Start(start)).await?;
    }
    let stream = tokio_util::io::ReaderStream::with_capacity(f.take(count), 256 << 10);
    Ok(Body::from_stream(stream))
}

/// `Digest` answer for `Want-Digest`, in hex as Fedora writes it. Stored digests are used
/// when present; others are computed from the content.
pub(super) async fn digest_header(
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

pub(super) async fn read_rdf(
    ctx: &Ctx,
    record: &ResourceRecord,
    listable: listing::Listable,
    head: bool,
    req: Request,
    headers: HeaderMap,
) -> HandlerResult {
    let h = req.headers();
    // A page's "raw RDF" links name the format in the query (`?format=text/turtle`).
    let linked = crate::html::format_override(req.uri().query());
    let accept = linked
        .as_deref()
        .or_else(|| h.get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    let output = RdfOutput::negotiate(accept).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_ACCEPTABLE,
            "this resource is available as text/turtle, application/ld+json, application/n-triples or application/rdf+xml",
        )
    })?;
    let prefer = Prefer::parse(h.get_all("prefer").iter().filter_map(|v| v.to_str().ok()));
    let query = listing::Paging::from_query(req.uri().query(), prefer.max_member_count)
        .map_err(ApiError::bad_request)?;
    let mut out = response_with(headers);
    let oh = out.headers_mut();
    set(oh, header::CONTENT_TYPE, &rdf_output_content_type(output));
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
        children: (contains || embed) && listable.children,
        contains,
        membership: prefer.wants(vocab::LDP_PREFER_MEMBERSHIP) && listable.membership,
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
            &format!("{url}?limit={limit}&after={cursor}"),
            ";rel=\"next\"",
        );
    }
    if embed {
        contained_descriptions(ctx, &listed.children, own, managed, &mut triples)
            .await
            .map_err(|e| ctx.err(e))?;
    }
    // HEAD serializes too: its headers, Content-Length included, are GET's.
    let body = arca_rdf::serialize_as(&triples, output, &ctx.mapper())
        .map_err(|e| ctx.err(Error::Rdf(e)))?;
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

/// The `Preference-Applied` value of an answer honouring `prefer`: the return preference
/// with the include and omit lists Fedora 6 echoes (the embedded descriptions are named
/// when a container embeds them).
pub(super) fn preference_applied(ret: ReturnPref, prefer: &Prefer, embed: bool) -> String {
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
pub(super) async fn contained_descriptions(
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

pub(crate) async fn server_managed_triples(
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
    // As Fedora 7: the containing resource (the nearest one, past ghost nodes); none for
    // the root and ACLs, which have no parent. A description speaks of its binary's.
    if let Some(parent) = &subject_record.parent {
        add(vocab::FEDORA_HAS_PARENT, iri(&parent.iri()));
    }
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
        // PREMIS 3 beside PREMIS 1, as Fedora 7 states them (no premis3:fixity here: Fedora 7
        // gives that in fcr:fixity's answer only).
        add(vocab::RDF_TYPE, iri(vocab::PREMIS3_FILE));
        if let Some(size) = h.content_size.filter(|n| *n >= 0) {
            add(
                vocab::PREMIS3_SIZE,
                Literal::new_typed_literal(
                    size.to_string(),
                    NamedNode::new_unchecked(vocab::XSD_NON_NEGATIVE_INTEGER),
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
