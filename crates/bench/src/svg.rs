//! `chart.svg`, drawn by hand: throughput and mean latency per second, one line per scenario,
//! so that an operator sees where a curve flattens or falls. A panel switches to a
//! logarithmic axis when its values span more than two decades.

use std::fmt::Write as _;

use crate::report::{Kind, ScenarioReport};

const WIDTH: f64 = 960.0;
const PANEL_H: f64 = 260.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 230.0;
const TOP: f64 = 40.0;
const GAP: f64 = 70.0;
const COLORS: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// One line: a name and `(x, y)` points.
struct Series<'a> {
    name: &'a str,
    points: Vec<(f64, f64)>,
}

/// Escapes text for SVG (XML): `&`, `<`, `>`, `"` and `'` become entities.
pub fn escape(s: &str) -> String {
    quick_xml::escape::escape(s).into_owned()
}

/// A "nice" tick step for a linear axis up to `max` with about `n` ticks.
pub fn nice_step(max: f64, n: usize) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

fn label(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1000.0 {
        format!("{:.0}", v)
    } else if v.abs() >= 1.0 {
        let s = format!("{v:.1}");
        s.trim_end_matches(".0").to_string()
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').to_string()
    }
}

struct Axis {
    log: bool,
    lo: f64,
    hi: f64,
}

impl Axis {
    fn for_values(values: impl Iterator<Item = f64>) -> Axis {
        let mut max: f64 = 0.0;
        let mut min_pos = f64::INFINITY;
        for v in values {
            max = max.max(v);
            if v > 0.0 {
                min_pos = min_pos.min(v);
            }
        }
        if max <= 0.0 {
            return Axis {
                log: false,
                lo: 0.0,
                hi: 1.0,
            };
        }
        if max / min_pos > 100.0 {
            Axis {
                log: true,
                lo: 10f64.powf(min_pos.log10().floor()),
                hi: 10f64.powf(max.log10().ceil()),
            }
        } else {
            let step = nice_step(max, 5);
            Axis {
                log: false,
                lo: 0.0,
                hi: (max / step).ceil() * step,
            }
        }
    }

    /// 0 at the bottom, 1 at the top.
    fn frac(&self, v: f64) -> f64 {
        if self.log {
            let v = v.max(self.lo);
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let mut t = Vec::new();
            let mut v = self.lo;
            while v <= self.hi * 1.0001 {
                t.push(v);
                v *= 10.0;
            }
            t
        } else {
            let step = nice_step(self.hi, 5);
            (0..=((self.hi / step).round() as usize))
                .map(|i| i as f64 * step)
                .collect()
        }
    }
}

fn panel(svg: &mut String, top: f64, title: &str, unit: &str, series: &[Series<'_>], x_max: f64) {
    let plot_w = WIDTH - LEFT - RIGHT;
    let axis = Axis::for_values(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let x_step = nice_step(x_max, 8);
    let x_hi = ((x_max / x_step).ceil() * x_step).max(1.0);
    let px = |x: f64| LEFT + x / x_hi * plot_w;
    let py = |y: f64| top + PANEL_H - axis.frac(y) * PANEL_H;
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="{}" font-size="14" font-weight="bold">{}{}</text>"#,
        top - 10.0,
        escape(title),
        if axis.log { " (log scale)" } else { "" }
    );
    let _ = writeln!(
        svg,
        r##"<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{PANEL_H}" fill="none" stroke="#888"/>"##
    );
    for t in axis.ticks() {
        let y = py(t);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0,
            label(t)
        );
    }
    let mut x = 0.0;
    while x <= x_hi + 1e-9 {
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
            px(x),
            top + PANEL_H + 16.0,
            label(x)
        );
        x += x_step;
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">seconds since the scenario started</text>"#,
        LEFT + plot_w / 2.0,
        top + PANEL_H + 32.0
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(16,{:.1}) rotate(-90)" font-size="11" text-anchor="middle">{}</text>"#,
        top + PANEL_H / 2.0,
        escape(unit)
    );
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        if let [(x, y)] = s.points[..] {
            let _ = writeln!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#,
                px(x),
                py(y)
            );
        } else if !s.points.is_empty() {
            let pts: Vec<String> = s
                .points
                .iter()
                .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            let _ = writeln!(
                svg,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/>"#,
                pts.join(" ")
            );
        }
    }
}

