//! The Lucene query parser against a real tantivy index in RAM: every test asserts the exact
//! set of document ids a query finds, or the exact position of its error.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::OnceLock;

use arca_search::query::{FieldKind, QueryError, QueryField, QueryParser};
use tantivy::collector::{Count, DocSetCollector, TopDocs};
use tantivy::query::Query;
use tantivy::schema::{
    DateOptions, DateTimePrecision, Field, IndexRecordOption, Schema, TextFieldIndexing,
    TextOptions, Value, FAST, INDEXED, STORED, STRING,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer,
};
use tantivy::{DateTime, Index, IndexReader, TantivyDocument};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// One fixture document; `ALL` is every text field plus `extra` (an affiliation).
struct Doc {
    id: &'static str,
    title: &'static str,
    abstract_: Option<&'static str>,
    firstname: Option<&'static str>,
    extra: &'static str,
    mime_type: &'static str,
    date: Option<&'static str>,
    size: Option<u64>,
}

// One argument per column of the fixture table below.
#[allow(clippy::too_many_arguments)]
const fn doc(
    id: &'static str,
    title: &'static str,
    abstract_: &'static str,
    firstname: &'static str,
    extra: &'static str,
    mime_type: &'static str,
    date: &'static str,
    size: u64,
) -> Doc {
    Doc {
        id,
        title,
        abstract_: Some(abstract_),
        firstname: Some(firstname),
        extra,
        mime_type,
        date: Some(date),
        size: Some(size),
    }
}

#[rustfmt::skip]
const DOCS: &[Doc] = &[
    doc("d01", "Fish of the North Sea", "A survey of fish and other marine animals", "James",
        "University of Aberdeen", "text/plain", "2025-03-18T10:00:00Z", 100),
    doc("d02", "Birds of prey", "The animal kingdom seen from above", "Mary",
        "University of Oslo", "application/pdf", "2025-03-18T23:59:59Z", 2048),
    doc("d03", "Cooking fish", "Recipes for fish lovers", "John",
        "Home kitchen press", "text/html", "2025-03-19T00:00:00Z", 5000),
    doc("d04", "Animal behaviour", "How an animal learns", "James",
        "Independent researcher", "application/pdf", "2025-02-28T12:00:00Z", 1),
    doc("d05", "Fishing boats", "Boats used for fishing in Norway", "Jamie",
        "University of Bergen", "image/jpeg", "2024-12-31T23:59:59Z", 123_456),
    doc("d06", "The Crème Brûlée handbook", "Desserts and sugar", "Zoë",
        "", "text/plain", "2024-06-01T00:00:00Z", 42),
    doc("d07", "Quick brown fox", "the quick brown fox jumps over the lazy dog", "Peter",
        "University of Leeds", "text/plain", "2023-01-01T00:00:00Z", 10),
    doc("d08", "Lazy dogs", "the brown lazy dog sleeps while a quick fox jumps", "Jane",
        "", "text/markdown", "2023-07-15T08:30:00Z", 999),
    doc("d09", "Foo-bar systems", "A study of foo bar and foobar", "Ada",
        "University of London", "application/json", "2025-03-01T00:00:00Z", 1000),
    doc("d10", "Animal farm", "An animal story about pigs", "George",
        "University of Oxford", "text/plain", "2025-04-01T00:00:00Z", 1001),
    doc("d11", "Aquaculture", "Fish farming at scale", "Olav",
        "University of Tromsø", "application/xml", "2022-05-05T05:05:05Z", 0),
    doc("d12", "C++ tips", "the bar near the foo", "Bjarne",
        "", "application/vnd.a+b(c)", "1999-12-31T23:59:59Z", u64::MAX),
    Doc {
        id: "d13", title: "Untitled draft", abstract_: None, firstname: None, extra: "",
        mime_type: "text/*", date: None, size: None,
    },
];

const UNIVERSITY: &[&str] = &["d01", "d02", "d05", "d07", "d09", "d10", "d11"];

struct Fixture {
    index: Index,
    reader: IndexReader,
    parser: QueryParser,
    id: Field,
    all: Field,
}

/// arca's text analyzer, as the indexer registers it.
fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(255))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(build_fixture)
}

