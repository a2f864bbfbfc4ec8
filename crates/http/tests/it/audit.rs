//! What a running server does with fixity audits (issue 41 §2): a binary whose stored
//! content an audit found damaged answers 500 with the damage and never its bytes, while
//! `fcr:fixity` still checks it and its page shows the damage; each finding is a PREMIS
//! fixity event on `fcr:events`; admins see the audit, the replicas and the reports under
//! `fcr:audit`, others are refused.

use arca_fixity::{Finding, FindingKind, Report};
use arca_model::FedoraId;
use arca_repository::DamagedFile;
use arca_testkit::TestServer;
use http::Method;
use serde_json::Value;

use crate::common::*;
use crate::html::{as_user, assert_page, page, server_with, BROWSER};

const CONTENT: &[u8] = b"the deposited bytes\n";

/// A server with users `reader` and the admin `root` and no background audit.
async fn server() -> (TestServer, tempfile::TempDir) {
    server_with(|c| c.fixity.schedule = "off".into()).await
}

/// A server with binary `d/bin` holding [`CONTENT`]; the binary's content file's storage
/// key.
async fn with_binary(s: &TestServer, user: Option<&str>) -> String {
    let r = as_user(s, user, Method::PUT, "d", &[TURTLE], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = as_user(
        s,
        user,
        Method::PUT,
        "d/bin",
        &[("content-type", "text/plain")],
        CONTENT,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    content_key(s, "d/bin").await
}

async fn content_key(s: &TestServer, path: &str) -> String {
    let repo = s.repo().expect("opened");
    let record = repo.get(&FedoraId::from_path(path).unwrap()).await.unwrap();
    record
        .content_file
        .expect("a stored binary has a content file")
}

fn damaged(key: &str) -> DamagedFile {
    DamagedFile {
        key: key.to_string(),
        object: "info:fedora/d/bin".into(),
        kind: "content_digest".into(),
        expected: Some("sha512:1111".into()),
        actual: Some("sha512:2222".into()),
        message: "the content file's bytes do not have the manifest's digest".into(),
        found: "2026-11-29T09:00:00Z".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_binary_says_so_instead_of_serving_its_bytes() {
    let (s, _d) = server().await;
    let root = Some("root");
    let key = with_binary(&s, root).await;
    let repo = s.repo().unwrap();
    assert!(repo.damage().is_empty());
    repo.damage().mark(damaged(&key));

    for method in [Method::GET, Method::HEAD] {
        let r = as_user(&s, root, method.clone(), "d/bin", &[], "").await;
        assert_eq!(r.status, 500, "{method}");
        if method == Method::GET {
            let text = r.text();
            assert!(!text.contains("deposited bytes"), "{text}");
            for part in [
                "damaged",
                "2026-11-29T09:00:00Z",
                "expected sha512:1111, found sha512:2222",
                "not served",
                "d/bin",
            ] {
                assert!(text.contains(part), "{part:?} missing from {text}");
            }
        }
    }
    // A range is refused the same way.
    let r = as_user(
        &s,
        root,
        Method::GET,
        "d/bin",
        &[("range", "bytes=0-3")],
        "",
    )
    .await;
    assert_eq!(r.status, 500);
    // fcr:fixity reads the bytes anew (they are intact here) and answers as ever.
    let r = as_user(&s, root, Method::GET, "d/bin/fcr:fixity", &[], "").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("SUCCESS"), "{}", r.text());
    // The description still answers; the binary's page shows the damage and no preview.
    let r = as_user(&s, root, Method::GET, "d/bin/fcr:metadata", &[], "").await;
    assert_eq!(r.status, 200);
    let text = assert_page(&page(&s, root, "d/bin/fcr:metadata").await);
    assert!(text.contains("class=\"damage\""), "{text}");
    assert!(
        text.contains("expected sha512:1111, found sha512:2222"),
        "{text}"
    );
    assert!(!text.contains("deposited bytes"), "{text}");
    // Repaired: served again.
    assert!(repo.damage().clear(&key));
    let r = as_user(&s, root, Method::GET, "d/bin", &[], "").await;
    assert_eq!(r.status, 200);
    assert_eq!(&r.body[..], CONTENT);
    // Damage of an old version's file does not hold back a new version.
    repo.damage().mark(damaged(&key));
    let r = as_user(
        &s,
        root,
        Method::PUT,
        "d/bin",
        &[("content-type", "text/plain")],
        "new bytes",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = as_user(&s, root, Method::GET, "d/bin", &[], "").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "new bytes");
    s.stop().await;
}

/// `fcr:events` entries after `since` whose type is a PREMIS event.
async fn fixity_events(s: &TestServer, since: i64) -> Vec<Value> {
    let r = as_user(
        s,
        Some("root"),
        Method::GET,
        &format!("fcr:events?since={since}&limit=1000"),
        &[],
        "",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let page: Value = serde_json::from_slice(&r.body).unwrap();
    page["orderedItems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e.get("premis:eventType").is_some())
        .cloned()
        .collect()
}

fn finding(content_path: &str, repaired: bool) -> Finding {
    Finding {
        object: "info:fedora/d/bin".into(),
        version: Some("v1".into()),
        logical_path: Some("bin".into()),
        content_path: Some(content_path.into()),
        kind: FindingKind::ContentDigest,
        expected: Some("sha512:1111".into()),
        actual: Some("sha512:2222".into()),
        repaired,
        message: "a bit flipped".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finding_marks_the_file_and_is_a_premis_event() {
    let (s, _d) = server().await;
    let key = with_binary(&s, Some("root")).await;
    let repo = s.repo().unwrap();
    let since = *repo.catalog().last_change().borrow();
    let object_key = repo.ocfl().object_key("info:fedora/d/bin");
    let content_path = key
        .strip_prefix(&format!("{object_key}/"))
        .unwrap_or_else(|| panic!("{key} is not below {object_key}"))
        .to_string();
    let hook = arca_fixity::announce::announcer(repo.clone(), tokio::runtime::Handle::current());
    // The audit calls its hook from its own threads.
    let call = |f: Finding| {
        let hook = hook.clone();
        std::thread::spawn(move || hook(&f)).join().unwrap();
    };
    call(finding(&content_path, false));
    assert_eq!(repo.damage().len(), 1);
    assert_eq!(repo.damage().list()[0].key, key);
    let r = as_user(&s, Some("root"), Method::GET, "d/bin", &[], "").await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(r.text().contains("a bit flipped"), "{}", r.text());

    let events = fixity_events(&s, since).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e["object"]["id"], s.url("d/bin"));
    assert_eq!(
        e["premis:eventType"]["id"],
        "http://id.loc.gov/vocabulary/preservation/eventType/fix"
    );
    assert_eq!(
        e["premis:outcome"]["id"],
        "http://id.loc.gov/vocabulary/preservation/eventOutcome/fai"
    );
    let summary = e["summary"].as_str().unwrap();
    assert!(
        summary.contains("expected sha512:1111, found sha512:2222"),
        "{summary}"
    );
    assert!(summary.contains(&content_path), "{summary}");
    assert!(e["object"]["type"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "http://www.w3.org/ns/ldp#NonRDFSource"));

    // Repaired: the file is served again and a success event follows.
    call(finding(&content_path, true));
    assert!(repo.damage().is_empty());
    let r = as_user(&s, Some("root"), Method::GET, "d/bin", &[], "").await;
    assert_eq!(r.status, 200);
    let events = fixity_events(&s, since).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(
        events[1]["premis:outcome"]["id"],
        "http://id.loc.gov/vocabulary/preservation/eventOutcome/suc"
    );
    // An inventory finding concerns the object's resource; nothing is refused for it.
    let mut sidecar = finding("inventory.json.sha512", false);
    sidecar.kind = FindingKind::InventorySidecar;
    call(sidecar);
    assert!(repo.damage().is_empty());
    let events = fixity_events(&s, since).await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[2]["object"]["id"], s.url("d/bin"));
    s.stop().await;
}

async fn admin(s: &TestServer, method: Method, path: &str) -> arca_testkit::Reply {
    as_user(s, Some("root"), method, path, &[], "").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fcr_audit_is_for_admins_and_shows_audit_replicas_and_damage() {
    let (s, _d) = server().await;
    let key = with_binary(&s, Some("root")).await;
    for path in ["fcr:audit", "fcr:audit/reports", "fcr:audit/reports/x"] {
        let r = as_user(&s, Some("reader"), Method::GET, path, &[], "").await;
        assert_eq!(r.status, 403, "{path}: {}", r.text());
        let r = as_user(&s, None, Method::GET, path, &[], "").await;
        assert_eq!(r.status, 401, "{path}");
    }
    let r = as_user(&s, Some("reader"), Method::POST, "fcr:audit", &[], "").await;
    assert_eq!(r.status, 403);

    s.repo().unwrap().damage().mark(damaged(&key));
    let r = admin(&s, Method::GET, "fcr:audit").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    // This server schedules no audit and has no replicas.
    assert_eq!(v["audit"], Value::Null);
    assert_eq!(v["replicas"], serde_json::json!([]));
    assert_eq!(v["damaged"][0]["key"], key.as_str());
    assert_eq!(v["damaged"][0]["expected"], "sha512:1111");
    // Without a background audit, a run cannot be started here.
    let r = admin(&s, Method::POST, "fcr:audit").await;
    assert_eq!(r.status, 501, "{}", r.text());
    assert!(r.text().contains("arca fixity"), "{}", r.text());
    // Wrong methods and paths.
    let r = admin(&s, Method::DELETE, "fcr:audit").await;
    assert_eq!(r.status, 405);
    let r = admin(&s, Method::POST, "fcr:audit/reports").await;
    assert_eq!(r.status, 405);
    let r = admin(&s, Method::GET, "fcr:audit/elsewhere").await;
    assert_eq!(r.status, 400);
    let r = admin(&s, Method::GET, "d/fcr:audit").await;
    assert_eq!(r.status, 400);
    s.stop().await;
}

fn report(id: &str) -> Report {
    Report {
        id: id.into(),
        root: "primary".into(),
        started: "2026-11-29T09:15:00Z".into(),
        finished: Some("2026-11-29T09:20:00Z".into()),
        complete: true,
        objects: 2,
        files: 5,
        bytes: 1234,
        repaired: 1,
        findings: vec![
            finding("v1/content/bin", true),
            finding("v1/content/other", false),
        ],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_report_is_served_whole_and_bad_ids_are_refused() {
    let (s, _d) = server().await;
    let dir = s.data().join("fixity").join("reports");
    std::fs::create_dir_all(&dir).unwrap();
    let id = "20261129T091500Z";
    std::fs::write(
        dir.join(format!("{id}.json")),
        serde_json::to_vec(&report(id)).unwrap(),
    )
    .unwrap();
    let r = admin(&s, Method::GET, &format!("fcr:audit/reports/{id}")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["id"], id);
    assert_eq!(v["findings"].as_array().unwrap().len(), 2);
    assert_eq!(v["findings"][1]["content_path"], "v1/content/other");
    assert_eq!(v["findings"][1]["kind"], "content_digest");
    assert_eq!(v["findings"][1]["repaired"], false);
    assert_eq!(v["bytes"], 1234);

    let r = admin(&s, Method::GET, "fcr:audit/reports/20000101T000000Z").await;
    assert_eq!(r.status, 404, "{}", r.text());
    let r = admin(&s, Method::GET, "fcr:audit/reports/..%2f..%2fcatalog").await;
    assert_eq!(r.status, 400, "{}", r.text());
    let r = admin(&s, Method::GET, "fcr:audit/reports/.hidden").await;
    assert_eq!(r.status, 400, "{}", r.text());
    std::fs::write(dir.join("broken.json"), b"{ not json").unwrap();
    let r = admin(&s, Method::GET, "fcr:audit/reports/broken").await;
    assert_eq!(r.status, 500);
    assert!(r.text().contains("corrupt"), "{}", r.text());
    let r = admin(&s, Method::GET, "fcr:audit/reports?limit=0").await;
    assert_eq!(r.status, 400, "{}", r.text());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_are_listed_newest_first_as_summaries() {
    let (s, _d) = server().await;
    let dir = s.data().join("fixity").join("reports");
    std::fs::create_dir_all(&dir).unwrap();
    let reports = arca_fixity::Reports::open(&dir).unwrap();
    for id in ["20261127T000000Z", "20261128T000000Z", "20261129T000000Z"] {
        reports.save(&report(id)).unwrap();
    }
    let r = admin(&s, Method::GET, "fcr:audit/reports?limit=2").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    let listed = v["reports"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["id"], "20261129T000000Z");
    assert_eq!(listed[1]["id"], "20261128T000000Z");
    assert_eq!(listed[0]["findings"], 2);
    assert_eq!(listed[0]["unrepaired"], 1);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damage_the_latest_report_left_is_refused_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let off = |c: &mut arca_config::Config| c.fixity.schedule = "off".into();
    let s = TestServer::start_with(Some(dir.path()), off).await;
    assert_eq!(put(&s, "d", &[TURTLE], "").await.status, 201);
    let r = put_bytes(&s, "d/bin", &[("content-type", "text/plain")], CONTENT).await;
    assert_eq!(r.status, 201);
    let key = content_key(&s, "d/bin").await;
    let repo = s.repo().unwrap();
    let content_path = key
        .strip_prefix(&format!("{}/", repo.ocfl().object_key("info:fedora/d/bin")))
        .unwrap()
        .to_string();
    drop(repo);
    s.stop().await;
    let reports = arca_fixity::Reports::open(&dir.path().join("fixity").join("reports")).unwrap();
    let mut last = report("20261129T091500Z");
    last.findings = vec![finding(&content_path, false)];
    reports.save(&last).unwrap();
    let s = TestServer::start_with(Some(dir.path()), off).await;
    let r = s.get("d/bin", &[]).await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(r.text().contains("a bit flipped"), "{}", r.text());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_starts_a_run_and_sees_its_report() {
    // A background audit that runs when asked (and not again for ten years).
    let (s, _d) = server_with(|c| c.fixity.schedule = "3650d".into()).await;
    with_binary(&s, Some("root")).await;
    let r = admin(&s, Method::POST, "fcr:audit").await;
    assert!(r.status == 202 || r.status == 409, "{}", r.text());
    let mut finished = None;
    for _ in 0..600 {
        let v: Value =
            serde_json::from_slice(&admin(&s, Method::GET, "fcr:audit").await.body).unwrap();
        if v["audit"]["last"]["finished"].is_string()
            && !v["audit"]["progress"]["running"].as_bool().unwrap_or(true)
        {
            finished = Some(v);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let v = finished.expect("the run finished");
    assert_eq!(v["audit"]["last"]["findings"], serde_json::json!([]));
    assert!(v["audit"]["last"]["objects"].as_u64().unwrap() >= 2);
    let listed: Value =
        serde_json::from_slice(&admin(&s, Method::GET, "fcr:audit/reports").await.body).unwrap();
    assert_eq!(listed["reports"][0]["id"], v["audit"]["last"]["id"]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_has_an_audit_section() {
    let (s, _d) = server().await;
    let key = with_binary(&s, Some("root")).await;
    s.repo().unwrap().damage().mark(damaged(&key));
    let status = s.base.trim_end_matches("/rest").to_string() + "/status";
    let r = s
        .request_anonymous(
            Method::GET,
            &status,
            &[("authorization", &crate::html::basic("root")), BROWSER],
            bytes::Bytes::new(),
        )
        .await;
    let text = assert_page(&r);
    assert!(text.contains("Audit and replicas"), "{text}");
    assert!(text.contains("No background audit"), "{text}");
    assert!(text.contains("No replicas"), "{text}");
    assert!(text.contains("sha512:2222"), "{text}");
    // JSON for API clients carries the same.
    let r = s
        .request_anonymous(
            Method::GET,
            &status,
            &[("authorization", &crate::html::basic("root"))],
            bytes::Bytes::new(),
        )
        .await;
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["damaged"], 1, "{v}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_show_in_fcr_audit_and_on_the_status_page() {
    let replica = tempfile::tempdir().unwrap();
    let path = replica.path().join("copy");
    let (s, _d) = server_with(|c| {
        c.fixity.schedule = "off".into();
        c.replicas = vec![arca_config::ReplicaSettings {
            name: Some("copy".into()),
            path: Some(path),
            endpoint: None,
            bucket: None,
            prefix: String::new(),
            region: String::new(),
        }];
    })
    .await;
    let r = admin(&s, Method::GET, "fcr:audit").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    let replicas = v["replicas"].as_array().unwrap();
    assert_eq!(replicas.len(), 1, "{v}");
    assert_eq!(replicas[0]["name"], "copy");
    for field in ["position", "lag", "objects_copied", "bytes_copied", "error"] {
        assert!(replicas[0].get(field).is_some(), "{field} missing: {v}");
    }
    let status = s.base.trim_end_matches("/rest").to_string() + "/status";
    let r = s
        .request_anonymous(
            Method::GET,
            &status,
            &[("authorization", &crate::html::basic("root")), BROWSER],
            bytes::Bytes::new(),
        )
        .await;
    let text = assert_page(&r);
    assert!(text.contains("<caption>Replicas</caption>"), "{text}");
    assert!(text.contains("<th scope=\"row\">copy</th>"), "{text}");
    // Readiness names the replica's check.
    let ready = s
        .request_anonymous(
            Method::GET,
            &(s.base.trim_end_matches("/rest").to_string() + "/health/ready"),
            &[],
            bytes::Bytes::new(),
        )
        .await;
    assert!(ready.text().contains("replica:copy"), "{}", ready.text());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_complete_run_of_the_primary_settles_the_damaged_set() {
    let (s, _d) = server().await;
    let key = with_binary(&s, Some("root")).await;
    let repo = s.repo().unwrap();
    repo.damage().mark(damaged(&key));
    let clean = |root: &str, complete: bool| Report {
        root: root.into(),
        complete,
        findings: Vec::new(),
        ..report("20261129T100000Z")
    };
    // A replica's run, or a run cut short, says nothing of the primary's files.
    arca_fixity::announce::settle_damage(&repo, &clean("copy", true));
    arca_fixity::announce::settle_damage(&repo, &clean("primary", false));
    assert_eq!(repo.damage().len(), 1);
    let r = as_user(&s, Some("root"), Method::GET, "d/bin", &[], "").await;
    assert_eq!(r.status, 500);
    // A complete run of the primary that did not find it again: served again.
    arca_fixity::announce::settle_damage(&repo, &clean("primary", true));
    assert!(repo.damage().is_empty());
    let r = as_user(&s, Some("root"), Method::GET, "d/bin", &[], "").await;
    assert_eq!(r.status, 200);
    assert_eq!(&r.body[..], CONTENT);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finding_in_an_archival_group_names_the_part() {
    let (s, _d) = server().await;
    let root = Some("root");
    let r = as_user(&s, root, Method::PUT, "ag", &[TURTLE, LINK_AG], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = as_user(
        &s,
        root,
        Method::PUT,
        "ag/data%20file.bin",
        &[("content-type", "application/octet-stream")],
        CONTENT,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let key = content_key(&s, "ag/data file.bin").await;
    let repo = s.repo().unwrap();
    let object_key = repo.ocfl().object_key("info:fedora/ag");
    let content_path = key
        .strip_prefix(&format!("{object_key}/"))
        .unwrap_or_else(|| panic!("{key} is not in the group's object {object_key}"))
        .to_string();
    let since = *repo.catalog().last_change().borrow();
    let hook = arca_fixity::announce::announcer(repo.clone(), tokio::runtime::Handle::current());
    let mut f = finding(&content_path, false);
    f.object = "info:fedora/ag".into();
    std::thread::spawn(move || hook(&f)).join().unwrap();
    let r = as_user(&s, root, Method::GET, "ag/data%20file.bin", &[], "").await;
    assert_eq!(r.status, 500, "{}", r.text());
    // The group's other resources are served.
    let r = as_user(&s, root, Method::GET, "ag", &[], "").await;
    assert_eq!(r.status, 200);
    let events = fixity_events(&s, since).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["object"]["id"], s.url("ag/data%20file.bin"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_versions_damaged_file_names_its_resource_and_holds_back_nothing() {
    let (s, _d) = server().await;
    let root = Some("root");
    let r = as_user(&s, root, Method::PUT, "ag", &[TURTLE, LINK_AG], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let part = "ag/data%20file.bin";
    let octets = [("content-type", "application/octet-stream")];
    let r = as_user(&s, root, Method::PUT, part, &octets, CONTENT).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let old = content_key(&s, "ag/data file.bin").await;
    let r = as_user(&s, root, Method::PUT, part, &octets, "replaced").await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_ne!(content_key(&s, "ag/data file.bin").await, old);
    let repo = s.repo().unwrap();
    let object_key = repo.ocfl().object_key("info:fedora/ag");
    let since = *repo.catalog().last_change().borrow();
    let hook = arca_fixity::announce::announcer(repo.clone(), tokio::runtime::Handle::current());
    let mut f = finding(old.strip_prefix(&format!("{object_key}/")).unwrap(), false);
    f.object = "info:fedora/ag".into();
    f.logical_path = Some("data file.bin".into());
    std::thread::spawn(move || hook(&f)).join().unwrap();
    // The old version's file is marked; the current one is served.
    assert_eq!(repo.damage().list()[0].key, old);
    let r = as_user(&s, root, Method::GET, part, &[], "").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "replaced");
    // The event names the part, found by its logical path, not the group.
    let events = fixity_events(&s, since).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["object"]["id"], s.url(part));
    s.stop().await;
}
