//! Text extraction from stored binaries for the full-text index, with hard bounds on time and
//! memory, and a cache of extracted text keyed by content digest.
//!
//! The indexer calls [`Extractor::extract`] for each binary whose text it wants, off the write
//! path, several at once. Two kinds of content are extracted:
//!
//! - text (`text/*`, `application/xml`, `application/json`, `+xml`/`+json` suffixes) is read in
//!   process, at most [`ExtractLimits::max_text_bytes`] of it, and decoded (see [`Extractor`]);
//! - PDF is handed to a **worker process** (`arca-extract-text --serve`, or the `arca
//!   extract-text --serve` hidden subcommand; both call [`run_child`]) that limits its own
//!   address space and CPU time, because a PDF reader can panic, loop or allocate without bound
//!   on corrupt or adversarial input. The worker reads each PDF with arca's own extractor
//!   ([`pdf`]: fast, reads only what text needs) and gives what that refuses to `pdf-extract`.
//!   Workers live on between PDFs (at most [`ExtractLimits::workers`] of them, each replaced
//!   after [`WORKER_FILES`] files); the parent adds a wall-clock timeout per PDF, reads a
//!   bounded amount of output, and kills the worker when it fails, times out or the call's
//!   future is dropped (the next PDF starts a new one).
//!
//! [`TextCache`] keeps the result per content digest, so each distinct content is extracted once;
//! [`Extractor::extract_cached`] puts the two together.
//!
//! # The worker's protocol
//!
//! ```text
//! <program> [<leading args>...] --serve <max_text_bytes> <memory_bytes> <cpu_seconds>
//! ```
//!
//! The worker sets `RLIMIT_AS` to `memory_bytes`, `RLIMIT_CORE` to 0 and `RLIMIT_NOFILE` to 16,
//! then reads requests from standard input, one line each: the path of a PDF, with `%` and line
//! breaks percent-encoded. Before each it sets its soft `RLIMIT_CPU` to `cpu_seconds` beyond the
//! CPU time it has used. It answers each on standard output with `ok <n>` and a line break
//! followed by `n` bytes of text (UTF-8, at most `max_text_bytes`), or with one line
//! `err <kind>: <detail>` (kinds as below); it exits 0 when standard input ends. A worker that
//! dies mid-request (out of memory, stack overflow, `SIGXCPU`) is recognised from its exit
//! status and standard error, as a one-file child is.
//!
//! # One file: the child's protocol
//!
//! ```text
//! <program> [<leading args>...] <max_text_bytes> <memory_bytes> <cpu_seconds> <path>
//! ```
//!
//! For extracting one file by hand. All four are positional; the numbers are decimal. The child sets `RLIMIT_AS` to
//! `memory_bytes`, `RLIMIT_CPU` to `cpu_seconds` (hard limit one second later), `RLIMIT_CORE` to
//! 0 and `RLIMIT_NOFILE` to 16, never reads standard input, and extracts the text inside
//! `catch_unwind`. On success it writes the text (UTF-8, at most `max_text_bytes`, cut at a
//! character boundary) to standard output and exits 0. On failure it writes one line
//! `<kind>: <detail>` to standard error and exits with one of the codes in [`exit`]. A child that
//! runs out of memory is aborted by the Rust runtime (`SIGABRT`, "memory allocation of N bytes
//! failed"), one that overflows its stack likewise ("has overflowed its stack"), one that exceeds
//! its CPU time gets `SIGXCPU`: the parent recognises these and says so in
//! [`ExtractError::Failed`] or returns [`ExtractError::TimedOut`].
//!
//! This module is for Unix (it uses `setrlimit` and signals).

mod cache;
mod child;
pub mod pdf;
mod text;

use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::Semaphore;

pub use cache::TextCache;
pub use child::run_child;

/// The argument that makes the program a worker (see the [module docs](self)).
pub const SERVE: &str = "--serve";
/// PDFs one worker extracts before it is replaced (so that nothing a reader leaks piles up).
pub const WORKER_FILES: u32 = 1000;

