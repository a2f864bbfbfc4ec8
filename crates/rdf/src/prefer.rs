use crate::vocab::{
    FEDORA_SERVER_MANAGED, LDP_PREFER_EMPTY_CONTAINER, LDP_PREFER_MINIMAL_CONTAINER,
};

/// The RFC 7240 `Prefer` header, as Fedora clients use it:
/// `return=representation; include="…"; omit="…"`, `return=minimal`, `handling=lenient`.
///
/// Unknown preferences and parameters are ignored. When a preference appears twice, the first
/// one counts (RFC 7240 §2); `include`/`omit` IRIs are collected from every preference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefer {
    /// `return=minimal` or `return=representation`.
    pub return_representation: Option<ReturnPref>,
    /// IRIs from `include="a b"`; `ldp:PreferEmptyContainer` is stored as
    /// `ldp:PreferMinimalContainer`.
    pub include: Vec<String>,
    /// IRIs from `omit="a b"`, normalized like `include`.
    pub omit: Vec<String>,
    /// `handling=lenient`: drop server-managed statements instead of refusing the request.
    pub lenient: bool,
    /// `max-member-count="N"` (LDP Paging style).
    pub max_member_count: Option<usize>,
}

/// The `return` preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReturnPref {
    /// `return=minimal`.
    Minimal,
    /// `return=representation`.
    Representation,
}

impl Prefer {
    /// Parses every `Prefer` header value given (each may hold several comma-separated
    /// preferences).
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Prefer {
        let mut prefer = Prefer::default();
        let mut handling = None;
        for value in values {
            for preference in split_unquoted(value, ',') {
                let mut params = split_unquoted(preference, ';').into_iter().map(name_value);
                let Some((name, token)) = params.next() else {
                    continue;
                };
                if name.eq_ignore_ascii_case("return") && prefer.return_representation.is_none() {
                    prefer.return_representation = match token.to_ascii_lowercase().as_str() {
                        "minimal" => Some(ReturnPref::Minimal),
                        "representation" => Some(ReturnPref::Representation),
                        _ => None,
                    };
                } else if name.eq_ignore_ascii_case("handling") && handling.is_none() {
                    handling = Some(token.eq_ignore_ascii_case("lenient"));
                }
                for (param, value) in params {
                    let iris = value.split_whitespace().map(normalize);
                    match param.to_ascii_lowercase().as_str() {
                        "include" => prefer.include.extend(iris),
                        "omit" => prefer.omit.extend(iris),
                        "max-member-count" => {
                            prefer.max_member_count =
                                prefer.max_member_count.or(value.trim().parse().ok());
                        }
                        _ => {}
                    }
                }
            }
        }
        prefer.lenient = handling.unwrap_or(false);
        prefer
    }

    /// Whether the triples of category `category` (e.g. `ldp:PreferContainment`,
    /// `fcrepo:ServerManaged`, `fcrepo:PreferInboundReferences`) should be returned, given
    /// whether they are returned when the client says nothing (`default`).
    ///
    /// `omit` wins over `include`. A *minimal* request — `return=minimal` without `include`, or
    /// an `include` of `ldp:PreferMinimalContainer` (alias `ldp:PreferEmptyContainer`) — wants
    /// only the minimal container: the resource's own triples, server-managed ones included, but
    /// not containment, membership or any other category unless explicitly included.
    pub fn wants(&self, category: &str, default: bool) -> bool {
        let category = normalize(category);
        if self.omit.contains(&category) {
            return false;
        }
        if self.include.contains(&category) {
            return true;
        }
        let minimal = self
            .include
            .iter()
            .any(|i| i == LDP_PREFER_MINIMAL_CONTAINER)
            || (self.return_representation == Some(ReturnPref::Minimal) && self.include.is_empty());
        if minimal {
            return match category.as_str() {
                LDP_PREFER_MINIMAL_CONTAINER => true,
                FEDORA_SERVER_MANAGED => default,
                _ => false,
            };
        }
        default
    }
}

/// `ldp:PreferEmptyContainer` is the older name of `ldp:PreferMinimalContainer`.
fn normalize(iri: &str) -> String {
    match iri {
        LDP_PREFER_EMPTY_CONTAINER => LDP_PREFER_MINIMAL_CONTAINER.to_string(),
        other => other.to_string(),
    }
}

/// Splits `s` at `sep` outside double quotes, trimming the pieces and dropping empty ones.
fn split_unquoted(s: &str, sep: char) -> Vec<&str> {
    let mut pieces = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == sep && !quoted => {
                pieces.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    pieces.push(&s[start..]);
    pieces
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

/// `name=value`, `name="value"` or a bare `name` (value `""`).
fn name_value(param: &str) -> (&str, &str) {
    let (name, value) = param.split_once('=').unwrap_or((param, ""));
    let value = value.trim();
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    (name.trim(), value)
}
