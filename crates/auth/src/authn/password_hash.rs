//! The password hashes `htpasswd` writes, and how each is verified.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha1::{Digest, Sha1};
use subtle::ConstantTimeEq;

use super::apr1;

/// A password hash as `htpasswd` writes it.
#[derive(Clone)]
pub(crate) enum PasswordHash {
    /// bcrypt, `$2y$`, `$2a$` or `$2b$` (`htpasswd -B`); kept whole for the `bcrypt` crate.
    Bcrypt(String),
    /// Unsalted SHA-1, `{SHA}` and the base64 digest (`htpasswd -s`).
    Sha1([u8; 20]),
    /// Apache MD5, `$apr1$<salt>$<hash>` (`htpasswd -m`, and `htpasswd`'s default).
    Apr1 {
        /// Up to 8 characters.
        salt: String,
        /// 22 characters of crypt's base 64.
        hash: String,
    },
}

impl PasswordHash {
    /// Parses the hash field of an entry; an error names a scheme that is refused.
    pub(crate) fn parse(field: &str) -> Result<Self, &'static str> {
        if let Some(rest) = field.strip_prefix(apr1::MAGIC) {
            let (salt, hash) = rest.split_once('$').ok_or("malformed $apr1$ hash")?;
            if salt.is_empty() || salt.len() > 8 || hash.len() != 22 {
                return Err("malformed $apr1$ hash");
            }
            return Ok(Self::Apr1 {
                salt: salt.to_owned(),
                hash: hash.to_owned(),
            });
        }
        if let Some(encoded) = field.strip_prefix("{SHA}") {
            let digest = STANDARD
                .decode(encoded)
                .ok()
                .and_then(|bytes| <[u8; 20]>::try_from(bytes).ok())
                .ok_or("malformed {SHA} hash")?;
            return Ok(Self::Sha1(digest));
        }
        if ["$2y$", "$2a$", "$2b$"]
            .iter()
            .any(|p| field.starts_with(p))
        {
            let cost = field.get(4..6).and_then(|cost| cost.parse::<u32>().ok());
            if field.len() != 60 || field.get(6..7) != Some("$") || cost.is_none() {
                return Err("malformed bcrypt hash");
            }
            return Ok(Self::Bcrypt(field.to_owned()));
        }
        if field.starts_with("$5$") || field.starts_with("$6$") {
            return Err("SHA-256/SHA-512 crypt ($5$, $6$) is not supported");
        }
        if field.starts_with('$') {
            return Err("unknown $-prefixed hash scheme");
        }
        let crypt_alphabet = |c: char| c.is_ascii_alphanumeric() || c == '.' || c == '/';
        if field.len() == 13 && field.chars().all(crypt_alphabet) {
            return Err("DES crypt (htpasswd -d) is refused as insecure");
        }
        Err("a plaintext password (htpasswd -p) is refused")
    }

    /// Whether `password` matches; digests are compared in constant time.
    pub(crate) fn verify(&self, password: &[u8]) -> bool {
        match self {
            // The bcrypt crate compares in constant time; a malformed hash never matches.
            Self::Bcrypt(hash) => bcrypt::verify(password, hash).unwrap_or(false),
            Self::Sha1(digest) => Sha1::digest(password).as_slice().ct_eq(digest).into(),
            Self::Apr1 { salt, hash } => apr1::hash(password, salt.as_bytes())
                .as_bytes()
                .ct_eq(hash.as_bytes())
                .into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Entries made with `htpasswd -nb` of Apache 2.4 (`-B -C 5`, `-B -C 4`, `-s`, `-m`, `-d`, `-p`,
    // `-2`, `-5`).
    const BCRYPT: &str = "$2y$05$9ftlczR0ID9tcsGDPZc28.Q68mt5Iv1Xg0raiEQc60UzVt.U84Jdy";
    const BCRYPT_COST_4: &str = "$2y$04$g80Ydrwr/kVgD34GtHqQ1u8vd/77u6UII8mARYqvB/HdPHCpFxHsi";
    const SHA1: &str = "{SHA}L55TUjtiq8FBorTWAZ0jy6g129A=";
    const APR1: &str = "$apr1$uDuKhmRP$TgjZfq/mbxwKRSw0W0uAF0";
    const APR1_EMPTY: &str = "$apr1$efBQIzZx$ZVCVqp2bb8aiwYFAV2qQO.";
    const DES_CRYPT: &str = "y6MvPRk/XIxAE";
    const SHA256_CRYPT: &str = "$5$vGMZNMIu/IOf.lnW$o.U4pU.WuZFGDDwOhJ8KFl1MNF2dKxxOnqWp3rJblb1";
    const SHA512_CRYPT: &str = "$6$ysN.Xmlt.QcDd.Vy$JF8p.8EhAEcp6X0LiI4mfWI5pGEaux3ghmPtVckG4mtnJCihst7eT7cJsyTH3.ms9Vgk9RNLgORCIsA/W.tuZ.";

    fn parsed(field: &str) -> PasswordHash {
        PasswordHash::parse(field).unwrap_or_else(|why| panic!("{field}: {why}"))
    }

    #[test]
    fn verifies_each_supported_kind() {
        for field in [BCRYPT, SHA1, APR1] {
            let hash = parsed(field);
            assert!(hash.verify(b"correct horse"), "{field}");
            assert!(!hash.verify(b"correct horsf"), "{field}");
            assert!(!hash.verify(b""), "{field}");
        }
        assert!(parsed(BCRYPT_COST_4).verify(b"x"));
        assert!(parsed(APR1_EMPTY).verify(b""));
        assert!(!parsed(APR1_EMPTY).verify(b" "));
    }

    #[test]
    fn bcrypt_prefixes_2a_2b_and_2y_are_accepted() {
        // The three prefixes hash passwords shorter than 255 bytes alike.
        for prefix in ["$2a$", "$2b$"] {
            let field = format!("{prefix}{}", &BCRYPT[4..]);
            assert!(parsed(&field).verify(b"correct horse"), "{field}");
            assert!(!parsed(&field).verify(b"correct horsf"), "{field}");
        }
    }

    #[test]
    fn refused_kinds_are_named() {
        let why = |field: &str| match PasswordHash::parse(field) {
            Err(why) => why,
            Ok(_) => panic!("{field} should be refused"),
        };
        assert!(why(DES_CRYPT).contains("DES crypt"));
        assert!(why("plain").contains("plaintext"));
        assert!(why("").contains("plaintext"));
        assert!(why(SHA256_CRYPT).contains("$5$"));
        assert!(why(SHA512_CRYPT).contains("$6$"));
        assert!(why("$1$abcdefgh$0123456789012345678901").contains("unknown"));
        assert!(why("{SHA}bm90IDIwIGJ5dGVz").contains("malformed"));
        assert!(why("{SHA}!!").contains("malformed"));
        assert!(why("$apr1$uDuKhmRP").contains("malformed"));
        assert!(why("$apr1$uDuKhmRP$short").contains("malformed"));
        assert!(why(&BCRYPT[..59]).contains("malformed"));
        assert!(
            why("$2y$xx$9ftlczR0ID9tcsGDPZc28.Q68mt5Iv1Xg0raiEQc60UzVt.U84Jdy")
                .contains("malformed")
        );
    }
}
