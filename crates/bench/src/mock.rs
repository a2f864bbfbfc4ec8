//! A tiny in-process Fedora API stand-in (POST container, PUT binary, GET) for end-to-end
//! tests of the whole tool without arca: counting, error injection, authentication.

use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use crate::report::{Kind, Report, Status};
use crate::BenchArgs;

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
    let method = req.method().clone();
    let mut body = req.into_body();
    let mut n = 0u64;
    while let Some(f) = body.frame().await {
        if let Some(d) = f?.data_ref() {
            n += d.len() as u64;
        }
    }
    Ok(match (method, path.as_str()) {
        (Method::GET, "/rest/") => resp(StatusCode::OK, Bytes::from_static(b"<> a <x> .")),
        (Method::POST, "/rest/") => {
            st.posts.fetch_add(1, Ordering::SeqCst);
            let id = st.next.fetch_add(1, Ordering::SeqCst);
            let mut r = resp(StatusCode::CREATED, Bytes::new());
            // Alternate absolute and path-only Locations.
            let loc = if id % 2 == 0 {
                format!("{}{id}", st.base)
            } else {
                format!("/rest/{id}")
            };
            r.headers_mut().insert("location", loc.parse().unwrap());
            r
        }
        (Method::PUT, p) if p.ends_with("/file") => {
            let k = st.puts.fetch_add(1, Ordering::SeqCst) + 1;
            if st.fail_every_put > 0 && k % st.fail_every_put == 0 {
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
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/rest/", listener.local_addr().unwrap());
    let state = Arc::new(State {
        base: base.clone(),
        fail_every_put,
        auth: auth.map(str::to_string),
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
            Kind::Search => assert_eq!(s.status, Status::NotAvailable),
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
