//! Wall-clock time exactly as the reference handles it: zone names
//! (`zoneinfo.ZoneInfo`), formatting (`datetime.strftime`), parsing back
//! (`datetime.strptime`) and local-time arithmetic.
//!
//! The reference is CPython 3.11 with `tzdata` 2025.2 only
//! (`zoneinfo.reset_tzpath(to=[])`), glibc's `strftime` in the C locale
//! (`LC_TIME=C`) and a host whose local zone is UTC (that matters for `%Z`
//! in `strptime` only). Everything here works without a heap and never
//! panics.
//!
//! What the reference does, and how it maps onto this module:
//! - `ZoneInfo(name)`, falling back to `timezone.utc` on a bad name:
//!   [`resolve_zone`] (`None` means "fall back to [`Zone::Utc`]").
//! - `datetime.now(tz).strftime(fmt)`: [`format_time`].
//! - `datetime.strptime(text, fmt)`: [`parse_time`], giving a [`Recorded`].
//! - `recorded.replace(tzinfo=zone)` then `now - recorded`: [`local_naive`],
//!   [`local_to_timestamp`] and [`Recorded::to_timestamp`].
//!
//! Zone data is chrono-tz's (IANA 2025b, the same as `tzdata` 2025.2) up to
//! 2099, where its tables end; from 2100 on, zones with daylight saving follow
//! their final recurring rule as Python's `zoneinfo` does (`zone_rules`).

use core::fmt::{self, Write};
use core::str::FromStr;

use chrono::{DateTime, Datelike, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeDelta, TimeZone, Timelike};
use chrono_tz::{GapInfo, OffsetName, Tz};

use crate::clock::Timestamp;
use crate::text::py_is_space;
use crate::zone_rules;

// ===========================================================================
// Zones
// ===========================================================================

/// A resolved time zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zone {
    /// Python's `timezone.utc`: the fallback for a name `ZoneInfo` rejects.
    /// It formats `%Z` as `UTC`.
    Utc,
    /// tzdata's `Factory` zone, which chrono-tz lacks: offset 0, `%Z` is `-00`.
    Factory,
    /// A zone from chrono-tz.
    Named(Tz),
}

#[cfg(feature = "defmt")]
impl defmt::Format for Zone {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self {
            Zone::Utc => defmt::write!(f, "Utc"),
            Zone::Factory => defmt::write!(f, "Factory"),
            Zone::Named(tz) => defmt::write!(f, "Named({=str})", tz.name()),
        }
    }
}

/// A zone's abbreviation at one instant (`%Z`).
#[derive(Clone, Copy)]
enum Abbr<'a> {
    Text(&'a str),
    /// A numeric abbreviation such as `+03`, built from the offset.
    Numeric(i32),
}

impl Zone {
    /// UTC offset (seconds east) at the UTC instant `utc`.
    fn offset_at_utc(self, utc: &NaiveDateTime) -> i32 {
        match self {
            Zone::Utc | Zone::Factory => 0,
            Zone::Named(tz) => match zone_rules::at_utc(tz, utc) {
                Some((offset, _)) => offset,
                None => tz.offset_from_utc_datetime(utc).fix().local_minus_utc(),
            },
        }
    }
}

/// tzdata's package directories (`tzdata.zoneinfo` sub-packages): a name
/// that ends on one of these makes `ZoneInfo` open a directory and crash.
#[rustfmt::skip]
const ROOT_DIRS: &[&str] = &[
    "Africa", "America", "Antarctica", "Arctic", "Asia", "Atlantic", "Australia", "Brazil", "Canada", "Chile", "Etc", "Europe",
    "Indian", "Mexico", "Pacific", "US",
];
/// `America`'s index in [`ROOT_DIRS`].
const AMERICA: usize = 1;
const AMERICA_DIRS: &[&str] = &["Argentina", "Indiana", "Kentucky", "North_Dakota"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Lookup {
    Found(Zone),
    NotFound,
    /// An IANA zone this build left out (`zone-filter`).
    NotCompiledIn,
    /// `ZoneInfo` raises something other than `ValueError` and the
    /// reference crashes.
    Crash,
}

/// Where a key's package part (before the last `/`) leads in `tzdata.zoneinfo`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Package {
    Root,
    Top(usize),
    America(usize),
    /// A `__pycache__` directory, importable as a namespace package.
    Pycache,
    /// `tzdata.zoneinfo[...].__init__`: a module, not a package.
    InitModule,
}

fn lookup(name: &str) -> Lookup {
    // A NUL byte: `open` raises ValueError ("embedded null byte").
    if name.contains('\0') || name.starts_with('/') {
        return Lookup::NotFound;
    }
    // `os.path.normpath` must keep the length and the key must stay below
    // the base: no empty, `.` or `..` component.
    if name.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Lookup::NotFound;
    }
    let (pkg, last) = match name.rfind('/') {
        Some(i) => (name.get(..i).unwrap_or(""), name.get(i + 1..).unwrap_or("")),
        None => ("", name),
    };
    // `load_tzdata` imports "tzdata.zoneinfo." + the components joined by
    // dots, so `America.Argentina/Salta` works like `America/Argentina/Salta`.
    let mut at = Package::Root;
    if !pkg.is_empty() {
        for piece in pkg.split(['/', '.']) {
            at = match at {
                _ if piece.is_empty() => return Lookup::NotFound,
                Package::Root | Package::Top(_) | Package::America(_) if piece == "__init__" => Package::InitModule,
                Package::Root | Package::Top(_) | Package::America(_) if piece == "__pycache__" => Package::Pycache,
                Package::Root => match ROOT_DIRS.iter().position(|d| *d == piece) {
                    Some(i) => Package::Top(i),
                    None => return Lookup::NotFound,
                },
                Package::Top(AMERICA) => match AMERICA_DIRS.iter().position(|d| *d == piece) {
                    Some(i) => Package::America(i),
                    None => return Lookup::NotFound,
                },
                _ => return Lookup::NotFound,
            };
        }
    }
    let subdirs: &[&str] = match at {
        // `importlib.resources.files` of a module raises TypeError.
        Package::InitModule => return Lookup::Crash,
        Package::Root => ROOT_DIRS,
        Package::Top(AMERICA) => AMERICA_DIRS,
        _ => &[],
    };
    // `open` of a name longer than NAME_MAX (OSError) or of a directory
    // (IsADirectoryError).
    if last.len() > 255 || last == "__pycache__" || subdirs.contains(&last) {
        return Lookup::Crash;
    }
    let dir = match at {
        Package::Root => "",
        Package::Top(i) => ROOT_DIRS.get(i).copied().unwrap_or(""),
        Package::America(i) => AMERICA_DIRS.get(i).copied().unwrap_or(""),
        _ => return Lookup::NotFound,
    };
    let mut buf = [0u8; 64];
    let mut len = 0;
    let parts: [&str; 4] = match at {
        Package::Root => [last, "", "", ""],
        Package::America(_) => ["America/", dir, "/", last],
        _ => [dir, "/", last, ""],
    };
    for part in parts {
        let Some(dst) = buf.get_mut(len..len + part.len()) else {
            return Lookup::NotFound;
        };
        crate::text::copy_bytes(dst, part.as_bytes());
        len += part.len();
    }
    let Some(key) = buf.get(..len).and_then(|b| core::str::from_utf8(b).ok()) else {
        return Lookup::NotFound;
    };
    if key == "Factory" {
        return Lookup::Found(Zone::Factory);
    }
    match Tz::from_str(key) {
        Ok(tz) => Lookup::Found(Zone::Named(tz)),
        Err(_) if crate::iana::is_iana_zone(key) => Lookup::NotCompiledIn,
        Err(_) => Lookup::NotFound,
    }
}

/// The zone Python's `ZoneInfo(name)` loads (tzdata 2025.2, nothing else on
/// the search path), or `None` where it raises, and the reference falls
/// back to [`Zone::Utc`].
///
/// Exact and case-sensitive, no whitespace stripped. Accepts the 597
/// chrono-tz names plus `Factory`, and the dotted package spellings
/// `ZoneInfo` also accepts (`America.Argentina/Salta`). Where `ZoneInfo`
/// crashes instead of raising `ValueError` this also returns `None`; see
/// `zone_name_crashes_reference`.
///
/// With chrono-tz's `filter-by-regex` feature, filtered-out zones are `None`.
pub fn resolve_zone(name: &str) -> Option<Zone> {
    match lookup(name) {
        Lookup::Found(zone) => Some(zone),
        _ => None,
    }
}

/// Whether `name` is an IANA zone that this build left out (chrono-tz's
/// `filter-by-regex` with `CHRONO_TZ_TIMEZONE_FILTER`), where
/// [`resolve_zone`] returns `None` although the reference would load it.
pub fn zone_not_compiled_in(name: &str) -> bool {
    lookup(name) == Lookup::NotCompiledIn
}

/// Whether `ZoneInfo(name)` crashes the reference (an exception other than
/// `ValueError`), where [`resolve_zone`] returns `None`: names ending on a
/// tzdata directory (`America`, `Etc`, `America/Argentina`, `__pycache__`),
/// a last component over 255 bytes (`OSError`), or a package part naming
/// `__init__` (`TypeError`).
#[cfg(test)]
pub fn zone_name_crashes_reference(name: &str) -> bool {
    lookup(name) == Lookup::Crash
}

