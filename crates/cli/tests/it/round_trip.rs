//! Fedora's own export and import tools work unchanged through arca (issue 46).
//!
//! Fedora's import-export tool moves a tree over HTTP: it GETs every resource with its
//! headers saved, then PUTs each back into the target with `Prefer: handling=lenient`,
//! containers with the interaction model its saved `Link rel="type"` names, binaries with
//! their bytes and a `Digest`, then their descriptions (server-managed triples included:
//! `ebucore:filename`, `ebucore:hasMimeType`, `premis:hasSize`), and ACLs to `fcr:acl`.
//! [`export`] and [`import`] do exactly that, and [`snapshot`] reads a tree back for the
//! comparison: user triples, interaction models, containment, membership, content digests,
//! file names, media types and ACLs, resource by resource.
//!
//! The tree ([`TREE`]): nested containers, non-ASCII literals, a reference, three binaries
//! (one with a file name) with descriptions, a direct container with two members whose
//! membership lands on another resource, a WebAC ACL, versions (every write makes one) and
//! a tombstone (which the tool cannot move: it is not listed, so it is not compared).
//!
//! - [`arca_to_arca_loses_nothing`]: backup and restore between two arcas.
//! - [`arca_and_fedora_move_trees_both_ways`]: arca's export imported into the real
//!   Fedora 6.1, and Fedora's (the same tree written natively on Fedora) into arca.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use hyper::Method;
use sha2::{Digest as _, Sha512};

use crate::common::fedora::Fedora;
use crate::common::{Arca, Http, Reply};

const LDP: &str = "http://www.w3.org/ns/ldp#";
const NT: &str = "application/n-triples";
const FEDORA_NS: &str = "http://fedora.info/definitions/v4/repository#";
const RDF_TYPE: &str = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>";
const LENIENT: (&str, &str) = ("prefer", "handling=lenient; received=\"minimal\"");
/// What the export reads of a resource: its own triples, without containment and
/// membership (which the target derives from what is imported).
const OWN_TRIPLES: &str = "return=representation; omit=\"http://www.w3.org/ns/ldp#PreferContainment http://www.w3.org/ns/ldp#PreferMembership\"";

/// One write of the tree: method, path below the tree's root, headers, body.
type Write = (Method, &'static str, Vec<(&'static str, String)>, Vec<u8>);

