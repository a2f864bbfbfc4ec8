//! The audit scenario's tables in the Markdown report.

use std::fmt::Write as _;

use super::AuditDetail;
use crate::report::{bytes, num, opt, pct, ScenarioReport, Status};

/// Appends the tables of the audit rows in `rows` (nothing when there are none).
pub fn markdown(m: &mut String, rows: &[ScenarioReport]) {
    let status = |r: &ScenarioReport| match r.status {
        Status::Completed => r.name.clone(),
        Status::Aborted => format!("{} (aborted)", r.name),
        Status::Interrupted => format!("{} (interrupted)", r.name),
        Status::NotAvailable => format!("{} (not available)", r.name),
    };
    let reads: Vec<_> = rows
        .iter()
        .filter_map(|r| match &r.audit {
            Some(AuditDetail::Read(x)) => Some((r, x)),
            _ => None,
        })
        .collect();
    if !reads.is_empty() {
        m.push_str(
            "| Audit read | Tool | Cache | Objects | Content | Seconds | MB/s | Objects/s \
             | Files/s | % of baseline | Checked (objects / files / bytes) | Findings | Valid \
             | Peak RSS (MB) | Mean CPU (%) |\n",
        );
        m.push_str("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|\n");
        for (r, x) in reads {
            let checked = match (x.checked_objects, x.checked_files, x.checked_bytes) {
                (None, None, None) => "–".to_string(),
                (o, f, b) => format!(
                    "{} / {} / {}",
                    o.map_or("–".into(), |v| v.to_string()),
                    f.map_or("–".into(), |v| v.to_string()),
                    b.map_or("–".into(), |v| bytes(v as f64))
                ),
            };
            let _ = writeln!(
                m,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                status(r),
                x.tool,
                x.cache,
                x.root_objects,
                bytes(x.root_bytes as f64),
                num(x.seconds),
                num(x.mb_per_s),
                num(x.objects_per_s),
                num(x.files_per_s),
                pct(x.pct_of_baseline),
                checked,
                x.findings.map_or("–".into(), |f| f.to_string()),
                x.valid.map_or("–", |v| if v { "yes" } else { "NO" }),
                opt(x.peak_rss_mb),
                opt(x.mean_cpu_pct),
            );
        }
        m.push('\n');
        // arca fixity against the validators, same cache state.
        for cache in ["cold", "warm"] {
            let seconds = |tool: &str| {
                rows.iter().find_map(|r| match &r.audit {
                    Some(AuditDetail::Read(x))
                        if x.tool == tool && x.cache == cache && r.status == Status::Completed =>
                    {
                        Some(x.seconds)
                    }
                    _ => None,
                })
            };
            let Some(arca) = seconds("arca-fixity").filter(|s| *s > 0.0) else {
                continue;
            };
            let others: Vec<String> = ["rocfl", "ocfl-py"]
                .iter()
                .filter_map(|t| seconds(t).map(|s| format!("{:.2} × {t}'s ({s:.2} s)", s / arca)))
                .collect();
            if !others.is_empty() {
                let _ = writeln!(
                    m,
                    "- {cache}: arca fixity's speed ({arca:.2} s) is {} (above 1: faster).",
                    others.join(", ")
                );
            }
        }
        m.push('\n');
    }
    let serving: Vec<_> = rows
        .iter()
        .filter_map(|r| match &r.audit {
            Some(AuditDetail::Serving(x)) => Some((r, x)),
            _ => None,
        })
        .collect();
    if !serving.is_empty() {
        m.push_str(
            "| Serving with the audit | Workload | On (per s) | Off (per s) | On ÷ off \
             | Audit read during on (MB/s) | Rows |\n",
        );
        m.push_str("|---|---|--:|--:|--:|--:|---|\n");
        let list = |v: &[f64]| v.iter().map(|x| num(*x)).collect::<Vec<_>>().join(", ");
        for (r, x) in serving {
            let _ = writeln!(
                m,
                "| {} | {} | {} | {} | {} | {} | {} |",
                status(r),
                x.workload,
                list(&x.on_tps),
                list(&x.off_tps),
                pct(x.pct_of_off),
                opt(x.audit_mb_per_s),
                x.rows.join(", ")
            );
        }
        m.push('\n');
    }
    let lags: Vec<_> = rows
        .iter()
        .filter_map(|r| match &r.audit {
            Some(AuditDetail::Lag(x)) => Some((r, x)),
            _ => None,
        })
        .collect();
    if !lags.is_empty() {
        m.push_str(
            "| Replica lag | Replica | Ingest (objects/s) | Samples | Max lag | p50 lag \
             | Drain (s) |\n",
        );
        m.push_str("|---|---|--:|--:|--:|--:|--:|\n");
        for (r, x) in lags {
            let _ = writeln!(
                m,
                "| {} | {} | {} | {} | {} | {} | {} |",
                status(r),
                x.replica,
                num(x.ingest_tps),
                x.samples,
                x.max_lag.map_or("–".into(), |v| v.to_string()),
                x.p50_lag.map_or("–".into(), |v| v.to_string()),
                opt(x.drain_s),
            );
        }
        m.push('\n');
    }
    for r in rows {
        let Some(AuditDetail::Faults(x)) = &r.audit else {
            continue;
        };
        let _ = writeln!(
            m,
            "{}: {} objects; findings on the undamaged root: {}; after the damage `arca fixity` \
             exited {} in {} s, `arca replica verify` exited {}; findings matching no fault: {}; \
             ocfl-py valid objects afterwards: primary {}, replica {}.\n",
            status(r),
            x.objects,
            x.clean_findings.map_or("–".into(), |n| n.to_string()),
            x.fixity_exit.map_or("–".into(), |c| c.to_string()),
            num(x.fixity_seconds),
            x.verify_exit.map_or("–".into(), |c| c.to_string()),
            x.unexpected_findings,
            x.ocfl_py_primary
                .map_or("–".into(), |(v, n)| format!("{v} of {n}")),
            x.ocfl_py_replica
                .map_or("–".into(), |(v, n)| format!("{v} of {n}")),
        );
        if !x.faults.is_empty() {
            m.push_str("| Fault | Root | Object | Path | Found | Repaired | Restored |\n");
            m.push_str("|---|---|---|---|---|---|---|\n");
            let yes = |b: bool| if b { "yes" } else { "NO" };
            for f in &x.faults {
                let _ = writeln!(
                    m,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    f.kind,
                    f.root,
                    f.object,
                    f.path.as_deref().unwrap_or("(the object)"),
                    yes(f.found),
                    yes(f.repaired),
                    yes(f.restored)
                );
            }
            m.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{audit_row, ReadRun, ReplicaLag, ServingRatio};

    #[test]
    fn each_kind_of_row_gets_its_table() {
        let mut m = String::new();
        markdown(&mut m, &[]);
        assert!(m.is_empty());
        let rocfl = audit_row(
            "audit-rocfl-cold",
            AuditDetail::Read(ReadRun {
                tool: "rocfl".into(),
                cache: "cold".into(),
                seconds: 5.0,
                ..Default::default()
            }),
        );
        let read = audit_row(
            "audit-arca-fixity-cold",
            AuditDetail::Read(ReadRun {
                tool: "arca-fixity".into(),
                cache: "cold".into(),
                seconds: 2.0,
                root_objects: 10,
                root_bytes: 4 << 20,
                mb_per_s: 2.0,
                pct_of_baseline: Some(95.0),
                findings: Some(0),
                ..Default::default()
            }),
        );
        let mut absent = audit_row("audit-rocfl-cold", AuditDetail::Read(ReadRun::default()));
        absent.status = Status::NotAvailable;
        let serving = audit_row(
            "audit-serving-get",
            AuditDetail::Serving(ServingRatio {
                workload: "get".into(),
                on_tps: vec![90.0, 92.0],
                off_tps: vec![100.0, 100.0],
                pct_of_off: Some(91.0),
                ..Default::default()
            }),
        );
        let lag = audit_row(
            "audit-replica-lag",
            AuditDetail::Lag(ReplicaLag {
                replica: "r".into(),
                max_lag: Some(12),
                p50_lag: Some(3),
                drain_s: Some(1.5),
                ..Default::default()
            }),
        );
        markdown(&mut m, &[read, rocfl, absent, serving, lag]);
        assert!(
            m.contains("- cold: arca fixity's speed (2.00 s) is 2.50 × rocfl's (5.00 s) (above 1: faster)."),
            "{m}"
        );
        assert!(
            m.contains(
                "| audit-arca-fixity-cold | arca-fixity | cold | 10 | 4.0 MiB | 2.00 | 2.00 |"
            ),
            "{m}"
        );
        assert!(m.contains("95.0 %"), "{m}");
        assert!(m.contains("audit-rocfl-cold (not available)"), "{m}");
        assert!(
            m.contains("| audit-serving-get | get | 90.0, 92.0 | 100, 100 | 91.0 % |"),
            "{m}"
        );
        assert!(
            m.contains("| audit-replica-lag | r | 0 | 0 | 12 | 3 | 1.50 |"),
            "{m}"
        );
    }
}
