//! The watch dimension (envaware's own): a watched live reading that moved
//! from what the context last told, held back by `min_interval` or told
//! again by `max_interval`.

use super::compiled::ValidConfig;
use super::scan::{Telling, Told};
use super::time::wall_clock_micros;
use crate::clock::Timestamp;
use crate::config::watch::{WatchFire, MAX_WATCHES};
use crate::live::{reading, LiveFields};

/// Which watches fired, and why, by their index in the configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WatchSet {
    /// One bit per watch that fired.
    fired: u8,
    /// Of those, the ones fired by their heartbeat (`max_interval`) only.
    heartbeat: u8,
    /// One bit per watch whose change `min_interval` held back.
    throttled: u8,
}

const _: () = assert!(MAX_WATCHES <= 8, "one bit per watch in a u8");

impl WatchSet {
    /// No watch fired.
    pub const EMPTY: WatchSet = WatchSet { fired: 0, heartbeat: 0, throttled: 0 };

    /// Marks watch `i` as fired by its value (an index past [`MAX_WATCHES`]
    /// is ignored).
    pub fn insert(&mut self, i: usize) {
        self.set(i, WatchFire::Value);
    }

    /// Records why watch `i` fired, or did not (an index past
    /// [`MAX_WATCHES`] is ignored).
    pub fn set(&mut self, i: usize, why: WatchFire) {
        if i >= MAX_WATCHES {
            return;
        }
        let bit = 1 << i;
        let (fired, heartbeat, throttled) = match why {
            WatchFire::Quiet => (false, false, false),
            WatchFire::Value => (true, false, false),
            WatchFire::Heartbeat => (true, true, false),
            WatchFire::Throttled => (false, false, true),
        };
        for (bits, on) in [
            (&mut self.fired, fired),
            (&mut self.heartbeat, heartbeat),
            (&mut self.throttled, throttled),
        ] {
            *bits = if on { *bits | bit } else { *bits & !bit };
        }
    }

    /// Why watch `i` fired, or did not.
    pub fn get(&self, i: usize) -> WatchFire {
        let on = |bits: u8| i < MAX_WATCHES && bits & (1 << i) != 0;
        match (on(self.fired), on(self.heartbeat), on(self.throttled)) {
            (true, true, _) => WatchFire::Heartbeat,
            (true, false, _) => WatchFire::Value,
            (false, _, true) => WatchFire::Throttled,
            (false, _, false) => WatchFire::Quiet,
        }
    }

    /// Whether watch `i` fired (by value or heartbeat).
    pub fn contains(&self, i: usize) -> bool {
        self.get(i).fired()
    }

    /// Whether watch `i` fired by its heartbeat: the reading had not moved
    /// (or its change was held back), but the telling was `max_interval`
    /// old, or of unknown age.
    pub fn heartbeat(&self, i: usize) -> bool {
        self.get(i) == WatchFire::Heartbeat
    }

    /// Whether watch `i`'s change was held back by `min_interval` (it did
    /// not fire).
    pub fn throttled(&self, i: usize) -> bool {
        self.get(i) == WatchFire::Throttled
    }

    /// Whether none fired (a throttled change is not a firing).
    pub fn is_empty(&self) -> bool {
        self.fired == 0
    }

    /// The indices of the watches that fired, in configuration order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..MAX_WATCHES).filter(|i| self.contains(*i))
    }

    /// The set as its bits (fired, of those by heartbeat, throttled), as
    /// the session log writes it.
    #[cfg(feature = "journal")]
    pub(crate) fn bits(&self) -> [u8; 3] {
        [self.fired, self.heartbeat, self.throttled]
    }

    /// The set [`bits`](Self::bits) wrote; `None` for bits no set holds
    /// (past [`MAX_WATCHES`], a heartbeat that did not fire, a watch both
    /// fired and throttled).
    #[cfg(feature = "journal")]
    pub(crate) fn from_bits([fired, heartbeat, throttled]: [u8; 3]) -> Option<WatchSet> {
        let all = (1u8 << MAX_WATCHES) - 1;
        let valid = (fired | heartbeat | throttled) & !all == 0
            && heartbeat & !fired == 0
            && fired & throttled == 0;
        valid.then_some(WatchSet { fired, heartbeat, throttled })
    }
}

/// The watches that fire for `readings` at `now`, given what was told.
/// Out of line: the tellings live in its frame only, never under the time
/// rule's.
#[inline(never)]
pub(crate) fn watched<L: LiveFields + ?Sized>(
    cfg: &ValidConfig<'_>,
    readings: &L,
    now: Option<Timestamp>,
    told: impl FnOnce() -> Told,
) -> WatchSet {
    let told = told();
    let mut set = WatchSet::EMPTY;
    for (i, ((name, w), telling)) in cfg.config.injection.watch.iter().zip(&told).enumerate() {
        // The age is read only for a watch with a time rule.
        let age = match (w.has_time_rule(), telling) {
            (true, Some(telling)) => age(cfg, *telling, now),
            _ => None,
        };
        set.set(i, w.fires(reading(readings, name), telling.and_then(|t| t.value), age));
    }
    set
}

/// The telling's age at `now`: unknown with no clock, no `created_at`, or
/// one later than `now`.
fn age(cfg: &ValidConfig<'_>, telling: Telling, now: Option<Timestamp>) -> Option<i64> {
    let now = now?;
    telling.at?.age(now, || wall_clock_micros(cfg, now))
}