/// The tree every test moves, written below `/{root}`. `{B}` in a body stands for the tree
/// root's URL.
fn tree() -> Vec<Write> {
    let ttl = || ("content-type", "text/turtle".to_string());
    let direct = format!("<{LDP}DirectContainer>; rel=\"type\"");
    let scan: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    vec![
        (Method::PUT, "", vec![ttl()], b"<> <http://purl.org/dc/terms/title> \"Round trip\" .".to_vec()),
        (
            Method::PUT,
            "/books",
            vec![ttl()],
            "<> <http://purl.org/dc/terms/title> \"B\u{fc}cher \u{2014} \u{66f8}\u{7c4d} \u{2713}\"@de ; <http://purl.org/dc/terms/subject> \"na\u{ef}ve\" .".into(),
        ),
        (
            Method::PUT,
            "/books/vol1",
            vec![ttl()],
            b"<> <http://purl.org/dc/terms/title> \"Volume 1\" ; <http://purl.org/dc/terms/isPartOf> <{B}/books> .".to_vec(),
        ),
        (
            Method::PUT,
            "/books/vol1/scan",
            vec![
                ("content-type", "image/tiff".into()),
                ("content-disposition", "attachment; filename=\"scan-0001.tif\"".into()),
            ],
            scan,
        ),
        (
            Method::PATCH,
            "/books/vol1/scan/fcr:metadata",
            vec![("content-type", "application/sparql-update".into())],
            b"INSERT DATA { <> <http://purl.org/dc/terms/title> \"Scan 1\" }".to_vec(),
        ),
        (Method::PUT, "/books/vol1/text", vec![("content-type", "text/plain".into())], "Hello, \u{4e16}\u{754c}\n".into()),
        (Method::PUT, "/books/vol1/raw", vec![("content-type", "application/octet-stream".into())], (0..=255u8).collect()),
        (
            Method::PUT,
            "/books/fcr:acl",
            vec![ttl()],
            b"@prefix acl: <http://www.w3.org/ns/auth/acl#> .\n\
              <#readers> a acl:Authorization ; acl:agent \"alice\" ; acl:mode acl:Read ; acl:accessTo <{B}/books> ; acl:default <{B}/books> .\n\
              <#admins> a acl:Authorization ; acl:agent \"fedoraAdmin\" ; acl:mode acl:Read, acl:Write ; acl:accessTo <{B}/books> ; acl:default <{B}/books> ."
                .to_vec(),
        ),
        (
            Method::PUT,
            "/members",
            vec![ttl(), ("link", direct)],
            b"<> <http://www.w3.org/ns/ldp#membershipResource> <{B}/books> ; <http://www.w3.org/ns/ldp#hasMemberRelation> <http://pcdm.org/models#hasMember> .".to_vec(),
        ),
        (Method::PUT, "/members/m1", vec![ttl()], b"<> <http://purl.org/dc/terms/title> \"member one\" .".to_vec()),
        (Method::PUT, "/members/m2", vec![ttl()], b"<> <http://purl.org/dc/terms/title> \"member two\" .".to_vec()),
        (Method::PATCH, "/books/vol1", vec![("content-type", "application/sparql-update".into())], b"INSERT DATA { <> <http://purl.org/dc/terms/extent> \"12 pages\" }".to_vec()),
        (Method::PUT, "/gone", vec![ttl()], Vec::new()),
        (Method::DELETE, "/gone", Vec::new(), Vec::new()),
    ]
}

/// arca or Fedora, with the tree's root below its REST root.
struct Server {
    name: &'static str,
    base: String,
    http: Http,
}

impl Server {
    /// The URL of `path` below the REST root.
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends a request to `path` below the REST root.
    async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Reply {
        self.http
            .request(method, &self.url(path), headers, body)
            .await
    }

    /// Writes [`tree`] below `root`, every request answered 2xx.
    async fn write_tree(&self, root: &str) {
        let tree_url = self.url(root);
        for (method, path, headers, body) in tree() {
            // Only text bodies name the tree; binary bodies are sent as they are.
            let body = match String::from_utf8(body) {
                Ok(text) => Bytes::from(text.replace("{B}", &tree_url)),
                Err(e) => Bytes::from(e.into_bytes()),
            };
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let r = self
                .send(method.clone(), &format!("{root}{path}"), &headers, body)
                .await;
            assert!(
                r.status.is_success(),
                "{}: {method} {root}{path} answered {}: {}",
                self.name,
                r.status,
                r.text()
            );
        }
    }
}

/// One resource as the tool saves it.
#[derive(Debug)]
struct Exported {
    /// The path below the tree's root ("" for the root).
    path: String,
    /// The interaction model its `Link rel="type"` names.
    model: String,
    /// Its own triples (a binary: its description's), IRIs below the tree root as `{B}`.
    triples: Vec<String>,
    /// A binary's bytes and media type.
    content: Option<(Bytes, String)>,
    /// Its ACL's triples, if it has one of its own.
    acl: Option<Vec<String>>,
}

/// The interaction model of a resource, from its `Link rel="type"` headers.
fn model(r: &Reply) -> String {
    let types = r.header_all("link");
    for m in [
        "NonRDFSource",
        "DirectContainer",
        "IndirectContainer",
        "BasicContainer",
    ] {
        if types.contains(&format!("<{LDP}{m}>;rel=\"type\""))
            || types.contains(&format!("<{LDP}{m}>; rel=\"type\""))
        {
            return format!("{LDP}{m}");
        }
    }
    panic!("no interaction model in Link: {types}");
}

