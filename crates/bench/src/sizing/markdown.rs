//! The sizing report as Markdown (`sizing.md`, stdout) and as a chart (`sizing.svg`): ingest
//! rate and GET latency against the object count.

use std::fmt::Write as _;

use super::SizingReport;
use crate::svg::{escape, nice_step};

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

fn mb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1e6)
}

/// The report as Markdown.
pub fn markdown(r: &SizingReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# arca bench sizing\n");
    let _ = writeln!(s, "- command: `{}`", r.command);
    let _ = writeln!(
        s,
        "- machine: {} CPUs, {:.1} GiB memory; data `{}` on {}",
        r.machine.cpus,
        r.machine.memory_gb,
        r.data_dir,
        r.filesystem.as_deref().unwrap_or("an unknown file system")
    );
    let _ = writeln!(
        s,
        "- {} objects asked, steps of {}, {} clients; {} – {}",
        r.target_objects, r.step, r.clients, r.started_at, r.finished_at
    );
    match &r.stopped {
        Some(why) => {
            let _ = writeln!(s, "- **stopped before the end**: {why}");
        }
        None if r.after.is_empty() => {
            let _ = writeln!(s, "- still running (a partial report)");
        }
        None => {}
    }
    let _ = writeln!(s, "\n## Ingest, per step\n");
    let _ = writeln!(
        s,
        "| objects | objects/s | errors | GET old p50 / p99 ms | GET new p50 / p99 ms | RSS MB | catalog MB | index MB | bytes/object | inodes/object |"
    );
    let _ = writeln!(s, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for row in &r.steps {
        let _ = writeln!(
            s,
            "| {} | {:.0} | {} | {:.2} / {:.2} | {:.2} / {:.2} | {} | {} | {} | {} | {} |",
            row.objects,
            row.objects_per_s,
            row.errors + row.get_old.errors + row.get_new.errors,
            row.get_old.p50_ms,
            row.get_old.p99_ms,
            row.get_new.p50_ms,
            row.get_new.p99_ms,
            opt(row.rss_mb, 0),
            mb(row.catalog_bytes),
            mb(row.index_bytes),
            opt(row.bytes_per_object, 0),
            opt(row.inodes_per_object, 1),
        );
    }
    if let (Some(first), Some(last)) = (r.steps.first(), r.steps.last()) {
        if r.steps.len() > 1 && first.objects_per_s > 0.0 {
            let _ = writeln!(
                s,
                "\nLast step's rate {:.0} % of the first's; GET p99 old {:.2} → {:.2} ms, RSS {} → {} MB.",
                100.0 * last.objects_per_s / first.objects_per_s,
                first.get_old.p99_ms,
                last.get_old.p99_ms,
                opt(first.rss_mb, 0),
                opt(last.rss_mb, 0)
            );
        }
    }
    for row in r.steps.iter().filter(|r| r.first_error.is_some()) {
        let _ = writeln!(
            s,
            "\n- step ending at {} objects, first error: {}",
            row.objects,
            row.first_error.as_deref().unwrap_or_default()
        );
    }
    if !r.after.is_empty() {
        let _ = writeln!(s, "\n## On the grown root\n");
        let _ = writeln!(s, "| measured | time | value | ok | peak RSS MB | note |");
        let _ = writeln!(s, "|---|--:|--:|---|--:|---|");
        for a in &r.after {
            let _ = writeln!(
                s,
                "| {} | {} | {} {} | {} | {} | {} |",
                a.name,
                a.seconds.map_or_else(|| "–".into(), duration),
                opt(a.value, 0),
                a.unit,
                if a.ok { "yes" } else { "**no**" },
                opt(a.peak_rss_mb, 0),
                a.note.replace('|', "\\|")
            );
        }
    }
    for n in &r.notes {
        let _ = writeln!(s, "\n{n}");
    }
    s
}

const W: f64 = 900.0;
const PANEL: f64 = 220.0;
const LEFT: f64 = 70.0;
const TOP: f64 = 40.0;
const GAP: f64 = 70.0;

/// One line of a panel: its name, colour and a value per step.
type Line<'a> = (&'a str, &'a str, Vec<f64>);

/// Ingest rate (top) and GET p99 of old and new objects (bottom) against the object count.
pub fn chart(r: &SizingReport) -> String {
    let xs: Vec<f64> = r.steps.iter().map(|s| s.objects as f64).collect();
    let panels: [(&str, &str, Vec<Line>); 2] = [
        (
            "ingest, objects/s per step",
            "objects/s",
            vec![(
                "ingest",
                "#1f77b4",
                r.steps.iter().map(|s| s.objects_per_s).collect(),
            )],
        ),
        (
            "GET latency, ms",
            "ms",
            vec![
                (
                    "old p99",
                    "#d62728",
                    r.steps.iter().map(|s| s.get_old.p99_ms).collect(),
                ),
                (
                    "new p99",
                    "#ff7f0e",
                    r.steps.iter().map(|s| s.get_new.p99_ms).collect(),
                ),
                (
                    "old p50",
                    "#2ca02c",
                    r.steps.iter().map(|s| s.get_old.p50_ms).collect(),
                ),
            ],
        ),
    ];
    let height = TOP + 2.0 * (PANEL + GAP);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"20\" font-size=\"14\">{}</text>",
        escape(&format!(
            "arca bench sizing: {} objects, steps of {}",
            r.steps.last().map_or(0, |s| s.objects),
            r.step
        ))
    );
    let x_max = xs.iter().copied().fold(0.0, f64::max).max(1.0);
    let plot_w = W - LEFT - 160.0;
    for (p, (title, unit, series)) in panels.iter().enumerate() {
        let top = TOP + p as f64 * (PANEL + GAP);
        let y_max = series
            .iter()
            .flat_map(|(_, _, v)| v.iter().copied())
            .fold(0.0, f64::max)
            .max(1e-3);
        let y_step = nice_step(y_max, 5);
        let y_top = (y_max / y_step).ceil() * y_step;
        let x_step = nice_step(x_max, 8);
        let px = |x: f64| LEFT + plot_w * x / x_max;
        let py = |y: f64| top + PANEL - PANEL * y / y_top;
        let _ = writeln!(
            s,
            "<text x=\"{LEFT}\" y=\"{}\">{}</text>",
            top - 8.0,
            escape(title)
        );
        let _ = writeln!(
            s,
            "<rect x=\"{LEFT}\" y=\"{top}\" width=\"{plot_w}\" height=\"{PANEL}\" fill=\"none\" stroke=\"#999\"/>"
        );
        let mut y = 0.0;
        while y <= y_top + 1e-9 {
            let _ = writeln!(
                s,
                "<line x1=\"{LEFT}\" x2=\"{0}\" y1=\"{1}\" y2=\"{1}\" stroke=\"#eee\"/><text x=\"{2}\" y=\"{3}\" text-anchor=\"end\">{4}</text>",
                LEFT + plot_w,
                py(y),
                LEFT - 6.0,
                py(y) + 4.0,
                trim(y)
            );
            y += y_step;
        }
        let mut x = 0.0;
        while x <= x_max + 1e-9 {
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                px(x),
                top + PANEL + 16.0,
                trim(x)
            );
            x += x_step;
        }
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">objects ({})</text>",
            LEFT + plot_w / 2.0,
            top + PANEL + 34.0,
            escape(unit)
        );
        for (n, (name, color, values)) in series.iter().enumerate() {
            let points: Vec<String> = xs
                .iter()
                .zip(values)
                .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
                .collect();
            let _ = writeln!(
                s,
                "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
                points.join(" ")
            );
            let ly = top + 14.0 + 18.0 * n as f64;
            let _ = writeln!(
                s,
                "<line x1=\"{0}\" x2=\"{1}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\"/><text x=\"{2}\" y=\"{3}\">{4}</text>",
                LEFT + plot_w + 12.0,
                LEFT + plot_w + 32.0,
                LEFT + plot_w + 38.0,
                ly + 4.0,
                escape(name)
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

fn trim(v: f64) -> String {
    if v >= 1000.0 {
        format!("{v:.0}")
    } else {
        let t = format!("{v:.2}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Seconds as a person reads them: `12.3 ms`, `4.56 s`, `7 min 12 s`.
fn duration(seconds: f64) -> String {
    if seconds < 1.0 {
        format!("{:.1} ms", seconds * 1e3)
    } else if seconds < 120.0 {
        format!("{seconds:.2} s")
    } else {
        format!("{} min {:.0} s", (seconds / 60.0).floor(), seconds % 60.0)
    }
}
