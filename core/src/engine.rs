//! The engine: one call per reasoning step, from context to hint.

use crate::args::{Capacity, Comparison};
use crate::clock::Clock;
use crate::config::error::{ConfigError, Warning};
use crate::config::Config;
use crate::conversation::Conversation;
use crate::live::LiveFields;
use crate::render::{self, HintTooLong};
use crate::rules::compiled::ValidConfig;
use crate::rules::scan;
use crate::rules::{self, Decision, Step, Warnings};

/// What one step produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Outcome<'b> {
    /// The hint to append to the context, or `None` when no dimension fired.
    pub hint: Option<&'b str>,
    /// Which dimensions fired, and why the time was skipped if it was.
    pub decision: Decision,
    /// Whether to emit a `HintBlockEvent` (a hint was made and
    /// `emit_hint_event` is on).
    pub event: bool,
    /// What the caller should know: deprecated fields, zone fallbacks.
    pub warnings: Warnings,
}

/// Runtime-state injection for one agent, with a validated configuration.
///
/// ```
/// use envaware::{Engine, Config, Step, FixedClock, Timestamp, SliceConversation};
///
/// let engine = Engine::new(Config::default())?;
/// let step = Step { agent_name: "Friday", tasks: Default::default(), cur_iter: 0,
///                   input_tokens: 1200, context_size: 128_000 };
/// let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400));
/// let mut buf = [0u8; 512];
/// let outcome = engine.step(&SliceConversation(&[]), &step, &mut clock, &mut (), &mut buf)?;
/// // The first reply records the time.
/// assert!(outcome.hint.unwrap().contains("<current-time>2026-07-22T02:30:00</current-time>"));
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
///
/// # The hint text
///
/// The fields are `<key>value</key>` lines in the reference's dict order:
/// `current-time`, `timezone`, `tasks`, `context-length`, `tool-error`, then
/// the extra fields with `dict.update` semantics (a colliding key keeps its
/// place and takes the new value). Every `{runtime_state}` in the template is
/// replaced, and the tool-error hint is `hint.replace("{tool_name}",
/// name).replace("{count}", count)`, all streamed: nothing is materialized.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Engine<'a> {
    config: ValidConfig<'a>,
}

impl<'a> Engine<'a> {
    /// Validates `config` and builds the engine.
    pub fn new(config: Config<'a>) -> Result<Self, ConfigError> {
        Ok(Engine { config: config.validate()? })
    }

    /// The engine with tool arguments compared at capacity `C` by the
    /// tool-error rule. [`Engine::new`] compares at
    /// [`DeviceCapacity`](crate::args::DeviceCapacity) (32 levels, under
    /// 1 KB of stack); a host that must match AgentScope on every argument
    /// it answers (up to about 985 levels) takes
    /// [`HostCapacity`](crate::args::HostCapacity). A program links only the
    /// capacities it names. Trackers and tracked contexts built from the
    /// engine keep its choice.
    ///
    /// ```
    /// use envaware::args::HostCapacity;
    /// use envaware::{Config, Engine};
    ///
    /// let engine = Engine::new(Config::default())?.with_argument_capacity::<HostCapacity>();
    /// # Ok::<(), envaware::ConfigError>(())
    /// ```
    pub fn with_argument_capacity<C: Capacity>(mut self) -> Self {
        self.config.arguments = Comparison::of::<C>();
        self
    }

