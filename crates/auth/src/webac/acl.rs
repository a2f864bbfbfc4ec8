//! A parsed ACL and the decision over it.

use std::collections::HashMap;

use arca_model::{excerpt, FedoraId, ROOT_ID};
use oxrdf::{NamedOrBlankNode, Term, Triple};

use super::modes::{Mode, Modes};
use super::{vocab, Agent};

/// How much of a client's IRI or literal an error message quotes.
const QUOTED_CHARS: usize = 120;

const ACL_SUFFIX: &str = "/fcr:acl";

/// What counts as "this server" when an ACL is checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AclRules {
    /// IRI prefixes of this server's resources: `info:fedora` (always implied) plus the external
    /// base URL (e.g. `http://localhost:8080/rest`). A prefix matches a whole path segment or
    /// hash: `info:fedora` covers `info:fedora/a` and `info:fedora#x`, not `info:fedorax`.
    pub local_prefixes: Vec<String>,
    /// Where role groups live (`fcrepo.auth.webac.groupAgent.baseUri` in Fedora): an
    /// `acl:agentGroup` under it names a role, not a listing to read, so it is not remote.
    pub group_base_uri: Option<String>,
}

impl AclRules {
    /// The part of `iri` after a local prefix (`""`, `/a/b`, `#x`); `None` for remote IRIs.
    fn local_rest<'a>(&self, iri: &'a str) -> Option<&'a str> {
        std::iter::once(ROOT_ID)
            .chain(self.local_prefixes.iter().map(String::as_str))
            .find_map(|prefix| after_prefix(iri, prefix))
    }

    /// `iri` rewritten to the internal form (`info:fedora…`) if it is local, else `None`.
    fn internal_iri(&self, iri: &str) -> Option<String> {
        self.local_rest(iri).map(|rest| format!("{ROOT_ID}{rest}"))
    }

    /// The internal id (as [`FedoraId::as_str`], percent-decoded) a local IRI names; a local IRI
    /// that is no resource id (a hash IRI, an invalid path) is kept in internal form.
    fn resource_id(&self, iri: &str) -> Option<String> {
        let internal = self.internal_iri(iri)?;
        Some(match FedoraId::from_iri(&internal) {
            Some(id) => id.as_str().to_string(),
            None => internal,
        })
    }

    fn is_role_group(&self, iri: &str) -> bool {
        self.group_base_uri
            .as_deref()
            .is_some_and(|base| !base.is_empty() && iri.starts_with(base))
    }
}

fn after_prefix<'a>(iri: &'a str, prefix: &str) -> Option<&'a str> {
    let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
    if prefix.is_empty() {
        return None;
    }
    let rest = iri.strip_prefix(prefix)?;
    (rest.is_empty() || rest.starts_with('/') || rest.starts_with('#')).then_some(rest)
}

/// Why an ACL is refused. Messages name the authorization (`<#frag>` for the usual hash
/// subjects) and quote at most a short excerpt of the offending value; they are meant for
/// clients (a 4xx body with a `constrainedBy` link).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AclError {
    /// An authorization says who or what but grants no mode.
    #[error("the authorization {authorization} has no acl:mode; give it acl:Read, acl:Write, acl:Append or acl:Control")]
    NoMode {
        /// The authorization's subject.
        authorization: String,
    },
    /// An `acl:mode` that is none of the four WebAC modes.
    #[error("the authorization {authorization} has the acl:mode {mode}, which is not one of acl:Read, acl:Write, acl:Append, acl:Control")]
    UnknownMode {
        /// The authorization's subject.
        authorization: String,
        /// The mode as written.
        mode: String,
    },
    /// Both `acl:accessTo` and `acl:accessToClass` in one authorization, which Fedora 6 refuses.
    #[error("the authorization {authorization} uses both acl:accessTo and acl:accessToClass; a single authorization may use only one of them")]
    AccessToAndAccessToClass {
        /// The authorization's subject.
        authorization: String,
    },
    /// A predicate that needs an IRI got a literal or a blank node.
    #[error(
        "the authorization {authorization} has {predicate} {value}, but {predicate} needs an IRI"
    )]
    NotAnIri {
        /// The authorization's subject.
        authorization: String,
        /// The predicate, e.g. `acl:accessTo`.
        predicate: &'static str,
        /// The value as written.
        value: String,
    },
    /// `acl:accessTo` or `acl:default` naming a resource on another server (requirement 5.5).
    #[error("the authorization {authorization} has {predicate} <{target}>, which is not a resource of this repository; an ACL here may only govern this repository's resources")]
    RemoteTarget {
        /// The authorization's subject.
        authorization: String,
        /// `acl:accessTo` or `acl:default`.
        predicate: &'static str,
        /// The IRI as written.
        target: String,
    },
    /// `acl:agentGroup` naming a group listing on another server (requirement 5.6).
    #[error("the authorization {authorization} has acl:agentGroup <{group}>, a group listing on another server; remote group listings are not supported: use a group listing in this repository{}", role_hint(.group_base_uri))]
    RemoteGroup {
        /// The authorization's subject.
        authorization: String,
        /// The group IRI as written.
        group: String,
        /// The configured role-group base, if any, for the message.
        group_base_uri: Option<String>,
    },
}

