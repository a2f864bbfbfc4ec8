//! JSON-LD responses in the three forms of JSON-LD 1.1 (§9 of the syntax, the `profile`
//! parameter of `application/ld+json`), as Fedora 7 serves them.
//!
//! The expanded form is the "Serialize RDF as JSON-LD" algorithm of the JSON-LD 1.1 API with
//! `useNativeTypes` and `useRdfType` false (as Fedora 7 calls it): one node object per subject,
//! `rdf:type` as `@type`, literals as value objects. The flattened and compacted forms are the
//! Flattening and Compaction algorithms applied to that output, restricted to what it can hold:
//! node objects whose values are value objects or node references (nothing embedded, no lists),
//! and a context made only of prefix definitions (no `@vocab`, `@base`, coercion or
//! containers). Within those limits each step is the specification's; the tests read every
//! form back with oxjsonld, a JSON-LD 1.1 parser, and compare the triples.

use std::collections::HashMap;

use oxrdf::{NamedOrBlankNode, Term, Triple};
use serde_json::{Map, Value};

use crate::vocab::{PREFIXES, RDF_TYPE};

/// The IRI of JSON-LD's expanded form.
pub const EXPANDED: &str = "http://www.w3.org/ns/json-ld#expanded";
/// The IRI of JSON-LD's compacted form.
pub const COMPACTED: &str = "http://www.w3.org/ns/json-ld#compacted";
/// The IRI of JSON-LD's flattened form.
pub const FLATTENED: &str = "http://www.w3.org/ns/json-ld#flattened";

const XSD_STRING: &str = "http://www.w3.org/2001/XMLSchema#string";
const RDF_LANG_STRING: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString";

/// A JSON-LD document form, named by the `profile` parameter of `application/ld+json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum JsonLdProfile {
    /// `…#expanded`: full IRIs, every value in an array; the default (as Fedora 7).
    #[default]
    Expanded,
    /// `…#compacted`: a `@context` of the repository's prefixes, short names, single values
    /// unwrapped.
    Compacted,
    /// `…#flattened`: a top-level array of node objects, sorted, blank nodes relabelled.
    Flattened,
    /// `…#flattened …#compacted` together: the flattened form compacted with the context.
    FlattenedCompacted,
}

impl JsonLdProfile {
    /// The form a `profile` parameter asks for: its space-separated IRIs name `#flattened`,
    /// `#compacted`, both, or neither (the expanded form, also for unknown or malformed
    /// values, as Fedora 7).
    pub fn from_parameter(value: &str) -> Self {
        let named = |iri| value.split_whitespace().any(|t| t == iri);
        match (named(FLATTENED), named(COMPACTED)) {
            (true, true) => Self::FlattenedCompacted,
            (true, false) => Self::Flattened,
            (false, true) => Self::Compacted,
            (false, false) => Self::Expanded,
        }
    }

    /// The `profile` parameter's value naming this form (unquoted).
    pub fn parameter(self) -> &'static str {
        match self {
            Self::Expanded => EXPANDED,
            Self::Compacted => COMPACTED,
            Self::Flattened => FLATTENED,
            Self::FlattenedCompacted => {
                "http://www.w3.org/ns/json-ld#flattened http://www.w3.org/ns/json-ld#compacted"
            }
        }
    }
}

/// Writes external-URL `triples` (sorted and deduplicated, grouped by subject) as a JSON-LD
/// document in `profile`'s form.
pub(crate) fn write(triples: &[Triple], profile: JsonLdProfile) -> Vec<u8> {
    let nodes = expand(triples);
    let document = match profile {
        JsonLdProfile::Expanded => Value::Array(nodes.into_iter().map(Value::Object).collect()),
        JsonLdProfile::Flattened => {
            Value::Array(flatten(nodes).into_iter().map(Value::Object).collect())
        }
        JsonLdProfile::Compacted => compact(nodes, &context(triples)),
        JsonLdProfile::FlattenedCompacted => compact(flatten(nodes), &context(triples)),
    };
    serde_json::to_vec(&document).expect("a JSON value always serializes")
}

