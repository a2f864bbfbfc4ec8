//! Where an interrupted audit stands, saved as objects complete so that `--resume` (or the
//! next start of the server) continues it: the report so far and the position in the walk.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::{set_aside, write_durably};
use crate::report::Report;
use crate::{Error, Result};

/// What a checkpoint holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointState {
    /// The report so far.
    pub report: Report,
    /// Every object whose root key sorts at or before this is done.
    pub after: Option<String>,
    /// The catalog's objects checked for presence up to this id (the second pass).
    pub catalog_after: Option<String>,
    /// The first pass (the walk of storage) is complete.
    #[serde(default)]
    pub walked: bool,
}

/// The checkpoint file of one root's audit (`<data>/fixity/checkpoint-<root>.json`).
#[derive(Debug, Clone)]
pub struct Checkpoint {
    path: PathBuf,
}

impl Checkpoint {
    /// The checkpoint kept at `path`.
    pub fn at(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
        }
    }

    /// The saved state; `None` when there is none, or when the file is corrupt (it is then
    /// set aside as `*.corrupt`, logged, and the run starts over).
    pub fn load(&self) -> Result<Option<CheckpointState>> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::Io(self.path.clone(), e)),
        };
        match serde_json::from_slice(&bytes) {
            Ok(state) => Ok(Some(state)),
            Err(e) => {
                set_aside(&self.path, &e)?;
                Ok(None)
            }
        }
    }

    /// Saves `state` durably (a synced temporary file renamed over the old one).
    pub fn save(&self, state: &CheckpointState) -> Result<()> {
        let bytes = serde_json::to_vec(state).expect("a checkpoint always serializes");
        write_durably(&self.path, &bytes)
    }

    /// Removes the checkpoint (a run that completed).
    pub fn clear(&self) -> Result<()> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::Io(self.path.clone(), e)),
        }
    }

    /// Where it is kept.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
