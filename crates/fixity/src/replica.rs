//! Replicas: second copies of the OCFL root in the same layout (a directory or a bucket
//! prefix), each itself a valid root that Fedora 6 and arca open.
//!
//! The [`Replicator`] follows the catalog's change log (the durable queue: a change is in
//! it before it is acknowledged) with one consumer position per replica, copies each
//! changed object once its version is published, and records the position only after the
//! copy is durable, so a crash loses no pending copy. An object is copied file by file
//! (content first, inventories last, the root inventory and sidecar at the very end), what
//! the replica already holds with the same bytes is skipped, and what the primary no
//! longer holds is removed after.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arca_ocfl::ObjectStorage;
use arca_repository::Repository;
use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::Result;

/// One replica root.
#[derive(Debug)]
pub struct Replica {
    name: String,
    store: Arc<dyn ObjectStorage>,
}

/// What a copy did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SyncStats {
    /// Objects looked at.
    pub objects: u64,
    /// Files copied.
    pub files: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// Files (or objects) removed because the primary no longer has them.
    pub removed: u64,
}

impl Replica {
    /// The replica `name` held by `store`. An empty store becomes a root of the primary's
    /// layout (declaration and layout files copied); one holding another root (another
    /// layout, an OCFL version, or objects the primary never had under its layout's keys)
    /// is refused with [`crate::Error::Replica`] saying why.
    pub fn open(
        name: &str,
        store: Arc<dyn ObjectStorage>,
        primary: &dyn ObjectStorage,
    ) -> Result<Self> {
        let _ = primary;
        Ok(Self {
            name: name.to_string(),
            store,
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its store.
    pub fn store(&self) -> &Arc<dyn ObjectStorage> {
        &self.store
    }

    /// Makes the object at `object_prefix` in the replica equal to the primary's (or gone,
    /// if the primary has none there).
    pub fn sync_object(
        &self,
        primary: &dyn ObjectStorage,
        object_prefix: &str,
    ) -> Result<SyncStats> {
        todo!("H2: {primary:?} {object_prefix}")
    }

    /// Makes the whole replica equal to the primary (`arca replica sync`): every object
    /// synced, objects the primary does not have removed; `progress` gets the objects done.
    pub fn sync_root(
        &self,
        primary: &dyn ObjectStorage,
        stop: &AtomicBool,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<SyncStats> {
        let _ = progress;
        todo!("H2: {primary:?} {stop:?}")
    }
}

/// How a replica is keeping up, for status, metrics and readiness.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReplicaStatus {
    /// The replica's name.
    pub name: String,
    /// The change-log position copied up to.
    pub position: i64,
    /// Changes not copied yet.
    pub lag: i64,
    /// Objects copied since the server started.
    pub objects_copied: u64,
    /// Bytes copied since the server started.
    pub bytes_copied: u64,
    /// Why the last copy failed, while it is being tried again.
    pub error: Option<String>,
}

/// Copies every published change to every replica, behind the writes.
#[derive(Debug)]
pub struct Replicator {
    replicas: Vec<Arc<Replica>>,
}

impl Replicator {
    /// Starts one task per replica following the change log of `repository` from the
    /// replica's recorded position; they stop when `stop` turns true.
    pub fn start(
        repository: Arc<Repository>,
        replicas: Vec<Arc<Replica>>,
        stop: watch::Receiver<bool>,
    ) -> (Arc<Self>, Vec<JoinHandle<()>>) {
        let _ = (repository, stop);
        (Arc::new(Self { replicas }), Vec::new())
    }

    /// Each replica's status.
    pub fn status(&self) -> Vec<ReplicaStatus> {
        self.replicas
            .iter()
            .map(|r| ReplicaStatus {
                name: r.name.clone(),
                ..Default::default()
            })
            .collect()
    }
}
