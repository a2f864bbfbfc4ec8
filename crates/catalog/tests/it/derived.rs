//! The catalog's derived rows and lookups — membership, references, mementos, listings at
//! an instant, scans and the meta table — against each implementation
//! (`common::on_every_catalog`).

use crate::common::{record, Store};
use arca_catalog::{CatalogOp, MembershipRow, MementoRow, ReferenceRow};
use arca_model::{FedoraId, InteractionModel};

fn id(path: &str) -> FedoraId {
    FedoraId::from_path(path).unwrap()
}

on_every_catalog!(
    membership_rows_are_replaced_per_container_or_member_and_paged,
    references_are_replaced_per_source_and_paged,
    the_current_memento_moves_among_the_earlier_ones_when_replaced,
    listings_at_an_instant_scans_and_meta,
);

async fn membership_rows_are_replaced_per_container_or_member_and_paged(store: Store) {
    let cat = store.open().await;
    let mut dc = record("dc", Some(""), false);
    dc.headers.interaction_model = InteractionModel::DirectContainer.iri().into();
    cat.apply(vec![CatalogOp::Put(dc.clone())]).await.unwrap();
    assert_eq!(cat.membership_sources().await.unwrap(), [id("dc")]);
    let row = |member: &str| MembershipRow {
        proxy: id(&format!("dc/{member}")),
        subject: "info:fedora/target".into(),
        predicate: "urn:x:has".into(),
        object: format!("info:fedora/{member}"),
    };
    cat.apply(vec![CatalogOp::ReplaceMembership {
        source: id("dc"),
        proxy: None,
        rows: vec![row("m2"), row("m1"), row("m1")],
    }])
    .await
    .unwrap();
    let pair = |member: &str| ("urn:x:has".to_string(), format!("info:fedora/{member}"));
    assert_eq!(
        cat.membership("info:fedora/target", None, 10)
            .await
            .unwrap(),
        [pair("m1"), pair("m2")]
    );
    assert_eq!(
        cat.membership(
            "info:fedora/target",
            Some(("urn:x:has", "info:fedora/m1")),
            10
        )
        .await
        .unwrap(),
        [pair("m2")]
    );
    assert_eq!(
        cat.membership_of_source(&id("dc")).await.unwrap(),
        [row("m1"), row("m2")]
    );
    // Only member m1's rows are replaced.
    cat.apply(vec![CatalogOp::ReplaceMembership {
        source: id("dc"),
        proxy: Some(id("dc/m1")),
        rows: Vec::new(),
    }])
    .await
    .unwrap();
    assert_eq!(
        cat.membership_of_source(&id("dc")).await.unwrap(),
        [row("m2")]
    );
    // A member that goes takes its rows along.
    cat.apply(vec![CatalogOp::ForgetDerived(id("dc/m2"))])
        .await
        .unwrap();
    assert!(cat
        .membership_of_source(&id("dc"))
        .await
        .unwrap()
        .is_empty());
    // A deleted container no longer generates membership.
    dc.headers.deleted = true;
    cat.apply(vec![CatalogOp::Put(dc)]).await.unwrap();
    assert!(cat.membership_sources().await.unwrap().is_empty());
}

async fn references_are_replaced_per_source_and_paged(store: Store) {
    let cat = store.open().await;
    let reference = |subject: &str, predicate: &str, target: &str| ReferenceRow {
        subject: subject.into(),
        predicate: predicate.into(),
        target: id(target),
    };
    cat.apply(vec![CatalogOp::ReplaceReferences {
        source: id("a"),
        rows: vec![
            reference("info:fedora/a#h", "urn:x:r", "t"),
            reference("info:fedora/a", "urn:x:r", "t"),
            reference("info:fedora/a", "urn:x:q", "u"),
        ],
    }])
    .await
    .unwrap();
    let pair = |s: &str, p: &str| (s.to_string(), p.to_string());
    assert_eq!(
        cat.references_to(&id("t"), None, 10).await.unwrap(),
        [
            pair("info:fedora/a", "urn:x:r"),
            pair("info:fedora/a#h", "urn:x:r")
        ]
    );
    assert_eq!(
        cat.references_to(&id("t"), Some(("info:fedora/a", "urn:x:r")), 10)
            .await
            .unwrap(),
        [pair("info:fedora/a#h", "urn:x:r")]
    );
    assert_eq!(
        cat.references_from(&id("a")).await.unwrap(),
        [id("t"), id("u")]
    );
    cat.apply(vec![CatalogOp::ReplaceReferences {
        source: id("a"),
        rows: vec![reference("info:fedora/a", "urn:x:q", "u")],
    }])
    .await
    .unwrap();
    assert!(cat
        .references_to(&id("t"), None, 10)
        .await
        .unwrap()
        .is_empty());
    cat.apply(vec![CatalogOp::ForgetDerived(id("a"))])
        .await
        .unwrap();
    assert!(cat.references_from(&id("a")).await.unwrap().is_empty());
}