fn build_fixture() -> Fixture {
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("arca")
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let mut schema = Schema::builder();
    let id = schema.add_text_field("id", STRING | STORED);
    let title = schema.add_text_field("TITLE", text.clone());
    let abstract_ = schema.add_text_field("ABSTRACT", text.clone());
    let firstname = schema.add_text_field("FIRSTNAME", text.clone());
    let all = schema.add_text_field("ALL", text);
    let mime_type = schema.add_text_field("mime_type", STRING);
    let date = schema.add_date_field(
        "DATE",
        DateOptions::default()
            .set_indexed()
            .set_fast()
            .set_precision(DateTimePrecision::Seconds),
    );
    let size = schema.add_u64_field("content_size", INDEXED | FAST);
    let index = Index::create_in_ram(schema.build());
    index.tokenizers().register("arca", analyzer());

    let mut writer = index
        .writer_with_num_threads(1, 15_000_000)
        .expect("writer");
    for d in DOCS {
        let mut document = TantivyDocument::default();
        document.add_text(id, d.id);
        document.add_text(title, d.title);
        let mut everything = vec![d.title, d.extra];
        if let Some(text) = d.abstract_ {
            document.add_text(abstract_, text);
            everything.push(text);
        }
        if let Some(text) = d.firstname {
            document.add_text(firstname, text);
            everything.push(text);
        }
        document.add_text(all, everything.join(" "));
        document.add_text(mime_type, d.mime_type);
        if let Some(text) = d.date {
            let instant = OffsetDateTime::parse(text, &Rfc3339).expect("fixture date");
            document.add_date(date, DateTime::from_utc(instant));
        }
        if let Some(n) = d.size {
            document.add_u64(size, n);
        }
        writer.add_document(document).expect("add");
    }
    writer.commit().expect("commit");
    let reader = index.reader().expect("reader");

    let field = |name: &str, field, kind| QueryField {
        name: name.to_owned(),
        field,
        kind,
    };
    let fields = vec![
        field("TITLE", title, FieldKind::Text),
        field("ABSTRACT", abstract_, FieldKind::Text),
        field("FIRSTNAME", firstname, FieldKind::Text),
        field("ALL", all, FieldKind::Text),
        field("mime_type", mime_type, FieldKind::Keyword),
        field("id", id, FieldKind::Keyword),
        field("DATE", date, FieldKind::Date),
        field("content_size", size, FieldKind::Number),
    ];
    Fixture {
        parser: QueryParser::new(fields, "ALL", analyzer()),
        index,
        reader,
        id,
        all,
    }
}

impl Fixture {
    fn ids_of(&self, query: &dyn Query) -> BTreeSet<String> {
        let searcher = self.reader.searcher();
        let hits = searcher.search(query, &DocSetCollector).expect("search");
        hits.into_iter()
            .map(|address| self.id_at(address))
            .collect()
    }

    fn id_at(&self, address: tantivy::DocAddress) -> String {
        let document: TantivyDocument = self.reader.searcher().doc(address).expect("doc");
        let id = document.get_first(self.id).and_then(|v| v.as_str());
        id.expect("stored id").to_owned()
    }

    /// Ids in descending score order.
    fn ranked(&self, query: &str) -> Vec<String> {
        let query = self.parser.parse(query).expect("parses");
        let searcher = self.reader.searcher();
        let top = TopDocs::with_limit(20).order_by_score();
        let hits = searcher.search(&query, &top).expect("search");
        hits.into_iter().map(|(_, a)| self.id_at(a)).collect()
    }
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|id| (*id).to_owned()).collect()
}

fn all_but(excluded: &[&str]) -> BTreeSet<String> {
    DOCS.iter()
        .map(|d| d.id)
        .filter(|id| !excluded.contains(id))
        .map(str::to_owned)
        .collect()
}

#[track_caller]
fn hits(query: &str) -> BTreeSet<String> {
    let f = fixture();
    match f.parser.parse(query) {
        Ok(parsed) => f.ids_of(parsed.as_ref()),
        Err(error) => panic!("{query:?} does not parse: {error}"),
    }
}

#[track_caller]
fn assert_hits(query: &str, expected: &[&str]) {
    assert_eq!(hits(query), set(expected), "query {query:?}");
}

#[track_caller]
fn error(query: &str) -> QueryError {
    match fixture().parser.parse(query) {
        Ok(_) => panic!("{query:?} parses but should not"),
        Err(error) => error,
    }
}

