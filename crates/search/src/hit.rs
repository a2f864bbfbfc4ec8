//! A hit's stored values, read from the document store straight into the JSON they are
//! shown as.
//!
//! Showing a page of hits is most of what a selective query costs: tantivy's own document
//! type copies every stored value into its node buffer, and turning that into JSON copied
//! each again. Here every value is decoded once, into its JSON form, and only the fields
//! asked for are kept.

use serde_json::Value as Json;
use tantivy::schema::document::{
    DeserializeError, DocumentDeserialize, DocumentDeserializer, ValueDeserialize,
    ValueDeserializer, ValueVisitor,
};
use tantivy::schema::Field;
use tantivy::DateTime;

use crate::schema::SYSTEM_STORED_END;

/// A hit's stored values: its resource's path and, for each field asked for, its value
/// (`None` when the document has none, an array when it has several).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredHit {
    /// The resource's path below the repository's root.
    pub id: String,
    /// One entry per field asked for, in the order asked.
    pub values: Vec<Option<Json>>,
}

impl StoredHit {
    /// Picks `id_field` and `fields` out of `document`.
    pub(crate) fn pick(document: StoredJson, id_field: Field, fields: &[(String, Field)]) -> Self {
        let mut id = String::new();
        let mut values: Vec<Option<Json>> = vec![None; fields.len()];
        for (field, mut value) in document.0 {
            if field == id_field && id.is_empty() {
                if let Json::String(path) = &value {
                    id.clone_from(path);
                }
            }
            let mut slots = fields
                .iter()
                .enumerate()
                .filter(|(_, (_, wanted))| *wanted == field)
                .map(|(i, _)| i)
                .peekable();
            while let Some(i) = slots.next() {
                let value = if slots.peek().is_some() {
                    value.clone()
                } else {
                    std::mem::take(&mut value)
                };
                // Stored values are never arrays: an array in a slot holds several values.
                values[i] = Some(match values[i].take() {
                    None => value,
                    Some(Json::Array(mut several)) => {
                        several.push(value);
                        Json::Array(several)
                    }
                    Some(first) => Json::Array(vec![first, value]),
                });
            }
        }
        Self { id, values }
    }
}

/// Every stored value of a document, decoded into JSON, in the order stored.
pub(crate) struct StoredJson(Vec<(Field, Json)>);

impl DocumentDeserialize for StoredJson {
    fn deserialize<'de, D>(deserializer: D) -> Result<Self, DeserializeError>
    where
        D: DocumentDeserializer<'de>,
    {
        let capacity = deserializer.size_hint();
        decode_below(deserializer, u32::MAX, capacity)
    }
}

/// The stored values of a document in stored order, up to the first of a field numbered
/// `end` or higher.
fn decode_below<'de, D>(
    mut deserializer: D,
    end: u32,
    capacity: usize,
) -> Result<StoredJson, DeserializeError>
where
    D: DocumentDeserializer<'de>,
{
    let mut values = Vec::with_capacity(capacity);
    while let Some((field, JsonValue(value))) = deserializer.next_field::<JsonValue>()? {
        if field.field_id() >= end {
            break;
        }
        values.push((field, value));
    }
    Ok(StoredJson(values))
}

/// The stored values of a document's system fields alone. They come first, in field order:
/// the schema makes the system fields first (numbers below [`SYSTEM_STORED_END`]) and the
/// document builder stores them before any mapped field. Decoding stops at the first value
/// of another field, skipping the mapped fields' values (titles, abstracts, creators), which
/// are most of a document's stored bytes and which a hit shown with system fields only (the
/// default) does not need.
pub(crate) struct SystemStored(pub(crate) StoredJson);

impl DocumentDeserialize for SystemStored {
    fn deserialize<'de, D>(deserializer: D) -> Result<Self, DeserializeError>
    where
        D: DocumentDeserializer<'de>,
    {
        let end = SYSTEM_STORED_END;
        decode_below(deserializer, end, end as usize).map(Self)
    }
}

/// One stored value as JSON.
struct JsonValue(Json);

impl ValueDeserialize for JsonValue {
    fn deserialize<'de, D>(deserializer: D) -> Result<Self, DeserializeError>
    where
        D: ValueDeserializer<'de>,
    {
        deserializer.deserialize_any(ToJson).map(JsonValue)
    }
}

