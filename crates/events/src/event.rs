//! One change-log entry as the ActivityStreams 2.0 message Fedora 6 sends for it: the same
//! JSON-LD body (`id`, `type`, `name`, `published`, `actor`, `object` with the resource's
//! IRI and rdf:types, `@context`) and the same `org.fcrepo.jms.*` headers, plus `arca.seq`,
//! the entry's sequence number, so that consumers can drop a message delivered twice. Never
//! the resource's content.
//!
//! A fixity entry (an audit found the resource's stored bytes damaged, or repaired them)
//! keeps that shape, so existing consumers parse it and, not knowing its `type`, skip it,
//! and adds PREMIS 3: `type` `["Activity", "premis:Event"]`, `premis:eventType`
//! `evType:fix`, `premis:outcome` `eventOutcome/fai` or `eventOutcome/suc` (as Fedora's
//! `fcr:fixity` answer names its outcome), and the check's detail (expected and actual
//! digest) as the activity's `summary`; its `org.fcrepo.jms.eventType` header is the PREMIS
//! event type's IRI.

use std::borrow::Cow;
use std::sync::OnceLock;

use arca_catalog::{ChangeEntry, ChangeKind, FixityOutcome};
use arca_model::parse_instant;
use serde::Serialize;
use serde_json::{json, Value};

/// Fedora's agent IRI base for users (`fcrepo.auth.webac.userAgent.baseUri`'s default).
pub const DEFAULT_USER_BASE_URI: &str = "info:fedora/local-user#";

/// The header that carries an event's sequence number.
pub const SEQ_HEADER: &str = "arca.seq";

const PROV_ENTITY: &str = "http://www.w3.org/ns/prov#Entity";
const ACTIVITY_STREAMS: &str = "https://www.w3.org/ns/activitystreams";

/// PREMIS's event type of a fixity check.
pub const PREMIS_FIXITY_CHECK: &str = "http://id.loc.gov/vocabulary/preservation/eventType/fix";
/// PREMIS's event outcome "failure".
pub const PREMIS_OUTCOME_FAILURE: &str =
    "http://id.loc.gov/vocabulary/preservation/eventOutcome/fai";
/// PREMIS's event outcome "success".
pub const PREMIS_OUTCOME_SUCCESS: &str =
    "http://id.loc.gov/vocabulary/preservation/eventOutcome/suc";
/// The software named as the actor of fixity events.
pub const FIXITY_AGENT: &str = "arca fixity audit";

/// How events name resources and users.
#[derive(Debug, Clone)]
pub struct EventNames {
    /// The repository's REST base URL without a trailing slash
    /// (`http://localhost:8080/rest`).
    pub base_url: String,
    /// Prefix that makes a user name an agent IRI (Fedora's `info:fedora/local-user#`);
    /// users recorded as IRIs (`auth.user_base_uri` is set) are used as they are.
    pub user_base_uri: String,
}

/// The ActivityStreams types and Fedora's name of a kind of change.
fn activity(kind: ChangeKind) -> (&'static [&'static str], &'static str) {
    const FIXITY: &[&str] = &["Activity", "premis:Event"];
    match kind {
        ChangeKind::Create => (&["Create"], "create resource"),
        ChangeKind::Update => (&["Update"], "update resource"),
        ChangeKind::Delete => (&["Delete"], "delete resource"),
        ChangeKind::Purge => (&["Purge"], "remove resource tombstone"),
        ChangeKind::Follow => (&["Follow"], "refer to resource"),
        ChangeKind::Fixity(FixityOutcome::Failure) => (FIXITY, "fixity check failed"),
        ChangeKind::Fixity(FixityOutcome::Success) => (FIXITY, "fixity damage repaired"),
    }
}

/// The PREMIS outcome of a fixity entry.
fn fixity_outcome(kind: ChangeKind) -> Option<&'static str> {
    match kind {
        ChangeKind::Fixity(FixityOutcome::Failure) => Some(PREMIS_OUTCOME_FAILURE),
        ChangeKind::Fixity(FixityOutcome::Success) => Some(PREMIS_OUTCOME_SUCCESS),
        _ => None,
    }
}

