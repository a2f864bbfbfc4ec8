//! Binaries (LDP-NR) and their descriptions at `<binary>/fcr:metadata`: creation, content
//! type and file name, headers, `Digest` on upload, `Want-Digest` on GET/HEAD, byte ranges.

use crate::common::*;
use arca_testkit::TestServer;
use base64::Engine;
use http::Method;
use md5::Md5;
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha512};

const BYTES: &[u8] = b"The quick brown fox jumps over the lazy dog.\n";

fn hex_digest<D: Digest>(bytes: &[u8]) -> String {
    hex::encode(D::digest(bytes))
}

fn b64_digest<D: Digest>(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(D::digest(bytes))
}

/// `Digest` response header as `algorithm → value` pairs.
fn digest_pairs(r: &arca_testkit::Reply) -> Vec<(String, String)> {
    r.header_all("digest")
        .split(',')
        .filter_map(|p| p.trim().split_once('='))
        .map(|(a, v)| (a.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_creates_a_binary_and_its_description() {
    let s = TestServer::start().await;
    let r = post_bytes(
        &s,
        "",
        &[("content-type", "image/png"), ("slug", "img")],
        BYTES,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let url = s.url("img");
    let desc = s.url("img/fcr:metadata");
    assert_eq!(r.header("location"), Some(url.as_str()));
    assert!(r.has_link(LDP_NON_RDF_SOURCE, "type"));
    // LDP 5.2.3.12: the 201 links to the description.
    assert!(r.has_link(&desc, "describedby"), "{}", r.header_all("link"));

    let g = s.get("img", &[]).await;
    assert_eq!(g.status, 200);
    assert_eq!(&g.body[..], BYTES);
    assert_eq!(g.header("content-type"), Some("image/png"));
    assert_eq!(children(&s, "").await, vec![url.clone()]);

    // 3.5.1-B: the description exists and describes the binary.
    let d = s.get("img/fcr:metadata", &[]).await;
    assert_eq!(d.status, 200);
    assert!(d.has_link(&url, "describes"), "{}", d.header_all("link"));
    let dg = Graph::of(&d, &desc);
    assert!(dg.has(&url, RDF_TYPE, LDP_NON_RDF_SOURCE));
    assert!(dg.has_lit(&url, &format!("{EBUCORE}hasMimeType"), "image/png"));
    let size = dg.objects(&url, &format!("{PREMIS}hasSize"));
    assert_eq!(size.len(), 1);
    assert!(size[0]
        .to_string()
        .starts_with(&format!("\"{}\"", BYTES.len())));
    let sha = format!("urn:sha-512:{}", hex_digest::<Sha512>(BYTES));
    assert!(
        dg.has(&url, &format!("{PREMIS}hasMessageDigest"), &sha),
        "description lacks {sha}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_creates_a_binary_with_a_description_and_replaces_its_content() {
    let s = TestServer::start().await;
    let r = put_bytes(
        &s,
        "file",
        &[("content-type", "text/csv"), LINK_BINARY],
        BYTES,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.has_link(&s.url("file/fcr:metadata"), "describedby"));
    // 3.6.3-C: a PUT-created binary has a description too.
    assert_eq!(s.get("file/fcr:metadata", &[]).await.status, 200);
    let before = s.get("file", &[]).await;

    // 3.6.2-A: PUT replaces the content (and the media type).
    let r = put_bytes(
        &s,
        "file",
        &[("content-type", "application/json")],
        b"{\"a\":1}",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let after = s.get("file", &[]).await;
    assert_eq!(&after.body[..], b"{\"a\":1}");
    assert_eq!(after.header("content-type"), Some("application/json"));
    assert_ne!(before.header("etag"), after.header("etag"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_rdf_content_type_without_link_makes_a_binary() {
    let s = TestServer::start().await;
    for (slug, ct) in [("p", "application/pdf"), ("t", "text/plain")] {
        let r = post(&s, "", &[("content-type", ct), ("slug", slug)], "bytes").await;
        assert_eq!(r.status, 201, "{ct}: {}", r.text());
        assert!(r.has_link(LDP_NON_RDF_SOURCE, "type"), "{ct}");
        let g = s.get(slug, &[]).await;
        assert_eq!(g.text(), "bytes");
        assert_eq!(g.header("content-type"), Some(ct));
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filename_comes_from_content_disposition() {
    let s = TestServer::start().await;
    let r = post_bytes(
        &s,
        "",
        &[
            ("content-type", "text/plain"),
            ("slug", "named"),
            (
                "content-disposition",
                "attachment; filename=\"report 2024.txt\"",
            ),
        ],
        BYTES,
    )
    .await;
    assert_eq!(r.status, 201);
    let g = s.get("named", &[]).await;
    let cd = g
        .header("content-disposition")
        .expect("Content-Disposition");
    assert!(cd.contains("filename=\"report 2024.txt\""), "{cd}");
    let dg = graph(&s, "named/fcr:metadata", &[]).await;
    assert!(dg.has_lit(
        &s.url("named"),
        &format!("{EBUCORE}filename"),
        "report 2024.txt"
    ));
    s.stop().await;
}

/// The headers of an answer about binary `path`; `validators`: GET and HEAD carry ETag and
/// Last-Modified, OPTIONS none (as Fedora 6).
fn assert_binary_headers(s: &TestServer, r: &arca_testkit::Reply, path: &str, validators: bool) {
    assert!(
        r.has_link(LDP_NON_RDF_SOURCE, "type"),
        "{}",
        r.header_all("link")
    );
    assert!(r.has_link(LDP_RESOURCE, "type"));
    assert!(!r.has_link(LDP_RDF_SOURCE, "type"));
    assert!(!r.has_link(LDP_CONTAINER, "type"));
    assert_eq!(
        links(r, "describedby"),
        vec![s.url(&format!("{path}/fcr:metadata"))]
    );
    if validators {
        let etag = r.header("etag").expect("ETag");
        assert!(!etag.starts_with("W/"), "a binary's ETag is strong: {etag}");
        assert!(
            httpdate::parse_http_date(r.header("last-modified").expect("Last-Modified")).is_ok()
        );
    }
    let allow = header_items(r, "allow");
    for m in ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"] {
        assert!(allow.iter().any(|a| a == m), "Allow lacks {m}: {allow:?}");
    }
    for m in ["POST", "PATCH"] {
        assert!(!allow.iter().any(|a| a == m), "Allow has {m}: {allow:?}");
    }
    assert!(r.header("accept-post").is_none());
    assert!(r.header("accept-patch").is_none());
}

fn assert_description_headers(s: &TestServer, r: &arca_testkit::Reply, path: &str) {
    assert!(
        r.has_link(LDP_RDF_SOURCE, "type"),
        "{}",
        r.header_all("link")
    );
    assert!(r.has_link(LDP_RESOURCE, "type"));
    assert!(!r.has_link(LDP_NON_RDF_SOURCE, "type"));
    assert!(!r.has_link(LDP_CONTAINER, "type"));
    assert_eq!(links(r, "describes"), vec![s.url(path)]);
    let allow = header_items(r, "allow");
    for m in ["GET", "HEAD", "OPTIONS", "PUT", "PATCH"] {
        assert!(allow.iter().any(|a| a == m), "Allow lacks {m}: {allow:?}");
    }
    assert!(
        !allow.iter().any(|a| a == "POST"),
        "Allow has POST: {allow:?}"
    );
    assert!(header_items(r, "accept-patch")
        .iter()
        .any(|a| a == "application/sparql-update"));
    assert!(r.header("accept-post").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_head_and_options_on_binaries_and_descriptions() {
    let s = TestServer::start().await;
    binary(&s, "bin", "application/octet-stream", BYTES).await;

    let g = s.get("bin", &[]).await;
    assert_eq!(g.status, 200);
    assert_binary_headers(&s, &g, "bin", true);
    assert_eq!(
        g.header("content-length"),
        Some(BYTES.len().to_string().as_str())
    );
    let h = head(&s, "bin", &[]).await;
    assert_eq!(h.status, 200);
    assert!(h.body.is_empty(), "HEAD has no body");
    assert_binary_headers(&s, &h, "bin", true);
    assert_eq!(h.header("etag"), g.header("etag"));
    let o = options(&s, "bin").await;
    assert_eq!(o.status, 200);
    assert_binary_headers(&s, &o, "bin", false);
    assert!(o.header("etag").is_none() && o.header("last-modified").is_none());

    let d = s.get("bin/fcr:metadata", &[]).await;
    assert_eq!(d.status, 200);
    assert_description_headers(&s, &d, "bin");
    assert!(d.header("etag").is_some() && d.header("last-modified").is_some());
    let dh = head(&s, "bin/fcr:metadata", &[]).await;
    assert_eq!(dh.status, 200);
    assert!(dh.body.is_empty());
    assert_description_headers(&s, &dh, "bin");
    assert_eq!(dh.header("etag"), d.header("etag"));
    let dopt = options(&s, "bin/fcr:metadata").await;
    assert_eq!(dopt.status, 200);
    assert_description_headers(&s, &dopt, "bin");
    assert!(dopt.header("etag").is_none() && dopt.header("last-modified").is_none());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_is_not_a_container() {
    let s = TestServer::start().await;
    binary(&s, "leaf", "text/plain", BYTES).await;
    // As Fedora 6.1: 409 with constrainedBy ("binaries cannot contain other resources").
    let r = post(&s, "leaf", &[TURTLE, ("slug", "child")], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
    let r = put(&s, "leaf/child", &[TURTLE], "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_constrained_by(&s, &r).await;
    assert_eq!(s.get("leaf/child", &[]).await.status, 404);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_description_can_be_replaced_by_put() {
    let s = TestServer::start().await;
    binary(&s, "pic", "image/jpeg", BYTES).await;
    let url = s.url("pic");
    // In a description `<>` is the binary it describes.
    let r = put(
        &s,
        "pic/fcr:metadata",
        &[TURTLE],
        "<> <http://purl.org/dc/terms/title> \"A picture\" .",
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let g = graph(&s, "pic/fcr:metadata", &[]).await;
    assert!(g.has_lit(&url, DC_TITLE, "A picture"));
    // The binary itself is unchanged.
    assert_eq!(&s.get("pic", &[]).await.body[..], BYTES);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_is_verified_for_every_algorithm_in_hex_and_base64() {
    let s = TestServer::start().await;
    let cases: Vec<(&str, String, String)> = vec![
        (
            "sha-512",
            hex_digest::<Sha512>(BYTES),
            b64_digest::<Sha512>(BYTES),
        ),
        (
            "sha-256",
            hex_digest::<Sha256>(BYTES),
            b64_digest::<Sha256>(BYTES),
        ),
        ("sha", hex_digest::<Sha1>(BYTES), b64_digest::<Sha1>(BYTES)),
        ("md5", hex_digest::<Md5>(BYTES), b64_digest::<Md5>(BYTES)),
    ];
    for (i, (alg, hex, b64)) in cases.iter().enumerate() {
        for (j, value) in [hex, b64].into_iter().enumerate() {
            let slug = format!("d{i}{j}");
            let digest = format!("{alg}={value}");
            let r = post_bytes(
                &s,
                "",
                &[
                    ("content-type", "text/plain"),
                    ("slug", &slug),
                    ("digest", &digest),
                ],
                BYTES,
            )
            .await;
            assert_eq!(r.status, 201, "{digest}: {}", r.text());
            assert_eq!(&s.get(&slug, &[]).await.body[..], BYTES);
            // PUT with a matching digest replaces the content.
            let r = put_bytes(
                &s,
                &slug,
                &[("content-type", "text/plain"), ("digest", &digest)],
                BYTES,
            )
            .await;
            assert_eq!(r.status, 204, "PUT {digest}: {}", r.text());
        }
    }
    // Several digests in one header, and the algorithm token in upper case.
    let both = format!(
        "SHA-256={}, MD5={}",
        hex_digest::<Sha256>(BYTES),
        b64_digest::<Md5>(BYTES)
    );
    let r = post_bytes(
        &s,
        "",
        &[
            ("content-type", "text/plain"),
            ("slug", "both"),
            ("digest", &both),
        ],
        BYTES,
    )
    .await;
    assert_eq!(r.status, 201, "{both}: {}", r.text());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_digest_mismatch_is_409_and_stores_nothing() {
    let s = TestServer::start().await;
    let other = b"something else";
    let wrong = [
        format!("sha-512={}", hex_digest::<Sha512>(other)),
        format!("sha-256={}", b64_digest::<Sha256>(other)),
        format!("sha={}", hex_digest::<Sha1>(other)),
        format!("md5={}", b64_digest::<Md5>(other)),
        // Values no content can have are mismatches too (Fedora API 3.5.1).
        "md5=1234".to_string(),
        format!("sha-256={}", "0".repeat(63)),
        // One right, one wrong.
        format!(
            "sha-256={}, md5={}",
            hex_digest::<Sha256>(BYTES),
            hex_digest::<Md5>(other)
        ),
    ];
    for (i, digest) in wrong.iter().enumerate() {
        let slug = format!("bad{i}");
        let r = post_bytes(
            &s,
            "",
            &[
                ("content-type", "text/plain"),
                ("slug", &slug),
                ("digest", digest),
            ],
            BYTES,
        )
        .await;
        assert_eq!(r.status, 409, "{digest}: {}", r.text());
        assert_constrained_by(&s, &r).await;
        assert_eq!(s.get(&slug, &[]).await.status, 404, "{digest}");
        assert_eq!(
            s.get(&format!("{slug}/fcr:metadata"), &[]).await.status,
            404
        );

        // Same by PUT-to-create.
        let r = put_bytes(
            &s,
            &slug,
            &[
                ("content-type", "text/plain"),
                ("digest", digest),
                LINK_BINARY,
            ],
            BYTES,
        )
        .await;
        assert_eq!(r.status, 409, "PUT {digest}: {}", r.text());
        assert_eq!(s.get(&slug, &[]).await.status, 404);
    }
    assert!(children(&s, "").await.is_empty());

    // 3.6.2-B: replacing an existing binary with a wrong digest keeps the old content.
    binary(&s, "keep", "text/plain", BYTES).await;
    let etag = s.get("keep", &[]).await.header("etag").unwrap().to_string();
    let r = put_bytes(
        &s,
        "keep",
        &[
            ("content-type", "text/plain"),
            ("digest", &format!("md5={}", hex_digest::<Md5>(BYTES))),
        ],
        other,
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text());
    let g = s.get("keep", &[]).await;
    assert_eq!(&g.body[..], BYTES);
    assert_eq!(g.header("etag"), Some(etag.as_str()));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupported_digest_algorithm_is_400() {
    let s = TestServer::start().await;
    let r = post_bytes(
        &s,
        "",
        &[
            ("content-type", "text/plain"),
            ("slug", "crc"),
            ("digest", "crc32c=AAAAAA=="),
        ],
        BYTES,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(s.get("crc", &[]).await.status, 404);
    binary(&s, "x", "text/plain", BYTES).await;
    let r = put_bytes(
        &s,
        "x",
        &[("content-type", "text/plain"), ("digest", "foo=bar")],
        b"new",
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(&s.get("x", &[]).await.body[..], BYTES);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn want_digest_is_answered_in_hex() {
    let s = TestServer::start().await;
    binary(&s, "w", "text/plain", BYTES).await;
    let md5 = hex_digest::<Md5>(BYTES);
    let sha1 = hex_digest::<Sha1>(BYTES);
    let sha256 = hex_digest::<Sha256>(BYTES);
    let sha512 = hex_digest::<Sha512>(BYTES);

    let want = |w: &'static str| [("want-digest", w)];
    for method in [Method::GET, Method::HEAD] {
        let ask = |w: &'static str| {
            let m = method.clone();
            let url = s.url("w");
            let s = &s;
            async move { s.request(m, &url, &want(w), Vec::new()).await }
        };
        let r = ask("md5").await;
        assert_eq!(r.status, 200);
        assert_eq!(
            digest_pairs(&r),
            vec![("md5".into(), md5.clone())],
            "{method}"
        );
        let r = ask("sha").await;
        assert_eq!(digest_pairs(&r), vec![("sha".into(), sha1.clone())]);
        let r = ask("sha-256").await;
        assert_eq!(digest_pairs(&r), vec![("sha-256".into(), sha256.clone())]);
        let r = ask("sha-512").await;
        assert_eq!(digest_pairs(&r), vec![("sha-512".into(), sha512.clone())]);
        if method == Method::HEAD {
            assert!(r.body.is_empty());
        } else {
            assert_eq!(&r.body[..], BYTES);
        }

        // A list with q-values: the preferred algorithm comes first; q=0 excludes.
        let r = ask("md5;q=0.3, sha-256;q=1.0, sha;q=0").await;
        assert_eq!(r.status, 200);
        let pairs = digest_pairs(&r);
        assert_eq!(
            pairs.first(),
            Some(&("sha-256".to_string(), sha256.clone()))
        );
        assert!(pairs.contains(&("md5".to_string(), md5.clone())));
        assert!(
            !pairs.iter().any(|(a, _)| a == "sha"),
            "q=0 excluded: {pairs:?}"
        );

        // A list without q-values.
        let r = ask("md5, sha").await;
        let pairs = digest_pairs(&r);
        assert!(pairs.contains(&("md5".to_string(), md5.clone())));
        assert!(pairs.contains(&("sha".to_string(), sha1.clone())));

        // Supported mixed with unsupported: the supported one is answered.
        let r = ask("sha-384, md5").await;
        assert_eq!(r.status, 200);
        assert_eq!(digest_pairs(&r), vec![("md5".into(), md5.clone())]);

        // Only unsupported algorithms: 400 (suite 3.2.3-F).
        let r = ask("sha-384, crc32c").await;
        assert_eq!(r.status, 400, "{method}");
        // Only excluded algorithms: nothing acceptable either.
        let r = ask("md5;q=0").await;
        assert_eq!(r.status, 400, "{method}");
    }
    // No Want-Digest, no Digest.
    assert!(s.get("w", &[]).await.header("digest").is_none());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn byte_ranges() {
    let s = TestServer::start().await;
    binary(&s, "r", "text/plain", BYTES).await;
    let len = BYTES.len();

    let r = s.get("r", &[("range", "bytes=4-8")]).await;
    assert_eq!(r.status, 206);
    assert_eq!(&r.body[..], &BYTES[4..=8]);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes 4-8/{len}").as_str())
    );
    assert_eq!(r.header("content-length"), Some("5"));

    let r = s.get("r", &[("range", "bytes=40-")]).await;
    assert_eq!(r.status, 206);
    assert_eq!(&r.body[..], &BYTES[40..]);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes 40-{}/{len}", len - 1).as_str())
    );

    // Suffix range: the last 5 bytes.
    let r = s.get("r", &[("range", "bytes=-5")]).await;
    assert_eq!(r.status, 206);
    assert_eq!(&r.body[..], &BYTES[len - 5..]);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes {}-{}/{len}", len - 5, len - 1).as_str())
    );

    // An end past the content is cut to the last byte.
    let r = s.get("r", &[("range", "bytes=0-10000")]).await;
    assert_eq!(r.status, 206);
    assert_eq!(&r.body[..], BYTES);

    // Unsatisfiable.
    let r = s.get("r", &[("range", "bytes=1000-2000")]).await;
    assert_eq!(r.status, 416);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes */{len}").as_str())
    );

    // HEAD with a range: same status and headers, no body.
    let r = head(&s, "r", &[("range", "bytes=0-3")]).await;
    assert_eq!(r.status, 206);
    assert!(r.body.is_empty());
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes 0-3/{len}").as_str())
    );

    // Binaries advertise range support.
    assert_eq!(s.get("r", &[]).await.header("accept-ranges"), Some("bytes"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_binary_round_trips() {
    // Bigger than the in-memory upload limit, so the body is streamed to a file.
    let s = TestServer::start().await;
    let big: Vec<u8> = (0..(3u32 << 20)).map(|i| (i % 251) as u8).collect();
    let digest = format!("sha-256={}", hex_digest::<Sha256>(&big));
    let r = put_bytes(
        &s,
        "big",
        &[
            ("content-type", "application/octet-stream"),
            ("digest", &digest),
            LINK_BINARY,
        ],
        &big,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let g = s.get("big", &[("want-digest", "sha-256")]).await;
    assert_eq!(g.body.len(), big.len());
    assert!(g.body[..] == big[..]);
    assert_eq!(
        digest_pairs(&g),
        vec![("sha-256".into(), hex_digest::<Sha256>(&big))]
    );
    let r = s.get("big", &[("range", "bytes=1048570-1048580")]).await;
    assert_eq!(r.status, 206);
    assert_eq!(&r.body[..], &big[1048570..=1048580]);
    // A mismatching large upload stores nothing.
    let r = put_bytes(
        &s,
        "big2",
        &[
            ("content-type", "application/octet-stream"),
            ("digest", "md5=00000000000000000000000000000000"),
            LINK_BINARY,
        ],
        &big,
    )
    .await;
    assert_eq!(r.status, 409);
    assert_eq!(s.get("big2", &[]).await.status, 404);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sha_512_256_is_verified_and_answered_as_in_fedora() {
    let s = TestServer::start().await;
    let right = hex_digest::<sha2::Sha512_256>(BYTES);
    let wrong = hex_digest::<sha2::Sha512_256>(b"other");
    let r = put_bytes(
        &s,
        "t",
        &[
            ("content-type", "text/plain"),
            ("digest", &format!("sha-512/256={wrong}")),
        ],
        BYTES,
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text());
    let r = put_bytes(
        &s,
        "t",
        &[
            ("content-type", "text/plain"),
            ("digest", &format!("sha-512/256={right}")),
        ],
        BYTES,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = s
        .get("t", &[("want-digest", "sha-512/256;q=1, md5;q=0.5")])
        .await;
    let pairs = digest_pairs(&r);
    assert!(
        pairs.contains(&("sha-512/256".to_string(), right.clone())),
        "{pairs:?}"
    );
    assert!(
        pairs.contains(&("md5".to_string(), hex_digest::<Md5>(BYTES))),
        "{pairs:?}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_ascii_names_travel_as_uris_in_headers() {
    let s = TestServer::start().await;
    let r = put_bytes(
        &s,
        "%C3%A9t%C3%A9",
        &[
            ("content-type", "text/plain"),
            (
                "content-disposition",
                "attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.txt",
            ),
        ],
        b"x",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("location"), Some(s.url("%C3%A9t%C3%A9").as_str()));
    let g = s.get("%C3%A9t%C3%A9", &[]).await;
    assert!(
        g.has_link(&s.url("%C3%A9t%C3%A9/fcr:metadata"), "describedby"),
        "{:?}",
        g.headers
    );
    let disposition = g.header("content-disposition").unwrap();
    // As Fedora 7: no size or dates (RFC 6266 deprecated them; Fedora 6 sent them).
    assert_eq!(
        disposition,
        "attachment; filename=\"r_sum_.txt\"; filename*=UTF-8''r%C3%A9sum%C3%A9.txt"
    );
    s.stop().await;
}
