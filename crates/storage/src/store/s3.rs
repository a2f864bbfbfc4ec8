//! [`S3Storage`]: the store in a bucket of an S3-compatible object store, over the
//! `object_store` crate.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder, S3ConditionalPut};
use object_store::client::{HttpError, HttpErrorKind};
use object_store::path::Path as ObjectPath;
use object_store::{
    BackoffConfig, ClientOptions, GetOptions, GetRange, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig, UpdateVersion,
};

mod versioning;

pub use versioning::BucketVersioning;

use super::key::{check_key, check_prefix};
use super::{
    ByteReader, Contents, DirListing, ETag, FileInfo, ObjectStorage, Precondition, StoreError,
    StoreResult,
};

/// The size of the parts a file is uploaded in. S3 wants at least 5 MiB for every part
/// but the last, and at most 10,000 parts: 8 MiB parts carry files up to 78 GiB.
const PART_SIZE: usize = 8 * 1024 * 1024;

/// How many parts of one file are uploaded at once. With the part being read, an upload
/// holds at most this many parts in memory: 24 MiB, whatever the file's size.
const PARTS_IN_FLIGHT: usize = 3;

/// How long establishing a connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// How long one request may take, body included (a streamed read that takes longer is
/// resumed where it stopped by `object_store`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Transient failures (connection refused or reset, 5xx) are retried this often, with
/// backoff from 100 ms to 1 s, and never for longer than [`RETRY_TIMEOUT`]: a stopped
/// service fails a request within a few seconds.
const MAX_RETRIES: usize = 3;

/// The longest a request is retried for.
const RETRY_TIMEOUT: Duration = Duration::from_secs(10);

/// Worker threads of the store's own runtime, which drives the HTTP connections.
const RUNTIME_THREADS: usize = 2;

/// S3 error codes that mean the credentials themselves are not accepted.
const CREDENTIAL_ERROR_CODES: [&str; 5] = [
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidToken",
    "ExpiredToken",
    "InvalidClientTokenId",
];

/// Where an [`S3Storage`] keeps its files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Settings {
    /// The service's URL (`http://127.0.0.1:9000` for MinIO); `None` for Amazon S3 itself.
    /// Requests use path-style addressing (`<endpoint>/<bucket>/<key>`).
    pub endpoint: Option<String>,
    /// The bucket, which must exist.
    pub bucket: String,
    /// The storage root's key prefix in the bucket (`""`: the bucket is the root). Key `k`
    /// is stored as `<prefix>/k`.
    pub prefix: String,
    /// The region (`us-east-1` for MinIO unless it was configured otherwise).
    pub region: String,
    /// Whether plain `http://` endpoints are allowed.
    pub allow_http: bool,
}

/// The credentials an [`S3Storage`] signs its requests with.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Credentials {
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
    /// A session token, for temporary credentials.
    pub session_token: Option<String>,
}

impl S3Credentials {
    /// The credentials of the standard environment variables `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and (optionally) `AWS_SESSION_TOKEN`.
    ///
    /// # Errors
    /// [`StoreError::Config`] naming the variable that is missing.
    pub fn from_env() -> StoreResult<Self> {
        let required = |name: &'static str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| StoreError::Config {
                    setting: name,
                    problem: "is not set (the S3 store takes its credentials from \
                              AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and, for temporary \
                              credentials, AWS_SESSION_TOKEN)"
                        .into(),
                })
        };
        Ok(Self {
            access_key_id: required("AWS_ACCESS_KEY_ID")?,
            secret_access_key: required("AWS_SECRET_ACCESS_KEY")?,
            session_token: std::env::var("AWS_SESSION_TOKEN")
                .ok()
                .filter(|v| !v.is_empty()),
        })
    }
}

impl std::fmt::Debug for S3Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<hidden>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<hidden>"),
            )
            .finish()
    }
}

