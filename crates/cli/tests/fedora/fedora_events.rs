//! arca's events are Fedora 6.1's events (issue 11): the same scripted requests go to the
//! real Fedora (`common::fedora`) and to the real `arca serve`, and what each reports per
//! request is compared.
//!
//! - **Fedora**: the messages of its embedded ActiveMQ on `/topic/fedora`, read over STOMP
//!   (subscribed before the first request: a topic keeps nothing for absent listeners).
//! - **arca**: its replayable log (`/rest/fcr:events` after the last sequence number seen),
//!   and the same events as its STOMP delivery puts them on a private ActiveMQ
//!   (`arca_testkit::activemq`), for the message headers.
//!
//! Per request, the bodies are compared as multisets, with the base URL written `BASE`,
//! `id` and `published` left out (their form is checked on their own) and `object.type`
//! sorted. arca's `Update` of the parent of a created or deleted resource is the one known
//! difference ([`parent_updates`]): Fedora 6.1 does not report that a child changes its
//! parent (the Fedora API §6.1 says it does). Each pair of equal bodies must also come with
//! the same message headers ([`message_headers`]: the `org.fcrepo.jms.*` ones and whatever
//! else the publisher sets; arca adds `arca.seq`).
//!
//! Every other difference fails the test, listed request by request, with Fedora's message
//! in full where arca sends none like it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use arca_events::stomp::{Message, StompTarget, Subscriber};
use arca_testkit::activemq::ActiveMq;
use bytes::Bytes;
use hyper::Method;
use serde_json::Value;

use crate::common::fedora::Fedora;
use crate::common::{step, Arca, Http, Step};

/// Where Fedora 6.1 publishes its events.
const FEDORA_TOPIC: &str = "/topic/fedora";

/// Where arca delivers on the private broker (a queue keeps what arrives before it is read).
const ARCA_QUEUE: &str = "/queue/arca-fedora-events";

/// The `User-Agent` of every request; both name it as the event's `Application`.
const AGENT: &str = "arca-fedora-events-test/1.0";

/// How long Fedora may stay silent before a request's messages are taken as complete
/// (also how long the test listens for late messages after the script).
const SILENCE: Duration = Duration::from_secs(3);

/// How long to listen for more once Fedora has sent as many messages as expected.
const GRACE: Duration = Duration::from_millis(300);

const LDP: &str = "http://www.w3.org/ns/ldp#";

/// The requests sent to both servers. Paths are relative to the REST root; `{B}` in a body
/// stands for the server's base URL.
fn script() -> Vec<Step> {
    use Method as M;
    let ttl = ("content-type", "text/turtle");
    let text = ("content-type", "text/plain");
    let sparql = ("content-type", "application/sparql-update");
    let direct = format!("<{LDP}DirectContainer>; rel=\"type\"");
    let ag = "<http://fedora.info/definitions/v4/repository#ArchivalGroup>; rel=\"type\"";
    vec![
        step(M::PUT, "/c1", &[ttl], "<> a <http://example.org/Book> ."),
        step(M::PUT, "/c1/b1", &[text], "first bytes"),
        step(M::PATCH, "/c1", &[sparql], "INSERT DATA { <> <http://purl.org/dc/terms/title> \"C1\" }"),
        step(M::PUT, "/c1/b1", &[text], "second bytes"),
        step(M::PATCH, "/c1/b1/fcr:metadata", &[sparql], "INSERT DATA { <> <http://purl.org/dc/terms/title> \"B1\" }"),
        step(M::POST, "/c1/fcr:versions", &[], ""),
        step(M::PUT, "/c1/c2", &[ttl], ""),
        // References to repository resources, made by an update and by a creation (Fedora
        // sends `Follow` "refer to resource" of the resource referred to, as it does for the
        // direct container's ldp:membershipResource below; not for the ACL's acl:accessTo).
        step(M::PATCH, "/c1/c2", &[sparql], "INSERT DATA { <> <http://purl.org/dc/terms/relation> <{B}/c1/b1> }"),
        step(M::PUT, "/c1/c3", &[ttl], "<> <http://purl.org/dc/terms/relation> <{B}/c1> ."),
        // A type of a hash URI (Fedora counts it among the resource's types; the ACL below
        // has one too).
        step(M::PUT, "/c1/c4", &[ttl], "<> a <http://example.org/Thing> . <#part> a <http://example.org/Part> ."),
        step(M::POST, "/c1", &[("content-type", "application/octet-stream"), ("slug", "b2")], "\u{0}\u{1}\u{2}"),
        // Fedora sends `Create` of /c1/fcr:acl, and `Delete` and `Purge` of it with /c1.
        step(M::PUT, "/c1/fcr:acl", &[ttl], "@prefix acl: <http://www.w3.org/ns/auth/acl#> .\n<#read> a acl:Authorization ; acl:agentClass <http://xmlns.com/foaf/0.1/Agent> ; acl:mode acl:Read ; acl:accessTo <{B}/c1> ."),
        step(M::PUT, "/dc", &[ttl, ("link", direct.as_str())], "<> <http://www.w3.org/ns/ldp#membershipResource> <{B}/c1> ; <http://www.w3.org/ns/ldp#hasMemberRelation> <http://pcdm.org/models#hasMember> ."),
        step(M::PUT, "/dc/m1", &[ttl], ""),
        step(M::PUT, "/ag", &[ttl, ("link", ag)], "<> <http://purl.org/dc/terms/title> \"AG\" ."),
        step(M::PUT, "/ag/part", &[ttl], ""),
        step(M::PUT, "/ag/part/file", &[text], "in the AG"),
        step(M::DELETE, "/c1", &[], ""),
        step(M::DELETE, "/c1/fcr:tombstone", &[], ""),
        step(M::DELETE, "/ag", &[], ""),
    ]
}

