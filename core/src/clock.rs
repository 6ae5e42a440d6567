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
/// monotonic tick counter, for boards whose only running clock is a timer.
#[derive(Debug)]
pub struct EpochTickClock<F: FnMut() -> u64> {
    epoch: Option<Timestamp>,
    epoch_ticks: u64,
    ticks_per_second: u32,
    ticks: F,
}

impl<F: FnMut() -> u64> EpochTickClock<F> {
    /// A clock whose epoch is not known yet; `ticks` reads the counter.
    pub fn new(ticks_per_second: u32, ticks: F) -> Self {
        EpochTickClock { epoch: None, epoch_ticks: 0, ticks_per_second, ticks }
    }

    /// Sets the wall time, as of the current tick count.
    pub fn set(&mut self, now: Timestamp) {
        self.epoch_ticks = (self.ticks)();
        self.epoch = Some(now);
    }
}

impl<F: FnMut() -> u64> Clock for EpochTickClock<F> {
    fn now(&mut self) -> Option<Timestamp> {
        let epoch = self.epoch?;
        let elapsed = (self.ticks)().wrapping_sub(self.epoch_ticks);
        let per_second = u64::from(self.ticks_per_second.max(1));
        // Split to avoid overflow for fast counters running a long time.
        let micros = (elapsed / per_second).saturating_mul(1_000_000) + (elapsed % per_second) * 1_000_000 / per_second;
        Some(epoch.add_micros(i64::try_from(micros).unwrap_or(i64::MAX)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_tick_clock_is_unset_until_set_then_counts_ticks() {
        let ticks = core::cell::Cell::new(5_000u64);
        let mut clock = EpochTickClock::new(1000, || ticks.get());
        assert_eq!(clock.now(), None);
        clock.set(Timestamp::from_unix_seconds(100));
        ticks.set(7_500);
        assert_eq!(clock.now(), Some(Timestamp(102_500_000)));
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
