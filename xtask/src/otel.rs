//! The OpenTelemetry export's host side (issue 38): Arize Phoenix started
//! on 127.0.0.1 ([`Phoenix`]), a device's session exported while it runs
//! ([`LiveExport`], `envaware-sim export --follow -`), AgentScope's own
//! tracing of one session next to envaware's ([`side_by_side`]); the
//! pictures of its traces are [`crate::chromium`]'s.
//!
//! Shared by `cargo xtask demo --otlp URL`, `cargo xtask phoenix` and
//! `tests/tests/otel_phoenix.rs`. std only: HTTP to Phoenix is a plain
//! `TcpStream` on 127.0.0.1.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::needs::workspace;

/// Phoenix's version, pinned in `tests/reference/requirements.txt`.
pub const PHOENIX_VERSION: &str = "20.26.1";

/// The firmware crate's version (`firmware/Cargo.toml`): the device's
/// `envaware.firmware.version` in the demo's spans.
pub fn firmware_version() -> Result<String, String> {
    let manifest = workspace().join("firmware/Cargo.toml");
    let text =
        std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("version = \"")?.strip_suffix('"'))
        .map(str::to_string)
        .ok_or_else(|| format!("{} has no version", manifest.display()))
}

/// What `cargo xtask demo --otlp` tells the exporter: the model, the
/// device, the firmware's version, and the system prompt (which the
/// stream does not carry) as the replay's starting configuration.
pub fn demo_export_args(demo_dir: &Path) -> Result<Vec<String>, String> {
    let config = demo_dir.join("export-config.json");
    let prompt = serde_json::json!({"system_prompt": crate::model::SYSTEM_PROMPT});
    std::fs::write(&config, prompt.to_string())
        .map_err(|e| format!("{}: {e}", config.display()))?;
    Ok(vec![
        "--config".into(),
        config.display().to_string(),
        "--model".into(),
        crate::model::MODEL.into(),
        "--device-id".into(),
        format!("qemu-{}", crate::qemu::MACHINE),
        "--firmware-version".into(),
        firmware_version()?,
        "--service-name".into(),
        "envaware-firmware".into(),
    ])
}

/// A free TCP port on 127.0.0.1 (bound, then let go: the one who asked
/// binds it next).
fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("127.0.0.1:0: {e}"))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// A `GET` on 127.0.0.1: the status and the body (chunked or not).
pub fn http_get(port: u16, path: &str, timeout: Duration) -> Result<(u16, Vec<u8>), String> {
    let what = || format!("GET http://127.0.0.1:{port}{path}");
    let mut stream =
        TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("{}: {e}", what()))?;
    stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")
        .map_err(|e| format!("{}: {e}", what()))?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(|e| format!("{}: {e}", what()))?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("{}: no headers", what()))?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{}: {head}", what()))?;
    let mut body = raw[split + 4..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        body = dechunk(&body).ok_or_else(|| format!("{}: a broken chunked body", what()))?;
    }
    Ok((status, body))
}

fn dechunk(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let end = body.windows(2).position(|w| w == b"\r\n")?;
        let size = usize::from_str_radix(
            std::str::from_utf8(&body[..end]).ok()?.split(';').next()?.trim(),
            16,
        )
        .ok()?;
        body = &body[end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(body.get(..size)?);
        body = body.get(size + 2..)?;
    }
}

/// Arize Phoenix (`arize-phoenix` in the test venv), run by
/// `tests/reference/phoenix_local.py`: its UI and OTLP/HTTP on a free port
/// of 127.0.0.1, its gRPC receiver on another, its database under `dir`,
/// no telemetry. Stopped (killed) when dropped.
#[derive(Debug)]
pub struct Phoenix {
    child: Child,
    /// Its HTTP port on 127.0.0.1.
    pub port: u16,
    /// Its working directory (database, log).
    pub dir: PathBuf,
}