/// The text of a PDF extracted in this process, without the worker's limits: arca's
/// extractor, else pdf-extract, as the worker does. For measurements and tests; the indexer
/// always goes through [`Extractor`].
pub fn pdf_text_in_process(data: &[u8], max_text_bytes: usize) -> Result<String, String> {
    child::pdf_text_unisolated(data, max_text_bytes)
}

/// The exit codes of the child ([`run_child`]); every failure also writes one line
/// `<kind>: <detail>` to standard error.
pub mod exit {
    /// The text was written to standard output.
    pub const OK: i32 = 0;
    /// The arguments were not `<max_text_bytes> <memory_bytes> <cpu_seconds> <path>`.
    pub const USAGE: i32 = 2;
    /// The file could not be opened or read, the limits could not be set, or the text could not
    /// be written.
    pub const IO: i32 = 3;
    /// The PDF is corrupt: it could not be parsed or its content could not be interpreted.
    pub const CORRUPT: i32 = 4;
    /// The PDF is encrypted with a password we do not have, or with an unsupported handler.
    pub const ENCRYPTED: i32 = 5;
    /// The extractor panicked (which in practice means a PDF it could not cope with).
    pub const PANICKED: i32 = 6;
}

/// Bounds on one extraction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractLimits {
    /// Files larger than this are not extracted ([`ExtractError::TooLarge`]). Default 256 MiB.
    pub max_input_bytes: u64,
    /// Text beyond this many bytes (UTF-8) is cut at a character boundary. Default 10 MiB.
    pub max_text_bytes: usize,
    /// Wall-clock bound on one PDF extraction, child start-up included; the child's CPU limit is
    /// this rounded up, plus one second. Default 30 s.
    pub timeout: Duration,
    /// The child's address-space limit (`RLIMIT_AS`). Default 1 GiB.
    pub memory_bytes: u64,
    /// How many extractions (text or PDF) run at once. Default: the number of available cores.
    pub workers: usize,
}

impl Default for ExtractLimits {
    fn default() -> Self {
        ExtractLimits {
            max_input_bytes: 256 << 20,
            max_text_bytes: 10 << 20,
            timeout: Duration::from_secs(30),
            memory_bytes: 1 << 30,
            workers: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        }
    }
}

impl ExtractLimits {
    /// The child's `RLIMIT_CPU` in seconds: the timeout rounded up, plus one.
    fn cpu_seconds(&self) -> u64 {
        self.timeout.as_secs_f64().ceil() as u64 + 1
    }
}

/// Why a binary has no text.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// The media type is not one we extract (see [`is_extractable`]).
    #[error("text extraction is not supported for media type {media_type:?}")]
    Unsupported {
        /// The media type as given.
        media_type: String,
    },
    /// The file is larger than [`ExtractLimits::max_input_bytes`].
    #[error("file of {size} bytes exceeds the extraction limit of {limit} bytes")]
    TooLarge {
        /// The file's size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The child ran longer than [`ExtractLimits::timeout`] (wall clock or CPU) and was killed.
    #[error("text extraction timed out after {0:?}")]
    TimedOut(Duration),
    /// The child failed; the reason starts with its kind: `corrupt:`, `encrypted:`,
    /// `out of memory:`, `crashed:`, `io:` or `usage:`.
    #[error("text extraction failed: {0}")]
    Failed(String),
    /// The file could not be read, or the child could not be started.
    #[error("text extraction I/O error: {0}")]
    Io(#[from] io::Error),
}

impl ExtractError {
    /// Whether this failure depends only on the content (and the limits), so that it is worth
    /// remembering in a [`TextCache`]: true for [`ExtractError::Failed`] only. Time-outs depend on
    /// the machine's load and I/O errors are transient; unsupported types and sizes are cheap to
    /// check again.
    pub fn is_cacheable(&self) -> bool {
        matches!(self, ExtractError::Failed(_))
    }
}

/// What we do with one media type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text(text::Charset),
    Pdf,
}