fn role_hint(base: &Option<String>) -> String {
    match base {
        Some(base) => format!(" or a role group under <{base}>"),
        None => String::new(),
    }
}

/// One `acl:agentGroup`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Group {
    /// As written: compared to the agent's role-group IRIs.
    iri: String,
    /// The listing to read, in internal form, when the group lives in this repository.
    listing: Option<String>,
}

/// One `acl:Authorization`, reduced to what a decision needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Authorization {
    modes: Modes,
    /// `acl:agent` values: IRIs, or the lexical form of literals (`"alice"`).
    agents: Vec<String>,
    /// `acl:agentClass foaf:Agent`.
    everyone: bool,
    /// `acl:agentClass acl:AuthenticatedAgent`.
    authenticated: bool,
    groups: Vec<Group>,
    /// `acl:accessTo`, as internal ids; the ACL's own resource when the authorization has
    /// neither `acl:accessTo` nor `acl:accessToClass` (Fedora adds that triple when it stores
    /// such an ACL).
    access_to: Vec<String>,
    /// `acl:accessToClass` IRIs.
    classes: Vec<String>,
    /// `acl:default`, as internal ids.
    defaults: Vec<String>,
}

impl Authorization {
    /// Whether the agent is named without reading any group listing.
    fn names_directly(&self, agent: &Agent) -> bool {
        self.everyone
            || (agent.user.is_some()
                && (self.authenticated
                    || self.agents.iter().any(|a| agent.is_named_by(a))
                    || self.groups.iter().any(|g| agent.has_group_iri(&g.iri))))
    }

    /// Whether `resource` is among the authorization's `acl:accessTo` (or their descendants,
    /// for the server's default ACL).
    fn reaches(&self, resource: &str, inherited_from: Option<&str>, fallback: bool) -> bool {
        if fallback {
            return self
                .access_to
                .iter()
                .any(|t| is_self_or_ancestor(t, resource));
        }
        self.access_to
            .iter()
            .any(|t| t == resource || inherited_from == Some(t.as_str()))
    }
}

fn is_self_or_ancestor(target: &str, resource: &str) -> bool {
    target == ROOT_ID
        || resource
            .strip_prefix(target)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// A parsed ACL: its authorizations.
///
/// Build one with [`Acl::parse`] when a client writes an ACL (it refuses what it should), with
/// [`Acl::parse_lenient`] when reading one that is already stored (e.g. written by Fedora 6),
/// and with [`Acl::server_default`] or [`Acl::fedora_default`] for the ACL that applies when
/// no resource up the tree has one. Then ask [`Acl::modes_for`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acl {
    /// The resource the ACL belongs to (internal id).
    resource: String,
    authorizations: Vec<Authorization>,
    /// Group listings to read, deduplicated, internal form.
    listings: Vec<String>,
    uses_classes: bool,
    /// The server's default ACL: `acl:accessTo` reaches descendants too (as Fedora's fallback).
    fallback: bool,
}

