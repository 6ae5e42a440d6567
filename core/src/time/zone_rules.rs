//! Zone rules past 2099, as Python's `zoneinfo` applies them.
//!
//! chrono-tz's tables end in 2099 and keep the last offset after that. Python
//! reads each zone's final recurring rule from its TZif footer (a POSIX TZ
//! string such as `CET-1CEST,M3.5.0,M10.5.0/3`) and applies it up to year
//! 9999. `core/tz-final-rules.txt` holds that rule for every name with
//! daylight saving past 2099 (derived from chrono-tz's own tz source), and the
//! build script compiles in the ones the build's zone filter keeps. From 2100
//! on, [`crate::time`] asks here first.
//!
//! Zones without daylight saving past 2099 are not listed: chrono-tz's last
//! offset and abbreviation are already zoneinfo's.

use chrono::{Datelike, NaiveDateTime};
use chrono_tz::Tz;

/// The first year the rules replace chrono-tz's tables.
const FIRST_YEAR: i32 = 2100;

/// When a rule's clock change happens: weekday `weekday` (0 = Sunday) of
/// week `week` (5 = the last) of `month`, at `time` seconds after local
/// midnight (may be negative or past 24 hours), in the wall clock of the
/// offset in force before the change.
#[derive(Clone, Copy, Debug)]
struct Change {
    month: u8,
    week: u8,
    weekday: u8,
    time: i32,
}

/// A zone's final rule. "Daylight" is the offset `start` switches to; it is
/// smaller than the standard one where daylight saving is negative (Dublin).
#[derive(Clone, Copy, Debug)]
struct Rule {
    std_offset: i32,
    dst_offset: i32,
    std_abbr: &'static str,
    dst_abbr: &'static str,
    start: Change,
    end: Change,
}

include!(concat!(env!("OUT_DIR"), "/zone_rules.rs"));

/// Days from 1970-01-01 to the given date of the proleptic Gregorian
/// calendar, for years 1..=262,143 (chrono's range; 32-bit arithmetic keeps
/// it small on a Cortex-M).
fn days_from_civil(year: i32, month: u8, day: i32) -> i32 {
    let y = if month <= 2 { year - 1 } else { year };
    let (era, yoe) = (y / 400, y % 400);
    let mp = (i32::from(month) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468
}

impl Change {
    /// The change in `year`, as seconds of local wall time since 1970-01-01
    /// (`_CalendarOffset.year_to_epoch`).
    fn local_seconds(self, year: i32) -> i64 {
        let first = days_from_civil(year, self.month, 1);
        let next = if self.month == 12 {
            days_from_civil(year + 1, 1, 1)
        } else {
            days_from_civil(year, self.month + 1, 1)
        };
        // 1970-01-01 was a Thursday.
        let mut day =
            (i32::from(self.weekday) - (first + 4)).rem_euclid(7) + 7 * (i32::from(self.week) - 1);
        if day >= next - first {
            day -= 7;
        }
        i64::from(first + day) * 86_400 + i64::from(self.time)
    }
}

impl Rule {
    /// Whether the UTC second `ts` of UTC year `year` falls in daylight
    /// saving (`_TZStr._get_trans_info_fromutc`).
    fn daylight_at_utc(&self, ts: i64, year: i32) -> bool {
        let start = self.start.local_seconds(year) - i64::from(self.std_offset);
        let end = self.end.local_seconds(year) - i64::from(self.dst_offset);
        within(ts, start, end)
    }

    /// Whether the local wall second `ts` of year `year` reads as daylight
    /// saving with `fold=0` (`_TZStr._get_trans_info`): a repeated wall time
    /// takes the offset before the change (the earlier instant), a skipped
    /// one the offset before the gap.
    fn daylight_at_local(&self, ts: i64, year: i32) -> bool {
        let (mut start, mut end) = (self.start.local_seconds(year), self.end.local_seconds(year));
        let diff = i64::from(self.dst_offset) - i64::from(self.std_offset);
        if diff < 0 {
            end -= diff;
        } else {
            start += diff;
        }
        within(ts, start, end)
    }
}

/// `start <= ts < end`, the interval wrapping around the year's end when
/// `end` comes first (the southern hemisphere, Dublin).
fn within(ts: i64, start: i64, end: i64) -> bool {
    if start < end {
        start <= ts && ts < end
    } else {
        !(end <= ts && ts < start)
    }
}

fn rule_of(tz: Tz) -> Option<&'static Rule> {
    let name = tz.name();
    let i = NAMES.binary_search_by(|(n, _)| (*n).cmp(name)).ok()?;
    NAMES.get(i).and_then(|(_, r)| RULES.get(usize::from(*r)))
}

