//! Small helpers every module answering requests uses to build a response: header
//! values, `Link` headers, bare responses, 416, resource URLs and RDF media types.

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

/// Adds one `Link` header (`<url>; rel="…"`) to those already there.
pub(crate) fn add_link(h: &mut HeaderMap, value: String) {
    h.append(header::LINK, header_value(&value));
}

/// A header value for `value`. URLs of resources are IRIs and may hold non-ASCII letters;
/// a header carries them as a URI, so every byte a header cannot hold is percent-encoded
/// (the IRI-to-URI mapping of RFC 3987 §3.1).
pub(crate) fn header_value(value: &str) -> HeaderValue {
    if value.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        if let Ok(v) = HeaderValue::from_str(value) {
            return v;
        }
    }
    let ascii =
        percent_encoding::utf8_percent_encode(value, percent_encoding::CONTROLS).to_string();
    HeaderValue::from_str(&ascii).expect("printable ASCII is a valid header value")
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
        format!("{base_url}/{}", id.encoded_path())
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
    }
}
