//! The on-device agent: a scripted session of Sprout, a greenhouse robot,
//! run through the envaware core, as an `async fn` ([`run`]). Generic over
//! the [`Sensor`] it awaits (the board's sensor task, or the async TMP105
//! driver itself), the wall clock ([`envaware::Clock`]), the [`Pacer`] (the
//! idle time between steps, which the environment can cut short, and the
//! model's reply) and the [`Output`]; nothing here knows the board or the
//! executor.
//!
//! The script ([`SCRIPT`]) makes each dimension due at a known step:
//!
//! | step | what happens                                   | hint fields                         |
//! |------|------------------------------------------------|-------------------------------------|
//! | 0    | first reply                                    | current-time, timezone              |
//! | 1    | the operator schedules 3 tasks                 | tasks                               |
//! | 2    | the agent lists and starts a task              | (none, unless the temperature moved)|
//! | 3, 4 | `OpenVent` fails, arguments in another order   | (none)                              |
//! | 5    | `OpenVent` fails a third time                  | tool-error                          |
//! | 6    | 40 s later (beyond the 36 s interval)          | current-time, timezone              |
//! | 7    | a long log fills the context                   | context-length                      |
//! | 8    | the agent compresses: the store keeps 1 message| current-time, timezone, tasks       |
//! | 9    | tasks done, the robot docks                    | (none)                              |
//!
//! Every hint also carries the live fields `temperature` and `uptime`. The
//! agent watches its temperature ([`WATCH`]: a change of 2.0 °C from what
//! it was last told, or crossing 28.0 °C with 0.5 °C of hysteresis), so
//! the TMP105 is awaited at every step, before deciding, and a step whose
//! temperature moved injects a hint by itself; the uptime is read only
//! when a hint fires. When the sensor cannot be read, `temperature` says
//! `unavailable` (which never fires the watch) and the run goes on.
//!
//! Between steps, a reading that would fire the watch wakes the agent
//! ([`Pacer::idle`] returns it; [`wakes`] asks the core): it then takes an
//! environment step, a reply with no user message whose hint tells the
//! reading.

use core::fmt::Write as _;

use embedded_storage_async::nor_flash::MultiwriteNorFlash;
use envaware::Block;
use envaware::{
    AgentContext, Clock, Config, ContextConfig, Decimal, Engine, InjectionConfig, LiveFields, StepInput, TaskCounts, Timestamp,
    ToolResultState, Watch, WatchList, MAX_WATCHES,
};

use envaware::journal::{Event as JournalEvent, Items, Journal};

use crate::fmt::Debug2Format;
use crate::log::SessionLog;
use crate::stream::Stream;
use crate::tmp105::{self, Temperature, Tmp105};

/// The agent's name.
pub const AGENT: &str = "Sprout";
/// The zone the hints are written in (the only one compiled in besides UTC).
pub const TIMEZONE: &str = "Europe/Berlin";
/// Hours after which the time is injected again: 36 seconds, so that the
/// script shows it without a long run.
pub const TIME_INTERVAL_HOURS: f64 = 0.01;
/// The model's context window, in tokens.
pub const CONTEXT_SIZE: i64 = 4096;
/// `mantissa × 10^-scale`, in a constant.
const fn decimal(mantissa: i64, scale: u32) -> Decimal {
    match Decimal::new(mantissa, scale) {
        Some(d) => d,
        None => Decimal::ZERO,
    }
}

/// The temperature watch: told again after a change of 2.0 °C, or on
/// crossing 28.0 °C (and back below 27.5 °C).
pub const WATCH: [(&str, Watch); 1] =
    [("temperature", Watch { change: Some(decimal(20, 1)), above: Some(decimal(280, 1)), below: None, hysteresis: decimal(5, 1) })];

/// What the temperature field says when the sensor cannot be read: the
/// core's word for a live field that could not be read.
pub use envaware::UNAVAILABLE;

/// The context: 16 messages, 48 blocks, 4 KiB of strings (a hint at every
/// step, when the watched temperature swings, fills 3), with the tracker
/// that keeps each decision's reading constant.
pub type Context<'a> = AgentContext<'a, 16, 48, 4096>;

