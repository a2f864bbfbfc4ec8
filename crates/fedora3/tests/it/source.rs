//! Object sources against the Fedora 3 corpus (`../shared/fedora3`, see its README).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::{corpus, digest_of, expected_objects, files_under};
use arca_fedora3::source::{self, ResolveError, Resolver, SourceError, SourceKind, Sources};
use arca_fedora3::{Content, ControlGroup};

fn scan(paths: &[PathBuf]) -> Sources {
    source::scan(paths).unwrap_or_else(|e| panic!("{e}"))
}

fn pids(sources: &Sources) -> BTreeSet<String> {
    sources.objects.iter().map(|o| o.pid.clone()).collect()
}

#[test]
fn stores_and_directories_are_told_apart() {
    let all: BTreeSet<String> = expected_objects().into_keys().collect();
    let cases = [
        ("akubra", SourceKind::Akubra),
        ("akubra/objectStore", SourceKind::Akubra),
        ("legacy", SourceKind::Legacy),
        ("legacy/objects", SourceKind::Legacy),
        ("exported", SourceKind::Directory),
    ];
    for (dir, kind) in cases {
        let sources = scan(&[corpus().join(dir)]);
        assert_eq!(sources.roots, [(corpus().join(dir), kind)], "{dir}");
        assert_eq!(pids(&sources), all, "{dir}");
        assert!(
            sources.duplicates.is_empty() && sources.skipped.is_empty(),
            "{dir}"
        );
        for entry in &sources.objects {
            assert_eq!(entry.kind, kind);
            assert_eq!(
                entry.read().unwrap().pid,
                entry.pid,
                "{}",
                entry.foxml.display()
            );
        }
    }
    let file = corpus().join("exported/demo_5.xml");
    let sources = scan(std::slice::from_ref(&file));
    assert_eq!(sources.roots, [(file.clone(), SourceKind::File)]);
    assert_eq!(sources.objects[0].pid, "demo:5");

    let ingest = scan(&[corpus().join("ingest")]);
    assert_eq!(ingest.objects.len(), 41);
}

#[test]
fn duplicate_pids_are_reported_and_the_first_kept() {
    let sources = scan(&[corpus().join("akubra"), corpus().join("legacy")]);
    assert_eq!(sources.objects.len(), 69);
    assert_eq!(sources.duplicates.len(), 69);
    assert!(sources.objects.iter().all(|o| o.kind == SourceKind::Akubra));
    for d in &sources.duplicates {
        assert!(d.kept.starts_with(corpus().join("akubra")), "{d:?}");
        assert!(d.ignored.starts_with(corpus().join("legacy")), "{d:?}");
    }
}

/// Resolves every INTERNAL_ID of a store's objects, checks the digests, and returns the
/// files resolved.
fn resolve_all(sources: &Sources) -> BTreeSet<PathBuf> {
    let mut resolved = BTreeSet::new();
    let mut digests = BTreeMap::<String, usize>::new();
    for entry in &sources.objects {
        let object = entry.read().unwrap();
        for ds in &object.datastreams {
            for version in &ds.versions {
                let Content::Internal(id) = &version.content else {
                    continue;
                };
                assert_eq!(ds.control_group, ControlGroup::Managed);
                let file = entry
                    .resolver
                    .resolve(id)
                    .unwrap_or_else(|e| panic!("{}: {e}", entry.foxml.display()));
                assert!(file.is_file(), "{}", file.display());
                if let Some(digest) = &version.digest {
                    if let Some(actual) = digest_of(digest, &std::fs::read(&file).unwrap()) {
                        // Upstream quirks: an empty DIGEST (inline-akubra's XACML) and
                        // the deliberately wrong one of legacyFS-invalid-checksum.
                        if !["", "invalid"].contains(&digest.value.as_str()) {
                            assert_eq!(actual, digest.value, "{id}");
                            *digests.entry(digest.kind.clone()).or_default() += 1;
                        }
                    }
                }
                resolved.insert(file);
            }
        }
    }
    resolved
}

#[test]
fn every_internal_id_resolves_and_matches_its_digest() {
    for (store, datastreams) in [("akubra", "datastreamStore"), ("legacy", "datastreams")] {
        let sources = scan(&[corpus().join(store)]);
        let resolved = resolve_all(&sources);
        let all: BTreeSet<PathBuf> = files_under(&corpus().join(store).join(datastreams))
            .into_iter()
            .collect();
        assert_eq!(all.len(), 41, "{store}");
        assert_eq!(resolved, all, "{store}: every datastream file is used");
    }
}

#[test]
fn akubra_names_and_hashed_directories_are_fedoras() {
    for store in ["objectStore", "datastreamStore"] {
        let dir = corpus().join("akubra").join(store);
        for file in files_under(&dir) {
            let name = file.file_name().unwrap().to_str().unwrap();
            let id = percent_encoding::percent_decode_str(name)
                .decode_utf8()
                .unwrap();
            assert_eq!(source::akubra_encode(&id), name);
            assert_eq!(dir.join(source::akubra_path(&id)), file);
        }
    }
    assert_eq!(
        source::akubra_encode("info:fedora/f3test:a.b-c~d_e"),
        "info%3Afedora%2Ff3test%3Aa.b-c%7Ed%5Fe"
    );
    assert_eq!(source::akubra_encode("a."), "a%2E");
}

