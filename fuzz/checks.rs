//! What each fuzz target checks, one public function per target taking the whole raw fuzz
//! input (its first byte is the selector). Shared by the `cargo fuzz` targets in
//! `fuzz/fuzz_targets/` and by `crates/http/tests/it/fuzz_regressions.rs`, which replays
//! `fuzz/regressions/<target>/` on the stable toolchain, so both run the same code.
//! A violated invariant panics.

// Each fuzz target uses only one of these functions.
#![allow(dead_code)]

use std::collections::BTreeSet;

use arca_catalog::ResourceRecord;
use arca_http::headers::{self as http_headers, RangeRequest};
use arca_model::{parse_instant, DigestAlgorithm, FedoraId, ResourceHeaders};
use arca_ocfl::layout::HashedNTuple;
use arca_ocfl::{encode_logical_path, Inventory, VersionNum};
use arca_rdf::{IdMapper, ParseLimits, Prefer, RdfFormat};
use http::header::{self, HeaderName, HeaderValue};
use http::HeaderMap;
use percent_encoding::percent_decode_str;

const BASE: &str = "http://localhost:8080/rest";
const RESOURCE: &str = "http://localhost:8080/rest/a";

// ---------------------------------------------------------------- ids

/// Paths and ids: `FedoraId::from_path` / `from_internal` / `child`, and request paths and
/// Slugs percent-decoded as the HTTP layer does. Every id that parses must round-trip through
/// `path()`, `as_str()` and `encoded_path()`.
///
/// Input: first byte chooses the parser, the rest is the text.
pub fn ids(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match selector % 4 {
        // A decoded path relative to the REST base.
        0 => {
            if let Ok(id) = FedoraId::from_path(text) {
                check_id(&id);
            }
        }
        // A raw request path, percent-decoded first (as `parse_operation` does).
        1 => {
            if let Ok(decoded) = percent_decode_str(text).decode_utf8() {
                if let Ok(id) = FedoraId::from_path(&decoded) {
                    check_id(&id);
                }
            }
        }
        // An internal id as found in `.fcrepo` headers and inventories.
        2 => {
            if let Ok(id) = FedoraId::from_internal(text) {
                check_id(&id);
            }
        }
        // `parent\nslug`: a POST with a (percent-encoded) Slug.
        _ => {
            let (parent, slug) = text.split_once('\n').unwrap_or(("", text));
            let Ok(parent) = FedoraId::from_path(parent) else {
                return;
            };
            let Ok(slug) = percent_decode_str(slug.trim()).decode_utf8() else {
                return;
            };
            if let Ok(child) = parent.child(&slug) {
                check_id(&child);
                // An empty slug (or only slashes below the root) names the parent itself.
                assert!(
                    child.is_descendant_of(&parent) || child == parent,
                    "{child} not below {parent} (slug {slug:?})"
                );
            }
        }
    }
}

fn check_id(id: &FedoraId) {
    assert_eq!(
        FedoraId::from_path(id.path()).as_ref(),
        Ok(id),
        "path() round trip"
    );
    assert_eq!(
        FedoraId::from_internal(id.as_str()).as_ref(),
        Ok(id),
        "as_str() round trip"
    );
    let encoded = id.encoded_path();
    let decoded = percent_decode_str(&encoded)
        .decode_utf8()
        .expect("an encoded path decodes");
    assert_eq!(decoded, id.path(), "encoded_path() round trip");
    assert!(id.iri().starts_with("info:fedora"));
    let base = id.base();
    if id.is_description() {
        assert_eq!(&base.description(), id);
    }
    let _ = (id.is_acl(), id.is_root(), id.last_segment());
    if let Some(parent) = id.path_parent() {
        assert!(id.is_descendant_of(&parent), "{id} below {parent}");
        assert!(!parent.is_descendant_of(id));
    } else {
        assert!(id.is_root());
    }
}

// ---------------------------------------------------------------- headers

