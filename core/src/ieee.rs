//! The double arithmetic the rules and the configuration loader need,
//! rounded exactly as one IEEE operation rounds (to nearest, ties to even),
//! in integer arithmetic: a device without a double FPU then links no
//! soft-float add, multiply or divide (`__adddf3`, `__muldf3`, `__divdf3`:
//! 2.6 KB of flash on a Cortex-M4), only compares.

/// A finite double's exact value, `(-1)**neg * m * 2**e`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Exact {
    neg: bool,
    m: u64,
    e: i32,
}

impl Exact {
    /// The value of a finite `f`.
    fn of(f: f64) -> Exact {
        let bits = f.to_bits();
        let field = ((bits >> 52) & 0x7ff) as i32;
        let fraction = bits & ((1 << 52) - 1);
        let (m, e) =
            if field == 0 { (fraction, -1074) } else { ((1 << 52) + fraction, field - 1075) };
        Exact { neg: bits >> 63 == 1, m, e }
    }
}

/// The double nearest `(-1)**neg * (m + f) * 2**e`, where `0 < f < 1` when
/// `sticky` (then `m` has 55 bits or more: two to round by) and `f = 0`
/// otherwise; ties to even, down to the subnormals. The callers' values
/// stay far from overflow (below 2**200).
fn round(neg: bool, m: u128, e: i32, sticky: bool) -> f64 {
    // To 64 bits first, what falls off a sticky fraction: 53 are kept, so
    // 11 or more stay to round by.
    let over = (128 - m.leading_zeros()).saturating_sub(64);
    let sticky = sticky || m & ((1 << over) - 1) != 0;
    let (m, e) = ((m >> over) as u64, e + over as i32);
    let sign = u64::from(neg) << 63;
    if m == 0 {
        return f64::from_bits(sign);
    }
    // The exponent of the last bit kept: 53 bits, or 2**-1074 at least.
    let last = (64 - m.leading_zeros() as i32 - 53 + e).max(-1074);
    let q = match u32::try_from(last - e) {
        // Nothing to drop: exact.
        Err(_) => m << (e - last),
        Ok(shift) => {
            let q = m.checked_shr(shift).unwrap_or(0);
            let rest = m - q.checked_shl(shift).unwrap_or(0);
            // Above half, or half with a fraction below: up; exactly half:
            // to even. Half of a bit past `m` is more than all of it.
            let up = match shift.checked_sub(1).and_then(|h| 1u64.checked_shl(h)) {
                Some(half) => rest > half || (rest == half && (sticky || q & 1 == 1)),
                None => false,
            };
            q + u64::from(up)
        }
    };
    // A normal number's implicit bit adds one to the exponent field, and a
    // carry to 2**53 (or to 2**52 from a subnormal) is the exact value.
    f64::from_bits(sign + (((last + 1074) as u64) << 52) + q)
}

/// `a * b`, as one IEEE multiplication rounds it (finite operands).
pub(crate) fn mul(a: f64, b: f64) -> f64 {
    let (a, b) = (Exact::of(a), Exact::of(b));
    round(a.neg != b.neg, u128::from(a.m) * u128::from(b.m), a.e + b.e, false)
}

/// `a - b`, as one IEEE subtraction rounds it (finite operands).
pub(crate) fn sub(a: f64, b: f64) -> f64 {
    let (a, mut b) = (Exact::of(a), Exact::of(b));
    b.neg = !b.neg;
    let (x, y) = if a.e >= b.e { (a, b) } else { (b, a) };
    let gap = (x.e - y.e) as u32;
    // 55 bits or more apart, `x` is a normal double (`y` has the smaller
    // exponent) and `y` is below a quarter of its last bit: under half of
    // the step down from `x` even at a power of two, so the result is `x`.
    // At 54 bits apart it may not be: 1 - (2**-54 + 2**-106).
    if gap > 54 {
        return round(x.neg, u128::from(x.m), x.e, false);
    }
    // Aligned exactly: at most 53 + 54 bits.
    let (xm, ym) = (u128::from(x.m) << gap, u128::from(y.m));
    if x.neg == y.neg {
        return round(x.neg, xm + ym, y.e, false);
    }
    match xm.cmp(&ym) {
        // `x - x` is +0.
        core::cmp::Ordering::Equal => 0.0,
        core::cmp::Ordering::Greater => round(x.neg, xm - ym, y.e, false),
        core::cmp::Ordering::Less => round(y.neg, ym - xm, y.e, false),
    }
}

