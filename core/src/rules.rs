//! The four dimensions, decided exactly as AgentScope 2.0.11's
//! `Agent._inject_runtime_state` and `_get_repeated_tool_error` decide them.

use crate::args::{ArgumentKey, Comparison};
use crate::clock::Timestamp;
use crate::config::{ValidConfig, Warning, RUNTIME_STATE_PLACEHOLDER};
use crate::conversation::{Block, Conversation, HintText, Message, Role, ToolResultState};
use crate::render::LiveFields;
use crate::text::{py_strip, Joined, TagSpan};
use crate::time::{self, Zone};
use crate::watch::{self, Decimal, WatchSet, MAX_WATCHES};

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

/// What the caller knows about an agent's reasoning step besides the
/// context: the input of [`AgentContext`](crate::AgentContext)'s and
/// [`Tracker`](crate::Tracker)'s steps. Both were given their agent's name
/// when built, so the input has no name of its own that could disagree
/// with it. [`StepInput::for_agent`] makes the [`Step`] an
/// [`Engine`](crate::Engine) takes.
///
/// ```
/// use envaware::{Step, StepInput};
///
/// let input = StepInput { tasks: Default::default(), cur_iter: 0, input_tokens: 0, context_size: 8192 };
/// let step: Step<'_> = input.for_agent("rover");
/// assert_eq!((step.agent_name, step.context_size), ("rover", 8192));
/// ```
///
/// A name cannot be given here:
///
/// ```compile_fail,E0560
/// use envaware::StepInput;
///
/// let input = StepInput { agent_name: "rover", tasks: Default::default(), cur_iter: 0, input_tokens: 0, context_size: 8192 };
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StepInput {
    /// The plan's task counts.
    pub tasks: TaskCounts,
    /// The iteration within the current reply; context length is checked at 0.
    pub cur_iter: u64,
    /// Token count of the prepared model input.
    pub input_tokens: i64,
    /// The model's context window, in tokens.
    pub context_size: i64,
}

impl StepInput {
    /// The step of the agent named `agent_name`, for an
    /// [`Engine`](crate::Engine), which serves any agent.
    pub const fn for_agent(self, agent_name: &str) -> Step<'_> {
        let StepInput { tasks, cur_iter, input_tokens, context_size } = self;
        Step { agent_name, tasks, cur_iter, input_tokens, context_size }
    }
}

/// What the caller knows about a reasoning step besides the context, with
/// the agent's name: the input of an [`Engine`](crate::Engine), which
/// serves any agent. The same fields as [`StepInput`], plus the name.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Step<'a> {
    /// This agent's name: the tool-error rule reads only its own last
    /// message, and in strict mode the other rules only its own hints.
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

/// The tool-error dimension's findings: how many times the call failed,
/// and where the rule found the failing tool.
///
/// The tool is kept as a position, not as its name: a [`Decision`] is
/// `Copy` and must not borrow the conversation (the caller appends the
/// hint to it right after the step), and a copy of the name would either
/// bound tool names or take their whole length on every decision's stack.
/// The newest message does not change between deciding and rendering, so
/// the position names the same block then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ToolError {
    /// Consecutive failures of the same call (same tool, same arguments)
    /// that the newest message ends with.
    pub count: u64,
    /// The index, in the newest message, of the newest of those failed
    /// tool results: its `name` is the `{tool_name}` of the hint
    /// ([`ToolError::tool_name`]).
    pub result: usize,
}

impl ToolError {
    /// The failing tool's name, read from `newest`, the message the
    /// decision was made on; `None` when the block at
    /// [`result`](Self::result) is not a tool result (another message).
    pub fn tool_name<'m, M: Message>(&self, newest: &'m M) -> Option<&'m str> {
        match newest.block(self.result)? {
            Block::ToolResult { name, .. } => Some(name),
            _ => None,
        }
    }
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
///
/// The four dimensions are decided exactly as AgentScope 2.0.11's
/// `Agent._inject_runtime_state` and `_get_repeated_tool_error` decide
/// them. What the rules read back is the context: a hint of ours appended
/// earlier records what the agent was told, until a compression removes it.
///
/// - **time**: injected when no hint of ours in the context records a time,
///   or when the recorded time is in the future or older than
///   `time_interval` hours. It fires again once the interval has passed, the
///   clock went back, or a compression removed the hint.
/// - **tasks**: injected when tasks are pending or in progress and the
///   context shows neither a task tool call nor an earlier tasks hint. It
///   does not fire again while either is in the context, even if the counts
///   change: only once a compression removed them.
/// - **context length**: at iteration 0 of a reply, when the input is within
///   the buffer of the compression threshold: at the start of every reply
///   while it stays there.
/// - **tool error**: when the agent's newest message ends with the same call
///   (same tool, same arguments) failing `tool_retries_limit` times in a
///   row. It fires at every step while the newest message still ends that
///   way: until a new tool result or another message arrives, as AgentScope
///   does.
/// - **watch** (envaware's own, off by default: `injection_config.watch`):
///   when a watched live reading moved from the value the newest hint of
///   ours holding its tag told (a change, or crossing `above`/`below` with
///   hysteresis), or nothing was told. It fires again once the reading
///   moves from what that hint told, or a compression removed the hint.
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
    /// The watches that fired (envaware's own; empty with none configured).
    pub watch: WatchSet,
    /// Warnings raised while deciding.
    pub warnings: Warnings,
}

impl Decision {
    /// A decision where nothing fires.
    pub const NONE: Decision = Decision {
        time: TimeDecision::NotDue,
        tasks: None,
        context: None,
        tool_error: None,
        watch: WatchSet::EMPTY,
        warnings: Warnings(0),
    };

    /// Whether any dimension fires (extra fields never trigger by themselves;
    /// a live field only through a watch).
    pub fn fires(&self) -> bool {
        matches!(self.time, TimeDecision::Inject(_))
            || self.tasks.is_some()
            || self.context.is_some()
            || self.tool_error.is_some()
            || !self.watch.is_empty()
    }
}

/// Longest recorded time or zone text the rules read; a longer capture
/// cannot be a time in any supported format, nor a zone name (<= 255 bytes).
const CAPTURE_SCRATCH: usize = 256;

/// What one block tells the scan.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Marks {
    /// A hint of ours that records a time ([`our_hint`] gives its text).
    pub(crate) time: bool,
    /// A task tool call, or a hint of ours that reminded of the tasks.
    pub(crate) tasks: bool,
}

/// Whether the scan reads `msg` at all: only assistant messages, and in
/// strict mode only this agent's own.
pub(crate) fn scanned<M: Message>(cfg: &ValidConfig<'_>, msg: &M, agent_name: &str) -> bool {
    msg.role() == Role::Assistant && !(cfg.config.injection.strict && msg.name() != agent_name)
}

/// What `block` of a scanned message tells the scan (and a tracker, of
/// each block it observes). The block is taken by value: kept whole behind
/// a reference, every block was copied to the stack in pieces and read back
/// whole, a store-forwarding stall per block. A hint of ours, the only
/// block whose text is read, is read out of line. The scan's loop reads
/// only the blocks [`may_mark`] lets through.
#[inline(always)]
pub(crate) fn marks(cfg: &ValidConfig<'_>, block: Block<'_>) -> Marks {
    marks_in(cfg, block, &mut None)
}

/// [`marks`], with the span of the tags in a hint of ours kept in `span`
/// (made at the first hint of ours): the scan reads many.
#[inline(always)]
fn marks_in<'c>(cfg: &ValidConfig<'c>, block: Block<'_>, span: &mut Option<TagSpan<'c>>) -> Marks {
    match block {
        Block::Hint { .. } => our_hint(cfg, block).map_or(Marks::default(), |text| hint_marks(cfg, text, span)),
        Block::ToolCall { name, .. } => Marks { time: false, tasks: is_task_tool(cfg, name) },
        _ => Marks::default(),
    }
}

/// What a hint of ours tells the scan: whether it records a time, and
/// whether it reminded of the tasks.
#[inline(never)]
fn hint_marks<'c>(cfg: &ValidConfig<'c>, text: HintText<'_>, span: &mut Option<TagSpan<'c>>) -> Marks {
    let parts = Joined::new(text.parts());
    if cfg.config.injection.strict {
        // Only where envaware writes a field: the time first, right
        // after the template's opening text; tasks first or on a line
        // of their own (values cannot hold '<' in strict mode).
        let at = state_start(cfg, &parts);
        let first_is = |tag| at.is_some_and(|at| parts.starts_with_at(at, tag));
        let tasks = first_is("<tasks>") || parts.contains("\n<tasks>");
        return Marks { time: first_is("<current-time>"), tasks };
    }
    // On a 64-bit host, where the full scan is measured against the
    // reference; a device, where flash counts more, searches the whole text.
    let span = if cfg!(target_pointer_width = "64") { span.get_or_insert_with(|| tag_span(cfg)) } else { &TagSpan::WHOLE };
    let (time, tasks) = parts.contains_tags_in(TIME_TAG, TASKS_TAG, span);
    Marks { time, tasks }
}

/// Where `<current-time>` and `<tasks>` can start in a hint of ours: not
/// in its template's text before the first `{runtime_state}` nor after it,
/// unless that text holds them. (With more than one `{runtime_state}`, a
/// rendered hint does not end with the text after the first: it is then
/// read to its end.) Out of line: made once a scan.
#[inline(never)]
fn tag_span<'c>(cfg: &ValidConfig<'c>) -> TagSpan<'c> {
    let template = cfg.config.injection.template;
    let end = cfg.state_start.saturating_add(RUNTIME_STATE_PLACEHOLDER.len());
    TagSpan::new(template.get(..cfg.state_start).unwrap_or(""), template.get(end..).unwrap_or(""), TIME_TAG, TASKS_TAG)
}

/// The tags whose presence in a hint of ours tells the scan that it
/// records a time, and that it reminded of the tasks.
const TIME_TAG: &str = "<current-time>";
const TASKS_TAG: &str = "<tasks>";

/// Whether `name` is a task tool's. Most tool names are not, and their
/// bit tells it with one test; the few that may be are compared out of
/// line.
#[inline(always)]
fn is_task_tool(cfg: &ValidConfig<'_>, name: &str) -> bool {
    may_be_task_tool(cfg, name) && in_task_tools(cfg, name)
}

/// Whether `name`'s bit ([`name_bit`]) is a task tool's: `false` tells
/// that `name` is none.
#[inline(always)]
fn may_be_task_tool(cfg: &ValidConfig<'_>, name: &str) -> bool {
    cfg.task_tool_bits & name_bit(name) != 0
}

#[inline(never)]
fn in_task_tools(cfg: &ValidConfig<'_>, name: &str) -> bool {
    cfg.config.injection.task_tool_names.contains(name)
}

/// A bit for `name` from its length and first byte: names with different
/// bits differ.
#[inline(always)]
pub(crate) fn name_bit(name: &str) -> u64 {
    let first = name.as_bytes().first().copied().unwrap_or(0);
    1 << (name.len().wrapping_mul(7).wrapping_add(usize::from(first)) % 64)
}

/// The text of `block` when it is a hint of ours (its source is the
/// configured `injection_source`): the only blocks whose fields are read.
#[inline(always)]
pub(crate) fn our_hint<'t>(cfg: &ValidConfig<'_>, block: Block<'t>) -> Option<HintText<'t>> {
    match block {
        Block::Hint { source: Some(source), text } if source == cfg.config.injection.injection_source => Some(text),
        _ => None,
    }
}

/// What the context told of each watched field, by watch index: the told
/// value, `None` when nothing was told.
pub(crate) type Told = [Option<Decimal>; MAX_WATCHES];

