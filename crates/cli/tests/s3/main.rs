//! arca on an S3 storage root (MinIO, `arca_testkit::s3`): a binary of its own because every
//! test here starts MinIO.

#[path = "../common/mod.rs"]
mod common;

mod health;
mod replica;
mod s3_root;
