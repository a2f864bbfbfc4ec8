//! The IRIs WebAC decisions look at.

/// The WebAC namespace.
pub const ACL_NS: &str = "http://www.w3.org/ns/auth/acl#";
/// `acl:Authorization`, the type that makes a subject count (requirement 5.2).
pub const AUTHORIZATION: &str = "http://www.w3.org/ns/auth/acl#Authorization";
/// `acl:mode`.
pub const MODE: &str = "http://www.w3.org/ns/auth/acl#mode";
/// `acl:agent`.
pub const AGENT: &str = "http://www.w3.org/ns/auth/acl#agent";
/// `acl:agentClass`.
pub const AGENT_CLASS: &str = "http://www.w3.org/ns/auth/acl#agentClass";
/// `acl:agentGroup`.
pub const AGENT_GROUP: &str = "http://www.w3.org/ns/auth/acl#agentGroup";
/// `acl:accessTo`.
pub const ACCESS_TO: &str = "http://www.w3.org/ns/auth/acl#accessTo";
/// `acl:accessToClass` (a Fedora extension, requirement 5.8).
pub const ACCESS_TO_CLASS: &str = "http://www.w3.org/ns/auth/acl#accessToClass";
/// `acl:default`.
pub const DEFAULT: &str = "http://www.w3.org/ns/auth/acl#default";
/// `acl:AuthenticatedAgent`: any authenticated agent.
pub const AUTHENTICATED_AGENT: &str = "http://www.w3.org/ns/auth/acl#AuthenticatedAgent";
/// `acl:Read`.
pub const READ: &str = "http://www.w3.org/ns/auth/acl#Read";
/// `acl:Write`.
pub const WRITE: &str = "http://www.w3.org/ns/auth/acl#Write";
/// `acl:Append`.
pub const APPEND: &str = "http://www.w3.org/ns/auth/acl#Append";
/// `acl:Control`.
pub const CONTROL: &str = "http://www.w3.org/ns/auth/acl#Control";
/// `foaf:Agent`: everyone, anonymous clients included.
pub const FOAF_AGENT: &str = "http://xmlns.com/foaf/0.1/Agent";
/// `vcard:Group`: the type a group listing must carry.
pub const VCARD_GROUP: &str = "http://www.w3.org/2006/vcard/ns#Group";
/// `vcard:hasMember`: one member of a group listing.
pub const VCARD_HAS_MEMBER: &str = "http://www.w3.org/2006/vcard/ns#hasMember";
/// `rdf:type`.
pub const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
/// `owl:sameAs`: in a resource's ACL, names the RDF source that is its ACL
/// ([`acl_link`](super::acl_link)).
pub const OWL_SAME_AS: &str = "http://www.w3.org/2002/07/owl#sameAs";
/// `rdfs:subClassOf`: a class named by `acl:accessToClass` also covers its subclasses.
pub const RDFS_SUB_CLASS_OF: &str = "http://www.w3.org/2000/01/rdf-schema#subClassOf";
/// `rdfs:label`.
pub const RDFS_LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";
/// `rdfs:comment`.
pub const RDFS_COMMENT: &str = "http://www.w3.org/2000/01/rdf-schema#comment";
/// `webac:Acl`, the type Fedora gives an ACL resource.
pub const WEBAC_ACL: &str = "http://fedora.info/definitions/v4/webac#Acl";
