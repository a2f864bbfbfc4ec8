//! What a read takes from the catalog in one round (issue 42): a binary's `Link: rel="type"`
//! names the classes its description states, after every change of the description and
//! after a rebuild of the catalog; a container lists children and membership triples as
//! soon as they exist and none once they are gone, inside a transaction too.

use crate::common::*;
use arca_testkit::{Reply, TestServer};

const PHOTO: &str = "http://example.org/Photo";
const SCAN: &str = "http://example.org/Scan";
const PCDM_HAS_MEMBER: &str = "http://pcdm.org/models#hasMember";
const LINK_DIRECT: (&str, &str) = (
    "link",
    "<http://www.w3.org/ns/ldp#DirectContainer>; rel=\"type\"",
);

/// The `rel="type"` link targets of an answer, sorted.
fn types(r: &Reply) -> Vec<String> {
    assert_eq!(r.status, 200, "{}", r.text());
    let mut t = links(r, "type");
    t.sort();
    t
}

async fn sparql(s: &TestServer, path: &str, update: &str) {
    let r = patch(s, path, &[SPARQL], update).await;
    assert_eq!(r.status, 204, "PATCH {path}: {}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binarys_types_follow_its_description_and_survive_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_at(dir.path()).await;
    container(&s, "c").await;
    binary(&s, "c/f", "text/plain", b"bytes").await;
    let plain = types(&s.get("c/f", &[]).await);
    assert!(plain.contains(&LDP_NON_RDF_SOURCE.to_string()), "{plain:?}");
    assert!(!plain.contains(&PHOTO.to_string()), "{plain:?}");

    // A class the description states of its binary (`<>` there is the binary).
    sparql(
        &s,
        "c/f/fcr:metadata",
        &format!("INSERT DATA {{ <> a <{PHOTO}> }}"),
    )
    .await;
    let with_photo = types(&s.get("c/f", &[]).await);
    let mut expected = plain.clone();
    expected.push(PHOTO.to_string());
    expected.sort();
    assert_eq!(with_photo, expected);
    assert_eq!(types(&head(&s, "c/f", &[]).await), expected, "HEAD as GET");

    // Replaced by another: the old one goes at once.
    sparql(
        &s,
        "c/f/fcr:metadata",
        &format!("DELETE DATA {{ <> a <{PHOTO}> }}; INSERT DATA {{ <> a <{SCAN}> }}"),
    )
    .await;
    let with_scan = types(&s.get("c/f", &[]).await);
    let mut expected = plain.clone();
    expected.push(SCAN.to_string());
    expected.sort();
    assert_eq!(with_scan, expected);
    // The description's own GET names them too, as before.
    assert!(
        types(&s.get("c/f/fcr:metadata", &[]).await).contains(&SCAN.to_string()),
        "the description's types"
    );
    s.stop().await;

    // The catalog rebuilt from storage gives the same headers.
    let copy = copy_without_catalog(dir.path());
    let s = TestServer::start_at(copy.path()).await;
    assert_eq!(types(&s.get("c/f", &[]).await), with_scan);
    assert_eq!(s.get("c/f", &[]).await.body.as_ref(), b"bytes");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_lists_children_and_membership_as_they_come_and_go() {
    let s = TestServer::start().await;
    container(&s, "mr").await;
    let mr = s.url("mr");
    let graph = |r: Reply| {
        assert_eq!(r.status, 200, "{}", r.text());
        Graph::of(&r, &mr)
    };
    let g = graph(s.get("mr", &[]).await);
    assert!(!g.0.iter().any(|t| t.predicate.as_str() == LDP_CONTAINS));

    // A child: listed at once, and gone with its deletion.
    container(&s, "mr/kid").await;
    assert!(graph(s.get("mr", &[]).await).has(&mr, LDP_CONTAINS, &s.url("mr/kid")));
    assert_eq!(delete(&s, "mr/kid", &[]).await.status, 204);
    let g = graph(s.get("mr", &[]).await);
    assert!(!g.0.iter().any(|t| t.predicate.as_str() == LDP_CONTAINS));

    // mr becomes the membership resource of a direct container: its first member's
    // triple shows on mr at once, and none once the member is gone.
    let body = format!(
        "<> <{LDP}membershipResource> <{mr}> ; <{LDP}hasMemberRelation> <{PCDM_HAS_MEMBER}> ."
    );
    let r = put(&s, "dc", &[TURTLE, LINK_DIRECT], &body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(!graph(s.get("mr", &[]).await)
        .0
        .iter()
        .any(|t| t.predicate.as_str() == PCDM_HAS_MEMBER));
    container(&s, "dc/m").await;
    assert!(graph(s.get("mr", &[]).await).has(&mr, PCDM_HAS_MEMBER, &s.url("dc/m")));
    assert_eq!(delete(&s, "dc/m", &[]).await.status, 204);
    assert!(!graph(s.get("mr", &[]).await)
        .0
        .iter()
        .any(|t| t.predicate.as_str() == PCDM_HAS_MEMBER));

    // Inside a transaction, a child created there is listed there (and not outside).
    let tx = post(&s, "fcr:tx", &[], "").await;
    assert_eq!(tx.status, 201, "{}", tx.text());
    let tx = tx.header("location").unwrap().to_string();
    let inside = ("atomic-id", tx.as_str());
    let r = put(&s, "mr/in-tx", &[TURTLE, inside], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(graph(s.get("mr", &[inside]).await).has(&mr, LDP_CONTAINS, &s.url("mr/in-tx")));
    assert!(!graph(s.get("mr", &[]).await).has(&mr, LDP_CONTAINS, &s.url("mr/in-tx")));
    s.stop().await;
}

/// The headers of a read are built once per state of a resource and reused (issue 42):
/// they follow the `Host` a request names, and every change of the resource at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reads_headers_follow_the_host_and_every_change() {
    let s = TestServer::start().await;
    container(&s, "c").await;
    binary(&s, "c/f", "text/plain", b"one").await;
    let described_by = |r: &Reply| {
        assert_eq!(r.status, 200, "{}", r.text());
        links(r, "describedby")
    };
    for host in ["a.example", "b.example", "a.example"] {
        let r = s.get("c/f", &[("host", host)]).await;
        assert_eq!(
            described_by(&r),
            [format!("http://{host}/rest/c/f/fcr:metadata")]
        );
    }
    let first = s.get("c/f", &[]).await;
    let again = s.get("c/f", &[]).await;
    assert_eq!(first.header("etag"), again.header("etag"));
    assert_eq!(first.header("content-type"), Some("text/plain"));

    let r = put_bytes(
        &s,
        "c/f",
        &[
            ("content-type", "image/png"),
            ("content-disposition", "attachment; filename=\"scan.png\""),
        ],
        b"two",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let changed = s.get("c/f", &[]).await;
    assert_eq!(changed.body.as_ref(), b"two");
    assert_eq!(changed.header("content-type"), Some("image/png"));
    let disposition = changed.header("content-disposition").unwrap_or_default();
    assert!(disposition.contains("scan.png"), "{disposition}");
    assert!(changed.header("etag").is_some());
    assert_ne!(changed.header("etag"), first.header("etag"));
    // The container's answer, once read, follows a child's arrival as well.
    let turtle = ("accept", "text/turtle");
    let before = s.get("c", &[turtle]).await;
    assert!(!before.text().contains("/rest/c/d>"), "{}", before.text());
    container(&s, "c/d").await;
    let after = s.get("c", &[turtle]).await;
    assert!(after.text().contains("/rest/c/d>"), "{}", after.text());
    s.stop().await;
}
