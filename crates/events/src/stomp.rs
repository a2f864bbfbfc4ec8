//! A minimal STOMP 1.2 client: enough to publish with receipts and to subscribe in tests.
//!
//! [`Publisher`] sends batches of `SEND` frames, pipelined in one write, and returns once the
//! broker has acknowledged the batch with a `RECEIPT` for its last frame; [`Subscriber`] receives the
//! `MESSAGE` frames of one destination. Both speak only STOMP 1.2 without heart-beats.
//!
//! Frames follow the STOMP 1.2 specification: header names and values are escaped (`\\`,
//! `\n`, `\r`, `\c`) in every frame except `CONNECT` and `CONNECTED`; bodies are read by
//! `content-length` when the frame has one (so they may hold NUL bytes), else up to the
//! first NUL; lines may end with `\r\n`; end-of-line heart-beats between frames are skipped;
//! a frame larger than [`MAX_FRAME_BYTES`] is refused.
//!
//! Reading is cancel safe: received bytes are kept in the connection's own buffer until a
//! whole frame has arrived, so a timeout in the middle of a frame loses nothing.

use std::fmt;
use std::io::ErrorKind;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{timeout_at, Instant};

/// The port of a `stomp://` URL that names none (the broker's usual STOMP port).
pub const DEFAULT_PORT: u16 = 61613;

/// The largest frame (headers and body) this client reads; a larger one is a
/// [`StompError::Protocol`] error, never an allocation.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// How many bytes a read asks the socket for at least.
const READ_CHUNK: usize = 64 * 1024;

/// How long [`Publisher::close`] waits for the broker to confirm the `DISCONNECT`.
const DISCONNECT_WAIT: Duration = Duration::from_secs(2);

/// The receipt asked for on the subscription, and on the `DISCONNECT`.
const SUBSCRIBED_RECEIPT: &str = "subscribed";
const DISCONNECT_RECEIPT: &str = "disconnected";

/// The refusal reported when the broker closes the connection in answer to `CONNECT`
/// without an `ERROR` frame.
pub const CLOSED_AT_CONNECT: &str =
    "the broker closed the connection in answer to CONNECT without an ERROR frame (a refused login does this at times: check the login and passcode)";

/// Why a STOMP operation failed.
#[derive(thiserror::Error, Debug)]
pub enum StompError {
    /// The connection could not be opened or broke (refused, reset, closed by the broker).
    #[error("STOMP connection: {0}")]
    Io(#[from] std::io::Error),
    /// The named answer did not arrive in time; the connection is not to be used again.
    #[error("timed out waiting for {0} from the STOMP broker")]
    Timeout(&'static str),
    /// The broker sent an `ERROR` frame: its `message` header and body.
    #[error("the STOMP broker refused: {0}")]
    Broker(String),
    /// The broker (or the caller) broke the STOMP 1.2 rules, e.g. an oversized or malformed
    /// frame, or a header that STOMP cannot carry.
    #[error("STOMP protocol: {0}")]
    Protocol(String),
    /// The broker URL cannot be used.
    #[error("bad STOMP URL: {0}")]
    BadUrl(String),
}

/// Where and how to connect.
#[derive(Clone, PartialEq, Eq)]
pub struct StompTarget {
    /// Host name or IP address (an IPv6 address without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// The `login` header of `CONNECT`, if any.
    pub login: Option<String>,
    /// The `passcode` header of `CONNECT`, if any; never printed by `Debug`.
    pub passcode: Option<String>,
}

impl fmt::Debug for StompTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StompTarget")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("login", &self.login)
            .field("passcode", &self.passcode.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl StompTarget {
    /// Parses `stomp://host[:port]` (or `tcp://host[:port]`, as ActiveMQ names its
    /// connectors); the port defaults to [`DEFAULT_PORT`], an IPv6 host is written in
    /// brackets (`stomp://[::1]:61613`). Credentials are not taken from the URL: set
    /// [`login`](Self::login) and [`passcode`](Self::passcode).
    pub fn parse(url: &str) -> Result<StompTarget, StompError> {
        let bad = |why: &str| StompError::BadUrl(format!("{url:?}: {why}"));
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("expected stomp://host:port"))?;
        if !scheme.eq_ignore_ascii_case("stomp") && !scheme.eq_ignore_ascii_case("tcp") {
            return Err(bad(&format!(
                "scheme {scheme:?} is not supported (use stomp:// or tcp://)"
            )));
        }
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.contains(['/', '?', '#']) {
            return Err(bad("a STOMP URL has no path, query or fragment"));
        }
        if authority.contains('@') {
            return Err(bad(
                "credentials do not belong in the URL; set the login and passcode separately",
            ));
        }
        let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or_else(|| bad("unclosed '[' in the host"))?;
            let port = match after {
                "" => None,
                _ => Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| bad("expected ':' and a port after ']'"))?,
                ),
            };
            (host, port)
        } else {
            match authority.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("the host is missing"));
        }
        let port = match port {
            None => DEFAULT_PORT,
            Some(port) => match port.parse::<u16>() {
                Ok(0) | Err(_) => {
                    return Err(bad(&format!(
                        "the port {port:?} is not a number from 1 to 65535"
                    )))
                }
                Ok(port) => port,
            },
        };
        Ok(StompTarget {
            host: host.to_string(),
            port,
            login: None,
            passcode: None,
        })
    }
}

