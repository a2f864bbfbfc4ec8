//! The report: what `report.json` holds (and what tests read back with [`Report::load`]), and
//! its Markdown rendering in the studies' columns.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::args::{format_size, Scenario};

use crate::procfs::{Machine, ProcStats};
use crate::recorder::{Interval, Summary};

/// The kind of a report row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Objects ingested over HTTP.
    Ingest,
    /// GETs over HTTP after a setup ingest.
    Access,
    /// Object-only ingest reported per interval.
    BurnIn,
    /// The plain file-writing (or reading) program.
    Raw,
    /// The search scenario: loading, queries with updates mixed in, visibility, reindex.
    Search,
    /// The audit scenario's own rows: read runs over the root, serving ratios, replica lag.
    Audit,
}

/// How a row ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Ran to its time or count limit.
    Completed,
    /// Stopped early (every transaction failing, setup failed, disk budget...).
    Aborted,
    /// Stopped by Ctrl-C; the figures cover the part that ran.
    Interrupted,
    /// The scenario does not exist yet.
    NotAvailable,
}

/// The limits and sizes a row ran with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseConfig {
    /// Concurrent clients (raw: threads).
    pub clients: usize,
    /// Time limit, seconds.
    pub duration_s: Option<f64>,
    /// Transaction limit.
    pub count: Option<u64>,
    /// Payload bytes per object.
    pub size_bytes: u64,
    /// Objects ingested (or files written) before measuring reads.
    pub objects: Option<u64>,
    /// Raw rows: whether every file was fsynced.
    pub fsync: Option<bool>,
    /// Burn-in interval, seconds.
    pub interval_s: Option<f64>,
    /// raw-hash rows: the digest algorithm.
    #[serde(default)]
    pub digest: Option<String>,
    /// raw-layout rows: whether each object has a binary besides its container.
    #[serde(default)]
    pub with_binary: Option<bool>,
    /// raw-layout rows: seconds between two `syncfs` of the file system.
    #[serde(default)]
    pub syncfs_every_s: Option<f64>,
}

/// Disk growth of the data directory during a row.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskStats {
    /// The directory measured.
    pub dir: String,
    /// Allocated bytes before.
    pub bytes_before: u64,
    /// Allocated bytes after.
    pub bytes_after: u64,
    /// Files after (with `method` "file system": the file system's inodes in use).
    pub files_after: u64,
    /// How it was measured: "walk" (the directory's files), "file system" (the whole file
    /// system's used bytes and inodes, when the walk took too long) or "none".
    #[serde(default)]
    pub method: String,
    /// Growth divided by the objects created.
    pub bytes_per_object: Option<f64>,
}

/// A row's ratio to the raw baseline measured in the same run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RawComparison {
    /// The baseline row (`raw-fsync-20KiB-16t`, or `raw-read-…` for access).
    pub baseline: String,
    /// What is compared: `objects/s` (object-only, small) or `MB/s` (medium, large); for the
    /// same object size the two ratios are equal.
    pub basis: String,
    /// The baseline's objects (files) per second.
    pub raw_tps: f64,
    /// The baseline's MB/s.
    pub raw_mb_per_s: f64,
    /// 100 × this row ÷ baseline.
    pub pct_of_raw: Option<f64>,
    /// The no-fsync baseline row, for ingest.
    pub nofsync_baseline: Option<String>,
    /// 100 × this row ÷ the no-fsync baseline.
    pub pct_of_raw_nofsync: Option<f64>,
    /// The raw-layout row (ingest): arca's files for the same objects, with a `syncfs` every
    /// 5 s.
    #[serde(default)]
    pub layout_baseline: Option<String>,
    /// 100 × this row ÷ the raw-layout row.
    #[serde(default)]
    pub pct_of_raw_layout: Option<f64>,
    /// The raw-hash row (ingest of objects of 1 MiB or more).
    #[serde(default)]
    pub hash_baseline: Option<String>,
    /// 100 × this row ÷ the raw-hash row.
    #[serde(default)]
    pub pct_of_raw_hash: Option<f64>,
}

