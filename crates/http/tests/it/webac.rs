//! Web Access Control (Fedora API §5) end to end: users from an htpasswd file, ACLs at
//! `<resource>/fcr:acl`, and what every mode lets each kind of agent do. Each test names the
//! requirement of ../shared/fedora-api-requirements.md it covers.

use std::path::PathBuf;

use crate::common::*;
use arca_testkit::{Reply, TestServer};
use base64::Engine as _;
use http::Method;
use sha1::Digest as _;

const ACL: &str = "http://www.w3.org/ns/auth/acl#";
const PREFIXES: &str = "@prefix acl: <http://www.w3.org/ns/auth/acl#> .\n@prefix foaf: <http://xmlns.com/foaf/0.1/> .\n@prefix vcard: <http://www.w3.org/2006/vcard/ns#> .\n";

/// Basic credentials of a test user (password `<name>-pw`).
fn basic(user: &str) -> String {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{user}-pw"));
    format!("Basic {token}")
}

/// An htpasswd line as `htpasswd -s` writes it.
fn sha_entry(user: &str, password: &str) -> String {
    let digest = sha1::Sha1::digest(password.as_bytes());
    format!(
        "{user}:{{SHA}}{}\n",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// A server whose users are alice, bob and carol (not admins) and the admin `root`; user
/// `alice` is the agent `<http://users.example/alice>`.
async fn server_with(
    edit: impl FnOnce(&mut arca_config::Config),
) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("htpasswd");
    let mut text = String::from("# test users\n");
    for u in ["alice", "bob", "carol", "root"] {
        text.push_str(&sha_entry(u, &format!("{u}-pw")));
    }
    std::fs::write(&file, text).unwrap();
    let s = TestServer::start_with(None, |c| {
        c.auth.htpasswd = Some(file);
        c.auth.admins = vec!["root".into()];
        c.auth.user_base_uri = Some("http://users.example/".into());
        edit(c);
    })
    .await;
    (s, dir)
}

async fn server() -> (TestServer, tempfile::TempDir) {
    server_with(|_| {}).await
}

/// Sends a request as `user` (`None`: anonymous).
async fn req(
    s: &TestServer,
    user: Option<&str>,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let auth = user.map(basic);
    let mut all: Vec<(&str, &str)> = headers.to_vec();
    if let Some(a) = &auth {
        all.push(("authorization", a));
    }
    s.request_anonymous(method, &s.url(path), &all, body.to_string())
        .await
}

/// As the admin `root`.
async fn admin(
    s: &TestServer,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    req(s, Some("root"), method, path, headers, body).await
}

async fn make(s: &TestServer, path: &str) {
    let r = admin(s, Method::PUT, path, &[TURTLE], "").await;
    assert_eq!(r.status, 201, "{path}: {}", r.text());
}

/// Puts an ACL (Turtle, `<>` is the ACL) on `path` as the admin.
async fn set_acl(s: &TestServer, path: &str, turtle: &str) {
    let r = admin(
        s,
        Method::PUT,
        &format!("{path}/fcr:acl"),
        &[TURTLE],
        &format!("{PREFIXES}{turtle}"),
    )
    .await;
    assert!(
        r.status == 201 || r.status == 204,
        "ACL of {path}: {} {}",
        r.status,
        r.text()
    );
}

fn status(r: &Reply) -> u16 {
    r.status.as_u16()
}

#[tokio::test]
async fn req_5_3_every_resource_links_its_acl_even_without_one() {
    let (s, _d) = server().await;
    make(&s, "c").await;
    let r = admin(
        &s,
        Method::PUT,
        "c/bin",
        &[("content-type", "text/plain")],
        "hello",
    )
    .await;
    assert_eq!(r.status, 201);
    for (path, acl) in [
        ("c", "c/fcr:acl"),
        ("c/bin", "c/bin/fcr:acl"),
        ("c/bin/fcr:metadata", "c/bin/fcr:acl"),
        ("", "fcr:acl"),
    ] {
        let r = admin(&s, Method::HEAD, path, &[], "").await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(links(&r, "acl"), vec![s.url(acl)], "{path}");
    }
}

#[tokio::test]
async fn req_5_1_an_acl_is_an_rdf_source_stored_as_fedora_stores_it() {
    let (s, _d) = server().await;
    make(&s, "c").await;
    let r = admin(&s, Method::GET, "c/fcr:acl", &[], "").await;
    assert_eq!(r.status, 404, "no ACL yet");
    set_acl(&s, "c", &format!("<#read> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessTo <{}> .", s.url("c"))).await;
    let r = admin(
        &s,
        Method::GET,
        "c/fcr:acl",
        &[("accept", "text/turtle")],
        "",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.has_link(LDP_RDF_SOURCE, "type"), "{:?}", r.headers);
    let g = Graph::of(&r, &s.url("c/fcr:acl"));
    let auth = format!("{}#read", s.url("c/fcr:acl"));
    assert!(
        g.has(&auth, &format!("{ACL}mode"), &format!("{ACL}Read")),
        "{}",
        r.text()
    );
    assert!(g.has(&auth, &format!("{ACL}accessTo"), &s.url("c")));
    // Fedora 6's files: the content beside the container's, the header with webac:Acl.
    s.published().await;
    let object = object_dir(&s.ocfl_root(), "info:fedora/c");
    let header =
        std::fs::read_to_string(object.join("v2/content/.fcrepo/fcr-root~fcr-acl.json")).unwrap();
    assert!(
        header.contains("\"interactionModel\":\"http://fedora.info/definitions/v4/webac#Acl\""),
        "{header}"
    );
    assert!(header.contains("\"parent\":\"info:fedora/c\""), "{header}");
    let nt = std::fs::read_to_string(object.join("v2/content/fcr-container~fcr-acl.nt")).unwrap();
    assert!(
        nt.contains("<info:fedora/c/fcr:acl#read>"),
        "internal ids are stored: {nt}"
    );
    assert!(nt.contains("<info:fedora/c>"), "{nt}");
}

#[tokio::test]
async fn req_5_9_b_the_default_root_acl_lets_everyone_read_and_nobody_else_write() {
    let (s, _d) = server().await;
    make(&s, "c").await;
    assert_eq!(status(&req(&s, None, Method::GET, "c", &[], "").await), 200);
    assert_eq!(
        status(&req(&s, Some("alice"), Method::GET, "c", &[], "").await),
        200
    );
    let r = req(&s, None, Method::PUT, "c", &[TURTLE], "").await;
    assert_eq!(r.status, 401);
    assert!(
        r.header("www-authenticate")
            .is_some_and(|c| c.starts_with("Basic")),
        "{:?}",
        r.headers
    );
    assert_eq!(
        status(&req(&s, Some("alice"), Method::PUT, "c", &[TURTLE], "").await),
        403
    );
    assert_eq!(
        status(&req(&s, Some("alice"), Method::POST, "c", &[TURTLE], "").await),
        403
    );
    assert_eq!(
        status(&req(&s, Some("alice"), Method::DELETE, "c", &[], "").await),
        403
    );
    // The root answers with the ACL in effect (Fedora's default), to those with Control.
    assert_eq!(
        status(&req(&s, Some("alice"), Method::GET, "fcr:acl", &[], "").await),
        403
    );
    let r = admin(&s, Method::GET, "fcr:acl", &[("accept", "text/turtle")], "").await;
    assert_eq!(r.status, 200);
    assert!(r.text().contains("Agent"), "{}", r.text());
}

#[tokio::test]
async fn wrong_credentials_get_401_without_saying_which_part_was_wrong() {
    let (s, _d) = server().await;
    let wrong_password = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("alice:nope")
    );
    let unknown_user = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("mallory:alice-pw")
    );
    let mut bodies = Vec::new();
    for a in [
        wrong_password.as_str(),
        unknown_user.as_str(),
        "Basic !!!",
        "Bearer not.a.token",
        "Digest x",
    ] {
        let r = s
            .request_anonymous(Method::GET, &s.url(""), &[("authorization", a)], "")
            .await;
        assert_eq!(r.status, 401, "{a}");
        assert!(r.header("www-authenticate").is_some(), "{a}");
        bodies.push(r.text());
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "{bodies:?}");
}

