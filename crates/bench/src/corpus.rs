//! The search scenario's test data: arXiv records read from the corpus (gzip-compressed JSON
//! Lines), the ids of a run's records (replicas beyond the corpus records, as the 2013 study
//! replicated its 12,000 objects), which records carry which PDF, the Turtle and SPARQL Update
//! bodies sent for them, and each record's fields as a search index would see them (for the
//! expected hit counts).

use std::io::BufRead as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use bytes::Bytes;
use serde::Deserialize;

use crate::driver::mix;
use crate::lucene::{tokens, Doc, Extra};

/// The 2013 study's corpus size: 12,000 objects, replicated tenfold for 120,000.
pub const STUDY_RECORDS: u64 = 12_000;

/// Words every corpus PDF contains and words none contains (the corpus README: every PDF has
/// "university" in its affiliations, none has "fish"); the expected hit count of a query that
/// asks `ALL` for another word in a record with a PDF is unknown.
pub const PDF_TERMS: Extra = Extra::Known {
    present: &["university"],
    absent: &["fish"],
};

const DC: &str = "http://purl.org/dc/elements/1.1/";
const DCTERMS: &str = "http://purl.org/dc/terms/";

/// One author, split into first and last name (`first` may be empty).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Creator {
    /// Given names ("" for a single-token name).
    #[serde(default)]
    pub first: String,
    /// Family name, with particles and suffixes.
    pub last: String,
}

impl Creator {
    /// `Last, First` (just `Last` without a first name), the form `dc:creator` carries.
    pub fn display(&self) -> String {
        if self.first.is_empty() {
            self.last.clone()
        } else {
            format!("{}, {}", self.last, self.first)
        }
    }
}

/// One corpus record (a line of the `.jsonl.gz`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Record {
    /// `arxiv:<arxiv id>`.
    pub id: String,
    /// The arXiv id, e.g. `2503.16793`.
    pub arxiv_id: String,
    /// Title.
    pub title: String,
    /// Abstract (TeX markup kept).
    #[serde(rename = "abstract")]
    pub abstract_: String,
    /// Authors in order.
    #[serde(default)]
    pub creators: Vec<Creator>,
    /// Category codes, primary first.
    #[serde(default)]
    pub subjects: Vec<String>,
    /// English names of the codes that have one.
    #[serde(default)]
    pub subject_labels: Vec<String>,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// The arXiv comments field.
    #[serde(default)]
    pub comment: Option<String>,
}

/// Reads the first `limit` records of a gzip-compressed JSON Lines file (stopping there:
/// the rest is not decompressed). Blank lines are skipped; a bad line is an error naming it.
pub fn read_records(path: &Path, limit: usize) -> anyhow::Result<Vec<Record>> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let reader = std::io::BufReader::new(flate2::read::MultiGzDecoder::new(file));
    let mut out = Vec::with_capacity(limit.min(1 << 20));
    for (n, line) in reader.lines().enumerate() {
        if out.len() >= limit {
            break;
        }
        let line = line.with_context(|| format!("reading {} line {}", path.display(), n + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let rec: Record = serde_json::from_str(&line)
            .with_context(|| format!("{} line {}", path.display(), n + 1))?;
        out.push(rec);
    }
    Ok(out)
}

/// One of the corpus PDFs.
#[derive(Clone, Debug)]
pub struct Pdf {
    /// File name (for `Content-Disposition`).
    pub name: String,
    /// Absolute path (for proxied external content).
    pub path: PathBuf,
    /// The bytes, read once (copy mode).
    pub bytes: Bytes,
}

/// A corpus directory: its records file and its PDFs.
#[derive(Clone, Debug)]
pub struct Corpus {
    /// The `*.jsonl.gz` (the first by name when there are several).
    pub records: PathBuf,
    /// `pdf/*.pdf` sorted by name.
    pub pdfs: Vec<Pdf>,
}

impl Corpus {
    /// Finds the records file and reads the PDFs of `dir` (their bytes only when `read` is set).
    pub fn open(dir: &Path, read: bool) -> anyhow::Result<Corpus> {
        let list = |d: &Path, suffix: &str| -> anyhow::Result<Vec<PathBuf>> {
            let mut v: Vec<PathBuf> = std::fs::read_dir(d)
                .with_context(|| format!("reading the corpus directory {}", d.display()))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.to_string_lossy().ends_with(suffix))
                .collect();
            v.sort();
            Ok(v)
        };
        let Some(records) = list(dir, ".jsonl.gz")?.into_iter().next() else {
            bail!("no *.jsonl.gz in the corpus directory {}", dir.display());
        };
        let mut pdfs = Vec::new();
        for path in list(&dir.join("pdf"), ".pdf")? {
            let path = std::fs::canonicalize(&path)
                .with_context(|| format!("resolving {}", path.display()))?;
            let bytes = if read {
                Bytes::from(
                    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
                )
            } else {
                Bytes::new()
            };
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            pdfs.push(Pdf { name, path, bytes });
        }
        if pdfs.is_empty() {
            bail!("no PDFs in {}", dir.join("pdf").display());
        }
        Ok(Corpus { records, pdfs })
    }
}

