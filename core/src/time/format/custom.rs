//! Any time format, with the `custom-time-format` feature: the check of a
//! configured format (every directive one `format_time` reproduces
//! exactly, a full date, whether Python's `strptime` can read the output
//! back), and the `strftime` directives beyond the default format's
//! (the parent module writes those).

use chrono::{Datelike, TimeZone, Timelike};
use chrono_tz::OffsetName;

use super::{signed, two, write_format, Fields, FormatInfo, ParseBack, TimeFormatError};
use crate::text::{push_padded, Bytes};
use crate::time::zone::Zone;
use crate::time::zone_rules;

/// Directives `format_time` reproduces exactly.
const STRFTIME_DIRECTIVES: &str = "aAbBcCdDeFgGhHIjklmMnpPrRStTuUVwWxXyYzZf%";
/// Directives Python's `strptime` knows (`TimeRE` keys).
const STRPTIME_DIRECTIVES: &str = "dfHIGjmMSUwuVyYzABabpZ%WcxX";
/// Expansions of the composite directives, for `strftime` (glibc, C locale).
fn strftime_expansion(c: char) -> Option<&'static str> {
    Some(match c {
        'c' => "%a %b %e %H:%M:%S %Y",
        'D' | 'x' => "%m/%d/%y",
        'F' => "%Y-%m-%d",
        'r' => "%I:%M:%S %p",
        'R' => "%H:%M",
        'T' | 'X' => "%H:%M:%S",
        _ => return None,
    })
}
/// Expansions of the composite directives, for `strptime` (`LocaleTime`, C).
pub(in crate::time) fn strptime_expansion(c: char) -> Option<&'static str> {
    Some(match c {
        'c' => "%a %b %d %H:%M:%S %Y",
        'x' => "%m/%d/%y",
        'X' => "%H:%M:%S",
        _ => return None,
    })
}

/// Whether `c` is one of the ASCII letters of `set`: a byte loop, where
/// `str::contains(char)` would link core's searcher (flash on a device).
fn is_one_of(set: &str, c: char) -> bool {
    set.bytes().any(|b| u32::from(b) == c as u32)
}

/// A set of ASCII letters (`A`..=`z`, 58 bits): the directive letters. A
/// `u64`, not a `u128` over all of ASCII, whose shifts cost a Cortex-M
/// flash at every use; nothing asks for a character that is not a letter.
#[derive(Clone, Copy, Default)]
struct Letters(u64);

impl Letters {
    /// `c`'s bit, if `c` is in `A`..=`z`.
    fn bit(c: char) -> Option<u64> {
        let n = (c as u32).wrapping_sub(u32::from(b'A'));
        (n <= u32::from(b'z' - b'A')).then(|| 1u64 << n)
    }
    fn has(self, c: char) -> bool {
        Self::bit(c).is_some_and(|b| self.0 & b != 0)
    }
    /// Adds `c` (a letter); returns whether it was already there.
    fn add(&mut self, c: char) -> bool {
        let was = self.has(c);
        self.0 |= Self::bit(c).unwrap_or(0);
        was
    }
}

/// [`check_format`](super::check_format) for any format.
pub(super) fn check(fmt: &str) -> Result<FormatInfo, TimeFormatError> {
    if fmt.bytes().any(|b| b == 0) {
        return Err(TimeFormatError::Nul);
    }
    // Formatting side: every directive supported; which fields it shows.
    let mut shown = Letters::default();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        let d = chars.next().ok_or(TimeFormatError::TrailingPercent)?;
        if !is_one_of(STRFTIME_DIRECTIVES, d) {
            return Err(TimeFormatError::UnsupportedDirective(d));
        }
        match strftime_expansion(d) {
            Some(exp) => exp.chars().filter(|c| *c != '%').for_each(|c| {
                shown.add(c);
            }),
            None => {
                shown.add(d);
            }
        }
    }
    let any = |set: &str| set.chars().any(|c| shown.has(c));
    let year = any("Yy");
    let weekday = any("aAuw");
    let has_date = (year && (any("j") || (any("mbBh") && any("de"))))
        || (year && any("UW") && weekday)
        || (any("G") && any("V") && weekday);
    if !has_date {
        return Err(TimeFormatError::NoDatePart);
    }
    Ok(FormatInfo { has_utc_offset: shown.has('z'), parse_back: strptime_verdict(fmt) })
}

