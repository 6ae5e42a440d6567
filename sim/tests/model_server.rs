//! `envaware-sim model-server`: the real binary, started with a script and
//! spoken to with plain `TcpStream` clients. Every wait is bounded: the
//! clients have read timeouts, the server an idle timeout, and a guard kills
//! it when a test fails.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// The server's process, killed when dropped (a failed test leaves none).
struct Server {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Server {
    /// Starts the server on `script` with `extra` arguments (`{dir}` in one
    /// is replaced by its scratch directory) and reads its port.
    fn start(script: &str, extra: &[&str]) -> Server {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "envaware-model-server-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).expect("create the scratch directory");
        let script_path = dir.join("script.jsonl");
        std::fs::write(&script_path, script).expect("write the script");
        let dir_text = dir.to_str().expect("a UTF-8 temp path");
        let mut child = Command::new(env!("CARGO_BIN_EXE_envaware-sim"))
            .arg("model-server")
            .arg("--script")
            .arg(&script_path)
            // A server this test fails to kill still stops by itself.
            .args(if extra.contains(&"--idle-timeout") {
                &[][..]
            } else {
                &["--idle-timeout", "10"]
            })
            .args(extra.iter().map(|a| a.replace("{dir}", dir_text)))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start envaware-sim model-server");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut server = Server { child, port: 0, dir };
        let (send, receive) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = send.send(line);
        });
        let line = receive.recv_timeout(Duration::from_secs(10)).expect("the listening line");
        let port = line
            .trim_end()
            .strip_prefix("listening on 127.0.0.1:")
            .unwrap_or_else(|| panic!("expected `listening on 127.0.0.1:PORT`, got {line:?}"));
        server.port = port.parse().expect("a port number");
        server
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        stream.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
        stream.set_write_timeout(Some(CLIENT_TIMEOUT)).unwrap();
        stream
    }

    /// Waits (bounded) for the server to exit by itself.
    fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not exit within {within:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A request's bytes: POST `path` with `body` and extra header lines.
fn request(path: &str, body: &str, headers: &[&str]) -> Vec<u8> {
    let mut text = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer not-checked\r\nContent-Length: {}\r\n",
        body.len()
    );
    for h in headers {
        text.push_str(h);
        text.push_str("\r\n");
    }
    text.push_str("\r\n");
    text.push_str(body);
    text.into_bytes()
}

/// A response read off a stream: its status, headers (names lowercased)
/// and body (by Content-Length, or to the end of the stream).
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("a JSON body: {e}: {:?}", self.body))
    }
}

fn read_response(reader: &mut BufReader<&TcpStream>) -> Response {
    let mut line = String::new();
    reader.read_line(&mut line).expect("the status line");
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line, got {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).expect("a header line");
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').expect("name: value");
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    let length = headers.iter().find(|(n, _)| n == "content-length").map(|(_, v)| v.clone());
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v == "chunked");
    let mut body = Vec::new();
    match length {
        Some(n) => {
            body.resize(n.parse().expect("a length"), 0);
            reader.read_exact(&mut body).expect("the body");
        }
        // Chunks, each a hex size line, its bytes and CRLF, to the empty one.
        None if chunked => loop {
            line.clear();
            reader.read_line(&mut line).expect("a chunk's size");
            let size = usize::from_str_radix(line.trim_end(), 16).expect("a hex size");
            let mut chunk = vec![0u8; size + 2];
            reader.read_exact(&mut chunk).expect("the chunk");
            assert_eq!(&chunk[size..], b"\r\n", "a chunk ends with CRLF");
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        },
        None => {
            reader.read_to_end(&mut body).expect("the body, to the end");
        }
    }
    Response { status, headers, body: String::from_utf8(body).expect("a UTF-8 body") }
}

/// One request on a new connection.
fn post(server: &Server, body: &str, headers: &[&str]) -> Response {
    let stream = server.connect();
    (&stream).write_all(&request("/v1/chat/completions", body, headers)).unwrap();
    read_response(&mut BufReader::new(&stream))
}

