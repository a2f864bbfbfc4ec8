//! IRIs of the vocabularies the server reads and writes.

/// The LDP namespace.
pub const LDP_NS: &str = "http://www.w3.org/ns/ldp#";
/// The Fedora repository namespace; every predicate in it is server managed.
pub const FEDORA_NS: &str = "http://fedora.info/definitions/v4/repository#";
/// The Memento namespace.
pub const MEMENTO_NS: &str = "http://mementoweb.org/ns#";
/// The RDF namespace.
pub const RDF_NS: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";
/// The RDF Schema namespace.
pub const RDFS_NS: &str = "http://www.w3.org/2000/01/rdf-schema#";
/// The XML Schema datatypes namespace.
pub const XSD_NS: &str = "http://www.w3.org/2001/XMLSchema#";
/// The DCMI terms namespace.
pub const DCTERMS_NS: &str = "http://purl.org/dc/terms/";
/// The Dublin Core 1.1 elements namespace.
pub const DC_NS: &str = "http://purl.org/dc/elements/1.1/";
/// The Web Access Control namespace.
pub const ACL_NS: &str = "http://www.w3.org/ns/auth/acl#";
/// The EBUCore namespace.
pub const EBUCORE_NS: &str = "http://www.ebu.ch/metadata/ontologies/ebucore/ebucore#";
/// The FOAF namespace.
pub const FOAF_NS: &str = "http://xmlns.com/foaf/0.1/";
/// The PREMIS namespace.
pub const PREMIS_NS: &str = "http://www.loc.gov/premis/rdf/v1#";
/// The PREMIS 3 namespace (Fedora 7 states PREMIS 3 beside PREMIS 1).
pub const PREMIS3_NS: &str = "http://www.loc.gov/premis/rdf/v3/";
/// The PROV-O namespace.
pub const PROV_NS: &str = "http://www.w3.org/ns/prov#";
/// The Library of Congress vocabulary of cryptographic hash functions.
pub const HASHFUNC_NS: &str =
    "http://id.loc.gov/vocabulary/preservation/cryptographicHashFunctions/";
/// The Library of Congress vocabulary of PREMIS event types.
pub const EVENT_TYPE_NS: &str = "http://id.loc.gov/vocabulary/preservation/eventType/";
/// The Library of Congress vocabulary of PREMIS event outcomes.
pub const EVENT_OUTCOME_NS: &str = "http://id.loc.gov/vocabulary/preservation/eventOutcome/";

/// `rdf:type`.
pub const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
/// `xsd:dateTime`.
pub const XSD_DATETIME: &str = "http://www.w3.org/2001/XMLSchema#dateTime";

/// `ldp:contains`: server-managed containment.
pub const LDP_CONTAINS: &str = "http://www.w3.org/ns/ldp#contains";
/// Prefer category: containment triples.
pub const LDP_PREFER_CONTAINMENT: &str = "http://www.w3.org/ns/ldp#PreferContainment";
/// Prefer category: membership triples.
pub const LDP_PREFER_MEMBERSHIP: &str = "http://www.w3.org/ns/ldp#PreferMembership";
/// Prefer category: the container without containment and membership triples.
pub const LDP_PREFER_MINIMAL_CONTAINER: &str = "http://www.w3.org/ns/ldp#PreferMinimalContainer";
/// The older name of [`LDP_PREFER_MINIMAL_CONTAINER`].
pub const LDP_PREFER_EMPTY_CONTAINER: &str = "http://www.w3.org/ns/ldp#PreferEmptyContainer";

/// Prefer category: server-managed triples.
pub const FEDORA_SERVER_MANAGED: &str = "http://fedora.info/definitions/fcrepo#ServerManaged";
/// Prefer category: triples of other resources that point at this one.
pub const FEDORA_PREFER_INBOUND_REFERENCES: &str =
    "http://fedora.info/definitions/fcrepo#PreferInboundReferences";

/// `fedora:created`.
pub const FEDORA_CREATED: &str = "http://fedora.info/definitions/v4/repository#created";
/// `fedora:createdBy`.
pub const FEDORA_CREATED_BY: &str = "http://fedora.info/definitions/v4/repository#createdBy";
/// `fedora:lastModified`.
pub const FEDORA_LAST_MODIFIED: &str = "http://fedora.info/definitions/v4/repository#lastModified";
/// `fedora:lastModifiedBy`.
pub const FEDORA_LAST_MODIFIED_BY: &str =
    "http://fedora.info/definitions/v4/repository#lastModifiedBy";
/// `fedora:hasTransactionProvider`: the repository root names its transaction endpoint.
pub const FEDORA_HAS_TRANSACTION_PROVIDER: &str =
    "http://fedora.info/definitions/v4/repository#hasTransactionProvider";
/// `fedora:hasParent`.
pub const FEDORA_HAS_PARENT: &str = "http://fedora.info/definitions/v4/repository#hasParent";

