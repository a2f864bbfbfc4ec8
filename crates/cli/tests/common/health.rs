//! Probing `/health/live` and `/health/ready` of a server under test, as a load balancer
//! does: anonymously, polling with a generous deadline (no timed assertions).

use std::time::{Duration, Instant};

use hyper::StatusCode;

use super::{Http, Reply};

/// The longest wait for a server's readiness to follow a change of its services (a broker
/// or database restart, a reconnecting pool).
pub const PATIENCE: Duration = Duration::from_secs(180);

/// `http://HOST:PORT` of a server's URL (the health routes are outside the REST root).
pub fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("an absolute URL");
    let authority = rest.split('/').next().unwrap_or(rest);
    format!("{scheme}://{authority}")
}

/// The names of the checks a `/health/ready` reply says failed.
pub fn failing(reply: &Reply) -> Vec<String> {
    let body: serde_json::Value = serde_json::from_slice(&reply.body)
        .unwrap_or_else(|e| panic!("/health/ready is not JSON ({e}): {}", reply.text()));
    body["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("/health/ready has no checks: {}", reply.text()))
        .iter()
        .filter(|c| c["ok"] == false)
        .map(|c| c["name"].as_str().expect("a check's name").to_string())
        .collect()
}

/// Ready: 200 and no failed check.
pub fn ready(status: StatusCode, failing: &[String]) -> bool {
    status == StatusCode::OK && failing.is_empty()
}

/// Not ready, and `check` is among the failed checks (by name, or its prefix for
/// `events:<destination>`).
pub fn not_ready_for(check: &str) -> impl Fn(StatusCode, &[String]) -> bool + '_ {
    move |status, failing| {
        status == StatusCode::SERVICE_UNAVAILABLE && failing.iter().any(|f| f.starts_with(check))
    }
}

/// Polls the server at `origin` until its `/health/ready` reply satisfies `want`; every
/// round, `/health/live` must answer 200 (liveness holds throughout). Panics with the last
/// reply after [`PATIENCE`].
pub async fn wait_readiness(
    origin: &str,
    what: &str,
    want: impl Fn(StatusCode, &[String]) -> bool,
) -> Reply {
    let http = Http::anonymous();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let live = http.get(&format!("{origin}/health/live"), &[]).await;
        assert_eq!(live.status, StatusCode::OK, "/health/live: {}", live.text());
        let reply = http.get(&format!("{origin}/health/ready"), &[]).await;
        if want(reply.status, &failing(&reply)) {
            return reply;
        }
        assert!(
            Instant::now() < deadline,
            "waited {PATIENCE:?} for {what}; /health/ready still answers {} {}",
            reply.status,
            reply.text()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
