use std::cmp::{Ordering, Reverse};

use crate::JsonLdProfile;

/// The RDF serializations the server reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RdfFormat {
    /// Turtle (`text/turtle`), the default.
    Turtle,
    /// N-Triples (`application/n-triples`, also `text/plain` as in Fedora).
    NTriples,
    /// JSON-LD (`application/ld+json`).
    JsonLd,
    /// RDF/XML (`application/rdf+xml`).
    RdfXml,
}

impl RdfFormat {
    /// All formats, in the server's order of preference.
    const ALL: [Self; 4] = [Self::Turtle, Self::JsonLd, Self::NTriples, Self::RdfXml];

    /// The format of a `Content-Type` (or `Accept`) media type, ignoring parameters and case:
    /// `text/turtle`, `application/x-turtle`, `application/n-triples`, `text/plain` (N-Triples,
    /// as Fedora), `application/ld+json`, `application/rdf+xml`.
    pub fn from_media_type(mt: &str) -> Option<Self> {
        let essence = mt.split(';').next().unwrap_or("").trim();
        Self::ALL.into_iter().find(|f| {
            f.media_types()
                .iter()
                .any(|m| m.eq_ignore_ascii_case(essence))
        })
    }

    /// The canonical media type, e.g. `text/turtle`.
    pub fn media_type(self) -> &'static str {
        self.media_types()[0]
    }

    /// The matching `oxrdfio` format.
    pub(crate) fn oxrdfio(self) -> oxrdfio::RdfFormat {
        match self {
            Self::Turtle => oxrdfio::RdfFormat::Turtle,
            Self::NTriples => oxrdfio::RdfFormat::NTriples,
            Self::JsonLd => oxrdfio::RdfFormat::JsonLd {
                profile: oxrdfio::JsonLdProfileSet::empty(),
            },
            Self::RdfXml => oxrdfio::RdfFormat::RdfXml,
        }
    }

    fn media_types(self) -> &'static [&'static str] {
        match self {
            Self::Turtle => &["text/turtle", "application/x-turtle"],
            Self::NTriples => &["application/n-triples", "text/plain"],
            Self::JsonLd => &["application/ld+json"],
            Self::RdfXml => &["application/rdf+xml"],
        }
    }

    /// Chooses the response format from an `Accept` header value.
    ///
    /// q-values are honoured (`q=0` excludes); for each format the most specific range matching
    /// one of its media types counts. Equal q-values go to the more specific range, then to the
    /// range listed first, then to the server's preference (Turtle, JSON-LD, N-Triples,
    /// RDF/XML). A missing or empty header and `*/*` give Turtle. `None` means nothing
    /// acceptable: answer 406. [`RdfOutput::negotiate`] also says which JSON-LD form.
    pub fn negotiate(accept: Option<&str>) -> Option<Self> {
        RdfOutput::negotiate(accept).map(|o| o.format)
    }

    /// Whether an `Accept` header asks for an HTML page rather than RDF: `text/html` or
    /// `application/xhtml+xml` named explicitly (a browser's header) and ranked strictly
    /// above every acceptable RDF format by q-value, then specificity. Ties, `*/*` alone and
    /// a missing header go to RDF, so API clients keep getting RDF.
    pub fn prefers_html(accept: Option<&str>) -> bool {
        let Some(accept) = accept else {
            return false;
        };
        let ranges = MediaRange::parse_all(accept);
        let html = ["text/html", "application/xhtml+xml"];
        let Some(html) = score(&ranges, &html, Want::Any) else {
            return false;
        };
        // Only an exact `text/html` (not `text/*` or `*/*`) asks for a page.
        if html.1 < 2 || html.0 <= 0.0 {
            return false;
        }
        Self::ALL
            .into_iter()
            .filter_map(|f| score(&ranges, f.media_types(), Want::Any))
            .filter(|s| s.0 > 0.0)
            .all(|rdf| (html.0, html.1) > (rdf.0, rdf.1))
    }

    /// The format `ranges` prefer, profiles aside: see [`RdfFormat::negotiate`].
    fn best(ranges: &[MediaRange]) -> Option<Self> {
        let mut best: Option<(Self, Score)> = None;
        for format in Self::ALL {
            let Some(score) = score(ranges, format.media_types(), Want::Any) else {
                continue;
            };
            if score.0 > 0.0 && best.as_ref().is_none_or(|(_, b)| score > *b) {
                best = Some((format, score));
            }
        }
        best.map(|(format, _)| format)
    }
}

/// What an RDF answer is written as: the syntax and, for JSON-LD, the document form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RdfOutput {
    /// The syntax.
    pub format: RdfFormat,
    /// The JSON-LD form (for JSON-LD only): expanded unless the client asked for another.
    pub profile: JsonLdProfile,
    /// Whether the client's `Accept` named a JSON-LD profile: the `Content-Type` then names
    /// the form served, as Fedora 7's does (without one, plain `application/ld+json`).
    pub profile_named: bool,
}

