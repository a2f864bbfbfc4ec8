//! Readiness follows the event broker: with ActiveMQ stopped under a running arca, the next
//! change cannot be delivered and `/health/ready` answers 503 naming the destination with
//! the broker's error (liveness stays 200); with the broker started again, delivery resumes
//! and the server is ready again.

use arca_testkit::activemq::ActiveMq;
use hyper::{Method, StatusCode};

use crate::common::health::{not_ready_for, origin, ready, wait_readiness};
use crate::common::{Arca, Http};

async fn create(http: &Http, arca: &Arca, path: &str) {
    let r = http
        .request(
            Method::PUT,
            &arca.url(path),
            &[("content-type", "text/turtle")],
            b"<> <http://purl.org/dc/terms/title> \"health\" .".to_vec(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_the_broker() {
    let Some(mut broker) = tokio::task::spawn_blocking(ActiveMq::start).await.unwrap() else {
        return;
    };
    let url = broker.stomp_url();
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve_with(
        data.path(),
        &[
            ("ARCA_EVENTS_STOMP_URL", url.as_str()),
            ("ARCA_HEALTH_MIN_FREE_BYTES", "0"),
            ("ARCA_HEALTH_MIN_FREE_PERCENT", "0"),
        ],
    );
    let origin = origin(&arca.base);
    let http = Http::new();
    create(&http, &arca, "/before").await;
    wait_readiness(&origin, "readiness", ready).await;

    broker = tokio::task::spawn_blocking(move || {
        broker.stop();
        broker
    })
    .await
    .unwrap();
    // A change to deliver: its delivery fails.
    create(&http, &arca, "/during").await;
    let reply = wait_readiness(&origin, "the destination to fail", not_ready_for("events:")).await;
    assert!(
        reply.text().contains("the broker fails"),
        "{}",
        reply.text()
    );

    broker = tokio::task::spawn_blocking(move || {
        broker.start_again();
        broker
    })
    .await
    .unwrap();
    wait_readiness(&origin, "readiness after the restart", ready).await;
    drop(arca);
    drop(broker);
}
