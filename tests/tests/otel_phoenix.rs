//! The OpenTelemetry export in a real trace UI (issue 38): Arize Phoenix
//! (`arize-phoenix` in the test venv) started on 127.0.0.1, the demo's
//! session exported to it step by step while the firmware runs in QEMU,
//! the spans read back through Phoenix's REST API, AgentScope 2.0.11's
//! own tracing of one session next to envaware's export of the same
//! session, and headless Chromium's picture of a hinted step.
//!
//! Needs the venv (`ENVAWARE_REF_PYTHON` or `.venv`), the `envaware-sim`
//! binary, QEMU, defmt-print, the firmware image and Chromium: `cargo
//! xtask test` provides them all; a plain `cargo test` skips with one line.
//! Everything it starts is on 127.0.0.1 and bounded in time; Phoenix is
//! stopped when the test ends (`xtask::otel::Phoenix` is dropped).
//!
//! The figures it prints (`target/otel/report.json`) are docs/otel.md's.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use xtask::otel::{self, attr, chat_spans, Phoenix};
use xtask::qemu::{self, RunOptions};
use xtask::{chromium, needs};

fn out_dir() -> PathBuf {
    let dir = needs::workspace().join("target/otel");
    std::fs::create_dir_all(&dir).expect("target/otel");
    dir
}

/// A span's `gen_ai.input.messages`, parsed.
fn input(span: &Value) -> Vec<Value> {
    serde_json::from_str(attr(span, "gen_ai.input.messages")).expect("input messages are JSON")
}

/// A conventions message's text parts, joined.
fn texts(msg: &Value) -> String {
    msg["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["type"] == "text")
        .map(|p| p["content"].as_str().unwrap_or(""))
        .collect()
}

/// A Chat Completions message's text, joined (a string, or text parts).
fn request_texts(msg: &Value) -> String {
    match &msg["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().map(|p| p["text"].as_str().unwrap_or("")).collect(),
        _ => String::new(),
    }
}

/// Each message as `(role, text, tool call ids)`: what the model reads.
/// With `drop_empty`, messages with no text and no call go (the device
/// sends no text for the operator's messages; the stream writes them as
/// empty text blocks: docs/openai.md).
fn shape_of_input(messages: &[Value], drop_empty: bool) -> Vec<(String, String, Vec<String>)> {
    messages
        .iter()
        .map(|m| {
            let calls: Vec<String> = m["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["type"] == "tool_call")
                .map(|p| p["id"].as_str().unwrap_or("").to_string())
                .collect();
            let text = match m["role"].as_str() {
                Some("tool") => m["parts"][0]["response"].as_str().unwrap_or("").to_string(),
                _ => texts(m),
            };
            (m["role"].as_str().unwrap_or("").to_string(), text, calls)
        })
        .filter(|(role, text, calls)| {
            !(drop_empty && role != "tool" && text.is_empty() && calls.is_empty())
        })
        .collect()
}

fn shape_of_request(messages: &[Value], drop_empty: bool) -> Vec<(String, String, Vec<String>)> {
    messages
        .iter()
        .map(|m| {
            let calls: Vec<String> = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["id"].as_str().unwrap_or("").to_string())
                .collect();
            (m["role"].as_str().unwrap_or("").to_string(), request_texts(m), calls)
        })
        .filter(|(role, text, calls)| {
            !(drop_empty && role != "tool" && text.is_empty() && calls.is_empty())
        })
        .collect()
}

/// Exports `source` (with `args`: `--flash`, …) to Phoenix under
/// `session`, and checks what Phoenix holds against `replay --json` of
/// the same source: a chat span per step, each hinted step's input ending
/// with its hint. Returns (steps, hinted steps).
fn export_and_read_back(
    sim: &std::path::Path,
    phoenix: &Phoenix,
    source: &std::path::Path,
    args: &[&str],
    session: &str,
) -> (usize, usize) {
    let out = std::process::Command::new(sim)
        .args(["export", "--otlp", &phoenix.url(), "--session-id", session])
        .args(args)
        .arg(source)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}: {}", source.display(), String::from_utf8_lossy(&out.stderr));
    let replayed = std::process::Command::new(sim)
        .args(["replay", "--json"])
        .args(args)
        .arg(source)
        .output()
        .unwrap();
    assert!(replayed.status.success(), "{}", String::from_utf8_lossy(&replayed.stderr));
    let hints: Vec<Option<String>> = String::from_utf8_lossy(&replayed.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["hint"].as_str().map(str::to_string))
        .collect();
    let spans = phoenix
        .spans_when("default", Duration::from_secs(30), |s| {
            chat_spans(s, session).len() == hints.len()
        })
        .unwrap();
    let chats = chat_spans(&spans, session);
    assert_eq!(chats.len(), hints.len(), "{}", source.display());
    for (span, hint) in chats.iter().zip(&hints) {
        if let Some(hint) = hint {
            assert_eq!(texts(input(span).last().unwrap()), *hint, "{}", source.display());
        }
    }
    (hints.len(), hints.iter().filter(|h| h.is_some()).count())
}

