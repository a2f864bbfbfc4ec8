//! Planned changes: what a write will do to each OCFL object (`ObjectPlan`), built in
//! memory from the objects' current state, then staged as new versions (`Staging`).

use arca_catalog::{CatalogOp, MementoRow, ResourceRecord};
use arca_model::{
    format_instant, parse_instant, DigestAlgorithm, DigestValue, FedoraId, MultiHasher,
    ResourceHeaders, Timestamp,
};
use arca_ocfl::{Change, Content, ObjectState, Staged};
use oxrdf::Triple;

use crate::write::model_of;
use crate::{
    BinaryData, Constraint, Durability, Error, ReceivedBinary, Repository, Result,
    ACL_CONTAINER_CONTENT, CONTAINER_CONTENT, ROOT_HEADER,
};

/// One resource to (re)write inside an object in a planned change.
pub(crate) struct ResourcePlan {
    pub(crate) headers: ResourceHeaders,
    pub(crate) parent: Option<FedoraId>,
    pub(crate) content_logical: Option<String>,
    pub(crate) rdf: Option<Vec<u8>>,
}

/// All changes to one OCFL object in a planned change.
pub(crate) struct ObjectPlan {
    pub(crate) ocfl_id: String,
    /// The change must become an immutable version even with auto-versioning off
    /// (deletes, as in Fedora 6, and `POST fcr:versions`).
    pub(crate) new_version: bool,
    pub(crate) current: Option<ObjectState>,
    /// The object's digest algorithm: its inventory's, or for a new object the root's.
    /// Header digests and staged uploads use it.
    pub(crate) algorithm: DigestAlgorithm,
    pub(crate) changes: Vec<Change>,
    pub(crate) resources: Vec<ResourcePlan>,
    /// `current` was read after the changes stopped nodes left on the object were
    /// recovered (without a journal; see `direct`).
    pub(crate) recovered: bool,
}

impl ObjectPlan {
    /// The earliest instant the change's new version may be dated: after the object's head
    /// version, and not before any date the change writes into a resource's headers. The
    /// nodes sharing a store may have clocks apart; an object's versions, and so its
    /// mementos, are still dated in the order they were written.
    pub(crate) fn earliest_version_date(&self) -> Option<Timestamp> {
        let after_head = self
            .current
            .as_ref()
            .and_then(|c| c.inventory.head_version())
            .and_then(|v| parse_instant(&v.created))
            .map(|t| t + std::time::Duration::from_millis(1));
        let written = self.resources.iter().filter_map(|r| {
            r.headers
                .last_modified_date
                .as_deref()
                .and_then(parse_instant)
        });
        after_head.into_iter().chain(written).max()
    }
}

/// Planned changes prepared in memory ([`Repository::stage_all`]).
pub(crate) struct Staging {
    /// Each object's new version (or mutable-HEAD revision), with the resources it writes.
    pub(crate) staged: Vec<(Staged, Vec<ResourcePlan>)>,
    /// Objects whose mutable HEAD the change commits into a version.
    pub(crate) head_commits: Vec<String>,
}

impl Staging {
    /// The catalog records of every resource written, and the mementos their headers make:
    /// every header written in an immutable version makes one (Fedora 6's rule; a
    /// tombstone is not one), dated `created`.
    pub(crate) fn records(
        &self,
        created: arca_model::Timestamp,
    ) -> (Vec<ResourceRecord>, Vec<CatalogOp>) {
        let mut records = Vec::new();
        let mut mementos = Vec::new();
        for (s, resources) in &self.staged {
            let dir = s.object_prefix();
            let version = s.new_version();
            for r in resources {
                let record = r.to_record(&s.inventory, dir);
                if let Some(version) = version.filter(|_| !record.is_deleted()) {
                    let (header, _) = logical_paths(&s.inventory.id, &record.id, false);
                    if let Some(file) = s.inventory.resolve_head(&header) {
                        mementos.push(CatalogOp::CurrentMemento(MementoRow {
                            id: record.id.clone(),
                            datetime: created.unix_timestamp(),
                            version: version.to_string(),
                            header_file: format!("{dir}/{file}"),
                            content_file: record.content_file.clone(),
                        }));
                    }
                }
                records.push(record);
            }
        }
        (records, mementos)
    }
}