// ===========================================================================
// Instants and wall clocks
// ===========================================================================

fn utc_naive(at: Timestamp) -> Option<NaiveDateTime> {
    DateTime::from_timestamp_micros(at.unix_micros()).map(|d| d.naive_utc())
}

/// The wall clock of `zone` at `at`, with microseconds: Python's
/// `datetime.now(tz)` without its `tzinfo`.
///
/// Saturates at chrono's range (about ±262,000 years).
pub fn local_naive(at: Timestamp, zone: Zone) -> NaiveDateTime {
    let Some(utc) = utc_naive(at) else {
        return if at.unix_micros() < 0 { NaiveDateTime::MIN } else { NaiveDateTime::MAX };
    };
    let offset = zone.offset_at_utc(&utc);
    utc.checked_add_signed(TimeDelta::seconds(i64::from(offset))).unwrap_or(utc)
}

/// The UTC offset (seconds) `zone` gives the wall time `naive`, as
/// `zoneinfo` does with `fold=0`: an ambiguous time takes the offset before
/// the transition (the earlier instant), a time in a gap the offset in force
/// before the gap.
fn local_offset(naive: &NaiveDateTime, zone: Zone) -> i32 {
    let Zone::Named(tz) = zone else { return 0 };
    if let Some(offset) = zone_rules::offset_for_local(tz, naive) {
        return offset;
    }
    match tz.offset_from_local_datetime(naive) {
        LocalResult::Single(o) | LocalResult::Ambiguous(o, _) => o.fix().local_minus_utc(),
        LocalResult::None => match GapInfo::new(naive, &tz).and_then(|g| g.begin) {
            Some((_, o)) => o.fix().local_minus_utc(),
            None => tz.offset_from_utc_datetime(naive).fix().local_minus_utc(),
        },
    }
}

/// The instant the wall time `naive` denotes in `zone` (`zoneinfo`, `fold=0`:
/// see [`local_naive`] for the inverse). New York 2026-03-08 02:30 (in the
/// gap) is 07:30 UTC; 2026-11-01 01:30 (twice) is 05:30 UTC.
///
/// One known difference up to 2099: `zoneinfo` reads America/Nuuk (and
/// America/Godthab) wall times 2023-10-28 23:00:01–23:59:59 with the rule
/// that follows its transition table (-01) where the table itself, and
/// chrono-tz, say -02.
pub fn local_to_timestamp(naive: NaiveDateTime, zone: Zone) -> Timestamp {
    let offset = i64::from(local_offset(&naive, zone));
    Timestamp(naive.and_utc().timestamp_micros().saturating_sub(offset.saturating_mul(1_000_000)))
}

// ===========================================================================
// Formatting (strftime)
// ===========================================================================

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
    /// `strptime` compiles the format; [`parse_time`] may succeed.
    Possible,
    /// `strptime` always raises `ValueError` for this format (a directive it
    /// lacks, such as `%e`, `%F`, `%T`): the reference re-injects the time at
    /// every step, and [`parse_time`] always returns `None`.
    Never,
    /// A directive repeats (also through `%c`, `%x`, `%X`), so the regex
    /// fails to compile with `re.error`, which the reference does not catch:
    /// it crashes as soon as a recorded time is found. [`parse_time`]
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
    /// Whether [`parse_time`] can ever succeed with this format.
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
fn strptime_expansion(c: char) -> Option<&'static str> {
    Some(match c {
        'c' => "%a %b %d %H:%M:%S %Y",
        'x' => "%m/%d/%y",
        'X' => "%H:%M:%S",
        _ => return None,
    })
}

/// Backtracking frames for [`parse_time`]. The frames on the stack are for
/// distinct nodes of one path through the format, and a frame is only kept
/// for a node with a second viable candidate: one of the 12 directives with
/// several candidate ends (`%d %f %H %I %j %m %M %S %U %W %V %z`; each letter
/// at most once, else the format is refused), whitespace before `%d` (whose
/// ` [1-9]` alternative starts with a space) or whitespace ending the
/// format. So at most 14 are ever used: 16 never overflow.
const MAX_FRAMES: usize = 16;

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
fn strptime_verdict(fmt: &str) -> ParseBack {
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
    let past_2099 = match zone {
        Zone::Named(tz) => zone_rules::at_utc(tz, &utc),
        Zone::Utc | Zone::Factory => None,
    };
    let tz_offset = match zone {
        Zone::Named(tz) if past_2099.is_none() => Some(tz.offset_from_utc_datetime(&utc)),
        _ => None,
    };
    let offset = past_2099.map_or_else(|| tz_offset.as_ref().map_or(0, |o| o.fix().local_minus_utc()), |(o, _)| o);
    let abbr = match (zone, past_2099, &tz_offset) {
        (Zone::Factory, ..) => Abbr::Text("-00"),
        (_, Some((_, abbr)), _) => Abbr::Text(abbr),
        (_, None, Some(o)) => o.abbreviation().map_or(Abbr::Numeric(offset), Abbr::Text),
        (_, None, None) => Abbr::Text("UTC"),
    };
    let local = utc.checked_add_signed(TimeDelta::seconds(i64::from(offset))).ok_or(fmt::Error)?;
    if !(1..=9999).contains(&local.year()) {
        return Err(fmt::Error);
    }
    write_format(w, fmt, &Fields { local, offset, abbr })
}

// ===========================================================================
// Parsing (strptime)
// ===========================================================================

/// A time read back from an earlier injection: Python's
/// `datetime.strptime(text, time_format)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The wall time, with microseconds (fields missing from the format
    /// default to 1900-01-01 00:00:00).
    pub naive: NaiveDateTime,
    /// The UTC offset in microseconds when the format has `%z` (Python's
    /// `timezone(timedelta(seconds=..., microseconds=...))`), else `None`.
    pub utc_offset_micros: Option<i64>,
}

impl Recorded {
    /// The instant this time denotes: through its own UTC offset when it has
    /// one (`%z`), else as wall time in `zone` ([`local_to_timestamp`]).
    ///
    /// For the reference's `now - recorded` when the two zones differ; when
    /// both name the same zone Python subtracts wall clocks instead.
    pub fn to_timestamp(self, zone: Zone) -> Timestamp {
        match self.utc_offset_micros {
            Some(off) => Timestamp(self.naive.and_utc().timestamp_micros().saturating_sub(off)),
            None => local_to_timestamp(self.naive, zone),
        }
    }
}

// --- Python's regex semantics ---------------------------------------------

// `re`'s `\s` for `str` patterns is `str.isspace()`: `text::py_is_space`.

/// First code points of the runs of ten decimal digits (Unicode 14, `Nd`),
/// which `re`'s `\d` and `int()` accept.
const DIGIT_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66, 0xde6, 0xe50, 0xed0, 0xf20, 0x1040, 0x1090,
    0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90, 0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0,
    0xff10, 0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650, 0x116c0, 0x11730, 0x118e0, 0x11950,
    0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0, 0x16b50, 0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0,
];

/// The value of a Unicode decimal digit (`\d`), else `None`.
fn digit_value(c: char) -> Option<u32> {
    let n = c as u32;
    let i = DIGIT_ZEROS.partition_point(|z| *z <= n);
    let zero = *DIGIT_ZEROS.get(i.checked_sub(1)?)?;
    let v = n - zero;
    (v < 10).then_some(v)
}

