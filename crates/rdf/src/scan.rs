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