/// The kind of extraction for a media type (`type/subtype; param=value...`), if any.
fn kind_of(media_type: &str) -> Option<Kind> {
    let mut parts = media_type.split(';');
    let essence = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let (top, sub) = essence.split_once('/')?;
    if top.is_empty() || sub.is_empty() {
        return None;
    }
    if essence == "application/pdf" || essence == "application/x-pdf" {
        return Some(Kind::Pdf);
    }
    let textual = top == "text"
        || essence == "application/xml"
        || essence == "application/json"
        || sub.ends_with("+xml")
        || sub.ends_with("+json");
    if !textual {
        return None;
    }
    let charset = parts
        .filter_map(|param| param.split_once('='))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("charset"))
        .map(|(_, value)| text::Charset::from_label(value.trim().trim_matches('"')))
        .unwrap_or_default();
    Some(Kind::Text(charset))
}

/// Whether a media type is one we extract: `text/*`, `application/pdf` (and `application/x-pdf`),
/// `application/xml`, `application/json`, and any `+xml` or `+json` suffix. Parameters are
/// ignored; case does not matter.
pub fn is_extractable(media_type: &str) -> bool {
    kind_of(media_type).is_some()
}

/// The program that extracts one PDF: a path and leading arguments; the limits and the file path
/// are appended (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractProgram {
    /// The executable, e.g. the path of `arca-extract-text` or of the `arca` binary itself.
    pub program: PathBuf,
    /// Arguments before the limits, e.g. `["extract-text"]` for the `arca` subcommand.
    pub args: Vec<OsString>,
}

impl ExtractProgram {
    /// A program with leading arguments.
    pub fn new<I, A>(program: impl Into<PathBuf>, args: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        ExtractProgram {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
        }
    }
}

/// Extracts text from binaries within [`ExtractLimits`]; share one per server (`&self` methods,
/// the concurrency bound is per `Extractor`).
///
/// Text is decoded as UTF-8 (lossily), unless a byte-order mark or the media type's `charset=`
/// parameter says otherwise: ISO-8859-1/latin1 and windows-1252 are decoded as windows-1252 (as
/// browsers do; it only differs in 0x80–0x9F, control characters in ISO-8859-1), US-ASCII as
/// UTF-8, UTF-16 with its byte-order mark or big-endian without one, UTF-16LE/BE as labelled.
/// Other charsets are decoded as UTF-8, lossily.
#[derive(Debug)]
pub struct Extractor {
    limits: ExtractLimits,
    program: ExtractProgram,
    permits: Arc<Semaphore>,
    /// Workers waiting for a PDF (at most `limits.workers`).
    idle: Mutex<Vec<Worker>>,
}

