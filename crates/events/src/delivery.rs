//! Delivery of the change log to a STOMP broker, behind the writes: a task reads the log
//! after the last position the broker acknowledged (a batch is acknowledged by the receipt
//! of its last frame), sends the events in order over one connection, and records its
//! position in the catalog, at least every second and when it stops. Writes
//! never wait for it; a broker that is down or slow only makes it fall behind, and it
//! resumes from its recorded position when the broker is back (at-least-once: a message
//! whose receipt was lost is sent again, with the same `arca.seq` and event id).
//!
//! Where several nodes share the catalog, one of them delivers to a destination: the
//! worker first takes the destination's role ([`Coordination::try_lead`]); the others
//! wait on standby and one takes over when the leader stops or dies, resuming from the
//! recorded position (so at most the last second's events are sent twice).

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arca_catalog::{Catalog, ChangeEntry, Leadership};
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::event::{Event, EventNames};
use crate::stomp::{Outgoing, Publisher, StompError, StompTarget};

/// Events sent per batch (one write, then one wait for the receipt of the last).
const BATCH: usize = 1000;
/// How long the broker may take to accept a connection or acknowledge a batch.
const BROKER_TIMEOUT: Duration = Duration::from_secs(10);
/// The position is recorded at most this often (and when delivery stops); after a crash
/// at most this much is delivered again.
const RECORD_EVERY: Duration = Duration::from_secs(1);
/// Pauses between attempts while the broker fails: doubling from the first to the last.
const FIRST_RETRY: Duration = Duration::from_millis(200);
const LAST_RETRY: Duration = Duration::from_secs(2);
/// How often a node on standby asks whether the destination's leader is gone.
const STANDBY_CHECK: Duration = Duration::from_secs(2);
/// How often a delivery that is behind says so in the log.
const LAG_REPORT_EVERY: Duration = Duration::from_secs(30);

/// Where events go and how delivery starts.
#[derive(Debug, Clone)]
pub struct StompDestination {
    /// The broker.
    pub target: StompTarget,
    /// Topic or queue (`/topic/fedora`).
    pub destination: String,
    /// Start a destination never delivered to at the first event of the log instead of
    /// the next change.
    pub deliver_history: bool,
}

impl StompDestination {
    /// The name under which the catalog keeps this destination's position.
    pub fn consumer_name(&self) -> String {
        format!(
            "events:stomp://{}:{}{}",
            self.target.host, self.target.port, self.destination
        )
    }
}

/// What an operator sees of one destination's delivery.
#[derive(Debug)]
pub struct DeliveryStatus {
    /// The destination (`stomp://host:port/topic/fedora`).
    pub name: String,
    delivered: AtomicI64,
    connected: AtomicBool,
    leading: AtomicBool,
    last_error: Mutex<Option<String>>,
    /// When the oldest event not yet delivered was noticed (None: nothing waits).
    behind_since: Mutex<Option<Instant>>,
}

impl DeliveryStatus {
    fn new(name: String) -> Self {
        Self {
            name,
            delivered: AtomicI64::new(0),
            connected: AtomicBool::new(false),
            leading: AtomicBool::new(false),
            last_error: Mutex::new(None),
            behind_since: Mutex::new(None),
        }
    }

    /// The sequence number of the last event the broker acknowledged.
    pub fn delivered(&self) -> i64 {
        self.delivered.load(Ordering::Acquire)
    }

    /// Whether a connection to the broker is open.
    pub fn connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }

    /// Whether this node delivers to the destination (false on standby, while another
    /// node sharing the catalog does).
    pub fn leading(&self) -> bool {
        self.leading.load(Ordering::Acquire)
    }

    /// Why the last attempt failed, while the broker fails.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().clone()
    }

    /// How long events have been waiting for delivery (zero when it is up to date).
    pub fn waiting_for(&self) -> Duration {
        self.behind_since
            .lock()
            .map(|t| t.elapsed())
            .unwrap_or_default()
    }
}

/// How long a delivery may take to stop once told to: the batch in flight is finished (or
/// times out) and the position recorded.
pub const STOP_LIMIT: Duration = Duration::from_secs(15);

