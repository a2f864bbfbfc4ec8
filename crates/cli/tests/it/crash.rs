//! Durability: the real `arca serve` is SIGKILLed in the middle of a concurrent ingest,
//! restarted on the same data directory, and must still hold every resource it
//! acknowledged, byte for byte, in a valid root with nothing left in staging; its catalog
//! must agree with storage, the membership and reference rows derived from it included. The
//! same with sha256 objects, recovered by a server whose new objects get sha512 (a mixed
//! root). A client that disconnects in the middle of an upload leaves nothing behind.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arca_testkit::TestServer;
use bytes::Bytes;
use hyper::{Method, StatusCode};
use rand::{Rng, RngCore, SeedableRng};
use tokio::io::AsyncWriteExt;

use crate::common;
use crate::common::{digest_hex, object_dir, sha512_hex, Arca, Http};

const WRITERS: u64 = 16;
/// Writers adding members to (and deleting them from) the direct container `dc`, whose
/// membership resource `mr` each member also refers to.
const MEMBER_WRITERS: u64 = 2;
const DC_HAS_PART: &str = "http://purl.org/dc/terms/hasPart";
const DC_RELATION: &str = "http://purl.org/dc/terms/relation";

/// A resource whose creation got a 2xx answer, and what later answered changes did.
#[derive(Debug, Clone)]
enum Acked {
    Container {
        path: String,
        /// A PATCH adding a triple was acknowledged.
        patched: bool,
    },
    Binary {
        path: String,
        /// SHA-512 of the last acknowledged bytes.
        sha512: String,
        /// Of a replacement in flight when the server died: either bytes may be there.
        or: Option<String>,
    },
    /// A container created (acknowledged) to be deleted and purged.
    Doomed { path: String, stage: Doom },
    /// A member of `dc`, and whether its deletion was sent or acknowledged.
    Member { path: String, stage: Option<Doom> },
}

/// How far the deletion of a [`Acked::Doomed`] container got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Doom {
    /// DELETE sent, not answered: live or tombstone.
    DeleteSent,
    /// DELETE acknowledged, purge sent and not answered: tombstone or gone.
    PurgeSent,
    /// Purge acknowledged: gone.
    Purged,
}

#[derive(Default)]
struct Ingest {
    acked: Vec<Acked>,
    /// Answers that were neither 2xx nor a transport error (a killed server gives the
    /// latter): always a bug.
    bad: Vec<String>,
}

impl Ingest {
    fn ack(&mut self, a: Acked) -> usize {
        self.acked.push(a);
        self.acked.len() - 1
    }
}

const PATCH: &str = "INSERT DATA { <> <http://purl.org/dc/terms/description> \"patched\" }";

