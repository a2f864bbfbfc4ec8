//! Which RDF statements feed which search fields.
//!
//! A [`Mapping`] names the fields a query may use besides the system fields and `ALL`/
//! `FULLTEXT`: each takes the literal (or IRI) objects of the listed predicates about the
//! resource itself. The default, [`Mapping::dublin_core`], maps the fifteen Dublin Core
//! elements and their DCMI terms (and `rdfs:label` into TITLE) as GSearch's demo
//! configuration did, and splits creators written "Last, First" into LASTNAME and FIRSTNAME.
//! A changed mapping changes the index's fingerprint, and the index is rebuilt.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

const DC: &str = "http://purl.org/dc/elements/1.1/";
const DCTERMS: &str = "http://purl.org/dc/terms/";
const RDFS_LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";

/// How a mapped field is indexed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MappedKind {
    /// Words: analysed (lowercased, ASCII-folded), phrase and wildcard queries.
    #[default]
    Text,
    /// The whole value, exact and case-sensitive (codes, IRIs).
    Keyword,
    /// A date or instant (`YYYY`, `YYYY-MM`, `YYYY-MM-DD`, RFC 3339), for ranges; values
    /// that are not dates go to `ALL` only.
    Date,
}

/// One mapped field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldMapping {
    /// The field's name in queries (letters, digits, `_`; case-insensitive in queries).
    pub name: String,
    /// Full predicate IRIs whose objects the field takes.
    pub predicates: Vec<String>,
    /// How the field is indexed.
    #[serde(default)]
    pub kind: MappedKind,
    /// A field that also gets the first names of "Last, First" values (e.g. FIRSTNAME).
    #[serde(default)]
    pub first_name: Option<String>,
    /// A field that also gets the last names of "Last, First" values (e.g. LASTNAME).
    #[serde(default)]
    pub last_name: Option<String>,
}

/// The field mapping of an index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mapping {
    /// The mapped fields.
    pub fields: Vec<FieldMapping>,
}

/// Names the index defines itself, which a mapping may not take.
pub const RESERVED: &[&str] = &[
    "ALL",
    "FULLTEXT",
    "id",
    "fedora_id",
    "PID",
    "parent",
    "interaction_model",
    "mime_type",
    "rdf_type",
    "created",
    "modified",
    "created_by",
    "last_modified_by",
    "content_size",
];

impl Mapping {
    /// Dublin Core elements and terms, `rdfs:label` as TITLE, creators split into
    /// FIRSTNAME/LASTNAME, DATE as dates.
    pub fn dublin_core() -> Self {
        let field = |name: &str, kind: MappedKind, local: &[&str], extra: &[&str]| FieldMapping {
            name: name.to_string(),
            predicates: local
                .iter()
                .flat_map(|l| [format!("{DCTERMS}{l}"), format!("{DC}{l}")])
                .chain(extra.iter().map(|e| e.to_string()))
                .collect(),
            kind,
            first_name: None,
            last_name: None,
        };
        let text = MappedKind::Text;
        let mut creator = field("CREATOR", text, &["creator"], &[]);
        creator.first_name = Some("FIRSTNAME".into());
        creator.last_name = Some("LASTNAME".into());
        let mut abstract_ = field("ABSTRACT", text, &["description"], &[]);
        abstract_.predicates.insert(0, format!("{DCTERMS}abstract"));
        Self {
            fields: vec![
                field(
                    "TITLE",
                    text,
                    &["title"],
                    &[&format!("{DCTERMS}alternative"), RDFS_LABEL],
                ),
                abstract_,
                creator,
                field("CONTRIBUTOR", text, &["contributor"], &[]),
                field("SUBJECT", text, &["subject"], &[]),
                field(
                    "DATE",
                    MappedKind::Date,
                    &["date"],
                    &[
                        &format!("{DCTERMS}created"),
                        &format!("{DCTERMS}issued"),
                        &format!("{DCTERMS}modified"),
                    ],
                ),
                field("TYPE", text, &["type"], &[]),
                field("IDENTIFIER", text, &["identifier"], &[]),
                field("PUBLISHER", text, &["publisher"], &[]),
                field("LANGUAGE", text, &["language"], &[]),
                field("FORMAT", text, &["format"], &[]),
                field("RIGHTS", text, &["rights"], &[&format!("{DCTERMS}license")]),
                field("SOURCE", text, &["source"], &[]),
                field("RELATION", text, &["relation"], &[]),
                field("COVERAGE", text, &["coverage"], &[]),
            ],
        }
    }

