//! Keeps the index equal to the repository: a task follows the catalog's change log, and
//! full rebuilds read every live resource.
//!
//! Each batch of changes becomes one commit whose payload is the position reached, so a
//! restart resumes exactly there and a change applied twice only replaces a document by
//! itself. Text extraction runs beside the loop: a binary is indexed at once with its
//! metadata, and again (with its parent container) when its text is ready; until then the
//! committed position stays before the change that asked for the text, so a crash cannot
//! lose it. Extracted text is cached per content digest, so each distinct content is
//! extracted once and a rebuild needs no extraction.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arca_catalog::{Catalog, ResourceRecord};
use arca_model::{FedoraId, InteractionModel};
use arca_repository::{LocalContent, Repository};
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot, watch};

use crate::document::{self, ResourceView};
use crate::extract::{is_extractable, ExtractLimits, ExtractProgram, Extractor, TextCache};
use crate::index::{Merging, SearchIndex, WriterMode};
use crate::mapping::Mapping;
use crate::merge;
use crate::{Error, Result};

/// The consumer name of the index in the catalog's `consumers` table (with a catalog
/// shared by several nodes, each node's index is its own consumer: see `consumer_name`).
pub const CONSUMER: &str = "search";
/// The file in the index directory naming this node's index among the consumers of a
/// shared catalog.
const NODE_ID_FILE: &str = "node-id";

/// A name no other node or run makes: the time in nanoseconds and the process id.
fn unique_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{:x}", std::process::id())
}

