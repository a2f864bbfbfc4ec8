//! Settings of an arca server. Every field has a default, so `arca serve` runs with none;
//! [`Config::load`] layers a TOML file, then `ARCA_*` environment variables, and the CLI
//! applies its flags last.
#![warn(missing_docs)]

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Errors while loading settings.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The config file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid TOML for these settings.
    #[error("invalid config file {path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: toml::de::Error,
    },
    /// A value is out of range.
    #[error("invalid setting: {0}")]
    Invalid(String),
}

/// All settings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address to listen on (`ARCA_LISTEN`).
    pub listen: String,
    /// Data directory: OCFL root, staging area and catalog, all on one filesystem
    /// (`ARCA_DATA`).
    pub data: PathBuf,
    /// Path prefix of the Fedora API (`ARCA_BASE_PATH`).
    pub base_path: String,
    /// External URL of the REST root when behind a proxy (`ARCA_BASE_URL`).
    pub base_url: Option<String>,
    /// User recorded as creator/modifier until authentication exists (`ARCA_USER`).
    pub default_user: String,
    /// Log filter, e.g. `info` or `arca=debug` (`ARCA_LOG`).
    pub log: String,
    /// File listing the URL prefixes external content may come from, one per line, as in
    /// Fedora (`ARCA_EXTERNAL_CONTENT_ALLOWED`). Without it every external-content request
    /// is refused.
    pub external_content_allowed: Option<PathBuf>,
    /// PEM file of extra certificate authorities trusted for `https:` external content, on
    /// top of the system's roots (`ARCA_EXTERNAL_CONTENT_CA_FILE`).
    pub external_content_ca_file: Option<PathBuf>,
    /// A new OCFL version per change (Fedora's default, `true`), or changes into the
    /// object's mutable HEAD until `POST fcr:versions` (`false`) (`ARCA_AUTO_VERSIONING`).
    pub auto_versioning: bool,
    /// Seconds a transaction lives without use (`ARCA_TRANSACTION_TIMEOUT`; Fedora's
    /// default, 180).
    pub transaction_timeout: u64,
    /// Digest algorithm of the OCFL objects arca creates, `sha512` (Fedora's default) or
    /// `sha256` (`ARCA_DIGEST_ALGORITHM`; Fedora's `fcrepo.persistence.defaultDigestAlgorithm`).
    /// An existing object keeps the algorithm its inventory names.
    pub digest_algorithm: DigestAlgorithm,
    /// Authentication and access control (`[auth]` table, `ARCA_AUTH_<KEY>`).
    pub auth: Auth,
    /// Bounds on requests (`[limits]` table, `ARCA_LIMIT_<KEY>`); unset keys keep the
    /// server's defaults, listed in the README.
    pub limits: Limits,
    /// Notifications (`[events]` table, `ARCA_EVENTS_<KEY>`).
    pub events: Events,
    /// Full-text search (`[search]` table, `ARCA_SEARCH_<KEY>`).
    pub search: Search,
    /// Objects imported from Fedora 3 (`[fedora3]` table, `ARCA_FEDORA3_<KEY>`).
    pub fedora3: Fedora3,
    /// Where the catalog lives (`[catalog]` table, `ARCA_CATALOG_<KEY>`).
    pub catalog: CatalogSettings,
    /// Where the OCFL storage root lives (`[storage]` table, `ARCA_S3_<KEY>`).
    pub storage: StorageSettings,
    /// Thresholds of the readiness check (`[health]` table, `ARCA_HEALTH_<KEY>`).
    pub health: HealthSettings,
    /// Prometheus metrics (`[metrics]` table, `ARCA_METRICS_<KEY>`).
    pub metrics: Metrics,
    /// A second address that answers `GET /metrics` to anyone who reaches it, for a
    /// Prometheus on the monitoring network (`ARCA_METRICS_LISTEN`); bind it to a port only
    /// that network reaches. Unset: `/metrics` on `listen`, for admins only.
    pub metrics_listen: Option<String>,
    /// The background fixity audit of `arca serve` (`[fixity]` table, `ARCA_FIXITY_<KEY>`).
    pub fixity: FixitySettings,
    /// Second copies of the OCFL root (`[[replica]]` entries), kept up to date behind the
    /// writes and used to repair what an audit finds damaged.
    #[serde(rename = "replica")]
    pub replicas: Vec<ReplicaSettings>,
}

/// The background fixity audit: every stored file read and checked against its inventory's
/// digests once per `schedule`, at most `max_mb_per_s`, on `threads` threads.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FixitySettings {
    /// How often the whole root is audited: a number and a unit (`s`, `m`, `h`, `d`), e.g.
    /// `30d` (the default), or `off` (`ARCA_FIXITY_SCHEDULE`). A run starts that long after
    /// the last one started; a run cut short by a stop resumes at the next start.
    pub schedule: String,
    /// The most the audit reads, in MB (10^6 bytes) per second, each file counting 64 KiB
    /// more than its size (small files cost their opening), so that serving stays fast
    /// (`ARCA_FIXITY_MAX_MB_PER_S`; default 50; 0: no limit).
    pub max_mb_per_s: f64,
    /// Objects checked at once (`ARCA_FIXITY_THREADS`; default 1).
    pub threads: usize,
}

impl Default for FixitySettings {
    fn default() -> Self {
        Self {
            schedule: "30d".into(),
            max_mb_per_s: 50.0,
            threads: 1,
        }
    }
}

impl FixitySettings {
    /// The time between two runs; `None` when the schedule is `off`.
    pub fn interval(&self) -> Result<Option<std::time::Duration>, Error> {
        parse_schedule(&self.schedule)
    }

    /// The rate limit in bytes per second; `None`: no limit.
    pub fn max_bytes_per_second(&self) -> Option<u64> {
        (self.max_mb_per_s > 0.0).then_some((self.max_mb_per_s * 1e6) as u64)
    }

    fn apply_env(&mut self, get: &impl Fn(&str) -> Option<String>) -> Result<(), Error> {
        if let Some(v) = get("ARCA_FIXITY_SCHEDULE") {
            self.schedule = v.trim().to_string();
        }
        if let Some(v) = get("ARCA_FIXITY_MAX_MB_PER_S") {
            self.max_mb_per_s = v.trim().parse().map_err(|_| {
                Error::Invalid(format!(
                    "ARCA_FIXITY_MAX_MB_PER_S must be a number of MB per second (got {v:?})"
                ))
            })?;
        }
        if let Some(v) = get("ARCA_FIXITY_THREADS") {
            self.threads = parse_number("ARCA_FIXITY_THREADS", &v)?;
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), Error> {
        self.interval()?;
        if !(self.max_mb_per_s >= 0.0 && self.max_mb_per_s.is_finite()) {
            return Err(Error::Invalid(format!(
                "fixity.max_mb_per_s must be 0 (no limit) or more (got {})",
                self.max_mb_per_s
            )));
        }
        if self.threads == 0 || self.threads > 256 {
            return Err(Error::Invalid(format!(
                "fixity.threads must be between 1 and 256 (got {})",
                self.threads
            )));
        }
        Ok(())
    }
}

/// `30d`, `12h`, `90m`, `3600s` (or a bare number of seconds) as a duration; `off` (or `0`)
/// as `None`.
fn parse_schedule(text: &str) -> Result<Option<std::time::Duration>, Error> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let (number, unit) = match t.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let scale = match unit.trim() {
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => f64::NAN,
    };
    match number.parse::<f64>() {
        Ok(n) if scale.is_finite() && n >= 0.0 => {
            Ok((n > 0.0).then(|| std::time::Duration::from_secs_f64(n * scale)))
        }
        _ => Err(Error::Invalid(format!(
            "fixity.schedule must be a number with s, m, h or d (e.g. 30d), or off (got {text:?})"
        ))),
    }
}

