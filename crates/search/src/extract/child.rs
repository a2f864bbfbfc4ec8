//! The child's side: extract the text of PDFs within rlimits, report on stdout/stderr.
//!
//! Each PDF goes first to arca's own extractor ([`super::pdf`]); whatever it refuses or cannot
//! read goes to pdf-extract, so a file is never worse off than with pdf-extract alone.

use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, Read, Write};
use std::os::fd::AsFd;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;

use pdf_extract::{ConvertToFmt, Document, OutputError, PlainTextOutput};
use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

use super::{exit, pdf, SERVE};

/// The child's side of PDF extraction, for `arca-extract-text` and the `arca extract-text`
/// hidden subcommand: `args` are `[max_text_bytes, memory_bytes, cpu_seconds, path]` for one
/// file, or `[--serve, max_text_bytes, memory_bytes, cpu_seconds]` for a worker that extracts
/// one file per request until its standard input ends (see the [module docs](super)).
///
/// Opens the file, then sets `RLIMIT_AS` (`memory_bytes`), `RLIMIT_CPU` (`cpu_seconds`, hard
/// limit one more), `RLIMIT_CORE` (0) and `RLIMIT_NOFILE` (16); never reads standard input;
/// points its own file descriptor 1 at standard error while extracting, so that nothing but the
/// text reaches standard output; extracts inside `catch_unwind`; writes the text, cut to
/// `max_text_bytes` at a character boundary, to standard output. Returns the exit code
/// ([`exit`]); on failure it has written one line `<kind>: <detail>` to standard error.
pub fn run_child(args: Vec<OsString>) -> i32 {
    if args.first().is_some_and(|a| a == SERVE) {
        return match serve(args[1..].to_vec()) {
            Ok(()) => exit::OK,
            Err(failure) => {
                let _ = writeln!(io::stderr().lock(), "{}: {failure}", failure.kind());
                failure.code()
            }
        };
    }
    match run(args) {
        Ok(()) => exit::OK,
        Err(failure) => {
            let _ = writeln!(io::stderr().lock(), "{}: {failure}", failure.kind());
            failure.code()
        }
    }
}

/// Why the child failed.
#[derive(Debug)]
enum Failure {
    Usage(String),
    Io(String),
    Corrupt(String),
    Encrypted(String),
    Panicked(String),
}

impl Failure {
    /// The exit code of a one-file child that failed so.
    fn code(&self) -> i32 {
        match self {
            Failure::Usage(_) => exit::USAGE,
            Failure::Io(_) => exit::IO,
            Failure::Corrupt(_) => exit::CORRUPT,
            Failure::Encrypted(_) => exit::ENCRYPTED,
            Failure::Panicked(_) => exit::PANICKED,
        }
    }

    /// The kind that starts the failure's line.
    fn kind(&self) -> &'static str {
        match self {
            Failure::Usage(_) => "usage",
            Failure::Io(_) => "io",
            Failure::Corrupt(_) | Failure::Panicked(_) => "corrupt",
            Failure::Encrypted(_) => "encrypted",
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Usage(detail) => write!(
                f,
                "{detail}; expected <max_text_bytes> <memory_bytes> <cpu_seconds> <path>"
            ),
            Failure::Io(detail) | Failure::Corrupt(detail) | Failure::Encrypted(detail) => {
                // One line, whatever the library said.
                write!(f, "{}", detail.replace('\n', " "))
            }
            Failure::Panicked(detail) => {
                write!(f, "the extractor panicked: {}", detail.replace('\n', " "))
            }
        }
    }
}

/// The parsed arguments.
struct Args {
    max_text_bytes: usize,
    memory_bytes: u64,
    cpu_seconds: u64,
    path: PathBuf,
}

impl Args {
    fn parse(args: Vec<OsString>) -> Result<Args, Failure> {
        let [max_text, memory, cpu, path]: [OsString; 4] = args
            .try_into()
            .map_err(|args: Vec<OsString>| Failure::Usage(format!("{} arguments", args.len())))?;
        fn number<T: std::str::FromStr>(name: &str, value: &OsString) -> Result<T, Failure> {
            value
                .to_str()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| Failure::Usage(format!("{name} is not a number: {value:?}")))
        }
        Ok(Args {
            max_text_bytes: number("max_text_bytes", &max_text)?,
            memory_bytes: number("memory_bytes", &memory)?,
            cpu_seconds: number("cpu_seconds", &cpu)?,
            path: PathBuf::from(path),
        })
    }
}

fn run(args: Vec<OsString>) -> Result<(), Failure> {
    let args = Args::parse(args)?;
    let mut stdout = File::from(
        io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| Failure::Io(format!("cannot duplicate standard output: {e}")))?,
    );
    redirect_stdout_to_stderr()?;
    let file = File::open(&args.path)
        .map_err(|e| Failure::Io(format!("cannot open {}: {e}", args.path.display())))?;
    set_limits(&args).map_err(|e| Failure::Io(format!("cannot set resource limits: {e}")))?;
    // The default hook would print a multi-line message; the payload says enough.
    panic::set_hook(Box::new(|_| {}));
    let text = extract_file(file, &args.path, args.max_text_bytes, &mut Vec::new())?;
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| Failure::Io(format!("cannot write the text: {e}")))
}

