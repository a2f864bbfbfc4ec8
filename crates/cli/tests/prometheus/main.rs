//! arca's metrics as a real Prometheus sees them: Prometheus (`/usr/bin/prometheus`, the
//! Debian package `prometheus`) scrapes the `metrics_listen` address every second and the
//! test asks its HTTP API whether the requests it made were counted; `promtool check
//! metrics` lints the exposition; the main listener's `/metrics` is for admins only.
//!
//! Skips (saying NOT RUN) when Prometheus is not installed, unless `ARCA_REQUIRE_PROMETHEUS`
//! is set.

#[path = "../common/mod.rs"]
mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{Arca, Http};
use hyper::{Method, StatusCode};

const SECRET: &str = "the prometheus test's secret";

/// `program` on the PATH or in /usr/bin; `None` (NOT RUN) when missing, a panic when
/// `ARCA_REQUIRE_PROMETHEUS` is set.
fn tool(program: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/bin")])
        .map(|dir| dir.join(program))
        .find(|p| p.is_file());
    if found.is_none() && std::env::var_os("ARCA_REQUIRE_PROMETHEUS").is_some() {
        panic!("{program} is required (ARCA_REQUIRE_PROMETHEUS) but not installed");
    }
    found
}

/// A Bearer JWT for `sub` with `roles` (the server makes `curator` admins).
fn bearer(sub: &str, roles: &[&str]) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let claims = serde_json::json!({ "sub": sub, "roles": roles, "exp": now + 3600, "iat": now });
    let token = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap();
    format!("Bearer {token}")
}

/// arca with JWT users, a metrics listener and `extra` settings.
fn serve(data: &Path, extra: &[(&str, &str)]) -> Arca {
    let mut env = vec![
        ("ARCA_AUTH_JWT_KEY", SECRET),
        ("ARCA_AUTH_ADMIN_ROLE", "curator"),
        ("ARCA_METRICS_LISTEN", "127.0.0.1:0"),
    ];
    env.extend_from_slice(extra);
    Arca::serve_with(data, &env)
}

/// The metrics listener's address, as arca announced it.
fn metrics_address(arca: &Arca) -> String {
    let log = arca.log();
    log.lines()
        .find_map(|l| l.strip_prefix("arca metrics on http://"))
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("arca did not announce its metrics listener:\n{log}"))
        .to_string()
}

/// `http://127.0.0.1:PORT` of the main listener.
fn main_root(arca: &Arca) -> String {
    arca.base.trim_end_matches("/rest").to_string()
}

