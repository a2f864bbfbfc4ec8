//! The five write operations on Fedora resources: create, replace, patch, delete and
//! purge, each planned per object and run through [`Repository::execute`].

use std::collections::BTreeMap;

use arca_catalog::{
    BeginIf, CatalogOp, ChangeKind, ObjectLockGuard, ResourceRecord, WriteReads, WriteSnapshot,
};
use arca_model::{format_instant, now, FedoraId, InteractionModel, ResourceHeaders, Timestamp};
use arca_ocfl::Change;
use oxrdf::Triple;

use crate::changes::{self, log};
use crate::execute::nanos;
use crate::plan::{archival_group_of, ObjectPlan};
use crate::{
    described, membership, subjects, Constraint, Durability, Error, NewContent, Precondition,
    Repository, Result, TripleUpdate,
};

impl Repository {
    /// Creates a resource at `id` (POST with a minted or Slug id, or PUT to a new path); an
    /// Archival Group when `archival_group` (a container whose descendants all live in its
    /// own OCFL object). Below an Archival Group the resource becomes one of its parts.
    pub async fn create(
        &self,
        id: FedoraId,
        model: InteractionModel,
        archival_group: bool,
        content: NewContent,
        user: &str,
    ) -> Result<ResourceRecord> {
        check_creatable(&id, model, archival_group)?;
        let content = prepare_content(&id, content, model)?;
        let content = match self
            .create_at_once(&id, model, archival_group, content, user)
            .await?
        {
            Ok(record) => return Ok(record),
            Err(content) => content,
        };
        let (parent_record, group, locks, snapshot) = self.lock_for_create(&id).await?;
        let parent = parent_record.id.clone();
        if archival_group {
            if let Some(ag) = &group {
                return Err(Error::constraint(
                    Constraint::ArchivalGroup,
                    format!("{id} would be an Archival Group inside Archival Group {ag}; nesting Archival Groups is not permitted"),
                ));
            }
        }
        match snapshot.record(&id) {
            Some(r) if r.is_deleted() => return Err(Error::Gone(id)),
            Some(_) => return Err(Error::AlreadyExists(id)),
            None => {}
        }
        // A path with resources below it but none of its own (a "ghost node", left by a
        // Slug or PUT of `a/b`) stays empty, as in Fedora 6.
        if snapshot.has_descendants {
            return Err(Error::constraint(
                Constraint::InvalidPath,
                format!("{id} is an immutable resource: resources exist below it, so it cannot be created"),
            ));
        }

        let at = now();
        let mut headers = new_headers(&id, Some(&parent), model, at, user);
        let mut plan = match &group {
            Some(ag) => {
                headers.archival_group_id = Some(ag.to_string());
                headers.object_root = false;
                self.plan_for_object(ag.as_str()).await?
            }
            None => {
                headers.archival_group = archival_group;
                let mut plan = self.new_plan(id.to_string(), None)?;
                plan.recovered = self.recovered_in(&snapshot).await?;
                plan
            }
        };
        match content {
            NewContent::Rdf { triples, .. } => {
                let (header, content) = plan.paths(&id, false);
                plan.add_rdf(&header, &content, headers, Some(parent.clone()), &triples);
            }
            NewContent::Binary {
                binary,
                mime,
                filename,
                ..
            } => {
                let (_, content) = plan.paths(&id, true);
                // As Fedora 6.1: an empty filename when the request named none.
                headers.filename = Some(filename.unwrap_or_default());
                plan.add_binary(&content, headers, Some(parent.clone()), binary, mime)
                    .await?;
                let desc_id = id.description();
                let mut desc = new_headers(
                    &desc_id,
                    Some(&id),
                    InteractionModel::NonRdfSourceDescription,
                    at,
                    user,
                );
                desc.archival_group_id = group.as_ref().map(|ag| ag.to_string());
                let (header, content) = plan.paths(&desc_id, false);
                plan.add_rdf(&header, &content, desc, None, &[]);
            }
        }
        let extra = creation_ops(&id, &parent_record, at, user);
        let records = self.execute_unlocking(vec![plan], extra, locks).await?;
        record_of(records, &id)
    }

