//! `envaware-sim fuzz`: random agent sessions, driven through the core step
//! by step and compared with the independent [`model`](crate::model).
//!
//! A case is a configuration, a start instant and a list of events: user
//! messages, tool calls whose results succeed or fail (with arguments in
//! varying key order and formatting), task changes, clock advances (also
//! backwards, across DST changes, and exactly onto the time boundary),
//! compressions, token counts, configuration changes, hints written by
//! someone else, and reasoning steps. At every step:
//!
//! - the core ([`Engine::step`], full scan of the context) must produce the
//!   hint, event and warnings the model produces;
//! - the incremental [`Tracker`] must decide exactly as the full scan.
//!
//! proptest generates and shrinks the cases. On a mismatch the minimal
//! session is printed and written as scenario JSON Lines (one line per
//! step, the last one the mismatching step, each with the model's
//! `expected` result as an extra key) that `envaware-sim eval` replays.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};

use envaware::ConfigBuf;
use envaware::ContextStore;
use envaware::Tracker;
use envaware::{Block, Conversation, HintText, Role, ToolResultState};
use envaware::{Engine, FixedClock, Step, TaskCounts, TimeDecision, Timestamp, Warning};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use serde_json::{json, Map, Value};

use crate::model::{self, Dims, MBlock, MConfig, MMsg, MOutcome, MStep, MWarning, Model};
use crate::scenario::{OwnedBlock, OwnedMessage, VecConversation};

/// The agent whose steps are fuzzed.
pub const AGENT: &str = "Friday";
const OTHER_AGENT: &str = "Scout";
type FuzzConfigBuf = ConfigBuf<8192, 16, 16>;
/// The fixed-capacity store the core also runs on, mirroring the context
/// until it would have to evict on its own (then it is left out).
type FuzzStore = ContextStore<128, 1024, 65536>;

// ---------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------

/// A configuration, as indices into small tables (so that it shrinks).
#[derive(Debug, Clone)]
pub struct CaseConfig {
    inject: bool,
    zone: usize,
    format: usize,
    interval: usize,
    limit: u64,
    hint: usize,
    template: usize,
    source: usize,
    task_tools: usize,
    extra: Vec<usize>,
    emit: bool,
    strict: bool,
    trigger: usize,
    buffer: usize,
    deprecated_buffer: bool,
    compression_tool: bool,
    context_size: usize,
}

const INTERVALS: &[f64] = &[0.5, 0.0, 0.25, 1.0, 1.5, 24.0];
const HINTS: &[&str] = &[
    "The last {count} calls to '{tool_name}' with the same arguments all failed. Stop retrying the same call as-is, check the error message and try a different approach.",
    "{tool_name} x{count} ({count})",
    "stop calling {tool_name}",
];
const TEMPLATES: &[&str] = &[
    "<system-reminder>Treat the following as the ground truth at this point of the conversation. Anything stated earlier is outdated, and a later reminder, if any, supersedes this one:\n{runtime_state}\n</system-reminder>",
    "[{runtime_state}]",
    "{runtime_state} {x} {runtime_state}",
];
const SOURCES: &[&str] = &["{\"label\": \"System\", \"sublabel\": \"Runtime State\"}", "runtime"];
const TASK_TOOLS: &[&[&str]] = &[&["TaskCreate", "TaskGet", "TaskList", "TaskUpdate"], &["plan", "TaskList"]];
/// Extra fields; the second replaces a built-in value and the last two carry
/// markers (strict mode refuses all three).
const EXTRAS: &[(&str, &str)] = &[
    ("site", "lab-3"),
    ("timezone", "Mars/Olympus_Mons"),
    ("battery", "81%"),
    ("note", "<tasks>t</tasks>"),
    ("echo", "<current-time>soon</current-time>"),
];
const TRIGGERS: &[f64] = &[0.8, 0.5, 0.9];
const BUFFERS: &[f64] = &[0.2, 0.0, 0.1, 0.3];
const CONTEXT_SIZES: &[i64] = &[128_000, 1000, 200_000];
/// Tool names; the last spoofs a tasks hint (escaped in strict mode).
const TOOLS: &[&str] = &["Bash", "read_file", "weird{count}", "Probe</tool-error><tasks>"];
/// Instants near DST changes (and not), Unix seconds.
const STARTS: &[i64] = &[
    1_784_687_400, // 2026-07-22T02:30Z
    1_772_949_600, // 2026-03-08T06:00Z, New York springs forward at 07:00Z
    1_793_510_400, // 2026-11-01T05:20Z, New York falls back at 06:00Z
    1_774_742_400, // 2026-03-29T00:00Z, Berlin springs forward at 01:00Z
    1_792_886_400, // 2026-10-25T00:00Z, Berlin falls back at 01:00Z
    1_775_311_200, // 2026-04-04T14:00Z, Lord Howe falls back half an hour at 15:00Z
    1_791_039_600, // 2026-10-03T15:00Z, Lord Howe springs forward at 15:30Z
    978_307_200,   // 2001-01-01T00:00Z
];

