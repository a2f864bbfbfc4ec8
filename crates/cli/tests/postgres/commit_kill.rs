//! A node SIGKILLed in the middle of a transaction's commit (held there by the test hook
//! `ARCA_TEST_TX_COMMIT_DELAY_MS`, one object per commit page): the other node goes on
//! serving other writers, and once a node has started again the transaction is all or
//! nothing on every node — none of it when the kill came before the commit's decision, all
//! of it when it came after, with some of its objects written and the others not.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::Method;

use crate::cluster::{send, title, Cluster, PUBLIC_BASE, TEXT, TURTLE};
use crate::common::{Arca, Http};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_in_a_commit_leaves_its_transaction_all_or_nothing() {
    let Some(cluster) = Cluster::new("commit-kill").await else {
        return;
    };
    let survivor = cluster.node("a");
    let http = Http::new();
    for (path, headers, body) in [
        ("/t", TURTLE, title(0)),
        ("/bg", TURTLE, title(0)),
        ("/t/shared", TEXT, "before any transaction".to_string()),
    ] {
        let r = send(&http, &survivor, Method::PUT, path, &[headers], &body).await;
        assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    }

    // Two clients write other resources through the survivor all along (a few a second).
    let stop = Arc::new(AtomicBool::new(false));
    let others = Arc::new(Mutex::new(Vec::<(String, u16)>::new()));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (stop, others, base) = (stop.clone(), others.clone(), survivor.base.clone());
            tokio::spawn(async move {
                let http = Http::new();
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let path = format!("/bg/w{w}-{i}");
                    let r = http
                        .request(Method::PUT, &format!("{base}{path}"), &[TEXT], path.clone())
                        .await;
                    others.lock().unwrap().push((path, r.status.as_u16()));
                    i += 1;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            })
        })
        .collect();

    // The hook pauses before the decision and after each page: killed in the first pause,
    // or let through it (4 s) and killed after the first of four pages.
    for (case, pause, delay, committed) in [
        (
            "before",
            "the commit pauses before its decision",
            "600000",
            false,
        ),
        ("after", "the commit pauses after a page", "4000", true),
    ] {
        let data = format!("victim-{case}");
        let victim = cluster.node_with(
            &data,
            &[
                ("ARCA_TEST_TX_COMMIT_DELAY_MS", delay),
                ("ARCA_TEST_TX_PAGE_OBJECTS", "1"),
            ],
        );
        // The transaction's requests go to both nodes: three new resources (each an
        // object of its own) and a change of an existing one.
        let tx = send(&http, &survivor, Method::POST, "/fcr:tx", &[], "").await;
        assert_eq!(tx.status.as_u16(), 201, "{}", tx.text());
        let tx_url = tx.header("location").unwrap().to_string();
        let atomic = ("atomic-id", tx_url.as_str());
        let changes = [
            (&survivor.base, format!("/t/{case}-c"), TURTLE, title(1)),
            (
                &victim.base,
                format!("/t/{case}-b1"),
                TEXT,
                format!("{case} b1"),
            ),
            (
                &survivor.base,
                format!("/t/{case}-b2"),
                TEXT,
                format!("{case} b2"),
            ),
            (
                &victim.base,
                "/t/shared".to_string(),
                TEXT,
                format!("changed {case}"),
            ),
        ]
        .map(|(base, path, headers, body)| (base.clone(), path, headers, body));
        for (base, path, headers, body) in &changes {
            let r = http
                .request(
                    Method::PUT,
                    &format!("{base}{path}"),
                    &[*headers, atomic],
                    body.clone(),
                )
                .await;
            assert!(r.status.is_success(), "{path}: {} {}", r.status, r.text());
        }
        let before = send(&http, &survivor, Method::GET, "/t/shared", &[], "")
            .await
            .text();

        // The commit runs on the victim, which is killed in the window.
        let commit_url = tx_url.replace(PUBLIC_BASE, &victim.base);
        let commit = tokio::spawn({
            let http = http.clone();
            async move { http.try_request(Method::PUT, &commit_url, &[], "").await }
        });
        let started = Instant::now();
        while !victim.log().contains(pause) {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the commit never paused {pause:?}:\n{}",
                victim.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        victim.kill();
        assert!(
            commit.await.unwrap().is_err(),
            "the killed node answered the commit"
        );
        let mut seen = Vec::new();
        for (_, path, _, _) in &changes {
            let r = send(&http, &survivor, Method::GET, path, &[], "").await;
            seen.push(format!("{path} {}", r.status.as_u16()));
        }
        eprintln!("{case}: right after the kill the survivor serves {seen:?}");

        // Before the decision, the node started again (without the hook) fails the commit
        // (unless the survivor's background recovery came first); after it, the
        // survivor's background recovery completes it (within 10 s), and the node started
        // again afterwards finds nothing left to do.
        let restarted = if committed {
            let started = Instant::now();
            while !survivor
                .log()
                .contains("the interrupted commit is complete")
            {
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "the survivor never completed the commit:\n{}",
                    survivor.log()
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            cluster.node(&data)
        } else {
            let restarted = cluster.node(&data);
            let failed = "a commit stopped before it was decided";
            assert!(
                restarted.log().contains(failed) || survivor.log().contains(failed),
                "{case}: nobody ended the commit:\n{}",
                restarted.log()
            );
            restarted
        };
        for node in [&survivor, &restarted] {
            for (_, path, headers, body) in &changes {
                let r = send(&http, node, Method::GET, path, &[], "").await;
                let shared = path == "/t/shared";
                match (committed, shared) {
                    (true, _) if *headers == TURTLE => {
                        assert_eq!(r.status.as_u16(), 200, "{case} {path}: {}", r.text());
                        assert!(r.text().contains("\"title 1\""), "{}", r.text());
                    }
                    (true, _) => assert_eq!(
                        (r.status.as_u16(), r.text()),
                        (200, body.clone()),
                        "{case} {path} on {}",
                        node.base
                    ),
                    (false, true) => assert_eq!(
                        (r.status.as_u16(), r.text()),
                        (200, before.clone()),
                        "{case}: {path} unchanged on {}",
                        node.base
                    ),
                    (false, false) => assert_eq!(
                        r.status.as_u16(),
                        404,
                        "{case}: {path} not there on {}: {}",
                        node.base,
                        r.text()
                    ),
                }
            }
            let r = http
                .request(
                    Method::GET,
                    &tx_url.replace(PUBLIC_BASE, &node.base),
                    &[],
                    "",
                )
                .await;
            assert_eq!(r.status.as_u16(), 410, "{case}: the transaction ended");
        }
        restarted.stop();
    }

    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let others = others.lock().unwrap().clone();
    assert!(others.len() >= 2, "{others:?}");
    let restarted = cluster.node("victim-after");
    for (path, status) in &others {
        assert_eq!(*status, 201, "the survivor kept serving: {path}");
        for node in [&survivor, &restarted] {
            check_body(&http, node, path).await;
        }
    }
    tokio::task::block_in_place(|| cluster.check_bucket());
}

async fn check_body(http: &Http, node: &Arca, path: &str) {
    let r = send(http, node, Method::GET, path, &[], "").await;
    assert_eq!(
        (r.status.as_u16(), r.text()),
        (200, path.to_string()),
        "{path} on {}",
        node.base
    );
}
