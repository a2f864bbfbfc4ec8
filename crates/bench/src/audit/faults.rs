//! Fault injection on a real root: a fresh server with a directory replica, objects ingested,
//! the replica synced, the undamaged root audited (no finding may come back), then one of
//! each kind of damage the issue lists, the audit of the primary and the verification of the
//! replica, what they found and repaired, and ocfl-py over every object of both roots.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha512};

use super::read::{list, ocfl_py, run_tool, tail};
use super::{add_note, audit_row, ctx_for, AuditDetail, Plan};
use crate::args::Work;
use crate::report::{ScenarioReport, Status};
use crate::scenarios::ingest;
use crate::spawn::{Interrupt, Launch, SpawnedServer};

/// One injected fault and what became of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fault {
    /// What was done: `bit-flip`, `truncate`, `delete-file`, `sidecar`, `delete-object`,
    /// `replica-bit-flip`.
    pub kind: String,
    /// The OCFL object id (from its inventory).
    pub object: String,
    /// The file damaged, relative to the object root (none for a whole object).
    pub path: Option<String>,
    /// The root damaged: `primary` or `replica`.
    pub root: String,
    /// A finding names it.
    pub found: bool,
    /// That finding says it was repaired.
    pub repaired: bool,
    /// The file (or object) is back with its original bytes.
    pub restored: bool,
}

/// What the fault-injection step found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultRun {
    /// Objects in the primary root.
    pub objects: u64,
    /// Findings of the audit of the undamaged root (false positives; 0 expected).
    pub clean_findings: Option<u64>,
    /// The faults.
    pub faults: Vec<Fault>,
    /// Findings that match no injected fault.
    pub unexpected_findings: u64,
    /// Exit status of `arca fixity` after the damage (0: all repaired).
    pub fixity_exit: Option<i32>,
    /// Exit status of `arca replica verify` after the damage.
    pub verify_exit: Option<i32>,
    /// Seconds of the audit after the damage.
    pub fixity_seconds: f64,
    /// ocfl-py: objects valid / objects, primary.
    pub ocfl_py_primary: Option<(u64, u64)>,
    /// ocfl-py: objects valid / objects, replica.
    pub ocfl_py_replica: Option<(u64, u64)>,
}

/// Runs the step: its rows go to `emit`.
pub async fn faults(
    plan: &Plan,
    bin: &Path,
    interrupt: &Interrupt,
    emit: &mut impl FnMut(ScenarioReport),
) -> anyhow::Result<()> {
    std::fs::create_dir_all(&plan.parent)
        .with_context(|| format!("creating {}", plan.parent.display()))?;
    let dir = tempfile::Builder::new()
        .prefix("arca-bench-faults-")
        .tempdir_in(&plan.parent)
        .with_context(|| format!("creating a directory in {}", plan.parent.display()))?;
    let result = faults_in(plan, bin, dir.path(), interrupt, emit).await;
    let path = dir.keep();
    let _ = tokio::task::spawn_blocking(move || {
        crate::cleanup::remove_tree(&path, "the fault-injection roots");
    })
    .await;
    result
}

/// Objects the fault-injection root holds: a few thousand (the issue's "thousands"), fewer
/// when `--objects` is smaller.
fn fault_objects(plan: &Plan) -> u64 {
    plan.objects.min(2000)
}

