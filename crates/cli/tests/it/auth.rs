//! Authentication through the real `arca serve`: users from an htpasswd file written by
//! Apache's own `htpasswd` (bcrypt, SHA-1 and MD5 entries) and reloaded when it changes,
//! Bearer JWTs (HS256) with roles, the quick-start admin, and the start-up rules for
//! addresses other than loopback.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::{scrub_env, Arca, Http};
use base64::Engine as _;
use hyper::{Method, StatusCode};

fn basic(user: &str, password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

/// Writes an entry with Apache's `htpasswd` (`-B` bcrypt, `-s` SHA-1, `-m` MD5); `None` when
/// the tool is not installed (the test then says NOT RUN, unless ARCA_REQUIRE_HTPASSWD).
fn htpasswd(file: &Path, flag: &str, user: &str, password: &str) -> Option<()> {
    let create = if file.exists() { "" } else { "c" };
    let status = Command::new("htpasswd")
        .arg(format!("-b{create}{flag}"))
        .arg(file)
        .arg(user)
        .arg(password)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() => Some(()),
        Ok(s) => panic!("htpasswd {flag} failed: {s}"),
        Err(_) if std::env::var_os("ARCA_REQUIRE_HTPASSWD").is_some() => {
            panic!("htpasswd is required (ARCA_REQUIRE_HTPASSWD) but not installed")
        }
        Err(_) => None,
    }
}

