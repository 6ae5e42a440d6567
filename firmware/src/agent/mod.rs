//! The on-device agent: a scripted session of Sprout, a greenhouse robot,
//! run through the envaware core, as an `async fn` ([`run`]). Generic over
//! the [`Sensor`] it awaits (the board's sensor task, or the async TMP105
//! driver itself), the wall clock ([`envaware::Clock`]), the [`Pacer`] (the
//! idle time between steps, which the environment can cut short, and the
//! model's reply) and the [`Output`]; nothing here knows the board or the
//! executor.
//!
//! - [`session`]: the agent's name, zone, configuration and script;
//! - [`ports`]: the traits the board implements around it;
//! - [`fields`]: the live fields its hints carry;
//! - this module: the agent loop, [`run`].
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

use embassy_sync::blocking_mutex::raw::RawMutex;
use embassy_sync::mutex::Mutex;
use embedded_storage_async::nor_flash::MultiwriteNorFlash;
use envaware::journal::{
    Event as JournalEvent, ItemError, ItemKind, ItemReader, LogError, Session,
};
use envaware::openai::{ChatResponse, MAX_TOOL_CALLS};
use envaware::{
    Block, Clock, CreatedAt, Decimal, Engine, StepInput, Timestamp, WatchFire, WatchList,
    MAX_WATCHES,
};

use crate::http::{ExchangeError, Exchanged};
use crate::log::{RestoreError, SessionLog};
use crate::stream::Stream;
use crate::tmp105::Temperature;

pub mod fields;
pub mod ports;
pub mod session;
pub mod tools;

pub use self::fields::{SensorFields, UNAVAILABLE};
#[cfg(feature = "defmt")]
pub use self::ports::DefmtOutput;
pub use self::ports::{watch_fire_name, Output, Pacer, Sensor, TellingAge, Told, Woken};
pub use self::session::{
    config, Call, Context, Event, Reply, ScriptStep, AGENT, CONTEXT_SIZE, ENVIRONMENT_REPLY,
    MAX_INTERVAL_SECS, MAX_REPLY, MIN_INTERVAL_SECS, MODEL, REQUEST, SCRIPT, SYSTEM_PROMPT,
    TIMEZONE, TIME_INTERVAL_HOURS, WATCH,
};

/// Why a new `temperature` reading would fire the temperature watch, or
/// not, given what the context told (`told`: by watch index, as
/// [`Engine::told`] gives it, with each telling's age now). The core's rule
/// decides ([`Watch::fires`](envaware::Watch::fires) on the reading's
/// leading decimal, as the core reads a live field); with no temperature
/// watch configured it is quiet.
///
/// The environment wakes the agent only for [`WatchFire::Value`]: a
/// change held back by `min_interval` waits for the floor to pass, and a
/// heartbeat (`max_interval`) is told at the agent's next step, without
/// a model call of its own (with no clock its age is unknown, and it would
/// wake the agent at every sample).
pub fn watch_fire(watches: &WatchList<'_>, told: &Told, temperature: &str) -> WatchFire {
    let value = Decimal::leading(temperature.bytes()).map(|(d, _)| d);
    watches
        .iter()
        .zip(told.values.iter().zip(&told.ages))
        .find(|((name, _), _)| *name == "temperature")
        .map_or(WatchFire::Quiet, |((_, watch), (told, age))| watch.fires(value, *told, *age))
}

/// Whether a new `temperature` reading wakes the agent: it would fire the
/// temperature watch by its value ([`watch_fire`]).
pub fn wakes(watches: &WatchList<'_>, told: &Told, temperature: &str) -> bool {
    watch_fire(watches, told, temperature) == WatchFire::Value
}

