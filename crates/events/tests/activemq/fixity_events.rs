//! A fixity audit's finding reaches a real ActiveMQ as the PREMIS fixity event the change
//! log holds (issue 41 §2): the delivery sends it like any change, in Fedora's message shape
//! with the PREMIS event type as `org.fcrepo.jms.eventType`, so existing consumers get it.

use std::sync::Arc;
use std::time::Duration;

use arca_catalog::{Catalog, CatalogOp, Change, ChangeKind, FixityOutcome, SqliteCatalog};
use arca_events::delivery::{self, StompDestination};
use arca_events::event::{EventNames, DEFAULT_USER_BASE_URI, PREMIS_FIXITY_CHECK};
use arca_events::stomp::{StompTarget, Subscriber};
use arca_model::FedoraId;
use arca_testkit::activemq::ActiveMq;
use serde_json::Value;

const QUEUE: &str = "/queue/arca-fixity-test";

fn fixity(outcome: FixityOutcome, detail: &str) -> CatalogOp {
    CatalogOp::Log(Change {
        id: FedoraId::from_path("d/bin").unwrap(),
        kind: ChangeKind::Fixity(outcome),
        at: "2026-11-29T09:30:00Z".into(),
        user: "arca-fixity".into(),
        agent: Some(detail.into()),
        types: vec!["http://www.w3.org/ns/ldp#NonRDFSource".into()],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixity_finding_and_its_repair_arrive_as_premis_events() {
    let Some(broker) = ActiveMq::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let catalog: Arc<dyn Catalog> =
        Arc::new(SqliteCatalog::open(&dir.path().join("catalog.sqlite")).unwrap());
    catalog
        .apply(vec![fixity(
            FixityOutcome::Failure,
            "content_digest: a bit flipped; expected sha512:aa, found sha512:bb; file v1/content/bin (v1)",
        )])
        .await
        .unwrap();
    catalog
        .apply(vec![fixity(
            FixityOutcome::Success,
            "repaired from replica r1",
        )])
        .await
        .unwrap();
    let target = StompTarget::parse(&broker.stomp_url()).unwrap();
    let mut subscriber = Subscriber::connect(&target, QUEUE, Duration::from_secs(10))
        .await
        .expect("subscribed");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let names = EventNames {
        base_url: "http://localhost:8080/rest".into(),
        user_base_uri: DEFAULT_USER_BASE_URI.into(),
    };
    let running = delivery::spawn(
        catalog.clone(),
        names,
        StompDestination {
            target,
            destination: QUEUE.into(),
            deliver_history: true,
        },
        stopped,
    );
    let mut received = Vec::new();
    while received.len() < 2 {
        let m = subscriber
            .next(Duration::from_secs(30))
            .await
            .expect("the broker answers")
            .expect("a fixity event arrived");
        let body: Value = serde_json::from_slice(&m.body).unwrap();
        assert_eq!(
            m.header("org.fcrepo.jms.eventType"),
            Some(PREMIS_FIXITY_CHECK)
        );
        assert_eq!(m.header("org.fcrepo.jms.identifier"), Some("/d/bin"));
        assert_eq!(
            m.header("org.fcrepo.jms.resourceType"),
            Some("http://www.w3.org/ns/ldp#NonRDFSource")
        );
        assert_eq!(m.header("org.fcrepo.jms.eventID"), body["id"].as_str());
        received.push(body);
    }
    let _ = stop.send(true);
    let _ = running.task.await;
    assert_eq!(
        received[0]["type"],
        serde_json::json!(["Activity", "premis:Event"])
    );
    assert_eq!(
        received[0]["object"]["id"],
        "http://localhost:8080/rest/d/bin"
    );
    assert_eq!(
        received[0]["premis:outcome"]["id"],
        "http://id.loc.gov/vocabulary/preservation/eventOutcome/fai"
    );
    assert!(received[0]["summary"]
        .as_str()
        .unwrap()
        .contains("expected sha512:aa, found sha512:bb"));
    assert_eq!(
        received[1]["premis:outcome"]["id"],
        "http://id.loc.gov/vocabulary/preservation/eventOutcome/suc"
    );
}