/// An event body for comparison: the base URL written `BASE`, `id` and `published` left
/// out, `object.type` sorted.
fn normalize(body: &Value, base: &str) -> Value {
    let text = body.to_string().replace(base, "BASE");
    let mut v: Value = serde_json::from_str(&text).unwrap();
    let o = v.as_object_mut().expect("an event is a JSON object");
    o.remove("id");
    o.remove("published");
    if let Some(types) = v["object"]["type"].as_array_mut() {
        types.sort_by_key(|t| t.to_string());
    }
    v
}

/// What differs in the form of `id` and `published` from Fedora's (a `urn:uuid:` and an
/// RFC 3339 UTC instant).
fn form_problems(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let id = body["id"].as_str().unwrap_or_default();
    let uuid = id.strip_prefix("urn:uuid:").unwrap_or_default();
    if uuid.len() != 36 || uuid.split('-').map(str::len).collect::<Vec<_>>() != [8, 4, 4, 4, 12] {
        out.push(format!("id {id:?} is not a urn:uuid"));
    }
    let published = body["published"].as_str().unwrap_or_default();
    if unix_millis(published).is_none() {
        out.push(format!(
            "published {published:?} is not an RFC 3339 UTC instant"
        ));
    }
    out
}

/// Milliseconds since the Unix epoch of an RFC 3339 UTC instant
/// (`YYYY-MM-DDThh:mm:ss[.fraction]Z`), the fraction cut to milliseconds.
fn unix_millis(s: &str) -> Option<i64> {
    let (date, time) = s.strip_suffix('Z')?.split_once('T')?;
    let number = |p: &str| p.parse::<i64>().ok();
    let d: Vec<i64> = date.split('-').map(number).collect::<Option<_>>()?;
    let (hms, fraction) = time.split_once('.').unwrap_or((time, ""));
    let t: Vec<i64> = hms.split(':').map(number).collect::<Option<_>>()?;
    if d.len() != 3 || t.len() != 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let millis = number(&format!("{fraction:0<3}")[..3])?;
    // Days from the civil date (H. Hinnant's algorithm).
    let (m, day) = (d[1], d[2]);
    let y = if m <= 2 { d[0] - 1 } else { d[0] };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + day - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    Some(((days * 24 + t[0]) * 60 + t[1]) * 60_000 + t[2] * 1000 + millis)
}

/// The object's path below `BASE` of a normalized event (`/` for the root).
fn path_of(event: &Value) -> String {
    let id = event["object"]["id"].as_str().unwrap_or_default();
    id.strip_prefix("BASE").unwrap_or(id).to_string()
}

fn kind_of(event: &Value) -> &str {
    event["type"][0].as_str().unwrap_or_default()
}

/// The parent path of a resource path (`/c1/b1` → `/c1`, `/c1` → `/`).
fn parent_of(path: &str) -> String {
    match path.rfind('/') {
        Some(0) | None => "/".into(),
        Some(i) => path[..i].to_string(),
    }
}

