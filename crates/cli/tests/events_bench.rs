//! The notification benchmark of issue 11 (BENCHMARKS.md "Notifications"), not a test: it
//! prints figures and asserts nothing about time. Run it in release mode, alone on the
//! machine:
//!
//! ```text
//! cargo test --release -p arca-cli --test events_bench -- --ignored --nocapture
//! ```
//!
//! It starts a private Apache ActiveMQ (Debian's package) and the real `arca serve`, and
//! measures, in one run:
//! 1. ingest (16 clients, empty containers and 20 KiB binaries) with events delivered to the
//!    broker and without events, alternating rounds;
//! 2. ingest while the broker is stopped for 30 s: the rate per 5 s before, during and after,
//!    and how long after the broker's return every event has arrived at a subscriber;
//! 3. the latency from a write's 2xx to its event at a STOMP subscriber, p50 and p99, at a
//!    modest rate and under full ingest.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arca_events::stomp::{StompTarget, Subscriber};
use arca_testkit::activemq::ActiveMq;
use hyper::Method;

use common::{Arca, Http};

/// Fedora's topic, where a subscriber gets what is sent while it listens (the broker stores
/// nothing), and a queue, which keeps what arrives while the subscriber reconnects (the
/// broker stores every message: a disk write per message on the same disk as arca's).
const TOPIC: &str = "/topic/fedora";
const QUEUE: &str = "/queue/arca-bench";
const CLIENTS: usize = 16;
const ROUND: Duration = Duration::from_secs(20);

/// When each write was answered, by the URL of the resource it created.
#[derive(Default)]
struct Times(std::sync::Mutex<HashMap<String, Instant>>);

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Empty,
    Small,
}