/// The chart of the rows that talk to a server (raw rows are in the table, not the chart:
/// their rates would flatten every other line; of the search rows only the loads, the dozens
/// of query cells being in their own table).
pub fn chart(rows: &[ScenarioReport]) -> String {
    let rows: Vec<&ScenarioReport> = rows
        .iter()
        .filter(|r| r.kind != Kind::Raw && !r.summary.timeline.is_empty())
        .filter(|r| {
            r.search
                .as_ref()
                .is_none_or(|d| matches!(d, crate::report::SearchDetail::Load(_)))
        })
        .collect();
    // The last second is usually partial: scale it to a rate when it is at least half a
    // second long, leave it out when it is a sliver (in-flight requests finishing).
    let rate = |r: &ScenarioReport, t: u64, n: u64| {
        let len = (r.elapsed_s - t as f64).clamp(0.0, 1.0);
        (len >= 0.5).then(|| n as f64 / len)
    };
    let tps: Vec<Series<'_>> = rows
        .iter()
        .map(|r| Series {
            name: &r.name,
            points: r
                .summary
                .timeline
                .iter()
                .filter_map(|p| Some((p.t as f64 + 0.5, rate(r, p.t, p.ok)?)))
                .collect(),
        })
        .collect();
    let lat: Vec<Series<'_>> = rows
        .iter()
        .map(|r| Series {
            name: &r.name,
            points: r
                .summary
                .timeline
                .iter()
                .filter(|p| p.ok > 0)
                .map(|p| (p.t as f64 + 0.5, p.mean_ms))
                .collect(),
        })
        .collect();
    let x_max = rows
        .iter()
        .map(|r| r.elapsed_s.max(r.summary.timeline.len() as f64))
        .fold(1.0, f64::max);
    let height = TOP + 2.0 * PANEL_H + GAP + 50.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    if rows.is_empty() {
        let _ = writeln!(
            svg,
            r#"<text x="{LEFT}" y="{TOP}" font-size="14">No server scenario ran: nothing to draw.</text>"#
        );
    } else {
        panel(
            &mut svg,
            TOP,
            "Throughput",
            "successful transactions per second",
            &tps,
            x_max,
        );
        panel(
            &mut svg,
            TOP + PANEL_H + GAP,
            "Mean response time",
            "ms",
            &lat,
            x_max,
        );
        let lx = WIDTH - RIGHT + 20.0;
        for (i, s) in tps.iter().enumerate() {
            let y = TOP + 10.0 + i as f64 * 20.0;
            let color = COLORS[i % COLORS.len()];
            let _ = writeln!(
                svg,
                r#"<line x1="{lx}" y1="{y}" x2="{}" y2="{y}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}" font-size="12">{}</text>"#,
                lx + 24.0,
                lx + 30.0,
                y + 4.0,
                escape(s.name)
            );
        }
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Scenario;
    use crate::recorder::TimelinePoint;
    use crate::report::PhaseConfig;

    fn row(name: &str, kind: Kind, rates: &[u64]) -> ScenarioReport {
        let mut r = ScenarioReport::new(name, Scenario::IngestSmall, kind, PhaseConfig::default());
        r.elapsed_s = rates.len() as f64;
        r.summary.timeline = rates
            .iter()
            .enumerate()
            .map(|(t, &ok)| TimelinePoint {
                t: t as u64,
                transactions: ok,
                ok,
                errors: 0,
                mean_ms: 1000.0 / (ok.max(1) as f64),
                bytes: 0,
            })
            .collect();
        r
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(100.0, 5), 20.0);
        assert_eq!(nice_step(7.0, 5), 2.0);
        assert_eq!(nice_step(0.0, 5), 1.0);
        assert_eq!(nice_step(300.0, 8), 50.0);
    }

    #[test]
    fn axes_choose_log_for_wide_ranges() {
        let a = Axis::for_values([1.0, 50.0].into_iter());
        assert!(!a.log);
        assert_eq!(a.hi, 50.0);
        let b = Axis::for_values([0.5, 0.0, 2000.0].into_iter());
        assert!(b.log);
        assert_eq!(b.lo, 0.1);
        assert_eq!(b.hi, 10000.0);
        assert_eq!(b.ticks().len(), 6);
        assert!((b.frac(0.0) - 0.0).abs() < 1e-9);
        assert!((b.frac(10000.0) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn draws_one_line_per_server_scenario() {
        let rows = vec![
            row("ingest-small", Kind::Ingest, &[10, 12, 11, 9]),
            row("a<b>&\"c\"", Kind::Ingest, &[100, 90]),
            row("raw-fsync-20KiB-16t", Kind::Raw, &[5000, 5000]),
            row("single", Kind::Access, &[3]),
        ];
        let svg = chart(&rows);
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        // two panels × two multi-point series; the one-point series is a circle per panel
        assert_eq!(svg.matches("<polyline").count(), 4);
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("a&lt;b&gt;&amp;&quot;c&quot;"));
        assert!(!svg.contains("raw-fsync"));
        assert!(!svg.contains("NaN"));
        let empty = chart(&[]);
        assert!(empty.contains("nothing to draw"));
    }
}