impl Repository {
    /// The record of the nearest existing ancestor of a new resource, which must be a live
    /// container.
    pub(crate) async fn find_parent(&self, id: &FedoraId) -> Result<ResourceRecord> {
        let mut cur = id.path_parent();
        while let Some(candidate) = cur {
            if let Some(r) = self.record(&candidate).await? {
                if r.is_deleted() {
                    return Err(Error::Gone(candidate));
                }
                let model = model_of(&r)?;
                if !model.is_container() {
                    return Err(Error::constraint(
                        Constraint::InvalidPath,
                        format!(
                            "{id} cannot be created below {candidate}, which is not a container"
                        ),
                    ));
                }
                return Ok(r);
            }
            cur = candidate.path_parent();
        }
        Err(Error::NotFound(FedoraId::root()))
    }

    /// A plan against the object holding `record` (its current state read from storage).
    /// A change of an Archival Group's part also re-stages the group's root header with a
    /// new memento date, as Fedora 6 does (the group is versioned as a whole).
    pub(crate) async fn plan_for(&self, record: &ResourceRecord) -> Result<ObjectPlan> {
        self.plan_for_object(&record.ocfl_id).await
    }

    /// [`plan_for`](Self::plan_for) an object whose changes under way were recovered under
    /// its lock already ([`Repository::lock_existing`]).
    pub(crate) async fn plan_for_locked(&self, record: &ResourceRecord) -> Result<ObjectPlan> {
        self.plan_for_object_recovered(&record.ocfl_id, true).await
    }

    pub(crate) async fn plan_for_object(&self, ocfl_id: &str) -> Result<ObjectPlan> {
        self.plan_for_object_recovered(ocfl_id, false).await
    }

    /// A plan against object `ocfl_id`; `recovered`: its changes under way were finished or
    /// undone under its lock already (without a journal they are otherwise now, before the
    /// object is read).
    async fn plan_for_object_recovered(
        &self,
        ocfl_id: &str,
        recovered: bool,
    ) -> Result<ObjectPlan> {
        if let Some(current) = self.pending_object(ocfl_id).await? {
            return self.new_plan(ocfl_id.to_string(), current);
        }
        self.settled(ocfl_id).await?;
        let direct = matches!(self.durability, Durability::Direct(_));
        if direct && !recovered {
            self.recover_objects(&[ocfl_id.to_string()]).await?;
        }
        let recovered = direct;
        let current = {
            let (ocfl, id) = (self.ocfl.clone(), ocfl_id.to_string());
            tokio::task::spawn_blocking(move || ocfl.read_object(&id))
                .await
                .map_err(|e| Error::Io(std::io::Error::other(e)))??
        };
        let current = current.ok_or_else(|| {
            Error::Storage(arca_ocfl::Error::Invalid(format!(
                "the catalog knows object {ocfl_id} but storage does not"
            )))
        })?;
        let mut plan = self.new_plan(ocfl_id.to_string(), Some(current))?;
        plan.recovered = recovered;
        Ok(plan)
    }

    /// An empty plan for object `ocfl_id` in state `current` (`None`: a new object), with
    /// the object's digest algorithm.
    pub(crate) fn new_plan(
        &self,
        ocfl_id: String,
        current: Option<ObjectState>,
    ) -> Result<ObjectPlan> {
        let algorithm = match &current {
            Some(c) => c.inventory.content_digest()?,
            None => self.ocfl.digest_algorithm(),
        };
        Ok(ObjectPlan {
            ocfl_id,
            new_version: false,
            current,
            algorithm,
            changes: Vec::new(),
            resources: Vec::new(),
            recovered: false,
        })
    }
}

impl ObjectPlan {
    /// The header and content logical paths of resource `id` in this object.
    pub(crate) fn paths(&self, id: &FedoraId, binary: bool) -> (String, String) {
        logical_paths(&self.ocfl_id, id, binary)
    }

    /// The header logical path of a resource of this object.
    pub(crate) fn header_path(&self, headers: &ResourceHeaders) -> String {
        match FedoraId::from_internal(&headers.id) {
            Ok(id) => self.paths(&id, false).0,
            Err(_) => ROOT_HEADER.to_string(),
        }
    }

    /// When this plan changes parts of an Archival Group but not its root, the root's header
    /// is written again with a new memento date (Fedora 6's `touchRelatedResources`), so
    /// that the group has a memento for every version of its object.
    pub(crate) async fn touch_group_root(
        &mut self,
        repo: &Repository,
        at: Timestamp,
    ) -> Result<()> {
        let touches_part = self
            .resources
            .iter()
            .any(|r| r.headers.archival_group_id.is_some());
        if !touches_part || self.resources.iter().any(|r| r.headers.id == self.ocfl_id) {
            return Ok(());
        }
        let root = FedoraId::from_internal(&self.ocfl_id)?;
        if let Some(record) = repo.record(&root).await? {
            if !record.is_deleted() {
                let mut headers = record.headers.clone();
                headers.memento_created_date = Some(format_instant(at));
                self.rewrite_headers(&record, headers);
            }
        }
        Ok(())
    }

