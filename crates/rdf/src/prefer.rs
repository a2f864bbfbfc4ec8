use crate::vocab::{
    FEDORA_SERVER_MANAGED, LDP_PREFER_CONTAINMENT, LDP_PREFER_EMPTY_CONTAINER,
    LDP_PREFER_MEMBERSHIP, LDP_PREFER_MINIMAL_CONTAINER,
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

    /// Whether the triples of category `category` are returned, as Fedora 6 decides it:
    ///
    /// - `ldp:PreferMinimalContainer`: the resource's own triples (those a client wrote,
    ///   hash URIs and user `rdf:type`s included) — unless omitted.
    /// - `fcrepo:ServerManaged`: its server-managed triples (types, dates, users) — unless
    ///   the minimal container or the server-managed triples are omitted.
    /// - `ldp:PreferContainment`, `ldp:PreferMembership`: when included; otherwise unless
    ///   omitted, or the request is minimal, or it omits the server-managed triples.
    /// - any other category (`fcrepo:PreferInboundReferences`,
    ///   `oa:PreferContainedDescriptions`): only when included.
    ///
    /// An IRI both included and omitted counts as included (Fedora 6 reads `include` first).
    /// A request is *minimal* when it includes `ldp:PreferMinimalContainer` (alias
    /// `ldp:PreferEmptyContainer`), or says `return=minimal` without any `include`.
    pub fn wants(&self, category: &str) -> bool {
        let category = normalize(category);
        let managed = self.choice(FEDORA_SERVER_MANAGED) != Choice::Omit;
        let own = self.choice(LDP_PREFER_MINIMAL_CONTAINER) != Choice::Omit;
        match category.as_str() {
            LDP_PREFER_MINIMAL_CONTAINER => own,
            FEDORA_SERVER_MANAGED => own && managed,
            LDP_PREFER_CONTAINMENT | LDP_PREFER_MEMBERSHIP => match self.choice(&category) {
                Choice::Include => true,
                Choice::Omit => false,
                Choice::Silent => {
                    managed && self.choice(LDP_PREFER_MINIMAL_CONTAINER) != Choice::Include
                }
            },
            other => self.choice(other) == Choice::Include,
        }
    }

    /// The IRIs of `omit` that are not also included: those the answer leaves out.
    pub fn omitted(&self) -> impl Iterator<Item = &str> {
        self.omit
            .iter()
            .filter(|o| !self.include.contains(o))
            .map(String::as_str)
    }

    /// How this request names `category` (normalized): `return=minimal` without any
    /// `include` stands for an include of `ldp:PreferMinimalContainer`.
    fn choice(&self, category: &str) -> Choice {
        if self.include.iter().any(|i| i == category) {
            Choice::Include
        } else if self.omit.iter().any(|o| o == category) {
            Choice::Omit
        } else if category == LDP_PREFER_MINIMAL_CONTAINER
            && self.return_representation == Some(ReturnPref::Minimal)
            && self.include.is_empty()
        {
            Choice::Include
        } else {
            Choice::Silent
        }
    }
}

/// Whether a request includes a category, omits it, or does not name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Include,
    Omit,
    Silent,
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
