use oxrdf::{NamedNode, NamedOrBlankNode, Term, Triple};

/// The internal id of the repository root.
const ROOT: &str = "info:fedora";

/// Maps external URLs to internal ids and back.
///
/// `http://host/rest/a/b` ↔ `info:fedora/a/b`, `http://host/rest/` (or `…/rest`) ↔
/// `info:fedora`, fragments and queries are kept (`…/rest/a#x` ↔ `info:fedora/a#x`). One trailing
/// slash of the path is dropped, as Fedora does (`…/rest/a/` → `info:fedora/a`). Paths are kept
/// as they appear in the IRI (still percent-encoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdMapper {
    base: String,
}

impl IdMapper {
    /// A mapper for the REST root `base`, e.g. `http://localhost:8080/rest` (a trailing slash is
    /// ignored).
    pub fn new(base: &str) -> Self {
        Self {
            base: base.trim_end_matches('/').to_string(),
        }
    }

    /// The external URL of the REST root, without trailing slash.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The internal id of an external IRI, or `None` if `iri` is not under the base.
    pub fn to_internal(&self, iri: &str) -> Option<String> {
        let rest = strip_id_prefix(iri, &self.base)?;
        let split = rest.find(['#', '?']).unwrap_or(rest.len());
        let (path, suffix) = rest.split_at(split);
        let path = path.strip_suffix('/').unwrap_or(path);
        Some(format!("{ROOT}{path}{suffix}"))
    }

    /// The external URL of an internal id; any other IRI is returned unchanged. The root is
    /// `…/rest/` with its trailing slash (and `…/rest/#x` for its hash URIs), as Fedora 6
    /// names it.
    pub fn to_external(&self, internal: &str) -> String {
        match strip_id_prefix(internal, ROOT) {
            Some(rest) if rest.starts_with('/') => format!("{}{rest}", self.base),
            Some(rest) => format!("{}/{rest}", self.base),
            None => internal.to_string(),
        }
    }

    /// Maps every IRI in subject, predicate or object position to its internal id.
    /// Literals (and so their datatype IRIs) are left alone.
    pub(crate) fn triple_to_internal(&self, triple: Triple) -> Triple {
        map_triple(triple, |iri| self.to_internal(iri))
    }

    /// Maps every internal id in subject, predicate or object position to its external URL.
    pub(crate) fn triple_to_external(&self, triple: Triple) -> Triple {
        map_triple(triple, |iri| {
            strip_id_prefix(iri, ROOT).map(|_| self.to_external(iri))
        })
    }
}

/// The part of `iri` after `prefix` if `iri` is `prefix` itself or continues it with `/`, `#`
/// or `?` (so `…/restful` is not under `…/rest`).
fn strip_id_prefix<'a>(iri: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = iri.strip_prefix(prefix)?;
    (rest.is_empty() || rest.starts_with(['/', '#', '?'])).then_some(rest)
}

fn map_triple(triple: Triple, f: impl Fn(&str) -> Option<String>) -> Triple {
    let map = |node: NamedNode| match f(node.as_str()) {
        Some(iri) => NamedNode::new_unchecked(iri),
        None => node,
    };
    Triple {
        subject: match triple.subject {
            NamedOrBlankNode::NamedNode(n) => map(n).into(),
            other => other,
        },
        predicate: map(triple.predicate),
        object: match triple.object {
            Term::NamedNode(n) => map(n).into(),
            other => other,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_both_ways() {
        let m = IdMapper::new("http://localhost:8080/rest/");
        assert_eq!(m.base(), "http://localhost:8080/rest");
        let cases = [
            ("http://localhost:8080/rest/", "info:fedora"),
            ("http://localhost:8080/rest/a/b", "info:fedora/a/b"),
            ("http://localhost:8080/rest/a#x", "info:fedora/a#x"),
            ("http://localhost:8080/rest/#x", "info:fedora#x"),
            (
                "http://localhost:8080/rest/a/fcr:metadata",
                "info:fedora/a/fcr:metadata",
            ),
        ];
        for (external, internal) in cases {
            assert_eq!(m.to_internal(external).as_deref(), Some(internal));
            assert_eq!(m.to_external(internal), external);
        }
        assert_eq!(
            m.to_internal("http://localhost:8080/rest").as_deref(),
            Some("info:fedora")
        );
        assert_eq!(
            m.to_internal("http://localhost:8080/rest/a/").as_deref(),
            Some("info:fedora/a")
        );
        assert_eq!(
            m.to_internal("http://localhost:8080/rest/a/#frag")
                .as_deref(),
            Some("info:fedora/a#frag")
        );
        assert_eq!(m.to_internal("http://localhost:8080/restful"), None);
        assert_eq!(m.to_internal("http://example.org/rest/a"), None);
        assert_eq!(
            m.to_external("http://example.org/x"),
            "http://example.org/x"
        );
        assert_eq!(m.to_external("info:fedoraX"), "info:fedoraX");
    }
}
