//! How a replay decides a step: on the device path, the core's [`Tracker`]
//! (what `AgentContext` runs on a device), cross-checked against the full
//! scan ([`Engine::decide`]); or, with `--full-scan`, by the full scan
//! alone.
//!
//! The tracker decides in constant time, but the full scan reads the
//! context back to its newest time hint or task marker: checking it at
//! every step would make the replay quadratic again. So the check runs on
//! a budget of [`CHECK_READS_PER_STEP`] messages per step, on average: a
//! step is checked when the budget saved so far is not negative, and what
//! the scan actually read is then spent (it may overdraw once). The full
//! scans of a whole replay thus read at most `CHECK_READS_PER_STEP` times
//! the steps, plus one context. A context of up to that many messages is
//! checked at every step (every example trace is), and a long session at
//! every step where the scan stops early, and often enough elsewhere to
//! catch a tracker that went wrong (its error persists until evicted).
//!
//! The decider also follows the newest time hint by the picture's rule
//! ([`record::tells_time`]), so that a step's record needs no scan either.

use std::cell::Cell;

use envaware::{Conversation, Decision, Engine, Role, Step, StepInput, Timestamp, Tracker};

use super::context::Context;
use crate::record;
use crate::scenario::{OwnedMessage, Readings};

/// Messages the cross-check's full scan may read per step, on average.
pub const CHECK_READS_PER_STEP: i64 = 64;

/// What the cross-check has done so far; carried across configurations.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CrossCheck {
    /// Messages the full scan may still read (negative: overdrawn).
    credit: i64,
    /// Steps checked against the full scan.
    pub checked: usize,
    /// Messages the full scans read, in all.
    pub scanned: u64,
    /// The most messages one tracker decision read.
    pub tracker_reads: usize,
}

/// The tracker and the full scan decided a step differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disagreement {
    /// The tracker's decision.
    pub tracker: Decision,
    /// The full scan's.
    pub full_scan: Decision,
}

/// Decides the steps of one configuration; told of every change of the
/// context by [`Context`]'s methods.
pub(super) struct Decider<'c> {
    engine: Engine<'c>,
    agent_name: &'c str,
    /// `None` with `--full-scan`.
    tracker: Option<Tracker<'c>>,
    check: CrossCheck,
    /// The newest time hint by the picture's rule: message and block.
    time_hint: Option<(u64, usize)>,
}

impl<'c> Decider<'c> {
    /// A decider that has observed all of `context`; `check` is `None` for
    /// the full scan alone.
    pub(super) fn new(
        engine: Engine<'c>,
        agent_name: &'c str,
        context: &Context,
        check: Option<CrossCheck>,
    ) -> Self {
        let tracker = check.map(|_| Tracker::from_conversation(&engine, agent_name, context));
        let mut decider = Decider {
            engine,
            agent_name,
            tracker,
            check: check.unwrap_or_default(),
            time_hint: None,
        };
        decider.find_time_hint(context);
        decider
    }

