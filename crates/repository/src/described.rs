//! What a binary's description says about the binary itself.
//!
//! Fedora 6 applies `ebucore:filename` and `ebucore:hasMimeType` stated about the binary in
//! its description to the binary (its filename and `Content-Type` change; each has one
//! value), which is how Fedora's import-export tool restores them. `premis:hasSize`,
//! `premis:hasMessageDigest` and Fedora 7's `premis3:size` are computed from the bytes:
//! server managed (refused, or dropped under lenient handling), never stored as user
//! triples.

use arca_model::{FedoraId, ResourceHeaders};
use arca_rdf::vocab::{
    EBUCORE_FILENAME, EBUCORE_HAS_MIME_TYPE, PREMIS3_SIZE, PREMIS_HAS_MESSAGE_DIGEST,
    PREMIS_HAS_SIZE,
};
use oxrdf::{NamedOrBlankNode, Term, Triple};

use crate::{Constraint, Error, Result};

/// The filename and media type a description states for its binary.
#[derive(Debug, Default)]
pub(crate) struct BinaryFacts {
    filename: Option<String>,
    mime: Option<String>,
}

impl BinaryFacts {
    /// Whether the description stated neither.
    pub(crate) fn is_empty(&self) -> bool {
        self.filename.is_none() && self.mime.is_none()
    }

    /// Sets them on the binary's headers; whether anything changed.
    pub(crate) fn apply(self, headers: &mut ResourceHeaders) -> bool {
        let mut changed = false;
        if self.filename.is_some() && self.filename != headers.filename {
            headers.filename = self.filename;
            changed = true;
        }
        if self.mime.is_some() && self.mime != headers.mime_type {
            headers.mime_type = self.mime;
            changed = true;
        }
        changed
    }
}

fn about_binary(description: &FedoraId, t: &Triple) -> bool {
    matches!(&t.subject, NamedOrBlankNode::NamedNode(s) if s.as_str() == description.base().iri())
}

/// Whether `t` states a value the server computes from the binary's bytes.
pub(crate) fn is_computed(description: &FedoraId, t: &Triple) -> bool {
    about_binary(description, t)
        && [PREMIS_HAS_SIZE, PREMIS_HAS_MESSAGE_DIGEST, PREMIS3_SIZE]
            .contains(&t.predicate.as_str())
}

/// Takes the statements of the binary's filename and media type out of its description's
/// `triples`. Two different values for one of them, a value that is not a literal, or a
/// media type that is not `type/subtype` is refused (409) and changes nothing.
pub(crate) fn take_binary_facts(
    description: &FedoraId,
    triples: Vec<Triple>,
) -> Result<(Vec<Triple>, BinaryFacts)> {
    let mut facts = BinaryFacts::default();
    let mut kept = Vec::with_capacity(triples.len());
    for t in triples {
        let slot = match t.predicate.as_str() {
            EBUCORE_FILENAME if about_binary(description, &t) => &mut facts.filename,
            EBUCORE_HAS_MIME_TYPE if about_binary(description, &t) => &mut facts.mime,
            _ => {
                kept.push(t);
                continue;
            }
        };
        let refuse = |why: &str| {
            Err(Error::constraint(
                Constraint::ServerManagedTriples,
                format!("<{}> of the binary {why}", t.predicate.as_str()),
            ))
        };
        let Term::Literal(value) = &t.object else {
            return refuse("must be a literal");
        };
        let value = value.value().to_string();
        if slot.as_ref().is_some_and(|v| *v != value) {
            return refuse("can have only one value");
        }
        *slot = Some(value);
    }
    if let Some(m) = &facts.mime {
        let valid = m.split_once('/').is_some_and(|(ty, sub)| {
            !ty.is_empty() && !sub.is_empty() && !m.chars().any(|c| c.is_control())
        });
        if !valid {
            return Err(Error::constraint(
                Constraint::ServerManagedTriples,
                format!("\"{m}\" is not a media type (type/subtype)"),
            ));
        }
    }
    Ok((kept, facts))
}