/// Request headers: `Link`, `Prefer`, `Range`, `Digest`, `Want-Digest`,
/// `Content-Disposition`, the conditional headers and `Accept`.
///
/// Input: first byte chooses the header (low nibble) and, for `Range`, the content length
/// (high nibble); the rest, split at `\n`, gives one header value per line (values
/// `HeaderValue::from_bytes` rejects are skipped, as hyper would never deliver them).
pub fn headers(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let name: HeaderName = match selector & 0x0f {
        0 | 1 => header::LINK,
        2 => HeaderName::from_static("prefer"),
        3 | 4 => header::RANGE,
        5 => HeaderName::from_static("digest"),
        6 => HeaderName::from_static("want-digest"),
        7 => header::CONTENT_DISPOSITION,
        8 => header::IF_MATCH,
        9 => header::IF_NONE_MATCH,
        10 => header::IF_MODIFIED_SINCE,
        11 => header::IF_UNMODIFIED_SINCE,
        12 => header::ACCEPT,
        13 => HeaderName::from_static("slug"),
        _ => header::CONTENT_TYPE,
    };
    let mut map = HeaderMap::new();
    for line in rest.split(|&b| b == b'\n') {
        if let Ok(value) = HeaderValue::from_bytes(line) {
            map.append(name.clone(), value);
        }
    }

    match selector & 0x0f {
        0 | 1 => {
            let _ = http_headers::link_type(&map);
            let _ = http_headers::external_content_links(&map);
        }
        2 => {
            let prefer =
                Prefer::parse(map.get_all("prefer").iter().filter_map(|v| v.to_str().ok()));
            let _ = prefer.wants("http://www.w3.org/ns/ldp#PreferContainment");
            let _ = prefer.wants("http://fedora.info/definitions/fcrepo#ServerManaged");
        }
        3 | 4 => {
            let len = LENGTHS[(selector >> 4) as usize];
            match http_headers::range(&map, len) {
                RangeRequest::Partial { start, end } => {
                    assert!(start <= end && end < len, "{start}-{end} of {len}");
                }
                RangeRequest::Full | RangeRequest::Unsatisfiable => {}
            }
        }
        5 => {
            if let Ok(digests) = http_headers::request_digests(&map) {
                for d in digests {
                    assert_eq!(d.hex.len(), d.algorithm.byte_len() * 2);
                }
            }
        }
        6 => match http_headers::want_digest(&map) {
            Ok(Some(algs)) => assert!(!algs.is_empty()),
            Ok(None) => assert!(map
                .get_all("want-digest")
                .iter()
                .all(|v| v.to_str().is_err())),
            Err(e) => assert!(!e.is_empty()),
        },
        7 => {
            let _ = http_headers::content_disposition_filename(&map);
        }
        8..=11 => {
            for binary in [false, true] {
                let r = record(binary);
                for is_read in [false, true] {
                    let _ = http_headers::evaluate(&map, Some(&r), is_read);
                    let _ = http_headers::evaluate(&map, None, is_read);
                }
            }
        }
        12 => {
            let accept = map.get(header::ACCEPT).and_then(|v| v.to_str().ok());
            let _ = RdfFormat::negotiate(accept);
        }
        13 => {
            // The Slug of a POST, decoded and appended to a parent as `mint_id` does.
            if let Some(slug) = map.get("slug").and_then(|v| v.to_str().ok()) {
                if let Ok(slug) = percent_decode_str(slug.trim()).decode_utf8() {
                    let parent = FedoraId::from_path("a").unwrap();
                    if let Ok(child) = parent.child(&slug) {
                        let _ = child.encoded_path();
                    }
                }
            }
        }
        _ => {
            for v in map.get_all(header::CONTENT_TYPE) {
                if let Ok(v) = v.to_str() {
                    let _ = RdfFormat::from_media_type(v);
                }
            }
        }
    }
}

/// The content lengths a `Range` is evaluated against (high nibble of the selector).
const LENGTHS: [u64; 16] = [
    0,
    1,
    2,
    9,
    10,
    100,
    1023,
    1 << 20,
    1 << 32,
    (1 << 32) + 1,
    i64::MAX as u64,
    (i64::MAX as u64) + 1,
    u64::MAX - 1,
    u64::MAX,
    7,
    65536,
];

