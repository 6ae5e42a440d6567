//! When a hint block was created, as a watch's time rules read it: the
//! `created_at` of `../shared/scenario-format.md`, "Time rules".

#[cfg(any(test, feature = "wire"))]
use core::fmt;

use chrono::NaiveDate;

use crate::clock::Timestamp;

/// A hint block's `created_at`: the instant a watched field was told.
///
/// A hint envaware appends carries the step's instant, written
/// `YYYY-MM-DDTHH:MM:SS.ffffffZ`. A hint read from an AgentScope context may
/// carry an offset (an instant) or none (AgentScope writes the host's wall
/// clock with no offset), which is read on the configured timezone's wall
/// clock, as Python subtracts two datetimes that share one tzinfo. With
/// feature `wire`, `Display` writes it back (`…ffffffZ` for an instant).
///
/// ```
/// use envaware::{CreatedAt, Timestamp};
///
/// let told = CreatedAt::parse("2026-07-22T02:30:00.250000Z").unwrap();
/// assert_eq!(told, CreatedAt::Instant(Timestamp::from_unix_micros(1_784_687_400_250_000)));
/// assert_eq!(told, CreatedAt::parse("2026-07-22T10:30:00.25+08:00").unwrap());
/// assert!(matches!(CreatedAt::parse("2026-07-22T10:30:00"), Some(CreatedAt::WallClock(_))));
/// assert_eq!(CreatedAt::parse("2026-07-22 10:30"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CreatedAt {
    /// An instant (written with `Z` or an offset).
    Instant(Timestamp),
    /// A wall-clock time with no offset, as microseconds since
    /// 1970-01-01T00:00:00 of that wall clock: read on the configured
    /// timezone's wall clock.
    WallClock(i64),
}

impl CreatedAt {
    /// Reads `YYYY-MM-DDTHH:MM:SS[.f{1,6}][Z|z|±HH:MM]`; `None` for any
    /// other text, or a date or time that does not exist (Python's `datetime`
    /// starts at year 1; no leap second).
    pub fn parse(text: &str) -> Option<CreatedAt> {
        let b = text.as_bytes();
        let digits = |from: usize, n: usize| -> Option<u32> {
            let part = b.get(from..from.checked_add(n)?)?;
            part.iter().try_fold(0u32, |acc, &c| {
                c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
            })
        };
        let sep = |at: usize, c: u8| b.get(at) == Some(&c);
        if !(sep(4, b'-') && sep(7, b'-') && sep(10, b'T') && sep(13, b':') && sep(16, b':')) {
            return None;
        }
        let (year, month, day) = (digits(0, 4)?, digits(5, 2)?, digits(8, 2)?);
        let (hour, minute, second) = (digits(11, 2)?, digits(14, 2)?, digits(17, 2)?);
        let mut at = 19;
        let mut micros = 0;
        if sep(at, b'.') {
            let n =
                b.get(at + 1..).map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count());
            if !(1..=6).contains(&n) {
                return None;
            }
            micros = digits(at + 1, n)? * 10u32.pow(6 - n as u32);
            at += 1 + n;
        }
        let date =
            NaiveDate::from_ymd_opt(i32::try_from(year).ok().filter(|&y| y > 0)?, month, day)?;
        let naive = date.and_hms_micro_opt(hour, minute, second, micros)?;
        let wall = naive.and_utc().timestamp_micros();
        let offset_seconds = match b.get(at..)? {
            [] => return Some(CreatedAt::WallClock(wall)),
            [b'Z' | b'z'] => 0,
            [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
                let (h, m) = (digits(at + 1, 2)?, digits(at + 4, 2)?);
                if h > 23 || m > 59 {
                    return None;
                }
                let seconds = i64::from(h * 3600 + m * 60);
                if *sign == b'-' {
                    -seconds
                } else {
                    seconds
                }
            }
            _ => return None,
        };
        Some(CreatedAt::Instant(Timestamp(wall.checked_sub(offset_seconds * 1_000_000)?)))
    }

    /// How long ago this was at `now`, in microseconds: `None` when it is
    /// later than `now` (or too far to count). `now_wall` gives `now` on the
    /// configured timezone's wall clock (microseconds since 1970-01-01T00:00
    /// of that clock); it is called only for a [`CreatedAt::WallClock`].
    pub fn age(self, now: Timestamp, now_wall: impl FnOnce() -> i64) -> Option<i64> {
        let age = match self {
            CreatedAt::Instant(at) => now.0.checked_sub(at.0)?,
            CreatedAt::WallClock(wall) => now_wall().checked_sub(wall)?,
        };
        (age >= 0).then_some(age)
    }
}