/// Splits `candidates` into arca's updates of a parent (an `Update` of the parent of a
/// resource created or deleted by the same request, `events`; one per parent) and the rest.
/// Fedora 6.1 sends no such update.
fn parent_updates(candidates: Vec<Value>, events: &[Value]) -> (Vec<Value>, Vec<Value>) {
    let mut parents: BTreeSet<String> = events
        .iter()
        .filter(|e| matches!(kind_of(e), "Create" | "Delete") && !path_of(e).contains("/fcr:"))
        .map(|e| parent_of(&path_of(e)))
        .collect();
    candidates
        .into_iter()
        .partition(|e| kind_of(e) == "Update" && parents.remove(&path_of(e)))
}

/// One line per event, for messages.
fn line(event: &Value) -> String {
    let actor: Vec<String> = event["actor"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            a["id"]
                .as_str()
                .or(a["name"].as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    let types: Vec<&str> = event["object"]["type"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    format!(
        "{} {:?} {} types={types:?} actor={actor:?}",
        kind_of(event),
        event["name"].as_str().unwrap_or_default(),
        path_of(event),
    )
}

/// Headers the broker sets on each delivery (not the publisher's to choose).
const BROKER_HEADERS: [&str; 4] = ["message-id", "destination", "subscription", "timestamp"];

/// A message's headers, normalized: the broker's own ([`BROKER_HEADERS`]) left out; the base
/// URL written `BASE`; `org.fcrepo.jms.eventID` and `org.fcrepo.jms.timestamp` checked
/// against the body's `id` and `published` and masked; the comma-separated
/// `org.fcrepo.jms.resourceType` sorted; `content-length` and `arca.seq` masked (the
/// presence of `content-length` is what matters: ActiveMQ makes a STOMP message with one a
/// JMS `BytesMessage`, without one a `TextMessage`).
fn message_headers(m: &Message, body: &Value, base: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (name, value) in &m.headers {
        if BROKER_HEADERS.contains(&name.as_str()) || out.contains_key(name) {
            continue;
        }
        let value = match name.as_str() {
            "org.fcrepo.jms.eventID" if Some(value.as_str()) == body["id"].as_str() => {
                "<the body's id>".to_string()
            }
            "org.fcrepo.jms.timestamp" => {
                let published = body["published"].as_str().and_then(unix_millis);
                match (value.parse::<i64>(), published) {
                    (Ok(ms), Some(p)) if ms == p => "<the body's published, in ms>".to_string(),
                    _ => value.clone(),
                }
            }
            "org.fcrepo.jms.resourceType" => {
                let mut types: Vec<&str> = value.split(',').map(str::trim).collect();
                types.sort_unstable();
                types.join(",")
            }
            "content-length" | "arca.seq" => "<n>".to_string(),
            _ => value.replace(base, "BASE"),
        };
        out.insert(name.clone(), value);
    }
    out
}

/// One server's messages and events for a request.
#[derive(Default)]
struct Seen {
    /// Normalized bodies.
    events: Vec<Value>,
    /// Normalized headers, one per event when known.
    headers: Vec<Option<BTreeMap<String, String>>>,
}

/// Reads Fedora's messages until `expected` have come and [`GRACE`] passed without more,
/// or [`SILENCE`] passed without any.
async fn fedora_messages(sub: &mut Subscriber, base: &str, expected: usize, seen: &mut Seen) {
    let mut problems = Vec::new();
    loop {
        let wait = if seen.events.len() >= expected {
            GRACE
        } else {
            SILENCE
        };
        let Some(m) = sub.next(wait).await.expect("Fedora's broker") else {
            break;
        };
        let body: Value = serde_json::from_slice(&m.body).unwrap_or_else(|e| {
            panic!(
                "Fedora sent a message that is not JSON ({e}): {:?}",
                m.body_str()
            )
        });
        problems.extend(form_problems(&body));
        seen.headers.push(Some(message_headers(&m, &body, base)));
        seen.events.push(normalize(&body, base));
    }
    assert!(problems.is_empty(), "Fedora's own events: {problems:?}");
}

/// arca's STOMP messages by sequence number, read until every one up to `last` is there.
async fn arca_messages(
    sub: &mut Subscriber,
    last: i64,
    got: &mut BTreeMap<i64, Message>,
    first: i64,
) {
    let started = Instant::now();
    while (first..=last).any(|s| !got.contains_key(&s)) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "arca's events {first}..={last} did not all reach the broker: {:?}",
            got.keys().collect::<Vec<_>>()
        );
        if let Some(m) = sub
            .next(Duration::from_millis(500))
            .await
            .expect("the private broker")
        {
            let seq: i64 = m
                .header("arca.seq")
                .expect("arca.seq")
                .parse()
                .expect("a number");
            got.insert(seq, m);
        }
    }
}

/// arca's events after `seq` (which is moved to the last one): their bodies from the log,
/// and, when it delivers to the private broker (`sub`), the headers of the same events as
/// delivered, whose bodies must be the logged ones.
async fn arca_events(
    http: &Http,
    arca: &Arca,
    seq: &mut i64,
    sub: Option<&mut Subscriber>,
    delivered: &mut BTreeMap<i64, Message>,
) -> Seen {
    let logged = arca.events_after(http, *seq).await;
    let mut ours = Seen::default();
    let mut problems = Vec::new();
    for (n, body) in &logged {
        problems.extend(form_problems(body));
        ours.events.push(normalize(body, &arca.base));
        ours.headers.push(None);
        *seq = *n;
    }
    assert!(problems.is_empty(), "arca's events: {problems:?}");
    if let (Some(sub), Some((first, _))) = (sub, logged.first()) {
        arca_messages(sub, *seq, delivered, *first).await;
        for (k, (n, body)) in logged.iter().enumerate() {
            let m = &delivered[n];
            let sent: Value = serde_json::from_slice(&m.body).unwrap();
            assert_eq!(&sent, body, "event {n} as delivered and as logged");
            ours.headers[k] = Some(message_headers(m, body, &arca.base));
        }
    }
    ours
}

/// The multiset difference `a - b`.
fn minus(a: &[Value], b: &[Value]) -> Vec<Value> {
    let mut rest: Vec<Option<&Value>> = b.iter().map(Some).collect();
    let mut out = Vec::new();
    for v in a {
        match rest.iter_mut().find(|r| **r == Some(v)) {
            Some(slot) => *slot = None,
            None => out.push(v.clone()),
        }
    }
    out
}

/// (header, Fedora's value, arca's value).
type HeaderDiff = (String, Option<String>, Option<String>);

/// What the comparison found over the whole script.
#[derive(Default)]
struct Report {
    /// The differences, request by request.
    diffs: String,
    /// Header differences → the messages that show them.
    headers: BTreeMap<HeaderDiff, Vec<String>>,
    /// Pairs of messages whose headers were compared.
    compared_headers: usize,
    /// arca's updates of a parent that Fedora does not send.
    parents_updated: usize,
}

impl Report {
    /// Compares what Fedora (`theirs`) and arca (`ours`) reported for one request.
    fn compare(&mut self, label: &str, theirs: &Seen, ours: &Seen) {
        let only_arca = minus(&ours.events, &theirs.events);
        let only_fedora = minus(&theirs.events, &ours.events);
        let (parents, only_arca) = parent_updates(only_arca, &ours.events);
        self.parents_updated += parents.len();
        if !only_arca.is_empty() || !only_fedora.is_empty() {
            let _ = writeln!(self.diffs, "{label}:");
            for e in &only_fedora {
                let _ = writeln!(self.diffs, "    only Fedora: {}\n        {e}", line(e));
                let at = theirs.events.iter().position(|t| t == e).unwrap();
                if let Some(h) = &theirs.headers[at] {
                    let _ = writeln!(self.diffs, "        headers {h:?}");
                }
            }
            for e in &only_arca {
                let _ = writeln!(self.diffs, "    only arca:   {}\n        {e}", line(e));
            }
        }

        // The headers of each pair of equal bodies.
        let mut used = vec![false; ours.events.len()];
        for (fe, fh) in theirs.events.iter().zip(&theirs.headers) {
            let Some(k) = (0..ours.events.len()).find(|&k| !used[k] && ours.events[k] == *fe)
            else {
                continue;
            };
            used[k] = true;
            let (Some(fh), Some(ah)) = (fh, &ours.headers[k]) else {
                continue;
            };
            let mut ah = ah.clone();
            assert!(
                ah.remove("arca.seq").is_some(),
                "{label}: arca's message has no arca.seq"
            );
            let names: BTreeSet<&String> = fh.keys().chain(ah.keys()).collect();
            for n in names {
                if fh.get(n) != ah.get(n) {
                    self.headers
                        .entry((n.clone(), fh.get(n).cloned(), ah.get(n).cloned()))
                        .or_default()
                        .push(format!("{label}: {} {}", kind_of(fe), path_of(fe)));
                }
            }
            self.compared_headers += 1;
        }
    }

    /// Every difference found, header differences last (once each, with a count).
    fn differences(&self) -> String {
        let mut out = self.diffs.clone();
        for ((name, theirs, ours), messages) in &self.headers {
            let _ = writeln!(
                out,
                "header {name}: Fedora {theirs:?}, arca {ours:?} ({} of {} messages, e.g. {})",
                messages.len(),
                self.compared_headers,
                messages[0]
            );
        }
        out
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arca_reports_the_changes_fedora_reports() {
    let test_started = Instant::now();
    let broker = tokio::task::spawn_blocking(ActiveMq::start);
    let Some(fedora) = Fedora::start().await else {
        return;
    };
    eprintln!("Fedora 6 answered after {:.1?}", fedora.started_in);
    let broker = broker.await.expect("the broker's start");
    let data = tempfile::tempdir().unwrap();
    let stomp_url = broker.as_ref().map(ActiveMq::stomp_url);
    let env: Vec<(&str, &str)> = match &stomp_url {
        Some(url) => vec![
            ("ARCA_EVENTS_STOMP_URL", url.as_str()),
            ("ARCA_EVENTS_DESTINATION", ARCA_QUEUE),
        ],
        None => vec![],
    };
    let arca = Arca::serve_with(data.path(), &env);
    let http = Http::new();
    let fedora_target =
        StompTarget::parse(&format!("stomp://127.0.0.1:{}", fedora.stomp_port)).unwrap();
    let mut fedora_sub = Subscriber::connect(&fedora_target, FEDORA_TOPIC, Duration::from_secs(10))
        .await
        .expect("Fedora's embedded broker takes a STOMP subscription");
    let mut arca_sub = match &stomp_url {
        Some(url) => Some(
            Subscriber::connect(
                &StompTarget::parse(url).unwrap(),
                ARCA_QUEUE,
                Duration::from_secs(10),
            )
            .await
            .unwrap(),
        ),
        None => None,
    };
    let mut arca_stomp = BTreeMap::new();
    let mut seq = arca.last_event(&http).await;
    let script_started = Instant::now();

    let mut report = Report::default();
    for (i, s) in script().iter().enumerate() {
        let label = format!("step {i}: {} {}", s.method, s.path);
        let mut headers: Vec<(&str, &str)> =
            s.headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        headers.push(("user-agent", AGENT));
        let mut statuses = Vec::new();
        for base in [&fedora.base, &arca.base] {
            let body = s.body.replace("{B}", base);
            let url = format!("{base}{}", s.path);
            let r = http
                .request(s.method.clone(), &url, &headers, Bytes::from(body))
                .await;
            statuses.push((r.status.as_u16(), r.text()));
        }
        assert!(
            statuses
                .iter()
                .all(|(status, _)| (200..300).contains(status)),
            "{label}: Fedora answered {} {}, arca {} {}",
            statuses[0].0,
            statuses[0].1,
            statuses[1].0,
            statuses[1].1
        );
        if statuses[0].0 != statuses[1].0 {
            let _ = writeln!(
                report.diffs,
                "{label}: status: Fedora {}, arca {}",
                statuses[0].0, statuses[1].0
            );
        }

        let ours = arca_events(&http, &arca, &mut seq, arca_sub.as_mut(), &mut arca_stomp).await;
        let expected =
            ours.events.len() - parent_updates(ours.events.clone(), &ours.events).0.len();

        // Fedora: its messages for this request.
        let mut theirs = Seen::default();
        fedora_messages(&mut fedora_sub, &fedora.base, expected, &mut theirs).await;

        eprintln!("{label}");
        for e in &theirs.events {
            eprintln!("    Fedora: {}", line(e));
        }
        for e in &ours.events {
            eprintln!("    arca:   {}", line(e));
        }

        report.compare(&label, &theirs, &ours);
    }

    // Nothing comes late.
    let mut late = Seen::default();
    fedora_messages(&mut fedora_sub, &fedora.base, usize::MAX, &mut late).await;
    for e in &late.events {
        let _ = writeln!(report.diffs, "after the script: only Fedora: {}", line(e));
    }
    assert_eq!(
        arca.last_event(&http).await,
        seq,
        "arca logged nothing more"
    );

    eprintln!(
        "the script took {:.1?}; the whole test {:.1?}; arca's parent updates: {}",
        script_started.elapsed(),
        test_started.elapsed(),
        report.parents_updated
    );
    let differences = report.differences();
    assert!(
        differences.is_empty(),
        "arca's events differ from Fedora 6.1's:\n{differences}"
    );
    assert!(
        report.parents_updated > 0,
        "arca updates the parent of a new child"
    );
    if broker.is_some() {
        assert!(report.compared_headers > 0, "no headers were compared");
    }
    if let Some(sub) = arca_sub {
        sub.close().await;
    }
    fedora_sub.close().await;
    arca.stop();
    drop(broker);
}
