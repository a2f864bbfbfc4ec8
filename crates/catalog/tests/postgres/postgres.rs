//! Behaviour only the PostgreSQL catalog has: its schema version, its errors at connect, and
//! what must hold when several nodes (here: several catalogs in one process) share one
//! database. Not run (and saying so) without PostgreSQL, unless `ARCA_REQUIRE_POSTGRES=1`.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::common::{record, stage, Store};
use arca_catalog::{
    Catalog, CatalogOp, Change, ChangeKind, Error, PostgresCatalog, TransactionStore, TxRefusal,
    POSTGRES_SCHEMA_VERSION,
};
use arca_model::FedoraId;

/// A new database's URL, or `None` when PostgreSQL is missing.
async fn database() -> Option<String> {
    match Store::postgres().await? {
        Store::Postgres(url) => Some(url),
        Store::Sqlite(_) => unreachable!(),
    }
}

fn log(path: &str) -> CatalogOp {
    CatalogOp::Log(Change {
        id: FedoraId::from_path(path).unwrap(),
        kind: ChangeKind::Create,
        at: "2026-01-01T00:00:00Z".into(),
        user: "u".into(),
        agent: None,
        types: Vec::new(),
    })
}

/// The schema version is recorded; a database written by a newer arca is refused at
/// connect rather than misread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_version_is_recorded_and_a_newer_one_refused() {
    let Some(url) = database().await else { return };
    let cat = PostgresCatalog::connect(&url).await.unwrap();
    assert_eq!(cat.schema_version().await.unwrap(), POSTGRES_SCHEMA_VERSION);
    cat.apply(vec![CatalogOp::Put(record("", None, false))])
        .await
        .unwrap();
    cat.close().await;
    // A second connect (a restart, or another node) keeps the rows.
    let cat = PostgresCatalog::connect(&url).await.unwrap();
    assert_eq!(cat.count().await.unwrap(), 1);
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    sqlx::query("UPDATE schema_version SET version = version + 1")
        .execute(&pool)
        .await
        .unwrap();
    match PostgresCatalog::connect(&url).await {
        Err(Error::Unsupported(message)) => assert!(message.contains("newer"), "{message}"),
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("a newer schema was opened"),
    }
}

/// A server that is not there, or a database that does not exist, is an error at connect
/// (a clear message at start, not at the first write).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_or_a_missing_database_fails_at_connect() {
    let Some(url) = database().await else { return };
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nowhere = format!("postgres://arca@127.0.0.1:{free}/x");
    assert!(matches!(
        PostgresCatalog::connect(&nowhere).await,
        Err(Error::Postgres(_))
    ));
    let (base, _) = url.rsplit_once('/').unwrap();
    match PostgresCatalog::connect(&format!("{base}/no_such_database")).await {
        Err(Error::Postgres(e)) => assert!(e.to_string().contains("no_such_database"), "{e}"),
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("a missing database was opened"),
    }
}