/// With `wire`, which writes it (through the writer of the time dimension).
#[cfg(any(test, feature = "wire"))]
impl fmt::Display for CreatedAt {
    /// `YYYY-MM-DDTHH:MM:SS.ffffff`, then `Z` for an instant.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (micros, z) = match self {
            CreatedAt::Instant(at) => (at.0, "Z"),
            CreatedAt::WallClock(wall) => (*wall, ""),
        };
        super::format_time(f, "%Y-%m-%dT%H:%M:%S.%f", Timestamp(micros), super::Zone::Utc)?;
        f.write_str(z)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn the_three_forms_are_read_and_anything_else_is_not() {
        let utc = |s: &str| match CreatedAt::parse(s) {
            Some(CreatedAt::Instant(t)) => Some(t.0),
            _ => None,
        };
        let base = 1_784_687_400_000_000; // 2026-07-22T02:30:00Z
        assert_eq!(utc("2026-07-22T02:30:00Z"), Some(base));
        assert_eq!(utc("2026-07-22T02:30:00z"), Some(base));
        assert_eq!(utc("2026-07-22T02:30:00.000001Z"), Some(base + 1));
        assert_eq!(utc("2026-07-22T02:30:00.5Z"), Some(base + 500_000));
        assert_eq!(utc("2026-07-22T10:30:00+08:00"), Some(base));
        assert_eq!(utc("2026-07-21T21:00:00-05:30"), Some(base));
        assert_eq!(
            CreatedAt::parse("2026-07-22T02:30:00.123456"),
            Some(CreatedAt::WallClock(base + 123_456))
        );
        for bad in [
            "",
            "2026-07-22",
            "2026-07-22 02:30:00",
            "2026-07-22T02:30",
            "2026-07-22T02:30:00.",
            "2026-07-22T02:30:00.1234567Z",
            "2026-07-22T02:30:00+0800",
            "2026-07-22T02:30:00+24:00",
            "2026-07-22T02:30:00+08:60",
            "2026-07-22T02:30:00ZZ",
            "2026-02-30T02:30:00Z",
            "2026-07-22T24:00:00Z",
            "2026-07-22T23:59:60Z",
            "0000-01-01T00:00:00Z",
            "2026-07-22T02:30:00 Z",
            "+026-07-22T02:30:00Z",
            "２026-07-22T02:30:00Z",
        ] {
            assert_eq!(CreatedAt::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn written_with_six_digits_and_read_back() {
        for text in [
            "2026-07-22T02:30:00.000000Z",
            "1000-01-01T00:00:00.000001",
            "9999-12-31T23:59:59.999999Z",
        ] {
            let at = CreatedAt::parse(text).unwrap();
            assert_eq!(at.to_string(), text);
        }
    }

    #[test]
    fn age_is_exact_and_unknown_in_the_future() {
        let at = CreatedAt::Instant(Timestamp(1_000));
        assert_eq!(at.age(Timestamp(1_000), || unreachable!()), Some(0));
        assert_eq!(at.age(Timestamp(2_001), || unreachable!()), Some(1_001));
        assert_eq!(at.age(Timestamp(999), || unreachable!()), None);
        let wall = CreatedAt::WallClock(5);
        assert_eq!(wall.age(Timestamp(0), || 7), Some(2));
        assert_eq!(wall.age(Timestamp(0), || 4), None);
        assert_eq!(CreatedAt::Instant(Timestamp(i64::MIN)).age(Timestamp(1), || 0), None);
    }
}
