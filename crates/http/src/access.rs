//! Access control for every request: who it comes from ([`arca_auth::authn`]) and whether
//! the ACL in effect for its resource grants what the operation needs
//! ([`arca_auth::webac`]).
//!
//! The ACL in effect for a resource is the one of the nearest resource up its path that has
//! one (its own first; ghost path segments have none, so walking the path finds the same
//! ACL as walking containment), else the root ACL from the settings (Fedora's default when
//! none is given). Parsed ACLs, "has no ACL" answers, group listings and class documents
//! (their `rdfs:subClassOf`) are cached; the repository's change watcher drops the entries
//! of every resource a committed change touches before that change is answered, so a
//! decision never uses an ACL older than the newest acknowledged write. A decision on a warm cache costs a few hash lookups per path
//! segment.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arca_auth::authn::Authenticator;
use arca_auth::webac::{self, Acl, AclRules, Action, Agent, Mode, Modes};
use arca_auth::Principal;
use arca_catalog::ResourceRecord;
use arca_model::{FedoraId, InteractionModel};
use arca_repository::{Constraint, Error, NewContent, Repository};
use http::HeaderMap;
use oxrdf::Triple;
use parking_lot::Mutex;

use crate::error::ApiError;
use crate::Operation;

/// Authentication and access-control settings of the HTTP layer.
#[derive(Clone, Default)]
pub struct AuthConfig {
    /// Check credentials and ACLs; `false` lets every request do everything (loopback use).
    pub enabled: bool,
    /// Checks credentials (htpasswd, JWTs, the quick-start user).
    pub authenticator: Option<Arc<Authenticator>>,
    /// Users who bypass ACLs and may send `On-Behalf-Of`.
    pub admins: Vec<String>,
    /// Holders of this role are admins.
    pub admin_role: Option<String>,
    /// Base of users' agent IRIs (`<base><name>`); users are their bare names without it.
    pub user_base_uri: Option<String>,
    /// Base of role groups (`<base><role>`).
    pub group_base_uri: Option<String>,
    /// The ACL in effect where no resource up the tree has one, as triples with internal
    /// ids; Fedora's default (everyone may read) when `None`.
    pub root_acl: Option<Vec<Triple>>,
}

impl AuthConfig {
    /// Reads a root ACL written in Turtle. In-repository resources are named by their
    /// internal ids (`<info:fedora>` is the root, as in Fedora's own root ACL) or by URLs
    /// under `base_url`, the external URL of the REST root.
    pub fn root_acl_from_turtle(text: &[u8], base_url: &str) -> Result<Vec<Triple>, String> {
        let mapper = arca_rdf::IdMapper::new(base_url);
        let acl_url = format!("{}/fcr:acl", base_url.trim_end_matches('/'));
        arca_rdf::parse(
            text,
            arca_rdf::RdfFormat::Turtle,
            &acl_url,
            &mapper,
            &arca_rdf::ParseLimits::default(),
        )
        .map_err(|e| e.to_string())
    }
}

impl std::fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthConfig")
            .field("enabled", &self.enabled)
            .field("admins", &self.admins)
            .field("admin_role", &self.admin_role)
            .field("user_base_uri", &self.user_base_uri)
            .field("group_base_uri", &self.group_base_uri)
            .finish_non_exhaustive()
    }
}

/// Who a request comes from, once its credentials are checked.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    principal: Option<Principal>,
    admin: bool,
    user_iri: Option<String>,
    group_iris: Vec<String>,
}

impl Caller {
    /// Everything allowed: access checks are off.
    fn unchecked() -> Self {
        Self {
            principal: None,
            admin: true,
            user_iri: None,
            group_iris: Vec::new(),
        }
    }

    /// The user recorded as creator or modifier: the agent IRI when a user base is set,
    /// else the user name; `default` when checks are off.
    pub(crate) fn recorded_user(&self, default: &str) -> String {
        match (&self.user_iri, &self.principal) {
            (Some(iri), _) => iri.clone(),
            (None, Some(p)) => p.name.clone(),
            (None, None) => default.to_string(),
        }
    }