/// The load generator's own cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadgenStats {
    /// CPU use of this process over the row, percent of one core.
    pub cpu_pct: f64,
    /// CPU time per transaction, ms.
    pub cpu_ms_per_tx: f64,
    /// Peak resident memory of the load generator so far (VmHWM), MB.
    #[serde(default)]
    pub peak_rss_mb: Option<f64>,
    /// Set when the load generator may have been the bottleneck.
    pub warning: Option<String>,
}

/// The ingest an access row did before measuring.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SetupReport {
    /// Objects asked for.
    pub objects_requested: u64,
    /// Objects created.
    pub objects_created: u64,
    /// Failed object creations.
    pub errors: u64,
    /// Requests sent.
    pub requests: u64,
    /// Requests by answer.
    pub status_codes: std::collections::BTreeMap<String, u64>,
    /// Seconds it took.
    pub elapsed_s: f64,
    /// The first failure.
    pub first_error: Option<crate::recorder::FirstError>,
}

/// One row of the report: a measured phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioReport {
    /// Row name (`ingest-small`, `benchtool-1-client`, `raw-fsync-20KiB-16t`, ...).
    pub name: String,
    /// The scenario asked for on the command line.
    pub scenario: Scenario,
    /// What the row measures.
    pub kind: Kind,
    /// How it ended.
    pub status: Status,
    /// Why it ended early, or what to know about it.
    pub note: Option<String>,
    /// Limits and sizes.
    pub config: PhaseConfig,
    /// Seconds from the first transaction started to the last one finished.
    pub elapsed_s: f64,
    /// Counts, rates, latencies, status codes, timeline.
    #[serde(flatten)]
    pub summary: Summary,
    /// Objects (raw: files) created by this row.
    pub objects_created: u64,
    /// Server CPU, memory and I/O (raw rows: the writing program's own).
    pub server: Option<ProcStats>,
    /// Data directory growth.
    pub disk: Option<DiskStats>,
    /// Ratio to the raw baseline.
    pub raw: Option<RawComparison>,
    /// The load generator's own CPU use.
    pub loadgen: Option<LoadgenStats>,
    /// Access rows: the ingest before measuring.
    pub setup: Option<SetupReport>,
    /// Burn-in rows: throughput per interval.
    #[serde(default)]
    pub intervals: Vec<Interval>,
    /// Search rows: what the step measured besides the summary.
    #[serde(default)]
    pub search: Option<SearchDetail>,
    /// Audit rows: what the step measured.
    #[serde(default)]
    pub audit: Option<crate::audit::AuditDetail>,
}

/// Latency figures of transactions counted apart from a row's own (search: the updates mixed
/// into a cell, the writes of the visibility row, the time until an update is found).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latencies {
    /// Successful ones.
    pub ok: u64,
    /// Failed ones.
    pub errors: u64,
    /// Successful ones per second of the row's time.
    pub per_s: f64,
    /// Mean, ms.
    pub mean_ms: f64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
    /// Requests by answer.
    pub status_codes: BTreeMap<String, u64>,
    /// The first failure.
    pub first_error: Option<crate::recorder::FirstError>,
}

impl From<&Summary> for Latencies {
    fn from(s: &Summary) -> Self {
        Latencies {
            ok: s.ok,
            errors: s.errors,
            per_s: s.tps,
            mean_ms: s.mean_ms,
            p50_ms: s.p50_ms,
            p99_ms: s.p99_ms,
            max_ms: s.max_ms,
            status_codes: s.status_codes.clone(),
            first_error: s.first_error.clone(),
        }
    }
}

/// What a search row measured, by step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum SearchDetail {
    /// Loading the records (the row's transactions: one record, with its PDF if it has one).
    Load(SearchLoad),
    /// One cell of the matrix (the row's transactions: the queries).
    Cell(Box<SearchCell>),
    /// One updater alone, each update followed until a query finds it (the row's
    /// transactions: the time from the write's answer to the first query answer with it).
    Visibility(SearchVisibility),
    /// A full reindex (the row's one transaction: from the request to the end).
    Reindex(SearchReindex),
}

