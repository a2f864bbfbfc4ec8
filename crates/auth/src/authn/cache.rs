//! Caches of verified credentials, keyed by a keyed digest so that no password or token
//! is kept in memory.

use std::collections::HashMap;

use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Most entries a cache holds; when full it is cleared and refills with the credentials in
/// use.
pub(crate) const CAPACITY: usize = 10_000;

/// The key of a cache entry: HMAC-SHA256 of a credential under a per-process random key.
pub(crate) type Key = [u8; 32];

/// Turns credentials into cache keys (and the builtin password into a comparable digest).
///
/// The HMAC key is drawn at random when the authenticator starts, so a key says nothing
/// about the credential outside this process, and nobody can make two credentials share one.
pub(crate) struct Keyer {
    /// The HMAC state after absorbing the key, cloned for each credential.
    keyed: Hmac<Sha256>,
}

impl Keyer {
    /// A keyer with a fresh random key.
    pub(crate) fn random() -> Self {
        // One block of SHA-256: the longest key HMAC uses as it is.
        let secret: [u8; 64] = rand::random();
        Self {
            keyed: <Hmac<Sha256> as KeyInit>::new(&secret.into()),
        }
    }

    /// The cache key of `credential`.
    pub(crate) fn key(&self, credential: &[u8]) -> Key {
        let mut mac = self.keyed.clone();
        mac.update(credential);
        mac.finalize().into_bytes().into()
    }
}

/// A map from credential keys to what they proved, cleared when it reaches [`CAPACITY`].
pub(crate) struct BoundedCache<V> {
    entries: HashMap<Key, V>,
}

impl<V> BoundedCache<V> {
    /// An empty cache.
    pub(crate) fn new() -> Self {
        Self {
            entries: HashMap::new(),
        }
    }

    /// The value cached under `key`.
    pub(crate) fn get(&self, key: &Key) -> Option<&V> {
        self.entries.get(key)
    }

    /// Caches `value` under `key`; when the cache is full, first drops the entries for
    /// which `keep` is false and, if that frees nothing, all of them.
    pub(crate) fn insert(&mut self, key: Key, value: V, keep: impl FnMut(&V) -> bool) {
        if self.entries.len() >= CAPACITY {
            let mut keep = keep;
            self.entries.retain(|_, value| keep(value));
            if self.entries.len() >= CAPACITY {
                self.entries.clear();
            }
        }
        self.entries.insert(key, value);
    }

    /// Drops the entry under `key`.
    pub(crate) fn remove(&mut self, key: &Key) {
        self.entries.remove(key);
    }

    /// Drops every entry.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }

    /// How many entries the cache holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_depend_on_the_credential_and_the_process_key() {
        let keyer = Keyer::random();
        assert_eq!(keyer.key(b"alice:pw"), keyer.key(b"alice:pw"));
        assert_ne!(keyer.key(b"alice:pw"), keyer.key(b"alice:pX"));
        assert_ne!(Keyer::random().key(b"alice:pw"), keyer.key(b"alice:pw"));
    }

    #[test]
    fn a_full_cache_drops_stale_entries_first_then_everything() {
        let keyer = Keyer::random();
        let mut cache = BoundedCache::new();
        for i in 0..CAPACITY {
            cache.insert(keyer.key(&i.to_le_bytes()), i, |_| true);
        }
        assert_eq!(cache.len(), CAPACITY);

        // Half the entries are stale: only they go.
        cache.insert(keyer.key(b"new"), 0, |value| value % 2 == 0);
        assert_eq!(cache.len(), CAPACITY / 2 + 1);
        assert_eq!(cache.get(&keyer.key(&2usize.to_le_bytes())), Some(&2));
        assert_eq!(cache.get(&keyer.key(&3usize.to_le_bytes())), None);

        // Nothing is stale: everything goes but the newcomer.
        let mut cache = BoundedCache::new();
        for i in 0..CAPACITY {
            cache.insert(keyer.key(&i.to_le_bytes()), i, |_| true);
        }
        cache.insert(keyer.key(b"last"), 7, |_| true);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get(&keyer.key(b"last")), Some(&7));
    }
}
