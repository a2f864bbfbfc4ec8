//! The tantivy index on disk: documents in, committed with the change-log position they
//! reflect, and searched.
//!
//! The position is the commit's payload, so the index and the position it has reached are
//! written in one atomic commit: after a crash the index resumes exactly where its last
//! commit stopped, and replaying a change twice only replaces a document by itself.

use std::path::Path;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tantivy::collector::{Count, TopDocs};
use tantivy::query::Query;
use tantivy::schema::Field;
use tantivy::{
    DocAddress, Index, IndexReader, IndexWriter, Order, ReloadPolicy, Searcher, TantivyDocument,
    Term,
};

use crate::hit::{StoredHit, StoredJson, SystemStored};
use crate::mapping::Mapping;
use crate::merge::{self, MergeAllRequest};
use crate::query::{FieldKind, QueryParser};
use crate::schema::{analyzer, IndexSchema, SYSTEM_STORED_END};
use crate::{Error, Result};

/// Memory of the writer while it follows the change log (one thread; tantivy's least is
/// 15 MB per thread).
const LIVE_BUDGET: usize = 32 << 20;
/// Memory of the writer during a full rebuild (shared by its threads).
const BULK_BUDGET: usize = 96 << 20;
/// Indexing threads of a full rebuild, at most.
const BULK_THREADS: usize = 4;
/// The version of what documents hold beyond the mapping (`search::document`); part of the
/// fingerprint, so an index built by another version is rebuilt. 2: a container's `FULLTEXT`
/// no longer repeats its binaries' text.
const DOCUMENT_VERSION: u32 = 2;

/// A merge [`SearchIndex::merge_all`] started.
pub struct Merging {
    /// How many segments are being merged into one.
    pub segments: usize,
    merging: tantivy::FutureResult<Option<tantivy::index::SegmentMeta>>,
}

impl Merging {
    /// Waits for the merge to end (blocking); [`SearchIndex::reload`] then shows it.
    pub fn wait(self) -> Result<()> {
        self.merging.wait()?;
        Ok(())
    }
}

/// What a commit records besides the documents.
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    /// The change-log position every change up to which is in the index.
    seq: i64,
    /// The mapping's fingerprint.
    mapping: String,
    /// The catalog generation the position refers to (see `Indexer`): a catalog rebuilt
    /// from storage numbers its change log anew.
    #[serde(default)]
    epoch: String,
}

/// A sort order of hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sort {
    /// A fast field: `id`, `mime_type`, `created`, `modified`, `content_size`, or a mapped
    /// date field.
    pub field: String,
    /// Descending.
    pub descending: bool,
}

/// One page of hits.
#[derive(Debug)]
pub struct Page {
    /// How many documents match.
    pub total: usize,
    /// The page's documents, in order.
    pub hits: Vec<DocAddress>,
}

/// How the index writer is set up. Every indexing thread makes a segment of its own at each
/// commit, and each segment has a fixed cost (tantivy allocates and walks a term table of
/// 2^19 slots, whatever the documents, and each field's term dictionary builder allocates a
/// registry of 20,000 nodes: at 12,000 records a one-document commit cost the server ~35 ms
/// of CPU, merges included): the live loop's small, frequent commits take one
/// thread, a full rebuild (one commit, tokenizing everything) as many as the cores allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriterMode {
    /// One thread, a small budget: following the change log.
    Live,
    /// Up to four threads and a large budget, no merges on the way: a full rebuild.
    Bulk,
}

/// The index.
pub struct SearchIndex {
    schema: IndexSchema,
    index: Index,
    reader: IndexReader,
    /// `None` only while the writer is being replaced (there can be one at a time).
    writer: Mutex<Option<(WriterMode, IndexWriter)>>,
    parser: QueryParser,
    /// Asks the live writer's policy to merge everything into one.
    merge_all: MergeAllRequest,
    fingerprint: String,
    epoch: Mutex<String>,
}

impl SearchIndex {
    /// Opens the index in `dir`, creating it (or recreating it, when it was built with
    /// another mapping or schema) as needed. Returns the index and the change-log position
    /// its last commit reached (`None` for a new index, which must be built in full).
    pub fn open(dir: &Path, mapping: &Mapping) -> Result<(Self, Option<i64>)> {
        let schema = IndexSchema::new(mapping);
        let fingerprint = format!("{}.{DOCUMENT_VERSION}", mapping.fingerprint());
        std::fs::create_dir_all(dir).map_err(|e| Error::Io(dir.to_path_buf(), e))?;
        let existing = if dir.join("meta.json").exists() {
            let index = Index::open_in_dir(dir)?;
            let payload = index
                .load_metas()?
                .payload
                .and_then(|p| serde_json::from_str::<Payload>(&p).ok());
            match payload {
                Some(p) if p.mapping == fingerprint && index.schema() == schema.schema => {
                    Some((index, p.seq, p.epoch))
                }
                _ => {
                    tracing::warn!(dir = %dir.display(), "the search index was built with another field mapping (or never finished): rebuilding it");
                    drop(index);
                    clear_dir(dir)?;
                    None
                }
            }
        } else {
            None
        };
        let (index, position, epoch) = match existing {
            Some((index, seq, epoch)) => (index, Some(seq), epoch),
            None => (
                Index::create_in_dir(dir, schema.schema.clone())?,
                None,
                String::new(),
            ),
        };
        let me = Self::with_index(index, schema, fingerprint)?;
        *me.epoch.lock() = epoch;
        Ok((me, position))
    }