/// The target of the first `Link` with `rel`.
fn link(r: &Reply, rel: &str) -> Option<String> {
    r.header_all("link").split(',').find_map(|l| {
        let l = l.trim();
        if !(l.contains(&format!("rel=\"{rel}\"")) || l.ends_with(&format!("rel={rel}"))) {
            return None;
        }
        Some(l[l.find('<')? + 1..l.find('>')?].to_string())
    })
}

/// The lines of an N-Triples body.
fn nt_lines(body: &[u8]) -> impl Iterator<Item = &str> {
    std::str::from_utf8(body)
        .expect("N-Triples are UTF-8")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// N-Triples lines with the tree's URL replaced by `{B}`.
fn lines(body: &[u8], tree_url: &str) -> Vec<String> {
    nt_lines(body)
        .map(|l| l.replace(&format!("<{tree_url}"), "<{B}"))
        .collect()
}

/// What the tool leaves out of what it sends back: Fedora's own predicates and types,
/// containment, the description link and the message digest (it keeps
/// `ebucore:filename`, `ebucore:hasMimeType` and `premis:hasSize`).
fn sanitized(triples: &[String]) -> Vec<String> {
    triples
        .iter()
        .filter(|l| {
            let mut parts = l.splitn(3, ' ');
            let (_, p, o) = (
                parts.next(),
                parts.next().unwrap_or(""),
                parts.next().unwrap_or(""),
            );
            !(p.starts_with(&format!("<{FEDORA_NS}"))
                || p == format!("<{LDP}contains>")
                || p == "<http://www.iana.org/assignments/relation/describedby>"
                || p == "<http://www.loc.gov/premis/rdf/v1#hasMessageDigest>"
                || (p == RDF_TYPE && o.starts_with(&format!("<{FEDORA_NS}"))))
        })
        .cloned()
        .collect()
}

/// Exports the tree below `root` the way the tool does, parents before children.
async fn export(src: &Server, root: &str) -> Vec<Exported> {
    let tree_url = src.url(root);
    let mut out = Vec::new();
    let mut todo = vec![String::new()];
    while let Some(path) = todo.pop() {
        let url = format!("{tree_url}{path}");
        let head = src
            .http
            .request(Method::HEAD, &url, &[], Bytes::new())
            .await;
        assert_eq!(head.status, 200, "{}: HEAD {url}", src.name);
        let model = model(&head);
        let (triples, content) = if model.ends_with("NonRDFSource") {
            let bytes = src.http.get(&url, &[]).await;
            assert_eq!(bytes.status, 200, "{}: GET {url}", src.name);
            let media = bytes.header("content-type").unwrap().to_string();
            let described = link(&head, "describedby").expect("a binary links its description");
            let d = src.http.get(&described, &[("accept", NT)]).await;
            assert_eq!(d.status, 200, "{}: GET {described}: {}", src.name, d.text());
            (lines(&d.body, &tree_url), Some((bytes.body, media)))
        } else {
            let own = src
                .http
                .get(&url, &[("accept", NT), ("prefer", OWN_TRIPLES)])
                .await;
            assert_eq!(own.status, 200, "{}: GET {url}: {}", src.name, own.text());
            let all = src.http.get(&url, &[("accept", NT)]).await;
            let contains = format!("<{url}> <{LDP}contains> <{tree_url}");
            let mut children: Vec<String> = nt_lines(&all.body)
                .filter_map(|l| Some(l.strip_prefix(&contains)?.split('>').next()?.to_string()))
                .collect();
            children.sort();
            todo.extend(children.into_iter().rev());
            (lines(&own.body, &tree_url), None)
        };
        let acl = match link(&head, "acl") {
            Some(acl_url) => {
                let r = src.http.get(&acl_url, &[("accept", NT)]).await;
                (r.status == 200).then(|| lines(&r.body, &tree_url))
            }
            None => None,
        };
        out.push(Exported {
            path,
            model,
            triples,
            content,
            acl,
        });
    }
    out
}

/// Imports what [`export`] saved below `root` of `dst`, as the tool does.
async fn import(dst: &Server, root: &str, exported: &[Exported]) {
    let tree_url = dst.url(root);
    let body = |triples: &[String]| {
        Bytes::from(
            sanitized(triples)
                .join("\n")
                .replace("<{B}", &format!("<{tree_url}"))
                + "\n",
        )
    };
    for e in exported {
        let url = format!("{tree_url}{}", e.path);
        let put = |target: String, headers: Vec<(&'static str, String)>, payload: Bytes| async move {
            let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let r = dst.http.request(Method::PUT, &target, &h, payload).await;
            assert!(
                r.status.is_success(),
                "{}: PUT {target} answered {}: {}",
                dst.name,
                r.status,
                r.text()
            );
            r
        };
        if let Some((bytes, media)) = &e.content {
            // Hex, as Fedora 6 compares it (arca takes hex or base64).
            let digest = hex::encode(Sha512::digest(bytes));
            let r = put(
                url.clone(),
                vec![
                    ("content-type", media.clone()),
                    ("digest", format!("sha-512={digest}")),
                ],
                bytes.clone(),
            )
            .await;
            let described = link(&r, "describedby").unwrap_or(format!("{url}/fcr:metadata"));
            put(
                described,
                vec![("content-type", NT.into()), (LENIENT.0, LENIENT.1.into())],
                body(&e.triples),
            )
            .await;
        } else {
            put(
                url.clone(),
                vec![
                    ("content-type", NT.into()),
                    ("link", format!("<{}>; rel=\"type\"", e.model)),
                    (LENIENT.0, LENIENT.1.into()),
                ],
                body(&e.triples),
            )
            .await;
        }
        if let Some(acl) = &e.acl {
            put(
                format!("{url}/fcr:acl"),
                vec![("content-type", NT.into()), (LENIENT.0, LENIENT.1.into())],
                body(acl),
            )
            .await;
        }
    }
}

/// What must survive a move, per resource path below the tree root.
type Snapshot = BTreeMap<String, BTreeMap<&'static str, String>>;

/// Reads back every resource [`export`] found: interaction model, every triple of a
/// default GET but the server's own bookkeeping (dates, creators, digests as Fedora's
/// `premis:hasSize` duplicates it; sizes and digests are compared on the bytes), a binary's
/// content digest and media type and its description, and the ACL.
async fn snapshot(srv: &Server, root: &str, paths: &[String]) -> Snapshot {
    let tree_url = srv.url(root);
    let keep = |triples: Vec<String>| -> String {
        let set: BTreeSet<String> = sanitized(&triples)
            .into_iter()
            .filter(|l| !l.contains("<http://www.loc.gov/premis/rdf/v1#hasSize>"))
            // Fedora 7's PREMIS 3 statements (`a premis3:File`, `premis3:size`) are the server's
            // bookkeeping too; arca states them, Fedora 6.1 does not.
            .filter(|l| !l.contains("<http://www.loc.gov/premis/rdf/v3/"))
            .filter(|l| l.starts_with("<{B}") || l.starts_with("_:"))
            .collect();
        set.into_iter().collect::<Vec<_>>().join("\n")
    };
    let mut out = Snapshot::new();
    for path in paths {
        let url = format!("{tree_url}{path}");
        let mut fields = BTreeMap::new();
        let head = srv
            .http
            .request(Method::HEAD, &url, &[], Bytes::new())
            .await;
        fields.insert("status", head.status.as_u16().to_string());
        fields.insert("model", model(&head));
        if fields["model"].ends_with("NonRDFSource") {
            let bytes = srv.http.get(&url, &[]).await;
            fields.insert("sha512", hex::encode(Sha512::digest(&bytes.body)));
            fields.insert(
                "media type",
                bytes.header("content-type").unwrap_or("").to_string(),
            );
            let d = srv
                .http
                .get(&link(&head, "describedby").unwrap(), &[("accept", NT)])
                .await;
            fields.insert("description", keep(lines(&d.body, &tree_url)));
        } else {
            let r = srv.http.get(&url, &[("accept", NT)]).await;
            fields.insert("triples", keep(lines(&r.body, &tree_url)));
        }
        if let Some(acl_url) = link(&head, "acl") {
            let r = srv.http.get(&acl_url, &[("accept", NT)]).await;
            if r.status == 200 {
                fields.insert("acl", keep(lines(&r.body, &tree_url)));
            }
        }
        out.insert(path.clone(), fields);
    }
    out
}

/// Every difference between two snapshots, as readable lines.
fn differences(from: &Server, a: &Snapshot, to: &Server, b: &Snapshot) -> Vec<String> {
    let mut diffs = Vec::new();
    for (path, fields) in a {
        for (k, v) in fields {
            let w = b.get(path).and_then(|f| f.get(k));
            if w != Some(v) {
                diffs.push(format!(
                    "{path}: {k}\n  {}: {v}\n  {}: {}",
                    from.name,
                    to.name,
                    w.map(String::as_str).unwrap_or("(absent)")
                ));
            }
        }
    }
    diffs
}

/// Moves the tree below `root` from `src` to `dst` and says what differs.
async fn move_tree(src: &Server, dst: &Server, root: &str) -> Vec<String> {
    let exported = export(src, root).await;
    let paths: Vec<String> = exported.iter().map(|e| e.path.clone()).collect();
    assert!(paths.len() >= 9, "{}: the export found {paths:?}", src.name);
    import(dst, root, &exported).await;
    let before = snapshot(src, root, &paths).await;
    let after = snapshot(dst, root, &paths).await;
    // The snapshot must see what the tree holds, or the comparison proves nothing.
    let members = &before["/books"]["triples"];
    assert!(
        members.contains("<http://pcdm.org/models#hasMember> <{B}/members/m1>"),
        "{}: {members}",
        src.name
    );
    assert!(
        before["/books"].contains_key("acl"),
        "{}: no ACL seen",
        src.name
    );
    assert!(
        before["/books/vol1/scan"]["description"].contains("scan-0001.tif"),
        "{}",
        src.name
    );
    differences(src, &before, dst, &after)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arca_to_arca_loses_nothing() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a1, a2) = (Arca::serve(d1.path()), Arca::serve(d2.path()));
    let src = Server {
        name: "arca (source)",
        base: a1.base.clone(),
        http: Http::new(),
    };
    let dst = Server {
        name: "arca (target)",
        base: a2.base.clone(),
        http: Http::new(),
    };
    src.write_tree("/rt").await;
    let diffs = move_tree(&src, &dst, "/rt").await;
    assert!(
        diffs.is_empty(),
        "arca -> arca lost structure:\n{}",
        diffs.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arca_and_fedora_move_trees_both_ways() {
    let Some(fedora) = Fedora::start().await else {
        return;
    };
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a1, a2) = (Arca::serve(d1.path()), Arca::serve(d2.path()));
    let arca = Server {
        name: "arca",
        base: a1.base.clone(),
        http: Http::new(),
    };
    let f = Server {
        name: "Fedora 6.1",
        base: fedora.base.clone(),
        http: Http::new(),
    };
    let arca2 = Server {
        name: "arca (target)",
        base: a2.base.clone(),
        http: Http::new(),
    };

    arca.write_tree("/from-arca").await;
    let mut diffs = move_tree(&arca, &f, "/from-arca").await;
    f.write_tree("/from-fedora").await;
    diffs.extend(move_tree(&f, &arca2, "/from-fedora").await);
    assert!(
        diffs.is_empty(),
        "a tree moved between arca and Fedora lost structure:\n{}",
        diffs.join("\n")
    );
}
