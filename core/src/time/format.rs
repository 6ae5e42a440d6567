//! `datetime.strftime` as the reference's glibc does it in the C locale
//! ([`format_time`]), and the check of a configured format
//! ([`check_format`]): every directive one that `format_time` reproduces
//! exactly, a full date, and whether Python's `strptime` can read the
//! output back ([`ParseBack`]).

use core::fmt::{self, Write};

use chrono::{Datelike, NaiveDateTime, Offset, TimeDelta, TimeZone, Timelike};
use chrono_tz::OffsetName;

use super::zone::{utc_naive, Zone};
use crate::clock::Timestamp;
use crate::zone_rules;

/// A zone's abbreviation at one instant (`%Z`).
#[derive(Clone, Copy)]
enum Abbr<'a> {
    Text(&'a str),
    /// A numeric abbreviation such as `+03`, built from the offset.
    Numeric(i32),
}

/// Why a time format is refused by `check_format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum TimeFormatError {
    /// A `%` directive `format_time` cannot reproduce exactly (`%s`
    /// depends on the host's zone; flags such as `%-d`, widths and the
    /// `%E`/`%O` modifiers are not supported).
    UnsupportedDirective(char),
    /// The format ends with a lone `%`.
    TrailingPercent,
    /// A NUL character: Python's `strftime` cuts the output there.
    Nul,
    /// No full date: a year (`%Y`, `%y`) with a day of the year (`%j`) or a
    /// month (`%m`, `%b`, `%B`) and day (`%d`, `%e`), or an equivalent such
    /// as `%F`, `%c`, or an ISO year, week and weekday. A time-only format
    /// parses back to 1900 and re-injects the time at every step.
    NoDatePart,
}

impl fmt::Display for TimeFormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeFormatError::UnsupportedDirective(c) => {
                write!(f, "unsupported time format directive '%{c}'")
            }
            TimeFormatError::TrailingPercent => f.write_str("time format ends with a lone '%'"),
            TimeFormatError::Nul => f.write_str("time format contains a NUL character"),
            TimeFormatError::NoDatePart => f.write_str("time format has no full date (year with day of year, or month and day)"),
        }
    }
}

impl core::error::Error for TimeFormatError {}

/// Whether Python's `strptime` can read a format's output back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ParseBack {
    /// `strptime` compiles the format; [`parse_time`](super::parse_time) may succeed.
    Possible,
    /// `strptime` always raises `ValueError` for this format (a directive it
    /// lacks, such as `%e`, `%F`, `%T`): the reference re-injects the time at
    /// every step, and [`parse_time`](super::parse_time) always returns `None`.
    Never,
    /// A directive repeats (also through `%c`, `%x`, `%X`), so the regex
    /// fails to compile with `re.error`, which the reference does not catch:
    /// it crashes as soon as a recorded time is found. [`parse_time`](super::parse_time)
    /// returns `None`.
    ReferenceCrashes,
}

/// What [`check_format`] learned about a valid format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FormatInfo {
    /// The format carries `%z`: a parsed time is then aware and the elapsed
    /// time is computed through UTC, whatever the zones.
    pub has_utc_offset: bool,
    /// Whether the reference can parse the format's output back.
    pub parse_back: ParseBack,
}

impl FormatInfo {
    /// Whether [`parse_time`](super::parse_time) can ever succeed with this format.
    pub fn parseable(&self) -> bool {
        self.parse_back == ParseBack::Possible
    }
}

/// Directives [`format_time`] reproduces exactly.
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
pub(super) fn strptime_expansion(c: char) -> Option<&'static str> {
    Some(match c {
        'c' => "%a %b %d %H:%M:%S %Y",
        'x' => "%m/%d/%y",
        'X' => "%H:%M:%S",
        _ => return None,
    })
}

/// A set of ASCII directive letters.
#[derive(Clone, Copy, Default)]
struct Letters(u128);

