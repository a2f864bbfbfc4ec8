//! Readiness follows the PostgreSQL catalog: stopped under a running arca, `/health/ready`
//! answers 503 naming the catalog (liveness stays 200); started again, the pool reconnects
//! and the server is ready again.

use arca_testkit::postgres::Postgres;

use crate::common::health::{not_ready_for, origin, ready, wait_readiness};
use crate::common::Arca;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_the_catalog_database() {
    let Some(pg) = tokio::task::spawn_blocking(Postgres::start).await.unwrap() else {
        return;
    };
    let url = pg.create_database();
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve_with(
        data.path(),
        &[
            ("ARCA_CATALOG_URL", url.as_str()),
            ("ARCA_HEALTH_MIN_FREE_BYTES", "0"),
            ("ARCA_HEALTH_MIN_FREE_PERCENT", "0"),
        ],
    );
    let origin = origin(&arca.base);
    wait_readiness(&origin, "readiness", ready).await;

    let pg_stopped = tokio::task::spawn_blocking(move || {
        pg.stop();
        pg
    });
    let mut pg = pg_stopped.await.unwrap();
    let reply = wait_readiness(&origin, "the catalog to fail", not_ready_for("catalog")).await;
    assert!(
        !reply.text().contains("password"),
        "no secrets in the answer: {}",
        reply.text()
    );

    pg = tokio::task::spawn_blocking(move || {
        pg.start_again();
        pg
    })
    .await
    .unwrap();
    wait_readiness(&origin, "readiness after the restart", ready).await;
    drop(arca);
    drop(pg);
}
