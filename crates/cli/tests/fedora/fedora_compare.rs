//! arca answers as the real Fedora 6.1 does (issue 7, item 7).
//!
//! One Fedora (`common::fedora`) runs for the whole test, beside two arcas:
//!
//! 1. **Side by side**: the same request sequence ([`script`]: containers with user
//!    triples, references and hash URIs, nesting, a ghost node, binaries and descriptions,
//!    direct and indirect containers, tombstones, an Archival Group, and refused requests)
//!    goes to Fedora and to a fresh arca; every answer's status and `Location` must agree.
//!    Then every resource Fedora lists (descriptions, tombstones and missing paths too) is
//!    read from both with GET and HEAD, with and without `Prefer`, and the answers compared
//!    field by field ([`Answer`]), dates and state tokens aside. Versions (§4) have a
//!    sequence of their own ([`versions`]: writes in two seconds, two `POST fcr:versions`
//!    in one, then TimeMap, memento, TimeGate and refusals), memento names masked.
//! 2. **Same root**: Fedora is stopped, its OCFL root copied into a fresh arca data
//!    directory, and arca serving it must give the same answers, now dates included (the
//!    versioning reads too, of the same mementos).
//!
//! Known deliberate differences are listed in [`KNOWN`], each with its reason; an entry
//! that no longer matches anything fails the test too, so the list stays honest.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Instant;

use bytes::Bytes;
use hyper::Method;

use crate::common;
use crate::common::fedora::{Fedora, AUTHORIZATION};
use crate::common::{step, Arca, Http, Step};

const LDP: &str = "http://www.w3.org/ns/ldp#";
const NT: &str = "application/n-triples";

fn type_link(model: &str) -> String {
    format!("<{model}>; rel=\"type\"")
}