    pub(crate) fn add_rdf(
        &mut self,
        header_path: &str,
        content_path: &str,
        mut headers: ResourceHeaders,
        parent: Option<FedoraId>,
        triples: &[Triple],
    ) {
        let nt = arca_rdf::to_ntriples(triples);
        headers.content_size = Some(nt.len() as i64);
        let digest = DigestValue {
            algorithm: self.algorithm,
            hex: MultiHasher::digest(self.algorithm, &nt),
        };
        headers.digests = Some(vec![digest.urn()]);
        headers.content_path = Some(content_path.to_string());
        self.put(header_path, headers.to_json());
        self.put(content_path, nt.clone());
        self.resources.push(ResourcePlan {
            headers,
            parent,
            content_logical: Some(content_path.to_string()),
            rdf: Some(nt),
        });
    }

    /// A binary's bytes and header. Its header digests are those computed while it was
    /// received, the object's algorithm first (computed now if the body was hashed with
    /// another, see [`Repository::content_digest_for`]), as Fedora keeps the client's and
    /// adds the object's.
    pub(crate) async fn add_binary(
        &mut self,
        content_path: &str,
        mut headers: ResourceHeaders,
        parent: Option<FedoraId>,
        binary: ReceivedBinary,
        mime: String,
    ) -> Result<()> {
        let binary = binary.with_digest(self.algorithm).await?;
        headers.mime_type = Some(mime);
        headers.content_size = Some(binary.size as i64);
        headers.digests = Some(binary.digests.iter().map(DigestValue::urn).collect());
        let digest = binary.digests.first().cloned();
        let content = match binary.data {
            BinaryData::External(location) => {
                self.add_external(headers, parent, location);
                return Ok(());
            }
            BinaryData::Memory(bytes) => Content::Bytes(bytes.to_vec()),
            BinaryData::File(upload) => Content::File {
                digest: digest
                    .ok_or_else(|| Error::Internal("an uploaded binary without digests".into()))?,
                path: upload.take(),
            },
        };
        headers.content_path = Some(content_path.to_string());
        headers.external_url = None;
        headers.external_handling = None;
        self.changes.push(Change {
            logical_path: content_path.to_string(),
            content: Some(content),
        });
        self.put(&self.header_path(&headers), headers.to_json());
        self.resources.push(ResourcePlan {
            headers,
            parent,
            content_logical: Some(content_path.to_string()),
            rdf: None,
        });
        Ok(())
    }

    /// New triples for an existing RDF source.
    pub(crate) fn rewrite_rdf(
        &mut self,
        record: &ResourceRecord,
        at: Timestamp,
        user: &str,
        triples: &[Triple],
    ) -> Result<()> {
        let mut headers = record.headers.clone();
        headers.touch_after_previous(at, user);
        let content_path = headers.content_path.clone().ok_or_else(|| {
            Error::Storage(arca_ocfl::Error::Invalid(format!(
                "{} has no content path",
                record.id
            )))
        })?;
        let header_path = self.header_path(&headers);
        self.add_rdf(
            &header_path,
            &content_path,
            headers,
            record.parent.clone(),
            triples,
        );
        Ok(())
    }

