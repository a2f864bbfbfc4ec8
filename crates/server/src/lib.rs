//! The composition root: the only crate (with the CLI) that names concrete backends.
//! [`open_repository`] builds the kernel from a [`Config`]; [`run`] serves it until the
//! shutdown future resolves.

#[cfg(test)]
mod architecture;
mod serve;

use std::future::Future;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use arca_catalog::{Catalog, PostgresCatalog, SqliteCatalog};
use arca_config::Config;
use arca_http::{AuthConfig, HttpConfig, RequestLimits};
use arca_ocfl::OcflRoot;
use arca_repository::Repository;
pub use serve::{serve, ConnectionLimits};
use tokio::net::TcpListener;

/// Message recorded in every OCFL version arca writes.
pub fn version_message() -> String {
    format!("Authored by arca {}", env!("CARGO_PKG_VERSION"))
}

/// The catalog [`open_repository`] opened: SQLite in the data directory, or the PostgreSQL
/// database `catalog.url` names.
#[derive(Clone)]
pub enum OpenCatalog {
    /// `catalog.sqlite` in the data directory.
    Sqlite(Arc<SqliteCatalog>),
    /// A PostgreSQL database.
    Postgres(Arc<PostgresCatalog>),
}

impl OpenCatalog {
    /// Opens the catalog `config` names. A PostgreSQL catalog is connected to at once, so
    /// an unreachable server, a refused user or password, or a missing database is an
    /// error here, at start, not at the first write.
    pub async fn open(config: &Config) -> anyhow::Result<Self> {
        // With the root in S3 no checkpoint syncs the catalog with the root: every commit
        // is synced.
        let open_sqlite = if config.storage.s3.is_some() {
            SqliteCatalog::open_durable
        } else {
            SqliteCatalog::open
        };
        Ok(match &config.catalog.url {
            None => Self::Sqlite(Arc::new(open_sqlite(&config.catalog_path()).with_context(
                || {
                    format!(
                        "cannot open the catalog {}",
                        config.catalog_path().display()
                    )
                },
            )?)),
            Some(url) => Self::Postgres(Arc::new(
                PostgresCatalog::connect_tls(url, &pg_tls(config), config.catalog.max_connections)
                    .await
                    .map_err(|e| {
                        let url = arca_config::redact_password(url);
                        let hint = if matches!(e, arca_catalog::Error::InvalidUrl(_)) {
                            format!(
                                "cannot open the catalog in PostgreSQL at {url}: catalog.url \
                                 (ARCA_CATALOG_URL) cannot be used"
                            )
                        } else if matches!(e, arca_catalog::Error::Standby(_)) {
                            let given = if url.contains(',') {
                                "no host of its list takes writes"
                            } else {
                                "a standby was given as its only host"
                            };
                            format!(
                                "cannot open the catalog in PostgreSQL at {url} (catalog.url, \
                                 ARCA_CATALOG_URL): {given}"
                            )
                        } else if matches!(e, arca_catalog::Error::Tls(_)) {
                            format!(
                                "cannot open the catalog in PostgreSQL at {url} over TLS: \
                                 check catalog.sslmode and catalog.ssl_root_cert \
                                 (ARCA_CATALOG_SSLMODE, ARCA_CATALOG_SSL_ROOT_CERT), or \
                                 sslmode and sslrootcert in catalog.url"
                            )
                        } else {
                            format!(
                                "cannot open the catalog in PostgreSQL at {url} (catalog.url, \
                                 ARCA_CATALOG_URL): check that the server is reachable, the \
                                 user and password are right and the database exists"
                            )
                        };
                        anyhow::Error::new(e).context(hint)
                    })?,
            )),
        })
    }

    /// The catalog as the kernel sees it.
    pub fn as_catalog(&self) -> Arc<dyn Catalog> {
        match self {
            Self::Sqlite(c) => c.clone(),
            Self::Postgres(c) => c.clone(),
        }
    }

    /// On a clean shutdown: copies SQLite's write-ahead log into the database. PostgreSQL
    /// checkpoints by itself; nothing to do.
    pub fn checkpoint(&self) -> arca_catalog::Result<()> {
        match self {
            Self::Sqlite(c) => c.checkpoint(),
            Self::Postgres(_) => Ok(()),
        }
    }
}

/// The TLS settings of `config`'s PostgreSQL catalog given beside its URL.
fn pg_tls(config: &Config) -> arca_catalog::PgTls {
    use arca_catalog::SslMode;
    use arca_config::CatalogSslMode;
    arca_catalog::PgTls {
        mode: config.catalog.sslmode.map(|mode| match mode {
            CatalogSslMode::Disable => SslMode::Disable,
            CatalogSslMode::Prefer => SslMode::Prefer,
            CatalogSslMode::Require => SslMode::Require,
            CatalogSslMode::VerifyCa => SslMode::VerifyCa,
            CatalogSslMode::VerifyFull => SslMode::VerifyFull,
        }),
        root_cert: config.catalog.ssl_root_cert.clone(),
    }
}

