//! The search study's three queries timed on an index directory in this process alone, without
//! HTTP: for comparing two indexes of the same documents (BENCHMARKS, "The first run after a
//! load: the documents' order"). Work on a copy: opening the index takes its writer lock,
//! `merge` rewrites it, and an index of another field mapping than the default is cleared.
//!
//! ```text
//! cargo run --release -p arca-search --example query_timing -- INDEX_DIR [SECONDS] [MODE]
//! ```
//!
//! Each query runs for SECONDS (default 5) from one thread; printed are its hits and the p50,
//! p90 and p99 of a page of ten hits with their system fields, as `fcr:search` shows them.
//! MODE: `page` times the page alone (no stored fields), `merge` merges the index into one
//! segment first, `order` prints the resource paths of the largest segment's first documents
//! (and of every 10,000th) in document order instead.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use arca_search::{Mapping, SearchIndex};
use tantivy::DocAddress;

/// The study's queries (`arca bench search`).
const QUERIES: [&str; 3] = [
    "ABSTRACT:\"fish\"",
    "ABSTRACT:\"animal\" AND NOT ALL:\"university\"",
    "(ABSTRACT:\"fish\" OR FIRSTNAME:\"james\") AND ALL:\"university\"",
];

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: query_timing INDEX_DIR [SECONDS] [page|merge|order]";
    let dir = PathBuf::from(args.next().expect(usage));
    let seconds: f64 = args.next().map_or(5.0, |s| s.parse().expect(usage));
    let mode = args.next().unwrap_or_default();
    assert!(
        ["", "page", "merge", "order"].contains(&mode.as_str()),
        "{usage}"
    );
    // `open` would create an index where there is none, and clear one of another mapping.
    assert!(
        dir.join("meta.json").is_file(),
        "no index in {}",
        dir.display()
    );
    let (index, seq) = SearchIndex::open(&dir, &Mapping::dublin_core()).expect("opening the index");
    if mode == "merge" {
        if let Some(merging) = index.merge_all().expect("starting the merge") {
            merging.wait().expect("merging");
        }
        index.reload().expect("reloading");
    }
    let searcher = index.searcher();
    println!(
        "position {seq:?}, {} segments, {} documents",
        searcher.segment_readers().len(),
        index.documents()
    );
    let fields = vec![("id".to_string(), index.schema().system.id)];
    if mode == "order" {
        let (segment, reader) = searcher
            .segment_readers()
            .iter()
            .enumerate()
            .max_by_key(|(_, r)| r.max_doc())
            .expect("a segment");
        for doc in (0..40).chain((0..reader.max_doc()).step_by(10_000)) {
            let address = DocAddress::new(segment as u32, doc);
            if let Ok(hit) = index.stored(&searcher, address, &fields) {
                println!("{doc}: {}", hit.id);
            }
        }
        return;
    }
    for q in QUERIES {
        let query = index.parser().parse(q).expect("the query parses");
        let end = Instant::now() + Duration::from_secs_f64(seconds);
        let mut times = Vec::new();
        let mut total = 0;
        while Instant::now() < end {
            let start = Instant::now();
            let page = index.page(&searcher, &*query, None, 0, 10).expect("search");
            if mode != "page" {
                for hit in &page.hits {
                    index
                        .stored(&searcher, *hit, &fields)
                        .expect("stored fields");
                }
            }
            total = page.total;
            times.push(start.elapsed());
        }
        times.sort();
        let at = |share: f64| times[((times.len() as f64 * share) as usize).min(times.len() - 1)];
        println!(
            "{q}: {total} hits, {} runs, p50 {:?} p90 {:?} p99 {:?}",
            times.len(),
            at(0.5),
            at(0.9),
            at(0.99)
        );
    }
}