    /// Refuses names that are empty, not `[A-Za-z][A-Za-z0-9_]*`, reserved or used twice
    /// (case-insensitively), fields without predicates, and predicates that are not IRIs.
    pub fn validate(&self) -> Result<()> {
        let mut seen: Vec<String> = RESERVED.iter().map(|r| r.to_ascii_lowercase()).collect();
        for f in &self.fields {
            for name in std::iter::once(&f.name)
                .chain(&f.first_name)
                .chain(&f.last_name)
            {
                let ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !ok {
                    return Err(Error::Mapping(format!(
                        "field name {name:?}: use letters, digits and _ (starting with a letter)"
                    )));
                }
                let lower = name.to_ascii_lowercase();
                if seen.contains(&lower) {
                    return Err(Error::Mapping(format!(
                        "field name {name:?} is reserved or used twice"
                    )));
                }
                seen.push(lower);
            }
            if f.predicates.is_empty() {
                return Err(Error::Mapping(format!(
                    "field {} maps no predicate",
                    f.name
                )));
            }
            if let Some(p) = f.predicates.iter().find(|p| oxiri_like(p).is_none()) {
                return Err(Error::Mapping(format!(
                    "field {}: predicate {p:?} is not an absolute IRI",
                    f.name
                )));
            }
        }
        Ok(())
    }

    /// A stable digest of the mapping: an index built with another mapping is rebuilt.
    pub fn fingerprint(&self) -> String {
        let json = serde_json::to_vec(self).expect("a mapping serializes");
        format!("{:016x}", fnv1a(&json))
    }

    /// The mapped fields whose values a predicate feeds.
    pub fn fields_of<'a>(&'a self, predicate: &'a str) -> impl Iterator<Item = &'a FieldMapping> {
        self.fields
            .iter()
            .filter(move |f| f.predicates.iter().any(|p| p == predicate))
    }
}

/// The scheme of an absolute IRI, if `s` looks like one (`scheme:rest`, no spaces).
fn oxiri_like(s: &str) -> Option<&str> {
    let (scheme, rest) = s.split_once(':')?;
    let scheme_ok = scheme.chars().next()?.is_ascii_alphabetic()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    (scheme_ok && !rest.is_empty() && !s.contains(char::is_whitespace)).then_some(scheme)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}

/// Splits a personal name as library catalogues write it: "Last, First" (anything after the
/// first comma is the first name), else "First Middle Last" (the last word is the last
/// name). Returns (first, last); either may be empty.
pub fn split_name(name: &str) -> (&str, &str) {
    let name = name.trim();
    if let Some((last, first)) = name.split_once(',') {
        return (first.trim(), last.trim());
    }
    match name.rsplit_once(char::is_whitespace) {
        Some((first, last)) => (first.trim(), last.trim()),
        None => ("", name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dublin_core_is_valid_and_maps_both_namespaces() {
        let m = Mapping::dublin_core();
        m.validate().unwrap();
        let title: Vec<_> = m
            .fields_of("http://purl.org/dc/elements/1.1/title")
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(title, ["TITLE"]);
        let abs: Vec<_> = m
            .fields_of("http://purl.org/dc/terms/abstract")
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(abs, ["ABSTRACT"]);
        assert_eq!(m.fields_of(RDFS_LABEL).count(), 1);
        assert_eq!(m.fingerprint(), Mapping::dublin_core().fingerprint());
    }

    #[test]
    fn bad_mappings_are_refused() {
        let mut m = Mapping::dublin_core();
        m.fields[0].name = "all".into();
        assert!(m.validate().is_err(), "reserved, case-insensitively");
        let mut m = Mapping::dublin_core();
        m.fields[1].name = "title".into();
        assert!(m.validate().is_err(), "twice");
        let mut m = Mapping::dublin_core();
        m.fields[0].name = "TI TLE".into();
        assert!(m.validate().is_err());
        let mut m = Mapping::dublin_core();
        m.fields[0].predicates = vec!["title".into()];
        assert!(m.validate().is_err());
        let mut m = Mapping::dublin_core();
        m.fields[0].predicates.clear();
        assert!(m.validate().is_err());
        let mut other = Mapping::dublin_core();
        other.fields.pop();
        assert_ne!(other.fingerprint(), Mapping::dublin_core().fingerprint());
    }

    #[test]
    fn names_split_as_catalogues_write_them() {
        assert_eq!(split_name("Joyce, James"), ("James", "Joyce"));
        assert_eq!(
            split_name("van der Berg, Anna Maria "),
            ("Anna Maria", "van der Berg")
        );
        assert_eq!(
            split_name("James Augustine Joyce"),
            ("James Augustine", "Joyce")
        );
        assert_eq!(split_name("Plato"), ("", "Plato"));
        assert_eq!(split_name(""), ("", ""));
    }
}
