//! Authentication: who a request comes from, told by its `Authorization` header.
//!
//! - **HTTP Basic** against an Apache htpasswd file (bcrypt, SHA-1 and Apache MD5 entries),
//!   reloaded when the file changes, and against a built-in quick-start user.
//! - **Bearer JWTs** signed with HS256 (a shared secret) or RS256/ES256 (a PEM public key).
//!
//! Verified credentials are cached under a keyed digest, so a repeated check costs about a
//! microsecond rather than a bcrypt round or a signature verification. A check that misses
//! the cache may take as long as the bcrypt cost of the entry (milliseconds to a tenth of a
//! second): async callers should run [`Authenticator::authenticate`] on a blocking thread.
//!
//! ```
//! use arca_auth::authn::{Authenticator, AuthnSettings};
//!
//! let authenticator = Authenticator::new(AuthnSettings {
//!     builtin_user: Some(("fedoraAdmin".into(), "fedoraAdmin".into())),
//!     ..AuthnSettings::default()
//! })?;
//! // "fedoraAdmin:fedoraAdmin" in base64.
//! let header = b"Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4=";
//! let principal = authenticator.authenticate(Some(header))?.expect("credentials were given");
//! assert_eq!(principal.name, "fedoraAdmin");
//! assert!(authenticator.authenticate(None)?.is_none());
//! assert!(authenticator.authenticate(Some(b"Basic Zm9vOmJhcg==")).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod apr1;
mod cache;
mod header;
mod htpasswd;
mod jwt;
mod password_hash;
mod public_key;
#[cfg(test)]
mod test_keys;

use std::path::PathBuf;

use subtle::ConstantTimeEq;

use self::cache::Keyer;
use self::header::{Basic, Credentials};
use self::htpasswd::{Check, HtpasswdFile};
use self::jwt::JwtVerifier;
use crate::Principal;

/// How users log in. Filled from the server's configuration.
#[derive(Clone)]
pub struct AuthnSettings {
    /// An Apache htpasswd file of HTTP Basic users.
    pub htpasswd: Option<PathBuf>,
    /// The HS256 shared secret of bearer JWTs.
    pub jwt_key: Option<String>,
    /// A PEM public key for bearer JWTs: RS256 for an RSA key, ES256 for an EC P-256 key.
    pub jwt_public_key: Option<PathBuf>,
    /// The JWT claim holding a user's roles: an array of strings or one string (default
    /// `roles`).
    pub jwt_roles_claim: String,
    /// A quick-start user `(name, password)` for HTTP Basic, as Fedora's `fedoraAdmin`;
    /// meant for when no users are configured. A user of the same name in the htpasswd file
    /// takes precedence.
    pub builtin_user: Option<(String, String)>,
}

impl Default for AuthnSettings {
    fn default() -> Self {
        Self {
            htpasswd: None,
            jwt_key: None,
            jwt_public_key: None,
            jwt_roles_claim: "roles".into(),
            builtin_user: None,
        }
    }
}

impl std::fmt::Debug for AuthnSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthnSettings")
            .field("htpasswd", &self.htpasswd)
            .field("jwt_key", &self.jwt_key.as_ref().map(|_| "<redacted>"))
            .field("jwt_public_key", &self.jwt_public_key)
            .field("jwt_roles_claim", &self.jwt_roles_claim)
            .field(
                "builtin_user",
                &self
                    .builtin_user
                    .as_ref()
                    .map(|(name, _)| (name, "<redacted>")),
            )
            .finish()
    }
}

