//! The S3 store against MinIO (`arca_testkit::s3`): a binary of its own because every test here
//! starts MinIO.

mod s3_faults;
mod s3_upload_memory;
