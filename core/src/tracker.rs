//! Incremental awareness: decisions in constant time, whatever the
//! context's length.

use crate::clock::{Clock, Timestamp};
use crate::config::watch::{Decimal, MAX_WATCHES};
use crate::conversation::{Conversation, Message};
use crate::engine::{Engine, Outcome};
use crate::live::LiveFields;
use crate::render::HintTooLong;
use crate::rules::scan::{self, Telling, TimeHint, TimeReading};
use crate::rules::time::read_time_hint;
use crate::rules::tool_error::{applies, Streak};
#[cfg(feature = "_bench-phases")]
use crate::rules::ToolError;
use crate::rules::{self, Decision, StepInput};
use crate::time::CreatedAt;

/// The newest time hint: the position of its message (counted from the
/// first message ever observed), and what it records, read when observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct At {
    message: u64,
    reading: TimeReading,
}

/// The newest hint that told a watched field: the position of its message,
/// the value it told (`None`: the tag holds no number) and its
/// `created_at`, from which the watch's time rules count. Flat rather than
/// holding a `scan::Telling`: the nested layout cost the watched decision
/// about 620 more instructions on a Cortex-M3 (core/CHANGELOG.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Told {
    message: u64,
    value: Option<Decimal>,
    at: Option<CreatedAt>,
}

/// Tracks what the rules' context scan would find, as the context changes.
///
/// context's length.
///
/// The reference rescans the context at every step, newest first, for two
/// things: the newest hint of ours that records a time, and whether the
/// agent is aware of its tasks (a task tool call or a tasks hint anywhere).
/// A [`Tracker`] learns both as the context grows, from the same per-block
/// rule the scan uses, so that [`Tracker::decide`] reads one hint instead of
/// the whole context.
///
/// Two observations make this exact:
/// - context is only ever added at the newest end (a new message, or blocks
///   appended to the newest message), so the newest time hint is the last
///   one observed, and a task marker once observed stays until evicted;
/// - a compression evicts the *oldest* whole messages, so a marker survives
///   exactly when the newest message holding one survives.
///
/// The tracker therefore keeps two message positions and a block index: no
/// memory that grows with the context. Observing costs time linear in the
/// blocks observed (each block once); a time hint is read back when
/// observed, and the tool-error rule's streak in the newest message is kept
/// as blocks are appended to it (constant time per block for the shapes
/// AgentScope produces: see `rules::tool_error::Streak`); evicting
/// and deciding are `O(1)`, plus one reading of the newest message (to
/// check the tracker is in sync).
///
/// The tracker must see every change of the context, in order. If the
/// conversation it is asked to decide on does not hold as many messages as
/// it observed, or its newest message not as many blocks, it falls back to
/// the full scan. A change it was not told of that keeps both counts (a
/// message rewritten in place, a push and an eviction of one message
/// together) is not detected: tell it of every change. It decides for the
/// agent named when it was built: its steps take a
/// [`StepInput`](crate::StepInput), which names no agent.
///
/// ```
/// use envaware::{Block, Conversation, CreatedAt, HintText, Role};
/// use envaware::ContextStore;
/// use envaware::Tracker;
/// use envaware::{Config, Engine, FixedClock, StepInput, Timestamp};
///
/// let engine = Engine::new(Config::default())?;
/// let mut store: ContextStore<4, 16, 2048> = ContextStore::new();
/// let mut tracker = Tracker::new(&engine, "friday");
/// let step = StepInput { tasks: Default::default(), cur_iter: 1, input_tokens: 0, context_size: 128_000 };
/// let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400));
/// let mut buf = [0u8; 512];
///
/// store.push_message(Role::User, "user", &[Block::Other])?;
/// tracker.push_message(&store.newest(0).unwrap());
/// let outcome = tracker.step(&store, &step, &mut clock, &mut (), &mut buf)?;
/// let (hint, now) = (outcome.hint.unwrap(), outcome.decision.now);
/// // Append the hint as the agent's own message, created at the step's
/// // instant (a watch's time rules count from it), and tell the tracker.
/// let source = engine.config().config().injection.injection_source;
/// let created_at = now.map(CreatedAt::Instant);
/// let hint_block = Block::Hint { source: Some(source), text: HintText::Single(hint), created_at };
/// let appended = store.push_message(Role::Assistant, "friday", &[hint_block])?;
/// tracker.evict_oldest(appended.evicted);
/// tracker.push_message(&store.newest(0).unwrap());
/// // The time was just recorded: nothing to inject now.
/// assert!(tracker.step(&store, &step, &mut clock, &mut (), &mut buf)?.hint.is_none());
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Tracker<'a> {
    engine: Engine<'a>,
    agent_name: &'a str,
    /// Messages ever observed; the newest is at position `pushed - 1`.
    pushed: u64,
    /// Messages evicted: the oldest present is at position `evicted`.
    evicted: u64,
    /// The newest hint of ours that records a time.
    time_hint: Option<At>,
    /// The newest message holding a task marker.
    tasks_seen: Option<u64>,
    /// The newest message's block count when last observed.
    newest_blocks: usize,
    /// Per watch, the newest hint of ours holding its field's tag.
    told: [Option<Told>; MAX_WATCHES],
    /// What the tool-error rule finds in the newest message, kept as
    /// blocks are appended to it (the rule reads nothing else).
    streak: Streak,
}