impl From<RdfFormat> for RdfOutput {
    fn from(format: RdfFormat) -> Self {
        Self {
            format,
            profile: JsonLdProfile::Expanded,
            profile_named: false,
        }
    }
}

impl RdfOutput {
    /// Chooses the syntax, and the JSON-LD form, from an `Accept` header value. The syntax
    /// is [`RdfFormat::negotiate`]'s (a range with a profile counts as its media type).
    /// For JSON-LD, each `application/ld+json;profile="…"` range is a representation of its
    /// own (JSON-LD 1.1 §9: space-separated profile IRIs, `#expanded`, `#compacted`,
    /// `#flattened`, or the last two together) beside the default form, and the best of
    /// them wins: by q-value, then specificity (a range naming the profile is more specific
    /// than one without), then order. A profile naming no known form gets the expanded form
    /// (as Fedora 7); a range whose q-value is malformed is ignored (`None`, 406, when
    /// nothing else is acceptable).
    pub fn negotiate(accept: Option<&str>) -> Option<Self> {
        let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
            return Some(RdfFormat::Turtle.into());
        };
        let ranges = MediaRange::parse_all(accept);
        let format = RdfFormat::best(&ranges)?;
        if format != RdfFormat::JsonLd {
            return Some(format.into());
        }
        let mut best: Option<(Self, Score)> = None;
        for (candidate, score) in jsonld_candidates(&ranges) {
            if score.0 > 0.0 && best.as_ref().is_none_or(|(_, b)| score > *b) {
                best = Some((candidate, score));
            }
        }
        Some(best.map_or_else(|| format.into(), |(output, _)| output))
    }

    /// The media type of the answer, with the JSON-LD `profile` parameter when the client
    /// named one (`application/ld+json;profile="http://www.w3.org/ns/json-ld#compacted"`).
    pub fn media_type(&self) -> String {
        if self.format == RdfFormat::JsonLd && self.profile_named {
            format!(
                "{};profile=\"{}\"",
                self.format.media_type(),
                self.profile.parameter()
            )
        } else {
            self.format.media_type().to_string()
        }
    }
}

/// The JSON-LD representations `ranges` accept, with how well: the default form, then the
/// form of each range naming a profile.
fn jsonld_candidates(ranges: &[MediaRange]) -> Vec<(RdfOutput, Score)> {
    let media_types = RdfFormat::JsonLd.media_types();
    let mut out: Vec<(RdfOutput, Score)> = score(ranges, media_types, Want::Plain)
        .map(|s| (RdfFormat::JsonLd.into(), s))
        .into_iter()
        .collect();
    for range in ranges {
        let Some(profile) = &range.profile else {
            continue;
        };
        if let Some(s) = score(ranges, media_types, Want::Profile(profile)) {
            let output = RdfOutput {
                format: RdfFormat::JsonLd,
                profile: JsonLdProfile::from_parameter(profile),
                profile_named: true,
            };
            out.push((output, s));
        }
    }
    out
}

/// Which ranges count for a representation: all of its media type (`Any`, profiles
/// aside), those without a profile (`Plain`, JSON-LD's default form), or those without one
/// and those naming this profile (`Profile`).
#[derive(Clone, Copy)]
enum Want<'a> {
    Any,
    Plain,
    Profile(&'a str),
}

/// How well a format matches an `Accept` header: q-value, specificity (3 a JSON-LD range
/// with its profile, 2 exact, 1 `type/*`, 0 `*/*`), position of the range (earlier is
/// better). Greater is better.
type Score = (f32, u8, Reverse<usize>);

/// How well `ranges` accept any of `media_types` (the ranges `want` counts): the most
/// specific range matching one of them decides (then its q-value, then its position);
/// `None` when no range matches.
fn score(ranges: &[MediaRange], media_types: &[&str], want: Want) -> Option<Score> {
    media_types
        .iter()
        .flat_map(|mt| {
            ranges
                .iter()
                .enumerate()
                .filter_map(move |(i, r)| Some((r.specificity(mt, want)?, r.q, Reverse(i))))
        })
        .max_by(|a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal))
        .map(|(specificity, q, position)| (q, specificity, position))
}

/// One element of an `Accept` header.
struct MediaRange {
    kind: String,
    subtype: String,
    q: f32,
    /// The `profile` parameter of an `application/ld+json` range, unquoted, its IRIs
    /// separated by single spaces.
    profile: Option<String>,
}

impl MediaRange {
    /// The ranges of an `Accept` header; malformed ones are left out.
    fn parse_all(accept: &str) -> Vec<Self> {
        split_unquoted(accept, ',')
            .into_iter()
            .filter_map(Self::parse)
            .collect()
    }

