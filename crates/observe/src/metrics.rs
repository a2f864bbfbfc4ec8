//! Prometheus metrics (text exposition format).
//!
//! Two kinds of figures: what the HTTP layer records per request ([`Metrics::record`]: one
//! counter and one histogram lookup by pre-sized label values, nothing that grows with
//! paths), and what the server's parts count anyway (the kernel's write phases, journal and
//! checkpoints, the search index, event delivery, fixity audits and replicas, the file
//! system, the process), read only
//! when Prometheus scrapes ([`Metrics::exposition`]).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabelSet, EncodeLabelValue, EncodeMetric, LabelValueEncoder,
};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::Sources;

/// The content type of [`Metrics::exposition`]'s text (OpenMetrics, what Prometheus asks
/// for first).
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of [`classic`]'s text (Prometheus's older text format, for clients that
/// do not accept OpenMetrics).
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `open_metrics` (as [`Metrics::exposition`] writes it) in Prometheus's older text format:
/// a counter's `HELP` and `TYPE` lines name its samples (`…_total`), and there is no
/// `# EOF`.
pub fn classic(open_metrics: &str) -> String {
    let mut out = String::with_capacity(open_metrics.len() + 1024);
    let mut lines = open_metrics.lines().peekable();
    while let Some(line) = lines.next() {
        if line == "# EOF" {
            continue;
        }
        if let Some((name, help)) = line
            .strip_prefix("# HELP ")
            .and_then(|rest| rest.split_once(' '))
        {
            let counter_type = format!("# TYPE {name} counter");
            if lines.peek() == Some(&counter_type.as_str()) {
                lines.next();
                let _ = writeln!(out, "# HELP {name}_total {help}");
                let _ = writeln!(out, "# TYPE {name}_total counter");
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// What part of the API a request addressed: the `class` label (a handful of values, never
/// the path).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteClass {
    /// Reading a resource (`GET`, `HEAD`, `OPTIONS`).
    Read,
    /// Creating, replacing, changing or deleting a resource.
    Write,
    /// `…/fcr:acl`.
    Acl,
    /// `…/fcr:versions` and mementos.
    Versions,
    /// `/fcr:tx`.
    Transactions,
    /// `/fcr:search`, GSearch.
    Search,
    /// `/fcr:events`.
    Events,
    /// `…/fcr:fixity`.
    Fixity,
    /// `/fcr:import`.
    Import,
    /// The Fedora 3 facade under `/fedora/`.
    Fedora3,
    /// Constraint documents and other static files.
    Static,
    /// The HTML interface.
    Html,
    /// `/metrics` and `/health/*`.
    MetricsHealth,
    /// Anything else (a path outside the API, a request refused before it was parsed).
    Other,
}

impl RouteClass {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Acl => "acl",
            Self::Versions => "versions",
            Self::Transactions => "transactions",
            Self::Search => "search",
            Self::Events => "events",
            Self::Fixity => "fixity",
            Self::Import => "import",
            Self::Fedora3 => "fedora3",
            Self::Static => "static",
            Self::Html => "html",
            Self::MetricsHealth => "metrics/health",
            Self::Other => "other",
        }
    }
}

impl EncodeLabelValue for RouteClass {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.as_str())
    }
}

/// What a successful write did: the `kind` label of `arca_writes_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteKind {
    /// `POST`: a new resource.
    Create,
    /// `PUT`: a new resource or a replaced one.
    Replace,
    /// `PATCH`: a SPARQL update.
    Update,
    /// `DELETE`: a tombstone.
    Delete,
    /// `DELETE …/fcr:tombstone`: gone for good.
    Purge,
    /// `POST …/fcr:versions`: a new version.
    Version,
    /// A change of an ACL.
    Acl,
    /// A transaction committed.
    Commit,
    /// A Fedora 3 object imported.
    Import,
}

impl WriteKind {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Replace => "replace",
            Self::Update => "update",
            Self::Delete => "delete",
            Self::Purge => "purge",
            Self::Version => "version",
            Self::Acl => "acl",
            Self::Commit => "commit",
            Self::Import => "import",
        }
    }
}

impl EncodeLabelValue for WriteKind {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.as_str())
    }
}