/// Until `stop` or the server goes away: POST a container, PUT a binary of random size
/// (1 KiB – 2 MiB) into it, replace the binary (new OCFL version), PATCH the container
/// (new OCFL version); POST another container, DELETE it (tombstone) and purge it.
async fn writer(
    http: Http,
    base: String,
    seed: u64,
    stop: Arc<AtomicBool>,
    out: Arc<Mutex<Ingest>>,
) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut random_bytes = |max: usize| {
        let mut bytes = vec![0u8; rng.random_range(1024..=max)];
        rng.fill_bytes(&mut bytes);
        bytes
    };
    let bad = |msg: String| out.lock().unwrap().bad.push(msg);
    while !stop.load(Ordering::Relaxed) {
        let Ok(r) = http
            .try_request(
                Method::POST,
                &base,
                &[("content-type", "text/turtle")],
                "<> <http://purl.org/dc/terms/title> \"crash test\" .",
            )
            .await
        else {
            return;
        };
        if r.status != StatusCode::CREATED {
            return bad(format!("POST: {} {}", r.status, r.text()));
        }
        let location = r.header("location").unwrap_or_default().to_string();
        let Some(path) = location.strip_prefix(&base).map(str::to_string) else {
            return bad(format!("Location {location:?} is not below {base}"));
        };
        let container = out.lock().unwrap().ack(Acked::Container {
            path: path.clone(),
            patched: false,
        });

        let bin = format!("{path}/bin");
        let bytes = random_bytes(2 << 20);
        let sha512 = sha512_hex(&bytes);
        let octets = [("content-type", "application/octet-stream")];
        let Ok(r) = http
            .try_request(Method::PUT, &format!("{base}{bin}"), &octets, bytes)
            .await
        else {
            return;
        };
        if r.status != StatusCode::CREATED {
            return bad(format!("PUT {bin}: {} {}", r.status, r.text()));
        }
        let binary = out.lock().unwrap().ack(Acked::Binary {
            path: bin.clone(),
            sha512,
            or: None,
        });

        let bytes = random_bytes(256 << 10);
        let replacement = sha512_hex(&bytes);
        if let Acked::Binary { or, .. } = &mut out.lock().unwrap().acked[binary] {
            *or = Some(replacement.clone());
        }
        let Ok(r) = http
            .try_request(Method::PUT, &format!("{base}{bin}"), &octets, bytes)
            .await
        else {
            return;
        };
        if r.status != StatusCode::NO_CONTENT {
            return bad(format!("PUT {bin} again: {} {}", r.status, r.text()));
        }
        if let Acked::Binary { sha512, or, .. } = &mut out.lock().unwrap().acked[binary] {
            *sha512 = replacement;
            *or = None;
        }

        let sparql = [("content-type", "application/sparql-update")];
        let Ok(r) = http
            .try_request(Method::PATCH, &format!("{base}{path}"), &sparql, PATCH)
            .await
        else {
            return;
        };
        if r.status != StatusCode::NO_CONTENT {
            return bad(format!("PATCH {path}: {} {}", r.status, r.text()));
        }
        if let Acked::Container { patched, .. } = &mut out.lock().unwrap().acked[container] {
            *patched = true;
        }

        let Ok(r) = http.try_request(Method::POST, &base, &[], "").await else {
            return;
        };
        let location = r.header("location").unwrap_or_default().to_string();
        let (StatusCode::CREATED, Some(path)) = (r.status, location.strip_prefix(&base)) else {
            return bad(format!("POST: {} {location}", r.status));
        };
        let path = path.to_string();
        let doomed = out.lock().unwrap().ack(Acked::Doomed {
            path: path.clone(),
            stage: Doom::DeleteSent,
        });
        let Ok(r) = http
            .try_request(Method::DELETE, &format!("{base}{path}"), &[], "")
            .await
        else {
            return;
        };
        if r.status != StatusCode::NO_CONTENT {
            return bad(format!("DELETE {path}: {} {}", r.status, r.text()));
        }
        let set = |stage: Doom| {
            out.lock().unwrap().acked[doomed] = Acked::Doomed {
                path: path.clone(),
                stage,
            };
        };
        set(Doom::PurgeSent);
        let r = http
            .try_request(
                Method::DELETE,
                &format!("{base}{path}/fcr:tombstone"),
                &[],
                "",
            )
            .await;
        let Ok(r) = r else { return };
        if r.status != StatusCode::NO_CONTENT {
            return bad(format!("purge {path}: {} {}", r.status, r.text()));
        }
        set(Doom::Purged);
    }
}

/// Adds members to `dc` (each referring to `mr`) and deletes every third one.
async fn member_writer(http: Http, base: String, stop: Arc<AtomicBool>, out: Arc<Mutex<Ingest>>) {
    let bad = |msg: String| out.lock().unwrap().bad.push(msg);
    let body = format!("<> <{DC_RELATION}> <{base}/mr> .");
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Ok(r) = http
            .try_request(
                Method::POST,
                &format!("{base}/dc"),
                &[("content-type", "text/turtle")],
                body.clone(),
            )
            .await
        else {
            return;
        };
        let location = r.header("location").unwrap_or_default().to_string();
        let (StatusCode::CREATED, Some(path)) = (r.status, location.strip_prefix(&base)) else {
            return bad(format!("POST dc: {} {}", r.status, r.text()));
        };
        let path = path.to_string();
        let member = out.lock().unwrap().ack(Acked::Member {
            path: path.clone(),
            stage: None,
        });
        n += 1;
        if !n.is_multiple_of(3) {
            continue;
        }
        out.lock().unwrap().acked[member] = Acked::Member {
            path: path.clone(),
            stage: Some(Doom::DeleteSent),
        };
        let Ok(r) = http
            .try_request(Method::DELETE, &format!("{base}{path}"), &[], "")
            .await
        else {
            return;
        };
        if r.status != StatusCode::NO_CONTENT {
            return bad(format!("DELETE {path}: {} {}", r.status, r.text()));
        }
        out.lock().unwrap().acked[member] = Acked::Member {
            path,
            stage: Some(Doom::Purged),
        };
    }
}

