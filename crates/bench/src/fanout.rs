//! Fan-in scenarios: one resource named by very many others. `membership`: the members of a
//! direct container, shown on its membership resource; `references`: containers whose
//! triples point at one target, shown as its inbound references. Each is measured at the
//! small end (10) and the large end (`--objects`, default 100,000): the cost of adding one
//! more (`--count` additions per window), and GETs of the fanned-in resource with the listing
//! left out, its first page (`?limit=100`, an arca extension other servers ignore) and the
//! whole listing.

use std::sync::Arc;
use std::time::Duration;

use hyper::Method;

use crate::args::{Phase, Scenario};
use crate::driver::{drive, Ctx, Limits, Probe};
use crate::http::{Failure, Target};
use crate::recorder::TxOutcome;
use crate::report::{Kind, PhaseConfig, ScenarioReport, Status};
use crate::scenarios::{complete, pid_probe};

const LDP: &str = "http://www.w3.org/ns/ldp#";
const DC_HAS_PART: &str = "http://purl.org/dc/terms/hasPart";
const DC_RELATION: &str = "http://purl.org/dc/terms/relation";
/// Where the small end is measured.
const SMALL: u64 = 10;
/// The page asked for by the paged GET.
const PAGE: usize = 100;

/// Which fan-in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanIn {
    /// Members of a direct container, listed on its membership resource.
    Membership,
    /// Referrers, listed as inbound references of their target.
    References,
}

impl FanIn {
    fn name(self) -> &'static str {
        match self {
            FanIn::Membership => "membership",
            FanIn::References => "references",
        }
    }

    /// `Prefer` values of the GETs: listing left out, and listing included.
    fn prefer(self) -> (&'static str, &'static str) {
        match self {
            FanIn::Membership => (
                "return=representation; omit=\"http://www.w3.org/ns/ldp#PreferMembership\"",
                "return=representation",
            ),
            FanIn::References => (
                "return=representation",
                "return=representation; include=\"http://fedora.info/definitions/fcrepo#PreferInboundReferences\"",
            ),
        }
    }
}

/// The resources of one run: the fanned-in resource and where additions go.
struct Hub {
    /// The resource whose answer lists the fan-in.
    hub: String,
    /// POST here to add one.
    add_to: String,
    /// The body of an addition.
    body: String,
}

/// Runs one fan-in scenario and returns its rows.
pub async fn fan_in(
    ctx: &Ctx,
    phase: &Phase,
    target: Arc<Target>,
    kind: FanIn,
) -> Vec<ScenarioReport> {
    let mut rows = Vec::new();
    let hub = match setup(&target, kind).await {
        Ok(h) => Arc::new(h),
        Err(f) => {
            let mut row = row(phase, &format!("{}-setup", kind.name()), Kind::Ingest, None);
            row.status = Status::Aborted;
            row.note = Some(format!("could not create the resources: {}", f.message));
            rows.push(row);
            return rows;
        }
    };
    let window = phase.count.unwrap_or(5000).max(1);
    let large = phase.objects.max(SMALL + window);
    let get_time = phase.duration.unwrap_or(Duration::from_secs(10));

    let mut have = 0;
    have += fill(ctx, phase, &target, &hub, SMALL - have).await;
    settle().await;
    rows.extend(gets(ctx, phase, &target, &hub, kind, have, get_time).await);
    rows.push(add(ctx, phase, &target, &hub, kind, have, window).await);
    have += rows.last().map_or(0, |r| r.summary.ok);
    if ctx.interrupt.is_set() {
        return rows;
    }
    have += fill(
        ctx,
        phase,
        &target,
        &hub,
        (large - window).saturating_sub(have),
    )
    .await;
    rows.push(add(ctx, phase, &target, &hub, kind, have, window).await);
    have += rows.last().map_or(0, |r| r.summary.ok);
    if ctx.interrupt.is_set() {
        return rows;
    }
    settle().await;
    rows.extend(gets(ctx, phase, &target, &hub, kind, have, get_time).await);
    rows
}

/// Lets the kernel write back what the last phase left dirty (`sync`), so that a row does not
/// pay for the writes of the one before it, as between the other scenarios' phases.
async fn settle() {
    tokio::task::spawn_blocking(crate::procfs::sync_all)
        .await
        .ok();
}

/// Creates a fresh parent, the fanned-in resource and the container additions go to.
async fn setup(target: &Target, kind: FanIn) -> Result<Hub, Failure> {
    let (_, parent) = target.create_container().await?;
    let post = |body: String, link: Option<&'static str>| {
        let parent = parent.clone();
        async move {
            let headers: Vec<(&str, &str)> = link.map(|l| ("link", l)).into_iter().collect();
            let (code, location) = target
                .send_turtle(Method::POST, &parent, &body, &headers)
                .await?;
            location.ok_or_else(|| Failure {
                code,
                message: format!("POST {parent}: no Location"),
            })
        }
    };
    let hub = post(String::new(), None).await?;
    match kind {
        FanIn::Membership => {
            let body = format!(
                "<> <{LDP}membershipResource> <{hub}> ; <{LDP}hasMemberRelation> <{DC_HAS_PART}> ."
            );
            let dc = post(
                body,
                Some("<http://www.w3.org/ns/ldp#DirectContainer>; rel=\"type\""),
            )
            .await?;
            Ok(Hub {
                hub,
                add_to: dc,
                body: String::new(),
            })
        }
        FanIn::References => {
            let referrers = post(String::new(), None).await?;
            Ok(Hub {
                body: format!("<> <{DC_RELATION}> <{hub}> ."),
                hub,
                add_to: referrers,
            })
        }
    }
}

