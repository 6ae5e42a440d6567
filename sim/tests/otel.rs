//! `envaware-sim export --otlp`: what reaches a collector. The collector
//! here is a few lines of HTTP on 127.0.0.1 that keeps each request's
//! body; what is sent is checked against what `replay --json --request
//! openai` computes for the same trace. With the reference venv, the
//! official OTLP definitions (`opentelemetry-proto` for Python) read both
//! encodings to the same message. Phoenix itself: tests/tests/otel_phoenix.rs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;

const SIM: &str = env!("CARGO_BIN_EXE_envaware-sim");

/// One request the collector received.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    content_type: String,
    body: Vec<u8>,
}

/// A collector on 127.0.0.1 answering every `POST` with `status` and
/// `reply`; it runs until the test process ends.
struct Collector {
    port: u16,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Collector {
    fn start(status: u16, reply: &'static str) -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&received);
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || serve(stream, status, reply, &kept));
            }
        });
        Collector { port, received }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// Requests on one connection (kept alive by the client), until it closes.
fn serve(stream: TcpStream, status: u16, reply: &str, kept: &Mutex<Vec<Received>>) {
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut head = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" => break,
                Ok(_) => head.push(line.trim_end().to_string()),
            }
        }
        let header = |name: &str| {
            head.iter()
                .find_map(|h| {
                    let (k, v) = h.split_once(':')?;
                    k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
                })
                .unwrap_or_default()
        };
        let mut body = vec![0; header("content-length").parse().unwrap_or(0)];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let path = head.first().and_then(|l| l.split(' ').nth(1)).unwrap_or("").to_string();
        kept.lock().unwrap().push(Received { path, content_type: header("content-type"), body });
        let answer = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{reply}",
            reply.len()
        );
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn example(name: &str) -> PathBuf {
    common::workspace().join("examples").join(name)
}

fn sim(args: &[&str]) -> Output {
    Command::new(SIM).args(args).output().expect("run envaware-sim")
}

fn export(url: &str, source: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["export", "--otlp", url];
    args.extend(extra);
    args.push(source.to_str().unwrap());
    sim(&args)
}

/// Every span the JSON bodies carry, with its resource's attributes.
fn json_spans(requests: &[Received]) -> Vec<(Value, Value)> {
    let mut spans = Vec::new();
    for r in requests {
        let body: Value = serde_json::from_slice(&r.body).expect("a JSON body");
        for rs in body["resourceSpans"].as_array().unwrap() {
            for ss in rs["scopeSpans"].as_array().unwrap() {
                assert_eq!(ss["scope"]["name"], "envaware-sim");
                assert_eq!(ss["schemaUrl"], "https://opentelemetry.io/schemas/1.41.0");
                for span in ss["spans"].as_array().unwrap() {
                    spans.push((span.clone(), rs["resource"]["attributes"].clone()));
                }
            }
        }
    }
    spans
}

/// An attribute's value in OTLP/JSON (`{"key", "value": {"stringValue"}}`).
fn attr<'v>(attributes: &'v Value, key: &str) -> Option<&'v Value> {
    let kv = attributes.as_array()?.iter().find(|kv| kv["key"] == key)?;
    kv["value"].as_object()?.values().next()
}

fn attr_str<'v>(attributes: &'v Value, key: &str) -> &'v str {
    attr(attributes, key).and_then(Value::as_str).unwrap_or("")
}

