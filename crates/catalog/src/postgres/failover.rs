//! Several hosts in the catalog URL, as libpq takes them
//! (`postgres://user@h1:5432,h2:5433/db?target_session_attrs=read-write`): the catalog
//! connects to the first host, in the URL's order, that accepts a connection and takes
//! writes, and follows a failover to another.
//!
//! sqlx knows one host per pool, so [`Failover`] keeps the list: it chooses the host at
//! start, and a watcher task chooses again when something suggests the host is gone or
//! read-only (the change listener lost its connection, a new connection turned out
//! read-only, a write failed for want of a server). A new choice is given to the pools
//! (`set_connect_options`); connections made before it are dropped when next taken from
//! the pool, so nothing keeps writing to a demoted primary. While no host takes writes,
//! requests fail as unavailable (503 with `Retry-After`) and the watcher tries again every
//! [`RETRY`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, PgConnection, PgPool};

use crate::{Error, Result};

/// How long a probe of one host may take (connect and one query).
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How often the watcher looks again while no host takes writes.
const RETRY: Duration = Duration::from_millis(250);

/// libpq's `target_session_attrs`: which host of the list the catalog takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// The first host whose sessions are read-write (`SHOW transaction_read_only` is
    /// `off`): a primary. arca's default, since it writes.
    ReadWrite,
    /// The first host that accepts a connection.
    Any,
}

/// A catalog URL split into one URL per host.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct HostList {
    /// Each host as `host:port` (for messages) and the URL naming it alone.
    pub hosts: Vec<(String, String)>,
    /// `target_session_attrs`, or [`Target::ReadWrite`] when not given.
    pub target: Target,
    /// Whether the URL named one host and no `target_session_attrs`: connected to as
    /// before multi-host URLs were known.
    pub plain: bool,
}

/// Splits `url`'s host list (`h1:5432,h2,[::1]:5433`) into one URL per host, with the
/// user, database and query of `url` (less `target_session_attrs`). A host list with an
/// empty host or a port that is not a number, or a `target_session_attrs` arca cannot
/// honour, is an [`Error::InvalidUrl`]; no message shows the password.
pub(super) fn split(url: &str) -> Result<HostList> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(Error::InvalidUrl(
            "it does not start with postgres://".into(),
        ));
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let (user_info, host_list) = match authority.rfind('@') {
        Some(at) => authority.split_at(at + 1),
        None => ("", authority),
    };
    let (path, query) = match tail.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (tail, None),
    };
    let mut target = None;
    let mut kept = Vec::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let Some((key, value)) = form_urlencoded::parse(pair.as_bytes()).next() else {
            continue;
        };
        if key != "target_session_attrs" {
            kept.push(pair);
            continue;
        }
        target = Some(match &*value {
            "read-write" => Target::ReadWrite,
            "any" => Target::Any,
            other => {
                return Err(Error::InvalidUrl(format!(
                    "target_session_attrs={other} is not offered: arca writes to its catalog, \
                     so it takes read-write (the default) or any"
                )))
            }
        });
    }
    let entries: Vec<&str> = host_list.split(',').collect();
    if entries.len() == 1 && target.is_none() {
        let label = match host_port(host_list) {
            Ok((host, port)) => format!("{host}:{}", port.unwrap_or(5432)),
            Err(_) => host_list.to_string(),
        };
        return Ok(HostList {
            hosts: vec![(label, url.to_string())],
            target: Target::ReadWrite,
            plain: true,
        });
    }
    let query = if kept.is_empty() {
        String::new()
    } else {
        format!("?{}", kept.join("&"))
    };
    let mut hosts = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        if entry.trim().is_empty() {
            return Err(Error::InvalidUrl(format!(
                "host {} of the {} in its host list is empty",
                i + 1,
                entries.len()
            )));
        }
        let (host, port) = host_port(entry)?;
        let port = port.unwrap_or(5432);
        hosts.push((
            format!("{host}:{port}"),
            format!("{scheme}://{user_info}{host}:{port}{path}{query}"),
        ));
    }
    Ok(HostList {
        hosts,
        target: target.unwrap_or(Target::ReadWrite),
        plain: false,
    })
}

/// `host[:port]` or `[v6]:port` of a host list: the host (in brackets for IPv6) and the
/// port, if given.
fn host_port(entry: &str) -> Result<(&str, Option<u16>)> {
    let (host, port) = if entry.starts_with('[') {
        match entry.find(']') {
            Some(end) => match &entry[end + 1..] {
                "" => (entry, None),
                rest => match rest.strip_prefix(':') {
                    Some(port) => (&entry[..=end], Some(port)),
                    None => {
                        return Err(Error::InvalidUrl(format!(
                            "the host {entry} of its host list is not an address"
                        )))
                    }
                },
            },
            None => {
                return Err(Error::InvalidUrl(format!(
                    "the host {entry} of its host list lacks its closing ]"
                )))
            }
        }
    } else {
        match entry.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (entry, None),
        }
    };
    if host.is_empty() {
        return Err(Error::InvalidUrl(format!(
            "the host {entry} of its host list has no name"
        )));
    }
    let port = match port {
        None => None,
        Some(port) => Some(
            port.parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| {
                    Error::InvalidUrl(format!(
                "the port {port:?} of {host} in its host list is not a port number (1-65535)"
            ))
                })?,
        ),
    };
    Ok((host, port))
}

