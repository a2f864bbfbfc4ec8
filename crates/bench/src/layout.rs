//! What arca writes to the file system for one ingested object, in Fedora 6's layout,
//! reproduced without arca: the work of one raw-layout transaction (see [`crate::raw`]).
//!
//! An object of the ingest scenarios is a container (`POST`) and, unless object-only, a binary
//! (`PUT {container}/file`) — in Fedora's layout an OCFL object of its own. arca gives each
//! object a directory under layout 0004 (the SHA-256 of its OCFL id, three tuples of three hex
//! digits, then the whole digest) holding:
//!
//! ```text
//! container  info:fedora/<uuid>                 binary  info:fedora/<uuid>/file
//! 0=ocfl_object_1.1                  16 B      0=ocfl_object_1.1                          16 B
//! v1/inventory.json                1009 B      v1/inventory.json                        1648 B
//! v1/inventory.json.sha512          145 B      v1/inventory.json.sha512                  145 B
//! inventory.json             hard link to v1/  inventory.json                 hard link to v1/
//! inventory.json.sha512      hard link to v1/  inventory.json.sha512          hard link to v1/
//! v1/content/.fcrepo/fcr-root.json  682 B      v1/content/file                   the payload
//! v1/content/fcr-container.nt         0 B      v1/content/file~fcr-desc.nt                 0 B
//!                                              v1/content/.fcrepo/fcr-root.json  761 B + digits
//!                                              v1/content/.fcrepo/fcr-root~fcr-desc.json  772 B
//! ```
//!
//! Directories: the three tuple levels (the first one shared once the root holds a few
//! thousand objects), the object, `v1`, `v1/content`, `v1/content/.fcrepo`. An empty binary
//! has no `file~fcr-desc.nt` (its content has the same digest as the binary's, stored once)
//! and a 1352-byte inventory. The sizes are those arca writes for the bench's requests (ids
//! of 36-character UUIDs); `crates/cli/tests/it/bench.rs` compares this tree with a real arca's.
//!
//! The operations are arca's (`OcflRoot::publish`, seen with strace), in its order: every file
//! is created with `O_CREAT | O_EXCL`, written and closed, without fsync; when its directory
//! is missing the create fails, `create_dir_all` makes the chain, and the create is repeated;
//! the root inventory and sidecar are hard links to `v1`'s. A binary of more than 1 MiB is
//! first streamed into `staging/uploads/`, fsynced together with that directory (the journal
//! refers to the upload instead of holding its bytes), then renamed into `v1/content/file`
//! after its directories are made. Durability otherwise comes from a `syncfs` covering many
//! objects, as arca's checkpoint does (the raw-layout row runs one every 5 s).
//!
//! Not reproduced: arca's journal record and its group `fdatasync`, the catalog (SQLite), HTTP,
//! digests and JSON — the metadata files are filler of the right size — and the storage root's
//! own files, written once when a root is created.

use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Write as _};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::driver::mix;
use crate::payload::Chunks;

/// Bodies larger than this go through `staging/uploads/` (arca's `http::upload` keeps up to
/// 1 MiB in memory).
pub const UPLOAD_ABOVE: u64 = 1 << 20;

/// The object declaration and its content.
const NAMASTE: (&str, &[u8]) = ("0=ocfl_object_1.1", b"ocfl_object_1.1\n");
const INVENTORY: &str = "inventory.json";
const SIDECAR: &str = "inventory.json.sha512";
const V1_INVENTORY: &str = "v1/inventory.json";
const V1_SIDECAR: &str = "v1/inventory.json.sha512";
/// `<128 hex digits>␠␠inventory.json\n`.
const SIDECAR_LEN: usize = 145;
const CONTAINER_HEADER_LEN: usize = 682;
const CONTAINER_INVENTORY_LEN: usize = 1009;
/// A binary's header without the digits of its `contentSize`.
const BINARY_HEADER_BASE_LEN: usize = 761;
const DESCRIPTION_HEADER_LEN: usize = 772;
const BINARY_INVENTORY_LEN: usize = 1648;
/// The inventory of an empty binary (one manifest entry fewer).
const EMPTY_BINARY_INVENTORY_LEN: usize = 1352;
/// The binary's name below its container (the bench's `PUT {container}/file`).
pub const BINARY_NAME: &str = "file";

