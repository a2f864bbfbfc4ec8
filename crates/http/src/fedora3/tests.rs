//! The documents against Fedora 3.8.1's own answers (`testdata/`, copied from the recorded
//! corpus in `../shared/fedora3/responses/`), byte for byte, from hand-built views.

use arca_catalog::ResourceRecord;
use arca_fedora3::view::{DatastreamProfile, DatastreamVersion, ObjectView};
use arca_model::{FedoraId, ResourceHeaders};
use http::Method;

use super::render::{self, Api, Session};
use super::*;

const BASE: &str = "http://localhost:18380/fedora/";

fn nt(s: &str) -> Vec<oxrdf::Triple> {
    arca_rdf::parse_ntriples(s.as_bytes()).unwrap()
}

fn object(
    pid: &str,
    label: &str,
    owner: &str,
    created: &str,
    modified: &str,
    extra: &str,
) -> ObjectView {
    let s = format!("<info:fedora/{pid}>");
    let model = "info:fedora/fedora-system:def/model#";
    let text = format!(
        "{s} <{model}state> \"Active\" .\n{s} <{model}label> \"{label}\" .\n{s} <{model}ownerId> \"{owner}\" .\n{s} <{model}createdDate> \"{created}\"^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n{s} <info:fedora/fedora-system:def/view#lastModifiedDate> \"{modified}\"^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n{extra}"
    );
    ObjectView::from_triples(pid, &nt(&text))
}

fn demo5() -> ObjectView {
    object(
        "demo:5",
        "Data Object (Coliseum) for Local Simple Image Demo",
        "fedoraAdmin",
        "2008-07-02T05:09:42.015Z",
        "2026-11-23T09:13:33.432Z",
        "<info:fedora/demo:5> <info:fedora/fedora-system:def/model#hasModel> <info:fedora/demo:UVA_STD_IMAGE_1> .\n",
    )
}

fn expected(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/fedora3/testdata")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn unescape(s: &str) -> String {
    quick_xml::escape::unescape(s)
        .unwrap_or_else(|e| panic!("{s:?}: {e}"))
        .into_owned()
}

/// The datastream profiles of a recorded document, read back (fields named with `prefix`).
fn profiles_in(xml: &str, prefix: &str) -> Vec<DatastreamProfile> {
    let mut out = Vec::new();
    for part in xml.split("<datastreamProfile ").skip(1) {
        let attr = |name: &str| {
            let start = part.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
            unescape(&part[start..start + part[start..].find('"').unwrap()])
        };
        let all = |name: &str| -> Vec<String> {
            let open = format!("<{prefix}{name}>");
            let close = format!("</{prefix}{name}>");
            part.split(&open)
                .skip(1)
                .map(|s| unescape(&s[..s.find(&close).unwrap()]))
                .collect()
        };
        let one = |name: &str| all(name).pop().unwrap();
        out.push(DatastreamProfile {
            pid: attr("pid"),
            dsid: attr("dsID"),
            label: one("dsLabel"),
            version_id: one("dsVersionID"),
            created: one("dsCreateDate"),
            state: one("dsState"),
            mime: one("dsMIME"),
            format_uri: one("dsFormatURI"),
            control_group: one("dsControlGroup"),
            size: one("dsSize").parse().unwrap(),
            versionable: one("dsVersionable") == "true",
            alt_ids: all("dsAltID"),
            location: one("dsLocation"),
            location_type: one("dsLocationType"),
            checksum_type: one("dsChecksumType"),
            checksum: one("dsChecksum"),
            position: None,
        });
    }
    out
}

fn version(profile: DatastreamProfile) -> DatastreamVersion {
    let id = FedoraId::from_path(&format!("{}/{}", profile.pid, profile.dsid)).unwrap();
    DatastreamVersion {
        binary: ResourceRecord {
            parent: id.path_parent(),
            ocfl_id: format!("info:fedora/{}", profile.pid),
            id,
            headers: ResourceHeaders::from_json(
                    br#"{"id":"info:fedora/x","interactionModel":"http://www.w3.org/ns/ldp#NonRDFSource"}"#,
                )
                .unwrap(),
            content_file: None,
            rdf: None,
            children_changed: None,
        },
        profile,
        rels_int: Vec::new(),
    }
}

fn versioned_datastreams() -> Vec<DatastreamVersion> {
    profiles_in(&expected("datastreams-profiles-versioned.xml"), "apim:")
        .into_iter()
        .map(version)
        .collect()
}

