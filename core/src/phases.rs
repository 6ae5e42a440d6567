//! The phases of a tracked decision and of a firing step, one function
//! each, for `cargo xtask bench --target` to count the instructions each
//! takes on a device (`tests/bench-target`). Each runs the very code the
//! decision runs ([`Tracker::decide`], [`Engine::render_step`]), from the
//! same state: a phase's count is its share of the whole.
//!
//! Behind the `_bench-phases` feature, hidden from the documentation: not
//! an API.

use crate::clock::{Clock, Timestamp};
use crate::conversation::Conversation;
use crate::engine::{Engine, Outcome};
use crate::live::LiveFields;
use crate::render::HintTooLong;
use crate::rules::scan::TimeHint;
use crate::rules::{self, context, tasks, time as time_rule, tool_error};
use crate::rules::{
    ContextLength, Decision, StepInput, TaskCounts, TimeDecision, ToolError, Warnings,
};
use crate::tracker::Tracker;

/// Reading the clock.
pub fn clock<K: Clock + ?Sized>(clock: &mut K) -> Option<Timestamp> {
    clock.now()
}

/// Checking the tracker observed every change of `conversation`.
pub fn sync<C: Conversation>(tracker: &Tracker<'_>, conversation: &C) -> bool {
    tracker.in_sync(conversation)
}

/// The warnings the configuration gives every decision.
pub fn warnings(tracker: &Tracker<'_>) -> Warnings {
    rules::config_warnings(tracker.engine().config())
}

/// The time rule: the clock's reading on the zone's wall clock, then the
/// compare against the recorded time.
pub fn time(tracker: &Tracker<'_>, now: Option<Timestamp>) -> TimeDecision {
    let cfg = tracker.engine().config();
    let (mut time, now) = time_rule::clock_reading(cfg, now);
    if let (Some(now), Some(reading)) = (now, tracker.recorded()) {
        if !time_rule::time_hint_due(cfg, now, TimeHint::Read(reading), &mut Warnings::default()) {
            time = TimeDecision::NotDue;
        }
    }
    time
}

/// The task rule.
pub fn tasks(tracker: &Tracker<'_>, step: &StepInput) -> Option<TaskCounts> {
    tasks::untold_tasks(&step.for_agent(tracker.agent_name()), tracker.aware_of_tasks())
}

/// The context-length rule.
pub fn context(tracker: &Tracker<'_>, step: &StepInput) -> Option<ContextLength> {
    context::context_length(tracker.engine().config(), &step.for_agent(tracker.agent_name()))
}

/// The tool-error rule on the newest message: a [`Tracker`] worked it out
/// when it observed the message, and reads it back.
pub fn tool_error(tracker: &Tracker<'_>) -> Option<ToolError> {
    tracker.newest_tool_error()
}

/// The tool-error rule run on the newest message of `conversation`, as
/// the full scan does and a [`Tracker`] does once per observed message.
pub fn tool_error_on_newest<C: Conversation>(
    tracker: &Tracker<'_>,
    conversation: &C,
) -> Option<ToolError> {
    tool_error::newest_tool_error(tracker.engine().config(), conversation, tracker.agent_name())
}

/// Rendering a decision that fires: the hint, into `out`.
pub fn render<'b, C: Conversation, L: LiveFields + ?Sized>(
    engine: &Engine<'_>,
    decision: Decision,
    conversation: &C,
    live: &mut L,
    out: &'b mut [u8],
) -> Result<Outcome<'b>, HintTooLong> {
    engine.render_step(decision, conversation, live, out)
}

/// Formatting the time alone, as rendering does: its length in `out`.
pub fn format_time(engine: &Engine<'_>, now: Timestamp, out: &mut [u8]) -> Option<usize> {
    let cfg = engine.config();
    let mut w = crate::text::ByteWriter::new(out);
    crate::time::push_time(&mut w, cfg.config().injection.time_format, now, cfg.zone()).ok()?;
    w.finish().ok().map(str::len)
}