/// Opens (or creates) the storage root, staging area and catalog of `config`, recovers
/// from a crash if needed, rebuilds an incomplete catalog when `rebuild_if_needed`, and
/// returns the kernel.
pub async fn open_repository(
    config: &Config,
    rebuild_if_needed: bool,
) -> anyhow::Result<(Arc<Repository>, OpenCatalog)> {
    std::fs::create_dir_all(&config.data)
        .with_context(|| format!("cannot create data directory {}", config.data.display()))?;
    let ocfl = open_root(config)?;
    let catalog = OpenCatalog::open(config).await?;
    let repo = Repository::open(
        ocfl,
        catalog.as_catalog(),
        &config.journal_dir(),
        version_message(),
        rebuild_if_needed,
    )
    .await
    .context("cannot open the repository")?;
    repo.set_auto_versioning(config.auto_versioning);
    repo.set_transaction_timeout(std::time::Duration::from_secs(config.transaction_timeout));
    let repo = Arc::new(repo);
    repo.spawn_recovery();
    Ok((repo, catalog))
}

/// The replicas `config` names (`[[replica]]`), opened and checked against the primary
/// root held by `primary`: a directory (synced writes) or a bucket prefix.
pub fn open_replicas(
    config: &Config,
    primary: &dyn arca_ocfl::ObjectStorage,
) -> anyhow::Result<Vec<Arc<arca_fixity::Replica>>> {
    let mut replicas = Vec::new();
    for settings in &config.replicas {
        let name = settings.label();
        let store: Arc<dyn arca_ocfl::ObjectStorage> = match (&settings.path, &settings.bucket) {
            (Some(path), _) => {
                std::fs::create_dir_all(path).with_context(|| {
                    format!(
                        "cannot create the directory of replica {name}: {}",
                        path.display()
                    )
                })?;
                Arc::new(
                    arca_storage::FsStorage::open(path)
                        .with_context(|| format!("cannot open replica {name}"))?,
                )
            }
            (None, Some(bucket)) => {
                let s3 = arca_storage::S3Settings {
                    endpoint: settings.endpoint.clone(),
                    bucket: bucket.clone(),
                    prefix: settings.prefix.clone(),
                    region: settings.region.clone(),
                    allow_http: settings
                        .endpoint
                        .as_deref()
                        .is_some_and(|e| e.starts_with("http://")),
                };
                // A replica out of reach keeps no one from writing: it is opened unchecked,
                // and its copier checks it once it answers.
                let store = match arca_storage::S3Storage::open(s3.clone()) {
                    Err(arca_storage::StoreError::Unavailable { .. }) => {
                        arca_storage::S3Storage::open_unchecked(s3)
                    }
                    opened => opened,
                };
                Arc::new(store.with_context(|| format!("cannot open replica {name} in S3"))?)
            }
            (None, None) => anyhow::bail!("replica {name} has neither path nor bucket"),
        };
        replicas.push(Arc::new(arca_fixity::Replica::open(&name, store, primary)?));
    }
    Ok(replicas)
}

