//! `timedelta(microseconds=d).total_seconds() / 3600`, the time rule's
//! elapsed hours, with integers only: two correctly rounded divisions
//! ([`crate::ieee`]), as Python does them in floats, without the
//! soft-float division and the 128-bit conversion a device without a double
//! FPU would link for it (about 2 KB of flash on a Cortex-M4).

use crate::ieee::{div, parts};

/// Python's `timedelta(microseconds=micros).total_seconds() / 3600`: the
/// correctly rounded `micros / 10**6` (an int/int true division), then a
/// correctly rounded float division by 3600.
pub(crate) fn elapsed_hours(micros: u64) -> f64 {
    // 10**6 = 2**6 * 15625 and 3600 = 2**4 * 225: scaling by a power of
    // two is exact, so only the odd factors divide. Every result is a
    // normal double or zero (1 microsecond is 2.8e-10 hours).
    let (seconds, exp) = parts(div(micros, -6, 15_625));
    div(seconds, exp - 4, 225)
}

/// `timedelta.total_seconds()` in floats, as the time rule computed it
/// before: microseconds / 10**6 as a correctly rounded int/int true
/// division. The reference the tests hold [`elapsed_hours`] to.
#[cfg(test)]
pub(crate) fn python_total_seconds(micros: i128) -> f64 {
    const EXACT: i128 = 1 << 53;
    if (-EXACT..=EXACT).contains(&micros) {
        // Both operands exact: one IEEE division is correctly rounded.
        return micros as f64 / 1e6;
    }
    // Beyond 2**53 microseconds (about 285 years) split off whole seconds,
    // which are exact, and round once.
    let secs = micros / 1_000_000;
    let rem = micros % 1_000_000;
    secs as f64 + rem as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The float computation this replaces, divided by 3600.
    fn float_hours(micros: u64) -> f64 {
        python_total_seconds(i128::from(micros)) / 3600.0
    }

    #[test]
    fn the_float_reference_is_python_s_total_seconds() {
        // CPython 3.11: `timedelta(microseconds=m).total_seconds()`.
        for (micros, seconds) in [
            (9_007_199_254_740_993, 9007199254.740993),
            (-9_007_199_254_740_993, -9007199254.740993),
            (123_456_789_012_345_678_901, 123456789012345.67),
            (-123_456_789_012_345_678_901, -123456789012345.67),
            (1_500_000, 1.5),
            (-1, -0.000001),
        ] {
            assert_eq!(python_total_seconds(micros), seconds, "{micros}");
        }
    }

    #[test]
    fn edges_and_round_values_are_the_float_division_s() {
        let hour = 3_600_000_000;
        for micros in [
            0,
            1,
            2,
            3,
            999_999,
            1_000_000,
            hour - 1,
            hour,
            hour + 1,
            15_625,
            225 * 15_625,
            (1 << 53) - 1,
            1 << 53,
            (1 << 53) + 1,
            9_007_199_254_740_993,
            u64::MAX / 2,
            u64::MAX - 1,
            u64::MAX,
        ] {
            assert_eq!(elapsed_hours(micros).to_bits(), float_hours(micros).to_bits(), "{micros}");
        }
        assert_eq!(elapsed_hours(hour), 1.0);
        assert_eq!(elapsed_hours(hour / 4), 0.25);
        assert_eq!(elapsed_hours(0).to_bits(), 0.0f64.to_bits());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]
        #[test]
        fn any_elapsed_time_gives_the_float_division_s_hours(micros: u64, small in 0u64..1 << 40, bits in 0u32..64) {
            for m in [micros, small, micros >> bits] {
                proptest::prop_assert_eq!(elapsed_hours(m).to_bits(), float_hours(m).to_bits(), "{}", m);
            }
        }
    }
}
