//! Request bodies of writes: which kind a body is (RDF or bytes), reading and parsing it
//! within the limits, the `Link: rel="type"` and `Digest` headers that go with it.

use arca_model::{DigestValue, FedoraId, InteractionModel};
use arca_rdf::{Prefer, RdfFormat};
use arca_repository::{Error, NewContent};
use axum::extract::Request;
use http::{header, HeaderMap, StatusCode};

use super::INLINE_PARSE;
use crate::context::Ctx;
use crate::error::ApiError;
use crate::headers::{self, DigestError, LinkError};
use crate::limits::read_body;

/// How a request body is to be taken.
pub(super) enum BodyKind {
    Rdf(RdfFormat),
    Binary,
}

/// Decides from Link type, Content-Type and the target model how to read the body.
pub(super) fn body_kind(
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
pub(super) async fn read_content(
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
            let binary = ctx
                .repo
                .receive_binary(
                    id,
                    ctx.config.limits.timed(req.into_body()).into_data_stream(),
                    &expected,
                    ctx.budget.memory_gate(),
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
pub(super) fn link_type(ctx: &Ctx, h: &HeaderMap) -> Result<headers::TypeLinks, ApiError> {
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
