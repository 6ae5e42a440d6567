//! `datetime.strftime` as the reference's glibc does it in the C locale
//! ([`format_time`]), and the check of a configured format
//! ([`check_format`]): every directive one that `format_time` reproduces
//! exactly, a full date, and whether Python's `strptime` can read the
//! output back ([`ParseBack`]).
//!
//! This module writes the default format's directives (`%Y %m %d %H %M
//! %S`, and `%f`, which the `wire` module's timestamps add); every other
//! directive, and the check of any format but the default, are in
//! `custom` (a child module: its composite directives, `%c`
//! `%D` and the others, are written by this module's `write_format` loop,
//! so the two recurse into each other), compiled with the `custom-time-format` feature only.

#[cfg(feature = "custom-time-format")]
pub(super) mod custom;

use core::fmt;
#[cfg(any(test, feature = "wire"))]
use core::fmt::Write;

use chrono::{Datelike, NaiveDateTime, Offset, TimeDelta, TimeZone, Timelike};

use super::zone::{utc_naive, Zone};
use super::zone_rules;
use crate::clock::Timestamp;
use crate::text::{push_padded, Bytes};

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
    /// A format other than the default `%Y-%m-%dT%H:%M:%S`, in a build
    /// without the `custom-time-format` feature.
    NotCompiledIn,
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
            TimeFormatError::NotCompiledIn => f.write_str(
                "time format other than %Y-%m-%dT%H:%M:%S: this build leaves them out (enable envaware's custom-time-format feature)",
            ),
        }
    }
}

impl core::error::Error for TimeFormatError {}

/// Whether Python's `strptime` can read a format's output back.
// Only the default format, which it can, without `custom-time-format`.
#[cfg_attr(not(feature = "custom-time-format"), allow(dead_code))]
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

/// What [`check_format`] learns about the default format.
#[cfg(any(test, not(feature = "custom-time-format")))]
pub(super) const DEFAULT_FORMAT_INFO: FormatInfo =
    FormatInfo { has_utc_offset: false, parse_back: ParseBack::Possible };

/// Validates a configured time format: every directive is one
/// [`format_time`] reproduces exactly, and the format carries a full date.
///
/// Python itself accepts any format; this is stricter on purpose (see
/// [`TimeFormatError`]). Supported: `%a %A %b %B %c %C %d %D %e %f %F %g %G
/// %h %H %I %j %k %l %m %M %n %p %P %r %R %S %t %T %u %U %V %w %W %x %X %y
/// %Y %z %Z %%` and any literal text; without the `custom-time-format`
/// feature, the default format only.
pub fn check_format(fmt: &str) -> Result<FormatInfo, TimeFormatError> {
    #[cfg(feature = "custom-time-format")]
    return custom::check(fmt);
    #[cfg(not(feature = "custom-time-format"))]
    match fmt == crate::time::DEFAULT_TIME_FORMAT {
        true => Ok(DEFAULT_FORMAT_INFO),
        false => Err(TimeFormatError::NotCompiledIn),
    }
}

/// The fields of one wall-clock instant, for formatting.
// The offset, zone and UTC time are read by `%z` and `%Z` only.
#[cfg_attr(not(feature = "custom-time-format"), allow(dead_code))]
pub(super) struct Fields {
    pub(super) local: NaiveDateTime,
    /// Seconds east of UTC.
    pub(super) offset: i32,
    pub(super) zone: Zone,
    pub(super) utc: NaiveDateTime,
}

/// `n` zero-padded to two digits (`%02d`).
pub(super) fn two<W: Bytes + ?Sized>(w: &mut W, n: u32) {
    push_padded(w, n, 2, b'0');
}

/// `n` as `%d` prints it, sign and all.
pub(super) fn signed<W: Bytes + ?Sized>(w: &mut W, n: i32) {
    if n < 0 {
        w.push(b"-");
    }
    push_padded(w, n.unsigned_abs(), 0, b'0');
}

/// Writes one directive; `false` if it is not one this build knows.
/// Each works out only the fields it shows, and writes numbers without
/// `core::fmt`.
fn write_directive<W: Bytes + ?Sized>(w: &mut W, d: u8, t: &Fields) -> bool {
    let date = t.local.date();
    match d {
        b'd' => two(w, super::civil::month_day(date).1),
        b'H' => two(w, t.local.hour()),
        b'm' => two(w, super::civil::month_day(date).0),
        b'M' => two(w, t.local.minute()),
        b'S' => two(w, t.local.second()),
        // glibc prints years without padding.
        b'Y' => signed(w, date.year()),
        // Python's own microseconds: the wire's timestamps write them.
        b'f' => push_padded(w, t.local.nanosecond() / 1000, 6, b'0'),
        #[cfg(feature = "custom-time-format")]
        _ => return custom::write_directive(w, d, t),
        #[cfg(not(feature = "custom-time-format"))]
        _ => return false,
    }
    true
}

