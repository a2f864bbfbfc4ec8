//! Notifications to a real Apache ActiveMQ (Debian's package, the broker Fedora embeds) over
//! STOMP (issue 11 §2): the real `arca serve` delivers every change of a scripted sequence
//! of requests, exactly as its replayable log (`/rest/fcr:events`) tells them, across a
//! broker outage (writes go on, delivery resumes) and a SIGKILL of arca (delivery resumes
//! from the position the broker acknowledged). A STOMP subscriber on a queue checks what
//! arrives: every sequence number, in order, at least once. With two nodes sharing a
//! PostgreSQL catalog, one delivers (each change once) and the other takes over when it is
//! killed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use arca_events::stomp::{StompTarget, Subscriber};
use arca_testkit::activemq::ActiveMq;
use hyper::Method;
use serde_json::Value;

use crate::common::{Arca, Http};

/// A queue keeps what arrives while the subscriber reconnects (a topic would drop it).
const DESTINATION: &str = "/queue/arca-events-test";

const TURTLE: (&str, &str) = ("content-type", "text/turtle");

/// What the subscriber has received: body by sequence number, and the order of arrival.
#[derive(Default)]
struct Received {
    by_seq: BTreeMap<i64, Value>,
    order: Vec<i64>,
}

impl Received {
    /// Receives until every sequence number up to `last` is there (or `limit` passes),
    /// reconnecting when the broker goes away.
    async fn until(
        &mut self,
        sub: &mut Option<Subscriber>,
        target: &StompTarget,
        last: i64,
        limit: Duration,
    ) {
        let started = Instant::now();
        while self.by_seq.range(..=last).count() < self.expected_up_to(last)
            && started.elapsed() < limit
        {
            if sub.is_none() {
                match Subscriber::connect(target, DESTINATION, Duration::from_secs(5)).await {
                    Ok(s) => *sub = Some(s),
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                }
            }
            match sub.as_mut().unwrap().next(Duration::from_millis(500)).await {
                Ok(Some(m)) => {
                    let seq: i64 = m
                        .header("arca.seq")
                        .expect("arca.seq header")
                        .parse()
                        .unwrap();
                    let body: Value = serde_json::from_slice(&m.body).unwrap();
                    assert_eq!(
                        m.header("org.fcrepo.jms.eventID"),
                        body["id"].as_str(),
                        "the header and the body name the same event"
                    );
                    self.order.push(seq);
                    self.by_seq.insert(seq, body);
                }
                Ok(None) => {}
                Err(_) => *sub = None,
            }
        }
    }

    fn expected_up_to(&self, last: i64) -> usize {
        last as usize - self.first() as usize + 1
    }

    fn first(&self) -> i64 {
        *self.by_seq.keys().next().unwrap_or(&1)
    }
}

async fn write(
    http: &Http,
    arca: &Arca,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) {
    let r = http
        .request(method.clone(), &arca.url(path), headers, body.to_string())
        .await;
    assert!(
        r.status.is_success(),
        "{method} {path}: {} {}",
        r.status,
        r.text()
    );
}

