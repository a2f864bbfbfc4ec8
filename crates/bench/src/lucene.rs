//! The few Lucene queries the search scenario sends, evaluated locally: `FIELD:"phrase"` or
//! `FIELD:word` clauses joined by explicit `AND`, `OR`, `NOT` and parentheses, over documents
//! tokenised the plain way (lower case, split at every character that is not a letter or a
//! digit). This gives the hit counts a query should have on the records loaded, to check the
//! server's answers against; a server that stems words may find more.

use std::collections::BTreeMap;

/// The lower-case tokens of `text`: maximal runs of letters and digits.
pub fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
}

/// What `ALL` holds beyond the document's fields (the text of its binary).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Extra {
    /// Nothing.
    #[default]
    None,
    /// Text not at hand, of which some words are known to occur and some not to.
    Known {
        /// Words the text contains.
        present: &'static [&'static str],
        /// Words it does not contain.
        absent: &'static [&'static str],
    },
    /// The text's tokens.
    Tokens(Vec<String>),
}

/// A document: each field's values as tokens, plus what `ALL` adds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Doc {
    fields: BTreeMap<String, Vec<Vec<String>>>,
    /// The text only `ALL` sees.
    pub extra: Extra,
}

fn contains_phrase(hay: &[String], phrase: &[String]) -> bool {
    !phrase.is_empty() && hay.windows(phrase.len()).any(|w| w == phrase)
}

impl Doc {
    /// Adds a value to `field` (tokenised).
    pub fn add(&mut self, field: &str, text: &str) {
        self.fields
            .entry(field.to_string())
            .or_default()
            .push(tokens(text).collect());
    }

    /// Whether one of `field`'s values contains the phrase `words` (`ALL`: any field's; the
    /// extra text is not consulted here).
    pub fn has(&self, field: &str, words: &[String]) -> bool {
        let mut values = self
            .fields
            .iter()
            .filter(|(f, _)| field == "ALL" || f.as_str() == field)
            .flat_map(|(_, v)| v);
        values.any(|v| contains_phrase(v, words))
    }

    /// Whether the document matches `FIELD:"words"`: `None` when that depends on text not at
    /// hand.
    fn matches(&self, field: &str, words: &[String]) -> Option<bool> {
        if self.has(field, words) {
            return Some(true);
        }
        if field != "ALL" {
            return Some(false);
        }
        match &self.extra {
            Extra::None => Some(false),
            Extra::Tokens(t) => Some(contains_phrase(t, words)),
            Extra::Known { present, absent } => {
                if words.iter().any(|w| absent.contains(&w.as_str())) {
                    Some(false)
                } else if words.iter().all(|w| present.contains(&w.as_str())) && words.len() == 1 {
                    Some(true)
                } else {
                    None
                }
            }
        }
    }
}

/// A parsed query.
#[derive(Clone, Debug, PartialEq)]
pub enum Query {
    /// `FIELD:"w1 w2"`: the phrase in the field.
    Term {
        /// The field, as written.
        field: String,
        /// The phrase's tokens.
        words: Vec<String>,
    },
    /// Both.
    And(Box<Query>, Box<Query>),
    /// Either.
    Or(Box<Query>, Box<Query>),
    /// Not.
    Not(Box<Query>),
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Open,
    Close,
    Colon,
    Quoted(String),
    Word(String),
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' | ')' | ':' => {
                chars.next();
                out.push(match c {
                    '(' => Tok::Open,
                    ')' => Tok::Close,
                    _ => Tok::Colon,
                });
            }
            '"' => {
                chars.next();
                let mut q = String::new();
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => q.extend(chars.next()),
                        Some(c) => q.push(c),
                        None => return Err(format!("unterminated phrase in {s:?}")),
                    }
                }
                out.push(Tok::Quoted(q));
            }
            _ => {
                let mut w = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || matches!(c, '(' | ')' | ':' | '"') {
                        break;
                    }
                    w.push(c);
                    chars.next();
                }
                out.push(Tok::Word(w));
            }
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    at: usize,
}

impl Parser {
    fn peek_word(&self, w: &str) -> bool {
        matches!(self.toks.get(self.at), Some(Tok::Word(x)) if x == w)
    }

    fn or(&mut self) -> Result<Query, String> {
        let mut q = self.and()?;
        while self.peek_word("OR") {
            self.at += 1;
            q = Query::Or(Box::new(q), Box::new(self.and()?));
        }
        Ok(q)
    }

    fn and(&mut self) -> Result<Query, String> {
        let mut q = self.unary()?;
        while self.peek_word("AND") {
            self.at += 1;
            q = Query::And(Box::new(q), Box::new(self.unary()?));
        }
        Ok(q)
    }

