//! An ACL that is another RDF source: the form of `<resource>/fcr:acl` that Fedora API §5.4
//! ("ACL linking on resource creation") leads to, when a client names an existing LDP-RS
//! as the ACL of a resource it creates (`Link: <source>; rel="acl"`).
//!
//! The link is stored as the resource's own ACL holding a single statement,
//! `<resource/fcr:acl> owl:sameAs <source>`: in OCFL that is an ordinary ACL as Fedora 6
//! stores it (Fedora opens it, and finds no authorization in it), and a rebuild reads it
//! back like any ACL. The source's authorizations then decide for the resource.

use oxrdf::{NamedNode, Term, Triple};

use super::vocab;

/// The statement that makes `acl_id` (a resource's `fcr:acl`) the RDF source `source`.
pub fn acl_link(acl_id: &str, source: &str) -> Triple {
    Triple::new(
        NamedNode::new_unchecked(acl_id),
        NamedNode::new_unchecked(vocab::OWL_SAME_AS),
        NamedNode::new_unchecked(source),
    )
}

/// The RDF source an ACL's triples link to ([`acl_link`]), if they hold such a link.
pub fn linked_acl_source(acl_id: &str, triples: &[Triple]) -> Option<String> {
    triples.iter().find_map(|t| {
        let about =
            matches!(&t.subject, oxrdf::NamedOrBlankNode::NamedNode(n) if n.as_str() == acl_id);
        match &t.object {
            Term::NamedNode(source) if about && t.predicate.as_str() == vocab::OWL_SAME_AS => {
                Some(source.as_str().to_string())
            }
            _ => None,
        }
    })
}

/// An authorization of `acl_id` about `resource` that grants no mode: added to a linked
/// ACL, it makes the ACL decide for the resource (an ACL with an authorization does, by
/// Fedora 6's rule) even when the source grants nothing, so that access never falls back
/// to an ancestor's ACL.
pub fn grants_nothing(acl_id: &str, resource: &str) -> Vec<Triple> {
    let subject = NamedNode::new_unchecked(format!("{acl_id}#linked"));
    vec![
        Triple::new(
            subject.clone(),
            NamedNode::new_unchecked(vocab::RDF_TYPE),
            NamedNode::new_unchecked(vocab::AUTHORIZATION),
        ),
        Triple::new(
            subject,
            NamedNode::new_unchecked(vocab::ACCESS_TO),
            NamedNode::new_unchecked(resource),
        ),
    ]
}