fn chat(model: &str) -> String {
    json!({"model": model, "messages": [{"role": "user", "content": "Water row 3."}]}).to_string()
}

const TOOL_LINE: &str = r#"{"tool_calls": [{"id": "c1", "name": "OpenVent", "arguments": "{\"vent\": 2}"}], "content": "Opening it."}"#;

#[test]
fn a_text_reply() {
    let server = Server::start("{\"#\": \"a comment\"}\n\n{\"content\": \"Hello, row 3.\"}\n", &[]);
    let body = chat("qwen-test");
    let response = post(&server, &body, &[]);
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let prompt = body.len().div_ceil(4);
    let completion = "Hello, row 3.".len().div_ceil(4);
    assert_eq!(
        response.json(),
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "qwen-test",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": "Hello, row 3."},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        })
    );
}

#[test]
fn a_tool_call_reply_keeps_the_raw_arguments() {
    let server = Server::start(&format!("{TOOL_LINE}\n"), &[]);
    let reply = post(&server, &chat("m"), &[]).json();
    let choice = &reply["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "Opening it.");
    assert_eq!(
        choice["message"]["tool_calls"],
        json!([{"id": "c1", "type": "function", "function": {"name": "OpenVent", "arguments": "{\"vent\": 2}"}}])
    );
}

#[test]
fn a_body_that_trickles_in_byte_by_byte() {
    let server = Server::start("{\"content\": \"slowly\"}\n", &[]);
    let stream = server.connect();
    stream.set_nodelay(true).unwrap();
    let body = json!({"model": "uart", "messages": [{"role": "user", "content": "x".repeat(200)}]})
        .to_string();
    let bytes = request("/v1/chat/completions", &body, &[]);
    let (head, rest) = bytes.split_at(bytes.len() - body.len());
    (&stream).write_all(head).unwrap();
    let started = Instant::now();
    for byte in rest {
        (&stream).write_all(std::slice::from_ref(byte)).unwrap();
        std::thread::sleep(Duration::from_millis(3));
    }
    assert!(started.elapsed() < Duration::from_secs(2));
    let response = read_response(&mut BufReader::new(&stream));
    assert_eq!(response.status, 200);
    let reply = response.json();
    assert_eq!(reply["model"], "uart");
    assert_eq!(reply["choices"][0]["message"]["content"], "slowly");
    assert_eq!(reply["usage"]["prompt_tokens"], body.len().div_ceil(4));
}

#[test]
fn keep_alive_serves_two_requests_on_one_connection() {
    let server = Server::start("{\"content\": \"one\"}\n{\"content\": \"two\"}\n", &[]);
    let stream = server.connect();
    let mut reader = BufReader::new(&stream);
    for (n, text) in [(1, "one"), (2, "two")] {
        (&stream).write_all(&request("/v1/chat/completions", &chat("m"), &[])).unwrap();
        let response = read_response(&mut reader);
        assert_eq!(response.header("connection"), None);
        let reply = response.json();
        assert_eq!(reply["id"], format!("chatcmpl-{n}"));
        assert_eq!(reply["choices"][0]["message"]["content"], text);
    }
}

#[test]
fn connection_close_closes() {
    let server = Server::start("{\"content\": \"bye\"}\n", &[]);
    let stream = server.connect();
    (&stream).write_all(&request("/chat/completions", &chat("m"), &["Connection: close"])).unwrap();
    let mut reader = BufReader::new(&stream);
    let response = read_response(&mut reader);
    assert_eq!(response.status, 200);
    assert_eq!(response.header("connection"), Some("close"));
    let mut rest = Vec::new();
    let n = reader.read_to_end(&mut rest).expect("the end of the stream, not a timeout");
    assert_eq!(n, 0);
}

#[test]
fn a_malformed_body_is_refused_and_the_server_goes_on() {
    let server = Server::start("{\"content\": \"still here\"}\n", &[]);
    let stream = server.connect();
    let mut reader = BufReader::new(&stream);
    (&stream).write_all(&request("/v1/chat/completions", "{\"model\": ", &[])).unwrap();
    let refused = read_response(&mut reader);
    assert_eq!(refused.status, 400);
    let error = refused.json();
    assert_eq!(error["error"]["type"], "invalid_json");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("EOF while parsing") && message.contains("line 1"), "{message}");
    // The same connection, then a new one: the refused request took no reply.
    (&stream).write_all(&request("/v1/chat/completions", &chat("m"), &[])).unwrap();
    assert_eq!(read_response(&mut reader).json()["choices"][0]["message"]["content"], "still here");
    assert_eq!(post(&server, &chat("m"), &[]).status, 503);
    // Other paths and a missing Content-Length.
    let stream = server.connect();
    (&stream).write_all(&request("/v1/models", "{}", &[])).unwrap();
    let mut reader = BufReader::new(&stream);
    assert_eq!(read_response(&mut reader).status, 404);
    (&stream).write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let refused = read_response(&mut reader);
    assert_eq!(refused.status, 411);
    assert_eq!(refused.json()["error"]["type"], "length_required");
}