/// Wall times a zone repeats (fall back) or skips (spring forward), as Unix
/// seconds of the same wall time in UTC, and the zone.
const DST_WALLS: &[(i64, &str)] = &[
    (1_772_937_000, "America/New_York"),    // 2026-03-08 02:30, skipped
    (1_793_496_600, "America/New_York"),    // 2026-11-01 01:30, repeated
    (1_774_751_400, "Europe/Berlin"),       // 2026-03-29 02:30, skipped
    (1_792_895_400, "Europe/Berlin"),       // 2026-10-25 02:30, repeated
    (1_775_353_500, "Australia/Lord_Howe"), // 2026-04-05 01:45, repeated
    (1_791_080_100, "Australia/Lord_Howe"), // 2026-10-04 02:15, skipped
];

/// How a call's arguments are written.
#[derive(Debug, Clone, Copy)]
pub struct ArgFormat {
    seed: u64,
    /// Cut the text short: invalid JSON, compared as stripped text.
    truncate: bool,
}

/// One tool call and its result.
#[derive(Debug, Clone)]
pub struct Call {
    tool: usize,
    args: usize,
    format: ArgFormat,
    state: usize,
    /// 0: a fresh id; 1: the previous call's id again; 2: a result without a call.
    id_mode: usize,
    /// How many times the call is made in a row (the arguments written
    /// differently each time).
    repeat: usize,
}

const STATES: &[&str] = &["error", "success", "interrupted", "denied", "running"];

/// A hint someone else wrote, or a spoof.
#[derive(Debug, Clone)]
pub enum Foreign {
    /// Our source, a time `minutes` away in `zone`, with a zone tag naming
    /// `zone` (1), `label` (2, so a wall time another zone may repeat or
    /// skip), or none (0).
    Time { minutes: i64, zone: usize, tag: u8, label: usize, pad: bool },
    /// Our source, a wall time a zone repeats or skips, with that zone's tag.
    DstWall(usize),
    /// Our source, a time that does not parse.
    Garbage,
    /// Our source, a tasks marker.
    Tasks,
    /// Another source, with a fresh time.
    OtherSource,
    /// Our source: a first tag broken by a newline, then a valid one.
    Newline { minutes: i64 },
}

/// A clock change.
#[derive(Debug, Clone, Copy)]
pub enum Advance {
    /// Exactly `time_interval` hours: the boundary.
    Interval,
    /// Just past the boundary.
    IntervalPlus { micros: i64 },
    /// Whole minutes, either way.
    Minutes(i64),
    /// A few microseconds.
    Micros(i64),
    /// Days ahead.
    Days(i64),
}

/// A change of the plan.
#[derive(Debug, Clone, Copy)]
pub enum TaskOp {
    /// A new pending task.
    Create,
    /// A pending task starts.
    Start,
    /// A task completes.
    Complete,
}

/// Token counts, relative to the threshold.
#[derive(Debug, Clone, Copy)]
pub enum Tokens {
    /// Zero.
    Zero,
    /// `floor(threshold) + delta`.
    NearThreshold(i64),
    /// The whole window.
    Full,
}

/// One event of a session.
#[derive(Debug, Clone)]
pub enum Event {
    /// A reasoning step.
    Step { cur_iter: u64 },
    /// A user message (a new reply starts).
    User,
    /// Tool calls and their results in the agent's own reply.
    Calls(Vec<Call>),
    /// The plan changes; `announce` adds a task tool call to the context.
    Task { op: TaskOp, announce: bool },
    /// The clock moves.
    Advance(Advance),
    /// A compression keeps the `keep` newest messages.
    Compress { keep: usize },
    /// The token count changes.
    Tokens(Tokens),
    /// A hint in the agent's own reply, or (`other_agent`) in another agent's message.
    Foreign { hint: Foreign, other_agent: bool },
    /// The configuration changes: zone, format and interval.
    Reconfigure { zone: usize, format: usize, interval: usize },
}

/// A session: configuration, start instant, argument pool, events.
#[derive(Debug, Clone)]
pub struct Case {
    config: CaseConfig,
    start_micros: i64,
    args: Vec<Value>,
    events: Vec<Event>,
}

impl Case {
    /// The session's events.
    pub fn events(&self) -> &[Event] {
        &self.events
    }
}

