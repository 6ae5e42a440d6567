//! The sensor task: owns the TMP105 on I2C0, samples it, answers the
//! agent's requests ([`SensorLink`]) and wakes the agent when a reading
//! would fire its watch.

use core::cell::Cell;
use core::fmt::Write as _;
use core::sync::atomic::{AtomicU8, Ordering};

use critical_section::Mutex;
use embassy_futures::select::{select, Either};
use embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex;
use embassy_sync::signal::Signal;
use embassy_time::{Duration, Instant, Timer};
use envaware::WatchFire;
use envaware_firmware::agent::{self, Told, Woken};
use envaware_firmware::tmp105::{self, Temperature, Tmp105};

use super::i2c::{I2c0, I2cError};

/// The sensor task's period: it samples the TMP105 every half second.
const SAMPLE_MS: u64 = 500;
/// How long the (simulated) model takes to reply to a step's prompt.
pub(super) const MODEL_REPLY_MS: u64 = 800;

/// What the agent does, for the sensor task: busy with a step, idle
/// between steps (a reading that would fire a watch wakes it), or awaiting
/// its model's reply.
pub(super) static STATE: AtomicU8 = AtomicU8::new(BUSY);
pub(super) const BUSY: u8 = 0;
pub(super) const IDLE: u8 = 1;
pub(super) const AWAITING_MODEL: u8 = 2;

/// The session runs: the sensor task starts sampling (after a restore, so
/// that the board's time is put back first).
pub(super) static START: Signal<CriticalSectionRawMutex, ()> = Signal::new();
/// The agent asks for a reading now (its step's).
static SAMPLE_NOW: Signal<CriticalSectionRawMutex, ()> = Signal::new();
/// The reading the agent asked for.
static READING: Signal<CriticalSectionRawMutex, Result<Temperature, tmp105::Error<I2cError>>> =
    Signal::new();
/// A reading that would fire the watch: the environment wakes the agent.
pub(super) static WAKE: Signal<CriticalSectionRawMutex, Woken> = Signal::new();
/// What the agent's context told of each watched field (the core's
/// `Engine::told`), with the tellings' ages, and the board's time when the
/// agent said so: for the sensor task to compare its readings with.
pub(super) static TOLD: Mutex<Cell<(Told, u64)>> = Mutex::new(Cell::new((
    Told { values: [None; envaware::MAX_WATCHES], ages: [None; envaware::MAX_WATCHES] },
    0,
)));

/// What the context told, with the tellings' ages now.
fn told_now() -> Told {
    let (told, at_ms) = critical_section::with(|cs| TOLD.borrow(cs).get());
    let since = Instant::now().as_millis().saturating_sub(at_ms);
    told.later(i64::try_from(since).unwrap_or(i64::MAX).saturating_mul(1000))
}

/// The agent's side of the sensor task: a reading taken when asked.
#[derive(Debug)]
pub struct SensorLink;

impl agent::Sensor for SensorLink {
    type Error = I2cError;
    async fn read(&mut self) -> Result<Temperature, tmp105::Error<I2cError>> {
        SAMPLE_NOW.signal(());
        READING.wait().await
    }
}

/// Owns the TMP105 (async, on I2C0): samples it every [`SAMPLE_MS`] on a
/// grid of board time (so a session restored after a reset samples when
/// the uninterrupted one did), and reads it when the agent asks. A sample
/// taken while the agent awaits its model is logged; one taken while it
/// is idle that would fire its watch by its value (the core's rule,
/// through [`agent::watch_fire`]) wakes it; one whose change the watch's
/// floor (`min_interval`) holds back is logged, and wakes it once the
/// floor has passed, if it still differs enough.
#[embassy_executor::task]
pub async fn sensor_task(i2c: I2c0) {
    let mut sensor = Tmp105::new(i2c, tmp105::DEFAULT_ADDRESS);
    let watches = agent::config().injection.watch;
    START.wait().await;
    let mut next = Instant::from_millis((Instant::now().as_millis() / SAMPLE_MS + 1) * SAMPLE_MS);
    loop {
        match select(Timer::at(next), SAMPLE_NOW.wait()).await {
            Either::Second(()) => READING.signal(sensor.read_async().await),
            Either::First(()) => {
                next += Duration::from_millis(SAMPLE_MS);
                // A failed sample is not told: the agent's own read logs why.
                let Ok(temperature) = sensor.read_async().await else { continue };
                let mut text: heapless::String<24> = heapless::String::new();
                let _ = write!(text, "{temperature}");
                match STATE.load(Ordering::Relaxed) {
                    AWAITING_MODEL => defmt::info!(
                        "sensor task: {=str} (sampled while the agent awaits its model)",
                        text
                    ),
                    IDLE => match agent::watch_fire(&watches, &told_now(), &text) {
                        WatchFire::Value => {
                            defmt::info!("sensor task: {=str} would fire the temperature watch: waking the agent", text);
                            WAKE.signal(Woken { temperature });
                        }
                        WatchFire::Throttled => defmt::info!(
                            "sensor task: {=str} would fire the temperature watch, but its floor (min_interval) holds it back",
                            text
                        ),
                        // A heartbeat is told at the next step.
                        WatchFire::Heartbeat | WatchFire::Quiet => {}
                    },
                    _ => {}
                }
            }
        }
    }
}