/// CPython 3.11's simple lowercase mapping (`_sre.unicode_tolower`, Unicode
/// 14) as runs `(first, count, stride, delta)`: characters `first + k *
/// stride` for `k < count` lowercase to themselves plus `delta`. Kept here,
/// not taken from `char::to_lowercase`, to stay Python's whatever Unicode
/// version this Rust has, and because core's case tables cost ~26 KB.
#[rustfmt::skip]
const LOWER_RUNS: [(u32, u8, u8, i32); 182] = [
    (0x41, 26, 1, 32), (0xc0, 23, 1, 32), (0xd8, 7, 1, 32), (0x100, 24, 2, 1), (0x130, 1, 1, -199), (0x132, 3, 2, 1),
    (0x139, 8, 2, 1), (0x14a, 23, 2, 1), (0x178, 1, 1, -121), (0x179, 3, 2, 1), (0x181, 1, 1, 210), (0x182, 2, 2, 1),
    (0x186, 1, 1, 206), (0x187, 1, 1, 1), (0x189, 2, 1, 205), (0x18b, 1, 1, 1), (0x18e, 1, 1, 79), (0x18f, 1, 1, 202),
    (0x190, 1, 1, 203), (0x191, 1, 1, 1), (0x193, 1, 1, 205), (0x194, 1, 1, 207), (0x196, 1, 1, 211), (0x197, 1, 1, 209),
    (0x198, 1, 1, 1), (0x19c, 1, 1, 211), (0x19d, 1, 1, 213), (0x19f, 1, 1, 214), (0x1a0, 3, 2, 1), (0x1a6, 1, 1, 218),
    (0x1a7, 1, 1, 1), (0x1a9, 1, 1, 218), (0x1ac, 1, 1, 1), (0x1ae, 1, 1, 218), (0x1af, 1, 1, 1), (0x1b1, 2, 1, 217),
    (0x1b3, 2, 2, 1), (0x1b7, 1, 1, 219), (0x1b8, 1, 1, 1), (0x1bc, 1, 1, 1), (0x1c4, 1, 1, 2), (0x1c5, 1, 1, 1),
    (0x1c7, 1, 1, 2), (0x1c8, 1, 1, 1), (0x1ca, 1, 1, 2), (0x1cb, 9, 2, 1), (0x1de, 9, 2, 1), (0x1f1, 1, 1, 2), (0x1f2, 2, 2, 1),
    (0x1f6, 1, 1, -97), (0x1f7, 1, 1, -56), (0x1f8, 20, 2, 1), (0x220, 1, 1, -130), (0x222, 9, 2, 1), (0x23a, 1, 1, 10795),
    (0x23b, 1, 1, 1), (0x23d, 1, 1, -163), (0x23e, 1, 1, 10792), (0x241, 1, 1, 1), (0x243, 1, 1, -195), (0x244, 1, 1, 69),
    (0x245, 1, 1, 71), (0x246, 5, 2, 1), (0x370, 2, 2, 1), (0x376, 1, 1, 1), (0x37f, 1, 1, 116), (0x386, 1, 1, 38),
    (0x388, 3, 1, 37), (0x38c, 1, 1, 64), (0x38e, 2, 1, 63), (0x391, 17, 1, 32), (0x3a3, 9, 1, 32), (0x3cf, 1, 1, 8),
    (0x3d8, 12, 2, 1), (0x3f4, 1, 1, -60), (0x3f7, 1, 1, 1), (0x3f9, 1, 1, -7), (0x3fa, 1, 1, 1), (0x3fd, 3, 1, -130),
    (0x400, 16, 1, 80), (0x410, 32, 1, 32), (0x460, 17, 2, 1), (0x48a, 27, 2, 1), (0x4c0, 1, 1, 15), (0x4c1, 7, 2, 1),
    (0x4d0, 48, 2, 1), (0x531, 38, 1, 48), (0x10a0, 38, 1, 7264), (0x10c7, 1, 1, 7264), (0x10cd, 1, 1, 7264),
    (0x13a0, 80, 1, 38864), (0x13f0, 6, 1, 8), (0x1c90, 43, 1, -3008), (0x1cbd, 3, 1, -3008), (0x1e00, 75, 2, 1),
    (0x1e9e, 1, 1, -7615), (0x1ea0, 48, 2, 1), (0x1f08, 8, 1, -8), (0x1f18, 6, 1, -8), (0x1f28, 8, 1, -8), (0x1f38, 8, 1, -8),
    (0x1f48, 6, 1, -8), (0x1f59, 4, 2, -8), (0x1f68, 8, 1, -8), (0x1f88, 8, 1, -8), (0x1f98, 8, 1, -8), (0x1fa8, 8, 1, -8),
    (0x1fb8, 2, 1, -8), (0x1fba, 2, 1, -74), (0x1fbc, 1, 1, -9), (0x1fc8, 4, 1, -86), (0x1fcc, 1, 1, -9), (0x1fd8, 2, 1, -8),
    (0x1fda, 2, 1, -100), (0x1fe8, 2, 1, -8), (0x1fea, 2, 1, -112), (0x1fec, 1, 1, -7), (0x1ff8, 2, 1, -128),
    (0x1ffa, 2, 1, -126), (0x1ffc, 1, 1, -9), (0x2126, 1, 1, -7517), (0x212a, 1, 1, -8383), (0x212b, 1, 1, -8262),
    (0x2132, 1, 1, 28), (0x2160, 16, 1, 16), (0x2183, 1, 1, 1), (0x24b6, 26, 1, 26), (0x2c00, 48, 1, 48), (0x2c60, 1, 1, 1),
    (0x2c62, 1, 1, -10743), (0x2c63, 1, 1, -3814), (0x2c64, 1, 1, -10727), (0x2c67, 3, 2, 1), (0x2c6d, 1, 1, -10780),
    (0x2c6e, 1, 1, -10749), (0x2c6f, 1, 1, -10783), (0x2c70, 1, 1, -10782), (0x2c72, 1, 1, 1), (0x2c75, 1, 1, 1),
    (0x2c7e, 2, 1, -10815), (0x2c80, 50, 2, 1), (0x2ceb, 2, 2, 1), (0x2cf2, 1, 1, 1), (0xa640, 23, 2, 1), (0xa680, 14, 2, 1),
    (0xa722, 7, 2, 1), (0xa732, 31, 2, 1), (0xa779, 2, 2, 1), (0xa77d, 1, 1, -35332), (0xa77e, 5, 2, 1), (0xa78b, 1, 1, 1),
    (0xa78d, 1, 1, -42280), (0xa790, 2, 2, 1), (0xa796, 10, 2, 1), (0xa7aa, 1, 1, -42308), (0xa7ab, 1, 1, -42319),
    (0xa7ac, 1, 1, -42315), (0xa7ad, 1, 1, -42305), (0xa7ae, 1, 1, -42308), (0xa7b0, 1, 1, -42258), (0xa7b1, 1, 1, -42282),
    (0xa7b2, 1, 1, -42261), (0xa7b3, 1, 1, 928), (0xa7b4, 8, 2, 1), (0xa7c4, 1, 1, -48), (0xa7c5, 1, 1, -42307),
    (0xa7c6, 1, 1, -35384), (0xa7c7, 2, 2, 1), (0xa7d0, 1, 1, 1), (0xa7d6, 2, 2, 1), (0xa7f5, 1, 1, 1), (0xff21, 26, 1, 32),
    (0x10400, 40, 1, 40), (0x104b0, 36, 1, 40), (0x10570, 11, 1, 39), (0x1057c, 15, 1, 39), (0x1058c, 7, 1, 39),
    (0x10594, 2, 1, 39), (0x10c80, 51, 1, 64), (0x118a0, 32, 1, 32), (0x16e40, 32, 1, 32), (0x1e900, 34, 1, 34),
];

/// `_sre.unicode_tolower`.
fn sre_lower(c: char) -> char {
    let n = c as u32;
    let i = LOWER_RUNS.partition_point(|r| r.0 <= n);
    let Some(&(first, count, stride, delta)) = i.checked_sub(1).and_then(|i| LOWER_RUNS.get(i)) else {
        return c;
    };
    let off = n - first;
    let stride = u32::from(stride.max(1));
    let (k, rest) = (off / stride, off % stride);
    if rest != 0 || k >= u32::from(count) {
        return c;
    }
    n.checked_add_signed(delta).and_then(char::from_u32).unwrap_or(c)
}

/// `re._casefix._EXTRA_CASES` (Python 3.11): lowercase characters that
/// match each other under `IGNORECASE` although their lowercase forms differ.
#[rustfmt::skip]
const CASE_FIXES: &[(u32, [u32; 2])] = &[
    (0x69, [0x131, 0]), (0x73, [0x17f, 0]), (0xb5, [0x3bc, 0]), (0x131, [0x69, 0]), (0x17f, [0x73, 0]),
    (0x345, [0x3b9, 0x1fbe]), (0x390, [0x1fd3, 0]), (0x3b0, [0x1fe3, 0]), (0x3b2, [0x3d0, 0]), (0x3b5, [0x3f5, 0]),
    (0x3b8, [0x3d1, 0]), (0x3b9, [0x345, 0x1fbe]), (0x3ba, [0x3f0, 0]), (0x3bc, [0xb5, 0]), (0x3c0, [0x3d6, 0]),
    (0x3c1, [0x3f1, 0]), (0x3c2, [0x3c3, 0]), (0x3c3, [0x3c2, 0]), (0x3c6, [0x3d5, 0]), (0x3d0, [0x3b2, 0]),
    (0x3d1, [0x3b8, 0]), (0x3d5, [0x3c6, 0]), (0x3d6, [0x3c0, 0]), (0x3f0, [0x3ba, 0]), (0x3f1, [0x3c1, 0]),
    (0x3f5, [0x3b5, 0]), (0x432, [0x1c80, 0]), (0x434, [0x1c81, 0]), (0x43e, [0x1c82, 0]), (0x441, [0x1c83, 0]),
    (0x442, [0x1c84, 0x1c85]), (0x44a, [0x1c86, 0]), (0x463, [0x1c87, 0]), (0x1c80, [0x432, 0]), (0x1c81, [0x434, 0]),
    (0x1c82, [0x43e, 0]), (0x1c83, [0x441, 0]), (0x1c84, [0x442, 0x1c85]), (0x1c85, [0x442, 0x1c84]),
    (0x1c86, [0x44a, 0]), (0x1c87, [0x463, 0]), (0x1c88, [0xa64b, 0]), (0x1e61, [0x1e9b, 0]), (0x1e9b, [0x1e61, 0]),
    (0x1fbe, [0x345, 0x3b9]), (0x1fd3, [0x390, 0]), (0x1fe3, [0x3b0, 0]), (0xa64b, [0x1c88, 0]), (0xfb05, [0xfb06, 0]),
    (0xfb06, [0xfb05, 0]),
];

/// Whether text character `c` matches pattern character `p` under
/// `re.IGNORECASE` (CPython 3.11's `sre_compile` for a literal).
///
/// `sre` compares lowercase forms when `p` is cased and demands `c == p`
/// otherwise; no uncased character is the lowercase of another (checked
/// against CPython's tables), so comparing lowercase forms is exact for both.
fn ci_match(p: char, c: char) -> bool {
    let lo = sre_lower(p) as u32;
    let lc = sre_lower(c) as u32;
    if p == c || lc == lo {
        return true;
    }
    match CASE_FIXES.iter().find(|(k, _)| *k == lo) {
        Some((_, alts)) => alts.iter().any(|a| *a != 0 && *a == lc),
        None => false,
    }
}

