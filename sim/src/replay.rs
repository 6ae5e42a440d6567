//! `envaware-sim replay`: runs a session trace through the core with a
//! simulated clock and prints the hints as they would be injected.
//!
//! A trace is JSON Lines, one event a line (the README's "Replay traces"
//! section is the reference). The replay keeps the session's state (the
//! configuration, the clock, the plan's tasks, the token count and the
//! context as AgentScope `Msg` JSON) and, at each `step`, runs
//! [`Engine::step`] on it. A hint is appended to the context exactly as
//! AgentScope's `AgentState.append_context` does: to the agent's own message
//! of the current reply when that is the newest message, else as a new
//! assistant message.
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

use std::fmt::Write as _;
use std::io::{self, Write};

use envaware::{Engine, FixedClock, Step, TimeDecision, TimeSkipped, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::plot::{self, StepRecord};
use crate::scenario::{self, Evaluation, SimConfigBuf};

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
    /// The device's hint buffer, in bytes: a longer hint is reported as
    /// `HintTooLong` and, as on the device, not appended.
    pub hint_capacity: Option<usize>,
}

/// What a replay did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Steps run.
    pub steps: usize,
    /// Steps that injected a hint.
    pub hints: usize,
}

/// Why a replay stopped.
#[derive(Debug)]
pub enum ReplayError {
    /// An event (or the start state) is invalid: the line (0 for the
    /// command-line options and for a dump) and the message.
    Invalid { line: usize, message: String },
    /// Writing the output failed.
    Io(io::Error),
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::Invalid { line: 0, message } => f.write_str(message),
            ReplayError::Invalid { line, message } => write!(f, "line {line}: {message}"),
            ReplayError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<io::Error> for ReplayError {
    fn from(e: io::Error) -> Self {
        ReplayError::Io(e)
    }
}

/// The value of a `config` event: every key present replaces the current
/// one; absent keys keep theirs.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ConfigEvent {
    #[serde(default)]
    agent_name: Option<String>,
    #[serde(default)]
    injection_config: Option<Box<RawValue>>,
    #[serde(default)]
    context_config: Option<Box<RawValue>>,
    #[serde(default)]
    context_size: Option<i64>,
    #[serde(default)]
    input_tokens: Option<i64>,
}

/// The value of a `step` event.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct StepEvent {
    #[serde(default)]
    cur_iter: Option<u64>,
    #[serde(default)]
    tokens: Option<i64>,
}

/// One step's scenario (format v1), as `--emit-scenarios` writes it.
#[derive(Serialize)]
struct ScenarioOut<'a> {
    agent_name: &'a str,
    now: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    injection_config: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    context_config: Option<&'a RawValue>,
    context_size: i64,
    input_tokens: i64,
    cur_iter: u64,
    tasks: &'a [Value],
    context: &'a [Value],
}

/// The session as the replay holds it.
struct Session {
    agent_name: String,
    injection_config: Option<Box<RawValue>>,
    context_config: Option<Box<RawValue>>,
    context_size: i64,
    input_tokens: i64,
    tasks: Vec<Value>,
    context: Vec<Value>,
    clock: Option<Timestamp>,
    /// The current reply's number (its message id is `reply-N`).
    reply: u64,
    /// Steps run in the current reply: the next step's `cur_iter`.
    iter_in_reply: u64,
    /// The id of the newest tool call, the default of a `tool_result`.
    last_call: Option<(String, String)>,
    /// Counter for generated ids.
    ids: u64,
    summary: Summary,
    /// One record per step, for `--plot`.
    records: Vec<StepRecord>,
    /// The time hints this replay appended, and when.
    told: Vec<(String, Timestamp)>,
    /// Compressions since the previous step.
    compressions: Vec<String>,
    /// Whether `set_clock` came since the previous step.
    clock_set: bool,
}

impl Session {
    fn new() -> Self {
        Session {
            agent_name: "agent".into(),
            injection_config: None,
            context_config: None,
            context_size: 128_000,
            input_tokens: 0,
            tasks: Vec::new(),
            context: Vec::new(),
            clock: None,
            reply: 0,
            iter_in_reply: 0,
            last_call: None,
            ids: 0,
            summary: Summary::default(),
            records: Vec::new(),
            told: Vec::new(),
            compressions: Vec::new(),
            clock_set: false,
        }
    }

    fn next_id(&mut self, prefix: &str) -> String {
        self.ids += 1;
        format!("{prefix}-{}", self.ids)
    }

    fn reply_id(&self) -> String {
        format!("reply-{}", self.reply)
    }

