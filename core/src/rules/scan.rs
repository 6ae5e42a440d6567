//! Reading the context back: which hints are ours, what they recorded (a
//! time, the tasks) and what they told of each watched field; the newest
//! first, as the reference's Step 1 reads them.

use super::compiled::ValidConfig;
use super::tasks::{is_task_tool, may_be_task_tool};
use super::Step;
use crate::config::watch::{Decimal, MAX_WATCHES, MAX_WATCH_NAME};
use crate::config::RUNTIME_STATE_PLACEHOLDER;
use crate::conversation::{Block, Conversation, HintText, Message, Role};
use crate::text::{Joined, TagSpan};
use crate::time::CreatedAt;

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
        Block::Hint { .. } => {
            our_hint(cfg, block).map_or(Marks::default(), |text| hint_marks(cfg, text, span))
        }
        Block::ToolCall { name, .. } => Marks { time: false, tasks: is_task_tool(cfg, name) },
        _ => Marks::default(),
    }
}

/// What a hint of ours tells the scan: whether it records a time, and
/// whether it reminded of the tasks.
#[inline(never)]
pub(crate) fn hint_marks<'c>(
    cfg: &ValidConfig<'c>,
    text: HintText<'_>,
    span: &mut Option<TagSpan<'c>>,
) -> Marks {
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
    let span = if cfg!(target_pointer_width = "64") {
        span.get_or_insert_with(|| tag_span(cfg))
    } else {
        &TagSpan::WHOLE
    };
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
    TagSpan::new(
        template.get(..cfg.state_start).unwrap_or(""),
        template.get(end..).unwrap_or(""),
        TIME_TAG,
        TASKS_TAG,
    )
}

/// The tags whose presence in a hint of ours tells the scan that it
/// records a time, and that it reminded of the tasks.
pub(crate) const TIME_TAG: &str = "<current-time>";
pub(crate) const TASKS_TAG: &str = "<tasks>";

/// The text of `block` when it is a hint of ours (its source is the
/// configured `injection_source`): the only blocks whose fields are read.
#[inline(always)]
pub(crate) fn our_hint<'t>(cfg: &ValidConfig<'_>, block: Block<'t>) -> Option<HintText<'t>> {
    match block {
        Block::Hint { source: Some(source), text, .. }
            if source == cfg.config.injection.injection_source =>
        {
            Some(text)
        }
        _ => None,
    }
}

/// The telling of a watched field: what the newest hint of ours holding its
/// tag told of it, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Telling {
    /// The told value (`None`: the tag holds no number).
    pub(crate) value: Option<Decimal>,
    /// The hint's `created_at`.
    pub(crate) at: Option<CreatedAt>,
}

/// What the context told of each watched field, by watch index: `None`
/// when no hint of ours holds its tag.
pub(crate) type Told = [Option<Telling>; MAX_WATCHES];

