//! Parsing and producing the HTTP headers the Fedora API uses: Link, Digest, Want-Digest,
//! Range, Content-Disposition, ETag and the conditional-request rules.

use arca_catalog::ResourceRecord;
use arca_model::{parse_instant, DigestAlgorithm, DigestValue, InteractionModel};
use http::HeaderMap;
use md5::{Digest, Md5};

/// Why the `Link` headers of a write cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkError {
    /// A value is not a list of `<target>; param=value` links, or a link has no `rel` (400).
    Malformed(String),
    /// A `rel="type"` link names a type that is not an interaction model (400 with
    /// constrainedBy, as Fedora 6 answers).
    UnknownType(String),
    /// A `rel="type"` link names a model arca cannot create yet (409).
    Unsupported(String),
}

/// Fedora's Archival Group type.
const ARCHIVAL_GROUP: &str = "http://fedora.info/definitions/v4/repository#ArchivalGroup";

/// What the `Link: <…>; rel="type"` headers of a request name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TypeLinks {
    /// The interaction model, if one is named.
    pub model: Option<InteractionModel>,
    /// Whether Fedora's ArchivalGroup type is named.
    pub archival_group: bool,
}

/// Memento types a client may name on a new resource: every resource is an original
/// resource already, so Fedora 6 accepts and ignores it.
const ORIGINAL_RESOURCE: &str = "http://mementoweb.org/ns#OriginalResource";

/// The interaction model (and Archival Group type) named by `Link: <…>; rel="type"`
/// headers.
///
/// Every `Link` value must parse (`<target>` followed by `;`-separated parameters, several
/// links separated by commas) and every link must have a `rel`; `rel=type` may be quoted or
/// not. The generic `ldp:Resource`, `ldp:RDFSource` and `ldp:Container` mean a basic
/// container unless a specific model is also named; any other type is an error.
pub fn link_type(headers: &HeaderMap) -> Result<TypeLinks, LinkError> {
    let mut found = None;
    let mut archival_group = false;
    for value in headers.get_all(http::header::LINK) {
        let Ok(value) = value.to_str() else {
            return Err(LinkError::Malformed(
                "a Link header is not valid ASCII".into(),
            ));
        };
        for link in split_links(value) {
            let (target, params) = parse_link(link).ok_or_else(|| {
                LinkError::Malformed(format!("invalid Link header value {:?}", excerpt(link)))
            })?;
            let rel = params
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("rel"))
                .map(|(_, v)| v.as_str())
                .ok_or_else(|| {
                    LinkError::Malformed(format!(
                        "the link <{}> has no rel parameter",
                        excerpt(&target)
                    ))
                })?;
            if !rel.split_whitespace().any(|r| r == "type") {
                continue;
            }
            let generic = matches!(
                target.as_str(),
                "http://www.w3.org/ns/ldp#Resource"
                    | "http://www.w3.org/ns/ldp#RDFSource"
                    | "http://www.w3.org/ns/ldp#Container"
            );
            let model = match target.as_str() {
                _ if generic => InteractionModel::BasicContainer,
                "http://www.w3.org/ns/ldp#NonRDFSource" => InteractionModel::NonRdfSource,
                "http://www.w3.org/ns/ldp#BasicContainer" => InteractionModel::BasicContainer,
                "http://www.w3.org/ns/ldp#DirectContainer" => InteractionModel::DirectContainer,
                "http://www.w3.org/ns/ldp#IndirectContainer" => InteractionModel::IndirectContainer,
                ARCHIVAL_GROUP => {
                    archival_group = true;
                    continue;
                }
                ORIGINAL_RESOURCE => continue,
                t => {
                    return Err(LinkError::UnknownType(format!(
                        "invalid interaction model <{}>",
                        excerpt(t)
                    )))
                }
            };
            // A specific model wins over the generic ldp:Resource/RDFSource/Container.
            if !(generic && found.is_some()) {
                found = Some(model);
            }
        }
    }
    Ok(TypeLinks {
        model: found,
        archival_group,
    })
}

/// How much of a header value a message quotes.
const QUOTED_CHARS: usize = 100;

fn excerpt(s: &str) -> String {
    arca_model::excerpt(s, QUOTED_CHARS)
}