#[test]
fn object_profiles() {
    let o = demo5();
    assert_eq!(
        render::object_profile(&o, BASE, Api::Rest),
        expected("object-profile-demo5.xml")
    );
    assert_eq!(
        render::object_profile(&o, BASE, Api::Lite),
        expected("object-profile-demo5-lite.xml")
    );
    assert_eq!(
        render::object_profile_html(&o, Api::Rest),
        expected("object-profile-demo5.html")
    );
    assert_eq!(
        render::object_profile_html(&o, Api::Lite),
        expected("object-profile-demo5-lite.html")
    );
    let unicode = object(
        "f3test:unicode",
        "\u{dc}n\u{ef}c\u{f6}d\u{e9} label \u{2014} \u{65e5}\u{672c}\u{8a9e} & <angle> \\\"quotes\\\"",
        "f3owner",
        "2026-11-23T09:13:51.183Z",
        "2026-11-23T09:13:51.413Z",
        "",
    );
    assert_eq!(
        render::object_profile(&unicode, BASE, Api::Rest),
        expected("object-profile-unicode.xml")
    );
}

#[test]
fn datastream_lists() {
    let list = versioned_datastreams();
    assert_eq!(list.len(), 3);
    assert_eq!(
        render::datastream_list("f3test:versioned", &list, BASE, Api::Rest),
        expected("datastreams-versioned.xml")
    );
    assert_eq!(
        render::datastream_list("f3test:versioned", &list, BASE, Api::Lite),
        expected("datastreams-versioned-lite.xml")
    );
    assert_eq!(
        render::datastream_list_html("f3test:versioned", &list),
        expected("datastreams-versioned.html")
    );
    assert_eq!(
        render::datastream_list_profiles("f3test:versioned", &list, BASE),
        expected("datastreams-profiles-versioned.xml")
    );
}

#[test]
fn datastream_profiles_and_history() {
    let text = profiles_in(&expected("profile-unicode-text.xml"), "").remove(0);
    assert_eq!(text.alt_ids, ["alt-id-1", "alt-id-2"]);
    assert_eq!(
        render::datastream_profile(&text, None, BASE),
        expected("profile-unicode-text.xml")
    );
    let history: Vec<DatastreamVersion> = profiles_in(&expected("history-versioned-mods.xml"), "")
        .into_iter()
        .map(version)
        .collect();
    assert_eq!(history.len(), 4);
    assert_eq!(
        render::datastream_history("f3test:versioned", "MODS", &history, BASE),
        expected("history-versioned-mods.xml")
    );
    let then = &history[2].profile;
    assert_eq!(
        render::datastream_profile(then, Some("2026-11-23T09:13:41.660Z"), BASE),
        expected("profile-versioned-mods-asof.xml")
    );
}

#[test]
fn object_histories() {
    let dates: Vec<String> = [".183", ".224", ".266", ".297", ".349", ".381", ".413"]
        .iter()
        .map(|ms| format!("2026-11-23T09:13:51{ms}Z"))
        .collect();
    assert_eq!(
        render::object_history("f3test:unicode", &dates, Api::Rest),
        expected("object-history-unicode.xml")
    );
    assert_eq!(
        render::object_history("f3test:unicode", &dates, Api::Lite),
        expected("object-history-unicode-lite.xml")
    );
}

#[test]
fn relationships_as_rdf_xml() {
    let s = "<info:fedora/f3test:relsint>";
    let triples = nt(&format!(
        "{s} <info:fedora/fedora-system:def/model#hasModel> <info:fedora/demo:UVA_STD_IMAGE_1> .\n\
         {s} <info:fedora/fedora-system:def/relations-external#isPartOf> <info:fedora/f3test:collection> .\n\
         {s} <info:fedora/fedora-system:def/model#hasModel> <info:fedora/fedora-system:FedoraObject-3.0> .\n\
         {s} <http://example.org/ns#note> \"plain literal, with comma & ampersand\" .\n\
         {s} <http://example.org/ns#pageCount> \"12\"^^<http://www.w3.org/2001/XMLSchema#int> .\n"
    ));
    assert_eq!(
        render::relationships(&triples),
        expected("relationships-relsint.rdf")
    );
}