    fn agent(&self) -> Agent<'_> {
        Agent {
            user: self.principal.as_ref(),
            user_iri: self.user_iri.as_deref(),
            group_iris: &self.group_iris,
        }
    }

    /// The authenticated user's name; `None` for anonymous callers and when checks are off.
    pub(crate) fn name(&self) -> Option<&str> {
        self.principal.as_ref().map(|p| p.name.as_str())
    }

    /// Whether the caller bypasses ACLs (an admin, or checks are off).
    pub(crate) fn is_admin(&self) -> bool {
        self.admin
    }

    fn is_anonymous(&self) -> bool {
        self.principal.is_none() && !self.admin
    }
}

/// What a write of a PATCH may do: everything, or only add triples (the user has
/// `acl:Append` but not `acl:Write`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grant {
    Full,
    AppendOnly,
}

/// What an operation needs.
enum Need {
    Nothing,
    Authenticated,
    /// Administrators only.
    Admin,
    /// A check of the caller's modes on a resource.
    On(FedoraId, Check),
    /// An authenticated caller, and a check of its modes on a resource (Fedora 3's API-M
    /// reads).
    AuthenticatedOn(FedoraId, Check),
}

/// What the caller's modes on the resource must allow.
#[derive(Clone, Copy)]
enum Check {
    Read,
    Control,
    /// Purge, `POST fcr:versions`.
    Write,
    /// POST of a child: Write or Append on the container.
    Post,
    /// Write on an existing resource; Write or Append to create one.
    Put,
    /// Write, or Append for updates that only add triples.
    Patch,
    /// Write on the resource and on everything below it.
    Delete,
}

/// Cached state, dropped entry by entry as changes commit, and bounded: a full map evicts
/// its coldest entries one at a time, so the ACLs in use stay cached.
struct Cache {
    /// Resource id → its ACL as stored.
    acls: quick_cache::unsync::Cache<FedoraId, StoredAcl>,
    /// Document id → its triples: group listings, and class resources read for their
    /// `rdfs:subClassOf` statements.
    documents: quick_cache::unsync::Cache<FedoraId, Arc<Vec<Triple>>>,
}

impl Cache {
    /// Empty maps sharing [`CACHE_ENTRIES`] half and half.
    fn new() -> Self {
        Self {
            acls: quick_cache::unsync::Cache::new(CACHE_ENTRIES / 2),
            documents: quick_cache::unsync::Cache::new(CACHE_ENTRIES / 2),
        }
    }
}

/// A resource's ACL as its `fcr:acl` holds it.
#[derive(Clone)]
enum StoredAcl {
    /// No ACL.
    None,
    /// An ACL of its own, parsed.
    Own(Arc<Acl>),
    /// A link to another RDF source whose authorizations are the resource's ACL (Fedora
    /// API §5.4: named with `Link: rel="acl"` when the resource was created); that source's
    /// triples are read through the documents cache, so a change to it is seen at once.
    Linked(FedoraId),
}

/// Most classes, a resource's own and their superclasses, gathered for one decision on
/// `acl:accessToClass`.
const MAX_CLASSES: usize = 256;

/// Most entries the cache holds, ACLs and documents together (a bound on memory, not a
/// tuning knob: ~100 bytes each).
const CACHE_ENTRIES: usize = 200_000;

struct Shared {
    cache: Mutex<Cache>,
    /// Bumped by every invalidation; a lookup that started before a bump does not store
    /// what it read.
    generation: AtomicU64,
}

/// The access controller shared by all requests.
pub(crate) struct Access {
    config: AuthConfig,
    admins: HashSet<String>,
    challenge: String,
    /// The ACL in effect where no resource up the tree has one that decides.
    root_acl: Arc<Acl>,
    rules: AclRules,
    shared: Arc<Shared>,
}

impl Access {
    /// Builds the controller and registers its cache with `repo`'s change watcher.
    pub(crate) fn new(config: AuthConfig, repo: &Repository) -> Result<Self, String> {
        let rules = AclRules {
            local_prefixes: vec![FedoraId::root().iri()],
            group_base_uri: config.group_base_uri.clone(),
        };
        let root_acl = match &config.root_acl {
            Some(triples) => Acl::server_default(triples, &rules)
                .map_err(|e| format!("the root ACL is not a valid ACL: {e}"))?,
            None => Acl::fedora_default(),
        };
        let mut challenge = "Basic realm=\"arca\"".to_string();
        if config
            .authenticator
            .as_ref()
            .is_some_and(|a| a.accepts_bearer())
        {
            challenge.push_str(", Bearer realm=\"arca\"");
        }
        let shared = Arc::new(Shared {
            cache: Mutex::new(Cache::new()),
            generation: AtomicU64::new(0),
        });
        let watched = shared.clone();
        repo.watch_changes(Arc::new(move |ids: &[FedoraId]| {
            let mut cache = watched.cache.lock();
            watched.generation.fetch_add(1, Ordering::AcqRel);
            for id in ids {
                cache.acls.remove(&id.base());
                cache.documents.remove(id);
            }
        }));
        Ok(Self {
            admins: config.admins.iter().cloned().collect(),
            config,
            challenge,
            root_acl: Arc::new(root_acl),
            rules,
            shared,
        })
    }

