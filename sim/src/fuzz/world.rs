//! The world: one session driven event by event through the model, the
//! core's full scan ([`Engine::step`]) and its incremental trackers, compared
//! at every reasoning step.

use std::collections::BTreeMap;

use envaware::Tracker;
use envaware::{Block, Conversation, CreatedAt, HintText, Role, ToolResultState};
use envaware::{
    Engine, FixedClock, Outcome, StepInput, TaskCounts, TimeDecision, Timestamp, Warning,
};
use serde_json::{json, Map, Value};

use super::case::{
    Advance, Ago, ArgFormat, Call, Case, CaseConfig, Event, Foreign, TaskOp, Tokens, ToldAt, AGES,
    BUFFERS, CONTEXT_SIZES, DST_WALLS, EXTRAS, HINTS, INTERVALS, OFFSETS, READ_FIELDS, READ_VALUES,
    SOURCES, STATES, TASK_TOOLS, TEMPLATES, TOOLS, TRIGGERS, UNREADABLE, WATCHES,
};
use super::raw::raw_arguments;
use super::{FuzzConfigBuf, FuzzStore, AGENT, OTHER_AGENT};
use crate::model::{self, Dims, MBlock, MConfig, MMsg, MOutcome, MStep, MWarning, MWatch, Model};
use crate::scenario::{self, OwnedBlock, OwnedMessage, Readings, VecConversation};

/// Counts over a run.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Cases run.
    pub cases: u64,
    /// Reasoning steps compared.
    pub steps: u64,
    /// Steps that produced a hint.
    pub hints: u64,
    /// Hints per dimension (and a few situations worth seeing).
    pub fired: BTreeMap<&'static str, u64>,
}

impl Stats {
    pub(super) fn add(&mut self, other: &Stats) {
        self.cases += other.cases;
        self.steps += other.steps;
        self.hints += other.hints;
        for (k, v) in &other.fired {
            *self.fired.entry(k).or_default() += v;
        }
    }

    fn bump(&mut self, key: &'static str) {
        *self.fired.entry(key).or_default() += 1;
    }

    /// The dimensions that never fired.
    pub fn silent_dimensions(&self) -> Vec<&'static str> {
        DIMENSIONS
            .iter()
            .copied()
            .filter(|d| self.fired.get(d).copied().unwrap_or(0) == 0)
            .collect()
    }
}

/// The dimensions, as the summary names them (the four of the reference,
/// and envaware's watch).
pub const DIMENSIONS: &[&str] = &["time", "tasks", "context-length", "tool-error", "watch"];

/// A step where the core and the model (or the tracker) disagree.
#[derive(Debug, Clone)]
pub struct Mismatch {
    /// What differs.
    pub message: String,
    /// The session's steps up to the mismatching one, as scenario lines.
    pub scenarios: Vec<String>,
}

struct World {
    cfg: MConfig,
    context: Vec<MMsg>,
    /// The reply each message belongs to.
    replies: Vec<u64>,
    reply: u64,
    conv: VecConversation,
    /// The same context in the core's own store, while it holds all of it.
    store: Box<FuzzStore>,
    store_mirrors: bool,
    now: i64,
    pending: u64,
    in_progress: u64,
    input_tokens: i64,
    context_size: i64,
    next_id: u64,
    /// The live readings, set by `read` events when a watch is configured.
    readings: Readings,
}

pub(super) fn model_config(c: &CaseConfig) -> MConfig {
    let tools = TASK_TOOLS[c.task_tools];
    MConfig {
        inject_runtime_state: c.inject,
        timezone: drawn_zone(c.strict, c.zone).into(),
        time_format: model::FORMATS[c.format].into(),
        time_interval: INTERVALS[c.interval],
        injection_buffer_ratio: c.deprecated_buffer.then_some(0.25 * TRIGGERS[c.trigger]),
        tool_retries_limit: c.limit,
        tool_retries_hint: HINTS[c.hint].into(),
        template: TEMPLATES[c.template].into(),
        injection_source: SOURCES[c.source].into(),
        task_tool_names: tools.iter().map(|s| s.to_string()).collect(),
        extra_fields: c
            .extra
            .iter()
            .map(|i| (EXTRAS[*i].0.to_string(), EXTRAS[*i].1.to_string()))
            .collect(),
        emit_hint_event: c.emit,
        strict: c.strict,
        trigger_ratio: TRIGGERS[c.trigger],
        reserve_ratio: 0.1 * TRIGGERS[c.trigger],
        context_buffer_ratio: BUFFERS[c.buffer].min(TRIGGERS[c.trigger] - 0.05),
        compression_tool_enabled: c.compression_tool,
        watch: watches(WATCHES[c.watch]),
    }
}

