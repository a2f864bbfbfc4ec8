//! Extracted text kept on disk per content digest.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Extracted text kept per content digest, so that each distinct content is extracted once
/// (repositories hold many copies of the same file, and a reindex then needs no extraction).
///
/// Layout: `<dir>/<algorithm>/<ab>/<cd>/<hex>` holds the text (UTF-8) of the content whose digest
/// is `<algorithm>:<hex>` (`ab` and `cd` being the first four hex digits); `<hex>.failed` next to
/// it holds the reason a failure was recorded for. Entries are written to a temporary file in the
/// same directory and renamed into place, without `fsync`: it is a cache, and a lost entry is
/// extracted again. A text entry replaces a failure and the other way round.
///
/// Failures are kept whatever the limits they happened under; after raising the limits (memory,
/// time), call [`TextCache::forget_failures`] so that they are tried again.
///
/// Digests are `<algorithm>:<hex>`: the algorithm is a letter then letters, digits or `-` (at most
/// 32; compared case-insensitively), the hex part 8 to 256 hex digits (case-insensitive). Nothing
/// else is accepted, so a digest can never name a path outside the directory.
#[derive(Debug, Clone)]
pub struct TextCache {
    dir: PathBuf,
}

/// Suffix of the files that record a failure.
const FAILED: &str = ".failed";

/// Makes temporary names unique within the process (the process id makes them unique across).
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Where one digest's entries live.
struct Entry {
    dir: PathBuf,
    text: PathBuf,
    failed: PathBuf,
    hex: String,
}

impl TextCache {
    /// Opens (creating it if need be) the cache in `dir`.
    pub fn open(dir: &Path) -> io::Result<Self> {
        fs::create_dir_all(dir)?;
        Ok(TextCache {
            dir: dir.to_owned(),
        })
    }

    /// The directory the cache lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cached text (`Ok`) or failure reason (`Err`) for `digest`; `None` if there is none, if
    /// the entry cannot be read, or if `digest` is not valid.
    pub fn get(&self, digest: &str) -> Option<Result<String, String>> {
        let entry = self.entry(digest).ok()?;
        match fs::read(&entry.text) {
            Ok(bytes) => return String::from_utf8(bytes).ok().map(Ok),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::debug!(digest, error = %e, "cannot read cached text");
                return None;
            }
        }
        match fs::read(&entry.failed) {
            Ok(bytes) => Some(Err(String::from_utf8_lossy(&bytes).into_owned())),
            Err(_) => None,
        }
    }

    /// Records the text (`Ok`) or the failure reason (`Err`) for `digest`, replacing whatever was
    /// there. Fails with [`io::ErrorKind::InvalidInput`] if `digest` is not valid.
    pub fn put(&self, digest: &str, result: &Result<String, String>) -> io::Result<()> {
        let entry = self.entry(digest)?;
        let (path, content, stale) = match result {
            Ok(text) => (&entry.text, text, &entry.failed),
            Err(reason) => (&entry.failed, reason, &entry.text),
        };
        match write_atomically(&entry, path, content.as_bytes()) {
            // The directory went away under us (a concurrent `clear`): once more.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                write_atomically(&entry, path, content.as_bytes())?
            }
            other => other?,
        }
        remove_if_present(stale)
    }

    /// Removes every entry.
    pub fn clear(&self) -> io::Result<()> {
        for child in fs::read_dir(&self.dir)? {
            let child = child?;
            if child.file_type()?.is_dir() {
                remove_dir_if_present(&child.path())?;
            } else {
                remove_if_present(&child.path())?;
            }
        }
        Ok(())
    }

    /// Removes every recorded failure (e.g. after raising the limits), keeping the texts.
    pub fn forget_failures(&self) -> io::Result<()> {
        forget_failures_in(&self.dir)
    }

    /// The paths for `digest`, or `InvalidInput`.
    fn entry(&self, digest: &str) -> io::Result<Entry> {
        let invalid = || {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("not a content digest (<algorithm>:<hex>): {digest:?}"),
            )
        };
        let (algorithm, hex) = digest.split_once(':').ok_or_else(invalid)?;
        let algorithm_ok = (1..=32).contains(&algorithm.len())
            && algorithm.starts_with(|c: char| c.is_ascii_alphabetic())
            && algorithm
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-');
        let hex_ok = (8..=256).contains(&hex.len()) && hex.chars().all(|c| c.is_ascii_hexdigit());
        if !algorithm_ok || !hex_ok {
            return Err(invalid());
        }
        let algorithm = algorithm.to_ascii_lowercase();
        let hex = hex.to_ascii_lowercase();
        let dir = self.dir.join(algorithm).join(&hex[0..2]).join(&hex[2..4]);
        Ok(Entry {
            text: dir.join(&hex),
            failed: dir.join(format!("{hex}{FAILED}")),
            dir,
            hex,
        })
    }
}

/// Writes `content` to a temporary file in the entry's directory, then renames it to `path`.
fn write_atomically(entry: &Entry, path: &Path, content: &[u8]) -> io::Result<()> {
    fs::create_dir_all(&entry.dir)?;
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = entry
        .dir
        .join(format!(".{}.{}.{n}.tmp", entry.hex, std::process::id()));
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .and_then(|mut file| file.write_all(content))
        .and_then(|()| fs::rename(&temp, path));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn remove_dir_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn forget_failures_in(dir: &Path) -> io::Result<()> {
    for child in fs::read_dir(dir)? {
        let child = child?;
        let path = child.path();
        if child.file_type()?.is_dir() {
            forget_failures_in(&path)?;
        } else if path.to_string_lossy().ends_with(FAILED) {
            remove_if_present(&path)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_map_to_sharded_paths() {
        let cache = TextCache {
            dir: PathBuf::from("/c"),
        };
        let entry = cache.entry("SHA512:ABCDEF0123").unwrap();
        assert_eq!(entry.text, Path::new("/c/sha512/ab/cd/abcdef0123"));
        assert_eq!(entry.failed, Path::new("/c/sha512/ab/cd/abcdef0123.failed"));
        for bad in [
            "abcdef0123",
            ":abcdef0123",
            "sha512:",
            "sha512:abc",
            "sha512:abcdef01/../x",
            "../x:abcdef0123",
            "sha/512:abcdef0123",
            "sha512:abcdefgh01",
            "1sha:abcdef0123",
            "sha512:abcdef0123:00",
        ] {
            let err = cache.entry(bad).err().expect(bad);
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad}");
        }
    }
}