/// The `rel="http://fedora.info/definitions/fcrepo#ExternalContent"` links of a request, each
/// as its target and parameters (unparseable values are skipped; [`link_type`] reports
/// them).
pub fn external_content_links(headers: &HeaderMap) -> Vec<(String, Vec<(String, String)>)> {
    links_with_rel(
        headers,
        "http://fedora.info/definitions/fcrepo#ExternalContent",
    )
}

/// The links of a request with relation `rel`, each as its target and parameters
/// (unparseable values are skipped; [`link_type`] reports them).
pub fn links_with_rel(headers: &HeaderMap, rel: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut found = Vec::new();
    for value in headers.get_all(http::header::LINK) {
        let Ok(value) = value.to_str() else { continue };
        for link in split_links(value) {
            let Some((target, params)) = parse_link(link) else {
                continue;
            };
            let has_rel = params.iter().any(|(k, v)| {
                k.eq_ignore_ascii_case("rel") && v.split_whitespace().any(|r| r == rel)
            });
            if has_rel {
                found.push((target, params));
            }
        }
    }
    found
}

fn split_links(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth_angle = false;
    let mut quoted = false;
    let mut start = 0;
    for (i, c) in value.char_indices() {
        match c {
            '<' if !quoted => depth_angle = true,
            '>' if !quoted => depth_angle = false,
            '"' if !depth_angle => quoted = !quoted,
            ',' if !depth_angle && !quoted => {
                out.push(value[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(value[start..].trim());
    out
}

/// One link: `<target>` then `; name=value` or `; name="value"` parameters (RFC 8288).
fn parse_link(link: &str) -> Option<(String, Vec<(String, String)>)> {
    let rest = link.trim().strip_prefix('<')?;
    let end = rest.find('>')?;
    let target = rest[..end].to_string();
    let after = rest[end + 1..].trim();
    if !(after.is_empty() || after.starts_with(';')) {
        return None;
    }
    let mut params = Vec::new();
    for p in after.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = p.split_once('=').unwrap_or((p, ""));
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() || k.contains(|c: char| c.is_whitespace() || c == '"') {
            return None;
        }
        let v = match v.strip_prefix('"') {
            Some(q) => q.strip_suffix('"')?,
            None => v,
        };
        params.push((k.to_string(), v.to_string()));
    }
    Some((target, params))
}

/// Why the `Digest` headers of an upload cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DigestError {
    /// Not `alg=value` pairs, or not ASCII (400).
    Malformed(String),
    /// An algorithm arca does not compute (400).
    Unsupported(String),
    /// A value that no content can have (wrong length, neither hex nor base64): a mismatch,
    /// as the specification says (409).
    Impossible(String),
}

/// The digests a client sent in `Digest` headers (`alg=value, alg=value`).
pub fn request_digests(headers: &HeaderMap) -> Result<Vec<DigestValue>, DigestError> {
    let mut out = Vec::new();
    for value in headers.get_all("digest") {
        let value = value
            .to_str()
            .map_err(|_| DigestError::Malformed("the Digest header is not ASCII".into()))?;
        for part in value.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (alg, val) = part.split_once('=').ok_or_else(|| {
                DigestError::Malformed(format!("malformed Digest value {:?}", excerpt(part)))
            })?;
            let algorithm = DigestAlgorithm::from_token(alg)
                .ok_or_else(|| DigestError::Unsupported(excerpt(alg.trim())))?;
            let digest = DigestValue::from_client(algorithm, val).ok_or_else(|| {
                DigestError::Impossible(format!(
                    "the {algorithm} digest {:?} cannot match any content: it is neither hex nor base64 of {} bytes",
                    excerpt(val.trim()),
                    algorithm.byte_len()
                ))
            })?;
            out.push(digest);
        }
    }
    Ok(out)
}

/// Algorithms asked for by `Want-Digest` (q-values honoured, `q=0` excluded), best first.
/// `Ok(None)` if no Want-Digest was sent; an error if it names only unsupported algorithms.
pub fn want_digest(headers: &HeaderMap) -> Result<Option<Vec<DigestAlgorithm>>, String> {
    let values: Vec<&str> = headers
        .get_all("want-digest")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    if values.is_empty() {
        return Ok(None);
    }
    let mut wanted: Vec<(f32, usize, DigestAlgorithm)> = Vec::new();
    let mut named = Vec::new();
    for (i, item) in values.iter().flat_map(|v| v.split(',')).enumerate() {
        let mut parts = item.split(';');
        let token = parts.next().unwrap_or("").trim();
        if token.is_empty() {
            continue;
        }
        named.push(token.to_string());
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .filter_map(|q| q.trim().parse::<f32>().ok())
            .next()
            .unwrap_or(1.0);
        if let Some(alg) = DigestAlgorithm::from_token(token) {
            if q > 0.0 {
                wanted.push((q, i, alg));
            }
        }
    }
    if wanted.is_empty() {
        return Err(format!(
            "Want-Digest names no supported algorithm ({}); supported: sha-512, sha-256, sha, md5, sha-512/256",
            named.join(", ")
        ));
    }
    wanted.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    Ok(Some(wanted.into_iter().map(|(_, _, a)| a).collect()))
}

/// A byte range request resolved against a length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeRequest {
    /// No (usable) Range header: the whole content.
    Full,
    /// Bytes `start..=end`.
    Partial {
        /// First byte.
        start: u64,
        /// Last byte (inclusive).
        end: u64,
    },
    /// The range cannot be satisfied (416).
    Unsatisfiable,
}

/// Resolves a single-range `Range: bytes=…` header against a content length. Multi-range
/// requests are answered with the full content, as RFC 9110 allows.
pub fn range(headers: &HeaderMap, len: u64) -> RangeRequest {
    let Some(value) = headers
        .get(http::header::RANGE)
        .and_then(|v| v.to_str().ok())
    else {
        return RangeRequest::Full;
    };
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return RangeRequest::Full;
    };
    if spec.contains(',') {
        return RangeRequest::Full;
    }
    let Some((a, b)) = spec.split_once('-') else {
        return RangeRequest::Full;
    };
    let (a, b) = (a.trim(), b.trim());
    let (start, end) = if a.is_empty() {
        let Ok(suffix) = b.parse::<u64>() else {
            return RangeRequest::Full;
        };
        if suffix == 0 || len == 0 {
            return RangeRequest::Unsatisfiable;
        }
        (len.saturating_sub(suffix), len - 1)
    } else {
        let Ok(start) = a.parse::<u64>() else {
            return RangeRequest::Full;
        };
        let end = if b.is_empty() {
            len.saturating_sub(1)
        } else {
            match b.parse::<u64>() {
                Ok(e) => e.min(len.saturating_sub(1)),
                Err(_) => return RangeRequest::Full,
            }
        };
        (start, end)
    };
    if start >= len || start > end {
        RangeRequest::Unsatisfiable
    } else {
        RangeRequest::Partial { start, end }
    }
}