impl Acl {
    /// Parses the triples of an ACL resource and refuses bad ones.
    ///
    /// `acl_id` is the ACL's internal id (`info:fedora/a/fcr:acl`). Subjects and objects that
    /// name repository resources are internal ids (`info:fedora/...`, percent-encoded as
    /// [`FedoraId::iri`] writes them); IRIs under another of `rules.local_prefixes` are read
    /// as their internal form. Agent IRIs are compared as the client wrote them.
    ///
    /// Only subjects typed `acl:Authorization` count (requirement 5.2), and of their
    /// statements only those in the `acl:` namespace; every other triple is ignored, as
    /// Fedora does. An authorization typed but saying nothing else is accepted and grants
    /// nothing (the Fedora API test suite's "deny" ACL is exactly that, and must be accepted).
    ///
    /// Errors, in the order of the triples: an `acl:mode` that is not one of the four
    /// ([`AclError::UnknownMode`]); an IRI-valued predicate with a literal
    /// ([`AclError::NotAnIri`]); `acl:accessTo`/`acl:default` outside this server
    /// ([`AclError::RemoteTarget`], 5.5); an `acl:agentGroup` that is neither local nor under
    /// `rules.group_base_uri` ([`AclError::RemoteGroup`], 5.6). Then, per authorization: no
    /// mode ([`AclError::NoMode`]), both `acl:accessTo` and `acl:accessToClass`
    /// ([`AclError::AccessToAndAccessToClass`], as Fedora 6). An authorization without
    /// `acl:accessTo` or `acl:accessToClass` is about the ACL's resource, as Fedora 6 stores
    /// it ([`implied_access_to`]).
    pub fn parse(acl_id: &str, triples: &[Triple], rules: &AclRules) -> Result<Acl, AclError> {
        Builder::new(acl_id, rules, true).build(triples)
    }

    /// Parses stored ACL triples without refusing anything: what [`Acl::parse`] would refuse
    /// is dropped (unknown modes, literals where IRIs belong, remote group listings) or kept
    /// where it can never match (remote targets), so that one odd statement in an ACL written
    /// elsewhere cannot make a resource unreadable for its admins or open it to others.
    pub fn parse_lenient(acl_id: &str, triples: &[Triple], rules: &AclRules) -> Acl {
        match Builder::new(acl_id, rules, false).build(triples) {
            Ok(acl) => acl,
            // A lenient builder never fails; an empty ACL denies everything if it ever did.
            Err(_) => Acl::empty(acl_id),
        }
    }

    /// Parses the server's default ACL (an operator's Turtle file, already parsed, with ids in
    /// internal form; `<info:fedora/fcr:acl#…>` subjects). It applies when no resource up the
    /// tree has an ACL (requirement 5.9), and as in Fedora its `acl:accessTo` reaches every
    /// descendant of the named resource, with or without `acl:default`.
    pub fn server_default(triples: &[Triple], rules: &AclRules) -> Result<Acl, AclError> {
        let mut acl = Acl::parse(&root_acl_id(), triples, rules)?;
        acl.fallback = true;
        Ok(acl)
    }

    /// Fedora 6's built-in default ACL ([`default_root_acl`](super::default_root_acl)):
    /// everyone may read everything.
    pub fn fedora_default() -> Acl {
        let rules = AclRules::default();
        let mut acl = Acl::parse_lenient(&root_acl_id(), &super::default_root_acl(), &rules);
        acl.fallback = true;
        acl
    }

    fn empty(acl_id: &str) -> Acl {
        Acl {
            resource: acl_base(acl_id).to_string(),
            authorizations: Vec::new(),
            listings: Vec::new(),
            uses_classes: false,
            fallback: false,
        }
    }

    /// The resource this ACL belongs to (its id without `/fcr:acl`).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// How many authorizations the ACL has (typed ones, including those granting nothing).
    pub fn len(&self) -> usize {
        self.authorizations.len()
    }

    /// Whether the ACL has no authorization at all.
    pub fn is_empty(&self) -> bool {
        self.authorizations.is_empty()
    }

    /// Whether this ACL decides for a resource, or the search goes on up the tree, by Fedora
    /// 6's rule (`WebACRolesProvider.getEffectiveAcl`): a resource's own ACL decides if it has
    /// at least one authorization; an ancestor's (`inherited_from: Some(ancestor)`) decides if
    /// one of its authorizations has `acl:default` naming that ancestor. The server's default
    /// ACL always decides.
    pub fn is_effective(&self, inherited_from: Option<&str>) -> bool {
        if self.fallback {
            return true;
        }
        match inherited_from {
            None => !self.authorizations.is_empty(),
            Some(ancestor) => self
                .authorizations
                .iter()
                .any(|a| a.defaults.iter().any(|d| d == ancestor)),
        }
    }