    fn new_reply(&mut self) {
        self.reply += 1;
        self.iter_in_reply = 0;
    }

    fn apply_config(&mut self, value: &RawValue) -> Result<(), String> {
        let event: ConfigEvent = serde_json::from_str(value.get()).map_err(|e| format!("config: {e}"))?;
        if let Some(name) = event.agent_name {
            self.agent_name = name;
        }
        if let Some(c) = event.injection_config {
            self.injection_config = Some(c);
        }
        if let Some(c) = event.context_config {
            self.context_config = Some(c);
        }
        if let Some(n) = event.context_size {
            self.context_size = n;
        }
        if let Some(n) = event.input_tokens {
            self.input_tokens = n;
        }
        // Reject an invalid configuration where it is set, not at the next step.
        let mut buf = Box::new(SimConfigBuf::new());
        self.load(&mut buf)?;
        Engine::new(buf.config()).map_err(|e| e.to_string())?;
        Ok(())
    }

    fn load(&self, buf: &mut SimConfigBuf) -> Result<(), String> {
        scenario::load_config(buf, self.injection_config.as_deref().map(RawValue::get), self.context_config.as_deref().map(RawValue::get))
    }

    /// AgentScope's `append_context(name, blocks)`: extends the agent's
    /// message of the current reply when it is the newest, else appends a
    /// new assistant message.
    fn append_to_agent(&mut self, blocks: Vec<Value>) -> Result<(), String> {
        let reply_id = self.reply_id();
        check_blocks(&blocks, "assistant")?;
        if let Some(Value::Object(last)) = self.context.last_mut() {
            let ours = last.get("role").and_then(Value::as_str) == Some("assistant")
                && last.get("name").and_then(Value::as_str) == Some(self.agent_name.as_str())
                && last.get("id").and_then(Value::as_str) == Some(reply_id.as_str());
            if ours {
                if let Some(Value::Array(content)) = last.get_mut("content") {
                    content.extend(blocks);
                    return Ok(());
                }
            }
        }
        self.context.push(json!({"id": reply_id, "name": self.agent_name, "role": "assistant", "content": blocks}));
        Ok(())
    }

    fn push_message(&mut self, msg: Value) -> Result<(), String> {
        scenario::parse_context(std::slice::from_ref(&msg)).map_err(|e| e.replacen("context[0]", "message", 1))?;
        self.context.push(msg);
        Ok(())
    }

