//! What the read-only Fedora 3 facade answers from: plain views of imported objects, read
//! from a [`Repository`].
//!
//! An imported object is the Archival Group `info:fedora/{pid}` (see [`crate::vocab`]): its
//! triples hold the FOXML object properties, the current RELS-EXT and the current DC; each
//! datastream is the binary `info:fedora/{pid}/{DSID}` whose description holds that
//! version's FOXML attributes. Current state comes from the catalog (no storage access);
//! histories and `asOfDateTime` reads come from the object's OCFL inventory: a datastream's
//! versions are the OCFL versions in which its description file `{DSID}~fcr-desc.nt`
//! changed. Objects and datastreams Fedora 3 had in state D end in a version that turns them
//! into tombstones; they are answered from the version before it, as Fedora 3 (without
//! XACML) served them.
//!
//! Nothing here knows HTTP: the facade in `arca-http` renders these views.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arca_catalog::ResourceRecord;
use arca_model::{FedoraId, InteractionModel, ResourceHeaders, Timestamp};
use arca_ocfl::{Inventory, OcflRoot, VersionNum};
use arca_repository::Repository;
use oxrdf::{NamedOrBlankNode, Term, Triple};

use crate::model::{PROP_CREATED, PROP_LABEL, PROP_MODIFIED, PROP_OWNER, PROP_STATE};
use crate::vocab;

/// The content model every Fedora 3 object has, named or not.
pub const FEDORA_OBJECT_MODEL: &str = "info:fedora/fedora-system:FedoraObject-3.0";

/// Why a view could not be given.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// No imported object has this PID (or it is not a valid PID).
    #[error("Object not found in low-level storage: {0}")]
    NoObject(String),
    /// The object has no such datastream, or none created at or before `as_of`.
    #[error("no datastream {dsid} in object {pid}")]
    NoDatastream {
        /// The PID.
        pid: String,
        /// The datastream id asked for.
        dsid: String,
        /// The `asOfDateTime` asked for, verbatim.
        as_of: Option<String>,
    },
    /// The repository failed.
    #[error(transparent)]
    Repository(#[from] arca_repository::Error),
    /// What storage holds for the object is not what an import writes.
    #[error("stored object {0}: {1}")]
    Stored(String, String),
}

/// Result type of the views.
pub type Result<T> = std::result::Result<T, ViewError>;

/// Whether `pid` is a Fedora 3 PID: `namespace:id`, at most 64 characters, the namespace of
/// letters, digits, `-` and `.`, the id of those, `~`, `_` and `%XX` escapes.
pub fn is_valid_pid(pid: &str) -> bool {
    let Some((ns, id)) = pid.split_once(':') else {
        return false;
    };
    let ns_ok = !ns.is_empty()
        && ns
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    let bytes = id.as_bytes();
    let mut i = 0;
    let mut id_ok = !bytes.is_empty();
    while id_ok && i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = |j: usize| bytes.get(j).is_some_and(|b| b.is_ascii_hexdigit());
                id_ok = hex(i + 1) && hex(i + 2);
                i += 3;
            }
            b if b.is_ascii_alphanumeric() || b"-.~_".contains(&b) => i += 1,
            _ => id_ok = false,
        }
    }
    pid.len() <= 64 && ns_ok && id_ok
}

/// An imported object as Fedora 3's object profile describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectView {
    /// The PID.
    pub pid: String,
    /// `model#label` ("" when absent).
    pub label: String,
    /// `model#ownerId` ("" when absent).
    pub owner_id: String,
    /// The state letter: A, I or D.
    pub state: &'static str,
    /// `model#createdDate`, verbatim.
    pub created: String,
    /// `view#lastModifiedDate`, verbatim.
    pub last_modified: String,
    /// The content models (`hasModel`), `FedoraObject-3.0` included as Fedora 3 adds it.
    pub models: Vec<String>,
    /// The DC elements, `(element, value)` in stored order (`title`, `creator`, …).
    pub dc: Vec<(String, String)>,
    /// Where the object was read.
    origin: Origin,
}

/// Where an object's current state is: the catalog, or (a deleted object) a version.
#[derive(Debug, Clone, PartialEq)]
enum Origin {
    Catalog { ocfl_id: String },
    Version { ocfl_id: String, version: u32 },
}

impl ObjectView {
    fn ocfl_id(&self) -> &str {
        match &self.origin {
            Origin::Catalog { ocfl_id } | Origin::Version { ocfl_id, .. } => ocfl_id,
        }
    }

    /// The view of object `pid` whose current triples (properties, RELS-EXT, DC) are
    /// `triples`.
    pub fn from_triples(pid: &str, triples: &[Triple]) -> Self {
        let origin = Origin::Catalog {
            ocfl_id: format!("info:fedora/{pid}"),
        };
        Self::with_origin(pid, triples, origin)
    }

    fn with_origin(pid: &str, triples: &[Triple], origin: Origin) -> Self {
        let names = [object_id_strings(pid)];
        let subject_ok = subject_filter(&names);
        let mut props: BTreeMap<&str, String> = BTreeMap::new();
        let mut models = Vec::new();
        let mut dc = Vec::new();
        for t in triples.iter().filter(|t| subject_ok(&t.subject)) {
            let p = t.predicate.as_str();
            if is_property(p) {
                props.insert(property_key(p), term_text(&t.object));
            } else if let Some(element) = p.strip_prefix(vocab::DC_ELEMENTS) {
                dc.push((element.to_string(), term_text(&t.object)));
            } else if p == vocab::HAS_MODEL {
                models.push(term_text(&t.object));
            }
        }
        if !models.iter().any(|m| m == FEDORA_OBJECT_MODEL) {
            models.push(FEDORA_OBJECT_MODEL.to_string());
        }
        let state = match props.get("state").map(String::as_str) {
            Some("Inactive" | "I") => "I",
            Some("Deleted" | "D") => "D",
            _ => "A",
        };
        let mut take = |k: &str| props.remove(k).unwrap_or_default();
        Self {
            pid: pid.to_string(),
            label: take("label"),
            owner_id: take("ownerId"),
            state,
            created: take("createdDate"),
            last_modified: take("lastModifiedDate"),
            models,
            dc,
            origin,
        }
    }

