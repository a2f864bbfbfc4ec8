//! The STOMP client against a real Apache ActiveMQ broker (arca-testkit's [`ActiveMq`]): what
//! is published arrives complete and in order, a stopped broker fails fast, a restarted one
//! works again, and refusals are clear errors. Each test starts its own private broker;
//! without ActiveMQ they are skipped unless `ARCA_REQUIRE_ACTIVEMQ=1`.

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use arca_events::stomp::{
    Outgoing, Publisher, StompError, StompTarget, Subscriber, CLOSED_AT_CONNECT,
};
use arca_testkit::activemq::{ActiveMq, BrokerUser};

/// Generous limits for a shared 2-core machine; a healthy broker answers in milliseconds.
const CONNECT: Duration = Duration::from_secs(10);
const BATCH: Duration = Duration::from_secs(30);
const RECEIVE: Duration = Duration::from_secs(10);

fn target(broker: &ActiveMq) -> StompTarget {
    StompTarget::parse(&broker.stomp_url()).expect("the broker's URL parses")
}

fn started(broker: &ActiveMq) {
    eprintln!(
        "ActiveMQ answered STOMP on port {} after {:?}",
        broker.stomp_port(),
        broker.started_in()
    );
}

/// The headers of message `n`: values with every character STOMP escapes, and non-ASCII.
fn headers_of(n: usize) -> Vec<(String, String)> {
    [
        ("arca-seq", n.to_string()),
        ("x-colon", format!("urn:arca:{n}:a:b")),
        ("x-newline", format!("line one\nline two {n}\n")),
        ("x-backslash", format!("C:\\data\\{n}\\")),
        ("x-carriage-return", "a\r\nb".to_string()),
        ("x-unicode", format!("Grüße ☃ 𝄞 日本 {n}")),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_string(), value))
    .collect()
}

/// The body of message `n`: UTF-8 JSON, every third one with NUL bytes inside.
fn body_of(n: usize) -> Vec<u8> {
    let mut body = format!(r#"{{"id":"urn:arca:{n}","name":"Grüße ☃ {n}"}}"#).into_bytes();
    if n.is_multiple_of(3) {
        body.extend_from_slice(b"\0\0tail\0");
    }
    body
}

#[tokio::test]
async fn two_thousand_messages_arrive_in_order_with_headers_and_bodies_exact() {
    let Some(broker) = ActiveMq::start() else {
        return;
    };
    started(&broker);
    let target = target(&broker);
    let destination = "/topic/arca-test";
    let mut subscriber = Subscriber::connect(&target, destination, CONNECT)
        .await
        .expect("subscribed");
    let mut publisher = Publisher::connect(&target, CONNECT)
        .await
        .expect("connected");

    let total = 2_000;
    let messages: Vec<Outgoing> = (0..total)
        .map(|n| Outgoing {
            headers: headers_of(n),
            body: body_of(n),
        })
        .collect();
    let sending = Instant::now();
    for batch in messages.chunks(200) {
        publisher
            .send_batch(destination, batch, BATCH)
            .await
            .expect("every receipt of the batch");
    }
    eprintln!("{total} messages confirmed in {:?}", sending.elapsed());

    for n in 0..total {
        let message = subscriber
            .next(RECEIVE)
            .await
            .expect("a message")
            .unwrap_or_else(|| panic!("message {n} did not arrive"));
        assert_eq!(message.header("arca-seq"), Some(n.to_string().as_str()));
        for (name, value) in headers_of(n) {
            assert_eq!(message.header(&name), Some(value.as_str()), "{name} of {n}");
        }
        assert_eq!(message.header("destination"), Some(destination));
        assert_eq!(
            message.header("content-type"),
            None,
            "no content-type unless asked"
        );
        assert_eq!(message.header("persistent"), Some("true"));
        assert_eq!(message.body, body_of(n), "body of {n}");
        if !n.is_multiple_of(3) {
            assert!(message.body_str().is_some_and(|b| b.contains("Grüße")));
        }
    }
    eprintln!(
        "{total} messages sent and received in {:?}",
        sending.elapsed()
    );
    assert!(subscriber
        .next(Duration::from_millis(200))
        .await
        .unwrap()
        .is_none());
    publisher.close().await;
    subscriber.close().await;
}

#[tokio::test]
async fn a_stopped_broker_fails_fast_and_a_restarted_one_delivers_again() {
    let Some(mut broker) = ActiveMq::start() else {
        return;
    };
    started(&broker);
    let target = target(&broker);
    let one = |text: &str| Outgoing {
        headers: Vec::new(),
        body: text.as_bytes().to_vec(),
    };
    let queue = "/queue/arca-kept";
    let mut publisher = Publisher::connect(&target, CONNECT)
        .await
        .expect("connected");
    publisher
        .send_batch(queue, &[one("kept across the restart")], BATCH)
        .await
        .expect("sent before the stop");

    broker.stop();
    let failed = publisher
        .send_batch(queue, &[one("into the void")], BATCH)
        .await;
    assert!(
        matches!(failed, Err(StompError::Io(_) | StompError::Timeout(_))),
        "a send to a stopped broker: {failed:?}"
    );
    eprintln!("a send on a connection to the stopped broker: {failed:?}");
    assert_refused(&target).await;

    broker.start_again();
    started(&broker);
    assert_delivers(&target, "/topic/arca-after-restart").await;
    let mut kept = Subscriber::connect(&target, queue, CONNECT)
        .await
        .expect("subscribed to the queue");
    let message = kept.next(RECEIVE).await.expect("a message");
    assert_eq!(
        message.and_then(|m| m.body_str().map(str::to_string)),
        Some("kept across the restart".to_string()),
        "a persistent message outlives a stop"
    );

    broker.kill();
    assert_refused(&target).await;
    broker.start_again();
    started(&broker);
    assert_delivers(&target, "/topic/arca-after-kill").await;
}

/// A connection attempt to the stopped broker fails at once with "connection refused".
async fn assert_refused(target: &StompTarget) {
    let attempt = Instant::now();
    match Publisher::connect(target, CONNECT).await {
        Err(StompError::Io(e)) => assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e}"),
        Err(other) => panic!("expected connection refused, got {other}"),
        Ok(_) => panic!("connected to a stopped broker"),
    }
    assert!(
        attempt.elapsed() < Duration::from_secs(2),
        "refusal took {:?}",
        attempt.elapsed()
    );
}

