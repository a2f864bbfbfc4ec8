//! The notification benchmark of issue 11 (BENCHMARKS.md "Notifications"), not a test: it
//! prints figures and asserts nothing about time. Run it in release mode, alone on the
//! machine:
//!
//! ```text
//! cargo test --release -p arca-cli --test activemq -- --ignored --nocapture events_bench::
//! ```
//!
//! It starts a private Apache ActiveMQ (Debian's package) and the real `arca serve`, and
//! measures, in one run, every round on a fresh data directory with a fresh subscription
//! (each queue round a queue of its own):
//! 1. the broker alone: a plain STOMP sender (arca's `Publisher`, batches of 1,000
//!    event-shaped messages, a receipt on the last) into the topic with a subscriber and
//!    into a persistent queue, messages/s and the broker's CPU per message — the bound for
//!    what arca can hand over;
//! 2. ingest (16 clients, empty containers and 20 KiB binaries) with events delivered to
//!    `/topic/fedora` (a subscriber attached) and without events, alternating rounds, with the
//!    CPU time of arca, the broker and this process (load generator and subscriber) per object;
//! 3. the latency from a write's 2xx to its event at a STOMP subscriber (on a thread of its
//!    own), p50 and p99, at 50 writes/s and under full ingest, on the topic and on a queue;
//! 4. ingest while the broker is stopped for 30 s, on the topic and on a persistent queue: the
//!    rate per 5 s, and how long after the broker's return the broker has acknowledged
//!    (arca's delivered position) and the subscriber received every event of the outage.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arca_events::stomp::{Outgoing, Publisher, StompTarget, Subscriber};
use arca_testkit::activemq::ActiveMq;
use hyper::Method;

use crate::common::{Arca, Http};

/// Fedora's topic, where a subscriber gets what is sent while it listens (the broker stores
/// nothing), and queues, which keep every message (a disk write per message, on the same
/// disk as arca's).
const TOPIC: &str = "/topic/fedora";
const CLIENTS: usize = 16;
const ROUND: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Empty,
    Small,
}

/// CPU time (user + system) of a process so far, from `/proc/<pid>/stat`.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name (which is in parentheses and may hold spaces).
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let per_second = rustix::param::clock_ticks_per_second() as f64;
    (ticks(11) + ticks(12)) / per_second
}

/// CPU seconds the whole machine has been busy (all cores), from `/proc/stat`.
fn machine_busy_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<f64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal: all but idle and iowait.
    let busy: f64 = ticks.iter().take(8).sum::<f64>()
        - ticks.get(3).copied().unwrap_or(0.0)
        - ticks.get(4).copied().unwrap_or(0.0);
    busy / rustix::param::clock_ticks_per_second() as f64
}

/// CPU seconds of arca, the broker, this process and the whole machine, read together.
#[derive(Clone, Copy)]
struct Cpu {
    arca: f64,
    broker: f64,
    bench: f64,
    machine: f64,
}

impl Cpu {
    fn read(arca: &Arca, broker: &ActiveMq) -> Self {
        Cpu {
            arca: cpu_seconds(arca.pid()),
            broker: broker.pid().map_or(0.0, cpu_seconds),
            bench: cpu_seconds(std::process::id()),
            machine: machine_busy_seconds(),
        }
    }

    fn since(self, before: Cpu) -> Cpu {
        Cpu {
            arca: self.arca - before.arca,
            broker: self.broker - before.broker,
            bench: self.bench - before.bench,
            machine: self.machine - before.machine,
        }
    }

    /// CPU seconds of everything else on the machine (another tenant's build).
    fn others(&self) -> f64 {
        (self.machine - self.arca - self.broker - self.bench).max(0.0)
    }
}

/// When each write was answered, by the path of the resource it created (`/a/b`).
#[derive(Default)]
struct Times(Mutex<HashMap<String, Instant>>);