async fn faults_in(
    plan: &Plan,
    bin: &Path,
    dir: &Path,
    interrupt: &Interrupt,
    emit: &mut impl FnMut(ScenarioReport),
) -> anyhow::Result<()> {
    let data = dir.join("data");
    let copy = dir.join("replica");
    std::fs::create_dir_all(&copy)?;
    let config = dir.join("arca.toml");
    std::fs::write(
        &config,
        format!(
            "[fixity]\nschedule = \"off\"\n\n[[replica]]\nname = \"bench-replica\"\npath = {}\n",
            super::serving::toml_string(&copy.display().to_string())
        ),
    )?;
    // The objects.
    let count = fault_objects(plan);
    eprintln!("==> faults: {count} objects on a server with a replica");
    let launch = Launch {
        data: Some(data.clone()),
        log: Some(plan.log("server-faults.log")),
        env: vec![("ARCA_FIXITY_SCHEDULE".into(), Some("off".into()))],
        config: Some(config.clone()),
    };
    let mut server = SpawnedServer::launch(bin, None, None, None, &launch, interrupt).await?;
    let built = async {
        let ctx = ctx_for(plan, &server, interrupt)?;
        let mut phase = plan.phase("audit-faults-ingest", Work::Ingest { with_binary: true });
        phase.duration = None;
        phase.count = Some(count);
        let target = ctx.target.clone().expect("a target");
        Ok::<_, anyhow::Error>(ingest(&ctx, &phase, target, true).await)
    }
    .await;
    server.stop().await;
    let row = built?;
    let ingested = row.summary.ok;
    emit(row);
    if ingested == 0 || interrupt.is_set() {
        return Ok(());
    }
    let mut run = FaultRun::default();
    let mut row = audit_row("audit-faults", AuditDetail::Faults(run.clone()));
    let arca = |args: &[&str]| {
        let mut cmd = tokio::process::Command::new(bin);
        cmd.env("ARCA_FIXITY_MAX_MB_PER_S", "0")
            .env("ARCA_FIXITY_THREADS", plan.threads.to_string())
            .args(args)
            .arg("--config")
            .arg(&config)
            .arg("--data")
            .arg(&data);
        cmd
    };
    // The replica filled.
    let log = plan.log("faults-replica-sync.log");
    let _ = std::fs::remove_file(&log);
    let t = run_tool(arca(&["replica", "sync"]), &log, interrupt).await?;
    if t.exit != Some(0) {
        return finish(
            row,
            run,
            format!(
                "arca replica sync failed (exit {:?}): {}",
                t.exit,
                tail(&log, 3)
            ),
            emit,
        );
    }
    // The undamaged root: no finding may come back.
    let clean = plan.log("faults-clean.json");
    let log = plan.log("faults-clean.log");
    let _ = std::fs::remove_file(&log);
    let mut cmd = arca(&["fixity"]);
    cmd.arg("--report").arg(&clean);
    let t = run_tool(cmd, &log, interrupt).await?;
    let clean_findings = findings(&clean);
    run.clean_findings = clean_findings.as_ref().map(|f| f.len() as u64);
    if t.exit != Some(0) || clean_findings.is_none() {
        return finish(
            row,
            run,
            format!(
                "arca fixity on the undamaged root: exit {:?}, {} findings: {}",
                t.exit,
                clean_findings.map_or("no report".into(), |f| f.len().to_string()),
                tail(&log, 3)
            ),
            emit,
        );
    }
    // The damage.
    let primary_root = super::root::ocfl_root(&data);
    let (primary, replica) = {
        let (p, r) = (primary_root.clone(), copy.clone());
        tokio::task::spawn_blocking(move || Ok::<_, std::io::Error>((list(&p)?, list(&r)?)))
            .await??
    };
    run.objects = primary.objects;
    if primary.object_dirs.len() < 6 || replica.object_dirs.is_empty() {
        return finish(
            row,
            run,
            format!(
                "too few objects to damage: {} in the primary, {} in the replica",
                primary.object_dirs.len(),
                replica.object_dirs.len()
            ),
            emit,
        );
    }
    let injected = {
        let (p, r) = (primary_root.clone(), copy.clone());
        let seed = plan.seed;
        tokio::task::spawn_blocking(move || inject(&p, &r, seed)).await??
    };
    // The audit of the primary (repairs from the replica), then the replica's verification
    // (repairs from the primary).
    let report = plan.log("faults-damaged.json");
    let log = plan.log("faults-damaged.log");
    let _ = std::fs::remove_file(&log);
    let mut cmd = arca(&["fixity"]);
    cmd.arg("--report").arg(&report);
    let started = Instant::now();
    let t = run_tool(cmd, &log, interrupt).await?;
    run.fixity_seconds = started.elapsed().as_secs_f64();
    run.fixity_exit = t.exit;
    let log = plan.log("faults-replica-verify.log");
    let _ = std::fs::remove_file(&log);
    let v = run_tool(arca(&["replica", "verify"]), &log, interrupt).await?;
    run.verify_exit = v.exit;
    let found = findings(&report).unwrap_or_default();
    let mut matched = vec![false; found.len()];
    for (fault, original) in injected {
        let mut f = fault;
        // Each damaged object holds one fault: a finding on it is a finding of that fault
        // (whichever file or kind it names: a deleted file may also show in the catalog).
        let mut all_repaired = true;
        for (i, finding) in found.iter().enumerate() {
            if finding["object"].as_str() == Some(&f.object) {
                matched[i] = true;
                f.found = true;
                all_repaired &= finding["repaired"].as_bool() == Some(true);
            }
        }
        f.repaired = f.found && all_repaired;
        // A replica's damage is found by `arca replica verify`, whose report the scenario
        // does not read: its repair shows in the bytes.
        f.restored = original.restored();
        if f.root == "replica" {
            f.found = v.exit == Some(0) && f.restored;
            f.repaired = f.found;
        }
        run.faults.push(f);
    }
    run.unexpected_findings = matched.iter().filter(|m| !**m).count() as u64;
    // ocfl-py over every object of both roots.
    if let Some(validator) = &plan.ocfl_validate {
        for (which, root) in [("primary", &primary_root), ("replica", &copy)] {
            let objects = {
                let r = root.clone();
                tokio::task::spawn_blocking(move || list(&r))
                    .await??
                    .object_dirs
            };
            let log = plan.log(&format!("faults-ocfl-py-{which}.log"));
            let _ = std::fs::remove_file(&log);
            let (_, valid) = ocfl_py(validator, &objects, &log, interrupt).await?;
            let pair = Some((valid, objects.len() as u64));
            if which == "primary" {
                run.ocfl_py_primary = pair;
            } else {
                run.ocfl_py_replica = pair;
            }
        }
    }
    let missed: Vec<String> = run
        .faults
        .iter()
        .filter(|f| !(f.found && f.repaired && f.restored))
        .map(|f| format!("{} ({})", f.kind, f.object))
        .collect();
    let invalid = [run.ocfl_py_primary, run.ocfl_py_replica]
        .iter()
        .flatten()
        .any(|(v, n)| v != n);
    let mut problems = Vec::new();
    if !missed.is_empty() {
        problems.push(format!(
            "not found, repaired and restored: {}",
            missed.join(", ")
        ));
    }
    if run.unexpected_findings > 0 {
        problems.push(format!(
            "{} findings match no injected fault",
            run.unexpected_findings
        ));
    }
    if run.fixity_exit != Some(0) || run.verify_exit != Some(0) {
        problems.push(format!(
            "exit status of arca fixity {:?}, of arca replica verify {:?} (0 expected: every \
             finding repaired)",
            run.fixity_exit, run.verify_exit
        ));
    }
    if invalid {
        problems.push("ocfl-py finds invalid objects afterwards".into());
    }
    if problems.is_empty() {
        row.audit = Some(AuditDetail::Faults(run));
        emit(row);
        Ok(())
    } else {
        finish(row, run, problems.join("; "), emit)
    }
}

