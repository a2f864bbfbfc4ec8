//! `<resource>/fcr:acl`: a resource's access control list (Fedora API §5), an RDF source
//! read, created or replaced (PUT), patched (SPARQL Update) and deleted through the API.
//! Every request on it needs `acl:Control` on the resource (checked before these run). The
//! root answers with the ACL in effect when it has none of its own, as Fedora 6 does.

use arca_model::{FedoraId, InteractionModel};
use arca_rdf::RdfFormat;
use arca_repository::{Error, NewContent};
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{header, Method, StatusCode};

use crate::context::Ctx;
use crate::error::ApiError;
use crate::handlers;

/// Methods an ACL answers.
pub(crate) const ALLOW: &str = "GET, HEAD, OPTIONS, PUT, PATCH, DELETE";

/// A method on `fcr:acl`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AclMethod {
    Read { head: bool },
    Options,
    Put,
    Patch,
    Delete,
}

impl AclMethod {
    /// The method, or `None` for one an ACL does not answer (405).
    pub(crate) fn of(method: &Method) -> Option<Self> {
        Some(match *method {
            Method::GET => Self::Read { head: false },
            Method::HEAD => Self::Read { head: true },
            Method::OPTIONS => Self::Options,
            Method::PUT => Self::Put,
            Method::PATCH => Self::Patch,
            Method::DELETE => Self::Delete,
            _ => return None,
        })
    }
}

/// Carries out `method` on the ACL of `resource`.
pub(crate) async fn handle(
    ctx: &Ctx,
    resource: FedoraId,
    method: AclMethod,
    req: Request,
) -> Result<Response, ApiError> {
    // The resource must exist (404, or 410 for a tombstone) whatever is asked of its ACL.
    ctx.repo.get(&resource).await.map_err(|e| ctx.err(e))?;
    let acl_id = resource.acl();
    match method {
        AclMethod::Read { head } => match live_acl(ctx, &resource).await? {
            Some(_) => handlers::read(ctx, acl_id, head, req).await,
            None if resource.is_root() => default_root_acl(ctx, head, &req),
            None => Err(not_found(ctx, &acl_id)),
        },
        AclMethod::Options => match live_acl(ctx, &resource).await? {
            Some(_) => handlers::options(ctx, acl_id).await,
            None => Err(not_found(ctx, &acl_id)),
        },
        AclMethod::Put => put(ctx, resource, req).await,
        AclMethod::Patch => match live_acl(ctx, &resource).await? {
            Some(_) => handlers::patch(ctx, acl_id, req).await,
            None => Err(not_found(ctx, &acl_id)),
        },
        AclMethod::Delete => {
            ctx.repo
                .delete_acl(
                    &resource,
                    &ctx.user,
                    handlers::write_precondition(req.headers()),
                )
                .await
                .map_err(|e| ctx.err(e))?;
            Ok(crate::response::response(
                StatusCode::NO_CONTENT,
                Body::empty(),
            ))
        }
    }
}

/// Creates (201) or replaces (204) the ACL with the request's RDF, once it is a valid ACL.
async fn put(ctx: &Ctx, resource: FedoraId, req: Request) -> Result<Response, ApiError> {
    let acl_id = resource.acl();
    let current = live_acl(ctx, &resource).await?;
    let h = req.headers().clone();
    handlers::check_write_condition(ctx, &h, current.as_ref())?;
    let format = rdf_format(&h)?;
    let content = handlers::read_rdf_body(ctx, &acl_id, format, req).await?;
    let NewContent::Rdf { triples, lenient } = content else {
        return Err(ctx.err(Error::Internal("an ACL body was not read as RDF".into())));
    };
    let triples = ctx
        .access
        .prepare_acl(&acl_id, triples)
        .map_err(|e| ctx.err(e))?;
    let (record, created) = ctx
        .repo
        .put_acl(
            &resource,
            triples,
            lenient,
            &ctx.user,
            handlers::write_precondition(&h),
        )
        .await
        .map_err(|e| ctx.err(e))?;
    Ok(if created {
        handlers::created_response(ctx, &record)
    } else {
        let mut out = crate::response::response(StatusCode::NO_CONTENT, Body::empty());
        handlers::resource_headers(ctx, &record, out.headers_mut());
        out
    })
}

/// The RDF syntax of an ACL body: Turtle without a Content-Type, 415 for what is not RDF.
fn rdf_format(h: &http::HeaderMap) -> Result<RdfFormat, ApiError> {
    match h.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) {
        None => Ok(RdfFormat::Turtle),
        Some(ct) => RdfFormat::from_media_type(ct).ok_or_else(|| {
            ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("{ct} is not an RDF media type; an ACL is RDF (text/turtle, application/n-triples, application/ld+json, application/rdf+xml)"),
            )
        }),
    }
}

/// The live ACL record at `acl_id`, if any (a deleted ACL is none).
async fn live_acl(
    ctx: &Ctx,
    resource: &FedoraId,
) -> Result<Option<arca_catalog::ResourceRecord>, ApiError> {
    ctx.repo.live_acl(resource).await.map_err(|e| ctx.err(e))
}

fn not_found(ctx: &Ctx, acl_id: &FedoraId) -> ApiError {
    ctx.err(Error::NotFound(acl_id.clone()))
}

/// The ACL in effect at the root when the root has none stored: the configured one or
/// Fedora's default, served as an RDF source would be.
fn default_root_acl(ctx: &Ctx, head: bool, req: &Request) -> Result<Response, ApiError> {
    if crate::html::wanted(req.headers()) {
        return crate::html::acl::default_page(ctx, &ctx.access.default_root_acl(), head);
    }
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let output = arca_rdf::RdfOutput::negotiate(accept).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_ACCEPTABLE,
            "an ACL is available as text/turtle, application/ld+json, application/n-triples or application/rdf+xml",
        )
    })?;
    let triples = ctx.access.default_root_acl();
    let body = arca_rdf::serialize_as(&triples, output, &ctx.mapper())
        .map_err(|e| ctx.err(Error::Rdf(e)))?;
    let mut out = crate::response::response(StatusCode::OK, Body::empty());
    let h = out.headers_mut();
    for t in InteractionModel::Acl.rdf_types() {
        crate::response::add_type_link(h, "", t);
    }
    crate::response::set(
        h,
        header::CONTENT_TYPE,
        &crate::response::rdf_output_content_type(output),
    );
    crate::response::set(h, header::ALLOW, ALLOW);
    // The syntax and JSON-LD form follow `Accept`.
    crate::response::set(h, header::VARY, "Accept");
    crate::response::set(h, header::CONTENT_LENGTH, &body.len().to_string());
    if !head {
        *out.body_mut() = Body::from(body);
    }
    Ok(out)
}