    fn apply(
        &mut self,
        event: &str,
        value: &RawValue,
        out: &mut dyn Write,
        emit: Option<&mut dyn Write>,
        opts: &Options,
        line: usize,
    ) -> Result<(), ReplayError> {
        let invalid = |message: String| ReplayError::Invalid { line, message };
        let parse = |what: &str| -> Result<Value, ReplayError> {
            serde_json::from_str(value.get()).map_err(|e| ReplayError::Invalid { line, message: format!("{what}: {e}") })
        };
        match event {
            "config" => self.apply_config(value).map_err(invalid)?,
            "set_clock" => {
                self.clock_set = true;
                self.clock = match parse("set_clock")? {
                    Value::Null => None,
                    Value::String(s) => Some(scenario::parse_now(&s).map_err(|e| invalid(e.replacen("now", "set_clock", 1)))?),
                    _ => return Err(invalid("set_clock: expected an RFC 3339 time with offset, or null".into())),
                }
            }
            "advance" => {
                let micros = parse_duration(&parse("advance")?).map_err(invalid)?;
                let now = self.clock.ok_or_else(|| invalid("advance: the clock is not set (use set_clock first)".into()))?;
                let t = now.unix_micros().checked_add(micros).ok_or_else(|| invalid("advance: the clock overflows".into()))?;
                self.clock = Some(Timestamp::from_unix_micros(t));
            }
            "user" => {
                let msg = match parse("user")? {
                    Value::String(text) => {
                        json!({"id": self.next_id("msg"), "name": "user", "role": "user", "content": [{"type": "text", "text": text}]})
                    }
                    Value::Object(mut m) => {
                        m.entry("name").or_insert_with(|| "user".into());
                        m.insert("role".into(), "user".into());
                        if let Some(Value::String(text)) = m.get("content") {
                            let text = text.clone();
                            m.insert("content".into(), json!([{"type": "text", "text": text}]));
                        }
                        if !m.contains_key("id") {
                            m.insert("id".into(), self.next_id("msg").into());
                        }
                        Value::Object(m)
                    }
                    _ => return Err(invalid("user: expected a text or a message object".into())),
                };
                self.push_message(msg).map_err(invalid)?;
                self.new_reply();
            }
            "message" => {
                let msg = parse("message")?;
                self.push_message(msg).map_err(invalid)?;
            }
            "reply" => self.new_reply(),
            "assistant" => {
                let blocks = match parse("assistant")? {
                    Value::String(text) => vec![json!({"type": "text", "text": text})],
                    Value::Array(blocks) => blocks,
                    _ => return Err(invalid("assistant: expected a text or a list of blocks".into())),
                };
                for b in &blocks {
                    if let Some("tool_call") = b.get("type").and_then(Value::as_str) {
                        if let (Some(id), Some(name)) = (b.get("id").and_then(Value::as_str), b.get("name").and_then(Value::as_str)) {
                            self.last_call = Some((id.to_string(), name.to_string()));
                        }
                    }
                }
                self.append_to_agent(blocks).map_err(invalid)?;
            }
            "tool_call" => {
                let Value::Object(mut call) = parse("tool_call")? else {
                    return Err(invalid("tool_call: expected an object with name and input".into()));
                };
                call.insert("type".into(), "tool_call".into());
                if !call.contains_key("id") {
                    call.insert("id".into(), self.next_id("call").into());
                }
                match call.get("input") {
                    None => {
                        call.insert("input".into(), "{}".into());
                    }
                    Some(Value::String(_)) => {}
                    // Structured arguments: the raw text a model would write.
                    Some(v) => {
                        let text = v.to_string();
                        call.insert("input".into(), text.into());
                    }
                }
                let block = Value::Object(call);
                let id = block.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
                let name = block.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                self.append_to_agent(vec![block]).map_err(invalid)?;
                self.last_call = Some((id, name));
            }
            "tool_result" => {
                let mut result = match parse("tool_result")? {
                    Value::Object(m) => m,
                    // The state alone, of the newest call.
                    Value::String(state) => Map::from_iter([("state".to_string(), Value::String(state))]),
                    _ => return Err(invalid("tool_result: expected an object or a state".into())),
                };
                result.insert("type".into(), "tool_result".into());
                let call = match result.get("id").and_then(Value::as_str) {
                    Some(id) => self.find_call(id),
                    None => self.last_call.clone(),
                };
                let Some((call_id, call_name)) =
                    call.or_else(|| result.get("id").and_then(Value::as_str).map(|id| (id.to_string(), String::new())))
                else {
                    return Err(invalid("tool_result: no id, and no tool call before it".into()));
                };
                result.entry("id").or_insert(call_id.into());
                if !result.contains_key("name") {
                    if call_name.is_empty() {
                        return Err(invalid("tool_result: no name, and no tool call with its id".into()));
                    }
                    result.insert("name".into(), call_name.into());
                }
                result.entry("state").or_insert("success".into());
                result.entry("output").or_insert("".into());
                self.append_to_agent(vec![Value::Object(result)]).map_err(invalid)?;
            }
            "context" => {
                let Value::Array(msgs) = parse("context")? else {
                    return Err(invalid("context: expected a list of messages".into()));
                };
                scenario::parse_context(&msgs).map_err(invalid)?;
                self.context = msgs;
            }
            "tasks" => self.tasks = parse_tasks(parse("tasks")?).map_err(invalid)?,
            "tokens" => {
                self.input_tokens = parse("tokens")?.as_i64().ok_or_else(|| invalid("tokens: expected an integer".into()))?;
            }
            "compress" => {
                let keep = match parse("compress")? {
                    Value::String(s) if s == "all" => 0,
                    Value::Number(n) => {
                        n.as_u64().ok_or_else(|| invalid("compress: expected a count of messages to keep".into()))? as usize
                    }
                    _ => return Err(invalid("compress: expected the number of newest messages to keep, or \"all\"".into())),
                };
                let drop = self.context.len().saturating_sub(keep);
                self.compressions.push(format!("line {line}: kept {} of {} messages", self.context.len() - drop, self.context.len()));
                self.context.drain(..drop);
            }
            "step" => {
                let step: StepEvent = match value.get().trim() {
                    "null" => StepEvent::default(),
                    text => serde_json::from_str(text).map_err(|e| invalid(format!("step: {e}")))?,
                };
                if let Some(tokens) = step.tokens {
                    self.input_tokens = tokens;
                }
                let cur_iter = step.cur_iter.unwrap_or(self.iter_in_reply);
                self.step(cur_iter, out, emit, opts, line)?;
                self.iter_in_reply = cur_iter.saturating_add(1);
            }
            other => {
                return Err(invalid(format!(
                    "unknown event {other:?} (expected config, set_clock, advance, user, assistant, tool_call, tool_result, message, \
                     reply, context, tasks, tokens, compress or step)"
                )))
            }
        }
        Ok(())
    }

