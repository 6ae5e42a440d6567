//! A context that decides in constant time by construction.

use core::fmt;

use crate::clock::{Clock, Timestamp};
use crate::conversation::{Block, Conversation, Counted, HintText, Role, ToolResultState};
use crate::engine::{Engine, Outcome};
use crate::live::LiveFields;
use crate::render::HintTooLong;
use crate::rules::{Decision, StepInput};
use crate::store::{Appended, ContextStore, StoreError, StoredMessage};
use crate::time::CreatedAt;
use crate::tracker::Tracker;

/// Why a tracked step could not append its hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum StepError {
    /// The hint did not fit the caller's buffer: nothing was appended.
    HintTooLong(HintTooLong),
    /// The store could not hold the hint: nothing was appended.
    Store(StoreError),
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepError::HintTooLong(e) => e.fmt(f),
            StepError::Store(e) => write!(f, "the hint could not be appended: {e}"),
        }
    }
}

impl core::error::Error for StepError {}

impl From<HintTooLong> for StepError {
    fn from(e: HintTooLong) -> Self {
        StepError::HintTooLong(e)
    }
}

impl From<StoreError> for StepError {
    fn from(e: StoreError) -> Self {
        StepError::Store(e)
    }
}

/// An agent's context in a fixed-capacity store, with the tracker that
/// keeps its decisions constant-time.
///
/// [`AgentContext`] owns a [`ContextStore`] and the [`Tracker`] that
/// mirrors it: every change goes through one of its methods, which updates
/// both, so the tracker cannot miss an append or an eviction, and a decision
/// reads a constant number of messages however long the context grows
/// ([`AgentContext::messages_read`] tells how many the last one read).
///
/// Its appends follow AgentScope 2.x's reply rules:
/// - [`user`](AgentContext::user) appends a message from the named user
///   (its sender, not its text, which the store does not keep) and starts
///   a new reply;
/// - what the agent produces ([`agent`](AgentContext::agent),
///   [`tool_call`](AgentContext::tool_call),
///   [`tool_result`](AgentContext::tool_result), and an injected hint,
///   [`append_hint`](AgentContext::append_hint)) goes through
///   `AgentState.append_context`'s rule: into the agent's own message of the
///   current reply when that is the newest message, else into a new
///   assistant message, which becomes the reply's message;
/// - [`observe`](AgentContext::observe) appends anyone else's message (a
///   system message, another agent's);
/// - [`compress`](AgentContext::compress) keeps only the newest messages,
///   and a store that runs out of room evicts the oldest whole messages
///   itself: both are compressions in AgentScope's sense.
///
/// A step is [`step`](AgentContext::step) (decide, render, append the
/// hint), or the split [`decide`](AgentContext::decide) → the caller reads
/// (awaits) its sensors → [`render_step`](AgentContext::render_step).
/// With feature `wire`, `context.engine().write_hint_block(id, hint, now,
/// out)` writes the appended hint as AgentScope's `HintBlock` JSON.
///
/// Callers who keep their context elsewhere use [`Engine`] with their own
/// [`Conversation`], and optionally a [`Tracker`] they feed themselves.
///
/// ```
/// use envaware::{Config, Engine, FixedClock, StepInput, TaskCounts, Timestamp, ToolResultState, AgentContext};
///
/// let engine = Engine::new(Config::default())?;
/// // 16 messages, 64 blocks, 4 KiB of text.
/// let mut context: AgentContext<'_, 16, 64, 4096> = AgentContext::new(&engine, "rover");
/// let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400));
/// let mut hint = [0u8; 1024];
/// // The context knows its agent: a step's input names none.
/// let step = |cur_iter| StepInput { tasks: TaskCounts::default(), cur_iter, input_tokens: 900, context_size: 8192 };
///
/// // A message from the user "operator" (its text is not kept).
/// context.user("operator")?;
/// // The first reply is told the time; the hint is appended for the agent.
/// let outcome = context.step(&step(0), &mut clock, &mut (), &mut hint)?;
/// assert!(outcome.hint.is_some() && outcome.event);
/// // Three identical failing calls in the reply: the next step warns.
/// for id in ["c1", "c2", "c3"] {
///     context.tool_call(id, "Drive", r#"{"metres": 2}"#)?;
///     context.tool_result(id, "Drive", ToolResultState::Error)?;
/// }
/// let outcome = context.step(&step(1), &mut clock, &mut (), &mut hint)?;
/// assert!(outcome.decision.tool_error.is_some());
/// // One user message and the agent's one message of this reply.
/// assert_eq!(context.len(), 2);
/// assert!(context.messages_read() <= 3);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct AgentContext<'a, const MESSAGES: usize, const BLOCKS: usize, const TEXT: usize> {
    store: ContextStore<MESSAGES, BLOCKS, TEXT>,
    tracker: Tracker<'a>,
    agent_name: &'a str,
    /// Whether the newest message is the agent's own message of the
    /// current reply (AgentScope compares its id with `reply_id`).
    reply_open: bool,
    /// Messages ever appended: the newest has sequence number `appended - 1`.
    appended: u64,
    /// Messages the last decision read.
    messages_read: usize,
}

