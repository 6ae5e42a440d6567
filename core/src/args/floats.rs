//! Numbers as Python's `json.dumps(json.loads(..))` writes them: integers as
//! their digits, floats as `repr(float)` (feature `python-floats`) or, for
//! small flash, as their exact decimal in the same layout.

use super::Sink;

/// Writes a (validated) JSON number as Python's `json.dumps(json.loads(..))`.
pub(super) fn write_number<S: Sink>(text: &[u8], out: &mut S) {
    let is_float = text.iter().any(|c| matches!(c, b'.' | b'e' | b'E'));
    if !is_float {
        // Python's int drops the sign of zero; JSON allows no other leading
        // zero, so the digits are otherwise already canonical.
        out.write(if text == b"-0" { b"0" } else { text });
        return;
    }
    if is_own_repr(text) {
        return out.write(text);
    }
    #[cfg(feature = "python-floats")]
    match core::str::from_utf8(text).ok().and_then(|text| text.parse::<f64>().ok()) {
        Some(f) => write_float(f, out),
        None => out.write(text),
    }
    #[cfg(not(feature = "python-floats"))]
    write_decimal(text, out);
}

/// Whether the (validated) float `text` is already `repr(float(text))`, in
/// both configurations: fixed notation within 1e-4..1e15, no exponent, at
/// most 15 significant digits (so it is the shortest round-trip form of its
/// double) and no trailing zero but the one of `.0`. Most floats in tool
/// arguments are: they are written without parsing them.
pub(super) fn is_own_repr(text: &[u8]) -> bool {
    let body = match text {
        [b'-', rest @ ..] => rest,
        _ => text,
    };
    let Some(point) = body.iter().position(|&c| c == b'.') else {
        return false;
    };
    let (int, frac) =
        (body.get(..point).unwrap_or(&[]), body.get(point.saturating_add(1)..).unwrap_or(&[]));
    if frac == b"0" {
        return int.len() <= 15;
    }
    if !frac.iter().all(u8::is_ascii_digit) || frac.last() == Some(&b'0') {
        return false;
    }
    let digits = if int == b"0" {
        let zeros = frac.iter().take_while(|&&c| c == b'0').count();
        if zeros > 3 {
            return false;
        }
        frac.len() - zeros
    } else {
        int.len() + frac.len()
    };
    digits <= 15
}