    /// The most frequent creation, a new object of RDF in a container that is `id`'s path
    /// parent and in no Archival Group, on a store without a journal and outside a
    /// transaction, in two catalog steps: its version is staged before the locks are
    /// taken, so that the locks, the reads its checks need and the record of the change
    /// under way come in one ([`BeginIf`]), before the bucket is touched; the catalog's
    /// record of the change and the release of the locks in the other, after it. The
    /// content back, untouched, for [`create`](Self::create)'s way when this is not such a
    /// creation or a check finds something (it then gives the precise answer).
    async fn create_at_once(
        &self,
        id: &FedoraId,
        model: InteractionModel,
        archival_group: bool,
        content: NewContent,
        user: &str,
    ) -> Result<std::result::Result<ResourceRecord, NewContent>> {
        let (Durability::Direct(direct), None, Some(parent), NewContent::Rdf { triples, .. }) = (
            &self.durability,
            self.current_transaction(),
            id.path_parent(),
            &content,
        ) else {
            return Ok(Err(content));
        };
        let at = now();
        let mut headers = new_headers(id, Some(&parent), model, at, user);
        headers.archival_group = archival_group;
        let mut plan = self.new_plan(id.to_string(), None)?;
        plan.recovered = true;
        let (header, content_path) = plan.paths(id, false);
        plan.add_rdf(
            &header,
            &content_path,
            headers,
            Some(parent.clone()),
            triples,
        );
        let staging = self.stage_all(vec![plan], &self.version_info(at))?;
        let op = crate::direct::new_op();
        let reads = WriteReads {
            begin: Some(BeginIf {
                writes: Self::pending_rows(&staging, &op),
                absent: id.clone(),
                live: parent.clone(),
            }),
            ..creation_reads(id, &parent, id)
        };
        let (locks, snapshot) = match self
            .catalog
            .lock_and_read(&[id.as_str()], &[parent.as_str()], &reads)
            .await
        {
            Ok(taken) => taken,
            Err(e) => {
                self.abort_all(staging);
                return Err(e.into());
            }
        };
        let parent_record = snapshot
            .record(&parent)
            .filter(|p| takes_new_objects(p))
            .cloned();
        let (true, Some(parent_record)) = (snapshot.begun, parent_record) else {
            self.give_up_begun(snapshot.begun, &op, locks).await;
            self.abort_all(staging);
            return Ok(Err(content));
        };
        let (records, mementos) = staging.records(at);
        let extra = creation_ops(id, &parent_record, at, user);
        let ops = match self.catalog_ops(&records, mementos, extra).await {
            Ok(ops) => ops,
            Err(e) => {
                self.give_up_begun(true, &op, locks).await;
                self.abort_all(staging);
                return Err(e);
            }
        };
        let records = self
            .write_begun(direct, staging, records, ops, op, Some(locks))
            .await?;
        record_of(records, id).map(Ok)
    }

    /// Lets go of the locks of a change that will not be written, forgetting its rows of
    /// changes under way (operation `op`) first if they were `begun` (in the same step);
    /// if the catalog cannot be reached they stay, and recovery finds nothing to finish.
    async fn give_up_begun(&self, begun: bool, op: &str, locks: ObjectLockGuard) {
        if !begun {
            return;
        }
        let forget = CatalogOp::FinishWrite {
            op: op.to_string(),
            object: None,
        };
        self.forget_or_leave(forget, Some(locks)).await;
    }