/// The zone a case draws: strict mode refuses an unknown zone when the
/// engine is created (`ConfigError::UnknownZoneInStrictMode`), so a strict
/// session draws UTC instead; compatible sessions keep it (UTC, a warning).
fn drawn_zone(strict: bool, index: usize) -> &'static str {
    match model::ZONES[index] {
        zone if strict && !model::is_known_zone(zone) => "UTC",
        zone => zone,
    }
}

/// A `watch` object's text as the model reads it: each value's decimal text.
fn watches(json_text: &str) -> Vec<(String, MWatch)> {
    let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(json_text) else {
        return Vec::new();
    };
    let text = |w: &Value, key: &str| match &w[key] {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let watch = |w: &Value| MWatch {
        change: text(w, "change"),
        above: text(w, "above"),
        below: text(w, "below"),
        hysteresis: text(w, "hysteresis"),
        min_interval: text(w, "min_interval"),
        max_interval: text(w, "max_interval"),
    };
    fields.iter().map(|(field, w)| (field.clone(), watch(w))).collect()
}

/// The model's watches written back as JSON: numbers where the text is a
/// JSON number, else strings (both are accepted).
fn watch_json(watch: &[(String, MWatch)]) -> Value {
    let value = |s: &Option<String>| {
        s.as_ref()
            .map(|t| serde_json::from_str::<serde_json::Number>(t).map_or(json!(t), Value::Number))
    };
    let one = |w: &MWatch| {
        let pairs = [
            ("change", &w.change),
            ("above", &w.above),
            ("below", &w.below),
            ("hysteresis", &w.hysteresis),
            ("min_interval", &w.min_interval),
            ("max_interval", &w.max_interval),
        ];
        Value::Object(
            pairs.iter().filter_map(|(k, v)| value(v).map(|v| (k.to_string(), v))).collect(),
        )
    };
    Value::Object(watch.iter().map(|(field, w)| (field.clone(), one(w))).collect())
}

fn injection_json(cfg: &MConfig) -> Value {
    let mut m = Map::new();
    m.insert("inject_runtime_state".into(), json!(cfg.inject_runtime_state));
    m.insert("timezone".into(), json!(cfg.timezone));
    m.insert("time_format".into(), json!(cfg.time_format));
    m.insert("time_interval".into(), json!(cfg.time_interval));
    if let Some(b) = cfg.injection_buffer_ratio {
        m.insert("context_buffer_ratio".into(), json!(b));
    }
    m.insert("tool_retries_limit".into(), json!(cfg.tool_retries_limit));
    m.insert("tool_retries_hint".into(), json!(cfg.tool_retries_hint));
    m.insert("template".into(), json!(cfg.template));
    m.insert("injection_source".into(), json!(cfg.injection_source));
    m.insert("task_tool_names".into(), json!(cfg.task_tool_names));
    m.insert(
        "extra_fields".into(),
        Value::Object(cfg.extra_fields.iter().map(|(k, v)| (k.clone(), json!(v))).collect()),
    );
    m.insert("emit_hint_event".into(), json!(cfg.emit_hint_event));
    m.insert("strict".into(), json!(cfg.strict));
    if !cfg.watch.is_empty() {
        m.insert("watch".into(), watch_json(&cfg.watch));
    }
    Value::Object(m)
}

fn context_json(cfg: &MConfig) -> Value {
    json!({
        "trigger_ratio": cfg.trigger_ratio,
        "reserve_ratio": cfg.reserve_ratio,
        "context_buffer_ratio": cfg.context_buffer_ratio,
        "compression_tool_enabled": cfg.compression_tool_enabled,
    })
}

fn owned_block(b: &MBlock) -> OwnedBlock {
    match b {
        MBlock::Text(_) => OwnedBlock::Other,
        MBlock::Hint { source, text, created_at } => OwnedBlock::Hint {
            source: source.clone(),
            text: text.clone(),
            created_at: created_at.as_deref().and_then(CreatedAt::parse),
        },
        MBlock::ToolCall { id, name, input } => {
            OwnedBlock::ToolCall { id: id.clone(), name: name.clone(), input: input.clone() }
        }
        MBlock::ToolResult { id, name, state } => OwnedBlock::ToolResult {
            id: id.clone(),
            name: name.clone(),
            state: ToolResultState::from_name(state).unwrap_or(ToolResultState::Running),
        },
    }
}

fn block_json(b: &MBlock) -> Value {
    match b {
        MBlock::Text(t) => json!({"type": "text", "text": t}),
        MBlock::Hint { source, text, created_at } => {
            let mut block = json!({"type": "hint", "source": source, "hint": text});
            if let Some(at) = created_at {
                block["created_at"] = json!(at);
            }
            block
        }
        MBlock::ToolCall { id, name, input } => {
            json!({"type": "tool_call", "id": id, "name": name, "input": input})
        }
        MBlock::ToolResult { id, name, state } => {
            json!({"type": "tool_result", "id": id, "name": name, "output": "", "state": state})
        }
    }
}

fn core_block(b: &MBlock) -> Block<'_> {
    match b {
        MBlock::Text(_) => Block::Other,
        MBlock::Hint { source, text, created_at } => Block::Hint {
            source: source.as_deref(),
            text: HintText::Single(text),
            created_at: created_at.as_deref().and_then(CreatedAt::parse),
        },
        MBlock::ToolCall { id, name, input } => Block::ToolCall { id, name, input },
        MBlock::ToolResult { id, name, state } => Block::ToolResult {
            id,
            name,
            state: ToolResultState::from_name(state).unwrap_or(ToolResultState::Running),
            output: "",
        },
    }
}