/// The largest file buffer a worker keeps for the next file.
const KEEP_BUFFER_BYTES: usize = 16 << 20;

/// Reads `file` (at `path`) into `data` (emptied first; a worker passes the same buffer for
/// every file, so its pages stay mapped instead of being faulted in afresh per file) and
/// extracts its text, catching panics.
fn extract_file(
    mut file: File,
    path: &std::path::Path,
    max: usize,
    data: &mut Vec<u8>,
) -> Result<String, Failure> {
    data.clear();
    file.read_to_end(data)
        .map_err(|e| Failure::Io(format!("cannot read {}: {e}", path.display())))?;
    drop(file);
    let data = &data[..];
    panic::catch_unwind(AssertUnwindSafe(|| pdf_text(data, max))).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_owned());
        Failure::Panicked(message)
    })?
}

/// The worker: `args` are `[max_text_bytes, memory_bytes, cpu_seconds]`. Sets the limits once
/// (the CPU limit moves on before each file: `cpu_seconds` more than used so far), then
/// answers each request line (a path, `%` and line breaks percent-encoded) with
/// `ok <n>\n` and `n` bytes of text, or one line `err <kind>: <detail>`; ends when standard
/// input does.
fn serve(args: Vec<OsString>) -> Result<(), Failure> {
    let [max_text, memory, cpu]: [OsString; 3] =
        args.try_into().map_err(|args: Vec<OsString>| {
            Failure::Usage(format!("{} arguments after --serve", args.len()))
        })?;
    let args = Args::parse(vec![max_text, memory, cpu, OsString::new()])?;
    let mut stdout = File::from(
        io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| Failure::Io(format!("cannot duplicate standard output: {e}")))?,
    );
    redirect_stdout_to_stderr()?;
    set_limits(&args).map_err(|e| Failure::Io(format!("cannot set resource limits: {e}")))?;
    panic::set_hook(Box::new(|_| {}));
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    let mut data = Vec::new();
    loop {
        line.clear();
        let n = input
            .read_until(b'\n', &mut line)
            .map_err(|e| Failure::Io(format!("cannot read a request: {e}")))?;
        if n == 0 {
            return Ok(());
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let path = PathBuf::from(std::ffi::OsString::from(
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&unescape(&line)),
        ));
        move_cpu_limit(args.cpu_seconds)
            .map_err(|e| Failure::Io(format!("cannot set the CPU limit: {e}")))?;
        let result = File::open(&path)
            .map_err(|e| Failure::Io(format!("cannot open {}: {e}", path.display())))
            .and_then(|file| extract_file(file, &path, args.max_text_bytes, &mut data));
        if data.capacity() > KEEP_BUFFER_BYTES {
            // An exceptional file's buffer would count against the next files' memory limit.
            data = Vec::new();
        }
        let written = match result {
            Ok(text) => writeln!(stdout, "ok {}", text.len())
                .and_then(|()| stdout.write_all(text.as_bytes())),
            Err(failure) => writeln!(stdout, "err {}: {failure}", failure.kind()),
        };
        written
            .and_then(|()| stdout.flush())
            .map_err(|e| Failure::Io(format!("cannot write an answer: {e}")))?;
    }
}

/// Percent-decodes a request line.
fn unescape(line: &[u8]) -> Vec<u8> {
    percent_encoding::percent_decode(line).collect()
}

/// Sets the soft CPU limit `seconds` beyond the CPU time used so far (the hard limit stays).
fn move_cpu_limit(seconds: u64) -> io::Result<()> {
    // The CPU time of the process (user and system), whole seconds, rounded up.
    let cpu = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    let used = u64::try_from(cpu.tv_sec).unwrap_or(0) + 1;
    let current = getrlimit(Resource::Cpu);
    let hard = current.maximum.unwrap_or(u64::MAX);
    let wanted = Rlimit {
        current: Some((used + seconds.max(1)).min(hard)),
        maximum: current.maximum,
    };
    Ok(setrlimit(Resource::Cpu, wanted)?)
}

/// Points file descriptor 1 at standard error, so that a stray print in a library cannot corrupt
/// the text (which goes to the duplicate taken before).
fn redirect_stdout_to_stderr() -> Result<(), Failure> {
    // fd 1 is only ever written through `std::io::stdout`, which stays valid (it now
    // reaches stderr).
    rustix::stdio::dup2_stdout(io::stderr()).map_err(|e| {
        Failure::Io(format!(
            "cannot redirect standard output: {}",
            io::Error::from(e)
        ))
    })
}