/// Filler for the metadata files (their bytes do not matter to the file system).
static FILLER: [u8; 2048] = [b' '; 2048];

/// The OCFL id of the container of object number `object`: `info:fedora/` and a
/// UUID-shaped name (36 characters, as arca's generated ids), unique per object number.
pub fn container_id(object: u64) -> String {
    let (a, b) = (mix(object), mix(!object));
    format!(
        "info:fedora/{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | (b >> 48) & 0x3fff,
        b & 0xffff_ffff_ffff
    )
}

/// The OCFL id of a container's binary.
pub fn binary_id(container: &str) -> String {
    format!("{container}/{BINARY_NAME}")
}

/// Where layout 0004 (sha256, 3 tuples of 3, full object root) puts an object, relative to
/// the storage root: `141/964/af8/141964af…`.
pub fn object_path(ocfl_id: &str) -> String {
    let digest = Sha256::digest(ocfl_id.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}/{}/{}/{hex}", &hex[0..3], &hex[3..6], &hex[6..9])
}

/// What one object costs the file system, for the disk budget: bytes (a 4 KiB block per
/// metadata file and directory, plus the payload) and inodes.
pub fn cost(binary: Option<u64>) -> (u64, u64) {
    // Each object: 7 directories (3 tuple levels, the object, v1, content, .fcrepo) and 5
    // files (container) or 7 (binary); the hard links take no inode.
    let (mut bytes, mut inodes) = (12 * 4096, 12);
    if let Some(size) = binary {
        bytes += 14 * 4096 + size;
        inodes += 14;
    }
    (bytes, inodes)
}

/// Writes objects as arca does into `ocfl-root/`, with uploads in `staging/uploads/`.
#[derive(Clone, Debug)]
pub struct LayoutWriter {
    root: PathBuf,
    uploads: PathBuf,
}

impl LayoutWriter {
    /// Makes `dir/ocfl-root` and `dir/staging/uploads`.
    pub fn create(dir: &Path) -> io::Result<LayoutWriter> {
        let writer = LayoutWriter {
            root: dir.join("ocfl-root"),
            uploads: dir.join("staging").join("uploads"),
        };
        fs::create_dir_all(&writer.root)?;
        fs::create_dir_all(&writer.uploads)?;
        Ok(writer)
    }

    /// The storage root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes object number `object`: its container's OCFL object and, when `binary` is
    /// given, the binary's (of `binary.remaining()` bytes).
    pub fn write_object(&self, object: u64, binary: Option<Chunks>) -> io::Result<()> {
        let container = container_id(object);
        self.write_container(&self.root.join(object_path(&container)))?;
        if let Some(chunks) = binary {
            let dir = self.root.join(object_path(&binary_id(&container)));
            self.write_binary(&dir, chunks, object)?;
        }
        Ok(())
    }

    fn write_container(&self, dir: &Path) -> io::Result<()> {
        new_file(
            dir,
            "v1/content/.fcrepo/fcr-root.json",
            filler(CONTAINER_HEADER_LEN),
        )?;
        new_file(dir, "v1/content/fcr-container.nt", b"")?;
        finish_object(dir, CONTAINER_INVENTORY_LEN)
    }