/// A second copy of the OCFL root, in the same layout: a local directory (`path`) or a
/// bucket prefix of an S3-compatible store (`endpoint`, `bucket`, `prefix`, `region`, as in
/// `[storage.s3]`; credentials from `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaSettings {
    /// The replica's name in status, metrics and reports (default: its path, or
    /// `s3://bucket/prefix`).
    pub name: Option<String>,
    /// A directory holding (or to hold) the replica root.
    pub path: Option<PathBuf>,
    /// The service's URL, for a replica in S3 (unset: Amazon S3).
    pub endpoint: Option<String>,
    /// The bucket of a replica in S3.
    pub bucket: Option<String>,
    /// The key prefix of the replica root in the bucket.
    #[serde(default)]
    pub prefix: String,
    /// The region of a replica in S3.
    #[serde(default = "default_region")]
    pub region: String,
}

impl ReplicaSettings {
    /// The replica's name: as configured, or where it is.
    pub fn label(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        match (&self.path, &self.bucket) {
            (Some(p), _) => p.display().to_string(),
            (None, Some(b)) if self.prefix.is_empty() => format!("s3://{b}"),
            (None, Some(b)) => format!("s3://{b}/{}", self.prefix),
            (None, None) => "replica".into(),
        }
    }

    fn validate(&self) -> Result<(), Error> {
        match (&self.path, &self.bucket) {
            (Some(_), None) if self.endpoint.is_none() => Ok(()),
            (None, Some(b)) if !b.trim().is_empty() => Ok(()),
            _ => Err(Error::Invalid(format!(
                "replica {:?} needs either path, or bucket (with endpoint, prefix and region if needed), not both",
                self.label()
            ))),
        }
    }
}

/// Thresholds of `/health/ready`: the data directory's file system must have more free
/// space than both.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HealthSettings {
    /// Free bytes below which the server reports not ready (default 1 GiB).
    pub min_free_bytes: u64,
    /// Free percent of the file system below which the server reports not ready (default 2).
    pub min_free_percent: u64,
}

impl Default for HealthSettings {
    fn default() -> Self {
        Self {
            min_free_bytes: 1 << 30,
            min_free_percent: 2,
        }
    }
}

impl HealthSettings {
    fn apply_env(&mut self, get: &impl Fn(&str) -> Option<String>) -> Result<(), Error> {
        if let Some(v) = get("ARCA_HEALTH_MIN_FREE_BYTES") {
            self.min_free_bytes = parse_number("ARCA_HEALTH_MIN_FREE_BYTES", &v)?;
        }
        if let Some(v) = get("ARCA_HEALTH_MIN_FREE_PERCENT") {
            self.min_free_percent = parse_number("ARCA_HEALTH_MIN_FREE_PERCENT", &v)?;
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), Error> {
        if self.min_free_percent > 100 {
            return Err(Error::Invalid(format!(
                "health.min_free_percent is a percentage, at most 100 (got {})",
                self.min_free_percent
            )));
        }
        Ok(())
    }
}

/// Prometheus metrics.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Metrics {
    /// Record requests and answer `/metrics` (`true`; `ARCA_METRICS_ENABLED`). Off:
    /// `/metrics` is 404 and nothing is recorded.
    pub enabled: bool,
}

impl Default for Metrics {
    fn default() -> Self {
        Self { enabled: true }
    }
}

/// Where the OCFL storage root lives: `ocfl-root/` in the data directory by default, or a
/// bucket of an S3-compatible store (`[storage.s3]`, scale-out).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageSettings {
    /// The root in an S3-compatible store. Credentials come from the standard
    /// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` environment variables, never from
    /// this file.
    pub s3: Option<S3Settings>,
}

/// An OCFL storage root in a bucket of an S3-compatible store, laid out as Fedora 6 (its
/// ocfl-java S3 storage) lays one out: key `<prefix>/<path in the root>`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3Settings {
    /// The service's URL, e.g. `http://127.0.0.1:9000` for MinIO (`ARCA_S3_ENDPOINT`);
    /// unset for Amazon S3. `http://` endpoints are allowed.
    pub endpoint: Option<String>,
    /// The bucket (`ARCA_S3_BUCKET`); it must exist.
    pub bucket: String,
    /// The key prefix of the root in the bucket (`ARCA_S3_PREFIX`); empty: the bucket's
    /// top level, as Fedora's `fcrepo.ocfl.s3.prefix` defaults to.
    #[serde(default)]
    pub prefix: String,
    /// The region (`ARCA_S3_REGION`; default `us-east-1`).
    #[serde(default = "default_region")]
    pub region: String,
    /// Whether the bucket must keep the versions of replaced and deleted objects
    /// (`ARCA_S3_REQUIRE_VERSIONING`; default `true`): a root whose inventories are replaced
    /// in place is then recoverable from any earlier state. `false` accepts a bucket without.
    #[serde(default = "default_true")]
    pub require_versioning: bool,
}

fn default_true() -> bool {
    true
}

fn default_region() -> String {
    "us-east-1".to_string()
}

impl StorageSettings {
    /// `ARCA_S3_BUCKET` puts the root in S3 (with `ARCA_S3_ENDPOINT`, `ARCA_S3_PREFIX` and
    /// `ARCA_S3_REGION`); the other variables change a `[storage.s3]` table of the file.
    fn apply_env(&mut self, get: &impl Fn(&str) -> Option<String>) -> Result<(), Error> {
        if let Some(bucket) = get("ARCA_S3_BUCKET").filter(|b| !b.trim().is_empty()) {
            let s3 = self.s3.get_or_insert_with(|| S3Settings {
                endpoint: None,
                bucket: String::new(),
                prefix: String::new(),
                region: default_region(),
                require_versioning: true,
            });
            s3.bucket = bucket.trim().to_string();
        }
        if let Some(s3) = &mut self.s3 {
            if let Some(v) = get("ARCA_S3_ENDPOINT") {
                s3.endpoint = (!v.trim().is_empty()).then(|| v.trim().to_string());
            }
            if let Some(v) = get("ARCA_S3_PREFIX") {
                s3.prefix = v.trim().to_string();
            }
            if let Some(v) = get("ARCA_S3_REGION") {
                s3.region = v.trim().to_string();
            }
            if let Some(v) = get("ARCA_S3_REQUIRE_VERSIONING") {
                s3.require_versioning = parse_bool("ARCA_S3_REQUIRE_VERSIONING", &v)?;
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), Error> {
        let Some(s3) = &self.s3 else {
            return Ok(());
        };
        if s3.bucket.trim().is_empty() {
            return Err(Error::Invalid(
                "storage.s3.bucket must name a bucket".into(),
            ));
        }
        if let Some(endpoint) = &s3.endpoint {
            if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
                return Err(Error::Invalid(format!(
                    "storage.s3.endpoint must be an http:// or https:// URL (got {endpoint:?})"
                )));
            }
        }
        Ok(())
    }
}

/// Where the catalog lives: SQLite in the data directory by default, or a PostgreSQL
/// database (scale-out).
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CatalogSettings {
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` keeps the catalog in PostgreSQL
    /// (`ARCA_CATALOG_URL`, where a password belongs rather than in a file); unset, the
    /// catalog is `catalog.sqlite` in the data directory.
    pub url: Option<String>,
    /// Connections to PostgreSQL this node keeps at most (`ARCA_CATALOG_MAX_CONNECTIONS`,
    /// `16`). PostgreSQL serves every node: the nodes' sum should stay well under its
    /// `max_connections`, and near its core count × 2–4 for the least contention.
    pub max_connections: u32,
    /// TLS to PostgreSQL (`ARCA_CATALOG_SSLMODE`): `disable`, `prefer`, `require`,
    /// `verify-ca` or `verify-full`, as libpq's `sslmode` (which the URL may give instead);
    /// unset: the URL's, else `prefer`.
    pub sslmode: Option<CatalogSslMode>,
    /// A PEM file of the CA certificates that sign PostgreSQL's certificate, trusted besides
    /// the system's (`ARCA_CATALOG_SSL_ROOT_CERT`; libpq's `sslrootcert`, which the URL may
    /// give instead).
    pub ssl_root_cert: Option<PathBuf>,
}

impl Default for CatalogSettings {
    fn default() -> Self {
        Self {
            url: None,
            max_connections: 16,
            sslmode: None,
            ssl_root_cert: None,
        }
    }
}

/// How the catalog's connections to PostgreSQL use TLS (libpq's `sslmode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CatalogSslMode {
    /// Never TLS.
    Disable,
    /// TLS when the server offers it, the certificate unchecked.
    Prefer,
    /// TLS or no connection; the certificate checked only against `ssl_root_cert`.
    Require,
    /// TLS with a certificate that chains to a trusted CA.
    VerifyCa,
    /// As `verify-ca`, and the certificate names the host connected to.
    VerifyFull,
}

impl CatalogSslMode {
    /// Parses `disable`, `prefer`, `require`, `verify-ca` or `verify-full`.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "disable" => Some(Self::Disable),
            "prefer" => Some(Self::Prefer),
            "require" => Some(Self::Require),
            "verify-ca" => Some(Self::VerifyCa),
            "verify-full" => Some(Self::VerifyFull),
            _ => None,
        }
    }
}