/// What a request was, as the HTTP layer classifies it once it is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestKind {
    /// The part of the API.
    pub class: RouteClass,
    /// The change it makes when it succeeds, if it is a write.
    pub write: Option<WriteKind>,
}

impl RequestKind {
    /// A request of `class` that writes nothing.
    pub const fn of(class: RouteClass) -> Self {
        Self { class, write: None }
    }

    /// A write of `kind` in `class`.
    pub const fn write(class: RouteClass, kind: WriteKind) -> Self {
        Self {
            class,
            write: Some(kind),
        }
    }
}

/// The request method as a label: the methods the API answers, the rest as `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum MethodLabel {
    Get,
    Head,
    Options,
    Post,
    Put,
    Patch,
    Delete,
    Other,
}

impl MethodLabel {
    fn of(method: &http::Method) -> Self {
        match *method {
            http::Method::GET => Self::Get,
            http::Method::HEAD => Self::Head,
            http::Method::OPTIONS => Self::Options,
            http::Method::POST => Self::Post,
            http::Method::PUT => Self::Put,
            http::Method::PATCH => Self::Patch,
            http::Method::DELETE => Self::Delete,
            _ => Self::Other,
        }
    }
}

impl EncodeLabelValue for MethodLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(match self {
            Self::Get => "GET",
            Self::Head => "HEAD",
            Self::Options => "OPTIONS",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Patch => "PATCH",
            Self::Delete => "DELETE",
            Self::Other => "other",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    method: MethodLabel,
    class: RouteClass,
    status: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LatencyLabels {
    method: MethodLabel,
    class: RouteClass,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct WriteLabels {
    kind: WriteKind,
}

/// Upper bounds of the request latency buckets, in seconds (half a millisecond to half a
/// minute: a cached read to a large upload).
const LATENCY_BUCKETS: [f64; 15] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// Counts request body bytes as a handler reads them (see [`Metrics::uploads`]).
#[derive(Clone, Debug)]
pub struct Uploads(Counter);

impl Uploads {
    /// Adds `bytes` read of a request body.
    pub fn add(&self, bytes: u64) {
        self.0.inc_by(bytes);
    }
}

/// The metrics registry and the instruments the HTTP layer records into.
pub struct Metrics {
    enabled: AtomicBool,
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<LatencyLabels, Histogram, fn() -> Histogram>,
    uploads: Counter,
    writes: Family<WriteLabels, Counter>,
    reads: Counter,
}

impl Metrics {
    /// Empty metrics, collecting.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        let uploads = Counter::default();
        let writes = Family::<WriteLabels, Counter>::default();
        registry.register(
            "arca_http_requests",
            "HTTP requests answered, by method, route class and status",
            requests.clone(),
        );
        registry.register(
            "arca_http_request_duration_seconds",
            "Time from a request's arrival to its answer's head, by method and route class",
            latency.clone(),
        );
        registry.register(
            "arca_http_upload_bytes",
            "Request body bytes read by writes (POST, PUT, PATCH)",
            uploads.clone(),
        );
        registry.register(
            "arca_writes",
            "Writes answered with success, by kind",
            writes.clone(),
        );
        Self {
            enabled: AtomicBool::new(true),
            registry,
            requests,
            latency,
            uploads,
            writes,
            reads: Counter::default(),
        }
    }

    /// Whether requests are recorded and `/metrics` answers (`metrics.enabled`).
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Turns collection on or off.
    pub fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::Relaxed);
    }

    /// Records one answered request: `status` after `elapsed`.
    pub fn record(
        &self,
        method: &http::Method,
        kind: RequestKind,
        status: http::StatusCode,
        elapsed: Duration,
    ) {
        let method = MethodLabel::of(method);
        let class = kind.class;
        self.requests
            .get_or_create(&RequestLabels {
                method,
                class,
                status: status.as_u16(),
            })
            .inc();
        self.latency
            .get_or_create(&LatencyLabels { method, class })
            .observe(elapsed.as_secs_f64());
        if let Some(write) = kind.write.filter(|_| status.is_success()) {
            self.writes
                .get_or_create(&WriteLabels { kind: write })
                .inc();
        }
        if class == RouteClass::Read && matches!(method, MethodLabel::Get | MethodLabel::Head) {
            self.reads.inc();
        }
    }

    /// The counter of uploaded bytes, for a request body to add to as it is read.
    pub fn uploads(&self) -> Uploads {
        Uploads(self.uploads.clone())
    }

    /// Requests answered so far whose class is a read (`GET`/`HEAD` of resources), for the
    /// status page's read rate.
    pub fn reads_total(&self) -> u64 {
        self.reads.get()
    }

    /// Everything in the text exposition format: the recorded requests, then what
    /// `sources` count, read now.
    pub fn exposition(&self, sources: &Sources) -> String {
        let mut text = String::with_capacity(16 * 1024);
        let mut scraped = Registry::default();
        scraped.register_collector(Box::new(SourcesCollector(sources.clone())));
        // Writing into a String cannot fail; an encoder's error would be a bug of ours.
        let _ = prometheus_client::encoding::text::encode_registry(&mut text, &self.registry);
        let _ = prometheus_client::encoding::text::encode_registry(&mut text, &scraped);
        let _ = prometheus_client::encoding::text::encode_eof(&mut text);
        text
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// Reads the server's own counters at scrape time.
struct SourcesCollector(Sources);

impl std::fmt::Debug for SourcesCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SourcesCollector")
    }
}

