//! Which segments of the index are merged, and when.
//!
//! Every commit makes a segment; every segment costs each query a lookup of each of its terms
//! and a scorer; every merge rewrites what it merges, and a document of a record with a PDF
//! carries some 45 KB of text (twice for its binary). The live index therefore needs few
//! segments and a bound on how often a document is rewritten, whatever the commits look like:
//! a bulk load commits hundreds of documents at a time, a trickle of updates one at a time.
//!
//! tantivy's log merge policy groups segments into levels by size and merges a level once it
//! holds enough segments. Its floor (every segment below `min_layer_size` documents counts as
//! that size) is what hurt: under a trickle, each merge of the lowest level takes the level's
//! largest segment along with a few one-document ones, so that segment is rewritten again and
//! again as it grows, a quadratic cost (measured at 12,000 records, five updates a second:
//! 43–72 ms of server CPU per update, two thirds of it merging). Without a floor, and with
//! levels four times apart merged four at a time, each merge makes what a document is in at
//! least 1.75 times larger (four segments, none under a quarter of the largest), so a document
//! is rewritten a logarithmic number of times (merges for deletions aside, which wait until a
//! fifth of a segment is gone).
//!
//! What the levels leave after a bulk load still costs queries: about ten segments, holding
//! the older versions of documents written twice (a record is indexed again when its PDF's
//! text arrives), which every query skips one by one. At 120,000 records q3 answered 6,416
//! queries/s at 3 threads after a load, 9,580/s on the same documents merged into one. So once
//! the live loop has caught up after writing as many documents as half the index (a bulk
//! load, not a trickle), the whole index is merged into one, as after a rebuild. Each such merge
//! rewrites the index once after at least half of it was written anew, so it adds at most
//! three rewrites per document, however the index grows. tantivy offers a policy only the
//! segments no merge holds, and at the end of a bulk load level merges often hold the largest
//! (at 120,000 records the first such merge took what was free and left 5 to 9 segments), so
//! the merge into one waits until the segments offered hold nine tenths of the committed
//! documents: a level merge's end offers its result again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tantivy::index::SegmentMeta;
use tantivy::indexer::{LogMergePolicy, MergeCandidate, MergePolicy, NoMergePolicy};

/// Segments are grouped in levels whose sizes differ by this factor (as a power of two).
const LEVEL_LOG2: f64 = 2.0;
/// A level is merged once it holds this many segments.
const SEGMENTS_PER_MERGE: usize = 4;
/// A segment with this share of deleted documents is rewritten (with its level) even when its
/// level is not full, so that updated documents do not stay in it forever.
const DELETED_SHARE: f32 = 0.2;

/// The live policy leaves at most this many segments, under a trickle of updates as after a
/// bulk load (the tests below simulate both). An index found with more was left so by a stop:
/// a rebuild leaves many segments and merges them into one afterwards, and a merge the server
/// stopped during is not resumed by tantivy.
pub const MOST_LIVE_SEGMENTS: usize = 16;

/// Whether the live loop, caught up after `written` documents since the last merge into one,
/// should merge the index (of `documents` documents) into one (see the [module docs](self)).
/// Below `least` documents written nothing is a bulk, whatever the index's size (a small index
/// stays cheap to query in a few segments); `0` turns these merges off.
pub fn merge_after_bulk(written: u64, documents: u64, least: u64) -> bool {
    least > 0 && written >= least.max(documents / 2)
}

/// A merge into one waits until the segments offered hold this share of the committed
/// documents (see the [module docs](self)); what is left out is a trickle's small segments
/// held by small merges.
const MERGE_ALL_SHARE: (u64, u64) = (9, 10);

/// The documents, deleted ones included, in the committed segments of the index a policy
/// merges, whether a merge holds them or not.
pub type CommittedDocuments = Box<dyn Fn() -> u64 + Send + Sync>;

/// The policy of the index while it follows the change log (see the [module docs](self)):
/// the levels, and everything into one when `merge_all` asks for it and the segments offered
/// hold most of `committed` documents.
pub fn live(merge_all: MergeAllRequest, committed: CommittedDocuments) -> Box<dyn MergePolicy> {
    Box::new(LivePolicy {
        levels: live_policy(),
        merge_all,
        committed,
    })
}

/// Whether segments holding `offered` documents are enough for a merge into one of an index
/// whose committed segments hold `committed`.
fn offers_most(offered: u64, committed: u64) -> bool {
    let (part, whole) = MERGE_ALL_SHARE;
    offered.saturating_mul(whole) >= committed.saturating_mul(part)
}

