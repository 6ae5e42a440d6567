//! The session a replay holds, and one short handler per event.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::io::{self, Write};

use envaware::journal;
use envaware::{
    Decision, Engine, HintTooLong, Step, TaskCounts, TimeDecision, TimeSkipped, Timestamp,
};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::context::Context;
use super::decide::{CrossCheck, Decider};
use super::event::{ConfigEvent, Event, LogHeader, UserEvent};
use super::{Options, ReplayError, RequestFormat, Summary};
use crate::record::{self, format_instant, StepRecord, WatchRecord};
use crate::scenario::{self, Evaluation, Readings, SimConfigBuf};

/// Where a replay writes, and how.
pub(super) struct Output<'a, 'e> {
    /// The report, or `eval`'s result lines.
    pub(super) out: &'a mut dyn Write,
    /// Each step's scenario, with `--emit-scenarios`.
    pub(super) emit: Option<&'e mut dyn Write>,
    pub(super) opts: &'a Options,
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
    #[serde(skip_serializing_if = "readings_empty")]
    readings: &'a Readings,
    context: &'a VecDeque<Value>,
    // The replay's own, ignored by `eval`: what the step's request is made
    // of besides the context (`replay --request`), and the reply the
    // step's hint joins (AgentScope's `reply_id`), so that the reference
    // can run the whole step (tests/reference/formatter.py).
    reply_id: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    system_prompt: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a str>,
}

fn readings_empty(r: &&Readings) -> bool {
    r.0.is_empty()
}

/// The session as the replay holds it.
pub(super) struct Session {
    pub(super) agent_name: String,
    injection_config: Option<Box<RawValue>>,
    context_config: Option<Box<RawValue>>,
    context_size: i64,
    pub(super) input_tokens: i64,
    pub(super) tasks: Vec<Value>,
    /// The tasks' counts, read once when they are set.
    pub(super) task_counts: TaskCounts,
    pub(super) context: Context,
    pub(super) clock: Option<Timestamp>,
    /// The live readings (`read` events), kept until set again.
    readings: Readings,
    /// The current reply's number (its message id is `reply-N`).
    reply: u64,
    /// Steps run in the current reply: the next step's `cur_iter`.
    iter_in_reply: u64,
    /// The id of the newest tool call, the default of a `tool_result`.
    last_call: Option<(String, String)>,
    /// Counter for generated ids.
    ids: u64,
    pub(super) summary: Summary,
    /// One record per step, for `--plot`.
    pub(super) records: Vec<StepRecord>,
    /// The time hints this replay appended, by text, and when (the newest
    /// of equal texts).
    told: HashMap<String, Timestamp>,
    /// The tracker's cross-check so far; `None` with `--full-scan`.
    pub(super) check: Option<CrossCheck>,
    /// Compressions since the previous step.
    compressions: Vec<String>,
    /// Whether `set_clock` came since the previous step.
    clock_set: bool,
    /// The hint the device recorded for the step being run (its log).
    recorded: Option<Option<String>>,
    /// The recorded step's `at`: its hint's instant.
    recorded_at: Option<Timestamp>,
    /// What the device decided at the step being run (its log's `decided`).
    recorded_decision: Option<Value>,
    /// The live values the device's hint told at the step being run.
    recorded_told: Option<Readings>,
    /// The readings that woke the agent for the next step (`woken`).
    woken: Option<Map<String, Value>>,
    /// Whether a device log's header came: from there on its inputs are
    /// complete, and a step's decision must give the recorded hint.
    log_header: bool,
    /// Whether the trace is a device's log (it has a header somewhere).
    pub(super) device_log: bool,
    /// The configuration came from `--config`, not from the log.
    pub(super) config_given: bool,
    /// The agent's system prompt, the request's first message.
    system_prompt: String,
    /// The compressed summary, sent after the system prompt when set.
    compressed_summary: Option<String>,
}