/// The name under which the index's position is kept in the catalog, which holds back the
/// change log's retention: [`CONSUMER`] on one node; `search:<id>` for each node's own
/// index when several nodes share the catalog (`<id>` made once and kept in `dir`).
fn consumer_name(shared: bool, dir: &std::path::Path) -> Result<String> {
    if !shared {
        return Ok(CONSUMER.to_string());
    }
    let path = dir.join(NODE_ID_FILE);
    let id = match std::fs::read_to_string(&path) {
        Ok(id) if !id.trim().is_empty() => id.trim().to_string(),
        Ok(_) => return Err(Error::Io(path, std::io::Error::other("empty node id"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let id = unique_id();
            std::fs::write(&path, &id).map_err(|e| Error::Io(path.clone(), e))?;
            id
        }
        Err(e) => return Err(Error::Io(path, e)),
    };
    Ok(format!("{CONSUMER}:{id}"))
}
/// Catalog meta key naming the catalog generation the index was built from. A catalog
/// rebuilt from storage has none (its change log is numbered anew), so the index is rebuilt.
const EPOCH_KEY: &str = "search.epoch";
/// Changes read from the log per batch.
const BATCH: usize = 2_000;
/// Attempts at a merge into one behind the live loop (see `merge_in_background`).
const MERGE_ATTEMPTS: u32 = 3;
/// Least time between two commits of the live loop (each commit makes a segment).
const MIN_COMMIT_INTERVAL: Duration = Duration::from_millis(100);
/// Under load the live loop spends at most about 1/N of its time committing: after a commit
/// that took `t`, the next waits until `N·t` has passed (within the least and the configured
/// most; see [`commit_pause`]).
const COMMIT_SHARE: u32 = 10;
/// Documents in a batch from which the commit pace is fully stretched; smaller batches (a
/// trickle of writes, a lone updater) stretch it in proportion, so that they stay searchable
/// within about the least interval.
const FULL_BATCH: usize = 64;
/// Live resources read per page by a rebuild.
const REBUILD_PAGE: usize = 256;
/// Texts kept in memory after their extraction (see `Indexer::recent`).
const RECENT_TEXTS: usize = 256;
/// Pages a rebuild works on at once.
const REBUILD_PARALLEL: usize = 4;

/// The first wait after a failed round of the live loop; each failure in a row doubles it
/// up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between two tries of a failing live loop (a catalog database or a disk
/// that is away).
const RETRY_MAX: Duration = Duration::from_secs(30);

/// How the index is set up.
#[derive(Debug, Clone)]
pub struct IndexerSettings {
    /// Directory of the index and the text cache (`<data>/search`).
    pub dir: PathBuf,
    /// The field mapping.
    pub mapping: Mapping,
    /// Bounds of text extraction.
    pub extract: ExtractLimits,
    /// The program that extracts a PDF's text (`arca extract-text`).
    pub program: ExtractProgram,
    /// Child binaries whose text goes into a container's `ALL`/`FULLTEXT` (the first ones,
    /// in id order).
    pub child_binaries: usize,
    /// The external-content allow-list: the text of an external `file:` binary is read only
    /// while its location is still allowed (checked at each read, as proxied reads are);
    /// without a list, external binaries have no text.
    pub external_allowed: Option<Arc<arca_repository::AllowList>>,
    /// The longest the live loop waits between commits while changes keep coming (the
    /// bound on how long a write takes to become searchable, commit time aside). It commits
    /// sooner when commits are quick: 100 ms after the last one at the least.
    pub max_commit_interval: Duration,
    /// The least documents written since the last merge into one after which, once caught
    /// up, the live loop merges the index into one when they are half the index or more
    /// (`merge::merge_after_bulk`; `0`: never).
    pub bulk_merge_documents: u64,
}

/// Where indexing stands, for operators (`fcr:search/status`).
#[derive(Debug, Clone, Serialize)]
pub struct SearchStatus {
    /// Documents in the index.
    pub documents: u64,
    /// The change-log position the index reflects.
    pub indexed: i64,
    /// The last committed change.
    pub last_change: i64,
    /// Changes not indexed yet.
    pub lag: i64,
    /// Segments of the searchable index: each query visits every one, so fewer is cheaper.
    pub segments: usize,
    /// Whether the index is being merged into one segment after a rebuild (or at start, where a
    /// stop cut that merge short). The merge after a bulk of writes is the live merge policy's
    /// and is not shown here.
    pub merging: bool,
    /// The running or last rebuild.
    pub reindex: Option<RebuildProgress>,
    /// Why indexing fails now (the catalog database or the index's disk away): the live
    /// loop tries again, waiting longer each time up to 30 s, and this is gone once a try
    /// succeeds.
    pub error: Option<String>,
    /// Text extraction.
    pub extraction: ExtractionCounts,
}

/// A rebuild's progress.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RebuildProgress {
    /// Still running.
    pub running: bool,
    /// Resources done.
    pub done: u64,
    /// Live resources when it started.
    pub total: u64,
    /// Seconds since it started (or that it took).
    pub seconds: f64,
    /// Resources per second.
    pub objects_per_second: f64,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// Extraction counters since the server started.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ExtractionCounts {
    /// Texts extracted.
    pub extracted: u64,
    /// Binaries whose text could not be extracted (logged with the reason when first tried).
    pub failed: u64,
    /// Texts found in the cache.
    pub cached: u64,
    /// Extractions waiting or running.
    pub pending: u64,
    /// Seconds spent extracting (sum over extractions).
    pub seconds: f64,
}

#[derive(Default)]
struct Counters {
    indexed: AtomicI64,
    extracted: AtomicU64,
    failed: AtomicU64,
    cached: AtomicU64,
    pending: AtomicU64,
    extract_nanos: AtomicU64,
    rebuilding: AtomicBool,
    merging: AtomicBool,
    /// Documents written by the live loop since the last merge into one started.
    written_since_merge: AtomicU64,
}

enum Command {
    Rebuild,
    Refresh(Vec<FedoraId>, oneshot::Sender<Result<()>>),
}

/// What the live loop listens to.
struct LoopInputs {
    commands: mpsc::UnboundedReceiver<Command>,
    ready: mpsc::UnboundedReceiver<TextReady>,
    /// The catalog's last committed change.
    last: watch::Receiver<i64>,
}

/// How a round of the live loop ended.
enum Round {
    Done,
    Stopped,
}

/// What the live loop carries from one round to the next, kept across a failed round so
/// that the next one does its work again.
#[derive(Default)]
struct LiveState {
    /// Whether the start position is settled (see `Indexer::resume_position`).
    started: bool,
    /// The change-log position the index reflects.
    position: i64,
    /// A full rebuild is due: the index is new or stale, or an operator asked for one.
    rebuild: bool,
    /// Changes (by the sequence number that asked) whose text is still being extracted.
    waiting: BTreeMap<i64, usize>,
    /// Resources to index again whatever the log says.
    refresh: BTreeSet<FedoraId>,
    /// Who waits for the next commit.
    replies: Vec<oneshot::Sender<Result<()>>>,
    /// When the next commit may come (see `commit_pause`); now when `None`.
    next_commit: Option<Instant>,
    /// Texts that arrived since the last commit.
    texts_in: u64,
    /// The last round failed: the next one does its work again at once instead of waiting
    /// for new work (which may never come, leaving the failure reported forever).
    retrying: bool,
}

impl LiveState {
    fn take_command(&mut self, cmd: Command) {
        match cmd {
            Command::Refresh(ids, reply) => {
                self.refresh.extend(ids);
                self.replies.push(reply);
            }
            Command::Rebuild => self.rebuild = true,
        }
    }

    fn take_ready(&mut self, ready: TextReady) {
        for (id, seq) in ready.waiters {
            if let Some(n) = self.waiting.get_mut(&seq) {
                *n -= 1;
                if *n == 0 {
                    self.waiting.remove(&seq);
                }
            }
            // Indexing the binary again also indexes its container (`index_one`).
            self.refresh.insert(id);
        }
        self.texts_in += 1;
    }
}

/// A text that became available: the binary that wanted it and the change that asked.
struct TextReady {
    waiters: Vec<(FedoraId, i64)>,
}

/// The search index and what keeps it current.
pub struct Indexer {
    index: SearchIndex,
    repo: Arc<Repository>,
    catalog: Arc<dyn Catalog>,
    extractor: Extractor,
    cache: TextCache,
    child_binaries: usize,
    external_allowed: Option<Arc<arca_repository::AllowList>>,
    max_text: usize,
    max_commit_interval: Duration,
    bulk_merge_documents: u64,
    counters: Counters,
    rebuild: Mutex<Option<(Instant, RebuildProgress)>>,
    /// Why the live loop's last round failed, while it tries again.
    failing: Mutex<Option<String>>,
    /// Extractions running, by text key, with the binaries waiting for them.
    inflight: Mutex<HashMap<String, Vec<(FedoraId, i64)>>>,
    /// Texts extracted lately, by text key: the refresh they cause finds them here even
    /// when the cache could not store them (a full disk must not make extraction loop).
    recent: Mutex<HashMap<String, Option<String>>>,
    commands: mpsc::UnboundedSender<Command>,
    receiver: Mutex<Option<mpsc::UnboundedReceiver<Command>>>,
    ready_tx: mpsc::UnboundedSender<TextReady>,
    ready_rx: Mutex<Option<mpsc::UnboundedReceiver<TextReady>>>,
    /// The position the index had when opened: `None` for a new index, to be built.
    start: Option<i64>,
    /// Its name among the change log's consumers.
    consumer: String,
}

impl Indexer {
    /// Opens (or creates) the index under `settings.dir`.
    pub fn open(repo: Arc<Repository>, settings: IndexerSettings) -> Result<Arc<Self>> {
        settings.mapping.validate()?;
        let (index, position) = SearchIndex::open(&settings.dir.join("index"), &settings.mapping)?;
        let consumer = consumer_name(repo.catalog().is_shared(), &settings.dir)?;
        let text_dir = settings.dir.join("text");
        let cache = TextCache::open(&text_dir).map_err(|e| Error::Io(text_dir, e))?;
        let (commands, receiver) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = mpsc::unbounded_channel();
        let counters = Counters::default();
        counters
            .indexed
            .store(position.unwrap_or(0), Ordering::Relaxed);
        Ok(Arc::new(Self {
            index,
            catalog: repo.catalog().clone(),
            repo,
            max_text: settings.extract.max_text_bytes,
            extractor: Extractor::new(settings.extract, settings.program),
            cache,
            child_binaries: settings.child_binaries,
            external_allowed: settings.external_allowed,
            max_commit_interval: settings.max_commit_interval.max(MIN_COMMIT_INTERVAL),
            bulk_merge_documents: settings.bulk_merge_documents,
            counters,
            rebuild: Mutex::new(None),
            failing: Mutex::new(None),
            inflight: Mutex::new(HashMap::new()),
            recent: Mutex::new(HashMap::new()),
            commands,
            receiver: Mutex::new(Some(receiver)),
            ready_tx,
            ready_rx: Mutex::new(Some(ready_rx)),
            start: position,
            consumer,
        }))
    }

    /// The index (for queries).
    pub fn index(&self) -> &SearchIndex {
        &self.index
    }

    /// Where indexing stands.
    pub fn status(&self) -> SearchStatus {
        let indexed = self.counters.indexed.load(Ordering::Relaxed);
        let last_change = *self.catalog.last_change().borrow();
        let c = &self.counters;
        SearchStatus {
            documents: self.index.documents(),
            indexed,
            last_change,
            lag: (last_change - indexed).max(0),
            segments: self.index.segments(),
            merging: self.counters.merging.load(Ordering::Relaxed),
            reindex: self.rebuild.lock().as_ref().map(|(started, p)| {
                let mut p = p.clone();
                if p.running {
                    p.seconds = started.elapsed().as_secs_f64();
                    p.objects_per_second = p.done as f64 / p.seconds.max(1e-9);
                }
                p
            }),
            error: self.failing.lock().clone(),
            extraction: ExtractionCounts {
                extracted: c.extracted.load(Ordering::Relaxed),
                failed: c.failed.load(Ordering::Relaxed),
                cached: c.cached.load(Ordering::Relaxed),
                pending: c.pending.load(Ordering::Relaxed),
                seconds: c.extract_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            },
        }
    }

    /// Asks the live loop for a full rebuild; `false` when one is running already.
    pub fn request_rebuild(&self) -> bool {
        if self.counters.rebuilding.swap(true, Ordering::SeqCst) {
            return false;
        }
        // Running from now on, so that whoever polls the status never sees the last one.
        *self.rebuild.lock() = Some((
            Instant::now(),
            RebuildProgress {
                running: true,
                ..Default::default()
            },
        ));
        let _ = self.commands.send(Command::Rebuild);
        true
    }

    /// Indexes `ids` again now and commits (GSearch's `updateIndex fromPid`); waits for
    /// the live loop to do it.
    pub async fn refresh(&self, ids: Vec<FedoraId>) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        let _ = self.commands.send(Command::Refresh(ids, tx));
        rx.await
            .unwrap_or_else(|_| Err(Error::BadRequest("the indexer has stopped".into())))
    }

    /// Starts the live loop; it stops when `stop` turns true (after its current batch).
    pub fn spawn(self: &Arc<Self>, stop: watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(me.run(stop))
    }

    async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut inputs = LoopInputs {
            commands: self.receiver.lock().take().expect("one live loop"),
            ready: self.ready_rx.lock().take().expect("one live loop"),
            last: self.catalog.last_change(),
        };
        let mut live = LiveState::default();
        let mut pause = RETRY_FIRST;
        loop {
            match self.round(&mut live, &mut inputs, &mut stop).await {
                Ok(Round::Stopped) => return,
                Ok(Round::Done) => {
                    if self.failing.lock().take().is_some() {
                        tracing::info!("the search indexer works again");
                    }
                    pause = RETRY_FIRST;
                }
                Err(e) => {
                    let message = e.to_string();
                    tracing::error!(error = %message, retry_in = ?pause, "the search indexer failed: it tries again");
                    *self.failing.lock() = Some(format!(
                        "{message} (trying again every {} s at most)",
                        RETRY_MAX.as_secs()
                    ));
                    for reply in live.replies.drain(..) {
                        let _ = reply.send(Err(Error::Unavailable(message.clone())));
                    }
                    live.retrying = true;
                    tokio::select! {
                        _ = stop.changed() => {}
                        _ = tokio::time::sleep(pause) => {}
                    }
                    if *stop.borrow() {
                        return;
                    }
                    pause = (pause * 2).min(RETRY_MAX);
                }
            }
        }
    }

    /// Where the live loop starts: the position of the index as opened, or `None` when the
    /// index must be rebuilt (new, built from another catalog, or behind the change log's
    /// retention).
    async fn resume_position(self: &Arc<Self>) -> Result<Option<i64>> {
        let Some(p) = self.start else {
            return Ok(None);
        };
        let first = self.catalog.first_change().await?;
        let epoch = self.catalog.meta(EPOCH_KEY).await?;
        let same_catalog = epoch.is_some_and(|e| e == self.index.epoch());
        if !(same_catalog && (p + 1 >= first || p >= *self.catalog.last_change().borrow())) {
            tracing::warn!("the search index was built from another catalog, or the change log no longer reaches back to its position: rebuilding it");
            return Ok(None);
        }
        if self.index.needs_merge() {
            tracing::info!(
                segments = self.index.segments(),
                "the search index has more segments than its merges leave (a rebuild's merge was cut short by a stop): merging them into one"
            );
            self.merge_in_background();
        }
        Ok(Some(p))
    }

    /// One round of the live loop: waits for work, then indexes one batch of changes (and
    /// the refreshes and texts that came) in one commit. A round that fails changes nothing
    /// it has not committed: the next one does the same work again.
    async fn round(
        self: &Arc<Self>,
        live: &mut LiveState,
        inputs: &mut LoopInputs,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<Round> {
        if !live.started {
            match self.resume_position().await? {
                Some(p) => live.position = p,
                None => live.rebuild = true,
            }
            live.started = true;
        }
        let behind = *inputs.last.borrow_and_update() > live.position;
        let idle = !live.rebuild && !behind && live.refresh.is_empty() && live.replies.is_empty();
        let retrying = std::mem::take(&mut live.retrying);
        if idle && !retrying {
            tokio::select! {
                _ = stop.changed() => {}
                r = inputs.last.changed() => { if r.is_err() { return Ok(Round::Stopped); } }
                Some(cmd) = inputs.commands.recv() => live.take_command(cmd),
                Some(t) = inputs.ready.recv() => live.take_ready(t),
            }
        }
        if *stop.borrow() {
            return Ok(Round::Stopped);
        }
        while let Ok(cmd) = inputs.commands.try_recv() {
            live.take_command(cmd);
        }
        while let Ok(t) = inputs.ready.try_recv() {
            live.take_ready(t);
        }
        if live.rebuild {
            live.position = self.rebuild_now().await?;
            live.rebuild = false;
        }
        if let (true, Some(next)) = (live.replies.is_empty(), live.next_commit) {
            tokio::time::sleep_until(next.into()).await;
        }
        let entries = self.catalog.changes_since(live.position, BATCH).await?;
        let mut targets: BTreeMap<FedoraId, i64> = BTreeMap::new();
        // A fixity check changed nothing to index.
        for e in entries.iter().filter(|e| e.change.kind.changes_resource()) {
            if let Some(t) = target_of(&e.change.id) {
                targets.insert(t, e.seq);
            }
        }
        for id in &live.refresh {
            targets.entry(id.clone()).or_insert(0);
        }
        if targets.is_empty() && entries.is_empty() && live.replies.is_empty() && live.texts_in == 0
        {
            if behind {
                // The log said more was coming but had nothing yet: do not spin.
                tokio::time::sleep(MIN_COMMIT_INTERVAL).await;
            }
            return Ok(Round::Done);
        }
        let mut parents: BTreeSet<FedoraId> = BTreeSet::new();
        for (id, seq) in &targets {
            if let Some(parent) = self.index_one(id, *seq, &mut live.waiting).await? {
                if !targets.contains_key(&parent) {
                    parents.insert(parent);
                }
            }
        }
        let parents_indexed = parents.len();
        for id in parents {
            self.index_one(&id, 0, &mut live.waiting).await?;
        }
        let position = entries.last().map_or(live.position, |e| e.seq);
        // The committed position never passes a change whose text is still coming.
        let safe = live
            .waiting
            .first_key_value()
            .map_or(position, |(seq, _)| (seq - 1).min(position));
        let documents = targets.len() + parents_indexed;
        // Caught up: nothing came into the log while this batch was read and indexed.
        self.count_written(documents, *inputs.last.borrow() <= position);
        let committing = Instant::now();
        self.commit(safe).await?;
        let took = committing.elapsed();
        live.position = position;
        live.refresh.clear();
        live.next_commit =
            Some(committing + commit_pause(took, documents, self.max_commit_interval));
        // Texts that arrived are in this commit: only now are they no longer pending.
        self.counters
            .pending
            .fetch_sub(std::mem::take(&mut live.texts_in), Ordering::Relaxed);
        self.counters.indexed.store(position, Ordering::Relaxed);
        if let Err(e) = self
            .catalog
            .set_consumer_position(&self.consumer, safe)
            .await
        {
            tracing::warn!(error = %e, "cannot record the search index's position");
        }
        for r in live.replies.drain(..) {
            let _ = r.send(Ok(()));
        }
        Ok(Round::Done)
    }

    /// Counts the `documents` the next commit writes; when the loop has `caught_up` with the
    /// change log after a bulk of writes ([`merge::merge_after_bulk`]), has that commit merge
    /// the index into one behind it.
    fn count_written(&self, documents: usize, caught_up: bool) {
        let written = self
            .counters
            .written_since_merge
            .fetch_add(documents as u64, Ordering::Relaxed)
            + documents as u64;
        if caught_up
            && merge::merge_after_bulk(written, self.index.documents(), self.bulk_merge_documents)
        {
            tracing::info!(
                written,
                "the search index has caught up after a bulk of writes: merging it into one segment"
            );
            self.counters
                .written_since_merge
                .store(0, Ordering::Relaxed);
            self.index.merge_all_after_commit();
        }
    }

    /// Commits the index on a blocking thread (a commit syncs files).
    async fn commit(self: &Arc<Self>, seq: i64) -> Result<()> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.index.commit(seq))
            .await
            .unwrap_or_else(|e| Err(Error::BadRequest(format!("the index commit panicked: {e}"))))
    }

    /// Rebuilds the whole index from the catalog and the stored content; returns the
    /// change-log position it reflects. Searches see the old index until it commits.
    pub async fn rebuild_now(self: &Arc<Self>) -> Result<i64> {
        self.counters.rebuilding.store(true, Ordering::SeqCst);
        let result = self.rebuild_inner(|_, _| {}).await;
        if result.is_ok() {
            self.merge_in_background();
        }
        self.counters.rebuilding.store(false, Ordering::SeqCst);
        let mut guard = self.rebuild.lock();
        if let Some((started, p)) = guard.as_mut() {
            p.running = false;
            p.seconds = started.elapsed().as_secs_f64();
            p.objects_per_second = p.done as f64 / p.seconds.max(1e-9);
            if let Err(e) = &result {
                p.error = Some(e.to_string());
            }
        }
        result
    }

    /// As [`rebuild_now`](Self::rebuild_now), telling `progress` (done, total) as it goes,
    /// and returning once the rebuilt index is merged (the offline `arca reindex`).
    pub async fn rebuild_with(self: &Arc<Self>, progress: impl Fn(u64, u64) + Sync) -> Result<i64> {
        let at = self.rebuild_inner(progress).await?;
        let me = self.clone();
        let _ = tokio::task::spawn_blocking(move || me.merge_into_one()).await;
        Ok(at)
    }

    async fn rebuild_inner(self: &Arc<Self>, progress: impl Fn(u64, u64) + Sync) -> Result<i64> {
        let at = *self.catalog.last_change().borrow();
        let total = self.catalog.live_count().await?;
        *self.rebuild.lock() = Some((
            Instant::now(),
            RebuildProgress {
                running: true,
                total,
                ..Default::default()
            },
        ));
        tracing::info!(resources = total, "rebuilding the search index");
        let started = Instant::now();
        // The live loop waits meanwhile and has committed what it added: the writer can
        // change.
        self.index.set_mode(WriterMode::Bulk)?;
        let result = self.rebuild_pages(at, total, started, progress).await;
        if let Err(e) = self.index.set_mode(WriterMode::Live) {
            tracing::error!(error = %e, "cannot set the search index's writer up for the live loop again");
            return Err(e);
        }
        result
    }

    /// Merges the index into one segment (after a rebuild, which leaves several; queries cost
    /// less on one) and shows the result; blocks until done. A failed merge is only logged:
    /// the segments stay as they were.
    fn merge_into_one(&self) {
        if let Some(merging) = self.start_merge() {
            let (segments, started) = (merging.segments, Instant::now());
            self.end_merge(segments, started, merging.wait());
        }
    }

    /// As [`merge_into_one`](Self::merge_into_one), behind the live loop, which goes on
    /// indexing meanwhile. The merge does not keep the indexer (and its index's lock) alive:
    /// a server that stops meanwhile drops it, and tantivy the unfinished segment. A merge
    /// fails when a segment in it loses its last document meanwhile (an update of the only
    /// record in a small segment: tantivy drops empty segments at each commit, and then has
    /// nowhere to put the merge's result); the segments there are then are merged again, up
    /// to [`MERGE_ATTEMPTS`] in all.
    fn merge_in_background(self: &Arc<Self>) {
        let Some(mut merging) = self.start_merge() else {
            return;
        };
        let indexer = Arc::downgrade(self);
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            for attempt in 1..=MERGE_ATTEMPTS {
                let segments = merging.segments;
                let waited = merging.wait();
                let Some(me) = indexer.upgrade() else {
                    return;
                };
                let again = attempt < MERGE_ATTEMPTS && me.index.needs_merge();
                match waited {
                    Err(e) if again => {
                        tracing::warn!(error = %e, attempt, "merging the search index into one segment failed: merging the segments there are now");
                    }
                    waited => return me.end_merge(segments, started, waited),
                }
                match me.start_merge() {
                    Some(next) => merging = next,
                    None => return,
                }
            }
        });
    }

    /// After a merge of `segments` started at `started` has ended (`waited`): searches see
    /// its result, the status no longer says merging, and the log says how it went.
    fn end_merge(&self, segments: usize, started: Instant, waited: Result<()>) {
        let result = waited.and_then(|()| self.index.reload());
        self.counters.merging.store(false, Ordering::Relaxed);
        log_merge(segments, started, result);
    }

    /// Starts merging every segment into one (`None`: nothing to merge, or it could not start,
    /// which is logged).
    fn start_merge(&self) -> Option<Merging> {
        // What was written so far is in the merge (or in the one segment there is).
        self.counters
            .written_since_merge
            .store(0, Ordering::Relaxed);
        let merging = self.index.merge_all().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot merge the rebuilt search index");
            None
        });
        self.counters
            .merging
            .store(merging.is_some(), Ordering::Relaxed);
        merging
    }

    /// The rebuild proper, with the bulk writer.
    async fn rebuild_pages(
        self: &Arc<Self>,
        at: i64,
        total: u64,
        started: Instant,
        progress: impl Fn(u64, u64) + Sync,
    ) -> Result<i64> {
        self.index.clear()?;
        let done = AtomicU64::new(0);
        let mut after: Option<FedoraId> = None;
        let outcome: Result<()> = async {
            loop {
                let mut pages = Vec::new();
                for _ in 0..REBUILD_PARALLEL {
                    let page = self
                        .catalog
                        .live_after(after.as_ref(), REBUILD_PAGE)
                        .await?;
                    let Some(last) = page.last() else { break };
                    after = Some(last.id.clone());
                    pages.push(page);
                }
                if pages.is_empty() {
                    return Ok(());
                }
                let work = pages.into_iter().map(|page| async {
                    for record in page {
                        if target_of(&record.id).as_ref() == Some(&record.id) {
                            self.index_record(&record, None).await?;
                        }
                        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                        if n.is_multiple_of(512) {
                            progress(n, total);
                            if let Some((_, p)) = self.rebuild.lock().as_mut() {
                                p.done = n;
                            }
                        }
                    }
                    Ok::<(), Error>(())
                });
                for r in futures_util::future::join_all(work).await {
                    r?;
                }
            }
        }
        .await;
        if let Err(e) = outcome {
            let _ = self.index.rollback();
            return Err(e);
        }
        // The catalog's generation: kept while the catalog lives (other nodes' indexes
        // built from it stay valid), made anew for a catalog rebuilt from storage.
        let epoch = match self.catalog.meta(EPOCH_KEY).await? {
            Some(epoch) => epoch,
            None => {
                let epoch = unique_id();
                self.catalog.set_meta(EPOCH_KEY, &epoch).await?;
                epoch
            }
        };
        self.index.set_epoch(&epoch);
        self.commit(at).await?;
        let n = done.load(Ordering::Relaxed);
        progress(n, total);
        if let Some((_, p)) = self.rebuild.lock().as_mut() {
            p.done = n;
        }
        self.counters.indexed.store(at, Ordering::Relaxed);
        if let Err(e) = self.catalog.set_consumer_position(&self.consumer, at).await {
            tracing::warn!(error = %e, "cannot record the search index's position");
        }
        let secs = started.elapsed().as_secs_f64();
        tracing::info!(
            resources = n,
            seconds = secs,
            per_second = n as f64 / secs.max(1e-9),
            "search index rebuilt"
        );
        Ok(at)
    }

    /// Indexes (or removes) one resource as the catalog has it now; returns the parent
    /// container to index again when the resource is a binary (its text is in the parent's
    /// `ALL`).
    async fn index_one(
        self: &Arc<Self>,
        id: &FedoraId,
        seq: i64,
        waiting: &mut BTreeMap<i64, usize>,
    ) -> Result<Option<FedoraId>> {
        let record = self.catalog.get(id).await?;
        let Some(record) = record.filter(|r| !r.is_deleted()) else {
            self.index.remove(id.path())?;
            // A binary's description is an item of its own (as in Fedora 7).
            self.index.remove(id.description().path())?;
            // A deleted binary's text leaves its parent.
            return Ok(id.path_parent());
        };
        let binary = record.headers.model() == Some(InteractionModel::NonRdfSource);
        let wanted = self.index_record(&record, Some(seq)).await?;
        if wanted {
            *waiting.entry(seq).or_default() += 1;
        }
        Ok(if binary { record.parent.clone() } else { None })
    }

    /// Builds and stores the document of `record`. With `live` (the sequence number that
    /// asked), a text not extracted yet is asked for and the document stored without it
    /// (returns true); without (a rebuild), the text is waited for and the document added to
    /// the emptied index.
    async fn index_record(
        self: &Arc<Self>,
        record: &ResourceRecord,
        live: Option<i64>,
    ) -> Result<bool> {
        let model = record.headers.model();
        let binary = model == Some(InteractionModel::NonRdfSource);
        let description = if binary {
            self.catalog
                .get(&record.id.description())
                .await?
                .filter(|d| !d.is_deleted())
        } else {
            None
        };
        let triples = match &description {
            Some(desc) => self.repo.triples(desc)?,
            None if binary => Vec::new(),
            None => self.repo.triples(record)?,
        };
        if let Some(desc) = &description {
            self.index_description(record, desc, &triples, live.is_none())?;
        }
        let mut asked = false;
        let text = if binary {
            match self.text_of(record, live).await {
                Text::Ready(t) => Some(t),
                Text::Asked => {
                    asked = true;
                    None
                }
                Text::None => None,
            }
        } else {
            None
        };
        let mut child_texts = Vec::new();
        if model.is_some_and(InteractionModel::is_container) && self.child_binaries > 0 {
            let mut budget = self.max_text;
            let children = self
                .catalog
                .children(&record.id, None, self.child_binaries)
                .await?;
            for child in children {
                let Some(c) = self.catalog.get(&child).await? else {
                    continue;
                };
                if c.headers.model() != Some(InteractionModel::NonRdfSource) {
                    continue;
                }
                // Children's texts are never extracted here: the child's own indexing
                // asks, and refreshes this container when the text is ready.
                if let Some(Ok(t)) = text_key(&c).and_then(|k| self.cache.get(&k)) {
                    if budget == 0 {
                        break;
                    }
                    let t = cut(t, budget);
                    budget -= t.len();
                    child_texts.push(t);
                }
            }
        }
        let types = arca_repository::types_of(record);
        let iri = record.id.iri();
        let parent = record.parent.as_ref().map(FedoraId::path);
        let view = ResourceView {
            path: record.id.path(),
            parent,
            headers: &record.headers,
            types: &types,
            subject: &iri,
            triples: &triples,
            text: text.as_deref(),
            child_texts: &child_texts,
        };
        let doc = document::build(self.index.schema(), &view);
        self.store(record.id.path(), doc, live.is_none())?;
        Ok(asked)
    }

    /// Stores the document of resource `path`: added to the emptied index of a rebuild,
    /// which stores each resource once, else in place of the one there is.
    fn store(&self, path: &str, doc: tantivy::TantivyDocument, rebuild: bool) -> Result<()> {
        if rebuild {
            self.index.add(doc)
        } else {
            self.index.upsert(path, doc)
        }
    }

    /// Stores the document of a binary's description, an item of its own as Fedora 7 indexes
    /// it: the description's header (dates, size of its RDF) and types (its own, and the
    /// `rdf:type`s its `triples` state about the binary), no mapped fields and no text (those
    /// are the binary's document's, so a query in the Lucene syntax finds the binary once).
    fn index_description(
        &self,
        binary: &ResourceRecord,
        desc: &ResourceRecord,
        triples: &[oxrdf::Triple],
        rebuild: bool,
    ) -> Result<()> {
        let mut types = arca_repository::types_of(desc);
        let about = binary.id.iri();
        const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
        for t in triples.iter().filter(|t| t.predicate.as_str() == RDF_TYPE) {
            let own =
                matches!(&t.subject, oxrdf::NamedOrBlankNode::NamedNode(n) if n.as_str() == about);
            if let (true, oxrdf::Term::NamedNode(o)) = (own, &t.object) {
                if !types.iter().any(|have| have == o.as_str()) {
                    types.push(o.as_str().to_string());
                }
            }
        }
        let iri = desc.id.iri();
        let view = ResourceView {
            path: desc.id.path(),
            parent: Some(binary.id.path()),
            headers: &desc.headers,
            types: &types,
            subject: &iri,
            triples: &[],
            text: None,
            child_texts: &[],
        };
        let doc = document::build(self.index.schema(), &view);
        self.store(desc.id.path(), doc, rebuild)
    }

    /// The text of a binary: from the cache, or extracted (waited for in a rebuild, asked
    /// for in the live loop).
    async fn text_of(self: &Arc<Self>, record: &ResourceRecord, live: Option<i64>) -> Text {
        let Some(mime) = record.headers.mime_type.as_deref() else {
            return Text::None;
        };
        if !is_extractable(mime) {
            return Text::None;
        }
        let Some(key) = text_key(record) else {
            return Text::None;
        };
        if let Some(recent) = self.recent.lock().get(&key) {
            return recent.clone().map_or(Text::None, Text::Ready);
        }
        match self.cache.get(&key) {
            Some(Ok(t)) => {
                self.counters.cached.fetch_add(1, Ordering::Relaxed);
                return Text::Ready(t);
            }
            Some(Err(_)) => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                return Text::None;
            }
            None => {}
        }
        match live {
            None => match self.extract_into_cache(record, &key).await {
                Some(t) => Text::Ready(t),
                None => Text::None,
            },
            Some(seq) => {
                let first = {
                    let mut inflight = self.inflight.lock();
                    let waiters = inflight.entry(key.clone()).or_default();
                    waiters.push((record.id.clone(), seq));
                    waiters.len() == 1
                };
                if first {
                    self.counters.pending.fetch_add(1, Ordering::Relaxed);
                    let record = record.clone();
                    let me = self.clone();
                    tokio::spawn(async move {
                        let text = me.extract_into_cache(&record, &key).await;
                        {
                            let mut recent = me.recent.lock();
                            if recent.len() >= RECENT_TEXTS {
                                recent.clear();
                            }
                            recent.insert(key.clone(), text);
                        }
                        let waiters = me.inflight.lock().remove(&key).unwrap_or_default();
                        let _ = me.ready_tx.send(TextReady { waiters });
                    });
                }
                Text::Asked
            }
        }
    }

    /// Extracts a binary's text into the cache (failures that depend only on the content
    /// are cached too; every failure is logged and counted).
    async fn extract_into_cache(&self, record: &ResourceRecord, key: &str) -> Option<String> {
        let path = self.content_file(record).await?;
        let mime = record.headers.mime_type.as_deref().unwrap_or_default();
        let started = Instant::now();
        let result = self
            .extractor
            .extract_cached(&self.cache, key, &path, mime)
            .await;
        self.counters
            .extract_nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        match result {
            Ok(t) => {
                self.counters.extracted.fetch_add(1, Ordering::Relaxed);
                Some(t)
            }
            Err(e) => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(id = %record.id.path(), error = %e, "no text extracted from binary");
                None
            }
        }
    }

    /// A local file holding a binary's bytes: its content file in the root (once
    /// published; a temporary copy of it when the root is remote), or the local file of an
    /// external `file:` binary.
    async fn content_file(&self, record: &ResourceRecord) -> Option<LocalContent> {
        if let Some(url) = &record.headers.external_url {
            let allowed = self.external_allowed.as_ref()?;
            return match allowed.recheck_file(url) {
                Ok(path) => Some(LocalContent::existing(path)),
                Err(e) => {
                    tracing::warn!(id = %record.id.path(), error = %e, "external content not read for its text");
                    None
                }
            };
        }
        match self.repo.local_content(record).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(id = %record.id.path(), error = %e, "cannot read binary for text extraction");
                None
            }
        }
    }
}