/// Record number `i` of a run whose corpus has `base` records: corpus record `i % base`,
/// replica `i / base` (0 = the original).
pub fn source(i: u64, base: u64) -> (usize, u64) {
    let base = base.max(1);
    ((i % base) as usize, i / base)
}

/// The path segment of a record: its arXiv id (characters other than letters, digits, `.`,
/// `-` and `_` replaced by `_`), with `-r<k>` for replica `k` ≥ 1.
pub fn record_id(arxiv_id: &str, replica: u64) -> String {
    let mut id: String = arxiv_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if replica > 0 {
        id.push_str(&format!("-r{replica}"));
    }
    id
}

/// Which PDF corpus record `j` carries, if any: in every block of four consecutive records one
/// (chosen by `seed`) has none, so exactly 75 % of each full block have one; those that do
/// take the `pdfs` files in turn. Replicas carry their original's.
pub fn pdf_for(j: u64, seed: u64, pdfs: usize) -> Option<usize> {
    let block = j / 4;
    let skip = mix(seed ^ 0x7064_6673 ^ mix(block)) % 4;
    let pos = j % 4;
    if pos == skip {
        return None;
    }
    let ordinal = 3 * block + pos - u64::from(pos > skip);
    Some((ordinal % pdfs.max(1) as u64) as usize)
}

/// `s` as the contents of a Turtle (or SPARQL) `"…"` string: `"`, `\`, line feeds, carriage
/// returns and tabs as their escapes, other control characters as `\uXXXX`.
pub fn escape_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

fn literal(s: &str) -> String {
    format!("\"{}\"", escape_literal(s))
}

/// The `dc:identifier` of a record's replica (`arxiv:<id>`, `arxiv:<id>-r<k>`).
pub fn identifier(rec: &Record, replica: u64) -> String {
    if replica == 0 {
        rec.id.clone()
    } else {
        format!("{}-r{replica}", rec.id)
    }
}

/// The record's Dublin Core as Turtle about `<>`: title, abstract, one `dc:creator
/// "Last, First"` per author, subjects (codes and labels), date, identifier, type `Text`, and
/// the comment as `dcterms:description`.
pub fn turtle(rec: &Record, replica: u64) -> String {
    let mut t = format!("@prefix dc: <{DC}> .\n@prefix dcterms: <{DCTERMS}> .\n\n<>");
    let mut first = true;
    let mut add = |pred: &str, values: &mut dyn Iterator<Item = String>| {
        let values: Vec<String> = values.map(|v| literal(&v)).collect();
        if values.is_empty() {
            return;
        }
        t.push_str(if first { " " } else { " ;\n  " });
        first = false;
        t.push_str(pred);
        t.push(' ');
        t.push_str(&values.join(" , "));
    };
    add("dcterms:title", &mut std::iter::once(rec.title.clone()));
    add(
        "dcterms:abstract",
        &mut std::iter::once(rec.abstract_.clone()),
    );
    add("dc:creator", &mut rec.creators.iter().map(Creator::display));
    add(
        "dc:subject",
        &mut rec.subjects.iter().chain(&rec.subject_labels).cloned(),
    );
    add("dc:date", &mut std::iter::once(rec.date.clone()));
    add(
        "dc:identifier",
        &mut std::iter::once(identifier(rec, replica)),
    );
    add("dc:type", &mut std::iter::once("Text".to_string()));
    add("dcterms:description", &mut rec.comment.iter().cloned());
    t.push_str(" .\n");
    t
}

/// The SPARQL Update that replaces a resource's `dcterms:title` with `title`.
pub fn title_update(title: &str) -> String {
    format!(
        "PREFIX dcterms: <{DCTERMS}>\nDELETE {{ <> dcterms:title ?t }}\nINSERT {{ <> dcterms:title {} }}\nWHERE {{ <> dcterms:title ?t }}\n",
        literal(title)
    )
}

