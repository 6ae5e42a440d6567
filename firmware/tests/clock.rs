//! The board's wall clock ([`envaware_firmware::clock::wall_clock`]) over a
//! simulated SysTick counter: a `u32` of milliseconds, which wraps from
//! `u32::MAX` to 0 after 49.7 days of uptime.

use std::cell::Cell;

use envaware::{Clock, Timestamp};
use envaware_firmware::clock::wall_clock;

/// 2026-01-01T00:00:00Z.
const EPOCH: i64 = 1_767_225_600;

const DAY_MS: u64 = 86_400_000;

/// Runs the counter from `boot_ms` for `days`, reading the clock every
/// `every_ms` of uptime; checks each reading against the true time and
/// returns how many times the counter wrapped.
fn run(boot_ms: u32, days: u64, every_ms: u64) -> u64 {
    // The milliseconds since boot that truly passed, and the board's counter.
    let uptime = Cell::new(0u64);
    let counter = || boot_ms.wrapping_add(uptime.get() as u32);
    let mut clock = wall_clock(|| u64::from(counter()));
    clock.set(Timestamp::from_unix_seconds(EPOCH));
    let mut wraps = 0;
    while uptime.get() < days * DAY_MS {
        let before = counter();
        uptime.set(uptime.get() + every_ms);
        wraps += u64::from(counter() < before);
        let expected = Timestamp::from_unix_seconds(EPOCH).add_micros(uptime.get() as i64 * 1000);
        assert_eq!(
            clock.now(),
            Some(expected),
            "{} ms after boot (counter {})",
            uptime.get(),
            counter()
        );
    }
    wraps
}

#[test]
fn the_wall_clock_keeps_time_through_51_days_of_uptime_across_the_counter_s_wrap() {
    // A reading every 61.003 s of uptime, from boot: the counter passes
    // 2^32 ms (49.71 days) once, between two readings.
    assert_eq!(run(0, 51, 61_003), 1);
}

#[test]
fn readings_far_apart_and_right_at_the_wrap_keep_time() {
    // Every 20 days (under the 24.8 days the clock allows): three wraps in 150 days.
    assert_eq!(run(0, 150, 20 * DAY_MS), 3);
    // Booted 3 ms before the wrap, read every millisecond across it.
    let uptime = Cell::new(u32::MAX - 2);
    let mut clock = wall_clock(|| u64::from(uptime.get()));
    clock.set(Timestamp::from_unix_seconds(EPOCH));
    for ms in 1..=6 {
        uptime.set(uptime.get().wrapping_add(1));
        assert_eq!(
            clock.now(),
            Some(Timestamp::from_unix_seconds(EPOCH).add_micros(ms * 1000)),
            "counter {}",
            uptime.get()
        );
    }
}
