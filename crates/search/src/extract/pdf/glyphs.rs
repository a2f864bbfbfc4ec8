//! Character codes of simple fonts to Unicode: the standard encodings (PDF 32000-1, Annex D)
//! and glyph names (the Adobe Glyph List's conventions: `uniXXXX`, `uXXXX`, ligatures with
//! `_`, suffixes after `.`; the names real fonts use, accented letters composed from their
//! base letter and accent).

/// A simple font's base encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// `StandardEncoding` (also what a Type 1 font's built-in encoding is taken to be).
    Standard,
    /// `WinAnsiEncoding`.
    WinAnsi,
    /// `MacRomanEncoding`.
    MacRoman,
}

impl Base {
    /// The encoding named `name`.
    pub fn from_name(name: &[u8]) -> Option<Base> {
        match name {
            b"WinAnsiEncoding" => Some(Base::WinAnsi),
            b"MacRomanEncoding" | b"MacExpertEncoding" => Some(Base::MacRoman),
            b"StandardEncoding" => Some(Base::Standard),
            _ => None,
        }
    }

    /// The character of `code`, if the encoding has one.
    pub fn char(self, code: u8) -> Option<char> {
        match self {
            Base::WinAnsi => win_ansi(code),
            Base::MacRoman => mac_roman(code),
            Base::Standard => standard(code),
        }
    }
}

fn win_ansi(code: u8) -> Option<char> {
    match code {
        0..=0x1f => None,
        // WinAnsi's bullet for the undefined codes, a plain hyphen and space for 0xAD, 0xA0.
        0x7f | 0x81 | 0x8d | 0x8f | 0x90 | 0x9d => Some('•'),
        0xa0 => Some(' '),
        0xad => Some('-'),
        _ => {
            let bytes = [code];
            let (text, _, _) = encoding_rs::WINDOWS_1252.decode(&bytes);
            text.chars().next()
        }
    }
}

fn mac_roman(code: u8) -> Option<char> {
    match code {
        0..=0x1f | 0x7f => None,
        0xca => Some(' '),
        _ => {
            let bytes = [code];
            let (text, _, _) = encoding_rs::MACINTOSH.decode(&bytes);
            text.chars().next()
        }
    }
}

fn standard(code: u8) -> Option<char> {
    Some(match code {
        0x27 => '’',
        0x60 => '‘',
        0x20..=0x7e => code as char,
        0xa1 => '¡',
        0xa2 => '¢',
        0xa3 => '£',
        0xa4 => '⁄',
        0xa5 => '¥',
        0xa6 => 'ƒ',
        0xa7 => '§',
        0xa8 => '¤',
        0xa9 => '\'',
        0xaa => '“',
        0xab => '«',
        0xac => '‹',
        0xad => '›',
        0xae => '\u{fb01}',
        0xaf => '\u{fb02}',
        0xb1 => '–',
        0xb2 => '†',
        0xb3 => '‡',
        0xb4 => '·',
        0xb6 => '¶',
        0xb7 => '•',
        0xb8 => '‚',
        0xb9 => '„',
        0xba => '”',
        0xbb => '»',
        0xbc => '…',
        0xbd => '‰',
        0xbf => '¿',
        0xc1 => '`',
        0xc2 => '´',
        0xc3 => 'ˆ',
        0xc4 => '˜',
        0xc5 => '¯',
        0xc6 => '˘',
        0xc7 => '˙',
        0xc8 => '¨',
        0xca => '˚',
        0xcb => '¸',
        0xcd => '˝',
        0xce => '˛',
        0xcf => 'ˇ',
        0xd0 => '—',
        0xe1 => 'Æ',
        0xe3 => 'ª',
        0xe8 => 'Ł',
        0xe9 => 'Ø',
        0xea => 'Œ',
        0xeb => 'º',
        0xf1 => 'æ',
        0xf5 => 'ı',
        0xf8 => 'ł',
        0xf9 => 'ø',
        0xfa => 'œ',
        0xfb => 'ß',
        _ => return None,
    })
}

/// The text of a glyph name, appended to `out`; false when the name is unknown.
pub fn push_glyph(name: &[u8], out: &mut String) -> bool {
    let Ok(name) = std::str::from_utf8(name) else {
        return false;
    };
    // "a.sc", "one.oldstyle": the part before the first period.
    let name = name.split('.').next().unwrap_or(name);
    if name.contains('_') {
        let before = out.len();
        for part in name.split('_') {
            if !push_one(part, out) {
                out.truncate(before);
                return false;
            }
        }
        return true;
    }
    push_one(name, out)
}