#[test]
fn file_names_map_to_pids_and_internal_ids() {
    for (name, pid) in [
        ("info%3Afedora%2Ff3test%3Acaf%25C3%25A9", "f3test:caf%C3%A9"),
        ("f3test_caf%C3%A9", "f3test:caf%C3%A9"),
        ("f3test_a.b-c~d_e", "f3test:a.b-c~d_e"),
        ("f3-test.ns_1", "f3-test.ns:1"),
    ] {
        assert_eq!(
            source::pid_from_file_name(name).as_deref(),
            Some(pid),
            "{name}"
        );
    }
    assert_eq!(source::pid_from_file_name("README"), None);
    for (name, id) in [
        ("info%3Afedora%2Fdemo%3A5%2FDS1%2FDS1.0", "demo:5+DS1+DS1.0"),
        (
            "f3test_caf%C3%A9+TEXT+TEXT.0",
            "f3test:caf%C3%A9+TEXT+TEXT.0",
        ),
        ("example:1+DS2+DS2.0", "example:1+DS2+DS2.0"),
    ] {
        assert_eq!(
            source::internal_id_from_file_name(name).as_deref(),
            Some(id),
            "{name}"
        );
    }
}

#[test]
fn upstream_fixtures_resolve() {
    let root = corpus().join("upstream-migration-utils");
    let kinds = [
        ("akubraFS", SourceKind::Akubra),
        ("legacyFS", SourceKind::Legacy),
        ("legacyFS-multiple-versions", SourceKind::Legacy),
        ("legacyFS-out-of-order", SourceKind::Legacy),
        ("legacyFS-invalid-checksum", SourceKind::Legacy),
        // Akubra-named files in objects/ + datastreams/, hashed as dlmap/#/##/##.
        ("inline-akubra", SourceKind::Legacy),
        ("inline-invalid-akubra", SourceKind::Legacy),
        // Legacy objects, akubra datastreams.
        ("inline-disabled-akubra", SourceKind::Legacy),
        ("exported", SourceKind::Directory),
    ];
    let mut resolved = 0;
    for (fixture, kind) in kinds {
        let sources = scan(&[root.join(fixture)]);
        assert_eq!(sources.roots[0].1, kind, "{fixture}");
        assert!(
            !sources.objects.is_empty() && sources.skipped.is_empty(),
            "{fixture}"
        );
        resolved += resolve_all(&sources).len();
    }
    // 9 datastream files, 3 of them referenced by no object of their fixture (example:1's
    // DS2 in inline-akubra and inline-invalid-akubra, the XACML of inline-disabled-akubra).
    assert_eq!(resolved, 6);
}

#[test]
fn invalid_checksum_is_left_to_the_importer() {
    let sources = scan(&[corpus().join("upstream-migration-utils/legacyFS-invalid-checksum")]);
    let entry = &sources.objects[0];
    let object = entry.read().unwrap();
    let version = &object.datastream("DS2").unwrap().versions[0];
    let Content::Internal(id) = &version.content else {
        panic!()
    };
    let file = entry.resolver.resolve(id).unwrap();
    let digest = version.digest.as_ref().unwrap();
    assert_ne!(
        digest_of(digest, &std::fs::read(file).unwrap()).unwrap(),
        digest.value
    );
}

#[test]
fn errors() {
    let missing = corpus().join("no-such-dir");
    assert!(matches!(
        source::scan(&[missing]),
        Err(SourceError::NotFound(_))
    ));

    let resolver = Resolver::akubra(corpus().join("akubra/datastreamStore"));
    assert!(matches!(
        resolver.resolve("demo:5+DS1"),
        Err(ResolveError::Malformed(_))
    ));
    assert!(matches!(
        resolver.resolve("demo:5++DS1.0"),
        Err(ResolveError::Malformed(_))
    ));
    let e = resolver.resolve("demo:5+DS1+DS1.0").unwrap_err();
    assert!(matches!(e, ResolveError::Missing { .. }), "{e}");
    let e = Resolver::default().resolve("demo:5+DS1+DS1.0").unwrap_err();
    assert!(matches!(e, ResolveError::NoStore(_)), "{e}");
    let e = Resolver::legacy(corpus().join("nowhere"))
        .resolve("a:b+C+C.0")
        .unwrap_err();
    assert!(matches!(e, ResolveError::Index { .. }), "{e}");
}

#[test]
fn non_foxml_files_in_a_directory_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let copy = |from: &Path, to: &str| std::fs::copy(from, dir.path().join(to)).unwrap();
    copy(&corpus().join("exported/demo_5.xml"), "a.xml");
    copy(&corpus().join("README.md"), "README.md");
    std::fs::write(dir.path().join(".DS_Store"), b"").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    copy(&corpus().join("exported/demo_1.xml"), "sub/b.xml");
    let sources = scan(&[dir.path().to_owned()]);
    assert_eq!(
        pids(&sources),
        ["demo:1", "demo:5"].map(String::from).into()
    );
    assert_eq!(sources.skipped.len(), 1, "{:?}", sources.skipped);
    assert!(sources.skipped[0].0.ends_with("README.md"));
}