/// One host of the list.
pub(super) struct Host {
    /// `host:port`, for messages.
    pub label: String,
    /// The options connecting to it (its TLS settings included).
    pub options: PgConnectOptions,
    /// Its TLS, for messages (`sslmode=verify-full`).
    pub described: String,
}

/// What a probe found on one host.
enum Probe {
    /// It takes writes (or `target_session_attrs=any` and it answered).
    Taken,
    /// Its sessions are read-only: a standby, or a primary made read-only.
    ReadOnly,
    /// It could not be reached, or refused the connection.
    Failed(Error),
}

/// The host list of a catalog and the choice among its hosts, shared by the pools' hooks,
/// the catalog and the watcher.
pub(super) struct Failover {
    hosts: Vec<Host>,
    target: Target,
    /// The index of the host the pools connect to.
    current: AtomicUsize,
    /// When the current host was chosen: connections made before belong to another host.
    chosen_at: Mutex<Instant>,
    /// Wakes the watcher to choose again.
    wake: tokio::sync::Notify,
}

impl Failover {
    /// The list, its first host current until [`adopt`](Self::adopt) says otherwise.
    pub(super) fn new(hosts: Vec<Host>, target: Target) -> Self {
        Self {
            hosts,
            target,
            current: AtomicUsize::new(0),
            chosen_at: Mutex::new(Instant::now()),
            wake: tokio::sync::Notify::new(),
        }
    }

    /// The host the pools connect to.
    pub(super) fn current(&self) -> &Host {
        &self.hosts[self.current.load(Ordering::Acquire)]
    }

    /// The first host, in the list's order, that `target` accepts. Without one: an
    /// [`Error::Standby`] listing each host's state when some host answered read-only,
    /// else the first host's own failure.
    pub(super) async fn find(&self) -> Result<usize> {
        let mut found = Vec::with_capacity(self.hosts.len());
        for (i, host) in self.hosts.iter().enumerate() {
            match self.probe(host).await {
                Probe::Taken => return Ok(i),
                probe => found.push((host, probe)),
            }
        }
        let standby = found.iter().any(|(_, p)| matches!(p, Probe::ReadOnly));
        let states: Vec<String> = found
            .iter()
            .map(|(host, probe)| match probe {
                Probe::ReadOnly => format!(
                    "{} is a standby or read-only (transaction_read_only is on)",
                    host.label
                ),
                Probe::Failed(e) => format!("{} cannot be reached: {e}", host.label),
                Probe::Taken => unreachable!("a taken host returned above"),
            })
            .collect();
        let first_failure = found.into_iter().find_map(|(host, probe)| match probe {
            Probe::Failed(e) => Some(super::tls::explain(e, &host.described)),
            _ => None,
        });
        match first_failure {
            Some(e) if !standby => Err(e),
            _ => Err(Error::Standby(format!(
                "no host of the catalog's list takes writes: {}",
                states.join("; ")
            ))),
        }
    }

    /// Makes host `i` the current one; connections made before now are dropped when next
    /// taken from their pool.
    pub(super) fn adopt(&self, i: usize) {
        self.current.store(i, Ordering::Release);
        *self.chosen_at.lock() = Instant::now();
    }

    /// Connects to `host` and asks whether its sessions are read-only.
    async fn probe(&self, host: &Host) -> Probe {
        let probed = tokio::time::timeout(PROBE_TIMEOUT, async {
            let mut conn = host.options.connect().await?;
            let read_only = match self.target {
                Target::ReadWrite => is_read_only(&mut conn).await?,
                Target::Any => false,
            };
            let _ = sqlx::Connection::close(conn).await;
            Ok::<_, sqlx::Error>(read_only)
        })
        .await;
        match probed {
            Ok(Ok(false)) => Probe::Taken,
            Ok(Ok(true)) => Probe::ReadOnly,
            Ok(Err(e)) => Probe::Failed(e.into()),
            Err(_) => Probe::Failed(Error::Postgres(sqlx::Error::PoolTimedOut)),
        }
    }

    /// Asks the watcher to choose the host again (a failure suggested the current one is
    /// gone or read-only).
    pub(super) fn suspect(&self) {
        self.wake.notify_one();
    }

