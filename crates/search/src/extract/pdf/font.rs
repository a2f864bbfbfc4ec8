//! Fonts as text needs them: how a string's bytes split into character codes, each code's
//! Unicode text and its width (PDF 32000-1, 9.6–9.10).
//!
//! The Unicode text of a code comes from the font's `ToUnicode` CMap when it has one, else
//! (simple fonts) from its encoding: a base encoding with `Differences`, whose glyph names are
//! read by [`glyphs`](super::glyphs). A composite font (Type0) with `Identity-H`/`-V` or an
//! embedded CMap has two-byte codes (or what the CMap's code space ranges say); its text comes
//! from `ToUnicode` only.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::file::File;
use super::glyphs::{self, Base};
use super::syntax::{Dict, Lexer, Obj, Tok};
use super::PdfError;

/// Codes of a `bfrange` expanded at most (a hostile CMap could name four billion).
const MAX_RANGE: u32 = 1 << 16;

/// A font, ready to decode strings.
#[derive(Debug)]
pub struct Font {
    /// Simple fonts: each code's text (empty when unknown).
    simple: Option<Box<CodeTexts>>,
    /// Composite fonts and CMaps: a code's text (as [`push_clean`] writes it).
    map: HashMap<u32, Box<str>>,
    /// The code space: which byte lengths codes have (composite fonts).
    ranges: Vec<CodeRange>,
    /// Widths in text space units per 1000 (simple: by code; composite: by code, as the
    /// identity CMaps make code and CID the same).
    widths: HashMap<u32, f32>,
    simple_widths: Option<Box<[f32; 256]>>,
    default_width: f32,
    /// Glyph space to text space for widths (1/1000, or a Type 3 font's matrix).
    scale: f32,
}

/// One code space range: codes of `len` bytes from `lo` to `hi` (byte by byte).
#[derive(Debug, Clone)]
struct CodeRange {
    len: usize,
    lo: [u8; 4],
    hi: [u8; 4],
}

/// A simple font's 256 codes' texts, as [`push_clean`] writes them: spans of one string.
#[derive(Debug, Clone)]
struct CodeTexts {
    text: String,
    spans: [(u32, u32); 256],
}

/// The texts of the base encodings, built once: `[Standard, WinAnsi, MacRoman]`.
static BASE_TEXTS: LazyLock<[CodeTexts; 3]> = LazyLock::new(|| {
    [Base::Standard, Base::WinAnsi, Base::MacRoman].map(|base| {
        let mut texts = CodeTexts {
            text: String::new(),
            spans: [(0, 0); 256],
        };
        let mut buf = [0u8; 4];
        for code in 0..=255u8 {
            if let Some(c) = base.char(code) {
                texts.set(code, c.encode_utf8(&mut buf));
            }
        }
        texts
    })
});

impl CodeTexts {
    /// The texts of `base`.
    fn of(base: Base) -> CodeTexts {
        BASE_TEXTS[match base {
            Base::Standard => 0,
            Base::WinAnsi => 1,
            Base::MacRoman => 2,
        }]
        .clone()
    }

    /// Makes `text` the text of `code` (what it replaces stays in the string, unused).
    fn set(&mut self, code: u8, text: &str) {
        let start = self.text.len() as u32;
        push_clean(&mut self.text, text);
        self.spans[code as usize] = (start, self.text.len() as u32);
    }

    #[inline]
    fn get(&self, code: u8) -> &str {
        let (start, end) = self.spans[code as usize];
        &self.text[start as usize..end as usize]
    }
}

