//! Where Fedora 3 objects come from: FOXML files, directories of them, and Fedora 3's own
//! object stores, with managed content found through its `INTERNAL_ID`.
//!
//! [`scan`] takes the paths given to `arca import fedora3` and tells, for each, what it is
//! ([`SourceKind`]), by looking at it in this order:
//! 1. a **file**: one FOXML document;
//! 2. an **akubra-fs store**: a directory holding `objectStore/` and `datastreamStore/`,
//!    or an `objectStore/` directory with a sibling `datastreamStore/`;
//! 3. a **legacy-fs store**: a directory holding `objects/` and `datastreams/`, or an
//!    `objects/` directory with a sibling `datastreams/`;
//! 4. any other directory: a **directory of FOXML files** (exports, ingest form), read
//!    recursively.
//!
//! It lists the object files (their paths and PIDs, never their content) and gives each a
//! [`Resolver`] for its store's datastream files.
//!
//! Store file names: akubra-fs names a file by its percent-encoded blob id
//! (`info%3Afedora%2Fdemo%3A5` for an object, `info%3Afedora%2Fdemo%3A5%2FDS1%2FDS1.0` for
//! a datastream version) inside directories taken from the MD5 of the blob id (`##`, one
//! level of two hex digits, by default); legacy-fs names them `demo_5` and
//! `demo_5+DS1+DS1.0` (the PID's `:` as `_`) under `YYYY/MMDD/HH/mm/`. Either naming is
//! understood in either kind of store, since real stores mix them (migration-utils has a
//! legacy-fs object store with akubra-named datastream files).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use md5::{Digest as _, Md5};
use percent_encoding::percent_decode_str;

use crate::foxml::{self, ReadError};
use crate::F3Object;

/// What an argument of [`scan`] turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// One FOXML file.
    File,
    /// A directory of FOXML files, read recursively.
    Directory,
    /// A Fedora 3 akubra-fs store (`objectStore/`, `datastreamStore/`).
    Akubra,
    /// A Fedora 3 legacy-fs store (`objects/`, `datastreams/`).
    Legacy,
}

/// Everything [`scan`] found.
#[derive(Debug, Default)]
pub struct Sources {
    /// Each argument with what it is.
    pub roots: Vec<(PathBuf, SourceKind)>,
    /// The objects, argument by argument, in path order within each; one per PID.
    pub objects: Vec<ObjectEntry>,
    /// Objects whose PID an earlier entry of [`Sources::objects`] has already: they are
    /// left out (the first one found wins) and reported here.
    pub duplicates: Vec<Duplicate>,
    /// Files that were not taken as objects, with the reason (e.g. a file in a directory
    /// of exports that is not FOXML).
    pub skipped: Vec<(PathBuf, String)>,
}

/// One object to import.
#[derive(Debug, Clone)]
pub struct ObjectEntry {
    /// The PID: from the file name in a store (the importer should check it against the
    /// FOXML), from the document otherwise.
    pub pid: String,
    /// The FOXML file.
    pub foxml: PathBuf,
    /// What kind of source it came from.
    pub kind: SourceKind,
    /// Finds the files of its managed content.
    pub resolver: Resolver,
}

impl ObjectEntry {
    /// Reads and parses the FOXML file.
    pub fn read(&self) -> Result<F3Object, ReadError> {
        foxml::read_file(&self.foxml)
    }
}

/// A PID found more than once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// The PID.
    pub pid: String,
    /// The file that is imported.
    pub kept: PathBuf,
    /// The file that is not.
    pub ignored: PathBuf,
}

/// Why [`scan`] failed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A path given does not exist.
    #[error("{}: no such file or directory", .0.display())]
    NotFound(PathBuf),
    /// A directory or file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// Where.
        path: PathBuf,
        /// What.
        #[source]
        source: std::io::Error,
    },
}

