//! Where an interrupted audit stands, saved as objects complete so that `--resume` (or the
//! next start of the server) continues it: the report so far and the position in the walk.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::report::Report;
use crate::Result;

/// What a checkpoint holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointState {
    /// The report so far.
    pub report: Report,
    /// Every object whose root key sorts at or before this is done.
    pub after: Option<String>,
    /// The catalog's objects checked for presence up to this id (the second pass).
    pub catalog_after: Option<String>,
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
        todo!("H1: {:?}", self.path)
    }

    /// Saves `state` durably (a synced temporary file renamed over the old one).
    pub fn save(&self, state: &CheckpointState) -> Result<()> {
        todo!("H1: {state:?}")
    }

    /// Removes the checkpoint (a run that completed).
    pub fn clear(&self) -> Result<()> {
        todo!("H1")
    }
}