/// Two nodes staging the same object for two transactions at once: one owns it, the other
/// is refused, and nothing of the refused stage is kept — every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_racing_for_an_object_leave_one_owner() {
    let Some(url) = database().await else { return };
    let a = Arc::new(PostgresCatalog::connect(&url).await.unwrap());
    let b = Arc::new(PostgresCatalog::connect(&url).await.unwrap());
    for round in 0..20 {
        let (ta, tb) = (format!("a{round}"), format!("b{round}"));
        a.tx_begin(&ta, i64::MAX, None).await.unwrap();
        b.tx_begin(&tb, i64::MAX, None).await.unwrap();
        let path = format!("o{round}");
        let on_a = {
            let (a, ta, path) = (a.clone(), ta.clone(), path.clone());
            tokio::spawn(async move { a.tx_stage(&ta, stage(&path, false, "/u/a")).await })
        };
        let on_b = {
            let (b, tb, path) = (b.clone(), tb.clone(), path.clone());
            tokio::spawn(async move { b.tx_stage(&tb, stage(&path, false, "/u/b")).await })
        };
        let (ra, rb) = (on_a.await.unwrap().unwrap(), on_b.await.unwrap().unwrap());
        let ocfl_id = format!("info:fedora/{path}");
        let owner = match (&ra, &rb) {
            (Ok(_), Err(TxRefusal::Owned { ocfl_id: o })) if *o == ocfl_id => &ta,
            (Err(TxRefusal::Owned { ocfl_id: o }), Ok(_)) if *o == ocfl_id => &tb,
            other => panic!("round {round}: not one owner and one refusal: {other:?}"),
        };
        assert_eq!(
            a.tx_owners(&[&ocfl_id]).await.unwrap(),
            [(ocfl_id.clone(), owner.clone())]
        );
        let loser = if owner == &ta { &tb } else { &ta };
        assert!(b.tx_objects(loser, None, 10).await.unwrap().is_empty());
        assert!(b.tx_ops(loser, 0, 100).await.unwrap().is_empty());
    }
}

/// Writes from two nodes at once get distinct sequence numbers that become visible in
/// order: a consumer following the log with `changes_since(position)` while they write
/// misses none of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_following_two_writing_nodes_misses_no_change() {
    let Some(url) = database().await else { return };
    let nodes = [
        Arc::new(PostgresCatalog::connect(&url).await.unwrap()),
        Arc::new(PostgresCatalog::connect(&url).await.unwrap()),
    ];
    const PER_NODE: usize = 100;
    let mut writers = Vec::new();
    for (n, node) in nodes.iter().enumerate() {
        for i in 0..PER_NODE {
            let node = node.clone();
            writers.push(tokio::spawn(async move {
                let path = format!("n{n}-{i}");
                node.apply(vec![
                    CatalogOp::Put(record(&path, Some(""), false)),
                    log(&path),
                ])
                .await
                .unwrap()
            }));
        }
    }
    let reader = PostgresCatalog::connect(&url).await.unwrap();
    let mut seen = BTreeSet::new();
    let mut position = 0;
    let mut done = false;
    loop {
        // Once every writer has finished, one more read takes the rest.
        let finished = done;
        for entry in reader.changes_since(position, 1000).await.unwrap() {
            assert!(entry.seq > position);
            position = entry.seq;
            assert!(seen.insert(entry.change.id.to_string()));
        }
        if finished {
            break;
        }
        done = writers.iter().all(|w| w.is_finished());
        tokio::task::yield_now().await;
    }
    let mut seqs = BTreeSet::new();
    for w in writers {
        seqs.insert(w.await.unwrap());
    }
    assert_eq!(
        seqs.len(),
        2 * PER_NODE,
        "every write its own sequence number"
    );
    assert_eq!(
        seen.len(),
        2 * PER_NODE,
        "the consumer saw every change although it never went back"
    );
}