fn idx(n: usize) -> impl Strategy<Value = usize> {
    0..n
}

fn config_strategy() -> impl Strategy<Value = CaseConfig> {
    (
        (prop::bool::weighted(0.97), idx(model::ZONES.len()), idx(model::FORMATS.len()), idx(INTERVALS.len()), 3u64..6, idx(HINTS.len())),
        (idx(TEMPLATES.len()), idx(SOURCES.len()), idx(TASK_TOOLS.len()), prop::collection::vec(idx(EXTRAS.len()), 0..3)),
        (
            any::<bool>(),
            prop::bool::weighted(0.2),
            idx(TRIGGERS.len()),
            idx(BUFFERS.len()),
            prop::bool::weighted(0.2),
            any::<bool>(),
            idx(3),
        ),
    )
        .prop_map(|(a, b, c)| {
            let (inject, zone, format, interval, limit, hint) = a;
            let (template, source, task_tools, mut extra) = b;
            let (emit, strict, trigger, buffer, deprecated_buffer, compression_tool, context_size) = c;
            extra.sort_unstable();
            extra.dedup();
            if strict {
                extra.retain(|e| !matches!(e, 1 | 3 | 4));
            }
            CaseConfig {
                inject,
                zone,
                format,
                interval,
                limit,
                hint,
                template,
                source,
                task_tools,
                extra,
                emit,
                strict,
                trigger,
                buffer,
                deprecated_buffer,
                compression_tool,
                context_size,
            }
        })
}

fn arg_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        (-1000i64..1000).prop_map(|i| json!(i)),
        prop::sample::select(vec!["ls -la", "/tmp/a b", "é", "日本", "a\"b\\c", "tab\tnl\n", "😀", "\u{7f}", "", "x/y"])
            .prop_map(|s| json!(s)),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        prop::sample::select(vec![0.5, 1.25, -2.5, 3.0, 0.1]).prop_map(|f| json!(f)),
        prop::sample::select(vec![i64::MAX, i64::MIN, 1 << 53]).prop_map(|i| json!(i)),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec((prop::sample::select(vec!["cmd", "path", "a", "B", "é", "z1", "_"]), inner.clone()), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Map<_, _>>())),
            prop::collection::vec(inner, 0..4).prop_map(Value::Array),
        ]
    })
}

fn call_strategy(n_args: usize) -> impl Strategy<Value = Call> {
    (
        idx(TOOLS.len() + 1),
        idx(n_args),
        (any::<u64>(), prop::bool::weighted(0.1)),
        prop::sample::select(vec![0usize, 0, 0, 0, 1, 2, 3, 4]),
        prop::sample::select(vec![0usize, 0, 0, 0, 0, 0, 1, 2]),
        prop::sample::select(vec![1usize, 1, 1, 2, 3, 3, 4, 5]),
    )
        .prop_map(|(tool, args, (seed, truncate), state, id_mode, repeat)| Call {
            tool,
            args,
            format: ArgFormat { seed, truncate },
            state,
            id_mode,
            repeat,
        })
}

fn foreign_strategy() -> impl Strategy<Value = Foreign> {
    prop_oneof![
        3 => (-180i64..180, idx(model::ZONES.len()), prop::sample::select(vec![1u8, 1, 1, 0, 2, 2]), idx(model::ZONES.len()), prop::bool::weighted(0.2))
            .prop_map(|(minutes, zone, tag, label, pad)| Foreign::Time { minutes, zone, tag, label, pad }),
        1 => idx(DST_WALLS.len()).prop_map(Foreign::DstWall),
        1 => Just(Foreign::Garbage),
        1 => Just(Foreign::Tasks),
        1 => Just(Foreign::OtherSource),
        1 => (-60i64..60).prop_map(|minutes| Foreign::Newline { minutes }),
    ]
}