/// One message to publish.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outgoing {
    /// Headers of the `SEND` frame. `destination`, `receipt` and `content-length` are set
    /// by [`Publisher::send_batch`] and ignored here; `persistent` given here replaces the
    /// publisher's default. No `content-type` unless given here (Fedora's events have none).
    pub headers: Vec<(String, String)>,
    /// The body, sent as is (any bytes).
    pub body: Vec<u8>,
}

/// A received `MESSAGE` frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Headers in the order the broker sent them, unescaped.
    pub headers: Vec<(String, String)>,
    /// The body, byte for byte.
    pub body: Vec<u8>,
}

impl Message {
    /// The value of the first header called `name` (STOMP 1.2: a repeated header's first
    /// occurrence counts).
    pub fn header(&self, name: &str) -> Option<&str> {
        first_header(&self.headers, name)
    }

    /// The body as UTF-8 text, `None` if it is not valid UTF-8.
    pub fn body_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.body).ok()
    }
}

/// A publishing connection. After any error it is not to be used again (its calls fail
/// with an [`StompError::Io`] of kind `NotConnected`): connect a new one.
#[derive(Debug)]
pub struct Publisher {
    connection: Connection,
    /// The number in the next `receipt` header (`arca-<n>`), unique on this connection.
    next_receipt: u64,
}

impl Publisher {
    /// Opens a TCP connection, sends `CONNECT` (`accept-version:1.2`, `host` = the target's
    /// host, `login`/`passcode` if set, `heart-beat:0,0`) and waits for `CONNECTED`, all
    /// within `timeout`. A broker that is not listening is an [`StompError::Io`] at once
    /// (connection refused); a refused login is the broker's [`StompError::Broker`].
    pub async fn connect(target: &StompTarget, timeout: Duration) -> Result<Publisher, StompError> {
        Ok(Publisher {
            connection: Connection::open(target, Instant::now() + timeout).await?,
            next_receipt: 0,
        })
    }

    /// Sends every message as a `SEND` frame to `destination` and waits until the broker
    /// has confirmed the batch, all within `timeout`.
    ///
    /// Only the last frame asks for a `RECEIPT`: a broker handles the frames of one
    /// connection in order, so its receipt for the last frame confirms the frames before it,
    /// and a frame it refuses is answered with an `ERROR` frame ahead of that receipt (ActiveMQ
    /// does both; `crates/events/tests/activemq/stomp_broker.rs` checks them). A receipt on every
    /// frame would make ActiveMQ handle each send synchronously (for a persistent queue, a
    /// store and a disk sync per message) instead of storing them in the background.
    ///
    /// Each frame carries a `content-length` when the body holds NUL bytes (without one
    /// ActiveMQ delivers a JMS TextMessage), and `persistent:true` unless the message sets
    /// it. All frames go out in one `write_all` (the broker's answers are read meanwhile).
    /// `Ok` only when the receipt arrived with no `ERROR` before it; an `ERROR` frame is
    /// [`StompError::Broker`], a broker that is gone [`StompError::Io`]. On success the
    /// connection is ready for the next batch; after an error it is not to be used again.
    pub async fn send_batch(
        &mut self,
        destination: &str,
        messages: &[Outgoing],
        timeout: Duration,
    ) -> Result<(), StompError> {
        self.connection.usable()?;
        let Some(last) = messages.len().checked_sub(1) else {
            return Ok(());
        };
        check_header("destination", destination)?;
        for message in messages {
            for (name, value) in &message.headers {
                check_header(name, value)?;
            }
        }
        let receipt = self.next_receipt;
        self.next_receipt += 1;
        let mut frames = Vec::with_capacity(
            messages
                .iter()
                .map(|m| m.body.len() + 64 + destination.len() + header_bytes(m))
                .sum(),
        );
        for (i, message) in messages.iter().enumerate() {
            encode_send(
                &mut frames,
                destination,
                (i == last).then_some(receipt),
                message,
            );
        }

        let deadline = Instant::now() + timeout;
        let result = timeout_at(
            deadline,
            self.connection.write_and_await_receipt(&frames, receipt),
        )
        .await
        .unwrap_or(Err(StompError::Timeout("the receipt of a batch")));
        if result.is_err() {
            self.connection.broken = true;
        }
        result
    }

    /// Sends `DISCONNECT` with a receipt, waits briefly for it and closes the connection
    /// (best effort: errors are ignored).
    pub async fn close(self) {
        self.connection.close().await;
    }
}

