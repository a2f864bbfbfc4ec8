//! The command line of `arca bench` and the plan it resolves to: which phases run, with which
//! clients, sizes, limits and raw baselines.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, ensure};
use clap::ValueEnum;
use serde::{Deserialize, Serialize};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// A benchmark scenario (names as on the command line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Ingest empty containers (POST only), 16 clients, 300 s.
    IngestObjectOnly,
    /// Ingest objects with a 20 KiB binary (POST + PUT), 16 clients, 300 s.
    IngestSmall,
    /// Ingest objects with a 15 MiB binary, 16 clients, 300 s.
    IngestMedium,
    /// Ingest objects with a 700 MiB binary, 16 clients, 300 s.
    IngestLarge,
    /// GET 20 KiB binaries in random order (after ingesting --objects of them).
    AccessSmall,
    /// GET 15 MiB binaries in random order (after ingesting --objects of them).
    AccessMedium,
    /// GET the objects' RDF (text/turtle) in random order.
    AccessMetadata,
    /// 100 objects of 50 MiB with 1 client, then the same with --clients clients.
    Benchtool,
    /// Object-only ingest until --count or --duration, throughput per --interval.
    BurnIn,
    /// The plain file-writing program alone: --clients threads, one file per object with and
    /// without fsync, Fedora's layout of one object (raw-layout) and, for 1 MiB or more, one
    /// hashed file per object (raw-hash).
    Raw,
    /// The 2013 GSearch sizing study: load arXiv records (Dublin Core, 75 % with a PDF) to
    /// --objects (default 12,000; measured at 12,000 and at N when larger), then three queries
    /// at 1, 2 and 3 threads with 0, 1 and 5 % updates mixed in, write-to-visible latency and
    /// a full reindex, against `fcr:search`.
    Search,
    /// A direct container's members listed on one membership resource: adding a member at 10
    /// and at --objects (default 100,000) members, and GETs of the membership resource.
    Membership,
    /// Containers referring to one target: adding a referrer at 10 and at --objects (default
    /// 100,000), and GETs of the target with and without its inbound references.
    References,
    /// Updates of resources with 1 and with --objects (default 1,000) versions, GETs of the
    /// long TimeMap, and a transaction of --objects resources committed.
    Versions,
    /// Only the transaction of `versions`: --objects (default 10,000) new containers staged
    /// in one transaction, then committed.
    Transaction,
    /// The fixity audit: a root of --objects (default 100,000) small objects and --large-gb
    /// of large binaries, read and hashed by the simplest program (the baseline), audited by
    /// `arca fixity`, validated by rocfl and ocfl-py; ingest and GETs with the background
    /// audit on and off; replica lag under ingest. Runs alone; spawns its own servers.
    Audit,
    /// One node grown to --count objects (default 1,000,000) of a mixed population, measured
    /// every --step objects (ingest rate, GET latency, memory, bytes and inodes), then
    /// start-up, `arca rebuild`, `arca reindex`, `arca fixity`, a 1,000-version TimeMap and a
    /// 100,000-child container's page on the grown root. Runs alone; spawns its own servers.
    Sizing,
}

impl Scenario {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::IngestObjectOnly => "ingest-object-only",
            Scenario::IngestSmall => "ingest-small",
            Scenario::IngestMedium => "ingest-medium",
            Scenario::IngestLarge => "ingest-large",
            Scenario::AccessSmall => "access-small",
            Scenario::AccessMedium => "access-medium",
            Scenario::AccessMetadata => "access-metadata",
            Scenario::Benchtool => "benchtool",
            Scenario::BurnIn => "burn-in",
            Scenario::Raw => "raw",
            Scenario::Search => "search",
            Scenario::Membership => "membership",
            Scenario::References => "references",
            Scenario::Versions => "versions",
            Scenario::Transaction => "transaction",
            Scenario::Audit => "audit",
            Scenario::Sizing => "sizing",
        }
    }

    /// Whether the scenario talks to a server.
    pub fn needs_server(self) -> bool {
        !matches!(self, Scenario::Raw)
    }

    fn is_object_only(self) -> bool {
        matches!(
            self,
            Scenario::IngestObjectOnly
                | Scenario::BurnIn
                | Scenario::Membership
                | Scenario::References
        )
    }
}

