//! The background audit of `arca serve`: a run of the whole root every `interval`, at a
//! rate limit, resumed after a restart, its findings repaired from the replicas, reported
//! (history in `<data>/fixity/reports/`), announced as PREMIS fixity events and marked on
//! the damaged resources; its progress and results for admins over HTTP.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arca_ocfl::ObjectStorage;
use arca_repository::Repository;
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

use crate::audit::{AuditProgress, AuditSettings, Auditor, FindingHook, ProgressSnapshot};
use crate::checkpoint::Checkpoint;
use crate::replica::Replica;
use crate::report::{Report, Reports};
use crate::{Error, Result};

/// When and how the background audit runs.
#[derive(Debug, Clone)]
pub struct ScheduleSettings {
    /// Time between the starts of two runs; `None`: only when asked (`run_now`).
    pub interval: Option<Duration>,
    /// How each run goes.
    pub audit: AuditSettings,
    /// `<data>/fixity`: reports and checkpoints.
    pub dir: PathBuf,
}

/// The background audit's state, for admins (JSON).
#[derive(Debug, Clone, Default, Serialize)]
pub struct AuditStatus {
    /// The running run's counters (zero when none runs).
    pub progress: ProgressSnapshot,
    /// The last finished (or stopped) run.
    pub last: Option<Report>,
    /// When the next run starts (RFC 3339), if scheduled.
    pub next_run: Option<String>,
    /// Findings of the last run that are not repaired.
    pub damaged: u64,
}

/// The role a node holds while it audits (nodes sharing a PostgreSQL catalog audit one at
/// a time).
pub const AUDIT_ROLE: &str = "fixity-audit";

/// How long a run that failed (a store outage) or found the role taken waits before
/// trying again.
const RETRY: Duration = Duration::from_secs(60);

/// The background audit of a running server.
pub struct BackgroundAudit {
    settings: ScheduleSettings,
    auditor: Arc<Auditor>,
    reports: Reports,
    checkpoint: Checkpoint,
    progress: Arc<AuditProgress>,
    wake: Notify,
    state: Mutex<State>,
}

struct State {
    /// The last finished run.
    last: Option<Report>,
    /// When the next run starts.
    next_run: Option<arca_model::Timestamp>,
    /// A run was asked for.
    asked: bool,
    /// When the schedule first started.
    since: arca_model::Timestamp,
}

