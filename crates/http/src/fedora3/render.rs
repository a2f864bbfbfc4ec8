//! Fedora 3.8.1's documents, written as it writes them: the same namespaces,
//! `schemaLocation`s, element order, whitespace and escaping, so that clients (and the
//! recorded answers) see no difference. `base` is the facade's base URL with its trailing
//! slash (`http://host/fedora/`), Fedora 3's `baseURL`.

use std::fmt::Write;

use arca_fedora3::view::{DatastreamProfile, DatastreamVersion, ObjectView};
use oxrdf::{NamedOrBlankNode, Term, Triple};

use super::xml::{element, enc, html, url_encode};

const ACCESS_NS: &str = "http://www.fedora.info/definitions/1/0/access/";
const MANAGEMENT_NS: &str = "http://www.fedora.info/definitions/1/0/management/";
const TYPES_NS: &str = "http://www.fedora.info/definitions/1/0/types/";
const XSD_NS: &str = "http://www.w3.org/2001/XMLSchema";
const XSI_NS: &str = "http://www.w3.org/2001/XMLSchema-instance";
const XML_DECL: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>";

/// Which Fedora 3 interface a document answers: REST (API-A and API-M) or API-A-LITE; the
/// two write the same information with different whitespace and attribute order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Rest,
    Lite,
}

/// The object's profile (`objects/{pid}?format=xml`, `get/{pid}?xml=true`). The lite form
/// has no state.
pub(crate) fn object_profile(o: &ObjectView, base: &str, api: Api) -> String {
    let mut out = String::from(XML_DECL);
    let schema = "http://www.fedora.info/definitions/1/0/objectProfile.xsd";
    let (models_open, model_sep) = match api {
        Api::Rest => {
            let _ = write!(
                out,
                "<objectProfile  xmlns=\"{ACCESS_NS}\"  xmlns:xsd=\"{XSD_NS}\" xmlns:xsi=\"{XSI_NS}\" xsi:schemaLocation=\"{ACCESS_NS} {schema}\" pid=\"{}\" >",
                enc(&o.pid)
            );
            ("<objModels>", "")
        }
        Api::Lite => {
            let _ = write!(
                out,
                "\n<objectProfile pid=\"{}\" xmlns=\"{ACCESS_NS}\" xmlns:xsi=\"{XSI_NS}\" xsi:schemaLocation=\"{ACCESS_NS} {schema}\">",
                enc(&o.pid)
            );
            ("<objModels>\n", "\n")
        }
    };
    element(&mut out, "objLabel", &o.label);
    element(&mut out, "objOwnerId", &o.owner_id);
    out.push_str(models_open);
    for m in &o.models {
        element(&mut out, "model", m);
        out.push_str(model_sep);
    }
    out.push_str("</objModels>");
    element(&mut out, "objCreateDate", &o.created);
    element(&mut out, "objLastModDate", &o.last_modified);
    let methods = format!(
        "{base}objects/{}/methods/fedora-system%3A3",
        url_encode(&o.pid)
    );
    element(
        &mut out,
        "objDissIndexViewURL",
        &format!("{methods}/viewMethodIndex"),
    );
    element(
        &mut out,
        "objItemIndexViewURL",
        &format!("{methods}/viewItemIndex"),
    );
    if api == Api::Rest {
        element(&mut out, "objState", o.state);
    }
    out.push_str("</objectProfile>");
    out
}