/// One sample without labels.
fn counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: impl prometheus_client::encoding::EncodeCounterValue,
) -> std::fmt::Result {
    let metric = ConstCounter::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: impl prometheus_client::encoding::EncodeGaugeValue,
) -> std::fmt::Result {
    let metric = ConstGauge::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

fn seconds(nanos: u64) -> f64 {
    nanos as f64 / 1e9
}

impl Collector for SourcesCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let sources = &self.0;
        let e = &mut encoder;
        let info = ConstGauge::new(1i64);
        info.encode(
            e.encode_descriptor(
                "arca_build_info",
                "arca's version (always 1)",
                None,
                info.metric_type(),
            )?
            .encode_family(&[("version", env!("CARGO_PKG_VERSION"))])?,
        )?;
        gauge(
            e,
            "arca_uptime_seconds",
            "Seconds since the server started",
            sources.started.elapsed().as_secs_f64(),
        )?;
        self.kernel(e)?;
        self.search(e)?;
        self.events(e)?;
        if let Some(audit) = &sources.audit {
            audit_metrics(e, &audit.status())?;
        }
        if let Some(replication) = &sources.replication {
            replica_metrics(e, &replication.status())?;
        }
        gauge(
            e,
            "arca_fixity_damaged_files",
            "Files a fixity audit found damaged and nothing has repaired (not served)",
            sources.repo.damage().len() as u64,
        )?;
        self.disk(e)?;
        process(e)
    }
}

impl SourcesCollector {
    /// The write path's counters (`Repository::phases`, the journal, checkpoints, the
    /// publisher).
    fn kernel(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let repo = &self.0.repo;
        let phases = &repo.phases;
        let load = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        counter(
            e,
            "arca_kernel_writes",
            "Writes the kernel executed (each may change several resources)",
            load(&phases.writes),
        )?;
        let phase_seconds = ConstCounter::new(0.0);
        let mut family = e.encode_descriptor(
            "arca_kernel_write_phase_seconds",
            "Time writes spent in each phase: stage (new versions under staging), journal \
             (waiting for the group commit), catalog (the catalog transaction), publish \
             (into the root, after the answer)",
            None,
            phase_seconds.metric_type(),
        )?;
        for (phase, nanos) in [
            ("stage", load(&phases.stage)),
            ("journal", load(&phases.journal)),
            ("catalog", load(&phases.catalog)),
            ("publish", load(&phases.publish)),
        ] {
            ConstCounter::new(seconds(nanos)).encode(family.encode_family(&[("phase", phase)])?)?;
        }
        let journal = repo.journal_stats();
        counter(
            e,
            "arca_journal_records",
            "Records appended to the write-ahead journal",
            journal.records,
        )?;
        counter(
            e,
            "arca_journal_fsyncs",
            "fdatasync calls of the journal (group commits)",
            journal.fsyncs,
        )?;
        counter(
            e,
            "arca_journal_fsync_seconds",
            "Time spent writing and syncing journal batches",
            seconds(journal.sync_nanos),
        )?;
        counter(
            e,
            "arca_checkpoints",
            "Checkpoints completed (root and catalog durable, journal trimmed)",
            journal.checkpoints,
        )?;
        let sync = repo.sync_stats();
        counter(
            e,
            "arca_checkpoint_syncs",
            "File system syncs of checkpoints",
            sync.syncs,
        )?;
        counter(
            e,
            "arca_checkpoint_sync_seconds",
            "Time spent in file system syncs of checkpoints",
            seconds(sync.sync_nanos),
        )?;
        gauge(
            e,
            "arca_publish_backlog",
            "Writes acknowledged and not yet written into the OCFL root",
            repo.publish_backlog() as u64,
        )
    }