    /// The values of DC element `element` (`title`, `creator`, …).
    pub fn dc_values<'a>(&'a self, element: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.dc
            .iter()
            .filter(move |(e, _)| e == element)
            .map(|(_, v)| v.as_str())
    }
}

/// The FOXML object properties the object's triples carry (the rest is RELS-EXT and DC).
fn is_property(predicate: &str) -> bool {
    [
        PROP_STATE,
        PROP_LABEL,
        PROP_OWNER,
        PROP_CREATED,
        PROP_MODIFIED,
    ]
    .contains(&predicate)
        || predicate == "info:fedora/fedora-system:def/model#contentModel"
        || predicate.starts_with("info:fedora/fedora-system:def/view#")
}

fn property_key(predicate: &str) -> &str {
    predicate.rsplit('#').next().unwrap_or(predicate)
}

/// One version of a datastream as Fedora 3's datastream profile describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatastreamProfile {
    /// The PID of its object.
    pub pid: String,
    /// The datastream id.
    pub dsid: String,
    /// `LABEL`.
    pub label: String,
    /// The version's `ID`, e.g. `DC.1`.
    pub version_id: String,
    /// The version's `CREATED`, verbatim.
    pub created: String,
    /// A, I or D.
    pub state: String,
    /// `MIMETYPE`, verbatim (may be empty).
    pub mime: String,
    /// `FORMAT_URI` ("" when absent).
    pub format_uri: String,
    /// X, M, E or R.
    pub control_group: String,
    /// `SIZE` as Fedora 3 recorded it (0 when absent); for inline XML the length of the
    /// bytes served.
    pub size: i64,
    /// `VERSIONABLE`.
    pub versionable: bool,
    /// `ALT_IDS`.
    pub alt_ids: Vec<String>,
    /// The content location (`pid+DSID+versionId` for inline XML, the `INTERNAL_ID` or the
    /// URL otherwise).
    pub location: String,
    /// `INTERNAL_ID`, `URL` or "".
    pub location_type: String,
    /// The checksum type (`DISABLED` when none).
    pub checksum_type: String,
    /// The checksum (`none` when none).
    pub checksum: String,
    /// The datastream's position in its FOXML document (Fedora 3's listing order), when
    /// the import recorded it.
    pub position: Option<u32>,
}

/// One version of a datastream: its profile and the binary that holds its content (the
/// current record, or a record of the version's stored files: header and content file).
#[derive(Debug, Clone)]
pub struct DatastreamVersion {
    /// The profile.
    pub profile: DatastreamProfile,
    /// The binary: its header (media type, external URL and handling) and content file.
    pub binary: ResourceRecord,
    /// RELS-INT statements about the datastream.
    pub rels_int: Vec<Triple>,
}

impl DatastreamVersion {
    /// The RELS-INT download file name of the datastream, if it has one.
    pub fn download_filename(&self) -> Option<&str> {
        self.rels_int.iter().find_map(|t| match &t.object {
            Term::Literal(l) if t.predicate.as_str() == vocab::DOWNLOAD_FILENAME => Some(l.value()),
            _ => None,
        })
    }
}

/// Datastream descriptions already read, by binary id, each dropped as soon as a change to
/// its binary or description commits (the repository's change watcher): the content path
/// then reads one catalog row, as arca's own binary GET does. Bounded: when full, the
/// coldest entries are evicted one at a time.
pub struct DescriptionCache {
    entries: parking_lot::Mutex<quick_cache::unsync::Cache<FedoraId, Arc<Described>>>,
    /// Bumped by every invalidation; a read that started before a bump is not stored.
    generation: AtomicU64,
}

/// What a datastream's description says: its profile (given its binary's header) and its
/// RELS-INT statements.
struct Described {
    profile: DatastreamProfile,
    rels_int: Vec<Triple>,
}

/// Most entries the cache holds (a bound on memory: ~1 KB each).
const CACHE_ENTRIES: usize = 100_000;

impl DescriptionCache {
    /// An empty cache that follows `repo`'s changes.
    pub fn new(repo: &Repository) -> Arc<Self> {
        let cache = Arc::new(Self {
            entries: parking_lot::Mutex::new(quick_cache::unsync::Cache::new(CACHE_ENTRIES)),
            generation: AtomicU64::new(0),
        });
        let watched = Arc::downgrade(&cache);
        repo.watch_changes(Arc::new(move |ids: &[FedoraId]| {
            if let Some(cache) = watched.upgrade() {
                let mut entries = cache.entries.lock();
                cache.generation.fetch_add(1, Ordering::AcqRel);
                for id in ids {
                    entries.remove(&id.base());
                }
            }
        }));
        cache
    }

    fn get(&self, binary: &FedoraId) -> Option<Arc<Described>> {
        self.entries.lock().get(binary).cloned()
    }

