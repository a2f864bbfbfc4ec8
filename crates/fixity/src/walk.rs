//! The objects of a root, walked lazily in layout order: one directory listing at a time,
//! holding only the directories still to visit at each level of the path (a root of 10⁶
//! objects walks in the memory of a few thousand names).

use std::cmp::Ordering;

use arca_ocfl::ObjectStorage;

use crate::object::is_object_root;
use crate::Result;

/// Compares two keys the way the walk visits them: segment by segment.
pub(crate) fn walk_order(a: &str, b: &str) -> Ordering {
    a.split('/').cmp(b.split('/'))
}

/// Whether the directory `dir` holds `key` below it.
fn is_ancestor(dir: &str, key: &str) -> bool {
    key.len() > dir.len() && key.starts_with(dir) && key.as_bytes()[dir.len()] == b'/'
}

/// The walk of the object roots of one store.
pub(crate) struct Walker<'a> {
    store: &'a dyn ObjectStorage,
    /// Per level, the directories left to visit (sorted).
    stack: Vec<std::vec::IntoIter<String>>,
    /// Objects at or before this are skipped (a resumed run).
    after: Option<String>,
    started: bool,
}

impl<'a> Walker<'a> {
    /// The walk of `store`'s objects after `after` (all, with `None`).
    pub fn new(store: &'a dyn ObjectStorage, after: Option<String>) -> Self {
        Self {
            store,
            stack: Vec::new(),
            after,
            started: false,
        }
    }

    /// The next object root (a key prefix), `None` at the end.
    pub fn next_object(&mut self) -> Result<Option<String>> {
        if !self.started {
            self.started = true;
            let listing = self.store.list_dir("")?;
            let dirs: Vec<String> = listing
                .dirs
                .into_iter()
                .filter(|d| d != "extensions")
                .collect();
            self.push(dirs);
        }
        loop {
            let Some(level) = self.stack.last_mut() else {
                return Ok(None);
            };
            let Some(dir) = level.next() else {
                self.stack.pop();
                continue;
            };
            if let Some(after) = &self.after {
                if walk_order(&dir, after) != Ordering::Greater && !is_ancestor(&dir, after) {
                    continue;
                }
            }
            let listing = self.store.list_dir(&dir)?;
            if is_object_root(&listing.files) {
                return Ok(Some(dir));
            }
            self.push(listing.dirs);
        }
    }

    fn push(&mut self, mut dirs: Vec<String>) {
        dirs.sort_by(|a, b| walk_order(a, b));
        self.stack.push(dirs.into_iter());
    }
}

/// The walk as an iterator of object roots; it ends after the first error.
impl Iterator for Walker<'_> {
    type Item = Result<String>;

    fn next(&mut self) -> Option<Result<String>> {
        match self.next_object() {
            Ok(next) => next.map(Ok),
            Err(e) => {
                self.stack.clear();
                self.started = true;
                Some(Err(e))
            }
        }
    }
}