/// What the agent's surroundings do between steps; the board provides it.
///
/// The board's pacer (`src/board.rs`) awaits embassy-time timers and the
/// sensor task's wake; a host test's returns at once.
#[allow(async_fn_in_trait)]
pub trait Pacer {
    /// Called before each step (a host handshake under QEMU).
    fn before_step(&mut self, index: usize);
    /// Lets the board's time pass until `ms` milliseconds after the first
    /// call for step `index` (the idle time before it), unless the
    /// environment wakes the agent first: then returns the reading that
    /// woke it, and the next call for the same step waits for the rest.
    async fn idle(&mut self, index: usize, ms: u32) -> Option<Woken>;
    /// The model's reply to the prompt that step `index` (`None`: an
    /// environment step) sent: a scripted delay, as a call over a network
    /// would take, while the sensors go on sampling.
    async fn model_reply(&mut self, index: Option<usize>);
    /// What the context now tells of each watched field (by watch index,
    /// the core's [`Engine::told`]): a reading that would fire a watch
    /// against it wakes the agent.
    fn told(&mut self, told: [Option<Decimal>; MAX_WATCHES]) {
        let _ = told;
    }
    /// Called once after the last step.
    fn finished(&mut self);
    /// Called after step `index` is logged (the board may reset here).
    fn after_step(&mut self, index: usize) {
        let _ = index;
    }
    /// Called when the session was restored from the log, before its next
    /// step (the board puts its clock back here).
    fn resumed(&mut self) {}
}

/// The environment woke the agent: a watched reading moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Woken {
    /// The temperature that would fire the watch.
    pub temperature: Temperature,
}

/// Whether a new `temperature` reading would fire a watch on the
/// temperature, given what the context told (`told`, by watch index, as
/// [`Engine::told`] gives it). The core's rule decides ([`Watch::fires`]
/// on the reading's leading decimal, as the core reads a live field); with
/// no watch configured nothing wakes the agent.
pub fn wakes(watches: &WatchList<'_>, told: &[Option<Decimal>; MAX_WATCHES], temperature: &str) -> bool {
    let value = Decimal::leading(temperature.bytes()).map(|(d, _)| d);
    watches.iter().zip(told).any(|((name, watch), told)| name == "temperature" && watch.fires(value, *told))
}

/// The temperature sensor, as the agent awaits it: the board's sensor task
/// (which owns the bus), or the async driver itself on the host.
#[allow(async_fn_in_trait)]
pub trait Sensor {
    /// The bus's error.
    type Error: embedded_hal::i2c::Error;
    /// A reading taken now.
    async fn read(&mut self) -> Result<Temperature, tmp105::Error<Self::Error>>;
}

impl<I: embedded_hal_async::i2c::I2c> Sensor for Tmp105<I> {
    type Error = I::Error;
    async fn read(&mut self) -> Result<Temperature, tmp105::Error<I::Error>> {
        self.read_async().await
    }
}

/// Where the session's transcript goes: each step's header, its hint in
/// full (or that there was none), and the session streamed as AgentScope
/// JSON. The board prints it ([`DefmtOutput`]); the host tests record it.
/// Diagnostics (sensor reads, decisions, compressions) go to the log instead.
pub trait Output {
    /// Step `index` begins; `note` says what happens in it.
    fn step(&mut self, index: usize, note: &str);
    /// The hint the step injected.
    fn hint(&mut self, hint: &str);
    /// The step injected nothing; `sensor_read`: whether the fields read
    /// only for a hint (the uptime) were read anyway (they must not be; the
    /// watched temperature is read at every step).
    fn no_injection(&mut self, sensor_read: bool);
    /// Whether the temperature watch fired at this step, and the reading
    /// it compared.
    fn watch(&mut self, temperature: &str, fired: bool) {
        let _ = (temperature, fired);
    }
    /// The environment woke the agent in the idle time before step
    /// `before`: an environment step begins, started by the `temperature`
    /// reading (no user message).
    fn woken(&mut self, before: usize, temperature: &str);
    /// One line of the streamed session (see [`crate::stream`]), without
    /// the [`PREFIX`](crate::stream::PREFIX).
    fn stream(&mut self, line: &str);
}