/// `arca bench`: reproduce the Fedora sizing studies against arca or any Fedora API server,
/// with the physical limit measured in the same run: a plain program writing one file per
/// object (raw), the files arca writes per object in Fedora's layout (raw-layout) and, for
/// 1 MiB or more, one file hashed while written (raw-hash).
///
/// Sizes are binary: 20K = 20 KiB = 20480 bytes; MB/s figures are MiB/s.
#[derive(Clone, Debug, clap::Args)]
pub struct BenchArgs {
    /// Scenarios to run, in this order.
    #[arg(value_enum, required = true, num_args = 1..)]
    pub scenarios: Vec<Scenario>,

    /// Fedora API base URL of the server under test [default: http://127.0.0.1:8080/rest/].
    #[arg(long, conflicts_with = "spawn")]
    pub url: Option<String>,

    /// Start a fresh arca (`arca serve`) on a free port and a temporary data directory, and
    /// stop it and delete its data afterwards (in the background; the next run waits for
    /// what is left).
    #[arg(long)]
    pub spawn: bool,

    /// The arca binary for --spawn [default: this program if it is arca, else `arca` next
    /// to it, else on PATH].
    #[arg(long, env = "ARCA_BIN", value_name = "PATH")]
    pub arca_bin: Option<PathBuf>,

    /// User name for HTTP Basic authentication [default: fedoraAdmin with password
    /// fedoraAdmin, the quick-start admin of arca and of Fedora].
    #[arg(long, env = "ARCA_BENCH_USER")]
    pub user: Option<String>,

    /// Password for HTTP Basic authentication (better given in ARCA_BENCH_PASSWORD).
    #[arg(long, env = "ARCA_BENCH_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,

    /// PID of the server under test (with --url), to sample its CPU, memory and I/O from /proc.
    #[arg(long, conflicts_with = "spawn")]
    pub pid: Option<u32>,

    /// The server's data directory (with --url): measures bytes on disk per object and puts
    /// the raw files on its file system. With --spawn: where to create the temporary data
    /// directory [default: the system temporary directory].
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Short runs: 5 s per scenario (burn-in 10 s, raw 3 s), few objects, study sizes kept.
    #[arg(long)]
    pub quick: bool,

    /// Concurrent clients (raw: threads).
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub clients: usize,

    /// Seconds per scenario (search: per cell of its matrix, after a warm-up of a quarter of
    /// it, at most 5 s) [default: 300; burn-in 3600; search 20; benchtool: until --count].
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,

    /// Stop each scenario after N objects (access: N GETs; raw: N files per mode)
    /// [default: no limit; benchtool 100].
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,

    /// Payload size in bytes (suffixes K, M, G = 2^10, 2^20, 2^30), for every scenario that
    /// has one [default: small 20K, medium 15M, large 700M, benchtool 50M].
    #[arg(long, value_parser = parse_size, value_name = "BYTES")]
    pub size: Option<u64>,

    /// Objects ingested before an access scenario measures its GETs (search: records loaded,
    /// measured at --corpus-records and at N when larger)
    /// [default: small/metadata 1000, medium 100, search 12000; --quick 50, 10 and 120; access:
    /// never more than --count].
    #[arg(long, value_name = "N")]
    pub objects: Option<u64>,

    /// Burn-in reporting interval in seconds [default: 60; --quick 1].
    #[arg(long, value_name = "SECS")]
    pub interval: Option<f64>,

    /// Do not run the raw baselines (flat files with and without fsync, raw-layout, raw-hash,
    /// raw-read) next to the server scenarios.
    #[arg(long)]
    pub no_raw: bool,

    /// Seconds per raw baseline mode [default: the scenario's duration, at most 30 s (--quick 3 s)].
    #[arg(long, value_name = "SECS")]
    pub raw_duration: Option<f64>,

    /// Digest algorithm of the raw-hash baseline (the server's: arca and Fedora default to
    /// sha512).
    #[arg(long, value_enum, default_value_t = DigestAlg::Sha512, value_name = "ALG")]
    pub digest: DigestAlg,

    /// Seconds before a request without a complete answer counts as a timeout.
    #[arg(long, default_value_t = 600.0, value_name = "SECS")]
    pub timeout: f64,

    /// Directory for report.json, report.md and chart.svg (created if needed).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Seed of the payload generator and of the access order (search: which records have a
    /// PDF, which records are updated).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// search: the corpus directory, holding one `*.jsonl.gz` of arXiv records and `pdf/*.pdf`
    /// [default: the repository's ../shared/corpus].
    #[arg(long, env = "ARCA_BENCH_CORPUS", value_name = "DIR")]
    pub corpus: Option<PathBuf>,