/// Decodes the kinds of values the schema stores (text, dates, numbers); any other kind is
/// an error, as the schema never stores one.
struct ToJson;

impl ValueVisitor for ToJson {
    type Value = Json;

    fn visit_null(&self) -> Result<Json, DeserializeError> {
        Ok(Json::Null)
    }

    fn visit_string(&self, value: String) -> Result<Json, DeserializeError> {
        Ok(Json::String(value))
    }

    fn visit_u64(&self, value: u64) -> Result<Json, DeserializeError> {
        Ok(value.into())
    }

    fn visit_i64(&self, value: i64) -> Result<Json, DeserializeError> {
        Ok(value.into())
    }

    fn visit_f64(&self, value: f64) -> Result<Json, DeserializeError> {
        Ok(serde_json::Number::from_f64(value).map_or(Json::Null, Json::Number))
    }

    fn visit_bool(&self, value: bool) -> Result<Json, DeserializeError> {
        Ok(value.into())
    }

    fn visit_datetime(&self, value: DateTime) -> Result<Json, DeserializeError> {
        Ok(rfc3339(value).into())
    }
}

/// A stored date in RFC 3339, to the second (the precision the schema indexes).
pub(crate) fn rfc3339(value: DateTime) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp(value.into_timestamp_secs())
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use tantivy::schema::OwnedValue;
    use tantivy::TantivyDocument;

    use super::*;
    use crate::mapping::Mapping;
    use crate::SearchIndex;

    /// What a hit shows equals what tantivy's own document type decodes: several values
    /// as an array in stored order, a missing field as `None`, dates in RFC 3339, numbers
    /// as numbers, a field asked for twice in both places.
    #[test]
    fn a_hit_shows_what_tantivy_stored() {
        let dir = tempfile::tempdir().unwrap();
        let (index, _) = SearchIndex::open(dir.path(), &Mapping::dublin_core()).unwrap();
        let schema = index.schema();
        let sys = &schema.system;
        let field = |name: &str| schema.stored_field(name).unwrap().1;
        let (title, creator, date) = (field("TITLE"), field("CREATOR"), field("DATE"));
        let mut doc = TantivyDocument::default();
        doc.add_text(sys.id, "a/b c");
        doc.add_text(title, "Fish \"of\" the sea\nand rivers");
        for name in ["Smith, Jane", "Öztürk, Ali", "Doe, John"] {
            doc.add_text(creator, name);
        }
        doc.add_u64(sys.content_size, 42);
        let day = tantivy::DateTime::from_timestamp_secs(1_700_000_000);
        doc.add_date(sys.created, day);
        doc.add_date(date, day);
        doc.add_date(date, tantivy::DateTime::from_timestamp_secs(0));
        index.upsert("a/b c", doc).unwrap();
        index.commit(1).unwrap();
        index.reload().unwrap();

        let searcher = index.searcher();
        let address = tantivy::DocAddress::new(0, 0);
        let asked: Vec<(String, Field)> = [
            ("TITLE", title),
            ("CREATOR", creator),
            ("content_size", sys.content_size),
            ("created", sys.created),
            ("DATE", date),
            ("mime_type", sys.mime_type),
            ("TITLE", title),
        ]
        .into_iter()
        .map(|(n, f)| (n.to_string(), f))
        .collect();
        let hit = index.stored(&searcher, address, &asked).unwrap();

        let reference: TantivyDocument = searcher.doc(address).unwrap();
        let expected: Vec<Option<Json>> = asked
            .iter()
            .map(|(_, f)| {
                let values: Vec<Json> = reference
                    .get_all(*f)
                    .map(|v| match OwnedValue::from(v) {
                        OwnedValue::Str(s) => Json::String(s),
                        OwnedValue::U64(n) => n.into(),
                        OwnedValue::Date(d) => rfc3339(d).into(),
                        other => panic!("unexpected {other:?}"),
                    })
                    .collect();
                match values.len() {
                    0 => None,
                    1 => values.into_iter().next(),
                    _ => Some(Json::Array(values)),
                }
            })
            .collect();
        assert_eq!(hit.id, "a/b c");
        assert_eq!(hit.values, expected);
        assert_eq!(
            hit.values[1],
            Some(serde_json::json!([
                "Smith, Jane",
                "Öztürk, Ali",
                "Doe, John"
            ]))
        );
        assert_eq!(hit.values[3], Some("2023-11-14T22:13:20Z".into()));
        assert_eq!(
            hit.values[4],
            Some(serde_json::json!([
                "2023-11-14T22:13:20Z",
                "1970-01-01T00:00:00Z"
            ]))
        );
        assert_eq!(hit.values[5], None);
        assert_eq!(hit.values[0], hit.values[6]);
    }

    /// A hit that asks for system fields only (or none) decodes the system fields alone,
    /// and shows what decoding the whole document shows; the document builder stores the
    /// system fields first, so that this holds for every document of the index.
    #[test]
    fn system_fields_are_read_alone_and_first() {
        let dir = tempfile::tempdir().unwrap();
        let (index, _) = SearchIndex::open(dir.path(), &Mapping::dublin_core()).unwrap();
        let schema = index.schema();
        let sys = &schema.system;
        let mut headers = arca_model::ResourceHeaders::new(
            "info:fedora/a/b",
            Some("info:fedora/a".to_string()),
            arca_model::InteractionModel::NonRdfSource,
        );
        headers.mime_type = Some("application/pdf".to_string());
        headers.content_size = Some(1234);
        headers.created_date = Some("2024-01-02T03:04:05Z".to_string());
        headers.last_modified_date = Some("2024-02-03T04:05:06Z".to_string());
        let triple = |p: &str, o: &str| {
            oxrdf::Triple::new(
                oxrdf::NamedNode::new("info:fedora/a/b").unwrap(),
                oxrdf::NamedNode::new(p).unwrap(),
                oxrdf::Literal::new_simple_literal(o),
            )
        };
        let triples = [
            triple("http://purl.org/dc/elements/1.1/title", "A title"),
            triple("http://purl.org/dc/terms/abstract", "An abstract"),
        ];
        let types = [
            "http://example.org/One".to_string(),
            "http://example.org/Two".to_string(),
        ];
        let view = crate::document::ResourceView {
            path: "a/b",
            parent: Some("a"),
            headers: &headers,
            types: &types,
            subject: "info:fedora/a/b",
            triples: &triples,
            text: Some("some text"),
            child_texts: &[],
        };
        let built = crate::document::build(schema, &view);
        let stored: Vec<u32> = built
            .field_values()
            .map(|(f, _)| f)
            .filter(|f| schema.schema.get_field_entry(*f).is_stored())
            .map(|f| f.field_id())
            .collect();
        let system_end = stored
            .iter()
            .position(|&id| id >= SYSTEM_STORED_END)
            .unwrap();
        assert!(
            stored[..system_end].windows(2).all(|w| w[0] <= w[1])
                && stored[system_end..]
                    .iter()
                    .all(|&id| id >= SYSTEM_STORED_END),
            "system fields first, in order: {stored:?}"
        );
        index.upsert("a/b", built).unwrap();
        index.commit(1).unwrap();
        index.reload().unwrap();

        let searcher = index.searcher();
        let address = tantivy::DocAddress::new(0, 0);
        let SystemStored(StoredJson(alone)) = searcher.doc(address).unwrap();
        assert!(alone.iter().all(|(f, _)| f.field_id() < SYSTEM_STORED_END));
        assert_eq!(alone.len(), system_end);
        let asked = |names: &[&str]| -> Vec<(String, Field)> {
            names
                .iter()
                .map(|n| (n.to_string(), schema.stored_field(n).unwrap().1))
                .collect()
        };
        let system = asked(&["rdf_type", "created", "mime_type", "content_size", "parent"]);
        let hit = index.stored(&searcher, address, &system).unwrap();
        let StoredJson(whole) = searcher.doc(address).unwrap();
        assert_eq!(hit, StoredHit::pick(StoredJson(whole), sys.id, &system));
        assert_eq!(hit.id, "a/b");
        assert_eq!(
            hit.values,
            vec![
                Some(serde_json::json!(types)),
                Some("2024-01-02T03:04:05Z".into()),
                Some("application/pdf".into()),
                Some(1234.into()),
                Some("a".into()),
            ]
        );
        let none = index.stored(&searcher, address, &[]).unwrap();
        assert_eq!((none.id.as_str(), none.values.len()), ("a/b", 0));
        let with_title = index
            .stored(&searcher, address, &asked(&["TITLE", "created"]))
            .unwrap();
        assert_eq!(with_title.values[0], Some("A title".into()));
    }
}
