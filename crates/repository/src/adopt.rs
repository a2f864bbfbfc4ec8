//! Adopting whole objects built outside the root (bulk imports such as the Fedora 3
//! migration): each object lands with its entire history, all or nothing, without passing
//! through the journal — its files are made durable by the file-system sync before the one
//! rename that puts it in place, and the catalog learns of it in the same way a rebuild
//! does, from what storage holds.

use std::collections::{BTreeSet, HashSet};

use arca_catalog::{CatalogOp, ChangeKind, PendingWrite};
use arca_model::FedoraId;
use arca_ocfl::BuiltObject;

use crate::index::rows_from_object;
use crate::{changes, Durability, Error, Repository, Result};

impl Repository {
    /// Puts objects built by [`arca_ocfl::OcflRoot::build_object`] into the repository.
    /// Each object must be new: an object whose id is taken (live, tombstone, or already
    /// in storage) is refused with [`Error::AlreadyExists`] and nothing of it is kept.
    /// The others are synced, moved into the root, and recorded in the catalog (their
    /// resources, mementos and references, and one `Create` change-log entry per live
    /// resource, so that search and events learn of them) in one catalog transaction. If
    /// that transaction fails, every object of the call is taken out of the root again.
    /// Returns one result per object, in order.
    pub async fn adopt(
        &self,
        mut objects: Vec<BuiltObject>,
        user: &str,
    ) -> Result<Vec<Result<()>>> {
        let keys: Vec<&str> = objects.iter().map(|o| o.object_id.as_str()).collect();
        let _locks = self.catalog.lock_objects(&keys, &[]).await?;
        let mut results: Vec<Result<()>> = Vec::with_capacity(objects.len());
        for object in &objects {
            results.push(self.check_free(&object.object_id).await);
        }
        if results.iter().all(Result::is_err) {
            return Ok(results);
        }
        // A local root: the built objects are made durable before they move in. A store
        // without a journal: each installation is recorded as under way first, so that a
        // stopped node's half-moved object is removed again (`recover_pending`).
        let op = uuid::Uuid::new_v4().simple().to_string();
        match &self.durability {
            Durability::Journaled(j) => j.barrier().await?,
            Durability::Direct(_) => {
                let started = crate::direct::now_millis();
                let mut begin = Vec::new();
                for (object, result) in objects.iter().zip(&results) {
                    if result.is_ok() {
                        begin.push(CatalogOp::BeginWrite(PendingWrite {
                            op: op.clone(),
                            object: object.object_id.clone(),
                            started,
                            decided: false,
                            record: self.ocfl.pending_install_record(object)?,
                        }));
                    }
                }
                self.catalog.apply(begin).await?;
            }
        }
        let mut installed = Vec::new();
        for (object, result) in objects.iter_mut().zip(results.iter_mut()) {
            if result.is_err() {
                continue;
            }
            match self.ocfl.install_built(object) {
                Ok(dir) => installed.push((object.object_id.clone(), dir)),
                Err(arca_ocfl::Error::AlreadyExists(_)) => {
                    *result = Err(Error::AlreadyExists(FedoraId::from_internal(
                        &object.object_id,
                    )?))
                }
                Err(e) => *result = Err(e.into()),
            }
        }
        let finish = CatalogOp::FinishWrite {
            op: op.clone(),
            object: None,
        };
        let direct = matches!(self.durability, Durability::Direct(_));
        if installed.is_empty() {
            if direct {
                self.catalog.apply(vec![finish]).await?;
            }
            return Ok(results);
        }
        let recorded = async {
            if let Durability::Journaled(j) = &self.durability {
                j.barrier().await?;
            }
            self.record_adopted(&installed, user, direct.then_some(finish))
                .await
        }
        .await;
        if let Err(e) = recorded {
            for (id, _) in &installed {
                if let Err(undo) = self.ocfl.uninstall(id) {
                    tracing::error!(object = %id, error = %undo, "an adopted object could not be taken out again");
                }
            }
            if direct {
                let forget = CatalogOp::FinishWrite { op, object: None };
                if let Err(e) = self.catalog.apply(vec![forget]).await {
                    tracing::warn!(error = %e, "could not forget the record of installations taken out again; they will be looked at again");
                }
            }
            return Err(e);
        }
        Ok(results)
    }