/// The file name from `Content-Disposition: attachment; filename="…"`.
pub fn content_disposition_filename(headers: &HeaderMap) -> Option<String> {
    let value = headers
        .get(http::header::CONTENT_DISPOSITION)?
        .to_str()
        .ok()?;
    for part in value.split(';') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("filename*=") {
            let v = v.trim_matches('"');
            let encoded = v.split("''").nth(1).unwrap_or(v);
            return percent_encoding::percent_decode_str(encoded)
                .decode_utf8()
                .ok()
                .map(|s| s.into_owned());
        }
        if let Some(v) = part.strip_prefix("filename=") {
            return Some(v.trim().trim_matches('"').to_string());
        }
    }
    None
}

/// The ETag of a resource: strong for binaries, weak for RDF sources (whose
/// representation also depends on their children). Its value is the [`state_token`].
pub fn etag(record: &ResourceRecord) -> String {
    etag_with(record, &state_token(record))
}

/// [`etag`] from a [`state_token`] already computed.
pub fn etag_with(record: &ResourceRecord, token: &str) -> String {
    let is_binary = record
        .headers
        .model()
        .is_some_and(InteractionModel::is_binary);
    if is_binary {
        format!("\"{token}\"")
    } else {
        format!("W/\"{token}\"")
    }
}

/// The `X-State-Token` of a resource (Fedora API 3.10): Fedora's stored state token for a
/// binary; for an RDF source, a hash of it and of the last change among its children, so
/// that it changes whenever the representation does.
pub fn state_token(record: &ResourceRecord) -> String {
    let token = record.headers.state_token.as_deref().unwrap_or("");
    let is_binary = record
        .headers
        .model()
        .is_some_and(InteractionModel::is_binary);
    if is_binary {
        token.to_string()
    } else {
        let children = record.children_changed.unwrap_or(0);
        hex::encode(Md5::digest(format!("{token}/{children}").as_bytes()))
    }
}

/// The header a client sends to make a write conditional on the [`state_token`].
pub const IF_STATE_TOKEN: &str = "x-if-state-token";

