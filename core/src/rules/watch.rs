//! The watch dimension (envaware's own): a watched live reading that moved
//! from what the context last told.

use super::compiled::ValidConfig;
use super::scan::Told;
use crate::config::watch::MAX_WATCHES;
use crate::live::{reading, LiveFields};

/// Which watches fired, by their index in the configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WatchSet(u8);

const _: () = assert!(MAX_WATCHES <= 8, "one bit per watch in a u8");

impl WatchSet {
    /// No watch fired.
    pub const EMPTY: WatchSet = WatchSet(0);

    /// Marks watch `i` as fired (an index past [`MAX_WATCHES`] is ignored).
    pub fn insert(&mut self, i: usize) {
        if i < MAX_WATCHES {
            self.0 |= 1 << i;
        }
    }

    /// Whether watch `i` fired.
    pub fn contains(&self, i: usize) -> bool {
        i < MAX_WATCHES && self.0 & (1 << i) != 0
    }

    /// Whether none fired.
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// The indices of the watches that fired, in configuration order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..MAX_WATCHES).filter(|i| self.contains(*i))
    }
}

/// The watches that fire for `readings`, given what was told. Out of line:
/// the told values live in its frame only, never under the time rule's.
#[inline(never)]
pub(crate) fn watched<L: LiveFields + ?Sized>(
    cfg: &ValidConfig<'_>,
    readings: &L,
    told: impl FnOnce() -> Told,
) -> WatchSet {
    let told = told();
    let mut fired = WatchSet::EMPTY;
    for (i, ((name, w), told)) in cfg.config.injection.watch.iter().zip(&told).enumerate() {
        if w.fires(reading(readings, name), *told) {
            fired.insert(i);
        }
    }
    fired
}