    /// The caller of a request: anonymous without an `Authorization` header, 401 for
    /// credentials that are refused (without saying which part was wrong). An admin may act
    /// for another user with `On-Behalf-Of`.
    pub(crate) async fn identify(&self, headers: &HeaderMap) -> Result<Caller, ApiError> {
        if !self.config.enabled {
            return Ok(Caller::unchecked());
        }
        let principal = match &self.config.authenticator {
            Some(a) => {
                let header = headers
                    .get(http::header::AUTHORIZATION)
                    .map(|v| v.as_bytes());
                let checked = match a.authenticate_quickly(header) {
                    Some(checked) => checked,
                    // A bcrypt round or a signature check: off the async workers.
                    None => {
                        let (a, owned) = (a.clone(), header.map(<[u8]>::to_vec));
                        tokio::task::spawn_blocking(move || a.authenticate(owned.as_deref()))
                            .await
                            .map_err(|e| {
                                ApiError::from_kernel(
                                    Error::Internal(format!(
                                        "the credential check did not finish: {e}"
                                    )),
                                    "",
                                )
                            })?
                    }
                };
                checked.map_err(|rejected| {
                    tracing::info!(reason = rejected.detail(), "credentials refused");
                    self.unauthorized()
                })?
            }
            None => None,
        };
        let caller = self.caller(principal);
        let Some(other) = headers.get("on-behalf-of") else {
            return Ok(caller);
        };
        if !caller.admin {
            return Err(ApiError::forbidden(
                "only admins may act on behalf of another user (On-Behalf-Of)",
            ));
        }
        let name = other
            .to_str()
            .ok()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ApiError::bad_request("On-Behalf-Of must name a user"))?;
        Ok(self.caller(Some(Principal {
            name: name.to_string(),
            roles: Vec::new(),
        })))
    }

    fn caller(&self, principal: Option<Principal>) -> Caller {
        let Some(p) = principal else {
            return Caller {
                principal: None,
                admin: false,
                user_iri: None,
                group_iris: Vec::new(),
            };
        };
        let admin = self.admins.contains(&p.name)
            || self
                .config
                .admin_role
                .as_ref()
                .is_some_and(|r| p.roles.contains(r));
        let user_iri = self
            .config
            .user_base_uri
            .as_ref()
            .map(|base| format!("{base}{}", p.name));
        let group_iris = match &self.config.group_base_uri {
            Some(base) => p.roles.iter().map(|r| format!("{base}{r}")).collect(),
            None => Vec::new(),
        };
        Caller {
            principal: Some(p),
            admin,
            user_iri,
            group_iris,
        }
    }

    fn unauthorized(&self) -> ApiError {
        ApiError::unauthorized(self.challenge.clone())
    }

    /// The refusal of something `caller` may not do: 401 with the challenge for anonymous
    /// callers, 403 with `message` for known ones.
    pub(crate) fn refuse(&self, caller: &Caller, message: String) -> ApiError {
        if caller.is_anonymous() {
            self.unauthorized()
        } else {
            ApiError::forbidden(message)
        }
    }

    /// Checks that `caller` may carry out `op`: 401 for anonymous callers and 403 for known
    /// ones when the ACL in effect does not grant it. A change that adds members to a
    /// direct or indirect container, or removes them, also needs Write on its membership
    /// resource (Fedora 6's rule); what a body names is checked once it is read
    /// ([`authorize_membership`](Self::authorize_membership)).
    pub(crate) async fn authorize(
        &self,
        repo: &Repository,
        caller: &Caller,
        op: &Operation,
        url: impl Fn(&FedoraId) -> String,
    ) -> Result<Grant, ApiError> {
        if caller.admin {
            return Ok(Grant::Full);
        }
        let kernel = |e: Error| ApiError::from_kernel(e, &url(&FedoraId::root()));
        // The resource a write names (a description's binary), looked up once for both
        // checks.
        let written = match op {
            Operation::Create(id)
            | Operation::Put(id)
            | Operation::Delete(id)
            | Operation::Patch(id)
                if !id.is_acl() =>
            {
                repo.lookup(&id.base()).await.map_err(kernel)?
            }
            _ => None,
        };
        let grant = self
            .authorize_target(repo, caller, op, written.as_ref(), &url)
            .await?;
        let targets = membership_targets(repo, op, written.as_ref())
            .await
            .map_err(kernel)?;
        for resource in targets {
            self.authorize_membership(repo, caller, &resource, &url)
                .await?;
        }
        Ok(grant)
    }

    /// Checks that `caller` may change the membership triples of `resource` (acl:Write on
    /// it), the membership resource of a direct or indirect container it changes.
    pub(crate) async fn authorize_membership(
        &self,
        repo: &Repository,
        caller: &Caller,
        resource: &FedoraId,
        url: impl Fn(&FedoraId) -> String,
    ) -> Result<(), ApiError> {
        if caller.admin {
            return Ok(());
        }
        let modes = self
            .modes(repo, caller, resource)
            .await
            .map_err(|e| ApiError::from_kernel(e, &url(&FedoraId::root())))?;
        if modes.contains(Mode::Write) {
            return Ok(());
        }
        Err(self.refuse(
            caller,
            format!(
                "you may not change the members of {}: this changes its membership triples, which needs acl:Write on it",
                url(resource)
            ),
        ))
    }

    /// Checks the membership resource named in the new content of direct or indirect
    /// container `id` (created or replaced): changing another resource's members needs
    /// Write on it.
    pub(crate) async fn authorize_named_membership(
        &self,
        repo: &Repository,
        caller: &Caller,
        id: &FedoraId,
        model: InteractionModel,
        content: &NewContent,
        url: impl Fn(&FedoraId) -> String,
    ) -> Result<(), ApiError> {
        let NewContent::Rdf { triples, .. } = content else {
            return Ok(());
        };
        if caller.admin || !model.generates_membership() {
            return Ok(());
        }
        match arca_repository::membership::membership_resource(id, model, triples) {
            Some(resource) if resource != *id => {
                self.authorize_membership(repo, caller, &resource, url)
                    .await
            }
            _ => Ok(()),
        }
    }

    /// [`authorize`](Self::authorize) on the resource the operation names; `written` is
    /// the record of the resource a POST, PUT, PATCH or DELETE names, if it exists.
    async fn authorize_target(
        &self,
        repo: &Repository,
        caller: &Caller,
        op: &Operation,
        written: Option<&ResourceRecord>,
        url: impl Fn(&FedoraId) -> String,
    ) -> Result<Grant, ApiError> {
        let deny = |what: &str, id: &FedoraId| {
            self.refuse(caller, format!("you may not {what} {}", url(id)))
        };
        let kernel = |e: Error| ApiError::from_kernel(e, &url(&FedoraId::root()));
        let (id, check) = match need(op) {
            Need::Nothing => return Ok(Grant::Full),
            Need::Authenticated if caller.is_anonymous() => return Err(self.unauthorized()),
            Need::Authenticated => return Ok(Grant::Full),
            Need::Admin if caller.is_anonymous() => return Err(self.unauthorized()),
            Need::Admin => return Err(ApiError::forbidden("this is for administrators")),
            Need::AuthenticatedOn(_, _) if caller.is_anonymous() => return Err(self.unauthorized()),
            Need::On(id, check) | Need::AuthenticatedOn(id, check) => (id, check),
        };
        let modes = self.modes(repo, caller, &id).await.map_err(kernel)?;
        let (needed, what) = match check {
            Check::Read => (Action::Read.required(), "read"),
            Check::Control => (Action::Control.required(), "read or change the ACL of"),
            Check::Write => (Mode::Write, "change"),
            Check::Post => {
                // As Fedora: a binary, its description, or nothing at all needs Write
                // (Append lets only a container take children).
                let container = written
                    .and_then(|r| r.headers.model())
                    .is_some_and(|m| m.is_container());
                let to_binary = !container || id.is_description();
                (Action::Post { to_binary }.required(), "add resources to")
            }
            Check::Put => {
                let exists = written.is_some();
                let what = if exists { "replace" } else { "create" };
                (Action::Put { exists }.required(), what)
            }
            Check::Patch if modes.contains(Mode::Write) => return Ok(Grant::Full),
            Check::Patch => {
                let append = Action::Patch { inserts_only: true };
                return match append.allowed_by(modes) {
                    true => Ok(Grant::AppendOnly),
                    false => Err(deny("change", &id)),
                };
            }
            Check::Delete => (Action::Delete.required(), "delete"),
        };
        if !modes.contains(needed) {
            return Err(deny(what, &id));
        }
        if let Check::Delete = check {
            // A delete takes everything below along: each of those must be writable too.
            let below = repo
                .catalog()
                .descendants(&id)
                .await
                .map_err(Error::from)
                .map_err(kernel)?;
            for r in below {
                if r.is_deleted() || r.id.is_acl() || r.id.is_description() {
                    continue;
                }
                let modes = self.modes(repo, caller, &r.id).await.map_err(kernel)?;
                if !Action::Delete.allowed_by(modes) {
                    return Err(deny("delete", &r.id));
                }
            }
        }
        Ok(Grant::Full)
    }

    /// Whether `caller` may read `id` (for listings: children, members, references).
    pub(crate) async fn can_read(&self, repo: &Repository, caller: &Caller, id: &FedoraId) -> bool {
        if caller.admin {
            return true;
        }
        match self.modes(repo, caller, id).await {
            Ok(modes) => modes.contains(Mode::Read),
            Err(e) => {
                tracing::warn!(error = %e, %id, "access check failed; the resource is hidden");
                false
            }
        }
    }

    /// Checks an ACL's triples (internal ids) and completes them as Fedora 6 stores them:
    /// an authorization without a target gets `acl:accessTo` the ACL's resource.
    pub(crate) fn prepare_acl(
        &self,
        acl_id: &FedoraId,
        mut triples: Vec<Triple>,
    ) -> Result<Vec<Triple>, Error> {
        Acl::parse(acl_id.as_str(), &triples, &self.rules)
            .map_err(|e| Error::constraint(Constraint::Acl, e.to_string()))?;
        let implied = webac::implied_access_to(&triples);
        triples.extend(implied);
        Ok(triples)
    }

    /// The root ACL in effect when the root has none of its own (Fedora's default unless
    /// configured), as triples with internal ids.
    pub(crate) fn default_root_acl(&self) -> Vec<Triple> {
        self.config
            .root_acl
            .clone()
            .unwrap_or_else(webac::default_root_acl)
    }

    /// The modes `caller` has on `id` (a description or ACL counts as its resource).
    async fn modes(
        &self,
        repo: &Repository,
        caller: &Caller,
        id: &FedoraId,
    ) -> Result<Modes, Error> {
        if caller.admin {
            return Ok(Modes::ALL);
        }
        let target = id.base();
        let mut holder = Some(target.clone());
        while let Some(h) = holder {
            if let Some(acl) = self.acl_of(repo, &h).await? {
                // Fedora 6's rule: an ancestor's ACL decides only through its acl:default
                // authorizations; without one the walk goes on up.
                let inherited = (h != target).then_some(h.as_str());
                if acl.is_effective(inherited) {
                    return self.decide(repo, caller, &acl, &target, inherited).await;
                }
            }
            holder = h.path_parent();
        }
        let acl = self.root_acl.clone();
        self.decide(repo, caller, &acl, &target, None).await
    }

    async fn decide(
        &self,
        repo: &Repository,
        caller: &Caller,
        acl: &Acl,
        target: &FedoraId,
        inherited_from: Option<&str>,
    ) -> Result<Modes, Error> {
        let types = if acl.uses_classes() {
            self.with_superclasses(repo, types_of(repo, target).await?)
                .await?
        } else {
            Vec::new()
        };
        let agent = caller.agent();
        let mut members = HashMap::new();
        if agent.is_authenticated() {
            for group in acl.groups() {
                let member = self.group_has_member(repo, group, &agent).await?;
                members.insert(group.to_string(), member);
            }
        }
        Ok(acl.modes_for(
            target.as_str(),
            inherited_from,
            &agent,
            &mut || types.clone(),
            &mut |g: &str| members.get(g).copied().unwrap_or(false),
        ))
    }

    /// The parsed ACL of resource `holder`, if it has a live one (cached); for a linked
    /// ACL, the linked source's authorizations ([`linked_acl`]).
    async fn acl_of(
        &self,
        repo: &Repository,
        holder: &FedoraId,
    ) -> Result<Option<Arc<Acl>>, Error> {
        match self.stored_acl(repo, holder).await? {
            StoredAcl::None => Ok(None),
            StoredAcl::Own(acl) => Ok(Some(acl)),
            StoredAcl::Linked(source) => {
                let triples = self
                    .document(repo, source.as_str())
                    .await?
                    .unwrap_or_default();
                Ok(Some(Arc::new(linked_acl(holder, &triples, &self.rules))))
            }
        }
    }

    /// The RDF source `resource`'s ACL links to, if its ACL is a link (the `rel="acl"` its
    /// responses name instead of `fcr:acl`).
    pub(crate) async fn linked_acl_source(
        &self,
        repo: &Repository,
        resource: &FedoraId,
    ) -> Result<Option<FedoraId>, Error> {
        Ok(match self.stored_acl(repo, &resource.base()).await? {
            StoredAcl::Linked(source) => Some(source),
            _ => None,
        })
    }

    /// What `holder`'s `fcr:acl` holds (cached).
    async fn stored_acl(&self, repo: &Repository, holder: &FedoraId) -> Result<StoredAcl, Error> {
        if let Some(hit) = self.shared.cache.lock().acls.get(holder) {
            return Ok(hit.clone());
        }
        let generation = self.shared.generation.load(Ordering::Acquire);
        let acl_id = holder.acl();
        let stored = match repo.lookup(&acl_id).await? {
            Some(record) if !record.is_deleted() => {
                let triples = repo.triples(&record)?;
                match webac::linked_acl_source(acl_id.as_str(), &triples) {
                    Some(source) => match FedoraId::from_internal(&source) {
                        Ok(source) => StoredAcl::Linked(source),
                        // Not a resource here: a link to nothing, which grants nothing.
                        Err(_) => StoredAcl::Own(Arc::new(linked_acl(holder, &[], &self.rules))),
                    },
                    // Stored ACLs are read leniently (Fedora accepts more than arca's writes
                    // do): a statement arca would refuse grants nothing rather than locking
                    // the resource.
                    None => StoredAcl::Own(Arc::new(Acl::parse_lenient(
                        acl_id.as_str(),
                        &triples,
                        &self.rules,
                    ))),
                }
            }
            _ => StoredAcl::None,
        };
        self.remember(generation, |c| {
            c.acls.insert(holder.clone(), stored.clone());
        });
        Ok(stored)
    }

    /// Checks that `caller` may choose the ACL of `id`, a resource about to be created
    /// with `Link: rel="acl"`: as for a PUT of its `fcr:acl`, acl:Control on it, here as the
    /// ACL it would inherit grants.
    pub(crate) async fn authorize_acl_link(
        &self,
        repo: &Repository,
        caller: &Caller,
        id: &FedoraId,
        url: impl Fn(&FedoraId) -> String,
    ) -> Result<(), ApiError> {
        if caller.admin {
            return Ok(());
        }
        let modes = self
            .modes(repo, caller, id)
            .await
            .map_err(|e| ApiError::from_kernel(e, &url(&FedoraId::root())))?;
        if Action::Control.allowed_by(modes) {
            return Ok(());
        }
        Err(self.refuse(
            caller,
            format!(
                "you may not choose the ACL of {} (rel=\"acl\"): that needs acl:Control on it",
                url(id)
            ),
        ))
    }

    /// Whether the agent is a member of `group` (an in-repository vcard group listing,
    /// a hash URI allowed), reading the listing through the cache.
    async fn group_has_member(
        &self,
        repo: &Repository,
        group: &str,
        agent: &Agent<'_>,
    ) -> Result<bool, Error> {
        // Not in the repository: a role group, which the agent's own group IRIs decide.
        match self.document(repo, group).await? {
            Some(triples) => Ok(webac::group_has_member(&triples, group, agent)),
            None => Ok(false),
        }
    }

    /// `types` with the classes they are subclasses of, for `acl:accessToClass` (an
    /// extension Fedora API §5.8 allows and Fedora 6 does without): a class that is an
    /// in-repository resource (a hash URI allowed) has the superclasses that resource's own
    /// triples state with `rdfs:subClassOf`, transitively; classes outside the repository
    /// have none. At most [`MAX_CLASSES`] classes are gathered (cycles end by themselves);
    /// the documents are read through the cache, so a change to one is seen at once.
    async fn with_superclasses(
        &self,
        repo: &Repository,
        mut types: Vec<String>,
    ) -> Result<Vec<String>, Error> {
        let mut next = 0;
        while next < types.len() && types.len() < MAX_CLASSES {
            let class = types[next].clone();
            next += 1;
            let Some(triples) = self.document(repo, &class).await? else {
                continue;
            };
            for t in triples.iter() {
                let about = matches!(&t.subject, oxrdf::NamedOrBlankNode::NamedNode(n) if n.as_str() == class);
                if !about || t.predicate.as_str() != webac::vocab::RDFS_SUB_CLASS_OF {
                    continue;
                }
                if let oxrdf::Term::NamedNode(super_class) = &t.object {
                    if !types.iter().any(|known| known == super_class.as_str()) {
                        types.push(super_class.as_str().to_string());
                    }
                }
            }
        }
        Ok(types)
    }

    /// The triples of the in-repository document that defines `iri` (the resource itself,
    /// or the document of a hash URI), through the cache; `None` when `iri` names nothing
    /// in the repository, empty when it names a resource that does not exist.
    async fn document(
        &self,
        repo: &Repository,
        iri: &str,
    ) -> Result<Option<Arc<Vec<Triple>>>, Error> {
        let document = iri.split_once('#').map_or(iri, |(doc, _)| doc);
        let Ok(doc_id) = FedoraId::from_internal(document) else {
            return Ok(None);
        };
        if let Some(hit) = self.shared.cache.lock().documents.get(&doc_id).cloned() {
            return Ok(Some(hit));
        }
        let generation = self.shared.generation.load(Ordering::Acquire);
        let triples = match repo.lookup(&doc_id).await? {
            Some(r) if !r.is_deleted() => Arc::new(repo.triples(&r)?),
            _ => Arc::new(Vec::new()),
        };
        self.remember(generation, |c| {
            c.documents.insert(doc_id.clone(), triples.clone());
        });
        Ok(Some(triples))
    }

    /// Stores into the cache unless an invalidation happened since `generation` was read.
    fn remember(&self, generation: u64, store: impl FnOnce(&mut Cache)) {
        let mut cache = self.shared.cache.lock();
        if self.shared.generation.load(Ordering::Acquire) != generation {
            return;
        }
        store(&mut cache);
    }
}