/// A subscribing connection (used by tests and the benchmark to check what arrives).
#[derive(Debug)]
pub struct Subscriber {
    connection: Connection,
    /// Messages that arrived before the subscription's receipt.
    early: std::collections::VecDeque<Message>,
}

impl Subscriber {
    /// Connects as [`Publisher::connect`] does, subscribes to `destination` (`id:0`,
    /// `ack:auto`) and waits for the broker's receipt of the subscription, so that the
    /// subscription is active when this returns; all within `timeout`.
    pub async fn connect(
        target: &StompTarget,
        destination: &str,
        timeout: Duration,
    ) -> Result<Subscriber, StompError> {
        check_header("destination", destination)?;
        let deadline = Instant::now() + timeout;
        let mut connection = Connection::open(target, deadline).await?;
        let mut frame = Vec::new();
        let mut encoder = FrameEncoder::new(&mut frame, "SUBSCRIBE");
        encoder.header("id", "0");
        encoder.header("destination", destination);
        encoder.header("ack", "auto");
        encoder.header("receipt", SUBSCRIBED_RECEIPT);
        encoder.finish(b"");
        let mut early = std::collections::VecDeque::new();
        let subscribed = async {
            connection.write(&frame).await?;
            loop {
                let frame = connection.read_frame().await?;
                match frame.command.as_str() {
                    "RECEIPT" if frame.header("receipt-id") == Some(SUBSCRIBED_RECEIPT) => {
                        return Ok(())
                    }
                    "MESSAGE" => early.push_back(frame.into_message()),
                    _ => unexpected(&frame, "RECEIPT")?,
                }
            }
        };
        timeout_at(deadline, subscribed)
            .await
            .unwrap_or(Err(StompError::Timeout("the receipt of the subscription")))?;
        Ok(Subscriber { connection, early })
    }

    /// The next message, or `None` if none arrives within `timeout`.
    pub async fn next(&mut self, timeout: Duration) -> Result<Option<Message>, StompError> {
        if let Some(message) = self.early.pop_front() {
            return Ok(Some(message));
        }
        self.connection.usable()?;
        let deadline = Instant::now() + timeout;
        loop {
            let frame = match timeout_at(deadline, self.connection.read_frame()).await {
                Err(_elapsed) => return Ok(None),
                Ok(Err(e)) => {
                    self.connection.broken = true;
                    return Err(e);
                }
                Ok(Ok(frame)) => frame,
            };
            match frame.command.as_str() {
                "MESSAGE" => return Ok(Some(frame.into_message())),
                "RECEIPT" => continue,
                _ => {
                    self.connection.broken = true;
                    unexpected(&frame, "MESSAGE")?;
                }
            }
        }
    }

    /// Sends `DISCONNECT` with a receipt, waits briefly for it and closes the connection
    /// (best effort: errors are ignored).
    pub async fn close(self) {
        self.connection.close().await;
    }
}

/// One TCP connection with its read buffer.
struct Connection {
    stream: TcpStream,
    /// Bytes received and not yet returned as a frame.
    buffer: BytesMut,
    /// Set after an error: the stream's state is unknown (a frame may be half written).
    broken: bool,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("peer", &self.stream.peer_addr().ok())
            .field("buffered_bytes", &self.buffer.len())
            .field("broken", &self.broken)
            .finish()
    }
}

impl Connection {
    /// Opens the TCP connection and completes the STOMP handshake before `deadline`.
    async fn open(target: &StompTarget, deadline: Instant) -> Result<Connection, StompError> {
        for (name, value) in [
            ("host", Some(&target.host)),
            ("login", target.login.as_ref()),
            ("passcode", target.passcode.as_ref()),
        ] {
            if value.is_some_and(|v| v.contains(['\n', '\r', '\0'])) {
                return Err(StompError::Protocol(format!(
                    "the {name} of a CONNECT cannot contain a line break or NUL"
                )));
            }
        }
        let mut frame = Vec::new();
        let mut encoder = FrameEncoder::new(&mut frame, "CONNECT");
        encoder.header("accept-version", "1.2");
        encoder.header("host", &target.host);
        if let Some(login) = &target.login {
            encoder.header("login", login);
        }
        if let Some(passcode) = &target.passcode {
            encoder.header("passcode", passcode);
        }
        encoder.header("heart-beat", "0,0");
        encoder.finish(b"");

        let stream = timeout_at(
            deadline,
            TcpStream::connect((target.host.as_str(), target.port)),
        )
        .await
        .map_err(|_| StompError::Timeout("the TCP connection"))??;
        stream.set_nodelay(true)?;
        let mut connection = Connection {
            stream,
            buffer: BytesMut::with_capacity(READ_CHUNK),
            broken: false,
        };
        let handshake = async {
            connection.write(&frame).await?;
            connection.read_frame().await
        };
        let reply = match timeout_at(deadline, handshake).await {
            Err(_) => return Err(StompError::Timeout("CONNECTED")),
            // ActiveMQ refuses a login with an ERROR frame and closes the connection, but at
            // times the close overtakes the frame: the close is the refusal then.
            Ok(Err(StompError::Io(e))) if e.kind() == ErrorKind::UnexpectedEof => {
                return Err(StompError::Broker(CLOSED_AT_CONNECT.into()))
            }
            Ok(reply) => reply?,
        };
        if reply.command != "CONNECTED" {
            unexpected(&reply, "CONNECTED")?;
        }
        match reply.header("version") {
            Some("1.2") => Ok(connection),
            version => Err(StompError::Protocol(format!(
                "the broker speaks STOMP {}, this client only 1.2",
                version.unwrap_or("1.0")
            ))),
        }
    }