async fn status(http: &Http, method: Method, url: &str, auth: Option<&str>) -> StatusCode {
    let headers: Vec<(&str, &str)> = auth.map(|a| ("authorization", a)).into_iter().collect();
    let mut all = headers;
    all.push(("content-type", "text/turtle"));
    http.request(method, url, &all, "").await.status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn htpasswd_users_are_checked_and_the_file_is_reloaded() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("htpasswd");
    if htpasswd(&file, "B", "alice", "alice-pw").is_none() {
        eprintln!("NOT RUN: Apache's htpasswd is not installed");
        return;
    }
    htpasswd(&file, "s", "bob", "bob-pw").unwrap();
    htpasswd(&file, "m", "root", "root-pw").unwrap();
    let data = dir.path().join("data");
    let arca = Arca::serve_with(
        &data,
        &[
            ("ARCA_AUTH_HTPASSWD", file.to_str().unwrap()),
            ("ARCA_AUTH_ADMINS", "root"),
        ],
    );
    let http = Http::anonymous();
    let (alice, bob, root) = (
        basic("alice", "alice-pw"),
        basic("bob", "bob-pw"),
        basic("root", "root-pw"),
    );
    // Fedora's default root ACL: everyone reads, only admins write.
    assert_eq!(
        status(&http, Method::GET, &arca.url("/"), None).await,
        StatusCode::OK
    );
    assert_eq!(
        status(&http, Method::GET, &arca.url("/"), Some(&alice)).await,
        StatusCode::OK
    );
    assert_eq!(
        status(&http, Method::GET, &arca.url("/"), Some(&bob)).await,
        StatusCode::OK
    );
    assert_eq!(
        status(&http, Method::PUT, &arca.url("/a"), None).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        status(&http, Method::PUT, &arca.url("/a"), Some(&alice)).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        status(&http, Method::PUT, &arca.url("/a"), Some(&root)).await,
        StatusCode::CREATED
    );
    // With users configured there is no quick-start admin.
    let quick = basic("fedoraAdmin", "fedoraAdmin");
    assert_eq!(
        status(&http, Method::GET, &arca.url("/"), Some(&quick)).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        status(
            &http,
            Method::GET,
            &arca.url("/"),
            Some(&basic("alice", "wrong"))
        )
        .await,
        StatusCode::UNAUTHORIZED
    );
    // createdBy is the real user.
    let r = http
        .request(
            Method::GET,
            &arca.url("/a"),
            &[
                ("authorization", &root),
                ("accept", "application/n-triples"),
            ],
            "",
        )
        .await;
    assert!(r.text().contains("#createdBy> \"root\""), "{}", r.text());

    // A new password takes effect once the file changes; the old one stops working.
    std::thread::sleep(Duration::from_millis(1100));
    htpasswd(&file, "B", "alice", "new-pw").unwrap();
    let new_alice = basic("alice", "new-pw");
    let mut took = false;
    for _ in 0..40 {
        if status(&http, Method::GET, &arca.url("/"), Some(&new_alice)).await == StatusCode::OK {
            took = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        took,
        "the changed htpasswd file was not reloaded:\n{}",
        arca.log()
    );
    assert_eq!(
        status(&http, Method::GET, &arca.url("/"), Some(&alice)).await,
        StatusCode::UNAUTHORIZED
    );
    // A file that cannot be read keeps the last good users, and the log says why.
    std::fs::remove_file(&file).unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        status(&http, Method::GET, &arca.url("/"), Some(&new_alice)).await,
        StatusCode::OK
    );
    assert_eq!(
        status(&http, Method::PUT, &arca.url("/b"), Some(&root)).await,
        StatusCode::CREATED
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(arca.log().contains("htpasswd"), "{}", arca.log());
    arca.stop();
}

/// An HS256 JWT for `sub` with `roles`, expiring `ttl` seconds from now (negative: expired).
fn jwt(secret: &str, sub: &str, roles: &[&str], ttl: i64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let claims = serde_json::json!({ "sub": sub, "roles": roles, "exp": now + ttl, "iat": now });
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_jwts_are_checked_and_roles_make_admins() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "a shared secret of the test";
    let arca = Arca::serve_with(
        &dir.path().join("data"),
        &[
            ("ARCA_AUTH_JWT_KEY", secret),
            ("ARCA_AUTH_ADMIN_ROLE", "curator"),
        ],
    );
    let http = Http::anonymous();
    let bearer = |t: String| format!("Bearer {t}");
    let curator = bearer(jwt(secret, "carol", &["curator"], 300));
    let reader = bearer(jwt(secret, "dave", &[], 300));
    assert_eq!(
        status(&http, Method::PUT, &arca.url("/j"), Some(&curator)).await,
        StatusCode::CREATED
    );
    assert_eq!(
        status(&http, Method::GET, &arca.url("/j"), Some(&reader)).await,
        StatusCode::OK
    );
    assert_eq!(
        status(&http, Method::PUT, &arca.url("/j"), Some(&reader)).await,
        StatusCode::FORBIDDEN
    );
    let r = http
        .request(
            Method::GET,
            &arca.url("/j"),
            &[
                ("authorization", &curator),
                ("accept", "application/n-triples"),
            ],
            "",
        )
        .await;
    assert!(r.text().contains("#createdBy> \"carol\""), "{}", r.text());
    // Expired, forged, unsigned: all 401.
    let expired = bearer(jwt(secret, "carol", &["curator"], -600));
    let forged = bearer(jwt("another secret", "carol", &["curator"], 300));
    let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    let unsigned = format!(
        "Bearer {}.{}.",
        b64(r#"{"alg":"none","typ":"JWT"}"#),
        b64(r#"{"sub":"carol","roles":["curator"],"exp":9999999999}"#)
    );
    for (what, token) in [
        ("expired", &expired),
        ("forged", &forged),
        ("alg none", &unsigned),
    ] {
        let r = http
            .request(
                Method::PUT,
                &arca.url("/k"),
                &[
                    ("authorization", token.as_str()),
                    ("content-type", "text/turtle"),
                ],
                "",
            )
            .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{what}: {}", r.text());
        assert!(r.headers.get("www-authenticate").is_some(), "{what}");
    }
    assert_eq!(
        status(&http, Method::GET, &arca.url("/k"), Some(&curator)).await,
        StatusCode::NOT_FOUND
    );
    arca.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quick_start_admin_exists_on_loopback_only() {
    let dir = tempfile::tempdir().unwrap();
    let arca = Arca::serve(&dir.path().join("data"));
    let http = Http::anonymous();
    let quick = basic("fedoraAdmin", "fedoraAdmin");
    assert_eq!(
        status(&http, Method::PUT, &arca.url("/q"), Some(&quick)).await,
        StatusCode::CREATED
    );
    assert_eq!(
        status(&http, Method::PUT, &arca.url("/r"), None).await,
        StatusCode::UNAUTHORIZED
    );
    assert!(
        arca.log().contains("fedoraAdmin"),
        "the log says the quick-start admin exists:\n{}",
        arca.log()
    );
    arca.stop();

    // Another address without users, or with checks off: arca refuses to start.
    for env in [vec![], vec![("ARCA_AUTH_ENABLED", "false")]] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_arca"));
        cmd.arg("serve")
            .arg("--listen")
            .arg("0.0.0.0:0")
            .arg("--data")
            .arg(dir.path().join("other"))
            .stdin(Stdio::null());
        scrub_env(&mut cmd);
        cmd.envs(env.iter().copied());
        let out = cmd.output().unwrap();
        assert!(!out.status.success(), "{env:?}: arca started on 0.0.0.0");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("loopback") || err.contains("needs configured users"),
            "{env:?}: {err}"
        );
    }
}