impl Letters {
    fn has(self, c: char) -> bool {
        let n = c as u32;
        n < 128 && self.0 & (1u128 << n) != 0
    }
    /// Adds `c`; returns whether it was already there.
    fn add(&mut self, c: char) -> bool {
        let was = self.has(c);
        let n = c as u32;
        if n < 128 {
            self.0 |= 1u128 << n;
        }
        was
    }
}

/// Validates a configured time format: every directive is one
/// [`format_time`] reproduces exactly, and the format carries a full date.
///
/// Python itself accepts any format; this is stricter on purpose (see
/// [`TimeFormatError`]). Supported: `%a %A %b %B %c %C %d %D %e %f %F %g %G
/// %h %H %I %j %k %l %m %M %n %p %P %r %R %S %t %T %u %U %V %w %W %x %X %y
/// %Y %z %Z %%` and any literal text.
pub fn check_format(fmt: &str) -> Result<FormatInfo, TimeFormatError> {
    if fmt.contains('\0') {
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
        if !STRFTIME_DIRECTIVES.contains(d) {
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
    let has_date =
        (year && (any("j") || (any("mbBh") && any("de")))) || (year && any("UW") && weekday) || (any("G") && any("V") && weekday);
    if !has_date {
        return Err(TimeFormatError::NoDatePart);
    }
    Ok(FormatInfo { has_utc_offset: shown.has('z'), parse_back: strptime_verdict(fmt) })
}

/// How Python's `strptime` reacts to the format itself.
pub(super) fn strptime_verdict(fmt: &str) -> ParseBack {
    let mut groups = Letters::default();
    let mut duplicate = false;
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        // A lone trailing '%' is an IndexError, turned into ValueError.
        let Some(d) = chars.next() else { return ParseBack::Never };
        if !STRPTIME_DIRECTIVES.contains(d) {
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

const WEEKDAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS: [&str; 12] =
    ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/// The fields of one wall-clock instant, for formatting.
struct Fields<'a> {
    local: NaiveDateTime,
    offset: i32,
    abbr: Abbr<'a>,
}

fn three(s: &str) -> &str {
    s.get(..3).unwrap_or(s)
}

/// Writes one directive; `Ok(false)` if it is not one this module knows.
fn write_directive<W: Write>(w: &mut W, d: char, t: &Fields) -> Result<bool, fmt::Error> {
    let date = t.local.date();
    let year = date.year();
    let hour = t.local.hour();
    let hour12 = match hour % 12 {
        0 => 12,
        h => h,
    };
    let wday_sun = date.weekday().num_days_from_sunday();
    let wday_mon = date.weekday().num_days_from_monday();
    let yday0 = date.ordinal0();
    let weekday_name = WEEKDAYS.get(wday_sun as usize).copied().unwrap_or("");
    let month_name = MONTHS.get(date.month0() as usize).copied().unwrap_or("");
    match d {
        'a' => w.write_str(three(weekday_name))?,
        'A' => w.write_str(weekday_name)?,
        'b' | 'h' => w.write_str(three(month_name))?,
        'B' => w.write_str(month_name)?,
        // glibc prints years (and the century) without padding.
        'C' => write!(w, "{}", year.div_euclid(100))?,
        'd' => write!(w, "{:02}", date.day())?,
        'e' => write!(w, "{:2}", date.day())?,
        'g' => write!(w, "{:02}", date.iso_week().year().rem_euclid(100))?,
        'G' => write!(w, "{}", date.iso_week().year())?,
        'H' => write!(w, "{hour:02}")?,
        'I' => write!(w, "{hour12:02}")?,
        'j' => write!(w, "{:03}", date.ordinal())?,
        'k' => write!(w, "{hour:2}")?,
        'l' => write!(w, "{hour12:2}")?,
        'm' => write!(w, "{:02}", date.month())?,
        'M' => write!(w, "{:02}", t.local.minute())?,
        'n' => w.write_char('\n')?,
        'p' => w.write_str(if hour < 12 { "AM" } else { "PM" })?,
        'P' => w.write_str(if hour < 12 { "am" } else { "pm" })?,
        'S' => write!(w, "{:02}", t.local.second())?,
        't' => w.write_char('\t')?,
        'u' => write!(w, "{}", wday_mon + 1)?,
        'U' => write!(w, "{:02}", (yday0 + 7 - wday_sun) / 7)?,
        'V' => write!(w, "{:02}", date.iso_week().week())?,
        'w' => write!(w, "{wday_sun}")?,
        'W' => write!(w, "{:02}", (yday0 + 7 - wday_mon) / 7)?,
        'y' => write!(w, "{:02}", year.rem_euclid(100))?,
        'Y' => write!(w, "{year}")?,
        // Python's own: microseconds, UTC offset, zone name.
        'f' => write!(w, "{:06}", t.local.nanosecond() / 1000)?,
        'z' => write_offset(w, t.offset)?,
        'Z' => match t.abbr {
            Abbr::Text(s) => w.write_str(s)?,
            Abbr::Numeric(secs) => write_numeric_abbr(w, secs)?,
        },
        '%' => w.write_char('%')?,
        _ => match strftime_expansion(d) {
            Some(exp) => write_format(w, exp, t)?,
            None => return Ok(false),
        },
    }
    Ok(true)
}

/// Sign, hours, minutes and seconds of an offset.
fn hms(secs: i32) -> (char, u32, u32, u32) {
    let a = secs.unsigned_abs();
    (if secs < 0 { '-' } else { '+' }, a / 3600, a / 60 % 60, a % 60)
}

/// `+HHMM`, or `+HHMMSS` when the offset has seconds (Python's `%z`).
fn write_offset<W: Write>(w: &mut W, secs: i32) -> fmt::Result {
    let (sign, h, m, s) = hms(secs);
    write!(w, "{sign}{h:02}{m:02}")?;
    if s != 0 {
        write!(w, "{s:02}")?;
    }
    Ok(())
}

/// zic's numeric abbreviation: `+HH`, `+HHMM`, `+HHMMSS`.
fn write_numeric_abbr<W: Write>(w: &mut W, secs: i32) -> fmt::Result {
    let (sign, h, m, s) = hms(secs);
    write!(w, "{sign}{h:02}")?;
    if m != 0 || s != 0 {
        write!(w, "{m:02}")?;
    }
    if s != 0 {
        write!(w, "{s:02}")?;
    }
    Ok(())
}

fn write_format<W: Write>(w: &mut W, fmt: &str, t: &Fields) -> fmt::Result {
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        // Python hands the format to C as a NUL-terminated string.
        if c == '\0' {
            break;
        }
        if c != '%' {
            w.write_char(c)?;
            continue;
        }
        match chars.next() {
            None | Some('\0') => {
                w.write_char('%')?;
                break;
            }
            Some(d) => {
                if !write_directive(w, d, t)? {
                    // glibc copies an unknown conversion as it is.
                    w.write_char('%')?;
                    w.write_char(d)?;
                }
            }
        }
    }
    Ok(())
}

/// Writes Python's `datetime.fromtimestamp(at, tz).strftime(fmt)` (glibc, C
/// locale): the reference's `now.strftime(time_format)`.
///
/// Exact for every format [`check_format`] accepts; `%Z` is the zone's
/// abbreviation (`EST`, `+08`, `UTC` for [`Zone::Utc`]). Errors only if `w`
/// does, or if the local year is outside Python's 1..=9999.
pub fn format_time<W: Write>(w: &mut W, fmt: &str, at: Timestamp, zone: Zone) -> fmt::Result {
    let utc = utc_naive(at).ok_or(fmt::Error)?;
    // Past 2099 the zone's own rules answer (chrono-tz's tables end there).
    // The offset the abbreviation borrows from, set where chrono-tz answers.
    let tz_offset;
    let (offset, abbr) = match zone {
        Zone::Factory => (0, Abbr::Text("-00")),
        Zone::Utc => (0, Abbr::Text("UTC")),
        Zone::Named(tz) => match zone_rules::at_utc(tz, &utc) {
            Some((offset, abbr)) => (offset, Abbr::Text(abbr)),
            None => {
                tz_offset = tz.offset_from_utc_datetime(&utc);
                let offset = tz_offset.fix().local_minus_utc();
                (offset, tz_offset.abbreviation().map_or(Abbr::Numeric(offset), Abbr::Text))
            }
        },
    };
    let local = utc.checked_add_signed(TimeDelta::seconds(i64::from(offset))).ok_or(fmt::Error)?;
    if !(1..=9999).contains(&local.year()) {
        return Err(fmt::Error);
    }
    write_format(w, fmt, &Fields { local, offset, abbr })
}

#[cfg(test)]
mod tests {
    //! Expected values are CPython 3.11's own outputs (tzdata 2025.2,
    //! `LC_TIME=C`, `zoneinfo.reset_tzpath(to=[])`).
    extern crate std;

    use std::string::String;

    use super::*;
    use crate::time::tests::zone;

    #[test]
    fn formats_like_python_strftime() {
        let cases: &[(&str, i64, &str, &str)] = &[
            ("%Y-%m-%dT%H:%M:%S", 1772955000123456, "America/New_York", "2026-03-08T03:30:00"),
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
            ("abc%", 0, "UTC", "abc%"),
            ("x\u{0}y%Y", 0, "UTC", "x"),
            ("%Y %C %G %g %y", -62135596800000000, "UTC", "1 0 1 01 01"),
            ("%Y-%m-%d %H:%M:%S.%f", 253402300799999999, "UTC", "9999-12-31 23:59:59.999999"),
        ];
        for (fmt, at, z, want) in cases {
            let mut s = String::new();
            format_time(&mut s, fmt, Timestamp(*at), zone(z)).unwrap();
            assert_eq!(s, *want, "{fmt:?} {at} {z}");
        }
        // Outside Python's years 1..=9999.
        let mut s = String::new();
        assert!(format_time(&mut s, "%Y", Timestamp(253402300800000000), Zone::Utc).is_err());
        assert!(format_time(&mut s, "%Y", Timestamp(i64::MIN), Zone::Utc).is_err());
    }

    #[test]
    fn am_and_pm_turn_at_noon() {
        // 2026-01-01 in UTC: 00:00, 11:59, 12:00, 23:59.
        let day = 1_767_225_600i64;
        for (minutes, want) in [(0, "AM am"), (11 * 60 + 59, "AM am"), (12 * 60, "PM pm"), (23 * 60 + 59, "PM pm")] {
            let mut s = String::new();
            format_time(&mut s, "%p %P", Timestamp::from_unix_seconds(day + minutes * 60), Zone::Utc).unwrap();
            assert_eq!(s, want, "{minutes} minutes past midnight");
        }
    }

    #[test]
    fn letters_hold_ascii_only() {
        let mut set = Letters::default();
        assert!(!set.add('Y'));
        assert!(set.add('Y'));
        assert!(set.has('Y') && !set.has('y'));
        // Past ASCII nothing is held, and nothing overflows the bit set.
        for c in ['\u{80}', 'é', '\u{10ffff}'] {
            assert!(!set.add(c), "{c:?}");
            assert!(!set.has(c), "{c:?}");
        }
        // The last ASCII letter is held like the others.
        assert!(!set.has('\u{7f}') && !set.add('\u{7f}') && set.has('\u{7f}'));
    }

    #[test]
    fn a_date_needs_every_part_of_one_of_its_forms() {
        use ParseBack::*;
        let ok = |parse_back| Ok(FormatInfo { has_utc_offset: false, parse_back });
        // Year, week and weekday; ISO year, ISO week and weekday.
        assert_eq!(check_format("%Y %U %a"), ok(Possible));
        assert_eq!(check_format("%G %V %u"), ok(Possible));
        for partial in ["%U %a", "%Y %U", "%Y %a", "%G %a", "%V %a", "%G %V", "%Y %V %a", "%G %U %a", "%m %d"] {
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
