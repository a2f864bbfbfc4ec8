//! Small filesystem helpers shared by the OCFL writer and the upload path.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Creates `path` (which must not exist) and writes `bytes` to it. Durability comes from
/// the caller's later [`crate::GroupCommit::barrier`].
pub fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).create_new(true).open(path)?;
    f.write_all(bytes)
}

/// Fsyncs a directory so that entries created or renamed in it are durable.
pub fn sync_dir(path: &Path) -> io::Result<()> {
    File::open(path)?.sync_all()
}

/// Removes empty parent directories of `start` upwards, stopping at `stop` (exclusive).
pub fn remove_empty_parents(start: &Path, stop: &Path) {
    let mut cur = start.parent();
    while let Some(dir) = cur {
        if dir == stop || !dir.starts_with(stop) {
            break;
        }
        if fs::remove_dir(dir).is_err() {
            break;
        }
        cur = dir.parent();
    }
}