    fn with_index(index: Index, schema: IndexSchema, fingerprint: String) -> Result<Self> {
        schema.register(&index);
        let merge_all = MergeAllRequest::default();
        let writer = new_writer(&index, WriterMode::Live, &merge_all)?;
        // Commits reload the reader themselves (a write is searchable when `commit` returns);
        // tantivy's watch of meta.json shows what merges did in the background too.
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::OnCommitWithDelay)
            .try_into()?;
        let parser = QueryParser::new(schema.query_fields.clone(), "ALL", analyzer());
        Ok(Self {
            schema,
            index,
            reader,
            writer: Mutex::new(Some((WriterMode::Live, writer))),
            parser,
            merge_all,
            fingerprint,
            epoch: Mutex::new(String::new()),
        })
    }

    /// The schema.
    pub fn schema(&self) -> &IndexSchema {
        &self.schema
    }

    /// The query parser for this index's fields.
    pub fn parser(&self) -> &QueryParser {
        &self.parser
    }

    /// Runs `f` with the writer.
    fn with_writer<T>(&self, f: impl FnOnce(&mut IndexWriter) -> Result<T>) -> Result<T> {
        match self.writer.lock().as_mut() {
            Some((_, w)) => f(w),
            None => Err(Error::BadRequest(
                "the search index has no writer (it could not be reopened; see the log)".into(),
            )),
        }
    }

    /// Sets the writer up for `mode` (see [`WriterMode`]). Call only with nothing added since
    /// the last commit: the old writer goes, and what it held uncommitted with it.
    pub fn set_mode(&self, mode: WriterMode) -> Result<()> {
        let mut slot = self.writer.lock();
        if matches!(&*slot, Some((m, _)) if *m == mode) {
            return Ok(());
        }
        // One writer at a time: the old one (and its threads) ends here, before the new one
        // starts.
        let old = slot.take().map(|(m, _)| m);
        match new_writer(&self.index, mode, &self.merge_all) {
            Ok(w) => {
                *slot = Some((mode, w));
                Ok(())
            }
            Err(e) => {
                if let Some(m) = old {
                    *slot = new_writer(&self.index, m, &self.merge_all)
                        .ok()
                        .map(|w| (m, w));
                }
                Err(e)
            }
        }
    }

    /// Replaces the document of resource `path` (adds it if it had none).
    pub fn upsert(&self, path: &str, doc: TantivyDocument) -> Result<()> {
        self.with_writer(|w| {
            w.delete_term(Term::from_field_text(self.schema.system.id, path));
            w.add_document(doc)?;
            Ok(())
        })
    }

    /// Adds a document without first removing one of the same resource: only for a full
    /// rebuild into an index emptied by [`clear`](Self::clear), which adds each resource
    /// once. (A removal is kept in memory until the next commit — tantivy holds a query
    /// of about a kilobyte for each — and a rebuild commits once: at 353,000 documents,
    /// removals of documents that could not be there held 430 of the 650 MB of
    /// `arca reindex`, BENCHMARKS.md.)
    pub fn add(&self, doc: TantivyDocument) -> Result<()> {
        self.with_writer(|w| {
            w.add_document(doc)?;
            Ok(())
        })
    }

    /// Removes the document of resource `path`.
    pub fn remove(&self, path: &str) -> Result<()> {
        self.with_writer(|w| {
            w.delete_term(Term::from_field_text(self.schema.system.id, path));
            Ok(())
        })
    }

    /// Removes every document (the next commit makes that visible, so searches see the old
    /// documents until a rebuild commits).
    pub fn clear(&self) -> Result<()> {
        self.with_writer(|w| {
            w.delete_all_documents()?;
            Ok(())
        })
    }

    /// Makes everything added and removed so far durable and visible, recording that the
    /// index reflects the change log up to `seq`.
    pub fn commit(&self, seq: i64) -> Result<()> {
        let payload = serde_json::to_string(&Payload {
            seq,
            mapping: self.fingerprint.clone(),
            epoch: self.epoch.lock().clone(),
        })
        .expect("payload serializes");
        self.with_writer(|w| {
            let mut prepared = w.prepare_commit()?;
            prepared.set_payload(&payload);
            prepared.commit()?;
            Ok(())
        })?;
        self.reader.reload()?;
        Ok(())
    }

    /// Starts merging every segment into one; returns what finishes it, or `None` when there
    /// is at most one. Each segment costs every query a lookup of each of its terms and a
    /// scorer: at 120,000 records, 12 segments made a query's server CPU 1.3–1.9 times that of
    /// one (BENCHMARKS, "Search at 120,000"). Meant for after a full rebuild, which rewrites
    /// everything anyway, or at start where a stop cut that merge short. While the live loop
    /// commits, level merges may take some of these segments, and the one of the two merges
    /// that ends last fails: after a bulk of writes use
    /// [`merge_all_after_commit`](Self::merge_all_after_commit).
    pub fn merge_all(&self) -> Result<Option<Merging>> {
        let ids = self.index.searchable_segment_ids()?;
        if ids.len() <= 1 {
            return Ok(None);
        }
        let merging = self.with_writer(|w| Ok(w.merge(&ids)))?;
        Ok(Some(Merging {
            segments: ids.len(),
            merging,
        }))
    }

    /// Whether the index holds more segments than the live merge policy leaves
    /// ([`merge::MOST_LIVE_SEGMENTS`]): a rebuild's merge into one was cut short by a stop, and
    /// every query pays for each segment until [`merge_all`](Self::merge_all) runs again.
    pub fn needs_merge(&self) -> bool {
        self.segments() > merge::MOST_LIVE_SEGMENTS
    }

    /// Has the live writer merge every segment into one at the end of the next commit or
    /// merge after which merges hold at most a tenth of the documents (`merge::live`); the
    /// reader follows meta.json and shows the result when it is written. For after a bulk of
    /// writes (`merge::merge_after_bulk`): unlike [`merge_all`](Self::merge_all), it cannot
    /// take a segment a level merge is rewriting.
    pub fn merge_all_after_commit(&self) {
        self.merge_all.request();
    }

    /// Makes what merges have done since the last commit visible to searches.
    pub fn reload(&self) -> Result<()> {
        self.reader.reload()?;
        Ok(())
    }

    /// The segments searches see.
    pub fn segments(&self) -> usize {
        self.reader.searcher().segment_readers().len()
    }

    /// The catalog generation the committed position refers to.
    pub fn epoch(&self) -> String {
        self.epoch.lock().clone()
    }

    /// Sets the catalog generation the next commit records.
    pub fn set_epoch(&self, epoch: &str) {
        *self.epoch.lock() = epoch.to_string();
    }

    /// Drops what was added since the last commit.
    pub fn rollback(&self) -> Result<()> {
        self.with_writer(|w| {
            w.rollback()?;
            Ok(())
        })
    }

    /// The searcher of the last commit (one snapshot for a whole request).
    pub fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }

    /// Documents in the last commit.
    pub fn documents(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Checks that `sort` names a sortable field.
    pub fn check_sort(&self, sort: &Sort) -> Result<()> {
        self.sort_kind(sort).map(|_| ())
    }

    fn sort_kind(&self, sort: &Sort) -> Result<(String, FieldKind)> {
        let field = self
            .schema
            .query_fields
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(&sort.field))
            .ok_or_else(|| {
                Error::BadRequest(format!("cannot sort by unknown field {:?}", sort.field))
            })?;
        let entry = self.schema.schema.get_field_entry(field.field);
        if !entry.is_fast() {
            return Err(Error::BadRequest(format!(
                "cannot sort by {:?}: sortable fields are id, mime_type, created, modified, content_size and date fields",
                sort.field
            )));
        }
        Ok((entry.name().to_string(), field.kind))
    }

    /// One page of the documents matching `query`: by score, or by `sort` (documents
    /// without a value last).
    pub fn page(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
        sort: Option<&Sort>,
        offset: usize,
        limit: usize,
    ) -> Result<Page> {
        let limit = limit.max(1);
        let top = TopDocs::with_limit(limit).and_offset(offset);
        let (total, hits) = match sort {
            None => {
                let (total, hits) = searcher.search(query, &(Count, top.order_by_score()))?;
                (total, hits.into_iter().map(|(_, a)| a).collect())
            }
            Some(s) => {
                let (name, kind) = self.sort_kind(s)?;
                let order = if s.descending {
                    Order::Desc
                } else {
                    Order::Asc
                };
                match kind {
                    FieldKind::Keyword | FieldKind::Text => {
                        let (total, hits) = searcher
                            .search(query, &(Count, top.order_by_string_fast_field(name, order)))?;
                        (total, hits.into_iter().map(|(_, a)| a).collect())
                    }
                    FieldKind::Date => {
                        let c = top.order_by_fast_field::<tantivy::DateTime>(name, order);
                        let (total, hits) = searcher.search(query, &(Count, c))?;
                        (total, hits.into_iter().map(|(_, a)| a).collect())
                    }
                    FieldKind::Number => {
                        let c = top.order_by_fast_field::<u64>(name, order);
                        let (total, hits) = searcher.search(query, &(Count, c))?;
                        (total, hits.into_iter().map(|(_, a)| a).collect())
                    }
                }
            }
        };
        Ok(Page { total, hits })
    }

    /// The stored values of `fields` of one hit (dates in RFC 3339), and its resource's
    /// path.
    pub fn stored(
        &self,
        searcher: &Searcher,
        hit: DocAddress,
        fields: &[(String, Field)],
    ) -> Result<StoredHit> {
        let document = if fields.iter().all(|(_, f)| f.field_id() < SYSTEM_STORED_END) {
            searcher.doc::<SystemStored>(hit)?.0
        } else {
            searcher.doc::<StoredJson>(hit)?
        };
        Ok(StoredHit::pick(document, self.schema.system.id, fields))
    }
}

