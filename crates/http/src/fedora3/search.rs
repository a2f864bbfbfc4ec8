//! findObjects (`objects?terms|query=…`, API-A-LITE `search`): Fedora 3's field search
//! over the imported objects, in PID order, paged by a session token.
//!
//! The token is stateless: it carries the search and the position of the next page, so any
//! node can continue a session and none needs to be kept. Objects the caller may not read
//! are left out.

use std::collections::HashMap;

use arca_fedora3::view::{parse_date, ObjectView, Views};

use super::render::{field_values, Session, FIELDS};
use super::xml;
use crate::context::Ctx;
use crate::error::ApiError;

/// The most rows one page gives (Fedora 3's `maxResults` setting), and the default.
const MAX_RESULTS: usize = 100;
const DEFAULT_RESULTS: usize = 25;
/// Objects read from the catalog at a time while scanning.
const SCAN_PAGE: usize = 256;

/// A field search: what to match, which fields to return, the page size and where this page
/// starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Search {
    matcher: Matcher,
    pub fields: Vec<String>,
    max: usize,
    cursor: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Matcher {
    /// `terms`: a phrase (with `*` and `?`) found in any text field.
    Terms(String),
    /// `query`: conditions that must all hold.
    Query(String, Vec<Condition>),
}

#[derive(Debug, Clone, PartialEq)]
struct Condition {
    field: String,
    op: Op,
    value: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Like,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Search {
    /// The search a request asks for: a new one from `terms`/`query`, the field flags and
    /// `maxResults`, or the continuation a `sessionToken` names.
    pub(crate) fn from_params(params: &HashMap<String, String>) -> Result<Self, ApiError> {
        if let Some(token) = params.get("sessionToken").filter(|t| !t.is_empty()) {
            return Self::from_token(token)
                .ok_or_else(|| ApiError::bad_request(format!("unknown session token {token}")));
        }
        let fields = FIELDS
            .iter()
            .filter(|f| params.get(**f).is_some_and(|v| v == "true"))
            .map(|f| f.to_string())
            .collect();
        let max = match params.get("maxResults") {
            Some(m) => m
                .parse::<usize>()
                .map_err(|_| ApiError::bad_request(format!("maxResults {m:?} is not a number")))?,
            None => DEFAULT_RESULTS,
        }
        .clamp(1, MAX_RESULTS);
        let matcher = match (params.get("query"), params.get("terms")) {
            (Some(q), _) if !q.trim().is_empty() => {
                Matcher::Query(q.clone(), parse_query(q).map_err(ApiError::bad_request)?)
            }
            (_, Some(t)) if !t.trim().is_empty() => Matcher::Terms(t.trim().to_string()),
            _ => Matcher::Terms("*".into()),
        };
        Ok(Self {
            matcher,
            fields,
            max,
            cursor: 0,
        })
    }

    /// The token that continues this search at `cursor`.
    fn token(&self, cursor: usize) -> String {
        let (kind, text) = match &self.matcher {
            Matcher::Terms(t) => ("t", t.as_str()),
            Matcher::Query(q, _) => ("q", q.as_str()),
        };
        let plain = format!(
            "{cursor}\n{}\n{}\n{kind}\n{text}",
            self.max,
            self.fields.join(" ")
        );
        hex::encode(plain)
    }

    fn from_token(token: &str) -> Option<Self> {
        let plain = String::from_utf8(hex::decode(token).ok()?).ok()?;
        let mut parts = plain.splitn(5, '\n');
        let cursor = parts.next()?.parse().ok()?;
        let max = parts.next()?.parse::<usize>().ok()?.clamp(1, MAX_RESULTS);
        let fields = parts
            .next()?
            .split(' ')
            .filter(|f| FIELDS.contains(f))
            .map(str::to_string)
            .collect();
        let matcher = match (parts.next()?, parts.next()?) {
            ("t", t) => Matcher::Terms(t.to_string()),
            ("q", q) => Matcher::Query(q.to_string(), parse_query(q).ok()?),
            _ => return None,
        };
        Some(Self {
            matcher,
            fields,
            max,
            cursor,
        })
    }

    fn matches(&self, o: &ObjectView) -> bool {
        match &self.matcher {
            Matcher::Terms(t) => {
                let pattern = format!("*{}*", t.to_lowercase());
                FIELDS
                    .iter()
                    .filter(|f| !f.ends_with("Date") && **f != "state")
                    .any(|f| {
                        field_values(o, f)
                            .iter()
                            .any(|v| wildcard(&pattern, &v.to_lowercase()))
                    })
            }
            Matcher::Query(_, conditions) => conditions
                .iter()
                .all(|c| field_values(o, &c.field).iter().any(|v| c.holds(v))),
        }
    }

    /// Runs the search: the page's rows and, when more follow, the session to continue
    /// with.
    pub(crate) async fn run(
        &self,
        ctx: &Ctx,
    ) -> Result<(Vec<ObjectView>, Option<Session>), ApiError> {
        let views = Views::new(&ctx.repo);
        let mut skipped = 0;
        let mut rows = Vec::new();
        let mut after: Option<String> = None;
        let mut more = false;
        'scan: loop {
            let (objects, last) = views
                .objects_after(after.as_deref(), SCAN_PAGE)
                .await
                .map_err(|e| ApiError::from_fedora3(e, false, &ctx.base_url))?;
            for o in objects {
                if !self.matches(&o) {
                    continue;
                }
                let Some(id) = Views::object_id(&o.pid) else {
                    continue;
                };
                if !ctx.can_read(&id).await {
                    continue;
                }
                if skipped < self.cursor {
                    skipped += 1;
                } else if rows.len() < self.max {
                    rows.push(o);
                } else {
                    more = true;
                    break 'scan;
                }
            }
            match last {
                Some(l) => after = Some(l),
                None => break,
            }
        }
        let session = more.then(|| Session {
            token: self.token(self.cursor + rows.len()),
            cursor: self.cursor,
            expires: xml::date(arca_model::now() + time::Duration::minutes(5)),
        });
        Ok((rows, session))
    }
}

