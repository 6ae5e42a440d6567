//! The firmware's model exchange (issue 36), host side: the scripted
//! model server the board's UART1 talks to ([`ModelServer`],
//! `envaware-sim model-server`), and the check that each request the
//! device sent holds the messages the desktop's replay of the device's own
//! session log computes for that step ([`compare`]).
//!
//! Shared by `cargo xtask demo` and `tests/tests/firmware.rs`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// The demo's system prompt: the firmware's `agent::SYSTEM_PROMPT`
/// (`firmware/src/agent/session.rs`). The device's log does not carry it.
pub const SYSTEM_PROMPT: &str = "You are Sprout, a greenhouse robot.";

/// The model the demo's firmware names in its requests: the firmware's
/// `agent::MODEL` (`firmware/src/agent/session.rs`).
pub const MODEL: &str = "envaware-demo";

/// The model server's script the demo and the test use: one reply per
/// request.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../firmware/model-script.jsonl")
}

/// A running `envaware-sim model-server`, stopped when dropped.
#[derive(Debug)]
pub struct ModelServer {
    child: Child,
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
}

impl ModelServer {
    /// Starts `sim model-server` on a port of its choosing (`--port 0`),
    /// answering with `script`, logging each request to `log`, bounded by
    /// `max_requests` and an idle time of `idle_secs`; waits (10 s at
    /// most) for its `listening on 127.0.0.1:PORT` line.
    pub fn start(
        sim: &Path,
        script: &Path,
        log: &Path,
        max_requests: usize,
        idle_secs: u64,
    ) -> Result<ModelServer, String> {
        let _ = std::fs::remove_file(log);
        let mut child = Command::new(sim)
            .arg("model-server")
            .arg("--script")
            .arg(script)
            .args(["--port", "0", "--log"])
            .arg(log)
            .args(["--max-requests", &max_requests.to_string()])
            .args(["--idle-timeout", &idle_secs.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {} model-server: {e}", sim.display()))?;
        let stdout = child.stdout.take().ok_or("no model-server stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut server = ModelServer { child, port: 0 };
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| "the model server did not say where it listens".to_string())?;
        server.port = line
            .trim()
            .strip_prefix("listening on 127.0.0.1:")
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("not the model server's first line: {line:?}"))?;
        Ok(server)
    }

    /// Stops it (it may have stopped by itself, after its last request).
    pub fn stop(mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One JSON value per non-empty line.
pub fn json_lines(text: &str) -> Result<Vec<Value>, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("not JSON ({e}): {l}")))
        .collect()
}

/// One step of the exchange, as [`compare`] finds it.
#[derive(Debug, Clone)]
pub struct ExchangeRow {
    /// The request's number (from 0) = the replay's step.
    pub step: usize,
    /// The request body's bytes, as the device said it sent them
    /// (`model: N bytes sent`); `None` when the device logged none.
    pub request_bytes: Option<usize>,
    /// The step's hint, as the replay decides it (its first line), or
    /// `(none)`.
    pub hint: String,
    /// The server's reply (the script line's text or tool calls).
    pub reply: String,
    /// The request's `messages` are the replay's `request` for the step,
    /// and the first is the system message with [`SYSTEM_PROMPT`].
    pub matches: bool,
    /// What differs, when not.
    pub why: Option<String>,
}

/// The bytes of each request the device sent, in order, from its decoded
/// log (`model: N bytes sent, …`).
pub fn sent_bytes(device_log: &str) -> Vec<usize> {
    device_log
        .lines()
        .filter_map(|l| l.split("model: ").nth(1)?.split(" bytes sent").next()?.parse().ok())
        .collect()
}

fn reply_text(reply: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(content) = reply.get("content").and_then(Value::as_str) {
        parts.push(content.to_string());
    }
    for call in reply.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        parts.push(format!(
            "{}({})",
            call.get("name").and_then(Value::as_str).unwrap_or("?"),
            call.get("arguments").and_then(Value::as_str).unwrap_or("")
        ));
    }
    parts.join("; ")
}

