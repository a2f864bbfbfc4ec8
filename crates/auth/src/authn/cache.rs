//! Caches of verified credentials, keyed by a keyed digest so that no password or token
//! is kept in memory.

use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Most entries a cache holds; when full, the entries least likely to be used again are
/// evicted one at a time (S3-FIFO), so the credentials in use stay cached.
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

/// A map from credential keys to what they proved, holding at most [`CAPACITY`] entries.
///
/// A full cache evicts entries one by one, coldest first, so that a burst of new
/// credentials never drops the ones in use (which would send every cached user back to a
/// bcrypt round at once).
pub(crate) struct BoundedCache<V> {
    entries: quick_cache::unsync::Cache<Key, V>,
}

impl<V> BoundedCache<V> {
    /// An empty cache.
    pub(crate) fn new() -> Self {
        Self {
            entries: quick_cache::unsync::Cache::new(CAPACITY),
        }
    }

    /// The value cached under `key`.
    pub(crate) fn get(&self, key: &Key) -> Option<&V> {
        self.entries.get(key)
    }

    /// Caches `value` under `key`, evicting a cold entry when the cache is full.
    pub(crate) fn insert(&mut self, key: Key, value: V) {
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
    fn a_full_cache_evicts_entries_one_by_one_and_keeps_those_in_use() {
        let keyer = Keyer::random();
        let key = |i: usize| keyer.key(&i.to_le_bytes());
        let mut cache = BoundedCache::new();
        cache.insert(keyer.key(b"in use"), usize::MAX);
        for i in 0..CAPACITY * 3 {
            cache.insert(key(i), i);
            // A user who keeps signing in.
            if i % 100 == 0 {
                assert_eq!(cache.get(&keyer.key(b"in use")), Some(&usize::MAX));
            }
            assert!(cache.len() <= CAPACITY);
        }
        // Never cleared all at once: the cache stays nearly full of recent entries.
        assert!(cache.len() > CAPACITY * 9 / 10, "{} entries", cache.len());
        assert_eq!(cache.get(&key(CAPACITY * 3 - 1)), Some(&(CAPACITY * 3 - 1)));
        assert_eq!(cache.get(&keyer.key(b"in use")), Some(&usize::MAX));
    }
}
