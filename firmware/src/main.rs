//! envaware on a Cortex-M3: Sprout, a greenhouse robot, runs a scripted
//! agent session through the envaware core and injects live TMP105
//! readings into its hints. Built for the TI Stellaris LM3S6965 as QEMU's
//! `lm3s6965evb` emulates it; `cargo xtask demo` runs it.
//!
//! - [`board`]: everything board-specific (the embassy-time driver on
//!   SysTick, async I2C0, the sensor task, the UART0 handshakes, semihosting
//!   exit);
//! - the library (`src/lib.rs`): the agent, the stream and the TMP105
//!   driver, which know nothing of the board.
//!
//! It runs on `embassy-executor` (thread mode): the agent is the main task,
//! the TMP105 is sampled by a task of its own.
//!
//! Output is defmt over semihosting, decoded on the host by `defmt-print`.
//! The run exits QEMU with 0 at the end of the script, 101 on a panic and
//! 2 on a hard fault.
#![no_std]
#![no_main]
#![deny(missing_docs, missing_debug_implementations, unused_qualifications)]

// The binary's dependencies are the board's (target-gated in Cargo.toml):
// say so on the host rather than list every unresolved import.
#[cfg(not(target_os = "none"))]
compile_error!("the firmware binary is for the board; test the library on the host with `--no-default-features` (see the README's Tests)");

use defmt_semihosting as _;
use embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex;
use embassy_sync::blocking_mutex::Mutex as Shared;
use embassy_sync::mutex::Mutex;
use embassy_time::{Duration, Instant, Timer};
use envaware_firmware::agent;
use envaware_firmware::log::{RamFlash, SessionLog};
use envaware_uplink::Stats;
use lm3s6965 as _;
use static_cell::StaticCell;

mod board;

/// The session log: the agent writes it, the uplink reads it.
type Log = Mutex<CriticalSectionRawMutex, SessionLog<RamFlash<&'static mut [u8]>>>;

static LOG: StaticCell<Log> = StaticCell::new();
static DEVICE: StaticCell<heapless::String<{ envaware_uplink::MAX_DEVICE_ID }>> = StaticCell::new();
/// What the uplink did so far (it runs until the board exits).
static UPLINK: Shared<CriticalSectionRawMutex, core::cell::Cell<Stats>> =
    Shared::new(core::cell::Cell::new(Stats {
        delivered: 0,
        connections: 0,
        failures: 0,
        sent_bytes: 0,
        received_bytes: 0,
        lost: 0,
    }));

/// How long, in the board's time, the session's last items may take to
/// reach the broker before the board exits anyway.
const FLUSH: Duration = Duration::from_secs(120);

/// The uplink's task: publishes the log from its mark, for ever.
#[embassy_executor::task]
async fn uplink_task(log: &'static Log, mut link: board::Uart2Link, device: &'static str) {
    let mut payload = [0u8; envaware_uplink::MAX_PAYLOAD];
    envaware_uplink::run(log, &mut link, device, board::TIMING, &mut payload, |stats| {
        UPLINK.lock(|s| s.set(*stats));
        true
    })
    .await;
}

/// The agent's task (the executor's main task): spawns the sensor task and
/// the uplink's, runs the session, reports and exits.
#[embassy_executor::main]
async fn main(spawner: embassy_executor::Spawner) {
    let board::Board { i2c, mut pacer, log, uplink, device, steps, epoch } = board::Board::take();
    spawner.must_spawn(board::sensor_task(i2c));
    let log: &'static Log = LOG.init(Mutex::new(match uplink {
        Some(_) => SessionLog::with_outbox(log),
        None => SessionLog::new(log),
    }));
    let device: &'static str = DEVICE.init(device);
    let publishing = uplink.is_some();
    if let Some(link) = uplink {
        defmt::info!("uplink: device {=str}, publishing the log over UART2", device);
        spawner.must_spawn(uplink_task(log, link, device));
    }
    let mut clock = board::wall_clock(epoch);
    defmt::info!("envaware firmware: {=str} in {=str}, on embassy", agent::AGENT, agent::TIMEZONE);
    let summary = agent::run(
        &mut board::SensorLink,
        &mut clock,
        &mut pacer,
        &mut agent::DefmtOutput,
        board::uptime_ms,
        log,
        steps,
    )
    .await;
    defmt::info!(
        "session done: {=usize} steps, {=usize} hints, {=u32} sensor reads, {=u32} failed, {=u32} messages evicted, at most {=usize} messages read per decision",
        summary.steps,
        summary.hints,
        summary.reads,
        summary.failures,
        summary.evicted,
        summary.max_read
    );
    if publishing {
        // The session's last items, delivered before the board stops.
        let until = Instant::now() + FLUSH;
        while log.lock().await.delivered().is_some_and(|d| d < summary.next_item)
            && Instant::now() < until
        {
            Timer::after_millis(100).await;
        }
        let stats = UPLINK.lock(|s| s.get());
        let delivered = log.lock().await.delivered().unwrap_or(0);
        defmt::info!(
            "uplink: {=u32} items delivered (the log's items up to {=u32} of {=u32}), {=u32} connections, {=u32} given up, {=u64} bytes sent, {=u64} received, {=u32} lost",
            stats.delivered,
            delivered,
            summary.next_item,
            stats.connections,
            stats.failures,
            stats.sent_bytes,
            stats.received_bytes,
            log.lock().await.lost()
        );
    }
    defmt::info!("stack high-water mark: {=u32} bytes", board::stack_high_water());
    board::dump_log(log.lock().await.flash().0);
    board::exit(0)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let message = info.message().as_str().unwrap_or("(formatted message)");
    match info.location() {
        Some(l) => defmt::error!("panic at {=str}:{=u32}: {=str}", l.file(), l.line(), message),
        None => defmt::error!("panic: {=str}", message),
    }
    board::exit(101)
}
