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
    assert!(p.wants(LDP_PREFER_CONTAINMENT, true));
    assert!(!p.wants(FEDORA_PREFER_INBOUND_REFERENCES, false));
}

#[test]
fn include_minimal_container() {
    let p = prefer(
        r#"return=representation; include="http://www.w3.org/ns/ldp#PreferMinimalContainer""#,
    );
    assert_eq!(p.return_representation, Some(ReturnPref::Representation));
    assert_eq!(p.include, [LDP_PREFER_MINIMAL_CONTAINER]);
    assert!(p.wants(LDP_PREFER_MINIMAL_CONTAINER, true));
    assert!(!p.wants(LDP_PREFER_CONTAINMENT, true));
    assert!(!p.wants(LDP_PREFER_MEMBERSHIP, true));
    assert!(p.wants(FEDORA_SERVER_MANAGED, true));
    assert!(!p.lenient);
}

#[test]
fn empty_container_is_an_alias() {
    let p =
        prefer(r#"return=representation; include="http://www.w3.org/ns/ldp#PreferEmptyContainer""#);
    assert_eq!(p.include, [LDP_PREFER_MINIMAL_CONTAINER]);
    assert!(p.wants(LDP_PREFER_EMPTY_CONTAINER, true));
    assert!(!p.wants(LDP_PREFER_CONTAINMENT, true));
}

#[test]
fn omit_containment_and_membership() {
    let p = prefer(
        r#"return=representation; omit="http://www.w3.org/ns/ldp#PreferContainment http://www.w3.org/ns/ldp#PreferMembership""#,
    );
    assert_eq!(p.omit, [LDP_PREFER_CONTAINMENT, LDP_PREFER_MEMBERSHIP]);
    assert!(!p.wants(LDP_PREFER_CONTAINMENT, true));
    assert!(!p.wants(LDP_PREFER_MEMBERSHIP, true));
    assert!(p.wants(LDP_PREFER_MINIMAL_CONTAINER, true));
    assert!(p.wants(FEDORA_SERVER_MANAGED, true));
}

#[test]
fn omit_wins_over_include() {
    let p = prefer(
        r#"return=representation; include="http://www.w3.org/ns/ldp#PreferContainment"; omit="http://www.w3.org/ns/ldp#PreferContainment""#,
    );
    assert!(!p.wants(LDP_PREFER_CONTAINMENT, true));
}

#[test]
fn include_optional_categories() {
    let p = prefer(
        r#"return=representation; include="http://fedora.info/definitions/fcrepo#PreferInboundReferences"; omit="http://fedora.info/definitions/fcrepo#ServerManaged""#,
    );
    assert!(p.wants(FEDORA_PREFER_INBOUND_REFERENCES, false));
    assert!(!p.wants(FEDORA_SERVER_MANAGED, true));
    assert!(p.wants(LDP_PREFER_CONTAINMENT, true));
}

#[test]
fn return_minimal() {
    let p = prefer("return=minimal");
    assert_eq!(p.return_representation, Some(ReturnPref::Minimal));
    assert!(!p.wants(LDP_PREFER_CONTAINMENT, true));
    assert!(!p.wants(LDP_PREFER_MEMBERSHIP, true));
    assert!(!p.wants(FEDORA_PREFER_INBOUND_REFERENCES, false));
    assert!(p.wants(LDP_PREFER_MINIMAL_CONTAINER, true));
}

#[test]
fn lenient_handling() {
    let p = prefer(r#"handling=lenient; received="minimal""#);
    assert!(p.lenient);
    assert_eq!(p.return_representation, None);
    assert!(p.wants(LDP_PREFER_CONTAINMENT, true));
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
