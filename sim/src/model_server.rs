//! A scripted stand-in for an OpenAI-compatible Chat Completions endpoint:
//! the project's one test double for a language model (none can run here).
//!
//! A [`Script`] holds the replies, one per request, in order; a [`Server`]
//! listens on 127.0.0.1 and answers `POST /v1/chat/completions` (or
//! `/chat/completions`) with them, as a whole JSON response or, for
//! `"stream": true`, as Server-Sent Events. It checks the HTTP framing and
//! that the body is a JSON object, nothing more: there is no model, no
//! authentication (an `Authorization` header is accepted and ignored), and
//! the token counts are a rough stand-in (bytes / 4, rounded up). It stops
//! by itself, after a number of requests or when idle, so a test that uses
//! it is bounded in time.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

/// Most bytes of a request's line and headers, up to the blank line.
pub const MAX_HEAD: usize = 16 * 1024;
/// Most bytes of a request's body.
pub const MAX_BODY: usize = 4 * 1024 * 1024;
/// Most connections open at once; one more is closed at once (each has a
/// thread, and a client that leaks connections must not exhaust them).
pub const MAX_CONNECTIONS: usize = 64;
/// Most bytes of content in one streamed chunk.
pub const STREAM_PIECE: usize = 16;
/// How often the accepting loop looks at the clock and the request count
/// (std's listener has no accept with a timeout).
const POLL: Duration = Duration::from_millis(10);

/// The replies to give, in order, one per request.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    replies: Vec<Reply>,
}

/// One script line.
#[derive(Debug, Clone, PartialEq)]
struct Reply {
    /// The line as written, for the log.
    source: Value,
    kind: ReplyKind,
}

#[derive(Debug, Clone, PartialEq)]
enum ReplyKind {
    /// An assistant message: text, tool calls, or both.
    Message { content: Option<String>, tool_calls: Vec<ToolCall> },
    /// An HTTP error response, to test a client's handling of it.
    Error { status: u16, body: String },
}

#[derive(Debug, Clone, PartialEq)]
struct ToolCall {
    id: String,
    name: String,
    /// The raw argument text, sent as it is (a model may send invalid JSON).
    arguments: String,
}

/// Why a script is refused: its line (from 1) and the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// The line, counted from 1.
    pub line: usize,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.problem)
    }
}

impl std::error::Error for ScriptError {}

impl Script {
    /// Reads a script: JSON Lines, one reply a line:
    /// `{"content": "text"}`; `{"tool_calls": [{"id", "name", "arguments"}]}`,
    /// with `"content"` too if wanted (`arguments` is the raw text);
    /// or `{"status": 500, "body": "..."}`, an error response (`body` a
    /// text, or JSON that is written out). A `"#"` key is a comment; a line
    /// holding only one, or blank, is skipped.
    pub fn parse(text: &str) -> Result<Script, ScriptError> {
        let mut replies = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let raw = raw.trim();
            if raw.is_empty() {
                continue;
            }
            let fail = |problem: String| ScriptError { line: index + 1, problem };
            let source: Value =
                serde_json::from_str(raw).map_err(|e| fail(format!("not JSON: {e}")))?;
            let Value::Object(map) = &source else {
                return Err(fail("expected a JSON object".into()));
            };
            if map.len() == 1 && map.contains_key("#") {
                continue;
            }
            let kind = reply_kind(map).map_err(fail)?;
            replies.push(Reply { source, kind });
        }
        Ok(Script { replies })
    }

    /// How many replies it holds.
    pub fn len(&self) -> usize {
        self.replies.len()
    }

    /// Whether it holds no reply (every request is then answered 503).
    pub fn is_empty(&self) -> bool {
        self.replies.is_empty()
    }
}

