//! Bearer JWTs: HS256 with a shared secret, RS256 or ES256 with a public key; verified
//! tokens are cached until they expire.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use parking_lot::RwLock;
use serde_json::{Map, Value};

use super::cache::{BoundedCache, Key};
use super::{public_key, AuthnError, Principal, Rejected};

/// Clock skew tolerated on `exp` and `nbf`, in seconds.
const LEEWAY_SECONDS: u64 = 30;

/// Shared secrets shorter than this draw a warning: HS256 wants at least 256 bits.
const SHORT_SECRET_BYTES: usize = 32;

/// One key and the checks a token signed with it must pass.
struct VerificationKey {
    algorithm: Algorithm,
    key: DecodingKey,
    validation: Validation,
}

/// A token that was verified, until when it holds.
struct CachedToken {
    principal: Principal,
    /// `exp`, in seconds since the Unix epoch.
    expires: u64,
}

/// Verifies bearer JWTs with the configured keys.
pub(crate) struct JwtVerifier {
    /// At most one key per algorithm: HS256, and RS256 or ES256.
    keys: Vec<VerificationKey>,
    roles_claim: String,
    cache: RwLock<BoundedCache<CachedToken>>,
}

impl JwtVerifier {
    /// A verifier for the configured keys, or `None` when there are none.
    pub(crate) fn new(
        secret: Option<&str>,
        public_key: Option<&Path>,
        roles_claim: String,
    ) -> Result<Option<Self>, AuthnError> {
        let mut keys = Vec::new();
        if let Some(secret) = secret {
            if secret.is_empty() {
                return Err(AuthnError::JwtSecret(
                    "empty; anyone could sign tokens".into(),
                ));
            }
            if secret.len() < SHORT_SECRET_BYTES {
                tracing::warn!(
                    "the JWT shared secret has {} bytes; HS256 wants at least {SHORT_SECRET_BYTES}",
                    secret.len()
                );
            }
            keys.push(VerificationKey::new(
                Algorithm::HS256,
                DecodingKey::from_secret(secret.as_bytes()),
            ));
        }
        if let Some(path) = public_key {
            let (algorithm, key) = public_key::load(path)?;
            tracing::info!(path = %path.display(), ?algorithm, "JWT public key loaded");
            keys.push(VerificationKey::new(algorithm, key));
        }
        if keys.is_empty() {
            return Ok(None);
        }
        Ok(Some(Self {
            keys,
            roles_claim,
            cache: RwLock::new(BoundedCache::new()),
        }))
    }

    /// The algorithms tokens may be signed with.
    pub(crate) fn algorithms(&self) -> impl Iterator<Item = Algorithm> + '_ {
        self.keys.iter().map(|key| key.algorithm)
    }

    /// Verifies `token`; `cache_key` is its cache key. A token verified before and not yet
    /// expired costs a hash-map look-up.
    /// Whether a token (by its cache key) was verified already and has not expired.
    pub(crate) fn cached(&self, cache_key: &Key) -> Option<Principal> {
        self.cache
            .read()
            .get(cache_key)
            .filter(|c| unix_now() <= c.expires.saturating_add(LEEWAY_SECONDS))
            .map(|c| c.principal.clone())
    }

    pub(crate) fn verify(&self, token: &str, cache_key: &Key) -> Result<Principal, Rejected> {
        let now = unix_now();
        let mut stale = false;
        if let Some(cached) = self.cache.read().get(cache_key) {
            if now <= cached.expires.saturating_add(LEEWAY_SECONDS) {
                return Ok(cached.principal.clone());
            }
            stale = true;
        }
        match self.verify_uncached(token) {
            Ok((principal, expires)) => {
                let entry = CachedToken {
                    principal: principal.clone(),
                    expires,
                };
                self.cache.write().insert(*cache_key, entry);
                Ok(principal)
            }
            Err(rejected) => {
                if stale {
                    self.cache.write().remove(cache_key);
                }
                Err(rejected)
            }
        }
    }

    /// Checks the signature and claims of `token`; returns its user and its `exp`.
    fn verify_uncached(&self, token: &str) -> Result<(Principal, u64), Rejected> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|error| Rejected::new(format!("malformed JWT: {error}")))?;
        let key = self
            .keys
            .iter()
            .find(|key| key.algorithm == header.alg)
            .ok_or_else(|| {
                Rejected::new(format!(
                    "JWT signed with {:?}, but only {:?} is configured",
                    header.alg,
                    self.algorithms().collect::<Vec<_>>()
                ))
            })?;
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &key.validation)
            .map_err(|error| Rejected::new(format!("JWT refused: {error}")))?
            .claims;
        let name = match claims.get("sub") {
            Some(Value::String(sub)) if !sub.is_empty() => sub.clone(),
            _ => return Err(Rejected::new("JWT without a non-empty string sub")),
        };
        let expires = claims
            .get("exp")
            .and_then(Value::as_u64)
            .ok_or_else(|| Rejected::new("JWT without a numeric exp"))?;
        let roles = roles(claims.get(&self.roles_claim)).ok_or_else(|| {
            Rejected::new(format!(
                "JWT claim {:?} is neither a string nor an array of strings",
                self.roles_claim
            ))
        })?;
        Ok((Principal { name, roles }, expires))
    }
}

