//! The `pdf_text` fuzz target: arca's own PDF text extractor (the fast path of
//! `crates/search/src/extract/pdf/`) on arbitrary bytes.
//!
//! The module is compiled into the target from its source (`#[path]`), not through
//! `arca-search`: it needs only flate2, memchr, encoding_rs and unicode-normalization, while
//! building tantivy and the rest of the search crate with sanitizer instrumentation would
//! take many minutes for no coverage.
//! Nothing may panic; what it returns must respect its limit and its counts must add up.
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/search/src/extract/pdf/mod.rs"]
mod pdf;

/// The text limit: small enough that a long text stops early, as a worker's limit does.
const MAX: usize = 64 << 10;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    match pdf::extract_with_quality(data, MAX) {
        Ok((text, quality)) => {
            assert!(text.len() <= MAX, "{} bytes of text", text.len());
            assert!(quality.unmapped <= quality.codes, "{quality}");
            assert!(quality.suspicious <= quality.chars, "{quality}");
            // The gate decides on these counts alone, the same way every time.
            let gated = pdf::extract(data, MAX);
            match quality.doubt() {
                None => assert_eq!(gated.as_deref(), Ok(text.as_str())),
                Some(_) => assert!(matches!(gated, Err(pdf::PdfError::Doubtful(_)))),
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