fn reply_kind(map: &Map<String, Value>) -> Result<ReplyKind, String> {
    if let Some(key) =
        map.keys().find(|k| !["#", "content", "tool_calls", "status", "body"].contains(&k.as_str()))
    {
        return Err(format!(
            "unknown key {key:?} (expected \"content\", \"tool_calls\", \"status\", \"body\" or \"#\")"
        ));
    }
    if let Some(status) = map.get("status") {
        if map.contains_key("content") || map.contains_key("tool_calls") {
            return Err("\"status\" makes an error response: it takes \"body\", not \"content\" or \"tool_calls\"".into());
        }
        let status = status
            .as_u64()
            .filter(|s| (100..=599).contains(s))
            .ok_or_else(|| format!("status: expected an HTTP status in 100..=599, got {status}"))?;
        let body = match map.get("body") {
            None => error_body(&format!("scripted status {status}"), "scripted"),
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
        };
        return Ok(ReplyKind::Error { status: status as u16, body });
    }
    if map.contains_key("body") {
        return Err("\"body\" goes with \"status\" (an error response)".into());
    }
    let content = match map.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()),
        Some(other) => return Err(format!("content: expected a string or null, got {other}")),
    };
    let tool_calls = match map.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(calls)) => calls
            .iter()
            .enumerate()
            .map(|(i, call)| tool_call(call).map_err(|e| format!("tool_calls[{i}]: {e}")))
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("tool_calls: expected an array, got {other}")),
    };
    if content.is_none() && tool_calls.is_empty() {
        return Err("expected \"content\", \"tool_calls\" or \"status\"".into());
    }
    Ok(ReplyKind::Message { content, tool_calls })
}

fn tool_call(call: &Value) -> Result<ToolCall, String> {
    let Value::Object(map) = call else {
        return Err(format!("expected an object, got {call}"));
    };
    if let Some(key) = map.keys().find(|k| !["id", "name", "arguments"].contains(&k.as_str())) {
        return Err(format!("unknown key {key:?} (expected \"id\", \"name\", \"arguments\")"));
    }
    let text = |key: &str| match map.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        None => Err(format!("missing {key:?}")),
        Some(other) => Err(format!(
            "{key}: expected a string{}, got {other}",
            if key == "arguments" { " (the raw argument text)" } else { "" }
        )),
    };
    Ok(ToolCall { id: text("id")?, name: text("name")?, arguments: text("arguments")? })
}

/// An OpenAI-style error body.
fn error_body(message: &str, kind: &str) -> String {
    json!({"error": {"message": message, "type": kind}}).to_string()
}

/// How [`Server::serve`] runs and when it stops.
#[derive(Debug)]
pub struct ServeOptions {
    /// Where to append one JSON line per request answered, flushed each
    /// time: `{"n", "path", "request", "reply", "status"}`.
    pub log: Option<File>,
    /// Stop after answering this many requests (any status).
    pub max_requests: Option<u64>,
    /// Stop when no connection or data has come for this long; also each
    /// connection's read and write timeout.
    pub idle_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions { log: None, max_requests: None, idle_timeout: Duration::from_secs(30) }
    }
}

/// Why [`Server::serve`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// It answered [`ServeOptions::max_requests`] requests.
    MaxRequests,
    /// Nothing came for [`ServeOptions::idle_timeout`].
    Idle,
}

/// What a run of [`Server::serve`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Requests answered, with any status.
    pub requests: u64,
    /// Script replies never used.
    pub replies_left: usize,
    /// Why it stopped.
    pub stop: Stop,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.stop {
            Stop::MaxRequests => "the request limit was reached",
            Stop::Idle => "idle",
        };
        write!(
            f,
            "answered {} requests, {} script replies left; stopped: {why}",
            self.requests, self.replies_left
        )
    }
}

/// A listener on 127.0.0.1, bound before serving so that a caller can
/// learn the port first.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
}

impl Server {
    /// Binds 127.0.0.1:`port` (0: any free port). Only the loopback
    /// address: the server has no authentication.
    pub fn bind(port: u16) -> io::Result<Server> {
        Ok(Server { listener: TcpListener::bind((Ipv4Addr::LOCALHOST, port))? })
    }

    /// The port bound.
    pub fn port(&self) -> u16 {
        self.listener.local_addr().map_or(0, |a| a.port())
    }

