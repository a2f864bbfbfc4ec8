//! The embedded catalog's cache of recent reads ([`Catalog::get_for_read`]'s answers), and
//! the writer lock that keeps it true.
//!
//! Every write of the catalog takes its one writer connection, so the lock around that
//! connection knows when anything may have changed: its generation is odd while a writer
//! holds it and moves on when the writer lets go. An answer is cached with the (even)
//! generation seen before it was read from SQLite, and served only while the generation is
//! still that one. So an answer is never older than the last write that finished before the
//! lookup, and nothing is served from the cache while a write (its commit, the wake-ups and
//! replies it sends before letting go) is under way: whoever a write's acknowledgement
//! reaches reads at least that write. One node only: another process writing the same file
//! (no server does; offline commands run with the server stopped) would not be seen.
//!
//! [`Catalog::get_for_read`]: crate::Catalog::get_for_read

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use rusqlite::Connection;

use crate::ReadRecord;

/// Most answers held; the cache starts over when it is full (a hot set smaller than this is
/// served from memory, a larger one falls back to SQLite as without the cache).
const MAX_ENTRIES: usize = 8192;
/// Most bytes of headers and RDF held, counted roughly; an answer larger than an eighth of
/// it is not cached.
const MAX_BYTES: usize = 32 << 20;

/// The catalog's writer connection behind a lock that counts the writes.
pub(crate) struct WriterLock {
    conn: Mutex<Connection>,
    /// Even while no writer holds the lock; incremented when one takes it and when it lets go.
    generation: AtomicU64,
}

/// The writer connection while held; letting go moves the generation on.
pub(crate) struct HeldWriter<'a> {
    guard: MutexGuard<'a, Connection>,
    generation: &'a AtomicU64,
}

impl WriterLock {
    /// `conn` as the writer connection.
    pub(crate) fn new(conn: Connection) -> Self {
        Self {
            conn: Mutex::new(conn),
            generation: AtomicU64::new(0),
        }
    }

    /// Waits for the writer connection.
    pub(crate) fn lock(&self) -> HeldWriter<'_> {
        self.held(self.conn.lock())
    }

    /// The writer connection if no one holds it.
    pub(crate) fn try_lock(&self) -> Option<HeldWriter<'_>> {
        self.conn.try_lock().map(|g| self.held(g))
    }

    fn held<'a>(&'a self, guard: MutexGuard<'a, Connection>) -> HeldWriter<'a> {
        self.generation.fetch_add(1, Ordering::SeqCst);
        HeldWriter {
            guard,
            generation: &self.generation,
        }
    }

    /// The generation now: even if no write is under way.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }
}

impl std::ops::Deref for HeldWriter<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.guard
    }
}

impl std::ops::DerefMut for HeldWriter<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.guard
    }
}

impl Drop for HeldWriter<'_> {
    fn drop(&mut self) {
        // Before the lock is free again: a reader that finds the old generation after
        // this has read SQLite before this write finished, and its answer is not kept.
        self.generation.fetch_add(1, Ordering::SeqCst);
    }
}

/// Answers of [`Catalog::get_for_read`](crate::Catalog::get_for_read) read at one generation
/// of the writer lock, shared with the reads they answer (not copied).
#[derive(Default)]
pub(crate) struct ReadCache {
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    /// The generation every entry was read at.
    generation: u64,
    by_id: HashMap<String, Option<Arc<ReadRecord>>>,
    bytes: usize,
}

impl ReadCache {
    /// The answer for `id` read at `generation`, if that is the generation now and even.
    pub(crate) fn get(&self, id: &str, generation: u64) -> Option<Option<Arc<ReadRecord>>> {
        if generation % 2 == 1 {
            return None;
        }
        let inner = self.inner.lock();
        if inner.generation != generation {
            return None;
        }
        inner.by_id.get(id).cloned()
    }

    /// Keeps `answer` for `id`, read from SQLite after the writer lock was seen at
    /// `generation` (entries of an earlier generation go; an odd one keeps nothing).
    pub(crate) fn put(&self, id: &str, generation: u64, answer: &Option<Arc<ReadRecord>>) {
        if generation % 2 == 1 {
            return;
        }
        let size = id.len() + answer.as_deref().map_or(0, approximate_size);
        if size > MAX_BYTES / 8 {
            return;
        }
        let mut inner = self.inner.lock();
        if inner.generation != generation {
            if generation < inner.generation {
                return;
            }
            inner.by_id.clear();
            inner.bytes = 0;
            inner.generation = generation;
        }
        if inner.by_id.len() >= MAX_ENTRIES || inner.bytes + size > MAX_BYTES {
            inner.by_id.clear();
            inner.bytes = 0;
        }
        if inner.by_id.insert(id.to_string(), answer.clone()).is_none() {
            inner.bytes += size;
        }
    }
}

/// The bytes an answer holds on the heap, roughly: its RDF, its description's, a fixed
/// allowance for the strings of its record and headers, and one for what a reader keeps
/// in its [`derived`](ReadRecord::derived) slot (the HTTP layer: a read's ~20 response
/// headers, about 3 KiB).
fn approximate_size(read: &ReadRecord) -> usize {
    const RECORD: usize = 1024;
    const DERIVED: usize = 3072;
    RECORD
        + DERIVED
        + read.record.rdf.as_ref().map_or(0, Vec::len)
        + read.description_rdf.as_ref().map_or(0, Vec::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer() -> WriterLock {
        WriterLock::new(Connection::open_in_memory().unwrap())
    }

    #[test]
    fn an_answer_is_served_until_a_writer_takes_the_lock() {
        let lock = writer();
        let cache = ReadCache::default();
        let g = lock.generation();
        cache.put("a", g, &None);
        assert_eq!(cache.get("a", lock.generation()), Some(None));
        let held = lock.lock();
        assert_eq!(cache.get("a", lock.generation()), None, "during the write");
        drop(held);
        assert_eq!(cache.get("a", lock.generation()), None, "after the write");
    }

    #[test]
    fn an_answer_read_while_a_write_ran_is_never_served() {
        let lock = writer();
        let cache = ReadCache::default();
        let held = lock.try_lock().unwrap();
        let during = lock.generation();
        cache.put("a", during, &None);
        assert_eq!(cache.get("a", during), None);
        drop(held);
        let after = lock.generation();
        assert_eq!(cache.get("a", after), None);
        // Read before the write began, kept after it ended: stale, refused.
        let before = after;
        let held = lock.lock();
        drop(held);
        cache.put("b", before, &None);
        assert_eq!(cache.get("b", lock.generation()), None);
    }

    #[test]
    fn a_full_cache_starts_over() {
        let lock = writer();
        let cache = ReadCache::default();
        let g = lock.generation();
        for i in 0..=MAX_ENTRIES {
            cache.put(&format!("r{i}"), g, &None);
        }
        assert_eq!(cache.get(&format!("r{MAX_ENTRIES}"), g), Some(None));
        assert_eq!(cache.get("r0", g), None);
    }
}