impl<'a, const MESSAGES: usize, const BLOCKS: usize, const TEXT: usize>
    AgentContext<'a, MESSAGES, BLOCKS, TEXT>
{
    /// An empty context for `agent_name`'s steps with `engine`.
    pub fn new(engine: &Engine<'a>, agent_name: &'a str) -> Self {
        AgentContext {
            store: ContextStore::new(),
            tracker: Tracker::new(engine, agent_name),
            agent_name,
            reply_open: false,
            appended: 0,
            messages_read: 0,
        }
    }

    /// The engine the context decides with.
    pub fn engine(&self) -> &Engine<'a> {
        self.tracker.engine()
    }

    /// The agent whose context this is.
    pub fn agent_name(&self) -> &'a str {
        self.agent_name
    }

    /// The messages, read-only: a [`Conversation`], newest first.
    pub fn store(&self) -> &ContextStore<MESSAGES, BLOCKS, TEXT> {
        &self.store
    }

    /// How many messages the context holds.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether the context holds no message.
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// Message `index` places before the newest (`0` is the newest).
    pub fn newest(&self, index: usize) -> Option<StoredMessage<'_>> {
        self.store.newest(index)
    }

    /// The sequence number of message `index` places before the newest:
    /// `0` for the first message ever appended, counting the evicted ones.
    /// Stable for a message's whole life, so it can name the message (an
    /// AgentScope `Msg.id`) when the context is written out.
    pub fn sequence(&self, index: usize) -> Option<u64> {
        (index < self.store.len()).then(|| self.appended - 1 - index as u64)
    }

    /// How many messages the last decision read: at most 3, whatever the
    /// context's length (the newest, to check the tracker is in sync, and
    /// the one holding the recorded time when the tracker reads it back).
    pub fn messages_read(&self) -> usize {
        self.messages_read
    }

    /// Appends a message from the user named `sender` (its `Msg.name`,
    /// such as `"operator"`), and starts a new reply. `sender` is not the
    /// message's text: the store keeps no user text, as the rules never
    /// read it, so there is no text to give.
    pub fn user(&mut self, sender: &str) -> Result<Appended, StoreError> {
        self.observe(Role::User, sender, &[Block::Other])
    }

    /// Appends a message from someone other than this agent's current reply
    /// (a system message, another agent's), as it is. The agent's next
    /// output starts a new message.
    pub fn observe(
        &mut self,
        role: Role,
        name: &str,
        blocks: &[Block<'_>],
    ) -> Result<Appended, StoreError> {
        let appended = self.push(role, name, blocks)?;
        self.reply_open = false;
        Ok(appended)
    }

    /// Starts a new reply without a message (AgentScope's next `reply_id`):
    /// the agent's next output starts a new message.
    pub fn new_reply(&mut self) {
        self.reply_open = false;
    }

    /// Appends the agent's `blocks` as `AgentState.append_context` does: to
    /// its own message of the current reply when that is the newest
    /// message, else as a new assistant message.
    pub fn agent(&mut self, blocks: &[Block<'_>]) -> Result<Appended, StoreError> {
        if self.appends_to_last() {
            let first =
                self.store.newest(0).map_or(0, |m| crate::conversation::Message::block_count(&m));
            let appended = self.store.append_blocks_to_last(blocks)?;
            self.tracker.evict_oldest(appended.evicted);
            if let Some(newest) = self.store.newest(0) {
                self.tracker.append_blocks(&newest, first);
            }
            Ok(appended)
        } else {
            let appended = self.push(Role::Assistant, self.agent_name, blocks)?;
            self.reply_open = true;
            Ok(appended)
        }
    }

    /// Whether [`agent`](Self::agent) appends to the newest message (its
    /// own, of the current reply) rather than starting one.
    fn appends_to_last(&self) -> bool {
        self.reply_open && !self.store.is_empty()
    }

    /// Whether the store would take an [`observe`](Self::observe) of
    /// `blocks` (`agent: false`) or an [`agent`](Self::agent) output
    /// (`agent: true`), and how many messages it would evict: the context
    /// unchanged. The session log checks an event with it before logging.
    #[cfg(feature = "journal")]
    pub(crate) fn plan(
        &self,
        agent: bool,
        name: &str,
        blocks: &[Block<'_>],
    ) -> Result<usize, StoreError> {
        if agent && self.appends_to_last() {
            self.store.append_plan(blocks)
        } else {
            self.store.push_plan(if agent { self.agent_name } else { name }, blocks)
        }
    }

    /// The agent calls a tool: a `ToolCallBlock` in its reply's message.
    pub fn tool_call(&mut self, id: &str, name: &str, input: &str) -> Result<Appended, StoreError> {
        self.agent(&[Block::ToolCall { id, name, input }])
    }

    /// A tool's result: a `ToolResultBlock` in the agent's reply's message
    /// (where AgentScope puts it, next to its call).
    pub fn tool_result(
        &mut self,
        id: &str,
        name: &str,
        state: ToolResultState,
    ) -> Result<Appended, StoreError> {
        self.agent(&[Block::ToolResult { id, name, state, output: "" }])
    }

    /// Appends an injected hint as AgentScope's `_inject_runtime_state`
    /// does: a hint block with the configured `injection_source`, through
    /// `append_context`'s rule. `at` is the step's instant
    /// ([`Decision::now`]), the hint's `created_at`, from which a watch's
    /// `min_interval` and `max_interval` count (`None` with no clock).
    pub fn append_hint(
        &mut self,
        hint: &str,
        at: Option<Timestamp>,
    ) -> Result<Appended, StoreError> {
        self.agent(&[self.hint_block(hint, at)])
    }

    /// The block [`append_hint`](Self::append_hint) appends for `hint`.
    pub(crate) fn hint_block<'h>(&self, hint: &'h str, at: Option<Timestamp>) -> Block<'h>
    where
        'a: 'h,
    {
        let source = self.engine().config().config().injection.injection_source;
        Block::Hint {
            source: Some(source),
            text: HintText::Single(hint),
            created_at: at.map(CreatedAt::Instant),
        }
    }

    /// A compression: keeps only the `keep_newest` newest messages, and
    /// returns how many were evicted.
    pub fn compress(&mut self, keep_newest: usize) -> usize {
        let evicted = self.store.compact(keep_newest);
        self.tracker.evict_oldest(evicted);
        if self.store.is_empty() {
            self.reply_open = false;
        }
        evicted
    }

    /// Empties the context: as [`new`](Self::new), sequence numbers aside.
    pub fn clear(&mut self) {
        self.compress(0);
    }

    fn push(
        &mut self,
        role: Role,
        name: &str,
        blocks: &[Block<'_>],
    ) -> Result<Appended, StoreError> {
        let appended = self.store.push_message(role, name, blocks)?;
        self.appended += 1;
        self.tracker.evict_oldest(appended.evicted);
        if let Some(newest) = self.store.newest(0) {
            self.tracker.push_message(&newest);
        }
        Ok(appended)
    }

    /// Decides which dimensions fire for this context's agent, in constant
    /// time. `now` is `None` when the wall time is unknown.
    pub fn decide(&mut self, step: &StepInput, now: Option<Timestamp>) -> Decision {
        self.decide_with_readings(step, now, &())
    }

    /// [`decide`](Self::decide), with the watched fields' readings, as
    /// [`Engine::decide_with_readings`].
    pub fn decide_with_readings<L: LiveFields + ?Sized>(
        &mut self,
        step: &StepInput,
        now: Option<Timestamp>,
        readings: &L,
    ) -> Decision {
        let counted = Counted::new(&self.store);
        let decision = self.tracker.decide_with_readings(&counted, step, now, readings);
        self.messages_read = counted.reads();
        decision
    }

    /// The second half of a split step: given the `decision` of
    /// [`decide`](Self::decide), refreshes the live fields when something
    /// fires, renders the hint into `out` and appends it as
    /// [`append_hint`](Self::append_hint) does. The outcome keeps the event
    /// flag and every warning, as [`Engine::render_step`].
    ///
    /// # Errors
    ///
    /// When the hint does not fit `out`, or the store cannot hold it;
    /// nothing is appended then.
    pub fn render_step<'b, L: LiveFields + ?Sized>(
        &mut self,
        decision: Decision,
        live: &mut L,
        out: &'b mut [u8],
    ) -> Result<Outcome<'b>, StepError> {
        self.render_read(decision, live, out, false)
    }

    /// [`render_step`](Self::render_step), as `Engine::render_read`.
    pub(crate) fn render_read<'b, L: LiveFields + ?Sized>(
        &mut self,
        decision: Decision,
        live: &mut L,
        out: &'b mut [u8],
        read_before: bool,
    ) -> Result<Outcome<'b>, StepError> {
        let engine = *self.engine();
        let outcome = engine.render_read(decision, &self.store, live, out, read_before)?;
        if let Some(hint) = outcome.hint {
            self.append_hint(hint, decision.now)?;
        }
        Ok(outcome)
    }

    /// One reasoning step of this context's agent: reads the clock,
    /// decides, refreshes the live fields only when something fires,
    /// renders the hint into `out` and appends it to the context.
    ///
    /// The agent is the one named in [`new`](Self::new):
    ///
    /// ```
    /// use envaware::{Config, Engine, FixedClock, StepInput, AgentContext};
    ///
    /// let engine = Engine::new(Config::default())?;
    /// let mut context: AgentContext<'_, 4, 16, 1024> = AgentContext::new(&engine, "rover");
    /// let step = StepInput { tasks: Default::default(), cur_iter: 0, input_tokens: 0, context_size: 8192 };
    /// let mut hint = [0u8; 512];
    /// context.step(&step, &mut FixedClock::unset(), &mut (), &mut hint)?;
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    ///
    /// A [`Step`] naming an agent, as an [`Engine`] takes, is not accepted,
    /// so the two names cannot disagree:
    ///
    /// ```compile_fail,E0308
    /// use envaware::{Config, Engine, FixedClock, Step, AgentContext};
    ///
    /// let engine = Engine::new(Config::default())?;
    /// let mut context: AgentContext<'_, 4, 16, 1024> = AgentContext::new(&engine, "rover");
    /// let step = Step { agent_name: "rover", tasks: Default::default(), cur_iter: 0, input_tokens: 0, context_size: 8192 };
    /// let mut hint = [0u8; 512];
    /// context.step(&step, &mut FixedClock::unset(), &mut (), &mut hint)?;
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    ///
    /// [`Step`]: crate::Step
    ///
    /// # Errors
    ///
    /// As [`render_step`](Self::render_step).
    pub fn step<'b, K: Clock + ?Sized, L: LiveFields + ?Sized>(
        &mut self,
        step: &StepInput,
        clock: &mut K,
        live: &mut L,
        out: &'b mut [u8],
    ) -> Result<Outcome<'b>, StepError> {
        let now = clock.now();
        let engine = *self.engine();
        let decision = self.decide_with_readings(step, now, engine.read_watched(live));
        self.render_read(decision, live, out, engine.watches())
    }
}