/// The UTC offset (seconds east) and `%Z` of `tz` at the UTC instant `utc`,
/// from the zone's final rule, when `utc` is in 2100 or later and the zone
/// has daylight saving then; `None` where chrono-tz's tables answer.
pub(crate) fn at_utc(tz: Tz, utc: &NaiveDateTime) -> Option<(i32, &'static str)> {
    if utc.year() < FIRST_YEAR {
        return None;
    }
    let rule = rule_of(tz)?;
    Some(if rule.daylight_at_utc(utc.and_utc().timestamp(), utc.year()) {
        (rule.dst_offset, rule.dst_abbr)
    } else {
        (rule.std_offset, rule.std_abbr)
    })
}

/// The UTC offset `tz` gives the wall time `local` with `fold=0`, from the
/// zone's final rule, when `local` is in 2100 or later and the zone has
/// daylight saving then; `None` where chrono-tz's tables answer.
pub(crate) fn offset_for_local(tz: Tz, local: &NaiveDateTime) -> Option<i32> {
    if local.year() < FIRST_YEAR {
        return None;
    }
    let rule = rule_of(tz)?;
    Some(if rule.daylight_at_local(local.and_utc().timestamp(), local.year()) {
        rule.dst_offset
    } else {
        rule.std_offset
    })
}

#[cfg(test)]
mod tests {
    // The comparisons with zoneinfo read `%z` and `%Z`: without
    // `custom-time-format` only the calendar test runs.
    #![cfg_attr(not(feature = "custom-time-format"), allow(dead_code, unused_imports))]

    use std::string::{String, ToString};
    use std::vec::Vec;
    use std::{format, println};

    use chrono::{DateTime, NaiveDateTime, Timelike};

    use super::*;
    use crate::clock::Timestamp;
    use crate::reference::SplitMix;
    use crate::time::{format_time, local_naive, local_to_timestamp, resolve_zone, Zone};

    fn named(name: &str) -> Tz {
        match resolve_zone(name) {
            Some(Zone::Named(tz)) => tz,
            other => panic!("{name}: {other:?}"),
        }
    }

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    /// Local wall time, `%z` and `%Z` at a UTC instant, as the core formats them.
    fn show(name: &str, utc: &str) -> String {
        let mut out = String::new();
        let ts = Timestamp::from_unix_seconds(at(utc).and_utc().timestamp());
        format_time(&mut out, "%Y-%m-%d %H:%M:%S %z %Z", ts, Zone::Named(named(name))).unwrap();
        out
    }

    /// The instant (as UTC) a wall time denotes with `fold=0`.
    fn instant(name: &str, local: &str) -> String {
        let ts = local_to_timestamp(at(local), Zone::Named(named(name)));
        DateTime::from_timestamp_micros(ts.unix_micros()).unwrap().naive_utc().to_string()
    }

    #[test]
    fn calendar_arithmetic_matches_chrono() {
        use chrono::NaiveDate;
        let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
        for (y, m, d) in [
            (1970, 1, 1),
            (2000, 2, 29),
            (2100, 1, 31),
            (2100, 2, 28),
            (2100, 3, 1),
            (2400, 2, 29),
            (9999, 12, 31),
        ] {
            let date = NaiveDate::from_ymd_opt(y, u32::from(m), d as u32).unwrap();
            assert_eq!(i64::from(days_from_civil(y, m, d)), (date - epoch).num_days(), "{date}");
        }
        // The last Sunday of a December (no zone changes then today), and
        // the first Monday of a January, at 02:00.
        let last_sunday = Change { month: 12, week: 5, weekday: 0, time: 7200 };
        assert_eq!(
            last_sunday.local_seconds(2100),
            at("2100-12-26 02:00:00").and_utc().timestamp()
        );
        // December 2109 starts on a Sunday: its fifth is still in December.
        assert_eq!(
            last_sunday.local_seconds(2109),
            at("2109-12-29 02:00:00").and_utc().timestamp()
        );
        let first_monday = Change { month: 1, week: 1, weekday: 1, time: 7200 };
        assert_eq!(
            first_monday.local_seconds(2101),
            at("2101-01-03 02:00:00").and_utc().timestamp()
        );
    }