    fn put(&self, generation: u64, binary: FedoraId, described: Described) {
        let mut entries = self.entries.lock();
        if self.generation.load(Ordering::Acquire) != generation {
            return;
        }
        entries.insert(binary, Arc::new(described));
    }
}

/// Reads imported Fedora 3 objects from a repository.
pub struct Views<'a> {
    repo: &'a Repository,
    cache: Option<&'a DescriptionCache>,
}

impl<'a> Views<'a> {
    /// Views over `repo`.
    pub fn new(repo: &'a Repository) -> Self {
        Self { repo, cache: None }
    }

    /// Views over `repo` that keep what they read of descriptions in `cache`.
    pub fn cached(repo: &'a Repository, cache: &'a DescriptionCache) -> Self {
        Self {
            repo,
            cache: Some(cache),
        }
    }

    /// The repository id of object `pid`.
    pub fn object_id(pid: &str) -> Option<FedoraId> {
        is_valid_pid(pid)
            .then(|| FedoraId::from_path(pid).ok())
            .flatten()
    }

    /// The repository id of datastream `dsid` of object `pid`.
    pub fn datastream_id(pid: &str, dsid: &str) -> Option<FedoraId> {
        Self::object_id(pid)?.child(dsid).ok()
    }

    /// Object `pid`: [`ViewError::NoObject`] unless it is an imported object.
    pub async fn object(&self, pid: &str) -> Result<ObjectView> {
        let no = || ViewError::NoObject(pid.to_string());
        let id = Self::object_id(pid).ok_or_else(no)?;
        let record = self.repo.lookup(&id).await?.ok_or_else(no)?;
        if !record.headers.archival_group {
            return Err(no());
        }
        let view = if record.is_deleted() {
            let stored = self.stored(&record.ocfl_id).await?;
            let version = stored
                .before_tombstone(".fcrepo/fcr-root.json")
                .ok_or_else(no)?;
            let bytes = stored
                .read(version, "fcr-container.nt")
                .ok_or_else(|| stored.invalid("no fcr-container.nt before the tombstone"))?;
            let triples = arca_rdf::parse_ntriples(&bytes)
                .map_err(|e| stored.invalid(&format!("fcr-container.nt: {e}")))?;
            ObjectView::with_origin(
                pid,
                &triples,
                Origin::Version {
                    ocfl_id: record.ocfl_id.clone(),
                    version: version.number,
                },
            )
        } else {
            let triples = self.repo.triples(&record)?;
            ObjectView::with_origin(
                pid,
                &triples,
                Origin::Catalog {
                    ocfl_id: record.ocfl_id.clone(),
                },
            )
        };
        // An Archival Group that is not an import has no Fedora 3 creation date.
        if view.created.is_empty() {
            return Err(no());
        }
        Ok(view)
    }

    /// The current version of every datastream of `object` (deleted ones as they were
    /// before deletion), in their FOXML order as Fedora 3 lists them (where the import did
    /// not record it: by their first version's creation, then by id, after the others);
    /// AUDIT is left out as Fedora 3's listings leave it out.
    pub async fn datastreams(&self, object: &ObjectView) -> Result<Vec<DatastreamVersion>> {
        let mut out =
            match &object.origin {
                Origin::Version { ocfl_id, version } => {
                    let stored = self.stored(ocfl_id).await?;
                    let v = stored.version(*version)?;
                    stored
                        .datastream_ids(v)
                        .into_iter()
                        .filter_map(|dsid| stored.datastream_at(&object.pid, &dsid, v).transpose())
                        .collect::<Result<Vec<_>>>()?
                }
                Origin::Catalog { ocfl_id } => {
                    let records =
                        self.repo.catalog().in_object(ocfl_id).await.map_err(|e| {
                            ViewError::Repository(arca_repository::Error::Catalog(e))
                        })?;
                    let object_id = Self::object_id(&object.pid)
                        .ok_or_else(|| ViewError::NoObject(object.pid.clone()))?;
                    let mut descriptions: BTreeMap<FedoraId, &ResourceRecord> = records
                        .iter()
                        .filter(|r| r.id.is_description() && !r.is_deleted())
                        .map(|r| (r.id.base(), r))
                        .collect();
                    let mut stored: Option<StoredObject> = None;
                    let mut out = Vec::new();
                    for r in records.iter().filter(|r| {
                        r.parent.as_ref() == Some(&object_id)
                            && r.headers.model() == Some(InteractionModel::NonRdfSource)
                    }) {
                        let dsid = r.id.last_segment().to_string();
                        if !r.is_deleted() {
                            if let Some(desc) = descriptions.remove(&r.id) {
                                let triples = self.repo.triples(desc)?;
                                out.push(version_from(&object.pid, &dsid, r.clone(), &triples));
                                continue;
                            }
                        }
                        if stored.is_none() {
                            stored = Some(self.stored(ocfl_id).await?);
                        }
                        let s = stored.as_ref().expect("just read");
                        if let Some(v) = s.before_tombstone(&format!(".fcrepo/{dsid}.json")) {
                            if let Some(ds) = s.datastream_at(&object.pid, &dsid, v)? {
                                out.push(ds);
                            }
                        }
                    }
                    out
                }
            };
        out.retain(|d| d.profile.dsid != "AUDIT");
        // FOXML order; else the first version's creation (the binary header's created
        // date), then the id.
        out.sort_by(|a, b| {
            let key = |d: &DatastreamVersion| {
                (
                    d.profile.position.unwrap_or(u32::MAX),
                    d.binary
                        .headers
                        .created_date
                        .as_deref()
                        .and_then(parse_date),
                )
            };
            key(a)
                .cmp(&key(b))
                .then_with(|| a.profile.dsid.cmp(&b.profile.dsid))
        });
        Ok(out)
    }

