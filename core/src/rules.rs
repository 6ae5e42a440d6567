//! The four dimensions, decided exactly as AgentScope 2.0.11's
//! `Agent._inject_runtime_state` and `_get_repeated_tool_error` decide them.
//!
//! - **time**: injected when no hint of ours in the context records a time,
//!   or when the recorded time is in the future or older than
//!   `time_interval` hours;
//! - **tasks**: injected when tasks are pending or in progress and the
//!   context shows neither a task tool call nor an earlier tasks hint;
//! - **context length**: at iteration 0, when the input is within the
//!   buffer of the compression threshold;
//! - **tool error**: when the agent's last message ends with the same call
//!   failing `tool_retries_limit` times in a row.

use crate::args::argument_key;
use crate::clock::Timestamp;
use crate::config::{ValidConfig, Warning};
use crate::conversation::{Block, Conversation, HintText, Message, Role, ToolResultState};
use crate::text::{py_strip, Joined};
use crate::time::{self, Zone};

/// The plan's task counts the tasks rule reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TaskCounts {
    /// Tasks in state `pending` (a task without a state is pending).
    pub pending: u64,
    /// Tasks in state `in_progress`.
    pub in_progress: u64,
}

impl TaskCounts {
    /// Whether any task is unfinished.
    pub fn has_uncompleted(&self) -> bool {
        self.pending > 0 || self.in_progress > 0
    }
}

/// What the caller knows about this reasoning step besides the context.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Step<'a> {
    /// This agent's name: the tool-error rule reads only its own last message.
    pub agent_name: &'a str,
    /// The plan's task counts.
    pub tasks: TaskCounts,
    /// The iteration within the current reply; context length is checked at 0.
    pub cur_iter: u64,
    /// Token count of the prepared model input.
    pub input_tokens: i64,
    /// The model's context window, in tokens.
    pub context_size: i64,
}

/// Why the time dimension was not evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TimeSkipped {
    /// The clock does not know the wall time yet (an RTC never set).
    ClockUnset,
    /// The clock reads a time outside years 1..=9999 (UTC or local), which
    /// Python's `datetime` cannot hold (the reference crashes): a clock
    /// that is wrong, not a time to tell the agent.
    OutOfRange,
}

/// The time dimension's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TimeDecision {
    /// Inject the time read from the clock.
    Inject(Timestamp),
    /// The recorded time is recent enough.
    NotDue,
    /// Not evaluated.
    Skipped(TimeSkipped),
}

/// The context-length dimension's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ContextLength {
    /// The input tokens now.
    pub input_tokens: i64,
    /// `int(trigger_ratio * context_size)`.
    pub trigger_tokens: i64,
    /// Whether to suggest compressing now (tool enabled, nothing in progress).
    pub suggest_compression: bool,
}

/// The tool-error dimension's findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ToolError {
    /// Consecutive identical failures of the newest failing tool (the
    /// renderer reads its name from the conversation again).
    pub count: u64,
}

/// A small set of [`Warning`]s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Warnings(u8);

const ALL_WARNINGS: [Warning; 5] = [
    Warning::DeprecatedContextBufferRatio,
    Warning::TimezoneFellBackToUtc,
    Warning::RecordedTimezoneFellBackToUtc,
    Warning::TimeFormatNotParseable,
    Warning::LiveFieldDropped,
];

impl Warnings {
    fn bit(w: Warning) -> u8 {
        1 << (w as u8)
    }

    /// Adds a warning.
    pub fn insert(&mut self, w: Warning) {
        self.0 |= Self::bit(w);
    }

    /// Whether `w` is present.
    pub fn contains(&self, w: Warning) -> bool {
        self.0 & Self::bit(w) != 0
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// The warnings, in a fixed order.
    pub fn iter(&self) -> impl Iterator<Item = Warning> + '_ {
        ALL_WARNINGS.into_iter().filter(|w| self.contains(*w))
    }
}

