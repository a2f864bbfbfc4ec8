//! What recording one request costs the server when metrics are on: the work the HTTP layer
//! adds per request (two clock reads and `Metrics::record` of a GET, plus a write's), timed
//! over many repetitions on one thread, in nanoseconds per request. Compare with the CPU a
//! request costs (BENCHMARKS.md, "Metrics on and off": about 0.1 ms per small GET).
//!
//! `cargo run --release -p arca-observe --example record_cost`

use std::hint::black_box;
use std::time::{Duration, Instant};

use arca_observe::metrics::{Metrics, RequestKind, RouteClass, WriteKind};

fn main() {
    let metrics = Metrics::new();
    let read = RequestKind::of(RouteClass::Read);
    let write = RequestKind {
        class: RouteClass::Write,
        write: Some(WriteKind::Create),
    };
    let rounds: u32 = 2_000_000;
    for (name, method, kind, status) in [
        (
            "GET of a resource",
            http::Method::GET,
            read,
            http::StatusCode::OK,
        ),
        (
            "POST creating one",
            http::Method::POST,
            write,
            http::StatusCode::CREATED,
        ),
    ] {
        // Warm the label families (their first use allocates).
        metrics.record(&method, kind, status, Duration::from_micros(100));
        let started = Instant::now();
        for _ in 0..rounds {
            let t = Instant::now();
            metrics.record(black_box(&method), black_box(kind), status, t.elapsed());
        }
        let per = started.elapsed().as_nanos() as f64 / f64::from(rounds);
        println!("{name}: {per:.0} ns per request recorded ({rounds} requests)");
    }
}