    /// search: distinct corpus records loaded; --objects beyond them are replicas with new ids
    /// (`<arxiv id>-r1`, ...), as the 2013 study replicated its 12,000 objects tenfold.
    #[arg(long, default_value_t = crate::corpus::STUDY_RECORDS, value_name = "N")]
    pub corpus_records: u64,

    /// search: how a record's PDF is sent: its bytes (copy; at 120,000 records about 50 GB),
    /// or an empty body with a `file://` external-content link (proxy; the server's
    /// external-content allow-list must hold the PDF directory — set for a spawned arca).
    #[arg(long, value_enum, default_value_t = PdfMode::Copy, value_name = "MODE")]
    pub pdf_mode: PdfMode,

    /// No progress bar (it is also hidden when stderr is not a terminal).
    #[arg(long)]
    pub no_progress: bool,

    /// audit: the data directory audited (sizing: the data directory grown, kept afterwards). Without an OCFL root in it, the root is built there
    /// and kept; with one, it is used as it is (the serving rows add objects to it)
    /// [default: a temporary directory, built and deleted].
    #[arg(long, value_name = "DIR")]
    pub root_data: Option<PathBuf>,

    /// sizing: objects per measured step [default: 50,000; --quick 1,000].
    #[arg(long, value_name = "N")]
    pub step: Option<u64>,

    /// audit: GiB of large binaries in a built root [default: 2; --quick 0.05].
    #[arg(long, value_name = "GIB")]
    pub large_gb: Option<f64>,

    /// audit: bytes per large binary [default: 256M; --quick 8M].
    #[arg(long, value_parser = parse_size, value_name = "BYTES")]
    pub large_size: Option<u64>,

    /// audit: the steps to run, comma-separated [default: all].
    #[arg(long, value_enum, value_delimiter = ',', value_name = "STEPS")]
    pub audit_steps: Vec<AuditStep>,

    /// audit: the page cache of each read run: dropped before it (cold; needs root), the
    /// root read once before (warm), or one row of each.
    #[arg(long, value_enum, default_value_t = CacheMode::Both, value_name = "MODE")]
    pub cache: CacheMode,

    /// audit: the rocfl binary [default: rocfl on PATH, else ~/.cache/arca-rocfl/bin/rocfl].
    #[arg(long, env = "ARCA_BENCH_ROCFL", value_name = "PATH")]
    pub rocfl: Option<PathBuf>,

    /// audit: ocfl-py's validator [default: ~/.cache/arca-venv/bin/ocfl-validate.py, else
    /// ocfl-validate.py on PATH].
    #[arg(long, env = "OCFL_VALIDATE", value_name = "PATH")]
    pub ocfl_validate: Option<PathBuf>,
}

/// A step of the audit scenario (`--audit-steps`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuditStep {
    /// The content files read and hashed by the simplest program, all cores.
    Baseline,
    /// `arca fixity` without a rate limit, a thread per core.
    Fixity,
    /// `rocfl validate` (digests checked).
    Rocfl,
    /// ocfl-py's `ocfl-validate.py` (digests checked).
    OcflPy,
    /// Ingest and GETs with the background audit on and off (on, off, off, on).
    Serving,
    /// Replica lag under ingest, time to drain, `arca replica verify`.
    Replica,
    /// Faults injected into a root of up to 2,000 objects with a replica: found, repaired,
    /// and both roots valid for ocfl-py afterwards.
    Faults,
}

impl AuditStep {
    /// Every step, in the order they run.
    pub const ALL: [AuditStep; 7] = [
        AuditStep::Baseline,
        AuditStep::Fixity,
        AuditStep::Rocfl,
        AuditStep::OcflPy,
        AuditStep::Serving,
        AuditStep::Replica,
        AuditStep::Faults,
    ];
}

/// The page cache of the audit scenario's read runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheMode {
    /// Dropped before each run (`/proc/sys/vm/drop_caches`; needs root).
    Cold,
    /// The root read once before the first run.
    Warm,
    /// A cold row and a warm row per tool.
    Both,
}

/// How the search scenario sends a record's PDF.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PdfMode {
    /// `PUT` of the PDF's bytes (`application/pdf`).
    Copy,
    /// `PUT` of an empty body with a `Link` to the file as proxied external content.
    Proxy,
}

