//! The model call as one HTTP/1.1 exchange over a byte stream
//! ([`exchange`]): `POST /v1/chat/completions` with the context as the
//! OpenAI Chat Completions request ([`ChatRequest`]), written straight to
//! the link (no buffer the size of the body), then the response's status
//! line and headers (at most [`MAX_HEAD`] bytes) and its body into the
//! caller's buffer: exactly `Content-Length` bytes, or the chunks of a
//! `Transfer-Encoding: chunked` body (a streamed reply's Server-Sent
//! Events), joined.
//!
//! The stream is any [`embedded_io::Read`] + [`embedded_io::Write`]: on the
//! board, UART1 wired by QEMU to a TCP socket (the transparent mode of an
//! AT Wi-Fi or cellular module: no TLS, no DNS); in the host tests, a
//! double. Nothing here panics on what the server sends: a malformed or
//! oversized response is an [`ExchangeError`].

use core::fmt::Write as _;

use embedded_io::{Read, Write};
use envaware::openai::ChatRequest;
use envaware::Conversation;

/// The request's path.
pub const PATH: &str = "/v1/chat/completions";
/// The most bytes of the response's status line and headers, up to and
/// including the blank line.
pub const MAX_HEAD: usize = 512;

/// Why an exchange failed. After [`Send`](Self::Send) or
/// [`Receive`](Self::Receive) the link may be out of step with the server
/// (a response half read); the next exchange then fails too, unless the
/// server closed and the link starts afresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ExchangeError {
    /// The request could not be written (the link timed out).
    Send,
    /// The link timed out (or ended) before the response's end.
    Receive,
    /// The status line and headers are longer than [`MAX_HEAD`].
    HeadTooLong,
    /// The status line is not `HTTP/1.x NNN …`, or a header line is not
    /// `Name: value`.
    Malformed,
    /// A status other than 200 (its body was read and dropped).
    Status(u16),
    /// Neither a `Content-Length` nor `Transfer-Encoding: chunked` (or a
    /// length that is not a number, or another transfer encoding): the
    /// body's end cannot be told.
    NoContentLength,
    /// A chunk's size line is not hex digits (with an optional `;`
    /// extension) and CRLF, or a chunk does not end with CRLF.
    BadChunk,
    /// The body is larger than the buffer (it was read and dropped).
    BodyTooLarge {
        /// Its `Content-Length`.
        len: usize,
        /// The buffer's size.
        capacity: usize,
    },
}

impl core::fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Send => f.write_str("the request could not be sent (timeout)"),
            Self::Receive => f.write_str("no complete response (timeout)"),
            Self::HeadTooLong => write!(f, "the response's head is over {MAX_HEAD} bytes"),
            Self::Malformed => f.write_str("not an HTTP/1.x response"),
            Self::Status(s) => write!(f, "HTTP status {s}"),
            Self::NoContentLength => f.write_str("no Content-Length and not chunked"),
            Self::BadChunk => f.write_str("a malformed chunk"),
            Self::BodyTooLarge { len, capacity } => {
                write!(f, "a body of {len} bytes is over the {capacity}-byte buffer")
            }
        }
    }
}

/// Counts what is written through `core::fmt`, onto the link.
struct Fmt<'a, W> {
    out: &'a mut W,
    failed: bool,
}

impl<W: Write> core::fmt::Write for Fmt<'_, W> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.out.write_all(s.as_bytes()).map_err(|_| {
            self.failed = true;
            core::fmt::Error
        })
    }
}

/// The request's line and headers, for a body of `len` bytes.
fn write_head<W: Write>(out: &mut W, len: usize) -> Result<(), ExchangeError> {
    let mut f = Fmt { out, failed: false };
    let written = write!(
        f,
        "POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {len}\r\nConnection: keep-alive\r\n\r\n"
    );
    if written.is_err() || f.failed {
        return Err(ExchangeError::Send);
    }
    Ok(())
}

/// Reads the status line and headers, one byte at a time (so nothing of
/// the body is taken), into `head`; returns their length.
fn read_head<R: Read>(link: &mut R, head: &mut [u8; MAX_HEAD]) -> Result<usize, ExchangeError> {
    let mut len = 0;
    loop {
        let mut byte = [0u8; 1];
        match link.read(&mut byte) {
            Ok(1) => {}
            _ => return Err(ExchangeError::Receive),
        }
        let slot = head.get_mut(len).ok_or(ExchangeError::HeadTooLong)?;
        *slot = byte[0];
        len += 1;
        if head[..len].ends_with(b"\r\n\r\n") {
            return Ok(len);
        }
    }
}

/// How a response's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// After `Content-Length` bytes.
    Length(usize),
    /// At its last, empty chunk.
    Chunked,
}

/// The status, framing and whether the body is Server-Sent Events, of a
/// response's head.
fn parse_head(head: &[u8]) -> Result<(u16, Framing, bool), ExchangeError> {
    let text = core::str::from_utf8(head).map_err(|_| ExchangeError::Malformed)?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut words = status_line.splitn(3, ' ');
    if !words.next().unwrap_or_default().starts_with("HTTP/1.") {
        return Err(ExchangeError::Malformed);
    }
    let status = words
        .next()
        .filter(|s| s.len() == 3)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or(ExchangeError::Malformed)?;
    let (mut length, mut chunked, mut events) = (None, false, false);
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').ok_or(ExchangeError::Malformed)?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| ExchangeError::NoContentLength)?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if !value.eq_ignore_ascii_case("chunked") {
                return Err(ExchangeError::NoContentLength);
            }
            chunked = true;
        } else if name.eq_ignore_ascii_case("content-type") {
            events = value.starts_with("text/event-stream");
        }
    }
    let framing = match (chunked, length) {
        // A chunked body's length header is ignored (RFC 9112, 6.3).
        (true, _) => Framing::Chunked,
        (false, Some(len)) => Framing::Length(len),
        (false, None) => return Err(ExchangeError::NoContentLength),
    };
    Ok((status, framing, events))
}

