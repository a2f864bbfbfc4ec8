//! `/rest/fcr:audit` (admins): the background fixity audit and the replicas of a running
//! server. `GET` shows where the audit stands and how each replica keeps up, `POST` starts
//! a run, `GET fcr:audit/reports` lists the recent runs (summaries, newest first) and
//! `GET fcr:audit/reports/<id>` gives one run's report with every finding.

use std::path::Path;

use arca_fixity::replica::ReplicaStatus;
use arca_fixity::schedule::AuditStatus;
use arca_fixity::{Report, Reports};
use axum::response::{IntoResponse, Response};
use http::{header, StatusCode};
use serde::Serialize;

use crate::context::Ctx;
use crate::error::ApiError;

/// Reports a listing gives when the request names no `limit`, and the most it may name.
const DEFAULT_REPORTS: usize = 20;
const MAX_REPORTS: usize = 1_000;

/// The body of `GET fcr:audit`.
#[derive(Debug, Serialize)]
pub struct AuditOverview {
    /// The background audit; `None` when the server runs none.
    pub audit: Option<AuditStatus>,
    /// Each replica's status (empty without replicas).
    pub replicas: Vec<ReplicaStatus>,
    /// Files known to be damaged now (refused to reads).
    pub damaged: Vec<arca_repository::DamagedFile>,
}

/// One report in a listing: everything but the findings, and how many there are.
#[derive(Debug, Serialize)]
pub struct ReportSummary {
    /// The run's id (`fcr:audit/reports/<id>` gives it whole).
    pub id: String,
    /// The root audited (`primary` or a replica's name).
    pub root: String,
    /// When it started.
    pub started: String,
    /// When it ended (`None` while running).
    pub finished: Option<String>,
    /// Every object was checked.
    pub complete: bool,
    /// Objects checked.
    pub objects: u64,
    /// Files read and hashed.
    pub files: u64,
    /// Bytes read and hashed.
    pub bytes: u64,
    /// Everything found wrong.
    pub findings: usize,
    /// Findings repaired.
    pub repaired: u64,
    /// Findings not repaired.
    pub unrepaired: usize,
}

impl From<&Report> for ReportSummary {
    fn from(r: &Report) -> Self {
        Self {
            id: r.id.clone(),
            root: r.root.clone(),
            started: r.started.clone(),
            finished: r.finished.clone(),
            complete: r.complete,
            objects: r.objects,
            files: r.files,
            bytes: r.bytes,
            findings: r.findings.len(),
            repaired: r.repaired,
            unrepaired: r.unrepaired(),
        }
    }
}

fn json(status: StatusCode, value: &impl Serialize) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_vec_pretty(value).expect("JSON serializes"),
    )
        .into_response()
}

/// What `GET fcr:audit` shows (also the status page's section).
pub(crate) fn overview(ctx: &Ctx) -> AuditOverview {
    AuditOverview {
        audit: ctx.config.audit.as_ref().map(|a| a.status()),
        replicas: ctx
            .config
            .replication
            .as_ref()
            .map(|r| r.status())
            .unwrap_or_default(),
        damaged: ctx.repo.damage().list(),
    }
}

/// `GET /rest/fcr:audit`.
pub(crate) fn status(ctx: &Ctx) -> Result<Response, ApiError> {
    Ok(json(StatusCode::OK, &overview(ctx)))
}

/// `POST /rest/fcr:audit`: a run now; 202, 409 while one runs, 501 without a background
/// audit.
pub(crate) fn run(ctx: &Ctx) -> Result<Response, ApiError> {
    let audit = ctx.config.audit.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "this server runs no background fixity audit; set [fixity] schedule (e.g. \"30d\") \
             and restart, or audit offline with `arca fixity`",
        )
    })?;
    if !audit.run_now() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "a fixity audit is running already; see fcr:audit",
        ));
    }
    let location = format!("{}/fcr:audit", ctx.base_url);
    Ok((
        StatusCode::ACCEPTED,
        [
            (header::LOCATION, location.as_str()),
            (header::CONTENT_TYPE, "text/plain"),
        ],
        format!("a fixity audit started; progress at {location}\n"),
    )
        .into_response())
}

