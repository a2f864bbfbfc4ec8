//! The index's tantivy schema: system fields, the mapped fields, `ALL` and `FULLTEXT`, and
//! the text analyzer they share.

use std::collections::HashMap;

use tantivy::schema::{
    DateOptions, DateTimePrecision, Field, IndexRecordOption, NumericOptions, Schema,
    TextFieldIndexing, TextOptions, FAST, STORED, STRING,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer,
};
use tantivy::Index;

use crate::mapping::{MappedKind, Mapping};
use crate::query::{FieldKind, QueryField};

/// The analyzer of every text field: words split on non-alphanumerics, lowercased,
/// ASCII-folded (Lucene's StandardAnalyzer without stop words, plus folding).
pub const ANALYZER: &str = "arca";

/// The analyzer registered as [`ANALYZER`].
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(255))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

/// The system fields are the schema's first fields: their numbers are below this, every other
/// field's above (see `hit::SystemStored`).
pub(crate) const SYSTEM_STORED_END: u32 = 10;

/// The system fields every document has (when the resource has the value).
#[derive(Debug, Clone, Copy)]
pub struct SystemFields {
    /// The resource's path below the repository root (`""` for the root).
    pub id: Field,
    /// The containing resource's path.
    pub parent: Field,
    /// The LDP interaction model's IRI.
    pub interaction_model: Field,
    /// A binary's media type.
    pub mime_type: Field,
    /// Every rdf:type (server-managed and the resource's own).
    pub rdf_type: Field,
    /// Creation instant.
    pub created: Field,
    /// Last modification instant.
    pub modified: Field,
    /// Who created the resource.
    pub created_by: Field,
    /// Who changed it last.
    pub last_modified_by: Field,
    /// A binary's size in bytes.
    pub content_size: Field,
    /// Every literal of the resource and the text of its binaries.
    pub all: Field,
    /// Text extracted from the binary (and, for a container, from its child binaries).
    pub fulltext: Field,
}

/// A mapped field and where its values go.
#[derive(Debug, Clone)]
pub struct MappedField {
    /// The field.
    pub field: Field,
    /// How it is indexed.
    pub kind: MappedKind,
    /// Where first names of "Last, First" values go.
    pub first_name: Option<Field>,
    /// Where last names go.
    pub last_name: Option<Field>,
}

/// The schema of an index built from a [`Mapping`].
#[derive(Debug, Clone)]
pub struct IndexSchema {
    /// The tantivy schema.
    pub schema: Schema,
    /// The system fields.
    pub system: SystemFields,
    /// Mapped fields by name, in mapping order.
    pub mapped: Vec<(String, MappedField)>,
    /// Predicate IRI → indexes into `mapped`.
    pub by_predicate: HashMap<String, Vec<usize>>,
    /// Fields queries may name, with their kinds (aliases included).
    pub query_fields: Vec<QueryField>,
    /// Fields whose stored values a hit can show, by canonical name.
    pub stored: Vec<(String, Field)>,
}