/// A group commit sends its writes to PostgreSQL in one statement; a write PostgreSQL
/// refuses (here a NUL byte in a text column) fails alone with its own error and leaves
/// nothing, whether alone or batched with others, and the writes batched with it commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_write_fails_alone_and_leaves_nothing() {
    let Some(url) = database().await else { return };
    let cat = Arc::new(PostgresCatalog::connect(&url).await.unwrap());
    let bad = |path: &str| {
        let CatalogOp::Log(mut change) = log(path) else {
            unreachable!()
        };
        change.user = "a\0b".into();
        vec![
            CatalogOp::Put(record(path, Some(""), false)),
            CatalogOp::Log(change),
        ]
    };
    let refused = cat.apply(bad("alone")).await.unwrap_err();
    assert!(!refused.is_unavailable(), "{refused}");
    let alone = FedoraId::from_path("alone").unwrap();
    assert!(cat.get(&alone).await.unwrap().is_none());
    assert!(cat.changes_since(0, 100).await.unwrap().is_empty());

    let mut writers = Vec::new();
    for i in 0..40 {
        let cat = cat.clone();
        writers.push(tokio::spawn(async move {
            let path = format!("w{i}");
            let ops = if i % 10 == 3 {
                bad(&path)
            } else {
                vec![CatalogOp::Put(record(&path, Some(""), false)), log(&path)]
            };
            cat.apply(ops).await
        }));
    }
    for (i, w) in writers.into_iter().enumerate() {
        let outcome = w.await.unwrap();
        let id = FedoraId::from_path(&format!("w{i}")).unwrap();
        let stored = cat.get(&id).await.unwrap();
        if i % 10 == 3 {
            assert!(outcome.is_err(), "write {i} was refused");
            assert!(stored.is_none(), "write {i} left nothing");
        } else {
            assert!(outcome.unwrap() > 0, "write {i} committed");
            assert!(stored.is_some(), "write {i} is stored");
        }
    }
    let logged: BTreeSet<String> = cat
        .changes_since(0, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.change.id.to_string())
        .collect();
    let expected: BTreeSet<String> = (0..40)
        .filter(|i| i % 10 != 3)
        .map(|i| FedoraId::from_path(&format!("w{i}")).unwrap().to_string())
        .collect();
    assert_eq!(logged, expected);
}

/// A node's `last_change` watch wakes for changes another node commits (event delivery
/// and live streams on every node follow the shared log).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_change_watch_follows_other_nodes() {
    let Some(url) = database().await else { return };
    let a = PostgresCatalog::connect(&url).await.unwrap();
    let b = PostgresCatalog::connect(&url).await.unwrap();
    let mut on_b = b.last_change();
    assert_eq!(*on_b.borrow_and_update(), 0);
    let seq = a
        .apply(vec![CatalogOp::Put(record("a", Some(""), false)), log("a")])
        .await
        .unwrap();
    // A bound on the wait, not a timing assertion: only a watch that never wakes fails.
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        on_b.wait_for(|v| *v >= seq),
    )
    .await
    .expect("node b's watch woke for node a's change")
    .unwrap();
    assert_eq!(*b.last_change().borrow(), seq);
}

/// A node's `last_foreign_change` watch moves for other nodes' commits only: its own
/// commits reach its watchers before they are answered, so its follower of other nodes'
/// changes need not read the log for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_foreign_change_watch_skips_the_nodes_own_commits() {
    let Some(url) = database().await else { return };
    let a = PostgresCatalog::connect(&url).await.unwrap();
    let b = PostgresCatalog::connect(&url).await.unwrap();
    let bound = std::time::Duration::from_secs(60);
    // Every value a's foreign watch takes (a watch keeps the last; the commits below are
    // hundreds of milliseconds apart, so no value goes unseen).
    let mut on_a = a.last_foreign_change();
    let seen = tokio::spawn(async move {
        let mut seen = vec![*on_a.borrow_and_update()];
        while on_a.changed().await.is_ok() {
            let v = *on_a.borrow_and_update();
            seen.push(v);
            if v >= 2 {
                return seen;
            }
        }
        seen
    });
    let first = a
        .apply(vec![
            CatalogOp::Put(record("own", Some(""), false)),
            log("own"),
        ])
        .await
        .unwrap();
    assert_eq!(first, 1);
    assert_eq!(
        *a.last_change().borrow(),
        first,
        "its own commit moved a's last change"
    );
    let mut on_b = b.last_foreign_change();
    tokio::time::timeout(bound, on_b.wait_for(|v| *v >= first))
        .await
        .expect("b's foreign watch woke for a's commit")
        .unwrap();
    // a's announcement has reached the listeners; give a's time to handle it.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let second = b
        .apply(vec![
            CatalogOp::Put(record("other", Some(""), false)),
            log("other"),
        ])
        .await
        .unwrap();
    assert_eq!(second, 2);
    let seen = tokio::time::timeout(bound, seen)
        .await
        .expect("a's foreign watch woke for b's commit")
        .unwrap();
    assert_eq!(
        seen,
        [0, second],
        "a's own commit did not move its foreign watch"
    );
    assert_eq!(
        *b.last_foreign_change().borrow(),
        first,
        "b's own commit did not either"
    );
}

