//! A Fedora 3 object mapped to Fedora 6's OCFL form, as Fedora's migration-utils (6.x,
//! default options) maps it, keeping what migration-utils loses.
//!
//! - The object becomes the Archival Group `info:fedora/{pid}`: a basic container whose
//!   triples are the FOXML object properties (each `NAME` a predicate; dates typed
//!   `xsd:dateTime`), the current RELS-EXT statements and the current DC as Dublin Core 1.1
//!   elements.
//! - Each datastream becomes the binary `info:fedora/{pid}/{dsid}` (X: its XML, M: its
//!   bytes, E/R: a `proxy`/`redirect` external binary whose URL is never fetched), with a
//!   description holding `dcterms:title` (LABEL), `objState`, `premis:formatDesignation`,
//!   the FOXML attributes migration-utils drops ([`crate::vocab`]) and its RELS-INT
//!   statements; RELS-INT `downloadFilename` names the binary's file.
//! - One OCFL version per distinct datastream-version `CREATED` instant, oldest first, at
//!   that instant: versions less than a second apart stay distinct versions (Fedora 6's
//!   Memento API shows one memento per second; the Fedora 3 facade shows each).
//! - A deleted object (or datastream) gets a last version in which its resources are
//!   tombstones, dated by the object's last modification.
//! - Managed content is copied while its Fedora 3 checksum (MD5, SHA-1, SHA-256, SHA-384,
//!   SHA-512) is verified; a mismatch fails the object.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use arca_model::{
    format_instant, parse_instant, state_token, DigestAlgorithm, DigestValue, FedoraId,
    InteractionModel, MultiHasher, ResourceHeaders, Timestamp,
};
use arca_ocfl::{Change, Content as OcflContent, NewVersion, VersionInfo};
use oxrdf::{Literal, NamedNode, NamedOrBlankNode, Term, Triple};

use crate::checksum::{Checksum, ChecksumCheck};
use crate::model::{
    Content, ControlGroup, DatastreamState, DatastreamVersion, F3Object, ObjectState, PROP_CREATED,
    PROP_MODIFIED,
};
use crate::vocab;

/// How objects are mapped.
#[derive(Debug, Clone)]
pub struct MapOptions {
    /// The user named as creator and last modifier of every resource (migration-utils'
    /// `--user`, default `fedoraAdmin`).
    pub user: String,
    /// Where copies of managed content are written before they move into the object (the
    /// OCFL root's staging area).
    pub staging: PathBuf,
    /// The OCFL root's digest algorithm for new objects.
    pub algorithm: DigestAlgorithm,
    /// A fingerprint of the source (e.g. the FOXML's SHA-256), recorded in every version's
    /// message so that a resumed import can tell an object it already imported.
    pub fingerprint: String,
}

/// Why an object cannot be mapped.
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    /// The PID cannot be a Fedora 6 id.
    #[error("PID {pid:?} cannot be a Fedora 6 id: {reason}")]
    BadPid {
        /// The PID.
        pid: String,
        /// Why.
        reason: String,
    },
    /// A date that does not parse.
    #[error("{what}: {value:?} is not a date")]
    BadDate {
        /// Where it was.
        what: String,
        /// The text.
        value: String,
    },
    /// Managed content whose file is missing from the store.
    #[error("{datastream}: managed content {reference:?} is not in the datastream store")]
    MissingContent {
        /// `DSID/version`.
        datastream: String,
        /// The `INTERNAL_ID`.
        reference: String,
    },
    /// Managed content given by URL (ingest form), which the importer never fetches.
    #[error("{datastream}: managed content by URL {url:?} is not fetched; import the object from a store or an archive export")]
    ManagedByUrl {
        /// `DSID/version`.
        datastream: String,
        /// The URL.
        url: String,
    },
    /// E or R content whose location is not a URL.
    #[error("{datastream}: external location {url:?} is not a URL")]
    BadUrl {
        /// `DSID/version`.
        datastream: String,
        /// The text.
        url: String,
    },
    /// A datastream version without content.
    #[error("{datastream}: no content")]
    NoContent {
        /// `DSID/version`.
        datastream: String,
    },
    /// The bytes do not match Fedora 3's recorded checksum.
    #[error("{datastream}: {algorithm} checksum mismatch: Fedora 3 recorded {expected}, the content has {actual}")]
    ChecksumMismatch {
        /// `DSID/version`.
        datastream: String,
        /// Fedora 3's algorithm name.
        algorithm: String,
        /// Recorded.
        expected: String,
        /// Computed.
        actual: String,
    },
    /// RELS-EXT or RELS-INT that is not RDF/XML.
    #[error("{datastream}: not RDF/XML: {message}")]
    BadRdf {
        /// `DSID/version`.
        datastream: String,
        /// The parser's message.
        message: String,
    },
    /// Reading or copying content failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The outcome of mapping one object.