impl std::fmt::Debug for BackgroundAudit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundAudit")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl BackgroundAudit {
    /// Starts the schedule (resuming a run a stop cut short); the task ends when `stop`
    /// turns true, leaving a checkpoint.
    pub fn start(
        repository: Arc<Repository>,
        store: Arc<dyn ObjectStorage>,
        replicas: Vec<Arc<Replica>>,
        settings: ScheduleSettings,
        on_finding: Option<FindingHook>,
        stop: watch::Receiver<bool>,
    ) -> Result<(Arc<Self>, JoinHandle<()>)> {
        let reports = Reports::open(&settings.dir.join("reports"))?;
        let checkpoint = Checkpoint::at(&settings.dir.join("checkpoint-primary.json"));
        let staging = settings.dir.join("staging");
        std::fs::create_dir_all(&staging).map_err(|e| Error::Io(staging.clone(), e))?;
        let progress = Arc::new(AuditProgress::default());
        let mut auditor = Auditor::new(store, "primary", settings.audit.clone())
            .with_repository(repository.clone(), tokio::runtime::Handle::current())
            .with_replicas(replicas)
            .with_staging(&staging)
            .with_progress(progress.clone());
        if let Some(hook) = on_finding {
            auditor = auditor.on_finding(hook);
        }
        let last = reports.latest()?;
        let since = Self::since(&settings.dir)?;
        let this = Arc::new(Self {
            settings,
            auditor: Arc::new(auditor),
            reports,
            checkpoint,
            progress,
            wake: Notify::new(),
            state: Mutex::new(State {
                last,
                next_run: None,
                asked: false,
                since,
            }),
        });
        let task = tokio::spawn(this.clone().schedule(repository, stop));
        Ok((this, task))
    }

    /// Where it stands.
    pub fn status(&self) -> AuditStatus {
        let state = self.state.lock();
        AuditStatus {
            progress: self.progress.snapshot(),
            damaged: state.last.as_ref().map_or(0, |r| r.unrepaired() as u64),
            last: state.last.clone(),
            next_run: state.next_run.map(arca_model::format_instant),
        }
    }

    /// Starts a run now; `false` when one is running.
    pub fn run_now(&self) -> bool {
        if self.progress.running.load(Ordering::Relaxed) {
            return false;
        }
        self.state.lock().asked = true;
        self.wake.notify_one();
        true
    }

    /// The reports of past runs.
    pub fn reports(&self) -> &Reports {
        &self.reports
    }

    /// When the next run is due: now for a run a stop cut short (its checkpoint is there)
    /// or one asked for, else `interval` after the last run started; `None`: only when
    /// asked.
    fn due(&self) -> Option<arca_model::Timestamp> {
        let now = arca_model::now();
        let state = self.state.lock();
        if state.asked || self.checkpoint.path().exists() {
            return Some(now);
        }
        let interval = self.settings.interval?;
        let started = state
            .last
            .as_ref()
            .and_then(|r| arca_model::parse_instant(&r.started))
            .unwrap_or(state.since);
        Some(started + interval)
    }

    /// When the schedule first started here (kept in `<dir>/schedule-start`): before any
    /// run, the first is due one interval after it, not at every start of a new server.
    fn since(dir: &std::path::Path) -> Result<arca_model::Timestamp> {
        let path = dir.join("schedule-start");
        if let Some(at) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| arca_model::parse_instant(text.trim()))
        {
            return Ok(at);
        }
        let now = arca_model::now();
        crate::files::write_durably(&path, arca_model::format_instant(now).as_bytes())?;
        Ok(now)
    }

    async fn schedule(
        self: Arc<Self>,
        repository: Arc<Repository>,
        mut stop: watch::Receiver<bool>,
    ) {
        let stopping = Arc::new(AtomicBool::new(false));
        loop {
            let due = self.due();
            self.state.lock().next_run = due;
            let wait = due.map(|due| {
                (due - arca_model::now())
                    .try_into()
                    .unwrap_or(Duration::ZERO)
            });
            tokio::select! {
                _ = stop.wait_for(|s| *s) => break,
                _ = self.wake.notified() => {}
                _ = async {
                    match wait {
                        Some(wait) => tokio::time::sleep(wait).await,
                        None => std::future::pending().await,
                    }
                } => {}
            }
            if *stop.borrow() {
                break;
            }
            if self.due().is_none_or(|due| due > arca_model::now()) {
                continue;
            }
            // One node audits at a time; the role is held for the run.
            let lead = match repository.catalog().try_lead(AUDIT_ROLE).await {
                Ok(Some(lead)) => lead,
                Ok(None) => {
                    tracing::debug!("another node runs the fixity audit");
                    self.pause(&mut stop, RETRY).await;
                    continue;
                }
                Err(e) => {
                    tracing::warn!("fixity audit: cannot take its role: {e}");
                    self.pause(&mut stop, RETRY).await;
                    continue;
                }
            };
            self.state.lock().asked = false;
            let this = self.clone();
            let stop_flag = stopping.clone();
            let mut watch_stop = stop.clone();
            let watcher = tokio::spawn(async move {
                let _ = watch_stop.wait_for(|s| *s).await;
                stop_flag.store(true, Ordering::Relaxed);
            });
            let stop_flag = stopping.clone();
            let outcome = tokio::task::spawn_blocking(move || {
                this.auditor.run(&this.checkpoint, true, &stop_flag)
            })
            .await;
            watcher.abort();
            drop(lead);
            match outcome {
                Ok(Ok(report)) => {
                    tracing::info!(
                        id = %report.id,
                        objects = report.objects,
                        bytes = report.bytes,
                        findings = report.findings.len(),
                        repaired = report.repaired,
                        "fixity audit complete"
                    );
                    if let Err(e) = self.reports.save(&report) {
                        tracing::error!("fixity audit: cannot save its report: {e}");
                    }
                    // Files fixed by other means since they were found are served again.
                    crate::announce::settle_damage(&repository, &report);
                    self.state.lock().last = Some(report);
                }
                Ok(Err(Error::Stopped)) => break,
                Ok(Err(e)) => {
                    tracing::error!("fixity audit stopped (it resumes): {e}");
                    self.pause(&mut stop, RETRY).await;
                }
                Err(e) => {
                    tracing::error!("fixity audit failed: {e}");
                    self.pause(&mut stop, RETRY).await;
                }
            }
        }
    }

    /// Waits `time`, or less if the server stops or a run is asked for.
    async fn pause(&self, stop: &mut watch::Receiver<bool>, time: Duration) {
        self.state.lock().next_run = Some(arca_model::now() + time);
        tokio::select! {
            _ = stop.wait_for(|s| *s) => {}
            _ = self.wake.notified() => {}
            _ = tokio::time::sleep(time) => {}
        }
    }
}