/// How Python's `strptime` reacts to the format itself.
pub(in crate::time) fn strptime_verdict(fmt: &str) -> ParseBack {
    let mut groups = Letters::default();
    let mut duplicate = false;
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        // A lone trailing '%' is an IndexError, turned into ValueError.
        let Some(d) = chars.next() else { return ParseBack::Never };
        if !is_one_of(STRPTIME_DIRECTIVES, d) {
            return ParseBack::Never;
        }
        match strptime_expansion(d) {
            Some(exp) => {
                for e in exp.chars().filter(|c| c.is_ascii_alphabetic()) {
                    duplicate |= groups.add(e);
                }
            }
            None if d == '%' => {}
            None => duplicate |= groups.add(d),
        }
    }
    if duplicate {
        ParseBack::ReferenceCrashes
    } else {
        ParseBack::Possible
    }
}

/// The C locale's day names, Monday first as Python's `calendar` lists
/// them; one table for strftime and strptime (which matches them
/// case-blind).
pub(in crate::time) const WEEKDAYS: [&str; 7] =
    ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
/// The C locale's month names, shared as [`WEEKDAYS`] is.
pub(in crate::time) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

fn three(s: &str) -> &str {
    s.get(..3).unwrap_or(s)
}

/// Writes a directive other than the default format's; `false` if it is
/// not one this module knows.
pub(super) fn write_directive<W: Bytes + ?Sized>(w: &mut W, d: u8, t: &Fields) -> bool {
    let date = t.local.date();
    let hour12 = || match t.local.hour() % 12 {
        0 => 12,
        h => h,
    };
    let wday_sun = || date.weekday().num_days_from_sunday();
    let wday_mon = || date.weekday().num_days_from_monday();
    let weekday_name = || WEEKDAYS.get(wday_mon() as usize).copied().unwrap_or("");
    let month_day = || crate::time::civil::month_day(date);
    let month_name = || MONTHS.get(month_day().0 as usize - 1).copied().unwrap_or("");
    match d {
        b'a' => w.push(three(weekday_name()).as_bytes()),
        b'A' => w.push(weekday_name().as_bytes()),
        b'b' | b'h' => w.push(three(month_name()).as_bytes()),
        b'B' => w.push(month_name().as_bytes()),
        // glibc prints the century and years without padding.
        b'C' => signed(w, date.year().div_euclid(100)),
        b'e' => push_padded(w, month_day().1, 2, b' '),
        b'g' => two(w, date.iso_week().year().rem_euclid(100).unsigned_abs()),
        b'G' => signed(w, date.iso_week().year()),
        b'I' => two(w, hour12()),
        b'j' => push_padded(w, date.ordinal(), 3, b'0'),
        b'k' => push_padded(w, t.local.hour(), 2, b' '),
        b'l' => push_padded(w, hour12(), 2, b' '),
        b'n' => w.push(b"\n"),
        b'p' => w.push(if t.local.hour() < 12 { b"AM" } else { b"PM" }),
        b'P' => w.push(if t.local.hour() < 12 { b"am" } else { b"pm" }),
        b't' => w.push(b"\t"),
        b'u' => push_padded(w, wday_mon() + 1, 0, b'0'),
        b'U' => two(w, (date.ordinal0() + 7 - wday_sun()) / 7),
        b'V' => two(w, date.iso_week().week()),
        b'w' => push_padded(w, wday_sun(), 0, b'0'),
        b'W' => two(w, (date.ordinal0() + 7 - wday_mon()) / 7),
        b'y' => two(w, date.year().rem_euclid(100).unsigned_abs()),
        // Python's own: UTC offset, zone name.
        b'z' => write_offset(w, t.offset),
        b'Z' => write_abbr(w, t),
        b'%' => w.push(b"%"),
        _ => match strftime_expansion(char::from(d)) {
            Some(exp) => write_format(w, exp.as_bytes(), t),
            None => return false,
        },
    }
    true
}

/// Sign, hours, minutes and seconds of an offset.
fn hms(secs: i32) -> (&'static [u8], u32, u32, u32) {
    let a = secs.unsigned_abs();
    (if secs < 0 { b"-" } else { b"+" }, a / 3600, a / 60 % 60, a % 60)
}

/// `+HHMM`, or `+HHMMSS` when the offset has seconds (Python's `%z`).
fn write_offset<W: Bytes + ?Sized>(w: &mut W, secs: i32) {
    let (sign, h, m, s) = hms(secs);
    w.push(sign);
    two(w, h);
    two(w, m);
    if s != 0 {
        two(w, s);
    }
}

/// The zone's abbreviation (`%Z`): `EST`, `+08`, `UTC` for [`Zone::Utc`].
fn write_abbr<W: Bytes + ?Sized>(w: &mut W, t: &Fields) {
    match t.zone {
        Zone::Factory => w.push(b"-00"),
        Zone::Utc => w.push(b"UTC"),
        // Past 2099 the zone's own rules answer (chrono-tz's tables end there).
        Zone::Named(tz) => match zone_rules::at_utc(tz, &t.utc) {
            Some((_, abbr)) => w.push(abbr.as_bytes()),
            None => match tz.offset_from_utc_datetime(&t.utc).abbreviation() {
                Some(abbr) => w.push(abbr.as_bytes()),
                None => write_numeric_abbr(w, t.offset),
            },
        },
    }
}