impl std::fmt::Debug for CatalogSettings {
    /// The URL without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogSettings")
            .field("url", &self.url.as_deref().map(redact_password))
            .field("max_connections", &self.max_connections)
            .field("sslmode", &self.sslmode)
            .field("ssl_root_cert", &self.ssl_root_cert)
            .finish()
    }
}

/// `url` with the password of its user info (`user:password@`) replaced by `***`.
pub fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_string();
    };
    match rest[..at].split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***{}", &rest[at..]),
        None => url.to_string(),
    }
}

impl CatalogSettings {
    fn apply_env(&mut self, get: &impl Fn(&str) -> Option<String>) -> Result<(), Error> {
        if let Some(v) = get("ARCA_CATALOG_URL") {
            self.url = (!v.trim().is_empty()).then(|| v.trim().to_string());
        }
        if let Some(v) = get("ARCA_CATALOG_MAX_CONNECTIONS") {
            self.max_connections = parse_number("ARCA_CATALOG_MAX_CONNECTIONS", &v)?;
        }
        if let Some(v) = get("ARCA_CATALOG_SSLMODE") {
            self.sslmode = if v.trim().is_empty() {
                None
            } else {
                Some(CatalogSslMode::parse(&v).ok_or_else(|| {
                    Error::Invalid(format!(
                        "ARCA_CATALOG_SSLMODE must be disable, prefer, require, verify-ca or \
                         verify-full (got {v:?})"
                    ))
                })?)
            };
        }
        if let Some(v) = get("ARCA_CATALOG_SSL_ROOT_CERT") {
            self.ssl_root_cert = (!v.trim().is_empty()).then(|| PathBuf::from(v.trim()));
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), Error> {
        if self.max_connections == 0 {
            return Err(Error::Invalid(
                "catalog.max_connections must be at least 1".into(),
            ));
        }
        if self.url.is_none() && (self.sslmode.is_some() || self.ssl_root_cert.is_some()) {
            return Err(Error::Invalid(
                "catalog.sslmode and catalog.ssl_root_cert apply to a PostgreSQL catalog: \
                 set catalog.url (ARCA_CATALOG_URL) too, or leave them out"
                    .into(),
            ));
        }
        match &self.url {
            Some(url) if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) => {
                Err(Error::Invalid(format!(
                    "catalog.url must be a PostgreSQL URL, postgres://user@host:port/database \
                     (got {:?})",
                    redact_password(url)
                )))
            }
            _ => Ok(()),
        }
    }
}

/// Objects imported from Fedora 3 (`arca import fedora3`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Fedora3 {
    /// The read-only Fedora 3 REST facade under `/fedora/` (`ARCA_FEDORA3_FACADE`).
    pub facade: Facade,
}

/// Whether the Fedora 3 facade is served.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Facade {
    /// When the repository holds imported objects (decided at start-up).
    #[default]
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

impl Facade {
    /// Parses `auto`, `on` or `off`.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "auto" => Some(Self::Auto),
            "on" => Some(Self::On),
            "off" => Some(Self::Off),
            _ => None,
        }
    }
}

/// The built-in search index (`/rest/fcr:search`, `/fedoragsearch/rest`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Search {
    /// Index every change and answer queries (`true`).
    pub enabled: bool,
    /// The most hits one page may ask for (`1000`).
    pub max_results: usize,
    /// Bytes of text kept per binary (`10485760`, 10 MiB); the rest is cut off.
    pub text_limit: usize,
    /// Binaries larger than this many bytes are not read for text (`268435456`).
    pub extract_max_input: u64,
    /// Seconds one PDF's extraction may take before it is given up (`30`).
    pub extract_timeout: u64,
    /// Address space of the process extracting one PDF, in MiB (`1024`).
    pub extract_memory_mib: u64,
    /// Extractions at once (`0`: one per core).
    pub extract_workers: usize,
    /// Child binaries whose text goes into a container's ALL and FULLTEXT (`64`).
    pub child_binaries: usize,
    /// The program that extracts a PDF's text [default: this `arca` binary's hidden
    /// `extract-text` command].
    pub extract_program: Option<PathBuf>,
    /// The longest, in milliseconds, the index waits between two commits while changes keep
    /// coming (`500`): the bound on a write's time to become searchable, less the commit's
    /// own. The index commits sooner when commits are quick (100 ms apart at the least).
    pub max_commit_interval_ms: u64,
    /// After how many documents written the index, once caught up, is merged into one segment
    /// when they are half of it or more (`10000`; `0`: never): a bulk load leaves about ten
    /// segments and older versions of documents that every query pays for.
    pub bulk_merge_documents: u64,
    /// The field mapping; without it, Dublin Core (see the README). Each entry:
    /// `name`, `predicates` (IRIs), `kind` (`text`, `keyword` or `date`), optional
    /// `first_name`/`last_name` fields for "Last, First" values.
    pub fields: Option<Vec<SearchField>>,
    /// The REST roots of other arca nodes that index (e.g. `http://index-1:8080/rest`), to
    /// which a node without its own index (`enabled = false`) forwards `fcr:search`, its
    /// status and `/fedoragsearch/rest`, trying them in order (`ARCA_SEARCH_FORWARD_TO`,
    /// comma-separated). Each is named as that node names its REST root (its `base_url`
    /// when set). Empty (the default): such a node answers searches with 501.
    pub forward_to: Vec<String>,
}

/// One mapped search field (`[[search.fields]]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchField {
    /// Its name in queries.
    pub name: String,
    /// The predicates whose objects it takes.
    pub predicates: Vec<String>,
    /// `text` (default), `keyword` or `date`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Field for first names split from "Last, First" values.
    #[serde(default)]
    pub first_name: Option<String>,
    /// Field for last names.
    #[serde(default)]
    pub last_name: Option<String>,
}

impl Default for Search {
    fn default() -> Self {
        Self {
            enabled: true,
            max_results: 1_000,
            text_limit: 10 << 20,
            extract_max_input: 256 << 20,
            extract_timeout: 30,
            extract_memory_mib: 1024,
            extract_workers: 0,
            child_binaries: 64,
            max_commit_interval_ms: 500,
            bulk_merge_documents: 10_000,
            extract_program: None,
            fields: None,
            forward_to: Vec::new(),
        }
    }
}

impl Search {
    fn apply_env(&mut self, get: &impl Fn(&str) -> Option<String>) -> Result<(), Error> {
        if let Some(v) = get("ARCA_SEARCH_ENABLED") {
            self.enabled = parse_bool("ARCA_SEARCH_ENABLED", &v)?;
        }
        if let Some(v) = get("ARCA_SEARCH_MAX_RESULTS") {
            self.max_results = parse_number("ARCA_SEARCH_MAX_RESULTS", &v)?;
        }
        if let Some(v) = get("ARCA_SEARCH_TEXT_LIMIT") {
            self.text_limit = parse_number("ARCA_SEARCH_TEXT_LIMIT", &v)?;
        }
        if let Some(v) = get("ARCA_SEARCH_EXTRACT_TIMEOUT") {
            self.extract_timeout = parse_number("ARCA_SEARCH_EXTRACT_TIMEOUT", &v)?;
        }
        if let Some(v) = get("ARCA_SEARCH_EXTRACT_MEMORY_MIB") {
            self.extract_memory_mib = parse_number("ARCA_SEARCH_EXTRACT_MEMORY_MIB", &v)?;
        }
        if let Some(v) = get("ARCA_SEARCH_MAX_COMMIT_INTERVAL_MS") {
            self.max_commit_interval_ms = parse_number("ARCA_SEARCH_MAX_COMMIT_INTERVAL_MS", &v)?;
        }
        if let Some(v) = get("ARCA_SEARCH_BULK_MERGE_DOCUMENTS") {
            self.bulk_merge_documents = parse_number("ARCA_SEARCH_BULK_MERGE_DOCUMENTS", &v)?;
        }
        if let Some(v) = get("ARCA_SEARCH_EXTRACT_WORKERS") {
            self.extract_workers = parse_number("ARCA_SEARCH_EXTRACT_WORKERS", &v)?;
        }
        if let Some(v) = get("ARCA_SEARCH_EXTRACT_PROGRAM") {
            self.extract_program = Some(PathBuf::from(v));
        }
        if let Some(v) = get("ARCA_SEARCH_FORWARD_TO") {
            self.forward_to = v
                .split(',')
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(str::to_string)
                .collect();
        }
        Ok(())
    }