impl Phoenix {
    /// Starts Phoenix with the venv's `python`, in a fresh `dir`, and
    /// waits (`ready_within` at most) until it answers `/healthz`.
    pub fn start(python: &Path, dir: &Path, ready_within: Duration) -> Result<Phoenix, String> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let (port, grpc) = (free_port()?, free_port()?);
        let log = std::fs::File::create(dir.join("phoenix.log")).map_err(|e| e.to_string())?;
        let child = Command::new(python)
            .arg(workspace().join("tests/reference/phoenix_local.py"))
            .arg(dir)
            .args([port.to_string(), grpc.to_string()])
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start Phoenix with {}: {e}", python.display()))?;
        let mut phoenix = Phoenix { child, port, dir: dir.to_path_buf() };
        let started = Instant::now();
        loop {
            if let Ok((200, _)) = http_get(port, "/healthz", Duration::from_secs(2)) {
                return Ok(phoenix);
            }
            if let Ok(Some(status)) = phoenix.child.try_wait() {
                return Err(format!(
                    "Phoenix exited ({status}) before it was ready: {}",
                    phoenix.log_tail()
                ));
            }
            if started.elapsed() > ready_within {
                return Err(format!(
                    "Phoenix was not ready within {} s: {}",
                    ready_within.as_secs(),
                    phoenix.log_tail()
                ));
            }
            // Waiting for a server to come up: nothing to wait on but time.
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Its URL, where OTLP goes and the UI is.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("phoenix.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().rev().take(15).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    /// Every span of `project`, through Phoenix's REST API (`GET
    /// /v1/projects/{project}/spans`, page by page).
    pub fn spans(&self, project: &str) -> Result<Vec<Value>, String> {
        let mut spans = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let path = match &cursor {
                Some(c) => format!("/v1/projects/{project}/spans?limit=1000&cursor={c}"),
                None => format!("/v1/projects/{project}/spans?limit=1000"),
            };
            let (status, body) = http_get(self.port, &path, Duration::from_secs(20))?;
            if status != 200 {
                return Err(format!("GET {path}: {status} {}", String::from_utf8_lossy(&body)));
            }
            let page: Value =
                serde_json::from_slice(&body).map_err(|e| format!("GET {path}: {e}"))?;
            spans.extend(page["data"].as_array().cloned().unwrap_or_default());
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_string()),
                None => return Ok(spans),
            }
        }
    }

    /// The spans of `project` once `done` says they have all arrived
    /// (Phoenix inserts in the background), polled for `within` at most.
    pub fn spans_when(
        &self,
        project: &str,
        within: Duration,
        done: impl Fn(&[Value]) -> bool,
    ) -> Result<Vec<Value>, String> {
        let started = Instant::now();
        loop {
            let spans = self.spans(project)?;
            if done(&spans) || started.elapsed() > within {
                return Ok(spans);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        // Only the process this started.
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// A span's attribute as a string ("" when absent).
pub fn attr<'v>(span: &'v Value, key: &str) -> &'v str {
    span["attributes"][key].as_str().unwrap_or("")
}

/// The spans of one exported session (`gen_ai.conversation.id`), `chat`
/// spans only, in step order (`envaware.step`).
pub fn chat_spans<'s>(spans: &'s [Value], session: &str) -> Vec<&'s Value> {
    let mut chats: Vec<&Value> = spans
        .iter()
        .filter(|s| {
            attr(s, "gen_ai.conversation.id") == session
                && attr(s, "gen_ai.operation.name") == "chat"
        })
        .collect();
    chats.sort_by_key(|s| s["attributes"]["envaware.step"].as_i64().unwrap_or(0));
    chats
}

fn unix_micros() -> i64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)
}

/// A device's streamed lines, as they are decoded, appended to the
/// session's file (a file `envaware-sim export --follow FILE` can tail)
/// and, with an exporter, written to `envaware-sim export --follow -` at
/// once; when each was written is kept, to measure the delay to its
/// span's acknowledgement.
#[derive(Debug)]
pub struct LiveExport {
    child: Option<Child>,
    feeder: std::thread::JoinHandle<Result<Vec<i64>, String>>,
    timings: PathBuf,
}

/// One step's delay, from its line being written to the collector's
/// acknowledgement of its span, and its parts.
#[derive(Debug, Clone, Copy)]
pub struct Delay {
    /// The step's number.
    pub step: usize,
    /// Milliseconds, in all.
    pub millis: f64,
    /// Of which: until the exporter had read the line and began.
    pub read_ms: f64,
    /// Of which: the replay and the span, until the POST went.
    pub replay_ms: f64,
    /// Of which: the POST, until the collector answered.
    pub post_ms: f64,
}