    /// `Ok` unless an earlier error left the connection in an unknown state.
    fn usable(&self) -> Result<(), StompError> {
        if self.broken {
            return Err(StompError::Io(std::io::Error::new(
                ErrorKind::NotConnected,
                "the connection failed earlier; connect again",
            )));
        }
        Ok(())
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), StompError> {
        self.stream.write_all(bytes).await?;
        Ok(())
    }

    async fn read_frame(&mut self) -> Result<Frame, StompError> {
        read_frame(&mut self.stream, &mut self.buffer).await
    }

    /// Writes `frames` while reading the broker's answers until the receipt `arca-<receipt>`
    /// has arrived (an `ERROR` frame first is the broker's refusal). Reading and writing run
    /// together, so that a batch larger than the socket buffers cannot deadlock with a
    /// broker that waits for its answers to be read.
    async fn write_and_await_receipt(
        &mut self,
        frames: &[u8],
        receipt: u64,
    ) -> Result<(), StompError> {
        let (mut reader, mut writer) = self.stream.split();
        let buffer = &mut self.buffer;
        let write = async {
            writer.write_all(frames).await?;
            writer.flush().await?;
            Ok::<(), StompError>(())
        };
        let expected = format!("arca-{receipt}");
        let confirmed = async {
            loop {
                let frame = read_frame(&mut reader, buffer).await?;
                match frame.command.as_str() {
                    // A receipt of an earlier batch (or of something else) is no answer to
                    // this one.
                    "RECEIPT" if frame.header("receipt-id") == Some(expected.as_str()) => {
                        return Ok(())
                    }
                    "RECEIPT" => {}
                    _ => unexpected(&frame, "RECEIPT")?,
                }
            }
        };
        tokio::try_join!(write, confirmed)?;
        Ok(())
    }

    /// Best-effort `DISCONNECT` with a receipt, then shuts the socket down.
    async fn close(mut self) {
        if !self.broken {
            let mut frame = Vec::new();
            let mut encoder = FrameEncoder::new(&mut frame, "DISCONNECT");
            encoder.header("receipt", DISCONNECT_RECEIPT);
            encoder.finish(b"");
            let goodbye = async {
                self.write(&frame).await?;
                loop {
                    let frame = self.read_frame().await?;
                    if frame.command == "RECEIPT"
                        && frame.header("receipt-id") == Some(DISCONNECT_RECEIPT)
                    {
                        return Ok::<(), StompError>(());
                    }
                }
            };
            let _ = tokio::time::timeout(DISCONNECT_WAIT, goodbye).await;
        }
        let _ = self.stream.shutdown().await;
    }
}

/// Reads from `reader` into `buffer` until it holds a whole frame, and returns it. Cancel
/// safe: what was read stays in `buffer`.
async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    buffer: &mut BytesMut,
) -> Result<Frame, StompError> {
    loop {
        if let Some((frame, used)) = parse_frame(buffer)? {
            buffer.advance(used);
            return Ok(frame);
        }
        buffer.reserve(READ_CHUNK);
        if reader.read_buf(buffer).await? == 0 {
            return Err(StompError::Io(std::io::Error::new(
                ErrorKind::UnexpectedEof,
                "the broker closed the connection",
            )));
        }
    }
}

/// The error for a frame that is not the `expected` answer: an `ERROR` frame's text, or
/// a protocol error naming the command.
fn unexpected(frame: &Frame, expected: &str) -> Result<(), StompError> {
    if frame.command == "ERROR" {
        return Err(StompError::Broker(frame.error_text()));
    }
    Err(StompError::Protocol(format!(
        "expected {expected}, the broker sent {}",
        frame.command
    )))
}

/// Refuses a header that STOMP cannot carry: an empty name, or a NUL byte (escaping covers
/// line breaks and colons, not NUL).
fn check_header(name: &str, value: &str) -> Result<(), StompError> {
    if name.is_empty() {
        return Err(StompError::Protocol("a header name is empty".into()));
    }
    if name.contains('\0') || value.contains('\0') {
        return Err(StompError::Protocol(format!(
            "the header {:?} contains a NUL byte, which STOMP cannot carry",
            name.replace('\0', "\\0")
        )));
    }
    Ok(())
}