// --- The format as a sequence of regex nodes ---------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Node {
    /// A literal character (case-insensitive).
    Lit(char),
    /// `\s+`: a run of whitespace in the format.
    Space,
    /// A directive's group, by its letter.
    Field(char),
}

/// A position in the format, possibly inside a `%c`/`%x`/`%X` expansion.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Cursor {
    at: usize,
    /// Composite directive (ASCII) being expanded and the offset inside
    /// its text: bytes, to keep backtracking frames small.
    sub: Option<(u8, u8)>,
}

impl Cursor {
    const START: Cursor = Cursor { at: 0, sub: None };
}

/// Reads one node at `pos` of `s`; returns it and the bytes it took.
/// Composite directives are returned as `Field('c' | 'x' | 'X')`.
fn read_node(s: &str, pos: usize) -> Option<(Node, usize)> {
    let rest = s.get(pos..)?;
    let mut it = rest.char_indices();
    let (_, c) = it.next()?;
    if c == '%' {
        // Validated before: a directive follows.
        let (_, d) = it.next()?;
        let len = 1 + d.len_utf8();
        return Some((if d == '%' { Node::Lit('%') } else { Node::Field(d) }, len));
    }
    if py_is_space(c) {
        let end = rest.char_indices().find(|(_, c)| !py_is_space(*c)).map_or(rest.len(), |(i, _)| i);
        return Some((Node::Space, end));
    }
    Some((Node::Lit(c), c.len_utf8()))
}

/// The node at `cur` and the cursor after it.
fn next_node(fmt: &str, cur: Cursor) -> Option<(Node, Cursor)> {
    let mut cur = cur;
    loop {
        if let Some((which, off)) = cur.sub {
            let exp = strptime_expansion(char::from(which))?;
            match read_node(exp, usize::from(off)) {
                Some((node, len)) => {
                    let off = u8::try_from(usize::from(off) + len).ok()?;
                    return Some((node, Cursor { at: cur.at, sub: Some((which, off)) }));
                }
                None => cur.sub = None,
            }
            continue;
        }
        let (node, len) = read_node(fmt, cur.at)?;
        let at = cur.at + len;
        match node {
            Node::Field(d) if strptime_expansion(d).is_some() => {
                cur = Cursor { at, sub: Some((u8::try_from(d).ok()?, 0)) };
            }
            _ => return Some((node, Cursor { at, sub: None })),
        }
    }
}

// --- Matching one node -----------------------------------------------------------

/// One element of a directive's regex alternative.
#[derive(Clone, Copy)]
enum Atom {
    /// One exact ASCII character.
    Ch(u8),
    /// An ASCII range `[a-b]`.
    In(u8, u8),
    /// `\d`: any Unicode decimal digit.
    D,
}

use Atom::{Ch, In, D};

/// The alternatives of `_strptime.TimeRE` for the numeric directives.
fn alternatives(d: char) -> &'static [&'static [Atom]] {
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
        'V' => &[&[Ch(b'5'), In(b'0', b'3')], &[Ch(b'0'), In(b'1', b'9')], &[In(b'1', b'4'), D], &[D]],
        'w' => &[&[In(b'0', b'6')]],
        'u' => &[&[In(b'1', b'7')]],
        'y' => &[&[D, D]],
        _ => &[],
    }
}

/// `LocaleTime` names (C locale), longest first as `__seqToRE` orders them.
fn names(d: char) -> &'static [&'static str] {
    match d {
        'a' => &["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
        'A' => &["wednesday", "thursday", "saturday", "tuesday", "monday", "friday", "sunday"],
        'b' => &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
        'B' => &["september", "february", "november", "december", "january", "october", "august", "march", "april", "june", "july", "may"],
        'p' => &["am", "pm"],
        // The host's zone names; on a UTC host only these.
        'Z' => &["utc", "gmt"],
        _ => &[],
    }
}

fn char_at(text: &str, pos: usize) -> Option<char> {
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
fn match_atoms(text: &str, pos: usize, seq: &[Atom]) -> Option<usize> {
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

fn match_name(text: &str, pos: usize, name: &str) -> Option<usize> {
    let mut p = pos;
    for n in name.chars() {
        let c = char_at(text, p)?;
        if !ci_match(n, c) {
            return None;
        }
        p += c.len_utf8();
    }
    Some(p)
}

/// Up to 8 candidate ends, in the order the regex engine tries them.
#[derive(Default)]
struct Ends {
    ends: [usize; 8],
    len: usize,
}

impl Ends {
    fn push(&mut self, e: usize) {
        if self.ends.get(..self.len).is_some_and(|s| s.contains(&e)) {
            return;
        }
        if let Some(slot) = self.ends.get_mut(self.len) {
            *slot = e;
            self.len += 1;
        }
    }
    fn get(&self, k: usize) -> Option<usize> {
        self.ends.get(..self.len)?.get(k).copied()
    }
}

/// `[0-9]{1,n}` greedy from `pos`: ends longest first (`\d` if `unicode`).
fn push_digit_run(out: &mut Ends, text: &str, pos: usize, max: usize, unicode: bool) {
    let mut ends = [0usize; 6];
    let mut n = 0;
    let mut p = pos;
    while n < max.min(6) {
        match char_at(text, p) {
            Some(c) if if unicode { digit_value(c).is_some() } else { c.is_ascii_digit() } => {
                p += c.len_utf8();
                if let Some(slot) = ends.get_mut(n) {
                    *slot = p;
                }
                n += 1;
            }
            _ => break,
        }
    }
    for e in ends.get(..n).unwrap_or(&[]).iter().rev() {
        out.push(*e);
    }
}

/// `%z`: `[+-]\d\d:?[0-5]\d(:?[0-5]\d(\.\d{1,6})?)?|(?-i:Z)`.
fn z_ends(text: &str, pos: usize, out: &mut Ends) {
    let Some(first) = char_at(text, pos) else { return };
    if first == 'Z' {
        out.push(pos + 1);
        return;
    }
    if first != '+' && first != '-' {
        return;
    }
    let Some(p) = match_atoms(text, pos + 1, &[D, D]) else { return };
    // `:?[0-5]\d`: with the colon if it is there (the other way then fails).
    let colon_then = |p: usize| -> Option<usize> {
        match char_at(text, p) {
            Some(':') => match_atoms(text, p + 1, &[In(b'0', b'5'), D]),
            _ => match_atoms(text, p, &[In(b'0', b'5'), D]),
        }
    };
    let Some(base) = colon_then(p) else { return };
    if let Some(sec) = colon_then(base) {
        if char_at(text, sec) == Some('.') {
            push_digit_run(out, text, sec + 1, 6, true);
        }
        out.push(sec);
    }
    out.push(base);
}

/// The candidate ends of `node` at `pos`, in the regex engine's order.
fn node_ends(node: Node, text: &str, pos: usize) -> Ends {
    let mut out = Ends::default();
    match node {
        Node::Lit(p) => {
            if let Some(c) = char_at(text, pos).filter(|c| ci_match(p, *c)) {
                out.push(pos + c.len_utf8());
            }
        }
        Node::Space => {} // handled lazily: runs can be long
        Node::Field('f') => push_digit_run(&mut out, text, pos, 6, false),
        Node::Field('z') => z_ends(text, pos, &mut out),
        Node::Field(d) => {
            for alt in alternatives(d) {
                if let Some(e) = match_atoms(text, pos, alt) {
                    out.push(e);
                }
            }
            for name in names(d) {
                if let Some(e) = match_name(text, pos, name) {
                    out.push(e);
                }
            }
        }
    }
    out
}

/// The `k`-th candidate end of `node` at `pos`.
fn nth_end(node: Node, text: &str, pos: usize, k: usize) -> Option<usize> {
    if node != Node::Space {
        return node_ends(node, text, pos).get(k);
    }
    // `\s+`, greedy: the whole run first, then one character less each time.
    let rest = text.get(pos..)?;
    let run = rest.char_indices().find(|(_, c)| !py_is_space(*c)).map_or(rest.len(), |(i, _)| i);
    let mut end = run;
    for _ in 0..k {
        let back = rest.get(..end)?.chars().next_back()?;
        end -= back.len_utf8();
    }
    (end > 0).then_some(pos + end)
}

/// A position the matcher keeps (in the text or the format, or a candidate
/// count): 16 bits when the text and the format are shorter than
/// `u16::MAX`, so that every position and count fits, else `usize`. The
/// matcher's state is most of a decision's stack on a device.
trait Pos: Copy + PartialEq {
    /// Never a position: marks an empty failure-cache slot.
    const NONE: Self;
    const ZERO: Self;
    fn of(n: usize) -> Option<Self>;
    fn get(self) -> usize;
}

impl Pos for u16 {
    const NONE: Self = u16::MAX;
    const ZERO: Self = 0;
    fn of(n: usize) -> Option<Self> {
        u16::try_from(n).ok()
    }
    fn get(self) -> usize {
        usize::from(self)
    }
}

impl Pos for usize {
    const NONE: Self = usize::MAX;
    const ZERO: Self = 0;
    fn of(n: usize) -> Option<Self> {
        Some(n)
    }
    fn get(self) -> usize {
        self
    }
}

/// Group spans by directive letter (one per letter: repeats are refused).
struct Captures<P> {
    spans: [(P, P); GROUP_LETTERS.len()],
}

const GROUP_LETTERS: &str = "dfHIGjmMSUwuVyYzABabpZW";

/// The span of a directive's group, whatever the width of its positions.
trait Groups {
    fn span(&self, d: char) -> Option<(usize, usize)>;
    fn get<'t>(&self, text: &'t str, d: char) -> Option<&'t str> {
        let (a, b) = self.span(d)?;
        text.get(a..b)
    }
}

impl<P: Pos> Captures<P> {
    fn new() -> Self {
        Captures { spans: [(P::ZERO, P::ZERO); GROUP_LETTERS.len()] }
    }
    fn slot(d: char) -> Option<usize> {
        GROUP_LETTERS.find(d)
    }
    fn set(&mut self, d: char, span: (usize, usize)) -> Option<()> {
        if let Some(s) = Self::slot(d).and_then(|i| self.spans.get_mut(i)) {
            *s = (P::of(span.0)?, P::of(span.1)?);
        }
        Some(())
    }
}

impl<P: Pos> Groups for Captures<P> {
    fn span(&self, d: char) -> Option<(usize, usize)> {
        let (a, b) = *self.spans.get(Self::slot(d)?)?;
        Some((a.get(), b.get()))
    }
}

/// Bound on the matcher's steps, so no input can make it spin: ordinary
/// formats take a few dozen steps, and random searches over the most
/// ambiguous formats (every numeric directive adjacent) stayed under 400.
const STEP_BUDGET: u32 = 50_000;

/// A choice point: the node at `at`/`sub`, matched at `pos`, whose
/// candidate `next` is the one to try when backtracking to it.
#[derive(Clone, Copy)]
struct Frame<P> {
    at: P,
    sub: Option<(u8, u8)>,
    pos: P,
    next: P,
}

impl<P: Pos> Frame<P> {
    fn cursor(&self) -> Cursor {
        Cursor { at: self.at.get(), sub: self.sub }
    }
}

/// Python's `format_regex.match(text)`: the first match in backtracking
/// order, anchored at the start but not at the end. Returns its end.
fn regex_match<P: Pos>(fmt: &str, text: &str, caps: &mut Captures<P>, steps: &mut u32) -> Option<usize> {
    let mut stack = [Frame { at: P::NONE, sub: None, pos: P::NONE, next: P::NONE }; MAX_FRAMES];
    let mut depth = 0usize;
    // Failed (node, position) pairs: matching has no back-references, so a
    // failure there is a failure whatever came before.
    // Kept as two arrays, the 16-bit half apart: 64 bytes less than triples.
    let mut failed = [(P::NONE, P::NONE); 32];
    let mut failed_sub = [0u16; 32];
    let mut cur = Cursor::START;
    let mut pos = 0usize;
    'outer: loop {
        *steps += 1;
        if *steps > STEP_BUDGET {
            return None;
        }
        // Try to advance from (cur, pos).
        let advanced = match next_node(fmt, cur) {
            None => return Some(pos),
            Some((node, after)) => {
                let key = cursor_key(cur);
                if failed.iter().zip(&failed_sub).any(|(f, sub)| f.0.get() == key.0 && *sub == key.1 && f.1.get() == pos) {
                    None
                } else {
                    match nth_end(node, text, pos, 0) {
                        None => None,
                        Some(end) => {
                            // A choice point only if another candidate could be
                            // followed by the next node: this keeps the stack to
                            // one frame per adjacent numeric directive or so.
                            let is_choice = !matches!(node, Node::Lit(_))
                                && (1..).map_while(|k| nth_end(node, text, pos, k)).any(|e| viable(fmt, after, text, e));
                            if is_choice {
                                let frame = stack.get_mut(depth)?;
                                *frame = Frame { at: P::of(cur.at)?, sub: cur.sub, pos: P::of(pos)?, next: P::of(1)? };
                                depth += 1;
                            }
                            if let Node::Field(d) = node {
                                caps.set(d, (pos, end))?;
                            }
                            Some((after, end))
                        }
                    }
                }
            }
        };
        if let Some((after, end)) = advanced {
            cur = after;
            pos = end;
            continue;
        }
        // Backtrack to the newest choice point with another candidate.
        loop {
            *steps += 1;
            if *steps > STEP_BUDGET || depth == 0 {
                return None;
            }
            let frame = *stack.get(depth - 1)?;
            let (node, after) = next_node(fmt, frame.cursor())?;
            let frame_pos = frame.pos.get();
            let mut k = frame.next.get();
            let found = loop {
                match nth_end(node, text, frame_pos, k) {
                    Some(e) if !viable(fmt, after, text, e) => k += 1,
                    other => break other,
                }
            };
            match found {
                Some(end) => {
                    if let Some(f) = stack.get_mut(depth - 1) {
                        f.next = P::of(k.saturating_add(1))?;
                    }
                    if let Node::Field(d) = node {
                        caps.set(d, (frame_pos, end))?;
                    }
                    cur = after;
                    pos = end;
                    continue 'outer;
                }
                None => {
                    let key = cursor_key(frame.cursor());
                    let slot = (key.0 ^ frame_pos.wrapping_mul(31)) % failed.len();
                    if let (Some(f), Some(sub)) = (failed.get_mut(slot), failed_sub.get_mut(slot)) {
                        *f = (P::of(key.0)?, frame.pos);
                        *sub = key.1;
                    }
                    depth -= 1;
                }
            }
        }
    }
}