/// The store in a bucket of an S3-compatible service (Amazon S3, MinIO, …).
///
/// Key `k` is the object `<prefix>/k` of the bucket (`k` when the prefix is empty): the
/// relative paths of the filesystem layout, unchanged. This is how ocfl-java (and so Fedora
/// 6) lays out a storage root in S3: its `CloudObjectKey` joins the repository prefix (with
/// trailing slashes removed) and the root-relative path with one `/`, or uses the path alone
/// when the prefix is empty (ocfl-java-core `io/ocfl/core/storage/cloud/CloudObjectKey.java`,
/// used by ocfl-java-aws `io/ocfl/aws/OcflS3Client.java`, which also lists directories with
/// the delimiter `/` and writes no directory marker objects). So a root written by either
/// can be read by the other.
///
/// Conditional writes send `If-None-Match: *` and `If-Match: <etag>` (MinIO and Amazon S3
/// honour both on PutObject). Tags are S3's ETags (the MD5 of a single-part object's
/// bytes, `<md5 of the part md5s>-<parts>` for a multipart one), quotes included.
///
/// The store owns a small tokio runtime that drives its connections; its methods block the
/// calling thread on it, so they may be called from any thread that is not running async
/// code: plain threads and tokio's `spawn_blocking` threads. Transient failures are retried
/// a few times for at most 10 s, connections time out after 3 s, requests after 30 s: a
/// stopped service gives [`StoreError::Unavailable`] within seconds, and the store works
/// again as soon as the service is back.
pub struct S3Storage {
    store: Arc<AmazonS3>,
    runtime: Arc<OwnedRuntime>,
    settings: S3Settings,
    /// The prefix without trailing slashes.
    prefix: String,
}

impl S3Storage {
    /// Opens the store with the credentials of the environment
    /// ([`S3Credentials::from_env`]) and checks that the bucket answers (see
    /// [`open_with_credentials`](Self::open_with_credentials)).
    pub fn open(settings: S3Settings) -> StoreResult<Self> {
        Self::open_with_credentials(settings, S3Credentials::from_env()?)
    }

    /// Opens the store with `credentials` and checks, by listing at most one page of keys
    /// under the prefix, that the service can be reached, takes the credentials and has the
    /// bucket.
    ///
    /// # Errors
    /// [`StoreError::Credentials`] for credentials the service refuses,
    /// [`StoreError::BucketNotFound`] for a missing bucket, [`StoreError::Unavailable`] for
    /// an endpoint that cannot be reached, [`StoreError::AccessDenied`] for credentials
    /// that may not list the bucket, [`StoreError::Config`] for settings that cannot work.
    pub fn open_with_credentials(
        settings: S3Settings,
        credentials: S3Credentials,
    ) -> StoreResult<Self> {
        let storage = Self::build(settings, credentials)?;
        storage.check_bucket()?;
        Ok(storage)
    }

    /// Opens the store with the credentials of the environment as [`open`](Self::open)
    /// does, without asking the service anything: for a copy that must not keep arca from
    /// starting while the service is down (a replica), whose first operation finds out.
    ///
    /// # Errors
    /// [`StoreError::Credentials`] for missing credentials, [`StoreError::Config`] for
    /// settings that cannot work.
    pub fn open_unchecked(settings: S3Settings) -> StoreResult<Self> {
        Self::build(settings, S3Credentials::from_env()?)
    }