    fn parse(s: &str) -> Option<Self> {
        let parts = split_unquoted(s, ';');
        let (kind, subtype) = parts.first()?.trim().split_once('/')?;
        let kind = kind.trim().to_ascii_lowercase();
        let subtype = subtype.trim().to_ascii_lowercase();
        let mut q = 1.0;
        let mut profile = None;
        for param in &parts[1..] {
            let Some((name, value)) = param.split_once('=') else {
                continue;
            };
            let name = name.trim();
            if name.eq_ignore_ascii_case("q") {
                q = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|q| (0.0..=1.0).contains(q))?;
            } else if name.eq_ignore_ascii_case("profile")
                && kind == "application"
                && subtype == "ld+json"
            {
                profile = Some(unquote(value.trim()));
            }
        }
        Some(Self {
            kind,
            subtype,
            q,
            profile,
        })
    }

    /// How specifically this range matches `media_type` as `want` counts ranges (3 naming
    /// the profile wanted, 2 exact, 1 `type/*`, 0 `*/*`).
    fn specificity(&self, media_type: &str, want: Want) -> Option<u8> {
        let (kind, subtype) = media_type.split_once('/')?;
        let base = match (self.kind.as_str(), self.subtype.as_str()) {
            ("*", "*") => 0,
            (k, "*") if k == kind => 1,
            (k, s) if k == kind && s == subtype => 2,
            _ => return None,
        };
        match (&self.profile, want) {
            (None, _) | (Some(_), Want::Any) => Some(base),
            (Some(mine), Want::Profile(wanted)) if mine == wanted => Some(3),
            (Some(_), _) => None,
        }
    }
}

/// Splits `s` at each `separator` outside a quoted string (`"…"`, with `\` escapes). An
/// unterminated quote runs to the end.
fn split_unquoted(s: &str, separator: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == separator && !quoted => {
                parts.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// A parameter value without its quotes and escapes, its whitespace-separated words joined
/// by single spaces.
fn unquote(value: &str) -> String {
    let inner = value
        .strip_prefix('"')
        .map(|v| v.strip_suffix('"').unwrap_or(v))
        .unwrap_or(value);
    let mut out = String::with_capacity(inner.len());
    let mut escaped = false;
    for c in inner.chars() {
        if c == '\\' && !escaped {
            escaped = true;
            continue;
        }
        escaped = false;
        out.push(c);
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::RdfFormat::{self, *};

    #[test]
    fn html_only_when_a_browser_prefers_it() {
        let browser =
            "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
        assert!(RdfFormat::prefers_html(Some(browser)));
        assert!(RdfFormat::prefers_html(Some("text/html")));
        assert!(RdfFormat::prefers_html(Some(
            "application/xhtml+xml, text/turtle;q=0.5"
        )));
        for api in [
            None,
            Some(""),
            Some("*/*"),
            Some("text/*"),
            Some("text/turtle"),
            Some("text/turtle, text/html"),
            Some("text/html, text/turtle"),
            Some("application/ld+json, text/html;q=0.9"),
            Some("text/html;q=0, */*"),
        ] {
            assert!(!RdfFormat::prefers_html(api), "{api:?}");
        }
    }

    #[test]
    fn media_types() {
        assert_eq!(RdfFormat::from_media_type("text/turtle"), Some(Turtle));
        assert_eq!(
            RdfFormat::from_media_type("Text/Turtle; charset=utf-8"),
            Some(Turtle)
        );
        assert_eq!(
            RdfFormat::from_media_type("application/x-turtle"),
            Some(Turtle)
        );
        assert_eq!(RdfFormat::from_media_type("text/plain"), Some(NTriples));
        assert_eq!(
            RdfFormat::from_media_type("application/n-triples"),
            Some(NTriples)
        );
        assert_eq!(
            RdfFormat::from_media_type("application/ld+json"),
            Some(JsonLd)
        );
        assert_eq!(
            RdfFormat::from_media_type("application/rdf+xml"),
            Some(RdfXml)
        );
        assert_eq!(RdfFormat::from_media_type("application/json"), None);
        assert_eq!(JsonLd.media_type(), "application/ld+json");
        assert_eq!(NTriples.media_type(), "application/n-triples");
    }

    #[test]
    fn negotiation() {
        let n = |a| RdfFormat::negotiate(a);
        assert_eq!(n(None), Some(Turtle));
        assert_eq!(n(Some("")), Some(Turtle));
        assert_eq!(n(Some("*/*")), Some(Turtle));
        assert_eq!(n(Some("application/ld+json")), Some(JsonLd));
        assert_eq!(n(Some("application/ld+json, text/turtle")), Some(JsonLd));
        assert_eq!(
            n(Some("text/turtle;q=0.5, application/ld+json;q=0.9")),
            Some(JsonLd)
        );
        assert_eq!(
            n(Some("application/n-triples;q=0.1, */*;q=0.05")),
            Some(NTriples)
        );
        assert_eq!(n(Some("text/turtle;q=0, */*")), Some(JsonLd));
        assert_eq!(n(Some("text/*")), Some(Turtle));
        assert_eq!(n(Some("text/plain")), Some(NTriples));
        assert_eq!(n(Some("application/rdf+xml")), Some(RdfXml));
        assert_eq!(
            n(Some(
                "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
            )),
            Some(Turtle)
        );
        assert_eq!(n(Some("text/html")), None);
        assert_eq!(n(Some("application/ld+json;q=0")), None);
    }
}
