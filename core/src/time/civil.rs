//! Month and day of a date through its day of the year, in place of
//! chrono's month–day conversions: those read two tables (1.5 KB of flash
//! on a device) that nothing else needs. chrono still holds the dates.

use chrono::{Datelike, NaiveDate};

/// Days before each month's first in a common year, and the year's length.
const DAYS_BEFORE: [u16; 13] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365];

/// The Gregorian leap rule.
pub(super) fn is_leap(year: i32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// `NaiveDate::from_ymd_opt`: `None` for a month outside 1..=12, a day
/// outside the month, or a year outside chrono's range.
pub(super) fn from_ymd(year: i32, month: u32, day: u32) -> Option<NaiveDate> {
    let m = usize::try_from(month).ok()?.checked_sub(1)?;
    let (before, next) = (u32::from(*DAYS_BEFORE.get(m)?), u32::from(*DAYS_BEFORE.get(m + 1)?));
    let leap = is_leap(year);
    let len = next - before + u32::from(leap && month == 2);
    if day == 0 || day > len {
        return None;
    }
    NaiveDate::from_yo_opt(year, before + day + u32::from(leap && month > 2))
}

/// `(date.month(), date.day())`.
pub(super) fn month_day(date: NaiveDate) -> (u32, u32) {
    let mut ordinal = date.ordinal();
    if is_leap(date.year()) && ordinal > 59 {
        if ordinal == 60 {
            return (2, 29);
        }
        ordinal -= 1;
    }
    // The last month that starts before the day: January at least.
    let month = DAYS_BEFORE.iter().skip(1).take_while(|&&b| u32::from(b) < ordinal).count();
    let before = DAYS_BEFORE.get(month).map_or(0, |&b| u32::from(b));
    (month as u32 + 1, ordinal - before)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every day of chrono's range within Python's years, and the edges.
    #[test]
    fn agrees_with_chrono_on_every_date() {
        let mut date = NaiveDate::from_ymd_opt(1, 1, 1).unwrap();
        let end = NaiveDate::from_ymd_opt(9999, 12, 31).unwrap();
        loop {
            assert_eq!(month_day(date), (date.month(), date.day()), "{date}");
            assert_eq!(from_ymd(date.year(), date.month(), date.day()), Some(date));
            if date == end {
                break;
            }
            date = date.succ_opt().unwrap();
        }
        for year in
            [-262_144, -1, 0, 1, 1900, 2000, 2024, 2100, 9999, 10_000, 262_142, 262_143, 262_144]
        {
            for month in 0..=13 {
                for day in 0..=32 {
                    assert_eq!(
                        from_ymd(year, month, day),
                        NaiveDate::from_ymd_opt(year, month, day),
                        "{year}-{month}-{day}"
                    );
                }
            }
        }
        for month in [u32::MAX, 1 << 31] {
            assert_eq!(from_ymd(2024, month, 1), None);
        }
    }
}
