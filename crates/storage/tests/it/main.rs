//! arca-storage's integration tests, one binary. The conformance suite runs on every store, its
//! S3 cases skipped when MinIO is missing; the S3 store's own tests are in `tests/s3`.

mod store_conformance;