/// Creates the membership resource `mr` and the direct container `dc` the member writers use.
async fn create_membership(arca: &Arca) {
    let http = Http::new();
    let r = http
        .request(
            Method::PUT,
            &arca.url("/mr"),
            &[("content-type", "text/turtle")],
            "",
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "PUT mr: {}", r.text());
    let ldp = "http://www.w3.org/ns/ldp#";
    let settings = format!(
        "<> <{ldp}membershipResource> <{}> ; <{ldp}hasMemberRelation> <{DC_HAS_PART}> .",
        arca.url("/mr")
    );
    let link = format!("<{ldp}DirectContainer>; rel=\"type\"");
    let r = http
        .request(
            Method::PUT,
            &arca.url("/dc"),
            &[("content-type", "text/turtle"), ("link", link.as_str())],
            settings,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "PUT dc: {}", r.text());
}

/// Runs the ingest against `arca` and SIGKILLs it after `kill_after`.
async fn ingest_then_kill(arca: Arca, kill_after: Duration, round: u64) -> Ingest {
    let http = Http::new();
    let stop = Arc::new(AtomicBool::new(false));
    let out = Arc::new(Mutex::new(Ingest::default()));
    let mut tasks: Vec<_> = (0..WRITERS)
        .map(|i| {
            tokio::spawn(writer(
                http.clone(),
                arca.base.clone(),
                round * 1000 + i,
                stop.clone(),
                out.clone(),
            ))
        })
        .collect();
    tasks.extend((0..MEMBER_WRITERS).map(|_| {
        tokio::spawn(member_writer(
            http.clone(),
            arca.base.clone(),
            stop.clone(),
            out.clone(),
        ))
    }));
    // Count from the first acknowledgements, so that a slow machine still gets writes
    // in and the kill lands while requests are in flight.
    for _ in 0..600 {
        if out.lock().unwrap().acked.len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(kill_after).await;
    let log = arca.kill_and_join(&stop, tasks).await;
    let ingest = std::mem::take(&mut *out.lock().unwrap());
    assert!(
        ingest.bad.is_empty(),
        "arca answered with errors during the ingest: {:?}\nserver log:\n{log}",
        ingest.bad
    );
    ingest
}

/// A resource at the root of an object, as storage holds it in the head version.
struct Stored {
    /// Its object's `digestAlgorithm`.
    algorithm: String,
    /// Its `.fcrepo/fcr-root.json`.
    header: serde_json::Value,
    /// Digest and file of its content, if it has any.
    content: Option<(String, std::path::PathBuf)>,
}

/// The root resource of every object in storage.
fn stored_resources(root: &Path) -> Vec<Stored> {
    let mut out = Vec::new();
    for dir in common::object_dirs(root) {
        let inv: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.join("inventory.json")).unwrap()).unwrap();
        let head = inv["head"].as_str().unwrap();
        let mut state = BTreeMap::new();
        for (digest, paths) in inv["versions"][head]["state"].as_object().unwrap() {
            for p in paths.as_array().unwrap() {
                state.insert(p.as_str().unwrap().to_string(), digest.clone());
            }
        }
        let header_digest = &state[".fcrepo/fcr-root.json"];
        let header_file = dir.join(inv["manifest"][header_digest][0].as_str().unwrap());
        let header: serde_json::Value =
            serde_json::from_slice(&fs::read(header_file).unwrap()).unwrap();
        let content = header["contentPath"].as_str().map(|p| {
            let digest = state.get(p).cloned().expect("contentPath is in the state");
            let file = dir.join(inv["manifest"][&digest][0].as_str().unwrap());
            (digest, file)
        });
        let algorithm = inv["digestAlgorithm"].as_str().unwrap().to_string();
        out.push(Stored {
            algorithm,
            header,
            content,
        });
    }
    out
}

