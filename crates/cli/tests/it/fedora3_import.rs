//! `arca import fedora3` against the Fedora 3.8.1 corpus in `../shared/fedora3`: every
//! object, datastream and version arrives, checksums are verified, the root is valid OCFL
//! (ocfl-py) and served by arca; bad objects fail whole and are reported; an import killed
//! midway resumes; `--verify` finds a changed byte.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use arca_testkit::TestServer;
use hyper::StatusCode;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common;

/// The Fedora 3 corpus in the shared fixtures (a clear panic when they are missing).
fn corpus() -> PathBuf {
    arca_testkit::shared().join("fedora3")
}

fn arca_import(data: &Path, args: &[&str], sources: &[&Path]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arca"));
    cmd.args(["import", "fedora3", "--data"])
        .arg(data)
        .args(args);
    cmd.args(sources);
    common::scrub_env(&mut cmd);
    cmd.output().expect("arca import runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The akubra datastream file of `pid`'s datastream version `version`.
fn akubra_datastream(pid: &str, ds: &str, version: &str) -> Vec<u8> {
    let name = format!("info:fedora/{pid}/{ds}/{version}")
        .replace(':', "%3A")
        .replace('/', "%2F");
    let store = corpus().join("akubra/datastreamStore");
    for dir in fs::read_dir(&store).unwrap() {
        let file = dir.unwrap().path().join(&name);
        if file.is_file() {
            return fs::read(file).unwrap();
        }
    }
    panic!("{name} is not in {}", store.display());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_corpus_arrives_whole_verified_and_servable() {
    let data = tempfile::tempdir().unwrap();
    let report_file = data.path().join("report.json");
    let akubra = corpus().join("akubra");
    let out = arca_import(
        data.path(),
        &["--report", report_file.to_str().unwrap()],
        &[&akubra],
    );
    let log = text(&out);
    assert!(out.status.success(), "import failed:\n{log}");
    // OBJECTS.tsv: 69 objects; the README: 317 datastream versions.
    assert!(
        log.contains("imported 69 objects (299 datastreams, 317 datastream versions"),
        "{log}"
    );
    let report: Value = serde_json::from_slice(&fs::read(&report_file).unwrap()).unwrap();
    let objects = report["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 69);
    assert!(objects.iter().all(|o| o["outcome"] == "imported"));
    // Every managed datastream's recorded checksum was compared with the imported bytes,
    // for each of the five algorithms of f3test:checksums.
    let checks: Vec<&Value> = objects
        .iter()
        .flat_map(|o| o["datastreams"].as_array().unwrap())
        .filter(|d| d["control_group"] == "M")
        .flat_map(|d| d["checksums"].as_array().unwrap())
        .collect();
    for kind in ["MD5", "SHA-1", "SHA-256", "SHA-384", "SHA-512"] {
        assert!(
            checks.iter().any(|c| c["fedora3_type"] == kind
                && c["status"] == "match"
                && c["fedora3_digest"] == c["imported_digest"]),
            "no verified {kind} checksum in the report"
        );
    }
    // Fedora 3 writes no contentDigest when checksums are disabled.
    let disabled = objects
        .iter()
        .flat_map(|o| o["datastreams"].as_array().unwrap())
        .find(|d| d["id"] == "CS_DISABLED")
        .unwrap();
    assert_eq!(disabled["checksums"][0]["status"], "not-recorded");
    assert!(!checks.iter().any(|c| c["status"] == "mismatch"));

    // Valid OCFL, every object.
    let root = data.path().join("ocfl-root");
    if let Some(n) = common::validate_with_ocfl_py(&root) {
        assert_eq!(n, 69 + 1, "the objects and the repository's root");
    }
    common::assert_staging_clean(data.path());

    // --verify re-reads everything against the source; --resume skips what is there;
    // importing again without it refuses every object and changes nothing.
    let out = arca_import(data.path(), &["--verify"], &[&akubra]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("verified 69 objects: 69 as the source says"));
    let out = arca_import(data.path(), &["--resume"], &[&akubra]);
    assert!(
        text(&out).contains("69 skipped, 0 failed"),
        "{}",
        text(&out)
    );
    let out = arca_import(data.path(), &["--continue-on-error"], &[&akubra]);
    assert!(!out.status.success());
    assert!(text(&out).contains("69 failed"), "{}", text(&out));
    assert!(text(&out).contains("already in the repository"));

    // Served by arca through the Fedora API.
    let arca = TestServer::start_at(data.path()).await;
    let http = common::Http::new();
    // The last of f3test:versioned's four JPEG versions, byte for byte, and its history.
    let obj = http.get(&arca.url("f3test:versioned/OBJ"), &[]).await;
    assert_eq!(obj.status, StatusCode::OK);
    assert_eq!(
        sha256(&obj.body),
        sha256(&akubra_datastream("f3test:versioned", "OBJ", "OBJ.3"))
    );
    assert_eq!(obj.header("content-type"), Some("image/jpeg"));
    let timemap = http
        .get(
            &arca.url("f3test:versioned/OBJ/fcr:versions"),
            &[("Accept", "application/link-format")],
        )
        .await
        .text();
    let mementos: Vec<&str> = timemap
        .lines()
        .filter(|l| l.contains("rel=\"memento\""))
        .collect();
    assert_eq!(mementos.len(), 4, "{timemap}");
    let first = mementos[0]
        .split('<')
        .nth(1)
        .and_then(|s| s.split('>').next())
        .unwrap();
    let old = http.get(first, &[]).await;
    assert_eq!(
        sha256(&old.body),
        sha256(&akubra_datastream("f3test:versioned", "OBJ", "OBJ.0"))
    );
    // The object's triples: properties, DC, RELS-EXT.
    let object = http
        .get(&arca.url("demo:5"), &[("Accept", "application/n-triples")])
        .await
        .text();
    for needle in [
        "fedora-system:def/model#state> \"Active\"",
        "<http://purl.org/dc/elements/1.1/title>",
        "fedora-system:def/model#hasModel>",
    ] {
        assert!(object.contains(needle), "{needle} missing from:\n{object}");
    }
    assert!(http.get(&arca.url("demo:5"), &[]).await.has_link(
        "http://fedora.info/definitions/v4/repository#ArchivalGroup",
        "type"
    ));
    // The datastream description keeps Fedora 3's attributes.
    let description = http
        .get(
            &arca.url("f3test:checksums/CS_SHA384/fcr:metadata"),
            &[("Accept", "application/n-triples")],
        )
        .await;
    assert_eq!(description.status, StatusCode::OK);
    assert!(
        description.text().contains("DIGEST_TYPE> \"SHA-384\""),
        "{}",
        description.text()
    );
    // Deleted objects and datastreams are tombstones.
    assert_eq!(
        http.get(&arca.url("f3test:deleted"), &[]).await.status,
        StatusCode::GONE
    );
    assert_eq!(
        http.get(&arca.url("f3test:dsstates/DELETED_DS"), &[])
            .await
            .status,
        StatusCode::GONE
    );
    assert_eq!(
        http.get(&arca.url("f3test:dsstates/INACTIVE_DS"), &[])
            .await
            .status,
        StatusCode::OK
    );
    // External content stays a reference, never fetched.
    let redirect = http.get(&arca.url("f3test:external/REDIRECT"), &[]).await;
    assert!(redirect.status.is_redirection(), "{}", redirect.status);
    drop(arca);
}

/// A FOXML document of one object with one inline datastream and `extra` datastreams.
fn foxml(pid: &str, extra: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<foxml:digitalObject VERSION="1.1" PID="{pid}" xmlns:foxml="info:fedora/fedora-system:def/foxml#">
<foxml:objectProperties>
<foxml:property NAME="info:fedora/fedora-system:def/model#state" VALUE="Active"/>
<foxml:property NAME="info:fedora/fedora-system:def/model#label" VALUE="test"/>
<foxml:property NAME="info:fedora/fedora-system:def/model#createdDate" VALUE="2020-01-01T00:00:00.000Z"/>
<foxml:property NAME="info:fedora/fedora-system:def/view#lastModifiedDate" VALUE="2020-01-02T00:00:00.000Z"/>
</foxml:objectProperties>
<foxml:datastream ID="DC" STATE="A" CONTROL_GROUP="X" VERSIONABLE="true">
<foxml:datastreamVersion ID="DC.0" LABEL="DC" CREATED="2020-01-01T00:00:00.000Z" MIMETYPE="text/xml">
<foxml:xmlContent><oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>t</dc:title></oai_dc:dc></foxml:xmlContent>
</foxml:datastreamVersion>
</foxml:datastream>
{extra}
</foxml:digitalObject>
"#
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_objects_fail_whole_and_the_rest_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("good.xml"), foxml("test:good", "")).unwrap();
    let full = foxml("test:cut", "");
    fs::write(src.join("truncated.xml"), &full[..full.len() / 2]).unwrap();
    let datastream = |group: &str, content: &str| {
        format!(
            r#"<foxml:datastream ID="X1" STATE="A" CONTROL_GROUP="{group}" VERSIONABLE="true">
<foxml:datastreamVersion ID="X1.0" LABEL="x" CREATED="2020-01-01T00:00:01.000Z" MIMETYPE="application/octet-stream">
{content}
</foxml:datastreamVersion></foxml:datastream>"#
        )
    };
    fs::write(
        src.join("group.xml"),
        foxml(
            "test:group",
            &datastream("Z", "<foxml:binaryContent>AAAA</foxml:binaryContent>"),
        ),
    )
    .unwrap();
    fs::write(
        src.join("url.xml"),
        foxml(
            "test:url",
            &datastream(
                "E",
                r#"<foxml:contentLocation TYPE="URL" REF="not a url"/>"#,
            ),
        ),
    )
    .unwrap();
    fs::write(
        src.join("checksum.xml"),
        foxml(
            "test:checksum",
            &datastream(
                "M",
                r#"<foxml:contentDigest TYPE="MD5" DIGEST="00000000000000000000000000000000"/><foxml:binaryContent>aGVsbG8=</foxml:binaryContent>"#,
            ),
        ),
    )
    .unwrap();
    fs::write(src.join("pid.xml"), foxml("no pid here", "")).unwrap();
    // A store whose managed content file is missing.
    let store = dir.path().join("store");
    fs::create_dir_all(store.join("objects/2020")).unwrap();
    fs::create_dir_all(store.join("datastreams/2020")).unwrap();
    fs::write(
        store.join("objects/2020/test_missing"),
        foxml(
            "test:missing",
            &datastream(
                "M",
                r#"<foxml:contentLocation TYPE="INTERNAL_ID" REF="test:missing+X1+X1.0"/>"#,
            ),
        ),
    )
    .unwrap();

    let data = dir.path().join("data");
    let report = dir.path().join("report.json");
    let out = arca_import(
        &data,
        &["--continue-on-error", "--report", report.to_str().unwrap()],
        &[&src, &store],
    );
    let log = text(&out);
    assert!(!out.status.success(), "failures must fail the run:\n{log}");
    let report: Value = serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
    let reason_of = |needle: &str| -> String {
        report["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["source"].as_str().unwrap().contains(needle))
            .unwrap_or_else(|| panic!("{needle} is not in the report:\n{report:#}"))["reason"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    for (file, why) in [
        ("truncated.xml", ""),
        ("group.xml", "Z"),
        ("url.xml", "not a URL"),
        ("checksum.xml", "checksum mismatch"),
        ("test_missing", "not in the datastream store"),
    ] {
        let reason = reason_of(file);
        assert!(
            !reason.is_empty() && reason.contains(why),
            "{file}: {reason:?}"
        );
    }
    // The PID that cannot be an id is refused when scanning or when reading.
    assert!(log.contains("no pid here"), "{log}");
    assert_eq!(report["totals"]["imported"], 1, "{report:#}");
    // Nothing of a failed object was written: the repository's root and the good object,
    // staging empty.
    let root = data.join("ocfl-root");
    assert_eq!(
        common::object_dirs(&root).len(),
        2,
        "{report:#}\n{:?}",
        common::object_dirs(&root)
    );
    common::assert_staging_clean(&data);

    // Without --continue-on-error the run stops cleanly at the first failure: what was
    // imported is whole, nothing else is there.
    let data2 = dir.path().join("data2");
    let out = arca_import(&data2, &["--chunk", "1"], &[&src]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("stopped at the first failure"),
        "{}",
        text(&out)
    );
    for object in common::object_dirs(&data2.join("ocfl-root")) {
        common::check_object(&data2.join("ocfl-root"), &object);
    }
    common::assert_staging_clean(&data2);
}

/// The archive exports of the corpus, `copies` times, each copy's PIDs in renamed
/// namespaces (`demo:5` → `demo-r3:5`), written to `dir`.
fn replicate(dir: &Path, copies: usize) {
    let exported = corpus().join("exported");
    let files: Vec<(String, String)> = fs::read_dir(&exported)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    let namespaces: std::collections::BTreeSet<String> = files
        .iter()
        .filter_map(|(_, t)| {
            let pid = t.split("PID=\"").nth(1)?.split('"').next()?;
            Some(pid.split(':').next()?.to_string())
        })
        .collect();
    fs::create_dir_all(dir).unwrap();
    for n in 0..copies {
        // The vocabulary lives in `fedora-system`: its objects are not copied.
        for (name, text) in files
            .iter()
            .filter(|(_, t)| !t.contains("PID=\"fedora-system:"))
        {
            let mut t = text.clone();
            for ns in namespaces.iter().filter(|ns| *ns != "fedora-system") {
                for prefix in ["PID=\"", "info:fedora/"] {
                    t = t.replace(&format!("{prefix}{ns}:"), &format!("{prefix}{ns}-r{n}:"));
                }
            }
            fs::write(dir.join(format!("r{n}-{name}")), t).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_import_killed_midway_resumes_to_a_whole_root() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    replicate(&src, 8);
    let data = dir.path().join("data");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arca"));
    cmd.args(["import", "fedora3", "--chunk", "16", "--data"])
        .arg(&data)
        .arg(&src)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    common::scrub_env(&mut cmd);
    let mut child = cmd.spawn().unwrap();
    // Kill it once some objects are in the root.
    let root = data.join("ocfl-root");
    let started = Instant::now();
    while count_objects(&root) < 40 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    let _ = child.wait();
    let before = count_objects(&root);
    assert!(before <= 8 * 65, "the import finished before it was killed");
    // Every object in the root is whole.
    for object in common::object_dirs(&root) {
        common::check_object(&root, &object);
    }
    let out = arca_import(&data, &["--resume"], &[&src]);
    let log = text(&out);
    assert!(out.status.success(), "{log}");
    // The imported objects and the repository's root.
    assert_eq!(common::object_dirs(&root).len(), 8 * 65 + 1);
    let out = arca_import(&data, &["--verify"], &[&src]);
    assert!(
        text(&out).contains(&format!(
            "verified {} objects: {} as the source says",
            8 * 65,
            8 * 65
        )),
        "{}",
        text(&out)
    );
    // The catalog knows every object, the ones imported before the kill included.
    let arca = TestServer::start_at(&data).await;
    let http = common::Http::new();
    for pid in ["demo-r0:5", "demo-r7:5", "f3test-r3:versioned"] {
        assert_eq!(
            http.get(&arca.url(pid), &[]).await.status,
            StatusCode::OK,
            "{pid}"
        );
    }
    drop(arca);
}

#[tokio::test(flavor = "multi_thread")]
async fn verify_finds_a_changed_byte() {
    let data = tempfile::tempdir().unwrap();
    let exported = corpus().join("exported");
    let out = arca_import(data.path(), &[], &[&exported]);
    assert!(out.status.success(), "{}", text(&out));
    // Flip one byte of a stored content file.
    let root = data.path().join("ocfl-root");
    let dir = common::object_dir(&root, "info:fedora/f3test:versioned");
    let victim = common::relative_files(&dir)
        .into_iter()
        .find(|p| p.ends_with("/OBJ"))
        .map(|p| dir.join(p))
        .unwrap();
    let mut bytes = fs::read(&victim).unwrap();
    bytes[100] ^= 1;
    fs::write(&victim, bytes).unwrap();
    let out = arca_import(data.path(), &["--verify"], &[&exported]);
    assert!(!out.status.success());
    let log = text(&out);
    assert!(
        log.contains("68 as the source says, 1 with differences"),
        "{log}"
    );
    assert!(
        log.contains("f3test:versioned") && log.contains("OBJ"),
        "{log}"
    );
}

/// How many objects are below `root` now (tolerating a root being written meanwhile).
fn count_objects(root: &Path) -> usize {
    fn walk(dir: &Path) -> usize {
        if dir.join("0=ocfl_object_1.1").is_file() {
            return 1;
        }
        fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| walk(&e.path()))
                    .sum()
            })
            .unwrap_or(0)
    }
    walk(root)
}

/// Fedora 6.1 opens a root arca imported (declared OCFL 1.0 first, the only thing its
/// ocfl-java knows; see `fedora_sha256.rs`) and serves the imported objects as arca does:
/// the same statuses, bytes of binaries, and mementos.
#[tokio::test(flavor = "multi_thread")]
async fn fedora6_serves_an_imported_root_as_arca_does() {
    let data = tempfile::tempdir().unwrap();
    let out = arca_import(data.path(), &[], &[&corpus().join("akubra")]);
    assert!(out.status.success(), "{}", text(&out));
    let for_fedora = tempfile::tempdir().unwrap();
    common::copy_tree(&data.path().join("ocfl-root"), for_fedora.path());
    common::fedora::declare_ocfl_1_0(for_fedora.path());
    let Some(fedora) = common::fedora::Fedora::start_with(Some(for_fedora.path()), &[]).await
    else {
        return;
    };
    // Fedora rebuilt its index from the root and accepted every object.
    let log = std::fs::read_to_string(fedora.dir().join("fedora.log")).unwrap_or_default();
    assert!(
        log.contains("Index rebuild completed 70 objects successfully and 0 objects had errors"),
        "Fedora did not accept every imported object:\n{}",
        fedora.log_tail()
    );
    let arca = TestServer::start_at(data.path()).await;
    let http = common::Http::new();
    let auth = [("Authorization", common::fedora::AUTHORIZATION)];
    let paths = [
        "demo:5",
        "demo:5/DS1",
        "f3test:versioned/OBJ",
        "f3test:versioned/OBJ/fcr:metadata",
        "f3test:versioned/MODS",
        "f3test:unicode/ds.with-dash_and.dot",
        "f3test:checksums/CS_SHA384",
        "f3test:relsint/OBJ",
        "f3test:deleted",
        "f3test:dsstates/DELETED_DS",
        "f3test:dsstates/INACTIVE_DS",
        "example:1/DS1",
    ];
    let mut compared = 0;
    for path in paths {
        let ours = http.get(&arca.url(path), &[]).await;
        let theirs = http.get(&format!("{}/{path}", fedora.base), &auth).await;
        assert_eq!(ours.status, theirs.status, "{path}:\n{}", fedora.log_tail());
        if ours.status == StatusCode::OK && !path.ends_with("fcr:metadata") && path.contains('/') {
            assert_eq!(
                sha256(&ours.body),
                sha256(&theirs.body),
                "{path}: bytes differ"
            );
            assert_eq!(
                ours.header("content-type"),
                theirs.header("content-type"),
                "{path}"
            );
        }
        compared += 1;
    }
    // The same mementos of a versioned datastream.
    let memento_dates = |body: String| -> Vec<String> {
        let mut v: Vec<String> = body
            .lines()
            .filter(|l| l.contains("rel=\"memento\""))
            .filter_map(|l| l.split("datetime=\"").nth(1))
            .map(|d| d.trim_end_matches(['"', ',']).to_string())
            .collect();
        v.sort();
        v
    };
    let link = [("Accept", "application/link-format")];
    let ours = memento_dates(
        http.get(&arca.url("f3test:versioned/OBJ/fcr:versions"), &link)
            .await
            .text(),
    );
    let theirs = memento_dates(
        http.get(
            &format!("{}/f3test:versioned/OBJ/fcr:versions", fedora.base),
            &[link[0], auth[0]],
        )
        .await
        .text(),
    );
    assert_eq!(ours.len(), 4);
    assert_eq!(ours, theirs);
    eprintln!("Fedora 6.1 serves {compared} imported resources and a TimeMap as arca does");
}

/// `--url`: the objects go to a running arca, one request each, all or nothing per object;
/// only an administrator may import; `--resume` skips what is there; the result is the
/// same root an offline import makes (`--verify` against it afterwards).
#[tokio::test(flavor = "multi_thread")]
async fn objects_go_into_a_running_arca() {
    let data = tempfile::tempdir().unwrap();
    let arca = TestServer::start_at(data.path()).await;
    let akubra = corpus().join("akubra");
    let remote = |extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_arca"));
        cmd.args(["import", "fedora3", "--url", &arca.base])
            .args(extra)
            .arg(&akubra);
        common::scrub_env(&mut cmd);
        cmd.output().expect("arca import runs")
    };
    // Anonymous: refused, nothing imported.
    let out = remote(&[]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("0 skipped, 69 failed"),
        "{}",
        text(&out)
    );
    let http = common::Http::new();
    assert_eq!(
        http.get(&arca.url("demo:5"), &[]).await.status,
        StatusCode::NOT_FOUND
    );
    let out = remote(&["--auth", "fedoraAdmin:fedoraAdmin"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("imported 69 objects into"),
        "{}",
        text(&out)
    );
    let obj = http.get(&arca.url("f3test:versioned/OBJ"), &[]).await;
    assert_eq!(
        sha256(&obj.body),
        sha256(&akubra_datastream("f3test:versioned", "OBJ", "OBJ.3"))
    );
    // Found by search and by the Fedora 3 facade, which follow the change log.
    let profile = http
        .get(
            &format!(
                "{}/fedora/objects/demo:5?format=xml",
                arca.base.trim_end_matches("/rest")
            ),
            &[],
        )
        .await;
    assert_eq!(profile.status, StatusCode::OK, "{}", profile.text());
    let out = remote(&["--auth", "fedoraAdmin:fedoraAdmin", "--resume"]);
    assert!(
        text(&out).contains("69 skipped, 0 failed"),
        "{}",
        text(&out)
    );
    let out = remote(&["--auth", "fedoraAdmin:fedoraAdmin"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("already in the repository"),
        "{}",
        text(&out)
    );
    // The offline command opens the same data directory: the server must have stopped
    // (dropping it only signals the stop, and its shutdown raced the command's replay).
    arca.stop().await;
    let out = arca_import(data.path(), &["--verify"], &[&akubra]);
    assert!(
        text(&out).contains("verified 69 objects: 69 as the source says"),
        "{}",
        text(&out)
    );
}
