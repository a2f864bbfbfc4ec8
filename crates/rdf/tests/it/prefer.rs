//! The `Prefer` header as Fedora clients send it.

use arca_rdf::vocab::{
    FEDORA_PREFER_INBOUND_REFERENCES, FEDORA_SERVER_MANAGED, LDP_PREFER_CONTAINMENT,
    LDP_PREFER_EMPTY_CONTAINER, LDP_PREFER_MEMBERSHIP, LDP_PREFER_MINIMAL_CONTAINER,
};
use arca_rdf::{Prefer, ReturnPref};

fn prefer(value: &str) -> Prefer {
    Prefer::parse([value])
}

#[test]
fn no_header_keeps_defaults() {
    let p = Prefer::parse([]);
    assert_eq!(p, Prefer::default());
    assert!(p.wants(LDP_PREFER_CONTAINMENT));
    assert!(!p.wants(FEDORA_PREFER_INBOUND_REFERENCES));
}

#[test]
fn include_minimal_container() {
    let p = prefer(
        r#"return=representation; include="http://www.w3.org/ns/ldp#PreferMinimalContainer""#,
    );
    assert_eq!(p.return_representation, Some(ReturnPref::Representation));
    assert_eq!(p.include, [LDP_PREFER_MINIMAL_CONTAINER]);
    assert!(p.wants(LDP_PREFER_MINIMAL_CONTAINER));
    assert!(!p.wants(LDP_PREFER_CONTAINMENT));
    assert!(!p.wants(LDP_PREFER_MEMBERSHIP));
    assert!(p.wants(FEDORA_SERVER_MANAGED));
    assert!(!p.lenient);
}

#[test]
fn empty_container_is_an_alias() {
    let p =
        prefer(r#"return=representation; include="http://www.w3.org/ns/ldp#PreferEmptyContainer""#);
    assert_eq!(p.include, [LDP_PREFER_MINIMAL_CONTAINER]);
    assert!(p.wants(LDP_PREFER_EMPTY_CONTAINER));
    assert!(!p.wants(LDP_PREFER_CONTAINMENT));
}

#[test]
fn omit_containment_and_membership() {
    let p = prefer(
        r#"return=representation; omit="http://www.w3.org/ns/ldp#PreferContainment http://www.w3.org/ns/ldp#PreferMembership""#,
    );
    assert_eq!(p.omit, [LDP_PREFER_CONTAINMENT, LDP_PREFER_MEMBERSHIP]);
    assert!(!p.wants(LDP_PREFER_CONTAINMENT));
    assert!(!p.wants(LDP_PREFER_MEMBERSHIP));
    assert!(p.wants(LDP_PREFER_MINIMAL_CONTAINER));
    assert!(p.wants(FEDORA_SERVER_MANAGED));
}

#[test]
fn include_wins_over_omit_as_in_fedora_6() {
    let p = prefer(
        r#"return=representation; include="http://www.w3.org/ns/ldp#PreferContainment"; omit="http://www.w3.org/ns/ldp#PreferContainment http://www.w3.org/ns/ldp#PreferMembership""#,
    );
    assert!(p.wants(LDP_PREFER_CONTAINMENT));
    assert!(!p.wants(LDP_PREFER_MEMBERSHIP));
    assert_eq!(p.omitted().collect::<Vec<_>>(), [LDP_PREFER_MEMBERSHIP]);
}

#[test]
fn omit_minimal_container_drops_the_resources_own_and_server_managed_triples() {
    let p =
        prefer(r#"return=representation; omit="http://www.w3.org/ns/ldp#PreferMinimalContainer""#);
    assert!(!p.wants(LDP_PREFER_MINIMAL_CONTAINER));
    assert!(!p.wants(FEDORA_SERVER_MANAGED));
    assert!(p.wants(LDP_PREFER_CONTAINMENT));
    assert!(p.wants(LDP_PREFER_MEMBERSHIP));
    assert!(!p.wants(FEDORA_PREFER_INBOUND_REFERENCES));
    let p = prefer(
        r#"return=representation; omit="http://www.w3.org/ns/ldp#PreferMinimalContainer http://www.w3.org/ns/ldp#PreferMembership""#,
    );
    assert!(!p.wants(LDP_PREFER_MINIMAL_CONTAINER));
    assert!(p.wants(LDP_PREFER_CONTAINMENT));
    assert!(!p.wants(LDP_PREFER_MEMBERSHIP));
}

#[test]
fn omit_server_managed_drops_containment_and_membership_unless_included() {
    let p = prefer(
        r#"return=representation; omit="http://fedora.info/definitions/fcrepo#ServerManaged""#,
    );
    assert!(p.wants(LDP_PREFER_MINIMAL_CONTAINER));
    assert!(!p.wants(FEDORA_SERVER_MANAGED));
    assert!(!p.wants(LDP_PREFER_CONTAINMENT));
    assert!(!p.wants(LDP_PREFER_MEMBERSHIP));
    let p = prefer(
        r#"return=representation; include="http://www.w3.org/ns/ldp#PreferMembership"; omit="http://fedora.info/definitions/fcrepo#ServerManaged""#,
    );
    assert!(!p.wants(LDP_PREFER_CONTAINMENT));
    assert!(p.wants(LDP_PREFER_MEMBERSHIP));
}

#[test]
fn include_optional_categories() {
    let p = prefer(
        r#"return=representation; include="http://fedora.info/definitions/fcrepo#PreferInboundReferences"; omit="http://fedora.info/definitions/fcrepo#ServerManaged""#,
    );
    assert!(p.wants(FEDORA_PREFER_INBOUND_REFERENCES));
    assert!(!p.wants(FEDORA_SERVER_MANAGED));
    assert!(p.wants(LDP_PREFER_MINIMAL_CONTAINER));
}

#[test]
fn return_minimal() {
    let p = prefer("return=minimal");
    assert_eq!(p.return_representation, Some(ReturnPref::Minimal));
    assert!(!p.wants(LDP_PREFER_CONTAINMENT));
    assert!(!p.wants(LDP_PREFER_MEMBERSHIP));
    assert!(!p.wants(FEDORA_PREFER_INBOUND_REFERENCES));
    assert!(p.wants(LDP_PREFER_MINIMAL_CONTAINER));
}

#[test]
fn lenient_handling() {
    let p = prefer(r#"handling=lenient; received="minimal""#);
    assert!(p.lenient);
    assert_eq!(p.return_representation, None);
    assert!(p.wants(LDP_PREFER_CONTAINMENT));
    assert!(!prefer("handling=strict").lenient);
}

#[test]
fn several_preferences_and_headers() {
    let p = Prefer::parse([
        "return=minimal, handling=lenient",
        "return=representation; max-member-count=\"10\"",
    ]);
    // The first `return` counts.
    assert_eq!(p.return_representation, Some(ReturnPref::Minimal));
    assert!(p.lenient);
    assert_eq!(p.max_member_count, Some(10));
}

#[test]
fn case_spacing_and_quoted_separators() {
    let p = prefer(
        r#"RETURN = Representation ;  Include = "http://www.w3.org/ns/ldp#PreferMembership,x;y"  "#,
    );
    assert_eq!(p.return_representation, Some(ReturnPref::Representation));
    assert_eq!(p.include, ["http://www.w3.org/ns/ldp#PreferMembership,x;y"]);
}