/// After a restart: every acknowledged resource is served with its bytes; the catalog
/// serves exactly what storage holds (also what was written but never acknowledged); the
/// root is valid and staging is clean.
async fn check_after_restart(arca: &Arca, data: &Path, acked: &[Acked]) {
    let root = data.join("ocfl-root");
    common::assert_staging_clean(data);
    common::check_storage(&root);
    common::assert_root_files_match_sample(&root);

    let http = Http::new();
    for a in acked {
        match a {
            Acked::Container { path, patched } => {
                let r = http
                    .get(&arca.url(path), &[("accept", "application/n-triples")])
                    .await;
                assert_eq!(r.status, StatusCode::OK, "acknowledged container {path}");
                if *patched {
                    assert!(
                        r.text()
                            .contains("<http://purl.org/dc/terms/description> \"patched\""),
                        "acknowledged PATCH of {path} is lost:\n{}",
                        r.text()
                    );
                }
            }
            Acked::Member { path, stage } => {
                let status = http.get(&arca.url(path), &[]).await.status;
                let allowed: &[StatusCode] = match stage {
                    None => &[StatusCode::OK],
                    Some(Doom::DeleteSent) => &[StatusCode::OK, StatusCode::GONE],
                    Some(_) => &[StatusCode::GONE],
                };
                assert!(
                    allowed.contains(&status),
                    "member {path}: {status} after {stage:?}"
                );
            }
            Acked::Doomed { path, stage } => {
                let status = http.get(&arca.url(path), &[]).await.status;
                let allowed: &[StatusCode] = match stage {
                    Doom::DeleteSent => &[StatusCode::OK, StatusCode::GONE],
                    Doom::PurgeSent => &[StatusCode::GONE, StatusCode::NOT_FOUND],
                    Doom::Purged => &[StatusCode::NOT_FOUND],
                };
                assert!(
                    allowed.contains(&status),
                    "{path}: {status} after {stage:?} (allowed: {allowed:?})"
                );
            }
            Acked::Binary { path, sha512, or } => {
                let r = http.get(&arca.url(path), &[]).await;
                assert_eq!(r.status, StatusCode::OK, "acknowledged binary {path}");
                let got = sha512_hex(&r.body);
                assert!(
                    &got == sha512 || Some(&got) == or.as_ref(),
                    "binary {path} holds neither its acknowledged bytes nor those in flight"
                );
            }
        }
    }

    // Catalog and storage agree, in both directions.
    let mut root_children = BTreeSet::new();
    let mut live_members = BTreeSet::new();
    for Stored {
        algorithm,
        header,
        content,
    } in stored_resources(&root)
    {
        let id = header["id"].as_str().unwrap();
        let path = common::url_path(id);
        if header["parent"] == "info:fedora/dc" && header["deleted"] == false {
            live_members.insert(arca.url(&path));
        }
        let r = http
            .get(&arca.url(&path), &[("accept", "application/n-triples")])
            .await;
        if header["deleted"] == true {
            assert_eq!(r.status, StatusCode::GONE, "{id} is a tombstone in storage");
            continue;
        }
        assert_eq!(
            r.status,
            StatusCode::OK,
            "{id} is in storage but not served after recovery"
        );
        let (digest, file) = content.expect("live resources have content");
        if header["interactionModel"] == "http://www.w3.org/ns/ldp#NonRDFSource" {
            assert_eq!(
                digest_hex(&algorithm, &r.body),
                digest,
                "{id}: served bytes differ from storage"
            );
        } else {
            // Every stored triple is served (internal ids become URLs).
            let served = r.text();
            let stored = fs::read_to_string(file).unwrap();
            for triple in stored.lines() {
                let triple = triple.replace("<info:fedora", &format!("<{}", arca.base));
                assert!(
                    served.contains(&triple),
                    "{id}: stored triple {triple} is not served after recovery:\n{served}"
                );
            }
        }
        if header["parent"] == "info:fedora" && id != "info:fedora" {
            root_children.insert(format!("<{}>", arca.url(&path)));
        }
    }
    let r = http
        .get(&arca.url(""), &[("accept", "application/n-triples")])
        .await;
    let listed: BTreeSet<String> = r
        .text()
        .lines()
        .filter(|l| l.contains("<http://www.w3.org/ns/ldp#contains>"))
        .map(|l| l.split(' ').nth(2).unwrap().to_string())
        .collect();
    assert_eq!(
        listed, root_children,
        "the root lists exactly the containers in storage"
    );

    // The derived rows agree with storage too: `mr` lists exactly the live members of `dc`
    // as its membership and as its inbound references.
    let inbound =
        "return=representation; include=\"http://fedora.info/definitions/fcrepo#PreferInboundReferences\"";
    let r = http
        .get(
            &arca.url("/mr"),
            &[("accept", "application/n-triples"), ("prefer", inbound)],
        )
        .await;
    let mr = format!("<{}>", arca.url("/mr"));
    let (mut members, mut referrers) = (BTreeSet::new(), BTreeSet::new());
    for line in r.text().lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        let iri = |t: &str| t.trim_matches(|c| c == '<' || c == '>').to_string();
        if parts[0] == mr && parts[1] == format!("<{DC_HAS_PART}>") {
            members.insert(iri(parts[2]));
        } else if parts[1] == format!("<{DC_RELATION}>") && parts[2] == mr {
            referrers.insert(iri(parts[0]));
        }
    }
    assert_eq!(members, live_members, "membership of mr after recovery");
    assert_eq!(
        referrers, live_members,
        "inbound references of mr after recovery"
    );

    if common::validate_with_ocfl_py(&root).is_none() {
        eprintln!("(crash test: storage checked by the test's own checks only)");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    // Kill at different moments: right after the first acknowledgements; later, with
    // many requests and uploads in flight.
    survive_sigkills(&[(0, "sha512"), (400, "sha512"), (900, "sha512")]).await;
}