/// The trackers of both contexts: the `Vec` one and the store.
struct Trackers<'a> {
    vec: Tracker<'a>,
    store: Tracker<'a>,
}

fn role_of(role: &str) -> Role {
    Role::from_name(role).unwrap_or(Role::User)
}

/// The fuzzer's clock stays in 1900-01-01T00:00Z..=9998-12-31T00:00Z (Unix
/// microseconds): a day and more from either end of Python's datetime.
pub const CLOCK_RANGE: std::ops::RangeInclusive<i64> =
    -2_208_988_800_000_000..=253_370_678_400_000_000;

pub(super) fn rfc3339(micros: i64) -> String {
    chrono::DateTime::from_timestamp_micros(micros)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
        .unwrap_or_else(|| "invalid".into())
}

impl World {
    fn threshold(&self) -> f64 {
        let buffer = self.cfg.injection_buffer_ratio.unwrap_or(self.cfg.context_buffer_ratio);
        (self.cfg.trigger_ratio - buffer) * self.context_size as f64
    }

    fn push(&mut self, role: &'static str, name: &str, blocks: Vec<MBlock>, t: &mut Trackers<'_>) {
        let owned = OwnedMessage {
            role: role_of(role),
            name: name.into(),
            blocks: blocks.iter().map(owned_block).collect(),
        };
        if self.store_mirrors {
            let core_blocks: Vec<Block<'_>> = blocks.iter().map(core_block).collect();
            match self.store.push_message(role_of(role), name, &core_blocks) {
                Ok(a) if a.evicted == 0 => {
                    t.store.push_message(&self.store.newest(0).expect("just pushed"))
                }
                _ => self.store_mirrors = false,
            }
        }
        self.context.push(MMsg { role, name: name.into(), blocks });
        self.replies.push(self.reply);
        t.vec.push_message(&owned);
        self.conv.0.push(owned);
    }

    /// `AgentState.append_context`: to the agent's own message of this
    /// reply when it is the newest, else as a new assistant message.
    fn append_own(&mut self, blocks: Vec<MBlock>, t: &mut Trackers<'_>) {
        let own = matches!((self.context.last(), self.replies.last()), (Some(m), Some(r)) if m.role == "assistant" && m.name == AGENT && *r == self.reply);
        if !own {
            return self.push("assistant", AGENT, blocks, t);
        }
        let (Some(last), Some(owned)) = (self.context.last_mut(), self.conv.0.last_mut()) else {
            return;
        };
        let first = owned.blocks.len();
        if self.store_mirrors {
            let core_blocks: Vec<Block<'_>> = blocks.iter().map(core_block).collect();
            match self.store.append_blocks_to_last(&core_blocks) {
                Ok(a) if a.evicted == 0 => {
                    t.store.append_blocks(&self.store.newest(0).expect("appended to"), first)
                }
                _ => self.store_mirrors = false,
            }
        }
        owned.blocks.extend(blocks.iter().map(owned_block));
        last.blocks.extend(blocks);
        t.vec.append_blocks(&*owned, first);
    }

    fn compress(&mut self, keep: usize, t: &mut Trackers<'_>) {
        let gone = self.context.len().saturating_sub(keep);
        self.context.drain(..gone);
        self.replies.drain(..gone);
        self.conv.0.drain(..gone);
        t.vec.evict_oldest(gone);
        if self.store_mirrors {
            t.store.evict_oldest(self.store.compact(keep));
        }
    }

    fn fresh_id(&mut self) -> String {
        self.next_id += 1;
        format!("call_{}", self.next_id)
    }