/// The background fixity audit `config` schedules (`[fixity]`), started; `None` when
/// its schedule is `off`.
#[allow(clippy::type_complexity)]
pub fn background_audit(
    config: &Config,
    repo: &Arc<Repository>,
    replicas: &[Arc<arca_fixity::Replica>],
    stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<
    Option<(
        Arc<arca_fixity::schedule::BackgroundAudit>,
        tokio::task::JoinHandle<()>,
    )>,
> {
    let Some(interval) = config.fixity.interval()? else {
        return Ok(None);
    };
    // Repairs write through a store that syncs every write (the repository's local root
    // is deferred: its writers sync what they publish themselves).
    let store: Arc<dyn arca_ocfl::ObjectStorage> = match &config.storage.s3 {
        None => Arc::new(
            arca_storage::FsStorage::open(&config.ocfl_root())
                .context("cannot open the OCFL root for the fixity audit")?,
        ),
        Some(_) => repo.ocfl().store().clone(),
    };
    let settings = arca_fixity::schedule::ScheduleSettings {
        interval: Some(interval),
        audit: arca_fixity::AuditSettings {
            threads: config.fixity.threads,
            max_bytes_per_second: config.fixity.max_bytes_per_second(),
            objects: Vec::new(),
            repair: true,
        },
        dir: config.data.join("fixity"),
    };
    let hook = arca_fixity::announce::announcer(repo.clone(), tokio::runtime::Handle::current());
    let (audit, task) = arca_fixity::schedule::BackgroundAudit::start(
        repo.clone(),
        store,
        replicas.to_vec(),
        settings,
        Some(hook),
        stop,
    )
    .context("cannot start the fixity audit")?;
    Ok(Some((audit, task)))
}

/// The directory of the fixity audits' reports (`<data>/fixity/reports`).
pub fn fixity_reports_dir(config: &Config) -> std::path::PathBuf {
    config.data.join("fixity").join("reports")
}

/// Marks in `repo` the damage the latest audit report left unrepaired, so that reads of
/// those binaries are refused from the first request on. A report that cannot be read is
/// logged and skipped: the next audit finds the damage again.
pub fn load_known_damage(config: &Config, repo: &Repository) {
    let dir = fixity_reports_dir(config);
    if !dir.is_dir() {
        return;
    }
    // The newest report of the primary root (`arca replica verify` reports on replicas).
    let latest = match arca_fixity::Reports::open(&dir) {
        Ok(reports) => reports.recent(100).map(|r| {
            r.into_iter()
                .find(|r| r.root == arca_fixity::announce::PRIMARY)
        }),
        Err(e) => Err(e),
    };
    match latest {
        Ok(Some(report)) => {
            let marked = arca_fixity::announce::load_damage(repo, &report);
            if marked > 0 {
                tracing::warn!(report = %report.id, files = marked, "files the last fixity audit found damaged are not served until repaired");
            }
        }
        Ok(None) => {}
        Err(e) => tracing::error!(error = %e, "cannot read the latest fixity report"),
    }
}

/// Where `config` puts the OCFL storage root, for messages: its directory, or its bucket,
/// prefix and endpoint.
pub fn root_description(config: &Config) -> String {
    match &config.storage.s3 {
        None => config.ocfl_root().display().to_string(),
        Some(s3) => format!(
            "bucket {:?}{} at {}",
            s3.bucket,
            if s3.prefix.is_empty() {
                String::new()
            } else {
                format!(", prefix {:?}", s3.prefix)
            },
            s3.endpoint.as_deref().unwrap_or("Amazon S3")
        ),
    }
}

/// The catalog `config` names, for messages: SQLite's file, or PostgreSQL's address with
/// the password left out.
pub fn catalog_description(config: &Config) -> String {
    match &config.catalog.url {
        None => format!("SQLite {}", config.catalog_path().display()),
        Some(url) => format!("PostgreSQL {}", arca_config::redact_password(url)),
    }
}

/// Opens (or creates) the OCFL storage root `config` names: `ocfl-root/` in the data
/// directory, or the `[storage.s3]` bucket (credentials from `AWS_ACCESS_KEY_ID` and
/// `AWS_SECRET_ACCESS_KEY`), which is reached at once, so wrong credentials, a missing
/// bucket or an unreachable endpoint are an error here, at start.
pub fn open_root(config: &Config) -> anyhow::Result<OcflRoot> {
    let root = match &config.storage.s3 {
        None => arca_storage::FsStorage::open_deferred(&config.ocfl_root())
            .map_err(arca_ocfl::Error::from)
            .and_then(|store| OcflRoot::open(Arc::new(store), &config.staging()))
            .with_context(|| {
                format!("cannot open the OCFL root {}", config.ocfl_root().display())
            })?,
        Some(s3) => {
            let settings = arca_storage::S3Settings {
                endpoint: s3.endpoint.clone(),
                bucket: s3.bucket.clone(),
                prefix: s3.prefix.clone(),
                region: s3.region.clone(),
                allow_http: s3
                    .endpoint
                    .as_deref()
                    .is_some_and(|e| e.starts_with("http://")),
            };
            let place = root_description(config);
            let store = arca_storage::S3Storage::open(settings)
                .with_context(|| format!("cannot open the OCFL root in S3 ({place})"))?;
            if s3.require_versioning {
                check_versioning(&store, &s3.bucket)?;
            }
            OcflRoot::open(Arc::new(store), &config.staging())
                .with_context(|| format!("cannot open the OCFL root in S3 ({place})"))?
        }
    };
    Ok(root.with_digest_algorithm(digest_algorithm(config))?)
}

/// Refuses a bucket that keeps no versions of replaced objects: arca replaces each object's
/// `inventory.json` in place, and only a versioned bucket keeps the replaced ones.
fn check_versioning(store: &arca_storage::S3Storage, bucket: &str) -> anyhow::Result<()> {
    use arca_storage::BucketVersioning;
    const OPT_OUT: &str = "or set storage.s3.require_versioning = false \
                           (ARCA_S3_REQUIRE_VERSIONING=false) to use the bucket as it is";
    let state = store.versioning().with_context(|| {
        format!(
            "cannot read the versioning of S3 bucket {bucket:?} (storage.s3.require_versioning \
             needs s3:GetBucketVersioning); {OPT_OUT}"
        )
    })?;
    let why = match state {
        BucketVersioning::Enabled => return Ok(()),
        BucketVersioning::Suspended => "its versioning is suspended",
        BucketVersioning::Never => "it has no versioning",
    };
    anyhow::bail!(
        "S3 bucket {bucket:?} does not keep the versions of replaced objects ({why}): arca \
         replaces each object's inventory.json in place, and only a versioned bucket can give \
         back an earlier one. Enable versioning (`aws s3api put-bucket-versioning --bucket \
         {bucket} --versioning-configuration Status=Enabled`, `mc version enable ALIAS/{bucket}`), \
         {OPT_OUT}"
    )
}

/// The digest algorithm of the OCFL objects `config` has arca create.
pub fn digest_algorithm(config: &Config) -> arca_model::DigestAlgorithm {
    match config.digest_algorithm {
        arca_config::DigestAlgorithm::Sha512 => arca_model::DigestAlgorithm::Sha512,
        arca_config::DigestAlgorithm::Sha256 => arca_model::DigestAlgorithm::Sha256,
    }
}

/// The request bounds of `config`, the defaults where it sets none.
pub fn request_limits(config: &Config) -> RequestLimits {
    let l = &config.limits;
    let mut r = RequestLimits::default();
    let set = |target: &mut usize, v: Option<u64>| {
        if let Some(v) = v {
            *target = usize::try_from(v).unwrap_or(usize::MAX);
        }
    };
    set(&mut r.max_rdf_body, l.rdf_body_bytes);
    set(&mut r.max_sparql_body, l.sparql_body_bytes);
    set(&mut r.buffered_bodies, l.buffered_bodies_bytes);
    set(&mut r.max_url, l.url_bytes);
    set(&mut r.max_header_bytes, l.header_bytes);
    set(&mut r.rdf.max_nesting, l.rdf_nesting);
    set(&mut r.rdf.max_triples, l.rdf_triples);
    set(&mut r.rdf.max_literal_bytes, l.rdf_literal_bytes);
    set(&mut r.rdf.max_iri_bytes, l.rdf_iri_bytes);
    set(&mut r.rdf.max_update_operators, l.sparql_operators);
    set(
        &mut r.rdf.max_entity_expansion,
        l.rdf_entity_expansion_bytes,
    );
    if let Some(s) = l.parse_seconds {
        r.rdf.max_parse_time = Duration::from_secs(s);
    }
    if let Some(s) = l.body_idle_timeout_seconds {
        r.body_idle_timeout = Duration::from_secs(s);
    }
    // One body at its largest must fit in the budget, or it could never be read.
    r.buffered_bodies = r.buffered_bodies.max(r.max_rdf_body).max(r.max_sparql_body);
    r
}

/// The connection bounds of `config`, the defaults where it sets none; the head buffer is
/// sized from the HTTP layer's header limit in `requests`.
pub fn connection_limits(config: &Config, requests: &RequestLimits) -> ConnectionLimits {
    let l = &config.limits;
    let mut c = ConnectionLimits::default();
    if let Some(n) = l.max_connections {
        c.max_connections = usize::try_from(n).unwrap_or(usize::MAX);
    }
    // The request line and headers together, with room for the messages the HTTP layer
    // gives to heads over its own limit.
    c.head_buffer_bytes = requests.max_header_bytes.saturating_mul(4).max(8192);
    if let Some(s) = l.header_timeout_seconds {
        c.header_timeout = Duration::from_secs(s);
    }
    if let Some(s) = l.shutdown_grace_seconds {
        c.shutdown_grace = Duration::from_secs(s);
    }
    c
}

/// The quick-start admin (user and password) on a loopback address with no users
/// configured: Fedora's, so that its clients and tools work unchanged.
const QUICK_START_ADMIN: &str = "fedoraAdmin";

/// The access settings of the HTTP layer: credentials checked by an authenticator built
/// from `config.auth` (refusing to start when a configured file or key cannot be read),
/// the quick-start admin when no users are configured (the config allows that on
/// loopback addresses only), and the root ACL file.
fn auth_config(config: &Config) -> anyhow::Result<AuthConfig> {
    let a = &config.auth;
    if !a.enabled {
        tracing::warn!("access checks are off (auth.enabled = false): every request may read and change everything");
        return Ok(AuthConfig::default());
    }
    let jwt_key = match &a.jwt_key_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read auth.jwt_key_file {}", path.display()))?
                .trim_end()
                .to_string(),
        ),
        None => a.jwt_key.clone(),
    };
    let quick_start = !a.has_users();
    let mut admins = a.admins.clone();
    if quick_start {
        tracing::warn!(
            "no users are configured: {QUICK_START_ADMIN}/{QUICK_START_ADMIN} is the only user, an admin (loopback addresses only); configure auth.htpasswd or a JWT key for real use"
        );
        if !admins.iter().any(|u| u == QUICK_START_ADMIN) {
            admins.push(QUICK_START_ADMIN.to_string());
        }
    }
    let authenticator = arca_auth::authn::Authenticator::new(arca_auth::authn::AuthnSettings {
        htpasswd: a.htpasswd.clone(),
        jwt_key,
        jwt_public_key: a.jwt_public_key.clone(),
        jwt_roles_claim: a.jwt_roles_claim.clone(),
        builtin_user: quick_start
            .then(|| (QUICK_START_ADMIN.to_string(), QUICK_START_ADMIN.to_string())),
    })
    .context("cannot set up authentication")?;
    let root_acl = match &a.root_acl {
        Some(path) => {
            let text = std::fs::read(path)
                .with_context(|| format!("cannot read auth.root_acl {}", path.display()))?;
            let base = config
                .base_url
                .clone()
                .unwrap_or_else(|| format!("http://{}{}", config.listen, config.base_path));
            Some(AuthConfig::root_acl_from_turtle(&text, &base).map_err(|e| {
                anyhow::anyhow!("auth.root_acl {} is not valid Turtle: {e}", path.display())
            })?)
        }
        None => None,
    };
    Ok(AuthConfig {
        enabled: true,
        authenticator: Some(Arc::new(authenticator)),
        admins,
        admin_role: a.admin_role.clone(),
        user_base_uri: a.user_base_uri.clone(),
        group_base_uri: a.group_base_uri.clone(),
        root_acl,
    })
}