/// A request, kept until tantivy offers the policy most of the index, that every segment be
/// merged into one. The merge is asked for through the policy, not `IndexWriter::merge`: tantivy
/// gives the policy only the segments no merge holds, while a merge started beside the
/// policy's own can take the same segments, and then the one that ends last fails (seen at
/// 12,000 records: a level merged a segment away under the bulk merge).
#[derive(Debug, Clone, Default)]
pub struct MergeAllRequest(Arc<AtomicBool>);

impl MergeAllRequest {
    /// Asks for the merge (taken at the next commit's or merge's end).
    pub fn request(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

struct LivePolicy {
    levels: LogMergePolicy,
    merge_all: MergeAllRequest,
    committed: CommittedDocuments,
}

impl std::fmt::Debug for LivePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LivePolicy")
            .field("levels", &self.levels)
            .field("merge_all", &self.merge_all)
            .finish_non_exhaustive()
    }
}

impl MergePolicy for LivePolicy {
    fn compute_merge_candidates(&self, segments: &[SegmentMeta]) -> Vec<MergeCandidate> {
        // tantivy asks about uncommitted segments (none after a commit) and committed ones
        // apart, from one thread: the request waits for a set of two or more holding most
        // of the index.
        if segments.len() >= 2 && self.merge_all.0.load(Ordering::Relaxed) {
            let offered = segments.iter().map(|s| u64::from(s.max_doc())).sum();
            let committed = (self.committed)();
            if offers_most(offered, committed) {
                self.merge_all.0.store(false, Ordering::Relaxed);
                tracing::info!(
                    segments = segments.len(),
                    documents = offered,
                    committed,
                    "merging the search index into one segment"
                );
                return vec![MergeCandidate(segments.iter().map(|s| s.id()).collect())];
            }
        }
        self.levels.compute_merge_candidates(segments)
    }
}

/// The policy during a full rebuild: none. The rebuild's segments are merged into one once it
/// has committed (`Indexer`), so merging them on the way would only rewrite them twice.
pub fn rebuild() -> Box<dyn MergePolicy> {
    Box::new(NoMergePolicy)
}

