//! The rules every key and prefix follows, checked alike by every store.

use super::{StoreError, StoreResult};

/// Checks a key: a non-empty `/`-separated relative path without empty, `.` or `..`
/// segments and without control characters.
pub(crate) fn check_key(key: &str) -> StoreResult<()> {
    if key.is_empty() {
        return Err(invalid(key, "it is empty"));
    }
    check_segments(key)
}

/// Checks a listing prefix: `""` (the root) or a key.
pub(crate) fn check_prefix(prefix: &str) -> StoreResult<()> {
    if prefix.is_empty() {
        return Ok(());
    }
    check_segments(prefix)
}

fn check_segments(key: &str) -> StoreResult<()> {
    if holds_control_character(key.as_bytes()) {
        return Err(invalid(key, "it holds a control character"));
    }
    for segment in key.as_bytes().split(|&b| b == b'/') {
        match segment {
            b"" => {
                return Err(invalid(
                    key,
                    "it has an empty segment (a leading, trailing or double /)",
                ))
            }
            b"." | b".." => return Err(invalid(key, "it has a . or .. segment")),
            _ => {}
        }
    }
    Ok(())
}

/// Whether UTF-8 `bytes` hold a control character (Unicode's `Cc`, as [`char::is_control`]:
/// U+0000–U+001F, U+007F and U+0080–U+009F, the last encoded as `C2 80`–`C2 9F`), looked
/// for bytewise: keys are checked on every read.
fn holds_control_character(bytes: &[u8]) -> bool {
    // A first pass without early exit (vectorized) flags the bytes that may begin one; a C2
    // (Latin-1 symbols, rare in keys) then needs a look at the byte after it.
    let suspect = bytes.iter().fold(false, |found, &b| {
        found | (b < 0x20) | (b == 0x7f) | (b == 0xc2)
    });
    suspect
        && bytes.iter().enumerate().any(|(i, &b)| {
            b < 0x20 || b == 0x7f || (b == 0xc2 && matches!(bytes.get(i + 1), Some(0x80..=0x9f)))
        })
}

fn invalid(key: &str, reason: &'static str) -> StoreError {
    StoreError::InvalidKey {
        key: key.to_string(),
        reason,
    }
}

/// `prefix/name`, or `name` at the root.
pub(crate) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_the_ocfl_layout_pass() {
        for key in [
            "0=ocfl_1.1",
            "extensions/0004-hashed-n-tuple-storage-layout/config.json",
            "a1b/2c3/d4e/a1b2c3/v1/content/.fcrepo/fcr-root.json",
            "x/v1/content/a%2Fb c%25d/ünïcode.txt",
        ] {
            assert!(check_key(key).is_ok(), "{key}");
        }
    }

    #[test]
    fn malformed_keys_are_refused() {
        for key in [
            "", "/a", "a/", "a//b", "a/./b", "../a", "a/..", "a\nb", "a\0b",
        ] {
            assert!(
                matches!(check_key(key), Err(StoreError::InvalidKey { .. })),
                "{key:?}"
            );
        }
        assert!(check_prefix("").is_ok());
        assert!(check_prefix("a/").is_err());
    }

    #[test]
    fn control_characters_are_found_bytewise_as_char_is_control_finds_them() {
        for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
            let key = format!("a{c}b");
            assert_eq!(
                holds_control_character(key.as_bytes()),
                c.is_control(),
                "U+{:04X}",
                u32::from(c)
            );
        }
    }
}