/// Starts what follows the change log: delivery to the configured broker and the log's
/// retention window. Events name resources under `base_url`, or the listen address.
fn start_events(
    config: &Config,
    repo: &Repository,
    addr: std::net::SocketAddr,
    stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<Vec<arca_events::delivery::Delivery>> {
    let catalog = repo.catalog().clone();
    if config.events.keep_days > 0 {
        arca_events::spawn_retention(catalog.clone(), config.events.keep_days, stop.clone());
    }
    let Some(url) = &config.events.stomp_url else {
        return Ok(Vec::new());
    };
    let mut target = arca_events::stomp::StompTarget::parse(url)
        .with_context(|| format!("events.stomp_url {url:?}"))?;
    target.login = config.events.login.clone();
    target.passcode = config.events.passcode.clone();
    let names = arca_events::event::EventNames {
        base_url: config
            .base_url
            .clone()
            .unwrap_or_else(|| format!("http://{addr}{}", config.base_path)),
        user_base_uri: arca_events::event::DEFAULT_USER_BASE_URI.to_string(),
    };
    let dest = arca_events::delivery::StompDestination {
        target,
        destination: config.events.destination.clone(),
        deliver_history: config.events.deliver_history,
    };
    Ok(vec![arca_events::delivery::spawn(
        catalog, names, dest, stop,
    )])
}

/// The configured external-content allow-list, loaded.
pub fn external_allow_list(
    config: &Config,
) -> anyhow::Result<Option<Arc<arca_repository::AllowList>>> {
    Ok(match &config.external_content_allowed {
        Some(path) => Some(Arc::new(
            arca_repository::AllowList::load(path).with_context(|| {
                format!(
                    "cannot read the external content allow-list {}",
                    path.display()
                )
            })?,
        )),
        None => None,
    })
}

/// The search index's settings from the `[search]` table (and the external-content
/// allow-list, through which external binaries are read for their text).
pub fn search_settings(
    config: &Config,
    external_allowed: Option<Arc<arca_repository::AllowList>>,
) -> anyhow::Result<arca_search::IndexerSettings> {
    use arca_search::mapping::{FieldMapping, MappedKind, Mapping};
    let s = &config.search;
    let mapping = match &s.fields {
        None => Mapping::dublin_core(),
        Some(fields) => Mapping {
            fields: fields
                .iter()
                .map(|f| FieldMapping {
                    name: f.name.clone(),
                    predicates: f.predicates.clone(),
                    kind: match f.kind.as_deref() {
                        Some("keyword") => MappedKind::Keyword,
                        Some("date") => MappedKind::Date,
                        _ => MappedKind::Text,
                    },
                    first_name: f.first_name.clone(),
                    last_name: f.last_name.clone(),
                })
                .collect(),
        },
    };
    let defaults = arca_search::extract::ExtractLimits::default();
    Ok(arca_search::IndexerSettings {
        dir: config.search_dir(),
        mapping,
        extract: arca_search::extract::ExtractLimits {
            max_input_bytes: s.extract_max_input,
            max_text_bytes: s.text_limit,
            timeout: std::time::Duration::from_secs(s.extract_timeout),
            memory_bytes: s.extract_memory_mib << 20,
            // 0: the default, one per core.
            workers: match s.extract_workers {
                0 => defaults.workers,
                n => n,
            },
        },
        program: extract_program(s.extract_program.as_deref()),
        child_binaries: s.child_binaries,
        external_allowed,
        max_commit_interval: std::time::Duration::from_millis(s.max_commit_interval_ms),
        bulk_merge_documents: s.bulk_merge_documents,
    })
}

/// The arca executable, when the running program is it (set by the `arca` command at start).
static ARCA_EXECUTABLE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Tells the server that `path` is the arca program running it, so that its PDF text
/// extraction runs `path extract-text` whatever the file is called (`/usr/local/bin/arca-2.1`).
/// Without it (a test harness embedding the server), `arca` is looked for next to the
/// running program, then on `PATH`.
pub fn set_arca_executable(path: std::path::PathBuf) {
    let _ = ARCA_EXECUTABLE.set(path);
}

/// The program that extracts a PDF's text: the configured one, else the `arca` binary's
/// hidden `extract-text` command (the running program when the `arca` command said so — see
/// [`set_arca_executable`] —, else an `arca` next to it or one directory up — test binaries
/// live in `target/*/deps` — else `arca` on PATH).
fn extract_program(configured: Option<&std::path::Path>) -> arca_search::extract::ExtractProgram {
    use arca_search::extract::ExtractProgram;
    let args = vec![std::ffi::OsString::from("extract-text")];
    if let Some(p) = configured {
        return ExtractProgram {
            program: p.to_path_buf(),
            args: Vec::new(),
        };
    }
    if let Some(own) = ARCA_EXECUTABLE.get() {
        return ExtractProgram {
            program: own.clone(),
            args,
        };
    }
    let exe = std::env::current_exe().ok();
    let candidates = exe.iter().flat_map(|e| {
        let dir = e.parent().map(std::path::Path::to_path_buf);
        [
            Some(e.clone()).filter(|e| e.file_name().is_some_and(|n| n == "arca")),
            dir.as_ref().map(|d| d.join("arca")),
            dir.as_ref()
                .and_then(|d| d.parent())
                .map(|d| d.join("arca")),
        ]
    });
    let program = candidates
        .flatten()
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            tracing::warn!(
                "no arca program next to this one: PDF text extraction runs `arca extract-text` \
                 from PATH (set search.extract_program if that is not arca)"
            );
            std::path::PathBuf::from("arca")
        });
    ExtractProgram { program, args }
}

