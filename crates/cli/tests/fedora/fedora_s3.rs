//! A root in S3 moves freely between Fedora 6.1 and arca: the real Fedora 6.1 webapp with
//! its S3 storage (`fcrepo.storage=ocfl-s3`) and arca write to the same bucket prefix of a
//! private MinIO in turns, and each serves what the other wrote. Fedora 6.1's ocfl-java
//! reads OCFL 1.0 only, so the declarations and inventory types are set back to 1.0 before
//! Fedora opens arca's root (as the local-root comparisons do); each Fedora start gets a fresh
//! home, so that its index (and ocfl-java's object cache) is rebuilt from the bucket.

use crate::common::fedora::{inventory_as_ocfl_1_0, Fedora};
use crate::common::{Arca, Http};
use arca_storage::{ObjectStorage, S3Credentials, S3Settings, S3Storage};
use arca_testkit::s3::{Minio, BUCKET, REGION, ROOT_PASSWORD, ROOT_USER};

const PREFIX: &str = "shared-root";
const FEDORA_AUTH: (&str, &str) = ("authorization", "Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4=");

fn fedora_properties(minio: &Minio) -> Vec<(String, String)> {
    [
        ("fcrepo.storage", "ocfl-s3".to_string()),
        ("fcrepo.aws.access-key", ROOT_USER.to_string()),
        ("fcrepo.aws.secret-key", ROOT_PASSWORD.to_string()),
        ("fcrepo.aws.region", REGION.to_string()),
        ("fcrepo.s3.endpoint", minio.endpoint()),
        ("fcrepo.s3.path.style.access", "true".to_string()),
        ("fcrepo.ocfl.s3.bucket", BUCKET.to_string()),
        ("fcrepo.ocfl.s3.prefix", PREFIX.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

async fn start_fedora(minio: &Minio) -> Option<Fedora> {
    let properties = fedora_properties(minio);
    let properties: Vec<(&str, &str)> = properties
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    Fedora::start_with(None, &properties).await
}

fn store(minio: &Minio) -> S3Storage {
    S3Storage::open_with_credentials(
        S3Settings {
            endpoint: Some(minio.endpoint()),
            bucket: BUCKET.to_string(),
            prefix: PREFIX.to_string(),
            region: REGION.to_string(),
            allow_http: true,
        },
        S3Credentials {
            access_key_id: ROOT_USER.to_string(),
            secret_access_key: ROOT_PASSWORD.to_string(),
            session_token: None,
        },
    )
    .expect("the bucket opens")
}

/// Turns the OCFL 1.1 root in `s3` into the OCFL 1.0 root Fedora 6.1's ocfl-java can read
/// (as [`common::fedora::declare_ocfl_1_0`] does on a local root): the declarations, and each
/// inventory's `type` with its sidecar.
fn declare_ocfl_1_0(s3: &S3Storage) {
    s3.put("0=ocfl_1.0", b"ocfl_1.0\n").unwrap();
    s3.delete("0=ocfl_1.1").unwrap();
    for file in s3.list("").unwrap() {
        if let Some(dir) = file.key.strip_suffix("0=ocfl_object_1.1") {
            s3.put(&format!("{dir}0=ocfl_object_1.0"), b"ocfl_object_1.0\n")
                .unwrap();
            s3.delete(&file.key).unwrap();
        } else if file.key.ends_with("/inventory.json") {
            let (text, algorithm, sidecar) = inventory_as_ocfl_1_0(
                &String::from_utf8(s3.read(&file.key).unwrap().bytes).unwrap(),
            );
            s3.put(&file.key, text.as_bytes()).unwrap();
            s3.put(&format!("{}.{algorithm}", file.key), sidecar.as_bytes())
                .unwrap();
        }
    }
}

async fn text(http: &Http, url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let r = http.request(hyper::Method::GET, url, headers, "").await;
    (r.status.as_u16(), r.text())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fedora_and_arca_take_turns_on_one_root_in_s3() {
    let Some(minio) = Minio::start() else {
        return;
    };
    let http = Http::new();
    let nt = ("accept", "application/n-triples");

    // Fedora writes first.
    let Some(mut fedora) = start_fedora(&minio).await else {
        return;
    };
    let put = |base: &str, path: &str| format!("{base}{path}");
    let r = http
        .request(
            hyper::Method::PUT,
            &put(&fedora.base, "/f1"),
            &[FEDORA_AUTH, ("content-type", "text/turtle")],
            "<> <http://purl.org/dc/terms/title> \"written by Fedora\" .",
        )
        .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    let r = http
        .request(
            hyper::Method::PUT,
            &put(&fedora.base, "/f1/bin"),
            &[FEDORA_AUTH, ("content-type", "text/plain")],
            "bytes from Fedora",
        )
        .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    fedora.stop();

    // arca, with an empty data directory, rebuilds from the bucket and serves it.
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("ARCA_S3_BUCKET", BUCKET.to_string()),
        ("ARCA_S3_ENDPOINT", minio.endpoint()),
        ("ARCA_S3_PREFIX", PREFIX.to_string()),
        ("AWS_ACCESS_KEY_ID", ROOT_USER.to_string()),
        ("AWS_SECRET_ACCESS_KEY", ROOT_PASSWORD.to_string()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let arca = Arca::serve_with(&dir.path().join("data"), &env);
    let (status, body) = text(&http, &arca.url("/f1"), &[nt]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"written by Fedora\""), "{body}");
    let (status, body) = text(&http, &arca.url("/f1/bin"), &[]).await;
    assert_eq!((status, body.as_str()), (200, "bytes from Fedora"));
    // ... and writes into Fedora's object and a new one.
    let r = http
        .request(
            hyper::Method::PUT,
            &arca.url("/f1"),
            &[
                ("content-type", "text/turtle"),
                ("prefer", "handling=lenient; received=\"minimal\""),
            ],
            "<> <http://purl.org/dc/terms/title> \"changed by arca\" .",
        )
        .await;
    assert!(r.status.is_success(), "{} {}", r.status, r.text());
    let r = http
        .request(
            hyper::Method::PUT,
            &arca.url("/a1"),
            &[("content-type", "text/plain")],
            "bytes from arca",
        )
        .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    arca.stop();

    // Fedora 6.1 reads OCFL 1.0 roots only: the declaration goes back to 1.0 (what
    // ocfl-java would do is upgrade it; arca, as ocfl-java, upgrades on open).
    declare_ocfl_1_0(&store(&minio));
    let Some(fedora) = start_fedora(&minio).await else {
        return;
    };
    let (status, body) = text(&http, &put(&fedora.base, "/f1"), &[FEDORA_AUTH, nt]).await;
    assert_eq!(status, 200, "{body}\n{}", fedora.log_tail());
    assert!(
        body.contains("\"changed by arca\"") && !body.contains("written by Fedora"),
        "{body}"
    );
    let (status, body) = text(&http, &put(&fedora.base, "/f1/bin"), &[FEDORA_AUTH]).await;
    assert_eq!((status, body.as_str()), (200, "bytes from Fedora"));
    let (status, body) = text(&http, &put(&fedora.base, "/a1"), &[FEDORA_AUTH]).await;
    assert_eq!((status, body.as_str()), (200, "bytes from arca"));
    let (status, body) = text(
        &http,
        &put(&fedora.base, "/f1/fcr:versions"),
        &[FEDORA_AUTH, ("accept", "application/link-format")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body.matches("rel=\"memento\"").count(),
        2,
        "Fedora's version and arca's: {body}"
    );
}
