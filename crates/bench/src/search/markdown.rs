//! The search section of `report.md`: per corpus size the load, the write-to-visible and
//! reindex figures and the table of the query matrix; then the issue's targets at the
//! largest size.

use std::fmt::Write as _;

use crate::report::{num, ScenarioReport, SearchDetail, Status};

use super::QUERIES;

/// Query p50 target at 3 threads, ms.
pub const TARGET_P50_MS: f64 = 0.5;
/// Query p99 target at 3 threads, ms.
pub const TARGET_P99_MS: f64 = 10.0;
/// Full reindex target, objects/s.
pub const TARGET_REINDEX: f64 = 1000.0;
/// Write-to-visible p50 target, ms.
pub const TARGET_VISIBLE_P50_MS: f64 = 300.0;

fn ms(x: Option<f64>) -> String {
    x.map_or("–".into(), num)
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "**missed**"
    }
}

/// Appends the search section for the `rows` that carry search details (nothing without).
pub fn markdown(m: &mut String, rows: &[ScenarioReport]) {
    let rows: Vec<(&ScenarioReport, &SearchDetail)> = rows
        .iter()
        .filter_map(|r| Some((r, r.search.as_ref()?)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let mut sizes: Vec<u64> = Vec::new();
    for (_, d) in &rows {
        if !sizes.contains(&d.objects()) {
            sizes.push(d.objects());
        }
    }
    let _ = writeln!(m, "## Search\n");
    let list: Vec<String> = QUERIES
        .iter()
        .enumerate()
        .map(|(i, q)| format!("q{} `{q}`", i + 1))
        .collect();
    let _ = writeln!(
        m,
        "Queries: {}. Each cell runs one query from its threads (after a warm-up); with \
         updates, that share of the operations replaces a record's title (its words kept, a \
         unique token added), and a watcher queries the pending tokens every 5 ms: \"visible\" \
         is the time from the update's answer to the first answer holding the record. Hits: \
         `totalResults` (a range when it changed); expected: counted from the records loaded \
         (plain tokens; every PDF holds \"university\", none \"fish\").\n",
        list.join(", ")
    );
    for &objects in &sizes {
        let at: Vec<&(&ScenarioReport, &SearchDetail)> = rows
            .iter()
            .filter(|(_, d)| d.objects() == objects)
            .collect();
        let _ = writeln!(m, "### {objects} objects\n");
        for (r, d) in &at {
            match d {
                SearchDetail::Load(l) => {
                    let sent = if l.loaded > 0 {
                        format!(
                            "{} records sent in {} s ({} objects/s, {} MB/s)",
                            l.loaded,
                            num(r.elapsed_s),
                            num(r.summary.tps),
                            num(r.summary.mb_per_s)
                        )
                    } else {
                        "nothing sent (already loaded)".into()
                    };
                    let caught = match l.catch_up_s {
                        Some(s) => format!("the index caught up {} s after the load", num(s)),
                        None => "the index did **not** catch up".into(),
                    };
                    let _ = writeln!(
                        m,
                        "- Load: {objects} records ({} with a PDF, {}); {sent}; {caught}{}.",
                        l.with_pdf,
                        l.pdf_mode,
                        l.documents
                            .map(|n| format!(", {n} documents"))
                            .unwrap_or_default()
                    );
                }
                SearchDetail::Visibility(v) => {
                    let s = &r.summary;
                    let _ = writeln!(
                        m,
                        "- Write-to-visible, one updater alone: {} samples{}, p50 {} ms, p99 {} \
                         ms, max {} ms (the update itself: p50 {} ms).",
                        s.ok,
                        if s.errors > 0 {
                            format!(" and {} not found in time", s.errors)
                        } else {
                            String::new()
                        },
                        num(s.p50_ms),
                        num(s.p99_ms),
                        num(s.max_ms),
                        num(v.writes.p50_ms)
                    );
                }
                SearchDetail::Reindex(x) => {
                    let _ = writeln!(
                        m,
                        "- Full reindex: {} documents, {} s by the server ({} objects/s), {} s \
                         by our clock ({} objects/s){}.",
                        x.documents.map_or("?".into(), |n| n.to_string()),
                        ms(x.server_seconds),
                        ms(x.server_objects_per_s),
                        num(x.client_seconds),
                        ms(x.client_objects_per_s),
                        if r.status == Status::Completed && r.summary.errors == 0 {
                            ""
                        } else {
                            " — did not complete"
                        }
                    );
                }
                SearchDetail::Cell(_) => {}
            }
        }
        let mut cells: Vec<(&ScenarioReport, &crate::report::SearchCell)> = at
            .iter()
            .filter_map(|(r, d)| match d {
                SearchDetail::Cell(c) => Some((*r, c.as_ref())),
                _ => None,
            })
            .collect();
        if cells.is_empty() {
            m.push('\n');
            continue;
        }
        cells.sort_by_key(|(_, c)| (c.query_no, c.threads, c.update_pct));
        m.push_str(
            "\n| Query | Threads | Updates | Queries/s | p50 (ms) | Mean (ms) | p99 (ms) \
             | Max (ms) | Hits | Expected | Updates/s | Update p50 (ms) | Visible p50 (ms) \
             | Visible p99 (ms) | Max server CPU (%) | Errors |\n",
        );
        m.push_str("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
        for (r, c) in &cells {
            let s = &r.summary;
            let hits = match (c.hits_min, c.hits_max) {
                (Some(a), Some(b)) if a == b => a.to_string(),
                (Some(a), Some(b)) => format!("{a}–{b} (unstable)"),
                _ => "–".into(),
            };
            let u = c.updates.as_ref();
            let v = c.visibility.as_ref().filter(|v| v.ok > 0);
            let _ = writeln!(
                m,
                "| q{}{} | {} | {} % | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                c.query_no,
                match r.status {
                    Status::Completed => "",
                    Status::Aborted => " (aborted)",
                    Status::Interrupted => " (interrupted)",
                    Status::NotAvailable => " (not available)",
                },
                c.threads,
                c.update_pct,
                num(s.tps),
                num(s.p50_ms),
                num(s.mean_ms),
                num(s.p99_ms),
                num(s.max_ms),
                hits,
                c.expected.map_or("?".into(), |e| e.to_string()),
                ms(u.map(|u| u.per_s)),
                ms(u.filter(|u| u.ok > 0).map(|u| u.p50_ms)),
                ms(v.map(|v| v.p50_ms)),
                ms(v.map(|v| v.p99_ms)),
                ms(r.server.as_ref().map(|x| x.max_cpu_pct)),
                r.errors_total(),
            );
        }
        m.push('\n');
    }
    targets(m, &rows, sizes.iter().copied().max().unwrap_or(0));
}

/// The issue's targets, checked at the largest size.
fn targets(m: &mut String, rows: &[(&ScenarioReport, &SearchDetail)], objects: u64) {
    let at = || rows.iter().filter(move |(_, d)| d.objects() == objects);
    let mut lines = Vec::new();
    for q in 1..=QUERIES.len() {
        let three: Vec<&ScenarioReport> = at()
            .filter(|(r, d)| {
                matches!(d, SearchDetail::Cell(c) if c.query_no == q && c.threads == 3)
                    && r.summary.ok > 0
            })
            .map(|(r, _)| *r)
            .collect();
        if three.is_empty() {
            continue;
        }
        let p50 = three.iter().map(|r| r.summary.p50_ms).fold(0.0, f64::max);
        let p99 = three.iter().map(|r| r.summary.p99_ms).fold(0.0, f64::max);
        lines.push(format!(
            "| q{q} p50 ≤ {TARGET_P50_MS} ms at 3 threads (worst of its update shares) | {} ms | {} |",
            num(p50),
            met(p50 <= TARGET_P50_MS)
        ));
        lines.push(format!(
            "| q{q} p99 ≤ {TARGET_P99_MS} ms at 3 threads (worst of its update shares) | {} ms | {} |",
            num(p99),
            met(p99 <= TARGET_P99_MS)
        ));
    }
    for (r, d) in at() {
        match d {
            SearchDetail::Reindex(x) => {
                if let Some(rate) = x.client_objects_per_s.or(x.server_objects_per_s) {
                    lines.push(format!(
                        "| full reindex ≥ {TARGET_REINDEX} objects/s | {} objects/s | {} |",
                        num(rate),
                        met(rate >= TARGET_REINDEX)
                    ));
                }
            }
            SearchDetail::Visibility(_) if r.summary.ok > 0 => {
                lines.push(format!(
                    "| write-to-visible p50 ≤ {TARGET_VISIBLE_P50_MS} ms | {} ms | {} |",
                    num(r.summary.p50_ms),
                    met(r.summary.p50_ms <= TARGET_VISIBLE_P50_MS)
                ));
            }
            _ => {}
        }
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(
        m,
        "### Targets at {objects} objects{}\n",
        if objects == 120_000 {
            ""
        } else {
            " (the targets are set for 120000)"
        }
    );
    m.push_str("| Target | Measured | |\n|---|--:|---|\n");
    for l in lines {
        let _ = writeln!(m, "{l}");
    }
    m.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Scenario;
    use crate::report::{Kind, Latencies, PhaseConfig, SearchCell, SearchReindex};

    fn cell(q: usize, threads: usize, pct: u32, p50: f64) -> ScenarioReport {
        let mut r =
            ScenarioReport::new("c", Scenario::Search, Kind::Search, PhaseConfig::default());
        r.summary.ok = 100;
        r.summary.p50_ms = p50;
        r.summary.p99_ms = 4.0;
        r.search = Some(SearchDetail::Cell(Box::new(SearchCell {
            objects: 120_000,
            query_no: q,
            query: QUERIES[q - 1].into(),
            threads,
            update_pct: pct,
            hits_min: Some(7),
            hits_max: Some(if pct == 5 { 8 } else { 7 }),
            expected: Some(7),
            updates: (pct > 0).then(|| Latencies {
                ok: 3,
                per_s: 1.5,
                p50_ms: 2.0,
                ..Default::default()
            }),
            visibility: None,
        })));
        r
    }

    #[test]
    fn renders_the_matrix_and_the_targets() {
        let mut rows = vec![cell(1, 3, 0, 0.3), cell(1, 3, 5, 0.7), cell(2, 1, 0, 0.2)];
        let mut ri =
            ScenarioReport::new("r", Scenario::Search, Kind::Search, PhaseConfig::default());
        ri.search = Some(SearchDetail::Reindex(SearchReindex {
            objects: 120_000,
            documents: Some(120_000),
            client_seconds: 100.0,
            client_objects_per_s: Some(1200.0),
            ..Default::default()
        }));
        rows.push(ri);
        let mut m = String::new();
        markdown(&mut m, &rows);
        assert!(m.contains("### 120000 objects"), "{m}");
        assert!(m.contains("| q1 | 3 | 0 % | 0 | 0.30 |"), "{m}");
        assert!(m.contains("| 7–8 (unstable) | 7 | 1.50 | 2.00 |"), "{m}");
        assert!(m.contains("120000 documents"), "{m}");
        assert!(
            m.contains("| q1 p50 ≤ 0.5 ms at 3 threads (worst of its update shares) | 0.70 ms | **missed** |"),
            "{m}"
        );
        assert!(m.contains(
            "| q1 p99 ≤ 10 ms at 3 threads (worst of its update shares) | 4.00 ms | met |"
        ));
        assert!(m.contains("| full reindex ≥ 1000 objects/s | 1200 objects/s | met |"));
        // q2 ran at 1 thread only: no target line for it.
        assert!(!m.contains("| q2 p50"));
        let mut none = String::new();
        markdown(&mut none, &[]);
        assert!(none.is_empty());
    }
}