enum Text {
    Ready(String),
    Asked,
    None,
}

/// Logs how a merge of the rebuilt index ended.
fn log_merge(segments: usize, started: Instant, result: Result<()>) {
    match result {
        Ok(()) => tracing::info!(
            segments,
            seconds = started.elapsed().as_secs_f64(),
            "the search index is merged into one segment"
        ),
        Err(e) => tracing::warn!(error = %e, "merging the search index into one segment failed"),
    }
}

/// How long after the start of a commit that took `took` and held `documents` the next one
/// may start. A commit costs about the same however few documents it holds (a segment per
/// indexing thread, merged later), so under load commits are spaced to take at most
/// 1/[`COMMIT_SHARE`] of the time, up to `max`; a small batch (a trickle of writes) stretches
/// the pace only in proportion to its size, so a lone write stays searchable quickly.
fn commit_pause(took: Duration, documents: usize, max: Duration) -> Duration {
    let stretched = (took * COMMIT_SHARE).clamp(MIN_COMMIT_INTERVAL, max);
    let share = documents.min(FULL_BATCH) as u32;
    MIN_COMMIT_INTERVAL + (stretched - MIN_COMMIT_INTERVAL) * share / FULL_BATCH as u32
}

/// The resource whose document a change affects: a description's binary, nothing for an
/// ACL, else the resource itself.
fn target_of(id: &FedoraId) -> Option<FedoraId> {
    if id.is_acl() {
        None
    } else if id.is_description() {
        Some(id.base())
    } else {
        Some(id.clone())
    }
}