/// One node object per subject, in the order of `triples`: `@id`, `@type`, then the
/// properties in order of first appearance, each an array of values.
fn expand(triples: &[Triple]) -> Vec<Map<String, Value>> {
    let mut nodes: Vec<Map<String, Value>> = Vec::new();
    let mut index: HashMap<&NamedOrBlankNode, usize> = HashMap::new();
    for t in triples {
        let i = *index.entry(&t.subject).or_insert_with(|| {
            let mut node = Map::new();
            node.insert("@id".into(), Value::String(node_id(&t.subject)));
            nodes.push(node);
            nodes.len() - 1
        });
        let node = &mut nodes[i];
        let (key, value) = match &t.object {
            Term::NamedNode(n) if t.predicate.as_str() == RDF_TYPE => {
                ("@type".to_string(), Value::String(n.as_str().to_string()))
            }
            Term::BlankNode(b) if t.predicate.as_str() == RDF_TYPE => (
                "@type".to_string(),
                Value::String(format!("_:{}", b.as_str())),
            ),
            object => (t.predicate.as_str().to_string(), expand_value(object)),
        };
        match node.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
            Value::Array(values) if !values.contains(&value) => values.push(value),
            _ => {}
        }
    }
    nodes
}

fn node_id(subject: &NamedOrBlankNode) -> String {
    match subject {
        NamedOrBlankNode::NamedNode(n) => n.as_str().to_string(),
        NamedOrBlankNode::BlankNode(b) => format!("_:{}", b.as_str()),
    }
}

/// A node reference or a value object (`useNativeTypes` false: the lexical form as a string,
/// `xsd:string` left implicit, a language tag instead of `rdf:langString`).
fn expand_value(object: &Term) -> Value {
    let mut v = Map::new();
    match object {
        Term::NamedNode(n) => {
            v.insert("@id".into(), Value::String(n.as_str().to_string()));
        }
        Term::BlankNode(b) => {
            v.insert("@id".into(), Value::String(format!("_:{}", b.as_str())));
        }
        Term::Literal(l) => {
            v.insert("@value".into(), Value::String(l.value().to_string()));
            if let Some(language) = l.language() {
                v.insert("@language".into(), Value::String(language.to_string()));
            } else if l.datatype().as_str() != XSD_STRING
                && l.datatype().as_str() != RDF_LANG_STRING
            {
                v.insert(
                    "@type".into(),
                    Value::String(l.datatype().as_str().to_string()),
                );
            }
        }
        #[allow(unreachable_patterns)]
        other => {
            v.insert("@value".into(), Value::String(other.to_string()));
        }
    }
    Value::Object(v)
}

/// The Flattening algorithm over expanded node objects: blank nodes relabelled `_:b0`, `_:b1`…
/// in the order the node map meets them, nodes sorted by `@id`, entries sorted by key, nodes
/// holding only an `@id` left out.
fn flatten(nodes: Vec<Map<String, Value>>) -> Vec<Map<String, Value>> {
    let mut labels: HashMap<String, String> = HashMap::new();
    let mut relabel = |id: &str| -> String {
        if !id.starts_with("_:") {
            return id.to_string();
        }
        let next = format!("_:b{}", labels.len());
        labels.entry(id.to_string()).or_insert(next).clone()
    };
    let mut flat: Vec<Map<String, Value>> = Vec::with_capacity(nodes.len());
    for node in nodes {
        if node.len() <= 1 {
            continue;
        }
        let mut entries: Vec<(String, Value)> = node.into_iter().collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = Map::new();
        for (key, value) in entries {
            let value = match value {
                Value::String(id) => Value::String(relabel(&id)),
                Value::Array(items) => Value::Array(
                    items
                        .into_iter()
                        .map(|item| match item {
                            Value::String(t) => Value::String(relabel(&t)),
                            Value::Object(mut o) => {
                                if let Some(Value::String(id)) = o.get("@id") {
                                    let id = relabel(id);
                                    o.insert("@id".into(), Value::String(id));
                                }
                                Value::Object(o)
                            }
                            other => other,
                        })
                        .collect(),
                ),
                other => other,
            };
            out.insert(key, value);
        }
        flat.push(out);
    }
    flat.sort_by(|a, b| id_of(a).cmp(id_of(b)));
    flat
}

