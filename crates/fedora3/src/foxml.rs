//! The FOXML 1.1 reader.
//!
//! [`parse`] reads one FOXML document into an [`F3Object`], whichever context it was
//! written in:
//! - **stored** (akubra-fs and legacy-fs object stores): managed content referred to by
//!   `contentLocation TYPE="INTERNAL_ID"` → [`Content::Internal`];
//! - **archive export**: managed content inline as base64 `binaryContent` →
//!   [`Content::Inline`], decoded;
//! - **migrate export** and **ingest** form: content by `contentLocation TYPE="URL"` →
//!   [`Content::Url`] (ingest form may lack `CREATED` dates).
//!
//! Inline XML (`xmlContent`) is kept byte for byte as it is in the document (see
//! [`Content::Xml`] and the module's tests for the exact rule about namespaces).
//!
//! FOXML elements are recognised by their local name in the FOXML namespace
//! ([`FOXML_NS`]) or in no namespace; the prefix does not matter. Nothing here panics on
//! hostile input: every problem is a [`FoxmlError`].

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use crate::model::{
    ContentDigest, ControlGroup, Datastream, DatastreamState, DatastreamVersion, F3Object,
};
use crate::Content;

/// The FOXML namespace.
pub const FOXML_NS: &str = "info:fedora/fedora-system:def/foxml#";

/// The longest PID Fedora 3 accepts.
pub const MAX_PID_LEN: usize = 64;

/// Why a FOXML document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FoxmlError {
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// The document is not UTF-8 (or ISO-8859-1, as declared), or declares an encoding
    /// this reader does not support.
    #[error("encoding: {0}")]
    Encoding(String),
    /// The document is not well-formed XML.
    #[error("malformed XML at byte {offset}: {source}")]
    Xml {
        /// Where the problem was noticed.
        offset: u64,
        /// What quick-xml found.
        #[source]
        source: quick_xml::Error,
    },
    /// The document ends before its root element does.
    #[error("truncated document: it ends inside {inside}")]
    Truncated {
        /// The innermost open element.
        inside: String,
    },
    /// The document is well-formed but something in it is not allowed in XML.
    #[error("malformed XML at byte {offset}: {message}")]
    NotWellFormed {
        /// Where.
        offset: u64,
        /// What.
        message: String,
    },
    /// The document has no root element (it is empty, or holds only a prolog).
    #[error("not a FOXML document: no root element")]
    NoRoot,
    /// The root element is not `digitalObject`.
    #[error("not a FOXML document: the root element is <{root}>, not <foxml:digitalObject>")]
    NotFoxml {
        /// The root element's name as written.
        root: String,
    },
    /// `digitalObject` has no `PID` attribute.
    #[error("digitalObject has no PID attribute")]
    MissingPid,
    /// The PID does not have Fedora 3's PID syntax.
    #[error("invalid PID {pid:?}: {reason}")]
    InvalidPid {
        /// The PID as written.
        pid: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A required attribute is missing.
    #[error("{at}: <{element}> has no {attribute} attribute")]
    MissingAttribute {
        /// Which part of the object.
        at: Location,
        /// The element.
        element: &'static str,
        /// The attribute.
        attribute: &'static str,
    },
    /// An attribute has a value outside its vocabulary or syntax.
    #[error("{at}: {attribute}={value:?} is not {expected}")]
    InvalidAttribute {
        /// Which part of the object.
        at: Location,
        /// The attribute.
        attribute: &'static str,
        /// The value as written.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// `CONTROL_GROUP` is not one of X, M, E, R.
    #[error("{at}: unknown CONTROL_GROUP {value:?} (expected X, M, E or R)")]
    UnknownControlGroup {
        /// The datastream.
        at: Location,
        /// The value as written.
        value: String,
    },
    /// A datastream version has no content although its control group needs some.
    #[error("{at}: control group {control_group} needs {needed}, but the version has none")]
    MissingContent {
        /// The datastream version.
        at: Location,
        /// X, M, E or R.
        control_group: &'static str,
        /// What it needs.
        needed: &'static str,
    },
    /// A datastream version's content does not fit its control group (or there are
    /// several content elements).
    #[error("{at}: {found} is not allowed here: {reason}")]
    UnexpectedContent {
        /// The datastream version.
        at: Location,
        /// The content found (element and type).
        found: String,
        /// Why it is not allowed.
        reason: String,
    },
    /// `binaryContent` is not valid base64.
    #[error("{at}: binaryContent is not valid base64: {message}")]
    InvalidBase64 {
        /// The datastream version.
        at: Location,
        /// What the decoder found.
        message: String,
    },
    /// Inline XML uses a namespace prefix that is declared nowhere.
    #[error("{at}: xmlContent uses the undeclared namespace prefix {prefix:?}")]
    UnboundPrefix {
        /// The datastream version.
        at: Location,
        /// The prefix.
        prefix: String,
    },
}

/// A [`FoxmlError`] with the file it happened in.
#[derive(Debug, thiserror::Error)]
#[error("{}: {error}", path.display())]
pub struct ReadError {
    /// The FOXML file.
    pub path: PathBuf,
    /// What went wrong.
    #[source]
    pub error: Box<FoxmlError>,
}

/// Where in an object an error is: a datastream and possibly one of its versions, or the
/// object itself (`datastream` empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The datastream `ID` ("" when it has none yet).
    pub datastream: String,
    /// The version `ID`, when the error is about a version.
    pub version: Option<String>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.datastream.is_empty() {
            return f.write_str("object");
        }
        write!(f, "datastream {:?}", self.datastream)?;
        if let Some(version) = &self.version {
            write!(f, " version {version:?}")?;
        }
        Ok(())
    }
}

