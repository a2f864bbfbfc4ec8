//! How far the fast path's text can be trusted: a wrong text raises no error by itself, so
//! [`Quality`] counts what betrays one, and [`Quality::doubt`] says when the text should be
//! left to the complete reader instead.
//!
//! The signs, each measured on the corpus in `crates/search/tests/pdf_corpus/`:
//! - codes without Unicode text (no `ToUnicode` entry, a glyph name nobody knows, an
//!   `Identity-H` font without `ToUnicode`): their text is lost;
//! - replacement characters (U+FFFD) and private-use characters in the text: a `ToUnicode`
//!   CMap that maps to nothing readable;
//! - words that are implausibly long on average (word breaks were lost: the text runs
//!   together) or implausibly short (every glyph placed on its own: the letters fall apart).

/// Counts [`super::extract`] keeps while it reads a file, and of the text it produced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quality {
    /// Character codes shown (every byte or multi-byte code of every string drawn).
    pub codes: u64,
    /// Codes shown whose font gives them no Unicode text.
    pub unmapped: u64,
    /// Characters in the text other than white space.
    pub chars: u64,
    /// Of [`Quality::chars`], replacement (U+FFFD) and private-use characters.
    pub suspicious: u64,
    /// Words in the text (runs of characters between white space).
    pub words: u64,
    /// Of [`Quality::words`], those without a character of a script written without spaces
    /// between words (Chinese, Japanese, Thai…): the ones word lengths are judged on.
    pub spaced_words: u64,
    /// The characters of [`Quality::spaced_words`].
    pub spaced_chars: u64,
}

/// The share of unmapped codes above which the text is doubted.
pub const MAX_UNMAPPED: f64 = 0.10;
/// The share of suspicious characters above which the text is doubted.
pub const MAX_SUSPICIOUS: f64 = 0.10;
/// The mean word length (in characters) above which words are taken to have run together.
pub const MAX_MEAN_WORD: f64 = 25.0;
/// The mean word length below which letters are taken to have fallen apart.
pub const MIN_MEAN_WORD: f64 = 1.6;
/// Word statistics are judged only on at least this many words.
const MIN_WORDS: u64 = 50;
/// Shares are judged only on at least this many codes or characters: a page number of unknown
/// glyphs alone is no reason to read a file again.
const MIN_COUNT: u64 = 20;

impl Quality {
    /// Adds the counts of `text` (characters, suspicious characters, words).
    pub fn count_text(&mut self, text: &str) {
        for word in text.split_whitespace() {
            let (mut chars, mut unspaced) = (0, false);
            for c in word.chars() {
                chars += 1;
                self.suspicious += u64::from(is_suspicious(c));
                unspaced |= is_unspaced(c);
            }
            self.chars += chars;
            self.words += 1;
            if !unspaced {
                self.spaced_words += 1;
                self.spaced_chars += chars;
            }
        }
    }

    /// The share of codes without Unicode text (0 when none were shown).
    pub fn unmapped_share(&self) -> f64 {
        share(self.unmapped, self.codes)
    }

    /// The share of suspicious characters among all characters but white space.
    pub fn suspicious_share(&self) -> f64 {
        share(self.suspicious, self.chars)
    }

    /// The mean length in characters of the words of scripts that space words (0 when there
    /// are none).
    pub fn mean_word(&self) -> f64 {
        share(self.spaced_chars, self.spaced_words)
    }

    /// Why the text looks wrong, or `None` when it looks right (or there is too little text
    /// to tell: an empty text of a scanned page is what a complete reader finds too).
    pub fn doubt(&self) -> Option<String> {
        // Few codes, every one unmapped, count too: the text is then empty.
        let judged = self.codes >= MIN_COUNT || (self.codes > 0 && self.unmapped == self.codes);
        if judged && self.unmapped_share() > MAX_UNMAPPED {
            return Some(format!(
                "{} of {} character codes have no Unicode text",
                self.unmapped, self.codes
            ));
        }
        if self.chars >= MIN_COUNT && self.suspicious_share() > MAX_SUSPICIOUS {
            return Some(format!(
                "{} of {} characters are replacement or private-use characters",
                self.suspicious, self.chars
            ));
        }
        if self.spaced_words >= MIN_WORDS {
            let mean = self.mean_word();
            if mean > MAX_MEAN_WORD {
                return Some(format!(
                    "words of {mean:.1} characters on average run together"
                ));
            }
            if mean < MIN_MEAN_WORD {
                return Some(format!(
                    "words of {mean:.1} characters on average fall apart"
                ));
            }
        }
        None
    }
}

