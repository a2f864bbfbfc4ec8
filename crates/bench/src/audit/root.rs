//! The audited root: built through a spawned arca (small objects, then large binaries) and
//! described in a manifest beside it, or reused as it is.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use super::{add_note, ctx_for, Plan};
use crate::args::Work;
use crate::driver::{drive, Limits, Probe};
use crate::report::ScenarioReport;
use crate::scenarios::{complete, ingest_object, pid_probe};
use crate::spawn::{Interrupt, Launch, SpawnedServer};

/// The manifest's file name in the data directory.
pub const MANIFEST: &str = "arca-bench-audit.json";

/// What a built root holds (`<data>/arca-bench-audit.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Small objects created.
    pub small_objects: u64,
    /// Bytes of each small binary.
    pub small_size: u64,
    /// Large binaries created.
    pub large_objects: u64,
    /// Bytes of each large binary.
    pub large_size: u64,
    /// The small binaries' paths below the Fedora API base (`<container>/file`).
    pub small_binaries: Vec<String>,
}

impl Manifest {
    /// Reads the manifest of `data`, if it has one.
    pub fn load(data: &Path) -> anyhow::Result<Option<Manifest>> {
        let path = data.join(MANIFEST);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .with_context(|| format!("parsing {}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// Writes it into `data`.
    pub fn save(&self, data: &Path) -> anyhow::Result<()> {
        let path = data.join(MANIFEST);
        let tmp = data.join(format!(".{MANIFEST}.tmp"));
        std::fs::write(&tmp, serde_json::to_vec(self)?)
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
    }
}

/// The OCFL storage root of a data directory.
pub fn ocfl_root(data: &Path) -> PathBuf {
    data.join("ocfl-root")
}

/// The root to audit: `data` reused when it holds an OCFL root, else built there.
pub async fn prepare(
    plan: &Plan,
    bin: &Path,
    data: &Path,
    interrupt: &Interrupt,
    emit: &mut impl FnMut(ScenarioReport),
) -> anyhow::Result<Manifest> {
    if ocfl_root(data).join("0=ocfl_1.1").exists() || ocfl_root(data).join("0=ocfl_1.0").exists() {
        let manifest = Manifest::load(data)?;
        eprintln!(
            "==> reusing the root in {}{}",
            data.display(),
            match &manifest {
                Some(m) => format!(
                    " ({} small objects of {} bytes, {} large of {} bytes when built)",
                    m.small_objects, m.small_size, m.large_objects, m.large_size
                ),
                None => format!(" (no {MANIFEST}: GET rows are skipped)"),
            }
        );
        return Ok(manifest.unwrap_or_default());
    }
    if data.exists() && std::fs::read_dir(data)?.next().is_some() {
        anyhow::bail!(
            "{} is neither empty nor an arca data directory (no ocfl-root/0=ocfl_1.x): give \
             an empty or new directory to build the root in, or an existing data directory",
            data.display()
        );
    }
    build(plan, bin, data, interrupt, emit).await
}

async fn build(
    plan: &Plan,
    bin: &Path,
    data: &Path,
    interrupt: &Interrupt,
    emit: &mut impl FnMut(ScenarioReport),
) -> anyhow::Result<Manifest> {
    eprintln!(
        "==> building the root in {}: {} objects with a {} binary, {} binaries of {}",
        data.display(),
        plan.objects,
        crate::args::format_size(plan.small_size),
        plan.large_objects,
        crate::args::format_size(plan.large_size)
    );
    let launch = Launch {
        data: Some(data.to_path_buf()),
        log: Some(plan.log("server-build.log")),
        env: vec![("ARCA_FIXITY_SCHEDULE".into(), Some("off".into()))],
        config: None,
    };
    let mut server = SpawnedServer::launch(bin, None, None, None, &launch, interrupt).await?;
    let result = ingest_root(plan, &server, interrupt, emit).await;
    server.stop().await;
    let manifest = result?;
    manifest.save(data)?;
    tokio::task::spawn_blocking(crate::procfs::sync_all)
        .await
        .ok();
    Ok(manifest)
}

async fn ingest_root(
    plan: &Plan,
    server: &SpawnedServer,
    interrupt: &Interrupt,
    emit: &mut impl FnMut(ScenarioReport),
) -> anyhow::Result<Manifest> {
    let ctx = ctx_for(plan, server, interrupt)?;
    let target = ctx.target.clone().expect("a target");
    let base = server.base.clone();
    let mut manifest = Manifest {
        small_size: plan.small_size,
        large_size: plan.large_size,
        ..Default::default()
    };
    for (name, count, size) in [
        ("audit-root-small", plan.objects, plan.small_size),
        ("audit-root-large", plan.large_objects, plan.large_size),
    ] {
        if count == 0 || interrupt.is_set() {
            continue;
        }
        let mut phase = plan.phase(name, Work::Ingest { with_binary: true });
        phase.duration = None;
        phase.count = Some(count);
        phase.size = size;
        // Large binaries: no more clients than there are binaries, and few (disk-bound).
        if size > plan.small_size {
            phase.clients = phase.clients.min(4);
        }
        let mut row = ScenarioReport::new(
            name,
            phase.scenario,
            crate::report::Kind::Ingest,
            crate::report::PhaseConfig {
                clients: phase.clients,
                count: phase.count,
                size_bytes: size,
                ..Default::default()
            },
        );
        let created = Arc::new(Mutex::new(Vec::<String>::new()));
        let probe = Probe::start(pid_probe(&ctx), ctx.data_dir.clone()).await;
        let driven = {
            let target = target.clone();
            let payload = ctx.payload.clone();
            let next = ctx.next_object.clone();
            let created = created.clone();
            let base = base.clone();
            drive(
                &ctx,
                name,
                Limits {
                    clients: phase.clients,
                    duration: None,
                    count: phase.count,
                },
                move |_| {
                    let target = target.clone();
                    let payload = payload.clone();
                    let created = created.clone();
                    let base = base.clone();
                    let object = next.fetch_add(1, Ordering::Relaxed);
                    async move {
                        let (out, url) = ingest_object(&target, &payload, object, Some(size)).await;
                        if let (true, Some(u)) = (out.ok, url) {
                            let binary = crate::http::binary_url(&u);
                            let relative = binary.strip_prefix(&base).unwrap_or(&binary);
                            if let Ok(mut v) = created.lock() {
                                v.push(relative.to_string());
                            }
                        }
                        out
                    }
                },
            )
            .await
        };
        complete(&mut row, &driven, probe, true).await;
        let created = created.lock().map(|v| v.clone()).unwrap_or_default();
        if created.len() as u64 != count {
            add_note(
                &mut row,
                format!("{} of {count} objects created", created.len()),
            );
        }
        if name == "audit-root-small" {
            manifest.small_objects = created.len() as u64;
            manifest.small_binaries = created;
        } else {
            manifest.large_objects = created.len() as u64;
        }
        emit(row);
    }
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_round_trip_and_missing_ones_are_none() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(Manifest::load(d.path()).unwrap(), None);
        let m = Manifest {
            small_objects: 2,
            small_size: 20,
            large_objects: 1,
            large_size: 1 << 20,
            small_binaries: vec!["a/file".into(), "b/file".into()],
        };
        m.save(d.path()).unwrap();
        assert_eq!(Manifest::load(d.path()).unwrap(), Some(m));
        std::fs::write(d.path().join(MANIFEST), b"{not json").unwrap();
        assert!(Manifest::load(d.path()).is_err());
    }
}
