//! Reading a JWT verification key from a PEM file and telling from it which algorithm it
//! verifies: RS256 for an RSA key, ES256 for an EC key on P-256.

use std::path::Path;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey};

use super::AuthnError;

/// DER contents of the object identifiers that name the key types.
const RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];

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
    let text = std::str::from_utf8(&pem).map_err(|_| invalid("not a PEM file".into()))?;
    let (label, der) = first_pem_block(text).ok_or_else(|| invalid("not a PEM file".into()))?;
    let algorithm = match label {
        "RSA PUBLIC KEY" => Algorithm::RS256,
        "PUBLIC KEY" => match spki_algorithm(&der) {
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

/// The label and decoded contents of the first PEM block in `text`.
fn first_pem_block(text: &str) -> Option<(&str, Vec<u8>)> {
    let mut lines = text.lines().map(str::trim);
    let label = lines
        .find_map(|line| line.strip_prefix("-----BEGIN "))?
        .strip_suffix("-----")?;
    let mut body = String::new();
    for line in lines.by_ref() {
        if line.starts_with("-----END ") {
            return Some((label, STANDARD.decode(body).ok()?));
        }
        body.push_str(line);
    }
    None
}

/// The algorithm identifier of a DER SubjectPublicKeyInfo: the algorithm's object
/// identifier and, if the parameters are one (the curve of an EC key), that one.
fn spki_algorithm(der: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    const SEQUENCE: u8 = 0x30;
    const OBJECT_IDENTIFIER: u8 = 0x06;
    let (spki, _) = der_element(der, SEQUENCE)?;
    let (algorithm_identifier, _) = der_element(spki, SEQUENCE)?;
    let (algorithm, parameters) = der_element(algorithm_identifier, OBJECT_IDENTIFIER)?;
    let curve = der_element(parameters, OBJECT_IDENTIFIER).map(|(curve, _)| curve);
    Some((algorithm, curve))
}

/// Splits the DER element at the start of `input`, which must have tag `tag`, into its
/// contents and what follows it.
fn der_element(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&found, rest) = input.split_first()?;
    if found != tag {
        return None;
    }
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let (length, rest) = rest.split_at(count);
        let length = length
            .iter()
            .fold(0usize, |sum, &byte| (sum << 8) | usize::from(byte));
        (length, rest)
    };
    (rest.len() >= length).then(|| rest.split_at(length))
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
        let (_, mut der) = first_pem_block(test_keys::EC_PUBLIC).expect("PEM");
        let last = der.len() - 1;
        der[last] ^= 1;
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            STANDARD.encode(&der)
        );
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
