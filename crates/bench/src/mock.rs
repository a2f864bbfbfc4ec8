//! A tiny in-process Fedora API stand-in (POST container, PUT binary, GET) for end-to-end
//! tests of the whole tool without arca: counting, error injection, authentication; with
//! `search`, also records under `search-bench/` (Turtle PUT, SPARQL title PATCH, PDF
//! children copied or proxied) and a minimal `fcr:search` over them (queries evaluated by
//! [`crate::lucene`], title updates visible [`VISIBILITY_LAG`] after their answer, status,
//! reindex).

use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use crate::lucene::{tokens, Doc, Extra, Query};
use crate::report::{Kind, Report, SearchDetail, Status};
use crate::BenchArgs;

/// How long after its answer a title update becomes visible to queries.
const VISIBILITY_LAG: Duration = Duration::from_millis(100);
/// How long a reindex runs.
const REINDEX_TIME: Duration = Duration::from_millis(30);

const DC: &str = "http://purl.org/dc/elements/1.1/";
const DCTERMS: &str = "http://purl.org/dc/terms/";

/// A record of the search mock: its fields, and a title update not yet visible.
#[derive(Default)]
struct MockRecord {
    fields: Vec<(String, String)>,
    pending_title: Option<(Instant, String)>,
}

#[derive(Default)]
struct SearchState {
    records: HashMap<String, MockRecord>,
    /// Binary path -> its text.
    binaries: HashMap<String, String>,
    reindex: Option<Instant>,
    changes: u64,
    patches: u64,
    queries: u64,
    proxied: u64,
}

impl SearchState {
    fn promote(&mut self, now: Instant) {
        for r in self.records.values_mut() {
            if r.pending_title.as_ref().is_some_and(|(t, _)| *t <= now) {
                let (_, title) = r.pending_title.take().unwrap();
                r.fields.retain(|(f, _)| f != "TITLE");
                r.fields.push(("TITLE".into(), title));
            }
        }
    }

    fn doc(&self, path: &str) -> Doc {
        let mut d = Doc::default();
        for (f, v) in &self.records[path].fields {
            d.add(f, v);
        }
        d.extra = match self.binaries.get(&format!("{path}/pdf")) {
            Some(text) => Extra::Tokens(tokens(text).collect()),
            None => Extra::None,
        };
        d
    }
}

/// The fields of a Turtle record about `url`, as the search mock indexes them.
fn fields_of(url: &str, turtle: &[u8]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for t in oxttl::TurtleParser::new()
        .with_base_iri(url)
        .map_err(|e| e.to_string())?
        .for_slice(turtle)
    {
        let t = t.map_err(|e| e.to_string())?;
        let oxrdf::Term::Literal(l) = &t.object else {
            continue;
        };
        let v = l.value().to_string();
        let field = match t.predicate.as_str().strip_prefix(DCTERMS) {
            Some("title") => "TITLE",
            Some("abstract") => "ABSTRACT",
            Some("description") => "DESCRIPTION",
            _ => match t.predicate.as_str().strip_prefix(DC) {
                Some("creator") => {
                    let (last, first) = v.split_once(", ").unwrap_or((&v, ""));
                    out.push(("LASTNAME".into(), last.to_string()));
                    out.push(("FIRSTNAME".into(), first.to_string()));
                    "CREATOR"
                }
                Some("subject") => "SUBJECT",
                Some("date") => "DATE",
                Some("identifier") => "IDENTIFIER",
                Some("type") => "TYPE",
                _ => "OTHER",
            },
        };
        out.push((field.into(), v));
    }
    Ok(out)
}

/// The title a SPARQL Update inserts.
fn inserted_title(url: &str, update: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(update).map_err(|e| e.to_string())?;
    let u = spargebra::SparqlParser::new()
        .with_base_iri(url)
        .map_err(|e| e.to_string())?
        .parse_update(text)
        .map_err(|e| e.to_string())?;
    for op in u.operations {
        if let spargebra::GraphUpdateOperation::DeleteInsert { insert, .. } = op {
            for q in insert {
                if let (true, spargebra::term::TermPattern::Literal(l)) = (
                    q.predicate.to_string() == format!("<{DCTERMS}title>"),
                    &q.object,
                ) {
                    return Ok(l.value().to_string());
                }
            }
        }
    }
    Err("no dcterms:title inserted".into())
}