impl SearchDetail {
    /// The corpus size the step ran at.
    pub fn objects(&self) -> u64 {
        match self {
            SearchDetail::Load(l) => l.objects,
            SearchDetail::Cell(c) => c.objects,
            SearchDetail::Visibility(v) => v.objects,
            SearchDetail::Reindex(r) => r.objects,
        }
    }

    /// Failures outside the row's summary (updates, visibility).
    pub fn errors(&self) -> u64 {
        match self {
            SearchDetail::Cell(c) => {
                c.updates.as_ref().map_or(0, |u| u.errors)
                    + c.visibility.as_ref().map_or(0, |v| v.errors)
            }
            SearchDetail::Visibility(v) => v.writes.errors,
            SearchDetail::Load(_) | SearchDetail::Reindex(_) => 0,
        }
    }

    /// Transactions outside the row's summary.
    pub fn transactions(&self) -> u64 {
        match self {
            SearchDetail::Cell(c) => c.updates.as_ref().map_or(0, |u| u.ok + u.errors),
            _ => 0,
        }
    }
}

/// The load step of one corpus size.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchLoad {
    /// Records present after the step.
    pub objects: u64,
    /// Records already present before it (found by their marker).
    pub present_before: u64,
    /// Records sent by this step.
    pub loaded: u64,
    /// Of the `objects`, those with a PDF child.
    pub with_pdf: u64,
    /// `copy` or `proxy`.
    pub pdf_mode: String,
    /// Seconds from the load's end until the index had caught up (`lag` 0 and every PDF
    /// extracted); `None` when it did not within the wait.
    pub catch_up_s: Option<f64>,
    /// Documents in the index then.
    pub documents: Option<u64>,
    /// The extraction counters' growth during the step and the wait: extracted, failed, cached.
    pub extraction: Option<[u64; 3]>,
}

/// One cell of the query matrix.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchCell {
    /// Records present.
    pub objects: u64,
    /// 1, 2 or 3.
    pub query_no: usize,
    /// The Lucene query.
    pub query: String,
    /// Client threads.
    pub threads: usize,
    /// Percent of operations that were updates.
    pub update_pct: u32,
    /// The smallest `totalResults` answered.
    pub hits_min: Option<u64>,
    /// The largest `totalResults` answered (differs from `hits_min` when unstable).
    pub hits_max: Option<u64>,
    /// The hit count computed from the records loaded (`None` when it depends on PDF text
    /// not known).
    pub expected: Option<u64>,
    /// The updates mixed in (their latency is the write's).
    pub updates: Option<Latencies>,
    /// From each update's answer until a query first found it.
    pub visibility: Option<Latencies>,
}

/// The write-to-visible step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchVisibility {
    /// Records present.
    pub objects: u64,
    /// The updates themselves.
    pub writes: Latencies,
}

/// The reindex step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchReindex {
    /// Records present.
    pub objects: u64,
    /// Documents reindexed, by the server.
    pub documents: Option<u64>,
    /// Documents the server meant to reindex.
    pub total: Option<u64>,
    /// The server's figure of its duration, seconds.
    pub server_seconds: Option<f64>,
    /// The server's figure of its rate.
    pub server_objects_per_s: Option<f64>,
    /// Seconds from the request's answer to the first status showing it finished (polled
    /// every 50 ms).
    pub client_seconds: f64,
    /// `documents` over `client_seconds`.
    pub client_objects_per_s: Option<f64>,
}

impl ScenarioReport {
    /// An empty row.
    pub fn new(name: &str, scenario: Scenario, kind: Kind, config: PhaseConfig) -> Self {
        ScenarioReport {
            name: name.to_string(),
            scenario,
            kind,
            status: Status::Completed,
            note: None,
            config,
            elapsed_s: 0.0,
            summary: Summary::default(),
            objects_created: 0,
            server: None,
            disk: None,
            raw: None,
            loadgen: None,
            setup: None,
            intervals: Vec::new(),
            search: None,
            audit: None,
        }
    }

    /// Failed transactions, the setup's and the search updates' included.
    pub fn errors_total(&self) -> u64 {
        self.summary.errors
            + self.setup.as_ref().map_or(0, |s| s.errors)
            + self.search.as_ref().map_or(0, SearchDetail::errors)
    }
}

