//! Liveness and readiness.
//!
//! Liveness says the process answers. Readiness says every part a request needs is usable:
//! the catalog answers a query, the storage root answers (and, on a local root, the staging
//! directory is writable and the data directory's file system has room), the search indexer
//! has not failed, and every event destination delivers. A failing replica, or a node that
//! searches are forwarded to and does not answer, is reported as a warning that leaves the
//! server ready (see [`check_replicas`], [`Peers`]). Each check is bounded by
//! [`HealthSettings::check_timeout`], so a hung PostgreSQL or S3 endpoint makes the answer
//! "not ready", never a hung probe; the answer is kept for [`HealthSettings::cache_for`], so
//! a storm of probes costs one round of checks a second.

use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::Sources;

/// The storage root's declaration file (OCFL 1.1), which every root has.
const ROOT_NAMASTE: &str = "0=ocfl_1.1";

/// Thresholds of the readiness checks.
#[derive(Debug, Clone)]
pub struct HealthSettings {
    /// Free bytes on the data directory's file system below which the server is not ready.
    pub min_free_bytes: u64,
    /// Free percent of that file system below which the server is not ready.
    pub min_free_percent: u64,
    /// Longest wait for one check.
    pub check_timeout: Duration,
    /// How long one readiness answer is reused.
    pub cache_for: Duration,
}

impl Default for HealthSettings {
    fn default() -> Self {
        Self {
            min_free_bytes: 1 << 30,
            min_free_percent: 2,
            check_timeout: Duration::from_secs(2),
            cache_for: Duration::from_secs(1),
        }
    }
}

/// The health checks.
pub struct Health {
    settings: HealthSettings,
    /// The last answer and when it was made; the lock also makes concurrent probes wait
    /// for one round of checks instead of each running its own.
    last: tokio::sync::Mutex<Option<(Instant, Readiness)>>,
}

impl Health {
    /// Checks with `settings`.
    pub fn new(settings: HealthSettings) -> Self {
        Self {
            settings,
            last: tokio::sync::Mutex::new(None),
        }
    }

    /// The thresholds.
    pub fn settings(&self) -> &HealthSettings {
        &self.settings
    }

    /// Whether `sources` can serve now: the last answer when it is younger than
    /// [`HealthSettings::cache_for`], else a new round of checks.
    pub async fn readiness(&self, sources: &Sources) -> Readiness {
        let mut last = self.last.lock().await;
        if let Some((at, answer)) = last.as_ref() {
            if at.elapsed() < self.settings.cache_for {
                return answer.clone();
            }
        }
        let answer = self.check(sources).await;
        if !answer.ready {
            let failed: Vec<&str> = answer
                .checks
                .iter()
                .filter(|c| !c.ok)
                .map(|c| c.name.as_str())
                .collect();
            tracing::debug!(?failed, "not ready");
        }
        *last = Some((Instant::now(), answer.clone()));
        answer
    }

    /// Runs every check once, concurrently.
    async fn check(&self, sources: &Sources) -> Readiness {
        let (catalog, storage, disk) = tokio::join!(
            self.bounded("catalog", check_catalog(sources)),
            self.bounded("storage", check_storage(sources)),
            self.bounded("disk", check_disk(sources, &self.settings)),
        );
        let mut checks: Vec<Check> = [catalog, storage, disk].into_iter().flatten().collect();
        checks.extend(check_search(sources));
        checks.extend(check_events(sources));
        checks.extend(check_replicas(sources));
        if let Some(peers) = &sources.search_forward {
            let probe = tokio::time::timeout(self.settings.check_timeout, peers.probe());
            checks.extend(peer_checks(probe.await.unwrap_or_else(|_| {
                peers
                    .names()
                    .into_iter()
                    .map(|n| (n, Err("no answer in time".to_string())))
                    .collect()
            })));
        }
        Readiness::of(checks)
    }

    /// `check` with the timeout applied: a check that does not answer in time failed.
    async fn bounded<T: Into<Option<Check>>>(
        &self,
        name: &str,
        check: impl Future<Output = T>,
    ) -> Option<Check> {
        match tokio::time::timeout(self.settings.check_timeout, check).await {
            Ok(c) => c.into(),
            Err(_) => Some(Check::failed(
                name,
                format!(
                    "no answer within {} ms",
                    self.settings.check_timeout.as_millis()
                ),
            )),
        }
    }
}