/// The request sequence sent to both servers. Paths are relative to the REST root; `{B}`
/// in a body stands for the server's base URL.
fn script() -> Vec<Step> {
    use Method as M;
    let ttl = ("content-type", "text/turtle");
    let sparql = ("content-type", "application/sparql-update");
    let direct = type_link(&format!("{LDP}DirectContainer"));
    let indirect = type_link(&format!("{LDP}IndirectContainer"));
    let ag = type_link("http://fedora.info/definitions/v4/repository#ArchivalGroup");
    let nonrdf = type_link(&format!("{LDP}NonRDFSource"));
    vec![
        // Basic containers, references both ways, hash URIs, nesting.
        step(M::PUT, "/c1", &[ttl], "@prefix dc: <http://purl.org/dc/terms/> .\n<> dc:title \"C1\" ; dc:subject <#topic> .\n<#topic> dc:title \"a hash URI\" ."),
        step(M::POST, "", &[ttl, ("slug", "c2")], "<> <http://purl.org/dc/terms/relation> <{B}/c1> ; <http://purl.org/dc/terms/title> \"C2\"@en ."),
        step(M::PATCH, "/c1", &[sparql], "INSERT DATA { <> <http://purl.org/dc/terms/relation> <{B}/c2> . <> <http://example.org/count> 3 }"),
        step(M::PUT, "/c1/child", &[ttl], "<> <http://purl.org/dc/terms/isPartOf> <{B}/c1> ."),
        step(M::POST, "/c1/child", &[ttl, ("slug", "grandchild")], ""),
        // A ghost node: a/b created, a never.
        step(M::POST, "", &[ttl, ("slug", "a/b")], ""),
        // Binaries and descriptions.
        step(M::PUT, "/c1/bin", &[("content-type", "text/plain"), ("content-disposition", "attachment; filename=\"hello.txt\"")], "hello"),
        step(M::POST, "/c1", &[("content-type", "application/octet-stream"), ("slug", "raw")], "\u{0}\u{1}\u{2}"),
        step(M::PUT, "/c1/bin/fcr:metadata", &[ttl, ("prefer", "handling=lenient; received=\"minimal\"")], "<> <http://purl.org/dc/terms/title> \"the greeting\" ; <http://purl.org/dc/terms/source> <{B}/c2> ."),
        step(M::PATCH, "/c1/raw/fcr:metadata", &[sparql], "INSERT DATA { <> <http://purl.org/dc/terms/title> \"raw bytes\" }"),
        // A turtle body sent as a binary.
        step(M::PUT, "/c1/ttlbin", &[ttl, ("link", nonrdf.as_str())], "<> <http://purl.org/dc/terms/title> \"not parsed\" ."),
        // Direct containers: defaults; membershipResource + hasMemberRelation on another
        // resource; isMemberOfRelation.
        step(M::PUT, "/dc1", &[ttl, ("link", direct.as_str())], ""),
        step(M::PUT, "/dc1/m1", &[ttl], ""),
        step(M::PUT, "/dc2", &[ttl, ("link", direct.as_str())], "<> <http://www.w3.org/ns/ldp#membershipResource> <{B}/c2> ; <http://www.w3.org/ns/ldp#hasMemberRelation> <http://pcdm.org/models#hasMember> ."),
        step(M::PUT, "/dc2/m1", &[ttl], ""),
        step(M::PUT, "/dc2/m2", &[("content-type", "text/plain")], "member binary"),
        step(M::PUT, "/dc3", &[ttl, ("link", direct.as_str())], "<> <http://www.w3.org/ns/ldp#membershipResource> <{B}/c1> ; <http://www.w3.org/ns/ldp#isMemberOfRelation> <http://pcdm.org/models#memberOf> ."),
        step(M::PUT, "/dc3/m1", &[ttl], ""),
        // An indirect container with proxies.
        step(M::PUT, "/ic1", &[ttl, ("link", indirect.as_str())], "<> <http://www.w3.org/ns/ldp#membershipResource> <{B}/c2> ; <http://www.w3.org/ns/ldp#hasMemberRelation> <http://www.openarchives.org/ore/terms/aggregates> ; <http://www.w3.org/ns/ldp#insertedContentRelation> <http://www.openarchives.org/ore/terms/proxyFor> ."),
        step(M::PUT, "/ic1/p1", &[ttl], "<> <http://www.openarchives.org/ore/terms/proxyFor> <{B}/c1/child> ."),
        step(M::PUT, "/ic1/p2", &[ttl], "<> <http://www.openarchives.org/ore/terms/proxyFor> <{B}/c1/bin> ."),
        // Deletions: a container with a child, a binary, a member of a direct container.
        step(M::PUT, "/gone", &[ttl], ""),
        step(M::PUT, "/gone/kid", &[ttl], ""),
        step(M::DELETE, "/gone", &[], ""),
        step(M::PUT, "/c1/gonebin", &[("content-type", "text/plain")], "bye"),
        step(M::DELETE, "/c1/gonebin", &[], ""),
        step(M::PUT, "/dc1/m2", &[ttl], ""),
        step(M::DELETE, "/dc1/m2", &[], ""),
        // Purged: no trace.
        step(M::PUT, "/purged", &[ttl], ""),
        step(M::DELETE, "/purged", &[], ""),
        step(M::DELETE, "/purged/fcr:tombstone", &[], ""),
        // An Archival Group with parts.
        step(M::PUT, "/ag", &[ttl, ("link", ag.as_str())], "<> <http://purl.org/dc/terms/title> \"AG\" ."),
        step(M::PUT, "/ag/part", &[ttl], ""),
        step(M::PUT, "/ag/part/file", &[("content-type", "text/plain")], "in the AG"),
        // Refusals.
        step(M::PUT, "/c1", &[ttl, ("link", nonrdf.as_str())], ""),
        step(M::PUT, "/c1/bin", &[ttl, ("link", direct.as_str())], ""),
        step(M::PUT, "/dc4", &[ttl, ("link", direct.as_str())], "<> <http://www.w3.org/ns/ldp#membershipResource> <{B}/c1> , <{B}/c2> ."),
        step(M::PUT, "/c1", &[ttl], "<> <http://fedora.info/definitions/v4/repository#created> \"2020-01-01T00:00:00Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime> ."),
        step(M::PATCH, "/c1", &[sparql], "INSERT DATA { <> <http://www.w3.org/ns/ldp#contains> <{B}/c2> }"),
        step(M::PUT, "/a", &[ttl], ""),
        step(M::PUT, "/gone", &[ttl], ""),
        step(M::POST, "/c1/bin", &[ttl], ""),
        step(M::PUT, "/c1/nothere/fcr:metadata", &[ttl], ""),
        step(M::DELETE, "/nothere", &[], ""),
        step(M::PATCH, "/c1", &[sparql], "INSERT DATA { <> <http://purl.org/dc/terms/title> \"unterminated }"),
        step(M::POST, "", &[("content-type", "text/turtle"), ("slug", "bad")], "<> <http://purl.org/dc/terms/title> \"x ."),
        // Turtle as Jena reads it: directives and the last statement without their dots
        // (issue 38.6); a dangling comma, a missing object, an unterminated IRI stay refused.
        step(M::PUT, "/t1", &[ttl], "@prefix dc: <http://purl.org/dc/terms/>\n@base <{B}/t1>\n<> dc:title \"no dots\" ; dc:relation <{B}/c1> ;"),
        step(M::POST, "", &[ttl, ("slug", "t2")], "PREFIX dc: <http://purl.org/dc/terms/>\n<> dc:title \"last\" . <#h> dc:title 4.2 # the end"),
        step(M::PUT, "/c1/bin/fcr:metadata", &[ttl, ("prefer", "handling=lenient; received=\"minimal\"")], "@prefix dc: <http://purl.org/dc/terms/>\n<> dc:title \"the greeting\" ; dc:source <{B}/c2>"),
        step(M::PUT, "/t3", &[ttl], "<> <http://purl.org/dc/terms/title> \"a\" ,"),
        step(M::PUT, "/t3", &[ttl], "<> <http://purl.org/dc/terms/title>"),
        step(M::PUT, "/t3", &[ttl], "<> <http://purl.org/dc/terms/title> <{B}/c1"),
        step(M::PUT, "/t3", &[ttl], "<> <http://purl.org/dc/terms/title> \"a\" <> <http://purl.org/dc/terms/title> \"b\" ."),
    ]
}

/// Paths read besides those Fedora lists: tombstones, the ghost node, missing resources.
const EXTRA_PATHS: &[&str] = &[
    "/a",
    "/gone",
    "/gone/kid",
    "/c1/gonebin",
    "/c1/gonebin/fcr:metadata",
    "/dc1/m2",
    "/purged",
    "/nothere",
    "/gone/fcr:tombstone",
];

/// The reads made of every RDF source: label and extra request headers.
const RDF_READS: &[(&str, &str)] = &[
    ("GET", ""),
    ("GET inbound", "return=representation; include=\"http://fedora.info/definitions/fcrepo#PreferInboundReferences\""),
    ("GET omit membership", "return=representation; omit=\"http://www.w3.org/ns/ldp#PreferMembership\""),
    ("GET omit containment", "return=representation; omit=\"http://www.w3.org/ns/ldp#PreferContainment\""),
    ("GET minimal", "return=minimal"),
    ("GET omit minimal container", "return=representation; omit=\"http://www.w3.org/ns/ldp#PreferMinimalContainer\""),
    ("GET omit minimal container and membership", "return=representation; omit=\"http://www.w3.org/ns/ldp#PreferMinimalContainer http://www.w3.org/ns/ldp#PreferMembership\""),
    ("GET omit server managed", "return=representation; omit=\"http://fedora.info/definitions/fcrepo#ServerManaged\""),
    ("GET omit server managed include containment", "return=representation; include=\"http://www.w3.org/ns/ldp#PreferContainment\"; omit=\"http://fedora.info/definitions/fcrepo#ServerManaged\""),
];

