//! A Fedora 3 object as FOXML 1.1 describes it.

use std::path::PathBuf;

/// One Fedora 3 digital object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct F3Object {
    /// The PID, e.g. `demo:5`, verbatim (a percent escape such as `%C3%A9` stays as it is).
    pub pid: String,
    /// `objectProperties` (`property` and `extproperty`), `NAME` → `VALUE`, in document
    /// order, e.g. `info:fedora/fedora-system:def/model#state` → `Active`.
    pub properties: Vec<(String, String)>,
    /// The datastreams, in document order.
    pub datastreams: Vec<Datastream>,
    /// Disseminators (FOXML 1.0 only) or other parts arca does not carry, named for the
    /// report.
    pub not_carried: Vec<String>,
}

/// A property name of [`F3Object::properties`].
pub const PROP_STATE: &str = "info:fedora/fedora-system:def/model#state";
/// A property name of [`F3Object::properties`].
pub const PROP_LABEL: &str = "info:fedora/fedora-system:def/model#label";
/// A property name of [`F3Object::properties`].
pub const PROP_OWNER: &str = "info:fedora/fedora-system:def/model#ownerId";
/// A property name of [`F3Object::properties`].
pub const PROP_CREATED: &str = "info:fedora/fedora-system:def/model#createdDate";
/// A property name of [`F3Object::properties`].
pub const PROP_MODIFIED: &str = "info:fedora/fedora-system:def/view#lastModifiedDate";

impl F3Object {
    /// The value of property `name`, if present.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The object state (`Active` when the property is missing, as Fedora 3 assumes).
    pub fn state(&self) -> ObjectState {
        match self.property(PROP_STATE) {
            Some("Inactive" | "I") => ObjectState::Inactive,
            Some("Deleted" | "D") => ObjectState::Deleted,
            _ => ObjectState::Active,
        }
    }

    /// A datastream by id.
    pub fn datastream(&self, id: &str) -> Option<&Datastream> {
        self.datastreams.iter().find(|d| d.id == id)
    }
}

/// A Fedora 3 object state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectState {
    /// `Active` (A).
    Active,
    /// `Inactive` (I).
    Inactive,
    /// `Deleted` (D).
    Deleted,
}

/// A Fedora 3 datastream state (`STATE`: A, I or D).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatastreamState {
    /// A.
    Active,
    /// I.
    Inactive,
    /// D.
    Deleted,
}

impl DatastreamState {
    /// The one-letter form FOXML uses.
    pub fn letter(self) -> &'static str {
        match self {
            Self::Active => "A",
            Self::Inactive => "I",
            Self::Deleted => "D",
        }
    }
}

/// A datastream's control group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlGroup {
    /// X: inline XML inside the FOXML.
    InlineXml,
    /// M: managed content, stored by Fedora.
    Managed,
    /// E: external content Fedora proxies.
    External,
    /// R: external content Fedora redirects to.
    Redirect,
}

impl ControlGroup {
    /// The one-letter form FOXML uses.
    pub fn letter(self) -> &'static str {
        match self {
            Self::InlineXml => "X",
            Self::Managed => "M",
            Self::External => "E",
            Self::Redirect => "R",
        }
    }
}

/// One datastream with all its versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datastream {
    /// `ID`, e.g. `DC`.
    pub id: String,
    /// `STATE`.
    pub state: DatastreamState,
    /// `CONTROL_GROUP`.
    pub control_group: ControlGroup,
    /// `VERSIONABLE` (true when absent).
    pub versionable: bool,
    /// The versions in document order (not necessarily by date).
    pub versions: Vec<DatastreamVersion>,
}

/// One version of a datastream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatastreamVersion {
    /// `ID`, e.g. `DC.1`.
    pub id: String,
    /// `LABEL` ("" when absent).
    pub label: String,
    /// `CREATED`, verbatim (e.g. `2026-11-23T09:13:34.961Z`); `None` when absent (ingest
    /// form: the ingesting server would have set it).
    pub created: Option<String>,
    /// `MIMETYPE` ("" when absent).
    pub mime_type: String,
    /// `FORMAT_URI`.
    pub format_uri: Option<String>,
    /// `ALT_IDS`, split on whitespace.
    pub alt_ids: Vec<String>,
    /// `SIZE`, when present.
    pub size: Option<i64>,
    /// `contentDigest`, when present.
    pub digest: Option<ContentDigest>,
    /// Where the content is.
    pub content: Content,
}

/// A `contentDigest` element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentDigest {
    /// `TYPE` verbatim: `MD5`, `SHA-1`, `SHA-256`, `SHA-384`, `SHA-512`, `DISABLED`.
    pub kind: String,
    /// `DIGEST` verbatim (hex; `none` when disabled).
    pub value: String,
}

/// The content of a datastream version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// `xmlContent`: the inline XML serialized as a standalone document fragment (UTF-8),
    /// with the namespace declarations it uses from its ancestors added to its root
    /// element.
    Xml(Vec<u8>),
    /// `binaryContent`: base64-decoded bytes.
    Inline(Vec<u8>),
    /// `contentLocation` with `TYPE="INTERNAL_ID"`: managed content in a datastream store,
    /// e.g. `demo:5+DS1+DS1.0`; resolve it with [`crate::source::Resolver`].
    Internal(String),
    /// `contentLocation` with `TYPE="URL"`: the URL verbatim (E and R always; M in ingest
    /// form, where Fedora would have fetched it).
    Url(String),
    /// No content element.
    None,
}

/// Where an object was read from, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The FOXML file.
    pub foxml: PathBuf,
}
