//! `timedelta(microseconds=d).total_seconds() / 3600`, the time rule's
//! elapsed hours, with integers only: two correctly rounded divisions, as
//! Python does them in floats, without the soft-float division and the
//! 128-bit conversion a device without a double FPU would link for it
//! (about 2 KB of flash on a Cortex-M4).

/// Python's `timedelta(microseconds=micros).total_seconds() / 3600`: the
/// correctly rounded `micros / 10**6` (an int/int true division), then a
/// correctly rounded float division by 3600.
pub(crate) fn elapsed_hours(micros: u64) -> f64 {
    if micros == 0 {
        return 0.0;
    }
    // 10**6 = 2**6 * 15625 and 3600 = 2**4 * 225: scaling by a power of
    // two is exact, so only the odd factors divide.
    let (seconds, exp) = div_round(micros, -6, 15_625);
    let (hours, exp) = div_round(seconds, exp - 4, 225);
    // `hours` is 2**52..=2**53: the fraction's carry into the exponent
    // field, when it is 2**53, is the exact value. Every result here is a
    // normal number (1 microsecond is 2.8e-10 hours, 2**64 about 5.1e9).
    f64::from_bits((((exp + 1075) as u64) << 52) + hours - (1 << 52))
}

/// `n * 2**exp / k` rounded to 53 bits, half to even, as `(m, e)` with `m`
/// in `2**52..=2**53` and the value `m * 2**e`; `n > 0`, `k` in
/// `2**7..2**14` (225 and 15625).
fn div_round(n: u64, exp: i32, k: u64) -> (u64, i32) {
    // `n << s` is 2**69..2**70: over `k`, a quotient of 56 to 63 bits, two
    // or more to round by, in a u64. Shifted in steps of at most 32 bits,
    // so that the remainder shifted stays in a u64 too.
    let s = 6 + n.leading_zeros();
    let (mut q, mut r) = (n / k, n % k);
    let mut left = s;
    while left > 0 {
        let step = left.min(32);
        let cur = r << step;
        // `r < k`: the new digits fit below the shifted quotient.
        q = (q << step) | (cur / k);
        r = cur % k;
        left -= step;
    }
    let shift = 64 - 53 - q.leading_zeros();
    let mant = q >> shift;
    let rest = q & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    let up = rest > half || (rest == half && (r != 0 || mant & 1 == 1));
    (mant + u64::from(up), exp - s as i32 + shift as i32)
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

    /// Ties: `n / k` exactly halfway between two doubles rounds to the even
    /// one, in both directions; just off halfway, to the nearer one.
    #[test]
    fn halfway_quotients_round_to_even() {
        let k = 225;
        for (n, want) in [((1u64 << 53) + 1, (1 << 52, 1)), ((1 << 53) + 3, ((1 << 52) + 2, 1)), (3, (3 << 51, -51))] {
            assert_eq!(div_round(n * k, 0, k), want, "{n}");
            assert_eq!(div_round(n * k, 7, k), (want.0, want.1 + 7), "{n}");
        }
        // Just above and below the tie at 2**53 + 1.
        assert_eq!(div_round(((1 << 53) + 1) * k + 1, 0, k), ((1 << 52) + 1, 1));
        assert_eq!(div_round(((1 << 53) + 1) * k - 1, 0, k), (1 << 52, 1));
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