/// Writes for `length` with `clients` tasks under `parent`, or `paced` (one client, a write
/// every `paced`); returns how many succeeded and the answers per 5 s window. With `times`,
/// records when each write was answered.
async fn ingest(
    arca: &Arca,
    parent: &str,
    kind: Kind,
    clients: usize,
    length: Duration,
    paced: Option<Duration>,
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
    let base_len = arca.base.len();
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
            let mut next = tokio::time::Instant::now();
            while !stop.load(Ordering::Relaxed) {
                if let Some(every) = paced {
                    tokio::time::sleep_until(next).await;
                    next += every;
                }
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
                        let location = r.header("location").unwrap_or_default();
                        let path = location.get(base_len..).unwrap_or_default().to_string();
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

/// A STOMP subscriber on a thread and runtime of its own (so that the load generator's tasks
/// do not delay what it notes): the highest sequence number and the number of messages
/// received, and with `record`, the arrival of each `Create` by the resource's path.
struct Listener {
    arrivals: Arc<Mutex<HashMap<String, Instant>>>,
    highest: Arc<AtomicU64>,
    received: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Listener {
    /// Subscribes (and returns once the subscription is active), reconnecting whenever the
    /// connection breaks.
    fn start(target: StompTarget, destination: String, record: bool) -> Self {
        let arrivals = Arc::new(Mutex::new(HashMap::new()));
        let highest = Arc::new(AtomicU64::new(0));
        let received = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, h, n, s) = (
            arrivals.clone(),
            highest.clone(),
            received.clone(),
            stop.clone(),
        );
        let (ready, subscribed) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let mut sub: Option<Subscriber> = None;
                while !s.load(Ordering::Relaxed) {
                    if sub.is_none() {
                        match Subscriber::connect(&target, &destination, Duration::from_secs(5))
                            .await
                        {
                            Ok(x) => {
                                sub = Some(x);
                                let _ = ready.send(());
                            }
                            Err(_) => {
                                tokio::time::sleep(Duration::from_millis(50)).await;
                                continue;
                            }
                        }
                    }
                    match sub.as_mut().unwrap().next(Duration::from_millis(200)).await {
                        Ok(Some(m)) => {
                            let at = Instant::now();
                            n.fetch_add(1, Ordering::Relaxed);
                            let seq: u64 = m.header("arca.seq").unwrap_or("0").parse().unwrap_or(0);
                            h.fetch_max(seq, Ordering::Relaxed);
                            if record
                                && m.header("org.fcrepo.jms.eventType")
                                    .is_some_and(|t| t.ends_with("#Create"))
                            {
                                if let Some(path) = m.header("org.fcrepo.jms.identifier") {
                                    a.lock().unwrap().entry(path.to_string()).or_insert(at);
                                }
                            }
                        }
                        Ok(None) => {}
                        Err(_) => sub = None,
                    }
                }
            });
        });
        subscribed
            .recv_timeout(Duration::from_secs(30))
            .expect("the subscription is active");
        Self {
            arrivals,
            highest,
            received,
            stop,
            thread,
        }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Latencies (ms, sorted) from each write's answer to its event's arrival, and how many
/// writes had no event.
fn latencies(times: &Times, arrivals: &HashMap<String, Instant>) -> (Vec<f64>, usize) {
    let times = times.0.lock().unwrap();
    let mut out: Vec<f64> = times
        .iter()
        .filter_map(|(path, answered)| {
            arrivals
                .get(path)
                .map(|arrived| arrived.saturating_duration_since(*answered).as_secs_f64() * 1e3)
        })
        .collect();
    out.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let missing = times.len() - out.len();
    (out, missing)
}

/// The position the broker has acknowledged for the first destination, from `fcr:events`.
async fn delivered(arca: &Arca, http: &Http) -> i64 {
    let r = http.get(&arca.url("/fcr:events?limit=1"), &[]).await;
    let page: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
    page["destinations"][0]["delivered"].as_i64().unwrap_or(0)
}

/// A fresh data directory for one round, and its removal (not timed) afterwards. As root
/// with `mkfs.ext4`, each round gets a file system of its own (a sparse image, loop
/// mounted): on the shared disk, creating files after large deletions is slowed by ext4's
/// inode allocator skipping recently deleted inodes, which made every round after the first
/// several times slower. Otherwise (or with `ARCA_BENCH_LOOP=0`) a directory in `parent`.
struct Round {
    dir: tempfile::TempDir,
    mount: Option<std::path::PathBuf>,
}

