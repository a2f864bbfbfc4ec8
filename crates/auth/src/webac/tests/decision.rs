use super::*;

const A: &str = "info:fedora/a";
const B: &str = "info:fedora/a/b";

#[test]
fn req_5_2_only_typed_authorizations_count() {
    let acl = acl(
        A,
        r#"<#read> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Read ; acl:accessTo <info:fedora/a> .
           <#write> acl:agent "alice" ; acl:mode acl:Write ; acl:accessTo <info:fedora/a> ."#,
    );
    let alice = user("alice", &[]);
    let iris = AgentIris::default();
    assert_eq!(acl.len(), 1);
    assert_eq!(
        modes(&acl, A, None, &iris.agent(Some(&alice))),
        set(&[Mode::Read])
    );
}

#[test]
fn req_5_2_e_a_bare_authorization_denies_everything() {
    // The Fedora API test suite's empty-acl.ttl: must be accepted, and then deny.
    let acl = acl(A, "<#restricted> a acl:Authorization .");
    assert!(acl.is_effective(None));
    let alice = user("alice", &[]);
    let iris = AgentIris::default();
    assert_eq!(modes(&acl, A, None, &iris.agent(Some(&alice))), Modes::NONE);
    assert_eq!(modes(&acl, A, None, &Agent::ANONYMOUS), Modes::NONE);
}

#[test]
fn req_5_2_statements_outside_authorizations_are_ignored() {
    let acl = acl(
        A,
        r#"<> a <http://fedora.info/definitions/v4/webac#Acl> ; rdfs:label "mine" ; acl:mode acl:Write .
           <#x> ex:note "hello" ; acl:agentClass foaf:Agent .
           <#read> a acl:Authorization ; rdfs:comment "readers" ; acl:agentClass foaf:Agent ;
               acl:mode acl:Read ; acl:accessTo <info:fedora/a> ; acl:origin <http://example.org> ."#,
    );
    assert_eq!(acl.len(), 1);
    assert_eq!(modes(&acl, A, None, &Agent::ANONYMOUS), set(&[Mode::Read]));
}

