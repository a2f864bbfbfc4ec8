//! A search as clients ask for it (Fedora's `fcr:search`, GSearch's `gfindObjects`),
//! independent of the index library: a query in the Lucene syntax, Fedora's
//! `condition`s, a sort, the stored fields to return, and the paging. The HTTP layer
//! builds a [`SearchRequest`] from its parameters; [`SearchIndex::prepare`] turns it into
//! an index query whose pages it reads.

use std::ops::Bound;

use tantivy::query::{AllQuery, BooleanQuery, Occur, Query};
use tantivy::schema::Field;
use tantivy::Searcher;

use crate::{Error, Result, SearchIndex, Sort, StoredHit};

/// How a [`Condition`] compares a field with its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// `=`: the value, or the pattern when it holds `*` (Fedora 7's: `\*` is a literal `*`).
    Equal,
    /// `<`.
    Less,
    /// `<=`.
    LessOrEqual,
    /// `>`.
    Greater,
    /// `>=`.
    GreaterOrEqual,
}

/// One of Fedora's `condition=` parameters: `field<op>value`, ops `=`, `<`, `>`, `<=`,
/// `>=`; `*` in an `=` value is a wildcard and `\*` a literal `*`, as in Fedora 7.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// The field compared (as the client wrote it).
    pub field: String,
    /// The comparison.
    pub op: Comparison,
    /// The value compared with (trimmed).
    pub value: String,
}

impl Condition {
    /// Parses `field<op>value`.
    pub fn parse(text: &str) -> Result<Self> {
        let at = text.find(['<', '>', '=']).ok_or_else(|| {
            Error::BadRequest(format!(
                "condition {text:?} has no operator (=, <, >, <=, >=)"
            ))
        })?;
        let (field, rest) = text.split_at(at);
        let (op, value) = if rest.starts_with("<=") || rest.starts_with(">=") {
            rest.split_at(2)
        } else {
            rest.split_at(1)
        };
        let op = match op {
            "=" => Comparison::Equal,
            "<" => Comparison::Less,
            "<=" => Comparison::LessOrEqual,
            ">" => Comparison::Greater,
            _ => Comparison::GreaterOrEqual,
        };
        Ok(Condition {
            field: field.trim().to_string(),
            op,
            value: value.trim().to_string(),
        })
    }

    /// The condition as the client would write it.
    fn text(&self) -> String {
        let op = match self.op {
            Comparison::Equal => "=",
            Comparison::Less => "<",
            Comparison::LessOrEqual => "<=",
            Comparison::Greater => ">",
            Comparison::GreaterOrEqual => ">=",
        };
        format!("{}{op}{}", self.field, self.value)
    }
}

/// What a search asks for. Every part narrows the match: the query and each condition
/// must hold; no query and no condition match every document.
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    /// A query in the Lucene syntax the index takes, if any.
    pub query: Option<String>,
    /// Fedora's conditions.
    pub conditions: Vec<Condition>,
    /// The order; by score when `None`.
    pub sort: Option<Sort>,
    /// The stored fields each hit returns, in this order (`fedora_id` names the
    /// resource's path).
    pub fields: Vec<String>,
}

/// A [`SearchRequest`] checked against the index and ready to read pages of, from one
/// snapshot of the index.
pub struct PreparedSearch<'a> {
    index: &'a SearchIndex,
    searcher: Searcher,
    query: Box<dyn Query>,
    sort: Option<Sort>,
    fields: Vec<(String, Field)>,
}

/// One page of a search.
#[derive(Debug)]
pub struct SearchPage {
    /// How many documents match in all.
    pub total: usize,
    /// The page's hits, in order.
    pub hits: Vec<StoredHit>,
}