    fn validate(&mut self) -> Result<(), Error> {
        if self.enabled && !self.forward_to.is_empty() {
            return Err(Error::Invalid(
                "search.forward_to is for nodes without an index of their own: set search.enabled = false (ARCA_SEARCH_ENABLED=false) or leave search.forward_to empty".into(),
            ));
        }
        for url in &mut self.forward_to {
            let trimmed = url.trim().trim_end_matches('/');
            check_forward_url(trimmed).map_err(|why| {
                Error::Invalid(format!(
                    "search.forward_to {:?} is not a node's REST root URL: {why}",
                    redact_password(url)
                ))
            })?;
            *url = trimmed.to_string();
        }
        if self.max_results == 0 {
            return Err(Error::Invalid(
                "search.max_results must be at least 1".into(),
            ));
        }
        if self.extract_timeout == 0 || self.extract_memory_mib < 64 {
            return Err(Error::Invalid(
                "search.extract_timeout must be ≥ 1 s and search.extract_memory_mib ≥ 64".into(),
            ));
        }
        for f in self.fields.iter().flatten() {
            if !matches!(f.kind.as_deref(), None | Some("text" | "keyword" | "date")) {
                return Err(Error::Invalid(format!(
                    "search field {}: kind must be text, keyword or date",
                    f.name
                )));
            }
        }
        Ok(())
    }
}

/// Why `url` cannot be a search node's REST root: `http://` or `https://`, a host, a path
/// (the REST root, e.g. `/rest`) and nothing after it.
fn check_forward_url(url: &str) -> Result<(), &'static str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or("it must start with http:// or https://")?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.is_empty() {
        return Err("it names no host");
    }
    if authority.contains('@') {
        return Err("credentials do not belong in it: the caller's own are forwarded");
    }
    if url.contains(['?', '#']) || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("it must be a plain URL without query, fragment or spaces");
    }
    if path.is_empty() {
        return Err("it must end with the node's base path, e.g. http://index-1:8080/rest");
    }
    Ok(())
}

/// Where every change goes as an event. The HTTP event log (`/rest/fcr:events`) is always
/// there; a broker is used when `stomp_url` is set.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Events {
    /// The STOMP broker events go to, e.g. `stomp://127.0.0.1:61613` (none by default).
    pub stomp_url: Option<String>,
    /// The destination on the broker (`/topic/fedora`, Fedora's).
    pub destination: String,
    /// The broker's login, if it wants one.
    pub login: Option<String>,
    /// The broker's passcode (better given as `ARCA_EVENTS_PASSCODE`).
    pub passcode: Option<String>,
    /// Days the change log keeps events (`0`, the default: forever; the log is small). An
    /// event a destination has not received yet is kept regardless.
    pub keep_days: u64,
    /// Delivery to a destination configured for the first time starts at the first event
    /// of the log (`true`) or at the next change (`false`, the default, as a new broker
    /// subscriber of Fedora gets only new events).
    pub deliver_history: bool,
}

impl Default for Events {
    fn default() -> Self {
        Self {
            stomp_url: None,
            destination: "/topic/fedora".into(),
            login: None,
            passcode: None,
            keep_days: 0,
            deliver_history: false,
        }
    }
}

impl Events {
    fn apply_env(&mut self, get: &impl Fn(&str) -> Option<String>) -> Result<(), Error> {
        self.stomp_url = get("ARCA_EVENTS_STOMP_URL").or(self.stomp_url.take());
        self.login = get("ARCA_EVENTS_LOGIN").or(self.login.take());
        self.passcode = get("ARCA_EVENTS_PASSCODE").or(self.passcode.take());
        if let Some(v) = get("ARCA_EVENTS_DESTINATION") {
            self.destination = v;
        }
        if let Some(v) = get("ARCA_EVENTS_KEEP_DAYS") {
            self.keep_days = v.trim().parse().map_err(|_| {
                Error::Invalid(format!(
                    "ARCA_EVENTS_KEEP_DAYS must be a whole number of days (got {v:?})"
                ))
            })?;
        }
        if let Some(v) = get("ARCA_EVENTS_DELIVER_HISTORY") {
            self.deliver_history = parse_bool("ARCA_EVENTS_DELIVER_HISTORY", &v)?;
        }
        Ok(())
    }

    fn validate(&mut self) -> Result<(), Error> {
        if self
            .stomp_url
            .as_deref()
            .is_some_and(|u| u.trim().is_empty())
        {
            self.stomp_url = None;
        }
        if self.destination.trim().is_empty() {
            return Err(Error::Invalid(
                "events.destination must name a topic or queue, e.g. /topic/fedora".into(),
            ));
        }
        Ok(())
    }
}

/// Who may log in and how access is decided. With no users configured and a loopback
/// listen address, arca has Fedora's quick-start admin `fedoraAdmin`/`fedoraAdmin`; on any
/// other address it refuses to start without users.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Auth {
    /// Check credentials and ACLs (`true`). `false` lets every request do everything and is
    /// allowed on a loopback address only.
    pub enabled: bool,
    /// An Apache htpasswd file (bcrypt, SHA-1 or MD5 entries), reloaded when it changes.
    pub htpasswd: Option<PathBuf>,
    /// HS256 secret for Bearer JWTs (better given as `ARCA_AUTH_JWT_KEY` or in a file,
    /// `jwt_key_file`).
    pub jwt_key: Option<String>,
    /// File holding the HS256 secret (trailing whitespace ignored).
    pub jwt_key_file: Option<PathBuf>,
    /// PEM public key for RS256 or ES256 Bearer JWTs.
    pub jwt_public_key: Option<PathBuf>,
    /// The JWT claim holding the user's roles (`roles`).
    pub jwt_roles_claim: String,
    /// Users who bypass ACLs and may act for others (`On-Behalf-Of`), as Fedora's
    /// `fedoraAdmin` (`["fedoraAdmin"]`; `ARCA_AUTH_ADMINS` comma-separated).
    pub admins: Vec<String>,
    /// A role whose holders are admins (`fedoraAdmin`, Fedora's admin role).
    pub admin_role: Option<String>,
    /// Base of users' agent IRIs: user `alice` is `<base>alice` in ACLs and in
    /// `createdBy`/`lastModifiedBy` (Fedora's `fcrepo.auth.webac.userAgent.baseUri`). Without
    /// it, users are their bare names.
    pub user_base_uri: Option<String>,
    /// Base of role groups: role `editors` is the `acl:agentGroup` `<base>editors` (Fedora's
    /// `fcrepo.auth.webac.groupAgent.baseUri`).
    pub group_base_uri: Option<String>,
    /// Turtle file with the ACL that applies where no resource up the tree has one;
    /// Fedora's default (everyone may read) without it.
    pub root_acl: Option<PathBuf>,
}

impl Default for Auth {
    fn default() -> Self {
        Self {
            enabled: true,
            htpasswd: None,
            jwt_key: None,
            jwt_key_file: None,
            jwt_public_key: None,
            jwt_roles_claim: "roles".into(),
            admins: vec!["fedoraAdmin".into()],
            admin_role: Some("fedoraAdmin".into()),
            user_base_uri: None,
            group_base_uri: None,
            root_acl: None,
        }
    }
}

impl Auth {
    /// Whether any way to log in is configured (an htpasswd file or a JWT key).
    pub fn has_users(&self) -> bool {
        self.htpasswd.is_some()
            || self.jwt_key.is_some()
            || self.jwt_key_file.is_some()
            || self.jwt_public_key.is_some()
    }