/// Reads a FOXML file into an object (see [`parse`]).
pub fn read_file(path: &Path) -> Result<F3Object, ReadError> {
    let bytes = std::fs::read(path).map_err(|e| in_file(path, e.into()))?;
    parse(&bytes).map_err(|e| in_file(path, e))
}

/// Reads a FOXML document (UTF-8, or ISO-8859-1 when it declares so) into an object.
pub fn parse(input: &[u8]) -> Result<F3Object, FoxmlError> {
    let text = decode_document(input)?;
    Parser::new(&text).object()
}

/// Reads only the PID of a FOXML file, stopping at the root element's start tag (the
/// root is checked to be a `digitalObject`, the PID to be valid, nothing else).
pub fn read_pid(path: &Path) -> Result<String, ReadError> {
    let file = std::fs::File::open(path).map_err(|e| in_file(path, e.into()))?;
    root_pid(Reader::from_reader(BufReader::new(file))).map_err(|e| in_file(path, e))
}

/// Reads only the PID of a FOXML document held in memory (see [`read_pid`]).
pub fn parse_pid(input: &[u8]) -> Result<String, FoxmlError> {
    root_pid(Reader::from_reader(input))
}

fn in_file(path: &Path, error: FoxmlError) -> ReadError {
    ReadError {
        path: path.to_owned(),
        error: Box::new(error),
    }
}

/// The PID of the root element, checked to be a `digitalObject` with a valid PID.
fn root_pid<R: BufRead>(mut reader: Reader<R>) -> Result<String, FoxmlError> {
    let mut buf = Vec::new();
    let xml_error = |reader: &Reader<R>, source| FoxmlError::Xml {
        offset: reader.error_position(),
        source,
    };
    let start = loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(start) | Event::Empty(start)) => break start,
            Ok(Event::Eof) => return Err(FoxmlError::NoRoot),
            Ok(_) => buf.clear(),
            Err(e) => return Err(xml_error(&reader, e)),
        }
    };
    let name = lossy(start.name().as_ref());
    if local(&name) != "digitalObject" {
        return Err(FoxmlError::NotFoxml { root: name });
    }
    for attr in start.attributes() {
        let attr = attr.map_err(|e| xml_error(&reader, e.into()))?;
        if attr.key.as_ref() == b"PID" {
            let pid = attr.unescape_value().map_err(|e| xml_error(&reader, e))?;
            check_pid(&pid)?;
            return Ok(pid.into_owned());
        }
    }
    Err(FoxmlError::MissingPid)
}