    /// Answers requests with the script's replies, a thread per connection,
    /// until [`ServeOptions`] says to stop. An error is the listener's or
    /// the log's.
    pub fn serve(self, script: Script, options: ServeOptions) -> io::Result<Summary> {
        self.listener.set_nonblocking(true)?;
        let shared = Arc::new(Shared {
            start: Instant::now(),
            last_activity: AtomicU64::new(0),
            answered: AtomicU64::new(0),
            max_requests: options.max_requests,
            idle_timeout: options.idle_timeout,
            state: Mutex::new(State {
                next: 0,
                replies: script.replies,
                used: 0,
                log: options.log,
                log_error: None,
            }),
        });
        let mut open: Vec<(TcpStream, JoinHandle<()>)> = Vec::new();
        let stop = loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    shared.touch();
                    open.retain(|(_, thread)| !thread.is_finished());
                    if open.len() >= MAX_CONNECTIONS {
                        continue; // dropped: closed
                    }
                    if let Some(conn) = spawn_connection(stream, &shared) {
                        open.push(conn);
                    }
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(e),
            }
            if let Some(e) = shared.lock().log_error.take() {
                return Err(e);
            }
            if shared.max_requests.is_some_and(|max| shared.answered.load(Ordering::SeqCst) >= max)
            {
                break Stop::MaxRequests;
            }
            if shared.idle_for() >= shared.idle_timeout {
                break Stop::Idle;
            }
            thread::sleep(POLL);
        };
        // Unblock the connections' reads; what was written is still sent.
        for (stream, thread) in open {
            let _ = stream.shutdown(Shutdown::Both);
            let _ = thread.join();
        }
        let state = shared.lock();
        Ok(Summary {
            requests: shared.answered.load(Ordering::SeqCst),
            replies_left: state.replies.len() - state.used,
            stop,
        })
    }
}

fn spawn_connection(
    stream: TcpStream,
    shared: &Arc<Shared>,
) -> Option<(TcpStream, JoinHandle<()>)> {
    let timeout = Some(shared.idle_timeout);
    // An accepted socket may inherit the listener's non-blocking mode.
    stream.set_nonblocking(false).ok()?;
    stream.set_read_timeout(timeout).ok()?;
    stream.set_write_timeout(timeout).ok()?;
    let _ = stream.set_nodelay(true);
    let handle = stream.try_clone().ok()?;
    let shared = Arc::clone(shared);
    let thread = thread::spawn(move || Connection { stream, buf: Vec::new(), shared }.run());
    Some((handle, thread))
}

/// What the connections share.
struct Shared {
    start: Instant,
    /// Milliseconds since `start` when a connection or data last came.
    last_activity: AtomicU64,
    /// Responses written in full.
    answered: AtomicU64,
    max_requests: Option<u64>,
    idle_timeout: Duration,
    state: Mutex<State>,
}

/// The request count, the script's cursor and the log: one lock, so that
/// the log's lines are in the order of their numbers.
struct State {
    /// Requests numbered so far.
    next: u64,
    replies: Vec<Reply>,
    /// Replies given (a refused request takes none).
    used: usize,
    log: Option<File>,
    log_error: Option<io::Error>,
}

impl Shared {
    fn touch(&self) {
        let now = self.start.elapsed().as_millis() as u64;
        self.last_activity.fetch_max(now, Ordering::SeqCst);
    }

    fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_activity.load(Ordering::SeqCst));
        self.start.elapsed().saturating_sub(last)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A connection thread that panicked leaves the state as valid as
        // before: go on with it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A request read off a connection, or why it could not be.