    /// New bytes for an existing binary; its description's memento date is touched too, as
    /// Fedora does.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn rewrite_binary(
        &mut self,
        repo: &Repository,
        record: &ResourceRecord,
        at: Timestamp,
        user: &str,
        binary: ReceivedBinary,
        mime: String,
        filename: Option<String>,
    ) -> Result<()> {
        let mut headers = record.headers.clone();
        headers.touch_after_previous(at, user);
        if let Some(f) = filename {
            headers.filename = Some(f);
        }
        let content_path = headers
            .content_path
            .clone()
            .unwrap_or_else(|| record.id.last_segment().to_string());
        self.add_binary(&content_path, headers, record.parent.clone(), binary, mime)
            .await?;
        if let Some(mut desc) = repo.record(&record.id.description()).await? {
            desc.headers.memento_created_date = Some(format_instant(at));
            self.put(&self.header_path(&desc.headers), desc.headers.to_json());
            self.resources.push(ResourcePlan {
                content_logical: desc.headers.content_path.clone(),
                headers: desc.headers,
                parent: None,
                rdf: desc.rdf,
            });
        }
        Ok(())
    }

    /// A new header for an unchanged resource (a new memento date, an Archival Group root
    /// touched by a change of one of its parts).
    pub(crate) fn rewrite_headers(&mut self, record: &ResourceRecord, headers: ResourceHeaders) {
        self.put(&self.header_path(&headers), headers.to_json());
        self.resources.push(ResourcePlan {
            content_logical: headers.content_path.clone(),
            headers,
            parent: record.parent.clone(),
            rdf: record.rdf.clone(),
        });
    }

    /// Turns a resource into a tombstone: header `deleted:true`, content out of the state.
    pub(crate) fn tombstone(&mut self, record: &ResourceRecord, at: Timestamp, user: &str) {
        let mut headers = record.headers.clone();
        headers.touch_after_previous(at, user);
        headers.deleted = true;
        headers.content_size = Some(-1);
        headers.digests = Some(Vec::new());
        if let Some(path) = headers.content_path.take() {
            self.changes.push(Change {
                logical_path: path,
                content: None,
            });
        }
        self.put(&self.header_path(&headers), headers.to_json());
        self.resources.push(ResourcePlan {
            headers,
            parent: record.parent.clone(),
            content_logical: None,
            rdf: None,
        });
    }

    pub(crate) fn put(&mut self, logical: &str, bytes: Vec<u8>) {
        self.changes.push(Change {
            logical_path: logical.to_string(),
            content: Some(Content::Bytes(bytes)),
        });
    }
}

impl ResourcePlan {
    pub(crate) fn to_record(
        &self,
        inventory: &arca_ocfl::Inventory,
        object_prefix: &str,
    ) -> ResourceRecord {
        let content_file = self.content_logical.as_ref().and_then(|l| {
            inventory
                .resolve_head(l)
                .map(|p| format!("{object_prefix}/{p}"))
        });
        ResourceRecord {
            id: FedoraId::from_internal(&self.headers.id).expect("headers carry valid ids"),
            parent: self.parent.clone(),
            ocfl_id: inventory.id.clone(),
            headers: self.headers.clone(),
            content_file,
            rdf: self.rdf.clone(),
            children_changed: None,
        }
    }
}

/// Deletes the uploaded files of plans that will not be staged.
pub(crate) fn discard_uploads(plans: Vec<ObjectPlan>) {
    for change in plans.into_iter().flat_map(|p| p.changes) {
        if let Some(Content::File { path, .. }) = change.content {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The header and content logical paths of resource `id` in object `ocfl_id` (§2.4 of
/// OCFL-FEDORA.md): `fcr-root` names for the object's root (a binary's content named
/// after its last segment, a container's `fcr-container.nt`), paths relative to the
/// root for an Archival Group's parts.
pub(crate) fn logical_paths(ocfl_id: &str, id: &FedoraId, binary: bool) -> (String, String) {
    let base = id.base();
    let rel = base
        .as_str()
        .strip_prefix(ocfl_id)
        .and_then(|r| r.strip_prefix('/'));
    let (header, stem) = match rel {
        Some(rel) if !rel.is_empty() => (format!(".fcrepo/{rel}"), rel.to_string()),
        _ => (
            ".fcrepo/fcr-root".to_string(),
            base.last_segment().to_string(),
        ),
    };
    if id.is_description() {
        return (
            format!("{header}~fcr-desc.json"),
            format!("{stem}~fcr-desc.nt"),
        );
    }
    // An ACL's files are named after its resource's (`binary`: the resource is a binary).
    let (header_end, container_file, binary_end) = if id.is_acl() {
        ("~fcr-acl.json", ACL_CONTAINER_CONTENT, "~fcr-acl.nt")
    } else {
        (".json", CONTAINER_CONTENT, "")
    };
    let content = match (binary, rel.is_some_and(|r| !r.is_empty())) {
        (true, _) => format!("{stem}{binary_end}"),
        (false, true) => format!("{stem}/{container_file}"),
        (false, false) => container_file.to_string(),
    };
    (format!("{header}{header_end}"), content)
}

/// The Archival Group a resource is or belongs to, if any.
pub(crate) fn archival_group_of(record: &ResourceRecord) -> Result<Option<FedoraId>> {
    Ok(match record.headers.archival_group_id.as_deref() {
        Some(ag) => Some(FedoraId::from_internal(ag)?),
        None if record.headers.archival_group => Some(record.id.clone()),
        None => None,
    })
}