/// The datastream list (`objects/{pid}/datastreams?format=xml`, `listDatastreams/{pid}`).
pub(crate) fn datastream_list(
    pid: &str,
    datastreams: &[DatastreamVersion],
    base: &str,
    api: Api,
) -> String {
    let mut out = String::from(XML_DECL);
    let schema = "http://www.fedora-commons.org/definitions/1/0/listDatastreams.xsd";
    match api {
        Api::Rest => {
            let _ = write!(
                out,
                "<objectDatastreams  xmlns=\"{ACCESS_NS}\" xmlns:xsd=\"{XSD_NS}\"  xmlns:xsi=\"{XSI_NS}\"  xsi:schemaLocation=\"{ACCESS_NS} {schema}\" pid=\"{}\" baseURL=\"{}\" >",
                enc(pid),
                enc(base)
            );
        }
        Api::Lite => {
            let _ = write!(
                out,
                "\n<objectDatastreams pid=\"{}\" baseURL=\"{}\" xmlns=\"{ACCESS_NS}\" xmlns:xsi=\"{XSI_NS}\" xsi:schemaLocation=\"{ACCESS_NS} {schema}\">",
                enc(pid),
                enc(base)
            );
        }
    }
    for d in datastreams {
        let p = &d.profile;
        let _ = write!(
            out,
            "    <datastream dsid=\"{}\" label=\"{}\" mimeType=\"{}\" />",
            enc(&p.dsid),
            enc(&p.label),
            enc(&p.mime)
        );
    }
    out.push_str("</objectDatastreams>");
    out
}

/// The datastream list with every profile (`…/datastreams?format=xml&profiles=true`).
pub(crate) fn datastream_list_profiles(
    pid: &str,
    datastreams: &[DatastreamVersion],
    base: &str,
) -> String {
    let mut out = String::from(XML_DECL);
    let _ = write!(
        out,
        "<objectDatastreams xmlns=\"{ACCESS_NS}\" xmlns:apim=\"{MANAGEMENT_NS}\" xmlns:xsd=\"{XSD_NS}\" xmlns:xsi=\"{XSI_NS}\" xsi:schemaLocation=\"{ACCESS_NS} {base}schema/listDatastreams.xsd\" pid=\"{}\" baseURL=\"{}\" >",
        enc(pid),
        enc(base)
    );
    for d in datastreams {
        let p = &d.profile;
        let _ = write!(
            out,
            "<datastreamProfile pid=\"{}\" dsID=\"{}\" >",
            enc(&p.pid),
            enc(&p.dsid)
        );
        profile_fields(&mut out, p, "apim:", "", base);
        out.push_str("</datastreamProfile>");
    }
    out.push_str("</objectDatastreams>");
    out
}

/// One datastream's profile (`objects/{pid}/datastreams/{ds}?format=xml`); `date_time` is
/// the `asOfDateTime` asked for, echoed as Fedora 3 does.
pub(crate) fn datastream_profile(
    p: &DatastreamProfile,
    date_time: Option<&str>,
    base: &str,
) -> String {
    let mut out = String::from(XML_DECL);
    let schema = "http://www.fedora.info/definitions/1/0/datastreamProfile.xsd";
    let _ = write!(
        out,
        "<datastreamProfile  xmlns=\"{MANAGEMENT_NS}\"  xmlns:xsd=\"{XSD_NS}\" xmlns:xsi=\"{XSI_NS}\" xsi:schemaLocation=\"{MANAGEMENT_NS} {schema}\" pid=\"{}\" dsID=\"{}\"",
        enc(&p.pid),
        enc(&p.dsid)
    );
    if let Some(dt) = date_time {
        let _ = write!(out, " dateTime=\"{}\"", enc(dt));
    }
    out.push('>');
    profile_fields(&mut out, p, "", "UNSPECIFIED", base);
    out.push_str("</datastreamProfile>");
    out
}

/// A datastream's history (`objects/{pid}/datastreams/{ds}/history?format=xml`), newest
/// version first.
pub(crate) fn datastream_history(
    pid: &str,
    dsid: &str,
    versions: &[DatastreamVersion],
    base: &str,
) -> String {
    let mut out = String::from(XML_DECL);
    let schema = "http://www.fedora.info/definitions/1/0/datastreamHistory.xsd";
    let _ = write!(
        out,
        "<datastreamHistory  xmlns=\"{MANAGEMENT_NS}\"  xmlns:xsd=\"{XSD_NS}\" xmlns:xsi=\"{XSI_NS}\" xsi:schemaLocation=\"{MANAGEMENT_NS} {schema}\" pid=\"{}\" dsID=\"{}\">",
        enc(pid),
        enc(dsid)
    );
    for v in versions {
        let p = &v.profile;
        let _ = write!(
            out,
            "<datastreamProfile pid=\"{}\" dsID=\"{}\">",
            enc(&p.pid),
            enc(&p.dsid)
        );
        // Fedora 3's history gives an unknown size (-1) as 0, its profile as it is.
        let p = &DatastreamProfile {
            size: p.size.max(0),
            ..p.clone()
        };
        profile_fields(&mut out, p, "", "UNSPECIFIED", base);
        out.push_str("</datastreamProfile>");
    }
    out.push_str("</datastreamHistory>");
    out
}