/// A Prometheus scraping one target every second, killed when dropped.
struct Prometheus {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(program: &Path, target: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  \
                 - job_name: arca\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new(program)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus starts");
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// The value of the instant query `expr`'s single result; `None` while it has none.
    async fn value(&self, http: &Http, expr: &str) -> Option<f64> {
        let query: String =
            percent_encoding::utf8_percent_encode(expr, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        let reply = http
            .try_request(
                Method::GET,
                &format!("{}/api/v1/query?query={query}", self.url),
                &[],
                "",
            )
            .await
            .ok()?;
        if reply.status != StatusCode::OK {
            return None;
        }
        let answer: serde_json::Value = serde_json::from_slice(&reply.body).ok()?;
        answer["data"]["result"][0]["value"][1]
            .as_str()?
            .parse()
            .ok()
    }

    /// Polls `expr` until it equals `expected` (generous deadline: Prometheus scrapes every
    /// second, on a loaded machine later); panics with what it saw last.
    async fn wait_for(&self, http: &Http, expr: &str, expected: f64) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut last = None;
        while Instant::now() < deadline {
            last = self.value(http, expr).await;
            if last == Some(expected) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        panic!(
            "Prometheus never saw {expr} = {expected} (last: {last:?}); its log:\n{}",
            self.log()
        );
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_the_requests_arca_answered() {
    let (Some(prometheus), Some(promtool)) = (tool("prometheus"), tool("promtool")) else {
        eprintln!("NOT RUN: prometheus and promtool are not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let arca = serve(&dir.path().join("data"), &[]);
    let target = metrics_address(&arca);
    let prom = Prometheus::start(&prometheus, &target);
    let http = Http::anonymous();
    let admin = bearer("carol", &["curator"]);
    let auth = [("authorization", admin.as_str())];
    // The kernel's own writes at start (the root container) come before ours.
    let before = http
        .get(&format!("http://{target}/metrics"), &[])
        .await
        .text();
    let kernel_writes: f64 = before
        .lines()
        .find_map(|l| l.strip_prefix("arca_kernel_writes_total "))
        .unwrap_or_else(|| panic!("no arca_kernel_writes_total in\n{before}"))
        .parse()
        .unwrap();
    for i in 0..5 {
        let r = http
            .request(
                Method::PUT,
                &arca.url(&format!("/scraped-{i}")),
                &[
                    ("authorization", admin.as_str()),
                    ("content-type", "text/plain"),
                ],
                format!("object {i}"),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    }
    for _ in 0..3 {
        let r = http.get(&arca.url("/scraped-0"), &auth).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    }
    prom.wait_for(
        &http,
        r#"sum(arca_http_requests_total{job="arca",method="PUT",class="write",status="201"})"#,
        5.0,
    )
    .await;
    prom.wait_for(&http, r#"arca_writes_total{kind="replace"}"#, 5.0)
        .await;
    prom.wait_for(
        &http,
        r#"sum(arca_http_requests_total{method="GET",class="read",status="200"})"#,
        3.0,
    )
    .await;
    // The kernel executed the five writes; the uploads were read in full.
    prom.wait_for(&http, "arca_kernel_writes_total", kernel_writes + 5.0)
        .await;
    let uploaded: f64 = (0..5).map(|i| format!("object {i}").len() as f64).sum();
    prom.wait_for(&http, "arca_http_upload_bytes_total", uploaded)
        .await;

    // promtool lints what arca exposes (in the classic text format: promtool's parser).
    let text = http
        .get(&format!("http://{target}/metrics"), &[])
        .await
        .text();
    assert!(
        text.contains("# TYPE arca_journal_fsyncs_total counter"),
        "{text}"
    );
    assert!(text.contains("arca_disk_free_bytes "), "{text}");
    let mut check = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let checked = check.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    drop(prom);
    arca.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_main_listener_serves_metrics_to_admins_only() {
    let dir = tempfile::tempdir().unwrap();
    let arca = serve(&dir.path().join("data"), &[]);
    let url = format!("{}/metrics", main_root(&arca));
    let http = Http::anonymous();
    let anonymous = http.get(&url, &[]).await;
    assert_eq!(
        anonymous.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        anonymous.text()
    );
    assert!(
        anonymous.headers.contains_key("www-authenticate"),
        "{:?}",
        anonymous.headers
    );
    let reader = bearer("dave", &[]);
    let refused = http.get(&url, &[("authorization", &reader)]).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    let admin = bearer("carol", &["curator"]);
    let answered = http.get(&url, &[("authorization", &admin)]).await;
    assert_eq!(answered.status, StatusCode::OK, "{}", answered.text());
    assert!(
        answered.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4"),
        "{:?}",
        answered.headers
    );
    let text = answered.text();
    // The two refusals were recorded before this answer.
    assert!(
        text.contains(
            r#"arca_http_requests_total{method="GET",class="metrics/health",status="401"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains(
            r#"arca_http_requests_total{method="GET",class="metrics/health",status="403"} 1"#
        ),
        "{text}"
    );
    // OpenMetrics for those who ask, as Prometheus does.
    let open = http
        .get(
            &url,
            &[
                ("authorization", &admin),
                (
                    "accept",
                    "application/openmetrics-text;version=1.0.0,text/plain;q=0.5",
                ),
            ],
        )
        .await;
    assert!(
        open.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text"),
        "{:?}",
        open.headers
    );
    assert!(open.text().ends_with("# EOF\n"), "{}", open.text());
    assert!(
        open.text().contains("# TYPE arca_http_requests counter"),
        "{}",
        open.text()
    );
    // The metrics listener answers anyone, and only /metrics.
    let target = metrics_address(&arca);
    let open = http.get(&format!("http://{target}/metrics"), &[]).await;
    assert_eq!(open.status, StatusCode::OK);
    let elsewhere = http.get(&format!("http://{target}/rest/"), &[]).await;
    assert_eq!(elsewhere.status, StatusCode::NOT_FOUND);
    arca.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_off_answers_404_on_both_listeners() {
    let dir = tempfile::tempdir().unwrap();
    let arca = serve(
        &dir.path().join("data"),
        &[("ARCA_METRICS_ENABLED", "false")],
    );
    let http = Http::anonymous();
    let admin = bearer("carol", &["curator"]);
    let put = http
        .request(
            Method::PUT,
            &arca.url("/unrecorded"),
            &[
                ("authorization", admin.as_str()),
                ("content-type", "text/plain"),
            ],
            "x",
        )
        .await;
    assert_eq!(put.status, StatusCode::CREATED, "{}", put.text());
    let main = http
        .get(
            &format!("{}/metrics", main_root(&arca)),
            &[("authorization", &admin)],
        )
        .await;
    assert_eq!(main.status, StatusCode::NOT_FOUND, "{}", main.text());
    assert!(main.text().contains("metrics.enabled"), "{}", main.text());
    let target = metrics_address(&arca);
    let open = http.get(&format!("http://{target}/metrics"), &[]).await;
    assert_eq!(open.status, StatusCode::NOT_FOUND, "{}", open.text());
    arca.stop();
}

/// `text` linted by `promtool check metrics`.
fn promtool_accepts(promtool: &Path, text: &str) {
    let mut check = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let checked = check.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
}

/// arca with a replica (`[[replica]]` in a config file, named `copy`) and a background
/// audit that runs when asked.
fn serve_with_replica(dir: &Path) -> Arca {
    let config = dir.join("arca.toml");
    std::fs::write(
        &config,
        format!(
            "[fixity]\nschedule = \"3650d\"\n\n[[replica]]\nname = \"copy\"\npath = {:?}\n",
            dir.join("replica").display().to_string()
        ),
    )
    .unwrap();
    serve(
        &dir.join("data"),
        &[("ARCA_CONFIG", config.to_str().unwrap())],
    )
}

/// Each replica's lag, copies and failing flag, and the damaged files, are exposed and
/// lint clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_and_damage_figures_are_exposed() {
    let Some(promtool) = tool("promtool") else {
        eprintln!("NOT RUN: promtool is not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let arca = serve_with_replica(dir.path());
    let http = Http::anonymous();
    let text = http
        .get(&format!("http://{}/metrics", metrics_address(&arca)), &[])
        .await
        .text();
    for line in [
        "arca_replica_failing{replica=\"copy\"} 0",
        "arca_fixity_damaged_files 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
    }
    for name in [
        "# TYPE arca_replica_lag_changes gauge",
        "# TYPE arca_replica_copied_objects_total counter",
        "# TYPE arca_replica_copied_bytes_total counter",
    ] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    promtool_accepts(&promtool, &text);
    // Readiness names the replica's check.
    let ready = http
        .get(&format!("{}/health/ready", main_root(&arca)), &[])
        .await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text());
    assert!(ready.text().contains("replica:copy"), "{}", ready.text());
    arca.stop();
}

/// The background audit's figures: running, progress, the last run's findings by kind and
/// end time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_figures_are_exposed_once_a_run_finished() {
    let Some(promtool) = tool("promtool") else {
        eprintln!("NOT RUN: promtool is not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let arca = serve_with_replica(dir.path());
    let http = Http::anonymous();
    let admin = bearer("carol", &["curator"]);
    let r = http
        .request(
            Method::POST,
            &arca.url("/fcr:audit"),
            &[("authorization", admin.as_str())],
            String::new(),
        )
        .await;
    assert!(
        r.status == StatusCode::ACCEPTED || r.status == StatusCode::CONFLICT,
        "{}",
        r.text()
    );
    let url = format!("http://{}/metrics", metrics_address(&arca));
    let deadline = Instant::now() + Duration::from_secs(60);
    let text = loop {
        let text = http.get(&url, &[]).await.text();
        if text
            .lines()
            .any(|l| l.starts_with("arca_audit_last_complete_end_timestamp_seconds "))
        {
            break text;
        }
        assert!(Instant::now() < deadline, "no finished run:\n{text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for name in ["arca_audit_running 0", "arca_audit_last_unrepaired 0"] {
        assert!(text.lines().any(|l| l == name), "{name} missing:\n{text}");
    }
    assert!(text.contains("arca_audit_last_objects "), "{text}");
    promtool_accepts(&promtool, &text);
    arca.stop();
}