impl std::fmt::Display for Quality {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} codes ({:.1}% unmapped), {} characters ({:.1}% suspicious), {} words of {:.1}",
            self.codes,
            100.0 * self.unmapped_share(),
            self.chars,
            100.0 * self.suspicious_share(),
            self.words,
            self.mean_word()
        )
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// A character of a script written without spaces between words (Thai, Lao, Khmer, Myanmar,
/// Chinese, Japanese), or of Korean, whose syllables are left out of word lengths too.
fn is_unspaced(c: char) -> bool {
    matches!(c,
        '\u{0e00}'..='\u{0eff}' // Thai, Lao
        | '\u{1000}'..='\u{109f}' // Myanmar
        | '\u{1780}'..='\u{17ff}' // Khmer
        | '\u{2e80}'..='\u{9fff}' // CJK radicals, punctuation, kana, unified ideographs
        | '\u{ac00}'..='\u{d7af}' // Hangul syllables
        | '\u{f900}'..='\u{faff}' // CJK compatibility ideographs
        | '\u{ff00}'..='\u{ffef}' // full-width forms
        | '\u{20000}'..='\u{3134f}' // CJK extensions
    )
}

/// A replacement character, or one of the private use areas (a font's own code points).
fn is_suspicious(c: char) -> bool {
    matches!(c, '\u{fffd}' | '\u{e000}'..='\u{f8ff}' | '\u{f0000}'..)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(text: &str, codes: u64, unmapped: u64) -> Quality {
        let mut q = Quality {
            codes,
            unmapped,
            ..Quality::default()
        };
        q.count_text(text);
        q
    }

    const PROSE: &str = "The quick brown fox jumps over the lazy dog and keeps running ";

    #[test]
    fn good_text_is_trusted() {
        let text = PROSE.repeat(20);
        let q = of(&text, text.len() as u64, 3);
        assert_eq!(q.doubt(), None, "{q}");
        // No text at all (a scanned page) is not doubted either.
        assert_eq!(of("", 0, 0).doubt(), None);
    }

    #[test]
    fn unmapped_codes_are_doubted() {
        let text = PROSE.repeat(2);
        let q = of(&text, 1000, 800);
        assert!(q.doubt().unwrap().contains("800 of 1000"), "{q}");
        // A handful of codes, every one unmapped: the text is empty.
        assert!(of("", 5, 5).doubt().is_some());
        // One unknown glyph among a few is not enough.
        assert_eq!(of("Page 12", 7, 1).doubt(), None);
    }

    #[test]
    fn text_of_scripts_without_spaces_is_not_judged_by_word_length() {
        let chinese = "数字保存让记录在格式软件和存储变化时仍可读取数十年。".repeat(4);
        let text = format!("{chinese}\n").repeat(60);
        let q = of(&text, 6000, 0);
        assert_eq!(q.doubt(), None, "{q}");
        assert_eq!(q.spaced_words, 0);
    }

    #[test]
    fn private_use_and_replacement_characters_are_doubted() {
        let text = "\u{f041}\u{f042}\u{f043} \u{fffd}x ".repeat(10);
        let q = of(&text, 60, 0);
        assert!(q.doubt().unwrap().contains("private-use"), "{q}");
    }

    #[test]
    fn implausible_word_lengths_are_doubted() {
        let glued = PROSE.replace(' ', "").repeat(60);
        let glued = (0..60).map(|_| &glued[..40]).collect::<Vec<_>>().join(" ");
        assert!(of(&glued, 2400, 0)
            .doubt()
            .unwrap()
            .contains("run together"));
        let apart = PROSE
            .repeat(2)
            .chars()
            .flat_map(|c| [c, ' '])
            .collect::<String>();
        assert!(of(&apart, 120, 0).doubt().unwrap().contains("fall apart"));
    }
}
