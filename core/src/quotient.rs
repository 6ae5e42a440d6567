//! Correctly rounded quotients of integers as doubles, in integer
//! arithmetic: what one IEEE division of two exact operands gives, without
//! the soft-float division a device without a double FPU would link for it
//! (`__divdf3`, about 1 KB of flash on a Cortex-M4).

/// `n * 2**exp / k` rounded to 53 bits, half to even, as `(m, e)`: `m` in
/// `2**52..=2**53` and the value `m * 2**e`. For `n > 0` and `0 < k < 2**62`.
pub(crate) fn div_round(n: u64, exp: i32, k: u64) -> (u64, i32) {
    let bits = |x: u64| 64 - x.leading_zeros();
    // `n << s` over `k` has 57 or 58 bits (more only when `n` alone is
    // longer): four or more to round by. One bit at a time, in u64s: no
    // 128-bit or library division; the remainder stays below `2k`.
    let s = (57 + bits(k)).saturating_sub(bits(n));
    let (mut q, mut r) = (0u64, 0u64);
    for i in (0..bits(n) + s).rev() {
        let bit = i.checked_sub(s).map_or(0, |j| (n >> j) & 1);
        r = (r << 1) | bit;
        q <<= 1;
        if r >= k {
            r -= k;
            q |= 1;
        }
    }
    let shift = bits(q) - 53;
    let mant = q >> shift;
    let rest = q & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    // Above half, or half with a remainder below: up; exactly half: even.
    let up = rest > half || (rest == half && (r != 0 || mant & 1 == 1));
    (mant + u64::from(up), exp - s as i32 + shift as i32)
}

/// The double `m * 2**e` of a [`div_round`] result, which the callers keep
/// within the normal range. At `m == 2**53` the fraction's carry into the
/// exponent field gives the exact value.
pub(crate) fn to_f64((m, e): (u64, i32)) -> f64 {
    f64::from_bits((((e + 1075) as u64) << 52) + m - (1 << 52))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ties: `n / k` exactly halfway between two doubles rounds to the even
    /// one, in both directions; just off halfway, to the nearer one.
    #[test]
    fn halfway_quotients_round_to_even() {
        for k in [1, 225, 15_625, 5u64.pow(22)] {
            for (n, want) in [((1u64 << 53) + 1, (1 << 52, 1)), ((1 << 53) + 3, ((1 << 52) + 2, 1)), (3, (3 << 51, -51))] {
                let Some(nk) = n.checked_mul(k) else { continue };
                assert_eq!(div_round(nk, 0, k), want, "{n} * {k}");
                assert_eq!(div_round(nk, 7, k), (want.0, want.1 + 7), "{n} * {k}");
            }
        }
        let k = 225;
        assert_eq!(div_round(((1 << 53) + 1) * k + 1, 0, k), ((1 << 52) + 1, 1));
        assert_eq!(div_round(((1 << 53) + 1) * k - 1, 0, k), (1 << 52, 1));
        assert_eq!(to_f64((1 << 53, 0)), 9_007_199_254_740_992.0);
        assert_eq!(to_f64((1 << 52, -52)), 1.0);
        assert_eq!(to_f64(div_round(1, 0, 10)), 0.1);
        assert_eq!(to_f64(div_round(u64::MAX, -3, 1 << 61)), (u64::MAX as f64) / 8.0 / (1u64 << 61) as f64);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]
        /// Both operands exact doubles: one IEEE division is the reference.
        #[test]
        fn quotients_are_the_ieee_division_s(n in 1u64..=1 << 53, k in 1u64..=1 << 53, shift in 0u32..53) {
            for (n, k) in [(n, k), (n >> shift | 1, k), (n, k >> shift | 1)] {
                let want = n as f64 / k as f64;
                proptest::prop_assert_eq!(to_f64(div_round(n, 0, k)).to_bits(), want.to_bits(), "{} / {}", n, k);
            }
        }
    }
}
