//! Access control lists (`<resource>/fcr:acl`): RDF sources stored in the OCFL object of
//! the resource they protect, under Fedora 6's names (`fcr-container~fcr-acl.nt` or
//! `<binary>~fcr-acl.nt`, header `…~fcr-acl.json`, interaction model `webac:Acl`). What an
//! ACL may say is checked by the caller (`arca-auth`); the kernel stores and versions it.
//! A PATCH of an ACL is an ordinary [`Repository::patch`] of its id.

use arca_catalog::{ChangeKind, ResourceRecord};
use arca_model::{FedoraId, InteractionModel};
use oxrdf::Triple;

use crate::{
    archival_group_of, changes::log, checked_triples, logical_paths, model_of, new_headers, now,
    subjects, Constraint, Error, Precondition, Repository, Result,
};

impl Repository {
    /// The live ACL of `resource` (`None` when it has none, or only a deleted one).
    pub async fn live_acl(&self, resource: &FedoraId) -> Result<Option<ResourceRecord>> {
        Ok(self
            .record(&resource.acl())
            .await?
            .filter(|r| !r.is_deleted()))
    }

    /// Creates or replaces the ACL of live resource `resource` with `triples` (internal
    /// ids). Returns the ACL's record and whether it was created (a deleted ACL is created
    /// again). `precondition` is checked against the current ACL, if there is one.
    pub async fn put_acl(
        &self,
        resource: &FedoraId,
        triples: Vec<Triple>,
        lenient: bool,
        user: &str,
        precondition: Option<Precondition>,
    ) -> Result<(ResourceRecord, bool)> {
        check_protectable(resource)?;
        let acl_id = resource.acl();
        let triples = checked_triples(&acl_id, InteractionModel::Acl, triples, lenient)?;
        subjects::check_subjects(&acl_id, &triples)?;
        let probe = self.get(resource).await?;
        let _locks = self
            .catalog
            .lock_objects(&[probe.ocfl_id.as_str()], &[])
            .await?;
        self.check_owners(&[probe.ocfl_id.as_str()]).await?;
        let base = self.get(resource).await?;
        let existing = self.live_acl(resource).await?;
        if let (Some(check), Some(current)) = (precondition, &existing) {
            check(current)?;
        }
        let at = now();
        let mut plan = self.plan_for(&base).await?;
        let created = existing.is_none();
        match &existing {
            Some(current) => plan.rewrite_rdf(current, at, user, &triples)?,
            None => {
                let mut headers =
                    new_headers(&acl_id, Some(resource), InteractionModel::Acl, at, user);
                headers.archival_group_id = archival_group_of(&base)?.map(|ag| ag.to_string());
                let (header, content) =
                    logical_paths(&plan.ocfl_id, &acl_id, model_of(&base)?.is_binary());
                plan.add_rdf(&header, &content, headers, None, &triples);
            }
        }
        let kind = if created {
            ChangeKind::Create
        } else {
            ChangeKind::Update
        };
        let records = self
            .execute(vec![plan], vec![log(&acl_id, kind, at, user)])
            .await?;
        let record = records
            .into_iter()
            .find(|r| r.id == acl_id)
            .ok_or_else(|| Error::Internal(format!("the write of {acl_id} returned no record")))?;
        Ok((record, created))
    }

    /// Deletes the ACL of `resource` (its header stays as a tombstone in a new version, as
    /// Fedora 6 deletes any resource); the resource then inherits its access again.
    pub async fn delete_acl(
        &self,
        resource: &FedoraId,
        user: &str,
        precondition: Option<Precondition>,
    ) -> Result<()> {
        let acl_id = resource.acl();
        let live_acl = || async {
            self.live_acl(resource)
                .await?
                .ok_or_else(|| Error::NotFound(acl_id.clone()))
        };
        let probe = live_acl().await?;
        let _locks = self
            .catalog
            .lock_objects(&[probe.ocfl_id.as_str()], &[])
            .await?;
        self.check_owners(&[probe.ocfl_id.as_str()]).await?;
        let current = live_acl().await?;
        if let Some(check) = precondition {
            check(&current)?;
        }
        let at = now();
        let mut plan = self.plan_for(&current).await?;
        plan.new_version = current.headers.archival_group_id.is_none();
        plan.tombstone(&current, at, user);
        self.execute(vec![plan], vec![log(&acl_id, ChangeKind::Delete, at, user)])
            .await?;
        Ok(())
    }
}

/// ACLs protect containers and binaries; a description is protected by its binary's ACL
/// and an ACL by its resource's (as in Fedora 6, where `fcr:metadata/fcr:acl` is no path).
fn check_protectable(resource: &FedoraId) -> Result<()> {
    if resource.is_description() || resource.is_acl() {
        return Err(Error::constraint(
            Constraint::InvalidPath,
            format!(
                "{resource} cannot have an ACL of its own; the ACL of {} protects it",
                resource.base()
            ),
        ));
    }
    Ok(())
}
