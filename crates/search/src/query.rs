//! Lucene's classic query syntax, parsed here and built into tantivy queries directly.
//!
//! `GET /rest/fcr:search?q=…` takes the syntax of Lucene's classic `QueryParser` with OR as
//! the default operator, as GSearch and Solr users know it. tantivy's own query parser is
//! not used: it finds nothing for `a AND NOT b` (tantivy issues #2317 and #1980) and its
//! operators do not mean what Lucene's mean. A query goes through three steps:
//!
//! 1. a lexer with Lucene's three modes (terms, `^boost` numbers, `[range]` bounds) turns the
//!    characters into tokens, resolving backslash escapes;
//! 2. a recursive-descent parser builds a tree of boolean clauses, applying Lucene's
//!    `addClause` rules for `AND`, `OR`, `+`, `-` and `NOT`, and names each leaf's field;
//! 3. the builder turns each leaf into tantivy queries according to how its field is indexed
//!    ([`FieldKind`]) and normalises the booleans.
//!
//! ```
//! use arca_search::query::{FieldKind, QueryField, QueryParser};
//! use tantivy::schema::{Schema, TEXT};
//! use tantivy::tokenizer::{LowerCaser, SimpleTokenizer, TextAnalyzer};
//!
//! let mut schema = Schema::builder();
//! let all = schema.add_text_field("ALL", TEXT);
//! let analyzer = TextAnalyzer::builder(SimpleTokenizer::default()).filter(LowerCaser).build();
//! let fields = vec![QueryField { name: "ALL".into(), field: all, kind: FieldKind::Text }];
//! let parser = QueryParser::new(fields, "ALL", analyzer);
//! assert!(parser.parse("fish AND NOT chips").is_ok());
//! let error = parser.parse("fish AND").unwrap_err();
//! assert_eq!(error.position, 5);
//! ```
//!
//! # Semantics
//!
//! The boolean operators are Lucene's exactly. Each clause is optional (SHOULD), required
//! (`+`) or prohibited (`-`, `NOT`, `!`). `AND` (`&&`) makes the clauses before and after it
//! required unless they are prohibited; `OR` (`||`) changes nothing, as with Lucene's default
//! OR operator. There is no precedence: `a OR b AND c` is `a +b +c`, and `a AND b OR c` is
//! `+a +b c`, as in Lucene. Parentheses group; `field:(a b)` applies the field to the group.
//!
//! Where this parser departs from Lucene, on purpose:
//!
//! - **Pure negatives match.** A boolean whose clauses are all prohibited (`-a`, `NOT a`, or
//!   `(NOT a)` nested in a larger query) matches every document except those, as Solr does.
//!   Lucene's classic parser would match nothing, which nobody who writes `NOT a` wants.
//! - **A term the analyzer removes entirely** (`&`, or a bare `+`) matches nothing but stays a
//!   clause with its occurrence, where Lucene drops it: `fish OR &` still finds fish, and
//!   `fish AND &` finds nothing.
//! - **Leading wildcards** (`*ish`, `?ish`) are allowed.
//! - **Regular expressions** (`/…/`) are refused with an error; escape `/` as `\/` or quote the
//!   term. Lucene's regular-expression dialect differs from the one tantivy understands.
//! - **Fuzzy and slop values** must be numbers (`~`, `~1`, `~0.5`); Lucene silently ignores
//!   anything else. Edit distances above 2 are lowered to 2, as Lucene does.
//! - **Fuzzy terms in text fields** are analysed like plain terms; if the analyzer splits one
//!   (`foo-bar~1`), each part must match within the distance.
//! - **Escapes in range bounds** work as in terms (`[a\] TO b]`); `\uXXXX` escapes work
//!   everywhere, as in Lucene.
//!
//! How a leaf becomes a tantivy query depends on its field's [`FieldKind`]:
//!
//! - **Text**: terms and phrases go through the analyzer the field was indexed with; one
//!   token gives a [`TermQuery`], several a [`PhraseQuery`] (also for an unquoted `foo-bar`),
//!   none a query that matches nothing. Wildcards (`fish*`, `f?sh`) are lowercased and
//!   ASCII-folded and matched against the field's terms with a [`RegexQuery`]; inside quotes
//!   `*` and `?` are ordinary characters. Range bounds are lowercased and folded too.
//! - **Keyword**: the whole value, exactly and case-sensitively; wildcards and ranges match
//!   raw values.
//! - **Date**: `2025`, `2025-03`, `2025-03-18` and RFC 3339 instants
//!   (`"2025-03-18T10:00:00Z"`; quote it or escape its colons) each denote a period: a year, a
//!   month, a day or a second (the index's precision; fractions are truncated). A term matches
//!   its whole period. In a range an inclusive lower bound starts at the start of its period,
//!   an exclusive one after its end; an inclusive upper bound ends at the end of its period
//!   (so `[2025-03-01 TO 2025-03-18]` includes all of the 18th), an exclusive one before its
//!   start.
//! - **Number** (`u64`): terms and ranges of whole numbers.
//!
//! `*:*` matches every document; `field:*` and `field:[* TO *]` match the documents that have
//! any value in the field.
//!
//! # Bounds
//!
//! Hostile input is refused with a [`QueryError`], never a panic: queries longer than
//! [`MAX_QUERY_BYTES`], groups nested deeper than [`MAX_DEPTH`], more than [`MAX_CLAUSES`]
//! clauses, wildcard patterns and fuzzy terms longer than [`MAX_TERM_CHARS`], more than
//! [`MAX_WILDCARDS`] wildcards.

use std::collections::HashMap;
use std::ops::Bound;

use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, EmptyQuery, FuzzyTermQuery, InvertedIndexRangeQuery, Occur,
    PhraseQuery, Query, RangeQuery, RegexQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::{AsciiFoldingFilter, LowerCaser, RawTokenizer, TextAnalyzer, TokenStream};
use tantivy::{DateTime, Term};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The longest query accepted, in bytes of UTF-8.
pub const MAX_QUERY_BYTES: usize = 8 * 1024;
/// The deepest nesting of parenthesised groups accepted.
pub const MAX_DEPTH: usize = 32;
/// The most clauses (terms, phrases, ranges and groups, counted at every level) in one query.
pub const MAX_CLAUSES: usize = 1024;
/// The longest wildcard pattern or fuzzy term accepted, in characters.
pub const MAX_TERM_CHARS: usize = 255;
/// The most wildcards (`*` and `?`, over all patterns) in one query. Each pattern becomes an
/// automaton whose construction grows about quadratically with its wildcards (some 40 ms
/// for 32 in one pattern), so this bounds the work one query can ask for.
pub const MAX_WILDCARDS: usize = 32;

/// Edit distance of `term~` without a number, and the largest one allowed (Lucene's too).
const MAX_EDITS: u8 = 2;
const NANOS_PER_SECOND: i128 = 1_000_000_000;
const SECONDS_PER_DAY: i128 = 86_400;

/// How a field is indexed, which decides how a query term is turned into terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// Tokenized with the parser's analyzer, with positions (tantivy `TEXT`).
    Text,
    /// One raw term per value (tantivy's `raw` tokenizer): ids, mime types, user names.
    Keyword,
    /// A `DateTime` field, indexed and fast, at second precision.
    Date,
    /// A `u64` field, indexed and fast.
    Number,
}

/// A field that queries may name.
#[derive(Debug, Clone)]
pub struct QueryField {
    /// The canonical name, e.g. `TITLE` or `mime_type`; queries may write it in any case.
    pub name: String,
    /// The schema field it is indexed in; its type must match `kind`.
    pub field: Field,
    /// How the field is indexed.
    pub kind: FieldKind,
}

