//! `datetime.strftime` as the reference's glibc does it in the C locale
//! ([`format_time`]), and the check of a configured format
//! ([`check_format`]): every directive one that `format_time` reproduces
//! exactly, a full date, and whether Python's `strptime` can read the
//! output back ([`ParseBack`]).

use core::fmt;
#[cfg(any(test, feature = "wire"))]
use core::fmt::Write;

use chrono::{Datelike, NaiveDateTime, Offset, TimeDelta, TimeZone, Timelike};
use chrono_tz::OffsetName;

use super::zone::{utc_naive, Zone};
use crate::clock::Timestamp;
use crate::text::{push_padded, Bytes};
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

/// Validates a configured time format: every directive is one
/// [`format_time`] reproduces exactly, and the format carries a full date.
///
/// Python itself accepts any format; this is stricter on purpose (see
/// [`TimeFormatError`]). Supported: `%a %A %b %B %c %C %d %D %e %f %F %g %G
/// %h %H %I %j %k %l %m %M %n %p %P %r %R %S %t %T %u %U %V %w %W %x %X %y
/// %Y %z %Z %%` and any literal text.
pub fn check_format(fmt: &str) -> Result<FormatInfo, TimeFormatError> {
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
pub(super) const WEEKDAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
/// The C locale's month names, shared as [`WEEKDAYS`] is.
pub(super) const MONTHS: [&str; 12] =
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

/// `n` zero-padded to two digits (`%02d`).
fn two<W: Bytes + ?Sized>(w: &mut W, n: u32) {
    push_padded(w, n, 2, b'0');
}

/// `n` as `%d` prints it, sign and all.
fn signed<W: Bytes + ?Sized>(w: &mut W, n: i32) {
    if n < 0 {
        w.push(b"-");
    }
    push_padded(w, n.unsigned_abs(), 0, b'0');
}

/// Writes one directive; `false` if it is not one this module knows.
/// Each works out only the fields it shows, and writes numbers without
/// `core::fmt`.
fn write_directive<W: Bytes + ?Sized>(w: &mut W, d: u8, t: &Fields) -> bool {
    let date = t.local.date();
    let hour12 = || match t.local.hour() % 12 {
        0 => 12,
        h => h,
    };
    let wday_sun = || date.weekday().num_days_from_sunday();
    let wday_mon = || date.weekday().num_days_from_monday();
    let weekday_name = || WEEKDAYS.get(wday_mon() as usize).copied().unwrap_or("");
    let month_day = || super::civil::month_day(date);
    let month_name = || MONTHS.get(month_day().0 as usize - 1).copied().unwrap_or("");
    match d {
        b'a' => w.push(three(weekday_name()).as_bytes()),
        b'A' => w.push(weekday_name().as_bytes()),
        b'b' | b'h' => w.push(three(month_name()).as_bytes()),
        b'B' => w.push(month_name().as_bytes()),
        // glibc prints years (and the century) without padding.
        b'C' => signed(w, date.year().div_euclid(100)),
        b'd' => two(w, month_day().1),
        b'e' => push_padded(w, month_day().1, 2, b' '),
        b'g' => two(w, date.iso_week().year().rem_euclid(100).unsigned_abs()),
        b'G' => signed(w, date.iso_week().year()),
        b'H' => two(w, t.local.hour()),
        b'I' => two(w, hour12()),
        b'j' => push_padded(w, date.ordinal(), 3, b'0'),
        b'k' => push_padded(w, t.local.hour(), 2, b' '),
        b'l' => push_padded(w, hour12(), 2, b' '),
        b'm' => two(w, month_day().0),
        b'M' => two(w, t.local.minute()),
        b'n' => w.push(b"\n"),
        b'p' => w.push(if t.local.hour() < 12 { b"AM" } else { b"PM" }),
        b'P' => w.push(if t.local.hour() < 12 { b"am" } else { b"pm" }),
        b'S' => two(w, t.local.second()),
        b't' => w.push(b"\t"),
        b'u' => push_padded(w, wday_mon() + 1, 0, b'0'),
        b'U' => two(w, (date.ordinal0() + 7 - wday_sun()) / 7),
        b'V' => two(w, date.iso_week().week()),
        b'w' => push_padded(w, wday_sun(), 0, b'0'),
        b'W' => two(w, (date.ordinal0() + 7 - wday_mon()) / 7),
        b'y' => two(w, date.year().rem_euclid(100).unsigned_abs()),
        b'Y' => signed(w, date.year()),
        // Python's own: microseconds, UTC offset, zone name.
        b'f' => push_padded(w, t.local.nanosecond() / 1000, 6, b'0'),
        b'z' => write_offset(w, t.offset),
        b'Z' => match t.abbr {
            Abbr::Text(s) => w.push(s.as_bytes()),
            Abbr::Numeric(secs) => write_numeric_abbr(w, secs),
        },
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

/// Writes `fmt` (its bytes: directives are ASCII) for the instant `t`.
fn write_format<W: Bytes + ?Sized>(w: &mut W, fmt: &[u8], t: &Fields) {
    let mut rest = fmt;
    loop {
        // Literal text up to the next directive, in one write. Python hands
        // the format to C as a NUL-terminated string: it ends at a NUL.
        let stop = rest.iter().position(|&b| b == b'%' || b == 0).unwrap_or(rest.len());
        w.push(rest.get(..stop).unwrap_or(&[]));
        let Some((b'%', after)) = rest.get(stop..).and_then(<[u8]>::split_first) else { return };
        let Some(&d) = after.first().filter(|&&d| d != 0) else {
            w.push(b"%");
            return;
        };
        rest = after.get(1..).unwrap_or(&[]);
        if !d.is_ascii() {
            // glibc copies an unknown conversion as it is: the '%', then the
            // character, whose bytes are the literal text that follows.
            w.push(b"%");
            rest = after;
        } else if !write_directive(w, d, t) {
            w.push(&[b'%', d]);
        }
    }
}

/// Writes Python's `datetime.fromtimestamp(at, tz).strftime(fmt)` (glibc, C
/// locale): the reference's `now.strftime(time_format)`.
///
/// Exact for every format [`check_format`] accepts; `%Z` is the zone's
/// abbreviation (`EST`, `+08`, `UTC` for [`Zone::Utc`]). Errors only if `w`
/// does, or if the local year is outside Python's 1..=9999.
#[cfg(any(test, feature = "wire"))]
pub fn format_time<W: Write + ?Sized>(w: &mut W, fmt: &str, at: Timestamp, zone: Zone) -> fmt::Result {
    let mut sink = FmtSink { out: w, result: Ok(()) };
    push_time(&mut sink, fmt, at, zone)?;
    sink.result
}

/// A `core::fmt::Write` as a [`Bytes`] sink; every write `push_time` makes
/// is whole UTF-8 (it splits `fmt` only at ASCII bytes).
#[cfg(any(test, feature = "wire"))]
struct FmtSink<'w, W: ?Sized> {
    out: &'w mut W,
    result: fmt::Result,
}

#[cfg(any(test, feature = "wire"))]
impl<W: Write + ?Sized> Bytes for FmtSink<'_, W> {
    fn push(&mut self, bytes: &[u8]) {
        if self.result.is_ok() {
            self.result = core::str::from_utf8(bytes).map_err(|_| fmt::Error).and_then(|s| self.out.write_str(s));
        }
    }
}

/// [`format_time`] into a byte sink, as rendering writes it. Errors only if
/// the local year is outside Python's 1..=9999.
pub fn push_time<W: Bytes + ?Sized>(w: &mut W, fmt: &str, at: Timestamp, zone: Zone) -> fmt::Result {
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
    let local = match offset {
        0 => utc,
        _ => utc.checked_add_signed(TimeDelta::seconds(i64::from(offset))).ok_or(fmt::Error)?,
    };
    if !(1..=9999).contains(&local.year()) {
        return Err(fmt::Error);
    }
    write_format(w, fmt.as_bytes(), &Fields { local, offset, abbr });
    Ok(())
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
