//! The agent's ports: what the board (or a host test) provides around
//! it. The [`Sensor`] it awaits, the [`Pacer`] that lets time pass between
//! steps (and wakes it, [`Woken`]) and the [`Output`] its transcript goes
//! to; `DefmtOutput` (feature `defmt`) is the board's.

use envaware::{Decimal, MAX_WATCHES};

#[cfg(doc)]
use envaware::Engine;

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
        defmt::println!(
            "watch temperature {=str}: {=str}",
            temperature,
            if fired { "fired" } else { "quiet" }
        );
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