#[track_caller]
fn assert_error(query: &str, position: usize, message_part: &str) {
    let error = error(query);
    assert_eq!(error.position, position, "query {query:?}: {error}");
    assert!(
        error.message.contains(message_part),
        "query {query:?}: {error:?} should mention {message_part:?}"
    );
}

#[test]
fn single_terms_search_the_default_field() {
    assert_hits("fish", &["d01", "d03", "d11"]);
    assert_hits("Fish", &["d01", "d03", "d11"]);
    assert_hits("tromso", &["d11"]);
    assert_hits("brulee", &["d06"]);
    assert_hits("nothing-like-this", &[]);
}

#[test]
fn field_terms_search_that_field() {
    assert_hits("TITLE:fish", &["d01", "d03"]);
    assert_hits("ABSTRACT:fish", &["d01", "d03", "d11"]);
    assert_hits("FIRSTNAME:james", &["d01", "d04"]);
    assert_hits("mime_type:\"text/plain\"", &["d01", "d06", "d07", "d10"]);
    assert_hits("id:d07", &["d07"]);
}

#[test]
fn field_names_ignore_case() {
    assert_hits("title:fish", &["d01", "d03"]);
    assert_hits("Abstract:\"fish\"", &["d01", "d03", "d11"]);
    assert_hits("MIME_TYPE:text\\/html", &["d03"]);
    assert_hits("date:2025-03-18", &["d01", "d02"]);
}

#[test]
fn gsearch_benchmark_queries() {
    assert_hits("ABSTRACT:\"fish\"", &["d01", "d03", "d11"]);
    assert_hits("ABSTRACT:\"animal\" AND NOT ALL:\"university\"", &["d04"]);
    assert_hits(
        "(ABSTRACT:\"fish\" OR FIRSTNAME:\"james\") AND ALL:\"university\"",
        &["d01", "d11"],
    );
}

#[test]
fn phrases_and_slop() {
    assert_hits("ABSTRACT:\"quick brown fox\"", &["d07"]);
    assert_hits("ABSTRACT:\"quick fox\"", &["d08"]);
    assert_hits("ABSTRACT:\"quick fox\"~1", &["d07", "d08"]);
    assert_hits("ABSTRACT:\"fox quick\"~1", &[]);
    assert_hits("ABSTRACT:\"fox quick\"~2", &["d08"]);
    assert_hits("ABSTRACT:\"QUICK Brown\"", &["d07"]);
    // A one-token phrase is a term; a wildcard inside quotes is not a wildcard.
    assert_hits("TITLE:\"fish\"", &["d01", "d03"]);
    assert_hits("TITLE:\"fish*\"", &["d01", "d03"]);
    assert_hits("mime_type:\"text/*\"", &["d13"]);
}

#[test]
fn a_term_the_analyzer_splits_is_a_phrase() {
    assert_hits("ABSTRACT:foo-bar", &["d09"]);
    assert_hits("TITLE:foo-bar", &["d09"]);
    assert_hits("ABSTRACT:(foo AND bar)", &["d09", "d12"]);
}

#[test]
fn a_term_the_analyzer_removes_matches_nothing_without_breaking_the_boolean() {
    assert_hits("TITLE:&", &[]);
    assert_hits("TITLE:fish OR TITLE:&", &["d01", "d03"]);
    assert_hits("TITLE:fish AND TITLE:&", &[]);
    assert_hits("TITLE:fish -TITLE:&", &["d01", "d03"]);
}

#[test]
fn boolean_operators() {
    let fish_or_animal = ["d01", "d02", "d03", "d04", "d10", "d11"];
    assert_hits("fish OR animal", &fish_or_animal);
    assert_hits("fish || animal", &fish_or_animal);
    assert_hits("fish animal", &fish_or_animal);
    assert_hits("fish AND farming", &["d11"]);
    assert_hits("fish && farming", &["d11"]);
    assert_hits("+fish +university", &["d01", "d11"]);
    assert_hits("+fish -cooking", &["d01", "d11"]);
    assert_hits("fish -cooking", &["d01", "d11"]);
    assert_hits("fish NOT cooking", &["d01", "d11"]);
    assert_hits("fish !cooking", &["d01", "d11"]);
    assert_hits("fish AND NOT cooking", &["d01", "d11"]);
    assert_hits("fish && !cooking", &["d01", "d11"]);
    // `+` makes one clause required, the other optional clause only scores.
    assert_hits("+fish animal", &["d01", "d03", "d11"]);
}