#[test]
fn find_objects_pages() {
    let coliseum = |pid: &str| {
        object(
            pid,
            "x",
            "fedoraAdmin",
            "2008-07-02T05:09:42.015Z",
            "2008-07-02T05:09:42.015Z",
            &format!("<info:fedora/{pid}> <http://purl.org/dc/elements/1.1/title> \"Coliseum in Rome\" .\n"),
        )
    };
    let rows = [coliseum("demo:29"), coliseum("demo:5")];
    assert_eq!(
        render::find_objects(&rows, &["pid", "title"], None, BASE, Api::Rest),
        expected("find-terms.xml")
    );
    let rows: Vec<ObjectView> = ["demo:1", "demo:12", "demo:13", "demo:14", "demo:18"]
        .iter()
        .map(|p| coliseum(p))
        .collect();
    let session = Session {
        token: "744029d334f1d545b3fd8635c09fc7cc".into(),
        cursor: 0,
        expires: "2026-11-23T09:22:42.876Z".into(),
    };
    assert_eq!(
        render::find_objects(&rows, &["pid"], Some(&session), BASE, Api::Rest),
        expected("find-paged.xml")
    );
    let pids = [
        "f3test:ImageCModel",
        "f3test:a.b-c~d_e",
        "f3test:caf%C3%A9",
        "f3test:checksums",
        "f3test:collection",
        "f3test:deleted",
        "f3test:dsstates",
        "f3test:external",
        "f3test:inactive",
        "f3test:member1",
        "f3test:member2",
        "f3test:member3",
        "f3test:member4",
        "f3test:member5",
        "f3test:minimal",
        "f3test:nonversioned",
        "f3test:relsint",
        "f3test:unicode",
        "f3test:versioned",
    ];
    let rows: Vec<ObjectView> = pids.iter().map(|p| coliseum(p)).collect();
    assert_eq!(
        render::find_objects(&rows, &["pid"], None, BASE, Api::Lite),
        expected("search-lite.xml")
    );
}

#[test]
fn describe() {
    assert_eq!(render::describe(BASE), expected("describe.xml"));
}

#[test]
fn local_fedora_server_is_this_host() {
    assert_eq!(
        render::local_server("http://local.fedora.server/fedora-demo/x.jpg", BASE),
        "http://localhost:18380/fedora-demo/x.jpg"
    );
    assert_eq!(
        render::local_server("http://example.org/a", BASE),
        "http://example.org/a"
    );
}

#[test]
fn paths_parse_into_calls() {
    let get = |p: &str| parse(&Method::GET, p, None).call;
    assert!(matches!(get("/fedora/describe"), Call::Describe));
    assert!(matches!(
        get("/fedora/objects"),
        Call::FindObjects(Api::Rest)
    ));
    assert!(matches!(
        get("/fedora/search"),
        Call::FindObjects(Api::Lite)
    ));
    assert!(
        matches!(get("/fedora/objects/demo%3A5"), Call::ObjectProfile(Api::Rest, p) if p == "demo:5")
    );
    assert!(
        matches!(get("/fedora/objects/f3test:caf%25C3%25A9/datastreams"), Call::Datastreams(Api::Rest, p) if p == "f3test:caf%C3%A9")
    );
    // API-A-LITE decodes twice, as Fedora 3 does.
    assert!(
        matches!(get("/fedora/get/f3test:caf%25C3%25A9"), Call::ObjectProfile(Api::Lite, p) if p == "f3test:caf\u{e9}")
    );
    assert!(matches!(
        get("/fedora/get/demo:5/DC/2026-11-23T09:13:51.224Z"),
        Call::Content {
            api: Api::Lite,
            date_time: Some(_),
            ..
        }
    ));
    assert!(matches!(
        get("/fedora/get/demo:5/demo:1/getThumbnail"),
        Call::NotSupported(_)
    ));
    assert!(matches!(
        get("/fedora/objects/demo:5/datastreams/DC"),
        Call::DatastreamProfile(..)
    ));
    assert!(matches!(
        get("/fedora/objects/demo:5/datastreams/DC/history"),
        Call::DatastreamHistory(..)
    ));
    assert!(matches!(
        get("/fedora/objects/demo:5/relationships"),
        Call::Relationships(_)
    ));
    assert!(matches!(get("/fedora/nothing/here"), Call::NoSuchPath));
    for m in [Method::POST, Method::PUT, Method::DELETE] {
        assert!(matches!(
            parse(&m, "/fedora/objects/demo:5", None).call,
            Call::Write
        ));
    }
    let r = parse(&Method::GET, "/fedora/objects", Some("terms=a+b&pid=true"));
    assert_eq!(r.param("terms"), Some("a b"));
    assert!(r.flag("pid"));
    assert!(claims("/fedora") && claims("/fedora/objects") && !claims("/fedoragsearch/rest"));
}
