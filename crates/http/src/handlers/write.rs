//! Writes: POST (create a child), PUT (create or replace), PATCH (SPARQL Update), DELETE
//! and the purge of a tombstone.

use arca_catalog::ResourceRecord;
use arca_model::FedoraId;
use arca_rdf::Prefer;
use arca_repository::Error;
use axum::body::Body;
use axum::extract::Request;
use http::{header, HeaderMap, StatusCode};
use oxrdf::Triple;

use super::body::{body_kind, link_type, read_content, BodyKind};
use super::conditions::{check_write_condition, write_precondition};
use super::read::link_linked_acl;
use super::representation::allow_for;
use super::representation::{created_response, model_of, resource_headers};
use super::HandlerResult;
use crate::context::Ctx;
use crate::error::ApiError;
use crate::headers;
use crate::limits::read_body;
use crate::response::response;
use arca_model::InteractionModel;

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
pub(super) async fn create_new(
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
pub(super) async fn acl_link_source(
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
pub(super) async fn mint_id(
    ctx: &Ctx,
    parent: &FedoraId,
    h: &HeaderMap,
) -> Result<FedoraId, ApiError> {
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
            check_write_condition(ctx, &h, Some(&record))?;
            // Refused before the body is read (and again under the lock).
            arca_repository::check_model_change(&record, link).map_err(|e| ctx.err(e))?;
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
            check_write_condition(ctx, &h, None)?;
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
    check_write_condition(ctx, &h, Some(&record))?;
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
pub(super) struct PatchMembership {
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

pub(super) async fn patch_membership(
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
    check_write_condition(ctx, req.headers(), Some(&record))?;
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