fn id_of(node: &Map<String, Value>) -> &str {
    node.get("@id").and_then(Value::as_str).unwrap_or("")
}

/// The context of a compacted answer, as Fedora 7 builds it: the repository's prefixes
/// ([`PREFIXES`]) whose namespace a predicate or an `rdf:type` object uses. A prefix that
/// some IRI of the graph has as its scheme (`dc:x` with no `//`) is left out: with it, that
/// IRI would read back as a compact IRI (the "IRI confused with prefix" case of IRI
/// compaction).
fn context(triples: &[Triple]) -> Vec<(&'static str, &'static str)> {
    let confused = |prefix: &str| {
        let scheme = format!("{prefix}:");
        let clashes =
            |iri: &str| iri.starts_with(&scheme) && !iri[scheme.len()..].starts_with("//");
        triples.iter().any(|t| {
            let subject =
                matches!(&t.subject, NamedOrBlankNode::NamedNode(n) if clashes(n.as_str()));
            let object = match &t.object {
                Term::NamedNode(n) => clashes(n.as_str()),
                Term::Literal(l) => clashes(l.datatype().as_str()),
                _ => false,
            };
            subject || object || clashes(t.predicate.as_str())
        })
    };
    PREFIXES
        .iter()
        .copied()
        .filter(|(_, ns)| {
            triples.iter().any(|t| {
                let p = t.predicate.as_str();
                let typed = p == RDF_TYPE
                    && matches!(&t.object, Term::NamedNode(n) if n.as_str().starts_with(ns));
                p.starts_with(ns) || typed
            })
        })
        .filter(|(prefix, _)| !confused(prefix))
        .collect()
}

/// The Compaction algorithm over flat node objects with a context of prefixes: IRIs of
/// properties and types compacted as vocabulary IRIs, `@id`s as document IRIs (never to a
/// bare term), plain strings unwrapped from their value objects, single values unwrapped
/// from their arrays; one node becomes the document, several go into `@graph`.
fn compact(nodes: Vec<Map<String, Value>>, context: &[(&str, &str)]) -> Value {
    let iri = |iri: &str, vocab: bool| compact_iri(iri, vocab, context);
    let mut compacted: Vec<Value> = Vec::with_capacity(nodes.len());
    for node in nodes {
        let mut out = Map::new();
        for (key, value) in node {
            let Value::Array(values) = value else {
                // `@id`.
                let id = value.as_str().unwrap_or_default();
                out.insert(key, Value::String(iri(id, false)));
                continue;
            };
            let (key, mut values): (String, Vec<Value>) = if key == "@type" {
                let types = values
                    .iter()
                    .map(|t| Value::String(iri(t.as_str().unwrap_or_default(), true)))
                    .collect();
                (key, types)
            } else {
                let values = values
                    .into_iter()
                    .map(|v| compact_value(v, context))
                    .collect();
                (iri(&key, true), values)
            };
            let value = if values.len() == 1 {
                values.remove(0)
            } else {
                Value::Array(values)
            };
            out.insert(key, value);
        }
        compacted.push(Value::Object(out));
    }
    let mut document = Map::new();
    if !context.is_empty() {
        let ctx: Map<String, Value> = context
            .iter()
            .map(|(p, ns)| (p.to_string(), Value::String(ns.to_string())))
            .collect();
        document.insert("@context".into(), Value::Object(ctx));
    }
    match compacted.len() {
        0 => {}
        1 => {
            if let Some(Value::Object(node)) = compacted.pop() {
                document.extend(node);
            }
        }
        _ => {
            document.insert("@graph".into(), Value::Array(compacted));
        }
    }
    Value::Object(document)
}