    /// The pools' check of a new connection: with `read-write`, a read-only one is refused
    /// (the pool tries again until its timeout) and the host is chosen again.
    pub(super) async fn check_new(&self, conn: &mut PgConnection) -> sqlx::Result<()> {
        if self.target == Target::ReadWrite && is_read_only(conn).await? {
            self.suspect();
            return Err(sqlx::Error::Protocol(format!(
                "the catalog's host {} is read-only now (a standby or a demoted primary)",
                self.current().label
            )));
        }
        Ok(())
    }

    /// Whether a pooled connection of age `age` was made before the current host was
    /// chosen, so it may be to another host.
    pub(super) fn is_stale(&self, age: Duration) -> bool {
        Instant::now()
            .checked_sub(age)
            .is_some_and(|made| made < *self.chosen_at.lock())
    }

    /// Chooses the host again each time it is [suspected](Self::suspect), until `stop`;
    /// gives a new choice to `pool` and to the advisory-lock pool `locks` (whose options
    /// `lock_options` makes from a host's).
    pub(super) async fn watch(
        self: Arc<Self>,
        pool: PgPool,
        locks: PgPool,
        lock_options: fn(&PgConnectOptions) -> PgConnectOptions,
        mut stop: tokio::sync::oneshot::Receiver<()>,
    ) {
        loop {
            tokio::select! {
                _ = &mut stop => return,
                _ = self.wake.notified() => {}
            }
            loop {
                match self.find().await {
                    Ok(i) => {
                        if i != self.current.load(Ordering::Acquire) {
                            let host = &self.hosts[i];
                            tracing::warn!(host = %host.label, "catalog: PostgreSQL host changed");
                            pool.set_connect_options(host.options.clone());
                            locks.set_connect_options(lock_options(&host.options));
                            self.adopt(i);
                        }
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "catalog: no PostgreSQL host takes writes; retrying");
                    }
                }
                tokio::select! {
                    _ = &mut stop => return,
                    _ = tokio::time::sleep(RETRY) => {}
                }
            }
        }
    }
}

/// Whether the session's transactions are read-only (libpq's test for `read-write`).
async fn is_read_only(conn: &mut PgConnection) -> sqlx::Result<bool> {
    let value: String = sqlx::query_scalar("SHOW transaction_read_only")
        .fetch_one(conn)
        .await?;
    Ok(value == "on")
}

/// Whether `error` suggests the host is gone or no longer takes writes.
pub(super) fn suggests_failover(error: &Error) -> bool {
    match error {
        Error::Batch(cause) => suggests_failover(cause),
        Error::Postgres(sqlx::Error::Database(e)) => e.code().is_some_and(|code| {
            code.starts_with("08") || code.starts_with("57P") || code == "25006"
        }),
        Error::Postgres(sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_list_becomes_one_url_per_host() {
        let list = split(
            "postgres://u:secret@h1:5432,h2:5433,[::1],h4/db?sslmode=require&target_session_attrs=read-write&application_name=a",
        )
        .unwrap();
        assert!(!list.plain);
        assert_eq!(list.target, Target::ReadWrite);
        let labels: Vec<&str> = list.hosts.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, ["h1:5432", "h2:5433", "[::1]:5432", "h4:5432"]);
        assert_eq!(
            list.hosts[1].1,
            "postgres://u:secret@h2:5433/db?sslmode=require&application_name=a"
        );
        for (_, url) in &list.hosts {
            let options: PgConnectOptions = url.parse().unwrap();
            assert_eq!(options.get_database(), Some("db"));
        }
    }

    #[test]
    fn a_single_host_url_is_kept_as_it_is() {
        let url = "postgres://u:pw@db.example:6543/arca?sslmode=verify-full";
        let list = split(url).unwrap();
        assert!(list.plain);
        assert_eq!(list.hosts, [("db.example:6543".into(), url.to_string())]);
        let list = split("postgres://u@h/d?target_session_attrs=any").unwrap();
        assert!(!list.plain);
        assert_eq!(list.target, Target::Any);
        assert_eq!(
            list.hosts,
            [("h:5432".into(), "postgres://u@h:5432/d".into())]
        );
    }

    #[test]
    fn a_malformed_host_list_is_refused_without_the_password() {
        for (url, expected) in [
            ("postgres://u:pw@h1,,h3/d", "host 2 of the 3"),
            ("postgres://u:pw@h1,/d", "host 2 of the 2"),
            ("postgres://u:pw@h1:5432,h2:port/d", "\"port\" of h2"),
            ("postgres://u:pw@h1:70000,h2/d", "\"70000\" of h1"),
            ("postgres://u:pw@h1,:5432/d", "has no name"),
            ("postgres://u:pw@h1,[::1/d", "closing ]"),
            (
                "postgres://u:pw@h1,h2/d?target_session_attrs=read-only",
                "target_session_attrs=read-only",
            ),
        ] {
            let e = split(url).unwrap_err();
            assert!(matches!(e, Error::InvalidUrl(_)), "{url}: {e}");
            let e = e.to_string();
            assert!(e.contains(expected) && !e.contains("pw"), "{url}: {e}");
        }
    }
}