fn push_one(name: &str, out: &mut String) -> bool {
    if let Some(c) = simple_name(name) {
        out.push_str(c);
        return true;
    }
    let bytes = name.as_bytes();
    if bytes.len() == 1 && bytes[0].is_ascii_alphanumeric() {
        out.push(bytes[0] as char);
        return true;
    }
    // uniXXXX[XXXX…]: UTF-16 code units, four hex digits each.
    if let Some(hex) = name.strip_prefix("uni") {
        if hex.len() >= 4 && hex.len() % 4 == 0 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            let units: Vec<u16> = (0..hex.len() / 4)
                .filter_map(|i| u16::from_str_radix(&hex[i * 4..i * 4 + 4], 16).ok())
                .collect();
            let before = out.len();
            for c in char::decode_utf16(units) {
                match c {
                    Ok(c) => out.push(c),
                    Err(_) => {
                        out.truncate(before);
                        return false;
                    }
                }
            }
            return true;
        }
    }
    // uXXXX to uXXXXXX: one code point.
    if let Some(hex) = name.strip_prefix('u') {
        if (4..=6).contains(&hex.len()) && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            if let Some(c) = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32) {
                out.push(c);
                return true;
            }
        }
    }
    // A letter and an accent: "eacute", "Scaron", "idieresis", "dotlessicircumflex"…
    for (accent, mark) in ACCENTS {
        if let Some(base) = name.strip_suffix(accent) {
            let base = match base {
                "dotlessi" => Some('ı'),
                _ if base.len() == 1 && base.as_bytes()[0].is_ascii_alphabetic() => {
                    Some(base.as_bytes()[0] as char)
                }
                _ => None,
            };
            if let Some(c) = base.and_then(|b| unicode_normalization::char::compose(b, *mark)) {
                out.push(c);
                return true;
            }
        }
    }
    false
}

const ACCENTS: &[(&str, char)] = &[
    ("acute", '\u{301}'),
    ("grave", '\u{300}'),
    ("circumflex", '\u{302}'),
    ("dieresis", '\u{308}'),
    ("tilde", '\u{303}'),
    ("ring", '\u{30a}'),
    ("cedilla", '\u{327}'),
    ("caron", '\u{30c}'),
    ("breve", '\u{306}'),
    ("macron", '\u{304}'),
    ("ogonek", '\u{328}'),
    ("dotaccent", '\u{307}'),
    ("hungarumlaut", '\u{30b}'),
    ("commaaccent", '\u{326}'),
];