#[derive(Debug)]
pub struct MappedObject {
    /// The OCFL object id (`info:fedora/{pid}`).
    pub ocfl_id: String,
    /// Its versions, oldest first.
    pub versions: Vec<NewVersion>,
    /// What was carried, per datastream.
    pub datastreams: Vec<DatastreamReport>,
}

/// What the import did with one datastream.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DatastreamReport {
    /// `DSID`.
    pub id: String,
    /// X, M, E or R.
    pub control_group: &'static str,
    /// A, I or D.
    pub state: &'static str,
    /// Versions imported.
    pub versions: usize,
    /// Bytes of content imported (all versions).
    pub bytes: u64,
    /// Per version: the Fedora 3 checksum and the digest of the imported bytes.
    pub checksums: Vec<ChecksumCheck>,
}

/// The message of every version of an imported object; the fingerprint follows it.
pub const VERSION_MESSAGE: &str = "Imported from Fedora 3 by arca; source ";

/// The source fingerprint an imported object's first version records, if it was imported.
pub fn imported_fingerprint(inventory: &arca_ocfl::Inventory) -> Option<&str> {
    inventory
        .versions
        .values()
        .next()
        .and_then(|v| v.message.as_deref())
        .and_then(|m| m.strip_prefix(VERSION_MESSAGE))
}

/// The OCFL object id (and Fedora id) of Fedora 3 object `pid`.
pub fn object_id(pid: &str) -> String {
    format!("info:fedora/{pid}")
}

/// Maps `object` (whose `INTERNAL_ID` references `resolve` turns into files).
pub fn map_object(
    object: &F3Object,
    resolve: &dyn Fn(&str) -> Option<PathBuf>,
    options: &MapOptions,
) -> Result<MappedObject, MapError> {
    Mapper::new(object, resolve, options)?.run()
}

/// One datastream version placed on the time line.
struct Entry<'a> {
    at: Timestamp,
    datastream: usize,
    version: &'a DatastreamVersion,
}

/// The running state of a datastream across the versions written so far.
struct Written {
    created: String,
    binary_header: ResourceHeaders,
    description: Vec<Triple>,
}

struct Mapper<'a> {
    object: &'a F3Object,
    resolve: &'a dyn Fn(&str) -> Option<PathBuf>,
    options: &'a MapOptions,
    pid_iri: String,
    dc: Vec<Triple>,
    rels_ext: Vec<Triple>,
    rels_int: HashMap<String, Vec<Triple>>,
    written: BTreeMap<usize, Written>,
    reports: Vec<DatastreamReport>,
}

impl<'a> Mapper<'a> {
    fn new(
        object: &'a F3Object,
        resolve: &'a dyn Fn(&str) -> Option<PathBuf>,
        options: &'a MapOptions,
    ) -> Result<Self, MapError> {
        let pid_iri = object_id(&object.pid);
        let bad_pid = |reason: String| MapError::BadPid {
            pid: object.pid.clone(),
            reason,
        };
        if object.pid.contains('/') {
            return Err(bad_pid("it contains '/'".into()));
        }
        FedoraId::from_internal(&pid_iri).map_err(|e| bad_pid(e.to_string()))?;
        NamedNode::new(&pid_iri).map_err(|e| bad_pid(e.to_string()))?;
        let reports = object
            .datastreams
            .iter()
            .map(|d| DatastreamReport {
                id: d.id.clone(),
                control_group: d.control_group.letter(),
                state: d.state.letter(),
                versions: d.versions.len(),
                bytes: 0,
                checksums: Vec::new(),
            })
            .collect();
        Ok(Self {
            object,
            resolve,
            options,
            pid_iri,
            dc: Vec::new(),
            rels_ext: Vec::new(),
            rels_int: HashMap::new(),
            written: BTreeMap::new(),
            reports,
        })
    }