/// Last modification, including changes of children for containers, in whole seconds.
pub fn last_modified(record: &ResourceRecord) -> std::time::SystemTime {
    let own = record
        .headers
        .last_modified_date
        .as_deref()
        .and_then(parse_instant)
        .map(|t| t.unix_timestamp_nanos())
        .unwrap_or(0);
    let nanos = own.max(record.children_changed.unwrap_or(0) as i128);
    std::time::UNIX_EPOCH + std::time::Duration::from_secs((nanos / 1_000_000_000) as u64)
}

/// Parses an HTTP date in every form clients send (RFC 9110 §5.6.7 asks recipients to
/// read all three): IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the same with a one-digit
/// day as Java's `RFC_1123_DATE_TIME` writes it (`Sun, 6 Nov 1994 08:49:37 GMT`), and the
/// obsolete RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
/// (`Sun Nov  6 08:49:37 1994`) forms. `None` for anything else, a day name that does not
/// fit the date, or a year outside 1970–9999.
pub fn parse_http_date(text: &str) -> Option<std::time::SystemTime> {
    let text = text.trim();
    if let Ok(t) = httpdate::parse_http_date(text) {
        return Some(t);
    }
    let (day_name, rest) = text.split_once(", ")?;
    let one_digit_day = rest.bytes().take_while(u8::is_ascii_digit).count() == 1;
    if !one_digit_day || day_name.len() != 3 {
        return None;
    }
    httpdate::parse_http_date(&format!("{day_name}, 0{rest}")).ok()
}

fn strip_weak(tag: &str) -> &str {
    tag.trim().strip_prefix("W/").unwrap_or(tag.trim())
}

fn etag_list_matches(list: &str, etag: &str) -> bool {
    list.split(',')
        .any(|t| t.trim() == "*" || strip_weak(t) == strip_weak(etag))
}

/// Outcome of evaluating conditional headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Go ahead.
    Proceed,
    /// 304 Not Modified (GET/HEAD only).
    NotModified,
    /// 412 Precondition Failed.
    Failed,
}

