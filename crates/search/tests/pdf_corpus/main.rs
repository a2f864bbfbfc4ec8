//! arca's PDF text, compared word by word with poppler's `pdftotext` on a corpus of real PDFs
//! of many producers and ages (`manifest.tsv`: PyPI sdists of PDF libraries, fetched by
//! `scripts/pdf-corpus` into `~/.cache/arca-pdf-corpus`; the seven PDFs of
//! `/work/shared/corpus/pdf` when present; and variants of them made here: broken
//! cross-reference tables, fonts stripped of their `ToUnicode` maps).
//!
//! For each file it measures the word-level F1 against `pdftotext` of
//! - the fast path alone (`pdf::extract_with_quality`), and
//! - what indexing stores (`pdf_text_in_process`: the fast path behind its quality gate, else
//!   pdf-extract),
//!
//! prints a table, and asserts that the stored text's F1 reaches the file's floor in the
//! manifest (measured, rounded down) and that a fast-path text with the wrong letters never
//! reaches the index unchecked: the fast path refused it or the quality gate doubted it.
//! Letters, not words, decide that: where the two readers split words differently, pdftotext
//! is as often the one that is wrong (it spaces out letters placed one by one), so a low
//! word F1 alone does not say the fast path read the file badly.
//!
//! Without the corpus or `pdftotext` it skips, unless `ARCA_REQUIRE_PDF_CORPUS` is set
//! (`scripts/test` sets it).
//!
//! ```sh
//! scripts/pdf-corpus && cargo test -p arca-search --test pdf_corpus -- --nocapture
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use arca_search::extract::{pdf, pdf_text_in_process};

const MANIFEST: &str = include_str!("manifest.tsv");
const SHARED: &str = "/work/shared/corpus/pdf";
/// Texts are compared whole: far more than any corpus file holds.
const MAX: usize = 64 << 20;
/// A fast-path text whose letters score below this must not be indexed unchecked.
const BAD_LETTERS: f64 = 0.75;
/// Files with fewer words than this are too small to judge (as for the quality gate).
const JUDGED_WORDS: usize = 50;

/// One corpus file: where it is, what it is, and the floor its stored text must reach.
struct Entry {
    name: String,
    path: PathBuf,
    sha256: Option<String>,
    producer: String,
    features: String,
    floor: f64,
    /// Made from another file by this change.
    variant: Option<Variant>,
}

/// How a variant is made from its source.
#[derive(Clone, Copy, Debug)]
enum Variant {
    /// Every cross-reference offset is wrong: see [`break_xref`].
    BrokenXref,
    /// No font has a `ToUnicode` map: see [`strip_to_unicode`].
    NoToUnicode,
}

fn cache_dir() -> PathBuf {
    match std::env::var_os("ARCA_PDF_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/arca-pdf-corpus"),
    }
}

fn entries() -> Vec<Entry> {
    let files = cache_dir().join("files");
    let mut out = Vec::new();
    for line in MANIFEST.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        let entry = |path: PathBuf, sha: &str, producer: &str, features: &str, floor: &str| Entry {
            name: cols[1].to_owned(),
            path,
            sha256: (!sha.is_empty()).then(|| sha.to_owned()),
            producer: producer.to_owned(),
            features: features.to_owned(),
            floor: floor.parse().unwrap_or_else(|_| panic!("floor of {line}")),
            variant: None,
        };
        match cols[0] {
            // file name archive path sha256 license producer features floor
            "file" => out.push(entry(
                files.join(cols[1]),
                cols[4],
                cols[6],
                cols[7],
                cols[8],
            )),
            // shared name sha256 producer features floor
            "shared" => out.push(entry(
                Path::new(SHARED).join(cols[1]),
                cols[2],
                cols[3],
                cols[4],
                cols[5],
            )),
            // variant name source-name kind floor: the source, changed as kind says
            "variant" => {
                let source = out
                    .iter()
                    .find(|e| e.name == cols[2])
                    .unwrap_or_else(|| panic!("no {} before {line}", cols[2]));
                let variant = match cols[3] {
                    "broken-xref" => Variant::BrokenXref,
                    "no-tounicode" => Variant::NoToUnicode,
                    other => panic!("unknown variant {other} in {line}"),
                };
                out.push(Entry {
                    name: cols[1].to_owned(),
                    path: source.path.clone(),
                    sha256: source.sha256.clone(),
                    producer: source.producer.clone(),
                    features: format!("{},{}", source.features, cols[3]),
                    floor: cols[4].parse().unwrap(),
                    variant: Some(variant),
                });
            }
            _ => {}
        }
    }
    out
}