    fn search(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let Some(search) = &self.0.search else {
            return Ok(());
        };
        let status = search.status();
        gauge(
            e,
            "arca_search_documents",
            "Documents in the search index",
            status.documents,
        )?;
        gauge(
            e,
            "arca_search_lag_changes",
            "Changes committed and not yet indexed",
            status.lag,
        )?;
        gauge(
            e,
            "arca_search_segments",
            "Segments of the search index (each query visits every one)",
            status.segments as u64,
        )?;
        counter(
            e,
            "arca_search_extraction_seconds",
            "Time spent extracting text from binaries for the index",
            status.extraction.seconds,
        )?;
        counter(
            e,
            "arca_search_extraction_failures",
            "Binaries whose text could not be extracted",
            status.extraction.failed,
        )
    }

    fn events(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let deliveries = &self.0.deliveries;
        if deliveries.is_empty() {
            return Ok(());
        }
        let last_change = *self.0.repo.catalog().last_change().borrow();
        let pending = ConstGauge::new(0i64);
        let mut family = e.encode_descriptor(
            "arca_events_pending",
            "Events committed and not yet acknowledged by the broker, per destination",
            None,
            pending.metric_type(),
        )?;
        for d in deliveries {
            ConstGauge::new((last_change - d.delivered()).max(0))
                .encode(family.encode_family(&[("destination", d.name.as_str())])?)?;
        }
        let mut family = e.encode_descriptor(
            "arca_events_lag_seconds",
            "How long the oldest undelivered event has waited, per destination",
            None,
            pending.metric_type(),
        )?;
        for d in deliveries {
            ConstGauge::new(d.waiting_for().as_secs_f64())
                .encode(family.encode_family(&[("destination", d.name.as_str())])?)?;
        }
        let mut family = e.encode_descriptor(
            "arca_events_connected",
            "1 while a connection to the destination's broker is open",
            None,
            pending.metric_type(),
        )?;
        for d in deliveries {
            ConstGauge::new(i64::from(d.connected()))
                .encode(family.encode_family(&[("destination", d.name.as_str())])?)?;
        }
        Ok(())
    }

    /// The data directory's file system (local storage only).
    fn disk(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let Some(stat) = self
            .0
            .data_dir
            .as_ref()
            .and_then(|dir| rustix::fs::statvfs(dir).ok())
        else {
            return Ok(());
        };
        gauge(
            e,
            "arca_disk_size_bytes",
            "Size of the data directory's file system",
            stat.f_blocks.saturating_mul(stat.f_frsize),
        )?;
        gauge(
            e,
            "arca_disk_free_bytes",
            "Bytes of the data directory's file system available to arca",
            stat.f_bavail.saturating_mul(stat.f_frsize),
        )?;
        gauge(
            e,
            "arca_disk_used_bytes",
            "Bytes in use on the data directory's file system (by arca and anything else)",
            stat.f_blocks
                .saturating_sub(stat.f_bfree)
                .saturating_mul(stat.f_frsize),
        )
    }
}