/// `f as i64` (toward zero, saturating; finite `f`), and whether `f` had
/// a fraction.
pub(crate) fn trunc(f: f64) -> (i64, bool) {
    let Exact { neg, m, e } = Exact::of(f);
    let (magnitude, fraction) = match u32::try_from(e) {
        Ok(up) if m.leading_zeros() >= up => (m << up, false),
        Ok(_) => (u64::MAX, false),
        Err(_) => {
            let down = e.unsigned_abs();
            let kept = m.checked_shr(down).unwrap_or(0);
            (kept, kept.checked_shl(down).unwrap_or(0) != m)
        }
    };
    let int = if neg {
        0i64.saturating_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).unwrap_or(i64::MAX)
    };
    (int, fraction)
}

/// `x as f64`: the double nearest `x`.
pub(crate) fn from_i64(x: i64) -> f64 {
    round(x < 0, u128::from(x.unsigned_abs()), 0, false)
}

/// `n * 10**k` for `n <= 2**53`, `k <= 22`, as one IEEE multiplication of
/// the two exact doubles rounds it: `n * 5**k`, then `2**k`.
pub(crate) fn times_pow10(n: u64, k: u32) -> f64 {
    round(false, u128::from(n) * u128::from(5u64.pow(k)), k as i32, false)
}

/// The double nearest `n * 2**exp / k` (ties to even), for `0 < k < 2**62`.
pub(crate) fn div(n: u64, exp: i32, k: u64) -> f64 {
    let bits = |x: u64| 64 - x.leading_zeros();
    // `n << s` over `k` has 57 or 58 bits (more only when `n` alone is
    // longer): four or more to round by. One bit at a time, in u64s: no
    // 128-bit or library division; the remainder stays below `2k`.
    let s = (57 + bits(k)).saturating_sub(bits(n));
    let (mut q, mut r) = (0u64, 0u64);
    for i in (0..bits(n) + s).rev() {
        let bit = i.checked_sub(s).map_or(0, |j| (n >> j) & 1);
        r = (r << 1) + bit;
        q <<= 1;
        if r >= k {
            r -= k;
            q |= 1;
        }
    }
    // A remainder is a fraction below the quotient's last bit.
    round(false, u128::from(q), exp - s as i32, r != 0)
}