/// Known, deliberate differences: (comparison or `*`, path or `prefix*`, read label or `*`,
/// field or `*`, reason). A `triples` difference is one field per predicate or object IRI
/// named here with `triple <IRI>`; each `Link: rel="type"` value is a field of its own
/// (`link rel=type <IRI>`).
const KNOWN: &[(&str, &str, &str, &str, &str)] = &[
    ("side by side", "", "*", "triple http://fedora.info/definitions/v4/repository#createdBy", "Fedora 6.1 writes no user into a new root's header; Fedora 6.5 and its storage library's sample (shared/ocfl-fedora-sample) name fedoraAdmin, as arca does (issue 38.8)"),
    ("side by side", "", "*", "triple http://fedora.info/definitions/v4/repository#lastModifiedBy", "Fedora 6.1 writes no user into a new root's header; Fedora 6.5 and its storage library's sample (shared/ocfl-fedora-sample) name fedoraAdmin, as arca does (issue 38.8)"),
    ("header names", "", "*", "name etag", "hyper writes header names title-cased at best: Etag, where Fedora (Jetty) writes ETag"),
    ("header names", "", "*", "name www-authenticate", "hyper writes header names title-cased at best: Www-Authenticate, where Fedora (Jetty) writes WWW-Authenticate"),
    ("*", "*", "*", "accept-external-content-handling", "arca offers external content only when an allow-list is configured (README), Fedora 6.1 always advertises it"),
    ("*", "", "*", "allow", "Fedora lists DELETE for the root (and deletes it: 204); arca never deletes the repository root"),
    ("*", "*/fcr:metadata", "*", "allow", "Fedora lists DELETE for descriptions but answers it 405; arca does not list it"),
    ("same root", "*", "*", "last-modified", "arca's Last-Modified (and ETag) of a container changes with its children, whose ldp:contains are part of its representation; Fedora's does not"),
    ("*", "*", "GET minimal", "*", "Fedora 6.1 ignores Prefer: return=minimal on GET (lists containment and membership, still says Preference-Applied: return=minimal); arca leaves them out, as LDP's PreferMinimalContainer"),
    ("write", "/dc4", "*", "status", "two ldp:membershipResource: Fedora says 400, arca 409 with constrainedBy, as issue 7 asks (a constraint of the model, not a malformed request)"),
    ("*", "/v/fcr:versions/<ts>", "DELETE memento", "status", "Fedora 409 'Path cannot contain a fcr: prefixed segment'; arca 405, as the memento's Allow (GET, HEAD, OPTIONS) says"),
    ("*", "/v/fcr:versions/abc", "*", "status", "a malformed memento name: Fedora 500 (InvalidMementoPathException), arca 400"),
    ("*", "/v/fcr:versions", "*", "duplicate mementos", "two POST fcr:versions in one second: Fedora lists the same memento twice in link-format; arca one memento per second"),
    ("*", "/vb", "GET Accept-Datetime", "*", "Fedora 6.1 answers GET with Accept-Datetime on a binary 500 (the 302 keeps the binary's Content-Length; HEAD gives the 302); arca 302"),
    ("*", "/v", "GET Accept-Datetime RFC 850", "*", "RFC 9110 §5.6.7: a recipient MUST accept the obsolete RFC 850 and asctime dates; Fedora 6.1 (Java's RFC_1123_DATE_TIME) answers 400, arca the 302"),
    ("*", "*/fcr:metadata", "*", "triple http://www.loc.gov/premis/rdf/v3/File", "a binary's description says `a premis3:File` as Fedora 7 does (PREMIS 3 beside PREMIS 1); Fedora 6.1 has no PREMIS 3"),
    ("*", "*/fcr:metadata", "*", "triple http://www.loc.gov/premis/rdf/v3/size", "a binary's description states `premis3:size` as Fedora 7 does (PREMIS 3 beside PREMIS 1); Fedora 6.1 has no PREMIS 3"),
    ("*", "/v", "GET Accept-Datetime asctime", "*", "RFC 9110 §5.6.7: a recipient MUST accept the obsolete RFC 850 and asctime dates; Fedora 6.1 (Java's RFC_1123_DATE_TIME) answers 400, arca the 302"),
    ("*", "*", "GET inbound", "triple http://www.w3.org/ns/ldp#contains", "Fedora 7 lists the container's ldp:contains among the inbound references (fcrepo #2106), as arca does; Fedora 6.1 does not"),
    ("*", "*", "*", "triple http://fedora.info/definitions/v4/repository#hasParent", "Fedora 7 states each resource's fedora:hasParent (fcrepo #2102), as arca does; Fedora 6.1 states none"),
];

/// A server under comparison.
struct Server {
    base: String,
    auth: bool,
    http: Http,
}

impl Server {
    async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, String)],
        body: &str,
    ) -> common::Reply {
        let mut h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        if self.auth {
            h.push(("authorization", AUTHORIZATION));
        }
        let body = body.replace("{B}", &self.base);
        let url = format!("{}{path}", self.base);
        self.http.request(method, &url, &h, Bytes::from(body)).await
    }

    /// The base URL replaced by `B` everywhere in a text.
    fn norm(&self, text: &str) -> String {
        text.replace(&self.base, "B")
    }
}