    fn scenario(&self, cur_iter: u64, expected: &MOutcome) -> String {
        let tasks: Vec<Value> =
            std::iter::repeat_n(json!({"state": "pending"}), self.pending as usize)
                .chain(std::iter::repeat_n(
                    json!({"state": "in_progress"}),
                    self.in_progress as usize,
                ))
                .collect();
        let context: Vec<Value> = self
            .context
            .iter()
            .map(|m| json!({"name": m.name, "role": m.role, "content": m.blocks.iter().map(block_json).collect::<Vec<_>>()}))
            .collect();
        let mut s = Map::new();
        s.insert("agent_name".into(), json!(AGENT));
        s.insert("now".into(), json!(rfc3339(self.now)));
        s.insert("injection_config".into(), injection_json(&self.cfg));
        s.insert("context_config".into(), context_json(&self.cfg));
        s.insert("context_size".into(), json!(self.context_size));
        s.insert("input_tokens".into(), json!(self.input_tokens));
        s.insert("cur_iter".into(), json!(cur_iter));
        s.insert("tasks".into(), Value::Array(tasks));
        if !self.readings.0.is_empty() {
            s.insert("readings".into(), serde_json::to_value(&self.readings).unwrap_or_default());
        }
        s.insert("context".into(), Value::Array(context));
        let mut expected_json = json!({"hint": expected.hint, "event": expected.event});
        if !self.cfg.watch.is_empty() {
            expected_json["watch"] = json!(expected.dims.watch);
        }
        s.insert("expected".into(), expected_json);
        Value::Object(s).to_string()
    }

    fn foreign_text(&self, hint: &Foreign) -> (String, String) {
        let source = self.cfg.injection_source.clone();
        let time_at = |minutes: i64, zone: &str| {
            model::format_time(self.now + minutes * 60_000_000, zone, &self.cfg.time_format)
        };
        match hint {
            Foreign::Time { minutes, zone, tag, label, pad } => {
                let zone = model::ZONES[*zone];
                let t = time_at(*minutes, zone);
                let t = if *pad { format!("  {t} ") } else { t };
                let tag = match tag {
                    0 => String::new(),
                    1 => format!("\n<timezone>{zone}</timezone>"),
                    _ => format!("\n<timezone>{}</timezone>", model::ZONES[*label]),
                };
                (source, format!("<current-time>{t}</current-time>{tag}"))
            }
            Foreign::DstWall(i) => {
                let (wall, zone) = DST_WALLS[*i];
                let t = model::format_time(wall * 1_000_000, "UTC", &self.cfg.time_format);
                (source, format!("<current-time>{t}</current-time>\n<timezone>{zone}</timezone>"))
            }
            Foreign::Garbage => (source, "<current-time>not a time</current-time>".into()),
            Foreign::Tasks => (source, "<tasks>You have 1 pending task.</tasks>".into()),
            Foreign::OtherSource => ("someone-else".into(), format!("<current-time>{}</current-time>", time_at(0, &self.cfg.timezone))),
            Foreign::Newline { minutes } => (
                source,
                format!(
                    "<current-time>not\n</current-time><current-time>{}</current-time>\n<timezone>{}</timezone>",
                    time_at(*minutes, &self.cfg.timezone),
                    self.cfg.timezone
                ),
            ),
            Foreign::Told { field, value, own_line } => {
                let field = READ_FIELDS[*field];
                let value = READ_VALUES[*value].unwrap_or("unavailable");
                let before = if *own_line { "note\n" } else { "note " };
                (source, format!("{before}<{field}>{value}</{field}>"))
            }
        }
    }

    /// The first watch's `min_interval` (`max_interval` when `max`), in
    /// microseconds.
    fn watch_interval(&self, max: bool) -> Option<i64> {
        let first = self.cfg.watch.iter().find_map(|(_, w)| match max {
            true => w.max_interval.as_deref(),
            false => w.min_interval.as_deref(),
        });
        first.and_then(model::interval_micros)
    }

    /// A foreign hint's `created_at` text, as drawn.
    fn told_at_text(&self, at: ToldAt) -> Option<String> {
        const FORMAT: &str = "%Y-%m-%dT%H:%M:%S.%f";
        // `digits` fractional digits of a six-digit text, or none at all.
        let cut = |text: String, digits: u8| match digits {
            0 => text[..19].to_string(),
            d => text[..20 + usize::from(d.min(6))].to_string(),
        };
        // An instant off the clock's range (a day from its ends) is left
        // at the clock: every written text stays a four-digit year.
        let ago = |a: Ago| {
            let micros = match a {
                Ago::Table(i) => AGES[i],
                Ago::Interval { max, micros } => self.watch_interval(max).unwrap_or(0) + micros,
            };
            Some(self.now - micros).filter(|t| CLOCK_RANGE.contains(t))
        };
        Some(match at {
            ToldAt::Missing => return None,
            ToldAt::Utc { ago: i, digits } => {
                let at = ago(i).unwrap_or(self.now);
                format!("{}Z", cut(model::format_time(at, "UTC", FORMAT), digits))
            }
            ToldAt::Offset { ago: i, offset } => {
                let minutes = OFFSETS[offset];
                let at = ago(i).unwrap_or(self.now) + i64::from(minutes) * 60_000_000;
                let sign = if minutes < 0 { '-' } else { '+' };
                let m = minutes.unsigned_abs();
                format!(
                    "{}{sign}{:02}:{:02}",
                    model::format_time(at, "UTC", FORMAT),
                    m / 60,
                    m % 60
                )
            }
            ToldAt::Wall { ago: i, digits } => {
                let at = ago(i).unwrap_or(self.now);
                cut(model::format_time(at, &self.cfg.timezone, FORMAT), digits)
            }
            ToldAt::DstWall(i) => model::format_time(DST_WALLS[i].0 * 1_000_000, "UTC", FORMAT),
            ToldAt::Unreadable(i) => UNREADABLE[i].to_string(),
        })
    }

