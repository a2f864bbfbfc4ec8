//! Running a planned change: stage the new versions, make them durable (journal or
//! direct), record them in the catalog, tell the watchers, answer.

use std::sync::atomic::Ordering;

use arca_catalog::{CatalogOp, ObjectLockGuard, ResourceRecord};
use arca_model::{format_instant, now, Timestamp, OCFL_USER_ADDRESS, OCFL_USER_NAME};
use arca_ocfl::{HeadMode, VersionInfo};

use crate::plan::{ObjectPlan, Staging};
use crate::{changes, Durability, Repository, Result};

impl Repository {
    /// Runs planned object changes through the durable write path and returns the new
    /// catalog records of every resource written (see [`Durability`]): on a local root
    /// through the journal, with the files written behind the answer
    /// (`execute_journaled`); on a store without a journal, written before the answer
    /// (`execute_direct`).
    pub(crate) async fn execute(
        &self,
        plans: Vec<ObjectPlan>,
        extra: Vec<CatalogOp>,
    ) -> Result<Vec<ResourceRecord>> {
        self.execute_with(plans, extra, None).await
    }

    /// [`execute`](Self::execute) for a caller that hands over the locks of its objects:
    /// they go with the catalog's record of the change (in one round trip where the catalog
    /// can), or when the change fails.
    pub(crate) async fn execute_unlocking(
        &self,
        plans: Vec<ObjectPlan>,
        extra: Vec<CatalogOp>,
        locks: ObjectLockGuard,
    ) -> Result<Vec<ResourceRecord>> {
        self.execute_with(plans, extra, Some(locks)).await
    }

    async fn execute_with(
        &self,
        mut plans: Vec<ObjectPlan>,
        extra: Vec<CatalogOp>,
        locks: Option<ObjectLockGuard>,
    ) -> Result<Vec<ResourceRecord>> {
        // Now, unless this node's clock is behind an object's last version (see
        // `ObjectPlan::earliest_version_date`).
        let created = plans
            .iter()
            .filter_map(ObjectPlan::earliest_version_date)
            .fold(now(), Timestamp::max);
        let info = self.version_info(created);
        for plan in &mut plans {
            plan.touch_group_root(self, created).await?;
        }
        if let Some(tx) = self.current_transaction() {
            return self.add_to_transaction(&tx, plans, extra).await;
        }
        match &self.durability {
            Durability::Journaled(j) => {
                self.execute_journaled(j, plans, extra, info, created).await
            }
            Durability::Direct(d) => {
                self.execute_direct(d, plans, extra, info, created, locks)
                    .await
            }
        }
    }

    /// What the OCFL versions written at `created` say of themselves.
    pub(crate) fn version_info(&self, created: Timestamp) -> VersionInfo {
        VersionInfo {
            created: format_instant(created),
            message: self.version_message.clone(),
            user_name: OCFL_USER_NAME.to_string(),
            user_address: OCFL_USER_ADDRESS.to_string(),
        }
    }

    /// Prepares the new versions of planned changes in memory (nothing in storage
    /// changes). On failure the uploads of what was staged are deleted.
    pub(crate) fn stage_all(&self, plans: Vec<ObjectPlan>, info: &VersionInfo) -> Result<Staging> {
        let mut staging = Staging {
            staged: Vec::with_capacity(plans.len()),
            head_commits: Vec::new(),
        };
        let auto_versioning = self.auto_versioning.load(Ordering::Relaxed);
        for plan in plans {
            let mode = if auto_versioning || plan.new_version {
                HeadMode::NewVersion
            } else {
                HeadMode::Mutable
            };
            if mode == HeadMode::NewVersion && plan.current.as_ref().is_some_and(|c| c.mutable_head)
            {
                // Its mutable HEAD becomes an immutable version: every resource changed
                // there gets a memento and new content paths.
                staging.head_commits.push(plan.ocfl_id.clone());
            }
            match self.ocfl.stage(
                &plan.ocfl_id,
                plan.current.as_ref(),
                plan.changes,
                info.clone(),
                mode,
            ) {
                Ok(s) => staging.staged.push((s, plan.resources)),
                Err(e) => {
                    self.abort_all(staging);
                    return Err(e.into());
                }
            }
        }
        Ok(staging)
    }

    /// Gives up staged changes that will not be written (deletes their uploads).
    pub(crate) fn abort_all(&self, staging: Staging) {
        for (s, _) in staging.staged {
            self.ocfl.abort(s);
        }
    }

    /// Every catalog write that records `records` (written at the same instant, with
    /// `mementos`): the rows, the membership and references they change, `extra`, with
    /// the change log's types filled in.
    pub(crate) async fn catalog_ops(
        &self,
        records: &[ResourceRecord],
        mementos: Vec<CatalogOp>,
        extra: Vec<CatalogOp>,
    ) -> Result<Vec<CatalogOp>> {
        let mut ops: Vec<CatalogOp> = records.iter().cloned().map(CatalogOp::Put).collect();
        ops.extend(mementos);
        ops.extend(self.derived_ops(records, false).await?);
        ops.extend(extra);
        changes::fill_agent(&mut ops, self.agent());
        changes::fill_types(&mut ops, |id| async move {
            self.catalog.get(&id).await.ok().flatten()
        })
        .await;
        Ok(ops)
    }

    /// After a change is recorded: tells the watchers, and re-derives the rows of objects
    /// whose mutable HEAD became a version (their files moved).
    pub(crate) async fn written(
        &self,
        records: Vec<ResourceRecord>,
        head_commits: Vec<String>,
    ) -> Result<Vec<ResourceRecord>> {
        self.changed(&records.iter().map(|r| r.id.clone()).collect::<Vec<_>>());
        for ocfl_id in head_commits {
            self.reindex_object(&ocfl_id).await?;
        }
        self.phases.writes.fetch_add(1, Ordering::Relaxed);
        Ok(records)
    }
}

pub(crate) fn nanos(at: Timestamp) -> i64 {
    at.unix_timestamp_nanos() as i64
}