    /// The parent a new resource `id` goes into, the Archival Group it joins (if any), the
    /// write's locks and what it reads under them ([`Repository::lock_reading`]): the
    /// parent as it is under the locks (it may have gone while the write waited for them).
    ///
    /// Most creations make a new object in a container that is `id`'s path parent and in no
    /// Archival Group: that is tried first, so that the locks and every read come in one
    /// step. Otherwise the parent is looked for first (the nearest resource up the path),
    /// then locked.
    async fn lock_for_create(
        &self,
        id: &FedoraId,
    ) -> Result<(
        ResourceRecord,
        Option<FedoraId>,
        ObjectLockGuard,
        WriteSnapshot,
    )> {
        if let Some(guess) = id.path_parent() {
            let (locks, snapshot) = self
                .lock_reading(
                    &[id.as_str()],
                    &[guess.as_str()],
                    creation_reads(id, &guess, id),
                )
                .await?;
            if let Some(parent) = snapshot.record(&guess).filter(|p| takes_new_objects(p)) {
                let parent = parent.clone();
                return Ok((parent, None, locks, snapshot));
            }
        }
        let parent_record = self.find_parent(id).await?;
        let group = archival_group_of(&parent_record)?;
        let parent = parent_record.id;
        let object_id = group.clone().unwrap_or_else(|| id.clone());
        let (locks, snapshot) = self
            .lock_reading(
                &[object_id.as_str()],
                &[parent.as_str()],
                creation_reads(id, &parent, &object_id),
            )
            .await?;
        let parent_record = live_in(&snapshot, &parent)?;
        Ok((parent_record, group, locks, snapshot))
    }

    /// Replaces the content of an existing resource (PUT). `model` is the interaction model
    /// the client named, if any; it must match the resource's.
    pub async fn replace(
        &self,
        id: &FedoraId,
        model: Option<InteractionModel>,
        content: NewContent,
        user: &str,
        precondition: Option<Precondition>,
    ) -> Result<ResourceRecord> {
        let (locks, record) = self.lock_existing(id, precondition).await?;
        check_model_change(&record, model)?;
        let current_model = model_of(&record)?;
        let (content, facts) = match content {
            NewContent::Rdf { triples, lenient }
                if current_model == InteractionModel::NonRdfSourceDescription =>
            {
                let (triples, facts) = described::take_binary_facts(id, triples)?;
                (NewContent::Rdf { triples, lenient }, facts)
            }
            other => (other, described::BinaryFacts::default()),
        };
        let content = prepare_content(id, content, current_model)?;
        let at = now();
        let mut plan = self.plan_for_locked(&record).await?;
        match content {
            NewContent::Rdf { triples, .. } => {
                plan.rewrite_rdf(&record, at, user, &triples)?;
                self.apply_binary_facts(&mut plan, id, facts, at, user)
                    .await?;
            }
            NewContent::Binary {
                binary,
                mime,
                filename,
                ..
            } => {
                plan.rewrite_binary(self, &record, at, user, binary, mime, filename)
                    .await?;
            }
        }
        self.commit_update(id, plan, at, user, locks).await
    }

    /// Changes an RDF source's triples with `update` (PATCH with SPARQL Update).
    pub async fn patch(
        &self,
        id: &FedoraId,
        update: TripleUpdate,
        lenient: bool,
        user: &str,
        precondition: Option<Precondition>,
    ) -> Result<ResourceRecord> {
        let (locks, record) = self.lock_existing(id, precondition).await?;
        let model = model_of(&record)?;
        if !model.is_rdf_source() {
            return Err(Error::constraint(
                Constraint::InteractionModel,
                format!("{id} is a binary; PATCH applies to RDF sources"),
            ));
        }
        let current = self.triples(&record)?;
        let (current, updated) = tokio::task::spawn_blocking(move || {
            let updated = update(current.clone());
            (current, updated)
        })
        .await
        .map_err(|e| Error::Internal(format!("the update did not finish: {e}")))?;
        let (updated, facts) = if model == InteractionModel::NonRdfSourceDescription {
            described::take_binary_facts(id, updated?)?
        } else {
            (updated?, described::BinaryFacts::default())
        };
        let triples = checked_triples(id, model, updated, lenient)?;
        let current: std::collections::HashSet<&Triple> = current.iter().collect();
        subjects::check_subjects(id, triples.iter().filter(|t| !current.contains(t)))?;
        let triples = membership::complete(id, model, triples)?;
        let at = now();
        let mut plan = self.plan_for_locked(&record).await?;
        plan.rewrite_rdf(&record, at, user, &triples)?;
        self.apply_binary_facts(&mut plan, id, facts, at, user)
            .await?;
        self.commit_update(id, plan, at, user, locks).await
    }