/// Lowers the resource limits (never above the hard limits already in force).
fn set_limits(args: &Args) -> io::Result<()> {
    let lower = |resource, soft: u64, hard: u64| -> io::Result<()> {
        let hard = hard.min(getrlimit(resource).maximum.unwrap_or(u64::MAX));
        let wanted = Rlimit {
            current: Some(soft.min(hard)),
            maximum: Some(hard),
        };
        Ok(setrlimit(resource, wanted)?)
    };
    lower(Resource::As, args.memory_bytes, args.memory_bytes)?;
    if !args.path.as_os_str().is_empty() {
        let cpu = args.cpu_seconds.max(1);
        lower(Resource::Cpu, cpu, cpu + 1)?;
    }
    lower(Resource::Core, 0, 0)?;
    lower(Resource::Nofile, 16, 16)?;
    Ok(())
}

/// [`pdf_text`] for `super::pdf_text_in_process`: the failure as its line `<kind>: <detail>`.
pub(super) fn pdf_text_unisolated(data: &[u8], max: usize) -> Result<String, String> {
    pdf_text(data, max).map_err(|f| format!("{}: {f}", f.kind()))
}

/// The text of a PDF, at most `max` bytes of it: arca's extractor, else pdf-extract.
fn pdf_text(data: &[u8], max: usize) -> Result<String, Failure> {
    // A panic of arca's extractor (a bug) falls back like any refusal.
    match panic::catch_unwind(|| pdf::extract(data, max)) {
        Ok(Ok(text)) => Ok(text),
        // A text that looks wrong goes to pdf-extract too, and is kept only where pdf-extract
        // fails, panics or finds no text at all.
        Ok(Err(pdf::PdfError::Doubtful(doubted))) => {
            match panic::catch_unwind(|| pdf_extract_text(data, max)) {
                Ok(Ok(text)) if !text.trim().is_empty() => Ok(text),
                _ => Ok(doubted.text),
            }
        }
        Ok(Err(_)) | Err(_) => pdf_extract_text(data, max),
    }
}

/// The text of a PDF by pdf-extract, at most `max` bytes of it: extraction stops once that
/// much is there.
fn pdf_extract_text(data: &[u8], max: usize) -> Result<String, Failure> {
    let doc = Document::load_mem(data).map_err(classify)?;
    // lopdf decrypts on load when the user password is empty; otherwise it leaves the document
    // empty (no objects) and pdf-extract would yield no text at all, not an error.
    if doc.trailer.get(b"Encrypt").is_ok() && !doc.was_encrypted() {
        return Err(Failure::Encrypted(
            "the document needs a password to be read".to_owned(),
        ));
    }
    let mut text = CappedText::new(max);
    let mut output = PlainTextOutput::new(&mut text);
    match pdf_extract::output_doc(&doc, &mut output) {
        Ok(()) => {}
        Err(OutputError::FormatError(_)) if text.full => {}
        Err(OutputError::PdfError(e)) => return Err(classify(e)),
        Err(e) => return Err(Failure::Corrupt(e.to_string())),
    }
    Ok(text.text)
}

fn classify(e: pdf_extract::Error) -> Failure {
    use pdf_extract::Error;
    match e {
        Error::Decryption(_)
        | Error::InvalidPassword
        | Error::AlreadyEncrypted
        | Error::UnsupportedSecurityHandler(_) => Failure::Encrypted(e.to_string()),
        _ => Failure::Corrupt(e.to_string()),
    }
}

/// A string that takes at most `max` bytes, then refuses more (which stops pdf-extract).
struct CappedText {
    text: String,
    max: usize,
    full: bool,
}

impl CappedText {
    fn new(max: usize) -> Self {
        CappedText {
            text: String::new(),
            max,
            full: false,
        }
    }
}

impl fmt::Write for CappedText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.max - self.text.len();
        if s.len() <= room {
            self.text.push_str(s);
            return Ok(());
        }
        let mut end = room;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.text.push_str(&s[..end]);
        self.full = true;
        Err(fmt::Error)
    }
}

impl<'a> ConvertToFmt for &'a mut CappedText {
    type Writer = &'a mut CappedText;

    fn convert(self) -> Self::Writer {
        self
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    #[test]
    fn capped_text_stops_at_a_char_boundary() {
        let mut t = CappedText::new(5);
        assert!(t.write_str("ab").is_ok());
        assert!(t.write_str("cé€").is_err());
        assert_eq!(t.text, "abcé");
        assert!(t.full);
        assert!(t.write_str("x").is_err());
    }

    #[test]
    fn bad_arguments_are_a_usage_error() {
        assert_eq!(run_child(vec![]), exit::USAGE);
        let args = ["10", "x", "1", "/nonexistent"]
            .map(OsString::from)
            .to_vec();
        assert!(matches!(Args::parse(args), Err(Failure::Usage(_))));
    }
}