    /// The current version of datastream `dsid` of object `pid`, read without the object
    /// when the datastream is live (two catalog reads: the content path's); otherwise as
    /// [`datastream`](Self::datastream) finds it.
    pub async fn current_datastream(&self, pid: &str, dsid: &str) -> Result<DatastreamVersion> {
        if let Some(id) = Self::datastream_id(pid, dsid) {
            let generation = self.cache.map(|c| c.generation.load(Ordering::Acquire));
            if let Some(binary) = self.repo.lookup(&id).await?.filter(|r| {
                !r.is_deleted() && r.headers.model() == Some(InteractionModel::NonRdfSource)
            }) {
                if let Some(hit) = self.cache.and_then(|c| c.get(&id)) {
                    return Ok(DatastreamVersion {
                        profile: hit.profile.clone(),
                        binary,
                        rels_int: hit.rels_int.clone(),
                    });
                }
                if let Some(desc) = self
                    .repo
                    .lookup(&id.description())
                    .await?
                    .filter(|d| !d.is_deleted())
                {
                    let ds = version_from(pid, dsid, binary, &self.repo.triples(&desc)?);
                    // An import's description names the control group; else not an import.
                    if !ds.profile.control_group.is_empty() {
                        if let (Some(cache), Some(generation)) = (self.cache, generation) {
                            let described = Described {
                                profile: ds.profile.clone(),
                                rels_int: ds.rels_int.clone(),
                            };
                            cache.put(generation, id, described);
                        }
                        return Ok(ds);
                    }
                }
            }
        }
        let object = self.object(pid).await?;
        self.datastream(&object, dsid).await
    }

    /// The current version of datastream `dsid` (a deleted one as it was before deletion).
    pub async fn datastream(&self, object: &ObjectView, dsid: &str) -> Result<DatastreamVersion> {
        let missing = || ViewError::NoDatastream {
            pid: object.pid.clone(),
            dsid: dsid.to_string(),
            as_of: None,
        };
        let id = Self::datastream_id(&object.pid, dsid).ok_or_else(missing)?;
        if let Origin::Catalog { .. } = &object.origin {
            let record = self.repo.lookup(&id).await?.ok_or_else(missing)?;
            if record.headers.model() != Some(InteractionModel::NonRdfSource) {
                return Err(missing());
            }
            if !record.is_deleted() {
                let desc = self
                    .repo
                    .lookup(&id.description())
                    .await?
                    .filter(|d| !d.is_deleted())
                    .ok_or_else(missing)?;
                let triples = self.repo.triples(&desc)?;
                return Ok(version_from(&object.pid, dsid, record, &triples));
            }
        }
        let stored = self.stored(object.ocfl_id()).await?;
        let version = match &object.origin {
            Origin::Version { version, .. } => stored.version(*version)?,
            Origin::Catalog { .. } => stored
                .before_tombstone(&format!(".fcrepo/{dsid}.json"))
                .ok_or_else(missing)?,
        };
        stored
            .datastream_at(&object.pid, dsid, version)?
            .ok_or_else(missing)
    }

    /// Every version of datastream `dsid`, newest first (Fedora 3's datastream history).
    pub async fn datastream_history(
        &self,
        object: &ObjectView,
        dsid: &str,
    ) -> Result<Vec<DatastreamVersion>> {
        let stored = self.stored(object.ocfl_id()).await?;
        let history = stored.history(&object.pid, dsid)?;
        if history.is_empty() {
            return Err(ViewError::NoDatastream {
                pid: object.pid.clone(),
                dsid: dsid.to_string(),
                as_of: None,
            });
        }
        Ok(history)
    }

    /// The version of datastream `dsid` in force at `as_of` (`as_of_text` is the request's
    /// value, for the error): the newest created at or before it.
    pub async fn datastream_as_of(
        &self,
        object: &ObjectView,
        dsid: &str,
        as_of: Timestamp,
        as_of_text: &str,
    ) -> Result<DatastreamVersion> {
        let missing = || ViewError::NoDatastream {
            pid: object.pid.clone(),
            dsid: dsid.to_string(),
            as_of: Some(as_of_text.to_string()),
        };
        // The current version answers when it is old enough (no inventory read).
        let current = self.datastream(object, dsid).await?;
        if created_at(&current.profile).is_some_and(|c| c <= as_of) {
            return Ok(current);
        }
        self.datastream_history(object, dsid)
            .await?
            .into_iter()
            .find(|d| created_at(&d.profile).is_some_and(|c| c <= as_of))
            .ok_or_else(missing)
    }

    /// The datastreams of `object` that existed at `as_of`, each in its version then.
    pub async fn datastreams_as_of(
        &self,
        object: &ObjectView,
        as_of: Timestamp,
    ) -> Result<Vec<DatastreamVersion>> {
        let mut out = Vec::new();
        for current in self.datastreams(object).await? {
            if created_at(&current.profile).is_some_and(|c| c <= as_of) {
                out.push(current);
                continue;
            }
            let dsid = current.profile.dsid.clone();
            if let Some(then) = self
                .datastream_history(object, &dsid)
                .await?
                .into_iter()
                .find(|d| created_at(&d.profile).is_some_and(|c| c <= as_of))
            {
                out.push(then);
            }
        }
        Ok(out)
    }

