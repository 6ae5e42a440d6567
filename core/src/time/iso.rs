//! The default format, `%Y-%m-%dT%H:%M:%S`, read back as CPython 3.11's
//! `_strptime` reads it, without the general matcher: the form envaware
//! itself writes (`2026-07-22T02:30:00`) costs a few dozen instructions
//! instead of a regex match (about 22,000 on a 64-bit host), and a build
//! without `custom-time-format` links none of the general `strptime`.
//!
//! The regex `_strptime` compiles for this format is its six numeric groups
//! (`time::numeric`), each followed by a literal (`re.IGNORECASE`: `T`
//! also matches `t`). Every alternative of a group is digits or a space and
//! digits, and no literal is either, so at most one alternative of an inner
//! group is followed by its literal: the regex engine never backtracks
//! into an earlier group, and trying each group's alternatives in order,
//! once, finds Python's match. The last group takes its first alternative
//! that matches, and text left after it is Python's "unconverted data
//! remains".

use super::civil::from_ymd;
use super::numeric::{alternatives, char_at, digit_value, match_atoms};
use super::Recorded;

/// The default format's groups, each with the literals that may follow it
/// (none after the last).
const GROUPS: [(char, &[char]); 6] =
    [('Y', &['-']), ('m', &['-']), ('d', &['T', 't']), ('H', &[':']), ('M', &[':']), ('S', &[])];

/// Python's `datetime.strptime(text, "%Y-%m-%dT%H:%M:%S")`, or `None` where
/// it raises `ValueError`.
pub(super) fn parse(text: &str) -> Option<Recorded> {
    let [year, month, day, hour, minute, second] = exact_form(text).or_else(|| groups(text))?;
    // Python's `datetime` starts at year 1 (chrono's would take year 0),
    // and refuses seconds 60 and 61 as chrono does.
    let date = from_ymd(i32::try_from(year).ok().filter(|&y| y > 0)?, month, day)?;
    Some(Recorded { naive: date.and_hms_opt(hour, minute, second)?, utc_offset_micros: None })
}

/// Year, month, day, hour, minute and second of the form envaware writes
/// (`2026-07-22T02:30:00`: nineteen ASCII bytes, every field its full
/// width), in a few dozen instructions; `None`, no verdict, for any other
/// form. On this form the regex takes each field whole where it matches
/// at all, and where it does not, the field is out of range and the date
/// is refused either way.
fn exact_form(text: &str) -> Option<[u32; 6]> {
    /// The form, a `0` where a digit goes.
    const FORM: &[u8; 19] = b"0000-00-00T00:00:00";
    if text.len() != FORM.len() {
        return None;
    }
    // Each field's digits, then the separator after it moves on to the next.
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
    Some(fields)
}