/// `replay --json --request openai`'s lines.
fn replayed(source: &Path, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["replay", "--json", "--request", "openai"];
    args.extend(extra);
    args.push(source.to_str().unwrap());
    let out = sim(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A conventions message as `(role, texts)`; a Chat Completions message the same.
fn texts_of_input(m: &Value) -> (String, Vec<String>) {
    let parts = m["parts"].as_array().unwrap();
    let texts = parts
        .iter()
        .map(|p| match p["type"].as_str().unwrap() {
            "text" => p["content"].as_str().unwrap().to_string(),
            "tool_call" => format!("call {}", p["id"].as_str().unwrap()),
            "tool_call_response" => {
                format!("{} -> {}", p["id"].as_str().unwrap(), p["response"].as_str().unwrap())
            }
            other => panic!("a part of type {other}"),
        })
        .collect();
    (m["role"].as_str().unwrap().to_string(), texts)
}

fn texts_of_request(m: &Value) -> (String, Vec<String>) {
    let mut texts: Vec<String> = match &m["content"] {
        Value::Array(parts) => {
            parts.iter().map(|p| p["text"].as_str().unwrap().to_string()).collect()
        }
        Value::String(s) if m["role"] == "tool" => {
            vec![format!("{} -> {s}", m["tool_call_id"].as_str().unwrap())]
        }
        Value::String(s) => vec![s.clone()],
        _ => Vec::new(),
    };
    for call in m["tool_calls"].as_array().into_iter().flatten() {
        texts.push(format!("call {}", call["id"].as_str().unwrap()));
    }
    (m["role"].as_str().unwrap().to_string(), texts)
}

#[test]
fn each_step_is_a_chat_span_whose_input_is_the_request_with_its_hint() {
    let collector = Collector::start(200, "{}");
    for (sample, extra) in common::samples() {
        let before = collector.requests().len();
        let session = format!("s-{}", sample.file_name().unwrap().to_string_lossy());
        let mut args = vec![
            "--encoding",
            "json",
            "--model",
            "m1",
            "--device-id",
            "board-7",
            "--firmware-version",
            "0.9.1",
            "--session-id",
            &session,
        ];
        args.extend(&extra);
        let out = export(&collector.url(), &sample, &args);
        assert!(
            out.status.success(),
            "{}: {}",
            sample.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let requests = collector.requests()[before..].to_vec();
        assert!(requests
            .iter()
            .all(|r| r.path == "/v1/traces" && r.content_type == "application/json"));
        let spans = json_spans(&requests);
        let steps = replayed(&sample, &extra);
        let chats: Vec<&(Value, Value)> =
            spans.iter().filter(|(s, _)| s["name"] == "chat m1").collect();
        let replies: Vec<&(Value, Value)> = spans
            .iter()
            .filter(|(s, _)| s["name"].as_str().unwrap().starts_with("invoke_agent "))
            .collect();
        assert_eq!(chats.len(), steps.len(), "{}", sample.display());
        assert_eq!(chats.len() + replies.len(), spans.len(), "{}", sample.display());
        let said = String::from_utf8_lossy(&out.stderr);
        let hinted = steps.iter().filter(|s| s["hint"].is_string()).count();
        assert!(
            said.contains(&format!(
                "exported {} steps ({hinted} with a hint) as {} spans",
                steps.len(),
                spans.len()
            )),
            "{said}"
        );
        for (i, ((span, resource), step)) in chats.iter().zip(&steps).enumerate() {
            let a = &span["attributes"];
            assert_eq!(
                attr(a, "envaware.step"),
                Some(&json!((i + 1).to_string())),
                "OTLP/JSON int64s are strings"
            );
            assert_eq!(attr_str(a, "gen_ai.operation.name"), "chat");
            assert_eq!(attr_str(a, "gen_ai.provider.name"), "openai");
            assert_eq!(attr_str(a, "gen_ai.request.model"), "m1");
            assert_eq!(attr_str(a, "gen_ai.conversation.id"), session);
            assert_eq!(span["kind"], 3, "CLIENT");
            // The input is the request the replay computes, part for part.
            let input: Vec<Value> =
                serde_json::from_str(attr_str(a, "gen_ai.input.messages")).unwrap();
            let request = step["request"].as_array().unwrap();
            let ours: Vec<_> = input.iter().map(texts_of_input).collect();
            let theirs: Vec<_> = request.iter().map(texts_of_request).collect();
            assert_eq!(ours, theirs, "{} step {}", sample.display(), i + 1);
            match step["hint"].as_str() {
                Some(hint) => {
                    assert_eq!(
                        input.last().unwrap(),
                        &json!({"role": "user", "parts": [{"type": "text", "content": hint}]})
                    );
                    assert_eq!(attr_str(a, "envaware.hint"), hint);
                    let events = span["events"].as_array().unwrap();
                    let fields: Vec<&str> = events
                        .iter()
                        .map(|e| attr_str(&e["attributes"], "envaware.field"))
                        .collect();
                    assert!(
                        !fields.is_empty() && events.iter().all(|e| e["name"] == "envaware.hint")
                    );
                    // Each field an event names is in the hint.
                    for field in fields {
                        assert!(hint.contains(&format!("<{field}>")), "{field} in {hint}");
                    }
                }
                None => assert!(
                    attr(a, "envaware.hint").is_none()
                        && span["events"].as_array().unwrap().is_empty()
                ),
            }
            // The parent is its reply's span, in the same trace.
            let parent = replies
                .iter()
                .find(|(r, _)| r["spanId"] == span["parentSpanId"])
                .expect("a reply span");
            assert_eq!(parent.0["traceId"], span["traceId"]);
            assert!(parent.0.get("parentSpanId").is_none(), "a reply is its trace's root");
            assert_eq!(attr_str(resource, "device.id"), "board-7");
            assert_eq!(attr_str(resource, "envaware.firmware.version"), "0.9.1");
            assert_eq!(attr_str(resource, "service.name"), "envaware");
            assert_eq!(attr_str(resource, "envaware.config.hash").len(), 16);
        }
        let in_replies: i64 = replies
            .iter()
            .map(|(r, _)| attr_str(&r["attributes"], "envaware.steps").parse::<i64>().unwrap())
            .sum();
        assert_eq!(in_replies as usize, steps.len(), "each step in one reply");
    }
}

#[test]
fn a_watch_event_says_why_and_what_was_told_before() {
    let collector = Collector::start(200, "{}");
    let out =
        export(&collector.url(), &example("greenhouse-watch.trace.jsonl"), &["--encoding", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events: Vec<Value> = json_spans(&collector.requests())
        .into_iter()
        .flat_map(|(s, _)| s["events"].as_array().unwrap().clone())
        .filter(|e| attr_str(&e["attributes"], "envaware.dimension") == "watch")
        .collect();
    assert!(events.len() >= 2, "{events:?}");
    let reasons: Vec<&str> =
        events.iter().map(|e| attr_str(&e["attributes"], "envaware.reason")).collect();
    assert!(reasons[0] == "nothing was told of it yet", "{reasons:?}");
    // A later one compares with a value told before.
    let later = &events[1]["attributes"];
    assert!(attr(later, "envaware.watch.told_before").is_some_and(Value::is_f64), "{later}");
    assert!(!attr_str(later, "envaware.watch.reading").is_empty());
}

#[test]
fn follow_sends_each_step_as_its_line_is_written() {
    let collector = Collector::start(200, "{}");
    let dir = std::env::temp_dir().join(format!("envaware-otel-follow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("growing.trace.jsonl");
    std::fs::write(&file, "").unwrap();
    let trace = std::fs::read_to_string(example("greenhouse.trace.jsonl")).unwrap();
    let mut child = Command::new(SIM)
        .args([
            "export",
            "--otlp",
            &collector.url(),
            "--encoding",
            "json",
            "--session-id",
            "follow",
        ])
        .args(["--follow", "--idle-timeout", "3"])
        .arg(&file)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let chat_spans =
        || json_spans(&collector.requests()).iter().filter(|(s, _)| s["name"] == "chat").count();
    let mut out = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
    let mut steps = 0;
    for line in trace.lines() {
        // Half a line first: nothing is read of it until it is whole.
        let (a, b) = line.split_at(line.len() / 2);
        out.write_all(a.as_bytes()).unwrap();
        out.flush().unwrap();
        std::thread::sleep(Duration::from_millis(30));
        out.write_all(format!("{b}\n").as_bytes()).unwrap();
        out.flush().unwrap();
        if line.contains("\"step\"") {
            steps += 1;
            // The step's span arrives while the file is still growing.
            let deadline = Instant::now() + Duration::from_secs(10);
            while chat_spans() < steps {
                assert!(
                    Instant::now() < deadline,
                    "step {steps}'s span did not arrive within 10 s"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            assert_eq!(chat_spans(), steps);
        }
    }
    let status = child.wait().unwrap();
    let mut said = String::new();
    child.stderr.take().unwrap().read_to_string(&mut said).unwrap();
    assert!(status.success(), "{said}");
    // The same spans as an export of the whole file at once.
    let live = json_spans(&collector.requests());
    let whole = Collector::start(200, "{}");
    let out = export(&whole.url(), &file, &["--encoding", "json", "--session-id", "follow"]);
    assert!(out.status.success());
    let batch = json_spans(&whole.requests());
    let key = |spans: &[(Value, Value)]| {
        let mut k: Vec<String> = spans
            .iter()
            .map(|(s, _)| format!("{} {} {}", s["spanId"], s["name"], s["attributes"]))
            .collect();
        k.sort();
        k
    };
    assert_eq!(key(&live), key(&batch));
    assert!(live.len() > steps, "and the replies' spans");
    // A file that gets shorter is another session: an error naming it.
    let short = dir.join("short.trace.jsonl");
    std::fs::write(&short, &trace).unwrap();
    let mut child = Command::new(SIM)
        .args(["export", "--otlp", &collector.url(), "--follow", "--idle-timeout", "3"])
        .arg(&short)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(&short, "{}\n").unwrap();
    let status = child.wait().unwrap();
    let mut said = String::new();
    child.stderr.take().unwrap().read_to_string(&mut said).unwrap();
    assert_eq!(status.code(), Some(2), "{said}");
    assert!(said.contains("got shorter"), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A device on a host logs its session in a `FileLog`, item by item;
/// `export --follow` on the file sends each step's span once the step's
/// record is whole.
#[test]
fn follow_sends_each_step_as_a_host_log_file_grows() {
    use envaware::journal::{Event, Session};
    use envaware::{Config, Engine, StepInput, TaskCounts, Timestamp, ToolResultState};
    let collector = Collector::start(200, "{}");
    let dir = std::env::temp_dir().join(format!("envaware-otel-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("session.log");
    let _ = std::fs::remove_file(&path);
    let (mut log, _) = envaware_host::FileLog::open(&path, envaware_host::Sync::EveryItem).unwrap();
    let engine = Engine::new(Config::default()).unwrap();
    let mut session: Session<'_, 8, 32, 2048> = Session::new(&engine, "rover");
    let (mut buf, mut hint) = ([0u8; 1024], [0u8; 1024]);
    envaware_host::block_on(session.start(&mut buf, &mut log)).unwrap();
    let mut child = Command::new(SIM)
        .args(["export", "--otlp", &collector.url(), "--encoding", "json", "--session-id", "log"])
        .args(["--follow", "--idle-timeout", "3"])
        .arg(&path)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let chat_spans =
        || json_spans(&collector.requests()).iter().filter(|(s, _)| s["name"] == "chat").count();
    for step in 0..4u64 {
        let user = Event::User { name: "operator", text: "Is vent 2 open?" };
        envaware_host::block_on(session.record(&user, &mut buf, &mut log)).unwrap();
        let id = format!("c{step}");
        let call = Event::ToolCall { id: &id, name: "OpenVent", input: "{\"vent\": 2}" };
        envaware_host::block_on(session.record(&call, &mut buf, &mut log)).unwrap();
        let result = Event::ToolResult { id: &id, name: "OpenVent", state: ToolResultState::Error };
        envaware_host::block_on(session.record(&result, &mut buf, &mut log)).unwrap();
        let input = StepInput {
            tasks: TaskCounts { pending: 1, in_progress: 0 },
            cur_iter: 1,
            input_tokens: 900,
            context_size: 8192,
        };
        let now = Some(Timestamp::from_unix_seconds(1_784_687_400 + 60 * step as i64));
        envaware_host::block_on(session.step(&input, now, &mut (), &mut hint, &mut buf, &mut log))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while chat_spans() < step as usize + 1 {
            assert!(Instant::now() < deadline, "step {step}'s span did not arrive within 10 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(chat_spans(), step as usize + 1);
    }
    let status = child.wait().unwrap();
    let mut said = String::new();
    child.stderr.take().unwrap().read_to_string(&mut said).unwrap();
    assert!(status.success(), "{said}");
    // The operator's text reaches the span's input.
    let spans = json_spans(&collector.requests());
    let input = spans
        .iter()
        .find(|(s, _)| s["name"] == "chat")
        .map(|(s, _)| attr_str(&s["attributes"], "gen_ai.input.messages").to_string())
        .unwrap();
    assert!(input.contains("Is vent 2 open?"), "{input}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn errors_name_the_collector_or_the_line() {
    let trace = example("greenhouse.trace.jsonl");
    // Nobody listening.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = export(&format!("http://127.0.0.1:{port}"), &trace, &["--timeout", "5"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.starts_with(&format!("envaware-sim export: no answer from the collector at http://127.0.0.1:{port}/v1/traces: ")), "{said}");
    // A collector that takes no JSON (Phoenix).
    let phoenix_like = Collector::start(415, "{\"detail\": \"Unsupported content type\"}");
    let out = export(&phoenix_like.url(), &trace, &["--encoding", "json"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(said.contains("answered 415: {\"detail\": \"Unsupported content type\"} (the collector does not take OTLP/JSON"), "{said}");
    // A partial success: some spans rejected.
    let picky = Collector::start(
        200,
        "{\"partialSuccess\": {\"rejectedSpans\": \"1\", \"errorMessage\": \"too old\"}}",
    );
    let out = export(&picky.url(), &trace, &["--encoding", "json"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        said.contains("rejected 1 of the ") && said.ends_with("spans sent: too old\n"),
        "{said}"
    );
    // Not a URL it can send to.
    let out = export("https://127.0.0.1:4318", &trace, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("--otlp https://127.0.0.1:4318: https is not supported"));
    // A bad line: the steps before it are sent, with their reply's span.
    let dir = std::env::temp_dir().join(format!("envaware-otel-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.trace.jsonl");
    std::fs::write(&bad, "{\"set_clock\": \"2026-07-22T02:00:00Z\"}\n{\"user\": \"go\"}\n{\"step\": {}}\n{\"step\": {}}\n{\"bogus\": 1}\n{\"step\": {}}\n").unwrap();
    let collector = Collector::start(200, "{}");
    let out = export(&collector.url(), &bad, &["--encoding", "json"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.starts_with("envaware-sim export: line 5: unknown event"), "{said}");
    let names: Vec<String> = json_spans(&collector.requests())
        .iter()
        .map(|(s, _)| s["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["chat", "chat", "invoke_agent agent"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The official definitions (`opentelemetry-proto`, in the reference venv
/// as AgentScope's exporter's) read the protobuf body and the JSON body
/// of the same export to the same message.
#[test]
fn both_encodings_are_the_same_message_to_the_official_definitions() {
    let Some(python) = xtask::needs::or_skip(xtask::needs::reference_python()) else { return };
    let collector = Collector::start(200, "{}");
    let trace = example("greenhouse-watch.trace.jsonl");
    for encoding in ["protobuf", "json"] {
        let out = export(
            &collector.url(),
            &trace,
            &["--encoding", encoding, "--session-id", "same", "--device-id", "d"],
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let requests = collector.requests();
    let (proto, json): (Vec<&Received>, Vec<&Received>) =
        requests.iter().partition(|r| r.content_type == "application/x-protobuf");
    assert_eq!(proto.len(), json.len());
    let dir = std::env::temp_dir().join(format!("envaware-otel-proto-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (p, j)) in proto.iter().zip(&json).enumerate() {
        std::fs::write(dir.join(format!("{i}.pb")), &p.body).unwrap();
        std::fs::write(dir.join(format!("{i}.json")), &j.body).unwrap();
    }
    let script = r#"
import base64, json, sys, pathlib
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
# OTLP/JSON writes ids in hex where proto3's JSON mapping has base64: a
# receiver turns them back, as here, before the generic parser.
def ids(v):
    if isinstance(v, dict):
        return {k: (base64.b64encode(bytes.fromhex(x)).decode() if k in ("traceId", "spanId", "parentSpanId") else ids(x)) for k, x in v.items()}
    return [ids(x) for x in v] if isinstance(v, list) else v
d = pathlib.Path(sys.argv[1]); n = int(sys.argv[2]); spans = 0
for i in range(n):
    a = ExportTraceServiceRequest.FromString((d / f"{i}.pb").read_bytes())
    b = json_format.ParseDict(ids(json.loads((d / f"{i}.json").read_text())), ExportTraceServiceRequest())
    assert a == b, f"request {i}: the encodings differ"
    spans += sum(len(ss.spans) for rs in a.resource_spans for ss in rs.scope_spans)
    for rs in a.resource_spans:
        for ss in rs.scope_spans:
            for s in ss.spans:
                assert len(s.trace_id) == 16 and len(s.span_id) == 8 and s.start_time_unix_nano > 0
print(spans)
"#;
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(&dir)
        .arg(proto.len().to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let spans: usize = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_eq!(spans, json_spans(&json.iter().map(|r| (*r).clone()).collect::<Vec<_>>()).len());
    let _ = std::fs::remove_dir_all(&dir);
}