#[test]
fn req_5_2_an_acl_without_authorizations_does_not_decide() {
    // Fedora walks on up the tree past such an ACL.
    let acl = acl(A, r#"<#x> ex:note "nothing here" ."#);
    assert!(acl.is_empty());
    assert!(!acl.is_effective(None));
    assert!(!acl.is_effective(Some(A)));
}

#[test]
fn req_5_2_modes_are_the_union_of_authorizations() {
    let acl = acl(
        A,
        r#"<#auth1> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Read ; acl:accessTo <info:fedora/a> .
           <#auth2> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Write ; acl:accessTo <info:fedora/a> .
           <#auth3> a acl:Authorization ; acl:agent "bob" ; acl:mode acl:Control ; acl:accessTo <info:fedora/a> ."#,
    );
    let alice = user("alice", &[]);
    let iris = AgentIris::default();
    assert_eq!(
        modes(&acl, A, None, &iris.agent(Some(&alice))),
        set(&[Mode::Read, Mode::Write, Mode::Append])
    );
}

#[test]
fn req_5_0_agent_by_user_iri_by_literal_name_and_by_bare_name() {
    let acl = acl(
        A,
        r#"<#iri> a acl:Authorization ; acl:agent <http://example.org/users/alice> ; acl:mode acl:Read ; acl:accessTo <info:fedora/a> .
           <#literal> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Append ; acl:accessTo <info:fedora/a> .
           <#bob> a acl:Authorization ; acl:agent <http://example.org/users/bob> ; acl:mode acl:Control ; acl:accessTo <info:fedora/a> ."#,
    );
    let alice = user("alice", &[]);
    let with_base = AgentIris::new(Some(&alice), Some(USER_BASE), None);
    assert_eq!(
        with_base.user_iri.as_deref(),
        Some("http://example.org/users/alice")
    );
    assert_eq!(
        modes(&acl, A, None, &with_base.agent(Some(&alice))),
        set(&[Mode::Read, Mode::Append])
    );
    // Without a user base, alice is only her bare name.
    let no_base = AgentIris::new(Some(&alice), None, None);
    assert_eq!(
        modes(&acl, A, None, &no_base.agent(Some(&alice))),
        set(&[Mode::Append])
    );
    assert_eq!(modes(&acl, A, None, &Agent::ANONYMOUS), Modes::NONE);
}

#[test]
fn req_5_0_d_foaf_agent_is_everyone_even_anonymous() {
    let acl = acl(
        A,
        "<#public> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Read ; acl:accessTo <info:fedora/a> .",
    );
    let alice = user("alice", &[]);
    let iris = AgentIris::default();
    assert_eq!(modes(&acl, A, None, &Agent::ANONYMOUS), set(&[Mode::Read]));
    assert_eq!(
        modes(&acl, A, None, &iris.agent(Some(&alice))),
        set(&[Mode::Read])
    );
}

#[test]
fn req_5_0_authenticated_agent_excludes_anonymous() {
    let acl = acl(
        A,
        "<#users> a acl:Authorization ; acl:agentClass acl:AuthenticatedAgent ; acl:mode acl:Read ; acl:accessTo <info:fedora/a> .",
    );
    let alice = user("alice", &[]);
    let iris = AgentIris::default();
    assert_eq!(modes(&acl, A, None, &Agent::ANONYMOUS), Modes::NONE);
    assert_eq!(
        modes(&acl, A, None, &iris.agent(Some(&alice))),
        set(&[Mode::Read])
    );
}

#[test]
fn req_5_0_agent_as_foaf_agent_names_nobody() {
    // Fedora 6 drops foaf:Agent and acl:AuthenticatedAgent given as acl:agent; other agent
    // classes name nobody either.
    let acl = acl(
        A,
        "<#old> a acl:Authorization ; acl:agent foaf:Agent ; acl:agentClass ex:Staff ; acl:mode acl:Read ; acl:accessTo <info:fedora/a> .",
    );
    assert_eq!(modes(&acl, A, None, &Agent::ANONYMOUS), Modes::NONE);
}

#[test]
fn req_5_0_agent_group_with_hash_uri_is_resolved_by_the_caller() {
    let acl = acl(
        A,
        "<#editors> a acl:Authorization ; acl:agentGroup <info:fedora/groups#editors> ; acl:mode acl:Write ; acl:accessTo <info:fedora/a> .
         <#staff> a acl:Authorization ; acl:agentGroup <http://localhost:8080/rest/staff> ; acl:mode acl:Read ; acl:accessTo <info:fedora/a> .",
    );
    assert_eq!(
        acl.groups().collect::<Vec<_>>(),
        ["info:fedora/groups#editors", "info:fedora/staff"]
    );
    let alice = user("alice", &[]);
    let iris = AgentIris::default();
    let mut asked = Vec::new();
    let granted = acl.modes_for(
        A,
        None,
        &iris.agent(Some(&alice)),
        &mut || panic!("types were not needed"),
        &mut |g| {
            asked.push(g.to_string());
            g == "info:fedora/groups#editors"
        },
    );
    assert_eq!(granted, set(&[Mode::Write]));
    assert_eq!(asked, ["info:fedora/groups#editors", "info:fedora/staff"]);
    // Anonymous agents are in no group: the listings are not even read.
    assert_eq!(modes(&acl, A, None, &Agent::ANONYMOUS), Modes::NONE);
}

#[test]
fn req_5_0_agent_group_matches_role_groups_without_a_listing() {
    let acl = acl(
        A,
        "<#editors> a acl:Authorization ; acl:agentGroup <http://example.org/groups/editors> ; acl:mode acl:Write ; acl:accessTo <info:fedora/a> .",
    );
    assert_eq!(acl.groups().count(), 0);
    let editor = user("carol", &["editors"]);
    let iris = AgentIris::new(Some(&editor), None, Some(GROUP_BASE));
    assert_eq!(iris.group_iris, ["http://example.org/groups/editors"]);
    assert_eq!(
        modes(&acl, A, None, &iris.agent(Some(&editor))),
        set(&[Mode::Write, Mode::Append])
    );
    let reader = user("dave", &["readers"]);
    let iris = AgentIris::new(Some(&reader), None, Some(GROUP_BASE));
    assert_eq!(
        modes(&acl, A, None, &iris.agent(Some(&reader))),
        Modes::NONE
    );
}

#[test]
fn req_5_0_acl_agent_under_the_group_base_names_a_role() {
    // Fedora strips the group base URI from acl:agent values and matches group principals.
    let acl = acl(
        A,
        r#"<#editors> a acl:Authorization ; acl:agent <http://example.org/groups/editors> ; acl:mode acl:Read ; acl:accessTo <info:fedora/a> .
           <#byname> a acl:Authorization ; acl:agent "reviewers" ; acl:mode acl:Append ; acl:accessTo <info:fedora/a> ."#,
    );
    let editor = user("carol", &["editors", "reviewers"]);
    let with_base = AgentIris::new(Some(&editor), None, Some(GROUP_BASE));
    assert_eq!(
        modes(&acl, A, None, &with_base.agent(Some(&editor))),
        set(&[Mode::Read])
    );
    // Without a group base, roles are matched by their bare names, as Fedora's header groups.
    let no_base = AgentIris::new(Some(&editor), None, None);
    assert_eq!(
        modes(&acl, A, None, &no_base.agent(Some(&editor))),
        set(&[Mode::Append])
    );
}

#[test]
fn req_5_7_write_implies_append() {
    assert!(Modes::from(Mode::Write).contains(Mode::Append));
    assert!(!Modes::from(Mode::Append).contains(Mode::Write));
    assert!(Modes::NONE.is_empty());
    assert_eq!(
        Modes::NONE.with(Mode::Read).iter().collect::<Vec<_>>(),
        [Mode::Read]
    );
    assert_eq!(Mode::from_iri(vocab::CONTROL), Some(Mode::Control));
    assert_eq!(Mode::from_iri("http://www.w3.org/ns/auth/acl#Delete"), None);
}

#[test]
fn req_5_7_append_without_write() {
    let append = Modes::from(Mode::Append);
    // 5.7.1: no replacing PUT, no PATCH that deletes, no DELETE; PUT-create and insert-only PATCH.
    assert!(!Action::Put { exists: true }.allowed_by(append));
    assert!(Action::Put { exists: false }.allowed_by(append));
    assert!(!Action::Patch {
        inserts_only: false
    }
    .allowed_by(append));
    assert!(Action::Patch { inserts_only: true }.allowed_by(append));
    assert!(!Action::Delete.allowed_by(append));
    // 5.7.2: POST to a container; 5.7.3: not to a binary.
    assert!(Action::Post { to_binary: false }.allowed_by(append));
    assert!(!Action::Post { to_binary: true }.allowed_by(append));
    assert!(!Action::Read.allowed_by(append));
    let write = Modes::from(Mode::Write);
    for action in [
        Action::Put { exists: true },
        Action::Put { exists: false },
        Action::Post { to_binary: true },
        Action::Post { to_binary: false },
        Action::Patch {
            inserts_only: false,
        },
        Action::Delete,
    ] {
        assert!(action.allowed_by(write), "{action:?}");
    }
    // ACLs need Control, whatever else is granted.
    assert!(!Action::Control.allowed_by(write.with(Mode::Read)));
    assert_eq!(required(Action::Control), Mode::Control);
}

#[test]
fn req_5_8_access_to_class() {
    let acl = acl(
        A,
        "<#books> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Read ; acl:accessToClass ex:Book .
         <#maps> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Write ; acl:accessToClass ex:Map .",
    );
    assert!(acl.uses_classes());
    let mut calls = 0;
    let granted = acl.modes_for(
        A,
        None,
        &Agent::ANONYMOUS,
        &mut || {
            calls += 1;
            vec!["http://example.org/ns#Book".to_string()]
        },
        &mut |_| false,
    );
    assert_eq!(granted, set(&[Mode::Read]));
    assert_eq!(calls, 1, "types are read once per decision");
    let none = acl.modes_for(
        A,
        None,
        &Agent::ANONYMOUS,
        &mut || vec!["http://example.org/ns#Letter".to_string()],
        &mut |_| false,
    );
    assert_eq!(none, Modes::NONE);
}

#[test]
fn req_5_8_types_are_read_only_when_needed() {
    let acl = acl(
        A,
        r#"<#all> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Read ; acl:accessTo <info:fedora/a> .
           <#books> a acl:Authorization ; acl:agent "bob" ; acl:mode acl:Read ; acl:accessToClass ex:Book ."#,
    );
    let alice = user("alice", &[]);
    let iris = AgentIris::default();
    // alice is granted by accessTo; bob's class authorization does not name her.
    assert_eq!(
        modes(&acl, A, None, &iris.agent(Some(&alice))),
        set(&[Mode::Read])
    );
    assert_eq!(modes(&acl, A, None, &Agent::ANONYMOUS), Modes::NONE);
}

#[test]
fn req_5_9_default_inheritance() {
    let acl = acl(
        A,
        r#"<#inherited> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Read ;
               acl:accessTo <info:fedora/a> ; acl:default <info:fedora/a> .
           <#here-only> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Write ; acl:accessTo <info:fedora/a> ."#,
    );
    let alice = user("alice", &[]);
    let iris = AgentIris::default();
    let agent = iris.agent(Some(&alice));
    assert!(acl.is_effective(None));
    assert!(acl.is_effective(Some(A)));
    assert_eq!(
        modes(&acl, A, None, &agent),
        set(&[Mode::Read, Mode::Write, Mode::Append])
    );
    assert_eq!(modes(&acl, B, Some(A), &agent), set(&[Mode::Read]));
    assert_eq!(
        modes(&acl, "info:fedora/a/b/c/d", Some(A), &agent),
        set(&[Mode::Read])
    );
}

#[test]
fn req_5_9_an_acl_without_defaults_is_not_inherited() {
    let acl = acl(
        A,
        r#"<#here-only> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Write ; acl:accessTo <info:fedora/a> ."#,
    );
    assert!(!acl.is_effective(Some(A)), "the search goes on up the tree");
}

#[test]
fn req_5_9_default_must_name_the_ancestor() {
    let acl = acl(
        A,
        r#"<#elsewhere> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Read ;
               acl:accessTo <info:fedora/a> ; acl:default <info:fedora/x> ."#,
    );
    let alice = user("alice", &[]);
    let iris = AgentIris::default();
    assert!(!acl.is_effective(Some(A)));
    assert_eq!(
        modes(&acl, B, Some(A), &iris.agent(Some(&alice))),
        Modes::NONE
    );
}

#[test]
fn req_5_0_f_access_to_one_child_through_the_parent_acl() {
    // The test suite's user-read-only-access-to-child.ttl on the parent.
    let acl = acl(
        A,
        r#"<#restricted> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Read ;
               acl:default <info:fedora/a> ; acl:accessTo <info:fedora/a/child1> ."#,
    );
    let alice = user("alice", &[]);
    let iris = AgentIris::default();
    let agent = iris.agent(Some(&alice));
    assert_eq!(
        modes(&acl, "info:fedora/a/child1", Some(A), &agent),
        set(&[Mode::Read])
    );
    assert_eq!(
        modes(&acl, "info:fedora/a/child2", Some(A), &agent),
        Modes::NONE
    );
    assert_eq!(modes(&acl, A, None, &agent), Modes::NONE);
}

#[test]
fn req_5_9_inherited_access_to_class_needs_the_type() {
    // The test suite's user-read-only-access-to-class.ttl.
    let acl = acl(
        A,
        r#"<#restricted> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Read ;
               acl:default <info:fedora/a> ; acl:accessToClass foaf:Document ."#,
    );
    let alice = user("alice", &[]);
    let iris = AgentIris::default();
    let agent = iris.agent(Some(&alice));
    let doc = || vec!["http://xmlns.com/foaf/0.1/Document".to_string()];
    let read = acl.modes_for(B, Some(A), &agent, &mut || doc(), &mut |_| false);
    assert_eq!(read, set(&[Mode::Read]));
    let other = acl.modes_for(B, Some(A), &agent, &mut Vec::new, &mut |_| false);
    assert_eq!(other, Modes::NONE);
}

#[test]
fn req_5_9_default_only_authorization_reaches_its_own_resource() {
    // Fedora stores such an authorization with acl:accessTo its resource added.
    let acl = acl(
        A,
        r#"<#auth> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Read ; acl:default <info:fedora/a> ."#,
    );
    let alice = user("alice", &[]);
    let iris = AgentIris::default();
    let agent = iris.agent(Some(&alice));
    assert_eq!(modes(&acl, A, None, &agent), set(&[Mode::Read]));
    assert_eq!(modes(&acl, B, Some(A), &agent), set(&[Mode::Read]));
}

#[test]
fn req_5_9_b_fedora_default_acl_lets_everyone_read() {
    let acl = Acl::fedora_default();
    assert_eq!(acl.resource(), "info:fedora");
    assert_eq!(
        Acl::server_default(&default_root_acl(), &rules()).unwrap(),
        acl
    );
    assert!(acl.is_effective(None));
    assert!(acl.is_effective(Some("info:fedora/anything")));
    let alice = user("alice", &[]);
    let iris = AgentIris::default();
    for resource in ["info:fedora", A, "info:fedora/x/y/z"] {
        for inherited in [None, Some("info:fedora")] {
            assert_eq!(
                modes(&acl, resource, inherited, &Agent::ANONYMOUS),
                set(&[Mode::Read])
            );
            assert_eq!(
                modes(&acl, resource, inherited, &iris.agent(Some(&alice))),
                set(&[Mode::Read])
            );
        }
    }
}

#[test]
fn req_5_9_server_default_access_to_reaches_descendants() {
    // An operator's root ACL without acl:default, as Fedora reads it.
    let triples = ttl(
        "info:fedora/fcr:acl",
        "<#public> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Read ; acl:accessTo <info:fedora/public> .",
    );
    let acl = Acl::server_default(&triples, &rules()).unwrap();
    assert_eq!(
        modes(&acl, "info:fedora/public", None, &Agent::ANONYMOUS),
        set(&[Mode::Read])
    );
    assert_eq!(
        modes(
            &acl,
            "info:fedora/public/x",
            Some("info:fedora"),
            &Agent::ANONYMOUS
        ),
        set(&[Mode::Read])
    );
    assert_eq!(
        modes(&acl, "info:fedora/publicity", None, &Agent::ANONYMOUS),
        Modes::NONE
    );
    assert_eq!(
        modes(&acl, "info:fedora", None, &Agent::ANONYMOUS),
        Modes::NONE
    );
}

#[test]
fn targets_are_compared_as_decoded_internal_ids() {
    let acl = acl(
        "info:fedora/a b",
        "<#enc> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Read ; acl:accessTo <info:fedora/a%20b> .
         <#ext> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Write ; acl:accessTo <http://localhost:8080/rest/a%20b/> .",
    );
    assert_eq!(acl.resource(), "info:fedora/a b");
    assert_eq!(
        modes(&acl, "info:fedora/a b", None, &Agent::ANONYMOUS),
        set(&[Mode::Read, Mode::Write, Mode::Append])
    );
}

#[test]
fn agent_iris_of_anonymous_are_empty() {
    assert_eq!(
        AgentIris::new(None, Some(USER_BASE), Some(GROUP_BASE)),
        AgentIris::default()
    );
    assert!(!Agent::ANONYMOUS.is_authenticated());
    assert!(!Agent::ANONYMOUS.is_named_by(""));
}
