//! Text extraction: real PDFs, bad and adversarial PDFs through the child, text decoding, the
//! concurrency bound, cancellation, and the text cache.
//!
//! The throughput measurement is `measure_throughput` (ignored; see its doc).

mod pdfgen;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arca_search::extract::{
    exit, is_extractable, pdf_text_in_process, run_child, ExtractError, ExtractLimits,
    ExtractProgram, Extractor, TextCache, SERVE,
};

const CORPUS: &str = "/work/shared/corpus/pdf";
const GOOD_LINES: &[&[u8]] = &[
    b"Hello from the University of Arca.",
    b"Caf\xe9 (cr\xe8me).",
];

fn child_program() -> ExtractProgram {
    ExtractProgram::new(
        env!("CARGO_BIN_EXE_arca-extract-text"),
        Vec::<OsString>::new(),
    )
}

/// Limits for the tests: small and quick to hit, but for the timeout, which a loaded
/// machine must not hit by accident (the tests about timing out set their own).
fn small_limits() -> ExtractLimits {
    ExtractLimits {
        timeout: Duration::from_secs(20),
        memory_bytes: 256 << 20,
        workers: 2,
        ..ExtractLimits::default()
    }
}

fn extractor() -> Extractor {
    Extractor::new(small_limits(), child_program())
}

/// An extractor for the tests about timing out: [`small_limits`] with a 2 s timeout.
fn quick_to_time_out() -> Extractor {
    Extractor::new(
        ExtractLimits {
            timeout: Duration::from_secs(2),
            ..small_limits()
        },
        child_program(),
    )
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The corpus PDFs, or `None` (with a message) where the corpus is absent.
fn corpus() -> Option<Vec<PathBuf>> {
    let Ok(dir) = std::fs::read_dir(CORPUS) else {
        eprintln!("skipped: {CORPUS} is absent");
        return None;
    };
    let mut pdfs: Vec<PathBuf> = dir
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pdf"))
        .collect();
    pdfs.sort();
    Some(pdfs)
}

/// The extractor still extracts a good PDF (a generated one, and a corpus one if present).
async fn assert_still_works(extractor: &Extractor, dir: &Path) {
    let good = write(dir, "good.pdf", &pdfgen::text_pdf(GOOD_LINES));
    let text = extractor.extract(&good, "application/pdf").await.unwrap();
    assert!(text.contains("University of Arca"), "{text:?}");
    assert!(text.contains("Café (crème)."), "{text:?}");
    if let Some(pdfs) = corpus() {
        let text = extractor
            .extract(&pdfs[0], "application/pdf")
            .await
            .unwrap();
        assert!(text.to_lowercase().contains("university"));
    }
}

/// Asserts `Failed` whose reason starts with `kind`.
fn assert_failed(result: Result<String, ExtractError>, kind: &str) -> String {
    match result {
        Err(ExtractError::Failed(reason)) if reason.starts_with(kind) => reason,
        other => panic!("expected a failure starting with {kind:?}, got {other:?}"),
    }
}

#[tokio::test]
async fn corpus_pdfs_yield_their_text() {
    let Some(pdfs) = corpus() else { return };
    assert_eq!(pdfs.len(), 7, "{pdfs:?}");
    let extractor = Arc::new(Extractor::new(ExtractLimits::default(), child_program()));
    let mut tasks = tokio::task::JoinSet::new();
    for pdf in pdfs {
        let extractor = Arc::clone(&extractor);
        tasks.spawn(async move {
            let text = extractor.extract(&pdf, "application/pdf").await;
            (pdf, text)
        });
    }
    while let Some(joined) = tasks.join_next().await {
        let (pdf, text) = joined.unwrap();
        let text = text
            .unwrap_or_else(|e| panic!("{}: {e}", pdf.display()))
            .to_lowercase();
        assert!(
            text.len() > 10_000,
            "{}: {} bytes",
            pdf.display(),
            text.len()
        );
        assert!(text.contains("university"), "{}", pdf.display());
        assert!(!text.contains("fish"), "{}", pdf.display());
    }
}

#[tokio::test]
async fn generated_pdf_yields_its_text() {
    let dir = tempfile::tempdir().unwrap();
    assert_still_works(&extractor(), dir.path()).await;
}

#[tokio::test]
async fn truncated_pdf_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let extractor = extractor();
    let whole = pdfgen::text_pdf(GOOD_LINES);
    let path = write(dir.path(), "truncated.pdf", &whole[..whole.len() * 6 / 10]);
    assert_failed(
        extractor.extract(&path, "application/pdf").await,
        "corrupt:",
    );
    if let Some(pdfs) = corpus() {
        let whole = std::fs::read(&pdfs[0]).unwrap();
        let path = write(
            dir.path(),
            "truncated-corpus.pdf",
            &whole[..whole.len() / 2],
        );
        assert_failed(
            extractor.extract(&path, "application/pdf").await,
            "corrupt:",
        );
    }
    assert_still_works(&extractor, dir.path()).await;
}