#[test]
fn and_or_mix_as_lucene_does_without_precedence() {
    // Lucene: `a OR b AND c` is `a +b +c`, and `a AND b OR c` is `+a +b c`.
    assert_hits("fish OR animal AND university", &["d02", "d10"]);
    assert_hits("animal AND university OR fish", &["d02", "d10"]);
    // `AND NOT` leaves the clause before it required: `fish +animal -university`.
    assert_hits("fish OR animal AND NOT university", &["d04"]);
    // A prohibited clause stays prohibited when AND follows it.
    assert_hits("-cooking AND fish", &["d01", "d11"]);
}

#[test]
fn pure_negatives_match_everything_else() {
    assert_eq!(hits("-TITLE:fish"), all_but(&["d01", "d03"]));
    assert_eq!(hits("NOT ALL:university"), all_but(UNIVERSITY));
    assert_eq!(hits("!university"), all_but(UNIVERSITY));
    assert_eq!(
        hits("-fish -university"),
        set(&["d04", "d06", "d08", "d12", "d13"])
    );
    assert_eq!(hits("(NOT fish)"), all_but(&["d01", "d03", "d11"]));
    // Nested inside an AND, as Solr does (Lucene's classic parser would find nothing).
    assert_hits("TITLE:animal AND (NOT ABSTRACT:pigs)", &["d04"]);
    assert_hits("TITLE:animal AND (-ABSTRACT:pigs)", &["d04"]);
    assert_hits(
        "+TITLE:animal +(-ABSTRACT:pigs -FIRSTNAME:george)",
        &["d04"],
    );
    assert_hits(
        "TITLE:fish OR (NOT ALL:university)",
        &["d01", "d03", "d04", "d06", "d08", "d12", "d13"],
    );
}

#[test]
fn nested_groups_and_field_groups() {
    assert_hits(
        "((TITLE:fish OR TITLE:birds) AND (FIRSTNAME:james OR FIRSTNAME:mary))",
        &["d01", "d02"],
    );
    assert_hits("TITLE:(fish birds)", &["d01", "d02", "d03"]);
    assert_hits("TITLE:(+fish -cooking)", &["d01"]);
    // A field inside a field group wins for its clause.
    assert_hits("TITLE:(fish OR (ABSTRACT:pigs))", &["d01", "d03", "d10"]);
    assert_hits("(((fish)))", &["d01", "d03", "d11"]);
    assert_hits(
        "TITLE:(animal AND (farm OR behaviour)) -FIRSTNAME:george",
        &["d04"],
    );
}

#[test]
fn wildcards_in_text_fields_are_normalised() {
    assert_hits("TITLE:fish*", &["d01", "d03", "d05"]);
    assert_hits("TITLE:FISH*", &["d01", "d03", "d05"]);
    assert_hits("ABSTRACT:*ish", &["d01", "d03", "d11"]);
    assert_hits("TITLE:f?sh", &["d01", "d03"]);
    assert_hits("ABSTRACT:fi*ng", &["d05"]);
    assert_hits("*ing", &["d03", "d05", "d11"]);
    assert_hits("TITLE:brû*", &["d06"]);
    assert_hits("FIRSTNAME:Zo?", &["d06"]);
    assert_hits("TITLE:fis?", &["d01", "d03"]);
    assert_hits("TITLE:f???h", &[]);
    // A fuzzy marker on a wildcard is ignored, as in Lucene.
    assert_hits("TITLE:fish*~2", &["d01", "d03", "d05"]);
}

#[test]
fn wildcards_in_keyword_fields_match_raw_values() {
    let text = ["d01", "d03", "d06", "d07", "d08", "d10", "d13"];
    assert_hits("mime_type:text\\/*", &text);
    assert_hits("mime_type:TEXT\\/*", &[]);
    assert_hits("mime_type:text\\/\\*", &["d13"]);
    assert_hits(
        "mime_type:*\\/p*",
        &["d01", "d02", "d04", "d06", "d07", "d10"],
    );
    assert_hits("mime_type:application\\/vnd.a\\+b\\(c\\)*", &["d12"]);
    assert_hits("mime_type:image\\/jp?g", &["d05"]);
}