impl Round {
    fn new(parent: &Path) -> Self {
        let dir = tempfile::tempdir_in(parent).unwrap();
        let loop_ok = std::env::var("ARCA_BENCH_LOOP").as_deref() != Ok("0")
            && rustix::process::geteuid().is_root();
        if loop_ok {
            let image = dir.path().join("fs.img");
            let mount = dir.path().join("mnt");
            std::fs::create_dir(&mount).unwrap();
            std::fs::File::create(&image)
                .unwrap()
                .set_len(40 << 30)
                .unwrap();
            let run = |program: &str, args: &[&std::ffi::OsStr]| {
                std::process::Command::new(program)
                    .args(args)
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if run(
                "mkfs.ext4",
                &["-q".as_ref(), "-F".as_ref(), image.as_os_str()],
            ) && run(
                "mount",
                &[
                    "-o".as_ref(),
                    "loop".as_ref(),
                    image.as_os_str(),
                    mount.as_os_str(),
                ],
            ) {
                std::fs::create_dir(mount.join("data")).unwrap();
                return Round {
                    dir,
                    mount: Some(mount),
                };
            }
            eprintln!(
                "    (no loop-mounted file system: the round runs in {})",
                dir.path().display()
            );
        }
        Round { dir, mount: None }
    }

    fn path(&self) -> std::path::PathBuf {
        match &self.mount {
            Some(mount) => mount.join("data"),
            None => self.dir.path().to_path_buf(),
        }
    }

    fn remove(self) {
        let started = Instant::now();
        let used = std::process::Command::new("du")
            .args(["-sh", "--apparent-size"])
            .arg(self.path())
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .next()
                    .unwrap_or("?")
                    .to_string()
            })
            .unwrap_or_default();
        if let Some(mount) = &self.mount {
            let _ = std::process::Command::new("umount").arg(mount).status();
        }
        drop(self.dir);
        rustix::fs::sync();
        eprintln!(
            "    (data {used}; removed in {:.1} s)",
            started.elapsed().as_secs_f64()
        );
    }
}

fn env<'a>(url: &'a str, destination: &'a str) -> [(&'a str, &'a str); 2] {
    [
        ("ARCA_EVENTS_STOMP_URL", url),
        ("ARCA_EVENTS_DESTINATION", destination),
    ]
}

/// An event-shaped message: Fedora's headers and a body of the usual size.
fn event_like(n: usize) -> Outgoing {
    let headers = [
        ("org.fcrepo.jms.identifier", format!("/bench/c0-{n}")),
        (
            "org.fcrepo.jms.eventType",
            "https://www.w3.org/ns/activitystreams#Create".to_string(),
        ),
        ("org.fcrepo.jms.user", "fedoraAdmin".to_string()),
        (
            "org.fcrepo.jms.baseURL",
            "http://127.0.0.1:8080/rest".to_string(),
        ),
        (
            "org.fcrepo.jms.resourceType",
            "http://www.w3.org/ns/ldp#BasicContainer,http://www.w3.org/ns/ldp#RDFSource,http://www.w3.org/ns/ldp#Container,http://fedora.info/definitions/v4/repository#Resource,http://fedora.info/definitions/v4/repository#Container".to_string(),
        ),
        (
            "org.fcrepo.jms.eventID",
            format!("urn:uuid:00000000-0000-5000-8000-{n:012}"),
        ),
        ("org.fcrepo.jms.timestamp", "1795549056531".to_string()),
        ("arca.seq", n.to_string()),
    ];
    Outgoing {
        headers: headers
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        body: vec![b'x'; 900],
    }
}