#[test]
fn an_exhausted_script_answers_503() {
    let server = Server::start(
        "{\"status\": 429, \"body\": {\"error\": {\"message\": \"slow down\"}}}\n",
        &[],
    );
    let scripted = post(&server, &chat("m"), &[]);
    assert_eq!(scripted.status, 429);
    assert_eq!(scripted.json(), json!({"error": {"message": "slow down"}}));
    let exhausted = post(&server, &chat("m"), &[]);
    assert_eq!(exhausted.status, 503);
    assert_eq!(
        exhausted.json(),
        json!({"error": {"message": "the script has no reply left", "type": "script_exhausted"}})
    );
}

#[test]
fn a_streamed_reply_adds_up_to_the_whole_one() {
    let long = r#"{"content": "The vents are open; row 3 is watered (1.2 L), \u00e9t\u00e9 \ud83c\udf31.", "tool_calls": [{"id": "c1", "name": "OpenVent", "arguments": "{\"vent\": 2}"}, {"id": "c2", "name": "Water", "arguments": "{\"row\""}]}"#;
    let server = Server::start(&format!("{long}\n{long}\n"), &[]);
    let whole = post(&server, &chat("m"), &[]).json();
    let body = json!({"model": "m", "stream": true, "messages": []}).to_string();
    // Streamed in HTTP chunks on a connection kept open: another request
    // follows on it.
    let stream = server.connect();
    let mut reader = BufReader::new(&stream);
    (&stream).write_all(&request("/v1/chat/completions", &body, &[])).unwrap();
    let streamed = read_response(&mut reader);
    assert_eq!(streamed.status, 200);
    assert_eq!(streamed.header("content-type"), Some("text/event-stream"));
    assert_eq!(streamed.header("transfer-encoding"), Some("chunked"));
    assert_eq!(streamed.header("connection"), None);
    (&stream).write_all(&request("/v1/chat/completions", &chat("m"), &[])).unwrap();
    assert_eq!(read_response(&mut reader).status, 503, "the script's end, on the same connection");
    // The core's stream reader reads what the whole reply holds.
    let blocks = |body: &str, streamed: bool| {
        let mut scratch = [0u8; 1024];
        let reply = match streamed {
            true => envaware::openai::ChatResponse::parse_stream(body.as_bytes(), &mut scratch),
            false => envaware::openai::ChatResponse::parse(body.as_bytes(), &mut scratch),
        };
        format!("{:?}", reply.expect("read").blocks())
    };
    assert_eq!(blocks(&streamed.body, true), blocks(&whole.to_string(), false));

    let events: Vec<&str> = streamed
        .body
        .split_terminator("\n\n")
        .map(|e| e.strip_prefix("data: ").expect("a data line"))
        .collect();
    assert_eq!(events.last(), Some(&"[DONE]"));
    let chunks: Vec<Value> =
        events[..events.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
    assert_eq!(chunks[0]["choices"][0]["delta"], json!({"role": "assistant", "content": ""}));
    let mut content = String::new();
    let mut calls = Vec::new();
    let mut finish = Value::Null;
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["id"], "chatcmpl-2");
        let choice = &chunk["choices"][0];
        let delta = &choice["delta"];
        if let Some(piece) = delta["content"].as_str() {
            assert!(piece.len() <= 16, "a piece of {} bytes", piece.len());
            content.push_str(piece);
        }
        // A call's id and name in its first delta, its arguments in pieces.
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().unwrap() as usize;
            let piece = call["function"]["arguments"].as_str().unwrap();
            assert!(piece.len() <= 16, "a piece of {} bytes", piece.len());
            if index == calls.len() {
                let mut call = call.clone();
                call.as_object_mut().unwrap().remove("index");
                calls.push(call);
            } else {
                assert_eq!((index + 1, call.get("id")), (calls.len(), None));
                let args = &mut calls[index]["function"]["arguments"];
                *args = format!("{}{piece}", args.as_str().unwrap()).into();
            }
        }
        if !choice["finish_reason"].is_null() {
            assert_eq!(*delta, json!({}));
            finish = choice["finish_reason"].clone();
        }
    }
    let message = &whole["choices"][0]["message"];
    assert_eq!(content, message["content"].as_str().unwrap());
    assert!(chunks.len() > 4, "the content in several pieces");
    assert_eq!(Value::Array(calls), message["tool_calls"]);
    assert_eq!(finish, whole["choices"][0]["finish_reason"]);
}