/// The age at `now` of a telling made at `at`: unknown for a wall-clock
/// `created_at` (the device's own hints carry instants) or one later than
/// `now`.
fn age(at: Option<CreatedAt>, now: Option<Timestamp>) -> Option<i64> {
    match (at?, now?) {
        (CreatedAt::Instant(at), now) => now.0.checked_sub(at.0).filter(|a| *a >= 0),
        (CreatedAt::WallClock(_), _) => None,
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
    /// The number the log's next item would get: every item before it is
    /// the session's (an uplink has delivered the session once its mark
    /// reaches it).
    pub next_item: u32,
}

/// The context and its log, owned together: 16 messages, 48 blocks,
/// 4 KiB of strings ([`Context`]).
type Logged<'e> = Session<'e, 16, 48, 4096>;

/// Restores `session` (new) from the log (see [`crate::log`]), in place;
/// an empty or refused log starts a new one (a refused one with a
/// warning, erased first). Returns the environment steps the restored log
/// holds (each began with a `reply` event): the log's steps less these
/// are the script's steps already run.
async fn resume<S: MultiwriteNorFlash>(
    log: &mut SessionLog<S>,
    session: &mut Logged<'_>,
    items: &mut [u8],
    scratch: &mut [u8],
    stream: &mut Stream,
) -> u64 {
    let restored = log
        .restore_session(session, items, scratch, |context, now| stream.stamp(context, now))
        .await;
    match restored {
        Ok(()) => {
            info!("restored {=u32} events", session.journal().restored_events());
            let mut heads = ItemReader::new();
            let mut replies = 0;
            let counted = log
                .read_items(items, |item| {
                    replies += u64::from(heads.read(item).is_ok_and(|h| h.kind == ItemKind::Reply));
                    Ok::<(), ()>(())
                })
                .await;
            if counted.is_err() {
                error!("the log's environment steps could not be counted");
            }
            return replies;
        }
        // An empty log: a first boot.
        Err(RestoreError::Item(LogError { index: 0, kind: ItemError::MissingHeader })) => {}
        Err(e) => {
            warn!("the log is not restored, starting empty: {}", e);
            stream.forget();
            if log.clear().await.is_err() {
                error!("the log could not be erased");
            }
        }
    }
    let context = session.context();
    *session = Logged::new(context.engine(), context.agent_name());
    if let Err(e) = session.start(items, log).await {
        error!("the log's header was not written: {}", e);
    }
    0
}

/// The agent's state across its steps.
struct Agent<'e, U> {
    session: Logged<'e>,
    live: SensorFields<U>,
    stream: Stream,
    hint_buf: [u8; 1024],
    items: [u8; crate::log::MAX_ITEM],
    summary: Summary,
}