/// The file with every cross-reference offset off: 16 bytes of comment inserted after the
/// header line, so each object lies 16 bytes after where the table says (what a careless
/// edit or a transfer that rewrote line endings leaves).
fn break_xref(data: &[u8]) -> Vec<u8> {
    let header_end = data.iter().position(|&b| b == b'\n').map_or(0, |p| p + 1);
    let mut out = data[..header_end].to_vec();
    out.extend_from_slice(b"%arca broken xr\n");
    out.extend_from_slice(&data[header_end..]);
    out
}

/// The file with no font's `ToUnicode` map found (each key renamed, at the same length, so
/// that no offset moves): what a writer that leaves them out makes, common for composite
/// fonts. Keys inside compressed object streams stay as they are.
fn strip_to_unicode(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    let key = b"/ToUnicode";
    let mut at = 0;
    while let Some(p) = out[at..].windows(key.len()).position(|w| w == key) {
        out[at + p + key.len() - 1] = b'X';
        at += p + key.len();
    }
    out
}

/// Lower-cased words with the punctuation around them trimmed.
fn words(text: &str) -> HashMap<String, usize> {
    let mut bag = HashMap::new();
    for w in text.split_whitespace() {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric());
        if !w.is_empty() {
            *bag.entry(w.to_lowercase()).or_insert(0) += 1;
        }
    }
    bag
}

/// Word-level F1 of `text` against `reference` (bags of words; 1 when both are empty).
fn f1(text: &str, reference: &str) -> f64 {
    let (got, want) = (words(text), words(reference));
    let (n_got, n_want): (usize, usize) = (got.values().sum(), want.values().sum());
    if n_got == 0 && n_want == 0 {
        return 1.0;
    }
    let common: usize = got
        .iter()
        .map(|(w, n)| (*n).min(want.get(w).copied().unwrap_or(0)))
        .sum();
    if common == 0 {
        return 0.0;
    }
    let (p, r) = (common as f64 / n_got as f64, common as f64 / n_want as f64);
    2.0 * p * r / (p + r)
}

/// F1 of the letter pairs (adjacent alphanumeric characters, lower-cased, white space and
/// punctuation dropped) of `text` against `reference`: what was read, however it was split.
fn letters_f1(text: &str, reference: &str) -> f64 {
    fn pairs(text: &str) -> HashMap<(char, char), usize> {
        let letters: Vec<char> = text
            .chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect();
        let mut bag = HashMap::new();
        for w in letters.windows(2) {
            *bag.entry((w[0], w[1])).or_insert(0) += 1;
        }
        bag
    }
    let (got, want) = (pairs(text), pairs(reference));
    let (n_got, n_want): (usize, usize) = (got.values().sum(), want.values().sum());
    let common: usize = got
        .iter()
        .map(|(p, n)| (*n).min(want.get(p).copied().unwrap_or(0)))
        .sum();
    if n_got + n_want == 0 {
        return 1.0;
    }
    2.0 * common as f64 / (n_got + n_want) as f64
}

fn pdftotext(path: &Path) -> Option<String> {
    let out = Command::new("pdftotext")
        .args(["-q", "-enc", "UTF-8"])
        .arg(path)
        .arg("-")
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(data))
}