fn row(phase: &Phase, name: &str, kind: Kind, objects: Option<u64>) -> ScenarioReport {
    ScenarioReport::new(
        name,
        phase.scenario,
        kind,
        PhaseConfig {
            clients: phase.clients,
            objects,
            ..Default::default()
        },
    )
}

/// One addition: a POST of the addition body.
fn adder(
    target: Arc<Target>,
    hub: Arc<Hub>,
) -> impl Fn(u64) -> std::pin::Pin<Box<dyn std::future::Future<Output = TxOutcome> + Send>>
       + Send
       + Sync
       + 'static {
    move |_| {
        let target = target.clone();
        let hub = hub.clone();
        Box::pin(async move {
            match target
                .send_turtle(Method::POST, &hub.add_to, &hub.body, &[])
                .await
            {
                Ok((code, _)) => TxOutcome::succeeded(code, 0),
                Err(f) => TxOutcome::failed(f.code, f.message),
            }
        })
    }
}

/// Adds `n` without measuring; returns how many were added.
async fn fill(ctx: &Ctx, phase: &Phase, target: &Arc<Target>, hub: &Arc<Hub>, n: u64) -> u64 {
    if n == 0 || ctx.interrupt.is_set() {
        return 0;
    }
    let limits = Limits {
        clients: phase.clients,
        duration: None,
        count: Some(n),
    };
    let d = drive(
        ctx,
        &format!("{} (filling)", phase.name),
        limits,
        adder(target.clone(), hub.clone()),
    )
    .await;
    d.rec.summary(d.elapsed).ok
}

/// Measures `window` additions when `have` exist.
async fn add(
    ctx: &Ctx,
    phase: &Phase,
    target: &Arc<Target>,
    hub: &Arc<Hub>,
    kind: FanIn,
    have: u64,
    window: u64,
) -> ScenarioReport {
    let name = format!("{}-add@{have}", kind.name());
    let mut row = row(phase, &name, Kind::Ingest, Some(have));
    let probe = Probe::start(pid_probe(ctx), ctx.data_dir.clone()).await;
    let limits = Limits {
        clients: phase.clients,
        duration: None,
        count: Some(window),
    };
    let d = drive(ctx, &name, limits, adder(target.clone(), hub.clone())).await;
    complete(&mut row, &d, probe, true).await;
    row
}

/// The GET rows when `have` exist: listing left out, first page, whole listing.
async fn gets(
    ctx: &Ctx,
    phase: &Phase,
    target: &Arc<Target>,
    hub: &Arc<Hub>,
    kind: FanIn,
    have: u64,
    time: Duration,
) -> Vec<ScenarioReport> {
    let (without, with) = kind.prefer();
    let page = format!("{}?limit={PAGE}", hub.hub);
    let whole_count = if have > 10_000 { 5 } else { 50 };
    let plans = [
        ("get-omitted", hub.hub.clone(), without, phase.clients, None),
        ("get-page", page, with, phase.clients, None),
        ("get-all", hub.hub.clone(), with, 1, Some(whole_count)),
    ];
    let mut rows = Vec::new();
    for (what, url, prefer, clients, count) in plans {
        if ctx.interrupt.is_set() {
            break;
        }
        let name = format!("{}-{what}@{have}", kind.name());
        let mut row = row(phase, &name, Kind::Access, Some(have));
        let probe = Probe::start(pid_probe(ctx), None).await;
        let limits = Limits {
            clients,
            duration: Some(time),
            count,
        };
        let target = target.clone();
        let url = Arc::new(url);
        let d = drive(ctx, &name, limits, move |_| {
            let target = target.clone();
            let url = url.clone();
            async move {
                let headers = [("accept", "text/turtle"), ("prefer", prefer)];
                match target.get_with(&url, &headers).await {
                    Ok((code, n)) => TxOutcome::succeeded(code, n),
                    Err(f) => TxOutcome::failed(f.code, f.message),
                }
            }
        })
        .await;
        complete(&mut row, &d, probe, false).await;
        rows.push(row);
    }
    rows
}

/// Whether a scenario is a fan-in, and which.
pub fn kind_of(scenario: Scenario) -> Option<FanIn> {
    match scenario {
        Scenario::Membership => Some(FanIn::Membership),
        Scenario::References => Some(FanIn::References),
        _ => None,
    }
}
