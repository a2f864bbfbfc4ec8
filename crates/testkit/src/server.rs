//! The in-process arca server and the HTTP client of the tests (feature `server`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{HeaderMap, Method, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::sync::oneshot;

/// `Authorization` of the quick-start admin `fedoraAdmin`/`fedoraAdmin`, which arca has on a
/// loopback address when no users are configured (and the Fedora under comparison too).
pub const ADMIN_AUTHORIZATION: &str = "Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4=";

/// A small HTTP/1.1 client with a connection pool, for any arca under test (in-process or
/// spawned). It sends [`ADMIN_AUTHORIZATION`] unless a request names its own
/// `Authorization` ([`Http::anonymous`] sends none).
#[derive(Clone)]
pub struct Http {
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
    authorization: Option<&'static str>,
}

impl Default for Http {
    fn default() -> Self {
        Self::new()
    }
}

impl Http {
    /// A new client that acts as the quick-start admin.
    pub fn new() -> Self {
        Self {
            client: Client::builder(TokioExecutor::new()).build_http(),
            authorization: Some(ADMIN_AUTHORIZATION),
        }
    }

    /// A new client that sends no credentials unless a request names them.
    pub fn anonymous() -> Self {
        Self {
            authorization: None,
            ..Self::new()
        }
    }

    /// Sends a request; transport errors (e.g. a killed server) are `Err`.
    pub async fn try_request(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Result<Reply, String> {
        let mut req = hyper::Request::builder().method(method).uri(url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let named = headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
        if let (false, Some(authorization)) = (named, self.authorization) {
            req = req.header("authorization", authorization);
        }
        let req = req
            .body(Full::new(body.into()))
            .map_err(|e| e.to_string())?;
        let resp = self
            .client
            .request(req)
            .await
            .map_err(|e| with_causes(&e))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok(Reply {
            status,
            headers,
            body,
        })
    }

    /// Sends a request; panics on transport errors.
    pub async fn request(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Reply {
        self.try_request(method.clone(), url, headers, body)
            .await
            .unwrap_or_else(|e| panic!("{method} {url} failed: {e}"))
    }

    /// GET shorthand.
    pub async fn get(&self, url: &str, headers: &[(&str, &str)]) -> Reply {
        self.request(Method::GET, url, headers, Bytes::new()).await
    }
}

/// `error` and each of its causes, so that a transport failure says what happened
/// (hyper's client names only the step that failed).
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(&format!(": {e}"));
        cause = e.source();
    }
    text
}

/// A running in-process arca server.
pub struct TestServer {
    /// `http://127.0.0.1:PORT/rest` (no trailing slash).
    pub base: String,
    data: Option<tempfile::TempDir>,
    data_path: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    client: Http,
    /// The same server without credentials.
    anonymous: Http,
    repo: Arc<OnceLock<Arc<arca_repository::Repository>>>,
    /// Whether a write request returns only once its change is published into the root.
    wait_for_publishing: AtomicBool,
}

/// A response with its body read.
#[derive(Debug)]
pub struct Reply {
    /// Status.
    pub status: StatusCode,
    /// Headers.
    pub headers: HeaderMap,
    /// Body.
    pub body: Bytes,
}

impl Reply {
    /// Body as UTF-8 text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// First value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// All values of a header, joined as one comma-separated string.
    pub fn header_all(&self, name: &str) -> String {
        self.headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether a `Link` header with `rel` names `target`.
    pub fn has_link(&self, target: &str, rel: &str) -> bool {
        self.headers.get_all("link").iter().any(|v| {
            let v = v.to_str().unwrap_or("");
            v.split(',').any(|l| {
                l.contains(&format!("<{target}>"))
                    && (l.contains(&format!("rel=\"{rel}\"")) || l.contains(&format!("rel={rel}")))
            })
        })
    }
}

impl TestServer {
    /// Starts a server on a fresh temporary data directory.
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().to_path_buf();
        let mut s = Self::start_at(&path).await;
        s.data = Some(dir);
        s
    }

    /// Starts a server on a fresh temporary data directory with the given request limits.
    pub async fn start_with_limits(limits: arca_config::Limits) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().to_path_buf();
        let mut s = Self::start_configured(&path, limits).await;
        s.data = Some(dir);
        s
    }

    /// Starts a server on an existing data directory (kept after the server stops).
    pub async fn start_at(data: &Path) -> Self {
        Self::start_configured(data, arca_config::Limits::default()).await
    }

    /// Starts a server on `data` (a fresh temporary directory when `None`) with settings
    /// changed by `edit` (listen address and data directory are set by the test server).
    pub async fn start_with(
        data: Option<&Path>,
        edit: impl FnOnce(&mut arca_config::Config),
    ) -> Self {
        let dir = match data {
            Some(_) => None,
            None => Some(tempfile::tempdir().expect("tempdir")),
        };
        let path = data.map_or_else(
            || dir.as_ref().unwrap().path().to_path_buf(),
            Path::to_path_buf,
        );
        let mut config = arca_config::Config::default();
        edit(&mut config);
        let mut s = Self::start_config(&path, config).await;
        s.data = dir;
        s
    }

    async fn start_configured(data: &Path, limits: arca_config::Limits) -> Self {
        let config = arca_config::Config {
            limits,
            ..Default::default()
        };
        Self::start_config(data, config).await
    }

