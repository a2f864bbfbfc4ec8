use super::*;

const A: &str = "info:fedora/a";

fn error(body: &str) -> AclError {
    try_acl(A, body).unwrap_err()
}

#[test]
fn validation_refuses_an_authorization_without_mode() {
    let e = error(
        r#"<#auth> a acl:Authorization ; acl:agent "alice" ; acl:accessTo <info:fedora/a> ."#,
    );
    assert_eq!(
        e,
        AclError::NoMode {
            authorization: "<#auth>".into()
        }
    );
    assert!(e.to_string().contains("<#auth> has no acl:mode"), "{e}");
}

#[test]
fn validation_refuses_modes_that_are_not_webac_modes() {
    let e = error(
        r#"<#auth> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Delete ; acl:accessTo <info:fedora/a> ."#,
    );
    assert!(
        matches!(&e, AclError::UnknownMode { mode, .. } if mode == "<http://www.w3.org/ns/auth/acl#Delete>"),
        "{e:?}"
    );
    let e = error(
        r#"<#auth> a acl:Authorization ; acl:agent "alice" ; acl:mode "Read" ; acl:accessTo <info:fedora/a> ."#,
    );
    assert!(
        matches!(&e, AclError::UnknownMode { mode, .. } if mode == "\"Read\""),
        "{e:?}"
    );
}

#[test]
fn validation_refuses_access_to_together_with_access_to_class() {
    // As Fedora 6 (ACLAuthorizationConstraintViolationException).
    let e = error(
        r#"<#auth> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Read ;
               acl:accessTo <info:fedora/a> ; acl:accessToClass ex:Book ."#,
    );
    assert!(
        matches!(e, AclError::AccessToAndAccessToClass { .. }),
        "{e:?}"
    );
}

#[test]
fn validation_refuses_literals_where_iris_belong() {
    for (predicate, body) in [
        ("acl:accessTo", r#"acl:accessTo "info:fedora/a""#),
        (
            "acl:default",
            r#"acl:accessTo <info:fedora/a> ; acl:default "a""#,
        ),
        ("acl:accessToClass", r#"acl:accessToClass "ex:Book""#),
        (
            "acl:agentGroup",
            r#"acl:accessTo <info:fedora/a> ; acl:agentGroup "editors""#,
        ),
        (
            "acl:agentClass",
            r#"acl:accessTo <info:fedora/a> ; acl:agentClass "foaf:Agent""#,
        ),
    ] {
        let e = error(&format!(
            "<#auth> a acl:Authorization ; acl:mode acl:Read ; {body} ."
        ));
        assert!(
            matches!(&e, AclError::NotAnIri { predicate: p, .. } if *p == predicate),
            "{predicate}: {e:?}"
        );
    }
}

#[test]
fn req_5_5_remote_resources_are_refused() {
    let e = error(
        "<#auth> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Read ; acl:accessTo <http://example.org/elsewhere> .",
    );
    assert_eq!(
        e,
        AclError::RemoteTarget {
            authorization: "<#auth>".into(),
            predicate: "acl:accessTo",
            target: "http://example.org/elsewhere".into()
        }
    );
    let e = error(
        "<#auth> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Read ; acl:accessTo <info:fedora/a> ; acl:default <http://localhost:8080/restless/a> .",
    );
    assert!(
        matches!(
            &e,
            AclError::RemoteTarget {
                predicate: "acl:default",
                ..
            }
        ),
        "{e:?}"
    );
    // A prefix is a whole segment: info:fedorax is not this server.
    let e = error(
        "<#auth> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Read ; acl:accessTo <info:fedorax/a> .",
    );
    assert!(matches!(e, AclError::RemoteTarget { .. }), "{e:?}");
}

#[test]
fn req_5_6_remote_group_listings_are_refused() {
    let e = error(
        "<#auth> a acl:Authorization ; acl:agentGroup <http://example.com/groups#staff> ; acl:mode acl:Read ; acl:accessTo <info:fedora/a> .",
    );
    assert!(
        matches!(&e, AclError::RemoteGroup { group, .. } if group == "http://example.com/groups#staff")
    );
    assert!(
        e.to_string()
            .contains("or a role group under <http://example.org/groups/>"),
        "{e}"
    );
    // Local listings (either form) and role groups are fine.
    for group in [
        "info:fedora/groups#staff",
        "http://localhost:8080/rest/groups#staff",
        "http://example.org/groups/staff",
    ] {
        try_acl(
            A,
            &format!(
                "<#auth> a acl:Authorization ; acl:agentGroup <{group}> ; acl:mode acl:Read ; acl:accessTo <info:fedora/a> ."
            ),
        )
        .unwrap_or_else(|e| panic!("{group}: {e}"));
    }
}

#[test]
fn validation_messages_stay_short_for_hostile_input() {
    let long = "x".repeat(10_000);
    let e = error(&format!(
        "<#auth> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Read ; acl:accessTo <http://example.org/{long}> ."
    ));
    assert!(e.to_string().len() < 400, "{}", e.to_string().len());
}

#[test]
fn validation_names_blank_and_other_subjects() {
    let e = error(r#"[] a acl:Authorization ; acl:agent "alice" ; acl:accessTo <info:fedora/a> ."#);
    assert_eq!(
        e,
        AclError::NoMode {
            authorization: "[] (a blank node)".into()
        }
    );
    let e = error(
        r#"<http://example.org/auth> a acl:Authorization ; acl:agent "alice" ; acl:accessTo <info:fedora/a> ."#,
    );
    assert_eq!(
        e,
        AclError::NoMode {
            authorization: "<http://example.org/auth>".into()
        }
    );
}

#[test]
fn lenient_parsing_keeps_what_it_can() {
    let acl_id = "info:fedora/a/fcr:acl";
    let triples = ttl(
        acl_id,
        r#"<#odd> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Read, acl:Delete, "Write" .
           <#remote> a acl:Authorization ; acl:agentGroup <http://example.com/g> ; acl:agentClass acl:AuthenticatedAgent ;
               acl:mode acl:Write ; acl:accessTo <http://example.com/a> ."#,
    );
    assert!(Acl::parse(acl_id, &triples, &rules()).is_err());
    let acl = Acl::parse_lenient(acl_id, &triples, &rules());
    assert_eq!(acl.len(), 2);
    assert_eq!(acl.groups().count(), 0);
    let alice = user("alice", &[]);
    let iris = AgentIris::default();
    // #odd reads as Read on its own resource; #remote reaches nothing here.
    assert_eq!(
        modes(&acl, A, None, &iris.agent(Some(&alice))),
        set(&[Mode::Read])
    );
}

#[test]
fn implied_access_to_adds_what_fedora_adds() {
    let triples = ttl(
        "info:fedora/a/fcr:acl",
        r#"<#untargeted> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Read ; acl:default <info:fedora/a> .
           <#targeted> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Read ; acl:accessTo <info:fedora/a> .
           <#classy> a acl:Authorization ; acl:agent "alice" ; acl:mode acl:Read ; acl:accessToClass ex:Book ."#,
    );
    let added = implied_access_to(&triples);
    assert_eq!(added.len(), 1);
    assert_eq!(
        added[0].to_string(),
        "<info:fedora/a/fcr:acl#untargeted> <http://www.w3.org/ns/auth/acl#accessTo> <info:fedora/a>"
    );
}