/// Checks that `pid` has Fedora 3's PID syntax: `namespace:id`, at most 64 characters,
/// the namespace of `[A-Za-z0-9.-]`, the id of `[A-Za-z0-9.~_-]` and `%XX` escapes
/// (upper-case hex).
pub fn check_pid(pid: &str) -> Result<(), FoxmlError> {
    let invalid = |reason| {
        Err(FoxmlError::InvalidPid {
            pid: pid.to_owned(),
            reason,
        })
    };
    if pid.len() > MAX_PID_LEN {
        return invalid("longer than 64 characters");
    }
    let Some((namespace, id)) = pid.split_once(':') else {
        return invalid("no ':' between namespace and id");
    };
    if namespace.is_empty() {
        return invalid("empty namespace");
    }
    if !namespace
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
    {
        return invalid("the namespace may only have A-Z, a-z, 0-9, '.' and '-'");
    }
    if id.is_empty() {
        return invalid("empty id");
    }
    let id = id.as_bytes();
    let mut i = 0;
    while i < id.len() {
        match id[i] {
            b if b.is_ascii_alphanumeric() || b"-.~_".contains(&b) => i += 1,
            b'%' if id.len() >= i + 3 && id[i + 1..i + 3].iter().all(is_upper_hex) => i += 3,
            _ => {
                return invalid(
                    "the id may only have A-Z, a-z, 0-9, '-', '.', '~', '_' and %XX escapes",
                )
            }
        }
    }
    Ok(())
}

fn is_upper_hex(b: &u8) -> bool {
    b.is_ascii_digit() || (b'A'..=b'F').contains(b)
}

/// The document as UTF-8 text: a UTF-8 byte order mark is dropped, ISO-8859-1 (when
/// declared) is transcoded, anything else must be UTF-8.
fn decode_document(input: &[u8]) -> Result<Cow<'_, str>, FoxmlError> {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    if input.starts_with(b"\xFE\xFF") || input.starts_with(b"\xFF\xFE") {
        return Err(FoxmlError::Encoding("UTF-16 is not supported".into()));
    }
    let declared = declared_encoding(input).to_ascii_lowercase();
    match declared.as_str() {
        "" | "utf-8" | "utf8" | "us-ascii" | "ascii" => std::str::from_utf8(input)
            .map(Cow::Borrowed)
            .map_err(|e| FoxmlError::Encoding(format!("not UTF-8: {e}"))),
        "iso-8859-1" | "latin1" | "iso_8859-1" | "latin-1" => {
            Ok(Cow::Owned(input.iter().map(|&b| char::from(b)).collect()))
        }
        _ => Err(FoxmlError::Encoding(format!(
            "unsupported encoding {declared:?}"
        ))),
    }
}

