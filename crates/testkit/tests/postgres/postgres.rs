//! The private PostgreSQL cluster: it starts as a non-root user when the tests run as root,
//! serves a database per caller, and comes back after a stop.

use arca_testkit::postgres::Postgres;

#[test]
fn a_private_cluster_serves_databases_and_restarts() {
    let Some(mut pg) = Postgres::start() else {
        return;
    };
    assert!(pg.is_running());
    let a = pg.create_database();
    let b = pg.create_database();
    assert_ne!(a, b);
    assert!(a.starts_with(&format!("postgres://arca@127.0.0.1:{}/", pg.port())));
    // The data directory belongs to whoever runs the server, never root.
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(pg.dir().join("data")).unwrap().uid();
    assert_ne!(owner, 0, "PostgreSQL runs as a non-root user");
    pg.stop();
    assert!(!pg.is_running());
    pg.start_again();
    assert!(pg.is_running());
    pg.create_database();
    let dir = pg.dir().to_path_buf();
    drop(pg);
    assert!(!dir.exists(), "the cluster's directory is removed");
}
