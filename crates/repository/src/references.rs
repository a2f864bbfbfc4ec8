//! Inbound references: the statements of one resource that point at another repository
//! resource, recorded per source resource so that the target can list them
//! (`Prefer: return=representation; include="…fcrepo#PreferInboundReferences"`).

use arca_catalog::ReferenceRow;
use arca_model::FedoraId;
use oxrdf::{NamedOrBlankNode, Term, Triple};

/// The references in the triples of resource `source`: statements with an IRI subject whose
/// object is another repository resource. Statements pointing at the resource itself (or its
/// binary) are part of its own answer and are left out; hash URIs and blank nodes name no
/// resource. A description speaks about its binary, but the reference is the description's:
/// its subject is named as the description, as Fedora 6 lists it.
pub(crate) fn references(source: &FedoraId, triples: &[Triple]) -> Vec<ReferenceRow> {
    let own = source.base();
    let own_iri = own.iri();
    let mut rows: Vec<ReferenceRow> = triples
        .iter()
        .filter_map(|t| {
            let NamedOrBlankNode::NamedNode(subject) = &t.subject else {
                return None;
            };
            let Term::NamedNode(object) = &t.object else {
                return None;
            };
            let target = FedoraId::from_iri(object.as_str())?;
            if target == own || &target == source {
                return None;
            }
            let subject = if source.is_description() && subject.as_str() == own_iri {
                source.iri()
            } else {
                subject.as_str().to_string()
            };
            Some(ReferenceRow {
                subject,
                predicate: t.predicate.as_str().to_string(),
                target,
            })
        })
        .collect();
    rows.sort();
    rows.dedup();
    rows
}

/// Whether N-Triples may hold a reference: an object that is a repository IRI follows a
/// predicate as `> <info:fedora`. False means certainly none, so the triples need no parse.
pub(crate) fn may_refer(ntriples: &[u8]) -> bool {
    const OBJECT: &[u8] = b"> <info:fedora";
    ntriples.windows(OBJECT.len()).any(|w| w == OBJECT)
}

#[cfg(test)]
mod tests {
    use oxrdf::{BlankNode, Literal, NamedNode};

    use super::*;

    fn t(s: &str, o: Term) -> Triple {
        Triple::new(
            NamedNode::new_unchecked(s),
            NamedNode::new_unchecked("http://purl.org/dc/terms/relation"),
            o,
        )
    }

    fn iri(i: &str) -> Term {
        NamedNode::new_unchecked(i).into()
    }

    #[test]
    fn only_statements_naming_other_resources_count() {
        let a = FedoraId::from_path("a").unwrap();
        let rows = references(
            &a,
            &[
                t("info:fedora/a", iri("info:fedora/b")),
                t("info:fedora/a#part", iri("info:fedora/c%20d")),
                t("info:fedora/a", iri("info:fedora/a")),
                t("info:fedora/a", iri("info:fedora/b#frag")),
                t("info:fedora/a", iri("http://example.org/x")),
                t(
                    "info:fedora/a",
                    Literal::new_simple_literal("info:fedora/b").into(),
                ),
                Triple::new(
                    BlankNode::new_unchecked("x"),
                    NamedNode::new_unchecked("http://purl.org/dc/terms/relation"),
                    iri("info:fedora/b"),
                ),
            ],
        );
        let targets: Vec<&str> = rows.iter().map(|r| r.target.as_str()).collect();
        assert_eq!(targets, ["info:fedora/b", "info:fedora/c d"]);
        assert_eq!(rows[1].subject, "info:fedora/a#part");
    }

    #[test]
    fn the_prefilter_never_misses_a_reference() {
        let a = FedoraId::from_path("a").unwrap();
        let with = vec![t("info:fedora/a", iri("info:fedora/b"))];
        let nt = arca_rdf::to_ntriples(&with);
        assert!(may_refer(&nt));
        assert_eq!(references(&a, &with).len(), 1);
        let without = vec![t("info:fedora/a", iri("http://example.org/b"))];
        assert!(!may_refer(&arca_rdf::to_ntriples(&without)));
    }

    #[test]
    fn a_description_does_not_refer_to_its_binary() {
        let desc = FedoraId::from_path("bin").unwrap().description();
        let rows = references(
            &desc,
            &[
                t("info:fedora/bin", iri("info:fedora/bin")),
                t("info:fedora/bin", iri("info:fedora/other")),
            ],
        );
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].target.as_str(), "info:fedora/other");
        assert_eq!(rows[0].subject, "info:fedora/bin/fcr:metadata");
    }
}