/// Why [`Resolver::resolve`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The reference is not `pid+DSID+versionID`.
    #[error("INTERNAL_ID {0:?} is not of the form pid+DSID+versionID")]
    Malformed(String),
    /// The object came from a FOXML file outside any store.
    #[error("INTERNAL_ID {0:?}: the object is not in a Fedora 3 store, so there is no datastream store to look in")]
    NoStore(String),
    /// The store has no file for it.
    #[error("INTERNAL_ID {internal_id:?}: no such file in {}", store.display())]
    Missing {
        /// The reference.
        internal_id: String,
        /// The datastream store.
        store: PathBuf,
    },
    /// The datastream store could not be listed.
    #[error("{}: cannot list the datastream store: {message}", store.display())]
    Index {
        /// The datastream store.
        store: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// Finds the file holding managed content from its `INTERNAL_ID`
/// ([`crate::Content::Internal`]). Cheap to clone; shared by every object of a store.
#[derive(Debug, Clone, Default)]
pub struct Resolver {
    store: Option<Arc<DatastreamStore>>,
}

/// A datastream store directory and, once needed, the index of its files.
#[derive(Debug)]
struct DatastreamStore {
    dir: PathBuf,
    /// Akubra-fs: try the default `##` hashed path before the index.
    hashed: bool,
    /// `pid+DSID+versionID` → file, built on the first lookup the hashed path misses.
    index: OnceLock<Result<HashMap<String, PathBuf>, String>>,
}

impl Resolver {
    /// A resolver for an akubra-fs `datastreamStore` directory.
    pub fn akubra(dir: impl Into<PathBuf>) -> Self {
        Self::store(dir.into(), true)
    }

    /// A resolver for a legacy-fs `datastreams` directory.
    pub fn legacy(dir: impl Into<PathBuf>) -> Self {
        Self::store(dir.into(), false)
    }

    fn store(dir: PathBuf, hashed: bool) -> Self {
        Self {
            store: Some(Arc::new(DatastreamStore {
                dir,
                hashed,
                index: OnceLock::new(),
            })),
        }
    }

    /// The datastream store directory, if any.
    pub fn store_dir(&self) -> Option<&Path> {
        self.store.as_deref().map(|s| s.dir.as_path())
    }

    /// The file of `internal_id` (`pid+DSID+versionID`, e.g. `demo:5+DS1+DS1.0`).
    ///
    /// In an akubra-fs store the file is first looked for where Fedora 3 puts it by
    /// default: `<md5 of the blob id, 2 hex digits>/<encoded blob id>`. Otherwise (and in
    /// legacy-fs stores) the store is listed once and the file found by name, whichever
    /// naming and directory layout it uses.
    pub fn resolve(&self, internal_id: &str) -> Result<PathBuf, ResolveError> {
        let parts: Vec<&str> = internal_id.split('+').collect();
        if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
            return Err(ResolveError::Malformed(internal_id.to_owned()));
        }
        let store = self
            .store
            .as_deref()
            .ok_or_else(|| ResolveError::NoStore(internal_id.to_owned()))?;
        if store.hashed {
            let path = store.dir.join(akubra_path(&blob_id(&parts)));
            if path.is_file() {
                return Ok(path);
            }
        }
        let index = store
            .index
            .get_or_init(|| index_datastreams(&store.dir))
            .as_ref()
            .map_err(|message| ResolveError::Index {
                store: store.dir.clone(),
                message: message.clone(),
            })?;
        index
            .get(internal_id)
            .cloned()
            .ok_or_else(|| ResolveError::Missing {
                internal_id: internal_id.to_owned(),
                store: store.dir.clone(),
            })
    }
}

/// The akubra blob id of `[pid, DSID, versionID]`.
fn blob_id(parts: &[&str]) -> String {
    format!("info:fedora/{}", parts.join("/"))
}

/// Where Fedora 3's akubra-fs puts a blob by default, relative to the store:
/// `##/<encoded id>`, `##` being the first two hex digits of the id's MD5.
pub fn akubra_path(blob_id: &str) -> PathBuf {
    let hash = hex::encode(Md5::digest(blob_id.as_bytes()));
    Path::new(&hash[..2]).join(akubra_encode(blob_id))
}

