//! Small helpers every module answering requests uses to build a response: header
//! values, `Link` headers, bare responses, 416, resource URLs and RDF media types.

use std::sync::RwLock;

use arca_model::FedoraId;
use arca_rdf::{RdfFormat, RdfOutput};
use axum::body::Body;
use axum::response::Response;
use http::{header, HeaderMap, HeaderValue, StatusCode};

use crate::error::ApiError;

/// Sets header `name` to `value` (replacing what was there).
pub(crate) fn set(h: &mut HeaderMap, name: header::HeaderName, value: &str) {
    h.insert(name, header_value(value));
}

/// Sets header `name` to a value the code names: shared, not copied.
pub(crate) fn set_static(h: &mut HeaderMap, name: header::HeaderName, value: &'static str) {
    h.insert(name, HeaderValue::from_static(value));
}

/// Adds one `Link` header, `<{target}>{params}` (`params` such as `;rel="acl"`), to those
/// already there, built in one allocation.
pub(crate) fn add_link(h: &mut HeaderMap, target: &str, params: &str) {
    let mut value = String::with_capacity(target.len() + params.len() + 2);
    value.push('<');
    value.push_str(target);
    value.push('>');
    value.push_str(params);
    h.append(header::LINK, owned_header_value(value));
}

/// Adds `Link: <{namespace}{name}>;rel="type"` for a type the code names. Each such value
/// is built once and then shared: every answer about a resource carries six to nine.
pub(crate) fn add_type_link(h: &mut HeaderMap, namespace: &'static str, name: &'static str) {
    /// The values built so far, by the strings' addresses (static strings never change):
    /// one per place in the code that names a type, a few dozen.
    type Links = Vec<(&'static str, &'static str, HeaderValue)>;
    static LINKS: RwLock<Links> = RwLock::new(Vec::new());
    const MOST: usize = 256;
    let same = |(n, t, _): &&(&str, &str, HeaderValue)| {
        std::ptr::eq(*n, namespace) && std::ptr::eq(*t, name)
    };
    let known = LINKS
        .read()
        .ok()
        .and_then(|links| links.iter().find(same).map(|(_, _, v)| v.clone()));
    let value = known.unwrap_or_else(|| {
        let value = owned_header_value(format!("<{namespace}{name}>;rel=\"type\""));
        if let Ok(mut links) = LINKS.write() {
            if links.len() < MOST && !links.iter().any(|l| same(&l)) {
                links.push((namespace, name, value.clone()));
            }
        }
        value
    });
    h.append(header::LINK, value);
}

/// Whether `value` fits a header as it is (printable ASCII).
fn is_printable_ascii(value: &str) -> bool {
    value.bytes().all(|b| (b' '..=b'~').contains(&b))
}

/// A header value for `value`. URLs of resources are IRIs and may hold non-ASCII letters;
/// a header carries them as a URI, so every byte a header cannot hold is percent-encoded
/// (the IRI-to-URI mapping of RFC 3987 §3.1).
pub(crate) fn header_value(value: &str) -> HeaderValue {
    if is_printable_ascii(value) {
        if let Ok(v) = HeaderValue::from_str(value) {
            return v;
        }
    }
    let ascii =
        percent_encoding::utf8_percent_encode(value, percent_encoding::CONTROLS).to_string();
    HeaderValue::from_str(&ascii).expect("printable ASCII is a valid header value")
}

/// [`header_value`] of a string the caller no longer needs: its bytes become the value's
/// without a copy.
pub(crate) fn owned_header_value(value: String) -> HeaderValue {
    if is_printable_ascii(&value) {
        return HeaderValue::from_maybe_shared(bytes::Bytes::from(value))
            .expect("printable ASCII is a valid header value");
    }
    header_value(&value)
}

/// 416 for a range outside a binary of `len` bytes, with `Content-Range: bytes */len`.
pub(crate) fn range_not_satisfiable(len: u64) -> Response {
    let mut e = ApiError::new(
        StatusCode::RANGE_NOT_SATISFIABLE,
        format!("the range is outside the binary's {len} bytes"),
    );
    e.links.clear();
    let mut r = axum::response::IntoResponse::into_response(e);
    set(
        r.headers_mut(),
        header::CONTENT_RANGE,
        &format!("bytes */{len}"),
    );
    r
}

/// A bare response: `status` and `body`, no headers yet.
pub(crate) fn response(status: StatusCode, body: Body) -> Response {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r
}

/// The external URL of `id` below the REST root `base_url`.
pub(crate) fn url_of(base_url: &str, id: &FedoraId) -> String {
    if id.is_root() {
        // As Fedora 6: the root's URL ends with a slash.
        format!("{base_url}/")
    } else {
        let mut url = String::with_capacity(base_url.len() + 1 + id.as_str().len());
        url.push_str(base_url);
        url.push('/');
        id.push_encoded_path(&mut url);
        url
    }
}

/// The Content-Type of an RDF answer written as `output`: [`rdf_content_type`], and for
/// JSON-LD the form served when the client named a profile, as Fedora 7 does
/// (`application/ld+json;profile="http://www.w3.org/ns/json-ld#compacted"`).
pub(crate) fn rdf_output_content_type(output: RdfOutput) -> String {
    match output.format {
        RdfFormat::Turtle => format!("{};charset=utf-8", output.format.media_type()),
        _ => output.media_type(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_percent_encode_what_a_header_cannot_hold() {
        assert_eq!(
            header_value("http://h/a b").to_str().unwrap(),
            "http://h/a b"
        );
        assert_eq!(
            header_value("http://h/bücher\u{1}\u{7f}").to_str().unwrap(),
            "http://h/b%C3%BCcher%01%7F"
        );
        for value in ["http://h/a b", "http://h/bücher\u{1}\u{7f}", ""] {
            assert_eq!(owned_header_value(value.to_string()), header_value(value));
        }
    }

    #[test]
    fn type_links_are_built_once_and_read_as_built() {
        let mut h = HeaderMap::new();
        for _ in 0..2 {
            add_type_link(&mut h, "http://www.w3.org/ns/ldp#", "Resource");
        }
        add_type_link(&mut h, "", "http://www.w3.org/ns/ldp#RDFSource");
        let links: Vec<_> = h.get_all(header::LINK).iter().collect();
        assert_eq!(
            links,
            [
                "<http://www.w3.org/ns/ldp#Resource>;rel=\"type\"",
                "<http://www.w3.org/ns/ldp#Resource>;rel=\"type\"",
                "<http://www.w3.org/ns/ldp#RDFSource>;rel=\"type\""
            ]
        );
    }
}