    fn run(mut self) -> Result<MappedObject, MapError> {
        let object_created = self.object_date(PROP_CREATED)?;
        let mut entries = Vec::new();
        for (i, ds) in self.object.datastreams.iter().enumerate() {
            for v in &ds.versions {
                let at = match &v.created {
                    Some(c) => parse_date(c, &format!("{}/{}", ds.id, v.id))?,
                    None => object_created.unwrap_or_else(arca_model::now),
                };
                entries.push(Entry {
                    at,
                    datastream: i,
                    version: v,
                });
            }
        }
        // Oldest first; versions of one datastream keep their document order on ties.
        entries.sort_by_key(|e| e.at);
        let mut versions = Vec::new();
        let mut start = 0;
        while start < entries.len() {
            let at = entries[start].at;
            let end = start + entries[start..].iter().take_while(|e| e.at == at).count();
            let first = versions.is_empty();
            let changes = self.version(&entries[start..end], at, first)?;
            versions.push(self.new_version(at, changes));
            start = end;
        }
        if versions.is_empty() {
            // An object without datastreams: the container alone.
            let at = object_created.unwrap_or_else(arca_model::now);
            let changes = self.container(at, false)?;
            versions.push(self.new_version(at, changes));
        }
        if let Some((at, changes)) = self.tombstones()? {
            versions.push(self.new_version(at, changes));
        }
        Ok(MappedObject {
            ocfl_id: self.pid_iri.clone(),
            versions,
            datastreams: self.reports,
        })
    }

    fn new_version(&self, at: Timestamp, changes: Vec<Change>) -> NewVersion {
        NewVersion {
            info: VersionInfo {
                created: format_instant(at),
                message: format!("{VERSION_MESSAGE}{}", self.options.fingerprint),
                user_name: self.options.user.clone(),
                user_address: format!("info:fedora/{}", self.options.user),
            },
            changes,
        }
    }

    fn object_date(&self, name: &str) -> Result<Option<Timestamp>, MapError> {
        self.object
            .property(name)
            .map(|v| parse_date(v, name))
            .transpose()
    }

