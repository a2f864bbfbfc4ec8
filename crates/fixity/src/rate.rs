//! A rate limit on the bytes an audit reads, shared by its threads (a token bucket).

/// At most `bytes_per_second` on average, over all threads taking from it.
#[derive(Debug)]
pub struct RateLimiter {
    bytes_per_second: Option<u64>,
}

impl RateLimiter {
    /// A limit of `bytes_per_second`; `None`: no limit.
    pub fn new(bytes_per_second: Option<u64>) -> Self {
        Self { bytes_per_second }
    }

    /// Waits (sleeping the calling thread) until `bytes` more may be read.
    pub fn take(&self, bytes: u64) {
        let _ = (bytes, self.bytes_per_second);
        todo!("H1")
    }
}