#[tokio::test]
async fn random_bytes_are_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let extractor = extractor();
    // A fixed xorshift sequence: random-looking, the same on every run.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let bytes: Vec<u8> = (0..64 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let path = write(dir.path(), "random.pdf", &bytes);
    assert_failed(
        extractor.extract(&path, "application/pdf").await,
        "corrupt:",
    );
    assert_still_works(&extractor, dir.path()).await;
}

#[tokio::test]
async fn encrypted_pdf_is_reported_as_encrypted() {
    let dir = tempfile::tempdir().unwrap();
    let extractor = extractor();
    let locked = write(
        dir.path(),
        "locked.pdf",
        &pdfgen::encrypted_text_pdf(GOOD_LINES, b"secret"),
    );
    assert_failed(
        extractor.extract(&locked, "application/pdf").await,
        "encrypted:",
    );
    assert_still_works(&extractor, dir.path()).await;
}

#[tokio::test]
async fn encrypted_pdf_with_an_empty_user_password_is_read() {
    // The same generator with an empty user password: the encryption is real, since a reader
    // decrypts it to the text.
    let dir = tempfile::tempdir().unwrap();
    let open = write(
        dir.path(),
        "open.pdf",
        &pdfgen::encrypted_text_pdf(GOOD_LINES, b""),
    );
    let raw = std::fs::read(&open).unwrap();
    assert!(
        !raw.windows(10).any(|w| w == b"University"),
        "not encrypted"
    );
    let text = extractor().extract(&open, "application/pdf").await.unwrap();
    assert!(text.contains("University of Arca"), "{text:?}");
}

#[tokio::test]
async fn zlib_bomb_runs_out_of_memory() {
    let dir = tempfile::tempdir().unwrap();
    let extractor = extractor();
    // 512 MiB of page content against a 256 MiB address space, from a 3.4 MB file.
    let bomb = write(dir.path(), "bomb.pdf", &pdfgen::zlib_bomb_pdf(512 << 20));
    let reason = assert_failed(
        extractor.extract(&bomb, "application/pdf").await,
        "out of memory:",
    );
    assert!(reason.contains("memory allocation of"), "{reason}");
    assert_still_works(&extractor, dir.path()).await;
}