#[test]
fn field_star_matches_documents_with_the_field() {
    let everything: Vec<&str> = DOCS.iter().map(|d| d.id).collect();
    assert_hits("*:*", &everything);
    assert_hits("*:*^2", &everything);
    assert_hits("TITLE:*", &everything);
    assert_hits("*", &everything);
    assert_eq!(hits("ABSTRACT:*"), all_but(&["d13"]));
    assert_eq!(hits("FIRSTNAME:[* TO *]"), all_but(&["d13"]));
    assert_eq!(hits("DATE:*"), all_but(&["d13"]));
    assert_eq!(hits("DATE:[* TO *]"), all_but(&["d13"]));
    assert_eq!(hits("content_size:*"), all_but(&["d13"]));
    assert_eq!(hits("content_size:[* TO *]"), all_but(&["d13"]));
    assert_eq!(hits("*:* -ABSTRACT:*"), set(&["d13"]));
}

#[test]
fn date_terms_match_their_whole_period() {
    assert_hits("DATE:2025", &["d01", "d02", "d03", "d04", "d09", "d10"]);
    assert_hits("DATE:2025-03", &["d01", "d02", "d03", "d09"]);
    assert_hits("DATE:2025-03-18", &["d01", "d02"]);
    assert_hits("DATE:\"2025-03-18T10:00:00Z\"", &["d01"]);
    assert_hits("DATE:2025-03-18T10\\:00\\:00Z", &["d01"]);
    assert_hits("DATE:\"2025-03-18T11:00:00+01:00\"", &["d01"]);
    assert_hits("DATE:\"2025-03-18T10:00:00.900Z\"", &["d01"]);
    assert_hits("DATE:\"2025-03-18T10:00:01Z\"", &[]);
    assert_hits("DATE:2024-02-29", &[]);
    assert_hits("DATE:1500", &[]);
}

#[test]
fn date_ranges() {
    assert_hits("DATE:[2025-03-18 TO 2025-03-19]", &["d01", "d02", "d03"]);
    assert_hits("DATE:{2025-03-18 TO 2025-03-19]", &["d03"]);
    assert_hits("DATE:[2025-03-18 TO 2025-03-19}", &["d01", "d02"]);
    assert_hits("DATE:{2025-03-18 TO 2025-03-19}", &[]);
    assert_hits(
        "DATE:[* TO 2024]",
        &["d05", "d06", "d07", "d08", "d11", "d12"],
    );
    assert_hits("DATE:[2025-03-19 TO *]", &["d03", "d10"]);
    assert_hits("DATE:{2025-03 TO *]", &["d10"]);
    assert_hits("DATE:[1999 TO 2022]", &["d11", "d12"]);
    assert_hits("DATE:[1500 TO 1999]", &["d12"]);
    assert_hits(
        "DATE:[2025-03-18T10:00:00Z TO 2025-03-18T23:59:59Z]",
        &["d01", "d02"],
    );
    assert_hits("DATE:{2025-03-18T10:00:00Z TO 2025-03-18T23:59:59Z}", &[]);
    assert_hits(
        "DATE:[\"2025-03-18T10:00:00Z\" TO \"2025-03-18T10:00:00Z\"]",
        &["d01"],
    );
    assert_hits("DATE:[2025-03-19 2025-04]", &["d03", "d10"]);
}

#[test]
fn number_terms_and_ranges() {
    assert_hits("content_size:1000", &["d09"]);
    assert_hits("content_size:\"42\"", &["d06"]);
    assert_hits("content_size:18446744073709551615", &["d12"]);
    assert_hits("content_size:[100 TO 1000]", &["d01", "d08", "d09"]);
    assert_hits("content_size:{100 TO 1000}", &["d08"]);
    assert_hits(
        "content_size:[1001 TO *]",
        &["d02", "d03", "d05", "d10", "d12"],
    );
    assert_hits("content_size:{* TO 10]", &["d04", "d07", "d11"]);
    assert_hits("content_size:{18446744073709551615 TO *]", &[]);
    assert_hits("content_size:[0 TO 0}", &[]);
    assert_hits("content_size:[5 TO 1]", &[]);
}