/// Whether to serve the read-only Fedora 3 facade under `/fedora/` from the start: `on`,
/// `off`, or with `auto` when the repository holds imported objects (and the Fedora API is
/// not itself under `/fedora`; an import into the running server turns it on later): an
/// import records that in the catalog; a catalog rebuilt from storage has lost the mark, so
/// the first objects below the root are looked at then (and the mark set again when one is
/// an import).
pub async fn fedora3_facade(config: &Config, repo: &Repository) -> anyhow::Result<bool> {
    /// Children of the root looked at for an imported object when the mark is missing.
    const PROBE: usize = 256;
    let key = arca_fedora3::import::IMPORTED_META;
    let on = match config.fedora3.facade {
        arca_config::Facade::On => true,
        arca_config::Facade::Off => false,
        arca_config::Facade::Auto if config.base_path == "/fedora" => false,
        arca_config::Facade::Auto => {
            let marked = repo
                .catalog()
                .meta(key)
                .await
                .context("cannot read the catalog")?;
            if marked.as_deref() == Some("true") {
                true
            } else {
                let views = arca_fedora3::view::Views::new(repo);
                let (found, _) = views
                    .objects_after(None, PROBE)
                    .await
                    .context("cannot look for imported Fedora 3 objects")?;
                if !found.is_empty() {
                    repo.catalog()
                        .set_meta(key, "true")
                        .await
                        .context("cannot write the catalog")?;
                }
                !found.is_empty()
            }
        }
    };
    if on {
        tracing::info!("serving the read-only Fedora 3 REST facade under /fedora/");
    }
    Ok(on)
}