    /// Puts `object` in the place of the object of the same id that the root holds
    /// (an import with `--overwrite`): under the object's lock, the old object's files are
    /// removed, the new one is moved in, and the catalog rows are re-derived from storage
    /// with a change-log entry for every resource that differs, as crash recovery does.
    /// Not atomic: a crash between the removal and the move leaves neither object (the
    /// import run again puts the new one in place).
    ///
    /// # Errors
    /// [`Error::NotFound`] if the root holds no object of that id.
    pub async fn adopt_replacing(&self, mut object: BuiltObject) -> Result<()> {
        let id = object.object_id.clone();
        let _locks = self.catalog.lock_objects(&[id.as_str()], &[]).await?;
        self.settled(&id).await?;
        if self.ocfl.read_object(&id)?.is_none() {
            return Err(Error::NotFound(FedoraId::from_internal(&id)?));
        }
        if let Durability::Journaled(j) = &self.durability {
            j.barrier().await?;
        }
        self.ocfl.uninstall(&id)?;
        self.ocfl.install_built(&mut object)?;
        if let Durability::Journaled(j) = &self.durability {
            j.barrier().await?;
        }
        self.reindex_logged(&id).await
    }

    /// Replaces object `ocfl_id`'s catalog rows by what storage holds, with a change-log
    /// entry for every resource whose row differs (so that search and events learn of
    /// it): for an object that an interrupted import moved into the root before it was
    /// recorded.
    pub async fn reindex_logged(&self, ocfl_id: &str) -> Result<()> {
        let ops = self.reindex_ops(ocfl_id, true).await?;
        self.catalog.apply(ops).await?;
        let ids = self.catalog.in_object(ocfl_id).await?;
        self.changed(&ids.into_iter().map(|r| r.id).collect::<Vec<_>>());
        Ok(())
    }

    /// `Ok` when nothing in the catalog or the root is at object `ocfl_id`'s id.
    async fn check_free(&self, ocfl_id: &str) -> Result<()> {
        let id = FedoraId::from_internal(ocfl_id)?;
        if self.catalog.get(&id).await?.is_some()
            || self.catalog.has_descendants(&id).await?
            || self.ocfl.read_object(ocfl_id)?.is_some()
        {
            return Err(Error::AlreadyExists(id));
        }
        Ok(())
    }

    /// The catalog rows of objects just moved into the root, in one transaction.
    async fn record_adopted(
        &self,
        installed: &[(String, String)],
        user: &str,
        finish: Option<CatalogOp>,
    ) -> Result<()> {
        let now = arca_model::now();
        let mut records = Vec::new();
        let mut mementos = Vec::new();
        for (id, _) in installed {
            let object = self.ocfl.read_object(id)?.ok_or_else(|| {
                Error::Storage(arca_ocfl::Error::Invalid(format!(
                    "{id}: adopted object is not readable"
                )))
            })?;
            let rows = rows_from_object(&self.ocfl, &object)?;
            records.extend(rows.records);
            mementos.extend(rows.mementos);
        }
        let mut ops = self.derived_ops(&records, true).await?;
        let mut touched = Vec::with_capacity(records.len() + 1);
        // Containers outside the adopted objects whose children changed (the root, for
        // Archival Groups), once each.
        let adopted: HashSet<&FedoraId> = records.iter().map(|r| &r.id).collect();
        let mut outside_parents: BTreeSet<&FedoraId> = BTreeSet::new();
        for record in &records {
            touched.push(record.id.clone());
            if record.is_deleted() {
                continue;
            }
            ops.push(changes::log(&record.id, ChangeKind::Create, now, user));
            if let Some(parent) = record.parent.as_ref().filter(|p| !adopted.contains(p)) {
                outside_parents.insert(parent);
            }
        }
        for parent in outside_parents {
            ops.push(CatalogOp::ChildrenChanged(
                parent.clone(),
                now.unix_timestamp_nanos() as i64,
            ));
            touched.push(parent.clone());
        }
        let mut all: Vec<CatalogOp> = records.into_iter().map(CatalogOp::Put).collect();
        all.extend(mementos.into_iter().map(CatalogOp::PutMemento));
        all.append(&mut ops);
        all.extend(finish);
        changes::fill_agent(&mut all, self.agent());
        changes::fill_types(&mut all, |id| async move {
            self.catalog.get(&id).await.ok().flatten()
        })
        .await;
        self.catalog.apply(all).await?;
        self.changed(&touched);
        Ok(())
    }
}