#[test]
fn text_and_keyword_ranges_compare_terms() {
    assert_hits("FIRSTNAME:[Jam TO Jan]", &["d01", "d04", "d05"]);
    assert_hits("FIRSTNAME:{james TO jane]", &["d05", "d08"]);
    assert_hits(
        "mime_type:[text TO text\\/plain]",
        &["d03", "d08", "d13", "d01", "d06", "d07", "d10"],
    );
    assert_hits("mime_type:{text\\/plain TO *]", &[]);
    assert_hits("id:[d11 TO *]", &["d11", "d12", "d13"]);
}

#[test]
fn boosts_order_the_scores() {
    let fish = ["d01", "d03"];
    let animal = ["d04", "d10"];
    let ranked = fixture().ranked("TITLE:fish^10 OR TITLE:animal");
    assert_eq!(ranked.len(), 4);
    assert!(
        fish.contains(&ranked[0].as_str()) && fish.contains(&ranked[1].as_str()),
        "{ranked:?}"
    );
    let ranked = fixture().ranked("TITLE:fish OR TITLE:animal^10");
    assert!(
        animal.contains(&ranked[0].as_str()) && animal.contains(&ranked[1].as_str()),
        "{ranked:?}"
    );
    let ranked = fixture().ranked("TITLE:fish (TITLE:animal)^0.01");
    assert!(
        fish.contains(&ranked[0].as_str()) && fish.contains(&ranked[1].as_str()),
        "{ranked:?}"
    );
    let ranked = fixture().ranked("TITLE:fish^0.01 \"animal farm\"^10");
    assert_eq!(ranked[0], "d10", "{ranked:?}");
    let ranked = fixture().ranked("ABSTRACT:\"quick fox\"~1^5 TITLE:lazy");
    assert_eq!(&ranked[..2], &["d08", "d07"], "{ranked:?}");
}

#[test]
fn fuzzy_terms() {
    assert_hits("FIRSTNAME:james~1", &["d01", "d04"]);
    assert_hits("FIRSTNAME:james~", &["d01", "d04", "d05", "d08"]);
    assert_hits("FIRSTNAME:james~2", &["d01", "d04", "d05", "d08"]);
    // Lucene lowers distances above 2 to 2.
    assert_hits("FIRSTNAME:james~5", &["d01", "d04", "d05", "d08"]);
    // A transposition is one edit.
    assert_hits("FIRSTNAME:jmaes~1", &["d01", "d04"]);
    assert_hits("FIRSTNAME:JMAES~1^3", &["d01", "d04"]);
    assert_hits("FIRSTNAME:jmaes~0", &[]);
    assert_hits("id:d1~1", &["d01", "d10", "d11", "d12", "d13"]);
}

#[test]
fn escapes() {
    assert_hits("mime_type:application\\/vnd.a\\+b\\(c\\)", &["d12"]);
    assert_hits("mime_type:\"application/vnd.a+b(c)\"", &["d12"]);
    assert_hits("mime_type:\"application\\/vnd.a+b(c)\"", &["d12"]);
    assert_hits("TITLE:\\u0066ish", &["d01", "d03"]);
    assert_hits("TITLE:\\(fish\\)", &["d01", "d03"]);
    assert_hits("TITLE:C++", &["d12"]);
    assert_hits("TITLE:\\AND", &[]);
    assert_hits("mime_type:text\\/\\*", &["d13"]);
    assert_hits("mime_type:[text\\/\\* TO text\\/\\*]", &["d13"]);
}