/// Sends `count` event-shaped messages in batches of 1,000 as arca does; returns the rate
/// and the broker's CPU seconds per message.
async fn broker_intake(
    broker: &ActiveMq,
    target: &StompTarget,
    destination: &str,
    count: usize,
) -> (f64, f64, u64) {
    let listener = Listener::start(target.clone(), destination.to_string(), false);
    let mut publisher = Publisher::connect(target, Duration::from_secs(10))
        .await
        .unwrap();
    let messages: Vec<Outgoing> = (0..count).map(event_like).collect();
    let cpu = broker.pid().map_or(0.0, cpu_seconds);
    let started = Instant::now();
    for batch in messages.chunks(1000) {
        publisher
            .send_batch(destination, batch, Duration::from_secs(60))
            .await
            .unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let broker_cpu = broker.pid().map_or(0.0, cpu_seconds) - cpu;
    let waited = Instant::now();
    while (listener.received.load(Ordering::Relaxed) as usize) < count
        && waited.elapsed() < Duration::from_secs(60)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let received = listener.received.load(Ordering::Relaxed);
    listener.stop();
    publisher.close().await;
    (count as f64 / elapsed, broker_cpu / count as f64, received)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run with --release --ignored --nocapture"]
async fn notifications_benchmark() {
    let Some(mut broker) = ActiveMq::start() else {
        return;
    };
    let url = broker.stomp_url();
    let target = StompTarget::parse(&url).unwrap();
    let rounds: usize = std::env::var("ARCA_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    // Where the rounds' data go (`ARCA_BENCH_DIR`, e.g. /dev/shm; default the system's
    // temporary directory).
    let parent = match std::env::var_os("ARCA_BENCH_DIR") {
        Some(dir) => tempfile::tempdir_in(dir).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    // Which parts run (`ARCA_BENCH_PARTS`, e.g. "ingest,replay"; default all).
    let parts = std::env::var("ARCA_BENCH_PARTS")
        .unwrap_or_else(|_| "broker,ingest,latency,outage".to_string());
    let part = |name: &str| parts.split(',').any(|p| p.trim() == name);
    let mut queue_number = 0;
    let mut fresh_queue = || {
        queue_number += 1;
        format!("/queue/arca-bench-{queue_number}")
    };

    // 1. The broker alone.
    for (destination, label) in (part("broker"))
        .then_some([
            (TOPIC.to_string(), "topic, a subscriber"),
            (fresh_queue(), "persistent queue, a subscriber"),
        ])
        .into_iter()
        .flatten()
    {
        let (rate, cpu, received) = broker_intake(&broker, &target, &destination, 100_000).await;
        eprintln!(
            "BROKER ALONE {label}: 100000 messages sent at {rate:.0}/s, broker CPU {:.1} µs per message, {received} at the subscriber",
            cpu * 1e6
        );
    }

    // 2. Events on vs off, alternating rounds, each on a fresh data directory.
    for (kind, name) in part("ingest")
        .then_some([
            (Kind::Empty, "empty containers"),
            (Kind::Small, "20 KiB binaries"),
        ])
        .into_iter()
        .flatten()
    {
        let (mut on, mut off) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            for events in [false, true] {
                let data = Round::new(parent.path());
                let topic_env = env(&url, TOPIC);
                let env: &[(&str, &str)] = if events { &topic_env } else { &[] };
                let arca = Arca::serve_with(&data.path(), env);
                let listener =
                    events.then(|| Listener::start(target.clone(), TOPIC.to_string(), false));
                let before = Cpu::read(&arca, &broker);
                let (n, _) = ingest(&arca, "ingest", kind, CLIENTS, ROUND, None, None).await;
                let cpu = Cpu::read(&arca, &broker).since(before);
                let rate = n as f64 / ROUND.as_secs_f64();
                let per_object = |s: f64| s * 1e3 / n as f64;
                let cpu_line = format!(
                    "CPU ms per object: arca {:.3}, broker {:.3}, load generator + subscriber {:.3}; other processes used {:.2} cores",
                    per_object(cpu.arca),
                    per_object(cpu.broker),
                    per_object(cpu.bench),
                    cpu.others() / ROUND.as_secs_f64()
                );
                if let Some(l) = listener {
                    let http = Http::new();
                    let end = arca.last_event(&http).await as u64;
                    let waited = Instant::now();
                    while l.highest.load(Ordering::Relaxed) < end
                        && waited.elapsed() < Duration::from_secs(60)
                    {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    eprintln!(
                        "  {name} round {round} events on: {rate:.0}/s; {cpu_line}; all {} events at the subscriber {:.2} s after the last write",
                        l.received.load(Ordering::Relaxed),
                        waited.elapsed().as_secs_f64()
                    );
                    l.stop();
                    on.push((rate, cpu));
                } else {
                    eprintln!("  {name} round {round} events off: {rate:.0}/s; {cpu_line}");
                    off.push((rate, cpu));
                }
                arca.stop();
                data.remove();
            }
        }
        let mean = |v: &[(f64, Cpu)], f: &dyn Fn(&(f64, Cpu)) -> f64| {
            v.iter().map(f).sum::<f64>() / v.len() as f64
        };
        let (rate_on, rate_off) = (mean(&on, &|r| r.0), mean(&off, &|r| r.0));
        let objects = |v: &[(f64, Cpu)]| v.iter().map(|r| r.0).sum::<f64>() * ROUND.as_secs_f64();
        let per_object = |v: &[(f64, Cpu)], f: &dyn Fn(&Cpu) -> f64| {
            v.iter().map(|r| f(&r.1)).sum::<f64>() * 1e3 / objects(v)
        };
        let arca_on = per_object(&on, &|c| c.arca);
        let arca_off = per_object(&off, &|c| c.arca);
        eprintln!(
            "INGEST {name}: events on {rate_on:.0}/s, off {rate_off:.0}/s, on/off {:.3}; CPU ms per object on/off: arca {arca_on:.3}/{arca_off:.3} (+{:.1} µs per event, 2 events per object), broker {:.3}/{:.3}, load generator + subscriber {:.3}/{:.3}",
            rate_on / rate_off,
            (arca_on - arca_off) * 1e3 / 2.0,
            per_object(&on, &|c| c.broker),
            per_object(&off, &|c| c.broker),
            per_object(&on, &|c| c.bench),
            per_object(&off, &|c| c.bench),
        );
    }

    // 3. Latency from the 2xx to the event, at 50 writes/s and under full ingest, on the topic
    //    and on a queue.
    for destination in part("latency")
        .then(|| [TOPIC.to_string(), fresh_queue()])
        .into_iter()
        .flatten()
    {
        for (clients, paced, length, label) in [
            (
                1usize,
                Some(Duration::from_millis(20)),
                Duration::from_secs(10),
                "1 client, 50 writes/s",
            ),
            (CLIENTS, None, ROUND, "16 clients, full ingest"),
        ] {
            let data = Round::new(parent.path());
            let arca = Arca::serve_with(&data.path(), &env(&url, &destination));
            let listener = Listener::start(target.clone(), destination.clone(), true);
            let times = Arc::new(Times::default());
            let (n, _) = ingest(
                &arca,
                "lat",
                Kind::Empty,
                clients,
                length,
                paced,
                Some(times.clone()),
            )
            .await;
            let end = arca.last_event(&Http::new()).await as u64;
            let waited = Instant::now();
            while listener.highest.load(Ordering::Relaxed) < end
                && waited.elapsed() < Duration::from_secs(60)
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let (lat, missing) = latencies(&times, &listener.arrivals.lock().unwrap());
            eprintln!(
                "LATENCY {destination}, {label}: {n} writes, {} events matched ({missing} missing), p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
                lat.len(),
                percentile(&lat, 0.5),
                percentile(&lat, 0.99),
                lat.last().copied().unwrap_or(f64::NAN)
            );
            listener.stop();
            arca.stop();
            data.remove();
        }
    }

    // 4. The broker stops for 30 s during 60 s of ingest, on the topic and on a persistent
    //    queue.
    for destination in part("outage")
        .then(|| [TOPIC.to_string(), fresh_queue()])
        .into_iter()
        .flatten()
    {
        let data = Round::new(parent.path());
        let arca = Arca::serve_with(&data.path(), &env(&url, &destination));
        let listener = Listener::start(target.clone(), destination.clone(), false);
        let load = ingest(
            &arca,
            "outage",
            Kind::Empty,
            CLIENTS,
            Duration::from_secs(60),
            None,
            None,
        );
        let outage = async {
            let http = Http::new();
            tokio::time::sleep(Duration::from_secs(15)).await;
            tokio::task::block_in_place(|| broker.stop());
            tokio::time::sleep(Duration::from_secs(30)).await;
            let backlog = arca.last_event(&http).await;
            let before = delivered(&arca, &http).await;
            tokio::task::block_in_place(|| broker.start_again());
            let returned = Instant::now();
            // How long until the broker has acknowledged every event of the outage, and the
            // subscriber has received them, while ingest goes on.
            let (mut acknowledged, mut received) = (None, None);
            while (acknowledged.is_none() || received.is_none())
                && returned.elapsed() < Duration::from_secs(180)
            {
                if acknowledged.is_none() && delivered(&arca, &http).await >= backlog {
                    acknowledged = Some(returned.elapsed());
                }
                if received.is_none() && listener.highest.load(Ordering::Relaxed) >= backlog as u64
                {
                    received = Some(returned.elapsed());
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (backlog - before, acknowledged, received, returned)
        };
        let ((n, windows), (backlog, acknowledged, received, returned)) =
            tokio::join!(load, outage);
        let end = arca.last_event(&Http::new()).await as u64;
        while listener.highest.load(Ordering::Relaxed) < end
            && returned.elapsed() < Duration::from_secs(240)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let all = returned.elapsed();
        let secs = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64());
        eprintln!(
            "OUTAGE {destination}: ingest per 5 s (broker down from 15 s to 45 s): {windows:?} ({n} in 60 s)"
        );
        eprintln!(
            "OUTAGE {destination}: the {backlog} events waiting when the broker returned: acknowledged by the broker {:.2} s after its return, at the subscriber {:.2} s after; every one of {end} events (ingest ran on for 15 s) at the subscriber {:.2} s after the return; {} messages received",
            secs(acknowledged),
            secs(received),
            all.as_secs_f64(),
            listener.received.load(Ordering::Relaxed)
        );
        listener.stop();
        arca.stop();

        // 5. Delivery alone: the same log replayed, without writes, to a destination new to
        //    arca (`deliver_history`): how fast arca hands events over, and the CPU per
        //    event of arca and of the broker.
        let replay = if destination == TOPIC {
            "/topic/fedora-replay".to_string()
        } else {
            fresh_queue()
        };
        let mut replay_env = env(&url, &replay).to_vec();
        replay_env.push(("ARCA_EVENTS_DELIVER_HISTORY", "true"));
        let listener = Listener::start(target.clone(), replay.clone(), false);
        let before = broker.pid().map_or(0.0, cpu_seconds);
        let (machine_before, bench_before) =
            (machine_busy_seconds(), cpu_seconds(std::process::id()));
        let started = Instant::now();
        let arca = Arca::serve_with(&data.path(), &replay_env);
        let arca_before = cpu_seconds(arca.pid());
        let http = Http::new();
        while delivered(&arca, &http).await < end as i64
            && started.elapsed() < Duration::from_secs(300)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let took = started.elapsed().as_secs_f64();
        let (arca_cpu, broker_cpu) = (
            cpu_seconds(arca.pid()) - arca_before,
            broker.pid().map_or(0.0, cpu_seconds) - before,
        );
        let others = (machine_busy_seconds()
            - machine_before
            - arca_cpu
            - broker_cpu
            - (cpu_seconds(std::process::id()) - bench_before))
            .max(0.0);
        let waited = Instant::now();
        while listener.highest.load(Ordering::Relaxed) < end
            && waited.elapsed() < Duration::from_secs(60)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        eprintln!(
            "REPLAY {replay}: {end} events acknowledged in {took:.1} s from arca's start ({:.0}/s); CPU per event: arca {:.1} µs, broker {:.1} µs; other processes used {:.2} cores; {} at the subscriber",
            end as f64 / took,
            arca_cpu * 1e6 / end as f64,
            broker_cpu * 1e6 / end as f64,
            others / took,
            listener.received.load(Ordering::Relaxed)
        );
        listener.stop();
        arca.stop();
        data.remove();
    }
}
