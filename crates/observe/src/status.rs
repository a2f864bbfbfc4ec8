//! The status report (the admin status page's data) and the last hour of samples.
//!
//! A background task ([`Observer::spawn_sampler`](crate::Observer::spawn_sampler)) samples
//! every [`STEP`] and keeps [`POINTS`] points (an hour) per series in a ring. The report's
//! rates are over the last minute of those samples; its counts of objects and resources come
//! from the catalog at most once a [`TOTALS_EVERY`] (they cost a pass over an index).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;

use crate::Observer;

/// Time between two samples.
pub const STEP: Duration = Duration::from_secs(10);
/// Samples kept per series: an hour's.
pub const POINTS: usize = 360;
/// The window of the report's rates.
pub const RATE_WINDOW: Duration = Duration::from_secs(60);
/// How long the catalog's counts are reused.
pub const TOTALS_EVERY: Duration = Duration::from_secs(60);
/// Longest wait for the catalog's answers in a report.
const CATALOG_TIMEOUT: Duration = Duration::from_secs(5);

/// What the admin status page shows.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StatusReport {
    /// arca's version.
    pub version: String,
    /// Where the OCFL root is (directory or S3 bucket).
    pub storage: String,
    /// The catalog backend.
    pub catalog: String,
    /// Objects in the root (OCFL objects), when known.
    pub objects: Option<u64>,
    /// Resources (containers, binaries, descriptions, ACLs), when known.
    pub resources: Option<u64>,
    /// Bytes of binary content, when known.
    pub bytes: Option<u64>,
    /// Free bytes on the data directory's file system (local storage).
    pub disk_free: Option<u64>,
    /// Size of that file system.
    pub disk_total: Option<u64>,
    /// Seconds since start.
    pub uptime_seconds: u64,
    /// Transactions open now.
    pub transactions_open: u64,
    /// Writes per second over the last minute.
    pub writes_per_second: f64,
    /// Reads per second over the last minute.
    pub reads_per_second: f64,
    /// The search index, when search is on.
    pub search: Option<SearchLine>,
    /// Event delivery, one per destination.
    pub deliveries: Vec<DeliveryLine>,
    /// The background fixity audit, when one is scheduled.
    pub audit: Option<arca_fixity::schedule::AuditStatus>,
    /// Each replica's copying, when there are replicas.
    pub replicas: Vec<arca_fixity::replica::ReplicaStatus>,
    /// Files known to be damaged now (their binaries are not served).
    pub damaged: usize,
    /// The last hour, sampled.
    pub history: Vec<Series>,
}

/// The search index's state.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SearchLine {
    /// Documents in the index.
    pub documents: u64,
    /// Changes not yet indexed.
    pub lag_changes: i64,
}

/// One event destination's state.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DeliveryLine {
    /// The destination.
    pub name: String,
    /// Whether connected to the broker now.
    pub connected: bool,
    /// Events not yet acknowledged by the broker.
    pub pending: i64,
    /// Seconds the oldest undelivered event has waited.
    pub lag_seconds: f64,
    /// The last delivery error.
    pub last_error: Option<String>,
}

/// One sampled quantity over the last hour, oldest first.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Series {
    /// What it is (`writes per second`).
    pub name: String,
    /// Its unit (`/s`, `bytes`, `changes`, `s`).
    pub unit: String,
    /// Seconds between points.
    pub step_seconds: u64,
    /// The points, oldest first (at most an hour's).
    pub points: Vec<f64>,
}

/// The last hour of samples, filled by a background task.
pub struct History {
    inner: Mutex<Samples>,
}

/// The series, oldest point first.
const SERIES: [(&str, &str); 5] = [
    ("writes per second", "/s"),
    ("reads per second", "/s"),
    ("search lag", "changes"),
    ("event lag", "s"),
    ("disk free", "bytes"),
];

struct Samples {
    /// One ring per entry of [`SERIES`].
    series: Vec<Ring>,
    /// The counters at each of the last samples (enough for [`RATE_WINDOW`]).
    counters: VecDeque<Counters>,
    /// The catalog's counts and when they were read.
    totals: Option<(Instant, arca_catalog::Totals)>,
}

/// The write and read counters at one instant.
#[derive(Debug, Clone, Copy)]
struct Counters {
    at: Instant,
    writes: u64,
    reads: u64,
}

/// A fixed number of the latest points.
#[derive(Debug, Clone)]
pub struct Ring {
    points: VecDeque<f64>,
    capacity: usize,
}

impl Ring {
    /// Empty, keeping at most `capacity` points.
    pub fn new(capacity: usize) -> Self {
        Self {
            points: VecDeque::with_capacity(capacity),
            capacity,
        }
    }

    /// Adds `v` as the newest point, forgetting the oldest when full.
    pub fn push(&mut self, v: f64) {
        if self.points.len() == self.capacity {
            self.points.pop_front();
        }
        self.points.push_back(v);
    }

