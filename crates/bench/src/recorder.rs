//! Counting: one [`Recorder`] per measured phase collects transactions (an object ingested, a
//! GET, a file written), the status code of every HTTP request, a latency histogram and a
//! per-second timeline.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Bytes in the "MB" of every throughput figure (the studies' MB is 2^20 bytes).
pub const MB: f64 = (1u64 << 20) as f64;

/// The answer to one request: an HTTP status, or the reason there was none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    /// An HTTP status code.
    Status(u16),
    /// The TCP connection could not be made (refused, unreachable, connect timeout).
    Connect,
    /// No complete answer within `--timeout`.
    Timeout,
    /// The connection broke while sending or receiving.
    Io,
    /// A 201 answer without a usable `Location` header.
    NoLocation,
    /// A 2xx answer whose body had the wrong length.
    WrongLength,
    /// A 2xx answer whose body could not be read as expected (search: not its JSON).
    BadAnswer,
    /// A local file operation that succeeded (raw scenario).
    FileOk,
    /// A local file-system error (raw scenario).
    Fs,
}

impl Code {
    /// Whether this answer is a success (2xx).
    pub fn is_success(self) -> bool {
        match self {
            Code::Status(s) => (200..300).contains(&s),
            Code::FileOk => true,
            _ => false,
        }
    }

    /// Whether the failure happened below HTTP (the client backs off a little after these).
    pub fn is_transport(self) -> bool {
        matches!(self, Code::Connect | Code::Timeout | Code::Io)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Code::Status(s) => write!(f, "{s}"),
            Code::Connect => f.write_str("connect-error"),
            Code::Timeout => f.write_str("timeout"),
            Code::Io => f.write_str("io-error"),
            Code::NoLocation => f.write_str("no-location"),
            Code::WrongLength => f.write_str("wrong-length"),
            Code::BadAnswer => f.write_str("bad-answer"),
            Code::FileOk => f.write_str("ok"),
            Code::Fs => f.write_str("fs-error"),
        }
    }
}

/// What one transaction did: the requests it sent and whether all of them succeeded.
#[derive(Clone, Debug, Default)]
pub struct TxOutcome {
    /// Every request's answer, in order.
    pub codes: Vec<Code>,
    /// Whether the transaction as a whole succeeded.
    pub ok: bool,
    /// Payload bytes moved (sent for ingest, received for access, written for raw).
    pub bytes: u64,
    /// For a failure: what went wrong, for the report's "first error".
    pub error: Option<String>,
}

impl TxOutcome {
    /// A transaction of one request that succeeded with `code`, moving `bytes`.
    pub fn succeeded(code: Code, bytes: u64) -> Self {
        TxOutcome {
            codes: vec![code],
            ok: true,
            bytes,
            error: None,
        }
    }

    /// A transaction that failed before sending anything countable.
    pub fn failed(code: Code, error: String) -> Self {
        TxOutcome {
            codes: vec![code],
            ok: false,
            bytes: 0,
            error: Some(error),
        }
    }
}

/// The first failed transaction of a phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FirstError {
    /// Seconds since the phase started.
    pub at_s: f64,
    /// Successful transactions before it.
    pub after_ok: u64,
    /// Its (last) status code.
    pub code: String,
    /// What went wrong.
    pub message: String,
}

/// One second of a phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Second since the phase started (this point covers `[t, t+1)`).
    pub t: u64,
    /// Transactions completed in that second.
    pub transactions: u64,
    /// Of which succeeded.
    pub ok: u64,
    /// Of which failed.
    pub errors: u64,
    /// Mean latency of the successful ones, ms (0 when none).
    pub mean_ms: f64,
    /// Payload bytes moved by the successful ones.
    pub bytes: u64,
}

#[derive(Clone, Debug, Default)]
struct Bucket {
    transactions: u64,
    ok: u64,
    errors: u64,
    latency_us: u64,
    bytes: u64,
}