fn finish(
    mut row: ScenarioReport,
    run: FaultRun,
    why: String,
    emit: &mut impl FnMut(ScenarioReport),
) -> anyhow::Result<()> {
    row.status = Status::Aborted;
    add_note(&mut row, why);
    row.audit = Some(AuditDetail::Faults(run));
    emit(row);
    Ok(())
}

/// The findings of a report file, `None` when it cannot be read.
fn findings(path: &Path) -> Option<Vec<serde_json::Value>> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    v.get("findings")?.as_array().cloned()
}

/// What a damaged thing held before, to check its repair.
enum Original {
    /// A file's digest.
    File(PathBuf, Vec<u8>),
    /// An object directory: its files' digests.
    Object(Vec<(PathBuf, Vec<u8>)>),
}

impl Original {
    fn of_file(path: &Path) -> std::io::Result<Original> {
        Ok(Original::File(path.to_path_buf(), digest(path)?))
    }

    fn restored(&self) -> bool {
        match self {
            Original::File(p, d) => digest(p).is_ok_and(|now| &now == d),
            Original::Object(files) => files
                .iter()
                .all(|(p, d)| digest(p).is_ok_and(|now| &now == d)),
        }
    }
}

fn digest(path: &Path) -> std::io::Result<Vec<u8>> {
    Ok(Sha512::digest(std::fs::read(path)?).to_vec())
}

