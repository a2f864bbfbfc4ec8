//! One change-log entry as the ActivityStreams 2.0 message Fedora 6 sends for it: the same
//! JSON-LD body (`id`, `type`, `name`, `published`, `actor`, `object` with the resource's
//! IRI and rdf:types, `@context`) and the same `org.fcrepo.jms.*` headers, plus `arca.seq`,
//! the entry's sequence number, so that consumers can drop a message delivered twice. Never
//! the resource's content.

use arca_catalog::{ChangeEntry, ChangeKind};
use arca_model::parse_instant;
use serde_json::{json, Value};

/// Fedora's agent IRI base for users (`fcrepo.auth.webac.userAgent.baseUri`'s default).
pub const DEFAULT_USER_BASE_URI: &str = "info:fedora/local-user#";

/// The header that carries an event's sequence number.
pub const SEQ_HEADER: &str = "arca.seq";

const PROV_ENTITY: &str = "http://www.w3.org/ns/prov#Entity";
const ACTIVITY_STREAMS: &str = "https://www.w3.org/ns/activitystreams";

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

impl EventNames {
    /// The URL of the resource `entry` is about.
    pub fn object_url(&self, entry: &ChangeEntry) -> String {
        let id = &entry.change.id;
        if id.is_root() {
            // As Fedora: the root's URL ends with a slash.
            format!("{}/", self.base_url)
        } else {
            format!("{}/{}", self.base_url, id.encoded_path())
        }
    }
}

/// The ActivityStreams type and Fedora's name of a kind of change.
fn activity(kind: ChangeKind) -> (&'static str, &'static str) {
    match kind {
        ChangeKind::Create => ("Create", "create resource"),
        ChangeKind::Update => ("Update", "update resource"),
        ChangeKind::Delete => ("Delete", "delete resource"),
        ChangeKind::Purge => ("Purge", "remove resource tombstone"),
        ChangeKind::Follow => ("Follow", "refer to resource"),
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

/// The JSON-LD body of the event for `entry`, as Fedora 6.1 writes it.
pub fn body(entry: &ChangeEntry, names: &EventNames) -> Value {
    let c = &entry.change;
    let (kind, name) = activity(c.kind);
    let mut types: Vec<&str> = c.types.iter().map(String::as_str).collect();
    if !types.contains(&PROV_ENTITY) {
        types.push(PROV_ENTITY);
    }
    let person = if c.user.contains(':') {
        c.user.clone()
    } else {
        format!("{}{}", names.user_base_uri, c.user)
    };
    let mut actor = vec![json!({ "type": "Person", "id": person })];
    if let Some(agent) = &c.agent {
        actor.push(json!({ "type": "Application", "name": agent }));
    }
    json!({
        "id": event_id(entry, names),
        "type": [kind],
        "name": name,
        "published": c.at,
        "actor": actor,
        "object": {
            "type": types,
            "id": names.object_url(entry),
            "isPartOf": names.base_url,
        },
        "@context": [
            format!("{ACTIVITY_STREAMS}#"),
            {
                "prov": "http://www.w3.org/ns/prov#",
                "dcterms": "http://purl.org/dc/terms/",
                "type": "@type",
                "id": "@id",
                "isPartOf": { "@id": "dcterms:isPartOf", "@type": "@id" },
            },
        ],
    })
}

/// The message headers Fedora 6 sets (`org.fcrepo.jms.*`) and [`SEQ_HEADER`].
pub fn headers(entry: &ChangeEntry, names: &EventNames) -> Vec<(String, String)> {
    let c = &entry.change;
    let (kind, _) = activity(c.kind);
    let millis = parse_instant(&c.at)
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
        .unwrap_or_default();
    let mut out = vec![
        ("org.fcrepo.jms.identifier".into(), identifier(entry)),
        (
            "org.fcrepo.jms.eventType".into(),
            format!("{ACTIVITY_STREAMS}#{kind}"),
        ),
        ("org.fcrepo.jms.user".into(), c.user.clone()),
        ("org.fcrepo.jms.baseURL".into(), names.base_url.clone()),
        ("org.fcrepo.jms.resourceType".into(), c.types.join(",")),
        ("org.fcrepo.jms.eventID".into(), event_id(entry, names)),
        ("org.fcrepo.jms.timestamp".into(), millis.to_string()),
        (SEQ_HEADER.into(), entry.seq.to_string()),
    ];
    if let Some(agent) = &c.agent {
        out.push(("org.fcrepo.jms.userAgent".into(), agent.clone()));
    }
    out
}

/// The resource's path below the REST base, with a leading slash (`/a/b`; `/` for the root).
fn identifier(entry: &ChangeEntry) -> String {
    format!("/{}", entry.change.id.encoded_path())
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
        let v = body(&e, &names());
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
        let h = headers(&e, &names());
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
    }

    #[test]
    fn the_id_is_stable_per_entry_and_differs_between_entries() {
        let e = entry(ChangeKind::Purge, None, &[]);
        assert_eq!(event_id(&e, &names()), event_id(&e, &names()));
        let mut other = e.clone();
        other.seq += 1;
        assert_ne!(event_id(&e, &names()), event_id(&other, &names()));
        let v = body(&e, &names());
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