    /// Applies an event that is neither a step nor a reconfiguration (which
    /// [`run_case`] handles, as they involve the engine).
    fn apply(&mut self, event: &Event, case: &Case, tracker: &mut Trackers<'_>, stats: &mut Stats) {
        match event {
            Event::Step { .. } | Event::Reconfigure { .. } => {}
            Event::Read { field, value } if !self.cfg.watch.is_empty() => {
                let reading =
                    (READ_FIELDS[*field].to_string(), READ_VALUES[*value].map(str::to_string));
                self.readings.set(Readings(vec![reading]));
            }
            Event::Read { .. } => {}
            Event::User => {
                self.reply += 1;
                self.push("user", "user", vec![MBlock::Text("go on".into())], tracker);
            }
            Event::Calls(calls) => self.calls(calls, case, tracker),
            Event::Task { op, announce } => self.task(*op, *announce, tracker),
            Event::Advance(a) => {
                let interval_micros = (self.cfg.time_interval * 3_600_000_000.0) as i64;
                let by = match a {
                    Advance::Interval => interval_micros,
                    Advance::IntervalPlus { micros } => interval_micros + micros,
                    Advance::Minutes(m) => m * 60_000_000,
                    Advance::Micros(m) => *m,
                    Advance::Days(d) => d * 86_400_000_000,
                    Advance::WatchInterval { max, micros } => {
                        self.watch_interval(*max).unwrap_or(0) + micros
                    }
                };
                // A move off the clock's range is skipped: the written
                // scenarios must stay RFC 3339 (years 0000–9999) and
                // Python's datetime (years 1–9999) in every zone.
                if let Some(now) = self.now.checked_add(by).filter(|t| CLOCK_RANGE.contains(t)) {
                    self.now = now;
                } else {
                    stats.bump("clock move off its range skipped");
                }
            }
            Event::Compress { keep } => {
                stats.bump("compressions");
                self.compress(*keep, tracker);
            }
            Event::Tokens(t) => {
                self.input_tokens = match t {
                    Tokens::Zero => 0,
                    Tokens::NearThreshold(d) => self.threshold().floor() as i64 + d,
                    Tokens::Full => self.context_size,
                };
            }
            Event::Foreign { hint, other_agent, at } => {
                let (source, text) = self.foreign_text(hint);
                let created_at = self.told_at_text(*at);
                let block = MBlock::Hint { source: Some(source), text, created_at };
                if *other_agent {
                    self.push("assistant", OTHER_AGENT, vec![block], tracker);
                } else {
                    self.append_own(vec![block], tracker);
                }
            }
        }
    }
    /// Tool calls (each repeated, with fresh or reused ids) and their results.
    fn calls(&mut self, calls: &[Call], case: &Case, tracker: &mut Trackers<'_>) {
        let mut blocks = Vec::new();
        let mut last_id = None;
        for call in calls {
            let name = match TOOLS.get(call.tool) {
                Some(t) => t.to_string(),
                None => self.cfg.task_tool_names[0].clone(),
            };
            for k in 0..call.repeat {
                let id = match (call.id_mode, &last_id) {
                    (1, Some(prev)) => String::clone(prev),
                    _ => self.fresh_id(),
                };
                if call.id_mode != 2 {
                    let format =
                        ArgFormat { seed: call.format.seed.wrapping_add(k as u64), ..call.format };
                    let input = raw_arguments(&case.args[call.args % case.args.len()], format);
                    blocks.push(MBlock::ToolCall { id: id.clone(), name: name.clone(), input });
                }
                blocks.push(MBlock::ToolResult {
                    id: id.clone(),
                    name: name.clone(),
                    state: STATES[call.state],
                });
                last_id = Some(id);
            }
        }
        self.append_own(blocks, tracker);
    }
    /// The plan changes, and a task tool call says so when `announce`.
    fn task(&mut self, op: TaskOp, announce: bool, tracker: &mut Trackers<'_>) {
        match op {
            TaskOp::Create => self.pending += 1,
            TaskOp::Start if self.pending > 0 => {
                self.pending -= 1;
                self.in_progress += 1;
            }
            TaskOp::Complete if self.in_progress > 0 => self.in_progress -= 1,
            TaskOp::Complete if self.pending > 0 => self.pending -= 1,
            _ => {}
        }
        if announce {
            let id = self.fresh_id();
            let name = self.cfg.task_tool_names[0].clone();
            let blocks = vec![
                MBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    input: "{\"subject\": \"t\"}".into(),
                },
                MBlock::ToolResult { id, name, state: "success" },
            ];
            self.append_own(blocks, tracker);
        }
    }
}