/// Compares the server's logged requests (`requests`: its log's lines,
/// `{"n", "path", "request", "reply", "status"}`) with the replay of the
/// device's log (`replayed`: `envaware-sim replay --json --request openai`
/// lines, one per step, `"request"` being the messages after that step's
/// hint). The device sends its request right after the step's hint, before
/// the reply is appended, so request `k` is replay step `k`'s. Every
/// message is compared (without empty text parts, see
/// [`without_empty_texts`]); the system message too, which the replay takes
/// from a `config` event (see [`check`]), and which must be the system
/// message with [`SYSTEM_PROMPT`]. A request or step too many on either
/// side is a row that does not match.
pub fn compare(requests: &[Value], replayed: &[Value], sent: &[usize]) -> Vec<ExchangeRow> {
    let system = serde_json::json!({
        "role": "system", "name": "system",
        "content": [{"type": "text", "text": SYSTEM_PROMPT}],
    });
    (0..requests.len().max(replayed.len()))
        .map(|step| {
            let logged = requests.get(step);
            let step_line = replayed.get(step);
            let hint = step_line
                .and_then(|l| l.get("hint"))
                .and_then(Value::as_str)
                .map_or("(none)".to_string(), hint_line);
            let reply = logged.and_then(|l| l.get("reply")).map(reply_text).unwrap_or_default();
            let sent_messages = logged
                .and_then(|l| l.get("request"))
                .and_then(|r| r.get("messages"))
                .and_then(Value::as_array);
            let sent_messages = sent_messages.map(|m| without_empty_texts(m));
            let sent_messages = sent_messages.as_ref();
            let replay_messages = step_line
                .and_then(|l| l.get("request"))
                .and_then(Value::as_array)
                .map(|m| without_empty_texts(m));
            let replay_messages = replay_messages.as_ref();
            let why = match (sent_messages, replay_messages) {
                (None, _) => Some("no request logged for this step".to_string()),
                (_, None) => Some("no replayed step (or request) for this request".to_string()),
                (Some(sent), Some(replay)) => {
                    if sent.first() != Some(&system) {
                        Some(format!("messages[0] is not the system prompt: {:?}", sent.first()))
                    } else if sent != replay {
                        let at = (0..sent.len().max(replay.len()))
                            .find(|&i| sent.get(i) != replay.get(i))
                            .unwrap_or(0);
                        Some(format!(
                            "messages[{at}] differ: sent {}, replayed {}",
                            sent.get(at).map_or("nothing".into(), Value::to_string),
                            replay.get(at).map_or("nothing".into(), Value::to_string)
                        ))
                    } else {
                        None
                    }
                }
            };
            ExchangeRow {
                step,
                request_bytes: sent.get(step).copied(),
                hint,
                reply,
                matches: why.is_none(),
                why,
            }
        })
        .collect()
}

/// `messages` without their empty text parts, and without a message
/// left with no content and no tool call (one left with tool calls gets
/// `content: null`, as the formatter writes it). The device's context
/// holds no text for a thinking block (envaware's `Block::Other`, the
/// script's `Event::Thinking`): its request leaves it out. The stream
/// writes it as an empty text part (AgentScope's blocks need a type it
/// formats), which the replay's formatter sends. [`compare`] drops empty
/// text parts on both sides: that is the one difference it allows.
fn without_empty_texts(messages: &[Value]) -> Vec<Value> {
    let empty = serde_json::json!({"type": "text", "text": ""});
    messages
        .iter()
        .filter_map(|m| {
            let mut m = m.clone();
            let Some(parts) = m.get_mut("content").and_then(Value::as_array_mut) else {
                return Some(m);
            };
            parts.retain(|p| *p != empty);
            if !parts.is_empty() {
                return Some(m);
            }
            if m.get("tool_calls").is_some() {
                m["content"] = Value::Null;
                return Some(m);
            }
            None
        })
        .collect()
}

/// The line of a hint that says most: its first field (the line after
/// `<system-reminder>…`), else its first line.
fn hint_line(hint: &str) -> String {
    hint.lines().nth(1).or_else(|| hint.lines().next()).unwrap_or_default().to_string()
}

/// The rows as a table: step, request bytes, hint, reply, match.
pub fn table(rows: &[ExchangeRow]) -> String {
    let mut out = format!(
        "{:>4}  {:>7}  {:<48}  {:<44}  {}\n",
        "step", "request", "hint (first line)", "server's reply", "match"
    );
    for r in rows {
        let cut = |s: &str, n: usize| {
            if s.chars().count() > n {
                format!("{}…", s.chars().take(n - 1).collect::<String>())
            } else {
                s.to_string()
            }
        };
        out.push_str(&format!(
            "{:>4}  {:>7}  {:<48}  {:<44}  {}\n",
            r.step,
            r.request_bytes.map_or("?".into(), |b| format!("{b} B")),
            cut(&r.hint, 48),
            cut(&r.reply, 44),
            if r.matches { "yes" } else { "no" }
        ));
        if let Some(why) = &r.why {
            out.push_str(&format!("      {why}\n"));
        }
    }
    out
}

/// Replays the session the device streamed (`device_log`: its decoded
/// log, whose `agentscope> ` lines carry the whole context at every step)
/// with `sim replay --json --request openai`, after a first trace line
/// `{"config": {"system_prompt": SYSTEM_PROMPT}}` (the device streams no
/// system prompt), and [`compare`]s the server's logged requests
/// (`server_log`) with it; `trace` is where the trace is written. The
/// request sizes come from the device's decoded log.
pub fn check(
    sim: &Path,
    trace: &Path,
    server_log: &Path,
    device_log: &str,
) -> Result<Vec<ExchangeRow>, String> {
    let config = serde_json::json!({"config": {"system_prompt": SYSTEM_PROMPT}});
    let text = format!("{config}\n{}", crate::qemu::session_trace(device_log));
    std::fs::write(trace, text).map_err(|e| format!("{}: {e}", trace.display()))?;
    let out = crate::checked_output(
        &format!("envaware-sim replay --json --request openai {}", trace.display()),
        Command::new(sim).args(["replay", "--json", "--request", "openai"]).arg(trace),
    )?;
    let replayed = json_lines(&String::from_utf8_lossy(&out.stdout))?;
    let logged = std::fs::read_to_string(server_log)
        .map_err(|e| format!("{}: {e}", server_log.display()))?;
    let requests = json_lines(&logged)?;
    Ok(compare(&requests, &replayed, &sent_bytes(device_log)))
}