/// A stored container (or binary) the conditional headers are evaluated against.
fn record(binary: bool) -> ResourceRecord {
    let json = format!(
        r#"{{"id":"info:fedora/a","parent":"info:fedora","stateToken":"6A774F59236CFF0DE04179862D6B8336","interactionModel":"{}","createdDate":"2026-11-21T20:23:50.058929100Z","lastModifiedDate":"2026-11-21T20:23:50.165305662Z","archivalGroup":false,"objectRoot":true,"deleted":false,"headersVersion":"1.0"}}"#,
        if binary {
            "http://www.w3.org/ns/ldp#NonRDFSource"
        } else {
            "http://www.w3.org/ns/ldp#BasicContainer"
        }
    );
    ResourceRecord {
        id: FedoraId::from_path("a").unwrap(),
        parent: Some(FedoraId::root()),
        ocfl_id: "info:fedora/a".into(),
        headers: ResourceHeaders::from_json(json.as_bytes()).unwrap(),
        content_file: None,
        rdf: None,
        children_changed: if binary {
            None
        } else {
            Some(1_800_000_000_000_000_000)
        },
    }
}

// ---------------------------------------------------------------- rdf

const FORMATS: [RdfFormat; 4] = [
    RdfFormat::Turtle,
    RdfFormat::NTriples,
    RdfFormat::JsonLd,
    RdfFormat::RdfXml,
];