/// Whether the node at `cur` can start matching at `pos` (a necessary
/// condition for the rest of the match; true at the end of the format).
fn viable(fmt: &str, cur: Cursor, text: &str, pos: usize) -> bool {
    match next_node(fmt, cur) {
        None => true,
        Some((node, _)) => nth_end(node, text, pos, 0).is_some(),
    }
}

fn cursor_key(c: Cursor) -> (usize, u16) {
    match c.sub {
        None => (c.at, 0),
        // Never 0: the letter is not NUL.
        Some((w, off)) => (c.at, u16::from(w) << 8 | u16::from(off)),
    }
}

// --- From groups to a datetime (`_strptime._strptime`) --------------------------

/// `int()` of a matched run of Unicode decimal digits.
fn int_of(s: &str) -> Option<i64> {
    let mut v = 0i64;
    let mut any = false;
    for c in s.chars() {
        v = v.checked_mul(10)?.checked_add(i64::from(digit_value(c)?))?;
        any = true;
    }
    any.then_some(v)
}

/// Python's `date(year, month, day)`: years 1..=9999 only.
fn py_date(year: i64, month: i64, day: i64) -> Option<NaiveDate> {
    if !(1..=9999).contains(&year) {
        return None;
    }
    NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, u32::try_from(month).ok()?, u32::try_from(day).ok()?)
}

/// Python's `date.toordinal()`.
fn ordinal(d: NaiveDate) -> i64 {
    i64::from(d.num_days_from_ce())
}

/// Python's `date.fromordinal(n)`.
fn from_ordinal(n: i64) -> Option<NaiveDate> {
    let d = NaiveDate::from_num_days_from_ce_opt(i32::try_from(n).ok()?)?;
    (n >= 1 && d.year() <= 9999).then_some(d)
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// `_strptime._calc_julian_from_U_or_W`.
fn julian_from_u_or_w(year: i64, week: i64, day_of_week: i64, starts_mon: bool) -> Option<i64> {
    let mut first = i64::from(py_date(year, 1, 1)?.weekday().num_days_from_monday());
    let mut dow = day_of_week;
    if !starts_mon {
        first = (first + 1) % 7;
        dow = (dow + 1) % 7;
    }
    let week0_len = (7 - first) % 7;
    Some(if week == 0 { 1 + dow - first } else { 1 + week0_len + 7 * (week - 1) + dow })
}

/// `_strptime._calc_julian_from_V`.
fn julian_from_v(iso_year: i64, iso_week: i64, iso_weekday: i64) -> Option<(i64, i64)> {
    let correction = i64::from(py_date(iso_year, 1, 4)?.weekday().number_from_monday()) + 3;
    let mut ordinal_ = iso_week * 7 + iso_weekday - correction;
    let mut year = iso_year;
    if ordinal_ < 1 {
        ordinal_ += ordinal(py_date(year, 1, 1)?);
        year -= 1;
        ordinal_ -= ordinal(py_date(year, 1, 1)?);
    }
    Some((year, ordinal_))
}

/// The `%z` group: seconds and microseconds east of UTC, following
/// `_strptime` character by character (its `ValueError`s give `None`).
fn parse_z(z: &str) -> Option<(i64, i64)> {
    if z == "Z" {
        return Some((0, 0));
    }
    let mut cs = ['\0'; 16];
    let mut n = 0;
    for c in z.chars() {
        *cs.get_mut(n)? = c;
        n += 1;
    }
    let remove = |cs: &mut [char; 16], n: &mut usize, i: usize| {
        if let Some(s) = cs.get_mut(i..*n).filter(|s| !s.is_empty()) {
            s.rotate_left(1);
            *n -= 1;
        }
    };
    if cs.get(3) == Some(&':') {
        remove(&mut cs, &mut n, 3);
        if n > 5 {
            if cs.get(5) != Some(&':') {
                return None; // "Inconsistent use of :"
            }
            remove(&mut cs, &mut n, 5);
        }
    }
    // `int()` of a slice: ":0" (from "+0100:00") raises.
    let num = |cs: &[char; 16], a: usize, b: usize| -> Option<i64> {
        let mut v = 0i64;
        for c in cs.get(a..b.min(n))? {
            v = v * 10 + i64::from(digit_value(*c)?);
        }
        (b.min(n) > a).then_some(v)
    };
    let hours = num(&cs, 1, 3)?;
    let minutes = num(&cs, 3, 5)?;
    let seconds = if n > 5 { num(&cs, 5, 7)? } else { 0 };
    let mut fraction = 0i64;
    let mut scale = 100_000i64;
    for c in cs.get(8..n).unwrap_or(&[]) {
        fraction += i64::from(digit_value(*c)?) * scale;
        scale /= 10;
    }
    let mut off = hours * 3600 + minutes * 60 + seconds;
    if cs.first() == Some(&'-') {
        off = -off;
        fraction = -fraction;
    }
    Some((off, fraction))
}

/// Index of `s` (any case) in `list`, as `list.index(s.lower())`.
fn name_index(list: &[&str], s: &str) -> Option<usize> {
    // `str.lower()` gives ASCII only for ASCII letters (and the Kelvin sign,
    // which no name contains), so an ASCII comparison is exact.
    list.iter().position(|n| n.eq_ignore_ascii_case(s))
}

const WEEKDAYS_LOWER: [&str; 7] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];
const MONTHS_LOWER: [&str; 12] =
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];

