//! Keeping the catalog's derived rows right: the membership triples of direct and indirect
//! containers and the references between resources, computed from the new state of every
//! resource a write touched (and again from storage after a crash or by a rebuild).

use std::collections::{HashMap, HashSet};

use arca_catalog::{CatalogOp, MembershipRow, ResourceRecord};
use arca_model::FedoraId;
use oxrdf::Triple;

use crate::membership::Settings;
use crate::references::references;
use crate::{model_of, Repository, Result};

/// Children read per catalog query while recomputing a container's membership.
const CHILD_BATCH: usize = 5_000;

impl Repository {
    /// Catalog operations that bring membership and reference rows in line with `records`,
    /// the new state of the resources one write touched (applied in the same catalog
    /// transaction). A direct or indirect container's rows are recomputed when its settings
    /// changed, or always with `recompute_sources` (re-derivation from storage). `at` is the
    /// write's instant in nanoseconds; membership resources whose generated triples change
    /// get it as their listing clock (part of their ETag).
    pub(crate) async fn derived_ops(
        &self,
        records: &[ResourceRecord],
        recompute_sources: bool,
        at: i64,
    ) -> Result<Vec<CatalogOp>> {
        let written: HashMap<&FedoraId, &ResourceRecord> =
            records.iter().map(|r| (&r.id, r)).collect();
        let mut ops = Vec::new();
        let mut clocks: HashSet<FedoraId> = HashSet::new();
        let mut members_done: HashSet<FedoraId> = HashSet::new();
        for record in records {
            if record.is_deleted() {
                ops.push(CatalogOp::ForgetDerived(record.id.clone()));
                if let Some((_, settings)) = self.container_settings(record, &written).await? {
                    clocks.extend(settings.resource_id());
                }
                continue;
            }
            let triples = self.triples(record)?;
            if record.rdf.is_some() {
                ops.push(CatalogOp::ReplaceReferences {
                    source: record.id.clone(),
                    rows: references(&record.id, &triples),
                });
            }
            // As a member: its container's settings and (indirect containers) its triples.
            let member = record.id.base();
            if !member.is_root() && !record.id.is_acl() && members_done.insert(member.clone()) {
                let member_record = match written.get(&member) {
                    Some(r) => Some((*r).clone()),
                    None => self.catalog.get(&member).await?,
                };
                if let Some(member_record) = member_record.filter(|r| !r.is_deleted()) {
                    if let Some((source, settings)) =
                        self.container_settings(&member_record, &written).await?
                    {
                        let member_triples = self.member_triples(&member_record, &written).await?;
                        ops.push(CatalogOp::ReplaceMembership {
                            source,
                            proxy: Some(member.clone()),
                            rows: settings.row(&member, &member_triples).into_iter().collect(),
                        });
                        let created = member_record.headers.created_date
                            == member_record.headers.last_modified_date;
                        if created || settings.reads_members() {
                            clocks.extend(settings.resource_id());
                        }
                    }
                }
            }
            // As a container whose members generate membership.
            if record.id.is_description() {
                continue;
            }
            let Some(settings) = Settings::of(&record.id, model_of(record)?, &triples) else {
                continue;
            };
            let before = match self.catalog.get(&record.id).await? {
                Some(old) if !old.is_deleted() => {
                    Settings::of(&old.id, model_of(&old)?, &self.triples(&old)?)
                }
                _ => None,
            };
            if recompute_sources || before.as_ref() != Some(&settings) {
                ops.push(CatalogOp::ReplaceMembership {
                    source: record.id.clone(),
                    proxy: None,
                    rows: self.source_rows(&record.id, &settings).await?,
                });
                clocks.extend(settings.resource_id());
                clocks.extend(before.and_then(|b| b.resource_id()));
            }
        }
        ops.extend(
            clocks
                .into_iter()
                .map(|id| CatalogOp::ChildrenChanged(id, at)),
        );
        Ok(ops)
    }

    /// Every membership row the live members of container `id` generate under `settings`.
    pub(crate) async fn source_rows(
        &self,
        id: &FedoraId,
        settings: &Settings,
    ) -> Result<Vec<MembershipRow>> {
        let mut rows = Vec::new();
        let mut after: Option<FedoraId> = None;
        let none = HashMap::new();
        loop {
            let children = self.catalog.children(id, after.as_ref(), CHILD_BATCH).await?;
            for child in &children {
                let triples = if settings.reads_members() {
                    match self.catalog.get(child).await? {
                        Some(r) => self.member_triples(&r, &none).await?,
                        None => continue,
                    }
                } else {
                    Vec::new()
                };
                rows.extend(settings.row(child, &triples));
            }
            if children.len() < CHILD_BATCH {
                return Ok(rows);
            }
            after = children.last().cloned();
        }
    }

    /// Recomputes the rows of every direct and indirect container (after a rebuild).
    pub(crate) async fn recompute_all_membership(&self) -> Result<()> {
        for id in self.catalog.membership_sources().await? {
            let Some(record) = self.catalog.get(&id).await? else {
                continue;
            };
            let Some(settings) = Settings::of(&id, model_of(&record)?, &self.triples(&record)?)
            else {
                continue;
            };
            let rows = self.source_rows(&id, &settings).await?;
            self.catalog
                .apply(vec![CatalogOp::ReplaceMembership {
                    source: id,
                    proxy: None,
                    rows,
                }])
                .await?;
        }
        Ok(())
    }

    /// The membership triples naming resource `id` as subject: `(predicate, object)` pairs
    /// in order, after `after`, at most `limit`.
    pub async fn membership(
        &self,
        id: &FedoraId,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<(String, String)>> {
        Ok(self.catalog.membership(&id.iri(), after, limit).await?)
    }

    /// Statements of other resources pointing at `id`: `(subject, predicate)` pairs in
    /// order, after `after`, at most `limit`.
    pub async fn references_to(
        &self,
        id: &FedoraId,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<(String, String)>> {
        Ok(self.catalog.references_to(id, after, limit).await?)
    }

    /// The container of `member` and its membership settings, if it is a direct or
    /// indirect container (Fedora ignores membership for children of the root).
    async fn container_settings(
        &self,
        member: &ResourceRecord,
        written: &HashMap<&FedoraId, &ResourceRecord>,
    ) -> Result<Option<(FedoraId, Settings)>> {
        let Some(parent) = member.parent.as_ref().filter(|p| !p.is_root()) else {
            return Ok(None);
        };
        let record = match written.get(parent) {
            Some(r) => Some((*r).clone()),
            None => self.catalog.get(parent).await?,
        };
        let Some(record) = record.filter(|r| !r.is_deleted()) else {
            return Ok(None);
        };
        let settings = Settings::of(parent, model_of(&record)?, &self.triples(&record)?);
        Ok(settings.map(|s| (parent.clone(), s)))
    }

    /// A member's triples as an indirect container reads them: a binary's are its
    /// description's.
    async fn member_triples(
        &self,
        member: &ResourceRecord,
        written: &HashMap<&FedoraId, &ResourceRecord>,
    ) -> Result<Vec<Triple>> {
        if member.rdf.is_some() {
            return self.triples(member);
        }
        let desc = member.id.description();
        let record = match written.get(&desc) {
            Some(r) => Some((*r).clone()),
            None => self.catalog.get(&desc).await?,
        };
        match record {
            Some(r) => self.triples(&r),
            None => Ok(Vec::new()),
        }
    }
}