#[cfg(feature = "defmt")]
impl<const MESSAGES: usize, const BLOCKS: usize, const TEXT: usize> defmt::Format
    for AgentContext<'_, MESSAGES, BLOCKS, TEXT>
{
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "AgentContext {{ agent: {=str}, messages: {=usize}/{=usize}, evicted: {=u32}, last decision read: {=usize} }}",
            self.agent_name,
            self.store.len(),
            MESSAGES,
            self.store.evicted_total(),
            self.messages_read
        );
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::clock::FixedClock;
    use crate::config::error::Warning;
    use crate::config::Config;
    use crate::config::InjectionConfig;
    use crate::conversation::Message;
    use crate::live::LiveReadings;
    use crate::rules::TaskCounts;
    use std::boxed::Box;

    const AGENT: &str = "rover";

    fn step(cur_iter: u64, pending: u64) -> StepInput {
        StepInput {
            tasks: TaskCounts { pending, in_progress: 0 },
            cur_iter,
            input_tokens: 0,
            context_size: 8192,
        }
    }

    /// Grows the context to `len` messages (a reply of tool calls for every
    /// user message), then decides: the messages read do not grow with it,
    /// and the decision is the full scan's.
    #[test]
    fn messages_read_per_decision_is_constant_as_the_context_grows() {
        let engine = Engine::new(Config::default()).unwrap();
        let mut now = Timestamp::from_unix_seconds(1_784_687_400);
        let mut reads = std::vec::Vec::new();
        for len in [23usize, 203, 2001] {
            let mut context: Box<AgentContext<'_, 2048, 4096, 65536>> =
                Box::new(AgentContext::new(&engine, AGENT));
            let mut buf = [0u8; 1024];
            // The time hint is in the oldest messages; tasks pending, never
            // acknowledged: the scan cannot stop early.
            context.user("operator").unwrap();
            context.step(&step(0, 0), &mut FixedClock::at(now), &mut (), &mut buf).unwrap();
            while context.len() < len {
                if context.len().is_multiple_of(2) {
                    context.user("operator").unwrap();
                } else {
                    context.tool_call("c", "Bash", "{}").unwrap();
                    context.tool_result("c", "Bash", ToolResultState::Success).unwrap();
                }
            }
            assert_eq!(context.len(), len);
            now = Timestamp(now.unix_micros() + 60_000_000);
            let decision = context.decide(&step(1, 1), Some(now));
            assert_eq!(
                decision,
                engine.decide(context.store(), &step(1, 1).for_agent(AGENT), Some(now))
            );
            assert_eq!(decision.time, crate::rules::TimeDecision::NotDue);
            assert!(decision.tasks.is_some());
            reads.push(context.messages_read());
            // What the tracker's decision reads through a counting view.
            let counted = Counted::new(context.store());
            assert_eq!(context.tracker.decide(&counted, &step(1, 1), Some(now)), decision);
            assert_eq!(context.messages_read(), counted.reads());
        }
        // The same few messages at every length (the newest, and the one
        // holding the recorded time when the tracker reads it back).
        assert!(reads.iter().all(|&r| r == reads[0] && (1..=3).contains(&r)), "{reads:?}");
    }

    /// AgentScope's `append_context`: the agent's output of one reply goes
    /// into one message; a user message starts a new reply; after another
    /// sender's message the agent starts a new message.
    #[test]
    fn appends_follow_agentscope_reply_rules() {
        let engine = Engine::new(Config::default()).unwrap();
        let mut context: AgentContext<'_, 8, 32, 1024> = AgentContext::new(&engine, AGENT);
        assert_eq!(
            (context.agent_name(), context.is_empty(), context.len(), context.sequence(0)),
            (AGENT, true, 0, None)
        );
        assert_eq!(context.agent(&[Block::Other]), Ok(Appended { evicted: 0 }));
        assert_eq!((context.is_empty(), context.sequence(0)), (false, Some(0)));
        context.tool_call("c1", "Bash", "{}").unwrap();
        context.append_hint("<tasks>x</tasks>", None).unwrap();
        assert_eq!(context.len(), 1);
        context.user("operator").unwrap();
        context.tool_call("c2", "Bash", "{}").unwrap();
        assert_eq!(context.len(), 3);
        context.new_reply();
        context.tool_result("c2", "Bash", ToolResultState::Error).unwrap();
        assert_eq!(context.len(), 4);
        context.observe(Role::Assistant, "other", &[Block::Other]).unwrap();
        context.append_hint("<tasks>y</tasks>", None).unwrap();
        assert_eq!(context.len(), 6);
        let newest = context.newest(0).unwrap();
        assert_eq!(
            (newest.role(), newest.name(), newest.block_count()),
            (Role::Assistant, AGENT, 1)
        );
        assert_eq!(context.sequence(0), Some(5));
        assert_eq!(context.compress(2), 4);
        assert_eq!(context.sequence(1), Some(4));
        assert_eq!(context.sequence(2), None);
        // The reply's message survived the compression: the agent goes on in it.
        context.tool_call("c3", "Bash", "{}").unwrap();
        assert_eq!(context.len(), 2);
        context.clear();
        assert!(context.is_empty());
        context.tool_call("c4", "Bash", "{}").unwrap();
        assert_eq!(context.newest(0).unwrap().block_count(), 1);
    }

    /// Evictions forced by a small store keep the tracker in sync: each
    /// decision is the full scan's.
    #[test]
    fn evictions_keep_decisions_exact() {
        let engine = Engine::new(Config::default()).unwrap();
        let mut context: AgentContext<'_, 4, 8, 512> = AgentContext::new(&engine, AGENT);
        let mut now = Timestamp::from_unix_seconds(1_784_687_400);
        let mut buf = [0u8; 1024];
        for i in 0..40u64 {
            match i % 4 {
                0 => drop(context.user("operator")),
                1 => drop(context.tool_call("c", "TaskList", "{}")),
                2 => drop(context.tool_result("c", "TaskList", ToolResultState::Success)),
                _ => {
                    now = Timestamp(now.unix_micros() + 7 * 60_000_000);
                    let s = step(i % 3, i % 2);
                    let full = engine.decide(context.store(), &s.for_agent(AGENT), Some(now));
                    assert_eq!(context.decide(&s, Some(now)), full, "at {i}");
                    assert!(context.messages_read() <= 3);
                    context.step(&s, &mut FixedClock::at(now), &mut (), &mut buf).unwrap();
                }
            }
        }
        assert!(context.store().evicted_total() > 0);
    }

    /// The split step keeps the event flag and the warnings, and a live
    /// field without a reading says unavailable.
    #[test]
    fn the_split_step_keeps_event_and_warnings() {
        let config = Config {
            injection: InjectionConfig {
                context_buffer_ratio: Some(0.1),
                strict: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let engine = Engine::new(config).unwrap();
        let mut context: AgentContext<'_, 8, 32, 2048> = AgentContext::new(&engine, AGENT);
        context.user("operator").unwrap();
        let decision =
            context.decide(&step(0, 0), Some(Timestamp::from_unix_seconds(1_784_687_400)));
        assert!(decision.fires());
        // In strict mode a live field with a built-in key is dropped.
        let mut live: LiveReadings<'_, 2, 32> = LiveReadings::new(["tasks", "temperature"]);
        live.record(0, Ok::<_, ()>("spoof"));
        let mut buf = [0u8; 1024];
        let outcome = context.render_step(decision, &mut live, &mut buf).unwrap();
        assert!(outcome.event);
        assert!(outcome.warnings.contains(Warning::DeprecatedContextBufferRatio));
        assert!(outcome.warnings.contains(Warning::LiveFieldDropped));
        let hint = outcome.hint.unwrap();
        assert!(
            hint.contains("<temperature>unavailable</temperature>") && !hint.contains("spoof"),
            "{hint}"
        );
        assert_eq!(context.newest(0).unwrap().block_count(), 1);
        // Too small a buffer: an error, and nothing appended.
        let decision = context.decide(&step(0, 1), None);
        let mut small = [0u8; 8];
        assert!(matches!(
            context.render_step(decision, &mut (), &mut small),
            Err(StepError::HintTooLong(_))
        ));
        assert_eq!(context.len(), 2);
    }

    #[test]
    fn a_step_error_says_which_capacity_was_short() {
        let engine = Engine::new(Config::default()).unwrap();
        let mut context: AgentContext<'_, 2, 2, 64> = AgentContext::new(&engine, AGENT);
        let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400));
        let mut small = [0u8; 16];
        let err = context.step(&step(0, 0), &mut clock, &mut (), &mut small).unwrap_err();
        let StepError::HintTooLong(inner) = err else { panic!("{err:?}") };
        assert_eq!(std::format!("{err}"), std::format!("{inner}"));
        // The hint fits the buffer but not the store's 64 bytes of text.
        let mut roomy = [0u8; 1024];
        let err = context.step(&step(0, 0), &mut clock, &mut (), &mut roomy).unwrap_err();
        let StepError::Store(inner) = err else { panic!("{err:?}") };
        assert_eq!(std::format!("{err}"), std::format!("the hint could not be appended: {inner}"));
        assert!(context.is_empty());
    }

    /// A watched field told in a hint is not told again until it moves; a
    /// compression that evicts the telling hint makes it be told again.
    /// Each decision is the full scan's and reads as few messages as
    /// without a watch.
    #[test]
    fn a_watch_fires_on_a_move_and_again_once_its_hint_is_evicted() {
        let watch = [(
            "temperature",
            crate::config::watch::Watch {
                change: crate::config::watch::Decimal::new(2, 0),
                ..Default::default()
            },
        )];
        let config = Config {
            injection: InjectionConfig {
                watch: crate::config::watch::WatchList::Slice(&watch),
                ..Default::default()
            },
            ..Default::default()
        };
        let engine = Engine::new(config).unwrap();
        let mut context: Box<AgentContext<'_, 64, 256, 16384>> =
            Box::new(AgentContext::new(&engine, AGENT));
        let mut buf = [0u8; 1024];
        let mut fired = std::vec::Vec::new();
        let mut reads = std::vec::Vec::new();
        for (i, t) in
            ["20.3", "21", "22.29", "22.3", "23", "unavailable", "18", "18"].into_iter().enumerate()
        {
            let mut live: LiveReadings<'_, 1, 16> = LiveReadings::new(["temperature"]);
            if t != "unavailable" {
                live.record(0, Ok::<_, ()>(format_args!("{t} °C")));
            }
            context.user("operator").unwrap();
            if i == 7 {
                // Keep only the user's message: the hint telling 18 is gone.
                context.compress(1);
            }
            let d = context.decide_with_readings(&step(1, 0), None, &live);
            assert_eq!(
                d,
                engine.decide_with_readings(
                    context.store(),
                    &step(1, 0).for_agent(AGENT),
                    None,
                    &live
                ),
                "at {i}"
            );
            reads.push(context.messages_read());
            let outcome = context.render_step(d, &mut live, &mut buf).unwrap();
            fired.push(outcome.decision.watch.contains(0));
            assert_eq!(outcome.hint.is_some(), fired[i]);
        }
        // 20.3 told; 22.3 is exactly 2.0 away (told); 23 is not; 18 is 4.3 below
        // 22.3; once its hint is evicted, 18 is told again.
        assert_eq!(fired, [true, false, false, true, false, false, true, true]);
        assert!(reads.iter().all(|&r| r <= 3), "{reads:?}");
        // The split step: a watched reading recorded before deciding.
        let mut live: LiveReadings<'_, 2, 16> = LiveReadings::new(["humidity", "temperature"]);
        live.record(1, Ok::<_, ()>("30 °C"));
        let d = context.decide_with_readings(&step(1, 0), None, &live);
        assert!(d.watch.contains(0) && d.fires());
        live.record(0, Ok::<_, ()>("40 %"));
        let hint = context.render_step(d, &mut live, &mut buf).unwrap().hint.unwrap();
        assert!(
            hint.contains("<humidity>40 %</humidity>\n<temperature>30 °C</temperature>"),
            "{hint}"
        );
    }
}

