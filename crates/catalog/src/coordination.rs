//! What the nodes sharing a catalog must agree on besides its rows: which write may change an
//! OCFL object now (per-object write locks), and which node runs a task that must run once
//! per repository (event delivery). Nothing of it may live only in one process's memory when
//! several nodes share the catalog, so it is part of the catalog: [`SqliteCatalog`]
//! (one node) keeps it in process ([`LocalCoordination`]), [`PostgresCatalog`] in
//! PostgreSQL's session-level advisory locks, which end with the session that holds them,
//! so a node that dies lets go of its locks at once (a lost connection, or a killed
//! process's closed socket, ends the session).
//!
//! [`SqliteCatalog`]: crate::SqliteCatalog
//! [`PostgresCatalog`]: crate::PostgresCatalog

use std::collections::hash_map::DefaultHasher;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

use crate::Result;

/// Locks held for one write; dropping it lets go of them.
pub struct ObjectLockGuard {
    held: Box<dyn std::any::Any + Send + Sync>,
}

impl ObjectLockGuard {
    /// A guard that releases what `held` holds when dropped.
    pub fn new(held: Box<dyn std::any::Any + Send + Sync>) -> Self {
        Self { held }
    }

    /// What the guard holds, if it is a `T` (a backend letting go of its own locks in its
    /// own way); the guard back otherwise.
    pub(crate) fn into_held<T: std::any::Any>(self) -> std::result::Result<Box<T>, Self> {
        self.held.downcast::<T>().map_err(|held| Self { held })
    }
}

/// The role of a task that runs once per repository, held until dropped.
pub struct Leadership {
    _held: Box<dyn Send + Sync>,
}

impl Leadership {
    /// Leadership that ends when `held` is dropped.
    pub fn new(held: Box<dyn Send + Sync>) -> Self {
        Self { _held: held }
    }
}

/// Agreement between the nodes that share a catalog.
#[async_trait]
pub trait Coordination: Send + Sync {
    /// Waits for the write locks of the OCFL objects `exclusive` and a shared lock on
    /// `shared` (a key in both is exclusive), on every node sharing the catalog. Locks are
    /// taken in one global order, so two writers never wait on each other.
    ///
    /// # Errors
    /// The catalog could not be reached, or the locks were not granted within the
    /// catalog's lock timeout.
    async fn lock_objects(&self, exclusive: &[&str], shared: &[&str]) -> Result<ObjectLockGuard>;

    /// The write locks of the OCFL objects `exclusive` if every one of them is free now,
    /// on every node sharing the catalog; `None` (holding nothing) if one is held.
    ///
    /// # Errors
    /// The catalog could not be reached.
    async fn try_lock_objects(&self, exclusive: &[&str]) -> Result<Option<ObjectLockGuard>>;

    /// Takes the role `role` (e.g. delivering events to one destination) if no node holds
    /// it; `None` if one does. The role is held until the returned value is dropped or the
    /// node dies.
    async fn try_lead(&self, role: &str) -> Result<Option<Leadership>>;

    /// Whether other nodes may share this catalog (and change it behind this node's back).
    fn is_shared(&self) -> bool;
}

/// The global order of locks: a 64-bit hash of the key that is the same on every node and
/// in every build (FNV-1a), so that locks are always taken in the same order everywhere.
pub fn lock_key(key: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash as i64
}

/// The keys of a lock request in the order they are taken, each with whether it is
/// exclusive; a key asked for both ways is taken exclusively, once.
pub fn lock_order(exclusive: &[&str], shared: &[&str]) -> Vec<(i64, bool)> {
    let mut order: Vec<(i64, bool)> = exclusive.iter().map(|k| (lock_key(k), true)).collect();
    order.extend(shared.iter().map(|k| (lock_key(k), false)));
    // Exclusive first among equal keys, so that dedup keeps it.
    order.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    order.dedup_by_key(|(key, _)| *key);
    order
}

/// Stripes of the in-process lock table (a bound on memory; two objects on one stripe
/// only wait on each other).
const STRIPES: usize = 4096;

/// Coordination within one process: striped per-object read-write locks (a write holds its
/// object's stripe exclusively; creating a child holds the parent's shared, so a concurrent
/// delete of the parent waits but sibling creations do not), and roles held in a set.
pub struct LocalCoordination {
    stripes: Vec<Arc<RwLock<()>>>,
    roles: Arc<Mutex<HashSet<String>>>,
}