#[test]
fn building_blocks_for_conditions() {
    let f = fixture();
    let p = &f.parser;
    let run = |q: Result<Box<dyn Query>, QueryError>| f.ids_of(q.expect("builds").as_ref());
    assert_eq!(
        run(p.term("mime_type", "text/plain")),
        set(&["d01", "d06", "d07", "d10"])
    );
    assert_eq!(run(p.term("MIME_TYPE", "text/*")), set(&["d13"]));
    assert_eq!(run(p.term("title", "Fish")), set(&["d01", "d03"]));
    assert_eq!(run(p.term("ABSTRACT", "quick brown")), set(&["d07"]));
    assert_eq!(run(p.term("DATE", "2025-03-18")), set(&["d01", "d02"]));
    assert_eq!(run(p.term("content_size", "42")), set(&["d06"]));
    assert_eq!(
        run(p.wildcard("mime_type", "text/*")),
        set(&["d01", "d03", "d06", "d07", "d08", "d10", "d13"])
    );
    assert_eq!(
        run(p.wildcard("mime_type", "text/plain")),
        set(&["d01", "d06", "d07", "d10"])
    );
    assert_eq!(run(p.wildcard("TITLE", "F?sh")), set(&["d01", "d03"]));
    assert_eq!(run(p.wildcard("DATE", "*")), all_but(&["d13"]));
    assert_eq!(
        run(p.range(
            "content_size",
            Bound::Included("100"),
            Bound::Excluded("1000")
        )),
        set(&["d01", "d08"])
    );
    assert_eq!(
        run(p.range(
            "DATE",
            Bound::Included("2025-03-18"),
            Bound::Included("2025-03-18")
        )),
        set(&["d01", "d02"])
    );
    assert_eq!(
        run(p.range("DATE", Bound::Unbounded, Bound::Excluded("2023"))),
        set(&["d11", "d12"])
    );
    assert_eq!(
        run(p.range("ABSTRACT", Bound::Unbounded, Bound::Unbounded)),
        all_but(&["d13"])
    );

    let unknown = p.term("FOO", "x").expect_err("unknown field");
    assert_eq!(unknown.position, 0);
    assert!(unknown.message.contains("unknown field 'FOO'"), "{unknown}");
    assert!(p.term("DATE", "yesterday").is_err());
    assert!(p.wildcard("content_size", "1*").is_err());
    assert!(p
        .range("content_size", Bound::Included("-1"), Bound::Unbounded)
        .is_err());
}

#[test]
fn syntax_errors_name_their_position() {
    assert_error("", 0, "empty");
    assert_error("   ", 0, "empty");
    assert_error("ABSTRACT:fish AND", 14, "'AND' at the end");
    assert_error("fish NOT", 5, "'NOT' at the end");
    assert_error("-", 0, "'-' at the end");
    assert_error("AND fish", 0, "needs a clause before it");
    assert_error("fish OR OR birds", 8, "after 'OR'");
    assert_error("(fish OR birds", 0, "never closed");
    assert_error("fish OR (birds", 8, "never closed");
    assert_error("fish)", 4, "no matching '('");
    assert_error("()", 0, "empty");
    assert_error("\"fish", 0, "never closed");
    assert_error("TITLE:\"fish", 6, "never closed");
    assert_error("TITLE:", 0, "field 'TITLE:'");
    assert_error("fish OR TITLE:", 8, "field 'TITLE:'");
    assert_error("(TITLE:)", 7, "after field 'TITLE:'");
    assert_error("DATE:[2025 TO]", 13, "no upper bound");
    assert_error("DATE:[2025 TO", 5, "never closed");
    assert_error("DATE:[2025]", 10, "expected a range bound, found ']'");
    assert_error("fish^", 4, "boost");
    assert_error("fish^x", 4, "boost");
    assert_error("fish~1.5", 4, "fractional");
    assert_error("fish~x", 4, "edit distance");
    assert_error("\"a b\"~x", 5, "slop");
    assert_error("/fish/", 0, "regular expressions");
    assert_error("mime_type:text/plain", 14, "regular expressions");
    assert_error("fish\\", 4, "escapes nothing");
    assert_error("\\u00", 0, "four hexadecimal digits");
    assert_error("*:fish", 0, "'*:'");
    assert_error("fish ]", 5, "never opened");
    assert_error("\"fish\" :b", 7, "unexpected ':'");
    // As in Lucene, whitespace may separate a field name from its colon.
    assert_error("fish :b", 0, "unknown field 'fish'");
    assert_hits("TITLE :fish", &["d01", "d03"]);
    assert_error("--fish", 1, "after '-'");
}

#[test]
fn unknown_fields_are_errors_naming_them() {
    let error = error("FOO:bar");
    assert_eq!(error.position, 0);
    assert_eq!(
        error.message,
        "unknown field 'FOO'; known fields: TITLE, ABSTRACT, FIRSTNAME, ALL, mime_type, id, DATE, content_size"
    );
    assert_error("fish AND FOO:bar", 9, "unknown field 'FOO'");
    assert_error("TITLE:(fish OR a:b)", 15, "unknown field 'a'");
}