/// The exponent and 53-bit mantissa of a positive double: `(m, e)` with the
/// value `m * 2**e`.
pub(crate) fn parts(f: f64) -> (u64, i32) {
    let Exact { m, e, .. } = Exact::of(f);
    (m, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ties: `n / k` exactly halfway between two doubles rounds to the even
    /// one, in both directions; just off halfway, to the nearer one.
    #[test]
    fn halfway_quotients_round_to_even() {
        let tie = 9_007_199_254_740_993u64; // 2**53 + 1: halfway
        for k in [1, 225, 15_625, 5u64.pow(22)] {
            for (n, want) in
                [(tie, 9_007_199_254_740_992.0), (tie + 2, 9_007_199_254_740_996.0), (3, 3.0)]
            {
                let Some(nk) = n.checked_mul(k) else { continue };
                assert_eq!(div(nk, 0, k), want, "{n} * {k}");
                assert_eq!(div(nk, 7, k), want * 128.0, "{n} * {k}");
            }
        }
        let k = 225;
        assert_eq!(div(tie * k + 1, 0, k), 9_007_199_254_740_994.0);
        assert_eq!(div(tie * k - 1, 0, k), 9_007_199_254_740_992.0);
        assert_eq!(div(1, 0, 10), 0.1);
        assert_eq!(div(0, 0, 10), 0.0);
        assert_eq!(div(u64::MAX, -3, 1 << 61), 1.0);
        assert_eq!(parts(0.75), (3 << 51, -53));
    }

    /// Operands that exercise every path: both signs, zeros, subnormals,
    /// neighbours, powers of two and far-apart exponents.
    const EDGES: [f64; 22] = [
        0.0,
        -0.0,
        5e-324,
        -5e-324,
        f64::MIN_POSITIVE - 5e-324,
        2.2250738585072014e-308,
        1e-300,
        1e-20,
        0.1,
        0.2,
        0.3,
        0.8,
        0.9,
        0.8999999999999999,
        1.0,
        -1.0,
        1.0000000000000002,
        0.9999999999999999,
        3.0,
        9_007_199_254_740_993.0,
        1e300,
        -123.456,
    ];

    #[test]
    fn edge_operands_round_as_the_fpu_does() {
        for a in EDGES {
            for b in EDGES {
                assert_eq!(sub(a, b).to_bits(), (a - b).to_bits(), "{a:e} - {b:e}");
                if (a * b).is_finite() {
                    assert_eq!(mul(a, b).to_bits(), (a * b).to_bits(), "{a:e} * {b:e}");
                }
            }
            if a.abs() < 9.3e18 {
                assert_eq!(trunc(a), (a as i64, a.fract() != 0.0), "{a:e}");
            }
        }
        for x in [
            0,
            1,
            -1,
            1 << 53,
            (1 << 53) + 1,
            (1 << 53) + 3,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
            -((1 << 54) + 2),
        ] {
            assert_eq!(from_i64(x).to_bits(), (x as f64).to_bits(), "{x}");
        }
        for (f, want) in [
            (9.3e18, i64::MAX),
            (-9.3e18, i64::MIN),
            (1e300, i64::MAX),
            (-0.5, 0),
            (-2.5, -2),
            (2.5, 2),
        ] {
            assert_eq!(trunc(f).0, want, "{f:e}");
        }
        assert_eq!(trunc(-0.5), (0, true));
        // 54 bits apart the smaller one still moves the result, 55 apart not.
        let (below_one, quarter) = (1.0 - f64::EPSILON / 2.0, f64::EPSILON / 4.0);
        assert_eq!(sub(1.0, quarter * (1.0 + f64::EPSILON)), below_one);
        assert_eq!(sub(1.0, quarter), 1.0);
        assert_eq!(sub(1.0, quarter / 2.0 * (2.0 - f64::EPSILON)), 1.0);
        assert_eq!(sub(-1.0, -quarter * (1.0 + f64::EPSILON)), -below_one);
        assert_eq!(trunc(4.0), (4, false));
        for k in 0..=22 {
            let pow: f64 = std::format!("1e{k}").parse().unwrap();
            for n in [1, 3, 7, 123_456_789, (1 << 53) - 1, 1 << 53] {
                assert_eq!(times_pow10(n, k).to_bits(), (n as f64 * pow).to_bits(), "{n}e{k}");
            }
        }
    }

    /// Any finite double whose results stay finite: `2**-1100..2**500` in
    /// magnitude, from its bits.
    fn operand() -> impl proptest::strategy::Strategy<Value = f64> {
        use proptest::prelude::*;
        (any::<bool>(), 0u64..1 << 52, 0u64..1524).prop_map(|(neg, fraction, field)| {
            f64::from_bits(u64::from(neg) << 63 | field << 52 | fraction)
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]
        #[test]
        fn arithmetic_is_the_fpu_s(a in operand(), b in operand(), c in operand(), x: i64, shift in 0u32..64) {
            // `c` close to `a`: the cancelling subtractions.
            let near = f64::from_bits(a.to_bits() ^ (c.to_bits() & 0xff));
            for (a, b) in [(a, b), (a, near), (a, c)] {
                let (n, k) = (a.to_bits() >> 12, (b.to_bits() >> 3 | 1) & ((1 << 53) - 1));
                // Both exact doubles: one IEEE division is the reference.
                proptest::prop_assert_eq!(div(n, 0, k).to_bits(), (n as f64 / k as f64).to_bits(), "{} / {}", n, k);
                proptest::prop_assert_eq!(sub(a, b).to_bits(), (a - b).to_bits(), "{:e} - {:e}", a, b);
                proptest::prop_assert_eq!(mul(a, b).to_bits(), (a * b).to_bits(), "{:e} * {:e}", a, b);
            }
            let x = x >> shift;
            proptest::prop_assert_eq!(from_i64(x).to_bits(), (x as f64).to_bits(), "{}", x);
            proptest::prop_assert_eq!(trunc(a), (a as i64, a.fract() != 0.0), "{:e}", a);
        }
    }
}