    #[cfg(feature = "custom-time-format")]
    #[test]
    fn known_changes_past_2099_match_zoneinfo() {
        // Each from Python 3.11's zoneinfo, tzdata 2025.2.
        assert_eq!(
            show("America/New_York", "2100-07-01 12:00:00"),
            "2100-07-01 08:00:00 -0400 EDT"
        );
        assert_eq!(
            show("America/New_York", "2100-03-14 06:59:59"),
            "2100-03-14 01:59:59 -0500 EST"
        );
        assert_eq!(
            show("America/New_York", "2100-03-14 07:00:00"),
            "2100-03-14 03:00:00 -0400 EDT"
        );
        assert_eq!(show("Europe/Dublin", "2150-01-15 12:00:00"), "2150-01-15 12:00:00 +0000 GMT");
        assert_eq!(show("Europe/Dublin", "2150-07-15 12:00:00"), "2150-07-15 13:00:00 +0100 IST");
        assert_eq!(
            show("Antarctica/Troll", "9999-06-01 00:00:00"),
            "9999-06-01 02:00:00 +0200 +02"
        );
        assert_eq!(
            show("America/Sao_Paulo", "2100-01-01 00:00:00"),
            "2099-12-31 21:00:00 -0300 -03"
        );
        // Gaps take the offset before them, repeated times the earlier instant.
        assert_eq!(instant("America/New_York", "2100-03-14 02:30:00"), "2100-03-14 07:30:00");
        assert_eq!(instant("America/New_York", "2100-11-07 01:30:00"), "2100-11-07 05:30:00");
        assert_eq!(instant("Europe/Dublin", "2100-03-28 01:30:00"), "2100-03-28 01:30:00");
        assert_eq!(instant("Europe/Dublin", "2100-10-31 01:30:00"), "2100-10-31 00:30:00");
        assert_eq!(instant("America/Santiago", "2100-09-05 00:30:00"), "2100-09-05 04:30:00");
        assert_eq!(instant("America/Santiago", "2100-04-03 23:30:00"), "2100-04-04 02:30:00");
        assert_eq!(instant("Australia/Lord_Howe", "2100-04-04 01:45:00"), "2100-04-03 14:45:00");
    }

    // --- Against Python's zoneinfo -------------------------------------------

    fn iso(t: &NaiveDateTime) -> String {
        let (d, us) = (t.date(), t.nanosecond() / 1000);
        format!("{d}T{:02}:{:02}:{:02}.{us:06}", t.hour(), t.minute(), t.second())
    }

    /// Reads `u NAME MICROS` (a UTC instant) or `l NAME WALL` (a wall time)
    /// lines and answers each with what zoneinfo gives.
    const ZONEINFO: &str = r#"
import sys, zoneinfo
from datetime import datetime, timedelta, timezone
zoneinfo.reset_tzpath(to=[])
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
US = timedelta(microseconds=1)
out, zones = [], {}
for line in sys.stdin:
    kind, name, value = line.split()
    # Held here: zoneinfo's own cache keeps only 8 zones alive.
    tz = zones.get(name) or zones.setdefault(name, zoneinfo.ZoneInfo(name))
    if kind == "u":
        t = (EPOCH + int(value) * US).astimezone(tz)
        out.append(t.strftime("%Y-%m-%dT%H:%M:%S.%f %z %Z") + (" dst" if t.dst() else " -"))
    else:
        t = datetime.fromisoformat(value).replace(tzinfo=tz)
        off0, off1 = t.utcoffset(), t.replace(fold=1).utcoffset()
        out.append(f"{(t - EPOCH) // US} {'gap' if off1 > off0 else 'fold' if off1 < off0 else '-'}")
sys.stdout.write("\n".join(out) + "\n")
"#;