/// The background fixity audit: the running run's progress, the last run's figures (its
/// findings by kind), and when the last complete run ended.
fn audit_metrics(
    e: &mut DescriptorEncoder,
    status: &arca_fixity::schedule::AuditStatus,
) -> std::fmt::Result {
    let p = &status.progress;
    gauge(
        e,
        "arca_audit_running",
        "1 while a fixity audit runs",
        i64::from(p.running),
    )?;
    gauge(
        e,
        "arca_audit_progress_objects",
        "Objects the running audit has checked (0 when none runs)",
        p.objects,
    )?;
    gauge(
        e,
        "arca_audit_progress_bytes",
        "Bytes the running audit has read and hashed (0 when none runs)",
        p.bytes,
    )?;
    let Some(last) = &status.last else {
        return Ok(());
    };
    gauge(
        e,
        "arca_audit_last_objects",
        "Objects the last audit run checked",
        last.objects,
    )?;
    gauge(
        e,
        "arca_audit_last_bytes",
        "Bytes the last audit run read and hashed",
        last.bytes,
    )?;
    gauge(
        e,
        "arca_audit_last_repairs",
        "Findings the last audit run repaired",
        last.repaired,
    )?;
    gauge(
        e,
        "arca_audit_last_unrepaired",
        "Findings of the last audit run that are not repaired",
        status.damaged,
    )?;
    let mut by_kind: std::collections::BTreeMap<String, u64> = Default::default();
    for f in &last.findings {
        let kind = serde_json::to_value(f.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        *by_kind.entry(kind).or_default() += 1;
    }
    let metric = ConstGauge::new(0i64);
    let mut family = e.encode_descriptor(
        "arca_audit_last_findings",
        "Findings of the last audit run, by kind",
        None,
        metric.metric_type(),
    )?;
    for (kind, n) in &by_kind {
        ConstGauge::new(*n as i64).encode(family.encode_family(&[("kind", kind.as_str())])?)?;
    }
    if let Some(end) = last
        .finished
        .as_deref()
        .filter(|_| last.complete)
        .and_then(arca_model::parse_instant)
    {
        gauge(
            e,
            "arca_audit_last_complete_end_timestamp_seconds",
            "When the last complete audit run ended (seconds since 1970)",
            end.unix_timestamp(),
        )?;
    }
    Ok(())
}

/// Each replica: its lag, what it copied, whether its copies fail.
fn replica_metrics(
    e: &mut DescriptorEncoder,
    statuses: &[arca_fixity::replica::ReplicaStatus],
) -> std::fmt::Result {
    if statuses.is_empty() {
        return Ok(());
    }
    let gauge_type = ConstGauge::new(0i64).metric_type();
    let counter_type = ConstCounter::new(0u64).metric_type();
    let mut family = e.encode_descriptor(
        "arca_replica_lag_changes",
        "Changes committed and not yet copied, per replica",
        None,
        gauge_type,
    )?;
    for r in statuses {
        ConstGauge::new(r.lag.max(0)).encode(family.encode_family(&[("replica", &r.name)])?)?;
    }
    let mut family = e.encode_descriptor(
        "arca_replica_copied_objects",
        "Objects copied to the replica since the server started",
        None,
        counter_type,
    )?;
    for r in statuses {
        ConstCounter::new(r.objects_copied)
            .encode(family.encode_family(&[("replica", &r.name)])?)?;
    }
    let mut family = e.encode_descriptor(
        "arca_replica_copied_bytes",
        "Bytes copied to the replica since the server started",
        None,
        counter_type,
    )?;
    for r in statuses {
        ConstCounter::new(r.bytes_copied).encode(family.encode_family(&[("replica", &r.name)])?)?;
    }
    let mut family = e.encode_descriptor(
        "arca_replica_failing",
        "1 while copies to the replica fail (they are retried)",
        None,
        gauge_type,
    )?;
    for r in statuses {
        ConstGauge::new(i64::from(r.error.is_some()))
            .encode(family.encode_family(&[("replica", &r.name)])?)?;
    }
    Ok(())
}

/// The process's CPU time and memory, under the names Prometheus's own clients use.
fn process(e: &mut DescriptorEncoder) -> std::fmt::Result {
    let Ok(me) = procfs::process::Process::myself() else {
        return Ok(());
    };
    let Ok(stat) = me.stat() else {
        return Ok(());
    };
    let ticks = procfs::ticks_per_second().max(1) as f64;
    counter(
        e,
        "process_cpu_seconds",
        "User and system CPU time spent",
        (stat.utime + stat.stime) as f64 / ticks,
    )?;
    gauge(
        e,
        "process_resident_memory_bytes",
        "Resident memory size",
        stat.rss.saturating_mul(procfs::page_size()),
    )?;
    gauge(
        e,
        "process_virtual_memory_bytes",
        "Virtual memory size",
        stat.vsize,
    )?;
    gauge(
        e,
        "process_threads",
        "Threads of the process",
        stat.num_threads,
    )?;
    if let Ok(fds) = me.fd_count() {
        gauge(e, "process_open_fds", "Open file descriptors", fds as u64)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requests_text(metrics: &Metrics) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &metrics.registry).unwrap();
        text
    }

    #[test]
    fn requests_are_counted_by_method_class_and_status() {
        let metrics = Metrics::new();
        let read = RequestKind::of(RouteClass::Read);
        metrics.record(
            &http::Method::GET,
            read,
            http::StatusCode::OK,
            Duration::from_millis(3),
        );
        metrics.record(
            &http::Method::GET,
            read,
            http::StatusCode::OK,
            Duration::from_millis(40),
        );
        metrics.record(
            &http::Method::HEAD,
            RequestKind::of(RouteClass::MetricsHealth),
            http::StatusCode::NOT_FOUND,
            Duration::from_millis(1),
        );
        let text = requests_text(&metrics);
        assert!(
            text.contains("# HELP arca_http_requests HTTP requests answered"),
            "{text}"
        );
        assert!(text.contains("# TYPE arca_http_requests counter"), "{text}");
        assert!(
            text.contains(r#"arca_http_requests_total{method="GET",class="read",status="200"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"arca_http_requests_total{method="HEAD",class="metrics/health",status="404"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains("# TYPE arca_http_request_duration_seconds histogram"),
            "{text}"
        );
        // 3 ms and 40 ms: one below 5 ms, both below 50 ms.
        assert!(
            text.contains(
                r#"arca_http_request_duration_seconds_bucket{le="0.005",method="GET",class="read"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"arca_http_request_duration_seconds_bucket{le="0.05",method="GET",class="read"} 2"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"arca_http_request_duration_seconds_count{method="GET",class="read"} 2"#
            ),
            "{text}"
        );
        assert_eq!(metrics.reads_total(), 2);
    }

    #[test]
    fn writes_are_counted_by_kind_only_when_they_succeed() {
        let metrics = Metrics::new();
        let create = RequestKind::write(RouteClass::Write, WriteKind::Create);
        let purge = RequestKind::write(RouteClass::Write, WriteKind::Purge);
        let t = Duration::from_millis(2);
        metrics.record(&http::Method::POST, create, http::StatusCode::CREATED, t);
        metrics.record(&http::Method::POST, create, http::StatusCode::CONFLICT, t);
        metrics.record(
            &http::Method::DELETE,
            purge,
            http::StatusCode::NO_CONTENT,
            t,
        );
        metrics.uploads().add(1234);
        let text = requests_text(&metrics);
        assert!(text.contains("# TYPE arca_writes counter"), "{text}");
        assert!(
            text.contains(r#"arca_writes_total{kind="create"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"arca_writes_total{kind="purge"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"arca_http_requests_total{method="POST",class="write",status="409"} 1"#
            ),
            "{text}"
        );
        assert!(text.contains("arca_http_upload_bytes_total 1234"), "{text}");
        // Writes are not reads.
        assert_eq!(metrics.reads_total(), 0);
    }

    #[test]
    fn unusual_methods_share_one_label() {
        let metrics = Metrics::new();
        let t = Duration::from_millis(1);
        for method in ["PROPFIND", "MKCOL", "BREW"] {
            let method = http::Method::from_bytes(method.as_bytes()).unwrap();
            let kind = RequestKind::of(RouteClass::Other);
            metrics.record(&method, kind, http::StatusCode::METHOD_NOT_ALLOWED, t);
        }
        let text = requests_text(&metrics);
        assert!(
            text.contains(
                r#"arca_http_requests_total{method="other",class="other",status="405"} 3"#
            ),
            "{text}"
        );
        assert!(!text.contains("PROPFIND"), "{text}");
    }

    #[test]
    fn the_classic_format_names_counters_by_their_samples() {
        let metrics = Metrics::new();
        metrics.uploads().add(7);
        let t = Duration::from_millis(1);
        let kind = RequestKind::of(RouteClass::Read);
        metrics.record(&http::Method::GET, kind, http::StatusCode::OK, t);
        let text = classic(&requests_text(&metrics));
        assert!(
            text.contains("# HELP arca_http_upload_bytes_total Request body bytes"),
            "{text}"
        );
        assert!(
            text.contains(
                "# TYPE arca_http_upload_bytes_total counter\narca_http_upload_bytes_total 7\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("# TYPE arca_http_request_duration_seconds histogram"),
            "{text}"
        );
        assert!(!text.contains("# EOF"), "{text}");
    }

    #[test]
    fn collection_can_be_switched_off() {
        let metrics = Metrics::new();
        assert!(metrics.enabled());
        metrics.set_enabled(false);
        assert!(!metrics.enabled());
    }

    #[test]
    fn audit_and_replica_figures_are_exposed() {
        #[derive(Debug)]
        struct Fixity;
        impl Collector for Fixity {
            fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
                let finding = |kind| arca_fixity::Finding {
                    object: "info:fedora/a".into(),
                    version: None,
                    logical_path: None,
                    content_path: None,
                    kind,
                    expected: None,
                    actual: None,
                    repaired: false,
                    message: String::new(),
                };
                let status = arca_fixity::schedule::AuditStatus {
                    progress: arca_fixity::audit::ProgressSnapshot {
                        running: true,
                        objects: 3,
                        bytes: 4096,
                        ..Default::default()
                    },
                    last: Some(arca_fixity::Report {
                        finished: Some("2026-11-29T10:00:00Z".into()),
                        complete: true,
                        objects: 10,
                        bytes: 1000,
                        repaired: 1,
                        findings: vec![
                            finding(arca_fixity::FindingKind::ContentDigest),
                            finding(arca_fixity::FindingKind::ContentDigest),
                            finding(arca_fixity::FindingKind::ContentMissing),
                        ],
                        ..Default::default()
                    }),
                    next_run: None,
                    damaged: 2,
                };
                audit_metrics(&mut encoder, &status)?;
                replica_metrics(
                    &mut encoder,
                    &[arca_fixity::replica::ReplicaStatus {
                        name: "offsite".into(),
                        lag: 7,
                        objects_copied: 5,
                        bytes_copied: 500,
                        error: Some("refused".into()),
                        ..Default::default()
                    }],
                )
            }
        }
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Fixity));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            "arca_audit_running 1",
            "arca_audit_progress_objects 3",
            "arca_audit_progress_bytes 4096",
            "arca_audit_last_objects 10",
            "arca_audit_last_bytes 1000",
            "arca_audit_last_repairs 1",
            "arca_audit_last_unrepaired 2",
            "arca_audit_last_findings{kind=\"content_digest\"} 2",
            "arca_audit_last_findings{kind=\"content_missing\"} 1",
            "arca_audit_last_complete_end_timestamp_seconds 1795946400",
            "arca_replica_lag_changes{replica=\"offsite\"} 7",
            "arca_replica_copied_objects_total{replica=\"offsite\"} 5",
            "arca_replica_copied_bytes_total{replica=\"offsite\"} 500",
            "arca_replica_failing{replica=\"offsite\"} 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from {text}"
            );
        }
    }

    #[test]
    fn process_figures_are_read_from_proc() {
        let mut text = String::new();
        let mut registry = Registry::default();
        #[derive(Debug)]
        struct Process;
        impl Collector for Process {
            fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
                process(&mut encoder)
            }
        }
        registry.register_collector(Box::new(Process));
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("# TYPE process_cpu_seconds counter"),
            "{text}"
        );
        let rss: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("process_resident_memory_bytes "))
            .expect("a resident memory sample")
            .parse()
            .unwrap();
        assert!(rss > 0.0, "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
