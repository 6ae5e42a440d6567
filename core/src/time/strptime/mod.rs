//! `datetime.strptime(text, fmt)` as CPython 3.11's `_strptime` does it,
//! for any format: [`parse`].
//!
//! The regex match is in `matcher` (a child module: it exists for strptime
//! alone, and nothing else in the crate may reach it), `re`'s case tables
//! are in `unicode`, and the numeric groups of `_strptime.TimeRE` and `\d`,
//! which the default format's reader shares, in `time::numeric`.

mod matcher;
mod unicode;

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime};

use self::matcher::{next_node, regex_match, Captures, Cursor, Groups, Node, Pos};
#[cfg(test)]
pub(super) use self::unicode::ci_match;
use super::civil::{self, is_leap};
use super::format::custom::{strptime_verdict, MONTHS, WEEKDAYS};
use super::format::ParseBack;
use super::numeric::digit_value;
use super::Recorded;

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
///
/// In `_strptime`'s three phases: match the whole text against the format
/// (`match_whole`), convert the groups into fields (`convert_groups`), and
/// resolve the date they give (`resolve_date`).
pub(super) fn parse(text: &str, fmt: &str) -> Option<Recorded> {
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

/// [`parse`] with positions of type `P`. Out of line, so that only the
/// width in use takes stack.
#[inline(never)]
fn parse_with<P: Pos>(text: &str, fmt: &str) -> Option<Recorded> {
    let mut caps = Captures::<P>::new();
    match_whole(fmt, text, &mut caps)?;
    from_groups(fmt, text, &caps)
}

/// Phase 1, `format_regex.match(data_string)`: fills `caps` with the groups
/// of the format's first match; `None` if there is none or it leaves text
/// over ("unconverted data remains").
fn match_whole<P: Pos>(fmt: &str, text: &str, caps: &mut Captures<P>) -> Option<()> {
    let end = regex_match(fmt, text, caps, &mut 0)?;
    (end == text.len()).then_some(())
}

/// Phases 2 and 3: the datetime the groups of a match give. Out of line,
/// so that its locals do not lie under the matcher's own calls: the
/// matcher is inlined into `parse_with`, and inlined there too these would
/// deepen the matcher's deepest path.
#[inline(never)]
fn from_groups(fmt: &str, text: &str, caps: &dyn Groups) -> Option<Recorded> {
    resolve_date(convert_groups(fmt, text, caps)?)
}

/// `_strptime`'s locals after its loop over the groups: what each
/// directive gave, the defaults (month and day 1, time 00:00) or `None`
/// where the format has no directive for it. In `i32`: every group is at
/// most 6 digits (`%f`; `%Y` 4) and the date arithmetic stays within years
/// 1..=9999, so nothing comes near 2^31; on a Cortex-M, `i64` arithmetic
/// cost 1.2 KB more. Only `%z`'s offset in microseconds needs `i64`.
struct Fields {
    year: Option<i32>,
    iso_year: Option<i32>,
    month: i32,
    day: i32,
    hour: i32,
    minute: i32,
    second: i32,
    /// Microseconds.
    fraction: i32,
    /// `%z`: seconds and microseconds east of UTC.
    gmtoff: Option<(i32, i32)>,
    iso_week: Option<i32>,
    week_of_year: Option<i32>,
    /// `%W` (weeks start on Monday) rather than `%U` (on Sunday).
    week_starts_mon: bool,
    /// Monday is 0.
    weekday: Option<i32>,
    /// The day of the year, from 1.
    julian: Option<i32>,
}

/// Phase 2, `_strptime`'s loop over `found_dict`: each group converted to
/// its field, in pattern order (a later directive overrides an earlier
/// one for the same field). `None` where a conversion raises `ValueError`.
fn convert_groups(fmt: &str, text: &str, caps: &dyn Groups) -> Option<Fields> {
    let mut fields = Fields {
        year: None,
        iso_year: None,
        month: 1,
        day: 1,
        hour: 0,
        minute: 0,
        second: 0,
        fraction: 0,
        gmtoff: None,
        iso_week: None,
        week_of_year: None,
        week_starts_mon: false,
        weekday: None,
        julian: None,
    };
    // `found_dict.get('p', '')`: an unset span reads as "".
    let ampm = caps.get(text, 'p').unwrap_or("");
    let mut cur = Cursor::START;
    while let Some((node, next)) = next_node(fmt, cur) {
        cur = next;
        let Node::Field(d) = node else { continue };
        let Some(g) = caps.get(text, d) else { continue };
        fields.convert(d, g, ampm)?;
    }
    Some(fields)
}

impl Fields {
    /// Converts the group `g` of directive `d` into its field (`ampm` is the
    /// `%p` group, which `%I` reads).
    fn convert(&mut self, d: char, g: &str, ampm: &str) -> Option<()> {
        match d {
            'y' => self.year = Some(int_of(g).map(|y| if y <= 68 { y + 2000 } else { y + 1900 })?),
            'Y' => self.year = Some(int_of(g)?),
            'G' => self.iso_year = Some(int_of(g)?),
            'm' => self.month = int_of(g)?,
            'B' => self.month = name_index(&MONTHS, g)? as i32 + 1,
            'b' => self.month = abbrev_index(&MONTHS, g)? as i32 + 1,
            'd' => self.day = int_of(g.trim_start_matches(' '))?,
            'H' => self.hour = int_of(g)?,
            'I' => self.hour = hour_of_12(int_of(g)?, ampm),
            'M' => self.minute = int_of(g)?,
            'S' => self.second = int_of(g)?,
            'f' => {
                let digits = int_of(g)?;
                let pad = 6u32.saturating_sub(g.len() as u32);
                self.fraction = digits * 10i32.pow(pad);
            }
            'A' => self.weekday = Some(name_index(&WEEKDAYS, g)? as i32),
            'a' => self.weekday = Some(abbrev_index(&WEEKDAYS, g)? as i32),
            'w' => {
                self.weekday = Some(match int_of(g)? {
                    0 => 6,
                    w => w - 1,
                })
            }
            'u' => self.weekday = Some(int_of(g)? - 1),
            'j' => self.julian = Some(int_of(g)?),
            'U' | 'W' => {
                self.week_of_year = Some(int_of(g)?);
                self.week_starts_mon = d == 'W';
            }
            'V' => self.iso_week = Some(int_of(g)?),
            'z' => self.gmtoff = Some(parse_z(g)?),
            _ => {} // 'p' (read with 'I'), 'Z' (only names the zone)
        }
        Some(())
    }
}

/// `%I` on the 24-hour clock: 12 AM is 0, PM adds 12 except to 12, and
/// without `%p` the hour is AM.
fn hour_of_12(hour: i32, ampm: &str) -> i32 {
    let mut hour = hour;
    if ampm.is_empty() || ampm.eq_ignore_ascii_case("am") {
        if hour == 12 {
            hour = 0;
        }
    } else if ampm.eq_ignore_ascii_case("pm") && hour != 12 {
        hour += 12;
    }
    hour
}

/// Phase 3, `_strptime` after its loop: the date the fields give (a day of
/// the year, given or computed from a week and a weekday, else the month
/// and day), checked as `datetime` checks it, with the time and offset.
///
/// In one piece, in `_strptime`'s order and with its mutable locals: split
/// into methods that return a year and a day of the year, it compiled to
/// about 230 bytes more on a Cortex-M.
fn resolve_date(f: Fields) -> Option<Recorded> {
    let Fields {
        year,
        iso_year,
        mut month,
        mut day,
        iso_week,
        week_of_year,
        week_starts_mon,
        weekday,
        mut julian,
        ..
    } = f;
    // `%G` needs `%V` and a weekday and refuses `%j`; `%V` needs `%G`.
    if year.is_none() && iso_year.is_some() {
        if iso_week.is_none() || weekday.is_none() || julian.is_some() {
            return None;
        }
    } else if week_of_year.is_none() && iso_week.is_some() {
        return None;
    }

    // February 29th without a year is computed in 1904, a leap year, then
    // given back 1900 (where `datetime` refuses it).
    let mut leap_year_fix = false;
    let mut year = match year {
        Some(y) => y,
        None if month == 2 && day == 29 => {
            leap_year_fix = true;
            1904
        }
        None => 1900,
    };

    // A week and a weekday give the day of the year; one of 0 or less is
    // in the year before.
    if julian.is_none() {
        if let Some(wd) = weekday {
            if let Some(week) = week_of_year {
                julian = Some(julian_from_u_or_w(year, week, wd, week_starts_mon)?);
            } else if let (Some(iy), Some(iw)) = (iso_year, iso_week) {
                year = iy;
                julian = Some(julian_from_v(iy, iw, wd + 1)?);
            }
            if let Some(j) = julian.filter(|j| *j <= 0) {
                year -= 1;
                julian = Some(j + if is_leap(year) { 366 } else { 365 });
            }
        }
    }

    // The day of the year gives the month and day (`date.fromordinal`).
    match julian {
        None => {
            py_date(year, month, day)?;
        }
        Some(j) => {
            let date = from_ordinal(j - 1 + ordinal(py_date(year, 1, 1)?))?;
            year = date.year();
            let (m, d) = civil::month_day(date);
            (month, day) = (m as i32, d as i32);
        }
    }
    if weekday.is_none() {
        py_date(year, month, day)?;
    }
    if leap_year_fix {
        year = 1900;
    }
    f.datetime(py_date(year, month, day)?)
}

impl Fields {
    /// `datetime(...)` on `date`, then `timezone(timedelta(...))`: second 60
    /// and offsets of a day or more are refused.
    fn datetime(&self, date: NaiveDate) -> Option<Recorded> {
        let time = NaiveTime::from_hms_micro_opt(
            u32::try_from(self.hour).ok()?,
            u32::try_from(self.minute).ok()?,
            u32::try_from(self.second).ok().filter(|s| *s <= 59)?,
            u32::try_from(self.fraction).ok()?,
        )?;
        let utc_offset_micros = match self.gmtoff {
            None => None,
            Some((secs, micros)) => {
                let total = i64::from(secs) * 1_000_000 + i64::from(micros);
                if total.abs() >= 86_400_000_000 {
                    return None;
                }
                Some(total)
            }
        };
        Some(Recorded { naive: NaiveDateTime::new(date, time), utc_offset_micros })
    }
}

// --- Conversions and date arithmetic, as `_strptime` and `datetime` do them --

/// `int()` of a matched run of Unicode decimal digits.
fn int_of(s: &str) -> Option<i32> {
    let mut v = 0i32;
    let mut any = false;
    for c in s.chars() {
        v = v.checked_mul(10)?.checked_add(digit_value(c)? as i32)?;
        any = true;
    }
    any.then_some(v)
}

/// Python's `date(year, month, day)`: years 1..=9999 only.
fn py_date(year: i32, month: i32, day: i32) -> Option<NaiveDate> {
    if !(1..=9999).contains(&year) {
        return None;
    }
    civil::from_ymd(year, u32::try_from(month).ok()?, u32::try_from(day).ok()?)
}

/// Python's `date.toordinal()`.
fn ordinal(d: NaiveDate) -> i32 {
    d.num_days_from_ce()
}

/// Python's `date.fromordinal(n)`, for the `n` here: a day of a year from
/// 1 on, so at least 1; a year past 9999 is refused by [`py_date`] after.
fn from_ordinal(n: i32) -> Option<NaiveDate> {
    NaiveDate::from_num_days_from_ce_opt(n)
}

/// `_strptime._calc_julian_from_U_or_W`.
fn julian_from_u_or_w(year: i32, week: i32, day_of_week: i32, starts_mon: bool) -> Option<i32> {
    let mut first = py_date(year, 1, 1)?.weekday().num_days_from_monday() as i32;
    let mut dow = day_of_week;
    if !starts_mon {
        first = (first + 1) % 7;
        dow = (dow + 1) % 7;
    }
    let week0_len = (7 - first) % 7;
    Some(if week == 0 { 1 + dow - first } else { 1 + week0_len + 7 * (week - 1) + dow })
}

/// `_strptime._calc_julian_from_V`, without its step into the year before
/// for a day before the ISO year's January 1st: [`resolve_date`] takes that
/// step for every day of the year below 1, to the same day.
fn julian_from_v(iso_year: i32, iso_week: i32, iso_weekday: i32) -> Option<i32> {
    let correction = py_date(iso_year, 1, 4)?.weekday().number_from_monday() as i32 + 3;
    Some(iso_week * 7 + iso_weekday - correction)
}

/// The `%z` group: seconds and microseconds east of UTC, following
/// `_strptime` character by character (its `ValueError`s give `None`).
fn parse_z(z: &str) -> Option<(i32, i32)> {
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
    let num = |cs: &[char; 16], a: usize, b: usize| -> Option<i32> {
        let mut v = 0i32;
        for c in cs.get(a..b.min(n))? {
            v = v * 10 + digit_value(*c)? as i32;
        }
        (b.min(n) > a).then_some(v)
    };
    let hours = num(&cs, 1, 3)?;
    let minutes = num(&cs, 3, 5)?;
    let seconds = if n > 5 { num(&cs, 5, 7)? } else { 0 };
    let mut fraction = 0i32;
    let mut scale = 100_000i32;
    for c in cs.get(8..n).unwrap_or(&[]) {
        fraction += digit_value(*c)? as i32 * scale;
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

fn abbrev_index(list: &[&str], s: &str) -> Option<usize> {
    list.iter().position(|n| n.get(..3).is_some_and(|a| a.eq_ignore_ascii_case(s)) && s.len() == 3)
}

#[cfg(test)]
mod tests {
    //! Expected values are CPython 3.11's own outputs (tzdata 2025.2,
    //! `LC_TIME=C`, `zoneinfo.reset_tzpath(to=[])`).
    extern crate std;

    use proptest::prelude::*;
    use std::string::String;

    use super::*;
    use crate::clock::Timestamp;
    use crate::reference::SplitMix;
    use crate::time::tests::{iso, zone_strategy};
    use crate::time::{format_time, local_naive, parse_time, Zone};

    /// Text, format, and Python's result (wall time, UTC offset in µs).
    type ParseCase = (&'static str, &'static str, Option<(&'static str, Option<i64>)>);

    fn assert_parse_cases(cases: &[ParseCase]) {
        for (text, fmt, want) in cases {
            let got = parse_time(text, fmt).map(|r| (iso(r.naive), r.utc_offset_micros));
            let want = want.map(|(n, o)| (String::from(n), o));
            assert_eq!(got, want, "{text:?} {fmt:?}");
        }
    }

    #[test]
    fn full_month_names_parse() {
        let got = parse_time("5 march 2026", "%d %B %Y").map(|r| iso(r.naive));
        assert_eq!(got.as_deref(), Some("2026-03-05T00:00:00.000000"));
        assert_eq!(parse_time("5 Mar 2026", "%d %B %Y"), None);
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
        assert_parse_cases(cases);
    }

    /// The date arithmetic: weekdays by name and number inside a week, the
    /// week 0 that starts in the year before (leap or not, by each of the
    /// leap rules), ISO weeks, `%j` without a year, `%p` in the afternoon,
    /// and offsets with fractions.
    #[test]
    fn weeks_days_and_offsets_resolve_like_python() {
        let cases: &[ParseCase] = &[
            ("2026 10 Sunday", "%Y %U %A", Some(("2026-03-08T00:00:00.000000", None))),
            ("2026 10 wednesday", "%Y %W %A", Some(("2026-03-11T00:00:00.000000", None))),
            ("2026 10 3", "%Y %U %w", Some(("2026-03-11T00:00:00.000000", None))),
            ("2026 10 Wed", "%Y %U %a", Some(("2026-03-11T00:00:00.000000", None))),
            ("2026 00 6", "%Y %U %w", Some(("2026-01-03T00:00:00.000000", None))),
            ("2026 01 0", "%Y %U %w", Some(("2026-01-04T00:00:00.000000", None))),
            ("2026 05 4", "%Y %W %u", Some(("2026-02-05T00:00:00.000000", None))),
            ("2026 05 4", "%Y %U %u", Some(("2026-02-05T00:00:00.000000", None))),
            // Week 0 reaching into a leap year (2024, 2000) and a common one (1900).
            ("2025 00 1", "%Y %W %u", Some(("2024-12-30T00:00:00.000000", None))),
            ("2001 00 0", "%Y %U %w", Some(("2000-12-31T00:00:00.000000", None))),
            ("1901 00 1", "%Y %W %u", Some(("1900-12-31T00:00:00.000000", None))),
            ("2000 00 0", "%Y %U %w", Some(("1999-12-26T00:00:00.000000", None))),
            ("2001 00 1", "%Y %U %w", Some(("2001-01-01T00:00:00.000000", None))),
            ("0001 00 0", "%Y %U %w", None),
            ("0001 01 1", "%Y %W %u", Some(("0001-01-01T00:00:00.000000", None))),
            ("0001 01 0", "%Y %U %w", Some(("0001-01-07T00:00:00.000000", None))),
            ("9999 52 5", "%Y %W %u", Some(("9999-12-31T00:00:00.000000", None))),
            ("9999 53 5", "%Y %W %u", None),
            ("3 PM 2026-01-01", "%I %p %Y-%m-%d", Some(("2026-01-01T15:00:00.000000", None))),
            ("11 pm", "%I %p", Some(("1900-01-01T23:00:00.000000", None))),
            ("2026-W10-7", "%G-W%V-%u", Some(("2026-03-08T00:00:00.000000", None))),
            ("2026-W10", "%G-W%V", None),
            ("2026-W10-7 100", "%G-W%V-%u %j", None),
            ("2026-W01-1", "%G-W%V-%u", Some(("2025-12-29T00:00:00.000000", None))),
            ("2021-W01-1", "%G-W%V-%u", Some(("2021-01-04T00:00:00.000000", None))),
            ("2021-W53-7", "%G-W%V-%u", Some(("2022-01-09T00:00:00.000000", None))),
            ("2027-W01-3", "%G-W%V-%u", Some(("2027-01-06T00:00:00.000000", None))),
            ("0001-W01-1", "%G-W%V-%u", Some(("0001-01-01T00:00:00.000000", None))),
            ("9999-W52-5", "%G-W%V-%u", Some(("9999-12-31T00:00:00.000000", None))),
            ("9999-W53-1", "%G-W%V-%u", None),
            // Without a year, `%j` counts in 1900, whatever the month and day.
            ("02-01 100", "%m-%d %j", Some(("1900-04-10T00:00:00.000000", None))),
            ("02-28 100", "%m-%d %j", Some(("1900-04-10T00:00:00.000000", None))),
            ("5 MARCH 2026", "%d %B %Y", Some(("2026-03-05T00:00:00.000000", None))),
            ("5 january 2026", "%d %B %Y", Some(("2026-01-05T00:00:00.000000", None))),
            (
                "2026-03-08 02:05:09 +010000.25",
                "%Y-%m-%d %H:%M:%S %z",
                Some(("2026-03-08T02:05:09.000000", Some(3600250000))),
            ),
            (
                "2026-03-08 02:05:09 -010000.5",
                "%Y-%m-%d %H:%M:%S %z",
                Some(("2026-03-08T02:05:09.000000", Some(-3600500000))),
            ),
            (
                "2026-03-08 02:05:09 +01:00:00.123456",
                "%Y-%m-%d %H:%M:%S %z",
                Some(("2026-03-08T02:05:09.000000", Some(3600123456))),
            ),
            (
                "2026-03-08 02:05:09 +0530",
                "%Y-%m-%d %H:%M:%S %z",
                Some(("2026-03-08T02:05:09.000000", Some(19800000000))),
            ),
        ];
        assert_parse_cases(cases);
    }

    /// Reads `TEXT\tFORMAT` lines; answers each with `datetime.strptime`'s
    /// wall time and offset in µs (`-` for none), or `None` where it raises.
    const STRPTIME: &str = r#"
import sys
from datetime import datetime
out = []
for line in sys.stdin.read().split("\n")[:-1]:
    text, fmt = line.split("\t")
    try:
        d = datetime.strptime(text, fmt)
    except Exception:
        out.append("None")
        continue
    off = d.utcoffset()
    us = "-" if off is None else str((off.days * 86400 + off.seconds) * 10**6 + off.microseconds)
    out.append(d.replace(tzinfo=None).isoformat(timespec="microseconds") + " " + us)
sys.stdout.write("\n".join(out) + "\n")
"#;

    /// One directive's text: a value in (or near) its range, padded or not,
    /// so that adjacent directives are ambiguous and the matcher backtracks.
    fn directive_text(rng: &mut SplitMix, d: char, out: &mut String) {
        use std::fmt::Write as _;
        let names = |list: &[&str], rng: &mut SplitMix, full: bool| {
            let n = list[rng.below(list.len() as u64) as usize];
            let n = if full { n } else { &n[..3] };
            if rng.below(2) == 0 {
                n.to_uppercase()
            } else {
                n.to_lowercase()
            }
        };
        let number = |rng: &mut SplitMix, lo: i64, hi: i64, width: usize| {
            let v = rng.range(lo, hi + 1);
            match rng.below(3) {
                0 => std::format!("{v}"),
                1 if width == 2 && v < 10 => std::format!(" {v}"),
                _ => std::format!("{v:0width$}"),
            }
        };
        let t = match d {
            'd' => number(rng, 0, 32, 2),
            'm' => number(rng, 0, 13, 2),
            'H' => number(rng, 0, 24, 2),
            'I' => number(rng, 0, 13, 2),
            'M' | 'S' => number(rng, 0, 61, 2),
            'j' => number(rng, 0, 367, 3),
            'U' | 'W' | 'V' => number(rng, 0, 54, 2),
            'w' => number(rng, 0, 7, 1),
            'u' => number(rng, 0, 8, 1),
            'y' => number(rng, 0, 99, 2),
            'Y' | 'G' => number(rng, 1, 9999, 4),
            'f' => {
                let width = 1 + rng.below(6) as usize;
                number(rng, 0, 10i64.pow(width as u32) - 1, width)
            }
            'p' => String::from(["AM", "pm", "Am", "PM"][rng.below(4) as usize]),
            'b' => names(&MONTHS, rng, false),
            'B' => names(&MONTHS, rng, true),
            'a' => names(&WEEKDAYS, rng, false),
            'A' => names(&WEEKDAYS, rng, true),
            _ => {
                // 'z': every spelling `_strptime` takes, and near misses.
                let sign = if rng.below(2) == 0 { '+' } else { '-' };
                let (h, m, sec) = (rng.range(0, 25), rng.range(0, 60), rng.range(0, 60));
                match rng.below(5) {
                    0 => String::from("Z"),
                    1 => std::format!("{sign}{h:02}{m:02}"),
                    2 => std::format!("{sign}{h:02}:{m:02}"),
                    3 => std::format!("{sign}{h:02}:{m:02}:{sec:02}"),
                    _ => std::format!("{sign}{h:02}{m:02}{sec:02}.{}", rng.range(0, 1000)),
                }
            }
        };
        let _ = write!(out, "{t}");
    }

    /// Random formats of two to six distinct directives, adjacent or with
    /// separators, and texts built for them (some with a character changed
    /// or dropped), against CPython 3.11's `strptime`: 4,000 cases.
    #[test]
    fn ambiguous_texts_parse_like_python_strptime() {
        const DIRECTIVES: &[char] = &[
            'd', 'f', 'H', 'I', 'j', 'm', 'M', 'S', 'U', 'W', 'V', 'w', 'u', 'y', 'Y', 'G', 'z',
            'p', 'b', 'B', 'a', 'A',
        ];
        const SEPARATORS: &[&str] = &["", "", "", " ", "  ", "-", ":"];
        let mut rng = SplitMix(0x5714_9713);
        let mut cases = std::vec::Vec::new();
        let mut input = String::new();
        while cases.len() < 4_000 {
            let (mut fmt, mut text) = (String::new(), String::new());
            let mut used = std::vec::Vec::new();
            for _ in 0..2 + rng.below(5) {
                let d = DIRECTIVES[rng.below(DIRECTIVES.len() as u64) as usize];
                if used.contains(&d) {
                    continue;
                }
                used.push(d);
                let sep = SEPARATORS[rng.below(SEPARATORS.len() as u64) as usize];
                fmt += sep;
                text += if rng.below(8) == 0 { " " } else { sep };
                fmt.push('%');
                fmt.push(d);
                directive_text(&mut rng, d, &mut text);
            }
            if rng.below(10) == 0 && !text.is_empty() {
                let at = text
                    .char_indices()
                    .nth(rng.below(text.chars().count() as u64) as usize)
                    .map_or(0, |(i, _)| i);
                let c = text[at..].chars().next().unwrap();
                let with = ["", "1", " ", "0"][rng.below(4) as usize];
                text.replace_range(at..at + c.len_utf8(), with);
            }
            input += &std::format!("{text}\t{fmt}\n");
            cases.push((text, fmt));
        }
        let Some(answers) = crate::reference::answers(STRPTIME, &input) else { return };
        let (mut mismatches, mut parsed) = (std::vec::Vec::new(), 0);
        for ((text, fmt), want) in cases.iter().zip(&answers) {
            let got = match parse_time(text, fmt) {
                None => String::from("None"),
                Some(r) => std::format!(
                    "{} {}",
                    iso(r.naive),
                    r.utc_offset_micros.map_or(String::from("-"), |o| std::format!("{o}"))
                ),
            };
            parsed += usize::from(want != "None");
            if got != *want {
                mismatches.push(std::format!("{text:?} {fmt:?}: {got}, Python {want}"));
            }
        }
        assert!(
            mismatches.is_empty(),
            "{} of {}:\n{}",
            mismatches.len(),
            cases.len(),
            mismatches[..mismatches.len().min(20)].join("\n")
        );
        // The cases must reach the date arithmetic, not only fail to match.
        assert!(parsed > cases.len() / 4, "only {parsed} parsed");
        std::println!("{parsed} of {} parsed, as Python does", cases.len());
    }

    proptest! {
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
