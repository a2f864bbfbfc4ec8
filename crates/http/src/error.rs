//! The one place where kernel errors become HTTP responses.

use arca_repository::{Constraint, Error};
use axum::response::{IntoResponse, Response};
use http::{header, HeaderValue, StatusCode};

/// An error answer: a status, a plain-text message and optional extra Link headers.
#[derive(Debug)]
pub struct ApiError {
    /// Status code.
    pub status: StatusCode,
    /// Message sent as the body.
    pub message: String,
    /// `Link` header values to add (constrainedBy, hasTombstone).
    pub links: Vec<String>,
    /// `Allow` header for 405 answers.
    pub allow: Option<&'static str>,
    /// `WWW-Authenticate` challenge for 401 answers.
    pub challenge: Option<String>,
}

impl ApiError {
    /// An error with a status and message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            links: Vec::new(),
            allow: None,
            challenge: None,
        }
    }

    /// 400.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 401: no or wrong credentials; `challenge` names the schemes the server takes.
    pub fn unauthorized(challenge: String) -> Self {
        let mut e = Self::new(
            StatusCode::UNAUTHORIZED,
            "authentication is required, or the credentials sent were not accepted",
        );
        e.challenge = Some(challenge);
        e
    }

    /// 403: the user is known but the resource's ACL does not grant what the request needs.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
    }

    /// 405 with the methods that are allowed.
    pub fn method_not_allowed(allow: &'static str) -> Self {
        let mut e = Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("method not allowed here; allowed: {allow}"),
        );
        e.allow = Some(allow);
        e
    }

    /// 409 with a constrainedBy link to the constraint's document.
    pub fn constraint(constraint: Constraint, message: impl Into<String>, base_url: &str) -> Self {
        let mut e = Self::new(StatusCode::CONFLICT, message);
        e.links.push(constrained_by(constraint, base_url));
        e
    }

    /// 400 with a constrainedBy link: a request Fedora 6 refuses as malformed although
    /// a constraint document explains it.
    pub fn refused(constraint: Constraint, message: impl Into<String>, base_url: &str) -> Self {
        let mut e = Self::constraint(constraint, message, base_url);
        e.status = StatusCode::BAD_REQUEST;
        e
    }

    /// Maps a kernel error. `base_url` is the external URL of the REST root (no trailing
    /// slash), used for constraint and tombstone links.
    pub fn from_kernel(err: Error, base_url: &str) -> Self {
        let mapper = arca_rdf::IdMapper::new(base_url);
        match err {
            Error::NotFound(id) => Self::new(StatusCode::NOT_FOUND, format!("{} not found", external(&id, base_url))),
            Error::NoMemento(id, datetime) => Self::new(
                StatusCode::NOT_FOUND,
                format!(
                    "there is no version of {} with a created date matching {}",
                    external(&id, base_url),
                    time::OffsetDateTime::from_unix_timestamp(datetime)
                        .map(arca_model::format_instant)
                        .unwrap_or_else(|_| datetime.to_string())
                ),
            ),
            Error::TransactionNotFound(m) => Self::new(StatusCode::NOT_FOUND, format!("no transaction found with id {m}")),
            Error::TransactionEnded(m) => Self::new(StatusCode::GONE, m),
            Error::TransactionConflict(m) => Self::new(StatusCode::CONFLICT, m),
            Error::Gone(id) => {
                let url = external(&id, base_url);
                let mut e = Self::new(StatusCode::GONE, format!("{url} has been deleted"));
                // A deleted description's tombstone is its binary's.
                let tombstone = external(&id.base(), base_url);
                e.links.push(format!("<{tombstone}/fcr:tombstone>; rel=\"hasTombstone\""));
                e
            }
            // Fedora 6 answers refused external content with 400.
            Error::Constraint { constraint: constraint @ Constraint::ExternalContent, message } => {
                Self::refused(constraint, message, base_url)
            }
            Error::Constraint { constraint, message } => Self::constraint(constraint, message, base_url),
            Error::ServerManaged(triples) => Self::constraint(
                Constraint::ServerManagedTriples,
                arca_rdf::describe_statements(&triples, &mapper),
                base_url,
            ),
            Error::ModelChange { id, current, asked } => Self::constraint(
                Constraint::InteractionModel,
                format!(
                    "the interaction model of {} is <{current}> and cannot be changed to <{asked}>",
                    external(&id, base_url)
                ),
                base_url,
            ),
            Error::AlreadyExists(id) => Self::new(StatusCode::CONFLICT, format!("{} already exists", external(&id, base_url))),
            Error::NotPermitted(m) => Self::forbidden(m),
            Error::PreconditionFailed(m) => Self::new(StatusCode::PRECONDITION_FAILED, m),
            Error::BadRequest(m) => Self::bad_request(m),
            Error::InvalidId(e) => {
                let reserved = matches!(e, arca_model::IdError::Reserved { .. });
                if reserved {
                    Self::constraint(Constraint::InvalidPath, e.to_string(), base_url)
                } else {
                    Self::bad_request(e.to_string())
                }
            }
            Error::Rdf(arca_rdf::RdfError::ServerManaged(m)) => {
                Self::constraint(Constraint::ServerManagedTriples, m, base_url)
            }
            Error::Rdf(arca_rdf::RdfError::Unsupported(m)) => {
                Self::constraint(Constraint::Unsupported, m, base_url)
            }
            Error::Rdf(e @ arca_rdf::RdfError::Serialize(_)) => {
                Self::new(StatusCode::NOT_ACCEPTABLE, e.to_string())
            }
            Error::Rdf(arca_rdf::RdfError::NotInsertOnly(m)) => Self::forbidden(m),
            Error::Rdf(arca_rdf::RdfError::Busy(m)) => Self::new(StatusCode::SERVICE_UNAVAILABLE, m),
            Error::Rdf(arca_rdf::RdfError::Limit(m)) => {
                Self::bad_request(format!("the body exceeds a limit of this server: {m}"))
            }
            Error::Rdf(e) => Self::bad_request(format!("malformed RDF or SPARQL: {e}")),
            Error::OtherResourceSubject(s) => Self::new(
                StatusCode::FORBIDDEN,
                format!(
                    "the body has statements about <{}>, another resource; a resource's triples can only be changed through that resource",
                    mapper.to_external(&s)
                ),
            ),
            Error::OutsideSubject(s) => Self::bad_request(format!(
                "the body has statements about <{s}>, which is outside this repository; statements must be about the resource itself, its hash URIs (<#name>) or blank nodes"
            )),
            Error::UnsupportedDigest(alg) => Self::bad_request(format!(
                "unsupported digest algorithm {alg:?}; supported: sha-512, sha-256, sha (sha-1), md5, sha-512/256"
            )),
            e @ Error::DigestMismatch { .. } => {
                Self::constraint(Constraint::DigestMismatch, e.to_string(), base_url)
            }
            Error::Body(m) => Self::bad_request(format!("reading the request body failed: {m}")),
            Error::StorageFull(m) => Self::new(
                StatusCode::INSUFFICIENT_STORAGE,
                format!("the repository's storage is full; nothing was stored: {m}"),
            ),
            Error::Unavailable(m) => Self::new(StatusCode::SERVICE_UNAVAILABLE, m),
            // 500, not 503 (nothing temporary: a retry gets the same answer until a repair,
            // and a load balancer must not take the node out for one damaged file) nor 410
            // or 404 (the resource exists; its description and `fcr:fixity` still answer):
            // the server holds the resource and cannot give its bytes, and says why.
            Error::Damaged { id, file } => Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!(
                    "{}: {}; its content is not served until it is repaired (fcr:fixity checks it again)",
                    external(&id, base_url),
                    file.describe()
                ),
            ),
            Error::Catalog(e) if e.is_unavailable() => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the catalog is unavailable for the moment; nothing was changed, try again: {e}"),
            ),
            e if e.is_unavailable() => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the storage is unavailable for the moment; try again: {e}"),
            ),
            e if e.is_write_conflict() => Self::new(
                StatusCode::CONFLICT,
                "another change of the same object was stored first; nothing of this one was stored, send it again",
            ),
            e if e.is_storage_full() => Self::new(
                StatusCode::INSUFFICIENT_STORAGE,
                format!("the repository's storage is full; nothing was stored: {e}"),
            ),
            // Temporary from the client's view: the operator (or fsck and a remount) makes
            // the file system writable again, and the write can be sent again.
            e if e.is_read_only_storage() => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the repository's storage is read-only at the moment; nothing was stored, try again later: {e}"),
            ),
            e => {
                tracing::error!(error = %e, "internal error");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, format!("internal error: {e}"))
            }
        }
    }

    /// Maps an error of the Fedora 3 facade's views, with Fedora 3's own messages (404s as
    /// plain text). `api_m`: the datastream profile's wording rather than the content's.
    pub(crate) fn from_fedora3(
        err: arca_fedora3::view::ViewError,
        api_m: bool,
        base_url: &str,
    ) -> Self {
        use arca_fedora3::view::ViewError;
        match err {
            e @ ViewError::NoObject(_) => Self::new(StatusCode::NOT_FOUND, e.to_string()),
            ViewError::NoDatastream { pid, dsid, as_of } => {
                let date = as_of.as_deref().unwrap_or("null");
                Self::new(
                    StatusCode::NOT_FOUND,
                    if api_m {
                        format!("No datastream could be found. Either there is no datastream for the digital object \"{pid}\" with datastream ID of \"{dsid}\"  OR  there are no datastreams that match the specified date/time value of \"{date}\".")
                    } else {
                        format!("[DefaulAccess] No datastream could be returned. Either there is no datastream for the digital object \"{pid}\" with datastream ID of \"{dsid} \"  OR  there are no datastreams that match the specified date/time value of \"{date} \"  .")
                    },
                )
            }
            ViewError::Repository(e) => Self::from_kernel(e, base_url),
            e @ ViewError::Stored(..) => {
                tracing::error!(error = %e, "an imported Fedora 3 object cannot be read");
                Self::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("internal error: {e}"),
                )
            }
        }
    }
}