fn json(code: StatusCode, v: serde_json::Value) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(v.to_string())));
    *r.status_mut() = code;
    r.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    r
}

/// `fcr:search` and the records below `search-bench/`.
fn search_handle(
    st: &State,
    method: &Method,
    path: &str,
    query: &str,
    headers: &hyper::HeaderMap,
    body: &[u8],
) -> Response<Full<Bytes>> {
    let empty = |code: StatusCode| {
        let mut r = Response::new(Full::new(Bytes::new()));
        *r.status_mut() = code;
        r
    };
    let now = Instant::now();
    let mut s = st.search.lock().unwrap();
    s.promote(now);
    let url = format!("{}{}", st.base, path.trim_start_matches("/rest/"));
    match (method.clone(), path) {
        (Method::GET, "/rest/fcr:search/status") => {
            let running = s.reindex.is_some_and(|t| now - t < REINDEX_TIME);
            let docs = (s.records.len() + s.binaries.len()) as u64;
            let secs = REINDEX_TIME.as_secs_f64();
            let lag = s
                .records
                .values()
                .filter(|r| r.pending_title.is_some())
                .count();
            json(
                StatusCode::OK,
                serde_json::json!({
                    "documents": docs,
                    "indexed": s.changes,
                    "last_change": s.changes,
                    "lag": lag,
                    "reindex": s.reindex.map(|_| serde_json::json!({
                        "running": running,
                        "done": if running { 0 } else { docs },
                        "total": docs,
                        "seconds": secs,
                        "objects_per_second": docs as f64 / secs,
                    })),
                    "extraction": {"extracted": s.binaries.len(), "failed": 0, "cached": 0},
                }),
            )
        }
        (Method::POST, "/rest/fcr:search/reindex") => {
            if s.reindex.is_some_and(|t| now - t < REINDEX_TIME) {
                empty(StatusCode::CONFLICT)
            } else {
                s.reindex = Some(now);
                empty(StatusCode::ACCEPTED)
            }
        }
        (Method::GET, "/rest/fcr:search") => {
            s.queries += 1;
            let param = |name: &str| {
                query.split('&').find_map(|kv| {
                    let (k, v) = kv.split_once('=')?;
                    (k == name).then(|| {
                        percent_encoding::percent_decode_str(v)
                            .decode_utf8_lossy()
                            .into_owned()
                    })
                })
            };
            let q = match Query::parse(&param("q").unwrap_or_default()) {
                Ok(q) => q,
                Err(e) => return json(StatusCode::BAD_REQUEST, serde_json::json!({ "error": e })),
            };
            let limit: usize = param("limit").and_then(|l| l.parse().ok()).unwrap_or(10);
            let mut hits: Vec<&String> = s
                .records
                .keys()
                .filter(|p| q.eval(&s.doc(p)) == Some(true))
                .collect();
            hits.sort();
            let items: Vec<serde_json::Value> = hits
                .iter()
                .take(limit)
                .map(|p| serde_json::json!({"fedora_id": format!("{}{}", st.base, p.trim_start_matches("/rest/"))}))
                .collect();
            json(
                StatusCode::OK,
                serde_json::json!({
                    "pagination": {"totalResults": hits.len(), "offset": 0, "maxResults": limit},
                    "items": items,
                }),
            )
        }
        (Method::PUT, p) if p.ends_with("/pdf") => {
            let link = headers
                .get("link")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            let text = if link.contains("fcrepo#ExternalContent") {
                s.proxied += 1;
                let file = link
                    .strip_prefix("<file://")
                    .and_then(|l| l.split_once('>'))
                    .map(|(f, _)| {
                        percent_encoding::percent_decode_str(f)
                            .decode_utf8_lossy()
                            .into_owned()
                    })
                    .unwrap_or_default();
                match std::fs::read(&file) {
                    Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                    Err(_) => return empty(StatusCode::BAD_REQUEST),
                }
            } else {
                String::from_utf8_lossy(body).into_owned()
            };
            s.changes += 1;
            let created = s.binaries.insert(p.to_string(), text).is_none();
            empty(if created {
                StatusCode::CREATED
            } else {
                StatusCode::NO_CONTENT
            })
        }
        (Method::PUT, p) => match fields_of(&url, body) {
            Ok(fields) => {
                s.changes += 1;
                let created = s
                    .records
                    .insert(
                        p.to_string(),
                        MockRecord {
                            fields,
                            pending_title: None,
                        },
                    )
                    .is_none();
                empty(if created {
                    StatusCode::CREATED
                } else {
                    StatusCode::NO_CONTENT
                })
            }
            Err(e) => json(StatusCode::BAD_REQUEST, serde_json::json!({ "error": e })),
        },
        (Method::PATCH, p) => {
            let title = match inserted_title(&url, body) {
                Ok(t) => t,
                Err(e) => return json(StatusCode::BAD_REQUEST, serde_json::json!({ "error": e })),
            };
            s.patches += 1;
            s.changes += 1;
            match s.records.get_mut(p) {
                Some(r) => {
                    r.pending_title = Some((now + VISIBILITY_LAG, title));
                    empty(StatusCode::NO_CONTENT)
                }
                None => empty(StatusCode::NOT_FOUND),
            }
        }
        (Method::GET, p) if s.records.contains_key(p) || s.binaries.contains_key(p) => {
            empty(StatusCode::OK)
        }
        (Method::GET, _) => empty(StatusCode::NOT_FOUND),
        _ => empty(StatusCode::METHOD_NOT_ALLOWED),
    }
}

