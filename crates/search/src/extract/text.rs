//! Text files: read a bounded prefix and decode it.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// The character encodings we decode; anything else is read as UTF-8.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Charset {
    /// UTF-8, and anything we do not know (decoded lossily).
    #[default]
    Utf8,
    /// windows-1252, also used for ISO-8859-1/latin1 labels.
    Windows1252,
    /// UTF-16: byte-order mark, else big-endian.
    Utf16,
    /// UTF-16, little-endian.
    Utf16Le,
    /// UTF-16, big-endian.
    Utf16Be,
}

impl Charset {
    /// The charset for a `charset=` label (case-insensitive).
    pub(crate) fn from_label(label: &str) -> Charset {
        match label.to_ascii_lowercase().as_str() {
            "iso-8859-1" | "iso8859-1" | "iso_8859-1" | "latin1" | "latin-1" | "l1" | "cp819"
            | "windows-1252" | "cp1252" | "x-cp1252" => Charset::Windows1252,
            "utf-16" | "utf16" => Charset::Utf16,
            "utf-16le" => Charset::Utf16Le,
            "utf-16be" => Charset::Utf16Be,
            // utf-8, us-ascii, ascii and the rest
            _ => Charset::Utf8,
        }
    }

    /// How many bytes of input give at least `max_text` bytes of UTF-8 (if the file has them).
    fn input_bytes(self, max_text: usize) -> usize {
        match self {
            Charset::Utf8 | Charset::Windows1252 => max_text.saturating_add(3),
            // Two bytes per unit, each giving at least one byte of UTF-8; and the BOM.
            Charset::Utf16 | Charset::Utf16Le | Charset::Utf16Be => {
                max_text.saturating_mul(2).saturating_add(2)
            }
        }
    }
}

/// Reads the start of the file at `path` and decodes it, cut to at most `max_text` bytes.
pub(crate) fn read_text(path: &Path, charset: Charset, max_text: usize) -> io::Result<String> {
    // Enough for whichever byte-order mark turns up.
    let want = charset
        .input_bytes(max_text)
        .max(Charset::Utf16.input_bytes(max_text));
    let mut bytes = Vec::new();
    File::open(path)?
        .take(want as u64)
        .read_to_end(&mut bytes)?;
    Ok(decode(&bytes, charset, max_text))
}

/// Decodes `bytes`, a byte-order mark taking precedence over `charset`, and cuts the text to at
/// most `max_text` bytes at a character boundary.
pub(crate) fn decode(bytes: &[u8], charset: Charset, max_text: usize) -> String {
    let (charset, body) = match bytes {
        [0xEF, 0xBB, 0xBF, rest @ ..] => (Charset::Utf8, rest),
        [0xFF, 0xFE, rest @ ..] => (Charset::Utf16Le, rest),
        [0xFE, 0xFF, rest @ ..] => (Charset::Utf16Be, rest),
        _ => (charset, bytes),
    };
    // Each branch looks at no more input than can make `max_text` bytes of text.
    let text = match charset {
        Charset::Utf8 => {
            let body = &body[..body.len().min(max_text.saturating_add(3))];
            String::from_utf8_lossy(body).into_owned()
        }
        Charset::Windows1252 => body[..body.len().min(max_text)]
            .iter()
            .map(|&b| windows_1252(b))
            .collect(),
        Charset::Utf16 | Charset::Utf16Be => utf16(body, max_text, u16::from_be_bytes),
        Charset::Utf16Le => utf16(body, max_text, u16::from_le_bytes),
    };
    cut(text, max_text)
}

fn utf16(body: &[u8], max_text: usize, unit: fn([u8; 2]) -> u16) -> String {
    let body = &body[..body.len().min(max_text.saturating_mul(2))];
    let units = body.chunks_exact(2).map(|pair| unit([pair[0], pair[1]]));
    char::decode_utf16(units)
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

/// The characters windows-1252 puts at 0x80–0x9F (U+FFFD where it has none).
const CP1252_HIGH: [char; 32] = [
    '€', '\u{FFFD}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{FFFD}', 'Ž',
    '\u{FFFD}', '\u{FFFD}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{FFFD}',
    'ž', 'Ÿ',
];

fn windows_1252(b: u8) -> char {
    match b {
        0x80..=0x9F => CP1252_HIGH[usize::from(b - 0x80)],
        _ => char::from(b),
    }
}

/// Cuts `text` to at most `max` bytes at a character boundary.
pub(crate) fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// The child's output as text: lossy UTF-8 (it should be UTF-8 already), cut to `max` bytes.
pub(crate) fn utf8_cut(bytes: Vec<u8>, max: usize) -> String {
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    cut(text, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_is_cut_at_a_char_boundary() {
        let s = "aé€😀";
        for max in 0..=s.len() + 1 {
            let out = decode(s.as_bytes(), Charset::Utf8, max);
            assert!(out.len() <= max);
            assert!(s.starts_with(&out));
            assert!(s.len() <= max || out.len() + 4 > max, "{max}: {out:?}");
        }
    }

    #[test]
    fn latin1_and_windows_1252() {
        let bytes = b"caf\xe9 \x80 \x93ok\x94";
        assert_eq!(decode(bytes, Charset::Windows1252, 100), "café € “ok”");
        assert_eq!(Charset::from_label("ISO-8859-1"), Charset::Windows1252);
        assert_eq!(Charset::from_label("US-ASCII"), Charset::Utf8);
        // "é" takes two bytes: not cut in half.
        assert_eq!(decode(bytes, Charset::Windows1252, 4), "caf");
    }

    #[test]
    fn utf16_with_and_without_bom() {
        let le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("hé".encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        assert_eq!(decode(&le, Charset::Utf8, 100), "hé");
        let be: Vec<u8> = "hé".encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(decode(&be, Charset::Utf16, 100), "hé");
        assert_eq!(decode(&be, Charset::Utf16Be, 2), "h");
        let bom8 = b"\xEF\xBB\xBFhi";
        assert_eq!(decode(bom8, Charset::Windows1252, 100), "hi");
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(decode(b"a\xFFb", Charset::Utf8, 100), "a\u{FFFD}b");
    }
}
