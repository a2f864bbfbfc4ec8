//! arca's own PDF text extractor: reads only what text needs, lazily, from a well-formed file.
//!
//! [`extract`] opens the cross-reference sections (tables, streams, `/Prev` chains, hybrid
//! files; damaged ones are repaired by scanning the file for its objects), walks the page
//! tree, decodes each page's content streams (Flate and LZW with PNG predictors, ASCIIHex,
//! ASCII85) and interprets the text operators (`Tj`, `TJ`, `'`, `"`, positioning, form
//! XObjects), turning codes into Unicode through each font's `ToUnicode` CMap or its encoding
//! (standard encodings with `Differences` and glyph names; composite fonts with
//! `Identity-H`/`-V` or embedded CMaps). Word and line breaks come from where strings are
//! placed. Annotations' appearances (form field values) follow each page's content. Images
//! and font programs are never read.
//!
//! What it does not do it refuses with [`PdfError::Unsupported`] (encryption, other filters,
//! predefined CMaps, deeply nested forms), and a file it cannot read is [`PdfError::Corrupt`]:
//! the caller then falls back to a complete reader (pdf-extract, see `child.rs`), so the fast
//! path never makes text worse.
//!
//! A text it read but that looks wrong (many glyphs without Unicode text, private-use
//! characters, words that run together or fall apart: see [`Quality`]) is
//! [`PdfError::Doubtful`], and falls back the same way; the caller keeps the doubted text
//! only when the complete reader finds none.

mod file;
mod font;
mod glyphs;
mod quality;
mod syntax;
#[cfg(test)]
pub(crate) mod testpdf;
mod text;

pub use quality::Quality;

/// Why the fast extractor gave up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PdfError {
    /// The file is not a PDF this extractor can read (a damaged cross-reference table, a
    /// stray token in an object…).
    Corrupt(String),
    /// The file uses something this extractor leaves to a complete reader.
    Unsupported(String),
    /// The file was read, but its text looks wrong (see [`Quality::doubt`]).
    Doubtful(Box<Doubted>),
}

/// A text [`extract`] read but does not trust, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doubted {
    /// The text as read.
    pub text: String,
    /// What was counted while reading it.
    pub quality: Quality,
    /// Why it looks wrong.
    pub reason: String,
}

impl PdfError {
    fn corrupt(detail: impl Into<String>) -> PdfError {
        PdfError::Corrupt(detail.into())
    }
}

impl std::fmt::Display for PdfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PdfError::Corrupt(d) => write!(f, "corrupt: {d}"),
            PdfError::Unsupported(d) => write!(f, "unsupported: {d}"),
            PdfError::Doubtful(d) => write!(f, "doubtful: {} ({})", d.reason, d.quality),
        }
    }
}

/// The text of the PDF in `data`, at most `max` bytes of it (cut at a character boundary);
/// pages in order, a line break between lines and pages, a space between words. A text that
/// looks wrong is [`PdfError::Doubtful`].
pub fn extract(data: &[u8], max: usize) -> Result<String, PdfError> {
    let (text, quality) = extract_with_quality(data, max)?;
    match quality.doubt() {
        None => Ok(text),
        Some(reason) => Err(PdfError::Doubtful(Box::new(Doubted {
            text,
            quality,
            reason,
        }))),
    }
}

/// [`extract`] without the quality gate: the text, however it looks, and its [`Quality`]
/// (for measurements and the fuzz target).
pub fn extract_with_quality(data: &[u8], max: usize) -> Result<(String, Quality), PdfError> {
    let file = file::File::open(data)?;
    let (text, mut quality) = text::Extraction::new(&file, max).run()?;
    quality.count_text(&text);
    Ok((text, quality))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_well_mapped_text_passes_the_quality_gate() {
        let text = extract(&testpdf::good(), 1 << 20).unwrap();
        assert!(text.starts_with(testpdf::PROSE), "{text}");
        let (_, quality) = extract_with_quality(&testpdf::good(), 1 << 20).unwrap();
        assert_eq!(quality.unmapped, 0, "{quality}");
    }

    #[test]
    fn a_text_of_unmapped_glyphs_is_doubtful() {
        let pdf = testpdf::unmapped();
        let Err(PdfError::Doubtful(doubted)) = extract(&pdf, 1 << 20) else {
            panic!("not doubted: {:?}", extract(&pdf, 1 << 20));
        };
        assert!(
            doubted.reason.contains("no Unicode text"),
            "{}",
            doubted.reason
        );
        assert!(
            doubted.quality.unmapped_share() > 0.7,
            "{}",
            doubted.quality
        );
        // The text it read is kept, for when the complete reader does no better.
        let text = &doubted.text;
        assert!(text.starts_with("arra"), "{text}");
        assert!(text.chars().all(|c| "arc \n".contains(c)), "{text}");
        assert!(PdfError::Doubtful(doubted)
            .to_string()
            .starts_with("doubtful: "));
    }
}