/// What the rules decided for one step, before any text is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Decision {
    /// The time dimension.
    pub time: TimeDecision,
    /// The tasks dimension: the counts to remind of.
    pub tasks: Option<TaskCounts>,
    /// The context-length dimension.
    pub context: Option<ContextLength>,
    /// The tool-error dimension.
    pub tool_error: Option<ToolError>,
    /// Warnings raised while deciding.
    pub warnings: Warnings,
}

impl Decision {
    /// A decision where nothing fires.
    pub const NONE: Decision = Decision { time: TimeDecision::NotDue, tasks: None, context: None, tool_error: None, warnings: Warnings(0) };

    /// Whether any dimension fires (extra fields never trigger by themselves).
    pub fn fires(&self) -> bool {
        matches!(self.time, TimeDecision::Inject(_)) || self.tasks.is_some() || self.context.is_some() || self.tool_error.is_some()
    }
}

/// Longest recorded time or zone text the rules read; a longer capture
/// cannot be a time in any supported format, nor a zone name (<= 255 bytes).
const CAPTURE_SCRATCH: usize = 256;

/// What one block tells the scan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    /// A hint of ours that records a time.
    pub(crate) time: bool,
    /// A task tool call, or a hint of ours that reminded of the tasks.
    pub(crate) tasks: bool,
}

/// Whether the scan reads `msg` at all: only assistant messages, and in
/// strict mode only this agent's own.
pub(crate) fn scanned<M: Message>(cfg: &ValidConfig<'_>, msg: &M, agent_name: &str) -> bool {
    msg.role() == Role::Assistant && !(cfg.config.injection.strict && msg.name() != agent_name)
}

/// What `block` of a scanned message tells the scan.
pub(crate) fn marks(cfg: &ValidConfig<'_>, block: &Block<'_>) -> Marks {
    let inj = &cfg.config.injection;
    match block {
        Block::Hint { source: Some(source), text } if *source == inj.injection_source => {
            let parts = Joined::new(text.parts());
            Marks { time: parts.contains("<current-time>"), tasks: parts.contains("<tasks>") }
        }
        Block::ToolCall { name, .. } if inj.task_tool_names.contains(name) => Marks { time: false, tasks: true },
        _ => Marks::default(),
    }
}

