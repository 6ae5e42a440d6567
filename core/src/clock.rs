//! The wall clock the time rule reads, as a trait the caller plugs in.

/// An instant of wall time: microseconds since the Unix epoch, UTC.
///
/// Microseconds because that is Python's `datetime` resolution: the
/// reference's elapsed-time arithmetic is done on whole microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// From whole Unix seconds.
    pub const fn from_unix_seconds(seconds: i64) -> Self {
        Timestamp(seconds.saturating_mul(1_000_000))
    }

    /// From Unix microseconds.
    pub const fn from_unix_micros(micros: i64) -> Self {
        Timestamp(micros)
    }

    /// Unix microseconds.
    pub const fn unix_micros(self) -> i64 {
        self.0
    }

    /// This instant plus `micros` microseconds (saturating).
    pub const fn add_micros(self, micros: i64) -> Self {
        Timestamp(self.0.saturating_add(micros))
    }
}

/// A source of wall time.
///
/// A device may not know the wall time yet (an RTC never set, no network
/// time): its clock returns `None`, and the time dimension is skipped with
/// [`TimeSkipped::ClockUnset`](crate::TimeSkipped::ClockUnset) rather than
/// injecting 1970.
pub trait Clock {
    /// The current wall time, or `None` while it is not known.
    fn now(&mut self) -> Option<Timestamp>;
}

/// A clock frozen at one instant (or unset): for tests and replays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FixedClock(pub Option<Timestamp>);

impl FixedClock {
    /// A clock that always reads `at`.
    pub const fn at(at: Timestamp) -> Self {
        FixedClock(Some(at))
    }

    /// A clock that does not know the time.
    pub const fn unset() -> Self {
        FixedClock(None)
    }

    /// Moves the clock by `micros` (negative goes back); an unset clock stays unset.
    pub fn advance(&mut self, micros: i64) {
        if let Some(t) = self.0 {
            self.0 = Some(t.add_micros(micros));
        }
    }
}

impl Clock for FixedClock {
    fn now(&mut self) -> Option<Timestamp> {
        self.0
    }
}

/// Wall time from an epoch learned once (RTC, semihosting, network) plus a
/// tick counter, for boards whose only running clock is a timer.
///
/// The counter may be narrower than 64 bits and wrap: the caller states its
/// width, and the clock widens it by remembering its last reading, so it
/// must be read ([`now`](Clock::now) or [`set`](Self::set)) at least once
/// every half of the counter's wrap period (a 32-bit millisecond counter
/// wraps after 49.7 days: read it at least every 24.8 days). A reading
/// more than half the period behind the previous one is a counter that
/// went backwards (reset, or read torn): the time never goes back, it
/// stands at what it was and counts on from the new reading.
#[derive(Debug)]
pub struct EpochTickClock<F: FnMut() -> u64> {
    epoch: Option<Timestamp>,
    /// Ticks counted since the epoch was set, across wraps (saturating).
    elapsed: u64,
    /// The previous reading, masked to the counter's width.
    last: u64,
    /// The counter's values: `2^bits - 1`.
    mask: u64,
    ticks_per_second: u32,
    ticks: F,
}

impl<F: FnMut() -> u64> EpochTickClock<F> {
    /// A clock whose epoch is not known yet; `ticks` reads a counter of
    /// `counter_bits` bits (clamped to `2..=64`; bits above the width in a
    /// reading are ignored) counting `ticks_per_second` (0 acts as 1).
    pub fn new(ticks_per_second: u32, counter_bits: u32, ticks: F) -> Self {
        let mask = u64::MAX >> (64 - counter_bits.clamp(2, 64));
        EpochTickClock { epoch: None, elapsed: 0, last: 0, mask, ticks_per_second, ticks }
    }

    /// Sets the wall time, as of the current tick count.
    pub fn set(&mut self, now: Timestamp) {
        self.last = (self.ticks)() & self.mask;
        self.elapsed = 0;
        self.epoch = Some(now);
    }

    /// Reads the counter and adds the ticks since the previous reading,
    /// modulo the counter's width; a step back adds nothing.
    fn advance(&mut self) -> u64 {
        let reading = (self.ticks)() & self.mask;
        let step = reading.wrapping_sub(self.last) & self.mask;
        // Serial-number arithmetic (RFC 1982): the upper half is behind.
        if step <= self.mask >> 1 {
            self.elapsed = self.elapsed.saturating_add(step);
        }
        self.last = reading;
        self.elapsed
    }
}

/// `ticks` at `per_second` in whole microseconds, rounded down, saturating.
fn ticks_to_micros(ticks: u64, per_second: u32) -> i64 {
    let per_second = u64::from(per_second.max(1));
    // Split so that neither part overflows: the remainder is below 2^32.
    let whole = (ticks / per_second).saturating_mul(1_000_000);
    let part = (ticks % per_second) * 1_000_000 / per_second;
    i64::try_from(whole.saturating_add(part)).unwrap_or(i64::MAX)
}

