//! The admin status page, `GET /status`: the observer's status report as a page (every
//! field, "unknown" where the report has none, an inline SVG chart per sampled series) or,
//! for `Accept: application/json` (anything but a browser's `Accept`), as JSON. Admins only:
//! 401 for anonymous callers, 403 for others.

use arca_fixity::replica::ReplicaStatus;
use arca_fixity::schedule::AuditStatus;
use arca_observe::status::{Series, StatusReport};
use arca_repository::DamagedFile;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::{header, StatusCode};
use serde::Serialize;

use super::terms::size;
use super::Frame;
use crate::error::ApiError;
use crate::AppState;

#[derive(Serialize)]
struct Field {
    label: &'static str,
    value: String,
}

#[derive(Serialize)]
struct Chart {
    name: String,
    unit: String,
    /// The SVG polyline's points (`x,y …`), empty without samples.
    points: String,
    latest: String,
    max: String,
    span: String,
}

#[derive(Serialize)]
struct Delivery {
    name: String,
    connected: bool,
    pending: i64,
    lag_seconds: String,
    last_error: String,
}

/// The "Audit and replicas" section.
#[derive(Serialize)]
struct AuditSection {
    /// Whether the server runs a background audit.
    scheduled: bool,
    /// The audit's state: the running run, the last one, the next.
    fields: Vec<Field>,
    replicas: Vec<ReplicaRow>,
    damaged: Vec<DamagedRow>,
    /// Damaged files beyond those listed.
    more_damaged: usize,
}

#[derive(Serialize)]
struct ReplicaRow {
    name: String,
    lag: i64,
    position: i64,
    objects_copied: u64,
    bytes_copied: String,
    error: String,
}

#[derive(Serialize)]
struct DamagedRow {
    key: String,
    found: String,
    damage: String,
}

/// Damaged files the page lists (`fcr:audit` lists them all).
const DAMAGED_LISTED: usize = 50;

#[derive(Serialize)]
struct Page {
    page: Frame,
    title: &'static str,
    fields: Vec<Field>,
    deliveries: Vec<Delivery>,
    audit: AuditSection,
    charts: Vec<Chart>,
}

/// Chart size in SVG user units.
const WIDTH: f64 = 300.0;
const HEIGHT: f64 = 60.0;

/// `GET`/`HEAD /status`.
pub(crate) async fn handler(State(state): State<AppState>, req: Request) -> Response {
    if !(req.method() == http::Method::GET && super::wanted(req.headers())) {
        return answer(state, req)
            .await
            .unwrap_or_else(IntoResponse::into_response);
    }
    let base_url = crate::base_url(&state.config, req.headers());
    let headers = req.headers().clone();
    let out = answer(state.clone(), req)
        .await
        .unwrap_or_else(IntoResponse::into_response);
    super::error::decorate(out, &state, &base_url, &headers).await
}

async fn answer(state: AppState, req: Request) -> Result<Response, ApiError> {
    let html = super::wanted(req.headers());
    let head = req.method() == http::Method::HEAD;
    if !(req.method() == http::Method::GET || head) {
        return Err(ApiError::method_not_allowed("GET, HEAD"));
    }
    let caller = state.access.identify(req.headers()).await?;
    if !caller.is_admin() {
        return Err(state
            .access
            .refuse(&caller, "the status page is for admins".into()));
    }
    let observer = state.config.observer.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "this server keeps no status report (it was built without an observer)",
        )
    })?;
    let report = observer.status_report().await;
    if !html {
        let body = serde_json::to_vec_pretty(&report).expect("the report serializes");
        let mut r = (
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::VARY, "Accept"),
            ],
            body,
        )
            .into_response();
        if head {
            *r.body_mut() = axum::body::Body::empty();
        }
        return Ok(r);
    }
    let base_url = crate::base_url(&state.config, req.headers());
    let page = Page {
        page: Frame::new(&base_url, caller.name(), true),
        title: "Status",
        fields: fields(&report),
        deliveries: report
            .deliveries
            .iter()
            .map(|d| Delivery {
                name: d.name.clone(),
                connected: d.connected,
                pending: d.pending,
                lag_seconds: format!("{:.1} s", d.lag_seconds),
                last_error: d.last_error.clone().unwrap_or_else(|| "none".into()),
            })
            .collect(),
        audit: audit_section(
            report.audit.as_ref(),
            &report.replicas,
            &state.repo.damage().list(),
        ),
        charts: report.history.iter().map(chart).collect(),
    };
    super::render(StatusCode::OK, "status.html", &page, head)
}