    /// Gives the binary described by `description` the filename and media type its new
    /// description states, as Fedora 6 does; nothing when they are unchanged.
    pub(crate) async fn apply_binary_facts(
        &self,
        plan: &mut ObjectPlan,
        description: &FedoraId,
        facts: described::BinaryFacts,
        at: Timestamp,
        user: &str,
    ) -> Result<()> {
        if facts.is_empty() {
            return Ok(());
        }
        let binary = self.get(&description.base()).await?;
        let mut headers = binary.headers.clone();
        if !facts.apply(&mut headers) {
            return Ok(());
        }
        headers.touch_after_previous(at, user);
        plan.rewrite_headers(&binary, headers);
        Ok(())
    }

    /// Locks the object holding live resource `id`, re-reads it under the lock (in the same
    /// step: [`Repository::lock_reading`]) and checks the request's precondition against
    /// that fresh state; a change a stopped node left on the object is finished or undone
    /// then, so that a plan of it may come from [`plan_for_locked`](Self::plan_for_locked).
    pub(crate) async fn lock_existing(
        &self,
        id: &FedoraId,
        precondition: Option<Precondition>,
    ) -> Result<(ObjectLockGuard, ResourceRecord)> {
        let probe = self.get(id).await?;
        let reads = WriteReads {
            records: vec![id.clone()],
            descendants_of: None,
            objects: vec![probe.ocfl_id.clone()],
            begin: None,
        };
        let (guard, snapshot) = self
            .lock_reading(&[probe.ocfl_id.as_str()], &[], reads)
            .await?;
        let record = live_in(&snapshot, id)?;
        if let Some(check) = precondition {
            check(&record)?;
        }
        self.recovered_in(&snapshot).await?;
        Ok((guard, record))
    }

    /// Commits a one-object update of `id` and returns its new record.
    /// The object's locks go with the catalog's record of the change.
    pub(crate) async fn commit_update(
        &self,
        id: &FedoraId,
        plan: ObjectPlan,
        at: Timestamp,
        user: &str,
        locks: ObjectLockGuard,
    ) -> Result<ResourceRecord> {
        let mut extra = vec![log(id, ChangeKind::Update, at, user)];
        if id.is_description() {
            // A description changes its binary too, as Fedora 6 reports it.
            extra.insert(0, log(&id.base(), ChangeKind::Update, at, user));
        }
        let records = self.execute_unlocking(vec![plan], extra, locks).await?;
        record_of(records, id)
    }

    /// Deletes a resource and everything it contains, leaving tombstones.
    pub async fn delete(
        &self,
        id: &FedoraId,
        user: &str,
        precondition: Option<Precondition>,
    ) -> Result<()> {
        let probe = self.get(id).await?;
        if id.is_root() {
            return Err(Error::constraint(
                Constraint::InvalidPath,
                "the repository root cannot be deleted",
            ));
        }
        if id.is_description() || id.is_acl() {
            return Err(Error::constraint(
                Constraint::InvalidPath,
                format!("{id} cannot be deleted on its own; delete the resource it belongs to"),
            ));
        }
        let mut affected: Vec<ResourceRecord> = self
            .catalog
            .descendants(id)
            .await?
            .into_iter()
            .filter(|r| !r.is_deleted())
            .collect();
        affected.push(probe);
        let mut object_ids: Vec<&str> = affected.iter().map(|r| r.ocfl_id.as_str()).collect();
        object_ids.sort_unstable();
        object_ids.dedup();
        let _locks = self.catalog.lock_objects(&object_ids, &[]).await?;
        self.check_owners(&object_ids).await?;
        let record = self.get(id).await?;
        if let Some(check) = precondition {
            check(&record)?;
        }

        let at = now();
        let mut by_object: BTreeMap<String, Vec<ResourceRecord>> = BTreeMap::new();
        for r in affected {
            // re-read under the lock
            if let Some(fresh) = self.record(&r.id).await? {
                if !fresh.is_deleted() {
                    by_object
                        .entry(fresh.ocfl_id.clone())
                        .or_default()
                        .push(fresh);
                }
            }
        }
        let mut plans = Vec::new();
        let mut extra = Vec::new();
        for (ocfl_id, resources) in by_object {
            let mut plan = self.plan_for_object(&ocfl_id).await?;
            // As Fedora 6: a delete is a new version, except inside an Archival Group.
            plan.new_version = !resources
                .iter()
                .any(|r| r.headers.archival_group_id.is_some());
            for r in &resources {
                plan.tombstone(r, at, user);
                // As Fedora 6: every resource, descriptions and ACLs too.
                extra.push(log(&r.id, ChangeKind::Delete, at, user));
            }
            plans.push(plan);
        }
        if let Some(parent) = &record.parent {
            extra.push(log(parent, ChangeKind::Update, at, user));
            extra.push(CatalogOp::ChildrenChanged(parent.clone(), nanos(at)));
        }
        self.execute(plans, extra).await?;
        Ok(())
    }