/// Akubra's file-name encoding of a blob id: everything percent-encoded (UTF-8, upper-case
/// hex) except `A-Z a-z 0-9 = ( ) [ ] ; -` and `.` (unless it ends the id).
pub fn akubra_encode(blob_id: &str) -> String {
    let mut out = String::with_capacity(blob_id.len() * 2);
    for (i, b) in blob_id.bytes().enumerate() {
        let last = i + 1 == blob_id.len();
        if b.is_ascii_alphanumeric() || b"=()[];-".contains(&b) || (b == b'.' && !last) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What an akubra file name (`info%3Afedora%2F...`) stands for, without `info:fedora/`;
/// `None` for other names.
fn akubra_name(file_name: &str) -> Option<String> {
    let encoded = file_name.strip_prefix("info%3Afedora%2F")?;
    let decoded = percent_decode_str(encoded).decode_utf8().ok()?;
    Some(decoded.into_owned())
}

/// The PID an object file name stands for: akubra (`info%3Afedora%2F<pid>`) or legacy
/// (`<namespace>_<id>`: a namespace has no `_`, so the first `_` is the `:`).
pub fn pid_from_file_name(file_name: &str) -> Option<String> {
    let pid = akubra_name(file_name).unwrap_or_else(|| file_name.replacen('_', ":", 1));
    foxml::check_pid(&pid).is_ok().then_some(pid)
}

/// The `INTERNAL_ID` (`pid+DSID+versionID`) a datastream file name stands for: akubra
/// (`info%3Afedora%2F<pid>%2F<DSID>%2F<version>`) or legacy (`<pid, : as _>+DSID+version`).
pub fn internal_id_from_file_name(file_name: &str) -> Option<String> {
    if let Some(blob) = akubra_name(file_name) {
        let parts: Vec<&str> = blob.split('/').collect();
        return (parts.len() == 3).then(|| parts.join("+"));
    }
    let (pid, rest) = file_name.split_once('+')?;
    let pid = if pid.contains(':') {
        pid.to_owned()
    } else {
        pid.replacen('_', ":", 1)
    };
    Some(format!("{pid}+{rest}"))
}

/// Lists a datastream store: `INTERNAL_ID` → file.
fn index_datastreams(dir: &Path) -> Result<HashMap<String, PathBuf>, String> {
    let mut index = HashMap::new();
    for path in files_under(dir).map_err(|e| e.to_string())? {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if let Some(id) = internal_id_from_file_name(name) {
            index.entry(id).or_insert(path);
        }
    }
    Ok(index)
}

/// The regular files under `dir`, recursively, sorted, hidden ones (`.name`) left out.
/// Symbolic links to files are followed, to directories not (no cycles).
fn files_under(dir: &Path) -> Result<Vec<PathBuf>, SourceError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| SourceError::Io { path, source }
    };
    let mut files = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).map_err(io(&dir))? {
            let entry = entry.map_err(io(&dir))?;
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let path = entry.path();
            let kind = entry.file_type().map_err(io(&path))?;
            if kind.is_dir() {
                todo.push(path);
            } else if kind.is_file() || (kind.is_symlink() && path.is_file()) {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Finds the objects of each path (see the [module documentation](self) for how a path's
/// kind is told).
pub fn scan(paths: &[PathBuf]) -> Result<Sources, SourceError> {
    let mut sources = Sources::default();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for path in paths {
        let (kind, objects_dir, resolver) = classify(path)?;
        sources.roots.push((path.clone(), kind));
        let files = match kind {
            SourceKind::File => vec![path.clone()],
            _ => files_under(&objects_dir)?,
        };
        for foxml in files {
            let pid = match kind {
                SourceKind::Akubra | SourceKind::Legacy => foxml
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(pid_from_file_name)
                    .map_or_else(|| foxml::read_pid(&foxml), Ok),
                SourceKind::File | SourceKind::Directory => foxml::read_pid(&foxml),
            };
            let pid = match pid {
                Ok(pid) => pid,
                Err(e) => {
                    sources.skipped.push((foxml, e.error.to_string()));
                    continue;
                }
            };
            if let Some(&first) = seen.get(&pid) {
                sources.duplicates.push(Duplicate {
                    pid,
                    kept: sources.objects[first].foxml.clone(),
                    ignored: foxml,
                });
                continue;
            }
            seen.insert(pid.clone(), sources.objects.len());
            sources.objects.push(ObjectEntry {
                pid,
                foxml,
                kind,
                resolver: resolver.clone(),
            });
        }
    }
    Ok(sources)
}

/// What `path` is, where its object files are and how its datastreams are found.
fn classify(path: &Path) -> Result<(SourceKind, PathBuf, Resolver), SourceError> {
    let metadata = std::fs::metadata(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => SourceError::NotFound(path.to_owned()),
        _ => SourceError::Io {
            path: path.to_owned(),
            source,
        },
    })?;
    if !metadata.is_dir() {
        return Ok((SourceKind::File, path.to_owned(), Resolver::default()));
    }
    let stores = [
        (SourceKind::Akubra, "objectStore", "datastreamStore"),
        (SourceKind::Legacy, "objects", "datastreams"),
    ];
    for (kind, objects, datastreams) in stores {
        let (objects_dir, datastreams_dir) = if path.join(objects).is_dir() {
            (path.join(objects), path.join(datastreams))
        } else if path.file_name().is_some_and(|n| n == objects) {
            (path.to_owned(), path.with_file_name(datastreams))
        } else {
            continue;
        };
        if datastreams_dir.is_dir() {
            let resolver = match kind {
                SourceKind::Akubra => Resolver::akubra(datastreams_dir),
                _ => Resolver::legacy(datastreams_dir),
            };
            return Ok((kind, objects_dir, resolver));
        }
    }
    Ok((SourceKind::Directory, path.to_owned(), Resolver::default()))
}
