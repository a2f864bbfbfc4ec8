//! Web Access Control: ACLs parsed from their triples, and what they let an agent do.
//!
//! Pure logic, no I/O: the caller reads ACL and group-listing triples from the repository
//! and walks the tree; this module parses and decides. The rules are the SOLID WebAC ones as
//! Fedora 6 implements them (`WebACRolesProvider`, `WebACAuthorizingRealm`, `WebACFilter`):
//!
//! - the effective ACL of a resource is its own if it has an authorization, else the nearest
//!   ancestor's having an authorization with `acl:default` ([`Acl::is_effective`]), else the
//!   server's default ([`Acl::server_default`], [`Acl::fedora_default`]);
//! - of the effective ACL, the authorizations for the resource apply ([`Acl::modes_for`]):
//!   `acl:accessTo` it or `acl:accessToClass` one of its types, and when inherited only those
//!   with `acl:default` the ancestor;
//! - an authorization names the agent by `acl:agent` (its agent IRI or bare user name),
//!   `acl:agentClass foaf:Agent` (everyone) or `acl:AuthenticatedAgent`, or `acl:agentGroup`
//!   (a role group, or a `vcard:Group` listing: [`group_has_member`]);
//! - the modes granted are the union over applying authorizations; `acl:Write` implies
//!   `acl:Append`; what a request needs is [`Action::required`].
//!
//! ```
//! use arca_auth::webac::{default_root_acl, Acl, AclRules, Action, Agent, Mode};
//!
//! let rules = AclRules { local_prefixes: vec!["info:fedora".into()], group_base_uri: None };
//! let acl = Acl::server_default(&default_root_acl(), &rules).unwrap();
//! let modes = acl.modes_for("info:fedora/a/b", None, &Agent::ANONYMOUS, &mut Vec::new, &mut |_| false);
//! assert!(modes.contains(Mode::Read));
//! assert!(!Action::Delete.allowed_by(modes));
//! ```

mod acl;
mod action;
mod default_acl;
mod group;
mod link;
mod modes;
pub mod vocab;

#[cfg(test)]
mod tests;

pub use acl::{implied_access_to, Acl, AclError, AclRules};
pub use action::{required, Action};
pub use default_acl::default_root_acl;
pub use group::group_has_member;
pub use link::{acl_link, grants_nothing, linked_acl_source};
pub use modes::{Mode, Modes};

use crate::Principal;

/// Who asks: an anonymous client or an authenticated user, with the IRIs the user is known by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Agent<'a> {
    /// The authenticated user; `None` for an anonymous client.
    pub user: Option<&'a Principal>,
    /// The user's agent IRI (user base URI + name) if a user base is configured.
    pub user_iri: Option<&'a str>,
    /// The IRIs of the user's role groups (group base URI + role), computed by the caller;
    /// without a group base, the bare role names (Fedora matches `acl:agent "role"` against
    /// group principals by name). See [`AgentIris`].
    pub group_iris: &'a [String],
}

impl<'a> Agent<'a> {
    /// An anonymous client.
    pub const ANONYMOUS: Agent<'static> = Agent {
        user: None,
        user_iri: None,
        group_iris: &[],
    };

    /// Whether the agent is an authenticated user.
    pub fn is_authenticated(&self) -> bool {
        self.user.is_some()
    }

    /// Whether an `acl:agent` or `vcard:hasMember` value (an IRI, or a literal's lexical form)
    /// names this agent: the user's agent IRI, the bare user name (Fedora compares values both
    /// as written and with the user base URI stripped, so `<base/alice>` and `"alice"` both
    /// name `alice`), or one of the user's role-group IRIs (Fedora strips the group base URI
    /// from `acl:agent` too, so `acl:agent <groupBase/editors>` names role `editors`).
    /// Anonymous agents are named by nothing but `foaf:Agent`, which is a class.
    pub fn is_named_by(&self, value: &str) -> bool {
        let Some(user) = self.user else {
            return false;
        };
        value == user.name
            || self.user_iri == Some(value)
            || self.group_iris.iter().any(|g| g == value)
    }

    /// Whether `iri` is one of the user's role-group IRIs.
    pub fn has_group_iri(&self, iri: &str) -> bool {
        self.user.is_some() && self.group_iris.iter().any(|g| g == iri)
    }
}

/// The IRIs a user is known by, computed once per request from the configured base URIs
/// (Fedora's `fcrepo.auth.webac.userAgent.baseUri` and `groupAgent.baseUri`); lend them to an
/// [`Agent`] with [`AgentIris::agent`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentIris {
    /// User base URI + user name, if a user base is configured.
    pub user_iri: Option<String>,
    /// Group base URI + role for each role; the bare roles without a group base.
    pub group_iris: Vec<String>,
}

impl AgentIris {
    /// The IRIs of `user` (none for an anonymous client).
    pub fn new(
        user: Option<&Principal>,
        user_base_uri: Option<&str>,
        group_base_uri: Option<&str>,
    ) -> Self {
        let Some(user) = user else {
            return AgentIris::default();
        };
        AgentIris {
            user_iri: user_base_uri.map(|base| format!("{base}{}", user.name)),
            group_iris: user
                .roles
                .iter()
                .map(|role| match group_base_uri {
                    Some(base) => format!("{base}{role}"),
                    None => role.clone(),
                })
                .collect(),
        }
    }

    /// The agent `user` with these IRIs.
    pub fn agent<'a>(&'a self, user: Option<&'a Principal>) -> Agent<'a> {
        Agent {
            user,
            user_iri: self.user_iri.as_deref(),
            group_iris: &self.group_iris,
        }
    }
}