/// The fields of a datastream profile, one per line. Fedora 3 writes the datastream's URL
/// with `local.fedora.server` replaced by its own host.
fn profile_fields(
    out: &mut String,
    p: &DatastreamProfile,
    prefix: &str,
    info_type: &str,
    base: &str,
) {
    let location = local_server(&p.location, base);
    let size = p.size.to_string();
    let fields: [(&str, &str); 14] = [
        ("dsLabel", &p.label),
        ("dsVersionID", &p.version_id),
        ("dsCreateDate", &p.created),
        ("dsState", &p.state),
        ("dsMIME", &p.mime),
        ("dsFormatURI", &p.format_uri),
        ("dsControlGroup", &p.control_group),
        ("dsSize", &size),
        (
            "dsVersionable",
            if p.versionable { "true" } else { "false" },
        ),
        ("dsInfoType", info_type),
        ("dsLocation", &location),
        ("dsLocationType", &p.location_type),
        ("dsChecksumType", &p.checksum_type),
        ("dsChecksum", &p.checksum),
    ];
    for (name, value) in fields {
        element(out, &format!("{prefix}{name}"), value);
        out.push('\n');
    }
    for alt in &p.alt_ids {
        element(out, &format!("{prefix}dsAltID"), alt);
        out.push('\n');
    }
}

/// `url` with Fedora 3's placeholder host `local.fedora.server` replaced by the host of
/// `base`, as Fedora 3 resolves it.
pub(crate) fn local_server(url: &str, base: &str) -> String {
    const LOCAL: &str = "http://local.fedora.server/";
    match url.strip_prefix(LOCAL) {
        Some(rest) => {
            let origin = base
                .trim_end_matches('/')
                .rsplit_once('/')
                .map_or(base, |(o, _)| o);
            format!("{origin}/{rest}")
        }
        None => url.to_string(),
    }
}

/// The object's history (`objects/{pid}/versions?format=xml`, `getObjectHistory/{pid}`).
pub(crate) fn object_history(pid: &str, dates: &[String], api: Api) -> String {
    let mut out = String::from(XML_DECL);
    let schema = "http://www.fedora.info/definitions/1/0/fedoraObjectHistory.xsd";
    match api {
        Api::Rest => {
            let _ = write!(
                out,
                "<fedoraObjectHistory  xmlns=\"{ACCESS_NS}\" xmlns:xsd=\"{XSD_NS}\" xmlns:xsi=\"{XSI_NS}\" xsi:schemaLocation=\"{ACCESS_NS} {schema}\" pid=\"{}\" >",
                enc(pid)
            );
        }
        Api::Lite => {
            let _ = write!(
                out,
                "<fedoraObjectHistory pid=\"{}\" xmlns=\"{ACCESS_NS}\" xmlns:xsd=\"{XSD_NS}\" xmlns:xsi=\"{XSI_NS}\" xsi:schemaLocation=\"{ACCESS_NS} {schema}\">",
                enc(pid)
            );
        }
    }
    for d in dates {
        element(&mut out, "objectChangeDate", d);
    }
    out.push_str("</fedoraObjectHistory>");
    out
}