/// Names that are not a single letter, `uni…` or a letter with an accent.
fn simple_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "space" | "nbspace" | "nonbreakingspace" => " ",
        "exclam" => "!",
        "quotedbl" => "\"",
        "numbersign" => "#",
        "dollar" => "$",
        "percent" => "%",
        "ampersand" => "&",
        "quotesingle" => "'",
        "quoteright" => "’",
        "quoteleft" => "‘",
        "parenleft" => "(",
        "parenright" => ")",
        "asterisk" | "asteriskmath" => "*",
        "plus" => "+",
        "comma" => ",",
        "hyphen" | "sfthyphen" | "softhyphen" => "-",
        "minus" => "−",
        "period" => ".",
        "slash" => "/",
        "zero" => "0",
        "one" => "1",
        "two" => "2",
        "three" => "3",
        "four" => "4",
        "five" => "5",
        "six" => "6",
        "seven" => "7",
        "eight" => "8",
        "nine" => "9",
        "colon" => ":",
        "semicolon" => ";",
        "less" => "<",
        "equal" => "=",
        "greater" => ">",
        "question" => "?",
        "at" => "@",
        "bracketleft" => "[",
        "backslash" => "\\",
        "bracketright" => "]",
        "asciicircum" => "^",
        "underscore" => "_",
        "grave" => "`",
        "braceleft" => "{",
        "bar" => "|",
        "braceright" => "}",
        "asciitilde" => "~",
        "exclamdown" => "¡",
        "cent" => "¢",
        "sterling" => "£",
        "fraction" => "⁄",
        "yen" => "¥",
        "florin" => "ƒ",
        "section" => "§",
        "currency" => "¤",
        "quotedblleft" => "“",
        "quotedblright" => "”",
        "quotesinglbase" => "‚",
        "quotedblbase" => "„",
        "guillemotleft" | "guillemetleft" => "«",
        "guillemotright" | "guillemetright" => "»",
        "guilsinglleft" => "‹",
        "guilsinglright" => "›",
        "fi" => "fi",
        "fl" => "fl",
        "ff" => "ff",
        "ffi" => "ffi",
        "ffl" => "ffl",
        "endash" => "–",
        "emdash" => "—",
        "dagger" => "†",
        "daggerdbl" => "‡",
        "periodcentered" | "middot" => "·",
        "paragraph" => "¶",
        "bullet" => "•",
        "ellipsis" => "…",
        "perthousand" => "‰",
        "questiondown" => "¿",
        "acute" => "´",
        "circumflex" => "ˆ",
        "tilde" => "˜",
        "macron" => "¯",
        "breve" => "˘",
        "dotaccent" => "˙",
        "dieresis" => "¨",
        "ring" => "˚",
        "cedilla" => "¸",
        "hungarumlaut" => "˝",
        "ogonek" => "˛",
        "caron" => "ˇ",
        "AE" => "Æ",
        "ae" => "æ",
        "OE" => "Œ",
        "oe" => "œ",
        "Oslash" => "Ø",
        "oslash" => "ø",
        "Lslash" => "Ł",
        "lslash" => "ł",
        "germandbls" => "ß",
        "dotlessi" => "ı",
        "dotlessj" => "ȷ",
        "Eth" => "Ð",
        "eth" => "ð",
        "Thorn" => "Þ",
        "thorn" => "þ",
        "ordfeminine" => "ª",
        "ordmasculine" => "º",
        "copyright" => "©",
        "registered" => "®",
        "trademark" => "™",
        "degree" => "°",
        "plusminus" => "±",
        "multiply" => "×",
        "divide" => "÷",
        "mu" | "mu1" => "µ",
        "onehalf" => "½",
        "onequarter" => "¼",
        "threequarters" => "¾",
        "onesuperior" => "¹",
        "twosuperior" => "²",
        "threesuperior" => "³",
        "logicalnot" => "¬",
        "brokenbar" => "¦",
        "euro" | "Euro" => "€",
        "lessequal" => "≤",
        "greaterequal" => "≥",
        "notequal" => "≠",
        "approxequal" => "≈",
        "infinity" => "∞",
        "element" => "∈",
        "summation" => "∑",
        "product" => "∏",
        "radical" => "√",
        "partialdiff" => "∂",
        "integral" => "∫",
        "arrowright" => "→",
        "arrowleft" => "←",
        "arrowup" => "↑",
        "arrowdown" => "↓",
        "arrowboth" => "↔",
        "similar" => "∼",
        "prime" => "′",
        "Alpha" => "Α",
        "Beta" => "Β",
        "Gamma" => "Γ",
        "Delta" => "Δ",
        "Theta" => "Θ",
        "Lambda" => "Λ",
        "Pi" => "Π",
        "Sigma" => "Σ",
        "Phi" => "Φ",
        "Psi" => "Ψ",
        "Omega" => "Ω",
        "alpha" => "α",
        "beta" => "β",
        "gamma" => "γ",
        "delta" => "δ",
        "epsilon" => "ε",
        "zeta" => "ζ",
        "eta" => "η",
        "theta" => "θ",
        "iota" => "ι",
        "kappa" => "κ",
        "lambda" => "λ",
        "nu" => "ν",
        "xi" => "ξ",
        "pi" => "π",
        "rho" => "ρ",
        "sigma" => "σ",
        "tau" => "τ",
        "upsilon" => "υ",
        "phi" => "φ",
        "chi" => "χ",
        "psi" => "ψ",
        "omega" => "ω",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glyph(name: &str) -> Option<String> {
        let mut out = String::new();
        push_glyph(name.as_bytes(), &mut out).then_some(out)
    }

    #[test]
    fn glyph_names() {
        assert_eq!(glyph("a").as_deref(), Some("a"));
        assert_eq!(glyph("quoteright").as_deref(), Some("’"));
        assert_eq!(glyph("eacute").as_deref(), Some("é"));
        assert_eq!(glyph("Scaron").as_deref(), Some("Š"));
        assert_eq!(glyph("fi").as_deref(), Some("fi"));
        assert_eq!(glyph("f_f_i").as_deref(), Some("ffi"));
        assert_eq!(glyph("uni00E9").as_deref(), Some("é"));
        assert_eq!(glyph("u1F600").as_deref(), Some("😀"));
        assert_eq!(glyph("one.oldstyle").as_deref(), Some("1"));
        assert_eq!(glyph("g123"), None);
        assert_eq!(glyph(".notdef"), None);
    }

    #[test]
    fn encodings() {
        assert_eq!(Base::WinAnsi.char(0xe9), Some('é'));
        assert_eq!(Base::WinAnsi.char(0x93), Some('“'));
        assert_eq!(Base::MacRoman.char(0x8e), Some('é'));
        assert_eq!(Base::Standard.char(0xae), Some('\u{fb01}'));
        assert_eq!(Base::Standard.char(b'A'), Some('A'));
    }
}
