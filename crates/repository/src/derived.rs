//! Keeping the catalog's derived rows right: the membership triples of direct and indirect
//! containers and the references between resources, computed from the new state of every
//! resource a write touched (and again from storage after a crash or by a rebuild).

use std::collections::{HashMap, HashSet};

use arca_catalog::{CatalogOp, ChangeKind, MembershipRow, ResourceRecord};
use arca_model::FedoraId;
use oxrdf::Triple;

use crate::membership::Settings;
use crate::references::{may_refer, references};
use crate::{model_of, Repository, Result};

/// Children read per catalog query while recomputing a container's membership.
const CHILD_BATCH: usize = 5_000;

/// Listing clocks to advance, per membership resource (nanoseconds).
#[derive(Default)]
struct Clocks(HashMap<FedoraId, i64>);

impl Clocks {
    fn tick(&mut self, resource: Option<FedoraId>, at: Option<i64>) {
        if let (Some(resource), Some(at)) = (resource, at) {
            let e = self.0.entry(resource).or_insert(at);
            *e = (*e).max(at);
        }
    }
}

/// Nanoseconds of a header date.
fn instant(date: &Option<String>) -> Option<i64> {
    let at = arca_model::parse_instant(date.as_deref()?)?;
    Some(at.unix_timestamp_nanos() as i64)
}

/// When member `record` last changed the membership it generates: its deletion, its last
/// change (indirect containers read its triples) or its creation.
fn member_event(record: &ResourceRecord, settings: &Settings) -> Option<i64> {
    if record.is_deleted() || settings.reads_members() {
        instant(&record.headers.last_modified_date)
    } else {
        instant(&record.headers.created_date)
    }
}

impl Repository {
    /// Catalog operations that bring membership and reference rows in line with `records`,
    /// the new state of the resources one write touched (applied in the same catalog
    /// transaction). A direct or indirect container's rows are recomputed when its settings
    /// changed, or always with `recompute_sources` (re-derivation from storage).
    ///
    /// Membership resources get a listing clock (part of their ETag) from the headers of the
    /// event: a member's creation, deletion or (indirect containers) change, or any change of
    /// the container; [`membership_clock`](Self::membership_clock) derives the same value
    /// from storage.
    pub(crate) async fn derived_ops(
        &self,
        records: &[ResourceRecord],
        recompute_sources: bool,
    ) -> Result<Vec<CatalogOp>> {
        let written: HashMap<&FedoraId, &ResourceRecord> =
            records.iter().map(|r| (&r.id, r)).collect();
        let mut ops = Vec::new();
        let mut clocks = Clocks::default();
        let mut members_done: HashSet<FedoraId> = HashSet::new();
        for record in records {
            if record.is_deleted() {
                ops.push(CatalogOp::ForgetDerived(record.id.clone()));
                if let Some((_, settings)) = self.container_settings(record, &written).await? {
                    clocks.tick(settings.resource_id(), member_event(record, &settings));
                }
                continue;
            }
            let model = model_of(record)?;
            // Parsed only when something reads them: references (when arca's own N-Triples
            // may hold one; storage written by others is always parsed) or a
            // direct/indirect container's settings.
            let triples = match &record.rdf {
                Some(nt) if recompute_sources || may_refer(nt) || model.generates_membership() => {
                    self.triples(record)?
                }
                _ => Vec::new(),
            };
            if record.rdf.is_some() {
                let rows = references(&record.id, &triples);
                // A resource created by this write has no rows to replace.
                let created = record.headers.created_date == record.headers.last_modified_date;
                if !recompute_sources && !rows.is_empty() && !record.id.is_acl() {
                    // As Fedora 6: a `Follow` event for each resource newly referred to.
                    let before = match created {
                        true => Vec::new(),
                        false => self.catalog.references_from(&record.id).await?,
                    };
                    let mut targets: Vec<&FedoraId> = rows
                        .iter()
                        .map(|r| &r.target)
                        .filter(|t| !before.contains(t))
                        .collect();
                    targets.sort_unstable();
                    targets.dedup();
                    let h = &record.headers;
                    let (at, user) = (h.last_modified_date.clone(), h.last_modified_by.clone());
                    for target in targets {
                        ops.push(crate::changes::log_at(
                            target,
                            ChangeKind::Follow,
                            at.clone().unwrap_or_default(),
                            user.as_deref().unwrap_or_default(),
                        ));
                    }
                }
                if !rows.is_empty() || !created || recompute_sources {
                    ops.push(CatalogOp::ReplaceReferences {
                        source: record.id.clone(),
                        rows,
                    });
                }
            }
            let member = record.id.base();
            if !member.is_root() && !record.id.is_acl() && members_done.insert(member.clone()) {
                self.member_ops(&member, &written, &mut ops, &mut clocks)
                    .await?;
            }
            // As a container whose members generate membership.
            if record.id.is_description() {
                continue;
            }
            let Some(settings) = Settings::of(&record.id, model, &triples) else {
                continue;
            };
            let before = match self.catalog.get(&record.id).await? {
                Some(old) if !old.is_deleted() => {
                    Settings::of(&old.id, model_of(&old)?, &self.triples(&old)?)
                }
                _ => None,
            };
            let changed = instant(&record.headers.last_modified_date);
            clocks.tick(settings.resource_id(), changed);
            if let Some(before) = &before {
                clocks.tick(before.resource_id(), changed);
            }
            if recompute_sources || before.as_ref() != Some(&settings) {
                ops.push(CatalogOp::ReplaceMembership {
                    source: record.id.clone(),
                    proxy: None,
                    rows: self.source_rows(&record.id, &settings).await?,
                });
            }
        }
        ops.extend(
            clocks
                .0
                .into_iter()
                .map(|(id, at)| CatalogOp::ChildrenChanged(id, at)),
        );
        Ok(ops)
    }

