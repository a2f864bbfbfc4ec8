//! A well-formedness pass over RDF/XML before the RDF/XML parser sees it.
//!
//! The RDF/XML parser stops quietly at the end of its input, so a document cut in the middle
//! would be stored as far as it got; and it expands internal DTD entities eagerly, so a
//! "billion laughs" body of a few hundred bytes would expand to gigabytes. This pass refuses
//! both: the document must have exactly one root element, closed, with nothing but comments,
//! processing instructions and white space around it; entity declarations may only hold text
//! (no references to other entities, no external entities); and the references in the
//! document may expand to at most `max_entity_expansion` bytes in all. Element nesting is
//! bounded by `max_nesting`.

use std::collections::HashMap;

use quick_xml::events::Event;
use quick_xml::Reader;

use crate::limits::ParseLimits;
use crate::{RdfError, Result};

/// Checks an RDF/XML body; see the module documentation.
pub(crate) fn check(body: &[u8], limits: &ParseLimits) -> Result<()> {
    let mut reader = Reader::from_reader(body);
    reader.config_mut().check_end_names = true;
    let mut entities: HashMap<String, usize> = HashMap::new();
    let mut expansion = 0usize;
    let mut depth = 0usize;
    let mut roots = 0usize;
    let mut open: Vec<u8> = Vec::new();
    loop {
        let at = reader.buffer_position();
        let event = reader.read_event().map_err(|e| {
            RdfError::Syntax(format!(
                "the RDF/XML is not well-formed XML at byte {}: {e}",
                reader.error_position()
            ))
        })?;
        match event {
            Event::DocType(dt) => {
                entities = declared_entities(&String::from_utf8_lossy(&dt))?;
            }
            Event::Start(ref e) | Event::Empty(ref e) => {
                if depth == 0 {
                    roots += 1;
                    if roots > 1 {
                        return Err(RdfError::Syntax(format!(
                            "the RDF/XML has a second root element at byte {at}"
                        )));
                    }
                }
                for attr in e.attributes().with_checks(true) {
                    let attr = attr.map_err(|err| {
                        RdfError::Syntax(format!("bad XML attribute at byte {at}: {err}"))
                    })?;
                    expansion += references(&attr.value, &entities);
                }
                if matches!(event, Event::Start(_)) {
                    depth += 1;
                    if depth > limits.max_nesting {
                        return Err(ParseLimits::exceeded(
                            &format!(
                                "the RDF/XML nests elements more than {} deep",
                                limits.max_nesting
                            ),
                            "max_nesting",
                            limits.max_nesting,
                        ));
                    }
                    if depth == 1 {
                        open = e.name().as_ref().to_vec();
                    }
                }
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            Event::Text(t) => {
                if depth == 0 && !t.iter().all(u8::is_ascii_whitespace) {
                    return Err(RdfError::Syntax(format!(
                        "the RDF/XML has text outside its root element at byte {at}"
                    )));
                }
                expansion += references(&t, &entities);
            }
            Event::CData(_) if depth == 0 => {
                return Err(RdfError::Syntax(format!(
                    "the RDF/XML has character data outside its root element at byte {at}"
                )));
            }
            Event::Eof => break,
            _ => {}
        }
        if expansion > limits.max_entity_expansion {
            return Err(ParseLimits::exceeded(
                "the RDF/XML's entity references expand too far",
                "max_entity_expansion",
                limits.max_entity_expansion,
            ));
        }
    }
    if roots == 0 {
        return Err(RdfError::Syntax("the RDF/XML has no root element".into()));
    }
    if depth > 0 {
        return Err(RdfError::Syntax(format!(
            "the RDF/XML ends before its root element <{}> is closed (the body is truncated?)",
            String::from_utf8_lossy(&open)
        )));
    }
    Ok(())
}

/// The internal general entities a DOCTYPE declares, with the length of their values.
/// Values may hold character references and the five predefined entities, nothing that
/// refers to another entity; external and parameter entities are refused.
fn declared_entities(doctype: &str) -> Result<HashMap<String, usize>> {
    let mut entities = HashMap::new();
    for decl in doctype.split("<!").skip(1) {
        let Some(rest) = decl.strip_prefix("ENTITY") else {
            continue;
        };
        let rest = rest.trim_start();
        if rest.starts_with('%') {
            return Err(RdfError::Syntax(
                "the RDF/XML declares a parameter entity; only internal general entities are accepted".into(),
            ));
        }
        let (name, rest) = rest
            .split_once(|c: char| c.is_ascii_whitespace())
            .ok_or_else(|| RdfError::Syntax("an <!ENTITY declaration has no value".into()))?;
        let rest = rest.trim_start();
        let quote = rest.chars().next().filter(|q| *q == '"' || *q == '\'');
        let Some(quote) = quote else {
            return Err(RdfError::Syntax(format!(
                "the entity {name:?} is external (SYSTEM or PUBLIC); only internal entities are accepted"
            )));
        };
        let value = rest[1..].split(quote).next().unwrap_or("");
        let mut refs = value.match_indices('&');
        if refs.any(|(i, _)| {
            let r = &value[i + 1..];
            !(r.starts_with('#') || PREDEFINED.iter().any(|p| r.starts_with(p)))
        }) {
            return Err(RdfError::Syntax(format!(
                "the entity {name:?} refers to another entity; nested entities are not expanded"
            )));
        }
        entities.insert(name.to_string(), value.len());
    }
    Ok(entities)
}

/// The predefined XML entities, with their terminating `;`.
const PREDEFINED: [&str; 5] = ["amp;", "lt;", "gt;", "apos;", "quot;"];

/// The bytes the entity references in `raw` (escaped text or attribute value) expand to.
fn references(raw: &[u8], entities: &HashMap<String, usize>) -> usize {
    if entities.is_empty() {
        return 0;
    }
    let mut total = 0usize;
    for (i, _) in raw.iter().enumerate().filter(|(_, b)| **b == b'&') {
        let rest = &raw[i + 1..];
        let Some(end) = rest.iter().take(256).position(|b| *b == b';') else {
            continue;
        };
        if let Ok(name) = std::str::from_utf8(&rest[..end]) {
            total += entities.get(name).copied().unwrap_or(0);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:dc="http://purl.org/dc/terms/">"#;

    fn check_str(s: &str) -> Result<()> {
        check(s.as_bytes(), &ParseLimits::default())
    }

    #[test]
    fn complete_documents_pass() {
        let doc = format!(
            r#"{HEAD}<rdf:Description rdf:about=""><dc:title>x &amp; y</dc:title></rdf:Description></rdf:RDF>"#
        );
        check_str(&doc).unwrap();
        let with_entities = r#"<?xml version="1.0"?>
<!DOCTYPE rdf:RDF [ <!ENTITY dc "http://purl.org/dc/terms/"> <!ENTITY x 'a&#38;b'> ]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about=""><rdf:type rdf:resource="&dc;Agent"/></rdf:Description></rdf:RDF>
<!-- trailing comment -->
"#;
        check_str(with_entities).unwrap();
    }

    #[test]
    fn truncated_documents_fail() {
        let cut = format!(
            r#"{HEAD}<rdf:Description rdf:about=""><dc:title>x</dc:title></rdf:Description>"#
        );
        let e = check_str(&cut).unwrap_err().to_string();
        assert!(e.contains("rdf:RDF") && e.contains("truncated"), "{e}");
        let mid = format!(r#"{HEAD}<rdf:Description rdf:about=""><dc:tit"#);
        assert!(check_str(&mid).is_err());
        assert!(check_str("").is_err());
        assert!(check_str(&format!("{HEAD}</rdf:RDF> trailing")).is_err());
        assert!(check_str(&format!("{HEAD}</rdf:RDF><second/>")).is_err());
    }

    #[test]
    fn entity_bombs_are_refused() {
        let lol = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">&lol2;</rdf:RDF>"#;
        let e = check_str(lol).unwrap_err().to_string();
        assert!(e.contains("refers to another entity"), "{e}");
        let external = r#"<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>"#;
        assert!(check_str(external)
            .unwrap_err()
            .to_string()
            .contains("external"));
        let parameter = r#"<!DOCTYPE r [<!ENTITY % p "x">]><r/>"#;
        assert!(check_str(parameter).is_err());
        // Quadratic blow-up: one large entity referenced many times.
        let big = "x".repeat(10_000);
        let refs = "&big;".repeat(200);
        let quadratic = format!(r#"<!DOCTYPE r [<!ENTITY big "{big}">]><r a="{refs}">{refs}</r>"#);
        let e = check_str(&quadratic).unwrap_err().to_string();
        assert!(e.contains("max_entity_expansion"), "{e}");
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}{}", "<a>".repeat(100), "</a>".repeat(100));
        let e = check_str(&deep).unwrap_err().to_string();
        assert!(e.contains("max_nesting"), "{e}");
    }
}
