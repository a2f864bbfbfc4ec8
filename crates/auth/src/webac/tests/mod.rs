//! Unit tests, named after the Fedora API requirement (section 5) they cover.

mod decision;
mod groups;
mod validation;

use arca_model::FedoraId;
use oxrdf::Triple;
use oxttl::TurtleParser;

use super::*;
use crate::Principal;

const PREFIXES: &str = "@prefix acl: <http://www.w3.org/ns/auth/acl#> .
@prefix foaf: <http://xmlns.com/foaf/0.1/> .
@prefix vcard: <http://www.w3.org/2006/vcard/ns#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix ex: <http://example.org/ns#> .
";

const USER_BASE: &str = "http://example.org/users/";
const GROUP_BASE: &str = "http://example.org/groups/";

/// Triples of a Turtle snippet (the prefixes above are declared), relative IRIs against `base`.
fn ttl(base: &str, body: &str) -> Vec<Triple> {
    TurtleParser::new()
        .with_base_iri(base)
        .unwrap()
        .for_slice(format!("{PREFIXES}{body}").as_bytes())
        .collect::<Result<_, _>>()
        .unwrap()
}

fn rules() -> AclRules {
    AclRules {
        local_prefixes: vec!["info:fedora".into(), "http://localhost:8080/rest/".into()],
        group_base_uri: Some(GROUP_BASE.into()),
    }
}

/// The ACL of `resource` (an internal id), parsed strictly.
fn acl(resource: &str, body: &str) -> Acl {
    try_acl(resource, body).unwrap()
}

/// Triples name resources by their (percent-encoded) IRIs, `acl_id` is the decoded id.
fn try_acl(resource: &str, body: &str) -> Result<Acl, AclError> {
    let acl_id = format!("{resource}/fcr:acl");
    let acl_iri = format!(
        "{}/fcr:acl",
        FedoraId::from_internal(resource).unwrap().iri()
    );
    Acl::parse(&acl_id, &ttl(&acl_iri, body), &rules())
}

fn user(name: &str, roles: &[&str]) -> Principal {
    Principal {
        name: name.into(),
        roles: roles.iter().map(|r| r.to_string()).collect(),
    }
}

/// The modes for an agent when neither types nor group listings may be consulted.
fn modes(acl: &Acl, resource: &str, inherited_from: Option<&str>, agent: &Agent) -> Modes {
    acl.modes_for(
        resource,
        inherited_from,
        agent,
        &mut || panic!("types were not needed"),
        &mut |g| panic!("group {g} was not needed"),
    )
}

fn set(modes: &[Mode]) -> Modes {
    modes.iter().copied().collect()
}
