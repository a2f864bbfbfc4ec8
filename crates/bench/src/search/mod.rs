//! The `search` scenario: the 2013 GSearch 2.3 sizing study, against `fcr:search`.
//!
//! For each corpus size (`--corpus-records`, default 12,000, when below `--objects`; then
//! `--objects`):
//! 1. **load** (`search-load@N`): the records as containers `search-bench/<run>/<id>` with
//!    their Dublin Core, 75 % with a PDF child (`…/pdf`), from `--clients` writers; records
//!    beyond the corpus are replicas with new ids. A marker resource (`…/loaded-N`) written
//!    after a complete load lets a later run with the same seed and PDF mode skip it. Then
//!    the index status is polled until nothing is left to index and every PDF was extracted:
//!    the catch-up time.
//! 2. **write-to-visible** (`search-visible@N`): one updater alone replaces a record's title
//!    with one carrying a unique token, then queries `TITLE:"<token>"` every 5 ms until the
//!    record is in the answer; the time from the update's answer to that answer is a sample.
//! 3. **the matrix** (`search-q<Q>-<T>t-<U>pct@N`): each of the study's three queries on its
//!    own, at 1, 2 and 3 threads, with 0, 1 and 5 % of the operations updates (one query per
//!    cell, so that each query's figures are its own, as the study reported them per query).
//!    Each cell runs `--duration` after a warm-up of queries; its updates are counted apart
//!    and followed to visibility by one watcher querying all pending tokens at once every
//!    5 ms. The titles keep their words (the token is appended), so the hit counts stay
//!    put; every answer's `totalResults` is kept and compared with the count computed from
//!    the records loaded.
//! 4. **reindex** (`search-reindex@N`): `POST fcr:search/reindex`, the status polled until it
//!    ends; the server's and our own objects/s.
//!
//! A server without arca's search (`fcr:search/status` refused with 400, 404, 405, 409, 410
//! or 501, or answered by Fedora 6's own `fcr:search`) gives one row, not available, with the
//! reason.

pub mod api;
mod markdown;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use markdown::markdown;

use crate::args::{PdfMode, Phase, SearchPlan};
use crate::corpus::{self, Corpus, Pdf, Record};
use crate::driver::{drive, drive_lanes, mix, Ctx, Lane, Limits, Probe, Stop};
use crate::http::{Failure, Target};
use crate::lucene::Query;
use crate::progress::Progress;
use crate::recorder::{Code, Recorder, TxOutcome};
use crate::report::{
    Kind, PhaseConfig, ScenarioReport, SearchCell, SearchDetail, SearchLoad, SearchReindex,
    SearchVisibility, Status,
};
use crate::scenarios::{complete, pid_probe};
use api::{record_segment, Api, Extraction, IndexStatus};

/// The study's three queries.
pub const QUERIES: [&str; 3] = [
    r#"ABSTRACT:"fish""#,
    r#"ABSTRACT:"animal" AND NOT ALL:"university""#,
    r#"(ABSTRACT:"fish" OR FIRSTNAME:"james") AND ALL:"university""#,
];
/// The study's client threads.
pub const THREADS: [usize; 3] = [1, 2, 3];
/// The study's shares of updates among the operations, in percent.
pub const UPDATE_PCTS: [u32; 3] = [0, 1, 5];

/// Results asked for per query (the page).
const PAGE: usize = 10;
/// Pause between two visibility queries.
const POLL: Duration = Duration::from_millis(5);
/// An update not found by a query this long after its answer counts as failed.
pub const VISIBLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Most tokens in one visibility query (keeps its URL under about 4 KB).
const WATCH_BATCH: usize = 100;
/// Pause between two index-status requests.
const STATUS_POLL: Duration = Duration::from_millis(50);
/// Without extraction progress for this long while nothing is left to index, the index
/// counts as caught up even if fewer PDFs were counted than sent.
const EXTRACTION_STALL: Duration = Duration::from_secs(10);

/// One cell of the query matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    /// Index into [`QUERIES`].
    pub query: usize,
    /// Client threads.
    pub threads: usize,
    /// Percent of operations that are updates.
    pub update_pct: u32,
}

impl Cell {
    /// Its row name at corpus size `objects`: `search-q2-3t-5pct@12000`.
    pub fn name(&self, objects: u64) -> String {
        format!(
            "search-q{}-{}t-{}pct@{objects}",
            self.query + 1,
            self.threads,
            self.update_pct
        )
    }
}

/// The cells in the order they run: by share of updates (the read-only cells first, before
/// any update at that size), then query, then threads.
pub fn cells() -> Vec<Cell> {
    let mut out = Vec::new();
    for update_pct in UPDATE_PCTS {
        for query in 0..QUERIES.len() {
            for threads in THREADS {
                out.push(Cell {
                    query,
                    threads,
                    update_pct,
                });
            }
        }
    }
    out
}

/// Whether operation number `ticket` of a cell with `pct` % updates is an update: exactly
/// `pct` of every 100 consecutive tickets, evenly spread.
pub fn is_update(ticket: u64, pct: u32) -> bool {
    let pct = u64::from(pct.min(100));
    (ticket + 1) * pct / 100 != ticket * pct / 100
}

/// Which of the three queries each corpus record matches (`None`: depends on PDF text not
/// known), the records being taken with the PDFs [`corpus::pdf_for`] gives them.
pub fn matches(records: &[Record], seed: u64, pdfs: usize) -> Vec<[Option<bool>; 3]> {
    let queries: Vec<Query> = QUERIES
        .iter()
        .map(|q| Query::parse(q).expect("the study's queries parse"))
        .collect();
    records
        .iter()
        .enumerate()
        .map(|(j, r)| {
            let doc = corpus::doc(r, 0, corpus::pdf_for(j as u64, seed, pdfs).is_some());
            [0, 1, 2].map(|q| queries[q].eval(&doc))
        })
        .collect()
}