impl crate::Observer {
    /// Whether the server can serve now ([`Health::readiness`] of its sources).
    pub async fn readiness(&self) -> Readiness {
        self.health().readiness(self.sources()).await
    }
}

/// The body of `/health/live`: the process answers.
#[derive(Debug, Clone, Serialize)]
pub struct Liveness {
    /// Always `"live"`.
    pub status: &'static str,
}

impl Liveness {
    /// The process answers.
    pub fn now() -> Self {
        Self { status: "live" }
    }
}

/// Whether the server can serve, and if not, what is not ready.
#[derive(Debug, Clone, Serialize)]
pub struct Readiness {
    /// True when every check passed (warnings aside).
    pub ready: bool,
    /// One entry per check (`catalog`, `storage`, `disk`, `search`, `events:<destination>`,
    /// `replica:<name>`, `search-forward:<url>`).
    pub checks: Vec<Check>,
}

impl Readiness {
    /// Ready when every check in `checks` passed or failed only as a warning.
    pub fn of(checks: Vec<Check>) -> Self {
        Self {
            ready: checks.iter().all(|c| c.ok || c.warning),
            checks,
        }
    }

    /// While the server starts: the repository is being opened (the journal replayed, the
    /// catalog rebuilt from storage when it is missing or incomplete).
    pub fn starting() -> Self {
        Self::of(vec![Check::failed(
            "catalog",
            "rebuilding from storage: the repository is being opened (journal replay, catalog \
             rebuild when needed)",
        )])
    }
}

/// One readiness check's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// Whether it passed.
    pub ok: bool,
    /// Why not (or a detail when it passed).
    pub message: Option<String>,
    /// A failure that does not make the server unready (it is reported, and retried).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub warning: bool,
}

impl Check {
    /// A check that passed, with a detail.
    pub fn passed(name: &str, detail: impl Into<String>) -> Self {
        Self {
            name: name.to_string(),
            ok: true,
            message: Some(detail.into()),
            warning: false,
        }
    }

    /// A check that failed without making the server unready, and why.
    pub fn warning(name: &str, why: impl Into<String>) -> Self {
        Self {
            warning: true,
            ..Self::failed(name, why)
        }
    }

    /// A check that failed, and why (URLs in it lose their passwords).
    pub fn failed(name: &str, why: impl Into<String>) -> Self {
        Self {
            name: name.to_string(),
            ok: false,
            message: Some(redact(&why.into())),
            warning: false,
        }
    }
}

