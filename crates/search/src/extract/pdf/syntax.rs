//! PDF's object syntax: a lexer over bytes and the objects it reads (PDF 32000-1, 7.2–7.3).

use std::borrow::Cow;
use std::rc::Rc;

use super::PdfError;

/// Objects nested deeper than this (arrays in dictionaries in arrays…) are corrupt.
const MAX_DEPTH: usize = 64;

/// A PDF object. Strings and names are raw bytes (names with `#xx` decoded); a stream's data
/// is a range of the file (streams live at top level only).
#[derive(Debug, Clone, PartialEq)]
pub enum Obj {
    /// `null` (and anything missing).
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A real number.
    Real(f64),
    /// A literal or hexadecimal string, decoded.
    Str(Vec<u8>),
    /// A name without its slash.
    Name(Vec<u8>),
    /// An array.
    Array(Vec<Obj>),
    /// A dictionary.
    Dict(Rc<Dict>),
    /// An indirect reference `num gen R`.
    Ref(u32, u16),
    /// A stream: its dictionary and where its (encoded) data lies in the file.
    Stream(Rc<Dict>, usize, usize),
}

impl Obj {
    /// The number, if this is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Obj::Int(i) => Some(*i as f64),
            Obj::Real(r) => Some(*r),
            _ => None,
        }
    }

    /// The integer, if this is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Obj::Int(i) => Some(*i),
            Obj::Real(r) => Some(*r as i64),
            _ => None,
        }
    }

    /// The name, if this is one.
    pub fn as_name(&self) -> Option<&[u8]> {
        match self {
            Obj::Name(n) => Some(n),
            _ => None,
        }
    }

    /// The dictionary of a dictionary or a stream.
    pub fn as_dict(&self) -> Option<&Rc<Dict>> {
        match self {
            Obj::Dict(d) | Obj::Stream(d, ..) => Some(d),
            _ => None,
        }
    }
}

/// A dictionary: few keys, kept in order and searched linearly.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dict(pub Vec<(Vec<u8>, Obj)>);

impl Dict {
    /// The value of `key` (`Null` when absent).
    pub fn get(&self, key: &[u8]) -> &Obj {
        const NULL: &Obj = &Obj::Null;
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map_or(NULL, |(_, v)| v)
    }
}

/// A token of the syntax.
#[derive(Debug, PartialEq)]
pub enum Tok<'a> {
    /// An integer.
    Int(i64),
    /// A real number.
    Real(f64),
    /// A string (literal or hexadecimal), decoded (borrowed when it needed no decoding).
    Str(Cow<'a, [u8]>),
    /// A name, decoded (borrowed when it needed no decoding).
    Name(Cow<'a, [u8]>),
    /// `[`.
    ArrayOpen,
    /// `]`.
    ArrayClose,
    /// `<<`.
    DictOpen,
    /// `>>`.
    DictClose,
    /// Anything else: `obj`, `R`, `true`, an operator `Tj`…
    Keyword(&'a [u8]),
    /// `{` or `}` (PostScript calculator functions; skipped).
    Brace,
}

/// Whether `c` is white space (7.2.3).
#[inline]
pub fn is_white(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t' | b'\x0c' | b'\0')
}

/// Whether `c` is a delimiter (7.2.3).
#[inline]
pub fn is_delimiter(c: u8) -> bool {
    matches!(
        c,
        b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
    )
}

#[inline]
fn is_regular(c: u8) -> bool {
    !is_white(c) && !is_delimiter(c)
}

/// The value of decimal digit `c`.
#[inline]
fn digit(c: u8) -> Option<u64> {
    let d = c.wrapping_sub(b'0');
    (d < 10).then_some(u64::from(d))
}

/// `POW10[k]` is 10 to the power `k`, exactly.
const POW10: [f64; 19] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18,
];

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Reads tokens and objects from bytes.
pub struct Lexer<'a> {
    /// The bytes.
    pub s: &'a [u8],
    /// Where the next token starts (or white space before it).
    pub pos: usize,
    /// Whether `n g R` reads as a reference (not in content streams, which have none).
    refs: bool,
}

impl<'a> Lexer<'a> {
    /// A lexer at `pos` of `s`.
    pub fn new(s: &'a [u8], pos: usize) -> Self {
        Lexer { s, pos, refs: true }
    }

    /// A lexer for a content stream: integers never start references.
    pub fn content(s: &'a [u8]) -> Self {
        Lexer {
            s,
            pos: 0,
            refs: false,
        }
    }