impl PdfMode {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            PdfMode::Copy => "copy",
            PdfMode::Proxy => "proxy",
        }
    }
}

/// The digest algorithm raw-hash computes over every byte it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DigestAlg {
    /// SHA-512 (OCFL's preferred algorithm; arca's and Fedora's default).
    Sha512,
    /// SHA-256.
    Sha256,
}

impl DigestAlg {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            DigestAlg::Sha512 => "sha512",
            DigestAlg::Sha256 => "sha256",
        }
    }
}

/// Objects of at least this size are compared by MB/s rather than objects/s, and with a
/// raw-hash baseline.
pub const LARGE_OBJECT: u64 = MIB;

/// Parses `1024`, `20K`, `20KB`, `20KiB`, `15M`, `1G` (binary multiples).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("not a size: {s:?} (examples: 1024, 20K, 15M, 700M)"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => KIB,
        "m" | "mb" | "mib" => MIB,
        "g" | "gb" | "gib" => GIB,
        _ => return Err(format!("unknown size unit in {s:?} (use K, M or G)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size too large: {s:?}"))
}

/// `20 KiB`, `15 MiB`, `1234 B`.
pub fn format_size(n: u64) -> String {
    if n == 0 {
        "0 B".into()
    } else if n.is_multiple_of(GIB) {
        format!("{} GiB", n / GIB)
    } else if n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else if n >= 10 * MIB {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    } else {
        format!("{n} B")
    }
}

/// What a phase does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// Ingest objects (a container, plus a binary of `size` bytes unless object-only).
    Ingest {
        /// Whether to create the binary.
        with_binary: bool,
    },
    /// Ingest `objects` objects, then GET them.
    Access {
        /// GET the container's RDF instead of the binary.
        metadata: bool,
    },
    /// Object-only ingest reported per interval.
    BurnIn,
    /// Raw file writing only.
    Raw,
    /// Load the corpus, then the query matrix, write-to-visible latency and a reindex.
    Search,
    /// Many resources naming one: additions at both ends and GETs of the one.
    FanIn(crate::fanout::FanIn),
    /// Versions and transactions.
    Versions,
    /// The fixity audit scenario (see [`crate::audit`]).
    Audit,
}

/// What a raw baseline does per object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Baseline {
    /// One flat file per object, once with fsync and once without (two rows,
    /// `raw-fsync-…` and `raw-nofsync-…`): the studies' raw program.
    Flat,
    /// Flat files written, synced, then read back in random order (`raw-read-…`).
    Read,
    /// Exactly the directories and files arca creates for one object in Fedora's layout, with
    /// a `syncfs` every 5 s as arca's checkpoint (`raw-layout-…`; see [`crate::layout`]).
    Layout {
        /// The object has a binary (its own OCFL object) besides its container.
        binary: bool,
    },
    /// One flat file per object, its digest computed over every byte while it is written,
    /// fsynced (`raw-hash-…`).
    Hash,
}

/// A raw baseline a phase is compared with: measured once per run for each key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RawKey {
    /// What it does.
    pub baseline: Baseline,
    /// Bytes per file (raw-layout: of the binary).
    pub size: u64,
    /// Threads.
    pub threads: usize,
}

/// One measured phase.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// The scenario it belongs to.
    pub scenario: Scenario,
    /// Its name in the report (`benchtool` splits into `benchtool-1-client` and
    /// `benchtool-16-clients`).
    pub name: String,
    /// What it does.
    pub work: Work,
    /// Concurrent clients.
    pub clients: usize,
    /// Time limit (no new transaction starts after it).
    pub duration: Option<Duration>,
    /// Transaction limit.
    pub count: Option<u64>,
    /// Payload bytes per object.
    pub size: u64,
    /// Objects ingested before measuring (access).
    pub objects: u64,
    /// Burn-in interval.
    pub interval: Duration,
    /// The raw baselines to compare with, and their limits, in the order they run.
    pub raw: Vec<RawPlan>,
    /// The search scenario's settings (search phases only).
    pub search: Option<SearchPlan>,
}