    /// The modes this ACL grants `agent` on `resource` (an internal id as
    /// [`FedoraId::as_str`] gives it; for a description or an ACL, pass the resource it belongs
    /// to, as Fedora does).
    ///
    /// `inherited_from: None` when the ACL is the resource's own: authorizations with
    /// `acl:accessTo` the resource, or `acl:accessToClass` one of its types, apply.
    /// `Some(ancestor)` when it is the nearest ancestor's: only authorizations with
    /// `acl:default` naming that ancestor apply, and (as in Fedora 6) only if their
    /// `acl:accessTo` is the resource or the ancestor, or their `acl:accessToClass` one of
    /// the types. The server's default ACL ignores `inherited_from`.
    ///
    /// `types` gives the resource's `rdf:type`s; it is called at most once, and only when an
    /// otherwise applicable authorization uses `acl:accessToClass`. Fedora 6 also counts the
    /// ancestor's types for an inherited ACL: include them to match it exactly.
    /// `groups` tells whether the agent is a member of a group listing in this repository
    /// (an internal IRI, possibly with a `#fragment`; see
    /// [`group_has_member`](super::group_has_member)); it is called only for authenticated
    /// agents, and only when nothing cheaper decided.
    pub fn modes_for(
        &self,
        resource: &str,
        inherited_from: Option<&str>,
        agent: &Agent,
        types: &mut dyn FnMut() -> Vec<String>,
        groups: &mut dyn FnMut(&str) -> bool,
    ) -> Modes {
        let inherited_from = if self.fallback { None } else { inherited_from };
        let mut granted = Modes::NONE;
        let mut known_types: Option<Vec<String>> = None;
        for auth in &self.authorizations {
            if granted.contains_all(auth.modes) {
                continue;
            }
            if let Some(ancestor) = inherited_from {
                if !auth.defaults.iter().any(|d| d == ancestor) {
                    continue;
                }
            }
            let reached = auth.reaches(resource, inherited_from, self.fallback);
            if !reached && auth.classes.is_empty() {
                continue;
            }
            let named = auth.names_directly(agent);
            let may_be_member =
                agent.user.is_some() && auth.groups.iter().any(|g| g.listing.is_some());
            if !named && !may_be_member {
                continue;
            }
            if !reached {
                let known = known_types.get_or_insert_with(&mut *types);
                if !auth.classes.iter().any(|c| known.contains(c)) {
                    continue;
                }
            }
            if !named
                && !auth
                    .groups
                    .iter()
                    .filter_map(|g| g.listing.as_deref())
                    .any(&mut *groups)
            {
                continue;
            }
            granted |= auth.modes;
            if granted == Modes::ALL {
                break;
            }
        }
        granted
    }

    /// Whether the ACL grants `mode` (a shorthand for [`Acl::modes_for`]).
    pub fn grants(
        &self,
        mode: Mode,
        resource: &str,
        inherited_from: Option<&str>,
        agent: &Agent,
        types: &mut dyn FnMut() -> Vec<String>,
        groups: &mut dyn FnMut(&str) -> bool,
    ) -> bool {
        self.modes_for(resource, inherited_from, agent, types, groups)
            .contains(mode)
    }

    /// Every group listing this ACL names in this repository, in internal form (with its
    /// `#fragment` if any), each once: the IRIs [`Acl::modes_for`] may pass to `groups`, so
    /// the caller can prefetch and cache them. Role groups (under the group base URI) are not
    /// listed: they are matched against [`Agent::group_iris`].
    pub fn groups(&self) -> impl Iterator<Item = &str> {
        self.listings.iter().map(String::as_str)
    }

    /// Whether any authorization uses `acl:accessToClass` (so decisions may need types).
    pub fn uses_classes(&self) -> bool {
        self.uses_classes
    }
}

fn root_acl_id() -> String {
    format!("{ROOT_ID}{ACL_SUFFIX}")
}

fn acl_base(acl_id: &str) -> &str {
    acl_id.strip_suffix(ACL_SUFFIX).unwrap_or(acl_id)
}