/// zic's numeric abbreviation: `+HH`, `+HHMM`, `+HHMMSS`.
fn write_numeric_abbr<W: Bytes + ?Sized>(w: &mut W, secs: i32) {
    let (sign, h, m, s) = hms(secs);
    w.push(sign);
    two(w, h);
    if m != 0 || s != 0 {
        two(w, m);
    }
    if s != 0 {
        two(w, s);
    }
}

#[cfg(test)]
mod tests {
    //! Expected values are CPython 3.11's own outputs (tzdata 2025.2,
    //! `LC_TIME=C`, `zoneinfo.reset_tzpath(to=[])`).
    extern crate std;

    use core::fmt::Write;
    use std::string::String;

    use super::*;
    use crate::clock::Timestamp;
    use crate::time::format::tests::writes_like_python;
    use crate::time::format::DEFAULT_FORMAT_INFO;
    use crate::time::DEFAULT_TIME_FORMAT;
    use crate::time::{check_format, format_time};

    /// The default format's answer, which a build without this module
    /// gives without checking.
    #[test]
    fn the_default_format_is_checked_as_a_build_without_this_module_says() {
        assert_eq!(check(DEFAULT_TIME_FORMAT), Ok(DEFAULT_FORMAT_INFO));
        assert_eq!(check_format(DEFAULT_TIME_FORMAT), Ok(DEFAULT_FORMAT_INFO));
    }

    #[test]
    fn formats_like_python_strftime() {
        writes_like_python(&[
            ("%Y-%m-%d %H:%M:%S %z %Z", 1772955000123456, "America/New_York", "2026-03-08 03:30:00 -0400 EDT"),
            (
                "%c|%x|%X|%D|%F|%T|%r|%R",
                1772955000123456,
                "Asia/Kolkata",
                "Sun Mar  8 13:00:00 2026|03/08/26|13:00:00|03/08/26|2026-03-08|13:00:00|01:00:00 PM|13:00",
            ),
            (
                "%a %A %b %B %h %C %y %g %G %V %U %W %u %w %j",
                1772955000123456,
                "UTC",
                "Sun Sunday Mar March Mar 20 26 26 2026 10 10 09 7 0 067",
            ),
            ("%e|%k|%l|%I|%p|%P|%f|%n|%t|%%", 1772900000000001, "Europe/Paris", " 7|17| 5|05|PM|pm|000001|\u{a}|\u{9}|%"),
            ("%z %Z", -5364662400000000, "America/New_York", "-045602 LMT"),
            ("%z %Z", 1772955000000000, "Factory", "+0000 -00"),
            ("%z %Z", 1772955000000000, "bogus", "+0000 UTC"),
            ("%z %Z", 1772955000000000, "Asia/Dubai", "+0400 +04"),
            ("%z %Z", 1772955000000000, "Australia/Lord_Howe", "+1100 +11"),
            ("%z %Z", 1772955000000000, "Asia/Kathmandu", "+0545 +0545"),
            ("%Y\u{5e74}%m\u{6708}%d\u{65e5} %H:%M", 1772955000000000, "Asia/Shanghai", "2026\u{5e74}03\u{6708}08\u{65e5} 15:30"),
            // Week numbers on a Tuesday that opens the year, and a Thursday that ends one.
            ("%a %U %W", 1546300800000000, "UTC", "Tue 00 00"),
            ("%a %U %W", 1798675200000000, "UTC", "Thu 52 52"),
            ("abc%", 0, "UTC", "abc%"),
            // glibc copies an unknown conversion, ASCII or not, as it is.
            ("%\u{e9}|%Q|%\u{6708}%Y", 0, "UTC", "%\u{e9}|%Q|%\u{6708}1970"),
            ("a%\u{0}b", 0, "UTC", "a%"),
            ("x\u{0}y%Y", 0, "UTC", "x"),
            ("%Y %C %G %g %y", -62135596800000000, "UTC", "1 0 1 01 01"),
            ("%Y-%m-%d %H:%M:%S.%f", 253402300799999999, "UTC", "9999-12-31 23:59:59.999999"),
        ]);
    }