    /// The changes of one version: every datastream version created at `at`, the
    /// descriptions and file names RELS-INT changes, and the container.
    fn version(
        &mut self,
        entries: &[Entry<'_>],
        at: Timestamp,
        first: bool,
    ) -> Result<Vec<Change>, MapError> {
        let mut changes = Vec::new();
        let mut rels_int_changed = false;
        let mut container_changed = first;
        for entry in entries {
            let ds = &self.object.datastreams[entry.datastream];
            let label = format!("{}/{}", ds.id, entry.version.id);
            match ds.id.as_str() {
                "DC" => {
                    self.dc = dc_triples(&self.pid_iri, &entry.version.content);
                    container_changed = true;
                }
                "RELS-EXT" => {
                    self.rels_ext = rdf_xml(&entry.version.content, &self.pid_iri, &label)?;
                    container_changed = true;
                }
                "RELS-INT" => {
                    let triples = rdf_xml(&entry.version.content, &self.pid_iri, &label)?;
                    self.rels_int.clear();
                    for t in triples {
                        let NamedOrBlankNode::NamedNode(s) = &t.subject else {
                            continue;
                        };
                        self.rels_int
                            .entry(s.as_str().to_string())
                            .or_default()
                            .push(t);
                    }
                    rels_int_changed = true;
                }
                _ => {}
            }
            changes.extend(self.datastream_version(entry, at)?);
        }
        if rels_int_changed {
            let in_this: Vec<usize> = entries.iter().map(|e| e.datastream).collect();
            let others: Vec<usize> = self
                .written
                .keys()
                .copied()
                .filter(|i| !in_this.contains(i))
                .collect();
            for i in others {
                changes.extend(self.relabel(i, at));
            }
        }
        if container_changed || !changes.is_empty() {
            changes.extend(self.container(at, false)?);
        }
        Ok(changes)
    }

    /// The binary, its content and its description for one datastream version.
    fn datastream_version(
        &mut self,
        entry: &Entry<'_>,
        at: Timestamp,
    ) -> Result<Vec<Change>, MapError> {
        let ds = &self.object.datastreams[entry.datastream];
        let v = entry.version;
        let label = format!("{}/{}", ds.id, v.id);
        let binary_iri = format!("{}/{}", self.pid_iri, ds.id);
        let created = self
            .written
            .get(&entry.datastream)
            .map(|w| w.created.clone())
            .unwrap_or_else(|| format_instant(at));
        let mut headers = ResourceHeaders::new(
            binary_iri.clone(),
            Some(self.pid_iri.clone()),
            InteractionModel::NonRdfSource,
        );
        headers.archival_group_id = Some(self.pid_iri.clone());
        headers.mime_type = Some(if v.mime_type.trim().is_empty() {
            "application/octet-stream".to_string()
        } else {
            v.mime_type.clone()
        });
        headers.filename = Some(self.filename(&binary_iri, &ds.id));
        headers.created_date = Some(created.clone());
        headers.created_by = Some(self.options.user.clone());
        headers.touch(at, &self.options.user);
        let mut changes = Vec::new();
        let check = match ds.control_group {
            ControlGroup::External | ControlGroup::Redirect => {
                let Content::Url(url) = &v.content else {
                    return Err(MapError::NoContent { datastream: label });
                };
                // Fedora 3 kept locations as typed; surrounding blanks are not part of one.
                let url = &url.trim().to_string();
                if !is_url(url) {
                    return Err(MapError::BadUrl {
                        datastream: label,
                        url: url.clone(),
                    });
                }
                headers.external_url = Some(url.clone());
                headers.external_handling = Some(
                    if ds.control_group == ControlGroup::External {
                        "proxy"
                    } else {
                        "redirect"
                    }
                    .to_string(),
                );
                headers.content_size = Some(v.size.filter(|s| *s > 0).unwrap_or(-1));
                ChecksumCheck::external(&v.id, v.digest.as_ref())
            }
            ControlGroup::InlineXml | ControlGroup::Managed => {
                let (content, size, ocfl_digest, check) =
                    self.content(ds.control_group, v, &label)?;
                let mut digests = vec![ocfl_digest.urn()];
                if let Some(extra) = check.fedora6_urn() {
                    if !digests.contains(&extra) {
                        digests.push(extra);
                    }
                }
                headers.content_size = Some(size as i64);
                headers.digests = Some(digests);
                headers.content_path = Some(ds.id.clone());
                self.reports[entry.datastream].bytes += size;
                changes.push(Change {
                    logical_path: ds.id.clone(),
                    content: Some(content),
                });
                check
            }
        };
        self.reports[entry.datastream].checksums.push(check);
        let description =
            description_triples(&self.object.pid, &binary_iri, entry.datastream, ds, v)?;
        self.written.insert(
            entry.datastream,
            Written {
                created,
                binary_header: headers,
                description,
            },
        );
        changes.extend(self.write_datastream(entry.datastream));
        Ok(changes)
    }

    /// The content of an X or M version, with its size, its digest in the OCFL algorithm,
    /// and its Fedora 3 checksum checked.
    fn content(
        &self,
        group: ControlGroup,
        v: &DatastreamVersion,
        label: &str,
    ) -> Result<(OcflContent, u64, DigestValue, ChecksumCheck), MapError> {
        let checksum = Checksum::for_digest(v.digest.as_ref());
        match &v.content {
            Content::Xml(bytes) | Content::Inline(bytes) => {
                let mut hasher = MultiHasher::new(&[self.options.algorithm]);
                hasher.update(bytes);
                let mut f3 = checksum.hasher();
                f3.update(bytes);
                let digest = hasher.finish().remove(0);
                let check = f3.check(&v.id, group == ControlGroup::InlineXml);
                check.verify(label)?;
                Ok((
                    OcflContent::Bytes(bytes.clone()),
                    bytes.len() as u64,
                    digest,
                    check,
                ))
            }
            Content::Internal(reference) => {
                let path = (self.resolve)(reference).ok_or_else(|| MapError::MissingContent {
                    datastream: label.to_string(),
                    reference: reference.clone(),
                })?;
                let (copy, size, digest, f3) = self.copy(&path, checksum)?;
                let check = f3.check(&v.id, false);
                if let Err(e) = check.verify(label) {
                    let _ = std::fs::remove_file(&copy);
                    return Err(e);
                }
                Ok((
                    OcflContent::File {
                        path: copy,
                        digest: digest.clone(),
                    },
                    size,
                    digest,
                    check,
                ))
            }
            Content::Url(url) => Err(MapError::ManagedByUrl {
                datastream: label.to_string(),
                url: url.clone(),
            }),
            Content::None => Err(MapError::NoContent {
                datastream: label.to_string(),
            }),
        }
    }

    /// Copies a store file into the staging area, hashing it on the way.
    fn copy(
        &self,
        path: &Path,
        checksum: Checksum,
    ) -> Result<(PathBuf, u64, DigestValue, crate::checksum::F3Hasher), MapError> {
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| MapError::Io { path: p, source }
        };
        let copy = self
            .options
            .staging
            .join(format!("f3-{}", uuid::Uuid::new_v4().simple()));
        let mut input = File::open(path).map_err(io(path))?;
        let mut output = File::create(&copy).map_err(io(&copy))?;
        let mut hasher = MultiHasher::new(&[self.options.algorithm]);
        let mut f3 = checksum.hasher();
        let mut buf = vec![0u8; 256 * 1024];
        let mut size = 0u64;
        let result = (|| loop {
            let n = input.read(&mut buf).map_err(io(path))?;
            if n == 0 {
                return Ok(());
            }
            hasher.update(&buf[..n]);
            f3.update(&buf[..n]);
            output.write_all(&buf[..n]).map_err(io(&copy))?;
            size += n as u64;
        })();
        if let Err(e) = result {
            let _ = std::fs::remove_file(&copy);
            return Err(e);
        }
        Ok((copy, size, hasher.finish().remove(0), f3))
    }