    /// The whole content of a datastream version stored in the repository (X and M; not
    /// external content).
    pub async fn content(&self, ds: &DatastreamVersion) -> Result<Vec<u8>> {
        let missing = || {
            ViewError::Stored(
                ds.binary.ocfl_id.clone(),
                format!("{} has no content file", ds.binary.id),
            )
        };
        let content = self.repo.content(&ds.binary).await?.ok_or_else(missing)?;
        let failed = |e: std::io::Error| {
            ViewError::Stored(
                ds.binary.ocfl_id.clone(),
                format!("{}: {e}", content.describe()),
            )
        };
        // Small local files come from the page cache: a hop to the blocking pool costs more.
        let small = ds
            .binary
            .headers
            .content_size
            .is_some_and(|n| n <= 64 << 10);
        fn read_all(mut reader: impl std::io::Read) -> std::io::Result<Vec<u8>> {
            let mut bytes = Vec::new();
            reader.read_to_end(&mut bytes)?;
            Ok(bytes)
        }
        match small.then(|| content.open_local()).flatten() {
            Some(opened) => opened.and_then(read_all).map_err(failed),
            None => {
                let reading = content.clone();
                tokio::task::spawn_blocking(move || read_all(reading.open(0..u64::MAX)?))
                    .await
                    .map_err(|e| failed(std::io::Error::other(e)))?
                    .map_err(failed)
            }
        }
    }

    /// The object's RELS-EXT statements as Fedora 3 lists them: read from its RELS-EXT
    /// datastream (the object's triples also hold its extended properties), with
    /// `hasModel FedoraObject-3.0` added as Fedora 3 adds it.
    pub async fn relationships(&self, object: &ObjectView) -> Result<Vec<Triple>> {
        let subject = format!("info:fedora/{}", object.pid);
        let mut triples = match self.datastream(object, "RELS-EXT").await {
            Ok(rels) => {
                let bytes = self.content(&rels).await?;
                arca_rdf::parse(
                    &bytes,
                    arca_rdf::RdfFormat::RdfXml,
                    &subject,
                    &arca_rdf::IdMapper::new("http://localhost/rest"),
                    &arca_rdf::ParseLimits::default(),
                )
                .map_err(|e| {
                    ViewError::Stored(object.ocfl_id().to_string(), format!("RELS-EXT: {e}"))
                })?
            }
            Err(ViewError::NoDatastream { .. }) => Vec::new(),
            Err(e) => return Err(e),
        };
        let has_model = oxrdf::NamedNode::new_unchecked(vocab::HAS_MODEL);
        let base = oxrdf::NamedNode::new_unchecked(FEDORA_OBJECT_MODEL);
        let named = |t: &Triple| matches!(&t.subject, NamedOrBlankNode::NamedNode(n) if n.as_str() == subject);
        if !triples
            .iter()
            .any(|t| named(t) && t.predicate == has_model && t.object == Term::from(base.clone()))
        {
            if let Ok(s) = oxrdf::NamedNode::new(&subject) {
                triples.push(Triple::new(s, has_model, base));
            }
        }
        Ok(triples)
    }

    /// The object's change dates (Fedora 3's object history): every datastream version's
    /// creation, each once, oldest first.
    pub async fn object_history(&self, object: &ObjectView) -> Result<Vec<String>> {
        let stored = self.stored(object.ocfl_id()).await?;
        let limit = match &object.origin {
            Origin::Version { version, .. } => Some(*version),
            Origin::Catalog { .. } => None,
        };
        let mut dates: BTreeSet<(Option<Timestamp>, String)> = BTreeSet::new();
        for change in stored
            .inventory
            .path_changes(|p| p.ends_with("~fcr-desc.nt") && !p.contains('/'), false)
        {
            if limit.is_some_and(|l| change.version.number > l) {
                continue;
            }
            let Some(bytes) = stored.read(change.version, &change.logical) else {
                continue;
            };
            let dsid = change.logical.trim_end_matches("~fcr-desc.nt");
            let triples = arca_rdf::parse_ntriples(&bytes)
                .map_err(|e| stored.invalid(&format!("{}: {e}", change.logical)))?;
            let profile = profile_from(&object.pid, dsid, &triples, None).0;
            if !profile.created.is_empty() {
                dates.insert((created_at(&profile), profile.created));
            }
        }
        Ok(dates.into_iter().map(|(_, d)| d).collect())
    }