    fn write_binary(&self, dir: &Path, chunks: Chunks, object: u64) -> io::Result<()> {
        let size = chunks.remaining();
        let content = dir.join("v1/content").join(BINARY_NAME);
        if size > UPLOAD_ABOVE {
            let upload =
                self.uploads
                    .join(format!("{:016x}{:016x}", mix(object ^ 0x5555), mix(object)));
            let mut f = File::create(&upload)?;
            for c in chunks {
                f.write_all(&c)?;
            }
            f.sync_all()?;
            drop(f);
            File::open(&self.uploads)?.sync_all()?;
            fs::create_dir_all(content.parent().expect("a parent"))?;
            fs::rename(&upload, &content)?;
        } else {
            new_file_with(&content, |f| {
                for c in chunks {
                    f.write_all(&c)?;
                }
                Ok(())
            })?;
        }
        let header = BINARY_HEADER_BASE_LEN + size.to_string().len();
        new_file(dir, "v1/content/.fcrepo/fcr-root.json", filler(header))?;
        new_file(
            dir,
            "v1/content/.fcrepo/fcr-root~fcr-desc.json",
            filler(DESCRIPTION_HEADER_LEN),
        )?;
        let inventory = if size > 0 {
            new_file(dir, &format!("v1/content/{BINARY_NAME}~fcr-desc.nt"), b"")?;
            BINARY_INVENTORY_LEN
        } else {
            EMPTY_BINARY_INVENTORY_LEN
        };
        finish_object(dir, inventory)
    }
}

fn filler(len: usize) -> &'static [u8] {
    &FILLER[..len]
}

/// The declaration, `v1`'s inventory and sidecar, and their root copies as hard links.
fn finish_object(dir: &Path, inventory_len: usize) -> io::Result<()> {
    new_file(dir, NAMASTE.0, NAMASTE.1)?;
    new_file(dir, V1_INVENTORY, filler(inventory_len))?;
    new_file(dir, V1_SIDECAR, filler(SIDECAR_LEN))?;
    fs::hard_link(dir.join(V1_INVENTORY), dir.join(INVENTORY))?;
    fs::hard_link(dir.join(V1_SIDECAR), dir.join(SIDECAR))
}

fn new_file(dir: &Path, rel: &str, bytes: &[u8]) -> io::Result<()> {
    new_file_with(&dir.join(rel), |f| f.write_all(bytes))
}