fn model_dims(engine: &Engine<'_>, d: &envaware::Decision) -> Dims {
    let watches = engine.config().config().injection.watch;
    let named = |keep: fn(&envaware::WatchSet, usize) -> bool| -> Vec<String> {
        watches
            .iter()
            .enumerate()
            .filter(|(i, _)| keep(&d.watch, *i))
            .map(|(_, (name, _))| name.to_string())
            .collect()
    };
    Dims {
        time: matches!(d.time, TimeDecision::Inject(_)),
        tasks: d.tasks.is_some(),
        context: d.context.is_some(),
        tool_error: d.tool_error.is_some(),
        watch: scenario::fired_watches(engine, d).unwrap_or_default(),
        heartbeat: named(envaware::WatchSet::heartbeat),
        throttled: named(envaware::WatchSet::throttled),
    }
}

fn model_warning(w: Warning) -> Option<MWarning> {
    match w {
        Warning::DeprecatedContextBufferRatio => Some(MWarning::DeprecatedBuffer),
        Warning::TimezoneFellBackToUtc => Some(MWarning::ZoneFallback),
        Warning::RecordedTimezoneFellBackToUtc => Some(MWarning::RecordedZoneFallback),
        // The fuzzer's formats all read back, and it has no live fields.
        _ => None,
    }
}

/// Runs one session; `Err` at the first step where the core, the model or
/// the tracker disagree.
/// On success, the counts and the session's steps as scenario lines.
pub fn run_case(case: &Case, model: Model) -> Result<(Stats, Vec<String>), Mismatch> {
    let mut stats = Stats { cases: 1, ..Stats::default() };
    let mut world = World {
        cfg: model_config(&case.config),
        context: Vec::new(),
        replies: Vec::new(),
        reply: 0,
        conv: VecConversation::default(),
        store: Box::new(FuzzStore::new()),
        store_mirrors: true,
        now: case.start_micros,
        pending: 0,
        in_progress: 0,
        input_tokens: 0,
        context_size: CONTEXT_SIZES[case.config.context_size],
        next_id: 0,
        readings: Readings::default(),
    };
    if !world.cfg.watch.is_empty() {
        stats.bump("sessions with a watch");
    }
    let mut scenarios = Vec::new();
    let mut events = case.events.iter();
    // One engine per configuration: a `Reconfigure` starts a new one.
    loop {
        let mut buf = FuzzConfigBuf::with_capacity();
        let injection = injection_json(&world.cfg).to_string();
        let context = context_json(&world.cfg).to_string();
        let loaded = buf
            .load_injection(&injection)
            .map_err(|e| e.to_string())
            .and_then(|_| buf.load_context(&context).map_err(|e| e.to_string()));
        let engine = loaded.and_then(|_| scenario::engine(buf.config()).map_err(|e| e.to_string())).map_err(|e| Mismatch {
            message: format!("the core rejects a configuration the fuzzer believes valid: {e}\n{injection}\n{context}"),
            scenarios: scenarios.clone(),
        })?;
        let mut tracker = Trackers {
            vec: Tracker::from_conversation(&engine, AGENT, &world.conv),
            store: Tracker::from_conversation(&engine, AGENT, &*world.store),
        };
        let mut reconfigured = false;
        for event in events.by_ref() {
            match event {
                Event::Reconfigure { zone, format, interval } => {
                    world.cfg.timezone = drawn_zone(world.cfg.strict, *zone).into();
                    world.cfg.time_format = model::FORMATS[*format].into();
                    world.cfg.time_interval = INTERVALS[*interval];
                    stats.bump("reconfigured");
                    reconfigured = true;
                    break;
                }
                Event::Step { cur_iter } => {
                    step(
                        &mut world,
                        &engine,
                        &mut tracker,
                        *cur_iter,
                        model,
                        &mut stats,
                        &mut scenarios,
                    )?;
                }
                other => world.apply(other, case, &mut tracker, &mut stats),
            }
        }
        if !reconfigured {
            return Ok((stats, scenarios));
        }
    }
}