#[tokio::test]
async fn req_5_0_agent_agent_class_and_authenticated_agent() {
    let (s, _d) = server().await;
    for p in ["only-alice", "everyone", "logged-in"] {
        make(&s, p).await;
    }
    set_acl(&s, "only-alice", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessTo <{}> .", s.url("only-alice"))).await;
    set_acl(&s, "everyone", &format!("<#a> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Read ; acl:accessTo <{}> .", s.url("everyone"))).await;
    set_acl(&s, "logged-in", &format!("<#a> a acl:Authorization ; acl:agentClass acl:AuthenticatedAgent ; acl:mode acl:Read ; acl:accessTo <{}> .", s.url("logged-in"))).await;
    let cases = [
        ("only-alice", Some("alice"), 200),
        ("only-alice", Some("bob"), 403),
        ("only-alice", None, 401),
        ("everyone", None, 200),
        ("everyone", Some("bob"), 200),
        ("logged-in", Some("bob"), 200),
        ("logged-in", None, 401),
    ];
    for (path, user, want) in cases {
        let r = req(&s, user, Method::GET, path, &[], "").await;
        assert_eq!(status(&r), want, "{user:?} GET {path}: {}", r.text());
    }
}

#[tokio::test]
async fn req_5_0_agent_group_with_a_hash_uri_listing() {
    let (s, _d) = server().await;
    let r = admin(&s, Method::PUT, "groups", &[TURTLE], &format!("{PREFIXES}<#editors> a vcard:Group ; vcard:hasMember <http://users.example/alice>, <http://users.example/carol> .")).await;
    assert_eq!(r.status, 201, "{}", r.text());
    make(&s, "c").await;
    set_acl(&s, "c", &format!("<#a> a acl:Authorization ; acl:agentGroup <{}#editors> ; acl:mode acl:Read, acl:Write ; acl:accessTo <{}> .", s.url("groups"), s.url("c"))).await;
    assert_eq!(
        status(&req(&s, Some("alice"), Method::GET, "c", &[], "").await),
        200
    );
    assert_eq!(
        status(
            &req(
                &s,
                Some("carol"),
                Method::PATCH,
                "c",
                &[SPARQL],
                "INSERT DATA { <> <http://purl.org/dc/terms/title> \"t\" }"
            )
            .await
        ),
        204
    );
    assert_eq!(
        status(&req(&s, Some("bob"), Method::GET, "c", &[], "").await),
        403
    );
    // Changing the listing changes access at once.
    let r = admin(&s, Method::PATCH, "groups", &[SPARQL], "DELETE DATA { <#editors> <http://www.w3.org/2006/vcard/ns#hasMember> <http://users.example/alice> }").await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(
        status(&req(&s, Some("alice"), Method::GET, "c", &[], "").await),
        403
    );
}

#[tokio::test]
async fn req_5_9_a_inheritance_needs_acl_default() {
    let (s, _d) = server().await;
    for p in ["inherits", "inherits/child", "own-only", "own-only/child"] {
        make(&s, p).await;
    }
    set_acl(&s, "inherits", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessTo <{0}> ; acl:default <{0}> .", s.url("inherits"))).await;
    // alice may read own-only itself; below it only bob's authorization has acl:default.
    set_acl(&s, "own-only", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessTo <{0}> . <#b> a acl:Authorization ; acl:agent <http://users.example/bob> ; acl:mode acl:Read ; acl:accessTo <{0}> ; acl:default <{0}> .", s.url("own-only"))).await;
    assert_eq!(
        status(&req(&s, Some("alice"), Method::GET, "inherits/child", &[], "").await),
        200
    );
    assert_eq!(
        status(&req(&s, Some("alice"), Method::GET, "own-only", &[], "").await),
        200
    );
    // The nearest ACL with an acl:default decides: the root's (everyone reads) is not consulted.
    assert_eq!(
        status(&req(&s, Some("alice"), Method::GET, "own-only/child", &[], "").await),
        403
    );
    assert_eq!(
        status(&req(&s, Some("bob"), Method::GET, "own-only/child", &[], "").await),
        200
    );
    // Deleting the ACL makes the child inherit the root's again, at once.
    assert_eq!(
        status(&admin(&s, Method::DELETE, "own-only/fcr:acl", &[], "").await),
        204
    );
    assert_eq!(
        status(&admin(&s, Method::GET, "own-only/fcr:acl", &[], "").await),
        404
    );
    assert_eq!(
        status(&req(&s, Some("alice"), Method::GET, "own-only/child", &[], "").await),
        200
    );
}

#[tokio::test]
async fn req_5_8_access_to_class() {
    let (s, _d) = server().await;
    make(&s, "lib").await;
    let r = admin(
        &s,
        Method::PUT,
        "lib/book",
        &[TURTLE],
        "<> a <http://example.org/Book> .",
    )
    .await;
    assert_eq!(r.status, 201);
    make(&s, "lib/other").await;
    set_acl(&s, "lib", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessToClass <http://example.org/Book> ; acl:default <{}> .", s.url("lib"))).await;
    let r = req(&s, Some("alice"), Method::GET, "lib/book", &[], "").await;
    assert_eq!(r.status, 200);
    // As Fedora 6, the type is named with the model's.
    assert!(
        r.has_link("http://example.org/Book", "type"),
        "{:?}",
        r.headers
    );
    assert_eq!(
        status(&req(&s, Some("alice"), Method::GET, "lib/other", &[], "").await),
        403
    );
}

#[tokio::test]
async fn req_5_0_write_mode_allows_every_change() {
    let (s, _d) = server().await;
    make(&s, "w").await;
    set_acl(&s, "w", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read, acl:Write ; acl:accessTo <{0}> ; acl:default <{0}> .", s.url("w"))).await;
    let alice = Some("alice");
    assert_eq!(
        status(&req(&s, alice, Method::POST, "w", &[TURTLE, ("slug", "x")], "").await),
        201
    );
    assert_eq!(
        status(
            &req(
                &s,
                alice,
                Method::PUT,
                "w/x",
                &[TURTLE],
                "<> <http://purl.org/dc/terms/title> \"x\" ."
            )
            .await
        ),
        204
    );
    assert_eq!(
        status(
            &req(
                &s,
                alice,
                Method::PATCH,
                "w/x",
                &[SPARQL],
                "DELETE WHERE { <> <http://purl.org/dc/terms/title> ?t }"
            )
            .await
        ),
        204
    );
    assert_eq!(
        status(&req(&s, alice, Method::DELETE, "w/x", &[], "").await),
        204
    );
    // Control is a mode of its own.
    assert_eq!(
        status(&req(&s, alice, Method::GET, "w/fcr:acl", &[], "").await),
        403
    );
    assert_eq!(
        status(&req(&s, alice, Method::PUT, "w/fcr:acl", &[TURTLE], "").await),
        403
    );
}

#[tokio::test]
async fn req_5_7_append_without_write() {
    let (s, _d) = server().await;
    make(&s, "a").await;
    make(&s, "a/rdf").await;
    let r = admin(
        &s,
        Method::PUT,
        "a/bin",
        &[("content-type", "text/plain")],
        "bytes",
    )
    .await;
    assert_eq!(r.status, 201);
    set_acl(&s, "a", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read, acl:Append ; acl:accessTo <{0}> ; acl:default <{0}> .", s.url("a"))).await;
    let alice = Some("alice");
    // 5.7.2: POST into a container.
    assert_eq!(
        status(&req(&s, alice, Method::POST, "a", &[TURTLE], "").await),
        201
    );
    // 5.7.1-B: PUT to create.
    assert_eq!(
        status(&req(&s, alice, Method::PUT, "a/new", &[TURTLE], "").await),
        201
    );
    // 5.7.1-A: no replacing, no deleting, no PATCH that removes statements.
    assert_eq!(
        status(&req(&s, alice, Method::PUT, "a/rdf", &[TURTLE], "").await),
        403
    );
    assert_eq!(
        status(&req(&s, alice, Method::DELETE, "a/rdf", &[], "").await),
        403
    );
    // 5.7.1-C: PATCH that only adds.
    assert_eq!(
        status(
            &req(
                &s,
                alice,
                Method::PATCH,
                "a/rdf",
                &[SPARQL],
                "INSERT DATA { <> <http://purl.org/dc/terms/title> \"t\" }"
            )
            .await
        ),
        204
    );
    let r = req(
        &s,
        alice,
        Method::PATCH,
        "a/rdf",
        &[SPARQL],
        "DELETE DATA { <> <http://purl.org/dc/terms/title> \"t\" }",
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text());
    let r = admin(
        &s,
        Method::GET,
        "a/rdf",
        &[("accept", "application/n-triples")],
        "",
    )
    .await;
    assert!(
        r.text().contains("\"t\""),
        "the refused PATCH changed nothing: {}",
        r.text()
    );
    // 5.7.3: a binary can be neither replaced nor deleted.
    assert_eq!(
        status(
            &req(
                &s,
                alice,
                Method::PUT,
                "a/bin",
                &[("content-type", "text/plain")],
                "new"
            )
            .await
        ),
        403
    );
    assert_eq!(
        status(&req(&s, alice, Method::DELETE, "a/bin", &[], "").await),
        403
    );
}

#[tokio::test]
async fn delete_needs_write_on_everything_below() {
    let (s, _d) = server().await;
    make(&s, "d").await;
    make(&s, "d/locked").await;
    set_acl(&s, "d", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read, acl:Write ; acl:accessTo <{0}> ; acl:default <{0}> .", s.url("d"))).await;
    set_acl(&s, "d/locked", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessTo <{0}> .", s.url("d/locked"))).await;
    let r = req(&s, Some("alice"), Method::DELETE, "d", &[], "").await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        status(&admin(&s, Method::GET, "d/locked", &[], "").await),
        200
    );
}

#[tokio::test]
async fn req_5_2_only_typed_authorizations_grant() {
    let (s, _d) = server().await;
    make(&s, "t").await;
    // Fedora's sample root holds such an ACL: an authorization without rdf:type.
    set_acl(&s, "t", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/bob> ; acl:mode acl:Read ; acl:accessTo <{0}> . <#b> acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessTo <{0}> .", s.url("t"))).await;
    assert_eq!(
        status(&req(&s, Some("alice"), Method::GET, "t", &[], "").await),
        403
    );
    assert_eq!(
        status(&req(&s, Some("bob"), Method::GET, "t", &[], "").await),
        200
    );
}

#[tokio::test]
async fn malformed_acls_are_refused_and_nothing_is_stored() {
    let (s, _d) = server().await;
    make(&s, "m").await;
    let url = s.url("m");
    let bad = [
        ("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessTo <x", 400),
        (&*format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:accessTo <{url}> ."), 409),
        (&*format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Fly ; acl:accessTo <{url}> ."), 409),
        (&*format!("<#a> a acl:Authorization ; acl:agentGroup <http://elsewhere.example/groups#g> ; acl:mode acl:Read ; acl:accessTo <{url}> ."), 409),
        ("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessTo <http://elsewhere.example/x> .", 409),
    ];
    for (turtle, want) in bad {
        let r = admin(
            &s,
            Method::PUT,
            "m/fcr:acl",
            &[TURTLE],
            &format!("{PREFIXES}{turtle}"),
        )
        .await;
        assert_eq!(status(&r), want, "{turtle}: {}", r.text());
        if want == 409 {
            assert_constrained_by(&s, &r).await;
        }
        assert_eq!(
            status(&admin(&s, Method::GET, "m/fcr:acl", &[], "").await),
            404,
            "{turtle}"
        );
    }
    // A PATCH that would make a valid ACL invalid is refused too.
    set_acl(&s, "m", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessTo <{url}> .")).await;
    let r = admin(
        &s,
        Method::PATCH,
        "m/fcr:acl",
        &[SPARQL],
        &format!("DELETE WHERE {{ <#a> <{ACL}mode> ?m }}"),
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(
        status(&req(&s, Some("alice"), Method::GET, "m", &[], "").await),
        200
    );
}

#[tokio::test]
async fn req_5_4_a_client_named_acl_is_refused_with_constrained_by() {
    let (s, _d) = server().await;
    make(&s, "p").await;
    let link = format!("<{}>; rel=\"acl\"", s.url("p/fcr:acl"));
    let r = admin(&s, Method::POST, "", &[TURTLE, ("link", &link)], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
}

#[tokio::test]
async fn listings_never_show_what_the_user_cannot_read() {
    let (s, _d) = server().await;
    make(&s, "box").await;
    make(&s, "box/open").await;
    make(&s, "box/secret").await;
    set_acl(&s, "box/secret", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/bob> ; acl:mode acl:Read ; acl:accessTo <{}> .", s.url("box/secret"))).await;
    // An inbound reference from the secret resource to the open one.
    let r = admin(
        &s,
        Method::PATCH,
        "box/secret",
        &[SPARQL],
        &format!(
            "INSERT DATA {{ <> <{DC_RELATION}> <{}> }}",
            s.url("box/open")
        ),
    )
    .await;
    assert_eq!(r.status, 204);
    // A direct container whose members include the secret resource.
    let r = admin(&s, Method::PUT, "members", &[TURTLE, ("link", "<http://www.w3.org/ns/ldp#DirectContainer>; rel=\"type\"")], &format!("<> <http://www.w3.org/ns/ldp#membershipResource> <{}> ; <http://www.w3.org/ns/ldp#hasMemberRelation> <http://purl.org/dc/terms/hasPart> .", s.url("box"))).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = admin(
        &s,
        Method::PUT,
        "members/m1",
        &[TURTLE],
        &format!(
            "<> <http://purl.org/dc/terms/relation> <{}> .",
            s.url("box/secret")
        ),
    )
    .await;
    assert_eq!(r.status, 201);
    make(&s, "members/m2").await;
    set_acl(&s, "members/m2", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/bob> ; acl:mode acl:Read ; acl:accessTo <{}> .", s.url("members/m2"))).await;

    let contains = |r: &Reply, path: &str| {
        Graph::of(r, &s.url("box")).has(&s.url("box"), LDP_CONTAINS, &s.url(path))
    };
    let alice = req(&s, Some("alice"), Method::GET, "box", &[], "").await;
    let bob = req(&s, Some("bob"), Method::GET, "box", &[], "").await;
    assert!(
        contains(&alice, "box/open") && !contains(&alice, "box/secret"),
        "{}",
        alice.text()
    );
    assert!(
        contains(&bob, "box/open") && contains(&bob, "box/secret"),
        "{}",
        bob.text()
    );
    // Paging walks past hidden children without losing visible ones.
    let r = req(
        &s,
        Some("alice"),
        Method::GET,
        "box?limit=1&after=info%3Afedora%2Fbox%2Fopen",
        &[],
        "",
    )
    .await;
    assert!(!r.text().contains("secret"), "{}", r.text());
    // Membership: box dcterms:hasPart each member, the hidden one only for bob.
    let has_part = |r: &Reply, path: &str| {
        Graph::of(r, &s.url("box")).has(
            &s.url("box"),
            "http://purl.org/dc/terms/hasPart",
            &s.url(path),
        )
    };
    assert!(
        has_part(&alice, "members/m1") && !has_part(&alice, "members/m2"),
        "{}",
        alice.text()
    );
    assert!(
        has_part(&bob, "members/m1") && has_part(&bob, "members/m2"),
        "{}",
        bob.text()
    );
    // Inbound references.
    let inbound = [("prefer", "return=representation; include=\"http://fedora.info/definitions/fcrepo#PreferInboundReferences\"")];
    let r = req(&s, Some("alice"), Method::GET, "box/open", &inbound, "").await;
    assert!(!r.text().contains("secret"), "{}", r.text());
    let r = req(&s, Some("bob"), Method::GET, "box/open", &inbound, "").await;
    assert!(r.text().contains("secret"), "{}", r.text());
    // The TimeMap and mementos of a resource one may not read are closed too.
    assert_eq!(
        status(
            &req(
                &s,
                Some("alice"),
                Method::GET,
                "box/secret/fcr:versions",
                &[],
                ""
            )
            .await
        ),
        403
    );
    assert_eq!(
        status(
            &req(
                &s,
                Some("bob"),
                Method::GET,
                "box/secret/fcr:versions",
                &[],
                ""
            )
            .await
        ),
        200
    );
}

#[tokio::test]
async fn admins_act_on_behalf_of_others_and_users_are_recorded() {
    let (s, _d) = server().await;
    make(&s, "o").await;
    set_acl(&s, "o", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read, acl:Write ; acl:accessTo <{0}> ; acl:default <{0}> .", s.url("o"))).await;
    let r = req(&s, Some("alice"), Method::PUT, "o/by-alice", &[TURTLE], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = admin(
        &s,
        Method::GET,
        "o/by-alice",
        &[("accept", "application/n-triples")],
        "",
    )
    .await;
    assert!(
        r.text().contains(&format!(
            "<{}> \"http://users.example/alice\"",
            fedora("createdBy")
        )),
        "{}",
        r.text()
    );
    // The admin acting as bob is bob.
    let r = admin(&s, Method::GET, "o", &[("on-behalf-of", "bob")], "").await;
    assert_eq!(r.status, 403);
    let r = admin(&s, Method::GET, "o", &[("on-behalf-of", "alice")], "").await;
    assert_eq!(r.status, 200);
    // Only admins may send it.
    let r = req(
        &s,
        Some("alice"),
        Method::GET,
        "o",
        &[("on-behalf-of", "root")],
        "",
    )
    .await;
    assert_eq!(r.status, 403);
}

/// Search shows each caller only what it may read (issue 12): hits, totals and the GSearch
/// interface alike; the index's status and rebuild are for admins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_hits_are_what_the_caller_may_read() {
    let (s, _d) = server().await;
    let ttl = "<> <http://purl.org/dc/terms/title> \"tiger\" .";
    for path in ["pub", "secret"] {
        let r = admin(&s, Method::PUT, path, &[TURTLE], ttl).await;
        assert_eq!(r.status, 201);
    }
    set_acl(
        &s,
        "pub",
        &format!("<#r> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Read ; acl:accessTo <{}> .", s.url("pub")),
    )
    .await;
    set_acl(
        &s,
        "secret",
        &format!("<#r> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessTo <{}> .", s.url("secret")),
    )
    .await;
    // Wait (as the admin) until both are indexed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let r = admin(&s, Method::GET, "fcr:search?q=TITLE:tiger", &[], "").await;
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        if v["pagination"]["totalResults"] == 2 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{v}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for (user, expected) in [
        (None, vec!["pub"]),
        (Some("bob"), vec!["pub"]),
        (Some("alice"), vec!["pub", "secret"]),
        (Some("root"), vec!["pub", "secret"]),
    ] {
        let r = req(
            &s,
            user,
            Method::GET,
            "fcr:search?q=TITLE:tiger&fields=fedora_id",
            &[],
            "",
        )
        .await;
        assert_eq!(r.status, 200, "{user:?}: {}", r.text());
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        let mut got: Vec<String> = v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                i["fedora_id"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect();
        got.sort();
        assert_eq!(got, expected, "{user:?}");
        assert_eq!(v["pagination"]["totalResults"], expected.len(), "{user:?}");
        let root = s.url("");
        let gsearch = format!(
            "{}/fedoragsearch/rest?operation=gfindObjects&query=TITLE%3Atiger",
            root.trim_end_matches('/').trim_end_matches("/rest")
        );
        let auth = user.map(basic);
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("authorization", a.as_str())).collect();
        let r = s
            .request_anonymous(Method::GET, &gsearch, &headers, "")
            .await;
        assert!(
            r.text()
                .contains(&format!("hitTotal=\"{}\"", expected.len())),
            "{user:?}: {}",
            r.text()
        );
    }
    assert_eq!(
        status(&req(&s, None, Method::GET, "fcr:search/status", &[], "").await),
        401
    );
    assert_eq!(
        status(&req(&s, Some("bob"), Method::GET, "fcr:search/status", &[], "").await),
        403
    );
    assert_eq!(
        status(&req(&s, Some("bob"), Method::POST, "fcr:search/reindex", &[], "").await),
        403
    );
    assert_eq!(
        status(&req(&s, Some("root"), Method::GET, "fcr:search/status", &[], "").await),
        200
    );
}

/// A transaction belongs to the user who began it: nobody else may look at it, use it,
/// commit or roll it back (403; 401 anonymous), apart from admins; nothing another user
/// sends lands in it.
#[tokio::test]
async fn a_transaction_is_used_only_by_the_user_who_began_it() {
    let (s, _d) = server().await;
    make(&s, "open").await;
    let everyone_writes = format!(
        "<#w> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Read, acl:Write ; acl:accessTo <{0}> ; acl:default <{0}> .",
        s.url("open")
    );
    set_acl(&s, "open", &everyone_writes).await;
    let begun = req(&s, Some("alice"), Method::POST, "fcr:tx", &[], "").await;
    assert_eq!(status(&begun), 201, "{}", begun.text());
    let tx = begun.header("location").unwrap().to_string();
    let tx_path = tx.strip_prefix(&s.url("")).unwrap().to_string();
    let atomic = [("atomic-id", tx.as_str()), TURTLE];

    // Alice works in it.
    let r = req(&s, Some("alice"), Method::PUT, "open/by-alice", &atomic, "").await;
    assert_eq!(status(&r), 201, "{}", r.text());
    // Bob, who may write `open` himself, may not write through her transaction, nor see,
    // refresh, commit or roll it back.
    let r = req(&s, Some("bob"), Method::PUT, "open/by-bob", &atomic, "").await;
    assert_eq!(status(&r), 403, "{}", r.text());
    assert!(r.text().contains("belongs to another user"), "{}", r.text());
    let r = req(&s, Some("bob"), Method::GET, "open/by-alice", &atomic, "").await;
    assert_eq!(status(&r), 403);
    for method in [Method::GET, Method::POST, Method::PUT, Method::DELETE] {
        let r = req(&s, Some("bob"), method.clone(), &tx_path, &[], "").await;
        assert_eq!(status(&r), 403, "bob {method} on the transaction");
        let r = req(&s, None, method.clone(), &tx_path, &[], "").await;
        assert_eq!(status(&r), 401, "anonymous {method} on the transaction");
    }
    let r = req(&s, None, Method::GET, "open/by-alice", &atomic, "").await;
    assert_eq!(status(&r), 401);
    // An admin may (an operator cleaning up), and alice commits.
    let r = admin(&s, Method::GET, &tx_path, &[], "").await;
    assert_eq!(status(&r), 204);
    let r = req(&s, Some("alice"), Method::PUT, &tx_path, &[], "").await;
    assert_eq!(status(&r), 204, "{}", r.text());
    assert_eq!(
        status(&admin(&s, Method::GET, "open/by-alice", &[], "").await),
        200
    );
    assert_eq!(
        status(&admin(&s, Method::GET, "open/by-bob", &[], "").await),
        404
    );
}

const DIRECT: (&str, &str) = (
    "link",
    "<http://www.w3.org/ns/ldp#DirectContainer>; rel=\"type\"",
);
const INDIRECT: (&str, &str) = (
    "link",
    "<http://www.w3.org/ns/ldp#IndirectContainer>; rel=\"type\"",
);
const HAS_PART: &str = "http://purl.org/dc/terms/hasPart";

/// Alice may read `path`; with `write`, also change it and everything below.
async fn alice_may(s: &TestServer, path: &str, write: bool) {
    let modes = if write {
        "acl:Read, acl:Write"
    } else {
        "acl:Read"
    };
    set_acl(s, path, &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode {modes} ; acl:accessTo <{0}> ; acl:default <{0}> .", s.url(path))).await;
}

/// How many membership triples `target` shows.
async fn members_of(s: &TestServer, target: &str) -> usize {
    let r = admin(
        s,
        Method::GET,
        target,
        &[("accept", "application/n-triples")],
        "",
    )
    .await;
    r.text().lines().filter(|l| l.contains(HAS_PART)).count()
}

/// Fedora 6's rule for direct and indirect containers: adding or removing a member changes
/// the membership resource's triples, so it needs acl:Write on that resource too — for a
/// POST or PUT of a member, a DELETE of a member or of the container, a membership resource
/// named when a container is created or replaced or changed by PATCH, and (arca) a PATCH of
/// an indirect container's member. A refused request stores nothing.
#[tokio::test]
async fn membership_changes_need_write_on_the_membership_resource() {
    let (s, _d) = server().await;
    make(&s, "target").await;
    make(&s, "mine").await;
    let dc_body = |target: &str| {
        format!(
            "<> <http://www.w3.org/ns/ldp#membershipResource> <{}> ; <http://www.w3.org/ns/ldp#hasMemberRelation> <{HAS_PART}> .",
            s.url(target)
        )
    };
    let r = admin(&s, Method::PUT, "dc", &[TURTLE, DIRECT], &dc_body("target")).await;
    assert_eq!(status(&r), 201, "{}", r.text());
    make(&s, "dc/old").await;
    assert_eq!(members_of(&s, "target").await, 1);
    alice_may(&s, "dc", true).await;
    alice_may(&s, "mine", true).await;
    alice_may(&s, "target", false).await;
    let alice = Some("alice");

    // Members of a container whose membership resource alice may only read.
    let r = req(
        &s,
        alice,
        Method::POST,
        "dc",
        &[TURTLE, ("slug", "new")],
        "",
    )
    .await;
    assert_eq!(status(&r), 403, "{}", r.text());
    assert!(r.text().contains("members of"), "{}", r.text());
    let r = req(&s, alice, Method::PUT, "dc/new", &[TURTLE], "").await;
    assert_eq!(status(&r), 403);
    let r = req(&s, alice, Method::PUT, "dc/old", &[TURTLE], "").await;
    assert_eq!(status(&r), 403);
    assert_eq!(
        status(&req(&s, alice, Method::DELETE, "dc/old", &[], "").await),
        403
    );
    assert_eq!(
        status(&req(&s, alice, Method::DELETE, "dc", &[], "").await),
        403
    );
    assert_eq!(
        status(&admin(&s, Method::GET, "dc/new", &[], "").await),
        404
    );
    assert_eq!(
        status(&admin(&s, Method::GET, "dc/old", &[], "").await),
        200
    );
    assert_eq!(members_of(&s, "target").await, 1);

    // Her own containers may not name it either (created, replaced or patched).
    let r = req(
        &s,
        alice,
        Method::PUT,
        "mine/dc",
        &[TURTLE, DIRECT],
        &dc_body("target"),
    )
    .await;
    assert_eq!(status(&r), 403, "{}", r.text());
    assert_eq!(
        status(&admin(&s, Method::GET, "mine/dc", &[], "").await),
        404
    );
    let r = req(
        &s,
        alice,
        Method::PUT,
        "mine/dc",
        &[TURTLE, DIRECT],
        &dc_body("mine"),
    )
    .await;
    assert_eq!(status(&r), 201, "{}", r.text());
    let r = req(
        &s,
        alice,
        Method::PUT,
        "mine/dc",
        &[TURTLE],
        &dc_body("target"),
    )
    .await;
    assert_eq!(status(&r), 403, "{}", r.text());
    let swap = format!(
        "DELETE {{ <> <http://www.w3.org/ns/ldp#membershipResource> ?m }} INSERT {{ <> <http://www.w3.org/ns/ldp#membershipResource> <{}> }} WHERE {{ <> <http://www.w3.org/ns/ldp#membershipResource> ?m }}",
        s.url("target")
    );
    let r = req(&s, alice, Method::PATCH, "mine/dc", &[SPARQL], &swap).await;
    assert_eq!(status(&r), 403, "{}", r.text());
    let r = req(
        &s,
        alice,
        Method::PATCH,
        "mine/dc",
        &[SPARQL],
        "INSERT DATA { <> <http://purl.org/dc/terms/title> \"t\" }",
    )
    .await;
    assert_eq!(
        status(&r),
        204,
        "a PATCH that keeps the membership resource: {}",
        r.text()
    );
    let r = req(&s, alice, Method::POST, "mine/dc", &[TURTLE], "").await;
    assert_eq!(status(&r), 201, "her own membership resource: {}", r.text());
    assert_eq!(members_of(&s, "target").await, 1);
    assert_eq!(members_of(&s, "mine").await, 1);

    // An indirect container: a member's own triples decide the membership.
    let r = admin(&s, Method::PUT, "ic", &[TURTLE, INDIRECT], &format!("{} <> <http://www.w3.org/ns/ldp#insertedContentRelation> <http://www.openarchives.org/ore/terms/proxyFor> .", dc_body("target"))).await;
    assert_eq!(status(&r), 201, "{}", r.text());
    make(&s, "ic/p").await;
    alice_may(&s, "ic", true).await;
    let point = format!(
        "INSERT DATA {{ <> <http://www.openarchives.org/ore/terms/proxyFor> <{}> }}",
        s.url("mine")
    );
    let r = req(&s, alice, Method::PATCH, "ic/p", &[SPARQL], &point).await;
    assert_eq!(status(&r), 403, "{}", r.text());
    assert_eq!(members_of(&s, "target").await, 1);

    // With Write on the membership resource all of it is allowed.
    alice_may(&s, "target", true).await;
    let r = req(
        &s,
        alice,
        Method::POST,
        "dc",
        &[TURTLE, ("slug", "new")],
        "",
    )
    .await;
    assert_eq!(status(&r), 201, "{}", r.text());
    let r = req(&s, alice, Method::PATCH, "ic/p", &[SPARQL], &point).await;
    assert_eq!(status(&r), 204, "{}", r.text());
    assert_eq!(members_of(&s, "target").await, 3);
    assert_eq!(
        status(&req(&s, alice, Method::DELETE, "dc/old", &[], "").await),
        204
    );
    assert_eq!(
        status(&req(&s, alice, Method::PATCH, "mine/dc", &[SPARQL], &swap).await),
        204
    );
}

/// An authorization without acl:accessTo or acl:accessToClass is accepted and is about the
/// ACL's resource: it is stored with `acl:accessTo` that resource, as Fedora 6 stores it
/// (its decisions agree: `fedora_webac.rs`).
#[tokio::test]
async fn an_authorization_without_a_target_is_about_the_acls_resource() {
    let (s, _d) = server().await;
    make(&s, "nt").await;
    make(&s, "nt/child").await;
    set_acl(
        &s,
        "nt",
        "<#r> a acl:Authorization ; acl:agent <http://users.example/bob> ; acl:mode acl:Read .",
    )
    .await;
    let stored = admin(
        &s,
        Method::GET,
        "nt/fcr:acl",
        &[("accept", "application/n-triples")],
        "",
    )
    .await;
    let access_to = format!("<{ACL}accessTo> <{}>", s.url("nt"));
    assert!(stored.text().contains(&access_to), "{}", stored.text());
    assert_eq!(
        status(&req(&s, Some("bob"), Method::GET, "nt", &[], "").await),
        200
    );
    // It has no acl:default: below, the root ACL (everyone reads) decides.
    assert_eq!(
        status(&req(&s, Some("bob"), Method::GET, "nt/child", &[], "").await),
        200
    );
    assert_eq!(
        status(&req(&s, Some("alice"), Method::GET, "nt", &[], "").await),
        403
    );
}

/// 5.7.1 (issue 38.4): with acl:Append but not acl:Write, a SPARQL Update with an
/// operation that names a triple to delete is refused (403) before it runs, whether or not
/// the triple exists, as Fedora 6 refuses it; an empty `DELETE { }` names none and passes, as
/// in Fedora. `DELETE WHERE` is refused too (Fedora 6.1 runs it, removing triples: see
/// `fedora_webac.rs`).
#[tokio::test]
async fn req_5_7_1_append_only_updates_naming_a_delete_are_refused_even_when_nothing_matches() {
    let (s, _d) = server().await;
    make(&s, "ap").await;
    let title = "<> <http://purl.org/dc/terms/title> \"t\" .";
    let r = admin(&s, Method::PUT, "ap/r", &[TURTLE], title).await;
    assert_eq!(r.status, 201);
    set_acl(&s, "ap", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read, acl:Append ; acl:accessTo <{0}> ; acl:default <{0}> .", s.url("ap"))).await;
    let subject = "<http://purl.org/dc/terms/subject>";
    for update in [
        "DELETE DATA { <> <http://purl.org/dc/terms/title> \"no such title\" }".to_string(),
        "DELETE WHERE { <> <http://example.org/nothing> ?o }".to_string(),
        format!("delete {{ <> {subject} ?o }} insert {{ <> {subject} \"s\" }} where {{ OPTIONAL {{ <> {subject} ?o }} }}"),
        format!("INSERT DATA {{ <> {subject} \"s\" }} ;\nDELETE DATA {{ <> {subject} \"none\" }}"),
    ] {
        let r = req(&s, Some("alice"), Method::PATCH, "ap/r", &[SPARQL], &update).await;
        assert_eq!(r.status, 403, "{update}: {}", r.text());
        assert!(r.text().contains("DELETE"), "{}", r.text());
    }
    // Anyone with Append: an anonymous caller is asked for credentials (401), as for every
    // other refusal, and the insert alone passes.
    set_acl(&s, "ap/r", &format!("<#a> a acl:Authorization ; acl:agentClass foaf:Agent ; acl:mode acl:Read, acl:Append ; acl:accessTo <{0}> .", s.url("ap/r"))).await;
    let delete = format!("DELETE DATA {{ <> {subject} \"none\" }}");
    let r = req(&s, None, Method::PATCH, "ap/r", &[SPARQL], &delete).await;
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(r.header("www-authenticate").is_some());
    let stored = admin(
        &s,
        Method::GET,
        "ap/r",
        &[("accept", "application/n-triples")],
        "",
    )
    .await;
    assert!(
        !stored.text().contains("subject"),
        "refused updates changed nothing: {}",
        stored.text()
    );
    // Empty delete templates name nothing: these only insert.
    for update in [
        format!("DELETE {{ }} INSERT {{ <> {subject} \"s\" }} WHERE {{ }}"),
        format!("DELETE DATA {{ }} ; INSERT DATA {{ <> {subject} <http://example.org/delete> }}"),
    ] {
        let r = req(&s, Some("alice"), Method::PATCH, "ap/r", &[SPARQL], &update).await;
        assert_eq!(r.status, 204, "{update}: {}", r.text());
    }
}

/// 5.8 (issue 38.5): the `rdf:type`s stated in a binary's description are the binary's
/// classes for `acl:accessToClass`, granting the binary and its description, and the binary
/// names them in `Link: rel="type"`, as Fedora 6 does.
#[tokio::test]
async fn req_5_8_access_to_class_grants_a_binary_typed_by_its_description() {
    let (s, _d) = server().await;
    make(&s, "lib").await;
    for name in ["book", "other"] {
        let path = format!("lib/{name}");
        let r = admin(
            &s,
            Method::PUT,
            &path,
            &[("content-type", "text/plain")],
            "bytes",
        )
        .await;
        assert_eq!(r.status, 201);
    }
    let r = admin(
        &s,
        Method::PATCH,
        "lib/book/fcr:metadata",
        &[SPARQL],
        "INSERT DATA { <> a <http://example.org/Book> }",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    set_acl(&s, "lib", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessToClass <http://example.org/Book> ; acl:default <{}> .", s.url("lib"))).await;
    let alice = Some("alice");
    let r = req(&s, alice, Method::GET, "lib/book", &[], "").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "bytes");
    assert!(
        r.has_link("http://example.org/Book", "type"),
        "{:?}",
        r.headers
    );
    let r = req(&s, alice, Method::HEAD, "lib/book", &[], "").await;
    assert!(
        r.has_link("http://example.org/Book", "type"),
        "{:?}",
        r.headers
    );
    let r = req(&s, alice, Method::GET, "lib/book/fcr:metadata", &[], "").await;
    assert_eq!(r.status, 200);
    assert!(
        r.has_link("http://example.org/Book", "type"),
        "{:?}",
        r.headers
    );
    assert_eq!(
        status(&req(&s, alice, Method::GET, "lib/other", &[], "").await),
        403
    );
    assert_eq!(
        status(&req(&s, alice, Method::GET, "lib/other/fcr:metadata", &[], "").await),
        403
    );
}

/// 5.1 (issue 46.2): an ACL is typed as Fedora 6 types it, `webac:Acl` and a container
/// (`ldp:Container`, `fedora:Container`), in its `Link: rel="type"` headers and its
/// triples, so that Fedora's import-export tool takes it for an ACL.
#[tokio::test]
async fn req_5_1_an_acl_is_typed_webac_acl_and_a_container_as_in_fedora() {
    let (s, _d) = server().await;
    make(&s, "c").await;
    set_acl(&s, "c", &format!("<#read> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessTo <{}> .", s.url("c"))).await;
    let types = [
        "http://fedora.info/definitions/v4/webac#Acl",
        "http://www.w3.org/ns/ldp#Container",
        "http://fedora.info/definitions/v4/repository#Container",
        "http://www.w3.org/ns/ldp#RDFSource",
        "http://fedora.info/definitions/v4/repository#Resource",
    ];
    for method in [Method::GET, Method::HEAD] {
        let r = admin(
            &s,
            method.clone(),
            "c/fcr:acl",
            &[("accept", "text/turtle")],
            "",
        )
        .await;
        assert_eq!(r.status, 200);
        for t in types {
            assert!(r.has_link(t, "type"), "{method} {t}: {:?}", r.headers);
        }
        assert!(!r.has_link("http://www.w3.org/ns/ldp#BasicContainer", "type"));
        // It takes no children: no POST, as Fedora's OPTIONS says.
        assert_eq!(
            r.header("allow"),
            Some("GET, HEAD, OPTIONS, PUT, PATCH, DELETE")
        );
        if method == Method::GET {
            let g = Graph::of(&r, &s.url("c/fcr:acl"));
            for t in types {
                let rdf_type = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
                assert!(g.has(&s.url("c/fcr:acl"), rdf_type, t), "{t}: {}", r.text());
            }
        }
    }
}

/// 5.1 (issue 46): an ACL's representation holds its authorizations, never its resource's
/// containment, membership or inbound references (Fedora shows none of them there; a tool
/// that exports the ACL and imports it elsewhere would store them as the ACL's own triples).
#[tokio::test]
async fn req_5_1_an_acl_lists_none_of_its_resources_children_members_or_referrers() {
    let (s, _d) = server().await;
    make(&s, "c").await;
    make(&s, "c/child").await;
    let direct = "<http://www.w3.org/ns/ldp#DirectContainer>; rel=\"type\"";
    let body = format!(
        "<> <http://www.w3.org/ns/ldp#membershipResource> <{}> ; <http://www.w3.org/ns/ldp#hasMemberRelation> <http://pcdm.org/models#hasMember> .",
        s.url("c")
    );
    let r = admin(
        &s,
        Method::PUT,
        "m",
        &[("content-type", "text/turtle"), ("link", direct)],
        &body,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = admin(
        &s,
        Method::PUT,
        "m/one",
        &[("content-type", "text/turtle")],
        "",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let reference = format!("<> <http://purl.org/dc/terms/relation> <{}> .", s.url("c"));
    let r = admin(
        &s,
        Method::PUT,
        "refers",
        &[("content-type", "text/turtle")],
        &reference,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    set_acl(&s, "c", &format!("<#read> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessTo <{}> .", s.url("c"))).await;
    let all = "return=representation; include=\"http://fedora.info/definitions/fcrepo#PreferInboundReferences\"";
    // The resource itself shows all three ...
    let r = admin(
        &s,
        Method::GET,
        "c",
        &[("accept", "application/n-triples"), ("prefer", all)],
        "",
    )
    .await;
    let text = r.text();
    for p in [
        "ldp#contains",
        "pcdm.org/models#hasMember",
        "dc/terms/relation",
    ] {
        assert!(text.contains(p), "{p} on c: {text}");
    }
    // ... its ACL none of them.
    let r = admin(
        &s,
        Method::GET,
        "c/fcr:acl",
        &[("accept", "application/n-triples"), ("prefer", all)],
        "",
    )
    .await;
    assert_eq!(r.status, 200);
    let text = r.text();
    for p in [
        "ldp#contains",
        "pcdm.org/models#hasMember",
        "dc/terms/relation",
    ] {
        assert!(!text.contains(p), "{p} on c/fcr:acl: {text}");
    }
}

/// 5.8 (issue 38.9, inference optional): a class named by `acl:accessToClass` covers its
/// subclasses, where an in-repository class resource states `rdfs:subClassOf` (its own
/// triples, a hash URI allowed, transitively); a change to the hierarchy is seen at once.
#[tokio::test]
async fn req_5_8_access_to_class_covers_subclasses_stated_in_the_repository() {
    let (s, _d) = server().await;
    make(&s, "vocab").await;
    let book = "http://example.org/Book";
    // Novel ⊑ Fiction (hash URIs in one document) ⊑ Book (outside the repository).
    let vocab = format!(
        "<#Novel> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <#Fiction> .\n\
         <#Fiction> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <{book}> ."
    );
    let r = admin(&s, Method::PUT, "vocab/fiction", &[TURTLE], &vocab).await;
    assert_eq!(r.status, 201, "{}", r.text());
    make(&s, "lib").await;
    let novel = format!("<> a <{}#Novel> .", s.url("vocab/fiction"));
    let r = admin(&s, Method::PUT, "lib/novel", &[TURTLE], &novel).await;
    assert_eq!(r.status, 201);
    make(&s, "lib/plain").await;
    set_acl(&s, "lib", &format!("<#a> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read ; acl:accessToClass <{book}> ; acl:default <{}> .", s.url("lib"))).await;
    let alice = Some("alice");
    assert_eq!(
        status(&req(&s, alice, Method::GET, "lib/novel", &[], "").await),
        200
    );
    assert_eq!(
        status(&req(&s, alice, Method::GET, "lib/plain", &[], "").await),
        403
    );
    // Fiction is no longer a Book: the novel is not either.
    let r = admin(
        &s,
        Method::PATCH,
        "vocab/fiction",
        &[SPARQL],
        &format!("DELETE DATA {{ <#Fiction> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <{book}> }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(
        status(&req(&s, alice, Method::GET, "lib/novel", &[], "").await),
        403
    );
}

/// 5.4 (issue 38.9, a MAY Fedora 6 skips): a POST or PUT that creates a resource with
/// `Link: <source>; rel="acl"` naming an existing RDF source makes that source the
/// resource's ACL: its authorizations decide (one without a target is about the resource),
/// and the resource's `Link: rel="acl"` names it. A source arca cannot use is refused with
/// 409 and `constrainedBy`, creating nothing; choosing the ACL needs acl:Control.
#[tokio::test]
async fn req_5_4_a_resource_created_with_a_linked_acl_is_governed_by_it() {
    let (s, _d) = server().await;
    make(&s, "acls").await;
    let shared = format!("{PREFIXES}<#r> a acl:Authorization ; acl:agent <http://users.example/bob> ; acl:mode acl:Read .");
    let r = admin(&s, Method::PUT, "acls/shared", &[TURTLE], &shared).await;
    assert_eq!(r.status, 201, "{}", r.text());
    make(&s, "p").await;
    let link = format!("<{}>; rel=\"acl\"", s.url("acls/shared"));
    let r = admin(&s, Method::PUT, "p/linked", &[TURTLE, ("link", &link)], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.has_link(&s.url("acls/shared"), "acl"), "{:?}", r.headers);
    let r = admin(&s, Method::OPTIONS, "p/linked", &[], "").await;
    assert!(r.has_link(&s.url("acls/shared"), "acl"), "{:?}", r.headers);
    // A path on this server works too (POST).
    let r = admin(
        &s,
        Method::POST,
        "p",
        &[
            TURTLE,
            ("slug", "posted"),
            ("link", "</rest/acls/shared>; rel=\"acl\""),
        ],
        "",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    for path in ["p/linked", "p/posted"] {
        let r = admin(&s, Method::GET, path, &[], "").await;
        assert!(
            r.has_link(&s.url("acls/shared"), "acl"),
            "{path}: {:?}",
            r.headers
        );
        assert!(
            !r.has_link(&s.url(&format!("{path}/fcr:acl")), "acl"),
            "{:?}",
            r.headers
        );
        // bob reads it by the shared ACL; alice, whom the root ACL lets read everything,
        // does not: the linked ACL decides.
        assert_eq!(
            status(&req(&s, Some("bob"), Method::GET, path, &[], "").await),
            200
        );
        assert_eq!(
            status(&req(&s, Some("alice"), Method::GET, path, &[], "").await),
            403
        );
    }
    // A change to the shared ACL is seen at once.
    let r = admin(
        &s,
        Method::PATCH,
        "acls/shared",
        &[SPARQL],
        &format!("INSERT DATA {{ <#r> <{ACL}agent> <http://users.example/alice> }}"),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(
        status(&req(&s, Some("alice"), Method::GET, "p/linked", &[], "").await),
        200
    );
    // Sources arca cannot use: refused, nothing created.
    let r = admin(
        &s,
        Method::PUT,
        "acls/bin",
        &[("content-type", "text/plain")],
        "x",
    )
    .await;
    assert_eq!(r.status, 201);
    make(&s, "acls/gone").await;
    assert_eq!(
        admin(&s, Method::DELETE, "acls/gone", &[], "").await.status,
        204
    );
    for (n, target) in [
        "http://elsewhere.example/acl".to_string(),
        s.url("acls/missing"),
        s.url("acls/bin"),
        s.url("acls/gone"),
    ]
    .iter()
    .enumerate()
    {
        let link = format!("<{target}>; rel=\"acl\"");
        let path = format!("p/refused{n}");
        let r = admin(&s, Method::PUT, &path, &[TURTLE, ("link", &link)], "").await;
        assert_eq!(r.status, 409, "{target}: {}", r.text());
        assert_constrained_by(&s, &r).await;
        assert_eq!(admin(&s, Method::GET, &path, &[], "").await.status, 404);
    }
    // Without acl:Control on what would be created, alice may not choose its ACL.
    set_acl(&s, "p", &format!("<#w> a acl:Authorization ; acl:agent <http://users.example/alice> ; acl:mode acl:Read, acl:Write ; acl:accessTo <{0}> ; acl:default <{0}> .", s.url("p"))).await;
    let r = req(
        &s,
        Some("alice"),
        Method::PUT,
        "p/mine",
        &[TURTLE, ("link", &link)],
        "",
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(admin(&s, Method::GET, "p/mine", &[], "").await.status, 404);
    // Without the Link, creation is as before (Fedora's behaviour).
    let r = req(&s, Some("alice"), Method::PUT, "p/mine", &[TURTLE], "").await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(
        r.has_link(&s.url("p/mine/fcr:acl"), "acl"),
        "{:?}",
        r.headers
    );
    // The link is an ordinary ACL in OCFL: a catalog rebuilt from storage keeps it.
    s.published().await;
    let data = s.stop().await.expect("a temporary data directory");
    let copy = copy_without_catalog(data.path());
    let htpasswd = _d.path().join("htpasswd");
    let s = TestServer::start_with(Some(copy.path()), |c| {
        c.auth.htpasswd = Some(htpasswd);
        c.auth.admins = vec!["root".into()];
        c.auth.user_base_uri = Some("http://users.example/".into());
    })
    .await;
    let r = admin(&s, Method::GET, "p/linked", &[], "").await;
    assert!(r.has_link(&s.url("acls/shared"), "acl"), "{:?}", r.headers);
    assert_eq!(
        status(&req(&s, Some("bob"), Method::GET, "p/linked", &[], "").await),
        200
    );
    assert_eq!(
        status(&req(&s, Some("carol"), Method::GET, "p/linked", &[], "").await),
        403
    );
}