enum Incoming {
    /// A whole request.
    Request { method: String, path: String, body: Vec<u8>, close: bool },
    /// A request refused before its body was read; the connection is closed
    /// after the answer, as where the next request starts is unknown.
    Refused { path: Option<String>, status: u16, message: String, kind: &'static str },
}

/// An HTTP response, ready to write.
struct Response {
    status: u16,
    content_type: &'static str,
    body: Body,
    close: bool,
}

enum Body {
    /// Sent with its `Content-Length`.
    Whole(String),
    /// Server-Sent Events, one HTTP chunk each (`Transfer-Encoding:
    /// chunked`), then the last, empty chunk.
    Events(Vec<String>),
}

impl Response {
    fn json_error(status: u16, message: &str, kind: &str) -> Response {
        Response {
            status,
            content_type: "application/json",
            body: Body::Whole(error_body(message, kind)),
            close: false,
        }
    }
}

struct Connection {
    stream: TcpStream,
    /// Bytes read and not yet used: a request's start, or a pipelined one.
    buf: Vec<u8>,
    shared: Arc<Shared>,
}

impl Connection {
    fn run(mut self) {
        // Any I/O error, a timeout or the peer closing ends the connection.
        while let Ok(Some(incoming)) = self.read_request() {
            let Some(response) = self.answer(incoming) else { break };
            let written = self.write(&response);
            if written.is_err() {
                break;
            }
            self.shared.answered.fetch_add(1, Ordering::SeqCst);
            if response.close {
                break;
            }
        }
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// Reads more bytes into `buf`: false when the peer closed or nothing
    /// came within the idle timeout.
    fn fill(&mut self) -> io::Result<bool> {
        let mut chunk = [0u8; 8192];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.shared.touch();
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e)
                    if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) =>
                {
                    return Ok(false)
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The next request, however its bytes trickle in; `None` when the
    /// connection ends before a whole one.
    fn read_request(&mut self) -> io::Result<Option<Incoming>> {
        let mut scanned = 0;
        let head_end = loop {
            if let Some(i) = find(&self.buf[scanned..], b"\r\n\r\n") {
                break scanned + i;
            }
            scanned = self.buf.len().saturating_sub(3);
            if self.buf.len() > MAX_HEAD {
                return Ok(Some(refused(None, 431, "the request's headers are over 16 KiB")));
            }
            if !self.fill()? {
                return Ok(None);
            }
        };
        if head_end + 4 > MAX_HEAD {
            return Ok(Some(refused(None, 431, "the request's headers are over 16 KiB")));
        }
        let head = match Head::parse(&self.buf[..head_end]) {
            Ok(head) => head,
            Err(message) => return Ok(Some(refused(None, 400, &message))),
        };
        let path = Some(head.path.clone());
        let length = match head.content_length {
            Err(message) => return Ok(Some(refused(path, 400, &message))),
            Ok(_) if head.chunked => {
                return Ok(Some(refused(
                    path,
                    411,
                    "chunked request bodies are not supported: send Content-Length",
                )))
            }
            Ok(None) if head.method == "POST" => {
                return Ok(Some(refused(path, 411, "a POST needs a Content-Length header")))
            }
            Ok(None) => 0,
            Ok(Some(n)) if n > MAX_BODY => {
                return Ok(Some(refused(
                    path,
                    413,
                    &format!("the body is {n} bytes, over the limit of {MAX_BODY}"),
                )))
            }
            Ok(Some(n)) => n,
        };
        let body_start = head_end + 4;
        if head.expect_continue && self.buf.len() < body_start + length {
            // curl waits a second for this before sending a larger body.
            self.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        }
        while self.buf.len() < body_start + length {
            if !self.fill()? {
                return Ok(None);
            }
        }
        let body = self.buf[body_start..body_start + length].to_vec();
        self.buf.drain(..body_start + length);
        Ok(Some(Incoming::Request {
            method: head.method,
            path: head.path,
            body,
            close: head.close,
        }))
    }

    /// The response to a request, logged; `None` past the request limit
    /// (the connection is then closed unanswered).
    fn answer(&self, incoming: Incoming) -> Option<Response> {
        let (path, request, pending) = match incoming {
            Incoming::Refused { path, status, message, kind } => {
                let mut response = Response::json_error(status, &message, kind);
                response.close = true;
                (path, Value::Null, Err(response))
            }
            Incoming::Request { method, path, body, close } => {
                let (request, pending) = check_request(&method, &path, &body);
                let pending = pending.map_err(|mut r| {
                    r.close = close;
                    r
                });
                (Some(path), request, pending.map(|p| (p, body.len(), close)))
            }
        };
        let mut state = self.shared.lock();
        if self.shared.max_requests.is_some_and(|max| state.next >= max) {
            return None;
        }
        state.next += 1;
        let n = state.next;
        let (response, reply) = match pending {
            Err(response) => (response, Value::Null),
            Ok((stream, body_len, close)) => match take_reply(&mut state) {
                None => {
                    let mut r = Response::json_error(
                        503,
                        "the script has no reply left",
                        "script_exhausted",
                    );
                    r.close = close;
                    (r, Value::Null)
                }
                Some(reply) => {
                    let model = request.get("model").cloned().unwrap_or(Value::Null);
                    let mut r = respond(&reply.kind, n, &model, body_len, stream);
                    r.close |= close;
                    (r, reply.source)
                }
            },
        };
        let line = json!({"n": n, "path": path, "request": request, "reply": reply, "status": response.status});
        if let Some(log) = state.log.as_mut() {
            let written = writeln!(log, "{line}").and_then(|()| log.flush());
            if let Err(e) = written {
                state.log_error.get_or_insert(e);
            }
        }
        Some(response)
    }

    fn write(&mut self, response: &Response) -> io::Result<()> {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\n",
            response.status,
            reason(response.status),
            response.content_type
        );
        match &response.body {
            Body::Whole(body) => {
                head.push_str(&format!("Content-Length: {}\r\n", body.len()));
                if response.close {
                    head.push_str("Connection: close\r\n");
                }
                head.push_str("\r\n");
                head.push_str(body);
                self.stream.write_all(head.as_bytes())?;
            }
            Body::Events(events) => {
                // One chunk per event: the connection stays open for the
                // next request, as hosted APIs keep it.
                head.push_str("Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n");
                if response.close {
                    head.push_str("Connection: close\r\n");
                }
                head.push_str("\r\n");
                self.stream.write_all(head.as_bytes())?;
                for event in events {
                    let chunk = format!("{:x}\r\n{event}\r\n", event.len());
                    self.stream.write_all(chunk.as_bytes())?;
                }
                self.stream.write_all(b"0\r\n\r\n")?;
            }
        }
        self.stream.flush()?;
        self.shared.touch();
        Ok(())
    }
}

fn take_reply(state: &mut State) -> Option<Reply> {
    let reply = state.replies.get(state.used).cloned()?;
    state.used += 1;
    Some(reply)
}

fn refused(path: Option<String>, status: u16, message: &str) -> Incoming {
    let kind = match status {
        411 => "length_required",
        413 => "body_too_large",
        431 => "headers_too_large",
        _ => "bad_request",
    };
    Incoming::Refused { path, status, message: message.into(), kind }
}

/// The request's parsed body and, if it is to get a script reply, whether
/// it asked for a stream (with usage); else the error response.
fn check_request(method: &str, path: &str, body: &[u8]) -> (Value, Result<Streaming, Response>) {
    let route = path.split('?').next().unwrap_or(path);
    if route != "/v1/chat/completions" && route != "/chat/completions" {
        let message = format!("no such path: {route} (POST /v1/chat/completions)");
        return (Value::Null, Err(Response::json_error(404, &message, "not_found")));
    }
    if method != "POST" {
        let message = format!("{method} {route}: only POST is served");
        return (Value::Null, Err(Response::json_error(405, &message, "method_not_allowed")));
    }
    let request: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            let message = format!("the body is not JSON: {e}");
            return (Value::Null, Err(Response::json_error(400, &message, "invalid_json")));
        }
    };
    if !request.is_object() {
        let message = "the body is JSON but not an object";
        return (request, Err(Response::json_error(400, message, "invalid_request")));
    }
    let streaming = match request.get("stream") {
        Some(Value::Bool(true)) => Streaming::Yes {
            usage: request.pointer("/stream_options/include_usage") == Some(&Value::Bool(true)),
        },
        _ => Streaming::No,
    };
    (request, Ok(streaming))
}