    /// The validated configuration.
    pub fn config(&self) -> &ValidConfig<'a> {
        &self.config
    }

    /// Decides which dimensions fire, without rendering. `now` is `None`
    /// when the wall time is unknown: the time dimension is then skipped.
    /// No watch fires: use [`decide_with_readings`](Self::decide_with_readings)
    /// when watches are configured.
    pub fn decide<C: Conversation>(
        &self,
        conversation: &C,
        step: &Step<'_>,
        now: Option<crate::clock::Timestamp>,
    ) -> Decision {
        rules::decide(&self.config, conversation, step, now, &())
    }

    /// [`decide`](Self::decide), with the watched fields' readings: for a
    /// device that reads its sensors itself (an `await`) before deciding.
    /// Only the fields `injection_config.watch` names are read from
    /// `readings`; the other live fields are read when a hint fires.
    pub fn decide_with_readings<C: Conversation, L: LiveFields + ?Sized>(
        &self,
        conversation: &C,
        step: &Step<'_>,
        now: Option<crate::clock::Timestamp>,
        readings: &L,
    ) -> Decision {
        rules::decide(&self.config, conversation, step, now, readings)
    }

    /// What the context told of each watched field, by watch index (`None`:
    /// nothing told), as the watch rule reads it for `agent_name`'s steps:
    /// a full scan, for tools that show it (the tracker keeps its own).
    pub fn told<C: Conversation>(
        &self,
        conversation: &C,
        agent_name: &str,
    ) -> [Option<crate::config::watch::Decimal>; crate::config::watch::MAX_WATCHES] {
        scan::told(&self.config, conversation, agent_name).map(|t| t.and_then(|t| t.value))
    }

    /// When each watched field was last told, by watch index: the
    /// `created_at` of the hint [`told`](Self::told) reads (`None`: nothing
    /// told, or a hint with no `created_at`), from which `min_interval`
    /// and `max_interval` count.
    pub fn told_at<C: Conversation>(
        &self,
        conversation: &C,
        agent_name: &str,
    ) -> [Option<crate::time::CreatedAt>; crate::config::watch::MAX_WATCHES] {
        scan::told(&self.config, conversation, agent_name).map(|t| t.and_then(|t| t.at))
    }

    /// Reads the watched fields before a decision: [`LiveFields::refresh_watched`]
    /// when a watch is configured ([`watches`](Self::watches)), else nothing.
    pub(crate) fn read_watched<'l, L: LiveFields + ?Sized>(&self, live: &'l mut L) -> &'l L {
        if self.watches() {
            live.refresh_watched();
        }
        live
    }

    /// Whether a watch is configured: a step then reads its live fields
    /// before deciding.
    pub(crate) fn watches(&self) -> bool {
        !self.config.config.injection.watch.is_empty()
    }

    /// Renders the hint of `decision` into `out`; `None` when nothing fired.
    /// The live fields are read as they are: call [`LiveFields::refresh`]
    /// first if they need it ([`Engine::step`] does).
    pub fn render<'b, C: Conversation, L: LiveFields + ?Sized>(
        &self,
        decision: &Decision,
        conversation: &C,
        live: &L,
        out: &'b mut [u8],
    ) -> Result<Option<&'b str>, HintTooLong> {
        let newest = decision.tool_error.and_then(|_| conversation.newest(0));
        let tool_name = decision
            .tool_error
            .zip(newest.as_ref())
            .and_then(|(e, m)| e.tool_name(m))
            .unwrap_or("");
        render::render(&self.config, decision, tool_name, live, out)
    }

    /// One reasoning step: reads the clock and the watched fields, decides,
    /// refreshes the live fields only when something fires, and renders the
    /// hint into `out`.
    /// On [`HintTooLong`] nothing is returned to append: the context stays
    /// as it was.
    pub fn step<'b, C: Conversation, K: Clock + ?Sized, L: LiveFields + ?Sized>(
        &self,
        conversation: &C,
        step: &Step<'_>,
        clock: &mut K,
        live: &mut L,
        out: &'b mut [u8],
    ) -> Result<Outcome<'b>, HintTooLong> {
        let now = clock.now();
        let decision = self.decide_with_readings(conversation, step, now, self.read_watched(live));
        self.render_read(decision, conversation, live, out, self.watches())
    }

    /// The second half of [`Engine::step`], for callers that read their
    /// sensors between deciding and rendering (an `await` on an async
    /// sensor): given the `decision` of [`Engine::decide`], calls
    /// [`LiveFields::refresh`] when something fires and renders. The outcome
    /// is the one `step` gives: the event flag and every warning, the
    /// decision's and [`Warning::LiveFieldDropped`], are kept.
    ///
    /// ```
    /// use envaware::{Config, Engine, LiveReadings, SliceConversation, Step, Timestamp};
    ///
    /// let engine = Engine::new(Config::default())?;
    /// let context = SliceConversation(&[]);
    /// let step = Step { agent_name: "rover", tasks: Default::default(), cur_iter: 0,
    ///                   input_tokens: 0, context_size: 8192 };
    /// let decision = engine.decide(&context, &step, Some(Timestamp::from_unix_seconds(1_784_687_400)));
    /// let mut live: LiveReadings<'_, 1, 16> = LiveReadings::new(["temperature"]);
    /// if decision.fires() {
    ///     // let reading = sensor.read().await;
    ///     live.record(0, Ok::<_, ()>("21.5 °C"));
    /// }
    /// let mut buf = [0u8; 512];
    /// let outcome = engine.render_step(decision, &context, &mut live, &mut buf)?;
    /// assert!(outcome.event);
    /// assert!(outcome.hint.unwrap().contains("<temperature>21.5 °C</temperature>"));
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn render_step<'b, C: Conversation, L: LiveFields + ?Sized>(
        &self,
        decision: Decision,
        conversation: &C,
        live: &mut L,
        out: &'b mut [u8],
    ) -> Result<Outcome<'b>, HintTooLong> {
        self.render_read(decision, conversation, live, out, false)
    }

    /// [`render_step`](Self::render_step) after the step read its fields
    /// before deciding (`read_before`): then only the fields it did not
    /// read are read, so a reading is taken once per step.
    pub(crate) fn render_read<'b, C: Conversation, L: LiveFields + ?Sized>(
        &self,
        decision: Decision,
        conversation: &C,
        live: &mut L,
        out: &'b mut [u8],
        read_before: bool,
    ) -> Result<Outcome<'b>, HintTooLong> {
        let mut warnings = decision.warnings;
        if decision.fires() {
            if read_before {
                live.refresh_unwatched();
            } else {
                live.refresh();
            }
            if render::drops_live_field(&self.config, live) {
                warnings.insert(Warning::LiveFieldDropped);
            }
        }
        let hint = self.render(&decision, conversation, live, out)?;
        Ok(Outcome {
            hint,
            decision,
            event: hint.is_some() && self.config.config().injection.emit_hint_event,
            warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{FixedClock, Timestamp};
    use crate::config::{ExtraFields, InjectionConfig};
    use crate::conversation::{Block, HintText, Role, SliceConversation, SliceMessage};

    const NOW: i64 = 1_784_687_400;

    fn step() -> Step<'static> {
        Step {
            agent_name: "rover",
            tasks: Default::default(),
            cur_iter: 1,
            input_tokens: 0,
            context_size: 1000,
        }
    }

    /// Live fields that count their refreshes.
    struct Counting<'a> {
        refreshed: u32,
        fields: ExtraFields<'a>,
    }

    impl LiveFields for Counting<'_> {
        fn refresh(&mut self) {
            self.refreshed += 1;
        }
        fn len(&self) -> usize {
            self.fields.len()
        }
        fn field(&self, i: usize) -> Option<(&str, &str)> {
            self.fields.get(i)
        }
    }

    #[test]
    fn the_event_is_raised_only_with_a_hint_and_only_when_asked() {
        let recorded = [Block::Hint {
            source: Some(crate::config::DEFAULT_INJECTION_SOURCE),
            text: HintText::Single("<current-time>2026-07-22T02:25:00</current-time>"),
            created_at: None,
        }];
        let msgs = [SliceMessage { role: Role::Assistant, name: "rover", blocks: &recorded }];
        let (fresh, empty) = (SliceConversation(&msgs), SliceConversation(&[]));
        for emit in [true, false] {
            let config = Config {
                injection: InjectionConfig { emit_hint_event: emit, ..Default::default() },
                ..Default::default()
            };
            let engine = Engine::new(config).unwrap();
            assert_eq!(engine.config().config().injection.emit_hint_event, emit);
            let mut out = [0u8; 512];
            let mut clock = FixedClock::at(Timestamp::from_unix_seconds(NOW));
            let fired = engine.step(&empty, &step(), &mut clock, &mut (), &mut out).unwrap();
            assert!(fired.hint.is_some());
            assert_eq!(fired.event, emit);
            let quiet = engine.step(&fresh, &step(), &mut clock, &mut (), &mut out).unwrap();
            assert_eq!(
                (quiet.hint, quiet.event, quiet.decision),
                (None, false, Decision { time: rules::TimeDecision::NotDue, ..quiet.decision })
            );
        }
    }

    #[test]
    fn engine_new_refuses_a_zone_typo_in_strict_mode_only() {
        let config = |strict| Config {
            injection: InjectionConfig { strict, timezone: "Europe/Berln", ..Default::default() },
            ..Default::default()
        };
        let e = Engine::new(config(true)).unwrap_err();
        assert!(
            std::format!("{e}").contains("time zone \"Europe/Berln\" is not a known IANA zone"),
            "{e}"
        );
        let engine = Engine::new(config(false)).unwrap();
        assert!(engine.config().warnings().any(|w| w == Warning::TimezoneFellBackToUtc));
    }

    #[test]
    fn live_fields_are_refreshed_only_when_something_fires_and_a_dropped_one_is_a_warning() {
        let config = Config {
            injection: InjectionConfig { strict: true, ..Default::default() },
            ..Default::default()
        };
        let engine = Engine::new(config).unwrap();
        let fields = [("tasks", "spoofed"), ("temperature", "21 °C")];
        let mut live = Counting { refreshed: 0, fields: ExtraFields::Slice(&fields) };
        let mut out = [0u8; 1024];
        let empty = SliceConversation(&[]);
        let now = Some(Timestamp::from_unix_seconds(NOW));
        let outcome = engine
            .render_step(engine.decide(&empty, &step(), now), &empty, &mut live, &mut out)
            .unwrap();
        assert_eq!(live.refreshed, 1);
        assert!(outcome.warnings.contains(Warning::LiveFieldDropped));
        let hint = outcome.hint.unwrap();
        assert!(
            hint.contains("<temperature>21 °C</temperature>") && !hint.contains("spoofed"),
            "{hint}"
        );
        // Nothing fires: no refresh, no warning.
        let outcome = engine.render_step(Decision::NONE, &empty, &mut live, &mut out).unwrap();
        assert_eq!((live.refreshed, outcome.hint), (1, None));
        assert!(!outcome.warnings.contains(Warning::LiveFieldDropped));
        // Outside strict mode the live key replaces the built-in one.
        let engine = Engine::new(Config::default()).unwrap();
        let outcome = engine
            .render_step(engine.decide(&empty, &step(), now), &empty, &mut live, &mut out)
            .unwrap();
        assert!(outcome.warnings.is_empty());
        assert_eq!(live.refreshed, 2);
    }
}