impl Extractor {
    /// An extractor that runs at most `limits.workers` (at least one) extractions at once and
    /// `program` for PDFs.
    pub fn new(limits: ExtractLimits, program: ExtractProgram) -> Self {
        let permits = Arc::new(Semaphore::new(limits.workers.max(1)));
        Extractor {
            limits,
            program,
            permits,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// The limits this extractor applies.
    pub fn limits(&self) -> &ExtractLimits {
        &self.limits
    }

    /// The text of the file at `path`, whose media type is `media_type`.
    ///
    /// Text types are read in-process (at most `max_text_bytes` of text); PDFs by a worker.
    /// At most `workers` extractions run at once; the rest wait their turn. Cancel-safe: dropping
    /// the future kills the worker, if one is extracting for it.
    ///
    /// Errors: [`ExtractError::Unsupported`] before any I/O; [`ExtractError::TooLarge`] after a
    /// `stat`; [`ExtractError::TimedOut`] and [`ExtractError::Failed`] from the worker;
    /// [`ExtractError::Io`] if the file cannot be read or the worker cannot be started.
    pub async fn extract(&self, path: &Path, media_type: &str) -> Result<String, ExtractError> {
        let kind = kind_of(media_type).ok_or_else(|| ExtractError::Unsupported {
            media_type: media_type.to_owned(),
        })?;
        let size = tokio::fs::metadata(path).await?.len();
        if size > self.limits.max_input_bytes {
            return Err(ExtractError::TooLarge {
                size,
                limit: self.limits.max_input_bytes,
            });
        }
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| io::Error::other("the extractor's semaphore is closed"))?;
        match kind {
            Kind::Text(charset) => {
                let path = path.to_owned();
                let max = self.limits.max_text_bytes;
                // The permit moves into the blocking task, so it is held until the read ends
                // even if this future is dropped first.
                tokio::task::spawn_blocking(move || {
                    let _permit = permit;
                    text::read_text(&path, charset, max)
                })
                .await
                .map_err(|e| io::Error::other(format!("text extraction task failed: {e}")))?
                .map_err(ExtractError::Io)
            }
            Kind::Pdf => {
                let result = self.run_worker(path).await;
                drop(permit);
                result
            }
        }
    }

    /// Like [`Extractor::extract`], but through `cache`: a cached text or failure is returned
    /// without extracting; otherwise the text, or a [cacheable](ExtractError::is_cacheable)
    /// failure, is stored under `digest` (the binary's content digest, e.g. `sha512:9f86…`).
    /// A cached failure comes back as [`ExtractError::Failed`]. The cache is best effort: an
    /// invalid digest or a failed write is logged and the extraction's result returned anyway.
    pub async fn extract_cached(
        &self,
        cache: &TextCache,
        digest: &str,
        path: &Path,
        media_type: &str,
    ) -> Result<String, ExtractError> {
        if !is_extractable(media_type) {
            return Err(ExtractError::Unsupported {
                media_type: media_type.to_owned(),
            });
        }
        if let Some(cached) = cache.get(digest) {
            return cached.map_err(ExtractError::Failed);
        }
        let result = self.extract(path, media_type).await;
        let entry = match &result {
            Ok(text) => Some(Ok(text.clone())),
            Err(ExtractError::Failed(reason)) => Some(Err(reason.clone())),
            Err(_) => None,
        };
        if let Some(entry) = entry {
            if let Err(e) = cache.put(digest, &entry) {
                tracing::warn!(digest, error = %e, "could not cache extracted text");
            }
        }
        result
    }

    /// Extracts `path` with an idle worker, or a new one; a worker that answered goes back to
    /// the idle ones (until it has served [`WORKER_FILES`] files), any other is killed.
    async fn run_worker(&self, path: &Path) -> Result<String, ExtractError> {
        let idle = self.idle.lock().pop();
        let mut worker = match idle {
            Some(w) => w,
            None => Worker::spawn(&self.program, &self.limits)?,
        };
        let limits = &self.limits;
        let answer = match tokio::time::timeout(limits.timeout, worker.request(path, limits)).await
        {
            Ok(answer) => answer,
            Err(_elapsed) => {
                worker.kill().await;
                return Err(ExtractError::TimedOut(limits.timeout));
            }
        };
        match answer {
            Ok(result) => {
                worker.served = worker.served.saturating_add(1);
                if worker.served < WORKER_FILES {
                    self.idle.lock().push(worker);
                } else {
                    worker.kill().await;
                }
                result
            }
            Err(Broken::Io(e)) => {
                worker.kill().await;
                Err(ExtractError::Io(e))
            }
            Err(Broken::Protocol(what)) => {
                worker.kill().await;
                Err(ExtractError::Failed(format!("crashed: {what}")))
            }
            Err(Broken::Died) => {
                let (status, stderr) = worker.reap().await?;
                Err(self.failure(status, &stderr))
            }
        }
    }

    /// The error for a worker (or a child) that did not succeed.
    fn failure(&self, status: ExitStatus, stderr: &[u8]) -> ExtractError {
        let stderr = String::from_utf8_lossy(stderr);
        let line = last_line(&stderr);
        if let Some(code) = status.code() {
            if !line.is_empty() {
                return ExtractError::Failed(line);
            }
            let kind = match code {
                exit::USAGE => "usage",
                exit::IO => "io",
                exit::CORRUPT | exit::PANICKED => "corrupt",
                exit::ENCRYPTED => "encrypted",
                _ => "crashed",
            };
            return ExtractError::Failed(format!("{kind}: the extractor exited with code {code}"));
        }
        let signal = status.signal().unwrap_or(0);
        if signal == libc::SIGXCPU {
            return ExtractError::TimedOut(self.limits.timeout);
        }
        if let Some(allocation) = stderr.lines().find(|l| l.contains("memory allocation of")) {
            return ExtractError::Failed(format!(
                "out of memory: {} (limit {} bytes)",
                allocation.trim(),
                self.limits.memory_bytes
            ));
        }
        if stderr.contains("overflowed its stack") {
            return ExtractError::Failed(
                "corrupt: stack overflow (the PDF nests too deeply)".to_owned(),
            );
        }
        let name = match signal {
            libc::SIGKILL => "SIGKILL (CPU or memory limit)",
            libc::SIGSEGV => "SIGSEGV",
            libc::SIGBUS => "SIGBUS",
            libc::SIGABRT => "SIGABRT",
            _ => "a signal",
        };
        let detail = if line.is_empty() {
            String::new()
        } else {
            format!(": {line}")
        };
        ExtractError::Failed(format!("crashed: killed by {name} ({signal}){detail}"))
    }
}

/// How much of a worker's standard error we keep.
const STDERR_TAIL: usize = 4096;
/// The longest answer line we read.
const ANSWER_LINE: u64 = 4096;

/// Why a request got no answer.
enum Broken {
    /// Writing the request or reading the answer failed.
    Io(io::Error),
    /// The worker ended its output (it died, or exited).
    Died,
    /// The worker answered something that is not the protocol.
    Protocol(String),
}

/// A running worker (see the [module docs](self)), killed when dropped.
#[derive(Debug)]
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The last [`STDERR_TAIL`] bytes of its standard error, filled by a task.
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_done: tokio::task::JoinHandle<()>,
    served: u32,
}