    /// The points, oldest first.
    pub fn points(&self) -> Vec<f64> {
        self.points.iter().copied().collect()
    }
}

/// Events per second between two readings of a counter (0 when no time passed or the
/// counter went back, as after a restart of its source).
pub fn rate(earlier: (Instant, u64), later: (Instant, u64)) -> f64 {
    let seconds = later.0.saturating_duration_since(earlier.0).as_secs_f64();
    if seconds <= 0.0 {
        return 0.0;
    }
    later.1.saturating_sub(earlier.1) as f64 / seconds
}

/// What one sample holds besides the counters.
#[derive(Debug, Clone, Copy, Default)]
struct Levels {
    search_lag: f64,
    event_lag: f64,
    disk_free: f64,
}

impl History {
    /// No samples yet.
    pub fn new() -> Self {
        Self {
            inner: Mutex::new(Samples {
                series: SERIES.iter().map(|_| Ring::new(POINTS)).collect(),
                counters: VecDeque::new(),
                totals: None,
            }),
        }
    }

    /// The series, oldest point first.
    pub fn series(&self) -> Vec<Series> {
        let inner = self.inner.lock();
        SERIES
            .iter()
            .zip(&inner.series)
            .map(|((name, unit), ring)| Series {
                name: name.to_string(),
                unit: unit.to_string(),
                step_seconds: STEP.as_secs(),
                points: ring.points(),
            })
            .collect()
    }

    /// Records one sample: the rates since the previous sample and the levels now.
    fn record(&self, now: Counters, levels: Levels) {
        let mut inner = self.inner.lock();
        let (writes, reads) = match inner.counters.back() {
            Some(prev) => (
                rate((prev.at, prev.writes), (now.at, now.writes)),
                rate((prev.at, prev.reads), (now.at, now.reads)),
            ),
            None => (0.0, 0.0),
        };
        for (ring, v) in inner.series.iter_mut().zip([
            writes,
            reads,
            levels.search_lag,
            levels.event_lag,
            levels.disk_free,
        ]) {
            ring.push(v);
        }
        inner.counters.push_back(now);
        // Keep the newest sample at least RATE_WINDOW old, and nothing older.
        while inner.counters.len() > 2
            && now.at.saturating_duration_since(inner.counters[1].at) >= RATE_WINDOW
        {
            inner.counters.pop_front();
        }
    }

    /// Writes and reads per second from the oldest sample of the last minute to `now`
    /// (zeros before the first sample).
    fn rates(&self, now: Counters) -> (f64, f64) {
        let inner = self.inner.lock();
        let Some(first) = inner
            .counters
            .iter()
            .find(|c| now.at.saturating_duration_since(c.at) <= RATE_WINDOW + STEP / 2)
        else {
            return (0.0, 0.0);
        };
        (
            rate((first.at, first.writes), (now.at, now.writes)),
            rate((first.at, first.reads), (now.at, now.reads)),
        )
    }
}

impl Default for History {
    fn default() -> Self {
        Self::new()
    }
}

impl Observer {
    /// The status report now.
    pub async fn status_report(&self) -> StatusReport {
        let sources = self.sources();
        let counters = self.counters();
        let (writes_per_second, reads_per_second) = self.history().rates(counters);
        let totals = self.totals().await;
        let disk = self.disk_usage().await;
        let transactions_open =
            tokio::time::timeout(CATALOG_TIMEOUT, sources.repo.catalog().tx_open())
                .await
                .ok()
                .and_then(Result::ok)
                .map_or(0, |open| open.len() as u64);
        let last_change = *sources.repo.catalog().last_change().borrow();
        StatusReport {
            version: env!("CARGO_PKG_VERSION").to_string(),
            storage: sources.storage.clone(),
            catalog: sources.catalog.clone(),
            objects: totals.map(|t| t.objects),
            resources: totals.map(|t| t.resources),
            bytes: None,
            disk_free: disk.map(|u| u.free_bytes),
            disk_total: disk.map(|u| u.total_bytes),
            uptime_seconds: sources.started.elapsed().as_secs(),
            transactions_open,
            writes_per_second,
            reads_per_second,
            search: sources.search.as_ref().map(|s| {
                let status = s.status();
                SearchLine {
                    documents: status.documents,
                    lag_changes: status.lag,
                }
            }),
            deliveries: sources
                .deliveries
                .iter()
                .map(|d| DeliveryLine {
                    name: arca_config::redact_password(&d.name),
                    connected: d.connected(),
                    pending: if d.leading() {
                        (last_change - d.delivered()).max(0)
                    } else {
                        0
                    },
                    lag_seconds: d.waiting_for().as_secs_f64(),
                    last_error: d.last_error(),
                })
                .collect(),
            audit: sources.audit.as_ref().map(|a| a.status()),
            replicas: sources
                .replication
                .as_ref()
                .map(|r| r.status())
                .unwrap_or_default(),
            damaged: sources.repo.damage().len(),
            history: self.history().series(),
        }
    }