/// How dates and state tokens are compared.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Two servers that wrote their own storage: dates and tokens may differ.
    SideBySide,
    /// Both serve the same OCFL root: dates must agree too.
    SameRoot,
}

/// One answer, normalized: field → value. Absent headers are absent keys.
type Answer = BTreeMap<String, String>;

/// The header names of the answer to `raw` (`{host}` and `{path}` filled in from `base`),
/// as written on the wire, keyed `name <lower case>`.
fn header_names(base: &str, raw: &str) -> Answer {
    use std::io::{Read, Write};
    let rest = base.trim_start_matches("http://");
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let raw = raw
        .replace("{host}", host)
        .replace("{path}", &format!("/{path}"));
    let mut socket = std::net::TcpStream::connect(host).unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    socket.write_all(raw.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = socket.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    let head = text.split("\r\n\r\n").next().unwrap_or_default();
    head.lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(name, _)| {
            (
                format!("name {}", name.to_ascii_lowercase()),
                name.to_string(),
            )
        })
        .collect()
}

/// `Link` values as (rel, target[ anchor]) pairs.
fn links(r: &common::Reply, srv: &Server) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for v in r.headers.get_all("link") {
        let v = v.to_str().unwrap_or("");
        // Split at commas outside <> and quotes.
        let (mut parts, mut cur, mut in_uri, mut in_q) = (vec![], String::new(), false, false);
        for c in v.chars() {
            match c {
                '<' if !in_q => in_uri = true,
                '>' if !in_q => in_uri = false,
                '"' if !in_uri => in_q = !in_q,
                ',' if !in_uri && !in_q => {
                    parts.push(std::mem::take(&mut cur));
                    continue;
                }
                _ => {}
            }
            cur.push(c);
        }
        parts.push(cur);
        for p in parts {
            let p = p.trim();
            let Some(end) = p.find('>') else { continue };
            let target = srv.norm(&p[1..end]);
            let (mut rels, mut anchor) = (vec![], None);
            for param in p[end + 1..]
                .split(';')
                .map(str::trim)
                .filter(|s| !s.is_empty())
            {
                let (k, v) = param.split_once('=').unwrap_or((param, ""));
                let v = v.trim().trim_matches('"');
                match k.trim().to_ascii_lowercase().as_str() {
                    "rel" => rels.extend(v.split_whitespace().map(str::to_string)),
                    "anchor" => anchor = Some(srv.norm(v)),
                    _ => {}
                }
            }
            for rel in rels {
                let t = match &anchor {
                    Some(a) => format!("{target} anchor={a}"),
                    None => target.clone(),
                };
                out.entry(rel).or_default().insert(t);
            }
        }
    }
    out
}

/// A comma-separated header as a sorted set.
fn set(v: &str) -> String {
    let s: BTreeSet<String> = v
        .split(',')
        .map(|s| s.trim().to_ascii_uppercase())
        .filter(|s| !s.is_empty())
        .collect();
    s.into_iter().collect::<Vec<_>>().join(",")
}

/// Normalizes N-Triples: base replaced, blank node labels dropped, dates and state-dependent
/// values masked in side-by-side mode.
fn triples(text: &str, srv: &Server, mode: Mode) -> BTreeSet<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut l = srv.norm(l);
            // Blank node labels differ between servers.
            while let Some(i) = l.find("_:") {
                let end = l[i..].find(' ').map(|e| i + e).unwrap_or(l.len());
                l.replace_range(i..end, "[]");
            }
            if mode == Mode::SideBySide
                && l.contains("^^<http://www.w3.org/2001/XMLSchema#dateTime>")
            {
                let start = l.find('"').unwrap();
                let end = l.rfind('"').unwrap();
                l.replace_range(start..=end, "\"<date>\"");
            }
            l
        })
        .collect()
}

/// The answer to one read, normalized.
fn answer(r: &common::Reply, srv: &Server, mode: Mode, rdf_body: bool) -> Answer {
    let mut a = Answer::new();
    a.insert("status".into(), r.status.as_u16().to_string());
    for (rel, targets) in links(r, srv) {
        if rel == "type" {
            for t in targets {
                a.insert(format!("link rel=type {t}"), "present".into());
            }
        } else if rel != "http://www.w3.org/ns/ldp#constrainedBy" {
            // (Refusals are compared by status: Fedora names a constraints document for
            // few of them, arca for all.)
            let v = targets.into_iter().collect::<Vec<_>>().join(" ");
            a.insert(format!("link rel={rel}"), v);
        }
    }
    // Error bodies are plain messages from both; Fedora labels some as RDF.
    if let Some(v) = r.header("content-type").filter(|_| r.status.is_success()) {
        a.insert(
            "content-type".into(),
            v.replace(' ', "").to_ascii_lowercase(),
        );
    }
    if let Some(v) = r.header("allow") {
        a.insert("allow".into(), set(v));
    }
    for h in [
        "accept-post",
        "accept-patch",
        "accept-external-content-handling",
        "accept-ranges",
    ] {
        if r.header(h).is_some() {
            a.insert(h.into(), "present".into());
        }
    }
    if let Some(v) = r.header("preference-applied") {
        a.insert("preference-applied".into(), v.replace(' ', ""));
    }
    if let Some(v) = r.header("content-disposition") {
        // Fedora 7 (fcrepo #2291), and arca, dropped the `size`, `creation-date` and
        // `modification-date` parameters RFC 6266 deprecated; Fedora 6.1 sends them.
        let v = v
            .split(';')
            .map(str::trim)
            .filter(|p| !p.starts_with("size=") && !p.contains("-date="))
            .collect::<Vec<_>>()
            .join("; ");
        a.insert("content-disposition".into(), v);
    }
    if let Some(v) = r.header("location") {
        a.insert("location".into(), srv.norm(v));
    }
    if let Some(v) = r.header("etag") {
        let kind = if v.starts_with("W/") {
            "weak"
        } else {
            "strong"
        };
        a.insert("etag".into(), kind.into());
    }
    if let Some(v) = r.header("last-modified") {
        let v = if mode == Mode::SideBySide {
            "present"
        } else {
            v
        };
        a.insert("last-modified".into(), v.into());
    }
    if r.status.is_success() {
        if rdf_body {
            let t = triples(&r.text(), srv, mode);
            a.insert(
                "triples".into(),
                t.into_iter().collect::<Vec<_>>().join("\n"),
            );
        } else if !r.body.is_empty() || r.header("content-length").is_some() {
            a.insert("body".into(), common::sha512_hex(&r.body)[..16].to_string());
        }
    }
    a
}