    /// The file name of a binary: RELS-INT's `downloadFilename`, else the DSID.
    fn filename(&self, binary_iri: &str, dsid: &str) -> String {
        self.rels_int
            .get(binary_iri)
            .into_iter()
            .flatten()
            .find(|t| t.predicate.as_str() == vocab::DOWNLOAD_FILENAME)
            .and_then(|t| match &t.object {
                Term::Literal(l) => Some(l.value().to_string()),
                _ => None,
            })
            .unwrap_or_else(|| dsid.to_string())
    }

    /// A datastream whose description (RELS-INT) or file name changed at `at` without a
    /// new version of its own: its headers and description again.
    fn relabel(&mut self, i: usize, at: Timestamp) -> Vec<Change> {
        let dsid = self.object.datastreams[i].id.clone();
        let binary_iri = format!("{}/{dsid}", self.pid_iri);
        let filename = self.filename(&binary_iri, &dsid);
        let w = self.written.get_mut(&i).expect("written");
        w.binary_header.filename = Some(filename);
        w.binary_header.touch(at, &self.options.user);
        self.write_datastream(i)
    }

    /// The header and the description of a datastream as it stands.
    fn write_datastream(&self, i: usize) -> Vec<Change> {
        let dsid = &self.object.datastreams[i].id;
        let w = &self.written[&i];
        let mut changes = vec![bytes_change(
            &format!(".fcrepo/{dsid}.json"),
            w.binary_header.to_json(),
        )];
        let binary_iri = format!("{}/{dsid}", self.pid_iri);
        let mut triples = w.description.clone();
        triples.extend(
            self.rels_int
                .get(&binary_iri)
                .into_iter()
                .flatten()
                .cloned(),
        );
        changes.extend(rdf_source(
            &format!(".fcrepo/{dsid}~fcr-desc.json"),
            description_header(&w.binary_header),
            Some(&triples),
            self.options.algorithm,
        ));
        changes
    }

