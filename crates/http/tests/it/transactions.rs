//! Transactions (`fcr:tx`) end to end, against Fedora 6.1's recorded answers
//! (/tmp/fedora-probe/ANSWERS.md §C, cited where the Fedora API spec says nothing): the
//! endpoint's statuses and headers, isolation, `Atomic-ID` forms, conflicts, commit (one
//! OCFL version per object, everything visible), rollback and expiry (nothing left in
//! storage, staging or the change log), and a large transaction.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::common::*;
use arca_catalog::Catalog;
use arca_testkit::{next_second, Reply, TestServer};
use http::Method;

const TITLE: &str = "http://purl.org/dc/terms/title";
const COMMIT_ENDPOINT: &str = "http://fedora.info/definitions/v4/transaction#commitEndpoint";

fn titled(t: &str) -> String {
    format!("<> <{TITLE}> \"{t}\" .")
}

/// Begins a transaction; returns its URL.
async fn begin(s: &TestServer) -> String {
    let r = post(s, "fcr:tx", &[], "").await;
    assert_eq!(r.status, 201, "POST fcr:tx: {}", r.text());
    r.header("location").expect("Location").to_string()
}

async fn tx_request(s: &TestServer, method: Method, tx: &str) -> Reply {
    s.request(method, tx, &[], Vec::new()).await
}

fn uuid_of(tx: &str) -> &str {
    tx.rsplit('/').next().unwrap()
}

fn parse_date(r: &Reply, name: &str) -> SystemTime {
    let v = r
        .header(name)
        .unwrap_or_else(|| panic!("no {name} header: {:?}", r.headers));
    httpdate::parse_http_date(v).unwrap_or_else(|e| panic!("{name}: {v:?}: {e}"))
}

fn assert_near(t: SystemTime, expected: SystemTime, what: &str) {
    let diff = match t.duration_since(expected) {
        Ok(d) => d,
        Err(e) => e.duration(),
    };
    assert!(
        diff <= Duration::from_secs(3),
        "{what}: {t:?} vs {expected:?}"
    );
}