/// Tells the person who started the server, on stderr, where it answers, where its data is
/// and, in quick start, how to log in.
fn announce(config: &Config, addr: std::net::SocketAddr) {
    let mut text = format!(
        "arca listening on http://{addr}{}/\n  storage: {}\n  catalog: {}\n",
        config.base_path,
        root_description(config),
        catalog_description(config)
    );
    if config.auth.enabled && !config.auth.has_users() {
        text.push_str(&format!(
            "  quick-start admin: {QUICK_START_ADMIN} / {QUICK_START_ADMIN} (loopback only; configure users for real use)\n"
        ));
    } else if !config.auth.enabled {
        text.push_str("  access checks are off (auth.enabled = false)\n");
    }
    // Not eprintln!: a full disk under stderr must not stop the server.
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Where a node without an index forwards its searches (`search.forward_to`), if anywhere.
/// `https:` nodes are checked against the system's roots and `external_content_ca_file`.
fn search_forwarder(config: &Config) -> anyhow::Result<Option<Arc<arca_http::SearchForwarder>>> {
    if config.search.enabled || config.search.forward_to.is_empty() {
        return Ok(None);
    }
    let forwarder = arca_http::SearchForwarder::new(
        &config.search.forward_to,
        config.external_content_ca_file.as_deref(),
    )
    .map_err(anyhow::Error::msg)
    .context("cannot set up search forwarding (search.forward_to)")?;
    tracing::info!(nodes = ?forwarder.targets(), "no search index here: searches go to the nodes that index");
    Ok(Some(Arc::new(forwarder)))
}

/// The readiness thresholds of `config`'s `[health]` table.
fn health_settings(config: &Config) -> arca_observe::health::HealthSettings {
    arca_observe::health::HealthSettings {
        min_free_bytes: config.health.min_free_bytes,
        min_free_percent: config.health.min_free_percent,
        ..Default::default()
    }
}

/// Serves `GET /metrics` to anyone on `metrics_listen` (when set) until `stop` turns true.
async fn serve_metrics(
    config: &Config,
    observer: &Arc<arca_observe::Observer>,
    limits: &ConnectionLimits,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<Option<tokio::task::JoinHandle<()>>> {
    let Some(address) = &config.metrics_listen else {
        return Ok(None);
    };
    let listener = TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address} (metrics_listen)"))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "serving /metrics to anyone who reaches this address");
    let _ = writeln!(std::io::stderr(), "arca metrics on http://{addr}/metrics");
    let app = arca_http::metrics_router(observer.clone());
    let limits = limits.clone();
    Ok(Some(tokio::spawn(async move {
        serve(listener, app, &limits, async move {
            let _ = stop.wait_for(|stopped| *stopped).await;
        })
        .await
    })))
}

/// Serves the Fedora API on `listener` until `shutdown` resolves, then drains requests in
/// flight and checkpoints the catalog.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    run_observed(config, listener, shutdown, |_| {}).await
}