    /// The container's header and triples as of `at` (a tombstone when `deleted`).
    fn container(&self, at: Timestamp, deleted: bool) -> Result<Vec<Change>, MapError> {
        let created = self
            .object_date(PROP_CREATED)?
            .map(format_instant)
            .unwrap_or_else(|| format_instant(at));
        let mut headers = ResourceHeaders::new(
            self.pid_iri.clone(),
            Some("info:fedora".to_string()),
            InteractionModel::BasicContainer,
        );
        headers.created_date = Some(created);
        headers.created_by = Some(self.options.user.clone());
        headers.touch(at, &self.options.user);
        headers.archival_group = true;
        headers.object_root = true;
        let triples = if deleted {
            tombstone(&mut headers, at);
            None
        } else {
            Some(self.container_triples()?)
        };
        Ok(rdf_source(
            ".fcrepo/fcr-root.json",
            headers,
            triples.as_deref(),
            self.options.algorithm,
        ))
    }

    fn container_triples(&self) -> Result<Vec<Triple>, MapError> {
        let subject = NamedNode::new_unchecked(&self.pid_iri);
        let mut triples = Vec::new();
        for (name, value) in &self.object.properties {
            let Ok(predicate) = NamedNode::new(name) else {
                continue;
            };
            let object = if name.contains("Date") {
                Literal::new_typed_literal(value, NamedNode::new_unchecked(vocab::XSD_DATETIME))
            } else {
                Literal::new_simple_literal(value)
            };
            triples.push(Triple::new(subject.clone(), predicate, object));
        }
        triples.extend(self.rels_ext.iter().cloned());
        triples.extend(self.dc.iter().cloned());
        Ok(triples)
    }

    /// The last version of a deleted object, or of an object with deleted datastreams:
    /// their resources become tombstones, dated by the object's last modification (or
    /// 1 ms after its last version).
    fn tombstones(&self) -> Result<Option<(Timestamp, Vec<Change>)>, MapError> {
        let object_deleted = self.object.state() == ObjectState::Deleted;
        let deleted: Vec<usize> = self
            .written
            .keys()
            .copied()
            .filter(|&i| {
                object_deleted || self.object.datastreams[i].state == DatastreamState::Deleted
            })
            .collect();
        if deleted.is_empty() && !object_deleted {
            return Ok(None);
        }
        let last = self
            .written
            .values()
            .filter_map(|w| w.binary_header.last_modified_date.as_deref())
            .filter_map(parse_instant)
            .max();
        let floor = last.map(|l| l + time::Duration::milliseconds(1));
        let modified = self.object_date(PROP_MODIFIED)?;
        let at = match (modified, floor) {
            (Some(m), Some(f)) => m.max(f),
            (Some(m), None) => m,
            (None, Some(f)) => f,
            (None, None) => arca_model::now(),
        };
        let mut changes = Vec::new();
        for i in deleted {
            let dsid = &self.object.datastreams[i].id;
            let w = &self.written[&i];
            let mut h = w.binary_header.clone();
            tombstone(&mut h, at);
            let mut d = description_header(&h);
            tombstone(&mut d, at);
            changes.push(bytes_change(&format!(".fcrepo/{dsid}.json"), h.to_json()));
            if w.binary_header.content_path.is_some() {
                changes.push(Change {
                    logical_path: dsid.clone(),
                    content: None,
                });
            }
            changes.extend(rdf_source(
                &format!(".fcrepo/{dsid}~fcr-desc.json"),
                d,
                None,
                self.options.algorithm,
            ));
        }
        changes.extend(self.container(at, object_deleted)?);
        Ok(Some((at, changes)))
    }
}

/// The header of a binary's description, dated as the binary.
fn description_header(binary: &ResourceHeaders) -> ResourceHeaders {
    let mut d = binary.clone();
    d.id = format!("{}/fcr:metadata", binary.id);
    d.parent = Some(binary.id.clone());
    d.interaction_model = InteractionModel::NonRdfSourceDescription.iri().to_string();
    d.mime_type = None;
    d.filename = None;
    d.content_size = None;
    d.digests = None;
    d.external_url = None;
    d.external_handling = None;
    d.deleted = false;
    d
}