fn compact_value(value: Value, context: &[(&str, &str)]) -> Value {
    let Value::Object(mut v) = value else {
        return value;
    };
    if let Some(Value::String(id)) = v.get("@id") {
        let id = compact_iri(id, false, context);
        v.insert("@id".into(), Value::String(id));
        return Value::Object(v);
    }
    if v.len() == 1 {
        // A plain string: no type, no language.
        if let Some(s) = v.remove("@value") {
            return s;
        }
    }
    if let Some(Value::String(datatype)) = v.get("@type") {
        let datatype = compact_iri(datatype, true, context);
        v.insert("@type".into(), Value::String(datatype));
    }
    Value::Object(v)
}

/// IRI compaction (JSON-LD 1.1 API §6.2) with a context of prefix definitions: a vocabulary
/// IRI equal to a prefix's IRI is that term; otherwise the shortest, then least, compact IRI
/// `prefix:suffix` (never one whose suffix starts with `//`, which would read back as an
/// absolute IRI); otherwise the IRI itself.
fn compact_iri(iri: &str, vocab: bool, context: &[(&str, &str)]) -> String {
    if vocab {
        if let Some((term, _)) = context.iter().find(|(_, ns)| *ns == iri) {
            return term.to_string();
        }
    }
    context
        .iter()
        .filter_map(|(prefix, ns)| {
            let suffix = iri.strip_prefix(ns)?;
            (!suffix.is_empty() && !suffix.starts_with("//")).then(|| format!("{prefix}:{suffix}"))
        })
        .min_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
        .unwrap_or_else(|| iri.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_from_the_parameter() {
        use JsonLdProfile::*;
        assert_eq!(JsonLdProfile::from_parameter(COMPACTED), Compacted);
        assert_eq!(JsonLdProfile::from_parameter(FLATTENED), Flattened);
        assert_eq!(JsonLdProfile::from_parameter(EXPANDED), Expanded);
        assert_eq!(
            JsonLdProfile::from_parameter(&format!(" {COMPACTED}  {FLATTENED} ")),
            FlattenedCompacted
        );
        for unknown in [
            "",
            "http://www.w3.org/ns/json-ld#nonsense",
            "compacted",
            "\"",
        ] {
            assert_eq!(
                JsonLdProfile::from_parameter(unknown),
                Expanded,
                "{unknown}"
            );
        }
        for p in [Expanded, Compacted, Flattened, FlattenedCompacted] {
            assert_eq!(JsonLdProfile::from_parameter(p.parameter()), p);
        }
    }

    #[test]
    fn iri_compaction() {
        let ctx = [
            ("dcterms", "http://purl.org/dc/terms/"),
            ("dc", "http://purl.org/dc/"),
        ];
        let c = |iri, vocab| compact_iri(iri, vocab, &ctx);
        assert_eq!(c("http://purl.org/dc/terms/title", true), "dcterms:title");
        // The shortest compact IRI wins.
        assert_eq!(c("http://purl.org/dc/terms/title", false), "dcterms:title");
        assert_eq!(c("http://purl.org/dc/x", false), "dc:x");
        // A vocabulary IRI equal to a prefix is the term; an @id is not.
        assert_eq!(c("http://purl.org/dc/terms/", true), "dcterms");
        assert_eq!(c("http://purl.org/dc/terms/", false), "dc:terms/");
        assert_eq!(c("http://purl.org/dc/", false), "http://purl.org/dc/");
        assert_eq!(c("http://purl.org/dc///x", false), "http://purl.org/dc///x");
        assert_eq!(c("http://example.org/x", true), "http://example.org/x");
    }
}