/// A running delivery.
#[derive(Debug)]
pub struct Delivery {
    /// What operators see of it.
    pub status: Arc<DeliveryStatus>,
    /// Its task: it ends once `stop` has turned true, the batch in flight is acknowledged
    /// (or failed) and the position is recorded. Await it (within [`STOP_LIMIT`]) before
    /// closing the catalog, or a restart sends the last events again.
    pub task: tokio::task::JoinHandle<()>,
}

/// Starts delivering to `dest` on the current tokio runtime; stops when `stop` turns true
/// (after recording its position).
pub fn spawn(
    catalog: Arc<dyn Catalog>,
    names: EventNames,
    dest: StompDestination,
    stop: watch::Receiver<bool>,
) -> Delivery {
    let status = Arc::new(DeliveryStatus::new(format!(
        "stomp://{}:{}{}",
        dest.target.host, dest.target.port, dest.destination
    )));
    let worker = Worker {
        catalog,
        names,
        dest,
        status: status.clone(),
    };
    let task = tokio::spawn(worker.run(stop));
    Delivery { status, task }
}

struct Worker {
    catalog: Arc<dyn Catalog>,
    names: EventNames,
    dest: StompDestination,
    status: Arc<DeliveryStatus>,
}

impl Worker {
    async fn run(self, mut stop: watch::Receiver<bool>) {
        let consumer = self.dest.consumer_name();
        let Some(_leadership) = self.lead(&consumer, &mut stop).await else {
            return;
        };
        self.status.leading.store(true, Ordering::Release);
        let mut position = loop {
            match self.start_position(&consumer).await {
                Ok(p) => break p,
                Err(e) => {
                    tracing::error!(error = %e, "event delivery cannot read its position; retrying");
                    if sleep_or_stop(&mut stop, LAST_RETRY).await {
                        return;
                    }
                }
            }
        };
        self.status.delivered.store(position, Ordering::Release);
        tracing::info!(destination = %self.status.name, after = position, "event delivery started");
        let mut last_change = self.catalog.last_change();
        let mut publisher: Option<Publisher> = None;
        let mut failing = false;
        let mut retry = FIRST_RETRY;
        let mut recorded = position;
        let mut recorded_at = Instant::now();
        let mut lag_reported = Instant::now();
        let mut caught_up = false;
        loop {
            if *stop.borrow() {
                break;
            }
            // After a short batch the log is read again only once a commit announced more.
            let read = arca_catalog::changes_if_announced(
                &*self.catalog,
                &last_change,
                caught_up,
                position,
                BATCH,
            );
            let batch = match read.await {
                Ok(b) => b,
                Err(e) => {
                    tracing::error!(error = %e, "event delivery cannot read the change log");
                    if sleep_or_stop(&mut stop, retry).await {
                        break;
                    }
                    continue;
                }
            };
            caught_up = batch.len() < BATCH;
            if batch.is_empty() {
                *self.status.behind_since.lock() = None;
                if recorded != position {
                    self.record(&consumer, position).await;
                    recorded = position;
                }
                last_change.borrow_and_update();
                if *last_change.borrow() > position {
                    continue;
                }
                let closed = tokio::select! {
                    r = last_change.changed() => r.is_err(),
                    r = stop.changed() => r.is_err(),
                };
                if closed {
                    break;
                }
                continue;
            }
            self.status
                .behind_since
                .lock()
                .get_or_insert_with(Instant::now);
            if publisher.is_none() {
                match Publisher::connect(&self.dest.target, BROKER_TIMEOUT).await {
                    Ok(p) => {
                        publisher = Some(p);
                        self.status.connected.store(true, Ordering::Release);
                    }
                    Err(e) => {
                        self.failed(&mut failing, &e);
                        if sleep_or_stop(&mut stop, retry).await {
                            break;
                        }
                        retry = (retry * 2).min(LAST_RETRY);
                        continue;
                    }
                }
            }
            let messages: Vec<Outgoing> = batch.iter().map(|e| self.message(e)).collect();
            let last = batch.last().map_or(position, |e| e.seq);
            let sent = match publisher.as_mut() {
                Some(p) => {
                    p.send_batch(&self.dest.destination, &messages, BROKER_TIMEOUT)
                        .await
                }
                None => unreachable!("connected above"),
            };
            match sent {
                Ok(()) => {
                    position = last;
                    self.status.delivered.store(position, Ordering::Release);
                    if failing {
                        failing = false;
                        *self.status.last_error.lock() = None;
                        tracing::info!(destination = %self.status.name, "the broker is back; event delivery resumed");
                    }
                    retry = FIRST_RETRY;
                    if recorded_at.elapsed() >= RECORD_EVERY {
                        self.record(&consumer, position).await;
                        recorded = position;
                        recorded_at = Instant::now();
                    }
                    let committed = *last_change.borrow();
                    if committed > position && lag_reported.elapsed() >= LAG_REPORT_EVERY {
                        lag_reported = Instant::now();
                        tracing::info!(
                            destination = %self.status.name,
                            behind = committed - position,
                            waiting_s = self.status.waiting_for().as_secs(),
                            "event delivery is behind the change log"
                        );
                    }
                }
                Err(e) => {
                    publisher = None;
                    self.status.connected.store(false, Ordering::Release);
                    self.failed(&mut failing, &e);
                    if sleep_or_stop(&mut stop, retry).await {
                        break;
                    }
                    retry = (retry * 2).min(LAST_RETRY);
                }
            }
        }
        if recorded != position {
            self.record(&consumer, position).await;
        }
        if let Some(p) = publisher {
            p.close().await;
        }
        tracing::info!(destination = %self.status.name, delivered = position, "event delivery stopped");
    }

