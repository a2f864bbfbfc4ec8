//! Which subjects a resource's triples may have.
//!
//! A resource's RDF speaks about the resource: its own IRI, IRIs inside it (hash URIs,
//! `<#part>`) and blank nodes. A binary's description speaks about the binary. Statements
//! about another repository resource would be stored where that resource's owner never looks
//! (403, as Fedora 6.5 answers), and statements about something outside the repository have
//! no resource to live in (400).

use arca_model::FedoraId;
use oxrdf::{NamedOrBlankNode, Triple};

use crate::{Error, Result};

/// Checks that every triple is about `id` (for a description: about its binary, or the
/// description itself), one of its hash URIs, or a blank node.
pub(crate) fn check_subjects<'a>(
    id: &FedoraId,
    triples: impl IntoIterator<Item = &'a Triple>,
) -> Result<()> {
    let own = [id.base().iri(), id.iri()];
    for t in triples {
        let NamedOrBlankNode::NamedNode(subject) = &t.subject else {
            continue;
        };
        let s = subject.as_str();
        let document = s.split_once('#').map_or(s, |(doc, _)| doc);
        if own.iter().any(|o| o == document) {
            continue;
        }
        let in_repository = document == arca_model::ROOT_ID || document.starts_with("info:fedora/");
        return Err(if in_repository {
            Error::OtherResourceSubject(s.to_string())
        } else {
            Error::OutsideSubject(s.to_string())
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use oxrdf::{BlankNode, Literal, NamedNode};

    use super::*;

    fn about(subject: &str) -> Triple {
        let s: NamedOrBlankNode = match subject.strip_prefix("_:") {
            Some(b) => BlankNode::new_unchecked(b).into(),
            None => NamedNode::new_unchecked(subject).into(),
        };
        Triple::new(
            s,
            NamedNode::new_unchecked("http://purl.org/dc/terms/title"),
            Literal::new_simple_literal("t"),
        )
    }

    fn check(id: &str, subject: &str) -> Result<()> {
        let id = FedoraId::from_path(id).unwrap();
        check_subjects(&id, &[about(subject)])
    }

    #[test]
    fn own_subjects_pass() {
        check("a", "info:fedora/a").unwrap();
        check("a", "info:fedora/a#part").unwrap();
        check("a", "_:b0").unwrap();
        check("", "info:fedora").unwrap();
        check("", "info:fedora#x").unwrap();
        check("a/bin/fcr:metadata", "info:fedora/a/bin").unwrap();
        check("a/bin/fcr:metadata", "info:fedora/a/bin/fcr:metadata").unwrap();
    }

    #[test]
    fn other_subjects_fail() {
        assert!(matches!(
            check("a", "info:fedora/b"),
            Err(Error::OtherResourceSubject(_))
        ));
        assert!(matches!(
            check("a", "info:fedora/a/child"),
            Err(Error::OtherResourceSubject(_))
        ));
        assert!(matches!(
            check("a", "info:fedora/ab"),
            Err(Error::OtherResourceSubject(_))
        ));
        assert!(matches!(
            check("a", "info:fedora"),
            Err(Error::OtherResourceSubject(_))
        ));
        assert!(matches!(
            check("", "info:fedora/a"),
            Err(Error::OtherResourceSubject(_))
        ));
        assert!(matches!(
            check("a", "http://example.org/x"),
            Err(Error::OutsideSubject(_))
        ));
        assert!(matches!(
            check("a", "info:fedorax"),
            Err(Error::OutsideSubject(_))
        ));
    }
}