/// Writes for `length` with `clients` tasks under `parent`; returns how many succeeded and
/// the answers per 5 s window. With `times`, records when each write was answered.
async fn ingest(
    arca: &Arca,
    parent: &str,
    kind: Kind,
    clients: usize,
    length: Duration,
    times: Option<Arc<Times>>,
) -> (u64, Vec<u64>) {
    let http = Http::new();
    let r = http
        .request(
            Method::PUT,
            &arca.url(&format!("/{parent}")),
            &[("content-type", "text/turtle")],
            "",
        )
        .await;
    assert!(r.status.is_success(), "{}", r.text());
    let done = Arc::new(AtomicU64::new(0));
    let windows: Arc<Vec<AtomicU64>> = Arc::new(
        (0..(length.as_secs() / 5 + 2))
            .map(|_| AtomicU64::new(0))
            .collect(),
    );
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let payload = bytes::Bytes::from(vec![b'x'; 20 * 1024]);
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (http, done, windows, stop) =
            (http.clone(), done.clone(), windows.clone(), stop.clone());
        let (url, payload, times) = (
            arca.url(&format!("/{parent}")),
            payload.clone(),
            times.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let slug = format!("c{c}-{i}");
                i += 1;
                let (headers, body): (Vec<(&str, &str)>, bytes::Bytes) = match kind {
                    Kind::Empty => (vec![("slug", &slug)], bytes::Bytes::new()),
                    Kind::Small => (
                        vec![
                            ("slug", &slug),
                            ("content-type", "application/octet-stream"),
                        ],
                        payload.clone(),
                    ),
                };
                let r = http.request(Method::POST, &url, &headers, body).await;
                if r.status.as_u16() == 201 {
                    let at = Instant::now();
                    if let Some(times) = &times {
                        let path = r.header("location").unwrap_or_default().to_string();
                        times.0.lock().unwrap().insert(path, at);
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                    let w = (started.elapsed().as_secs() / 5) as usize;
                    if let Some(slot) = windows.get(w) {
                        slot.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    tokio::time::sleep(length).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let per_window = windows
        .iter()
        .map(|w| w.load(Ordering::Relaxed))
        .take((length.as_secs() / 5) as usize)
        .collect();
    (done.load(Ordering::Relaxed), per_window)
}

/// Receives events in the background: the arrival time of each `Create` by resource URL,
/// and the highest sequence number seen.
struct Listener {
    arrivals: Arc<std::sync::Mutex<HashMap<String, Instant>>>,
    highest: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Listener {
    fn start(target: StompTarget, destination: &'static str) -> Self {
        let arrivals = Arc::new(std::sync::Mutex::new(HashMap::new()));
        let highest = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, h, s) = (arrivals.clone(), highest.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let mut sub: Option<Subscriber> = None;
            while !s.load(Ordering::Relaxed) {
                if sub.is_none() {
                    match Subscriber::connect(&target, destination, Duration::from_secs(5)).await {
                        Ok(x) => sub = Some(x),
                        Err(_) => {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        }
                    }
                }
                match sub.as_mut().unwrap().next(Duration::from_millis(200)).await {
                    Ok(Some(m)) => {
                        let at = Instant::now();
                        let seq: u64 = m.header("arca.seq").unwrap_or("0").parse().unwrap_or(0);
                        h.fetch_max(seq, Ordering::Relaxed);
                        if m.header("org.fcrepo.jms.eventType")
                            .is_some_and(|t| t.ends_with("#Create"))
                        {
                            let body: serde_json::Value =
                                serde_json::from_slice(&m.body).unwrap_or_default();
                            if let Some(url) = body["object"]["id"].as_str() {
                                a.lock().unwrap().entry(url.to_string()).or_insert(at);
                            }
                        }
                    }
                    Ok(None) => {}
                    Err(_) => sub = None,
                }
            }
        });
        Self {
            arrivals,
            highest,
            stop,
            task,
        }
    }

    async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.task.await;
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Latencies (ms) from each write's answer to its event's arrival.
fn latencies(times: &Times, arrivals: &HashMap<String, Instant>) -> Vec<f64> {
    let times = times.0.lock().unwrap();
    let mut out: Vec<f64> = times
        .iter()
        .filter_map(|(url, answered)| {
            arrivals
                .get(url)
                .map(|arrived| arrived.saturating_duration_since(*answered).as_secs_f64() * 1e3)
        })
        .collect();
    out.sort_by(|a, b| a.partial_cmp(b).unwrap());
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run with --release --ignored --nocapture"]
async fn notifications_benchmark() {
    let Some(mut broker) = ActiveMq::start() else {
        return;
    };
    let url = broker.stomp_url();
    let target = StompTarget::parse(&url).unwrap();
    let topic_env = [
        ("ARCA_EVENTS_STOMP_URL", url.as_str()),
        ("ARCA_EVENTS_DESTINATION", TOPIC),
    ];
    let queue_env = [
        ("ARCA_EVENTS_STOMP_URL", url.as_str()),
        ("ARCA_EVENTS_DESTINATION", QUEUE),
    ];

    // What the runs wrote is deleted at the end: deleting it between rounds takes minutes
    // and would load the disk of the next round.
    let data = tempfile::tempdir().unwrap();

    // 1. Events on vs off, alternating rounds on one data directory (the server restarted
    //    with and without a broker; each round under a container of its own).
    for (kind, name) in [
        (Kind::Empty, "empty containers"),
        (Kind::Small, "20 KiB binaries"),
    ] {
        let (mut on, mut off) = (Vec::new(), Vec::new());
        for round in 0..2 {
            for events in [false, true] {
                let env: &[(&str, &str)] = if events { &topic_env } else { &[] };
                let arca = Arca::serve_with(data.path(), env);
                let listener = events.then(|| Listener::start(target.clone(), TOPIC));
                let (n, _) = ingest(
                    &arca,
                    &format!("{}-{round}-{events}", name.replace(' ', "-")),
                    kind,
                    CLIENTS,
                    ROUND,
                    None,
                )
                .await;
                let rate = n as f64 / ROUND.as_secs_f64();
                if events {
                    let end = arca.last_event(&Http::new()).await as u64;
                    let l = listener.unwrap();
                    let waited = Instant::now();
                    while l.highest.load(Ordering::Relaxed) < end
                        && waited.elapsed() < Duration::from_secs(60)
                    {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    eprintln!(
                        "  {name} round {round} events on: {rate:.0}/s; all {end} events at the subscriber {:.2} s after the last write",
                        waited.elapsed().as_secs_f64()
                    );
                    l.stop().await;
                    on.push(rate);
                } else {
                    eprintln!("  {name} round {round} events off: {rate:.0}/s");
                    off.push(rate);
                }
                arca.stop();
            }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        eprintln!(
            "INGEST {name}: events on {:.0}/s, off {:.0}/s, on/off {:.3}",
            mean(&on),
            mean(&off),
            mean(&on) / mean(&off)
        );
    }

    // 2. The broker stops for 30 s during 60 s of ingest.
    {
        let arca = Arca::serve_with(data.path(), &queue_env);
        let listener = Listener::start(target.clone(), QUEUE);
        let load = ingest(
            &arca,
            "outage",
            Kind::Empty,
            CLIENTS,
            Duration::from_secs(60),
            None,
        );
        let outage = async {
            tokio::time::sleep(Duration::from_secs(15)).await;
            tokio::task::block_in_place(|| broker.stop());
            tokio::time::sleep(Duration::from_secs(30)).await;
            tokio::task::block_in_place(|| broker.start_again());
            Instant::now()
        };
        let ((n, windows), returned) = tokio::join!(load, outage);
        let end = arca.last_event(&Http::new()).await as u64;
        while listener.highest.load(Ordering::Relaxed) < end
            && returned.elapsed() < Duration::from_secs(120)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let drained = returned.elapsed();
        eprintln!(
            "OUTAGE ingest per 5 s (broker down from 15 s to 45 s): {windows:?} ({n} in 60 s)"
        );
        eprintln!(
            "OUTAGE every one of {end} events at the subscriber {:.2} s after the broker returned (ingest ran on for {:.1} s of that)",
            drained.as_secs_f64(),
            15.0f64.min(drained.as_secs_f64())
        );
        listener.stop().await;
        arca.stop();
    }

    // 3. Latency from the 2xx to the event, at 50 writes/s and under full ingest.
    for (clients, pace, label) in [
        (1usize, true, "1 client, 50 writes/s"),
        (CLIENTS, false, "16 clients, full ingest"),
    ] {
        let arca = Arca::serve_with(data.path(), &topic_env);
        let listener = Listener::start(target.clone(), TOPIC);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let times = Arc::new(Times::default());
        if pace {
            let http = Http::new();
            http.request(
                Method::PUT,
                &arca.url("/lat-paced"),
                &[("content-type", "text/turtle")],
                "",
            )
            .await;
            for i in 0..1000 {
                let r = http
                    .request(
                        Method::PUT,
                        &arca.url(&format!("/lat-paced/p{i}")),
                        &[("content-type", "text/turtle")],
                        "",
                    )
                    .await;
                times.0.lock().unwrap().insert(
                    r.header("location").unwrap_or_default().to_string(),
                    Instant::now(),
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        } else {
            ingest(
                &arca,
                "lat-load",
                Kind::Empty,
                clients,
                ROUND,
                Some(times.clone()),
            )
            .await;
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        let lat = latencies(&times, &listener.arrivals.lock().unwrap());
        eprintln!(
            "LATENCY {label}: {} events, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            lat.len(),
            percentile(&lat, 0.5),
            percentile(&lat, 0.99),
            lat.last().copied().unwrap_or(f64::NAN)
        );
        listener.stop().await;
        arca.stop();
    }
}