/// Marks a header deleted at `at`, as Fedora's delete does.
fn tombstone(h: &mut ResourceHeaders, at: Timestamp) {
    let at_s = format_instant(at);
    h.deleted = true;
    h.last_modified_date = Some(at_s.clone());
    h.memento_created_date = Some(at_s);
    h.state_token = Some(state_token(at));
    h.content_path = None;
    h.content_size = Some(-1);
    h.digests = Some(Vec::new());
}

/// The header and content of an RDF source (`triples`), as the write path stores them:
/// N-Triples, with their size and digest in the header; or of a tombstone (`None`: the
/// header already marked deleted, the content file leaving the state).
fn rdf_source(
    header_path: &str,
    mut headers: ResourceHeaders,
    triples: Option<&[Triple]>,
    algorithm: DigestAlgorithm,
) -> Vec<Change> {
    let content_path = header_path
        .strip_prefix(".fcrepo/")
        .and_then(|p| p.strip_suffix(".json"))
        .map(|p| match p {
            "fcr-root" => "fcr-container.nt".to_string(),
            desc => format!("{desc}.nt"),
        })
        .expect("an RDF source's header path");
    let Some(triples) = triples else {
        return vec![
            bytes_change(header_path, headers.to_json()),
            Change {
                logical_path: content_path,
                content: None,
            },
        ];
    };
    let nt = arca_rdf::to_ntriples(triples);
    headers.content_size = Some(nt.len() as i64);
    headers.digests = Some(vec![DigestValue {
        algorithm,
        hex: MultiHasher::digest(algorithm, &nt),
    }
    .urn()]);
    headers.content_path = Some(content_path.clone());
    vec![
        bytes_change(header_path, headers.to_json()),
        bytes_change(&content_path, nt),
    ]
}

fn bytes_change(path: &str, bytes: Vec<u8>) -> Change {
    Change {
        logical_path: path.to_string(),
        content: Some(OcflContent::Bytes(bytes)),
    }
}

/// Parses a Fedora 3 date (`2026-11-23T09:13:34.961Z`; also without fraction or `Z`).
pub fn parse_date(value: &str, what: &str) -> Result<Timestamp, MapError> {
    let v = value.trim();
    parse_instant(v)
        .or_else(|| parse_instant(&format!("{v}Z")))
        .ok_or_else(|| MapError::BadDate {
            what: what.to_string(),
            value: value.to_string(),
        })
}

/// The description triples of one datastream version (RELS-INT statements are added by
/// the caller).
fn description_triples(
    pid: &str,
    binary_iri: &str,
    position: usize,
    ds: &crate::model::Datastream,
    v: &DatastreamVersion,
) -> Result<Vec<Triple>, MapError> {
    let s = NamedNode::new_unchecked(binary_iri);
    let mut out = Vec::new();
    let mut add = |p: &str, o: Literal| {
        out.push(Triple::new(s.clone(), NamedNode::new_unchecked(p), o));
    };
    let plain = |v: &str| Literal::new_simple_literal(v);
    let typed = |v: String, t: &str| Literal::new_typed_literal(v, NamedNode::new_unchecked(t));
    add(vocab::TITLE, plain(&v.label));
    add(vocab::OBJ_STATE, plain(ds.state.letter()));
    if let Some(f) = v.format_uri.as_deref().filter(|f| !f.is_empty()) {
        add(vocab::FORMAT_DESIGNATION, plain(f));
    }
    add(vocab::CONTROL_GROUP, plain(ds.control_group.letter()));
    add(vocab::POSITION, typed(position.to_string(), vocab::XSD_INT));
    add(
        vocab::VERSIONABLE,
        plain(if ds.versionable { "true" } else { "false" }),
    );
    add(vocab::VERSION_ID, plain(&v.id));
    if let Some(c) = &v.created {
        add(vocab::CREATED, typed(c.clone(), vocab::XSD_DATETIME));
    }
    add(vocab::MIMETYPE, plain(&v.mime_type));
    for alt in &v.alt_ids {
        add(vocab::ALT_ID, plain(alt));
    }
    if let Some(size) = v.size {
        add(vocab::SIZE, typed(size.to_string(), vocab::XSD_LONG));
    }
    if let Some(d) = &v.digest {
        add(vocab::DIGEST_TYPE, plain(&d.kind));
        add(vocab::DIGEST, plain(&d.value));
    }
    match &v.content {
        Content::Internal(r) => {
            add(vocab::LOCATION, plain(r));
            add(vocab::LOCATION_TYPE, plain("INTERNAL_ID"));
        }
        // Managed content inline (an archive export): the internal id Fedora 3 gives it on
        // ingest, so that an object reads the same whichever form it came in.
        Content::Inline(_) if ds.control_group == ControlGroup::Managed => {
            add(vocab::LOCATION, plain(&format!("{pid}+{}+{}", ds.id, v.id)));
            add(vocab::LOCATION_TYPE, plain("INTERNAL_ID"));
        }
        Content::Url(u) => {
            add(vocab::LOCATION, plain(u));
            add(vocab::LOCATION_TYPE, plain("URL"));
        }
        _ => {}
    }
    Ok(out)
}