    async fn start_config(data: &Path, config: arca_config::Config) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let config = arca_config::Config {
            listen: addr.to_string(),
            data: data.to_path_buf(),
            ..config
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let (ready_tx, ready_rx) = oneshot::channel::<Result<(), String>>();
        let repo = Arc::new(OnceLock::new());
        let opened = repo.clone();
        let task = tokio::spawn(async move {
            // Report start-up failures instead of hanging the test.
            let result = arca_server::run_observed(
                config,
                listener,
                async move {
                    let _ = stopped.await;
                },
                move |r| {
                    let _ = opened.set(r);
                },
            );
            let _ = ready_tx.send(Ok(()));
            if let Err(e) = result.await {
                panic!("arca server failed: {e:#}");
            }
        });
        let _ = ready_rx.await;
        let client = Http::new();
        let server = Self {
            base: format!("http://{addr}/rest"),
            data: None,
            data_path: data.to_path_buf(),
            stop: Some(stop),
            task: Some(task),
            client,
            anonymous: Http::anonymous(),
            repo,
            wait_for_publishing: AtomicBool::new(true),
        };
        // Wait until the API answers (the repository opens asynchronously; meanwhile the
        // server answers 503, and a rebuild from storage may take a while).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
        while std::time::Instant::now() < deadline {
            if server.task.as_ref().is_some_and(|t| t.is_finished()) {
                break;
            }
            if let Ok(r) = server
                .try_request(Method::GET, &server.base, &[], Bytes::new())
                .await
            {
                // 401: up, with users configured that the quick-start admin is not one of.
                if r.status == StatusCode::OK || r.status == StatusCode::UNAUTHORIZED {
                    return server;
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("arca test server did not come up at {}", server.base);
    }

    /// The data directory.
    pub fn data(&self) -> &Path {
        &self.data_path
    }

    /// The server's repository kernel, once opened (tests reach past HTTP with it, e.g.
    /// to mark a file damaged as a fixity audit would).
    pub fn repo(&self) -> Option<Arc<arca_repository::Repository>> {
        self.repo.get().cloned()
    }

    /// The OCFL storage root.
    pub fn ocfl_root(&self) -> PathBuf {
        self.data_path.join("ocfl-root")
    }

    /// URL of a path below the REST root (`""` is the root, `…/rest/` as arca names it).
    pub fn url(&self, path: &str) -> String {
        if path.is_empty() {
            format!("{}/", self.base)
        } else {
            format!("{}/{}", self.base, path.trim_start_matches('/'))
        }
    }

    /// Sends a request; panics on transport errors.
    pub async fn request(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Reply {
        self.send(&self.client, method, url, headers, body.into())
            .await
    }

    /// Sends a request through `client`; after a write, waits for publishing unless told
    /// not to ([`set_wait_for_publishing`](Self::set_wait_for_publishing)).
    async fn send(
        &self,
        client: &Http,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Reply {
        let write = !matches!(method, Method::GET | Method::HEAD | Method::OPTIONS);
        let reply = client
            .try_request(method, url, headers, body)
            .await
            .unwrap_or_else(|e| panic!("request to {url} failed: {e}"));
        if write && self.wait_for_publishing.load(Ordering::Relaxed) {
            self.published().await;
        }
        reply
    }

    /// Waits until every change the server has acknowledged is written into the OCFL root
    /// (arca publishes behind its answers), so a test can read the root directly.
    pub async fn published(&self) {
        if let Some(repo) = self.repo.get() {
            repo.published().await;
        }
    }

    /// Whether write requests ([`request`](Self::request) with a method other than GET,
    /// HEAD and OPTIONS) return only once their change is in the root (the default, so
    /// tests may look at the root right after a write); `false` leaves the server's own
    /// timing alone, for tests of reads while publishing is behind.
    pub fn set_wait_for_publishing(&self, wait: bool) {
        self.wait_for_publishing.store(wait, Ordering::Relaxed);
    }

    async fn try_request(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Reply, String> {
        self.client.try_request(method, url, headers, body).await
    }

    /// Sends a request without credentials (unless `headers` names an `Authorization`);
    /// panics on transport errors.
    pub async fn request_anonymous(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Reply {
        self.send(&self.anonymous, method, url, headers, body.into())
            .await
    }

    /// GET shorthand.
    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        self.request(Method::GET, &self.url(path), headers, Bytes::new())
            .await
    }

    /// Stops the server and waits for it to finish (graceful shutdown).
    pub async fn stop(mut self) -> Option<tempfile::TempDir> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
        self.data.take()
    }
}

impl Drop for TestServer {
    /// Stops the server; its data directory goes once the server has finished (removed
    /// under a server still shutting down, it would make that server fail).
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let (Some(task), Ok(runtime)) = (self.task.take(), tokio::runtime::Handle::try_current())
        {
            let data = self.data.take();
            runtime.spawn(async move {
                let _ = task.await;
                drop(data);
            });
        }
    }
}

/// Sleeps until just past the start of the next whole second. A memento is named by its
/// second, so what follows is in a later second than every write before, and has most of a
/// second to happen within one (a fixed pause would start anywhere in a second, and a test
/// whose few requests must share a second would fail whenever they crossed into the next).
pub async fn next_second() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970");
    let rest = 1_000_000_000 - u64::from(now.subsec_nanos());
    tokio::time::sleep(std::time::Duration::from_nanos(rest + 20_000_000)).await;
}