/// Why the authenticator could not start.
#[derive(Debug, thiserror::Error)]
pub enum AuthnError {
    /// The htpasswd file could not be read.
    #[error("cannot read htpasswd file {path}: {source}")]
    HtpasswdRead {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line of the htpasswd file is not `user:hash`, or the file is not UTF-8.
    #[error("invalid htpasswd file {path}, line {line}: {reason}")]
    HtpasswdParse {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The JWT public key file could not be read.
    #[error("cannot read JWT public key {path}: {source}")]
    JwtKeyRead {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The JWT public key file does not hold a usable public key.
    #[error("invalid JWT public key {path}: {reason}")]
    JwtKey {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The JWT shared secret is unusable.
    #[error("invalid JWT shared secret: {0}")]
    JwtSecret(String),
    /// The built-in user is unusable.
    #[error("invalid built-in user: {0}")]
    BuiltinUser(String),
}

/// Credentials that were given but refused.
///
/// Its `Display` says only that the credentials are invalid, never which part was wrong, so
/// it can be shown to clients; [`Rejected::detail`] says why, for the server's log. Neither
/// holds a password or a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid credentials")]
pub struct Rejected {
    detail: String,
}

impl Rejected {
    fn new(detail: impl Into<String>) -> Self {
        Self {
            detail: detail.into(),
        }
    }

    /// Why the credentials were refused, for logs only: it may name the user and says
    /// whether the user, password, signature or expiry was wrong.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

/// The built-in user, its password kept only as a keyed digest.
struct BuiltinUser {
    name: String,
    password: cache::Key,
}

/// Checks `Authorization` headers. `Send + Sync`; share it in an `Arc`.
pub struct Authenticator {
    htpasswd: Option<HtpasswdFile>,
    jwt: Option<JwtVerifier>,
    builtin: Option<BuiltinUser>,
    keyer: Keyer,
}

impl Authenticator {
    /// Loads the configured htpasswd file and JWT keys; fails if one cannot be read or
    /// parsed, or if the built-in user or the shared secret is empty.
    pub fn new(settings: AuthnSettings) -> Result<Self, AuthnError> {
        let keyer = Keyer::random();
        let htpasswd = settings.htpasswd.map(HtpasswdFile::open).transpose()?;
        let jwt = JwtVerifier::new(
            settings.jwt_key.as_deref(),
            settings.jwt_public_key.as_deref(),
            settings.jwt_roles_claim,
        )?;
        let builtin = match settings.builtin_user {
            None => None,
            Some((name, _)) if name.is_empty() || name.contains(':') => {
                return Err(AuthnError::BuiltinUser(
                    "the name must be non-empty and without ':'".into(),
                ))
            }
            Some((_, password)) if password.is_empty() => {
                return Err(AuthnError::BuiltinUser("the password is empty".into()))
            }
            Some((name, password)) => {
                if htpasswd.is_some() || jwt.is_some() {
                    tracing::warn!(
                        user = name,
                        "the built-in quick-start user is enabled alongside configured users"
                    );
                }
                let password = keyer.key(password.as_bytes());
                Some(BuiltinUser { name, password })
            }
        };
        Ok(Self {
            htpasswd,
            jwt,
            builtin,
            keyer,
        })
    }

    /// Checks the raw `Authorization` header value, if any: `Ok(None)` when there is none
    /// (an anonymous request), `Ok(Some(_))` when its credentials are valid, `Err(_)` when
    /// credentials were given but are wrong, malformed or of an unsupported scheme.
    ///
    /// Cached credentials cost about a microsecond; others may cost a bcrypt round or a
    /// signature verification.
    pub fn authenticate(
        &self,
        authorization: Option<&[u8]>,
    ) -> Result<Option<Principal>, Rejected> {
        let Some(authorization) = authorization else {
            return Ok(None);
        };
        match header::parse(authorization)? {
            Credentials::Basic(basic) => self.authenticate_basic(&basic).map(Some),
            Credentials::Bearer(token) => {
                let jwt = self
                    .jwt
                    .as_ref()
                    .ok_or_else(|| Rejected::new("Bearer token, but no JWT key is configured"))?;
                jwt.verify(token, &self.keyer.key(token.as_bytes()))
                    .map(Some)
            }
        }
    }

    /// Checks `authorization` if that is quick: no header, a malformed one, credentials
    /// verified before (cached), or the built-in user alone (an HMAC). `None` when the check
    /// costs a bcrypt round or a signature check (milliseconds): callers on an async runtime
    /// then run [`authenticate`](Self::authenticate) where blocking is allowed. The header
    /// is parsed and keyed once either way on the quick path.
    pub fn authenticate_quickly(
        &self,
        authorization: Option<&[u8]>,
    ) -> Option<Result<Option<Principal>, Rejected>> {
        let Some(authorization) = authorization else {
            return Some(Ok(None));
        };
        let credentials = match header::parse(authorization) {
            Ok(c) => c,
            Err(rejected) => return Some(Err(rejected)),
        };
        match credentials {
            Credentials::Basic(basic) => match &self.htpasswd {
                Some(h) => h
                    .cached(&self.keyer.key(basic.as_bytes()))
                    .map(|p| Ok(Some(p))),
                None => Some(self.authenticate_basic(&basic).map(Some)),
            },
            Credentials::Bearer(token) => match &self.jwt {
                Some(j) => j
                    .cached(&self.keyer.key(token.as_bytes()))
                    .map(|p| Ok(Some(p))),
                None => Some(Err(Rejected::new(
                    "Bearer token, but no JWT key is configured",
                ))),
            },
        }
    }

    /// Whether Bearer tokens are accepted (a JWT key is configured).
    pub fn accepts_bearer(&self) -> bool {
        self.jwt.is_some()
    }

    /// Whether any way to log in is configured: an htpasswd file, a JWT key or the built-in
    /// user.
    pub fn has_users(&self) -> bool {
        self.htpasswd.is_some() || self.jwt.is_some() || self.builtin.is_some()
    }

    /// Checks Basic credentials: the htpasswd file first, then the built-in user.
    fn authenticate_basic(&self, basic: &Basic) -> Result<Principal, Rejected> {
        let (user, password) = (basic.user(), basic.password());
        if let Some(htpasswd) = &self.htpasswd {
            match htpasswd.check(user, password, &self.keyer.key(basic.as_bytes())) {
                Check::Accepted(principal) => return Ok(principal),
                Check::WrongPassword => {
                    return Err(Rejected::new(format!(
                        "wrong password for htpasswd user {user:?}"
                    )))
                }
                Check::UnknownUser => {}
            }
        }
        if let Some(builtin) = self.builtin.as_ref().filter(|builtin| builtin.name == user) {
            let given = self.keyer.key(password.as_bytes());
            if bool::from(given.ct_eq(&builtin.password)) {
                return Ok(Principal {
                    name: builtin.name.clone(),
                    roles: Vec::new(),
                });
            }
            return Err(Rejected::new(format!(
                "wrong password for the built-in user {user:?}"
            )));
        }
        if let Some(htpasswd) = &self.htpasswd {
            htpasswd.spend_decoy(password);
            return Err(Rejected::new(format!(
                "unknown user {user:?} (not in {})",
                htpasswd.path().display()
            )));
        }
        Err(Rejected::new(format!(
            "unknown user {user:?} (no htpasswd file is configured)"
        )))
    }
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("htpasswd", &self.htpasswd.as_ref().map(HtpasswdFile::path))
            .field(
                "jwt_algorithms",
                &self
                    .jwt
                    .as_ref()
                    .map(|jwt| jwt.algorithms().collect::<Vec<_>>()),
            )
            .field("builtin_user", &self.builtin.as_ref().map(|b| &b.name))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    use serde_json::json;

    use super::*;

    // Made with `htpasswd -nbB -C 5 alice 'correct horse'` and `htpasswd -nbm fedoraAdmin secret`.
    const ALICE: &str = "alice:$2y$05$9ftlczR0ID9tcsGDPZc28.Q68mt5Iv1Xg0raiEQc60UzVt.U84Jdy";
    const FEDORA_ADMIN: &str = "fedoraAdmin:$apr1$zMDbRXTq$HsL6Coia9fY3/vu0L.VYp/";
    const SECRET: &str = "a shared secret of at least 32 bytes";

    fn basic(user_password: &str) -> Vec<u8> {
        format!("Basic {}", STANDARD.encode(user_password)).into_bytes()
    }

    fn bearer(token: &str) -> Vec<u8> {
        format!("Bearer {token}").into_bytes()
    }

    fn hs256(claims: &serde_json::Value) -> String {
        let key = EncodingKey::from_secret(SECRET.as_bytes());
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &key).expect("sign")
    }

    fn unix_now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs()
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        authenticator: Authenticator,
    }

    /// An authenticator with an htpasswd file of `lines` (if any) and `settings`.
    fn authenticator(lines: Option<&[&str]>, settings: AuthnSettings) -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        let htpasswd = lines.map(|lines| {
            let path = dir.path().join("htpasswd");
            std::fs::write(&path, lines.join("\n")).expect("write htpasswd");
            path
        });
        let authenticator = Authenticator::new(AuthnSettings {
            htpasswd,
            ..settings
        })
        .expect("valid settings");
        Fixture {
            _dir: dir,
            authenticator,
        }
    }

    fn builtin(name: &str, password: &str) -> AuthnSettings {
        AuthnSettings {
            builtin_user: Some((name.into(), password.into())),
            ..AuthnSettings::default()
        }
    }

    fn user(fixture: &Fixture, header: &[u8]) -> Result<String, Rejected> {
        let principal = fixture.authenticator.authenticate(Some(header))?;
        Ok(principal.expect("credentials were given").name)
    }

    #[test]
    fn no_header_is_anonymous() {
        let fixture = authenticator(Some(&[ALICE]), builtin("fedoraAdmin", "fedoraAdmin"));
        assert_eq!(fixture.authenticator.authenticate(None), Ok(None));
    }

    #[test]
    fn only_quick_checks_are_done_quickly() {
        let fixture = authenticator(Some(&[ALICE]), AuthnSettings::default());
        let a = &fixture.authenticator;
        assert_eq!(a.authenticate_quickly(None), Some(Ok(None)));
        assert!(matches!(
            a.authenticate_quickly(Some(b"Basic !!")),
            Some(Err(_))
        ));
        assert!(matches!(
            a.authenticate_quickly(Some(b"Bearer abc")),
            Some(Err(_))
        ));
        // Not verified yet: a hash to check, so not quick.
        let header = basic("alice:correct horse");
        assert_eq!(a.authenticate_quickly(Some(&header)), None);
        assert_eq!(user(&fixture, &header), Ok("alice".into()));
        let quick = a.authenticate_quickly(Some(&header));
        assert_eq!(
            quick.map(|r| r.map(|p| p.map(|p| p.name))),
            Some(Ok(Some("alice".into())))
        );
        // A wrong password is never cached.
        let wrong = basic("alice:wrong");
        assert!(user(&fixture, &wrong).is_err());
        assert_eq!(a.authenticate_quickly(Some(&wrong)), None);
        // The built-in user alone is an HMAC away.
        let fixture = authenticator(None, builtin("fedoraAdmin", "fedoraAdmin"));
        let quick = fixture
            .authenticator
            .authenticate_quickly(Some(&basic("fedoraAdmin:fedoraAdmin")));
        assert!(matches!(quick, Some(Ok(Some(_)))));
    }

    #[test]
    fn builtin_user_logs_in_with_basic() {
        let fixture = authenticator(None, builtin("fedoraAdmin", "fedoraAdmin"));
        assert_eq!(
            user(&fixture, &basic("fedoraAdmin:fedoraAdmin")),
            Ok("fedoraAdmin".into())
        );
        assert!(user(&fixture, &basic("fedoraAdmin:fedoraAdmiN")).is_err());
        assert!(user(&fixture, &basic("fedoraAdmin:")).is_err());
        assert!(user(&fixture, &basic("fedoraadmin:fedoraAdmin")).is_err());
    }

    #[test]
    fn htpasswd_users_and_the_builtin_user_together() {
        let fixture = authenticator(
            Some(&[ALICE, FEDORA_ADMIN]),
            builtin("fedoraAdmin", "fedoraAdmin"),
        );
        assert_eq!(
            user(&fixture, &basic("alice:correct horse")),
            Ok("alice".into())
        );
        // The file's fedoraAdmin takes precedence over the built-in one.
        assert_eq!(
            user(&fixture, &basic("fedoraAdmin:secret")),
            Ok("fedoraAdmin".into())
        );
        let refused = user(&fixture, &basic("fedoraAdmin:fedoraAdmin")).unwrap_err();
        assert!(
            refused.detail().contains("htpasswd"),
            "{}",
            refused.detail()
        );

        let fixture = authenticator(Some(&[ALICE]), builtin("fedoraAdmin", "fedoraAdmin"));
        assert_eq!(
            user(&fixture, &basic("fedoraAdmin:fedoraAdmin")),
            Ok("fedoraAdmin".into())
        );
        assert_eq!(
            user(&fixture, &basic("alice:correct horse")),
            Ok("alice".into())
        );
    }

    #[test]
    fn refusals_look_alike_to_clients_and_differ_in_the_log() {
        let fixture = authenticator(
            Some(&[ALICE]),
            AuthnSettings {
                jwt_key: Some(SECRET.into()),
                ..AuthnSettings::default()
            },
        );
        let expired = hs256(&json!({"sub": "alice", "exp": unix_now() - 3600}));
        let headers = [
            basic("alice:wrong"),
            basic("mallory:correct horse"),
            basic("no colon"),
            b"Digest username=\"alice\"".to_vec(),
            b"\xff".to_vec(),
            bearer(&expired),
            bearer("a.b.c"),
        ];
        let mut details = Vec::new();
        for header in &headers {
            let rejected = user(&fixture, header).unwrap_err();
            assert_eq!(rejected.to_string(), "invalid credentials");
            // Neither passwords nor tokens are repeated.
            let detail = rejected.detail();
            assert!(
                !detail.contains("correct horse") && !detail.contains(&expired),
                "{detail}"
            );
            details.push(rejected.detail().to_owned());
        }
        details.sort();
        details.dedup();
        assert_eq!(details.len(), headers.len(), "{details:#?}");
    }

    #[test]
    fn bearer_tokens_need_a_jwt_key_and_basic_needs_users() {
        let jwt_only = authenticator(
            None,
            AuthnSettings {
                jwt_key: Some(SECRET.into()),
                jwt_roles_claim: "groups".into(),
                ..AuthnSettings::default()
            },
        );
        let token = hs256(&json!({"sub": "bob", "exp": unix_now() + 60, "groups": "g"}));
        let principal = jwt_only.authenticator.authenticate(Some(&bearer(&token)));
        assert_eq!(
            principal,
            Ok(Some(Principal {
                name: "bob".into(),
                roles: vec!["g".into()]
            }))
        );
        assert!(user(&jwt_only, &basic("bob:pw")).is_err());

        let basic_only = authenticator(Some(&[ALICE]), AuthnSettings::default());
        assert!(user(&basic_only, &bearer(&token)).is_err());
    }

    #[test]
    fn has_users_tells_whether_any_login_is_configured() {
        assert!(!authenticator(None, AuthnSettings::default())
            .authenticator
            .has_users());
        assert!(authenticator(Some(&[]), AuthnSettings::default())
            .authenticator
            .has_users());
        assert!(authenticator(None, builtin("a", "b"))
            .authenticator
            .has_users());
        let jwt = AuthnSettings {
            jwt_key: Some(SECRET.into()),
            ..AuthnSettings::default()
        };
        assert!(authenticator(None, jwt).authenticator.has_users());
    }

    #[test]
    fn an_unusable_builtin_user_fails_at_start() {
        for (name, password) in [("", "pw"), ("a:b", "pw"), ("admin", "")] {
            let result = Authenticator::new(builtin(name, password));
            assert!(
                matches!(result, Err(AuthnError::BuiltinUser(_))),
                "{name:?} {password:?}"
            );
        }
        let missing = Authenticator::new(AuthnSettings {
            htpasswd: Some("/nonexistent/htpasswd".into()),
            ..AuthnSettings::default()
        });
        assert!(missing
            .unwrap_err()
            .to_string()
            .starts_with("cannot read htpasswd file /nonexistent/htpasswd: "));
    }

    #[test]
    fn secrets_stay_out_of_debug_output() {
        let settings = AuthnSettings {
            jwt_key: Some(SECRET.into()),
            ..builtin("fedoraAdmin", "hunter2")
        };
        let shown = format!("{settings:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains(SECRET),
            "{shown}"
        );
        let fixture = authenticator(None, settings);
        let shown = format!("{:?}", fixture.authenticator);
        assert!(
            !shown.contains("hunter2") && !shown.contains(SECRET),
            "{shown}"
        );
        assert!(shown.contains("HS256"), "{shown}");
    }

    #[test]
    fn can_be_shared_between_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Authenticator>();
        let fixture = authenticator(Some(&[ALICE]), AuthnSettings::default());
        let authenticator = Arc::new(fixture.authenticator);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let authenticator = Arc::clone(&authenticator);
                std::thread::spawn(move || {
                    (0..50)
                        .map(|_| authenticator.authenticate(Some(&basic("alice:correct horse"))))
                        .all(|result| result.is_ok_and(|p| p.is_some()))
                })
            })
            .collect();
        for thread in threads {
            assert!(thread.join().expect("thread"));
        }
    }

    /// Time per check of cached credentials. Run in release:
    /// `cargo test --release -p arca-auth -- --ignored --nocapture cached_check_cost`.
    #[test]
    #[ignore = "a measurement, not a test"]
    fn cached_check_cost() {
        let claims = json!({"sub": "alice", "exp": unix_now() + 3600, "roles": ["admin"]});
        let keys = [
            (
                Algorithm::ES256,
                test_keys::EC_PUBLIC,
                test_keys::EC_PRIVATE,
            ),
            (
                Algorithm::RS256,
                test_keys::RSA_PUBLIC,
                test_keys::RSA_PRIVATE,
            ),
        ];
        for (algorithm, public, private) in keys {
            let dir = tempfile::tempdir().expect("temp dir");
            let key_path = dir.path().join("key.pem");
            std::fs::write(&key_path, public).expect("write key");
            let fixture = authenticator(
                Some(&[ALICE]),
                AuthnSettings {
                    jwt_public_key: Some(key_path),
                    ..AuthnSettings::default()
                },
            );
            let private = match algorithm {
                Algorithm::ES256 => EncodingKey::from_ec_pem(private.as_bytes()),
                _ => EncodingKey::from_rsa_pem(private.as_bytes()),
            }
            .expect("key");
            let token =
                jsonwebtoken::encode(&Header::new(algorithm), &claims, &private).expect("sign");
            let measure = |what: &str, header: &[u8]| {
                let started = Instant::now();
                let principal = fixture.authenticator.authenticate(Some(header));
                let first = started.elapsed();
                assert!(principal.is_ok_and(|p| p.is_some()));
                let rounds = 200_000u32;
                let started = Instant::now();
                for _ in 0..rounds {
                    let principal = fixture.authenticator.authenticate(Some(header));
                    std::hint::black_box(principal).ok();
                }
                let each = started.elapsed() / rounds;
                eprintln!("{what}: first check {first:?}, cached check {each:?}");
            };
            if algorithm == Algorithm::ES256 {
                measure("Basic, bcrypt cost 5", &basic("alice:correct horse"));
            }
            let what = format!("Bearer {algorithm:?} ({} bytes)", token.len());
            measure(&what, &bearer(&token));
        }
    }
}