/// Where the server under test was.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// Base URL (absent for raw-only runs).
    pub url: Option<String>,
    /// Whether arca was started by this run.
    pub spawned: bool,
    /// The server's `Server` header.
    pub server_header: Option<String>,
    /// What `GET {base}` answered before the run (`200`, or the error).
    pub probe: Option<String>,
    /// PID sampled from /proc.
    pub pid: Option<u32>,
    /// Data directory measured.
    pub data_dir: Option<String>,
}

/// The whole report of one invocation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// `arca-bench`.
    pub tool: String,
    /// Its version.
    pub version: String,
    /// The exact command line.
    pub command: String,
    /// RFC 3339 start time.
    pub started_at: String,
    /// RFC 3339 end time (of the last row written).
    pub finished_at: String,
    /// The machine.
    pub machine: Machine,
    /// The server.
    pub target: TargetInfo,
    /// Whether Ctrl-C stopped the run.
    pub interrupted: bool,
    /// Failed transactions over all rows (setups included).
    pub errors: u64,
    /// The first line of the summary: whether any error occurred.
    pub summary: String,
    /// The rows, in the order they ran.
    pub scenarios: Vec<ScenarioReport>,
    /// Remarks on the run.
    pub notes: Vec<String>,
}

impl Report {
    /// Reads a `report.json`.
    pub fn load(path: &Path) -> anyhow::Result<Report> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }

    /// The row called `name`.
    pub fn row(&self, name: &str) -> Option<&ScenarioReport> {
        self.scenarios.iter().find(|s| s.name == name)
    }

    /// Recomputes `errors` and `summary` from the rows.
    pub fn refresh_summary(&mut self) {
        self.errors = self
            .scenarios
            .iter()
            .map(ScenarioReport::errors_total)
            .sum();
        let mut codes = std::collections::BTreeMap::<String, u64>::new();
        let mut per_row = Vec::new();
        for s in &self.scenarios {
            let setup = s.setup.as_ref().map(|x| &x.status_codes);
            let updates = match &s.search {
                Some(SearchDetail::Cell(c)) => c.updates.as_ref().map(|u| &u.status_codes),
                Some(SearchDetail::Visibility(v)) => Some(&v.writes.status_codes),
                _ => None,
            };
            for (c, n) in s
                .summary
                .status_codes
                .iter()
                .chain(setup.into_iter().flatten())
                .chain(updates.into_iter().flatten())
            {
                if !is_success_key(c) {
                    *codes.entry(c.clone()).or_default() += n;
                }
            }
            let failed = s.errors_total();
            if failed > 0 {
                let setup_tx = s.setup.as_ref().map_or(0, |x| x.objects_created + x.errors);
                let extra_tx = s.search.as_ref().map_or(0, SearchDetail::transactions);
                per_row.push(format!(
                    "{} {} of {}",
                    s.name,
                    failed,
                    s.summary.transactions + setup_tx + extra_tx
                ));
            }
        }
        let aborted: Vec<&str> = self
            .scenarios
            .iter()
            .filter(|s| s.status == Status::Aborted)
            .map(|s| s.name.as_str())
            .collect();
        let mut line = String::new();
        if self.interrupted {
            line.push_str("INTERRUPTED (Ctrl-C): partial report. ");
        }
        if self.errors == 0 {
            line.push_str("No errors: every transaction succeeded.");
        } else {
            let list: Vec<String> = codes.iter().map(|(c, n)| format!("{c} ×{n}")).collect();
            let _ = write!(
                line,
                "ERRORS: {} failed transaction{} ({}; failed requests: {}).",
                self.errors,
                if self.errors == 1 { "" } else { "s" },
                per_row.join(", "),
                if list.is_empty() {
                    "none".to_string()
                } else {
                    list.join(", ")
                }
            );
        }
        if !aborted.is_empty() {
            let _ = write!(line, " Aborted: {}.", aborted.join(", "));
        }
        self.summary = line;
    }

    /// Whether anything failed or stopped early (the exit status is then non-zero).
    pub fn has_failures(&self) -> bool {
        self.errors > 0 || self.scenarios.iter().any(|s| s.status == Status::Aborted)
    }

    /// The Markdown report: summary line, command, machine, the table, errors, intervals.
    pub fn to_markdown(&self) -> String {
        let mut m = String::new();
        let _ = writeln!(m, "**{}**\n", self.summary);
        let _ = writeln!(m, "- Command: `{}`", self.command);
        let t = &self.target;
        if let Some(url) = &t.url {
            let _ = writeln!(
                m,
                "- Server: {url}{}{}{}",
                if t.spawned { " (spawned arca)" } else { "" },
                t.server_header
                    .as_ref()
                    .map(|s| format!(", Server: {s}"))
                    .unwrap_or_default(),
                t.pid.map(|p| format!(", pid {p}")).unwrap_or_default(),
            );
        }
        let mc = &self.machine;
        let _ = writeln!(
            m,
            "- Machine: {} — {} × {}, {} GB RAM, Linux {}{}",
            mc.hostname,
            mc.cpus,
            if mc.cpu_model.is_empty() {
                "CPU"
            } else {
                &mc.cpu_model
            },
            mc.memory_gb,
            mc.kernel,
            mc.data_fs
                .as_ref()
                .map(|f| format!(", data on {f}"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            m,
            "- Run: {} → {}, arca-bench {}\n",
            self.started_at, self.finished_at, self.version
        );
        let table: Vec<&ScenarioReport> = self
            .scenarios
            .iter()
            .filter(|s| s.search.is_none() && s.audit.is_none())
            .collect();
        if !table.is_empty() {
            m.push_str(
                "| Scenario | Clients | Size | OK | Avg TPS | Avg resp (ms) | p50 (ms) | p99 (ms) \
                 | Max server CPU (%) | Server CPU ms/tx | Max I/O burst (MB/s) | Avg MB/s | Peak RSS (MB) \
                 | Disk/object | Errors | % of raw | % of raw-layout | % of raw-hash \
                 | Loadgen CPU (%) |\n",
            );
            m.push_str(
                "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
            );
        }
        for s in table {
            let name = match s.status {
                Status::Completed => s.name.clone(),
                Status::Aborted => format!("{} (aborted)", s.name),
                Status::Interrupted => format!("{} (interrupted)", s.name),
                Status::NotAvailable => format!("{} (not available yet)", s.name),
            };
            let sv = s.server.as_ref();
            let _ = writeln!(
                m,
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                s.config.clients,
                format_size(s.config.size_bytes),
                s.summary.ok,
                num(s.summary.tps),
                num(s.summary.mean_ms),
                num(s.summary.p50_ms),
                num(s.summary.p99_ms),
                opt(sv.map(|x| x.max_cpu_pct)),
                sv.and_then(|x| x.cpu_ms_per_tx)
                    .map_or_else(|| "–".into(), |ms| format!("{ms:.3}")),
                opt(sv.and_then(|x| x.max_io_mb_s)),
                num(s.summary.mb_per_s),
                opt(sv.and_then(|x| x.peak_rss_mb)),
                s.disk
                    .as_ref()
                    .and_then(|d| d.bytes_per_object)
                    .map_or("–".into(), bytes),
                s.errors_total(),
                pct(s.raw.as_ref().and_then(|r| r.pct_of_raw)),
                pct(s.raw.as_ref().and_then(|r| r.pct_of_raw_layout)),
                pct(s.raw.as_ref().and_then(|r| r.pct_of_raw_hash)),
                opt(s.loadgen.as_ref().map(|l| l.cpu_pct)),
            );
        }
        m.push('\n');
        crate::search::markdown(&mut m, &self.scenarios);
        crate::audit::markdown(&mut m, &self.scenarios);

        let mut errors = String::new();
        for s in &self.scenarios {
            let codes = |c: &std::collections::BTreeMap<String, u64>| {
                c.iter()
                    .map(|(k, v)| format!("{k} ×{v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if s.errors_total() > 0 || s.note.is_some() {
                let _ = write!(errors, "- **{}**: ", s.name);
                if !s.summary.status_codes.is_empty() {
                    let _ = write!(errors, "requests {}", codes(&s.summary.status_codes));
                }
                if let Some(setup) = &s.setup {
                    let _ = write!(errors, "; setup requests {}", codes(&setup.status_codes));
                }
                let first = s
                    .summary
                    .first_error
                    .as_ref()
                    .or(s.setup.as_ref().and_then(|x| x.first_error.as_ref()));
                if let Some(fe) = first {
                    let _ = write!(
                        errors,
                        "; first error at {:.1} s after {} ok: {} ({})",
                        fe.at_s, fe.after_ok, fe.code, fe.message
                    );
                }
                if let Some(n) = &s.note {
                    let _ = write!(errors, "; {n}");
                }
                errors.push('\n');
            }
        }
        if !errors.is_empty() {
            let _ = writeln!(m, "Errors and notes by scenario:\n\n{errors}");
        }

        for s in self.scenarios.iter().filter(|s| !s.intervals.is_empty()) {
            let _ = writeln!(m, "Intervals of {}:\n", s.name);
            m.push_str("| From (s) | To (s) | OK | Errors | TPS | Avg resp (ms) | Total OK |\n");
            m.push_str("|--:|--:|--:|--:|--:|--:|--:|\n");
            for i in &s.intervals {
                let _ = writeln!(
                    m,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    i.start_s,
                    i.end_s,
                    i.ok,
                    i.errors,
                    num(i.tps),
                    num(i.mean_ms),
                    i.cumulative_ok
                );
            }
            m.push('\n');
        }
        for n in &self.notes {
            let _ = writeln!(m, "- {n}");
        }
        m
    }
}

fn is_success_key(code: &str) -> bool {
    code == "ok" || code.parse::<u16>().is_ok_and(|c| (200..300).contains(&c))
}

/// A figure with sensible precision.
pub fn num(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else if x.abs() >= 0.1 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// `512 B`, `20.1 KiB`, `15.0 MiB`.
pub fn bytes(x: f64) -> String {
    const K: f64 = 1024.0;
    if x < K {
        format!("{x:.0} B")
    } else if x < K * K {
        format!("{:.1} KiB", x / K)
    } else if x < K * K * K {
        format!("{:.1} MiB", x / K / K)
    } else {
        format!("{:.2} GiB", x / K / K / K)
    }
}

pub(crate) fn opt(x: Option<f64>) -> String {
    x.map_or("–".into(), num)
}

pub(crate) fn pct(x: Option<f64>) -> String {
    x.map_or("–".into(), |p| format!("{p:.1} %"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::recorder::{Code, Recorder, TxOutcome};

    pub(crate) fn sample_report() -> Report {
        let t0 = std::time::Instant::now();
        let mut rec = Recorder::new(t0);
        for i in 0..4 {
            rec.record(
                t0 + std::time::Duration::from_millis(400 * i),
                std::time::Duration::from_millis(5),
                &TxOutcome {
                    codes: vec![Code::Status(201), Code::Status(201)],
                    ok: true,
                    bytes: 1024,
                    error: None,
                },
            );
        }
        rec.record(
            t0,
            std::time::Duration::from_millis(1),
            &TxOutcome::failed(Code::Status(500), "POST x: 500".into()),
        );
        let mut a = ScenarioReport::new(
            "ingest-small",
            Scenario::IngestSmall,
            Kind::Ingest,
            PhaseConfig {
                clients: 2,
                size_bytes: 1024,
                ..Default::default()
            },
        );
        a.summary = rec.summary(std::time::Duration::from_secs(2));
        a.objects_created = 4;
        a.raw = Some(RawComparison {
            baseline: "raw-fsync-1KiB-2t".into(),
            basis: "objects/s".into(),
            raw_tps: 4.0,
            raw_mb_per_s: 0.004,
            pct_of_raw: Some(50.0),
            layout_baseline: Some("raw-layout-1KiB-2t".into()),
            pct_of_raw_layout: Some(12.5),
            ..Default::default()
        });
        let b = ScenarioReport {
            status: Status::NotAvailable,
            ..ScenarioReport::new(
                "search",
                Scenario::Search,
                Kind::Search,
                PhaseConfig::default(),
            )
        };
        let mut r = Report {
            tool: "arca-bench".into(),
            version: "0".into(),
            command: "arca bench ingest-small".into(),
            started_at: "a".into(),
            finished_at: "b".into(),
            machine: Machine::default(),
            target: TargetInfo::default(),
            interrupted: false,
            errors: 0,
            summary: String::new(),
            scenarios: vec![a, b],
            notes: vec!["note".into()],
        };
        r.refresh_summary();
        r
    }

    #[test]
    fn summary_line_says_errors_first() {
        let mut r = sample_report();
        assert_eq!(r.errors, 1);
        assert!(
            r.summary
                .starts_with("ERRORS: 1 failed transaction (ingest-small 1 of 5;"),
            "{}",
            r.summary
        );
        assert!(r.summary.contains("500 ×1"));
        assert!(r.has_failures());
        let md = r.to_markdown();
        assert!(md.starts_with("**ERRORS"));
        assert!(
            md.contains("| ingest-small | 2 | 1 KiB | 4 | 2.00 |"),
            "{md}"
        );
        assert!(
            md.contains("| 1 | 50.0 % | 12.5 % | – |"),
            "errors, % of raw, % of raw-layout, % of raw-hash: {md}"
        );
        assert!(md.contains("search (not available yet)"));
        assert!(md.contains("first error at 0.0 s after 4 ok: 500"));
        r.scenarios[0].summary.errors = 0;
        r.interrupted = true;
        r.refresh_summary();
        assert_eq!(
            r.summary,
            "INTERRUPTED (Ctrl-C): partial report. No errors: every transaction succeeded."
        );
    }

    #[test]
    fn json_round_trip() {
        let r = sample_report();
        let text = serde_json::to_string_pretty(&r).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        // flattened summary fields sit on the row itself
        assert_eq!(v["scenarios"][0]["ok"], 4);
        assert_eq!(v["scenarios"][0]["status_codes"]["201"], 8);
        assert_eq!(v["scenarios"][0]["scenario"], "ingest-small");
        assert_eq!(v["scenarios"][1]["status"], "not-available");
        let back: Report = serde_json::from_str(&text).unwrap();
        assert_eq!(back.scenarios.len(), 2);
        assert_eq!(
            back.scenarios[0].summary.status_codes,
            r.scenarios[0].summary.status_codes
        );
        assert_eq!(
            back.scenarios[0].summary.timeline.len(),
            r.scenarios[0].summary.timeline.len()
        );
        assert_eq!(
            back.scenarios[0].raw.as_ref().unwrap().pct_of_raw,
            Some(50.0)
        );
        assert_eq!(v["scenarios"][0]["raw"]["pct_of_raw_layout"], 12.5);
        assert!(v["scenarios"][0]["raw"]["pct_of_raw_hash"].is_null());
        // A report written before raw-layout and raw-hash existed still loads.
        let mut old = v.clone();
        let raw = old["scenarios"][0]["raw"].as_object_mut().unwrap();
        for k in [
            "layout_baseline",
            "pct_of_raw_layout",
            "hash_baseline",
            "pct_of_raw_hash",
        ] {
            raw.remove(k).unwrap();
        }
        let config = old["scenarios"][0]["config"].as_object_mut().unwrap();
        for k in ["digest", "with_binary", "syncfs_every_s"] {
            config.remove(k).unwrap();
        }
        let back: Report = serde_json::from_value(old).unwrap();
        assert_eq!(
            back.scenarios[0].raw.as_ref().unwrap().pct_of_raw_layout,
            None
        );
        assert_eq!(back.summary, r.summary);
    }

    #[test]
    fn numbers_format() {
        assert_eq!(num(0.0), "0");
        assert_eq!(num(1234.4), "1234");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(1.234), "1.23");
        assert_eq!(num(0.01234), "0.012");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(20506.0), "20.0 KiB");
        assert_eq!(bytes(15.0 * 1024.0 * 1024.0), "15.0 MiB");
    }
}