/// Whether a request asked for `"stream": true`, and for a last chunk with
/// the usage (`stream_options.include_usage`, as AgentScope asks).
#[derive(Clone, Copy)]
enum Streaming {
    No,
    Yes { usage: bool },
}

/// The response a script reply makes, for request `n`.
fn respond(
    kind: &ReplyKind,
    n: u64,
    model: &Value,
    body_len: usize,
    stream: Streaming,
) -> Response {
    let (content, tool_calls) = match kind {
        ReplyKind::Error { status, body } => {
            let content_type = if serde_json::from_str::<Value>(body).is_ok() {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            return Response {
                status: *status,
                content_type,
                body: Body::Whole(body.clone()),
                close: false,
            };
        }
        ReplyKind::Message { content, tool_calls } => (content, tool_calls),
    };
    let id = format!("chatcmpl-{n}");
    let finish = if tool_calls.is_empty() { "stop" } else { "tool_calls" };
    let completion_bytes = content.as_ref().map_or(0, String::len)
        + tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>();
    let (prompt, completion) = (body_len.div_ceil(4), completion_bytes.div_ceil(4));
    let usage = json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion});
    let calls = || -> Vec<Value> {
        let call = |c: &ToolCall| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}});
        tool_calls.iter().map(call).collect()
    };
    let Streaming::Yes { usage: with_usage } = stream else {
        let mut message = json!({"role": "assistant", "content": content});
        if !tool_calls.is_empty() {
            message["tool_calls"] = Value::Array(calls());
        }
        let body = json!({
            "id": id,
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        });
        return Response {
            status: 200,
            content_type: "application/json",
            body: Body::Whole(body.to_string()),
            close: false,
        };
    };
    let chunk = |delta: Value, finish: Value| {
        let chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {chunk}\n\n")
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    for piece in pieces(content.as_deref().unwrap_or(""), STREAM_PIECE) {
        events.push(chunk(json!({"content": piece}), Value::Null));
    }
    // Each call's id and name first, its arguments in pieces, as hosted
    // APIs stream them.
    for (i, call) in tool_calls.iter().enumerate() {
        let mut args = pieces(&call.arguments, STREAM_PIECE).into_iter();
        let first = json!({"index": i, "id": call.id, "type": "function",
            "function": {"name": call.name, "arguments": args.next().unwrap_or("")}});
        events.push(chunk(json!({"tool_calls": [first]}), Value::Null));
        for piece in args {
            let next = json!({"index": i, "function": {"arguments": piece}});
            events.push(chunk(json!({"tool_calls": [next]}), Value::Null));
        }
    }
    events.push(chunk(json!({}), finish.into()));
    if with_usage {
        let last = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [],
            "usage": usage,
        });
        events.push(format!("data: {last}\n\n"));
    }
    events.push("data: [DONE]\n\n".into());
    Response {
        status: 200,
        content_type: "text/event-stream",
        body: Body::Events(events),
        close: false,
    }
}