/// The hit count of query `q` over the first `objects` records of a run (record `i` is
/// corpus record `i % matches.len()`): `None` if a record it depends on is unknown.
pub fn expected(matches: &[[Option<bool>; 3]], q: usize, objects: u64) -> Option<u64> {
    let base = matches.len() as u64;
    if base == 0 {
        return Some(0);
    }
    let (full, rest) = (objects / base, objects % base);
    let mut n = 0;
    for (j, m) in matches.iter().enumerate() {
        let times = full + u64::from((j as u64) < rest);
        if times == 0 {
            continue;
        }
        match m[q] {
            Some(true) => n += times,
            Some(false) => {}
            None => return None,
        }
    }
    Some(n)
}

/// One invocation's records and where they go.
struct Run {
    api: Api,
    records: Vec<Record>,
    matches: Vec<[Option<bool>; 3]>,
    pdfs: Vec<Pdf>,
    proxy: bool,
    seed: u64,
    /// `{base}search-bench/<run>/`.
    dir: String,
    /// Makes this invocation's tokens unlike any earlier run's.
    nonce: u64,
    tokens: AtomicU64,
}

impl Run {
    fn base(&self) -> u64 {
        self.records.len() as u64
    }

    fn id(&self, i: u64) -> String {
        let (j, k) = corpus::source(i, self.base());
        corpus::record_id(&self.records[j].arxiv_id, k)
    }

    fn url(&self, i: u64) -> String {
        format!("{}{}", self.dir, self.id(i))
    }

    fn pdf(&self, i: u64) -> Option<&Pdf> {
        let (j, _) = corpus::source(i, self.base());
        corpus::pdf_for(j as u64, self.seed, self.pdfs.len()).map(|p| &self.pdfs[p])
    }

    fn marker(&self, objects: u64) -> String {
        format!("{}loaded-{objects}", self.dir)
    }

    /// Records among the first `objects` with a PDF.
    fn with_pdf(&self, objects: u64) -> u64 {
        let base = self.base();
        let per_round = (0..base)
            .filter(|&j| corpus::pdf_for(j, self.seed, self.pdfs.len()).is_some())
            .count() as u64;
        let rest = (0..objects % base)
            .filter(|&j| corpus::pdf_for(j, self.seed, self.pdfs.len()).is_some())
            .count() as u64;
        objects / base * per_round + rest
    }

    /// A word no title has: `xq` and 16 digits (no tokenizer splits it, no stemmer changes it).
    fn token(&self) -> String {
        let n = self.tokens.fetch_add(1, Ordering::Relaxed);
        format!(
            "xq{:016}",
            mix(self.nonce ^ mix(n)) % 10_000_000_000_000_000
        )
    }

    /// Creates (or replaces) record `i` and its PDF.
    async fn load(&self, i: u64) -> TxOutcome {
        let (j, k) = corpus::source(i, self.base());
        let url = self.url(i);
        let mut codes = Vec::with_capacity(2);
        match self
            .api
            .put_turtle(&url, corpus::turtle(&self.records[j], k))
            .await
        {
            Ok(c) => codes.push(c),
            Err(f) => return TxOutcome::failed(f.code, f.message),
        }
        let mut bytes = 0;
        if let Some(pdf) = self.pdf(i) {
            match self
                .api
                .put_pdf(&format!("{url}/pdf"), pdf, self.proxy)
                .await
            {
                Ok(c) => {
                    codes.push(c);
                    if !self.proxy {
                        bytes = pdf.bytes.len() as u64;
                    }
                }
                Err(f) => {
                    codes.push(f.code);
                    return TxOutcome {
                        codes,
                        ok: false,
                        bytes: 0,
                        error: Some(f.message),
                    };
                }
            }
        }
        TxOutcome {
            codes,
            ok: true,
            bytes,
            error: None,
        }
    }

    /// Replaces record `i`'s title by its own followed by `token`.
    async fn update(&self, i: u64, token: &str) -> Result<Code, Failure> {
        let (j, _) = corpus::source(i, self.base());
        let title = format!("{} {token}", self.records[j].title);
        self.api
            .patch(&self.url(i), corpus::title_update(&title))
            .await
    }
}

/// The smallest and largest `totalResults` of a cell.
#[derive(Debug)]
struct HitRange {
    min: AtomicU64,
    max: AtomicU64,
}

impl Default for HitRange {
    fn default() -> Self {
        HitRange {
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
        }
    }
}

impl HitRange {
    fn note(&self, n: u64) {
        self.min.fetch_min(n, Ordering::Relaxed);
        self.max.fetch_max(n, Ordering::Relaxed);
    }

    fn get(&self) -> (Option<u64>, Option<u64>) {
        match self.min.load(Ordering::Relaxed) {
            u64::MAX => (None, None),
            min => (Some(min), Some(self.max.load(Ordering::Relaxed))),
        }
    }
}

/// An update waiting to be found.
struct Waiting {
    seq: u64,
    token: String,
    /// When its answer came (`None` while it is in flight).
    written: Option<Instant>,
}

/// The updates of a cell not yet found by a query, by record id, and the samples so far.
struct Watch {
    pending: Mutex<(HashMap<String, Waiting>, u64)>,
    stop: AtomicBool,
    rec: Mutex<Recorder>,
}

impl Watch {
    fn new(start: Instant) -> Watch {
        Watch {
            pending: Mutex::new((HashMap::new(), 0)),
            stop: AtomicBool::new(false),
            rec: Mutex::new(Recorder::new(start)),
        }
    }

