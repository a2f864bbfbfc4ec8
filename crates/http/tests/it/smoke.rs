//! The server answers the repository root.
use arca_testkit::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_is_a_basic_container() {
    let s = TestServer::start().await;
    let r = s.get("", &[]).await;
    assert_eq!(r.status, 200);
    assert!(r.has_link("http://www.w3.org/ns/ldp#BasicContainer", "type"));
    s.stop().await;
}