impl Session {
    pub(super) fn new() -> Self {
        Session {
            agent_name: envaware::DEFAULT_AGENT_NAME.into(),
            injection_config: None,
            context_config: None,
            context_size: envaware::DEFAULT_CONTEXT_SIZE,
            input_tokens: 0,
            tasks: Vec::new(),
            task_counts: TaskCounts::default(),
            context: Context::default(),
            clock: None,
            readings: Readings::default(),
            reply: 0,
            iter_in_reply: 0,
            last_call: None,
            ids: 0,
            summary: Summary::default(),
            records: Vec::new(),
            told: HashMap::new(),
            check: Some(CrossCheck::default()),
            compressions: Vec::new(),
            clock_set: false,
            recorded: None,
            recorded_at: None,
            recorded_decision: None,
            recorded_told: None,
            woken: None,
            log_header: false,
            device_log: false,
            config_given: false,
            system_prompt: String::new(),
            compressed_summary: None,
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

    /// Merges a `config` event and checks the result where it is set, not
    /// at the next step.
    pub(super) fn apply_config(&mut self, event: ConfigEvent) -> Result<(), String> {
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
        if let Some(prompt) = event.system_prompt {
            self.system_prompt = prompt;
        }
        let mut buf = Box::new(SimConfigBuf::with_capacity());
        self.load(&mut buf)?;
        scenario::engine(buf.config()).map_err(|e| e.to_string())?;
        Ok(())
    }

    /// What [`Session::load`] loads from, as one text: equal keys, equal
    /// configurations.
    #[cfg(feature = "fleet")]
    pub(super) fn config_key(&self) -> String {
        fn text(c: &Option<Box<RawValue>>) -> &str {
            c.as_deref().map_or("null", RawValue::get)
        }
        format!("replay {} {}", text(&self.injection_config), text(&self.context_config))
    }

    /// Loads the session's configuration into `buf`.
    pub(super) fn load(&self, buf: &mut SimConfigBuf) -> Result<(), String> {
        scenario::load_config(
            buf,
            self.injection_config.as_deref().map(RawValue::get),
            self.context_config.as_deref().map(RawValue::get),
        )
    }

    /// AgentScope's `append_context(name, blocks)`: extends the agent's
    /// message of the current reply when it is the newest, else appends a
    /// new assistant message.
    fn append_to_agent(
        &mut self,
        blocks: Vec<Value>,
        decider: &mut Decider<'_>,
    ) -> Result<(), String> {
        let reply_id = self.reply_id();
        let ours = self.context.newest_json().is_some_and(|last| {
            last.get("role").and_then(Value::as_str) == Some("assistant")
                && last.get("name").and_then(Value::as_str) == Some(self.agent_name.as_str())
                && last.get("id").and_then(Value::as_str) == Some(reply_id.as_str())
                && last.get("content").is_some_and(Value::is_array)
        });
        if ours {
            return self.context.extend_newest(blocks, decider);
        }
        let msg = json!({"id": reply_id, "name": self.agent_name, "role": "assistant", "content": blocks});
        self.context
            .push(msg, "message", decider)
            .map_err(|e| e.replacen("message.content", "block", 1))
    }

    fn push_message(&mut self, msg: Value, decider: &mut Decider<'_>) -> Result<(), String> {
        self.context.push(msg, "message", decider)
    }

    /// Applies one event; `line` names it in errors and in the report.
    pub(super) fn apply(
        &mut self,
        event: Event,
        decider: &mut Decider<'_>,
        output: &mut Output<'_, '_>,
        line: usize,
    ) -> Result<(), ReplayError> {
        let invalid = |message: String| ReplayError::Invalid { line, message };
        match event {
            Event::Config(config) => self.apply_config(config).map_err(invalid)?,
            Event::Summary(summary) => self.compressed_summary = summary,
            Event::SetClock(clock) => {
                self.clock_set = true;
                self.clock = clock;
            }
            // A compacted device log starts after the `set_clock` it advances
            // from; the log says the time again after its header.
            Event::Advance(_) if self.device_log && !self.log_header && self.clock.is_none() => {}
            Event::Advance(micros) => self.advance(micros).map_err(invalid)?,
            Event::User(user) => self.user(user, decider).map_err(invalid)?,
            Event::Message(msg) => self.push_message(msg, decider).map_err(invalid)?,
            Event::Reply => self.new_reply(),
            Event::Assistant(blocks) => self.assistant(blocks, decider).map_err(invalid)?,
            Event::ToolCall(call) => self.tool_call(call, decider).map_err(invalid)?,
            Event::ToolResult(result) => self.tool_result(result, decider).map_err(invalid)?,
            Event::Context(msgs, read) => self.context.replace(msgs, read, decider),
            Event::Tasks(tasks, counts) => (self.tasks, self.task_counts) = (tasks, counts),
            Event::Log(header) => {
                if let Some(name) = header.agent.clone() {
                    self.agent_name = name;
                }
                self.check_header(&header, decider.engine()).map_err(invalid)?;
                self.log_header = true;
            }
            Event::Tokens(tokens) => self.input_tokens = tokens,
            Event::Compress(keep) => self.compress(keep, line, decider),
            Event::Read(readings) => self.readings.set(readings),
            Event::Woken(readings) => self.woken = Some(readings),
            Event::Step(step) => {
                if let Some(tokens) = step.tokens {
                    self.input_tokens = tokens;
                }
                let cur_iter = step.cur_iter.unwrap_or(self.iter_in_reply);
                self.recorded = step.hint;
                self.recorded_at = step.at;
                self.recorded_decision = step.decided;
                self.recorded_told = step.told;
                self.step(cur_iter, decider, output, line)?;
                self.iter_in_reply = cur_iter.saturating_add(1);
            }
        }
        Ok(())
    }

    /// A device log's header must be of the journal's format and name what
    /// the replay replays with: the configuration, the agent, the context's
    /// capacities the header gives (the core's hash of them,
    /// `journal::Header::for_session`).
    pub(super) fn check_header(
        &self,
        header: &LogHeader,
        engine: &Engine<'_>,
    ) -> Result<(), String> {
        if header.version != u64::from(journal::VERSION) {
            return Err(format!(
                "log.version: the log's format is version {}, this replay reads version {}",
                header.version,
                journal::VERSION
            ));
        }
        let [messages, blocks, text] = header.capacity;
        let ours = journal::Header::for_session(
            engine.config().config(),
            &self.agent_name,
            header.capacity,
        );
        if header.config != ours.config {
            let source = if self.config_given {
                "the configuration given with --config"
            } else {
                "the configuration in the log's settings"
            };
            return Err(format!(
                "log.config: the log was written under the configuration that hashes to \
                 {:016x}, but {source} hashes to {:016x} (agent {:?}, a context of {messages} \
                 messages, {blocks} blocks, {text} text bytes)",
                header.config, ours.config, self.agent_name
            ));
        }
        Ok(())
    }

    fn advance(&mut self, micros: i64) -> Result<(), String> {
        let now = self.clock.ok_or("advance: the clock is not set (use set_clock first)")?;
        let t = now.unix_micros().checked_add(micros).ok_or("advance: the clock overflows")?;
        self.clock = Some(Timestamp::from_unix_micros(t));
        Ok(())
    }

    /// A user message starts a new reply.
    fn user(&mut self, user: UserEvent, decider: &mut Decider<'_>) -> Result<(), String> {
        let msg = match user {
            UserEvent::Text(text) => {
                json!({"id": self.next_id("msg"), "name": "user", "role": "user", "content": [{"type": "text", "text": text}]})
            }
            UserEvent::Message(mut m) => {
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
        };
        self.push_message(msg, decider)?;
        self.new_reply();
        Ok(())
    }

    fn assistant(&mut self, blocks: Vec<Value>, decider: &mut Decider<'_>) -> Result<(), String> {
        for b in &blocks {
            if let Some("tool_call") = b.get("type").and_then(Value::as_str) {
                if let (Some(id), Some(name)) =
                    (b.get("id").and_then(Value::as_str), b.get("name").and_then(Value::as_str))
                {
                    self.last_call = Some((id.to_string(), name.to_string()));
                }
            }
        }
        self.append_to_agent(blocks, decider)
    }

    fn tool_call(
        &mut self,
        mut call: Map<String, Value>,
        decider: &mut Decider<'_>,
    ) -> Result<(), String> {
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
        self.append_to_agent(vec![block], decider)?;
        self.last_call = Some((id, name));
        Ok(())
    }

    /// Completes a result from the call it answers (by id, else the newest).
    fn tool_result(
        &mut self,
        mut result: Map<String, Value>,
        decider: &mut Decider<'_>,
    ) -> Result<(), String> {
        result.insert("type".into(), "tool_result".into());
        let call = match result.get("id").and_then(Value::as_str) {
            Some(id) => self.context.call_name(id).map(|name| (id.to_string(), name.to_string())),
            None => self.last_call.clone(),
        };
        let Some((call_id, call_name)) = call.or_else(|| {
            result.get("id").and_then(Value::as_str).map(|id| (id.to_string(), String::new()))
        }) else {
            return Err("tool_result: no id, and no tool call before it".into());
        };
        result.entry("id").or_insert(call_id.into());
        if !result.contains_key("name") {
            if call_name.is_empty() {
                return Err("tool_result: no name, and no tool call with its id".into());
            }
            result.insert("name".into(), call_name.into());
        }
        result.entry("state").or_insert("success".into());
        result.entry("output").or_insert("".into());
        self.append_to_agent(vec![Value::Object(result)], decider)
    }

    fn compress(&mut self, keep: usize, line: usize, decider: &mut Decider<'_>) {
        let held = self.context.len();
        let dropped = self.context.compress(keep, decider);
        self.compressions.push(format!("line {line}: kept {} of {held} messages", held - dropped));
    }

    /// Runs the engine on the session, prints the result, and appends the
    /// hint to the context.
    pub(super) fn step(
        &mut self,
        cur_iter: u64,
        decider: &mut Decider<'_>,
        output: &mut Output<'_, '_>,
        line: usize,
    ) -> Result<(), ReplayError> {
        let (out, opts) = (&mut *output.out, output.opts);
        if let Some(emit) = output.emit.as_deref_mut() {
            // A scenario's `now` is RFC 3339, four-digit years: a step it
            // cannot hold is refused rather than written as a line eval
            // cannot read.
            if let Some(now) = self.clock.filter(|&t| !writable_in_rfc3339(t)) {
                let message = format!(
                    "--emit-scenarios: the clock {} is outside the years 0001 to 9999 a scenario's `now` can hold",
                    format_instant(now)
                );
                return Err(ReplayError::Invalid { line, message });
            }
            self.emit_scenario(cur_iter, emit)?;
        }
        let step = Step {
            agent_name: &self.agent_name,
            tasks: self.task_counts,
            cur_iter,
            input_tokens: self.input_tokens,
            context_size: self.context_size,
        };
        let number = self.summary.steps + 1;
        let decided = decider.decide(&self.context, &step, self.clock, &self.readings);
        self.check = decider.check();
        let decision =
            decided.map_err(|decisions| ReplayError::Disagree { step: number, line, decisions })?;
        // A device's step: the decision it logged, decided again (a
        // compacted log's steps before its header may lack an input: let
        // off). Its hint is the device's: rendered from what it logged,
        // with the live values it told.
        let mut decision = decision;
        // Whether the step was decided again against what the input recorded.
        let mut checked = false;
        if let Some(logged) = self.recorded_decision.take() {
            let watches = decider.engine().config().config().injection.watch;
            let names: Vec<&str> = watches.iter().map(|(name, _)| name).collect();
            let ours = journal::Decided::of(&decision)
                .map_or(Value::Null, |d| envaware_sim::device_log::decided(&d, &names));
            let lenient = self.device_log && !self.log_header;
            if ours != logged && !lenient {
                let message = format!("the device decided {logged}, but the replay decides {ours}");
                return Err(ReplayError::Invalid { line, message });
            }
            checked = !lenient;
            let device = envaware_sim::device_log::parse_decided(&logged, &names)
                .map_err(|message| ReplayError::Invalid { line, message })?;
            let input = envaware::StepInput {
                tasks: self.task_counts,
                cur_iter,
                input_tokens: self.input_tokens,
                context_size: self.context_size,
            };
            let own = decision;
            decision = journal::Decided::decision(device, &input, self.clock);
            // What the log does not record: the warnings, and why the time
            // was not told.
            decision.warnings = own.warnings;
            if !matches!(decision.time, TimeDecision::Inject(_))
                && !matches!(own.time, TimeDecision::Inject(_))
            {
                decision.time = own.time;
            }
        }
        let mut told = self.recorded_told.take();
        let readings = told.as_mut().unwrap_or(&mut self.readings);
        let mut ran =
            render(decider.engine(), decision, &self.context, readings, opts.hint_capacity);
        if ran.hint.is_some() {
            use envaware::LiveFields as _;
            let fields = (0..readings.len()).filter_map(|i| readings.field(i));
            ran.told = fields.map(|(k, v)| (k.to_string(), v.to_string())).collect();
        }
        // A recorded step: decided again, it must give the hint recorded,
        // none included. Only a device log before its header is let off (a
        // compacted log may lack an input there); the context takes the
        // recorded hint either way.
        if let Some(recorded) = self.recorded.take() {
            let lenient = self.device_log && !self.log_header;
            if !lenient && ran.hint != recorded {
                let who = if self.device_log { "the device appended" } else { "step.hint records" };
                let message = format!(
                    "{who} {}, but the replay decides {}",
                    said(&recorded),
                    said(&ran.hint)
                );
                return Err(ReplayError::Invalid { line, message });
            }
            checked |= !lenient;
            (ran.hint, ran.too_long) = (recorded, None);
            // The device's instant for its hint, where the log says it.
            if let Some(at) = self.recorded_at.take() {
                ran.decision.now = Some(at);
            }
        }
        ran.checked = checked;
        self.summary.steps = number;
        self.record(decider, &ran, cur_iter, line);
        let woken = self.woken.take();
        if opts.json {
            let watch = scenario::fired_watches(decider.engine(), &ran.decision);
            let mut json_line = Evaluation::Hint {
                hint: ran.hint.clone(),
                event: ran.event,
                warnings: ran.warnings.clone(),
                watch,
            }
            .to_json();
            if let (Some(e), Value::Object(m)) = (ran.too_long, &mut json_line) {
                m.insert(
                    "hint_too_long".into(),
                    json!({"needed": e.needed, "capacity": e.capacity}),
                );
            }
            if let (Some(w), Value::Object(m)) = (woken, &mut json_line) {
                m.insert("woken".into(), Value::Object(w));
            }
            // The request is the context after the step's hint: appended
            // first, the line printed even when that fails.
            let appended = self.append_hint(ran, decider);
            if let (Some(RequestFormat::Openai), Ok(()), Value::Object(m)) =
                (opts.request, &appended, &mut json_line)
            {
                let request = crate::request::openai_messages(
                    &self.system_prompt,
                    self.compressed_summary.as_deref(),
                    self.context.json(),
                )
                .map_err(|message| ReplayError::Invalid { line, message })?;
                m.insert("request".into(), request);
            }
            serde_json::to_writer(&mut *out, &json_line).map_err(io::Error::from)?;
            writeln!(out)?;
            appended.map_err(|message| ReplayError::Invalid { line, message })
        } else {
            out.write_all(self.report(&ran, cur_iter, line, woken.as_ref()).as_bytes())?;
            self.append_hint(ran, decider).map_err(|message| ReplayError::Invalid { line, message })
        }
    }

    /// The step's scenario (format v1) for `--emit-scenarios`. A step with
    /// the clock unset has none (`now` is required): its line is left
    /// empty, which `eval` skips.
    fn emit_scenario(&self, cur_iter: u64, emit: &mut dyn Write) -> io::Result<()> {
        if let Some(now) = self.clock {
            let scenario = ScenarioOut {
                agent_name: &self.agent_name,
                now: format_instant(now),
                injection_config: self.injection_config.as_deref(),
                context_config: self.context_config.as_deref(),
                context_size: self.context_size,
                input_tokens: self.input_tokens,
                cur_iter,
                tasks: &self.tasks,
                readings: &self.readings,
                context: self.context.json(),
                reply_id: self.reply_id(),
                system_prompt: &self.system_prompt,
                summary: self.compressed_summary.as_deref(),
            };
            serde_json::to_writer(&mut *emit, &scenario).map_err(io::Error::from)?;
        }
        emit.write_all(b"\n")
    }

    /// What the step did, for `--plot`.
    fn record(&mut self, decider: &Decider<'_>, ran: &Ran, cur_iter: u64, line: usize) {
        let valid = decider.engine().config();
        let config_hash =
            journal::Header::for_session(valid.config(), &self.agent_name, [0; 3]).config;
        let (inj, ctx) = (&valid.config().injection, &valid.config().context);
        let decision = &ran.decision;
        self.records.push(StepRecord {
            step: self.summary.steps,
            line,
            cur_iter,
            agent: self.agent_name.clone(),
            config_hash,
            clock: self.clock,
            clock_set: std::mem::take(&mut self.clock_set),
            zone: inj.timezone.to_string(),
            time: matches!(decision.time, TimeDecision::Inject(_)),
            time_skipped: matches!(decision.time, TimeDecision::Skipped(TimeSkipped::ClockUnset)),
            tasks: decision.tasks.map(|t| (t.pending, t.in_progress)),
            context_length: decision.context.is_some(),
            tool_error: decision.tool_error.map(|t| t.count),
            hint: ran.hint.clone(),
            too_long: ran.too_long.map(|e| (e.needed, e.capacity)),
            input_tokens: self.input_tokens,
            reminder_tokens: (ctx.trigger_ratio - valid.buffer_ratio()) * self.context_size as f64,
            trigger_tokens: (ctx.trigger_ratio * self.context_size as f64) as i64,
            time_interval_hours: inj.time_interval,
            told_at: decider.time_hint(&self.context).and_then(|text| self.told.get(text).copied()),
            compressions: std::mem::take(&mut self.compressions),
            watches: self.watch_records(decider.engine(), decision),
            context_size: self.context_size,
            task_counts: (self.task_counts.pending, self.task_counts.in_progress),
            told: ran.told.clone(),
            checked: ran.checked,
        });
    }

    /// Each watched field at this step, for the plot.
    fn watch_records(&self, engine: &Engine<'_>, decision: &Decision) -> Vec<WatchRecord> {
        let watches = engine.config().config().injection.watch;
        if watches.is_empty() {
            return Vec::new(); // no scan for the told values either
        }
        let told = engine.told(&self.context, &self.agent_name);
        let approx = |d: Option<envaware::Decimal>| d.map(record::approx);
        let seconds = |i: envaware::Interval| i.micros() as f64 / 1e6;
        watches
            .iter()
            .enumerate()
            .map(|(i, (field, w))| {
                let reading = self.readings.get(field).unwrap_or(envaware::UNAVAILABLE).to_string();
                WatchRecord {
                    field: field.to_string(),
                    value: approx(envaware::Decimal::leading(reading.bytes()).map(|(d, _)| d)),
                    reading,
                    told: approx(told.get(i).copied().flatten()),
                    change: approx(w.change),
                    above: approx(w.above),
                    below: approx(w.below),
                    hysteresis: record::approx(w.hysteresis),
                    fired: decision.watch.contains(i),
                    heartbeat: decision.watch.heartbeat(i),
                    throttled: decision.watch.throttled(i),
                    min_interval: w.min_interval.map(seconds),
                    max_interval: w.max_interval.map(seconds),
                }
            })
            .collect()
    }

    /// The readable report of one step.
    fn report(
        &self,
        ran: &Ran,
        cur_iter: u64,
        line: usize,
        woken: Option<&Map<String, Value>>,
    ) -> String {
        let when = self.clock.map_or_else(|| "clock unset".to_string(), format_instant);
        let fired = fired(&ran.decision, &ran.watched);
        let at = if line == 0 {
            "the dump".to_string()
        } else {
            format!("line {line}, reply {}", self.reply)
        };
        let mut report = format!(
            "step {} at {when} ({at}, cur_iter {cur_iter}, {} tokens)\n",
            self.summary.steps, self.input_tokens
        );
        for (field, reading) in woken.into_iter().flatten() {
            let _ = writeln!(
                report,
                "  woken by {field}: {} (the environment started this step)",
                reading.as_str().unwrap_or_default()
            );
        }
        match &ran.hint {
            Some(text) => {
                let _ = writeln!(
                    report,
                    "  fires: {}{}",
                    fired.join(", "),
                    if ran.event { "; emits a HintBlockEvent" } else { "" }
                );
                for l in text.split('\n') {
                    let _ = writeln!(report, "  | {l}");
                }
            }
            None => {
                let extra =
                    if fired.is_empty() { String::new() } else { format!(" {}", fired.join(", ")) };
                let _ = writeln!(report, "  no hint{extra}");
            }
        }
        // A time rule's reasons, only with one configured: a heartbeat is
        // named on the `fires` line, a change held back here.
        for (field, w) in ran.throttled.iter() {
            let _ = writeln!(
                report,
                "  watch {field} throttled: it moved, but was told less than min_interval {w} s ago"
            );
        }
        for w in &ran.warnings {
            let _ = writeln!(report, "  warning: {w}");
        }
        if let Some(e) = ran.too_long {
            let _ = writeln!(
                report,
                "  HintTooLong {{ needed: {}, capacity: {} }}: not injected, {e}",
                e.needed, e.capacity
            );
        }
        report
    }

    /// As AgentScope, the hint joins the persistent context; as on the
    /// device, a hint too long for the buffer does not.
    fn append_hint(&mut self, ran: Ran, decider: &mut Decider<'_>) -> Result<(), String> {
        let Some(text) = ran.hint.filter(|_| ran.too_long.is_none()) else {
            return Ok(());
        };
        if matches!(ran.decision.time, TimeDecision::Inject(_)) {
            if let Some(now) = self.clock {
                self.told.insert(text.clone(), now);
            }
        }
        self.summary.hints += 1;
        let id = self.next_id("hint");
        let source = decider.engine().config().config().injection.injection_source;
        let mut block = json!({"type": "hint", "id": id, "source": source, "hint": text});
        // The step's instant, as the device's hint carries it: a watch's
        // time rules count from it.
        if let Some(now) = ran.decision.now {
            block["created_at"] = json!(envaware::CreatedAt::Instant(now).to_string());
        }
        self.append_to_agent(vec![block], decider)
    }
}

/// One step's outcome, owned so that the session can change after it.
struct Ran {
    hint: Option<String>,
    decision: Decision,
    event: bool,
    warnings: Vec<String>,
    /// With `--hint-capacity`: the hint did not fit the device's buffer.
    too_long: Option<HintTooLong>,
    /// The watched fields whose watch fired, `(heartbeat)` after those
    /// fired by their `max_interval` only.
    watched: Vec<String>,
    /// The watched fields whose change `min_interval` held back, and it.
    throttled: Vec<(String, envaware::Interval)>,
    /// The live fields the hint told (none without a hint).
    told: Vec<(String, String)>,
    /// The step was decided again against what the input recorded.
    checked: bool,
}

/// Renders a decided step. With `hint_capacity` the first try is the
/// device's buffer (at most [`super::HINT_CAPACITY`] bytes); the whole text is rendered after
/// it all the same, for the report, in a buffer of the size the core asks
/// for (bounded by the configuration).
fn render(
    engine: &Engine<'_>,
    decision: Decision,
    context: &Context,
    readings: &mut Readings,
    hint_capacity: Option<usize>,
) -> Ran {
    let mut too_long = None;
    let mut size = hint_capacity.unwrap_or(4096);
    loop {
        let mut text = vec![0u8; size];
        match engine.render_step(decision, context, readings, &mut text) {
            Ok(o) => {
                let warnings = o.warnings.iter().map(|w| w.to_string()).collect();
                let watches = || engine.config().config().injection.watch.iter().enumerate();
                let watched = watches()
                    .filter(|(i, _)| o.decision.watch.contains(*i))
                    .map(|(i, (name, _))| match o.decision.watch.heartbeat(i) {
                        true => format!("{name} (heartbeat)"),
                        false => name.to_string(),
                    })
                    .collect();
                let throttled = watches()
                    .filter(|(i, _)| o.decision.watch.throttled(*i))
                    .filter_map(|(_, (name, w))| Some((name.to_string(), w.min_interval?)))
                    .collect();
                return Ran {
                    hint: o.hint.map(str::to_string),
                    decision: o.decision,
                    event: o.event,
                    warnings,
                    too_long,
                    watched,
                    throttled,
                    told: Vec::new(),
                    checked: false,
                };
            }
            Err(e) => {
                if hint_capacity.is_some() && too_long.is_none() {
                    too_long = Some(e);
                }
                size = e.needed.max(size.saturating_mul(2));
            }
        }
    }
}

/// The dimensions a decision fired, as the report names them.
fn fired(decision: &Decision, watched: &[String]) -> Vec<String> {
    let mut fired = Vec::new();
    match decision.time {
        TimeDecision::Inject(_) => fired.push("time".to_string()),
        TimeDecision::NotDue => {}
        TimeDecision::Skipped(TimeSkipped::ClockUnset) => {
            fired.push("(time skipped: clock unset)".to_string())
        }
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
    fired.extend(watched.iter().map(|name| format!("watch {name}")));
    fired
}

/// A step's hint in a mismatch's message.
fn said(hint: &Option<String>) -> String {
    match hint {
        None => "no hint".into(),
        Some(text) => format!("the hint {text:?}"),
    }
}

/// Whether `t` falls in the years RFC 3339 writes (0001 to 9999).
fn writable_in_rfc3339(t: Timestamp) -> bool {
    use chrono::Datelike as _;
    chrono::DateTime::from_timestamp_micros(t.unix_micros())
        .is_some_and(|dt| (1..=9999).contains(&dt.year()))
}
