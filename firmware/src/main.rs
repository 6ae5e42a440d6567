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
use lm3s6965 as _;

use envaware_firmware::agent;

mod board;

/// The agent's task (the executor's main task): spawns the sensor task,
/// runs the session, reports and exits.
#[embassy_executor::main]
async fn main(spawner: embassy_executor::Spawner) {
    let board::Board { i2c, mut pacer, log } = board::Board::take();
    spawner.must_spawn(board::sensor_task(i2c));
    let mut log = envaware_firmware::log::SessionLog::new(log);
    let mut clock = board::wall_clock();
    defmt::info!("envaware firmware: {=str} in {=str}, on embassy", agent::AGENT, agent::TIMEZONE);
    let summary = agent::run(
        &mut board::SensorLink,
        &mut clock,
        &mut pacer,
        &mut agent::DefmtOutput,
        board::uptime_ms,
        &mut log,
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
    defmt::info!("stack high-water mark: {=u32} bytes", board::stack_high_water());
    board::dump_log(log.flash().0);
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