/// The six fields as the format's regex reads them, in any form it
/// matches (one-digit fields, Unicode digits, `t`, a day's leading space);
/// `None` where it does not match or leaves text over.
fn groups(text: &str) -> Option<[u32; 6]> {
    let mut fields = [0u32; 6];
    let mut pos = 0;
    for ((d, after), field) in GROUPS.iter().zip(&mut fields) {
        let (end, next) = alternatives(*d).iter().find_map(|alt| {
            let end = match_atoms(text, pos, alt)?;
            match after.is_empty() {
                true => Some((end, end)),
                false => char_at(text, end)
                    .filter(|c| after.contains(c))
                    .map(|c| (end, end + c.len_utf8())),
            }
        })?;
        // `int()` of the group: its digits (a day's leading space aside).
        *field =
            text.get(pos..end)?.chars().filter_map(digit_value).fold(0, |v, digit| v * 10 + digit);
        pos = next;
    }
    (pos == text.len()).then_some(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{NaiveDate, NaiveDateTime};
    #[cfg(feature = "custom-time-format")]
    use proptest::prelude::*;
    use std::string::String;
    #[cfg(feature = "custom-time-format")]
    use std::vec::Vec;

    /// CPython 3.11's `datetime.strptime(text, "%Y-%m-%dT%H:%M:%S")`, as
    /// `isoformat()` or `None` for `ValueError`.
    #[test]
    fn reads_what_python_reads() {
        let cases: &[(&str, Option<&str>)] = &[
            ("2026-07-22T02:30:00", Some("2026-07-22T02:30:00")),
            ("2026-7-5T3:4:5", Some("2026-07-05T03:04:05")),
            ("2026-1-1T0:0:0", Some("2026-01-01T00:00:00")),
            ("2026-07- 5t03:04:05", Some("2026-07-05T03:04:05")),
            ("2026-07-3T00:00:00", Some("2026-07-03T00:00:00")),
            ("2026-07-05T03:04:7", Some("2026-07-05T03:04:07")),
            ("2024-02-29T23:59:59", Some("2024-02-29T23:59:59")),
            ("\u{662}\u{660}\u{662}\u{666}-07-05T03:04:05", Some("2026-07-05T03:04:05")),
            ("2026-07-1\u{663}T0\u{663}:4:\u{665}", Some("2026-07-13T03:04:05")),
            ("\u{ff11}\u{ff12}\u{ff13}\u{ff14}-01-01T00:00:00", Some("1234-01-01T00:00:00")),
            ("2026-07-05T03:04:61", None),
            ("2026-07-05T03:04:60", None),
            ("2026-02-29T00:00:00", None),
            ("0000-01-01T00:00:00", None),
            ("2026-07-05T03:04:05 ", None),
            (" 2026-07-05T03:04:05", None),
            ("2026-07-05T03:04:05\n", None),
            ("2026-13-05T03:04:05", None),
            ("2026-07-32T00:00:00", None),
            ("2026-07-05T24:00:00", None),
            ("2026-07-05T3:60:00", None),
            ("2026-07-05T03:04:5x", None),
            ("2026-07-05T03:04:059", None),
            ("2026-07-05T03:04:75", None),
            ("2026-07-05T03:04", None),
            ("", None),
        ];
        for (text, want) in cases {
            let got = parse(text).map(|r| crate::time::tests::iso(r.naive));
            assert_eq!(got, want.map(|w| std::format!("{w}.000000")), "{text:?}");
            assert!(parse(text).is_none_or(|r| r.utc_offset_micros.is_none()));
        }
    }

    /// The form envaware writes is read without the regex's groups, to
    /// the same fields; any other form is left to them.
    #[test]
    fn the_written_form_takes_the_short_way_to_the_same_fields() {
        for text in ["2026-07-22T02:30:00", "0000-13-32T24:60:61", "9999-12-31T23:59:59"] {
            let fields = exact_form(text).unwrap();
            assert!(groups(text).is_none_or(|g| g == fields), "{text}");
        }
        assert_eq!(exact_form("2026-07-22T02:30:00"), Some([2026, 7, 22, 2, 30, 0]));
        assert_eq!(groups("2026-07-22T02:30:00"), Some([2026, 7, 22, 2, 30, 0]));
        for other in [
            "2026-7-22T02:30:00",
            "2026-07-22t02:30:00",
            "2026-07-22T02:30:0x",
            "2026-07-22T02:30:000",
            "2026-07-22 02:30:00",
        ] {
            assert_eq!(exact_form(other), None, "{other}");
        }
    }

    /// `T` is the only literal with another case, and `t` its only one
    /// (CPython 3.11's `re.IGNORECASE`, as the general matcher has it).
    #[cfg(feature = "custom-time-format")]
    #[test]
    fn the_literals_match_what_re_ignorecase_matches() {
        for (g, after) in GROUPS.iter().take(5) {
            let lit = after[0];
            for c in (0..0x11_0000u32).filter_map(char::from_u32) {
                assert_eq!(
                    after.contains(&c),
                    super::super::strptime::ci_match(lit, c),
                    "after %{g}: {c:?}"
                );
            }
        }
    }

    /// The general `strptime` on the default format, to hold this reader to.
    #[cfg(feature = "custom-time-format")]
    fn agrees(s: &str) -> bool {
        let (ours, general) =
            (parse(s), super::super::strptime::parse(s, crate::time::DEFAULT_TIME_FORMAT));
        assert_eq!(ours, general, "{s:?}");
        ours.is_some()
    }

    fn iso(y: u32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> String {
        std::format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}")
    }

    fn naive(s: &str) -> Option<NaiveDateTime> {
        parse(s).map(|r| r.naive)
    }

    /// Exactly the dates and times Python's `datetime` accepts, from year 1.
    #[test]
    fn every_date_and_time_field_in_and_out_of_range() {
        let mut read = 0;
        // Leap years and not (1900, 2000, 2100), the first and last years,
        // and year 0, which Python rejects and chrono would take.
        for y in [0, 1, 4, 100, 999, 1000, 1900, 1999, 2000, 2024, 2026, 2100, 9996, 9999] {
            for mo in 0..=13 {
                for d in 0..=32 {
                    let s = iso(y, mo, d, 2, 30, 0);
                    let want = NaiveDate::from_ymd_opt(y as i32, mo, d)
                        .filter(|_| y > 0)
                        .and_then(|d| d.and_hms_opt(2, 30, 0));
                    assert_eq!(naive(&s), want, "{s}");
                    read += usize::from(want.is_some());
                }
            }
        }
        // Every day of the 13 years from 1 on; 4, 2000, 2024 and 9996 leap.
        assert_eq!(read, 13 * 365 + 4);
        for h in 0..=30 {
            for mi in [0, 9, 10, 59, 60, 61, 99] {
                for s in [0, 9, 10, 59, 60, 61, 99] {
                    let text = iso(2026, 7, 22, h, mi, s);
                    let want =
                        NaiveDate::from_ymd_opt(2026, 7, 22).and_then(|d| d.and_hms_opt(h, mi, s));
                    assert_eq!(naive(&text), want, "{text}");
                }
            }
        }
    }

    /// Every one-character deletion, replacement and insertion of four
    /// times reads as the general `strptime` reads it.
    #[cfg(feature = "custom-time-format")]
    #[test]
    fn near_misses_agree_with_strptime() {
        let alphabet = [
            "0", "1", "2", "3", "5", "6", "9", "-", "T", "t", ":", " ", "x", "\u{663}", "\u{ff19}",
            "\u{a0}", "+",
        ];
        let mut read = 0;
        for base in [
            "2026-07-22T02:30:00",
            "2024-02-29T23:59:59",
            "0001-01-01T00:00:00",
            "9999-12-31T23:59:59",
            "2026-7-2T2:3:0",
        ] {
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
        assert!(read > 300, "{read}");
    }

    #[cfg(feature = "custom-time-format")]
    proptest! {
        #[test]
        fn generated_times_agree_with_strptime(s in "[0-9\u{663}]{1,5}[-T:]?[ 0-9]{1,3}[-tT: ]?[ 0-9\u{ff13}]{1,3}[Tt ]?[0-9]{1,3}:?[0-9]{1,3}[: ]?[0-9]{0,3}[ x]?") {
            agrees(&s);
        }
    }
}
