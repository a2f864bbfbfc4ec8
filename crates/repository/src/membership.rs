//! LDP membership: the settings of direct and indirect containers and the membership
//! triples their members generate, as Fedora 6 computes them.
//!
//! A container's settings live in its own triples (`ldp:membershipResource`,
//! `ldp:hasMemberRelation` or `ldp:isMemberOfRelation`, `ldp:insertedContentRelation`); missing
//! ones are filled in with Fedora's defaults when the container is written, so that what is
//! stored reads the same in Fedora. The generated triples are never stored in RDF: the
//! catalog keeps one row per member ([`arca_catalog::MembershipRow`]), derived again from
//! storage by a rebuild.

use arca_catalog::{MembershipRow, ResourceRecord};
use arca_model::{FedoraId, InteractionModel};
use arca_rdf::vocab::{FEDORA_NS, LDP_CONTAINS};
use oxrdf::{NamedNode, NamedOrBlankNode, Term, Triple};

use crate::{model_of, Constraint, Error, Repository, Result};

/// `ldp:membershipResource`.
pub const LDP_MEMBERSHIP_RESOURCE: &str = "http://www.w3.org/ns/ldp#membershipResource";
/// `ldp:hasMemberRelation`.
pub const LDP_HAS_MEMBER_RELATION: &str = "http://www.w3.org/ns/ldp#hasMemberRelation";
/// `ldp:isMemberOfRelation`.
pub const LDP_IS_MEMBER_OF_RELATION: &str = "http://www.w3.org/ns/ldp#isMemberOfRelation";
/// `ldp:insertedContentRelation`.
pub const LDP_INSERTED_CONTENT_RELATION: &str = "http://www.w3.org/ns/ldp#insertedContentRelation";
/// `ldp:member`, the default membership predicate.
pub const LDP_MEMBER: &str = "http://www.w3.org/ns/ldp#member";
/// `ldp:MemberSubject`: the member is the contained resource itself.
pub const LDP_MEMBER_SUBJECT: &str = "http://www.w3.org/ns/ldp#MemberSubject";

/// Which way the membership triple points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Relation {
    /// `<membership resource> <p> <member>`.
    HasMember(String),
    /// `<member> <p> <membership resource>`.
    IsMemberOf(String),
}

/// The membership settings of a direct or indirect container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    /// IRI of the membership resource.
    pub resource: String,
    /// The membership predicate and its direction.
    pub relation: Relation,
    /// For indirect containers, the member's predicate naming the member
    /// (`None`: `ldp:MemberSubject`, the member itself).
    pub inserted: Option<String>,
}

impl Settings {
    /// The settings in a container's stored triples; `None` unless `model` is a direct or
    /// indirect container. Stored triples are complete (see [`complete`]); missing values
    /// fall back to the defaults all the same, as Fedora reads them.
    pub(crate) fn of(id: &FedoraId, model: InteractionModel, triples: &[Triple]) -> Option<Self> {
        let indirect = match model {
            InteractionModel::DirectContainer => false,
            InteractionModel::IndirectContainer => true,
            _ => return None,
        };
        let me = id.iri();
        let mut settings = Settings {
            resource: me.clone(),
            relation: Relation::HasMember(LDP_MEMBER.to_string()),
            inserted: None,
        };
        let mut explicit_relation = false;
        for t in own_statements(&me, triples) {
            let Term::NamedNode(o) = &t.object else {
                continue;
            };
            let o = o.as_str().to_string();
            match t.predicate.as_str() {
                LDP_MEMBERSHIP_RESOURCE => settings.resource = o,
                LDP_HAS_MEMBER_RELATION if !explicit_relation => {
                    settings.relation = Relation::HasMember(o);
                    explicit_relation = true;
                }
                LDP_IS_MEMBER_OF_RELATION if !explicit_relation => {
                    settings.relation = Relation::IsMemberOf(o);
                    explicit_relation = true;
                }
                LDP_INSERTED_CONTENT_RELATION if indirect && o != LDP_MEMBER_SUBJECT => {
                    settings.inserted = Some(o)
                }
                _ => {}
            }
        }
        Some(settings)
    }

    /// The membership row member `member` generates, given its triples (for a binary, its
    /// description's); `None` when an indirect container's member lacks the inserted-content
    /// statement or its object is not an IRI (Fedora skips such members too).
    pub(crate) fn row(
        &self,
        member: &FedoraId,
        member_triples: &[Triple],
    ) -> Option<MembershipRow> {
        let member_iri = member.iri();
        let member_node = match &self.inserted {
            None => member_iri,
            Some(p) => own_statements(&member_iri, member_triples)
                .filter(|t| t.predicate.as_str() == p)
                .find_map(|t| match &t.object {
                    Term::NamedNode(o) => Some(o.as_str().to_string()),
                    _ => None,
                })?,
        };
        let (subject, predicate, object) = match &self.relation {
            Relation::HasMember(p) => (self.resource.clone(), p.clone(), member_node),
            Relation::IsMemberOf(p) => (member_node, p.clone(), self.resource.clone()),
        };
        Some(MembershipRow {
            proxy: member.clone(),
            subject,
            predicate,
            object,
        })
    }