fn reports_dir(ctx: &Ctx) -> Result<&Path, ApiError> {
    ctx.config.fixity_reports.as_deref().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "this server keeps no fixity reports",
        )
    })
}

fn report_error(e: arca_fixity::Error) -> ApiError {
    tracing::error!(error = %e, "cannot read the fixity reports");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("cannot read the fixity reports: {e}"),
    )
}

/// `GET /rest/fcr:audit/reports[?limit=N]`: summaries of the newest reports, newest first.
pub(crate) fn reports(ctx: &Ctx, query: Option<&str>) -> Result<Response, ApiError> {
    let limit = match query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|p| p.strip_prefix("limit="))
    {
        None => DEFAULT_REPORTS,
        Some(n) => match n.parse::<usize>() {
            Ok(n) if (1..=MAX_REPORTS).contains(&n) => n,
            _ => {
                return Err(ApiError::bad_request(format!(
                    "limit must be a number from 1 to {MAX_REPORTS} (got {n:?})"
                )))
            }
        },
    };
    let dir = reports_dir(ctx)?;
    let recent = if dir.is_dir() {
        Reports::open(dir)
            .map_err(report_error)?
            .recent(limit)
            .map_err(report_error)?
    } else {
        Vec::new()
    };
    let summaries: Vec<ReportSummary> = recent.iter().map(ReportSummary::from).collect();
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({ "reports": summaries }),
    ))
}

/// Whether `id` can name a report file: letters, digits, `-`, `_`, `.` (not leading), at
/// most 100 characters — nothing that leaves the reports directory.
fn valid_report_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 100
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `GET /rest/fcr:audit/reports/<id>`: one report, every finding (`<id>.json` in the
/// reports directory, as [`Reports`] keeps them).
pub(crate) fn report(ctx: &Ctx, id: &str) -> Result<Response, ApiError> {
    if !valid_report_id(id) {
        return Err(ApiError::bad_request(format!(
            "{id:?} is not a report id (letters, digits, '-', '_' and '.', as fcr:audit/reports lists them)"
        )));
    }
    let path = reports_dir(ctx)?.join(format!("{id}.json"));
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("no fixity report {id}; fcr:audit/reports lists them"),
            ))
        }
        Err(e) => {
            return Err(report_error(arca_fixity::Error::Io(path, e)));
        }
    };
    let report: Report = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the fixity report {id} is corrupt ({e}); the next audit writes a new one"),
        )
    })?;
    Ok(json(StatusCode::OK, &report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_ids_cannot_leave_the_directory() {
        assert!(valid_report_id("20261129T091500Z"));
        assert!(valid_report_id("20261129T091500Z-r1"));
        for bad in ["", "..", "../x", "a/b", ".hidden", "a b", &"x".repeat(101)] {
            assert!(!valid_report_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_summary_counts_findings_without_listing_them() {
        let finding = |repaired| arca_fixity::Finding {
            object: "info:fedora/a".into(),
            version: None,
            logical_path: None,
            content_path: Some("v1/content/a".into()),
            kind: arca_fixity::FindingKind::ContentMissing,
            expected: Some("sha512:aa".into()),
            actual: None,
            repaired,
            message: "gone".into(),
        };
        let report = Report {
            id: "20261129T091500Z".into(),
            root: "primary".into(),
            objects: 3,
            repaired: 1,
            findings: vec![finding(true), finding(false), finding(false)],
            ..Default::default()
        };
        let s = ReportSummary::from(&report);
        assert_eq!((s.findings, s.unrepaired, s.repaired), (3, 2, 1));
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["objects"], 3);
        assert!(v.get("message").is_none());
    }
}
