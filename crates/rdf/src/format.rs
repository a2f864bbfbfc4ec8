use std::cmp::{Ordering, Reverse};

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
    /// acceptable: answer 406.
    pub fn negotiate(accept: Option<&str>) -> Option<Self> {
        let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
            return Some(Self::Turtle);
        };
        let ranges: Vec<MediaRange> = accept.split(',').filter_map(MediaRange::parse).collect();
        let mut best: Option<(Self, Score)> = None;
        for format in Self::ALL {
            let Some(score) = score(&ranges, format.media_types()) else {
                continue;
            };
            if score.0 > 0.0 && best.as_ref().is_none_or(|(_, b)| score > *b) {
                best = Some((format, score));
            }
        }
        best.map(|(format, _)| format)
    }

    /// Whether an `Accept` header asks for an HTML page rather than RDF: `text/html` or
    /// `application/xhtml+xml` named explicitly (a browser's header) and ranked strictly
    /// above every acceptable RDF format by q-value, then specificity. Ties, `*/*` alone and
    /// a missing header go to RDF, so API clients keep getting RDF.
    pub fn prefers_html(accept: Option<&str>) -> bool {
        let Some(accept) = accept else {
            return false;
        };
        let ranges: Vec<MediaRange> = accept.split(',').filter_map(MediaRange::parse).collect();
        let Some(html) = score(&ranges, &["text/html", "application/xhtml+xml"]) else {
            return false;
        };
        // Only an exact `text/html` (not `text/*` or `*/*`) asks for a page.
        if html.1 < 2 || html.0 <= 0.0 {
            return false;
        }
        Self::ALL
            .into_iter()
            .filter_map(|f| score(&ranges, f.media_types()))
            .filter(|s| s.0 > 0.0)
            .all(|rdf| (html.0, html.1) > (rdf.0, rdf.1))
    }
}

/// How well a format matches an `Accept` header: q-value, specificity (2 exact, 1 `type/*`,
/// 0 `*/*`), position of the range (earlier is better). Greater is better.
type Score = (f32, u8, Reverse<usize>);

/// How well `ranges` accept any of `media_types`: the most specific range matching one of
/// them decides (then its q-value, then its position); `None` when no range matches.
fn score(ranges: &[MediaRange], media_types: &[&str]) -> Option<Score> {
    media_types
        .iter()
        .flat_map(|mt| {
            ranges
                .iter()
                .enumerate()
                .filter_map(move |(i, r)| Some((r.specificity(mt)?, r.q, Reverse(i))))
        })
        .max_by(|a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal))
        .map(|(specificity, q, position)| (q, specificity, position))
}

/// One element of an `Accept` header.
struct MediaRange {
    kind: String,
    subtype: String,
    q: f32,
}

impl MediaRange {
    fn parse(s: &str) -> Option<Self> {
        let mut parts = s.split(';');
        let (kind, subtype) = parts.next()?.trim().split_once('/')?;
        let mut q = 1.0;
        for param in parts {
            if let Some((name, value)) = param.split_once('=') {
                if name.trim().eq_ignore_ascii_case("q") {
                    q = value
                        .trim()
                        .parse()
                        .ok()
                        .filter(|q| (0.0..=1.0).contains(q))?;
                }
            }
        }
        Some(Self {
            kind: kind.trim().to_ascii_lowercase(),
            subtype: subtype.trim().to_ascii_lowercase(),
            q,
        })
    }

    /// How specifically this range matches `media_type` (2 exact, 1 `type/*`, 0 `*/*`).
    fn specificity(&self, media_type: &str) -> Option<u8> {
        let (kind, subtype) = media_type.split_once('/')?;
        match (self.kind.as_str(), self.subtype.as_str()) {
            ("*", "*") => Some(0),
            (k, "*") if k == kind => Some(1),
            (k, s) if k == kind && s == subtype => Some(2),
            _ => None,
        }
    }
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