/// The reads made of one resource: label → answer.
async fn read_all(srv: &Server, path: &str, binary: bool, mode: Mode) -> BTreeMap<String, Answer> {
    let mut out = BTreeMap::new();
    if binary {
        for (label, m) in [("GET", Method::GET), ("HEAD", Method::HEAD)] {
            let r = srv.send(m, path, &[], "").await;
            out.insert(label.to_string(), answer(&r, srv, mode, false));
        }
        return out;
    }
    let accept = ("accept", NT.to_string());
    let r = srv
        .send(Method::HEAD, path, std::slice::from_ref(&accept), "")
        .await;
    out.insert("HEAD".to_string(), answer(&r, srv, mode, false));
    for (label, prefer) in RDF_READS {
        let mut h = vec![accept.clone()];
        if !prefer.is_empty() {
            h.push(("prefer", prefer.to_string()));
        }
        let r = srv.send(Method::GET, path, &h, "").await;
        out.insert(label.to_string(), answer(&r, srv, mode, true));
    }
    out
}

/// Every resource Fedora lists below the root, following `ldp:contains`: path → binary?
async fn walk(srv: &Server) -> BTreeMap<String, bool> {
    let mut found = BTreeMap::new();
    let mut todo = vec![String::new()];
    let contains = format!("<{LDP}contains>");
    while let Some(path) = todo.pop() {
        let r = srv.send(Method::HEAD, &path, &[], "").await;
        let binary = links(&r, srv)
            .get("type")
            .is_some_and(|t| t.contains(&format!("{LDP}NonRDFSource")));
        found.insert(path.clone(), binary);
        if binary {
            found.insert(format!("{path}/fcr:metadata"), false);
            continue;
        }
        let r = srv
            .send(Method::GET, &path, &[("accept", NT.to_string())], "")
            .await;
        for l in r.text().lines() {
            let mut parts = l.splitn(3, ' ');
            let (_, p, o) = (parts.next(), parts.next(), parts.next().unwrap_or(""));
            if p == Some(contains.as_str()) {
                let child = o
                    .trim_end_matches(" .")
                    .trim_matches(|c| c == '<' || c == '>');
                todo.push(child.strip_prefix(&srv.base).unwrap().to_string());
            }
        }
    }
    found
}

/// The [`KNOWN`] entry covering a difference, if any.
fn known(what: &str, path: &str, label: &str, field: &str) -> Option<usize> {
    let matches = |pattern: &str, v: &str| {
        if pattern == "*" {
            true
        } else if let Some(prefix) = pattern.strip_suffix('*') {
            v.starts_with(prefix)
        } else if let Some(suffix) = pattern.strip_prefix('*') {
            v.ends_with(suffix)
        } else {
            pattern == v
        }
    };
    KNOWN.iter().position(|(w, p, l, f, _)| {
        (*w == "*" || *w == what)
            && matches(p, path)
            && (*l == "*" || *l == label)
            && (*f == "*" || *f == field)
    })
}

/// Compares two answers, appending readable differences; those [`KNOWN`] are only marked
/// as seen in `used`.
/// Compares every read of `path` Fedora answered with arca's answer to the same read.
fn compare_all(
    what: &str,
    path: &str,
    fedora: &BTreeMap<String, Answer>,
    ours: &BTreeMap<String, Answer>,
    diffs: &mut Vec<String>,
    used: &mut BTreeSet<usize>,
) {
    for (label, fa) in fedora {
        compare(what, path, label, fa, &ours[label], diffs, used);
    }
}

