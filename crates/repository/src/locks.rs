use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

const STRIPES: usize = 4096;

/// Striped per-object locks: a write to an OCFL object holds its stripe exclusively;
/// creating a child holds the parent's stripe shared, so that a concurrent delete of the
/// parent waits but sibling creations do not serialize. Stripes are always taken in index
/// order, so two requests can never wait on each other.
pub struct ObjectLocks {
    stripes: Vec<std::sync::Arc<RwLock<()>>>,
}

/// Guards held for the duration of one write.
pub struct LockSet {
    _write: Vec<OwnedRwLockWriteGuard<()>>,
    _read: Vec<OwnedRwLockReadGuard<()>>,
}

impl ObjectLocks {
    /// Creates the lock table.
    pub fn new() -> Self {
        Self {
            stripes: (0..STRIPES)
                .map(|_| std::sync::Arc::new(RwLock::new(())))
                .collect(),
        }
    }

    fn stripe(key: &str) -> usize {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        (h.finish() as usize) % STRIPES
    }

    /// Locks `write` keys exclusively and `read` keys shared (a key in both is exclusive).
    pub async fn lock(&self, write: &[&str], read: &[&str]) -> LockSet {
        let mut w: Vec<usize> = write.iter().map(|k| Self::stripe(k)).collect();
        w.sort_unstable();
        w.dedup();
        let mut r: Vec<usize> = read
            .iter()
            .map(|k| Self::stripe(k))
            .filter(|s| w.binary_search(s).is_err())
            .collect();
        r.sort_unstable();
        r.dedup();
        let mut order: Vec<(usize, bool)> = w.iter().map(|&s| (s, true)).collect();
        order.extend(r.iter().map(|&s| (s, false)));
        order.sort_unstable();
        let mut set = LockSet {
            _write: Vec::new(),
            _read: Vec::new(),
        };
        for (s, exclusive) in order {
            let lock = self.stripes[s].clone();
            if exclusive {
                set._write.push(lock.write_owned().await);
            } else {
                set._read.push(lock.read_owned().await);
            }
        }
        set
    }
}

impl Default for ObjectLocks {
    fn default() -> Self {
        Self::new()
    }
}