/// Every regular file below `dir`.
fn files_below(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            files_below(&e.path(), out)?;
        } else {
            out.push(e.path());
        }
    }
    Ok(())
}

/// The id in an object's root inventory.
fn object_id(object: &Path) -> std::io::Result<String> {
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(object.join("inventory.json"))?)
            .map_err(std::io::Error::other)?;
    v["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| std::io::Error::other("an inventory without id"))
}

/// The largest content file of an object (the binary's bytes rather than its metadata).
fn content_file(object: &Path) -> std::io::Result<PathBuf> {
    let mut files = Vec::new();
    files_below(object, &mut files)?;
    files
        .into_iter()
        .filter(|f| f.components().any(|c| c.as_os_str() == "content"))
        .max_by_key(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .ok_or_else(|| std::io::Error::other(format!("no content in {}", object.display())))
}

/// Damages six objects (distinct, chosen by `seed`): five in `primary`, one in `replica`.
fn inject(primary: &Path, replica: &Path, seed: u64) -> anyhow::Result<Vec<(Fault, Original)>> {
    let mut objects = list(primary)?.object_dirs;
    objects.sort();
    // Objects with a binary's content: the ones whose largest content file is not metadata.
    let n = objects.len() as u64;
    let pick =
        |k: u64| -> &PathBuf { &objects[(crate::driver::mix(seed ^ (k * 0x9E37)) % n) as usize] };
    let mut chosen: Vec<&PathBuf> = Vec::new();
    let mut k = 0;
    while chosen.len() < 6 && k < 10_000 {
        let o = pick(k);
        k += 1;
        if !chosen.contains(&o) {
            chosen.push(o);
        }
    }
    anyhow::ensure!(chosen.len() == 6, "could not choose 6 distinct objects");
    let mut out = Vec::new();
    let rel = |object: &Path, file: &Path| {
        file.strip_prefix(object)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let fault =
        |kind: &str, object: &Path, path: Option<String>, root: &str| -> anyhow::Result<Fault> {
            Ok(Fault {
                kind: kind.into(),
                object: object_id(object)?,
                path,
                root: root.into(),
                ..Default::default()
            })
        };
    // 1. One bit flipped in a content file.
    let o = chosen[0];
    let f = content_file(o)?;
    let original = Original::of_file(&f)?;
    flip_bit(&f)?;
    out.push((fault("bit-flip", o, Some(rel(o, &f)), "primary")?, original));
    // 2. A content file truncated to half.
    let o = chosen[1];
    let f = content_file(o)?;
    let original = Original::of_file(&f)?;
    let len = std::fs::metadata(&f)?.len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&f)?
        .set_len(len / 2)?;
    out.push((fault("truncate", o, Some(rel(o, &f)), "primary")?, original));
    // 3. A content file deleted.
    let o = chosen[2];
    let f = content_file(o)?;
    let original = Original::of_file(&f)?;
    std::fs::remove_file(&f)?;
    out.push((
        fault("delete-file", o, Some(rel(o, &f)), "primary")?,
        original,
    ));
    // 4. An inventory's sidecar replaced by one with another digest.
    let o = chosen[3];
    let sidecar = ["inventory.json.sha512", "inventory.json.sha256"]
        .iter()
        .map(|s| o.join(s))
        .find(|p| p.is_file())
        .context("an object without sidecar")?;
    let original = Original::of_file(&sidecar)?;
    let text = std::fs::read_to_string(&sidecar)?;
    let (digest_hex, rest) = text.split_once(char::is_whitespace).unwrap_or((&text, ""));
    let wrong: String = digest_hex
        .chars()
        .map(|c| if c == '0' { '1' } else { '0' })
        .collect();
    std::fs::write(&sidecar, format!("{wrong} {}", rest.trim_start()))?;
    out.push((
        fault("sidecar", o, Some(rel(o, &sidecar)), "primary")?,
        original,
    ));
    // 5. A whole object directory deleted.
    let o = chosen[4];
    let id = object_id(o)?;
    let mut files = Vec::new();
    files_below(o, &mut files)?;
    let digests = files
        .iter()
        .map(|f| Ok((f.clone(), digest(f)?)))
        .collect::<std::io::Result<Vec<_>>>()?;
    std::fs::remove_dir_all(o)?;
    out.push((
        Fault {
            kind: "delete-object".into(),
            object: id,
            root: "primary".into(),
            ..Default::default()
        },
        Original::Object(digests),
    ));
    // 6. The replica's copy of another object damaged.
    let o = chosen[5];
    let relative = o.strip_prefix(primary)?;
    let in_replica = replica.join(relative);
    let f = content_file(&in_replica)?;
    let original = Original::of_file(&f)?;
    flip_bit(&f)?;
    out.push((
        fault(
            "replica-bit-flip",
            &in_replica,
            Some(rel(&in_replica, &f)),
            "replica",
        )?,
        original,
    ));
    crate::procfs::sync_all();
    Ok(out)
}

/// Flips the lowest bit of the middle byte of `path` (in place, same size).
fn flip_bit(path: &Path) -> std::io::Result<()> {
    let mut bytes = std::fs::read(path)?;
    if bytes.is_empty() {
        return Err(std::io::Error::other(format!(
            "{} is empty",
            path.display()
        )));
    }
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    std::fs::write(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(root: &Path, rel: &str, id: &str, content: &[(&str, usize)]) -> PathBuf {
        let o = root.join(rel);
        std::fs::create_dir_all(&o).unwrap();
        std::fs::write(o.join("0=ocfl_object_1.1"), "ocfl_object_1.1\n").unwrap();
        std::fs::write(o.join("inventory.json"), format!("{{\"id\": \"{id}\"}}")).unwrap();
        std::fs::write(o.join("inventory.json.sha512"), "abc0 inventory.json\n").unwrap();
        for (name, len) in content {
            let p = o.join("v1/content").join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, vec![b'x'; *len]).unwrap();
        }
        o
    }

    #[test]
    fn six_faults_in_six_objects_and_repairs_are_recognised() {
        let d = tempfile::tempdir().unwrap();
        let (primary, replica) = (d.path().join("p"), d.path().join("r"));
        for i in 0..8 {
            let rel = format!("o{i}");
            let content = [(".fcrepo/fcr-root.json", 10), ("file", 100 + i)];
            object(&primary, &rel, &format!("info:fedora/{i}"), &content);
            object(&replica, &rel, &format!("info:fedora/{i}"), &content);
        }
        let faults = inject(&primary, &replica, 7).unwrap();
        let kinds: Vec<&str> = faults.iter().map(|f| f.0.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "bit-flip",
                "truncate",
                "delete-file",
                "sidecar",
                "delete-object",
                "replica-bit-flip"
            ]
        );
        let mut objects: Vec<&str> = faults.iter().map(|f| f.0.object.as_str()).collect();
        objects.sort();
        objects.dedup();
        assert_eq!(objects.len(), 6, "six distinct objects");
        // The largest content file is the one damaged, named relative to its object.
        assert_eq!(faults[0].0.path.as_deref(), Some("v1/content/file"));
        assert_eq!(faults[3].0.path.as_deref(), Some("inventory.json.sha512"));
        assert_eq!(faults[4].0.path, None);
        // Nothing is restored yet.
        for (f, original) in &faults {
            let root = if f.root == "replica" {
                &replica
            } else {
                &primary
            };
            assert!(!original.restored(), "{} in {}", f.kind, root.display());
        }
        assert_eq!(list(&primary).unwrap().objects, 7);
        // The flipped bit flipped back: the file counts as restored.
        if let Original::File(p, _) = &faults[0].1 {
            flip_bit(p).unwrap();
        }
        assert!(faults[0].1.restored());
    }
}