/// sha256 objects are recovered as well, by a server whose new objects get sha512: the
/// journal's records name their objects' algorithm, not the server's. The second round
/// then writes sha512 objects beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_to_sha256_objects_survive_sigkill_into_a_mixed_root() {
    let data = survive_sigkills(&[(400, "sha256"), (900, "sha512")]).await;
    let root = data.path().join("ocfl-root");
    let mut used = BTreeMap::new();
    for dir in common::object_dirs(&root) {
        let inv: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.join("inventory.json")).unwrap()).unwrap();
        *used
            .entry(inv["digestAlgorithm"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
    }
    assert!(
        used.get("sha256").is_some_and(|n| *n > 1) && used.get("sha512").is_some_and(|n| *n > 1),
        "{used:?}"
    );
    let repository_root = object_dir(&root, "info:fedora");
    assert!(repository_root.join("inventory.json.sha256").is_file());
}

/// Rounds of ingest, SIGKILL and restart on one data directory: `(ms, algorithm)` kills
/// the server `ms` after the first acknowledgements, the server of that round creating
/// objects with `algorithm`; each restart uses the next round's (the last restart the
/// last's). Returns the data directory.
async fn survive_sigkills(rounds: &[(u64, &str)]) -> tempfile::TempDir {
    let data = tempfile::tempdir().unwrap();
    let serve =
        |algorithm: &str| Arca::serve_with(data.path(), &[("ARCA_DIGEST_ALGORITHM", algorithm)]);
    let mut acked: Vec<Acked> = Vec::new();
    let mut arca = serve(rounds[0].1);
    create_membership(&arca).await;
    for (round, (ms, algorithm)) in rounds.iter().enumerate() {
        let ms = *ms;
        let ingest = ingest_then_kill(arca, Duration::from_millis(ms), round as u64).await;
        let new = ingest.acked.len();
        acked.extend(ingest.acked);
        let next = rounds.get(round + 1).map_or(*algorithm, |r| r.1);
        arca = serve(next);
        if next != rounds[0].1 {
            assert!(
                arca.log()
                    .contains(&format!("objects written so far use {}", rounds[0].1)),
                "start-up names the change of algorithm:\n{}",
                arca.log()
            );
        }
        assert!(
            new > 0,
            "round {round}: nothing was acknowledged before the kill\n{}",
            arca.log()
        );
        let recovered = arca
            .log()
            .lines()
            .find(|l| l.contains("interrupted by a crash") || l.contains("replayed the journal"))
            .map(str::to_string);
        let rolled = arca.log().matches("rolling root inventory forward").count();
        eprintln!(
            "crash test round {round}: killed {ms} ms after the first acknowledgements, \
             {new} acknowledged; recovery: {recovered:?}, {rolled} rolled forward"
        );
        check_after_restart(&arca, data.path(), &acked).await;
    }
    let binaries = acked
        .iter()
        .filter(|a| matches!(a, Acked::Binary { .. }))
        .count();
    eprintln!(
        "crash test: {} acknowledged resources ({binaries} binaries) checked after {} kills",
        acked.len(),
        rounds.len()
    );
    arca.stop();
    common::assert_staging_clean(data.path());
    data
}