/// The event's id: a name-based UUID of the repository's URL, the sequence number and the
/// instant, so that a message delivered again carries the same id.
pub fn event_id(entry: &ChangeEntry, names: &EventNames) -> String {
    let name = format!("{}#{}@{}", names.base_url, entry.seq, entry.change.at);
    format!(
        "urn:uuid:{}",
        uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, name.as_bytes())
    )
}

/// The event of one change-log entry, with what its body and its headers share computed
/// once: the event id and the resource's path.
#[derive(Debug)]
pub struct Event<'a> {
    entry: &'a ChangeEntry,
    names: &'a EventNames,
    id: String,
    /// The resource's encoded path below the REST base (empty for the root).
    path: String,
}

impl<'a> Event<'a> {
    /// The event of `entry`, its resources named under `names`.
    pub fn new(entry: &'a ChangeEntry, names: &'a EventNames) -> Self {
        Event {
            entry,
            names,
            id: event_id(entry, names),
            path: entry.change.id.encoded_path(),
        }
    }

    /// The event id ([`event_id`]).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The JSON-LD body, as Fedora 6.1 writes it.
    pub fn body(&self) -> Value {
        serde_json::to_value(self.serializable()).unwrap_or_default()
    }

    /// Appends the JSON-LD body's bytes (what [`body`](Self::body) holds) to `out`.
    pub fn write_body(&self, out: &mut Vec<u8>) {
        // Writing into a Vec cannot fail, nor can serializing strings and lists.
        let _ = serde_json::to_writer(out, &self.serializable());
    }

    /// The message headers Fedora 6 sets (`org.fcrepo.jms.*`) and [`SEQ_HEADER`].
    pub fn headers(&self) -> Vec<(String, String)> {
        let c = &self.entry.change;
        let (kinds, _) = activity(c.kind);
        let fixity = fixity_outcome(c.kind).is_some();
        let event_type = if fixity {
            PREMIS_FIXITY_CHECK.to_string()
        } else {
            format!("{ACTIVITY_STREAMS}#{}", kinds[0])
        };
        let mut out = Vec::with_capacity(9);
        out.extend([
            (
                "org.fcrepo.jms.identifier".to_string(),
                format!("/{}", self.path),
            ),
            ("org.fcrepo.jms.eventType".into(), event_type),
            ("org.fcrepo.jms.user".into(), c.user.clone()),
            ("org.fcrepo.jms.baseURL".into(), self.names.base_url.clone()),
            ("org.fcrepo.jms.resourceType".into(), c.types.join(",")),
            ("org.fcrepo.jms.eventID".into(), self.id.clone()),
            (
                "org.fcrepo.jms.timestamp".into(),
                unix_millis(&c.at).to_string(),
            ),
            (SEQ_HEADER.into(), self.entry.seq.to_string()),
        ]);
        if fixity {
            out.push(("org.fcrepo.jms.userAgent".into(), FIXITY_AGENT.into()));
        } else if let Some(agent) = &c.agent {
            out.push(("org.fcrepo.jms.userAgent".into(), agent.clone()));
        }
        out
    }

    fn serializable(&self) -> Body<'_> {
        let c = &self.entry.change;
        let (kind, name) = activity(c.kind);
        let mut types: Vec<&str> = c.types.iter().map(String::as_str).collect();
        if !types.contains(&PROV_ENTITY) {
            types.push(PROV_ENTITY);
        }
        let person = if c.user.contains(':') {
            Cow::Borrowed(c.user.as_str())
        } else {
            Cow::Owned(format!("{}{}", self.names.user_base_uri, c.user))
        };
        let mut actor = vec![Actor::Person { id: person }];
        let outcome = fixity_outcome(c.kind);
        if outcome.is_some() {
            // A fixity entry's agent column holds the check's detail, not a User-Agent.
            actor.push(Actor::Application { name: FIXITY_AGENT });
        } else if let Some(agent) = &c.agent {
            actor.push(Actor::Application { name: agent });
        }
        let url = if self.entry.change.id.is_root() {
            // As Fedora: the root's URL ends with a slash.
            format!("{}/", self.names.base_url)
        } else {
            format!("{}/{}", self.names.base_url, self.path)
        };
        let object = Object {
            kind: types,
            id: url,
            is_part_of: &self.names.base_url,
        };
        Body {
            id: &self.id,
            kind,
            name,
            published: &c.at,
            actor,
            object,
            summary: outcome.and(c.agent.as_deref()),
            event_type: outcome.map(|_| Reference {
                id: PREMIS_FIXITY_CHECK,
            }),
            outcome: outcome.map(|id| Reference { id }),
            context: if outcome.is_some() {
                fixity_context()
            } else {
                context()
            },
        }
    }
}