/// Writes `fmt` (its bytes: directives are ASCII) for the instant `t`.
pub(super) fn write_format<W: Bytes + ?Sized>(w: &mut W, fmt: &[u8], t: &Fields) {
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
pub fn format_time<W: Write + ?Sized>(
    w: &mut W,
    fmt: &str,
    at: Timestamp,
    zone: Zone,
) -> fmt::Result {
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
            self.result = core::str::from_utf8(bytes)
                .map_err(|_| fmt::Error)
                .and_then(|s| self.out.write_str(s));
        }
    }
}

/// [`format_time`] into a byte sink, as rendering writes it. Errors only if
/// the local year is outside Python's 1..=9999.
pub fn push_time<W: Bytes + ?Sized>(
    w: &mut W,
    fmt: &str,
    at: Timestamp,
    zone: Zone,
) -> fmt::Result {
    let utc = utc_naive(at).ok_or(fmt::Error)?;
    let offset = utc_offset(zone, &utc);
    let local = match offset {
        0 => utc,
        _ => utc.checked_add_signed(TimeDelta::seconds(i64::from(offset))).ok_or(fmt::Error)?,
    };
    if !(1..=9999).contains(&local.year()) {
        return Err(fmt::Error);
    }
    write_format(w, fmt.as_bytes(), &Fields { local, offset, zone, utc });
    Ok(())
}

/// `zone`'s offset from UTC at `utc`, in seconds. Past 2099 the zone's own
/// rules answer (chrono-tz's tables end there).
fn utc_offset(zone: Zone, utc: &NaiveDateTime) -> i32 {
    match zone {
        Zone::Factory | Zone::Utc => 0,
        Zone::Named(tz) => match zone_rules::at_utc(tz, utc) {
            Some((offset, _)) => offset,
            None => tz.offset_from_utc_datetime(utc).fix().local_minus_utc(),
        },
    }
}

#[cfg(test)]
pub(super) mod tests {
    //! What every build writes: the default format's directives and `%f`.
    //! Expected values are CPython 3.11's (tzdata 2025.2, `LC_TIME=C`,
    //! `zoneinfo.reset_tzpath(to=[])`); `custom` tests the rest.
    extern crate std;

    use std::string::String;

    use super::*;
    use crate::time::tests::zone;

    /// Each `(format, instant in microseconds, zone name, Python's output)`
    /// is written as Python writes it, and a year outside 1..=9999 is an
    /// error.
    pub(in crate::time) fn writes_like_python(cases: &[(&str, i64, &str, &str)]) {
        for (fmt, at, z, want) in cases {
            let mut s = String::new();
            format_time(&mut s, fmt, Timestamp(*at), zone(z)).unwrap();
            assert_eq!(s, *want, "{fmt:?} {at} {z}");
        }
        let mut s = String::new();
        assert!(format_time(&mut s, "%Y", Timestamp(253402300800000000), Zone::Utc).is_err());
        assert!(format_time(&mut s, "%Y", Timestamp(i64::MIN), Zone::Utc).is_err());
    }

    #[test]
    fn the_default_format_and_microseconds_are_written_like_python() {
        writes_like_python(&[
            ("%Y-%m-%dT%H:%M:%S", 1772955000123456, "America/New_York", "2026-03-08T03:30:00"),
            (
                "%Y-%m-%dT%H:%M:%S.%f",
                1772955000123456,
                "America/New_York",
                "2026-03-08T03:30:00.123456",
            ),
            ("%Y-%m-%dT%H:%M:%S", 1772900000000001, "Asia/Kathmandu", "2026-03-07T21:58:20"),
            // glibc writes years without padding.
            ("%Y-%m-%dT%H:%M:%S.%f", -62135596800000000, "UTC", "1-01-01T00:00:00.000000"),
            ("%Y-%m-%dT%H:%M:%S", -30610224000000000, "UTC", "1000-01-01T00:00:00"),
            ("%Y-%m-%dT%H:%M:%S.%f", 253402300799999999, "UTC", "9999-12-31T23:59:59.999999"),
        ]);
    }
}