/// Appends `text` as extracted text shows it: control characters dropped, ligatures
/// (U+FB00–FB06) spelt out.
fn push_clean(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\u{fb00}' => out.push_str("ff"),
            '\u{fb01}' => out.push_str("fi"),
            '\u{fb02}' => out.push_str("fl"),
            '\u{fb03}' => out.push_str("ffi"),
            '\u{fb04}' => out.push_str("ffl"),
            '\u{fb05}' | '\u{fb06}' => out.push_str("st"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
}

impl CodeRange {
    fn matches(&self, bytes: &[u8]) -> bool {
        bytes.len() >= self.len
            && (0..self.len).all(|i| self.lo[i] <= bytes[i] && bytes[i] <= self.hi[i])
    }
}

impl Font {
    /// Splits `bytes` into codes: calls `f(text, width, is_single_byte_32)` for each, text as
    /// [`push_clean`] writes it, width in text space units (per unit of font size).
    #[inline(always)]
    pub fn each_code(&self, bytes: &[u8], mut f: impl FnMut(&str, f32, bool)) {
        if let (Some(simple), Some(widths)) = (&self.simple, &self.simple_widths) {
            for &b in bytes {
                f(simple.get(b), widths[b as usize] * self.scale, b == 32);
            }
            return;
        }
        let mut i = 0;
        while i < bytes.len() {
            let len = self
                .ranges
                .iter()
                .find(|r| r.matches(&bytes[i..]))
                .map_or(2, |r| r.len)
                .min(bytes.len() - i);
            let code = bytes[i..i + len]
                .iter()
                .fold(0u32, |acc, &b| acc << 8 | u32::from(b));
            let text = self.map.get(&code).map_or("", |t| &**t);
            let width = self
                .widths
                .get(&code)
                .copied()
                .unwrap_or(self.default_width);
            f(text, width * self.scale, len == 1 && code == 32);
            i += len;
        }
    }

    /// Builds the font of dictionary `dict`.
    pub fn load(file: &File<'_>, dict: &Dict) -> Result<Font, PdfError> {
        let subtype = file.get(dict, b"Subtype")?;
        let to_unicode = match file.get(dict, b"ToUnicode")? {
            s @ Obj::Stream(..) => Some(parse_cmap(&file.stream_data(&s)?)),
            _ => None,
        };
        if subtype.as_name() == Some(b"Type0") {
            return Self::composite(file, dict, to_unicode);
        }
        let encoding = file.get(dict, b"Encoding")?;
        let (base, differences) = match &encoding {
            Obj::Name(n) => (Base::from_name(n), None),
            Obj::Dict(d) => (
                file.get(d, b"BaseEncoding")?
                    .as_name()
                    .and_then(Base::from_name),
                match file.get(d, b"Differences")? {
                    Obj::Array(a) => Some(a),
                    _ => None,
                },
            ),
            _ => (None, None),
        };
        let base = base.unwrap_or(match subtype.as_name() {
            // A TrueType font without an encoding: its codes are mostly ASCII (WinAnsi).
            Some(b"TrueType") => Base::WinAnsi,
            _ => Base::Standard,
        });
        let mut codes = Box::new(CodeTexts::of(base));
        let mut buf = String::new();
        if let Some(diffs) = differences {
            let mut code: i64 = 0;
            for item in diffs {
                match file.resolve(&item)? {
                    Obj::Int(i) => code = i,
                    Obj::Name(name) => {
                        if let Ok(c) = u8::try_from(code) {
                            buf.clear();
                            glyphs::push_glyph(&name, &mut buf);
                            codes.set(c, &buf);
                        }
                        code += 1;
                    }
                    _ => {}
                }
            }
        }
        if let Some(cmap) = to_unicode {
            for (code, text) in cmap.map {
                if let Ok(c) = u8::try_from(code) {
                    codes.set(c, &text);
                }
            }
        }
        // Widths: /FirstChar and /Widths; standard 14 fonts have none (half an em is close
        // enough to place words).
        let mut widths = Box::new([500f32; 256]);
        if let Obj::Array(ws) = file.get(dict, b"Widths")? {
            let first = file.get(dict, b"FirstChar")?.as_i64().unwrap_or(0);
            for (i, w) in ws.iter().enumerate() {
                let code = first + i as i64;
                if let (Ok(c), Some(w)) = (u8::try_from(code), file.resolve(w)?.as_f64()) {
                    widths[c as usize] = w as f32;
                }
            }
        }
        let mut scale = 0.001;
        if subtype.as_name() == Some(b"Type3") {
            if let Obj::Array(m) = file.get(dict, b"FontMatrix")? {
                if let Some(a) = m.first().and_then(Obj::as_f64) {
                    scale = a as f32;
                }
            }
        }
        Ok(Font {
            simple: Some(codes),
            map: HashMap::new(),
            ranges: Vec::new(),
            widths: HashMap::new(),
            simple_widths: Some(widths),
            default_width: 500.0,
            scale,
        })
    }

    fn composite(file: &File<'_>, dict: &Dict, to_unicode: Option<CMap>) -> Result<Font, PdfError> {
        let ranges = match file.get(dict, b"Encoding")? {
            Obj::Name(n) if n.starts_with(b"Identity") => Vec::new(),
            s @ Obj::Stream(..) => parse_cmap(&file.stream_data(&s)?).ranges,
            Obj::Name(n) => {
                return Err(PdfError::Unsupported(format!(
                    "the predefined CMap {}",
                    String::from_utf8_lossy(&n)
                )))
            }
            _ => Vec::new(),
        };
        let mut font = Font {
            simple: None,
            map: HashMap::new(),
            ranges,
            widths: HashMap::new(),
            simple_widths: None,
            default_width: 1000.0,
            scale: 0.001,
        };
        if let Some(cmap) = to_unicode {
            if font.ranges.is_empty() {
                font.ranges = cmap.ranges;
            }
            font.map = cmap.map;
        }
        if let Obj::Array(descendants) = file.get(dict, b"DescendantFonts")? {
            if let Some(Obj::Dict(cid)) =
                descendants.first().map(|d| file.resolve(d)).transpose()?
            {
                if let Some(dw) = file.get(&cid, b"DW")?.as_f64() {
                    font.default_width = dw as f32;
                }
                if let Obj::Array(w) = file.get(&cid, b"W")? {
                    read_cid_widths(file, &w, &mut font.widths)?;
                }
            }
        }
        Ok(font)
    }
}

/// A composite font's `/W`: `c [w1 w2 …]` and `c_first c_last w` entries.
fn read_cid_widths(
    file: &File<'_>,
    w: &[Obj],
    out: &mut HashMap<u32, f32>,
) -> Result<(), PdfError> {
    let mut i = 0;
    while i < w.len() {
        let Some(first) = file.resolve(&w[i])?.as_i64() else {
            break;
        };
        match w.get(i + 1).map(|o| file.resolve(o)).transpose()? {
            Some(Obj::Array(ws)) => {
                for (k, v) in ws.iter().enumerate().take(MAX_RANGE as usize) {
                    if let Some(v) = v.as_f64() {
                        out.insert((first + k as i64) as u32, v as f32);
                    }
                }
                i += 2;
            }
            Some(last) => {
                let (Some(last), Some(v)) = (
                    last.as_i64(),
                    w.get(i + 2)
                        .map(|o| file.resolve(o))
                        .transpose()?
                        .and_then(|o| o.as_f64()),
                ) else {
                    break;
                };
                for c in first..=last.min(first + i64::from(MAX_RANGE)) {
                    out.insert(c as u32, v as f32);
                }
                i += 3;
            }
            None => break,
        }
    }
    Ok(())
}

/// What a CMap says: code space ranges and codes' Unicode text.
#[derive(Debug, Default)]
struct CMap {
    ranges: Vec<CodeRange>,
    map: HashMap<u32, Box<str>>,
}

/// Reads a CMap (a `ToUnicode` one, or the code space of an encoding one); what it cannot
/// read it skips.
fn parse_cmap(data: &[u8]) -> CMap {
    let mut cmap = CMap::default();
    let mut lx = Lexer::new(data, 0);
    let mut operands: Vec<Obj> = Vec::new();
    let mut section: &[u8] = b"";
    loop {
        let tok = match lx.next_tok() {
            Ok(Some(t)) => t,
            Ok(None) => break,
            Err(_) => {
                lx.pos += 1;
                continue;
            }
        };
        match tok {
            Tok::Keyword(k) => {
                match k {
                    b"begincodespacerange" | b"beginbfchar" | b"beginbfrange" => {
                        section = k;
                    }
                    b"endcodespacerange" => {
                        for pair in operands.chunks_exact(2) {
                            if let (Obj::Str(lo), Obj::Str(hi)) = (&pair[0], &pair[1]) {
                                if (1..=4).contains(&lo.len()) && lo.len() == hi.len() {
                                    let mut r = CodeRange {
                                        len: lo.len(),
                                        lo: [0; 4],
                                        hi: [0; 4],
                                    };
                                    r.lo[..lo.len()].copy_from_slice(lo);
                                    r.hi[..hi.len()].copy_from_slice(hi);
                                    cmap.ranges.push(r);
                                }
                            }
                        }
                        section = b"";
                    }
                    b"endbfchar" => {
                        for pair in operands.chunks_exact(2) {
                            if let Obj::Str(src) = &pair[0] {
                                if let Some(text) = target_text(&pair[1], 0) {
                                    cmap.map.insert(code_of(src), text);
                                }
                            }
                        }
                        section = b"";
                    }
                    b"endbfrange" => {
                        for triple in operands.chunks_exact(3) {
                            let (Obj::Str(lo), Obj::Str(hi)) = (&triple[0], &triple[1]) else {
                                continue;
                            };
                            let (lo, hi) = (code_of(lo), code_of(hi));
                            if hi < lo || hi - lo > MAX_RANGE {
                                continue;
                            }
                            for (k, code) in (lo..=hi).enumerate() {
                                let text = match &triple[2] {
                                    Obj::Array(items) => {
                                        items.get(k).and_then(|o| target_text(o, 0))
                                    }
                                    dst => target_text(dst, k as u32),
                                };
                                if let Some(text) = text {
                                    cmap.map.insert(code, text);
                                }
                            }
                        }
                        section = b"";
                    }
                    _ => {}
                }
                operands.clear();
                let _ = section;
            }
            Tok::Str(s) => operands.push(Obj::Str(s.into_owned())),
            Tok::Name(n) => operands.push(Obj::Name(n.into_owned())),
            Tok::Int(i) => operands.push(Obj::Int(i)),
            Tok::ArrayOpen => match lx.object_from(Tok::ArrayOpen, 0) {
                Ok(o) => operands.push(o),
                Err(_) => operands.clear(),
            },
            Tok::DictOpen => {
                let _ = lx.dict_body(0);
            }
            _ => {}
        }
    }
    cmap
}

fn code_of(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .take(4)
        .fold(0u32, |acc, &b| acc << 8 | u32::from(b))
}

/// A bfchar/bfrange destination: UTF-16BE bytes (the last unit plus `offset`), or a glyph
/// name.
fn target_text(dst: &Obj, offset: u32) -> Option<Box<str>> {
    match dst {
        Obj::Str(bytes) => {
            let mut units: Vec<u16> = bytes
                .chunks(2)
                .map(|c| u16::from(c[0]) << 8 | u16::from(*c.get(1).unwrap_or(&0)))
                .collect();
            if let Some(last) = units.last_mut() {
                *last = last.wrapping_add(offset as u16);
            }
            let decoded: String = char::decode_utf16(units)
                .map(|c| c.unwrap_or('\u{FFFD}'))
                .collect();
            let mut text = String::with_capacity(decoded.len());
            push_clean(&mut text, &decoded);
            Some(text.into_boxed_str())
        }
        Obj::Name(name) => {
            let mut glyph = String::new();
            glyphs::push_glyph(name, &mut glyph).then(|| {
                let mut text = String::with_capacity(glyph.len());
                push_clean(&mut text, &glyph);
                text.into_boxed_str()
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_unicode_cmap() {
        let cmap = parse_cmap(
            b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n\
              1 begincodespacerange <0000> <FFFF> endcodespacerange\n\
              4 beginbfchar <0003> <0020> <0011> <00660069> <0012> <FB02> <0013> <00070041> endbfchar\n\
              2 beginbfrange <0024> <0026> <0041> <0030> <0031> [<0078> /eacute] endbfrange\n\
              endcmap CMapName currentdict /CMap defineresource pop end end",
        );
        assert_eq!(cmap.ranges.len(), 1);
        assert_eq!(cmap.ranges[0].len, 2);
        let get = |c: u32| cmap.map.get(&c).map(|t| t.to_string());
        assert_eq!(get(3).as_deref(), Some(" "));
        assert_eq!(get(0x11).as_deref(), Some("fi"));
        assert_eq!(get(0x25).as_deref(), Some("B"));
        assert_eq!(get(0x26).as_deref(), Some("C"));
        assert_eq!(get(0x30).as_deref(), Some("x"));
        assert_eq!(get(0x31).as_deref(), Some("é"));
        assert_eq!(get(0x27), None);
        // Ligatures are spelt out, control characters dropped.
        assert_eq!(get(0x12).as_deref(), Some("fl"));
        assert_eq!(get(0x13).as_deref(), Some("A"));
    }

    #[test]
    fn simple_fonts_texts_are_clean_and_replaceable() {
        let mut texts = CodeTexts::of(Base::Standard);
        assert_eq!(texts.get(b'A'), "A");
        // StandardEncoding's 0xAE is the fi ligature; its text is the two letters.
        assert_eq!(texts.get(0xae), "fi");
        assert_eq!(texts.get(0x07), "");
        let win = CodeTexts::of(Base::WinAnsi);
        assert_eq!(win.get(0xe9), "é");
        assert_eq!(win.get(0x80), "€");
        texts.set(b'A', "\u{fb03}x\u{1}");
        assert_eq!(texts.get(b'A'), "ffix");
        assert_eq!(texts.get(b'B'), "B");
    }
}