/// Creates `path` (it must not exist) and fills it with `write`; makes its directories when
/// the first create finds them missing (arca's `fsutil::write_new` and `publish_file`).
fn new_file_with(path: &Path, write: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    let open = || OpenOptions::new().write(true).create_new(true).open(path);
    let mut f = match open() {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            fs::create_dir_all(path.parent().expect("files have parents"))?;
            open()?
        }
        other => other?,
    };
    write(&mut f)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::os::unix::fs::MetadataExt;

    use super::*;
    use crate::payload::Payload;

    /// Relative path → (is a directory, size of a file, link count).
    fn tree(dir: &Path) -> BTreeMap<String, (bool, u64, u64)> {
        fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, (bool, u64, u64)>) {
            for e in fs::read_dir(dir).unwrap() {
                let e = e.unwrap();
                let m = e.metadata().unwrap();
                let rel = e.path().strip_prefix(base).unwrap().display().to_string();
                if m.is_dir() {
                    out.insert(rel, (true, 0, 0));
                    walk(base, &e.path(), out);
                } else {
                    out.insert(rel, (false, m.len(), m.nlink()));
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(dir, dir, &mut out);
        out
    }

    #[test]
    fn layout_0004_paths() {
        // The path Fedora gives its root object (OCFL-FEDORA.md, observed).
        assert_eq!(
            object_path("info:fedora"),
            "141/964/af8/141964af842132b7a706ed010474c410514b472acc0d7d8f805c23e748578b8b"
        );
        let id = container_id(7);
        assert_eq!(id.len(), "info:fedora/".len() + 36);
        assert_ne!(id, container_id(8));
        assert_eq!(binary_id(&id), format!("{id}/file"));
    }

    #[test]
    fn objects_have_arcas_files() {
        let d = tempfile::tempdir().unwrap();
        let w = LayoutWriter::create(d.path()).unwrap();
        let p = Payload::new(1, 2);
        w.write_object(1, None).unwrap();
        w.write_object(2, Some(p.chunks(2, 20480))).unwrap();
        w.write_object(3, Some(p.chunks(3, UPLOAD_ABOVE + 1)))
            .unwrap();

        let container = tree(&w.root().join(object_path(&container_id(1))));
        let expected: BTreeMap<String, (bool, u64, u64)> = [
            ("0=ocfl_object_1.1", (false, 16, 1)),
            ("inventory.json", (false, 1009, 2)),
            ("inventory.json.sha512", (false, 145, 2)),
            ("v1", (true, 0, 0)),
            ("v1/inventory.json", (false, 1009, 2)),
            ("v1/inventory.json.sha512", (false, 145, 2)),
            ("v1/content", (true, 0, 0)),
            ("v1/content/.fcrepo", (true, 0, 0)),
            ("v1/content/.fcrepo/fcr-root.json", (false, 682, 1)),
            ("v1/content/fcr-container.nt", (false, 0, 1)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(container, expected);
        assert_eq!(
            fs::read(w.root().join(object_path(&container_id(1))).join(NAMASTE.0)).unwrap(),
            b"ocfl_object_1.1\n"
        );

        for (object, size, header) in [(2, 20480, 766), (3, UPLOAD_ABOVE + 1, 768)] {
            let dir = w
                .root()
                .join(object_path(&binary_id(&container_id(object))));
            let binary = tree(&dir);
            assert_eq!(binary["v1/content/file"], (false, size, 1));
            assert_eq!(binary["v1/content/file~fcr-desc.nt"], (false, 0, 1));
            assert_eq!(
                binary["v1/content/.fcrepo/fcr-root.json"],
                (false, header, 1)
            );
            assert_eq!(
                binary["v1/content/.fcrepo/fcr-root~fcr-desc.json"],
                (false, 772, 1)
            );
            assert_eq!(binary["inventory.json"], (false, 1648, 2));
            assert_eq!(binary.len(), 12, "{binary:?}");
            // The payload's bytes, whichever way they came.
            let bytes: Vec<u8> = p.chunks(object, size).flat_map(|c| c.to_vec()).collect();
            assert_eq!(fs::read(dir.join("v1/content/file")).unwrap(), bytes);
        }
        // The upload was moved, not copied.
        assert_eq!(
            fs::read_dir(d.path().join("staging/uploads"))
                .unwrap()
                .count(),
            0
        );
        // 3 containers' and 2 binaries' objects, nothing else.
        let objects = tree(w.root())
            .keys()
            .filter(|k| k.ends_with("0=ocfl_object_1.1"))
            .count();
        assert_eq!(objects, 5);
    }

    #[test]
    fn an_empty_binary_shares_its_description_content() {
        let d = tempfile::tempdir().unwrap();
        let w = LayoutWriter::create(d.path()).unwrap();
        w.write_object(9, Some(Payload::new(1, 2).chunks(9, 0)))
            .unwrap();
        let binary = tree(&w.root().join(object_path(&binary_id(&container_id(9)))));
        assert_eq!(binary["v1/content/file"], (false, 0, 1));
        assert!(!binary.contains_key("v1/content/file~fcr-desc.nt"));
        assert_eq!(binary["v1/content/.fcrepo/fcr-root.json"], (false, 762, 1));
        assert_eq!(binary["v1/inventory.json"], (false, 1352, 2));
    }

    #[test]
    fn an_existing_object_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let w = LayoutWriter::create(d.path()).unwrap();
        w.write_object(1, None).unwrap();
        let e = w.write_object(1, None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists);
    }

    #[test]
    fn cost_counts_inodes() {
        assert_eq!(cost(None), (12 * 4096, 12));
        assert_eq!(cost(Some(100)), (26 * 4096 + 100, 26));
    }
}