    /// The imported objects whose PID comes after `after`, in PID order, at most `limit`
    /// (deleted ones included, as Fedora 3's field search lists them), and the last PID
    /// looked at (to continue from).
    pub async fn objects_after(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<ObjectView>, Option<String>)> {
        let root = FedoraId::root();
        let after_id = after.and_then(|p| FedoraId::from_path(p).ok());
        let ids = self
            .repo
            .catalog()
            .children_any(&root, after_id.as_ref(), limit)
            .await
            .map_err(|e| ViewError::Repository(arca_repository::Error::Catalog(e)))?;
        let last = ids.last().map(|id| id.path().to_string());
        let mut out = Vec::new();
        for id in ids {
            let pid = id.path();
            if !is_valid_pid(pid) {
                continue;
            }
            match self.object(pid).await {
                Ok(view) => out.push(view),
                Err(ViewError::NoObject(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok((out, last))
    }

    /// The object's OCFL object, once every acknowledged change of it is in the root.
    async fn stored(&self, ocfl_id: &str) -> Result<StoredObject> {
        self.repo.settle(ocfl_id).await?;
        let ocfl = self.repo.ocfl().clone();
        let id = ocfl_id.to_string();
        tokio::task::spawn_blocking(move || StoredObject::open(ocfl, id))
            .await
            .map_err(|e| ViewError::Stored(ocfl_id.to_string(), e.to_string()))?
    }
}

/// The instant of a profile's creation date.
pub fn created_at(profile: &DatastreamProfile) -> Option<Timestamp> {
    parse_date(&profile.created)
}

/// Parses a Fedora 3 date: `yyyy-MM-ddTHH:mm:ss[.SSS][Z]` (UTC when no zone is given), or a
/// plain date `yyyy-MM-dd` (its start).
pub fn parse_date(s: &str) -> Option<Timestamp> {
    let s = s.trim();
    if let Some(t) = arca_model::parse_instant(s) {
        return Some(t);
    }
    if s.len() == 10 {
        return arca_model::parse_instant(&format!("{s}T00:00:00Z"));
    }
    arca_model::parse_instant(&format!("{s}Z"))
}

/// The strings an object's id may appear as in stored triples.
fn object_id_strings(pid: &str) -> [String; 2] {
    let id = format!("info:fedora/{pid}");
    let iri = FedoraId::from_path(pid)
        .map(|i| i.iri())
        .unwrap_or_else(|_| id.clone());
    [id, iri]
}

/// Accepts statements whose subject is one of `names`.
fn subject_filter(names: &[[String; 2]]) -> impl Fn(&NamedOrBlankNode) -> bool + '_ {
    move |s| match s {
        NamedOrBlankNode::NamedNode(n) => names.iter().flatten().any(|x| x == n.as_str()),
        _ => false,
    }
}

/// A literal's value or an IRI.
fn term_text(term: &Term) -> String {
    match term {
        Term::NamedNode(n) => n.as_str().to_string(),
        Term::Literal(l) => l.value().to_string(),
        other => other.to_string(),
    }
}

/// A datastream version from its binary record and its description's triples.
fn version_from(
    pid: &str,
    dsid: &str,
    binary: ResourceRecord,
    description: &[Triple],
) -> DatastreamVersion {
    let (profile, rels_int) = profile_from(pid, dsid, description, Some(&binary.headers));
    DatastreamVersion {
        profile,
        binary,
        rels_int,
    }
}

/// A profile from a description's triples (statements about the binary or the description
/// itself); the rest of those statements are RELS-INT.
fn profile_from(
    pid: &str,
    dsid: &str,
    triples: &[Triple],
    header: Option<&ResourceHeaders>,
) -> (DatastreamProfile, Vec<Triple>) {
    let binary = format!("info:fedora/{pid}/{dsid}");
    let names = [
        [
            binary.clone(),
            format!("{}/{dsid}", object_id_strings(pid)[1]),
        ],
        [
            format!("{binary}/fcr:metadata"),
            format!("{}/{dsid}/fcr:metadata", object_id_strings(pid)[1]),
        ],
    ];
    let about = subject_filter(&names);
    let mut values: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut rels_int = Vec::new();
    for t in triples.iter().filter(|t| about(&t.subject)) {
        let p = t.predicate.as_str();
        let known = [
            vocab::TITLE,
            vocab::OBJ_STATE,
            vocab::FORMAT_DESIGNATION,
            vocab::CONTROL_GROUP,
            vocab::VERSIONABLE,
            vocab::VERSION_ID,
            vocab::CREATED,
            vocab::MIMETYPE,
            vocab::ALT_ID,
            vocab::SIZE,
            vocab::DIGEST_TYPE,
            vocab::DIGEST,
            vocab::LOCATION,
            vocab::LOCATION_TYPE,
            vocab::POSITION,
        ];
        match known.iter().find(|k| **k == p) {
            Some(k) => values.entry(k).or_default().push(term_text(&t.object)),
            None => rels_int.push(t.clone()),
        }
    }
    let one = |k: &str| {
        values
            .get(k)
            .and_then(|v| v.first())
            .cloned()
            .unwrap_or_default()
    };
    let control_group = one(vocab::CONTROL_GROUP);
    let version_id = one(vocab::VERSION_ID);
    let location = match values.get(vocab::LOCATION).and_then(|v| v.first()) {
        Some(l) => l.clone(),
        None if control_group == "X" => format!("{pid}+{dsid}+{version_id}"),
        None => header
            .and_then(|h| h.external_url.clone())
            .unwrap_or_default(),
    };
    let mime = match values.get(vocab::MIMETYPE).and_then(|v| v.first()) {
        Some(m) => m.clone(),
        None => header.and_then(|h| h.mime_type.clone()).unwrap_or_default(),
    };
    let state = match one(vocab::OBJ_STATE).as_str() {
        "" => "A".to_string(),
        s => s.to_string(),
    };
    let or = |v: String, default: &str| if v.is_empty() { default.to_string() } else { v };
    // Inline XML: the length of the bytes served (Fedora 3 gives its own serialization's).
    let size = match header.and_then(|h| h.content_size) {
        Some(n) if control_group == "X" && n >= 0 => n,
        _ => one(vocab::SIZE).parse().unwrap_or(0),
    };
    let profile = DatastreamProfile {
        pid: pid.to_string(),
        dsid: dsid.to_string(),
        label: one(vocab::TITLE),
        version_id,
        created: one(vocab::CREATED),
        state,
        mime,
        format_uri: one(vocab::FORMAT_DESIGNATION),
        control_group,
        size,
        versionable: one(vocab::VERSIONABLE) != "false",
        alt_ids: values.get(vocab::ALT_ID).cloned().unwrap_or_default(),
        location,
        location_type: one(vocab::LOCATION_TYPE),
        checksum_type: or(one(vocab::DIGEST_TYPE), "DISABLED"),
        checksum: or(one(vocab::DIGEST), "none"),
        position: one(vocab::POSITION).parse().ok(),
    };
    (profile, rels_int)
}

/// An object's OCFL inventory and where it is stored: the files of its versions.
struct StoredObject {
    ocfl_id: String,
    ocfl: std::sync::Arc<OcflRoot>,
    state: arca_ocfl::ObjectState,
    inventory: Inventory,
}

impl StoredObject {
    fn open(ocfl: std::sync::Arc<OcflRoot>, ocfl_id: String) -> Result<Self> {
        let state = ocfl
            .read_object(&ocfl_id)
            .map_err(|e| ViewError::Stored(ocfl_id.clone(), e.to_string()))?
            .ok_or_else(|| ViewError::Stored(ocfl_id.clone(), "not in the root".into()))?;
        Ok(Self {
            ocfl_id,
            ocfl,
            inventory: state.inventory.clone(),
            state,
        })
    }

    fn invalid(&self, message: &str) -> ViewError {
        ViewError::Stored(self.ocfl_id.clone(), message.to_string())
    }

    fn version(&self, number: u32) -> Result<VersionNum> {
        self.inventory
            .versions
            .keys()
            .find(|v| v.number == number)
            .copied()
            .ok_or_else(|| self.invalid(&format!("no version {number}")))
    }

    /// The content path (relative to the object) of `logical` in `version`.
    fn content(&self, version: VersionNum, logical: &str) -> Option<&str> {
        self.inventory.resolve_in(version, logical)
    }

    fn read(&self, version: VersionNum, logical: &str) -> Option<Vec<u8>> {
        self.ocfl
            .read_file(&self.state.key(self.content(version, logical)?))
            .ok()
    }

    fn header(&self, version: VersionNum, logical: &str) -> Option<ResourceHeaders> {
        ResourceHeaders::from_json(&self.read(version, logical)?).ok()
    }

    /// The version before the one that made the resource with header file `header` a
    /// tombstone; `None` if it is not one.
    fn before_tombstone(&self, header: &str) -> Option<VersionNum> {
        let last = self
            .inventory
            .path_changes(|p| p == header, false)
            .pop()?
            .version;
        if !self.header(last, header)?.deleted {
            return None;
        }
        self.inventory
            .versions
            .keys()
            .rev()
            .find(|v| v.number < last.number)
            .copied()
    }

    /// The datastream ids of `version`: its binaries directly below the object's root.
    fn datastream_ids(&self, version: VersionNum) -> Vec<String> {
        let Some(v) = self.inventory.versions.get(&version) else {
            return Vec::new();
        };
        let mut ids: Vec<String> = v
            .state
            .values()
            .flatten()
            .filter_map(|p| p.strip_prefix(".fcrepo/")?.strip_suffix(".json"))
            .filter(|s| {
                !s.contains('/')
                    && *s != "fcr-root"
                    && !s.ends_with("~fcr-desc")
                    && !s.ends_with("~fcr-acl")
            })
            .map(str::to_string)
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// Datastream `dsid` as it was in `version`, if it had a description there.
    fn datastream_at(
        &self,
        pid: &str,
        dsid: &str,
        version: VersionNum,
    ) -> Result<Option<DatastreamVersion>> {
        let Some(desc) = self.read(version, &format!("{dsid}~fcr-desc.nt")) else {
            return Ok(None);
        };
        let triples = arca_rdf::parse_ntriples(&desc)
            .map_err(|e| self.invalid(&format!("{dsid}~fcr-desc.nt: {e}")))?;
        let Some(binary) = self.binary_at(pid, dsid, version)? else {
            return Ok(None);
        };
        Ok(Some(version_from(pid, dsid, binary, &triples)))
    }

    /// A record of binary `dsid` built from its files in `version`.
    fn binary_at(
        &self,
        pid: &str,
        dsid: &str,
        version: VersionNum,
    ) -> Result<Option<ResourceRecord>> {
        let Some(headers) = self.header(version, &format!(".fcrepo/{dsid}.json")) else {
            return Ok(None);
        };
        let id = Views::datastream_id(pid, dsid)
            .ok_or_else(|| self.invalid(&format!("{dsid} is not a datastream id")))?;
        let logical = headers.content_path.clone().unwrap_or(dsid.to_string());
        let content_file = self.content(version, &logical).map(|p| self.state.key(p));
        Ok(Some(ResourceRecord {
            parent: id.path_parent(),
            id,
            ocfl_id: self.ocfl_id.clone(),
            headers,
            content_file,
            rdf: None,
            children_changed: None,
        }))
    }

    /// Every version of datastream `dsid`, newest first: the versions in which its
    /// description changed, up to its tombstone.
    fn history(&self, pid: &str, dsid: &str) -> Result<Vec<DatastreamVersion>> {
        let header = format!(".fcrepo/{dsid}.json");
        let end = self.before_tombstone(&header);
        let desc = format!("{dsid}~fcr-desc.nt");
        let mut out = Vec::new();
        for change in self.inventory.path_changes(|p| p == desc, false) {
            if end.is_some_and(|e| change.version.number > e.number) {
                continue;
            }
            // A RELS-INT change rewrites a description without a new datastream version.
            if let Some(v) = self.datastream_at(pid, dsid, change.version)? {
                let seen = out.iter().any(|o: &DatastreamVersion| {
                    o.profile.version_id == v.profile.version_id
                        && o.profile.created == v.profile.created
                });
                if !seen {
                    out.push(v);
                }
            }
        }
        out.sort_by_key(|v| std::cmp::Reverse(created_at(&v.profile)));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_as_fedora_3_accepts_them() {
        for ok in [
            "demo:5",
            "f3test:a.b-c~d_e",
            "f3-test.ns:1",
            "f3test:caf%C3%A9",
        ] {
            assert!(is_valid_pid(ok), "{ok}");
        }
        for bad in [
            "not a pid",
            "nocolon",
            ":x",
            "x:",
            "a:b/c",
            "a:%zz",
            "a b:c",
        ] {
            assert!(!is_valid_pid(bad), "{bad}");
        }
    }

    #[test]
    fn dates_with_and_without_milliseconds_and_zone() {
        let a = parse_date("2026-11-23T09:13:51.224Z").unwrap();
        assert_eq!(parse_date("2026-11-23T09:13:51.224").unwrap(), a);
        assert!(parse_date("2026-11-23T09:13:51Z").unwrap() < a);
        assert!(parse_date("2026-11-23").unwrap() < a);
        assert!(parse_date("yesterday").is_none());
    }

    fn nt(s: &str) -> Vec<Triple> {
        arca_rdf::parse_ntriples(s.as_bytes()).unwrap()
    }

    #[test]
    fn object_view_splits_properties_rels_ext_and_dc() {
        let triples = nt(concat!(
            "<info:fedora/demo:5> <info:fedora/fedora-system:def/model#state> \"Active\" .\n",
            "<info:fedora/demo:5> <info:fedora/fedora-system:def/model#label> \"Coliseum\" .\n",
            "<info:fedora/demo:5> <info:fedora/fedora-system:def/model#ownerId> \"fedoraAdmin\" .\n",
            "<info:fedora/demo:5> <info:fedora/fedora-system:def/model#createdDate> \"2008-07-02T05:09:42.015Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n",
            "<info:fedora/demo:5> <info:fedora/fedora-system:def/view#lastModifiedDate> \"2026-11-23T09:13:33.432Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n",
            "<info:fedora/demo:5> <info:fedora/fedora-system:def/model#hasModel> <info:fedora/demo:UVA_STD_IMAGE_1> .\n",
            "<info:fedora/demo:5> <http://www.w3.org/2004/02/skos/core#prefLabel> \"Colosseo\"@it .\n",
            "<info:fedora/demo:5> <http://purl.org/dc/elements/1.1/title> \"Coliseum in Rome\" .\n",
        ));
        let v = ObjectView::from_triples("demo:5", &triples);
        assert_eq!(v.label, "Coliseum");
        assert_eq!(v.state, "A");
        assert_eq!(v.created, "2008-07-02T05:09:42.015Z");
        assert_eq!(v.last_modified, "2026-11-23T09:13:33.432Z");
        assert_eq!(
            v.models,
            ["info:fedora/demo:UVA_STD_IMAGE_1", FEDORA_OBJECT_MODEL]
        );
        assert_eq!(
            v.dc_values("title").collect::<Vec<_>>(),
            ["Coliseum in Rome"]
        );
    }

    #[test]
    fn profile_from_description_triples() {
        let triples = nt(concat!(
            "<info:fedora/f3test:unicode/TEXT> <http://purl.org/dc/terms/title> \"Gr\\u00FC\\u00DFe\" .\n",
            "<info:fedora/f3test:unicode/TEXT> <info:fedora/fedora-system:def/foxml#CONTROL_GROUP> \"M\" .\n",
            "<info:fedora/f3test:unicode/TEXT> <info:fedora/fedora-system:def/foxml#VERSION_ID> \"TEXT.0\" .\n",
            "<info:fedora/f3test:unicode/TEXT> <info:fedora/fedora-system:def/foxml#ALT_ID> \"alt-id-1\" .\n",
            "<info:fedora/f3test:unicode/TEXT> <info:fedora/fedora-system:def/foxml#ALT_ID> \"alt-id-2\" .\n",
            "<info:fedora/f3test:unicode/TEXT> <info:fedora/fedora-system:def/foxml#SIZE> \"37\"^^<http://www.w3.org/2001/XMLSchema#long> .\n",
            "<info:fedora/f3test:unicode/TEXT> <info:fedora/fedora-system:def/foxml#VERSIONABLE> \"true\" .\n",
            "<info:fedora/f3test:unicode/TEXT> <http://example.org/ns#note> \"rels-int\" .\n",
            "<info:fedora/f3test:unicode/DC> <http://example.org/ns#note> \"not about TEXT\" .\n",
        ));
        let (p, rels) = profile_from("f3test:unicode", "TEXT", &triples, None);
        assert_eq!(p.label, "Grüße");
        assert_eq!(p.control_group, "M");
        assert_eq!(p.size, 37);
        assert_eq!(p.alt_ids, ["alt-id-1", "alt-id-2"]);
        assert_eq!(p.state, "A");
        assert_eq!(p.checksum_type, "DISABLED");
        assert_eq!(p.checksum, "none");
        assert_eq!(rels.len(), 1);
        let x = nt("<info:fedora/demo:5/DC> <info:fedora/fedora-system:def/foxml#CONTROL_GROUP> \"X\" .\n<info:fedora/demo:5/DC> <info:fedora/fedora-system:def/foxml#VERSION_ID> \"DC1.0\" .\n");
        assert_eq!(
            profile_from("demo:5", "DC", &x, None).0.location,
            "demo:5+DC+DC1.0"
        );
    }
}
