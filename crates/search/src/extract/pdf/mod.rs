//! arca's own PDF text extractor: reads only what text needs, lazily, from a well-formed file.
//!
//! [`extract`] opens the cross-reference sections (tables, streams, `/Prev` chains, hybrid
//! files), walks the page tree, decodes each page's content streams (Flate with PNG
//! predictors, ASCIIHex, ASCII85) and interprets the text operators (`Tj`, `TJ`, `'`, `"`,
//! positioning, form XObjects), turning codes into Unicode through each font's `ToUnicode`
//! CMap or its encoding (standard encodings with `Differences` and glyph names; composite fonts
//! with `Identity-H`/`-V` or embedded CMaps). Word and line breaks come from where strings are
//! placed. Images and font programs are never read.
//!
//! What it does not do it refuses with [`PdfError::Unsupported`] (encryption, LZW and other
//! filters, predefined CMaps, deeply nested forms), and a file it cannot read is
//! [`PdfError::Corrupt`] (no cross-reference repair): the caller then falls back to a complete
//! reader (pdf-extract, see `child.rs`), so the fast path never makes text worse.

mod file;
mod font;
mod glyphs;
mod syntax;
mod text;

/// Why the fast extractor gave up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PdfError {
    /// The file is not a PDF this extractor can read (a damaged cross-reference table, a
    /// stray token in an object…).
    Corrupt(String),
    /// The file uses something this extractor leaves to a complete reader.
    Unsupported(String),
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
        }
    }
}

/// The text of the PDF in `data`, at most `max` bytes of it (cut at a character boundary);
/// pages in order, a line break between lines and pages, a space between words.
pub fn extract(data: &[u8], max: usize) -> Result<String, PdfError> {
    let file = file::File::open(data)?;
    text::Extraction::new(&file, max).run()
}