/// Without `python-floats`: writes a (validated) JSON float as Python's
/// `repr(float(text))` *assuming the decimal is exact*: its significant
/// digits (no leading or trailing zeros) placed as `float.__repr__` places
/// them. This is Python's output exactly when the number has at most 15
/// significant digits and lies within 1e-307..1e308 (every such decimal is
/// the shortest round-trip form of its double); longer or extreme numbers
/// are kept as their exact decimal value rather than rounded to a double.
/// It needs neither float parsing nor float formatting (about 34 KB of
/// flash on a Cortex-M3).
#[cfg_attr(feature = "python-floats", allow(dead_code))]
fn write_decimal<S: Sink>(text: &[u8], out: &mut S) {
    let (negative, body) = match text {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, text),
    };
    let e_at = body.iter().position(|&c| matches!(c, b'e' | b'E')).unwrap_or(body.len());
    let (mantissa, exponent) =
        (body.get(..e_at).unwrap_or(&[]), body.get(e_at.saturating_add(1)..).unwrap_or(&[]));
    let exp = exponent_of(exponent);
    // The mantissa's digits are `int` then `frac`, without the point: a
    // run of them is at most two slices of the text, written as they are.
    let point = mantissa.iter().position(|&c| c == b'.').unwrap_or(mantissa.len());
    let (int, frac) = (
        mantissa.get(..point).unwrap_or(&[]),
        mantissa.get(point.saturating_add(1)..).unwrap_or(&[]),
    );
    let nonzero = |c: &u8| *c != b'0';
    let first = int
        .iter()
        .position(nonzero)
        .or_else(|| frac.iter().position(nonzero).map(|i| i + int.len()));
    if negative {
        out.write(b"-");
    }
    let Some(first) = first else {
        return out.write(b"0.0");
    };
    let last = frac
        .iter()
        .rposition(nonzero)
        .map(|i| i + int.len())
        .or_else(|| int.iter().rposition(nonzero))
        .unwrap_or(first);
    let count = last - first + 1;
    // Exponent of the first significant digit, as in scientific notation.
    let exp10 = exp + int.len() as i64 - 1 - first as i64;
    if exp10 > 308 {
        return out.write(b"Infinity");
    }
    if exp10 < -324 {
        return out.write(b"0.0");
    }
    // The significant digits `from..to` (counted from the first).
    let write_digits = |from: usize, to: usize, out: &mut S| {
        let (from, to) = (first + from, first + to.max(from));
        let split = int.len();
        if let Some(run) = int.get(from.min(split)..to.min(split)).filter(|run| !run.is_empty()) {
            out.write(run);
        }
        if let Some(run) = frac
            .get(from.saturating_sub(split)..to.saturating_sub(split))
            .filter(|run| !run.is_empty())
        {
            out.write(run);
        }
    };
    if (-4..16).contains(&exp10) {
        if exp10 >= 0 {
            let int_digits = exp10 as usize + 1;
            if count <= int_digits {
                write_digits(0, count, out);
                write_zeros(int_digits - count, out);
                out.write(b".0");
            } else {
                write_digits(0, int_digits, out);
                out.write(b".");
                write_digits(int_digits, count, out);
            }
        } else {
            out.write(b"0.");
            write_zeros(exp10.unsigned_abs() as usize - 1, out);
            write_digits(0, count, out);
        }
    } else {
        write_digits(0, 1, out);
        if count > 1 {
            out.write(b".");
            write_digits(1, count, out);
        }
        out.write(if exp10 < 0 { b"e-" } else { b"e+" });
        let m = exp10.unsigned_abs();
        if m >= 100 {
            out.write(&[b'0' + (m / 100) as u8]);
        }
        out.write(&[b'0' + (m / 10 % 10) as u8, b'0' + (m % 10) as u8]);
    }
}

/// The (validated) exponent digits after `e`, with their sign, saturated:
/// anything this large is out of range anyway.
#[cfg_attr(feature = "python-floats", allow(dead_code))]
fn exponent_of(exponent: &[u8]) -> i64 {
    let (negative, digits) = match exponent {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, exponent),
    };
    let mut exp: i64 = 0;
    for &c in digits {
        exp = (exp * 10 + i64::from(c.wrapping_sub(b'0'))).min(1_000_000);
    }
    if negative {
        -exp
    } else {
        exp
    }
}

#[cfg(feature = "python-floats")]
/// A `core::fmt::Write` into a fixed buffer (fails when full).
struct StackBuf {
    buf: [u8; 40],
    len: usize,
}

#[cfg(feature = "python-floats")]
impl core::fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(core::fmt::Error)?;
        let room = self.buf.get_mut(self.len..end).ok_or(core::fmt::Error)?;
        crate::text::copy_bytes(room, s.as_bytes());
        self.len = end;
        Ok(())
    }
}

fn write_zeros<S: Sink>(mut n: usize, out: &mut S) {
    const ZEROS: &[u8; 16] = b"0000000000000000";
    while n > 0 {
        let k = n.min(ZEROS.len());
        out.write(ZEROS.get(..k).unwrap_or(&[]));
        n -= k;
    }
}

