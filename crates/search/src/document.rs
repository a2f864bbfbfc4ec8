//! One resource as a search document: its system fields from its header, the mapped fields
//! from its statements, `ALL` and `FULLTEXT`.

use arca_model::ResourceHeaders;
use oxrdf::{Term, Triple};
use tantivy::{DateTime, TantivyDocument};
use time::format_description::well_known::Rfc3339;
use time::{Date, Month, OffsetDateTime};

use crate::mapping::{split_name, MappedKind};
use crate::schema::IndexSchema;

/// What a resource's document is made of.
#[derive(Debug)]
pub struct ResourceView<'a> {
    /// The resource's path below the root (`""` for the root).
    pub path: &'a str,
    /// The containing resource's path.
    pub parent: Option<&'a str>,
    /// Its header (a binary's own, not its description's).
    pub headers: &'a ResourceHeaders,
    /// Its rdf:types.
    pub types: &'a [String],
    /// The IRI the mapped statements are about (the resource's internal IRI).
    pub subject: &'a str,
    /// Its statements (a binary's: its description's, about the binary).
    pub triples: &'a [Triple],
    /// Text extracted from it (binaries).
    pub text: Option<&'a str>,
    /// Text extracted from its child binaries (containers): goes into `ALL` only.
    pub child_texts: &'a [String],
}

/// Builds the document of `view`.
pub fn build(schema: &IndexSchema, view: &ResourceView<'_>) -> TantivyDocument {
    let s = &schema.system;
    let mut doc = TantivyDocument::default();
    // The system fields first, in field order: `hit::SystemStored` reads them alone.
    doc.add_text(s.id, view.path);
    if let Some(p) = view.parent {
        doc.add_text(s.parent, p);
    }
    let h = view.headers;
    doc.add_text(s.interaction_model, &h.interaction_model);
    let binary = h.model() == Some(arca_model::InteractionModel::NonRdfSource);
    if let Some(m) = h.mime_type.as_ref().filter(|_| binary) {
        doc.add_text(s.mime_type, m);
    }
    for t in view.types {
        doc.add_text(s.rdf_type, t);
    }
    if let Some(at) = h.created_date.as_deref().and_then(parse_instant) {
        doc.add_date(s.created, at);
    }
    if let Some(at) = h.last_modified_date.as_deref().and_then(parse_instant) {
        doc.add_date(s.modified, at);
    }
    if let Some(u) = &h.created_by {
        doc.add_text(s.created_by, u);
    }
    if let Some(u) = &h.last_modified_by {
        doc.add_text(s.last_modified_by, u);
    }
    // A binary's size, or the size of an RDF resource's triples as stored (Fedora's
    // `content_size` for both: its header's `contentSize`).
    if let Some(size) = h.content_size.and_then(|n| u64::try_from(n).ok()) {
        doc.add_u64(s.content_size, size);
    }
    if let Some(name) = &h.filename {
        doc.add_text(s.all, name);
    }
    for t in view.triples {
        let about_self = matches!(&t.subject, oxrdf::NamedOrBlankNode::NamedNode(n) if n.as_str() == view.subject);
        let value = match &t.object {
            Term::Literal(l) => {
                doc.add_text(s.all, l.value());
                Some(l.value())
            }
            Term::NamedNode(n) => Some(n.as_str()),
            _ => None,
        };
        let (Some(value), true) = (value, about_self) else {
            continue;
        };
        let Some(targets) = schema.by_predicate.get(t.predicate.as_str()) else {
            continue;
        };
        for &i in targets {
            let f = &schema.mapped[i].1;
            match f.kind {
                MappedKind::Text | MappedKind::Keyword => doc.add_text(f.field, value),
                MappedKind::Date => {
                    if let Some(at) = parse_date(value) {
                        doc.add_date(f.field, at);
                    }
                }
            }
            if f.first_name.is_some() || f.last_name.is_some() {
                let (first, last) = split_name(value);
                if let (Some(field), false) = (f.first_name, first.is_empty()) {
                    doc.add_text(field, first);
                }
                if let (Some(field), false) = (f.last_name, last.is_empty()) {
                    doc.add_text(field, last);
                }
            }
        }
    }
    // A resource's own text is its FULLTEXT; its ALL holds that and its child binaries' texts
    // (not their FULLTEXT: a container has no text of its own, and each copy of a 50 KB text
    // is tokenized again).
    if let Some(text) = view.text {
        doc.add_text(s.fulltext, text);
        doc.add_text(s.all, text);
    }
    for text in view.child_texts {
        doc.add_text(s.all, text);
    }
    doc
}

/// An instant as Fedora writes them (RFC 3339, any fraction).
pub fn parse_instant(s: &str) -> Option<DateTime> {
    let t = OffsetDateTime::parse(s.trim(), &Rfc3339).ok()?;
    Some(DateTime::from_timestamp_secs(t.unix_timestamp()))
}

/// A date value of a mapped date field: an RFC 3339 instant, `YYYY-MM-DD` (with an optional
/// time after `T` or a space, read as UTC when it has no offset), `YYYY-MM` or `YYYY` (the
/// start of the period).
pub fn parse_date(s: &str) -> Option<DateTime> {
    let s = s.trim();
    if let Some(at) = parse_instant(s) {
        return Some(at);
    }
    let day = s.get(..10).unwrap_or(s);
    let mut parts = day.splitn(3, '-');
    let year: i32 = parts.next().filter(|y| y.len() == 4)?.parse().ok()?;
    let month = match parts.next() {
        Some(m) if m.len() == 2 => Month::try_from(m.parse::<u8>().ok()?).ok()?,
        Some(_) => return None,
        None => Month::January,
    };
    let dom: u8 = match parts.next() {
        Some(d) if d.len() == 2 => d.parse().ok()?,
        Some(_) => return None,
        None => 1,
    };
    let rest = &s[day.len()..];
    if !(rest.is_empty() || day.len() == 10 && (rest.starts_with('T') || rest.starts_with(' '))) {
        return None;
    }
    let date = Date::from_calendar_date(year, month, dom).ok()?;
    let t = date.midnight().assume_utc();
    Some(DateTime::from_timestamp_secs(t.unix_timestamp()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_of_every_precision() {
        let secs = |s: &str| parse_date(s).map(|d| d.into_timestamp_secs());
        assert_eq!(secs("2025-03-18"), Some(1742256000));
        assert_eq!(secs("2025-03"), Some(1740787200));
        assert_eq!(secs("2025"), Some(1735689600));
        assert_eq!(secs("2025-03-18T10:00:00Z"), Some(1742292000));
        assert_eq!(
            secs("2025-03-18T10:00:00.123456789+01:00"),
            Some(1742288400)
        );
        assert_eq!(secs("2025-03-18 circa"), Some(1742256000));
        assert_eq!(secs("circa 1900"), None);
        assert_eq!(secs("2025-13-01"), None);
        assert_eq!(secs("25-03-18"), None);
        assert_eq!(secs("2025-3-18"), None);
        assert_eq!(secs(""), None);
    }
}