/// How long a lock request is watched to see that it waits (it must not be granted in
/// this time while another node holds the lock).
const WAITS: std::time::Duration = std::time::Duration::from_millis(300);
/// A bound on how long a lock that was let go of takes to reach another node (liveness, not
/// speed: it is normally a few milliseconds).
const REACHES: std::time::Duration = std::time::Duration::from_secs(15);

/// A write lock taken on one node keeps another node's write to the same object waiting
/// (and only that one) until it is let go of; shared locks go together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_locks_hold_across_nodes() {
    use arca_catalog::Coordination;
    let Some(url) = database().await else { return };
    let a = PostgresCatalog::connect(&url).await.unwrap();
    let b = Arc::new(PostgresCatalog::connect(&url).await.unwrap());
    assert!(a.is_shared());

    let held = a.lock_objects(&["obj"], &["parent"]).await.unwrap();
    let waiting = {
        let b = b.clone();
        tokio::spawn(async move { b.lock_objects(&["obj"], &[]).await.map(|_| ()) })
    };
    tokio::time::sleep(WAITS).await;
    assert!(
        !waiting.is_finished(),
        "a second node wrote a locked object"
    );
    // Other objects, and shared locks on the parent, are not held up.
    let other = tokio::time::timeout(REACHES, b.lock_objects(&["other"], &["parent"]))
        .await
        .expect("an unrelated lock waited")
        .unwrap();
    drop(other);
    // The parent, shared by `a`, cannot be locked exclusively (a delete of the parent).
    let parent = {
        let b = b.clone();
        tokio::spawn(async move { b.lock_objects(&["parent"], &[]).await.map(|_| ()) })
    };
    tokio::time::sleep(WAITS).await;
    assert!(
        !parent.is_finished(),
        "the parent was locked while a child was written"
    );
    drop(held);
    tokio::time::timeout(REACHES, waiting)
        .await
        .expect("the lock was never passed on")
        .unwrap()
        .unwrap();
    tokio::time::timeout(REACHES, parent)
        .await
        .expect("the parent's lock was never passed on")
        .unwrap()
        .unwrap();
}

/// A role (delivering events to one destination) has one holder among the nodes; another
/// node takes it once the holder lets go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_node_holds_a_role() {
    use arca_catalog::Coordination;
    let Some(url) = database().await else { return };
    let a = PostgresCatalog::connect(&url).await.unwrap();
    let b = PostgresCatalog::connect(&url).await.unwrap();
    let leader = a.try_lead("events:x").await.unwrap().expect("a free role");
    assert!(b.try_lead("events:x").await.unwrap().is_none());
    assert!(
        a.try_lead("events:x").await.unwrap().is_none(),
        "held twice"
    );
    assert!(b.try_lead("events:y").await.unwrap().is_some());
    drop(leader);
    let started = std::time::Instant::now();
    loop {
        if b.try_lead("events:x").await.unwrap().is_some() {
            break;
        }
        assert!(started.elapsed() < REACHES, "the role was never given up");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Set in the environment of the child process that plays a node holding a lock.
const HOLDER_URL: &str = "ARCA_TEST_LOCK_HOLDER_URL";

/// Not a test of its own: the node that [`a_killed_node_lets_go_of_its_locks`] starts and
/// kills (it does nothing unless started so).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_holder_process() {
    use arca_catalog::Coordination;
    let Ok(url) = std::env::var(HOLDER_URL) else {
        return;
    };
    let catalog = PostgresCatalog::connect(&url).await.unwrap();
    let _held = catalog.lock_objects(&["crashing"], &[]).await.unwrap();
    let _role = catalog.try_lead("events:crashing").await.unwrap().unwrap();
    println!("LOCKED");
    tokio::time::sleep(std::time::Duration::from_secs(120)).await;
}