/// Scans the context newest first, as the reference's Step 1: calls
/// `on_time_hint` with the newest hint of ours that records a time, and
/// returns whether the agent is aware of its tasks.
fn scan<C: Conversation>(cfg: &ValidConfig<'_>, conv: &C, step: &Step<'_>, on_time_hint: &mut dyn FnMut(HintText<'_>)) -> bool {
    let mut aware = !step.tasks.has_uncompleted();
    let mut time_settled = false;
    let mut index = 0;
    while let Some(msg) = conv.newest(index) {
        index += 1;
        if time_settled && aware {
            break;
        }
        if !scanned(cfg, &msg, step.agent_name) {
            continue;
        }
        for b in (0..msg.block_count()).rev() {
            let Some(block) = msg.block(b) else { continue };
            let m = marks(cfg, &block);
            if !time_settled && m.time {
                if let Block::Hint { text, .. } = block {
                    on_time_hint(text);
                }
                time_settled = true;
            }
            aware |= m.tasks;
        }
    }
    aware
}

/// Decides the time dimension from the newest recorded time.
fn time_due(cfg: &ValidConfig<'_>, now: Timestamp, text: HintText<'_>, warnings: &mut Warnings) -> bool {
    let joined = Joined::new(text.parts());
    let mut scratch = [0u8; CAPTURE_SCRATCH];
    let Some((start, end)) = joined.capture("<current-time>", "</current-time>") else { return true };
    let Some(captured) = joined.slice(start, end, &mut scratch) else { return true };
    let Some(parsed) = time::parse_time(py_strip(captured), cfg.config.injection.time_format) else {
        return true;
    };
    let configured = cfg.config.injection.timezone;
    let mut zone_scratch = [0u8; CAPTURE_SCRATCH];
    // The recorded zone matters only for a naive recorded time (no %z).
    let (name, zone) = match parsed.utc_offset_micros {
        Some(_) => (None, Zone::Utc),
        None => match joined.capture("<timezone>", "</timezone>") {
            Some((s, e)) => match joined.slice(s, e, &mut zone_scratch).map(py_strip) {
                Some(name) => (Some(name), resolve(name)),
                // A zone tag too long to hold cannot name a zone.
                None => (None, Zone::Utc),
            },
            None => (Some(configured), cfg.zone),
        },
    };
    if parsed.utc_offset_micros.is_none() && name != Some(configured) && zone == Zone::Utc {
        warnings.insert(Warning::RecordedTimezoneFellBackToUtc);
    }
    // Python subtracts two datetimes sharing one tzinfo object as wall-clock
    // times: ZoneInfo objects are cached per key, and every unknown name maps
    // to the one `timezone.utc`. Otherwise it subtracts UTC instants.
    let same_tzinfo = parsed.utc_offset_micros.is_none()
        && match (zone, cfg.zone) {
            (Zone::Utc, Zone::Utc) => true,
            (Zone::Utc, _) | (_, Zone::Utc) => false,
            _ => name == Some(configured),
        };
    let elapsed_micros = if same_tzinfo {
        naive_micros(time::local_naive(now, cfg.zone)) - naive_micros(parsed.naive)
    } else {
        i128::from(now.0) - i128::from(parsed.to_timestamp(zone).0)
    };
    let hours = python_total_seconds(elapsed_micros) / 3600.0;
    !(0.0 <= hours && hours <= cfg.config.injection.time_interval)
}

/// Whether Python's `datetime.now(zone)` can hold `now`: years 1..=9999,
/// both in UTC and in the zone.
fn python_can_represent(now: Timestamp, zone: Zone) -> bool {
    use chrono::Datelike;
    let in_range = |naive: chrono::NaiveDateTime| (1..=9999).contains(&naive.year());
    in_range(time::local_naive(now, Zone::Utc)) && in_range(time::local_naive(now, zone))
}

/// Microseconds of a wall time read as UTC: the arithmetic Python does on
/// two datetimes that share a tzinfo.
fn naive_micros(naive: chrono::NaiveDateTime) -> i128 {
    i128::from(naive.and_utc().timestamp_micros())
}

fn resolve(name: &str) -> Zone {
    time::resolve_zone(name).unwrap_or(Zone::Utc)
}

/// `timedelta.total_seconds()`: microseconds / 10**6 as a correctly rounded
/// int/int true division.
fn python_total_seconds(micros: i128) -> f64 {
    const EXACT: i128 = 1 << 53;
    if (-EXACT..=EXACT).contains(&micros) {
        // Both operands exact: one IEEE division is correctly rounded.
        return micros as f64 / 1e6;
    }
    // Beyond 2**53 microseconds (about 285 years) split off whole seconds,
    // which are exact, and round once.
    let secs = micros / 1_000_000;
    let rem = micros % 1_000_000;
    secs as f64 + rem as f64 / 1e6
}

/// Python's `int > float`, exactly (no conversion of the int to float).
fn int_gt_float(i: i64, f: f64) -> bool {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() || f >= TWO_63 {
        return false;
    }
    if f < -TWO_63 {
        return true;
    }
    // In range, `as` truncates toward zero; step down to the floor for a
    // negative non-integer. Then `i > f` exactly when `i > floor(f)`.
    let t = f as i64;
    let floor = if f < 0.0 && (t as f64) != f { t - 1 } else { t };
    i > floor
}

fn context_length(cfg: &ValidConfig<'_>, step: &Step<'_>) -> Option<ContextLength> {
    if step.cur_iter != 0 {
        return None;
    }
    let ctx = &cfg.config.context;
    let size = step.context_size as f64;
    // Python's int() truncates toward zero, as `as` does (saturating).
    let trigger_tokens = (ctx.trigger_ratio * size) as i64;
    let threshold = (ctx.trigger_ratio - cfg.buffer_ratio) * size;
    int_gt_float(step.input_tokens, threshold).then_some(ContextLength {
        input_tokens: step.input_tokens,
        trigger_tokens,
        suggest_compression: ctx.compression_tool_enabled && step.tasks.in_progress == 0,
    })
}

/// The raw input of the call `id` in `msg`; the later of duplicate ids wins,
/// and a missing call reads as `""`, as in the reference's dict lookup.
fn call_input<'m, M: Message>(msg: &'m M, id: &str) -> &'m str {
    // Searching from the end, the first hit is the later duplicate.
    (0..msg.block_count())
        .rev()
        .find_map(|b| match msg.block(b) {
            Some(Block::ToolCall { id: call, input, .. }) if call == id => Some(input),
            _ => None,
        })
        .unwrap_or("")
}