fn unknown<T>(v: Option<T>, show: impl Fn(T) -> String) -> String {
    v.map(show).unwrap_or_else(|| "unknown".into())
}

fn fields(r: &StatusReport) -> Vec<Field> {
    let f = |label, value| Field { label, value };
    vec![
        f("Version", r.version.clone()),
        f("Storage", r.storage.clone()),
        f("Catalog", r.catalog.clone()),
        f("Objects", unknown(r.objects, |n| n.to_string())),
        f("Resources", unknown(r.resources, |n| n.to_string())),
        f("Content", unknown(r.bytes, size)),
        f("Disk free", unknown(r.disk_free, size)),
        f("Disk size", unknown(r.disk_total, size)),
        f("Up for", duration(r.uptime_seconds)),
        f("Open transactions", r.transactions_open.to_string()),
        f("Writes per second", format!("{:.2}", r.writes_per_second)),
        f("Reads per second", format!("{:.2}", r.reads_per_second)),
        f(
            "Search documents",
            unknown(r.search.as_ref(), |s| s.documents.to_string()),
        ),
        f(
            "Search lag (changes)",
            unknown(r.search.as_ref(), |s| s.lag_changes.to_string()),
        ),
    ]
}

fn audit_section(
    audit: Option<&AuditStatus>,
    replicas: &[ReplicaStatus],
    damaged: &[DamagedFile],
) -> AuditSection {
    let f = |label, value| Field { label, value };
    let mut fields = Vec::new();
    if let Some(a) = audit {
        let p = &a.progress;
        fields.push(f(
            "Running now",
            if p.running {
                format!(
                    "yes: {} objects, {} files, {} checked, {} findings ({} repaired)",
                    p.objects,
                    p.files,
                    size(p.bytes),
                    p.findings,
                    p.repaired
                )
            } else {
                "no".into()
            },
        ));
        match &a.last {
            Some(r) => {
                fields.push(f(
                    "Last run",
                    format!(
                        "{} ({}), started {}, {}",
                        r.id,
                        r.root,
                        r.started,
                        match (&r.finished, r.complete) {
                            (Some(end), true) => format!("finished {end}"),
                            (Some(end), false) => format!("stopped {end} (resumes)"),
                            (None, _) => "not finished".into(),
                        }
                    ),
                ));
                fields.push(f(
                    "Last run checked",
                    format!(
                        "{} objects, {} files, {}",
                        r.objects,
                        r.files,
                        size(r.bytes)
                    ),
                ));
                fields.push(f(
                    "Last run found",
                    format!(
                        "{} findings, {} repaired, {} not repaired",
                        r.findings.len(),
                        r.repaired,
                        a.damaged
                    ),
                ));
            }
            None => fields.push(f("Last run", "none yet".into())),
        }
        fields.push(f(
            "Next run",
            a.next_run.clone().unwrap_or_else(|| "when asked".into()),
        ));
    }
    AuditSection {
        scheduled: audit.is_some(),
        fields,
        replicas: replicas
            .iter()
            .map(|r| ReplicaRow {
                name: r.name.clone(),
                lag: r.lag,
                position: r.position,
                objects_copied: r.objects_copied,
                bytes_copied: size(r.bytes_copied),
                error: r.error.clone().unwrap_or_else(|| "none".into()),
            })
            .collect(),
        damaged: damaged
            .iter()
            .take(DAMAGED_LISTED)
            .map(|d| DamagedRow {
                key: d.key.clone(),
                found: d.found.clone(),
                damage: d.describe(),
            })
            .collect(),
        more_damaged: damaged.len().saturating_sub(DAMAGED_LISTED),
    }
}

fn duration(s: u64) -> String {
    let (d, h, m) = (s / 86_400, s % 86_400 / 3_600, s % 3_600 / 60);
    match (d, h) {
        (0, 0) => format!("{m} min {} s", s % 60),
        (0, _) => format!("{h} h {m} min"),
        _ => format!("{d} d {h} h"),
    }
}

