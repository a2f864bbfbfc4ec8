use oxrdf::{Term, Triple};

use crate::vocab::{FEDORA_NS, LDP_CONTAINS, LDP_NS, MEMENTO_NS, RDF_TYPE};
use crate::IdMapper;

/// Splits client statements into those it may set and those the server manages.
///
/// Server managed: any predicate in the Fedora namespace (`fedora:created`, `fedora:hasParent`,
/// …), `ldp:contains`, and `rdf:type` with an object in the LDP, Fedora or Memento namespace
/// (interaction models are chosen with `Link: rel="type"`, not with triples). `ldp:member` and
/// the direct-container predicates are client data. Fedora answers 409 when the second list is
/// not empty, unless the client sent `Prefer: handling=lenient`; then it drops them.
///
/// Returns `(kept, rejected)`, both in input order.
pub fn split_server_managed(triples: Vec<Triple>) -> (Vec<Triple>, Vec<Triple>) {
    triples.into_iter().partition(|t| !is_server_managed(t))
}

fn is_server_managed(t: &Triple) -> bool {
    let p = t.predicate.as_str();
    if p.starts_with(FEDORA_NS) || p == LDP_CONTAINS {
        return true;
    }
    p == RDF_TYPE
        && matches!(&t.object, Term::NamedNode(o)
            if [LDP_NS, FEDORA_NS, MEMENTO_NS].iter().any(|ns| o.as_str().starts_with(ns)))
}

/// A message for a 409 body naming the refused statements, one N-Triples line each, with
/// external URLs.
pub fn describe_statements(triples: &[Triple], mapper: &IdMapper) -> String {
    let mut message = String::from("These statements are server managed and cannot be changed by clients (send `Prefer: handling=lenient` to drop them instead):\n");
    for t in triples {
        message.push_str(&format!("{} .\n", mapper.triple_to_external(t.clone())));
    }
    message
}