/// RDF request bodies: Turtle, N-Triples, JSON-LD and RDF/XML through `arca_rdf::parse`.
/// A graph that parses must serialize in every format without panicking, the storage form
/// (`to_ntriples`) must parse back to the same set of triples, and every serialization must
/// parse back with our own parser.
///
/// Input: first byte chooses the format, the rest is the body.
pub fn rdf(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let format = FORMATS[(selector % 4) as usize];
    let mapper = IdMapper::new(BASE);
    let limits = ParseLimits::default();
    let triples = match arca_rdf::parse(body, format, RESOURCE, &mapper, &limits) {
        Ok(triples) => triples,
        Err(e) => {
            assert!(!e.to_string().is_empty(), "empty error message");
            return;
        }
    };

    // The storage form round-trips exactly.
    let stored = arca_rdf::to_ntriples(&triples);
    let back = arca_rdf::parse_ntriples(&stored).unwrap_or_else(|e| {
        panic!(
            "storage form does not parse: {e}\n{}",
            String::from_utf8_lossy(&stored)
        )
    });
    assert_eq!(
        triple_set(&back),
        triple_set(&triples),
        "storage form round trip"
    );
    assert_eq!(arca_rdf::to_ntriples(&back), stored);

    // Every response format can be written (or fails cleanly) and read back.
    for out in FORMATS {
        match arca_rdf::serialize(&triples, out, &mapper) {
            Ok(bytes) => {
                if let Err(e) = arca_rdf::parse(&bytes, out, RESOURCE, &mapper, &limits) {
                    panic!(
                        "{out:?} output does not parse back: {e}\n{}",
                        String::from_utf8_lossy(&bytes)
                    );
                }
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}

fn triple_set(triples: &[oxrdf::Triple]) -> BTreeSet<String> {
    triples.iter().map(|t| t.to_string()).collect()
}

// ---------------------------------------------------------------- sparql

const CURRENT: &str = "\
<info:fedora/a> <http://purl.org/dc/terms/title> \"A\" .
<info:fedora/a> <http://purl.org/dc/terms/title> \"Ä\"@de .
<info:fedora/a> <http://purl.org/dc/terms/hasPart> <info:fedora/a/b> .
<info:fedora/a> <http://purl.org/dc/terms/extent> \"42\"^^<http://www.w3.org/2001/XMLSchema#integer> .
<info:fedora/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/Thing> .
<info:fedora/a#frag> <http://example.org/p> _:b0 .
_:b0 <http://example.org/q> <http://example.org/o> .
";

/// SPARQL Update (`PATCH` bodies) through `arca_rdf::apply_sparql_update`, on a few fixed
/// triples of the resource `http://localhost:8080/rest/a`. The result must be storable.
///
/// Input: the update text (first byte chooses the current graph: even `CURRENT`, odd empty).
pub fn sparql(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(update) = std::str::from_utf8(rest) else {
        return;
    };
    let current = if selector.is_multiple_of(2) {
        arca_rdf::parse_ntriples(CURRENT.as_bytes()).unwrap()
    } else {
        Vec::new()
    };
    let mapper = IdMapper::new(BASE);
    // A slow update is cut off after 2 s (an `RdfError::Limit`), well before libFuzzer's
    // 10 s timeout, which then only catches an update that is not cut off.
    let limits = ParseLimits {
        max_parse_time: std::time::Duration::from_secs(2),
        ..ParseLimits::default()
    };
    match arca_rdf::apply_sparql_update(&current, update, RESOURCE, &mapper, &limits) {
        Ok(triples) => {
            let stored = arca_rdf::to_ntriples(&triples);
            let back = arca_rdf::parse_ntriples(&stored).unwrap_or_else(|e| {
                panic!(
                    "updated graph's storage form does not parse: {e}\n{}",
                    String::from_utf8_lossy(&stored)
                )
            });
            assert_eq!(arca_rdf::to_ntriples(&back), stored);
        }
        Err(e) => assert!(!e.to_string().is_empty(), "empty error message"),
    }
}

// ---------------------------------------------------------------- storage

/// What arca reads back from storage: `inventory.json`, the `.fcrepo/*.json` resource
/// headers, the layout extension's `config.json`, and the timestamps, digests and ids inside
/// them. Whatever parses must serialize and parse back to the same value.
///
/// Input: first byte chooses the parser, the rest is the file.
pub fn storage(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match selector % 4 {
        0 => inventory(rest),
        1 => resource_headers(rest),
        2 => layout_config(rest),
        _ => {
            if let Ok(text) = std::str::from_utf8(rest) {
                small_values(text);
            }
        }
    }
}

fn inventory(bytes: &[u8]) {
    let Ok(inv) = Inventory::from_slice(bytes) else {
        return;
    };
    let again = Inventory::from_slice(&inv.to_bytes()).expect("written inventory parses");
    assert_eq!(again, inv);
    let _ = inv.content_dir();
    let _ = FedoraId::from_internal(&inv.id);
    let state = inv.head_state();
    for (logical, digest) in &state {
        let _ = inv.resolve_head(logical);
        let _ = inv.content_path_for(digest);
        let _ = encode_logical_path(logical);
    }
    for (name, version) in &inv.versions {
        let _ = name.to_string();
        let _ = parse_instant(&version.created);
    }
}

fn resource_headers(bytes: &[u8]) {
    let Ok(h) = ResourceHeaders::from_json(bytes) else {
        return;
    };
    let again = ResourceHeaders::from_json(&h.to_json()).expect("written headers parse");
    assert_eq!(again, h);
    let _ = h.model();
    let id = FedoraId::from_internal(&h.id);
    if let Some(p) = &h.parent {
        let _ = FedoraId::from_internal(p);
    }
    for d in h.digests.iter().flatten() {
        let _ = DigestAlgorithm::parse_urn(d);
    }
    for date in [
        &h.created_date,
        &h.last_modified_date,
        &h.memento_created_date,
    ]
    .into_iter()
    .flatten()
    {
        let _ = parse_instant(date);
    }
    // What the HTTP layer derives from a stored header.
    let record = ResourceRecord {
        id: id.unwrap_or_else(|_| FedoraId::root()),
        parent: None,
        ocfl_id: h.id.clone(),
        headers: h,
        content_file: None,
        rdf: None,
        children_changed: None,
    };
    let _ = http_headers::etag(&record);
    let _ = http_headers::last_modified(&record);
}

fn layout_config(bytes: &[u8]) {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return;
    };
    if let Ok(layout) = HashedNTuple::from_config(&json) {
        let _ = layout.object_path("info:fedora");
        let _ = layout.object_path("info:fedora/a/b");
    }
}

fn small_values(text: &str) {
    if let Some(t) = parse_instant(text) {
        let _ = arca_model::format_instant(t);
    }
    if let Some(d) = DigestAlgorithm::parse_urn(text) {
        let _ = d.urn();
    }
    if let Some(v) = VersionNum::parse(text) {
        let _ = v.to_string();
    }
}