#[test]
fn values_a_field_cannot_hold_are_errors() {
    assert_error("DATE:2025-13-01", 5, "not a date");
    assert_error("DATE:[2025-01 TO 2025-13]", 17, "'2025-13' is not a date");
    assert_error("DATE:fish", 5, "not a date");
    assert_error("DATE:2025*", 5, "wildcards");
    assert_error("DATE:2025~1", 5, "fuzzy");
    assert_error("content_size:abc", 13, "not a whole number");
    assert_error("content_size:[1 TO x]", 19, "not a whole number");
    assert_error("content_size:\\-1", 13, "not a whole number");
    assert_error("content_size:-1", 13, "found '-'");
    assert_error("content_size:1*", 13, "wildcards");
}

#[test]
fn bounds_against_hostile_input() {
    let long = "a ".repeat(4097);
    assert_error(&long, 8192, "longer than 8192 bytes");
    let wide = "é".repeat(4097);
    assert_error(&wide, 4096, "longer than 8192 bytes");

    let deep = |n: usize| format!("{}zzz{}", "(".repeat(n), ")".repeat(n));
    assert_hits(&deep(32), &[]);
    assert_error(&deep(33), 32, "nested deeper than 32");

    let many = |n: usize| "a ".repeat(n);
    assert!(fixture().parser.parse(&many(1024)).is_ok());
    assert_error(&many(1025), 2048, "more than 1024 clauses");

    let pattern = |n: usize| format!("TITLE:{}*", "a".repeat(n - 1));
    assert_hits(&pattern(255), &[]);
    assert_error(&pattern(256), 6, "longer than 255");
    let stars = |n: usize| format!("TITLE:{}", "a*".repeat(n));
    assert_hits(&stars(32), &[]);
    assert_error(&stars(33), 6, "more than 32 wildcards");
    let patterns = |n: usize| "fi?h ".repeat(n);
    assert_hits(&patterns(32), &["d01", "d03", "d11"]);
    assert_error(&patterns(33), 160, "more than 32 wildcards");
    // `*` alone needs no automaton and costs nothing.
    assert!(fixture().parser.parse(&"TITLE:* ".repeat(40)).is_ok());
    let fuzzy = |n: usize| format!("fish OR {}~1", "a".repeat(n));
    assert_hits(&fuzzy(255), &["d01", "d03", "d11"]);
    assert_error(&fuzzy(256), 8, "longer than 255");
}

#[test]
fn random_input_never_panics() {
    const ALPHABET: &[&str] = &[
        "a",
        "b",
        ":",
        "(",
        ")",
        "\"",
        "*",
        "?",
        "[",
        "]",
        "{",
        "}",
        "TO",
        "AND",
        "OR",
        "NOT",
        "+",
        "-",
        "~",
        "^",
        "\\",
        " ",
        "TITLE:",
        "DATE:",
        "content_size:",
        "mime_type:",
        "1",
        "2025",
        "é",
        "/",
    ];
    let f = fixture();
    let searcher = f.reader.searcher();
    // xorshift64*: deterministic, no dependency.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut parsed = 0;
    for _ in 0..4000 {
        let length = next() % 24;
        let input: String = (0..length)
            .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
            .collect();
        match f.parser.parse(&input) {
            Ok(query) => {
                parsed += 1;
                if let Err(error) = searcher.search(&query, &Count) {
                    panic!("{input:?} parses but fails to search: {error}");
                }
            }
            Err(error) => {
                assert!(
                    error.position <= input.chars().count(),
                    "{input:?}: {error}"
                );
            }
        }
    }
    assert!(parsed > 100, "only {parsed} random queries parsed");
}

/// tantivy 0.27's own parser on the same index, for the record: it finds nothing for
/// `a AND NOT b` (tantivy issues #2317, #1980), which is why this module exists.
#[test]
fn tantivys_own_parser_gets_and_not_wrong() {
    let f = fixture();
    let parser = tantivy::query::QueryParser::for_index(&f.index, vec![f.all]);
    let theirs = parser
        .parse_query("ABSTRACT:animal AND NOT ALL:university")
        .expect("tantivy parses it");
    let ours = f
        .parser
        .parse("ABSTRACT:animal AND NOT ALL:university")
        .expect("parses");
    assert_eq!(f.ids_of(ours.as_ref()), set(&["d04"]));
    assert_eq!(f.ids_of(theirs.as_ref()), set(&[]));
}