    fn unary(&mut self) -> Result<Query, String> {
        let tok = self.toks.get(self.at).cloned();
        self.at += 1;
        match tok {
            Some(Tok::Word(w)) if w == "NOT" => Ok(Query::Not(Box::new(self.unary()?))),
            Some(Tok::Open) => {
                let q = self.or()?;
                match self.toks.get(self.at) {
                    Some(Tok::Close) => {
                        self.at += 1;
                        Ok(q)
                    }
                    _ => Err("missing )".into()),
                }
            }
            Some(Tok::Word(field)) => {
                if self.toks.get(self.at) != Some(&Tok::Colon) {
                    return Err(format!("expected FIELD:value at {field:?}"));
                }
                self.at += 1;
                let value = match self.toks.get(self.at) {
                    Some(Tok::Quoted(v) | Tok::Word(v)) => v.clone(),
                    _ => return Err(format!("no value after {field}:")),
                };
                self.at += 1;
                Ok(Query::Term {
                    field,
                    words: tokens(&value).collect(),
                })
            }
            other => Err(format!("unexpected {other:?}")),
        }
    }
}

impl Query {
    /// Parses the subset described in the module documentation.
    pub fn parse(s: &str) -> Result<Query, String> {
        let mut p = Parser {
            toks: lex(s)?,
            at: 0,
        };
        let q = p.or()?;
        if p.at != p.toks.len() {
            return Err(format!("unexpected {:?} in {s:?}", p.toks[p.at]));
        }
        Ok(q)
    }

    /// Whether `doc` matches: `None` when that depends on text not at hand.
    pub fn eval(&self, doc: &Doc) -> Option<bool> {
        match self {
            Query::Term { field, words } => doc.matches(field, words),
            Query::Not(q) => q.eval(doc).map(|b| !b),
            Query::And(a, b) => match (a.eval(doc), b.eval(doc)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Query::Or(a, b) => match (a.eval(doc), b.eval(doc)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(abs: &str, first: &str, all: &str, extra: Extra) -> Doc {
        let mut d = Doc::default();
        d.add("ABSTRACT", abs);
        d.add("FIRSTNAME", first);
        d.add("DESCRIPTION", all);
        d.extra = extra;
        d
    }

    const KNOWN: Extra = Extra::Known {
        present: &["university"],
        absent: &["fish"],
    };

    #[test]
    fn tokenises_plainly() {
        let t: Vec<String> = tokens("Fish-like $\\alpha$ FISH's naïve 3D").collect();
        assert_eq!(t, ["fish", "like", "alpha", "fish", "s", "naïve", "3d"]);
    }

    #[test]
    fn parses_the_study_queries() {
        let q =
            Query::parse(r#"(ABSTRACT:"fish" OR FIRSTNAME:"james") AND ALL:"university""#).unwrap();
        let term = |f: &str, w: &str| {
            Box::new(Query::Term {
                field: f.into(),
                words: vec![w.into()],
            })
        };
        assert_eq!(
            q,
            Query::And(
                Box::new(Query::Or(
                    term("ABSTRACT", "fish"),
                    term("FIRSTNAME", "james")
                )),
                term("ALL", "university")
            )
        );
        let q = Query::parse(r#"ABSTRACT:"animal" AND NOT ALL:"university""#).unwrap();
        assert_eq!(
            q,
            Query::And(
                term("ABSTRACT", "animal"),
                Box::new(Query::Not(term("ALL", "university")))
            )
        );
        assert_eq!(Query::parse("TITLE:xq12").unwrap(), *term("TITLE", "xq12"));
        for bad in ["fish", "(A:b", "A:", "A:b B:c", r#"A:"b"#, "A:b OR"] {
            assert!(Query::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn evaluates_with_unknown_text() {
        let q2 = Query::parse(r#"ABSTRACT:"animal" AND NOT ALL:"university""#).unwrap();
        let q3 =
            Query::parse(r#"(ABSTRACT:"fish" OR FIRSTNAME:"james") AND ALL:"university""#).unwrap();
        let all_fish = Query::parse(r#"ALL:"fish""#).unwrap();
        let all_other = Query::parse(r#"ALL:"hospital""#).unwrap();
        let plain = doc("An animal study.", "James T.", "", Extra::None);
        assert_eq!(q2.eval(&plain), Some(true));
        assert_eq!(q3.eval(&plain), Some(false));
        let with_pdf = doc("An animal study.", "James T.", "", KNOWN);
        assert_eq!(q2.eval(&with_pdf), Some(false));
        assert_eq!(q3.eval(&with_pdf), Some(true));
        assert_eq!(all_fish.eval(&with_pdf), Some(false));
        assert_eq!(all_other.eval(&with_pdf), None);
        assert_eq!(all_other.eval(&plain), Some(false));
        let univ_in_meta = doc("Animal", "Ann", "University of Oslo", Extra::None);
        assert_eq!(q2.eval(&univ_in_meta), Some(false));
        let tokens = doc("x", "y", "", Extra::Tokens(vec!["hospital".into()]));
        assert_eq!(all_other.eval(&tokens), Some(true));
        // Phrases need consecutive tokens in one value.
        let p = Query::parse(r#"ABSTRACT:"animal study""#).unwrap();
        assert_eq!(p.eval(&plain), Some(true));
        let p = Query::parse(r#"ABSTRACT:"study animal""#).unwrap();
        assert_eq!(p.eval(&plain), Some(false));
    }
}