/// As [`run`], handing the opened repository to `opened` before serving (the test server
/// uses it to wait until writes are published into the root).
pub async fn run_observed(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    opened: impl FnOnce(Arc<Repository>),
) -> anyhow::Result<()> {
    run_gated(config, listener, shutdown, std::future::ready(()), opened).await
}

/// As [`run_observed`], opening the repository only once `gate` resolves: the server
/// answers as while starting (health, and 503 elsewhere) until then. Tests hold the gate to
/// watch a start deterministically.
pub async fn run_gated(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    gate: impl Future<Output = ()>,
    opened: impl FnOnce(Arc<Repository>),
) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let external_allowed = external_allow_list(&config)?;
    let auth = auth_config(&config)?;
    let requests = request_limits(&config);
    let addr = listener.local_addr()?;
    let (starting, serving) =
        serve::while_starting(listener, connection_limits(&config, &requests), shutdown);
    tracing::info!(%addr, "opening the repository; /health/live and /health/ready answer meanwhile");
    gate.await;
    let (repo, catalog) = open_repository(&config, true).await?;
    load_known_damage(&config, &repo);
    opened(repo.clone());
    let repo_stats = repo.clone();
    let (stop_events, events_stopped) = tokio::sync::watch::channel(false);
    let search = if config.search.enabled {
        Some(
            arca_search::Indexer::open(
                repo.clone(),
                search_settings(&config, external_allowed.clone())?,
            )
            .context("cannot open the search index")?,
        )
    } else {
        None
    };
    let indexing = search.as_ref().map(|s| s.spawn(events_stopped.clone()));
    let search_forward = search_forwarder(&config)?;
    let deliveries = start_events(&config, &repo, addr, events_stopped)?;
    let delivery_statuses = deliveries.iter().map(|d| d.status.clone()).collect();
    let fedora3_facade = fedora3_facade(&config, &repo).await?;
    let replicas = open_replicas(&config, repo.ocfl().store().as_ref())?;
    let (replication, replicating) = if replicas.is_empty() {
        (None, Vec::new())
    } else {
        let (r, tasks) =
            arca_fixity::Replicator::start(repo.clone(), replicas.clone(), stop_events.subscribe());
        (Some(r), tasks)
    };
    let (audit, auditing) =
        match background_audit(&config, &repo, &replicas, stop_events.subscribe())? {
            Some((a, task)) => (Some(a), Some(task)),
            None => (None, None),
        };
    let observer = arca_observe::Observer::new(
        arca_observe::Sources {
            repo: repo.clone(),
            search: search.clone(),
            deliveries: deliveries.iter().map(|d| d.status.clone()).collect(),
            storage: root_description(&config),
            catalog: catalog_description(&config),
            data_dir: config.storage.s3.is_none().then(|| config.data.clone()),
            started,
            audit: audit.clone(),
            replication: replication.clone(),
            search_forward: search_forward
                .clone()
                .map(|f| f as Arc<dyn arca_observe::health::Peers>),
        },
        health_settings(&config),
    );
    let sampling = observer.spawn_sampler(stop_events.subscribe());
    observer.metrics().set_enabled(config.metrics.enabled);
    let connections = connection_limits(&config, &requests);
    let metrics_listener =
        serve_metrics(&config, &observer, &connections, stop_events.subscribe()).await?;
    let app = arca_http::router(
        repo,
        HttpConfig {
            base_path: config.base_path.clone(),
            base_url: config.base_url.clone(),
            default_user: config.default_user.clone(),
            limits: requests.clone(),
            external_allowed,
            external_client: arca_http::ExternalClient::new(
                config.external_content_ca_file.as_deref(),
            )
            .map_err(anyhow::Error::msg)?,
            auth,
            deliveries: delivery_statuses,
            search,
            search_max_results: config.search.max_results,
            search_forward,
            fedora3_facade: Arc::new(fedora3_facade.into()),
            fedora3_facade_auto: config.fedora3.facade == arca_config::Facade::Auto
                && config.base_path != "/fedora",
            observer: Some(observer.clone()),
            audit,
            replication,
            fixity_reports: Some(fixity_reports_dir(&config)),
        },
    )
    .map_err(anyhow::Error::msg)?;
    // The full router first: whoever reads the announcement may send requests at once.
    starting.set(app);
    tracing::info!(%addr, base = %config.base_path, data = %config.data.display(), "arca is serving the Fedora API");
    announce(&config, addr);
    serving.finished().await;
    let _ = stop_events.send(true);
    let _ = sampling.await;
    if let Some(task) = metrics_listener {
        let _ = task.await;
    }
    for delivery in deliveries {
        // The delivery finishes its batch and records how far the broker acknowledged, so
        // that a restart does not send those events again.
        if tokio::time::timeout(arca_events::delivery::STOP_LIMIT, delivery.task)
            .await
            .is_err()
        {
            tracing::warn!(destination = %delivery.status.name, "event delivery did not stop in time; a restart sends its last events again");
        }
    }
    if let Some(task) = auditing {
        // The audit stops after the objects in hand and leaves a checkpoint to resume from.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), task).await;
    }
    for task in replicating {
        // A copy cut short is done again: the position moves only after a copy is whole.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), task).await;
    }
    if let Some(task) = indexing {
        // The indexer finishes its batch; what it has not committed it does again next time.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), task).await;
    }
    repo_stats.shutdown().await?;
    catalog.checkpoint()?;
    let sync = repo_stats.sync_stats();
    let journal = repo_stats.journal_stats();
    let ph = &repo_stats.phases;
    let per = |c: &std::sync::atomic::AtomicU64| {
        c.load(std::sync::atomic::Ordering::Relaxed) as f64
            / 1e6
            / ph.writes.load(std::sync::atomic::Ordering::Relaxed).max(1) as f64
    };
    tracing::info!(
        stage_ms = per(&ph.stage),
        journal_ms = per(&ph.journal),
        publish_ms = per(&ph.publish),
        catalog_ms = per(&ph.catalog),
        "mean time per write"
    );
    tracing::info!(
        journal_records = journal.records,
        journal_fsyncs = journal.fsyncs,
        avg_journal_sync_ms = journal.sync_nanos as f64 / 1e6 / journal.fsyncs.max(1) as f64,
        checkpoints = journal.checkpoints,
        avg_checkpoint_sync_ms = sync.sync_nanos as f64 / 1e6 / sync.syncs.max(1) as f64,
        "arca stopped"
    );
    Ok(())
}
