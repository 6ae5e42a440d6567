//! `envaware-sim replay`: runs a session trace through the core with a
//! simulated clock and prints the hints as they would be injected.
//!
//! A trace is JSON Lines, one event a line ("Replay traces" in docs/sim.md
//! is the reference). The replay keeps the session's state (the
//! configuration, the clock, the plan's tasks, the token count and the
//! context as AgentScope `Msg` JSON) and, at each `step`, decides on the
//! device path: the core's `Tracker`, cross-checked against the full scan
//! (`decide`), then renders. A hint is appended to the context exactly as
//! AgentScope's `AgentState.append_context` does: to the agent's own message
//! of the current reply when that is the newest message, else as a new
//! assistant message.
//!
//! The work per event is bounded by the event, not by the session: the
//! context keeps each message as written and as the core reads it
//! (`context`), so a replay runs in time linear in its trace (a `config`
//! event that changes the configuration re-reads the context once, as a
//! device does; `--emit-scenarios` writes the whole context at each step).
//!
//! A device's log (its lines after [`STREAM_PREFIX`]) is read as the trace
//! it streamed; which lines are events is decided per line (`lines`), and
//! an input mixing the two is refused.
//!
//! The input may instead be an AgentScope context dump: a JSON array of
//! `Msg` objects, or an object with a `"context"` list (an `AgentState`
//! dump, whose `tasks_context.tasks` and `reply_context.cur_iter` are read
//! too). A dump is replayed as one step.
//!
//! Every step goes through the same code as `envaware-sim eval` once the
//! state is built: `--emit-scenarios` writes each step's scenario (format
//! v1), and evaluating that file prints the same result lines as
//! `replay --json`.
//!
//! Each trace line is read once into a typed `Event` (`event`), which one
//! short handler of the `Session` (`session`) applies; a handler never
//! re-checks a shape. A new event is a variant there and a handler here; a
//! new dimension needs nothing of the replay but its report and record. A
//! line is read once into its members, each value as its own text
//! (`scenario::Members`): `config` goes to the loader `eval` reads a
//! scenario's configuration with (kept as written: the core reads its
//! numbers, `--emit-scenarios` writes it unchanged), `step` and `tokens`
//! read each key by its type, naming its path in errors, and the other
//! events read their value as a `Value`. The command line is in `main.rs`.

use std::io::{self, Write};

use std::ops::RangeInclusive;

use envaware::Timestamp;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

mod context;
mod decide;
#[cfg(feature = "fleet")]
mod device;
mod event;
mod lines;
mod session;

pub use decide::CrossCheck;
use decide::Decider;
#[cfg(feature = "fleet")]
pub use device::DeviceReplay;
use event::{ConfigEvent, Event};
pub use lines::Input;
use session::{Output, Session};

use crate::record::StepRecord;
use crate::scenario::{self, SimConfigBuf, VecConversation};

/// The device hint buffers `--hint-capacity` may give, in bytes: a device's
/// buffer is a few KiB; beyond 1 MiB the number is a mistake, and the
/// replay would allocate it at every step.
pub const HINT_CAPACITY: RangeInclusive<usize> = 1..=1 << 20;

/// How the replay prints, and what it starts from.
#[derive(Debug, Default)]
pub struct Options {
    /// Print `eval`'s result lines instead of the readable report.
    pub json: bool,
    /// The clock at the start (RFC 3339); a dump's step runs at this time.
    pub now: Option<String>,
    /// The agent's name at the start (a dump: else the newest assistant
    /// message's name).
    pub agent: Option<String>,
    /// The configuration at the start: the text of a `config` event's value.
    pub config: Option<String>,
    /// The token count at the start.
    pub tokens: Option<i64>,
    /// The device's hint buffer, in bytes (in [`HINT_CAPACITY`]): a longer
    /// hint is reported as `HintTooLong` and, as on the device, not appended.
    pub hint_capacity: Option<usize>,
    /// Decide by the full scan alone, as before the tracker (no cross-check).
    pub full_scan: bool,
    /// With `json`: add each step's model request (`"request"`, the
    /// `messages` array after the step's hint) to its line.
    pub request: Option<RequestFormat>,
}

/// The wire format `--request` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestFormat {
    /// OpenAI Chat Completions, as AgentScope 2.0.11's `OpenAIChatFormatter`.
    Openai,
}

/// Reads `--request`'s value (the command line's parser).
pub fn parse_request_format(text: &str) -> Result<RequestFormat, String> {
    match text {
        "openai" => Ok(RequestFormat::Openai),
        other => Err(format!("{other:?}: the only request format is openai")),
    }
}

/// Reads a hint capacity, in bytes, within [`HINT_CAPACITY`] (the command
/// line's parser for `--hint-capacity`).
pub fn parse_hint_capacity(text: &str) -> Result<usize, String> {
    let range = || {
        format!("expected {} to {} bytes, got {text}", HINT_CAPACITY.start(), HINT_CAPACITY.end())
    };
    text.parse().ok().filter(|n| HINT_CAPACITY.contains(n)).ok_or_else(range)
}