    fn build(settings: S3Settings, credentials: S3Credentials) -> StoreResult<Self> {
        // The HTTP client takes the process's TLS provider: ring, the one arca compiles. An
        // error only means one is installed already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&settings.bucket)
            .with_region(&settings.region)
            .with_access_key_id(credentials.access_key_id)
            .with_secret_access_key(credentials.secret_access_key)
            .with_allow_http(settings.allow_http)
            .with_conditional_put(S3ConditionalPut::ETagMatch)
            .with_client_options(
                ClientOptions::new()
                    .with_allow_http(settings.allow_http)
                    .with_connect_timeout(CONNECT_TIMEOUT)
                    .with_timeout(REQUEST_TIMEOUT),
            )
            .with_retry(RetryConfig {
                backoff: BackoffConfig {
                    init_backoff: Duration::from_millis(100),
                    max_backoff: Duration::from_secs(1),
                    base: 2.0,
                },
                max_retries: MAX_RETRIES,
                retry_timeout: RETRY_TIMEOUT,
            });
        if let Some(token) = credentials.session_token {
            builder = builder.with_token(token);
        }
        if let Some(endpoint) = &settings.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        let store = builder.build().map_err(|e| StoreError::Config {
            setting: "S3 settings",
            problem: e.to_string(),
        })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_THREADS)
            .thread_name("arca-s3")
            .enable_all()
            .build()
            .map_err(|e| StoreError::io("S3 runtime", e))?;
        let prefix = settings.prefix.trim_end_matches('/').to_string();
        check_prefix(&prefix).map_err(|_| StoreError::Config {
            setting: "S3 prefix",
            problem: format!("{:?} is not a valid key prefix", settings.prefix),
        })?;
        Ok(Self {
            store: Arc::new(store),
            runtime: Arc::new(OwnedRuntime(Some(runtime))),
            settings,
            prefix,
        })
    }

    /// The settings the store was opened with.
    pub fn settings(&self) -> &S3Settings {
        &self.settings
    }

    fn check_bucket(&self) -> StoreResult<()> {
        let root = self.root_path();
        let store = Arc::clone(&self.store);
        let first = self
            .runtime
            .block_on(async move { store.list(root.as_ref()).next().await });
        match first {
            None | Some(Ok(_)) => Ok(()),
            Some(Err(e)) => Err(self.classify(e, "open", &self.prefix)),
        }
    }

    /// The object path of `key` (checked).
    fn location(&self, key: &str) -> StoreResult<ObjectPath> {
        check_key(key)?;
        let full = if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}/{key}", self.prefix)
        };
        ObjectPath::parse(&full).map_err(|_| StoreError::InvalidKey {
            key: key.to_string(),
            reason: "the S3 client does not accept it",
        })
    }

    /// The object path of the directory `prefix`, `None` for the whole bucket.
    fn dir_location(&self, prefix: &str) -> StoreResult<Option<ObjectPath>> {
        check_prefix(prefix)?;
        if prefix.is_empty() {
            return Ok(self.root_path());
        }
        self.location(prefix).map(Some)
    }

    fn root_path(&self) -> Option<ObjectPath> {
        (!self.prefix.is_empty()).then(|| ObjectPath::from_iter(self.prefix.split('/')))
    }

    /// The key of an object path of this store.
    fn key_of(&self, location: &ObjectPath) -> String {
        let full = location.as_ref();
        if self.prefix.is_empty() {
            return full.to_string();
        }
        full.strip_prefix(&self.prefix)
            .and_then(|rest| rest.strip_prefix('/'))
            .unwrap_or(full)
            .to_string()
    }

    fn file_info(&self, meta: &ObjectMeta) -> FileInfo {
        FileInfo {
            key: self.key_of(&meta.location),
            size: meta.size,
            etag: ETag(meta.e_tag.clone().unwrap_or_default()),
        }
    }

    fn classify(
        &self,
        error: object_store::Error,
        operation: &'static str,
        key: &str,
    ) -> StoreError {
        classify(error, operation, key, &self.settings.bucket)
    }

    fn head(&self, key: &str) -> StoreResult<Option<ObjectMeta>> {
        let location = self.location(key)?;
        let store = Arc::clone(&self.store);
        match self
            .runtime
            .block_on(async move { store.head(&location).await })
        {
            Ok(meta) => Ok(Some(meta)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.classify(e, "head", key)),
        }
    }

    fn put_payload(&self, key: &str, payload: PutPayload, mode: PutMode) -> StoreResult<ETag> {
        let location = self.location(key)?;
        let store = Arc::clone(&self.store);
        let put = self.runtime.block_on(async move {
            store
                .put_opts(&location, payload, PutOptions::from(mode))
                .await
        });
        let result = put.map_err(|e| self.classify(e, "put", key))?;
        self.etag_after_put(key, result.e_tag)
    }

    /// The tag a write returned, or the stored object's when the service sent none.
    fn etag_after_put(&self, key: &str, returned: Option<String>) -> StoreResult<ETag> {
        if let Some(tag) = returned {
            return Ok(ETag(tag));
        }
        let meta = self.head(key)?.ok_or_else(|| StoreError::NotFound {
            key: key.to_string(),
        })?;
        Ok(ETag(meta.e_tag.unwrap_or_default()))
    }

    /// Uploads `file` (of `size` bytes) to `key`: one PUT when it fits in a part, else a
    /// multipart upload with at most [`PARTS_IN_FLIGHT`] parts in memory at once.
    fn upload(&self, key: &str, file: &mut File, size: u64, source: &Path) -> StoreResult<ETag> {
        let read_error = |e| StoreError::io(source.display().to_string(), e);
        if size <= PART_SIZE as u64 {
            let mut bytes = Vec::with_capacity(size as usize);
            file.read_to_end(&mut bytes).map_err(read_error)?;
            return self.put_payload(key, PutPayload::from(bytes), PutMode::Overwrite);
        }
        let location = self.location(key)?;
        let store = Arc::clone(&self.store);
        let mut upload = self
            .runtime
            .block_on(async move { store.put_multipart(&location).await })
            .map_err(|e| self.classify(e, "put", key))?;
        match self.upload_parts(key, upload.as_mut(), file, source) {
            Ok(()) => {
                let result = self
                    .runtime
                    .block_on(async { upload.complete().await })
                    .map_err(|e| self.classify(e, "put", key))?;
                self.etag_after_put(key, result.e_tag)
            }
            Err(e) => {
                if let Err(abort) = self.runtime.block_on(async { upload.abort().await }) {
                    tracing::warn!(key, error = %abort, "could not abort a failed multipart upload");
                }
                Err(e)
            }
        }
    }

    fn upload_parts(
        &self,
        key: &str,
        upload: &mut dyn MultipartUpload,
        file: &mut File,
        source: &Path,
    ) -> StoreResult<()> {
        let mut in_flight = VecDeque::with_capacity(PARTS_IN_FLIGHT);
        let wait = |part: tokio::task::JoinHandle<object_store::Result<_>>| match self
            .runtime
            .block_on(part)
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(self.classify(e, "put", key)),
            Err(join) => Err(StoreError::io(key, io::Error::other(join))),
        };
        loop {
            if in_flight.len() == PARTS_IN_FLIGHT {
                if let Some(part) = in_flight.pop_front() {
                    wait(part)?;
                }
            }
            let part =
                read_part(file).map_err(|e| StoreError::io(source.display().to_string(), e))?;
            if part.is_empty() {
                break;
            }
            let sending = upload.put_part(PutPayload::from(part));
            in_flight.push_back(self.runtime.spawn(sending));
        }
        while let Some(part) = in_flight.pop_front() {
            wait(part)?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for S3Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Storage")
            .field("endpoint", &self.settings.endpoint)
            .field("bucket", &self.settings.bucket)
            .field("prefix", &self.prefix)
            .field("region", &self.settings.region)
            .finish_non_exhaustive()
    }
}