    /// Skips white space and comments.
    #[inline]
    pub fn skip_white(&mut self) {
        let s = self.s;
        while self.pos < s.len() {
            let c = s[self.pos];
            if is_white(c) {
                self.pos += 1;
            } else if c == b'%' {
                while self.pos < s.len() && !matches!(s[self.pos], b'\r' | b'\n') {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    /// The next token, `None` at the end. Inlined into its callers: the content-stream loop
    /// calls it for every token, and the call and its result's move cost more than the work.
    #[inline(always)]
    pub fn next_tok(&mut self) -> Result<Option<Tok<'a>>, PdfError> {
        self.skip_white();
        let s = self.s;
        let Some(&c) = s.get(self.pos) else {
            return Ok(None);
        };
        let tok = match c {
            b'/' => {
                self.pos += 1;
                let start = self.pos;
                while self.pos < s.len() && is_regular(s[self.pos]) {
                    self.pos += 1;
                }
                let raw = &s[start..self.pos];
                Tok::Name(if raw.contains(&b'#') {
                    Cow::Owned(decode_name(raw))
                } else {
                    Cow::Borrowed(raw)
                })
            }
            b'(' => Tok::Str(match self.plain_literal() {
                Some(plain) => Cow::Borrowed(plain),
                None => Cow::Owned(self.literal_string()?),
            }),
            b'<' => {
                if s.get(self.pos + 1) == Some(&b'<') {
                    self.pos += 2;
                    Tok::DictOpen
                } else {
                    Tok::Str(Cow::Owned(self.hex_string()?))
                }
            }
            b'>' => {
                if s.get(self.pos + 1) == Some(&b'>') {
                    self.pos += 2;
                    Tok::DictClose
                } else {
                    return Err(PdfError::corrupt("a stray '>'"));
                }
            }
            b'[' => {
                self.pos += 1;
                Tok::ArrayOpen
            }
            b']' => {
                self.pos += 1;
                Tok::ArrayClose
            }
            b'{' | b'}' => {
                self.pos += 1;
                Tok::Brace
            }
            b')' => {
                self.pos += 1;
                return Err(PdfError::corrupt("a stray ')'"));
            }
            b'0'..=b'9' | b'+' | b'-' | b'.' => self.number(),
            _ => {
                let start = self.pos;
                while self.pos < s.len() && is_regular(s[self.pos]) {
                    self.pos += 1;
                }
                Tok::Keyword(&s[start..self.pos])
            }
        };
        Ok(Some(tok))
    }

    #[inline]
    fn number(&mut self) -> Tok<'a> {
        let s = self.s;
        let start = self.pos;
        let mut negative = false;
        if matches!(s[self.pos], b'+' | b'-') {
            negative = s[self.pos] == b'-';
            self.pos += 1;
            // "--5" and the like: more signs are ignored, as readers do.
            while self.pos < s.len() && matches!(s[self.pos], b'+' | b'-') {
                self.pos += 1;
            }
        }
        let mut int: i64 = 0;
        let mut digits = 0;
        while let Some(d) = s.get(self.pos).and_then(|c| digit(*c)) {
            // 18 digits cannot overflow; more saturate.
            int = if digits < 18 {
                int * 10 + d as i64
            } else {
                i64::MAX
            };
            self.pos += 1;
            digits += 1;
        }
        if self.pos < s.len() && s[self.pos] == b'.' {
            self.pos += 1;
            // The fraction's digits as one integer, divided once; digits past the 18th are
            // below any precision text needs.
            let mut frac: u64 = 0;
            let mut places = 0;
            while let Some(d) = s.get(self.pos).and_then(|c| digit(*c)) {
                if places < 18 {
                    frac = frac * 10 + d;
                    places += 1;
                }
                self.pos += 1;
            }
            let value = int as f64 + frac as f64 / POW10[places];
            // Trailing garbage of a malformed number ("1.2.3") is dropped.
            while self.pos < s.len() && is_regular(s[self.pos]) {
                self.pos += 1;
            }
            return Tok::Real(if negative { -value } else { value });
        }
        if digits == 0 {
            // A lone sign or a word starting with one: a keyword.
            while self.pos < s.len() && is_regular(s[self.pos]) {
                self.pos += 1;
            }
            return Tok::Keyword(&s[start..self.pos]);
        }
        while self.pos < s.len() && is_regular(s[self.pos]) {
            self.pos += 1;
        }
        Tok::Int(if negative { -int } else { int })
    }

    /// A literal string without escapes, as it stands in the input (`None`: it has some).
    fn plain_literal(&mut self) -> Option<&'a [u8]> {
        let s = self.s;
        let start = self.pos + 1;
        let mut depth = 1usize;
        for (i, &c) in s[start..].iter().enumerate() {
            match c {
                b'\\' | b'\r' => return None,
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos = start + i + 1;
                        return Some(&s[start..start + i]);
                    }
                }
                _ => {}
            }
        }
        None
    }

    fn literal_string(&mut self) -> Result<Vec<u8>, PdfError> {
        let s = self.s;
        self.pos += 1;
        let mut out = Vec::new();
        let mut depth = 1usize;
        while self.pos < s.len() {
            let c = s[self.pos];
            self.pos += 1;
            match c {
                b'(' => {
                    depth += 1;
                    out.push(c);
                }
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(out);
                    }
                    out.push(c);
                }
                b'\\' => {
                    let Some(&e) = s.get(self.pos) else { break };
                    self.pos += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'\r' => {
                            if s.get(self.pos) == Some(&b'\n') {
                                self.pos += 1;
                            }
                        }
                        b'\n' => {}
                        b'0'..=b'7' => {
                            let mut v = u32::from(e - b'0');
                            for _ in 0..2 {
                                match s.get(self.pos) {
                                    Some(&d @ b'0'..=b'7') => {
                                        v = v * 8 + u32::from(d - b'0');
                                        self.pos += 1;
                                    }
                                    _ => break,
                                }
                            }
                            out.push(v as u8);
                        }
                        other => out.push(other),
                    }
                }
                _ => out.push(c),
            }
        }
        Err(PdfError::corrupt("an unterminated string"))
    }

    fn hex_string(&mut self) -> Result<Vec<u8>, PdfError> {
        let s = self.s;
        self.pos += 1;
        let mut out = Vec::new();
        let mut high: Option<u8> = None;
        while self.pos < s.len() {
            let c = s[self.pos];
            self.pos += 1;
            if c == b'>' {
                if let Some(h) = high {
                    out.push(h << 4);
                }
                return Ok(out);
            }
            let Some(v) = hex_value(c) else {
                if is_white(c) {
                    continue;
                }
                return Err(PdfError::corrupt("a bad hexadecimal string"));
            };
            match high.take() {
                Some(h) => out.push(h << 4 | v),
                None => high = Some(v),
            }
        }
        Err(PdfError::corrupt("an unterminated hexadecimal string"))
    }

    /// Reads one object (a reference `n g R` is one object); `Ok(None)` at the end.
    pub fn object(&mut self) -> Result<Option<Obj>, PdfError> {
        match self.next_tok()? {
            None => Ok(None),
            Some(tok) => self.object_from(tok, 0).map(Some),
        }
    }

    /// The object that starts with `tok`.
    pub fn object_from(&mut self, tok: Tok<'a>, depth: usize) -> Result<Obj, PdfError> {
        if depth > MAX_DEPTH {
            return Err(PdfError::corrupt("objects nest too deeply"));
        }
        Ok(match tok {
            Tok::Int(i) => {
                // `n g R`?
                if let (Ok(num), true) = (u32::try_from(i), self.refs && self.looks_like_ref()) {
                    let save = self.pos;
                    if let Ok(Some(Tok::Int(g))) = self.next_tok() {
                        if let Ok(Some(Tok::Keyword(b"R"))) = self.next_tok() {
                            return Ok(Obj::Ref(num, g.clamp(0, 65535) as u16));
                        }
                    }
                    self.pos = save;
                }
                Obj::Int(i)
            }
            Tok::Real(r) => Obj::Real(r),
            Tok::Str(s) => Obj::Str(s.into_owned()),
            Tok::Name(n) => Obj::Name(n.into_owned()),
            Tok::ArrayOpen => {
                let mut items = Vec::new();
                loop {
                    match self.next_tok()? {
                        None => return Err(PdfError::corrupt("an unterminated array")),
                        Some(Tok::ArrayClose) => break,
                        Some(t) => items.push(self.object_from(t, depth + 1)?),
                    }
                }
                Obj::Array(items)
            }
            Tok::DictOpen => Obj::Dict(Rc::new(self.dict_body(depth)?)),
            Tok::Keyword(b"null") => Obj::Null,
            Tok::Keyword(b"true") => Obj::Bool(true),
            Tok::Keyword(b"false") => Obj::Bool(false),
            Tok::Keyword(k) => {
                return Err(PdfError::corrupt(format!(
                    "unexpected {:?}",
                    String::from_utf8_lossy(&k[..k.len().min(20)])
                )))
            }
            Tok::ArrayClose | Tok::DictClose | Tok::Brace => {
                return Err(PdfError::corrupt("an unexpected delimiter"))
            }
        })
    }

    /// The entries of a dictionary whose `<<` has been read.
    pub fn dict_body(&mut self, depth: usize) -> Result<Dict, PdfError> {
        let mut entries = Vec::new();
        loop {
            match self.next_tok()? {
                None => return Err(PdfError::corrupt("an unterminated dictionary")),
                Some(Tok::DictClose) => return Ok(Dict(entries)),
                Some(Tok::Name(key)) => {
                    let key = key.into_owned();
                    let value = match self.next_tok()? {
                        None => return Err(PdfError::corrupt("an unterminated dictionary")),
                        // A key without a value: null, as readers take it.
                        Some(Tok::DictClose) => {
                            entries.push((key, Obj::Null));
                            return Ok(Dict(entries));
                        }
                        Some(t) => self.object_from(t, depth + 1)?,
                    };
                    entries.push((key, value));
                }
                Some(_) => return Err(PdfError::corrupt("a dictionary key is not a name")),
            }
        }
    }

    /// Whether the next bytes look like ` g R` (a cheap check before trying).
    fn looks_like_ref(&self) -> bool {
        let s = self.s;
        let mut p = self.pos;
        while p < s.len() && is_white(s[p]) {
            p += 1;
        }
        let digits = p;
        while p < s.len() && s[p].is_ascii_digit() {
            p += 1;
        }
        if p == digits {
            return false;
        }
        while p < s.len() && is_white(s[p]) {
            p += 1;
        }
        s.get(p) == Some(&b'R') && s.get(p + 1).is_none_or(|&c| !is_regular(c))
    }
}

