//! The numeric groups of `_strptime.TimeRE`: each directive's regex
//! alternatives, and `re`'s `\d` (any Unicode decimal digit, which `int()`
//! reads too). Shared by the general `strptime` and the default format's
//! reader (`time::iso`), which needs nothing else of it.

/// First code points of the runs of ten decimal digits (Unicode 14, `Nd`),
/// which `re`'s `\d` and `int()` accept.
const DIGIT_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66,
    0xde6, 0xe50, 0xed0, 0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90,
    0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10,
    0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650,
    0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0, 0x16b50,
    0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0,
];

/// [`DIGIT_ZEROS`] halved into 16 bits (every run starts at an even code
/// point, checked when this is built): half the flash.
const HALF_ZEROS: [u16; 66] = {
    let mut out = [0u16; 66];
    let mut i = 0;
    while i < out.len() {
        let z = DIGIT_ZEROS[i];
        assert!(z.is_multiple_of(2) && z / 2 <= 0xffff);
        out[i] = (z / 2) as u16;
        i += 1;
    }
    out
};

/// The value of a Unicode decimal digit (`\d`), else `None`.
pub(super) fn digit_value(c: char) -> Option<u32> {
    let n = c as u32;
    // Below the second run only ASCII's: nearly every digit read, without
    // the search.
    if n < DIGIT_ZEROS[1] {
        let v = n.wrapping_sub(DIGIT_ZEROS[0]);
        return (v < 10).then_some(v);
    }
    let i = HALF_ZEROS.partition_point(|z| u32::from(*z) * 2 <= n);
    let zero = u32::from(*HALF_ZEROS.get(i.checked_sub(1)?)?) * 2;
    let v = n - zero;
    (v < 10).then_some(v)
}

/// One element of a directive's regex alternative.
#[derive(Clone, Copy)]
pub(super) enum Atom {
    /// One exact ASCII character.
    Ch(u8),
    /// An ASCII range `[a-b]`.
    In(u8, u8),
    /// `\d`: any Unicode decimal digit.
    D,
}

use Atom::{Ch, In, D};

/// The alternatives of `_strptime.TimeRE` for the numeric directives.
pub(super) fn alternatives(d: char) -> &'static [&'static [Atom]] {
    match d {
        'd' => &[
            &[Ch(b'3'), In(b'0', b'1')],
            &[In(b'1', b'2'), D],
            &[Ch(b'0'), In(b'1', b'9')],
            &[In(b'1', b'9')],
            &[Ch(b' '), In(b'1', b'9')],
        ],
        'H' => &[&[Ch(b'2'), In(b'0', b'3')], &[In(b'0', b'1'), D], &[D]],
        'I' | 'm' => &[&[Ch(b'1'), In(b'0', b'2')], &[Ch(b'0'), In(b'1', b'9')], &[In(b'1', b'9')]],
        'G' | 'Y' => &[&[D, D, D, D]],
        'j' => &[
            &[Ch(b'3'), Ch(b'6'), In(b'0', b'6')],
            &[Ch(b'3'), In(b'0', b'5'), D],
            &[In(b'1', b'2'), D, D],
            &[Ch(b'0'), In(b'1', b'9'), D],
            &[Ch(b'0'), Ch(b'0'), In(b'1', b'9')],
            &[In(b'1', b'9'), D],
            &[Ch(b'0'), In(b'1', b'9')],
            &[In(b'1', b'9')],
        ],
        'M' => &[&[In(b'0', b'5'), D], &[D]],
        'S' => &[&[Ch(b'6'), In(b'0', b'1')], &[In(b'0', b'5'), D], &[D]],
        'U' | 'W' => &[&[Ch(b'5'), In(b'0', b'3')], &[In(b'0', b'4'), D], &[D]],
        'V' => {
            &[&[Ch(b'5'), In(b'0', b'3')], &[Ch(b'0'), In(b'1', b'9')], &[In(b'1', b'4'), D], &[D]]
        }
        'w' => &[&[In(b'0', b'6')]],
        'u' => &[&[In(b'1', b'7')]],
        'y' => &[&[D, D]],
        _ => &[],
    }
}

/// The character at byte `pos` of `text`.
pub(super) fn char_at(text: &str, pos: usize) -> Option<char> {
    text.get(pos..)?.chars().next()
}

fn atom_match(a: Atom, c: char) -> bool {
    match a {
        Ch(b) => c == char::from(b),
        In(lo, hi) => (char::from(lo)..=char::from(hi)).contains(&c),
        D => digit_value(c).is_some(),
    }
}

/// Matches `seq` at `pos`; returns the end.
pub(super) fn match_atoms(text: &str, pos: usize, seq: &[Atom]) -> Option<usize> {
    let mut p = pos;
    for a in seq {
        let c = char_at(text, p)?;
        if !atom_match(*a, c) {
            return None;
        }
        p += c.len_utf8();
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed table answers what the list of runs says, and nothing else.
    #[test]
    fn digits_are_the_runs_of_ten_and_only_them() {
        for zero in DIGIT_ZEROS {
            for k in 0..10 {
                assert_eq!(
                    digit_value(char::from_u32(zero + k).unwrap()),
                    Some(k),
                    "{zero:#x} + {k}"
                );
            }
        }
        let digits = (0..0x11_0000u32)
            .filter_map(char::from_u32)
            .filter(|c| digit_value(*c).is_some())
            .count();
        assert_eq!(digits, 10 * DIGIT_ZEROS.len());
    }
}