    /// Claims record `id` for an update with `token`; false if it has one pending.
    fn reserve(&self, id: &str, token: &str) -> bool {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if p.0.contains_key(id) {
            return false;
        }
        p.1 += 1;
        let seq = p.1;
        p.0.insert(
            id.to_string(),
            Waiting {
                seq,
                token: token.to_string(),
                written: None,
            },
        );
        true
    }

    fn written(&self, id: &str, at: Instant) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = p.0.get_mut(id) {
            w.written = Some(at);
        }
    }

    fn cancel(&self, id: &str) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.0.remove(id);
    }

    fn sample(&self, at: Instant, since: Instant, out: TxOutcome) {
        if let Ok(mut r) = self.rec.lock() {
            r.record(at, at.saturating_duration_since(since), &out);
        }
    }

    /// No more updates: forget those that never got an answer; the watcher ends once the
    /// rest are found or timed out.
    fn finish(&self) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.0.retain(|_, w| w.written.is_some());
        self.stop.store(true, Ordering::SeqCst);
    }

    /// The oldest written updates (at most [`WATCH_BATCH`]), after recording those waiting
    /// longer than [`VISIBLE_TIMEOUT`] as failed; `None` when the watcher may end.
    fn batch(&self, now: Instant) -> Option<Vec<(String, String, Instant)>> {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let expired: Vec<String> =
            p.0.iter()
                .filter(|(_, w)| w.written.is_some_and(|t| now - t > VISIBLE_TIMEOUT))
                .map(|(id, _)| id.clone())
                .collect();
        for id in expired {
            if let Some(w) = p.0.remove(&id) {
                self.sample(
                    now,
                    w.written.unwrap_or(now),
                    TxOutcome::failed(
                        Code::Timeout,
                        format!(
                            "the update of {id} was not found by TITLE:\"{}\" within {:?}",
                            w.token, VISIBLE_TIMEOUT
                        ),
                    ),
                );
            }
        }
        if p.0.is_empty() && self.stop.load(Ordering::SeqCst) {
            return None;
        }
        let mut ready: Vec<(u64, String, String, Instant)> =
            p.0.iter()
                .filter_map(|(id, w)| Some((w.seq, id.clone(), w.token.clone(), w.written?)))
                .collect();
        ready.sort();
        Some(
            ready
                .into_iter()
                .take(WATCH_BATCH)
                .map(|(_, id, token, at)| (id, token, at))
                .collect(),
        )
    }

    /// Records the batch's updates that `found` (search results) contains.
    fn found(&self, batch: &[(String, String, Instant)], found: &[api::Item], at: Instant) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        for item in found {
            let id = record_segment(&item.fedora_id);
            let Some((_, token, written)) = batch.iter().find(|(b, _, _)| b == id) else {
                continue;
            };
            if p.0.get(id).is_some_and(|w| &w.token == token) {
                p.0.remove(id);
                self.sample(at, *written, TxOutcome::succeeded(Code::Status(200), 0));
            }
        }
    }
}