fn step(
    world: &mut World,
    engine: &Engine<'_>,
    tracker: &mut Trackers<'_>,
    cur_iter: u64,
    model: Model,
    stats: &mut Stats,
    scenarios: &mut Vec<String>,
) -> Result<(), Mismatch> {
    let tasks = TaskCounts { pending: world.pending, in_progress: world.in_progress };
    let input = StepInput {
        tasks,
        cur_iter,
        input_tokens: world.input_tokens,
        context_size: world.context_size,
    };
    let core_step = input.for_agent(AGENT);
    let now = Timestamp::from_unix_micros(world.now);
    let mut out = vec![0u8; 1 << 16];
    let mut live = world.readings.clone();
    let outcome =
        match engine.step(&world.conv, &core_step, &mut FixedClock::at(now), &mut live, &mut out) {
            Ok(o) => o,
            Err(e) => {
                return Err(Mismatch {
                    message: format!("the core's hint does not fit 64 KiB: {e}"),
                    scenarios: scenarios.clone(),
                });
            }
        };
    let m_step = MStep {
        agent_name: AGENT.into(),
        pending: world.pending,
        in_progress: world.in_progress,
        cur_iter,
        input_tokens: world.input_tokens,
        context_size: world.context_size,
        now_micros: world.now,
        readings: world.readings.0.clone(),
    };
    let expected = model.step(&world.cfg, &world.context, &m_step);
    scenarios.push(world.scenario(cur_iter, &expected));
    stats.steps += 1;
    for note in &expected.notes {
        stats.bump(note);
    }

    let problems = compare(world, engine, tracker, &input, now, &outcome, &expected, stats);
    if !problems.is_empty() {
        return Err(Mismatch { message: problems.join("\n"), scenarios: scenarios.clone() });
    }

    if let Some(hint) = outcome.hint {
        count_hint(world, &expected, stats);
        let block = MBlock::Hint {
            source: Some(world.cfg.injection_source.clone()),
            text: hint.to_string(),
            // The step's instant, as envaware writes it on the hints it
            // appends (`YYYY-MM-DDTHH:MM:SS.ffffffZ`): the watches' time
            // rules count from it.
            created_at: Some(rfc3339(world.now)),
        };
        world.append_own(vec![block], tracker);
    } else if world.cfg.inject_runtime_state {
        stats.bump("no hint");
    }
    Ok(())
}

/// Every way the core's answers differ from the model's and from each
/// other on this step: the full scan against the model, the tracker
/// against the full scan, and the same on the fixed-capacity store.
#[allow(clippy::too_many_arguments)] // the step's parts, each read here
fn compare(
    world: &World,
    engine: &Engine<'_>,
    tracker: &mut Trackers<'_>,
    input: &StepInput,
    now: Timestamp,
    outcome: &Outcome<'_>,
    expected: &MOutcome,
    stats: &mut Stats,
) -> Vec<String> {
    let mut problems = Vec::new();
    let core_step = &input.for_agent(AGENT);
    let core_warnings: std::collections::BTreeSet<MWarning> =
        outcome.warnings.iter().filter_map(model_warning).collect();
    if outcome.hint != expected.hint.as_deref() {
        problems.push(format!(
            "hint differs:\n  core:  {:?}\n  model: {:?}",
            outcome.hint, expected.hint
        ));
    }
    if outcome.event != expected.event {
        problems.push(format!("event differs: core {} model {}", outcome.event, expected.event));
    }
    let core_dims = model_dims(engine, &outcome.decision);
    let watch_of = |d: &Dims| (d.watch.clone(), d.heartbeat.clone(), d.throttled.clone());
    if expected.hint.is_some() && core_dims != expected.dims {
        problems.push(format!("dimensions differ: core {core_dims:?} model {:?}", expected.dims));
    } else if world.cfg.inject_runtime_state && watch_of(&core_dims) != watch_of(&expected.dims) {
        // No hint: a throttled change (or none) must still be the model's.
        problems
            .push(format!("watch reasons differ: core {core_dims:?} model {:?}", expected.dims));
    }
    if core_warnings != expected.warnings {
        problems.push(format!(
            "warnings differ: core {:?} model {:?}",
            core_warnings, expected.warnings
        ));
    }
    let tracked = tracker.vec.decide_with_readings(&world.conv, input, Some(now), &world.readings);
    if tracked != outcome.decision {
        problems.push(format!(
            "the tracker decides differently from the full scan:\n  tracker: {tracked:?}\n  scan:    {:?}",
            outcome.decision
        ));
    }
    if tracker.vec.message_count() != world.conv.message_count() as u64 {
        problems.push("the tracker lost count of the messages".into());
    }
    if world.store_mirrors {
        // The same step on the core's fixed-capacity store, by the full
        // scan and by the store's tracker.
        stats.bump("steps on the store too");
        let mut out = vec![0u8; 1 << 16];
        let on_store = engine.step(
            &*world.store,
            core_step,
            &mut FixedClock::at(now),
            &mut world.readings.clone(),
            &mut out,
        );
        if on_store != Ok(*outcome) {
            problems.push(format!(
                "the step on the store differs:\n  store: {on_store:?}\n  vec:   {outcome:?}"
            ));
        }
        let mut out = vec![0u8; 1 << 16];
        let tracked = tracker.store.step(
            &*world.store,
            input,
            &mut FixedClock::at(now),
            &mut world.readings.clone(),
            &mut out,
        );
        if tracked != Ok(*outcome) {
            problems.push(format!(
                "the store's tracker differs:\n  tracker: {tracked:?}\n  vec:     {outcome:?}"
            ));
        }
    }
    problems
}

