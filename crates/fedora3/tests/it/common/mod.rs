//! Shared by the integration tests: the Fedora 3 corpus in the shared fixtures (`../shared/fedora3`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arca_fedora3::{ContentDigest, ControlGroup, DatastreamState};
use md5::Digest as _;

/// The corpus root (panics with a clear message when the shared fixtures are missing).
pub fn corpus() -> PathBuf {
    arca_testkit::shared().join("fedora3")
}

/// Every regular file under `dir`, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The FOXML files of the upstream migration-utils fixtures.
pub fn upstream_foxml() -> Vec<PathBuf> {
    let root = corpus().join("upstream-migration-utils");
    let mut out = Vec::new();
    for fixture in std::fs::read_dir(&root).unwrap() {
        let fixture = fixture.unwrap().path();
        for objects in ["objects", "objectStore"] {
            if fixture.join(objects).is_dir() {
                out.extend(files_under(&fixture.join(objects)));
            }
        }
        if fixture.ends_with("exported") {
            out.extend(files_under(&fixture));
        }
    }
    out.sort();
    out
}

/// One datastream of an `OBJECTS.tsv` summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedDatastream {
    pub id: String,
    pub control_group: ControlGroup,
    pub state: DatastreamState,
    pub versions: usize,
    pub versionable: bool,
}

/// One row of `OBJECTS.tsv`.
#[derive(Debug, Clone)]
pub struct ExpectedObject {
    pub pid: String,
    pub state: String,
    pub label: String,
    pub datastreams: Vec<ExpectedDatastream>,
}

/// `OBJECTS.tsv`, by PID.
pub fn expected_objects() -> BTreeMap<String, ExpectedObject> {
    let tsv = std::fs::read_to_string(corpus().join("OBJECTS.tsv")).unwrap();
    let mut out = BTreeMap::new();
    for line in tsv.lines().skip(1).filter(|l| !l.is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 6, "{line}");
        let datastreams: Vec<_> = cols[4].split(' ').map(expected_datastream).collect();
        assert_eq!(
            datastreams.len(),
            cols[3].parse::<usize>().unwrap(),
            "{line}"
        );
        let object = ExpectedObject {
            pid: cols[0].to_owned(),
            state: cols[1].to_owned(),
            label: cols[2].to_owned(),
            datastreams,
        };
        out.insert(object.pid.clone(), object);
    }
    out
}

/// `ID:<control group><state>[xN][nv]`.
fn expected_datastream(summary: &str) -> ExpectedDatastream {
    let (id, rest) = summary.rsplit_once(':').unwrap();
    let mut chars = rest.chars();
    let control_group = match chars.next().unwrap() {
        'X' => ControlGroup::InlineXml,
        'M' => ControlGroup::Managed,
        'E' => ControlGroup::External,
        'R' => ControlGroup::Redirect,
        other => panic!("control group {other} in {summary}"),
    };
    let state = match chars.next().unwrap() {
        'A' => DatastreamState::Active,
        'I' => DatastreamState::Inactive,
        'D' => DatastreamState::Deleted,
        other => panic!("state {other} in {summary}"),
    };
    let mut rest = chars.as_str();
    let versionable = match rest.strip_suffix("nv") {
        Some(r) => {
            rest = r;
            false
        }
        None => true,
    };
    let versions = match rest.strip_prefix('x') {
        Some(n) => n.parse().unwrap(),
        None => {
            assert!(rest.is_empty(), "{summary}");
            1
        }
    };
    ExpectedDatastream {
        id: id.to_owned(),
        control_group,
        state,
        versions,
        versionable,
    }
}

/// The hex digest of `bytes` for a checksummed `contentDigest`, `None` for kinds that are
/// not checksums (`DISABLED`).
pub fn digest_of(digest: &ContentDigest, bytes: &[u8]) -> Option<String> {
    Some(match digest.kind.as_str() {
        "MD5" => hex::encode(md5::Md5::digest(bytes)),
        "SHA-1" => hex::encode(sha1::Sha1::digest(bytes)),
        "SHA-256" => hex::encode(sha2::Sha256::digest(bytes)),
        "SHA-384" => hex::encode(sha2::Sha384::digest(bytes)),
        "SHA-512" => hex::encode(sha2::Sha512::digest(bytes)),
        _ => return None,
    })
}