fn first_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// Appends the `SEND` frame of `message` to `out`, asking for the receipt `arca-<receipt>`
/// if there is one.
fn encode_send(out: &mut Vec<u8>, destination: &str, receipt: Option<u64>, message: &Outgoing) {
    /// Headers this client sets itself, whatever the message says.
    const OWN: [&str; 3] = ["destination", "receipt", "content-length"];
    let mut encoder = FrameEncoder::new(out, "SEND");
    encoder.header("destination", destination);
    if let Some(receipt) = receipt {
        encoder.header("receipt", &format!("arca-{receipt}"));
    }
    // Only a body with NUL bytes needs its length: ActiveMQ makes a message with a
    // content-length a JMS BytesMessage, and Fedora's events are TextMessages.
    if message.body.contains(&0) {
        encoder.header("content-length", &message.body.len().to_string());
    }
    let has = |name: &str| message.headers.iter().any(|(n, _)| n == name);
    if !has("persistent") {
        encoder.header("persistent", "true");
    }
    for (name, value) in &message.headers {
        if !OWN.contains(&name.as_str()) {
            encoder.header(name, value);
        }
    }
    encoder.finish(&message.body);
}

/// About how many bytes the headers of `message` take in a frame.
fn header_bytes(message: &Outgoing) -> usize {
    message
        .headers
        .iter()
        .map(|(n, v)| n.len() + v.len() + 2)
        .sum()
}

/// A frame as read from the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Frame {
    command: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Frame {
    fn header(&self, name: &str) -> Option<&str> {
        first_header(&self.headers, name)
    }

    fn into_message(self) -> Message {
        Message {
            headers: self.headers,
            body: self.body,
        }
    }

    /// An `ERROR` frame as one line of text: its `message` header and its body, without the
    /// lines of a Java stack trace (ActiveMQ puts one there for protocol errors), cut after
    /// 2,000 bytes.
    fn error_text(&self) -> String {
        const LIMIT: usize = 2000;
        let message = self.header("message").unwrap_or("").trim();
        let body = String::from_utf8_lossy(&self.body);
        let body = body
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with("at ") && !line.starts_with("..."))
            .collect::<Vec<_>>()
            .join(" ");
        let mut text = if body.is_empty() && message.is_empty() {
            "(an ERROR frame without a message)".to_string()
        } else if body.is_empty() {
            message.to_string()
        } else if body.contains(message) {
            body
        } else {
            format!("{message}: {body}")
        };
        if text.len() > LIMIT {
            let mut end = LIMIT;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        text
    }
}

/// Whether a command's headers are escaped (all but `CONNECT` and `CONNECTED`).
fn escapes_headers(command: &str) -> bool {
    command != "CONNECT" && command != "CONNECTED"
}

/// Writes one frame into a byte buffer: the command, then headers, then body and NUL.
struct FrameEncoder<'a> {
    out: &'a mut Vec<u8>,
    escape: bool,
}

impl<'a> FrameEncoder<'a> {
    fn new(out: &'a mut Vec<u8>, command: &str) -> Self {
        out.extend_from_slice(command.as_bytes());
        out.push(b'\n');
        FrameEncoder {
            out,
            escape: escapes_headers(command),
        }
    }

    fn header(&mut self, name: &str, value: &str) {
        self.text(name);
        self.out.push(b':');
        self.text(value);
        self.out.push(b'\n');
    }

    fn text(&mut self, text: &str) {
        if !self.escape {
            self.out.extend_from_slice(text.as_bytes());
            return;
        }
        for &byte in text.as_bytes() {
            match byte {
                b'\\' => self.out.extend_from_slice(b"\\\\"),
                b'\n' => self.out.extend_from_slice(b"\\n"),
                b'\r' => self.out.extend_from_slice(b"\\r"),
                b':' => self.out.extend_from_slice(b"\\c"),
                _ => self.out.push(byte),
            }
        }
    }

    fn finish(self, body: &[u8]) {
        self.out.push(b'\n');
        self.out.extend_from_slice(body);
        self.out.push(0);
    }
}