/// The files in the upload area.
fn uploads(data: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(data.join("staging/uploads"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

fn versions(s: &TestServer, id: &str) -> usize {
    version_states(&object_dir(&s.ocfl_root(), id)).len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn begin_is_201_with_location_expires_and_commit_endpoint() {
    let s = TestServer::start().await;
    let r = post(&s, "fcr:tx", &[], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let tx = r.header("location").unwrap().to_string();
    let id = tx
        .strip_prefix(&format!("{}/fcr:tx/", s.base))
        .unwrap_or_else(|| panic!("Location {tx} is not below {}/fcr:tx/", s.base));
    assert!(uuid::Uuid::parse_str(id).is_ok(), "{id} is not a uuid");
    // Fedora: `Expires` (not Atomic-Expires) = now + the 3 minute default.
    assert_near(
        parse_date(&r, "expires"),
        SystemTime::now() + Duration::from_secs(180),
        "Expires",
    );
    assert!(r.header("atomic-expires").is_none());
    assert_eq!(links(&r, COMMIT_ENDPOINT), vec![tx.clone()]);
    assert!(r.body.is_empty());
    // Fedora: GET /rest/fcr:tx is 405.
    let r = s.get("fcr:tx", &[]).await;
    assert_eq!(r.status, 405);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_refresh_commit_are_204_and_a_committed_tx_is_410() {
    let s = TestServer::start().await;
    let tx = begin(&s).await;
    for method in [Method::GET, Method::HEAD, Method::POST] {
        let r = tx_request(&s, method.clone(), &tx).await;
        assert_eq!(r.status, 204, "{method} tx: {}", r.text());
        assert_near(
            parse_date(&r, "atomic-expires"),
            SystemTime::now() + Duration::from_secs(180),
            "Atomic-Expires",
        );
    }
    let r = tx_request(&s, Method::PUT, &tx).await;
    assert_eq!(r.status, 204, "commit: {}", r.text());
    // Fedora: every method on a committed transaction is 410, naming what happened.
    for method in [Method::GET, Method::POST, Method::PUT, Method::DELETE] {
        let r = tx_request(&s, method.clone(), &tx).await;
        assert_eq!(r.status, 410, "{method} committed tx: {}", r.text());
        assert!(r.text().contains("committed"), "{}", r.text());
    }
    // …and 409 as Atomic-ID.
    let r = put(&s, "c", &[TURTLE, ("atomic-id", &tx)], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(r.text().contains("committed"), "{}", r.text());
    assert_eq!(s.get("c", &[]).await.status, 404);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_is_204_and_a_rolled_back_tx_is_410_and_409_as_atomic_id() {
    let s = TestServer::start().await;
    let tx = begin(&s).await;
    let r = tx_request(&s, Method::DELETE, &tx).await;
    assert_eq!(r.status, 204, "{}", r.text());
    for method in [Method::GET, Method::POST, Method::PUT, Method::DELETE] {
        let r = tx_request(&s, method.clone(), &tx).await;
        assert_eq!(r.status, 410, "{method} rolled back tx: {}", r.text());
        assert!(r.text().contains("rolled back"), "{}", r.text());
    }
    let r = s.get("", &[("atomic-id", &tx)]).await;
    assert_eq!(r.status, 409, "{}", r.text());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tx_is_404_on_its_url_and_409_as_atomic_id() {
    let s = TestServer::start().await;
    let unknown = s.url(&format!("fcr:tx/{}", uuid::Uuid::new_v4()));
    for method in [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
    ] {
        let r = tx_request(&s, method.clone(), &unknown).await;
        assert_eq!(r.status, 404, "{method} unknown tx");
    }
    // Fedora: an unknown uuid and a non-uuid are both 409 as Atomic-ID.
    let bare = uuid_of(&unknown).to_string();
    let bad_url = s.url("fcr:tx/nope");
    for atomic in [unknown.as_str(), bare.as_str(), "nope", bad_url.as_str()] {
        let r = put(&s, "c", &[TURTLE, ("atomic-id", atomic)], "").await;
        assert_eq!(r.status, 409, "Atomic-ID {atomic}: {}", r.text());
        let r = s.get("", &[("atomic-id", atomic)]).await;
        assert_eq!(r.status, 409, "GET with Atomic-ID {atomic}: {}", r.text());
    }
    assert_eq!(s.get("c", &[]).await.status, 404);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn created_in_tx_is_404_outside_and_200_inside_until_commit() {
    let s = TestServer::start().await;
    let tx = begin(&s).await;
    let inside = [("atomic-id", tx.as_str())];
    let r = put(&s, "c", &[TURTLE, inside[0]], &titled("in tx")).await;
    assert_eq!(r.status, 201, "{}", r.text());
    // Fedora echoes the full transaction URL.
    assert_eq!(r.header("atomic-id"), Some(tx.as_str()));
    let r = put(
        &s,
        "c/b",
        &[("content-type", "text/plain"), LINK_BINARY, inside[0]],
        "binary bytes",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = post(&s, "c", &[TURTLE, inside[0], ("slug", "p")], "").await;
    assert_eq!(r.status, 201, "{}", r.text());

    for p in ["c", "c/b", "c/b/fcr:metadata", "c/p"] {
        assert_eq!(s.get(p, &[]).await.status, 404, "{p} outside the tx");
        let r = s.get(p, &inside).await;
        assert_eq!(r.status, 200, "{p} inside the tx: {}", r.text());
        assert_eq!(r.header("atomic-id"), Some(tx.as_str()));
    }
    let r = s.get("c/b", &inside).await;
    assert_eq!(r.body.as_ref(), b"binary bytes");
    let r = s
        .get("c", &[inside[0], ("accept", "application/n-triples")])
        .await;
    assert!(r.text().contains("\"in tx\""), "{}", r.text());
    // Nothing in storage before the commit.
    assert!(!object_dir(&s.ocfl_root(), "info:fedora/c").exists());

    assert_eq!(tx_request(&s, Method::PUT, &tx).await.status, 204);
    for p in ["c", "c/b", "c/b/fcr:metadata", "c/p"] {
        assert_eq!(s.get(p, &[]).await.status, 200, "{p} after the commit");
    }
    assert_eq!(s.get("c/b", &[]).await.body.as_ref(), b"binary bytes");
    let mut kids = children(&s, "c").await;
    kids.sort();
    assert_eq!(kids, vec![s.url("c/b"), s.url("c/p")]);
    validate_objects(&object_dirs(&s.ocfl_root()));
    assert!(
        staging_leftovers(s.data()).is_empty(),
        "{:?}",
        staging_leftovers(s.data())
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_id_may_be_a_bare_uuid() {
    let s = TestServer::start().await;
    let tx = begin(&s).await;
    let bare = uuid_of(&tx).to_string();
    let r = put(&s, "c", &[TURTLE, ("atomic-id", &bare)], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    // Fedora (§C.4): accepted, and the answer names the full URL.
    assert_eq!(r.header("atomic-id"), Some(tx.as_str()));
    assert_eq!(s.get("c", &[("atomic-id", &bare)]).await.status, 200);
    assert_eq!(s.get("c", &[("atomic-id", &tx)]).await.status, 200);
    assert_eq!(s.get("c", &[]).await.status, 404);
    assert_eq!(tx_request(&s, Method::PUT, &tx).await.status, 204);
    assert_eq!(s.get("c", &[]).await.status, 200);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_to_what_a_tx_changed_are_409_from_outside_and_other_tx() {
    let s = TestServer::start().await;
    container_with(&s, "t1", &titled("before")).await;
    let a = begin(&s).await;
    let b = begin(&s).await;
    let r = put(&s, "t1", &[TURTLE, ("atomic-id", &a)], &titled("by a")).await;
    assert_eq!(r.status, 204, "{}", r.text());

    // Fedora (§C.5): 409 "Cannot update info:fedora/t1 because it is being updated by
    // another transaction." for PUT/PATCH/DELETE from outside and from another tx.
    let outside = [
        put(&s, "t1", &[TURTLE], &titled("outside")).await,
        sparql(
            &s,
            "t1",
            "INSERT DATA { <> <http://purl.org/dc/terms/description> \"x\" }",
        )
        .await,
        delete(&s, "t1", &[]).await,
        put(&s, "t1", &[TURTLE, ("atomic-id", &b)], &titled("by b")).await,
        delete(&s, "t1", &[("atomic-id", &b)]).await,
    ];
    for r in &outside {
        assert_eq!(r.status, 409, "{}", r.text());
        assert!(
            r.text().contains("t1"),
            "the 409 names no resource: {}",
            r.text()
        );
    }
    // Reads outside and in the other tx see the committed state.
    for h in [vec![], vec![("atomic-id", b.as_str())]] {
        let mut h = h;
        h.push(("accept", "application/n-triples"));
        let r = s.get("t1", &h).await;
        assert!(r.text().contains("\"before\""), "{}", r.text());
    }
    // The refused tx is not poisoned: it commits (its other work included).
    let r = put(&s, "other", &[TURTLE, ("atomic-id", &b)], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(tx_request(&s, Method::PUT, &b).await.status, 204);
    assert_eq!(s.get("other", &[]).await.status, 200);
    // The first tx commits its change.
    assert_eq!(tx_request(&s, Method::PUT, &a).await.status, 204);
    let r = s.get("t1", &[("accept", "application/n-triples")]).await;
    assert!(r.text().contains("\"by a\""), "{}", r.text());
    // Then the object is free again.
    let r = put(&s, "t1", &[TURTLE], &titled("after")).await;
    assert_eq!(r.status, 204, "{}", r.text());
    validate_objects(&object_dirs(&s.ocfl_root()));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creating_in_two_tx_at_one_path_is_409_for_the_second() {
    let s = TestServer::start().await;
    let a = begin(&s).await;
    let b = begin(&s).await;
    assert_eq!(
        put(&s, "n", &[TURTLE, ("atomic-id", &a)], "").await.status,
        201
    );
    let r = put(&s, "n", &[TURTLE, ("atomic-id", &b)], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    let r = put(&s, "n", &[TURTLE], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(tx_request(&s, Method::PUT, &a).await.status, 204);
    assert_eq!(tx_request(&s, Method::PUT, &b).await.status, 204);
    assert_eq!(versions(&s, "info:fedora/n"), 1);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_writes_one_version_per_object_touched() {
    let s = TestServer::start().await;
    container_with(&s, "e", &titled("e0")).await;
    binary(&s, "eb", "text/plain", b"zero").await;
    let r = put(&s, "ag", &[TURTLE, LINK_AG], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let tx = begin(&s).await;
    let inside = ("atomic-id", tx.as_str());
    // Several changes of the same objects.
    for t in ["e1", "e2", "e3"] {
        assert_eq!(
            put(&s, "e", &[TURTLE, inside], &titled(t)).await.status,
            204
        );
    }
    for bytes in ["one", "two"] {
        let r = put(&s, "eb", &[("content-type", "text/plain"), inside], bytes).await;
        assert_eq!(r.status, 204, "{}", r.text());
    }
    assert_eq!(put(&s, "n", &[TURTLE, inside], "").await.status, 201);
    assert_eq!(
        put(&s, "n", &[TURTLE, inside], &titled("n2")).await.status,
        204
    );
    assert_eq!(put(&s, "ag/x", &[TURTLE, inside], "").await.status, 201);
    let r = put(
        &s,
        "ag/x/f",
        &[("content-type", "text/plain"), LINK_BINARY, inside],
        "part",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(put(&s, "ag/y", &[TURTLE, inside], "").await.status, 201);
    // Nothing yet.
    assert_eq!(versions(&s, "info:fedora/e"), 1);
    assert_eq!(versions(&s, "info:fedora/ag"), 1);
    assert_eq!(s.get("ag/x", &[]).await.status, 404);

    // Mementos have second precision: the commit's must not share e's first second.
    next_second().await;
    assert_eq!(tx_request(&s, Method::PUT, &tx).await.status, 204);
    assert_eq!(versions(&s, "info:fedora/e"), 2);
    assert_eq!(versions(&s, "info:fedora/eb"), 2);
    assert_eq!(versions(&s, "info:fedora/n"), 1);
    assert_eq!(versions(&s, "info:fedora/ag"), 2);
    let r = s.get("e", &[("accept", "application/n-triples")]).await;
    assert!(r.text().contains("\"e3\""), "{}", r.text());
    assert_eq!(s.get("eb", &[]).await.body.as_ref(), b"two");
    let r = s.get("n", &[("accept", "application/n-triples")]).await;
    assert!(r.text().contains("\"n2\""), "{}", r.text());
    assert_eq!(s.get("ag/x/f", &[]).await.body.as_ref(), b"part");
    let r = s.get("ag/x/f", &[]).await;
    assert_eq!(links(&r, "archival-group"), vec![s.url("ag")]);
    // The group's one new version holds every part, Fedora's paths.
    let state = version_states(&object_dir(&s.ocfl_root(), "info:fedora/ag"))
        .pop()
        .unwrap();
    for p in [
        ".fcrepo/x.json",
        ".fcrepo/x/f.json",
        ".fcrepo/x/f~fcr-desc.json",
        ".fcrepo/y.json",
        "x/fcr-container.nt",
        "x/f",
        "x/f~fcr-desc.nt",
        "y/fcr-container.nt",
    ] {
        assert!(state.contains(p), "{p} not in {state:?}");
    }
    // One memento each for the changed resources (a tx is one version).
    assert_eq!(timemap(&s, "e").await.len(), 2);
    assert_eq!(timemap(&s, "n").await.len(), 1);
    validate_objects(&object_dirs(&s.ocfl_root()));
    assert!(
        staging_leftovers(s.data()).is_empty(),
        "{:?}",
        staging_leftovers(s.data())
    );
    s.stop().await;
}

/// The ids in the change log.
async fn change_log(data: &Path) -> Vec<String> {
    let catalog = arca_catalog::SqliteCatalog::open(&data.join("catalog.sqlite")).unwrap();
    catalog
        .changes_since(0, 100_000)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.change.id.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_leaves_nothing_in_storage_staging_or_the_change_log() {
    let s = TestServer::start().await;
    container(&s, "keep").await;
    let tx = begin(&s).await;
    let inside = ("atomic-id", tx.as_str());
    assert_eq!(put(&s, "gone", &[TURTLE, inside], "").await.status, 201);
    let big = vec![b'x'; 3 << 20];
    let r = put_bytes(
        &s,
        "gone/big",
        &[
            ("content-type", "application/octet-stream"),
            LINK_BINARY,
            inside,
        ],
        &big,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    binary_in(&s, "gone/small", inside).await;
    assert_eq!(
        put(&s, "keep", &[TURTLE, inside], &titled("t"))
            .await
            .status,
        204
    );
    let r = put(&s, "ag", &[TURTLE, LINK_AG, inside], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(put(&s, "ag/x", &[TURTLE, inside], "").await.status, 201);
    assert!(
        !uploads(s.data()).is_empty(),
        "the tx's binaries wait in uploads/"
    );

    assert_eq!(tx_request(&s, Method::DELETE, &tx).await.status, 204);
    for p in ["gone", "gone/big", "gone/small", "ag", "ag/x"] {
        assert_eq!(s.get(p, &[]).await.status, 404, "{p}");
        assert!(
            !object_dir(&s.ocfl_root(), &format!("info:fedora/{p}")).exists(),
            "{p} has an object"
        );
    }
    assert_eq!(versions(&s, "info:fedora/keep"), 1);
    assert!(
        staging_leftovers(s.data()).is_empty(),
        "{:?}",
        staging_leftovers(s.data())
    );
    // The path is free again.
    assert_eq!(
        put(&s, "keep", &[TURTLE], &titled("outside")).await.status,
        204
    );
    let data = s.stop().await.expect("a temporary data dir");
    let log = change_log(data.path()).await;
    assert!(
        log.iter()
            .all(|id| id == "info:fedora" || id == "info:fedora/keep"),
        "the rolled back tx left change-log entries: {log:?}"
    );
}

async fn binary_in(s: &TestServer, path: &str, inside: (&str, &str)) {
    let r = put(
        s,
        path,
        &[("content-type", "text/plain"), LINK_BINARY, inside],
        "small",
    )
    .await;
    assert_eq!(r.status, 201, "{path}: {}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_tx_is_410_and_its_uploads_are_gone() {
    // 3 s leaves a loaded machine time for the requests between uses; the sleeps below
    // outlast it (expiry counts from the last use, which the sleep starts after).
    let s = TestServer::start_with(None, |c| c.transaction_timeout = 3).await;
    let tx = begin(&s).await;
    let inside = ("atomic-id", tx.as_str());
    binary_in(&s, "late", inside).await;
    assert_eq!(put(&s, "late2", &[TURTLE, inside], "").await.status, 201);
    assert!(!uploads(s.data()).is_empty());
    tokio::time::sleep(Duration::from_millis(4000)).await;
    // Fedora (§C.6): every method on the tx URL is 410 "… expired at …", 409 as Atomic-ID,
    // and the changes are gone.
    let r = tx_request(&s, Method::GET, &tx).await;
    assert_eq!(r.status, 410, "{}", r.text());
    assert!(r.text().contains("expired"), "{}", r.text());
    assert_eq!(tx_request(&s, Method::PUT, &tx).await.status, 410);
    let r = s.get("late", &[inside]).await;
    assert_eq!(r.status, 409, "{}", r.text());
    for p in ["late", "late2"] {
        assert_eq!(s.get(p, &[]).await.status, 404);
        assert!(!object_dir(&s.ocfl_root(), &format!("info:fedora/{p}")).exists());
    }
    assert!(uploads(s.data()).is_empty(), "{:?}", uploads(s.data()));
    // Using a tx keeps it alive: the uses span more than the timeout.
    let tx = begin(&s).await;
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(s.get("", &[("atomic-id", &tx)]).await.status, 200);
    }
    assert_eq!(tx_request(&s, Method::PUT, &tx).await.status, 204);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_tx_releases_what_it_changed() {
    // As above: a timeout a loaded machine cannot outrun between requests.
    let s = TestServer::start_with(None, |c| c.transaction_timeout = 3).await;
    container(&s, "t").await;
    let tx = begin(&s).await;
    assert_eq!(
        put(&s, "t", &[TURTLE, ("atomic-id", &tx)], "").await.status,
        204
    );
    assert_eq!(put(&s, "t", &[TURTLE], "").await.status, 409);
    tokio::time::sleep(Duration::from_millis(4000)).await;
    let r = put(&s, "t", &[TURTLE], &titled("free")).await;
    assert_eq!(r.status, 204, "{}", r.text());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_inside_tx_are_400_and_purge_409() {
    let s = TestServer::start().await;
    container(&s, "c").await;
    assert_eq!(delete(&s, "c", &[]).await.status, 204);
    container(&s, "v").await;
    let tx = begin(&s).await;
    // Fedora (§C.8): 400 "Version creation is not allowed within transactions."
    let r = post(&s, "v/fcr:versions", &[("atomic-id", &tx)], "").await;
    assert_eq!(r.status, 400, "{}", r.text());
    let r = delete(&s, "c/fcr:tombstone", &[("atomic-id", &tx)]).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(s.get("c", &[]).await.status, 410, "the purge happened");
    assert_eq!(tx_request(&s, Method::PUT, &tx).await.status, 204);
    assert_eq!(timemap(&s, "v").await.len(), 1);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_in_tx_is_410_inside_and_200_outside_until_commit() {
    let s = TestServer::start().await;
    container(&s, "d").await;
    binary(&s, "d/b", "text/plain", b"bytes").await;
    let tx = begin(&s).await;
    let r = delete(&s, "d", &[("atomic-id", &tx)]).await;
    assert_eq!(r.status, 204, "{}", r.text());
    // Fedora (§C.7).
    assert_eq!(s.get("d", &[("atomic-id", &tx)]).await.status, 410);
    assert_eq!(s.get("d/b", &[("atomic-id", &tx)]).await.status, 410);
    assert_eq!(s.get("d", &[]).await.status, 200);
    assert_eq!(s.get("d/b", &[]).await.body.as_ref(), b"bytes");
    assert_eq!(tx_request(&s, Method::PUT, &tx).await.status, 204);
    assert_eq!(s.get("d", &[]).await.status, 410);
    assert_eq!(s.get("d/b", &[]).await.status, 410);
    assert_eq!(delete(&s, "d/fcr:tombstone", &[]).await.status, 204);
    assert_eq!(s.get("d", &[]).await.status, 404);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn created_then_deleted_in_one_tx_commits() {
    let s = TestServer::start().await;
    let tx = begin(&s).await;
    let inside = ("atomic-id", tx.as_str());
    assert_eq!(put(&s, "tmp", &[TURTLE, inside], "").await.status, 201);
    binary_in(&s, "tmp/b", inside).await;
    assert_eq!(delete(&s, "tmp/b", &[inside]).await.status, 204);
    assert_eq!(s.get("tmp/b", &[inside]).await.status, 410);
    let r = tx_request(&s, Method::PUT, &tx).await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(s.get("tmp", &[]).await.status, 200);
    assert_eq!(s.get("tmp/b", &[]).await.status, 410);
    validate_objects(&object_dirs(&s.ocfl_root()));
    assert!(
        staging_leftovers(s.data()).is_empty(),
        "{:?}",
        staging_leftovers(s.data())
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_resources_commit_together() {
    let s = std::sync::Arc::new(TestServer::start().await);
    container(&s, "many").await;
    let tx = begin(&s).await;
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..8 {
        let s = s.clone();
        let tx = tx.clone();
        tasks.spawn(async move {
            for i in 0..25 {
                let n = worker * 25 + i;
                let r = if n % 4 == 0 {
                    put(
                        &s,
                        &format!("many/r{n}"),
                        &[
                            ("content-type", "text/plain"),
                            LINK_BINARY,
                            ("atomic-id", &tx),
                        ],
                        &format!("bytes {n}"),
                    )
                    .await
                } else {
                    put(
                        &s,
                        &format!("many/r{n}"),
                        &[TURTLE, ("atomic-id", &tx)],
                        &titled(&n.to_string()),
                    )
                    .await
                };
                assert_eq!(r.status, 201, "r{n}: {}", r.text());
            }
        });
    }
    while let Some(t) = tasks.join_next().await {
        t.unwrap();
    }
    assert!(children(&s, "many").await.is_empty());
    assert_eq!(s.get("many/r7", &[]).await.status, 404);
    let r = tx_request(&s, Method::PUT, &tx).await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(children(&s, "many").await.len(), 200);
    for n in [0, 1, 4, 199] {
        let r = s.get(&format!("many/r{n}"), &[]).await;
        assert_eq!(r.status, 200, "r{n}");
        if n % 4 == 0 {
            assert_eq!(r.text(), format!("bytes {n}"));
        }
    }
    let objects = object_dirs(&s.ocfl_root());
    assert_eq!(objects.len(), 202);
    validate_objects(&objects);
    assert!(
        staging_leftovers(s.data()).is_empty(),
        "{:?}",
        staging_leftovers(s.data())
    );
}

/// Inside a transaction its own changes are what reads see; Fedora 6 keeps its containment
/// index per transaction (`ContainmentIndexImpl`), so the parent lists the new child there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_lists_children_created_in_the_tx_inside_it() {
    let s = TestServer::start().await;
    container(&s, "p").await;
    let tx = begin(&s).await;
    assert_eq!(
        put(&s, "p/c", &[TURTLE, ("atomic-id", &tx)], "")
            .await
            .status,
        201
    );
    let inside = graph(&s, "p", &[("atomic-id", &tx)]).await;
    assert_eq!(
        inside.object_iris(&s.url("p"), LDP_CONTAINS),
        vec![s.url("p/c")],
        "the tx's own child is missing from its parent's listing inside the tx"
    );
    assert!(children(&s, "p").await.is_empty());
    s.stop().await;
}

/// What an open transaction staged lives in the catalog, not in the server's memory; when
/// the server stops with the transaction open, the next start rolls it back: its resources
/// never appear, its staged uploads are deleted, it answers as ended, and the objects it
/// claimed can be written again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tx_left_open_by_a_stopped_server_is_rolled_back_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_at(dir.path()).await;
    container(&s, "kept").await;
    let tx = begin(&s).await;
    let inside = ("atomic-id", tx.as_str());
    binary_in(&s, "staged-bin", inside).await;
    assert_eq!(put(&s, "staged", &[TURTLE, inside], "").await.status, 201);
    assert_eq!(
        put(&s, "kept", &[TURTLE, inside], &titled("in tx"))
            .await
            .status,
        204
    );
    assert!(!uploads(s.data()).is_empty());
    s.stop().await;

    // A new server, a new port: the transaction by its id.
    let s = TestServer::start_at(dir.path()).await;
    let tx = s.url(&format!("fcr:tx/{}", uuid_of(&tx)));
    let r = tx_request(&s, Method::GET, &tx).await;
    assert_eq!(r.status, 410, "{}", r.text());
    assert_eq!(s.get("kept", &[("atomic-id", &tx)]).await.status, 409);
    for p in ["staged", "staged-bin"] {
        assert_eq!(s.get(p, &[]).await.status, 404);
        assert!(!object_dir(&s.ocfl_root(), &format!("info:fedora/{p}")).exists());
    }
    assert!(uploads(s.data()).is_empty(), "{:?}", uploads(s.data()));
    assert!(!s.get("kept", &[]).await.text().contains("in tx"));
    let r = put(&s, "kept", &[TURTLE], &titled("free")).await;
    assert_eq!(r.status, 204, "{}", r.text());
    s.stop().await;
}