/// The transcript as defmt `println!` lines: `=== step N: note` (or
/// `=== environment step before step N: woken by temperature: T`), the hint,
/// `(no injection; uptime read: false)`, `watch temperature T: fired` or
/// `quiet`, and each streamed line after
/// [`PREFIX`](crate::stream::PREFIX).
#[cfg(feature = "defmt")]
#[derive(Debug, Default)]
pub struct DefmtOutput;

#[cfg(feature = "defmt")]
impl Output for DefmtOutput {
    fn step(&mut self, index: usize, note: &str) {
        defmt::println!("=== step {=usize}: {=str}", index, note);
    }

    fn hint(&mut self, hint: &str) {
        defmt::println!("{=str}", hint);
    }

    fn no_injection(&mut self, sensor_read: bool) {
        defmt::println!("(no injection; uptime read: {=bool})", sensor_read);
    }

    fn watch(&mut self, temperature: &str, fired: bool) {
        defmt::println!("watch temperature {=str}: {=str}", temperature, if fired { "fired" } else { "quiet" });
    }

    fn woken(&mut self, before: usize, temperature: &str) {
        defmt::println!("=== environment step before step {=usize}: woken by temperature: {=str}", before, temperature);
    }

    fn stream(&mut self, line: &str) {
        defmt::println!("{=str}{=str}", crate::stream::PREFIX, line);
    }
}

/// Something that happens in the context before a step.
#[derive(Debug, Clone, Copy)]
pub enum Event {
    /// A user (operator) message.
    User,
    /// The agent's own blocks: appended to its message of the current reply
    /// when that is the newest, else a new message (as AgentScope's
    /// `append_context`).
    Agent(&'static [Block<'static>]),
    /// The agent compresses its context, keeping the newest messages.
    Compress {
        /// Messages kept.
        keep: usize,
    },
}

/// One scripted reasoning step.
#[derive(Debug, Clone, Copy)]
pub struct ScriptStep {
    /// What happens, for the log.
    pub note: &'static str,
    /// When the step is due, in milliseconds after the step before was due.
    pub wait_ms: u32,
    /// What enters the context before the step.
    pub events: &'static [Event],
    /// The plan's task counts at this step.
    pub tasks: TaskCounts,
    /// The iteration within the current reply.
    pub cur_iter: u64,
    /// The model's token count for this step's input.
    pub input_tokens: i64,
}

const fn tasks(pending: u64, in_progress: u64) -> TaskCounts {
    TaskCounts { pending, in_progress }
}

const fn call(id: &'static str, name: &'static str, input: &'static str) -> Block<'static> {
    Block::ToolCall { id, name, input }
}

const fn result(id: &'static str, name: &'static str, state: ToolResultState) -> Block<'static> {
    Block::ToolResult { id, name, state }
}

use ToolResultState::{Error as Failed, Success as Done};