impl<F: FnMut() -> u64> Clock for EpochTickClock<F> {
    fn now(&mut self) -> Option<Timestamp> {
        let epoch = self.epoch?;
        let elapsed = self.advance();
        Some(epoch.add_micros(ticks_to_micros(elapsed, self.ticks_per_second)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_tick_clock_is_unset_until_set_then_counts_ticks() {
        let ticks = core::cell::Cell::new(5_000u64);
        let mut clock = EpochTickClock::new(1000, 64, || ticks.get());
        assert_eq!(clock.now(), None);
        clock.set(Timestamp::from_unix_seconds(100));
        ticks.set(7_500);
        assert_eq!(clock.now(), Some(Timestamp(102_500_000)));
    }

    /// A clock over a settable counter of `bits` bits at 1000 ticks a second.
    fn counter(
        bits: u32,
        start: u64,
    ) -> (std::rc::Rc<core::cell::Cell<u64>>, EpochTickClock<impl FnMut() -> u64>) {
        let ticks = std::rc::Rc::new(core::cell::Cell::new(start));
        let read = std::rc::Rc::clone(&ticks);
        (ticks, EpochTickClock::new(1000, bits, move || read.get()))
    }

    #[test]
    fn a_counter_that_wraps_keeps_counting_across_the_wrap() {
        // A 32-bit millisecond counter 1.5 s before its wrap.
        let (ticks, mut clock) = counter(32, (1 << 32) - 1_500);
        clock.set(Timestamp::from_unix_seconds(100));
        ticks.set((1 << 32) - 1);
        assert_eq!(clock.now(), Some(Timestamp(101_499_000)));
        ticks.set(500);
        assert_eq!(clock.now(), Some(Timestamp(102_000_000)));
        // Bits above the counter's width are not part of its value.
        ticks.set(500 | 1 << 40);
        assert_eq!(clock.now(), Some(Timestamp(102_000_000)));
        // A 16-bit counter read every 20,000 ticks, around its wrap 30 times.
        let (ticks, mut clock) = counter(16, 65_000);
        clock.set(Timestamp::from_unix_seconds(0));
        for i in 1..=100u64 {
            ticks.set((65_000 + 20_000 * i) % 65_536);
            assert_eq!(clock.now(), Some(Timestamp::from_unix_seconds(20 * i as i64)));
        }
    }

    #[test]
    fn a_counter_that_goes_back_holds_the_time_then_counts_on() {
        for bits in [16, 32, 64] {
            let (ticks, mut clock) = counter(bits, 10_000);
            clock.set(Timestamp::from_unix_seconds(0));
            ticks.set(12_000);
            assert_eq!(clock.now(), Some(Timestamp::from_unix_seconds(2)), "{bits} bits");
            ticks.set(3_000);
            assert_eq!(clock.now(), Some(Timestamp::from_unix_seconds(2)), "{bits} bits");
            ticks.set(4_500);
            assert_eq!(clock.now(), Some(Timestamp(3_500_000)), "{bits} bits");
        }
        // Half the period ahead is still forward; one tick more is behind.
        let (ticks, mut clock) = counter(16, 0);
        clock.set(Timestamp::from_unix_seconds(0));
        ticks.set(32_767);
        assert_eq!(clock.now(), Some(Timestamp(32_767_000)));
        ticks.set(0);
        assert_eq!(clock.now(), Some(Timestamp(32_767_000)));
    }

    #[test]
    fn extreme_counters_and_rates_saturate_without_panicking() {
        // Forward steps of 2^63 - 1 ticks (the most a step can be) at one
        // tick a second (0 acts as 1), past what microseconds can hold.
        let ticks = core::cell::Cell::new(0u64);
        let mut clock = EpochTickClock::new(0, 64, || ticks.get());
        clock.set(Timestamp::from_unix_seconds(0));
        for _ in 0..3 {
            ticks.set(ticks.get().wrapping_add(u64::MAX >> 1));
            assert_eq!(clock.now(), Some(Timestamp(i64::MAX)));
        }
        assert_eq!(clock.elapsed, u64::MAX);
        // Widths out of range are clamped: 0 acts as 2 bits, 100 as 64.
        let (ticks, mut narrow) = counter(0, 3);
        narrow.set(Timestamp::from_unix_seconds(0));
        ticks.set(4); // 0 in two bits: one tick after 3
        assert_eq!(narrow.now(), Some(Timestamp(1_000)));
        let wide = std::cell::Cell::new(u64::MAX);
        let mut wide_clock = EpochTickClock::new(1, 100, || wide.get());
        wide_clock.set(Timestamp::from_unix_seconds(0));
        wide.set(2);
        assert_eq!(wide_clock.now(), Some(Timestamp::from_unix_seconds(3)));
        assert_eq!(ticks_to_micros(1, 3), 333_333);
        assert_eq!(ticks_to_micros(u64::MAX, u32::MAX), 4_294_967_297_000_000);
    }

    #[test]
    fn fixed_clock_advances_both_ways() {
        let mut clock = FixedClock::at(Timestamp::from_unix_seconds(10));
        clock.advance(-3_000_000);
        assert_eq!(clock.now(), Some(Timestamp::from_unix_seconds(7)));
        let mut unset = FixedClock::unset();
        unset.advance(5);
        assert_eq!(unset.now(), None);
    }
}