fn compare(
    what: &str,
    path: &str,
    label: &str,
    f: &Answer,
    a: &Answer,
    diffs: &mut Vec<String>,
    used: &mut BTreeSet<usize>,
) {
    let keys: BTreeSet<&String> = f.keys().chain(a.keys()).collect();
    for k in keys {
        let (fv, av) = (f.get(k), a.get(k));
        if fv == av {
            continue;
        }
        if k == "triples" {
            let fs: BTreeSet<&str> = fv.map(|v| v.lines().collect()).unwrap_or_default();
            let as_: BTreeSet<&str> = av.map(|v| v.lines().collect()).unwrap_or_default();
            let mut text = String::new();
            for (side, only) in [
                ("Fedora only", fs.difference(&as_)),
                ("arca only  ", as_.difference(&fs)),
            ] {
                for t in only {
                    let terms: Vec<&str> = t.split(' ').skip(1).take(2).collect();
                    let k = terms.iter().find_map(|term| {
                        let iri = term.trim_start_matches('<').trim_end_matches('>');
                        known(what, path, label, &format!("triple {iri}"))
                    });
                    if let Some(i) = k.or_else(|| known(what, path, label, "triples")) {
                        used.insert(i);
                        continue;
                    }
                    let _ = writeln!(text, "      {side}: {t}");
                }
            }
            if !text.is_empty() {
                diffs.push(format!("{what} {label} {path}: triples differ\n{text}"));
            }
            continue;
        }
        if let Some(i) = known(what, path, label, k) {
            used.insert(i);
            continue;
        }
        diffs.push(format!(
            "{what} {label} {path}: {k}\n      Fedora: {}\n      arca:   {}",
            fv.map(String::as_str).unwrap_or("(absent)"),
            av.map(String::as_str).unwrap_or("(absent)")
        ));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_answers_as_fedora_6() {
    let test_started = Instant::now();
    let Some(mut fedora) = Fedora::start().await else {
        return;
    };
    eprintln!("Fedora 6 answered after {:.1?}", fedora.started_in);
    let fresh = tempfile::tempdir().unwrap();
    let arca = Arca::serve(fresh.path());
    let http = Http::new();
    let f = Server {
        base: fedora.base.clone(),
        auth: true,
        http: http.clone(),
    };
    let a = Server {
        base: arca.base.clone(),
        auth: false,
        http: http.clone(),
    };
    let mut diffs = Vec::new();
    let mut used = BTreeSet::new();

    // 1. Side by side: the same writes.
    for (i, s) in script().iter().enumerate() {
        let rf = f.send(s.method.clone(), s.path, &s.headers, s.body).await;
        let ra = a.send(s.method.clone(), s.path, &s.headers, s.body).await;
        let mut fa = Answer::new();
        let mut aa = Answer::new();
        for (ans, r, srv) in [(&mut fa, &rf, &f), (&mut aa, &ra, &a)] {
            ans.insert("status".into(), r.status.as_u16().to_string());
            if let Some(l) = r.header("location") {
                ans.insert("location".into(), srv.norm(l));
            }
        }
        let label = format!("step {i}: {} {}", s.method, s.path);
        let before = diffs.len();
        compare("write", s.path, &label, &fa, &aa, &mut diffs, &mut used);
        if diffs.len() > before {
            let last = diffs.last_mut().unwrap();
            let _ = write!(
                last,
                "\n      Fedora said: {}\n      arca said:   {}",
                excerpt(&rf.text()),
                excerpt(&ra.text())
            );
        }
    }

    // Header names byte for byte, as a client that matches them case-sensitively reads
    // them: GET and POST on the root, and a request without credentials.
    for (label, raw) in [
        ("GET raw", format!("GET {{path}} HTTP/1.1\r\nHost: {{host}}\r\nAuthorization: {AUTHORIZATION}\r\nConnection: close\r\n\r\n")),
        ("POST raw", format!("POST {{path}} HTTP/1.1\r\nHost: {{host}}\r\nAuthorization: {AUTHORIZATION}\r\nContent-Type: text/turtle\r\nSlug: raw\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")),
        ("PUT anonymous raw", "PUT {path}/anonymous HTTP/1.1\r\nHost: {host}\r\nContent-Type: text/turtle\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()),
    ] {
        let fa = header_names(&f.base, &raw);
        let aa = header_names(&a.base, &raw);
        // Names only one server sends are compared elsewhere; here only their spelling.
        let (fa, aa): (Answer, Answer) = (
            fa.iter().filter(|(k, _)| aa.contains_key(*k)).map(|(k, v)| (k.clone(), v.clone())).collect(),
            aa.iter().filter(|(k, _)| fa.contains_key(*k)).map(|(k, v)| (k.clone(), v.clone())).collect(),
        );
        compare("header names", "", label, &fa, &aa, &mut diffs, &mut used);
    }

    // Versions (§4): the same writes, then the same reads.
    let (fedora_versions, fedora_memento) = versions(&f, Mode::SideBySide, true, None).await;
    let (fedora_versions_same_root, _) =
        versions(&f, Mode::SameRoot, false, Some(&fedora_memento)).await;
    let (ours, _) = versions(&a, Mode::SideBySide, true, None).await;
    compare_versions("versions", &fedora_versions, &ours, &mut diffs, &mut used);

    // Every resource, read from both.
    let mut resources = walk(&f).await;
    for p in EXTRA_PATHS {
        resources.entry(p.to_string()).or_insert(false);
    }
    let mut fedora_answers = BTreeMap::new();
    for (path, binary) in &resources {
        fedora_answers.insert(
            path.clone(),
            (
                read_all(&f, path, *binary, Mode::SameRoot).await,
                read_all(&f, path, *binary, Mode::SideBySide).await,
            ),
        );
    }
    for (path, binary) in &resources {
        let ours = read_all(&a, path, *binary, Mode::SideBySide).await;
        compare_all(
            "side by side",
            path,
            &fedora_answers[path].1,
            &ours,
            &mut diffs,
            &mut used,
        );
    }
    arca.stop();

    // 2. The same root: Fedora's storage served by arca.
    let fedora_done = Instant::now();
    fedora.stop();
    let data = tempfile::tempdir().unwrap();
    common::copy_tree(&fedora.ocfl_root(), &data.path().join("ocfl-root"));
    let arca = Arca::serve(data.path());
    let a = Server {
        base: arca.base.clone(),
        auth: false,
        http,
    };
    let (ours, _) = versions(&a, Mode::SameRoot, false, Some(&fedora_memento)).await;
    compare_versions(
        "versions same root",
        &fedora_versions_same_root,
        &ours,
        &mut diffs,
        &mut used,
    );
    for (path, binary) in &resources {
        let ours = read_all(&a, path, *binary, Mode::SameRoot).await;
        compare_all(
            "same root",
            path,
            &fedora_answers[path].0,
            &ours,
            &mut diffs,
            &mut used,
        );
    }
    arca.stop();

    let unused: Vec<String> = KNOWN
        .iter()
        .map(|(w, p, l, k, why)| format!("{w} {p} {l} {k} ({why})"))
        .enumerate()
        .filter(|(i, _)| !used.contains(i))
        .map(|(_, s)| s)
        .collect();
    eprintln!(
        "compared {} resources; Fedora started in {:.1?}, whole test {:.1?} (after Fedora stopped: {:.1?})",
        resources.len(),
        fedora.started_in,
        test_started.elapsed(),
        fedora_done.elapsed()
    );
    assert!(
        diffs.is_empty() && unused.is_empty(),
        "arca answers differently from Fedora 6.1 ({} differences):\n{}\n\nknown differences that no longer occur (remove them from KNOWN):\n{}",
        diffs.len(),
        diffs.join("\n"),
        unused.join("\n")
    );
}

/// `fcr:versions/YYYYMMDDHHMMSS` replaced by `fcr:versions/<ts>`: two servers writing side
/// by side record their versions in different seconds.
fn mask(s: &str) -> String {
    const MARKER: &str = "fcr:versions/";
    let (mut out, mut rest) = (String::new(), s);
    while let Some(i) = rest.find(MARKER) {
        let end = i + MARKER.len();
        out.push_str(&rest[..end]);
        rest = &rest[end..];
        if rest.len() >= 14 && rest.as_bytes()[..14].iter().all(u8::is_ascii_digit) {
            out.push_str("<ts>");
            rest = &rest[14..];
        }
    }
    out.push_str(rest);
    out
}

/// The answer about a link-format TimeMap: [`answer`] without the body's digest, plus its
/// structure: the relations in order (runs of mementos as one), how many distinct mementos,
/// whether one is listed twice, the targets of original, timegate and self, whether self
/// has from and until, and whether every line ends with a comma (as Fedora writes it).
fn link_format_answer(r: &common::Reply, srv: &Server, mode: Mode) -> Answer {
    let mut a = answer(r, srv, mode, false);
    a.remove("body");
    if !r.status.is_success() {
        return a;
    }
    let text = r.text();
    let (mut rels, mut mementos) = (Vec::<String>::new(), Vec::<String>::new());
    for line in text.lines() {
        let l = line.trim().trim_end_matches(',');
        let Some(end) = l.find('>') else { continue };
        let target = srv.norm(&l[1..end]);
        let params = &l[end + 1..];
        let rel = params
            .split(';')
            .find_map(|p| p.trim().strip_prefix("rel="))
            .unwrap_or("")
            .trim_matches('"')
            .to_string();
        if rels.last() != Some(&rel) {
            rels.push(rel.clone());
        }
        match rel.as_str() {
            "memento" => mementos.push(target),
            "self" => {
                let range = params.contains("from=") && params.contains("until=");
                a.insert(
                    "timemap self".into(),
                    format!("{target} from/until {range}"),
                );
            }
            other => {
                a.insert(format!("timemap {other}"), target);
            }
        }
    }
    let distinct: BTreeSet<&String> = mementos.iter().collect();
    a.insert("timemap rels".into(), rels.join(","));
    a.insert("mementos".into(), distinct.len().to_string());
    a.insert(
        "duplicate mementos".into(),
        (distinct.len() != mementos.len()).to_string(),
    );
    a.insert(
        "lines end with a comma".into(),
        text.lines().all(|l| l.ends_with(',')).to_string(),
    );
    a
}

/// One answer of the versioning sequence: (path, label, answer).
type Versioned = (String, String, Answer);

/// The versioning sequence (§4). With `write`, first the writes: a container updated in two
/// seconds, a binary, a deleted container, then two `POST fcr:versions` in one second (the
/// first with a body, ignored). Then the reads of the TimeMap (link-format, Turtle,
/// N-Triples, OPTIONS), of the memento `memento` (or the one the first POST created), the
/// TimeGate, and the refusals. Memento names are masked side by side ([`mask`]).
async fn versions(
    srv: &Server,
    mode: Mode,
    write: bool,
    memento: Option<&str>,
) -> (Vec<Versioned>, String) {
    use Method as M;
    let mut out: Vec<Versioned> = Vec::new();
    let masked = |a: Answer| -> Answer {
        match mode {
            Mode::SideBySide => a.into_iter().map(|(k, v)| (k, mask(&v))).collect(),
            Mode::SameRoot => a,
        }
    };
    let ttl = [("content-type", "text/turtle".to_string())];
    let title = |t: &str| format!("<> <http://purl.org/dc/terms/title> \"{t}\" .");
    let mut memento = memento.map(str::to_string);
    if write {
        let mut status = |path: &str, label: &str, r: &common::Reply| {
            let mut a = Answer::new();
            a.insert("status".into(), r.status.as_u16().to_string());
            if let Some(l) = r.header("location") {
                a.insert("location".into(), srv.norm(l));
            }
            if links(r, srv).contains_key("http://www.w3.org/ns/ldp#constrainedBy") {
                a.insert("constrainedBy".into(), "present".into());
            }
            out.push((path.into(), label.into(), masked(a)));
        };
        let r = srv.send(M::PUT, "/v", &ttl, &title("one")).await;
        status("/v", "PUT", &r);
        let r = srv
            .send(
                M::PUT,
                "/vb",
                &[("content-type", "text/plain".into())],
                "v1",
            )
            .await;
        status("/vb", "PUT", &r);
        let r = srv.send(M::PUT, "/vd", &ttl, "").await;
        status("/vd", "PUT", &r);
        let r = srv.send(M::DELETE, "/vd", &[], "").await;
        status("/vd", "DELETE", &r);
        tokio::time::sleep(std::time::Duration::from_millis(1050)).await;
        let r = srv.send(M::PUT, "/v", &ttl, &title("two")).await;
        status("/v", "PUT again", &r);
        // Both POSTs at the start of a later second: one second, two versions.
        arca_testkit::next_second().await;
        let r = srv
            .send(M::POST, "/v/fcr:versions", &ttl, &title("ignored"))
            .await;
        status("/v/fcr:versions", "POST", &r);
        memento = r
            .header("location")
            .map(|l| l.strip_prefix(&srv.base).unwrap_or(l).to_string());
        let r = srv.send(M::POST, "/v/fcr:versions", &[], "").await;
        status("/v/fcr:versions", "POST again", &r);
        // A memento dated by the client (issue 38.3): refused, nothing recorded.
        for (label, value) in [
            ("POST Memento-Datetime", "Tue, 3 Jun 2008 11:05:30 GMT"),
            ("POST Memento-Datetime malformed", "garbage"),
        ] {
            let h = [("memento-datetime", value.to_string())];
            let r = srv.send(M::POST, "/v/fcr:versions", &h, "").await;
            status("/v/fcr:versions", label, &r);
        }
    }
    let memento = memento.expect("POST fcr:versions gave a Location");
    let m = memento.as_str();
    let tm = "/v/fcr:versions";
    let accept = |t: &str| vec![("accept", t.to_string())];
    let r = srv
        .send(M::GET, tm, &accept("application/link-format"), "")
        .await;
    out.push((
        tm.into(),
        "GET link-format".into(),
        masked(link_format_answer(&r, srv, mode)),
    ));
    let r = srv.send(M::GET, tm, &accept("text/turtle"), "").await;
    let mut a = answer(&r, srv, mode, false);
    a.remove("body");
    out.push((tm.into(), "GET turtle".into(), masked(a)));
    for (label, method, path, headers, rdf) in [
        ("GET n-triples", M::GET, tm, accept(NT), true),
        ("OPTIONS", M::OPTIONS, tm, vec![], false),
        ("GET memento", M::GET, m, accept(NT), true),
        ("HEAD memento", M::HEAD, m, accept(NT), false),
        ("OPTIONS memento", M::OPTIONS, m, vec![], false),
        (
            "GET Accept-Datetime",
            M::GET,
            "/v",
            vec![(
                "accept-datetime",
                "Fri, 01 Jan 2100 00:00:00 GMT".to_string(),
            )],
            false,
        ),
        (
            "HEAD Accept-Datetime",
            M::HEAD,
            "/v",
            vec![(
                "accept-datetime",
                "Sat, 01 Jan 2000 00:00:00 GMT".to_string(),
            )],
            false,
        ),
        (
            "GET Accept-Datetime one-digit day",
            M::GET,
            "/v",
            vec![(
                "accept-datetime",
                "Tue, 3 Jun 2008 11:05:30 GMT".to_string(),
            )],
            false,
        ),
        (
            "GET Accept-Datetime RFC 850",
            M::GET,
            "/v",
            vec![(
                "accept-datetime",
                "Sunday, 06-Nov-94 08:49:37 GMT".to_string(),
            )],
            false,
        ),
        (
            "GET Accept-Datetime asctime",
            M::GET,
            "/v",
            vec![("accept-datetime", "Fri Jan  1 00:00:00 2100".to_string())],
            false,
        ),
        (
            "GET Accept-Datetime malformed",
            M::GET,
            "/v",
            vec![("accept-datetime", "garbage".to_string())],
            false,
        ),
        (
            "GET Accept-Datetime",
            M::GET,
            "/vb",
            vec![(
                "accept-datetime",
                "Fri, 01 Jan 2100 00:00:00 GMT".to_string(),
            )],
            false,
        ),
        (
            "HEAD Accept-Datetime",
            M::HEAD,
            "/vb",
            vec![(
                "accept-datetime",
                "Fri, 01 Jan 2100 00:00:00 GMT".to_string(),
            )],
            false,
        ),
        (
            "GET link-format",
            M::GET,
            "/vd/fcr:versions",
            accept("application/link-format"),
            false,
        ),
        ("GET", M::GET, "/v/fcr:versions/abc", vec![], false),
        (
            "GET",
            M::GET,
            "/v/fcr:versions/20000101000000",
            vec![],
            false,
        ),
    ] {
        let r = srv.send(method, path, &headers, "").await;
        let mut a = answer(&r, srv, mode, rdf);
        if !rdf {
            a.remove("body");
        }
        let path = match mode {
            Mode::SideBySide => mask(path),
            Mode::SameRoot => path.to_string(),
        };
        out.push((path, label.into(), masked(a)));
    }
    if write {
        for (label, method) in [("PUT memento", M::PUT), ("DELETE memento", M::DELETE)] {
            let r = srv.send(method, m, &ttl, &title("changed")).await;
            let mut a = Answer::new();
            a.insert("status".into(), r.status.as_u16().to_string());
            out.push((mask(m), label.into(), a));
        }
    }
    (out, memento)
}

/// Compares the versioning answers of Fedora and arca, read for read.
fn compare_versions(
    what: &str,
    fedora: &[Versioned],
    ours: &[Versioned],
    diffs: &mut Vec<String>,
    used: &mut BTreeSet<usize>,
) {
    assert_eq!(fedora.len(), ours.len());
    for ((path, label, f), (_, _, a)) in fedora.iter().zip(ours) {
        compare(what, path, label, f, a, diffs, used);
    }
}

fn excerpt(s: &str) -> String {
    let s = s.replace('\n', " ");
    s.chars().take(160).collect()
}