/// A series as a polyline scaled into the chart (zero at the bottom, the series' maximum at
/// the top).
fn chart(s: &Series) -> Chart {
    let max = s.points.iter().copied().fold(0.0_f64, f64::max);
    let n = s.points.len();
    let points = s
        .points
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let x = if n > 1 {
                i as f64 * WIDTH / (n - 1) as f64
            } else {
                0.0
            };
            let y = if max > 0.0 {
                HEIGHT - v / max * HEIGHT
            } else {
                HEIGHT
            };
            format!("{x:.1},{y:.1}")
        })
        .collect::<Vec<_>>()
        .join(" ");
    Chart {
        name: s.name.clone(),
        unit: s.unit.clone(),
        points,
        latest: s.points.last().map_or("none".into(), |v| format!("{v:.2}")),
        max: format!("{max:.2}"),
        span: duration(s.step_seconds * n as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_audit_section_shows_the_last_run_progress_and_each_replica() {
        let none = audit_section(None, &[], &[]);
        assert!(!none.scheduled && none.fields.is_empty() && none.replicas.is_empty());
        let status = AuditStatus {
            progress: arca_fixity::audit::ProgressSnapshot {
                running: true,
                objects: 7,
                files: 20,
                bytes: 3 << 20,
                findings: 1,
                repaired: 0,
            },
            last: Some(arca_fixity::Report {
                id: "20261128T000000Z".into(),
                root: "primary".into(),
                started: "2026-11-28T00:00:00Z".into(),
                finished: Some("2026-11-28T01:00:00Z".into()),
                complete: true,
                objects: 100,
                files: 300,
                bytes: 5 << 30,
                repaired: 2,
                findings: Vec::new(),
            }),
            next_run: Some("2026-12-28T00:00:00Z".into()),
            damaged: 1,
        };
        let replicas = [ReplicaStatus {
            name: "offsite".into(),
            position: 40,
            lag: 2,
            objects_copied: 38,
            bytes_copied: 1 << 20,
            error: Some("connection refused".into()),
            ..Default::default()
        }];
        let s = audit_section(Some(&status), &replicas, &[]);
        let text: Vec<String> = s
            .fields
            .iter()
            .map(|f| format!("{}: {}", f.label, f.value))
            .collect();
        let text = text.join("\n");
        assert!(
            text.contains("Running now: yes: 7 objects, 20 files, 3.0 MiB"),
            "{text}"
        );
        assert!(text.contains("20261128T000000Z (primary)"), "{text}");
        assert!(text.contains("finished 2026-11-28T01:00:00Z"), "{text}");
        assert!(text.contains("100 objects, 300 files, 5.0 GiB"), "{text}");
        assert!(
            text.contains("0 findings, 2 repaired, 1 not repaired"),
            "{text}"
        );
        assert!(text.contains("Next run: 2026-12-28T00:00:00Z"), "{text}");
        assert_eq!(s.replicas[0].lag, 2);
        assert_eq!(s.replicas[0].error, "connection refused");
        assert!(s.replicas[0].bytes_copied.starts_with("1.0 MiB"));
        // Rendered: the section and its tables.
        let page = Page {
            page: Frame::new("http://x/rest", Some("root"), true),
            title: "Status",
            fields: Vec::new(),
            deliveries: Vec::new(),
            audit: s,
            charts: Vec::new(),
        };
        use minijinja::value::Serde;
        let html = super::super::templates()
            .get_template("status.html")
            .and_then(|t| t.render(Serde(&page)))
            .unwrap();
        assert!(html.contains("Audit and replicas"), "{html}");
        assert!(
            html.contains("offsite") && html.contains("connection refused"),
            "{html}"
        );
    }

    #[test]
    fn a_series_is_scaled_into_the_chart() {
        let s = Series {
            name: "writes per second".into(),
            unit: "/s".into(),
            step_seconds: 60,
            points: vec![0.0, 5.0, 10.0],
        };
        let c = chart(&s);
        assert_eq!(c.points, "0.0,60.0 150.0,30.0 300.0,0.0");
        assert_eq!(c.latest, "10.00");
        assert_eq!(c.max, "10.00");
        assert_eq!(chart(&Series::default()).points, "");
        assert_eq!(duration(3_725), "1 h 2 min");
    }
}
