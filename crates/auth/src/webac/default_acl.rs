//! Fedora 6's built-in root ACL.

use arca_model::ROOT_ID;
use oxrdf::{Literal, NamedNode, Triple};

use super::vocab;

fn iri(value: impl Into<String>) -> NamedNode {
    NamedNode::new_unchecked(value)
}

/// Fedora 6's default root ACL (`fcrepo-http-api/src/main/resources/root-authorization.ttl`),
/// as triples with internal ids: used when no ACL exists up the tree and the operator gave
/// none. Everyone (`foaf:Agent`) may read every resource; nobody else may do anything (admins
/// bypass WebAC).
///
/// ```turtle
/// <info:fedora/fcr:acl> a webac:Acl .
/// <info:fedora/fcr:acl#authz> a acl:Authorization ;
///    rdfs:label "Root Authorization" ;
///    rdfs:comment "By default, all non-Admin agents (foaf:Agent) only have read access (acl:Read) to the repository" ;
///    acl:agentClass foaf:Agent ;
///    acl:mode acl:Read ;
///    acl:accessTo <info:fedora> ;
///    acl:default <info:fedora> .
/// ```
pub fn default_root_acl() -> Vec<Triple> {
    let acl = iri(format!("{ROOT_ID}/fcr:acl"));
    let authz = iri(format!("{ROOT_ID}/fcr:acl#authz"));
    let root = iri(ROOT_ID);
    vec![
        Triple::new(acl, iri(vocab::RDF_TYPE), iri(vocab::WEBAC_ACL)),
        Triple::new(authz.clone(), iri(vocab::RDF_TYPE), iri(vocab::AUTHORIZATION)),
        Triple::new(
            authz.clone(),
            iri(vocab::RDFS_LABEL),
            Literal::new_simple_literal("Root Authorization"),
        ),
        Triple::new(
            authz.clone(),
            iri(vocab::RDFS_COMMENT),
            Literal::new_simple_literal(
                "By default, all non-Admin agents (foaf:Agent) only have read access (acl:Read) to the repository",
            ),
        ),
        Triple::new(authz.clone(), iri(vocab::AGENT_CLASS), iri(vocab::FOAF_AGENT)),
        Triple::new(authz.clone(), iri(vocab::MODE), iri(vocab::READ)),
        Triple::new(authz.clone(), iri(vocab::ACCESS_TO), root.clone()),
        Triple::new(authz, iri(vocab::DEFAULT), root),
    ]
}