impl ObjectStorage for S3Storage {
    fn read(&self, key: &str) -> StoreResult<Contents> {
        let location = self.location(key)?;
        let store = Arc::clone(&self.store);
        let read = self.runtime.block_on(async move {
            let result = store.get(&location).await?;
            let etag = result.meta.e_tag.clone().unwrap_or_default();
            let bytes = result.bytes().await?;
            Ok::<_, object_store::Error>((bytes, etag))
        });
        let (bytes, etag) = read.map_err(|e| self.classify(e, "get", key))?;
        Ok(Contents {
            bytes: bytes.to_vec(),
            etag: ETag(etag),
        })
    }

    fn read_range(&self, key: &str, range: Range<u64>) -> StoreResult<ByteReader> {
        let location = self.location(key)?;
        let empty = || -> ByteReader { Box::new(io::empty()) };
        if range.start >= range.end {
            // S3 refuses an empty range; the file must still exist.
            return match self.head(key)? {
                Some(_) => Ok(empty()),
                None => Err(StoreError::NotFound {
                    key: key.to_string(),
                }),
            };
        }
        let store = Arc::clone(&self.store);
        // Services read a range end they cannot parse (past i64) as no range at all.
        let open_ended = range.end > i64::MAX as u64;
        let options = match (range.start, open_ended) {
            (0, true) => GetOptions::new(),
            (start, true) => GetOptions::new().with_range(Some(GetRange::Offset(start))),
            (_, false) => GetOptions::new().with_range(Some(GetRange::Bounded(range.clone()))),
        };
        let opened = self
            .runtime
            .block_on(async move { store.get_opts(&location, options).await });
        match opened {
            Ok(result) => Ok(Box::new(StreamReader {
                runtime: Arc::clone(&self.runtime),
                stream: result.into_stream(),
                chunk: Bytes::new(),
                key: key.to_string(),
                bucket: self.settings.bucket.clone(),
            })),
            Err(e) if is_unsatisfiable_range(&e) => match self.head(key)? {
                // The range starts at or past the end: nothing to read.
                Some(meta) if range.start >= meta.size => Ok(empty()),
                _ => Err(self.classify(e, "get", key)),
            },
            Err(e) => Err(self.classify(e, "get", key)),
        }
    }