    fn find_call(&self, id: &str) -> Option<(String, String)> {
        self.context.iter().rev().filter_map(|m| m.get("content").and_then(Value::as_array)).flatten().find_map(|b| {
            (b.get("type").and_then(Value::as_str) == Some("tool_call") && b.get("id").and_then(Value::as_str) == Some(id))
                .then(|| (id.to_string(), b.get("name").and_then(Value::as_str).unwrap_or_default().to_string()))
        })
    }

    /// Runs the engine on the session, prints the result, and appends the
    /// hint to the context.
    fn step(
        &mut self,
        cur_iter: u64,
        out: &mut dyn Write,
        mut emit: Option<&mut dyn Write>,
        opts: &Options,
        line: usize,
    ) -> Result<(), ReplayError> {
        let invalid = |message: String| ReplayError::Invalid { line, message };
        let mut buf = Box::new(SimConfigBuf::new());
        self.load(&mut buf).map_err(invalid)?;
        let engine = Engine::new(buf.config()).map_err(|e| invalid(e.to_string()))?;
        let conversation = scenario::parse_context(&self.context).map_err(invalid)?;
        let counts = scenario::count_tasks(&self.tasks).map_err(invalid)?;
        let step = Step {
            agent_name: &self.agent_name,
            tasks: counts,
            cur_iter,
            input_tokens: self.input_tokens,
            context_size: self.context_size,
        };
        // A step with the clock unset has no scenario (`now` is required):
        // its line is left empty, which `eval` skips.
        if let (Some(emit), None) = (&mut emit, self.clock) {
            emit.write_all(b"\n")?;
        }
        if let (Some(emit), Some(now)) = (emit, self.clock) {
            let scenario = ScenarioOut {
                agent_name: &self.agent_name,
                now: format_instant(now),
                injection_config: self.injection_config.as_deref(),
                context_config: self.context_config.as_deref(),
                context_size: self.context_size,
                input_tokens: self.input_tokens,
                cur_iter,
                tasks: &self.tasks,
                context: &self.context,
            };
            serde_json::to_writer(&mut *emit, &scenario).map_err(io::Error::from)?;
            emit.write_all(b"\n")?;
        }

        let mut clock = FixedClock(self.clock);
        // With `--hint-capacity` the first try is the device's buffer; the
        // whole text is rendered after it all the same, for the report.
        let mut too_long = None;
        let mut size = opts.hint_capacity.unwrap_or(4096);
        let (hint, decision, event, warnings) = loop {
            let mut text = vec![0u8; size];
            match engine.step(&conversation, &step, &mut clock, &mut (), &mut text) {
                Ok(o) => {
                    break (o.hint.map(str::to_string), o.decision, o.event, o.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>())
                }
                Err(e) => {
                    if opts.hint_capacity.is_some() && too_long.is_none() {
                        too_long = Some(e);
                    }
                    size = e.needed;
                }
            }
        };
        self.summary.steps += 1;
        let source = engine.config().config().injection.injection_source.to_string();
        let evaluation = Evaluation::Hint { hint: hint.clone(), event, warnings: warnings.clone() };
        let valid = engine.config();
        let (inj, ctx) = (&valid.config().injection, &valid.config().context);
        self.records.push(StepRecord {
            step: self.summary.steps,
            line,
            clock: self.clock,
            clock_set: std::mem::take(&mut self.clock_set),
            zone: inj.timezone.to_string(),
            time: matches!(decision.time, TimeDecision::Inject(_)),
            time_skipped: matches!(decision.time, TimeDecision::Skipped(TimeSkipped::ClockUnset)),
            tasks: decision.tasks.map(|t| (t.pending, t.in_progress)),
            context_length: decision.context.is_some(),
            tool_error: decision.tool_error.map(|t| t.count),
            hint: hint.clone(),
            too_long: too_long.map(|e| (e.needed, e.capacity)),
            input_tokens: self.input_tokens,
            reminder_tokens: (ctx.trigger_ratio - valid.buffer_ratio()) * self.context_size as f64,
            trigger_tokens: (ctx.trigger_ratio * self.context_size as f64) as i64,
            time_interval_hours: inj.time_interval,
            told_at: plot::newest_time_hint(&conversation, &source)
                .and_then(|text| self.told.iter().rev().find(|(t, _)| t == text).map(|(_, at)| *at)),
            compressions: std::mem::take(&mut self.compressions),
        });

        if opts.json {
            let mut line = evaluation.to_json();
            if let (Some(e), Value::Object(m)) = (too_long, &mut line) {
                m.insert("hint_too_long".into(), json!({"needed": e.needed, "capacity": e.capacity}));
            }
            serde_json::to_writer(&mut *out, &line).map_err(io::Error::from)?;
            writeln!(out)?;
        } else {
            let when = self.clock.map_or_else(|| "clock unset".to_string(), format_instant);
            let mut fired = Vec::new();
            match decision.time {
                TimeDecision::Inject(_) => fired.push("time".to_string()),
                TimeDecision::NotDue => {}
                TimeDecision::Skipped(TimeSkipped::ClockUnset) => fired.push("(time skipped: clock unset)".to_string()),
                #[allow(unreachable_patterns)]
                TimeDecision::Skipped(_) => fired.push("(time skipped)".to_string()),
            }
            if decision.tasks.is_some() {
                fired.push("tasks".into());
            }
            if decision.context.is_some() {
                fired.push("context-length".into());
            }
            if let Some(t) = decision.tool_error {
                fired.push(format!("tool-error x{}", t.count));
            }
            let at = if line == 0 { "the dump".to_string() } else { format!("line {line}, reply {}", self.reply) };
            let mut report = format!("step {} at {when} ({at}, cur_iter {cur_iter}, {} tokens)\n", self.summary.steps, self.input_tokens);
            match &hint {
                Some(text) => {
                    let _ = writeln!(report, "  fires: {}{}", fired.join(", "), if event { "; emits a HintBlockEvent" } else { "" });
                    for l in text.split('\n') {
                        let _ = writeln!(report, "  | {l}");
                    }
                }
                None => {
                    let extra = if fired.is_empty() { String::new() } else { format!(" {}", fired.join(", ")) };
                    let _ = writeln!(report, "  no hint{extra}");
                }
            }
            for w in &warnings {
                let _ = writeln!(report, "  warning: {w}");
            }
            if let Some(e) = too_long {
                let _ = writeln!(report, "  HintTooLong {{ needed: {}, capacity: {} }}: not injected, {e}", e.needed, e.capacity);
            }
            out.write_all(report.as_bytes())?;
        }

        // As on the device, a hint too long for the buffer is not appended.
        if let Some(text) = hint.filter(|_| too_long.is_none()) {
            if matches!(decision.time, TimeDecision::Inject(_)) {
                if let Some(now) = self.clock {
                    self.told.push((text.clone(), now));
                }
            }
            self.summary.hints += 1;
            let id = self.next_id("hint");
            // As AgentScope: appended to the persistent context.
            self.append_to_agent(vec![json!({"type": "hint", "id": id, "source": source, "hint": text})]).map_err(invalid)?;
        }
        Ok(())
    }
}