fn abbrev_index(list: &[&str], s: &str) -> Option<usize> {
    list.iter().position(|n| n.get(..3).is_some_and(|a| a.eq_ignore_ascii_case(s)) && s.len() == 3)
}

/// Python's `datetime.strptime(text, fmt)`, or `None` where it raises
/// `ValueError` (and where the format makes the reference crash, see
/// [`ParseBack::ReferenceCrashes`]).
///
/// As lenient as CPython 3.11's `_strptime`: one-digit fields, any letter
/// case (`re.IGNORECASE`, also for literal text), Unicode decimal digits
/// where its regex has `\d`, a wrong `%a`/`%A` weekday ignored, whitespace
/// in the format matching any run of Unicode whitespace, `%z` as `Z`,
/// `+HHMM`, `+HH:MM`, `+HH:MM:SS` or `+HHMMSS.ffffff`, `%y` 69–99 as 19xx,
/// missing fields from 1900-01-01 00:00:00. Second 60 or 61, an invalid date
/// or an offset of a day or more give `None`, as does text left over.
/// `%Z` accepts `UTC` and `GMT` only (the reference host's zone being UTC).
pub fn parse_time(text: &str, fmt: &str) -> Option<Recorded> {
    if strptime_verdict(fmt) != ParseBack::Possible {
        return None;
    }
    // Every position is at most the text's or the format's length, and a
    // candidate count at most the text's: below `u16::MAX` they all fit.
    if text.len() < usize::from(u16::MAX) && fmt.len() < usize::from(u16::MAX) {
        parse_with::<u16>(text, fmt)
    } else {
        parse_with::<usize>(text, fmt)
    }
}

/// [`parse_time`] with positions of type `P`. Out of line, so that only the
/// width in use takes stack.
#[inline(never)]
fn parse_with<P: Pos>(text: &str, fmt: &str) -> Option<Recorded> {
    let mut caps = Captures::<P>::new();
    let end = regex_match(fmt, text, &mut caps, &mut 0)?;
    if end != text.len() {
        return None; // "unconverted data remains"
    }
    from_groups(fmt, text, &caps)
}

/// The datetime the groups of a match give (`_strptime._strptime` after its
/// match). Out of line: its frame and the matcher's state are never needed
/// at once.
#[inline(never)]
fn from_groups(fmt: &str, text: &str, caps: &dyn Groups) -> Option<Recorded> {
    let mut year: Option<i64> = None;
    let mut iso_year: Option<i64> = None;
    let (mut month, mut day) = (1i64, 1i64);
    let (mut hour, mut minute, mut second, mut fraction) = (0i64, 0i64, 0i64, 0i64);
    let mut gmtoff: Option<(i64, i64)> = None;
    let mut iso_week: Option<i64> = None;
    let mut week_of_year: Option<i64> = None;
    let mut week_starts_mon = false;
    let mut weekday: Option<i64> = None;
    let mut julian: Option<i64> = None;

    // Groups in pattern order, as `found_dict` iterates them.
    let mut cur = Cursor::START;
    while let Some((node, next)) = next_node(fmt, cur) {
        cur = next;
        let Node::Field(d) = node else { continue };
        let Some(g) = caps.get(text, d) else { continue };
        match d {
            'y' => year = Some(int_of(g).map(|y| if y <= 68 { y + 2000 } else { y + 1900 })?),
            'Y' => year = Some(int_of(g)?),
            'G' => iso_year = Some(int_of(g)?),
            'm' => month = int_of(g)?,
            'B' => month = name_index(&MONTHS_LOWER, g)? as i64 + 1,
            'b' => month = abbrev_index(&MONTHS_LOWER, g)? as i64 + 1,
            'd' => day = int_of(g.trim_start_matches(' '))?,
            'H' => hour = int_of(g)?,
            'I' => {
                hour = int_of(g)?;
                // `found_dict.get('p', '')`: an unset span reads as "".
                let ampm = caps.get(text, 'p').unwrap_or("");
                if ampm.is_empty() || ampm.eq_ignore_ascii_case("am") {
                    if hour == 12 {
                        hour = 0;
                    }
                } else if ampm.eq_ignore_ascii_case("pm") && hour != 12 {
                    hour += 12;
                }
            }
            'M' => minute = int_of(g)?,
            'S' => second = int_of(g)?,
            'f' => {
                let digits = int_of(g)?;
                let pad = 6u32.saturating_sub(g.len() as u32);
                fraction = digits * 10i64.pow(pad);
            }
            'A' => weekday = Some(name_index(&WEEKDAYS_LOWER, g)? as i64),
            'a' => weekday = Some(abbrev_index(&WEEKDAYS_LOWER, g)? as i64),
            'w' => {
                weekday = Some(match int_of(g)? {
                    0 => 6,
                    w => w - 1,
                })
            }
            'u' => weekday = Some(int_of(g)? - 1),
            'j' => julian = Some(int_of(g)?),
            'U' | 'W' => {
                week_of_year = Some(int_of(g)?);
                week_starts_mon = d == 'W';
            }
            'V' => iso_week = Some(int_of(g)?),
            'z' => gmtoff = Some(parse_z(g)?),
            _ => {} // 'p' (read with 'I'), 'Z' (only names the zone)
        }
    }

    if year.is_none() && iso_year.is_some() {
        if iso_week.is_none() || weekday.is_none() || julian.is_some() {
            return None;
        }
    } else if week_of_year.is_none() && iso_week.is_some() {
        return None;
    }

    let mut leap_year_fix = false;
    let mut year = match year {
        Some(y) => y,
        None if month == 2 && day == 29 => {
            leap_year_fix = true;
            1904
        }
        None => 1900,
    };

    if julian.is_none() {
        if let Some(wd) = weekday {
            if let Some(week) = week_of_year {
                julian = Some(julian_from_u_or_w(year, week, wd, week_starts_mon)?);
            } else if let (Some(iy), Some(iw)) = (iso_year, iso_week) {
                let (y, j) = julian_from_v(iy, iw, wd + 1)?;
                year = y;
                julian = Some(j);
            }
            if let Some(j) = julian.filter(|j| *j <= 0) {
                year -= 1;
                julian = Some(j + if is_leap(year) { 366 } else { 365 });
            }
        }
    }

    match julian {
        None => {
            py_date(year, month, day)?;
        }
        Some(j) => {
            let date = from_ordinal(j - 1 + ordinal(py_date(year, 1, 1)?))?;
            year = i64::from(date.year());
            month = i64::from(date.month());
            day = i64::from(date.day());
        }
    }
    if weekday.is_none() {
        py_date(year, month, day)?;
    }
    if leap_year_fix {
        year = 1900;
    }

    // `datetime(...)`, then `timezone(timedelta(...))`.
    let date = py_date(year, month, day)?;
    let time = NaiveTime::from_hms_micro_opt(
        u32::try_from(hour).ok()?,
        u32::try_from(minute).ok()?,
        u32::try_from(second).ok().filter(|s| *s <= 59)?,
        u32::try_from(fraction).ok()?,
    )?;
    let utc_offset_micros = match gmtoff {
        None => None,
        Some((secs, micros)) => {
            let total = secs * 1_000_000 + micros;
            if total.abs() >= 86_400_000_000 {
                return None;
            }
            Some(total)
        }
    };
    Some(Recorded { naive: NaiveDateTime::new(date, time), utc_offset_micros })
}

#[cfg(test)]
mod tests {
    //! Expected values are CPython 3.11's own outputs (tzdata 2025.2,
    //! `LC_TIME=C`, `zoneinfo.reset_tzpath(to=[])`).
    extern crate std;

    use super::*;
    use proptest::prelude::*;
    use std::string::String;

