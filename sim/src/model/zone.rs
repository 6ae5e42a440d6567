//! The model's zones: chrono-tz up to 2099, and past it each zone's final
//! recurring rule, which Python's `zoneinfo` applies (from the TZif footer)
//! up to year 9999.
//!
//! chrono-tz's data stops in 2099 and then holds the last offset forever,
//! so a long fuzz run that walks past 2099 would compare the core (which
//! applies the final rules) with a model that is wrong. The rules below are
//! the POSIX TZ strings of `core/tz-final-rules.txt` (derived from the IANA
//! source by `tests/tests/tz_final_rules.rs`) written out as data, and the
//! arithmetic is chrono's calendar, not the core's `zone_rules` code: the
//! model stays independent. A test checks the rules against chrono-tz over
//! 2070–2099, where both must agree.

use std::fmt;

use chrono::{
    Datelike, FixedOffset, MappedLocalTime, NaiveDate, NaiveDateTime, Offset, TimeZone, Weekday,
};
use chrono_tz::Tz;

/// A POSIX `Mm.w.d/time` transition: the `week`th (5: last) `weekday` of
/// `month`, at `secs` of local time in the offset in force before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Transition {
    month: u32,
    week: u32,
    weekday: Weekday,
    secs: i64,
}

/// A zone's final rule: standard and daylight offsets (seconds east of
/// UTC) and when daylight time starts and ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rule {
    std: i32,
    dst: i32,
    start: Transition,
    end: Transition,
}

const fn at(month: u32, week: u32, secs: i64) -> Transition {
    Transition { month, week, weekday: Weekday::Sun, secs }
}

/// `EST5EDT,M3.2.0,M11.1.0`
const NEW_YORK: Rule =
    Rule { std: -5 * 3600, dst: -4 * 3600, start: at(3, 2, 7200), end: at(11, 1, 7200) };
/// `CET-1CEST,M3.5.0,M10.5.0/3`
const BERLIN: Rule = Rule { std: 3600, dst: 7200, start: at(3, 5, 7200), end: at(10, 5, 10800) };
/// `<+1030>-10:30<+11>-11,M10.1.0,M4.1.0`
const LORD_HOWE: Rule =
    Rule { std: 37800, dst: 39600, start: at(10, 1, 7200), end: at(4, 1, 7200) };

/// The first year chrono-tz has no data for.
const RULES_FROM: i32 = 2100;

/// The final rule of the model's zones that keep daylight saving; the
/// others keep one offset past 2099, which chrono-tz already gives.
fn final_rule(name: &str) -> Option<&'static Rule> {
    match name {
        "America/New_York" => Some(&NEW_YORK),
        "Europe/Berlin" => Some(&BERLIN),
        "Australia/Lord_Howe" => Some(&LORD_HOWE),
        _ => None,
    }
}

impl Transition {
    /// The local wall time of the transition in `year`.
    fn local(&self, year: i32) -> NaiveDateTime {
        let first = NaiveDate::from_ymd_opt(year, self.month, 1).expect("month in range");
        let lead =
            (7 + self.weekday.num_days_from_sunday() - first.weekday().num_days_from_sunday()) % 7;
        let mut day = first + chrono::Duration::days(i64::from(lead + 7 * (self.week - 1)));
        while day.month() != self.month {
            // Week 5 means the last such weekday.
            day -= chrono::Duration::days(7);
        }
        day.and_time(chrono::NaiveTime::MIN) + chrono::Duration::seconds(self.secs)
    }
}

impl Rule {
    /// The offset in force at the UTC instant `utc`.
    pub(super) fn offset_at(&self, utc: &NaiveDateTime) -> i32 {
        let year = utc.year();
        let start = self.start.local(year) - chrono::Duration::seconds(self.std.into());
        let end = self.end.local(year) - chrono::Duration::seconds(self.dst.into());
        let dst =
            if start < end { start <= *utc && *utc < end } else { !(end <= *utc && *utc < start) };
        if dst {
            self.dst
        } else {
            self.std
        }
    }

    /// The offsets under which `local` is a wall time of the zone: two when
    /// it is repeated (the earlier instant first), none when it is skipped.
    pub(super) fn offsets_of_local(&self, local: &NaiveDateTime) -> MappedLocalTime<i32> {
        let fits = |offset: i32| {
            self.offset_at(&(*local - chrono::Duration::seconds(offset.into()))) == offset
        };
        match (fits(self.dst), fits(self.std)) {
            (true, true) => MappedLocalTime::Ambiguous(self.dst, self.std),
            (true, false) => MappedLocalTime::Single(self.dst),
            (false, true) => MappedLocalTime::Single(self.std),
            (false, false) => MappedLocalTime::None,
        }
    }
}

/// A zone as the model reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ModelTz {
    tz: Tz,
    rule: Option<&'static Rule>,
}

impl ModelTz {
    /// The zone named `name`, if chrono-tz knows it.
    pub(super) fn named(name: &str) -> Option<ModelTz> {
        name.parse::<Tz>().ok().map(|tz| ModelTz { tz, rule: final_rule(name) })
    }