    /// The engine of this configuration.
    pub(super) fn engine(&self) -> &Engine<'c> {
        &self.engine
    }

    /// The cross-check so far (`None` with `--full-scan`).
    pub(super) fn check(&self) -> Option<CrossCheck> {
        self.tracker.map(|_| self.check)
    }

    /// The newest message of `context` is new.
    pub(super) fn pushed(&mut self, context: &Context) {
        let Some(newest) = context.newest(0) else { return };
        if let Some(tracker) = &mut self.tracker {
            tracker.push_message(newest);
        }
        self.note_time_hints(context.newest_seq(), newest, 0);
    }

    /// Blocks from index `first` on were appended to the newest message.
    pub(super) fn appended(&mut self, context: &Context, first: usize) {
        let Some(newest) = context.newest(0) else { return };
        if let Some(tracker) = &mut self.tracker {
            tracker.append_blocks(newest, first);
        }
        self.note_time_hints(context.newest_seq(), newest, first);
    }

    /// The `count` oldest messages were evicted.
    pub(super) fn evicted(&mut self, context: &Context, count: usize) {
        if let Some(tracker) = &mut self.tracker {
            tracker.evict_oldest(count);
        }
        if self.time_hint.is_some_and(|(seq, _)| context.at(seq).is_none()) {
            self.time_hint = None;
        }
    }

    /// The whole context was replaced.
    pub(super) fn replaced(&mut self, context: &Context) {
        if let Some(tracker) = &mut self.tracker {
            *tracker = Tracker::from_conversation(&self.engine, self.agent_name, context);
        }
        self.find_time_hint(context);
    }

    fn find_time_hint(&mut self, context: &Context) {
        self.time_hint = None;
        for seq in context.seqs() {
            if let Some(msg) = context.at(seq) {
                self.note_time_hints(seq, msg, 0);
            }
        }
    }

    fn note_time_hints(&mut self, seq: u64, msg: &OwnedMessage, first: usize) {
        if msg.role != Role::Assistant {
            return;
        }
        let source = self.engine.config().config().injection.injection_source;
        let newest = msg
            .blocks
            .iter()
            .enumerate()
            .skip(first)
            .rev()
            .find(|(_, b)| record::tells_time(b, source).is_some());
        if let Some((block, _)) = newest {
            self.time_hint = Some((seq, block));
        }
    }

    /// The text of the newest time hint by the picture's rule.
    pub(super) fn time_hint<'x>(&self, context: &'x Context) -> Option<&'x str> {
        let (seq, block) = self.time_hint?;
        let source = self.engine.config().config().injection.injection_source;
        context.at(seq)?.blocks.get(block).and_then(|b| record::tells_time(b, source))
    }

    /// Decides a step: by the tracker, checked against the full scan
    /// within the budget, or by the full scan alone.
    /// `readings` holds the watched fields' readings.
    pub(super) fn decide(
        &mut self,
        context: &Context,
        step: &Step<'_>,
        now: Option<Timestamp>,
        readings: &Readings,
    ) -> Result<Decision, Box<Disagreement>> {
        let Some(tracker) = &self.tracker else {
            return Ok(self.engine.decide_with_readings(context, step, now, readings));
        };
        let counted = Counted::new(context);
        // The tracker decides for the agent it was built for: its input names none.
        let input = StepInput {
            tasks: step.tasks,
            cur_iter: step.cur_iter,
            input_tokens: step.input_tokens,
            context_size: step.context_size,
        };
        let tracked = tracker.decide_with_readings(&counted, &input, now, readings);
        self.check.tracker_reads = self.check.tracker_reads.max(counted.reads.get());
        self.check.credit = self.check.credit.saturating_add(CHECK_READS_PER_STEP);
        if self.check.credit >= 0 {
            let counted = Counted::new(context);
            let full_scan = self.engine.decide_with_readings(&counted, step, now, readings);
            let reads = counted.reads.get() as u64;
            self.check.credit =
                self.check.credit.saturating_sub(i64::try_from(reads).unwrap_or(i64::MAX));
            self.check.scanned += reads;
            self.check.checked += 1;
            if full_scan != tracked {
                return Err(Box::new(Disagreement { tracker: tracked, full_scan }));
            }
        }
        Ok(tracked)
    }
}

/// A context that counts the messages read from it.
struct Counted<'a> {
    inner: &'a Context,
    reads: Cell<usize>,
}

impl<'a> Counted<'a> {
    fn new(inner: &'a Context) -> Self {
        Counted { inner, reads: Cell::new(0) }
    }
}

impl Conversation for Counted<'_> {
    type Message<'m>
        = &'m OwnedMessage
    where
        Self: 'm;
    fn message_count(&self) -> usize {
        self.inner.message_count()
    }
    fn newest(&self, index: usize) -> Option<&OwnedMessage> {
        self.reads.set(self.reads.get() + 1);
        self.inner.newest(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envaware::{Config, TaskCounts};
    use serde_json::json;

    fn agent_message(tool: &str) -> serde_json::Value {
        json!({"name": "rover", "role": "assistant", "content": [{"type": "tool_call", "id": "c", "name": tool, "input": "{}"}]})
    }

    /// A tracker that was not told of a change (here: a decider over one
    /// context asked about another of the same shape) is caught by the
    /// cross-check, and only by it.
    #[test]
    fn a_tracker_out_of_step_with_the_context_is_caught() {
        let engine = Engine::new(Config::default()).unwrap();
        let (mut seen, mut unseen) = (Context::default(), Context::default());
        let mut builder = Decider::new(engine, "rover", &seen, None);
        seen.push(agent_message("TaskList"), "message", &mut builder).unwrap();
        unseen.push(agent_message("Bash"), "message", &mut builder).unwrap();
        let step = Step {
            agent_name: "rover",
            tasks: TaskCounts { pending: 1, in_progress: 0 },
            cur_iter: 1,
            input_tokens: 0,
            context_size: 1,
        };
        let mut decider = Decider::new(engine, "rover", &seen, Some(CrossCheck::default()));
        assert!(decider.decide(&seen, &step, None, &Readings::default()).unwrap().tasks.is_none());
        let err = decider.decide(&unseen, &step, None, &Readings::default()).unwrap_err();
        assert!(err.tracker.tasks.is_none() && err.full_scan.tasks.is_some(), "{err:?}");
        // The full scan alone sees only the context it is given.
        let mut alone = Decider::new(engine, "rover", &seen, None);
        assert!(alone.decide(&unseen, &step, None, &Readings::default()).unwrap().tasks.is_some());
    }
}