    /// Purges a tombstone (DELETE on `fcr:tombstone`): the resource and the tombstones below
    /// it leave storage and catalog for good.
    pub async fn purge(&self, id: &FedoraId, user: &str) -> Result<()> {
        if self.current_transaction().is_some() {
            return Err(Error::constraint(
                Constraint::Unsupported,
                "purging (DELETE on fcr:tombstone) inside a transaction is not supported; purge after the commit",
            ));
        }
        let record = match self.catalog.get(id).await? {
            Some(r) if r.is_deleted() => r,
            _ => return Err(Error::NotFound(id.clone())),
        };
        let mut affected = self.catalog.descendants(id).await?;
        affected.push(record);
        if affected.iter().any(|r| !r.is_deleted()) {
            return Err(Error::constraint(
                Constraint::InvalidPath,
                format!("{id} contains live resources and cannot be purged"),
            ));
        }
        let mut object_ids: Vec<&str> = affected.iter().map(|r| r.ocfl_id.as_str()).collect();
        object_ids.sort_unstable();
        object_ids.dedup();
        let _locks = self.catalog.lock_objects(&object_ids, &[]).await?;
        self.check_owners(&object_ids).await?;
        if object_ids
            .iter()
            .any(|o| !affected.iter().any(|r| r.id.as_str() == *o))
        {
            // Parts of an Archival Group whose root stays: a new version of the group's
            // object without their files.
            return self.purge_parts(&affected, user).await;
        }
        for object in &object_ids {
            self.settled(object).await?;
        }
        let at = now();
        let mut ops = forget(affected.iter().map(|r| &r.id));
        ops.extend(purge_log(&affected, at, user));
        changes::fill_agent(&mut ops, self.agent());
        match &self.durability {
            Durability::Journaled(j) => {
                let ticket = j.journal_purge(&object_ids).await?;
                self.purge_objects(&object_ids).await?;
                self.catalog.apply(ops).await?;
                drop(ticket);
            }
            Durability::Direct(_) => self.purge_direct(&object_ids, ops).await?,
        }
        self.changed(&affected.iter().map(|r| r.id.clone()).collect::<Vec<_>>());
        Ok(())
    }

    /// Purges tombstones that are parts of an Archival Group (all in one object whose root
    /// is not purged): their headers and content files leave the object's state in a new
    /// version, as Fedora 6 does, and their rows leave the catalog. The caller holds the
    /// object's lock.
    pub(crate) async fn purge_parts(&self, affected: &[ResourceRecord], user: &str) -> Result<()> {
        let ocfl_id = &affected[0].ocfl_id;
        let mut plan = self.plan_for_object(ocfl_id).await?;
        for r in affected {
            let (header, _) = plan.paths(&r.id, false);
            plan.changes.push(Change {
                logical_path: header,
                content: None,
            });
            if let Some(content) = &r.headers.content_path {
                plan.changes.push(Change {
                    logical_path: content.clone(),
                    content: None,
                });
            }
        }
        let at = now();
        let mut extra = forget(affected.iter().map(|r| &r.id));
        extra.extend(purge_log(affected, at, user));
        self.execute(vec![plan], extra).await?;
        Ok(())
    }

    /// Takes objects out of the root, on the blocking pool.
    pub(crate) async fn purge_objects(&self, object_ids: &[&str]) -> Result<()> {
        let ocfl = self.ocfl.clone();
        let ids: Vec<String> = object_ids.iter().map(|s| s.to_string()).collect();
        tokio::task::spawn_blocking(move || ids.iter().try_for_each(|id| ocfl.purge(id).map(drop)))
            .await
            .map_err(|e| Error::Io(std::io::Error::other(e)))??;
        Ok(())
    }
}