    /// The membership row member `member` generates (its container's settings and, for
    /// indirect containers, its triples), and the listing clock it moves.
    async fn member_ops(
        &self,
        member: &FedoraId,
        written: &HashMap<&FedoraId, &ResourceRecord>,
        ops: &mut Vec<CatalogOp>,
        clocks: &mut Clocks,
    ) -> Result<()> {
        let fetched;
        let record = match written.get(member) {
            Some(r) => *r,
            None => match self.catalog.get(member).await? {
                Some(r) => {
                    fetched = r;
                    &fetched
                }
                None => return Ok(()),
            },
        };
        if record.is_deleted() {
            return Ok(());
        }
        let Some((source, settings)) = self.container_settings(record, written).await? else {
            return Ok(());
        };
        let triples = if settings.reads_members() {
            self.member_triples(record, written).await?
        } else {
            Vec::new()
        };
        ops.push(CatalogOp::ReplaceMembership {
            source,
            proxy: Some(member.clone()),
            rows: settings.row(member, &triples).into_iter().collect(),
        });
        let event = self.member_clock(record, &settings, written).await?;
        clocks.tick(settings.resource_id(), event);
        Ok(())
    }

    /// The listing clock a membership resource gets from container `source` and its members
    /// as storage holds them (after a rebuild): the latest of the container's last change
    /// and its members' events (see [`derived_ops`](Self::derived_ops)). Purged members
    /// leave no trace, so this can only under-estimate.
    async fn membership_clock(
        &self,
        source: &ResourceRecord,
        settings: &Settings,
    ) -> Result<Option<i64>> {
        let mut latest = instant(&source.headers.last_modified_date);
        let none = HashMap::new();
        for child in self.catalog.descendants(&source.id).await? {
            if child.parent.as_ref() == Some(&source.id) {
                latest = latest.max(self.member_clock(&child, settings, &none).await?);
            }
        }
        Ok(latest)
    }

    /// [`member_event`], for a live binary member of an indirect container also its
    /// description's last change (the description's triples decide the membership).
    async fn member_clock(
        &self,
        member: &ResourceRecord,
        settings: &Settings,
        written: &HashMap<&FedoraId, &ResourceRecord>,
    ) -> Result<Option<i64>> {
        let event = member_event(member, settings);
        if member.is_deleted() || !settings.reads_members() || member.rdf.is_some() {
            return Ok(event);
        }
        let desc = member.id.description();
        let desc = match written.get(&desc) {
            Some(r) => Some((*r).clone()),
            None => self.catalog.get(&desc).await?,
        };
        Ok(event.max(desc.and_then(|d| instant(&d.headers.last_modified_date))))
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
            let children = self
                .catalog
                .children(id, after.as_ref(), CHILD_BATCH)
                .await?;
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
            let mut ops = vec![CatalogOp::ReplaceMembership {
                source: id,
                proxy: None,
                rows,
            }];
            if let (Some(resource), Some(at)) = (
                settings.resource_id(),
                self.membership_clock(&record, &settings).await?,
            ) {
                ops.push(CatalogOp::ChildrenChanged(resource, at));
            }
            self.catalog.apply(ops).await?;
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
        let model = model_of(&record)?;
        if !model.generates_membership() {
            return Ok(None);
        }
        let settings = Settings::of(parent, model, &self.triples(&record)?);
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