impl Worker {
    fn spawn(program: &ExtractProgram, limits: &ExtractLimits) -> io::Result<Worker> {
        let mut child = tokio::process::Command::new(&program.program)
            .args(&program.args)
            .arg(SERVE)
            .arg(limits.max_text_bytes.to_string())
            .arg(limits.memory_bytes.to_string())
            .arg(limits.cpu_seconds().to_string())
            // mimalloc (the allocator of `arca`, whose `extract-text` the workers are)
            // reserves a 1 GiB arena of address space up front by default, which the
            // worker's RLIMIT_AS cannot hold: below 1 GiB the workers crashed (SIGSEGV).
            // Arenas of 16 MiB fit any sensible limit; reserving none made every large
            // buffer (a file, an inflated stream) a fresh mapping faulted in page by page,
            // ~55 page faults per PDF (BENCHMARKS, issue #12).
            .env("MIMALLOC_ARENA_RESERVE", "16MiB")
            // Backtraces would bury the one line that says why.
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(stdin), Some(stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(io::Error::other("the worker's pipes are missing"));
        };
        let tail = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&tail);
        let stderr_done = tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut tail = sink.lock();
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > STDERR_TAIL {
                    let excess = tail.len() - STDERR_TAIL;
                    tail.drain(..excess);
                }
            }
        });
        Ok(Worker {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            stderr: tail,
            stderr_done,
            served: 0,
        })
    }

    /// Asks for the text of `path` and reads the answer: the extraction's result, or why
    /// there is none.
    async fn request(
        &mut self,
        path: &Path,
        limits: &ExtractLimits,
    ) -> Result<Result<String, ExtractError>, Broken> {
        use std::os::unix::ffi::OsStrExt;
        const ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS.add(b'%');
        // What the worker said about earlier files is no concern of this one.
        self.stderr.lock().clear();
        let mut line =
            percent_encoding::percent_encode(path.as_os_str().as_bytes(), ESCAPED).to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.map_err(|e| {
            if e.kind() == io::ErrorKind::BrokenPipe {
                Broken::Died
            } else {
                Broken::Io(e)
            }
        })?;
        self.stdin.flush().await.map_err(|e| {
            if e.kind() == io::ErrorKind::BrokenPipe {
                Broken::Died
            } else {
                Broken::Io(e)
            }
        })?;
        let mut header = Vec::new();
        (&mut self.stdout)
            .take(ANSWER_LINE)
            .read_until(b'\n', &mut header)
            .await
            .map_err(Broken::Io)?;
        if header.is_empty() {
            return Err(Broken::Died);
        }
        if header.pop() != Some(b'\n') {
            return Err(Broken::Protocol("an answer line without its end".into()));
        }
        let header = String::from_utf8_lossy(&header);
        if let Some(failure) = header.strip_prefix("err ") {
            return Ok(Err(ExtractError::Failed(last_line(failure))));
        }
        let Some(n) = header
            .strip_prefix("ok ")
            .and_then(|n| n.trim().parse::<usize>().ok())
        else {
            return Err(Broken::Protocol(format!(
                "the worker answered {:?}",
                last_line(&header)
            )));
        };
        let max = limits.max_text_bytes;
        let mut text = Vec::with_capacity(n.min(max));
        (&mut self.stdout)
            .take(n.min(max) as u64)
            .read_to_end(&mut text)
            .await
            .map_err(Broken::Io)?;
        if text.len() < n.min(max) {
            return Err(Broken::Died);
        }
        if n > max {
            // More than we asked for: we have all we want, but the rest of the answer is
            // still in the pipe, so this worker cannot serve again.
            self.served = WORKER_FILES;
        }
        Ok(Ok(text::utf8_cut(text, max)))
    }

    /// Waits for the worker to end (it has closed its output) and takes its status and the
    /// tail of its standard error.
    async fn reap(mut self) -> io::Result<(ExitStatus, Vec<u8>)> {
        let status = match tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await {
            Ok(status) => status?,
            Err(_) => {
                let _ = self.child.start_kill();
                self.child.wait().await?
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), &mut self.stderr_done).await;
        let tail = std::mem::take(&mut *self.stderr.lock());
        Ok((status, tail))
    }

    /// Kills the worker and waits for it.
    async fn kill(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        self.stderr_done.abort();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stderr_done.abort();
    }
}