#[derive(Default)]
struct State {
    base: String,
    next: AtomicU64,
    sizes: Mutex<HashMap<String, u64>>,
    puts: AtomicU64,
    posts: AtomicU64,
    gets: AtomicU64,
    fail_every_put: u64,
    auth: Option<String>,
    /// Answer `fcr:search` (else 404, as a Fedora without arca's search).
    search_enabled: bool,
    search: Mutex<SearchState>,
}

struct Mock {
    base: String,
    state: Arc<State>,
}

async fn handle(
    st: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let resp = |code: StatusCode, body: Bytes| {
        let mut r = Response::new(Full::new(body));
        *r.status_mut() = code;
        r
    };
    if let Some(a) = &st.auth {
        let ok = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            == Some(a.as_str());
        if !ok {
            return Ok(resp(StatusCode::UNAUTHORIZED, Bytes::new()));
        }
    }
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or_default().to_string();
    let method = req.method().clone();
    let headers = req.headers().clone();
    let mut body = req.into_body();
    let mut bytes = Vec::new();
    while let Some(f) = body.frame().await {
        if let Some(d) = f?.data_ref() {
            bytes.extend_from_slice(d);
        }
    }
    let n = bytes.len() as u64;
    if path.starts_with("/rest/fcr:search") || path.starts_with("/rest/search-bench") {
        if !st.search_enabled {
            return Ok(resp(
                StatusCode::NOT_FOUND,
                Bytes::from_static(b"Not Found"),
            ));
        }
        return Ok(search_handle(&st, &method, &path, &query, &headers, &bytes));
    }
    Ok(match (method, path.as_str()) {
        (Method::GET, "/rest/") => resp(StatusCode::OK, Bytes::from_static(b"<> a <x> .")),
        (Method::POST, "/rest/") => {
            st.posts.fetch_add(1, Ordering::SeqCst);
            let id = st.next.fetch_add(1, Ordering::SeqCst);
            let mut r = resp(StatusCode::CREATED, Bytes::new());
            // Alternate absolute and path-only Locations.
            let loc = if id.is_multiple_of(2) {
                format!("{}{id}", st.base)
            } else {
                format!("/rest/{id}")
            };
            r.headers_mut().insert("location", loc.parse().unwrap());
            r
        }
        (Method::PUT, p) if p.ends_with("/file") => {
            let k = st.puts.fetch_add(1, Ordering::SeqCst) + 1;
            if st.fail_every_put > 0 && k.is_multiple_of(st.fail_every_put) {
                resp(StatusCode::INTERNAL_SERVER_ERROR, Bytes::new())
            } else {
                st.sizes.lock().unwrap().insert(p.to_string(), n);
                resp(StatusCode::CREATED, Bytes::new())
            }
        }
        (Method::GET, p) => {
            st.gets.fetch_add(1, Ordering::SeqCst);
            match st.sizes.lock().unwrap().get(p) {
                Some(&len) => resp(StatusCode::OK, Bytes::from(vec![7u8; len as usize])),
                None if !p.ends_with("/file") => resp(
                    StatusCode::OK,
                    Bytes::from_static(b"<> a <http://www.w3.org/ns/ldp#Container> ."),
                ),
                None => resp(StatusCode::NOT_FOUND, Bytes::new()),
            }
        }
        _ => resp(StatusCode::METHOD_NOT_ALLOWED, Bytes::new()),
    })
}