/// Counters, histogram and timeline of one measured phase.
#[derive(Debug)]
pub struct Recorder {
    start: Instant,
    hist: Histogram<u64>,
    timeline: Vec<Bucket>,
    codes: BTreeMap<Code, u64>,
    transactions: u64,
    ok: u64,
    errors: u64,
    requests: u64,
    bytes: u64,
    first_error: Option<FirstError>,
}

/// A live view for the progress display.
#[derive(Clone, Copy, Debug, Default)]
pub struct Snapshot {
    /// Transactions completed.
    pub transactions: u64,
    /// Of which succeeded.
    pub ok: u64,
    /// Of which failed.
    pub errors: u64,
    /// Successful transactions in the last complete second.
    pub last_second_ok: u64,
}

/// The figures of a finished phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Transactions attempted and completed (= ok + errors).
    pub transactions: u64,
    /// Successful transactions.
    pub ok: u64,
    /// Failed transactions.
    pub errors: u64,
    /// HTTP requests (or file operations) sent; the sum of `status_codes`.
    pub requests: u64,
    /// Requests by answer (`"201"`, `"500"`, `"connect-error"`, ...).
    pub status_codes: BTreeMap<String, u64>,
    /// Successful transactions per second of elapsed time.
    pub tps: f64,
    /// Mean latency of successful transactions, ms.
    pub mean_ms: f64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th percentile latency, ms.
    pub p99_ms: f64,
    /// Largest latency, ms.
    pub max_ms: f64,
    /// Payload bytes moved by successful transactions.
    pub bytes: u64,
    /// Payload MB (2^20 bytes) per second of elapsed time.
    pub mb_per_s: f64,
    /// The first failure, if any.
    pub first_error: Option<FirstError>,
    /// Per-second timeline.
    pub timeline: Vec<TimelinePoint>,
}

impl Recorder {
    /// A recorder whose clock starts at `start`.
    pub fn new(start: Instant) -> Self {
        Recorder {
            start,
            // 1 µs .. 1 h, 3 significant digits; saturating beyond.
            hist: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds"),
            timeline: Vec::new(),
            codes: BTreeMap::new(),
            transactions: 0,
            ok: 0,
            errors: 0,
            requests: 0,
            bytes: 0,
            first_error: None,
        }
    }

    /// When the phase started.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// Records a transaction that completed at `at` after `latency`.
    pub fn record(&mut self, at: Instant, latency: Duration, outcome: &TxOutcome) {
        let second = at.saturating_duration_since(self.start).as_secs() as usize;
        if self.timeline.len() <= second {
            self.timeline.resize(second + 1, Bucket::default());
        }
        for code in &outcome.codes {
            *self.codes.entry(*code).or_default() += 1;
            self.requests += 1;
        }
        self.transactions += 1;
        let bucket = &mut self.timeline[second];
        bucket.transactions += 1;
        if outcome.ok {
            let us = (latency.as_micros() as u64).max(1);
            self.hist.saturating_record(us);
            self.ok += 1;
            self.bytes += outcome.bytes;
            bucket.ok += 1;
            bucket.latency_us += us;
            bucket.bytes += outcome.bytes;
        } else {
            self.errors += 1;
            bucket.errors += 1;
            if self.first_error.is_none() {
                let code = outcome
                    .codes
                    .last()
                    .map_or_else(|| "none".to_string(), Code::to_string);
                self.first_error = Some(FirstError {
                    at_s: at.saturating_duration_since(self.start).as_secs_f64(),
                    after_ok: self.ok,
                    code,
                    message: outcome.error.clone().unwrap_or_default(),
                });
            }
        }
    }

    /// A live view; `now` picks the "last complete second".
    pub fn snapshot(&self, now: Instant) -> Snapshot {
        let second = now.saturating_duration_since(self.start).as_secs() as usize;
        let last_second_ok = second
            .checked_sub(1)
            .and_then(|s| self.timeline.get(s))
            .map_or(0, |b| b.ok);
        Snapshot {
            transactions: self.transactions,
            ok: self.ok,
            errors: self.errors,
            last_second_ok,
        }
    }