#[test]
fn the_log_has_a_line_per_request() {
    let server = Server::start(
        &format!("{{\"content\": \"a\"}}\n{TOOL_LINE}\n"),
        &["--log", "{dir}/log.jsonl"],
    );
    let first = chat("first");
    assert_eq!(post(&server, &first, &[]).status, 200);
    assert_eq!(post(&server, "[1,", &[]).status, 400);
    let second = chat("second");
    assert_eq!(post(&server, &second, &[]).status, 200);
    // Read while the server runs: each line is flushed before its answer.
    let log = std::fs::read_to_string(server.dir.join("log.jsonl")).expect("the log");
    let lines: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let reply: Value = serde_json::from_str(TOOL_LINE).unwrap();
    assert_eq!(
        lines,
        vec![
            json!({"n": 1, "path": "/v1/chat/completions", "request": serde_json::from_str::<Value>(&first).unwrap(), "reply": {"content": "a"}, "status": 200}),
            json!({"n": 2, "path": "/v1/chat/completions", "request": null, "reply": null, "status": 400}),
            json!({"n": 3, "path": "/v1/chat/completions", "request": serde_json::from_str::<Value>(&second).unwrap(), "reply": reply, "status": 200}),
        ]
    );
}

#[test]
fn max_requests_makes_it_exit_by_itself() {
    let mut server =
        Server::start("{\"content\": \"a\"}\n{\"content\": \"b\"}\n", &["--max-requests", "2"]);
    assert_eq!(post(&server, &chat("m"), &[]).status, 200);
    assert_eq!(post(&server, &chat("m"), &[]).status, 200);
    assert!(server.wait_exit(Duration::from_secs(5)).success());
}

#[test]
fn idle_timeout_makes_it_exit_by_itself() {
    let mut server = Server::start("{\"content\": \"unused\"}\n", &["--idle-timeout", "0.3"]);
    assert!(server.wait_exit(Duration::from_secs(5)).success());
}

#[test]
fn a_bad_script_line_is_named() {
    let dir =
        std::env::temp_dir().join(format!("envaware-model-server-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("bad.jsonl");
    std::fs::write(&script, "{\"content\": \"ok\"}\n{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"N\", \"arguments\": {}}]}\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_envaware-sim"))
        .args(["model-server", "--idle-timeout", "1", "--script"])
        .arg(&script)
        .output()
        .expect("run envaware-sim model-server");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "line 2: tool_calls[0]: arguments: expected a string (the raw argument text)"
        ),
        "{stderr}"
    );
}