    /// Starts sampling every [`STEP`] into [`History`] until `stop` turns true.
    pub fn spawn_sampler(
        self: &Arc<Self>,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(STEP);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticks.tick() => me.sample().await,
                    changed = stop.changed() => if changed.is_err() || *stop.borrow() {
                        break;
                    },
                }
            }
        })
    }

    /// Takes one sample.
    async fn sample(&self) {
        let sources = self.sources();
        let levels = Levels {
            search_lag: sources
                .search
                .as_ref()
                .map_or(0.0, |s| s.status().lag as f64),
            event_lag: sources
                .deliveries
                .iter()
                .filter(|d| d.leading())
                .map(|d| d.waiting_for().as_secs_f64())
                .fold(0.0, f64::max),
            disk_free: self.disk_usage().await.map_or(0.0, |u| u.free_bytes as f64),
        };
        self.history().record(self.counters(), levels);
    }

    /// The write and read counters now.
    fn counters(&self) -> Counters {
        Counters {
            at: Instant::now(),
            writes: self.sources().repo.phases.writes.load(Ordering::Relaxed),
            reads: self.metrics().reads_total(),
        }
    }

    /// The catalog's counts: the last ones when younger than [`TOTALS_EVERY`], else read
    /// again (`None` when the catalog does not answer in time and none were read before).
    async fn totals(&self) -> Option<arca_catalog::Totals> {
        let cached = self.history().inner.lock().totals;
        if let Some((at, t)) = cached {
            if at.elapsed() < TOTALS_EVERY {
                return Some(t);
            }
        }
        let fresh = tokio::time::timeout(CATALOG_TIMEOUT, self.sources().repo.catalog().totals())
            .await
            .ok()
            .and_then(Result::ok);
        match fresh {
            Some(t) => {
                self.history().inner.lock().totals = Some((Instant::now(), t));
                Some(t)
            }
            None => cached.map(|(_, t)| t),
        }
    }

    /// The data directory's file system (local roots only).
    async fn disk_usage(&self) -> Option<arca_storage::free_space::Usage> {
        let dir = self.sources().data_dir.clone()?;
        tokio::task::spawn_blocking(move || arca_storage::free_space::usage(&dir).ok())
            .await
            .ok()
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_keeps_the_newest_points_oldest_first() {
        let mut r = Ring::new(3);
        assert!(r.points().is_empty());
        for v in 1..=5 {
            r.push(f64::from(v));
        }
        assert_eq!(r.points(), vec![3.0, 4.0, 5.0]);
    }

    #[test]
    fn rates_divide_the_increase_by_the_time_between() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(rate((t0, 100), (t1, 150)), 5.0);
        assert_eq!(rate((t0, 100), (t0, 150)), 0.0, "no time passed");
        assert_eq!(rate((t0, 150), (t1, 100)), 0.0, "the counter went back");
    }

    fn at(t0: Instant, s: u64, writes: u64, reads: u64) -> Counters {
        Counters {
            at: t0 + Duration::from_secs(s),
            writes,
            reads,
        }
    }

    #[test]
    fn samples_make_per_step_series_and_a_rate_over_the_last_minute() {
        let h = History::new();
        let t0 = Instant::now();
        assert_eq!(h.rates(at(t0, 0, 0, 0)), (0.0, 0.0));
        // 1 write/s and 10 reads/s for two minutes, sampled every 10 s.
        for i in 0..=12 {
            h.record(at(t0, i * 10, i * 10, i * 100), Levels::default());
        }
        let series = h.series();
        assert_eq!(series.len(), SERIES.len());
        assert_eq!(series[0].points.len(), 13);
        assert_eq!(series[0].points[0], 0.0, "no rate before a previous sample");
        assert!(series[0].points[1..].iter().all(|&p| p == 1.0));
        assert!(series[1].points[1..].iter().all(|&p| p == 10.0));
        // Then a burst: 600 writes in the 10 s after the last sample. The minute's rate
        // spreads it over the window, not over the two minutes.
        let (writes, reads) = h.rates(at(t0, 130, 120 + 600, 1200));
        // From the sample at 70 s (the oldest within the minute) to 130 s.
        assert_eq!(writes, (720.0 - 70.0) / 60.0);
        assert_eq!(reads, (1200.0 - 700.0) / 60.0);
    }

    #[test]
    fn an_hour_is_kept() {
        let h = History::new();
        let t0 = Instant::now();
        for i in 0..(POINTS as u64 + 50) {
            h.record(
                at(t0, i * 10, i, 0),
                Levels {
                    disk_free: i as f64,
                    ..Default::default()
                },
            );
        }
        let disk = &h.series()[4];
        assert_eq!(disk.points.len(), POINTS);
        assert_eq!(disk.points[0], 50.0);
        assert_eq!(disk.step_seconds, 10);
        assert!(
            h.inner.lock().counters.len() <= 8,
            "only a minute of counters is kept"
        );
    }
}
