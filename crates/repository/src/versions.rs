//! Mementos (Fedora API §4, RFC 7089): every OCFL version in which a resource's header
//! changed is a memento of it, named by the version's creation instant in seconds. The
//! catalog lists them (`mementos` table, kept by the write path and re-derived by rebuild);
//! a memento's bytes are the stored files of that version, never a copy.

use arca_catalog::{ChangeKind, ResourceRecord};
use arca_model::{format_instant, now, FedoraId};

use crate::changes::log;
use crate::{Constraint, Error, Repository, Result};

impl Repository {
    /// The memento datetimes (seconds since the epoch) of live resource `id`, oldest first.
    pub async fn mementos(&self, id: &FedoraId) -> Result<Vec<i64>> {
        self.get(id).await?;
        Ok(self.catalog.mementos(id).await?)
    }

    /// The memento of live resource `id` at exactly `datetime` (seconds since the epoch), as
    /// a record of that version: its header, its content file and, for RDF sources, its
    /// stored triples read from that file.
    pub async fn memento(&self, id: &FedoraId, datetime: i64) -> Result<ResourceRecord> {
        let current = self.get(id).await?;
        let row = match self.catalog.memento_at_or_before(id, datetime).await? {
            Some(row) if row.datetime == datetime => row,
            _ => return Err(Error::NoMemento(id.clone(), datetime)),
        };
        self.settled(&current.ocfl_id).await?;
        let bytes = self.read_stored(&row.header_file).await?;
        let headers = arca_model::ResourceHeaders::from_json(&bytes).map_err(|e| {
            Error::Storage(arca_ocfl::Error::Invalid(format!(
                "{}: bad resource header: {e}",
                row.header_file
            )))
        })?;
        let rdf = match (&row.content_file, headers.model()) {
            (Some(file), Some(model)) if model.is_rdf_source() => {
                Some(self.read_stored(file).await?)
            }
            _ => None,
        };
        Ok(ResourceRecord {
            id: id.clone(),
            parent: current.parent,
            ocfl_id: current.ocfl_id,
            headers,
            content_file: row.content_file,
            rdf,
            children_changed: None,
        })
    }

    /// Live resource `id` as it was at `datetime`: its memento in force then (see
    /// [`Repository::memento_for`]). A description's memento speaks about its binary as of
    /// the description's instant, which need not be a memento of the binary itself.
    pub async fn memento_in_force(&self, id: &FedoraId, datetime: i64) -> Result<ResourceRecord> {
        match self.memento_for(id, datetime).await? {
            Some(at) => self.memento(id, at).await,
            None => Err(Error::NoMemento(id.clone(), datetime)),
        }
    }

    /// The memento a TimeGate picks for `datetime`: the latest at or before it, else the
    /// first one (as Fedora 6 does); `None` when the resource has no memento yet.
    pub async fn memento_for(&self, id: &FedoraId, datetime: i64) -> Result<Option<i64>> {
        self.get(id).await?;
        if let Some(row) = self.catalog.memento_at_or_before(id, datetime).await? {
            return Ok(Some(row.datetime));
        }
        Ok(self.catalog.mementos(id).await?.first().copied())
    }

    /// The children container `id` had at memento `datetime` (the end of that second).
    pub async fn children_at(&self, id: &FedoraId, datetime: i64) -> Result<Vec<FedoraId>> {
        let end_of_second = (datetime + 1) * 1_000_000_000 - 1;
        Ok(self.catalog.children_at(id, end_of_second).await?)
    }

    /// Records the current state of `id` as a new memento (`POST fcr:versions`): a new OCFL
    /// version in which the resource's header carries a new memento date (its content is
    /// not copied: the version points at the stored files). Returns the memento datetime.
    pub async fn create_version(&self, id: &FedoraId, user: &str) -> Result<i64> {
        if self.current_transaction().is_some() {
            return Err(Error::BadRequest(
                "version creation is not allowed within transactions".into(),
            ));
        }
        let (_locks, record) = self.lock_existing(id, None).await?;
        if let Some(ag) = &record.headers.archival_group_id {
            return Err(Error::constraint(
                Constraint::ArchivalGroup,
                format!("{id} is part of Archival Group {ag} and cannot be versioned on its own; version the Archival Group instead"),
            ));
        }
        let at = now();
        let mut plan = self.plan_for_locked(&record).await?;
        plan.new_version = true;
        let mut headers = record.headers.clone();
        headers.memento_created_date = Some(format_instant(at));
        plan.rewrite_headers(&record, headers);
        self.execute(vec![plan], vec![log(id, ChangeKind::Update, at, user)])
            .await?;
        // The object is still locked: the newest memento is the one just written.
        self.catalog
            .mementos(id)
            .await?
            .last()
            .copied()
            .ok_or_else(|| Error::Internal(format!("the new version of {id} made no memento")))
    }
}