    /// Waits until this node holds the destination's role (at once with one node); `None`
    /// if told to stop first.
    async fn lead(&self, consumer: &str, stop: &mut watch::Receiver<bool>) -> Option<Leadership> {
        let mut said = false;
        loop {
            match self.catalog.try_lead(consumer).await {
                Ok(Some(leadership)) => {
                    if said {
                        tracing::info!(destination = %self.status.name, "this node now delivers the events");
                    }
                    return Some(leadership);
                }
                Ok(None) if !said => {
                    said = true;
                    tracing::info!(destination = %self.status.name, "another node delivers the events; this one stands by");
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "event delivery cannot ask who delivers; retrying")
                }
            }
            if sleep_or_stop(stop, STANDBY_CHECK).await {
                return None;
            }
        }
    }

    /// Where delivery resumes: the recorded position; for a destination never delivered
    /// to, the start of the log or its end (recorded at once, so that a crash before the
    /// first batch loses nothing that came after).
    async fn start_position(&self, consumer: &str) -> arca_catalog::Result<i64> {
        if let Some(p) = self.catalog.consumer_position(consumer).await? {
            return Ok(p);
        }
        let start = if self.dest.deliver_history {
            (self.catalog.first_change().await? - 1).max(0)
        } else {
            *self.catalog.last_change().borrow()
        };
        self.catalog.set_consumer_position(consumer, start).await?;
        Ok(start)
    }

    fn message(&self, entry: &ChangeEntry) -> Outgoing {
        let event = Event::new(entry, &self.names);
        let mut body = Vec::with_capacity(768);
        event.write_body(&mut body);
        Outgoing {
            headers: event.headers(),
            body,
        }
    }

    async fn record(&self, consumer: &str, position: i64) {
        if let Err(e) = self.catalog.set_consumer_position(consumer, position).await {
            tracing::warn!(error = %e, "event delivery could not record its position (it will send some events again after a restart)");
        }
    }

    /// Logs a failure once (the first of a run of failures, with its reason); later ones
    /// only at debug level.
    fn failed(&self, failing: &mut bool, e: &StompError) {
        *self.status.last_error.lock() = Some(e.to_string());
        if *failing {
            tracing::debug!(destination = %self.status.name, error = %e, "the broker still fails");
        } else {
            *failing = true;
            tracing::warn!(
                destination = %self.status.name,
                error = %e,
                "cannot deliver events to the broker; writes go on, and delivery retries with backoff and resumes where it stopped"
            );
        }
    }
}

/// Sleeps for `pause` unless `stop` turns true first; returns whether to stop.
async fn sleep_or_stop(stop: &mut watch::Receiver<bool>, pause: Duration) -> bool {
    let closed = tokio::select! {
        _ = tokio::time::sleep(pause) => false,
        r = stop.changed() => r.is_err(),
    };
    closed || *stop.borrow()
}