/// The repository description (`describe?xml=true`). `base` without its trailing slash is
/// `repositoryBaseURL`; the PID and OAI settings are Fedora 3.8.1's installation defaults.
pub(crate) fn describe(base: &str) -> String {
    let root = base.trim_end_matches('/');
    let mut out = String::from(XML_DECL);
    let _ = write!(
        out,
        "<fedoraRepository xmlns=\"{ACCESS_NS}\" xmlns:xsd=\"{XSD_NS}\" xmlns:xsi=\"{XSI_NS}\" xsi:schemaLocation=\"{ACCESS_NS} http://www.fedora.info/definitions/1/0/fedoraRepository.xsd\">"
    );
    element(&mut out, "repositoryName", "Fedora Repository");
    element(&mut out, "repositoryBaseURL", root);
    element(&mut out, "repositoryVersion", "3.8.1");
    out.push_str("<repositoryPID>");
    for (name, value) in [
        ("PID-namespaceIdentifier", "changeme"),
        ("PID-delimiter", ":"),
        ("PID-sample", "changeme:100"),
        ("retainPID", "*"),
    ] {
        out.push_str("    ");
        element(&mut out, name, value);
    }
    out.push_str("</repositoryPID><repositoryOAI-identifier>");
    for (name, value) in [
        ("OAI-namespaceIdentifier", "example.org"),
        ("OAI-delimiter", ":"),
        ("OAI-sample", "oai:example.org:changeme:100"),
    ] {
        out.push_str("    ");
        element(&mut out, name, value);
    }
    out.push_str("</repositoryOAI-identifier>");
    element(&mut out, "sampleSearch-URL", &format!("{root}/objects"));
    element(
        &mut out,
        "sampleAccess-URL",
        &format!("{root}/objects/demo:5"),
    );
    element(
        &mut out,
        "sampleOAI-URL",
        &format!("{root}/oai?verb=Identify"),
    );
    element(&mut out, "adminEmail", "bob@example.org");
    element(&mut out, "adminEmail", "sally@example.org");
    out.push_str("</fedoraRepository>");
    out
}

/// The object's relationships (`objects/{pid}/relationships`) as Fedora 3's RDF/XML: one
/// `rdf:Description` per subject, each predicate with its namespace declared in place.
pub(crate) fn relationships(triples: &[Triple]) -> String {
    let mut out = String::from(XML_DECL);
    out.push_str("\n<rdf:RDF\n\txmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n");
    let mut subjects: Vec<&NamedOrBlankNode> = Vec::new();
    for t in triples {
        if !subjects.contains(&&t.subject) {
            subjects.push(&t.subject);
        }
    }
    for s in subjects {
        let about = match s {
            NamedOrBlankNode::NamedNode(n) => format!("rdf:about=\"{}\"", enc(n.as_str())),
            NamedOrBlankNode::BlankNode(b) => format!("rdf:nodeID=\"{}\"", enc(b.as_str())),
        };
        let _ = write!(out, "\n<rdf:Description {about}>\n");
        for t in triples.iter().filter(|t| &t.subject == s) {
            let p = t.predicate.as_str();
            let split = p.rfind(['#', '/']).map_or(0, |i| i + 1);
            let (ns, local) = p.split_at(split);
            let _ = write!(out, "\t<{local} xmlns=\"{}\"", enc(ns));
            match &t.object {
                Term::NamedNode(n) => {
                    let _ = writeln!(out, " rdf:resource=\"{}\"/>", enc(n.as_str()));
                }
                Term::BlankNode(b) => {
                    let _ = writeln!(out, " rdf:nodeID=\"{}\"/>", enc(b.as_str()));
                }
                Term::Literal(l) => {
                    if let Some(lang) = l.language() {
                        let _ = write!(out, " xml:lang=\"{}\"", enc(lang));
                    } else if l.datatype() != oxrdf::vocab::xsd::STRING {
                        let _ = write!(out, " rdf:datatype=\"{}\"", enc(l.datatype().as_str()));
                    }
                    let _ = writeln!(out, ">{}</{local}>", enc(l.value()));
                }
            }
        }
        out.push_str("</rdf:Description>\n");
    }
    out.push_str("\n</rdf:RDF>");
    out
}