#[test]
fn phoenix_shows_each_steps_hint_live_and_agentscopes_own_trace_loses_it() {
    let Some(python) = needs::or_skip(needs::reference_python()) else { return };
    let Some(sim) = needs::or_skip(needs::sim_binary()) else { return };
    let Some(qemu_bin) = needs::or_skip(needs::tool("ENVAWARE_QEMU", "qemu-system-arm")) else {
        return;
    };
    let Some(defmt_print) = needs::or_skip(needs::tool("ENVAWARE_DEFMT_PRINT", "defmt-print"))
    else {
        return;
    };
    let Some(elf) = needs::or_skip(needs::built_file(
        "ENVAWARE_FIRMWARE_ELF",
        "firmware/target/thumbv7m-none-eabi/release/envaware-firmware",
    )) else {
        return;
    };
    let Some(chromium) = needs::or_skip(chromium::find()) else { return };
    let dir = out_dir();
    let started = std::time::Instant::now();
    let phoenix = Phoenix::start(&python, &dir.join("phoenix"), Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("{e}"));
    let phoenix_ready = started.elapsed();

    // The demo's session, each step exported as the board logs it.
    let server_log = dir.join("model-requests.jsonl");
    let server =
        xtask::model::ModelServer::start(&sim, &xtask::model::script(), &server_log, 12, 60)
            .unwrap_or_else(|e| panic!("{e}"));
    let session = format!("demo-{}", std::process::id());
    let mut args = otel::demo_export_args(&dir).unwrap();
    args.extend(["--session-id".into(), session.clone()]);
    let (tx, rx) = std::sync::mpsc::channel();
    let stream = dir.join("demo-session.trace.jsonl");
    let live = otel::LiveExport::start(&sim, Some((&phoenix.url(), &args[..])), &stream, rx)
        .unwrap_or_else(|e| panic!("{e}"));
    let opts = RunOptions {
        qemu: qemu_bin,
        defmt_print,
        elf,
        sensor: true,
        temperatures_milli: qemu::parse_temperatures(
            "21.5,22.25,23,24.5,26,27.75,29.5,27,25.25,23.5",
        )
        .unwrap(),
        timeout: Duration::from_secs(180),
        echo: false,
        epoch: None,
        reset_after: None,
        environment_milli: qemu::parse_environment("6:33").unwrap(),
        model_port: Some(server.port),
        model_stream: false,
        broker_port: None,
        device: None,
        steps: None,
        live: Some(tx),
    };
    let run = qemu::run(&opts);
    drop(opts);
    server.stop();
    let delays = live.finish(Duration::from_secs(60)).unwrap_or_else(|e| panic!("{e}"));
    let run = run.unwrap_or_else(|e| panic!("QEMU run failed: {e}"));
    assert_eq!(run.status, Some(0), "{}", run.log);

    // What the replay decides of the file the board's stream was written
    // to: the steps, and the hint of each.
    let replayed = std::process::Command::new(&sim)
        .args(["replay", "--json"])
        .arg(&stream)
        .output()
        .expect("envaware-sim replay");
    assert!(replayed.status.success(), "{}", String::from_utf8_lossy(&replayed.stderr));
    let steps: Vec<Value> = String::from_utf8_lossy(&replayed.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let hinted = steps.iter().filter(|s| s["hint"].is_string()).count();
    let requests =
        xtask::model::json_lines(&std::fs::read_to_string(&server_log).unwrap()).unwrap();
    assert_eq!((steps.len(), requests.len()), (12, 12), "the demo's steps and model calls");
    assert_eq!(delays.len(), steps.len(), "a delay for each step");

    // Every step's span, and its reply's (Phoenix inserts in the background).
    let all_in = |s: &[Value]| {
        let chats = chat_spans(s, &session);
        chats.len() == steps.len()
            && chats.iter().all(|c| s.iter().any(|r| r["context"]["span_id"] == c["parent_id"]))
    };
    let spans = phoenix.spans_when("default", Duration::from_secs(30), all_in).unwrap();
    let chats = chat_spans(&spans, &session);
    let replies: Vec<&Value> = spans
        .iter()
        .filter(|s| {
            attr(s, "gen_ai.conversation.id") == session
                && attr(s, "gen_ai.operation.name") == "invoke_agent"
        })
        .collect();
    assert_eq!(chats.len(), steps.len(), "a chat span per step, read back from Phoenix");
    let mut holding = 0;
    for (i, (span, step)) in chats.iter().zip(&steps).enumerate() {
        assert_eq!(span["attributes"]["envaware.step"], json!(i + 1));
        assert!(
            replies.iter().any(|r| r["context"]["span_id"] == span["parent_id"]),
            "step {}: its parent is a reply's span",
            i + 1
        );
        // The span's input is what the model received at that step, and
        // Phoenix read all of it (one malformed part would drop it all).
        let messages = input(span);
        let last_role = format!("llm.input_messages.{}.message.role", messages.len() - 1);
        assert!(
            span["attributes"][&last_role].is_string(),
            "step {}: Phoenix read no {last_role}",
            i + 1
        );
        let request = requests[i]["request"]["messages"].as_array().unwrap();
        assert_eq!(
            shape_of_input(&messages, true),
            shape_of_request(request, true),
            "step {}",
            i + 1
        );
        if let Some(hint) = step["hint"].as_str() {
            let last = messages.last().unwrap();
            assert_eq!(
                (last["role"].as_str(), texts(last).as_str()),
                (Some("user"), hint),
                "step {}",
                i + 1
            );
            // As Phoenix reads it for its UI (OpenInference).
            let key = format!("llm.input_messages.{}.message.content", messages.len() - 1);
            assert_eq!(span["attributes"][&key].as_str(), Some(hint), "step {}: {key}", i + 1);
            assert!(!span["events"].as_array().unwrap().is_empty(), "step {}: why it fired", i + 1);
            holding += 1;
        } else {
            assert!(span["attributes"].get("envaware.hint").is_none(), "step {}", i + 1);
        }
    }
    assert_eq!(holding, hinted);
    let (median, worst) = otel::median_and_worst(&delays);
    assert!(delays.iter().all(|d| d.millis >= 0.0 && d.millis < 5_000.0), "{delays:?}");

    // The same run's device log (its decoded output, the stream's lines
    // among the board's own) and its flash region, through the replay's
    // readers of them.
    let device_log = dir.join("device.log");
    std::fs::write(&device_log, &run.log).unwrap();
    let flash = dir.join("flash-log.bin");
    std::fs::write(&flash, run.flash_log.as_ref().expect("the board dumps its log's region"))
        .unwrap();
    let pid = std::process::id();
    let from_log = export_and_read_back(
        &sim,
        &phoenix,
        &device_log,
        &["--config", dir.join("export-config.json").to_str().unwrap()],
        &format!("log-{pid}"),
    );
    assert_eq!(from_log, (steps.len(), hinted), "the device's log is the stream's session");
    let from_flash =
        export_and_read_back(&sim, &phoenix, &flash, &["--flash"], &format!("flash-{pid}"));
    // The region holds the whole session (its log does not compact).
    assert_eq!(from_flash, (steps.len(), hinted), "the flash region is the session too");

    // The picture: the hinted step with the shortest input among replies
    // of more than one step, in Phoenix's trace view.
    let shown = chats
        .iter()
        .filter(|s| !attr(s, "envaware.hint").is_empty())
        .filter(|s| {
            chats.iter().filter(|o| o["context"]["trace_id"] == s["context"]["trace_id"]).count()
                > 1
        })
        .min_by_key(|s| input(s).len())
        .expect("a hinted step in a reply of several");
    let url = format!(
        "{}/redirects/spans/{}",
        phoenix.url(),
        shown["context"]["span_id"].as_str().unwrap()
    );
    let png = dir.join("phoenix-hint.png");
    let _ = std::fs::remove_file(&png);
    chromium::screenshot(&chromium, &url, &png, (1600, 1000), Duration::from_secs(15)).unwrap();
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000, "{} bytes", bytes.len());
    // The rendered page holds the hint's text (escaped in the DOM).
    let dom = chromium::dump_dom(&chromium, &url, (1600, 1000), Duration::from_secs(15)).unwrap();
    let hint = attr(shown, "envaware.hint");
    let line = hint.lines().nth(1).unwrap().replace('<', "&lt;").replace('>', "&gt;");
    assert!(dom.contains(&line), "Phoenix's page does not show {line:?}");

    // AgentScope's own tracing of one session, next to envaware's export of
    // the same session, in the same Phoenix.
    let side_session = format!("side-by-side-{}", std::process::id());
    let side =
        otel::side_by_side(&python, &sim, &phoenix.url(), &dir.join("side-by-side"), &side_session)
            .unwrap_or_else(|e| panic!("{e}"));
    let calls = side.hints.len();
    assert_eq!(calls, 5, "the script's session: 5 model calls");
    let theirs_done = |s: &[Value]| -> Vec<Value> {
        let mut v: Vec<Value> = s
            .iter()
            .filter(|s| {
                attr(s, "gen_ai.operation.name") == "chat"
                    && s["attributes"].get("envaware.step").is_none()
            })
            .cloned()
            .collect();
        v.sort_by(|a, b| a["start_time"].as_str().cmp(&b["start_time"].as_str()));
        v
    };
    let spans = phoenix
        .spans_when("default", Duration::from_secs(30), |s| {
            theirs_done(s).len() == calls && chat_spans(s, &side_session).len() == calls
        })
        .unwrap();
    let theirs = theirs_done(&spans);
    let ours = chat_spans(&spans, &side_session);
    assert_eq!((theirs.len(), ours.len()), (calls, calls));
    let mut agentscope_with_hint = 0;
    let mut envaware_with_hint = 0;
    let mut where_theirs = Vec::new();
    for (i, hint) in side.hints.iter().enumerate() {
        let received = side.requests[i]["request"]["messages"].as_array().unwrap();
        // envaware's span: exactly what the model received.
        assert_eq!(
            shape_of_input(&input(ours[i]), false),
            shape_of_request(received, false),
            "call {}",
            i + 1
        );
        let Some(hint) = hint else { continue };
        // The model received the hint as a user message ...
        assert_eq!(request_texts(received.last().unwrap()), *hint, "call {}", i + 1);
        // ... envaware's span holds it there ...
        envaware_with_hint += usize::from(texts(input(ours[i]).last().unwrap()) == *hint);
        // ... AgentScope's does not hold it anywhere.
        let their_input = attr(&theirs[i], "gen_ai.input.messages");
        assert!(!their_input.is_empty(), "call {}: AgentScope traces the input", i + 1);
        agentscope_with_hint +=
            usize::from(their_input.contains(&hint.lines().nth(1).unwrap().replace('"', "\\\"")));
        let theirs_msgs: Vec<Value> = serde_json::from_str(their_input).unwrap();
        where_theirs.push(
            theirs_msgs
                .last()
                .map(|m| json!({"role": m["role"], "parts": m["parts"], "name": m["name"]}))
                .unwrap_or(Value::Null),
        );
    }
    let side_hinted = side.hints.iter().filter(|h| h.is_some()).count();
    // The tool-error step in each trace, as Phoenix shows it.
    let tool_error = side
        .hints
        .iter()
        .position(|h| h.as_deref().is_some_and(|h| h.contains("<tool-error>")))
        .unwrap();
    for (who, span) in
        [("agentscope", theirs[tool_error].clone()), ("envaware", ours[tool_error].clone())]
    {
        let url = format!(
            "{}/redirects/spans/{}",
            phoenix.url(),
            span["context"]["span_id"].as_str().unwrap()
        );
        let png = dir.join(format!("phoenix-side-by-side-{who}.png"));
        chromium::screenshot(&chromium, &url, &png, (1200, 1250), Duration::from_secs(15)).unwrap();
        assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    }
    assert_eq!(envaware_with_hint, side_hinted);
    assert_eq!(agentscope_with_hint, 0, "AgentScope 2.0.11's trace drops the hint");

    let report = json!({
        "phoenix": otel::PHOENIX_VERSION,
        "phoenix_ready_s": phoenix_ready.as_secs_f64(),
        "demo": {
            "steps": steps.len(),
            "chat_spans_read_back": chats.len(),
            "reply_spans_read_back": replies.len(),
            "hinted_steps": hinted,
            "hinted_steps_whose_input_holds_the_hint": holding,
            "delay_ms": {
                "median": median,
                "worst": worst,
                "read": otel::median_and_worst_of(&delays, |d| d.read_ms),
                "replay": otel::median_and_worst_of(&delays, |d| d.replay_ms),
                "post": otel::median_and_worst_of(&delays, |d| d.post_ms),
                "each": delays.iter().map(|d| d.millis).collect::<Vec<_>>(),
            },
            "screenshot_step": shown["attributes"]["envaware.step"],
            "device_log_steps_and_hinted": from_log,
            "flash_image_steps_and_hinted": from_flash,
        },
        "side_by_side": {
            "model_calls": calls,
            "hinted_calls": side_hinted,
            "tool_error_call": tool_error + 1,
            "agentscope_spans_holding_the_hint": agentscope_with_hint,
            "envaware_spans_holding_the_hint": envaware_with_hint,
            "agentscope_last_input_message_at_hinted_calls": where_theirs,
        },
        "test_s": started.elapsed().as_secs_f64(),
    });
    std::fs::write(dir.join("report.json"), serde_json::to_string_pretty(&report).unwrap())
        .unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&report).unwrap());
}