/// What the search scenario runs besides the common limits (clients load the records,
/// `duration` and `count` bound each cell of the matrix, `objects` is the largest size).
#[derive(Clone, Debug, PartialEq)]
pub struct SearchPlan {
    /// The corpus directory (`*.jsonl.gz` and `pdf/`).
    pub corpus: PathBuf,
    /// Distinct corpus records; larger sizes replicate them.
    pub corpus_records: u64,
    /// How PDFs are sent.
    pub pdf_mode: PdfMode,
    /// The sizes measured, ascending: `corpus_records` when below `objects`, and `objects`.
    pub sizes: Vec<u64>,
    /// Unmeasured queries before each cell.
    pub warm_up: Duration,
    /// Most samples of the write-to-visible row (one updater, nothing else running).
    pub visibility_samples: u64,
}

/// The corpus directory used when neither `--corpus` nor `ARCA_BENCH_CORPUS` is given: the
/// shared test data beside this repository.
pub fn default_corpus() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/corpus"
    ))
}

/// A raw baseline run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RawPlan {
    /// Which baseline.
    pub key: RawKey,
    /// Time limit per mode.
    pub duration: Option<Duration>,
    /// Files per mode.
    pub count: Option<u64>,
    /// Files written before reading (read baselines).
    pub objects: u64,
    /// The algorithm of a raw-hash baseline.
    pub digest: DigestAlg,
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

impl BenchArgs {
    /// Checks the values that clap cannot.
    pub fn validate(&self) -> anyhow::Result<()> {
        ensure!(self.clients >= 1, "--clients must be at least 1");
        for (name, v) in [
            ("--duration", self.duration),
            ("--interval", self.interval),
            ("--raw-duration", self.raw_duration),
            ("--timeout", Some(self.timeout)),
        ] {
            if let Some(v) = v {
                ensure!(
                    v.is_finite() && v > 0.0 && v < 1e9,
                    "{name} must be a positive number of seconds"
                );
            }
        }
        ensure!(self.count != Some(0), "--count must be at least 1");
        ensure!(self.objects != Some(0), "--objects must be at least 1");
        ensure!(
            self.corpus_records >= 1,
            "--corpus-records must be at least 1"
        );
        if self.spawn && self.url.is_some() {
            bail!("give either --url or --spawn, not both");
        }
        if self.scenarios.contains(&Scenario::Sizing) {
            ensure!(
                self.scenarios.len() == 1,
                "sizing runs alone (it starts and stops its own servers): run the other \
                 scenarios in another invocation"
            );
            ensure!(
                self.url.is_none(),
                "sizing grows a root with servers it starts itself: give --arca-bin (or \
                 ARCA_BIN), not --url"
            );
            ensure!(self.step != Some(0), "--step must be at least 1");
            ensure!(self.count != Some(0), "--count must be at least 1");
        }
        if self.scenarios.contains(&Scenario::Audit) {
            ensure!(
                self.scenarios.len() == 1,
                "audit runs alone (it starts and stops its own servers): run the other \
                 scenarios in another invocation"
            );
            ensure!(
                self.url.is_none(),
                "audit starts its own servers on the root's data directory: give --arca-bin \
                 (or ARCA_BIN), not --url"
            );
            if let Some(g) = self.large_gb {
                ensure!(
                    g.is_finite() && (0.0..1e6).contains(&g),
                    "--large-gb must be 0 or more GiB"
                );
            }
            ensure!(
                self.large_size != Some(0),
                "--large-size must be at least 1 byte"
            );
        }
        Ok(())
    }

    /// The search settings for a run to `objects` records with cells of `cell` each.
    fn search_plan(&self, objects: u64, cell: Option<Duration>) -> SearchPlan {
        let base = self.corpus_records.max(1);
        let mut sizes = vec![objects];
        if base < objects {
            sizes.insert(0, base);
        }
        let cell = cell.unwrap_or(Duration::from_secs(20));
        SearchPlan {
            corpus: self.corpus.clone().unwrap_or_else(default_corpus),
            corpus_records: base,
            pdf_mode: self.pdf_mode,
            sizes,
            warm_up: (cell / 4).min(Duration::from_secs(5)),
            visibility_samples: if self.quick { 10 } else { 100 },
        }
    }

