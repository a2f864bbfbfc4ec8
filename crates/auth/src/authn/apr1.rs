//! Apache's MD5 password hash, `$apr1$` (the default of `htpasswd`, and `htpasswd -m`):
//! Poul-Henning Kamp's md5crypt with Apache's magic string, as in APR's `apr_md5.c`.

use md5::{Digest, Md5};

/// The prefix of an apr1 hash.
pub(crate) const MAGIC: &str = "$apr1$";

/// The alphabet of crypt's base 64.
const ITOA64: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The 22-character hash (the part after `$apr1$<salt>$`) of `password` with `salt`, of
/// which only the first 8 bytes count.
pub(crate) fn hash(password: &[u8], salt: &[u8]) -> String {
    let salt = &salt[..salt.len().min(8)];

    let alternate = Md5::new()
        .chain_update(password)
        .chain_update(salt)
        .chain_update(password)
        .finalize();
    let mut context = Md5::new()
        .chain_update(password)
        .chain_update(MAGIC)
        .chain_update(salt);
    for chunk_start in (0..password.len()).step_by(16) {
        context.update(&alternate[..(password.len() - chunk_start).min(16)]);
    }
    let mut length = password.len();
    while length != 0 {
        // A historical quirk: a zero byte for odd bits, the password's first byte for even.
        if length & 1 == 1 {
            context.update([0u8]);
        } else {
            context.update(&password[..1]);
        }
        length >>= 1;
    }
    let mut digest = context.finalize();

    for round in 0..1000 {
        let mut context = Md5::new();
        if round & 1 == 1 {
            context.update(password);
        } else {
            context.update(digest);
        }
        if round % 3 != 0 {
            context.update(salt);
        }
        if round % 7 != 0 {
            context.update(password);
        }
        if round & 1 == 1 {
            context.update(digest);
        } else {
            context.update(password);
        }
        digest = context.finalize();
    }

    let mut out = String::with_capacity(22);
    for (a, b, c) in [(0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)] {
        let group =
            (u32::from(digest[a]) << 16) | (u32::from(digest[b]) << 8) | u32::from(digest[c]);
        push_base64(&mut out, group, 4);
    }
    push_base64(&mut out, u32::from(digest[11]), 2);
    out
}

/// Appends the `count` low sextets of `value`, lowest first, in crypt's alphabet.
fn push_base64(out: &mut String, mut value: u32, count: usize) {
    for _ in 0..count {
        out.push(char::from(ITOA64[(value & 0x3f) as usize]));
        value >>= 6;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(password, salt, hash)` made with `htpasswd -nbm` (Apache 2.4).
    const VECTORS: &[(&str, &str, &str)] = &[
        ("correct horse", "uDuKhmRP", "TgjZfq/mbxwKRSw0W0uAF0"),
        ("", "efBQIzZx", "ZVCVqp2bb8aiwYFAV2qQO."),
        ("pässwörd:with:colons", "1m/uoAe5", "dSAS8jbub8HRok/G4EZFK0"),
        (
            "a-password-that-is-much-longer-than-sixteen-bytes-to-exercise-the-loop",
            "eckqaTVM",
            "vNchK0yTrMT5JtUFnrOIk.",
        ),
    ];

    #[test]
    fn matches_hashes_made_by_htpasswd() {
        for (password, salt, expected) in VECTORS {
            assert_eq!(
                hash(password.as_bytes(), salt.as_bytes()),
                *expected,
                "{password:?}"
            );
        }
    }

    #[test]
    fn a_different_password_or_salt_gives_a_different_hash() {
        let (password, salt, expected) = VECTORS[0];
        assert_ne!(hash(b"correct horsf", salt.as_bytes()), expected);
        assert_ne!(hash(password.as_bytes(), b"uDuKhmRQ"), expected);
    }
}