pub(crate) fn new_headers(
    id: &FedoraId,
    parent: Option<&FedoraId>,
    model: InteractionModel,
    at: Timestamp,
    user: &str,
) -> ResourceHeaders {
    let mut h = ResourceHeaders::new(id.to_string(), parent.map(|p| p.to_string()), model);
    h.created_date = Some(format_instant(at));
    h.created_by = Some(user.to_string());
    h.object_root = !id.is_description() && !id.is_acl();
    h.touch(at, user);
    h
}

pub(crate) fn model_of(record: &ResourceRecord) -> Result<InteractionModel> {
    record.headers.model().ok_or_else(|| {
        Error::Storage(arca_ocfl::Error::Invalid(format!(
            "{} has an unknown interaction model {}",
            record.id, record.headers.interaction_model
        )))
    })
}

fn check_creatable(id: &FedoraId, model: InteractionModel, archival_group: bool) -> Result<()> {
    if archival_group && !model.is_container() {
        return Err(Error::constraint(
            Constraint::ArchivalGroup,
            format!("{id}: an Archival Group is a container, not <{model}>"),
        ));
    }
    if id.is_acl() {
        return Err(Error::constraint(
            Constraint::Unsupported,
            "access control lists (fcr:acl) are not supported yet",
        ));
    }
    if id.is_description() {
        return Err(Error::NotFound(id.base()));
    }
    match model {
        InteractionModel::BasicContainer
        | InteractionModel::DirectContainer
        | InteractionModel::IndirectContainer
        | InteractionModel::NonRdfSource => Ok(()),
        other => Err(Error::constraint(
            Constraint::InteractionModel,
            format!("resources with interaction model <{other}> cannot be created directly"),
        )),
    }
}

/// Checks the body of resource `id` against the interaction model it will live under.
fn prepare_content(
    id: &FedoraId,
    content: NewContent,
    model: InteractionModel,
) -> Result<NewContent> {
    match content {
        NewContent::Rdf { triples, lenient } if model.is_rdf_source() => {
            let triples = checked_triples(id, model, triples, lenient)?;
            subjects::check_subjects(id, &triples)?;
            let triples = membership::complete(id, model, triples)?;
            Ok(NewContent::Rdf { triples, lenient })
        }
        NewContent::Binary {
            binary,
            mime,
            filename,
            expected,
        } if model.is_binary() => {
            binary.verify(&expected)?;
            Ok(NewContent::Binary {
                binary,
                mime,
                filename,
                expected,
            })
        }
        _ => Err(Error::constraint(
            Constraint::InteractionModel,
            format!("the body does not fit a resource with interaction model <{model}>"),
        )),
    }
}

/// Checks a client's triples for resource `id` with interaction model `model`: drops the
/// `rdf:type` statements about the resource that agree with its interaction model (the
/// server states them itself; Fedora 6 accepts them, as in `<> a ldp:DirectContainer` sent
/// with the same `Link: rel="type"`), then refuses the other server-managed statements
/// (409), or drops them under lenient handling.
pub(crate) fn checked_triples(
    id: &FedoraId,
    model: InteractionModel,
    triples: Vec<Triple>,
    lenient: bool,
) -> Result<Vec<Triple>> {
    // A description's types are those of the binary it describes, and Fedora 7's
    // `premis3:File`, which the server states about every binary.
    let description = model == InteractionModel::NonRdfSourceDescription;
    let types = if description {
        InteractionModel::NonRdfSource.rdf_types()
    } else {
        model.rdf_types()
    };
    let own = [id.base().iri(), id.iri()];
    let agrees = |t: &Triple| {
        t.predicate.as_str() == arca_rdf::vocab::RDF_TYPE
            && matches!(&t.subject, oxrdf::NamedOrBlankNode::NamedNode(s) if own.iter().any(|o| o == s.as_str()))
            && matches!(&t.object, oxrdf::Term::NamedNode(o) if types.contains(&o.as_str())
                || description && o.as_str() == arca_rdf::vocab::PREMIS3_FILE)
    };
    let triples = triples.into_iter().filter(|t| !agrees(t)).collect();
    let (kept, mut rejected) = arca_rdf::split_server_managed(triples);
    let (kept, computed): (Vec<Triple>, Vec<Triple>) = if description {
        kept.into_iter()
            .partition(|t| !described::is_computed(id, t))
    } else {
        (kept, Vec::new())
    };
    rejected.extend(computed);
    if !rejected.is_empty() && !lenient {
        return Err(Error::ServerManaged(rejected));
    }
    Ok(kept)
}