async fn the_current_memento_moves_among_the_earlier_ones_when_replaced(store: Store) {
    let cat = store.open().await;
    let memento = |t: i64| MementoRow {
        id: id("a"),
        datetime: t,
        version: format!("v{t}"),
        header_file: format!("a/h{t}"),
        content_file: None,
    };
    cat.apply(vec![
        CatalogOp::Put(record("a", Some(""), false)),
        CatalogOp::PutMemento(memento(100)),
        CatalogOp::CurrentMemento(memento(200)),
    ])
    .await
    .unwrap();
    assert_eq!(cat.mementos(&id("a")).await.unwrap(), [100, 200]);
    let version = |m: Option<MementoRow>| m.map(|m| m.version);
    assert_eq!(
        version(cat.memento_at_or_before(&id("a"), 150).await.unwrap()),
        Some("v100".into())
    );
    assert_eq!(
        version(cat.memento_at_or_before(&id("a"), 250).await.unwrap()),
        Some("v200".into())
    );
    assert_eq!(cat.memento_at_or_before(&id("a"), 50).await.unwrap(), None);
    // A new state that is no memento (a mutable HEAD): the old current one is kept among
    // the earlier ones.
    cat.apply(vec![CatalogOp::Put(record("a", Some(""), false))])
        .await
        .unwrap();
    assert_eq!(cat.mementos(&id("a")).await.unwrap(), [100, 200]);
    assert_eq!(
        cat.memento_at_or_before(&id("a"), 250).await.unwrap(),
        Some(memento(200))
    );
    // A later version in the same second replaces the earlier one.
    let mut again = memento(200);
    again.version = "v201".into();
    cat.apply(vec![CatalogOp::PutMemento(again)]).await.unwrap();
    assert_eq!(
        version(cat.memento_at_or_before(&id("a"), 200).await.unwrap()),
        Some("v201".into())
    );
    cat.apply(vec![CatalogOp::ForgetMementos(id("a"))])
        .await
        .unwrap();
    assert!(cat.mementos(&id("a")).await.unwrap().is_empty());
}

async fn listings_at_an_instant_scans_and_meta(store: Store) {
    let cat = store.open().await;
    let nanos = |s: &str| arca_model::parse_instant(s).unwrap().unix_timestamp_nanos() as i64;
    let mut x = record("x", Some(""), false);
    x.headers.created_date = Some("2026-01-01T00:00:00Z".into());
    let mut y = record("y", Some(""), true);
    y.headers.created_date = Some("2026-01-01T00:00:00Z".into());
    y.headers.last_modified_date = Some("2026-01-02T00:00:00Z".into());
    let mut z = record("x/z", Some("x"), false);
    z.ocfl_id = "info:fedora/x".into();
    cat.apply(vec![
        CatalogOp::Put(record("", None, false)),
        CatalogOp::Put(x),
        CatalogOp::Put(y),
        CatalogOp::Put(z),
    ])
    .await
    .unwrap();
    let root = FedoraId::root();
    assert_eq!(
        cat.children_at(&root, nanos("2026-01-01T12:00:00Z"))
            .await
            .unwrap(),
        [id("x"), id("y")]
    );
    assert_eq!(
        cat.children_at(&root, nanos("2026-01-03T00:00:00Z"))
            .await
            .unwrap(),
        [id("x")]
    );
    assert!(cat
        .children_at(&root, nanos("2025-01-01T00:00:00Z"))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(cat.children(&root, None, 10).await.unwrap(), [id("x")]);
    assert_eq!(
        cat.children_any(&root, None, 10).await.unwrap(),
        [id("x"), id("y")]
    );
    // Paged across live children and tombstones alike.
    assert_eq!(cat.children_any(&root, None, 1).await.unwrap(), [id("x")]);
    assert_eq!(
        cat.children_any(&root, Some(&id("x")), 1).await.unwrap(),
        [id("y")]
    );
    assert!(cat
        .children_any(&root, Some(&id("y")), 1)
        .await
        .unwrap()
        .is_empty());
    assert!(cat.has_descendants(&id("x")).await.unwrap());
    assert!(!cat.has_descendants(&id("y")).await.unwrap());
    assert_eq!(
        cat.in_object("info:fedora/x")
            .await
            .unwrap()
            .iter()
            .map(|r| r.id.clone())
            .collect::<Vec<_>>(),
        [id("x"), id("x/z")]
    );
    let live: Vec<FedoraId> = cat
        .live_after(None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(live, [root.clone(), id("x"), id("x/z")]);
    assert_eq!(
        cat.live_after(Some(&id("x")), 1).await.unwrap()[0].id,
        id("x/z")
    );
    assert_eq!(cat.live_count().await.unwrap(), 3);
    assert_eq!(cat.count().await.unwrap(), 4);
    assert_eq!(cat.meta("k").await.unwrap(), None);
    cat.set_meta("k", "1").await.unwrap();
    cat.set_meta("k", "2").await.unwrap();
    assert_eq!(cat.meta("k").await.unwrap().as_deref(), Some("2"));
    cat.clear().await.unwrap();
    assert_eq!(cat.meta("k").await.unwrap(), None);
    assert_eq!(cat.count().await.unwrap(), 0);
}