/// The JSON-LD body in Fedora's member order.
#[derive(Serialize)]
struct Body<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static [&'static str],
    name: &'static str,
    published: &'a str,
    actor: Vec<Actor<'a>>,
    object: Object<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a str>,
    #[serde(rename = "premis:eventType", skip_serializing_if = "Option::is_none")]
    event_type: Option<Reference>,
    #[serde(rename = "premis:outcome", skip_serializing_if = "Option::is_none")]
    outcome: Option<Reference>,
    #[serde(rename = "@context")]
    context: &'static Value,
}

/// A node named by its IRI (`{"id": …}`).
#[derive(Serialize)]
struct Reference {
    id: &'static str,
}

#[derive(Serialize)]
#[serde(tag = "type")]
enum Actor<'a> {
    Person { id: Cow<'a, str> },
    Application { name: &'a str },
}

#[derive(Serialize)]
struct Object<'a> {
    #[serde(rename = "type")]
    kind: Vec<&'a str>,
    id: String,
    #[serde(rename = "isPartOf")]
    is_part_of: &'a str,
}

/// The `@context` every event carries.
fn context() -> &'static Value {
    static CONTEXT: OnceLock<Value> = OnceLock::new();
    CONTEXT.get_or_init(|| {
        json!([
            format!("{ACTIVITY_STREAMS}#"),
            {
                "prov": "http://www.w3.org/ns/prov#",
                "dcterms": "http://purl.org/dc/terms/",
                "type": "@type",
                "id": "@id",
                "isPartOf": { "@id": "dcterms:isPartOf", "@type": "@id" },
            },
        ])
    })
}

/// The `@context` of fixity events: [`context`]'s terms and PREMIS 3's.
fn fixity_context() -> &'static Value {
    static CONTEXT: OnceLock<Value> = OnceLock::new();
    CONTEXT.get_or_init(|| {
        let mut c = context().clone();
        c[1]["premis"] = json!("http://www.loc.gov/premis/rdf/v3/");
        c[1]["premis:eventType"] = json!({ "@type": "@id" });
        c[1]["premis:outcome"] = json!({ "@type": "@id" });
        c[1]["summary"] = json!(format!("{ACTIVITY_STREAMS}#summary"));
        c
    })
}

