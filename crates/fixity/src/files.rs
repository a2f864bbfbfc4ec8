//! Small files of the data directory (reports, checkpoints): written durably, and set aside
//! when they do not parse.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Writes `bytes` to `path` durably: a synced temporary file beside it, renamed over the old
/// one, the directory synced.
pub(crate) fn write_durably(path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |e| Error::Io(path.to_path_buf(), e);
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(io)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut file = File::create(&temp).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)?;
    drop(file);
    fs::rename(&temp, path).map_err(io)?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
    Ok(())
}

/// Renames the unreadable file `path` to `<path>.corrupt` (replacing an older one) and logs
/// why, so that the run starts over without losing the evidence.
pub(crate) fn set_aside(path: &Path, why: &dyn std::fmt::Display) -> Result<PathBuf> {
    let mut aside = path.as_os_str().to_owned();
    aside.push(".corrupt");
    let aside = PathBuf::from(aside);
    fs::rename(path, &aside).map_err(|e| Error::Io(path.to_path_buf(), e))?;
    tracing::warn!(
        file = %path.display(),
        moved_to = %aside.display(),
        "unreadable file set aside: {why}"
    );
    Ok(aside)
}