impl<'a> Tracker<'a> {
    /// A tracker for `agent_name`'s steps with `engine`, over an empty
    /// context.
    pub fn new(engine: &Engine<'a>, agent_name: &'a str) -> Self {
        Tracker {
            engine: *engine,
            agent_name,
            pushed: 0,
            evicted: 0,
            time_hint: None,
            tasks_seen: None,
            newest_blocks: 0,
            told: [None; MAX_WATCHES],
            streak: Streak::default(),
        }
    }

    /// A tracker that has observed all of `conversation`, oldest first: in
    /// time linear in its length, once (e.g. after loading a context, or a
    /// configuration change).
    pub fn from_conversation<C: Conversation>(
        engine: &Engine<'a>,
        agent_name: &'a str,
        conversation: &C,
    ) -> Self {
        let mut tracker = Tracker::new(engine, agent_name);
        for index in (0..conversation.message_count()).rev() {
            match conversation.newest(index) {
                Some(msg) => tracker.push_message(&msg),
                // A conversation that cannot show a message it counts: leave
                // the count off so that `decide` falls back to the scan.
                None => {
                    tracker.pushed += 1;
                    tracker.streak = Streak::default();
                }
            }
        }
        tracker
    }

    /// The engine the tracker decides with.
    pub fn engine(&self) -> &Engine<'a> {
        &self.engine
    }

    /// How many messages the tracker believes the context holds.
    pub fn message_count(&self) -> u64 {
        self.pushed - self.evicted
    }

    /// Observes a new newest message.
    pub fn push_message<M: Message>(&mut self, msg: &M) {
        self.pushed += 1;
        self.newest_blocks = msg.block_count();
        self.observe(msg, 0);
        self.streak = if applies(msg, self.agent_name) {
            Streak::of(self.engine.config(), msg)
        } else {
            Streak::default()
        };
    }

    /// Observes the blocks appended to the newest message: those from index
    /// `first` on (`first` is the block count before the append).
    pub fn append_blocks<M: Message>(&mut self, newest: &M, first: usize) {
        if self.pushed > self.evicted {
            self.newest_blocks = newest.block_count();
            self.observe(newest, first);
            if applies(newest, self.agent_name) {
                self.streak.append(self.engine.config(), newest, first);
            }
        }
    }

    /// Observes a compression that removed the `count` oldest messages.
    pub fn evict_oldest(&mut self, count: usize) {
        self.evicted = self.evicted.saturating_add(count as u64).min(self.pushed);
        if self.time_hint.is_some_and(|at| at.message < self.evicted) {
            self.time_hint = None;
        }
        if self.tasks_seen.is_some_and(|m| m < self.evicted) {
            self.tasks_seen = None;
        }
        if self.evicted == self.pushed {
            self.streak = Streak::default();
        }
        // Older telling hints are older messages, gone too: nothing told.
        for told in &mut self.told {
            if told.is_some_and(|t| t.message < self.evicted) {
                *told = None;
            }
        }
    }

    fn observe<M: Message>(&mut self, msg: &M, first: usize) {
        let cfg = self.engine.config();
        if !scan::scanned(cfg, msg, self.agent_name) {
            return;
        }
        let message = self.pushed - 1;
        for block in first..msg.block_count() {
            let Some(b) = msg.block(block) else { continue };
            let marks = scan::marks(cfg, b);
            // Read once here, not at every decision: the hint does not
            // change, and what it records does not depend on the clock.
            if let Some(text) = scan::our_hint(cfg, b).filter(|_| marks.time) {
                self.time_hint = Some(At { message, reading: read_time_hint(cfg, text) });
            }
            if marks.tasks {
                self.tasks_seen = Some(message);
            }
            if let Some(text) =
                scan::our_hint(cfg, b).filter(|_| !cfg.config().injection.watch.is_empty())
            {
                for (told, (name, _)) in
                    self.told.iter_mut().zip(cfg.config().injection.watch.iter())
                {
                    if let Some(value) = scan::told_in(cfg, text, name) {
                        *told = Some(Told { message, value, at: scan::created_at(b) });
                    }
                }
            }
        }
    }

    /// Whether `conversation` holds what the tracker observed: as many
    /// messages, and as many blocks in the newest.
    pub(crate) fn in_sync<C: Conversation>(&self, conversation: &C) -> bool {
        let newest_blocks = conversation.newest(0).map_or(0, |m| m.block_count());
        conversation.message_count() as u64 == self.message_count()
            && (self.message_count() == 0 || newest_blocks == self.newest_blocks)
    }

    /// What the newest hint of ours that records a time was read to.
    pub(crate) fn recorded(&self) -> Option<TimeReading> {
        self.time_hint.map(|at| at.reading)
    }

    /// Whether the context shows a task marker.
    pub(crate) fn aware_of_tasks(&self) -> bool {
        self.tasks_seen.is_some()
    }

    /// The tool-error rule's verdict on the newest message observed.
    #[cfg(feature = "_bench-phases")]
    pub(crate) fn newest_tool_error(&self) -> Option<ToolError> {
        self.streak.verdict(self.engine.config())
    }

    /// The agent the tracker decides for.
    #[cfg(feature = "_bench-phases")]
    pub(crate) fn agent_name(&self) -> &'a str {
        self.agent_name
    }

    /// Decides as [`Engine::decide`] does for this tracker's agent, from
    /// what was observed.
    pub fn decide<C: Conversation>(
        &self,
        conversation: &C,
        step: &StepInput,
        now: Option<Timestamp>,
    ) -> Decision {
        self.decide_with_readings(conversation, step, now, &())
    }

    /// Decides as [`Engine::decide_with_readings`] does for this tracker's
    /// agent, from what was observed.
    pub fn decide_with_readings<C: Conversation, L: LiveFields + ?Sized>(
        &self,
        conversation: &C,
        step: &StepInput,
        now: Option<Timestamp>,
        readings: &L,
    ) -> Decision {
        let cfg = self.engine.config();
        let step = step.for_agent(self.agent_name);
        if !self.in_sync(conversation) {
            return self.engine.decide_with_readings(conversation, &step, now, readings);
        }
        let awareness = |on_time_hint: &mut dyn FnMut(TimeHint<'_>)| {
            if let Some(reading) = self.recorded() {
                on_time_hint(TimeHint::Read(reading));
            }
            self.aware_of_tasks()
        };
        let told = || self.told.map(|t| t.map(|t| Telling { value: t.value, at: t.at }));
        let tool_error = || self.streak.verdict(cfg);
        rules::decide_with(cfg, &step, now, readings, awareness, tool_error, told)
    }

    /// One reasoning step, as [`Engine::step`], deciding from what was
    /// observed. The caller appends the hint to the context and tells the
    /// tracker, as for any other append.
    pub fn step<'b, C: Conversation, K: Clock + ?Sized, L: LiveFields + ?Sized>(
        &self,
        conversation: &C,
        step: &StepInput,
        clock: &mut K,
        live: &mut L,
        out: &'b mut [u8],
    ) -> Result<Outcome<'b>, HintTooLong> {
        let now = clock.now();
        let decision =
            self.decide_with_readings(conversation, step, now, self.engine.read_watched(live));
        self.engine.render_read(decision, conversation, live, out, self.engine.watches())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FixedClock;
    use crate::config::{Config, StrList};
    use crate::conversation::{
        Block, Counted, HintText, Role, SliceConversation, SliceMessage, ToolResultState,
    };
    use crate::rules::TaskCounts;
    use crate::store::ContextStore;
    use proptest::prelude::*;
    use std::string::String;
    use std::vec::Vec;

    const SOURCE: &str = crate::config::DEFAULT_INJECTION_SOURCE;
    const AGENT: &str = "friday";

    #[derive(Debug, Clone)]
    enum Op {
        User,
        Push { name: bool, blocks: Vec<u8> },
        Append { blocks: Vec<u8> },
        Compact(usize),
        Step { pending: u64, advance_min: i64, reading: u8 },
    }

    fn op() -> impl Strategy<Value = Op> {
        let blocks = proptest::collection::vec(0u8..11, 0..4);
        prop_oneof![
            Just(Op::User),
            (any::<bool>(), blocks.clone()).prop_map(|(name, blocks)| Op::Push { name, blocks }),
            blocks.prop_map(|blocks| Op::Append { blocks }),
            (0usize..4).prop_map(Op::Compact),
            (0u64..2, -40i64..90, 0u8..12).prop_map(|(pending, advance_min, reading)| Op::Step {
                pending,
                advance_min,
                reading
            }),
        ]
    }

    fn hint_text(kind: u8, now: Timestamp) -> String {
        let mut t = String::new();
        crate::time::format_time(&mut t, "%Y-%m-%dT%H:%M:%S", now, crate::time::Zone::Utc).unwrap();
        // A told temperature that moves with the clock: 20 to 24.5.
        let told = std::format!(
            "{}.{}",
            20 + (now.unix_micros() / 60_000_000) % 5,
            (now.unix_micros() / 60_000_000) % 2 * 5
        );
        match kind {
            0 => std::format!("<current-time>{t}</current-time>"),
            1 => String::from("<tasks>x</tasks>"),
            2 => std::format!("<current-time>{t}</current-time><tasks>y</tasks>"),
            _ => std::format!(
                "<current-time>{t}</current-time>\n<temperature>{told} °C</temperature>"
            ),
        }
    }

    fn block_of<'a>(code: u8, texts: &'a [String; 4], now: Timestamp) -> Block<'a> {
        match code {
            0..=2 => Block::Hint {
                source: Some(SOURCE),
                text: HintText::Single(&texts[code as usize]),
                created_at: None,
            },
            // Told at `now` (an instant), 5 minutes before on the wall
            // clock, or with no created_at (an unknown age).
            8 => Block::Hint {
                source: Some(SOURCE),
                text: HintText::Single(&texts[3]),
                created_at: Some(CreatedAt::Instant(now)),
            },
            9 => Block::Hint {
                source: Some(SOURCE),
                text: HintText::Single(&texts[3]),
                created_at: Some(CreatedAt::WallClock(now.0 - 300_000_000)),
            },
            10 => Block::Hint {
                source: Some(SOURCE),
                text: HintText::Single(&texts[3]),
                created_at: None,
            },
            3 => Block::Hint {
                source: Some("other"),
                text: HintText::Single(&texts[0]),
                created_at: None,
            },
            4 => Block::ToolCall { id: "c", name: "TaskCreate", input: "{}" },
            5 => Block::ToolCall { id: "c", name: "Bash", input: "{}" },
            6 => Block::ToolResult {
                id: "c",
                name: "Bash",
                state: ToolResultState::Error,
                output: "",
            },
            _ => Block::Other,
        }
    }

    fn run(
        strict: bool,
        watch: crate::config::watch::WatchList<'_>,
        ops: &[Op],
    ) -> Result<(), TestCaseError> {
        let config = Config {
            injection: crate::config::InjectionConfig { strict, watch, ..Default::default() },
            ..Default::default()
        };
        let engine = Engine::new(config).unwrap();
        let mut store: ContextStore<6, 12, 1024> = ContextStore::new();
        let mut tracker = Tracker::new(&engine, AGENT);
        let mut now = Timestamp::from_unix_seconds(1_784_687_400);
        for op in ops {
            let texts =
                [hint_text(0, now), hint_text(1, now), hint_text(2, now), hint_text(3, now)];
            let result = match op {
                Op::User => {
                    store.push_message(Role::User, "user", &[Block::Other]).map(|a| (a, true, 0))
                }
                Op::Push { name, blocks } => {
                    let blocks: Vec<Block<'_>> =
                        blocks.iter().map(|c| block_of(*c, &texts, now)).collect();
                    store
                        .push_message(Role::Assistant, if *name { AGENT } else { "other" }, &blocks)
                        .map(|a| (a, true, 0))
                }
                Op::Append { blocks } => {
                    let first = store.newest(0).map_or(0, |m| m.block_count());
                    let blocks: Vec<Block<'_>> =
                        blocks.iter().map(|c| block_of(*c, &texts, now)).collect();
                    store.append_blocks_to_last(&blocks).map(|a| (a, false, first))
                }
                Op::Compact(keep) => {
                    let gone = store.compact(*keep);
                    tracker.evict_oldest(gone);
                    continue;
                }
                Op::Step { pending, advance_min, reading } => {
                    now = Timestamp(now.unix_micros() + advance_min * 60_000_000);
                    let step = StepInput {
                        tasks: TaskCounts { pending: *pending, in_progress: 0 },
                        cur_iter: 1,
                        input_tokens: 0,
                        context_size: 1000,
                    };
                    // Readings 18 to 23.5, or unavailable.
                    let text = std::format!("{}.{} °C", 18 + reading / 2, reading % 2 * 5);
                    let fields = [(
                        "temperature",
                        if *reading == 11 { crate::live::UNAVAILABLE } else { text.as_str() },
                    )];
                    let mut live = crate::config::ExtraFields::Slice(&fields);
                    let full = engine.decide_with_readings(
                        &store,
                        &step.for_agent(AGENT),
                        Some(now),
                        &live,
                    );
                    prop_assert_eq!(
                        tracker.decide_with_readings(&store, &step, Some(now), &live),
                        full
                    );
                    let mut buf = [0u8; 1024];
                    let outcome = tracker
                        .step(&store, &step, &mut FixedClock::at(now), &mut live, &mut buf)
                        .unwrap();
                    prop_assert_eq!(outcome.decision, full);
                    continue;
                }
            };
            if let Ok((appended, pushed, first)) = result {
                tracker.evict_oldest(appended.evicted);
                let newest = store.newest(0).unwrap();
                if pushed {
                    tracker.push_message(&newest);
                } else {
                    tracker.append_blocks(&newest, first);
                }
            }
            prop_assert_eq!(tracker.message_count(), store.len() as u64);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// With evictions forced by a tiny store, the tracker decides as the
        /// full scan at every step.
        #[test]
        fn tracker_matches_full_scan(strict in any::<bool>(), ops in proptest::collection::vec(op(), 0..40)) {
            run(strict, crate::config::watch::WatchList::EMPTY, &ops)?;
        }

        /// The same with a watch: the told values kept as hints are
        /// appended and evicted decide as the scan reads them.
        #[test]
        fn tracker_matches_full_scan_with_a_watch(strict in any::<bool>(), ops in proptest::collection::vec(op(), 0..40)) {
            let w = crate::config::watch::Watch { change: Decimal::new(2, 0), above: Decimal::new(22, 0), hysteresis: Decimal::new(5, 1).unwrap_or_default(), ..Default::default() };
            run(strict, crate::config::watch::WatchList::Slice(&[("temperature", w)]), &ops)?;
        }

        /// The same with time rules: the told instants kept as hints are
        /// appended and evicted, the clock moving back and forth, decide
        /// (value, heartbeat, throttled) as the scan reads them.
        #[test]
        fn tracker_matches_full_scan_with_time_rules(
            strict in any::<bool>(),
            rule in 0usize..3,
            ops in proptest::collection::vec(op(), 0..40),
        ) {
            let minutes = |m: i64| crate::config::watch::Interval::from_secs(m * 60);
            let (min_interval, max_interval) = [(minutes(10), None), (None, minutes(30)), (minutes(10), minutes(30))][rule];
            let w = crate::config::watch::Watch { change: Decimal::new(2, 0), min_interval, max_interval, ..Default::default() };
            run(strict, crate::config::watch::WatchList::Slice(&[("temperature", w)]), &ops)?;
        }
    }

    /// The full scan reads every message; the tracker reads the newest
    /// once (to check it is in sync) and no other, whatever the context's
    /// length: it read the recorded time and ran the tool-error rule when it
    /// observed them.
    #[test]
    fn decisions_read_a_constant_number_of_messages() {
        let engine = Engine::new(Config::default()).unwrap();
        let now = Timestamp::from_unix_seconds(1_784_687_400);
        let time = [Block::Hint {
            source: Some(SOURCE),
            text: HintText::Single("<current-time>2026-07-22T02:20:00</current-time>"),
            created_at: None,
        }];
        let other = [Block::Other, Block::ToolCall { id: "c", name: "Bash", input: "{}" }];
        // Unfinished tasks the agent is not aware of: the scan cannot stop early.
        let step = StepInput {
            tasks: TaskCounts { pending: 1, in_progress: 0 },
            cur_iter: 1,
            input_tokens: 0,
            context_size: 1,
        };
        for len in [10usize, 10_000] {
            let mut msgs =
                std::vec![SliceMessage { role: Role::Assistant, name: AGENT, blocks: &time }];
            msgs.resize(len, SliceMessage { role: Role::Assistant, name: AGENT, blocks: &other });
            let conv = SliceConversation(&msgs);
            let tracker = Tracker::from_conversation(&engine, AGENT, &conv);
            let counted = Counted::new(&conv);
            let full = engine.decide(&counted, &step.for_agent(AGENT), Some(now));
            assert!(counted.reads() >= len);
            let counted = Counted::new(&conv);
            let tracked = tracker.decide(&counted, &step, Some(now));
            assert_eq!(counted.reads(), 1);
            assert_eq!(tracked, full);
            assert_eq!(tracked.time, rules::TimeDecision::NotDue);
            assert!(tracked.tasks.is_some());
        }
    }

    #[test]
    fn falls_back_to_the_scan_when_it_missed_a_change() {
        let engine = Engine::new(Config::default()).unwrap();
        let tracker = Tracker::new(&engine, AGENT);
        let blocks = [Block::ToolCall { id: "c", name: "TaskList", input: "{}" }];
        let msgs = [SliceMessage { role: Role::Assistant, name: AGENT, blocks: &blocks }];
        let conv = SliceConversation(&msgs);
        let step = StepInput {
            tasks: TaskCounts { pending: 1, in_progress: 0 },
            cur_iter: 1,
            input_tokens: 0,
            context_size: 1,
        };
        // The tracker never saw the task call, but the count tells it so.
        assert_eq!(
            tracker.decide(&conv, &step, None),
            engine.decide(&conv, &step.for_agent(AGENT), None)
        );
        assert!(tracker.decide(&conv, &step, None).tasks.is_none());
        let rebuilt = Tracker::from_conversation(&engine, AGENT, &conv);
        assert_eq!(rebuilt.message_count(), 1);
        assert!(rebuilt.decide(&conv, &step, None).tasks.is_none());
    }

    #[test]
    fn falls_back_to_the_scan_when_blocks_were_appended_unseen() {
        let engine = Engine::new(Config::default()).unwrap();
        let first = [Block::Other];
        let grown = [Block::Other, Block::ToolCall { id: "c", name: "TaskList", input: "{}" }];
        let mut tracker = Tracker::new(&engine, AGENT);
        tracker.push_message(&SliceMessage { role: Role::Assistant, name: AGENT, blocks: &first });
        // The task call was appended to the newest message without telling
        // the tracker: the message count is the same, the block count is not.
        let msgs = [SliceMessage { role: Role::Assistant, name: AGENT, blocks: &grown }];
        let conv = SliceConversation(&msgs);
        let step = StepInput {
            tasks: TaskCounts { pending: 1, in_progress: 0 },
            cur_iter: 1,
            input_tokens: 0,
            context_size: 1,
        };
        assert!(engine.decide(&conv, &step.for_agent(AGENT), None).tasks.is_none());
        assert_eq!(
            tracker.decide(&conv, &step, None),
            engine.decide(&conv, &step.for_agent(AGENT), None)
        );
    }

    #[test]
    fn custom_task_tools_count() {
        let names = ["plan"];
        let config = Config {
            injection: crate::config::InjectionConfig {
                task_tool_names: StrList::Slice(&names),
                ..Default::default()
            },
            ..Default::default()
        };
        let engine = Engine::new(config).unwrap();
        let blocks = [Block::ToolCall { id: "c", name: "plan", input: "{}" }];
        let msgs = [SliceMessage { role: Role::Assistant, name: AGENT, blocks: &blocks }];
        let conv = SliceConversation(&msgs);
        let mut tracker = Tracker::new(&engine, AGENT);
        tracker.push_message(&msgs[0]);
        let step = StepInput {
            tasks: TaskCounts { pending: 2, in_progress: 1 },
            cur_iter: 1,
            input_tokens: 0,
            context_size: 1,
        };
        assert!(tracker.decide(&conv, &step, None).tasks.is_none());
        tracker.evict_oldest(1);
        let empty = SliceConversation(&[]);
        assert!(tracker.decide(&empty, &step, None).tasks.is_some());
    }

    /// A conversation that counts a message it cannot show.
    struct Gappy<'a>(SliceConversation<'a>);

    impl<'a> Conversation for Gappy<'a> {
        type Message<'m>
            = SliceMessage<'a>
        where
            Self: 'm;
        fn message_count(&self) -> usize {
            self.0.message_count() + 1
        }
        fn newest(&self, index: usize) -> Option<SliceMessage<'a>> {
            self.0.newest(index)
        }
    }

    #[test]
    fn a_tracker_for_another_agent_or_a_message_it_could_not_see() {
        let strict = Config {
            injection: crate::config::InjectionConfig { strict: true, ..Default::default() },
            ..Default::default()
        };
        let engine = Engine::new(strict).unwrap();
        let prefix = crate::config::DEFAULT_TEMPLATE
            .split(crate::config::RUNTIME_STATE_PLACEHOLDER)
            .next()
            .unwrap();
        let text = std::format!(
            "{prefix}<current-time>2026-07-22T02:20:00</current-time>\n</system-reminder>"
        );
        let blocks =
            [Block::Hint { source: Some(SOURCE), text: HintText::Single(&text), created_at: None }];
        let msgs = [SliceMessage { role: Role::Assistant, name: AGENT, blocks: &blocks }];
        let conv = SliceConversation(&msgs);
        let now = Some(Timestamp::from_unix_seconds(1_784_687_400));
        let step = StepInput {
            tasks: TaskCounts::default(),
            cur_iter: 1,
            input_tokens: 0,
            context_size: 1,
        };
        let mine = Tracker::from_conversation(&engine, AGENT, &conv);
        assert_eq!(mine.decide(&conv, &step, now).time, rules::TimeDecision::NotDue);
        // In strict mode another agent's tracker does not read this agent's
        // hints, as the scan for that agent does not.
        let theirs = Tracker::from_conversation(&engine, "other", &conv);
        let d = theirs.decide(&conv, &step, now);
        assert_eq!(d, engine.decide(&conv, &step.for_agent("other"), now));
        assert!(matches!(d.time, rules::TimeDecision::Inject(_)));
        // A message counted but not shown is counted, so decisions scan.
        let gappy = Gappy(conv);
        assert_eq!(Tracker::from_conversation(&engine, AGENT, &gappy).message_count(), 2);
    }

    /// The tool-error verdict kept for the newest message lasts while that
    /// message does, and goes with it.
    #[test]
    fn the_newest_message_s_tool_error_lasts_until_it_is_evicted() {
        let engine = Engine::new(Config::default()).unwrap();
        let failed =
            |id| Block::ToolResult { id, name: "Bash", state: ToolResultState::Error, output: "" };
        let call = |id| Block::ToolCall { id, name: "Bash", input: "{}" };
        let streak = [call("a"), failed("a"), call("b"), failed("b"), call("c"), failed("c")];
        let msgs = [
            SliceMessage { role: Role::User, name: "user", blocks: &[Block::Other] },
            SliceMessage { role: Role::Assistant, name: AGENT, blocks: &streak },
        ];
        let step = StepInput {
            tasks: TaskCounts::default(),
            cur_iter: 1,
            input_tokens: 0,
            context_size: 1,
        };
        let mut tracker = Tracker::from_conversation(&engine, AGENT, &SliceConversation(&msgs));
        assert!(tracker.decide(&SliceConversation(&msgs), &step, None).tool_error.is_some());
        tracker.evict_oldest(1);
        let newest = SliceConversation(&msgs[1..]);
        assert_eq!(
            tracker.decide(&newest, &step, None),
            engine.decide(&newest, &step.for_agent(AGENT), None)
        );
        assert!(tracker.decide(&newest, &step, None).tool_error.is_some());
        tracker.evict_oldest(1);
        assert!(tracker.decide(&SliceConversation(&[]), &step, None).tool_error.is_none());
    }

    #[test]
    fn blocks_appended_to_no_message_are_not_observed() {
        let engine = Engine::new(Config::default()).unwrap();
        let mut tracker = Tracker::new(&engine, AGENT);
        let time = [Block::Hint {
            source: Some(SOURCE),
            text: HintText::Single("<current-time>2026-07-22T02:20:00</current-time>"),
            created_at: None,
        }];
        let msg = SliceMessage { role: Role::Assistant, name: AGENT, blocks: &time };
        let step = StepInput {
            tasks: TaskCounts::default(),
            cur_iter: 1,
            input_tokens: 0,
            context_size: 1,
        };
        let now = Some(Timestamp::from_unix_seconds(1_784_687_400));
        // Before any message, and after every message was evicted.
        tracker.append_blocks(&msg, 0);
        assert_eq!(tracker.message_count(), 0);
        tracker.push_message(&SliceMessage { role: Role::User, name: "user", blocks: &[] });
        tracker.evict_oldest(1);
        tracker.append_blocks(&msg, 0);
        let empty = SliceConversation(&[]);
        assert!(matches!(tracker.decide(&empty, &step, now).time, rules::TimeDecision::Inject(_)));
    }
}
