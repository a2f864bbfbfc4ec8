//! `arca import fedora3 --verify`: an imported root re-read against its source.
//!
//! Each source object is mapped again, exactly as the import maps it, into a throw-away
//! object in the staging area; its inventory is compared with the imported object's,
//! version by version (dates and the digest of every file), and every content file of the
//! imported object is hashed again and compared with its manifest entry. So a difference
//! in any byte of any version of any datastream, in the source or in storage, is found.

use std::sync::Arc;

use arca_ocfl::Inventory;
use arca_repository::Repository;
use rayon::prelude::*;
use serde::Serialize;

use crate::mapping::{imported_fingerprint, map_object, object_id, MapOptions};
use crate::source::ObjectEntry;

/// The verification of one object.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectVerification {
    /// The PID, when the FOXML could be read.
    pub pid: Option<String>,
    /// The FOXML file.
    pub source: std::path::PathBuf,
    /// Every difference found (empty: the object is as the source says).
    pub differences: Vec<String>,
}

/// Verifies every object of `objects` against what `repo` holds.
pub async fn verify(
    repo: Arc<Repository>,
    objects: Vec<ObjectEntry>,
    user: String,
    threads: usize,
) -> anyhow::Result<Vec<ObjectVerification>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()?;
    let out = tokio::task::spawn_blocking(move || {
        pool.install(|| {
            objects
                .par_iter()
                .map(|entry| verify_one(&repo, entry, &user))
                .collect::<Vec<_>>()
        })
    })
    .await?;
    Ok(out)
}

fn verify_one(repo: &Repository, entry: &ObjectEntry, user: &str) -> ObjectVerification {
    let mut v = ObjectVerification {
        pid: None,
        source: entry.foxml.clone(),
        differences: Vec::new(),
    };
    if let Err(e) = compare(repo, entry, user, &mut v) {
        v.differences.push(e);
    }
    v
}

fn compare(
    repo: &Repository,
    entry: &ObjectEntry,
    user: &str,
    v: &mut ObjectVerification,
) -> Result<(), String> {
    let bytes = std::fs::read(&entry.foxml).map_err(|e| format!("cannot read the FOXML: {e}"))?;
    let object = crate::foxml::parse(&bytes).map_err(|e| e.to_string())?;
    v.pid = Some(object.pid.clone());
    let ocfl = repo.ocfl();
    let Some(imported) = ocfl
        .read_object(&object_id(&object.pid))
        .map_err(|e| e.to_string())?
    else {
        return Err("not in the repository".into());
    };
    let fingerprint = imported_fingerprint(&imported.inventory)
        .unwrap_or_default()
        .to_string();
    let options = MapOptions {
        user: user.to_string(),
        staging: repo.uploads_dir(),
        algorithm: imported
            .inventory
            .content_digest()
            .map_err(|e| e.to_string())?,
        fingerprint,
    };
    let resolve = |r: &str| entry.resolver.resolve(r).ok();
    let mapped = map_object(&object, &resolve, &options).map_err(|e| e.to_string())?;
    let expected = ocfl
        .build_object(&mapped.ocfl_id, mapped.versions)
        .map_err(|e| format!("cannot map the source again: {e}"))?;
    compare_inventories(&expected.inventory, &imported.inventory, &mut v.differences);
    for (digest, paths) in &imported.inventory.manifest {
        for path in paths {
            let key = imported.key(path);
            let digested = ocfl
                .read_range(&key, 0..u64::MAX)
                .map_err(std::io::Error::other)
                .and_then(|mut r| arca_repository::digest_reader(&mut r, &[options.algorithm]));
            match digested.map(|(_, d)| d.into_iter().next().map(|d| d.hex).unwrap_or_default()) {
                Ok(actual) if actual.eq_ignore_ascii_case(digest) => {}
                Ok(actual) => v.differences.push(format!(
                    "{path}: stored bytes have digest {actual}, the inventory says {digest}"
                )),
                Err(e) => v.differences.push(format!("{path}: cannot be read: {e}")),
            }
        }
    }
    Ok(())
}

/// Every difference between the versions of two inventories: count, dates, and the
/// digest of each logical path in each version.
fn compare_inventories(expected: &Inventory, actual: &Inventory, out: &mut Vec<String>) {
    if expected.versions.len() != actual.versions.len() {
        out.push(format!(
            "{} versions in storage, the source makes {}",
            actual.versions.len(),
            expected.versions.len()
        ));
    }
    for ((num, e), (_, a)) in expected.versions.iter().zip(actual.versions.iter()) {
        if e.created != a.created {
            out.push(format!(
                "{num}: created {} in storage, {} from the source",
                a.created, e.created
            ));
        }
        let state = |v: &arca_ocfl::Version| {
            let mut m = std::collections::BTreeMap::new();
            for (digest, paths) in &v.state {
                for p in paths {
                    m.insert(p.clone(), digest.to_ascii_lowercase());
                }
            }
            m
        };
        let (es, as_) = (state(e), state(a));
        for (path, digest) in &es {
            match as_.get(path) {
                None => out.push(format!("{num}: {path} is missing from storage")),
                Some(d) if d != digest => out.push(format!(
                    "{num}: {path} differs (storage {d}, source {digest})"
                )),
                Some(_) => {}
            }
        }
        for path in as_.keys().filter(|p| !es.contains_key(*p)) {
            out.push(format!("{num}: {path} is in storage but not in the source"));
        }
    }
}