    /// Text, format, and Python's result (wall time, UTC offset in µs).
    type ParseCase = (&'static str, &'static str, Option<(&'static str, Option<i64>)>);
    /// Zone, wall time (y, m, d, H, M, S, µs), and Python's Unix µs.
    type LocalCase = (&'static str, (i32, u32, u32, u32, u32, u32, u32), i64);

    fn zone(name: &str) -> Zone {
        resolve_zone(name).unwrap_or(Zone::Utc)
    }

    fn iso(n: NaiveDateTime) -> String {
        std::format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}",
            n.year(),
            n.month(),
            n.day(),
            n.hour(),
            n.minute(),
            n.second(),
            n.nanosecond() / 1000
        )
    }

    #[test]
    fn zone_names_are_resolved_like_zoneinfo() {
        let named = |n: &str| Some(Zone::Named(Tz::from_str(n).unwrap()));
        assert_eq!(resolve_zone("UTC"), named("UTC"));
        assert_eq!(resolve_zone("America/New_York"), named("America/New_York"));
        assert_eq!(resolve_zone("EST5EDT"), named("EST5EDT"));
        assert_eq!(resolve_zone("Factory"), Some(Zone::Factory));
        // The package part may be spelled with dots.
        assert_eq!(resolve_zone("America.Argentina/Salta"), named("America/Argentina/Salta"));
        assert_eq!(resolve_zone("America/Argentina.Salta"), None);
        for bad in [
            "utc",
            " UTC",
            "UTC ",
            "",
            ".",
            "..",
            "../UTC",
            "./UTC",
            "UTC/",
            "America//New_York",
            "/UTC",
            "UTC\0",
            "America.Argentina",
            "America.Argentina.Salta",
            "__init__.py",
            "zone.tab",
            "Foo/x",
            "America..Argentina/Salta",
        ] {
            assert_eq!(resolve_zone(bad), None, "{bad:?}");
            assert!(!zone_name_crashes_reference(bad), "{bad:?}");
        }
        let long_a = "a".repeat(256);
        let long_in_america = std::format!("America/{long_a}");
        let long_in_nowhere = std::format!("Foo/{long_a}");
        for crash in [
            "America",
            "Etc",
            "America/Argentina",
            "America.Argentina/__pycache__",
            "__pycache__",
            "Asia/__pycache__",
            "__init__/UTC",
            "America.__init__/x",
            &long_a,
            &long_in_america,
        ] {
            assert_eq!(resolve_zone(crash), None, "{crash:?}");
            assert!(zone_name_crashes_reference(crash), "{crash:?}");
        }
        assert!(!zone_name_crashes_reference(&"a".repeat(255)));
        assert!(!zone_name_crashes_reference(&long_in_nowhere));
        for tz in chrono_tz::TZ_VARIANTS {
            assert_eq!(resolve_zone(tz.name()), Some(Zone::Named(tz)));
        }
    }

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
    fn parses_like_python_strptime() {
        let cases: &[ParseCase] = &[
            ("2026-07-01T12:00:00", "%Y-%m-%dT%H:%M:%S", Some(("2026-07-01T12:00:00.000000", None))),
            ("2026-3-8T2:5:9", "%Y-%m-%dT%H:%M:%S", Some(("2026-03-08T02:05:09.000000", None))),
            ("2026-03-08t02:05:09", "%Y-%m-%dT%H:%M:%S", Some(("2026-03-08T02:05:09.000000", None))),
            // `\d` takes any decimal digit; `0[1-9]`-style alternatives take ASCII only.
            ("\u{ff12}\u{ff10}\u{ff12}\u{ff16}-\u{ff10}\u{ff13}-\u{ff10}\u{ff18}T\u{660}\u{662}:05:09", "%Y-%m-%dT%H:%M:%S", None),
            (
                "\u{ff12}\u{ff10}\u{ff12}\u{ff16}-03-08T0\u{662}:0\u{ff15}:09",
                "%Y-%m-%dT%H:%M:%S",
                Some(("2026-03-08T02:05:09.000000", None)),
            ),
            ("2026-03-08 02:05:09 +\u{660}\u{665}:30", "%Y-%m-%d %H:%M:%S %z", Some(("2026-03-08T02:05:09.000000", Some(19800000000)))),
            ("2026-03-08 \u{3000}\u{9}02:05:09", "%Y-%m-%d %H:%M:%S", Some(("2026-03-08T02:05:09.000000", None))),
            ("2026-03-08 02:05:09 +08:00", "%Y-%m-%d %H:%M:%S %z", Some(("2026-03-08T02:05:09.000000", Some(28800000000)))),
            ("2026-03-08 02:05:09 -08:00:30", "%Y-%m-%d %H:%M:%S %z", Some(("2026-03-08T02:05:09.000000", Some(-28830000000)))),
            ("2026-03-08 02:05:09 +010000.5", "%Y-%m-%d %H:%M:%S %z", Some(("2026-03-08T02:05:09.000000", Some(3600500000)))),
            ("2026-03-08 02:05:09 Z", "%Y-%m-%d %H:%M:%S %z", Some(("2026-03-08T02:05:09.000000", Some(0)))),
            ("2026-03-08 02:05:09 z", "%Y-%m-%d %H:%M:%S %z", None),
            ("2026-03-08 02:05:09 +01:0000", "%Y-%m-%d %H:%M:%S %z", None),
            ("2026-03-08 02:05:09 +0100:00", "%Y-%m-%d %H:%M:%S %z", None),
            ("2026-03-08 02:05:09 +2400", "%Y-%m-%d %H:%M:%S %z", None),
            ("2026-03-08 02:05:09 -2359", "%Y-%m-%d %H:%M:%S %z", Some(("2026-03-08T02:05:09.000000", Some(-86340000000)))),
            ("Mon Mar 09 2026", "%a %b %d %Y", Some(("2026-03-09T00:00:00.000000", None))),
            ("sUnDaY 2026-03-08", "%A %Y-%m-%d", Some(("2026-03-08T00:00:00.000000", None))),
            ("Sunday 2026-03-08", "%a %Y-%m-%d", None),
            ("\u{17f}un 2026-03-08", "%a %Y-%m-%d", None),
            ("2026-03-08T02:05:60", "%Y-%m-%dT%H:%M:%S", None),
            ("2026-03-08T02:05:61", "%Y-%m-%dT%H:%M:%S", None),
            ("2026-02-30T02:05:00", "%Y-%m-%dT%H:%M:%S", None),
            ("0000-01-01T00:00:00", "%Y-%m-%dT%H:%M:%S", None),
            ("69-01-01", "%y-%m-%d", Some(("1969-01-01T00:00:00.000000", None))),
            ("68-12-31", "%y-%m-%d", Some(("2068-12-31T00:00:00.000000", None))),
            ("12 AM 2026-01-01", "%I %p %Y-%m-%d", Some(("2026-01-01T00:00:00.000000", None))),
            ("12 pm 2026-01-01", "%I %p %Y-%m-%d", Some(("2026-01-01T12:00:00.000000", None))),
            ("3 2026-01-01", "%I %Y-%m-%d", Some(("2026-01-01T03:00:00.000000", None))),
            ("2026-366", "%Y-%j", Some(("2027-01-01T00:00:00.000000", None))),
            ("2024-366", "%Y-%j", Some(("2024-12-31T00:00:00.000000", None))),
            ("9999-366", "%Y-%j", None),
            ("02-29", "%m-%d", None),
            ("02-29 100", "%m-%d %j", Some(("1900-04-09T00:00:00.000000", None))),
            ("10:30", "%H:%M", Some(("1900-01-01T10:30:00.000000", None))),
            ("2026-03-08T02:05:09x", "%Y-%m-%dT%H:%M:%S", None),
            ("2026-03-08T02:05", "%Y-%m-%dT%H:%M:%S", None),
            ("311", "%d1", Some(("1900-01-31T00:00:00.000000", None))),
            ("31", "%d1", Some(("1900-01-03T00:00:00.000000", None))),
            ("123", "%H%M", Some(("1900-01-01T12:03:00.000000", None))),
            ("2026  1", "%Y %d", Some(("2026-01-01T00:00:00.000000", None))),
            ("2026-03-08 02:05:09.5", "%Y-%m-%d %H:%M:%S.%f", Some(("2026-03-08T02:05:09.500000", None))),
            ("2026-03-08 02:05:09.1234567", "%Y-%m-%d %H:%M:%S.%f", None),
            ("2026-03-08 02:05:09 UTC", "%Y-%m-%d %H:%M:%S %Z", Some(("2026-03-08T02:05:09.000000", None))),
            ("2026-03-08 02:05:09 EST", "%Y-%m-%d %H:%M:%S %Z", None),
            ("2026-W10-7 02:05", "%G-W%V-%u %H:%M", Some(("2026-03-08T02:05:00.000000", None))),
            ("2026-W10-7", "%Y-W%V-%u", None),
            ("2026 10 0", "%Y %U %w", Some(("2026-03-08T00:00:00.000000", None))),
            ("2026 00 1", "%Y %W %u", Some(("2025-12-29T00:00:00.000000", None))),
            ("Sun Mar  8 02:05:09 2026", "%c", Some(("2026-03-08T02:05:09.000000", None))),
            ("03/08/26 02:05:09", "%x %X", Some(("2026-03-08T02:05:09.000000", None))),
            ("2026-03-08", "%Y-%m-%d %e", None),
            ("2026.03.08", "%Y.%m.%d", Some(("2026-03-08T00:00:00.000000", None))),
            ("2026x03x08", "%Y.%m.%d", None),
            ("2026-03-08 \u{130}S", "%Y-%m-%d is", Some(("2026-03-08T00:00:00.000000", None))),
            ("2026-03-08 \u{131}\u{17f}", "%Y-%m-%d IS", Some(("2026-03-08T00:00:00.000000", None))),
            ("2026\u{5e74}3\u{6708}8\u{65e5}", "%Y\u{5e74}%m\u{6708}%d\u{65e5}", Some(("2026-03-08T00:00:00.000000", None))),
            ("2026-03-08 02:05:09%", "%Y-%m-%d %H:%M:%S%%", Some(("2026-03-08T02:05:09.000000", None))),
            ("", "%Y", None),
            // Formats the reference cannot compile.
            ("2026 2026", "%Y %Y", None),
            ("2026-03-08%", "%Y-%m-%d%", None),
        ];
        for (text, fmt, want) in cases {
            let got = parse_time(text, fmt).map(|r| (iso(r.naive), r.utc_offset_micros));
            let want = want.map(|(n, o)| (String::from(n), o));
            assert_eq!(got, want, "{text:?} {fmt:?}");
        }
    }

    #[test]
    fn local_times_resolve_like_zoneinfo_fold_0() {
        let cases: &[LocalCase] = &[
            ("America/New_York", (2026, 3, 8, 2, 30, 0, 0), 1772955000000000),
            ("America/New_York", (2026, 11, 1, 1, 30, 0, 0), 1793511000000000),
            ("America/New_York", (2026, 11, 1, 2, 30, 0, 0), 1793518200000000),
            ("America/New_York", (2026, 3, 8, 3, 0, 0, 0), 1772953200000000),
            ("America/New_York", (2026, 3, 8, 1, 59, 59, 999999), 1772953199999999),
            ("Europe/London", (2026, 3, 29, 1, 30, 0, 0), 1774747800000000),
            ("Europe/London", (2026, 10, 25, 1, 30, 0, 0), 1792888200000000),
            ("Australia/Lord_Howe", (2026, 4, 5, 1, 45, 0, 0), 1775313900000000),
            ("Australia/Lord_Howe", (2026, 10, 4, 2, 15, 0, 0), 1791042300000000),
            ("Pacific/Apia", (2011, 12, 30, 12, 0, 0, 0), 1325282400000000),
            ("America/Sao_Paulo", (2018, 11, 4, 0, 30, 0, 0), 1541302200000000),
            ("Asia/Kolkata", (1800, 1, 1, 0, 0, 0, 0), -5364683608000000),
            ("Europe/Dublin", (2026, 1, 15, 12, 0, 0, 0), 1768478400000000),
            ("Africa/Casablanca", (2026, 3, 1, 2, 30, 0, 0), 1772332200000000),
            ("America/St_Johns", (2026, 3, 8, 2, 30, 0, 0), 1772949600000000),
            ("Factory", (2026, 1, 1, 0, 0, 0, 0), 1767225600000000),
            ("bogus", (2026, 1, 1, 0, 0, 0, 0), 1767225600000000),
        ];
        for (z, (y, mo, d, h, mi, s, us), want) in cases {
            let naive = NaiveDate::from_ymd_opt(*y, *mo, *d).unwrap().and_hms_micro_opt(*h, *mi, *s, *us).unwrap();
            let at = local_to_timestamp(naive, zone(z));
            assert_eq!(at, Timestamp(*want), "{z} {naive}");
        }
        // The inverse, and a recorded time with its own offset.
        let ny = zone("America/New_York");
        let at = Timestamp(1772955000123456);
        assert_eq!(iso(local_naive(at, ny)), "2026-03-08T03:30:00.123456");
        assert_eq!(local_to_timestamp(local_naive(at, ny), ny), at);
        let rec = parse_time("2026-03-08 03:30:00 -0400", "%Y-%m-%d %H:%M:%S %z").unwrap();
        assert_eq!(rec.to_timestamp(Zone::Utc), Timestamp(1772955000000000));
        let rec = parse_time("2026-03-08 02:30:00", "%Y-%m-%d %H:%M:%S").unwrap();
        assert_eq!(rec.to_timestamp(ny), Timestamp(1772955000000000));
        assert_eq!(local_naive(Timestamp(i64::MAX), ny), NaiveDateTime::MAX);
        assert_eq!(local_naive(Timestamp(i64::MIN), ny), NaiveDateTime::MIN);
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

    /// The lowercase table is CPython 3.11's: an FNV-1a hash over (char,
    /// lowercase) of every character `_sre.unicode_tolower` changes.
    #[test]
    fn case_mapping_is_python_3_11s() {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for c in (0..0x11_0000u32).filter_map(char::from_u32) {
            let lo = sre_lower(c);
            if lo != c {
                let mut bytes = [0u8; 8];
                bytes[..4].copy_from_slice(&(c as u32).to_le_bytes());
                bytes[4..].copy_from_slice(&(lo as u32).to_le_bytes());
                for b in bytes {
                    h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
                }
            }
        }
        assert_eq!(h, 0x7d0c_429f_29de_bbca);
    }

    #[test]
    fn ambiguous_formats_stay_within_budget() {
        let fmt = "%f%Y%G%y%j%d%H%M%S%m%I%U%W%V%w%u%z";
        let text = "1178643464812321171115+97123-";
        let mut caps = Captures::<u16>::new();
        let mut steps = 0;
        let _ = regex_match(fmt, text, &mut caps, &mut steps);
        assert!(steps < 1000, "{steps}");
        // Long whitespace runs before literals are not choice points.
        let fmt = " 1".repeat(100);
        let text = "  1".repeat(100);
        assert!(parse_time(&text, &fmt).is_some());
    }

    #[test]
    fn the_deepest_choice_stack_fits() {
        // Every choice-capable node is a live choice point when the match
        // ends: leading whitespace before `%d`, the 11 directives with a
        // shorter candidate the next node can start at, and the trailing
        // whitespace (`%V` before it cannot be one, nor `%W` before `%z`:
        // `%Y` sits between). 13 frames with ASCII spaces, within
        // `MAX_FRAMES`; 12 with ideographic ones (` [1-9]` is ASCII).
        let fmt = "  %d%f%H%I%j%m%M%S%U%W%Y%z%V  ";
        let text = "  12123456121112311121212122026+01001212  ";
        for text in [text, &text.replace(' ', "\u{3000}")] {
            let (mut narrow, mut wide) = (Captures::<u16>::new(), Captures::<usize>::new());
            assert_eq!(regex_match(fmt, text, &mut narrow, &mut 0), Some(text.len()));
            assert_eq!(regex_match(fmt, text, &mut wide, &mut 0), Some(text.len()));
            for d in GROUP_LETTERS.chars() {
                assert_eq!(narrow.span(d), wide.span(d), "{d}");
            }
            assert_eq!(narrow.get(text, 'z'), Some("+010012"));
        }
        // Past 16-bit positions, the same match with `usize` ones.
        let fmt = std::format!("%Y{}%m%d", " ".repeat(70_000));
        let parsed = parse_time("2026 7 5", &fmt).map(|r| iso(r.naive));
        assert_eq!(parsed.as_deref(), Some("2026-07-05T00:00:00.000000"));
    }

    fn zone_strategy() -> impl Strategy<Value = Zone> {
        (0..chrono_tz::TZ_VARIANTS.len() + 2).prop_map(|i| match chrono_tz::TZ_VARIANTS.get(i) {
            Some(tz) => Zone::Named(*tz),
            None if i % 2 == 0 => Zone::Utc,
            None => Zone::Factory,
        })
    }

    proptest! {
        #[test]
        fn nothing_panics_on_arbitrary_input(text in ".{0,40}", fmt in ".{0,24}", at in any::<i64>(), zone in zone_strategy()) {
            let _ = parse_time(&text, &fmt);
            let _ = check_format(&fmt);
            let _ = resolve_zone(&text);
            let _ = zone_name_crashes_reference(&fmt);
            let mut s = String::new();
            let _ = format_time(&mut s, &fmt, Timestamp(at), zone);
            let naive = local_naive(Timestamp(at), zone);
            let _ = local_to_timestamp(naive, zone);
        }

        #[test]
        fn nothing_panics_on_format_like_input(
            text in "[0-9 :+\\-.ZzaApPmMT\u{3000}\u{660}\u{17f}]{0,40}",
            fmt in "(%[a-zA-Z%:+ ]|[ :.\\-T])*%?",
        ) {
            let _ = parse_time(&text, &fmt);
            let _ = check_format(&fmt);
            let mut s = String::new();
            let _ = format_time(&mut s, &fmt, Timestamp(1772955000123456), Zone::Utc);
        }

        #[test]
        fn formatted_times_parse_back(at in -2_208_988_800_000_000i64..4_102_444_800_000_000, zone in zone_strategy()) {
            let mut s = String::new();
            format_time(&mut s, "%Y-%m-%dT%H:%M:%S.%f%z", Timestamp(at), zone).unwrap();
            let rec = parse_time(&s, "%Y-%m-%dT%H:%M:%S.%f%z").unwrap();
            prop_assert_eq!(rec.naive, local_naive(Timestamp(at), zone));
            // Offsets with seconds (LMT) round-trip too.
            prop_assert_eq!(rec.to_timestamp(Zone::Utc), Timestamp(at));
        }
    }
}