    fn metadata(&self, key: &str) -> StoreResult<Option<FileInfo>> {
        Ok(self.head(key)?.map(|meta| self.file_info(&meta)))
    }

    fn put(&self, key: &str, bytes: &[u8]) -> StoreResult<ETag> {
        self.put_payload(key, PutPayload::from(bytes.to_vec()), PutMode::Overwrite)
    }

    fn put_all(&self, files: &[(&str, &[u8])]) -> StoreResult<Vec<ETag>> {
        let locations = files
            .iter()
            .map(|(key, _)| self.location(key))
            .collect::<StoreResult<Vec<_>>>()?;
        let puts = locations
            .into_iter()
            .zip(files)
            .map(|(location, (_, bytes))| {
                let (store, payload) = (Arc::clone(&self.store), PutPayload::from(bytes.to_vec()));
                async move { store.put(&location, payload).await }
            });
        // One hand-over to the store's runtime for all of them, the requests in flight
        // together.
        let results = self.runtime.block_on(futures_util::future::join_all(puts));
        results
            .into_iter()
            .zip(files)
            .map(|(put, (key, _))| {
                let result = put.map_err(|e| self.classify(e, "put", key))?;
                self.etag_after_put(key, result.e_tag)
            })
            .collect()
    }

    fn put_if(&self, key: &str, bytes: &[u8], precondition: Precondition) -> StoreResult<ETag> {
        let mode = match precondition {
            Precondition::Absent => PutMode::Create,
            Precondition::Matches(etag) => PutMode::Update(UpdateVersion {
                e_tag: Some(etag.0),
                version: None,
            }),
        };
        self.put_payload(key, PutPayload::from(bytes.to_vec()), mode)
    }

    fn move_file(&self, source: &Path, key: &str) -> StoreResult<ETag> {
        let source_error = |e| StoreError::io(source.display().to_string(), e);
        let mut file = File::open(source).map_err(source_error)?;
        let size = file.metadata().map_err(source_error)?.len();
        let etag = self.upload(key, &mut file, size, source)?;
        drop(file);
        std::fs::remove_file(source).map_err(source_error)?;
        Ok(etag)
    }

    fn copy(&self, from: &str, to: &str) -> StoreResult<()> {
        let (source, target) = (self.location(from)?, self.location(to)?);
        let store = Arc::clone(&self.store);
        self.runtime
            .block_on(async move { store.copy(&source, &target).await })
            .map_err(|e| self.classify(e, "copy", from))
    }

    fn rename(&self, from: &str, to: &str) -> StoreResult<()> {
        self.copy(from, to)?;
        self.delete(from)
    }