/// The session.
pub const SCRIPT: &[ScriptStep] = &[
    ScriptStep {
        note: "morning round: the operator asks for a greenhouse check",
        wait_ms: 0,
        events: &[Event::User],
        tasks: tasks(0, 0),
        cur_iter: 0,
        input_tokens: 900,
    },
    ScriptStep {
        note: "the operator schedules 3 tasks",
        wait_ms: 1_000,
        events: &[Event::Agent(&[Block::Other]), Event::User],
        tasks: tasks(3, 0),
        cur_iter: 0,
        input_tokens: 1_100,
    },
    ScriptStep {
        note: "the agent lists its tasks and starts watering bed A",
        wait_ms: 2_000,
        events: &[Event::Agent(&[
            call("c1", "TaskList", "{}"),
            result("c1", "TaskList", Done),
            call("c2", "TaskUpdate", r#"{"id": 1, "state": "in_progress"}"#),
            result("c2", "TaskUpdate", Done),
        ])],
        tasks: tasks(2, 1),
        cur_iter: 1,
        input_tokens: 1_300,
    },
    ScriptStep {
        note: "OpenVent fails",
        wait_ms: 1_500,
        events: &[Event::Agent(&[call("c3", "OpenVent", r#"{"vent": 2, "angle": 45}"#), result("c3", "OpenVent", Failed)])],
        tasks: tasks(2, 1),
        cur_iter: 2,
        input_tokens: 1_400,
    },
    ScriptStep {
        note: "OpenVent fails again, same arguments in another key order",
        wait_ms: 1_500,
        events: &[Event::Agent(&[call("c4", "OpenVent", r#"{"angle": 45, "vent": 2}"#), result("c4", "OpenVent", Failed)])],
        tasks: tasks(2, 1),
        cur_iter: 3,
        input_tokens: 1_500,
    },
    ScriptStep {
        note: "OpenVent fails a third time",
        wait_ms: 1_500,
        events: &[Event::Agent(&[call("c5", "OpenVent", r#"{"angle":45,"vent":2}"#), result("c5", "OpenVent", Failed)])],
        tasks: tasks(2, 1),
        cur_iter: 4,
        input_tokens: 1_600,
    },
    ScriptStep {
        note: "40 s later: bed A watered, the operator asks for a status",
        wait_ms: 40_000,
        events: &[Event::Agent(&[call("c6", "Water", r#"{"bed": "A", "litres": 2}"#), result("c6", "Water", Done)]), Event::User],
        tasks: tasks(1, 1),
        cur_iter: 0,
        input_tokens: 2_000,
    },
    ScriptStep {
        note: "a day of humidity logs fills the context",
        wait_ms: 3_000,
        events: &[
            Event::Agent(&[call("c7", "ReadLog", r#"{"sensor": "humidity", "hours": 24}"#), result("c7", "ReadLog", Done)]),
            Event::User,
        ],
        tasks: tasks(1, 1),
        cur_iter: 0,
        input_tokens: 2_600,
    },
    ScriptStep {
        note: "the agent compresses its context",
        wait_ms: 2_000,
        events: &[Event::Agent(&[call("c8", "CompressContext", "{}"), result("c8", "CompressContext", Done)]), Event::Compress { keep: 1 }],
        tasks: tasks(1, 1),
        cur_iter: 1,
        input_tokens: 700,
    },
    ScriptStep {
        note: "all tasks done: the robot docks",
        wait_ms: 5_000,
        events: &[Event::Agent(&[
            call("c9", "TaskUpdate", r#"{"id": 1, "state": "completed"}"#),
            result("c9", "TaskUpdate", Done),
            call("c10", "Dock", "{}"),
            result("c10", "Dock", Done),
        ])],
        tasks: tasks(0, 0),
        cur_iter: 2,
        input_tokens: 800,
    },
];

/// The engine's configuration for the session.
pub fn config() -> Config<'static> {
    Config {
        injection: InjectionConfig {
            timezone: TIMEZONE,
            time_interval: TIME_INTERVAL_HOURS,
            watch: WatchList::Slice(&WATCH),
            ..InjectionConfig::default()
        },
        context: ContextConfig { compression_tool_enabled: true, ..ContextConfig::default() },
    }
}

/// The live fields: the TMP105's temperature, awaited from the [`Sensor`]
/// and recorded here before deciding (it is watched), and the board's
/// uptime, read when an injection fires.
#[derive(Debug)]
pub struct SensorFields<U> {
    uptime_ms: U,
    temperature: heapless::String<24>,
    uptime: heapless::String<24>,
    /// Successful sensor reads.
    pub reads: u32,
    /// Failed sensor reads.
    pub failures: u32,
    /// Reads of the fields that are read only for a hint (the uptime).
    pub refreshes: u32,
}

impl<U: Fn() -> u32> SensorFields<U> {
    /// Fields with `uptime_ms` reading the board's uptime.
    pub fn new(uptime_ms: U) -> Self {
        let (temperature, uptime) = (heapless::String::new(), heapless::String::new());
        SensorFields { uptime_ms, temperature, uptime, reads: 0, failures: 0, refreshes: 0 }
    }

    /// The temperature as the hint writes it.
    pub fn temperature(&self) -> &str {
        &self.temperature
    }

    /// Records a reading of the sensor (logged), or why there is none.
    pub fn record<E: embedded_hal::i2c::Error>(&mut self, reading: Result<Temperature, tmp105::Error<E>>) {
        self.temperature.clear();
        // Both strings have room for their longest value: the writes cannot fail.
        match reading {
            Ok(t) => {
                self.reads += 1;
                let _ = write!(self.temperature, "{t}");
                info!("TMP105 read: {=str}", self.temperature);
            }
            Err(e) => {
                self.failures += 1;
                match e {
                    tmp105::Error::Configure(_) => warn!("TMP105 unavailable (configure): {}", Debug2Format(&e.kind())),
                    tmp105::Error::Read(_) => warn!("TMP105 unavailable (read): {}", Debug2Format(&e.kind())),
                    tmp105::Error::Implausible([hi, lo]) => warn!("TMP105 unavailable (implausible reading {=u8:02X} {=u8:02X})", hi, lo),
                }
                let _ = self.temperature.push_str(UNAVAILABLE);
            }
        }
    }
}

impl<U: Fn() -> u32> LiveFields for SensorFields<U> {
    fn refresh_watched(&mut self) {
        // The temperature was awaited and recorded before deciding.
    }

    fn refresh(&mut self) {
        self.refreshes += 1;
        let ms = (self.uptime_ms)();
        self.uptime.clear();
        let _ = write!(self.uptime, "{}.{:03} s", ms / 1000, ms % 1000);
    }

    fn len(&self) -> usize {
        2
    }

    fn field(&self, i: usize) -> Option<(&str, &str)> {
        match i {
            0 => Some(("temperature", &self.temperature)),
            1 => Some(("uptime", &self.uptime)),
            _ => None,
        }
    }
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Summary {
    /// Steps run.
    pub steps: usize,
    /// Hints injected.
    pub hints: usize,
    /// Successful sensor reads.
    pub reads: u32,
    /// Failed sensor reads.
    pub failures: u32,
    /// Messages the store evicted.
    pub evicted: u32,
    /// The most messages one decision read.
    pub max_read: usize,
    /// Times the session log was compacted (its region filled).
    pub compactions: u32,
}

/// Reads the log back into `context` (see [`crate::log`]) and returns the
/// steps it held; an empty or refused log starts a new one (a refused one
/// with a warning) from an empty context.
async fn resume<S: MultiwriteNorFlash>(
    log: &mut SessionLog<S>,
    journal: &mut Journal<16>,
    context: &mut Context<'_>,
    items: &mut [u8],
    scratch: &mut [u8],
    stream: &mut Stream,
) -> usize {
    match log.restore(journal, context, items, scratch, |context, now| stream.stamp(context, now)).await {
        Ok(steps) if journal.items() > 0 => {
            info!("restored {=u32} events", journal.restored_events());
            return steps;
        }
        Ok(_) => {}
        Err(e) => {
            warn!("the log is not restored, starting empty: {}", e);
            *context = Context::new(context.engine(), AGENT);
            *journal = Journal::new(context);
            stream.forget();
            if log.clear().await.is_err() {
                error!("the log could not be erased");
            }
        }
    }
    let written = match journal.start(context, items) {
        Ok(n) => log.append(&items[..n]).await.is_ok(),
        Err(_) => false,
    };
    if !written {
        error!("the log's header was not written");
    }
    0
}

/// The session's state across its steps.
struct Session<'e, U> {
    context: Context<'e>,
    journal: Journal<16>,
    live: SensorFields<U>,
    stream: Stream,
    hint_buf: [u8; 1024],
    items: [u8; crate::log::MAX_ITEM],
    summary: Summary,
}

impl<U: Fn() -> u32> Session<'_, U> {
    /// Records `event` in the context and the log.
    async fn record<S: MultiwriteNorFlash>(&mut self, event: &JournalEvent<'_>, log: &mut SessionLog<S>) {
        self.summary.compactions += make_room(log, &mut self.journal, &self.context, &mut self.items).await;
        match self.journal.record(&mut self.context, event, &mut self.items) {
            Ok(written) => append(log, &written, &self.items).await,
            Err(e) => error!("not recorded: {}", e),
        }
    }

    /// Awaits the sensor, or takes the reading that woke the agent.
    async fn read<Se: Sensor>(&mut self, sensor: &mut Se, woken: Option<Temperature>) {
        match woken {
            Some(t) => self.live.record::<Se::Error>(Ok(t)),
            None => self.live.record(sensor.read().await),
        }
    }

    /// One step through the core's split API, logged: the watched sensor
    /// is awaited before deciding (the reading that woke the agent, in an
    /// environment step), a sensor read only for a hint after deciding,
    /// and only when something fires; then the hint is rendered.
    async fn step<Se: Sensor, O: Output, S: MultiwriteNorFlash>(
        &mut self,
        input: &StepInput,
        now: Option<Timestamp>,
        sensor: &mut Se,
        woken: Option<Temperature>,
        output: &mut O,
        log: &mut SessionLog<S>,
    ) {
        let refreshes_before = self.live.refreshes;
        // The clock is read once, so the stream carries the very time decided on.
        self.stream.before_step(output, &self.context, now, now, input.tasks);
        let watched = !self.context.engine().config().config().injection.watch.is_empty();
        if watched {
            self.read(sensor, woken).await;
        }
        self.summary.compactions += make_room(log, &mut self.journal, &self.context, &mut self.items).await;
        let decision = match self.journal.decide(&mut self.context, input, now, &self.live, &mut self.items) {
            Ok((decision, written)) => {
                append(log, &written, &self.items).await;
                decision
            }
            Err(e) => return error!("hint dropped: {}", e),
        };
        if !watched && decision.fires() {
            self.read(sensor, woken).await;
        }
        let fired = !decision.watch.is_empty();
        match self.journal.render_step(&mut self.context, decision, input, &mut self.live, &mut self.hint_buf, &mut self.items) {
            Ok((outcome, written)) => {
                append(log, &written, &self.items).await;
                output.watch(self.live.temperature(), fired);
                info!("decision read {=usize} messages of {=usize}", self.context.messages_read(), self.context.len());
                self.summary.max_read = self.summary.max_read.max(self.context.messages_read());
                self.stream.step(output, &self.live, input.cur_iter, input.input_tokens);
                for w in outcome.warnings.iter() {
                    warn!("{}", w);
                }
                match outcome.hint {
                    Some(hint) => {
                        self.summary.hints += 1;
                        output.hint(hint);
                        if outcome.event {
                            info!("HintBlockEvent emitted");
                        }
                    }
                    None => output.no_injection(self.live.refreshes != refreshes_before),
                }
            }
            Err(e) => error!("hint dropped: {}", e),
        }
    }

    /// What the context tells of each watched field now, for the pacer.
    fn told(&self) -> [Option<Decimal>; MAX_WATCHES] {
        self.context.engine().told(self.context.store(), AGENT)
    }
}

/// Runs the scripted session, awaiting the TMP105 through `sensor` and
/// reading the board's uptime from `uptime_ms`. Writes each step's hint in
/// full to `output` and streams the session there as AgentScope JSON; logs
/// the messages each decision read.
///
/// Between steps the agent is idle ([`Pacer::idle`]); when the environment
/// wakes it (a reading that would fire a watch), it starts a reply with no
/// user message and takes an environment step with that reading. After
/// each step it awaits its model's reply ([`Pacer::model_reply`]).
///
/// The session is logged in `log` ([`crate::log`]); a session found there
/// (after a reset) is restored and goes on from the step after its last.
pub async fn run<Se: Sensor, K: Clock, P: Pacer, O: Output, S: MultiwriteNorFlash>(
    sensor: &mut Se,
    clock: &mut K,
    pacer: &mut P,
    output: &mut O,
    uptime_ms: impl Fn() -> u32,
    log: &mut SessionLog<S>,
) -> Summary {
    let summary = Summary { steps: 0, hints: 0, reads: 0, failures: 0, evicted: 0, max_read: 0, compactions: 0 };
    let engine = match Engine::new(config()) {
        Ok(e) => e,
        Err(e) => {
            error!("invalid configuration: {}", e);
            return summary;
        }
    };
    for w in engine.config().warnings() {
        warn!("configuration: {}", w);
    }
    let context = Context::new(&engine, AGENT);
    let journal = Journal::new(&context);
    let stream = Stream::new(envaware::resolve_zone(TIMEZONE).unwrap_or(envaware::Zone::Utc));
    let live = SensorFields::new(uptime_ms);
    let mut s = Session { context, journal, live, stream, hint_buf: [0; 1024], items: [0; crate::log::MAX_ITEM], summary };
    let first = resume(log, &mut s.journal, &mut s.context, &mut s.items, &mut s.hint_buf, &mut s.stream).await;
    s.stream.start(output);
    pacer.told(s.told());
    // Last before the first idle time, as the uninterrupted session goes
    // from its last step's end to its next idle time (under `-icount`,
    // work is board time: a scan here would move the next deadline).
    if first > 0 {
        pacer.resumed();
    }
    for (index, step) in SCRIPT.iter().enumerate().skip(first) {
        while let Some(woken) = pacer.idle(index, step.wait_ms).await {
            let mut text: heapless::String<24> = heapless::String::new();
            let _ = write!(text, "{}", woken.temperature);
            info!("woken by temperature: {=str}", text);
            output.woken(index, &text);
            // A reply the environment started: no user message before it.
            s.record(&JournalEvent::Reply, log).await;
            s.stream.woken(output, &text);
            let last = &SCRIPT[index.saturating_sub(1)];
            let input = StepInput { tasks: last.tasks, cur_iter: 0, input_tokens: last.input_tokens, context_size: CONTEXT_SIZE };
            s.step(&input, clock.now(), sensor, Some(woken.temperature), output, log).await;
            pacer.told(s.told());
            pacer.model_reply(None).await;
        }
        pacer.before_step(index);
        output.step(index, step.note);
        for event in step.events {
            let before = s.context.len();
            s.record(
                &match *event {
                    Event::User => JournalEvent::User { name: "operator" },
                    Event::Agent(blocks) => JournalEvent::Assistant(blocks),
                    Event::Compress { keep } => JournalEvent::Compress { keep },
                },
                log,
            )
            .await;
            if let Event::Compress { .. } = event {
                info!("context compressed: {=usize} messages evicted, {=usize} kept", before - s.context.len(), s.context.len());
            }
        }
        let input = StepInput { tasks: step.tasks, cur_iter: step.cur_iter, input_tokens: step.input_tokens, context_size: CONTEXT_SIZE };
        s.step(&input, clock.now(), sensor, None, output, log).await;
        pacer.told(s.told());
        pacer.model_reply(Some(index)).await;
        s.summary.steps += 1;
        pacer.after_step(index);
    }
    pacer.finished();
    let mut summary = s.summary;
    summary.reads = s.live.reads;
    summary.failures = s.live.failures;
    summary.evicted = s.context.store().evicted_total();
    summary
}

/// Compacts the log if its region fills; 1 when it did.
async fn make_room<S: MultiwriteNorFlash>(log: &mut SessionLog<S>, journal: &mut Journal<16>, context: &Context<'_>, buf: &mut [u8]) -> u32 {
    match log.make_room(journal, context, buf).await {
        Ok(0) => 0,
        Ok(popped) => {
            info!("the log is compacted: {=u32} items popped (the context holds none of their messages)", popped);
            1
        }
        Err(e) => {
            error!("the log could not be compacted: {}", e);
            0
        }
    }
}

/// Appends the items one record or step wrote.
async fn append<S: MultiwriteNorFlash>(log: &mut SessionLog<S>, written: &Items, items: &[u8]) {
    for item in written.iter(items) {
        if log.append(item).await.is_err() {
            error!("the log refused an item: the session after it is not restored after a reset");
        }
    }
}