fn external(id: &arca_model::FedoraId, base_url: &str) -> String {
    if id.is_root() {
        base_url.to_string()
    } else {
        format!("{base_url}/{}", id.encoded_path())
    }
}

/// The constrainedBy link for a constraint.
pub fn constrained_by(constraint: Constraint, base_url: &str) -> String {
    let server = base_url
        .find("://")
        .and_then(|i| base_url[i + 3..].find('/').map(|j| &base_url[..i + 3 + j]))
        .unwrap_or(base_url);
    format!(
        "<{server}/static/constraints/{}.txt>; rel=\"http://www.w3.org/ns/ldp#constrainedBy\"",
        constraint.name()
    )
}

/// What a 503 answer tells clients to wait before trying again (seconds): every 503 is a
/// passing condition (a restarting catalog or store, a busy parser), none a refusal.
const RETRY_AFTER_S: &str = "5";

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, self.message).into_response();
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        for l in self.links {
            if let Ok(v) = HeaderValue::from_str(&l) {
                h.append(header::LINK, v);
            }
        }
        if let Some(allow) = self.allow {
            h.insert(header::ALLOW, HeaderValue::from_static(allow));
        }
        if let Some(challenge) = self.challenge.and_then(|c| HeaderValue::from_str(&c).ok()) {
            h.insert(header::WWW_AUTHENTICATE, challenge);
        }
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            h.insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_S));
        }
        resp
    }
}