/// The instant `at` (RFC 3339) in milliseconds since 1970 (0 if it is not one). The change
/// log writes `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, read here without a general parser; other
/// forms go through [`parse_instant`].
fn unix_millis(at: &str) -> i64 {
    utc_millis(at)
        .or_else(|| parse_instant(at).map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64))
        .unwrap_or_default()
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z` in milliseconds since 1970; `None` for any other form.
fn utc_millis(at: &str) -> Option<i64> {
    let b = at.as_bytes();
    let number = |from: usize, to: usize| -> Option<i64> {
        b.get(from..to)?.iter().try_fold(0i64, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0'))
        })
    };
    let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if b.last() != Some(&b'Z') || separators.iter().any(|&(i, c)| b.get(i) != Some(&c)) {
        return None;
    }
    let fraction = match &b[19..b.len() - 1] {
        [] => 0,
        [b'.', digits @ ..] if (1..=9).contains(&digits.len()) => {
            let ms = number(20, 20 + digits.len().min(3))?;
            number(20, 20 + digits.len())?;
            ms * 10i64.pow(3 - digits.len().min(3) as u32)
        }
        _ => return None,
    };
    let (hour, minute, second) = (number(11, 13)?, number(14, 16)?, number(17, 19)?);
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let month = time::Month::try_from(u8::try_from(number(5, 7)?).ok()?).ok()?;
    let day = u8::try_from(number(8, 10)?).ok()?;
    let date =
        time::Date::from_calendar_date(i32::try_from(number(0, 4)?).ok()?, month, day).ok()?;
    // Julian day 2440588 is 1970-01-01.
    let days = i64::from(date.to_julian_day() - 2_440_588);
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + fraction)
}

#[cfg(test)]
mod tests {
    use arca_catalog::Change;
    use arca_model::FedoraId;

    use super::*;

    fn entry(kind: ChangeKind, agent: Option<&str>, types: &[&str]) -> ChangeEntry {
        ChangeEntry {
            seq: 42,
            change: Change {
                id: FedoraId::from_path("c1/b 1").unwrap(),
                kind,
                at: "2026-11-24T19:37:36.531061929Z".into(),
                user: "fedoraAdmin".into(),
                agent: agent.map(str::to_string),
                types: types.iter().map(|t| t.to_string()).collect(),
            },
        }
    }

    fn names() -> EventNames {
        EventNames {
            base_url: "http://127.0.0.1:8080/rest".into(),
            user_base_uri: DEFAULT_USER_BASE_URI.into(),
        }
    }

    #[test]
    fn a_create_reads_as_fedora_writes_it() {
        let e = entry(
            ChangeKind::Create,
            Some("curl/7.88.1"),
            &["http://www.w3.org/ns/ldp#NonRDFSource"],
        );
        let names = names();
        let event = Event::new(&e, &names);
        let v = event.body();
        assert_eq!(v["type"], json!(["Create"]));
        assert_eq!(v["name"], "create resource");
        assert_eq!(v["published"], "2026-11-24T19:37:36.531061929Z");
        assert_eq!(
            v["actor"],
            json!([
                {"type": "Person", "id": "info:fedora/local-user#fedoraAdmin"},
                {"type": "Application", "name": "curl/7.88.1"}
            ])
        );
        assert_eq!(
            v["object"],
            json!({
                "type": ["http://www.w3.org/ns/ldp#NonRDFSource", PROV_ENTITY],
                "id": "http://127.0.0.1:8080/rest/c1/b%201",
                "isPartOf": "http://127.0.0.1:8080/rest",
            })
        );
        assert_eq!(v["@context"][0], "https://www.w3.org/ns/activitystreams#");
        let h = event.headers();
        let get = |n: &str| h.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("org.fcrepo.jms.identifier"), Some("/c1/b%201"));
        assert_eq!(
            get("org.fcrepo.jms.eventType"),
            Some("https://www.w3.org/ns/activitystreams#Create")
        );
        assert_eq!(get("org.fcrepo.jms.timestamp"), Some("1795549056531"));
        assert_eq!(get(SEQ_HEADER), Some("42"));
        assert_eq!(get("org.fcrepo.jms.userAgent"), Some("curl/7.88.1"));
        assert_eq!(get("org.fcrepo.jms.eventID"), v["id"].as_str());
        assert_eq!(event.id(), event_id(&e, &names));
    }

    #[test]
    fn the_written_body_is_the_body() {
        let names = names();
        for e in [
            entry(
                ChangeKind::Create,
                Some("curl/7.88.1"),
                &[PROV_ENTITY, "x:T"],
            ),
            entry(ChangeKind::Delete, None, &[]),
        ] {
            let event = Event::new(&e, &names);
            let mut bytes = Vec::new();
            event.write_body(&mut bytes);
            assert_eq!(String::from_utf8(bytes).unwrap(), event.body().to_string());
        }
        let mut root = entry(ChangeKind::Update, None, &[]);
        root.change.id = FedoraId::root();
        let v = Event::new(&root, &names).body();
        assert_eq!(v["object"]["id"], "http://127.0.0.1:8080/rest/");
        assert_eq!(
            Event::new(&root, &names).headers()[0],
            ("org.fcrepo.jms.identifier".to_string(), "/".to_string())
        );
        let mut iri_user = entry(ChangeKind::Update, None, &[]);
        iri_user.change.user = "http://example.org/me".into();
        let v = Event::new(&iri_user, &names).body();
        assert_eq!(v["actor"][0]["id"], "http://example.org/me");
    }

    #[test]
    fn a_fixity_entry_is_a_premis_event_in_the_same_shape() {
        let mut e = entry(
            ChangeKind::Fixity(FixityOutcome::Failure),
            Some("expected sha512:aa, found sha512:bb (v1/content/b 1)"),
            &["http://www.w3.org/ns/ldp#NonRDFSource"],
        );
        e.change.user = "arca-fixity".into();
        let names = names();
        let event = Event::new(&e, &names);
        let v = event.body();
        assert_eq!(v["type"], json!(["Activity", "premis:Event"]));
        assert_eq!(v["premis:eventType"]["id"], PREMIS_FIXITY_CHECK);
        assert_eq!(v["premis:outcome"]["id"], PREMIS_OUTCOME_FAILURE);
        assert_eq!(
            v["summary"],
            "expected sha512:aa, found sha512:bb (v1/content/b 1)"
        );
        assert_eq!(
            v["actor"],
            json!([
                {"type": "Person", "id": "info:fedora/local-user#arca-fixity"},
                {"type": "Application", "name": FIXITY_AGENT}
            ])
        );
        assert_eq!(v["object"]["id"], "http://127.0.0.1:8080/rest/c1/b%201");
        assert_eq!(
            v["@context"][1]["premis"],
            "http://www.loc.gov/premis/rdf/v3/"
        );
        let h = event.headers();
        let get = |n: &str| h.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("org.fcrepo.jms.eventType"), Some(PREMIS_FIXITY_CHECK));
        assert_eq!(get("org.fcrepo.jms.userAgent"), Some(FIXITY_AGENT));
        let mut bytes = Vec::new();
        event.write_body(&mut bytes);
        assert_eq!(String::from_utf8(bytes).unwrap(), v.to_string());
        e.change.kind = ChangeKind::Fixity(FixityOutcome::Success);
        let v = Event::new(&e, &names).body();
        assert_eq!(v["premis:outcome"]["id"], PREMIS_OUTCOME_SUCCESS);
        // Other events keep Fedora's shape: no PREMIS members, the plain context.
        let v = Event::new(&entry(ChangeKind::Update, Some("curl/8"), &[]), &names).body();
        assert!(v.get("summary").is_none() && v.get("premis:outcome").is_none());
        assert!(v["@context"][1].get("premis").is_none());
    }

    #[test]
    fn milliseconds_read_without_the_parser_equal_the_parsers() {
        for at in [
            "2026-11-24T19:37:36.531061929Z",
            "2026-11-24T19:37:36Z",
            "2026-11-24T19:37:36.5Z",
            "2026-11-24T19:37:36.53Z",
            "1970-01-01T00:00:00Z",
            "1969-12-31T23:59:59.999Z",
            "2024-02-29T12:00:00.001000Z",
            "0001-01-01T00:00:00Z",
        ] {
            let parsed = parse_instant(at).unwrap().unix_timestamp_nanos() / 1_000_000;
            assert_eq!(utc_millis(at), Some(parsed as i64), "{at}");
        }
        for at in [
            "2026-11-24T19:37:36+01:00",
            "2026-02-30T00:00:00Z",
            "2026-11-24T24:00:00Z",
            "2026-11-24T19:37:36.Z",
            "2026-11-24T19:37:36.1234567890Z",
            "2026-11-24 19:37:36Z",
            "",
        ] {
            assert_eq!(utc_millis(at), None, "{at}");
        }
        assert_eq!(unix_millis("2026-11-24T20:37:36.531+01:00"), 1795549056531);
        assert_eq!(unix_millis("not an instant"), 0);
    }

    #[test]
    fn the_id_is_stable_per_entry_and_differs_between_entries() {
        let e = entry(ChangeKind::Purge, None, &[]);
        assert_eq!(event_id(&e, &names()), event_id(&e, &names()));
        let mut other = e.clone();
        other.seq += 1;
        assert_ne!(event_id(&e, &names()), event_id(&other, &names()));
        let names = names();
        let v = Event::new(&e, &names).body();
        assert_eq!(v["type"], json!(["Purge"]));
        assert_eq!(v["name"], "remove resource tombstone");
        assert_eq!(v["object"]["type"], json!([PROV_ENTITY]));
        assert_eq!(
            v["actor"].as_array().unwrap().len(),
            1,
            "no agent, no Application"
        );
    }
}