/// The ACL of `holder` when its `fcr:acl` links to an RDF source with `triples`: that
/// source's authorizations, read as if they were `holder`'s own ACL (an authorization with
/// no target is about `holder`), and always deciding for `holder`, even when they grant
/// nothing (a source that is gone, a binary or empty locks the resource to admins rather
/// than letting an ancestor's ACL decide).
fn linked_acl(holder: &FedoraId, triples: &[Triple], rules: &AclRules) -> Acl {
    let acl_id = holder.acl();
    let mut triples = triples.to_vec();
    triples.extend(webac::grants_nothing(acl_id.as_str(), holder.as_str()));
    Acl::parse_lenient(acl_id.as_str(), &triples, rules)
}

/// The membership resources whose triples `op` may change, as far as they are known
/// before its body is read: a POST to a direct or indirect container, a PUT or DELETE of
/// one of its members (Fedora 6 checks those), a DELETE of the container itself, and a
/// PATCH of an indirect container's member (its triples decide the membership). `written`
/// is the record of the resource `op` names, if it exists.
async fn membership_targets(
    repo: &Repository,
    op: &Operation,
    written: Option<&ResourceRecord>,
) -> Result<Vec<FedoraId>, Error> {
    let mut targets = Vec::new();
    let (member, indirect_only) = match op {
        Operation::Create(_) => {
            if let Some(parent) = written {
                targets.extend(repo.membership_resource_of(parent)?);
            }
            return Ok(targets);
        }
        Operation::Put(id) | Operation::Delete(id) if !id.is_acl() => (id.base(), false),
        Operation::Patch(id) if !id.is_acl() => (id.base(), true),
        _ => return Ok(targets),
    };
    if let (Operation::Delete(_), Some(record)) = (op, written) {
        targets.extend(repo.membership_resource_of(record)?);
    }
    let container = match written {
        Some(record) => record.parent.clone(),
        None => repo.existing_ancestor(&member).await?,
    };
    let Some(container) = container else {
        return Ok(targets);
    };
    if let Some(record) = repo.lookup(&container).await? {
        let indirect = record.headers.model() == Some(InteractionModel::IndirectContainer);
        if indirect || !indirect_only {
            targets.extend(repo.membership_resource_of(&record)?);
        }
    }
    Ok(targets)
}