/// The cache key of a binary's text: its content digest (`sha512:<hex>`, or sha256), or
/// for an external binary without digests a digest of its URL, size and modification time.
fn text_key(record: &ResourceRecord) -> Option<String> {
    let h = &record.headers;
    for d in h.digests.iter().flatten() {
        for (urn, name) in [("urn:sha-512:", "sha512"), ("urn:sha-256:", "sha256")] {
            if let Some(hex) = d.strip_prefix(urn) {
                return Some(format!("{name}:{}", hex.to_ascii_lowercase()));
            }
        }
    }
    let url = h.external_url.as_deref()?;
    let path = file_url_path(url)?;
    // Only a key: the file is read through the allow-list (`Indexer::content_file`).
    let meta = std::fs::metadata(path).ok()?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{url}\n{}\n{mtime}", meta.len()).as_bytes());
    Some(format!("sha256:{}", hex::encode(digest)))
}

/// The path of a `file:` URL (`file:/p`, `file:///p`, `file://localhost/p`).
fn file_url_path(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("file:")?;
    let rest = match rest.strip_prefix("//") {
        Some(r) => r.strip_prefix("localhost").unwrap_or(r),
        None => rest,
    };
    let decoded = percent_encoding::percent_decode_str(rest)
        .decode_utf8()
        .ok()?;
    let p = Path::new(decoded.as_ref());
    p.is_absolute().then(|| p.to_path_buf())
}

fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

impl std::fmt::Debug for Indexer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Indexer")
            .field("indexed", &self.counters.indexed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_are_spaced_by_their_cost_under_load_and_not_for_a_trickle() {
        let ms = Duration::from_millis;
        let max = ms(500);
        // A full batch: ten times the commit's duration, within 100 ms and the most.
        assert_eq!(commit_pause(ms(5), 2_000, max), ms(100));
        assert_eq!(commit_pause(ms(30), 2_000, max), ms(300));
        assert_eq!(commit_pause(ms(200), 64, max), ms(500));
        // A lone write waits about the least, however slow its commit (an fsync on a busy
        // disk is not CPU spent).
        assert!(commit_pause(ms(200), 1, max) < ms(110));
        // In between, in proportion.
        assert_eq!(commit_pause(ms(50), 32, max), ms(300));
        // The most wins over the least when set lower.
        assert_eq!(commit_pause(ms(50), 2_000, ms(100)), ms(100));
    }
}