    /// The repository resource whose answers show the generated triples when they point
    /// from it (`hasMemberRelation`), if the membership resource is one.
    pub(crate) fn resource_id(&self) -> Option<FedoraId> {
        FedoraId::from_iri(&self.resource)
    }

    /// Whether members' own triples decide their membership (indirect containers).
    pub(crate) fn reads_members(&self) -> bool {
        self.inserted.is_some()
    }
}

/// The repository resource a direct or indirect container with these triples (internal
/// ids) adds its members' triples to: its `ldp:membershipResource`, itself by default.
/// `None` for other models, and for a membership resource outside the repository.
pub fn membership_resource(
    id: &FedoraId,
    model: InteractionModel,
    triples: &[Triple],
) -> Option<FedoraId> {
    Settings::of(id, model, triples)?.resource_id()
}

impl Repository {
    /// The membership resource (see [`membership_resource`]) of `record` if it is a live
    /// direct or indirect container.
    pub fn membership_resource_of(&self, record: &ResourceRecord) -> Result<Option<FedoraId>> {
        if record.is_deleted() {
            return Ok(None);
        }
        let model = model_of(record)?;
        if !model.generates_membership() {
            return Ok(None);
        }
        Ok(membership_resource(
            &record.id,
            model,
            &self.triples(record)?,
        ))
    }

    /// The nearest existing resource up the path of `id` (the container a new resource at
    /// `id` would be a child of).
    pub async fn existing_ancestor(&self, id: &FedoraId) -> Result<Option<FedoraId>> {
        let mut up = id.path_parent();
        while let Some(candidate) = up {
            if self.lookup(&candidate).await?.is_some() {
                return Ok(Some(candidate));
            }
            up = candidate.path_parent();
        }
        Ok(None)
    }
}

/// Statements whose subject is `iri`.
fn own_statements<'a>(iri: &'a str, triples: &'a [Triple]) -> impl Iterator<Item = &'a Triple> {
    triples
        .iter()
        .filter(move |t| matches!(&t.subject, NamedOrBlankNode::NamedNode(s) if s.as_str() == iri))
}

/// Checks the membership settings in the body of a direct or indirect container and adds
/// Fedora's defaults for the missing ones (`ldp:membershipResource` the container itself,
/// `ldp:hasMemberRelation ldp:member`, `ldp:insertedContentRelation ldp:MemberSubject`).
/// Other models pass through unchanged.
pub(crate) fn complete(
    id: &FedoraId,
    model: InteractionModel,
    mut triples: Vec<Triple>,
) -> Result<Vec<Triple>> {
    let indirect = match model {
        InteractionModel::DirectContainer => false,
        InteractionModel::IndirectContainer => true,
        _ => return Ok(triples),
    };
    let me = id.iri();
    let refuse = |message: String| Error::constraint(Constraint::Membership, message);
    let (mut resources, mut relations, mut inserted) = (0, 0, 0);
    for t in own_statements(&me, &triples) {
        let p = t.predicate.as_str();
        let object = match &t.object {
            Term::NamedNode(o) => Some(o.as_str()),
            _ => None,
        };
        match p {
            LDP_MEMBERSHIP_RESOURCE => {
                resources += 1;
                if object.is_none() {
                    return Err(refuse(
                        "ldp:membershipResource must name a resource (an IRI), not a literal or blank node".into(),
                    ));
                }
            }
            LDP_HAS_MEMBER_RELATION | LDP_IS_MEMBER_OF_RELATION => {
                relations += 1;
                let Some(o) = object else {
                    return Err(refuse(format!("<{p}> must name a predicate (an IRI)")));
                };
                if o.starts_with(FEDORA_NS) || o == LDP_CONTAINS {
                    return Err(refuse(format!(
                        "<{o}> is server managed and cannot be a membership predicate (<{p}>)"
                    )));
                }
            }
            LDP_INSERTED_CONTENT_RELATION if indirect => {
                inserted += 1;
                if object.is_none() {
                    return Err(refuse(
                        "ldp:insertedContentRelation must name a predicate (an IRI)".into(),
                    ));
                }
            }
            _ => {}
        }
    }
    if resources > 1 {
        return Err(refuse(
            "a direct or indirect container has exactly one ldp:membershipResource; several were given".into(),
        ));
    }
    if relations > 1 {
        return Err(refuse(
            "a direct or indirect container has exactly one ldp:hasMemberRelation or ldp:isMemberOfRelation; several were given".into(),
        ));
    }
    if inserted > 1 {
        return Err(refuse(
            "an indirect container has exactly one ldp:insertedContentRelation; several were given"
                .into(),
        ));
    }
    let subject = NamedNode::new_unchecked(me.clone());
    let mut add = |p: &str, o: &str| {
        triples.push(Triple::new(
            subject.clone(),
            NamedNode::new_unchecked(p),
            NamedNode::new_unchecked(o),
        ))
    };
    if resources == 0 {
        add(LDP_MEMBERSHIP_RESOURCE, &me);
    }
    if relations == 0 {
        add(LDP_HAS_MEMBER_RELATION, LDP_MEMBER);
    }
    if indirect && inserted == 0 {
        add(LDP_INSERTED_CONTENT_RELATION, LDP_MEMBER_SUBJECT);
    }
    Ok(triples)
}