/// Parses the first frame in `buf`: `Ok(Some((frame, bytes used)))` when it is complete,
/// `Ok(None)` when more bytes are needed. End-of-line heart-beats before the frame are
/// skipped (and counted as used).
fn parse_frame(buf: &[u8]) -> Result<Option<(Frame, usize)>, StompError> {
    let mut start = 0;
    loop {
        match &buf[start..] {
            [b'\n', ..] => start += 1,
            [b'\r', b'\n', ..] => start += 2,
            [] | [b'\r'] => return Ok(None),
            _ => break,
        }
    }
    let too_large =
        || StompError::Protocol(format!("a frame is larger than {MAX_FRAME_BYTES} bytes"));

    // The command line and the header lines, up to the empty line.
    let mut lines: Vec<&[u8]> = Vec::new();
    let mut pos = start;
    loop {
        let Some(length) = buf[pos..].iter().position(|&b| b == b'\n') else {
            if buf.len() - start > MAX_FRAME_BYTES {
                return Err(too_large());
            }
            return Ok(None);
        };
        let line = &buf[pos..pos + length];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        pos += length + 1;
        if line.is_empty() {
            break;
        }
        lines.push(line);
    }
    if pos - start > MAX_FRAME_BYTES {
        return Err(too_large());
    }
    // Never empty: the leading end-of-lines were skipped, so the first line has content.
    let Some((command_line, header_lines)) = lines.split_first() else {
        return Err(StompError::Protocol("a frame without a command".into()));
    };
    let command = utf8(command_line, "the command")?.to_string();
    let escaped = escapes_headers(&command);
    let mut headers = Vec::with_capacity(header_lines.len());
    for line in header_lines {
        let colon = line.iter().position(|&b| b == b':').ok_or_else(|| {
            StompError::Protocol(format!(
                "a header line of a {command} frame has no ':': {:?}",
                String::from_utf8_lossy(line)
            ))
        })?;
        let name = utf8(&line[..colon], "a header name")?;
        let value = utf8(&line[colon + 1..], "a header value")?;
        headers.push(if escaped {
            (unescape(name)?, unescape(value)?)
        } else {
            (name.to_string(), value.to_string())
        });
    }

    let body_end = match first_header(&headers, "content-length") {
        Some(length) => {
            let length: usize = length.trim().parse().map_err(|_| {
                StompError::Protocol(format!("content-length {length:?} is not a number"))
            })?;
            if length > MAX_FRAME_BYTES || pos - start + length > MAX_FRAME_BYTES {
                return Err(too_large());
            }
            if buf.len() < pos + length + 1 {
                return Ok(None);
            }
            if buf[pos + length] != 0 {
                return Err(StompError::Protocol(format!(
                    "the body of a {command} frame is not followed by NUL after its \
                     content-length of {length}"
                )));
            }
            pos + length
        }
        None => match buf[pos..].iter().position(|&b| b == 0) {
            Some(length) => pos + length,
            None if buf.len() - start > MAX_FRAME_BYTES => return Err(too_large()),
            None => return Ok(None),
        },
    };
    if body_end - start > MAX_FRAME_BYTES {
        return Err(too_large());
    }
    let frame = Frame {
        command,
        headers,
        body: buf[pos..body_end].to_vec(),
    };
    Ok(Some((frame, body_end + 1)))
}

fn utf8<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str, StompError> {
    std::str::from_utf8(bytes)
        .map_err(|_| StompError::Protocol(format!("{what} of a frame is not UTF-8")))
}