/// Scans the context newest first, as the reference's Step 1: calls
/// `on_time_hint` with the newest hint of ours that records a time, and
/// returns whether the agent is aware of its tasks.
pub(crate) fn scan<C: Conversation>(
    cfg: &ValidConfig<'_>,
    conv: &C,
    step: &Step<'_>,
    on_time_hint: &mut dyn FnMut(TimeHint<'_>),
) -> bool {
    let (time, aware) = scan_marks(cfg, conv, step);
    let newest_time = time.and_then(|(m, b)| Some((conv.newest(m)?, b)));
    if let Some(text) = newest_time
        .as_ref()
        .and_then(|(msg, b)| msg.block(*b))
        .and_then(|block| our_hint(cfg, block))
    {
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
pub(crate) fn scan_marks<C: Conversation>(
    cfg: &ValidConfig<'_>,
    conv: &C,
    step: &Step<'_>,
) -> (Option<(usize, usize)>, bool) {
    let mut aware = !step.tasks.has_uncompleted();
    let mut time: Option<(usize, usize)> = None;
    let mut at = Cursor { next: 0, msg: None, block: 0, last: false };
    let mut span = None;
    while let Some(b) = next_candidate(cfg, conv, step.agent_name, &mut at) {
        let index = at.next - 1;
        let m = at
            .msg
            .as_ref()
            .and_then(|msg| msg.block(b))
            .map_or(Marks::default(), |block| marks_in(cfg, block, &mut span));
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
pub(crate) fn may_mark(cfg: &ValidConfig<'_>, block: Block<'_>) -> bool {
    match block {
        Block::Hint { source: Some(source), .. } => {
            source.len() == cfg.config.injection.injection_source.len()
        }
        Block::ToolCall { name, .. } => may_be_task_tool(cfg, name),
        _ => false,
    }
}

/// What the newest hint holding each watched field's tag told of it, by
/// the blocks the time rule reads: the full scan's half of the watch rule.
/// A pass of its own, made after the time rule (and only with a watch
/// configured), so that its values are not on the stack while a recorded
/// time is read.
pub(crate) fn scan_told<C: Conversation>(
    cfg: &ValidConfig<'_>,
    conv: &C,
    agent_name: &str,
) -> Told {
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
            let Some(block) = msg.block(b) else { continue };
            let Some(text) = our_hint(cfg, block) else { continue };
            for (i, (slot, (name, _))) in told.iter_mut().zip(watches.iter()).enumerate() {
                let bit = 1 << i; // i < MAX_WATCHES <= 8
                if unsettled & bit == 0 {
                    continue;
                }
                if let Some(value) = told_in(cfg, text, name) {
                    *slot = Some(Telling { value, at: created_at(block) });
                    unsettled &= !bit;
                }
            }
        }
    }
    told
}

/// A hint block's `created_at`.
pub(crate) fn created_at(block: Block<'_>) -> Option<CreatedAt> {
    match block {
        Block::Hint { created_at, .. } => created_at,
        _ => None,
    }
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

/// What the context told of each watched field, by the scan the decisions
/// use (for tools that show it).
pub(crate) fn told<C: Conversation>(cfg: &ValidConfig<'_>, conv: &C, agent_name: &str) -> Told {
    scan_told(cfg, conv, agent_name)
}

/// A watched field's tags on the stack: `"\n<name>"` and `"</name>"`.
struct Tags {
    open: heapless::String<{ MAX_WATCH_NAME + 3 }>,
    close: heapless::String<{ MAX_WATCH_NAME + 3 }>,
}

impl Tags {
    fn new(name: &str) -> Option<Tags> {
        let mut tags = Tags { open: heapless::String::new(), close: heapless::String::new() };
        for (s, parts) in
            [(&mut tags.open, ["\n<", name, ">"]), (&mut tags.close, ["</", name, ">"])]
        {
            for p in parts {
                s.push_str(p).ok()?;
            }
        }
        Some(tags)
    }

    /// `"<name>"`.
    fn open(&self) -> &str {
        self.open.get(1..).unwrap_or("")
    }
}

/// What a hint of ours tells of field `name`: `None` when it does not hold
/// the `<name>` tag (an older hint may), else the leading decimal of the
/// tag's content (`Some(None)`: held, but no number, or no content the
/// time rule's regex would capture). Found as the time dimension finds its
/// recorded time: the tag anywhere, read as `re.search("<name>(.*?)</name>")`;
/// in strict mode only where envaware writes a field (first in the state,
/// or on a line of its own).
pub(crate) fn told_in(
    cfg: &ValidConfig<'_>,
    text: HintText<'_>,
    name: &str,
) -> Option<Option<Decimal>> {
    let tags = Tags::new(name)?;
    let parts = Joined::new(text.parts());
    let (open, close) = (tags.open(), tags.close.as_str());
    let capture = if cfg.config.injection.strict {
        let first = state_start(cfg, &parts).filter(|&at| parts.starts_with_at(at, open));
        let at = first.or_else(|| parts.find(&tags.open, 0).map(|p| p + 1))?;
        parts.capture_at(at, open, close)
    } else {
        if !parts.contains(open) {
            return None;
        }
        parts.capture(open, close)
    };
    Some(capture.and_then(|(start, end)| Decimal::leading(parts.bytes(start, end)).map(|(d, _)| d)))
}