#[cfg(feature = "python-floats")]
/// Writes `f` as Python's `float.__repr__` (and `json`'s names for the
/// non-finite values).
fn write_float<S: Sink>(f: f64, out: &mut S) {
    if f.is_nan() {
        return out.write(b"NaN");
    }
    if f.is_infinite() {
        return out.write(if f < 0.0 { b"-Infinity" } else { b"Infinity" });
    }
    // |f| through the bits: `f64::abs` is not in `core` on older toolchains.
    let Some((digits, exp)) = shortest_digits(f64::from_bits(f.to_bits() & !(1u64 << 63))) else {
        return;
    };
    // `digits × 10^exp`: render the digits, then place the point.
    let mut text = [0u8; 20];
    let mut n = 0;
    let mut rest = digits;
    for slot in text.iter_mut().rev() {
        *slot = b'0' + (rest % 10) as u8;
        rest /= 10;
        n += 1;
        if rest == 0 {
            break;
        }
    }
    let digits = text.get(text.len().saturating_sub(n)..).unwrap_or(&[]);
    // Exponent of the first digit, as in scientific notation.
    let exp10 = exp.saturating_add(n as i32 - 1);

    if f.is_sign_negative() {
        out.write(b"-");
    }
    if (-4..16).contains(&exp10) {
        if exp10 >= 0 {
            let int_len = exp10.unsigned_abs() as usize + 1;
            if digits.len() <= int_len {
                out.write(digits);
                write_zeros(int_len - digits.len(), out);
                out.write(b".0");
            } else {
                let (int_part, frac) = digits.split_at(int_len);
                out.write(int_part);
                out.write(b".");
                out.write(frac);
            }
        } else {
            out.write(b"0.");
            write_zeros(exp10.unsigned_abs() as usize - 1, out);
            out.write(digits);
        }
    } else {
        let (first, rest) = digits.split_at(digits.len().min(1));
        out.write(first);
        if !rest.is_empty() {
            out.write(b".");
            out.write(rest);
        }
        out.write(if exp10 < 0 { b"e-" } else { b"e+" });
        // |exp10| <= 324: two or three digits.
        let m = exp10.unsigned_abs();
        let hundreds = (m / 100) as u8;
        let two = [b'0' + (m / 10 % 10) as u8, b'0' + (m % 10) as u8];
        if hundreds > 0 {
            out.write(&[b'0' + hundreds]);
        }
        out.write(&two);
    }
}

#[cfg(feature = "python-floats")]
/// Python's shortest round-trip digits of a positive finite `x`, as
/// `(digits, exp)` with `x ≈ digits × 10^exp` and no trailing zero in
/// `digits` (zero is `(0, 0)`).
///
/// Rust's `{:e}` gives the shortest digits that round-trip, the closest of
/// them to `x`, as Python does; the two differ only when `x` lies exactly
/// halfway between two such candidates: Rust takes the upper one, Python
/// (David Gay's `dtoa`) the one with an even last digit.
fn shortest_digits(x: f64) -> Option<(u64, i32)> {
    use core::fmt::Write as _;
    let mut text = StackBuf { buf: [0; 40], len: 0 };
    write!(text, "{x:e}").ok()?;
    let formatted = text.buf.get(..text.len)?;
    let e_at = formatted.iter().position(|&c| c == b'e')?;
    let (mantissa, exponent) = formatted.split_at(e_at);
    let exponent = core::str::from_utf8(exponent.get(1..)?).ok()?;
    let exp10: i32 = exponent.parse().ok()?;
    let mut digits = 0u64;
    let mut n = 0i32;
    for &d in mantissa.iter().filter(|&&d| d != b'.') {
        digits = digits.checked_mul(10)?.checked_add(u64::from(d.wrapping_sub(b'0')))?;
        n += 1;
    }
    let exp = exp10.checked_sub(n - 1)?;
    if digits % 2 == 1 {
        // An odd last digit: on an exact tie with a neighbour that also
        // round-trips, Python keeps the neighbour (even last digit).
        for neighbour in [digits - 1, digits + 1] {
            // Halfway between `digits` and `neighbour`, one digit further.
            let mid = (digits + neighbour).checked_mul(5)?;
            if exactly(x, mid, exp - 1) && round_trips(x, neighbour, exp) {
                digits = neighbour;
                break;
            }
        }
    }
    // No trailing zero to strip: `{:e}` writes none, and a tie's exact
    // value is an odd multiple of a power of two below 1, whose decimal
    // ends in 25 or 75, so the even neighbour ends in 2 or 8.
    Some((digits, if digits == 0 { 0 } else { exp }))
}

