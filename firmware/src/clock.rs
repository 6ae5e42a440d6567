//! The board's wall clock: an epoch learned at boot plus the uptime
//! counter, a `u32` of milliseconds that wraps after 2^32 ms (49.7 days).
//!
//! Board-independent so that the host tests build the very clock the board
//! runs (`tests/clock.rs` takes it across the wrap).

use envaware::EpochTickClock;

/// The uptime counter's rate: SysTick interrupts a second.
pub const UPTIME_HZ: u32 = 1000;

/// The uptime counter's width: it wraps from `u32::MAX` to 0.
pub const UPTIME_BITS: u32 = u32::BITS;

/// A wall clock over `uptime_ms`, the board's millisecond counter widened
/// to `u64` (the clock carries the count across the counter's wrap; the
/// session reads it at every step, far more often than once in 24.8 days).
pub fn wall_clock<F: FnMut() -> u64>(uptime_ms: F) -> EpochTickClock<F> {
    EpochTickClock::new(UPTIME_HZ, UPTIME_BITS, uptime_ms)
}