/// How a subject is named in messages: `<#frag>` for the usual hash subjects of an ACL.
fn subject_name(subject: &NamedOrBlankNode) -> String {
    match subject {
        NamedOrBlankNode::NamedNode(n) => {
            let iri = n.as_str();
            match iri.find("/fcr:acl#") {
                Some(i) => format!("<{}>", excerpt(&iri[i + ACL_SUFFIX.len()..], QUOTED_CHARS)),
                None => format!("<{}>", excerpt(iri, QUOTED_CHARS)),
            }
        }
        NamedOrBlankNode::BlankNode(_) => "[] (a blank node)".to_string(),
    }
}

fn term_text(term: &Term) -> String {
    match term {
        Term::NamedNode(n) => format!("<{}>", excerpt(n.as_str(), QUOTED_CHARS)),
        Term::Literal(l) => format!("\"{}\"", excerpt(l.value(), QUOTED_CHARS)),
        _ => "a blank node".to_string(),
    }
}

struct Draft<'t> {
    subject: &'t NamedOrBlankNode,
    auth: Authorization,
    /// Whether the authorization says anything besides its type.
    said_anything: bool,
}

struct Builder<'r> {
    resource: String,
    rules: &'r AclRules,
    strict: bool,
}

impl<'r> Builder<'r> {
    fn new(acl_id: &str, rules: &'r AclRules, strict: bool) -> Self {
        let base = acl_base(acl_id);
        let resource = match FedoraId::from_internal(base) {
            Ok(id) => id.as_str().to_string(),
            Err(_) => base.to_string(),
        };
        Builder {
            resource,
            rules,
            strict,
        }
    }

    fn build(self, triples: &[Triple]) -> Result<Acl, AclError> {
        let mut index: HashMap<&NamedOrBlankNode, usize> = HashMap::new();
        let mut drafts: Vec<Draft> = Vec::new();
        for t in triples {
            let typed = t.predicate.as_str() == vocab::RDF_TYPE
                && matches!(&t.object, Term::NamedNode(o) if o.as_str() == vocab::AUTHORIZATION);
            if typed && !index.contains_key(&t.subject) {
                index.insert(&t.subject, drafts.len());
                drafts.push(Draft {
                    subject: &t.subject,
                    auth: Authorization::default(),
                    said_anything: false,
                });
            }
        }
        for t in triples {
            if !t.predicate.as_str().starts_with(vocab::ACL_NS) {
                continue;
            }
            if let Some(&i) = index.get(&t.subject) {
                self.statement(&mut drafts[i], t)?;
            }
        }
        let mut acl = Acl::empty(&self.resource);
        for draft in drafts {
            let auth = self.finish(draft)?;
            for g in &auth.groups {
                if let Some(listing) = &g.listing {
                    if !acl.listings.contains(listing) {
                        acl.listings.push(listing.clone());
                    }
                }
            }
            acl.uses_classes |= !auth.classes.is_empty();
            acl.authorizations.push(auth);
        }
        Ok(acl)
    }

