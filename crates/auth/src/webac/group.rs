//! Group listings (`vcard:Group` resources named by `acl:agentGroup`).

use oxrdf::{NamedOrBlankNode, Term, Triple};

use super::{vocab, Agent};

/// Whether `agent` is a member of the group `group_iri`, given the triples of the resource
/// holding the listing (for `info:fedora/groups#editors`, the triples of `info:fedora/groups`).
///
/// As Fedora 6 (`WebACRolesProvider.getAgentMembers`): for a hash IRI only subjects ending in
/// that `#fragment` count, otherwise every subject of the resource; one of them must be typed
/// `vcard:Group`, else the listing names nobody; each `vcard:hasMember` object, an IRI or a
/// literal, names a member and is compared like `acl:agent` (see [`Agent::is_named_by`]): the
/// user's agent IRI, the bare user name (what is left once Fedora strips the user base URI),
/// or one of the agent's role-group IRIs. Anonymous agents are members of no group.
pub fn group_has_member(triples: &[Triple], group_iri: &str, agent: &Agent) -> bool {
    if agent.user.is_none() {
        return false;
    }
    let fragment = group_iri.find('#').map(|i| &group_iri[i..]);
    let in_scope = |t: &&Triple| match fragment {
        None => true,
        Some(fragment) => {
            matches!(&t.subject, NamedOrBlankNode::NamedNode(s) if s.as_str().ends_with(fragment))
        }
    };
    let is_group = triples.iter().filter(in_scope).any(|t| {
        t.predicate.as_str() == vocab::RDF_TYPE
            && matches!(&t.object, Term::NamedNode(o) if o.as_str() == vocab::VCARD_GROUP)
    });
    is_group
        && triples
            .iter()
            .filter(in_scope)
            .filter(|t| t.predicate.as_str() == vocab::VCARD_HAS_MEMBER)
            .any(|t| match &t.object {
                Term::NamedNode(n) => agent.is_named_by(n.as_str()),
                Term::Literal(l) => agent.is_named_by(l.value()),
                _ => false,
            })
}
