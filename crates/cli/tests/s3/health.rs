//! Readiness follows the S3 store: with MinIO stopped under a running arca, `/health/ready`
//! answers 503 naming the storage (liveness stays 200); with MinIO started again, ready again.

use arca_testkit::s3::{Minio, BUCKET, REGION, ROOT_PASSWORD, ROOT_USER};

use crate::common::health::{not_ready_for, origin, ready, wait_readiness};
use crate::common::Arca;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_the_bucket() {
    let Some(minio) = tokio::task::spawn_blocking(Minio::start).await.unwrap() else {
        return;
    };
    let endpoint = minio.endpoint();
    let data = tempfile::tempdir().unwrap();
    let arca = Arca::serve_with(
        data.path(),
        &[
            ("ARCA_S3_BUCKET", BUCKET),
            ("ARCA_S3_ENDPOINT", endpoint.as_str()),
            ("ARCA_S3_PREFIX", "health"),
            ("ARCA_S3_REGION", REGION),
            ("AWS_ACCESS_KEY_ID", ROOT_USER),
            ("AWS_SECRET_ACCESS_KEY", ROOT_PASSWORD),
            ("ARCA_HEALTH_MIN_FREE_BYTES", "0"),
            ("ARCA_HEALTH_MIN_FREE_PERCENT", "0"),
        ],
    );
    let origin = origin(&arca.base);
    let reply = wait_readiness(&origin, "readiness", ready).await;
    assert!(
        !reply.text().contains("\"disk\""),
        "no disk check with the root in S3: {}",
        reply.text()
    );

    let minio = tokio::task::spawn_blocking(move || {
        minio.stop();
        minio
    })
    .await
    .unwrap();
    let reply = wait_readiness(&origin, "the storage to fail", not_ready_for("storage")).await;
    assert!(
        !reply.text().contains(ROOT_PASSWORD),
        "no secrets in the answer: {}",
        reply.text()
    );

    let minio = tokio::task::spawn_blocking(move || {
        minio.start_again();
        minio
    })
    .await
    .unwrap();
    wait_readiness(&origin, "readiness after the restart", ready).await;
    drop(arca);
    drop(minio);
}