/// Scans the context newest first, as the reference's Step 1: calls
/// `on_time_hint` with the newest hint of ours that records a time, and
/// returns whether the agent is aware of its tasks.
fn scan<C: Conversation>(cfg: &ValidConfig<'_>, conv: &C, step: &Step<'_>, on_time_hint: &mut dyn FnMut(TimeHint<'_>)) -> bool {
    let (time, aware) = scan_marks(cfg, conv, step);
    let newest_time = time.and_then(|(m, b)| Some((conv.newest(m)?, b)));
    if let Some(text) = newest_time.as_ref().and_then(|(msg, b)| msg.block(*b)).and_then(|block| our_hint(cfg, block)) {
        on_time_hint(TimeHint::Text(text));
    }
    aware
}

/// The scan's loop: where the newest hint of ours that records a time is
/// (its message, counted from the newest, and its block), and whether the
/// agent is aware of its tasks. The hint is handed to the time rule after
/// the loop, so that the loop keeps its few values in registers. Each
/// message is read once, as the reference reads it: until the newest time
/// hint's message is read with the tasks known, or to the oldest.
#[inline(never)]
fn scan_marks<C: Conversation>(cfg: &ValidConfig<'_>, conv: &C, step: &Step<'_>) -> (Option<(usize, usize)>, bool) {
    let mut aware = !step.tasks.has_uncompleted();
    let mut time: Option<(usize, usize)> = None;
    let mut at = Cursor { next: 0, msg: None, block: 0, last: false };
    let mut span = None;
    while let Some(b) = next_candidate(cfg, conv, step.agent_name, &mut at) {
        let index = at.next - 1;
        let m = at.msg.as_ref().and_then(|msg| msg.block(b)).map_or(Marks::default(), |block| marks_in(cfg, block, &mut span));
        aware |= m.tasks;
        // The newest message with a time hint settles the time: its last
        // such block (blocks are read oldest first); older ones only tell
        // the tasks.
        if m.time && time.is_none_or(|(t, _)| t == index) {
            time = Some((index, b));
        }
        at.last = aware && time.is_some();
    }
    (time, aware)
}

/// Where [`next_candidate`] reads: the message after the one it holds
/// (counted from the newest), that message if it is scanned, and the block
/// to read next in it.
struct Cursor<M> {
    next: usize,
    msg: Option<M>,
    block: usize,
    /// Whether the held message is the last to read.
    last: bool,
}

/// Moves `at` to the next block of a scanned message that may tell the
/// scan something ([`may_mark`]), and returns its index in `at.msg`;
/// `None` past the oldest message or after the last one. Out of line and
/// with no call in its loops but the conversation's own: the messages and
/// blocks that tell nothing (nearly all) cost a few instructions each, with
/// the loops' values kept in registers.
#[inline(never)]
fn next_candidate<'c, C: Conversation>(
    cfg: &ValidConfig<'_>,
    conv: &'c C,
    agent_name: &str,
    at: &mut Cursor<C::Message<'c>>,
) -> Option<usize> {
    if let Some(msg) = &at.msg {
        if let Some(b) = candidate_in(cfg, msg, at.block) {
            at.block = b + 1;
            return Some(b);
        }
        if at.last {
            return None;
        }
    }
    let mut next = at.next;
    loop {
        // The message is held by the loop, and copied out only with a
        // candidate found in it.
        let msg = conv.newest(next)?;
        next += 1;
        if !scanned(cfg, &msg, agent_name) {
            continue;
        }
        if let Some(b) = candidate_in(cfg, &msg, 0) {
            *at = Cursor { next, msg: Some(msg), block: b + 1, last: false };
            return Some(b);
        }
    }
}

/// The first block of `msg` from `from` on that [`may_mark`]. Inlined
/// into both places on a 64-bit host, where the scan's speed is measured
/// against the reference's; one copy on a device, where flash counts more.
#[cfg_attr(target_pointer_width = "64", inline(always))]
#[cfg_attr(not(target_pointer_width = "64"), inline(never))]
fn candidate_in<M: Message>(cfg: &ValidConfig<'_>, msg: &M, from: usize) -> Option<usize> {
    (from..msg.block_count()).find(|&b| msg.block(b).is_some_and(|block| may_mark(cfg, block)))
}

/// Whether `block` may tell the scan something: `false` when [`marks`]
/// tells nothing of it for certain. A hint whose source has the length of
/// ours, or a tool call whose name's bit is a task tool's.
#[inline(always)]
fn may_mark(cfg: &ValidConfig<'_>, block: Block<'_>) -> bool {
    match block {
        Block::Hint { source: Some(source), .. } => source.len() == cfg.config.injection.injection_source.len(),
        Block::ToolCall { name, .. } => may_be_task_tool(cfg, name),
        _ => false,
    }
}

/// What the newest hint holding each watched field's tag told of it, by
/// the blocks the time rule reads: the full scan's half of the watch rule.
/// A pass of its own, made after the time rule (and only with a watch
/// configured), so that its values are not on the stack while a recorded
/// time is read.
fn scan_told<C: Conversation>(cfg: &ValidConfig<'_>, conv: &C, agent_name: &str) -> Told {
    let watches = &cfg.config.injection.watch;
    let mut told: Told = [None; MAX_WATCHES];
    // One bit per watch whose told value is not found yet.
    let mut unsettled: u8 = ((1u16 << watches.len().min(MAX_WATCHES)) - 1) as u8;
    let mut index = 0;
    while let Some(msg) = conv.newest(index) {
        index += 1;
        if unsettled == 0 {
            break;
        }
        if !scanned(cfg, &msg, agent_name) {
            continue;
        }
        for b in (0..msg.block_count()).rev() {
            let Some(text) = msg.block(b).and_then(|block| our_hint(cfg, block)) else { continue };
            for (i, (slot, (name, _))) in told.iter_mut().zip(watches.iter()).enumerate() {
                let bit = 1 << i; // i < MAX_WATCHES <= 8
                if unsettled & bit == 0 {
                    continue;
                }
                if let Some(value) = watch::told_in(cfg, text, name) {
                    *slot = value;
                    unsettled &= !bit;
                }
            }
        }
    }
    told
}

/// Where the first field starts in a hint envaware rendered: after the
/// template's text before its first `{runtime_state}`. `None` when the hint
/// does not start with that text.
pub(crate) fn state_start(cfg: &ValidConfig<'_>, hint: &Joined<'_>) -> Option<usize> {
    let prefix = cfg.config.injection.template.get(..cfg.state_start)?;
    hint.starts_with_at(0, prefix).then_some(prefix.len())
}

/// What a hint of ours that records a time says, read once: everything
/// the time rule needs from it that does not depend on the clock. The full
/// scan reads the newest such hint at every decision; a
/// [`Tracker`](crate::tracker::Tracker) reads it once, when it is appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeReading {
    /// No time can be read back (no tag, a format mismatch): inject.
    Unreadable,
    /// The recorded time, as microseconds on the scale `now` is compared on.
    Recorded {
        /// Microseconds since the epoch: of the recorded wall clock read as
        /// UTC when `wall_clock`, else of the recorded instant.
        micros: i64,
        /// Whether Python subtracts wall clocks (both datetimes share one
        /// tzinfo) rather than instants.
        wall_clock: bool,
        /// Whether the recorded zone fell back to UTC (a warning).
        zone_fell_back: bool,
    },
}

/// Where the newest hint of ours that records a time is, as the scan hands
/// it to the time rule: its text, or what it was read to earlier.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TimeHint<'t> {
    /// The hint's text, to be read now.
    Text(HintText<'t>),
    /// The hint, already read.
    Read(TimeReading),
}

/// Reads a hint of ours that records a time, as the reference does before
/// comparing: the `<current-time>` capture through `strptime`, and the
/// recorded `<timezone>` for a naive time.
pub(crate) fn read_time_hint(cfg: &ValidConfig<'_>, text: HintText<'_>) -> TimeReading {
    let joined = Joined::new(text.parts());
    let strict = cfg.config.injection.strict;
    let Some((parsed, end)) = recorded_time(cfg, &joined) else { return TimeReading::Unreadable };
    // The recorded zone matters only for a naive recorded time (no %z).
    let (zone, names_configured) = match parsed.utc_offset_micros {
        Some(_) => (Zone::Utc, false),
        None => recorded_zone(cfg, &joined, end),
    };
    let zone_fell_back = parsed.utc_offset_micros.is_none() && !names_configured && zone == Zone::Utc;
    // Python subtracts two datetimes sharing one tzinfo object as wall-clock
    // times: ZoneInfo objects are cached per key, and every unknown name maps
    // to the one `timezone.utc`. Otherwise it subtracts UTC instants.
    // Strict mode always subtracts instants: real time across a DST change.
    let wall_clock = !strict
        && parsed.utc_offset_micros.is_none()
        && match (zone, cfg.zone) {
            (Zone::Utc, Zone::Utc) => true,
            (Zone::Utc, _) | (_, Zone::Utc) => false,
            _ => names_configured,
        };
    TimeReading::Recorded { micros: recorded_micros(parsed, zone, wall_clock), wall_clock, zone_fell_back }
}

/// The recorded time as microseconds on the scale `now` is compared on.
/// Out of line: the zone arithmetic's frame would otherwise stay under the
/// time's capture and parse.
#[inline(never)]
fn recorded_micros(parsed: time::Recorded, zone: Zone, wall_clock: bool) -> i64 {
    if wall_clock {
        naive_micros(parsed.naive)
    } else {
        parsed.to_timestamp(zone).0
    }
}

/// The `<current-time>` capture through `strptime`, and where its
/// `</current-time>` starts. Out of line, so that its scratch and the
/// matcher's state are gone before the zone is read.
#[inline(never)]
fn recorded_time(cfg: &ValidConfig<'_>, joined: &Joined<'_>) -> Option<(time::Recorded, usize)> {
    let (start, end) = match cfg.config.injection.strict {
        true => state_start(cfg, joined).and_then(|at| joined.capture_at(at, "<current-time>", "</current-time>")),
        false => joined.capture("<current-time>", "</current-time>"),
    }?;
    let parsed = match joined.slice(start, end, &mut []) {
        Some(captured) => parse_recorded(cfg, captured),
        // Across parts: copied first, in a frame of its own.
        None => parse_copied(cfg, joined, start, end),
    };
    Some((parsed?, end))
}

/// A `<current-time>` capture that spans parts, copied to a scratch and
/// parsed. Out of line, so that a capture within one part (the usual case)
/// takes no scratch.
#[inline(never)]
fn parse_copied(cfg: &ValidConfig<'_>, joined: &Joined<'_>, start: usize, end: usize) -> Option<time::Recorded> {
    let mut scratch = [0u8; CAPTURE_SCRATCH];
    parse_recorded(cfg, joined.slice(start, end, &mut scratch)?)
}

/// `strptime` on the stripped capture.
fn parse_recorded(cfg: &ValidConfig<'_>, captured: &str) -> Option<time::Recorded> {
    time::parse_time(py_strip(captured), cfg.config.injection.time_format)
}

/// The zone a naive recorded time is read on, and whether its name is the
/// configured one (no `<timezone>`: the configured zone). Out of line, so
/// that its scratch does not stack on the time's.
#[inline(never)]
fn recorded_zone(cfg: &ValidConfig<'_>, joined: &Joined<'_>, time_end: usize) -> (Zone, bool) {
    let configured = cfg.config.injection.timezone;
    let mut scratch = [0u8; CAPTURE_SCRATCH];
    match zone_tag(joined, cfg.config.injection.strict, time_end) {
        Some((s, e)) => match joined.slice(s, e, &mut scratch).map(py_strip) {
            Some(name) => (resolve(name), name == configured),
            // A zone tag too long to hold cannot name a zone.
            None => (Zone::Utc, false),
        },
        None => (cfg.zone, true),
    }
}

/// The recorded `<timezone>`: anywhere, as the reference reads it, or in
/// strict mode only on the line after the recorded time (`time_end` is where
/// its `</current-time>` starts), where envaware writes it.
fn zone_tag(joined: &Joined<'_>, strict: bool, time_end: usize) -> Option<(usize, usize)> {
    match strict {
        true => joined.capture_at(time_end.saturating_add("</current-time>\n".len()), "<timezone>", "</timezone>"),
        false => joined.capture("<timezone>", "</timezone>"),
    }
}