impl<U: Fn() -> u32> Agent<'_, U> {
    /// Records `event` in the context and the log.
    async fn record<S: MultiwriteNorFlash>(
        &mut self,
        event: &JournalEvent<'_>,
        log: &mut SessionLog<S>,
    ) {
        self.summary.compactions += make_room(log, &mut self.session, &mut self.items).await;
        if let Err(e) = self.session.record(event, &mut self.items, log).await {
            error!("not recorded: {}", e);
        }
    }

    /// Appends the model's reply to the context, through the log, and runs
    /// the tools it calls ([`tools`]), logging their results (and the
    /// compression `CompressContext` asks for) before the next step. The
    /// reply is the model server's (`body[..received]`, read by the
    /// pacer's exchange: a whole response or a streamed one), or with no
    /// model attached (`exchanged` is `None`) the script's `scripted`. When
    /// the exchange failed or the body is refused, nothing is appended and
    /// no tool runs (logged).
    async fn reply<S: MultiwriteNorFlash>(
        &mut self,
        exchanged: Option<Result<Exchanged, ExchangeError>>,
        scripted: &Reply,
        body: &[u8],
        scratch: &mut [u8],
        log: &mut SessionLog<S>,
    ) {
        let mut own = [Block::Other; MAX_TOOL_CALLS + 1];
        let parsed;
        let blocks: &[Block<'_>] = match exchanged {
            None => {
                let mut n = 0;
                let text = core::iter::once(Block::Text(scripted.text))
                    .filter(|_| !scripted.text.is_empty());
                let calls = scripted.calls.iter().map(|c| Block::ToolCall {
                    id: c.id,
                    name: c.name,
                    input: c.arguments,
                });
                for (slot, block) in own.iter_mut().zip(text.chain(calls)) {
                    *slot = block;
                    n += 1;
                }
                own.get(..n).unwrap_or_default()
            }
            Some(Err(e)) => {
                return error!("model: no reply ({}): the step goes on without one", e);
            }
            Some(Ok(exchanged)) => {
                let body = body.get(..exchanged.received).unwrap_or_default();
                let read = match exchanged.events {
                    true => ChatResponse::parse_stream(body, scratch),
                    false => ChatResponse::parse(body, scratch),
                };
                parsed = match read {
                    Ok(reply) => reply,
                    Err(e) => {
                        return error!("model: the reply is refused, nothing appended: {}", e)
                    }
                };
                info!(
                    "model: {=usize} bytes sent, {=usize} bytes received{=str}, {=usize} blocks, finish_reason {=str}",
                    exchanged.sent,
                    exchanged.received,
                    if exchanged.events { " (streamed)" } else { "" },
                    parsed.blocks().len(),
                    parsed.finish_reason().unwrap_or("(none)")
                );
                parsed.blocks()
            }
        };
        if blocks.is_empty() {
            return;
        }
        self.record(&JournalEvent::Assistant(blocks), log).await;
        // The tools the reply calls, run in order; their results in one event.
        let mut results = [Block::Other; MAX_TOOL_CALLS];
        let (mut n, mut compress) = (0, None);
        for block in blocks {
            let Block::ToolCall { id, name, .. } = *block else { continue };
            let outcome = tools::run(name);
            info!("tool {=str} ({=str}): {=str}", name, id, outcome.output);
            if let Some(slot) = results.get_mut(n) {
                *slot =
                    Block::ToolResult { id, name, state: outcome.state, output: outcome.output };
                n += 1;
            }
            compress = compress.or(outcome.compress);
        }
        if n > 0 {
            self.record(&JournalEvent::Assistant(results.get(..n).unwrap_or_default()), log).await;
        }
        if let Some(keep) = compress {
            let before = self.session.context().len();
            self.record(&JournalEvent::Compress { keep }, log).await;
            info!(
                "context compressed: {=usize} messages evicted, {=usize} kept",
                before - self.session.context().len(),
                self.session.context().len()
            );
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
        self.stream.before_step(output, self.session.context(), now, now, input.tasks);
        let watches = self.session.context().engine().config().config().injection.watch;
        let watched = !watches.is_empty();
        // The temperature watch's telling, as this decision reads it: for
        // the log, which says why the watch fired and how old the telling was.
        let temperature_watch = watches.iter().position(|(name, _)| name == "temperature");
        let telling = temperature_watch.map(|i| {
            let context = self.session.context();
            let at = context.engine().told_at(context.store(), AGENT)[i];
            match (at, context.engine().told(context.store(), AGENT)[i]) {
                // No instant and no value: nothing told (or, as the core
                // cannot tell these apart, `unavailable` told at no instant).
                (None, None) => TellingAge::NeverTold,
                (at, _) => age(at, now).map_or(TellingAge::Unknown, TellingAge::Micros),
            }
        });
        if watched {
            self.read(sensor, woken).await;
        }
        self.summary.compactions += make_room(log, &mut self.session, &mut self.items).await;
        let decision = match self.session.decide(input, now, &self.live, &mut self.items, log).await
        {
            Ok(decision) => decision,
            Err(e) => return error!("hint dropped: {}", e),
        };
        if !watched && decision.fires() {
            self.read(sensor, woken).await;
        }
        let why = temperature_watch.map(|i| decision.watch.get(i));
        let outcome = self
            .session
            .render_step(decision, input, &mut self.live, &mut self.hint_buf, &mut self.items, log)
            .await;
        match outcome {
            Ok(outcome) => {
                if let (Some(why), Some(telling)) = (why, telling) {
                    output.watch(self.live.temperature(), why, telling);
                }
                info!(
                    "decision read {=usize} messages of {=usize}",
                    self.session.context().messages_read(),
                    self.session.context().len()
                );
                self.summary.max_read =
                    self.summary.max_read.max(self.session.context().messages_read());
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

    /// What the context tells of each watched field, and how old each
    /// telling is at `now`, for the pacer.
    fn told(&self, now: Option<Timestamp>) -> Told {
        let (values, at) = self.tellings();
        Told { values, ages: at.map(|at| age(at, now)) }
    }

    /// What the context tells of each watched field, and when it was told.
    fn tellings(&self) -> ([Option<Decimal>; MAX_WATCHES], [Option<CreatedAt>; MAX_WATCHES]) {
        let context = self.session.context();
        let engine = context.engine();
        (engine.told(context.store(), AGENT), engine.told_at(context.store(), AGENT))
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
/// The session is logged in `log` ([`crate::log`]), shared with an uplink
/// that publishes it (`envaware-uplink`: the lock is held while an event
/// or a step is logged, never across the idle time or the model's reply);
/// a session found there (after a reset) is restored and goes on from the
/// step after its last. The script runs for `steps` steps (its
/// [`SCRIPT`], again and again).
#[allow(clippy::too_many_arguments)]
pub async fn run<Se: Sensor, K: Clock, P: Pacer, O: Output, M: RawMutex, S: MultiwriteNorFlash>(
    sensor: &mut Se,
    clock: &mut K,
    pacer: &mut P,
    output: &mut O,
    uptime_ms: impl Fn() -> u32,
    log: &Mutex<M, SessionLog<S>>,
    steps: usize,
) -> Summary {
    let summary = Summary {
        steps: 0,
        hints: 0,
        reads: 0,
        failures: 0,
        evicted: 0,
        max_read: 0,
        compactions: 0,
        next_item: 0,
    };
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
    let stream = Stream::new(envaware::resolve_zone(TIMEZONE).unwrap_or(envaware::Zone::Utc));
    let live = SensorFields::new(uptime_ms);
    let mut s = Agent {
        session: Logged::new(&engine, AGENT),
        live,
        stream,
        hint_buf: [0; 1024],
        items: [0; crate::log::MAX_ITEM],
        summary,
    };
    // The model's reply, and the scratch its escaped strings decode into.
    let mut body = [0u8; MAX_REPLY];
    let mut scratch = [0u8; 512];
    let environment = resume(
        &mut *log.lock().await,
        &mut s.session,
        &mut s.items,
        &mut s.hint_buf,
        &mut s.stream,
    )
    .await;
    // The script's steps already run: the board's own count, else the
    // log's steps less its environment steps.
    let logged = s.session.journal().steps().saturating_sub(environment);
    let first = match s.session.journal().steps() {
        0 => 0,
        _ => pacer.resume_at().unwrap_or(usize::try_from(logged).unwrap_or(usize::MAX)),
    };
    s.stream.start(output);
    let (values, at) = s.tellings();
    // Last before the first idle time, as the uninterrupted session goes
    // from its last step's end to its next idle time (under `-icount`,
    // work is board time: a scan here would move the next deadline). The
    // tellings' ages are taken after it, on the clock put back.
    if first > 0 {
        pacer.resumed();
    }
    pacer.told(Told { values, ages: at.map(|at| age(at, clock.now())) });
    for n in first..steps {
        // The script's step: the session goes round it.
        let index = n % SCRIPT.len();
        let step = &SCRIPT[index];
        while let Some(woken) = pacer.idle(n, step.wait_ms).await {
            let mut text: heapless::String<24> = heapless::String::new();
            let _ = write!(text, "{}", woken.temperature);
            info!("woken by temperature: {=str}", text);
            output.woken(n, &text);
            // A reply the environment started: no user message before it.
            s.record(&JournalEvent::Reply, &mut *log.lock().await).await;
            s.stream.woken(output, &text);
            let last = &SCRIPT[index.saturating_sub(1)];
            let input = StepInput {
                tasks: last.tasks,
                cur_iter: 0,
                input_tokens: last.input_tokens,
                context_size: CONTEXT_SIZE,
            };
            let now = clock.now();
            s.step(&input, now, sensor, Some(woken.temperature), output, &mut *log.lock().await)
                .await;
            pacer.told(s.told(clock.now()));
            let exchanged =
                pacer.model_reply(None, &REQUEST, s.session.context().store(), &mut body).await;
            s.reply(exchanged, &ENVIRONMENT_REPLY, &body, &mut scratch, &mut *log.lock().await)
                .await;
        }
        pacer.before_step(n);
        output.step(n, step.note);
        for event in step.events {
            let event = match *event {
                Event::User(text) => JournalEvent::User { name: "operator", text },
                Event::Thinking => JournalEvent::Assistant(&[Block::Other]),
            };
            s.record(&event, &mut *log.lock().await).await;
        }
        let input = StepInput {
            tasks: step.tasks,
            cur_iter: step.cur_iter,
            input_tokens: step.input_tokens,
            context_size: CONTEXT_SIZE,
        };
        let started = clock.now();
        s.step(&input, started, sensor, None, output, &mut *log.lock().await).await;
        // The step's own work in the board's time (under QEMU's `-icount`,
        // its instructions): the uplink must not make it longer.
        if let Some(us) = age(started.map(CreatedAt::Instant), clock.now()) {
            info!("step {=usize} took {=i64} ms of the board's time", n, us / 1000);
        }
        pacer.told(s.told(clock.now()));
        let exchanged =
            pacer.model_reply(Some(n), &REQUEST, s.session.context().store(), &mut body).await;
        s.reply(exchanged, &step.reply, &body, &mut scratch, &mut *log.lock().await).await;
        s.summary.steps += 1;
        pacer.after_step(n);
    }
    pacer.finished();
    let mut summary = s.summary;
    summary.reads = s.live.reads;
    summary.failures = s.live.failures;
    summary.evicted = s.session.context().store().evicted_total();
    summary.next_item = s.session.journal().next_number();
    summary
}

/// Compacts the log if its region fills; 1 when it did.
async fn make_room<S: MultiwriteNorFlash>(
    log: &mut SessionLog<S>,
    session: &mut Logged<'_>,
    buf: &mut [u8],
) -> u32 {
    match log.make_room_for(session, buf).await {
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