    fn apply_env(&mut self, get: &impl Fn(&str) -> Option<String>) -> Result<(), Error> {
        if let Some(v) = get("ARCA_AUTH_ENABLED") {
            self.enabled = parse_bool("ARCA_AUTH_ENABLED", &v)?;
        }
        let path = |k: &str| get(k).map(PathBuf::from);
        self.htpasswd = path("ARCA_AUTH_HTPASSWD").or(self.htpasswd.take());
        self.jwt_key = get("ARCA_AUTH_JWT_KEY").or(self.jwt_key.take());
        self.jwt_key_file = path("ARCA_AUTH_JWT_KEY_FILE").or(self.jwt_key_file.take());
        self.jwt_public_key = path("ARCA_AUTH_JWT_PUBLIC_KEY").or(self.jwt_public_key.take());
        self.root_acl = path("ARCA_AUTH_ROOT_ACL").or(self.root_acl.take());
        self.user_base_uri = get("ARCA_AUTH_USER_BASE_URI").or(self.user_base_uri.take());
        self.group_base_uri = get("ARCA_AUTH_GROUP_BASE_URI").or(self.group_base_uri.take());
        self.admin_role = get("ARCA_AUTH_ADMIN_ROLE").or(self.admin_role.take());
        if let Some(v) = get("ARCA_AUTH_JWT_ROLES_CLAIM") {
            self.jwt_roles_claim = v;
        }
        if let Some(v) = get("ARCA_AUTH_ADMINS") {
            self.admins = v
                .split(',')
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(str::to_string)
                .collect();
        }
        Ok(())
    }

    fn validate(&self, listen: &str) -> Result<(), Error> {
        let loopback = listen
            .parse::<std::net::SocketAddr>()
            .is_ok_and(|a| a.ip().is_loopback());
        if !self.enabled && !loopback {
            return Err(Error::Invalid(format!(
                "auth.enabled = false is allowed on a loopback address only (listen = {listen:?})"
            )));
        }
        if self.enabled && !loopback && !self.has_users() {
            return Err(Error::Invalid(format!(
                "listening on {listen:?} needs configured users: set auth.htpasswd, auth.jwt_key(_file) or auth.jwt_public_key (the built-in fedoraAdmin/fedoraAdmin exists on loopback addresses only)"
            )));
        }
        if self.jwt_key.is_some() && self.jwt_key_file.is_some() {
            return Err(Error::Invalid(
                "set auth.jwt_key or auth.jwt_key_file, not both".into(),
            ));
        }
        Ok(())
    }
}

/// The whole number in environment variable `var`'s value `v`.
fn parse_number<T: std::str::FromStr>(var: &str, v: &str) -> Result<T, Error> {
    v.trim()
        .parse()
        .map_err(|_| Error::Invalid(format!("{var} must be a whole number (got {v:?})")))
}

fn parse_bool(var: &str, v: &str) -> Result<bool, Error> {
    match v.trim() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(Error::Invalid(format!(
            "{var} must be true or false (got {v:?})"
        ))),
    }
}

/// The digest algorithms OCFL allows for an inventory's `digestAlgorithm`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DigestAlgorithm {
    /// SHA-512, the default of OCFL and Fedora.
    #[default]
    Sha512,
    /// SHA-256: valid OCFL (validators warn W004), about twice as fast on CPUs with SHA
    /// extensions.
    Sha256,
}

impl DigestAlgorithm {
    /// Parses `sha512` or `sha256` (the OCFL names, as in the TOML file).
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "sha512" => Some(Self::Sha512),
            "sha256" => Some(Self::Sha256),
            _ => None,
        }
    }
}

/// Bounds on what one request may make the server do. Every key is optional: `None` keeps
/// the default of the layer that enforces it (see the README's table of limits).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Largest RDF body in bytes (413 beyond).
    pub rdf_body_bytes: Option<u64>,
    /// Largest SPARQL Update body in bytes (413 beyond).
    pub sparql_body_bytes: Option<u64>,
    /// Memory all buffered RDF/SPARQL bodies may take together, in bytes.
    pub buffered_bodies_bytes: Option<u64>,
    /// Longest request target (path and query) in bytes (414 beyond).
    pub url_bytes: Option<u64>,
    /// Most bytes of header names and values in one request (431 beyond); at least 8192.
    pub header_bytes: Option<u64>,
    /// Deepest nesting of brackets or XML elements in a body.
    pub rdf_nesting: Option<u64>,
    /// Most triples in one body or SPARQL update result.
    pub rdf_triples: Option<u64>,
    /// Longest literal in bytes.
    pub rdf_literal_bytes: Option<u64>,
    /// Longest IRI in bytes.
    pub rdf_iri_bytes: Option<u64>,
    /// Most chained operators in a SPARQL update.
    pub sparql_operators: Option<u64>,
    /// Most bytes RDF/XML entity references may expand to.
    pub rdf_entity_expansion_bytes: Option<u64>,
    /// Longest parse or SPARQL update, in seconds.
    pub parse_seconds: Option<u64>,
    /// Longest wait for a request's head, in seconds.
    pub header_timeout_seconds: Option<u64>,
    /// Longest pause while a request body arrives, in seconds (408 beyond).
    pub body_idle_timeout_seconds: Option<u64>,
    /// Most connections served at once; further clients wait in the listen queue.
    pub max_connections: Option<u64>,
    /// How long shutdown waits for requests in flight, in seconds.
    pub shutdown_grace_seconds: Option<u64>,
}

impl Limits {
    /// Every key with a mutable reference to its value, for the environment and checks.
    fn entries(&mut self) -> [(&'static str, &mut Option<u64>); 16] {
        [
            ("rdf_body_bytes", &mut self.rdf_body_bytes),
            ("sparql_body_bytes", &mut self.sparql_body_bytes),
            ("buffered_bodies_bytes", &mut self.buffered_bodies_bytes),
            ("url_bytes", &mut self.url_bytes),
            ("header_bytes", &mut self.header_bytes),
            ("rdf_nesting", &mut self.rdf_nesting),
            ("rdf_triples", &mut self.rdf_triples),
            ("rdf_literal_bytes", &mut self.rdf_literal_bytes),
            ("rdf_iri_bytes", &mut self.rdf_iri_bytes),
            ("sparql_operators", &mut self.sparql_operators),
            (
                "rdf_entity_expansion_bytes",
                &mut self.rdf_entity_expansion_bytes,
            ),
            ("parse_seconds", &mut self.parse_seconds),
            ("header_timeout_seconds", &mut self.header_timeout_seconds),
            (
                "body_idle_timeout_seconds",
                &mut self.body_idle_timeout_seconds,
            ),
            ("max_connections", &mut self.max_connections),
            ("shutdown_grace_seconds", &mut self.shutdown_grace_seconds),
        ]
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            data: PathBuf::from("./arca-data"),
            base_path: "/rest".into(),
            base_url: None,
            default_user: "fedoraAdmin".into(),
            log: "info".into(),
            external_content_allowed: None,
            external_content_ca_file: None,
            auto_versioning: true,
            transaction_timeout: 180,
            digest_algorithm: DigestAlgorithm::Sha512,
            auth: Auth::default(),
            limits: Limits::default(),
            events: Events::default(),
            search: Search::default(),
            fedora3: Fedora3::default(),
            catalog: CatalogSettings::default(),
            storage: StorageSettings::default(),
            health: HealthSettings::default(),
            metrics: Metrics::default(),
            metrics_listen: None,
            fixity: FixitySettings::default(),
            replicas: Vec::new(),
        }
    }
}