#[cfg(feature = "python-floats")]
/// Whether `x` (positive, finite) is exactly `m × 10^e`.
pub(super) fn exactly(x: f64, m: u64, e: i32) -> bool {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1u64 << 52) - 1);
    // x = f × 2^k
    let (f, k) =
        if biased == 0 { (fraction, -1074) } else { (fraction | (1u64 << 52), biased - 1075) };
    if f == 0 || m == 0 {
        return f == m;
    }
    // x = f_odd × 2^k2 and m × 10^e = m_odd × 5^e × 2^(a + e): the powers of
    // two must match, then the odd parts.
    let k2 = k + f.trailing_zeros() as i32;
    let f_odd = u128::from(f >> f.trailing_zeros());
    let a = m.trailing_zeros() as i32;
    let m_odd = u128::from(m >> m.trailing_zeros());
    if k2 != a + e {
        return false;
    }
    let five = |p: u32| 5u128.checked_pow(p);
    if e >= 0 {
        five(e.unsigned_abs()).and_then(|p| m_odd.checked_mul(p)) == Some(f_odd)
    } else {
        five(e.unsigned_abs()).and_then(|p| f_odd.checked_mul(p)) == Some(m_odd)
    }
}

#[cfg(feature = "python-floats")]
/// Whether `digits × 10^exp` reads back as `x`.
fn round_trips(x: f64, digits: u64, exp: i32) -> bool {
    use core::fmt::Write as _;
    let mut text = StackBuf { buf: [0; 40], len: 0 };
    if write!(text, "{digits}e{exp}").is_err() {
        return false;
    }
    let parsed = text
        .buf
        .get(..text.len)
        .and_then(|t| core::str::from_utf8(t).ok())
        .and_then(|t| t.parse::<f64>().ok());
    parsed == Some(x)
}

/// The exact-decimal path agrees with Python's `repr(float(text))` (here:
/// the `python-floats` path, differentially tested against Python) for up
/// to 15 significant digits within 1e-307..1e308.
#[cfg(all(test, feature = "python-floats"))]
mod decimal_tests {
    extern crate std;

    use super::*;
    use proptest::prelude::*;
    use std::string::String;

    struct Text(String);

    impl Sink for Text {
        fn write(&mut self, bytes: &[u8]) {
            self.0.push_str(core::str::from_utf8(bytes).unwrap_or("\u{fffd}"));
        }
    }

    fn both(text: &str) -> (String, String) {
        let mut python = Text(String::new());
        write_float(text.parse().unwrap_or(f64::NAN), &mut python);
        let mut decimal = Text(String::new());
        write_decimal(text.as_bytes(), &mut decimal);
        (python.0, decimal.0)
    }

    #[test]
    fn zeros_and_edges() {
        for text in [
            "0.0",
            "-0.0",
            "0e5",
            "-0.000e-3",
            "1.0",
            "1.50",
            "100e-2",
            "1e16",
            "1e15",
            "0.0001",
            "0.00001",
            "123456789012345e-20",
            "1e308",
            "1e-307",
            // Past the range, where a double rounds: to infinity, to zero,
            // and the subnormals that are exact enough to agree.
            "1e309",
            "1e-325",
            "5e-324",
            "1.5e-320",
        ] {
            let (python, decimal) = both(text);
            assert_eq!(python, decimal, "{text}");
        }
    }

    proptest! {
        #[test]
        fn decimal_matches_python_repr_up_to_15_digits(
            negative: bool,
            digits in 1u64..1_000_000_000_000_000,
            point in 0usize..20,
            exp in -280i32..280,
            form in 0u8..4,
        ) {
            let d = std::format!("{digits}");
            let mut text = String::from(if negative { "-" } else { "" });
            if point == 0 {
                text.push_str(&d);
                text.push_str(".0");
            } else if point < d.len() {
                text.push_str(&d[..d.len() - point]);
                text.push('.');
                text.push_str(&d[d.len() - point..]);
            } else {
                text.push_str("0.");
                text.push_str(&"0".repeat(point - d.len()));
                text.push_str(&d);
            }
            match form {
                0 => {}
                1 => text.push_str(&std::format!("e{exp}")),
                2 => text.push_str(&std::format!("E+{}", exp.unsigned_abs())),
                _ => text.push_str(&std::format!("e-{}", exp.unsigned_abs())),
            }
            let (python, decimal) = both(&text);
            prop_assert_eq!(python, decimal, "{}", text);
        }
    }
}