/// Files in `staging/uploads/`.
fn uploads(data: &Path) -> Vec<String> {
    fs::read_dir(data.join("staging/uploads"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Polls until `done`, for up to 30 s (a loaded machine may take a while).
async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting until {what}");
}

/// Sends the head of a 5 MiB PUT and `sent` bytes of its body, then drops the socket.
async fn abandon_upload(s: &TestServer, path: &str, sent: usize, data: &Path) {
    let addr = s
        .base
        .strip_prefix("http://")
        .and_then(|r| r.strip_suffix("/rest"))
        .unwrap();
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "PUT /rest/{path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4=\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        5 << 20
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(&vec![b'x'; sent]).await.unwrap();
    tcp.flush().await.unwrap();
    if sent > 1 << 20 {
        // Past the in-memory limit the body is streamed to a file: make sure the test
        // exercises that path.
        wait_for("the upload is streamed to staging/uploads", || {
            !uploads(data).is_empty()
        })
        .await;
    } else {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(tcp);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_uploads_leave_nothing() {
    let s = TestServer::start().await;
    let data = s.data().to_path_buf();
    let root = s.ocfl_root();
    let r = s
        .request(
            Method::PUT,
            &s.url("keep.bin"),
            &[("content-type", "application/octet-stream")],
            Bytes::from_static(b"original"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);

    // A new binary, abandoned in memory and after spilling to a file.
    for sent in [512 << 10, 3 << 19] {
        abandon_upload(&s, "big", sent, &data).await;
        wait_for("staging/uploads is empty again", || {
            uploads(&data).is_empty()
        })
        .await;
        assert_eq!(s.get("big", &[]).await.status, StatusCode::NOT_FOUND);
        assert!(
            !object_dir(&root, "info:fedora/big").exists(),
            "an abandoned upload created an object"
        );
    }

    // A replacement, abandoned: the binary keeps its bytes and gets no new version.
    abandon_upload(&s, "keep.bin", 3 << 19, &data).await;
    wait_for("staging/uploads is empty again", || {
        uploads(&data).is_empty()
    })
    .await;
    let r = s.get("keep.bin", &[]).await;
    assert_eq!((r.status, &r.body[..]), (StatusCode::OK, &b"original"[..]));
    let keep = object_dir(&root, "info:fedora/keep.bin");
    assert!(keep.join("v1").is_dir() && !keep.join("v2").exists());

    common::assert_staging_clean(&data);
    let dir = s.stop().await;
    common::check_storage(&root);
    drop(dir);
}