impl IndexSchema {
    /// The schema for `mapping` (which must be valid).
    pub fn new(mapping: &Mapping) -> Self {
        let mut b = Schema::builder();
        let text = |stored: bool| {
            let o = TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer(ANALYZER)
                    .set_index_option(IndexRecordOption::WithFreqsAndPositions),
            );
            if stored {
                o.set_stored()
            } else {
                o
            }
        };
        let date = || {
            DateOptions::default()
                .set_indexed()
                .set_stored()
                .set_fast()
                .set_precision(DateTimePrecision::Seconds)
        };
        let mut query_fields = Vec::new();
        let mut stored = Vec::new();
        let mut add =
            |name: &str, aliases: &[&str], kind: FieldKind, field: Field, is_stored: bool| {
                for n in std::iter::once(name).chain(aliases.iter().copied()) {
                    query_fields.push(QueryField {
                        name: n.to_string(),
                        field,
                        kind,
                    });
                }
                if is_stored {
                    stored.push((name.to_string(), field));
                }
            };
        let id = b.add_text_field("id", STRING | STORED | FAST);
        add("id", &["fedora_id", "PID"], FieldKind::Keyword, id, true);
        let keyword = |b: &mut tantivy::schema::SchemaBuilder, name: &str| {
            b.add_text_field(name, STRING | STORED)
        };
        let parent = keyword(&mut b, "parent");
        add("parent", &[], FieldKind::Keyword, parent, true);
        let interaction_model = keyword(&mut b, "interaction_model");
        add(
            "interaction_model",
            &[],
            FieldKind::Keyword,
            interaction_model,
            true,
        );
        let mime_type = b.add_text_field("mime_type", STRING | STORED | FAST);
        add("mime_type", &[], FieldKind::Keyword, mime_type, true);
        let rdf_type = keyword(&mut b, "rdf_type");
        add("rdf_type", &[], FieldKind::Keyword, rdf_type, true);
        let created = b.add_date_field("created", date());
        add("created", &[], FieldKind::Date, created, true);
        let modified = b.add_date_field("modified", date());
        add("modified", &[], FieldKind::Date, modified, true);
        let created_by = keyword(&mut b, "created_by");
        add("created_by", &[], FieldKind::Keyword, created_by, true);
        let last_modified_by = keyword(&mut b, "last_modified_by");
        add(
            "last_modified_by",
            &[],
            FieldKind::Keyword,
            last_modified_by,
            true,
        );
        let content_size = b.add_u64_field(
            "content_size",
            NumericOptions::default()
                .set_indexed()
                .set_stored()
                .set_fast(),
        );
        add("content_size", &[], FieldKind::Number, content_size, true);
        assert_eq!(
            content_size.field_id() + 1,
            SYSTEM_STORED_END,
            "the stored system fields are the schema's first"
        );
        let all = b.add_text_field("ALL", text(false));
        add("ALL", &[], FieldKind::Text, all, false);
        let fulltext = b.add_text_field("FULLTEXT", text(false));
        add("FULLTEXT", &[], FieldKind::Text, fulltext, false);

        let mut mapped: Vec<(String, MappedField)> = Vec::new();
        let mut by_name: HashMap<String, Field> = HashMap::new();
        let mut field_for = |b: &mut tantivy::schema::SchemaBuilder, name: &str, kind| {
            *by_name
                .entry(name.to_string())
                .or_insert_with(|| match kind {
                    MappedKind::Text => b.add_text_field(name, text(true)),
                    MappedKind::Keyword => b.add_text_field(name, STRING | STORED),
                    MappedKind::Date => b.add_date_field(name, date()),
                })
        };
        for f in &mapping.fields {
            let field = field_for(&mut b, &f.name, f.kind);
            let first_name = f
                .first_name
                .as_deref()
                .map(|n| field_for(&mut b, n, MappedKind::Text));
            let last_name = f
                .last_name
                .as_deref()
                .map(|n| field_for(&mut b, n, MappedKind::Text));
            let kind = match f.kind {
                MappedKind::Text => FieldKind::Text,
                MappedKind::Keyword => FieldKind::Keyword,
                MappedKind::Date => FieldKind::Date,
            };
            add(&f.name, &[], kind, field, true);
            for (name, field) in [(&f.first_name, first_name), (&f.last_name, last_name)] {
                if let (Some(name), Some(field)) = (name, field) {
                    add(name, &[], FieldKind::Text, field, true);
                }
            }
            mapped.push((
                f.name.clone(),
                MappedField {
                    field,
                    kind: f.kind,
                    first_name,
                    last_name,
                },
            ));
        }
        let mut by_predicate: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, f) in mapping.fields.iter().enumerate() {
            for p in &f.predicates {
                by_predicate.entry(p.clone()).or_default().push(i);
            }
        }
        Self {
            schema: b.build(),
            system: SystemFields {
                id,
                parent,
                interaction_model,
                mime_type,
                rdf_type,
                created,
                modified,
                created_by,
                last_modified_by,
                content_size,
                all,
                fulltext,
            },
            mapped,
            by_predicate,
            query_fields,
            stored,
        }
    }

    /// Registers the analyzer with an index of this schema.
    pub fn register(&self, index: &Index) {
        index.tokenizers().register(ANALYZER, analyzer());
    }

    /// The stored field called `name` (case-insensitively; aliases of `id` included).
    pub fn stored_field(&self, name: &str) -> Option<(&str, Field)> {
        let canonical = match name.to_ascii_lowercase().as_str() {
            "fedora_id" | "pid" => "id".to_string(),
            _ => name.to_string(),
        };
        self.stored
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(&canonical))
            .map(|(n, f)| (n.as_str(), *f))
    }
}