impl VerificationKey {
    fn new(algorithm: Algorithm, key: DecodingKey) -> Self {
        let mut validation = Validation::new(algorithm);
        validation.set_required_spec_claims(&["exp", "sub"]);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_exp = true;
        validation.validate_nbf = true;
        // No audience is configured: a token's `aud` is not checked.
        validation.validate_aud = false;
        Self {
            algorithm,
            key,
            validation,
        }
    }
}

/// The roles in a roles claim: none when it is missing or null, one for a string, each of
/// an array of strings (empty strings are dropped); `None` for anything else.
fn roles(claim: Option<&Value>) -> Option<Vec<String>> {
    let roles: Vec<String> = match claim {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(role)) => vec![role.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect::<Option<_>>()?,
        Some(_) => return None,
    };
    Some(roles.into_iter().filter(|role| !role.is_empty()).collect())
}

/// Seconds since the Unix epoch.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    use super::*;
    use crate::authn::cache::Keyer;
    use crate::authn::test_keys;

    const SECRET: &str = "a shared secret of at least 32 bytes";

    struct Fixture {
        _dir: tempfile::TempDir,
        verifier: JwtVerifier,
        keyer: Keyer,
    }

    /// A verifier with `secret` and/or the public key `pem`.
    fn verifier_with(secret: Option<&str>, pem: Option<&str>, roles_claim: &str) -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("key.pem");
        if let Some(pem) = pem {
            std::fs::write(&path, pem).expect("write key");
        }
        let verifier = JwtVerifier::new(secret, pem.map(|_| path.as_path()), roles_claim.into())
            .expect("valid keys")
            .expect("a key is configured");
        Fixture {
            _dir: dir,
            verifier,
            keyer: Keyer::random(),
        }
    }

    impl Fixture {
        fn verify(&self, token: &str) -> Result<Principal, Rejected> {
            self.verifier
                .verify(token, &self.keyer.key(token.as_bytes()))
        }

        fn refused(&self, token: &str) -> String {
            match self.verify(token) {
                Err(rejected) => rejected.detail().to_owned(),
                Ok(principal) => panic!("token accepted for {principal:?}"),
            }
        }
    }

    fn sign(algorithm: Algorithm, key: &EncodingKey, claims: &Value) -> String {
        jsonwebtoken::encode(&Header::new(algorithm), claims, key).expect("sign")
    }

    fn hs256(secret: &str, claims: &Value) -> String {
        sign(
            Algorithm::HS256,
            &EncodingKey::from_secret(secret.as_bytes()),
            claims,
        )
    }

    fn rs256(claims: &Value) -> String {
        let key = EncodingKey::from_rsa_pem(test_keys::RSA_PRIVATE.as_bytes()).expect("RSA key");
        sign(Algorithm::RS256, &key, claims)
    }

    fn es256(claims: &Value) -> String {
        let key = EncodingKey::from_ec_pem(test_keys::EC_PRIVATE.as_bytes()).expect("EC key");
        sign(Algorithm::ES256, &key, claims)
    }

    /// Claims of user `alice`, expiring in an hour, with the roles `admin` and `staff`.
    fn claims() -> Value {
        json!({"sub": "alice", "exp": unix_now() + 3600, "roles": ["admin", "staff"]})
    }

    fn alice() -> Principal {
        Principal {
            name: "alice".into(),
            roles: vec!["admin".into(), "staff".into()],
        }
    }

    #[test]
    fn hs256_token_is_accepted_and_cached() {
        let fixture = verifier_with(Some(SECRET), None, "roles");
        let token = hs256(SECRET, &claims());
        assert_eq!(fixture.verify(&token), Ok(alice()));
        assert_eq!(fixture.verifier.cache.read().len(), 1);
        assert_eq!(fixture.verify(&token), Ok(alice()));
        assert_eq!(fixture.verifier.cache.read().len(), 1);
    }

    #[test]
    fn expiry_is_required_and_checked_with_a_small_leeway() {
        let fixture = verifier_with(Some(SECRET), None, "roles");
        let now = unix_now();
        let expired = hs256(SECRET, &json!({"sub": "alice", "exp": now - 120}));
        assert!(fixture.refused(&expired).contains("Expired"));
        let within_leeway = hs256(SECRET, &json!({"sub": "alice", "exp": now - 10}));
        assert!(fixture.verify(&within_leeway).is_ok());
        let no_exp = hs256(SECRET, &json!({"sub": "alice"}));
        assert!(fixture.refused(&no_exp).contains("exp"));
        let text_exp = hs256(SECRET, &json!({"sub": "alice", "exp": "tomorrow"}));
        assert!(fixture.refused(&text_exp).contains("exp"));
    }

    #[test]
    fn not_before_is_honoured() {
        let fixture = verifier_with(Some(SECRET), None, "roles");
        let now = unix_now();
        let future = hs256(
            SECRET,
            &json!({"sub": "a", "exp": now + 3600, "nbf": now + 600}),
        );
        assert!(fixture.refused(&future).contains("Immature"));
        let past = hs256(
            SECRET,
            &json!({"sub": "a", "exp": now + 3600, "nbf": now - 600}),
        );
        assert!(fixture.verify(&past).is_ok());
    }

    #[test]
    fn subject_must_be_a_non_empty_string() {
        let fixture = verifier_with(Some(SECRET), None, "roles");
        let exp = unix_now() + 3600;
        assert!(!fixture
            .refused(&hs256(SECRET, &json!({"exp": exp})))
            .is_empty());
        assert!(fixture
            .refused(&hs256(SECRET, &json!({"sub": "", "exp": exp})))
            .contains("sub"));
        assert!(!fixture
            .refused(&hs256(SECRET, &json!({"sub": 7, "exp": exp})))
            .is_empty());
    }

    #[test]
    fn bad_signatures_are_refused() {
        let fixture = verifier_with(Some(SECRET), None, "roles");
        let other_secret = hs256("another secret of at least 32 bytes", &claims());
        assert!(fixture.refused(&other_secret).contains("InvalidSignature"));

        // alice's signature on claims that make her someone else.
        let token = hs256(SECRET, &claims());
        let (signed, signature) = token.rsplit_once('.').expect("three parts");
        let (header, _) = signed.split_once('.').expect("three parts");
        let forged_claims = json!({"sub": "root", "exp": unix_now() + 3600});
        let payload = URL_SAFE_NO_PAD.encode(forged_claims.to_string());
        assert!(!fixture
            .refused(&format!("{header}.{payload}.{signature}"))
            .is_empty());
        assert!(fixture
            .refused(&format!("{signed}."))
            .contains("InvalidSignature"));
        assert!(fixture.refused("not-a-jwt").contains("malformed"));
    }

    #[test]
    fn alg_none_is_refused() {
        let fixture = verifier_with(Some(SECRET), Some(test_keys::RSA_PUBLIC), "roles");
        let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
        let payload = URL_SAFE_NO_PAD.encode(claims().to_string());
        assert!(fixture
            .refused(&format!("{header}.{payload}."))
            .contains("malformed"));
        let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"None","typ":"JWT"}"#);
        assert!(fixture
            .refused(&format!("{header}.{payload}."))
            .contains("malformed"));
    }

    #[test]
    fn hs256_token_signed_with_the_public_key_is_refused() {
        // The key-confusion attack: an HS256 token whose HMAC key is the RS256 public key.
        let forged = hs256(test_keys::RSA_PUBLIC, &claims());
        let rs256_only = verifier_with(None, Some(test_keys::RSA_PUBLIC), "roles");
        assert!(rs256_only.refused(&forged).contains("only [RS256]"));
        // With a shared secret configured too, the token is checked against that secret.
        let both = verifier_with(Some(SECRET), Some(test_keys::RSA_PUBLIC), "roles");
        assert!(both.refused(&forged).contains("InvalidSignature"));
        assert_eq!(both.verify(&rs256(&claims())), Ok(alice()));
        assert_eq!(both.verify(&hs256(SECRET, &claims())), Ok(alice()));
    }

    #[test]
    fn rs256_with_either_pem_form() {
        for pem in [test_keys::RSA_PUBLIC, test_keys::RSA_PUBLIC_PKCS1] {
            let fixture = verifier_with(None, Some(pem), "roles");
            assert_eq!(fixture.verify(&rs256(&claims())), Ok(alice()));
            assert!(fixture.refused(&es256(&claims())).contains("only [RS256]"));
            // Another RSA key's signature (the right algorithm) does not verify.
            let token = rs256(&claims());
            let (signed, _) = token.rsplit_once('.').expect("three parts");
            let wrong = URL_SAFE_NO_PAD.encode([7u8; 256]);
            assert!(fixture
                .refused(&format!("{signed}.{wrong}"))
                .contains("InvalidSignature"));
        }
    }

    #[test]
    fn es256_with_a_p256_key() {
        let fixture = verifier_with(None, Some(test_keys::EC_PUBLIC), "roles");
        assert_eq!(fixture.verify(&es256(&claims())), Ok(alice()));
        assert!(fixture.refused(&rs256(&claims())).contains("only [ES256]"));
        assert!(fixture
            .refused(&hs256(test_keys::EC_PUBLIC, &claims()))
            .contains("only [ES256]"));
    }

    #[test]
    fn roles_from_an_array_a_string_or_nothing() {
        let exp = unix_now() + 3600;
        let fixture = verifier_with(Some(SECRET), None, "groups");
        let roles = |claims: Value| fixture.verify(&hs256(SECRET, &claims)).map(|p| p.roles);
        assert_eq!(
            roles(json!({"sub": "a", "exp": exp, "groups": ["x", "y"]})),
            Ok(vec!["x".to_owned(), "y".to_owned()])
        );
        assert_eq!(
            roles(json!({"sub": "a", "exp": exp, "groups": "x"})),
            Ok(vec!["x".to_owned()])
        );
        assert_eq!(roles(json!({"sub": "a", "exp": exp})), Ok(vec![]));
        // The default claim name is not read when another is configured.
        assert_eq!(
            roles(json!({"sub": "a", "exp": exp, "roles": ["x"]})),
            Ok(vec![])
        );
        assert!(roles(json!({"sub": "a", "exp": exp, "groups": 3})).is_err());
        assert!(roles(json!({"sub": "a", "exp": exp, "groups": ["x", 3]})).is_err());
    }

    #[test]
    fn a_cached_token_is_only_trusted_until_it_expires() {
        let fixture = verifier_with(Some(SECRET), None, "roles");
        let now = unix_now();
        // A token that has expired, planted in the cache as if it had not.
        let token = hs256(SECRET, &json!({"sub": "alice", "exp": now - 3600}));
        let key = fixture.keyer.key(token.as_bytes());
        let plant = |expires: u64| {
            let entry = CachedToken {
                principal: alice(),
                expires,
            };
            fixture.verifier.cache.write().insert(key, entry);
        };
        plant(now + 60);
        assert_eq!(fixture.verify(&token), Ok(alice()));
        plant(now - LEEWAY_SECONDS - 1);
        assert!(fixture.refused(&token).contains("Expired"));
        assert_eq!(fixture.verifier.cache.read().len(), 0);
    }

    #[test]
    fn an_empty_secret_is_refused_at_start() {
        assert!(matches!(
            JwtVerifier::new(Some(""), None, "roles".into()),
            Err(AuthnError::JwtSecret(_))
        ));
        assert!(matches!(
            JwtVerifier::new(None, None, "roles".into()),
            Ok(None)
        ));
    }

    /// Runs `openssl` with `args`; `None` when it is not installed.
    fn openssl(args: &[&str]) -> Option<()> {
        match std::process::Command::new("openssl").args(args).output() {
            Ok(output) if output.status.success() => Some(()),
            Ok(output) => panic!(
                "openssl {args:?} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => panic!("cannot run openssl: {error}"),
        }
    }

    #[test]
    fn keys_generated_by_openssl_now() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = |name: &str| dir.path().join(name).to_str().expect("UTF-8").to_owned();
        let (private, public) = (path("private.pem"), path("public.pem"));
        let cases = [
            (
                Algorithm::RS256,
                ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
            ),
            (
                Algorithm::ES256,
                ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
            ),
        ];
        for (algorithm, options) in cases {
            let mut args = vec!["genpkey", "-out", &private];
            args.extend(options);
            if openssl(&args).is_none() {
                eprintln!("NOT RUN: openssl is not installed");
                return;
            }
            openssl(&["pkey", "-in", &private, "-pubout", "-out", &public]);
            let verifier = JwtVerifier::new(None, Some(Path::new(&public)), "roles".into())
                .expect("valid key")
                .expect("a key");
            assert_eq!(verifier.algorithms().collect::<Vec<_>>(), [algorithm]);
            let pem = std::fs::read(&private).expect("read private key");
            let key = match algorithm {
                Algorithm::RS256 => EncodingKey::from_rsa_pem(&pem),
                _ => EncodingKey::from_ec_pem(&pem),
            }
            .expect("private key");
            let token = sign(algorithm, &key, &claims());
            let keyer = Keyer::random();
            assert_eq!(
                verifier.verify(&token, &keyer.key(token.as_bytes())),
                Ok(alice())
            );
            let forged = hs256(&std::fs::read_to_string(&public).expect("read"), &claims());
            assert!(verifier
                .verify(&forged, &keyer.key(forged.as_bytes()))
                .is_err());
        }
    }
}