/// Reads a line up to CRLF, one byte at a time, into `line`; its length.
fn read_line<R: Read>(link: &mut R, line: &mut [u8]) -> Result<usize, ExchangeError> {
    let mut len = 0;
    loop {
        let mut byte = [0u8; 1];
        read_exact(link, &mut byte)?;
        let slot = line.get_mut(len).ok_or(ExchangeError::BadChunk)?;
        *slot = byte[0];
        len += 1;
        if line.get(..len).is_some_and(|l| l.ends_with(b"\r\n")) {
            return Ok(len - 2);
        }
    }
}

/// Reads a chunked body into `body`: its length, or when it is larger
/// than `body`, [`ExchangeError::BodyTooLarge`] once the whole of it was
/// read (the link stays in step for the next exchange).
fn read_chunked<R: Read>(link: &mut R, body: &mut [u8]) -> Result<usize, ExchangeError> {
    let (mut len, mut total) = (0usize, 0usize);
    let mut line = [0u8; 64];
    loop {
        let n = read_line(link, &mut line)?;
        let size_text = line.get(..n).unwrap_or_default();
        let digits = size_text.split(|&b| b == b';').next().unwrap_or_default();
        let size = core::str::from_utf8(digits)
            .ok()
            .filter(|d| !d.is_empty())
            .and_then(|d| usize::from_str_radix(d.trim(), 16).ok())
            .ok_or(ExchangeError::BadChunk)?;
        if size == 0 {
            // Trailer lines, up to the empty one.
            while read_line(link, &mut line)? > 0 {}
            return match total > body.len() {
                true => Err(ExchangeError::BodyTooLarge { len: total, capacity: body.len() }),
                false => Ok(len),
            };
        }
        total = total.saturating_add(size);
        let fits = total <= body.len();
        match body.get_mut(len..len.saturating_add(size)) {
            Some(into) if fits => {
                read_exact(link, into)?;
                len += size;
            }
            _ => drain(link, size, &mut line)?,
        }
        let mut crlf = [0u8; 2];
        read_exact(link, &mut crlf)?;
        if crlf != *b"\r\n" {
            return Err(ExchangeError::BadChunk);
        }
    }
}

/// Reads exactly `buf.len()` bytes.
fn read_exact<R: Read>(link: &mut R, mut buf: &mut [u8]) -> Result<(), ExchangeError> {
    while !buf.is_empty() {
        match link.read(buf) {
            Ok(n) if n > 0 => buf = buf.get_mut(n..).unwrap_or_default(),
            _ => return Err(ExchangeError::Receive),
        }
    }
    Ok(())
}

/// Reads and drops `len` bytes, through `buf`, so that the link stays in
/// step with the server for the next exchange.
fn drain<R: Read>(link: &mut R, mut len: usize, buf: &mut [u8]) -> Result<(), ExchangeError> {
    while len > 0 {
        let n = len.min(buf.len());
        read_exact(link, buf.get_mut(..n).ok_or(ExchangeError::Receive)?)?;
        len -= n;
    }
    Ok(())
}

/// One exchange: writes `POST /v1/chat/completions` with `request` over
/// `context` (`Host: 127.0.0.1`, `Content-Type: application/json`,
/// `Content-Length`, `Connection: keep-alive`), then reads the response
/// and its body into `body`. Returns the body's length (`body[..len]`)
/// and the request body's length.
///
/// # Errors
///
/// [`ExchangeError`]: the link's timeouts, a response that is not
/// HTTP/1.x with a `Content-Length` or chunked, a status other than 200, a
/// body over `body.len()`.
pub fn exchange<L: Read + Write, C: Conversation>(
    link: &mut L,
    request: &ChatRequest<'_>,
    context: &C,
    body: &mut [u8],
) -> Result<Exchanged, ExchangeError> {
    let sent = request.body_len(context);
    write_head(link, sent)?;
    request.write_body(context, link).map_err(|_| ExchangeError::Send)?;
    link.flush().map_err(|_| ExchangeError::Send)?;
    let mut head = [0u8; MAX_HEAD];
    let head_len = read_head(link, &mut head)?;
    let (status, framing, events) = parse_head(head.get(..head_len).unwrap_or_default())?;
    let received = match framing {
        Framing::Length(len) if status != 200 || len > body.len() => {
            // The body goes through `head`, which is done with.
            drain(link, len, &mut head)?;
            return Err(if status != 200 {
                ExchangeError::Status(status)
            } else {
                ExchangeError::BodyTooLarge { len, capacity: body.len() }
            });
        }
        Framing::Length(len) => {
            read_exact(link, body.get_mut(..len).unwrap_or_default())?;
            len
        }
        Framing::Chunked => read_chunked(link, body)?,
    };
    if status != 200 {
        return Err(ExchangeError::Status(status));
    }
    Ok(Exchanged { sent, received, events })
}

/// What an [`exchange`] moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchanged {
    /// The request body's bytes.
    pub sent: usize,
    /// The response body's bytes (`body[..received]`).
    pub received: usize,
    /// Whether the body is Server-Sent Events (`text/event-stream`: a
    /// streamed reply, read with `ChatResponse::parse_stream`).
    pub events: bool,
}
