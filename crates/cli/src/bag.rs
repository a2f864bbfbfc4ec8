//! BagIt 1.0 bags around an exported storage root (`arca export --bag`) and their
//! verification before an import: `bagit.txt`, `manifest-sha512.txt` (every payload file
//! under `data/`), `bag-info.txt`, `tagmanifest-sha512.txt` (the three tag files).

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::Context;
use arca_model::{DigestAlgorithm, MultiHasher};

const BAGIT_TXT: &str = "bagit.txt";
const MANIFEST: &str = "manifest-sha512.txt";
const BAG_INFO: &str = "bag-info.txt";
const TAG_MANIFEST: &str = "tagmanifest-sha512.txt";
/// The payload directory of a bag.
pub const PAYLOAD: &str = "data";

/// Whether `dir` is a bag (holds a `bagit.txt`).
pub fn is_bag(dir: &Path) -> bool {
    dir.join(BAGIT_TXT).is_file()
}

/// One file below a directory: its `/`-separated path relative to it, where it is, and
/// whether it is a symbolic link (never followed).
pub struct Entry {
    /// Relative path, `/`-separated.
    pub rel: String,
    /// The file.
    pub path: PathBuf,
    /// A symbolic link (to anything).
    pub symlink: bool,
}

/// Every file and symbolic link below `dir`, in byte order of the relative path; links to
/// directories are listed, not walked.
pub fn files_below(dir: &Path) -> anyhow::Result<Vec<Entry>> {
    let mut out = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, rel)) = pending.pop() {
        for entry in
            fs::read_dir(&path).with_context(|| format!("cannot read {}", path.display()))?
        {
            let entry = entry.with_context(|| format!("cannot read {}", path.display()))?;
            let name = entry.file_name().into_string().map_err(|n| {
                anyhow::anyhow!("{}: a file name that is not UTF-8: {n:?}", path.display())
            })?;
            let child_rel = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push((entry.path(), child_rel));
            } else {
                out.push(Entry {
                    rel: child_rel,
                    path: entry.path(),
                    symlink: kind.is_symlink(),
                });
            }
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

/// The sha512 digest (lowercase hex) and size of the file at `path`, streamed.
fn sha512_of(path: &Path) -> anyhow::Result<(String, u64)> {
    let mut file =
        fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut hasher = MultiHasher::new(&[DigestAlgorithm::Sha512]);
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = file
            .read(&mut buf)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let size = hasher.len();
    let digest = hasher.finish().pop().expect("one algorithm").hex;
    Ok((digest, size))
}

/// A path as a manifest line spells it (BagIt 1.0 §2.1.3: `%`, CR and LF percent-encoded).
fn encode(path: &str) -> String {
    path.replace('%', "%25")
        .replace('\n', "%0A")
        .replace('\r', "%0D")
}

/// The path a manifest line names.
fn decode(path: &str) -> String {
    path.replace("%0A", "\n")
        .replace("%0a", "\n")
        .replace("%0D", "\r")
        .replace("%0d", "\r")
        .replace("%25", "%")
}

/// Writes the tag files that make `bag` (whose `data/` holds the payload) a BagIt 1.0 bag.
pub fn write(bag: &Path) -> anyhow::Result<()> {
    let mut manifest = String::new();
    let (mut bytes, mut count) = (0u64, 0u64);
    for entry in files_below(&bag.join(PAYLOAD))? {
        let (digest, size) = sha512_of(&entry.path)?;
        manifest.push_str(&format!("{digest}  {PAYLOAD}/{}\n", encode(&entry.rel)));
        bytes += size;
        count += 1;
    }
    let info = format!(
        "Bag-Software-Agent: arca {}\nBagging-Date: {}\nPayload-Oxum: {bytes}.{count}\n",
        env!("CARGO_PKG_VERSION"),
        arca_model::now().date()
    );
    let mut tags = String::new();
    for (name, text) in [
        (
            BAGIT_TXT,
            "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n".to_string(),
        ),
        (BAG_INFO, info),
        (MANIFEST, manifest),
    ] {
        let path = bag.join(name);
        fs::write(&path, &text).with_context(|| format!("cannot write {}", path.display()))?;
        tags.push_str(&format!(
            "{}  {name}\n",
            MultiHasher::digest(DigestAlgorithm::Sha512, text.as_bytes())
        ));
    }
    let path = bag.join(TAG_MANIFEST);
    fs::write(&path, tags).with_context(|| format!("cannot write {}", path.display()))
}

/// Why a bag is refused: the file named and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("bag refused: {0}")]
pub struct Refused(pub String);

/// Verifies the bag `bag` whole before anything of it is read: its declaration, the tag
/// manifest (if any) against the tag files, and the manifest against the payload — every
/// file it names present and matching, every payload file named, no path leaving the bag
/// and no symbolic link. Returns the payload directory.
///
/// # Errors
/// [`Refused`] naming the file at fault; other errors when the bag cannot be read.
pub fn verify(bag: &Path) -> anyhow::Result<PathBuf> {
    let declaration = fs::read_to_string(bag.join(BAGIT_TXT))?;
    if !declaration.lines().any(|l| l.starts_with("BagIt-Version:")) {
        return Err(Refused(format!("{BAGIT_TXT}: no BagIt-Version")).into());
    }
    if bag.join(TAG_MANIFEST).is_file() {
        check_manifest(bag, TAG_MANIFEST)?;
    }
    if !bag.join(MANIFEST).is_file() {
        return Err(Refused(format!("{MANIFEST}: missing (arca reads sha512 bags)")).into());
    }
    let mut named = check_manifest(bag, MANIFEST)?;
    for entry in files_below(&bag.join(PAYLOAD))? {
        let rel = format!("{PAYLOAD}/{}", entry.rel);
        if entry.symlink {
            return Err(Refused(format!("{rel}: a symbolic link")).into());
        }
        if !named.remove(&rel) {
            return Err(Refused(format!("{rel}: not in {MANIFEST}")).into());
        }
    }
    Ok(bag.join(PAYLOAD))
}

/// Checks every line of the manifest `name` of `bag`; returns the paths it names.
fn check_manifest(bag: &Path, name: &str) -> anyhow::Result<BTreeSet<String>> {
    let text = fs::read_to_string(bag.join(name))
        .with_context(|| format!("cannot read {}", bag.join(name).display()))?;
    let mut named = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Some((digest, path)) = line.split_once(char::is_whitespace) else {
            return Err(Refused(format!("{name}: malformed line {line:?}")).into());
        };
        let rel = decode(path.trim_start());
        let safe = !rel.starts_with('/')
            && rel
                .split('/')
                .all(|s| !s.is_empty() && s != "." && s != "..");
        if !safe {
            return Err(Refused(format!("{name}: {rel:?} is outside the bag")).into());
        }
        let file = bag.join(&rel);
        match fs::symlink_metadata(&file) {
            Ok(m) if m.is_file() => {}
            Ok(_) => return Err(Refused(format!("{rel}: not a regular file")).into()),
            Err(_) => return Err(Refused(format!("{rel}: in {name}, but missing")).into()),
        }
        let (actual, _) = sha512_of(&file)?;
        if !actual.eq_ignore_ascii_case(digest) {
            return Err(Refused(format!(
                "{rel}: its sha512 is {actual}, {name} records {digest}"
            ))
            .into());
        }
        named.insert(rel);
    }
    Ok(named)
}