    fn delete(&self, key: &str) -> StoreResult<()> {
        let location = self.location(key)?;
        let store = Arc::clone(&self.store);
        match self
            .runtime
            .block_on(async move { store.delete(&location).await })
        {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.classify(e, "delete", key)),
        }
    }

    fn delete_prefix(&self, prefix: &str) -> StoreResult<()> {
        if prefix.is_empty() {
            return Err(StoreError::InvalidKey {
                key: String::new(),
                reason: "the whole store is never deleted by prefix",
            });
        }
        let location = self.dir_location(prefix)?;
        let store = Arc::clone(&self.store);
        let deleted = self.runtime.block_on(async move {
            let locations = store
                .list(location.as_ref())
                .map(|meta| meta.map(|m| m.location))
                .boxed();
            let mut results = store.delete_stream(locations);
            while let Some(result) = results.next().await {
                match result {
                    Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        });
        deleted.map_err(|e| self.classify(e, "delete", prefix))
    }

    fn list(&self, prefix: &str) -> StoreResult<Vec<FileInfo>> {
        let location = self.dir_location(prefix)?;
        let store = Arc::clone(&self.store);
        let listed = self.runtime.block_on(async move {
            let mut stream = store.list(location.as_ref());
            let mut metas = Vec::new();
            while let Some(meta) = stream.next().await {
                metas.push(meta?);
            }
            Ok::<_, object_store::Error>(metas)
        });
        let metas = listed.map_err(|e| self.classify(e, "list", prefix))?;
        let mut files: Vec<FileInfo> = metas.iter().map(|m| self.file_info(m)).collect();
        files.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(files)
    }

    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        let location = self.dir_location(prefix)?;
        let store = Arc::clone(&self.store);
        let listed = self
            .runtime
            .block_on(async move { store.list_with_delimiter(location.as_ref()).await })
            .map_err(|e| self.classify(e, "list", prefix))?;
        let mut dirs: Vec<String> = listed
            .common_prefixes
            .iter()
            .map(|p| self.key_of(p))
            .collect();
        let mut files: Vec<FileInfo> = listed.objects.iter().map(|m| self.file_info(m)).collect();
        dirs.sort();
        files.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(DirListing { dirs, files })
    }
}

/// Maps an `object_store` error to the store's, for `operation` on `key` of `bucket`. Some
/// failures (those of listings among them) reach us as generic errors whose message
/// carries the S3 error code; the code decides then.
fn classify(
    error: object_store::Error,
    operation: &'static str,
    key: &str,
    bucket: &str,
) -> StoreError {
    use object_store::Error as E;
    let text = chain_text(&error);
    let has_code = |code: &str| text.contains(&format!("<Code>{code}</Code>"));
    let key = key.to_string();
    match error {
        _ if has_code("NoSuchBucket") => StoreError::BucketNotFound {
            bucket: bucket.to_string(),
            cause: error.into(),
        },
        E::NotFound { .. } => StoreError::NotFound { key },
        E::Precondition { .. } | E::AlreadyExists { .. } => StoreError::PreconditionFailed { key },
        _ if CREDENTIAL_ERROR_CODES.iter().any(|code| has_code(code)) => StoreError::Credentials {
            cause: error.into(),
        },
        E::Unauthenticated { .. } => StoreError::Credentials {
            cause: error.into(),
        },
        E::PermissionDenied { .. } => StoreError::AccessDenied {
            operation,
            key,
            cause: error.into(),
        },
        _ if has_code("AccessDenied") => StoreError::AccessDenied {
            operation,
            key,
            cause: error.into(),
        },
        _ if is_transient(&error, &text) => StoreError::Unavailable {
            operation,
            key,
            cause: error.into(),
        },
        _ => StoreError::Service {
            operation,
            key,
            cause: error.into(),
        },
    }
}

/// A tokio runtime that is shut down without waiting when dropped, so that a store may be
/// dropped anywhere, inside async code too.
#[derive(Debug)]
struct OwnedRuntime(Option<tokio::runtime::Runtime>);

impl OwnedRuntime {
    fn get(&self) -> &tokio::runtime::Runtime {
        self.0
            .as_ref()
            .expect("the runtime lives until the store is dropped")
    }

    /// Runs `future` on the store's runtime, blocking the calling thread. Called from
    /// inside another runtime's task (where a nested `block_on` is forbidden), the caller's
    /// thread is handed over to blocking work first (`block_in_place`, on a multi-thread
    /// runtime), or the future is driven from a thread of its own (a current-thread
    /// runtime, as in tests).
    fn block_on<F: std::future::Future + Send>(&self, future: F) -> F::Output
    where
        F::Output: Send,
    {
        use tokio::runtime::{Handle, RuntimeFlavor};
        match Handle::try_current().map(|h| h.runtime_flavor()) {
            Err(_) => self.get().block_on(future),
            Ok(RuntimeFlavor::MultiThread) => {
                tokio::task::block_in_place(|| self.get().block_on(future))
            }
            Ok(_) => std::thread::scope(|scope| {
                scope
                    .spawn(|| self.get().block_on(future))
                    .join()
                    .expect("the store's call did not panic")
            }),
        }
    }

