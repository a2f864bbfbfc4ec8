//! Datastream content (`objects/{pid}/datastreams/{ds}/content`, `get/{pid}/{ds}[/{date}]`)
//! served through arca's own binary path: ranges, HEAD and external content as for any
//! binary, with Fedora 3's headers and redirects.

use arca_fedora3::view::{DatastreamVersion, Views};
use axum::body::Body;
use axum::response::Response;
use http::{header, HeaderMap, StatusCode};

use super::render::{local_server, Api};
use super::xml::http_date;
use crate::context::Ctx;
use crate::error::ApiError;
use crate::handlers;
use crate::response::set;

/// Answers a read of datastream version `ds`. `download` asks for an attachment (REST only;
/// API-A-LITE sends no `Content-Disposition`, as Fedora 3's does not).
pub(crate) async fn serve(
    ctx: &Ctx,
    ds: &DatastreamVersion,
    api: Api,
    download: bool,
    head: bool,
    h: &HeaderMap,
    base: &str,
) -> Result<Response, ApiError> {
    let p = &ds.profile;
    let mut record = ds.binary.clone();
    if let Some(url) = record.headers.external_url.as_mut() {
        *url = local_server(url, base);
    }
    if p.control_group == "R" {
        // Fedora 3 redirects without checking the location: 307 from REST, 302 from
        // API-A-LITE.
        // Fedora 3 redirects to the location as it recorded it.
        let location = match p.location.as_str() {
            "" => record.headers.external_url.clone().unwrap_or_default(),
            l => local_server(l, base),
        };
        let status = match api {
            Api::Rest => StatusCode::TEMPORARY_REDIRECT,
            Api::Lite => StatusCode::FOUND,
        };
        let mut out = crate::response::response(status, Body::empty());
        set(out.headers_mut(), header::LOCATION, &location);
        set(out.headers_mut(), header::CONTENT_LENGTH, "0");
        return Ok(out);
    }
    let mut out = crate::response::response(StatusCode::OK, Body::empty());
    let oh = out.headers_mut();
    let mime = match p.mime.as_str() {
        "" => record
            .headers
            .mime_type
            .as_deref()
            .unwrap_or("application/octet-stream"),
        m => m,
    };
    set(oh, header::CONTENT_TYPE, mime);
    set(oh, header::ACCEPT_RANGES, "bytes");
    if api == Api::Rest {
        let kind = if download { "attachment" } else { "inline" };
        let params = handlers::filename_params(&filename(ds, mime));
        set(
            oh,
            header::CONTENT_DISPOSITION,
            &format!("{kind}; {params}"),
        );
    }
    if let Some(modified) = http_date(&p.created) {
        set(oh, header::LAST_MODIFIED, &modified);
    }
    if record.content_file.is_some() {
        set(oh, header::ETAG, &crate::headers::etag(&record));
    }
    if p.control_group == "X" && record.content_file.is_some() {
        // Inline XML is small; Fedora 3 serves it with its placeholder host resolved.
        let bytes = Views::new(&ctx.repo)
            .content(ds)
            .await
            .map_err(|e| ApiError::from_fedora3(e, false, &ctx.base_url))?;
        return Ok(in_memory(out, resolve_local_server(bytes, base), head, h));
    }
    handlers::serve_binary(ctx, &record, head, h, out).await
}

/// `bytes` with Fedora 3's placeholder host `http://local.fedora.server/` made this
/// server's, as Fedora 3 serves inline XML.
fn resolve_local_server(bytes: Vec<u8>, base: &str) -> Vec<u8> {
    const LOCAL: &[u8] = b"http://local.fedora.server/";
    if !bytes.windows(LOCAL.len()).any(|w| w == LOCAL) {
        return bytes;
    }
    let text = String::from_utf8_lossy(&bytes);
    let origin = local_server("http://local.fedora.server/", base);
    text.replace("http://local.fedora.server/", &origin)
        .into_bytes()
}

/// Answers with `bytes` (a range of them, or none for HEAD) into `out`.
fn in_memory(mut out: Response, bytes: Vec<u8>, head: bool, h: &HeaderMap) -> Response {
    let len = bytes.len() as u64;
    let (start, end) = match crate::headers::range(h, len) {
        crate::headers::RangeRequest::Full => (0, len),
        crate::headers::RangeRequest::Partial { start, end } => {
            *out.status_mut() = StatusCode::PARTIAL_CONTENT;
            set(
                out.headers_mut(),
                header::CONTENT_RANGE,
                &format!("bytes {start}-{end}/{len}"),
            );
            (start, end + 1)
        }
        crate::headers::RangeRequest::Unsatisfiable => {
            return crate::response::range_not_satisfiable(len)
        }
    };
    set(
        out.headers_mut(),
        header::CONTENT_LENGTH,
        &(end - start).to_string(),
    );
    if !head {
        *out.body_mut() = Body::from(bytes[start as usize..end as usize].to_vec());
    }
    out
}

