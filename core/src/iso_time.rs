//! The recorded time in the default format, `%Y-%m-%dT%H:%M:%S`, read
//! without the general `strptime`: the form envaware itself writes
//! (`2026-07-22T02:30:00`) costs a few dozen instructions instead of a
//! regex match (about 22,000 on a 64-bit host).
//!
//! Only the exact form is read here: nineteen bytes, ASCII digits, an
//! upper-case `T`, every field two digits (four for the year) and in range.
//! Anything else (one-digit fields, a lower-case `t`, other Unicode digits,
//! trailing text, a day the month does not have) is left to
//! [`parse_time`](crate::time::parse_time), so the answers are the
//! reference's by construction: on the form read here Python's regex takes
//! each field whole, and `datetime` accepts exactly the dates chrono does
//! from year 1 on.

use chrono::NaiveDate;

use crate::time::Recorded;

/// `text` read as `%Y-%m-%dT%H:%M:%S` when it has exactly the form above;
/// `None` otherwise, which is no verdict: the caller then asks `strptime`.
pub(crate) fn parse_default(text: &str) -> Option<Recorded> {
    /// The form, a `0` where a digit goes.
    const FORM: &[u8; 19] = b"0000-00-00T00:00:00";
    if text.len() != FORM.len() {
        return None;
    }
    // Year, month, day, hour, minute, second: each field's digits, then
    // the separator after it moves on to the next.
    let mut fields = [0u32; 6];
    let mut k = 0;
    for (&c, &f) in text.as_bytes().iter().zip(FORM) {
        let digit = c.wrapping_sub(b'0');
        match fields.get_mut(k) {
            Some(field) if f == b'0' && digit < 10 => *field = *field * 10 + u32::from(digit),
            _ if f != b'0' && c == f => k += 1,
            _ => return None,
        }
    }
    let [year, month, day, hour, minute, second] = fields;
    // Python's `datetime` starts at year 1; chrono's would take year 0.
    let date = NaiveDate::from_ymd_opt(i32::try_from(year).ok().filter(|&y| y > 0)?, month, day)?;
    Some(Recorded { naive: date.and_hms_opt(hour, minute, second)?, utc_offset_micros: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_TIME_FORMAT;
    use crate::time::parse_time;
    use proptest::prelude::*;
    use std::string::String;
    use std::vec::Vec;

    /// Whether `s` has the form this module reads (nineteen bytes, ASCII
    /// digits and `--T::` where they go), whatever its fields' values.
    fn has_the_form(s: &str) -> bool {
        s.len() == 19
            && s.bytes().enumerate().all(|(i, c)| match i {
                4 | 7 => c == b'-',
                10 => c == b'T',
                13 | 16 => c == b':',
                _ => c.is_ascii_digit(),
            })
    }

    /// The fast path agrees with strptime wherever it answers, and answers
    /// wherever strptime accepts the form it reads.
    fn agrees(s: &str) -> bool {
        let (fast, full) = (parse_default(s), parse_time(s, DEFAULT_TIME_FORMAT));
        assert!(fast.is_none() || fast == full, "{s:?}: {fast:?} against strptime's {full:?}");
        assert_eq!(fast.is_some(), full.is_some() && has_the_form(s), "{s:?}: {fast:?} against strptime's {full:?}");
        fast.is_some()
    }

    fn iso(y: u32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> String {
        std::format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}")
    }

    #[test]
    fn every_date_and_time_field_in_and_out_of_range_agrees_with_strptime() {
        let mut read = 0;
        // Leap years and not (1900, 2000, 2100), the first and last years,
        // and year 0, which Python rejects and chrono would take.
        for y in [0, 1, 4, 100, 999, 1000, 1900, 1999, 2000, 2024, 2026, 2100, 9996, 9999] {
            for mo in 0..=13 {
                for d in 0..=32 {
                    read += usize::from(agrees(&iso(y, mo, d, 2, 30, 0)));
                }
            }
        }
        // Every day of the 13 years from 1 on; 4, 2000, 2024 and 9996 leap.
        assert_eq!(read, 13 * 365 + 4);
        let mut read = 0;
        for h in 0..=30 {
            for mi in [0, 9, 10, 59, 60, 61, 99] {
                for s in [0, 9, 10, 59, 60, 61, 99] {
                    read += usize::from(agrees(&iso(2026, 7, 22, h, mi, s)));
                }
            }
        }
        assert_eq!(read, 24 * 4 * 4);
    }

    #[test]
    fn near_misses_agree_with_strptime() {
        let alphabet = ["0", "1", "2", "3", "5", "9", "-", "T", "t", ":", " ", "x", "\u{663}", "\u{a0}", "+"];
        let mut read = 0;
        for base in ["2026-07-22T02:30:00", "2024-02-29T23:59:59", "0001-01-01T00:00:00", "9999-12-31T23:59:59"] {
            assert!(agrees(base));
            let chars: Vec<(usize, char)> = base.char_indices().collect();
            for &(i, c) in &chars {
                let (head, tail) = (&base[..i], &base[i + c.len_utf8()..]);
                read += usize::from(agrees(&std::format!("{head}{tail}")));
                for a in alphabet {
                    read += usize::from(agrees(&std::format!("{head}{a}{tail}")));
                    read += usize::from(agrees(&std::format!("{head}{a}{c}{tail}")));
                }
            }
            for a in alphabet {
                read += usize::from(agrees(&std::format!("{base}{a}")));
                read += usize::from(agrees(&std::format!("{a}{base}")));
            }
        }
        // A digit replaced by another that keeps its field in range is
        // still read here.
        assert!(read > 100, "{read}");
    }

    proptest! {
        #[test]
        fn generated_times_agree_with_strptime(s in "[0-9]{1,5}[-T:]?[0-9]{1,3}[-tT: ]?[0-9]{1,3}[Tt ]?[0-9]{1,3}:?[0-9]{1,3}[: ]?[0-9]{0,3}[ x]?") {
            agrees(&s);
        }
    }
}