    /// The figures over `elapsed`.
    pub fn summary(&self, elapsed: Duration) -> Summary {
        let secs = elapsed.as_secs_f64();
        let per_s = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
        let ms = |us: f64| us / 1000.0;
        let have = !self.hist.is_empty();
        Summary {
            transactions: self.transactions,
            ok: self.ok,
            errors: self.errors,
            requests: self.requests,
            status_codes: self
                .codes
                .iter()
                .map(|(c, n)| (c.to_string(), *n))
                .collect(),
            tps: per_s(self.ok as f64),
            mean_ms: if have { ms(self.hist.mean()) } else { 0.0 },
            p50_ms: if have {
                ms(self.hist.value_at_quantile(0.5) as f64)
            } else {
                0.0
            },
            p99_ms: if have {
                ms(self.hist.value_at_quantile(0.99) as f64)
            } else {
                0.0
            },
            max_ms: if have {
                ms(self.hist.max() as f64)
            } else {
                0.0
            },
            bytes: self.bytes,
            mb_per_s: per_s(self.bytes as f64 / MB),
            first_error: self.first_error.clone(),
            timeline: self
                .timeline
                .iter()
                .enumerate()
                .map(|(t, b)| TimelinePoint {
                    t: t as u64,
                    transactions: b.transactions,
                    ok: b.ok,
                    errors: b.errors,
                    mean_ms: if b.ok > 0 {
                        b.latency_us as f64 / b.ok as f64 / 1000.0
                    } else {
                        0.0
                    },
                    bytes: b.bytes,
                })
                .collect(),
        }
    }
}

/// One interval of a burn-in run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Start, seconds since the phase started.
    pub start_s: u64,
    /// End (exclusive), seconds; the last interval ends with the phase (rounded up).
    pub end_s: u64,
    /// Successful transactions in the interval.
    pub ok: u64,
    /// Failed transactions in the interval.
    pub errors: u64,
    /// Successful transactions per second over the interval.
    pub tps: f64,
    /// Mean latency of the successful ones, ms.
    pub mean_ms: f64,
    /// Successful transactions from the start up to the end of this interval.
    pub cumulative_ok: u64,
}