/// The tool results of `msg`, newest first, as `(id, name, state)`.
fn tool_results<M: Message>(msg: &M) -> impl Iterator<Item = (&str, &str, ToolResultState)> {
    (0..msg.block_count()).rev().filter_map(move |b| match msg.block(b) {
        Some(Block::ToolResult { id, name, state }) => Some((id, name, state)),
        _ => None,
    })
}

/// `_get_repeated_tool_error` on the newest message.
fn tool_error<M: Message>(cfg: &ValidConfig<'_>, last: &M, agent_name: &str) -> Option<ToolError> {
    if last.role() != Role::Assistant || last.name() != agent_name {
        return None;
    }
    let (_, tool_name, state) = tool_results(last).next()?;
    if state != ToolResultState::Error {
        return None;
    }
    // The trailing results that failed on the same tool, newest first.
    let streak =
        || tool_results(last).take_while(|&(_, name, state)| state == ToolResultState::Error && name == tool_name).map(|(id, _, _)| id);
    let limit = cfg.config.injection.tool_retries_limit;
    if (streak().count() as u64) < limit {
        return None;
    }
    let mut ids = streak();
    let newest = argument_key(call_input(last, ids.next()?));
    let count = 1 + ids.take_while(|id| argument_key(call_input(last, id)) == newest).count() as u64;
    (count >= limit).then_some(ToolError { count })
}

/// The name of the tool whose failures the newest message ends with.
pub(crate) fn failing_tool<M: Message>(last: &M) -> Option<&str> {
    tool_results(last).next().map(|(_, name, _)| name)
}

/// Decides every dimension for one step.
pub(crate) fn decide<C: Conversation>(cfg: &ValidConfig<'_>, conv: &C, step: &Step<'_>, now: Option<Timestamp>) -> Decision {
    decide_with(cfg, conv, step, now, |on_time_hint| scan(cfg, conv, step, on_time_hint))
}

/// Decides every dimension for one step, with the context's awareness read
/// by `awareness`: it calls its argument with the newest hint of ours that
/// records a time, if any, and returns whether the agent is aware of its
/// tasks. [`scan`] reads it from the whole context; a
/// [`Tracker`](crate::tracker::Tracker) from what it observed.
pub(crate) fn decide_with<C: Conversation>(
    cfg: &ValidConfig<'_>,
    conv: &C,
    step: &Step<'_>,
    now: Option<Timestamp>,
    awareness: impl FnOnce(&mut dyn FnMut(HintText<'_>)) -> bool,
) -> Decision {
    let mut warnings = Warnings::default();
    for w in cfg.warnings() {
        warnings.insert(w);
    }
    if !cfg.config.injection.inject_runtime_state {
        return Decision { warnings, ..Decision::NONE };
    }
    // No recorded time (first reply, or after a compression): inject.
    let mut time = match now {
        None => TimeDecision::Skipped(TimeSkipped::ClockUnset),
        Some(now) if !python_can_represent(now, cfg.zone) => TimeDecision::Skipped(TimeSkipped::OutOfRange),
        Some(now) => TimeDecision::Inject(now),
    };
    let now = match time {
        TimeDecision::Inject(now) => Some(now),
        _ => None,
    };
    let aware = awareness(&mut |text| {
        if let Some(now) = now {
            if !time_due(cfg, now, text, &mut warnings) {
                time = TimeDecision::NotDue;
            }
        }
    });
    let tasks = (step.tasks.has_uncompleted() && !aware).then_some(step.tasks);
    let tool_error = conv.newest(0).and_then(|last| tool_error(cfg, &last, step.agent_name));
    Decision { time, tasks, context: context_length(cfg, step), tool_error, warnings }
}