/// A node killed (SIGKILL) while it holds a write lock and a role: the others get both,
/// without anyone letting go of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_lets_go_of_its_locks() {
    use arca_catalog::Coordination;
    use std::io::BufRead;
    let Some(url) = database().await else { return };
    // The holder's test name: its path below the test binary's root (this module's path
    // without the binary's name).
    let (_, module) = module_path!()
        .split_once("::")
        .expect("a module of the test binary");
    let holder = format!("{module}::lock_holder_process");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &holder, "--nocapture", "--test-threads=1"])
        .env(HOLDER_URL, &url)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let locked = tokio::task::spawn_blocking(move || {
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(|l| l.ok())
            .any(|l| l.contains("LOCKED"))
    })
    .await
    .unwrap();
    assert!(locked, "the holder process did not take its lock");

    let other = Arc::new(PostgresCatalog::connect(&url).await.unwrap());
    assert!(other.try_lead("events:crashing").await.unwrap().is_none());
    let waiting = {
        let other = other.clone();
        tokio::spawn(async move { other.lock_objects(&["crashing"], &[]).await.map(|_| ()) })
    };
    tokio::time::sleep(WAITS).await;
    assert!(
        !waiting.is_finished(),
        "the lock was granted while its holder lived"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    tokio::time::timeout(REACHES, waiting)
        .await
        .expect("the killed node's lock never expired")
        .unwrap()
        .unwrap();
    // The role was held on another of the killed node's connections, whose server process
    // notices the end of its client on its own: soon, not necessarily before the lock's.
    let started = std::time::Instant::now();
    while other.try_lead("events:crashing").await.unwrap().is_none() {
        assert!(
            started.elapsed() < REACHES,
            "the killed node's role never expired"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A write's locks and its reads come in one call, the reads seeing everything committed
/// before the locks were granted (a writer waiting on another sees that one's change); its
/// record and the release of its locks come in another, the locks going only after the
/// commit; a refused record lets go of the locks too and leaves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_reads_under_its_locks_and_lets_go_of_them_with_its_record() {
    use arca_catalog::{Coordination, PendingWrite, WriteReads};
    let Some(url) = database().await else { return };
    let a = Arc::new(PostgresCatalog::connect(&url).await.unwrap());
    let b = Arc::new(PostgresCatalog::connect(&url).await.unwrap());
    let pending = PendingWrite {
        op: "op1".into(),
        object: "c/x".into(),
        started: 1,
        decided: false,
        record: vec![0, 1, 2],
    };
    a.apply(vec![
        CatalogOp::Put(record("c", Some(""), false)),
        CatalogOp::Put(record("c/x/y", Some("c"), false)),
        CatalogOp::BeginWrite(pending.clone()),
    ])
    .await
    .unwrap();
    let id = |p: &str| FedoraId::from_path(p).unwrap();
    let reads = WriteReads {
        records: vec![id("c"), id("c/x"), id("c/new")],
        descendants_of: Some(id("c/x")),
        objects: vec!["c/x".into(), "c/new".into()],
        begin: None,
    };
    let (locks, seen) = a.lock_and_read(&["c/x"], &["c"], &reads).await.unwrap();
    assert_eq!(
        seen.records
            .iter()
            .map(|r| r.id.to_string())
            .collect::<Vec<_>>(),
        vec![id("c").to_string()]
    );
    assert!(seen.has_descendants, "c/x/y lies below c/x");
    assert!(seen.owners.is_empty());
    assert_eq!(seen.pending.len(), 1);
    assert_eq!(seen.pending[0].op, "op1");
    assert_eq!(seen.pending[0].record, vec![0, 1, 2]);

    // Another node's write of the same object waits, then sees what `a` recorded.
    let waiting = {
        let b = b.clone();
        let reads = WriteReads {
            records: vec![id("c/x")],
            descendants_of: None,
            objects: vec!["c/x".into()],
            begin: None,
        };
        tokio::spawn(async move {
            let (locks, seen) = b.lock_and_read(&["c/x"], &[], &reads).await.unwrap();
            drop(locks);
            seen
        })
    };
    tokio::time::sleep(WAITS).await;
    assert!(
        !waiting.is_finished(),
        "a locked object was read for a write"
    );
    let seq = a
        .apply_and_unlock(
            vec![
                CatalogOp::Put(record("c/x", Some("c"), false)),
                log("c/x"),
                CatalogOp::FinishWrite {
                    op: "op1".into(),
                    object: None,
                },
            ],
            locks,
        )
        .await
        .unwrap();
    assert!(seq > 0);
    assert_eq!(
        *a.last_change().borrow(),
        seq,
        "the node's watch follows its own write"
    );
    let seen = tokio::time::timeout(REACHES, waiting)
        .await
        .expect("the locks were not let go with the record")
        .unwrap();
    assert!(
        seen.record(&id("c/x")).is_some(),
        "the waiting write saw the record"
    );
    assert!(
        seen.pending.is_empty(),
        "the finished change is forgotten with it"
    );

    // A new resource's change under way is recorded with the reads when they let it go
    // ahead, and only then: not where a resource exists, nor in a parent that does not.
    let begin = |absent: &str, live: &str, op: &str| WriteReads {
        records: vec![id(absent), id(live)],
        descendants_of: Some(id(absent)),
        objects: vec![absent.into()],
        begin: Some(arca_catalog::BeginIf {
            writes: vec![PendingWrite {
                op: op.into(),
                object: absent.into(),
                started: 2,
                decided: false,
                record: vec![9; 3000],
            }],
            absent: id(absent),
            live: id(live),
        }),
    };
    for (absent, live, op, expected) in [
        ("c/x", "c", "taken", false),
        ("c/n", "nowhere", "orphan", false),
        ("c/x/y/z", "c/x/y", "below-y", true),
        ("c/n", "c", "new", true),
    ] {
        let (locks, seen) = a
            .lock_and_read(&[absent], &[live], &begin(absent, live, op))
            .await
            .unwrap();
        assert_eq!(seen.begun, expected, "{absent} in {live}");
        let rows = b.pending_writes_of(absent).await.unwrap();
        assert_eq!(
            rows.iter().any(|r| r.op == op),
            expected,
            "{absent} in {live}"
        );
        if expected {
            assert_eq!(rows[0].record, vec![9; 3000]);
        }
        drop(locks);
    }
    // A change under way of the object holds the next one back (recovery goes first).
    let (_, seen) = a
        .lock_and_read(&["c/n"], &["c"], &begin("c/n", "c", "second"))
        .await
        .unwrap();
    assert!(!seen.begun, "a second change began beside one under way");
    assert_eq!(seen.pending.len(), 1);

    // A record the database refuses: an error, nothing stored, the locks gone.
    let (locks, _) = a
        .lock_and_read(&["c/z"], &[], &WriteReads::default())
        .await
        .unwrap();
    let CatalogOp::Log(mut change) = log("c/z") else {
        unreachable!()
    };
    change.user = "a\0b".into();
    let refused = a
        .apply_and_unlock(
            vec![
                CatalogOp::Put(record("c/z", Some("c"), false)),
                CatalogOp::Log(change),
            ],
            locks,
        )
        .await
        .unwrap_err();
    assert!(!refused.is_unavailable(), "{refused}");
    assert!(a.get(&id("c/z")).await.unwrap().is_none());
    let free = tokio::time::timeout(REACHES, b.lock_objects(&["c/z"], &[]))
        .await
        .expect("a refused record kept its locks");
    drop(free.unwrap());
}