/// The guards of one local lock request.
struct LocalLocks {
    _exclusive: Vec<OwnedRwLockWriteGuard<()>>,
    _shared: Vec<OwnedRwLockReadGuard<()>>,
}

/// A role held in the local set, given back when dropped.
struct LocalRole {
    role: String,
    roles: Arc<Mutex<HashSet<String>>>,
}

impl Drop for LocalRole {
    fn drop(&mut self) {
        self.roles.lock().remove(&self.role);
    }
}

impl LocalCoordination {
    /// An empty lock table.
    pub fn new() -> Self {
        Self {
            stripes: (0..STRIPES).map(|_| Arc::new(RwLock::new(()))).collect(),
            roles: Arc::default(),
        }
    }

    fn stripe(key: &str) -> usize {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        (h.finish() as usize) % STRIPES
    }
}

impl Default for LocalCoordination {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Coordination for LocalCoordination {
    async fn lock_objects(&self, exclusive: &[&str], shared: &[&str]) -> Result<ObjectLockGuard> {
        let mut order: Vec<(usize, bool)> = exclusive
            .iter()
            .map(|k| (Self::stripe(k), true))
            .chain(shared.iter().map(|k| (Self::stripe(k), false)))
            .collect();
        order.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        order.dedup_by_key(|(stripe, _)| *stripe);
        let mut held = LocalLocks {
            _exclusive: Vec::new(),
            _shared: Vec::new(),
        };
        for (stripe, is_exclusive) in order {
            let lock = self.stripes[stripe].clone();
            if is_exclusive {
                held._exclusive.push(lock.write_owned().await);
            } else {
                held._shared.push(lock.read_owned().await);
            }
        }
        Ok(ObjectLockGuard::new(Box::new(held)))
    }

    async fn try_lock_objects(&self, exclusive: &[&str]) -> Result<Option<ObjectLockGuard>> {
        let mut stripes: Vec<usize> = exclusive.iter().map(|k| Self::stripe(k)).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let mut held = LocalLocks {
            _exclusive: Vec::new(),
            _shared: Vec::new(),
        };
        for stripe in stripes {
            match self.stripes[stripe].clone().try_write_owned() {
                Ok(guard) => held._exclusive.push(guard),
                Err(_) => return Ok(None),
            }
        }
        Ok(Some(ObjectLockGuard::new(Box::new(held))))
    }

    async fn try_lead(&self, role: &str) -> Result<Option<Leadership>> {
        if !self.roles.lock().insert(role.to_string()) {
            return Ok(None);
        }
        Ok(Some(Leadership::new(Box::new(LocalRole {
            role: role.to_string(),
            roles: self.roles.clone(),
        }))))
    }

    fn is_shared(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_keys_are_the_same_in_every_build() {
        // FNV-1a 64 of "a" and of the empty string, from the algorithm's published vectors.
        assert_eq!(lock_key("") as u64, 0xcbf2_9ce4_8422_2325);
        assert_eq!(lock_key("a") as u64, 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn a_key_asked_for_both_ways_is_taken_exclusively_once() {
        let order = lock_order(&["a", "b"], &["b", "c"]);
        assert_eq!(order.len(), 3);
        assert!(order.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(order.contains(&(lock_key("b"), true)));
        assert!(order.contains(&(lock_key("c"), false)));
    }

    #[tokio::test]
    async fn an_exclusive_lock_waits_for_a_shared_one() {
        let locks = LocalCoordination::new();
        let shared = locks.lock_objects(&[], &["x"]).await.unwrap();
        let also_shared = locks.lock_objects(&[], &["x"]).await.unwrap();
        let waiting = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            locks.lock_objects(&["x"], &[]),
        )
        .await;
        assert!(
            waiting.is_err(),
            "the exclusive lock was granted beside shared ones"
        );
        drop((shared, also_shared));
        locks.lock_objects(&["x"], &[]).await.unwrap();
    }

    #[tokio::test]
    async fn a_role_has_one_holder_until_it_lets_go() {
        let c = LocalCoordination::new();
        let held = c.try_lead("events").await.unwrap();
        assert!(held.is_some());
        assert!(c.try_lead("events").await.unwrap().is_none());
        assert!(c.try_lead("other").await.unwrap().is_some());
        drop(held);
        assert!(c.try_lead("events").await.unwrap().is_some());
    }
}