/// The fields findObjects can return, in Fedora 3's order.
pub(crate) const FIELDS: [&str; 22] = [
    "pid",
    "label",
    "state",
    "ownerId",
    "cDate",
    "mDate",
    "dcmDate",
    "title",
    "creator",
    "subject",
    "description",
    "publisher",
    "contributor",
    "date",
    "type",
    "format",
    "identifier",
    "source",
    "language",
    "relation",
    "coverage",
    "rights",
];

/// A findObjects session: the token to continue with, the cursor of this page and when the
/// token expires.
pub(crate) struct Session {
    pub token: String,
    pub cursor: usize,
    pub expires: String,
}

/// The values of field `name` of an object, as findObjects lists them.
pub(crate) fn field_values<'a>(o: &'a ObjectView, name: &'a str) -> Vec<&'a str> {
    match name {
        "pid" => vec![&o.pid],
        "label" => vec![&o.label],
        "state" => vec![o.state],
        "ownerId" => vec![&o.owner_id],
        "cDate" => vec![&o.created],
        "mDate" => vec![&o.last_modified],
        "dcmDate" => Vec::new(),
        dc => o.dc_values(dc).collect(),
    }
}

/// The rows of one findObjects page (`objects?…&resultFormat=xml`, `search?…&xml=true`).
pub(crate) fn find_objects(
    rows: &[ObjectView],
    fields: &[&str],
    session: Option<&Session>,
    base: &str,
    api: Api,
) -> String {
    let mut out = String::from(XML_DECL);
    out.push('\n');
    let write_session = |out: &mut String| {
        if let Some(s) = session {
            let _ = write!(
                out,
                "    <token>{}</token>\n    <cursor>{}</cursor>\n    <expirationDate>{}</expirationDate>\n",
                enc(&s.token),
                s.cursor,
                enc(&s.expires)
            );
        }
    };
    match api {
        Api::Rest => {
            let _ = writeln!(
                out,
                "<result xmlns=\"{TYPES_NS}\" xmlns:types=\"{TYPES_NS}\" xmlns:xsi=\"{XSI_NS}\" xsi:schemaLocation=\"{TYPES_NS} {base}schema/findObjects.xsd\">"
            );
            if session.is_some() {
                out.push_str("  <listSession>\n");
                write_session(&mut out);
                out.push_str("  </listSession>\n");
            }
            out.push_str("  <resultList>\n");
        }
        Api::Lite => {
            let _ = writeln!(out, "<result xmlns=\"{TYPES_NS}\">");
            out.push_str("  <listSession>\n");
            write_session(&mut out);
            out.push_str("  </listSession>\n<resultList>\n");
        }
    }
    for o in rows {
        out.push_str("  <objectFields>\n");
        for f in FIELDS.iter().filter(|f| fields.contains(f)) {
            for v in field_values(o, f) {
                out.push_str("      ");
                element(&mut out, f, v);
                out.push('\n');
            }
        }
        out.push_str("  </objectFields>\n");
    }
    out.push_str(match api {
        Api::Rest => "  </resultList>\n</result>\n",
        Api::Lite => "</resultList>\n</result>\n",
    });
    out
}

const HTML_HEAD: &str = "<html>\n   <head>\n      <meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\">\n      <title>";
const HTML_BANNER: &str = "</title>\n   </head>\n   <body>\n      <center>\n         <table width=\"784\" border=\"0\" cellpadding=\"0\" cellspacing=\"0\">\n            <tr>\n               <td width=\"141\" height=\"134\" valign=\"top\"><img src=\"/fedora/images/newlogo2.jpg\" width=\"141\" height=\"134\"></td>\n               <td width=\"643\" valign=\"top\">\n                  <center>\n                     <h2>Fedora Digital Object</h2>\n                     <h3>";
const HTML_BANNER_END: &str = "</h3>\n                  </center>\n               </td>\n            </tr>\n         </table>\n";
const HTML_VERSION: &str =
    "<font size=\"+1\"><strong>Version Date: </strong>\n            current\n            </font>";