impl Condition {
    fn holds(&self, value: &str) -> bool {
        if self.op == Op::Like {
            return wildcard(&self.value.to_lowercase(), &value.to_lowercase());
        }
        let ordering = match (parse_date(value), parse_date(&self.value)) {
            (Some(a), Some(b)) if self.field.ends_with("Date") || self.field == "date" => a.cmp(&b),
            _ => value.cmp(self.value.as_str()),
        };
        use std::cmp::Ordering::*;
        match self.op {
            Op::Eq => ordering == Equal,
            Op::Lt => ordering == Less,
            Op::Le => ordering != Greater,
            Op::Gt => ordering == Greater,
            Op::Ge => ordering != Less,
            Op::Like => unreachable!("handled above"),
        }
    }
}

/// Parses Fedora 3's query syntax: conditions `field op value` separated by spaces, `op`
/// one of `= ~ < <= > >=`, values quoted with `'` when they hold spaces (`''` is a quote).
fn parse_query(q: &str) -> Result<Vec<Condition>, String> {
    let mut out = Vec::new();
    let mut rest = q.trim_start();
    while !rest.is_empty() {
        let name_end = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .ok_or_else(|| format!("the condition {rest:?} has no operator"))?;
        let field = &rest[..name_end];
        if !FIELDS.contains(&field) {
            return Err(format!("{field:?} is not a field findObjects knows"));
        }
        rest = &rest[name_end..];
        let (op, len) = if rest.starts_with("<=") {
            (Op::Le, 2)
        } else if rest.starts_with(">=") {
            (Op::Ge, 2)
        } else {
            match rest.chars().next() {
                Some('=') => (Op::Eq, 1),
                Some('~') => (Op::Like, 1),
                Some('<') => (Op::Lt, 1),
                Some('>') => (Op::Gt, 1),
                _ => return Err(format!("the condition on {field} has no operator")),
            }
        };
        rest = &rest[len..];
        let value;
        if let Some(quoted) = rest.strip_prefix('\'') {
            let mut v = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                if c == '\'' {
                    if quoted[i + 1..].starts_with('\'') {
                        v.push('\'');
                        chars.next();
                    } else {
                        end = Some(i + 1);
                        break;
                    }
                } else {
                    v.push(c);
                }
            }
            let end = end.ok_or_else(|| format!("the value for {field} has no closing quote"))?;
            value = v;
            rest = &quoted[end..];
        } else {
            let end = rest.find(' ').unwrap_or(rest.len());
            value = rest[..end].to_string();
            rest = &rest[end..];
        }
        out.push(Condition {
            field: field.to_string(),
            op,
            value,
        });
        rest = rest.trim_start();
    }
    Ok(out)
}

/// Whether `text` matches `pattern`, where `*` stands for any characters and `?` for one.
fn wildcard(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(wildcard("demo:*", "demo:5"));
        assert!(wildcard("*", ""));
        assert!(wildcard("*col?seum*", "the coliseum in rome"));
        assert!(!wildcard("demo:*", "f3test:x"));
        assert!(!wildcard("demo:?", "demo:12"));
    }

    #[test]
    fn queries() {
        let q = parse_query("pid~demo:* title='Coliseum in Rome' cDate>=2008-01-01 label~'it''s'")
            .unwrap();
        assert_eq!(q.len(), 4);
        assert_eq!(q[0].op, Op::Like);
        assert_eq!(q[1].value, "Coliseum in Rome");
        assert_eq!(q[2].op, Op::Ge);
        assert_eq!(q[3].value, "it's");
        assert!(q[2].holds("2008-07-02T05:09:42.015Z"));
        assert!(!q[2].holds("2007-08-15T14:36:31.126Z"));
        assert!(parse_query("nosuch=1").is_err());
        assert!(parse_query("pid").is_err());
    }

    #[test]
    fn tokens_carry_the_search() {
        let params: HashMap<String, String> = [
            ("query", "pid~demo:*"),
            ("pid", "true"),
            ("maxResults", "5"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let s = Search::from_params(&params).unwrap();
        let next = Search::from_token(&s.token(5)).unwrap();
        assert_eq!(next.cursor, 5);
        assert_eq!(next.matcher, s.matcher);
        assert_eq!(next.fields, ["pid"]);
        assert_eq!(next.max, 5);
    }
}