/// Creates, changes, deletes and purges a few resources (12 events).
async fn script(http: &Http, arca: &Arca, tag: &str) {
    let c = format!("/{tag}");
    write(
        http,
        arca,
        Method::PUT,
        &c,
        &[TURTLE, ("user-agent", "events-test")],
        "<> a <http://example.org/Work> .",
    )
    .await;
    write(
        http,
        arca,
        Method::PUT,
        &format!("{c}/file"),
        &[("content-type", "text/plain")],
        "bytes",
    )
    .await;
    write(
        http,
        arca,
        Method::PATCH,
        &format!("{c}/file/fcr:metadata"),
        &[("content-type", "application/sparql-update")],
        "INSERT DATA { <> <http://purl.org/dc/terms/title> \"f\" }",
    )
    .await;
    write(
        http,
        arca,
        Method::PUT,
        &format!("{c}/child"),
        &[TURTLE],
        "",
    )
    .await;
    write(
        http,
        arca,
        Method::POST,
        &format!("{c}/fcr:versions"),
        &[],
        "",
    )
    .await;
    write(http, arca, Method::DELETE, &format!("{c}/child"), &[], "").await;
    write(
        http,
        arca,
        Method::DELETE,
        &format!("{c}/child/fcr:tombstone"),
        &[],
        "",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_reaches_the_broker_across_a_broker_restart_and_a_crash() {
    let Some(mut broker) = ActiveMq::start() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let url = broker.stomp_url();
    let env = [
        ("ARCA_EVENTS_STOMP_URL", url.as_str()),
        ("ARCA_EVENTS_DESTINATION", DESTINATION),
        ("ARCA_LOG", "info"),
    ];
    let arca = Arca::serve_with(data.path(), &env);
    let http = Http::new();
    let target = StompTarget::parse(&url).unwrap();
    let mut sub = Some(
        Subscriber::connect(&target, DESTINATION, Duration::from_secs(10))
            .await
            .unwrap(),
    );
    let mut got = Received::default();
    let start = arca.last_event(&http).await;

    // 1. The broker is up: every event of the script arrives, as the log tells it.
    script(&http, &arca, "one").await;
    let end = arca.last_event(&http).await;
    assert_eq!(end - start, 12, "the script logs 12 events");
    got.until(&mut sub, &target, end, Duration::from_secs(30))
        .await;
    let expected = arca
        .events_after(&http, start)
        .await
        .into_iter()
        .collect::<BTreeMap<_, _>>();
    for (seq, body) in &expected {
        assert_eq!(
            got.by_seq.get(seq),
            Some(body),
            "event {seq} as the broker delivered it"
        );
    }

    // 2. The broker stops: writes go on and are answered; its events arrive once it is back.
    broker.stop();
    let outage = Instant::now();
    script(&http, &arca, "two").await;
    let written_in = outage.elapsed();
    let end = arca.last_event(&http).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    broker.start_again();
    sub = None;
    let back = Instant::now();
    got.until(&mut sub, &target, end, Duration::from_secs(60))
        .await;
    eprintln!(
        "writes during the outage took {written_in:?}; their events arrived {:?} after the broker returned",
        back.elapsed()
    );
    let expected = arca
        .events_after(&http, start)
        .await
        .into_iter()
        .collect::<BTreeMap<_, _>>();
    for seq in expected.keys() {
        assert!(
            got.by_seq.contains_key(seq),
            "event {seq} was lost across the broker restart:\n{}",
            arca.log()
        );
    }
    assert!(
        arca.log()
            .matches("cannot deliver events to the broker")
            .count()
            == 1,
        "the outage is logged once, with its reason:\n{}",
        arca.log()
    );

    // 3. arca is killed while its events wait for the broker (stopped again): after the
    //    restart, delivery resumes from the position the broker's receipts recorded.
    broker.stop();
    sub = None;
    script(&http, &arca, "three").await;
    let end = arca.last_event(&http).await;
    arca.kill();
    broker.start_again();
    let arca = Arca::serve_with(data.path(), &env);
    got.until(&mut sub, &target, end, Duration::from_secs(60))
        .await;
    let expected = arca
        .events_after(&http, start)
        .await
        .into_iter()
        .collect::<BTreeMap<_, _>>();
    assert_eq!(*expected.keys().last().unwrap(), end);
    // The restarted server listens on another port: compare with the base URL (and the
    // event ids made from it) left out.
    let portable = |v: &Value| {
        let mut v = v.clone();
        let base = v["object"]["isPartOf"].as_str().unwrap().to_string();
        v.as_object_mut().unwrap().remove("id");
        v.to_string().replace(&base, "BASE")
    };
    for (seq, body) in &expected {
        let delivered = got.by_seq.get(seq).map(portable);
        assert_eq!(
            delivered,
            Some(portable(body)),
            "event {seq} after the crash"
        );
    }
    // At least once, and in order: a sequence number seen again is a redelivery of a
    // batch whose receipt was not recorded; apart from that they only grow.
    let mut highest = 0;
    for seq in &got.order {
        if *seq > highest {
            assert!(
                *seq == highest + 1 || highest == 0,
                "event {} skipped before {seq}",
                highest + 1
            );
            highest = *seq;
        }
    }
    arca.stop();
}

/// A clean stop (SIGTERM) while delivery works through a backlog: the delivery finishes the
/// batch in flight and records how far the broker acknowledged before arca exits, so the
/// restarted server sends none of those events again (without that, the position recorded
/// up to a second earlier made the restart send them twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_stop_records_the_position_so_a_restart_sends_no_event_twice() {
    const OBJECTS: usize = 3000;
    const WRITERS: usize = 8;
    let Some(broker) = ActiveMq::start() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let url = broker.stomp_url();
    let destination = "/queue/arca-clean-stop-test";
    let env = [
        ("ARCA_EVENTS_STOMP_URL", url.as_str()),
        ("ARCA_EVENTS_DESTINATION", destination),
        ("ARCA_EVENTS_DELIVER_HISTORY", "true"),
    ];
    let target = StompTarget::parse(&url).unwrap();

    // 1. A backlog: the log of OBJECTS creations, written without a broker configured.
    let arca = Arca::serve(data.path());
    let http = Http::new();
    write(&http, &arca, Method::PUT, "/backlog", &[TURTLE], "").await;
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (http, url) = (http.clone(), arca.url("/backlog"));
            tokio::spawn(async move {
                for i in (w..OBJECTS).step_by(WRITERS) {
                    let slug = format!("o{i}");
                    let r = http
                        .request(Method::POST, &url, &[("slug", slug.as_str())], "")
                        .await;
                    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let last = arca.last_event(&http).await;
    let first = arca.events_after(&http, 0).await[0].0;
    arca.stop();

    // 2. Delivery of the whole log starts; arca is stopped cleanly as soon as the first
    //    events are at the subscriber, while the rest are still being sent.
    let mut sub = Some(
        Subscriber::connect(&target, destination, Duration::from_secs(10))
            .await
            .unwrap(),
    );
    let arca = Arca::serve_with(data.path(), &env);
    let arrived = sub
        .as_mut()
        .unwrap()
        .next(Duration::from_secs(30))
        .await
        .unwrap()
        .expect("the first event arrives");
    arca.stop();
    let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
    let count = |counts: &mut BTreeMap<i64, usize>, m: &arca_events::stomp::Message| {
        let seq: i64 = m.header("arca.seq").unwrap().parse().unwrap();
        *counts.entry(seq).or_default() += 1;
    };
    count(&mut counts, &arrived);
    // What the first server handed to the broker before it stopped.
    while let Some(m) = sub
        .as_mut()
        .unwrap()
        .next(Duration::from_secs(2))
        .await
        .unwrap()
    {
        count(&mut counts, &m);
    }
    let before_restart = counts.len();
    assert!(
        (before_restart as i64) < last - first + 1,
        "the stop came while events were still being sent ({before_restart} of {} sent)",
        last - first + 1
    );

    // 3. The restarted server sends the rest, and nothing of what the broker acknowledged.
    let arca = Arca::serve_with(data.path(), &env);
    let started = Instant::now();
    while counts.keys().next_back() != Some(&last) && started.elapsed() < Duration::from_secs(60) {
        if let Some(m) = sub
            .as_mut()
            .unwrap()
            .next(Duration::from_millis(500))
            .await
            .unwrap()
        {
            count(&mut counts, &m);
        }
    }
    while let Some(m) = sub
        .as_mut()
        .unwrap()
        .next(Duration::from_millis(500))
        .await
        .unwrap()
    {
        count(&mut counts, &m);
    }
    let twice: Vec<_> = counts
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(s, _)| *s)
        .collect();
    assert!(
        twice.is_empty(),
        "{} events were sent again after the clean stop ({before_restart} before it), e.g. {:?}",
        twice.len(),
        &twice[..twice.len().min(10)]
    );
    assert_eq!(
        counts.keys().copied().collect::<Vec<_>>(),
        (first..=last).collect::<Vec<_>>(),
        "every event of the log, once"
    );
    arca.stop();
    sub.take().unwrap().close().await;
}

/// Whether node `arca` delivers the events (holds the destination's role).
async fn leads(http: &Http, arca: &Arca) -> bool {
    let r = http.get(&arca.url("/fcr:events?limit=1"), &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let page: Value = serde_json::from_slice(&r.body).unwrap();
    page["destinations"][0]["leading"]
        .as_bool()
        .expect("the destination's status says who leads")
}

/// Two `arca serve` nodes sharing a PostgreSQL catalog and one broker destination: the
/// changes written on both reach the broker once each (one node delivers, the other
/// stands by); when the delivering node is killed, the other takes over and every change,
/// including those written after the kill, arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_deliver_each_change_once_and_one_takes_over_from_a_killed_one() {
    let Some(pg) = tokio::task::spawn_blocking(arca_testkit::postgres::Postgres::shared)
        .await
        .unwrap()
    else {
        return;
    };
    let Some(broker) = ActiveMq::start() else {
        return;
    };
    let catalog = tokio::task::spawn_blocking(|| pg.create_database())
        .await
        .unwrap();
    let url = broker.stomp_url();
    let env = [
        ("ARCA_EVENTS_STOMP_URL", url.as_str()),
        ("ARCA_EVENTS_DESTINATION", DESTINATION),
        ("ARCA_CATALOG_URL", catalog.as_str()),
        ("ARCA_LOG", "info"),
    ];
    let (data_a, data_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Arca::serve_with(data_a.path(), &env);
    let b = Arca::serve_with(data_b.path(), &env);
    let http = Http::new();
    let target = StompTarget::parse(&url).unwrap();
    let mut sub = Some(
        Subscriber::connect(&target, DESTINATION, Duration::from_secs(10))
            .await
            .unwrap(),
    );
    let mut got = Received::default();
    let start = a.last_event(&http).await;

    script(&http, &a, "on-a").await;
    script(&http, &b, "on-b").await;
    let end = b.last_event(&http).await;
    assert_eq!(end - start, 24, "both scripts' events are in the one log");
    got.until(&mut sub, &target, end, Duration::from_secs(30))
        .await;
    for seq in start + 1..=end {
        let times = got.order.iter().filter(|s| **s == seq).count();
        assert_eq!(times, 1, "event {seq} arrived {times} times");
    }
    let (a_leads, b_leads) = (leads(&http, &a).await, leads(&http, &b).await);
    assert!(
        a_leads != b_leads,
        "one node delivers: a {a_leads}, b {b_leads}"
    );

    // The delivering node dies; the other writes on and delivers what the dead one had not.
    let (survivor, dead) = if a_leads { (b, a) } else { (a, b) };
    dead.kill();
    script(&http, &survivor, "after-kill").await;
    let end = survivor.last_event(&http).await;
    got.until(&mut sub, &target, end, Duration::from_secs(60))
        .await;
    for seq in start + 1..=end {
        assert!(
            got.by_seq.contains_key(&seq),
            "event {seq} was lost when the delivering node died:\n{}",
            survivor.log()
        );
    }
    assert!(leads(&http, &survivor).await, "the survivor took over");
}
