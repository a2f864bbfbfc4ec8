//! Authentication and authorization for arca.
//!
//! - [`authn`]: who a request comes from — HTTP Basic checked against an Apache htpasswd file
//!   (reloaded when it changes) and Bearer JWTs (HS256, RS256, ES256), with verified
//!   credentials cached so that a check costs microseconds, not a bcrypt round.
//! - [`webac`]: what an agent may do — Web Access Control ACLs parsed from their triples, the
//!   Fedora/SOLID decision rules (agents, agent classes, groups, `accessTo`,
//!   `accessToClass`, `acl:default` inheritance) and modes Read, Write, Append, Control.
//!
//! The crate knows nothing about HTTP or storage; `arca-http` feeds it headers and ACL
//! triples read through the repository.
#![warn(missing_docs)]

pub mod authn;
pub mod webac;

/// A user whose credentials were checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    /// The user name: an htpasswd user or a JWT's `sub`.
    pub name: String,
    /// Roles (from the JWT's roles claim; none for htpasswd users). Roles act as WebAC
    /// groups and may make a user an admin.
    pub roles: Vec<String>,
}