/// The reference's role checks on blocks the replay appends for the agent.
fn check_blocks(blocks: &[Value], role: &str) -> Result<(), String> {
    let msg = json!({"name": "x", "role": role, "content": blocks});
    scenario::parse_context(std::slice::from_ref(&msg)).map(drop).map_err(|e| e.replacen("context[0].content", "block", 1))
}

/// Tasks as a list of `Task` objects or of bare states.
fn parse_tasks(value: Value) -> Result<Vec<Value>, String> {
    let Value::Array(items) = value else {
        return Err("tasks: expected a list of tasks or states".into());
    };
    let tasks: Vec<Value> = items
        .into_iter()
        .map(|t| match t {
            Value::String(state) => json!({ "state": state }),
            other => other,
        })
        .collect();
    if let Some(i) = tasks.iter().position(|t| !t.is_object()) {
        return Err(format!("tasks[{i}]: expected a task object or a state"));
    }
    scenario::count_tasks(&tasks)?;
    Ok(tasks)
}

/// A duration in microseconds: a number of seconds, or a text such as
/// `"90m"`, `"1h30m"`, `"1.5h"`, `"250ms"`, `"-5m"` (units `d`, `h`, `m`,
/// `s`, `ms`, `us`).
pub fn parse_duration(value: &Value) -> Result<i64, String> {
    let bad = || format!("advance: expected seconds or a duration such as \"90m\" or \"1h30m\", got {value}");
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
                let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
                let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
                rest = &rest[digits..];
                let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
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

/// An instant as RFC 3339 in UTC, with microseconds only when there are some.
pub fn format_instant(t: Timestamp) -> String {
    match chrono::DateTime::from_timestamp_micros(t.unix_micros()) {
        Some(dt) if dt.timestamp_subsec_micros() == 0 => dt.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        Some(dt) => dt.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        None => format!("@{}us", t.unix_micros()),
    }
}

/// What starts each line of the session the firmware streams as AgentScope
/// JSON (`firmware/src/stream.rs`). Given the device's whole log, the
/// replay reads only these lines.
pub const STREAM_PREFIX: &str = "agentscope> ";

/// Whether `text` is an AgentScope context dump rather than a trace: the
/// whole text is one JSON array, or one object with a `context` list.
fn as_dump(text: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(text).ok()?;
    match &value {
        Value::Array(_) => Some(value),
        Value::Object(m) if m.get("context").is_some_and(Value::is_array) => Some(value),
        _ => None,
    }
}

/// Replays `text` (a trace, or a context dump), writing the report to `out`
/// and, when given, each step's scenario to `emit`.
#[cfg_attr(not(test), allow(dead_code))] // the binary itself wants the records
pub fn replay(text: &str, opts: &Options, out: &mut dyn Write, emit: Option<&mut dyn Write>) -> Result<Summary, ReplayError> {
    replay_with_records(text, opts, out, emit).map(|(summary, _)| summary)
}

/// [`replay`], also returning what each step did, for [`plot::render`].
pub fn replay_with_records(
    text: &str,
    opts: &Options,
    out: &mut dyn Write,
    mut emit: Option<&mut dyn Write>,
) -> Result<(Summary, Vec<StepRecord>), ReplayError> {
    let mut session = Session::new();
    let start = |message: String| ReplayError::Invalid { line: 0, message };
    if let Some(config) = &opts.config {
        let raw: Box<RawValue> = serde_json::from_str(config).map_err(|e| start(format!("--config: {e}")))?;
        session.apply_config(&raw).map_err(|e| start(format!("--config: {e}")))?;
    }
    if let Some(name) = &opts.agent {
        session.agent_name.clone_from(name);
    }
    if let Some(tokens) = opts.tokens {
        session.input_tokens = tokens;
    }
    if let Some(now) = &opts.now {
        session.clock = Some(scenario::parse_now(now).map_err(|e| start(e.replacen("now", "--now", 1)))?);
    }

    if let Some(dump) = as_dump(text) {
        let (msgs, state) = match dump {
            Value::Array(msgs) => (msgs, Value::Null),
            Value::Object(mut m) => match m.remove("context") {
                Some(Value::Array(msgs)) => (msgs, Value::Object(m)),
                _ => unreachable!("as_dump checked the context list"),
            },
            _ => unreachable!("as_dump returns an array or an object"),
        };
        scenario::parse_context(&msgs).map_err(start)?;
        if opts.agent.is_none() {
            let newest_assistant = msgs.iter().rev().find(|m| m.get("role").and_then(Value::as_str) == Some("assistant"));
            if let Some(name) = newest_assistant.and_then(|m| m.get("name")).and_then(Value::as_str) {
                session.agent_name = name.to_string();
            }
        }
        session.context = msgs;
        if let Some(tasks) = state.pointer("/tasks_context/tasks") {
            session.tasks = parse_tasks(tasks.clone()).map_err(start)?;
        }
        // `reply_context.cur_iter`, or the legacy top-level field.
        let cur_iter = state.pointer("/reply_context/cur_iter").or_else(|| state.get("cur_iter")).and_then(Value::as_u64).unwrap_or(0);
        if session.clock.is_none() {
            let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            session.clock = Some(Timestamp::from_unix_micros(i64::try_from(since_epoch.as_micros()).unwrap_or(i64::MAX)));
        }
        session.step(cur_iter, out, emit, opts, 0)?;
        return Ok((session.summary, session.records));
    }

    // A device's log (the firmware's defmt output): only its streamed lines
    // are events; the others (hints, sensor readings) are skipped, and line
    // numbers stay the log's.
    let device_log = text.lines().any(|l| l.starts_with(STREAM_PREFIX));
    for (i, raw_line) in text.split('\n').enumerate() {
        let line = i + 1;
        let raw_line = match (device_log, raw_line.strip_prefix(STREAM_PREFIX)) {
            (false, _) => raw_line,
            (true, Some(streamed)) => streamed,
            (true, None) => continue,
        };
        let trimmed = raw_line.trim();
        if trimmed.is_empty() {
            continue;
        }
        let invalid = |message: String| ReplayError::Invalid { line, message };
        let event: Map<String, Value> = serde_json::from_str(trimmed).map_err(|e| invalid(format!("not a JSON object: {e}")))?;
        let raw: std::collections::HashMap<String, Box<RawValue>> = serde_json::from_str(trimmed).map_err(|e| invalid(e.to_string()))?;
        // A "#" key is a comment, alone or next to the event.
        let keys: Vec<&String> = event.keys().filter(|k| k.as_str() != "#").collect();
        match keys.as_slice() {
            [] => continue,
            [key] => session.apply(key, &raw[key.as_str()], out, emit.as_mut().map(|e| &mut **e as &mut dyn Write), opts, line)?,
            _ => {
                return Err(invalid(format!(
                    "one event a line, found {}",
                    keys.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", ")
                )))
            }
        }
    }
    Ok((session.summary, session.records))
}

