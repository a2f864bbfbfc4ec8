//! A rate limit on the bytes an audit reads, shared by its threads (a token bucket).
//!
//! Each file also counts as [`FILE_COST`] bytes: opening, reading and parsing a small file
//! costs about what hashing that much does, so a root of many small objects is held to the
//! same share of the machine as a root of large files (counting bytes alone, an audit of
//! 20 KiB objects at 50 MB/s ran flat out on its thread and halved the GETs a 2-core server
//! answered: BENCHMARKS, "The fixity audit at 100,000 objects").

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// What each file read counts for besides its bytes (see the module's doc).
pub const FILE_COST: u64 = 64 * 1024;

/// At most `bytes_per_second` on average, over all threads taking from it.
///
/// The bucket holds at most one second's worth of bytes; a take larger than what it holds
/// runs it into debt, which the taker sleeps off, so any take size works and the average
/// stays at the limit.
#[derive(Debug)]
pub struct RateLimiter {
    bytes_per_second: Option<u64>,
    bucket: Mutex<Bucket>,
}

#[derive(Debug)]
struct Bucket {
    /// Bytes that may be read now (negative: owed).
    available: f64,
    /// When `available` was last brought up to date.
    at: Instant,
}

impl RateLimiter {
    /// A limit of `bytes_per_second`; `None`: no limit.
    pub fn new(bytes_per_second: Option<u64>) -> Self {
        Self {
            bytes_per_second: bytes_per_second.filter(|r| *r > 0),
            bucket: Mutex::new(Bucket {
                available: 0.0,
                at: Instant::now(),
            }),
        }
    }

    /// The limit, if any.
    pub fn bytes_per_second(&self) -> Option<u64> {
        self.bytes_per_second
    }

    /// Waits until one more file may be opened ([`FILE_COST`]).
    pub fn take_file(&self) {
        self.take(FILE_COST);
    }

    /// Waits (sleeping the calling thread) until `bytes` more may be read.
    pub fn take(&self, bytes: u64) {
        if let Some(wait) = self.reserve(bytes) {
            std::thread::sleep(wait);
        }
    }

    /// Takes `bytes` from the bucket; how long the caller must wait before reading them.
    fn reserve(&self, bytes: u64) -> Option<Duration> {
        let rate = self.bytes_per_second? as f64;
        let mut bucket = self.bucket.lock();
        let now = Instant::now();
        let refill = now.duration_since(bucket.at).as_secs_f64() * rate;
        bucket.available = (bucket.available + refill).min(rate);
        bucket.at = now;
        bucket.available -= bytes as f64;
        (bucket.available < 0.0).then(|| Duration::from_secs_f64(-bucket.available / rate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_limit_never_waits() {
        let limiter = RateLimiter::new(None);
        assert_eq!(limiter.reserve(u64::MAX), None);
        assert_eq!(RateLimiter::new(Some(0)).reserve(1 << 40), None);
    }

    #[test]
    fn debt_is_paid_in_time_at_the_rate() {
        let limiter = RateLimiter::new(Some(1000));
        // The bucket starts empty: 500 bytes owe half a second.
        let wait = limiter.reserve(500).expect("a wait");
        assert!(wait > Duration::from_millis(450) && wait <= Duration::from_millis(500));
        // Another 1500 bytes taken at once by another thread: the debt adds up.
        let wait = limiter.reserve(1500).expect("a wait");
        assert!(wait > Duration::from_millis(1900) && wait <= Duration::from_millis(2000));
    }

    #[test]
    fn an_idle_bucket_holds_one_second_at_most() {
        let limiter = RateLimiter::new(Some(1_000_000));
        limiter.bucket.lock().at -= Duration::from_secs(10);
        // Ten idle seconds fill one second's worth, not ten.
        assert_eq!(limiter.reserve(1_000_000), None);
        assert!(limiter.reserve(1_000_000).is_some());
    }
}