/// The `encoding` of the XML declaration, "" when there is none.
fn declared_encoding(input: &[u8]) -> String {
    let mut reader = Reader::from_reader(input);
    match reader.read_event() {
        Ok(Event::Decl(decl)) => match decl.encoding() {
            Some(Ok(encoding)) => lossy(&encoding),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

/// The local part of a qualified name.
fn local(name: &str) -> &str {
    name.rsplit_once(':').map_or(name, |(_, l)| l)
}

/// The prefix of a qualified name (`None` when unprefixed).
fn prefix(name: &str) -> Option<&str> {
    name.split_once(':').map(|(p, _)| p)
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One namespace declaration in scope.
struct Binding {
    /// `None` for the default namespace.
    prefix: Option<String>,
    uri: String,
}

/// An element start tag, with its attributes unescaped.
struct Tag {
    /// The qualified name as written.
    name: String,
    /// Whether it is a FOXML element (FOXML namespace or none).
    foxml: bool,
    /// Attributes other than namespace declarations, in order.
    attributes: Vec<(String, String)>,
    /// The namespace declarations it makes (prefix, `None` for the default namespace).
    declared: Vec<Option<String>>,
}

impl Tag {
    fn local(&self) -> &str {
        local(&self.name)
    }

    fn is(&self, local_name: &str) -> bool {
        self.foxml && self.local() == local_name
    }

    /// The namespace prefixes its name and attributes use (`None`: the default
    /// namespace, which an unprefixed element name uses); `xml` is left out.
    fn prefixes_used(&self) -> impl Iterator<Item = Option<&str>> {
        let attributes = self.attributes.iter().filter_map(|(n, _)| prefix(n));
        std::iter::once(prefix(&self.name))
            .chain(attributes.map(Some))
            .filter(|p| *p != Some("xml"))
    }

    /// Whether it declares `prefix` itself.
    fn declares(&self, prefix: Option<&str>) -> bool {
        self.declared.iter().any(|d| d.as_deref() == prefix)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What a [`Parser::next`] call returns.
enum Item<'a> {
    /// A start tag (`empty`: it closes itself).
    Open { tag: Tag, empty: bool },
    /// The end tag of the element opened last.
    Close,
    /// Character data (escaped as written, or CDATA).
    Text(Cow<'a, str>),
    /// Anything else (comments, processing instructions, ...).
    Other,
}

/// A pull parser over the document that keeps the namespace scope and the open
/// elements, and turns the end of input inside an element into [`FoxmlError::Truncated`].
struct Parser<'a> {
    text: &'a str,
    reader: Reader<&'a [u8]>,
    bindings: Vec<Binding>,
    /// The open elements: name and how many bindings each declared.
    open: Vec<(String, usize)>,
    /// Where the item [`Parser::next`] returned last starts.
    item_start: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            reader: Reader::from_str(text),
            bindings: Vec::new(),
            open: Vec::new(),
            item_start: 0,
        }
    }

    fn xml_error(&self, source: quick_xml::Error) -> FoxmlError {
        FoxmlError::Xml {
            offset: self.reader.error_position(),
            source,
        }
    }

    fn not_well_formed(&self, message: String) -> FoxmlError {
        FoxmlError::NotWellFormed {
            offset: self.reader.buffer_position(),
            message,
        }
    }

    /// The namespace URI a prefix (`None`: the default namespace) is bound to, searching
    /// the bindings from index `from` on.
    fn lookup(&self, prefix: Option<&str>, from: usize) -> Option<&str> {
        self.bindings[from..]
            .iter()
            .rev()
            .find(|b| b.prefix.as_deref() == prefix)
            .map(|b| b.uri.as_str())
    }

    /// The next item; `Err(Truncated)` at the end of input.
    fn next(&mut self) -> Result<Item<'a>, FoxmlError> {
        self.item_start = self.reader.buffer_position() as usize;
        let event = self.reader.read_event().map_err(|e| self.xml_error(e))?;
        Ok(match event {
            Event::Start(start) => Item::Open {
                tag: self.open_tag(&start, false)?,
                empty: false,
            },
            Event::Empty(start) => Item::Open {
                tag: self.open_tag(&start, true)?,
                empty: true,
            },
            Event::End(_) => {
                // quick-xml checks that the names match.
                let (_, declared) = self
                    .open
                    .pop()
                    .ok_or_else(|| self.not_well_formed("an end tag without a start tag".into()))?;
                self.bindings.truncate(self.bindings.len() - declared);
                Item::Close
            }
            Event::Text(text) => Item::Text(match text.into_inner() {
                Cow::Borrowed(raw) => {
                    // A slice of `self.text` between markup, so UTF-8.
                    let raw = std::str::from_utf8(raw)
                        .map_err(|e| self.not_well_formed(e.to_string()))?;
                    quick_xml::escape::unescape(raw).map_err(|e| self.xml_error(e.into()))?
                }
                Cow::Owned(raw) => lossy(&raw).into(),
            }),
            Event::CData(data) => Item::Text(lossy(&data).into()),
            Event::Eof => {
                return Err(match self.open.last() {
                    Some((name, _)) => FoxmlError::Truncated {
                        inside: format!("<{name}>"),
                    },
                    None => FoxmlError::NoRoot,
                })
            }
            _ => Item::Other,
        })
    }

    /// Reads a start tag: its namespace declarations enter the scope (until its end tag,
    /// unless `empty`), its prefix must be bound.
    fn open_tag(&mut self, start: &BytesStart, empty: bool) -> Result<Tag, FoxmlError> {
        let name = lossy(start.name().as_ref());
        let mut attributes = Vec::new();
        let mut declared = Vec::new();
        for attr in start.attributes() {
            let attr = attr.map_err(|e| self.xml_error(e.into()))?;
            let key = lossy(attr.key.as_ref());
            let value = attr
                .unescape_value()
                .map_err(|e| self.xml_error(e))?
                .into_owned();
            if key == "xmlns" || key.starts_with("xmlns:") {
                let prefix = key.strip_prefix("xmlns:").map(str::to_owned);
                declared.push(prefix.clone());
                self.bindings.push(Binding { prefix, uri: value });
            } else {
                attributes.push((key, value));
            }
        }
        let foxml = match prefix(&name) {
            Some(p) => self.lookup(Some(p), 0) == Some(FOXML_NS),
            None => matches!(self.lookup(None, 0), None | Some("") | Some(FOXML_NS)),
        };
        if empty {
            self.bindings.truncate(self.bindings.len() - declared.len());
        } else {
            self.open.push((name.clone(), declared.len()));
        }
        Ok(Tag {
            name,
            foxml,
            attributes,
            declared,
        })
    }

    /// Skips the rest of the element just opened (not self-closing).
    fn skip(&mut self) -> Result<(), FoxmlError> {
        let depth = self.open.len();
        while self.open.len() >= depth {
            self.next()?;
        }
        Ok(())
    }

    /// The whole document.
    fn object(mut self) -> Result<F3Object, FoxmlError> {
        let (root, empty) = loop {
            match self.next()? {
                Item::Open { tag, empty, .. } => break (tag, empty),
                Item::Text(t) if !is_blank(&t) => {
                    return Err(self.not_well_formed("text before the root element".into()))
                }
                _ => {}
            }
        };
        if !root.is("digitalObject") {
            return Err(FoxmlError::NotFoxml { root: root.name });
        }
        let pid = root.get("PID").ok_or(FoxmlError::MissingPid)?.to_owned();
        check_pid(&pid)?;
        let mut object = F3Object {
            pid,
            properties: Vec::new(),
            datastreams: Vec::new(),
            not_carried: Vec::new(),
        };
        if empty {
            return Ok(object);
        }
        loop {
            match self.next()? {
                Item::Close => return Ok(object),
                Item::Open { tag, empty, .. } => {
                    if tag.is("objectProperties") {
                        if !empty {
                            self.properties(&mut object.properties)?;
                        }
                    } else if tag.is("datastream") {
                        let datastream = self.datastream(&tag, empty)?;
                        object.datastreams.push(datastream);
                    } else {
                        object.not_carried.push(match tag.get("ID") {
                            Some(id) => format!("{} {id}", tag.local()),
                            None => tag.local().to_owned(),
                        });
                        if !empty {
                            self.skip()?;
                        }
                    }
                }
                Item::Text(_) | Item::Other => {}
            }
        }
    }

    /// The children of `objectProperties`.
    fn properties(&mut self, properties: &mut Vec<(String, String)>) -> Result<(), FoxmlError> {
        loop {
            match self.next()? {
                Item::Close => return Ok(()),
                Item::Open { tag, empty, .. } => {
                    if tag.is("property") || tag.is("extproperty") {
                        let at = Location {
                            datastream: String::new(),
                            version: None,
                        };
                        let get = |attribute| {
                            tag.get(attribute).map(str::to_owned).ok_or(
                                FoxmlError::MissingAttribute {
                                    at: at.clone(),
                                    element: "property",
                                    attribute,
                                },
                            )
                        };
                        properties.push((get("NAME")?, get("VALUE")?));
                    }
                    if !empty {
                        self.skip()?;
                    }
                }
                Item::Text(_) | Item::Other => {}
            }
        }
    }

    /// A `datastream` element whose start tag has just been read.
    fn datastream(&mut self, tag: &Tag, empty: bool) -> Result<Datastream, FoxmlError> {
        let mut at = Location {
            datastream: String::new(),
            version: None,
        };
        let id = tag.get("ID").ok_or_else(|| FoxmlError::MissingAttribute {
            at: at.clone(),
            element: "datastream",
            attribute: "ID",
        })?;
        at.datastream = id.to_owned();
        let invalid = |attribute, value: &str, expected| FoxmlError::InvalidAttribute {
            at: at.clone(),
            attribute,
            value: value.to_owned(),
            expected,
        };
        let state = match tag.get("STATE") {
            None | Some("A") => DatastreamState::Active,
            Some("I") => DatastreamState::Inactive,
            Some("D") => DatastreamState::Deleted,
            Some(other) => return Err(invalid("STATE", other, "A, I or D")),
        };
        let control_group = match tag.get("CONTROL_GROUP") {
            Some("X") => ControlGroup::InlineXml,
            Some("M") => ControlGroup::Managed,
            Some("E") => ControlGroup::External,
            Some("R") => ControlGroup::Redirect,
            Some(other) => {
                return Err(FoxmlError::UnknownControlGroup {
                    at,
                    value: other.to_owned(),
                })
            }
            None => {
                return Err(FoxmlError::MissingAttribute {
                    at,
                    element: "datastream",
                    attribute: "CONTROL_GROUP",
                })
            }
        };
        let versionable = match tag.get("VERSIONABLE") {
            None => true,
            Some(v) if v.eq_ignore_ascii_case("true") => true,
            Some(v) if v.eq_ignore_ascii_case("false") => false,
            Some(other) => return Err(invalid("VERSIONABLE", other, "true or false")),
        };
        let mut datastream = Datastream {
            id: at.datastream.clone(),
            state,
            control_group,
            versionable,
            versions: Vec::new(),
        };
        if empty {
            return Ok(datastream);
        }
        loop {
            match self.next()? {
                Item::Close => return Ok(datastream),
                Item::Open { tag, empty, .. } => {
                    if tag.is("datastreamVersion") {
                        let version = self.version(&at, control_group, &tag, empty)?;
                        datastream.versions.push(version);
                    } else if !empty {
                        self.skip()?;
                    }
                }
                Item::Text(_) | Item::Other => {}
            }
        }
    }

    /// A `datastreamVersion` element whose start tag has just been read.
    fn version(
        &mut self,
        datastream: &Location,
        control_group: ControlGroup,
        tag: &Tag,
        empty: bool,
    ) -> Result<DatastreamVersion, FoxmlError> {
        let mut at = datastream.clone();
        let id = tag.get("ID").ok_or_else(|| FoxmlError::MissingAttribute {
            at: at.clone(),
            element: "datastreamVersion",
            attribute: "ID",
        })?;
        at.version = Some(id.to_owned());
        let size = match tag.get("SIZE") {
            None => None,
            Some(s) => Some(
                s.trim()
                    .parse::<i64>()
                    .map_err(|_| FoxmlError::InvalidAttribute {
                        at: at.clone(),
                        attribute: "SIZE",
                        value: s.to_owned(),
                        expected: "an integer",
                    })?,
            ),
        };
        let mut version = DatastreamVersion {
            id: id.to_owned(),
            label: tag.get("LABEL").unwrap_or_default().to_owned(),
            created: tag.get("CREATED").map(str::to_owned),
            mime_type: tag.get("MIMETYPE").unwrap_or_default().to_owned(),
            format_uri: tag.get("FORMAT_URI").map(str::to_owned),
            alt_ids: tag
                .get("ALT_IDS")
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
            size,
            digest: None,
            content: Content::None,
        };
        if !empty {
            loop {
                match self.next()? {
                    Item::Close => break,
                    Item::Open { tag, empty, .. } => {
                        if tag.is("contentDigest") {
                            version.digest = Some(ContentDigest {
                                kind: tag.get("TYPE").unwrap_or_default().to_owned(),
                                value: tag.get("DIGEST").unwrap_or_default().to_owned(),
                            });
                            if !empty {
                                self.skip()?;
                            }
                            continue;
                        }
                        let content = if tag.is("xmlContent") {
                            self.xml_content(&at, empty)?
                        } else if tag.is("binaryContent") {
                            self.binary_content(&at, empty)?
                        } else if tag.is("contentLocation") {
                            if !empty {
                                self.skip()?;
                            }
                            content_location(&at, control_group, &tag)?
                        } else {
                            if !empty {
                                self.skip()?;
                            }
                            continue;
                        };
                        if !matches!(version.content, Content::None) {
                            return Err(FoxmlError::UnexpectedContent {
                                at,
                                found: describe(&content).into(),
                                reason: format!(
                                    "the version already has {}",
                                    describe(&version.content)
                                ),
                            });
                        }
                        version.content = content;
                    }
                    Item::Text(_) | Item::Other => {}
                }
            }
        }
        check_content(&at, control_group, &version.content)?;
        Ok(version)
    }

    /// The content of `xmlContent`, whose start tag has just been read (see
    /// [`Content::Xml`]): the source text from the first to the last node inside it, with
    /// the namespace declarations that each top-level element uses but that only an
    /// ancestor of `xmlContent` declares added to its start tag.
    fn xml_content(&mut self, at: &Location, empty: bool) -> Result<Content, FoxmlError> {
        if empty {
            return Err(no_xml_root(at));
        }
        let outer = self.bindings.len();
        let depth = self.open.len();
        let mut roots: Vec<Root> = Vec::new();
        // The span of the nodes inside xmlContent, whitespace around them excluded.
        let mut span: Option<(usize, usize)> = None;
        loop {
            let item = self.next()?;
            let (start, end) = (self.item_start, self.reader.buffer_position() as usize);
            match item {
                Item::Close if self.open.len() < depth => break,
                Item::Text(text) if is_blank(&text) => continue,
                Item::Text(_) if self.open.len() == depth => {
                    return Err(FoxmlError::UnexpectedContent {
                        at: at.clone(),
                        found: "text".into(),
                        reason: "xmlContent may only hold elements".into(),
                    })
                }
                Item::Open { tag, empty } => {
                    if self.open.len() == depth + usize::from(!empty) {
                        roots.push(Root {
                            insert_at: start + 1 + tag.name.len(),
                            needed: BTreeMap::new(),
                        });
                    }
                    let root = roots.last_mut().expect("inside a top-level element");
                    for used in tag.prefixes_used() {
                        if tag.declares(used) || self.lookup(used, outer).is_some() {
                            continue;
                        }
                        match (self.lookup(used, 0), used) {
                            (Some(uri), _) => {
                                root.needed.insert(used.map(str::to_owned), uri.to_owned());
                            }
                            (None, Some(prefix)) => {
                                return Err(FoxmlError::UnboundPrefix {
                                    at: at.clone(),
                                    prefix: prefix.to_owned(),
                                })
                            }
                            (None, None) => {}
                        }
                    }
                }
                Item::Close | Item::Text(_) | Item::Other => {}
            }
            span = Some((span.map_or(start, |(first, _)| first), end));
        }
        match span {
            Some((first, last)) if !roots.is_empty() => Ok(Content::Xml(with_declarations(
                &self.text[first..last],
                first,
                &roots,
            ))),
            _ => Err(no_xml_root(at)),
        }
    }

    /// The decoded content of `binaryContent`, whose start tag has just been read.
    fn binary_content(&mut self, at: &Location, empty: bool) -> Result<Content, FoxmlError> {
        let mut decoder = Base64Decoder::default();
        if !empty {
            loop {
                match self.next()? {
                    Item::Close => break,
                    Item::Text(text) => decoder.push(&text).map_err(|m| base64_error(at, m))?,
                    Item::Open { tag, .. } => {
                        return Err(FoxmlError::UnexpectedContent {
                            at: at.clone(),
                            found: format!("<{}>", tag.name),
                            reason: "binaryContent may only hold base64 text".into(),
                        })
                    }
                    Item::Other => {}
                }
            }
        }
        Ok(Content::Inline(
            decoder.finish().map_err(|m| base64_error(at, m))?,
        ))
    }
}

/// A top-level element inside `xmlContent`.
struct Root {
    /// Where its name ends in the document, i.e. where declarations go.
    insert_at: usize,
    /// The namespace declarations it needs from outside (prefix, `None` for the default
    /// namespace → URI).
    needed: BTreeMap<Option<String>, String>,
}

/// `fragment`, which starts at offset `base` of the document, with the namespace
/// declarations each top-level element needs inserted after its name.
fn with_declarations(fragment: &str, base: usize, roots: &[Root]) -> Vec<u8> {
    let mut out = String::with_capacity(fragment.len());
    let mut from = 0;
    for root in roots {
        let insert_at = root.insert_at - base;
        out.push_str(&fragment[from..insert_at]);
        for (prefix, uri) in &root.needed {
            match prefix {
                Some(p) => out.push_str(&format!(" xmlns:{p}=\"")),
                None => out.push_str(" xmlns=\""),
            }
            out.push_str(&quick_xml::escape::escape(uri.as_str()));
            out.push('"');
        }
        from = insert_at;
    }
    out.push_str(&fragment[from..]);
    out.into_bytes()
}

fn no_xml_root(at: &Location) -> FoxmlError {
    FoxmlError::MissingContent {
        at: at.clone(),
        control_group: "X",
        needed: "an element inside xmlContent",
    }
}

fn base64_error(at: &Location, message: String) -> FoxmlError {
    FoxmlError::InvalidBase64 {
        at: at.clone(),
        message,
    }
}

fn is_blank(text: &str) -> bool {
    text.bytes()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

/// The content a `contentLocation` element stands for. For E and R datastreams `REF` is
/// a URL whatever `TYPE` says, as Fedora 3 reads it (the demo objects' ingest FOXML has
/// `TYPE="INTERNAL_ID"` with URLs there).
fn content_location(
    at: &Location,
    control_group: ControlGroup,
    tag: &Tag,
) -> Result<Content, FoxmlError> {
    let reference = tag
        .get("REF")
        .ok_or_else(|| FoxmlError::MissingAttribute {
            at: at.clone(),
            element: "contentLocation",
            attribute: "REF",
        })?
        .to_owned();
    if matches!(
        control_group,
        ControlGroup::External | ControlGroup::Redirect
    ) {
        return Ok(Content::Url(reference));
    }
    match tag.get("TYPE") {
        Some("INTERNAL_ID") => Ok(Content::Internal(reference)),
        Some("URL") => Ok(Content::Url(reference)),
        Some(other) => Err(FoxmlError::InvalidAttribute {
            at: at.clone(),
            attribute: "TYPE",
            value: other.to_owned(),
            expected: "INTERNAL_ID or URL",
        }),
        None => Err(FoxmlError::MissingAttribute {
            at: at.clone(),
            element: "contentLocation",
            attribute: "TYPE",
        }),
    }
}

/// What kind of content this is, for messages.
fn describe(content: &Content) -> &'static str {
    match content {
        Content::Xml(_) => "xmlContent",
        Content::Inline(_) => "binaryContent",
        Content::Internal(_) => "contentLocation TYPE=\"INTERNAL_ID\"",
        Content::Url(_) => "contentLocation TYPE=\"URL\"",
        Content::None => "no content",
    }
}

/// Checks that a version's content fits its control group: X needs `xmlContent`, M any
/// of `binaryContent` and `contentLocation`, E and R a URL.
fn check_content(
    at: &Location,
    control_group: ControlGroup,
    content: &Content,
) -> Result<(), FoxmlError> {
    let (fits, needed) = match control_group {
        ControlGroup::InlineXml => (matches!(content, Content::Xml(_)), "xmlContent"),
        ControlGroup::Managed => (
            matches!(
                content,
                Content::Inline(_) | Content::Internal(_) | Content::Url(_)
            ),
            "binaryContent or contentLocation",
        ),
        ControlGroup::External | ControlGroup::Redirect => (
            matches!(content, Content::Url(_)),
            "contentLocation TYPE=\"URL\"",
        ),
    };
    match (fits, content) {
        (true, _) => Ok(()),
        (false, Content::None) => Err(FoxmlError::MissingContent {
            at: at.clone(),
            control_group: control_group.letter(),
            needed,
        }),
        (false, other) => Err(FoxmlError::UnexpectedContent {
            at: at.clone(),
            found: describe(other).into(),
            reason: format!("control group {} needs {needed}", control_group.letter()),
        }),
    }
}

/// Decodes base64 text that arrives in pieces and may hold whitespace, without keeping
/// a second copy of the text: characters are gathered in a small buffer and decoded a
/// block at a time.
#[derive(Default)]
struct Base64Decoder {
    pending: Vec<u8>,
    out: Vec<u8>,
    /// Base64 characters seen so far, for messages.
    seen: usize,
}

impl Base64Decoder {
    /// Decoded in blocks of this many characters (a multiple of 4).
    const BLOCK: usize = 8192;

    fn push(&mut self, text: &str) -> Result<(), String> {
        for b in text.bytes() {
            if matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
                continue;
            }
            self.pending.push(b);
            if self.pending.len() == Self::BLOCK {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        base64::engine::general_purpose::STANDARD
            .decode_vec(&self.pending, &mut self.out)
            .map_err(|e| format!("{e} (in the block from character {})", self.seen))?;
        self.seen += self.pending.len();
        self.pending.clear();
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<u8>, String> {
        if !self.pending.is_empty() {
            self.flush()?;
        }
        Ok(self.out)
    }
}