/// `text` with the password of every URL in it replaced by `***`.
fn redact(text: &str) -> String {
    if !text.contains("://") {
        return text.to_string();
    }
    text.split(' ')
        .map(|word| {
            if word.contains("://") {
                arca_config::redact_password(word)
            } else {
                word.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

async fn check_catalog(sources: &Sources) -> Check {
    match sources.repo.catalog().ping().await {
        Ok(()) => Check::passed("catalog", sources.catalog.clone()),
        Err(e) => Check::failed("catalog", format!("{}: {e}", sources.catalog)),
    }
}

/// The root answers: its declaration file is there (a `HEAD` request in S3); on a local
/// root the staging directory also takes a new file.
async fn check_storage(sources: &Sources) -> Check {
    let store = sources.repo.ocfl().store().clone();
    let staging = sources
        .data_dir
        .is_some()
        .then(|| sources.repo.ocfl().staging_path().to_path_buf());
    let place = sources.storage.clone();
    // The store's calls block (the S3 store on its own runtime): off the async threads.
    let answer = tokio::task::spawn_blocking(move || {
        match store.metadata(ROOT_NAMASTE) {
            Ok(Some(_)) => {}
            Ok(None) => return Err(format!("{place}: the root has no {ROOT_NAMASTE}")),
            Err(e) => return Err(format!("{place}: {e}")),
        }
        if let Some(dir) = staging {
            writable(&dir).map_err(|e| format!("{} is not writable: {e}", dir.display()))?;
        }
        Ok(place)
    })
    .await;
    match answer {
        Ok(Ok(place)) => Check::passed("storage", place),
        Ok(Err(why)) => Check::failed("storage", why),
        Err(e) => Check::failed("storage", format!("the check failed: {e}")),
    }
}

/// Creates and removes a file in `dir`.
fn writable(dir: &Path) -> std::io::Result<()> {
    static PROBES: AtomicU64 = AtomicU64::new(0);
    let path = dir.join(format!(
        ".health-{}-{}",
        std::process::id(),
        PROBES.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)
}

/// The data directory's file system has more room than both thresholds, and more than
/// `min_free_percent` of its inodes free, where it has a fixed number (local roots only): a
/// disk of small objects runs out of inodes long before bytes.
async fn check_disk(sources: &Sources, settings: &HealthSettings) -> Option<Check> {
    let dir = sources.data_dir.clone()?;
    let (min_bytes, min_percent) = (settings.min_free_bytes, settings.min_free_percent);
    let usage = tokio::task::spawn_blocking(move || arca_storage::free_space::usage(&dir))
        .await
        .map_err(std::io::Error::other)
        .and_then(|u| u);
    Some(match usage {
        Err(e) => Check::failed("disk", format!("cannot measure free space: {e}")),
        Ok(u) => {
            // Never ready where writes are refused: above twice the inodes the write guard
            // keeps in reserve, whatever the percentage says.
            let (_, reserve) = arca_storage::free_space::FreeSpaceGuard::reserve_for(&u);
            let min_inodes = (u128::from(u.total_inodes) * u128::from(min_percent) / 100)
                .max(u128::from(reserve) * 2);
            let inodes_ok = u.total_inodes == 0 || u128::from(u.free_inodes) > min_inodes;
            let line = format!(
                "{} free of {}, {} of {} inodes free (ready above {} and {min_percent} % of the bytes, and above {min_inodes} inodes)",
                bytes(u.free_bytes),
                bytes(u.total_bytes),
                u.free_inodes,
                u.total_inodes,
                bytes(min_bytes),
            );
            if inodes_ok && disk_ok(u.free_bytes, u.total_bytes, min_bytes, min_percent) {
                Check::passed("disk", line)
            } else {
                Check::failed("disk", line)
            }
        }
    })
}

/// Whether `free` of `total` bytes is above both thresholds.
fn disk_ok(free: u64, total: u64, min_bytes: u64, min_percent: u64) -> bool {
    free >= min_bytes && u128::from(free) * 100 >= u128::from(total) * u128::from(min_percent)
}

/// `n` bytes for people (binary units).
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// The indexer works: its live loop is not failing and its last rebuild, if any, did not
/// fail (a failing indexer tries again, and is ready once a try succeeds).
fn check_search(sources: &Sources) -> Option<Check> {
    let status = sources.search.as_ref()?.status();
    let rebuild_failed = status
        .reindex
        .as_ref()
        .filter(|r| !r.running)
        .and_then(|r| r.error.clone());
    Some(match (status.error, rebuild_failed) {
        (Some(e), _) => Check::failed("search", format!("indexing fails: {e}")),
        (None, Some(e)) => Check::failed("search", format!("the last rebuild failed: {e}")),
        (None, None) => Check::passed(
            "search",
            format!(
                "{} documents, {} changes behind",
                status.documents, status.lag
            ),
        ),
    })
}

/// Every destination delivers: a destination whose last attempt failed (the broker down,
/// refusing, timing out) is not ready until a batch goes through again. A destination
/// another node leads, or with nothing to send, is ready.
fn check_events(sources: &Sources) -> Vec<Check> {
    sources
        .deliveries
        .iter()
        .map(|d| {
            let name = format!("events:{}", arca_config::redact_password(&d.name));
            match d.last_error() {
                Some(e) => Check::failed(&name, format!("the broker fails: {e}")),
                None if !d.leading() => Check::passed(&name, "standby (another node delivers)"),
                None if d.connected() => Check::passed(&name, "connected"),
                None => Check::passed(&name, "nothing to deliver yet"),
            }
        })
        .collect()
}

/// Every replica copies: one whose last copy failed (unreachable, full, read-only) is a
/// failed check `replica:<name>`, but only a *warning*: the server stays ready. Copies run
/// behind the writes from the durable change log and are retried, so ingest and reads go on
/// unharmed; a readiness 503 would take the node out of its load balancer and stop the
/// service for a second copy's sake — the outage the replica is meant to guard against. The
/// warning shows in `/health/ready`, the status page and `arca_replica_failing`.
fn check_replicas(sources: &Sources) -> Vec<Check> {
    let Some(replication) = &sources.replication else {
        return Vec::new();
    };
    replica_checks(&replication.status())
}

fn replica_checks(statuses: &[arca_fixity::replica::ReplicaStatus]) -> Vec<Check> {
    statuses
        .iter()
        .map(|r| {
            let name = format!("replica:{}", r.name);
            match &r.error {
                Some(e) => Check::warning(
                    &name,
                    format!(
                        "copies fail and are retried ({} changes behind; ingest goes on): {e}",
                        r.lag
                    ),
                ),
                None => Check::passed(&name, format!("{} changes behind", r.lag)),
            }
        })
        .collect()
}

/// Each peer's name and whether it answers (a detail, or why not).
pub type PeerAnswers = Vec<(String, Result<String, String>)>;

/// Other servers a part of this one's answers comes from (the nodes searches are
/// forwarded to), probed by each readiness round.
pub trait Peers: Send + Sync {
    /// Each peer's name, in order.
    fn names(&self) -> Vec<String>;
    /// Whether each peer answers now.
    fn probe(&self) -> std::pin::Pin<Box<dyn Future<Output = PeerAnswers> + Send + '_>>;
}

/// Every search node answers: one that does not is a failed check `search-forward:<url>`,
/// but only a *warning*: this node serves everything else, and searches go to the next
/// node (or get 503 with `Retry-After` when none answers), so taking this node out of its
/// load balancer would only make the outage larger.
fn peer_checks(probed: PeerAnswers) -> Vec<Check> {
    probed
        .into_iter()
        .map(|(peer, answer)| {
            let name = format!("search-forward:{peer}");
            match answer {
                Ok(detail) => Check::passed(&name, detail),
                Err(e) => Check::warning(
                    &name,
                    format!("searches go to the next node while it does not answer: {e}"),
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_thresholds_are_both_required() {
        let gib = 1u64 << 30;
        assert!(disk_ok(2 * gib, 10 * gib, gib, 2));
        assert!(!disk_ok(gib - 1, 10 * gib, gib, 2));
        // 1 % free of a large file system: above the bytes, below the percentage.
        assert!(!disk_ok(10 * gib, 1000 * gib, gib, 2));
        assert!(disk_ok(20 * gib, 1000 * gib, gib, 2));
        assert!(disk_ok(0, 0, 0, 0));
    }

    #[test]
    fn readiness_is_the_conjunction_of_its_checks() {
        assert!(Readiness::of(vec![Check::passed("a", "x")]).ready);
        assert!(!Readiness::of(vec![Check::passed("a", "x"), Check::failed("b", "y")]).ready);
        let starting = Readiness::starting();
        assert!(!starting.ready);
        assert_eq!(starting.checks[0].name, "catalog");
    }

    #[test]
    fn a_search_node_out_of_reach_warns_without_making_the_server_unready() {
        let checks = peer_checks(vec![
            ("http://a/rest".into(), Err("connection refused".into())),
            ("http://b/rest".into(), Ok("answers".into())),
        ]);
        assert_eq!(checks[0].name, "search-forward:http://a/rest");
        assert!(!checks[0].ok && checks[0].warning);
        assert!(checks[1].ok && !checks[1].warning);
        assert!(Readiness::of(checks).ready);
    }

    #[test]
    fn a_failing_replica_warns_without_making_the_server_unready() {
        let status = |name: &str, error: Option<&str>| arca_fixity::replica::ReplicaStatus {
            name: name.into(),
            lag: 5,
            error: error.map(str::to_string),
            ..Default::default()
        };
        let checks = replica_checks(&[status("near", None), status("far", Some("refused"))]);
        assert_eq!(checks[0].name, "replica:near");
        assert!(checks[0].ok && !checks[0].warning);
        assert_eq!(checks[1].name, "replica:far");
        assert!(!checks[1].ok && checks[1].warning);
        assert!(checks[1].message.as_deref().unwrap().contains("refused"));
        let mut all = checks.clone();
        all.push(Check::passed("catalog", "ok"));
        assert!(Readiness::of(all.clone()).ready);
        all.push(Check::failed("storage", "down"));
        assert!(!Readiness::of(all).ready);
        let json = serde_json::to_value(&checks).unwrap();
        assert_eq!(json[1]["warning"], true);
        assert!(json[0].get("warning").is_none(), "{json}");
    }

    #[test]
    fn failure_messages_lose_passwords() {
        let c = Check::failed(
            "catalog",
            "PostgreSQL postgres://arca:secret@db:5432/arca: refused",
        );
        let m = c.message.unwrap();
        assert!(!m.contains("secret"), "{m}");
        assert!(m.contains("postgres://arca:***@db:5432/arca:"), "{m}");
    }

    #[test]
    fn bytes_read_as_people_write_them() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(64 << 20), "64.0 MiB");
        assert_eq!(bytes(3 << 29), "1.5 GiB");
    }
}