    enum Case {
        Utc(&'static str, i64),
        Wall(&'static str, NaiveDateTime),
    }

    /// Random instants and wall times in 2100–9999, half of them within three
    /// hours of a clock change (gaps and folds), in every zone; a few around
    /// the 2099/2100 seam.
    fn cases(n: usize, seed: u64) -> Vec<Case> {
        let mut rng = SplitMix(seed);
        let secs = |s: &str| at(s).and_utc().timestamp();
        let (lo, hi) = (secs("2100-01-01 00:00:00"), secs("9999-12-30 00:00:00"));
        let (seam_lo, seam_hi) = (secs("2099-12-25 00:00:00"), secs("2100-01-07 00:00:00"));
        let all = chrono_tz::TZ_VARIANTS;
        (0..n)
            .map(|_| {
                let ruled = rng.below(10) < 7;
                let (name, rule) = if ruled {
                    let (name, r) = NAMES[rng.below(NAMES.len() as u64) as usize];
                    (name, Some(&RULES[usize::from(r)]))
                } else {
                    (all[rng.below(all.len() as u64) as usize].name(), None)
                };
                let micros = rng.range(0, 1_000_000);
                let kind = rng.below(100);
                let wall = kind.is_multiple_of(2);
                // A fifth of the cases near a change fall exactly on it, on
                // the other end of its gap or fold, or a second either side.
                let edge = rule.is_some() && (4..14).contains(&kind);
                let second = match rule {
                    _ if kind < 4 => rng.range(seam_lo, seam_hi),
                    Some(rule) if kind < 54 => {
                        let change = if rng.below(2) == 0 { rule.start } else { rule.end };
                        let shift = if edge {
                            let diff =
                                (i64::from(rule.dst_offset) - i64::from(rule.std_offset)).abs();
                            [-1, 0, 1, diff - 1, diff, diff + 1][rng.below(6) as usize]
                        } else {
                            rng.range(-3 * 3600, 3 * 3600)
                        };
                        let local = change.local_seconds(rng.range(2100, 9999) as i32) + shift;
                        // As a UTC instant: through the offset before the change.
                        let before = if change.month == rule.start.month {
                            rule.std_offset
                        } else {
                            rule.dst_offset
                        };
                        if wall {
                            local
                        } else {
                            local - i64::from(before)
                        }
                    }
                    _ => rng.range(lo, hi),
                };
                let micros = if edge { [0, 999_999][rng.below(2) as usize] } else { micros };
                let micros = second * 1_000_000 + micros;
                if wall {
                    Case::Wall(name, DateTime::from_timestamp_micros(micros).unwrap().naive_utc())
                } else {
                    Case::Utc(name, micros)
                }
            })
            .collect()
    }

    /// Python's answers; `None` when the check skips (no reference Python).
    fn zoneinfo_answers(cases: &[Case]) -> Option<Vec<String>> {
        let mut input = String::new();
        for case in cases {
            match case {
                Case::Utc(name, micros) => input += &format!("u {name} {micros}\n"),
                Case::Wall(name, wall) => input += &format!("l {name} {}\n", iso(wall)),
            }
        }
        // One answer per line, so one per case.
        crate::reference::answers(ZONEINFO, &input)
    }

    /// The core against zoneinfo for 2100–9999: wall time, `%z` and `%Z` of
    /// UTC instants, and the `fold=0` instant of wall times. 40,000 checks by
    /// default; `ENVAWARE_ZONE_CASES=2000000` for a long run by hand.
    #[cfg(feature = "custom-time-format")]
    #[test]
    fn past_2099_matches_python_zoneinfo() {
        let n = std::env::var("ENVAWARE_ZONE_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(40_000);
        let cases = cases(n, 0x2100_9999);
        let Some(answers) = zoneinfo_answers(&cases) else { return };
        let (mut mismatches, mut daylight, mut gaps, mut folds) = (Vec::new(), 0, 0, 0);
        for (case, answer) in cases.iter().zip(&answers) {
            let (got, want) = match case {
                Case::Utc(name, micros) => {
                    let (want, flag) = answer.rsplit_once(' ').unwrap();
                    daylight += usize::from(flag == "dst");
                    let (ts, zone) =
                        (Timestamp::from_unix_micros(*micros), Zone::Named(named(name)));
                    let mut got = String::new();
                    format_time(&mut got, "%Y-%m-%dT%H:%M:%S.%f %z %Z", ts, zone).unwrap();
                    // The wall clock the arithmetic uses must be the one shown.
                    let local = local_naive(ts, zone);
                    let shown = iso(&local);
                    if !got.starts_with(&shown) {
                        got += &format!(" (local_naive {shown})");
                    }
                    (format!("u {name} {micros}: {got}"), format!("u {name} {micros}: {want}"))
                }
                Case::Wall(name, wall) => {
                    let (want, flag) = answer.split_once(' ').unwrap();
                    gaps += usize::from(flag == "gap");
                    folds += usize::from(flag == "fold");
                    let got = local_to_timestamp(*wall, Zone::Named(named(name))).unix_micros();
                    (format!("l {name} {wall}: {got}"), format!("l {name} {wall}: {want}"))
                }
            };
            if got != want {
                mismatches.push(format!("core {got}\n  zoneinfo {want}"));
            }
        }
        println!("{n} checks against zoneinfo: {daylight} instants in daylight saving, {gaps} wall times in gaps, {folds} in folds, {} mismatches", mismatches.len());
        assert!(
            mismatches.is_empty(),
            "{} of {n} differ from zoneinfo, e.g.:\n{}",
            mismatches.len(),
            mismatches[..mismatches.len().min(8)].join("\n")
        );
        // The cases must reach what chrono-tz alone gets wrong.
        if n >= 10_000 {
            assert!(
                daylight > n / 10 && gaps > n / 100 && folds > n / 100,
                "{daylight} daylight, {gaps} gaps, {folds} folds"
            );
        }
    }
}