impl LiveExport {
    /// Starts the thread that appends each line `lines` receives to
    /// `file` (created anew) and, with `export = Some((url, args))`, the
    /// exporter (`sim export --otlp URL --follow - --timings ... ARGS`)
    /// it also feeds them to.
    pub fn start(
        sim: &Path,
        export: Option<(&str, &[String])>,
        file: &Path,
        lines: mpsc::Receiver<String>,
    ) -> Result<LiveExport, String> {
        let timings = file.with_extension("timings.jsonl");
        let _ = std::fs::remove_file(&timings);
        let mut child = match export {
            Some((url, args)) => Some(
                Command::new(sim)
                    .args(["export", "--otlp", url, "--follow", "-", "--timings"])
                    .arg(&timings)
                    .args(args)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::inherit())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|e| format!("cannot start {} export: {e}", sim.display()))?,
            ),
            None => None,
        };
        let mut stdin: Option<ChildStdin> = child.as_mut().and_then(|c| c.stdin.take());
        let mut out =
            std::fs::File::create(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let feeder = std::thread::spawn(move || -> Result<Vec<i64>, String> {
            // written[n - 1]: when line n was written.
            let mut written = Vec::new();
            for line in lines {
                let write = |w: &mut dyn Write| {
                    w.write_all(line.as_bytes())
                        .and_then(|()| w.write_all(b"\n"))
                        .and_then(|()| w.flush())
                };
                write(&mut out).map_err(|e| e.to_string())?;
                if let Some(stdin) = stdin.as_mut() {
                    write(stdin).map_err(|e| format!("the exporter's stdin: {e}"))?;
                }
                written.push(unix_micros());
            }
            // The exporter's input ends here: it sends the last reply and exits.
            drop(stdin);
            Ok(written)
        });
        Ok(LiveExport { child, feeder, timings })
    }

    /// Waits for the stream to end (every sender dropped) and the
    /// exporter to exit (`within` at most), and returns each step's delay.
    /// Without an exporter: no delays.
    pub fn finish(self, within: Duration) -> Result<Vec<Delay>, String> {
        let written = self.feeder.join().map_err(|_| "the feeder panicked".to_string())??;
        let Some(mut child) = self.child else { return Ok(Vec::new()) };
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                break status;
            }
            if started.elapsed() > within {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("the exporter did not exit within {} s", within.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if !status.success() {
            return Err(format!("envaware-sim export --follow failed ({status})"));
        }
        let text = std::fs::read_to_string(&self.timings)
            .map_err(|e| format!("{}: {e}", self.timings.display()))?;
        crate::model::json_lines(&text)?
            .iter()
            .map(|t| {
                let line = t["line"].as_u64().unwrap_or(0) as usize;
                let at = written
                    .get(line.wrapping_sub(1))
                    .ok_or_else(|| format!("timings name line {line}, not written"))?;
                let us = |key: &str| t[key].as_i64().unwrap_or(0);
                let ms = |from: i64, to: i64| (to - from) as f64 / 1000.0;
                Ok(Delay {
                    step: t["step"].as_u64().unwrap_or(0) as usize,
                    millis: ms(*at, us("acked_us")),
                    read_ms: ms(*at, us("seen_us")),
                    replay_ms: ms(us("seen_us"), us("sent_us")),
                    post_ms: ms(us("sent_us"), us("acked_us")),
                })
            })
            .collect()
    }
}

/// The median and the worst of `delays`, in milliseconds.
pub fn median_and_worst(delays: &[Delay]) -> (f64, f64) {
    median_and_worst_of(delays, |d| d.millis)
}

/// The median and the worst of one part of `delays` (`part`), in ms.
pub fn median_and_worst_of(delays: &[Delay], part: impl Fn(&Delay) -> f64) -> (f64, f64) {
    let mut ms: Vec<f64> = delays.iter().map(part).collect();
    ms.sort_by(f64::total_cmp);
    let median = match ms.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => ms[n / 2],
        n => (ms[n / 2 - 1] + ms[n / 2]) / 2.0,
    };
    (median, ms.last().copied().unwrap_or(f64::NAN))
}

/// What [`side_by_side`] ran.
#[derive(Debug, Clone)]
pub struct SideBySide {
    /// The hint AgentScope appended at each model call (`None`: none).
    pub hints: Vec<Option<String>>,
    /// The session as a replay trace (written by the script).
    pub trace: PathBuf,
    /// The `gen_ai.conversation.id` envaware exported it under.
    pub session: String,
    /// Each request the model received (the scripted server's log).
    pub requests: Vec<Value>,
}

/// One session through AgentScope 2.0.11's own tracing
/// (`tests/reference/otel_agentscope.py`, a real agent against the
/// scripted model server) to `url`, then the same session, as the script
/// recorded it, through `envaware-sim export` to `url` under `session`.
pub fn side_by_side(
    python: &Path,
    sim: &Path,
    url: &str,
    dir: &Path,
    session: &str,
) -> Result<SideBySide, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let script = workspace().join("tests/reference/otel_agentscope.script.jsonl");
    let server_log = dir.join("agentscope-model-requests.jsonl");
    let server = crate::model::ModelServer::start(sim, &script, &server_log, 5, 60)?;
    let trace = dir.join("agentscope-session.trace.jsonl");
    let out = crate::checked_output(
        "otel_agentscope.py",
        Command::new(python)
            .arg(workspace().join("tests/reference/otel_agentscope.py"))
            .arg(url)
            .arg(format!("http://127.0.0.1:{}/v1", server.port))
            .arg(&trace),
    );
    server.stop();
    let out = out?;
    let result: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("otel_agentscope.py's output: {e}"))?;
    let hints = result["hints"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|h| h.as_str().map(str::to_string))
        .collect();
    crate::checked_output(
        &format!("envaware-sim export {}", trace.display()),
        Command::new(sim)
            .args(["export", "--otlp", url, "--model", "scripted", "--session-id", session])
            .arg(&trace),
    )?;
    let log = std::fs::read_to_string(&server_log)
        .map_err(|e| format!("{}: {e}", server_log.display()))?;
    let requests = crate::model::json_lines(&log)?;
    Ok(SideBySide { hints, trace, session: session.to_string(), requests })
}
