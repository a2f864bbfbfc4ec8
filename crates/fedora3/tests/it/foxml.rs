//! The FOXML reader against the Fedora 3 corpus (`../shared/fedora3`, see its README).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common;
use crate::common::{corpus, digest_of, expected_objects, files_under, upstream_foxml};
use arca_fedora3::foxml::{self, FoxmlError};
use arca_fedora3::{Content, ControlGroup, F3Object, ObjectState, PROP_LABEL};

/// Reads every file, failing with all the errors at once.
fn read_all(files: &[PathBuf]) -> Vec<(PathBuf, F3Object)> {
    let mut errors = Vec::new();
    let mut objects = Vec::new();
    for file in files {
        match foxml::read_file(file) {
            Ok(object) => objects.push((file.clone(), object)),
            Err(e) => errors.push(e.to_string()),
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    objects
}

/// The objects of a corpus folder, by PID.
fn objects_in(dir: &str) -> BTreeMap<String, F3Object> {
    let objects = read_all(&files_under(&corpus().join(dir)));
    let count = objects.len();
    let by_pid: BTreeMap<_, _> = objects
        .into_iter()
        .map(|(_, o)| (o.pid.clone(), o))
        .collect();
    assert_eq!(by_pid.len(), count, "duplicate PIDs in {dir}");
    by_pid
}

const STORES: [&str; 3] = ["akubra/objectStore", "legacy/objects", "exported"];

#[test]
fn corpus_path_resolves() {
    assert!(
        corpus().join("OBJECTS.tsv").is_file(),
        "{}",
        corpus().display()
    );
}

#[test]
fn every_object_matches_objects_tsv() {
    let expected = expected_objects();
    assert_eq!(expected.len(), 69);
    for dir in STORES {
        let objects = objects_in(dir);
        assert_eq!(
            objects.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "{dir}"
        );
        for (pid, object) in &objects {
            let want = &expected[pid];
            let state = match object.state() {
                ObjectState::Active => "Active",
                ObjectState::Inactive => "Inactive",
                ObjectState::Deleted => "Deleted",
            };
            assert_eq!(state, want.state, "{dir} {pid}");
            assert_eq!(
                object.property(PROP_LABEL),
                Some(want.label.as_str()),
                "{dir} {pid}"
            );
            let got: Vec<_> = object
                .datastreams
                .iter()
                .map(|d| common::ExpectedDatastream {
                    id: d.id.clone(),
                    control_group: d.control_group,
                    state: d.state,
                    versions: d.versions.len(),
                    versionable: d.versionable,
                })
                .collect();
            assert_eq!(got, want.datastreams, "{dir} {pid}");
            assert!(object.not_carried.is_empty(), "{dir} {pid}");
        }
    }
}

#[test]
fn stored_and_exported_forms_agree() {
    let akubra = objects_in("akubra/objectStore");
    let legacy = objects_in("legacy/objects");
    let exported = objects_in("exported");
    for (pid, a) in &akubra {
        for (name, other) in [("legacy", &legacy[pid]), ("exported", &exported[pid])] {
            let same_instance = name == "exported";
            assert_eq!(a.datastreams.len(), other.datastreams.len(), "{name} {pid}");
            for (da, db) in a.datastreams.iter().zip(&other.datastreams) {
                let at = format!("{name} {pid}/{}", da.id);
                assert_eq!(
                    (&da.id, da.state, da.control_group, da.versionable),
                    (&db.id, db.state, db.control_group, db.versionable),
                    "{at}"
                );
                assert_eq!(da.versions.len(), db.versions.len(), "{at}");
                for (va, vb) in da.versions.iter().zip(&db.versions) {
                    let at = format!("{at}/{}", va.id);
                    assert_eq!(
                        (
                            &va.id,
                            &va.label,
                            &va.mime_type,
                            &va.format_uri,
                            &va.alt_ids
                        ),
                        (
                            &vb.id,
                            &vb.label,
                            &vb.mime_type,
                            &vb.format_uri,
                            &vb.alt_ids
                        ),
                        "{at}"
                    );
                    if same_instance {
                        assert_eq!(va.created, vb.created, "{at}");
                        assert_eq!(va.digest, vb.digest, "{at}");
                    } else {
                        // Another instance: same content, other timestamps, so digests
                        // agree except where content holds timestamps (X: AUDIT, DC ...).
                        assert_eq!(
                            va.digest.as_ref().map(|d| &d.kind),
                            vb.digest.as_ref().map(|d| &d.kind),
                            "{at}"
                        );
                        if da.control_group == ControlGroup::Managed {
                            assert_eq!(va.digest, vb.digest, "{at}");
                        }
                    }
                    match (&va.content, &vb.content) {
                        (Content::Internal(ra), Content::Internal(rb)) => assert_eq!(ra, rb),
                        (Content::Internal(r), Content::Inline(bytes)) => {
                            assert_eq!(r, &format!("{pid}+{}+{}", da.id, va.id), "{at}");
                            if let Some(size) = va.size.filter(|s| *s >= 0) {
                                assert_eq!(bytes.len() as i64, size, "{at}");
                            }
                        }
                        (Content::Xml(_), Content::Xml(_)) => {}
                        (Content::Url(ua), Content::Url(ub)) => assert_eq!(ua, ub, "{at}"),
                        (ca, cb) => panic!("{at}: {ca:?} vs {cb:?}"),
                    }
                }
            }
        }
    }
}

#[test]
fn exported_managed_content_matches_its_digest() {
    let mut checked = BTreeMap::<String, usize>::new();
    for object in objects_in("exported").values() {
        for ds in &object.datastreams {
            for version in &ds.versions {
                let (Content::Inline(bytes), Some(digest)) = (&version.content, &version.digest)
                else {
                    continue;
                };
                if let Some(actual) = digest_of(digest, bytes) {
                    assert_eq!(
                        actual, digest.value,
                        "{} {} {}",
                        object.pid, ds.id, version.id
                    );
                    *checked.entry(digest.kind.clone()).or_default() += 1;
                }
            }
        }
    }
    for kind in ["MD5", "SHA-1", "SHA-256", "SHA-384", "SHA-512"] {
        assert!(checked.contains_key(kind), "no {kind} checked: {checked:?}");
    }
}

#[test]
fn ingest_form_parses() {
    let objects = read_all(&files_under(&corpus().join("ingest")));
    assert_eq!(objects.len(), 41);
    let expected = expected_objects();
    for (path, object) in &objects {
        assert!(expected.contains_key(&object.pid), "{}", path.display());
        for ds in &object.datastreams {
            for version in &ds.versions {
                if ds.control_group == ControlGroup::External {
                    let Content::Url(url) = &version.content else {
                        panic!("{} {}: {:?}", object.pid, ds.id, version.content)
                    };
                    assert!(url.starts_with("http://local.fedora.server/"), "{url}");
                }
            }
        }
    }
}

#[test]
fn upstream_fixtures_parse() {
    let files = upstream_foxml();
    assert_eq!(files.len(), 13, "{files:?}");
    let objects = read_all(&files);
    // An invalid checksum is the importer's business, not the reader's.
    let invalid = objects
        .iter()
        .find(|(p, _)| p.to_string_lossy().contains("legacyFS-invalid-checksum"))
        .unwrap();
    let ds2 = invalid.1.datastream("DS2").unwrap();
    assert!(matches!(ds2.versions[0].content, Content::Internal(_)));
}

/// Every inline XML content of every corpus file.
fn all_inline_xml() -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for dir in STORES.iter().chain(&["ingest"]) {
        files.extend(files_under(&corpus().join(dir)));
    }
    files.extend(upstream_foxml());
    let mut out = Vec::new();
    for (path, object) in read_all(&files) {
        for ds in &object.datastreams {
            for version in &ds.versions {
                if let Content::Xml(xml) = &version.content {
                    let at = format!("{} {} {}", path.display(), ds.id, version.id);
                    out.push((at, xml.clone()));
                }
            }
        }
    }
    out
}

/// Checks that `xml` is one well-formed element with every prefix declared.
fn check_standalone(at: &str, xml: &[u8]) {
    use quick_xml::events::Event;
    use quick_xml::name::ResolveResult;
    let text = std::str::from_utf8(xml).unwrap_or_else(|e| panic!("{at}: {e}"));
    assert!(text.starts_with('<') && text.ends_with('>'), "{at}: {text}");
    assert!(!text.starts_with("<?xml"), "{at}");
    let mut reader = quick_xml::NsReader::from_str(text);
    let (mut depth, mut roots) = (0, 0);
    loop {
        let event = reader.read_resolved_event();
        let (resolved, event) = event.unwrap_or_else(|e| panic!("{at}: {e}"));
        if let ResolveResult::Unknown(p) = resolved {
            panic!("{at}: undeclared prefix {}", String::from_utf8_lossy(&p));
        }
        let (e, opens) = match event {
            Event::Start(e) => (e, true),
            Event::Empty(e) => (e, false),
            Event::End(_) => {
                depth -= 1;
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        if depth == 0 {
            roots += 1;
        }
        depth += usize::from(opens);
        for attr in e.attributes() {
            let attr = attr.unwrap();
            let (r, _) = reader.resolve_attribute(attr.key);
            assert!(!matches!(r, ResolveResult::Unknown(_)), "{at}: {attr:?}");
        }
    }
    assert_eq!((depth, roots), (0, 1), "{at}");
}

#[test]
fn inline_xml_stands_alone() {
    let all = all_inline_xml();
    assert!(all.len() > 800, "{}", all.len());
    for (at, xml) in &all {
        check_standalone(at, xml);
    }
}

/// The one object of a FOXML file.
fn read(path: &Path) -> F3Object {
    foxml::read_file(path).unwrap_or_else(|e| panic!("{e}"))
}

fn xml_of(object: &F3Object, ds: &str) -> String {
    match &object.datastream(ds).unwrap().versions[0].content {
        Content::Xml(xml) => String::from_utf8(xml.clone()).unwrap(),
        other => panic!("{ds}: {other:?}"),
    }
}

#[test]
fn inline_xml_is_verbatim_with_inherited_declarations() {
    // The audit prefix is declared on foxml:digitalObject only.
    let path = corpus().join(
        "upstream-migration-utils/inline-disabled-akubra/objects/2013/0418/22/15/llgc-id_1591190",
    );
    let audit = xml_of(&read(&path), "AUDIT");
    assert!(
        audit.starts_with(
            r#"<audit:auditTrail xmlns:audit="info:fedora/fedora-system:def/audit#">"#
        ),
        "{audit}"
    );
    assert!(audit.ends_with("</audit:auditTrail>"), "{audit}");
    // Verbatim: the source's indentation is kept inside.
    assert!(audit.contains("\n                <audit:record"), "{audit}");

    // Declared on the element itself: nothing added, bytes as stored.
    let path = corpus().join("akubra/objectStore/3d/info%3Afedora%2Fdemo%3A1");
    let dc = xml_of(&read(&path), "DC");
    let stored = std::fs::read_to_string(&path).unwrap();
    assert!(stored.contains(&dc), "{dc}");
    assert!(
        dc.starts_with("<oai_dc:dc ") && dc.ends_with("</oai_dc:dc>"),
        "{dc}"
    );
}

#[test]
fn unicode_and_edge_cases() {
    let object = read(&corpus().join("exported/f3test_unicode.xml"));
    assert_eq!(
        object.property(PROP_LABEL),
        Some("Ünïcödé label — 日本語 & <angle> \"quotes\"")
    );
    let version = |ds: &str| &object.datastream(ds).unwrap().versions[0];
    assert_eq!(version("EMPTY").content, Content::Inline(Vec::new()));
    let Content::Inline(big) = &version("BIG").content else {
        panic!()
    };
    assert_eq!(big.len(), 256 * 1024);
    assert!(object.datastream("ds.with-dash_and.dot").is_some());
    let text = version("TEXT");
    assert_eq!(text.mime_type, "text/plain; charset=UTF-8");
    assert!(!text.alt_ids.is_empty(), "{text:?}");
    assert!(text.format_uri.is_some(), "{text:?}");

    let object = read(&corpus().join("exported/f3test_caf%C3%A9.xml"));
    assert_eq!(object.pid, "f3test:caf%C3%A9");
}

#[test]
fn ingest_form_has_no_audit_and_may_lack_dates() {
    for (path, object) in read_all(&files_under(&corpus().join("ingest"))) {
        assert!(object.datastream("AUDIT").is_none(), "{}", path.display());
    }
}

#[test]
fn pid_alone() {
    for dir in STORES {
        for path in files_under(&corpus().join(dir)) {
            let pid = foxml::read_pid(&path).unwrap();
            assert_eq!(pid, read(&path).pid);
            assert_eq!(
                foxml::parse_pid(&std::fs::read(&path).unwrap()).unwrap(),
                pid
            );
        }
    }
}

#[test]
fn pid_syntax() {
    for ok in [
        "demo:5",
        "f3test:a.b-c~d_e",
        "f3-test.ns:1",
        "f3test:caf%C3%A9",
    ] {
        assert!(foxml::check_pid(ok).is_ok(), "{ok}");
    }
    let long = format!("a:{}", "b".repeat(63));
    for bad in [
        "demo",
        ":5",
        "demo:",
        "de_mo:5",
        "demo:a/b",
        "demo:caf%c3",
        "demo:%C",
        "a:b:c",
        &long,
    ] {
        assert!(
            matches!(foxml::check_pid(bad), Err(FoxmlError::InvalidPid { .. })),
            "{bad}"
        );
    }
}

/// Every FOXML file of the corpus.
fn all_corpus_files() -> Vec<PathBuf> {
    let mut files = upstream_foxml();
    for dir in STORES.iter().chain(&["ingest"]) {
        files.extend(files_under(&corpus().join(dir)));
    }
    files
}

#[test]
fn truncated_files_are_errors() {
    let mut tried = 0;
    for path in all_corpus_files() {
        let bytes = std::fs::read(&path).unwrap();
        let end = bytes.iter().rposition(|&b| b == b'>').unwrap();
        for cut in (0..16).map(|i| end * i / 16).chain([end, end - 1, 1]) {
            let result = foxml::parse(&bytes[..cut]);
            assert!(result.is_err(), "{} cut at {cut}", path.display());
            tried += 1;
        }
    }
    assert!(tried > 3000);
}

#[test]
fn garbage_is_an_error() {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for len in [0, 1, 2, 10, 100, 1000, 100_000] {
        let bytes: Vec<u8> = (0..len).map(|_| random() as u8).collect();
        assert!(foxml::parse(&bytes).is_err());
        let mut ascii = bytes.clone();
        ascii
            .iter_mut()
            .for_each(|b| *b = b"<>/=\"' :abcX&;#"[*b as usize % 15]);
        assert!(foxml::parse(&ascii).is_err());
    }
    // Flipping bytes of a real object never panics (the result may be Ok).
    let real = std::fs::read(corpus().join("exported/f3test_checksums.xml")).unwrap();
    for i in 0..2000 {
        let mut bytes = real.clone();
        let at = random() as usize % bytes.len();
        bytes[at] = b"<>/=\"'&:xX"[i % 10];
        let _ = foxml::parse(&bytes);
    }
}

const HEAD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<foxml:digitalObject VERSION="1.1" PID="t:1" xmlns:foxml="info:fedora/fedora-system:def/foxml#">"#;

/// A document with `body` inside `digitalObject`.
fn doc(body: &str) -> String {
    format!("{HEAD}{body}</foxml:digitalObject>")
}

fn datastream(attrs: &str, version: &str) -> String {
    doc(&format!(
        r#"<foxml:datastream ID="DS" {attrs}><foxml:datastreamVersion ID="DS.0">{version}</foxml:datastreamVersion></foxml:datastream>"#
    ))
}

fn error_of(xml: &str) -> FoxmlError {
    foxml::parse(xml.as_bytes()).expect_err(xml)
}

#[test]
fn huge_attribute() {
    let label = "x".repeat(8 << 20);
    let xml = datastream(
        &format!(r#"CONTROL_GROUP="E" LABEL="{label}""#),
        r#"<foxml:contentLocation TYPE="URL" REF="http://a/"/>"#,
    );
    assert!(foxml::parse(xml.as_bytes()).is_ok());
    let xml = format!(
        r#"<foxml:digitalObject PID="t:{label}" xmlns:foxml="info:fedora/fedora-system:def/foxml#"/>"#
    );
    assert!(matches!(error_of(&xml), FoxmlError::InvalidPid { .. }));
}

#[test]
fn typed_errors_with_precise_messages() {
    let e = error_of(&datastream(r#"CONTROL_GROUP="Q""#, ""));
    assert!(matches!(e, FoxmlError::UnknownControlGroup { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        r#"datastream "DS": unknown CONTROL_GROUP "Q" (expected X, M, E or R)"#
    );

    let e = error_of(&datastream(r#"CONTROL_GROUP="M""#, ""));
    assert_eq!(
        e.to_string(),
        r#"datastream "DS" version "DS.0": control group M needs binaryContent or contentLocation, but the version has none"#
    );
    let e = error_of(&datastream(
        r#"CONTROL_GROUP="X""#,
        "<foxml:xmlContent>  </foxml:xmlContent>",
    ));
    assert!(matches!(e, FoxmlError::MissingContent { .. }), "{e:?}");
    let e = error_of(&datastream(r#"CONTROL_GROUP="R""#, ""));
    assert!(
        e.to_string()
            .contains(r#"control group R needs contentLocation TYPE="URL""#),
        "{e}"
    );
    let e = error_of(&datastream(
        r#"CONTROL_GROUP="X""#,
        r#"<foxml:binaryContent>AAAA</foxml:binaryContent>"#,
    ));
    assert!(matches!(e, FoxmlError::UnexpectedContent { .. }), "{e:?}");

    let e = error_of(&datastream(
        r#"CONTROL_GROUP="M""#,
        "<foxml:binaryContent>AAA*</foxml:binaryContent>",
    ));
    assert!(matches!(e, FoxmlError::InvalidBase64 { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with(r#"datastream "DS" version "DS.0": binaryContent"#),
        "{e}"
    );

    let e = error_of(&datastream(r#"CONTROL_GROUP="M" STATE="Z""#, ""));
    assert!(
        matches!(
            e,
            FoxmlError::InvalidAttribute {
                attribute: "STATE",
                ..
            }
        ),
        "{e:?}"
    );
    let e = error_of(&datastream(r#"CONTROL_GROUP="M" VERSIONABLE="yes""#, ""));
    assert!(
        matches!(
            e,
            FoxmlError::InvalidAttribute {
                attribute: "VERSIONABLE",
                ..
            }
        ),
        "{e:?}"
    );

    let e = error_of(&datastream(
        r#"CONTROL_GROUP="X""#,
        "<foxml:xmlContent><a:b/></foxml:xmlContent>",
    ));
    assert!(
        matches!(&e, FoxmlError::UnboundPrefix { prefix, .. } if prefix == "a"),
        "{e:?}"
    );

    let e =
        error_of(r#"<foxml:digitalObject xmlns:foxml="info:fedora/fedora-system:def/foxml#"/>"#);
    assert!(matches!(e, FoxmlError::MissingPid), "{e:?}");
    let e = error_of(
        r#"<foxml:digitalObject PID="no-colon" xmlns:foxml="info:fedora/fedora-system:def/foxml#"/>"#,
    );
    assert!(matches!(e, FoxmlError::InvalidPid { .. }), "{e:?}");
    let e = error_of("<html/>");
    assert!(matches!(e, FoxmlError::NotFoxml { .. }), "{e:?}");
    assert!(matches!(error_of(""), FoxmlError::NoRoot));
    let e = error_of(&doc("<foxml:datastream ID=\"DS\"").replace("</foxml:digitalObject>", ""));
    assert!(
        matches!(e, FoxmlError::Truncated { .. } | FoxmlError::Xml { .. }),
        "{e:?}"
    );
    let e = error_of(&HEAD.replace("UTF-8", "UTF-16"));
    assert!(matches!(e, FoxmlError::Encoding(_)), "{e:?}");
}

#[test]
fn defaults_and_extras() {
    let xml = doc(concat!(
        r#"<foxml:objectProperties><foxml:extproperty NAME="x" VALUE="y"/></foxml:objectProperties>"#,
        r#"<foxml:datastream ID="DS" CONTROL_GROUP="M"><foxml:datastreamVersion ID="DS.0" ALT_IDS=" a  b ">"#,
        "<foxml:binaryContent>\n  aGVs\n  bG8=\n</foxml:binaryContent></foxml:datastreamVersion></foxml:datastream>",
        r#"<foxml:disseminator ID="DISS1"><foxml:x/></foxml:disseminator>"#,
    ));
    let object = foxml::parse(xml.as_bytes()).unwrap();
    assert_eq!(object.properties, [("x".to_owned(), "y".to_owned())]);
    let ds = &object.datastreams[0];
    assert!(ds.versionable);
    assert_eq!(ds.state, arca_fedora3::DatastreamState::Active);
    assert_eq!(ds.versions[0].alt_ids, ["a", "b"]);
    assert_eq!(ds.versions[0].created, None);
    assert_eq!(ds.versions[0].content, Content::Inline(b"hello".to_vec()));
    assert_eq!(object.not_carried, ["disseminator DISS1"]);

    // Default namespace FOXML, and inline XML that inherits a default namespace.
    let xml = r#"<digitalObject PID="t:1" xmlns="info:fedora/fedora-system:def/foxml#" xmlns:r="urn:r">
      <datastream ID="X" CONTROL_GROUP="X"><datastreamVersion ID="X.0"><xmlContent>
        <r:a r:k="v"><b/><!-- c --></r:a>
      </xmlContent></datastreamVersion></datastream></digitalObject>"#;
    let object = foxml::parse(xml.as_bytes()).unwrap();
    assert_eq!(
        object.datastreams[0].versions[0].content,
        Content::Xml(
            br#"<r:a xmlns="info:fedora/fedora-system:def/foxml#" xmlns:r="urn:r" r:k="v"><b/><!-- c --></r:a>"#
                .to_vec()
        )
    );
}

#[test]
fn errors_outside_datastreams_name_the_object() {
    let e = error_of(&doc(
        r#"<foxml:objectProperties><foxml:property NAME="n"/></foxml:objectProperties>"#,
    ));
    assert_eq!(e.to_string(), "object: <property> has no VALUE attribute");
    let e = error_of(&doc(r#"<foxml:datastream CONTROL_GROUP="X"/>"#));
    assert_eq!(e.to_string(), "object: <datastream> has no ID attribute");
}