/// What the time rule can know of the configuration before any step, worked
/// out once when it is validated: whether the zone's offset never changes,
/// and the longest elapsed time that is not due, so that a decision compares
/// integers and touches no zone table and no float.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) struct TimeRule {
    /// The zone's UTC offset in microseconds, when it is the same at every
    /// instant (UTC, `Etc/*`): the wall clock is then `now` plus it.
    fixed_offset_micros: Option<i64>,
    /// The largest elapsed time in microseconds, up to 2**53, that Python
    /// does not find due: `0 <= (d / 10**6) / 3600 <= interval`.
    not_due_up_to: i64,
}

/// Elapsed microseconds up to which [`TimeRule::not_due_up_to`] answers
/// (beyond, the elapsed hours are worked out at each decision:
/// [`time::elapsed_hours`]).
const EXACT_MICROS: i64 = 1 << 53;

/// `now` values (Unix microseconds) whose year is within Python's 1..=9999
/// both in UTC and on any zone's wall clock (offsets are under a day):
/// 0001-01-02T00:00Z up to, not including, 9999-12-31T00:00Z.
const SAFE_NOW: core::ops::Range<i64> = (-62_135_596_800 + 86_400) * 1_000_000..(253_402_300_800 - 86_400) * 1_000_000;

impl TimeRule {
    pub(crate) fn new(zone: Zone, interval: f64) -> Self {
        let not_due = |d: i64| time::elapsed_hours(d.unsigned_abs()) <= interval;
        // Dividing by positive constants with correct rounding is monotone:
        // the elapsed times that are not due form a prefix of [0, 2**53].
        let (mut lo, mut hi) = (0, EXACT_MICROS);
        if not_due(hi) {
            lo = hi;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if not_due(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let fixed_offset_micros = time::fixed_offset(zone).map(|secs| i64::from(secs) * 1_000_000);
        TimeRule { fixed_offset_micros, not_due_up_to: if not_due(lo) { lo } else { -1 } }
    }

    /// Python's `0 <= hours <= interval` on the microseconds elapsed from
    /// `then` to `now`.
    fn not_due(&self, now: i64, then: i64, interval: f64) -> bool {
        if let Some(elapsed) = now.checked_sub(then).filter(|d| (0..=EXACT_MICROS).contains(d)) {
            return elapsed <= self.not_due_up_to;
        }
        // A negative elapsed time is never within `0 <= hours`.
        now >= then && time::elapsed_hours(now.abs_diff(then)) <= interval
    }
}

/// The clock's reading as the time rule compares it: the instant, and its
/// wall clock on the configured zone (microseconds of the wall time read as
/// UTC) when it was known without a zone table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Now {
    at: Timestamp,
    wall: Option<i64>,
}

/// Decides the time dimension from the newest recorded time: whether it is
/// due at `now`. Out of line: its 128-bit arithmetic would otherwise widen
/// the frame that stays under the recorded time's reading.
#[inline(never)]
fn time_due(cfg: &ValidConfig<'_>, now: Now, reading: TimeReading, warnings: &mut Warnings) -> bool {
    let TimeReading::Recorded { micros, wall_clock, zone_fell_back } = reading else { return true };
    if zone_fell_back {
        warnings.insert(Warning::RecordedTimezoneFellBackToUtc);
    }
    let now_micros = match (wall_clock, now.wall) {
        (false, _) => now.at.0,
        (true, Some(wall)) => wall,
        (true, None) => naive_micros(time::local_naive(now.at, cfg.zone)),
    };
    !cfg.time_rule.not_due(now_micros, micros, cfg.config.injection.time_interval)
}

/// `now` on `zone`'s wall clock, when Python's `datetime.now(zone)` can
/// hold it: years 1..=9999, both in UTC and in the zone.
/// Out of line: chrono's frame would otherwise stay under the whole scan.
#[inline(never)]
fn python_local(now: Timestamp, zone: Zone) -> Option<chrono::NaiveDateTime> {
    use chrono::Datelike;
    let in_range = |naive: &chrono::NaiveDateTime| (1..=9999).contains(&naive.year());
    let local = time::local_naive(now, zone);
    (in_range(&local) && (zone == Zone::Utc || in_range(&time::local_naive(now, Zone::Utc)))).then_some(local)
}

/// `now` as the time rule compares it, `None` where Python cannot hold it:
/// far from years 1 and 9999 the range needs no calendar, and a fixed
/// offset gives the wall clock; otherwise through chrono and the zone.
fn python_now(rule: &TimeRule, now: Timestamp, zone: Zone) -> Option<Now> {
    if SAFE_NOW.contains(&now.0) {
        return Some(Now { at: now, wall: rule.fixed_offset_micros.map(|off| now.0 + off) });
    }
    python_local(now, zone).map(|local| Now { at: now, wall: Some(naive_micros(local)) })
}

/// Microseconds of a wall time read as UTC: the arithmetic Python does on
/// two datetimes that share a tzinfo.
fn naive_micros(naive: chrono::NaiveDateTime) -> i64 {
    naive.and_utc().timestamp_micros()
}

fn resolve(name: &str) -> Zone {
    time::resolve_zone(name).unwrap_or(Zone::Utc)
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
    let (t, fraction) = crate::ieee::trunc(f);
    let floor = if fraction && f.is_sign_negative() { t - 1 } else { t };
    i > floor
}

pub(crate) fn context_length(cfg: &ValidConfig<'_>, step: &Step<'_>) -> Option<ContextLength> {
    if step.cur_iter != 0 {
        return None;
    }
    let ctx = &cfg.config.context;
    // In floats as Python computes them, rounded as the FPU would
    // (`ieee`: no soft-float arithmetic linked on a device).
    let size = crate::ieee::from_i64(step.context_size);
    // Python's int() truncates toward zero, as `as` does (saturating).
    let trigger_tokens = crate::ieee::trunc(crate::ieee::mul(ctx.trigger_ratio, size)).0;
    let threshold = crate::ieee::mul(crate::ieee::sub(ctx.trigger_ratio, cfg.buffer_ratio), size);
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

/// The tool results of `msg`, newest first, as `(index, id, name, state)`.
fn tool_results<M: Message>(msg: &M) -> impl Iterator<Item = (usize, &str, &str, ToolResultState)> {
    (0..msg.block_count()).rev().filter_map(move |b| match msg.block(b) {
        Some(Block::ToolResult { id, name, state }) => Some((b, id, name, state)),
        _ => None,
    })
}

/// How many calls no looked-up id names a [`CallLookup`] walks past before
/// it gives up walking and searches the whole message for each id.
const PASSED_CALLS: usize = 16;

/// The inputs of a streak's calls, looked up newest result first in one
/// backward walk over the message, so a streak costs one pass, not one
/// search of the message per failed call.
///
/// The walk finds each id's call below the previous one's, which is where
/// it is when calls come in their results' order (AgentScope's own one by
/// one or in parallel batches). What the walk passed is either a call it
/// found for an earlier id of the streak, or one of at most
/// [`PASSED_CALLS`] kept in `passed`. When the input at hand does not
/// repeat the newest one, a later call with the same id, which the walk
/// may have passed, could be the one the reference reads: that verdict is
/// checked with [`call_input`], a whole search, which ends the count when
/// it holds. Messages in another order (or with more calls between) fall
/// back to that search for every id: the same answers, in quadratic time.
struct CallLookup<'m, M: Message> {
    msg: &'m M,
    /// Where the walk resumes: every call at or after it was passed.
    next: usize,
    /// The passed calls no looked-up id named, by position.
    passed: heapless::Vec<usize, PASSED_CALLS>,
    /// Too many calls passed: the walk has given up.
    exhausted: bool,
    /// How arguments compare (the engine's capacity).
    arguments: Comparison,
}

impl<'m, M: Message> CallLookup<'m, M> {
    fn new(msg: &'m M, arguments: Comparison) -> Self {
        CallLookup { msg, next: msg.block_count(), passed: heapless::Vec::new(), exhausted: false, arguments }
    }

    fn call_at(&self, index: usize) -> Option<(&'m str, &'m str)> {
        match self.msg.block(index)? {
            Block::ToolCall { id, input, .. } => Some((id, input)),
            _ => None,
        }
    }

    /// The input of the newest call named `id` the walk can see (`""` for
    /// none): the reference's unless a call found for an earlier id of the
    /// streak has the same id. `None` once the walk has given up.
    fn walk(&mut self, id: &str) -> Option<&'m str> {
        if self.exhausted {
            return None;
        }
        // Passed calls are later than any call below `next`, newest first.
        let newest_passed = self.passed.iter().find_map(|&p| self.call_at(p).filter(|&(call, _)| call == id));
        if let Some((_, input)) = newest_passed {
            return Some(input);
        }
        while self.next > 0 {
            self.next -= 1;
            let Some((call, input)) = self.call_at(self.next) else { continue };
            if call == id {
                return Some(input);
            }
            if self.passed.push(self.next).is_err() {
                self.exhausted = true;
                return None;
            }
        }
        Some("")
    }

    /// Whether the call the reference reads for `id`, the one of the
    /// streak's `k`-th result (`k >= 1`, every earlier one repeating the
    /// newest), has arguments equal to `newest`.
    fn repeats(&mut self, id: &str, newest: ArgumentKey) -> bool {
        // Equal: whether the reference reads this call or one found for
        // an earlier id (which repeats the newest), the arguments repeat.
        if self.walk(id).is_some_and(|input| self.arguments.key(input) == newest) {
            return true;
        }
        self.arguments.key(call_input(self.msg, id)) == newest
    }
}

/// `_get_repeated_tool_error` on the newest message.
pub(crate) fn tool_error<M: Message>(cfg: &ValidConfig<'_>, last: &M, agent_name: &str) -> Option<ToolError> {
    if last.role() != Role::Assistant || last.name() != agent_name {
        return None;
    }
    let (result, _, tool_name, state) = tool_results(last).next()?;
    if state != ToolResultState::Error {
        return None;
    }
    // The trailing results that failed on the same tool, newest first.
    let streak = || {
        tool_results(last).take_while(|&(_, _, name, state)| state == ToolResultState::Error && name == tool_name).map(|(_, id, _, _)| id)
    };
    let limit = cfg.config.injection.tool_retries_limit;
    if (streak().count() as u64) < limit {
        return None;
    }
    let mut ids = streak();
    let mut lookup = CallLookup::new(last, cfg.arguments);
    let first = ids.next()?;
    // No call was found before the first: the walk's input is the reference's.
    let newest = cfg.arguments.key(lookup.walk(first).unwrap_or_else(|| call_input(last, first)));
    let count = 1 + ids.take_while(|id| lookup.repeats(id, newest)).count() as u64;
    (count >= limit).then_some(ToolError { count, result })
}

/// What the context told of each watched field, by the scan the decisions
/// use (for tools that show it).
pub(crate) fn told<C: Conversation>(cfg: &ValidConfig<'_>, conv: &C, agent_name: &str) -> Told {
    scan_told(cfg, conv, agent_name)
}

