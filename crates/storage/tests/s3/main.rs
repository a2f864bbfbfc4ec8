//! The S3 store against MinIO (`arca_testkit::s3`): a binary of its own because every test here
//! starts MinIO. `tests/s3_upload_memory.rs` is a binary apart: the peak memory it measures is
//! the whole process's.

mod s3_faults;
