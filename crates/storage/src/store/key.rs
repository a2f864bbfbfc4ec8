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
    if key.chars().any(|c| c.is_control()) {
        return Err(invalid(key, "it holds a control character"));
    }
    for segment in key.split('/') {
        match segment {
            "" => {
                return Err(invalid(
                    key,
                    "it has an empty segment (a leading, trailing or double /)",
                ))
            }
            "." | ".." => return Err(invalid(key, "it has a . or .. segment")),
            _ => {}
        }
    }
    Ok(())
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
}