/// The record's fields as the server is expected to index them (`TITLE`, `ABSTRACT`,
/// `FIRSTNAME`, `LASTNAME`, `CREATOR`, `SUBJECT`, `DATE`, `IDENTIFIER`, `TYPE`, `DESCRIPTION`;
/// `ALL` is all of them plus, with a PDF, what [`PDF_TERMS`] says of its text).
pub fn doc(rec: &Record, replica: u64, has_pdf: bool) -> Doc {
    let mut d = Doc::default();
    d.add("TITLE", &rec.title);
    d.add("ABSTRACT", &rec.abstract_);
    for c in &rec.creators {
        d.add("FIRSTNAME", &c.first);
        d.add("LASTNAME", &c.last);
        d.add("CREATOR", &c.display());
    }
    for s in rec.subjects.iter().chain(&rec.subject_labels) {
        d.add("SUBJECT", s);
    }
    d.add("DATE", &rec.date);
    d.add("IDENTIFIER", &identifier(rec, replica));
    d.add("TYPE", "Text");
    if let Some(c) = &rec.comment {
        d.add("DESCRIPTION", c);
    }
    if has_pdf {
        d.extra = PDF_TERMS;
    }
    d
}

/// Whether `word` occurs (as a token, case-insensitively) in the record's abstract.
pub fn abstract_has(rec: &Record, word: &str) -> bool {
    tokens(&rec.abstract_).any(|t| t == word)
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn record() -> Record {
        Record {
            id: "arxiv:2503.00001".into(),
            arxiv_id: "2503.00001".into(),
            title: "A \"quoted\" title with \\backslash".into(),
            abstract_: "We study $\\alpha$-fish.\nNew line\r\tand a tab \u{7} bell; naïve «text»."
                .into(),
            creators: vec![
                Creator {
                    first: "James A.".into(),
                    last: "van der Berg".into(),
                },
                Creator {
                    first: String::new(),
                    last: "Plato".into(),
                },
            ],
            subjects: vec!["cs.CV".into(), "I.2.7".into()],
            subject_labels: vec!["Computer Vision and Pattern Recognition".into()],
            date: "2025-03-18".into(),
            comment: Some("12 pages, \"to appear\"".into()),
        }
    }

    fn gz(lines: &[&str]) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        let mut enc = flate2::write::GzEncoder::new(f.reopen().unwrap(), Default::default());
        for l in lines {
            writeln!(enc, "{l}").unwrap();
        }
        enc.finish().unwrap();
        f
    }

    #[test]
    fn reads_gzip_json_lines() {
        let f = gz(&[
            r#"{"id":"arxiv:1","arxiv_id":"1","title":"T","abstract":"A fish.","creators":[{"first":"James","last":"Kirk"},{"first":"","last":"Spock"}],"subjects":["cs.AI"],"subject_labels":["Artificial Intelligence"],"date":"2025-03-18","comment":"5 pages"}"#,
            "",
            r#"{"id":"arxiv:2","arxiv_id":"2","title":"U","abstract":"B","creators":[],"subjects":[],"subject_labels":[],"date":"2025-03-19"}"#,
            r#"{"id":"arxiv:3","arxiv_id":"3","title":"V","abstract":"C","date":"2025-03-20"}"#,
        ]);
        let all = read_records(f.path(), 100).unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(all[0].creators[0].first, "James");
        assert_eq!(all[0].creators[1].display(), "Spock");
        assert_eq!(all[0].comment.as_deref(), Some("5 pages"));
        assert_eq!(all[1].comment, None);
        assert!(all[2].creators.is_empty());
        assert_eq!(read_records(f.path(), 2).unwrap().len(), 2);
        let bad = gz(&[r#"{"id":"arxiv:1"}"#]);
        let e = read_records(bad.path(), 10).unwrap_err();
        assert!(format!("{e:#}").contains("line 1"), "{e:#}");
    }

    #[test]
    fn reads_the_shared_corpus_when_present() {
        let dir = crate::args::default_corpus();
        let Ok(corpus) = Corpus::open(&dir, false) else {
            eprintln!("no corpus at {}: skipped", dir.display());
            return;
        };
        assert_eq!(corpus.pdfs.len(), 7);
        assert!(corpus.pdfs.iter().all(|p| p.path.is_absolute()));
        let recs = read_records(&corpus.records, 2000).unwrap();
        assert_eq!(recs.len(), 2000);
        for r in &recs {
            assert_eq!(r.id, format!("arxiv:{}", r.arxiv_id));
            assert!(!r.abstract_.is_empty());
            assert_eq!(r.date.len(), 10);
            // Every record's Turtle parses.
            parse(&turtle(r, 0));
        }
    }

    /// The triples of a Turtle document about `<http://x/r>`, as (predicate, literal value).
    fn parse(t: &str) -> Vec<(String, String)> {
        oxttl::TurtleParser::new()
            .with_base_iri("http://x/r")
            .unwrap()
            .for_slice(t.as_bytes())
            .map(|q| {
                let q = q.unwrap_or_else(|e| panic!("{e}\n{t}"));
                assert_eq!(q.subject.to_string(), "<http://x/r>");
                let oxrdf::Term::Literal(l) = q.object else {
                    panic!("not a literal: {}", q.object)
                };
                (q.predicate.as_str().to_string(), l.value().to_string())
            })
            .collect()
    }

    #[test]
    fn turtle_round_trips_through_a_parser() {
        let r = record();
        let triples = parse(&turtle(&r, 3));
        let values = |p: &str| -> Vec<&str> {
            let mut v: Vec<&str> = triples
                .iter()
                .filter(|(q, _)| q == p)
                .map(|(_, v)| v.as_str())
                .collect();
            v.sort();
            v
        };
        assert_eq!(values(&format!("{DCTERMS}title")), [r.title.as_str()]);
        assert_eq!(
            values(&format!("{DCTERMS}abstract")),
            [r.abstract_.as_str()]
        );
        assert_eq!(
            values(&format!("{DC}creator")),
            ["Plato", "van der Berg, James A."]
        );
        assert_eq!(
            values(&format!("{DC}subject")),
            ["Computer Vision and Pattern Recognition", "I.2.7", "cs.CV"]
        );
        assert_eq!(values(&format!("{DC}date")), ["2025-03-18"]);
        assert_eq!(values(&format!("{DC}identifier")), ["arxiv:2503.00001-r3"]);
        assert_eq!(values(&format!("{DC}type")), ["Text"]);
        assert_eq!(
            values(&format!("{DCTERMS}description")),
            ["12 pages, \"to appear\""]
        );
        // 1 title, 1 abstract, 2 creators, 3 subjects, date, identifier, type, description.
        assert_eq!(triples.len(), 11);
        // Without a comment: no description; the original keeps the corpus identifier.
        let mut r = r;
        r.comment = None;
        let t = parse(&turtle(&r, 0));
        assert_eq!(t.len(), 10);
        assert!(t.contains(&(format!("{DC}identifier"), "arxiv:2503.00001".into())));
    }

    #[test]
    fn literals_escape_what_turtle_requires() {
        assert_eq!(escape_literal(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape_literal("l1\nl2\r\t"), "l1\\nl2\\r\\t");
        assert_eq!(escape_literal("\u{1}é"), "\\u0001é");
        let u = title_update("new \"title\"\n");
        assert!(
            u.contains(r#"INSERT { <> dcterms:title "new \"title\"\n" }"#),
            "{u}"
        );
        spargebra::SparqlParser::new()
            .with_base_iri("http://x/r")
            .unwrap()
            .parse_update(&u)
            .unwrap();
    }

    #[test]
    fn ids_replicate_beyond_the_corpus() {
        assert_eq!(source(0, 12_000), (0, 0));
        assert_eq!(source(11_999, 12_000), (11_999, 0));
        assert_eq!(source(12_000, 12_000), (0, 1));
        assert_eq!(source(119_999, 12_000), (11_999, 9));
        assert_eq!(record_id("2503.11677", 0), "2503.11677");
        assert_eq!(record_id("2503.11677", 3), "2503.11677-r3");
        assert_eq!(record_id("cs/0501001v2", 0), "cs_0501001v2");
        // 120,000 ids, all distinct.
        let ids: std::collections::HashSet<String> = (0..120_000u64)
            .map(|i| {
                let (j, k) = source(i, 12_000);
                record_id(&format!("2503.{j:05}"), k)
            })
            .collect();
        assert_eq!(ids.len(), 120_000);
    }

    #[test]
    fn three_quarters_have_a_pdf_taken_in_turn() {
        for seed in [1, 2, 99] {
            let with: Vec<Option<usize>> = (0..12_000).map(|j| pdf_for(j, seed, 7)).collect();
            assert_eq!(with.iter().filter(|p| p.is_some()).count(), 9_000);
            for block in with.chunks(4) {
                assert_eq!(block.iter().filter(|p| p.is_none()).count(), 1);
            }
            // Round robin over the 7 files among the records that have one.
            let files: Vec<usize> = with.iter().flatten().copied().collect();
            for (n, f) in files.iter().enumerate() {
                assert_eq!(*f, n % 7);
            }
            // Deterministic.
            assert_eq!(pdf_for(5, seed, 7), pdf_for(5, seed, 7));
        }
        // The seed decides which record of a block goes without.
        let skipped = |seed| {
            (0..400)
                .filter(|&j| pdf_for(j, seed, 7).is_none())
                .collect::<Vec<_>>()
        };
        assert_ne!(skipped(1), skipped(2));
    }

    #[test]
    fn fields_as_indexed() {
        let r = record();
        let d = doc(&r, 0, true);
        assert!(d.has("FIRSTNAME", &["james".into()]));
        assert!(d.has("LASTNAME", &["berg".into()]));
        assert!(d.has("ABSTRACT", &["fish".into()]));
        assert!(d.has("ABSTRACT", &["alpha".into()]));
        assert!(!d.has("TITLE", &["fish".into()]));
        assert!(abstract_has(&r, "fish"));
        assert!(!abstract_has(&r, "title"));
    }
}