/// The catalog operations that forget resources entirely: their rows, mementos and derived
/// rows (a purge, or before an object's rows are derived again).
pub(crate) fn forget<'a>(ids: impl Iterator<Item = &'a FedoraId>) -> Vec<CatalogOp> {
    ids.flat_map(|id| {
        [
            CatalogOp::Remove(id.clone()),
            CatalogOp::ForgetMementos(id.clone()),
            CatalogOp::ForgetDerived(id.clone()),
        ]
    })
    .collect()
}

/// The change-log entries of a purge: one per resource purged, as Fedora 6 reports them.
fn purge_log(affected: &[ResourceRecord], at: Timestamp, user: &str) -> Vec<CatalogOp> {
    affected
        .iter()
        .map(|r| log(&r.id, ChangeKind::Purge, at, user))
        .collect()
}

/// Refuses a write that asks for another interaction model than `record`'s: a resource's
/// model is chosen when it is created and never changes. The one place this rule is
/// decided: the HTTP layer asks before it reads a body (so that a body fitting only the
/// asked-for model gets 409, not a parse error), [`Repository::replace`] again under the
/// resource's lock.
pub fn check_model_change(record: &ResourceRecord, asked: Option<InteractionModel>) -> Result<()> {
    let current = model_of(record)?;
    match asked {
        Some(asked) if asked != current => Err(Error::ModelChange {
            id: record.id.clone(),
            current,
            asked,
        }),
        _ => Ok(()),
    }
}

/// The record of `id` among those a write returned.
fn record_of(records: Vec<ResourceRecord>, id: &FedoraId) -> Result<ResourceRecord> {
    records
        .into_iter()
        .find(|r| &r.id == id)
        .ok_or_else(|| Error::Internal(format!("the write of {id} returned no record for it")))
}

/// The live resource `id` as a write read it under its locks ([`Repository::get`]'s
/// answers: [`Error::Gone`] for a tombstone, [`Error::NotFound`] otherwise).
fn live_in(snapshot: &WriteSnapshot, id: &FedoraId) -> Result<ResourceRecord> {
    match snapshot.record(id) {
        Some(r) if r.is_deleted() => Err(Error::Gone(id.clone())),
        Some(r) => Ok(r.clone()),
        None => Err(Error::NotFound(id.clone())),
    }
}

/// Whether a new resource below `parent` makes an OCFL object of its own there: `parent`
/// is a live container in no Archival Group (a header that cannot be read: no, and the
/// long way reports it).
fn takes_new_objects(parent: &ResourceRecord) -> bool {
    !parent.is_deleted()
        && model_of(parent).is_ok_and(|m| m.is_container())
        && archival_group_of(parent).is_ok_and(|ag| ag.is_none())
}

/// What a creation of `id` in `parent`, in OCFL object `object`, checks under its locks:
/// both records, anything below `id`, the object's owners and changes under way.
fn creation_reads(id: &FedoraId, parent: &FedoraId, object: &FedoraId) -> WriteReads {
    WriteReads {
        records: vec![id.clone(), parent.clone()],
        descendants_of: Some(id.clone()),
        objects: vec![object.to_string()],
        begin: None,
    }
}

/// What a creation of `id` in `parent` logs and changes beside its rows: its creation, and
/// its parent's containment (Fedora API 6.1; Fedora 6.1 itself reports none).
fn creation_ops(
    id: &FedoraId,
    parent: &ResourceRecord,
    at: Timestamp,
    user: &str,
) -> Vec<CatalogOp> {
    vec![
        log(id, ChangeKind::Create, at, user),
        changes::log_of(parent, ChangeKind::Update, at, user),
        CatalogOp::ChildrenChanged(parent.id.clone(), nanos(at)),
    ]
}