    fn spawn<F>(&self, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.get().spawn(future)
    }
}

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Reads a streamed GET, one chunk at a time, blocking on the store's runtime.
struct StreamReader {
    runtime: Arc<OwnedRuntime>,
    stream: BoxStream<'static, object_store::Result<Bytes>>,
    chunk: Bytes,
    key: String,
    bucket: String,
}

impl Read for StreamReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.chunk.is_empty() {
            match self.runtime.block_on(self.stream.next()) {
                None => return Ok(0),
                Some(Ok(chunk)) => self.chunk = chunk,
                Some(Err(e)) => {
                    let error = classify(e, "get", &self.key, &self.bucket);
                    let kind = if error.is_unavailable() {
                        io::ErrorKind::TimedOut
                    } else {
                        io::ErrorKind::Other
                    };
                    return Err(io::Error::new(kind, error));
                }
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk.split_to(n));
        Ok(n)
    }
}

/// Reads the next part of `file`: [`PART_SIZE`] bytes, fewer at the end, none after it.
fn read_part(file: &mut File) -> io::Result<Vec<u8>> {
    let mut part = Vec::with_capacity(PART_SIZE);
    file.by_ref()
        .take(PART_SIZE as u64)
        .read_to_end(&mut part)?;
    Ok(part)
}

/// The error and its sources, as one text (object_store keeps the HTTP status and the S3
/// error code of a failure in private types; their messages carry them).
fn chain_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(" | ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// Whether a failure is transient: the connection failed or timed out, or the service
/// answered with a 5xx or asked to slow down.
fn is_transient(error: &(dyn std::error::Error + 'static), text: &str) -> bool {
    let mut source = Some(error);
    while let Some(inner) = source {
        if let Some(http) = inner.downcast_ref::<HttpError>() {
            if matches!(
                http.kind(),
                HttpErrorKind::Connect
                    | HttpErrorKind::Request
                    | HttpErrorKind::Timeout
                    | HttpErrorKind::Interrupted
            ) {
                return true;
            }
        }
        source = inner.source();
    }
    [
        "status code: 5",
        "SlowDown",
        "InternalError",
        "ServiceUnavailable",
        "XMinioServerNotInitialized",
        // 408, 429, and 499 (MinIO's answer to the requests in flight when it shuts down)
        "status code: 408",
        "RequestTimeout",
        "status code: 429",
        "status code: 499",
        "ClientDisconnected",
    ]
    .iter()
    .any(|marker| text.contains(marker))
}

/// Whether a GET failed because its range starts past the object's end (416).
fn is_unsatisfiable_range(error: &object_store::Error) -> bool {
    let text = chain_text(error);
    text.contains("416") || text.contains("InvalidRange")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: text.to_string().into(),
        }
    }

    /// MinIO answers the requests in flight when it shuts down with 499 ClientDisconnected:
    /// an outage (503 to the client), not a fault of the request (issue 43's S3 outage test
    /// once got a 500 from it).
    #[test]
    fn a_shutting_down_service_is_transient_and_a_refusal_is_not() {
        let minio_stopping = "Error performing PUT http://127.0.0.1:1/b/k - Server returned \
             non-2xx status code: 499 <unknown status code>: <Error><Code>ClientDisconnected\
             </Code><Message>Client disconnected before response was ready</Message></Error>";
        assert!(is_transient(&error(minio_stopping), minio_stopping));
        for text in [
            "Server returned non-2xx status code: 503 Service Unavailable: <Code>SlowDown</Code>",
            "Server returned non-2xx status code: 429 Too Many Requests",
            "Server returned non-2xx status code: 408 Request Timeout: <Code>RequestTimeout</Code>",
        ] {
            assert!(is_transient(&error(text), text), "{text}");
        }
        let refused =
            "Server returned non-2xx status code: 403 Forbidden: <Code>AccessDenied</Code>";
        assert!(!is_transient(&error(refused), refused));
    }
}