/// `envaware-sim replay`'s arguments.
#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// The trace (JSON Lines of events) or AgentScope context dump;
    /// standard input when absent or `-`.
    pub file: Option<std::path::PathBuf>,
    /// Print one `eval` result line for each step instead of the report.
    #[arg(long)]
    pub json: bool,
    /// Write each step's scenario (format v1) to this file: `eval` on it
    /// prints the same lines as `--json`.
    #[arg(long, value_name = "FILE")]
    pub emit_scenarios: Option<std::path::PathBuf>,
    /// The clock at the start (RFC 3339); a dump runs at this time, else at
    /// the system time.
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    /// The agent's name at the start.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// A JSON file holding the configuration at the start, as a `config`
    /// event's value (`agent_name`, `injection_config`, `context_config`,
    /// `context_size`, `input_tokens`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// The input token count at the start.
    #[arg(long, value_name = "N")]
    pub tokens: Option<i64>,
    /// Draw the session's timeline to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
    /// The device's hint buffer in bytes: a longer hint is reported as
    /// `HintTooLong` and not appended; the exit status is then 1.
    #[arg(long, value_name = "N")]
    pub hint_capacity: Option<usize>,
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

/// Runs `envaware-sim replay`: exit 0 when the whole trace ran, 1 on an
/// invalid event (the steps before it are printed), 2 on an I/O error.
pub fn main(args: ReplayArgs) -> std::process::ExitCode {
    use std::io::Read;
    use std::process::ExitCode;
    let fail = |what: String, code: u8| {
        eprintln!("envaware-sim replay: {what}");
        ExitCode::from(code)
    };
    let mut bytes = Vec::new();
    let read = match &args.file {
        Some(path) if path.as_os_str() != "-" => std::fs::read(path).map(|b| bytes = b),
        _ => io::stdin().read_to_end(&mut bytes).map(drop),
    };
    if let Err(e) = read {
        return fail(format!("cannot read the trace: {e}"), 2);
    }
    // Bytes that are not UTF-8 end the trace at their line, as an invalid
    // event does: the lines before it are replayed.
    let (text, bad_line) = utf8_prefix(&bytes);
    let config = match &args.config {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(t) => Some(t),
            Err(e) => return fail(format!("cannot read {}: {e}", path.display()), 2),
        },
        None => None,
    };
    let mut emit_file = match &args.emit_scenarios {
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Some(io::BufWriter::new(f)),
            Err(e) => return fail(format!("cannot create {}: {e}", path.display()), 2),
        },
        None => None,
    };
    let opts =
        Options { json: args.json, now: args.now, agent: args.agent, config, tokens: args.tokens, hint_capacity: args.hint_capacity };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let result = replay_with_records(text, &opts, &mut out, emit_file.as_mut().map(|f| f as &mut dyn Write));
    let flushed = out.flush().and_then(|()| emit_file.as_mut().map_or(Ok(()), Write::flush));
    match (result, flushed) {
        (Err(ReplayError::Io(e)), _) | (Ok(_), Err(e)) => fail(e.to_string(), 2),
        (Err(e), _) => fail(e.to_string(), 1),
        (Ok(_), Ok(())) if bad_line.is_some() => fail(format!("line {}: not valid UTF-8", bad_line.unwrap_or(0)), 1),
        (Ok((summary, records)), Ok(())) => {
            if !opts.json {
                eprintln!("{} steps, {} hints", summary.steps, summary.hints);
            }
            if let Some(path) = &args.plot {
                let name = args.file.as_ref().and_then(|p| p.file_name()).map_or("standard input".into(), |n| n.to_string_lossy());
                let written = plot::render(&records, &format!("envaware session timeline: {name}"))
                    .and_then(|svg| std::fs::write(path, svg).map_err(|e| e.to_string()));
                match written {
                    Ok(()) => eprintln!("wrote the timeline to {}", path.display()),
                    Err(e) => return fail(format!("cannot write {}: {e}", path.display()), 2),
                }
            }
            let too_long = records.iter().filter(|r| r.too_long.is_some()).count();
            if too_long > 0 {
                let capacity = opts.hint_capacity.unwrap_or_default();
                return fail(format!("{too_long} of {} steps made a hint longer than {capacity} bytes", summary.steps), 1);
            }
            ExitCode::SUCCESS
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(trace: &str) -> (String, Summary) {
        let mut out = Vec::new();
        let summary = replay(trace, &Options { json: true, ..Options::default() }, &mut out, None).expect("replay");
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
        for bad in [json!("5"), json!("m"), json!("5x"), json!(""), json!("-"), json!(null), json!(1e300)] {
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
        assert_eq!(summary, Summary { steps: 3, hints: 2 });
        assert!(lines[0]["hint"].as_str().unwrap().contains("<current-time>2026-07-22T02:00:00</current-time>"));
        assert_eq!(lines[1]["hint"], Value::Null);
        assert!(lines[2]["hint"].as_str().unwrap().contains("<current-time>2026-07-22T02:31:00</current-time>"));
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
        replay(trace, &Options { json: true, ..Options::default() }, &mut out, Some(&mut emit)).unwrap();
        let scenarios: Vec<Value> = String::from_utf8(emit).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let ctx = scenarios[1]["context"].as_array().unwrap();
        assert_eq!(ctx.len(), 2, "user message + one agent message: {ctx:?}");
        let blocks: Vec<&str> = ctx[1]["content"].as_array().unwrap().iter().map(|b| b["type"].as_str().unwrap()).collect();
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
    fn errors_name_the_line() {
        for (trace, needle) in [
            ("{\"step\": {}}\n{\"bogus\": 1}", "line 2: unknown event"),
            ("{\"advance\": \"5m\"}", "line 1: advance: the clock is not set"),
            ("{\"config\": {\"injection_config\": {\"time_interval\": -1}}}", "line 1:"),
            ("{\"user\": \"a\", \"step\": {}}", "one event a line"),
            ("{\"tasks\": [\"done\"]}", "tasks[0].state"),
        ] {
            let err = replay(trace, &Options::default(), &mut Vec::new(), None).unwrap_err().to_string();
            assert!(err.contains(needle), "{trace}: {err}");
        }
    }

    #[test]
    fn a_device_log_is_read_through_its_streamed_lines() {
        let trace = "{\"set_clock\": \"2026-07-22T02:00:00Z\"}\n{\"context\": []}\n{\"step\": {}}";
        let log: String = trace.lines().flat_map(|l| ["INFO  TMP105 read: 21.5 °C\n", STREAM_PREFIX, l, "\n"]).collect();
        let (plain, _) = run(trace);
        let (from_log, _) = run(&log);
        assert_eq!(from_log, plain);
        assert!(from_log.contains("<current-time>"), "{from_log}");
        let bad = format!("noise\n{STREAM_PREFIX}{{\"bogus\": 1}}");
        let err = replay(&bad, &Options::default(), &mut Vec::new(), None).unwrap_err().to_string();
        assert!(err.starts_with("line 2: unknown event"), "{err}");
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
        let hints: Vec<bool> = out.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["hint"].is_string()).collect();
        assert_eq!(hints, [true, false, true]);
    }

    #[test]
    fn a_msg_list_dump_is_one_step() {
        let dump = json!([
            {"name": "user", "role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"name": "Kiosk", "role": "assistant", "content": [{"type": "tool_call", "id": "a", "name": "TaskList", "input": "{}"}]}
        ]);
        let mut out = Vec::new();
        let opts = Options { json: true, now: Some("2026-07-22T02:00:00Z".into()), ..Options::default() };
        assert_eq!(replay(&dump.to_string(), &opts, &mut out, None).unwrap().steps, 1);
        let hint = serde_json::from_slice::<Value>(&out).unwrap()["hint"].as_str().unwrap().to_string();
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
        let opts = Options { json: true, now: Some("2026-07-22T02:00:00Z".into()), ..Options::default() };
        let summary = replay(&serde_json::to_string_pretty(&dump).unwrap(), &opts, &mut out, Some(&mut emit)).unwrap();
        assert_eq!(summary.steps, 1);
        let scenario: Value = serde_json::from_slice(&emit).unwrap();
        assert_eq!(scenario["agent_name"], "Friday");
        assert_eq!(scenario["cur_iter"], 2);
        assert_eq!(scenario["tasks"][0]["state"], "in_progress");
        let hint = serde_json::from_slice::<Value>(&out).unwrap()["hint"].as_str().unwrap().to_string();
        assert!(hint.contains("You have 1 in-progress tasks"), "{hint}");
    }
}