/// Why a query was refused, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at character {position}: {message}")]
pub struct QueryError {
    /// 0-based offset, in characters (not bytes), into the query of what is wrong. The
    /// building blocks [`QueryParser::term`], [`QueryParser::wildcard`] and
    /// [`QueryParser::range`] have no query and report 0.
    pub position: usize,
    /// What is wrong, for the person who wrote the query.
    pub message: String,
}

impl QueryError {
    fn new(position: usize, message: impl Into<String>) -> Self {
        QueryError {
            position,
            message: message.into(),
        }
    }
}

type Result<T> = std::result::Result<T, QueryError>;

/// Parses Lucene query syntax into tantivy queries over a fixed set of fields.
///
/// Build one per index schema and share it: parsing takes `&self`.
#[derive(Clone)]
pub struct QueryParser {
    fields: Vec<QueryField>,
    by_name: HashMap<String, usize>,
    by_lowercase_name: HashMap<String, usize>,
    default_field: std::result::Result<usize, String>,
    analyzer: TextAnalyzer,
    normalizer: TextAnalyzer,
}

impl std::fmt::Debug for QueryParser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryParser")
            .field("fields", &self.fields)
            .field("default_field", &self.default_field)
            .finish_non_exhaustive()
    }
}

impl QueryParser {
    /// A parser for `fields`. `analyzer` is the text analyzer the Text fields were indexed
    /// with; `default_field` names the field of terms that name none (arca uses `ALL`).
    ///
    /// If `default_field` is not in `fields`, queries that need it fail with a
    /// [`QueryError`] at the term that needed it. When two names differ only in case, an
    /// exact match wins, and otherwise the first field given.
    pub fn new(fields: Vec<QueryField>, default_field: &str, analyzer: TextAnalyzer) -> Self {
        let mut by_name = HashMap::new();
        let mut by_lowercase_name = HashMap::new();
        for (index, field) in fields.iter().enumerate() {
            by_name.entry(field.name.clone()).or_insert(index);
            by_lowercase_name
                .entry(field.name.to_lowercase())
                .or_insert(index);
        }
        let mut parser = QueryParser {
            fields,
            by_name,
            by_lowercase_name,
            default_field: Err(default_field.to_owned()),
            analyzer,
            normalizer: TextAnalyzer::builder(RawTokenizer::default())
                .filter(LowerCaser)
                .filter(AsciiFoldingFilter)
                .build(),
        };
        if let Some(index) = parser.lookup(default_field) {
            parser.default_field = Ok(index);
        }
        parser
    }

    /// Parses `input`, Lucene's classic syntax, into a tantivy query.
    ///
    /// # Errors
    /// A [`QueryError`] at the offending character for any syntax error, unknown field,
    /// value its field cannot hold (an invalid date, a number that is not one) or exceeded
    /// bound (see the [module documentation](self)).
    pub fn parse(&self, input: &str) -> Result<Box<dyn Query>> {
        if input.len() > MAX_QUERY_BYTES {
            let position = input
                .char_indices()
                .take_while(|(offset, c)| offset + c.len_utf8() <= MAX_QUERY_BYTES)
                .count();
            return Err(QueryError::new(
                position,
                format!(
                    "the query is longer than {MAX_QUERY_BYTES} bytes ({} bytes)",
                    input.len()
                ),
            ));
        }
        let chars: Vec<char> = input.chars().collect();
        let tokens = Lexer::new(&chars).run()?;
        let node = Parser::new(self, tokens).parse()?;
        self.builder().build(&node)
    }

    /// A query for one value of the field named `field` (any case), not Lucene-escaped:
    /// analyzed for Text fields, exact for Keyword fields, the whole period for Date fields.
    ///
    /// # Errors
    /// A [`QueryError`] at position 0 if the field is unknown or the value is invalid for it.
    pub fn term(&self, field: &str, value: &str) -> Result<Box<dyn Query>> {
        let field = self.field_for_condition(field)?;
        self.builder().leaf(field, 0, &Leaf::Term(value.to_owned()))
    }

    /// A query for the values of `field` that match `pattern`, in which `*` matches any
    /// characters and `?` exactly one; nothing is escaped. A pattern without wildcards is a
    /// [`term`](Self::term), and `*` alone matches every document with a value in the field.
    ///
    /// # Errors
    /// A [`QueryError`] at position 0 if the field is unknown, the pattern is longer than
    /// [`MAX_TERM_CHARS`], has more than [`MAX_WILDCARDS`] wildcards or is too complex, or
    /// the field is a Date or Number field.
    pub fn wildcard(&self, field: &str, pattern: &str) -> Result<Box<dyn Query>> {
        let field = self.field_for_condition(field)?;
        let pattern: Vec<Piece> = pattern
            .chars()
            .map(|ch| Piece { ch, escaped: false })
            .collect();
        let leaf = term_leaf(&pattern, None, 0)?;
        check_wildcards(wildcards_in(&leaf), 0)?;
        self.builder().leaf(field, 0, &leaf)
    }

    /// A query for the values of `field` that match a pattern of Fedora 7's `condition=`:
    /// `*` matches any characters, `\*` is a literal `*`, and everything else (`?`
    /// included) is literal. Otherwise as [`wildcard`](Self::wildcard), with its bounds.
    ///
    /// # Errors
    /// As [`wildcard`](Self::wildcard).
    pub fn fedora_pattern(&self, field: &str, pattern: &str) -> Result<Box<dyn Query>> {
        let field = self.field_for_condition(field)?;
        let mut pieces = Vec::with_capacity(pattern.len());
        let mut chars = pattern.chars().peekable();
        while let Some(ch) = chars.next() {
            let escaped = match ch {
                '\\' if chars.peek() == Some(&'*') => {
                    chars.next();
                    pieces.push(Piece {
                        ch: '*',
                        escaped: true,
                    });
                    continue;
                }
                '*' => false,
                _ => true,
            };
            pieces.push(Piece { ch, escaped });
        }
        let leaf = term_leaf(&pieces, None, 0)?;
        check_wildcards(wildcards_in(&leaf), 0)?;
        self.builder().leaf(field, 0, &leaf)
    }