#[tokio::test]
async fn exponential_forms_time_out() {
    let dir = tempfile::tempdir().unwrap();
    // The good PDFs after the time-out take tens of milliseconds of its 2 s.
    let extractor = quick_to_time_out();
    let bomb = write(dir.path(), "forms.pdf", &pdfgen::exponential_forms_pdf(60));
    let started = Instant::now();
    let result = extractor.extract(&bomb, "application/pdf").await;
    assert!(
        matches!(result, Err(ExtractError::TimedOut(t)) if t == Duration::from_secs(2)),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_still_works(&extractor, dir.path()).await;
}

#[tokio::test]
async fn self_drawing_form_overflows_the_stack() {
    let dir = tempfile::tempdir().unwrap();
    let extractor = extractor();
    let pdf = write(dir.path(), "loop.pdf", &pdfgen::self_drawing_form_pdf());
    let reason = assert_failed(extractor.extract(&pdf, "application/pdf").await, "corrupt:");
    assert!(reason.contains("stack overflow"), "{reason}");
    assert_still_works(&extractor, dir.path()).await;
}

#[tokio::test]
async fn files_over_the_input_limit_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let extractor = Extractor::new(
        ExtractLimits {
            max_input_bytes: 100,
            ..small_limits()
        },
        child_program(),
    );
    let pdf = write(dir.path(), "big.pdf", &pdfgen::text_pdf(GOOD_LINES));
    let size = std::fs::metadata(&pdf).unwrap().len();
    for (path, media_type) in [(&pdf, "application/pdf"), (&pdf, "text/plain")] {
        match extractor.extract(path, media_type).await {
            Err(ExtractError::TooLarge {
                size: s,
                limit: 100,
            }) => assert_eq!(s, size),
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn unsupported_types_and_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    let extractor = extractor();
    let path = write(dir.path(), "image.png", b"\x89PNG");
    assert!(!is_extractable("image/png"));
    match extractor.extract(&path, "image/png").await {
        Err(ExtractError::Unsupported { media_type }) => assert_eq!(media_type, "image/png"),
        other => panic!("{other:?}"),
    }
    let missing = dir.path().join("missing.pdf");
    match extractor.extract(&missing, "application/pdf").await {
        Err(ExtractError::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn text_is_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let extractor = extractor();
    let utf8 = write(dir.path(), "utf8.txt", "Grüße, 世界\n".as_bytes());
    assert_eq!(
        extractor.extract(&utf8, "text/plain").await.unwrap(),
        "Grüße, 世界\n"
    );
    let latin1 = write(dir.path(), "latin1.txt", b"Gr\xfc\xdfe, caf\xe9");
    assert_eq!(
        extractor
            .extract(&latin1, "text/plain; charset=ISO-8859-1")
            .await
            .unwrap(),
        "Grüße, café"
    );
    // Without a charset, latin1 bytes are not UTF-8: replaced, not an error.
    assert_eq!(
        extractor.extract(&latin1, "text/plain").await.unwrap(),
        "Gr\u{FFFD}\u{FFFD}e, caf\u{FFFD}"
    );
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain("{\"k\": \"é\"}".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let json = write(dir.path(), "utf16.json", &utf16);
    assert_eq!(
        extractor
            .extract(&json, "application/ld+json")
            .await
            .unwrap(),
        "{\"k\": \"é\"}"
    );
}

#[tokio::test]
async fn text_is_cut_at_a_char_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let limits = |max_text_bytes| ExtractLimits {
        max_text_bytes,
        ..small_limits()
    };
    let text = write(dir.path(), "e.txt", "ééééé".as_bytes());
    for (max, expected) in [
        (0, ""),
        (1, ""),
        (2, "é"),
        (5, "éé"),
        (6, "ééé"),
        (100, "ééééé"),
    ] {
        let extractor = Extractor::new(limits(max), child_program());
        assert_eq!(
            extractor.extract(&text, "text/plain").await.unwrap(),
            expected
        );
    }
    let latin1 = write(dir.path(), "e1.txt", b"\xe9\xe9\xe9");
    let extractor = Extractor::new(limits(3), child_program());
    assert_eq!(
        extractor
            .extract(&latin1, "text/plain; charset=latin1")
            .await
            .unwrap(),
        "é"
    );

    // A PDF: the limit falls inside the first "é".
    let pdf = write(dir.path(), "cafe.pdf", &pdfgen::text_pdf(GOOD_LINES));
    let full = extractor_with(limits(1 << 20))
        .extract(&pdf, "application/pdf")
        .await
        .unwrap();
    let cut_at = full.find('é').unwrap() + 1;
    let cut = extractor_with(limits(cut_at))
        .extract(&pdf, "application/pdf")
        .await
        .unwrap();
    assert_eq!(cut, full[..cut_at - 1]);
    let cut = extractor_with(limits(cut_at + 1))
        .extract(&pdf, "application/pdf")
        .await
        .unwrap();
    assert_eq!(cut, full[..cut_at + 1]);
}

fn extractor_with(limits: ExtractLimits) -> Extractor {
    Extractor::new(limits, child_program())
}

/// A shell script as the extraction program; the limits and the path come after `leading`.
fn shell(script: &str, leading: &[&OsString]) -> ExtractProgram {
    let mut args = vec![OsString::from("-c"), OsString::from(script)];
    args.extend(leading.iter().map(|a| (*a).clone()));
    ExtractProgram::new("/bin/sh", args)
}

#[tokio::test]
async fn at_most_workers_extractions_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log").into_os_string();
    // $0 is the log; $1 is --serve, $2..$4 the limits; each line on stdin is a path.
    let program = shell(
        r#"while IFS= read -r path; do
             echo start >> "$0"; sleep 1; echo end >> "$0"
             t="text of $(basename "$path")"; printf 'ok %d\n%s' "${#t}" "$t"
           done"#,
        &[&log],
    );
    let extractor = Arc::new(Extractor::new(small_limits(), program));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..4 {
        let path = write(dir.path(), &format!("{i}.pdf"), b"%PDF");
        let extractor = Arc::clone(&extractor);
        tasks.spawn(async move { extractor.extract(&path, "application/pdf").await });
    }
    let mut texts = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        texts.push(joined.unwrap().unwrap());
    }
    texts.sort();
    assert_eq!(
        texts,
        [
            "text of 0.pdf",
            "text of 1.pdf",
            "text of 2.pdf",
            "text of 3.pdf"
        ]
    );
    let (mut running, mut most) = (0, 0);
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        running += if line == "start" { 1 } else { -1 };
        most = most.max(running);
    }
    assert_eq!(most, 2, "at most two at once, and two did run at once");
    assert!(started.elapsed() >= Duration::from_secs(2));
}

#[tokio::test]
async fn workers_serve_many_files_and_failures_replace_them() {
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts").into_os_string();
    // A worker that counts its starts, answers "ok", an error or a crash by the file's name.
    let program = shell(
        r#"echo started >> "$0"
           while IFS= read -r path; do
             case "$path" in
               *crash*) echo "memory allocation of 123 bytes failed" >&2; kill -ABRT $$ ;;
               *bad*) echo "err corrupt: no trailer" ;;
               *) t="text of $(basename "$path")"; printf 'ok %d\n%s' "${#t}" "$t" ;;
             esac
           done"#,
        &[&starts],
    );
    let extractor = Extractor::new(
        ExtractLimits {
            workers: 1,
            ..small_limits()
        },
        program,
    );
    let started = || {
        std::fs::read_to_string(&starts)
            .unwrap_or_default()
            .lines()
            .count()
    };
    for name in ["a.pdf", "b.pdf", "c.pdf"] {
        let path = write(dir.path(), name, b"%PDF");
        let text = extractor.extract(&path, "application/pdf").await.unwrap();
        assert_eq!(text, format!("text of {name}"));
    }
    assert_eq!(started(), 1, "one worker served every file");
    let bad = write(dir.path(), "bad.pdf", b"%PDF");
    assert_eq!(
        assert_failed(extractor.extract(&bad, "application/pdf").await, "corrupt:"),
        "corrupt: no trailer"
    );
    assert_eq!(started(), 1, "an error answered keeps the worker");
    let crash = write(dir.path(), "crash.pdf", b"%PDF");
    let reason = assert_failed(
        extractor.extract(&crash, "application/pdf").await,
        "out of memory:",
    );
    assert!(
        reason.contains("memory allocation of 123 bytes"),
        "{reason}"
    );
    let good = write(dir.path(), "good.pdf", b"%PDF");
    assert_eq!(
        extractor.extract(&good, "application/pdf").await.unwrap(),
        "text of good.pdf"
    );
    assert_eq!(started(), 2, "a new worker after the crash");
}