/// The `TITLE` query finding any of `tokens`.
fn token_query<'a>(tokens: impl Iterator<Item = &'a str>) -> String {
    tokens
        .map(|t| format!("TITLE:\"{t}\""))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// Follows a cell's updates until each is found by a query (all pending tokens in one query
/// every [`POLL`]) or times out.
async fn watch_loop(api: Api, watch: Arc<Watch>, interrupt: crate::spawn::Interrupt) {
    while !interrupt.is_set() {
        let Some(batch) = watch.batch(Instant::now()) else {
            break;
        };
        if !batch.is_empty() {
            let q = token_query(batch.iter().map(|(_, t, _)| t.as_str()));
            if let Ok((_, hits, _)) = api.query(&api.query_url(&q, batch.len())).await {
                watch.found(&batch, &hits.items, Instant::now());
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

fn row(phase: &Phase, name: &str, clients: usize, objects: u64) -> ScenarioReport {
    ScenarioReport::new(
        name,
        phase.scenario,
        Kind::Search,
        PhaseConfig {
            clients,
            duration_s: phase.duration.map(|d| d.as_secs_f64()),
            count: phase.count,
            objects: Some(objects),
            ..Default::default()
        },
    )
}

fn stopped(phase: &Phase, name: &str, status: Status, note: String) -> ScenarioReport {
    let mut r = ScenarioReport::new(
        name,
        phase.scenario,
        Kind::Search,
        PhaseConfig {
            clients: phase.clients,
            ..Default::default()
        },
    );
    r.status = status;
    r.note = Some(note);
    r
}

/// Runs the search scenario, handing each row to `emit` as soon as it is measured.
pub async fn search(
    ctx: &Ctx,
    phase: &Phase,
    target: Arc<Target>,
    emit: &mut dyn FnMut(ScenarioReport),
) {
    let Some(plan) = phase.search.clone() else {
        return;
    };
    let api = Api { target };
    match api.probe().await {
        Err(reason) => {
            return emit(stopped(
                phase,
                &phase.name,
                Status::NotAvailable,
                format!("not available: {reason}; nothing was measured"),
            ))
        }
        Ok(Err(f)) => {
            return emit(stopped(
                phase,
                &phase.name,
                Status::Aborted,
                format!("could not reach the search API: {}", f.message),
            ))
        }
        Ok(Ok(())) => {}
    }
    let run = match prepare(ctx, &plan, api).await {
        Ok(r) => Arc::new(r),
        Err(e) => {
            return emit(stopped(
                phase,
                &phase.name,
                Status::Aborted,
                format!("{e:#}"),
            ))
        }
    };
    for &objects in &plan.sizes {
        let (row, go_on) = load(ctx, phase, &plan, &run, objects).await;
        emit(row);
        if !go_on || ctx.interrupt.is_set() {
            return;
        }
        emit(visibility(ctx, phase, &plan, &run, objects).await);
        for cell in cells() {
            if ctx.interrupt.is_set() {
                return;
            }
            emit(measure_cell(ctx, phase, &plan, &run, objects, cell).await);
        }
        if ctx.interrupt.is_set() {
            return;
        }
        emit(reindex(ctx, phase, &run, objects).await);
    }
}

/// Reads the corpus, computes the expected matches, creates the run's containers.
async fn prepare(ctx: &Ctx, plan: &SearchPlan, api: Api) -> anyhow::Result<Run> {
    use anyhow::Context as _;
    let proxy = plan.pdf_mode == PdfMode::Proxy;
    let largest = plan.sizes.iter().copied().max().unwrap_or(1);
    let limit = plan.corpus_records.min(largest) as usize;
    let dir = plan.corpus.clone();
    let seed = ctx.seed;
    let (corpus, records, matches) = tokio::task::spawn_blocking(move || {
        let corpus = Corpus::open(&dir, !proxy).with_context(|| {
            format!(
                "the search corpus (give --corpus DIR or ARCA_BENCH_CORPUS): {}",
                dir.display()
            )
        })?;
        let records = corpus::read_records(&corpus.records, limit)?;
        anyhow::ensure!(
            !records.is_empty(),
            "no records in {}",
            corpus.records.display()
        );
        let matches = matches(&records, seed, corpus.pdfs.len());
        anyhow::Ok((corpus, records, matches))
    })
    .await
    .context("reading the corpus")??;
    let root = format!("{}search-bench", api.target.base());
    let dir = format!("{root}/s{}-{}", ctx.seed, plan.pdf_mode.name());
    for url in [&root, &dir] {
        api.ensure_container(url)
            .await
            .map_err(|f| anyhow::anyhow!("creating {url}: {}", f.message))?;
    }
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    Ok(Run {
        api,
        records,
        matches,
        pdfs: corpus.pdfs,
        proxy,
        seed,
        dir: format!("{dir}/"),
        nonce: mix(nonce ^ u64::from(std::process::id())),
        tokens: AtomicU64::new(0),
    })
}

/// Loads the records up to `objects` (unless a marker says they are there) and waits for the
/// index; the row, and whether to go on.
async fn load(
    ctx: &Ctx,
    phase: &Phase,
    plan: &SearchPlan,
    run: &Arc<Run>,
    objects: u64,
) -> (ScenarioReport, bool) {
    let name = format!("search-load@{objects}");
    let mut row = row(phase, &name, phase.clients, objects);
    row.config.duration_s = None;
    row.config.count = None;
    let mut present = 0;
    for &size in plan.sizes.iter().filter(|&&s| s <= objects).rev() {
        match run.api.exists(&run.marker(size)).await {
            Ok(true) => {
                present = size;
                break;
            }
            Ok(false) => {}
            Err(f) => {
                row.status = Status::Aborted;
                row.note = Some(format!("could not look for the load marker: {}", f.message));
                return (row, false);
            }
        }
    }
    let before = run.api.status().await.ok().and_then(|s| s.extraction);
    let pdfs_sent = Arc::new(AtomicU64::new(0));
    let loaded = objects - present;
    let caught;
    if loaded > 0 {
        let probe = Probe::start(pid_probe(ctx), ctx.data_dir.clone()).await;
        let limits = Limits {
            clients: phase.clients,
            duration: None,
            count: Some(loaded),
        };
        let r = run.clone();
        let sent = pdfs_sent.clone();
        let d = drive(ctx, &name, limits, move |t| {
            let r = r.clone();
            let sent = sent.clone();
            async move {
                let out = r.load(present + t).await;
                if out.ok && out.codes.len() == 2 {
                    sent.fetch_add(1, Ordering::Relaxed);
                }
                out
            }
        })
        .await;
        let load_end = Instant::now();
        if d.stop != Stop::Done || ctx.interrupt.is_set() {
            complete(&mut row, &d, probe, true).await;
            return (row, false);
        }
        // The index is watched while the probe measures the disk (which may take a while).
        let limit = catch_up_limit(d.elapsed);
        let sent = pdfs_sent.load(Ordering::Relaxed);
        let ((), c) = tokio::join!(
            complete(&mut row, &d, probe, true),
            catch_up(ctx, &run.api, before, sent, load_end, limit)
        );
        caught = c;
        if row.summary.errors == 0 {
            if let Err(f) = run
                .api
                .put_turtle(&run.marker(objects), String::new())
                .await
            {
                row.note = Some(format!("the load marker was not written: {}", f.message));
            }
        } else {
            row.note = Some(format!(
                "{} of {loaded} records failed to load: the expected hit counts are too high \
                 by what they held; no load marker was written",
                row.summary.errors
            ));
        }
    } else {
        row.note = Some(format!(
            "already loaded: {} found, nothing sent",
            run.marker(present)
        ));
        let limit = catch_up_limit(Duration::ZERO);
        caught = catch_up(ctx, &run.api, before, 0, Instant::now(), limit).await;
    }
    if let Some(n) = caught.note {
        row.note = Some(match row.note.take() {
            Some(m) => format!("{m}; {n}"),
            None => n,
        });
    }
    row.search = Some(SearchDetail::Load(SearchLoad {
        objects,
        present_before: present,
        loaded,
        with_pdf: run.with_pdf(objects),
        pdf_mode: if run.proxy { "proxy" } else { "copy" }.into(),
        catch_up_s: caught.seconds,
        documents: caught.status.as_ref().map(|s| s.documents),
        extraction: caught.extraction,
    }));
    (row, !ctx.interrupt.is_set())
}

/// How long to wait for the index after a load of `took`: ten times as long, at least 10
/// minutes.
fn catch_up_limit(took: Duration) -> Duration {
    Duration::from_secs(600).max(took * 10)
}

/// How the index caught up after a load.
struct CatchUp {
    seconds: Option<f64>,
    status: Option<IndexStatus>,
    extraction: Option<[u64; 3]>,
    note: Option<String>,
}

/// Polls the index status until nothing is left to index and `pdfs` more binaries were
/// extracted (or counted failed or cached) than `before`, or until `limit`.
async fn catch_up(
    ctx: &Ctx,
    api: &Api,
    before: Option<Extraction>,
    pdfs: u64,
    since: Instant,
    limit: Duration,
) -> CatchUp {
    let delta = |e: Option<Extraction>| {
        e.map(|e| {
            let b = before.unwrap_or_default();
            [
                e.extracted.saturating_sub(b.extracted),
                e.failed.saturating_sub(b.failed),
                e.cached.saturating_sub(b.cached),
            ]
        })
    };
    let mut last = None;
    let mut last_total = None;
    let mut changed = Instant::now();
    let mut error = None;
    loop {
        let now = Instant::now();
        match api.status().await {
            Ok(s) => {
                let counted = delta(s.extraction).map(|d| d.iter().sum::<u64>());
                if counted != last_total {
                    last_total = counted;
                    changed = now;
                }
                let extracted = counted.is_none_or(|n| n >= pdfs);
                let stalled = now - changed >= EXTRACTION_STALL;
                if s.lag == 0 && (extracted || stalled) {
                    let note = (!extracted).then(|| {
                        format!(
                            "the index status counted {} of the {pdfs} PDFs sent as extracted, \
                             failed or cached; caught up when that count last changed",
                            counted.unwrap_or(0)
                        )
                    });
                    let at = if extracted { now } else { changed.max(since) };
                    return CatchUp {
                        seconds: Some(at.saturating_duration_since(since).as_secs_f64()),
                        extraction: delta(s.extraction),
                        status: Some(s),
                        note,
                    };
                }
                last = Some(s);
            }
            Err(f) => error = Some(f.message),
        }
        if ctx.interrupt.is_set() || now - since > limit {
            return CatchUp {
                seconds: None,
                extraction: delta(last.as_ref().and_then(|s| s.extraction)),
                note: Some(format!(
                    "the index had not caught up {:.0} s after the load (lag {}){}; measured anyway",
                    (now - since).as_secs_f64(),
                    last.as_ref().map_or("unknown".into(), |s| s.lag.to_string()),
                    error.map(|e| format!(", last status error: {e}")).unwrap_or_default()
                )),
                status: last,
            };
        }
        tokio::time::sleep(STATUS_POLL).await;
    }
}

/// One updater alone: update, then query the token every [`POLL`] until found.
async fn visibility(
    ctx: &Ctx,
    phase: &Phase,
    plan: &SearchPlan,
    run: &Arc<Run>,
    objects: u64,
) -> ScenarioReport {
    let name = format!("search-visible@{objects}");
    let mut row = row(phase, &name, 1, objects);
    let cell = phase.duration.unwrap_or(Duration::from_secs(20));
    let budget = (cell * 3).max(Duration::from_secs(10));
    row.config.duration_s = Some(budget.as_secs_f64());
    row.config.count = Some(plan.visibility_samples);
    let probe = Probe::start(pid_probe(ctx), None).await;
    let start = Instant::now();
    let rec = Arc::new(Mutex::new(Recorder::new(start)));
    let mut writes = Recorder::new(start);
    let progress = Progress::start(
        ctx.bar,
        &name,
        None,
        Some(plan.visibility_samples),
        rec.clone(),
    );
    for n in 0..plan.visibility_samples {
        if ctx.interrupt.is_set() || start.elapsed() >= budget {
            break;
        }
        let i = mix(ctx.seed ^ 0x7669_7369 ^ mix(n)) % objects;
        let id = run.id(i);
        let token = run.token();
        let t0 = Instant::now();
        let written = run.update(i, &token).await;
        let t_w = Instant::now();
        match written {
            Ok(code) => writes.record(t_w, t_w - t0, &TxOutcome::succeeded(code, 0)),
            Err(f) => {
                writes.record(t_w, t_w - t0, &TxOutcome::failed(f.code, f.message));
                continue;
            }
        }
        let url = run
            .api
            .query_url(&token_query(std::iter::once(token.as_str())), PAGE);
        let mut last_error = None;
        loop {
            let answer = run.api.query(&url).await;
            let at = Instant::now();
            match answer {
                Ok((_, hits, _))
                    if hits
                        .items
                        .iter()
                        .any(|it| record_segment(&it.fedora_id) == id) =>
                {
                    if let Ok(mut r) = rec.lock() {
                        r.record(at, at - t_w, &TxOutcome::succeeded(Code::Status(200), 0));
                    }
                    break;
                }
                Ok(_) => {}
                Err(f) => last_error = Some(f),
            }
            if at - t_w > VISIBLE_TIMEOUT || ctx.interrupt.is_set() {
                let (code, why) = match last_error {
                    Some(f) => (f.code, format!("; the last query failed: {}", f.message)),
                    None => (Code::Timeout, String::new()),
                };
                if let Ok(mut r) = rec.lock() {
                    r.record(
                        at,
                        at - t_w,
                        &TxOutcome::failed(
                            code,
                            format!(
                                "the update of {id} was not found by TITLE:\"{token}\" within \
                                 {:?}{why}",
                                at - t_w
                            ),
                        ),
                    );
                }
                break;
            }
            tokio::time::sleep(POLL).await;
        }
    }
    let elapsed = start.elapsed();
    progress.finish().await;
    row.elapsed_s = elapsed.as_secs_f64();
    row.summary = rec.lock().map(|r| r.summary(elapsed)).unwrap_or_default();
    let (server, loadgen, _) = probe.finish(row.summary.transactions, 0).await;
    row.server = server;
    row.loadgen = Some(loadgen);
    if ctx.interrupt.is_set() {
        row.status = Status::Interrupted;
    }
    row.search = Some(SearchDetail::Visibility(SearchVisibility {
        objects,
        writes: (&writes.summary(elapsed)).into(),
    }));
    row
}

/// One query GET, its hit count noted.
async fn query_tx(api: &Api, url: &str, hits: &HitRange) -> TxOutcome {
    match api.query(url).await {
        Ok((code, h, n)) => {
            hits.note(h.pagination.total_results);
            TxOutcome::succeeded(code, n)
        }
        Err(f) => TxOutcome::failed(f.code, f.message),
    }
}

/// One mixed-in update: a record without a pending update (waiting when the corpus is so
/// small that all are), its title updated, handed to the watcher.
async fn mixed_update(run: &Run, watch: &Watch, objects: u64, ticket: u64) -> TxOutcome {
    let token = run.token();
    let start = mix(run.seed ^ 0x7570_6461 ^ mix(ticket)) % objects;
    let deadline = Instant::now() + VISIBLE_TIMEOUT;
    let (i, id) = 'pick: loop {
        for k in 0..objects.min(1000) {
            let i = (start + k) % objects;
            let id = run.id(i);
            if watch.reserve(&id, &token) {
                break 'pick (i, id);
            }
        }
        if Instant::now() > deadline {
            return TxOutcome::failed(
                Code::Timeout,
                "no record without a pending update to update".into(),
            );
        }
        tokio::time::sleep(POLL).await;
    };
    match run.update(i, &token).await {
        Ok(code) => {
            watch.written(&id, Instant::now());
            TxOutcome::succeeded(code, 0)
        }
        Err(f) => {
            watch.cancel(&id);
            TxOutcome::failed(f.code, f.message)
        }
    }
}

/// One cell: a warm-up of queries, then the measured queries with updates mixed in.
async fn measure_cell(
    ctx: &Ctx,
    phase: &Phase,
    plan: &SearchPlan,
    run: &Arc<Run>,
    objects: u64,
    cell: Cell,
) -> ScenarioReport {
    let name = cell.name(objects);
    let mut row = row(phase, &name, cell.threads, objects);
    let url = Arc::new(run.api.query_url(QUERIES[cell.query], PAGE));
    let query_op = |hits: Arc<HitRange>| {
        let run = run.clone();
        let url = url.clone();
        move |_| {
            let run = run.clone();
            let url = url.clone();
            let hits = hits.clone();
            async move { query_tx(&run.api, &url, &hits).await }
        }
    };
    if !plan.warm_up.is_zero() {
        let limits = Limits {
            clients: cell.threads,
            duration: Some(plan.warm_up),
            count: None,
        };
        let warm = format!("{name} (warm-up)");
        drive(ctx, &warm, limits, query_op(Arc::new(HitRange::default()))).await;
        if ctx.interrupt.is_set() {
            row.status = Status::Interrupted;
            return row;
        }
    }
    let hits = Arc::new(HitRange::default());
    let watch = Arc::new(Watch::new(Instant::now()));
    let watcher = (cell.update_pct > 0).then(|| {
        tokio::spawn(watch_loop(
            run.api.clone(),
            watch.clone(),
            ctx.interrupt.clone(),
        ))
    });
    let probe = Probe::start(pid_probe(ctx), None).await;
    let limits = Limits {
        clients: cell.threads,
        duration: phase.duration,
        count: phase.count,
    };
    let pct = cell.update_pct;
    let (r, w, h, u) = (run.clone(), watch.clone(), hits.clone(), url.clone());
    let d = drive_lanes(ctx, &name, limits, move |t| {
        let (run, watch, hits, url) = (r.clone(), w.clone(), h.clone(), u.clone());
        async move {
            if is_update(t, pct) {
                (Lane::Side, mixed_update(&run, &watch, objects, t).await)
            } else {
                (Lane::Main, query_tx(&run.api, &url, &hits).await)
            }
        }
    })
    .await;
    watch.finish();
    if let Some(w) = watcher {
        let _ = w.await;
    }
    complete(&mut row, &d, probe, false).await;
    let (hits_min, hits_max) = hits.get();
    let expected = expected(&run.matches, cell.query, objects);
    let mut notes: Vec<String> = row.note.take().into_iter().collect();
    if hits_min != hits_max {
        notes.push(format!(
            "unstable hit count: totalResults from {} to {}",
            hits_min.unwrap_or(0),
            hits_max.unwrap_or(0)
        ));
    }
    if let (Some(e), Some(h)) = (expected, hits_max) {
        if e != h {
            notes.push(format!(
                "{h} hits where the records loaded give {e} (plain tokens; a stemming analyzer \
                 finds more)"
            ));
        }
    }
    row.note = (!notes.is_empty()).then(|| notes.join("; "));
    let elapsed = d.elapsed;
    row.search = Some(SearchDetail::Cell(Box::new(SearchCell {
        objects,
        query_no: cell.query + 1,
        query: QUERIES[cell.query].into(),
        threads: cell.threads,
        update_pct: pct,
        hits_min,
        hits_max,
        expected,
        updates: (pct > 0).then(|| (&d.side.summary(elapsed)).into()),
        visibility: (pct > 0).then(|| {
            watch
                .rec
                .lock()
                .map(|r| (&r.summary(elapsed)).into())
                .unwrap_or_default()
        }),
    })));
    row
}

/// A full reindex, timed by the server and by polling its status.
async fn reindex(ctx: &Ctx, phase: &Phase, run: &Run, objects: u64) -> ScenarioReport {
    let name = format!("search-reindex@{objects}");
    let mut row = row(phase, &name, 1, objects);
    row.config.duration_s = None;
    row.config.count = None;
    let probe = Probe::start(pid_probe(ctx), None).await;
    let start = Instant::now();
    let mut rec = Recorder::new(start);
    let limit = Duration::from_secs(600).max(Duration::from_secs(objects / 20));
    let fail = |row: &mut ScenarioReport, rec: &mut Recorder, f: Failure| {
        let now = Instant::now();
        rec.record(now, now - start, &TxOutcome::failed(f.code, f.message));
        row.summary = rec.summary(now - start);
        row.elapsed_s = (now - start).as_secs_f64();
    };
    let before = run.api.status().await.ok().and_then(|s| s.reindex);
    let live_hits = hit_counts(&run.api).await;
    // 409: one is running already; wait for it to end, then ask again (once).
    let mut accepted = None;
    for attempt in 0..2 {
        match run.api.reindex().await {
            Ok(409) if attempt == 0 => {
                let _ = wait_reindex(ctx, &run.api, None, Instant::now(), limit).await;
            }
            Ok(409) => {}
            Ok(code) => {
                accepted = Some((code, Instant::now()));
                break;
            }
            Err(f) => {
                fail(&mut row, &mut rec, f);
                return row;
            }
        }
    }
    let Some((code, t_accepted)) = accepted else {
        fail(
            &mut row,
            &mut rec,
            Failure {
                code: Code::Status(409),
                message: "POST fcr:search/reindex: 409 twice (a reindex was running)".into(),
            },
        );
        return row;
    };
    let (done, last) = wait_reindex(ctx, &run.api, before, t_accepted, limit).await;
    let now = Instant::now();
    match done {
        Some(t_done) => rec.record(
            t_done,
            t_done - start,
            &TxOutcome::succeeded(Code::Status(code), 0),
        ),
        None if ctx.interrupt.is_set() => row.status = Status::Interrupted,
        None => rec.record(
            now,
            now - start,
            &TxOutcome::failed(
                Code::Timeout,
                format!("the reindex had not ended after {limit:?}"),
            ),
        ),
    }
    let elapsed = done.unwrap_or(now) - start;
    if done.is_some() {
        // The rebuilt index must answer what the live one did (a rebuild that lost the
        // PDFs' text would find fewer).
        let rebuilt = hit_counts(&run.api).await;
        let mut notes = Vec::new();
        for (q, (before, after)) in live_hits.iter().zip(&rebuilt).enumerate() {
            let message = format!(
                "q{}: {} hits before the reindex, {} after",
                q + 1,
                count_text(*before),
                count_text(*after)
            );
            if before != after {
                let t = Instant::now();
                rec.record(
                    t,
                    t - start,
                    &TxOutcome::failed(Code::BadAnswer, message.clone()),
                );
            }
            notes.push(message);
        }
        row.note = Some(notes.join("; "));
    }
    row.elapsed_s = elapsed.as_secs_f64();
    row.summary = rec.summary(elapsed);
    let (server, loadgen, _) = probe.finish(1, 0).await;
    row.server = server;
    row.loadgen = Some(loadgen);
    let client_seconds = (done.unwrap_or(now) - t_accepted).as_secs_f64();
    let documents = last.as_ref().map(|r| r.done);
    row.search = Some(SearchDetail::Reindex(SearchReindex {
        objects,
        documents,
        total: last.as_ref().map(|r| r.total),
        server_seconds: last.as_ref().map(|r| r.seconds),
        server_objects_per_s: last.as_ref().map(|r| r.objects_per_second),
        client_seconds,
        client_objects_per_s: documents
            .filter(|_| done.is_some() && client_seconds > 0.0)
            .map(|n| n as f64 / client_seconds),
    }));
    row
}

/// The hit counts of the study's queries (`None` where a query failed).
async fn hit_counts(api: &Api) -> Vec<Option<u64>> {
    let mut counts = Vec::new();
    for query in QUERIES {
        let hits = api.query(&api.query_url(query, 1)).await.ok();
        counts.push(hits.map(|(_, h, _)| h.pagination.total_results));
    }
    counts
}

fn count_text(n: Option<u64>) -> String {
    n.map_or_else(|| "no answer".to_string(), |n| n.to_string())
}

/// Polls the status until a reindex (other than `before`, when given) is seen ended: when it
/// ended (by our clock, to [`STATUS_POLL`]) and its last figures; `None` at `limit` or Ctrl-C.
async fn wait_reindex(
    ctx: &Ctx,
    api: &Api,
    before: Option<api::ReindexStatus>,
    since: Instant,
    limit: Duration,
) -> (Option<Instant>, Option<api::ReindexStatus>) {
    let mut seen_running = false;
    let mut last = None;
    loop {
        let now = Instant::now();
        if let Ok(s) = api.status().await {
            if let Some(r) = s.reindex {
                if r.running {
                    seen_running = true;
                } else if seen_running || Some(&r) != before.as_ref() {
                    return (Some(now), Some(r));
                }
                last = Some(r);
            } else if before.is_none() && !seen_running && now - since > Duration::from_secs(5) {
                // A server that keeps no record of a finished reindex.
                return (Some(now), None);
            }
        }
        if ctx.interrupt.is_set() || now - since > limit {
            return (None, last);
        }
        tokio::time::sleep(STATUS_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_is_the_studys() {
        let c = cells();
        assert_eq!(c.len(), 27);
        // Read-only cells first, each query at 1, 2, 3 threads.
        assert!(c[..9].iter().all(|c| c.update_pct == 0));
        assert!(c[18..].iter().all(|c| c.update_pct == 5));
        assert_eq!(
            c[..3].iter().map(|c| c.threads).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        let distinct: std::collections::HashSet<String> =
            c.iter().map(|c| c.name(12_000)).collect();
        assert_eq!(distinct.len(), 27);
        assert_eq!(c[23].name(120_000), "search-q2-3t-5pct@120000");
    }

    #[test]
    fn updates_are_an_exact_share() {
        for pct in [0, 1, 5, 50, 100] {
            let n = (0..10_000).filter(|&t| is_update(t, pct)).count();
            assert_eq!(n, 100 * pct as usize, "{pct}");
        }
        // 5 %: one in every 20, never two in a row.
        let at: Vec<u64> = (0..100).filter(|&t| is_update(t, 5)).collect();
        assert_eq!(at, [19, 39, 59, 79, 99]);
    }

    #[test]
    fn sizes_follow_the_study() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            args: crate::BenchArgs,
        }
        let plan = |line: &str| {
            let a = Cli::parse_from(line.split_whitespace()).args;
            a.validate().unwrap();
            let p = a.phases().remove(0);
            (p.clone(), p.search.unwrap())
        };
        let (p, s) = plan("b search");
        assert_eq!(s.sizes, [12_000]);
        assert_eq!(p.duration, Some(Duration::from_secs(20)));
        assert_eq!(s.warm_up, Duration::from_secs(5));
        assert_eq!(p.clients, 16);
        assert_eq!(s.pdf_mode, PdfMode::Copy);
        assert!(p.raw.is_empty());
        let (_, s) = plan("b search --objects 120000 --pdf-mode proxy");
        assert_eq!(s.sizes, [12_000, 120_000]);
        assert_eq!(s.pdf_mode, PdfMode::Proxy);
        let (p, s) = plan("b search --quick --count 3");
        assert_eq!(s.sizes, [120]);
        assert_eq!(p.objects, 120);
        assert_eq!(p.count, Some(3));
        assert_eq!(s.warm_up, Duration::from_millis(500));
        assert_eq!(s.visibility_samples, 10);
        let (_, s) = plan("b search --objects 50 --corpus-records 20 --corpus /c");
        assert_eq!(s.sizes, [20, 50]);
        assert_eq!(s.corpus, std::path::PathBuf::from("/c"));
    }

    fn rec(abs: &str, first: &str, comment: Option<&str>) -> Record {
        Record {
            id: "arxiv:1".into(),
            arxiv_id: "1".into(),
            title: "T".into(),
            abstract_: abs.into(),
            creators: vec![corpus::Creator {
                first: first.into(),
                last: "L".into(),
            }],
            date: "2025-01-01".into(),
            comment: comment.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn expected_counts_follow_the_pdfs_and_replicas() {
        // Four records: one block, so one of them (chosen by the seed) has no PDF.
        let records = vec![
            rec("Fish swim.", "Ann", None),
            rec("An animal.", "James", None),
            rec("An animal.", "Bob", Some("University of Nowhere")),
            rec("Nothing.", "James", None),
        ];
        for seed in 0..8 {
            let m = matches(&records, seed, 7);
            let no_pdf = (0..4)
                .find(|&j| corpus::pdf_for(j, seed, 7).is_none())
                .unwrap() as usize;
            let has = |j: usize| j != no_pdf;
            // q1: fish in the abstract.
            assert_eq!(expected(&m, 0, 4), Some(1));
            // q2: animal and no "university" anywhere (a PDF has it).
            let q2 = usize::from(!has(1));
            assert_eq!(expected(&m, 1, 4), Some(q2 as u64), "seed {seed}");
            // q3: (fish or James) and university (from the PDF, or record 2's comment).
            let q3 = [0, 1, 3].iter().filter(|&&j| has(j)).count();
            assert_eq!(expected(&m, 2, 4), Some(q3 as u64), "seed {seed}");
            // Replicas count again; a partial round counts its first records.
            assert_eq!(expected(&m, 0, 40), Some(10));
            assert_eq!(expected(&m, 0, 5), Some(2));
            assert_eq!(expected(&m, 0, 0), Some(0));
        }
    }

    #[test]
    fn the_watch_pairs_results_with_pending_updates() {
        let t0 = Instant::now();
        let w = Watch::new(t0);
        assert!(w.reserve("a", "xq1"));
        assert!(!w.reserve("a", "xq2"));
        assert!(w.reserve("b", "xq3"));
        assert!(w.reserve("c", "xq4"));
        // Only written updates are queried, oldest first.
        assert_eq!(w.batch(t0).unwrap(), []);
        w.written("b", t0);
        w.written("a", t0);
        let batch = w.batch(t0).unwrap();
        assert_eq!(
            batch.iter().map(|b| b.1.as_str()).collect::<Vec<_>>(),
            ["xq1", "xq3"]
        );
        assert_eq!(
            token_query(batch.iter().map(|b| b.1.as_str())),
            r#"TITLE:"xq1" OR TITLE:"xq3""#
        );
        let item = |id: &str| api::Item {
            fedora_id: format!("http://h/rest/search-bench/s1-copy/{id}"),
        };
        w.found(
            &batch,
            &[item("b"), item("zzz")],
            t0 + Duration::from_millis(40),
        );
        let s = w.rec.lock().unwrap().summary(Duration::from_secs(1));
        assert_eq!((s.ok, s.errors), (1, 0));
        assert!((s.p50_ms - 40.0).abs() < 0.1, "{}", s.p50_ms);
        // c never got an answer: dropped at the end; a times out.
        w.finish();
        assert_eq!(w.batch(t0).unwrap().len(), 1);
        assert!(w
            .batch(t0 + VISIBLE_TIMEOUT + Duration::from_secs(1))
            .is_none());
        let s = w.rec.lock().unwrap().summary(Duration::from_secs(1));
        assert_eq!((s.ok, s.errors), (1, 1));
        assert_eq!(s.status_codes["timeout"], 1);
    }
}