/// A new subscriber receives what a new publisher sends.
async fn assert_delivers(target: &StompTarget, topic: &str) {
    let mut subscriber = Subscriber::connect(target, topic, CONNECT)
        .await
        .expect("subscribed");
    let mut publisher = Publisher::connect(target, CONNECT)
        .await
        .expect("connected");
    let messages: Vec<Outgoing> = (0..3)
        .map(|n| Outgoing {
            headers: vec![("arca-seq".into(), n.to_string())],
            body: format!("message {n}").into_bytes(),
        })
        .collect();
    publisher
        .send_batch(topic, &messages, BATCH)
        .await
        .expect("sent");
    for n in 0..3 {
        let message = subscriber.next(RECEIVE).await.expect("a message");
        assert_eq!(
            message.as_ref().and_then(|m| m.header("arca-seq")),
            Some(n.to_string().as_str())
        );
    }
    publisher.close().await;
    subscriber.close().await;
}

#[tokio::test]
async fn refusals_are_clear_errors() {
    for url in [
        "http://127.0.0.1:61613",
        "stomp://:61613",
        "stomp://host:99999",
    ] {
        let error = StompTarget::parse(url).expect_err(url);
        assert!(matches!(error, StompError::BadUrl(_)), "{url}: {error:?}");
        assert!(error.to_string().starts_with("bad STOMP URL: "), "{error}");
        eprintln!("{url}: {error}");
    }

    let users = [BrokerUser {
        login: "arca".into(),
        passcode: "s3cret".into(),
    }];
    let Some(broker) = ActiveMq::start_with_users(&users) else {
        return;
    };
    started(&broker);
    let mut target = target(&broker);
    target.login = Some("arca".into());
    target.passcode = Some("wrong".into());
    match Publisher::connect(&target, CONNECT).await {
        Err(StompError::Broker(message)) => {
            assert!(
                message.contains("User name [arca] or password is invalid")
                    || message == CLOSED_AT_CONNECT,
                "{message}"
            );
            eprintln!("refused login: {}", StompError::Broker(message));
        }
        Err(other) => panic!("expected the broker's refusal, got {other:?}"),
        Ok(_) => panic!("a wrong passcode was accepted"),
    }

    target.passcode = Some("s3cret".into());
    let mut publisher = Publisher::connect(&target, CONNECT)
        .await
        .expect("the right passcode is accepted");
    let message = Outgoing {
        headers: Vec::new(),
        body: b"{}".to_vec(),
    };
    publisher
        .send_batch("/queue/arca-auth", std::slice::from_ref(&message), BATCH)
        .await
        .expect("sent");

    // A frame ActiveMQ refuses (a transaction that was never begun): its ERROR frame ends
    // the batch. (ActiveMQ takes any destination name, so a bad one is no refusal.)
    let in_no_transaction = Outgoing {
        headers: vec![("transaction".into(), "never-begun".into())],
        ..message.clone()
    };
    let refused = publisher
        .send_batch("/queue/arca-auth", &[in_no_transaction], BATCH)
        .await;
    match refused {
        Err(StompError::Broker(text)) => eprintln!("refused destination: {text}"),
        other => panic!("expected the broker's refusal, got {other:?}"),
    }
    let after = publisher
        .send_batch("/queue/arca-auth", &[message], BATCH)
        .await;
    assert!(
        matches!(&after, Err(StompError::Io(e)) if e.kind() == ErrorKind::NotConnected),
        "a publisher is not used after an error: {after:?}"
    );
}

/// A batch asks for a receipt on its last frame only. ActiveMQ handles the frames of a
/// connection in order, so the refusal of an earlier frame (its `ERROR` frame) arrives
/// before that receipt and fails the whole batch; the receipt confirms a batch only when
/// every frame before it was taken.
#[tokio::test]
async fn a_frame_refused_inside_a_batch_fails_the_batch() {
    let Some(broker) = ActiveMq::start() else {
        return;
    };
    started(&broker);
    let target = target(&broker);
    let queue = "/queue/arca-refused-inside";
    let mut publisher = Publisher::connect(&target, CONNECT)
        .await
        .expect("connected");
    let mut messages: Vec<Outgoing> = (0..500)
        .map(|n| Outgoing {
            headers: vec![("arca-seq".into(), n.to_string())],
            body: body_of(n),
        })
        .collect();
    publisher
        .send_batch(queue, &messages, BATCH)
        .await
        .expect("a batch of accepted frames is confirmed");
    messages[250]
        .headers
        .push(("transaction".into(), "never-begun".into()));
    match publisher.send_batch(queue, &messages, BATCH).await {
        Err(StompError::Broker(text)) => {
            assert!(text.contains("never-begun"), "{text}");
            eprintln!("frame 250 of 500 refused: {text}");
        }
        other => panic!("expected the broker's refusal of frame 250, got {other:?}"),
    }
}
