//! `catalog.url` selects a PostgreSQL catalog: the repository keeps its catalog there, and a
//! server that cannot reach it, or is refused, fails at start with a message that names
//! the database (never the password), as does a standby given as its only host. Not run without PostgreSQL unless
//! `ARCA_REQUIRE_POSTGRES=1`.

use arca_config::Config;
use arca_server::{open_repository, OpenCatalog};
use arca_testkit::postgres::Postgres;

fn config(data: &std::path::Path, url: &str) -> Config {
    let mut config = Config {
        data: data.to_path_buf(),
        ..Config::default()
    };
    config.catalog.url = Some(url.to_string());
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repository_keeps_its_catalog_in_postgresql() {
    let Some(pg) = tokio::task::spawn_blocking(Postgres::shared).await.unwrap() else {
        return;
    };
    let url = tokio::task::spawn_blocking(|| pg.create_database())
        .await
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let (repo, catalog) = open_repository(&config(data.path(), &url), true)
        .await
        .unwrap();
    assert!(matches!(catalog, OpenCatalog::Postgres(_)));
    repo.shutdown().await.unwrap();
    catalog.checkpoint().unwrap();
    assert!(
        !data.path().join("catalog.sqlite").exists(),
        "no SQLite catalog was made"
    );
    // The rebuild of the new, empty repository was recorded in PostgreSQL.
    let direct = arca_catalog::PostgresCatalog::connect(&url).await.unwrap();
    use arca_catalog::Catalog;
    assert_eq!(
        direct.meta("rebuild.state").await.unwrap().as_deref(),
        Some("complete")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_or_refusing_postgresql_is_an_error_at_start() {
    let data = tempfile::tempdir().unwrap();
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nowhere = format!("postgres://arca:s3cret@127.0.0.1:{free}/arca");
    let error = format!(
        "{:#}",
        open_repository(&config(data.path(), &nowhere), true)
            .await
            .err()
            .expect("no catalog there")
    );
    assert!(
        error.contains(&format!(
            "cannot open the catalog in PostgreSQL at postgres://arca:***@127.0.0.1:{free}/arca"
        )),
        "{error}"
    );
    assert!(!error.contains("s3cret"), "{error}");

    let Some(pg) = tokio::task::spawn_blocking(Postgres::shared).await.unwrap() else {
        return;
    };
    let refused = format!("postgres://nobody:s3cret@127.0.0.1:{}/postgres", pg.port());
    let error = format!(
        "{:#}",
        open_repository(&config(data.path(), &refused), true)
            .await
            .err()
            .expect("an unknown user is refused")
    );
    assert!(error.contains("\"nobody\""), "{error}");
    assert!(!error.contains("s3cret"), "{error}");
}

/// A streaming standby given as the catalog's only host is refused at start, naming
/// `catalog.url` and the standby's address; so is a host list of standbys, naming each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_as_the_only_host_is_refused_at_start() {
    let Some((primary, standby, url)) = tokio::task::spawn_blocking(|| {
        let primary = Postgres::start()?;
        let url = primary.create_database();
        let standby = primary.start_standby();
        Some((primary, standby, url))
    })
    .await
    .unwrap() else {
        return;
    };
    let on_standby = url.replace(
        &format!(":{}/", primary.port()),
        &format!(":{}/", standby.port()),
    );
    assert_ne!(on_standby, url);
    let data = tempfile::tempdir().unwrap();
    let error = format!(
        "{:#}",
        open_repository(&config(data.path(), &on_standby), true)
            .await
            .err()
            .expect("a standby is refused")
    );
    assert!(
        error.contains("catalog.url") && error.contains("is a standby"),
        "{error}"
    );
    assert!(
        error.contains(&format!("127.0.0.1:{}", standby.port())),
        "{error}"
    );
    // A host list of two standbys is refused the same way, naming each.
    let (second, primary) = tokio::task::spawn_blocking(move || (primary.start_standby(), primary))
        .await
        .unwrap();
    let both = url.replace(
        &format!("127.0.0.1:{}/", primary.port()),
        &format!("127.0.0.1:{},127.0.0.1:{}/", standby.port(), second.port()),
    ) + "?target_session_attrs=read-write";
    let error = format!(
        "{:#}",
        open_repository(&config(data.path(), &both), true)
            .await
            .err()
            .expect("a list of standbys is refused")
    );
    assert!(
        error.contains("catalog.url") && error.contains("no host of its list takes writes"),
        "{error}"
    );
    for s in [&standby, &second] {
        assert!(
            error.contains(&format!("127.0.0.1:{} is a standby", s.port())),
            "{error}"
        );
    }
    // The same database on the primary opens: only the standby was refused.
    let (repo, catalog) = open_repository(&config(data.path(), &url), true)
        .await
        .unwrap();
    repo.shutdown().await.unwrap();
    drop(catalog);
    tokio::task::spawn_blocking(move || drop((second, standby, primary)))
        .await
        .unwrap();
}

/// A malformed host list in `catalog.url` (an empty host, a port that is not a number) is
/// refused at start with what is wrong, naming `catalog.url`, never the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_host_list_is_refused_at_start() {
    let data = tempfile::tempdir().unwrap();
    for (url, expected) in [
        (
            "postgres://arca:s3cret@127.0.0.1:5432,/arca",
            "host 2 of the 2 in its host list is empty",
        ),
        (
            "postgres://arca:s3cret@127.0.0.1:5432,127.0.0.1:54x/arca",
            "the port \"54x\" of 127.0.0.1 in its host list is not a port number",
        ),
    ] {
        let error = format!(
            "{:#}",
            open_repository(&config(data.path(), url), true)
                .await
                .err()
                .expect("a malformed host list is refused")
        );
        assert!(
            error.contains("catalog.url") && error.contains(expected),
            "{error}"
        );
        assert!(!error.contains("s3cret"), "{error}");
    }
}