/// DC's elements as Dublin Core 1.1 triples about the object (empty elements left out).
fn dc_triples(pid_iri: &str, content: &Content) -> Vec<Triple> {
    let (Content::Xml(bytes) | Content::Inline(bytes)) = content else {
        return Vec::new();
    };
    let subject = NamedNode::new_unchecked(pid_iri);
    let mut reader = quick_xml::NsReader::from_reader(bytes.as_slice());
    let mut out = Vec::new();
    let mut current: Option<(String, Option<String>, String)> = None;
    let mut buf = Vec::new();
    loop {
        use quick_xml::events::Event;
        use quick_xml::name::ResolveResult;
        match reader.read_resolved_event_into(&mut buf) {
            Ok((ResolveResult::Bound(ns), Event::Start(e)))
                if ns.as_ref() == vocab::DC_ELEMENTS.as_bytes() =>
            {
                let local = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                let lang = e
                    .attributes()
                    .flatten()
                    .find(|a| a.key.as_ref() == b"xml:lang")
                    .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()));
                current = Some((local, lang, String::new()));
            }
            Ok((_, Event::Text(t))) => {
                if let (Some((_, _, text)), Ok(s)) = (current.as_mut(), t.unescape()) {
                    text.push_str(&s);
                }
            }
            Ok((_, Event::CData(t))) => {
                if let Some((_, _, text)) = current.as_mut() {
                    text.push_str(&String::from_utf8_lossy(&t));
                }
            }
            Ok((_, Event::End(_))) => {
                if let Some((local, lang, text)) = current.take() {
                    let text = text.trim();
                    if text.is_empty() {
                        continue;
                    }
                    let Ok(p) = NamedNode::new(format!("{}{local}", vocab::DC_ELEMENTS)) else {
                        continue;
                    };
                    let o = match lang
                        .and_then(|l| Literal::new_language_tagged_literal(text, l).ok())
                    {
                        Some(l) => l,
                        None => Literal::new_simple_literal(text),
                    };
                    out.push(Triple::new(subject.clone(), p, o));
                }
            }
            Ok((_, Event::Eof)) | Err(_) => break,
            _ => {}
        }
        buf.clear();
    }
    out
}

/// RELS-EXT or RELS-INT statements.
fn rdf_xml(content: &Content, base: &str, label: &str) -> Result<Vec<Triple>, MapError> {
    let (Content::Xml(bytes) | Content::Inline(bytes)) = content else {
        return Ok(Vec::new());
    };
    arca_rdf::parse(
        bytes,
        arca_rdf::RdfFormat::RdfXml,
        base,
        &arca_rdf::IdMapper::new("http://localhost/rest"),
        &arca_rdf::ParseLimits::default(),
    )
    .map_err(|e| MapError::BadRdf {
        datastream: label.to_string(),
        message: e.to_string(),
    })
}

/// Whether `s` is an absolute URL (an IRI with a scheme followed by `:`).
fn is_url(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    !rest.is_empty()
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && NamedNode::new(s).is_ok()
}