/// The last non-empty line, trimmed and at most 300 characters long.
fn last_line(s: &str) -> String {
    let line = s.lines().rev().map(str::trim).find(|l| !l.is_empty());
    line.unwrap_or("").chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types() {
        for yes in [
            "text/plain",
            "TEXT/HTML; charset=utf-8",
            "application/pdf",
            "application/xml",
            "application/json",
            "application/ld+json",
            "image/svg+xml",
        ] {
            assert!(is_extractable(yes), "{yes}");
        }
        for no in [
            "image/png",
            "application/octet-stream",
            "application/zip",
            "text",
            "/plain",
            "",
        ] {
            assert!(!is_extractable(no), "{no}");
        }
        assert_eq!(
            kind_of("text/plain; format=flowed; charset=\"ISO-8859-1\""),
            Some(Kind::Text(text::Charset::Windows1252))
        );
        assert_eq!(kind_of("application/PDF"), Some(Kind::Pdf));
    }

    #[test]
    fn cpu_seconds_round_up() {
        let limits = ExtractLimits {
            timeout: Duration::from_millis(1500),
            ..ExtractLimits::default()
        };
        assert_eq!(limits.cpu_seconds(), 3);
    }

    #[test]
    fn a_doubtful_pdf_text_falls_back_to_pdf_extract() {
        let data = pdf::testpdf::unmapped();
        let Err(pdf::PdfError::Doubtful(doubted)) = pdf::extract(&data, 1 << 20) else {
            panic!("the fast path trusts its text of unmapped glyphs");
        };
        let by_pdf_extract = pdf_extract::extract_text_from_mem(&data).unwrap();
        let text = pdf_text_in_process(&data, 1 << 20).unwrap();
        assert_ne!(text, doubted.text);
        assert_eq!(text, by_pdf_extract);
    }

    #[test]
    fn a_trusted_pdf_text_does_not_fall_back() {
        let data = pdf::testpdf::good();
        let fast = pdf::extract(&data, 1 << 20).unwrap();
        let by_pdf_extract = pdf_extract::extract_text_from_mem(&data).unwrap();
        assert_ne!(
            fast, by_pdf_extract,
            "the two readers' texts must differ to tell them apart"
        );
        assert_eq!(pdf_text_in_process(&data, 1 << 20).unwrap(), fast);
    }

    #[test]
    fn last_line_skips_blank_lines() {
        assert_eq!(last_line("a\nb: c \n\n"), "b: c");
        assert_eq!(last_line(""), "");
    }
}