/// `ebucore:filename`.
pub const EBUCORE_FILENAME: &str = "http://www.ebu.ch/metadata/ontologies/ebucore/ebucore#filename";
/// `ebucore:hasMimeType`.
pub const EBUCORE_HAS_MIME_TYPE: &str =
    "http://www.ebu.ch/metadata/ontologies/ebucore/ebucore#hasMimeType";
/// `premis:hasSize`.
pub const PREMIS_HAS_SIZE: &str = "http://www.loc.gov/premis/rdf/v1#hasSize";
/// `premis:hasMessageDigest`.
pub const PREMIS_HAS_MESSAGE_DIGEST: &str = "http://www.loc.gov/premis/rdf/v1#hasMessageDigest";
/// `oa:PreferContainedDescriptions`: embed the descriptions of a container's children.
pub const OA_PREFER_CONTAINED_DESCRIPTIONS: &str =
    "http://www.w3.org/ns/oa#PreferContainedDescriptions";
/// `premis:hasFixity`: a binary's fixity result.
pub const PREMIS_HAS_FIXITY: &str = "http://www.loc.gov/premis/rdf/v1#hasFixity";
/// `premis:hasEventOutcome`: `SUCCESS` or `BAD_CHECKSUM`.
pub const PREMIS_HAS_EVENT_OUTCOME: &str = "http://www.loc.gov/premis/rdf/v1#hasEventOutcome";
/// `premis:Fixity`.
pub const PREMIS_FIXITY: &str = "http://www.loc.gov/premis/rdf/v1#Fixity";
/// `premis:EventOutcomeDetail`.
pub const PREMIS_EVENT_OUTCOME_DETAIL: &str = "http://www.loc.gov/premis/rdf/v1#EventOutcomeDetail";
/// `xsd:long`.
pub const XSD_LONG: &str = "http://www.w3.org/2001/XMLSchema#long";
/// `xsd:nonNegativeInteger`.
pub const XSD_NON_NEGATIVE_INTEGER: &str = "http://www.w3.org/2001/XMLSchema#nonNegativeInteger";
/// `rdf:value`.
pub const RDF_VALUE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#value";
/// `premis3:File`: a binary, as Fedora 7 types it in its description.
pub const PREMIS3_FILE: &str = "http://www.loc.gov/premis/rdf/v3/File";
/// `premis3:size`: a binary's size in bytes (`xsd:nonNegativeInteger`).
pub const PREMIS3_SIZE: &str = "http://www.loc.gov/premis/rdf/v3/size";
/// `premis3:fixity`: a file's PREMIS 3 fixity node.
pub const PREMIS3_FIXITY: &str = "http://www.loc.gov/premis/rdf/v3/fixity";
/// `premis3:Fixity`: the class of a PREMIS 3 fixity node.
pub const PREMIS3_FIXITY_CLASS: &str = "http://www.loc.gov/premis/rdf/v3/Fixity";
/// `premis3:Event`.
pub const PREMIS3_EVENT: &str = "http://www.loc.gov/premis/rdf/v3/Event";
/// `premis3:outcome`: an event's outcome (an `eventOutcome` IRI).
pub const PREMIS3_OUTCOME: &str = "http://www.loc.gov/premis/rdf/v3/outcome";
/// `prov:generated`: the event generated the fixity node.
pub const PROV_GENERATED: &str = "http://www.w3.org/ns/prov#generated";
/// `prov:wasGeneratedBy`: the fixity node was generated by the event.
pub const PROV_WAS_GENERATED_BY: &str = "http://www.w3.org/ns/prov#wasGeneratedBy";
/// `evType:fix`: the event type of a fixity check.
pub const EVENT_TYPE_FIXITY_CHECK: &str = "http://id.loc.gov/vocabulary/preservation/eventType/fix";
/// `evOutcome:suc`: an event succeeded.
pub const EVENT_OUTCOME_SUCCESS: &str =
    "http://id.loc.gov/vocabulary/preservation/eventOutcome/suc";
/// `evOutcome:fai`: an event failed.
pub const EVENT_OUTCOME_FAILURE: &str =
    "http://id.loc.gov/vocabulary/preservation/eventOutcome/fai";
/// `fedora:hasFixityService`: on a binary's description, its `fcr:fixity` endpoint.
pub const FEDORA_HAS_FIXITY_SERVICE: &str =
    "http://fedora.info/definitions/v4/repository#hasFixityService";
/// The `describedby` link relation.
pub const IANA_DESCRIBEDBY: &str = "http://www.iana.org/assignments/relation/describedby";

/// The prefixes used in Turtle (and RDF/XML) output.
pub const PREFIXES: &[(&str, &str)] = &[
    ("rdf", RDF_NS),
    ("rdfs", RDFS_NS),
    ("xsd", XSD_NS),
    ("ldp", LDP_NS),
    ("fedora", FEDORA_NS),
    ("dcterms", DCTERMS_NS),
    ("dc", DC_NS),
    ("memento", MEMENTO_NS),
    ("acl", ACL_NS),
    ("ebucore", EBUCORE_NS),
    ("foaf", FOAF_NS),
    ("premis", PREMIS_NS),
    ("premis3", PREMIS3_NS),
];
