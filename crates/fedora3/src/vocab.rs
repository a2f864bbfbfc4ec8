//! The predicates an imported Fedora 3 object is described with in arca.
//!
//! An object becomes an Archival Group `info:fedora/{pid}` whose triples are its FOXML
//! object properties (each `NAME` a predicate, as Fedora's migration-utils writes them),
//! its RELS-EXT statements and its DC as Dublin Core 1.1 elements. Each datastream
//! becomes a binary `info:fedora/{pid}/{dsid}` whose description holds what
//! migration-utils writes (`dcterms:title` = LABEL, [`OBJ_STATE`], [`FORMAT_DESIGNATION`])
//! plus, where migration-utils loses it, the FOXML attribute itself under FOXML's own
//! namespace ([`FOXML`] + attribute name), and its RELS-INT statements.

/// FOXML's namespace; FOXML attribute names appended to it name the predicates that keep
/// what Fedora 6's model has no place for.
pub const FOXML: &str = "info:fedora/fedora-system:def/foxml#";
/// `CONTROL_GROUP` of the datastream (X, M, E, R).
pub const CONTROL_GROUP: &str = "info:fedora/fedora-system:def/foxml#CONTROL_GROUP";
/// `VERSIONABLE` of the datastream (`true`/`false`).
pub const VERSIONABLE: &str = "info:fedora/fedora-system:def/foxml#VERSIONABLE";
/// The datastream version's `ID` (e.g. `DC.1`).
pub const VERSION_ID: &str = "info:fedora/fedora-system:def/foxml#VERSION_ID";
/// The datastream version's `CREATED` (xsd:dateTime, milliseconds kept).
pub const CREATED: &str = "info:fedora/fedora-system:def/foxml#CREATED";
/// The datastream version's `MIMETYPE`, verbatim.
pub const MIMETYPE: &str = "info:fedora/fedora-system:def/foxml#MIMETYPE";
/// One of the datastream version's `ALT_IDS`.
pub const ALT_ID: &str = "info:fedora/fedora-system:def/foxml#ALT_ID";
/// The datastream version's `SIZE` (xsd:long) as Fedora 3 recorded it.
pub const SIZE: &str = "info:fedora/fedora-system:def/foxml#SIZE";
/// The `contentDigest` `TYPE` (e.g. `SHA-384`, `DISABLED`).
pub const DIGEST_TYPE: &str = "info:fedora/fedora-system:def/foxml#DIGEST_TYPE";
/// The `contentDigest` `DIGEST` (hex, or `none`).
pub const DIGEST: &str = "info:fedora/fedora-system:def/foxml#DIGEST";
/// The `contentLocation` `REF` (an `INTERNAL_ID` such as `demo:5+DS1+DS1.0`, or a URL).
pub const LOCATION: &str = "info:fedora/fedora-system:def/foxml#LOCATION";
/// The `contentLocation` `TYPE` (`INTERNAL_ID` or `URL`).
pub const LOCATION_TYPE: &str = "info:fedora/fedora-system:def/foxml#LOCATION_TYPE";

/// The datastream's position among the object's datastreams in its FOXML document
/// (xsd:int, from 0), the order Fedora 3 lists them in. Not a FOXML attribute: the one
/// predicate of this namespace that names a place rather than an attribute.
pub const POSITION: &str = "info:fedora/fedora-system:def/foxml#POSITION";

/// The datastream label (migration-utils).
pub const TITLE: &str = "http://purl.org/dc/terms/title";
/// The datastream state, A/I/D (migration-utils).
pub const OBJ_STATE: &str = "http://fedora.info/definitions/1/0/access/objState";
/// The datastream's `FORMAT_URI` (migration-utils).
pub const FORMAT_DESIGNATION: &str = "http://www.loc.gov/premis/rdf/v1#formatDesignation";
/// RELS-INT's download file name, which becomes the binary's file name (migration-utils).
pub const DOWNLOAD_FILENAME: &str = "info:fedora/fedora-system:def/model#downloadFilename";
/// Fedora 3's content-model relation.
pub const HAS_MODEL: &str = "info:fedora/fedora-system:def/model#hasModel";
/// Dublin Core 1.1 elements: DC's `<dc:title>` becomes `{DC_ELEMENTS}title`.
pub const DC_ELEMENTS: &str = "http://purl.org/dc/elements/1.1/";
/// The `xsd:dateTime` datatype.
pub const XSD_DATETIME: &str = "http://www.w3.org/2001/XMLSchema#dateTime";
/// The `xsd:long` datatype.
pub const XSD_LONG: &str = "http://www.w3.org/2001/XMLSchema#long";
/// The `xsd:int` datatype.
pub const XSD_INT: &str = "http://www.w3.org/2001/XMLSchema#int";
