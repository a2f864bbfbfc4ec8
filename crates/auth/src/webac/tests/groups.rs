use super::*;

const LISTING: &str = "info:fedora/groups";

fn alice() -> Principal {
    user("alice", &[])
}

#[test]
fn req_5_0_group_listing_members_by_iri_literal_and_user_base() {
    let triples = ttl(
        LISTING,
        r#"<> a vcard:Group ; vcard:hasMember <http://example.org/users/alice>, "bob", <mailto:carol@example.org> ."#,
    );
    let alice = alice();
    let with_base = AgentIris::new(Some(&alice), Some(USER_BASE), None);
    assert!(group_has_member(
        &triples,
        LISTING,
        &with_base.agent(Some(&alice))
    ));
    // Without a user base, alice's IRI does not name her.
    let no_base = AgentIris::default();
    assert!(!group_has_member(
        &triples,
        LISTING,
        &no_base.agent(Some(&alice))
    ));
    let bob = user("bob", &[]);
    assert!(group_has_member(
        &triples,
        LISTING,
        &no_base.agent(Some(&bob))
    ));
    let carol = user("mailto:carol@example.org", &[]);
    assert!(group_has_member(
        &triples,
        LISTING,
        &no_base.agent(Some(&carol))
    ));
}

#[test]
fn req_5_0_group_listing_must_be_a_vcard_group() {
    let triples = ttl(LISTING, r#"<> vcard:hasMember "alice" ."#);
    let alice = alice();
    let iris = AgentIris::default();
    assert!(!group_has_member(
        &triples,
        LISTING,
        &iris.agent(Some(&alice))
    ));
}

#[test]
fn req_5_0_hash_uri_groups_count_only_their_own_members() {
    // The test suite's agent-group-using-hash-uris.ttl, plus a second group.
    let triples = ttl(
        LISTING,
        r#"<> a acl:GroupListing .
           <#group1> a vcard:Group ; vcard:hasMember "alice" .
           <#group2> a vcard:Group ; vcard:hasMember "bob" .
           <#group3> vcard:hasMember "alice" ."#,
    );
    let alice = alice();
    let iris = AgentIris::default();
    let agent = iris.agent(Some(&alice));
    assert!(group_has_member(
        &triples,
        "info:fedora/groups#group1",
        &agent
    ));
    assert!(!group_has_member(
        &triples,
        "info:fedora/groups#group2",
        &agent
    ));
    assert!(
        !group_has_member(&triples, "info:fedora/groups#group3", &agent),
        "not typed vcard:Group"
    );
    // Without a hash, the whole resource is the listing, as in Fedora.
    assert!(group_has_member(&triples, LISTING, &agent));
}

#[test]
fn req_5_0_anonymous_agents_are_in_no_group() {
    let triples = ttl(
        LISTING,
        r#"<> a vcard:Group ; vcard:hasMember "alice", foaf:Agent, "" ."#,
    );
    assert!(!group_has_member(&triples, LISTING, &Agent::ANONYMOUS));
}

#[test]
fn req_5_0_groups_may_list_role_groups() {
    let triples = ttl(
        LISTING,
        "<> a vcard:Group ; vcard:hasMember <http://example.org/groups/editors> .",
    );
    let carol = user("carol", &["editors"]);
    let iris = AgentIris::new(Some(&carol), None, Some(GROUP_BASE));
    assert!(group_has_member(
        &triples,
        LISTING,
        &iris.agent(Some(&carol))
    ));
}

#[test]
fn req_5_0_a_group_listing_decides_through_the_acl() {
    let acl = acl(
        "info:fedora/a",
        "<#g> a acl:Authorization ; acl:agentGroup <info:fedora/groups#group1> ; acl:mode acl:Read ; acl:accessTo <info:fedora/a> .",
    );
    let listing = ttl(
        LISTING,
        r#"<#group1> a vcard:Group ; vcard:hasMember "alice" ."#,
    );
    let alice = alice();
    let iris = AgentIris::default();
    let agent = iris.agent(Some(&alice));
    let granted = acl.modes_for("info:fedora/a", None, &agent, &mut Vec::new, &mut |group| {
        group_has_member(&listing, group, &agent)
    });
    assert_eq!(granted, set(&[Mode::Read]));
}