/// What a replay did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Steps run.
    pub steps: usize,
    /// Steps that injected a hint.
    pub hints: usize,
    /// The tracker's cross-check against the full scan (`None` with
    /// `--full-scan`, which decides by the full scan alone).
    pub cross_check: Option<CrossCheck>,
    /// What the input was read as.
    pub input: Input,
}

/// Why a replay stopped.
#[derive(Debug)]
pub enum ReplayError {
    /// An event (or the start state) is invalid: the line (0 for the
    /// command-line options and for a dump) and the message.
    Invalid { line: usize, message: String },
    /// The tracker and the full scan decided a step differently: a bug in
    /// the core, or a change of the context the tracker was not told of.
    Disagree {
        /// The step's number, from 1.
        step: usize,
        /// Its trace line (0 for a dump).
        line: usize,
        /// The two decisions.
        decisions: Box<decide::Disagreement>,
    },
    /// Writing the output failed.
    Io(io::Error),
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::Invalid { line: 0, message } => f.write_str(message),
            ReplayError::Invalid { line, message } => write!(f, "line {line}: {message}"),
            ReplayError::Disagree { step, line, decisions } => write!(
                f,
                "step {step} (line {line}): the tracker decided {:?} but the full scan {:?}; \
                 `--full-scan` replays on the full scan alone",
                decisions.tracker, decisions.full_scan
            ),
            ReplayError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<io::Error> for ReplayError {
    fn from(e: io::Error) -> Self {
        ReplayError::Io(e)
    }
}

/// A duration in microseconds: a number of seconds, or a text such as
/// `"90m"`, `"1h30m"`, `"1.5h"`, `"250ms"`, `"-5m"` (units `d`, `h`, `m`,
/// `s`, `ms`, `us`).
pub fn parse_duration(value: &Value) -> Result<i64, String> {
    let bad = || {
        format!("advance: expected seconds or a duration such as \"90m\" or \"1h30m\", got {value}")
    };
    let seconds_to_micros = |s: f64| -> Result<i64, String> {
        let micros = (s * 1e6).round();
        if micros.is_finite() && micros.abs() < 9.0e18 {
            Ok(micros as i64)
        } else {
            Err(bad())
        }
    };
    match value {
        Value::Number(n) => seconds_to_micros(n.as_f64().ok_or_else(bad)?),
        Value::String(text) => {
            let (sign, mut rest) = match text.trim().strip_prefix('-') {
                Some(r) => (-1.0, r),
                None => (1.0, text.trim()),
            };
            if rest.is_empty() {
                return Err(bad());
            }
            let mut total = 0.0f64;
            while !rest.is_empty() {
                let digits =
                    rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
                let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
                rest = &rest[digits..];
                let unit_len =
                    rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
                let scale = match &rest[..unit_len] {
                    "d" => 86_400.0,
                    "h" => 3_600.0,
                    "m" | "min" => 60.0,
                    "s" => 1.0,
                    "ms" => 1e-3,
                    "us" => 1e-6,
                    _ => return Err(bad()),
                };
                rest = &rest[unit_len..];
                total += number * scale;
            }
            seconds_to_micros(sign * total)
        }
        _ => Err(bad()),
    }
}

/// What starts each line of the session the firmware streams as AgentScope
/// JSON (`firmware/src/stream.rs`). Given the device's whole log, the
/// replay reads only these lines.
pub const STREAM_PREFIX: &str = "agentscope> ";

/// An AgentScope context dump rather than a trace: the whole text is one
/// JSON array of messages, or one object with a `context` list (an
/// `AgentState` dump, whose other keys are read too).
enum Dump {
    Messages(Vec<Value>),
    State { context: Vec<Value>, state: Map<String, Value> },
}

impl Dump {
    fn read(text: &str) -> Option<Dump> {
        match serde_json::from_str(text).ok()? {
            Value::Array(msgs) => Some(Dump::Messages(msgs)),
            Value::Object(mut state) => match state.remove("context") {
                Some(Value::Array(context)) => Some(Dump::State { context, state }),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Replays `text` (a trace, or a context dump), writing the report to `out`
/// and, when given, each step's scenario to `emit`.
#[cfg_attr(not(test), allow(dead_code))] // the binary itself wants the records
pub fn replay(
    text: &str,
    opts: &Options,
    out: &mut dyn Write,
    emit: Option<&mut dyn Write>,
) -> Result<Summary, ReplayError> {
    replay_with_records(text, opts, out, emit).map(|(summary, _)| summary)
}

/// [`replay`], also returning what each step did, for [`plot::render`](crate::plot::render).
pub fn replay_with_records(
    text: &str,
    opts: &Options,
    out: &mut dyn Write,
    emit: Option<&mut dyn Write>,
) -> Result<(Summary, Vec<StepRecord>), ReplayError> {
    let mut session = start(opts).map_err(|message| ReplayError::Invalid { line: 0, message })?;
    let input = match Dump::read(text) {
        Some(dump) => {
            replay_dump(&mut session, dump, &mut Output { out, emit, opts })?;
            Input::Dump
        }
        None => {
            let (input, lines) = lines::event_lines(text)?;
            // A device's session log (`envaware::journal`) has a header item.
            session.device_log = text.contains("\"log\":{\"version\"");
            if session.device_log {
                configure_from_log(&mut session, text)?;
            }
            replay_trace(&mut session, lines, &mut Output { out, emit, opts })?;
            input
        }
    };
    let summary = Summary { cross_check: session.check, input, ..session.summary };
    Ok((summary, session.records))
}

/// Before a device log is replayed: without `--config`, the configuration
/// its first header with `settings` carries, from the start (a compacted
/// log's first items come before any header); either way the first
/// header's hash is checked against it, so that a configuration that is
/// not the device's is refused before any step is replayed.
fn configure_from_log(session: &mut Session, text: &str) -> Result<(), ReplayError> {
    let headers =
        text.lines().enumerate().filter(|(_, line)| line.contains("\"log\":{")).filter_map(
            |(index, line)| match read_line(line.trim()) {
                Ok(Some(Event::Log(header))) => Some((index + 1, header)),
                _ => None,
            },
        );
    let mut first = None;
    for (line, header) in headers {
        let invalid = |message: String| ReplayError::Invalid { line, message };
        if session.config_given {
            first = Some((line, header));
            break;
        }
        let Some(settings) = &header.settings else { continue };
        let config = ConfigEvent::parse(settings, "log.settings.").map_err(invalid)?;
        session.apply_config(config).map_err(|e| invalid(format!("log.settings: {e}")))?;
        first = Some((line, header));
        break;
    }
    let Some((line, header)) = first else {
        return match session.config_given {
            true => Ok(()),
            false => Err(ReplayError::Invalid {
                line: 0,
                message: "the log's headers hold no configuration (a log written before they \
                          did): give the device's configuration with --config"
                    .into(),
            }),
        };
    };
    let invalid = |message: String| ReplayError::Invalid { line, message };
    if let Some(name) = header.agent.clone() {
        session.agent_name = name;
    }
    let buf = configuration(session, line)?;
    let engine = scenario::engine(buf.config()).map_err(|e| invalid(e.to_string()))?;
    session.check_header(&header, &engine).map_err(invalid)
}

/// The session before the first event, from the command-line options.
fn start(opts: &Options) -> Result<Session, String> {
    let mut session = Session::new();
    if opts.full_scan {
        session.check = None;
    }
    if let Some(capacity) = opts.hint_capacity {
        parse_hint_capacity(&capacity.to_string()).map_err(|e| format!("--hint-capacity: {e}"))?;
    }
    if let Some(config) = &opts.config {
        let raw: Box<RawValue> =
            serde_json::from_str(config).map_err(|e| format!("--config: {e}"))?;
        let config = ConfigEvent::parse(raw.get(), "").map_err(|e| format!("--config: {e}"))?;
        session.apply_config(config).map_err(|e| format!("--config: {e}"))?;
        session.config_given = true;
    }
    if let Some(name) = &opts.agent {
        session.agent_name.clone_from(name);
    }
    if let Some(tokens) = opts.tokens {
        session.input_tokens = tokens;
    }
    if let Some(now) = &opts.now {
        session.clock = Some(scenario::parse_now(now).map_err(|e| e.replacen("now", "--now", 1))?);
    }
    Ok(session)
}

/// The session's configuration, loaded; `line` names it in errors.
fn configuration(session: &Session, line: usize) -> Result<Box<SimConfigBuf>, ReplayError> {
    let mut buf = Box::new(SimConfigBuf::with_capacity());
    session.load(&mut buf).map_err(|message| ReplayError::Invalid { line, message })?;
    Ok(buf)
}

/// A dump is one step, at `--now` or else the system time.
fn replay_dump(
    session: &mut Session,
    dump: Dump,
    output: &mut Output<'_, '_>,
) -> Result<(), ReplayError> {
    let opts = output.opts;
    let start = |message: String| ReplayError::Invalid { line: 0, message };
    let (msgs, state) = match dump {
        Dump::Messages(msgs) => (msgs, Value::Null),
        Dump::State { context, state } => (context, Value::Object(state)),
    };
    let read: VecConversation = scenario::parse_context(&msgs).map_err(start)?;
    if opts.agent.is_none() {
        let newest_assistant =
            msgs.iter().rev().find(|m| m.get("role").and_then(Value::as_str) == Some("assistant"));
        if let Some(name) = newest_assistant.and_then(|m| m.get("name")).and_then(Value::as_str) {
            session.agent_name = name.to_string();
        }
    }
    if let Some(tasks) = state.pointer("/tasks_context/tasks") {
        // AgentScope's own JSON: its tasks are `Task` objects, read as `eval` reads them.
        let Value::Array(tasks) = tasks else {
            return Err(start(format!(
                "tasks_context.tasks: expected a list of tasks, got {}",
                scenario::short_json(tasks)
            )));
        };
        session.task_counts =
            scenario::count_tasks(tasks).map_err(|e| start(format!("tasks_context.{e}")))?;
        session.tasks.clone_from(tasks);
    }
    // `reply_context.cur_iter`, or the legacy top-level field.
    let cur_iter = state
        .pointer("/reply_context/cur_iter")
        .or_else(|| state.get("cur_iter"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if session.clock.is_none() {
        let since_epoch =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        session.clock = Some(Timestamp::from_unix_micros(
            i64::try_from(since_epoch.as_micros()).unwrap_or(i64::MAX),
        ));
    }
    let buf = configuration(session, 0)?;
    let engine = scenario::engine(buf.config()).map_err(|e| start(e.to_string()))?;
    let agent = session.agent_name.clone();
    let mut decider = Decider::new(engine, &agent, &session.context, session.check);
    session.context.replace(msgs, read, &mut decider);
    session.step(cur_iter, &mut decider, output, 0)
}

/// A trace: one event a line, applied in order; the first invalid line
/// ends the replay.
///
/// Each configuration gets its engine and its [`Decider`], which live
/// until the next `config` event: the decider is then built again, from
/// the whole context (once per configuration, as a device re-reads its
/// context after a configuration change).
fn replay_trace<'t>(
    session: &mut Session,
    mut lines: impl Iterator<Item = (usize, &'t str)>,
    output: &mut Output<'_, '_>,
) -> Result<(), ReplayError> {
    let mut line = 0;
    loop {
        let buf = configuration(session, line)?;
        let engine = scenario::engine(buf.config())
            .map_err(|e| ReplayError::Invalid { line, message: e.to_string() })?;
        let agent = session.agent_name.clone();
        let mut decider = Decider::new(engine, &agent, &session.context, session.check);
        loop {
            let Some((number, text)) = lines.next() else { return Ok(()) };
            line = number;
            if apply_line(session, &mut decider, output, line, text)? {
                break;
            }
        }
    }
}

/// Applies trace line `line`; whether it changed the configuration or the
/// agent (a `config` event, a device log's header), so that the caller
/// builds the decider again.
fn apply_line(
    session: &mut Session,
    decider: &mut Decider<'_>,
    output: &mut Output<'_, '_>,
    line: usize,
    text: &str,
) -> Result<bool, ReplayError> {
    let invalid = |message: String| ReplayError::Invalid { line, message };
    let Some(event) = read_line(text.trim()).map_err(invalid)? else { return Ok(false) };
    // A device log's header names the agent: a new decider for it.
    let reconfigured = matches!(&event, Event::Config(_))
        || matches!(&event, Event::Log(header) if header.agent.is_some());
    session.apply(event, decider, output, line)?;
    Ok(reconfigured)
}

/// One trace line: its event, or `None` for a comment alone (a `"#"` key,
/// allowed next to the event too).
///
/// The line is read once into its members, each value as its own text (a
/// repeated key's last value counts, as in a JSON object read whole); the
/// event reads its value from there (see [`Event::parse`]).
fn read_line(line: &str) -> Result<Option<Event>, String> {
    let members = scenario::Members::read(line, "a JSON object").map_err(|e| match e {
        scenario::MembersError::Json(e) => format!("not a JSON object: {e}"),
        other => format!("an event line: {}", other.message(1)),
    })?;
    let mut events = members.last_wins().into_iter().filter(|(k, _)| k != "#");
    let Some((key, raw)) = events.next() else {
        return Ok(None);
    };
    let rest: Vec<String> = events.map(|(k, _)| k).collect();
    if !rest.is_empty() {
        let keys: Vec<String> =
            std::iter::once(key).chain(rest).map(|k| format!("{k:?}")).collect();
        return Err(format!("one event a line, found {}", keys.join(", ")));
    }
    Event::parse(&key, raw).map(Some)
}

/// The whole lines of `bytes` before the first that is not valid UTF-8,
/// and that line's number (from 1), if any.
pub fn utf8_prefix(bytes: &[u8]) -> (&str, Option<usize>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text, None),
        Err(e) => {
            let valid = &bytes[..e.valid_up_to()];
            let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
            (std::str::from_utf8(&bytes[..line_start]).unwrap_or(""), Some(line))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envaware::Decision;
    use serde_json::json;

    fn run(trace: &str) -> (String, Summary) {
        let mut out = Vec::new();
        let summary = replay(trace, &Options { json: true, ..Options::default() }, &mut out, None)
            .expect("replay");
        (String::from_utf8(out).unwrap(), summary)
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration(&json!(90)), Ok(90_000_000));
        assert_eq!(parse_duration(&json!(0.5)), Ok(500_000));
        assert_eq!(parse_duration(&json!("90m")), Ok(5_400_000_000));
        assert_eq!(parse_duration(&json!("1h30m")), Ok(5_400_000_000));
        assert_eq!(parse_duration(&json!("1.5h")), Ok(5_400_000_000));
        assert_eq!(parse_duration(&json!("-5m")), Ok(-300_000_000));
        assert_eq!(parse_duration(&json!("250ms")), Ok(250_000));
        assert_eq!(parse_duration(&json!("2d")), Ok(172_800_000_000));
        for bad in
            [json!("5"), json!("m"), json!("5x"), json!(""), json!("-"), json!(null), json!(1e300)]
        {
            assert!(parse_duration(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn time_is_reinjected_after_the_interval_only() {
        let trace = r#"{"config": {"agent_name": "Rover", "injection_config": {"timezone": "UTC"}}}
{"set_clock": "2026-07-22T02:00:00Z"}
{"user": "hi"}
{"step": {}}
{"advance": "20m"}
{"step": {}}
{"advance": "11m"}
{"step": {}}"#;
        let (out, summary) = run(trace);
        let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!((summary.steps, summary.hints), (3, 2));
        assert!(lines[0]["hint"]
            .as_str()
            .unwrap()
            .contains("<current-time>2026-07-22T02:00:00</current-time>"));
        assert_eq!(lines[1]["hint"], Value::Null);
        assert!(lines[2]["hint"]
            .as_str()
            .unwrap()
            .contains("<current-time>2026-07-22T02:31:00</current-time>"));
    }

    /// A device's environment step (`woken`, issue 22): the replay shows
    /// what woke the agent at the step that follows, in the report and in
    /// `--json`, and only there.
    #[test]
    fn a_woken_step_shows_what_woke_the_agent() {
        let trace = r#"{"config": {"agent_name": "Sprout", "injection_config": {"timezone": "UTC", "watch": {"temperature": {"change": 2}}}}}
{"set_clock": "2026-07-22T02:00:00Z"}
{"user": "hi"}
{"read": {"temperature": "29.5 °C"}}
{"step": {}}
{"reply": {}}
{"woken": {"temperature": "33.0 °C"}}
{"read": {"temperature": "33.0 °C"}}
{"step": {"cur_iter": 0}}
{"step": {}}"#;
        let (out, summary) = run(trace);
        let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(summary.steps, 3);
        assert_eq!(lines[0].get("woken"), None);
        assert_eq!(lines[1]["woken"], json!({"temperature": "33.0 °C"}));
        assert!(
            lines[1]["hint"].as_str().unwrap().contains("<temperature>33.0 °C</temperature>"),
            "{}",
            lines[1]
        );
        assert_eq!(lines[1]["watch"], json!(["temperature"]));
        assert_eq!(lines[2].get("woken"), None);
        let mut text = Vec::new();
        replay(trace, &Options::default(), &mut text, None).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert_eq!(
            text.matches("  woken by temperature: 33.0 °C (the environment started this step)")
                .count(),
            1,
            "{text}"
        );
        let bad = "{\"woken\": {\"temperature\": 33}}\n{\"step\": {}}";
        let err = replay(bad, &Options::default(), &mut Vec::new(), None).unwrap_err().to_string();
        assert!(err.contains("woken: expected an object of readings by field"), "{err}");
    }

    #[test]
    fn hints_join_the_agents_message_of_the_reply() {
        let trace = r#"{"set_clock": "2026-07-22T02:00:00Z"}
{"user": "go"}
{"step": {}}
{"tool_call": {"name": "Bash", "input": {"cmd": "ls"}}}
{"tool_result": "error"}
{"step": {}}"#;
        let mut out = Vec::new();
        let mut emit = Vec::new();
        replay(trace, &Options { json: true, ..Options::default() }, &mut out, Some(&mut emit))
            .unwrap();
        let scenarios: Vec<Value> = String::from_utf8(emit)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let ctx = scenarios[1]["context"].as_array().unwrap();
        assert_eq!(ctx.len(), 2, "user message + one agent message: {ctx:?}");
        let blocks: Vec<&str> = ctx[1]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(blocks, ["hint", "tool_call", "tool_result"]);
        assert_eq!(ctx[1]["content"][1]["input"], "{\"cmd\":\"ls\"}");
        assert_eq!(ctx[1]["content"][2]["name"], "Bash");
        assert_eq!(scenarios[1]["cur_iter"], 1);
    }

    #[test]
    fn clock_unset_skips_the_time() {
        let (out, _) = run("{\"tasks\": [\"pending\"]}\n{\"step\": null}");
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        let hint = v["hint"].as_str().unwrap();
        assert!(!hint.contains("<current-time>") && hint.contains("<tasks>"), "{hint}");
    }

    #[test]
    fn a_clock_past_9999_is_refused_when_emitting_scenarios_not_written() {
        let trace = "{\"set_clock\": \"9999-12-31T23:00:00Z\"}\n{\"step\": {}}\n{\"advance\": 7200}\n{\"step\": {}}";
        let mut emitted = Vec::new();
        let err = replay(trace, &Options::default(), &mut Vec::new(), Some(&mut emitted))
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 4: --emit-scenarios: the clock +10000-01-01T01:00:00Z is outside the years 0001 to 9999"), "{err}");
        // The steps before it were written, each a scenario eval reads.
        let lines: Vec<&str> = std::str::from_utf8(&emitted).unwrap().lines().collect();
        assert_eq!(lines.len(), 1);
        assert!(
            matches!(scenario::evaluate(lines[0]), scenario::Evaluation::Hint { .. }),
            "{}",
            lines[0]
        );
        // Without --emit-scenarios the same trace replays (the core skips a time past 9999).
        assert!(replay(trace, &Options::default(), &mut Vec::new(), None).is_ok());
    }

    #[test]
    fn errors_name_the_line() {
        for (trace, needle) in [
            ("{\"step\": {}}\n{\"bogus\": 1}", "line 2: unknown event"),
            ("{\"advance\": \"5m\"}", "line 1: advance: the clock is not set"),
            ("{\"config\": {\"injection_config\": {\"time_interval\": -1}}}", "line 1:"),
            ("{\"user\": \"a\", \"step\": {}}", "one event a line"),
            ("{\"tasks\": [\"done\"]}", "tasks[0].state"),
            (
                "{\"tasks\": [5]}",
                "line 1: tasks[0]: expected a task object (AgentScope's Task), got 5",
            ),
            ("{\"tasks\": {}}", "line 1: tasks: expected a list of tasks or states, got {}"),
            ("{\"step\": {}}\n{\"config\": []}", "line 2: config: expected an object, got []"),
            ("{\"step\": []}", "line 1: step: expected an object or null, got []"),
            ("{\"step\": 3}", "line 1: step: expected an object or null, got 3"),
            ("{\"reply\": 5}", "line 1: reply: expected {} (a reply has no value), got 5"),
            ("{\"reply\": {\"id\": 1}}", "line 1: reply: expected {}"),
        ] {
            let err =
                replay(trace, &Options::default(), &mut Vec::new(), None).unwrap_err().to_string();
            assert!(err.contains(needle), "{trace}: {err}");
        }
    }

    #[test]
    fn a_device_log_is_read_through_its_streamed_lines() {
        let trace = "{\"set_clock\": \"2026-07-22T02:00:00Z\"}\n{\"context\": []}\n{\"step\": {}}";
        let log: String = trace
            .lines()
            .flat_map(|l| ["INFO  TMP105 read: 21.5 °C\n", STREAM_PREFIX, l, "\n"])
            .collect();
        let (plain, plain_summary) = run(trace);
        let (from_log, summary) = run(&log);
        assert_eq!(from_log, plain);
        assert!(from_log.contains("<current-time>"), "{from_log}");
        assert_eq!(plain_summary.input, Input::Trace);
        assert_eq!(summary.input, Input::DeviceLog { streamed: 3, skipped: 3, first_skipped: 1 });
        let bad = format!("noise\n{STREAM_PREFIX}{{\"bogus\": 1}}");
        let err = replay(&bad, &Options::default(), &mut Vec::new(), None).unwrap_err().to_string();
        assert!(err.starts_with("line 2: unknown event"), "{err}");
    }

    #[test]
    fn a_trace_with_a_streamed_line_is_refused_before_any_step() {
        let trace = format!("{{\"user\": \"hi\"}}\n{{\"step\": {{}}}}\n{STREAM_PREFIX}{{\"user\": \"x\"}}\n{{\"step\": {{}}}}");
        let mut out = Vec::new();
        let err = replay(&trace, &Options { json: true, ..Options::default() }, &mut out, None)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("line 3: a line streamed by a device"), "{err}");
        assert!(out.is_empty(), "no step runs: {}", String::from_utf8_lossy(&out));
    }

    #[test]
    fn a_hint_capacity_outside_its_range_is_refused_naming_the_option_and_the_range() {
        for capacity in [0, (1 << 20) + 1, 100_000_000_000] {
            let opts = Options { hint_capacity: Some(capacity), ..Options::default() };
            let err =
                replay("{\"step\": {}}", &opts, &mut Vec::new(), None).unwrap_err().to_string();
            assert_eq!(
                err,
                format!("--hint-capacity: expected 1 to 1048576 bytes, got {capacity}")
            );
        }
        assert_eq!(parse_hint_capacity("1048576"), Ok(1 << 20));
        assert_eq!(
            parse_hint_capacity("1e99"),
            Err("expected 1 to 1048576 bytes, got 1e99".to_string())
        );
        let opts = Options { json: true, hint_capacity: Some(1), ..Options::default() };
        let mut out = Vec::new();
        replay("{\"tasks\": [\"pending\"]}\n{\"step\": {}}", &opts, &mut out, None).unwrap();
        assert!(String::from_utf8(out).unwrap().contains("\"capacity\":1}"));
    }

    #[test]
    fn a_dumps_tasks_are_read_as_agentscope_reads_them() {
        let opts =
            Options { json: true, now: Some("2026-07-22T02:00:00Z".into()), ..Options::default() };
        let dump = json!({"context": [], "tasks_context": {"tasks": [{"subject": "a", "description": "", "metadata": {}}, "completed"]}});
        let err = replay(&dump.to_string(), &opts, &mut Vec::new(), None).unwrap_err().to_string();
        assert_eq!(
            err,
            "tasks_context.tasks[1]: expected a task object (AgentScope's Task), got \"completed\""
        );
    }

    /// The example traces, each replayed on the device path and on the
    /// full scan alone.
    fn example_traces() -> Vec<(String, String)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        let mut traces: Vec<(String, String)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".trace.jsonl"))
            .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).unwrap()))
            .collect();
        traces.sort();
        assert!(traces.len() >= 2);
        traces
    }

    #[test]
    fn the_tracker_decides_every_example_step_as_the_full_scan_does() {
        for (name, trace) in example_traces() {
            for json in [true, false] {
                let (mut tracked, mut scanned) = (Vec::new(), Vec::new());
                let summary =
                    replay(&trace, &Options { json, ..Options::default() }, &mut tracked, None)
                        .unwrap();
                let full = replay(
                    &trace,
                    &Options { json, full_scan: true, ..Options::default() },
                    &mut scanned,
                    None,
                )
                .unwrap();
                assert_eq!(tracked, scanned, "{name}");
                let check = summary.cross_check.unwrap();
                // Every step of a short session is checked; a decision reads the newest message only.
                assert_eq!(check.checked, summary.steps, "{name}");
                assert!(check.tracker_reads <= 2 && summary.steps > 3, "{name}: {check:?}");
                assert_eq!(full.cross_check, None);
            }
        }
    }

    /// A session of `replies` replies with unfinished tasks the agent never
    /// looks at: the full scan reads the whole context at every step.
    fn long_session(replies: usize) -> String {
        let mut trace =
            String::from("{\"set_clock\": \"2026-07-22T02:00:00Z\"}\n{\"tasks\": [\"pending\"]}\n");
        for i in 0..replies {
            trace.push_str(&format!("{{\"user\": \"{i}\"}}\n{{\"tool_call\": {{\"name\": \"Bash\"}}}}\n{{\"tool_result\": \"error\"}}\n"));
            trace.push_str("{\"step\": {}}\n{\"advance\": \"7m\"}\n");
            if i % 500 == 499 {
                trace.push_str("{\"compress\": 100}\n");
            }
        }
        trace
    }

    #[test]
    fn the_cross_check_reads_a_bounded_number_of_messages_per_step() {
        let trace = long_session(1500);
        let (mut tracked, mut scanned) = (Vec::new(), Vec::new());
        let summary =
            replay(&trace, &Options { json: true, ..Options::default() }, &mut tracked, None)
                .unwrap();
        replay(
            &trace,
            &Options { json: true, full_scan: true, ..Options::default() },
            &mut scanned,
            None,
        )
        .unwrap();
        assert_eq!(tracked, scanned);
        let check = summary.cross_check.unwrap();
        assert_eq!(summary.steps, 1500);
        assert!(check.tracker_reads <= 2, "{check:?}");
        // The budget: the full scans read at most CHECK_READS_PER_STEP per
        // step plus one context (1,100 messages at most here: two a reply, 100 kept), ...
        let bound = decide::CHECK_READS_PER_STEP as u64 * summary.steps as u64 + 1100;
        assert!(check.scanned <= bound, "{check:?} > {bound}");
        // ... and still check many steps, each step while the context is short.
        assert!(check.checked >= 32 && check.checked < summary.steps, "{check:?}");
    }

    #[test]
    fn a_disagreement_names_the_step() {
        let decisions =
            Box::new(decide::Disagreement { tracker: Decision::NONE, full_scan: Decision::NONE });
        let e = ReplayError::Disagree { step: 7, line: 12, decisions };
        assert!(e.to_string().starts_with("step 7 (line 12): the tracker decided"), "{e}");
    }

    #[test]
    fn compress_drops_the_recorded_time() {
        let trace = r#"{"set_clock": "2026-07-22T02:00:00Z"}
{"user": "hi"}
{"step": {}}
{"user": "more"}
{"step": {}}
{"compress": 1}
{"step": {}}"#;
        let (out, _) = run(trace);
        let hints: Vec<bool> = out
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["hint"].is_string())
            .collect();
        assert_eq!(hints, [true, false, true]);
    }

    #[test]
    fn a_msg_list_dump_is_one_step() {
        let dump = json!([
            {"name": "user", "role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"name": "Kiosk", "role": "assistant", "content": [{"type": "tool_call", "id": "a", "name": "TaskList", "input": "{}"}]}
        ]);
        let mut out = Vec::new();
        let opts =
            Options { json: true, now: Some("2026-07-22T02:00:00Z".into()), ..Options::default() };
        assert_eq!(replay(&dump.to_string(), &opts, &mut out, None).unwrap().steps, 1);
        let hint =
            serde_json::from_slice::<Value>(&out).unwrap()["hint"].as_str().unwrap().to_string();
        assert!(hint.contains("<current-time>2026-07-22T02:00:00</current-time>"), "{hint}");
        // A trace is not mistaken for a dump.
        let trace = "{\"set_clock\": \"2026-07-22T02:00:00Z\"}\n{\"context\": []}\n{\"step\": {}}";
        assert_eq!(replay(trace, &Options::default(), &mut Vec::new(), None).unwrap().steps, 1);
    }

    #[test]
    fn agentstate_dump_is_one_step() {
        let dump = json!({
            "session_id": "s", "summary": "",
            "context": [{"id": "m1", "name": "user", "role": "user", "content": [{"type": "text", "text": "hi"}]},
                        {"id": "m2", "name": "Friday", "role": "assistant", "content": [{"type": "text", "text": "ok"}]}],
            "reply_context": {"reply_id": "r", "cur_iter": 2},
            "tasks_context": {"tasks": [{"subject": "a", "description": "", "metadata": {}, "state": "in_progress"}]}
        });
        let mut out = Vec::new();
        let mut emit = Vec::new();
        let opts =
            Options { json: true, now: Some("2026-07-22T02:00:00Z".into()), ..Options::default() };
        let summary =
            replay(&serde_json::to_string_pretty(&dump).unwrap(), &opts, &mut out, Some(&mut emit))
                .unwrap();
        assert_eq!(summary.steps, 1);
        let scenario: Value = serde_json::from_slice(&emit).unwrap();
        assert_eq!(scenario["agent_name"], "Friday");
        assert_eq!(scenario["cur_iter"], 2);
        assert_eq!(scenario["tasks"][0]["state"], "in_progress");
        let hint =
            serde_json::from_slice::<Value>(&out).unwrap()["hint"].as_str().unwrap().to_string();
        assert!(hint.contains("You have 1 in-progress tasks"), "{hint}");
    }

    /// A trace watching with time rules: a change held back by
    /// `min_interval`, told once it has passed, and a heartbeat.
    const TIMED: &str = r#"{"config": {"injection_config": {"time_interval": 24, "watch": {"temperature": {"change": 1, "min_interval": 600, "max_interval": "3600"}}}}}
{"set_clock": "2026-07-22T02:00:00.25Z"}
{"user": "go"}
{"read": {"temperature": "20.0 °C"}}
{"step": {}}
{"advance": 300}
{"read": {"temperature": "25.0 °C"}}
{"step": {}}
{"advance": 300}
{"step": {}}
{"advance": 3600}
{"step": {}}"#;

    #[test]
    fn the_hints_a_replay_appends_carry_the_steps_instant_and_the_time_rules_count_from_it() {
        let mut out = Vec::new();
        let mut emit = Vec::new();
        replay(TIMED, &Options { json: true, ..Options::default() }, &mut out, Some(&mut emit))
            .unwrap();
        let watch: Vec<Value> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["watch"].clone())
            .collect();
        // Nothing told; held back (told 300 s ago); 600 s: told; 3600 s: heartbeat.
        assert_eq!(
            watch,
            [json!(["temperature"]), json!([]), json!(["temperature"]), json!(["temperature"])]
        );
        let scenarios: Vec<Value> = String::from_utf8(emit)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let hints = |s: &Value| -> Vec<Value> {
            s["context"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|m| m["content"].as_array().unwrap().clone())
                .filter(|b| b["type"] == "hint")
                .map(|b| b["created_at"].clone())
                .collect()
        };
        assert_eq!(
            hints(&scenarios[3]),
            [json!("2026-07-22T02:00:00.250000Z"), json!("2026-07-22T02:10:00.250000Z")]
        );

        // The readable report says why.
        let mut out = Vec::new();
        replay(TIMED, &Options::default(), &mut out, None).unwrap();
        let report = String::from_utf8(out).unwrap();
        assert!(report.contains("  no hint\n  watch temperature throttled: it moved, but was told less than min_interval 600 s ago\n"), "{report}");
        assert!(report.contains("  fires: watch temperature (heartbeat); "), "{report}");
    }

    #[test]
    fn with_no_clock_an_appended_hint_has_no_created_at() {
        // The step with no clock writes no scenario; the next, with one,
        // shows the first step's hint.
        let trace = "{\"tasks\": [\"pending\"]}\n{\"user\": \"go\"}\n{\"step\": {}}\n\
                     {\"set_clock\": \"2026-07-22T02:00:00Z\"}\n{\"step\": {}}";
        let mut emit = Vec::new();
        replay(
            trace,
            &Options { json: true, ..Options::default() },
            &mut Vec::new(),
            Some(&mut emit),
        )
        .unwrap();
        let second: Value =
            serde_json::from_str(String::from_utf8(emit).unwrap().lines().nth(1).unwrap()).unwrap();
        let blocks = second["context"][1]["content"].as_array().unwrap();
        assert_eq!(blocks[0]["type"], "hint");
        assert!(blocks[0].get("created_at").is_none(), "{blocks:?}");
        assert_eq!(blocks.len(), 1, "{blocks:?}");
    }
}
