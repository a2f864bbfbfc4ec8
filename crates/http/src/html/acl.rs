//! The page of an access control list: its authorizations as a table (who, which modes, on
//! what), then every statement.

use std::collections::BTreeMap;

use arca_model::FedoraId;
use arca_rdf::vocab;
use axum::response::Response;
use http::StatusCode;
use oxrdf::{NamedOrBlankNode, Triple};
use serde::Serialize;

use super::terms::{self, Row, Shown};
use super::Frame;
use crate::context::Ctx;
use crate::error::ApiError;

#[derive(Serialize, Default)]
struct Authorization {
    name: String,
    agents: Vec<Shown>,
    modes: Vec<Shown>,
    targets: Vec<Shown>,
    defaults: Vec<Shown>,
    classes: Vec<Shown>,
}

#[derive(Serialize)]
struct Page {
    page: Frame,
    title: String,
    resource: String,
    crumbs: Vec<super::resource::Crumb>,
    authorizations: Vec<Authorization>,
    statements: Vec<Row>,
    is_default: bool,
}

/// The ACL page of `resource` from its `triples` (internal ids); `is_default` when they are
/// the server's default root ACL, not a stored one.
pub(crate) fn page(
    ctx: &Ctx,
    resource: &FedoraId,
    triples: &[Triple],
    head: bool,
) -> Result<Response, ApiError> {
    page_of(ctx, resource, triples, false, head)
}

/// The page of the root's default ACL (the root has none of its own).
pub(crate) fn default_page(
    ctx: &Ctx,
    triples: &[Triple],
    head: bool,
) -> Result<Response, ApiError> {
    page_of(ctx, &FedoraId::root(), triples, true, head)
}

fn page_of(
    ctx: &Ctx,
    resource: &FedoraId,
    triples: &[Triple],
    is_default: bool,
    head: bool,
) -> Result<Response, ApiError> {
    let mapper = ctx.mapper();
    let acl = |name: &str| format!("{}{name}", vocab::ACL_NS);
    let mut by_subject: BTreeMap<String, Authorization> = BTreeMap::new();
    for t in triples {
        let is_authorization = t.predicate.as_str() == vocab::RDF_TYPE
            && matches!(&t.object, oxrdf::Term::NamedNode(n) if n.as_str() == acl("Authorization"));
        if is_authorization {
            let name = match &t.subject {
                NamedOrBlankNode::NamedNode(n) => {
                    let shown = terms::iri(n.as_str(), &mapper);
                    shown.text
                }
                s => s.to_string(),
            };
            by_subject.entry(t.subject.to_string()).or_default().name = name;
        }
    }
    for t in triples {
        let Some(auth) = by_subject.get_mut(&t.subject.to_string()) else {
            continue;
        };
        let shown = terms::term(&t.object, &mapper);
        let p = t.predicate.as_str();
        if p == acl("agent") || p == acl("agentClass") || p == acl("agentGroup") {
            auth.agents.push(shown);
        } else if p == acl("mode") {
            auth.modes.push(shown);
        } else if p == acl("accessTo") {
            auth.targets.push(shown);
        } else if p == acl("default") {
            auth.defaults.push(shown);
        } else if p == acl("accessToClass") {
            auth.classes.push(shown);
        }
    }
    let name = match resource.last_segment() {
        "" => "the repository root".to_string(),
        s => s.to_string(),
    };
    let page = Page {
        page: Frame::of(ctx),
        title: format!("Access control of {name}"),
        resource: ctx.url(resource),
        crumbs: super::resource::crumbs(ctx, resource),
        authorizations: by_subject.into_values().collect(),
        statements: terms::rows(triples, "", &mapper),
        is_default,
    };
    super::render(StatusCode::OK, "acl.html", &page, head)
}
