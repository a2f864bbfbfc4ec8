//! Two nodes whose clocks are 14 s apart (datefudge: one at +7 s, one at −7 s) write one
//! resource in turns, each with an `If-Match` taken from the other: the ETags agree on
//! both nodes at every state, a stale one is refused on either, `Last-Modified` never goes
//! back, no version is lost or refused, and the mementos follow the order of the writes.
//! `NOT RUN` without datefudge unless `ARCA_REQUIRE_DATEFUDGE=1`.

use std::time::Duration;

use hyper::Method;

use crate::cluster::{send, title, Cluster, PUBLIC_BASE, TEXT, TURTLE};
use crate::common::{self, Arca, Http};

/// An HTTP date (`Sun, 29 Nov 2026 17:37:15 GMT`) as a tuple that orders as the instants
/// do: year, month, day, hour, minute, second.
fn instant(http_date: &str) -> (u32, usize, u32, String) {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let parts: Vec<&str> = http_date.split_whitespace().collect();
    assert_eq!(parts.len(), 6, "not an HTTP date: {http_date:?}");
    let month = MONTHS.iter().position(|m| *m == parts[2]).unwrap();
    (
        parts[3].parse().unwrap(),
        month,
        parts[1].parse().unwrap(),
        parts[4].to_string(),
    )
}

/// The ETag and Last-Modified `node` answers for `path`.
async fn state(http: &Http, node: &Arca, path: &str) -> (String, String) {
    let r = send(http, node, Method::HEAD, path, &[], "").await;
    assert_eq!(r.status.as_u16(), 200, "HEAD {path} on {}", node.base);
    (
        r.header("etag").unwrap().to_string(),
        r.header("last-modified").unwrap().to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_with_clocks_apart_keep_etags_dates_and_mementos_in_order() {
    let Some(datefudge) = arca_testkit::datefudge_library() else {
        return;
    };
    let Some(cluster) = Cluster::new("clocks").await else {
        return;
    };
    let datefudge = datefudge.to_string_lossy().into_owned();
    // DATEFUDGE is what the clock is put back by, in seconds.
    let skewed = |name: &str, back: &str| {
        cluster.node_with(name, &[("LD_PRELOAD", &datefudge), ("DATEFUDGE", back)])
    };
    let nodes = [skewed("fast", "-7"), skewed("slow", "7")];
    let http = Http::new();

    // The clocks are apart: each node dates its answers by its own clock.
    let dates: Vec<String> = {
        let mut dates = Vec::new();
        for node in &nodes {
            let r = send(&http, node, Method::GET, "/", &[], "").await;
            dates.push(r.header("date").expect("a Date header").to_string());
        }
        dates
    };
    assert!(
        instant(&dates[0]) > instant(&dates[1]),
        "the fast node's clock is ahead: {dates:?}"
    );

    let r = send(&http, &nodes[0], Method::PUT, "/clk", &[TURTLE], &title(0)).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    let r = send(&http, &nodes[1], Method::PUT, "/clk/r", &[TEXT], "write 0").await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    let mut last = state(&http, &nodes[1], "/clk/r").await;
    let writes = 8;
    for i in 1..=writes {
        // Writes alternate: the fast node, then the slow one right after it. Every other
        // pair starts in a new second, so that the resource has several mementos.
        let (writer, other) = (&nodes[(i + 1) % 2], &nodes[i % 2]);
        if i % 4 == 1 {
            tokio::time::sleep(Duration::from_millis(1100)).await;
        }
        let (etag, _) = state(&http, other, "/clk/r").await;
        assert_eq!(etag, last.0, "both nodes give one ETag");
        let body = format!("write {i}");
        let r = send(
            &http,
            writer,
            Method::PUT,
            "/clk/r",
            &[TEXT, ("if-match", &etag)],
            &body,
        )
        .await;
        assert_eq!(
            r.status.as_u16(),
            204,
            "write {i} on {}, If-Match from the other node: {}",
            writer.base,
            r.text()
        );
        // The ETag just replaced is stale on either node.
        for node in &nodes {
            let r = send(
                &http,
                node,
                Method::PUT,
                "/clk/r",
                &[TEXT, ("if-match", &etag)],
                "stale",
            )
            .await;
            assert_eq!(r.status.as_u16(), 412, "a stale ETag on {}", node.base);
        }
        let now = state(&http, writer, "/clk/r").await;
        eprintln!("write {i} on {}: Last-Modified {}", writer.base, now.1);
        assert_eq!(state(&http, other, "/clk/r").await, now, "write {i}");
        assert_ne!(now.0, last.0, "write {i} has a new ETag");
        assert!(
            instant(&now.1) >= instant(&last.1),
            "Last-Modified went back at write {i} on {}: {} after {}",
            writer.base,
            now.1,
            last.1
        );
        last = now;
    }

    // Both nodes list the same mementos, in the order of the writes, the last one the
    // current state; every version is in the object.
    let mut listings = Vec::new();
    for node in &nodes {
        let r = send(
            &http,
            node,
            Method::GET,
            "/clk/r/fcr:versions",
            &[("accept", "application/link-format")],
            "",
        )
        .await;
        assert_eq!(r.status.as_u16(), 200, "{}", r.text());
        listings.push(r.text());
    }
    assert_eq!(
        listings[0], listings[1],
        "both nodes list the same mementos"
    );
    let mementos: Vec<(String, String)> = listings[0]
        .lines()
        .filter(|l| l.contains("rel=\"memento\""))
        .map(|l| {
            let url = l[l.find('<').unwrap() + 1..l.find('>').unwrap()].to_string();
            let date = l.split("datetime=\"").nth(1).unwrap();
            (url, date[..date.find('"').unwrap()].to_string())
        })
        .collect();
    assert!(mementos.len() >= 3, "{}", listings[0]);
    let mut written = Vec::new();
    for (url, date) in &mementos {
        let r = http
            .request(
                Method::GET,
                &url.replace(PUBLIC_BASE, &nodes[1].base),
                &[],
                "",
            )
            .await;
        assert_eq!(r.status.as_u16(), 200, "{url}");
        let n: usize = r.text().strip_prefix("write ").unwrap().parse().unwrap();
        written.push((instant(date), n));
    }
    let mut in_order = written.clone();
    in_order.sort();
    in_order.dedup_by_key(|w| w.0.clone());
    assert_eq!(
        written, in_order,
        "memento dates rise with the writes, one memento per second"
    );
    assert!(
        written.windows(2).all(|w| w[0].1 < w[1].1),
        "mementos in the order written: {written:?}"
    );
    assert_eq!(written.last().unwrap().1, writes, "{written:?}");

    let heads = tokio::task::block_in_place(|| cluster.check_bucket());
    assert_eq!(
        heads["info:fedora/clk/r"] as usize,
        writes + 1,
        "a version for every write"
    );
    // The versions' dates follow the order of the writes, whichever node made them.
    let dir = common::object_dir(&cluster.dir.path().join("bucket"), "info:fedora/clk/r");
    let inventory: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("inventory.json")).unwrap()).unwrap();
    let created: Vec<arca_model::Timestamp> = (1..=writes + 1)
        .map(|v| {
            let created = inventory["versions"][format!("v{v}")]["created"]
                .as_str()
                .unwrap();
            arca_model::parse_instant(created).unwrap()
        })
        .collect();
    assert!(
        created.windows(2).all(|w| w[0] < w[1]),
        "versions dated in the order written: {created:?}"
    );
}