impl SearchIndex {
    /// Parses and checks `request` (query syntax, condition fields and values, sort field,
    /// stored fields) against this index: [`Error::Query`] or [`Error::BadRequest`] with the
    /// reason when something does not fit.
    pub fn prepare(&self, request: &SearchRequest) -> Result<PreparedSearch<'_>> {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        if let Some(q) = request.query.as_deref().filter(|q| !q.trim().is_empty()) {
            clauses.push((Occur::Must, self.parser().parse(q)?));
        }
        for c in &request.conditions {
            clauses.push((Occur::Must, self.condition(c)?));
        }
        let query: Box<dyn Query> = if clauses.is_empty() {
            Box::new(AllQuery)
        } else {
            Box::new(BooleanQuery::new(clauses))
        };
        if let Some(sort) = &request.sort {
            self.check_sort(sort)?;
        }
        let fields = request
            .fields
            .iter()
            .map(|n| self.returned_field(n))
            .collect::<Result<_>>()?;
        Ok(PreparedSearch {
            index: self,
            searcher: self.searcher(),
            query,
            sort: request.sort.clone(),
            fields,
        })
    }

    /// The names of every stored field, the resource's path (`id`) first.
    pub fn stored_field_names(&self) -> Vec<String> {
        self.schema()
            .stored
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn condition(&self, c: &Condition) -> Result<Box<dyn Query>> {
        let p = self.parser();
        let value = c.value.as_str();
        let q = match c.op {
            Comparison::Equal if value.contains('*') => p.fedora_pattern(&c.field, value),
            Comparison::Equal => p.term(&c.field, value),
            Comparison::Less => p.range(&c.field, Bound::Unbounded, Bound::Excluded(value)),
            Comparison::LessOrEqual => p.range(&c.field, Bound::Unbounded, Bound::Included(value)),
            Comparison::Greater => p.range(&c.field, Bound::Excluded(value), Bound::Unbounded),
            Comparison::GreaterOrEqual => {
                p.range(&c.field, Bound::Included(value), Bound::Unbounded)
            }
        };
        q.map_err(|e| Error::BadRequest(format!("invalid condition {:?}: {}", c.text(), e.message)))
    }

    fn returned_field(&self, name: &str) -> Result<(String, Field)> {
        let schema = self.schema();
        if name.eq_ignore_ascii_case("fedora_id") {
            return Ok(("fedora_id".to_string(), schema.system.id));
        }
        schema
            .stored_field(name)
            .map(|(n, f)| (n.to_string(), f))
            .ok_or_else(|| {
                Error::BadRequest(format!(
                    "The field \"{name}\" is not a valid output field (unknown or unstored); known: fedora_id, {}",
                    schema
                        .stored
                        .iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }
}

impl PreparedSearch<'_> {
    /// The names of the fields each hit returns, in order (as the index spells them).
    pub fn field_names(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|(n, _)| n.as_str())
    }

    /// The matches from `offset`, at most `limit` of them, with their stored fields.
    pub fn page(&self, offset: usize, limit: usize) -> Result<SearchPage> {
        let page = self.index.page(
            &self.searcher,
            &*self.query,
            self.sort.as_ref(),
            offset,
            limit,
        )?;
        let hits = page
            .hits
            .into_iter()
            .map(|a| self.index.stored(&self.searcher, a, &self.fields))
            .collect::<Result<_>>()?;
        Ok(SearchPage {
            total: page.total,
            hits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_parse_every_operator() {
        let cases = [
            ("created=2020*", Comparison::Equal, "2020*"),
            ("modified< 2021-01-01", Comparison::Less, "2021-01-01"),
            ("modified<=x", Comparison::LessOrEqual, "x"),
            ("content_size>10", Comparison::Greater, "10"),
            (" content_size >= 10 ", Comparison::GreaterOrEqual, "10"),
        ];
        for (text, op, value) in cases {
            let c = Condition::parse(text).unwrap();
            assert_eq!((c.op, c.value.as_str()), (op, value), "{text}");
        }
        assert_eq!(Condition::parse("a >= b").unwrap().field, "a");
        let e = Condition::parse("no operator").unwrap_err().to_string();
        assert!(e.contains("has no operator"), "{e}");
    }
}