async fn start(fail_every_put: u64, auth: Option<&str>) -> Mock {
    start_with(fail_every_put, auth, false).await
}

async fn start_with(fail_every_put: u64, auth: Option<&str>, search: bool) -> Mock {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/rest/", listener.local_addr().unwrap());
    let state = Arc::new(State {
        base: base.clone(),
        fail_every_put,
        auth: auth.map(str::to_string),
        search_enabled: search,
        ..Default::default()
    });
    let st = state.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                break;
            };
            let st = st.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| handle(st.clone(), req));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Mock { base, state }
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    bench: BenchArgs,
}

async fn bench(line: &str, out: &Path) -> (ExitCode, Report) {
    let mut argv = vec!["arca-bench".to_string()];
    argv.extend(line.split_whitespace().map(str::to_string));
    argv.extend([
        "--out".to_string(),
        out.display().to_string(),
        "--no-progress".into(),
    ]);
    let cli = Cli::try_parse_from(argv).unwrap();
    let code = crate::run(cli.bench).await.unwrap();
    let report = Report::load(&out.join("report.json")).unwrap();
    assert!(out.join("report.md").is_file());
    assert!(out.join("chart.svg").is_file());
    (code, report)
}

fn check_counts(r: &Report) {
    for s in &r.scenarios {
        let m = &s.summary;
        assert_eq!(m.transactions, m.ok + m.errors, "{}", s.name);
        assert_eq!(
            m.status_codes.values().sum::<u64>(),
            m.requests,
            "{}",
            s.name
        );
        assert_eq!(
            m.timeline.iter().map(|p| p.transactions).sum::<u64>(),
            m.transactions,
            "{}",
            s.name
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_counts_right_against_a_mock() {
    let mock = start(0, None).await;
    let out = tempfile::tempdir().unwrap();
    let line = format!(
        "ingest-object-only ingest-small access-small access-metadata benchtool burn-in raw search \
         --url {} --clients 2 --count 5 --size 1024 --data-dir {}",
        mock.base,
        out.path().display()
    );
    let (code, r) = bench(&line, out.path()).await;
    check_counts(&r);
    assert_eq!(r.errors, 0, "{}", r.summary);
    assert!(r.summary.starts_with("No errors"), "{}", r.summary);
    assert_eq!(code, ExitCode::SUCCESS);
    let names: Vec<&str> = r.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "raw-fsync-0B-2t",
            "raw-nofsync-0B-2t",
            "raw-layout-container-2t",
            "ingest-object-only",
            "raw-fsync-1KiB-2t",
            "raw-nofsync-1KiB-2t",
            "raw-layout-1KiB-2t",
            "ingest-small",
            "raw-read-1KiB-2t",
            "access-small",
            "access-metadata",
            "raw-fsync-1KiB-1t",
            "raw-nofsync-1KiB-1t",
            "raw-layout-1KiB-1t",
            "benchtool-1-client",
            "benchtool-2-clients",
            "burn-in",
            "raw-fsync-1KiB-2t#2",
            "raw-nofsync-1KiB-2t#2",
            "raw-layout-1KiB-2t#2",
            "search",
        ]
    );
    for s in &r.scenarios {
        match s.kind {
            Kind::Ingest | Kind::BurnIn => {
                assert_eq!(s.summary.ok, 5, "{}", s.name);
                assert_eq!(s.objects_created, 5, "{}", s.name);
                let raw = s.raw.as_ref().expect("compared with raw rows");
                assert!(raw.pct_of_raw.is_some_and(|p| p > 0.0), "{}", s.name);
                assert!(raw.pct_of_raw_layout.is_some_and(|p| p > 0.0), "{}", s.name);
                // 1 KiB objects: no raw-hash row
                assert!(raw.hash_baseline.is_none(), "{}", s.name);
                assert!(s.loadgen.is_some());
            }
            Kind::Access => {
                assert_eq!(s.summary.ok, 5, "{}", s.name);
                assert_eq!(s.setup.as_ref().unwrap().objects_created, 5);
                assert_eq!(s.summary.status_codes["200"], 5);
            }
            Kind::Raw => {
                assert_eq!(s.summary.ok, 5, "{}", s.name);
                if s.config.fsync.is_some() {
                    assert_eq!(s.objects_created, 5, "{}", s.name);
                    assert_eq!(s.disk.as_ref().unwrap().files_after, 5, "{}", s.name);
                }
                assert!(s.server.is_some());
            }
            Kind::Search => {
                assert_eq!(s.status, Status::NotAvailable);
                let note = s.note.as_deref().unwrap();
                assert!(note.contains("fcr:search/status answered 404"), "{note}");
            }
            Kind::Audit => panic!("no audit row in this run: {}", s.name),
        }
    }
    let small = r.row("ingest-small").unwrap();
    assert_eq!(small.summary.status_codes["201"], 10);
    assert_eq!(small.summary.bytes, 5 * 1024);
    let meta = r.row("access-metadata").unwrap();
    assert!(meta.raw.is_none());
    assert!(r
        .row("access-small")
        .unwrap()
        .raw
        .as_ref()
        .unwrap()
        .baseline
        .starts_with("raw-read"));
    assert_eq!(
        r.row("burn-in")
            .unwrap()
            .intervals
            .iter()
            .map(|i| i.ok)
            .sum::<u64>(),
        5
    );
    // ingest-object-only 5 + ingest-small 5 + access setups 10 + benchtool 10 + burn-in 5
    assert_eq!(mock.state.posts.load(Ordering::SeqCst), 35);
    assert_eq!(mock.state.puts.load(Ordering::SeqCst), 25);
    // the raw files are gone
    let leftovers: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".arca-bench-raw")
        })
        .collect();
    assert!(leftovers.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_counted_by_status() {
    let mock = start(3, None).await;
    let out = tempfile::tempdir().unwrap();
    let line = format!(
        "ingest-small --url {} --clients 2 --count 9 --size 100 --no-raw",
        mock.base
    );
    let (code, r) = bench(&line, out.path()).await;
    check_counts(&r);
    let s = r.row("ingest-small").unwrap();
    assert_eq!(s.summary.transactions, 9);
    assert_eq!(s.summary.errors, 3);
    assert_eq!(s.summary.ok, 6);
    assert_eq!(s.objects_created, 6);
    assert_eq!(s.summary.status_codes["500"], 3);
    assert_eq!(s.summary.status_codes["201"], 9 + 6);
    assert!(s
        .summary
        .first_error
        .as_ref()
        .unwrap()
        .message
        .contains("500"));
    assert!(
        r.summary
            .starts_with("ERRORS: 3 failed transactions (ingest-small 3 of 9;"),
        "{}",
        r.summary
    );
    assert_eq!(code, ExitCode::from(crate::EXIT_ERRORS));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_authentication_gives_up_and_says_so() {
    let mock = start(0, Some("Basic dTpw")).await; // u:p
    let out = tempfile::tempdir().unwrap();
    let line = format!(
        "ingest-object-only access-small --url {} --user u --password wrong --clients 2 \
         --duration 30 --no-raw",
        mock.base
    );
    let (code, r) = bench(&line, out.path()).await;
    check_counts(&r);
    assert_eq!(code, ExitCode::from(crate::EXIT_ERRORS));
    assert_eq!(r.target.probe.as_deref(), Some("401"));
    let s = r.row("ingest-object-only").unwrap();
    assert_eq!(s.status, Status::Aborted);
    assert_eq!(s.summary.ok, 0);
    assert_eq!(s.summary.status_codes["401"], s.summary.errors);
    assert!(s.note.as_ref().unwrap().contains("gave up"));
    let a = r.row("access-small").unwrap();
    assert_eq!(a.status, Status::Aborted);
    assert!(a.setup.as_ref().unwrap().status_codes["401"] > 0);
    assert!(r.summary.starts_with("ERRORS"));
    assert!(!r.command.contains("wrong"));

    // the right password works
    let out2 = tempfile::tempdir().unwrap();
    let line = format!(
        "ingest-object-only --url {} --user u --password p --count 3 --no-raw",
        mock.base
    );
    let (code, r) = bench(&line, out2.path()).await;
    assert_eq!(code, ExitCode::SUCCESS, "{}", r.summary);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_server_is_reported_not_panicked() {
    let out = tempfile::tempdir().unwrap();
    let (code, r) = bench(
        "ingest-small access-metadata --url http://127.0.0.1:1/rest/ --clients 4 --duration 60 --no-raw",
        out.path(),
    )
    .await;
    check_counts(&r);
    assert_eq!(code, ExitCode::from(crate::EXIT_ERRORS));
    assert!(r.summary.starts_with("ERRORS"), "{}", r.summary);
    assert!(r.summary.contains("connect-error"), "{}", r.summary);
    let s = r.row("ingest-small").unwrap();
    assert_eq!(s.status, Status::Aborted);
    assert!(s.summary.status_codes["connect-error"] >= crate::driver::GIVE_UP_AFTER);
    assert!(s.elapsed_s < 20.0);
    assert!(r
        .target
        .probe
        .as_ref()
        .unwrap()
        .starts_with("connect-error"));
}

/// A corpus directory of `n` synthetic records (some with "fish" or "animal" in the abstract,
/// some by a James, one with "University" in its comment, TeX and quotes throughout) and two
/// PDFs whose text holds "university" but not "fish".
fn tiny_corpus(n: usize) -> tempfile::TempDir {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let file = std::fs::File::create(dir.path().join("records.jsonl.gz")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(file, Default::default());
    for i in 0..n {
        let abs = match i % 5 {
            0 => format!("We count fish in lake {i} with $\\\\alpha$-nets."),
            1 => "An \\\"animal\\\" model.\\nSecond line.".to_string(),
            2 => "Animal tracking and fish ladders.".to_string(),
            _ => format!("Graph {i} theory."),
        };
        let first = if i % 3 == 0 { "James" } else { "Ann" };
        let comment = if i == 7 {
            r#","comment":"University of Testing""#
        } else {
            ""
        };
        writeln!(
            gz,
            r#"{{"id":"arxiv:2501.{i:05}","arxiv_id":"2501.{i:05}","title":"Paper {i}","abstract":"{abs}","creators":[{{"first":"{first}","last":"Doe"}},{{"first":"","last":"Plato"}}],"subjects":["cs.CV"],"subject_labels":["Computer Vision and Pattern Recognition"],"date":"2025-01-01"{comment}}}"#
        )
        .unwrap();
    }
    gz.finish().unwrap();
    std::fs::create_dir(dir.path().join("pdf")).unwrap();
    std::fs::write(
        dir.path().join("pdf/a.pdf"),
        "%PDF-1.4 stand-in: University of Somewhere",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("pdf/b c.pdf"),
        "%PDF-1.4 stand-in: a university hospital",
    )
    .unwrap();
    dir
}

fn search_rows(r: &Report) -> Vec<(&crate::report::ScenarioReport, &SearchDetail)> {
    r.scenarios
        .iter()
        .map(|s| (s, s.search.as_ref().expect("search detail")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_runs_end_to_end_against_a_mock() {
    let mock = start_with(0, None, true).await;
    let corpus = tiny_corpus(25);
    let out = tempfile::tempdir().unwrap();
    // 20 corpus records, replicated to 50: measured at 20 and at 50.
    let line = format!(
        "search --url {} --quick --objects 50 --corpus-records 20 --corpus {} --clients 4 \
         --duration 0.2",
        mock.base,
        corpus.path().display()
    );
    let (code, r) = bench(&line, out.path()).await;
    check_counts(&r);
    assert_eq!(r.errors, 0, "{}\n{}", r.summary, r.to_markdown());
    assert_eq!(code, ExitCode::SUCCESS);
    let names: Vec<&str> = r.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names.len(), 2 * (1 + 1 + 27 + 1), "{names:?}");
    assert_eq!(names[0], "search-load@20");
    assert_eq!(names[1], "search-visible@20");
    assert_eq!(names[2], "search-q1-1t-0pct@20");
    assert_eq!(names[29], "search-reindex@20");
    assert_eq!(names[30], "search-load@50");
    assert_eq!(names[59], "search-reindex@50");
    // The rebuilt index is asked the three queries and answers what the live one did.
    let q1 = r
        .row("search-q1-1t-0pct@50")
        .unwrap()
        .search
        .as_ref()
        .unwrap();
    let SearchDetail::Cell(q1) = q1 else {
        unreachable!()
    };
    let note = r.row("search-reindex@50").unwrap().note.clone().unwrap();
    let q1_hits = q1.hits_max.unwrap();
    assert!(
        note.contains(&format!(
            "q1: {q1_hits} hits before the reindex, {q1_hits} after"
        )),
        "{note}"
    );
    assert!(note.contains("q3: "), "{note}");
    let rows = search_rows(&r);
    let mut pdfs = 0;
    for (s, d) in &rows {
        assert_eq!(s.kind, Kind::Search);
        assert_eq!(s.status, Status::Completed, "{}: {:?}", s.name, s.note);
        match d {
            SearchDetail::Load(l) => {
                assert_eq!(l.loaded, l.objects - l.present_before);
                assert_eq!(s.objects_created, l.loaded);
                assert!(l.catch_up_s.is_some(), "{}", s.name);
                assert_eq!(l.pdf_mode, "copy");
                pdfs = l.with_pdf;
            }
            SearchDetail::Visibility(v) => {
                assert_eq!(s.summary.ok, 10, "{}", s.name);
                assert_eq!(v.writes.ok, 10);
                // About the mock's indexing lag (which starts before the answer is sent:
                // half of it leaves room for a loaded machine's delivery of the answer).
                assert!(s.summary.p50_ms >= 50.0, "{}", s.summary.p50_ms);
            }
            SearchDetail::Cell(c) => {
                assert!(s.summary.ok > 0, "{}", s.name);
                assert_eq!(s.config.clients, c.threads);
                // The mock indexes what was sent: every answer has the count computed from
                // the corpus, and it never changes under updates.
                assert!(c.expected.is_some(), "{}", s.name);
                assert_eq!(c.hits_min, c.expected, "{}", s.name);
                assert_eq!(c.hits_max, c.expected, "{}", s.name);
                if c.update_pct > 0 {
                    let u = c.updates.as_ref().unwrap();
                    let v = c.visibility.as_ref().unwrap();
                    assert_eq!(u.errors + v.errors, 0, "{}", s.name);
                    assert_eq!(v.ok, u.ok, "{}: every update found", s.name);
                    if v.ok > 0 {
                        assert!(v.p50_ms >= 50.0, "{}: {}", s.name, v.p50_ms);
                    }
                } else {
                    assert!(c.updates.is_none() && c.visibility.is_none());
                }
            }
            SearchDetail::Reindex(x) => {
                assert_eq!(s.summary.ok, 1);
                assert!(x.documents.unwrap() >= x.objects, "{x:?}");
                assert!(x.client_objects_per_s.is_some());
            }
        }
    }
    // Replicas count again: the counts at 50 are those at 20, 2.5 times over.
    let hits = |name: &str| match r.row(name).unwrap().search.as_ref().unwrap() {
        SearchDetail::Cell(c) => c.hits_max.unwrap(),
        _ => unreachable!(),
    };
    assert!(hits("search-q1-1t-0pct@20") > 0);
    assert!(hits("search-q1-1t-0pct@50") > 2 * hits("search-q1-1t-0pct@20"));
    // Some of the 5 % cells updated (20 to 60 operations each at 0.2 s here).
    let updated: u64 = rows
        .iter()
        .filter_map(|(_, d)| match d {
            SearchDetail::Cell(c) => c.updates.as_ref().map(|u| u.ok),
            _ => None,
        })
        .sum();
    assert!(updated > 0);
    {
        let st = mock.state.search.lock().unwrap();
        assert_eq!(st.records.len(), 2 + 50 + 2, "containers, records, markers");
        assert_eq!(st.binaries.len() as u64, pdfs);
        // 15 of every 20 corpus records, twice; then 6 of the next 8 and 1 or 2 of the last 2.
        assert!((37..=38).contains(&pdfs), "{pdfs}");
        assert_eq!(st.patches, 20 + updated);
    }
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    for s in [
        "## Search",
        "### 20 objects",
        "### 50 objects",
        "### Targets at 50 objects (the targets are set for 120000)",
        "| q3 | 3 | 5 % |",
    ] {
        assert!(md.contains(s), "{s}:\n{md}");
    }

    // A second run finds the records (markers) and loads nothing.
    let out2 = tempfile::tempdir().unwrap();
    let puts_before = mock.state.search.lock().unwrap().changes;
    let line = line.replace("--duration 0.2", "--duration 0.05");
    let (code, r2) = bench(&line, out2.path()).await;
    assert_eq!(code, ExitCode::SUCCESS, "{}", r2.summary);
    for name in ["search-load@20", "search-load@50"] {
        let row = r2.row(name).unwrap();
        assert!(
            row.note.as_deref().unwrap().contains("already loaded"),
            "{name}"
        );
        assert_eq!(row.summary.transactions, 0);
    }
    let st = mock.state.search.lock().unwrap();
    // Only title updates changed anything.
    assert_eq!(st.changes - puts_before, st.patches - 20 - updated);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_sends_pdfs_as_proxied_links() {
    let mock = start_with(0, None, true).await;
    let corpus = tiny_corpus(8);
    let out = tempfile::tempdir().unwrap();
    let line = format!(
        "search --url {} --quick --objects 8 --corpus {} --pdf-mode proxy --duration 0.05",
        mock.base,
        corpus.path().display()
    );
    let (code, r) = bench(&line, out.path()).await;
    assert_eq!(code, ExitCode::SUCCESS, "{}", r.summary);
    let load = r.row("search-load@8").unwrap();
    let Some(SearchDetail::Load(l)) = &load.search else {
        panic!("no load detail")
    };
    assert_eq!((l.with_pdf, l.pdf_mode.as_str()), (6, "proxy"));
    // Nothing but Turtle was uploaded.
    assert_eq!(load.summary.bytes, 0);
    {
        let st = mock.state.search.lock().unwrap();
        assert_eq!(st.proxied, 6);
        // The mock read each file through its link (one of them has a space in its name).
        assert!(st.binaries.values().all(|t| t.contains("niversity")));
        assert!(st.records.keys().all(|k| !k.contains("s1-copy")));
    }
    // So the PDFs' text counted: q3 found what the records predict.
    let Some(SearchDetail::Cell(c)) = &r.row("search-q3-1t-0pct@8").unwrap().search else {
        panic!("no cell detail")
    };
    assert!(c.expected.unwrap() > 0);
    assert_eq!(c.hits_max, c.expected);
}