    /// Reads one `acl:` statement about an authorization.
    fn statement(&self, draft: &mut Draft, t: &Triple) -> Result<(), AclError> {
        let name = || subject_name(draft.subject);
        let iri = match &t.object {
            Term::NamedNode(n) => Some(n.as_str()),
            _ => None,
        };
        let predicate = match t.predicate.as_str() {
            vocab::MODE => "acl:mode",
            vocab::AGENT => "acl:agent",
            vocab::AGENT_CLASS => "acl:agentClass",
            vocab::AGENT_GROUP => "acl:agentGroup",
            vocab::ACCESS_TO => "acl:accessTo",
            vocab::ACCESS_TO_CLASS => "acl:accessToClass",
            vocab::DEFAULT => "acl:default",
            // acl:origin, acl:trustedApp, …: not Fedora's business, nor ours.
            _ => return Ok(()),
        };
        draft.said_anything = true;
        let auth = &mut draft.auth;
        if t.predicate.as_str() == vocab::AGENT {
            // An agent may be an IRI or, as Fedora allows, a literal user name.
            match &t.object {
                Term::NamedNode(n) => auth.agents.push(n.as_str().to_string()),
                Term::Literal(l) => auth.agents.push(l.value().to_string()),
                _ => {}
            }
            return Ok(());
        }
        let Some(iri) = iri else {
            if t.predicate.as_str() == vocab::MODE {
                return self.refuse(AclError::UnknownMode {
                    authorization: name(),
                    mode: term_text(&t.object),
                });
            }
            return self.refuse(AclError::NotAnIri {
                authorization: name(),
                predicate,
                value: term_text(&t.object),
            });
        };
        match t.predicate.as_str() {
            vocab::MODE => match Mode::from_iri(iri) {
                Some(m) => auth.modes = auth.modes.with(m),
                None => {
                    return self.refuse(AclError::UnknownMode {
                        authorization: name(),
                        mode: term_text(&t.object),
                    })
                }
            },
            vocab::AGENT_CLASS => match iri {
                vocab::FOAF_AGENT => auth.everyone = true,
                vocab::AUTHENTICATED_AGENT => auth.authenticated = true,
                // Fedora 6 ignores other agent classes: they name nobody.
                _ => {}
            },
            vocab::AGENT_GROUP => {
                let listing = self.rules.internal_iri(iri);
                if listing.is_none() && !self.rules.is_role_group(iri) {
                    return self.refuse(AclError::RemoteGroup {
                        authorization: name(),
                        group: excerpt(iri, QUOTED_CHARS),
                        group_base_uri: self.rules.group_base_uri.clone(),
                    });
                }
                auth.groups.push(Group {
                    iri: iri.to_string(),
                    listing,
                });
            }
            vocab::ACCESS_TO_CLASS => auth.classes.push(iri.to_string()),
            _ => {
                // acl:accessTo or acl:default
                let id = match self.rules.resource_id(iri) {
                    Some(id) => id,
                    None => {
                        self.refuse(AclError::RemoteTarget {
                            authorization: name(),
                            predicate,
                            target: excerpt(iri, QUOTED_CHARS),
                        })?;
                        // Lenient: kept as written, it never equals an internal id.
                        iri.to_string()
                    }
                };
                if t.predicate.as_str() == vocab::ACCESS_TO {
                    auth.access_to.push(id);
                } else {
                    auth.defaults.push(id);
                }
            }
        }
        Ok(())
    }

    /// Checks a whole authorization and completes it as Fedora stores it.
    fn finish(&self, draft: Draft) -> Result<Authorization, AclError> {
        let mut auth = draft.auth;
        if draft.said_anything {
            let name = || subject_name(draft.subject);
            if auth.modes.is_empty() {
                self.refuse(AclError::NoMode {
                    authorization: name(),
                })?;
            }
            if !auth.access_to.is_empty() && !auth.classes.is_empty() {
                self.refuse(AclError::AccessToAndAccessToClass {
                    authorization: name(),
                })?;
            }
        }
        if auth.access_to.is_empty() && auth.classes.is_empty() {
            // Fedora 6 adds `acl:accessTo <the ACL's resource>` to such an authorization when
            // it stores the ACL (AbstractService.ensureValidACLAuthorization).
            auth.access_to.push(self.resource.clone());
        }
        Ok(auth)
    }

    /// In strict mode, the error; in lenient mode, carry on.
    fn refuse(&self, error: AclError) -> Result<(), AclError> {
        if self.strict {
            Err(error)
        } else {
            Ok(())
        }
    }
}

/// The triples Fedora 6 adds when it stores an ACL (`AbstractService.ensureValidACLAuthorization`):
/// each subject `<…/fcr:acl#frag>` with neither `acl:accessTo` nor `acl:accessToClass` gets
/// `acl:accessTo <…>`, the resource the ACL belongs to. Add them before storing an ACL to store
/// what Fedora would; [`Acl`] already reads such authorizations this way.
pub fn implied_access_to(triples: &[Triple]) -> Vec<Triple> {
    let mut seen: Vec<&oxrdf::NamedNode> = Vec::new();
    let mut added = Vec::new();
    for t in triples {
        let NamedOrBlankNode::NamedNode(subject) = &t.subject else {
            continue;
        };
        let Some(i) = subject.as_str().find("/fcr:acl#") else {
            continue;
        };
        if seen.contains(&subject) {
            continue;
        }
        seen.push(subject);
        let targeted = triples.iter().any(|u| {
            u.subject == t.subject
                && matches!(
                    u.predicate.as_str(),
                    vocab::ACCESS_TO | vocab::ACCESS_TO_CLASS
                )
        });
        if !targeted {
            added.push(Triple::new(
                subject.clone(),
                oxrdf::NamedNode::new_unchecked(vocab::ACCESS_TO),
                oxrdf::NamedNode::new_unchecked(&subject.as_str()[..i]),
            ));
        }
    }
    added
}