/// Text of the constraint documents served under `/static/constraints/`.
pub fn constraint_document(name: &str) -> Option<&'static str> {
    Some(match name {
        "server-managed-triples" => "arca manages these statements itself and refuses requests that set them: any predicate in the namespace http://fedora.info/definitions/v4/repository# (created, createdBy, lastModified, lastModifiedBy, hasParent, ...), ldp:contains, and rdf:type statements whose object is in the ldp:, fedora: or memento: namespaces. Send `Prefer: handling=lenient; received=\"minimal\"` to have them ignored instead.\n",
        "interaction-model" => "A resource's interaction model is chosen when it is created (Link: <type>; rel=\"type\") and never changes afterwards. A body must fit the model: RDF for RDF sources, bytes for binaries (ldp:NonRDFSource).\n",
        "invalid-path" => "Paths may not contain empty segments, '.' or '..', nor the names Fedora reserves for its own use (.fcrepo, fcr-root, fcr-container.nt, fcr:tombstone, fcr:versions, names ending in ~fcr-desc or ~fcr-acl, and any other fcr: segment than a final fcr:metadata or fcr:acl). Resources can only be created inside containers, and the repository root cannot be deleted.\n",
        "digest-mismatch" => "A binary sent with a Digest header is stored only if the digest computed over the received bytes equals the one sent. Values may be hex (as Fedora clients send them) or base64 (RFC 3230). Supported algorithms: sha-512, sha-256, sha (sha-1), md5, sha-512/256.\n",
        "membership" => "A direct or indirect container (LDP 5.4, 5.5) has exactly one ldp:membershipResource (an IRI; default: the container itself), exactly one ldp:hasMemberRelation or ldp:isMemberOfRelation (an IRI that is not server managed: not ldp:contains nor in the fedora: namespace; default: ldp:hasMemberRelation ldp:member), and an indirect container exactly one ldp:insertedContentRelation (default: ldp:MemberSubject). Membership triples are generated by the server from the container's members and are never stored in a resource's RDF.\n",
        "external-content" => "External content (Link: <URL>; rel=\"http://fedora.info/definitions/fcrepo#ExternalContent\"; handling=\"copy|redirect|proxy\"; type=\"media/type\") is accepted only when the server has an allow-list (setting external_content_allowed: a file of URL prefixes, one per line) and the URL is under one of its prefixes. file:, http: and https: URLs are supported (https: trusts the system's root certificates and those of the setting external_content_ca_file; redirects are not followed); file: URLs may not contain '..' and must resolve, symbolic links followed, to a regular file under an allowed prefix. At most one ExternalContent link per request; handling must be copy, redirect or proxy. The location must answer 2xx when the binary is written.\n",
        "archival-group" => "An Archival Group (created with Link: <http://fedora.info/definitions/v4/repository#ArchivalGroup>; rel=\"type\") is a container kept with all its descendants in one OCFL object and versioned as a whole: Archival Groups cannot be nested, their parts cannot be versioned on their own (POST fcr:versions on the group instead), and no resource moves across a group's boundary.\n",
        "acl" => "An access control list (PUT or PATCH <resource>/fcr:acl, Turtle or another RDF syntax) is a WebAC ACL: every acl:Authorization names at least one acl:mode out of acl:Read, acl:Write, acl:Append and acl:Control, at least one target (acl:accessTo, acl:accessToClass or acl:default), and only resources of this repository as targets and as acl:agentGroup listings (or groups under the configured group base URI). Remote ACLs and group listings are refused. A POST or PUT that creates a resource may name its ACL with Link: <source>; rel=\"acl\" (Fedora API 5.4): one existing, live RDF source of this repository (not a binary), named by a caller with acl:Control on the new resource; any other target is refused and nothing is created.\n",
        "memento" => "Mementos record a resource's state at the time they are made: POST <resource>/fcr:versions (any body is ignored) or any change of the resource, with versioning on every write. A client cannot date a memento itself: a POST with a Memento-Datetime header (Fedora 5's way of importing a version) is refused with 400, as Fedora 6 refuses it, and mementos are read-only.\n",
        "unsupported" => "This request needs a feature arca does not offer yet: purges inside a transaction, and SPARQL Update operations on named graphs, LOAD, CLEAR, CREATE, DROP, COPY, MOVE, ADD or SERVICE.\n",
        _ => return None,
    })
}