/// The state letter of a process (`R`, `S`, `Z`...) and its parent, if it exists.
fn process_state(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces, so split after the last ')'.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((state, parent))
}

#[tokio::test]
async fn a_dropped_extraction_leaves_no_child_behind() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let program = shell(
        r#"echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 60"#,
        &[&pid_file.clone().into_os_string()],
    );
    let extractor = Extractor::new(small_limits(), program);
    let path = write(dir.path(), "slow.pdf", b"%PDF");
    // Boxed, so that dropping it drops the future itself (not a pinned reference to it).
    let mut extraction = Box::pin(extractor.extract(&path, "application/pdf"));
    // Run the extraction until the child has written its pid, then drop it.
    let pid: u32 = loop {
        tokio::select! {
            result = &mut extraction => panic!("the extraction ended: {result:?}"),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        if let Ok(pid) = std::fs::read_to_string(&pid_file) {
            break pid.trim().parse().unwrap();
        }
    };
    let (_, parent) = process_state(pid).expect("the child runs");
    assert_eq!(parent, std::process::id());
    drop(extraction);
    let deadline = Instant::now() + Duration::from_secs(5);
    while let Some((state, _)) = process_state(pid) {
        assert!(
            Instant::now() < deadline,
            "child {pid} still there: {state}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_timed_out_child_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let program = shell(
        r#"echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 60"#,
        &[&pid_file.clone().into_os_string()],
    );
    // Long enough for a loaded machine to start the shell and have it write its pid (whole:
    // it is renamed into place) before the timeout kills it.
    let extractor = Extractor::new(
        ExtractLimits {
            timeout: Duration::from_secs(2),
            ..small_limits()
        },
        program,
    );
    let path = write(dir.path(), "slow.pdf", b"%PDF");
    let result = extractor.extract(&path, "application/pdf").await;
    assert!(
        matches!(result, Err(ExtractError::TimedOut(_))),
        "{result:?}"
    );
    // The child is reaped by now: its pid file is there, or it never ran so far.
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("the child wrote its pid before it timed out")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(process_state(pid), None, "the child was killed and reaped");
}

/// Runs the child binary itself.
fn run_binary(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_arca-extract-text"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn child_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.pdf", &pdfgen::text_pdf(GOOD_LINES));
    let locked = write(
        dir.path(),
        "locked.pdf",
        &pdfgen::encrypted_text_pdf(GOOD_LINES, b"secret"),
    );
    let corrupt = write(dir.path(), "corrupt.pdf", b"%PDF-1.4\nnothing here\n");
    let limits = ["1000000", "268435456", "5"];
    let run = |path: &Path| {
        let path = path.to_str().unwrap();
        run_binary(&[limits[0], limits[1], limits[2], path])
    };

    let out = run(&good);
    assert_eq!(out.status.code(), Some(exit::OK));
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("University of Arca"));
    assert!(out.stderr.is_empty());

    for (path, code, kind) in [
        (&locked, exit::ENCRYPTED, "encrypted: "),
        (&corrupt, exit::CORRUPT, "corrupt: "),
        (&dir.path().join("missing.pdf"), exit::IO, "io: "),
    ] {
        let out = run(path);
        assert_eq!(out.status.code(), Some(code), "{path:?}");
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.starts_with(kind), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }

    let out = run_binary(&["1", "2", "x", "/dev/null"]);
    assert_eq!(out.status.code(), Some(exit::USAGE));
    assert_eq!(run_child(vec![]), exit::USAGE);
}