fn event_strategy(n_args: usize) -> impl Strategy<Value = Event> {
    prop_oneof![
        12 => prop::sample::select(vec![0u64, 0, 0, 1, 2]).prop_map(|cur_iter| Event::Step { cur_iter }),
        2 => Just(Event::User),
        5 => prop::collection::vec(call_strategy(n_args), 1..5).prop_map(Event::Calls),
        3 => (prop::sample::select(vec![TaskOp::Create, TaskOp::Start, TaskOp::Complete]), any::<bool>())
            .prop_map(|(op, announce)| Event::Task { op, announce }),
        5 => prop_oneof![
            3 => Just(Advance::Interval),
            1 => (1i64..2_000_000).prop_map(|micros| Advance::IntervalPlus { micros }),
            4 => (-90i64..240).prop_map(Advance::Minutes),
            1 => (1i64..1_000_000).prop_map(Advance::Micros),
            1 => (1i64..400).prop_map(Advance::Days),
        ]
        .prop_map(Event::Advance),
        1 => (0usize..4).prop_map(|keep| Event::Compress { keep }),
        2 => prop_oneof![Just(Tokens::Zero), (-2i64..3).prop_map(Tokens::NearThreshold), Just(Tokens::Full)].prop_map(Event::Tokens),
        2 => (foreign_strategy(), prop::bool::weighted(0.3)).prop_map(|(hint, other_agent)| Event::Foreign { hint, other_agent }),
        1 => (idx(model::ZONES.len()), idx(model::FORMATS.len()), idx(INTERVALS.len()))
            .prop_map(|(zone, format, interval)| Event::Reconfigure { zone, format, interval }),
    ]
}

/// Random sessions of up to `max_events` events.
pub fn case_strategy(max_events: usize) -> impl Strategy<Value = Case> {
    (config_strategy(), idx(STARTS.len()), -120i64..120, prop::bool::weighted(0.1), prop::collection::vec(arg_value(), 1..4)).prop_flat_map(
        move |(config, start, minutes, micros, args)| {
            let start_micros = (STARTS[start] + minutes * 60) * 1_000_000 + if micros { 250_000 } else { 0 };
            let n = args.len();
            prop::collection::vec(event_strategy(n), 1..=max_events.max(1)).prop_map(move |events| Case {
                config: config.clone(),
                start_micros,
                args: args.clone(),
                events,
            })
        },
    )
}

// ---------------------------------------------------------------------------
// Writing arguments in many ways
// ---------------------------------------------------------------------------

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn space(rng: &mut Rng, out: &mut String) {
    out.push_str(["", "", " ", "\n  ", "\t"][rng.below(5) as usize]);
}

