//! What an audit found: one [`Finding`] per damaged, missing or inconsistent thing, a
//! [`Report`] per run, and the history of runs kept in the data directory ([`Reports`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::{set_aside, write_durably};
use crate::{Error, Result};

/// What is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// A content file's bytes do not have the digest its manifest records.
    ContentDigest,
    /// A content file's bytes do not have a digest the inventory's `fixity` block records
    /// (md5, sha1, …).
    FixityDigest,
    /// A content file the manifest names is not there.
    ContentMissing,
    /// A content file could not be read (an I/O error other than its absence).
    ContentUnreadable,
    /// A file in a version's `content/` (or the mutable HEAD's) that no manifest names.
    UnexpectedFile,
    /// An inventory's bytes do not have the digest its sidecar records.
    InventorySidecar,
    /// An inventory (root, version or mutable HEAD) or its sidecar is missing.
    InventoryMissing,
    /// An inventory is not valid JSON of an OCFL inventory, or names an unknown algorithm.
    InventoryInvalid,
    /// A version directory's inventory differs from what the root inventory says of the
    /// versions up to it.
    InventoryDiverges,
    /// An object the catalog knows has no directory (or no root inventory) in storage.
    ObjectMissing,
    /// The catalog's record of a resource (digests, size, versions) differs from storage.
    CatalogMismatch,
}

/// One thing an audit found wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The OCFL object id as in its inventory, e.g. `info:fedora/a/b`.
    pub object: String,
    /// The version (`v3`), where the finding is about one.
    pub version: Option<String>,
    /// The logical path in the object's state, where one names the file.
    pub logical_path: Option<String>,
    /// The file's path relative to the object root (`v1/content/x`, `v2/inventory.json`).
    pub content_path: Option<String>,
    /// What is wrong.
    pub kind: FindingKind,
    /// What the inventory (or catalog) records: a digest with its algorithm
    /// (`sha512:ab…`), a size, a version list.
    pub expected: Option<String>,
    /// What storage holds instead (`None` for a missing file).
    pub actual: Option<String>,
    /// Whether it was repaired (from a replica, or the primary for a replica).
    pub repaired: bool,
    /// In words, for people and logs.
    pub message: String,
}

/// One audit run of one root.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The run's id (its start time, sortable: `20261129T091500Z`).
    pub id: String,
    /// The root audited: `primary`, or a replica's name.
    pub root: String,
    /// When it started and ended (RFC 3339, UTC).
    pub started: String,
    /// `None` while running.
    pub finished: Option<String>,
    /// Every object was checked (false: stopped; a resumed run continues it).
    pub complete: bool,
    /// Objects, files and bytes checked.
    pub objects: u64,
    /// Files read and hashed.
    pub files: u64,
    /// Bytes read and hashed.
    pub bytes: u64,
    /// Findings repaired.
    pub repaired: u64,
    /// Everything found wrong, repaired or not.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Findings not repaired: damage that remains.
    pub fn unrepaired(&self) -> usize {
        self.findings.iter().filter(|f| !f.repaired).count()
    }
}

/// The reports of past runs, one JSON file each in a directory of the data directory
/// (`<data>/fixity/reports/<id>.json`), newest last. A file that does not parse is set
/// aside (renamed `*.corrupt`) and left out.
#[derive(Debug, Clone)]
pub struct Reports {
    dir: PathBuf,
}

impl Reports {
    /// The reports kept in `dir` (created when missing).
    pub fn open(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::Io(dir.to_path_buf(), e))?;
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    /// The directory the reports are kept in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file holding the report `id`.
    pub fn path_of(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Writes `report` (durably: a synced temporary file renamed over the old one).
    pub fn save(&self, report: &Report) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(report).expect("a report always serializes");
        write_durably(&self.path_of(&report.id), &bytes)
    }

    /// The newest `limit` reports, newest first.
    pub fn recent(&self, limit: usize) -> Result<Vec<Report>> {
        let io = |e| Error::Io(self.dir.clone(), e);
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .map_err(io)?
            .filter_map(|entry| entry.ok())
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|name| name.ends_with(".json") && !name.starts_with('.'))
            .collect();
        names.sort_unstable_by(|a, b| b.cmp(a));
        let mut out = Vec::new();
        for name in names {
            if out.len() == limit {
                break;
            }
            let path = self.dir.join(&name);
            let bytes = match std::fs::read(&path) {
                Ok(bytes) => bytes,
                // Removed meanwhile (history pruned by hand).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::Io(path, e)),
            };
            match serde_json::from_slice::<Report>(&bytes) {
                Ok(report) => out.push(report),
                Err(e) => {
                    set_aside(&path, &e)?;
                }
            }
        }
        Ok(out)
    }

    /// The newest report, if any.
    pub fn latest(&self) -> Result<Option<Report>> {
        Ok(self.recent(1)?.into_iter().next())
    }
}

/// A new report id for a run starting at `at`: the instant, sortable
/// (`20261129T091500.123Z`).
pub fn report_id(at: arca_model::Timestamp) -> String {
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}.{:03}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.millisecond()
    )
}