/// Undoes STOMP 1.2 header escaping; an undefined escape is a protocol error, as the
/// specification demands.
fn unescape(text: &str) -> Result<String, StompError> {
    if !text.contains('\\') {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('\\') => '\\',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('c') => ':',
            other => {
                return Err(StompError::Protocol(format!(
                    "undefined escape \\{} in the header {text:?}",
                    other.map(String::from).unwrap_or_default()
                )))
            }
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn parse_all(mut buf: &[u8]) -> Vec<Frame> {
        let mut frames = Vec::new();
        while let Some((frame, used)) = parse_frame(buf).expect("valid frames") {
            frames.push(frame);
            buf = &buf[used..];
        }
        assert!(
            buf.iter().all(|&b| b == b'\n' || b == b'\r'),
            "left over: {buf:?}"
        );
        frames
    }

    #[test]
    fn parses_urls() {
        let t = StompTarget::parse("stomp://broker.example:61614").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("broker.example", 61614));
        assert_eq!((t.login, t.passcode), (None, None));
        let t = StompTarget::parse("tcp://localhost").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("localhost", DEFAULT_PORT));
        let t = StompTarget::parse("STOMP://[::1]:1234/").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 1234));
        let t = StompTarget::parse("stomp://[::1]").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", DEFAULT_PORT));
    }

    #[test]
    fn refuses_bad_urls_with_the_reason() {
        for (url, reason) in [
            ("http://localhost:61613", "scheme \"http\" is not supported"),
            ("localhost:61613", "expected stomp://host:port"),
            ("stomp://:61613", "host is missing"),
            ("stomp://", "host is missing"),
            ("stomp://localhost:0", "not a number from 1 to 65535"),
            ("stomp://localhost:70000", "not a number from 1 to 65535"),
            ("stomp://localhost:port", "not a number from 1 to 65535"),
            ("stomp://localhost:", "not a number from 1 to 65535"),
            ("stomp://localhost:61613/queue", "no path"),
            ("stomp://user:pw@localhost", "credentials do not belong"),
            ("stomp://[::1", "unclosed '['"),
        ] {
            match StompTarget::parse(url) {
                Err(StompError::BadUrl(message)) => assert!(
                    message.contains(reason) && message.contains(url),
                    "{url}: {message}"
                ),
                other => panic!("{url}: {other:?}"),
            }
        }
    }

    #[test]
    fn debug_hides_the_passcode() {
        let mut t = StompTarget::parse("stomp://localhost").unwrap();
        t.passcode = Some("hunter2".into());
        assert!(!format!("{t:?}").contains("hunter2"));
    }

    #[test]
    fn escapes_headers_except_on_connect() {
        let mut out = Vec::new();
        let mut e = FrameEncoder::new(&mut out, "SEND");
        e.header("a:b", "c:d\ne\rf\\g ü");
        e.finish(b"x\0y");
        assert_eq!(out, b"SEND\na\\cb:c\\cd\\ne\\rf\\\\g \xc3\xbc\n\nx\0y\0");

        let mut out = Vec::new();
        let mut e = FrameEncoder::new(&mut out, "CONNECT");
        e.header("passcode", "a:b\\c");
        e.finish(b"");
        assert_eq!(out, b"CONNECT\npasscode:a:b\\c\n\n\0");
    }

    #[test]
    fn send_frames_carry_receipt_length_and_defaults() {
        let mut out = Vec::new();
        let message = Outgoing {
            headers: strings(&[("x-id", "1"), ("receipt", "mine"), ("content-length", "9")]),
            body: b"{}".to_vec(),
        };
        encode_send(&mut out, "/topic/t", Some(7), &message);
        assert_eq!(
            out,
            b"SEND\ndestination:/topic/t\nreceipt:arca-7\npersistent:true\nx-id:1\n\n{}\0"
        );

        let mut out = Vec::new();
        let message = Outgoing {
            headers: strings(&[("content-type", "text/plain"), ("persistent", "false")]),
            body: Vec::new(),
        };
        encode_send(&mut out, "/queue/q", None, &message);
        let frame = parse_all(&out).remove(0);
        assert_eq!(frame.header("content-type"), Some("text/plain"));
        assert_eq!(frame.header("persistent"), Some("false"));
        // destination, content-type, persistent: no receipt unless asked, no length for a
        // body without NUL.
        assert_eq!(frame.headers.len(), 3);
        assert_eq!(frame.header("content-length"), None);
    }

    #[test]
    fn encoded_frames_parse_back() {
        let headers = strings(&[
            ("plain", "value"),
            ("colon:name", "a:b"),
            ("multi", "line\nbreak\r\nand \\ backslash"),
            ("unicode", "Grüße ☃ 𝄞"),
            ("empty", ""),
            ("plain", "second occurrence"),
        ]);
        let body = b"\0binary\0\xff\xfe body\n\0".to_vec();
        let mut out = Vec::new();
        let mut e = FrameEncoder::new(&mut out, "MESSAGE");
        for (n, v) in &headers {
            e.header(n, v);
        }
        e.header("content-length", &body.len().to_string());
        e.finish(&body);
        let frames = parse_all(&out);
        assert_eq!(frames.len(), 1);
        let message = frames[0].clone().into_message();
        assert_eq!(&message.headers[..headers.len()], &headers[..]);
        assert_eq!(message.body, body);
        assert_eq!(message.header("plain"), Some("value"));
        assert_eq!(message.body_str(), None);
    }

    #[test]
    fn connected_headers_are_not_unescaped() {
        let wire = b"CONNECTED\nversion:1.2\nsession:a\\cb:c\n\n\0";
        let (frame, used) = parse_frame(wire).unwrap().unwrap();
        assert_eq!(frame.header("session"), Some("a\\cb:c"));
        assert_eq!(used, wire.len());
    }

    #[test]
    fn accepts_crlf_heartbeats_and_bodies_without_length() {
        let wire = b"\n\r\nRECEIPT\r\nreceipt-id:arca-1\r\n\r\n\0\n\n\
                     MESSAGE\nsubscription:0\n\nhello\0\r\nERROR\nmessage:bad\n\n\0";
        let frames = parse_all(wire);
        let commands: Vec<_> = frames.iter().map(|f| f.command.as_str()).collect();
        assert_eq!(commands, ["RECEIPT", "MESSAGE", "ERROR"]);
        assert_eq!(frames[0].header("receipt-id"), Some("arca-1"));
        assert_eq!(frames[1].body, b"hello");
        assert_eq!(frames[2].error_text(), "bad");
        assert_eq!(parse_frame(b"\r\n\n").unwrap(), None);
    }

    #[test]
    fn a_frame_split_at_every_byte_parses_once_complete() {
        let mut wire = Vec::new();
        let mut e = FrameEncoder::new(&mut wire, "MESSAGE");
        e.header("k", "v:\n");
        e.header("content-length", "3");
        e.finish(b"a\0b");
        wire.extend_from_slice(b"\nMESSAGE\n\nno length\0");
        let first_end = wire.iter().position(|&b| b == b'b').unwrap() + 2;
        for cut in 0..first_end {
            assert_eq!(parse_frame(&wire[..cut]).unwrap(), None, "cut at {cut}");
        }
        let (frame, used) = parse_frame(&wire[..first_end]).unwrap().unwrap();
        assert_eq!(frame.body, b"a\0b");
        assert_eq!(frame.header("k"), Some("v:\n"));
        assert_eq!(used, first_end);
        let frames = parse_all(&wire);
        assert_eq!(frames[1].body, b"no length");
    }

    #[tokio::test]
    async fn reads_frames_split_across_reads() {
        let wire =
            b"RECEIPT\nreceipt-id:arca-0\n\n\0\nMESSAGE\ncontent-length:4\n\n\0\0\0\0\0\n".to_vec();
        let mut reader = chunked_reader(&wire, 3);
        let mut buffer = BytesMut::new();
        let first = read_frame(&mut reader, &mut buffer).await.unwrap();
        assert_eq!(first.header("receipt-id"), Some("arca-0"));
        let second = read_frame(&mut reader, &mut buffer).await.unwrap();
        assert_eq!(second.body, [0, 0, 0, 0]);
        match read_frame(&mut reader, &mut buffer).await {
            Err(StompError::Io(e)) => assert_eq!(e.kind(), ErrorKind::UnexpectedEof),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_close_in_answer_to_connect_is_a_refusal() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let peer = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buffer = BytesMut::new();
            let connect = read_frame(&mut socket, &mut buffer).await.unwrap();
            assert_eq!(connect.command, "CONNECT");
            assert_eq!(connect.header("passcode"), Some("wrong"));
        });
        let mut target = StompTarget::parse(&format!("stomp://127.0.0.1:{port}")).unwrap();
        target.login = Some("arca".into());
        target.passcode = Some("wrong".into());
        match Publisher::connect(&target, Duration::from_secs(10)).await {
            Err(StompError::Broker(message)) => assert_eq!(message, CLOSED_AT_CONNECT),
            other => panic!("{other:?}"),
        }
        peer.await.unwrap();
    }

    /// A reader that hands out `wire` in pieces of `piece` bytes.
    fn chunked_reader(wire: &[u8], piece: usize) -> impl AsyncRead + Unpin {
        let chunks: Vec<Vec<u8>> = wire.chunks(piece).map(<[u8]>::to_vec).collect();
        ChunkedReader { chunks, next: 0 }
    }

    struct ChunkedReader {
        chunks: Vec<Vec<u8>>,
        next: usize,
    }

    impl AsyncRead for ChunkedReader {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            if let Some(chunk) = self.chunks.get(self.next) {
                buf.put_slice(chunk);
                self.next += 1;
            }
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn refuses_undefined_escapes_and_malformed_headers() {
        for wire in [
            &b"MESSAGE\nk:a\\tb\n\n\0"[..],
            b"MESSAGE\nk:trailing\\\n\n\0",
            b"MESSAGE\nno colon\n\n\0",
            b"MESSAGE\ncontent-length:x\n\n\0",
            b"MESSAGE\ncontent-length:2\n\nabc\0",
            b"MESSAGE\nk:\xff\n\n\0",
        ] {
            match parse_frame(wire) {
                Err(StompError::Protocol(_)) => {}
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(wire)),
            }
        }
    }

    #[test]
    fn refuses_oversized_frames_without_waiting_for_them() {
        let huge = format!("MESSAGE\ncontent-length:{}\n\n", MAX_FRAME_BYTES + 1);
        assert!(matches!(
            parse_frame(huge.as_bytes()),
            Err(StompError::Protocol(m)) if m.contains("larger than")
        ));
        let mut endless = b"MESSAGE\n\n".to_vec();
        endless.resize(MAX_FRAME_BYTES + 16, b'x');
        assert!(matches!(
            parse_frame(&endless),
            Err(StompError::Protocol(_))
        ));
        let endless_header = vec![b'x'; MAX_FRAME_BYTES + 16];
        assert!(matches!(
            parse_frame(&endless_header),
            Err(StompError::Protocol(_))
        ));
    }

    #[test]
    fn error_text_joins_message_and_body() {
        let frame = |headers: &[(&str, &str)], body: &[u8]| Frame {
            command: "ERROR".into(),
            headers: strings(headers),
            body: body.to_vec(),
        };
        assert_eq!(
            frame(&[("message", "Denied")], b"Denied").error_text(),
            "Denied"
        );
        assert_eq!(
            frame(
                &[("message", "Unknown STOMP action: FOO")],
                b"org.example.ProtocolException: Unknown STOMP action: FOO\n\tat a.B(B.java:1)\n\t... 2 more\n"
            )
            .error_text(),
            "org.example.ProtocolException: Unknown STOMP action: FOO"
        );
        assert_eq!(
            frame(&[("message", "Denied")], b"because\nreasons").error_text(),
            "Denied: because reasons"
        );
        assert_eq!(
            frame(&[], b"").error_text(),
            "(an ERROR frame without a message)"
        );
        let long = frame(&[], "é".repeat(3000).as_bytes()).error_text();
        assert!(long.len() <= 2000);
    }

    #[test]
    fn refuses_headers_stomp_cannot_carry() {
        assert!(check_header("", "v").is_err());
        assert!(check_header("k", "a\0b").is_err());
        assert!(check_header("k", "a\nb:c").is_ok());
    }
}