#[cfg(test)]
mod read_once {
    //! A watched sensor is read once per step: the reading that fired is
    //! the reading told (issue 33: a noisy sensor fired at 28.6 °C and the
    //! hint told 27.9 °C, read again when rendering).
    extern crate std;

    use super::*;
    use crate::clock::FixedClock;
    use crate::config::watch::{Decimal, Watch, WatchList};
    use crate::config::Config;
    use crate::conversation::SliceConversation;
    use std::string::String;

    /// A sensor that reads another value at every read: 28.6 then 27.9.
    struct Noisy {
        reads: usize,
        value: &'static str,
    }

    impl LiveFields for Noisy {
        fn refresh(&mut self) {
            self.value = ["28.6 °C", "27.9 °C"][self.reads % 2];
            self.reads += 1;
        }
        fn len(&self) -> usize {
            1
        }
        fn field(&self, i: usize) -> Option<(&str, &str)> {
            (i == 0).then_some(("temperature", self.value))
        }
    }

    const ABOVE_28: [(&str, Watch); 1] = [(
        "temperature",
        Watch {
            change: None,
            above: Decimal::new(28, 0),
            below: None,
            hysteresis: Decimal::ZERO,
            min_interval: None,
            max_interval: None,
        },
    )];

    fn engine() -> Engine<'static> {
        let mut config = Config::default();
        config.injection.watch = WatchList::Slice(&ABOVE_28);
        Engine::new(config).unwrap()
    }

    fn input() -> StepInput {
        StepInput { tasks: Default::default(), cur_iter: 0, input_tokens: 0, context_size: 8192 }
    }

    fn told(hint: Option<&str>) -> String {
        let hint = hint.expect("the watch fires");
        let from = hint.find("<temperature>").expect("the field is told") + "<temperature>".len();
        String::from(&hint[from..from + hint[from..].find('<').unwrap()])
    }

    #[test]
    fn every_step_function_tells_the_reading_that_fired() {
        let engine = engine();
        let mut out = [0u8; 1024];
        // Engine::step.
        let mut sensor = Noisy { reads: 0, value: "" };
        let step = input().for_agent("rover");
        let outcome = engine
            .step(&SliceConversation(&[]), &step, &mut FixedClock::unset(), &mut sensor, &mut out)
            .unwrap();
        assert!(!outcome.decision.watch.is_empty());
        assert_eq!((told(outcome.hint), sensor.reads), ("28.6 °C".into(), 1));
        // Tracker::step.
        let mut sensor = Noisy { reads: 0, value: "" };
        let tracker = Tracker::new(&engine, "rover");
        let outcome = tracker
            .step(
                &SliceConversation(&[]),
                &input(),
                &mut FixedClock::unset(),
                &mut sensor,
                &mut out,
            )
            .unwrap();
        assert_eq!((told(outcome.hint), sensor.reads), ("28.6 °C".into(), 1));
        // AgentContext::step.
        let mut sensor = Noisy { reads: 0, value: "" };
        let mut context: AgentContext<'_, 4, 16, 2048> = AgentContext::new(&engine, "rover");
        let outcome =
            context.step(&input(), &mut FixedClock::unset(), &mut sensor, &mut out).unwrap();
        assert_eq!((told(outcome.hint), sensor.reads), ("28.6 °C".into(), 1));
    }

    #[cfg(feature = "journal")]
    #[test]
    fn the_journal_s_step_tells_the_reading_that_fired() {
        let engine = engine();
        let (mut out, mut items) = ([0u8; 1024], [0u8; 2048]);
        let mut sensor = Noisy { reads: 0, value: "" };
        let mut context: AgentContext<'_, 4, 16, 2048> = AgentContext::new(&engine, "rover");
        let mut journal = crate::journal::Journal::new(&context);
        let (outcome, _) =
            journal.step(&mut context, &input(), None, &mut sensor, &mut out, &mut items).unwrap();
        assert_eq!((told(outcome.hint), sensor.reads), ("28.6 °C".into(), 1));
    }
}
