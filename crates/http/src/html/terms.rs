//! RDF terms as a page shows them: short names and labels for well-known predicates, links
//! for IRIs inside the repository (and web IRIs), literals as text.

use arca_rdf::{vocab, IdMapper};
use oxrdf::{NamedOrBlankNode, Term, Triple};
use serde::Serialize;

/// A term ready to show: its text, a link when it names something a browser can open, and
/// a note (the full IRI of a short name, a literal's datatype or language).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Shown {
    pub text: String,
    pub href: Option<String>,
    pub note: Option<String>,
}

/// One statement as a table row.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    /// The subject when it is not the page's resource (a hash URI, a blank node).
    pub subject: Option<Shown>,
    pub predicate: Shown,
    pub object: Shown,
}

const XSD_STRING: &str = "http://www.w3.org/2001/XMLSchema#string";

/// Labels of the predicates people meet most.
const LABELS: &[(&str, &str)] = &[
    (vocab::RDF_TYPE, "type"),
    (vocab::FEDORA_CREATED, "created"),
    (vocab::FEDORA_CREATED_BY, "created by"),
    (vocab::FEDORA_LAST_MODIFIED, "last modified"),
    (vocab::FEDORA_LAST_MODIFIED_BY, "last modified by"),
    (vocab::FEDORA_HAS_PARENT, "parent"),
    (vocab::FEDORA_HAS_FIXITY_SERVICE, "fixity service"),
    (vocab::FEDORA_HAS_TRANSACTION_PROVIDER, "transactions"),
    (vocab::EBUCORE_FILENAME, "file name"),
    (vocab::EBUCORE_HAS_MIME_TYPE, "media type"),
    (vocab::PREMIS_HAS_SIZE, "size"),
    (vocab::PREMIS_HAS_MESSAGE_DIGEST, "digest"),
    (vocab::LDP_CONTAINS, "contains"),
    ("http://purl.org/dc/terms/title", "title"),
    ("http://purl.org/dc/elements/1.1/title", "title"),
    ("http://purl.org/dc/terms/description", "description"),
    ("http://purl.org/dc/terms/creator", "creator"),
    ("http://purl.org/dc/terms/identifier", "identifier"),
    ("http://www.w3.org/2000/01/rdf-schema#label", "label"),
];

/// `prefix:name` for an IRI in a well-known namespace.
pub(crate) fn short_name(iri: &str) -> Option<String> {
    vocab::PREFIXES.iter().find_map(|(prefix, ns)| {
        iri.strip_prefix(ns)
            .filter(|rest| !rest.is_empty() && !rest.contains(['/', '#']))
            .map(|rest| format!("{prefix}:{rest}"))
    })
}

/// A predicate: its label (or short name, or the IRI), the full IRI as the note.
pub(crate) fn predicate(iri: &str) -> Shown {
    let text = LABELS
        .iter()
        .find(|(p, _)| *p == iri)
        .map(|(_, l)| l.to_string())
        .or_else(|| short_name(iri))
        .unwrap_or_else(|| iri.to_string());
    Shown {
        text,
        href: None,
        note: Some(iri.to_string()),
    }
}

/// An IRI: inside the repository, a link to its page (shown as its path); on the web, a
/// link; anything else (`urn:`, `info:`), text.
pub(crate) fn iri(iri: &str, mapper: &IdMapper) -> Shown {
    let external = mapper.to_external(iri);
    let base = mapper.base();
    if let Some(path) = external.strip_prefix(base) {
        let path = path.trim_start_matches('/');
        return Shown {
            text: if path.is_empty() {
                "/ (the repository root)".into()
            } else {
                format!("/{path}")
            },
            href: Some(external.clone()),
            note: Some(external),
        };
    }
    let web = external.starts_with("http://") || external.starts_with("https://");
    match short_name(&external) {
        Some(short) => Shown {
            text: short,
            href: None,
            note: Some(external),
        },
        None => Shown {
            href: web.then(|| external.clone()),
            text: external,
            note: None,
        },
    }
}

/// Any object.
pub(crate) fn term(t: &Term, mapper: &IdMapper) -> Shown {
    match t {
        Term::NamedNode(n) => iri(n.as_str(), mapper),
        Term::BlankNode(b) => Shown {
            text: format!("_:{}", b.as_str()),
            href: None,
            note: Some("blank node".into()),
        },
        Term::Literal(l) => {
            let note = match l.language() {
                Some(lang) => Some(format!("@{lang}")),
                None if l.datatype().as_str() == XSD_STRING => None,
                None => Some(
                    short_name(l.datatype().as_str())
                        .unwrap_or_else(|| l.datatype().as_str().to_string()),
                ),
            };
            Shown {
                text: l.value().to_string(),
                href: None,
                note,
            }
        }
        #[allow(unreachable_patterns)]
        _ => Shown {
            text: t.to_string(),
            href: None,
            note: None,
        },
    }
}

fn subject(s: &NamedOrBlankNode, mapper: &IdMapper) -> Shown {
    match s {
        NamedOrBlankNode::NamedNode(n) => iri(n.as_str(), mapper),
        NamedOrBlankNode::BlankNode(b) => Shown {
            text: format!("_:{}", b.as_str()),
            href: None,
            note: Some("blank node".into()),
        },
        #[allow(unreachable_patterns)]
        _ => Shown {
            text: s.to_string(),
            href: None,
            note: None,
        },
    }
}

/// The rows of `triples`, the subject shown only where it is not `about` (an internal IRI).
pub(crate) fn rows(triples: &[Triple], about: &str, mapper: &IdMapper) -> Vec<Row> {
    triples
        .iter()
        .map(|t| Row {
            subject: match &t.subject {
                NamedOrBlankNode::NamedNode(n) if n.as_str() == about => None,
                s => Some(subject(s, mapper)),
            },
            predicate: predicate(t.predicate.as_str()),
            object: term(&t.object, mapper),
        })
        .collect()
}

/// A byte count for people: `1.5 MiB (1,572,864 bytes)`.
pub(crate) fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {} ({bytes} bytes)", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_links() {
        let m = IdMapper::new("http://h/rest");
        assert_eq!(predicate(vocab::FEDORA_CREATED).text, "created");
        assert_eq!(
            predicate("http://purl.org/dc/terms/subject").text,
            "dcterms:subject"
        );
        let inside = iri("info:fedora/a/b", &m);
        assert_eq!(inside.href.as_deref(), Some("http://h/rest/a/b"));
        assert_eq!(inside.text, "/a/b");
        assert_eq!(iri("javascript:alert(1)", &m).href, None);
        assert_eq!(
            iri("https://example.org/x", &m).href.as_deref(),
            Some("https://example.org/x")
        );
        assert_eq!(size(10), "10 bytes");
        assert_eq!(size(1536), "1.5 KiB (1536 bytes)");
    }
}