/// Groups a per-second timeline into intervals of `every` seconds; the last interval may be
/// shorter, and its rate is computed over its true length (`elapsed` caps it).
pub fn intervals(timeline: &[TimelinePoint], every: u64, elapsed: Duration) -> Vec<Interval> {
    let every = every.max(1);
    let mut out = Vec::new();
    let mut cumulative = 0;
    let mut start = 0u64;
    let total = elapsed.as_secs_f64();
    while (start as usize) < timeline.len() {
        let end = start + every;
        let points = &timeline[start as usize..(end as usize).min(timeline.len())];
        let ok: u64 = points.iter().map(|p| p.ok).sum();
        let errors: u64 = points.iter().map(|p| p.errors).sum();
        let lat: f64 = points.iter().map(|p| p.mean_ms * p.ok as f64).sum();
        cumulative += ok;
        // The true length of the interval, but at least a second: the last one may hold only
        // the in-flight transactions that finished just after the time limit.
        let len = ((end as f64).min(total.max(start as f64)) - start as f64).max(1.0);
        out.push(Interval {
            start_s: start,
            // The last interval ends with the phase.
            end_s: end.min(total.ceil() as u64).max(start + 1),
            ok,
            errors,
            tps: ok as f64 / len,
            mean_ms: if ok > 0 { lat / ok as f64 } else { 0.0 },
            cumulative_ok: cumulative,
        });
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(bytes: u64) -> TxOutcome {
        TxOutcome {
            codes: vec![Code::Status(201), Code::Status(201)],
            ok: true,
            bytes,
            error: None,
        }
    }

    #[test]
    fn counts_add_up() {
        let t0 = Instant::now();
        let mut r = Recorder::new(t0);
        for i in 0..10u64 {
            r.record(
                t0 + Duration::from_millis(300 * i),
                Duration::from_millis(10 + i),
                &ok(1 << 20),
            );
        }
        r.record(
            t0 + Duration::from_millis(3100),
            Duration::from_millis(1),
            &TxOutcome {
                codes: vec![Code::Status(201), Code::Status(500)],
                ok: false,
                bytes: 0,
                error: Some("PUT: 500".into()),
            },
        );
        r.record(
            t0 + Duration::from_millis(3200),
            Duration::from_millis(1),
            &TxOutcome::failed(Code::Connect, "refused".into()),
        );
        let s = r.summary(Duration::from_secs(4));
        assert_eq!(s.transactions, 12);
        assert_eq!(s.ok, 10);
        assert_eq!(s.errors, 2);
        assert_eq!(s.transactions, s.ok + s.errors);
        assert_eq!(s.requests, 23);
        assert_eq!(s.status_codes.values().sum::<u64>(), s.requests);
        assert_eq!(s.status_codes["201"], 21);
        assert_eq!(s.status_codes["500"], 1);
        assert_eq!(s.status_codes["connect-error"], 1);
        assert!((s.tps - 2.5).abs() < 1e-9);
        assert!((s.mb_per_s - 2.5).abs() < 1e-9);
        assert!((s.mean_ms - 14.5).abs() < 0.1, "{}", s.mean_ms);
        assert!((s.max_ms - 19.0).abs() < 0.1);
        assert!(s.p50_ms >= 14.0 && s.p50_ms <= 15.1, "{}", s.p50_ms);
        let fe = s.first_error.unwrap();
        assert_eq!(fe.code, "500");
        assert_eq!(fe.after_ok, 10);
        assert!((fe.at_s - 3.1).abs() < 1e-6);
        // timeline: 0.0,0.3,0.6,0.9 | 1.2,1.5,1.8 | 2.1,2.4,2.7 | 2 errors
        let tl: Vec<u64> = s.timeline.iter().map(|p| p.ok).collect();
        assert_eq!(tl, vec![4, 3, 3, 0]);
        assert_eq!(s.timeline[3].errors, 2);
        assert_eq!(s.timeline.iter().map(|p| p.transactions).sum::<u64>(), 12);
    }

    #[test]
    fn empty_summary_is_zero() {
        let r = Recorder::new(Instant::now());
        let s = r.summary(Duration::ZERO);
        assert_eq!(s.transactions, 0);
        assert_eq!(s.tps, 0.0);
        assert_eq!(s.mean_ms, 0.0);
        assert!(s.first_error.is_none());
    }

    #[test]
    fn intervals_group_seconds() {
        let tl: Vec<TimelinePoint> = (0..25)
            .map(|t| TimelinePoint {
                t,
                transactions: 10,
                ok: 10,
                errors: 0,
                mean_ms: 2.0,
                bytes: 0,
            })
            .collect();
        let iv = intervals(&tl, 10, Duration::from_secs(25));
        assert_eq!(iv.len(), 3);
        assert_eq!(iv[0].ok, 100);
        assert!((iv[0].tps - 10.0).abs() < 1e-9);
        assert_eq!(iv[2].ok, 50);
        assert!((iv[2].tps - 10.0).abs() < 1e-9, "{}", iv[2].tps);
        assert_eq!(iv[2].cumulative_ok, 250);
        assert_eq!(iv[2].end_s, 25);
        assert_eq!(iv[1].end_s, 20);
        // a sliver after the time limit is not a burst of throughput
        let mut tl2 = tl.clone();
        tl2.truncate(21);
        let iv = intervals(&tl2, 10, Duration::from_millis(20_010));
        assert_eq!(iv[2].end_s, 21);
        assert!((iv[2].tps - 10.0).abs() < 1e-9, "{}", iv[2].tps);
        assert!((iv[1].mean_ms - 2.0).abs() < 1e-9);
    }

    #[test]
    fn codes_display() {
        assert_eq!(Code::Status(404).to_string(), "404");
        assert!(Code::Status(204).is_success());
        assert!(!Code::Status(301).is_success());
        assert!(Code::Connect.is_transport());
        assert!(!Code::Fs.is_transport());
    }
}
