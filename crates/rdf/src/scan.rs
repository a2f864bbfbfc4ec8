//! Lexical scans run before a parser sees a body: they measure nesting depth (and, for
//! SPARQL, chained operators) without building anything, in one pass and constant memory,
//! so that no body can drive a recursive parser or evaluator through its stack.

use crate::limits::ParseLimits;
use crate::Result;

/// What a scan of Turtle-like text (Turtle, N-Triples, SPARQL) found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Deepest bracket nesting.
    pub depth: usize,
    /// Operators and opening brackets, each a potential level of a parsed tree.
    pub operators: usize,
}

/// Scans Turtle, N-Triples or SPARQL text outside strings, IRIs and comments, failing as
/// soon as the nesting exceeds `limits.max_nesting` or, with `count_operators`, the operators
/// exceed `limits.max_update_operators`.
pub(crate) fn turtle_like(
    text: &[u8],
    limits: &ParseLimits,
    count_operators: bool,
) -> Result<Shape> {
    let mut shape = Shape::default();
    let mut depth = 0usize;
    let mut i = 0;
    let n = text.len();
    let operator = |shape: &mut Shape| -> Result<()> {
        shape.operators += 1;
        if count_operators && shape.operators > limits.max_update_operators {
            return Err(ParseLimits::exceeded(
                "the update chains too many operators",
                "max_update_operators",
                limits.max_update_operators,
            ));
        }
        Ok(())
    };
    while i < n {
        let c = text[i];
        match c {
            b'#' => {
                while i < n && text[i] != b'\n' && text[i] != b'\r' {
                    i += 1;
                }
            }
            b'"' | b'\'' => {
                if text[i..].starts_with(&[c, c, c]) {
                    i += 3;
                    while i < n && !text[i..].starts_with(&[c, c, c]) {
                        i += if text[i] == b'\\' { 2 } else { 1 };
                    }
                    i += 2;
                } else {
                    i += 1;
                    while i < n && text[i] != c && text[i] != b'\n' {
                        i += if text[i] == b'\\' { 2 } else { 1 };
                    }
                }
            }
            b'<' => match iri_end(text, i + 1) {
                Some(end) => i = end,
                None => operator(&mut shape)?,
            },
            b'(' | b'[' | b'{' => {
                depth += 1;
                shape.depth = shape.depth.max(depth);
                if depth > limits.max_nesting {
                    return Err(ParseLimits::exceeded(
                        &format!(
                            "the body nests brackets more than {} deep",
                            limits.max_nesting
                        ),
                        "max_nesting",
                        limits.max_nesting,
                    ));
                }
                operator(&mut shape)?;
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'&' | b'|' | b'+' | b'*' | b'/' | b'!' | b'=' | b'^' | b'>' => operator(&mut shape)?,
            // A hyphen inside a name (`dc-terms`) is not an operator; elsewhere it may be a
            // subtraction or a negative number, both a level of an expression tree.
            b'-' => {
                let letter = |j: usize| text.get(j).is_some_and(|b| b.is_ascii_alphabetic());
                if !(i > 0 && letter(i - 1) && letter(i + 1)) {
                    operator(&mut shape)?;
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok(shape)
}

/// If an IRI reference starts at `start` (just after `<`), the index of its closing `>`.
/// A `<` followed by a character an IRI cannot hold is the less-than operator.
fn iri_end(text: &[u8], start: usize) -> Option<usize> {
    for (k, &b) in text[start.min(text.len())..].iter().enumerate() {
        match b {
            b'>' => return Some(start + k),
            b'<' | b'"' | b'{' | b'}' | b'|' | b'^' | b'`' => return None,
            b if b <= b' ' => return None,
            _ => {}
        }
    }
    None
}

/// Where Jena (and so Fedora 6) reads Turtle more loosely than the grammar: the text with a
/// `.` added after every `@prefix`/`@base` directive that lacks one, and after the last
/// statement when the body does not end with one. `None` when there is no such place, or
/// when the text ends inside a string or an IRI (a body cut short, whose meaning a lenient
/// reading would guess). Nothing else changes: whether the result is Turtle is the parser's
/// call.
pub(crate) fn turtle_missing_dots(text: &[u8]) -> Option<Vec<u8>> {
    let mut dots = Vec::new();
    // Whether the next token starts a statement (or directive).
    let mut statement_start = true;
    let mut i = skip_space(text, 0);
    while i < text.len() {
        let end = token_end(text, i)?;
        let token = &text[i..end];
        let sparql_style =
            token.eq_ignore_ascii_case(b"PREFIX") || token.eq_ignore_ascii_case(b"BASE");
        let directive =
            statement_start && (token == b"@prefix" || token == b"@base" || sparql_style);
        i = skip_space(text, end);
        statement_start = token == b".";
        if !directive {
            continue;
        }
        if token.eq_ignore_ascii_case(b"@prefix") || token.eq_ignore_ascii_case(b"PREFIX") {
            // The prefix name (`dc:`, `:`).
            let Some(end) = token_end(text, i).filter(|&e| text[e - 1] == b':') else {
                continue;
            };
            i = skip_space(text, end);
        }
        if text.get(i) != Some(&b'<') {
            continue;
        }
        let end = token_end(text, i)?;
        i = skip_space(text, end);
        statement_start = true;
        if !sparql_style && text.get(i) != Some(&b'.') {
            dots.push(end);
        }
    }
    if !statement_start {
        // On a line of its own: the body may end in a comment.
        dots.push(text.len());
    }
    if dots.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() + 2 * dots.len());
    let mut from = 0;
    for at in dots {
        out.extend_from_slice(&text[from..at]);
        out.extend_from_slice(if at == text.len() { b"\n." } else { b" ." });
        from = at;
    }
    out.extend_from_slice(&text[from..]);
    Some(out)
}

/// The index of the first byte at or after `i` that is neither white space nor in a
/// comment.
fn skip_space(text: &[u8], mut i: usize) -> usize {
    while i < text.len() {
        match text[i] {
            b'#' => {
                while i < text.len() && text[i] != b'\n' && text[i] != b'\r' {
                    i += 1;
                }
            }
            b if b.is_ascii_whitespace() => i += 1,
            _ => break,
        }
    }
    i
}

/// The end of the Turtle token that starts at `i` (not white space): an IRI, a string, one
/// punctuation byte, or a run of other bytes (a name, number, keyword or language tag,
/// where a `.` followed by a name byte belongs to the run). `None` for an IRI or string
/// the text leaves unterminated.
fn token_end(text: &[u8], i: usize) -> Option<usize> {
    const PUNCTUATION: &[u8] = b"<\"'#()[],;.";
    let ends_run = |b: u8| b.is_ascii_whitespace() || PUNCTUATION.contains(&b);
    match text[i] {
        b'<' => iri_end(text, i + 1).map(|e| e + 1),
        c @ (b'"' | b'\'') => {
            let long = text[i..].starts_with(&[c, c, c]);
            let mut j = i + if long { 3 } else { 1 };
            loop {
                match *text.get(j)? {
                    b'\\' => j += 2,
                    b if b == c && (!long || text[j..].starts_with(&[c, c, c])) => {
                        return Some(j + if long { 3 } else { 1 });
                    }
                    b'\n' | b'\r' if !long => return None,
                    _ => j += 1,
                }
            }
        }
        b if PUNCTUATION.contains(&b) => Some(i + 1),
        _ => {
            let mut j = i;
            while j < text.len() {
                match text[j] {
                    b'\\' => j += 2,
                    b'.' if text.get(j + 1).is_some_and(|&b| !ends_run(b)) => j += 1,
                    b if ends_run(b) => break,
                    _ => j += 1,
                }
            }
            Some(j.min(text.len()))
        }
    }
}

/// Scans JSON (JSON-LD) outside strings, failing when arrays and objects nest deeper than
/// `limits.max_nesting`.
pub(crate) fn json(text: &[u8], limits: &ParseLimits) -> Result<()> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > limits.max_nesting {
                    return Err(ParseLimits::exceeded(
                        &format!(
                            "the JSON nests arrays and objects more than {} deep",
                            limits.max_nesting
                        ),
                        "max_nesting",
                        limits.max_nesting,
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ParseLimits {
        ParseLimits {
            max_nesting: 4,
            max_update_operators: 6,
            ..ParseLimits::default()
        }
    }

    #[test]
    fn depth_ignores_strings_iris_and_comments() {
        let text = br#"<a(> <p> "((((" , '[[[[' , """ {{{{ " """ . # ((((((
            <s> <p> ( ( 1 ) ) ."#;
        let shape = turtle_like(text, &limits(), false).unwrap();
        assert_eq!(shape.depth, 2);
        assert!(turtle_like(b"<s> <p> ( ( ( ( ( 1 ) ) ) ) ) .", &limits(), false).is_err());
        assert!(json(br#"{"a": "[[[[[[[[", "b": [[1]]}"#, &limits()).is_ok());
        assert!(json(b"[[[[[1]]]]]", &limits()).is_err());
    }

    #[test]
    fn missing_dots_go_after_directives_and_the_last_statement_only() {
        let dots =
            |t: &str| turtle_missing_dots(t.as_bytes()).map(|d| String::from_utf8(d).unwrap());
        assert_eq!(
            dots("@prefix a: <x>\n@base <y>\n<s> a:p \"o.\" ; a:q 1.5"),
            Some("@prefix a: <x> .\n@base <y> .\n<s> a:p \"o.\" ; a:q 1.5\n.".into())
        );
        assert_eq!(
            dots("@prefix a: <x> .\nPREFIX b: <y>\n<s> b:p a:o . # \"end"),
            None
        );
        assert_eq!(
            dots("<s> <p> '''a\n.'''@en # ."),
            Some("<s> <p> '''a\n.'''@en # .\n.".into())
        );
        // A language tag named like a directive is no directive.
        assert_eq!(dots("<s> <p> \"a\"@prefix ."), None);
        // Cut short inside a string or an IRI: no reading is offered.
        for cut in [
            "<s> <p> \"a",
            "<s> <p> <o",
            "<s> <p> \"\"\"a\"",
            "@prefix a: <x",
        ] {
            assert_eq!(dots(cut), None, "{cut:?}");
        }
    }

    #[test]
    fn operators_are_counted_for_updates() {
        let l = limits();
        assert!(turtle_like(b"FILTER(?a < 3 && ?b > 2)", &l, true).is_ok());
        assert!(turtle_like(b"FILTER(1+1+1+1+1+1+1)", &l, true).is_err());
        assert!(turtle_like(b"FILTER(1-1-1-1-1-1-1)", &l, true).is_err());
        // Hyphens inside names and IRIs are not operators.
        assert!(turtle_like(
            b"<http://x/a-b-c-d-e-f-g> dc-terms:a-b-c-d-e-f ?x",
            &l,
            true
        )
        .is_ok());
        // Without counting, only depth matters.
        assert!(turtle_like(b"1+1+1+1+1+1+1+1+1", &l, false).is_ok());
        let e = turtle_like(b"!!!!!!!!?x", &l, true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_update_operators"), "{e}");
    }
}