fn live_policy() -> LogMergePolicy {
    let mut policy = LogMergePolicy::default();
    policy.set_min_layer_size(1);
    policy.set_level_log_size(LEVEL_LOG2);
    policy.set_min_num_segments(SEGMENTS_PER_MERGE);
    policy.set_del_docs_ratio_before_merge(DELETED_SHARE);
    policy
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::index::{SegmentId, SegmentMeta};
    use tantivy::schema::{Schema, STRING};
    use tantivy::Index;

    /// Segments and what merging them has cost, merges taking effect at once.
    struct Simulation {
        index: Index,
        segments: Vec<SegmentMeta>,
        added: u64,
        rewritten: u64,
        most_segments: usize,
    }

    impl Simulation {
        fn new(start: &[u32]) -> Self {
            let mut schema = Schema::builder();
            schema.add_text_field("id", STRING);
            let index = Index::create_in_ram(schema.build());
            let segments = start
                .iter()
                .map(|&n| index.new_segment_meta(SegmentId::generate_random(), n))
                .collect();
            Simulation {
                index,
                segments,
                added: 0,
                rewritten: 0,
                most_segments: 0,
            }
        }

        /// One commit of `docs` documents, then every merge the policy asks for.
        fn commit(&mut self, policy: &dyn MergePolicy, docs: u32) {
            self.added += u64::from(docs);
            let meta = self
                .index
                .new_segment_meta(SegmentId::generate_random(), docs);
            self.segments.push(meta);
            loop {
                let candidates = policy.compute_merge_candidates(&self.segments);
                if candidates.is_empty() {
                    break;
                }
                for candidate in candidates {
                    let (merged, kept): (Vec<_>, Vec<_>) = self
                        .segments
                        .drain(..)
                        .partition(|s| candidate.0.contains(&s.id()));
                    let docs: u32 = merged.iter().map(|s| s.num_docs()).sum();
                    self.rewritten += u64::from(docs);
                    self.segments = kept;
                    let meta = self
                        .index
                        .new_segment_meta(SegmentId::generate_random(), docs);
                    self.segments.push(meta);
                }
            }
            self.most_segments = self.most_segments.max(self.segments.len());
        }

        /// Documents rewritten by merges per document committed.
        fn rewrites(&self) -> f64 {
            self.rewritten as f64 / self.added as f64
        }
    }

    /// Updates one at a time on a large index: each document is rewritten a few times, not
    /// once per few commits (tantivy's default floor of 10,000 rewrote each more than 100
    /// times in this simulation), and the segments stay few.
    #[test]
    fn a_trickle_of_updates_rewrites_each_document_a_few_times() {
        let policy = live_policy();
        let mut sim = Simulation::new(&[210_000]);
        for _ in 0..2_000 {
            sim.commit(&policy, 1);
        }
        assert!(sim.rewrites() < 8.0, "{} rewrites", sim.rewrites());
        assert!(
            sim.most_segments <= MOST_LIVE_SEGMENTS,
            "{} segments",
            sim.most_segments
        );

        let mut floored = LogMergePolicy::default();
        floored.set_min_layer_size(1_000);
        let mut old = Simulation::new(&[210_000]);
        for _ in 0..2_000 {
            old.commit(&floored, 1);
        }
        assert!(old.rewrites() > 50.0, "{} rewrites", old.rewrites());
    }

    /// A bulk of writes is half the index, and at least the least given: a trickle on a
    /// large index, or a small index, is left to the levels; 0 is never.
    #[test]
    fn a_bulk_is_half_the_index_and_the_least_at_least() {
        assert!(!merge_after_bulk(9_999, 0, 10_000));
        assert!(merge_after_bulk(10_000, 0, 10_000));
        assert!(merge_after_bulk(10_000, 20_000, 10_000));
        assert!(!merge_after_bulk(10_000, 20_002, 10_000));
        assert!(merge_after_bulk(150_000, 300_000, 10_000));
        assert!(!merge_after_bulk(149_999, 300_000, 10_000));
        assert!(!merge_after_bulk(u64::MAX, 0, 0));
    }

    /// A request to merge everything is taken by the first set of two segments or more that
    /// holds most of the index, once: then the levels decide again.
    #[test]
    fn a_merge_of_everything_is_asked_for_once() {
        let request = MergeAllRequest::default();
        let policy = live(request.clone(), Box::new(|| 40_750));
        let sim = Simulation::new(&[40_000, 600, 150]);
        let sizes = |c: &[MergeCandidate]| c.iter().map(|c| c.0.len()).collect::<Vec<_>>();
        assert!(policy.compute_merge_candidates(&sim.segments).is_empty());
        request.request();
        assert!(policy
            .compute_merge_candidates(&sim.segments[..1])
            .is_empty());
        assert_eq!(sizes(&policy.compute_merge_candidates(&sim.segments)), [3]);
        assert!(policy.compute_merge_candidates(&sim.segments).is_empty());
    }

    /// While merges hold a large share of the index, the request waits (the levels go on),
    /// and it is taken once most of the index is offered: a segment a merge holds is not left
    /// out of the merge into one.
    #[test]
    fn a_merge_of_everything_waits_for_most_of_the_index() {
        let request = MergeAllRequest::default();
        // 60,000 documents committed; a level merge holds 20,000 of them at first.
        let policy = live(request.clone(), Box::new(|| 60_000));
        let free = Simulation::new(&[30_000, 9_000, 600, 400]);
        request.request();
        let waiting = policy.compute_merge_candidates(&free.segments);
        assert!(waiting.iter().all(|c| c.0.len() < 4), "{waiting:?}");
        // The level merge ended: its result is offered along with the rest, and a trickle's
        // small merge (900 documents, under a tenth) does not hold the request back.
        let most = Simulation::new(&[30_000, 9_000, 20_000, 100]);
        let merged = policy.compute_merge_candidates(&most.segments);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].0.len(), 4);
        assert!(policy.compute_merge_candidates(&most.segments).is_empty());
        assert!(offers_most(54_000, 60_000));
        assert!(!offers_most(53_999, 60_000));
        assert!(offers_most(1, 0));
    }

    /// A bulk load (commits of 150 documents up to 210,000): rewrites and segments bounded.
    #[test]
    fn a_bulk_load_keeps_segments_few_and_rewrites_bounded() {
        let policy = live_policy();
        let mut sim = Simulation::new(&[]);
        for _ in 0..1_400 {
            sim.commit(&policy, 150);
        }
        assert!(sim.rewrites() < 6.0, "{} rewrites", sim.rewrites());
        assert!(sim.most_segments <= 14, "{} segments", sim.most_segments);
        assert!(sim.segments.len() <= 10, "{} segments", sim.segments.len());
    }
}