/// Counts what a hint-injecting step met, for the coverage summary.
fn count_hint(world: &World, expected: &MOutcome, stats: &mut Stats) {
    stats.hints += 1;
    let d = &expected.dims;
    let watch = !d.watch.is_empty();
    for (on, name) in [
        (d.time, "time"),
        (d.tasks, "tasks"),
        (d.context, "context-length"),
        (d.tool_error, "tool-error"),
        (watch, "watch"),
    ] {
        if on {
            stats.bump(name);
        }
    }
    if d.time
        && world.context.iter().any(|m| {
            m.blocks
                .iter()
                .any(|b| matches!(b, MBlock::Hint { text, .. } if text.contains("<current-time>")))
        })
    {
        stats.bump("time again");
    }
    if !world.cfg.extra_fields.is_empty() {
        stats.bump("with extra fields");
    }
}

#[cfg(test)]
mod tests {
    use super::super::runner::config_default;
    use super::*;
    use crate::scenario::{self, Evaluation};

    fn case(start: &str, zone: &str, events: Vec<Event>) -> Case {
        let start_micros =
            chrono::DateTime::parse_from_rfc3339(start).expect("a time").timestamp_micros();
        let zone = model::ZONES.iter().position(|z| *z == zone).expect("a fuzzed zone");
        Case {
            config: CaseConfig { zone, ..config_default() },
            start_micros,
            args: vec![json!({})],
            events,
        }
    }

    /// Past 2099 the model keeps daylight saving (chrono-tz alone holds
    /// New York at EST for ever, and the core would "mismatch").
    #[test]
    fn model_and_core_agree_past_2099() {
        let step = || Event::Step { cur_iter: 0 };
        let events = vec![
            step(),
            Event::Advance(Advance::Interval),
            step(),
            Event::Foreign {
                hint: Foreign::Time { minutes: -20, zone: 2, tag: 1, label: 0, pad: false },
                other_agent: false,
                at: ToldAt::Missing,
            },
            step(),
            Event::Advance(Advance::Days(130)),
            step(),
        ];
        let (_, scenarios) =
            run_case(&case("2150-07-01T12:00:00Z", "America/New_York", events), Model::FAITHFUL)
                .unwrap_or_else(|m| panic!("{}", m.message));
        assert!(
            scenarios[0].contains("<current-time>2150-07-01T08:00:00</current-time>"),
            "{}",
            scenarios[0]
        );
        assert!(
            scenarios[3].contains("<current-time>2150-11-08T07:30:00</current-time>"),
            "{}",
            scenarios[3]
        );
    }

    /// A clock move off 1900..=9998 is skipped, so every written scenario
    /// reads back in `eval`.
    #[test]
    fn the_clock_stays_where_eval_reads_it() {
        let events = vec![
            Event::Advance(Advance::Days(3_000_000)),
            Event::Step { cur_iter: 0 },
            Event::Advance(Advance::Minutes(-100_000_000)),
            Event::Step { cur_iter: 0 },
            Event::Advance(Advance::Days(2_900_000)),
            Event::Step { cur_iter: 0 },
        ];
        let (stats, scenarios) =
            run_case(&case("2026-07-22T02:30:00Z", "UTC", events), Model::FAITHFUL)
                .unwrap_or_else(|m| panic!("{}", m.message));
        assert_eq!(stats.fired.get("clock move off its range skipped"), Some(&2));
        assert_eq!(scenarios.len(), 3);
        for line in &scenarios {
            assert!(matches!(scenario::evaluate(line), Evaluation::Hint { .. }), "{line}");
        }
        assert!(scenarios[2].contains("\"now\":\"9966-06-27T02:30:00"), "{}", scenarios[2]);
    }
}