/// Evaluates If-Match, If-Unmodified-Since, If-None-Match and If-Modified-Since in the
/// order RFC 9110 §13.2.2 gives. `record` is `None` when the resource does not exist.
///
/// For writes (`is_read` false), an `X-If-State-Token` that differs from the resource's
/// [`state_token`] fails too.
pub fn evaluate(headers: &HeaderMap, record: Option<&ResourceRecord>, is_read: bool) -> Condition {
    use http::header::{IF_MATCH, IF_MODIFIED_SINCE, IF_NONE_MATCH, IF_UNMODIFIED_SINCE};
    // Most requests are unconditional: no validator to compute.
    let conditional = [
        IF_MATCH,
        IF_NONE_MATCH,
        IF_MODIFIED_SINCE,
        IF_UNMODIFIED_SINCE,
    ]
    .iter()
    .any(|name| headers.contains_key(name))
        || (!is_read && headers.contains_key(IF_STATE_TOKEN));
    if !conditional {
        return Condition::Proceed;
    }
    let get = |name: http::header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let token = record.map(state_token);
    if let (false, Some(expected)) = (is_read, headers.get(IF_STATE_TOKEN)) {
        if token.as_deref() != expected.to_str().ok().map(str::trim) {
            return Condition::Failed;
        }
    }
    let tag = record.zip(token.as_deref()).map(|(r, t)| etag_with(r, t));
    if let Some(im) = get(http::header::IF_MATCH) {
        match &tag {
            Some(t) if etag_list_matches(im, t) => {}
            _ => return Condition::Failed,
        }
    } else if let (Some(ius), Some(r)) = (get(http::header::IF_UNMODIFIED_SINCE), record) {
        if let Some(since) = parse_http_date(ius) {
            if last_modified(r) > since {
                return Condition::Failed;
            }
        }
    }
    if let Some(inm) = get(http::header::IF_NONE_MATCH) {
        let matches = match &tag {
            Some(t) => etag_list_matches(inm, t),
            None => false,
        };
        if matches {
            return if is_read {
                Condition::NotModified
            } else {
                Condition::Failed
            };
        }
    } else if let (true, Some(ims), Some(r)) =
        (is_read, get(http::header::IF_MODIFIED_SINCE), record)
    {
        if let Some(since) = parse_http_date(ims) {
            if last_modified(r) <= since {
                return Condition::NotModified;
            }
        }
    }
    Condition::Proceed
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn h(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.append(*k, HeaderValue::from_str(v).unwrap());
        }
        m
    }

    #[test]
    fn http_dates_in_every_form_clients_send() {
        let at = |secs: u64| Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs));
        let nov_6_1994 = at(784_111_777);
        for form in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            " Sun, 6 Nov 1994 08:49:37 GMT ",
        ] {
            assert_eq!(parse_http_date(form), nov_6_1994, "{form:?}");
        }
        assert_eq!(parse_http_date("Thu, 1 Jan 1970 00:00:00 GMT"), at(0));
        assert_eq!(
            parse_http_date("Tue, 3 Jun 2008 11:05:30 GMT"),
            at(1_212_491_130)
        );
        for bad in [
            "",
            "garbage",
            "Mon, 6 Nov 1994 08:49:37 GMT",
            "Sun, 6 Nov 94 08:49:37 GMT",
            "Sun, 006 Nov 1994 08:49:37 GMT",
            "Sunday, 6 Nov 1994 08:49:37 GMT",
            "Sun,  6 Nov 1994 08:49:37 GMT",
            "Sun, 6 Nov 1994 08:49:37",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "1994-11-06T08:49:37Z",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn link_types() {
        let m = h(&[(
            "link",
            "<http://www.w3.org/ns/ldp#NonRDFSource>; rel=\"type\"",
        )]);
        assert_eq!(
            link_type(&m).unwrap().model,
            Some(InteractionModel::NonRdfSource)
        );
        let m = h(&[("link", "<http://www.w3.org/ns/ldp#Resource>; rel=\"type\", <http://www.w3.org/ns/ldp#BasicContainer>;rel=type")]);
        assert_eq!(
            link_type(&m).unwrap().model,
            Some(InteractionModel::BasicContainer)
        );
        let m = h(&[("link", "<http://www.w3.org/ns/ldp#Bogus>; rel=\"type\"")]);
        assert!(link_type(&m).is_err());
        let m = h(&[("link", "<http://example.org/x>; rel=\"describedby\"")]);
        assert_eq!(link_type(&m).unwrap(), TypeLinks::default());
        let m = h(&[("link", "<http://fedora.info/definitions/v4/repository#ArchivalGroup>;rel=\"type\", <http://mementoweb.org/ns#OriginalResource>; rel=\"type\"")]);
        assert_eq!(
            link_type(&m).unwrap(),
            TypeLinks {
                model: None,
                archival_group: true
            }
        );
    }

    #[test]
    fn want_digest_q_values() {
        let m = h(&[("want-digest", "md5;q=0.3, sha-256;q=1, sha;q=0")]);
        assert_eq!(
            want_digest(&m).unwrap().unwrap(),
            vec![DigestAlgorithm::Sha256, DigestAlgorithm::Md5]
        );
        assert!(want_digest(&h(&[("want-digest", "foo, bar")])).is_err());
        assert_eq!(want_digest(&h(&[])).unwrap(), None);
    }

    #[test]
    fn ranges() {
        let r = |v: &str| range(&h(&[("range", v)]), 100);
        assert_eq!(r("bytes=0-9"), RangeRequest::Partial { start: 0, end: 9 });
        assert_eq!(r("bytes=90-"), RangeRequest::Partial { start: 90, end: 99 });
        assert_eq!(r("bytes=-10"), RangeRequest::Partial { start: 90, end: 99 });
        assert_eq!(
            r("bytes=95-200"),
            RangeRequest::Partial { start: 95, end: 99 }
        );
        assert_eq!(r("bytes=100-"), RangeRequest::Unsatisfiable);
        assert_eq!(r("bytes=0-1,5-6"), RangeRequest::Full);
    }

    #[test]
    fn digests_and_filenames() {
        let m = h(&[(
            "digest",
            "md5=5d41402abc4b2a76b9719d911017c592, SHA=qvTGHdzF6KLavt4PO0gs2a6pQ00=",
        )]);
        let d = request_digests(&m).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[1].algorithm, DigestAlgorithm::Sha1);
        assert!(request_digests(&h(&[("digest", "crc32=abc")])).is_err());
        let m = h(&[("content-disposition", "attachment; filename=\"a b.txt\"")]);
        assert_eq!(content_disposition_filename(&m).unwrap(), "a b.txt");
    }
}