/// The rdf:types of `id` for `acl:accessToClass`: the ones its triples state (a binary's
/// description's for a binary and its description) and the ones its interaction model gives
/// it (server-managed types count, as in Fedora 6).
async fn types_of(repo: &Repository, id: &FedoraId) -> Result<Vec<String>, Error> {
    let Some(record) = repo.lookup(id).await? else {
        return Ok(Vec::new());
    };
    let mut types = repo.stated_types(&record).await?;
    if let Some(model) = record.headers.model() {
        types.extend(model.rdf_types().iter().map(|t| t.to_string()));
        types.push(model.iri().to_string());
    }
    Ok(types)
}

/// What `op` needs of the caller, on which resource. Anything about an ACL (its TimeMap
/// and mementos too) needs Control of the resource it protects.
fn need(op: &Operation) -> Need {
    let on = |id: &FedoraId, check: Check| {
        if id.is_acl() {
            Need::On(id.base(), Check::Control)
        } else {
            Need::On(id.clone(), check)
        }
    };
    match op {
        Operation::Read { id, .. }
        | Operation::Options(id)
        | Operation::Fixity(id)
        | Operation::TimeMap { id, .. }
        | Operation::TimeMapOptions(id)
        | Operation::Memento { id, .. }
        | Operation::MementoFixity { id, .. }
        | Operation::MementoOptions { id, .. } => on(id, Check::Read),
        Operation::Create(parent) => on(parent, Check::Post),
        Operation::Put(id) => on(id, Check::Put),
        Operation::Patch(id) => on(id, Check::Patch),
        Operation::Delete(id) => on(id, Check::Delete),
        Operation::Purge(id) | Operation::CreateVersion(id) => on(id, Check::Write),
        Operation::Acl(id, _) => Need::On(id.clone(), Check::Control),
        Operation::BeginTx
        | Operation::TxStatus(_)
        | Operation::TxRefresh(_)
        | Operation::TxCommit(_)
        | Operation::TxRollback(_)
        | Operation::Events { .. } => Need::Authenticated,
        Operation::SearchStatus
        | Operation::SearchReindex
        | Operation::ImportFedora3
        | Operation::AuditStatus
        | Operation::AuditRun
        | Operation::AuditReports
        | Operation::AuditReport(_) => Need::Admin,
        Operation::Search { .. } | Operation::SearchOptions | Operation::GSearch => Need::Nothing,
        Operation::Fedora3(r) => match r.need() {
            crate::fedora3::Need::Nothing => Need::Nothing,
            crate::fedora3::Need::Read(id) => on(&id, Check::Read),
            crate::fedora3::Need::AuthenticatedRead(id) => Need::AuthenticatedOn(id, Check::Read),
        },
        Operation::Tombstone
        | Operation::EventsOptions
        | Operation::FixityOptions
        | Operation::NotSupported(_)
        | Operation::MethodNotAllowed(_) => Need::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_cache_evicts_entries_one_by_one_and_keeps_those_in_use() {
        let id = |i: usize| FedoraId::from_path(&format!("r{i}")).unwrap();
        let hot = FedoraId::from_path("hot").unwrap();
        let mut cache = Cache::new();
        cache.acls.insert(hot.clone(), StoredAcl::None);
        let total = CACHE_ENTRIES;
        for i in 0..total {
            cache.acls.insert(id(i), StoredAcl::None);
            if i % 100 == 0 {
                assert!(cache.acls.get(&hot).is_some(), "the ACL in use was evicted");
            }
            assert!(cache.acls.len() <= CACHE_ENTRIES / 2);
        }
        // Never cleared all at once: nearly full of recent entries.
        assert!(cache.acls.len() > CACHE_ENTRIES / 2 * 9 / 10);
        assert!(cache.acls.get(&id(total - 1)).is_some());
        assert!(cache.acls.get(&hot).is_some());
    }
}