fn decode_name(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'#' && i + 2 < raw.len() {
            if let (Some(h), Some(l)) = (hex_value(raw[i + 1]), hex_value(raw[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(raw[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Obj {
        Lexer::new(s.as_bytes(), 0).object().unwrap().unwrap()
    }

    #[test]
    fn objects() {
        assert_eq!(obj("  42 "), Obj::Int(42));
        assert_eq!(obj("-.5"), Obj::Real(-0.5));
        assert_eq!(obj("12 0 R"), Obj::Ref(12, 0));
        assert_eq!(obj("(a\\(b\\)\\101\\\nc)"), Obj::Str(b"a(b)Ac".to_vec()));
        assert_eq!(obj("<48 65 6C6>"), Obj::Str(b"Hel`".to_vec()));
        assert_eq!(obj("/A#20B"), Obj::Name(b"A B".to_vec()));
        let Obj::Dict(d) = obj("<< /Type /Page /Kids [1 0 R 2 0 R] /N 3 >>") else {
            panic!()
        };
        assert_eq!(d.get(b"Type"), &Obj::Name(b"Page".to_vec()));
        assert_eq!(
            d.get(b"Kids"),
            &Obj::Array(vec![Obj::Ref(1, 0), Obj::Ref(2, 0)])
        );
        assert_eq!(d.get(b"N"), &Obj::Int(3));
        assert_eq!(d.get(b"Missing"), &Obj::Null);
    }

    #[test]
    fn numbers() {
        fn num(s: &str) -> Tok<'_> {
            Lexer::content(s.as_bytes()).next_tok().unwrap().unwrap()
        }
        assert_eq!(num("12.3456"), Tok::Real(12.3456));
        assert_eq!(num("+7."), Tok::Real(7.0));
        assert_eq!(num("--3"), Tok::Int(-3));
        // Digits past the 18th of a fraction are dropped; an integer of more saturates.
        assert_eq!(
            num("0.1234567890123456789999"),
            Tok::Real(123_456_789_012_345_678.0 / 1e18)
        );
        assert_eq!(num("123456789012345678901"), Tok::Int(i64::MAX));
        assert_eq!(num("1.2.3"), Tok::Real(1.2));
        assert_eq!(num("-x"), Tok::Keyword(b"-x"));
    }

    #[test]
    fn bad_input_is_an_error() {
        for bad in ["(open", "<4G>", "[1 2", "<< /A 1", &"[".repeat(100)] {
            assert!(Lexer::new(bad.as_bytes(), 0).object().is_err(), "{bad}");
        }
    }
}