#[test]
fn fast_path_words_match_pdftotext() {
    let required = std::env::var_os("ARCA_REQUIRE_PDF_CORPUS").is_some();
    let entries: Vec<Entry> = entries()
        .into_iter()
        .filter(|e| e.path.exists() || !e.path.starts_with(SHARED))
        .collect();
    let missing: Vec<&str> = entries
        .iter()
        .filter(|e| !e.path.exists())
        .map(|e| e.name.as_str())
        .collect();
    let has_pdftotext = Command::new("pdftotext").arg("-v").output().is_ok();
    if !missing.is_empty() || !has_pdftotext {
        let why = if has_pdftotext {
            format!(
                "{} corpus files missing (run scripts/pdf-corpus)",
                missing.len()
            )
        } else {
            "pdftotext missing (apt-get install poppler-utils)".to_owned()
        };
        assert!(!required, "ARCA_REQUIRE_PDF_CORPUS is set but {why}");
        eprintln!("skipped: {why}");
        return;
    }
    let mut failures = Vec::new();
    println!(
        "{:<44} {:<34} {:<22} {:>6} {:>6} {:>5}  fast path",
        "file", "producer", "features", "words", "stored", "floor"
    );
    let mut bad_letters = 0;
    for e in &entries {
        let mut data = std::fs::read(&e.path).unwrap();
        if let Some(want) = &e.sha256 {
            assert_eq!(
                &sha256_hex(&data),
                want,
                "{}: not the manifest's file",
                e.name
            );
        }
        // A variant is compared with pdftotext's text of its intact source: its content is
        // the same (and pdftotext's own repair does not always find it).
        let reference = pdftotext(&e.path).unwrap();
        match e.variant {
            Some(Variant::BrokenXref) => data = break_xref(&data),
            Some(Variant::NoToUnicode) => data = strip_to_unicode(&data),
            None => {}
        }
        let n_words: usize = words(&reference).values().sum();
        let (letters, fast) = match pdf::extract_with_quality(&data, MAX) {
            Ok((text, quality)) => {
                let (score, letters) = (f1(&text, &reference), letters_f1(&text, &reference));
                let verdict = match quality.doubt() {
                    Some(why) => format!("doubted: {why}"),
                    None => "trusted".to_owned(),
                };
                (
                    Some(letters),
                    format!("F1 {score:.3}, letters {letters:.3}, {verdict}"),
                )
            }
            Err(err) => (None, format!("refused: {err}")),
        };
        let stored = pdf_text_in_process(&data, MAX);
        let stored_f1 = match &stored {
            Ok(text) => f1(text, &reference),
            Err(_) => 0.0,
        };
        println!(
            "{:<44} {:<34} {:<22} {:>6} {:>6.3} {:>5.2}  {}",
            e.name,
            e.producer.chars().take(34).collect::<String>(),
            e.features,
            n_words,
            stored_f1,
            e.floor,
            fast
        );
        if stored_f1 < e.floor {
            failures.push(format!(
                "{}: stored text F1 {stored_f1:.3} < floor {} ({:?})",
                e.name,
                e.floor,
                stored.err()
            ));
        }
        let Some(letters) = letters.filter(|_| n_words >= JUDGED_WORDS) else {
            continue;
        };
        if letters < BAD_LETTERS {
            bad_letters += 1;
            if pdf::extract(&data, MAX).is_ok() {
                failures.push(format!(
                    "{}: the fast path's letters score {letters:.3} yet passed the quality gate",
                    e.name
                ));
            }
        }
    }
    println!("{bad_letters} fast-path texts with wrong letters, all caught unless listed");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn f1_counts_words_not_layout() {
    assert_eq!(f1("Hello, world!\n", "hello world"), 1.0);
    assert_eq!(f1("", ""), 1.0);
    assert_eq!(f1("a b", "c d"), 0.0);
    let half = f1("a b", "a c");
    assert!((half - 0.5).abs() < 1e-9, "{half}");
    assert_eq!(letters_f1("D o u b l e quote", "Double quote."), 1.0);
    assert!(letters_f1("x 2 f3; 3g", "x2 ∈ {3, −3}") < 0.75);
}