impl Config {
    /// Defaults, overlaid by `file` (if given), then by `ARCA_*` environment variables.
    pub fn load(file: Option<&Path>) -> Result<Self, Error> {
        let mut config = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
                    path: path.to_path_buf(),
                    source,
                })?;
                toml::from_str(&text).map_err(|source| Error::Parse {
                    path: path.to_path_buf(),
                    source,
                })?
            }
            None => Config::default(),
        };
        config.apply_env(|k| std::env::var(k).ok())?;
        config.validate()?;
        Ok(config)
    }

    /// Applies `ARCA_*` variables through `get` (a parameter so tests need no process env).
    /// A limit variable that is not a whole number is an error.
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) -> Result<(), Error> {
        for (key, value) in self.limits.entries() {
            let var = format!("ARCA_LIMIT_{}", key.to_ascii_uppercase());
            if let Some(v) = get(&var) {
                *value = Some(parse_number(&var, &v)?);
            }
        }
        if let Some(v) = get("ARCA_LISTEN") {
            self.listen = v;
        }
        if let Some(v) = get("ARCA_DATA") {
            self.data = PathBuf::from(v);
        }
        if let Some(v) = get("ARCA_BASE_PATH") {
            self.base_path = v;
        }
        if let Some(v) = get("ARCA_BASE_URL") {
            self.base_url = Some(v);
        }
        if let Some(v) = get("ARCA_USER") {
            self.default_user = v;
        }
        if let Some(v) = get("ARCA_LOG") {
            self.log = v;
        }
        if let Some(v) = get("ARCA_EXTERNAL_CONTENT_ALLOWED") {
            self.external_content_allowed = Some(PathBuf::from(v));
        }
        if let Some(v) = get("ARCA_EXTERNAL_CONTENT_CA_FILE") {
            self.external_content_ca_file = Some(PathBuf::from(v));
        }
        if let Some(v) = get("ARCA_AUTO_VERSIONING") {
            self.auto_versioning = parse_bool("ARCA_AUTO_VERSIONING", &v)?;
        }
        self.auth.apply_env(&get)?;
        self.events.apply_env(&get)?;
        self.search.apply_env(&get)?;
        self.catalog.apply_env(&get)?;
        self.storage.apply_env(&get)?;
        self.health.apply_env(&get)?;
        self.fixity.apply_env(&get)?;
        if let Some(v) = get("ARCA_METRICS_ENABLED") {
            self.metrics.enabled = parse_bool("ARCA_METRICS_ENABLED", &v)?;
        }
        if let Some(v) = get("ARCA_METRICS_LISTEN") {
            self.metrics_listen = Some(v).filter(|v| !v.trim().is_empty());
        }
        if let Some(v) = get("ARCA_FEDORA3_FACADE") {
            self.fedora3.facade = Facade::parse(&v).ok_or_else(|| {
                Error::Invalid(format!(
                    "ARCA_FEDORA3_FACADE must be auto, on or off (got {v:?})"
                ))
            })?;
        }
        if let Some(v) = get("ARCA_DIGEST_ALGORITHM") {
            self.digest_algorithm = DigestAlgorithm::parse(&v).ok_or_else(|| {
                Error::Invalid(format!(
                    "ARCA_DIGEST_ALGORITHM must be sha512 or sha256 (got {v:?})"
                ))
            })?;
        }
        if let Some(v) = get("ARCA_TRANSACTION_TIMEOUT") {
            self.transaction_timeout = v.trim().parse().map_err(|_| {
                Error::Invalid(format!(
                    "ARCA_TRANSACTION_TIMEOUT must be a whole number of seconds (got {v:?})"
                ))
            })?;
        }
        Ok(())
    }

    /// Checks and normalizes values.
    pub fn validate(&mut self) -> Result<(), Error> {
        let bp = self.base_path.trim_end_matches('/').to_string();
        if !bp.starts_with('/') || bp.len() < 2 {
            return Err(Error::Invalid(format!(
                "base_path must start with '/' and name a path, e.g. /rest (got {:?})",
                self.base_path
            )));
        }
        self.base_path = bp;
        if let Some(u) = &self.base_url {
            self.base_url = Some(u.trim_end_matches('/').to_string());
        }
        if self.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(Error::Invalid(format!(
                "listen must be an address such as 127.0.0.1:8080 (got {:?})",
                self.listen
            )));
        }
        if let Some(m) = &self.metrics_listen {
            if m.parse::<std::net::SocketAddr>().is_err() {
                return Err(Error::Invalid(format!(
                    "metrics_listen must be an address such as 127.0.0.1:9187 (got {m:?})"
                )));
            }
        }
        self.auth.validate(&self.listen)?;
        self.events.validate()?;
        self.search.validate()?;
        self.catalog.validate()?;
        self.storage.validate()?;
        if self.fedora3.facade == Facade::On && self.base_path == "/fedora" {
            return Err(Error::Invalid(
                "the Fedora 3 facade is served under /fedora: give the Fedora API another base_path or set fedora3.facade = \"off\"".into(),
            ));
        }
        for (key, value) in self.limits.entries() {
            if *value == Some(0) {
                return Err(Error::Invalid(format!("limits.{key} must be at least 1")));
            }
        }
        if self.limits.header_bytes.is_some_and(|b| b < 8192) {
            return Err(Error::Invalid(
                "limits.header_bytes must be at least 8192".into(),
            ));
        }
        self.health.validate()?;
        self.fixity.validate()?;
        for replica in &self.replicas {
            replica.validate()?;
        }
        Ok(())
    }

    /// The OCFL storage root inside the data directory (named as in Fedora 6).
    pub fn ocfl_root(&self) -> PathBuf {
        self.data.join("ocfl-root")
    }

    /// The staging area (same filesystem as the root, so publishing is a rename).
    pub fn staging(&self) -> PathBuf {
        self.data.join("staging")
    }

    /// The redo journal (same filesystem as the root: its checkpoints sync both).
    pub fn journal_dir(&self) -> PathBuf {
        self.data.join("journal")
    }

    /// The search index and the cache of extracted text.
    pub fn search_dir(&self) -> PathBuf {
        self.data.join("search")
    }

    /// The SQLite catalog (when no `catalog.url` names a PostgreSQL database).
    pub fn catalog_path(&self) -> PathBuf {
        self.data.join("catalog.sqlite")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_thresholds_from_the_file_or_the_environment() {
        let d = Config::default().health;
        assert_eq!((d.min_free_bytes, d.min_free_percent), (1 << 30, 2));
        let mut c: Config =
            toml::from_str("[health]\nmin_free_bytes = 1000\nmin_free_percent = 5").unwrap();
        assert_eq!(
            (c.health.min_free_bytes, c.health.min_free_percent),
            (1000, 5)
        );
        c.apply_env(|k| (k == "ARCA_HEALTH_MIN_FREE_BYTES").then(|| "7".into()))
            .unwrap();
        assert_eq!(c.health.min_free_bytes, 7);
        assert!(c
            .clone()
            .apply_env(|k| (k == "ARCA_HEALTH_MIN_FREE_PERCENT").then(|| "x".into()))
            .is_err());
        c.health.min_free_percent = 101;
        assert!(c.validate().is_err());
    }

    #[test]
    fn search_forwarding_from_the_file_or_the_environment() {
        assert!(Config::default().search.forward_to.is_empty());
        let mut c: Config = toml::from_str(
            "[search]\nenabled = false\nforward_to = [\"http://index-1:8080/rest/\"]",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.search.forward_to, ["http://index-1:8080/rest"]);
        c.apply_env(|k| {
            (k == "ARCA_SEARCH_FORWARD_TO")
                .then(|| " http://a:1/rest , https://b.example/repo/rest ,".into())
        })
        .unwrap();
        c.validate().unwrap();
        assert_eq!(
            c.search.forward_to,
            ["http://a:1/rest", "https://b.example/repo/rest"]
        );
        // A node with its own index does not forward.
        let mut on = c.clone();
        on.search.enabled = true;
        let e = on.validate().unwrap_err().to_string();
        assert!(
            e.contains("search.forward_to") && e.contains("search.enabled"),
            "{e}"
        );
        for (bad, why) in [
            ("index-1:8080/rest", "http://"),
            ("ftp://index-1/rest", "http://"),
            ("http:///rest", "no host"),
            ("http://index-1:8080", "base path"),
            ("http://u:secret@index-1/rest", "credentials"),
            ("http://index-1/rest?x=1", "query"),
        ] {
            let mut c = c.clone();
            c.search.forward_to = vec![bad.into()];
            let e = c.validate().unwrap_err().to_string();
            assert!(
                e.contains("search.forward_to") && e.contains(why),
                "{bad}: {e}"
            );
            assert!(!e.contains("secret"), "{e}");
        }
    }

    #[test]
    fn an_s3_root_from_the_file_or_the_environment() {
        assert_eq!(Config::default().storage.s3, None);
        let c: Config = toml::from_str(
            "[storage.s3]\nendpoint = \"http://127.0.0.1:9000\"\nbucket = \"repo\"\nprefix = \"ocfl\"",
        )
        .unwrap();
        let s3 = c.storage.s3.clone().unwrap();
        assert_eq!(
            (
                s3.endpoint.as_deref(),
                s3.bucket.as_str(),
                s3.prefix.as_str(),
                s3.region.as_str()
            ),
            (Some("http://127.0.0.1:9000"), "repo", "ocfl", "us-east-1")
        );
        let mut c = Config::default();
        c.apply_env(|k| match k {
            "ARCA_S3_BUCKET" => Some("b".into()),
            "ARCA_S3_REGION" => Some("eu-west-1".into()),
            _ => None,
        })
        .unwrap();
        c.validate().unwrap();
        let s3 = c.storage.s3.unwrap();
        assert_eq!(
            (s3.bucket.as_str(), s3.region.as_str(), s3.endpoint),
            ("b", "eu-west-1", None)
        );
        assert!(s3.require_versioning, "a versioned bucket by default");
        let mut c = Config::default();
        c.apply_env(|k| match k {
            "ARCA_S3_BUCKET" => Some("b".into()),
            "ARCA_S3_REQUIRE_VERSIONING" => Some("false".into()),
            _ => None,
        })
        .unwrap();
        assert!(!c.storage.s3.unwrap().require_versioning);
        let mut c = Config::default();
        let wrong = c
            .apply_env(|k| match k {
                "ARCA_S3_BUCKET" => Some("b".into()),
                "ARCA_S3_REQUIRE_VERSIONING" => Some("maybe".into()),
                _ => None,
            })
            .unwrap_err();
        assert!(
            wrong.to_string().contains("ARCA_S3_REQUIRE_VERSIONING"),
            "{wrong}"
        );
        let c: Config =
            toml::from_str("[storage.s3]\nbucket = \"b\"\nrequire_versioning = false").unwrap();
        assert!(!c.storage.s3.unwrap().require_versioning);
        let mut bad: Config =
            toml::from_str("[storage.s3]\nendpoint = \"127.0.0.1:9000\"\nbucket = \"b\"").unwrap();
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("storage.s3.endpoint"));
        assert!(
            toml::from_str::<Config>("[storage.s3]\nbucket = \"b\"\nsecret = \"x\"").is_err(),
            "no secrets in the file"
        );
    }

    #[test]
    fn fixity_and_replicas_from_the_file_or_the_environment() {
        let mut c: Config = toml::from_str(
            "[fixity]\nschedule = \"12h\"\nmax_mb_per_s = 20\nthreads = 2\n\n[[replica]]\npath = \"/srv/copy\"\n\n[[replica]]\nname = \"offsite\"\nendpoint = \"http://127.0.0.1:9000\"\nbucket = \"b\"\nprefix = \"root\"\n",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(
            c.fixity.interval().unwrap(),
            Some(std::time::Duration::from_secs(12 * 3600))
        );
        assert_eq!(c.fixity.max_bytes_per_second(), Some(20_000_000));
        assert_eq!(c.replicas.len(), 2);
        assert_eq!(c.replicas[0].label(), "/srv/copy");
        assert_eq!(c.replicas[1].label(), "offsite");
        c.apply_env(|k| match k {
            "ARCA_FIXITY_SCHEDULE" => Some("off".into()),
            "ARCA_FIXITY_MAX_MB_PER_S" => Some("0".into()),
            "ARCA_FIXITY_THREADS" => Some("3".into()),
            _ => None,
        })
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.fixity.interval().unwrap(), None);
        assert_eq!(c.fixity.max_bytes_per_second(), None);
        assert_eq!(c.fixity.threads, 3);
        assert_eq!(
            Config::default().fixity.interval().unwrap(),
            Some(std::time::Duration::from_secs(30 * 86400))
        );
        for bad in ["30x", "-1d", "soon"] {
            let mut c = Config::default();
            c.fixity.schedule = bad.into();
            assert!(c.validate().is_err(), "{bad}");
        }
        let mut c: Config = toml::from_str("[[replica]]\npath = \"/a\"\nbucket = \"b\"\n").unwrap();
        assert!(c.validate().is_err(), "a path and a bucket");
    }

    #[test]
    fn metrics_keys() {
        let c = Config::default();
        assert!(c.metrics.enabled);
        assert_eq!(c.metrics_listen, None);
        let mut c: Config =
            toml::from_str("metrics_listen = \"127.0.0.1:9187\"\n[metrics]\nenabled = false\n")
                .unwrap();
        c.validate().unwrap();
        assert_eq!(c.metrics_listen.as_deref(), Some("127.0.0.1:9187"));
        assert!(!c.metrics.enabled);
        c.apply_env(|k| match k {
            "ARCA_METRICS_ENABLED" => Some("true".into()),
            "ARCA_METRICS_LISTEN" => Some("0.0.0.0:9100".into()),
            _ => None,
        })
        .unwrap();
        assert!(c.metrics.enabled);
        assert_eq!(c.metrics_listen.as_deref(), Some("0.0.0.0:9100"));
        let err = Config::default()
            .apply_env(|k| (k == "ARCA_METRICS_ENABLED").then(|| "maybe".into()))
            .unwrap_err();
        assert!(err.to_string().contains("ARCA_METRICS_ENABLED"), "{err}");
        let mut bad = Config {
            metrics_listen: Some("localhost".into()),
            ..Config::default()
        };
        let err = bad.validate().unwrap_err();
        assert!(err.to_string().contains("metrics_listen"), "{err}");
        assert!(toml::from_str::<Config>("[metrics]\nport = 1\n").is_err());
    }

    #[test]
    fn file_then_env() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("arca.toml");
        std::fs::write(
            &f,
            "listen = \"0.0.0.0:9000\"\ndata = \"/srv/arca\"\nbase_path = \"/fcrepo/rest/\"\n[auth]\nhtpasswd = \"/srv/htpasswd\"\n",
        )
        .unwrap();
        let mut c: Config = toml::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        c.apply_env(|k| match k {
            "ARCA_DATA" => Some("/other".to_string()),
            "ARCA_LIMIT_RDF_BODY_BYTES" => Some("1024".to_string()),
            "ARCA_EXTERNAL_CONTENT_ALLOWED" => Some("/etc/arca/allowed.txt".to_string()),
            "ARCA_EXTERNAL_CONTENT_CA_FILE" => Some("/etc/arca/ca.pem".to_string()),
            _ => None,
        })
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.limits.rdf_body_bytes, Some(1024));
        assert_eq!(c.limits.sparql_body_bytes, None);
        assert_eq!(c.listen, "0.0.0.0:9000");
        assert_eq!(c.data, PathBuf::from("/other"));
        assert_eq!(c.base_path, "/fcrepo/rest");
        assert_eq!(
            c.external_content_allowed,
            Some(PathBuf::from("/etc/arca/allowed.txt"))
        );
        assert_eq!(
            c.external_content_ca_file,
            Some(PathBuf::from("/etc/arca/ca.pem"))
        );
        let t: Config = toml::from_str("external_content_allowed = \"/srv/allowed.txt\"").unwrap();
        assert_eq!(
            t.external_content_allowed,
            Some(PathBuf::from("/srv/allowed.txt"))
        );
    }

    #[test]
    fn catalog_url_from_file_and_env_checked_and_never_shown_with_its_password() {
        assert_eq!(Config::default().catalog.url, None);
        let mut c: Config =
            toml::from_str("[catalog]\nurl = \"postgres://arca@db:5432/arca\"").unwrap();
        c.validate().unwrap();
        assert_eq!(
            c.catalog.url.as_deref(),
            Some("postgres://arca@db:5432/arca")
        );
        c.apply_env(|k| {
            (k == "ARCA_CATALOG_URL").then(|| "postgresql://arca:s3cret@other/arca".to_string())
        })
        .unwrap();
        c.validate().unwrap();
        assert_eq!(
            c.catalog.url.as_deref(),
            Some("postgresql://arca:s3cret@other/arca")
        );
        let shown = format!("{c:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(
            shown.contains("postgresql://arca:***@other/arca"),
            "{shown}"
        );
        assert_eq!(c.catalog.max_connections, 16);
        c.apply_env(|k| (k == "ARCA_CATALOG_MAX_CONNECTIONS").then(|| "6".to_string()))
            .unwrap();
        assert_eq!(c.catalog.max_connections, 6);
        assert!(c
            .apply_env(|k| (k == "ARCA_CATALOG_MAX_CONNECTIONS").then(|| "many".to_string()))
            .is_err());
        let mut zero: Config = toml::from_str("[catalog]\nmax_connections = 0").unwrap();
        assert!(zero.validate().is_err());
        c.catalog.url = Some("mysql://root:pw@db/arca".into());
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("catalog.url") && !e.contains("pw@"), "{e}");
        assert_eq!(redact_password("postgres://u@h/d"), "postgres://u@h/d");
    }

    #[test]
    fn catalog_tls_from_file_and_env_and_only_with_a_url() {
        let mut c: Config = toml::from_str(
            "[catalog]\nurl = \"postgres://arca@db/arca\"\nsslmode = \"verify-full\"\n\
             ssl_root_cert = \"/etc/arca/db-ca.pem\"",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.catalog.sslmode, Some(CatalogSslMode::VerifyFull));
        assert_eq!(
            c.catalog.ssl_root_cert.as_deref(),
            Some(Path::new("/etc/arca/db-ca.pem"))
        );
        c.apply_env(|k| match k {
            "ARCA_CATALOG_SSLMODE" => Some("verify-ca".into()),
            "ARCA_CATALOG_SSL_ROOT_CERT" => Some("/run/ca.pem".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(c.catalog.sslmode, Some(CatalogSslMode::VerifyCa));
        assert_eq!(
            c.catalog.ssl_root_cert.as_deref(),
            Some(Path::new("/run/ca.pem"))
        );
        let e = c
            .apply_env(|k| (k == "ARCA_CATALOG_SSLMODE").then(|| "allow".into()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ARCA_CATALOG_SSLMODE") && e.contains("verify-full"),
            "{e}"
        );
        assert!(toml::from_str::<Config>("[catalog]\nsslmode = \"sometimes\"").is_err());
        let mut no_url: Config = toml::from_str("[catalog]\nsslmode = \"require\"").unwrap();
        let e = no_url.validate().unwrap_err().to_string();
        assert!(e.contains("catalog.url"), "{e}");
    }

    #[test]
    fn fedora3_facade_from_file_and_env() {
        assert_eq!(Config::default().fedora3.facade, Facade::Auto);
        let mut c: Config = toml::from_str("[fedora3]\nfacade = \"off\"").unwrap();
        assert_eq!(c.fedora3.facade, Facade::Off);
        c.apply_env(|k| (k == "ARCA_FEDORA3_FACADE").then(|| "on".to_string()))
            .unwrap();
        assert_eq!(c.fedora3.facade, Facade::On);
        c.validate().unwrap();
        c.base_path = "/fedora".into();
        assert!(c.validate().is_err());
        assert!(toml::from_str::<Config>("[fedora3]\nfacade = \"yes\"").is_err());
        assert!(Config::default()
            .apply_env(|k| (k == "ARCA_FEDORA3_FACADE").then(|| "true".to_string()))
            .is_err());
    }

    #[test]
    fn digest_algorithm_from_file_and_env() {
        assert_eq!(Config::default().digest_algorithm, DigestAlgorithm::Sha512);
        let mut c: Config = toml::from_str("digest_algorithm = \"sha256\"").unwrap();
        assert_eq!(c.digest_algorithm, DigestAlgorithm::Sha256);
        c.apply_env(|k| (k == "ARCA_DIGEST_ALGORITHM").then(|| "sha512".to_string()))
            .unwrap();
        assert_eq!(c.digest_algorithm, DigestAlgorithm::Sha512);
        assert!(toml::from_str::<Config>("digest_algorithm = \"md5\"").is_err());
        assert!(toml::from_str::<Config>("digest_algorithm = \"SHA-256\"").is_err());
        assert!(Config::default()
            .apply_env(|k| (k == "ARCA_DIGEST_ALGORITHM").then(|| "sha-256".to_string()))
            .is_err());
    }

    #[test]
    fn auth_defaults_and_address_rules() {
        let mut c = Config::default();
        c.validate().unwrap();
        assert!(c.auth.enabled && !c.auth.has_users());
        assert_eq!(c.auth.admins, vec!["fedoraAdmin".to_string()]);
        // Another address needs users; checks off only on loopback.
        let mut c = Config {
            listen: "0.0.0.0:8080".into(),
            ..Config::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("needs configured users"));
        c.auth.htpasswd = Some("/etc/arca/htpasswd".into());
        c.validate().unwrap();
        c.auth.enabled = false;
        assert!(c.validate().unwrap_err().to_string().contains("loopback"));
        let mut c: Config = toml::from_str(
            "[auth]\nhtpasswd = \"/srv/users\"\nadmins = [\"root\"]\nuser_base_uri = \"http://example.org/\"",
        )
        .unwrap();
        c.apply_env(|k| match k {
            "ARCA_AUTH_ADMINS" => Some("alice, bob".into()),
            "ARCA_AUTH_JWT_KEY" => Some("s3cret".into()),
            _ => None,
        })
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.auth.admins, vec!["alice".to_string(), "bob".to_string()]);
        assert_eq!(c.auth.htpasswd, Some(PathBuf::from("/srv/users")));
        assert_eq!(c.auth.jwt_key.as_deref(), Some("s3cret"));
        assert_eq!(c.auth.user_base_uri.as_deref(), Some("http://example.org/"));
        assert!(toml::from_str::<Config>("[auth]\nnope = 1").is_err());
        assert!(Config::default()
            .apply_env(|k| (k == "ARCA_AUTH_ENABLED").then(|| "maybe".to_string()))
            .is_err());
    }

    #[test]
    fn events_table_and_env() {
        let c = Config::default();
        assert_eq!(c.events.stomp_url, None);
        assert_eq!(c.events.destination, "/topic/fedora");
        let mut c: Config = toml::from_str(
            "[events]\nstomp_url = \"stomp://127.0.0.1:61613\"\nlogin = \"arca\"\nkeep_days = 30",
        )
        .unwrap();
        c.apply_env(|k| match k {
            "ARCA_EVENTS_PASSCODE" => Some("pw".into()),
            "ARCA_EVENTS_DESTINATION" => Some("/queue/arca".into()),
            _ => None,
        })
        .unwrap();
        c.validate().unwrap();
        assert_eq!(
            c.events.stomp_url.as_deref(),
            Some("stomp://127.0.0.1:61613")
        );
        assert_eq!(c.events.login.as_deref(), Some("arca"));
        assert_eq!(c.events.passcode.as_deref(), Some("pw"));
        assert_eq!(c.events.destination, "/queue/arca");
        assert_eq!(c.events.keep_days, 30);
        assert!(toml::from_str::<Config>("[events]\nnope = 1").is_err());
        assert!(Config::default()
            .apply_env(|k| (k == "ARCA_EVENTS_KEEP_DAYS").then(|| "-1".to_string()))
            .is_err());
        let mut c: Config = toml::from_str("[events]\ndestination = \" \"").unwrap();
        assert!(c.validate().is_err());
    }

    #[test]
    fn rejects_bad_values() {
        assert!(toml::from_str::<Config>("nope = 1").is_err());
        assert!(toml::from_str::<Config>("[limits]\nnope = 1").is_err());
        let mut c: Config = toml::from_str("[limits]\nheader_bytes = 100").unwrap();
        assert!(c.validate().is_err());
        let mut c = Config::default();
        assert!(c
            .apply_env(|k| (k == "ARCA_LIMIT_PARSE_SECONDS").then(|| "ten".to_string()))
            .is_err());
        let mut c = Config {
            listen: "localhost".into(),
            ..Config::default()
        };
        assert!(c.validate().is_err());
        let mut c = Config {
            base_path: "rest".into(),
            ..Config::default()
        };
        assert!(c.validate().is_err());
    }
}