/// The file name Fedora 3 gives a datastream's content (its `DatastreamFilenameHelper` with
/// the default settings): RELS-INT's `downloadFilename` as it is, else the label, else the
/// datastream id, each with the extension of the media type (`bin` for unknown types), and
/// the characters `\ / * ? < > : | " ; , % # $` left out.
pub(crate) fn filename(ds: &DatastreamVersion, mime: &str) -> String {
    let p = &ds.profile;
    let name = match ds.download_filename().filter(|f| !f.is_empty()) {
        Some(rels) => rels.to_string(),
        None => {
            let stem = if p.label.is_empty() {
                &p.dsid
            } else {
                &p.label
            };
            format!("{stem}.{}", extension(mime))
        }
    };
    name.chars()
        .filter(|c| !"\\/*?<>:|\";,%#$".contains(*c))
        .collect()
}

/// The file extension of a media type, from Fedora 3's `mime-to-extensions.xml`.
fn extension(mime: &str) -> &'static str {
    const TABLE: &[(&str, &str)] = &[
        ("application/java", "class"),
        ("application/java-archive", "jar"),
        ("application/mac-binhex40", "hqx"),
        ("application/mathml+xml", "mathml"),
        ("application/msword", "doc"),
        ("application/octet-stream", "bin"),
        ("application/oda", "oda"),
        ("application/ogg", "ogg"),
        ("application/pdf", "pdf"),
        ("application/postscript", "ps"),
        ("application/rdf+xml", "rdf"),
        ("application/vnd.mif", "mif"),
        ("application/vnd.mozilla.xul+xml", "xul"),
        ("application/vnd.ms-excel", "xls"),
        ("application/vnd.ms-word", "doc"),
        ("application/vnd.ms-powerpoint", "ppt"),
        ("application/vnd.oasis.opendocument.chart", "odc"),
        ("application/vnd.oasis.opendocument.database", "odb"),
        ("application/vnd.oasis.opendocument.formula", "odf"),
        ("application/vnd.oasis.opendocument.graphics", "odg"),
        (
            "application/vnd.oasis.opendocument.graphics-template",
            "otg",
        ),
        ("application/vnd.oasis.opendocument.image", "odi"),
        ("application/vnd.oasis.opendocument.presentation", "odp"),
        (
            "application/vnd.oasis.opendocument.presentation-template",
            "otp",
        ),
        ("application/vnd.oasis.opendocument.spreadsheet", "ods"),
        (
            "application/vnd.oasis.opendocument.spreadsheet-template",
            "ots",
        ),
        ("application/vnd.oasis.opendocument.text", "odt"),
        ("application/vnd.oasis.opendocument.text-master", "odm"),
        ("application/vnd.oasis.opendocument.text-template", "ott"),
        ("application/vnd.oasis.opendocument.text-web", "oth"),
        ("application/vnd.rn-realmedia", "rm"),
        ("application/vnd.wap.wmlc", "wmlc"),
        ("application/vnd.wap.wmlscriptc", "wmlscriptc"),
        ("application/voicexml+xml", "vxml"),
        ("application/x-aim", "aim"),
        ("application/x-bcpio", "bcpio"),
        ("application/x-compress", "z"),
        ("application/x-cpio", "cpio"),
        ("application/x-csh", "csh"),
        ("application/x-dvi", "dvi"),
        ("application/x-gtar", "gtar"),
        ("application/x-gzip", "gz"),
        ("application/x-hdf", "hdf"),
        ("application/xhtml+xml", "xhtml"),
        ("application/x-java-jnlp-file", "jnlp"),
        ("application/x-latex", "latex"),
        ("application/xml", "xml"),
        ("application/xml-dtd", "dtd"),
        ("application/x-netcdf", "cdf"),
        ("application/x-sh", "sh"),
        ("application/x-shar", "shar"),
        ("application/x-shockwave-flash", "swf"),
        ("application/xslt+xml", "xslt"),
        ("application/x-stuffit", "sit"),
        ("application/x-sv4cpio", "sv4cpio"),
        ("application/x-sv4crc", "sv4crc"),
        ("application/x-tar", "tar"),
        ("application/x-tcl", "tcl"),
        ("application/x-tex", "tex"),
        ("application/x-texinfo", "texinfo"),
        ("application/x-troff", "tr"),
        ("application/x-troff-man", "man"),
        ("application/x-troff-me", "me"),
        ("application/x-troff-ms", "ms"),
        ("application/x-ustar", "ustar"),
        ("application/x-visio", "vsd"),
        ("application/x-wais-source", "src"),
        ("application/x-x509-ca-cert", "cer"),
        ("application/zip", "zip"),
        ("audio/basic", "au"),
        ("audio/midi", "mid"),
        ("audio/mpeg", "mp3"),
        ("audio/x-aiff", "aif"),
        ("audio/x-midi", "smf"),
        ("audio/x-mpeg", "mpa"),
        ("audio/x-mpegurl", "m3u"),
        ("audio/x-scpls", "pls"),
        ("audio/x-wav", "wav"),
        ("image/bmp", "bmp"),
        ("image/gif", "gif"),
        ("image/ief", "ief"),
        ("image/jpeg", "jpg"),
        ("image/pict", "pic"),
        ("image/png", "png"),
        ("image/svg+xml", "svg"),
        ("image/tiff", "tiff"),
        ("image/vnd.wap.wbmp", "wbmp"),
        ("image/x-cmu-raster", "ras"),
        ("image/x-icon", "ico"),
        ("image/x-jg", "art"),
        ("image/x-macpaint", "pnt"),
        ("image/x-photoshop", "psd"),
        ("image/x-portable-anymap", "pnm"),
        ("image/x-portable-bitmap", "pbm"),
        ("image/x-portable-graymap", "pgm"),
        ("image/x-portable-pixmap", "ppm"),
        ("image/x-quicktime", "qtif"),
        ("image/x-rgb", "rgb"),
        ("image/x-xbitmap", "xbm"),
        ("image/x-xpixmap", "xpm"),
        ("image/x-xwindowdump", "xwd"),
        ("model/vrml", "vrml"),
        ("text/css", "css"),
        ("text/html", "html"),
        ("text/javascript", "js"),
        ("text/plain", "txt"),
        ("text/richtext", "rtx"),
        ("text/rtf", "rtf"),
        ("text/tab-separated-values", "tsv"),
        ("text/vnd.sun.j2me.app-descriptor", "jad"),
        ("text/vnd.wap.wml", "wml"),
        ("text/vnd.wap.wmlscript", "wmls"),
        ("text/x-component", "htc"),
        ("text/xml", "xml"),
        ("text/x-setext", "etx"),
        ("video/mp4", "mp4"),
        ("video/mpeg", "mpg"),
        ("video/quicktime", "mov"),
        ("video/x-dv", "dv"),
        ("video/x-ms-asf", "asf"),
        ("video/x-msvideo", "avi"),
        ("video/x-ms-wmv", "wmv"),
        ("video/x-rad-screenplay", "avx"),
        ("video/x-sgi-movie", "movie"),
    ];
    TABLE
        .iter()
        .find(|(m, _)| *m == mime)
        .map_or("bin", |(_, e)| e)
}