    #[test]
    fn am_and_pm_turn_at_noon() {
        // 2026-01-01 in UTC: 00:00, 11:59, 12:00, 23:59.
        let day = 1_767_225_600i64;
        for (minutes, want) in
            [(0, "AM am"), (11 * 60 + 59, "AM am"), (12 * 60, "PM pm"), (23 * 60 + 59, "PM pm")]
        {
            let mut s = String::new();
            format_time(
                &mut s,
                "%p %P",
                Timestamp::from_unix_seconds(day + minutes * 60),
                Zone::Utc,
            )
            .unwrap();
            assert_eq!(s, want, "{minutes} minutes past midnight");
        }
    }

    #[test]
    fn letters_hold_ascii_letters_only() {
        let mut set = Letters::default();
        assert!(!set.add('Y'));
        assert!(set.add('Y'));
        assert!(set.has('Y') && !set.has('y'));
        // Outside `A`..=`z` nothing is held, and nothing overflows the bit set.
        for c in ['%', '@', '{', '\u{7f}', '\u{80}', 'é', '\u{10ffff}', '\0'] {
            assert!(!set.add(c), "{c:?}");
            assert!(!set.has(c), "{c:?}");
        }
        // The first and last letters are held like the others, apart.
        assert!(!set.has('A') && !set.add('A') && set.has('A') && !set.has('z'));
        assert!(!set.add('z') && set.has('z') && set.add('A'));
        assert_eq!(set.0.count_ones(), 3);
    }

    #[test]
    fn a_date_needs_every_part_of_one_of_its_forms() {
        use ParseBack::*;
        let ok = |parse_back| Ok(FormatInfo { has_utc_offset: false, parse_back });
        // Year, week and weekday; ISO year, ISO week and weekday.
        assert_eq!(check_format("%Y %U %a"), ok(Possible));
        assert_eq!(check_format("%G %V %u"), ok(Possible));
        for partial in
            ["%U %a", "%Y %U", "%Y %a", "%G %a", "%V %a", "%G %V", "%Y %V %a", "%G %U %a", "%m %d"]
        {
            assert_eq!(check_format(partial), Err(TimeFormatError::NoDatePart), "{partial}");
        }
    }

    #[test]
    fn a_repeat_crashes_the_reference_wherever_it_is() {
        use ParseBack::*;
        // Inside an expansion after the plain directive, and in two
        // expansions; `%%` is no group, however often it stands.
        assert_eq!(strptime_verdict("%Y %c"), ReferenceCrashes);
        assert_eq!(strptime_verdict("%x %c"), ReferenceCrashes);
        assert_eq!(strptime_verdict("%X %Y-%m-%d"), Possible);
        assert_eq!(strptime_verdict("%Y-%m-%d %% %%"), Possible);
        assert_eq!(strptime_verdict("%Y-%m-%d %%%% %%"), Possible);
    }

    #[test]
    fn formats_are_checked() {
        use ParseBack::*;
        let ok = |has_utc_offset, parse_back| Ok(FormatInfo { has_utc_offset, parse_back });
        assert_eq!(check_format("%Y-%m-%dT%H:%M:%S"), ok(false, Possible));
        assert_eq!(check_format("%Y-%m-%d %H:%M:%S %z"), ok(true, Possible));
        assert_eq!(check_format("%c"), ok(false, Possible));
        assert_eq!(check_format("%x %X"), ok(false, Possible));
        assert_eq!(check_format("%Y-%j"), ok(false, Possible));
        assert_eq!(check_format("%G-W%V-%u"), ok(false, Possible));
        assert_eq!(check_format("%e %B %Y"), ok(false, Never));
        assert_eq!(check_format("%F %T"), ok(false, Never));
        assert_eq!(check_format("%Y-%m-%d %Y"), ok(false, ReferenceCrashes));
        assert_eq!(check_format("%c %Y"), ok(false, ReferenceCrashes));
        assert_eq!(check_format("%H:%M:%S"), Err(TimeFormatError::NoDatePart));
        assert_eq!(check_format("%Y-%m %H"), Err(TimeFormatError::NoDatePart));
        assert_eq!(check_format("%Y-%m-%d %s"), Err(TimeFormatError::UnsupportedDirective('s')));
        assert_eq!(check_format("%-d.%m.%Y"), Err(TimeFormatError::UnsupportedDirective('-')));
        assert_eq!(check_format("%Ey-%m-%d"), Err(TimeFormatError::UnsupportedDirective('E')));
        assert_eq!(check_format("%Y-%m-%d%"), Err(TimeFormatError::TrailingPercent));
        assert_eq!(check_format("%Y-%m-%d\0"), Err(TimeFormatError::Nul));
        let mut s = String::new();
        write!(s, "{}", TimeFormatError::UnsupportedDirective('s')).unwrap();
        assert_eq!(s, "unsupported time format directive '%s'");
    }
}