const HTML_TABLE: &str = "         <table width=\"784\" border=\"1\" cellpadding=\"5\" cellspacing=\"5\" bgcolor=\"silver\">\n";
const HTML_END: &str = "         </table>\n      </center>\n   </body>\n</html>";

/// The object profile as HTML (`objects/{pid}`, `get/{pid}`); the lite form shows no state,
/// as Fedora 3's does.
pub(crate) fn object_profile_html(o: &ObjectView, api: Api) -> String {
    let mut out = format!(
        "{HTML_HEAD}Object Profile HTML Presentation{HTML_BANNER}Object Profile View{HTML_BANNER_END}         <hr>{HTML_VERSION}"
    );
    let links = [
        ("datastreams", "View the Datastreams List for this Object"),
        ("methods", "View the Methods List for this Object"),
        ("versions", "View the Version History for this Object"),
        ("objectXML", "View the XML Representation of this Object"),
    ];
    for (path, text) in links {
        let _ = write!(
            out,
            "<p></p><a href=\"/fedora/objects/{}/{path}\">{text}</a>",
            html(&o.pid)
        );
    }
    out.push_str("<hr>\n");
    out.push_str(HTML_TABLE);
    let row = |out: &mut String, label: &str, value: &str| {
        let _ = write!(
            out,
            "            <tr>\n               <td align=\"right\"><strong>{label}: </strong></td>\n               <td align=\"left\">{}</td>\n            </tr>\n",
            html(value)
        );
    };
    row(&mut out, "Object Identifier (PID)", &o.pid);
    row(&mut out, "Object Label", &o.label);
    out.push_str("            <tr>\n               <td align=\"right\" valign=\"top\"><strong>Object Content Model(s): </strong></td>\n               <td align=\"left\">\n                  <table border=\"0\">\n");
    for m in &o.models {
        let _ = write!(
            out,
            "                     <tr>\n                        <td>{}</td>\n                     </tr>\n",
            html(m)
        );
    }
    out.push_str("                  </table>\n               </td>\n            </tr>\n");
    row(&mut out, "Object Creation Date", &o.created);
    row(&mut out, "Object Last Modified", &o.last_modified);
    row(&mut out, "Object Owner Identifier", &o.owner_id);
    row(
        &mut out,
        "Object State",
        if api == Api::Rest { o.state } else { "" },
    );
    out.push_str(HTML_END);
    out
}

/// The datastream list as HTML (`objects/{pid}/datastreams`).
pub(crate) fn datastream_list_html(pid: &str, datastreams: &[DatastreamVersion]) -> String {
    let mut out = format!(
        "{HTML_HEAD}Object Datastreams HTML Presentation{HTML_BANNER}List Datastreams{HTML_BANNER_END}         <hr><font size=\"+1\"><strong>Object Identifier (PID): </strong>{}</font><p></p>{HTML_VERSION}<hr>\n{HTML_TABLE}",
        html(pid)
    );
    out.push_str("            <tr>\n               <td><b><font size=\"+2\">Datastream ID</font></b></td>\n               <td><b><font size=\"+2\">Datastream Label</font></b></td>\n               <td><b><font size=\"+2\">MIME Type</font></b></td>\n            </tr>\n");
    for d in datastreams {
        let p = &d.profile;
        let href = format!(
            "/fedora/objects/{}/datastreams/{}",
            html(pid),
            html(&p.dsid)
        );
        let _ = write!(
            out,
            "            <tr>\n               <td>\n                  <table width=\"100%\">\n                     <tr>\n                        <td width=\"65%\"><a href=\"{href}\">{}</a></td>\n                        <td width=\"35%\"><font size=\"-1\"><a href=\"{href}/content\">view content</a></font></td>\n                     </tr>\n                  </table>\n               </td>\n               <td>{}</td>\n               <td>{}</td>\n            </tr>\n",
            html(&p.dsid),
            html(&p.label),
            html(&p.mime)
        );
    }
    out.push_str(HTML_END);
    out
}
