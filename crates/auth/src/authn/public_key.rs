//! Reading a JWT verification key from a PEM file and telling from it which algorithm it
//! verifies: RS256 for an RSA key, ES256 for an EC key on P-256.

use std::path::Path;

use jsonwebtoken::{Algorithm, DecodingKey};
use spki::der::Decode;
use spki::{ObjectIdentifier, SubjectPublicKeyInfoRef};

use super::AuthnError;

/// The object identifiers that name the key types.
const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");

/// Reads the PEM public key at `path`: `PUBLIC KEY` (SubjectPublicKeyInfo, RSA or EC P-256)
/// or `RSA PUBLIC KEY` (PKCS #1).
pub(crate) fn load(path: &Path) -> Result<(Algorithm, DecodingKey), AuthnError> {
    let invalid = |reason: String| AuthnError::JwtKey {
        path: path.to_owned(),
        reason,
    };
    let pem = std::fs::read(path).map_err(|source| AuthnError::JwtKeyRead {
        path: path.to_owned(),
        source,
    })?;
    let block = pem::parse(&pem).map_err(|_| invalid("not a PEM file".into()))?;
    let algorithm = match block.tag() {
        "RSA PUBLIC KEY" => Algorithm::RS256,
        "PUBLIC KEY" => match spki_algorithm(block.contents()) {
            Some((RSA_ENCRYPTION, _)) => Algorithm::RS256,
            Some((EC_PUBLIC_KEY, Some(P256))) => Algorithm::ES256,
            Some((EC_PUBLIC_KEY, _)) => {
                return Err(invalid(
                    "an EC key on a curve other than P-256 (ES256 needs P-256)".into(),
                ))
            }
            Some(_) => {
                return Err(invalid(
                    "a key of a type other than RSA or EC P-256 (supported: RS256, ES256)".into(),
                ))
            }
            None => return Err(invalid("malformed SubjectPublicKeyInfo".into())),
        },
        label if label.contains("PRIVATE KEY") => {
            return Err(invalid(format!(
                "a private key ({label}); give the public key, e.g. `openssl pkey -pubout`"
            )))
        }
        label => {
            return Err(invalid(format!(
                "a PEM {label}, not PUBLIC KEY or RSA PUBLIC KEY"
            )))
        }
    };
    let key = match algorithm {
        Algorithm::ES256 => DecodingKey::from_ec_pem(&pem),
        _ => DecodingKey::from_rsa_pem(&pem),
    }
    .map_err(|error| invalid(error.to_string()))?;
    // Verifying a made-up signature fails on a malformed key, and only returns false on a
    // good one (the RSA back end parses its key only when verifying, so this check catches
    // EC keys).
    jsonwebtoken::crypto::verify("AAAA", b"probe", &key, algorithm)
        .map_err(|error| invalid(error.to_string()))?;
    Ok((algorithm, key))
}

/// The algorithm identifier of a DER SubjectPublicKeyInfo: the algorithm's object
/// identifier and, if the parameters are one (the curve of an EC key), that one.
fn spki_algorithm(der: &[u8]) -> Option<(ObjectIdentifier, Option<ObjectIdentifier>)> {
    let spki = SubjectPublicKeyInfoRef::from_der(der).ok()?;
    let curve = spki.algorithm.parameters_oid().ok();
    Some((spki.algorithm.oid, curve))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authn::test_keys;

    fn load_pem(pem: &[u8]) -> Result<Algorithm, AuthnError> {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("key.pem");
        std::fs::write(&path, pem).expect("write key");
        load(&path).map(|(algorithm, _)| algorithm)
    }

    fn reason(pem: &[u8]) -> String {
        match load_pem(pem) {
            Err(AuthnError::JwtKey { reason, .. }) => reason,
            other => panic!("expected an invalid key, got {other:?}"),
        }
    }

    #[test]
    fn detects_the_algorithm_from_the_key() {
        assert_eq!(
            load_pem(test_keys::RSA_PUBLIC.as_bytes()).ok(),
            Some(Algorithm::RS256)
        );
        assert_eq!(
            load_pem(test_keys::RSA_PUBLIC_PKCS1.as_bytes()).ok(),
            Some(Algorithm::RS256)
        );
        assert_eq!(
            load_pem(test_keys::EC_PUBLIC.as_bytes()).ok(),
            Some(Algorithm::ES256)
        );
    }

    #[test]
    fn refuses_other_keys_with_a_reason() {
        assert!(reason(test_keys::P384_PUBLIC.as_bytes()).contains("P-256"));
        assert!(reason(test_keys::ED25519_PUBLIC.as_bytes()).contains("RSA or EC P-256"));
        assert!(reason(test_keys::RSA_PRIVATE.as_bytes()).contains("private key"));
        assert!(reason(test_keys::EC_PRIVATE.as_bytes()).contains("private key"));
        assert!(reason(b"secret").contains("not a PEM"));
        assert!(
            reason(b"-----BEGIN PUBLIC KEY-----\n!!\n-----END PUBLIC KEY-----\n")
                .contains("not a PEM")
        );
        assert!(
            reason(b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
                .contains("malformed")
        );
        assert!(
            reason(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
                .contains("CERTIFICATE")
        );
    }

    #[test]
    fn refuses_an_ec_point_off_the_curve() {
        let mut der = pem::parse(test_keys::EC_PUBLIC)
            .expect("PEM")
            .into_contents();
        let last = der.len() - 1;
        der[last] ^= 1;
        let pem = pem::encode(&pem::Pem::new("PUBLIC KEY", der));
        assert!(!reason(pem.as_bytes()).is_empty());
    }

    #[test]
    fn a_missing_file_is_a_read_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert!(matches!(
            load(&dir.path().join("missing.pem")),
            Err(AuthnError::JwtKeyRead { .. })
        ));
    }
}
