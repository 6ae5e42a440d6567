//! The rules: what each dimension decides for one step, exactly as
//! AgentScope 2.0.11's `Agent._inject_runtime_state` and
//! `_get_repeated_tool_error` decide them.
//!
//! One file per concern: [`compiled`] holds the configuration as the rules
//! read it ([`ValidConfig`]); [`scan`] reads the context back (hints of
//! ours, what they recorded and told); then one file per dimension:
//! [`time`], [`tasks`], [`context`], [`tool_error`] and [`watch`]. This
//! module holds the types every dimension shares and [`decide_with`], which
//! puts them together.

pub(crate) mod compiled;
pub(crate) mod context;
pub(crate) mod scan;
pub(crate) mod tasks;
pub(crate) mod time;
pub(crate) mod tool_error;
pub(crate) mod watch;

use self::compiled::ValidConfig;
use self::context::context_length;
use self::scan::{scan, scan_told, TimeHint, Told};
use self::tasks::untold_tasks;
use self::time::{clock_reading, time_hint_due};
use self::tool_error::newest_tool_error;
use self::watch::{watched, WatchSet};
use crate::clock::Timestamp;
use crate::config::error::Warning;
use crate::conversation::{Block, Conversation, Message};
use crate::live::{self, LiveFields};

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

const ALL_WARNINGS: [Warning; 6] = [
    Warning::DeprecatedContextBufferRatio,
    Warning::TimezoneFellBackToUtc,
    Warning::RecordedTimezoneFellBackToUtc,
    Warning::TimeFormatNotParseable,
    Warning::LiveFieldDropped,
    Warning::WatchedFieldNotLive,
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
    /// The step's instant, the clock's reading (`None`: unset): a hint
    /// appended for this decision carries it as its `created_at`.
    pub now: Option<Timestamp>,
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
        now: None,
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

/// Decides every dimension for one step; `readings` holds the watched
/// fields' readings (`&()` when none were read: no watch fires).
pub(crate) fn decide<C: Conversation, L: LiveFields + ?Sized>(
    cfg: &ValidConfig<'_>,
    conv: &C,
    step: &Step<'_>,
    now: Option<Timestamp>,
    readings: &L,
) -> Decision {
    let awareness =
        |on_time_hint: &mut dyn FnMut(TimeHint<'_>)| scan(cfg, conv, step, on_time_hint);
    let tool_error = || newest_tool_error(cfg, conv, step.agent_name);
    decide_with(cfg, step, now, readings, awareness, tool_error, || {
        scan_told(cfg, conv, step.agent_name)
    })
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
        return Decision { warnings, now, ..Decision::NONE };
    }
    let at = now;
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
    let watches = &cfg.config.injection.watch;
    if watches.iter().any(|(name, _)| !live::provides(readings, name)) {
        warnings.insert(Warning::WatchedFieldNotLive);
    }
    let watch = if no_fields || watches.is_empty() {
        WatchSet::EMPTY
    } else {
        watched(cfg, readings, at, told)
    };
    Decision {
        time,
        tasks,
        context: context_length(cfg, step),
        tool_error,
        watch,
        warnings,
        now: at,
    }
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

#[cfg(test)]
mod tests;
