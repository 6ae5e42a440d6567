//! The agent's ports: what the board (or a host test) provides around
//! it. The [`Sensor`] it awaits, the [`Pacer`] that lets time pass between
//! steps (and wakes it, [`Woken`]) and the [`Output`] its transcript goes
//! to; `DefmtOutput` (feature `defmt`) is the board's.

use envaware::openai::ChatRequest;
use envaware::{Conversation, Decimal, WatchFire, MAX_WATCHES};

#[cfg(doc)]
use envaware::Engine;

use crate::http::{ExchangeError, Exchanged};
use crate::tmp105::{self, Temperature, Tmp105};

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
    /// would take, while the sensors go on sampling; and, on a board with
    /// a model attached, the call itself: `request` over `context` sent
    /// with [`crate::http::exchange`], the response's body read into `body`.
    /// `None`: no model attached (the delay only, nothing is appended).
    async fn model_reply<C: Conversation>(
        &mut self,
        index: Option<usize>,
        request: &ChatRequest<'_>,
        context: &C,
        body: &mut [u8],
    ) -> Option<Result<Exchanged, ExchangeError>>;
    /// What the context now tells of each watched field (by watch index,
    /// the core's [`Engine::told`]) and how old each telling is now: a
    /// reading that would fire a watch by its value against it (not held
    /// back by `min_interval`) wakes the agent.
    fn told(&mut self, told: Told) {
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
    /// The script's step to go on from after a restore, when the board
    /// kept it (its own reset). `None`: the log says (its steps less its
    /// environment steps, which holds while no compaction popped an
    /// environment step's `reply`).
    fn resume_at(&mut self) -> Option<usize> {
        None
    }
}

/// What the context tells of each watched field, by watch index, and the
/// age of each telling at the moment the pacer is given it (the board
/// counts on from there).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Told {
    /// The told values ([`Engine::told`]; `None`: nothing told).
    pub values: [Option<Decimal>; MAX_WATCHES],
    /// The tellings' ages in microseconds ([`Engine::told_at`] against the
    /// clock; `None`: unknown).
    pub ages: [Option<i64>; MAX_WATCHES],
}

impl Told {
    /// The same tellings, `micros` microseconds later.
    pub fn later(self, micros: i64) -> Told {
        Told { values: self.values, ages: self.ages.map(|a| a.map(|a| a.saturating_add(micros))) }
    }
}

/// How old the telling of a watched field was when a step decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TellingAge {
    /// Nothing was told.
    NeverTold,
    /// Told, at an unknown instant (no clock, no `created_at`, or one later
    /// than the step).
    Unknown,
    /// Told this many microseconds before the step.
    Micros(i64),
}

/// The environment woke the agent: a watched reading moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Woken {
    /// The temperature that would fire the watch.
    pub temperature: Temperature,
}

/// The word for why a watch fired, or did not: `value`, `heartbeat`,
/// `throttled`, `quiet`.
pub fn watch_fire_name(why: WatchFire) -> &'static str {
    match why {
        WatchFire::Quiet => "quiet",
        WatchFire::Value => "value",
        WatchFire::Heartbeat => "heartbeat",
        WatchFire::Throttled => "throttled",
    }
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
/// JSON. The board prints it (`DefmtOutput`, feature `defmt`); the host tests record it.
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
    /// Why the temperature watch fired at this step, or did not (value,
    /// heartbeat, throttled, quiet), the reading it compared and the age
    /// of the telling it compared with.
    fn watch(&mut self, temperature: &str, why: WatchFire, age: TellingAge) {
        let _ = (temperature, why, age);
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
/// `(no injection; uptime read: false)`, `watch temperature T: W, told
/// A ago` (`W`: `value`, `heartbeat`, `throttled` or `quiet`; `A` in
/// seconds to the millisecond, or `never told`, `told at an unknown time`),
/// and each streamed line after
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

    fn watch(&mut self, temperature: &str, why: WatchFire, age: TellingAge) {
        let why = watch_fire_name(why);
        match age {
            TellingAge::NeverTold => {
                defmt::println!("watch temperature {=str}: {=str}, never told", temperature, why)
            }
            TellingAge::Unknown => defmt::println!(
                "watch temperature {=str}: {=str}, told at an unknown time",
                temperature,
                why
            ),
            TellingAge::Micros(us) => {
                let ms = us / 1000;
                defmt::println!(
                    "watch temperature {=str}: {=str}, told {=i64}.{=i64:03} s ago",
                    temperature,
                    why,
                    ms / 1000,
                    ms % 1000
                )
            }
        }
    }

    fn woken(&mut self, before: usize, temperature: &str) {
        defmt::println!(
            "=== environment step before step {=usize}: woken by temperature: {=str}",
            before,
            temperature
        );
    }

    fn stream(&mut self, line: &str) {
        defmt::println!("{=str}{=str}", crate::stream::PREFIX, line);
    }
}