fn clear_dir(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::Io(dir.to_path_buf(), e))? {
        let path = entry.map_err(|e| Error::Io(dir.to_path_buf(), e))?.path();
        let r = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        r.map_err(|e| Error::Io(path, e))?;
    }
    Ok(())
}

/// A writer for `mode`, with its merge policy ([`merge`]).
fn new_writer(index: &Index, mode: WriterMode, merge_all: &MergeAllRequest) -> Result<IndexWriter> {
    let (threads, budget) = match mode {
        WriterMode::Live => (1, LIVE_BUDGET),
        WriterMode::Bulk => (
            std::thread::available_parallelism().map_or(1, |n| n.get().min(BULK_THREADS)),
            BULK_BUDGET,
        ),
    };
    let writer = index
        .writer_with_num_threads(threads, budget)
        .map_err(|e| match e {
            tantivy::TantivyError::LockFailure(..) => Error::Locked,
            e => e.into(),
        })?;
    writer.set_merge_policy(match mode {
        WriterMode::Live => {
            let index = index.clone();
            merge::live(
                merge_all.clone(),
                Box::new(move || {
                    // Unreadable metas leave nothing to wait for.
                    index.searchable_segment_metas().map_or(0, |metas| {
                        metas.iter().map(|m| u64::from(m.max_doc())).sum()
                    })
                }),
            )
        }
        WriterMode::Bulk => merge::rebuild(),
    });
    Ok(writer)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After `merge_all` and a reload, one segment holds every document, deletions applied.
    /// The commits are a rebuild's (its writer merges nothing on the way), the merge starts
    /// from the live writer, as in `Indexer`. Before it, the index says it needs the merge, also
    /// when reopened (a stop before the merge).
    #[test]
    fn merge_all_leaves_one_segment_with_every_document() {
        let dir = tempfile::tempdir().unwrap();
        let (index, _) = SearchIndex::open(dir.path(), &Mapping::dublin_core()).unwrap();
        index.set_mode(WriterMode::Bulk).unwrap();
        let id = index.schema().system.id;
        let commits = merge::MOST_LIVE_SEGMENTS as i64 + 1;
        for commit in 0..commits {
            for n in 0..3 {
                let mut doc = TantivyDocument::default();
                doc.add_text(id, format!("r{commit}-{n}"));
                index.upsert(&format!("r{commit}-{n}"), doc).unwrap();
            }
            index.commit(commit + 1).unwrap();
        }
        index.remove("r0-0").unwrap();
        index.commit(commits + 1).unwrap();
        drop(index);
        let (index, position) = SearchIndex::open(dir.path(), &Mapping::dublin_core()).unwrap();
        assert_eq!(position, Some(commits + 1));
        // At least one segment per commit (one per indexing thread that had documents).
        let before = index.segments();
        assert!(before as i64 >= commits, "{before} segments");
        assert!(index.needs_merge());
        let merging = index.merge_all().unwrap().expect("segments to merge");
        assert_eq!(merging.segments, before);
        merging.wait().unwrap();
        index.reload().unwrap();
        assert_eq!(index.segments(), 1);
        assert!(!index.needs_merge());
        assert_eq!(index.documents(), 3 * commits as u64 - 1);
        assert!(index.merge_all().unwrap().is_none());
        // The merge kept the last commit's position.
        drop(index);
        let (_, position) = SearchIndex::open(dir.path(), &Mapping::dublin_core()).unwrap();
        assert_eq!(position, Some(commits + 1));
    }
}