    /// The phases to run, in order, with every default applied.
    pub fn phases(&self) -> Vec<Phase> {
        let q = self.quick;
        let mut out = Vec::new();
        for &s in &self.scenarios {
            let study_size = match s {
                Scenario::IngestObjectOnly
                | Scenario::BurnIn
                | Scenario::Search
                | Scenario::Membership
                | Scenario::References
                | Scenario::Versions
                | Scenario::Transaction => 0,
                Scenario::IngestSmall
                | Scenario::Audit
                | Scenario::Sizing
                | Scenario::AccessSmall
                | Scenario::AccessMetadata
                | Scenario::Raw => 20 * KIB,
                Scenario::IngestMedium | Scenario::AccessMedium => 15 * MIB,
                Scenario::IngestLarge => 700 * MIB,
                Scenario::Benchtool => 50 * MIB,
            };
            let size = if s.is_object_only() || s == Scenario::Search {
                0
            } else {
                self.size.unwrap_or(study_size)
            };
            let default_duration = match (s, q) {
                (Scenario::Benchtool, _) => None,
                (Scenario::BurnIn, false) => Some(3600.0),
                (Scenario::BurnIn, true) => Some(10.0),
                (Scenario::Raw, false) => Some(30.0),
                (Scenario::Raw, true) => Some(3.0),
                // Fan-in: the time of each GET row.
                (Scenario::Membership | Scenario::References, false) => Some(10.0),
                (Scenario::Membership | Scenario::References, true) => Some(2.0),
                // Search: each cell of the matrix.
                (Scenario::Search, false) => Some(20.0),
                (Scenario::Search, true) => Some(2.0),
                // Audit: each serving row and the ingest under replication.
                (Scenario::Audit, false) => Some(60.0),
                (Scenario::Audit, true) => Some(3.0),
                (_, false) => Some(300.0),
                (_, true) => Some(5.0),
            };
            let duration = self.duration.or(default_duration).map(secs);
            let default_count = match (s, q) {
                (Scenario::Benchtool, false) => Some(100),
                (Scenario::Benchtool, true) => Some(5),
                (Scenario::IngestMedium, true) => Some(32),
                (Scenario::IngestLarge, true) => Some(2),
                // Fan-in: additions measured per window.
                (Scenario::Membership | Scenario::References, false) => Some(5000),
                (Scenario::Membership | Scenario::References, true) => Some(200),
                (Scenario::Versions, false) => Some(200),
                (Scenario::Versions, true) => Some(20),
                _ => None,
            };
            let count = self.count.or(default_count);
            let default_objects = match (s, q) {
                (Scenario::AccessMedium, false) => 100,
                (Scenario::AccessMedium, true) => 10,
                (Scenario::Membership | Scenario::References, false) => 100_000,
                (Scenario::Membership | Scenario::References, true) => 2_000,
                (Scenario::Versions, false) => 1_000,
                (Scenario::Versions, true) => 50,
                (Scenario::Transaction, false) => 10_000,
                (Scenario::Transaction, true) => 100,
                (Scenario::Search, false) => crate::corpus::STUDY_RECORDS,
                (Scenario::Search, true) => 120,
                (Scenario::Audit, false) => 100_000,
                (Scenario::Audit, true) => 200,
                (_, false) => 1000,
                (_, true) => 50,
            };
            let objects = match self.objects {
                Some(n) => n,
                None if crate::fanout::kind_of(s).is_some()
                    || matches!(
                        s,
                        Scenario::Versions
                            | Scenario::Transaction
                            | Scenario::Search
                            | Scenario::Audit
                    ) =>
                {
                    default_objects
                }
                None => default_objects.min(self.count.unwrap_or(u64::MAX)),
            };
            let interval = secs(self.interval.unwrap_or(if q { 1.0 } else { 60.0 }));
            let raw_duration = self.raw_duration.map(secs).or_else(|| {
                let cap = secs(if q { 3.0 } else { 30.0 });
                Some(duration.map_or(cap, |d| d.min(cap)))
            });
            let work = match s {
                Scenario::IngestObjectOnly => Work::Ingest { with_binary: false },
                Scenario::IngestSmall
                | Scenario::IngestMedium
                | Scenario::IngestLarge
                | Scenario::Benchtool => Work::Ingest { with_binary: true },
                Scenario::AccessSmall | Scenario::AccessMedium => Work::Access { metadata: false },
                Scenario::AccessMetadata => Work::Access { metadata: true },
                Scenario::BurnIn => Work::BurnIn,
                Scenario::Raw => Work::Raw,
                Scenario::Search => Work::Search,
                Scenario::Membership | Scenario::References => {
                    Work::FanIn(crate::fanout::kind_of(s).expect("a fan-in scenario"))
                }
                Scenario::Versions | Scenario::Transaction => Work::Versions,
                // Both run alone, outside the phases (see `crate::run`).
                Scenario::Audit | Scenario::Sizing => Work::Audit,
            };
            let phase = |name: String, clients: usize| {
                let plan = |baseline: Baseline, duration: Option<Duration>| RawPlan {
                    key: RawKey {
                        baseline,
                        size,
                        threads: clients,
                    },
                    duration,
                    count,
                    objects: if baseline == Baseline::Read {
                        objects
                    } else {
                        0
                    },
                    digest: self.digest,
                };
                // What one object is: a container, plus a binary unless object-only.
                let writes = |binary: bool, duration| {
                    let mut v = vec![
                        plan(Baseline::Flat, duration),
                        plan(Baseline::Layout { binary }, duration),
                    ];
                    if binary && size >= LARGE_OBJECT {
                        v.push(plan(Baseline::Hash, duration));
                    }
                    v
                };
                let raw = match work {
                    Work::Raw => writes(size > 0, duration),
                    _ if self.no_raw => Vec::new(),
                    Work::Ingest { with_binary } => writes(with_binary, raw_duration),
                    Work::BurnIn => writes(false, raw_duration),
                    Work::Access { metadata: false } => vec![plan(Baseline::Read, raw_duration)],
                    Work::Access { metadata: true }
                    | Work::Audit
                    | Work::Search
                    | Work::FanIn(_)
                    | Work::Versions => Vec::new(),
                };
                Phase {
                    scenario: s,
                    name,
                    work,
                    clients,
                    duration,
                    count,
                    size,
                    objects,
                    interval,
                    raw,
                    search: (s == Scenario::Search).then(|| self.search_plan(objects, duration)),
                }
            };
            if s == Scenario::Benchtool {
                out.push(phase("benchtool-1-client".into(), 1));
                if self.clients > 1 {
                    out.push(phase(
                        format!("benchtool-{}-clients", self.clients),
                        self.clients,
                    ));
                }
            } else {
                out.push(phase(s.name().to_string(), self.clients));
            }
        }
        // The same scenario twice gets distinct names.
        let mut seen = std::collections::HashMap::<String, usize>::new();
        for p in &mut out {
            let n = seen.entry(p.name.clone()).or_default();
            *n += 1;
            if *n > 1 {
                p.name = format!("{}#{}", p.name, n);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn parse(line: &str) -> BenchArgs {
        Cli::try_parse_from(std::iter::once("arca-bench").chain(line.split_whitespace()))
            .unwrap()
            .args
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("20K"), Ok(20480));
        assert_eq!(parse_size("20KiB"), Ok(20480));
        assert_eq!(parse_size("15mb"), Ok(15 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("").is_err());
        assert!(parse_size("12X").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999999G").is_err());
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(20480), "20 KiB");
        assert_eq!(format_size(700 << 20), "700 MiB");
        assert_eq!(format_size(1000), "1000 B");
    }

    #[test]
    fn study_defaults() {
        let a = parse("ingest-object-only ingest-small ingest-medium ingest-large --spawn");
        a.validate().unwrap();
        let p = a.phases();
        assert_eq!(p.len(), 4);
        assert_eq!(p[0].size, 0);
        assert_eq!(p[0].work, Work::Ingest { with_binary: false });
        assert_eq!(p[1].size, 20 * 1024);
        assert_eq!(p[2].size, 15 << 20);
        assert_eq!(p[3].size, 700 << 20);
        for ph in &p {
            assert_eq!(ph.clients, 16);
            assert_eq!(ph.duration, Some(Duration::from_secs(300)));
            assert_eq!(ph.count, None);
            for raw in &ph.raw {
                assert_eq!(raw.key.size, ph.size);
                assert_eq!(raw.key.threads, 16);
                assert_eq!(raw.duration, Some(Duration::from_secs(30)));
                assert_eq!(raw.digest, DigestAlg::Sha512);
            }
        }
        // Flat files, the layout of the same objects, and for 1 MiB or more a hashed file.
        let baselines = |ph: &Phase| ph.raw.iter().map(|r| r.key.baseline).collect::<Vec<_>>();
        assert_eq!(
            baselines(&p[0]),
            [Baseline::Flat, Baseline::Layout { binary: false }]
        );
        assert_eq!(
            baselines(&p[1]),
            [Baseline::Flat, Baseline::Layout { binary: true }]
        );
        for large in &p[2..] {
            assert_eq!(
                baselines(large),
                [
                    Baseline::Flat,
                    Baseline::Layout { binary: true },
                    Baseline::Hash
                ]
            );
        }
    }

    #[test]
    fn benchtool_splits_and_quick_shrinks() {
        let a = parse("benchtool access-medium burn-in --quick --clients 4");
        let p = a.phases();
        let names: Vec<_> = p.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "benchtool-1-client",
                "benchtool-4-clients",
                "access-medium",
                "burn-in"
            ]
        );
        assert_eq!(p[0].clients, 1);
        assert_eq!(p[0].size, 50 << 20);
        assert_eq!(p[0].count, Some(5));
        assert_eq!(p[0].duration, None);
        assert_eq!(p[0].raw[0].key.threads, 1);
        assert_eq!(p[1].raw[0].key.threads, 4);
        assert_eq!(p[1].raw[2].key.baseline, Baseline::Hash);
        assert_eq!(p[2].objects, 10);
        assert_eq!(p[2].duration, Some(Duration::from_secs(5)));
        assert_eq!(p[2].raw.len(), 1);
        assert_eq!(p[2].raw[0].key.baseline, Baseline::Read);
        assert_eq!(p[2].raw[0].objects, 10);
        // burn-in: object-only objects
        assert_eq!(p[3].raw[1].key.baseline, Baseline::Layout { binary: false });
        assert_eq!(p[3].interval, Duration::from_secs(1));
        assert_eq!(p[3].size, 0);
    }

    #[test]
    fn overrides_apply() {
        let a = parse(
            "access-small access-metadata ingest-object-only raw search ingest-small --count 5 \
             --size 1024 --clients 2 --duration 2 --no-raw",
        );
        let p = a.phases();
        assert_eq!(p[0].objects, 5);
        assert_eq!(p[0].size, 1024);
        assert_eq!(p[0].count, Some(5));
        assert!(p[0].raw.is_empty());
        assert!(p[1].raw.is_empty());
        assert_eq!(p[2].size, 0);
        // raw is the scenario itself, so --no-raw keeps it
        assert_eq!(p[3].raw.len(), 2);
        assert_eq!(p[3].raw[0].key.size, 1024);
        assert_eq!(p[3].raw[1].key.baseline, Baseline::Layout { binary: true });
        assert!(p[5].raw.is_empty());
        assert_eq!(p[4].work, Work::Search);
        assert_eq!(p[5].duration, Some(Duration::from_secs(2)));
    }

    #[test]
    fn raw_alone_runs_every_write_mode() {
        let p = parse("raw --size 15M --digest sha256").phases();
        let raw = &p[0].raw;
        assert_eq!(raw.len(), 3);
        assert_eq!(raw[2].key.baseline, Baseline::Hash);
        assert_eq!(raw[2].digest, DigestAlg::Sha256);
        // the scenario's own duration, not the 30 s cap
        assert_eq!(raw[2].duration, Some(Duration::from_secs(30)));
        let p = parse("raw --size 0 --duration 60").phases();
        let baselines: Vec<_> = p[0].raw.iter().map(|r| r.key.baseline).collect();
        assert_eq!(
            baselines,
            [Baseline::Flat, Baseline::Layout { binary: false }]
        );
        assert_eq!(p[0].raw[1].duration, Some(Duration::from_secs(60)));
    }

    #[test]
    fn duplicate_scenarios_get_distinct_names() {
        let p = parse("raw raw").phases();
        assert_eq!(p[0].name, "raw");
        assert_eq!(p[1].name, "raw#2");
    }

    #[test]
    fn bad_input_is_refused() {
        let parse_err = |line: &str| {
            Cli::try_parse_from(std::iter::once("arca-bench").chain(line.split_whitespace()))
                .is_err()
        };
        assert!(parse_err(""));
        assert!(parse_err("nonsense"));
        assert!(parse_err("raw --url http://x/ --spawn"));
        assert!(parse_err("raw --size 12Q"));
        assert!(parse("raw --clients 0").validate().is_err());
        assert!(parse("raw --duration 0").validate().is_err());
        assert!(parse("raw --count 0").validate().is_err());
        assert!(parse("raw --duration NaN").validate().is_err());
        assert!(parse_err("raw --digest md5"));
    }
}