    fn offset(self, seconds: i32) -> ModelOffset {
        ModelOffset { zone: self, fixed: FixedOffset::east_opt(seconds).expect("offset in range") }
    }
}

/// An offset of a [`ModelTz`] (chrono asks an offset for its zone back).
#[derive(Debug, Clone, Copy)]
pub(super) struct ModelOffset {
    zone: ModelTz,
    fixed: FixedOffset,
}

impl Offset for ModelOffset {
    fn fix(&self) -> FixedOffset {
        self.fixed
    }
}

impl fmt::Display for ModelOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.fixed, f)
    }
}

impl TimeZone for ModelTz {
    type Offset = ModelOffset;

    fn from_offset(offset: &ModelOffset) -> Self {
        offset.zone
    }

    fn offset_from_local_date(&self, local: &NaiveDate) -> MappedLocalTime<ModelOffset> {
        self.offset_from_local_datetime(&local.and_time(chrono::NaiveTime::MIN))
    }

    fn offset_from_local_datetime(&self, local: &NaiveDateTime) -> MappedLocalTime<ModelOffset> {
        match self.rule {
            Some(rule) if local.year() >= RULES_FROM => {
                rule.offsets_of_local(local).map(|s| self.offset(s))
            }
            _ => self
                .tz
                .offset_from_local_datetime(local)
                .map(|o| self.offset(o.fix().local_minus_utc())),
        }
    }

    fn offset_from_utc_date(&self, utc: &NaiveDate) -> ModelOffset {
        self.offset_from_utc_datetime(&utc.and_time(chrono::NaiveTime::MIN))
    }

    fn offset_from_utc_datetime(&self, utc: &NaiveDateTime) -> ModelOffset {
        match self.rule {
            Some(rule) if utc.year() >= RULES_FROM => self.offset(rule.offset_at(utc)),
            _ => self.offset(self.tz.offset_from_utc_datetime(utc).fix().local_minus_utc()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULED: [&str; 3] = ["America/New_York", "Europe/Berlin", "Australia/Lord_Howe"];

    fn utc(s: &str) -> NaiveDateTime {
        s.parse().expect("a date")
    }

    /// Where chrono-tz has data, the final rules give its answers: every
    /// 45 minutes (so every quarter hour of the day in turn) of 2070–2099,
    /// from UTC and from local time (repeated and skipped wall times alike).
    #[test]
    fn final_rules_agree_with_chrono_tz_before_2100() {
        for name in RULED {
            let tz: Tz = name.parse().expect("a zone");
            let rule = final_rule(name).expect("a rule");
            let mut t = utc("2070-01-01T00:00:00");
            while t.year() < RULES_FROM {
                assert_eq!(
                    rule.offset_at(&t),
                    tz.offset_from_utc_datetime(&t).fix().local_minus_utc(),
                    "{name} at {t}Z"
                );
                let ours = rule.offsets_of_local(&t);
                let theirs = tz.offset_from_local_datetime(&t).map(|o| o.fix().local_minus_utc());
                assert_eq!(ours, theirs, "{name} at local {t}");
                t += chrono::Duration::minutes(45);
            }
        }
    }

    /// Past 2099 the rules go on where chrono-tz stops: New York still
    /// springs forward in 2100 and 9999, Lord Howe still falls back.
    #[test]
    fn past_2099_the_rules_go_on() {
        let ny = ModelTz::named("America/New_York").expect("a zone");
        let offset =
            |z: ModelTz, s: &str| z.offset_from_utc_datetime(&utc(s)).fix().local_minus_utc();
        // 2100-03-14 is the second Sunday of March.
        assert_eq!(offset(ny, "2100-03-14T06:59:59"), -5 * 3600);
        assert_eq!(offset(ny, "2100-03-14T07:00:00"), -4 * 3600);
        assert_eq!(offset(ny, "9999-07-01T00:00:00"), -4 * 3600);
        assert_eq!(offset(ny, "9999-12-31T00:00:00"), -5 * 3600);
        let tz: Tz = "America/New_York".parse().expect("a zone");
        assert_eq!(
            tz.offset_from_utc_datetime(&utc("2100-07-01T00:00:00")).fix().local_minus_utc(),
            -5 * 3600,
            "chrono-tz stops"
        );
        let lh = ModelTz::named("Australia/Lord_Howe").expect("a zone");
        assert_eq!(offset(lh, "2150-01-15T00:00:00"), 39600);
        assert_eq!(offset(lh, "2150-06-15T00:00:00"), 37800);
        // Berlin 2100-10-31 02:30 is repeated: the earlier instant is CEST.
        let berlin = ModelTz::named("Europe/Berlin").expect("a zone");
        match berlin.from_local_datetime(&utc("2100-10-31T02:30:00")) {
            MappedLocalTime::Ambiguous(a, b) => {
                assert_eq!(
                    (a.offset().fix().local_minus_utc(), b.offset().fix().local_minus_utc()),
                    (7200, 3600)
                )
            }
            other => panic!("not repeated: {other:?}"),
        }
        assert!(
            berlin.from_local_datetime(&utc("2100-03-28T02:30:00")).single().is_none(),
            "skipped"
        );
    }
}