/// Decides every dimension for one step; `readings` holds the watched
/// fields' readings (`&()` when none were read: no watch fires).
pub(crate) fn decide<C: Conversation, L: LiveFields + ?Sized>(
    cfg: &ValidConfig<'_>,
    conv: &C,
    step: &Step<'_>,
    now: Option<Timestamp>,
    readings: &L,
) -> Decision {
    let awareness = |on_time_hint: &mut dyn FnMut(TimeHint<'_>)| scan(cfg, conv, step, on_time_hint);
    let tool_error = || newest_tool_error(cfg, conv, step.agent_name);
    decide_with(cfg, step, now, readings, awareness, tool_error, || scan_told(cfg, conv, step.agent_name))
}

/// Decides every dimension for one step, with the context's awareness read
/// by `awareness`: it calls its argument with the newest hint of ours that
/// records a time (its text, or what it reads to), if any, and returns
/// whether the agent is aware of its tasks; `tool_error` gives the
/// tool-error rule's verdict on the newest message; `told` gives what was
/// told of each watched field (called only with a watch configured).
/// [`scan`], [`newest_tool_error`] and [`scan_told`] read them from the
/// context; a [`Tracker`](crate::tracker::Tracker) from what it observed.
pub(crate) fn decide_with<L: LiveFields + ?Sized>(
    cfg: &ValidConfig<'_>,
    step: &Step<'_>,
    now: Option<Timestamp>,
    readings: &L,
    awareness: impl FnOnce(&mut dyn FnMut(TimeHint<'_>)) -> bool,
    tool_error: impl FnOnce() -> Option<ToolError>,
    told: impl FnOnce() -> Told,
) -> Decision {
    let mut warnings = config_warnings(cfg);
    if !cfg.config.injection.inject_runtime_state {
        return Decision { warnings, ..Decision::NONE };
    }
    let (mut time, now) = clock_reading(cfg, now);
    let aware = awareness(&mut |hint| {
        if let Some(now) = now {
            if !time_hint_due(cfg, now, hint, &mut warnings) {
                time = TimeDecision::NotDue;
            }
        }
    });
    let tasks = untold_tasks(step, aware);
    let tool_error = tool_error();
    // No field, no reading, and an unavailable reading never fires: with no
    // live fields (`&()`) the watch rule is not even linked. `len`, as
    // `watch::reading` counts the fields.
    #[allow(clippy::len_zero)]
    let no_fields = readings.len() == 0;
    let watch = if no_fields || cfg.config.injection.watch.is_empty() { WatchSet::EMPTY } else { watched(cfg, readings, told) };
    Decision { time, tasks, context: context_length(cfg, step), tool_error, watch, warnings }
}

/// The warnings every decision of `cfg` carries.
pub(crate) fn config_warnings(cfg: &ValidConfig<'_>) -> Warnings {
    cfg.decision_warnings
}

impl Warnings {
    /// The set of `warnings`.
    pub(crate) fn of(warnings: impl Iterator<Item = Warning>) -> Self {
        let mut set = Warnings::default();
        for w in warnings {
            set.insert(w);
        }
        set
    }
}

/// The clock's reading, as the time rule starts from it: the decision when
/// no recorded time says otherwise (no recorded time, first reply or after
/// a compression: inject), and `now` as the rule compares it when it can.
pub(crate) fn clock_reading(cfg: &ValidConfig<'_>, now: Option<Timestamp>) -> (TimeDecision, Option<Now>) {
    match now {
        None => (TimeDecision::Skipped(TimeSkipped::ClockUnset), None),
        Some(now) => match python_now(&cfg.time_rule, now, cfg.zone) {
            None => (TimeDecision::Skipped(TimeSkipped::OutOfRange), None),
            Some(reading) => (TimeDecision::Inject(now), Some(reading)),
        },
    }
}

/// Whether the time is due at `now` against the newest recorded time
/// `hint`, read now if it was not read before.
pub(crate) fn time_hint_due(cfg: &ValidConfig<'_>, now: Now, hint: TimeHint<'_>, warnings: &mut Warnings) -> bool {
    let reading = match hint {
        TimeHint::Text(text) => read_time_hint(cfg, text),
        TimeHint::Read(reading) => reading,
    };
    time_due(cfg, now, reading, warnings)
}

/// The tasks to tell: unfinished ones the agent is not `aware` of.
pub(crate) fn untold_tasks(step: &Step<'_>, aware: bool) -> Option<TaskCounts> {
    (step.tasks.has_uncompleted() && !aware).then_some(step.tasks)
}

/// The tool-error rule on the conversation's newest message.
pub(crate) fn newest_tool_error<C: Conversation>(cfg: &ValidConfig<'_>, conv: &C, agent_name: &str) -> Option<ToolError> {
    conv.newest(0).and_then(|last| tool_error(cfg, &last, agent_name))
}

/// The watches that fire for `readings`, given what was told. Out of line:
/// the told values live in its frame only, never under the time rule's.
#[inline(never)]
fn watched<L: LiveFields + ?Sized>(cfg: &ValidConfig<'_>, readings: &L, told: impl FnOnce() -> Told) -> WatchSet {
    let told = told();
    let mut fired = WatchSet::EMPTY;
    for (i, ((name, w), told)) in cfg.config.injection.watch.iter().zip(&told).enumerate() {
        if w.fires(watch::reading(readings, name), *told) {
            fired.insert(i);
        }
    }
    fired
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, InjectionConfig};
    use crate::conversation::{HintText, SliceConversation, SliceMessage};
    use crate::engine::Engine;
    use crate::tracker::Tracker;

    const AGENT: &str = "rover";

    fn step() -> Step<'static> {
        Step { agent_name: AGENT, tasks: TaskCounts::default(), cur_iter: 1, input_tokens: 0, context_size: 1000 }
    }

    fn engine(limit: u64) -> Engine<'static> {
        Engine::new(Config { injection: InjectionConfig { tool_retries_limit: limit, ..Default::default() }, ..Default::default() })
            .unwrap()
    }

    fn call(id: &'static str, name: &'static str, input: &'static str) -> Block<'static> {
        Block::ToolCall { id, name, input }
    }

    fn failed(id: &'static str, name: &'static str) -> Block<'static> {
        Block::ToolResult { id, name, state: ToolResultState::Error }
    }

    /// The decision of the scan and of a tracker that observed `blocks` as
    /// the agent's one message, which must agree.
    fn tool_error_of(engine: &Engine<'_>, name: &str, blocks: &[Block<'_>]) -> Option<ToolError> {
        let msgs = [SliceMessage { role: Role::Assistant, name, blocks }];
        let conv = SliceConversation(&msgs);
        let scanned = engine.decide(&conv, &step(), None);
        let tracked = Tracker::from_conversation(engine, AGENT, &conv).decide(&conv, &input(&step()), None);
        assert_eq!(scanned, tracked);
        scanned.tool_error
    }

    const NOW: i64 = 1_784_687_400; // 2026-07-22T02:30:00Z
    const SOURCE: &str = crate::config::DEFAULT_INJECTION_SOURCE;

    fn hint(text: &'static str) -> Block<'static> {
        Block::Hint { source: Some(SOURCE), text: HintText::Single(text) }
    }

    /// `body` as envaware renders it with the default template.
    fn framed(body: &str) -> &'static str {
        let prefix = crate::config::DEFAULT_TEMPLATE.split(RUNTIME_STATE_PLACEHOLDER).next().unwrap_or("");
        std::boxed::Box::leak(std::format!("{prefix}{body}\n</system-reminder>").into_boxed_str())
    }

    fn at(seconds: i64) -> Option<Timestamp> {
        Some(Timestamp::from_unix_seconds(seconds))
    }

    fn own<'a>(blocks: &'a [Block<'static>]) -> SliceMessage<'a> {
        SliceMessage { role: Role::Assistant, name: AGENT, blocks }
    }

    /// The scan's decision, checked against a tracker that observed the
    /// same messages.
    fn decide_on(engine: &Engine<'_>, msgs: &[SliceMessage<'_>], step: &Step<'_>, now: Option<Timestamp>) -> Decision {
        let conv = SliceConversation(msgs);
        let scanned = engine.decide(&conv, step, now);
        assert_eq!(Tracker::from_conversation(engine, step.agent_name, &conv).decide(&conv, &input(step), now), scanned);
        scanned
    }

    /// `step` without its agent's name, for a tracker built with it.
    fn input(step: &Step<'_>) -> StepInput {
        StepInput { tasks: step.tasks, cur_iter: step.cur_iter, input_tokens: step.input_tokens, context_size: step.context_size }
    }

    fn with_injection(f: impl FnOnce(&mut InjectionConfig<'static>)) -> Engine<'static> {
        let mut injection = InjectionConfig::default();
        f(&mut injection);
        Engine::new(Config { injection, ..Default::default() }).unwrap()
    }

    #[test]
    fn the_time_is_due_past_the_interval_and_in_the_future_not_at_or_within_it() {
        let engine = engine(3);
        for (recorded, due) in [
            ("<current-time>2026-07-22T02:00:00</current-time>", false), // exactly the interval
            ("<current-time>2026-07-22T01:59:59</current-time>", true),
            ("<current-time>2026-07-22T02:30:00</current-time>", false), // now
            ("<current-time>2026-07-22T02:30:01</current-time>", true),  // the future
            ("<current-time>2026-07-21T02:30:00</current-time>", true),
            ("<current-time>not a time</current-time>", true),
        ] {
            let blocks = [hint(recorded)];
            let d = decide_on(&engine, &[own(&blocks)], &step(), at(NOW));
            let want = if due { TimeDecision::Inject(Timestamp::from_unix_seconds(NOW)) } else { TimeDecision::NotDue };
            assert_eq!(d.time, want, "{recorded}");
            assert_eq!(d.fires(), due, "{recorded}");
        }
        // No recorded time: inject; no clock, or one Python cannot hold: skipped.
        assert_eq!(decide_on(&engine, &[], &step(), at(NOW)).time, TimeDecision::Inject(Timestamp::from_unix_seconds(NOW)));
        assert_eq!(decide_on(&engine, &[], &step(), None).time, TimeDecision::Skipped(TimeSkipped::ClockUnset));
        let far = Some(Timestamp(i64::MAX));
        assert_eq!(decide_on(&engine, &[], &step(), far).time, TimeDecision::Skipped(TimeSkipped::OutOfRange));
        let year_zero = at(-62_135_596_801); // 0000-12-31T23:59:59Z
        assert_eq!(decide_on(&engine, &[], &step(), year_zero).time, TimeDecision::Skipped(TimeSkipped::OutOfRange));
        assert!(matches!(decide_on(&engine, &[], &step(), at(-62_135_596_800)).time, TimeDecision::Inject(_)));
        // In UTC+14 the local year is 10000 before the UTC one is.
        let kiribati = with_injection(|i| i.timezone = "Pacific/Kiritimati");
        let late = at(253_402_300_799 - 3600); // 9999-12-31T22:59:59Z
        assert_eq!(decide_on(&kiribati, &[], &step(), late).time, TimeDecision::Skipped(TimeSkipped::OutOfRange));
        assert!(matches!(decide_on(&engine, &[], &step(), late).time, TimeDecision::Inject(_)));
        // In New York the UTC year is 10000 first: Python cannot hold it either.
        let ny = with_injection(|i| i.timezone = "America/New_York");
        let new_year = at(253_402_300_800 + 3600); // 10000-01-01T01:00Z, 9999-12-31T20:00 in New York
        assert_eq!(decide_on(&ny, &[], &step(), new_year).time, TimeDecision::Skipped(TimeSkipped::OutOfRange));
        assert!(matches!(decide_on(&ny, &[], &step(), at(253_402_300_799)).time, TimeDecision::Inject(_)));
    }

    #[test]
    fn the_newest_recorded_time_counts_and_other_sources_do_not() {
        let engine = engine(3);
        let (old, recent) =
            (hint("<current-time>2026-07-22T01:00:00</current-time>"), hint("<current-time>2026-07-22T02:20:00</current-time>"));
        let foreign = Block::Hint { source: Some("other"), text: HintText::Single("<current-time>2026-07-22T02:20:00</current-time>") };
        let unsourced = Block::Hint { source: None, text: HintText::Single("<current-time>2026-07-22T02:20:00</current-time>") };
        let cases: [(&[Block<'static>], bool); 5] = [
            (&[old, recent], false),
            (&[recent, old], true),
            (&[old, foreign], true),
            (&[old, unsourced], true),
            (&[recent, foreign], false),
        ];
        for (blocks, due) in cases {
            let d = decide_on(&engine, &[own(blocks)], &step(), at(NOW));
            assert_eq!(matches!(d.time, TimeDecision::Inject(_)), due, "{blocks:?}");
        }
        // Newest message first, whatever its blocks' order.
        let older = [recent];
        let newer = [old];
        assert!(matches!(decide_on(&engine, &[own(&older), own(&newer)], &step(), at(NOW)).time, TimeDecision::Inject(_)));
        assert_eq!(decide_on(&engine, &[own(&newer), own(&older)], &step(), at(NOW)).time, TimeDecision::NotDue);
        // A user's message is not read; another agent's is, except in strict mode.
        let user = [SliceMessage { role: Role::User, name: AGENT, blocks: &older }];
        assert!(matches!(decide_on(&engine, &user, &step(), at(NOW)).time, TimeDecision::Inject(_)));
        let other = [SliceMessage { role: Role::Assistant, name: "other", blocks: &older }];
        assert_eq!(engine.decide(&SliceConversation(&other), &step(), at(NOW)).time, TimeDecision::NotDue);
        let strict = with_injection(|i| i.strict = true);
        let framed_recent = [hint(framed("<current-time>2026-07-22T02:20:00</current-time>"))];
        let other = [SliceMessage { role: Role::Assistant, name: "other", blocks: &framed_recent }];
        assert!(matches!(strict.decide(&SliceConversation(&other), &step(), at(NOW)).time, TimeDecision::Inject(_)));
        assert_eq!(decide_on(&strict, &[own(&framed_recent)], &step(), at(NOW)).time, TimeDecision::NotDue);
    }

    #[test]
    fn a_recorded_time_split_across_parts_is_read_back() {
        let engine = with_injection(|i| i.timezone = "Asia/Tokyo");
        // 11:20 in Tokyo is 02:20Z, ten minutes before now.
        for parts in [
            &["<current-time>2026-07-22T11:", "20:00</current-time>\n<timezone>Asia/", "Tokyo</timezone>"][..],
            &["<current-", "time>2026-07-22T11:20:00</current-time>"],
        ] {
            let blocks = [Block::Hint { source: Some(SOURCE), text: HintText::Parts(parts) }];
            assert_eq!(decide_on(&engine, &[own(&blocks)], &step(), at(NOW)).time, TimeDecision::NotDue, "{parts:?}");
        }
        // Read in another zone, the same parts are nine hours off.
        const SPLIT_ZONE: [&str; 2] = ["<current-time>2026-07-22T11:20:00</current-time>\n<timezone>Europe/", "London</timezone>"];
        let blocks = [Block::Hint { source: Some(SOURCE), text: HintText::Parts(&SPLIT_ZONE) }];
        assert!(matches!(decide_on(&engine, &[own(&blocks)], &step(), at(NOW)).time, TimeDecision::Inject(_)));
    }

    #[cfg(feature = "custom-time-format")]
    #[test]
    fn a_recorded_zone_is_read_as_the_reference_reads_it() {
        // 2026-11-01 01:50 EDT was recorded; now is 01:20 EST, 30 minutes later.
        let now = at(1_793_514_000);
        let ny = with_injection(|i| i.timezone = "America/New_York");
        let same = [hint("<current-time>2026-11-01T01:50:00</current-time>\n<timezone>America/New_York</timezone>")];
        let alias = [hint("<current-time>2026-11-01T01:50:00</current-time>\n<timezone>US/Eastern</timezone>")];
        let untagged = [hint("<current-time>2026-11-01T01:50:00</current-time>")];
        // The same name: wall clocks, 30 minutes "in the future", re-injected.
        assert!(matches!(decide_on(&ny, &[own(&same)], &step(), now).time, TimeDecision::Inject(_)));
        assert!(matches!(decide_on(&ny, &[own(&untagged)], &step(), now).time, TimeDecision::Inject(_)));
        // Another name for the same rules: instants, 30 minutes ago.
        assert_eq!(decide_on(&ny, &[own(&alias)], &step(), now).time, TimeDecision::NotDue);
        // Strict mode: always instants.
        let strict = with_injection(|i| (i.timezone, i.strict) = ("America/New_York", true));
        let same_framed = [hint(framed("<current-time>2026-11-01T01:50:00</current-time>\n<timezone>America/New_York</timezone>"))];
        assert_eq!(decide_on(&strict, &[own(&same_framed)], &step(), now).time, TimeDecision::NotDue);
        assert!(matches!(decide_on(&ny, &[own(&same_framed)], &step(), now).time, TimeDecision::Inject(_)));
        // An unknown recorded zone is read as UTC, with a warning: 01:50Z is
        // 4.5 hours before now.
        let unknown = [hint("<current-time>2026-11-01T01:50:00</current-time>\n<timezone>Mars/Base</timezone>")];
        let d = decide_on(&ny, &[own(&unknown)], &step(), now);
        assert!(matches!(d.time, TimeDecision::Inject(_)));
        assert!(d.warnings.contains(Warning::RecordedTimezoneFellBackToUtc));
        let utc = with_injection(|i| i.time_interval = 5.0);
        let d = decide_on(&utc, &[own(&unknown)], &step(), now);
        assert_eq!(d.time, TimeDecision::NotDue);
        assert!(d.warnings.contains(Warning::RecordedTimezoneFellBackToUtc));
        assert!(!decide_on(&utc, &[own(&untagged)], &step(), now).warnings.contains(Warning::RecordedTimezoneFellBackToUtc));
        // A time with its offset needs no zone: the tag is not read.
        let offset = with_injection(|i| (i.timezone, i.time_format) = ("America/New_York", "%Y-%m-%dT%H:%M:%S%z"));
        let tagged = [hint("<current-time>2026-11-01T01:50:00-0400</current-time>\n<timezone>Mars/Base</timezone>")];
        let d = decide_on(&offset, &[own(&tagged)], &step(), now);
        assert_eq!(d.time, TimeDecision::NotDue);
        assert!(!d.warnings.contains(Warning::RecordedTimezoneFellBackToUtc));
    }

    #[cfg(feature = "custom-time-format")]
    #[test]
    fn a_format_that_looks_like_the_default_is_read_as_itself() {
        // Day and month swapped: the text has the default format's form,
        // but it is 2026-12-07, not July 12 (now is July 22).
        let swapped = with_injection(|i| (i.time_format, i.time_interval) = ("%Y-%d-%mT%H:%M:%S", 24.0 * 30.0));
        let recorded = [hint("<current-time>2026-07-12T02:30:00</current-time>")];
        assert!(matches!(decide_on(&swapped, &[own(&recorded)], &step(), at(NOW)).time, TimeDecision::Inject(_)));
        let default = with_injection(|i| i.time_interval = 24.0 * 30.0);
        assert_eq!(decide_on(&default, &[own(&recorded)], &step(), at(NOW)).time, TimeDecision::NotDue);
    }

    #[test]
    fn strict_mode_reads_fields_only_where_envaware_writes_them() {
        let strict = with_injection(|i| i.strict = true);
        let tasks = Step { tasks: TaskCounts { pending: 1, in_progress: 0 }, ..step() };
        let prefix = &crate::config::DEFAULT_TEMPLATE[..strict.config().state_start];
        let hint_of =
            |body: &str| -> &'static str { std::boxed::Box::leak(std::format!("{prefix}{body}\n</system-reminder>").into_boxed_str()) };
        let first = [hint(hint_of("<current-time>2026-07-22T02:20:00</current-time>\n<tasks>t</tasks>"))];
        let d = decide_on(&strict, &[own(&first)], &tasks, at(NOW));
        assert_eq!((d.time, d.tasks), (TimeDecision::NotDue, None));
        // Not first: a value that carries the tag, not a field.
        let later = [hint(hint_of("<robot>x<current-time>2026-07-22T02:20:00</current-time><tasks>t</tasks></robot>"))];
        let d = decide_on(&strict, &[own(&later)], &tasks, at(NOW));
        assert_eq!((matches!(d.time, TimeDecision::Inject(_)), d.tasks), (true, Some(tasks.tasks)));
        // Tasks first, or on a line of their own.
        let tasks_first = [hint(hint_of("<tasks>t</tasks>"))];
        assert_eq!(decide_on(&strict, &[own(&tasks_first)], &tasks, at(NOW)).tasks, None);
        // Without the template's opening text, nothing is read.
        let bare = [hint("<current-time>2026-07-22T02:20:00</current-time>")];
        assert!(matches!(decide_on(&strict, &[own(&bare)], &tasks, at(NOW)).time, TimeDecision::Inject(_)));
        // The default mode reads them anywhere.
        let engine = engine(3);
        let d = decide_on(&engine, &[own(&later)], &tasks, at(NOW));
        assert_eq!((d.time, d.tasks), (TimeDecision::NotDue, None));
    }

    #[test]
    fn a_tool_name_whose_bit_is_no_task_tool_s_is_told_without_a_compare() {
        let cfg = *engine(3).config();
        for name in crate::config::DEFAULT_TASK_TOOL_NAMES {
            assert!(may_be_task_tool(&cfg, name) && is_task_tool(&cfg, name), "{name}");
        }
        // Other lengths or first bytes: rejected by the bit alone.
        for name in ["Bash", "Move", "ReadSensor", "", "TaskLists"] {
            assert!(!may_be_task_tool(&cfg, name), "{name}");
        }
        // A task tool's length and first byte: compared, and no task tool.
        assert!(may_be_task_tool(&cfg, "TaskLisx") && !is_task_tool(&cfg, "TaskLisx"));
        let pending = Step { tasks: TaskCounts { pending: 1, in_progress: 0 }, ..step() };
        let near = [call("c", "TaskLisx", "{}")];
        assert_eq!(decide_on(&engine(3), &[own(&near)], &pending, None).tasks, Some(pending.tasks));
        // The bits follow the configured names, an empty one too.
        let names: &'static [&'static str] = &["", "Plan"];
        let custom = with_injection(|i| i.task_tool_names = crate::StrList::Slice(names));
        assert!(is_task_tool(custom.config(), "") && is_task_tool(custom.config(), "Plan"));
        assert!(!is_task_tool(custom.config(), "TaskList") && !may_be_task_tool(custom.config(), "TaskList"));
    }

    #[test]
    fn the_newest_time_hint_is_read_however_its_message_ends_and_older_messages_still_tell_the_tasks() {
        let engine = engine(3);
        let pending = Step { tasks: TaskCounts { pending: 2, in_progress: 0 }, ..step() };
        let time = hint("<current-time>2026-07-22T02:20:00</current-time>");
        let list = call("c", "TaskList", "{}");
        let bash = call("d", "Bash", "{}");
        // A task call, then other blocks, after the time hint in its message.
        let d = decide_on(&engine, &[own(&[time, list, bash])], &pending, at(NOW));
        assert_eq!((d.time, d.tasks), (TimeDecision::NotDue, None));
        let d = decide_on(&engine, &[own(&[bash, time, bash])], &pending, at(NOW));
        assert_eq!((d.time, d.tasks), (TimeDecision::NotDue, Some(pending.tasks)));
        // Once the time is found, older messages are read for the tasks only:
        // an assistant's task call counts, a user's does not.
        let user_list = [list];
        let user = SliceMessage { role: Role::User, name: AGENT, blocks: &user_list };
        let d = decide_on(&engine, &[own(&[list]), own(&[bash]), own(&[time])], &pending, at(NOW));
        assert_eq!((d.time, d.tasks), (TimeDecision::NotDue, None));
        let d = decide_on(&engine, &[user, own(&[bash]), own(&[time]), own(&[bash])], &pending, at(NOW));
        assert_eq!((d.time, d.tasks), (TimeDecision::NotDue, Some(pending.tasks)));
        // An older time hint is not read once a newer one is found.
        let stale = hint("<current-time>2026-07-20T00:00:00</current-time>");
        let d = decide_on(&engine, &[own(&[stale]), own(&[bash]), own(&[time])], &pending, at(NOW));
        assert_eq!(d.time, TimeDecision::NotDue);
        let d = decide_on(&engine, &[own(&[time]), own(&[stale])], &pending, at(NOW));
        assert_eq!(d.time, TimeDecision::Inject(Timestamp::from_unix_seconds(NOW)));
    }

    #[test]
    fn tasks_are_told_unless_the_context_shows_them_anywhere() {
        let engine = engine(3);
        let pending = Step { tasks: TaskCounts { pending: 2, in_progress: 0 }, ..step() };
        let in_progress = Step { tasks: TaskCounts { pending: 0, in_progress: 1 }, ..step() };
        assert!(!TaskCounts::default().has_uncompleted());
        assert!(pending.tasks.has_uncompleted() && in_progress.tasks.has_uncompleted());
        assert_eq!(decide_on(&engine, &[], &pending, None).tasks, Some(pending.tasks));
        assert_eq!(decide_on(&engine, &[], &in_progress, None).tasks, Some(in_progress.tasks));
        assert_eq!(decide_on(&engine, &[], &step(), None).tasks, None);
        let list = [call("c", "TaskList", "{}")];
        let bash = [call("c", "Bash", "{}")];
        let told = [hint("<tasks>x</tasks>")];
        let time = [hint("<current-time>2026-07-22T02:20:00</current-time>")];
        assert_eq!(decide_on(&engine, &[own(&list)], &pending, None).tasks, None);
        assert_eq!(decide_on(&engine, &[own(&told)], &pending, None).tasks, None);
        assert_eq!(decide_on(&engine, &[own(&bash)], &pending, None).tasks, Some(pending.tasks));
        // Older than the newest recorded time: still read.
        let d = decide_on(&engine, &[own(&list), own(&time)], &pending, at(NOW));
        assert_eq!((d.time, d.tasks), (TimeDecision::NotDue, None));
        // Only assistant messages.
        let user = [SliceMessage { role: Role::User, name: AGENT, blocks: &list }];
        assert_eq!(decide_on(&engine, &user, &pending, None).tasks, Some(pending.tasks));
    }

    #[test]
    fn the_context_length_is_told_at_iteration_0_past_the_buffer() {
        let engine = engine(3); // trigger 0.8, buffer 0.2: told above 600 of 1000
        let at_iter = |cur_iter, input_tokens, in_progress| Step {
            cur_iter,
            input_tokens,
            tasks: TaskCounts { pending: 0, in_progress },
            context_size: 1000,
            ..step()
        };
        let want = |input_tokens, suggest_compression| Some(ContextLength { input_tokens, trigger_tokens: 800, suggest_compression });
        assert_eq!(decide_on(&engine, &[], &at_iter(0, 601, 0), None).context, want(601, false));
        assert_eq!(decide_on(&engine, &[], &at_iter(0, 600, 0), None).context, None);
        assert_eq!(decide_on(&engine, &[], &at_iter(1, 900, 0), None).context, None);
        let tool = Engine::new(Config {
            context: crate::ContextConfig { compression_tool_enabled: true, ..Default::default() },
            ..Default::default()
        })
        .unwrap();
        assert_eq!(decide_on(&tool, &[], &at_iter(0, 601, 0), None).context, want(601, true));
        assert_eq!(decide_on(&tool, &[], &at_iter(0, 601, 1), None).context.map(|c| c.suggest_compression), Some(false));
        let d = Decision { context: want(601, false), ..Decision::NONE };
        assert!(d.fires());
    }

    /// The integer compare the time rule makes agrees with Python's float
    /// one at and around the longest elapsed time not due, and far out.
    #[test]
    fn the_time_rule_s_integer_compare_is_python_s_float_compare() {
        let python = |elapsed: i128, interval: f64| {
            let hours = time::python_total_seconds(elapsed) / 3600.0;
            0.0 <= hours && hours <= interval
        };
        for interval in [0.0, 1e-12, 0.1, 0.25, 1.0 / 3.0, 0.5, 1.0, 7.3, 24.0, 1e6, 2.5e9, 1e300, f64::INFINITY] {
            let rule = TimeRule::new(Zone::Utc, interval);
            let edge = rule.not_due_up_to;
            assert!(edge >= 0, "{interval}");
            for d in [0, 1, edge - 1, edge, edge + 1, edge + 2, EXACT_MICROS - 1, EXACT_MICROS, EXACT_MICROS + 1, -1, i64::MIN, i64::MAX] {
                for then in [0i64, 1_784_687_400_000_000, -5_000_000_000_000_000] {
                    let Some(now) = then.checked_add(d) else { continue };
                    let elapsed = i128::from(now) - i128::from(then);
                    assert_eq!(rule.not_due(now, then, interval), python(elapsed, interval), "interval {interval}, elapsed {d}");
                }
            }
            assert!(edge == EXACT_MICROS || !python(i128::from(edge) + 1, interval), "{interval}");
        }
        // The edges themselves: an hour is 3.6e9 microseconds exactly, and
        // the integer compare reaches 2**53 (about 285 years).
        assert_eq!(TimeRule::new(Zone::Utc, 1.0).not_due_up_to, 3_600_000_000);
        assert_eq!(TimeRule::new(Zone::Utc, 0.0).not_due_up_to, 0);
        assert_eq!(TimeRule::new(Zone::Utc, f64::INFINITY).not_due_up_to, 1 << 53);
        // Only the zones that keep one offset carry it.
        assert_eq!(TimeRule::new(Zone::Utc, 1.0).fixed_offset_micros, Some(0));
        assert_eq!(TimeRule::new(time::resolve_zone("Etc/GMT-3").unwrap(), 1.0).fixed_offset_micros, Some(3 * 3_600_000_000));
        assert_eq!(TimeRule::new(time::resolve_zone("Europe/Berlin").unwrap(), 1.0).fixed_offset_micros, None);
    }

    /// Near years 1 and 9999 `now` goes through the calendar, as before:
    /// Python cannot hold it on one side, and can on the other.
    #[test]
    fn a_clock_near_python_s_range_ends_is_checked_on_the_calendar() {
        let cfg = engine(3);
        let cfg = cfg.config();
        let at = |s: i64| Some(Timestamp::from_unix_seconds(s));
        for (s, in_range) in [
            (-62_135_596_800, true),
            (-62_135_596_801, false),
            (-62_135_596_800 + 86_400, true),
            (253_402_300_799, true),
            (253_402_300_800, false),
            (253_402_300_800 - 86_400, true),
        ] {
            let (time, now) = clock_reading(cfg, at(s));
            assert_eq!(now.is_some(), in_range, "{s}");
            assert_eq!(time == TimeDecision::Skipped(TimeSkipped::OutOfRange), !in_range, "{s}");
        }
        // Between a day after year 1 began and a day before 9999 ended, no
        // calendar is read: a zone with daylight saving then leaves its wall
        // clock to the time rule (`None`), while outside it the calendar gave it.
        let berlin = Config { injection: InjectionConfig { timezone: "Europe/Berlin", ..Default::default() }, ..Default::default() };
        let berlin = Engine::new(berlin).unwrap();
        let micros = |us: i64| Some(Timestamp::from_unix_micros(us));
        let (first, end) = ((-62_135_596_800 + 86_400) * 1_000_000, (253_402_300_800 - 86_400) * 1_000_000);
        for (us, calendar) in [(first - 1, true), (first, false), (0, false), (end - 1, false), (end, true)] {
            let now = clock_reading(berlin.config(), micros(us)).1.unwrap();
            assert_eq!(now.wall.is_some(), calendar, "{us}");
        }
        // A zone that keeps one offset gives its wall clock without the
        // calendar: three hours ahead of UTC in Etc/GMT-3.
        let plus3 = Config { injection: InjectionConfig { timezone: "Etc/GMT-3", ..Default::default() }, ..Default::default() };
        let plus3 = Engine::new(plus3).unwrap();
        let now = clock_reading(plus3.config(), micros(1_784_687_400_000_000)).1.unwrap();
        assert_eq!(now.wall, Some(1_784_698_200_000_000));
        // In a zone ahead of UTC, the last UTC hours of 9999 are year 10000.
        let tokyo = Config { injection: InjectionConfig { timezone: "Asia/Tokyo", ..Default::default() }, ..Default::default() };
        let tokyo = Engine::new(tokyo).unwrap();
        assert!(clock_reading(tokyo.config(), at(253_402_300_799)).1.is_none());
        assert!(clock_reading(tokyo.config(), at(253_402_300_800 - 86_400)).1.is_some());
    }

    #[test]
    fn python_int_float_comparison_and_total_seconds_are_exact() {
        for (i, f, gt) in [
            (5, 4.5, true),
            (4, 4.5, false),
            (-4, -4.5, true),
            (-5, -4.5, false),
            (4, 3.0, true),
            (3, 3.0, false),
            (-3, -3.0, false),
            (-2, -3.0, true),
            (i64::MAX, 9_223_372_036_854_775_808.0, false),
            (i64::MAX, 9_223_372_036_854_774_784.0, true),
            (i64::MIN, -9.3e18, true),
            (i64::MIN, -9_223_372_036_854_775_808.0, false),
            (0, f64::NAN, false),
            (1, f64::NAN, false),
            (0, f64::NEG_INFINITY, true),
            (i64::MAX, f64::INFINITY, false),
            // 2^53 + 1 is not a double: a conversion to float would say "equal".
            (9_007_199_254_740_993, 9_007_199_254_740_992.0, true),
        ] {
            assert_eq!(int_gt_float(i, f), gt, "{i} > {f}");
        }
    }

    #[test]
    fn warnings_keep_one_bit_each_and_injection_off_keeps_only_the_configurations() {
        let mut w = Warnings::default();
        assert!(w.is_empty() && w.iter().next().is_none());
        for (n, warning) in ALL_WARNINGS.into_iter().enumerate() {
            assert!(!w.contains(warning));
            w.insert(warning);
            assert!(w.contains(warning) && !w.is_empty());
            assert_eq!(w.iter().collect::<std::vec::Vec<_>>(), ALL_WARNINGS[..=n]);
            let mut alone = Warnings::default();
            alone.insert(warning);
            assert_eq!(ALL_WARNINGS.iter().filter(|x| alone.contains(**x)).count(), 1);
        }
        let off = with_injection(|i| (i.inject_runtime_state, i.timezone) = (false, "Mars/Base"));
        let pending = Step { tasks: TaskCounts { pending: 1, in_progress: 0 }, cur_iter: 0, input_tokens: 10_000, ..step() };
        let d = decide_on(&off, &[], &pending, at(NOW));
        assert!(!d.fires());
        assert_eq!(d.warnings.iter().collect::<std::vec::Vec<_>>(), [Warning::TimezoneFellBackToUtc]);
        for fired in [
            Decision { time: TimeDecision::Inject(Timestamp(0)), ..Decision::NONE },
            Decision { tasks: Some(TaskCounts::default()), ..Decision::NONE },
            Decision { tool_error: Some(ToolError { count: 3, result: 0 }), ..Decision::NONE },
        ] {
            assert!(fired.fires());
        }
        assert!(!Decision { time: TimeDecision::Skipped(TimeSkipped::ClockUnset), ..Decision::NONE }.fires());
    }

    #[test]
    fn a_call_s_input_is_its_later_duplicate_and_a_missing_call_reads_as_empty() {
        let msg = own(&[]);
        assert_eq!(call_input(&msg, "a"), "");
        let blocks = [call("a", "T", "1"), call("b", "T", "2"), call("a", "T", "3")];
        let msg = own(&blocks);
        assert_eq!((call_input(&msg, "a"), call_input(&msg, "b"), call_input(&msg, "c")), ("3", "2", ""));
        // Three failures whose calls are missing compare as "" and match.
        let engine = engine(3);
        let results = [failed("x", "T"), failed("y", "T"), failed("z", "T")];
        assert_eq!(tool_error_of(&engine, AGENT, &results), Some(ToolError { count: 3, result: 2 }));
    }

    #[test]
    fn the_tool_error_points_at_the_newest_failed_result_and_names_its_tool() {
        let engine = engine(3);
        let blocks = [
            call("a", "Drive", r#"{"m": 1}"#),
            failed("a", "Drive"),
            call("b", "Drive", r#"{"m":1}"#),
            Block::Other,
            failed("b", "Drive"),
            call("c", "Drive", r#"{ "m": 1 }"#),
            failed("c", "Drive"),
            Block::Other,
        ];
        let found = tool_error_of(&engine, AGENT, &blocks).unwrap();
        assert_eq!(found, ToolError { count: 3, result: 6 });
        let msg = SliceMessage { role: Role::Assistant, name: AGENT, blocks: &blocks };
        assert_eq!(found.tool_name(&msg), Some("Drive"));
        // A position that is not a tool result names no tool.
        assert_eq!(ToolError { count: 3, result: 5 }.tool_name(&msg), None);
        assert_eq!(ToolError { count: 3, result: 8 }.tool_name(&msg), None);
        // The rendered hint names it.
        let conv = [msg];
        let mut out = [0u8; 1024];
        let d = engine.decide(&SliceConversation(&conv), &step(), None);
        let hint = engine.render(&d, &SliceConversation(&conv), &(), &mut out).unwrap().unwrap();
        assert!(hint.contains("<tool-error>The last 3 calls to 'Drive' with the same arguments all failed."), "{hint}");
    }

    #[test]
    fn the_streak_counts_only_the_same_tool_failing_with_the_same_arguments() {
        let engine = engine(3);
        // Arguments differ in the oldest failure: two identical, under the limit.
        let differ = [call("a", "T", "1"), failed("a", "T"), call("b", "T", "2"), failed("b", "T"), call("c", "T", "2"), failed("c", "T")];
        assert_eq!(tool_error_of(&engine, AGENT, &differ), None);
        let four = [
            call("a", "T", "2"),
            failed("a", "T"),
            call("b", "T", "2"),
            failed("b", "T"),
            call("c", "T", "2"),
            failed("c", "T"),
            call("d", "T", "2"),
            failed("d", "T"),
        ];
        assert_eq!(tool_error_of(&engine, AGENT, &four), Some(ToolError { count: 4, result: 7 }));
        assert_eq!(tool_error_of(&engine, AGENT, &four[2..]), Some(ToolError { count: 3, result: 5 }));
        assert_eq!(tool_error_of(&engine, AGENT, &four[4..]), None);
        assert_eq!(tool_error_of(&self::engine(4), AGENT, &four[2..]), None);
        assert_eq!(tool_error_of(&self::engine(4), AGENT, &four), Some(ToolError { count: 4, result: 7 }));
        // Another tool's failure in between ends the streak.
        let other = [call("a", "T", "2"), failed("a", "T"), call("x", "U", "2"), failed("x", "U"), call("c", "T", "2"), failed("c", "T")];
        assert_eq!(tool_error_of(&engine, AGENT, &other), None);
        // A success last: nothing.
        let mut ok = four;
        ok[7] = Block::ToolResult { id: "d", name: "T", state: ToolResultState::Success };
        assert_eq!(tool_error_of(&engine, AGENT, &ok), None);
        // Someone else's message, or a user's: nothing.
        assert_eq!(tool_error_of(&engine, "other", &four), None);
        let msgs = [SliceMessage { role: Role::User, name: AGENT, blocks: &four }];
        assert_eq!(engine.decide(&SliceConversation(&msgs), &step(), None).tool_error, None);
    }

    /// `_get_repeated_tool_error` as the reference writes it, with a map
    /// from id to input: the model the one-pass lookup must match.
    fn tool_error_model(blocks: &[Block<'_>], limit: u64) -> Option<ToolError> {
        let results: std::vec::Vec<_> = blocks
            .iter()
            .enumerate()
            .filter_map(|(i, b)| match *b {
                Block::ToolResult { id, name, state } => Some((i, id, name, state)),
                _ => None,
            })
            .collect();
        let &(result, _, tool_name, state) = results.last()?;
        if state != ToolResultState::Error {
            return None;
        }
        let streak: std::vec::Vec<&str> =
            results.iter().rev().take_while(|r| r.3 == ToolResultState::Error && r.2 == tool_name).map(|r| r.1).collect();
        if (streak.len() as u64) < limit {
            return None;
        }
        let mut inputs = std::collections::HashMap::new();
        for b in blocks {
            if let Block::ToolCall { id, input, .. } = *b {
                inputs.insert(id, input);
            }
        }
        let keys: std::vec::Vec<_> = streak.iter().map(|id| crate::args::argument_key(inputs.get(id).copied().unwrap_or(""))).collect();
        let count = keys.iter().take_while(|&&k| k == keys[0]).count() as u64;
        (count >= limit).then_some(ToolError { count, result })
    }

    const IDS: [&str; 24] =
        ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x"];

    #[test]
    fn the_one_pass_lookup_reads_the_calls_the_reference_reads_in_every_order() {
        let engine = engine(3);
        let interleaved: std::vec::Vec<_> = IDS.iter().flat_map(|&id| [call(id, "T", "[1]"), failed(id, "T")]).collect();
        assert_eq!(tool_error_of(&engine, AGENT, &interleaved), Some(ToolError { count: 24, result: 47 }));
        // All calls first (a parallel batch), or in the results' reverse
        // order: 23 calls passed before the first is found.
        let batched: std::vec::Vec<_> = IDS.iter().map(|&id| call(id, "T", " [1]")).chain(IDS.iter().map(|&id| failed(id, "T"))).collect();
        assert_eq!(tool_error_of(&engine, AGENT, &batched), Some(ToolError { count: 24, result: 47 }));
        let reversed: std::vec::Vec<_> =
            IDS.iter().map(|&id| call(id, "T", "[1]")).chain(IDS.iter().rev().map(|&id| failed(id, "T"))).collect();
        assert_eq!(tool_error_of(&engine, AGENT, &reversed), Some(ToolError { count: 24, result: 47 }));
        // A later call with a passed id changes that id's arguments: the
        // reference reads the later one.
        let mut later = interleaved.clone();
        later.push(call("c", "T", "[2]"));
        assert_eq!(tool_error_of(&engine, AGENT, &later), Some(ToolError { count: 21, result: 47 }));
        // A repeated result id: its call was found already and repeats, while
        // an older call of the same id (which the walk finds next) does not.
        let repeated =
            [call("a", "T", "[2]"), call("a", "T", "1"), failed("a", "T"), call("b", "T", "1"), failed("b", "T"), failed("a", "T")];
        assert_eq!(tool_error_of(&engine, AGENT, &repeated), Some(ToolError { count: 3, result: 5 }));
        // Missing calls read as "": the same for each.
        let missing = [failed("a", "T"), failed("b", "T"), call("z", "T", ""), failed("c", "T")];
        assert_eq!(tool_error_of(&engine, AGENT, &missing), Some(ToolError { count: 3, result: 3 }));
        for blocks in [&interleaved[..], &batched, &reversed, &later, &repeated, &missing] {
            assert_eq!(tool_error_of(&engine, AGENT, blocks), tool_error_model(blocks, 3));
        }
    }

    mod scan_model {
        use super::*;
        use crate::conversation::Counted;
        use proptest::prelude::*;

        /// The scan as the reference reads it, block by block, newest
        /// message first, and the messages it reads (`Conversation::newest`
        /// calls): up to the newest time hint's message once the tasks are
        /// known, else past the oldest (the read that finds no message).
        fn model(cfg: &ValidConfig<'_>, msgs: &[SliceMessage<'_>], step: &Step<'_>) -> ((Option<(usize, usize)>, bool), usize) {
            let mut aware = !step.tasks.has_uncompleted();
            let mut time = None;
            for (index, msg) in msgs.iter().rev().enumerate() {
                if scanned(cfg, msg, step.agent_name) {
                    for (b, block) in msg.blocks.iter().enumerate() {
                        let m = marks(cfg, *block);
                        aware |= m.tasks;
                        if m.time && time.is_none_or(|(t, _)| t == index) {
                            time = Some((index, b));
                        }
                    }
                }
                if aware && time.is_some() {
                    return ((time, aware), index + 1);
                }
            }
            ((time, aware), msgs.len() + 1)
        }

        /// Our source with its last byte changed: the same length.
        const NEAR_SOURCE: &str = "{\"label\": \"System\", \"sublabel\": \"Runtime State\"]";

        fn block() -> impl Strategy<Value = Block<'static>> {
            let text = prop_oneof![
                Just("<current-time>2026-07-22T02:20:00</current-time>"),
                Just("<tasks>1 pending</tasks>"),
                Just("no tags"),
                Just("<tasks><current-time>2026-07-22T02:20:00</current-time>"),
            ];
            let framed_text = prop_oneof![
                Just("<current-time>2026-07-22T02:20:00</current-time>\n<tasks>1</tasks>"),
                Just("<tasks>1</tasks>"),
                Just("<context-length>5</context-length>"),
            ]
            .prop_map(framed);
            let source = prop_oneof![4 => Just(Some(SOURCE)), 1 => Just(Some(NEAR_SOURCE)), 1 => Just(Some("permission")), 1 => Just(None)];
            let name = prop_oneof![Just("TaskList"), Just("TaskLisx"), Just("Bash"), Just("TaskCreate")];
            prop_oneof![
                (source, prop_oneof![text, framed_text]).prop_map(|(source, text)| Block::Hint { source, text: HintText::Single(text) }),
                name.prop_map(|name| Block::ToolCall { id: "c", name, input: "{}" }),
                Just(Block::ToolResult { id: "c", name: "Bash", state: ToolResultState::Success }),
                Just(Block::Other),
            ]
        }

        fn message() -> impl Strategy<Value = (Role, &'static str, std::vec::Vec<Block<'static>>)> {
            let role = prop_oneof![3 => Just(Role::Assistant), 1 => Just(Role::User)];
            let name = prop_oneof![3 => Just(AGENT), 1 => Just("other"), 1 => Just("rovex")];
            (role, name, prop::collection::vec(block(), 0..5))
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

            #[test]
            fn the_scan_finds_and_reads_what_a_block_by_block_scan_does(
                msgs in prop::collection::vec(message(), 0..12),
                strict: bool,
                pending in 0u64..2,
            ) {
                let engine = with_injection(|i| i.strict = strict);
                let cfg = engine.config();
                let step = Step { tasks: TaskCounts { pending, in_progress: 0 }, ..step() };
                let msgs: std::vec::Vec<_> = msgs.iter().map(|(role, name, blocks)| SliceMessage { role: *role, name, blocks }).collect();
                let conv = SliceConversation(&msgs);
                let counted = Counted::new(&conv);
                let found = scan_marks(cfg, &counted, &step);
                prop_assert_eq!((found, counted.reads()), model(cfg, &msgs, &step));
            }
        }

        #[test]
        fn a_hint_of_ours_tells_the_tags_it_holds_whatever_its_template_holds() {
            let templates = [
                "<r>{runtime_state}</r>",
                "x<tasks>{runtime_state}<current-time>",
                "<cur{runtime_state}",
                "{runtime_state}",
                "a{runtime_state}b{runtime_state}c",
            ];
            let bodies = ["", "<tasks>1</tasks>", "rent-time>", "<current-time>x</current-time>", "tasks>"];
            for template in templates {
                let engine = with_injection(|i| i.template = template);
                let cfg = engine.config();
                for body in bodies {
                    // Rendered as the template renders it, and other texts.
                    let rendered = std::string::String::from(template).replace("{runtime_state}", body);
                    for text in [rendered.as_str(), body, "<tasks>", "<r><current-time></r>"] {
                        let mut span = None;
                        let m = hint_marks(cfg, HintText::Single(text), &mut span);
                        assert_eq!((m.time, m.tasks), (text.contains(TIME_TAG), text.contains(TASKS_TAG)), "{template:?} {text:?}");
                        // And again with the span the first made.
                        let m = hint_marks(cfg, HintText::Single(text), &mut span);
                        assert_eq!((m.time, m.tasks), (text.contains(TIME_TAG), text.contains(TASKS_TAG)), "{template:?} {text:?}");
                    }
                }
            }
        }

        #[test]
        fn a_block_that_may_not_mark_marks_nothing() {
            let names = ["TaskList", "TaskLisx", "Bash", "", "TaskCreate"];
            let sources = [Some(SOURCE), Some(NEAR_SOURCE), Some("permission"), Some(""), None];
            let texts = [framed("<current-time>x</current-time>\n<tasks>1</tasks>"), "<tasks>", "<current-time>", ""];
            assert_eq!(NEAR_SOURCE.len(), SOURCE.len());
            for strict in [false, true] {
                let engine = with_injection(|i| i.strict = strict);
                let cfg = engine.config();
                let calls = names.map(|name| Block::ToolCall { id: "c", name, input: "{}" });
                let hints = sources.iter().flat_map(|&source| texts.map(|t| Block::Hint { source, text: HintText::Single(t) }));
                let result = Block::ToolResult { id: "c", name: "TaskList", state: ToolResultState::Success };
                for block in calls.into_iter().chain(hints).chain([result, Block::Other]) {
                    let m = marks(cfg, block);
                    assert!(may_mark(cfg, block) || !(m.time || m.tasks), "{block:?}");
                }
                // Some may mark and mark nothing: a near source, a name's bit.
                let near = Block::Hint { source: Some(NEAR_SOURCE), text: HintText::Single("<tasks>") };
                let lisx = Block::ToolCall { id: "c", name: "TaskLisx", input: "{}" };
                for block in [near, lisx] {
                    assert!(may_mark(cfg, block) && !marks(cfg, block).tasks, "{block:?}");
                }
                assert!(!may_mark(cfg, Block::Hint { source: Some("permission"), text: HintText::Single("<tasks>") }));
                assert!(!may_mark(cfg, Block::Hint { source: None, text: HintText::Single("<tasks>") }));
                assert!(!may_mark(cfg, result) && !may_mark(cfg, Block::Other));
                assert!(may_mark(cfg, Block::Hint { source: Some(SOURCE), text: HintText::Single("") }));
                assert!(may_mark(cfg, Block::ToolCall { id: "c", name: "TaskList", input: "{}" }));
            }
        }
    }

    mod lookup_model {
        use super::*;
        use proptest::prelude::*;

        fn block() -> impl Strategy<Value = Block<'static>> {
            // Few ids, tools and inputs, so duplicates and repeats are common;
            // 24 ids so that a walk can pass more than `PASSED_CALLS` calls.
            let id = prop_oneof![4 => 0..4usize, 1 => 0..IDS.len()].prop_map(|i| IDS[i]);
            let name = prop_oneof![4 => Just("T"), 1 => Just("U")];
            let input = prop_oneof![Just("1"), Just(" 1"), Just("2"), Just(""), Just("{")];
            let state = prop_oneof![6 => Just(ToolResultState::Error), 1 => Just(ToolResultState::Success)];
            prop_oneof![
                (id.clone(), name.clone(), input).prop_map(|(id, name, input)| Block::ToolCall { id, name, input }),
                (id, name, state).prop_map(|(id, name, state)| Block::ToolResult { id, name, state }),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

            #[test]
            fn the_one_pass_lookup_matches_the_reference_s_map(blocks in prop::collection::vec(block(), 0..80), limit in 3u64..6) {
                let msgs = [SliceMessage { role: Role::Assistant, name: AGENT, blocks: &blocks }];
                let found = engine(limit).decide(&SliceConversation(&msgs), &step(), None).tool_error;
                prop_assert_eq!(found, tool_error_model(&blocks, limit));
            }
        }
    }

    /// An engine watching `temperature` with `w`.
    fn watching(strict: bool, w: crate::Watch) -> Engine<'static> {
        let list: &'static [(&'static str, crate::Watch)] = std::boxed::Box::leak(std::boxed::Box::new([("temperature", w)]));
        with_injection(|i| (i.strict, i.watch) = (strict, crate::WatchList::Slice(list)))
    }

    fn change(c: i64) -> crate::Watch {
        crate::Watch { change: Decimal::new(c, 0), ..Default::default() }
    }

    /// Whether the watch fires on `msgs` for a `temperature` reading (none:
    /// no such live field), decided by the scan and by a tracker, which
    /// must agree. No clock: only the watch can fire.
    fn watch_fires(engine: &Engine<'_>, msgs: &[SliceMessage<'_>], reading: Option<&str>) -> bool {
        let conv = SliceConversation(msgs);
        let fields = [("robot", "R2"), ("temperature", reading.unwrap_or(""))];
        let live = crate::ExtraFields::Slice(if reading.is_some() { &fields } else { &fields[..1] });
        let scanned = engine.decide_with_readings(&conv, &step(), None, &live);
        let tracked = Tracker::from_conversation(engine, AGENT, &conv).decide_with_readings(&conv, &input(&step()), None, &live);
        assert_eq!(scanned, tracked);
        assert_eq!(scanned.fires(), !scanned.watch.is_empty());
        // Without readings no watch fires.
        assert!(engine.decide(&conv, &step(), None).watch.is_empty());
        scanned.watch.contains(0)
    }

    /// With no watch, or no live field to read, the watch rule does not run:
    /// what was told is not even looked up.
    #[test]
    fn no_watch_or_no_field_skips_the_watch_rule() {
        let watching = watching(false, change(2));
        let fields = crate::ExtraFields::Slice(&[("temperature", "30")]);
        for (engine, live, fires) in [
            (&watching, &fields as &dyn LiveFields, true),
            (&watching, &() as &dyn LiveFields, false),
            (&with_injection(|_| {}), &fields as &dyn LiveFields, false),
        ] {
            let mut asked = false;
            let told = || {
                asked = true;
                [None; MAX_WATCHES]
            };
            let d = decide_with(engine.config(), &step(), None, live, |_| false, || None, told);
            assert_eq!((d.watch.contains(0), asked), (fires, fires));
        }
    }

    #[test]
    fn the_told_value_is_the_newest_hint_of_ours_holding_the_tag() {
        let engine = watching(false, change(2));
        let told20 = [hint("<temperature>20 °C</temperature>")];
        let told25 = [hint("x <temperature> 25.0</temperature>")];
        // Nothing told: a reading fires.
        assert!(watch_fires(&engine, &[], Some("20")));
        assert!(!watch_fires(&engine, &[own(&told20)], Some("21.99 °C")));
        assert!(watch_fires(&engine, &[own(&told20)], Some("22 °C")));
        // The newest message's hint counts, and in a message the last block.
        assert!(!watch_fires(&engine, &[own(&told20), own(&told25)], Some("26")));
        assert!(watch_fires(&engine, &[own(&told25), own(&told20)], Some("26")));
        let both = [told20[0], told25[0]];
        assert!(!watch_fires(&engine, &[own(&both)], Some("26")));
        // A hint of ours without the tag does not hide an older one.
        let untagged = [hint("<current-time>x</current-time>")];
        assert!(!watch_fires(&engine, &[own(&told20), own(&untagged)], Some("21")));
        // Split across parts, as a list of text blocks.
        let parts = [Block::Hint { source: Some(SOURCE), text: HintText::Parts(&["<tempera", "ture>2", "0</temperature>"]) }];
        assert!(!watch_fires(&engine, &[own(&parts)], Some("21")));
    }

    #[test]
    fn a_tag_without_a_number_or_a_capture_tells_nothing() {
        let engine = watching(false, change(2));
        let told20 = [hint("<temperature>20</temperature>")];
        for newest in ["<temperature>unavailable</temperature>", "<temperature>20\n</temperature>", "<temperature>20"] {
            let newer = [hint(newest)];
            // The newest hint holding the tag hides the older 20: nothing told.
            assert!(watch_fires(&engine, &[own(&told20), own(&newer)], Some("20")), "{newest}");
        }
    }

    #[test]
    fn the_told_value_is_read_from_the_blocks_the_time_rule_reads() {
        let engine = watching(false, change(2));
        let told = [hint("<temperature>20</temperature>")];
        let foreign = [Block::Hint { source: Some("other"), text: HintText::Single("<temperature>20</temperature>") }];
        assert!(watch_fires(&engine, &[own(&foreign)], Some("20")));
        let user = [SliceMessage { role: Role::User, name: AGENT, blocks: &told }];
        assert!(watch_fires(&engine, &user, Some("20")));
        let other = [SliceMessage { role: Role::Assistant, name: "other", blocks: &told }];
        assert!(!watch_fires(&engine, &other, Some("20")));
        // Strict mode: only this agent's own hints, and only where envaware
        // writes a field (first in the state, or on a line of its own).
        let strict = watching(true, change(2));
        let first = [hint(framed("<temperature>20</temperature>"))];
        let own_line = [hint(framed("<tasks>t</tasks>\n<temperature>20</temperature>"))];
        let inline = [hint(framed("<tasks>t <temperature>20</temperature></tasks>"))];
        assert!(!watch_fires(&strict, &[own(&first)], Some("20")));
        assert!(!watch_fires(&strict, &[own(&own_line)], Some("20")));
        assert!(watch_fires(&strict, &[own(&inline)], Some("20")));
        let other = [SliceMessage { role: Role::Assistant, name: "other", blocks: &first }];
        assert!(watch_fires(&strict, &other, Some("20")));
    }

    #[test]
    fn an_unavailable_or_missing_reading_never_fires() {
        let engine = watching(false, change(2));
        for reading in [Some(crate::UNAVAILABLE), Some("n/a"), None] {
            assert!(!watch_fires(&engine, &[], reading), "{reading:?}");
        }
    }

    #[test]
    fn above_and_below_fire_on_crossing_with_hysteresis_through_the_decision() {
        let d = |t| Decimal::parse(t);
        let above = watching(false, crate::Watch { above: d("28"), hysteresis: d("0.5").unwrap(), ..Default::default() });
        let below = watching(false, crate::Watch { below: d("10"), hysteresis: d("0.5").unwrap(), ..Default::default() });
        let told = |t: &'static str| [hint(std::boxed::Box::leak(std::format!("<temperature>{t}</temperature>").into_boxed_str()))];
        for (engine, t, v, fires) in [
            (&above, "28", "28.5", true),
            (&above, "27", "28", false),
            (&above, "29", "27.5", true),
            (&above, "29", "27.6", false),
            (&below, "10", "9.5", true),
            (&below, "11", "10", false),
            (&below, "9", "10.5", true),
            (&below, "9", "10.4", false),
        ] {
            let blocks = told(t);
            assert_eq!(watch_fires(engine, &[own(&blocks)], Some(v)), fires, "{t} -> {v}");
        }
    }

    #[test]
    fn a_fired_watch_renders_the_usual_hint_with_the_event_flag() {
        let engine = watching(false, change(2));
        let told = [hint("<temperature>20</temperature>")];
        let conv = SliceConversation(&[own(&told)]);
        let mut live = crate::ExtraFields::Slice(&[("temperature", "23 °C")]);
        let mut out = [0u8; 512];
        let mut clock = crate::FixedClock::at(Timestamp::from_unix_seconds(NOW));
        let outcome = engine.step(&conv, &step(), &mut clock, &mut live, &mut out).unwrap();
        assert!(outcome.decision.watch.contains(0) && outcome.event);
        // The time fired too (no recorded time); the live field is written as with any hint.
        let hint = outcome.hint.unwrap();
        assert!(hint.contains("<current-time>") && hint.ends_with("<temperature>23 °C</temperature>\n</system-reminder>"), "{hint}");
        // Only the watch: no time, since the clock is unset.
        let d = engine.decide_with_readings(&conv, &step(), None, &live);
        assert_eq!(d, Decision { time: TimeDecision::Skipped(TimeSkipped::ClockUnset), watch: d.watch, ..Decision::NONE });
        let hint = engine.render(&d, &conv, &live, &mut out).unwrap().unwrap();
        assert_eq!(hint, framed("<temperature>23 °C</temperature>"));
        assert_eq!(engine.told(&conv, AGENT)[0], Decimal::parse("20"));
        assert_eq!(engine.told(&SliceConversation(&[]), AGENT), [None; MAX_WATCHES]);
    }
}