/// `text` cut into pieces of at most `max` bytes, on character boundaries.
fn pieces(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = max.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (piece, tail) = rest.split_at(cut);
        out.push(piece);
        rest = tail;
    }
    out
}

/// A request's line and the headers that matter here.
struct Head {
    method: String,
    path: String,
    content_length: Result<Option<usize>, String>,
    chunked: bool,
    close: bool,
    expect_continue: bool,
}

impl Head {
    fn parse(bytes: &[u8]) -> Result<Head, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "the request's head is not UTF-8")?;
        let mut lines = text.split("\r\n");
        let line = lines.next().unwrap_or("");
        let mut parts = line.split(' ');
        let (Some(method), Some(path), Some(version), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(format!("not an HTTP request line: {line:?}"));
        };
        let keep_alive_default = match version {
            "HTTP/1.1" => true,
            "HTTP/1.0" => false,
            _ => return Err(format!("unsupported HTTP version {version:?}")),
        };
        let mut head = Head {
            method: method.into(),
            path: path.into(),
            content_length: Ok(None),
            chunked: false,
            close: !keep_alive_default,
            expect_continue: false,
        };
        for header in lines {
            let Some((name, value)) = header.split_once(':') else {
                return Err(format!("not a header: {header:?}"));
            };
            let value = value.trim();
            let has = |token: &str| value.split(',').any(|t| t.trim().eq_ignore_ascii_case(token));
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => {
                    let n = value
                        .parse::<usize>()
                        .map_err(|_| format!("Content-Length is not a number: {value:?}"));
                    head.content_length = match (&head.content_length, n) {
                        (Ok(Some(old)), Ok(new)) if *old != new => {
                            Err("two different Content-Length headers".into())
                        }
                        (Err(e), _) => Err(e.clone()),
                        (_, n) => n.map(Some),
                    };
                }
                "transfer-encoding" => head.chunked = true,
                "connection" if has("close") => head.close = true,
                "connection" if has("keep-alive") => head.close = false,
                "expect" if has("100-continue") => head.expect_continue = true,
                _ => {}
            }
        }
        Ok(head)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Scripted",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_keep_characters_whole() {
        let text = "ab\u{00e9}\u{1f331}cdefghijklmnopq";
        let cut = pieces(text, 4);
        assert!(cut.iter().all(|p| p.len() <= 4 && !p.is_empty()));
        assert_eq!(cut.concat(), text);
    }

    #[test]
    fn script_errors_name_the_line() {
        let e = Script::parse("{\"#\": \"c\"}\n\n{\"content\": 3}\n").unwrap_err();
        assert_eq!(e.to_string(), "line 3: content: expected a string or null, got 3");
        let e = Script::parse("{\"tool_calls\": [{\"id\": \"c\", \"name\": \"N\"}]}").unwrap_err();
        assert_eq!(e.to_string(), "line 1: tool_calls[0]: missing \"arguments\"");
        assert!(Script::parse("{}").is_err());
        assert_eq!(Script::parse("{\"#\": 1}\n{\"status\": 500}").unwrap().len(), 1);
    }
}