fn write_raw_str(s: &str, rng: &mut Rng, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        let escape = rng.below(3) == 0;
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' if !escape => out.push_str("\\n"),
            '\t' if !escape => out.push_str("\\t"),
            '/' if escape => out.push_str("\\/"),
            c if (c as u32) < 0x20 || (escape && !c.is_ascii()) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = if rng.below(2) == 0 { write!(out, "\\u{u:04x}") } else { write!(out, "\\u{u:04X}") };
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `v` as JSON text with random whitespace, key order, escapes, and now and
/// then a duplicate key whose later value wins.
fn write_raw(v: &Value, rng: &mut Rng, out: &mut String) {
    match v {
        Value::String(s) => write_raw_str(s, rng, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                space(rng, out);
                write_raw(item, rng, out);
                space(rng, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            for i in (1..keys.len()).rev() {
                keys.swap(i, rng.below(i as u64 + 1) as usize);
            }
            out.push('{');
            let mut first = true;
            for k in keys {
                let mut entry = |value: &Value, out: &mut String, rng: &mut Rng| {
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    space(rng, out);
                    write_raw_str(k, rng, out);
                    space(rng, out);
                    out.push(':');
                    space(rng, out);
                    write_raw(value, rng, out);
                };
                if rng.below(8) == 0 {
                    entry(&json!("shadowed"), out, rng);
                }
                entry(&map[k], out, rng);
            }
            space(rng, out);
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn raw_arguments(v: &Value, format: ArgFormat) -> String {
    let mut rng = Rng(format.seed);
    let mut out = String::new();
    space(&mut rng, &mut out);
    write_raw(v, &mut rng, &mut out);
    space(&mut rng, &mut out);
    if format.truncate {
        // Usually just the closing character; now and then anywhere.
        let bounds: Vec<usize> = out.char_indices().map(|(i, _)| i).filter(|i| *i > 0).collect();
        let cut = match bounds.len() {
            0 => 0,
            n if rng.below(3) == 0 => bounds[rng.below(n as u64) as usize],
            n => bounds[n - 1],
        };
        out.truncate(cut);
        out.push_str(["", " ", "\n"][rng.below(3) as usize]);
    }
    out
}

// ---------------------------------------------------------------------------
// Driving a session
// ---------------------------------------------------------------------------

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
    fn add(&mut self, other: &Stats) {
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
        DIMENSIONS.iter().copied().filter(|d| self.fired.get(d).copied().unwrap_or(0) == 0).collect()
    }
}

/// The four dimensions, as the summary names them.
pub const DIMENSIONS: &[&str] = &["time", "tasks", "context-length", "tool-error"];

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
}

fn model_config(c: &CaseConfig) -> MConfig {
    let tools = TASK_TOOLS[c.task_tools];
    MConfig {
        inject_runtime_state: c.inject,
        timezone: model::ZONES[c.zone].into(),
        time_format: model::FORMATS[c.format].into(),
        time_interval: INTERVALS[c.interval],
        injection_buffer_ratio: c.deprecated_buffer.then_some(0.25 * TRIGGERS[c.trigger]),
        tool_retries_limit: c.limit,
        tool_retries_hint: HINTS[c.hint].into(),
        template: TEMPLATES[c.template].into(),
        injection_source: SOURCES[c.source].into(),
        task_tool_names: tools.iter().map(|s| s.to_string()).collect(),
        extra_fields: c.extra.iter().map(|i| (EXTRAS[*i].0.to_string(), EXTRAS[*i].1.to_string())).collect(),
        emit_hint_event: c.emit,
        strict: c.strict,
        trigger_ratio: TRIGGERS[c.trigger],
        reserve_ratio: 0.1 * TRIGGERS[c.trigger],
        context_buffer_ratio: BUFFERS[c.buffer].min(TRIGGERS[c.trigger] - 0.05),
        compression_tool_enabled: c.compression_tool,
    }
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
    m.insert("extra_fields".into(), Value::Object(cfg.extra_fields.iter().map(|(k, v)| (k.clone(), json!(v))).collect()));
    m.insert("emit_hint_event".into(), json!(cfg.emit_hint_event));
    m.insert("strict".into(), json!(cfg.strict));
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
        MBlock::Hint { source, text } => OwnedBlock::Hint { source: source.clone(), text: text.clone() },
        MBlock::ToolCall { id, name, input } => OwnedBlock::ToolCall { id: id.clone(), name: name.clone(), input: input.clone() },
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
        MBlock::Hint { source, text } => json!({"type": "hint", "source": source, "hint": text}),
        MBlock::ToolCall { id, name, input } => json!({"type": "tool_call", "id": id, "name": name, "input": input}),
        MBlock::ToolResult { id, name, state } => json!({"type": "tool_result", "id": id, "name": name, "output": "", "state": state}),
    }
}

fn core_block(b: &MBlock) -> Block<'_> {
    match b {
        MBlock::Text(_) => Block::Other,
        MBlock::Hint { source, text } => Block::Hint { source: source.as_deref(), text: HintText::Single(text) },
        MBlock::ToolCall { id, name, input } => Block::ToolCall { id, name, input },
        MBlock::ToolResult { id, name, state } => {
            Block::ToolResult { id, name, state: ToolResultState::from_name(state).unwrap_or(ToolResultState::Running) }
        }
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

fn rfc3339(micros: i64) -> String {
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
        let owned = OwnedMessage { role: role_of(role), name: name.into(), blocks: blocks.iter().map(owned_block).collect() };
        if self.store_mirrors {
            let core_blocks: Vec<Block<'_>> = blocks.iter().map(core_block).collect();
            match self.store.push_message(role_of(role), name, &core_blocks) {
                Ok(a) if a.evicted == 0 => t.store.push_message(&self.store.newest(0).expect("just pushed")),
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
        let (Some(last), Some(owned)) = (self.context.last_mut(), self.conv.0.last_mut()) else { return };
        let first = owned.blocks.len();
        if self.store_mirrors {
            let core_blocks: Vec<Block<'_>> = blocks.iter().map(core_block).collect();
            match self.store.append_blocks_to_last(&core_blocks) {
                Ok(a) if a.evicted == 0 => t.store.append_blocks(&self.store.newest(0).expect("appended to"), first),
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
        let tasks: Vec<Value> = std::iter::repeat_n(json!({"state": "pending"}), self.pending as usize)
            .chain(std::iter::repeat_n(json!({"state": "in_progress"}), self.in_progress as usize))
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
        s.insert("context".into(), Value::Array(context));
        s.insert("expected".into(), json!({"hint": expected.hint, "event": expected.event}));
        Value::Object(s).to_string()
    }

    fn foreign_text(&self, hint: &Foreign) -> (String, String) {
        let source = self.cfg.injection_source.clone();
        let time_at = |minutes: i64, zone: &str| model::format_time(self.now + minutes * 60_000_000, zone, &self.cfg.time_format);
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
        }
    }
}

fn model_dims(d: &envaware::Decision) -> Dims {
    Dims {
        time: matches!(d.time, TimeDecision::Inject(_)),
        tasks: d.tasks.is_some(),
        context: d.context.is_some(),
        tool_error: d.tool_error.is_some(),
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
    };
    let mut scenarios = Vec::new();
    let mut events = case.events.iter();
    // One engine per configuration: a `Reconfigure` starts a new one.
    loop {
        let mut buf = FuzzConfigBuf::new();
        let injection = injection_json(&world.cfg).to_string();
        let context = context_json(&world.cfg).to_string();
        let loaded =
            buf.load_injection(&injection).map_err(|e| e.to_string()).and_then(|_| buf.load_context(&context).map_err(|e| e.to_string()));
        let engine = loaded.and_then(|_| Engine::new(buf.config()).map_err(|e| e.to_string())).map_err(|e| Mismatch {
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
                    world.cfg.timezone = model::ZONES[*zone].into();
                    world.cfg.time_format = model::FORMATS[*format].into();
                    world.cfg.time_interval = INTERVALS[*interval];
                    stats.bump("reconfigured");
                    reconfigured = true;
                    break;
                }
                Event::Step { cur_iter } => {
                    step(&mut world, &engine, &mut tracker, *cur_iter, model, &mut stats, &mut scenarios)?;
                }
                Event::User => {
                    world.reply += 1;
                    world.push("user", "user", vec![MBlock::Text("go on".into())], &mut tracker);
                }
                Event::Calls(calls) => {
                    let mut blocks = Vec::new();
                    let mut last_id = None;
                    for call in calls {
                        let name = match TOOLS.get(call.tool) {
                            Some(t) => t.to_string(),
                            None => world.cfg.task_tool_names[0].clone(),
                        };
                        for k in 0..call.repeat {
                            let id = match (call.id_mode, &last_id) {
                                (1, Some(prev)) => String::clone(prev),
                                _ => world.fresh_id(),
                            };
                            if call.id_mode != 2 {
                                let format = ArgFormat { seed: call.format.seed.wrapping_add(k as u64), ..call.format };
                                let input = raw_arguments(&case.args[call.args % case.args.len()], format);
                                blocks.push(MBlock::ToolCall { id: id.clone(), name: name.clone(), input });
                            }
                            blocks.push(MBlock::ToolResult { id: id.clone(), name: name.clone(), state: STATES[call.state] });
                            last_id = Some(id);
                        }
                    }
                    world.append_own(blocks, &mut tracker);
                }
                Event::Task { op, announce } => {
                    match op {
                        TaskOp::Create => world.pending += 1,
                        TaskOp::Start if world.pending > 0 => {
                            world.pending -= 1;
                            world.in_progress += 1;
                        }
                        TaskOp::Complete if world.in_progress > 0 => world.in_progress -= 1,
                        TaskOp::Complete if world.pending > 0 => world.pending -= 1,
                        _ => {}
                    }
                    if *announce {
                        let id = world.fresh_id();
                        let name = world.cfg.task_tool_names[0].clone();
                        let blocks = vec![
                            MBlock::ToolCall { id: id.clone(), name: name.clone(), input: "{\"subject\": \"t\"}".into() },
                            MBlock::ToolResult { id, name, state: "success" },
                        ];
                        world.append_own(blocks, &mut tracker);
                    }
                }
                Event::Advance(a) => {
                    let interval_micros = (world.cfg.time_interval * 3_600_000_000.0) as i64;
                    world.now += match a {
                        Advance::Interval => interval_micros,
                        Advance::IntervalPlus { micros } => interval_micros + micros,
                        Advance::Minutes(m) => m * 60_000_000,
                        Advance::Micros(m) => *m,
                        Advance::Days(d) => d * 86_400_000_000,
                    };
                }
                Event::Compress { keep } => {
                    stats.bump("compressions");
                    world.compress(*keep, &mut tracker);
                }
                Event::Tokens(t) => {
                    world.input_tokens = match t {
                        Tokens::Zero => 0,
                        Tokens::NearThreshold(d) => world.threshold().floor() as i64 + d,
                        Tokens::Full => world.context_size,
                    };
                }
                Event::Foreign { hint, other_agent } => {
                    let (source, text) = world.foreign_text(hint);
                    let block = MBlock::Hint { source: Some(source), text };
                    if *other_agent {
                        world.push("assistant", OTHER_AGENT, vec![block], &mut tracker);
                    } else {
                        world.append_own(vec![block], &mut tracker);
                    }
                }
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
    let core_step = Step { agent_name: AGENT, tasks, cur_iter, input_tokens: world.input_tokens, context_size: world.context_size };
    let now = Timestamp::from_unix_micros(world.now);
    let mut out = vec![0u8; 1 << 16];
    let outcome = match engine.step(&world.conv, &core_step, &mut FixedClock::at(now), &mut (), &mut out) {
        Ok(o) => o,
        Err(e) => {
            return Err(Mismatch { message: format!("the core's hint does not fit 64 KiB: {e}"), scenarios: scenarios.clone() });
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
    };
    let expected = model.step(&world.cfg, &world.context, &m_step);
    scenarios.push(world.scenario(cur_iter, &expected));
    stats.steps += 1;
    for note in &expected.notes {
        stats.bump(note);
    }

    let mut problems = Vec::new();
    let core_warnings: std::collections::BTreeSet<MWarning> = outcome.warnings.iter().filter_map(model_warning).collect();
    if outcome.hint != expected.hint.as_deref() {
        problems.push(format!("hint differs:\n  core:  {:?}\n  model: {:?}", outcome.hint, expected.hint));
    }
    if outcome.event != expected.event {
        problems.push(format!("event differs: core {} model {}", outcome.event, expected.event));
    }
    if expected.hint.is_some() && model_dims(&outcome.decision) != expected.dims {
        problems.push(format!("dimensions differ: core {:?} model {:?}", model_dims(&outcome.decision), expected.dims));
    }
    if core_warnings != expected.warnings {
        problems.push(format!("warnings differ: core {:?} model {:?}", core_warnings, expected.warnings));
    }
    let tracked = tracker.vec.decide(&world.conv, &core_step, Some(now));
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
        let on_store = engine.step(&*world.store, &core_step, &mut FixedClock::at(now), &mut (), &mut out);
        if on_store != Ok(outcome) {
            problems.push(format!("the step on the store differs:\n  store: {on_store:?}\n  vec:   {outcome:?}"));
        }
        let mut out = vec![0u8; 1 << 16];
        let tracked = tracker.store.step(&*world.store, &core_step, &mut FixedClock::at(now), &mut (), &mut out);
        if tracked != Ok(outcome) {
            problems.push(format!("the store's tracker differs:\n  tracker: {tracked:?}\n  vec:     {outcome:?}"));
        }
    }
    if !problems.is_empty() {
        return Err(Mismatch { message: problems.join("\n"), scenarios: scenarios.clone() });
    }

    if let Some(hint) = outcome.hint {
        stats.hints += 1;
        let d = expected.dims;
        for (on, name) in [(d.time, "time"), (d.tasks, "tasks"), (d.context, "context-length"), (d.tool_error, "tool-error")] {
            if on {
                stats.bump(name);
            }
        }
        if d.time
            && world
                .context
                .iter()
                .any(|m| m.blocks.iter().any(|b| matches!(b, MBlock::Hint { text, .. } if text.contains("<current-time>"))))
        {
            stats.bump("time again");
        }
        if !world.cfg.extra_fields.is_empty() {
            stats.bump("with extra fields");
        }
        let block = MBlock::Hint { source: Some(world.cfg.injection_source.clone()), text: hint.to_string() };
        world.append_own(vec![block], tracker);
    } else if world.cfg.inject_runtime_state {
        stats.bump("no hint");
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The runner
// ---------------------------------------------------------------------------

/// How to run.
#[derive(Debug, Clone)]
pub struct FuzzOptions {
    /// Cases to generate.
    pub cases: u32,
    /// The seed of the generator.
    pub seed: u64,
    /// Most events per case.
    pub steps: usize,
    /// The model variant (a broken one to show the fuzzer catches it).
    pub model: Model,
    /// Show progress on standard error.
    pub progress: bool,
    /// Write every step of the passing sessions here, as scenario lines
    /// with the model's `expected` result (to check the model against
    /// AgentScope itself).
    pub emit: Option<std::path::PathBuf>,
}

impl Default for FuzzOptions {
    fn default() -> Self {
        FuzzOptions { cases: 256, seed: 0x5EED, steps: 40, model: Model::FAITHFUL, progress: false, emit: None }
    }
}

/// What a run found.
#[derive(Debug)]
pub struct Report {
    /// Counts over the passing cases.
    pub stats: Stats,
    /// The minimal failing session, if any: the case, and the mismatch.
    pub failure: Option<(Case, Mismatch)>,
}

fn seed_rng(seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes());
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// Runs the fuzzer: generates, compares, and shrinks a failure.
///
/// # Errors
///
/// When `options.emit` cannot be written.
pub fn fuzz(options: &FuzzOptions) -> std::io::Result<Report> {
    let emit = match &options.emit {
        Some(path) => Some(RefCell::new(std::io::BufWriter::new(std::fs::File::create(path)?))),
        None => None,
    };
    let emit_error = RefCell::new(None);
    let config =
        PtConfig { cases: options.cases, failure_persistence: None, max_shrink_iters: 4096, max_global_rejects: 0, ..PtConfig::default() };
    let mut runner = TestRunner::new_with_rng(config, seed_rng(options.seed));
    let stats = RefCell::new(Stats::default());
    let bar = progress_bar(options);
    let shrinking = std::cell::Cell::new(false);
    let started = std::time::Instant::now();
    let result = runner.run(&case_strategy(options.steps), |case| match run_case(&case, options.model) {
        Ok((s, scenarios)) => {
            if !shrinking.get() {
                stats.borrow_mut().add(&s);
                bar.tick(stats.borrow().cases);
                if let Some(w) = &emit {
                    for line in scenarios {
                        if let Err(e) = writeln!(w.borrow_mut(), "{line}") {
                            emit_error.replace(Some(e));
                        }
                    }
                }
            }
            Ok(())
        }
        Err(m) => {
            if !shrinking.get() {
                shrinking.set(true);
                bar.note("mismatch found; shrinking");
            }
            Err(TestCaseError::fail(m.message))
        }
    });
    bar.finish(stats.borrow().cases, started.elapsed());
    if let Some(w) = emit {
        w.into_inner().flush()?;
    }
    if let Some(e) = emit_error.into_inner() {
        return Err(e);
    }
    let failure = match result {
        Ok(()) => None,
        Err(TestError::Fail(_, case)) => {
            let mismatch = run_case(&case, options.model)
                .err()
                .unwrap_or_else(|| Mismatch { message: "flaky: the shrunk case passed".into(), scenarios: vec![] });
            Some((case, mismatch))
        }
        Err(TestError::Abort(reason)) => Some((
            Case { config: config_default(), start_micros: 0, args: vec![], events: vec![] },
            Mismatch { message: format!("aborted: {reason}"), scenarios: vec![] },
        )),
    };
    Ok(Report { stats: stats.into_inner(), failure })
}

fn config_default() -> CaseConfig {
    CaseConfig {
        inject: true,
        zone: 0,
        format: 0,
        interval: 0,
        limit: 3,
        hint: 0,
        template: 0,
        source: 0,
        task_tools: 0,
        extra: vec![],
        emit: true,
        strict: false,
        trigger: 0,
        buffer: 0,
        deprecated_buffer: false,
        compression_tool: false,
        context_size: 0,
    }
}

/// Progress on standard error: a bar on a terminal, else a line every tenth.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    total: u64,
    lines: bool,
    next_line: std::cell::Cell<u64>,
}

fn progress_bar(options: &FuzzOptions) -> Progress {
    let total = u64::from(options.cases);
    if !options.progress {
        return Progress { bar: None, total, lines: false, next_line: 0.into() };
    }
    if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template("fuzz {bar:40} {pos}/{len} cases {elapsed_precise} eta {eta} {msg}") {
            bar.set_style(style);
        }
        Progress { bar: Some(bar), total, lines: false, next_line: 0.into() }
    } else {
        Progress { bar: None, total, lines: true, next_line: (total / 10).max(1).into() }
    }
}

impl Progress {
    fn tick(&self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        } else if self.lines && done >= self.next_line.get() {
            eprintln!("fuzz: {done}/{} cases", self.total);
            self.next_line.set(self.next_line.get() + (self.total / 10).max(1));
        }
    }

    fn note(&self, msg: &'static str) {
        if let Some(bar) = &self.bar {
            bar.set_message(msg);
        } else if self.lines {
            eprintln!("fuzz: {msg}");
        }
    }

    fn finish(&self, done: u64, elapsed: std::time::Duration) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if self.bar.is_some() || self.lines {
            eprintln!("fuzz: {done} cases in {:.1} s", elapsed.as_secs_f64());
        }
    }
}

/// The summary printed at the end of a run.
pub fn summary(stats: &Stats) -> String {
    let mut s = format!("fuzz: {} cases, {} steps, {} hints\n", stats.cases, stats.steps, stats.hints);
    for d in DIMENSIONS {
        let _ = writeln!(s, "  {:<18} {}", d, stats.fired.get(d).copied().unwrap_or(0));
    }
    for (k, v) in &stats.fired {
        if !DIMENSIONS.contains(k) {
            let _ = writeln!(s, "  {:<18} {}", k, v);
        }
    }
    s
}

/// The minimal failing session, for humans.
pub fn describe(case: &Case, mismatch: &Mismatch) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "mismatch: {}", mismatch.message);
    let _ = writeln!(s, "minimal session (start {}):", rfc3339(case.start_micros));
    let _ = writeln!(s, "  config: {:?}", model_config(&case.config));
    let _ = writeln!(s, "  argument pool: {}", case.args.iter().map(Value::to_string).collect::<Vec<_>>().join(" | "));
    for (i, e) in case.events.iter().enumerate() {
        let _ = writeln!(s, "  {i:>3}. {e:?}");
    }
    s
}