#[cfg(test)]
mod tests {
    use oxrdf::Literal;

    use super::*;

    fn id(p: &str) -> FedoraId {
        FedoraId::from_path(p).unwrap()
    }

    fn t(s: &str, p: &str, o: &str) -> Triple {
        Triple::new(
            NamedNode::new_unchecked(s),
            NamedNode::new_unchecked(p),
            NamedNode::new_unchecked(o),
        )
    }

    #[test]
    fn ldp_5_4_defaults_are_filled_in() {
        let dc = id("dc");
        let triples = complete(&dc, InteractionModel::DirectContainer, vec![]).unwrap();
        assert!(triples.contains(&t(&dc.iri(), LDP_MEMBERSHIP_RESOURCE, &dc.iri())));
        assert!(triples.contains(&t(&dc.iri(), LDP_HAS_MEMBER_RELATION, LDP_MEMBER)));
        assert_eq!(triples.len(), 2);
        let ic = complete(&dc, InteractionModel::IndirectContainer, vec![]).unwrap();
        assert!(ic.contains(&t(
            &dc.iri(),
            LDP_INSERTED_CONTENT_RELATION,
            LDP_MEMBER_SUBJECT
        )));
        // A basic container's triples are its own business.
        let basic = vec![t(&dc.iri(), LDP_MEMBERSHIP_RESOURCE, "http://x/a")];
        assert_eq!(
            complete(&dc, InteractionModel::BasicContainer, basic.clone()).unwrap(),
            basic
        );
    }

    #[test]
    fn ldp_5_4_1_forbidden_settings_are_refused() {
        let dc = id("dc");
        let me = dc.iri();
        for body in [
            vec![
                t(&me, LDP_MEMBERSHIP_RESOURCE, "http://x/a"),
                t(&me, LDP_MEMBERSHIP_RESOURCE, "http://x/b"),
            ],
            vec![
                t(&me, LDP_HAS_MEMBER_RELATION, "http://x/a"),
                t(&me, LDP_IS_MEMBER_OF_RELATION, "http://x/b"),
            ],
            vec![t(&me, LDP_HAS_MEMBER_RELATION, LDP_CONTAINS)],
            vec![t(
                &me,
                LDP_IS_MEMBER_OF_RELATION,
                "http://fedora.info/definitions/v4/repository#hasParent",
            )],
            vec![Triple::new(
                NamedNode::new_unchecked(me.clone()),
                NamedNode::new_unchecked(LDP_MEMBERSHIP_RESOURCE),
                Literal::new_simple_literal("x"),
            )],
        ] {
            let err = complete(&dc, InteractionModel::DirectContainer, body.clone()).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::Constraint {
                        constraint: Constraint::Membership,
                        ..
                    }
                ),
                "{body:?}: {err}"
            );
        }
    }

    #[test]
    fn rows_follow_the_settings() {
        let dc = id("dc");
        let member = id("dc/m");
        let mr = "info:fedora/mr";
        let has = Settings::of(
            &dc,
            InteractionModel::DirectContainer,
            &[t(&dc.iri(), LDP_MEMBERSHIP_RESOURCE, mr)],
        )
        .unwrap();
        let row = has.row(&member, &[]).unwrap();
        assert_eq!(
            (
                row.subject.as_str(),
                row.predicate.as_str(),
                row.object.as_str()
            ),
            (mr, LDP_MEMBER, "info:fedora/dc/m")
        );
        let of = Settings::of(
            &dc,
            InteractionModel::DirectContainer,
            &[
                t(&dc.iri(), LDP_MEMBERSHIP_RESOURCE, mr),
                t(&dc.iri(), LDP_IS_MEMBER_OF_RELATION, "http://x/partOf"),
            ],
        )
        .unwrap();
        let row = of.row(&member, &[]).unwrap();
        assert_eq!(
            (row.subject.as_str(), row.object.as_str()),
            ("info:fedora/dc/m", mr)
        );
        let ic = Settings::of(
            &dc,
            InteractionModel::IndirectContainer,
            &[t(
                &dc.iri(),
                LDP_INSERTED_CONTENT_RELATION,
                "http://x/proxyFor",
            )],
        )
        .unwrap();
        assert!(ic.row(&member, &[]).is_none());
        let row = ic
            .row(
                &member,
                &[t(
                    "info:fedora/dc/m",
                    "http://x/proxyFor",
                    "info:fedora/target",
                )],
            )
            .unwrap();
        assert_eq!(
            (row.subject.as_str(), row.object.as_str()),
            ("info:fedora/dc", "info:fedora/target")
        );
        assert!(Settings::of(&dc, InteractionModel::BasicContainer, &[]).is_none());
    }
}