#[test]
fn worker_protocol() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.pdf", &pdfgen::text_pdf(GOOD_LINES));
    let locked = write(
        dir.path(),
        "locked.pdf",
        &pdfgen::encrypted_text_pdf(GOOD_LINES, b"secret"),
    );
    let corrupt = write(dir.path(), "corrupt.pdf", b"%PDF-1.4\nnothing here\n");
    // A name with a line break and a percent sign: both percent-encoded in the request.
    let odd = write(
        dir.path(),
        "odd\n%41.pdf",
        &pdfgen::text_pdf(&[b"an odd name"]),
    );
    let mut worker = std::process::Command::new(env!("CARGO_BIN_EXE_arca-extract-text"))
        .args([SERVE, "1000000", "268435456", "5"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = worker.stdin.take().unwrap();
    let mut stdout = BufReader::new(worker.stdout.take().unwrap());
    let mut ask = |path: &Path| {
        let line = path
            .to_str()
            .unwrap()
            .replace('%', "%25")
            .replace('\n', "%0A");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut header = String::new();
        stdout.read_line(&mut header).unwrap();
        match header.strip_prefix("ok ") {
            Some(n) => {
                let mut text = vec![0; n.trim().parse().unwrap()];
                stdout.read_exact(&mut text).unwrap();
                Ok(String::from_utf8(text).unwrap())
            }
            None => Err(header),
        }
    };
    for _ in 0..2 {
        assert!(ask(&good).unwrap().contains("University of Arca"));
        assert!(ask(&odd).unwrap().contains("an odd name"));
        let err = ask(&locked).unwrap_err();
        assert!(err.starts_with("err encrypted: "), "{err}");
        let err = ask(&corrupt).unwrap_err();
        assert!(err.starts_with("err corrupt: "), "{err}");
        let err = ask(&dir.path().join("missing.pdf")).unwrap_err();
        assert!(err.starts_with("err io: "), "{err}");
    }
    drop(stdin);
    let out = worker.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(exit::OK),
        "exits when its input ends"
    );
    assert!(
        out.stderr.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The words (lowercased runs of letters and digits) of a text.
fn words(text: &str) -> std::collections::HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[test]
fn arca_extractor_finds_the_words_pdf_extract_finds() {
    let Some(pdfs) = corpus() else { return };
    for pdf in pdfs {
        let data = std::fs::read(&pdf).unwrap();
        let ours = words(&pdf_text_in_process(&data, 10 << 20).unwrap());
        let theirs = words(&pdf_extract::extract_text_from_mem(&data).unwrap());
        let shared = ours.intersection(&theirs).count();
        let share = shared as f64 / theirs.len() as f64;
        // On the corpus: 0.85–0.97 of pdf-extract's words; most of the rest are pieces of
        // words hyphenated at a line's end ("adap", "tation"), which arca's extractor joins
        // again, as poppler's pdftotext does (see BENCHMARKS.md for both against pdftotext).
        assert!(share > 0.8, "{}: {share:.3}", pdf.display());
        assert!(ours.contains("university"), "{}", pdf.display());
        assert!(ours.len() * 10 > theirs.len() * 8, "{}", pdf.display());
    }
}

#[test]
fn text_cache_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let cache = TextCache::open(&dir.path().join("cache")).unwrap();
    let digest = "sha512:9F86D081884C7D659A2FEAA0C55AD015";
    assert_eq!(cache.get(digest), None);
    cache.put(digest, &Ok("Grüße".to_owned())).unwrap();
    assert_eq!(cache.get(digest), Some(Ok("Grüße".to_owned())));
    // Case does not matter; the algorithm does.
    assert_eq!(
        cache.get(&digest.to_lowercase()),
        Some(Ok("Grüße".to_owned()))
    );
    assert_eq!(cache.get("sha256:9f86d081884c7d659a2feaa0c55ad015"), None);
    let on_disk = dir
        .path()
        .join("cache/sha512/9f/86/9f86d081884c7d659a2feaa0c55ad015");
    assert_eq!(std::fs::read_to_string(on_disk).unwrap(), "Grüße");

    // A failure replaces the text, and the other way round.
    cache
        .put(digest, &Err("corrupt: bad xref".to_owned()))
        .unwrap();
    assert_eq!(cache.get(digest), Some(Err("corrupt: bad xref".to_owned())));
    cache.put(digest, &Ok(String::new())).unwrap();
    assert_eq!(cache.get(digest), Some(Ok(String::new())));

    let failed = "sha256:00112233445566778899";
    cache
        .put(failed, &Err("encrypted: needs a password".to_owned()))
        .unwrap();
    cache.forget_failures().unwrap();
    assert_eq!(cache.get(failed), None);
    assert_eq!(cache.get(digest), Some(Ok(String::new())));

    cache.clear().unwrap();
    assert_eq!(cache.get(digest), None);
    assert!(std::fs::read_dir(cache.dir()).unwrap().next().is_none());
    cache.put(digest, &Ok("again".to_owned())).unwrap();
    assert_eq!(cache.get(digest), Some(Ok("again".to_owned())));
    // No temporary files are left behind.
    let shard = dir.path().join("cache/sha512/9f/86");
    assert_eq!(std::fs::read_dir(shard).unwrap().count(), 1);
}

#[test]
fn text_cache_refuses_invalid_digests() {
    let dir = tempfile::tempdir().unwrap();
    let cache = TextCache::open(&dir.path().join("cache")).unwrap();
    for bad in [
        "",
        "9f86d081884c7d65",
        "sha512:../../../etc/passwd",
        "sha512:9f86d081/../../x",
        "../sha512:9f86d081884c7d65",
        "sha512:9f86",
        "sha512:9f86d08188zz7d65",
        "sha 512:9f86d081884c7d65",
    ] {
        let err = cache.put(bad, &Ok("x".to_owned())).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{bad:?}");
        assert_eq!(cache.get(bad), None);
    }
    assert!(std::fs::read_dir(cache.dir()).unwrap().next().is_none());
}

#[tokio::test]
async fn extract_cached_extracts_each_content_once() {
    let dir = tempfile::tempdir().unwrap();
    let cache = TextCache::open(&dir.path().join("cache")).unwrap();
    let extractor = extractor();

    let good = write(dir.path(), "good.pdf", &pdfgen::text_pdf(GOOD_LINES));
    let digest = "sha256:aaaaaaaaaaaaaaaa";
    let text = extractor
        .extract_cached(&cache, digest, &good, "application/pdf")
        .await
        .unwrap();
    assert!(text.contains("University of Arca"));
    // Cached: the file is no longer needed.
    std::fs::remove_file(&good).unwrap();
    let again = extractor
        .extract_cached(&cache, digest, &good, "application/pdf")
        .await
        .unwrap();
    assert_eq!(again, text);

    // A corrupt PDF's failure is remembered.
    let corrupt = write(dir.path(), "corrupt.pdf", b"%PDF-1.4 not really");
    let digest = "sha256:bbbbbbbbbbbbbbbb";
    let first = assert_failed(
        extractor
            .extract_cached(&cache, digest, &corrupt, "application/pdf")
            .await,
        "corrupt:",
    );
    assert_eq!(cache.get(digest), Some(Err(first.clone())));
    std::fs::remove_file(&corrupt).unwrap();
    let second = assert_failed(
        extractor
            .extract_cached(&cache, digest, &corrupt, "application/pdf")
            .await,
        "corrupt:",
    );
    assert_eq!(first, second);

    // A time-out is not remembered (it depends on the machine's load).
    let slow = write(dir.path(), "slow.pdf", &pdfgen::exponential_forms_pdf(60));
    let digest = "sha256:cccccccccccccccc";
    let result = quick_to_time_out()
        .extract_cached(&cache, digest, &slow, "application/pdf")
        .await;
    assert!(
        matches!(result, Err(ExtractError::TimedOut(_))),
        "{result:?}"
    );
    assert_eq!(cache.get(digest), None);
}

/// Throughput on the corpus: arca's extractor in-process on one thread and on two, pdf-extract
/// in-process on one thread, then through the workers (workers = 2), then a one-line PDF
/// through the workers (the cost of a round trip).
///
/// ```text
/// cargo test --release -p arca-search --test it -- --ignored --nocapture extract::measure_throughput
/// ```
///
/// `ARCA_EXTRACT_MEASURE_SECS` sets the length of each run (default 20 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a test: run it in release"]
async fn measure_throughput() {
    let Some(pdfs) = corpus() else { return };
    let secs: u64 = std::env::var("ARCA_EXTRACT_MEASURE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let run_for = Duration::from_secs(secs);
    let files: Vec<(PathBuf, Vec<u8>)> = pdfs
        .iter()
        .map(|p| (p.clone(), std::fs::read(p).unwrap()))
        .collect();
    let report = |what: &str, docs: u64, bytes: u64, elapsed: Duration| {
        let s = elapsed.as_secs_f64();
        println!(
            "{what}: {docs} documents in {s:.1} s = {:.1} docs/s, {:.2} MB/s",
            docs as f64 / s,
            bytes as f64 / s / 1e6
        );
    };

    // (a) in-process: arca's extractor on one thread, then two; pdf-extract on one.
    for (threads, ours) in [(1u64, true), (2, true), (1, false)] {
        let started = Instant::now();
        let (docs, bytes) = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let files = &files;
                    scope.spawn(move || {
                        let (mut docs, mut bytes) = (0u64, 0u64);
                        let mut i = t as usize;
                        while started.elapsed() < run_for {
                            let (_, data) = &files[i % files.len()];
                            let text = if ours {
                                pdf_text_in_process(data, 10 << 20).unwrap()
                            } else {
                                pdf_extract::extract_text_from_mem(data).unwrap()
                            };
                            assert!(!text.is_empty());
                            docs += 1;
                            bytes += data.len() as u64;
                            i += 1;
                        }
                        (docs, bytes)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .fold((0, 0), |(d, b), (d2, b2)| (d + d2, b + b2))
        });
        let who = if ours {
            "arca's extractor"
        } else {
            "pdf-extract"
        };
        report(
            &format!("{who} in-process, {threads} thread(s)"),
            docs,
            bytes,
            started.elapsed(),
        );
    }

    // (b) through the workers, workers = 2: four loops compete for the two permits.
    let dir = tempfile::tempdir().unwrap();
    let tiny = write(dir.path(), "tiny.pdf", &pdfgen::text_pdf(&[b"hello"]));
    let tiny_len = std::fs::metadata(&tiny).unwrap().len();
    let extractor = Arc::new(Extractor::new(
        ExtractLimits {
            workers: 2,
            ..ExtractLimits::default()
        },
        child_program(),
    ));
    let corpus_paths: Vec<(PathBuf, u64)> = files
        .iter()
        .map(|(p, d)| (p.clone(), d.len() as u64))
        .collect();
    let tiny_paths = vec![(tiny, tiny_len)];
    for (what, paths) in [
        ("workers = 2", corpus_paths),
        ("one-line PDF (a round trip), workers = 2", tiny_paths),
    ] {
        let paths = Arc::new(paths);
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for t in 0..4 {
            let extractor = Arc::clone(&extractor);
            let paths = Arc::clone(&paths);
            tasks.spawn(async move {
                let (mut docs, mut bytes) = (0u64, 0u64);
                let mut i = t;
                while started.elapsed() < run_for {
                    let (path, len) = &paths[i % paths.len()];
                    let text = extractor.extract(path, "application/pdf").await.unwrap();
                    assert!(!text.is_empty());
                    docs += 1;
                    bytes += len;
                    i += 1;
                }
                (docs, bytes)
            });
        }
        let (mut docs, mut bytes) = (0, 0);
        while let Some(joined) = tasks.join_next().await {
            let (d, b) = joined.unwrap();
            docs += d;
            bytes += b;
        }
        report(what, docs, bytes, started.elapsed());
    }

    // (c) the corpus again through `extract_cached`: the first round extracts and fills the
    // cache, the rest are cache hits (a reindex, or many copies of the same content).
    let cache = TextCache::open(&dir.path().join("cache")).unwrap();
    let digests: Vec<String> = (0..files.len())
        .map(|i| format!("sha256:{:064x}", i + 1))
        .collect();
    let started = Instant::now();
    let (mut docs, mut bytes, mut i) = (0u64, 0u64, 0usize);
    while started.elapsed() < run_for {
        let (path, data) = &files[i % files.len()];
        let text = extractor
            .extract_cached(&cache, &digests[i % files.len()], path, "application/pdf")
            .await
            .unwrap();
        assert!(!text.is_empty());
        docs += 1;
        bytes += data.len() as u64;
        i += 1;
    }
    report(
        "extract_cached, one task (7 extractions, then cache hits)",
        docs,
        bytes,
        started.elapsed(),
    );
}