    /// A query for the values of `field` between `lower` and `upper`, with the semantics of
    /// `[a TO b]` for each field kind (see the [module documentation](self)); two unbounded
    /// ends match every document with a value in the field.
    ///
    /// # Errors
    /// A [`QueryError`] at position 0 if the field is unknown or a bound is invalid for it.
    pub fn range(
        &self,
        field: &str,
        lower: Bound<&str>,
        upper: Bound<&str>,
    ) -> Result<Box<dyn Query>> {
        let field = self.field_for_condition(field)?;
        let at_zero = |bound: Bound<&str>| match bound {
            Bound::Included(text) => Bound::Included(RangeValue::new(text, 0)),
            Bound::Excluded(text) => Bound::Excluded(RangeValue::new(text, 0)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let leaf = Leaf::Range {
            lower: at_zero(lower),
            upper: at_zero(upper),
        };
        self.builder().leaf(field, 0, &leaf)
    }

    /// The index of the field named `name`: exactly, else ignoring case.
    fn lookup(&self, name: &str) -> Option<usize> {
        self.by_name
            .get(name)
            .or_else(|| self.by_lowercase_name.get(&name.to_lowercase()))
            .copied()
    }

    fn resolve_field(&self, name: &str, position: usize) -> Result<usize> {
        self.lookup(name).ok_or_else(|| {
            let known: Vec<&str> = self.fields.iter().map(|f| f.name.as_str()).collect();
            QueryError::new(
                position,
                format!("unknown field '{name}'; known fields: {}", known.join(", ")),
            )
        })
    }

    fn field_for_condition(&self, name: &str) -> Result<usize> {
        self.resolve_field(name, 0)
    }

    fn builder(&self) -> Builder<'_> {
        Builder {
            parser: self,
            analyzer: self.analyzer.clone(),
            normalizer: self.normalizer.clone(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Lexer: Lucene's token kinds and its three modes (default, boost number, range bounds).

/// One character of a term, remembering whether it was escaped (an escaped `*` is literal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    ch: char,
    escaped: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    And,
    Or,
    Not,
    Plus,
    Minus,
    /// `+`, `-` or `!` followed by whitespace: Lucene reads it as a term.
    BareOperator(char),
    LeftParen,
    RightParen,
    Colon,
    Star,
    Caret,
    /// The number after `^`.
    Number(String),
    /// A term, possibly with wildcards.
    Term(Vec<Piece>),
    /// A quoted phrase, escapes resolved.
    Quoted(String),
    /// What follows `~`.
    Slop(String),
    RangeStart {
        inclusive: bool,
    },
    RangeEnd {
        inclusive: bool,
    },
    RangeTo,
    /// A range bound; `open` for an unquoted, unescaped `*`.
    RangeBound {
        text: String,
        open: bool,
    },
    End,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::And => "'AND'".into(),
            Tok::Or => "'OR'".into(),
            Tok::Not => "'NOT'".into(),
            Tok::Plus => "'+'".into(),
            Tok::Minus => "'-'".into(),
            Tok::BareOperator(ch) => format!("'{ch}'"),
            Tok::LeftParen => "'('".into(),
            Tok::RightParen => "')'".into(),
            Tok::Colon => "':'".into(),
            Tok::Star => "'*'".into(),
            Tok::Caret => "'^'".into(),
            Tok::Number(number) => format!("number '{number}'"),
            Tok::Term(pieces) => format!("term '{}'", text_of(pieces)),
            Tok::Quoted(text) => format!("phrase \"{text}\""),
            Tok::Slop(slop) => format!("'~{slop}'"),
            Tok::RangeStart { inclusive: true } => "'['".into(),
            Tok::RangeStart { inclusive: false } => "'{'".into(),
            Tok::RangeEnd { inclusive: true } => "']'".into(),
            Tok::RangeEnd { inclusive: false } => "'}'".into(),
            Tok::RangeTo => "'TO'".into(),
            Tok::RangeBound { text, .. } => format!("'{text}'"),
            Tok::End => "the end of the query".into(),
        }
    }

    /// Whether a clause may start with this token (after any conjunction and modifier).
    fn starts_clause(&self) -> bool {
        matches!(
            self,
            Tok::BareOperator(_)
                | Tok::LeftParen
                | Tok::Star
                | Tok::Term(_)
                | Tok::Quoted(_)
                | Tok::RangeStart { .. }
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Token {
    tok: Tok,
    /// Character offset of the token's first character.
    position: usize,
}

fn text_of(pieces: &[Piece]) -> String {
    pieces.iter().map(|piece| piece.ch).collect()
}

fn is_whitespace(ch: char) -> bool {
    matches!(ch, ' ' | '\t' | '\n' | '\r' | '\u{3000}')
}

/// The characters that cannot start a term unless escaped (Lucene's `_TERM_START_CHAR`).
const SPECIAL: &str = "+-!():^[]\"{}~*?\\/";

/// Lucene's `_TERM_START_CHAR`, without the escape sequence.
fn is_term_start(ch: char) -> bool {
    !is_whitespace(ch) && !SPECIAL.contains(ch)
}

/// Lucene's `_TERM_CHAR`: a start character, `-` or `+`.
fn is_term_char(ch: char) -> bool {
    is_term_start(ch) || ch == '-' || ch == '+'
}

struct Lexer<'a> {
    chars: &'a [char],
    at: usize,
    tokens: Vec<Token>,
}

impl<'a> Lexer<'a> {
    fn new(chars: &'a [char]) -> Self {
        Lexer {
            chars,
            at: 0,
            tokens: Vec::new(),
        }
    }

    fn peek(&self, offset: usize) -> Option<char> {
        self.chars.get(self.at + offset).copied()
    }

    fn push(&mut self, tok: Tok, position: usize) {
        self.tokens.push(Token { tok, position });
    }

    fn skip_whitespace(&mut self) {
        while self.peek(0).is_some_and(is_whitespace) {
            self.at += 1;
        }
    }

    fn run(mut self) -> Result<Vec<Token>> {
        loop {
            self.skip_whitespace();
            let start = self.at;
            let Some(ch) = self.peek(0) else {
                self.push(Tok::End, start);
                return Ok(self.tokens);
            };
            let after_is_space = self.peek(1).is_some_and(is_whitespace);
            match ch {
                '(' => self.single(Tok::LeftParen),
                ')' => self.single(Tok::RightParen),
                ':' => self.single(Tok::Colon),
                '^' => {
                    self.single(Tok::Caret);
                    self.boost_number(start)?;
                }
                '[' | '{' => {
                    self.single(Tok::RangeStart {
                        inclusive: ch == '[',
                    });
                    self.range(start)?;
                }
                ']' | '}' => {
                    return Err(QueryError::new(
                        start,
                        format!("'{ch}' closes a range that was never opened; escape it as '\\{ch}'"),
                    ))
                }
                '"' => {
                    let text = self.quoted()?;
                    self.push(Tok::Quoted(text), start);
                }
                '~' => {
                    self.at += 1;
                    let pieces = self.run_of(is_term_char, false)?;
                    self.push(Tok::Slop(text_of(&pieces)), start);
                }
                '/' => {
                    return Err(QueryError::new(
                        start,
                        "regular expressions (/…/) are not supported; escape '/' as '\\/' or quote the term",
                    ))
                }
                '+' | '-' | '!' if after_is_space => self.single(Tok::BareOperator(ch)),
                '+' => self.single(Tok::Plus),
                '-' => self.single(Tok::Minus),
                '!' => self.single(Tok::Not),
                _ => self.term(start)?,
            }
        }
    }

    fn single(&mut self, tok: Tok) {
        let start = self.at;
        self.at += 1;
        self.push(tok, start);
    }

    /// A term, a wildcard term, `*`, or a keyword (`AND`, `&&`, `OR`, `||`, `NOT`) when the
    /// whole run of term characters is exactly that keyword (Lucene's longest match).
    fn term(&mut self, start: usize) -> Result<()> {
        let pieces = self.run_of(|ch| is_term_char(ch) || ch == '*' || ch == '?', true)?;
        let raw: String = self.chars[start..self.at].iter().collect();
        let tok = match raw.as_str() {
            "AND" | "&&" => Tok::And,
            "OR" | "||" => Tok::Or,
            "NOT" => Tok::Not,
            "*" => Tok::Star,
            _ => Tok::Term(pieces),
        };
        self.push(tok, start);
        Ok(())
    }

    /// The longest run of characters accepted by `accept`, or escaped with a backslash.
    fn run_of(&mut self, accept: impl Fn(char) -> bool, at_least_one: bool) -> Result<Vec<Piece>> {
        let mut pieces = Vec::new();
        while let Some(ch) = self.peek(0) {
            if ch == '\\' {
                pieces.push(self.escape()?);
            } else if accept(ch) || (at_least_one && pieces.is_empty()) {
                pieces.push(Piece { ch, escaped: false });
                self.at += 1;
            } else {
                break;
            }
        }
        Ok(pieces)
    }

    /// The escape sequence at the cursor: `\x` for any `x`, or `\uXXXX`.
    fn escape(&mut self) -> Result<Piece> {
        let start = self.at;
        let Some(ch) = self.peek(1) else {
            return Err(QueryError::new(
                start,
                "'\\' at the end of the query escapes nothing",
            ));
        };
        if ch != 'u' {
            self.at += 2;
            return Ok(Piece { ch, escaped: true });
        }
        let hex: String = self.chars.iter().skip(start + 2).take(4).collect();
        let code = (hex.len() == 4 && hex.chars().all(|c| c.is_ascii_hexdigit()))
            .then(|| u32::from_str_radix(&hex, 16).ok())
            .flatten()
            .and_then(char::from_u32);
        match code {
            Some(ch) => {
                self.at += 6;
                Ok(Piece { ch, escaped: true })
            }
            None => Err(QueryError::new(
                start,
                "'\\u' must be followed by four hexadecimal digits of a Unicode character",
            )),
        }
    }

    /// A quoted string starting at the cursor, escapes resolved.
    fn quoted(&mut self) -> Result<String> {
        let start = self.at;
        self.at += 1;
        let mut text = String::new();
        while let Some(ch) = self.peek(0) {
            match ch {
                '"' => {
                    self.at += 1;
                    return Ok(text);
                }
                '\\' => text.push(self.escape()?.ch),
                _ => {
                    text.push(ch);
                    self.at += 1;
                }
            }
        }
        Err(QueryError::new(
            start,
            "the quote opened here is never closed",
        ))
    }

    /// Lucene's boost mode: digits, optionally a fraction, right after `^`.
    fn boost_number(&mut self, caret: usize) -> Result<()> {
        let start = self.at;
        let digits = |lexer: &mut Self| {
            let from = lexer.at;
            while lexer.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                lexer.at += 1;
            }
            lexer.at - from
        };
        if digits(self) == 0 {
            return Err(QueryError::new(
                caret,
                "'^' must be followed by a boost such as ^2 or ^0.5",
            ));
        }
        if self.peek(0) == Some('.') && self.peek(1).is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
            digits(self);
        }
        let number = self.chars[start..self.at].iter().collect();
        self.push(Tok::Number(number), start);
        Ok(())
    }

    /// Lucene's range mode, after `[` or `{`: bounds, `TO`, then `]` or `}`.
    fn range(&mut self, open: usize) -> Result<()> {
        loop {
            self.skip_whitespace();
            let start = self.at;
            let Some(ch) = self.peek(0) else {
                return Err(QueryError::new(
                    open,
                    "the range opened here is never closed with ']' or '}'",
                ));
            };
            match ch {
                ']' | '}' => {
                    self.single(Tok::RangeEnd {
                        inclusive: ch == ']',
                    });
                    return Ok(());
                }
                '"' => {
                    let text = self.quoted()?;
                    self.push(Tok::RangeBound { text, open: false }, start);
                }
                _ => {
                    let pieces =
                        self.run_of(|c| !is_whitespace(c) && c != ']' && c != '}', false)?;
                    let raw: String = self.chars[start..self.at].iter().collect();
                    let tok = match raw.as_str() {
                        "TO" => Tok::RangeTo,
                        "*" => Tok::RangeBound {
                            text: raw,
                            open: true,
                        },
                        _ => Tok::RangeBound {
                            text: text_of(&pieces),
                            open: false,
                        },
                    };
                    self.push(tok, start);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Parser: the tree of clauses, with Lucene's addClause rules.

/// One bound of a range, with where it was written.
#[derive(Debug, Clone, PartialEq)]
struct RangeValue {
    text: String,
    position: usize,
}

impl RangeValue {
    fn new(text: &str, position: usize) -> Self {
        RangeValue {
            text: text.to_owned(),
            position,
        }
    }
}

/// One character of a wildcard pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatternChar {
    Literal(char),
    /// `?`
    One,
    /// `*`
    Any,
}

/// What a leaf asks of its field, before the field's kind decides the tantivy query.
#[derive(Debug, Clone, PartialEq)]
enum Leaf {
    Term(String),
    Phrase {
        text: String,
        slop: u32,
    },
    Wildcard(Vec<PatternChar>),
    Fuzzy {
        text: String,
        distance: u8,
    },
    Range {
        lower: Bound<RangeValue>,
        upper: Bound<RangeValue>,
    },
    /// Any value in the field (`field:*`, `field:[* TO *]`).
    Exists,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    All,
    Leaf {
        field: usize,
        position: usize,
        leaf: Leaf,
    },
    Bool(Vec<(Occur, Node)>),
    Boost(Box<Node>, f32),
}

/// The field a clause applies to.
#[derive(Debug, Clone, Copy)]
enum Scope {
    Default,
    Named(usize),
    /// `*:`, which only combines with `*`.
    Star(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conjunction {
    None,
    And,
    Or,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Modifier {
    None,
    Required,
    Prohibited,
}

/// The operator just read, for errors about what must follow it.
type Operator = Option<(usize, String)>;

/// What followed a `~`, and where the `~` was.
#[derive(Debug, Clone)]
struct Slop {
    position: usize,
    text: String,
}

struct Parser<'p> {
    parser: &'p QueryParser,
    tokens: Vec<Token>,
    next: usize,
    clauses: usize,
    wildcards: usize,
}

impl<'p> Parser<'p> {
    fn new(parser: &'p QueryParser, tokens: Vec<Token>) -> Self {
        Parser {
            parser,
            tokens,
            next: 0,
            clauses: 0,
            wildcards: 0,
        }
    }

    fn peek(&self) -> &Token {
        self.peek_at(0)
    }

    fn peek_at(&self, offset: usize) -> &Token {
        // The lexer always ends the tokens with `End`, and nothing moves past it.
        let index = (self.next + offset).min(self.tokens.len().saturating_sub(1));
        &self.tokens[index]
    }

    fn advance(&mut self) -> Token {
        let token = self.peek().clone();
        if token.tok != Tok::End {
            self.next += 1;
        }
        token
    }

    fn parse(mut self) -> Result<Node> {
        if self.peek().tok == Tok::End {
            return Err(QueryError::new(0, "the query is empty"));
        }
        let node = self.query(Scope::Default, 0, None)?;
        let token = self.peek();
        match &token.tok {
            Tok::End => Ok(node),
            Tok::RightParen => Err(QueryError::new(token.position, "')' has no matching '('")),
            other => Err(QueryError::new(
                token.position,
                format!("unexpected {}", other.describe()),
            )),
        }
    }

    /// Lucene's `Query`: clauses joined by conjunctions, up to `)` or the end.
    fn query(&mut self, scope: Scope, depth: usize, group: Option<usize>) -> Result<Node> {
        let mut clauses: Vec<(Occur, Node)> = Vec::new();
        loop {
            let token = self.peek().clone();
            let first = clauses.is_empty();
            if first {
                if let Tok::And | Tok::Or = token.tok {
                    return Err(QueryError::new(
                        token.position,
                        format!("{} needs a clause before it", token.tok.describe()),
                    ));
                }
            } else if !matches!(
                token.tok,
                Tok::And | Tok::Or | Tok::Not | Tok::Plus | Tok::Minus
            ) && !token.tok.starts_clause()
            {
                break;
            }
            let mut operator: Operator = None;
            let conjunction = match token.tok {
                Tok::And | Tok::Or if !first => {
                    self.advance();
                    operator = Some((token.position, token.tok.describe()));
                    if token.tok == Tok::And {
                        Conjunction::And
                    } else {
                        Conjunction::Or
                    }
                }
                _ => Conjunction::None,
            };
            let token = self.peek().clone();
            let modifier = match token.tok {
                Tok::Plus => Modifier::Required,
                Tok::Minus | Tok::Not => Modifier::Prohibited,
                _ => Modifier::None,
            };
            if modifier != Modifier::None {
                self.advance();
                operator = Some((token.position, token.tok.describe()));
            }
            let start = self.peek().position;
            self.clauses += 1;
            if self.clauses > MAX_CLAUSES {
                return Err(QueryError::new(
                    start,
                    format!("the query has more than {MAX_CLAUSES} clauses"),
                ));
            }
            let node = self.clause(scope, depth, group, &operator)?;
            add_clause(&mut clauses, conjunction, modifier, node);
        }
        Ok(Node::Bool(clauses))
    }

    /// The error for a clause that should start at the current token but cannot.
    fn missing_clause(&self, group: Option<usize>, operator: &Operator) -> QueryError {
        let token = self.peek();
        match (&token.tok, operator, group) {
            (Tok::End, Some((position, name)), _) => QueryError::new(
                *position,
                format!("{name} at the end of the query must be followed by a clause"),
            ),
            (Tok::End, None, Some(open)) => QueryError::new(open, "the '(' here is never closed"),
            (Tok::End, None, None) => QueryError::new(token.position, "the query is empty"),
            (Tok::RightParen, None, Some(open)) => {
                QueryError::new(open, "the group '()' here is empty")
            }
            (Tok::RightParen, None, None) => {
                QueryError::new(token.position, "')' has no matching '('")
            }
            (tok, Some((_, name)), _) => QueryError::new(
                token.position,
                format!("expected a clause after {name}, found {}", tok.describe()),
            ),
            (tok, None, _) => QueryError::new(
                token.position,
                format!(
                    "expected a term, phrase, range or group, found {}",
                    tok.describe()
                ),
            ),
        }
    }

    /// Lucene's `Clause`: an optional `field:` then a term or a parenthesised group.
    fn clause(
        &mut self,
        mut scope: Scope,
        depth: usize,
        group: Option<usize>,
        operator: &Operator,
    ) -> Result<Node> {
        let token = self.peek().clone();
        let mut field_operator = None;
        if self.peek_at(1).tok == Tok::Colon {
            match &token.tok {
                Tok::Term(pieces) if !is_wildcard(pieces) => {
                    let name = text_of(pieces);
                    scope = Scope::Named(self.parser.resolve_field(&name, token.position)?);
                    field_operator = Some((token.position, format!("field '{name}:'")));
                }
                Tok::Star => {
                    scope = Scope::Star(token.position);
                    field_operator = Some((token.position, "'*:'".to_owned()));
                }
                _ => {}
            }
            if field_operator.is_some() {
                self.advance();
                self.advance();
            }
        }
        let operator = if field_operator.is_some() {
            &field_operator
        } else {
            operator
        };
        let token = self.peek().clone();
        if !token.tok.starts_clause() {
            return Err(self.missing_clause(group, operator));
        }
        if token.tok != Tok::LeftParen {
            return self.term(scope);
        }
        if let Scope::Star(position) = scope {
            return Err(star_scope_error(position));
        }
        if depth + 1 > MAX_DEPTH {
            return Err(QueryError::new(
                token.position,
                format!("groups are nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.advance();
        let node = self.query(scope, depth + 1, Some(token.position))?;
        match self.peek().tok {
            Tok::RightParen => {
                self.advance();
            }
            Tok::End => {
                return Err(QueryError::new(
                    token.position,
                    "the '(' here is never closed",
                ))
            }
            ref other => {
                return Err(QueryError::new(
                    self.peek().position,
                    format!("expected ')', found {}", other.describe()),
                ))
            }
        }
        let boost = self.boost_only()?;
        Ok(boosted(node, boost))
    }

    /// `^n` after a group or range.
    fn boost_only(&mut self) -> Result<Option<f32>> {
        if self.peek().tok != Tok::Caret {
            return Ok(None);
        }
        self.advance();
        self.boost_value().map(Some)
    }

    /// The number after a `^` just read.
    fn boost_value(&mut self) -> Result<f32> {
        let token = self.advance();
        match token.tok {
            Tok::Number(text) => match text.parse::<f32>() {
                Ok(boost) if boost.is_finite() => Ok(boost),
                _ => Err(QueryError::new(
                    token.position,
                    format!("boost '{text}' is out of range"),
                )),
            },
            // The lexer puts a number after every `^` or fails.
            other => Err(QueryError::new(
                token.position,
                format!("expected a boost number, found {}", other.describe()),
            )),
        }
    }

    /// Lucene's `Term`: a term, phrase or range with its boost and fuzziness or slop.
    fn term(&mut self, scope: Scope) -> Result<Node> {
        let token = self.advance();
        let position = token.position;
        let pieces = match token.tok {
            Tok::Term(pieces) => pieces,
            Tok::Star => vec![Piece {
                ch: '*',
                escaped: false,
            }],
            Tok::BareOperator(ch) => vec![Piece { ch, escaped: false }],
            Tok::Quoted(text) => {
                let (boost, slop) = self.boost_and_slop()?;
                let slop = match slop {
                    Some(slop) => phrase_slop(&slop.text, slop.position)?,
                    None => 0,
                };
                let field = self.field_of(scope, position)?;
                let leaf = Leaf::Phrase { text, slop };
                return Ok(boosted(
                    Node::Leaf {
                        field,
                        position,
                        leaf,
                    },
                    boost,
                ));
            }
            Tok::RangeStart { inclusive } => return self.range(scope, position, inclusive),
            other => {
                return Err(QueryError::new(
                    position,
                    format!(
                        "expected a term, phrase or range, found {}",
                        other.describe()
                    ),
                ))
            }
        };
        let (boost, slop) = self.boost_and_slop()?;
        if let Scope::Star(star) = scope {
            if pieces.len() == 1 && pieces[0].ch == '*' && !pieces[0].escaped {
                return Ok(boosted(Node::All, boost));
            }
            return Err(star_scope_error(star));
        }
        let field = self.field_of(scope, position)?;
        let leaf = term_leaf(&pieces, slop, position)?;
        self.wildcards += wildcards_in(&leaf);
        check_wildcards(self.wildcards, position)?;
        Ok(boosted(
            Node::Leaf {
                field,
                position,
                leaf,
            },
            boost,
        ))
    }

    /// `[a TO b]`, `{a TO b}` or mixed, after the opening bracket at `position`.
    fn range(&mut self, scope: Scope, position: usize, lower_inclusive: bool) -> Result<Node> {
        if let Scope::Star(star) = scope {
            return Err(star_scope_error(star));
        }
        let lower = self.range_bound(None)?;
        let to = if self.peek().tok == Tok::RangeTo {
            Some(self.advance().position)
        } else {
            None
        };
        let upper = self.range_bound(to)?;
        let end = self.advance();
        let Tok::RangeEnd {
            inclusive: upper_inclusive,
        } = end.tok
        else {
            return Err(QueryError::new(
                end.position,
                format!(
                    "a range has two bounds, then ']' or '}}'; found {}",
                    end.tok.describe()
                ),
            ));
        };
        let boost = self.boost_only()?;
        let field = self.field_of(scope, position)?;
        let bound = |value: Option<RangeValue>, inclusive: bool| match value {
            None => Bound::Unbounded,
            Some(value) if inclusive => Bound::Included(value),
            Some(value) => Bound::Excluded(value),
        };
        let leaf = Leaf::Range {
            lower: bound(lower, lower_inclusive),
            upper: bound(upper, upper_inclusive),
        };
        Ok(boosted(
            Node::Leaf {
                field,
                position,
                leaf,
            },
            boost,
        ))
    }

    /// One bound of a range: `None` for `*`. `TO` counts as a bound where one is due, as
    /// in Lucene (`[TO TO z]`).
    fn range_bound(&mut self, after_to: Option<usize>) -> Result<Option<RangeValue>> {
        let token = self.advance();
        match token.tok {
            Tok::RangeBound { open: true, .. } => Ok(None),
            Tok::RangeBound { text, open: false } => Ok(Some(RangeValue {
                text,
                position: token.position,
            })),
            Tok::RangeTo => Ok(Some(RangeValue {
                text: "TO".to_owned(),
                position: token.position,
            })),
            Tok::RangeEnd { .. } if after_to.is_some() => Err(QueryError::new(
                token.position,
                "the range has no upper bound after 'TO'; write '*' for an open end",
            )),
            other => Err(QueryError::new(
                token.position,
                format!("expected a range bound, found {}", other.describe()),
            )),
        }
    }

    /// The `^boost` and `~slop` after a term or phrase, in either order.
    fn boost_and_slop(&mut self) -> Result<(Option<f32>, Option<Slop>)> {
        let mut boost = None;
        let mut slop = None;
        for _ in 0..2 {
            let token = self.peek().clone();
            match token.tok {
                Tok::Caret if boost.is_none() => {
                    self.advance();
                    boost = Some(self.boost_value()?);
                }
                Tok::Slop(text) if slop.is_none() => {
                    self.advance();
                    slop = Some(Slop {
                        position: token.position,
                        text,
                    });
                }
                _ => break,
            }
        }
        Ok((boost, slop))
    }

    fn field_of(&self, scope: Scope, position: usize) -> Result<usize> {
        match scope {
            Scope::Named(field) => Ok(field),
            Scope::Star(star) => Err(star_scope_error(star)),
            Scope::Default => self.parser.default_field.clone().map_err(|name| {
                QueryError::new(
                    position,
                    format!("this term names no field, and the default field '{name}' is not configured"),
                )
            }),
        }
    }
}

fn star_scope_error(position: usize) -> QueryError {
    QueryError::new(
        position,
        "'*:' only combines with '*' ('*:*' matches every document)",
    )
}

fn boosted(node: Node, boost: Option<f32>) -> Node {
    match boost {
        Some(boost) => Node::Boost(Box::new(node), boost),
        None => node,
    }
}

/// Lucene's `addClause` for the default operator OR: `AND` makes the previous clause
/// required unless it is prohibited, and the new one required unless it is prohibited;
/// `OR` changes nothing.
fn add_clause(
    clauses: &mut Vec<(Occur, Node)>,
    conjunction: Conjunction,
    modifier: Modifier,
    node: Node,
) {
    if conjunction == Conjunction::And {
        if let Some((occur, _)) = clauses.last_mut() {
            if *occur != Occur::MustNot {
                *occur = Occur::Must;
            }
        }
    }
    let occur = match modifier {
        Modifier::Prohibited => Occur::MustNot,
        Modifier::Required => Occur::Must,
        Modifier::None if conjunction == Conjunction::And => Occur::Must,
        Modifier::None => Occur::Should,
    };
    clauses.push((occur, node));
}

/// The wildcards of a leaf that will become an automaton.
fn wildcards_in(leaf: &Leaf) -> usize {
    match leaf {
        Leaf::Wildcard(pattern) => pattern
            .iter()
            .filter(|c| !matches!(c, PatternChar::Literal(_)))
            .count(),
        _ => 0,
    }
}

fn check_wildcards(count: usize, position: usize) -> Result<()> {
    if count > MAX_WILDCARDS {
        return Err(QueryError::new(
            position,
            format!("the query has more than {MAX_WILDCARDS} wildcards ('*' and '?')"),
        ));
    }
    Ok(())
}

fn is_wildcard(pieces: &[Piece]) -> bool {
    pieces
        .iter()
        .any(|piece| !piece.escaped && (piece.ch == '*' || piece.ch == '?'))
}

/// The leaf for an unquoted term: a wildcard if it has unescaped `*` or `?` (then any
/// fuzziness is ignored, as in Lucene), else fuzzy if `~` followed, else a plain term.
fn term_leaf(pieces: &[Piece], slop: Option<Slop>, position: usize) -> Result<Leaf> {
    let length = pieces.len();
    if is_wildcard(pieces) {
        if length > MAX_TERM_CHARS {
            return Err(QueryError::new(
                position,
                format!("the wildcard pattern is longer than {MAX_TERM_CHARS} characters"),
            ));
        }
        let pattern: Vec<PatternChar> = pieces
            .iter()
            .map(|piece| match (piece.ch, piece.escaped) {
                ('*', false) => PatternChar::Any,
                ('?', false) => PatternChar::One,
                (ch, _) => PatternChar::Literal(ch),
            })
            .collect();
        if pattern.iter().all(|c| *c == PatternChar::Any) {
            return Ok(Leaf::Exists);
        }
        return Ok(Leaf::Wildcard(pattern));
    }
    let text = text_of(pieces);
    let Some(slop) = slop else {
        return Ok(Leaf::Term(text));
    };
    if length > MAX_TERM_CHARS {
        return Err(QueryError::new(
            position,
            format!("the fuzzy term is longer than {MAX_TERM_CHARS} characters"),
        ));
    }
    let distance = fuzzy_distance(&slop.text, length, slop.position)?;
    Ok(Leaf::Fuzzy { text, distance })
}

/// Whether `text` is Lucene's slop number: digits, optionally a fraction.
fn is_slop_number(text: &str) -> bool {
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (text, None),
    };
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    digits(whole) && fraction.is_none_or(digits)
}

/// The edit distance of `term~slop`, as Lucene's `handleBareFuzzy` and
/// `FuzzyQuery.floatToEdits` compute it: `~` alone is 2; a whole number is that many edits
/// (at most 2); `~0` is exact; a fraction below 1 is a similarity, scaled by the term's length.
fn fuzzy_distance(slop: &str, term_chars: usize, position: usize) -> Result<u8> {
    if slop.is_empty() {
        return Ok(MAX_EDITS);
    }
    let similarity = match slop.parse::<f32>() {
        Ok(similarity) if is_slop_number(slop) && similarity.is_finite() => similarity,
        _ => {
            return Err(QueryError::new(
                position,
                format!("'~{slop}' is not an edit distance; write ~, ~1 or ~2"),
            ))
        }
    };
    if similarity >= 1.0 {
        if similarity.fract() != 0.0 {
            return Err(QueryError::new(
                position,
                format!("'~{slop}': fractional edit distances are not allowed"),
            ));
        }
        return Ok(if similarity >= f32::from(MAX_EDITS) {
            MAX_EDITS
        } else {
            // 1 ≤ similarity < MAX_EDITS, a whole number.
            similarity as u8
        });
    }
    if similarity == 0.0 {
        // Lucene: 0 means exact, not any number of edits.
        return Ok(0);
    }
    let edits = (1.0 - f64::from(similarity)) * term_chars as f64;
    Ok(if edits >= f64::from(MAX_EDITS) {
        MAX_EDITS
    } else {
        edits as u8
    })
}

/// The slop of `"a b"~slop`: the whole part of the number, as Lucene's `(int)` cast.
fn phrase_slop(slop: &str, position: usize) -> Result<u32> {
    if slop.is_empty() {
        return Ok(0);
    }
    let whole = slop.split_once('.').map_or(slop, |(whole, _)| whole);
    match whole.parse::<u32>() {
        Ok(slop_value) if is_slop_number(slop) => Ok(slop_value),
        _ => Err(QueryError::new(
            position,
            format!("'~{slop}' is not a phrase slop; write a whole number such as ~2"),
        )),
    }
}

// ---------------------------------------------------------------------------------------
// Builder: the tree to tantivy queries, by field kind.

struct Builder<'p> {
    parser: &'p QueryParser,
    analyzer: TextAnalyzer,
    normalizer: TextAnalyzer,
}

impl Builder<'_> {
    fn build(&mut self, node: &Node) -> Result<Box<dyn Query>> {
        match node {
            Node::All => Ok(Box::new(AllQuery)),
            Node::Leaf {
                field,
                position,
                leaf,
            } => self.leaf(*field, *position, leaf),
            Node::Boost(inner, boost) => Ok(Box::new(BoostQuery::new(self.build(inner)?, *boost))),
            Node::Bool(clauses) => self.boolean(clauses),
        }
    }

    /// A boolean, normalised: one required or optional clause is that clause; clauses that
    /// are all prohibited exclude from every document.
    fn boolean(&mut self, clauses: &[(Occur, Node)]) -> Result<Box<dyn Query>> {
        if let [(Occur::Must | Occur::Should, node)] = clauses {
            return self.build(node);
        }
        let mut built = Vec::with_capacity(clauses.len() + 1);
        for (occur, node) in clauses {
            built.push((*occur, self.build(node)?));
        }
        if clauses.iter().all(|(occur, _)| *occur == Occur::MustNot) {
            built.push((Occur::Must, Box::new(AllQuery) as Box<dyn Query>));
        }
        Ok(Box::new(BooleanQuery::new(built)))
    }

    fn leaf(&mut self, index: usize, position: usize, leaf: &Leaf) -> Result<Box<dyn Query>> {
        let parser = self.parser;
        let Some(field) = parser.fields.get(index) else {
            return Err(QueryError::new(position, "unknown field"));
        };
        match field.kind {
            FieldKind::Text | FieldKind::Keyword => {
                self.string_leaf(field.field, field.kind, position, leaf)
            }
            FieldKind::Date => date_leaf(field.field, &field.name, position, leaf),
            FieldKind::Number => number_leaf(field.field, &field.name, position, leaf),
        }
    }

    fn string_leaf(
        &mut self,
        field: Field,
        kind: FieldKind,
        position: usize,
        leaf: &Leaf,
    ) -> Result<Box<dyn Query>> {
        let text = kind == FieldKind::Text;
        match leaf {
            Leaf::Term(value) if text => Ok(self.analyzed(field, value, 0)),
            Leaf::Phrase { text: value, slop } if text => Ok(self.analyzed(field, value, *slop)),
            Leaf::Term(value) | Leaf::Phrase { text: value, .. } => Ok(Box::new(TermQuery::new(
                Term::from_field_text(field, value),
                IndexRecordOption::WithFreqs,
            ))),
            Leaf::Wildcard(pattern) => {
                let regex = self.wildcard_regex(pattern, text);
                match RegexQuery::from_pattern(&regex, field) {
                    Ok(query) => Ok(Box::new(query)),
                    Err(_) => Err(QueryError::new(
                        position,
                        "the wildcard pattern is too complex; use fewer wildcards",
                    )),
                }
            }
            Leaf::Fuzzy {
                text: value,
                distance,
            } => {
                let terms = if text {
                    self.tokens(value).into_iter().map(|(_, t)| t).collect()
                } else {
                    vec![value.clone()]
                };
                let mut fuzzy: Vec<Box<dyn Query>> = terms
                    .iter()
                    .map(|term| {
                        Box::new(FuzzyTermQuery::new(
                            Term::from_field_text(field, term),
                            *distance,
                            true,
                        )) as Box<dyn Query>
                    })
                    .collect();
                Ok(match fuzzy.len() {
                    0 => Box::new(EmptyQuery),
                    1 => fuzzy.remove(0),
                    _ => Box::new(BooleanQuery::intersection(fuzzy)),
                })
            }
            Leaf::Range { lower, upper } => {
                if matches!((lower, upper), (Bound::Unbounded, Bound::Unbounded)) {
                    return Ok(text_exists(field));
                }
                let mut term = |value: &RangeValue| {
                    let value = if text {
                        self.normalize(&value.text)
                    } else {
                        value.text.clone()
                    };
                    Term::from_field_text(field, &value)
                };
                let lower = map_bound(lower, &mut term);
                let upper = map_bound(upper, &mut term);
                Ok(Box::new(RangeQuery::new(lower, upper)))
            }
            Leaf::Exists => Ok(text_exists(field)),
        }
    }

    /// A term or phrase analyzed as the field was: nothing, a term, or a phrase.
    fn analyzed(&mut self, field: Field, value: &str, slop: u32) -> Box<dyn Query> {
        let mut tokens = self.tokens(value);
        match tokens.len() {
            0 => Box::new(EmptyQuery),
            1 => {
                let (_, token) = tokens.remove(0);
                Box::new(TermQuery::new(
                    Term::from_field_text(field, &token),
                    IndexRecordOption::WithFreqs,
                ))
            }
            _ => {
                let terms = tokens
                    .into_iter()
                    .map(|(offset, token)| (offset, Term::from_field_text(field, &token)))
                    .collect();
                Box::new(PhraseQuery::new_with_offset_and_slop(terms, slop))
            }
        }
    }

    /// The analyzer's tokens for `value`, with their positions.
    fn tokens(&mut self, value: &str) -> Vec<(usize, String)> {
        let mut stream = self.analyzer.token_stream(value);
        let mut tokens = Vec::new();
        while stream.advance() {
            let token = stream.token();
            tokens.push((token.position, token.text.clone()));
        }
        tokens
    }

    /// `value` lowercased and ASCII-folded, whole.
    fn normalize(&mut self, value: &str) -> String {
        let mut stream = self.normalizer.token_stream(value);
        let mut normalized = String::new();
        while stream.advance() {
            normalized.push_str(&stream.token().text);
        }
        normalized
    }

    /// A regex matching whole terms for a wildcard pattern; its literal parts are
    /// normalised for text fields.
    fn wildcard_regex(&mut self, pattern: &[PatternChar], text: bool) -> String {
        let mut regex = String::from("(?s)");
        let mut literal = String::new();
        let mut previous = None;
        for &c in pattern {
            match c {
                PatternChar::Literal(ch) => literal.push(ch),
                PatternChar::One | PatternChar::Any => {
                    self.flush_literal(&mut regex, &mut literal, text);
                    if c == PatternChar::One {
                        regex.push('.');
                    } else if previous != Some(PatternChar::Any) {
                        regex.push_str(".*");
                    }
                }
            }
            previous = Some(c);
        }
        self.flush_literal(&mut regex, &mut literal, text);
        regex
    }

    fn flush_literal(&mut self, regex: &mut String, literal: &mut String, text: bool) {
        if literal.is_empty() {
            return;
        }
        let normalized = if text {
            self.normalize(literal)
        } else {
            literal.clone()
        };
        for ch in normalized.chars() {
            if is_regex_meta(ch) {
                regex.push('\\');
            }
            regex.push(ch);
        }
        literal.clear();
    }
}

/// The characters `regex-syntax` gives a meaning to, which must be escaped to be literal.
const REGEX_META: &str = "\\.+*?()|[]{}^$#&-~";

fn is_regex_meta(ch: char) -> bool {
    REGEX_META.contains(ch)
}

/// Documents with any term in a text or keyword field.
fn text_exists(field: Field) -> Box<dyn Query> {
    Box::new(InvertedIndexRangeQuery::new(
        Bound::Included(Term::from_field_text(field, "")),
        Bound::Unbounded,
    ))
}

fn map_bound<T, U>(bound: &Bound<T>, mut f: impl FnMut(&T) -> U) -> Bound<U> {
    match bound {
        Bound::Included(value) => Bound::Included(f(value)),
        Bound::Excluded(value) => Bound::Excluded(f(value)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn unsupported(name: &str, kind: &str, what: &str, position: usize) -> QueryError {
    QueryError::new(
        position,
        format!("{what} are not supported on {kind} field '{name}'; use a term or a range"),
    )
}

fn number_leaf(field: Field, name: &str, position: usize, leaf: &Leaf) -> Result<Box<dyn Query>> {
    let number = |value: &str, at: usize| {
        value.parse::<u64>().map_err(|_| {
            QueryError::new(
                at,
                format!("'{value}' is not a whole number, which number field '{name}' holds"),
            )
        })
    };
    let (lower, upper) = match leaf {
        Leaf::Term(value) | Leaf::Phrase { text: value, .. } => {
            let value = number(value, position)?;
            return Ok(Box::new(TermQuery::new(
                Term::from_field_u64(field, value),
                IndexRecordOption::Basic,
            )));
        }
        Leaf::Exists => (Some(0), None),
        Leaf::Range { lower, upper } => {
            let lower = match lower {
                Bound::Included(value) => Some(number(&value.text, value.position)?),
                Bound::Excluded(value) => match number(&value.text, value.position)?.checked_add(1)
                {
                    Some(n) => Some(n),
                    None => return Ok(Box::new(EmptyQuery)),
                },
                Bound::Unbounded => None,
            };
            let upper = match upper {
                Bound::Included(value) => Some(number(&value.text, value.position)?),
                Bound::Excluded(value) => match number(&value.text, value.position)?.checked_sub(1)
                {
                    Some(n) => Some(n),
                    None => return Ok(Box::new(EmptyQuery)),
                },
                Bound::Unbounded => None,
            };
            (lower.or(Some(0)), upper)
        }
        Leaf::Wildcard(_) => return Err(unsupported(name, "number", "wildcards", position)),
        Leaf::Fuzzy { .. } => return Err(unsupported(name, "number", "fuzzy terms", position)),
    };
    inclusive_range(lower, upper, |n| Term::from_field_u64(field, n))
}

fn date_leaf(field: Field, name: &str, position: usize, leaf: &Leaf) -> Result<Box<dyn Query>> {
    let period = |value: &str, at: usize| {
        date_period(value).ok_or_else(|| {
            QueryError::new(
                at,
                format!(
                    "'{value}' is not a date for field '{name}'; write 2025, 2025-03, \
                     2025-03-18 or an RFC 3339 instant such as \"2025-03-18T10:00:00Z\""
                ),
            )
        })
    };
    let (lower, upper) = match leaf {
        Leaf::Term(value) | Leaf::Phrase { text: value, .. } => {
            let (start, end) = period(value, position)?;
            (Some(start), Some(end - 1))
        }
        Leaf::Exists => (Some(i128::from(i64::MIN)), None),
        Leaf::Range { lower, upper } => {
            let lower = match lower {
                Bound::Included(value) => Some(period(&value.text, value.position)?.0),
                Bound::Excluded(value) => Some(period(&value.text, value.position)?.1),
                Bound::Unbounded => None,
            };
            let upper = match upper {
                Bound::Included(value) => Some(period(&value.text, value.position)?.1 - 1),
                Bound::Excluded(value) => Some(period(&value.text, value.position)?.0 - 1),
                Bound::Unbounded => None,
            };
            (lower.or(Some(i128::from(i64::MIN))), upper)
        }
        Leaf::Wildcard(_) => return Err(unsupported(name, "date", "wildcards", position)),
        Leaf::Fuzzy { .. } => return Err(unsupported(name, "date", "fuzzy terms", position)),
    };
    // Stored dates fit in i64 nanoseconds; bounds beyond that are clamped.
    let clamp = |nanos: i128| nanos.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    inclusive_range(lower.map(clamp), upper.map(clamp), |nanos| {
        Term::from_field_date(field, DateTime::from_timestamp_nanos(nanos))
    })
}

/// A range query between inclusive bounds (`lower` is always set); empty if they cross.
fn inclusive_range<T: PartialOrd + Copy>(
    lower: Option<T>,
    upper: Option<T>,
    term: impl Fn(T) -> Term,
) -> Result<Box<dyn Query>> {
    if let (Some(lower), Some(upper)) = (lower, upper) {
        if lower > upper {
            return Ok(Box::new(EmptyQuery));
        }
    }
    let lower = lower.map_or(Bound::Unbounded, |v| Bound::Included(term(v)));
    let upper = upper.map_or(Bound::Unbounded, |v| Bound::Included(term(v)));
    Ok(Box::new(RangeQuery::new(lower, upper)))
}

// ---------------------------------------------------------------------------------------
// Dates: the period a date denotes, in nanoseconds since the epoch, end exclusive.

/// `2025`, `2025-03`, `2025-03-18` or an RFC 3339 instant as `[start, end)` in nanoseconds.
fn date_period(value: &str) -> Option<(i128, i128)> {
    let bytes = value.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = value.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let dash = |at: usize| bytes.get(at) == Some(&b'-');
    let day_nanos = |year: i64, month: i64, day: i64| {
        i128::from(days_from_civil(year, month, day)) * SECONDS_PER_DAY * NANOS_PER_SECOND
    };
    match bytes.len() {
        4 => {
            let year = number(0..4)?;
            Some((day_nanos(year, 1, 1), day_nanos(year + 1, 1, 1)))
        }
        7 if dash(4) => {
            let (year, month) = (number(0..4)?, number(5..7)?);
            if !(1..=12).contains(&month) {
                return None;
            }
            let (next_year, next_month) = if month == 12 {
                (year + 1, 1)
            } else {
                (year, month + 1)
            };
            Some((
                day_nanos(year, month, 1),
                day_nanos(next_year, next_month, 1),
            ))
        }
        10 if dash(4) && dash(7) => {
            let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
            if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
                return None;
            }
            let start = day_nanos(year, month, day);
            Some((start, start + SECONDS_PER_DAY * NANOS_PER_SECOND))
        }
        _ => {
            let instant = OffsetDateTime::parse(value, &Rfc3339).ok()?;
            let start = i128::from(instant.unix_timestamp()) * NANOS_PER_SECOND;
            Some((start, start + NANOS_PER_SECOND))
        }
    }
}

fn is_leap_year(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap_year(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i128 = SECONDS_PER_DAY * NANOS_PER_SECOND;

    #[test]
    fn days_from_civil_matches_known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(2025, 3, 18), 20_165);
    }

    #[test]
    fn date_periods_cover_their_precision() {
        let day = |y, m, d| i128::from(days_from_civil(y, m, d)) * DAY;
        assert_eq!(
            date_period("2024"),
            Some((day(2024, 1, 1), day(2025, 1, 1)))
        );
        assert_eq!(
            date_period("2024-02"),
            Some((day(2024, 2, 1), day(2024, 3, 1)))
        );
        assert_eq!(
            date_period("2024-12"),
            Some((day(2024, 12, 1), day(2025, 1, 1)))
        );
        assert_eq!(
            date_period("2024-02-29"),
            Some((day(2024, 2, 29), day(2024, 3, 1)))
        );
        let ten = day(2025, 3, 18) + 10 * 3600 * NANOS_PER_SECOND;
        assert_eq!(
            date_period("2025-03-18T10:00:00.75Z"),
            Some((ten, ten + NANOS_PER_SECOND))
        );
        for invalid in [
            "2023-02-29",
            "2025-13",
            "2025-00-10",
            "25",
            "2025-1-01",
            "+025",
            "x",
        ] {
            assert_eq!(date_period(invalid), None, "{invalid}");
        }
    }

    #[test]
    fn fuzzy_distances_follow_lucene() {
        assert_eq!(fuzzy_distance("", 4, 0), Ok(2));
        assert_eq!(fuzzy_distance("1", 4, 0), Ok(1));
        assert_eq!(fuzzy_distance("3", 4, 0), Ok(2));
        assert_eq!(fuzzy_distance("0.5", 4, 0), Ok(2));
        assert_eq!(fuzzy_distance("0.8", 4, 0), Ok(0));
        assert_eq!(fuzzy_distance("0", 4, 0), Ok(0));
        assert_eq!(fuzzy_distance("0.0", 4, 0), Ok(0));
        assert_eq!(fuzzy_distance("0.7", 5, 0), Ok(1));
        assert!(fuzzy_distance("1.5", 4, 0).is_err());
        assert!(fuzzy_distance("abc", 4, 0).is_err());
    }

    #[test]
    fn lexer_reads_keywords_only_as_whole_runs() {
        let chars: Vec<char> = "a&&b && ANDY AND* NOT !x - y".chars().collect();
        let tokens: Vec<Tok> = Lexer::new(&chars)
            .run()
            .expect("lexes")
            .into_iter()
            .map(|t| t.tok)
            .collect();
        let term = |s: &str| Tok::Term(s.chars().map(|ch| Piece { ch, escaped: false }).collect());
        assert_eq!(
            tokens,
            vec![
                term("a&&b"),
                Tok::And,
                term("ANDY"),
                term("AND*"),
                Tok::Not,
                Tok::Not,
                term("x"),
                Tok::BareOperator('-'),
                term("y"),
                Tok::End,
            ]
        );
    }
}
