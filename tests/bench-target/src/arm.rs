//! The Cortex-M3 (QEMU `lm3s6965evb`): SysTick on the core clock counts
//! the instructions, 80 to a tick.

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;
use lm3s6965 as _;

/// Virtual nanoseconds (instructions) per SysTick tick: the core clock is
/// 12.5 MHz at reset.
pub const INSTRUCTIONS_PER_TICK: u32 = 80;

/// Starts SysTick free-running over its whole 24-bit range.
pub fn start_counter() {
    let Some(mut peripherals) = cortex_m::Peripherals::take() else {
        crate::fail("no peripherals")
    };
    let syst = &mut peripherals.SYST;
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(0x00FF_FFFF);
    syst.clear_current();
    syst.enable_counter();
}

pub fn counter() -> u32 {
    SYST::get_current()
}

/// Ticks since `start`: SysTick counts down, 24 bits.
pub fn ticks_since(start: u32) -> u32 {
    start.wrapping_sub(SYST::get_current()) & 0x00FF_FFFF
}

/// `asm::delay(n)` runs n + 1 two-instruction loops.
pub fn delay_100_002() {
    cortex_m::asm::delay(50_000);
}