#[cfg(test)]
mod tests {
    use arca_catalog::ResourceRecord;
    use arca_fedora3::view::DatastreamProfile;
    use arca_model::{FedoraId, ResourceHeaders};

    use super::*;

    fn ds(label: &str, mime: &str) -> DatastreamVersion {
        DatastreamVersion {
            profile: DatastreamProfile {
                pid: "demo:5".into(),
                dsid: "DS1".into(),
                label: label.into(),
                version_id: "DS1.0".into(),
                created: String::new(),
                state: "A".into(),
                mime: mime.into(),
                format_uri: String::new(),
                control_group: "M".into(),
                size: 0,
                versionable: true,
                alt_ids: Vec::new(),
                location: String::new(),
                location_type: String::new(),
                checksum_type: "DISABLED".into(),
                checksum: "none".into(),
                position: None,
            },
            binary: ResourceRecord {
                id: FedoraId::from_path("demo:5/DS1").unwrap(),
                parent: None,
                ocfl_id: "info:fedora/demo:5".into(),
                headers: ResourceHeaders::from_json(
                    br#"{"id":"info:fedora/x","interactionModel":"http://www.w3.org/ns/ldp#NonRDFSource"}"#,
                )
                .unwrap(),
                content_file: None,
                rdf: None,
                children_changed: None,
            },
            rels_int: Vec::new(),
        }
    }

    #[test]
    fn file_names_as_fedora_3_gives_them() {
        let cases = [
            (
                "Dublin Core Record for this object",
                "text/xml",
                "Dublin Core Record for this object.xml",
            ),
            ("paper.pdf", "application/pdf", "paper.pdf.pdf"),
            (
                "Grüße 世界.txt",
                "text/plain; charset=UTF-8",
                "Grüße 世界.txt.bin",
            ),
            (
                "Fedora Relationship Metadata.",
                "application/rdf+xml",
                "Fedora Relationship Metadata..rdf",
            ),
            (
                "RDF Statements about this object's datastream(s)",
                "application/rdf+xml",
                "RDF Statements about this object's datastream(s).rdf",
            ),
            ("a: b/c?", "image/jpeg", "a bc.jpg"),
            ("", "image/png", "DS1.png"),
        ];
        for (label, mime, want) in cases {
            assert_eq!(filename(&ds(label, mime), mime), want, "{label}");
        }
    }
}
